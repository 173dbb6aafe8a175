"""The one-pass patch check's library table (audit/onepass_child.py ``_Table``): scanned once in the prefork server,
brought up to date in each render child right before the script's module runs, re-taken after a check that
accepted every difference. It must always equal a fresh ``_library_callables()`` scan, and a script's patch must
still be found whatever was accepted before it.

In-process tests change real manim modules and classes (restored by ``monkeypatch``); the last test renders
real scripts through a prefork worker with the one-pass observers."""

from __future__ import annotations

import sys
import types

import pytest

from prism_fast.audit import onepass_child as oc


def _identical(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k] is b[k] for k in b)


@pytest.fixture()
def manim_modules():
    import manim
    from manim.mobject.geometry import polygram
    from manim.utils import bezier

    return manim, polygram, bezier


@pytest.fixture(params=["version_tags", "entry_by_entry"])
def watch_kind(request, monkeypatch):
    """Both watches: one version tag per namespace (this interpreter), and the exact entry-by-entry comparison used
    where the tags are not proven (another interpreter): the same findings."""
    if request.param == "entry_by_entry":
        monkeypatch.setattr(oc, "_VERSIONS", None)
    else:
        assert oc._VERSIONS is not None
    return request.param


def test_the_table_equals_a_fresh_scan_before_and_after_trusted_changes(manim_modules, monkeypatch, watch_kind):
    manim, polygram, bezier = manim_modules
    table = oc._Table()
    base, watch = table.current()
    assert _identical(base, oc._library_callables())
    assert not watch.changed()

    # what trusted code does between the server's scan and the script: rebinds a module function and a class
    # method, adds a class attribute, deletes a name, imports a module, drops one from sys.modules
    monkeypatch.setattr(bezier, "interpolate", lambda *a: None)
    monkeypatch.setattr(manim.Mobject, "copy", lambda self: self)
    monkeypatch.setattr(polygram.Square, "get_family", lambda self, recurse=True: [self], raising=False)
    monkeypatch.delattr(bezier, "mid")
    fake = types.ModuleType("manim._patch_table_test")
    exec("class K:\n    def f(self):\n        return 1\n\ndef g():\n    return 2\n", fake.__dict__)
    fake.K.__module__ = fake.__name__
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    monkeypatch.delitem(sys.modules, "manim.utils.space_ops")
    assert watch.changed()

    now, watch_now = table.current()
    fresh = oc._library_callables()
    assert _identical(now, fresh)
    # (the table is a view of its parts, not a dict: every way the checks read it gives the scan's content)
    assert len(now) == len(fresh) and all(fresh[k] is v for k, v in now.items())
    assert sorted(map(id, now.values())) == sorted(map(id, fresh.values()))
    assert ("manim._no_such_module", "", "f") not in now and now.get(("manim._no_such_module", "", "f")) is None
    assert (fake.__name__, "K", "f") in now and ("manim.utils.space_ops", "", "rotate_vector") not in now
    assert not watch_now.changed()
    assert set(oc._patched(base, now)) >= {"manim.utils.bezier.interpolate", "manim.mobject.mobject.Mobject.copy",
                                           "manim.mobject.geometry.polygram.Square.get_family"}
    # and unchanged namespaces are not scanned again: the same dict when nothing changed since
    assert table.current()[0] is now


def test_an_update_while_sys_modules_is_unchanged_equals_a_fresh_scan(manim_modules, monkeypatch):
    """While sys.modules keeps its version tag (no module imported, dropped or rebound since the last update -- a
    render child's first update, right before the script's module), an update walks the parts' namespace tags
    instead of every module object: the same table as a fresh scan, the same findings; once sys.modules changes, the
    full walk again."""
    manim, polygram, bezier = manim_modules
    table = oc._Table()
    base, watch = table.current()
    assert table.modules_tag == oc._VERSIONS.tag(sys.modules)
    monkeypatch.setattr(polygram.Square, "get_family", lambda self, recurse=True: [self], raising=False)
    monkeypatch.setattr(bezier, "interpolate", lambda *a: None)
    assert oc._VERSIONS.tag(sys.modules) == table.modules_tag and watch.changed()
    now, watch_now = table.current()
    assert _identical(now, oc._library_callables()) and not watch_now.changed()
    assert set(oc._patched(base, now)) == {"manim.utils.bezier.interpolate",
                                           "manim.mobject.geometry.polygram.Square.get_family"}
    # a module rebound under its name changes sys.modules: the full walk, which sees the new module's namespace
    other = types.ModuleType(bezier.__name__)
    exec("def interpolate(*a):\n    return 0\n", other.__dict__)
    monkeypatch.setitem(sys.modules, bezier.__name__, other)
    assert oc._VERSIONS.tag(sys.modules) != table.modules_tag
    later, _ = table.current()
    assert _identical(later, oc._library_callables())
    assert later[(bezier.__name__, "", "interpolate")] is other.interpolate


def test_dict_version_tags_are_in_use_here_and_see_every_kind_of_change(manim_modules, monkeypatch):
    """The watch compares one version tag per namespace (CPython 3.11, the interpreter this project pins): proven at
    import on probes, and here on a real manim module and class. A read gives no new tag; every write does."""
    _, polygram, bezier = manim_modules
    assert sys.version_info[:2] == (3, 11) and oc._VERSIONS is not None
    v = oc._VERSIONS
    mod_ns, cls_ns = vars(bezier), v.raw(vars(polygram.Square))
    before = (v.tag(mod_ns), v.tag(cls_ns))
    _ = bezier.interpolate, polygram.Square.get_family, dict(vars(polygram.Square))
    assert (v.tag(mod_ns), v.tag(cls_ns)) == before
    seen = set(before)
    for change in (lambda: monkeypatch.setattr(bezier, "interpolate", lambda *a: None),
                   lambda: monkeypatch.setattr(bezier, "_a_new_name", 1, raising=False),
                   lambda: monkeypatch.delattr(bezier, "mid"),
                   lambda: monkeypatch.setattr(polygram.Square, "get_family", lambda s, r=True: [s], raising=False),
                   lambda: monkeypatch.setattr(polygram.Square, "side_length", 3.0, raising=False)):
        change()
        now = (v.tag(mod_ns), v.tag(cls_ns))
        assert now != before and not seen & (set(now) - set(before))
        seen |= set(now)
        before = now


def test_namespaces_that_are_not_a_module_dict_are_watched_too(monkeypatch):
    """``sys.modules`` may hold a class (``typing.io``: ``vars()`` is a mappingproxy, its tag is the class dict's)
    or an object whose ``__dict__`` is some other mapping (no tag: that part is compared entry by entry)."""

    class ClassModule:
        def f(self):
            return 1

    class Namespace(dict):
        pass

    class OddModule:
        @property
        def __dict__(self):
            return self._ns

    odd = OddModule()
    odd._ns = Namespace(g=lambda: 2)
    monkeypatch.setitem(sys.modules, "manim._patch_table_class_module", ClassModule)
    monkeypatch.setitem(sys.modules, "manim._patch_table_odd_module", odd)
    table = oc._Table()
    base, watch = table.current()
    assert table.parts["manim._patch_table_class_module"].tags  # the class dict behind the proxy
    assert not table.parts["manim._patch_table_odd_module"].tags  # a dict subclass: no tag read from it
    assert not watch.changed()
    odd._ns["g"] = lambda: 3
    assert watch.changed()
    now, watch2 = table.current()
    assert oc._patched_since(base, watch, now, watch2) == ["manim._patch_table_odd_module.g"]
    monkeypatch.setattr(ClassModule, "f", lambda self: 4)
    assert watch2.changed()
    now2, watch3 = table.current()
    assert oc._patched_since(now, watch2, now2, watch3) == ["manim._patch_table_class_module.f"]


def test_a_class_change_that_keeps_its_size_is_seen(manim_modules, monkeypatch, watch_kind):
    """Red-team case the entry-by-entry watch missed: delete a non-callable class attribute and bind an inherited
    method on the class in the same gap (the namespace's size and every baseline callable unchanged)."""
    _, polygram, _ = manim_modules
    monkeypatch.setattr(oc, "_TABLE", oc._Table())
    state = oc._State({"side_file": None, "seal": None, "scene": "S", "audit_cfg": {}})
    state.baseline, state.watch = oc._baseline()
    assert "get_family" not in vars(polygram.Square)
    monkeypatch.setattr(polygram.Square, "_a_constant", 1, raising=False)
    state.check_patches()  # accepted (not callable): the new baseline has it
    assert state.reasons == []
    monkeypatch.delattr(polygram.Square, "_a_constant")
    monkeypatch.setattr(polygram.Square, "get_family", lambda self, recurse=True: [self], raising=False)
    state.check_patches()
    assert state.reasons == ["script_patch:manim.mobject.geometry.polygram.Square.get_family"]


def test_data_a_library_calls_through_is_watched_too(manim_modules, monkeypatch, watch_kind):
    """Red team: the check compared callables only, so a module's or a class's *data* rebound to a script object
    passed (accepted, the baseline re-taken with it): ``manim.mobject.mobject.it = Chain()`` (``get_family`` calls
    ``it.chain`` at every frame of the render's camera), a new module global shadowing a builtin
    (``mobject.len = counted``: the module's functions find it before the builtin), a class's data attribute set
    to a script number. Plain data stays an accepted difference."""
    import collections
    import itertools
    import threading

    import numpy as np
    from manim.mobject import mobject as mobject_module

    manim, polygram, bezier = manim_modules
    monkeypatch.setattr(oc, "_TABLE", oc._Table())
    calls = []

    class Chain:
        def chain(self, *families):
            calls.append(len(families))
            return itertools.chain(*families)

    class Number(float):
        def __mul__(self, other):
            calls.append(other)
            return float(self) * other

    def counted(x):
        calls.append(x)
        return len(x)

    def reasons(change) -> list[str]:
        # (this file is "the script": Chain, Number and counted are script code)
        state = oc._State({"side_file": None, "seal": None, "scene": "S", "audit_cfg": {}, "code_file": __file__})
        state.baseline, state.watch = oc._baseline()
        with monkeypatch.context() as m:
            change(m)
            state.check_patches()
            if change is not plain:
                manim.VGroup(manim.Square()).get_family()  # the patch is live: what the camera calls runs it
        return state.reasons

    def plain(m):
        m.setattr(polygram.Square, "_a_constant", (1, "a", None), raising=False)
        m.setattr(bezier, "_a_float", np.float64(2.0), raising=False)
        m.setattr(bezier, "_an_array", np.zeros((2, 3)), raising=False)
        m.setattr(bezier, "_a_module", np, raising=False)  # a library module as imported
        # library objects a library binds lazily (tqdm's lock and monitor thread on its class)
        m.setattr(polygram.Square, "_a_lock", threading.RLock(), raising=False)
        m.setattr(bezier, "_a_square", manim.Square(), raising=False)

    assert reasons(plain) == []
    assert calls == []
    assert reasons(lambda m: m.setattr(mobject_module, "it", Chain())) == [
        "script_patch:manim.mobject.mobject.it"]
    assert calls, "the rebound data was not live"
    assert reasons(lambda m: m.setattr(mobject_module, "len", counted, raising=False)) == [
        "script_patch:manim.mobject.mobject.len"]
    assert reasons(lambda m: m.setattr(manim.VMobject, "sheen_factor", Number(0.0))) == [
        "script_patch:manim.mobject.types.vectorized_mobject.VMobject.sheen_factor"]
    assert "script_patch:manim.utils.bezier._box" in reasons(
        lambda m: m.setattr(bezier, "_box", [Chain()], raising=False))  # a container of script objects
    holder = manim.Square()
    holder.chain = Chain().chain  # a library object holding script code
    assert reasons(lambda m: m.setattr(mobject_module, "it", holder)) == ["script_patch:manim.mobject.mobject.it"]
    assert reasons(lambda m: m.setattr(bezier, "_a_hook", calls.append, raising=False)) == [
        "script_patch:manim.utils.bezier._a_hook"]  # a builtin method acting on the script's list
    assert reasons(lambda m: m.setattr(bezier, "_a_hook", collections.deque().append, raising=False)) == [
        "script_patch:manim.utils.bezier._a_hook"]


def test_the_check_runs_no_script_code_and_sees_a_script_metaclass(tmp_path):
    """Red team: the check looked at classes by attribute (``cls.__mro__``, ``vars(cls)``), which a script
    metaclass's ``__getattribute__`` answers -- script code run by the check itself, at every play of the one-pass
    render only, with a made-up MRO that hid the class's methods. Now read through ``type``'s own descriptors: no
    script code runs, and the metaclass's methods count as the class's."""
    import manim

    code_file = str(tmp_path / "scene.py")
    source = (
        "calls = [0]\n"
        "class Meta(type):\n"
        "    def __getattribute__(cls, name):\n"
        "        calls[0] += 1\n"
        "        if name[2:-2] == 'mro':\n"
        "            return (object,)\n"
        "        if name[2:-2] == 'dict':\n"
        "            return {}\n"
        "        raise AttributeError(name)\n"
        "class Tag(metaclass=Meta):\n"
        "    pass\n")
    ns: dict = {}
    exec(compile(source, code_file, "exec"), ns)
    scene = manim.Scene()
    holder = manim.Dot()
    holder.tag = ns["Tag"]()
    scene.add(holder)
    assert oc._instance_patches(scene, code_file) == ["Dot().tag:script_object"]
    assert ns["calls"] == [0]
    assert oc._script_methods(ns["Tag"], code_file) == ["__getattribute__"] and ns["calls"] == [0]


def test_a_callable_is_judged_by_its_class_before_it_is_read(tmp_path):
    """Red team: ``_script_callable`` read ``value.func`` from anything that was a ``functools.partial`` -- a script
    subclass whose ``func`` is a script descriptor ran script code in the check itself (in the one-pass render
    only) and answered with a library function. Its class is judged first; the subclass is script code."""
    import functools

    import manim

    code_file = str(tmp_path / "scene.py")
    source = (
        "import functools\n"
        "calls = [0]\n"
        "class Func:\n"
        "    def __get__(self, obj, owner=None):\n"
        "        calls[0] += 1\n"
        "        return abs\n"
        "class P(functools.partial):\n"
        "    func = Func()\n"
        "def plain(t):\n"
        "    return t\n")
    ns: dict = {}
    exec(compile(source, code_file, "exec"), ns)
    assert oc._script_callable(ns["P"](manim.rate_functions.smooth), code_file)
    assert ns["calls"] == [0]
    # what it judged before is judged the same
    assert oc._script_callable(functools.partial(ns["plain"], 1), code_file)
    assert not oc._script_callable(functools.partial(manim.rate_functions.smooth), code_file)
    assert oc._script_callable(manim.np.vectorize(ns["plain"]), code_file)
    assert not oc._script_callable(manim.rate_functions.smooth, code_file)


def test_comparing_only_the_changed_modules_finds_what_the_full_comparison_finds(manim_modules, monkeypatch, watch_kind):
    manim, polygram, bezier = manim_modules
    table = oc._Table()
    base, watch = table.current()
    monkeypatch.setattr(bezier, "interpolate", lambda *a: None)  # rebound
    monkeypatch.setattr(polygram.Square, "get_family", lambda self, recurse=True: [self], raising=False)  # new
    monkeypatch.delattr(manim.Mobject, "get_center")  # deleted from a class
    monkeypatch.setattr(polygram, "_not_callable", 1, raising=False)  # not a finding
    fake = types.ModuleType("manim._patch_table_test2")
    exec("def g():\n    return 2\n", fake.__dict__)
    monkeypatch.setitem(sys.modules, fake.__name__, fake)  # new module: not a finding
    now, watch_now = table.current()
    full = oc._patched(base, now)
    assert set(full) == {"manim.utils.bezier.interpolate", "manim.mobject.geometry.polygram.Square.get_family",
                         "manim.mobject.mobject.Mobject.get_center"}
    assert oc._patched_since(base, watch, now, watch_now) == full
    # unchanged modules are the very same parts: only the changed ones are compared
    changed = {n for n in watch_now.parts if watch.parts.get(n) is not watch_now.parts[n]}
    assert changed == {"manim.utils.bezier", "manim.mobject.geometry.polygram", "manim.mobject.mobject",
                       fake.__name__}
    assert oc._patched_since(now, watch_now, now, watch_now) == []


def test_an_accepted_difference_does_not_hide_a_later_patch(manim_modules, monkeypatch, watch_kind):
    manim, polygram, _ = manim_modules
    monkeypatch.setattr(oc, "_TABLE", oc._Table())
    state = oc._State({"side_file": None, "seal": None, "scene": "S", "audit_cfg": {}})
    state.baseline, state.watch = oc._baseline()

    # a non-callable cached on a library class (copyreg does this on the first copy of a slotted class)
    monkeypatch.setattr(polygram.Square, "__slotnames__", [], raising=False)
    assert state.watch.changed()
    state.check_patches()
    assert state.reasons == []
    assert not state.watch.changed()  # the accepted table is the baseline now: later plays take the cheap path

    monkeypatch.setattr(polygram.Square, "get_family", lambda self, recurse=True: [self], raising=False)
    state.check_patches()
    assert state.reasons == ["script_patch:manim.mobject.geometry.polygram.Square.get_family"]


# scripts that patch manim at module level (before any play) and inside construct (between two plays): both run
# after the baseline is taken, so both are found
MODULE_PATCH = '''from manim import *

real = Square.get_family


def counted(self, recurse=True):
    return real(self, recurse)


Square.get_family = counted


class S(Scene):
    def construct(self):
        self.play(Create(Square()))
'''

LATE_PATCH = '''from manim import *


class S(Scene):
    def construct(self):
        self.play(Create(Circle()))
        Circle.get_family = lambda self, recurse=True: [self]
        self.play(FadeOut(Circle()))
'''

# red team: a module function deleted (an accepted difference, the baseline re-taken without it) at a remove, then
# bound again to a counter the camera calls at every frame; and a class deleted from its defining module, then
# patched (scanned no more). Both counted frames, the render's 15 against the audit-only run's, into a position
DELETE_READD = '''from manim import *
import manim.camera.camera as cc

calls = [0]


class S(Scene):
    def construct(self):
        a = Square()
        self.add(a)
        keep = cc.extract_mobject_family_members
        del cc.extract_mobject_family_members
        self.remove(a)

        def counted(*args, **kwargs):
            calls[0] += 1
            return keep(*args, **kwargs)

        cc.extract_mobject_family_members = counted
        self.play(Create(Circle()))
        self.play(FadeIn(Text("x").shift(calls[0] * RIGHT)))
'''

DELETE_CLASS = '''from manim import *
import manim.camera.camera as cc

calls = [0]
real = Camera.capture_mobjects


def counted(self, *args, **kwargs):
    calls[0] += 1
    return real(self, *args, **kwargs)


class S(Scene):
    def construct(self):
        del cc.Camera
        Camera.capture_mobjects = counted
        self.play(Create(Square()))
        self.play(FadeIn(Text("x").shift(calls[0] * RIGHT)))
'''

# red team: the render logs what the audit-only run does not (a partial movie file written, at every play): a
# script handler on manim's logger counted the render's records into a position
LOG_HANDLER = '''from manim import *

calls = [0]


class Counter:
    level = 0

    def handle(self, record):
        calls[0] += 1


logger.addHandler(Counter())


class S(Scene):
    def construct(self):
        self.play(Create(Square()))
        self.play(FadeIn(Text("x").shift(calls[0] * RIGHT)))
'''

# red team: no library patch at all -- a script np.ndarray subclass as a mobject's points, whose __array_finalize__
# the camera runs at every frame, counted the frames
ARRAY_VIEW = '''from manim import *
import numpy as np

calls = [0]


class A(np.ndarray):
    def __array_finalize__(self, obj):
        calls[0] += 1


class S(Scene):
    def construct(self):
        sq = Square()
        sq.points = sq.points.view(A)
        self.add(sq)
        self.play(sq.animate.shift(RIGHT))
        self.play(FadeIn(Text("x").shift(min(calls[0], 200) * 0.1 * RIGHT)))
'''

# red team: a class of a library outside the old watch list (pathlib, reached as manim.utils.file_ops.Path),
# which the render's file writer calls at every play and the audit-only run does not
PATH_PATCH = '''from manim import *
import manim.utils.file_ops as fo

calls = [0]
real = fo.Path.with_suffix


def counted(*a, **k):
    calls[0] += 1
    return real(*a, **k)


fo.Path.with_suffix = counted


class S(Scene):
    def construct(self):
        self.play(Create(Square()))
        self.play(FadeIn(Square().shift(calls[0] * RIGHT)))
'''

# red team: library data rebound to a script object (no callable of the library touched): Mobject.get_family calls
# `it.chain` at every frame of the render's camera, so the render's frames were counted into a position
DATA_REBIND = '''from manim import *
import itertools
import manim.mobject.mobject as mm

calls = [0]


class Chain:
    def chain(self, *families):
        calls[0] += 1
        return itertools.chain(*families)


mm.it = Chain()


class S(Scene):
    def construct(self):
        self.play(Create(Square()))
        self.play(FadeIn(Square().shift(min(calls[0], 3000) * 0.001 * RIGHT)))
'''

# red team: a manim function rewritten in place -- functools copies attributes named by strings, so
# `update_wrapper(Mobject.get_family, f, assigned=("__code__", "__defaults__"))` gave the library function the
# script's code and defaults (no namespace changes: no patch check can see it), counting the camera's frames. The
# static rule refuses functools' attribute copiers and dunder strings
CODE_REWRITE = '''from manim import *
import functools

calls = [0]


def get_family(self, recurse=True, calls=calls):
    calls[0] += 1
    return remove_list_redundancies([self] + list(it.chain(*[x.get_family() for x in self.submobjects])))


functools.update_wrapper(Mobject.get_family, get_family, assigned=("__code__", "__defaults__"), updated=())


class S(Scene):
    def construct(self):
        self.play(Create(Square()))
        self.play(FadeIn(Square().shift(min(calls[0], 3000) * 0.001 * RIGHT)))
'''

# red team: manim's loader called again from the script with a file of its choosing (a standard-library module by
# path) made that file the script every script-code guard compares against: the script's own per-frame rate_func
# passed as library code and counted the render's frames
SECOND_MODULE = '''from manim import *
from manim.utils.module_ops import get_module
import manim.utils.file_ops as fo

calls = [0]


def counted(t):
    calls[0] += 1
    return t


class S(Scene):
    def construct(self):
        get_module(fo.Path("{path}"))
        self.play(Create(Square(), rate_func=counted))
        self.play(FadeIn(Square().shift(min(calls[0], 3000) * 0.001 * RIGHT)))
'''

# red team: a patch no check sees -- the file writer's combine_to_movie (which the render runs after construct and
# the audit-only run does not) rebound at the end of construct to a script function that first restores it, then
# plays once more, moving the overlapping square away: a clean last snapshot in the one-pass render only
TAIL_PLAY = '''from manim import *


class S(Scene):
    def construct(self):
        a = Square(side_length=3, fill_opacity=0.8, color=BLUE)
        b = Square(side_length=3, fill_opacity=0.8, color=RED).shift(RIGHT * 0.5)
        self.play(FadeIn(a), FadeIn(b))
        real = SceneFileWriter.combine_to_movie
        scene = self

        def combine(writer):
            SceneFileWriter.combine_to_movie = real
            scene.play(b.animate.shift(RIGHT * 3.5))
            return real(writer)

        SceneFileWriter.combine_to_movie = combine
'''

# red team: script code run by the check itself -- a metaclass's __getattribute__ answers the check's look at a
# class (`cls.__mro__`) with a made-up MRO that hides its methods, so it found nothing and ran the script's counter
# at every play: the one-pass render's checks (none in the audit-only run) counted into a position
META_HOOK = '''from manim import *

calls = [0]


class Meta(type):
    def __getattribute__(cls, name):
        calls[0] += 1
        if name[2:-2] == "mro":
            return (object,)
        if name[2:-2] == "dict":
            return {}
        raise AttributeError(name)


class Tag(metaclass=Meta):
    pass


class S(Scene):
    def construct(self):
        holder = Dot()
        holder.tag = Tag()
        self.add(holder)
        self.play(Create(Square()))
        self.play(FadeIn(Square().shift(min(calls[0], 3) * 2 * RIGHT)))
'''

# red team: the check read `rate_func.func` from a script functools.partial subclass whose `func` is a script
# descriptor: script code run by the check at every play (the one-pass render only), answering with manim's smooth
PARTIAL_HOOK = '''from manim import *
import functools

calls = [0]


class Func:
    def __get__(self, obj, owner=None):
        calls[0] += 1
        return smooth


class P(functools.partial):
    func = Func()


class S(Scene):
    def construct(self):
        self.play(Create(Square(), rate_func=P(smooth)))
        self.play(FadeIn(Square().shift(min(calls[0], 3) * 2 * RIGHT)))
'''

# red team: a library function's defaults replaced through manim's Mobject.set under a lowercase alias with a
# computed name (no namespace changes, no static rule sees it): a script object's __bool__ in VMobject's defaults
DEFAULTS_SET = '''from manim import *

calls = [0]


class Flag:
    def __bool__(self):
        calls[0] += 1
        return False


setter = Mobject
setter.set(VMobject.get_stroke_rgbas, **{"_" * 2 + "defaults" + "_" * 2: (Flag(),)})


class S(Scene):
    def construct(self):
        self.play(Create(Square()))
        self.play(FadeIn(Square().shift(min(calls[0], 3) * 2 * RIGHT)))
'''

# red team: a module-level patch of what the render's file writer runs while manim builds the scene (before the
# first play), restoring itself at its first call: the first play's check found the library as it was
INIT_SPY = '''from manim import *

calls = [0]
real = SceneFileWriter.init_output_directories


def spy(self, *args, **kwargs):
    calls[0] += 1
    SceneFileWriter.init_output_directories = real
    return real(self, *args, **kwargs)


SceneFileWriter.init_output_directories = spy


class S(Scene):
    def construct(self):
        self.play(FadeIn(Square().shift(calls[0] * 2 * RIGHT)))
'''

# red team: a library method renamed (`__name__` is writable and no audit event reports it) through manim's
# Mobject.set under a lowercase alias: `become` passed the .animate check as the pure `shift`
RENAMED = '''from manim import *

setter = Mobject
setter.set(Mobject.become, **{"_" * 2 + "name" + "_" * 2: "shift"})


class S(Scene):
    def construct(self):
        sq = Square()
        self.add(sq)
        self.play(sq.animate.become(Circle().shift(RIGHT)))
'''

# a script mobject class with only its constructor is not script code the render runs: still shared
CARDS = '''from manim import *


class Card(VGroup):
    def __init__(self, label):
        super().__init__(Square(), Text(label))
        self.arrange(DOWN)


class S(Scene):
    def construct(self):
        g = VGroup(Card("a"), Card("b")).arrange(RIGHT)
        self.add(g)
        self.play(g.animate.shift(UP))
'''

# manim's own object array (AnimationGroup/LaggedStart keep their animations in a structured array with an object
# field, anims_with_timings) holds library animations only: still shared (the corpus's LaggedStart scripts were
# audited separately for it)
GROUPS = '''from manim import *


class S(Scene):
    def construct(self):
        dots = VGroup(*[Dot().shift(i * RIGHT) for i in range(4)])
        self.play(LaggedStart(*[FadeIn(d) for d in dots], lag_ratio=0.3))
        self.play(AnimationGroup(dots.animate.shift(UP), Create(Square())))
'''

PLAIN = '''from manim import *


class S(Scene):
    def construct(self):
        s = Square()
        self.play(Create(s))
        self.play(s.animate.set_color(RED).shift(LEFT))
        self.wait(0.2)
'''


@pytest.mark.slow
def test_renders_keep_finding_patches_and_share_a_clean_script(tmp_path, monkeypatch):
    import colorsys

    from prism_fast.audit import onepass
    from prism_fast.audit.config import AuditConfig
    from prism_fast.audit.onepass_rule import static_reasons
    from prism_fast.audit.tamper import static_evidence
    from prism_fast.execute.render import RenderConfig, prefork_worker
    from prism_fast.profile import REFERENCE

    second = SECOND_MODULE.replace("{path}", colorsys.__file__)
    for script in (DATA_REBIND, second, TAIL_PLAY, META_HOOK, PARTIAL_HOOK, INIT_SPY):
        assert static_reasons(script) == [] and static_evidence(script) == [], script  # only the run time sees it
    # their computed keywords are refused statically now (`dynamic_keywords`); the run-time checks behind the rule
    # are still tested: the renders below see these two scripts as the rule used to
    computed = (DEFAULTS_SET, RENAMED)
    for script in computed:
        assert static_reasons(script) == ["dynamic_keywords"] and static_evidence(script) == [], script
    real = onepass.static_reasons
    monkeypatch.setattr(onepass, "static_reasons",
                        lambda text: [r for r in real(text) if not (text in computed and r == "dynamic_keywords")])
    cfg = RenderConfig(timeout_s=60)
    worker = prefork_worker(cfg, preload=onepass.PRELOAD)
    try:
        rows = {name: onepass.render_with_onepass(f"T-{name}", script, tmp_path, cfg, REFERENCE, None, worker.run,
                                                  AuditConfig().to_dict())
                for name, script in (("module", MODULE_PATCH), ("late", LATE_PATCH), ("plain", PLAIN),
                                     ("readd", DELETE_READD), ("class", DELETE_CLASS), ("log", LOG_HANDLER),
                                     ("array", ARRAY_VIEW), ("cards", CARDS), ("groups", GROUPS),
                                     ("path", PATH_PATCH), ("data", DATA_REBIND),
                                     ("code", CODE_REWRITE), ("second", second),
                                     ("tail", TAIL_PLAY), ("meta", META_HOOK),
                                     ("partial", PARTIAL_HOOK), ("defaults", DEFAULTS_SET),
                                     ("init", INIT_SPY), ("renamed", RENAMED))}
    finally:
        worker.close()
    for name, cls in (("module", "Square"), ("late", "Circle")):
        patched = rows[name]
        assert patched["success"], patched.get("error")
        assert patched["onepass"] in ("separate", "fallback"), patched.get("onepass_reasons")
        assert any(r.startswith("script_patch:") and r.endswith(f"{cls}.get_family")
                   for r in patched["onepass_reasons"]), patched["onepass_reasons"]
    for name, where in (("readd", "manim.camera.camera.extract_mobject_family_members"),
                        ("class", "manim.camera.camera.Camera"), ("log", "Logger(manim).handlers"),
                        ("path", "pathlib.Path.with_suffix"), ("data", "manim.mobject.mobject.it")):
        patched = rows[name]
        assert patched["success"], patched.get("error")
        assert patched["onepass"] in ("separate", "fallback"), patched.get("onepass_reasons")
        assert f"script_patch:{where}" in patched["onepass_reasons"], patched["onepass_reasons"]
    patched = rows["array"]
    assert patched["success"] and patched["onepass"] in ("separate", "fallback"), patched.get("onepass_reasons")
    assert "script_patch:Square().points:script_object" in patched["onepass_reasons"], patched["onepass_reasons"]
    hooked = rows["meta"]
    assert hooked["success"], hooked.get("error")
    assert hooked["onepass"] in ("separate", "fallback"), hooked.get("onepass_reasons")
    assert "script_patch:Dot().tag:script_object" in hooked["onepass_reasons"], hooked["onepass_reasons"]
    partial = rows["partial"]
    assert partial["success"], partial.get("error")
    assert partial["onepass"] in ("separate", "fallback"), partial.get("onepass_reasons")
    assert "script_callable:rate_func" in partial["onepass_reasons"], partial["onepass_reasons"]
    defaults = rows["defaults"]
    assert defaults["success"], defaults.get("error")
    assert defaults["onepass"] in ("separate", "fallback"), defaults.get("onepass_reasons")
    assert "script_patch:function.__defaults__" in defaults["onepass_reasons"], defaults["onepass_reasons"]
    init = rows["init"]
    assert init["success"], init.get("error")
    assert init["onepass"] in ("separate", "fallback"), init.get("onepass_reasons")
    assert "script_patch:manim.scene.scene_file_writer.SceneFileWriter.init_output_directories" in init[
        "onepass_reasons"], init["onepass_reasons"]
    renamed = rows["renamed"]
    assert renamed["success"], renamed.get("error")
    assert renamed["onepass"] in ("separate", "fallback"), renamed.get("onepass_reasons")
    assert "animate_method:become" in renamed["onepass_reasons"], renamed["onepass_reasons"]
    tail = rows["tail"]
    assert tail["onepass"] != "shared", tail.get("onepass_reasons")
    assert "scene_call_from:scene_finished" in tail["onepass_reasons"], tail["onepass_reasons"]
    again = rows["second"]
    assert again["success"], again.get("error")
    assert again["onepass"] in ("separate", "fallback"), again.get("onepass_reasons")
    assert "module_loader:again" in again["onepass_reasons"], again["onepass_reasons"]
    rewritten = rows["code"]
    assert rewritten["success"], rewritten.get("error")
    assert rewritten["onepass"] == "ineligible", rewritten.get("onepass_reasons")
    assert "string_access:update_wrapper" in rewritten["onepass_reasons"], rewritten["onepass_reasons"]
    for name in ("plain", "cards", "groups"):
        clean = rows[name]
        assert clean["success"] and clean["onepass"] == "shared", clean.get("onepass_reasons")


def test_a_deleted_name_is_a_change_and_its_return_is_still_found(manim_modules, monkeypatch, watch_kind):
    # red team: `del module.f` was an accepted difference, the baseline re-taken without it, and `module.f = counted`
    # then passed as a new module name; a class deleted from its defining module was scanned no more at all
    manim, polygram, bezier = manim_modules
    monkeypatch.setattr(oc, "_TABLE", oc._Table())
    state = oc._State({"side_file": None, "seal": None, "scene": "S", "audit_cfg": {}})
    state.baseline, state.watch = oc._baseline()
    real = bezier.mid
    monkeypatch.delattr(bezier, "mid")
    state.check_patches()
    assert state.reasons == ["script_patch:manim.utils.bezier.mid"]
    monkeypatch.setattr(bezier, "mid", lambda *a: real(*a), raising=False)
    state.check_patches()
    assert state.reasons == ["script_patch:manim.utils.bezier.mid"]  # found again (the baseline kept its old value)

    state = oc._State({"side_file": None, "seal": None, "scene": "S", "audit_cfg": {}})
    state.baseline, state.watch = oc._baseline()
    monkeypatch.delattr(polygram, "Square")
    monkeypatch.setattr(manim.Square, "get_family", lambda self, recurse=True: [self], raising=False)
    state.check_patches()
    assert "script_patch:manim.mobject.geometry.polygram.Square" in state.reasons
    # and the same from a fresh scan, whatever was accepted before
    assert "manim.mobject.geometry.polygram.Square" in oc._patched(state.baseline)


def test_an_imported_alias_does_not_escape_the_name_rule():
    # red team: `from manim import config as c` then `c["frame_rate"]` (15 in the render, 60 in the audit-only run)
    # shared a report the audit-only run does not give; a dunder imported by name is a module's namespace or builtins
    from prism_fast.audit.onepass_rule import static_reasons

    for script in ("from manim import config as c\nx = c['frame_rate']\n",
                   "from manim import tempconfig as t\n",
                   "from numpy import __builtins__ as b\n",
                   "from manim.utils.module_ops import __dict__ as d\n"):
        assert any(r.startswith("import_name:") for r in static_reasons(script)), script
    assert static_reasons("from manim import *\nfrom manim import Square, Camera as C\nimport numpy as np\n") == []
    # imported under its own name, a flagged name meets the name rule at each use (and its precise rules)
    for script in ("from manim import always_redraw as ar\n", "from manim import config as config2\n"):
        assert any(r.startswith("import_name:") for r in static_reasons(script)), script
    for script in ("from manim import always_redraw\n", "from manim import config\n"):
        assert not any(r.startswith("import_name:") for r in static_reasons(script)), script
    assert "name:config" in static_reasons("from manim import config\nx = config['frame_rate']\n")


def test_the_log_pipeline_holds_no_script_hook(monkeypatch):
    # red team: a handler, a filter, a callable bound on a logger or a script object as a console's file counted
    # the render's log records (which the audit-only run does not write)
    import logging

    import manim

    def hooked(change):
        state = oc._State({"side_file": None, "seal": None, "scene": "S", "audit_cfg": {}, "code_file": __file__})
        state.baseline, state.watch = oc._baseline()
        state.log_pipeline = oc._LogPipeline()
        with monkeypatch.context() as m:
            change(m)
            state.check_patches()
        return state.reasons

    calls = []

    class Sink:
        def write(self, text):
            calls.append(text)

    handler = manim.logger.handlers[0]
    assert hooked(lambda m: None) == []
    assert hooked(lambda m: m.setattr(manim.logger, "info", calls.append)) == ["script_patch:Logger(manim).info"]
    assert hooked(lambda m: m.setattr(manim.logger, "filters", [calls.append])) == [
        "script_patch:Logger(manim).filters"]
    assert hooked(lambda m: m.setattr(logging.root, "handlers", [*logging.root.handlers, Sink()])) == [
        "script_patch:RootLogger(root).handlers"]
    assert "script_patch:Console()._file" in hooked(lambda m: m.setattr(handler.console, "_file", Sink()))
    assert "script_patch:logging.Logger.info" in hooked(
        lambda m: m.setattr(logging.Logger, "info", lambda self, *a, **k: calls.append(a)))


def test_a_bound_method_of_the_instruments_is_not_one_of_them(manim_modules, monkeypatch):
    # `_ours` accepts the render's own instruments (functions of this package) rebound after the baseline; a bound
    # method of one of its classes (`Lib.f = self.remove`, the script's scene as self) is not one
    _, _, bezier = manim_modules
    base = oc._library_callables()
    state = oc._State({"side_file": None, "seal": None, "scene": "S", "audit_cfg": {}})
    monkeypatch.setattr(bezier, "interpolate", state.flag)
    assert "manim.utils.bezier.interpolate" in oc._patched(base)
    monkeypatch.setattr(bezier, "interpolate", oc._same)  # a plain function of the package: accepted
    assert "manim.utils.bezier.interpolate" not in oc._patched(base)


def test_library_only_classes_skip_the_walk_only_where_it_finds_nothing(monkeypatch, tmp_path):
    """``_library_only``: a class whose every heap class (its MRO's and its metaclass's) is bound by the library
    table skips ``_script_methods``/``_script_class``'s namespace walks. Over every class of the table the walk
    finds nothing (so skipping it changes no verdict); a script class, a library class given a script base (a new
    MRO) and one under a script metaclass are walked, and their script methods found."""
    from manim import Square, VMobject

    import weakref

    table = oc._Table()
    merged, _ = table.current()
    ids = frozenset(map(id, oc.library_classes(table)))
    monkeypatch.setattr(oc, "_LIBRARY_CLASS_IDS", ids)
    monkeypatch.setattr(oc, "_LIBRARY_ONLY", {})
    code_file = str(tmp_path / "scene.py")
    classes = [v for v in merged.values() if isinstance(v, type)]
    assert len(classes) > 500 and oc._library_only(VMobject) and oc._library_only(Square)
    # a class a watched module only imports from an unwatched one: its namespace is not watched (review)
    assert weakref.WeakSet in classes and not oc._library_only(weakref.WeakSet)
    skipped = [c for c in classes if oc._library_only(c)]
    assert len(skipped) > 0.8 * len(classes)
    monkeypatch.setattr(oc, "_LIBRARY_CLASS_IDS", None)  # the walk itself, for the same classes
    assert not [c for c in skipped if oc._script_methods(c, code_file) or oc._script_class(c, code_file)]
    monkeypatch.setattr(oc, "_LIBRARY_CLASS_IDS", ids)

    ns = {}
    exec(compile("from manim import Square\nclass Mine(Square):\n    def get_family(self, recurse=True):\n"
                 "        return [self]\nclass Base:\n    def __array_finalize__(self, obj):\n        pass\n"
                 "class Meta(type(Square)):\n    def __instancecheck__(cls, obj):\n        return True\n",
                 code_file, "exec"), ns)
    assert not oc._library_only(ns["Mine"]) and oc._script_methods(ns["Mine"], code_file) == ["get_family"]

    class Lib(Square):  # a class of "the library" for this test: its id joins the table's
        pass

    monkeypatch.setattr(oc, "_LIBRARY_CLASS_IDS", oc._LIBRARY_CLASS_IDS | {id(Lib)})
    assert oc._library_only(Lib) and oc._script_methods(Lib, code_file) == []
    Lib.__bases__ = (ns["Base"], Square)  # a new MRO: decided again, and walked
    assert not oc._library_only(Lib) and oc._script_methods(Lib, code_file) == ["__array_finalize__"]
    Under = ns["Meta"]("Under", (Square,), {})
    assert not oc._library_only(Under) and oc._script_class(Under, code_file)
