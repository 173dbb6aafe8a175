"""Per-sample rows and the ``results.json`` summary (spec spatial_audit.md §10.2-§10.4). Pure.

Row keys follow the authors' ``audit_batch.py`` (``id`` … ``error_msg``, then ``visual_audit_report`` when a
report file existed); the project's own fields (``profile``, ``status``, ``error_kind``, ``error_detail``,
``audit_mode``, ``returncode``, ``scene_errors``, ``engine``) are appended after them.
"""

from __future__ import annotations

from datetime import datetime

ISSUE_KEYS = ("out_of_bounds", "overlaps", "leaks")
STATUSES = ("ok", "audit_failed", "timeout")
NO_SEGMENTS = "Audit produced no valid segments"


def _zero_breakdown() -> dict:
    return {k: 0 for k in ISSUE_KEYS}


def count_segments(report) -> int:
    if not isinstance(report, dict):
        return 0
    return sum(len(scene) for scene in report.values() if isinstance(scene, dict))


def summarize(report: dict) -> dict:
    """Per-sample metrics of one report (§10.3)."""
    total = clean = 0
    counts = _zero_breakdown()
    for scene in report.values():
        for segment in scene.values():
            total += 1
            n = 0
            for key in ISSUE_KEYS:
                c = len(segment.get(key, []))
                counts[key] += c
                n += c
            clean += n == 0
    issues = sum(counts.values())
    if total == 0:
        return {"segment_count": 0, "visual_structure_rate": 0.0, "visual_structure_pass": 0,
                "visual_issue_total": 0, "visual_issue_breakdown": counts, "visual_audit_report": report}
    return {"segment_count": total, "visual_structure_rate": clean / total,
            "visual_structure_pass": 1 if issues == 0 else 0, "visual_issue_total": issues,
            "visual_issue_breakdown": counts, "visual_audit_report": report}


def error_from_stderr(stderr: str) -> str:
    """The toolkit's error line: last non-empty line, or the last "Error:" line after a path/log line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if not lines:
        return "Audit failed with no stderr"
    last = lines[-1]
    if (last.startswith("/") or ".log" in last) and len(lines) > 1:
        for line in reversed(lines):
            if "Error:" in line:
                return line
    return last


def base_row(sample_id: str, file_path: str, runtime_sec: float) -> dict:
    return {"id": sample_id, "file_path": file_path, "audit_success": 0, "runtime_sec": runtime_sec,
            "segment_count": 0, "visual_structure_rate": 0.0, "visual_structure_pass": 0,
            "visual_issue_total": 0, "visual_issue_breakdown": _zero_breakdown(), "error_msg": None}


def build_row(
    sample_id: str,
    file_path: str,
    runtime_sec: float,
    returncode: int | None,
    stderr: str,
    report_text: str | None,
    timed_out: bool = False,
    timeout_sec: float = 900,
    scene_errors: list | None = None,
    fail_on_scene_error: bool = False,
) -> dict:
    """One row from the child's outcome (§10.2). ``report_text`` is None when no report file existed.

    ``fail_on_scene_error`` is Q-SPATIAL-9 fixed: a salvaged exception makes the audit fail.
    """
    row = base_row(sample_id, file_path, runtime_sec)
    scene_errors = list(scene_errors or [])
    if timed_out:
        row["error_msg"] = f"TimeoutExpired: > {timeout_sec}s"
        row.update(status="timeout", error_kind="timeout", error_detail=row["error_msg"])
        return row
    report = None
    if report_text is not None:
        import json

        report = json.loads(report_text or "{}")
        row.update(summarize(report))
        row["audit_success"] = 1
    if returncode != 0:
        row["error_msg"] = error_from_stderr(stderr)
    elif report_text is None:
        row["error_msg"] = "Audit report not generated"
    error_kind = None
    if row["audit_success"] and count_segments(row.get("visual_audit_report") or {}) == 0:
        row.update(audit_success=0, segment_count=0, visual_structure_rate=0.0, visual_structure_pass=0,
                   visual_issue_total=0, visual_issue_breakdown=_zero_breakdown())
        row["error_msg"] = row["error_msg"] or NO_SEGMENTS
        error_kind = "no_segments"
    if fail_on_scene_error and row["audit_success"] and scene_errors:  # Q-SPATIAL-9 fixed
        row.update(audit_success=0, segment_count=0, visual_structure_rate=0.0, visual_structure_pass=0,
                   visual_issue_total=0, visual_issue_breakdown=_zero_breakdown())
        row["error_msg"] = scene_errors[-1]["error"]
        error_kind = "scene_exception"
    if returncode != 0:
        error_kind = "nonzero_exit"
    elif report_text is None:
        error_kind = "no_report"
    status = "ok" if row["audit_success"] else "audit_failed"
    detail = row["error_msg"]
    if status == "ok" and scene_errors:  # Q-SPATIAL-9 reference: salvaged, recorded, still a success
        detail = "salvaged after: " + "; ".join(e["error"] for e in scene_errors)
    row.update(status=status, error_kind=error_kind, error_detail=detail)
    return row


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def aggregate(details: list[dict]) -> dict:
    """The ``summary`` block of results.json (§10.4); failures count as 0 in the averages."""
    total = len(details)
    ok = [d for d in details if d.get("audit_success")]
    clean = [d for d in details if d.get("visual_structure_pass")]

    def bd(d, key):
        return (d.get("visual_issue_breakdown") or {}).get(key, 0)

    kept = [d for d in ok if count_segments(d.get("visual_audit_report")) > 0 and bd(d, "out_of_bounds") == 0]
    kept_clean = [d for d in kept if bd(d, "out_of_bounds") == 0 and bd(d, "overlaps") == 0 and bd(d, "leaks") == 0]
    return {
        "total": total,
        "completed": total,
        "audit_success_count": len(ok),
        "audit_success_rate": len(ok) / total if total else 0.0,
        "visual_pass_count": len(clean),
        "visual_pass_rate": len(clean) / total if total else 0.0,
        "visual_pass_rate_among_audited": len(clean) / len(ok) if ok else 0.0,
        "visual_pass_count_no_oob": len(kept_clean),
        "visual_pass_rate_no_oob": len(kept_clean) / len(kept) if kept else 0.0,
        "kept_count_no_oob": len(kept),
        "avg_visual_structure_rate": _mean(d.get("visual_structure_rate", 0.0) for d in details),
        "avg_issue_total": _mean(d.get("visual_issue_total", 0) for d in details),
        "avg_runtime_sec": _mean(d.get("runtime_sec", 0.0) for d in details),
        "issue_counts": {k: sum(bd(d, k) for d in details) for k in ISSUE_KEYS},
        "error_count": sum(1 for d in details if d.get("error_msg")),
    }


def results_document(details: list[dict], input_dir: str, workers: int, timeout_sec: float,
                     extra: dict | None = None) -> dict:
    """``{timestamp, input_dir, workers, timeout_sec, summary, details}`` with details sorted by id."""
    ordered = sorted(details, key=lambda d: d["id"])
    doc = {"timestamp": datetime.now().strftime("%Y-%m-%d %H:%M:%S"), "input_dir": str(input_dir),
           "workers": workers, "timeout_sec": timeout_sec, "summary": aggregate(ordered), "details": ordered}
    doc.update(extra or {})  # project fields (profile, versions) after the toolkit's keys
    return doc
