"""The run manifest of every command that owns a run directory (``eval``, ``generate``): one writer.

``<dir>/run.json`` is the newest invocation's manifest; ``<dir>/run_history/run-<ns>.json`` keeps every
invocation's (a resumed run appends one). Both are written atomically (:mod:`prism_fast.fsutil`). A manifest
starts with what identifies the code and the invocation (package version, git commit, start time, profile,
model); the command adds its own fields. :func:`finish` stamps ``finished_at`` into both files when the command
ends normally.
"""

from __future__ import annotations

import datetime as _dt
import json
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
