"""What one HTTP answer of the server says (status and body → outcome), whichever client asked: the health
poller's httpx (tui/sources/health.py) or the one-shot probe's standard-library GET (tui/sources/probe_look.py).

/health: 200 ok, 503 starting, anything else http_error. /v1/models must be the OpenAI list shape, and the
identity endpoints SGLang's model info (a JSON object with a string model_path), or the answer is garbage.
"""

from __future__ import annotations

import json

from tui.core.vocab import HealthOutcome

IDENTITY_ENDPOINTS = ("/model_info", "/get_model_info")


def classify_answer(endpoint: str, status: int, content: bytes) -> tuple[HealthOutcome, str]:
    """HTTP answer → (outcome, detail); for an identity endpoint's ok, the detail is the model_path."""
    if status == 503:
        return "starting", ""
    if 200 <= status < 300:
        if endpoint == "/v1/models":
            try:
                body = json.loads(content)
                ids = [str(m.get("id")) for m in body["data"]]
            except (ValueError, KeyError, TypeError, AttributeError):
                return "garbage", f"unexpected body: {content[:80]!r}"
            return "ok", ", ".join(ids)
        if endpoint in IDENTITY_ENDPOINTS:
            return identity_answer(content)
        return "ok", ""
    return "http_error", f"HTTP {status}"


def identity_answer(content: bytes) -> tuple[HealthOutcome, str]:
    """SGLang's model info is a JSON object with a string model_path: ("ok", model_path), else garbage."""
    try:
        body = json.loads(content)
    except ValueError:
        body = None
    path = body.get("model_path") if isinstance(body, dict) else None
    if not isinstance(path, str) or not path:
        return "garbage", f"no model_path in {content[:80]!r}"
    return "ok", path
