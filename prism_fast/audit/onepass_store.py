"""The one-pass hand-off store: a render actor leaves the audit row of a sample (shared from its render, or
audited separately right after it) for the audit stage, keyed by the script's and the audit settings' sha256
(design: docs/design.md "One-pass audit"). Files under ``<work_dir>``: ``audits/<id>/`` (the audit's own
files, exactly as an audit-only run writes them) and ``onepass/<id>.json`` (the pending row).
"""

from __future__ import annotations

import json
from pathlib import Path

from prism_fast.audit.cache import AuditCache, audit_cache_key
from prism_fast.audit.rows import build_row
from prism_fast.audit.witness import apply_to_row, write_plan
from prism_fast.execute.fingerprint import fingerprint_hash
from prism_fast.execute.render import resolve_bin
from prism_fast.fsutil import atomic_write_text, sha256_text


def report_text(report: dict) -> str:
    """The report file exactly as the audit child writes it (child.run_audit)."""
    return json.dumps(report, indent=2, ensure_ascii=False)


def write_shared_audit(sample_id: str, file_path: str, shared: dict, work_dir) -> dict:
    """Write ``<work_dir>/audits/<id>/{audit_report.json, audit_meta.json, audit.log}`` from a shared pass and
    return the audit row, built exactly as ``runner.audit_file`` builds it (same report text, exit code 0)."""
    audit_dir = Path(work_dir).resolve() / "audits" / sample_id
    audit_dir.mkdir(parents=True, exist_ok=True)
    text = report_text(shared["report"])
    (audit_dir / "audit_report.json").write_text(text, encoding="utf-8")
    errors = list(shared.get("scene_errors") or [])  # a failed render's exception, as the audit-only run records it
    meta = {"mode": "fast", "audit_pass": "shared", "audit_sec": shared.get("audit_sec"),
            "engine": shared.get("engine"), "errors": errors}
    (audit_dir / "audit_meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
    (audit_dir / "audit.log").write_text("(one-pass audit: stdout/stderr belong to the render)\n" + "=" * 20
                                         + " STDERR " + "=" * 20 + "\n" + text + "\n", encoding="utf-8")
    write_plan(audit_dir, shared.get("witness_plan"))
    row = build_row(sample_id, file_path, float(shared.get("audit_sec") or 0.0), 0, "", text, timed_out=False,
                    timeout_sec=900.0, scene_errors=errors, fail_on_scene_error=False)
    row.update(profile="reference", audit_mode="fast", returncode=0, scene_errors=errors, engine=shared.get("engine"),
               quirks_not_implemented=[], audit_pass="shared",
               report_path=str(audit_dir / "audit_report.json"))
    if shared.get("witness_fields") is not None:
        apply_to_row(row, shared["witness_fields"])
    return row


def _settings_sha256(audit_cfg: dict | None) -> str:
    return sha256_text(json.dumps({k: v for k, v in (audit_cfg or {}).items() if k != "one_pass"}, sort_keys=True,
                                  default=str))


def store_shared_audit(sample_id: str, script: str, shared: dict, work_dir, audit_cfg: dict | None = None) -> dict:
    """Render-actor side: write the audit files and the pending audit row ``<work_dir>/onepass/<id>.json``
    (keyed by the script's and the audit settings' sha256, so a changed script or threshold is audited again)."""
    work = Path(work_dir)
    scripts = work / "scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    script_path = scripts / f"{sample_id}.py"  # the same file_path an audit-only run records
    script_path.write_text(script, encoding="utf-8")
    row = write_shared_audit(sample_id, str(script_path), shared, work)
    _write_pending(sample_id, script, row, work, audit_cfg)
    return row


def store_separate_audit(sample_id: str, script: str, row: dict, work_dir, audit_cfg: dict | None = None) -> None:
    """Render-actor side, for a sample the render could not audit: the audit-only row (``audit_one``, already
    run by the caller) left for the audit stage exactly like a shared one, marked ``audit_pass: separate``."""
    _write_pending(sample_id, script, {**row, "audit_pass": "separate"}, work_dir, audit_cfg)


def _write_pending(sample_id: str, script: str, row: dict, work_dir, audit_cfg: dict | None) -> None:
    pending = Path(work_dir) / "onepass"
    pending.mkdir(parents=True, exist_ok=True)
    doc = {"script_sha256": sha256_text(script), "settings_sha256": _settings_sha256(audit_cfg), "row": row}
    atomic_write_text(pending / f"{sample_id}.json", json.dumps(doc, ensure_ascii=False), fsync=False)


def update_pending(sample_id: str, work_dir, change) -> bool:
    """Rewrite the pending row of ``sample_id`` with ``change(row)`` (in place); False when there is none."""
    path = Path(work_dir) / "onepass" / f"{sample_id}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        row = doc["row"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    change(row)
    atomic_write_text(path, json.dumps(doc, ensure_ascii=False), fsync=False)
    return True


def load_shared_audit(sample_id: str, script: str | None, work_dir, audit_cfg: dict | None = None) -> dict | None:
    """Audit-stage side: the row a one-pass render left for this script, or None (then it is audited)."""
    if script is None:
        return None
    path = Path(work_dir) / "onepass" / f"{sample_id}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if doc.get("script_sha256") != sha256_text(script) or doc.get("settings_sha256") != _settings_sha256(audit_cfg):
        return None
    return dict(doc["row"])  # dict/list fields are JSON-encoded by the store, as for audit-only rows


def cache_shared_audit(row: dict, sample_id: str, script: str, audit_cfg, profile, cache_dir, work_dir) -> dict:
    """Put a shared row into the audit cache (audit/cache.py) like an audit-only row, so a later run whose
    render is a cache hit (nothing executed, audit separate) is served by the audit cache."""
    key = audit_cache_key(script_text=script, sample_id=sample_id, audit_cfg=audit_cfg, profile=profile,
                          env_fingerprint=fingerprint_hash(resolve_bin("manim")))
    AuditCache(cache_dir).put(key, row, Path(work_dir) / "audits" / sample_id / "audit_report.json")
    return {**row, "audit_cache_hit": False}
