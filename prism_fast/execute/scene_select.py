"""Choose the Scene class that the render passes to ``manim -ql <file> <Scene>``.

Two rules (spec execution.md §2.1 and §3, quirk Q-EXEC-1):

* reference: the first textual match of the authors' regex. It is a prefix match on the first base, it can
  match inside comments and strings, and it misses ``manim.Scene``, ``class A (Scene)``, multi-base lists
  whose first base is not a listed name, and classes deriving from an in-file scene.
* improved: AST resolution. The candidates are the top-level classes whose bases resolve to a manim Scene
  class, by bare name, by ``manim.``-qualified name (or an alias of ``manim``), or transitively through
  classes defined in the same file. The chosen class is the first candidate in source order that no other
  candidate derives from.

Pure functions over source text; nothing here imports manim.
"""

from __future__ import annotations

import ast
import logging
import re
from dataclasses import dataclass

from prism_fast.profile import Profile

log = logging.getLogger(__name__)

# The authors' pattern, character for character (scripts/render_directory.py).
REFERENCE_SCENE_RE = re.compile(
    r"class\s+(\w+)\((?:Scene|MovingCameraScene|ThreeDScene|VectorScene|ZoomedScene|LinearTransformationScene)"
)

# Every Scene subclass that ``from manim import *`` binds in Manim CE 0.19.0 (Scene itself included).
# tests/execute/test_scene_select.py checks this tuple against the installed manim.
MANIM_SCENE_CLASSES: frozenset[str] = frozenset({
    "Scene", "MovingCameraScene", "ThreeDScene", "SpecialThreeDScene", "VectorScene",
    "LinearTransformationScene", "ZoomedScene",
})

METHOD_REGEX = "regex"                      # reference rule
METHOD_AST = "ast"                          # improved rule
METHOD_REGEX_FALLBACK = "regex_fallback_syntax_error"  # improved rule could not parse; regex used instead


@dataclass(frozen=True)
class SceneChoice:
    """The selected scene name (None when nothing matched) and how it was selected."""

    name: str | None
    method: str
    detail: str | None = None


def select_scene_reference(source: str) -> str | None:
    """Q-EXEC-1 reference: the first regex match anywhere in the text, or None."""
    match = REFERENCE_SCENE_RE.search(source)
    return match.group(1) if match else None


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, None for anything else (calls, subscripts, ...)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _manim_bindings(tree: ast.Module) -> tuple[set[str], dict[str, str]]:
    """Names bound to the manim package (``import manim as m``) and names imported as scene classes
    (``from manim import Scene as S`` -> {"S": "Scene"})."""
    module_aliases: set[str] = set()
    class_aliases: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "manim" or alias.name.startswith("manim."):
                    # ``import manim.x`` binds ``manim``; ``import manim.x as y`` binds y to the submodule.
                    if alias.asname is None:
                        module_aliases.add("manim")
                    elif alias.name == "manim":
                        module_aliases.add(alias.asname)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and (
            node.module == "manim" or node.module.startswith("manim.")
        ):
            for alias in node.names:
                if alias.name in MANIM_SCENE_CLASSES:
                    class_aliases[alias.asname or alias.name] = alias.name
    return module_aliases, class_aliases


def _base_is_manim_scene(base: ast.expr, module_aliases: set[str], class_aliases: dict[str, str]) -> bool:
    dotted = _dotted(base)
    if dotted is None:
        return False
    head, _, rest = dotted.partition(".")
    if not rest:
        # A bare name: an alias from ``from manim import Scene as S``, or a manim scene name. Bare names are
        # accepted even without a visible import so that a missing import surfaces as the real NameError.
        return dotted in class_aliases or dotted in MANIM_SCENE_CLASSES
    return (head in module_aliases or head == "manim") and dotted.rsplit(".", 1)[1] in MANIM_SCENE_CLASSES


def select_scene_ast(tree: ast.Module) -> str | None:
    """Q-EXEC-1 improved: resolve scene classes through the AST (see module docstring)."""
    module_aliases, class_aliases = _manim_bindings(tree)
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    local_bases: dict[str, list[str]] = {}
    direct: set[int] = set()
    for index, cls in enumerate(classes):
        local_bases[cls.name] = [b.id for b in cls.bases if isinstance(b, ast.Name)]
        if any(_base_is_manim_scene(b, module_aliases, class_aliases) for b in cls.bases):
            direct.add(index)
    scene_names = {classes[i].name for i in direct}
    # transitive closure through classes defined in this file: a worklist from the direct scenes down the
    # name -> subclasses edges (repeated passes over every class were quadratic in a chain of classes)
    derived: dict[str, list[str]] = {}
    for cls in classes:
        for b in local_bases[cls.name]:
            derived.setdefault(b, []).append(cls.name)
    todo = list(scene_names)
    while todo:
        for name in derived.get(todo.pop(), ()):
            if name not in scene_names:
                scene_names.add(name)
                todo.append(name)
    candidates = [cls for cls in classes if cls.name in scene_names]
    derived_from = {b for cls in candidates for b in local_bases[cls.name] if b != cls.name}
    for cls in candidates:
        if cls.name not in derived_from:
            return cls.name
    return None


def select_scene(source: str, profile: Profile) -> SceneChoice:
    """The scene to render under ``profile``."""
    if not profile.fixes("Q-EXEC-1"):  # Q-EXEC-1 reference: the authors' regex
        return SceneChoice(select_scene_reference(source), METHOD_REGEX)
    try:  # Q-EXEC-1 improved: AST resolution
        tree = ast.parse(source)
    # RecursionError/MemoryError: nesting too deep for the parser (adversarial scripts must not crash the caller).
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        # The render will fail at import anyway; keep the reference choice so the row shows the real
        # Python error rather than "Scene class not found", and record that the fallback was used.
        log.warning("scene selection: script does not parse (%s); using the reference regex", exc)
        return SceneChoice(select_scene_reference(source), METHOD_REGEX_FALLBACK,
                           f"{type(exc).__name__}: {exc}")
    return SceneChoice(select_scene_ast(tree), METHOD_AST)
