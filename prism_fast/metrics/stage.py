"""The rows of the ``td`` and ``text_expand`` stages around their cores: what TD is given for a sample (its
render and audit rows joined), the fields of a sample whose TD worker was lost, and the TextExpand row of one
script (computed in the driver). PADVC's are in ``padvc_run``. The pipeline wires these to Ray and the store
(``pipeline/eval_stages.py``)."""

from __future__ import annotations

import json
import logging
from typing import Mapping

from prism_fast.profile import Profile
from prism_fast.schema import normalize_status

log = logging.getLogger("prism_fast")


def td_base_row(sample_id: str, exec_row: Mapping, audit_row: Mapping) -> dict:
    """What TD scores: the render's video, gated on its success and weighted by the audit's rate (td.md §3)."""
    return {"id": sample_id, "source_id": sample_id, "render_success": bool(exec_row.get("success")),
            "video_path": exec_row.get("video_path"),
            "visual_structure_pass": audit_row.get("visual_structure_pass", 0),
            "visual_structure_rate": audit_row.get("visual_structure_rate", 0.0)}


def td_lost_fields(base: Mapping) -> dict:
    """TD fields of a sample whose TD worker never returned."""
    return {"td_status": "worker_lost", "render_success": base["render_success"]}


def td_finish_row(row: dict) -> dict:
    return normalize_status(row, "td_status")


def text_expand_stage_row(task, lang: str, script: str | None, profile: Profile, model: str) -> dict:
    """One TextExpand row. The metric runs in the driver, so whatever it raises (a RecursionError on a deep or
    recursive script, a bug) is caught here and becomes the sample's error row: no script stops a run."""
    from prism_fast.metrics import text_expand

    try:
        row = text_expand.text_expand_row(task.id, script, task.instruction, task.language, profile,
                                          source_id=task.id)
        row = normalize_status(row, "text_expand_status")
        if isinstance(row.get("quirks_fixed"), list):
            row["quirks_fixed"] = json.dumps(row["quirks_fixed"])
    except Exception as exc:  # noqa: BLE001 - the sample's error row
        log.warning("text_expand %s raised %s: recorded as its error row", task.id, type(exc).__name__)
        row = {"id": task.id, "status": "error", "text_expand_status": "exception", "error_kind": "stage_exception",
               "error_detail": f"{type(exc).__name__}: {exc}"[:4000], "profile": profile.name}
    return {**row, "model": model, "lang": lang}
