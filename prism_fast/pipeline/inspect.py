"""``prism-fast inspect RUN ID``: pictures of one sample's spatial findings.

Re-runs the sample's audit (same profile and audit settings as the run, from ``<run>/run.json``) with
``AuditConfig.pictures`` on: the child additionally rasterises each checkpoint once at the -ql resolution
(854×480) over the audit frame, after the snapshot's checks, and keeps the finding atoms' bboxes. Then, for
every segment of the report (k = running index over scenes and segments, in report order), the frame with
every violating atom's bbox and label (``torchvision.utils.draw_bounding_boxes``) is written to
``<run>/inspect/<id>/segment_<k>.png``, and all findings with their scene/pixel boxes to
``<run>/inspect/<id>/findings.json``. Pictures never change the report (tested byte-identical);
``findings.json`` also says whether the re-audit's report equals the one stored in the run.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

from prism_fast.audit.config import AuditConfig
from prism_fast.profile import REFERENCE, Profile, resolve_profile

_log = logging.getLogger(__name__)


def _run_profile(manifest: dict) -> Profile:
    name = manifest.get("profile", "reference")
    fixed = set(manifest.get("quirks_fixed") or [])
    if name == "improved":
        return resolve_profile("improved")
    if not fixed:
        return REFERENCE
    return resolve_profile("reference", {q: True for q in fixed})


def _run_audit_config(manifest: dict) -> tuple[AuditConfig, list[str]]:
    """The run's audit settings; settings this version does not know are dropped with a warning."""
    from dataclasses import fields

    audit = dict((manifest.get("config") or {}).get("audit") or {})
    known = {f.name for f in fields(AuditConfig)}
    unknown = sorted(k for k in audit if k not in known and k not in ("enabled", "cache"))
    if unknown:
        _log.warning("inspect: the run's audit settings %s are unknown to this version and ignored", unknown)
    return AuditConfig(**{k: v for k, v in audit.items() if k in known}), unknown


def find_script(run_dir: Path, sample_id: str, model_name: str | None = None) -> tuple[Path, Path]:
    """``(script, model dir)`` of ``sample_id`` in the run: ``models/<model>/audit/scripts/<id>.py``."""
    hits = sorted(run_dir.glob(f"models/*/audit/scripts/{sample_id}.py"))
    if model_name is not None and len(hits) > 1:
        hits = [h for h in hits if h.parents[2].name == quote(str(model_name), safe="")] or hits
    if not hits:
        raise FileNotFoundError(f"no audited script for {sample_id!r} under {run_dir}/models/*/audit/scripts/")
    if len(hits) > 1:
        models = [h.parents[2].name for h in hits]
        raise ValueError(f"{sample_id!r} was audited for several models {models}; choose one with model=<name>")
    return hits[0], hits[0].parents[2]


def inspect_sample(run_dir, sample_id: str, model_name: str | None = None, out_dir=None,
                   cfg: AuditConfig | None = None, profile: Profile | None = None) -> dict:
    """Re-audit one sample of a run with pictures on; returns the findings document (also on disk)."""
    from prism_fast.audit.pictures import draw_findings
    from prism_fast.audit.runner import audit_file

    run_dir = Path(run_dir)
    manifest_path = run_dir / "run.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {}
    profile = profile or _run_profile(manifest)
    ignored: list[str] = []
    if cfg is None:
        cfg, ignored = _run_audit_config(manifest)
    cfg = replace(cfg, pictures=True, prefork=False)
    script, model_dir = find_script(run_dir, sample_id, model_name)
    out_dir = Path(out_dir) if out_dir else run_dir / "inspect" / sample_id
    work = out_dir / ".work"
    shutil.rmtree(work, ignore_errors=True)
    row = audit_file(script, work, cfg, profile, sample_id=sample_id, draw_failing_pictures=False)
    audit_dir = work / "audits" / sample_id
    report_path = audit_dir / "audit_report.json"
    report_text = report_path.read_text(encoding="utf-8") if report_path.exists() else None
    stored = model_dir / "audit" / "audits" / sample_id / "audit_report.json"
    stored_text = stored.read_text(encoding="utf-8") if stored.exists() else None
    matches = None if stored_text is None else stored_text == report_text
    if matches is False:
        _log.warning("inspect %s: the re-audit's report differs from the run's %s", sample_id, stored)
    extra = {"id": sample_id, "run_dir": str(run_dir), "script": str(script), "profile": profile.describe(),
             "audit_mode": row.get("audit_mode"), "audit_success": row.get("audit_success"),
             "error_msg": row.get("error_msg"), "visual_structure_pass": row.get("visual_structure_pass"),
             "matches_run_report": matches, "ignored_audit_settings": ignored}
    report = json.loads(report_text) if report_text else {}
    doc = draw_findings(report, audit_dir / "pictures_raw", out_dir, extra)
    log = audit_dir / "audit.log"
    if log.exists():
        shutil.copyfile(log, out_dir / "audit.log")
    shutil.rmtree(work, ignore_errors=True)
    return doc


def inspect_from_config(cfg) -> int:
    """CLI entry (``prism-fast inspect RUN ID [model=<name>]``); RUN is a run dir or a name under runs_root."""
    run, sample_id = cfg.inspect.get("run"), cfg.inspect.get("id")
    if not run or not sample_id:
        _log.error("usage: prism-fast inspect RUN ID  (RUN: a run directory or a run name under runs_root)")
        return 2
    run_dir = Path(str(run))
    if not run_dir.exists():
        run_dir = Path(str(cfg.runs_root)) / str(run)
    if not run_dir.exists():
        _log.error("inspect: run %s not found (neither a directory nor under runs_root=%s)", run, cfg.runs_root)
        return 2
    model = cfg.get("model", {}).get("name") if cfg.get("model") is not None else None
    try:
        doc = inspect_sample(run_dir, str(sample_id), model_name=model)
    except (FileNotFoundError, ValueError) as exc:
        _log.error("inspect: %s", exc)
        return 2
    out = run_dir / "inspect" / str(sample_id)
    for seg in doc["segments"]:
        n = len(seg["atoms"])
        note = f"  (no frame: {seg['frame_error']})" if seg["frame_error"] else ""
        print(f"{out / seg['png']}: {seg['scene']} {seg['segment']}, {n} flagged atom(s){note}")
    print(f"{out / 'findings.json'}: audit_success={doc['audit_success']} "
          f"visual_structure_pass={doc['visual_structure_pass']} matches_run_report={doc['matches_run_report']}")
    return 0
