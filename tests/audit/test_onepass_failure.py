"""The examination of a failed one-pass render's exception (audit/onepass_failure.py), in process: which frames
may be unlinked, and that the traceback printed afterwards is the one a call without the wrapper prints."""

from __future__ import annotations

import importlib.util
import sys
import traceback

import pytest

from prism_fast.audit.onepass_failure import Frames

# the observers' stand-ins, in a package directory of their own (only its frames are "own" frames)
OBSERVERS = """
def wrapper(x):
    return real(x)


def wrapper_doing_more(x):
    real(1)
    return own_work(x)


def own_work(x):
    raise RuntimeError(f"observer broke on {x}")
"""


PACKAGE_WRAPPERS = """
def pkg_wrapper(x):
    return real(x)


def pkg_own(x):
    raise OSError(f"cache entry {x} unreadable")
"""


def real(x):
    return 1 / x


def per_frame(x):
    return real(x)


def _stand_in(directory, name: str, text: str):
    """A module of ``text`` at ``directory/name.py`` (its frames carry that file name), ``real`` bound in it."""
    (directory / f"{name}.py").write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"{name}_stand_in", directory / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.real = real
    return mod


@pytest.fixture(scope="module", autouse=True)
def observers(tmp_path_factory):
    own = tmp_path_factory.mktemp("own")
    obs = _stand_in(own, "obs", OBSERVERS)
    # the render child's own wrappers (the TeX cache's): another directory of the package
    pkg = tmp_path_factory.mktemp("pkg")
    tex = _stand_in(pkg, "texwrap", PACKAGE_WRAPPERS)
    globals().update(wrapper=obs.wrapper, wrapper_doing_more=obs.wrapper_doing_more, OWN=str(own),
                     pkg_wrapper=tex.pkg_wrapper, pkg_own=tex.pkg_own, PKG=str(pkg))
    yield


def user(fn, x):
    return fn(x)


def caught(fn, x):
    try:
        user(fn, x)
    except Exception as exc:  # noqa: BLE001
        return exc
    raise AssertionError("no exception")


def frames(**kw) -> Frames:
    # this test file plays the observers' package: its wrappers are "own" frames
    return Frames(passes={wrapper.__code__: {real.__code__}, wrapper_doing_more.__code__: {real.__code__}},
                  own_dir=OWN, package_dir=PKG, **kw)


def text(exc: BaseException) -> list[str]:
    return [line for line in traceback.format_exception(exc) if "caught" not in line]


def test_a_pass_through_is_unlinked_and_the_traceback_is_the_direct_calls():
    direct = caught(real, 0)
    via = caught(wrapper, 0)
    assert any("in wrapper" in line for line in text(via))
    verdict = frames().examine(via, scene_started=True, repr_seen=False)
    assert verdict["accept"] and verdict["printed_as_plain"] and verdict["where"] == "render"
    assert verdict["error"] == "ZeroDivisionError: division by zero"
    got = [line.replace("wrapper", "real") for line in text(via)]
    # same frames, same lines as calling the wrapped function directly (user -> real), the wrapper gone
    assert not any("in wrapper" in line for line in text(via))
    assert [line for line in text(via) if "File" in line] == [line for line in text(direct) if "File" in line]
    assert got[-1] == text(direct)[-1]


def test_an_exception_raised_by_the_observer_itself_is_refused_and_left_alone():
    exc = caught(wrapper_doing_more, 2)
    before = text(exc)
    verdict = frames().examine(exc, scene_started=False, repr_seen=False)
    assert not verdict["accept"] and not verdict["printed_as_plain"]
    assert verdict["why"] == "observer_frame:wrapper_doing_more"
    assert verdict["where"] == "runtime"
    assert text(exc) == before  # nothing unlinked


def test_denied_frames_chained_exceptions_and_reprs_are_refused():
    f = frames(denied={per_frame.__code__})
    verdict = f.examine(caught(per_frame, 0), True, False)
    # printed as a plain render prints it (no observer frame), but not an error the audit meets for sure
    assert verdict["why"] == "render_only:per_frame" and verdict["printed_as_plain"] and not verdict["accept"]

    def chained(x):
        try:
            per_frame(x)
        except ZeroDivisionError as inner:
            raise ValueError("wrapped") from inner

    verdict = f.examine(caught(chained, 0), True, False)
    assert not verdict["accept"] and verdict["why"] == "render_only:per_frame"  # found in the cause's traceback
    assert frames().examine(caught(chained, 0), True, False)["accept"]
    assert frames().examine(caught(real, 0), True, repr_seen=True)["why"] == "mobject_repr"

    def deep(n):
        return deep(n + 1)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        exc = caught(deep, 0)
    finally:
        sys.setrecursionlimit(limit)
    assert frames().examine(exc, True, False)["why"] == "exception:RecursionError"
    assert frames().examine(None, True, False) == {"printed_as_plain": False, "accept": False,
                                                   "why": "no_exception"}


def test_the_catching_frame_is_not_examined_but_a_module_error_must_come_from_the_script_module():
    exc = caught(wrapper, 0)
    assert frames(denied={caught.__code__}).examine(exc, False, False)["accept"]  # where it was caught
    verdict = frames().examine(caught(real, 0), False, False, module_file=__file__)
    assert verdict["why"] == "not_in_the_script_module" and verdict["printed_as_plain"] and not verdict["accept"]


def test_the_render_childs_own_wrappers_stay_printed_and_count_only_for_what_they_called():
    exc = caught(pkg_wrapper, 0)
    before = [line for line in text(exc) if "File" in line]
    verdict = frames().examine(exc, True, False)
    assert verdict["accept"] and [line for line in text(exc) if "File" in line] == before  # kept: a plain render has it
    verdict = frames().examine(caught(pkg_own, 3), True, False)
    assert verdict["printed_as_plain"] and not verdict["accept"] and verdict["why"] == "render_only:pkg_own"


def test_manims_set_default_is_not_a_script_patch():
    """``Triangle.set_default(stroke_width=20)`` (manim's documented API, run once at import in both executions)
    rebinds ``__init__`` to a partialmethod of the previous one: not a patch; a bound callable argument is."""
    import functools

    from prism_fast.audit.onepass_child import _set_default

    def init(self, **kw):
        return kw

    once = functools.partialmethod(init, stroke_width=20)
    assert _set_default(init, once) and _set_default(init, functools.partialmethod(once, color="RED"))
    assert not _set_default(init, functools.partialmethod(init, rate_func=lambda t: t))
    assert not _set_default(init, functools.partialmethod(print, end=""))
    assert not _set_default(init, init.__get__)
