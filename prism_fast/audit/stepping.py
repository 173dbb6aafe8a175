"""Frames the separate audit does not need (issue #19 deliverable 3).

The audit-only fast path (``hooks.install_fast_path``) keeps manim's frame loop at the audit's 60 fps: every frame
of a play interpolates every animation and runs every updater, although the report reads the scene only at
checkpoints (after each ``play``). For a play in which nothing can observe or accumulate the intermediate frames,
the state after the play does not depend on them: ``Animation.finish`` interpolates to alpha = 1 from the copies
``begin`` took, and with no updater nothing else moves. Such a play is stepped here with one update (the last
frame's) instead of one per frame; the renderer still advances one frame at a time (``renderer.time`` is
summed exactly as before), and ``finish``/clean-up/``update_mobjects(0)`` run as in manim.

A play is stepped that way only when all of this holds when its frame loop starts (after ``begin``):

* the scene has no updaters, no meshes and no ``stop_condition``; the renderer is not skipping;
* every animation, recursively through groups, is of exactly one of the classes the one-pass rule calls
  alpha-pure (``onepass_child.PURE_ANIMATIONS``; an ``.animate`` chain only with
  ``onepass_child.PURE_METHODS``), and every callable it holds (``rate_func``, ``path_func``, ...) is manim's
  own code (closures checked too);
* a ``Succession`` (whose next animation begins, and may add its mobject to the scene, at the frame where the
  previous one ends) runs alone: nothing else is animated beside it at any level;
* no mobject of the scene or of the animations (starting copies and targets included), at any depth, has an
  updater or is of a class defined outside manim (a user subclass could override what a frame calls).

Anything else plays frame by frame, as before. Reports stay byte-identical (``bench/audit_speed.py`` compares the
before/after child on the bundled set and the open corpus; docs/bench_audit.md). The full-fidelity mode (the
authors' raster of every frame) never uses this. ``PRISM_AUDIT_EVERY_FRAME=1`` in the child's environment turns it
off (benchmarks, bisecting); counts go to the child's meta file (``stepping``), not into rows or reports.
"""

from __future__ import annotations

import functools
import os
import types

# the one-pass rule's lists (imported here, so the audit zygote's pre-import of this module loads them once)
from prism_fast.audit.onepass_child import GROUPS, PURE_ANIMATIONS, PURE_METHODS

ENV_OFF = "PRISM_AUDIT_EVERY_FRAME"
MANIM_VERSION = "0.19.0"  # play_internal below mirrors this version's Scene.play_internal

STATS = {"plays": 0, "plays_one_update": 0, "frames_not_updated": 0}


def _manim_code(fn, depth: int = 0) -> bool:
    """Is this callable manim's own code (its closure's callables too)?"""
    if depth > 4:
        return False
    if isinstance(fn, functools.partial):
        return _manim_code(fn.func, depth + 1) and all(
            not callable(a) or isinstance(a, type) or _manim_code(a, depth + 1)
            for a in (*fn.args, *fn.keywords.values()))
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    if not isinstance(fn, types.FunctionType):  # builtins, ufuncs, callable objects: not proven
        return False
    if not (fn.__module__ or "").startswith("manim."):
        return False
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if callable(value) and not isinstance(value, type) and not _manim_code(value, depth + 1):
            return False
    return True


class _Check:
    def __init__(self, pure: set, groups: tuple, succession: type, method_anim: type, pure_methods: frozenset,
                 mobject: type):
        self.pure, self.groups, self.succession = pure, groups, succession
        self.method_anim, self.pure_methods, self.mobject = method_anim, pure_methods, mobject

    def animation(self, anim, alone: bool, mobjects: list) -> bool:
        if isinstance(anim, self.method_anim):
            if type(anim) is not self.method_anim:
                return False
            for method, _args, _kwargs in getattr(anim, "methods", []):
                if getattr(method, "__name__", None) not in self.pure_methods or not _manim_code(method):
                    return False
        elif type(anim) not in self.pure:
            return False
        if getattr(anim, "stop_condition", None) is not None:
            return False
        for value in vars(anim).values():
            if callable(value) and not isinstance(value, (type, self.mobject)) and not _manim_code(value):
                return False
        # every mobject it holds (a Succession's later animations have no starting copy before they begin)
        mobjects.extend(v for v in vars(anim).values() if isinstance(v, self.mobject))
        if isinstance(anim, self.succession) and not alone:
            return False
        if isinstance(anim, self.groups):
            subs = list(getattr(anim, "animations", []))
            sequential = isinstance(anim, self.succession)
            for sub in subs:
                if not self.animation(sub, alone and (sequential or len(subs) == 1), mobjects):
                    return False
        return True


def _mobjects_ok(mobjects) -> bool:
    seen: set = set()
    for top in mobjects:
        for mob in top.get_family():
            if id(mob) in seen:
                continue
            seen.add(id(mob))
            if mob.updaters or not type(mob).__module__.startswith("manim."):
                return False
    return True


def install(meta: dict) -> None:
    """Patch manim's ``Scene.play_internal`` in this (audit child) process; record what it did in ``meta``."""
    import manim
    from manim.animation.composition import Succession
    from manim.animation.transform import _MethodAnimation
    from manim.mobject.mobject import Mobject
    from manim.renderer.cairo_renderer import CairoRenderer
    from manim.scene.scene import Scene

    if os.environ.pop(ENV_OFF, "") not in ("", "0"):
        meta["stepping"] = "every_frame (PRISM_AUDIT_EVERY_FRAME)"
        return
    if manim.__version__ != MANIM_VERSION:
        meta["stepping"] = f"every_frame (manim {manim.__version__}, written for {MANIM_VERSION})"
        return
    check = _Check({getattr(manim, n) for n in PURE_ANIMATIONS if hasattr(manim, n)},
                   tuple(getattr(manim, n) for n in GROUPS if hasattr(manim, n)), Succession, _MethodAnimation,
                   PURE_METHODS, Mobject)
    real = Scene.play_internal
    meta["stepping"] = STATS

    def one_update_suffices(scene) -> bool:
        if scene.updaters or getattr(scene, "meshes", None) or scene.stop_condition is not None:
            return False
        if not isinstance(scene.renderer, CairoRenderer) or scene.renderer.skip_animations:
            return False
        if scene.skip_animation_preview:
            return False
        anims = list(scene.animations or [])
        mobjects = list(scene.mobjects)
        for anim in anims:
            if not check.animation(anim, len(anims) == 1, mobjects):
                return False
        return _mobjects_ok(mobjects)

    def play_internal(self, skip_rendering: bool = False):
        STATS["plays"] += 1
        try:
            fast = one_update_suffices(self)
        except Exception:  # anything unexpected: the frame-by-frame loop decides
            fast = False
        if not fast:
            return real(self, skip_rendering)
        STATS["plays_one_update"] += 1
        # manim 0.19.0 Scene.play_internal, with update_to_time only at the last frame's time
        self.duration = self.get_run_time(self.animations)
        self.time_progression = self._get_animation_time_progression(self.animations, self.duration)
        last = None
        for t in self.time_progression:
            if last is not None:
                STATS["frames_not_updated"] += 1
            last = t
            if not skip_rendering and not self.skip_animation_preview:
                self.renderer.render(self, t, self.moving_mobjects)
        if last is not None:
            self.update_to_time(last)
        for animation in self.animations:
            animation.finish()
            animation.clean_up_from_scene(self)
        if not self.renderer.skip_animations:
            self.update_mobjects(0)
        self.renderer.static_image = None
        self.time_progression.close()

    Scene.play_internal = play_internal
