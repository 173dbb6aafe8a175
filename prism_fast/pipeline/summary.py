"""The end-of-run summary: per (model, language) funnel counts and rates over all tasks, the metric means,
render times, and where the wall time went."""

from __future__ import annotations

import statistics

from prism_fast.schema import STAGE_FIELDS
from prism_fast.store import ResultsStore


def _pct(num: int, den: int) -> float | None:
    return round(100.0 * num / den, 2) if den else None


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.fmean(values), 4) if values else None


def _rows(store: ResultsStore, stage: str, model: str, current: dict | None = None,
          left_out: dict | None = None) -> dict:
    """The stage's rows of ``model`` by (lang, id). ``current``: stage → (lang, id) → (settings_sha256,
    inputs_sha256) of this run (pipeline/settings.py); a row made with other settings or inputs is left out
    (counted in ``left_out``), so the summary never reports a stale number."""
    if stage not in STAGE_FIELDS:
        return {}
    rows = store.rows_by_key(stage, model)
    want = (current or {}).get(stage)
    if want is None:
        return rows
    kept = {k: r for k, r in rows.items() if k in want and (r.get("settings_sha256"), r.get("inputs_sha256")) == want[k]}
    stale = sum(1 for k in rows if k in want and k not in kept)
    if stale and left_out is not None:
        left_out[stage] = stale
    return kept


def summarize_run(store: ResultsStore, model: str, task_ids: list[str], timings: dict[str, float],
                  current: dict | None = None) -> dict:
    wanted = set(task_ids)
    tasks = [r for r in store.rows("tasks", model) if r["id"] in wanted]
    left_out: dict[str, int] = {}
    exec_rows, audit_rows = _rows(store, "exec", model, current, left_out), _rows(store, "audit", model, current, left_out)
    td_rows, te_rows = _rows(store, "td", model, current, left_out), _rows(store, "text_expand", model, current, left_out)
    groups = []
    for lang in sorted({t["lang"] for t in tasks}):
        keys = [(lang, t["id"]) for t in tasks if t["lang"] == lang]
        n = len(keys)
        ex = [exec_rows.get(k) for k in keys]
        ok = [r for r in ex if r and r.get("success")]
        times = [r["runtime_sec"] for r in ok if r.get("runtime_sec") is not None and not r.get("skipped")]
        failures: dict[str, int] = {}
        for r in ex:
            if r and not r.get("success"):
                key = r.get("error_type") or r.get("error_kind") or "unclassified"
                failures[key] = failures.get(key, 0) + 1
        group = {
            "model": model, "lang": lang, "tasks": n,
            "exec_ok": len(ok), "exec_pct": _pct(len(ok), n),
            "not_run": sum(r is None for r in ex),
            "render_mean_s": _mean(times), "render_median_s": round(statistics.median(times), 3) if times else None,
            "failures_by_type": failures,
        }
        execs = [_manim_executions(exec_rows.get(k), audit_rows.get(k)) for k in keys]
        execs = [e for e in execs if e is not None]
        group.update(manim_exec_per_sample=_mean(execs),
                     audit_shared=sum(1 for k in keys if (audit_rows.get(k) or {}).get("audit_pass") == "shared"))
        if audit_rows:
            passed = sum(1 for k in keys if (audit_rows.get(k) or {}).get("visual_structure_pass") == 1)
            group.update(spatial_pass=passed, spatial_pct=_pct(passed, n))
        if td_rows:
            rendered = [td_rows[k] for k in keys if k in td_rows and td_rows[k].get("render_success")]
            group.update(td_center_mean_rendered=_mean(r.get("td_center") for r in rendered),
                         u_td_mean_all=_mean([(td_rows.get(k) or {}).get("u_td") or 0.0 for k in keys]))
        if te_rows:
            group["text_expand_ratio_mean"] = _mean(
                (te_rows.get(k) or {}).get("text_expand_ratio_raw") for k in keys
                if (te_rows.get(k) or {}).get("status") == "ok")
        groups.append(group)
    out = {"groups": groups, "stage_seconds": {k: round(v, 2) for k, v in timings.items()}}
    if left_out:
        out["left_out_stale"] = left_out
    return out


def _manim_executions(ex: dict | None, au: dict | None) -> int | None:
    """Manim executions the run spent on one sample: its render (0 on a cache hit / trusted video, 2 when a
    one-pass render failed and was rendered again) + its audit (0 when shared with the render or cached)."""
    if not ex or ex.get("error_kind") == "no_script":
        return None
    n = ex.get("manim_executions")
    if n is None:
        n = 0 if (ex.get("cache_hit") or ex.get("skipped") or not ex.get("scene_class")) else 1
    if au and au.get("audit_pass") != "shared" and not au.get("audit_cache_hit") and au.get("error_kind") != "no_script":
        n += 1
    return int(n)


COLUMNS = [  # (header, key)
    ("model", "model"), ("lang", "lang"), ("tasks", "tasks"), ("Exec %", "exec_pct"),
    ("Spatial %", "spatial_pct"), ("TD_c (rendered)", "td_center_mean_rendered"), ("uTD (all)", "u_td_mean_all"),
    ("TextExpand", "text_expand_ratio_mean"), ("render mean s", "render_mean_s"),
    ("Manim exec/sample", "manim_exec_per_sample"),
]


def format_summary(summary: dict) -> str:
    groups = summary["groups"]
    cols = [(h, k) for h, k in COLUMNS if any(k in g for g in groups)] + [("failures", None)]
    lines = ["## prism_fast summary (denominator: all tasks)", "",
             "| " + " | ".join(h for h, _ in cols) + " |", "|" + "---|" * len(cols)]
    for g in groups:
        cells = []
        for _, k in cols:
            if k is None:
                cells.append(", ".join(f"{t}={c}" for t, c in sorted(g["failures_by_type"].items())) or "-")
            else:
                v = g.get(k)
                cells.append("-" if v is None else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Stage wall time (s): " + ", ".join(f"{k}={v}" for k, v in summary["stage_seconds"].items())]
    gen = summary.get("generation") or {}
    if gen.get("requested_failed") or gen.get("never_requested"):
        failed = gen.get("requested_failed") or {}
        lines.append(f"No reply (scored as Exec failures): requested and failed: {sum(failed.values())}"
                     + (f" ({', '.join(f'{k}={v}' for k, v in failed.items())})" if failed else "")
                     + f"; never requested: {gen.get('never_requested', 0)}"
                     + (" (not in the predictions: generate them first)" if gen.get("never_requested") else ""))
    if summary.get("left_out_stale"):
        lines.append("Left out (rows made with other settings than this run's; their stage did not run now): "
                     + ", ".join(f"{k}={v}" for k, v in summary["left_out_stale"].items()))
    return "\n".join(lines) + "\n"
