"""The bench's prompts: a small built-in set (code, chat, reasoning, long and short) and `--prompts FILE` JSONL.

The built-in set is varied on purpose: a drafter's acceptance depends on what it drafts (code and
boilerplate accept long runs, open chat less), so one kind of prompt alone would flatter or slander it.
A JSONL file holds one prompt per line: `{"text": "…"}` (or `"prompt"`), with an optional `"name"`;
a bare JSON string is a prompt too. Blank lines are skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

MAX_PROMPT_CHARS = 200_000


class PromptsError(ValueError):
    """str(err) is one line: the file and line, what is wrong, what to write instead."""


@dataclass(frozen=True)
class Prompt:
    name: str
    kind: str  # code | chat | reasoning | long | short | file
    text: str


_LONG_REPORT = (
    "Summarise the following incident report for an engineering manager in five bullet points, then list "
    "the two follow-up actions you would prioritise and why.\n\n"
    "Incident report. On Tuesday at 09:12 the inference cluster serving the internal assistant started to "
    "return timeouts for roughly one request in five. The on-call engineer first suspected the load balancer, "
    "because the error rate rose at the same time as a configuration push to the routing layer, and rolled "
    "that push back at 09:31. The error rate did not change. At 09:40 a second engineer noticed that one of "
    "the eight GPU hosts reported far higher memory use than its peers and that its scheduler processes had "
    "been restarted twice overnight by the process supervisor. Each restart had left the previous scheduler "
    "processes running, re-parented to the init process, still holding most of the memory of every GPU on "
    "the host. The new server on that host therefore started with a much smaller KV cache, admitted fewer "
    "requests, and queued the rest until the client-side timeout fired. Requests routed to the other seven "
    "hosts were unaffected, which is why only a fraction of traffic failed. The orphaned processes were "
    "found by listing every process whose title starts with the scheduler prefix and comparing their start "
    "times with the supervisor's restart log; killing them freed the memory at 10:05, and after a clean "
    "restart of the server the host rejoined the pool at 10:19. The timeout rate returned to its baseline "
    "of under 0.1 percent by 10:25. Nobody was paged for the overnight restarts because the supervisor "
    "treats a restart as a success. The dashboards showed the high memory use from 02:00 onwards, but no "
    "alert fires on memory that is merely high rather than exhausted. The routing rollback was reapplied at "
    "11:00 without effect on errors. Customer impact: about 4,300 failed requests over 73 minutes, retried "
    "automatically by most clients; two batch jobs failed and were rerun by hand in the afternoon."
)

_LONG_CODE = '''Review this Python module. Point out every bug you find, explain each one in a sentence, and then
give a corrected version of the whole module.

import time, threading

class RateLimiter:
    """Allow at most `rate` calls per `per` seconds, shared between threads."""

    def __init__(self, rate, per=1.0):
        self.rate = rate
        self.per = per
        self.allowance = rate
        self.last = time.time()
        self.lock = threading.Lock

    def acquire(self):
        now = time.time()
        elapsed = now - self.last
        self.last = now
        self.allowance += elapsed * (self.rate / self.per)
        if self.allowance > self.rate:
            self.allowance = self.rate
        if self.allowance < 1:
            time.sleep((1 - self.allowance) * self.per / self.rate)
            self.allowance = 0
        else:
            self.allowance -= 1
        return True

def fetch_all(urls, limiter, fetch):
    results = {}
    threads = []
    for url in urls:
        t = threading.Thread(target=lambda: results.update({url: fetch(url)}))
        threads.append(t)
        t.start()
        limiter.acquire()
    for t in threads:
        t.join
    return results
'''

BUILTIN: tuple[Prompt, ...] = (
    Prompt("code-python", "code", "Write a Python function `merge_intervals(intervals)` that merges overlapping "
           "closed intervals given as a list of (start, end) tuples, with type hints, a docstring, and five "
           "pytest test cases including edge cases."),
    Prompt("code-sql", "code", "Write a PostgreSQL query that, for each customer, returns their three most recent "
           "orders with the order total, using a window function. Tables: customers(id, name), orders(id, "
           "customer_id, created_at), order_items(order_id, price, quantity). Explain each clause briefly."),
    Prompt("chat-travel", "chat", "I have a free weekend in Lisbon in late October and I like walking, old "
           "bookshops and seafood. Can you suggest a relaxed two-day plan?"),
    Prompt("chat-email", "chat", "Help me write a polite email to my landlord asking to fix a leaking kitchen "
           "tap that I reported two weeks ago. Keep it friendly but firm."),
    Prompt("reasoning-trains", "reasoning", "A train leaves city A at 09:00 travelling at 80 km/h towards city B, "
           "300 km away. Another leaves B at 10:00 towards A at 120 km/h. At what time and how far from A do "
           "they meet? Reason step by step, then state the answer."),
    Prompt("reasoning-logic", "reasoning", "Three boxes are labelled 'apples', 'oranges' and 'mixed', and every "
           "label is wrong. You may take one fruit from one box without looking inside. How do you relabel all "
           "the boxes correctly? Explain your reasoning carefully."),
    Prompt("long-report", "long", _LONG_REPORT),
    Prompt("long-code-review", "long", _LONG_CODE),
    Prompt("short-capital", "short", "What is the capital of Australia?"),
    Prompt("short-haiku", "short", "Write a haiku about autumn rain."),
)  # fmt: skip


def kinds(prompts: tuple[Prompt, ...]) -> str:
    """The kinds in order of first appearance, e.g. "code, chat, reasoning, long, short"."""
    seen: list[str] = []
    for p in prompts:
        if p.kind not in seen:
            seen.append(p.kind)
    return ", ".join(seen)


def _line_prompt(obj: object, where: str, n: int) -> Prompt:
    name = f"line-{n}"
    if isinstance(obj, str):
        text = obj
    elif isinstance(obj, dict):
        text = obj.get("text", obj.get("prompt"))  # type: ignore[assignment]
        if not isinstance(text, str):
            raise PromptsError(f'{where} line {n}: no "text" string in the object; write {{"text": "…"}}')
        if "name" in obj:
            name = str(obj["name"])[:60]
    else:
        raise PromptsError(f'{where} line {n}: a {type(obj).__name__}, not a prompt; write {{"text": "…"}}')
    if not text.strip():
        raise PromptsError(f"{where} line {n}: the prompt is empty")
    if len(text) > MAX_PROMPT_CHARS:
        raise PromptsError(f"{where} line {n}: the prompt is {len(text)} characters; keep it under {MAX_PROMPT_CHARS}")
    return Prompt(name, "file", text)


def parse_jsonl(data: bytes, where: str) -> tuple[Prompt, ...]:
    """The prompts of a JSONL file's bytes; PromptsError (one line) on the first bad line or an empty file."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PromptsError(f"{where}: not UTF-8 text (byte {err.start}); save it as UTF-8 JSONL") from None
    prompts = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as err:
            msg = str(err).split(":")[0]
            raise PromptsError(f'{where} line {n}: not JSON ({msg}); each line must be {{"text": "…"}}') from None
        prompts.append(_line_prompt(obj, where, n))
    if not prompts:
        raise PromptsError(f'{where}: no prompts in the file; write one {{"text": "…"}} per line')
    return tuple(prompts)
