"""Run the audit child for one sample, and a simple batch driver (spec spatial_audit.md §10.1, §10.4).

Each script runs in its own subprocess (untrusted code; nothing global is reused between samples), in
its own process group so a timeout kills the whole tree.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import sys
from dataclasses import replace
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from prism_fast.audit import tamper
from prism_fast.audit.config import AuditConfig
from prism_fast.audit.pictures import name_segment_files
from prism_fast.audit.rows import build_row, results_document
from prism_fast.audit.verdict import VerdictTimeout, fill_stand_ins, report_text, verdict_bounded
from prism_fast.audit.witness import plan_from, write_plan
from prism_fast.fsutil import atomic_write_text
from prism_fast.execute import fastpaths, sandbox
from prism_fast.execute.observers import read_result
from prism_fast.execute.texcache import VIEW_INSIDE
from prism_fast.profile import REFERENCE, Profile

_REPO_ROOT = Path(__file__).resolve().parents[2]
OBSERVATIONS = "audit_observations.json"  # the child's raw checkpoint geometry (observations.py)
# improved-profile switches this stage does not implement yet: a row audited with one of them on records it
# in ``quirks_not_implemented`` (and a warning is logged), so the reference behaviour is never passed off as
# the improved one
NOT_IMPLEMENTED: tuple[str, ...] = ()
_log = logging.getLogger(__name__)
_warned: set = set()


# What the audit child may read besides its scratch: nothing of runs_root. Its outputs are copied out by the
# trusted parent (regular files only, bounded sizes) after the child and everything it started are gone.
REPORT_MAX_BYTES = 64 * 1024 * 1024
PICTURES_MAX_BYTES = 512 * 1024 * 1024


def child_env(cfg: AuditConfig, scratch: Path) -> dict:
    """The audit child's environment: the sandbox allow-list, HOME/TMPDIR in its own scratch, and the audit
    switches. No API key, token or other host variable reaches it."""
    tmp = scratch / ".tmp"
    extra = {"MPLCONFIGDIR": str(tmp / "mplconfig"), "TEMP": str(tmp / "tmp"), "TMP": str(tmp / "tmp"),
             "PRISM_AUDIT_TMP_ROOT": str(tmp / "auditor"), "AUDIT_SAVE_IMAGES": "1" if cfg.save_images else "0",
             "PYTHONPATH": str(_REPO_ROOT)}
    env = sandbox.scrub_env(os.environ, home=str(scratch), extra=extra)
    env["TMPDIR"] = extra["TEMP"]
    for key in ("MPLCONFIGDIR", "TMPDIR", "PRISM_AUDIT_TMP_ROOT"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    return env


_workers: dict = {}


def _audit_worker(quirks: str):
    """This process's warm audit fork server for a profile (execute.worker.PreforkWorker with the audit
    entry: the one fork server of the execution service)."""
    from prism_fast.execute.worker import PreforkWorker

    w = _workers.get(quirks)
    if w is None:
        w = _workers[quirks] = PreforkWorker(sys.executable, entry=f"prism_fast.audit.child:fork_entry:{quirks}")
    return w


def _spec(argv: list[str], scratch: Path, cfg: AuditConfig, env: dict,
          tex_view: Path | None = None) -> sandbox.SandboxSpec:
    visible_at, readonly = (), ()
    if tex_view is not None:  # the verified TeX cache view, read-only, outside any runs_root path (as for renders)
        readonly = (str(tex_view),)
        if sandbox.effective_level(cfg.sandbox) in ("namespaces", "bwrap"):
            visible_at = ((str(tex_view), VIEW_INSIDE),)
    return sandbox.SandboxSpec(argv=argv, cwd=str(scratch), env=env, timeout_s=cfg.timeout_sec,
                               interpreters=(sys.executable,), level=cfg.sandbox, readonly_paths=readonly,
                               visible_at=visible_at)


def tex_cache_env(cfg: AuditConfig, scratch: Path, tex_cache_dir: str | None,
                  tex_format: bool, tex_format_deferred: bool = False) -> tuple[dict, Path | None, str]:
    """With the render's TeX cache (``tex_cache_dir``): the variables that make the audit child read this process's
    verified view of it, as a render does (execute/texcache.py: verified SVGs, and with ``tex_format`` the checked
    LaTeX format of manim's default preamble), the view, and the format's state (on | off | failed). The audit's
    mobjects, and so its report, are those of an uncached audit (tests/audit/test_audit_tex_cache.py).
    ``tex_format_deferred``: the format is wanted but not built yet (the pipeline's head start): compile in full,
    row ``tex_format=not_ready`` (``RenderConfig.tex_format_deferred``)."""
    if not tex_cache_dir:
        return {}, None, "off"
    from prism_fast.execute import texcache

    view = texcache.prepare_cache_dir(tex_cache_dir, tex_format=tex_format and not tex_format_deferred)
    inside = VIEW_INSIDE if sandbox.effective_level(cfg.sandbox) in ("namespaces", "bwrap") else str(view)
    env, state = texcache.sample_env(view, inside, scratch / texcache.LOG_NAME, tex_format,
                                     protected=sandbox.read_only_for_script(cfg.sandbox), deferred=tex_format_deferred)
    own = texcache.own_dir_for_audit(scratch)  # its own render's compiles, when it follows that render (hand-off)
    if own is not None:
        env[texcache.ENV_OWN] = str(own)
    return env, view, state


def run_child(script_path: Path, audit_dir: Path, cfg: AuditConfig, profile: Profile, scratch: Path,
              env: dict, tex_view: Path | None = None, seal: str | None = None):
    """Run the audit child in the sandbox; returns (returncode | None on timeout, stdout, stderr, runtime_sec,
    sandbox result). The child reads its own copy of the script and writes only into ``scratch``; with ``seal``
    (hex) it seals its observations with that key, handed over in a file it removes before the script runs."""
    quirks = ",".join(sorted(profile.fixed))
    script = scratch / script_path.name
    shutil.copyfile(script_path, script)
    args = [str(script), "--observations-out", str(scratch / OBSERVATIONS), "--output-dir", str(scratch / "out"),
            "--meta-out", str(scratch / "audit_meta.json"), "--config", json.dumps(cfg.to_dict()),
            "--quirks-fixed", quirks]
    if seal:
        seal_file = scratch / f".seal_{secrets.token_hex(8)}"
        seal_file.write_text(seal, encoding="ascii")
        seal_file.chmod(0o644)  # (the sandboxed child's uid reads it; no other sample's view holds this scratch)
        args += ["--seal-file", str(seal_file)]
    spec = _spec([sys.executable, "-m", "prism_fast.audit.child", *args], scratch, cfg, env, tex_view)
    res = _audit_worker(quirks).run(spec) if cfg.prefork else sandbox.run_sandboxed(spec)
    rc = None if res.timed_out else (res.returncode if res.launch_error is None else 1)
    err = res.stderr.text() if res.launch_error is None else f"sandbox: {res.launch_error}"
    return rc, res.stdout.text(), err, res.wall_s, res


def _copy_out(scratch: Path, audit_dir: Path, cfg: AuditConfig) -> None:
    """Trusted copy of the child's outputs into the run (regular files only, sizes bounded)."""
    for name in (OBSERVATIONS, "audit_meta.json"):
        src = scratch / name
        if src.exists() or src.is_symlink():
            try:
                sandbox.copy_regular_file(src, audit_dir / name, REPORT_MAX_BYTES)
            except OSError as exc:
                _log.warning("audit: %s of %s not taken: %s", name, audit_dir.name, exc)
    if cfg.pictures:
        sandbox.copy_tree(scratch / "pictures_raw", audit_dir / "pictures_raw", PICTURES_MAX_BYTES)
    if cfg.save_images:
        sandbox.copy_tree(scratch / "out", audit_dir, PICTURES_MAX_BYTES)


def audit_file(script_path: Path, work_dir: Path, cfg: AuditConfig, profile: Profile = REFERENCE,
               sample_id: str | None = None, draw_failing_pictures: bool = True, tex_cache_dir: str | None = None,
               tex_format: bool = True, tex_format_deferred: bool = False) -> dict:
    """Audit an existing script file; layout ``<work_dir>/audits/<id>/{audit_report.json, audit.log}``.

    With ``cfg.pictures`` the child also writes each segment's -ql frame and finding bboxes to
    ``<audit dir>/pictures_raw/``; a sample that fails Spatial then gets ``segment_<k>.png`` + ``findings.json``
    in ``<cfg.pictures_root>/<id>/`` (default ``<audit dir>/pictures/``; ``draw_failing_pictures``), and the row
    a ``pictures`` field. ``tex_cache_dir``/``tex_format``: read the render's verified TeX cache
    (:func:`tex_cache_env`; the row's ``tex_format`` says whether the LaTeX format was used)."""
    sample_id = sample_id or Path(script_path).stem
    work_dir = Path(work_dir).resolve()
    audit_dir = work_dir / "audits" / sample_id
    audit_dir.mkdir(parents=True, exist_ok=True)
    report_path = audit_dir / "audit_report.json"
    meta_path = audit_dir / "audit_meta.json"
    meta_path.unlink(missing_ok=True)  # our own side files are never stale
    (audit_dir / OBSERVATIONS).unlink(missing_ok=True)
    if profile.fixes("Q-SPATIAL-19"):  # improved: no stale report from an earlier run
        report_path.unlink(missing_ok=True)
    raw_pictures = audit_dir / "pictures_raw"
    if cfg.pictures:
        shutil.rmtree(raw_pictures, ignore_errors=True)  # never stale
    evidence = tamper.static_evidence(Path(script_path).read_text(encoding="utf-8", errors="replace"))
    if evidence:  # the script reaches for the audit's machinery: not run, never a pass
        row = build_row(sample_id, str(script_path), 0.0, 1, "audit_tampered", None)
        row.update(profile=profile.name, audit_mode="fast" if not cfg.full_fidelity else "full", returncode=None)
        return mark_tampered(row, evidence)
    tmp_root = sandbox.run_root()  # this process's private scratch root (execute/sandbox.py), not a fixed name
    with sandbox.scratch_dir(tmp_root, f"audit_{sample_id[:32]}_") as scratch:
        env = child_env(cfg, scratch)
        if cfg.pictures:
            env["PRISM_AUDIT_PICTURES_DIR"] = str(scratch / "pictures_raw")
        tex_gate, own_state = [], None
        if tex_cache_dir:  # the TeX cache's gate, as for renders (execute/texcache.py "The gate")
            from prism_fast.execute.texcache import script_reasons

            tex_gate = script_reasons(Path(script_path).read_text(encoding="utf-8", errors="replace"))
        if tex_gate:
            tex_env, tex_view, fmt_state = {}, None, "declined"
            _log.warning("audit %s: TeX cache and LaTeX format declined (%s)", sample_id, ", ".join(tex_gate[:4]))
        else:
            tex_env, tex_view, fmt_state = tex_cache_env(cfg, scratch, tex_cache_dir, tex_format,
                                                         tex_format_deferred)
            if tex_cache_dir:  # (after the hand-over: its failure is part of the state)
                from prism_fast.execute.texcache import own_state as _own_state

                own_state = _own_state()
        env.update(tex_env)
        fast = cfg.fast_paths and not cfg.full_fidelity
        # a script that reads the call stack would see a fast path's frame (execute/fastpaths.py FRAME_INFO)
        declined = fast and fastpaths.reads_call_stack(Path(script_path).read_text(encoding="utf-8", errors="replace"))
        if declined:
            _log.warning("audit %s: the script reads the call stack; audited without fast paths (row: "
                         "fast_paths=declined)", sample_id)
        fast = fast and not declined
        if fast:
            env[fastpaths.ENV] = str(scratch / fastpaths.MARKER_NAME)
        seal = secrets.token_hex(32)  # the observations are taken only under this key (docs/security.md)
        rc, out, err, runtime, res = run_child(Path(script_path), audit_dir, cfg, profile, scratch, env, tex_view,
                                               seal)
        # an exception passed through a fast path (execute/fastpaths.py): nothing of this run is kept (not even
        # its report, which a later failure would leave as the stale one), the sample is audited again without them
        retry = fast and fastpaths.tripped(scratch, rc)
        if not retry:
            _copy_out(scratch, audit_dir, cfg)
        fmt_compiles = fmt_fallbacks = own_hits = 0
        if tex_env:
            from prism_fast.execute.texcache import (LOG_NAME, declined_reasons, format_compiles, format_fallbacks,
                                                     own_hit_count)

            fmt_compiles = format_compiles(scratch / LOG_NAME)
            own_hits = own_hit_count(scratch / LOG_NAME)
            fmt_fallbacks = format_fallbacks(scratch / LOG_NAME)
            if fmt_fallbacks:  # never silent (the report is manim's own either way)
                _log.warning("audit %s: %d TeX compile(s) could not use the LaTeX format; manim compiled them "
                             "itself (row: tex_format_fallbacks)", sample_id, fmt_fallbacks)
            tex_gate = declined_reasons(scratch / LOG_NAME)
            if tex_gate:
                _log.warning("audit %s: TeX cache declined at run time for some compiles (%s)", sample_id,
                             ", ".join(tex_gate))
    if retry:
        _log.warning("audit %s: an exception passed through a fast path; audited again without them "
                     "(row: fast_paths=fallback)", sample_id)
        row = audit_file(script_path, work_dir, replace(cfg, fast_paths=False), profile, sample_id,
                         draw_failing_pictures, tex_cache_dir, tex_format, tex_format_deferred)
        row["fast_paths"] = "fallback"
        return row
    engine, obs_evidence = None, []
    if rc is not None:
        engine, obs_evidence, report, verdict_timeout = _verdict(audit_dir, report_path, cfg, profile, seal,
                                                                 max(cfg.timeout_sec - runtime, 1.0))
        if verdict_timeout:
            rc = None  # as the toolkit's audit of such a scene would: over the audit's time
        if report:
            err = fill_stand_ins(err, report)
        (audit_dir / "audit.log").write_text(out + "\n" + "=" * 20 + " STDERR " + "=" * 20 + "\n" + err,
                                             encoding="utf-8")
    meta = {}
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (ValueError, RecursionError):  # (nested past the parser's depth: the script's doing)
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
               scene_errors=meta.get("errors", []), engine=engine, quirks_not_implemented=missing,
               sandbox=res.sandbox, sandbox_protections=",".join(res.protections), tex_format=fmt_state,
               tex_format_compiles=fmt_compiles, tex_format_fallbacks=fmt_fallbacks, tex_own_hits=own_hits,
               tex_own=own_state, tex_cache_reasons=json.dumps(tex_gate) if tex_gate else None,
               fast_paths="declined" if declined else meta.get("fast_paths", "off"))
    if res.launch_error is not None:  # refused or could not start: the sandbox's failure, not the script's
        row.update(status="error", error_kind="sandbox_error", error_detail=res.launch_error)
    elif rc is not None:
        recorded = meta.get("tampered", [])
        found = [str(e) for e in recorded] if isinstance(recorded, list) else ["meta:tampered_unreadable"]
        if rc == 0 and not meta.get(tamper.COMPLETION_KEY):
            found.append("no_completion_record")  # the process ended before the trusted exit wrote the meta
        found += obs_evidence
        if found:
            mark_tampered(row, found)
    if cfg.pictures and draw_failing_pictures:
        out = Path(cfg.pictures_root) / sample_id if cfg.pictures_root else audit_dir / "pictures"
        row["pictures"] = _failing_pictures(row, report_text, raw_pictures, out)
    return row


def _verdict(audit_dir: Path, report_path: Path, cfg: AuditConfig, profile: Profile, seal: str,
             timeout_s: float):
    """The report from the child's observations, computed here (``verdict.py``) and written as the toolkit's
    ``audit_report.json``; the observations file is removed. ``(engine totals | None, evidence, report | None,
    timed out)``: a file without the child's seal (the script's own, written before it stopped the trusted exit) or
    one the recorder never writes is evidence of tampering; no file leaves the report path as it was (reference: a
    stale report is read, Q-SPATIAL-19). The cascade gets what is left of the audit's time (``verdict_bounded``)."""
    obs_path = audit_dir / OBSERVATIONS
    write_plan(audit_dir, None)  # only a plan computed here from this run's observations stands (the child's cwd)
    if not obs_path.exists():
        return None, [], None, False
    try:
        doc, why = read_result(obs_path, seal)
        if doc is None:
            return None, [f"observations:{why}"], None, False
        sealed = doc.get("tampered", [])  # the child's own evidence, sealed with the observations
        if sealed:
            return None, ([str(e) for e in sealed] if isinstance(sealed, list) else ["observations:tampered"]), \
                None, False
        report, engine, per_scene = verdict_bounded(doc, cfg, profile, timeout_s)
    except VerdictTimeout:
        return None, [], None, True
    except Exception as exc:  # noqa: BLE001 - whatever the document does to the reader is the script's doing
        return None, [f"observations:{type(exc).__name__}: {str(exc)[:120]}"], None, False
    finally:
        obs_path.unlink(missing_ok=True)
    atomic_write_text(report_path, report_text(report), fsync=False)
    write_plan(audit_dir, plan_from(doc, per_scene))
    if cfg.pictures or cfg.save_images:
        name_segment_files(per_scene, audit_dir / "pictures_raw" if cfg.pictures else None,
                           audit_dir if cfg.save_images else None)
    return engine, [], report, False


def mark_tampered(row: dict, evidence: list[str]) -> dict:
    """Turn ``row`` into the failing ``audit_tampered`` row: no report, no pass, the evidence recorded."""
    evidence = sorted(set(map(str, evidence)))
    msg = "audit_tampered: " + ", ".join(evidence)
    row.update(audit_success=0, visual_structure_pass=0, visual_structure_rate=0.0, segment_count=0,
               visual_issue_total=0, visual_issue_breakdown={"out_of_bounds": 0, "overlaps": 0, "leaks": 0},
               visual_audit_report=None, error_msg=msg, status="error", error_kind="audit_tampered",
               error_detail=msg, audit_tampered=evidence)
    row["status"] = "audit_failed"
    row.pop("visual_audit_report", None)
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
              profile: Profile = REFERENCE, tex_cache_dir: str | None = None, tex_format: bool = True,
              tex_format_deferred: bool = False) -> dict:
    """Audit one script given as text: one row (§10.2). The per-segment report is
    ``<work_dir>/audits/<sample_id>/audit_report.json`` (also in the row as ``visual_audit_report``)."""
    cfg = cfg or AuditConfig()
    work_dir = Path(work_dir)
    scripts = work_dir / "scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    script_path = scripts / f"{sample_id}.py"
    script_path.write_text(script_text, encoding="utf-8")
    return audit_file(script_path, work_dir, cfg, profile, sample_id=sample_id, tex_cache_dir=tex_cache_dir,
                      tex_format=tex_format, tex_format_deferred=tex_format_deferred)


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
        atomic_write_text(result_path, json.dumps(doc, indent=2, ensure_ascii=False), fsync=False)

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
