"""One row per task: the results store's stages joined on (model, lang, id). Pure reading, no statistics.

Every report number starts from this table, so every denominator is "the tasks of the run" (the ``tasks``
stage; spec README §2). A stage that a run does not have (no ``padvc`` rows yet, no audit) leaves its columns
null, and the report prints "—" for them instead of a number.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from prism_fast.schema import STAGE_FIELDS
from prism_fast.store import ResultsStore

log = logging.getLogger(__name__)

OPTIONAL_STAGES = ("exec", "audit", "td", "text_expand", "padvc", "selfdebug")
ISSUE_KINDS = ("overlap", "oob", "leak")
# the audit row's breakdown keys (spatial_audit.md §10.3) -> the report's kind names
BREAKDOWN_KEY = {"overlap": "overlaps", "oob": "out_of_bounds", "leak": "leaks"}

# (column, arrow type) of the per-task table, in order
TASK_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("run", pa.string()), ("model", pa.string()), ("lang", pa.string()), ("id", pa.string()),
    ("has_script", pa.bool_()), ("clean_status", pa.string()),
    ("exec_present", pa.bool_()), ("exec_success", pa.bool_()), ("render_s", pa.float64()),
    ("error_type", pa.string()), ("error_category", pa.string()), ("error_text", pa.string()),
    ("video_path", pa.string()), ("script_path", pa.string()),
    ("audit_present", pa.bool_()), ("audit_success", pa.bool_()), ("visual_structure_pass", pa.bool_()),
    ("visual_structure_rate", pa.float64()), ("spatial_pass", pa.bool_()),
    ("n_overlap", pa.int64()), ("n_oob", pa.int64()), ("n_leak", pa.int64()),
    ("audit_error", pa.string()), ("audit_report", pa.string()),
    ("td_raw", pa.float64()), ("td_center", pa.float64()), ("u_td", pa.float64()),
    ("padvc_raw", pa.float64()), ("padvc_center", pa.float64()), ("u_padvc", pa.float64()),
    ("total_energy", pa.float64()),
    ("text_expand", pa.float64()), ("info_expand", pa.float64()),
    # nondeterminism (execute/determinism.py): how many static marks the script has (null: no exec row), and with
    # execute.determinism_check whether its two renders gave the same video (null: not rendered twice)
    ("nondeterminism_marks", pa.int64()), ("determinism_equal", pa.bool_()),
    # the video witness of the audit (video/witness.py): ok | mismatch | not_checked:<reason> (null: no audit row)
    ("video_consistency", pa.string()),
]


@dataclass
class RunData:
    """A run directory read for reporting: its per-task table, which stages it has, and its manifest."""

    run_dir: Path
    label: str
    tasks: pa.Table
    stages: tuple[str, ...]
    manifest: dict = field(default_factory=dict)
    spatial_requires_exec: bool = False
    selfdebug_rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def has(self, stage: str) -> bool:
        return stage in self.stages


def _json(value, default):
    if value is None or value == "":
        return default
    if isinstance(value, (dict, list)):
        return value
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return default


def _stage_rows(store: ResultsStore, stage: str) -> dict | None:
    """{(model, lang, id): row} of a stage, or None when the schema does not know it or it has no files."""
    if stage not in STAGE_FIELDS or not store.part_files(stage):
        return None
    return {(r["model"], r["lang"], r["id"]): r for r in store.read(stage).to_pylist()}


def total_energy_of(padvc_row: dict) -> float | None:
    """The joint diagnosis' "total energy" of a PADVC row (ours; the spec names no such field):
    Σ_k E_geo(k)^p + E_text_max^p — PADVC's numerator and text-burden terms without the PVD denominator, the
    text normalisation or the segment divisor S, i.e. how much the video changes regardless of the prompt. A
    row that carries an explicit ``total_energy`` field is used as it is."""
    if padvc_row.get("total_energy") is not None:
        return float(padvc_row["total_energy"])
    g, t = padvc_row.get("geo_evolution_sum_p"), padvc_row.get("max_text_burden_p")
    if g is None or t is None:
        return None
    return float(g) + float(t)


def _spatial_requires_exec(manifest: dict, override) -> bool:
    if override is not None and override != "auto":
        return bool(override)
    return "Q-FUNNEL-1" in (manifest.get("quirks_fixed") or [])  # improved: Spatial pass needs Exec success


def load_run(run_dir: str | Path, label: str | None = None, *, text_expand_column: str = "text_expand_ratio_unique",
             spatial_requires_exec="auto") -> RunData:
    """Read every stage of ``run_dir`` and join them into one row per task of the ``tasks`` stage."""
    run_dir = Path(run_dir)
    if not (run_dir / "rows").is_dir():
        raise FileNotFoundError(f"{run_dir}: not a run directory (no rows/ folder)")
    store = ResultsStore(run_dir)
    manifest = _json((run_dir / "run.json").read_text(encoding="utf-8"), {}) if (run_dir / "run.json").exists() else {}
    label = label or run_dir.name
    task_rows = store.read("tasks").to_pylist()
    if not task_rows:
        raise ValueError(f"{run_dir}: the run has no 'tasks' rows, so no denominator")
    stages = {s: _stage_rows(store, s) for s in OPTIONAL_STAGES}
    present = tuple(s for s, rows in stages.items() if rows is not None)
    needs_exec = _spatial_requires_exec(manifest, spatial_requires_exec)
    cols: dict[str, list] = {name: [] for name, _ in TASK_COLUMNS}
    for t in task_rows:
        key = (t["model"], t["lang"], t["id"])
        ex = (stages["exec"] or {}).get(key) or {}
        au = (stages["audit"] or {}).get(key) or {}
        td = (stages["td"] or {}).get(key) or {}
        te = (stages["text_expand"] or {}).get(key) or {}
        pv = (stages["padvc"] or {}).get(key) or {}
        exec_ok = bool(ex.get("success"))
        render_s = ex.get("runtime_sec") if exec_ok and not ex.get("skipped") else None
        breakdown = _json(au.get("visual_issue_breakdown"), {}) if au else {}
        vsp = au.get("visual_structure_pass") == 1 if au else None
        spatial = (bool(vsp) and (exec_ok or not needs_exec)) if au else False
        te_ok = te.get("status") == "ok"
        pv_ok = pv.get("status") == "ok"
        values = {
            "run": label, "model": t["model"], "lang": t["lang"], "id": t["id"],
            "has_script": t.get("has_script"), "clean_status": t.get("clean_status"),
            "exec_present": bool(ex), "exec_success": exec_ok, "render_s": render_s,
            "error_type": None if exec_ok else (ex.get("error_type") or (ex.get("error_kind") if ex else "not_run")),
            "error_category": None if exec_ok else ex.get("error_category"),
            "error_text": None if exec_ok else (ex.get("error_msg") or ex.get("error") or ex.get("error_detail")),
            "video_path": ex.get("video_path"), "script_path": t.get("script_path"),
            "audit_present": bool(au), "audit_success": (au.get("audit_success") == 1) if au else None,
            "visual_structure_pass": vsp, "visual_structure_rate": au.get("visual_structure_rate") if au else None,
            "spatial_pass": spatial,
            "n_overlap": int(breakdown.get("overlaps", 0)) if au else None,
            "n_oob": int(breakdown.get("out_of_bounds", 0)) if au else None,
            "n_leak": int(breakdown.get("leaks", 0)) if au else None,
            "audit_error": au.get("error_msg") if au else None,
            "audit_report": au.get("visual_audit_report") if au else None,
            "td_raw": td.get("td_raw"), "td_center": td.get("td_center"), "u_td": td.get("u_td"),
            "padvc_raw": pv.get("padvc_raw") if pv_ok else None,
            "padvc_center": pv.get("padvc_center") if pv_ok else None,
            "u_padvc": pv.get("u_padvc") if pv_ok else None,
            "total_energy": total_energy_of(pv) if pv_ok else None,
            "text_expand": te.get(text_expand_column) if te_ok else None,
            "info_expand": te.get("info_expand_ratio") if te_ok else None,
            "nondeterminism_marks": len(_json(ex.get("determinism_marks"), []) or []) if ex else None,
            "determinism_equal": ex.get("determinism_equal") if ex else None,
            "video_consistency": au.get("video_consistency") if au else None,
        }
        for name in cols:
            cols[name].append(values[name])
    table = pa.Table.from_pydict(cols, schema=pa.schema([pa.field(n, t) for n, t in TASK_COLUMNS]))
    notes = []
    for stage in ("audit", "td", "text_expand", "padvc"):
        if stage not in present:
            notes.append(f"{label}: no '{stage}' rows; its columns are shown as —")
    selfdebug = list((stages["selfdebug"] or {}).values())
    return RunData(run_dir, label, table, present, manifest, needs_exec, selfdebug, notes)


def column(table: pa.Table, name: str, dtype=np.float64) -> np.ndarray:
    """A column as a numpy array; nulls become NaN (floats) — bool columns must be null-free for ints."""
    values = table.column(name).to_pylist()
    if dtype is np.float64:
        return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)
    return np.array(values, dtype=dtype)


def groups(table: pa.Table, keys=("run", "model", "lang")) -> list[tuple[tuple, pa.Table]]:
    """Split ``table`` by ``keys``: runs in the order they appear, the other keys sorted."""
    key_cols = [table.column(k).to_pylist() for k in keys]
    index: dict[tuple, list[int]] = {}
    for i, key in enumerate(zip(*key_cols)):
        index.setdefault(key, []).append(i)
    runs = list(dict.fromkeys(table.column("run").to_pylist())) if "run" in keys else []

    def order(k):
        return tuple(runs.index(v) if name == "run" else v for name, v in zip(keys, k))

    return [(k, table.take(pa.array(index[k], type=pa.int64()))) for k in sorted(index, key=order)]
