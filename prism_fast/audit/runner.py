"""Run the audit child for one sample, and a simple batch driver (spec spatial_audit.md §10.1, §10.4).

Each script runs in its own subprocess (untrusted code; nothing global is reused between samples), in
its own process group so a timeout kills the whole tree.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from prism_fast.audit.config import AuditConfig
from prism_fast.audit.rows import build_row, results_document
from prism_fast.profile import REFERENCE, Profile

_REPO_ROOT = Path(__file__).resolve().parents[2]
# improved-profile switches this stage does not implement yet: a row audited with one of them on records it
# in ``quirks_not_implemented`` (and a warning is logged), so the reference behaviour is never passed off as
# the improved one
NOT_IMPLEMENTED: tuple[str, ...] = ()
_log = logging.getLogger(__name__)
_warned: set = set()


def child_env(cfg: AuditConfig, work_dir: Path) -> dict:
    env = os.environ.copy()
    tmp = work_dir / ".tmp"
    env.setdefault("MPLCONFIGDIR", str(tmp / "mplconfig"))
    env.setdefault("TMPDIR", str(tmp / "tmp"))
    env.setdefault("TEMP", env["TMPDIR"])
    env.setdefault("TMP", env["TMPDIR"])
    env.setdefault("PRISM_AUDIT_TMP_ROOT", str(tmp / "auditor"))
    for key in ("MPLCONFIGDIR", "TMPDIR", "PRISM_AUDIT_TMP_ROOT"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    env["AUDIT_SAVE_IMAGES"] = "1" if cfg.save_images else "0"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _run_forked(args: list[str], audit_dir: Path, cfg: AuditConfig, quirks: str, env: dict):
    from prism_fast.audit.prefork import server_for

    tmp = Path(env["PRISM_AUDIT_TMP_ROOT"])
    out_path, err_path = tmp / f"{audit_dir.name}.{os.getpid()}.stdout", tmp / f"{audit_dir.name}.{os.getpid()}.stderr"
    start = time.perf_counter()
    rc = server_for(quirks, env).run(args, os.getcwd(), str(out_path), str(err_path), env, cfg.timeout_sec)
    runtime = time.perf_counter() - start
    texts = []
    for path in (out_path, err_path):
        texts.append(path.read_bytes().decode("utf-8", "replace") if path.exists() else "")
        path.unlink(missing_ok=True)
    return rc, texts[0], texts[1], runtime


def run_child(script_path: Path, audit_dir: Path, cfg: AuditConfig, profile: Profile, env: dict):
    """Run the child; returns (returncode | None on timeout, stdout, stderr, runtime_sec)."""
    quirks = ",".join(sorted(profile.fixed))
    args = [str(script_path), "--json-out", str(audit_dir / "audit_report.json"), "--output-dir", str(audit_dir),
            "--meta-out", str(audit_dir / "audit_meta.json"), "--config", json.dumps(cfg.to_dict()),
            "--quirks-fixed", quirks]
    if cfg.prefork:
        return _run_forked(args, audit_dir, cfg, quirks, env)
    cmd = [sys.executable, "-m", "prism_fast.audit.child", *args]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=cfg.timeout_sec)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        return None, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), time.perf_counter() - start
    runtime = time.perf_counter() - start
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), runtime


def audit_file(script_path: Path, work_dir: Path, cfg: AuditConfig, profile: Profile = REFERENCE,
               sample_id: str | None = None, draw_failing_pictures: bool = True) -> dict:
    """Audit an existing script file; layout ``<work_dir>/audits/<id>/{audit_report.json, audit.log}``.

    With ``cfg.pictures`` the child also writes each segment's -ql frame and finding bboxes to
    ``<audit dir>/pictures_raw/``; a sample that fails Spatial then gets ``segment_<k>.png`` + ``findings.json``
    in ``<cfg.pictures_root>/<id>/`` (default ``<audit dir>/pictures/``; ``draw_failing_pictures``), and the row
    a ``pictures`` field."""
    sample_id = sample_id or Path(script_path).stem
    work_dir = Path(work_dir).resolve()
    audit_dir = work_dir / "audits" / sample_id
    audit_dir.mkdir(parents=True, exist_ok=True)
    report_path = audit_dir / "audit_report.json"
    meta_path = audit_dir / "audit_meta.json"
    meta_path.unlink(missing_ok=True)  # our own side file is never stale
    if profile.fixes("Q-SPATIAL-19"):  # improved: no stale report from an earlier run
        report_path.unlink(missing_ok=True)
    env = child_env(cfg, work_dir)
    raw_pictures = audit_dir / "pictures_raw"
    if cfg.pictures:
        shutil.rmtree(raw_pictures, ignore_errors=True)  # never stale
        env["PRISM_AUDIT_PICTURES_DIR"] = str(raw_pictures)
    rc, out, err, runtime = run_child(Path(script_path), audit_dir, cfg, profile, env)
    if rc is not None:
        (audit_dir / "audit.log").write_text(out + "\n" + "=" * 20 + " STDERR " + "=" * 20 + "\n" + err,
                                             encoding="utf-8")
    meta = {}
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except ValueError:
            meta = {"meta_error": "unreadable audit_meta.json"}
    report_text = report_path.read_text(encoding="utf-8") if (rc is not None and report_path.exists()) else None
    row = build_row(sample_id, str(script_path), runtime, rc, err, report_text, timed_out=rc is None,
                    timeout_sec=cfg.timeout_sec, scene_errors=meta.get("errors"),
                    fail_on_scene_error=profile.fixes("Q-SPATIAL-9"))
    missing = sorted(q for q in profile.fixed if q in NOT_IMPLEMENTED)
    if missing and tuple(missing) not in _warned:
        _warned.add(tuple(missing))
        _log.warning("audit: improved switches %s are not implemented; reference behaviour used", missing)
    row.update(profile=profile.name, audit_mode=("full" if cfg.full_fidelity else "fast")
               + ("+prefork" if cfg.prefork else ""), returncode=rc,
               scene_errors=meta.get("errors", []), engine=meta.get("engine"), quirks_not_implemented=missing)
    if cfg.pictures and draw_failing_pictures:
        out = Path(cfg.pictures_root) / sample_id if cfg.pictures_root else audit_dir / "pictures"
        row["pictures"] = _failing_pictures(row, report_text, raw_pictures, out)
    return row


def _failing_pictures(row: dict, report_text: str | None, raw_dir: Path, out_dir: Path) -> dict:
    """Batch opt-in (``audit.pictures``): draw the segments of a sample that fails Spatial (``draw_findings``
    replaces any earlier ``segment_*.png`` and ``findings.json`` there)."""
    if not report_text or row.get("audit_success") != 1 or row.get("visual_structure_pass") == 1:
        return {"status": "skipped", "reason": "passes" if row.get("visual_structure_pass") == 1 else "no report"}
    try:
        from prism_fast.audit.pictures import draw_findings

        doc = draw_findings(json.loads(report_text), raw_dir, out_dir, {"id": row.get("id")})
        missing = [s["k"] for s in doc["segments"] if s["frame_error"]]
        if missing:
            _log.warning("audit pictures for %s: no frame for segment(s) %s", row.get("id"), missing)
        return {"status": "ok" if not missing else "partial", "dir": str(out_dir), "segments": len(doc["segments"]),
                "missing_frames": missing}
    except Exception as exc:  # pictures never fail the audit row, but are never silent either
        _log.warning("audit pictures for %s failed: %s", row.get("id"), exc)
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}


def audit_one(sample_id: str, script_text: str, work_dir, cfg: AuditConfig | None = None,
              profile: Profile = REFERENCE) -> dict:
    """Audit one script given as text: one row (§10.2). The per-segment report is
    ``<work_dir>/audits/<sample_id>/audit_report.json`` (also in the row as ``visual_audit_report``)."""
    cfg = cfg or AuditConfig()
    work_dir = Path(work_dir)
    scripts = work_dir / "scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    script_path = scripts / f"{sample_id}.py"
    script_path.write_text(script_text, encoding="utf-8")
    return audit_file(script_path, work_dir, cfg, profile, sample_id=sample_id)


def audit_batch(input_dir, output_dir, cfg: AuditConfig | None = None, profile: Profile = REFERENCE,
                workers: int = 1, save_interval: int = 20) -> dict:
    """Audit every ``*.py`` of ``input_dir`` (sorted); writes ``<output_dir>/results.json`` atomically.

    Resume: ids already in results.json are skipped, failures and timeouts included (Q-FUNNEL-2,
    reference behaviour of every stage; the keyed resume of the improved profile belongs to the pipeline).
    """
    cfg = cfg or AuditConfig()
    input_dir, output_dir = Path(input_dir), Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    result_path = output_dir / "results.json"
    existing: dict = {}
    if result_path.exists():
        details = json.loads(result_path.read_text(encoding="utf-8")).get("details", [])
        existing = {d["id"]: d for d in details if isinstance(d, dict) and d.get("id")}
    files = sorted(input_dir.glob("*.py"))
    pending = [p for p in files if p.stem not in existing]
    extra = {"profile": profile.describe(), "audit_mode": "full" if cfg.full_fidelity else "fast"}

    def save():
        doc = results_document(list(existing.values()), str(input_dir), workers, cfg.timeout_sec, extra)
        tmp = result_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
        tmp.replace(result_path)

    done = len(existing)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(audit_file, p, output_dir, cfg, profile) for p in pending]
        for fut in as_completed(futures):
            row = fut.result()
            existing[row["id"]] = row
            done += 1
            if done % max(1, save_interval) == 0:
                save()
    save()
    return json.loads(result_path.read_text(encoding="utf-8"))
