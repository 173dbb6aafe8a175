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
})
# Attributes the audit keeps on the scene instance.
AUDIT_ATTRIBUTES = frozenset({"segment_log", "final_report", "auditor", "_save_audit_images", "hooks",
                              "_audit_state"})
# Names of the audit's classes and modules; substrings of string constants that address its files/variables.
AUDIT_NAMES = frozenset({"AuditHooks", "AuditScene", "OnePassScene", "prism_fast", "_ENGINE_TOTALS"})
AUDIT_STRINGS = ("prism_fast", "audit_report", "audit_meta", "prism_fast_onepass", "PRISM_AUDIT", "PRISM_FAST")

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
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name in found:
                continue
            if any(_base_name(b).endswith("Scene") or _base_name(b) in found for b in cls.bases):
                found.add(cls.name)
                changed = True
    return found


class Guard:
    """Identities captured before the script runs; :meth:`verify` lists what changed since."""

    def __init__(self, audit_scene: type, trusted: tuple[type, ...] = ()):
        from prism_fast.audit import atoms, cascade, hooks, segments

        self.hooks_cls = audit_scene.hooks
        self.trusted = (self.hooks_cls, *trusted)  # classes whose methods are the audit's (e.g. OnePassScene)
        self.hook_items = {(klass, name): obj for klass in self.trusted for name, obj in vars(klass).items()
                           if not name.startswith("__")}
        import json

        targets = [(atoms, "extract_atoms"), (cascade, "check_snapshot"), (segments, "segment_report"),
                   (segments, "SegmentLog"), (hooks, "extract_atoms"), (hooks, "check_snapshot"),
                   (hooks, "segment_report"), (hooks, "SegmentLog"), (hooks, "_err"), (json, "dumps"),
                   (json, "dump")]
        self.module_items = [(mod, name, getattr(mod, name)) for mod, name in targets if hasattr(mod, name)]
        self.class_items = {name: getattr(segments.SegmentLog, name) for name in vars(segments.SegmentLog)
                            if not name.startswith("__")}
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
            if getattr(self.segment_log_cls, name, None) is not obj:
                found.append(f"patched:SegmentLog.{name}")
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
            log = instance.__dict__.get("segment_log")
            if log is not None and type(log) is not self.segment_log_cls:
                found.append("replaced:segment_log")
        return sorted(set(found))


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
