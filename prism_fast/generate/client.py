"""OpenAI-compatible chat-completions client over plain HTTP (stdlib ``http.client``; no SDK).

One :class:`ChatClient` serves many threads: every call opens its own connection. What a call does:

* POST ``<base_url>/chat/completions`` with ``model``, ``messages``, ``max_tokens``, ``temperature`` (and the
  model's thinking switch / extra body fields, when configured). No streaming, no top_p / seed / stop
  (generation.md §3).
* A **total** deadline per HTTP attempt (connect + send + headers + body): the socket timeout is re-armed with the
  time left before every read, so a server that trickles bytes cannot stretch an attempt past ``timeout_s``.
* Retries with bounded exponential backoff (``base_s × factor^(n-1)``, capped at ``max_s``; a ``Retry-After``
  header is honoured up to the cap) on HTTP 429, 5xx, timeouts, connection errors and unparseable bodies; every
  retry is logged and recorded in the result. Other 4xx answers are not retried. At most ``max_attempts``
  attempts in total (the toolkit's ``max_retries`` semantics).
* A reply without choices / message, or with empty content, is not retried (as the toolkit): the result says so.
* Token usage (prompt, completion, total, reasoning, cached; a missing sub-field is 0, a missing ``usage`` is
  None) and latency are returned per call.

The API key is read from the environment variable named by ``ChatEndpoint.api_key_env`` when the client is built
(``prism-fast`` has by then moved it out of its environment, so that no child process inherits it:
``secret_env.get_secret`` still finds it) and lives only in memory: it is never part of a result, a log line or
an error text (server messages are scrubbed of it).
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

# The OpenAI Python SDK's default request timeout. The toolkit never passes its own timeout (Q-GEN-3), so this is
# the timeout its requests actually run under.
SDK_DEFAULT_TIMEOUT_S = 600.0

# Closed set of failure kinds of a call.
RETRYABLE_KINDS = ("rate_limited", "server_error", "timeout", "connection_error", "malformed_response")
FINAL_KINDS = ("http_error", "no_choices", "empty_content", "missing_api_key")
ERROR_KINDS = RETRYABLE_KINDS + FINAL_KINDS

# How the thinking toggle is expressed in the request body, per server family.
THINKING_STYLES = ("none", "chat_template_kwargs", "enable_thinking", "reasoning_effort", "anthropic")


@dataclass(frozen=True)
class ChatEndpoint:
    """One model behind an OpenAI-compatible endpoint (from ``conf/model/<name>.yaml``)."""

    base_url: str
    model_id: str
    api_key_env: str | None = None  # name of the environment variable holding the key; None = no auth header
    max_tokens: int = 8192
    temperature: float = 0.7
    thinking: bool | None = None  # None: send nothing; True/False: send the switch in ``thinking_style``
    thinking_style: str = "none"
    thinking_budget: int | None = None  # anthropic style: budget_tokens
    reasoning_effort: str = "medium"  # reasoning_effort style, when thinking is on
    extra_body: dict = field(default_factory=dict)  # merged into the request body last
    price_prompt_per_mtok: float | None = None  # USD per million prompt tokens (None: no cost estimate)
    price_completion_per_mtok: float | None = None


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    base_s: float = 5.0
    factor: float = 2.0
    max_s: float = 60.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Wait before attempt ``attempt + 1`` (``attempt`` ≥ 1 failed attempts so far)."""
        wait = self.base_s * self.factor ** (attempt - 1)
        if retry_after is not None:
            wait = max(wait, retry_after)
        return max(0.0, min(wait, self.max_s))


@dataclass
class CallResult:
    """Outcome of one chat call (all attempts)."""

    ok: bool
    content: str | None = None  # the raw message content, before any cleaning
    reasoning_content: str | None = None  # a separate reasoning field, when the server returns one
    finish_reason: str | None = None
    usage: dict | None = None  # prompt/completion/total/reasoning/cached tokens; None when the reply had none
    http_status: int | None = None  # of the last attempt
    attempts: int = 0
    latency_s: float | None = None  # the last attempt's wall time
    wall_s: float = 0.0  # all attempts and waits
    timeout_s: float | None = None  # per-attempt deadline applied
    error_kind: str | None = None  # one of ERROR_KINDS when not ok
    error: str | None = None
    retries: list[dict] = field(default_factory=list)  # {attempt, kind, error, wait_s}


class _AttemptError(Exception):
    def __init__(self, kind: str, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.kind, self.status, self.retry_after = kind, status, retry_after


def parse_usage(usage) -> dict | None:
    """The toolkit's usage fields; a missing sub-field is 0, a missing usage object is None."""
    if not isinstance(usage, dict):
        return None

    def num(value) -> int:
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0

    completion_details = usage.get("completion_tokens_details") or {}
    prompt_details = usage.get("prompt_tokens_details") or {}
    return {
        "prompt_tokens": num(usage.get("prompt_tokens")),
        "completion_tokens": num(usage.get("completion_tokens")),
        "total_tokens": num(usage.get("total_tokens")),
        "reasoning_tokens": num(completion_details.get("reasoning_tokens") if isinstance(completion_details, dict) else 0),
        "cached_tokens": num(prompt_details.get("cached_tokens") if isinstance(prompt_details, dict) else 0),
    }


def call_cost(endpoint: ChatEndpoint, usage: dict | None) -> float | None:
    """USD estimate from the configured per-million-token prices; None without prices or usage."""
    if usage is None or endpoint.price_prompt_per_mtok is None or endpoint.price_completion_per_mtok is None:
        return None
    return (usage["prompt_tokens"] * endpoint.price_prompt_per_mtok
            + usage["completion_tokens"] * endpoint.price_completion_per_mtok) / 1e6


def request_body(endpoint: ChatEndpoint, messages: list[dict], temperature: float, max_tokens: int) -> dict:
    """The JSON body sent (without credentials)."""
    body: dict = {"model": endpoint.model_id, "messages": messages, "max_tokens": int(max_tokens),
                  "temperature": float(temperature)}
    if endpoint.thinking is not None:
        style = endpoint.thinking_style
        if style == "chat_template_kwargs":  # vLLM / SGLang serving Qwen3-style chat templates
            body["chat_template_kwargs"] = {"enable_thinking": bool(endpoint.thinking)}
        elif style == "enable_thinking":  # DashScope-style top-level flag
            body["enable_thinking"] = bool(endpoint.thinking)
        elif style == "reasoning_effort":
            if endpoint.thinking:
                body["reasoning_effort"] = endpoint.reasoning_effort
        elif style == "anthropic":
            body["thinking"] = ({"type": "enabled", "budget_tokens": int(endpoint.thinking_budget or 1024)}
                                if endpoint.thinking else {"type": "disabled"})
        elif style != "none":
            raise ValueError(f"unknown thinking_style {style!r}; expected one of {THINKING_STYLES}")
    body.update(endpoint.extra_body or {})
    return body


class ChatClient:
    """Thread-safe chat client for one endpoint."""

    def __init__(self, endpoint: ChatEndpoint, retry: RetryPolicy = RetryPolicy(), timeout_s: float = SDK_DEFAULT_TIMEOUT_S,
                 sleep: Callable[[float], None] = time.sleep):
        if endpoint.thinking_style not in THINKING_STYLES:
            raise ValueError(f"unknown thinking_style {endpoint.thinking_style!r}; expected one of {THINKING_STYLES}")
        self.endpoint, self.retry, self.timeout_s, self._sleep = endpoint, retry, float(timeout_s), sleep
        self._key = None
        if endpoint.api_key_env:
            from prism_fast.secret_env import get_secret

            key = get_secret(endpoint.api_key_env)  # os.environ, or withheld from it by `prism-fast` (secret_env.py)
            if not key:
                raise RuntimeError(f"environment variable {endpoint.api_key_env} (model.endpoint.api_key_env) is not "
                                   "set; export the API key there")
            key = key.strip()
            if not key or any(not (32 < ord(c) < 127) for c in key):
                raise RuntimeError(f"environment variable {endpoint.api_key_env} holds characters an HTTP header "
                                   "cannot carry (the key itself is not shown)")
            self._key = key
        parts = urlsplit(endpoint.base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be http(s)://host[:port][/path], got {endpoint.base_url!r}")
        self._scheme, self._host, self._port = parts.scheme, parts.hostname, parts.port
        self._path = (parts.path or "") + "/chat/completions"

    # -- one HTTP attempt -----------------------------------------------------------------------------------
    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    def _post_once(self, payload: bytes) -> tuple[int, dict, bytes]:
        deadline = time.monotonic() + self.timeout_s

        def remaining() -> float:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no complete response within {self.timeout_s:g}s")
            return left

        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        conn = self._connection(remaining())
        try:
            conn.request("POST", self._path, body=payload, headers=headers)
            conn.sock.settimeout(remaining())
            resp = conn.getresponse()
            chunks = []
            while True:
                if conn.sock is not None:
                    conn.sock.settimeout(remaining())
                chunk = resp.read(65536)
                if not chunk:
                    break
                chunks.append(chunk)
            remaining()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, b"".join(chunks)
        finally:
            conn.close()

    def _attempt(self, payload: bytes) -> tuple[int, dict]:
        """One attempt: the parsed body of a 200 answer, or an :class:`_AttemptError`."""
        try:
            status, headers, raw = self._post_once(payload)
        except (TimeoutError, socket.timeout) as exc:
            raise _AttemptError("timeout", f"timeout after {self.timeout_s:g}s: {exc}") from None
        except (ConnectionError, http.client.HTTPException, OSError, ValueError) as exc:
            raise _AttemptError("connection_error", f"{type(exc).__name__}: {self._scrub(str(exc))}") from None
        text = raw.decode("utf-8", errors="replace")
        if status != 200:
            snippet = self._scrub(text.strip())[:500]
            retry_after = None
            try:
                retry_after = float(headers["retry-after"]) if "retry-after" in headers else None
            except ValueError:
                retry_after = None
            if status == 429:
                raise _AttemptError("rate_limited", f"HTTP 429: {snippet}", status, retry_after)
            if status >= 500:
                raise _AttemptError("server_error", f"HTTP {status}: {snippet}", status, retry_after)
            raise _AttemptError("http_error", f"HTTP {status}: {snippet}", status)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _AttemptError("malformed_response", f"malformed JSON body ({exc.msg} at {exc.pos}): "
                                f"{self._scrub(text[:200])!r}", status) from None
        if not isinstance(data, dict):
            raise _AttemptError("malformed_response", f"JSON body is {type(data).__name__}, not an object", status)
        return status, data

    # -- one call ---------------------------------------------------------------------------------------------
    def complete(self, messages: list[dict], *, temperature: float | None = None, max_tokens: int | None = None,
                 label: str = "") -> CallResult:
        """Send ``messages``; never raises for anything the server does."""
        ep = self.endpoint
        body = request_body(ep, messages, ep.temperature if temperature is None else temperature,
                            ep.max_tokens if max_tokens is None else max_tokens)
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        result = CallResult(ok=False, timeout_s=self.timeout_s)
        start = time.monotonic()
        max_attempts = max(1, int(self.retry.max_attempts))
        for attempt in range(1, max_attempts + 1):
            result.attempts = attempt
            t0 = time.monotonic()
            try:
                status, data = self._attempt(payload)
            except _AttemptError as err:
                result.latency_s = time.monotonic() - t0
                result.http_status, result.error_kind, result.error = err.status, err.kind, str(err)
                if err.kind not in RETRYABLE_KINDS or attempt == max_attempts:
                    if err.kind in RETRYABLE_KINDS:
                        log.warning("%s: giving up after %d attempt(s): %s", label or ep.model_id, attempt, err)
                    else:
                        log.warning("%s: not retried (%s): %s", label or ep.model_id, err.kind, err)
                    break
                wait = self.retry.delay(attempt, err.retry_after)
                result.retries.append({"attempt": attempt, "kind": err.kind, "error": str(err)[:300], "wait_s": wait})
                log.warning("%s: attempt %d/%d failed (%s); retrying in %.3gs", label or ep.model_id, attempt,
                            max_attempts, err.kind, wait)
                self._sleep(wait)
                continue
            result.latency_s = time.monotonic() - t0
            result.http_status = status
            self._read_reply(data, result)
            break
        result.wall_s = time.monotonic() - start
        return result

    @staticmethod
    def _read_reply(data: dict, result: CallResult) -> None:
        result.usage = parse_usage(data.get("usage"))
        choices = data.get("choices")
        message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        if not isinstance(message, dict):
            result.error_kind, result.error = "no_choices", "reply has no choices[0].message"
            return
        result.finish_reason = choices[0].get("finish_reason")
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        result.reasoning_content = reasoning if isinstance(reasoning, str) else None
        content = message.get("content")
        if isinstance(content, list):  # some servers return content parts
            content = "".join(p.get("text") or "" for p in content if isinstance(p, dict))
        if not isinstance(content, str) or not content:
            result.content = content if isinstance(content, str) else None
            result.error_kind, result.error = "empty_content", "reply content is empty"
            return
        result.ok, result.content, result.error_kind, result.error = True, content, None, None
