"""One Manim execution per sample: the ``-ql`` render also yields the audit report where that is provably the
report the audit-only run would write (issue 4 deliverable 3; design: docs/design.md "One-pass audit").

Two halves:

* :func:`static_reasons` (parent side, before rendering): an AST rule. Any construct through which the
  render and the reference audit execution could diverge makes the sample ineligible (updaters, TracedPath,
  ``config``/``camera``/``renderer``/``time`` access, ``__file__``/``__name__``, the compatibility shims'
  names, a used result of ``remove``, ``try`` blocks, imports outside a short list, reflection, ...).
* :func:`install_from_env` (inside the forked render child, before manim's CLI ``main()``): passive
  observers. The scene class the script binds to ``Scene`` is the audit's instrumented scene (reference
  hooks: snapshots on play, segment locks on remove, tail + report on render); the module is executed with
  the audit's variable-name injection; and guards record every dynamic reason the snapshots could depend on
  the frame rate or on the pixel size (an updater on a mobject or on the scene during a play, a ``Wait`` with
  a stop condition, an animation outside the list of alpha-pure manim classes, an ``.animate`` method
  outside its list, a Text whose Pango SVG differs between 854x480 and the audit's 1920x1080 canvas, a
  mobject's ``repr`` read by the script, more than one audited scene class). Nothing of this changes what the
  render does; the observers only write a side file at exit, which the parent reads.

The parent keeps the one-pass report only when the render succeeded, the child reports no reason, and the
profile is the reference one; otherwise the sample takes the audit-only fast path (``audit_pass:
"separate"``). A failed one-pass render is rendered again without observers (so its row and error text are
exactly the plain render's).
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
import time

ENV = "PRISM_FAST_ONEPASS"
SIDE_NAME = ".prism_fast_onepass.json"
AUDIT_PIXELS = (1920, 1080)  # the audit run's canvas: manim's default (high) quality, never changed there

SAFE_IMPORTS = frozenset({
    "manim", "numpy", "math", "cmath", "random", "itertools", "functools", "collections", "typing", "string",
    "dataclasses", "enum", "fractions", "decimal", "copy", "re", "operator", "statistics", "colorsys",
    "textwrap", "__future__", "abc", "numbers", "heapq", "bisect",
})
# bare names that make a script ineligible (frame-rate dependent objects, config, reflection, the shims)
FLAG_NAMES = frozenset({
    "config", "tempconfig", "always_redraw", "TracedPath", "always", "f_always", "always_shift", "always_rotate",
    "turn_animation_into_updater", "cycle_animation", "UpdateFromFunc", "UpdateFromAlphaFunc", "PhaseFlow",
    "MaintainPositionRelativeTo", "ChangeSpeed", "AnimatedBoundary", "StreamLines", "ArrowVectorField",
    "VectorField", "Pixels", "getattr", "setattr", "delattr", "hasattr", "globals", "locals", "vars", "eval",
    "exec", "compile", "open", "input", "breakpoint", "exit", "quit", "repr", "id", "ImageMobject",
    "SVGMobject", "ImageMobjectFromCamera", "ChangingDecimal",
    # the reference audit's compatibility shims (spatial_audit.md §2.2)
    "CENTER", "UP_LEFT", "UP_RIGHT", "DOWN_LEFT", "DOWN_RIGHT", "LIGHT_BLUE", "CYAN", "HGroup", "BulletList",
    "Colors",
})
FLAG_ATTRS = frozenset({
    "add_updater", "updaters", "time", "renderer", "camera", "frame_rate", "pixel_width", "pixel_height",
    "config", "name", "wait_until", "stop_condition", "random_seed", "file_writer", "skip_animations",
    "_full_id", "frame_width", "frame_height", "match_updaters", "always",
})
FLAG_KEYWORDS = frozenset({"code_file", "file_name", "stop_condition"})


def static_reasons(source: str) -> list[str]:
    """Why this script cannot share its render with the audit (empty list: statically eligible)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ["syntax_error"]
    except (RecursionError, MemoryError):
        return ["too_deep_to_parse"]
    try:
        return _static_reasons(tree)
    except (RecursionError, MemoryError):  # a walk over a pathologically nested tree: not eligible, no crash
        return ["too_deep_to_analyse"]


def _static_reasons(tree: ast.AST) -> list[str]:
    reasons: list[str] = []

    def add(reason: str) -> None:
        if reason not in reasons:
            reasons.append(reason)

    # constructs decided by a precise rule (onepass_rules): exempt nodes, never-run branches, updater bodies
    from prism_fast.audit import onepass_rules

    rules = onepass_rules.analyse(tree) if isinstance(tree, ast.Module) else onepass_rules.Analysis()
    exempt = rules.exempt
    statement_calls = {id(n.value) for n in onepass_rules.walk(tree, rules.skip) if isinstance(n, ast.Expr)}
    remove_funcs = set()
    for node in onepass_rules.walk(tree, rules.skip):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "remove":
            if id(node) in statement_calls:
                remove_funcs.add(id(node.func))
    for node in onepass_rules.walk(tree, rules.skip):
        if id(node) in exempt:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in SAFE_IMPORTS:
                    add(f"import:{alias.name}")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                add("relative_import")
            elif (node.module or "").split(".")[0] not in SAFE_IMPORTS:
                add(f"import:{node.module}")
        elif isinstance(node, ast.Name):
            if node.id in FLAG_NAMES:
                add(f"name:{node.id}")
            elif node.id.startswith("__") and node.id.endswith("__"):
                add(f"name:{node.id}")
        elif isinstance(node, ast.Attribute):
            if node.attr in FLAG_ATTRS or node.attr.startswith("__"):
                add(f"attr:{node.attr}")
            if node.attr == "remove" and id(node) not in remove_funcs:
                add("remove_result_used")  # the hooked remove returns None (Q-SPATIAL-8)
        elif isinstance(node, ast.keyword) and node.arg in FLAG_KEYWORDS:
            add(f"keyword:{node.arg}")
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            add("try")  # a caught exception can hide a shim's divergence
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            add("global")
        elif isinstance(node, ast.FormattedValue) and node.conversion == ord("r"):
            add("repr_conversion")  # f"{group!r}": manim's VMobject.__repr__ shows the injected variable names
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                "%r" in node.value or "!r}" in node.value):
            add("repr_format")  # "%r" % group, "{!r}".format(group)
        if isinstance(node, ast.Attribute) and node.attr in ("_os", "sys", "_sys", "ctypeslib", "builtins", "modules"):
            add(f"attr:{node.attr}")  # module internals reaching os/sys from an allowed import
    for reason in rules.reasons:  # why an updater was not approved (its add_updater/always_redraw stays flagged)
        add(reason)
    return reasons


# ----------------------------------------------------------------------------------------------------------
# Child side (runs inside the forked render child; only observes)

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


def install_from_env() -> None:
    """In the render child: when the parent asked for one pass (env var, removed here so the script never
    sees it), install the observers and register the side-file writer at exit."""
    raw = os.environ.pop(ENV, None)
    if not raw:
        return
    global _STATE
    t0 = time.perf_counter()
    _STATE = state = _State(json.loads(raw))
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

    from prism_fast.audit import hooks, onepass_rules
    from prism_fast.audit.config import AuditConfig
    from prism_fast.audit.inject import inject_names
    from prism_fast.profile import REFERENCE

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
    from prism_fast.audit.tamper import Guard

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
        from prism_fast.audit.hooks import _ENGINE_TOTALS

        scene = state.scene
        for evidence in (state.guard.verify(scene) if state.guard is not None else ["no_guard"]):
            state.flag(f"tamper:{evidence}")  # the separate audit then judges (and marks) the script
        report = None
        if scene is not None and getattr(scene, "final_report", None) is not None:
            report = scene.final_report
        elif not state.reasons:
            state.flag("no_report")
        doc = {"reasons": state.reasons, "audited_scenes": state.audited, "report": report,
               "audit_sec": round(state.audit_sec, 6), "engine": _ENGINE_TOTALS.as_dict()}
        with open(state.req["side_file"], "w", encoding="utf-8") as fh:
            json.dump(doc, fh, ensure_ascii=False)
    except Exception:  # the render's exit must not change
        pass


# ----------------------------------------------------------------------------------------------------------
# Parent side helpers


def request_env(side_file: str, scene: str, audit_cfg: dict) -> dict:
    return {ENV: json.dumps({"side_file": side_file, "scene": scene, "audit_cfg": audit_cfg})}


def read_side_file(path) -> dict | None:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def report_text(report: dict) -> str:
    """The report file exactly as the audit child writes it (child.run_audit)."""
    return json.dumps(report, indent=2, ensure_ascii=False)


def plan_reasons(script_text: str, audit_cfg: dict, profile, backend: str) -> list[str]:
    """Everything known before rendering that sends the sample to the separate audit."""
    reasons = []
    if profile.fixed:
        reasons.append(f"profile:{profile.name}")  # the observers implement the reference hooks only
    if backend != "prefork":
        reasons.append(f"backend:{backend}")  # the observers are installed by the prefork worker's child
    if audit_cfg.get("one_pass", "auto") != "auto":
        reasons.append("one_pass:off")
    if audit_cfg.get("full_fidelity") or audit_cfg.get("save_images") or audit_cfg.get("pictures"):
        reasons.append("audit_images")  # frames would have to be rasterised at the audit's settings
    from prism_fast.audit.tamper import static_evidence

    return reasons + static_reasons(script_text) + [f"tamper:{e}" for e in static_evidence(script_text)]


def render_with_onepass(sample_id, script_text, out_dir, cfg, profile, file_path, runner, audit_cfg: dict) -> dict:
    """``render_one`` with the one-pass audit: the exec row (identical to a plain render's but for timings) with
    ``onepass`` / ``onepass_reasons`` / ``manim_executions`` and, when shared, ``_onepass_audit``."""
    from prism_fast.execute.render import _backend_name, render_one

    reasons = plan_reasons(script_text, audit_cfg, profile, _backend_name(runner))
    if reasons:
        row = render_one(sample_id, script_text, out_dir, cfg, profile, file_path, runner)
        row.update(onepass="off" if "one_pass:off" in reasons else "ineligible", onepass_reasons=reasons)
        row["manim_executions"] = row.get("manim_executions") or int(_executed(row))
        return row
    row = render_one(sample_id, script_text, out_dir, cfg, profile, file_path, runner, _onepass_req=audit_cfg)
    doc = row.pop("_onepass_doc", None)
    if not _executed(row):  # a cache hit or a trusted existing video: nothing ran, nothing observed
        row.update(onepass="separate", onepass_reasons=["not_executed"], manim_executions=0)
        return row
    if not row["success"]:
        # the observers' frames would be in the traceback: render again without them, so the row (error text
        # included) is exactly the plain render's; the audit runs separately
        plain = render_one(sample_id, script_text, out_dir, cfg, profile, file_path, runner)
        plain.update(onepass="fallback", onepass_reasons=["render_failed"],
                     manim_executions=1 + (plain.get("manim_executions") or 1))
        return plain
    if doc is None:
        row.update(onepass="separate", onepass_reasons=["no_side_file"], manim_executions=1)
    elif doc.get("reasons"):
        row.update(onepass="separate", onepass_reasons=list(doc["reasons"]), manim_executions=1)
    else:
        row.update(onepass="shared", onepass_reasons=[], manim_executions=1,
                   _onepass_audit={"report": doc["report"], "audit_sec": doc.get("audit_sec", 0.0),
                                   "engine": doc.get("engine")})
    return row


def _executed(row: dict) -> bool:
    return not row.get("cache_hit") and not row.get("skipped") and row.get("scene_class") is not None


def write_shared_audit(sample_id: str, file_path: str, shared: dict, work_dir) -> dict:
    """Write ``<work_dir>/audits/<id>/{audit_report.json, audit_meta.json, audit.log}`` from a shared pass and
    return the audit row, built exactly as ``runner.audit_file`` builds it (same report text, exit code 0)."""
    from pathlib import Path

    from prism_fast.audit.rows import build_row

    audit_dir = Path(work_dir).resolve() / "audits" / sample_id
    audit_dir.mkdir(parents=True, exist_ok=True)
    text = report_text(shared["report"])
    (audit_dir / "audit_report.json").write_text(text, encoding="utf-8")
    meta = {"mode": "fast", "audit_pass": "shared", "audit_sec": shared.get("audit_sec"),
            "engine": shared.get("engine"), "errors": []}
    (audit_dir / "audit_meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
    (audit_dir / "audit.log").write_text("(one-pass audit: stdout/stderr belong to the render)\n" + "=" * 20
                                         + " STDERR " + "=" * 20 + "\n" + text + "\n", encoding="utf-8")
    row = build_row(sample_id, file_path, float(shared.get("audit_sec") or 0.0), 0, "", text, timed_out=False,
                    timeout_sec=900.0, scene_errors=[], fail_on_scene_error=False)
    row.update(profile="reference", audit_mode="fast", returncode=0, scene_errors=[], engine=shared.get("engine"),
               quirks_not_implemented=[], audit_pass="shared",
               report_path=str(audit_dir / "audit_report.json"))
    return row


def _sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _settings_sha256(audit_cfg: dict | None) -> str:
    return _sha256(json.dumps({k: v for k, v in (audit_cfg or {}).items() if k != "one_pass"}, sort_keys=True,
                              default=str))


def store_shared_audit(sample_id: str, script: str, shared: dict, work_dir, audit_cfg: dict | None = None) -> dict:
    """Render-actor side: write the audit files and the pending audit row ``<work_dir>/onepass/<id>.json``
    (keyed by the script's and the audit settings' sha256, so a changed script or threshold is audited again)."""
    from pathlib import Path

    work = Path(work_dir)
    scripts = work / "scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    script_path = scripts / f"{sample_id}.py"  # the same file_path an audit-only run records
    script_path.write_text(script, encoding="utf-8")
    row = write_shared_audit(sample_id, str(script_path), shared, work)
    pending = work / "onepass"
    pending.mkdir(parents=True, exist_ok=True)
    tmp = pending / f".{sample_id}.json.tmp"
    doc = {"script_sha256": _sha256(script), "settings_sha256": _settings_sha256(audit_cfg), "row": row}
    tmp.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    tmp.replace(pending / f"{sample_id}.json")
    return row


def store_separate_audit(sample_id: str, script: str, row: dict, work_dir, audit_cfg: dict | None = None) -> None:
    """Render-actor side, for a sample the render could not audit: the audit-only row (``audit_one``, already
    run by the caller) left for the audit stage exactly like a shared one, marked ``audit_pass: separate``."""
    from pathlib import Path

    pending = Path(work_dir) / "onepass"
    pending.mkdir(parents=True, exist_ok=True)
    tmp = pending / f".{sample_id}.json.tmp"
    doc = {"script_sha256": _sha256(script), "settings_sha256": _settings_sha256(audit_cfg),
           "row": {**row, "audit_pass": "separate"}}
    tmp.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    tmp.replace(pending / f"{sample_id}.json")


def load_shared_audit(sample_id: str, script: str | None, work_dir, audit_cfg: dict | None = None) -> dict | None:
    """Audit-stage side: the row a one-pass render left for this script, or None (then it is audited)."""
    from pathlib import Path

    if script is None:
        return None
    path = Path(work_dir) / "onepass" / f"{sample_id}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if doc.get("script_sha256") != _sha256(script) or doc.get("settings_sha256") != _settings_sha256(audit_cfg):
        return None
    return dict(doc["row"])  # dict/list fields are JSON-encoded by the store, as for audit-only rows


def cache_shared_audit(row: dict, sample_id: str, script: str, audit_cfg, profile, cache_dir, work_dir) -> dict:
    """Put a shared row into the audit cache (audit/cache.py) like an audit-only row, so a later run whose
    render is a cache hit (nothing executed, audit separate) is served by the audit cache."""
    from pathlib import Path

    from prism_fast.audit.cache import AuditCache, audit_cache_key
    from prism_fast.execute.fingerprint import fingerprint_hash
    from prism_fast.execute.render import _resolve_bin

    key = audit_cache_key(script_text=script, sample_id=sample_id, audit_cfg=audit_cfg, profile=profile,
                          env_fingerprint=fingerprint_hash(_resolve_bin("manim")))
    AuditCache(cache_dir).put(key, row, Path(work_dir) / "audits" / sample_id / "audit_report.json")
    return {**row, "audit_cache_hit": False}
