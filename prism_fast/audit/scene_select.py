"""Which scene class the render would produce, by AST (spec README Q-EXEC-1 improved rule). Pure.

Used by the audit only for Q-SPATIAL-2 fixed ("only the scene selected for rendering is audited").
The execute stage owns the render's selection; this local copy follows the same written rule and should
be replaced by the execute stage's function once it exists (interface: ``tree -> class name | None``).
"""

from __future__ import annotations

import ast

MANIM_SCENE_NAMES = frozenset({
    "Scene", "MovingCameraScene", "ThreeDScene", "SpecialThreeDScene", "ZoomedScene", "VectorScene",
    "LinearTransformationScene",
})


def _base_name(node: ast.expr) -> tuple[str, bool] | None:
    """(name, qualified_by_manim) for ``Name`` or ``manim.Name`` bases; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id, False
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "manim":
        return node.attr, True
    return None


def render_scene(tree: ast.Module, scene_names=MANIM_SCENE_NAMES) -> str | None:
    """First top-level scene class (source order) from which no other top-level scene class derives."""
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    local = {c.name: c for c in classes}
    memo: dict[str, bool] = {}

    def is_scene(name: str, stack=()) -> bool:
        if name in memo:
            return memo[name]
        if name in stack:
            return False
        result = False
        for base in local[name].bases:
            got = _base_name(base)
            if got is None:
                continue
            bname, qualified = got
            if bname in scene_names and (qualified or bname not in local):
                result = True
            elif not qualified and bname in local and is_scene(bname, (*stack, name)):
                result = True
        memo[name] = result
        return result

    scenes = [c.name for c in classes if is_scene(c.name)]
    derived_from = set()
    for c in classes:
        if c.name in scenes:
            for base in c.bases:
                got = _base_name(base)
                if got and not got[1] and got[0] in local and got[0] != c.name:
                    derived_from.add(got[0])
    for name in scenes:
        if name not in derived_from:
            return name
    return None
