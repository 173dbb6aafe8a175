"""audit/fastcopy.py: the shorter deepcopy gives the standard library's object graph, node by node."""

import copy

import manim
import numpy as np
import pytest

from prism_fast.audit import fastcopy
from prism_fast.audit.verdict import report_file

ATOMIC = fastcopy._ATOMIC


def _walk_ids(root) -> set:
    seen, stack = set(), [root]
    while stack:
        x = stack.pop()
        if type(x) in ATOMIC or id(x) in seen:
            continue
        seen.add(id(x))
        stack.extend(_children(x))
    return seen


def _children(x):
    if isinstance(x, np.ndarray):
        return list(x.ravel()) if x.dtype == object else []
    if isinstance(x, (list, tuple)):
        return list(x)
    if isinstance(x, dict):
        return [*x.keys(), *x.values()]
    out = list(vars(x).values()) if hasattr(x, "__dict__") else []
    for slot in getattr(type(x), "__slots__", ()):
        if hasattr(x, slot):
            out.append(getattr(x, slot))
    return out


def assert_same_graph(original, std, fast, shared_svg_paths: bool = False) -> int:
    """Both copies have the same shape as each other: same types, values, key order, and sharing (with each
    other's nodes and with the original's). With ``shared_svg_paths`` the fast copy's glyphs hold their
    original's ``path_obj`` itself. Walks the original and both copies in parallel; returns the nodes compared."""
    from manim.mobject.svg.svg_mobject import VMobjectFromSVGPath

    originals = _walk_ids(original)
    a_to_b: dict = {}
    b_to_a: dict = {}
    stack = [(original, std, fast, "root")]
    n = 0
    while stack:
        o, x, y, where = stack.pop()
        n += 1
        assert type(x) is type(y) is type(o), where
        if type(x) in ATOMIC:
            # deepcopy returns atomic values themselves; Mobject.__deepcopy__ makes a new original_id string
            assert x is y or (type(x) is str and x == y), where
            continue
        if id(x) in a_to_b or id(y) in b_to_a:
            assert a_to_b.get(id(x)) is y and b_to_a.get(id(y)) is x, f"sharing differs at {where}"
            continue
        a_to_b[id(x)], b_to_a[id(y)] = y, x
        assert (id(x) in originals) == (id(y) in originals), f"one copy shares an original at {where}"
        if id(x) in originals:
            assert x is y is o, where
            continue
        if isinstance(x, np.ndarray):
            assert (x.dtype, x.shape, x.strides) == (y.dtype, y.shape, y.strides), where
            assert x.flags.c_contiguous == y.flags.c_contiguous and x.flags.writeable == y.flags.writeable, where
            if x.dtype != object:
                assert x.tobytes() == y.tobytes() == o.tobytes(), where
                continue
        if isinstance(x, dict):
            assert len(x) == len(y) == len(o), where
            for (ko, vo), (kx, vx), (ky, vy) in zip(o.items(), x.items(), y.items()):
                stack.append((ko, kx, ky, f"{where}.key"))
                stack.append((vo, vx, vy, f"{where}[{kx!r}]"))
            continue
        if hasattr(x, "__dict__") and not isinstance(x, (list, tuple)):
            assert list(vars(x)) == list(vars(y)), where  # (the copies gain original_id)
            ov = vars(o)
            if shared_svg_paths and isinstance(x, VMobjectFromSVGPath):
                assert y.path_obj is o.path_obj and x.path_obj is not o.path_obj, where
                a_to_b[id(x.path_obj)], b_to_a[id(y.path_obj)] = y.path_obj, x.path_obj
            for k in vars(x):
                if not (k == "path_obj" and shared_svg_paths and isinstance(x, VMobjectFromSVGPath)):
                    stack.append((ov.get(k, vars(x)[k]), vars(x)[k], vars(y)[k], f"{where}.{k}"))
            for slot in getattr(type(x), "__slots__", ()):
                if hasattr(x, slot):
                    stack.append((getattr(o, slot), getattr(x, slot), getattr(y, slot), f"{where}.{slot}"))
            continue
        co, cx, cy = _children(o), _children(x), _children(y)
        assert len(cx) == len(cy) == len(co), where
        for i, (c, a, b) in enumerate(zip(co, cx, cy)):
            stack.append((c, a, b, f"{where}/{type(x).__name__}:{i}"))
    return n


def _mobjects():
    from manim import (Arrow, Axes, Brace, Circle, DecimalNumber, Dot, MathTex, NumberPlane, Square, Text,
                       ValueTracker, VGroup, always_redraw)

    tracker = ValueTracker(1.5)
    square = Square()
    shared = VGroup(square, Circle(), square)  # the same submobject twice
    dot = Dot()
    dot.add_updater(lambda m, dt: m.shift(dt * np.array([1.0, 0.0, 0.0])))
    redraw = always_redraw(lambda: Circle(radius=tracker.get_value()))
    axes = Axes(x_range=[0, 3, 1], y_range=[0, 2, 1], axis_config={"include_numbers": True})
    return {"MathTex": MathTex(r"\int_0^1 x^2\,dx", "=", r"\frac13"), "Text": Text("Ab 中文"),
            "DecimalNumber": DecimalNumber(3.14159, num_decimal_places=3), "Axes": axes,
            "NumberPlane": NumberPlane(), "shared": shared, "updater": dot, "always_redraw": redraw,
            "ValueTracker": tracker, "Arrow": Arrow(), "Brace": Brace(square), "graph": axes.plot(np.sin)}


@pytest.fixture(scope="module")
def mobjects(tmp_path_factory):
    from manim import tempconfig

    with tempconfig({"media_dir": str(tmp_path_factory.mktemp("media"))}):
        yield _mobjects()


@pytest.mark.parametrize("share", [False, True], ids=["exact", "shared_svg_paths"])
def test_copies_are_the_standard_librarys(mobjects, share):
    from manim.mobject.mobject import Mobject

    real = Mobject.__deepcopy__
    for name, mob in mobjects.items():
        std = copy.deepcopy(mob)
        assert fastcopy.install(share_svg_paths=share)
        try:
            fast = copy.deepcopy(mob)
        finally:
            Mobject.__deepcopy__ = real
        assert std is not mob and fast is not mob
        assert std.original_id == fast.original_id == str(id(mob))
        nodes = assert_same_graph(mob, std, fast, shared_svg_paths=share)
        assert nodes > 3, name


def test_plain_values_and_cycles():
    class Node:
        def __init__(self):
            self.items = [1.5, "s", None, (1, 2), (1, [2])]
            self.me = self
            self.table = {"k": np.arange(6.0).reshape(2, 3)[:, ::2], "objs": np.array([[1], None], dtype=object)}

    original = {"a": Node(), "shared": [0.1]}
    original["b"] = original["shared"]
    original["t"] = (original["shared"], original["shared"])
    std, fast = copy.deepcopy(original), fastcopy.deepcopy(original, {})
    assert_same_graph(original, std, fast)
    assert fast["a"].me is fast["a"] and fast["b"] is fast["shared"] and fast["t"][0] is fast["shared"]
    assert fast["a"].items[3] is original["a"].items[3]  # a tuple of atoms is its own copy, as in copy.deepcopy


def test_install_replaces_mobject_deepcopy_only_for_its_version(monkeypatch):
    from manim.mobject.mobject import Mobject

    real = Mobject.__deepcopy__
    try:
        meta = {}
        monkeypatch.setattr(manim, "__version__", "0.0.1")
        assert fastcopy.install(meta) is False and Mobject.__deepcopy__ is real
        assert meta["fastcopy"].startswith("off")
        monkeypatch.setattr(manim, "__version__", fastcopy.MANIM_VERSION)
        assert fastcopy.install(meta) is True and Mobject.__deepcopy__ is fastcopy.mobject_deepcopy
    finally:
        Mobject.__deepcopy__ = real


# A copy's glyph path mutated in place through a computed attribute name, then the original's path rebuilt into a
# glyph: with shared paths the rebuilt glyph moved (dist 333.06 instead of 33.06 in the report)
PATH_BY_COMPUTED_NAME = '''from manim import *
from manim.mobject.svg.svg_mobject import VMobjectFromSVGPath


class S(Scene):
    def construct(self):
        a = Text("A", font_size=96)
        b = a.copy()
        key = "path" + "_obj"
        p = vars(b[0])[key]
        p *= "translate(300, 0)"
        p.reify()
        g = VMobjectFromSVGPath(vars(a[0])[key]).scale(0.05)
        self.play(FadeIn(g))
        self.wait(0.2)
'''


def test_no_shared_paths_for_a_script_that_can_reach_them_by_a_computed_name(tmp_path):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert not fastcopy.may_share_svg_paths(PATH_BY_COMPUTED_NAME)
    assert not fastcopy.may_share_svg_paths("x = glyph.path_obj")
    assert fastcopy.may_share_svg_paths("from manim import *\nclass A(Scene):\n    def construct(self):\n"
                                        "        self.play(Write(MathTex('x^2')))\n        t = ValueTracker(0)\n"
                                        "        d = always_redraw(lambda: DecimalNumber(t.get_value()))\n")
    reports = {}
    for name, text in (("computed", PATH_BY_COMPUTED_NAME), ("named", "# path_obj\n" + PATH_BY_COMPUTED_NAME)):
        work = tmp_path / name
        work.mkdir()
        script = work / "s.py"
        script.write_text(text, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(PYTHONPATH=str(root), AUDIT_SAVE_IMAGES="0", TMPDIR=str(tmp_path), HOME=str(work),
                   MPLCONFIGDIR=str(work / "mpl"))
        proc = subprocess.run([sys.executable, "-m", "prism_fast.audit.child", str(script), "--observations-out",
                               str(work / "obs.json"), "--output-dir", str(work / "out"), "--meta-out",
                               str(work / "meta.json")], cwd=work, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert report_file(work / "obs.json", work / "report.json")  # the verdict is the parent's (verdict.py)
        assert "shared" not in json.loads((work / "meta.json").read_text())["fastcopy"]
        reports[name] = json.loads((work / "report.json").read_text())
    # the copies are the standard library's: the rebuilt glyph stays where the unmutated path puts it
    assert reports["computed"] == reports["named"]
    assert reports["computed"]["S"]["Segment_0"]["out_of_bounds"][0]["dist"] < 100


def test_shared_paths_only_for_manims_glyph_classes_and_parsed_paths(mobjects, tmp_path):
    """The red team's audit-copier findings: a planted value or a script's subclass shared its path; a copy near
    the recursion limit and an exception through the copier did not trip the fast paths' wire."""
    import sys

    from manim.mobject.mobject import Mobject
    from manim.mobject.svg.svg_mobject import VMobjectFromSVGPath

    from prism_fast.execute import fastpaths

    real = Mobject.__deepcopy__
    glyph = mobjects["MathTex"].copy()[0][0]
    assert fastcopy.install(share_svg_paths=True)
    marker = tmp_path / fastpaths.MARKER_NAME
    try:
        assert copy.deepcopy(glyph).path_obj is glyph.path_obj
        planted = copy.copy(glyph)
        vars(planted)["path_obj"] = [1, [2]]
        assert copy.deepcopy(planted).path_obj is not planted.path_obj

        class Glyph(VMobjectFromSVGPath):
            pass

        own = Glyph.__new__(Glyph)
        own.__dict__.update(vars(glyph))
        assert copy.deepcopy(own).path_obj is not glyph.path_obj

        fastpaths._MARKER = str(marker)

        def deep(n):
            return copy.deepcopy(glyph) if n == 0 else deep(n - 1)

        depth = 0
        frame = sys._getframe()
        while frame is not None:
            depth, frame = depth + 1, frame.f_back
        deep(sys.getrecursionlimit() - depth - fastpaths.HEADROOM // 2)
        assert fastpaths.tripped(tmp_path)
        marker.unlink()
        fastpaths._MARKER = str(marker)
        broken = copy.copy(glyph)
        broken.stream = (i for i in range(2))
        with pytest.raises(TypeError):
            copy.deepcopy(broken)
        assert fastpaths.tripped(tmp_path)
    finally:
        fastpaths._MARKER = None
        Mobject.__deepcopy__ = real


def test_a_coding_declaration_other_than_utf8_is_a_static_reason():
    """The red team hid code in a `# coding: utf-7` comment: Python decodes the file so, every analysis reads UTF-8."""
    from prism_fast.audit.onepass_rule import static_reasons

    body = "from manim import *\nclass A(Scene):\n    def construct(self):\n        self.add(Circle())\n"
    assert static_reasons(body) == []
    assert static_reasons("# -*- coding: utf-7 -*-\n" + body) == ["source_encoding:utf-7"]
    assert static_reasons("#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\n" + body) == \
        ["source_encoding:iso-8859-1"]
    assert static_reasons("# coding: utf-8\n" + body) == []
    assert static_reasons(body + "# coding: utf-7\n") == []  # (only the first two lines count)
    # red team 3: str.splitlines splits on these too, Python does not (the declaration is on the real line 2)
    for sep in ("\x1c", "\x1d", "\x1e", "\x0b", "\x0c"):
        assert static_reasons(f"#{sep}#\n# coding: utf-7\n" + body) == ["source_encoding:utf-7"], repr(sep)
    assert static_reasons("x = 1\r# coding: utf-7\n" + body) == []  # (Python ignores it after a line of code)
    assert not fastcopy.may_share_svg_paths("# coding: utf-7\n" + body)
