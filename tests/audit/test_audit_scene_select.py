"""Q-SPATIAL-2 fixed audits the scene the render would produce: the execute stage's selection is the one
rule (AST under Q-EXEC-1 fixed, the authors' regex otherwise)."""

from prism_fast.execute.scene_select import select_scene
from prism_fast.profile import IMPROVED, REFERENCE, resolve_profile


def pick(src: str, profile=IMPROVED):
    return select_scene(src, profile).name


def test_base_classes_and_qualified_names():
    assert pick("class Base(Scene): pass\nclass Main(Base): pass\n") == "Main"
    assert pick("import manim\nclass A (manim.Scene): pass\n") == "A"
    assert pick("class Helper: pass\nclass M(Helper, MovingCameraScene): pass\n") == "M"
    assert pick("class G1(Scene): pass\nclass G2(Scene): pass\n") == "G1"
    assert pick("class NotScene(VGroup): pass\n") is None
    assert pick("x = 1\n") is None


def test_audit_follows_the_profiles_render_rule():
    src = "class Base(Scene): pass\nclass Main(Base): pass\n"
    assert pick(src, REFERENCE) == "Base"  # the regex: first textual match
    only_spatial_2 = resolve_profile("reference", {"Q-SPATIAL-2": True})
    assert pick(src, only_spatial_2) == "Base"


def test_improved_audits_only_the_rendered_scene(tmp_path):
    from prism_fast.audit.runner import audit_one

    src = ("from manim import *\n"
           "class Base(Scene):\n    def construct(self):\n        self.play(FadeIn(Square()), run_time=0.2)\n"
           "class Main(Base):\n    def construct(self):\n        self.play(FadeIn(Circle()), run_time=0.2)\n")
    ref = audit_one("two", src, tmp_path / "ref", profile=REFERENCE)
    imp = audit_one("two", src, tmp_path / "imp", profile=IMPROVED)
    assert sorted(ref["visual_audit_report"]) == ["Base", "Main"]  # Q-SPATIAL-2 reference: every scene
    assert sorted(imp["visual_audit_report"]) == ["Main"]
