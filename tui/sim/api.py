"""SGLang's HTTP endpoints with their startup semantics (reference §5): what answers when, and how."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from tui.sim.engine import Engine, word
from tui.sim.http import Request, Response
from tui.sim.metrics import prometheus_text
from tui.sim.params import MODEL, SimParams

CONTEXT_LEN = 131072
DEFAULT_MAX_NEW_TOKENS = 128
HEALTH_CHECK_TIMEOUT = 20  # SGLANG_HEALTH_CHECK_TIMEOUT


def _not_found() -> Response:
    return Response.json({"detail": "Not Found"}, 404)


def _prompt_tokens(text: str) -> int:
    return max(1, int(len(text.split()) * 1.3))


class Api:
    """Routes requests; `up` turns true when warmup succeeded, `draining` after SIGTERM."""

    def __init__(self, params: SimParams, engine: Engine, server_info: Callable[[], dict[str, object]],
                 say: Callable[[str], None]) -> None:  # fmt: skip
        self.p = params
        self.engine = engine
        self.server_info = server_info
        self.say = say
        self.up = False
        self.scheduler_dead = False  # a rank died while serving and nothing killed the tree (before 0.5.14)
        self.draining = False
        self.fail_generate = False  # the warmup-fail fault: generation answers 500
        self.in_flight = 0
        self.received = 0  # generation requests received (/generate and the OpenAI routes), warmup included
        self.finished = 0  # … that ran to their end
        self.aborted = 0  # … whose client went away mid-generation (the request left the batch)
        self.max_in_flight = 0
        new = params.fmt != "0.5.9"
        self.routes: dict[str, dict[str, Callable[[Request], object]]] = {
            "/health": {"GET": self.health},
            "/health_generate": {"GET": self.health},
            "/ping": {"GET": self.ping},
            "/v1/models": {"GET": self.models},
            "/model_info": {"GET": self.model_info},
            "/get_model_info": {"GET": self.model_info},
            "/server_info": {"GET": self.get_server_info},
            "/get_server_info": {"GET": self.get_server_info},
            "/generate": {"POST": self.generate, "PUT": self.generate},
            "/v1/chat/completions": {"POST": self.chat},
            "/v1/completions": {"POST": self.completions},
            "/metrics": {"GET": self.metrics},
            "/sim_stats": {"GET": self.sim_stats},  # the simulator's own counters (tests); not an SGLang route
        }
        if new:
            self.routes["/ready"] = {"GET": self.ping}

    async def handle(self, request: Request) -> Response:
        methods = self.routes.get(request.path)
        if methods is None:
            return _not_found()
        handler = methods.get(request.method)
        if handler is None:
            return Response.json({"detail": "Method Not Allowed"}, 405)
        result = handler(request)
        return await result  # type: ignore[misc, no-any-return]

    # ------------------------------------------------------------------------------------- health etc.
    async def health(self, _request: Request) -> Response:
        if not self.up or self.draining:
            return Response(503, content_type="text/plain")
        if self.scheduler_dead:  # no detokenizer output arrives; SGLang gives up after 20 s and says so
            start = time.strftime("%H:%M:%S", time.localtime(self.engine.clock.now()))
            await asyncio.sleep(max(self.engine.clock.real(HEALTH_CHECK_TIMEOUT), 0.05))
            self.say(f"Health check failed. Server couldn't get a response from detokenizer for last "
                     f"{HEALTH_CHECK_TIMEOUT} seconds. tic start time: {start}. last_heartbeat time: {start}")  # fmt: skip
            return Response(503, content_type="text/plain")
        await self.engine.health(max(1.0 / self.p.speed, 0.05))
        return Response(200, content_type="text/plain")

    async def ping(self, _request: Request) -> Response:
        ok = self.up and not self.draining or (self.p.fmt == "0.5.9" and not self.draining)
        return Response(200 if ok else 503, content_type="text/plain")

    async def models(self, _request: Request) -> Response:
        card = {"id": MODEL, "object": "model", "created": int(self.p.t0), "owned_by": "sglang", "root": MODEL,
                "max_model_len": CONTEXT_LEN}  # fmt: skip
        return Response.json({"object": "list", "data": [card]})

    async def model_info(self, _request: Request) -> Response:
        return Response.json(
            {
                "model_path": MODEL,
                "tokenizer_path": MODEL,
                "is_generation": True,
                "preferred_sampling_params": None,
                "weight_version": "default",
                "has_image_understanding": False,
                "has_audio_understanding": False,
                "model_type": "llama",
                "architectures": ["LlamaForCausalLM"],
            }
        )

    async def get_server_info(self, _request: Request) -> Response:
        return Response.json(self.server_info())

    # ----------------------------------------------------------------------------------------- generate
    def _refuse(self) -> Response | None:
        if self.draining:
            return Response.json({"detail": "The server is shutting down."}, 503)
        if self.fail_generate:
            return Response.json({"detail": "Internal Server Error"}, 500)
        return None

    def _admitted(self, request: Request) -> dict[str, object] | Response:
        """The request's JSON body, or the answer that turns it away (bad body, draining, failing on purpose)."""
        body = self._body(request)
        return body if isinstance(body, Response) else (self._refuse() or body)

    @staticmethod
    def _body(request: Request) -> dict[str, object] | Response:
        try:
            body = request.json()
        except (ValueError, UnicodeDecodeError):
            return Response.json({"object": "error", "message": "request body is not valid JSON", "code": 400}, 400)
        if not isinstance(body, dict):
            return Response.json({"object": "error", "message": "request body must be a JSON object", "code": 400}, 400)
        return body

    async def metrics(self, _request: Request) -> Response:
        """Prometheus text with SGLang's metric names (as with --enable-metrics)."""
        return Response(200, prometheus_text(self.p, self.engine, self.in_flight, self.finished, self.aborted).encode(),
                        content_type="text/plain; version=0.0.4; charset=utf-8")  # fmt: skip

    async def sim_stats(self, _request: Request) -> Response:
        return Response.json({"received": self.received, "finished": self.finished, "aborted": self.aborted,
                              "in_flight": self.in_flight, "max_in_flight": self.max_in_flight})  # fmt: skip

    async def _tokens(
        self, prompt: int, max_new: int, stats: dict[str, int] | None = None
    ) -> AsyncGenerator[str, None]:
        """Each step's text; stopping early (the client went away) aborts the request in the engine."""
        self.received += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        done = 0
        try:
            async with contextlib.aclosing(self.engine.generate(prompt, max_new, stats)) as steps:
                async for n in steps:
                    yield "".join(word(done + k) for k in range(n))
                    done += n
        finally:
            self.in_flight -= 1
            if done >= max_new:
                self.finished += 1
            else:
                self.aborted += 1

    async def generate(self, request: Request) -> Response:
        body = self._admitted(request)
        if isinstance(body, Response):
            return body
        params = body.get("sampling_params") or {}
        if not isinstance(params, dict):
            return Response.json({"object": "error", "message": "sampling_params must be an object", "code": 400}, 400)
        max_new = int(params.get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS))
        text = body.get("text")
        prompt = len(body.get("input_ids") or []) or _prompt_tokens(str(text or ""))  # type: ignore[arg-type]
        rid = uuid.uuid4().hex
        start = time.monotonic()
        stats: dict[str, int] = {"verify_ct": 0}

        def meta(done: int, finished: bool) -> dict[str, object]:
            # SGLang 0.5.23's keys; e2e_latency and the speculative figures come with the last chunk only
            info: dict[str, object] = {"id": rid, "finish_reason": {"type": "length", "length": done} if finished else None,
                                       "prompt_tokens": prompt, "weight_version": "default", "num_retractions": 0,
                                       "reasoning_tokens": 0, "completion_tokens": done, "cached_tokens": 0}  # fmt: skip
            if finished:
                info["e2e_latency"] = round(time.monotonic() - start, 4)
                verify = stats["verify_ct"]
                if self.p.speculative and verify > 0:
                    info["spec_accept_length"] = done / verify
                    info["spec_verify_ct"] = verify
            return info

        if body.get("stream"):

            async def events() -> AsyncIterator[bytes]:
                out, done = "", 0
                async with contextlib.aclosing(self._tokens(prompt, max_new, stats)) as pieces:
                    async for piece in pieces:
                        out += piece
                        done = len(out.split())
                        chunk = {"text": out, "meta_info": meta(done, done >= max_new)}
                        yield f"data: {json.dumps(chunk)}\n\n".encode()
                yield b"data: [DONE]\n\n"

            return Response(200, content_type="text/event-stream", stream=events())
        out = "".join([piece async for piece in self._tokens(prompt, max_new, stats)])
        return Response.json({"text": out, "meta_info": meta(len(out.split()), True)})

    async def chat(self, request: Request) -> Response:
        return await self._openai(request, chat=True)

    async def completions(self, request: Request) -> Response:
        return await self._openai(request, chat=False)

    async def _openai(self, request: Request, *, chat: bool) -> Response:
        body = self._admitted(request)
        if isinstance(body, Response):
            return body
        if chat:
            messages = body.get("messages")
            listed = messages if isinstance(messages, list) else []
            text = " ".join(str(m.get("content", "")) for m in listed if isinstance(m, dict))
        else:
            text = str(body.get("prompt", ""))
        asked: Any = body.get("max_completion_tokens") or body.get("max_tokens") or DEFAULT_MAX_NEW_TOKENS
        max_new = int(asked)
        prompt = _prompt_tokens(text) + (10 if chat else 0)  # the chat template adds a few tokens
        rid = uuid.uuid4().hex
        created = int(time.time())
        kind = "chat.completion" if chat else "text_completion"
        model = str(body.get("model") or MODEL)

        def choice(text: str, finish: str | None, delta: bool) -> dict[str, object]:
            if not chat:
                return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
            key = "delta" if delta else "message"
            return {"index": 0, key: {"role": "assistant", "content": text}, "logprobs": None, "finish_reason": finish}

        if body.get("stream"):

            async def events() -> AsyncIterator[bytes]:
                sent = 0
                async for piece in self._tokens(prompt, max_new):
                    sent += len(piece.split())
                    finish = "length" if sent >= max_new else None
                    chunk = {"id": rid, "object": kind + (".chunk" if chat else ""), "created": created,
                             "model": model, "choices": [choice(piece, finish, True)]}  # fmt: skip
                    yield f"data: {json.dumps(chunk)}\n\n".encode()
                yield b"data: [DONE]\n\n"

            return Response(200, content_type="text/event-stream", stream=events())
        out = "".join([piece async for piece in self._tokens(prompt, max_new)])
        done = len(out.split())
        usage = {"prompt_tokens": prompt, "completion_tokens": done, "total_tokens": prompt + done}
        return Response.json(
            {
                "id": rid,
                "object": kind,
                "created": created,
                "model": model,
                "choices": [choice(out, "length", False)],
                "usage": usage,
            }  # fmt: skip
        )
