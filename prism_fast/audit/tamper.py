"""Tamper evidence for the spatial audit: a script must not be able to forge its own Spatial verdict.

The audit observes the script from inside the script's own process (hooked ``Scene`` methods take the
snapshots), so a hostile script can try to change what the audit sees: override a hook in its scene class
(``_audit_snapshot`` returning one small square), patch the audit's modules, or write the report file itself.
Two layers turn such attempts into an ``audit_tampered`` row (a failing error row, never a pass):

* **Static** (:func:`static_evidence`, trusted code in the parent, before anything runs): a class that defines
  a method or property the audit relies on (the hooks of ``hooks.AuditHooks`` and the one-pass observer, and
  the scene lifecycle methods they wrap: ``play``, ``remove``, ``render``, ``compile_animation_data``); any
  reference to the audit's internals (its attribute names, ``prism_fast``, the hand-off and report files,
  the ``PRISM_*`` variables). Ordinary Manim scripts never name these.
* **Run time** (:class:`Guard`, in the audit's process, armed before the script's module runs): identity of
  every hook function on the audit scene class and of every module-level function the snapshot path calls
  (atoms, cascade, segments, json), checked after each scene and before the report is written; and a
  completion record in the meta file that only the trusted end of ``child.main`` writes.

What an in-process adversary can still do (docs/security.md): code running in the same interpreter can
reach any object (``gc``, frames, ``ctypes``), so a determined script can undo a patch before the check or
find the report path in memory and write a forged report, then end the process before the trusted code
writes the completion record. The second is detected (no completion record: ``audit_tampered``); the first
needs a script that names none of the internals above, defeats the identity checks in between and keeps a
video byte-identical to the failing layout -- possible in principle, hence documented, not claimed away.
"""

from __future__ import annotations

import ast
import sys

from prism_fast.execute.evidence import reference_evidence

# Methods and properties of the audit scene a user class must not define (hooks.AuditHooks, onepass's
# OnePassScene, and the Scene lifecycle methods they wrap). tests/security checks this list against the classes.
HOOKED_METHODS = frozenset({
    "play", "remove", "render", "compile_animation_data",
    "ensure_audit_vars", "audit_log", "segment_snapshots", "_audit_snapshot", "process_final_results",
    "record_of",
})
# Attributes the audit keeps on the scene instance.
AUDIT_ATTRIBUTES = frozenset({"segment_log", "final_report", "auditor", "_save_audit_images", "hooks",
                              "_audit_state"})
# Names of the audit's classes and modules; substrings of string constants that address its files/variables.
AUDIT_NAMES = frozenset({"AuditHooks", "AuditScene", "OnePassScene", "prism_fast", "_ENGINE_TOTALS"})
AUDIT_STRINGS = ("prism_fast", "audit_report", "audit_meta", "audit_observations", "prism_fast_onepass",
                 "PRISM_AUDIT", "PRISM_FAST")

COMPLETION_KEY = "completed_by_trusted_exit"


def static_evidence(source: str) -> list[str]:
    """Evidence, from the script's text alone, that it reaches for the audit's machinery (sorted, unique)."""
    try:
        tree = ast.parse(source)
        return _evidence(tree)
    except (SyntaxError, ValueError):
        return []  # the audit reports the syntax error itself
    except (RecursionError, MemoryError):
        return []  # too deep to analyse here; the run-time guard still applies


def _evidence(tree: ast.AST) -> list[str]:
    found: set[str] = set()
    scene_like = _scene_like_classes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in scene_like:
            for item in node.body:
                names = []
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names = [item.name]
                elif isinstance(item, ast.Assign):
                    names = [t.id for t in item.targets if isinstance(t, ast.Name)]
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names = [item.target.id]
                for name in names:
                    if name in HOOKED_METHODS or name == "__module__":
                        found.add(f"defines:{node.name}.{name}")
    found |= reference_evidence(tree, names=AUDIT_NAMES, strings=AUDIT_STRINGS,
                                attributes=AUDIT_ATTRIBUTES | (HOOKED_METHODS - {"play", "remove", "render"}))
    return sorted(found)


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _scene_like_classes(tree: ast.AST) -> set[str]:
    """Classes of the script that are (or may be) scenes: a base named ``*Scene``, or a scene-like class of
    the script. (A ``remove`` on a Mobject subclass is ordinary Manim code; on a scene it bypasses the audit.)"""
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    found: set[str] = set()
    subclasses: dict[str, list] = {}  # base name -> classes naming it (a worklist: linear in the classes)
    work = []
    for cls in classes:
        names = [_base_name(b) for b in cls.bases]
        if any(n.endswith("Scene") for n in names):
            work.append(cls)
        for n in names:
            subclasses.setdefault(n, []).append(cls)
    while work:
        cls = work.pop()
        if cls.name in found:
            continue
        found.add(cls.name)
        work.extend(c for c in subclasses.get(cls.name, ()) if c.name not in found)
    return found


class Guard:
    """Identities captured before the script runs; :meth:`verify` lists what changed since."""

    def __init__(self, audit_scene: type, trusted: tuple[type, ...] = ()):
        from prism_fast.audit import atoms, hooks, observations, segments

        self.hooks_cls = audit_scene.hooks
        # classes whose methods are the audit's (e.g. OnePassScene)
        self.trusted = (self.hooks_cls, audit_scene, *trusted)
        self.hook_items = {(klass, name): obj for klass in self.trusted for name, obj in vars(klass).items()
                           if not name.startswith("__")}
        import base64
        import hashlib
        import hmac
        import json

        from prism_fast.execute import observers

        # the snapshot path and the path that encodes and seals the observations (a patch there forges what the
        # parent receives under a valid seal)
        targets = [(atoms, "extract_atoms"), (segments, "SegmentLog"), (hooks, "extract_atoms"),
                   (hooks, "SegmentLog"), (hooks, "RawSnapshot"), (hooks, "_err"), (observations, "encode_scenes"),
                   (observations, "encode_snapshot"), (observations, "_encode_atom"), (observations, "ArrayTable"),
                   (observers, "write_result"), (observers, "_tag"), (hmac, "new"), (hashlib, "sha256"),
                   (base64, "b64encode"), (json, "dumps"), (json, "dump")]
        self.module_items = [(mod, name, getattr(mod, name)) for mod, name in targets if hasattr(mod, name)]
        self.class_items = {name: getattr(segments.SegmentLog, name) for name in vars(segments.SegmentLog)
                            if not name.startswith("__")}
        self.class_items.update({f"ArrayTable.{name}": getattr(observations.ArrayTable, name)
                                 for name in vars(observations.ArrayTable) if not name.startswith("__")})
        self.array_table_cls = observations.ArrayTable
        self.segment_log_cls = segments.SegmentLog

    def verify(self, instance=None) -> list[str]:
        found = []
        for (klass, name), obj in self.hook_items.items():
            if vars(klass).get(name) is not obj:
                found.append(f"patched:{klass.__name__}.{name}")
        for mod, name, obj in self.module_items:
            if getattr(mod, name, None) is not obj:
                found.append(f"patched:{mod.__name__}.{name}")
        for name, obj in self.class_items.items():
            cls_name, dot, attr = name.rpartition(".")
            owner = self.array_table_cls if dot else self.segment_log_cls
            if getattr(owner, attr, None) is not obj:
                found.append(f"patched:{cls_name or 'SegmentLog'}.{attr}")
        if instance is not None:
            cls = type(instance)
            if issubclass(cls, self.hooks_cls):  # (an unhooked scene yields no report: a failure, not a forgery)
                for name in sorted(HOOKED_METHODS):
                    owner = _static_owner(cls, name)
                    if owner is None:
                        continue
                    ok = (owner, name) in self.hook_items or (owner not in self.trusted and _is_manim_class(owner))
                    if not ok:
                        found.append(f"overridden:{owner.__name__}.{name}")
            found += shadowed_state(instance, self.trusted)
        return sorted(set(found))


def shadowed_state(instance, trusted: tuple = ()) -> list[str]:
    """Names of the toolkit's per-scene audit state (``AUDIT_ATTRIBUTES``) that the script's own instance or
    classes define. The toolkit keeps that state in instance attributes found by ``hasattr`` (a script's name
    stands in for it there); prism_fast keeps it outside the scene, so any such name is the script's, and
    evidence (docs/security.md)."""
    found = []
    try:
        own = type.__dict__["__mro__"].__get__(type(instance))
        inst_dict = object.__getattribute__(instance, "__dict__")
    except (AttributeError, TypeError):
        return ["shadows:<unreadable>"]
    for name in sorted(AUDIT_ATTRIBUTES | {"audit_log", "segment_snapshots"}):
        if name in inst_dict:
            found.append(f"shadows:{name}")
            continue
        for klass in own:
            if klass in trusted:
                continue
            if name in type.__dict__["__dict__"].__get__(klass):
                found.append(f"shadows:{klass.__name__}.{name}")
                break
    return found


def _static_owner(cls: type, name: str) -> type | None:
    """The class of ``cls``'s MRO that defines ``name``, found without running descriptors or metaclass hooks."""
    for klass in type.__dict__["__mro__"].__get__(cls):
        if name in type.__dict__["__dict__"].__get__(klass):
            return klass
    return None


def _is_manim_class(klass: type) -> bool:
    """A class of manim itself (its module object is one of manim's, not a name a script can assign)."""
    mod = sys.modules.get(klass.__dict__.get("__module__", ""))
    return mod is not None and mod.__name__.split(".")[0] == "manim" and mod.__dict__.get(klass.__name__) is klass


def scrub_argv(keep: int = 2) -> None:
    """Remove the audit's own arguments (report and meta paths) from ``sys.argv`` before the script runs."""
    sys.argv[:] = sys.argv[:keep]
