"""A real OpenAI-compatible stub server on 127.0.0.1 serving scripted chat completions.

Each request's first user message carries a tag ``[case:NAME]``; the case's behaviour function receives the
attempt number (1-based, per case and round) and the round (number of user turns) and returns what to answer.
Every request is recorded (case, round, attempt, body, Authorization header) so tests can count them.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

CASE_RE = re.compile(r"\[case:([\w-]+)\]")
STUB_KEY_ENV = "PRISM_STUB_KEY"
STUB_KEY = "sk-stub-Zq81-never-store-me"


def completion(content, usage=None, finish_reason="stop", **message_extra) -> dict:
    """A chat.completion body the way OpenAI-compatible servers send it."""
    return {"id": "cmpl-1", "object": "chat.completion", "model": "stub-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content, **message_extra},
                         "finish_reason": finish_reason}],
            "usage": usage if usage is not None else {
                "prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
                "completion_tokens_details": {"reasoning_tokens": 2}, "prompt_tokens_details": {"cached_tokens": 3}}}


def ok(content, **kw):
    return {"status": 200, "json": completion(content, **kw)}


def text_of(message) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


class StubLLM:
    def __init__(self, behaviours: dict, key: str | None = STUB_KEY):
        self.behaviours = behaviours  # case -> fn(attempt, round) -> action dict
        self.key = key
        self.requests: list[dict] = []
        self._attempts: dict[tuple, int] = {}
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep the test output quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length).decode("utf-8"))
                stub._handle(self, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def count(self, case: str | None = None, round_no: int | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if (case is None or r["case"] == case)
                       and (round_no is None or r["round"] == round_no))

    def _handle(self, handler, body) -> None:
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        m = CASE_RE.search(text_of(users[0])) if users else None
        case = m.group(1) if m else "?"
        round_no = len(users)
        with self._lock:
            key = (case, round_no)
            self._attempts[key] = attempt = self._attempts.get(key, 0) + 1
            self.requests.append({"case": case, "round": round_no, "attempt": attempt, "body": body,
                                  "auth": handler.headers.get("Authorization"), "path": handler.path})
        if self.key is not None and handler.headers.get("Authorization") != f"Bearer {self.key}":
            action = {"status": 401, "json": {"error": {"message": "bad key"}}}
        elif handler.path != "/v1/chat/completions":
            action = {"status": 404, "json": {"error": {"message": "not found"}}}
        else:
            action = self.behaviours[case](attempt, round_no)
        if action.get("sleep"):
            time.sleep(action["sleep"])
        payload = action["raw"] if "raw" in action else json.dumps(action["json"]).encode("utf-8")
        try:
            handler.send_response(action["status"])
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            for k, v in (action.get("headers") or {}).items():
                handler.send_header(k, v)
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub_factory():
    servers = []

    def make(behaviours, key=STUB_KEY):
        s = StubLLM(behaviours, key)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()


def write_dataset(path, cases: dict[str, str], language: str = "en") -> None:
    """A tiny released-schema JSONL: one task per case, its instruction tagged with the case."""
    with open(path, "w", encoding="utf-8") as fh:
        for task_id, case in cases.items():
            fh.write(json.dumps({"id": task_id, "language": language,
                                 "instruction": f"  Draw something simple. [case:{case}]\n",
                                 "reference_answer": "from manim import *\n"}) + "\n")


def generate_overrides(tmp_path, stub: StubLLM, *extra: str) -> list[str]:
    return [
        "command=generate", "model=local", f"model.endpoint.base_url={stub.base_url}",
        "model.endpoint.model_id=stub-model", f"model.endpoint.api_key_env={STUB_KEY_ENV}",
        f"runs_root={tmp_path / 'runs'}", f"dataset.path={tmp_path / 'ds.jsonl'}", "lang=en",
        "generate.backoff.base_s=0.001", "generate.backoff.max_s=0.005", "generate.flush_rows=1",
        *extra,
    ]


def compose_cfg(overrides: list[str]):
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="prism_fast.conf", version_base=None):
        return compose(config_name="config", overrides=overrides)
