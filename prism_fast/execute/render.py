"""Render one generated script with the authors' semantics (spec execution.md §2), inside the sandbox.

Reference behaviour reproduced here (``scripts/render_directory.py``):

* scene = first regex match (Q-EXEC-1), else error ``Scene class not found`` with runtime 0;
* ``<manim> -ql <script> <Scene> --media_dir <fresh tmp>/media -o <id>.mp4 --progress_bar none``;
* success = exit 0 and an mp4 under the media dir (``<id>.mp4`` first, else the first ``*.mp4``, never in
  ``partial_movie_files``); the mp4 is moved to ``<out_dir>/videos/<id>.mp4``;
* errors: non-zero exit -> ``(stderr or stdout or "render failed").strip()[-4000:]``; exit 0 without mp4 ->
  ``render succeeded but final mp4 not found``; timeout -> ``timeout after {T}s: render timed out after {T}s``
  (Q-EXEC-2; improved appends the decoded partial stderr instead);
* ``runtime_sec`` = wall time of the subprocess; an existing ``<id>.mp4`` is a skipped success (Q-FUNNEL-2).

Ours, in both profiles: a success needs a real video (``videocheck.py``: H.264, every frame decodes, as many frames
as its duration says and the render wrote), else the row is an ``invalid_video`` failure;
a trusted existing video (Q-FUNNEL-2) and a render cache hit get the same check (an invalid one is rendered again).

Deliberate, documented differences that do not change the video or the success verdict:

* The script is copied into its own temp directory (``render_<id[:32]>_*``), which is also the cwd, so it
  cannot overwrite results or other samples' files. The toolkit runs scripts in place with the toolkit's
  repo root as cwd; scripts that read relative asset paths from that root, import sibling scripts, or print
  ``__name__`` / ``__file__`` behave differently.
* A folder-wide ``manim.cfg`` in the cwd sets only ``notify_outdated_version = False`` (no PyPI check;
  manim documents that the check does not affect outputs).
* stdin is ``/dev/null``: when manim would prompt for a scene choice it reads EOF and exits 1.
* Output text is decoded as UTF-8 with replacement (the toolkit's strict locale decoding would crash the
  whole run on invalid bytes).
* The environment is an allow-list (sandbox.ENV_ALLOW); ``HOME`` is the sample directory, so a user-wide
  ``~/.config/manim/manim.cfg`` is never read.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

from prism_fast.execute import fastpaths, sandbox, texcache, textboxes, videocheck
from prism_fast.execute.cache import RenderCache, render_cache_key
from prism_fast.execute.fingerprint import fingerprint_hash, interpreter_of
from prism_fast.execute.observers import Observer, child_env, collect_results
from prism_fast.execute.scene_select import select_scene
from prism_fast.profile import REFERENCE, Profile

log = logging.getLogger(__name__)

# Closed set of row statuses and error kinds of this stage.
STATUSES = ("ok", "skipped", "failed", "timeout")
ERROR_KINDS = ("scene_not_found", "exit_nonzero", "killed_by_signal", "no_mp4", "timeout", "sandbox_error",
               "mp4_copy_failed", "invalid_video")

ERR_SCENE_NOT_FOUND = "Scene class not found"
ERR_NO_MP4 = "render succeeded but final mp4 not found"
ERR_INVALID_VIDEO = "render succeeded but the mp4 is not a valid video"
ERR_FAILED_DEFAULT = "render failed"
ERROR_TAIL_CHARS = 4000  # non-zero exit: last 4000 characters
TIMEOUT_TAIL_CHARS = 3500  # timeout text: last 3500 characters

MANIM_CFG = "[CLI]\nnotify_outdated_version = False\n"
TEX_CACHE_INSIDE = texcache.VIEW_INSIDE  # where a sandboxed script sees the shared TeX cache (read-only)


@dataclass(frozen=True)
class RenderConfig:
    """Everything that decides how one script is rendered. Plain values only."""

    quality_flag: str = "-ql"
    timeout_s: int = 600  # <= 0: no timeout (as in the toolkit)
    manim_bin: str = field(default_factory=lambda: os.environ.get("MANIM_BIN", "manim"))
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    # RLIMIT_CPU per process = this × timeout_s (+10 s) when limits.cpu_seconds is None and a timeout is set.
    # Large enough that it never fires before the wall-clock timeout unless several cores spin.
    cpu_seconds_per_wall_second: float = 4.0
    output_head_bytes: int = 64 * 1024
    output_tail_bytes: int = 256 * 1024
    stderr_tail_chars: int = 2000  # the `stderr_tail` field of our rows
    tmp_root: str | None = None  # default: this process's private run root, <temp>/prism_fast-<uid>/run_* (sandbox.py)
    isolate_network: bool = True
    readonly_paths: tuple[str, ...] = ()  # extra paths the script must not write (inputs, caches, project)
    protect_tmp_root: bool = True  # other samples' temp dirs are read-only for this sample
    disable_version_check: bool = True
    keep_temp: bool = False  # debugging only: leave the temp dir behind
    cache_dir: str | None = None  # content-addressed render cache (cache.py); None = off
    # shared, verified TeX SVG cache (texcache.py; prefork backend only); None = off. Speeds renders up without
    # changing videos or output text; rows record the hits (render time is then not the uncached time).
    tex_cache_dir: str | None = None
    # With the TeX cache: compiles of manim's default template start from a self-checked LaTeX format of its
    # preamble (texformat.py): the same SVG bytes, ~0.05-0.07 CPU-s less per compile. Rows: ``tex_format``.
    tex_format: bool = True
    # (file, sha256, render environment fingerprint) of a format the pipeline's driver built and checked while Ray
    # started; taken only by a worker whose own fingerprint (manim, TeX, fonts) is the same. None, or another
    # environment: each worker builds and checks its own at its first sample (texcache.prepare_cache_dir)
    tex_format_prebuilt: tuple[str, str, str] | None = None
    # The format is wanted (``tex_format``) but not built yet: compile in full now, neither build nor use one, and
    # say so in the row (``tex_format=not_ready``). Set only by the pipeline's head start while the driver builds
    # the format (pipeline/headstart.py); same SVG bytes, videos and results.
    tex_format_deferred: bool = False
    # Manim's per-play scene hashing (``--disable_caching`` when False). The hash only names partial movie
    # files (a repeated hash would reuse one; within one fresh run hashes do not repeat). Skipping it saves
    # ~28 % of a render's CPU with byte-identical mp4s and error text (tests/execute/test_play_hashing.py,
    # bench/play_hashing_bench.py). A failure whose error text comes from stdout (empty stderr) is rendered
    # again with hashing, since manim logs "Caching disabled." to stdout. Not reproduced: a script whose
    # hashing itself raises or pushes it past the timeout. True = the authors' exact command.
    play_hashing: bool = False
    # Exact fast paths for three of manim's hottest Python helpers (fastpaths.py: Cairo path building, subpath
    # splits, boundary anchors), installed in the prefork child before the script runs: the same videos, error
    # text and reports (tests/execute/test_fastpaths.py); after an exception through them the sample is rendered
    # again without them. Rows: ``fast_paths`` (on/off/fallback).
    fast_paths: bool = True
    # With the fast paths: copies of Tex/Text glyphs share their parsed SVG path (fastpaths.install_copier) where
    # the script cannot reach it (the caller's decision per script) and a guard trips the wire at any other access.
    # On by default since the sixth review: what is left lets a script see the sharing, not change another row or
    # a script that does not look for it (docs/design.md "Glyph paths shared by copies").
    share_glyph_paths: bool = True
    # Sandbox level (sandbox.py/jail.py): "auto" = namespaces as root, bubblewrap without root, refused where
    # neither works; "unsafe" = run without the view (explicit opt-in; rows record `sandbox: unsafe`).
    sandbox: str = "auto"
    scratch_mb: int = 2048  # size cap of the sample's scratch directory (a tmpfs as root)
    # Record the pixel boxes of every text mobject in every written frame (execute/textboxes.py; prefork backend
    # only): a sidecar <id>.textboxes.json next to the video, PADVC's scene text masks. Never changes the video.
    text_boxes: bool = True
    # Render every successful script a second time and record both videos' sha256 (execute/determinism.py
    # exec_fields, called by the render worker; rows: determinism_sha256, determinism_equal). Not a render setting:
    # it changes neither render's row or video (not in render_settings, the cache key).
    determinism_check: bool = False


def render_settings(cfg: RenderConfig) -> dict:
    """The settings that can change a render's outcome (part of the cache key)."""
    return {
        "quality_flag": cfg.quality_flag, "timeout_s": cfg.timeout_s, "limits": asdict(cfg.limits),
        "cpu_seconds_per_wall_second": cfg.cpu_seconds_per_wall_second,
        "output_head_bytes": cfg.output_head_bytes, "output_tail_bytes": cfg.output_tail_bytes,
        "isolate_network": cfg.isolate_network, "disable_version_check": cfg.disable_version_check,
        "play_hashing": cfg.play_hashing, "sandbox": cfg.sandbox, "scratch_mb": cfg.scratch_mb,
        "fast_paths": cfg.fast_paths, "share_glyph_paths": cfg.share_glyph_paths,
    }


def _timeout_label(timeout_s) -> str:
    """The toolkit formats the argparse int: 600 -> "600"."""
    if isinstance(timeout_s, float) and timeout_s.is_integer():
        return str(int(timeout_s))
    return str(timeout_s)


def find_final_mp4(media_dir: Path, output_name: str) -> Path | None:
    """The toolkit's rule: sorted exact-name matches first, else the first sorted ``*.mp4``; never a file with
    a ``partial_movie_files`` path component."""
    exact = sorted(p for p in media_dir.rglob(output_name) if "partial_movie_files" not in p.parts)
    if exact:
        return exact[0]
    others = sorted(p for p in media_dir.rglob("*.mp4") if "partial_movie_files" not in p.parts)
    return others[0] if others else None


def manim_command(manim_bin: str, script: Path, scene: str, media_dir: Path, sample_id: str,
                  quality_flag: str = "-ql", play_hashing: bool = True) -> list[str]:
    """The authors' command line; ``play_hashing=False`` appends ``--disable_caching``."""
    cmd = [manim_bin, quality_flag, str(script), scene, "--media_dir", str(media_dir), "-o", f"{sample_id}.mp4",
           "--progress_bar", "none"]
    return cmd if play_hashing else [*cmd, "--disable_caching"]


def resolve_bin(manim_bin: str) -> str:
    """PATH lookup first; a bare ``manim`` not on PATH (a venv used without activating it, as ``make test``
    does) resolves to the manim installed beside this interpreter."""
    found = shutil.which(manim_bin)
    if found:
        return found
    beside = Path(sys.executable).with_name(manim_bin)
    if os.sep not in manim_bin and beside.exists():
        return str(beside)
    return manim_bin


def _tmp_root(cfg: RenderConfig) -> Path:
    return sandbox.scratch_root(cfg.tmp_root)  # default: this process's private run root (sandbox.run_root)


def _base_row(sample_id: str, file_path: str | None, profile: Profile, manim_bin: str,
              play_hashing: bool = True) -> dict:
    return {
        # the toolkit's fields, in its order
        "id": sample_id, "file_path": file_path, "success": False, "skipped": False, "video_path": None,
        "runtime_sec": 0.0, "error": None,
        # ours
        "status": "failed", "error_kind": None, "error_detail": None,
        "scene_class": None, "scene_select_method": None, "scene_select_detail": None,
        "wall_s": 0.0, "cpu_s": 0.0, "peak_rss_mb": 0.0, "exit_status": None, "signal": None,
        "timed_out": False, "stderr_tail": None, "stdout_bytes": 0, "stderr_bytes": 0, "output_truncated": False,
        "net_isolated": False, "fs_readonly": False, "pids_limit": "none", "caps_dropped": False,
        "sandbox": None, "sandbox_protections": None,
        "backend": None, "cache_hit": False, "cache_key": None, "profile": profile.name,
        "tex_cache": "off", "tex_cache_hits": 0, "tex_cache_published": 0, "tex_cache_reasons": None,
        "tex_format": "off", "tex_format_compiles": 0, "tex_format_fallbacks": 0,
        "play_hashing": play_hashing, "fast_paths": "off",
        "env_fingerprint": fingerprint_hash(manim_bin),
        "video_check": None, "video_frames": None,  # the real-video check (videocheck.py); None: no mp4 checked
    }


Runner = Callable[[sandbox.SandboxSpec], sandbox.SandboxResult]


def executed(row: dict) -> bool:
    """Whether manim ran for this exec row (not a cache hit, not a trusted existing video, a scene was found)."""
    return not row.get("cache_hit") and not row.get("skipped") and row.get("scene_class") is not None


def backend_name(runner: Runner | None) -> str:
    """The backend a runner renders with: ``cli`` (none given), ``prefork`` (a ``PreforkWorker``'s ``run``), else
    the runner's ``backend_name`` or ``custom``."""
    if runner is None:
        return "cli"
    owner = getattr(runner, "__self__", runner)  # a bound method: PreforkWorker.run
    return getattr(owner, "backend_name", "custom")


def render_one(sample_id: str, script_text: str, out_dir: str | os.PathLike, cfg: RenderConfig = RenderConfig(),
               profile: Profile = REFERENCE, file_path: str | None = None, runner: Runner | None = None,
               observers: Sequence[Observer] = (), share_svg_paths: bool = False) -> dict:
    """Render one script and return its row. Never raises for anything the script does.

    ``share_svg_paths``: with the fast paths on, copies of glyphs share their parsed SVG path
    (``fastpaths.install_copier``); only for a script whose text cannot reach that path -- the caller's decision
    (audit/fastcopy.py ``may_share_svg_paths``). Same video, rows and error text either way.

    ``observers`` (``observers.py``; prefork backend only, the caller's choice): trusted observers installed in
    the render child; after the render each one's ``result`` holds what its child half left (``None`` when the
    render did not execute: a skipped sample, a cache hit, no scene). A failed observed render is neither
    cached nor re-rendered with play hashing (its caller renders it again without observers).

    ``out_dir/videos/<id>.mp4`` receives the video. ``file_path`` is recorded as the toolkit's ``file_path``
    (the input script's path); default ``<id>.py``. ``runner`` runs the manim command: the default execs it
    in the sandbox (``sandbox.run_sandboxed``, backend "cli"); a ``worker.PreforkWorker``'s ``run`` forks it
    from a warm manim process (backend "prefork", see :func:`prefork_worker`).
    """
    observers = tuple(observers)
    for observer in observers:
        observer.result = None
    manim_bin = resolve_bin(cfg.manim_bin)
    row = _base_row(sample_id, file_path if file_path is not None else f"{sample_id}.py", profile, manim_bin,
                    cfg.play_hashing)
    row["backend"] = backend_name(runner)
    videos = Path(out_dir) / "videos"
    dest = videos / f"{sample_id}.mp4"

    if not profile.fixes("Q-FUNNEL-2") and dest.exists():
        # Q-FUNNEL-2 reference: an existing video is trusted as a success without rendering -- if it is a real
        # video (else it is removed and the sample rendered, as a fresh run would)
        check = _check_video(dest, cfg)
        if check.ok:
            row.update(success=True, skipped=True, video_path=str(dest), status="skipped", **check.row_fields())
            return row
        log.warning("render %s: the existing video is not a valid video (%s); rendering it", sample_id, check.detail)
        _remove_video(dest)

    choice = select_scene(script_text, profile)  # Q-EXEC-1 is decided inside select_scene
    row.update(scene_class=choice.name, scene_select_method=choice.method, scene_select_detail=choice.detail)
    if choice.name is None:
        row.update(error=ERR_SCENE_NOT_FOUND, error_kind="scene_not_found", error_detail=ERR_SCENE_NOT_FOUND)
        return row

    videos.mkdir(parents=True, exist_ok=True)
    cache = key = None
    if cfg.cache_dir:
        cache = RenderCache(cfg.cache_dir)
        key = render_cache_key(
            script_text=script_text, sample_id=sample_id, scene=choice.name, render_settings=render_settings(cfg),
            exec_switches={q: profile.fixes(q) for q in ("Q-EXEC-1", "Q-EXEC-2")},
            env_fingerprint=row["env_fingerprint"])
        hit = _verified_hit(cache.get(key, dest), dest, cfg, sample_id)
        if hit is not None and hit.get("success") and _wants_text_boxes(cfg, row["backend"]) and \
                not textboxes.cache_restore(cfg.cache_dir, key, dest):
            hit = None  # an entry without its text boxes (older, or another backend): render again to get them
        if hit is not None:
            hit.update(file_path=row["file_path"], profile=profile.name)
            return hit

    tmp_root = _tmp_root(cfg)
    with sandbox.scratch_dir(tmp_root, f"render_{sample_id[:32]}_", cfg.scratch_mb, keep=cfg.keep_temp) as work:
        use_tex_cache = bool(cfg.tex_cache_dir) and row["backend"] == "prefork"
        if cfg.tex_cache_dir and not use_tex_cache:
            row["tex_cache"] = "unsupported_backend"
        gate = texcache.script_reasons(script_text) if use_tex_cache else []
        if gate:  # the script can reach what its own compile reads: no hit, no format (texcache.py "The gate")
            use_tex_cache = False
            row.update(tex_cache="declined", tex_format="declined", tex_cache_reasons=json.dumps(gate))
            log.warning("render %s: TeX cache and LaTeX format declined (%s)", sample_id, ", ".join(gate[:4]))
        row = _render_in(work, tmp_root, sample_id, script_text, choice.name, dest, cfg, profile, manim_bin,
                         row, Path(out_dir), runner or sandbox.run_sandboxed, use_tex_cache, observers,
                         share_svg_paths)
        if use_tex_cache:
            _harvest_tex(work, cfg, row, Path(out_dir))
    if row.pop("_rerender_plain_paths", False):
        # an exception passed through a fast path (first: the run again also settles a stdout-only failure's
        # hashing below, in its own render_one)
        row.pop("_rerender_hashed", None)
        log.warning("render %s: an exception passed through a fast path (execute/fastpaths.py); rendered again "
                    "without them (row: fast_paths=fallback)", sample_id)
        # the first run's video must not stand for the second's (Q-FUNNEL-2 trusts an existing video)
        dest.unlink(missing_ok=True)
        textboxes.sidecar_path(dest).unlink(missing_ok=True)
        again = render_one(sample_id, script_text, out_dir, replace(cfg, fast_paths=False, cache_dir=None), profile,
                           file_path, runner, observers)
        again.update(fast_paths="fallback", manim_executions=1 + (again.get("manim_executions") or 1))
        row = again
    elif row.pop("_rerender_hashed", False):  # a failure whose error text is stdout: see _render_in
        row = render_one(sample_id, script_text, out_dir, replace(cfg, play_hashing=True, cache_dir=None), profile,
                         file_path, runner, share_svg_paths=share_svg_paths)
        row["manim_executions"] = 1 + (row.get("manim_executions") or 1)
    if cache is not None and (not observers or row["success"]):  # a failed observed run is not cached
        if cache.put(key, row) and row["success"]:
            try:
                textboxes.cache_store(cfg.cache_dir, key, dest)
            except OSError as exc:
                log.warning("render cache: text boxes of %s not stored (%s)", sample_id, exc)
        row["cache_key"] = key
    return row


def _render_in(work: Path, tmp_root: Path, sample_id: str, script_text: str, scene: str, dest: Path,
               cfg: RenderConfig, profile: Profile, manim_bin: str, row: dict, out_dir: Path, runner: Runner,
               use_tex_cache: bool = False, observers: tuple = (), share_svg_paths: bool = False) -> dict:
    script = work / f"{sample_id}.py"
    script.write_text(script_text, encoding="utf-8")
    media_dir = work / "media"
    media_dir.mkdir()
    if cfg.disable_version_check:
        (work / "manim.cfg").write_text(MANIM_CFG, encoding="utf-8")

    limits = cfg.limits
    if limits.cpu_seconds is None and cfg.timeout_s and cfg.timeout_s > 0:
        limits = replace(limits, cpu_seconds=int(cfg.timeout_s * cfg.cpu_seconds_per_wall_second) + 10)
    # Results, caches and other samples' temp dirs are read-only for the script (when a mount namespace exists).
    readonly = (str(out_dir), *cfg.readonly_paths, *((str(tmp_root),) if cfg.protect_tmp_root else ()),
                *((cfg.cache_dir,) if cfg.cache_dir and Path(cfg.cache_dir).exists() else ()))
    env_extra = None
    visible_at: tuple[tuple[str, str], ...] = ()
    if use_tex_cache:
        pre = cfg.tex_format_prebuilt
        tex_root = texcache.prepare_cache_dir(cfg.tex_cache_dir,
                                              tex_format=cfg.tex_format and not cfg.tex_format_deferred,
                                              prebuilt=pre[:2] if pre and pre[2] == row["env_fingerprint"] else None)
        readonly = (*readonly, str(tex_root))
        seen_as = str(tex_root)
        if sandbox.effective_level(cfg.sandbox) in ("namespaces", "bwrap"):
            # the one cache the script reads: read-only, verified entries, shown outside any runs_root path
            seen_as = TEX_CACHE_INSIDE
            visible_at = ((str(tex_root), seen_as),)
        # the format only where our wrapper runs in the sample's process and the view is read-only for scripts
        env_extra, row["tex_format"] = texcache.sample_env(
            tex_root, seen_as, work / texcache.LOG_NAME, cfg.tex_format,
            protected=_child_installs(cfg, row["backend"]) and sandbox.read_only_for_script(cfg.sandbox),
            deferred=cfg.tex_format_deferred)
        row["tex_cache"] = "on"
    # text boxes (textboxes.py): only where the recorder is installed (the prefork child), so the script never
    # sees the request; the record leaves the scratch dir through textboxes.collect after the process is gone
    tb_plan = textboxes.plan(work, script_text) if _wants_text_boxes(cfg, row["backend"]) else None
    # render-time observers (observers.py): asked for only where trusted code runs in the child, like text boxes
    observed = observers if _child_installs(cfg, row["backend"]) else ()
    fast = bool(cfg.fast_paths) and _child_installs(cfg, row["backend"])
    # a script that reads the call stack would see a fast path's frame where manim's own is (fastpaths.FRAME_INFO)
    declined = fast and fastpaths.reads_call_stack(script_text)
    if declined:
        log.warning("render %s: the script reads the call stack; rendered without fast paths (row: "
                    "fast_paths=declined)", sample_id)
    fast = fast and not declined
    row["fast_paths"] = "declined" if declined else "on" if fast else "off"
    # the request reaches the child in its environment (removed there before the script runs: fastpaths.py)
    fast_env = {fastpaths.ENV: str(work / fastpaths.MARKER_NAME)} if fast else {}
    if fast and share_svg_paths and not cfg.play_hashing:  # (manim's play hash walks objects by identity)
        fast_env[fastpaths.SHARE_ENV] = "1"
    spec = sandbox.SandboxSpec(
        argv=manim_command(manim_bin, script, scene, media_dir, sample_id, cfg.quality_flag, cfg.play_hashing),
        cwd=str(work),
        env=sandbox.scrub_env(os.environ, home=str(work), extra={
            **(env_extra or {}), **child_env(observed, work, scene),
            **(tb_plan.env if tb_plan is not None else {}),
            **fast_env}),
        timeout_s=cfg.timeout_s if cfg.timeout_s and cfg.timeout_s > 0 else None,
        limits=limits,
        output_head_bytes=cfg.output_head_bytes,
        output_tail_bytes=cfg.output_tail_bytes,
        isolate_network=cfg.isolate_network,
        readonly_paths=readonly,
        interpreters=(interpreter_of(manim_bin),),
        visible_paths=(str(Path(manim_bin).resolve().parent),),
        visible_at=visible_at,
        level=cfg.sandbox,
    )
    res = runner(spec)
    if fast and fastpaths.tripped(work, res.returncode):
        # an exception passed through a fast path: its traceback holds a frame of ours where manim's own would be;
        # render_one renders the sample again without them, so the row (error text included) is manim's own
        row["_rerender_plain_paths"] = True
    collect_results(observed, work)  # only those asked for: no file the script alone could have written
    stderr_text = res.stderr.text()
    stdout_text = res.stdout.text()
    row.update(
        runtime_sec=res.wall_s, wall_s=res.wall_s, cpu_s=res.cpu_s, peak_rss_mb=res.peak_rss_mb,
        exit_status=res.exit_status, signal=res.signal, timed_out=res.timed_out,
        stderr_tail=stderr_text[-cfg.stderr_tail_chars:] if cfg.stderr_tail_chars else "",
        stdout_bytes=res.stdout.total_bytes, stderr_bytes=res.stderr.total_bytes,
        output_truncated=res.stdout.truncated or res.stderr.truncated,
        net_isolated=res.net_isolated, fs_readonly=res.fs_readonly, pids_limit=res.pids_limit,
        caps_dropped=res.caps_dropped, sandbox=res.sandbox, sandbox_protections=",".join(res.protections),
    )
    if res.ran_as:
        row["backend"] = res.ran_as
    if res.launch_error:
        row.update(error=f"render failed: {res.launch_error}", error_kind="sandbox_error",
                   error_detail=res.launch_error)
        return row

    label = _timeout_label(cfg.timeout_s)
    if res.timed_out:
        if profile.fixes("Q-EXEC-2"):  # Q-EXEC-2 improved: keep the decoded partial output
            text = (stderr_text or stdout_text or f"render timed out after {label}s").strip()
        else:  # Q-EXEC-2 reference: POSIX partial output is bytes and is dropped
            text = f"render timed out after {label}s"
        row.update(status="timeout", error=f"timeout after {label}s: {text[-TIMEOUT_TAIL_CHARS:]}",
                   error_kind="timeout", error_detail=f"killed after {res.wall_s:.1f}s wall")
        return row

    if res.returncode != 0:
        if not stderr_text and stdout_text and not cfg.play_hashing and not observers:
            # The error text would come from stdout, which --disable_caching changes (manim logs "Caching
            # disabled." per play there): render_one re-runs the authors' exact command for this row.
            row["_rerender_hashed"] = True
        error = (stderr_text or stdout_text or ERR_FAILED_DEFAULT).strip()[-ERROR_TAIL_CHARS:]
        kind = "killed_by_signal" if res.signal else "exit_nonzero"
        detail = f"signal {res.signal}" if res.signal else f"exit status {res.exit_status}"
        row.update(error=error, error_kind=kind, error_detail=detail)
        return row

    final = find_final_mp4(media_dir, f"{sample_id}.mp4")
    if final is None:
        row.update(error=ERR_NO_MP4, error_kind="no_mp4", error_detail=ERR_NO_MP4)
        return row
    try:
        sandbox.copy_regular_file(final, dest)
    except OSError as exc:
        row.update(error=f"render succeeded but mp4 copy failed: {exc}", error_kind="mp4_copy_failed",
                   error_detail=f"{type(exc).__name__}: {exc}")
        return row
    if res.ran_as not in (None, "prefork"):
        tb_plan = None  # the recorder was not installed (e.g. bubblewrap): the request reached the script's process
    tb_doc = None
    try:
        tb_doc = textboxes.collect(tb_plan, dest, work)
    except OSError as exc:
        log.warning("text boxes of %s not collected (%s)", sample_id, exc)
    # success needs a real video: checked on our copy, with the frame count the render's recorder saw
    check = _check_video(dest, cfg, videocheck.frames_written(tb_doc))
    row.update(check.row_fields())
    if not check.ok:
        row.update(error=f"{ERR_INVALID_VIDEO}: {check.detail}", error_kind="invalid_video", error_detail=check.detail)
        _remove_video(dest)  # a failed row has no video (and Q-FUNNEL-2 must not find this one)
        return row
    row.update(success=True, video_path=str(dest), status="ok")
    return row


def _check_video(video: Path, cfg: RenderConfig, written: int | None = None) -> videocheck.VideoCheck:
    """The real-video check of ``video`` (videocheck.py): H.264 at the stream's own size and rate (a script may set
    ``config.frame_rate`` or the pixel size, as under the toolkit), every frame decoded, as many as its duration
    says and the render wrote."""
    return videocheck.check_video(video, None, written)


def _remove_video(video: Path) -> None:
    """Remove a video that is no success, and its text boxes (they describe its frames)."""
    video.unlink(missing_ok=True)
    textboxes.sidecar_path(video).unlink(missing_ok=True)


def _verified_hit(hit: dict | None, dest: Path, cfg: RenderConfig, sample_id: str) -> dict | None:
    """A render cache hit, unless it is a success whose video fails the real-video check: entries this version
    stored were checked before (``video_check`` ok, in the tagged row, with the video's tagged hash); older ones
    are checked now, and an invalid one is a miss (rendered again; a success then replaces the entry)."""
    if hit is None:
        return None
    for name in ("video_check", "video_frames"):  # (absent in entries stored before the check existed)
        hit.setdefault(name, None)
    if not hit.get("success") or hit["video_check"] == "ok":
        return hit
    check = _check_video(dest, cfg)
    if check.ok:
        return {**hit, **check.row_fields()}
    log.warning("render cache: %s's cached video is not a valid video (%s); rendering it", sample_id, check.detail)
    _remove_video(dest)
    return None


def _child_installs(cfg: RenderConfig, backend: str | None) -> bool:
    """Whether trusted code can be installed in the render child before manim's ``main()``: the prefork child
    only, and not where it hands the sample to bubblewrap (then the script's process is a plain ``manim``)."""
    return backend == "prefork" and sandbox.effective_level(cfg.sandbox) != "bwrap"


def _wants_text_boxes(cfg: RenderConfig, backend: str | None) -> bool:
    """Text boxes are recorded by the prefork child only (:func:`_child_installs`)."""
    return bool(cfg.text_boxes) and _child_installs(cfg, backend)


def _harvest_tex(work: Path, cfg: RenderConfig, row: dict, out_dir: Path) -> None:
    """After the sample's process is gone: count its TeX cache hits and publish the compiles a trusted,
    sandboxed re-compile reproduces byte for byte (texcache.harvest)."""
    tex_root = Path(cfg.tex_cache_dir)

    def make_spec(argv, cwd):
        return sandbox.SandboxSpec(
            argv=argv, cwd=cwd, env=sandbox.scrub_env(os.environ, home=cwd), timeout_s=300, limits=cfg.limits,
            isolate_network=cfg.isolate_network, readonly_paths=(str(out_dir), *cfg.readonly_paths),
            level=cfg.sandbox)

    sink = texcache.own_sink()  # set when this sample's separate audit follows (audit/onepass.py hand-off)
    try:
        stats = texcache.harvest(work, work / "media", tex_root, sandbox.run_sandboxed, make_spec)
    except OSError as exc:  # a full disk or a vanished cache dir must not lose the row
        log.warning("tex cache: harvest failed for %s: %s", row["id"], exc)
        if sink is not None:  # nothing kept for its separate audit either (its row: tex_own=failed)
            texcache.mark_own_failed(sink)
        return
    row.update(tex_cache_hits=stats.hits, tex_cache_published=stats.published,
               tex_format_compiles=stats.format_compiles, tex_format_fallbacks=stats.format_fallbacks)
    if sink is not None:  # this sample's separate audit follows (audit/onepass.py hand-off): its compiles go along
        try:
            texcache.collect_own(work / texcache.LOG_NAME, work / "media" / "Tex", sink)
        except OSError as exc:  # the audit then compiles them itself (its row: tex_own=failed)
            texcache.mark_own_failed(sink)
            log.warning("tex cache: %s's compiles not kept for its audit: %s", row["id"], exc)
    if stats.format_fallbacks:  # never silent: the result is manim's own, but the format's speed-up was lost
        log.warning("render %s: %d TeX compile(s) could not use the LaTeX format; manim compiled them itself "
                    "(row: tex_format_fallbacks)", row["id"], stats.format_fallbacks)
    if stats.declined:  # the sample's gate sent some compiles to manim's own path (texcache.py "The gate")
        row["tex_cache_reasons"] = json.dumps(stats.declined)
        log.warning("render %s: TeX cache declined at run time for some compiles (%s)", row["id"],
                    ", ".join(stats.declined))
    for note in stats.notes:
        log.warning("tex cache: %s (%s)", note, row["id"])


_PRESTARTED: list = []  # prefork servers launched ahead of need (prestart_prefork), not yet handed out
_DISCARD_AT_EXIT = False


def _prefork_args(cfg: RenderConfig, preload: tuple[str, ...]) -> tuple:
    return (os.path.abspath(resolve_bin(cfg.manim_bin)), MANIM_CFG if cfg.disable_version_check else None,
            tuple(preload))


def prestart_prefork(cfg: RenderConfig, preload: tuple[str, ...] = ()) -> bool:
    """Launch the prefork server :func:`prefork_worker` with these arguments would start, now, without waiting for
    its imports (~1.3 s of manim's): the pipeline's driver does this as soon as its settings are known, so the
    head start's server imports manim on the other core while the driver loads the dataset and checks the run
    (pipeline/run.py). :func:`prefork_worker` hands it out only if it was launched with the same arguments and
    the same environment as it would start one now; else it is closed. :func:`discard_prestarted` closes any not
    taken. Returns whether one was launched."""
    from prism_fast.execute.worker import PreforkWorker

    manim_bin, manim_cfg, preload = _prefork_args(cfg, preload)
    worker = PreforkWorker(manim_bin, manim_cfg=manim_cfg, preload=preload)
    try:
        worker.launch()
    except (OSError, RuntimeError, ValueError) as exc:
        log.info("prefork server not started ahead (%s); it starts when needed", exc)
        _drop(worker)
        return False
    global _DISCARD_AT_EXIT
    _PRESTARTED.append(worker)
    if not _DISCARD_AT_EXIT:  # (a run that ends before its head start: the server and its directory go too)
        import atexit

        atexit.register(discard_prestarted)
        _DISCARD_AT_EXIT = True
    return True


def discard_prestarted() -> int:
    """Close the servers :func:`prestart_prefork` launched that no one took; returns how many."""
    n = 0
    while _PRESTARTED:
        _drop(_PRESTARTED.pop())
        n += 1
    return n


def _drop(worker) -> None:
    """End a server no one uses at once (it may still be importing) and remove its directory."""
    worker.close_quietly()  # (kills its process group, keeps the directory)
    worker.close()  # (nothing left to wait for: removes the directory)


def _take_prestarted(args: tuple):
    for k, early in enumerate(_PRESTARTED):
        if (early.manim_bin, early.manim_cfg, early.preload) != args:
            continue
        del _PRESTARTED[k]
        if early.launched_env != early.launch_env() or early.proc is None or early.proc.poll() is not None:
            _drop(early)  # this process's environment changed since (or the server died): start afresh
            return None
        try:
            early.await_ready()
        except RuntimeError:
            return None
        return early
    return None


def prefork_worker(cfg: RenderConfig, preload: tuple[str, ...] = ()):
    """A started ``worker.PreforkWorker`` whose import-time manim configuration matches this config's sample
    directories. Pass its ``run`` as ``render_one(..., runner=worker.run)``; ``close()`` it when done.
    ``preload``: modules of the observers' child halves (observers.py), imported once by the server instead of
    by every child that installs them. A server :func:`prestart_prefork` launched with the same arguments and
    environment is handed out instead of a new one."""
    from prism_fast.execute.worker import PreforkWorker

    args = _prefork_args(cfg, preload)
    early = _take_prestarted(args) if _PRESTARTED else None
    if early is not None:
        return early
    worker = PreforkWorker(args[0], manim_cfg=args[1], preload=args[2])
    worker.start()
    return worker
