"""Table 1 (funnel and metrics) and Table 2 (failures and render time) from the per-task table. Pure.

Denominators (spec README §2, execution.md §4): Exec % is always over **all tasks** of the (model, language)
run — a task without a script is a failure. Spatial %, Overlap %, Leak % and OOB % use the configured
denominator:

- ``all_tasks`` (default, the paper): every task; a task that was not audited counts as not passing and as
  having no finding;
- ``rendered``: the tasks whose render succeeded (numerators restricted to them too);
- ``audited``: the tasks whose audit succeeded (``audit_success == 1``).

PADVC_c and TD_c follow the authors' ``*_center_mean_rendered`` columns: the mean over tasks that rendered and
were scored. A column whose stage is absent from the run is None (printed "—").
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from prism_fast.execute.taxonomy import CATEGORY_LABELS, CATEGORY_OF_TYPE, CATEGORY_ORDER, ERROR_TYPE_LABELS, ERROR_TYPE_ORDER
from prism_fast.report.tasks import column, groups

DENOMINATORS = ("all_tasks", "rendered", "audited")
DENOMINATOR_TEXT = {
    "all_tasks": "all tasks of the (model, language) run (the paper's convention)",
    "rendered": "tasks whose render succeeded",
    "audited": "tasks whose spatial audit succeeded (audit_success = 1)",
}
# (key, header) in the paper's column order
TABLE1_COLUMNS = [
    ("exec_pct", "Exec %"), ("spatial_pct", "Spatial %"), ("padvc_c", "PADVC_c"), ("td_c", "TD_c"),
    ("overlap_pct", "Overlap %"), ("leak_pct", "Leak %"), ("oob_pct", "OOB %"),
]
TABLE2_CATEGORY_DENOMINATORS = ("failures", "all_tasks")


def _bool(table: pa.Table, name: str) -> np.ndarray:
    return np.array([bool(v) for v in table.column(name).to_pylist()], dtype=bool)


def _pct(num: int, den: int) -> float | None:
    return 100.0 * num / den if den else None


def _mean(x: np.ndarray) -> float | None:
    x = x[~np.isnan(x)]
    return float(x.mean()) if x.size else None


def denominator_mask(table: pa.Table, denominator: str) -> np.ndarray:
    if denominator == "all_tasks":
        return np.ones(table.num_rows, dtype=bool)
    if denominator == "rendered":
        return _bool(table, "exec_success")
    if denominator == "audited":
        return _bool(table, "audit_success")
    raise ValueError(f"unknown denominator {denominator!r}; expected one of {DENOMINATORS}")


def table1(tasks: pa.Table, denominator: str = "all_tasks", stages: dict[str, set] | None = None) -> list[dict]:
    """One row per (run, model, lang). ``stages`` maps a run label to the stages it has (absent -> None)."""
    rows = []
    for (run, model, lang), t in groups(tasks):
        have = (stages or {}).get(run, {"audit", "td", "padvc"})
        n = t.num_rows
        exec_ok = _bool(t, "exec_success")
        sel = denominator_mask(t, denominator)
        d = int(sel.sum())
        row = {"run": run, "model": model, "lang": lang, "tasks": n, "denominator": denominator,
               "denominator_n": d, "exec_n": int(exec_ok.sum()), "exec_pct": _pct(int(exec_ok.sum()), n)}
        if "audit" in have:
            spatial = _bool(t, "spatial_pass") & sel
            row["spatial_n"] = int(spatial.sum())
            row["spatial_pct"] = _pct(int(spatial.sum()), d)
            for kind in ("overlap", "leak", "oob"):
                counts = column(t, f"n_{kind}")
                hit = (np.nan_to_num(counts) > 0) & sel
                row[f"{kind}_n"] = int(hit.sum())
                row[f"{kind}_pct"] = _pct(int(hit.sum()), d)
        else:
            row.update(spatial_pct=None, overlap_pct=None, leak_pct=None, oob_pct=None)
        for key, col, stage in (("padvc_c", "padvc_center", "padvc"), ("td_c", "td_center", "td")):
            if stage in have:
                values = column(t, col)[exec_ok]
                row[key] = _mean(values)
                row[f"{key}_n"] = int((~np.isnan(values)).sum())
            else:
                row[key] = None
        # nondeterminism (execute/determinism.py): scripts with static marks; with a double render, differing videos
        marks = column(t, "nondeterminism_marks") if "nondeterminism_marks" in t.column_names else np.zeros(n)
        row["nondeterminism_marked_n"] = int((np.nan_to_num(marks) > 0).sum())
        equal = t.column("determinism_equal").to_pylist() if "determinism_equal" in t.column_names else []
        row["determinism_checked_n"] = sum(1 for v in equal if v is not None)
        row["determinism_differ_n"] = sum(1 for v in equal if v is False)
        witness = t.column("video_consistency").to_pylist() if "video_consistency" in t.column_names else []
        row["audit_video_mismatch_n"] = sum(1 for v in witness if v == "mismatch")
        row["video_not_checked_n"] = sum(1 for v in witness if isinstance(v, str) and v.startswith("not_checked"))
        rows.append(row)
    return rows


def table2(tasks: pa.Table, category_denominator: str = "failures") -> list[dict]:
    """Per (run, model, lang): failure count and rate (over all tasks), the 6 paper categories (as % of the
    failures, or of all tasks), the 12 fine types (counts), and render time mean/median/p95 (seconds, over
    successful renders that were not skipped; p95 is numpy's linear-interpolation percentile)."""
    if category_denominator not in TABLE2_CATEGORY_DENOMINATORS:
        raise ValueError(f"unknown category denominator {category_denominator!r}")
    rows = []
    for (run, model, lang), t in groups(tasks):
        n = t.num_rows
        exec_ok = _bool(t, "exec_success")
        fails = int((~exec_ok).sum())
        types = [v for v, ok in zip(t.column("error_type").to_pylist(), exec_ok) if not ok]
        cats = [c or CATEGORY_OF_TYPE.get(ty or "", "other_error")
                for c, ok, ty in zip(t.column("error_category").to_pylist(), exec_ok, t.column("error_type").to_pylist())
                if not ok]
        den = fails if category_denominator == "failures" else n
        row = {"run": run, "model": model, "lang": lang, "tasks": n, "failures": fails,
               "failure_pct": _pct(fails, n), "category_denominator": category_denominator}
        for c in CATEGORY_ORDER:
            k = sum(1 for x in cats if x == c)
            row[f"cat_{c}_n"] = k
            row[f"cat_{c}_pct"] = _pct(k, den)
        for ty in ERROR_TYPE_ORDER:
            row[f"type_{ty}_n"] = sum(1 for x in types if x == ty)
        other = sorted({x for x in types if x not in ERROR_TYPE_ORDER}, key=str)
        row["unclassified"] = {str(x): sum(1 for y in types if y == x) for x in other}
        times = column(t, "render_s")
        times = times[~np.isnan(times)]
        row["render_n"] = int(times.size)
        row["render_mean_s"] = float(times.mean()) if times.size else None
        row["render_median_s"] = float(np.median(times)) if times.size else None
        row["render_p95_s"] = float(np.percentile(times, 95)) if times.size else None
        rows.append(row)
    return rows


TABLE2_CATEGORY_HEADERS = [(f"cat_{c}_pct", CATEGORY_LABELS[c]) for c in CATEGORY_ORDER]
TABLE2_TYPE_HEADERS = [(f"type_{t}_n", ERROR_TYPE_LABELS[t]) for t in ERROR_TYPE_ORDER]
