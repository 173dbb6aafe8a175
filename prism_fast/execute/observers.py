"""Render-time observers: trusted code that watches one render from inside its child, and a collect step in the
parent. The extension point through which a later stage (e.g. the spatial audit's one pass) sees a render
without this package knowing that stage.

An :class:`Observer` names a child half by an ``entry`` string, ``"package.module:function"``. The render
(``render.render_one(..., observers=...)``) hands the requests to the child in one environment variable; the
prefork worker's forked child (``worker.py``) calls :func:`install_from_env` right before manim's CLI
``main()``, which removes the variable (the script never sees it), imports each entry's module and calls
``function(request, context)`` with ``context = {"out_file": <path>, "scene": <scene class>}``. The child half
must only observe (never change what the render does) and may leave one JSON object through
:func:`write_result` (its process's exit is the usual moment: ``atexit``). After the child is gone and before the
sample's scratch directory is removed, :func:`collect_results` reads every observer's file into
:attr:`Observer.result` (``None`` when it left nothing usable, with :attr:`Observer.rejected` saying why). Whether
and how a result is used is the caller's business.

Sealed results: the script runs in the same process as the child half and may write files in its own scratch
directory, including a forged result file, and then end without the child half's exit handler (a crash, a
signal). So every request carries a fresh random key (``context["seal"]``, made in the parent for this render
only, handed over in the environment variable the child removes before the script runs); :func:`write_result`
stores the result with its HMAC-SHA256 under that key, and :func:`collect_results` accepts only a file whose tag
verifies. A script would need the key, which lives only in the trusted child half's memory (reaching it needs
introspection that the callers' static rules refuse, e.g. the one-pass rule's dunder, ``getattr``/``vars`` and
import checks).

Observers run only where the render child is the prefork worker's (backend ``prefork``); the caller decides
that (``render.backend_name``). An entry that fails to import or to install leaves no file (``result`` stays
``None``): the render itself never changes, and the caller records the missing result on its row.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import json
import os
import re
import secrets
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
    rejected: str | None = None  # why no result was taken: missing | unreadable | unsealed | seal_mismatch
    seal: str = field(default_factory=lambda: secrets.token_hex(32), repr=False)

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
              "context": {"out_file": str(out_file(work, o)), "scene": scene, "seal": o.seal}} for o in observers]
    return {ENV: json.dumps(specs)}


def _tag(seal: str, body: str) -> str:
    return hmac.new(bytes.fromhex(seal), body.encode("utf-8"), hashlib.sha256).hexdigest()


def write_result(context: dict, doc: dict) -> None:
    """Child side: leave ``doc`` (a JSON object) as this observer's sealed result in ``context["out_file"]``."""
    body = json.dumps(doc, ensure_ascii=False)
    with open(context["out_file"], "w", encoding="utf-8") as fh:
        json.dump({"body": body, "tag": _tag(context["seal"], body)}, fh)


def read_result(path: Path, seal: str) -> tuple[dict | None, str | None]:
    """``(result, None)`` for a sealed JSON object under ``seal``, else ``(None, why)``."""
    try:
        with open(path, encoding="utf-8") as fh:
            outer = json.load(fh)
    except FileNotFoundError:
        return None, "missing"
    except (OSError, ValueError, RecursionError):  # (RecursionError: nested past the parser's depth)
        return None, "unreadable"
    if not isinstance(outer, dict) or not isinstance(outer.get("body"), str) or not isinstance(outer.get("tag"), str):
        return None, "unsealed"
    if not hmac.compare_digest(outer["tag"], _tag(seal, outer["body"])):
        return None, "seal_mismatch"
    try:
        doc = json.loads(outer["body"])
    except (ValueError, RecursionError):
        return None, "unreadable"
    return (doc, None) if isinstance(doc, dict) else (None, "unreadable")


def collect_results(observers, work: Path) -> None:
    """Parent side, after the render's process is gone: set every observer's ``result`` (sealed results only)."""
    for observer in observers:
        observer.result, observer.rejected = read_result(out_file(work, observer), observer.seal)


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
