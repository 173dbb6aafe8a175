"""Audit child process: audits one script file (spec spatial_audit.md §2-§3, §6-§7).

Usage (one process per script; the parent is ``runner.py``)::

    python -m prism_fast.audit.child <file> --observations-out <obs.json> --output-dir <dir>
        [--config <AuditConfig JSON>] [--quirks-fixed Q-SPATIAL-8,...] [--meta-out <meta.json>]

It writes raw observations (``observations.py``), never a report: the parent computes the report from them
(``verdict.py``). Exit code and stderr follow the authors' ``audit_single.py``: a SyntaxError escapes (exit 1, no
file); errors inside scenes are reported on stderr, salvaged, and the file is still written (exit 0);
SystemExit/KeyboardInterrupt are not caught.
"""

from __future__ import annotations

import argparse
import ast
import json
import logging
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

from prism_fast.audit.config import AuditConfig
from prism_fast.audit.observations import encode_scenes
from prism_fast.profile import Profile, QUIRK_IDS


def _profile_from(fixed: str) -> Profile:
    ids = frozenset(q for q in fixed.split(",") if q)
    unknown = sorted(ids - set(QUIRK_IDS))
    if unknown:
        raise KeyError(f"unknown quirk ids {unknown}")
    if not ids:
        return Profile("reference", ids)
    return Profile("improved" if ids == frozenset(QUIRK_IDS) else "custom", ids)


_SETUP_DONE: set = set()


def _setup_process(profile: Profile):
    """§2.1: Agg backend, manim logger at ERROR, warnings silenced, shims (Q-SPATIAL-3).

    Idempotent per profile (a prefork zygote has already done it before forking the child)."""
    if profile.fixed in _SETUP_DONE:
        return
    _SETUP_DONE.add(profile.fixed)
    import matplotlib

    matplotlib.use("Agg")
    import manim  # noqa: F401

    logging.getLogger("manim").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    if not profile.fixes("Q-SPATIAL-3"):  # reference: install the compatibility shims
        from prism_fast.audit.shims import install_shims

        install_shims()


def run_audit(file_path: str, obs_out: str | None, output_dir: str | None, cfg: AuditConfig,
              profile: Profile, meta: dict, seal: str | None = None) -> dict:
    import manim
    from manim import config

    from prism_fast.audit.hooks import install_fast_path, make_audit_scene
    from prism_fast.audit.inject import inject_names
    from prism_fast.audit.tamper import Guard, scrub_argv

    from prism_fast.execute.observers import write_result as seal_write  # bound before the script can rebind it

    original_scene = manim.Scene
    audit_scene = make_audit_scene(original_scene, cfg, profile)
    guard = Guard(audit_scene)
    tampered: set = set()
    meta["tampered"] = []
    manim.Scene = audit_scene
    config.dry_run = False
    config.format = "png"
    config.verbosity = "ERROR"
    if profile.fixes("Q-SPATIAL-5"):  # improved: step at the -ql rate of the video
        config.frame_rate = 15
    fast = False
    if cfg.fast_paths and not cfg.full_fidelity:
        from prism_fast.execute import fastpaths

        # exact vectorised subpath splits and boundary anchors (execute/fastpaths.py), where the parent asked
        # (its tripwire file in the environment, removed here)
        fast = fastpaths.install_from_env()
    if not cfg.full_fidelity:
        install_fast_path()
        from prism_fast.audit import fastcopy, stepping

        # issue #19: the same states, reached with less work (reports byte-identical; docs/bench_audit.md)
        stepping.install(meta)  # one update for the plays no intermediate frame can change
        # glyph paths shared by copies only with the fast paths' tripwire: any other access to one re-audits the
        # sample without them (fastpaths.guard_glyph_paths)
        try:
            share = fast and fastcopy.may_share_svg_paths(Path(file_path).read_text(encoding="utf-8",
                                                                                    errors="replace"))
        except OSError:
            share = False
        fastcopy.install(meta, share_svg_paths=share)  # Mobject copies without deepcopy's dispatch
        if share:
            fastpaths.guard_glyph_paths(writers=(fastcopy.mobject_deepcopy_sharing_svg_paths.__code__,))
    meta["fast_paths"] = "on" if fast else "off"
    meta["mode"] = "full" if cfg.full_fidelity else "fast"
    tmp_root = os.environ.get("PRISM_AUDIT_TMP_ROOT")  # the parent's choice, in the sample's scratch
    if not tmp_root:  # run by hand: this process's private run root, never a fixed shared name
        from prism_fast.execute.sandbox import run_root

        tmp_root = str(run_root())
    os.makedirs(tmp_root, exist_ok=True)
    for var in ("TMPDIR", "TEMP", "TMP"):
        os.environ.setdefault(var, tmp_root)
    media = tempfile.TemporaryDirectory(prefix="audit_media_", dir=tmp_root)
    config.media_dir = media.name  # per-sample media, Tex and text caches
    from prism_fast.execute import texcache

    texcache.install_from_env()  # the render's verified TeX cache, when the parent gave it (runner.tex_cache_env)

    source = Path(file_path).read_text(encoding="utf-8")
    tree = inject_names(ast.parse(source))  # a SyntaxError escapes here: exit 1, no JSON
    if profile.fixes("Q-SPATIAL-4"):  # improved: the namespace the CLI would give the module
        ctx = dict(manim.__dict__)
        ctx.update({"__name__": Path(file_path).stem, "__file__": str(Path(file_path).resolve())})
    else:  # reference: manim.__dict__ overwrites __name__ and __file__
        ctx = {"__name__": "__main__", "__file__": str(file_path)}
        ctx.update(manim.__dict__)
    records: dict = {}  # scene name -> observations record (a later scene of the same name replaces it in place)
    errors: list = meta.setdefault("errors", [])
    record_of = audit_scene.hooks.record_of
    original_cwd = os.getcwd()
    current = None

    def keep(inst):
        rec = record_of(inst)
        if rec is not None:
            records[rec[0]] = rec

    def salvage(inst, label):
        if audit_scene.hooks.audit_log.fget(inst) or audit_scene.hooks.segment_snapshots.fget(inst):
            try:
                audit_scene.hooks.process_final_results(inst)
                keep(inst)
            except Exception as exc:
                sys.stderr.write(f"{label}: {exc}\n")

    try:
        if output_dir:
            os.makedirs(output_dir, exist_ok=True)
            os.chdir(output_dir)
        scrub_argv()  # the report and meta paths are not the script's business
        texcache.arm()  # the TeX cache's gate compares against the process as the script gets it (texcache.py)
        exec(compile(tree, filename=str(file_path), mode="exec"), ctx)
        names = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
        if profile.fixes("Q-SPATIAL-2"):  # improved: only the scene the render would produce
            from prism_fast.execute.scene_select import select_scene  # the render's own rule (Q-EXEC-1 aware)

            chosen = select_scene(source, profile).name
            meta["audited_scene"] = chosen
            names = [n for n in names if n == chosen]
        for name in names:
            cls = ctx.get(name)
            if not (isinstance(cls, type) and issubclass(cls, original_scene)):
                continue
            if profile.fixes("Q-SPATIAL-1"):  # improved: every Scene family is hooked, 3D is refused
                from manim import ThreeDScene

                if issubclass(cls, ThreeDScene):
                    msg = f"unsupported scene type: {name}"
                    sys.stderr.write(f"Audit Scene Error [{name}]: {msg}\n")
                    errors.append({"scene": name, "where": "render", "error": msg})
                    continue
                if not issubclass(cls, audit_scene.hooks):
                    cls = type(cls.__name__, (audit_scene.hooks, cls), {"__module__": cls.__module__})
            saved = (config.save_last_frame, config.write_to_movie)
            inst = cls()
            current = inst
            try:
                inst.render()
            except Exception as exc:
                sys.stderr.write(f"Audit Scene Error [{name}]: {exc}\n")
                errors.append({"scene": name, "where": "render", "error": f"{type(exc).__name__}: {exc}"})
                tampered.update(guard.verify(inst))
                salvage(inst, f"Audit Salvage Error [{name}]")
                continue
            finally:
                if profile.fixes("Q-SPATIAL-6"):  # improved: no config leak between scenes
                    config.save_last_frame, config.write_to_movie = saved
            tampered.update(guard.verify(inst))
            keep(inst)
    except Exception as exc:
        sys.stderr.write(f"Audit Runtime Error: {exc}\n")
        errors.append({"scene": None, "where": "runtime", "error": f"{type(exc).__name__}: {exc}"})
        if current is not None:
            salvage(current, "Audit Runtime Salvage Error")
    finally:
        media.cleanup()
        if output_dir:
            os.chdir(original_cwd)

    tampered.update(guard.verify())
    meta["tampered"] = sorted(tampered)
    doc = encode_scenes(list(records.values()))
    doc["tampered"] = meta["tampered"]  # (sealed with the observations: a later rewrite of the meta cannot drop it)
    if obs_out and seal:  # sealed: the parent takes no file the script could have written in its place
        seal_write({"out_file": obs_out, "seal": seal}, doc)
    elif obs_out:  # run by hand (tools, tests): plain JSON
        Path(obs_out).write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return doc


def _take_seal(path: str | None) -> str | None:
    """The observations' HMAC key, from the file the parent left in the scratch: read and removed before the
    script runs (never in the environment or argv, which /proc shows the script)."""
    if not path:
        return None
    try:
        with open(path, encoding="ascii") as fh:
            key = fh.read().strip()
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    bytes.fromhex(key)  # a malformed key is the parent's bug: fail loudly
    return key


def fork_entry(quirks: str):
    """The audit child as an entry of the execution service's fork server (``execute/worker.py``): loads
    manim, the audit modules and the profile's process set-up (shims) once; the returned ``main`` runs in
    each forked, sandboxed child with ``sys.argv = [python, -m, prism_fast.audit.child, ARGS...]``."""
    from prism_fast.audit import atoms, hooks, inject, observations, segments, stepping, fastcopy  # noqa: F401

    _setup_process(_profile_from(quirks))
    prefix = ["-m", "prism_fast.audit.child"]

    def forked_main() -> None:
        args = sys.argv[1:]
        if args[:2] != prefix:
            raise SystemExit(f"audit fork server: expected {' '.join(prefix)} ..., got {args[:2]}")
        tempfile.tempdir = None  # re-read TMPDIR (the sample's own)
        main(args[2:])

    return forked_main


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="prism_fast.audit.child")
    parser.add_argument("file_path")
    parser.add_argument("--observations-out", default=None)
    parser.add_argument("--output-dir", default=None)
    parser.add_argument("--config", default="{}", help="AuditConfig fields as JSON")
    parser.add_argument("--quirks-fixed", default="", help="comma-separated fixed quirk ids")
    parser.add_argument("--meta-out", default=None)
    parser.add_argument("--seal-file", default=None, help="the observations' HMAC key (read and removed)")
    args = parser.parse_args(argv)
    seal = _take_seal(args.seal_file)
    cfg = AuditConfig.from_dict(json.loads(args.config))
    profile = _profile_from(args.quirks_fixed)
    t0 = time.perf_counter()
    _setup_process(profile)
    meta: dict = {"profile": profile.describe(), "setup_sec": round(time.perf_counter() - t0, 3)}
    meta_out = Path(args.meta_out).resolve() if args.meta_out else None
    try:
        run_audit(args.file_path, args.observations_out, args.output_dir, cfg, profile, meta, seal)
    finally:
        if meta_out is not None:
            from prism_fast.audit.tamper import COMPLETION_KEY

            meta["audit_sec"] = round(time.perf_counter() - t0, 3)
            meta[COMPLETION_KEY] = True
            meta_out.write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
    if seal:
        _exit_now()


def _exit_now() -> None:
    """After the sealed observations: end the process before any more of the script's code can run (its ``atexit``
    handlers, its threads: either could rewrite the file with a key it found in memory)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(0)


if __name__ == "__main__":
    main()
