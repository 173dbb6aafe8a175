"""Which code is running: version and git commit, also where there is no git checkout (the node image).

The commit comes from, in order: ``PRISM_FAST_GIT_COMMIT`` (the image sets it from its build argument),
``prism_fast/_build_commit.txt`` (written into the installed package at image build time:
``python -m prism_fast.buildinfo --write COMMIT``), ``git rev-parse HEAD`` beside an editable install.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from prism_fast import __version__

BAKED = Path(__file__).with_name("_build_commit.txt")
_SHA = re.compile(r"[0-9a-f]{7,40}")


def _valid(commit: str | None) -> str | None:
    commit = (commit or "").strip().lower()
    return commit if _SHA.fullmatch(commit) else None


def git_commit(env: dict | None = None, baked: Path = BAKED, repo: Path | None = None) -> str | None:
    """The commit of the running code, or None when nothing says."""
    env = os.environ if env is None else env
    found = _valid(env.get("PRISM_FAST_GIT_COMMIT"))
    if found:
        return found
    if baked.is_file():
        found = _valid(baked.read_text(encoding="utf-8"))
        if found:
            return found
    repo = repo or Path(__file__).resolve().parents[1]
    if not (repo / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, cwd=repo)
    except (OSError, subprocess.SubprocessError):
        return None
    return _valid(out.stdout)


def version() -> str:
    return __version__


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--write":
        commit = _valid(argv[1])
        if commit is None:
            print(f"buildinfo: no valid commit given ({argv[1]!r}); nothing baked", file=sys.stderr)
            return 0
        BAKED.write_text(commit + "\n", encoding="utf-8")
        print(f"buildinfo: baked commit {commit} into {BAKED}")
        return 0
    print(f"prism_fast {version()} commit {git_commit() or 'unknown'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
