"""AST selection of the rendered scene (Q-EXEC-1 improved rule, used by Q-SPATIAL-2 fixed)."""

import ast

from prism_fast.audit.scene_select import render_scene


def pick(src: str):
    return render_scene(ast.parse(src))


def test_base_classes_and_qualified_names():
    assert pick("class Base(Scene): pass\nclass Main(Base): pass\n") == "Main"
    assert pick("import manim\nclass A (manim.Scene): pass\n") == "A"
    assert pick("class Helper: pass\nclass M(Helper, MovingCameraScene): pass\n") == "M"
    assert pick("class G1(Scene): pass\nclass G2(Scene): pass\n") == "G1"
    assert pick("class NotScene(VGroup): pass\n") is None
    assert pick("x = 1\n") is None
