"""The ``generate`` row of one model call (the generation row schema), how a call failed, and the checks that
make a resumed ``generate`` reuse only replies to the same request. Pure: the driver is
``prism_fast.pipeline.generate_run``."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Iterable, Mapping

from prism_fast.fsutil import sha256_text_or_none
from prism_fast.generate.client import SDK_DEFAULT_TIMEOUT_S, CallResult, ChatEndpoint, call_cost
from prism_fast.generate.selfdebug import round_row_id
from prism_fast.profile import Profile

PAPER_TEMPERATURE = 0.7
# Call failures (the provider's fault) as opposed to a reply that cleans to nothing (the model's).
PROVIDER_ERROR_KINDS = ("rate_limited", "server_error", "timeout", "connection_error", "malformed_response",
                        "http_error", "no_choices", "empty_content")
NO_ANSWER_KINDS = ("timeout", "connection_error")  # the endpoint said nothing at all (an HTTP error is an answer)


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat()


def is_call_failure(row: Mapping) -> bool:
    return row.get("error_kind") in PROVIDER_ERROR_KINDS


def got_answer(row: Mapping) -> bool:
    return row.get("error_kind") not in NO_ANSWER_KINDS


def effective_timeout(profile: Profile, timeout_s: float) -> float:
    """Q-GEN-3: the toolkit stores its timeout but never passes it, so its requests run under the SDK default."""
    if profile.fixes("Q-GEN-3"):  # improved: the configured timeout is applied
        return float(timeout_s)
    return SDK_DEFAULT_TIMEOUT_S


def request_params(ep: ChatEndpoint) -> dict:
    """The request parameters a stored reply answers (compared on resume)."""
    return {"temperature": ep.temperature, "max_tokens": ep.max_tokens, "thinking": ep.thinking,
            "thinking_style": ep.thinking_style, "extra_body": ep.extra_body}


def generation_row(model: str, endpoint: ChatEndpoint, profile: Profile, task, round_no: int, prompt: str,
                   messages: list[dict], call: CallResult, started: str, timeout_s: float) -> dict:
    """The ``generate`` row of one call: what was sent, the raw reply, how it cleaned, usage, latency, cost."""
    from prism_fast.generate.cleaning import clean_model_output

    ep = endpoint
    raw = call.content if call.ok else None
    cleaned = clean_model_output(raw or "", task.language, profile)
    if call.ok:
        gen_status = cleaned.status
        status = "ok" if gen_status == "success" else "error"
        error_kind = None if status == "ok" else "empty_after_cleanup"
        error_detail = None if status == "ok" else cleaned.empty_reason
    else:
        # Q-GEN-4: the toolkit turns a provider failure into the busy sentinel, which cleans to nothing.
        gen_status = "provider_error" if profile.fixes("Q-GEN-4") else "empty_after_cleanup"
        status, error_kind, error_detail = "error", call.error_kind, call.error
    usage = call.usage or {}
    return {
        "model": model, "lang": task.language, "id": round_row_id(task.id, round_no),
        "status": status, "error_kind": error_kind, "error_detail": error_detail, "profile": profile.name,
        "sample_id": task.id, "round": round_no, "gen_status": gen_status, "request_model": ep.model_id,
        "base_url": ep.base_url, "prompt": prompt, "prompt_sha256": sha256_text_or_none(prompt),
        "messages": json.dumps(messages, ensure_ascii=False), "request_params": request_params(ep),
        "raw_response": raw if raw is not None else call.content, "raw_chars": len(raw or ""),
        "reasoning_chars": len(call.reasoning_content or ""), "finish_reason": call.finish_reason,
        "clean_status": cleaned.status, "cleaned_chars": len(cleaned.code),
        "format_pollution": cleaned.pollution.kinds(),
        "provider_error": None if call.ok else f"{call.error_kind}: {call.error}",
        "http_status": call.http_status, "attempts": call.attempts, "retries": call.retries, "timeout_s": timeout_s,
        "llm_time": call.wall_s, "latency_s": call.latency_s,
        "prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
        "total_tokens": usage.get("total_tokens"), "reasoning_tokens": usage.get("reasoning_tokens"),
        "cached_tokens": usage.get("cached_tokens"), "cost_usd": call_cost(ep, call.usage),
        "started_at": started, "finished_at": now(),
    }


def stored_request_problems(endpoint: ChatEndpoint, tasks: Iterable, gen_rows: Mapping) -> list[str]:
    """Stored replies are reused on resume only if they answer the same request: same endpoint model, base URL,
    request parameters and (round 1) prompt. One line per stored reply that does not (empty: all reusable)."""
    ep = endpoint
    want_params = json.loads(json.dumps(request_params(ep)))
    prompts = {(t.language, t.id): sha256_text_or_none(t.instruction.strip()) for t in tasks}
    problems = []
    for (lang, sid, rnd), row in sorted(gen_rows.items()):
        stored = row.get("request_params")
        stored = json.loads(stored) if isinstance(stored, str) else stored
        if row.get("request_model") != ep.model_id:
            problems.append(f"{sid} round {rnd}: model_id {row.get('request_model')!r}, now {ep.model_id!r}")
        elif row.get("base_url") != ep.base_url:
            problems.append(f"{sid} round {rnd}: base_url {row.get('base_url')!r}, now {ep.base_url!r}")
        elif stored != want_params:
            problems.append(f"{sid} round {rnd}: request parameters {stored}, now {want_params}")
        elif rnd == 1 and (lang, sid) in prompts and row.get("prompt_sha256") != prompts[(lang, sid)]:
            problems.append(f"{sid}: the dataset's prompt changed since its reply was stored")
    return problems
