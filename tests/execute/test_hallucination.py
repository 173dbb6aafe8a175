"""Static API-hallucination checker (spec execution.md §9) against the frozen Manim CE 0.19.0 namespace."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings
from importlib import resources
from pathlib import Path

import pytest

from prism_fast.execute.hallucination import Finding, check_code, corroborated_count
from prism_fast.execute.manim_namespace import NAMESPACE_PATH, load_namespace, namespace_file_sha256

HEAD = "from manim import *\n"


def findings(code: str) -> set[tuple[str, str]]:
    report = check_code(textwrap.dedent(code))
    assert report.parsed
    return {(f.kind, f.identifier) for f in report.findings}


def scene(body: str, head: str = HEAD) -> str:
    """`body` placed inside construct() of a Scene subclass."""
    return head + "class A(Scene):\n    def construct(self):\n" + textwrap.indent(textwrap.dedent(body), " " * 8)


# ---------------------------------------------------------------------------------------------- frozen namespace

@pytest.mark.slow  # the build imports all of manim in a subprocess: 10-35 s on the 2-core machine
def test_namespace_file_is_for_manim_0_19_0_and_is_current():
    """The checked-in namespace equals a fresh build from the installed manim (built in a subprocess, since the
    build imports every manim submodule)."""
    import manim

    assert manim.__version__ == "0.19.0"
    ns = load_namespace()
    assert ns.data["manim_version"] == "0.19.0"
    script = ("import json, sys\nfrom prism_fast.execute.manim_namespace import build_namespace\n"
              "json.dump(build_namespace(), sys.stdout, sort_keys=True)")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr[-2000:]
    fresh = json.loads(proc.stdout)
    frozen = json.loads(NAMESPACE_PATH.read_text(encoding="utf-8"))
    hint = "regenerate with: python -m prism_fast.execute.manim_namespace --write"
    # manim's own part must be identical; records of other libraries' classes follow their pinned versions.
    for part in ("star_names", "modules", "import_failures", "manim_version", "format"):
        assert fresh[part] == frozen[part], (part, hint)
    manim_classes = {k for k in fresh["classes"] if k.startswith("manim.")}
    assert manim_classes == {k for k in frozen["classes"] if k.startswith("manim.")}, hint
    for key in sorted(manim_classes):
        assert fresh["classes"][key] == frozen["classes"][key], (key, hint)
    assert len(namespace_file_sha256()) == 64


def test_namespace_agrees_with_live_manim():
    """Independent oracle: the live module and classes."""
    import manim

    ns = load_namespace()
    assert ns.star_names == {n for n in dir(manim) if not n.startswith("_")}
    for cls in (manim.Circle, manim.Text, manim.MovingCameraScene, manim.Axes, manim.LineJointType):
        key = f"{cls.__module__}.{cls.__qualname__}"
        assert ns.class_dir(key) == frozenset(dir(cls)), key


def test_star_index_file_is_current():
    """The checked-in star index (star imports from non-manim modules) equals a fresh build, made in a subprocess
    since the build imports the listed modules: the standard library's entries when the Python minor version
    matches, each library's when its installed version matches the recorded one."""
    from prism_fast.execute.star_index import STAR_INDEX_PATH, STAR_MODULES, library_of, star_index_file_sha256

    script = ("import json, sys\nfrom prism_fast.execute.star_index import build_star_index\n"
              "json.dump(build_star_index(), sys.stdout, sort_keys=True)")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr[-2000:]
    fresh = json.loads(proc.stdout)
    frozen = json.loads(STAR_INDEX_PATH.read_text(encoding="utf-8"))
    hint = "regenerate with: python -m prism_fast.execute.star_index --write"
    assert set(frozen["modules"]) | set(frozen["import_failures"]) == set(STAR_MODULES), hint
    assert frozen["import_failures"] == {}, hint
    same_python = fresh["python"].split(".")[:2] == frozen["python"].split(".")[:2]
    compared = 0
    for module in STAR_MODULES:
        lib = library_of(module)
        if (same_python if lib is None else fresh["library_versions"][lib] == frozen["library_versions"][lib]):
            assert fresh["modules"].get(module) == frozen["modules"][module], (module, hint)
            compared += 1
    assert compared, "nothing comparable: the star index was built with another Python and other libraries"
    assert len(star_index_file_sha256()) == 64


def test_auditor_aliases_are_not_in_the_namespace():
    aliases = ["CENTER", "UP_LEFT", "UP_RIGHT", "DOWN_LEFT", "DOWN_RIGHT", "LIGHT_BLUE", "CYAN", "HGroup",
               "BulletList", "Colors"]
    assert not set(aliases) & load_namespace().star_names
    code = scene("x = [" + ", ".join(aliases) + "]")
    assert findings(code) == {("name", a) for a in aliases}


# ---------------------------------------------------------------------------------------------- zero on valid code

def _sample_scripts() -> list[Path]:
    root = Path(str(resources.files("prism_fast.dataset"))) / "data" / "samples"
    return sorted(root.glob("*/*.py"))


def test_bundled_reference_answers_have_no_findings():
    scripts = _sample_scripts()
    assert scripts, "no bundled reference answers found"
    for path in scripts:
        report = check_code(path.read_text(encoding="utf-8"))
        assert report.parsed and report.findings == [], (path.name, report.findings)


def test_manim_documentation_examples_have_no_attribute_or_import_findings():
    """Valid code from an independent source: the `.. manim::` examples in manim 0.19.0's own docstrings.

    Name findings are excluded: the docs build runs the examples with an implicit star import and extra names.
    """
    import manim

    root = Path(manim.__file__).parent
    examples = []
    for path in sorted(root.rglob("*.py")):
        if "opengl" in path.parts:
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            stripped = lines[i].lstrip()
            if not stripped.startswith(".. manim:: "):
                i += 1
                continue
            indent = len(lines[i]) - len(stripped)
            i += 1
            while i < len(lines) and lines[i].strip().startswith(":"):
                i += 1
            block = []
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                block.append(lines[i])
                i += 1
            examples.append((path.name, HEAD + textwrap.dedent("\n".join(block))))
    bad, parsed = [], 0
    for name, code in examples:
        report = check_code(code)
        parsed += report.parsed  # a few examples are doctest transcripts, not scripts
        bad += [(name, f) for f in report.findings if f.kind != "name"]
        bad += [(name, f) for f in report.keyword_findings]
    assert parsed > 300 and bad == []


# ---------------------------------------------------------------------------------------------- finding kinds

def test_import_findings():
    code = HEAD + textwrap.dedent("""
        from manim import FancyArrowThing, Circle
        from manim.utils.rate_functions import smooth, super_smooth
        from manim.utils import rate_functions
        import manim.utils.nonexistent.deeper
        from manim.imaginary import X
        import manim.utils.rate_functions as rf
    """)
    assert findings(code) == {("import", "FancyArrowThing"), ("import", "super_smooth"),
                              ("import", "manim.utils.nonexistent"), ("import", "manim.imaginary")}


def test_name_findings_capitalised_or_called_only():
    report = check_code(scene("""
        c = ImaginaryMobject()
        k = SOME_CONSTANT
        lower_call()
        lower_typo
        self.play(Create(c))
    """))
    assert {(f.kind, f.identifier) for f in report.findings} == {
        ("name", "ImaginaryMobject"), ("name", "SOME_CONSTANT"), ("name", "lower_call")}
    assert report.unresolved_names == ["lower_typo"]


def test_names_bound_anywhere_in_the_file_resolve():
    code = HEAD + textwrap.dedent("""
        import numpy as np
        from math import pi as PI
        Helper = 3
        def Maker(Arg, *Rest, Kw=1, **Opts):
            return Arg, Rest, Kw, Opts
        class A(Scene):
            def construct(self):
                (X, [Y, Z]) = 1, [2, 3]
                W: int = 4
                V = 0
                V += 1
                for Item in range(2):
                    pass
                with open(__file__) as Handle:
                    pass
                try:
                    pass
                except Exception as Err:
                    pass
                if (N := 3):
                    pass
                values = [Q for Q in range(3)]
                f = lambda L: L
                match 1:
                    case [Head, *Tail]:
                        pass
                    case {"k": Val, **Others}:
                        pass
                    case Captured:
                        pass
                global G
                G = 1
                self.add(Circle(), Helper, Maker, PI, np, X, Y, Z, W, V, Item, Handle, Err, N, values, f,
                         Head, Tail, Val, Others, Captured, G, print, __name__, __file__)
    """)
    assert findings(code) == set()


def test_module_attribute_findings():
    code = textwrap.dedent("""
        import manim
        import manim as mn
        import manim.utils.rate_functions
        class A(manim.Scene):
            def construct(self):
                a = mn.NotAThing
                b = manim.Circle
                c = manim.utils.rate_functions.smooth
                d = manim.utils.rate_functions.ultra_smooth
                e = manim.utils.rate_functions.__dict__
    """)
    assert findings(code) == {("module_attr", "NotAThing"), ("module_attr", "ultra_smooth")}


def test_class_attribute_findings():
    assert findings(scene("""
        a = Circle.from_nowhere
        b = Circle.__name__
        c = LineJointType.ROUND
        d = Square.get_center
        e = Circle.mro()
    """)) == {("class_attr", "from_nowhere")}


def test_instance_attribute_findings():
    assert findings(scene("""
        c = Circle(color=RED)
        c.make_glow()
        c.animate.wiggle_wobble()
        c.animate(run_time=2).shift_around()
        Square().bounce()
        c.shift(UP).also_not_checked()
        t = Text("hi")
        t.text, t.points, t.get_text(), t.set_whatever(3)
        t.get_nonsense()
        self.play(c.animate.shift(LEFT))
    """)) == {("instance_attr", "make_glow"), ("instance_attr", "wiggle_wobble"),
              ("instance_attr", "shift_around"), ("instance_attr", "bounce"), ("instance_attr", "get_nonsense")}


def test_instance_typing_requires_every_binding_to_be_the_same_class():
    assert findings(scene("""
        d = Dot()
        d = d.copy()
        d.totally_fake()
        e = Dot() if True else None
        e.also_fake()
        s = Square()
        s = Circle()
        s.third_fake()
    """)) == set()


def test_assigned_or_setattr_attributes_are_not_findings():
    assert findings(scene("""
        p = NumberPlane()
        p.my_attr = 3
        p.my_attr
        q = Square()
        setattr(q, "dyn", 1)
        q.dyn
    """)) == set()


def test_self_attributes_in_scene_and_mobject_subclasses():
    code = HEAD + textwrap.dedent("""
        class Card(VGroup):
            def __init__(self, **kw):
                super().__init__(**kw)
                self.extra = 1
            def grow(self):
                return self.extra + self.helper() + self.submobjects[0].width + self.bogus_attr
            def helper(self):
                return 0
        class Base(MovingCameraScene):
            def setup_titles(self):
                self.title = Text("t")
        class Main(Base):
            def construct(self):
                self.setup_titles()
                self.play(FadeIn(self.title))
                self.camera.frame.animate.scale(2)
                self.fancy_method()
                always_redraw(lambda: self.not_here)
        class Plain:
            def f(self):
                return self.anything
    """)
    assert findings(code) == {("instance_attr", "bogus_attr"), ("instance_attr", "fancy_method"),
                              ("instance_attr", "not_here")}


def test_unknown_base_class_disables_self_checks():
    code = HEAD + "import json\nclass A(json.JSONEncoder, Scene):\n    def f(self):\n        return self.nothing\n"
    assert findings(code) == set()


def test_keywords_are_reported_separately_and_never_counted():
    report = check_code(scene("""
        c = Circle(radius=1, colr=RED)
        a = Arrow(LEFT, RIGHT, tip_shape=ArrowSquareTip, buff=0)
        t = Text("x", font_size=30, fnt="Arial")
        self.play(Rotating(c, angle=PI), run_time=0.1)
    """))
    assert report.findings == []
    assert {f.identifier for f in report.keyword_findings} == {"Circle.colr", "Text.fnt"}


def test_each_kind_identifier_pair_counts_once():
    report = check_code(scene("""
        a = Ghost()
        b = Ghost()
        c = Circle()
        c.glow(); c.glow()
    """))
    assert [(f.kind, f.identifier, f.line) for f in report.findings] == [
        ("name", "Ghost", 5), ("instance_attr", "glow", 8)]
    assert report.static_count == 2
    row = report.to_row()
    assert row["hallucination_static_count"] == 2
    assert row["hallucination_findings"][0] == {"kind": "name", "identifier": "Ghost", "line": 5}


def test_user_definitions_shadow_manim_names():
    code = HEAD + textwrap.dedent("""
        class Circle:
            pass
        class A(Scene):
            def construct(self):
                Circle().anything_goes
                Circle.whatever
    """)
    assert findings(code) == set()


# ---------------------------------------------------------------------------------------------- scope of resolution

def test_star_import_from_an_importable_module_is_introspected():
    report = check_code(scene("x = sqrt(2) * Fraction(1, 2)", head=HEAD + "from math import *\n"))
    assert {(f.kind, f.identifier) for f in report.findings} == {("name", "Fraction")}
    assert report.name_findings_enabled


@pytest.mark.parametrize("module", ["no_such_module_xyz", "pytest", ".sibling"])
def test_star_import_that_is_not_introspected_disables_name_findings(module, caplog):
    report = check_code(scene("x = Anything() + whatever()", head=HEAD + f"from {module} import *\n"))
    assert report.findings == [] and not report.name_findings_enabled
    assert sorted(report.unresolved_names) == ["Anything", "whatever"]
    assert any(module.lstrip(".") in note for note in report.notes)
    assert "disabled" in caplog.text  # never silent


def test_without_star_import_manim_names_are_unresolved():
    code = "from manim import Scene\nclass A(Scene):\n    def construct(self):\n        self.add(Circle())\n"
    assert findings(code) == {("name", "Circle")}


def test_syntax_error_gives_no_findings():
    report = check_code("from manim import *\nclass A(Scene:\n    Ghost()\n")
    assert not report.parsed and report.findings == [] and report.static_count == 0


# ---------------------------------------------------------------------------------------------- runtime oracle

ATTRIBUTES = ["shift", "points", "width", "get_center", "set_fill", "animate", "submobjects", "get_width",
              "get_points", "set_anything", "get_glow", "glow", "make_smooth", "pulse", "text", "font_size",
              "original_text", "get_text", "n_points_per_cubic_curve", "fade_in", "add_updater", "rotate_about"]


def test_instance_attribute_verdicts_match_live_objects():
    """Independent oracle: `hasattr` on real instances decides which attributes exist."""
    import manim

    for cls_name, ctor in [("Circle", "Circle()"), ("Square", "Square()"), ("Text", 'Text("ab")'),
                           ("VGroup", "VGroup(Dot())")]:
        live = eval(ctor, vars(manim))  # noqa: S307 - constant expressions over manim's namespace
        for attr in ATTRIBUTES:
            exists = hasattr(live, attr)
            if exists and attr.startswith("get_"):
                try:  # Mobject's get_<x> only fails when called
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", DeprecationWarning)
                        getattr(live, attr)()
                except AttributeError:
                    exists = False
                except TypeError:
                    pass
            flagged = bool(findings(scene(f"v = {ctor}\nv.{attr}")))
            assert flagged is not exists, (cls_name, attr)


# ---------------------------------------------------------------------------------------------- corroboration

@pytest.mark.parametrize("text,expected", [
    ("AttributeError: Circle object has no attribute 'glow'", 1),
    ("nameerror: name 'ghost' is not defined", 1),        # case-insensitive
    ("ImportError: cannot import name 'Ghost' from 'manim'", 1),
    ("glowing failed; ghostly output", 0),                # whole words only
    ("ValueError: latex error converting to dvi", 0),
    ("glow and Ghost", 2),
    ("", 2),                                              # no runtime text: the static count
    ("   \n", 2),
])
def test_corroborated_count(text, expected):
    found = [Finding("instance_attr", "glow", 3), Finding("name", "Ghost", 4)]
    assert corroborated_count(found, text) == expected
    assert corroborated_count([f.to_dict() for f in found], text) == expected


def test_dotted_module_identifier_is_corroborated_by_the_import_error():
    report = check_code("import manim.utils.nonexistent\n")
    assert corroborated_count(report.findings, "ModuleNotFoundError: No module named 'manim.utils.nonexistent'") == 1
