"""The run manifests: ``run.json`` (and a copy per invocation in ``run_history/``) of ``eval`` and of
``generate``: versions, host, profile, settings fingerprints and the resolved config."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
import time
from pathlib import Path


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat()


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_manifest(opts, run_dir: Path, n_tasks: int, fps=None) -> dict:
    """``eval``'s manifest, written before any stage runs (``finished_at`` stays null until the summary)."""
    from prism_fast import __version__
    from prism_fast.buildinfo import git_commit
    from prism_fast.execute.fingerprint import env_fingerprint

    manifest = {
        "prism_fast_version": __version__,
        "git_commit": git_commit(),  # env / baked file (the node image) / git rev-parse beside a checkout
        "started_at": _now(),
        "finished_at": None,  # set when the run ends with its summary (finish_manifest)
        "host": platform.node(),
        "python": sys.version.split()[0],
        **opts.profile.describe(),
        "model": opts.model_name,
        "languages": opts.languages,
        "tasks": n_tasks,
        "environment": env_fingerprint(opts.render.manim_bin),
        # the settings every row of this run is (re)made with: stage -> lang -> settings_sha256 (rows/settings)
        "settings_sha256": fps.settings_sha if fps is not None else None,
        "config": opts.config_snapshot,
    }
    history = run_dir / "run_history"
    history.mkdir(exist_ok=True)
    text = json.dumps(manifest, ensure_ascii=False, indent=2, default=str)
    path = history / f"run-{time.time_ns()}.json"
    path.write_text(text, encoding="utf-8")
    (run_dir / "run.json").write_text(text, encoding="utf-8")
    manifest["_history_path"] = str(path)
    return manifest


def finish_manifest(manifest: dict, run_dir: Path) -> None:
    """The run ended with its summary: ``finished_at`` in run.json and its history copy."""
    path = manifest.pop("_history_path", None)
    manifest["finished_at"] = _now()
    text = json.dumps(manifest, ensure_ascii=False, indent=2, default=str)
    (run_dir / "run.json").write_text(text, encoding="utf-8")
    if path:
        Path(path).write_text(text, encoding="utf-8")


def write_generate_manifest(opts, out_dir: Path, n_tasks: int, timeout_s: float) -> None:
    """``generate``'s manifest in ``<run_dir>/generate/``."""
    from prism_fast import __version__
    from prism_fast.buildinfo import git_commit

    ep = opts.endpoint
    manifest = {
        "prism_fast_version": __version__, "git_commit": git_commit(), "started_at": _now(),
        **opts.profile.describe(), "model": opts.model_name, "tasks": n_tasks, "rounds": opts.rounds,
        "endpoint": {"base_url": ep.base_url, "model_id": ep.model_id, "api_key_env": ep.api_key_env,
                     "thinking": ep.thinking, "thinking_style": ep.thinking_style, "max_tokens": ep.max_tokens,
                     "temperature": ep.temperature},
        "timeout_s_applied": timeout_s, "timeout_s_configured": opts.timeout_s,
        "retry": {"max_attempts": opts.retry.max_attempts, "base_s": opts.retry.base_s, "factor": opts.retry.factor,
                  "max_s": opts.retry.max_s},
        "config": opts.config_snapshot,  # names the key's environment variable, never its value
    }
    history = out_dir / "run_history"
    history.mkdir(parents=True, exist_ok=True)
    text = json.dumps(manifest, ensure_ascii=False, indent=2, default=str)
    (history / f"run-{time.time_ns()}.json").write_text(text, encoding="utf-8")
    write_atomic(out_dir / "run.json", text)
