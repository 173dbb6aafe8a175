"""Environment fingerprint of a render: the versions that decide the video bytes (spec execution.md §2.x).

Manim, Pillow, PyAV (manim writes the mp4 through PyAV's bundled libav), pycairo/cairo, ManimPango/Pango,
numpy, Python, TeX (``latex --version``), dvisvgm, and the font set (fontconfig list plus what the families
that scripts ask for resolve to). The Python-side versions are read from the interpreter that runs
``manim_bin`` (its shebang), so a manim in another environment is fingerprinted correctly.

``env_fingerprint`` returns the full dict; ``fingerprint_hash`` a short stable hash of it for every row.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

log = logging.getLogger(__name__)

# Families that generated scripts request or that manim uses by default.
FONT_QUERIES = ("sans-serif", "serif", "monospace", "DejaVu Sans", "SimHei", "Noto Sans CJK SC")

_PY_PROBE = r"""
import json, platform, sys
from importlib import metadata
out = {"python": platform.python_version()}
for dist in ("manim", "Pillow", "av", "pycairo", "ManimPango", "numpy", "scipy", "cloup", "rich"):
    try:
        out[dist] = metadata.version(dist)
    except metadata.PackageNotFoundError:
        out[dist] = None
try:
    import cairo
    out["cairo_lib"] = cairo.cairo_version_string()
except Exception as exc:
    out["cairo_lib"] = "error: %s" % exc
try:
    import manimpango
    out["pango_lib"] = manimpango.pango_version()
except Exception as exc:
    out["pango_lib"] = "error: %s" % exc
try:
    import av
    out["libav"] = {k: "%d.%d.%d" % v for k, v in sorted(av.library_versions.items())}
except Exception as exc:
    out["libav"] = "error: %s" % exc
print(json.dumps(out, sort_keys=True))
"""


def _first_line(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"error: {exc}"
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return lines[0].strip() if lines else None


def interpreter_of(manim_bin: str) -> str:
    """The Python interpreter behind a ``manim`` console script (its shebang), else this interpreter."""
    path = shutil.which(manim_bin) or manim_bin
    try:
        with open(path, "rb") as fh:
            first = fh.readline().decode("utf-8", "replace").strip()
    except OSError:
        return sys.executable
    if first.startswith("#!"):
        exe = first[2:].strip().split()[0]
        if Path(exe).name.startswith("python") and Path(exe).exists():
            return exe
    return sys.executable


def _fonts() -> dict:
    if shutil.which("fc-list") is None:
        return {"fc_list": None}
    listing = subprocess.run(["fc-list", "--format", "%{file}|%{family}|%{style}|%{fontversion}\n"],
                             capture_output=True, text=True, timeout=120).stdout
    entries = sorted(set(listing.splitlines()))
    matches = {}
    for query in FONT_QUERIES:
        matches[query] = subprocess.run(["fc-match", "--format", "%{file}|%{family}|%{fontversion}", query],
                                        capture_output=True, text=True, timeout=60).stdout
    return {
        "fc_list_sha256": hashlib.sha256("\n".join(entries).encode()).hexdigest(),
        "font_count": len(entries),
        "fc_match": matches,
        "fontconfig": _first_line(["fc-list", "--version"]),
    }


@lru_cache(maxsize=8)
def _fingerprint_json(manim_bin: str) -> str:
    python = interpreter_of(manim_bin)
    try:
        proc = subprocess.run([python, "-c", _PY_PROBE], capture_output=True, text=True, timeout=120)
        py = json.loads(proc.stdout) if proc.returncode == 0 else {"error": proc.stderr.strip()[-500:]}
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as exc:
        py = {"error": f"{type(exc).__name__}: {exc}"}
    if "error" in py:
        log.warning("fingerprint: could not read package versions from %s: %s", python, py["error"])
    data = {
        "python_packages": py,
        "interpreter": python,
        "latex": _first_line(["latex", "--version"]),
        "dvisvgm": _first_line(["dvisvgm", "--version"]),
        "fonts": _fonts(),
    }
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def env_fingerprint(manim_bin: str = "manim") -> dict:
    """The full fingerprint (computed once per process and manim binary)."""
    return json.loads(_fingerprint_json(manim_bin))


def fingerprint_hash(manim_bin: str = "manim") -> str:
    """A short stable hash of :func:`env_fingerprint` (the interpreter path itself is left out)."""
    data = env_fingerprint(manim_bin)
    data.pop("interpreter", None)
    canon = json.dumps(data, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canon.encode()).hexdigest()[:16]
