"""The end-of-run summary: per (model, language) funnel counts and rates over all tasks, render times, and
where the wall time went."""

from __future__ import annotations

import statistics

from prism_fast.store import ResultsStore


def _pct(num: int, den: int) -> float | None:
    return round(100.0 * num / den, 2) if den else None


def summarize_run(store: ResultsStore, model: str, task_ids: list[str], timings: dict[str, float]) -> dict:
    wanted = set(task_ids)
    tasks = [r for r in store.read("tasks").to_pylist() if r["model"] == model and r["id"] in wanted]
    exec_rows = {(r["lang"], r["id"]): r for r in store.read("exec").to_pylist() if r["model"] == model}
    groups = []
    for lang in sorted({t["lang"] for t in tasks}):
        ids = [t["id"] for t in tasks if t["lang"] == lang]
        rows = [exec_rows.get((lang, i)) for i in ids]
        ok = [r for r in rows if r and r.get("success")]
        times = [r["runtime_sec"] for r in ok if r.get("runtime_sec") is not None and not r.get("skipped")]
        fine: dict[str, int] = {}
        for r in rows:
            if r and not r.get("success"):
                key = r.get("fine_type") or r.get("error_kind") or "unclassified"
                fine[key] = fine.get(key, 0) + 1
        groups.append({
            "model": model, "lang": lang, "tasks": len(ids),
            "exec_ok": len(ok), "exec_pct": _pct(len(ok), len(ids)),
            "not_run": sum(r is None for r in rows),
            "render_mean_s": round(statistics.fmean(times), 3) if times else None,
            "render_median_s": round(statistics.median(times), 3) if times else None,
            "failures_by_type": fine,
        })
    return {"groups": groups, "stage_seconds": {k: round(v, 2) for k, v in timings.items()}}


def format_summary(summary: dict) -> str:
    head = "| model | lang | tasks | Exec ok | Exec % | render mean s | render median s | failures |"
    lines = ["## prism_fast summary (denominator: all tasks)", "", head, "|" + "---|" * (head.count("|") - 1)]
    for g in summary["groups"]:
        fails = ", ".join(f"{k}={v}" for k, v in sorted(g["failures_by_type"].items())) or "-"
        lines.append(
            f"| {g['model']} | {g['lang']} | {g['tasks']} | {g['exec_ok']} | {g['exec_pct']} | "
            f"{g['render_mean_s']} | {g['render_median_s']} | {fails} |"
        )
    lines += ["", "Stage wall time (s): " + ", ".join(f"{k}={v}" for k, v in summary["stage_seconds"].items())]
    return "\n".join(lines) + "\n"
