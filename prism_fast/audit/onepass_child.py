"""The one-pass audit's observer inside the render child (design: docs/design.md "One-pass audit").

Installed through the render's observer extension point (``execute/observers.py``): the prefork worker's child
calls :func:`install` before manim's CLI ``main()``. Passive observers: the scene class the script binds to
``Scene`` is the audit's instrumented scene (reference hooks: snapshots on play, segment locks on remove, tail +
report on render); the module is executed with the audit's variable-name injection; and guards record every
dynamic reason the snapshots could depend on the frame rate or on the pixel size (an updater on the scene, or on
a mobject during a play unless ``onepass_rules`` approved it -- and an approved one must be at its unique fixed
point at every checkpoint --, a ``Wait`` with a stop condition, an animation outside the list of alpha-pure
manim classes, an ``.animate`` method outside its list, a Text whose Pango SVG differs between 854x480 and the
audit's 1920x1080 canvas, a mobject's ``repr`` read by the script, more than one audited scene class, a CLI
module named ``__main__``). Nothing of this
changes what the render does; the observers only write their out file at exit (``reasons``, ``audited_scenes``,
``report``, ``audit_sec``, ``engine``), which the parent's collect step reads.
"""

from __future__ import annotations

import ast
import collections.abc
import io
import itertools
import json
import operator
import os
import re
import sys
import time
import types

from prism_fast.audit import hooks, onepass_rules
from prism_fast.audit.config import AuditConfig
from prism_fast.audit.inject import inject_names
from prism_fast.audit.observations import encode_scenes
from prism_fast.audit.tamper import Guard
from prism_fast.execute.observers import write_result
from prism_fast.profile import REFERENCE

AUDIT_PIXELS = (1920, 1080)  # the audit run's canvas: manim's default (high) quality, never changed there

PURE_ANIMATIONS = (
    "Animation", "Wait", "Transform", "ReplacementTransform", "TransformFromCopy", "ClockwiseTransform",
    "CounterclockwiseTransform", "MoveToTarget", "ApplyMethod", "ApplyPointwiseFunction",
    "ApplyPointwiseFunctionToCenter", "FadeToColor", "ScaleInPlace", "ShrinkToCenter", "Restore", "ApplyFunction",
    "ApplyMatrix", "ApplyComplexFunction", "CyclicReplace", "Swap", "FadeTransform", "FadeTransformPieces",
    "TransformMatchingShapes", "TransformMatchingTex", "FadeIn", "FadeOut", "Create", "Uncreate",
    "DrawBorderThenFill", "Write", "Unwrite", "ShowIncreasingSubsets", "ShowSubmobjectsOneByOne",
    "AddTextLetterByLetter", "RemoveTextLetterByLetter", "AddTextWordByWord", "GrowFromPoint", "GrowFromCenter",
    "GrowFromEdge", "GrowArrow", "SpinInFromNothing", "Indicate", "Flash", "ShowPassingFlash",
    "ShowPassingFlashWithThinningStrokeWidth", "ApplyWave", "Circumscribe", "Wiggle", "FocusOn", "AnimationGroup",
    "Succession", "LaggedStart", "LaggedStartMap", "Rotate", "Rotating", "MoveAlongPath", "ChangeDecimalToValue",
    "Blink",
    # issue 19: SpiralIn restores every shape from the state saved at __init__ before each interpolation, so
    # the end state is interpolate(1) of fixed data (tests/audit/test_audit_onepass_rules.py)
    "SpiralIn",
)
GROUPS = ("AnimationGroup", "Succession", "LaggedStart", "LaggedStartMap", "Circumscribe", "Flash", "Blink")
PURE_METHODS = frozenset({
    "shift", "move_to", "scale", "rotate", "next_to", "to_edge", "to_corner", "set_color", "set_fill",
    "set_stroke", "set_opacity", "set_value", "increment_value", "set_x", "set_y", "set_z", "set_width",
    "set_height", "scale_to_fit_width", "scale_to_fit_height", "stretch_to_fit_width", "stretch_to_fit_height",
    "stretch", "flip", "center", "align_to", "arrange", "arrange_in_grid", "set", "fade", "set_z_index",
    "match_color", "match_width", "match_height", "match_x", "match_y", "match_style", "rotate_about_origin",
    "space_out_submobjects", "surround", "put_start_and_end_on", "set_color_by_gradient", "set_sheen",
    "set_style", "set_stroke_color", "set_fill_color", "apply_matrix", "set_points", "move_to_target",
    # issue 19: applied once to the target copy when the play is built (the same call in both executions), then
    # interpolated; finish() = interpolate(1) gives the target whatever the frame times
    "apply_function", "apply_complex_function",
})


class _State:
    def __init__(self, req: dict):
        self.req = req
        self.reasons: list[str] = []
        self.audit_sec = 0.0
        self.scene = None
        self.audited: list[str] = []
        self.guard = None  # tamper.Guard, armed before the script's module runs
        self.t0 = time.perf_counter()
        self.tree = None  # the script's injected AST (InjectingLoader)
        self.failure = None  # onepass_failure.Frames.examine's verdict on the exception manim printed
        self.repr_seen = False
        self.unhooked: set[str] = set()  # audited scene classes outside the hooked Scene (Q-SPATIAL-1)
        self.salvaged = None  # the failed scene's salvaged observation records, once computed
        self.hooks = None  # the audit scene's hooks mixin (its record_of, its own properties)
        self.baseline = None  # the libraries' callables after install (_library_callables)
        self.watch = None  # _Watch over the baseline: a cheap "anything changed?" before the full comparison
        self.baseline_asked = False  # the baseline is taken once, before the script's module runs
        self.log_pipeline = None  # _LogPipeline: the logging objects as they were at the baseline
        # ids of the first baseline's plain functions (the audit hook's), computed at the hook's first event of
        # interest from that baseline's table (``function_table``, which keeps the functions alive): the same set
        # as at the baseline, without walking the table's ~38,000 entries (≈ 10 ms) in every render that never has
        # such an event
        self.functions: set | None = None
        self.function_table: "_Merged | dict | None" = None

    def function_ids(self) -> set:
        if self.functions is None:
            try:
                self.functions = _function_ids(self.function_table) if self.function_table is not None else set()
            except Exception as exc:  # noqa: BLE001 - no set, no trust
                self.flag(f"guard_error:{type(exc).__name__}")
                self.functions = set()
        return self.functions

    def check_patches(self, scene=None) -> None:
        if self.baseline is None:
            if scene is not None or self.scene is not None:  # a scene ran without the script's module load seen
                self.flag("patch_check:no_baseline")
            return
        t0 = time.perf_counter()
        try:
            if self.watch is None or self.watch.changed():
                now, watch = _baseline()
                found = _patched_since(self.baseline, self.watch, now, watch, self.req.get("code_file"))
                for where in found:
                    self.flag(f"script_patch:{where}")
                if not found:
                    # every difference is one the check accepts (a non-callable cached on a class, such as
                    # copyreg's __slotnames__; the render's own instruments; set_default): the table as it is now
                    # becomes the baseline, so that the same accepted difference does not send every later play
                    # through the full comparison again -- any later change is still a change from it
                    self.baseline, self.watch = now, watch
            for where in _instance_patches(scene if scene is not None else self.scene, self.req.get("code_file")):
                self.flag(f"script_patch:{where}")
            if self.log_pipeline is not None:  # (taken with the baseline: when it failed, guard_error is flagged)
                for where in self.log_pipeline.changes(self.req.get("code_file")):
                    self.flag(f"script_patch:{where}")
        except Exception as exc:  # noqa: BLE001
            self.flag(f"guard_error:{type(exc).__name__}")
        self.audit_sec += time.perf_counter() - t0

    def flag(self, reason: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)


_STATE: _State | None = None


def install(request: dict, context: dict) -> None:
    """The observer's entry (``execute/observers.py``), in the render child before manim's ``main()``: install
    the observers and register the out-file writer at exit. ``request``: ``{"audit_cfg": AuditConfig.to_dict()}``;
    ``context``: the render's ``out_file`` and selected ``scene``."""
    global _STATE
    t0 = time.perf_counter()
    _STATE = state = _State({"side_file": context["out_file"], "seal": context.get("seal"), "scene": context["scene"],
                             "audit_cfg": request.get("audit_cfg", {})})
    import atexit

    atexit.register(_write_side_file)
    try:
        _install(state)
    except Exception as exc:  # never break the render: the sample just takes the separate audit
        state.flag(f"install_failed:{type(exc).__name__}: {exc}")
    state.audit_sec += time.perf_counter() - t0


def _install(state: _State) -> None:
    import importlib.machinery
    import importlib.util
    import io

    import manim
    import manimpango
    from manim.animation.transform import _MethodAnimation
    from manim.mobject.mobject import Mobject
    from manim.utils import module_ops

    cfg = AuditConfig.from_dict(state.req.get("audit_cfg", {}))
    original_scene = manim.Scene
    # no frame copies, no PNG: the render's frames stay untouched
    audit_scene = hooks.make_audit_scene(original_scene, cfg, REFERENCE, save_images=False)
    quiet = io.StringIO()  # the audit's own stderr lines must not reach the render's stderr
    pure = tuple(getattr(manim, n) for n in PURE_ANIMATIONS if hasattr(manim, n))
    pure_set = set(pure)
    groups = tuple(getattr(manim, n) for n in GROUPS if hasattr(manim, n))

    def check_animation(anim) -> None:
        for reason in _script_code_reasons(anim, state.req.get("code_file"), Mobject):
            state.flag(reason)
        if isinstance(anim, _MethodAnimation):
            for method, _args, _kwargs in getattr(anim, "methods", []):
                name = _method_name(method)
                if name not in PURE_METHODS:
                    state.flag(f"animate_method:{name}")
            return
        if type(anim) not in pure_set:
            state.flag(f"animation:{type(anim).__name__}")
            return
        if getattr(anim, "stop_condition", None) is not None:
            state.flag("wait_stop_condition")
        for reason in onepass_rules.animation_reasons(anim):
            state.flag(reason)
        if isinstance(anim, groups):
            for sub in getattr(anim, "animations", []):
                check_animation(sub)

    policy = []  # the script's approved dt-free updaters (onepass_rules.UpdaterPolicy), built on first use

    def updater_policy():
        if not policy:
            policy.append(onepass_rules.UpdaterPolicy(state.req.get("code_file")))
        return policy[0]

    def check_updaters(scene, extra=()) -> None:
        if getattr(scene, "updaters", None):
            state.flag("scene_updater")
        for reason in onepass_rules.updater_reasons((*scene.mobjects, *extra), updater_policy()):
            state.flag(reason)

    render_code = original_scene.render.__code__

    def check_caller() -> None:
        # a play or a remove must come from the script's construct (or setup/tear_down): manim's render calls other
        # code after them that the audit-only run does not call, or not alike (red team: the file writer's
        # combine_to_movie, rebound at the end of construct to a script function that restored it -- so no patch
        # check found it -- and then played once more, a snapshot the audit-only run never takes)
        where = _render_callee(render_code)
        if where not in SCENE_ENTRY_POINTS:
            state.flag(f"scene_call_from:{where}")

    class OnePassScene(audit_scene):
        def __init_subclass__(cls, **kwargs):
            super().__init_subclass__(**kwargs)
            # a script class with the hooked Scene and an unhooked manim scene among its bases (`class P(Scene,
            # MovingCameraScene)`): the plain render's Scene is the unhooked one's base, so its method order differs
            # there or cannot be built at all (a TypeError: no consistent MRO) -- the render may differ (red team)
            try:
                own = OnePassScene.__mro__  # (the hooked chain itself: audit_scene, manim's Scene)
                if any(c not in own and issubclass(c, original_scene) and not issubclass(c, OnePassScene)
                       for c in cls.__mro__):
                    state.flag(f"scene_override:<mixed_bases:{cls.__name__}>")
            except Exception as exc:  # noqa: BLE001
                state.flag(f"guard_error:{type(exc).__name__}")

        def compile_animation_data(self, *args, **kwargs):
            state.check_patches(self)
            check_caller()
            result = super().compile_animation_data(*args, **kwargs)
            t0 = time.perf_counter()
            try:
                anims = list(self.animations or [])
                for anim in anims:
                    check_animation(anim)
                check_updaters(self, [a.mobject for a in anims if getattr(a, "mobject", None) is not None])
            except Exception as exc:  # a guard must never break the render: distrust the pass instead
                state.flag(f"guard_error:{type(exc).__name__}")
            state.audit_sec += time.perf_counter() - t0
            return result

        def play(self, *args, **kwargs):
            hooks.ERR_STREAM = quiet
            try:
                super().play(*args, **kwargs)
            finally:
                hooks.ERR_STREAM = None
            try:
                check_updaters(self)  # an updater attached while the play finished
            except Exception as exc:
                state.flag(f"guard_error:{type(exc).__name__}")

        def remove(self, *mobjects):
            state.check_patches(self)
            check_caller()
            hooks.ERR_STREAM = quiet
            try:
                return super().remove(*mobjects)
            finally:
                hooks.ERR_STREAM = None

        def _audit_snapshot(self, label):
            t0 = time.perf_counter()
            try:
                for reason in onepass_rules.checkpoint_reasons(self, updater_policy()):
                    state.flag(reason)  # approved updaters must be at a unique fixed point here
            except Exception as exc:
                state.flag(f"guard_error:{type(exc).__name__}")
            try:
                return super()._audit_snapshot(label)
            finally:
                state.audit_sec += time.perf_counter() - t0

        def render(self, preview=False):
            state.scene = self
            return super().render(preview)

        def process_final_results(self):
            t0 = time.perf_counter()
            hooks.ERR_STREAM = quiet
            try:
                return super().process_final_results()
            finally:
                hooks.ERR_STREAM = None
                state.audit_sec += time.perf_counter() - t0

    OnePassScene.__name__ = OnePassScene.__qualname__ = "AuditScene"

    # an unhooked scene (MovingCameraScene, ThreeDScene, ...: Q-SPATIAL-1) has no report, but the audit-only run
    # still steps its plays at 60 fps: script code at the frame times (a script rate_func, a script Animation
    # class, an updater) can fail or hang there and not in the render (red team: `rate_func` raising for
    # 0 < t < 0.05 -- a scene error in the audit row only). Its plays get the hooked scene's checks; the wrapper is
    # a pass-through frame (onepass_failure) and checks after the play is compiled, as OnePassScene does
    real_compile = original_scene.__dict__["compile_animation_data"]

    def compile_animation_data(self, *args, **kwargs):
        result = real_compile(self, *args, **kwargs)
        if not isinstance(self, OnePassScene):
            t0 = time.perf_counter()
            try:
                anims = list(self.animations or [])
                for anim in anims:
                    check_animation(anim)
                if getattr(self, "updaters", None):
                    state.flag("scene_updater")
                mobs = [*self.mobjects, *(a.mobject for a in anims if getattr(a, "mobject", None) is not None)]
                if any(not _manim_only(u) for top in mobs for m in top.get_family()
                       for u in (getattr(m, "updaters", None) or ())):
                    state.flag("unhooked_updater")  # script code at the frame times (approved updaters are checked
                    # at a hooked scene's snapshots only; manim's own, e.g. the ambient camera rotation, run none)
            except Exception as exc:  # a guard must never break the render: distrust the pass instead
                state.flag(f"guard_error:{type(exc).__name__}")
            state.audit_sec += time.perf_counter() - t0
        return result

    manim_dir = os.path.dirname(os.path.abspath(manim.__file__)) + os.sep

    def _manim_only(fn) -> bool:
        """Whether an updater is manim's own code holding no function of the script's: a plain function or lambda
        defined under manim's package whose closure cells, defaults and bound object hold no callable (the
        ambient camera rotation's ``lambda m, dt: m.increment_value(rate * dt)``; not ``always_redraw``'s
        lambda, whose closure holds the script's function)."""
        if not isinstance(fn, types.FunctionType):
            return False
        code = fn.__code__
        if not os.path.abspath(code.co_filename).startswith(manim_dir):
            return False
        held = [c.cell_contents for c in (fn.__closure__ or ()) if _cell_set(c)]
        held += list(fn.__defaults__ or ()) + list((fn.__kwdefaults__ or {}).values())
        return not any(callable(v) for v in held)

    original_scene.compile_animation_data = compile_animation_data
    manim.Scene = OnePassScene
    state.guard = Guard(audit_scene, trusted=(OnePassScene,))
    state.hooks = audit_scene.hooks

    real_get_module = module_ops.get_module
    real_spec = importlib.util.spec_from_file_location
    target: list = []  # the script's path while manim's own get_module loads it

    class InjectingLoader(importlib.machinery.SourceFileLoader):
        """manim's loader with the audit's name injection: only ``get_code`` differs, so ``exec_module`` and every
        frame a traceback of the module's execution shows are the plain render's (no bytecode is read or
        written: a cached .pyc would skip the injection, and an injected one must never reach a plain render)."""

        def get_code(self, fullname):
            path = self.get_filename(fullname)
            source = importlib.util.decode_source(self.get_data(path))
            tree = inject_names(ast.parse(source, filename=path))
            state.req["code_file"] = path
            state.tree = tree
            return compile(tree, path, "exec", dont_inherit=True)

    def spec_from_file_location(name, location=None, *args, **kwargs):
        if target and location is not None and not args and not kwargs and str(location) == str(target[0]):
            return real_spec(name, location, loader=InjectingLoader(name, str(location)))
        return real_spec(name, location, *args, **kwargs)

    importlib.util.spec_from_file_location = spec_from_file_location

    def take_baseline():
        # once, at manim's first get_module call (the script's module): a later call runs from the script's own
        # code (a script may call get_module itself), after it could have patched something
        if state.baseline_asked:
            return
        state.baseline_asked = True
        t0 = time.perf_counter()
        try:
            state.baseline, state.watch = _baseline()
            state.function_table = state.baseline  # (its function ids: State.function_ids, when first needed)
            state.log_pipeline = _LogPipeline()
        except Exception as exc:  # noqa: BLE001 - no baseline, no trust: the sample is audited separately
            state.flag(f"guard_error:{type(exc).__name__}")
        state.audit_sec += time.perf_counter() - t0

    def get_module(file_name):
        """manim's own loader (its frames unchanged), with the injection of :class:`InjectingLoader`."""
        if state.baseline_asked:
            # manim loads the script once; a later call runs from the script's own code (module_ops.get_module is
            # reachable), and a file of its choosing would become the "script" every script-code guard compares
            # code against (red team: a standard-library file loaded by path turned the script's own per-frame
            # rate_func into library code). Loaded as a plain render loads it, and never shared
            state.flag("module_loader:again")
            return real_get_module(file_name)
        take_baseline()
        if str(file_name) == "-" or not file_name.exists() or file_name.suffix != ".py":
            state.flag("module_loader")
            return real_get_module(file_name)
        module_name = ".".join(file_name.with_suffix("").parts)
        if onepass_rules.module_name_reason(module_name):
            state.flag(onepass_rules.module_name_reason(module_name))
        target[:] = [file_name]
        module = real_get_module(file_name)
        target.clear()
        # a check before manim builds the scene (red team: a module-level patch of what the render's file writer
        # runs in Scene.__init__ -- the audit-only run's writer differs -- restored itself at its first call, before
        # the first play's check)
        state.check_patches()
        # the scenes the reference audit would render (spatial_audit.md §3 step 5): every top-level class of a
        # Scene subclass, in source order, duplicates included
        t0 = time.perf_counter()
        if state.tree is None:
            state.flag("module_not_injected")
            return module
        for node in state.tree.body:
            if isinstance(node, ast.ClassDef):
                value = module.__dict__.get(node.name)
                if isinstance(value, type) and issubclass(value, original_scene):
                    state.audited.append(node.name)
                    for name in _script_overrides(value, original_scene, state.req.get("code_file")):
                        state.flag(f"scene_override:{name}")  # may run in the per-frame loop (play_internal)
                    if not issubclass(value, OnePassScene):
                        state.unhooked.add(node.name)
                        state.flag(f"unhooked_scene:{node.name}")
        if state.audited != [state.req.get("scene")]:
            state.flag("audited_scenes:" + ",".join(state.audited))
        state.audit_sec += time.perf_counter() - t0
        return module

    module_ops.get_module = get_module

    # an attribute that lives in no namespace -- a function's __code__, __defaults__ or __kwdefaults__, any object's
    # __class__ -- set after the script started, by whatever route (red team: manim's Mobject.set under a lowercase
    # alias with a computed name put a script object with a __bool__ into a library function's defaults, which no
    # namespace watch sees): CPython audits exactly these assignments
    def audit_hook(event, args):
        try:
            if event == "object.__setattr__" and state.baseline_asked and args[1] in AUDITED_SETATTR:
                # a function of the libraries' table (namedtuple sets the __defaults__ of the __new__ it just made)
                if args[1] == "__class__" or id(args[0]) in state.function_ids():
                    state.flag(f"script_patch:{_TYPE_NAME(type(args[0]))}.{args[1]}")
        except Exception:  # noqa: BLE001 - an audit hook that raises would abort the script's operation
            pass

    sys.addaudithook(audit_hook)

    # a failed render: the exception manim prints is examined (may the audit take the render's snapshots, and is
    # it one the audit would raise at the same point?) and the observers' own pass-through frames are unlinked
    # from its traceback, so the printed error is the plain render's (onepass_failure.py)
    from manim._config import error_console

    from prism_fast.audit import onepass_failure

    passes = {get_module.__code__: {real_get_module.__code__},
              compile_animation_data.__code__: {real_compile.__code__}}  # (unhooked scenes' plays, above)
    frames = onepass_failure.Frames.of(OnePassScene, original_scene, passes)
    real_print_exception = error_console.print_exception

    def print_exception(*args, **kwargs):
        try:
            state.failure = frames.examine(sys.exc_info()[1], scene_started=state.scene is not None,
                                           repr_seen=lambda: state.repr_seen)
        except Exception as exc:  # noqa: BLE001 - never changes what is printed
            state.failure = {"printed_as_plain": False, "accept": False, "why": f"examine_failed:{type(exc).__name__}"}
        _write_side_file()
        return real_print_exception(*args, **kwargs)

    error_console.print_exception = print_exception

    # an exception manim's CLI does not catch (the script's module body raised while manim loaded it) reaches the
    # interpreter's excepthook, which the render child calls as the interpreter would (execute/worker.py)
    real_excepthook = sys.excepthook

    def excepthook(exc_type, exc, tb):
        try:
            state.failure = frames.examine(exc, scene_started=False, repr_seen=lambda: state.repr_seen,
                                           module_file=state.req.get("code_file"))
        except Exception as err:  # noqa: BLE001 - never changes what is printed
            state.failure = {"printed_as_plain": False, "accept": False, "why": f"examine_failed:{type(err).__name__}"}
        _write_side_file()
        return real_excepthook(exc_type, exc, tb)

    sys.excepthook = excepthook

    # a Mobject class of the script with methods of its own: the render's camera (per frame) and the audit's
    # snapshots call them (get_family, get_points, ...) a different number of times than a plain render or the
    # audit-only run, so their side effects can change everything after (issue 19 red team); its __init__ runs once
    real_init_subclass = Mobject.__dict__["__init_subclass__"]

    def init_subclass(cls, **kwargs):
        real_init_subclass.__get__(None, cls)(**kwargs)
        try:
            for name in _script_methods(cls, state.req.get("code_file")):
                state.flag(f"script_mobject_method:{cls.__name__}.{name}")
        except Exception as exc:  # noqa: BLE001 - never breaks the script
            state.flag(f"guard_error:{type(exc).__name__}")

    Mobject.__init_subclass__ = classmethod(init_subclass)
    frames.passes[init_subclass.__code__] = {real_init_subclass.__func__.__code__}  # a pass-through frame

    real_repr = Mobject.__repr__

    progress_code = original_scene._get_animation_time_progression.__code__

    def mobject_repr(self):
        if not _for_a_hidden_progress_bar(progress_code):
            state.repr_seen = True  # the injected names may be in a printed error: a failed render is then re-run
        code_file = state.req.get("code_file")
        if code_file is not None and sys._getframe(1).f_code.co_filename == code_file:
            state.flag("mobject_repr_in_script")  # the injected names would be visible
        return real_repr(self)

    Mobject.__repr__ = mobject_repr

    real_text2svg = manimpango.text2svg

    def text2svg(settings, size, line_spacing, disable_liga, file_name, start_x, start_y, width, height, text,
                 *rest, **kw):
        out = real_text2svg(settings, size, line_spacing, disable_liga, file_name, start_x, start_y, width, height,
                            text, *rest, **kw)
        t0 = time.perf_counter()
        if (width, height) != AUDIT_PIXELS:
            alt = f"{file_name}.audit.svg"
            try:
                real_text2svg(settings, size, line_spacing, disable_liga, alt, start_x, start_y, *AUDIT_PIXELS,
                              text, *rest, **kw)
                if _svg_body(out) != _svg_body(alt):
                    state.flag("text_depends_on_canvas")
            except Exception as exc:
                state.flag(f"text_check_failed:{type(exc).__name__}")
            finally:
                try:
                    os.unlink(alt)
                except OSError:
                    pass
        state.audit_sec += time.perf_counter() - t0
        return out

    manimpango.text2svg = text2svg

    # the script must not patch the libraries (issue 19 red team: `Square.get_family = counted` runs in the render's
    # camera and in the one-pass audit's snapshots, a different number of times than in a plain render): every
    # callable of their modules and classes, as they stand right before the script's module runs (every trusted
    # instrument installed: these observers, the render's text boxes and TeX cache), is compared at every play,
    # remove and at the end -- the baseline is taken in get_module below


_SVG_HEAD = re.compile(rb"<svg\b[^>]*>")
_SURFACE_ID = re.compile(rb'id="surface\d+"')


def _svg_body(path) -> bytes:
    """The SVG without its root element's attributes (canvas width/height/viewBox) and without cairo's
    process-wide surface counter in the group id; everything else (every glyph path) must match."""
    with open(path, "rb") as fh:
        data = _SVG_HEAD.sub(b"<svg>", fh.read(), count=1)
    return _SURFACE_ID.sub(b'id="surface"', data)


def _for_a_hidden_progress_bar(progress_code, depth: int = 32) -> bool:
    """Whether this ``repr`` call builds the description of a play's progress bar (``Animation.__str__`` inside
    ``Scene._get_animation_time_progression``) while progress bars are off (the render's ``--progress_bar
    none``): then the text is never printed."""
    from manim import config

    if config.progress_bar != "none":
        return False
    frame = sys._getframe(2)
    while frame is not None and depth > 0:
        if frame.f_code is progress_code:
            return True
        frame, depth = frame.f_back, depth - 1
    return False


# Script code the per-frame loop can run (issue 19 red team): a play steps its animations at the render's frame
# times (15 fps) but at the audit's (60 fps) in the audit-only run, so script code called at each step -- a
# ``rate_func``/``path_func``/``int_func`` written in the script (or a manim closure over one), or a method of a
# script-defined Mobject class (``pointwise_become_partial``, ``interpolate``, ... are called per frame) -- runs a
# different number of times, at different alphas. With a side effect (``calls.append(t)``), every later statement
# of the script may differ between the two executions: the report, whether and where the scene fails.
# Refused conservatively: any script callable an animation holds (also those manim calls once, at begin()), any
# script-defined Mobject class among the mobjects it holds, and a scene class that overrides a manim Scene method
# other than the constructor and the entry points.
SCENE_ENTRY_POINTS = frozenset({"__init__", "construct", "setup", "tear_down"})  # run once, outside any play


def _function_ids(table: dict) -> set:
    """The ids of the plain functions a library table binds -- module functions, methods, and the functions of its
    static and class methods and properties -- all kept alive by the table."""
    import types

    out = set()
    for value in table.values():
        t = type(value)
        if t is staticmethod or t is classmethod:
            value, t = value.__func__, type(value.__func__)
        if t is property:
            out.update(id(f) for f in (value.fget, value.fset, value.fdel) if type(f) is types.FunctionType)
        elif t is types.FunctionType:
            out.add(id(value))
    return out


def _method_name(method) -> str:
    """The name a method of an ``.animate`` chain was defined under: its code's, not its ``__name__`` (red team:
    ``__name__`` is writable -- manim's ``Mobject.set`` under a lowercase alias renamed ``become`` to ``shift``, which
    then passed as a pure method); ``?`` for anything but a bound plain function (a script callable object)."""
    import types

    if type(method) is types.MethodType and type(method.__func__) is types.FunctionType:
        return method.__func__.__code__.co_name
    return "?"


def _render_callee(render_code, depth: int = 512) -> str | None:
    """The name of the function manim's ``Scene.render`` (``render_code``) called that led to this call
    (``construct``, ``setup``, ``tear_down``, or what it calls after them: ``scene_finished``), None when this call
    does not come from a render."""
    below, frame = None, sys._getframe(1)
    while frame is not None and depth > 0:
        if frame.f_code is render_code:
            return below.f_code.co_name if below is not None else None
        below, frame, depth = frame, frame.f_back, depth - 1
    return None


def _is_script_code(code, code_file) -> bool:
    return code_file is not None and getattr(code, "co_filename", None) == code_file


def _script_callable(value, code_file, depth: int = 0) -> bool:
    """Whether calling ``value`` may run script code (a script function, or a callable built around one). Exact
    types only, and an object's class before anything is read from the object (red team: a script subclass of
    ``functools.partial`` whose ``func`` is a script descriptor ran script code in the check itself)."""
    t = type(value)
    if depth > 6 or value is None or t in _PLAIN:
        return False
    import functools
    import types

    if t is types.MethodType:
        return _script_callable(value.__func__, code_file, depth + 1) or _script_class(type(value.__self__),
                                                                                       code_file)
    if t is types.FunctionType:
        if _is_script_code(value.__code__, code_file):
            return True
        cells = [c.cell_contents for c in (value.__closure__ or ()) if _cell_set(c)]
        extra = [*(value.__defaults__ or ()), *((value.__kwdefaults__ or {}).values())]
        return any(_script_callable(v, code_file, depth + 1) for v in (*cells, *extra) if callable(v))
    if isinstance(value, type):
        return _script_class(value, code_file) or _script_class(t, code_file)
    if _script_class(t, code_file):
        return True
    # (from here its class, a subclass included, holds no script code: reading the object runs none)
    if isinstance(value, functools.partial):
        parts = (value.func, *value.args, *value.keywords.values())
        return any(_script_callable(v, code_file, depth + 1) for v in parts if callable(v))
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.vectorize):
        pyfunc = vars(value).get("pyfunc")
        return pyfunc is not None and _script_callable(pyfunc, code_file, depth + 1)
    return False


def _cell_set(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


_TYPE_MRO = type.__dict__["__mro__"].__get__
_TYPE_NAMESPACE = type.__dict__["__dict__"].__get__
_TYPE_FLAGS = type.__dict__["__flags__"].__get__
_TYPE_NAME = type.__dict__["__name__"].__get__
AUDITED_SETATTR = frozenset({"__code__", "__defaults__", "__kwdefaults__", "__class__"})
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement (a static C type holds no Python code)


def _namespaces(cls) -> list:
    """The namespaces of ``cls``'s MRO and then of its metaclass's, read through ``type``'s own descriptors, never by
    an attribute lookup on the class (red team: ``cls.__mro__`` or ``vars(cls)`` runs a script metaclass's
    ``__getattribute__`` -- script code the check itself ran at every play, in the one-pass render only, which
    counted the checks into a position; its made-up ``__mro__`` hid the class's methods)."""
    if not isinstance(cls, type):
        return []
    meta = type(cls)
    classes = _TYPE_MRO(cls) if meta is type else (*_TYPE_MRO(cls), *_TYPE_MRO(meta))
    return [_TYPE_NAMESPACE(k) for k in classes if _TYPE_FLAGS(k) & _HEAP_TYPE]  # (a static type runs no Python)


def _functions(attr) -> list:
    """The plain functions a class attribute runs, found without any attribute lookup on it (which could run script
    code): a function, the function of a static or class method, a property's accessors; for any other object, the
    functions its class's namespaces hold (a descriptor's ``__get__``, a callable's ``__call__``)."""
    t = type(attr)
    if t is _FUNCTION:
        return [attr]
    if t is staticmethod or t is classmethod:
        attr, t = attr.__func__, type(attr.__func__)
        if t is _FUNCTION:
            return [attr]
    elif t is property:
        return [f for f in (attr.fget, attr.fset, attr.fdel) if type(f) is _FUNCTION]
    if not _TYPE_FLAGS(t) & _HEAP_TYPE:
        return []
    return [v for ns in _namespaces(t) for v in ns.values() if type(v) is _FUNCTION]


_FUNCTION = type(_functions)
_WRAPPERS = (staticmethod, classmethod, property)


def _runs_script(attr, code_file) -> bool:
    """Whether a class attribute runs a function of the script (:func:`_functions`; a plain function in one step)."""
    t = type(attr)
    if t is _FUNCTION:
        return attr.__code__.co_filename == code_file
    if t in _WRAPPERS or _TYPE_FLAGS(t) & _HEAP_TYPE:
        return any(f.__code__.co_filename == code_file for f in _functions(attr))
    return False


def _script_class(cls, code_file) -> bool:
    """A class with a function written in the script anywhere in its MRO or its metaclass's."""
    if code_file is None or _library_only(cls):
        return False
    return any(_runs_script(attr, code_file) for ns in _namespaces(cls) for attr in list(ns.values()))


# the classes whose namespaces the server's library table watches (warm()), held so that an id is never reused
_LIBRARY_CLASSES: tuple = ()
_LIBRARY_CLASS_IDS: frozenset | None = None
_LIBRARY_ONLY: dict = {}  # id(cls) -> (cls, its MRO, its metaclass's MRO) of classes found library-only


def _library_only(cls) -> bool:
    """Whether every heap class in ``cls``'s MRO and its metaclass's is a class whose namespace the library table
    watches (one a watched module defines: :func:`library_classes`): then none
    of their namespaces holds script code unless the script changed one, which the table's check at every play
    finds first (a script patch; accepted differences hold no script code) -- so the namespace walks of
    :func:`_script_methods` and :func:`_script_class` (a third of a play's checks on formula-heavy scenes) can be
    skipped. Remembered per class with the MRO tuples it was decided on (a new ``__bases__`` gives a new MRO)."""
    ids = _LIBRARY_CLASS_IDS
    if ids is None or not isinstance(cls, type):
        return False
    meta = type(cls)
    mro = _TYPE_MRO(cls)
    meta_mro = _TYPE_MRO(meta) if meta is not type else ()
    hit = _LIBRARY_ONLY.get(id(cls))
    if hit is not None and hit[0] is cls and hit[1] is mro and hit[2] is meta_mro:
        return True
    if all(id(k) in ids for k in (*mro, *meta_mro) if _TYPE_FLAGS(k) & _HEAP_TYPE):
        _LIBRARY_ONLY[id(cls)] = (cls, mro, meta_mro)
        return True
    return False


def library_classes(table: "_Table") -> tuple:
    """The classes whose namespaces ``table`` watches: those each watched module defines (``_ModulePart.classes``;
    not a class a module merely imports from an unwatched one, as ``weakref.WeakSet`` from ``_weakrefset``, nor
    nested classes: review)."""
    return tuple(cls for part in table.parts.values() for cls, _ns, _snap in part.classes)


_LIBRARY_NAMES: frozenset | None = None  # every attribute name a class of the watched libraries defines


def _library_names() -> frozenset:
    """Names manim's camera, renderer or the audit's snapshots could call on a mobject: any attribute a class of
    the watched libraries defines (from the install-time baseline), and every dunder."""
    global _LIBRARY_NAMES
    if _LIBRARY_NAMES is None:
        state = _STATE
        baseline = state.baseline if state is not None and state.baseline is not None else _library_callables()
        _LIBRARY_NAMES = frozenset(k[2] for k in baseline if k[1])
    return _LIBRARY_NAMES


def _script_methods(cls, code_file) -> list[str]:
    """The names of the functions the script defines in the class or its bases that library code could call: a
    name some library class defines (an override, e.g. ``get_family``, ``pointwise_become_partial``) or a dunder;
    never ``__init__`` (run once, where the script builds the object). A method of a name no library class has
    (``activate``) is only ever called by the script itself, the same number of times in both executions."""
    if code_file is None:
        return ["<unknown script>"]
    if _library_only(cls):
        return []
    names = _library_names()
    out = []
    # a script mixin's methods too (`class Sq(Mixin, Square)`), and a script metaclass's (`__getattribute__`,
    # `__instancecheck__`: library code and the check itself look attributes up on the class)
    for ns in _namespaces(cls):
        for name, attr in list(ns.items()):
            # (manim's Mobject.__init_subclass__ keeps the class's own __init__ as _original__init__)
            if name in ("__init__", "_original__init__") or name in out or not (name in names or name.startswith("__")):
                continue
            if _runs_script(attr, code_file):
                out.append(name)
    return out


def _script_code_reasons(anim, code_file, mobject_cls) -> list[str]:
    if code_file is None:
        return ["script_code_unknown"]
    reasons = []
    memo: dict = {}
    for key, value in list(vars(anim).items()):
        if isinstance(value, mobject_cls):
            family = value.get_family()
            if any(_script_methods(type(m), code_file) for m in family):
                reasons.append(f"script_mobject_class:{key}")
            elif any(_script_value(v, code_file, memo) for m in family for v in list(vars(m).values())):
                reasons.append(f"script_object:{key}")  # (red team: a script np.ndarray subclass as its points)
        elif callable(value) and _script_callable(value, code_file):
            reasons.append(f"script_callable:{key}")
        elif _script_value(value, code_file, memo):
            reasons.append(f"script_object:{key}")
    return reasons


def _script_overrides(scene_cls, original_scene, code_file) -> list[str]:
    out = []
    for klass in _TYPE_MRO(scene_cls):
        if klass is original_scene:
            break
        for name, attr in list(_TYPE_NAMESPACE(klass).items()):
            if name not in SCENE_ENTRY_POINTS and hasattr(original_scene, name) and _runs_script(attr, code_file):
                out.append(name)
    if type(scene_cls) is not type and _script_class(type(scene_cls), code_file):
        out.append("<metaclass>")  # its hooks run wherever the scene class is looked at
    return out


PATCH_WATCHED = ("manim", "manimpango", "numpy", "scipy", "cairo", "PIL", "math", "cmath", "random", "itertools",
                 "functools", "collections", "operator", "statistics", "colorsys", "copy", "decimal", "fractions",
                 "bisect", "heapq", "re", "string", "textwrap", "typing", "dataclasses", "enum", "abc", "numbers",
                 # where the render logs and shows progress, which the audit-only run does differently (red team:
                 # `type(logger).info = counted`): see _LogPipeline
                 "logging", "rich", "tqdm",
                 # what the render's file writer and caching run, and the audit-only run does not or differently
                 # (red team: `manim.utils.file_ops.Path.with_suffix = counted`, pathlib reached through a manim
                 # module), and the other libraries manim's modules bind (reachable as their attributes). Not every
                 # module: scanning one runs its attribute hooks (torch's `__getattr__` initialises CUDA)
                 "pathlib", "os", "posixpath", "genericpath", "shutil", "io", "json", "hashlib", "zlib", "tempfile",
                 "subprocess", "threading", "time", "datetime", "weakref", "contextlib", "types", "inspect",
                 "copyreg", "warnings", "traceback", "codecs", "struct", "pickle", "base64", "uuid", "platform",
                 "glob", "fnmatch", "urllib", "xml", "html", "unicodedata", "locale", "gettext", "zipfile", "gzip",
                 "av", "srt", "pydub", "svgelements", "mapbox_earcut", "isosurfaces", "pathops", "moderngl",
                 "screeninfo", "decorator", "pygments", "networkx", "watchdog", "cloup", "click")


_WATCHED_ROOTS = frozenset(PATCH_WATCHED)


def _watched(mod_name: str, mod) -> bool:
    return mod is not None and mod_name.split(".")[0] in _WATCHED_ROOTS


def _library_callables() -> dict:
    """``{(module, class or "", name): value}`` of every callable (function, class, descriptor) bound in the watched
    libraries' modules and in the classes they define."""
    out = {}
    for mod_name, mod in list(sys.modules.items()):
        if not _watched(mod_name, mod):
            continue
        try:
            items = list(vars(mod).items())
        except TypeError:
            continue
        for name, value in items:
            if callable(value) or hasattr(value, "__get__"):
                out[(mod_name, "", name)] = value
            if isinstance(value, type) and getattr(value, "__module__", None) == mod_name:
                for attr, member in list(vars(value).items()):
                    if callable(member) or hasattr(member, "__get__"):
                        out[(mod_name, value.__qualname__, attr)] = member
    return out


class _ModulePart:
    """One watched module's share of the table (``_library_callables``' entries for it, in the same order), with
    what is needed to tell whether it is still current: the module object, a copy of its namespace and of the
    namespace of every class it defines (``classes``: class, live namespace, copy), and -- where
    :data:`_VERSIONS` works -- live views of those namespaces' version tags and the tags they had when read."""

    __slots__ = ("name", "mod", "ns", "snap", "classes", "entries", "dicts", "views", "tags")

    def __init__(self, mod_name: str, mod):
        self.name = mod_name
        self.mod, self.entries, self.classes, self.dicts, self.views, self.tags = mod, {}, [], [], [], ()
        try:
            self.ns = vars(mod)
        except TypeError:  # no namespace: contributes nothing (and is scanned again whenever asked)
            self.ns, self.snap = None, None
            return
        versions = _VERSIONS
        if versions is not None:
            # each tag is read *before* its namespace: a change made after the read (another thread's import
            # binding a submodule) then shows as a new tag at the next check, never as a part falsely current
            versions = self._tag(versions, self.ns)
        if versions is not None:
            tags = [self.views[-1].value]
        items = list(self.ns.items())
        self.snap = dict(items)
        for name, value in items:
            if callable(value) or hasattr(value, "__get__"):
                self.entries[(mod_name, "", name)] = value
            if isinstance(value, type) and getattr(value, "__module__", None) == mod_name:
                cns = vars(value)
                if versions is not None:
                    versions = self._tag(versions, cns)
                    if versions is not None:
                        tags.append(self.views[-1].value)
                members = list(cns.items())
                self.classes.append((value, cns, dict(members)))
                for attr, member in members:
                    if callable(member) or hasattr(member, "__get__"):
                        self.entries[(mod_name, value.__qualname__, attr)] = member
        if versions is not None:
            self.tags = tuple(tags)
        else:
            self.dicts, self.views = [], []  # an untagged part: the watch compares it name by name

    def namespaces(self) -> list:
        """``(live namespace, copy)`` of the module and of each class it defines (compared name by name where there
        are no tags)."""
        if self.snap is None:
            return []
        return [(self.ns, self.snap), *[(cns, snap) for _, cns, snap in self.classes]]

    def _tag(self, versions: "_DictVersions", ns):
        """Add ``ns``'s dict and its tag view; None (no tags for this part: compared entry by entry) where the
        namespace is no dict nor a mappingproxy over one (``typing.io`` is a class in ``sys.modules``: its
        ``vars()`` is a mappingproxy)."""
        try:
            raw = ns if type(ns) is dict else versions.raw(ns)
        except TypeError:
            return None
        self.dicts.append(raw)
        self.views.append(versions.view(raw))
        return versions

    def current(self, mod) -> bool:
        """Whether a scan of ``mod`` now would give this part: same module, same namespace (every name bound to
        the very same object) and the same for every class it defines. With version tags: no namespace changed
        since it was read (any insertion, deletion or rebinding gives a dict a new tag)."""
        if mod is not self.mod:
            return False
        return self.unchanged()

    def unchanged(self) -> bool:
        """:meth:`current` for the module this part was read from (the caller knows it is still the one bound)."""
        if self.snap is None:
            return False
        if self.tags:
            return _DictVersions.same(self.views, self.tags)
        return all(_same(ns, snap) for ns, snap in self.namespaces())


def _same(ns, snap: dict) -> bool:
    return len(ns) == len(snap) and all(map(operator.is_, map(ns.get, snap, itertools.repeat(_MISSING)),
                                            snap.values()))


class _DictVersions:
    """CPython 3.11's dict version tags (PEP 509: ``ma_version_tag``, a 64-bit field right after ``ma_used``,
    given a new value from a global counter by every insertion, deletion and rebinding of a key). A watch that
    compares one tag per namespace instead of every callable it binds: ~3,000 reads instead of ~37,000
    lookups (13.5 ms) at every play. Only where :meth:`works` proved it on this interpreter at import; otherwise
    the exact comparison of every entry is used (same findings, slower)."""

    OFFSET = 3 * 8  # PyObject_HEAD (refcount, type) and ma_used

    def __init__(self):
        import ctypes
        import gc

        self._uint64 = ctypes.c_uint64
        self._referents = gc.get_referents

    def view(self, d: dict):
        """A live view of ``d``'s tag (``.value`` reads it now); valid while ``d`` lives (the caller holds it)."""
        return self._uint64.from_address(id(d) + self.OFFSET)

    def tag(self, d: dict) -> int:
        return self.view(d).value

    def raw(self, proxy) -> dict:
        """The dict behind a class's ``mappingproxy`` (what ``setattr``/``delattr`` on the class change)."""
        if type(proxy) is not types.MappingProxyType:
            raise TypeError(f"not a mappingproxy: {type(proxy).__name__}")
        inner = self._referents(proxy)  # a dict, or a subclass of it in C (ctypes' StgDict): the same header
        if len(inner) != 1 or not isinstance(inner[0], dict):
            raise TypeError("mappingproxy without a dict")
        return inner[0]

    @staticmethod
    def same(views: list, tags: tuple) -> bool:
        return tuple([v.value for v in views]) == tags  # ints: == is exact

    @classmethod
    def works(cls) -> "_DictVersions | None":
        """An instance when this interpreter's dicts carry the tags where expected (checked on fresh dicts and on a
        class: every kind of change must give a new tag, and a read must not), else None."""
        if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11) or sys.maxsize != 2 ** 63 - 1:
            return None
        try:
            v = cls()

            class Probe:
                pass

            probe = {"a": 1}
            ns = v.raw(vars(Probe))
            seen = [v.tag(probe), v.tag(ns)]
            probe["b"] = 2
            seen.append(v.tag(probe))
            probe["a"] = 3
            seen.append(v.tag(probe))
            del probe["b"]
            seen.append(v.tag(probe))
            _ = probe.get("a"), dict(probe), list(ns.items())  # reads: no new tag
            if v.tag(probe) != seen[-1] or v.tag(ns) != seen[1]:
                return None
            Probe.x = 1
            seen.append(v.tag(ns))
            Probe.x = 2
            seen.append(v.tag(ns))
            del Probe.x
            seen.append(v.tag(ns))
            if len(set(seen)) != len(seen) or ns is not v.raw(vars(Probe)) or "x" in vars(Probe):
                return None
            return v
        except Exception:  # noqa: BLE001 - no tags: the exact comparison is used
            return None


_VERSIONS: _DictVersions | None = _DictVersions.works()


class _Merged(collections.abc.Mapping):
    """The merged library table (what :func:`_library_callables` returns) as a read-only view of its module parts:
    every key starts with its own module's name, so the part that holds a key is ``parts[key[0]]``, and a part never
    changes once built. The same content as the merged dict it replaces, without copying ~38,000 entries at each
    update: in a freshly forked render child that copy touched as many of the server's objects (reference counts)
    and cost ≈ 16 ms of copy-on-write page faults, against ≈ 1 ms the second time (docs/scaling.md, sixteenth
    session)."""

    __slots__ = ("_parts", "_len")

    def __init__(self, parts: dict):
        self._parts = parts  # module name -> _ModulePart; the caller's copy, never changed afterwards
        self._len: int | None = None

    def _part(self, key):
        return self._parts.get(key[0]) if type(key) is tuple and key else None

    def __getitem__(self, key):
        part = self._part(key)
        if part is None:
            raise KeyError(key)
        return part.entries[key]

    def __contains__(self, key) -> bool:
        part = self._part(key)
        return part is not None and key in part.entries

    def __iter__(self):
        for part in self._parts.values():
            yield from part.entries

    def __len__(self) -> int:
        if self._len is None:
            self._len = sum(len(part.entries) for part in self._parts.values())
        return self._len

    def items(self):
        return _MergedItems(self)

    def values(self):
        return _MergedValues(self)


class _MergedItems(collections.abc.ItemsView):
    __slots__ = ()

    def __iter__(self):
        for part in self._mapping._parts.values():
            yield from part.entries.items()


class _MergedValues(collections.abc.ValuesView):
    __slots__ = ()

    def __iter__(self):
        for part in self._mapping._parts.values():
            yield from part.entries.values()


class _Table:
    """The table of :func:`_library_callables`, built once in the prefork server (:func:`warm`) and brought up to
    date in each render child just before the script's module runs (:meth:`current`): only the modules whose
    namespace, or a class's namespace they define, no longer holds the very same objects are scanned again (the
    child's own instruments -- text boxes, TeX cache, these observers -- rebind a few manim functions after the
    fork), modules imported since are added and those gone are dropped, so the result equals a fresh
    ``_library_callables()`` there (tested) for a few milliseconds instead of ~100."""

    def __init__(self):
        self.parts = {name: _ModulePart(name, mod) for name, mod in list(sys.modules.items()) if _watched(name, mod)}
        self.merged: _Merged | None = None
        self.watch: _Watch | None = None  # the merged table's watch (kept while no part changes)
        self.live: dict | None = None  # the watched modules of sys.modules at the last update ...
        self.modules_tag: int | None = None  # ... and sys.modules' version tag then (None: no tags)

    def current(self) -> tuple["_Merged", "_Watch"]:
        modules_tag = _VERSIONS.tag(sys.modules) if _VERSIONS is not None else None
        if modules_tag is not None and modules_tag == self.modules_tag and self.live is not None:
            # sys.modules not changed since the last update (no insertion, deletion or rebinding: its version tag):
            # the same names bound to the same module objects, so only the namespaces need checking -- without
            # touching every module object again (in a freshly forked child that costs ≈ 3 ms of copy-on-write)
            live, same_modules = self.live, True
        else:
            live = {name: mod for name, mod in list(sys.modules.items()) if _watched(name, mod)}
            same_modules = False
        self.live, self.modules_tag = live, modules_tag
        if same_modules:
            # every part is of a module still bound under its name (the parts are those of ``live``, made at an
            # earlier update): only the namespaces can have changed; the parts are walked, not the modules
            stale = [part for part in self.parts.values() if not part.unchanged()]
            for part in list(stale):
                self.parts[part.name] = fresh = _ModulePart(part.name, part.mod)
                stale.append(fresh)
        else:
            stale = [self.parts[name] for name in self.parts.keys() - live.keys()]  # modules gone
            for name, mod in live.items():
                part = self.parts.get(name)
                if part is None or not part.current(mod):
                    if part is not None:
                        stale.append(part)
                    self.parts[name] = fresh = _ModulePart(name, mod)
                    stale.append(fresh)  # (a change: the watch and the merged view are rebuilt below)
        dirty = self.merged is None or bool(stale)
        if dirty:
            if self.parts.keys() != live.keys() or list(self.parts) != list(live):
                self.parts = {name: self.parts[name] for name in live}
        if dirty or self.watch is None:
            self.watch = _Watch.over(self.parts)
            # the merged table is a view of the watch's own copy of the parts (never changed afterwards), so an
            # earlier baseline keeps its own
            self.merged = _Merged(self.watch.parts)
        return self.merged, self.watch


_TABLE: _Table | None = None


def warm() -> None:
    """Called once by the prefork server after it imported this module (``execute/worker.py``), before any fork:
    matplotlib's ``Path`` for the overlap geometry (``polygon.preload_matplotlib``) and the library table every
    render child starts from."""
    global _TABLE, _LIBRARY_CLASSES, _LIBRARY_CLASS_IDS
    from prism_fast.audit.polygon import preload_matplotlib

    preload_matplotlib()  # the snapshots' overlap kernel, imported once here (before the table: its modules too)
    _TABLE = _Table()
    _TABLE.current()  # the merged table and its watch, so a child only redoes the parts that changed
    _LIBRARY_CLASSES = library_classes(_TABLE)
    _LIBRARY_CLASS_IDS = frozenset(map(id, _LIBRARY_CLASSES))


def _baseline() -> tuple[dict, "_Watch"]:
    """The libraries' callables as they stand now, and their watch (the server's table brought up to date, or a
    table of a full scan where there is none: the check always has the namespaces' copies to compare)."""
    return (_TABLE if _TABLE is not None else _Table()).current()


class _Watch:
    """Live views of the baseline's namespaces: ``changed()`` is true whenever :func:`_patched_since` could find
    something (any name of a watched module or class bound to another object, added or deleted), in well under a
    millisecond instead of rebuilding the whole table at every play. It keeps the table's parts, so that a check
    compares only the modules that differ. With version tags it compares one tag per namespace (any change to a
    namespace makes it true: the check then finds what, if anything, matters); a part without tags (another
    interpreter, or a namespace that is no dict) is compared name by name with its copy (the same findings,
    slower)."""

    def __init__(self, parts: dict, views: list | None = None, tags: tuple = ()):
        self.parts = parts  # module name -> _ModulePart of the baseline
        self.views = views  # with version tags: the parts' tag views (their dicts are held by the parts) ...
        self.tags = tags  # ... and the tags they had
        # the parts without tags (all of them where tags are not proven): every namespace, not only its callables
        # and not only its size (red team: deleting a constant and binding an inherited method in the same gap keeps
        # a class's size; a module's data is rebound to a script object -- `mobject.it = Chain()` -- without
        # touching a callable)
        self.namespaces = [n for p in parts.values() if not p.tags for n in p.namespaces()]

    @classmethod
    def over(cls, parts: dict) -> "_Watch":
        parts = dict(parts)
        values = parts.values()
        if _VERSIONS is None:
            return cls(parts)
        # the tags of every part that has them, and the name-by-name comparison of the few that do not
        return cls(parts, [v for p in values for v in p.views], tuple(t for p in values for t in p.tags))

    def changed(self) -> bool:
        if self.views is not None and not _DictVersions.same(self.views, self.tags):
            return True
        return not all(_same(ns, snap) for ns, snap in self.namespaces)


def _instance_patches(scene, code_file=None) -> list[str]:
    """A method shadowed on an instance (``square.get_family = f``): the scene's and its mobjects'; and an instance
    of a script class held by a mobject (red team: ``square.points = square.points.view(A)``, ``A`` a script
    ``np.ndarray`` subclass whose ``__array_finalize__`` the camera runs at every frame, counted the frames)."""
    if scene is None:
        return []
    out = set()
    script_types: dict = {}
    for obj in (scene, *[m for top in list(getattr(scene, "mobjects", None) or []) for m in top.get_family()]):
        cls = type(obj)
        for name, value in list(getattr(obj, "__dict__", {}).items()):
            if callable(value) and callable(getattr(cls, name, None)):
                out.add(f"{cls.__name__}().{name}")
            elif obj is not scene and code_file is not None and _script_value(value, code_file, script_types):
                out.add(f"{cls.__name__}().{name}:script_object")
    return sorted(out)[:5]


class _LogPipeline:
    """Where the render's log records and console output go, as it was right before the script ran (red team):
    the render logs what the audit-only run does not (a partial movie file written, at every play), so a script
    handler or filter (``logger.addHandler(counter)``, ``logger.addFilter(calls.append)``), a callable bound on a
    logger, handler, formatter or console (``logger.info = counted``) or a script object put in their place
    (``handler.lock``, ``console.file``) would count the render's work into the scene. Every logger, handler,
    formatter and manim console must keep its handlers and filters, the callables bound on it, and hold no instance
    of a script class. (Their classes are watched by the library table: ``logging``, ``rich``, ``tqdm``.)"""

    def __init__(self):
        self.objects = {id(o): (o, self._snap(o)) for o in self._objects()}

    @staticmethod
    def _objects() -> list:
        import logging

        import manim

        loggers = [logging.root, *[lg for lg in list(logging.Logger.manager.loggerDict.values())
                                   if isinstance(lg, logging.Logger)]]
        handlers = [h for lg in loggers for h in list(getattr(lg, "handlers", []))]
        if logging.lastResort is not None:
            handlers.append(logging.lastResort)
        out = [*loggers, *handlers, logging.Logger.manager]
        for h in handlers:
            out.extend(x for x in (getattr(h, "formatter", None), getattr(h, "console", None)) if x is not None)
            out.extend(getattr(h, "filters", []))
        for lg in loggers:
            out.extend(lg.filters)
        for name in ("console", "error_console"):
            if getattr(manim, name, None) is not None:
                out.append(getattr(manim, name))
        return out

    @staticmethod
    def _snap(obj) -> dict:
        # callables bound on the instance, its handler and filter lists (contents), its sinks
        out = {}
        for name, value in list(getattr(obj, "__dict__", {}).items()):
            if name in ("handlers", "filters") and isinstance(value, list):
                out[name] = (value, tuple(value))
            elif callable(value) or hasattr(value, "__get__") or name in ("formatter", "console", "file", "_file",
                                                                         "lock", "parent"):
                out[name] = (value, None)
        return out

    def changes(self, code_file) -> list[str]:
        out = set()
        script_types: dict = {}
        for obj, snap in self.objects.values():
            now = self._snap(obj)
            where = f"{type(obj).__name__}({getattr(obj, 'name', '')})"
            for name in snap.keys() | now.keys():
                old, new = snap.get(name, (_MISSING, None)), now.get(name, (_MISSING, None))
                if old[0] is not new[0] or (old[1] is not None and old[1] != new[1]):
                    out.add(f"{where}.{name}")
            for name, value in list(getattr(obj, "__dict__", {}).items()):
                t = type(value)
                if t not in script_types:
                    script_types[t] = _script_class(t, code_file)
                if script_types[t] or (callable(value) and _script_callable(value, code_file)):
                    out.add(f"{where}.{name}")
        return sorted(out)[:5]


def _script_value(value, code_file, memo: dict, depth: int = 0) -> bool:
    """Whether library code working on ``value`` (a mobject's or an animation's attribute) may run script code: an
    instance of a class with a script method library code could call (:func:`_script_methods`: an ``np.ndarray``
    subclass's ``__array_finalize__``, a ``float`` subclass's ``__mul__``; not a script mobject class with only its
    ``__init__``), a numpy array of objects, or a list or tuple holding one. ``memo``: type -> that verdict."""
    t = type(value)
    hit = memo.get(t)
    if hit is None:
        hit = memo[t] = bool(_script_methods(t, code_file))
    if hit:
        return True
    dtype = getattr(value, "dtype", None)
    if getattr(dtype, "hasobject", False):
        # an array of Python objects: numpy runs their methods; library objects are the patch check's (manim's
        # AnimationGroup keeps its animations in a structured array with an object field: anims_with_timings)
        import numpy as np

        if depth or not isinstance(value, np.ndarray) or value.size > 256:
            return True
        fields = [name for name, spec in (dtype.fields or {}).items() if spec[0].hasobject]
        items = [x for f in fields for x in value[f].ravel().tolist()] if fields else value.ravel().tolist()
        return any(_script_value(x, code_file, memo, 1) for x in items)
    if depth == 0 and t in (list, tuple) and len(value) <= 256:
        return any(_script_value(v, code_file, memo, 1) for v in value)
    return False


_MISSING = object()
_OWN_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _ours(value) -> bool:
    """One of the render's own instruments: a plain function of this package (never a bound method: its
    ``__self__`` may be the script's, e.g. ``Lib.f = self.remove`` with the script's scene)."""
    import types

    if not isinstance(value, types.FunctionType):
        return False
    code = getattr(value, "__code__", None)
    return code is not None and os.path.abspath(code.co_filename).startswith(_OWN_PACKAGE)


def _set_default(old, value) -> bool:
    """``Mobject.set_default(**kwargs)``, manim's documented way to change a class's defaults: ``__init__`` becomes
    ``partialmethod(<the previous __init__>, **kwargs)`` (chains of calls nest). Pure when the bound arguments
    hold no callable (they are data: colours, widths, opacities); the same call in both executions."""
    import functools

    while isinstance(value, functools.partialmethod):
        if any(callable(a) for a in (*value.args, *value.keywords.values())):
            return False
        value = value.func
        if value is old:
            return True
    return False


def _patched_since(baseline: dict, base_watch: "_Watch | None", now: dict, watch: "_Watch",
                   code_file: str | None = None) -> list[str]:
    """``_patched(baseline, now)`` and :func:`_rebound_data`, comparing only the modules whose table part is not
    the very same object in both (a part is never changed once built: the table replaces the part of a module
    that changed). The other modules' namespaces are the same objects on both sides, so they can add nothing: not
    a rebinding, not a new name on a baseline class (its module's part would differ), not a deletion."""
    old_parts = getattr(base_watch, "parts", None)
    new_parts = watch.parts
    if old_parts is None or new_parts is None:
        return _patched(baseline, now)
    names = {n for n in old_parts.keys() | new_parts.keys() if old_parts.get(n) is not new_parts.get(n)}
    before = {k: v for n in names if n in old_parts for k, v in old_parts[n].entries.items()}
    after = {k: v for n in names if n in new_parts for k, v in new_parts[n].entries.items()}
    found = set(_patched(before, after))
    for n in names & old_parts.keys() & new_parts.keys():
        found.update(_rebound_data(n, old_parts[n], new_parts[n], code_file))
    return sorted(found)[:5]


_PLAIN = frozenset({type(None), bool, int, float, complex, str, bytes})


def _plain(value, depth: int = 0) -> bool:
    """Data through which library code cannot reach the script: None, numbers, strings (exact types, not a
    script's subclass with its own ``__mul__``), numpy's own numeric scalars and arrays, and exact tuples, lists,
    sets and dicts of those."""
    t = type(value)
    if t in _PLAIN:
        return True
    if depth < 3 and t in (tuple, list, set, frozenset) and len(value) <= 1024:
        return all(_plain(v, depth + 1) for v in value)
    if depth < 3 and t is dict and len(value) <= 1024:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    np = sys.modules.get("numpy")
    if np is not None and getattr(t, "__module__", None) == "numpy":
        if t is np.ndarray:
            return not value.dtype.hasobject
        return isinstance(value, np.generic) and not isinstance(value, np.object_)
    return False


def _library_module(value) -> bool:
    """A watched library's module as imported (not a module object a script made and filled itself)."""
    import types

    if not isinstance(value, types.ModuleType):
        return False
    return any(m is value and _watched(name, m) for name, m in list(sys.modules.items()))


def _rebound_data(mod_name: str, old: "_ModulePart", new: "_ModulePart", code_file: str | None = None) -> list[str]:
    """Names of a module, or of a class it defines, bound since ``old`` -- rebound, or new -- to a value through
    which library code could reach the script (:func:`_reaches_script`; red team: ``_patched`` compares callables
    only, but library code also calls *through* data and through names it looks up: ``manim.mobject.mobject.it =
    Chain()``, a script object whose ``chain`` ``get_family`` calls at every frame; ``mobject.len = counted``, a new
    module global that shadows the builtin; a class's data attribute set to a script number with its own
    ``__mul__``). Library objects a library binds lazily (tqdm's lock and monitor thread on its class) are not
    findings. A callable rebound in place of a callable is ``_patched``'s to judge (``set_default``); the render's
    own instruments are accepted. Data deleted is not a finding (library code then fails, in both executions
    alike). ``code_file`` None (the script unknown): any value but plain data is a finding."""
    if old.snap is None or new.snap is None:
        return []
    out = []
    pairs = [(mod_name, "", old.snap, new.snap)]
    old_classes = {id(k): snap for k, _, snap in old.classes}
    for klass, _, snap in new.classes:
        if id(klass) in old_classes:  # (a class newly bound here is the module's own rebinding, found above)
            pairs.append((mod_name, klass.__qualname__, old_classes[id(klass)], snap))
    for module, qualname, before, after in pairs:
        for name, value in after.items():
            prior = before.get(name, _MISSING)
            if prior is value or _plain(value) or _ours(value) or _library_module(value):
                continue
            key = (module, qualname, name)
            if prior is not _MISSING and key in old.entries and key in new.entries:
                continue
            if code_file is None or _reaches_script(value, code_file):
                out.append(".".join(p for p in key if p))
    return out


def _reaches_script(value, code_file, depth: int = 0) -> bool:
    """Whether library code using ``value`` may run script code or act on the script's objects: a script callable
    or an instance of a class with script code (:func:`_script_callable`), a builtin container's method
    (``calls.append``), or a container or an object holding one (a library ``Square`` with a script
    function as an attribute, a namedtuple of one). Its class is judged before the object is read."""
    import types

    t = type(value)
    if t in _PLAIN:
        return False
    if _script_callable(value, code_file):
        return True
    if t is types.BuiltinMethodType:  # a container's method (`calls.append`): acts on what the script reads
        import collections

        owner = type(value.__self__)
        return issubclass(owner, (list, dict, set, bytearray, collections.deque)) or _script_class(owner, code_file)
    if depth >= 2 or isinstance(value, type):
        return False
    if isinstance(value, (tuple, list, set, frozenset)):
        items = list(value)[:256]
    elif isinstance(value, dict):
        items = [*list(value)[:256], *list(value.values())[:256]]
    else:
        try:
            items = list(vars(value).values())[:256]
        except TypeError:  # no instance namespace
            return False
    return any(_reaches_script(v, code_file, depth + 1) for v in items)


def _patched(baseline: dict, now: dict | None = None) -> list[str]:
    """What changed from ``baseline`` to ``now`` (default: a fresh :func:`_library_callables`): a callable rebound,
    or one bound on a watched class under a name it did not have (``Square.get_family = f``, inherited before), or
    one deleted. New modules (imported later) are not changes."""
    if now is None:
        now = _library_callables()
    classes = {(k[0], k[1]) for k in baseline if k[1]}
    out = set()
    kept = 0  # baseline entries still bound (same object or not)
    for key, value in now.items():
        old = baseline.get(key, _MISSING)
        if old is not _MISSING:
            kept += 1
        if old is value or _ours(value) or _set_default(old, value):
            continue  # unchanged, the render's own instruments (execute/textboxes.py), or manim's set_default
        if old is not _MISSING or (key[1] and (key[0], key[1]) in classes):
            out.add(".".join(p for p in key if p))
    if kept < len(baseline):
        # a name deleted from a module or class (red team): never accepted -- accepted, the baseline is re-taken
        # without it (check_patches) and `del module.f` then `module.f = counted` passes as a new name; and a class
        # deleted from its defining module (`del camera_module.Camera`) is scanned no more, its methods patchable
        # unseen. A module gone from sys.modules is not the script's doing (it has no `sys`).
        for key in baseline.keys() - now.keys():
            if sys.modules.get(key[0]) is not None:
                out.add(".".join(p for p in key if p))
    return sorted(out)[:5]


def _salvaged_records(state: _State, failure: dict) -> list:
    """The observations the audit-only run writes for a script whose scene raised (child.run_audit,
    spatial_audit.md §3 step 6): the scene's snapshots salvaged when it has any (process_final_results' salvage
    case), else none (report ``{}``); an exception outside the scene's render (module, constructor) salvages no
    instance (one scene class)."""
    scene = state.scene
    mixin = state.hooks
    if failure.get("where") == "render" and scene is not None and mixin is not None:
        if mixin.audit_log.fget(scene) or mixin.segment_snapshots.fget(scene):
            t0 = time.perf_counter()
            hooks.ERR_STREAM = io.StringIO()  # the audit's own stderr lines must not reach the render's stderr
            try:
                mixin.process_final_results(scene)
            except Exception as exc:  # noqa: BLE001 - the audit-only run reports it; this sample is re-run
                state.flag(f"salvage_failed:{type(exc).__name__}")
                return []
            finally:
                hooks.ERR_STREAM = None
                state.audit_sec += time.perf_counter() - t0
            rec = mixin.record_of(scene)
            if rec is not None:
                return [rec]
    return []


def _write_side_file() -> None:
    """Write the sealed out file: at exit, and already when a failed render's exception is printed (a failure
    inside a play leaves manim's movie writer waiting, so such a render only ends at its timeout, killed before
    any exit handler runs); the exit call rewrites it with whatever was recorded since."""
    state = _STATE
    if state is None:
        return
    try:
        state.check_patches()
        scene = state.scene
        for evidence in (state.guard.verify(scene) if state.guard is not None else ["no_guard"]):
            state.flag(f"tamper:{evidence}")  # the separate audit then judges (and marks) the script
        records = None  # the observation records of the audited scene (the parent computes the report)
        failure = state.failure
        unhooked = bool(state.audited) and set(state.audited) <= state.unhooked
        if unhooked:
            # every scene the audit would render subclasses manim's unpatched Scene (Q-SPATIAL-1): it renders them
            # with no hook, so its report is {} whatever they do; nothing else to distrust
            state.reasons = [r for r in state.reasons if not r.startswith("unhooked_scene:")]
        if failure is not None and failure.get("accept"):
            if state.salvaged is None:
                state.salvaged = [] if unhooked else _salvaged_records(state, failure)
            records = state.salvaged
        elif failure is not None:
            state.flag("failure_not_shared")  # (also if the script printed an exception itself and went on)
        elif unhooked:
            records = []
        elif scene is not None and state.hooks is not None and state.hooks.record_of(scene) is not None:
            records = [state.hooks.record_of(scene)]
        elif not state.reasons:
            state.flag("no_report")
        observations = None if records is None else encode_scenes(records)
        doc = {"reasons": state.reasons, "audited_scenes": state.audited, "observations": observations,
               "audit_sec": round(state.audit_sec, 6)}
        if unhooked:
            doc["unhooked"] = True
        if failure is not None:
            doc["failure"] = failure
        write_result({"out_file": state.req["side_file"], "seal": state.req["seal"]}, doc)  # sealed (observers.py)
    except Exception:  # the render's exit must not change
        pass
