"""What ``generate`` writes besides its rows: the predictions files ``eval`` reads (``responses.jsonl``, and
``responses_final.jsonl`` for self-debugging) and the run's summary (counts, tokens, latency, cost)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from prism_fast.fsutil import atomic_write_text
from prism_fast.generate.rows import is_call_failure


def _response_record(row: dict) -> dict:
    failed = is_call_failure(row)
    return {"id": row["sample_id"], "language": row["lang"], "response": "" if failed else (row["raw_response"] or ""),
            "round": row["round"], "gen_status": row["gen_status"], "model": row["request_model"],
            "provider_error": row["provider_error"] if failed else None}


def write_responses(rows: list[dict], out_dir: Path, rounds: int) -> dict[str, Path]:
    """responses.jsonl (round 1) and, for rounds > 1, responses_final.jsonl (each task's last round)."""
    first = sorted((r for r in rows if r["round"] == 1), key=lambda r: (r["lang"], r["sample_id"]))
    paths = {"responses": out_dir / "responses.jsonl"}
    atomic_write_text(paths["responses"], "".join(json.dumps(_response_record(r), ensure_ascii=False) + "\n" for r in first))
    if rounds > 1:
        last: dict[tuple, dict] = {}
        for r in rows:
            key = (r["lang"], r["sample_id"])
            if key not in last or r["round"] > last[key]["round"]:
                last[key] = r
        paths["responses_final"] = out_dir / "responses_final.jsonl"
        atomic_write_text(paths["responses_final"], "".join(
            json.dumps(_response_record(last[k]), ensure_ascii=False) + "\n" for k in sorted(last)))
    return paths


def _stats(values: list[float]) -> dict:
    if not values:
        return {"mean": None, "p50": None, "p95": None, "max": None}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"mean": statistics.fmean(ordered), "p50": statistics.median(ordered), "p95": p95, "max": ordered[-1]}


def summarize_generation(rows: list[dict], model: str, requested: int, wall_s: float) -> dict:
    """Counts, tokens, latency and cost over every generation row of the model (resumed ones included)."""
    def count(key):
        out: dict[str, int] = {}
        for r in rows:
            out[str(r.get(key))] = out.get(str(r.get(key)), 0) + 1
        return dict(sorted(out.items()))

    tokens = {}
    for name in ("prompt_tokens", "completion_tokens", "total_tokens", "reasoning_tokens", "cached_tokens"):
        vals = [r[name] for r in rows if r.get(name) is not None]
        tokens[name] = {"sum": sum(vals), "avg": statistics.fmean(vals) if vals else None}
    costs = [r["cost_usd"] for r in rows if r.get("cost_usd") is not None]
    return {
        "model": model, "calls": len(rows), "tasks": len({(r["lang"], r["sample_id"]) for r in rows}),
        "requested_this_run": requested, "wall_s": wall_s,
        "by_gen_status": count("gen_status"), "by_error_kind": count("error_kind"),
        "attempts_total": sum(int(r.get("attempts") or 0) for r in rows),
        "retries_total": sum(len(json.loads(r["retries"] or "[]")) for r in rows),
        "tokens": tokens,
        "latency_s": _stats([r["latency_s"] for r in rows if r.get("latency_s") is not None]),
        "llm_time_s": _stats([r["llm_time"] for r in rows if r.get("llm_time") is not None]),
        "cost_usd": sum(costs) if costs else None, "cost_priced_calls": len(costs),
    }


def format_generation_summary(s: dict) -> str:
    lat, tok = s["latency_s"], s["tokens"]

    def f(x, fmt=".2f"):
        return "-" if x is None else format(x, fmt)

    cost = "n/a (set model.endpoint.price)" if s["cost_usd"] is None else f"${s['cost_usd']:.4f}"
    return "\n".join([
        f"generate: model={s['model']} tasks={s['tasks']} calls={s['calls']} requested now={s['requested_this_run']} "
        f"wall={s['wall_s']:.1f}s",
        f"  status: {s['by_gen_status']}  errors: {s['by_error_kind']}",
        f"  attempts={s['attempts_total']} retries={s['retries_total']}",
        f"  latency s: mean={f(lat['mean'])} p50={f(lat['p50'])} p95={f(lat['p95'])} max={f(lat['max'])}",
        f"  tokens: prompt={tok['prompt_tokens']['sum']} completion={tok['completion_tokens']['sum']} "
        f"reasoning={tok['reasoning_tokens']['sum']} cached={tok['cached_tokens']['sum']} total={tok['total_tokens']['sum']}",
        f"  cost: {cost}",
    ])
