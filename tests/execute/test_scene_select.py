"""Scene selection: the authors' regex (reference, Q-EXEC-1) and AST resolution (improved).

Oracles: the spec's list of regex consequences (execution.md §2.1), and, for the improved rule, manim itself:
each snippet is executed with manim imported, and the real Scene subclasses are ranked by the rule in the spec
("first in source order that no other candidate derives from").
"""

from __future__ import annotations

import inspect
import textwrap
import types

import pytest

from prism_fast.execute.scene_select import (
    MANIM_SCENE_CLASSES, METHOD_AST, METHOD_REGEX, METHOD_REGEX_FALLBACK, select_scene,
    select_scene_reference,
)
from prism_fast.profile import IMPROVED, REFERENCE, resolve_profile


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip()


# (source, expected reference choice), each line of execution.md §2.1
REFERENCE_CASES = [
    pytest.param("from manim import *\nclass A(Scene):\n    pass\n", "A", id="plain"),
    pytest.param("class A(SceneBase):\n    pass\n", "A", id="prefix-match"),
    pytest.param("import manim\nclass A(manim.Scene):\n    pass\n", None, id="qualified-missed"),
    pytest.param("from manim import *\nclass A (Scene):\n    pass\n", None, id="space-before-paren"),
    pytest.param("from manim import *\nclass A(Base, Scene):\n    pass\n", None, id="second-base-missed"),
    pytest.param("from manim import *\nclass A(Base, Scene):\n    pass\nclass B(A):\n    pass\n", None,
                 id="derived-missed"),
    pytest.param("# class Fake(Scene): old\nfrom manim import *\nclass Real(Scene):\n    pass\n", "Fake",
                 id="comment-counts"),
    pytest.param("s = 'class InStr(ThreeDScene)'\nclass Real(Scene):\n    pass\n", "InStr", id="string-counts"),
    pytest.param("class B(MovingCameraScene):\n    pass\nclass C(Scene):\n    pass\n", "B", id="first-wins"),
    pytest.param("class Z(LinearTransformationScene):\n    pass\n", "Z", id="lts"),
    pytest.param("class Z(SpecialThreeDScene):\n    pass\n", None, id="special3d-not-listed"),
    pytest.param("print('no scene')\n", None, id="none"),
]


@pytest.mark.parametrize("source,expected", REFERENCE_CASES)
def test_reference_regex(source, expected):
    assert select_scene_reference(source) == expected
    choice = select_scene(source, REFERENCE)
    assert (choice.name, choice.method) == (expected, METHOD_REGEX)


def test_custom_profile_without_q_exec_1_uses_regex():
    custom = resolve_profile("improved", {"Q-EXEC-1": False})
    assert select_scene("import manim\nclass A(manim.Scene):\n    pass\n", custom).name is None


IMPROVED_CASES = [
    pytest.param(src("""
        from manim import *
        class A(Scene):
            pass
        """), id="plain"),
    pytest.param(src("""
        import manim
        class A(manim.Scene):
            pass
        """), id="qualified"),
    pytest.param(src("""
        import manim as mn
        class A(mn.MovingCameraScene):
            pass
        """), id="module-alias"),
    pytest.param(src("""
        from manim import Scene as S
        class A(S):
            pass
        """), id="class-alias"),
    pytest.param(src("""
        from manim import *
        class A (Scene):
            pass
        """), id="space"),
    pytest.param(src("""
        from manim import *
        class Mixin:
            pass
        class A(Mixin, Scene):
            pass
        """), id="second-base"),
    pytest.param(src("""
        from manim import *
        class Base(Scene):
            def helper(self):
                pass
        class Real(Base):
            def construct(self):
                pass
        """), id="leaf-of-in-file-base"),
    pytest.param(src("""
        from manim import *
        class Base(Scene):
            pass
        class Mid(Base):
            pass
        class Other(ThreeDScene):
            pass
        class Leaf(Mid):
            pass
        """), id="first-leaf-in-source-order"),
    pytest.param(src("""
        # class Fake(Scene): in a comment
        from manim import *
        s = "class InStr(Scene)"
        class Real(ZoomedScene):
            pass
        """), id="comments-and-strings-ignored"),
    pytest.param(src("""
        from manim import *
        class SceneBase:
            pass
        class A(SceneBase):
            pass
        """), id="prefix-is-not-a-scene"),
    pytest.param(src("""
        import manim
        class A(manim.scene.scene.Scene):
            pass
        """), id="deep-qualified"),
    pytest.param(src("""
        from manim import *
        def make():
            class Inner(Scene):
                pass
            return Inner
        x = 1
        """), id="nested-not-top-level"),
]


def manim_oracle(source: str) -> str | None:
    """Execute the snippet with manim and apply the spec's rule to the real classes."""
    from manim import Scene

    module = types.ModuleType("oracle_snippet")
    exec(compile(source, "<snippet>", "exec"), module.__dict__)  # noqa: S102 - trusted test snippets
    classes = [obj for obj in module.__dict__.values()
               if inspect.isclass(obj) and obj.__module__ == "oracle_snippet"]
    lines = {c: min(i for i, line in enumerate(source.splitlines()) if line.startswith(f"class {c.__name__}"))
             for c in classes}
    candidates = sorted((c for c in classes if issubclass(c, Scene)), key=lines.__getitem__)
    for cand in candidates:
        if not any(cand in other.__bases__ for other in candidates if other is not cand):
            return cand.__name__
    return None


@pytest.mark.parametrize("source", IMPROVED_CASES)
def test_improved_matches_manim_oracle(source):
    choice = select_scene(source, IMPROVED)
    assert choice.method == METHOD_AST
    assert choice.name == manim_oracle(source)


def test_improved_syntax_error_falls_back_and_records_it():
    source = "from manim import *\nclass A(Scene):\n    def construct(self)\n        pass\n"
    choice = select_scene(source, IMPROVED)
    assert choice.name == "A"
    assert choice.method == METHOD_REGEX_FALLBACK
    assert choice.detail.startswith("SyntaxError")


def test_scene_class_list_matches_installed_manim():
    import manim
    from manim import Scene

    installed = {name for name, obj in vars(manim).items() if inspect.isclass(obj) and issubclass(obj, Scene)}
    assert installed == set(MANIM_SCENE_CLASSES)
