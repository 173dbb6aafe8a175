"""Frozen star-import names of a fixed list of non-manim modules, for the API-hallucination checker (§9).

Why this exists: ``from X import *`` binds names the checker must know, or every name it binds would be an
unresolved ``name`` finding. The checker used to learn them by importing X in the scoring process whenever X's
top-level package was in the standard library or a short list. A script containing ``from unittest.__main__ import
*`` therefore made *trusted* code run unittest's command-line main inside the Ray render actor (``SystemExit``: the
actor died and other samples got ``worker_lost`` rows). Model-written scripts are adversarial: nothing a script
names may be imported, found or executed by trusted code.

So the names come from a file built ahead of time by :func:`build_star_index`, which imports exactly the modules
of :data:`STAR_MODULES` (a literal in this file, reviewed like code) and nothing else. Scoring only reads the file
(:func:`star_names`); it never imports a module, so the verdicts also no longer depend on what the scoring machine
has installed. A star import from any module not in the file is "unknown": the checker switches its name findings
off for that script, with a note (no false finding, a small recall loss). Non-star imports of unknown modules
were never imported and are simply unknown.

Regenerate (only on purpose, in a reviewable commit; ``tests/execute/test_hallucination.py`` checks the file
against a fresh build for every module whose library version matches the installed one)::

    python -m prism_fast.execute.star_index --write

JSON layout (all lists sorted)::

    {"format": 1, "python": "3.11.7", "library_versions": {"numpy": ..., ...},
     "modules": {"math": [names], ...},           # what `from <module> import *` binds
     "import_failures": {"<module>": "ImportError: ..."}}
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from pathlib import Path

STAR_INDEX_FORMAT = 1
STAR_INDEX_PATH = Path(__file__).with_name("data") / "star_modules.json"

# The only modules whose star imports are resolved. Each is imported by the *builder* only, and each must be free
# of import-time side effects (no `antigravity`, `this`, `__main__` modules, GUI toolkits or test runners). Adding
# a module here is a reviewed change followed by a regeneration; nothing at scoring time can extend the list.
STAR_MODULES: tuple[str, ...] = (
    # standard library
    "abc", "array", "bisect", "cmath", "collections", "collections.abc", "colorsys", "contextlib", "copy",
    "dataclasses", "datetime", "decimal", "enum", "fractions", "functools", "heapq", "itertools", "json", "math",
    "numbers", "operator", "os", "os.path", "pathlib", "random", "re", "statistics", "string", "sys", "textwrap",
    "time", "types", "typing", "unicodedata", "warnings",
    # scientific packages manim installs
    "numpy", "numpy.fft", "numpy.linalg", "numpy.polynomial", "numpy.random",
    "scipy", "scipy.integrate", "scipy.interpolate", "scipy.linalg", "scipy.optimize", "scipy.spatial",
    "scipy.special", "scipy.stats",
    "sympy", "networkx",
    "PIL", "PIL.Image", "PIL.ImageDraw", "PIL.ImageFont",
)

# Distributions whose versions decide the non-stdlib entries (recorded for provenance and for the freshness test).
_LIBRARIES = {"numpy": "numpy", "scipy": "scipy", "sympy": "sympy", "networkx": "networkx", "PIL": "Pillow"}


def library_of(module: str) -> str | None:
    """The distribution that provides ``module`` (None: the standard library)."""
    return _LIBRARIES.get(module.split(".")[0])


# --------------------------------------------------------------------------------------------------------------
# Building (imports STAR_MODULES, and only those)
# --------------------------------------------------------------------------------------------------------------

def _library_versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in sorted(set(_LIBRARIES.values())):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "absent"
    return out


def build_star_index() -> dict:
    """Import each module of :data:`STAR_MODULES` and record what ``from <module> import *`` binds: ``__all__``
    when the module defines it, else every public name of ``dir(module)`` (Python's own rule)."""
    import importlib

    modules: dict[str, list[str]] = {}
    failures: dict[str, str] = {}
    for name in STAR_MODULES:
        try:
            mod = importlib.import_module(name)  # a name from the literal above, never from a script
        except Exception as exc:  # noqa: BLE001 - recorded in the JSON; such a star import stays unknown
            failures[name] = f"{type(exc).__name__}: {exc}"
            continue
        explicit = getattr(mod, "__all__", None)
        if explicit is not None:
            names = [str(n) for n in explicit]
        else:
            names = [a for a in dir(mod) if not a.startswith("_")]
        modules[name] = sorted(set(names))
    return {
        "format": STAR_INDEX_FORMAT,
        "python": ".".join(map(str, sys.version_info[:3])),
        "library_versions": _library_versions(),
        "modules": modules,
        "import_failures": dict(sorted(failures.items())),
    }


def write_star_index(path: Path = STAR_INDEX_PATH) -> Path:
    data = build_star_index()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------------------------
# Reading (imports nothing)
# --------------------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4)
def load_star_index(path: str | None = None) -> dict[str, frozenset[str]]:
    """module → the names its star import binds, as frozen in the file."""
    p = Path(path) if path else STAR_INDEX_PATH
    data = json.loads(p.read_text(encoding="utf-8"))
    if data.get("format") != STAR_INDEX_FORMAT:
        raise ValueError(f"{p}: star index format {data.get('format')}, expected {STAR_INDEX_FORMAT}")
    return {module: frozenset(names) for module, names in data["modules"].items()}


def star_names(module: str) -> frozenset[str] | None:
    """What ``from <module> import *`` binds, or None when the module is not in the frozen index (unknown).

    A pure dictionary lookup: the module is never imported, found or otherwise touched."""
    return load_star_index().get(module)


def star_index_file_sha256(path: Path = STAR_INDEX_PATH) -> str:
    """sha256 of the index file bytes (provenance, like the manim namespace file's)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m prism_fast.execute.star_index --write")
    print(write_star_index())
