"""The run manifest of every command that owns a run directory (``eval``, ``generate``): one writer.

``<dir>/run.json`` is the newest invocation's manifest; ``<dir>/run_history/run-<ns>.json`` keeps every
invocation's (a resumed run appends one). Both are written atomically (:mod:`prism_fast.fsutil`). A manifest
starts with what identifies the code and the invocation (package version, git commit, start time, profile,
model); the command adds its own fields (:func:`write_manifest` for ``eval``: host, environment, settings
fingerprints, the resolved config; :func:`write_generate_manifest` for ``generate``: endpoint, retry policy).
:func:`finish` stamps ``finished_at`` into both files when the command ends normally.
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import sys
import time
from pathlib import Path

from prism_fast.fsutil import atomic_write_text

_HISTORY = "_history_path"  # where this invocation's history copy is (kept out of the files)


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat()


def git_commit() -> str | None:
    from prism_fast.buildinfo import git_commit as commit

    return commit()  # env / baked file (the node image) / git rev-parse beside a checkout


def header(profile, model_name: str) -> dict:
    """The fields every manifest starts with."""
    from prism_fast import __version__

    return {"prism_fast_version": __version__, "git_commit": git_commit(), "started_at": now_iso(),
            **profile.describe(), "model": model_name}


def _text(manifest: dict) -> str:
    return json.dumps({k: v for k, v in manifest.items() if k != _HISTORY}, ensure_ascii=False, indent=2,
                      default=str)


def write(run_dir: Path, manifest: dict) -> dict:
    """Write ``manifest`` as ``run.json`` and as a new ``run_history`` entry; returns it (with the history path
    remembered for :func:`finish`)."""
    history = Path(run_dir) / "run_history"
    history.mkdir(parents=True, exist_ok=True)
    path = history / f"run-{time.time_ns()}.json"
    text = _text(manifest)
    atomic_write_text(path, text)
    atomic_write_text(Path(run_dir) / "run.json", text)
    manifest[_HISTORY] = str(path)
    return manifest


def finish(manifest: dict, run_dir: Path) -> None:
    """The command ended normally: ``finished_at`` in run.json and in this invocation's history copy."""
    manifest["finished_at"] = now_iso()
    text = _text(manifest)
    atomic_write_text(Path(run_dir) / "run.json", text)
    if manifest.get(_HISTORY):
        atomic_write_text(Path(manifest[_HISTORY]), text)


def write_manifest(opts, run_dir: Path, n_tasks: int, fps=None) -> dict:
    """``eval``'s manifest, written before any stage runs (``finished_at`` stays null until :func:`finish`)."""
    from prism_fast.execute.fingerprint import env_fingerprint

    return write(run_dir, {
        **header(opts.profile, opts.model_name),
        "finished_at": None,
        "host": platform.node(),
        "python": sys.version.split()[0],
        "languages": opts.languages,
        "tasks": n_tasks,
        "environment": env_fingerprint(opts.render.manim_bin),
        # the settings every row of this run is (re)made with: stage -> lang -> settings_sha256 (rows/settings)
        "settings_sha256": fps.settings_sha if fps is not None else None,
        "config": opts.config_snapshot,
    })


def write_generate_manifest(opts, out_dir: Path, n_tasks: int, timeout_s: float) -> dict:
    """``generate``'s manifest in ``<run_dir>/generate/``."""
    ep = opts.endpoint
    return write(out_dir, {
        **header(opts.profile, opts.model_name), "tasks": n_tasks, "rounds": opts.rounds,
        "endpoint": {"base_url": ep.base_url, "model_id": ep.model_id, "api_key_env": ep.api_key_env,
                     "thinking": ep.thinking, "thinking_style": ep.thinking_style, "max_tokens": ep.max_tokens,
                     "temperature": ep.temperature},
        "timeout_s_applied": timeout_s, "timeout_s_configured": opts.timeout_s,
        "retry": {"max_attempts": opts.retry.max_attempts, "base_s": opts.retry.base_s, "factor": opts.retry.factor,
                  "max_s": opts.retry.max_s},
        "config": opts.config_snapshot,  # names the key's environment variable, never its value
    })
