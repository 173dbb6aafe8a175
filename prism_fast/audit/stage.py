"""The rows of the ``audit`` stage that no audit worker makes: the Spatial failure of a task without a script,
the skipped audit of a render that timed out (where a Spatial pass needs Exec success), the fields of a sample
whose audit worker was lost, the rows a one-pass render left for the stage to merge, and the reports a resumed run
must not trust. The pipeline wires these to Ray and the store (``pipeline/eval_stages.py``)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterable

from prism_fast.profile import Profile
from prism_fast.schema import normalize_status


def no_script_row(lang: str, sample_id: str) -> dict:
    """The audit row of a task without a script: a Spatial failure."""
    return {"lang": lang, "id": sample_id, "status": "error", "error_kind": "no_script", "audit_success": 0,
            "segment_count": 0, "visual_structure_rate": 0.0, "visual_structure_pass": 0, "audit_status": "no_script"}


# error_kind of the audit row of a render that timed out, not audited (status and audit_status "skipped")
RENDER_TIMED_OUT = "render_timed_out"


def spatial_requires_exec(profile: Profile) -> bool:
    """Q-FUNNEL-1 fixed (``improved``): a Spatial pass needs Exec success; reference: Spatial stands alone."""
    return profile.fixes("Q-FUNNEL-1")


def skips_audit(exec_row: dict | None, profile: Profile) -> bool:
    """Whether the sample is not audited because its render timed out: only where the profile makes a Spatial pass
    need Exec success (Q-FUNNEL-1 fixed, ``improved``), so no audit of it can count as a pass. Under the reference
    funnel (Q-FUNNEL-1 as the toolkit) a failed render's audit still can -- a script that plays past the render
    timeout is audited in a second or so without rasterising, and may pass -- so it is audited as before."""
    return bool(exec_row) and bool(exec_row.get("timed_out")) and spatial_requires_exec(profile)


def render_timed_out_row(lang: str, sample_id: str, exec_row: dict) -> dict:
    """The audit row of a sample :func:`skips_audit` leaves unaudited: nothing executed (runtime 0, no audit
    execution counted), a Spatial failure like a failed audit's."""
    wall = exec_row.get("wall_s")
    after = f" after {float(wall):.1f} s" if isinstance(wall, (int, float)) else ""
    detail = (f"not audited: the render timed out{after} (execute.timeout_s), and under this profile a Spatial pass "
              "needs Exec success (Q-FUNNEL-1), so the script was not executed again for the audit")
    return {"lang": lang, "id": sample_id, "status": "skipped", "error_kind": RENDER_TIMED_OUT, "error_detail": detail,
            "audit_success": 0, "segment_count": 0, "visual_structure_rate": 0.0, "visual_structure_pass": 0,
            "runtime_sec": 0.0, "error_msg": detail, "audit_status": "skipped", "audit_pass": "skipped"}


def lost_fields() -> dict:
    """Audit fields of a sample whose audit worker never returned."""
    return {"audit_success": 0, "visual_structure_pass": 0, "visual_structure_rate": 0.0, "audit_status": "worker_lost"}


# a row the audit stage's actor took from a render's hand-off (only the video witness ran there): its audit_pass
LEFT_PASS = "_left_audit_pass"


def finish_row(row: dict) -> dict:
    """The stored row of an audit run by the audit stage itself (not shared with the render), or of a render's
    hand-off whose video witness the stage's actor ran (its own ``audit_pass`` kept)."""
    row = dict(row)
    left = row.pop(LEFT_PASS, None)
    return normalize_status({**row, "audit_pass": left or "separate"}, "audit_status")


def merge_left_rows(pending: Iterable[tuple[str, str, str]], audit_cfg, profile: Profile, work_dir: str,
                    cache_dir: str | None, retry_failed: bool, unwitnessed: set | None = None) -> list[dict]:
    """The audit rows that one-pass render actors left for the stage (``audit.one_pass=auto``,
    audit/onepass.py), for ``pending`` (lang, id, script) keys, ready to store; the others are audited for real.

    A shared row (audited inside the render) enters the audit cache like an audit-only row; a separate one (the
    render actor ran the audit after its render) is cached already. With ``retry_failed`` a failed separate row
    is audited again. With ``one_pass=off`` nothing is merged: a resumed run audits for real. A row without the
    video witness (the head start's, whose follow-up did not run) is not merged: its id goes to ``unwitnessed``, and
    the stage's actor runs the witness on it (``left_audit_row``), nothing executed."""
    from prism_fast.audit.onepass_store import cache_shared_audit, load_shared_audit

    if getattr(audit_cfg, "one_pass", "off") != "auto":
        return []
    out = []
    for lang, sid, script in pending:
        row = load_shared_audit(sid, script, work_dir, audit_cfg.to_dict())
        if row is None or (retry_failed and row.get("audit_pass") == "separate" and row.get("status") != "ok"):
            continue
        if "video_consistency" not in row:  # the video witness never ran on it: an actor runs it (left_audit_row)
            if unwitnessed is not None:
                unwitnessed.add(sid)
            continue
        if cache_dir and row.get("audit_pass") == "shared":
            row = cache_shared_audit(row, sid, script, audit_cfg, profile, cache_dir, work_dir)
        out.append(normalize_status({**row, "lang": lang, "id": sid}, "audit_status"))
    return out


def forget_reports(work_dir: str | Path, sample_ids: Iterable[str]) -> None:
    """Drop the audit reports of rows being recomputed: reference reads an existing one (Q-SPATIAL-19), so a
    clean run would not have it."""
    for sid in sample_ids:
        shutil.rmtree(Path(work_dir) / "audits" / sid, ignore_errors=True)


def left_audit_row(sample_id: str, script: str, audit_cfg, work_dir: str) -> dict | None:
    """The hand-off row a render left without the video witness (for the stage's actor to finish; it marks the row's
    ``audit_pass`` as LEFT_PASS for :func:`finish_row`), or None."""
    from prism_fast.audit.onepass_store import load_shared_audit

    row = load_shared_audit(sample_id, script, work_dir, audit_cfg.to_dict())
    if row is None or "video_consistency" in row:
        return None
    return row
