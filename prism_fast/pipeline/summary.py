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
                  current: dict | None = None, spatial_requires_exec: bool = False) -> dict:
    """``spatial_requires_exec``: the run's profile fixes Q-FUNNEL-1 (a Spatial pass needs Exec success, as the
    report's Table 1 counts it); otherwise, as the toolkit, any audit pass counts."""
    wanted = set(task_ids)
    tasks = [r for r in store.rows("tasks", model) if r["id"] in wanted]
    left_out: dict[str, int] = {}
    exec_rows, audit_rows = _rows(store, "exec", model, current, left_out), _rows(store, "audit", model, current, left_out)
    td_rows, te_rows = _rows(store, "td", model, current, left_out), _rows(store, "text_expand", model, current, left_out)
    padvc_rows = _rows(store, "padvc", model, current, left_out)
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
        # nondeterminism (execute/determinism.py): scripts with static marks; with execute.determinism_check, the
        # samples rendered twice and those whose two videos differed
        group.update(nondeterminism_marked=sum(1 for r in ex if r and _has_marks(r)),
                     determinism_checked=sum(1 for r in ex if r and r.get("determinism_equal") is not None),
                     determinism_differ=sum(1 for r in ex if r and r.get("determinism_equal") is False))
        execs = [_manim_executions(exec_rows.get(k), audit_rows.get(k)) for k in keys]
        execs = [e for e in execs if e is not None]
        group.update(manim_exec_per_sample=_mean(execs),
                     audit_shared=sum(1 for k in keys if (audit_rows.get(k) or {}).get("audit_pass") == "shared"))
        if audit_rows:
            passed = sum(1 for k in keys if (audit_rows.get(k) or {}).get("visual_structure_pass") == 1
                         and (not spatial_requires_exec or (exec_rows.get(k) or {}).get("success")))
            group.update(spatial_pass=passed, spatial_pct=_pct(passed, n))
            # the video witness (video/witness.py): Spatial failures because the checkpoints are not the video's,
            # and audited samples it could not check (by reason)
            witness = [(audit_rows.get(k) or {}).get("video_consistency") for k in keys]
            group["audit_video_mismatch"] = sum(1 for v in witness if v == "mismatch")
            unchecked: dict[str, int] = {}
            for v in witness:
                if isinstance(v, str) and v.startswith("not_checked:"):
                    unchecked[v.split(":", 1)[1]] = unchecked.get(v.split(":", 1)[1], 0) + 1
            group["video_not_checked"] = unchecked
        if td_rows:
            rendered = [td_rows[k] for k in keys if k in td_rows and td_rows[k].get("render_success")]
            group.update(td_center_mean_rendered=_mean(r.get("td_center") for r in rendered),
                         u_td_mean_all=_mean([(td_rows.get(k) or {}).get("u_td") or 0.0 for k in keys]))
        if padvc_rows:
            group.update(_padvc_means(padvc_rows, keys))
        if te_rows:
            group["text_expand_ratio_mean"] = _mean(
                (te_rows.get(k) or {}).get("text_expand_ratio_raw") for k in keys
                if (te_rows.get(k) or {}).get("status") == "ok")
        groups.append(group)
    out = {"groups": groups, "stage_seconds": {k: round(v, 2) for k, v in timings.items()}}
    if left_out:
        out["left_out_stale"] = left_out
    return out


def _padvc_means(rows: dict, keys: list) -> dict:
    """PADVC as TD's columns: PADVC_c over the rendered tasks it scored, u_PADVC (PADVC_raw × Spatial pass) over
    all tasks (0 without a scored row). Error rows are in neither mean; those past the gate (a rendered, audited
    task PADVC could not score: OCR, decoding, PVD) are counted, the gate's own (no video, no audit) are not."""
    scored = {k: rows[k] for k in keys if (rows.get(k) or {}).get("status") == "ok"}
    rendered = [r for r in scored.values() if r.get("render_success")]
    return {"padvc_center_mean_rendered": _mean(r.get("padvc_center") for r in rendered),
            "u_padvc_mean_all": _mean([(scored.get(k) or {}).get("u_padvc") or 0.0 for k in keys]),
            "padvc_errors": sum(1 for k in keys if (rows.get(k) or {}).get("status") == "error"
                                and rows[k].get("error_kind") != "gate")}


def _has_marks(row: dict) -> bool:
    """Whether an exec row carries nondeterminism marks (a JSON list in the store; null when none)."""
    marks = row.get("determinism_marks")
    return bool(marks) and marks not in ("[]", "null")


def _manim_executions(ex: dict | None, au: dict | None) -> int | None:
    """Manim executions the run spent on one sample: its render (0 on a cache hit / trusted video, 2 when a
    one-pass render failed and was rendered again) + its audit (0 when shared with the render or cached, or
    skipped after a render that timed out)."""
    if not ex or ex.get("error_kind") == "no_script":
        return None
    n = ex.get("manim_executions")
    if n is None:
        n = 0 if (ex.get("cache_hit") or ex.get("skipped") or not ex.get("scene_class")) else 1
    if (au and au.get("audit_pass") not in ("shared", "skipped") and not au.get("audit_cache_hit")
            and au.get("error_kind") != "no_script"):
        n += 1
    return int(n)


COLUMNS = [  # (header, key)
    ("model", "model"), ("lang", "lang"), ("tasks", "tasks"), ("Exec %", "exec_pct"),
    ("Spatial %", "spatial_pct"), ("PADVC_c (rendered)", "padvc_center_mean_rendered"),
    ("uPADVC (all)", "u_padvc_mean_all"), ("TD_c (rendered)", "td_center_mean_rendered"), ("uTD (all)", "u_td_mean_all"),
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
    padvc_failed = [g for g in groups if g.get("padvc_errors")]
    if padvc_failed:
        lines.append("PADVC errors on rendered tasks (in no PADVC mean; 0 in uPADVC): "
                     + ", ".join(f"{g['model']}/{g['lang']}={g['padvc_errors']}" for g in padvc_failed))
    marked = [g for g in groups if g.get("nondeterminism_marked")]
    if marked:
        lines.append(f"{sum(g['nondeterminism_marked'] for g in marked)} samples with nondeterminism marks "
                     "(row: determinism_marks; their videos, TD and PADVC may not reproduce): "
                     + ", ".join(f"{g['model']}/{g['lang']}={g['nondeterminism_marked']}" for g in marked))
    witnessed = [g for g in groups if g.get("audit_video_mismatch") or g.get("video_not_checked")]
    if witnessed:
        lines.append("Video witness: " + "; ".join(
            f"{g['model']}/{g['lang']}: {g.get('audit_video_mismatch', 0)} audit_video_mismatch (Spatial failed: the "
            "audited checkpoints are not what the video shows)"
            + (", not checked " + ", ".join(f"{r}={c}" for r, c in sorted(g["video_not_checked"].items()))
               if g.get("video_not_checked") else "") for g in witnessed))
    checked = [g for g in groups if g.get("determinism_checked")]
    if checked:
        lines.append("Rendered twice (execute.determinism_check): "
                     + ", ".join(f"{g['model']}/{g['lang']}: {g['determinism_differ']} of {g['determinism_checked']} "
                                 "gave different videos" for g in checked))
    if summary.get("left_out_stale"):
        lines.append("Left out (rows made with other settings than this run's; their stage did not run now): "
                     + ", ".join(f"{k}={v}" for k, v in summary["left_out_stale"].items()))
    return "\n".join(lines) + "\n"
