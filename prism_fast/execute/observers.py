"""Render-time observers: trusted code that watches one render from inside its child, and a collect step in the
parent. The extension point through which a later stage (e.g. the spatial audit's one pass) sees a render
without this package knowing that stage.

An :class:`Observer` names a child half by an ``entry`` string, ``"package.module:function"``. The render
(``render.render_one(..., observers=...)``) hands the requests to the child in one environment variable; the
prefork worker's forked child (``worker.py``) calls :func:`install_from_env` right before manim's CLI
``main()``, which removes the variable (the script never sees it), imports each entry's module and calls
``function(request, context)`` with ``context = {"out_file": <path>, "scene": <scene class>}``. The child half
must only observe (never change what the render does) and may leave one JSON object in ``out_file`` (its
process's exit is the usual moment: ``atexit``). After the child is gone and before the sample's scratch
directory is removed, :func:`collect_results` reads every observer's file into :attr:`Observer.result` (``None`` when it
left nothing readable). Whether and how a result is used is the caller's business.

Observers run only where the render child is the prefork worker's (backend ``prefork``); the caller decides
that (``render.backend_name``). An entry that fails to import or to install leaves no file (``result`` stays
``None``): the render itself never changes, and the caller records the missing result on its row.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

ENV = "PRISM_FAST_OBSERVERS"
_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


@dataclass
class Observer:
    """One observer of one render. ``request`` must be JSON-serialisable; :func:`collect_results` sets ``result``."""

    name: str  # a lower-case identifier; the child's out file is ``.prism_fast_<name>.json`` in the sample dir
    entry: str  # "package.module:function" of trusted code, importable in the render child
    request: dict = field(default_factory=dict)
    result: dict | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"observer name {self.name!r}: expected a lower-case identifier")
        module, sep, function = self.entry.partition(":")
        if not sep or not module or not function.isidentifier():
            raise ValueError(f"observer entry {self.entry!r}: expected 'package.module:function'")


def out_file(work: Path, observer: Observer) -> Path:
    """Where the observer's child half leaves its result (inside the sample's scratch directory)."""
    return Path(work) / f".prism_fast_{observer.name}.json"


def child_env(observers, work: Path, scene: str) -> dict:
    """The environment entry that asks the render child for these observers (empty when there are none)."""
    if not observers:
        return {}
    specs = [{"entry": o.entry, "request": o.request,
              "context": {"out_file": str(out_file(work, o)), "scene": scene}} for o in observers]
    return {ENV: json.dumps(specs)}


def read_result(path: Path) -> dict | None:
    """A JSON object left by a child half, else None (missing, unreadable, not JSON, not an object)."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def collect_results(observers, work: Path) -> None:
    """Parent side, after the render's process is gone: set every observer's ``result``."""
    for observer in observers:
        observer.result = read_result(out_file(work, observer))


def install_from_env() -> None:
    """In the forked render child, before manim's ``main()``: install the observers the parent asked for (env
    var, removed here so the script never sees it). Never breaks the render."""
    raw = os.environ.pop(ENV, None)
    if not raw:
        return
    try:
        specs = json.loads(raw)
    except ValueError:
        return
    for spec in specs if isinstance(specs, list) else ():
        try:
            module, _, function = spec["entry"].partition(":")
            install = getattr(importlib.import_module(module), function)
            install(spec["request"], spec["context"])
        except Exception:  # noqa: BLE001 - this observer leaves no result; the caller records that per row
            continue
