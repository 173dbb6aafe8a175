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
import json
import os
import re
import sys
import time

from prism_fast.audit import hooks, onepass_rules
from prism_fast.audit.config import AuditConfig
from prism_fast.audit.inject import inject_names
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
    import io

    import manim
    import manimpango
    from manim.animation.transform import _MethodAnimation
    from manim.mobject.mobject import Mobject
    from manim.utils import module_ops

    cfg = AuditConfig.from_dict(state.req.get("audit_cfg", {}))
    original_scene = manim.Scene
    audit_scene = hooks.make_audit_scene(original_scene, cfg, REFERENCE)
    quiet = io.StringIO()  # the audit's own stderr lines must not reach the render's stderr
    pure = tuple(getattr(manim, n) for n in PURE_ANIMATIONS if hasattr(manim, n))
    pure_set = set(pure)
    groups = tuple(getattr(manim, n) for n in GROUPS if hasattr(manim, n))

    def check_animation(anim) -> None:
        if isinstance(anim, _MethodAnimation):
            for method, _args, _kwargs in getattr(anim, "methods", []):
                name = getattr(method, "__name__", "?")
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

    class OnePassScene(audit_scene):
        def ensure_audit_vars(self):
            if not hasattr(self, "_save_audit_images"):
                self._save_audit_images = False  # no frame copies, no PNG: the render's frames stay untouched
            super().ensure_audit_vars()

        def compile_animation_data(self, *args, **kwargs):
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
    manim.Scene = OnePassScene
    state.guard = Guard(audit_scene, trusted=(OnePassScene,))

    real_get_module = module_ops.get_module

    def get_module(file_name):
        """manim's loader, with the audit's name injection applied to the module's code."""
        import importlib.machinery
        import importlib.util
        import warnings
        from pathlib import Path

        if str(file_name) == "-" or not file_name.exists() or file_name.suffix != ".py":
            state.flag("module_loader")
            return real_get_module(file_name)
        module_name = ".".join(file_name.with_suffix("").parts)
        if onepass_rules.module_name_reason(module_name):
            state.flag(onepass_rules.module_name_reason(module_name))
        warnings.filterwarnings("default", category=DeprecationWarning, module=module_name)
        spec = importlib.util.spec_from_file_location(module_name, file_name)
        if not isinstance(spec, importlib.machinery.ModuleSpec):
            raise FileNotFoundError(f"{file_name} not found")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        sys.path.insert(0, str(file_name.parent.absolute()))
        source = importlib.util.decode_source(Path(spec.origin).read_bytes())
        tree = inject_names(ast.parse(source, filename=spec.origin))
        state.req["code_file"] = spec.origin
        exec(compile(tree, spec.origin, "exec", dont_inherit=True), module.__dict__)
        # the scenes the reference audit would render (spatial_audit.md §3 step 5): every top-level class of a
        # Scene subclass, in source order, duplicates included
        t0 = time.perf_counter()
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                value = module.__dict__.get(node.name)
                if isinstance(value, type) and issubclass(value, original_scene):
                    state.audited.append(node.name)
                    if not issubclass(value, OnePassScene):
                        state.flag(f"unhooked_scene:{node.name}")
        if state.audited != [state.req.get("scene")]:
            state.flag("audited_scenes:" + ",".join(state.audited))
        state.audit_sec += time.perf_counter() - t0
        return module

    module_ops.get_module = get_module

    real_repr = Mobject.__repr__

    def mobject_repr(self):
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


_SVG_HEAD = re.compile(rb"<svg\b[^>]*>")
_SURFACE_ID = re.compile(rb'id="surface\d+"')


def _svg_body(path) -> bytes:
    """The SVG without its root element's attributes (canvas width/height/viewBox) and without cairo's
    process-wide surface counter in the group id; everything else (every glyph path) must match."""
    with open(path, "rb") as fh:
        data = _SVG_HEAD.sub(b"<svg>", fh.read(), count=1)
    return _SURFACE_ID.sub(b'id="surface"', data)


def _write_side_file() -> None:
    state = _STATE
    if state is None:
        return
    try:
        scene = state.scene
        for evidence in (state.guard.verify(scene) if state.guard is not None else ["no_guard"]):
            state.flag(f"tamper:{evidence}")  # the separate audit then judges (and marks) the script
        report = None
        if scene is not None and getattr(scene, "final_report", None) is not None:
            report = scene.final_report
        elif not state.reasons:
            state.flag("no_report")
        doc = {"reasons": state.reasons, "audited_scenes": state.audited, "report": report,
               "audit_sec": round(state.audit_sec, 6), "engine": hooks._ENGINE_TOTALS.as_dict()}
        write_result({"out_file": state.req["side_file"], "seal": state.req["seal"]}, doc)  # sealed (observers.py)
    except Exception:  # the render's exit must not change
        pass

