"""Precise one-pass eligibility rules for constructs that ``onepass_rule.static_reasons`` used to refuse by
name (issue 19 deliverable 2; design: docs/design.md "One-pass audit", "Constructs decided by a rule").

The question for every construct is the same: are the scene states at the audit's checkpoints (the state after
each ``play``/``wait``, spatial_audit.md §4-§5) the same when the scene is stepped at 15 fps on an 854x480
canvas (the ``-ql`` render) as at 60 fps on 1920x1080 (the audit)? This module answers it for:

* ``if __name__ == "__main__":`` at module level. ``__name__`` is ``"manim"`` in the reference audit (Q-SPATIAL-4)
  and the dotted file path in manim's CLI loader (never ``"__main__"``: checked at run time by
  :func:`module_name_reason`), so the test is false in both and the body never runs in either: the body is not
  analysed at all and the ``else`` branch is (it runs in both). ``!=`` likewise. Any other ``__name__`` use
  stays refused (``"manim"`` vs the path). The skip needs a script that binds ``__name__`` nowhere
  (``binds:__name__``: a ``class __name__`` whose metaclass equals anything would make the test true).
* ``__all__ = [...]``: a plain binding of a module global, read by nobody in either execution (manim has no
  ``__all__``, spec §3 step 4). Reads of ``__all__`` stay refused.
* ``X.__init__(...)`` / ``super().__init__(...)`` called: the constructor runs the same code in both (the
  compatibility shims' ``Mobject.__init__`` wrapper only differs for kwargs that make the plain CLI raise, and a
  failed render is never shared). Any other dunder attribute stays refused (reflection).
* ``config.frame_width`` / ``frame_height`` / ``frame_x_radius`` / ``frame_y_radius`` (attribute or
  ``config["…"]``, read or written) and ``config.background_color`` / ``background_opacity``: the frame is
  14.2222 x 8 at ``-ql`` and at 1080p (manim does not derive it from the pixel size: checked, both print
  14.222222222222221 8.0), a write runs in both executions before any scene exists, the auditor reads the
  frame lazily after it (§4), and the background never enters geometry. ``frame_rate``, ``pixel_*``,
  ``quality`` and every other key stay refused (they differ between the two settings by definition).
* ``self.camera.background_color`` / ``background_opacity`` (read or written): pixels only.
* ``self.camera.frame`` / ``frame_center`` / ``animate`` (a ``MovingCameraScene``'s frame and its moves, the
  point a camera looks at, a camera "animation" that raises ``AttributeError`` on every manim camera): decided at
  run time, reason ``unhooked_only:camera.<attr>``
  (:data:`UNHOOKED_ONLY`). A ``MovingCameraScene``/``ThreeDScene`` subclasses manim's unpatched ``Scene``, so the
  reference audit renders it with no hook and writes ``{}`` whatever its camera does (Q-SPATIAL-1); the render runs
  with the observers, and its report is shared only when every scene the audit would render is unhooked
  (``onepass_child``'s ``unhooked``), else the sample is audited separately with this reason. None of them
  depends on the pixel size or the frame rate (the frame is ``config.frame_width`` x ``frame_height`` in both), and
  none runs script code per frame. Every other camera access stays refused (``pixel_width``, ``frame_rate``,
  ``get_image``, ...: they differ between the two settings).
* **Updaters without ``dt`` that rebuild their mobject** (``always_redraw(f)``, ``mob.add_updater(lambda m:
  m.become(<new mobject>))``, style setters): see :func:`updater_problem` for the static body rule and
  :func:`checkpoint_reasons` for the run-time check. Why it is sound: manim ends every non-skipped play with
  ``finish()`` (``interpolate(1)`` from copies taken at ``begin()``) and one ``update_mobjects(0)`` pass
  (``Scene.play_internal``); a static wait updates nothing in either run. An approved updater only *sets* its
  mobject from the other mobjects' current state: ``become(x)`` copies the points and style of a mobject ``x``
  built inside the updater (bitwise a function of that state), style setters write their arguments; it reads
  nothing of its own mobject, touches nothing else, draws no random numbers, takes no ``dt``, and ``x``'s
  submobject tree cannot change during a play (``become`` keeps the largest tree it ever saw), nor the point count
  of any member below its top (``become`` aligns their points: :data:`POINT_ARGS`). If at the
  checkpoint (a) every updated mobject equals its updater's result on the current state, bit for bit (points,
  style arrays, tree, classes, names: no one-frame lag of an updater that reads a mobject updated after it, no
  accumulation) and (b) no updater reads, directly or through a group, a function or the scene, a mobject whose
  updater reads it back (no cycle: the fixed point is unique), then the checkpoint state is a function of the
  non-updated mobjects, whose states are the animations' end states: the same at any frame rate.
  Kept refused, with the reason: a ``dt`` parameter (integrates the frame times); relative methods
  (``shift``/``rotate``/``scale``/``increment_value``: one step per frame accumulates); placement methods on
  the updated mobject (``move_to``/``next_to``/``set_x``/``DecimalNumber.set_value``: they add
  ``target - current`` to the current points, so the result carries the rounding of the previous frames, which
  differ between 60 and 15 fps -- checked, re-applying ``next_to`` moves a label in the last bits; the report's
  crossing test compares points exactly); the updated mobject read in the arguments (smoothing); statements
  other than local assignments, pure nested functions and setter chains (a conditional can latch a frame's
  value); calls into the script's own impure functions or classes; ``random``/``np.random`` (the stream
  advances once per frame); content-dependent trees built from the state (``DecimalNumber(t.get_value())``,
  ``Text(str(x))``, dashes, Riemann rectangles); any updater the rule did not approve (manim's own
  ``always_shift``/``TracedPath``/``turn_animation_into_updater``, scene updaters).

Nothing here changes what the render does: the run-time check copies mobjects or calls the approved pure
redraw functions on fresh objects and compares points.
"""

from __future__ import annotations

import ast
import inspect
import threading
from collections import deque

MAIN = "__main__"
SAFE_CONFIG_KEYS = frozenset({"frame_width", "frame_height", "frame_x_radius", "frame_y_radius",
                              "background_color", "background_opacity"})
SAFE_CAMERA_ATTRS = frozenset({"background_color", "background_opacity"})
# camera attributes that only an unhooked scene may use for the render to yield its (empty) report: see above
UNHOOKED_CAMERA_ATTRS = frozenset({"frame", "animate", "frame_center"})
UNHOOKED_ONLY = "unhooked_only:"  # a static reason that holds unless every audited scene is unhooked at run time

# The setters an updater may apply to the mobject it updates: their result is a *bitwise* function of the
# arguments and of the mobject's family shape, never of its previous points. `become(x)` copies x's points and
# style (Mobject.become: align_data without point alignment, then `points = x.points`, colours interpolated
# with alpha 1 = x's); style setters write colours/opacities/widths from their arguments. NOT here, on
# purpose: the placement methods `move_to`/`next_to`/`align_to`/`set_x`/`to_edge`/`set_value` (DecimalNumber
# keeps its edge) ...: they shift by (target - current position), so the new points are the previous points
# plus a difference, exact only up to rounding -- and the previous points differ between 60 and 15 fps by
# that rounding (checked: re-applying `next_to` to a label changes its points in the last bits). A report
# compares points exactly (the crossing test, touching boxes), so such updaters keep the separate audit.
EXACT_SETTERS = frozenset({
    "become", "set_color", "set_fill", "set_stroke", "set_opacity", "match_color", "match_style",
    "set_fill_color", "set_stroke_color", "set_style", "set_fill_opacity", "set_stroke_opacity",
    "set_stroke_width", "set_z_index",
})
# placement methods: allowed on fresh mobjects (built inside the updater from the current state, so their
# start position is the constructor's, the same in both runs)
ABSOLUTE_METHODS = EXACT_SETTERS | frozenset({
    "next_to", "move_to", "align_to", "set_x", "set_y", "set_z", "match_x", "match_y", "match_z",
    "put_start_and_end_on", "set_value", "set_width", "set_height", "match_width", "match_height",
    "scale_to_fit_width", "scale_to_fit_height", "stretch_to_fit_width", "stretch_to_fit_height", "to_edge",
    "to_corner", "center", "set_points", "set_points_as_corners",
})
# methods allowed on a mobject created inside the updater (it is fresh: mutating it mutates nothing else)
FRESH_METHODS = ABSOLUTE_METHODS | frozenset({
    "shift", "scale", "rotate", "flip", "stretch", "arrange", "arrange_in_grid", "add_tip", "set_sheen",
    "set_color_by_gradient", "add_background_rectangle", "surround", "space_out_submobjects", "fade",
    "rotate_about_origin", "apply_matrix", "round_corners", "set_length",
})
# methods of existing objects that return a new object or a value and change nothing
READ_METHODS = frozenset({
    "c2p", "p2c", "n2p", "i2gp", "coords_to_point", "point_to_coords", "number_to_point", "point_to_number",
    "input_to_graph_point", "input_to_graph_coords", "point_from_proportion", "proportion_from_point", "plot",
    "plot_line_graph", "plot_parametric_curve", "plot_polar_graph", "plot_derivative_graph", "copy",
    "length_over_dim", "angle_of_vector", "tolist", "item",
})
FRESH_READS = frozenset({"plot", "plot_parametric_curve", "plot_polar_graph", "get_graph", "copy"})
# What `become(x)` / `always_redraw(f)` may build. `become` aligns the submobject trees before copying points
# (Mobject.align_data adds submobjects to the side with fewer and never removes any), so the updated mobject's
# tree is the largest tree the rebuilt mobject ever had -- history, and the audit at 60 fps visits states the
# render at 15 fps does not (checked: a VGroup(MathTex, DecimalNumber) readout keeps the glyphs of an earlier,
# longer number). The rebuilt mobject's tree must therefore not depend on the state read during a play:
# shapes whose tree is fixed whatever their numeric arguments (a single VMobject or a fixed set of parts) ...
STABLE_SHAPES = frozenset({
    "Dot", "Line", "Arrow", "Vector", "DoubleArrow", "Circle", "Square", "Rectangle", "RoundedRectangle",
    "Ellipse", "Arc", "ArcBetweenPoints", "CurvedArrow", "Annulus", "Sector", "AnnularSector", "Triangle",
    "RegularPolygon", "Polygon", "Star", "SurroundingRectangle", "BackgroundRectangle", "Cross", "Elbow",
    "RightAngle", "Angle", "TangentLine", "ParametricFunction", "FunctionGraph", "CubicBezier", "Underline",
    "Brace", "ValueTracker",
})
# ``become`` aligns the *points* of every member below the top (``align_data`` recurses with point alignment):
# a member whose point count changes keeps the largest count it saw, its curves subdivided to match -- history
# again (checked: a plot with x_range=[0, t] in a VGroup keeps 84 control points in the 60 fps audit against 80 in
# the 15 fps render when t peaks between two render frames). Below the top, these shapes keep a fixed point count
# only when the arguments listed here (positions, keywords) are play-constant, and no positional argument is
# starred (a star changes both the vertex count and which position an argument takes); every other stable shape
# keeps its count whatever its arguments (checked with zero and extreme sizes).
POINT_ARGS = {
    "Line": ((3,), {"path_arc"}), "Arrow": ((3,), {"path_arc"}), "DoubleArrow": ((3,), {"path_arc"}),
    "Vector": ((), {"path_arc"}), "Underline": ((), {"path_arc"}), "TangentLine": ((), {"path_arc"}),
    "Arc": ((3,), {"num_components"}), "Circle": ((), {"num_components"}), "Ellipse": ((), {"num_components"}),
    "Annulus": ((), {"num_components"}), "Sector": ((), {"num_components"}),
    "AnnularSector": ((), {"num_components"}), "Dot": ((), {"num_components"}), "Angle": ((), {"num_components"}),
    "RoundedRectangle": ((0,), {"corner_radius"}), "SurroundingRectangle": ((), {"corner_radius"}),
    "ArcBetweenPoints": ((2, 3), {"angle", "radius", "num_components"}),
    "CurvedArrow": ((), {"angle", "radius", "num_components"}),
    "RegularPolygon": ((0,), {"n"}), "Star": ((0,), {"n", "density"}),
    # the function itself may read the state; the sampling (range, step, discontinuities) may not
    "ParametricFunction": ("all_but_function", set()), "FunctionGraph": ("all_but_function", set()),
}
# `axes.plot(f, x_range=...)` and its kin below the top: only the function may vary (their sample count follows
# the range); `x.copy()` below the top: refused (its point count is whatever x has at that frame)
SAMPLED_READS = frozenset({"plot", "plot_parametric_curve", "plot_polar_graph", "get_graph"})
# methods that rewrite a member's points from their arguments: play-constant arguments below the top
POINT_METHODS = frozenset({"set_points", "set_points_as_corners", "round_corners", "add_tip"})
# ... and shapes whose tree depends on their content (glyphs, digits, dashes, ticks), allowed only with
# arguments that cannot change during a play (constants and plain names: no script code runs between the
# frames of a play, and the updaters are pure)
CONTENT_SHAPES = frozenset({
    "Text", "MarkupText", "Paragraph", "MathTex", "Tex", "SingleStringMathTex", "Title", "BulletedList",
    "DecimalNumber", "Integer", "Variable", "DashedLine", "DashedVMobject", "NumberLine", "Axes", "NumberPlane",
    "Matrix", "IntegerMatrix", "DecimalMatrix", "Table", "Code", "BraceLabel", "BraceText", "LabeledLine",
})
PURE_BUILTINS = frozenset({
    "abs", "min", "max", "round", "int", "float", "str", "len", "range", "sum", "list", "tuple", "zip",
    "enumerate", "sorted", "reversed", "bool", "complex", "divmod", "pow", "map", "filter", "any", "all",
    "interpolate", "inverse_interpolate", "rate_functions", "smooth", "linear", "there_and_back",
    "angle_of_vector", "rotate_vector", "normalize", "get_norm", "interpolate_color", "color_gradient",
})
# constructors whose arguments become submobjects (a method on the result would move the arguments)
GROUP_CONSTRUCTORS = frozenset({"VGroup", "Group", "VDict", "Mobject", "VMobject", "MobjectTable",
                                "MobjectMatrix", "LabeledDot", "ImageMobject", "AnimationGroup"})
MATH_MODULES = frozenset({"np", "numpy", "math", "cmath"})
UPDATER_KEYWORDS = frozenset({"index", "call_updater"})


# ----------------------------------------------------------------------------------------------------------
# Static side

# The static rule's work bound (a count of judgement steps, never time: the same answer on a loaded machine).
# Every pass of the rule is linear in the script's size (``script_reach.MAX_NODES`` bounds that); judging the
# script's functions as helpers and updaters re-reads a nested function once per enclosing function, so its cost
# also grows with the nesting depth, which this bounds. Past it the script is not one-pass eligible
# (reason ANALYSIS_BUDGET) and the child's updater policy approves nothing. A chain of 3000 helper functions takes
# ~6 000 steps (~48 000 with parameters and nested helpers), a bundled sample under 400.
MAX_STEPS = 2_000_000
ANALYSIS_BUDGET = "analysis_budget"  # (the reason of execute/script_reach.py's size bound too)


class AnalysisBudget(Exception):
    """The rule ran past :data:`MAX_STEPS`: the script is not judged (reason :data:`ANALYSIS_BUDGET`)."""


_budget = threading.local()  # .left: the steps left to the analyse() running in this thread (None: unbounded)


def _step(n: int = 1) -> None:
    left = getattr(_budget, "left", None)
    if left is not None:
        _budget.left = left = left - n
        if left < 0:
            raise AnalysisBudget(ANALYSIS_BUDGET)


def steps_used() -> int | None:
    """Steps the last :func:`analyse` of this thread took (for tests and measurements)."""
    return getattr(_budget, "used", None)


class Analysis:
    """What :func:`analyse` found: nodes the generic flag rules must not flag, subtrees that never run in
    either execution, extra reasons, and the updater functions approved (by first line and name)."""

    def __init__(self):
        self.exempt: set[int] = set()
        self.skip: set[int] = set()
        self.reasons: list[str] = []
        # (first line, code name) of approved mobject updaters -> the name their setter chains start from when it
        # is not the parameter (`label.add_updater(lambda m: label.next_to(dot))`), else None
        self.updaters: dict[tuple[int, str], str | None] = {}
        self.redraws: set[tuple[int, str]] = set()  # the same for always_redraw functions
        self.unhooked_only: dict[int, str] = {}  # node id -> what it is, for the reason ``unhooked_only:<what>``
        self.judged: dict[tuple, tuple] = {}  # (function node id, kind, params) -> updater_problem's answer

    def add(self, reason: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)


def walk(tree: ast.AST, skip: set[int]):
    """``ast.walk`` without the subtrees listed in ``skip`` (by ``id``); the same breadth-first order."""
    todo = deque([tree])  # (a list's pop(0) made every walk quadratic in the script's size)
    while todo:
        node = todo.popleft()
        if id(node) in skip:
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _is_main_test(test: ast.AST) -> str | None:
    """``"eq"``/``"ne"`` for ``__name__ == "__main__"`` (either side), else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
        return None
    sides = (test.left, test.comparators[0])
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == MAIN]
    if len(names) == 1 and len(consts) == 1:
        return "eq" if isinstance(test.ops[0], ast.Eq) else "ne"
    return None


def _binds_module_name(tree: ast.AST) -> bool:
    """Whether any statement of the script (skipped branches included) can bind ``__name__``: an assignment or
    loop/with/except/walrus target, a def or class of that name, an import alias, a ``global`` of it."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "__name__" and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == "__name__":
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == "__name__":
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and "__name__" in node.names:
            return True
        if isinstance(node, ast.ExceptHandler) and node.name == "__name__":
            return True
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == "__name__":
            return True
        if isinstance(node, ast.MatchMapping) and node.rest == "__name__":
            return True
    return False


def analyse(tree: ast.Module, max_steps: int | None = None) -> Analysis:
    """What the precise rules decide for ``tree``; raises :class:`AnalysisBudget` past ``max_steps`` (default
    :data:`MAX_STEPS`)."""
    max_steps = MAX_STEPS if max_steps is None else max_steps
    outer = getattr(_budget, "left", None)
    _budget.left = max_steps
    try:
        return _analyse(tree)
    finally:
        _budget.used = max_steps - _budget.left
        _budget.left = outer


def _analyse(tree: ast.Module) -> Analysis:
    out = Analysis()
    # module-level `if __name__ == "__main__":` -- the branch that runs in neither execution is skipped, unless the
    # script binds `__name__` itself (`class __name__(metaclass=EqualsAnything)` makes the test true in both
    # executions and the skipped branch would run unchecked)
    rebinds = _binds_module_name(tree)
    if rebinds:
        out.reasons.append("binds:__name__")
    for stmt in tree.body if not rebinds else ():
        if isinstance(stmt, ast.If):
            kind = _is_main_test(stmt.test)
            if kind is None:
                continue
            out.exempt.update(id(n) for n in ast.walk(stmt.test) if isinstance(n, ast.Name))
            dead = stmt.body if kind == "eq" else stmt.orelse
            out.skip.update(id(s) for s in dead)
    defined = _script_bindings(tree)
    defs = _function_defs(tree)
    stores = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    stores |= {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    stores |= {(a.asname or a.name) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
               for a in n.names}
    attr_stores = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load)}
    helpers = _pure_helpers(defs, stores, defined)
    parents = {}
    for node in walk(tree, out.skip):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    for node in walk(tree, out.skip):
        if isinstance(node, ast.Name) and node.id == "__all__" and isinstance(node.ctx, ast.Store):
            out.exempt.add(id(node))
        elif isinstance(node, ast.Attribute) and node.attr == "__init__":
            parent = parents.get(id(node))
            if isinstance(parent, ast.Call) and parent.func is node:
                out.exempt.add(id(node))
        elif isinstance(node, ast.Name) and node.id == "config":
            key = _config_key(node, parents)
            if key in SAFE_CONFIG_KEYS:
                out.exempt.add(id(node))
                out.exempt.add(id(parents[id(node)]))  # the `.frame_width` attribute itself
        elif isinstance(node, ast.Attribute) and node.attr == "camera":
            parent = parents.get(id(node))
            if isinstance(node.value, ast.Name) and node.value.id == "self" and isinstance(parent, ast.Attribute):
                if parent.attr in SAFE_CAMERA_ATTRS:
                    out.exempt.add(id(node))
                elif parent.attr in UNHOOKED_CAMERA_ATTRS:
                    out.unhooked_only[id(node)] = f"camera.{parent.attr}"
        elif isinstance(node, ast.Call):
            _updater_call(node, out, defined, defs, stores, attr_stores, helpers)
    return out


def _config_key(node: ast.Name, parents: dict) -> str | None:
    parent = parents.get(id(node))
    if isinstance(parent, ast.Attribute) and parent.value is node:
        return parent.attr
    if (isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.slice, ast.Constant)
            and isinstance(parent.slice.value, str)):
        return parent.slice.value
    return None


def _script_bindings(tree: ast.AST) -> set[str]:
    """Every name the script binds anywhere (defs, classes, assignments, loop targets), imports aside (they
    come from SAFE_IMPORTS: a capitalised imported name is manim's)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
    return names


def _function_defs(tree: ast.AST) -> dict[str, list]:
    defs: dict[str, list] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs.setdefault(node.name, []).append(node)
    return defs


def _updater_call(call: ast.Call, out: Analysis, defined: set[str], defs: dict, stores: set[str],
                  attr_stores: set[str], helpers: frozenset) -> None:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "add_updater":
        kind, nparams = "updater", 1
    elif isinstance(func, ast.Name) and func.id == "always_redraw":
        kind, nparams = "redraw", 0
    else:
        return
    if len(call.args) != 1 or any(k.arg not in UPDATER_KEYWORDS for k in call.keywords):
        out.add(f"{kind}_call_shape")
        return
    fn = call.args[0]
    if isinstance(fn, ast.Name):
        found = defs.get(fn.id, [])
        # one def of that name and no other binding (an assignment could rebind it)
        if len(found) != 1 or fn.id in stores:
            out.add(f"{kind}_not_a_literal_function")
            return
        fn = found[0]
    elif isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id == "self":
        found = defs.get(fn.attr, [])
        if len(found) != 1 or fn.attr in attr_stores:
            out.add(f"{kind}_not_a_literal_function")
            return
        fn = found[0]
        nparams += 1  # a method: self, then the mobject
    elif not isinstance(fn, ast.Lambda):
        out.add(f"{kind}_not_a_literal_function")
        return
    key = (id(fn), kind, nparams)  # one function handed to many add_updater calls is judged once
    if key not in out.judged:
        out.judged[key] = updater_problem(fn, nparams, kind, defined, helpers)
    problem, root = out.judged[key]
    if problem:
        out.add(f"{kind}_body:{problem}")
        return
    if kind == "updater":
        out.updaters[(fn.lineno, _code_name(fn))] = root
    else:
        out.redraws.add((fn.lineno, _code_name(fn)))
    out.exempt.add(id(func))


def _code_name(fn) -> str:
    return "<lambda>" if isinstance(fn, ast.Lambda) else fn.name


class _Scope:
    """Helper names seen from inside a function: the enclosing ones (``base``, any container) and the nested
    helpers defined so far (``own``), without copying ``base`` at every nesting level (that copy, once per
    function and pass, made the helper fixpoint cubic in the number of functions)."""

    __slots__ = ("base", "own")

    def __init__(self, base, own=frozenset()):
        self.base, self.own = base, own

    def __contains__(self, name) -> bool:
        return name in self.own or name in self.base


class _Assumed:
    """The helper set while one function is judged on its own: every candidate helper counts as one, and the
    candidates the judgement relied on are recorded (``used``)."""

    __slots__ = ("candidates", "used")

    def __init__(self, candidates):
        self.candidates, self.used = candidates, set()

    def __contains__(self, name) -> bool:
        if name in self.candidates:
            self.used.add(name)
            return True
        return False


def _pure_helpers(defs: dict, stores: set[str], defined: set[str]) -> frozenset:
    """Names of the script's functions (one def of the name, never rebound) whose body is local assignments,
    pure nested helpers and one ``return`` of a pure expression: callable from an updater.

    The least set closed under "pure, given that the helpers it calls are": each function is judged once with
    every candidate assumed a helper, recording the candidates it called (a candidate is a name ``defined``
    binds, so it is refused unless it is a helper: a call of it decides nothing else); it is a helper when that
    judgement finds no problem and every candidate it called is a helper, which a worklist settles in time linear
    in the number of calls (a chain ``f1 -> f0, f2 -> f1, ...`` of n functions took n full passes before)."""
    candidates = {name: nodes[0] for name, nodes in defs.items() if len(nodes) == 1 and name not in stores}
    waiting: dict[str, int] = {}  # candidate -> its callees not yet known to be helpers
    callers: dict[str, list[str]] = {}
    ready = []
    for name, fn in candidates.items():
        assumed = _Assumed(candidates)
        nparams = len(fn.args.posonlyargs) + len(fn.args.args)
        if _function_problem(fn, nparams, defined, assumed) is not None:
            continue
        waiting[name] = len(assumed.used)
        for callee in assumed.used:
            callers.setdefault(callee, []).append(name)
        if not assumed.used:
            ready.append(name)
    helpers = set()
    while ready:
        name = ready.pop()
        helpers.add(name)
        for caller in callers.get(name, ()):
            waiting[caller] -= 1
            if waiting[caller] == 0:
                ready.append(caller)
    return frozenset(helpers)


def _function_problem(fn, nparams, defined, helpers) -> str | None:
    """A pure function: positional parameters only (no ``dt``), local assignments, pure nested helpers, one
    final ``return`` of a pure expression. ``helpers``: any container of names (``in`` only)."""
    _step()
    args = fn.args
    if args.vararg or args.kwarg or args.kwonlyargs or getattr(fn, "decorator_list", None):
        return "signature"
    if isinstance(fn, ast.AsyncFunctionDef):
        return "async"
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    if len(params) != nparams or "dt" in params:
        return "signature"
    for d in (*args.defaults, *args.kw_defaults):
        why = _pure(d, None, defined, helpers)
        if why:
            return why
    body = _strip_docstring(fn.body)
    # the enclosing helpers and this body's pure nested helpers defined so far (``own`` grows in place: a nested
    # judgement has returned before the next name is added)
    local = _Scope(helpers, set())
    for i, stmt in enumerate(body):
        if isinstance(stmt, ast.FunctionDef):
            n = len(stmt.args.posonlyargs) + len(stmt.args.args)
            why = _function_problem(stmt, n, defined, local)
            if why:
                return f"nested:{why}"
            local.own.add(stmt.name)
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Name,
                                                                                                      ast.Tuple)):
            if isinstance(stmt.targets[0], ast.Tuple) and not all(isinstance(e, ast.Name)
                                                                  for e in stmt.targets[0].elts):
                return "statement:Assign"
            why = _pure(stmt.value, None, defined, local)
            if why:
                return why
            continue
        if isinstance(stmt, ast.Return) and stmt.value is not None and i == len(body) - 1:
            return _pure(stmt.value, None, defined, local)
        return f"statement:{type(stmt).__name__}"
    return "no_return"


def _stable_locals(body, defined, varying=frozenset()) -> tuple[frozenset, frozenset]:
    """The function's locals holding a stable mobject (see :func:`_stable`): as the top, and as a member."""
    names: set = set()
    points: set = set()
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            top = _stable(stmt.value, defined, frozenset(names), False, frozenset(points), varying)
            member = top and _stable(stmt.value, defined, frozenset(names), True, frozenset(points), varying)
            (names.add if top else names.discard)(name)
            (points.add if member else points.discard)(name)
    return frozenset(names), frozenset(points)


def _strip_docstring(body):
    body = list(body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(
            body[0].value.value, str):
        return body[1:]
    return body


def updater_problem(fn, nparams: int, kind: str, defined: set[str], helpers: frozenset = frozenset()
                    ) -> tuple[str | None, str | None]:
    """``(problem, root)``: why the function ``fn`` (Lambda or FunctionDef) is not an approved dt-free absolute
    updater (None when it is), and the name its setter chains start from when that is not the parameter.

    ``kind == "updater"``: one parameter ``m`` (plus ``self`` for a method); every statement is a local
    assignment of a pure expression or a chain of :data:`ABSOLUTE_METHODS` on ``m`` -- or on one other name,
    which the run-time check requires to be the mobject the updater is attached to -- whose arguments are
    pure and never mention that mobject. ``kind == "redraw"``: no parameter; a pure function (local
    assignments, pure nested helpers, one ``return`` of a pure expression)."""
    _step(_size(fn))  # (it walks the function a few times: its names, its locals)
    if kind == "redraw":
        if isinstance(fn, ast.Lambda):
            a = fn.args
            if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs or a.args:
                return "signature", None
            why = _pure(fn.body, None, defined, helpers)
            if why is None and not _stable(fn.body, defined, varying=_bound_names(fn)):
                why = "tree_may_change"
            return why, None
        why = _function_problem(fn, 0, defined, helpers)
        if why is None:
            body = _strip_docstring(fn.body)
            varying = _varying_names(fn, body)
            names, points = _stable_locals(body, defined, varying)
            if not _stable(body[-1].value, defined, names, False, points, varying):
                why = "tree_may_change"
        return why, None
    why, root = _updater_problem(fn, nparams, defined, helpers)
    return why, root


def _updater_problem(fn, nparams, defined, helpers):
    args = fn.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.kw_defaults:
        return "signature", None
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    if "dt" in params:
        return "dt", None  # manim passes the frame time to a parameter named dt (time-based updater)
    if len(params) != nparams:
        return "signature", None
    if isinstance(fn, ast.AsyncFunctionDef) or getattr(fn, "decorator_list", None):
        return "decorated", None
    receiver = params[-1]
    body = [ast.Expr(value=fn.body)] if isinstance(fn, ast.Lambda) else _strip_docstring(fn.body)
    if not body:
        return "empty", None
    roots = set()
    assigned = set()
    chains = []
    for i, stmt in enumerate(body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            assigned.add(stmt.targets[0].id)
            why = _pure(stmt.value, receiver, defined, helpers)
            if why:
                return why, None
            continue
        if isinstance(stmt, (ast.Expr, ast.Return)) and stmt.value is not None:
            why, root = _setter_chain(stmt.value)
            if why:
                return why, None
            roots.add(root)
            chains.append(stmt.value)
            continue
        if isinstance(stmt, ast.Return) and stmt.value is None and i == len(body) - 1:
            continue
        return f"statement:{type(stmt).__name__}", None
    if len(roots) > 1:
        return "several_targets", None
    root = roots.pop() if roots else receiver
    if root in assigned or (root != receiver and root in params):
        return "rebinds_target", None
    for stmt in body:  # nothing may read the updated mobject: not the parameter, not the chain's root
        if isinstance(stmt, ast.Assign):
            for name in (receiver, root):
                if _mentions(stmt.value, name):
                    return "reads_updated_mobject", None
    varying = _varying_names(fn, body)
    stable_names, point_names = _stable_locals(body, defined, varying)
    for chain in chains:
        for call in _chain_calls(chain):
            if call.func.attr == "become" and not (len(call.args) == 1 and _stable(
                    call.args[0], defined, stable_names, False, point_names, varying)):
                return "tree_may_change", None
        for arg in _chain_args(chain):
            why = _pure(arg, receiver, defined, helpers)
            if why:
                return why, None
            if _mentions(arg, root):
                return "reads_updated_mobject", None
    return None, (None if root == receiver else root)


def _size(node) -> int:
    return sum(1 for _ in ast.walk(node))


def _mentions(node, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _setter_chain(node) -> tuple[str | None, str | None]:
    """``x.a(...).b(...)`` with every method absolute: (None, "x"), else (problem, None)."""
    if isinstance(node, ast.Name):
        return None, node.id  # `return m`
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return "not_a_setter_chain", None
    if node.func.attr not in EXACT_SETTERS:
        return f"method:{node.func.attr}", None
    if node.func.attr == "become" and node.keywords:
        return "become_options", None  # match_height/match_center/... read the mobject's own previous state
    return _setter_chain(node.func.value)


def _chain_calls(node):
    while isinstance(node, ast.Call):
        yield node
        node = node.func.value


def _chain_args(node):
    while isinstance(node, ast.Call):
        yield from node.args
        yield from (k.value for k in node.keywords)
        node = node.func.value


def _dotted_root(node) -> tuple[str | None, list[str]]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return (node.id if isinstance(node, ast.Name) else None), parts[::-1]


def _fresh(node, defined) -> bool:
    """``node`` evaluates to a mobject created by this expression (so mutating it mutates nothing else)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        if func.id in GROUP_CONSTRUCTORS and func.id not in defined:
            # a group is fresh when all its members are (a method on it moves them)
            return all(_fresh(a, defined) or isinstance(a, ast.Constant) for a in node.args) and all(
                _fresh(k.value, defined) or isinstance(k.value, ast.Constant) for k in node.keywords)
        return _constructor(func.id, defined)
    if isinstance(func, ast.Attribute):
        if func.attr in FRESH_READS:
            return True
        if func.attr in FRESH_METHODS:
            return _fresh(func.value, defined)
    return False


def _play_constant(node, varying=frozenset()) -> bool:
    """Constants and plain names (and tuples, lists, arithmetic and f-strings of them): no script code runs between
    the frames of a play, so a name outside the updater keeps its value. ``varying``: the updater's own names that
    may hold a value computed from the state at each call (its parameters, locals not assigned a constant)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id not in varying
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_play_constant(e, varying) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _play_constant(node.operand, varying)
    if isinstance(node, ast.BinOp):
        return _play_constant(node.left, varying) and _play_constant(node.right, varying)
    if isinstance(node, ast.JoinedStr):
        return all(_play_constant(v, varying) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return _play_constant(node.value, varying) and (node.format_spec is None
                                                        or _play_constant(node.format_spec, varying))
    return False


def _bound_names(fn) -> frozenset:
    """Every name a function (or lambda) binds: parameters, assignment and loop targets, nested defs."""
    names = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    for node in ast.walk(fn):
        if node is not fn and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
    return frozenset(names)


def _varying_names(fn, body) -> frozenset:
    """The names of ``fn`` that may vary between its calls: all it binds, but the locals assigned exactly once, at
    the top of ``body``, a play-constant value (``label = "x="``)."""
    bound = _bound_names(fn)
    counts: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] = counts.get(node.id, 0) + 1
    constant: set[str] = set()
    params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    for stmt in body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and counts.get(stmt.targets[0].id) == 1 and stmt.targets[0].id not in params
                and _play_constant(stmt.value, bound - constant)):
            constant.add(stmt.targets[0].id)
    return bound - constant


# Shapes that draw a grid of lines, one submobject per line: how many follows the size and the step
GRID_SHAPES = frozenset({"Rectangle", "Square", "RoundedRectangle", "SurroundingRectangle", "BackgroundRectangle"})
GRID_KEYWORDS = frozenset({"grid_xstep", "grid_ystep"})
MAX_GRIDLESS_POSITIONAL = {"Rectangle": 3}  # Rectangle(color, height, width, grid_xstep, grid_ystep, ...)


def _stable(node, defined, stable_names=frozenset(), member: bool = False, point_names=frozenset(),
            varying=frozenset()) -> bool:
    """``node`` builds a fresh mobject whose submobject tree cannot change during a play (see STABLE_SHAPES);
    ``member``: it ends up below the updated mobject's top, so its point counts must not change either (see
    POINT_ARGS; ``point_names`` are the locals known to hold such a mobject); ``varying``: the updater's names
    that are not play-constant (:func:`_varying_names`)."""
    if isinstance(node, ast.Name):
        return node.id in (point_names if member else stable_names)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    values = [*node.args, *(k.value for k in node.keywords)]
    if isinstance(func, ast.Name):
        if func.id in defined:
            return False
        if func.id in STABLE_SHAPES:
            if func.id in GRID_SHAPES and (
                    any(k.arg in GRID_KEYWORDS and not (isinstance(k.value, ast.Constant) and k.value.value is None)
                        for k in node.keywords)
                    or any(k.arg is None for k in node.keywords)
                    or len(node.args) > MAX_GRIDLESS_POSITIONAL.get(func.id, len(node.args))):
                return False  # a grid's line count follows its size (red team 2026-12-05)
            if func.id in ANGLE_SHAPES and not (all(_play_constant(a, varying) for a in node.args[2:]) and all(
                    _play_constant(k.value, varying) for k in node.keywords)):
                return False  # `dot=` adds a submobject, `elbow=` another shape (red team 2026-12-05)
            return not member or _fixed_point_count(func.id, node, varying)
        if func.id in CONTENT_SHAPES:
            return all(_play_constant(v, varying) for v in values)
        if func.id in ("VGroup", "Group"):
            return all(_stable(a, defined, stable_names, True, point_names, varying) for a in node.args) and all(
                _play_constant(k.value, varying) for k in node.keywords)
        return False
    if isinstance(func, ast.Attribute):
        if func.attr in FRESH_READS:
            if not member:
                return True
            if func.attr not in SAMPLED_READS:
                return False
            return all(_play_constant(v, varying) for v in (*node.args[1:], *(k.value for k in node.keywords
                                                                                if k.arg != "function")))
        if func.attr in FRESH_METHODS:
            if func.attr == "become":  # the receiver takes the argument's tree (and, below the top, its points)
                if len(node.args) != 1 or node.keywords or not _stable(node.args[0], defined, stable_names, member,
                                                                        point_names, varying):
                    return False
            elif func.attr in VALUE_METHODS or (member and func.attr in POINT_METHODS):
                if not all(_play_constant(v, varying) for v in values):
                    return False  # a number's digits, a member's points: from the arguments
            return _stable(func.value, defined, stable_names, member, point_names, varying)
    return False


# Angle(line1, line2, radius, quadrant, other_angle, dot, ...): every argument after the two lines decides the shape
ANGLE_SHAPES = frozenset({"Angle", "RightAngle"})
# methods that rebuild a mobject's submobjects from their arguments (DecimalNumber's digits)
VALUE_METHODS = frozenset({"set_value"})


def _fixed_point_count(name: str, call: ast.Call, varying=frozenset()) -> bool:
    """A stable shape below the top: are the arguments that decide its point count play-constant?"""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    positions, keywords = POINT_ARGS.get(name, ((), set()))
    if positions == "all_but_function":
        return all(_play_constant(v, varying) for v in (*call.args[1:], *(k.value for k in call.keywords
                                                                           if k.arg != "function")))
    if name == "Polygon":
        return True  # the vertex count is the (unstarred) argument count
    return all(_play_constant(call.args[i], varying) for i in positions if i < len(call.args)) and all(
        _play_constant(k.value, varying) for k in call.keywords if k.arg in keywords)


def _constructor(name: str, defined: set[str]) -> bool:
    return name[:1].isupper() and name not in defined and name not in GROUP_CONSTRUCTORS


def _pure(node, receiver, defined, helpers=frozenset()) -> str | None:
    """Why evaluating ``node`` could change state or read the updated mobject, or None."""
    _step()
    if node is None or isinstance(node, (ast.Constant, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop,
                                         ast.boolop)):
        return None
    if isinstance(node, ast.Name):
        if receiver is not None and node.id == receiver:
            return "reads_updated_mobject"
        if node.id in ("random", "time", "globals", "locals", "vars", "eval", "exec", "getattr", "setattr",
                       "config"):
            return f"name:{node.id}"
        return None
    if isinstance(node, ast.Attribute):
        if node.attr.startswith("_"):
            return f"attr:{node.attr}"
        return _pure(node.value, receiver, defined, helpers)
    if isinstance(node, ast.Call):
        for arg in (*node.args, *(k.value for k in node.keywords)):
            why = _pure(arg, receiver, defined, helpers)
            if why:
                return why
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in helpers:
                return None
            if func.id in PURE_BUILTINS and func.id not in defined:
                return None
            if func.id[:1].isupper() and func.id not in defined:
                return None  # a manim constructor (a group only collects its members: methods on it are checked)
            return f"call:{func.id}"
        if isinstance(func, ast.Attribute):
            root, parts = _dotted_root(func)
            if "random" in parts or root == "random":
                return "random"
            if root in MATH_MODULES and root not in defined:
                return None
            if func.attr in READ_METHODS or func.attr.startswith("get_"):
                return _pure(func.value, receiver, defined, helpers)
            if func.attr in FRESH_METHODS and _fresh(func.value, defined):
                return _pure(func.value, receiver, defined, helpers)
            return f"method:{func.attr}"
        return "call"
    if isinstance(node, ast.Lambda):
        return _pure(node.body, receiver, defined, helpers)
    if isinstance(node, ast.FormattedValue):
        if node.conversion == ord("r"):
            return "repr"
        return _pure(node.value, receiver, defined, helpers) or _pure(node.format_spec, receiver, defined, helpers)
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple, ast.List,
                         ast.Dict, ast.Set, ast.JoinedStr, ast.Subscript, ast.Slice, ast.Starred, ast.ListComp,
                         ast.GeneratorExp, ast.SetComp, ast.DictComp, ast.comprehension, ast.keyword,
                         ast.arguments, ast.arg)):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                if receiver is not None and child.id == receiver:
                    return "rebinds_receiver"
                continue
            why = _pure(child, receiver, defined, helpers)
            if why:
                return why
        return None
    return f"expr:{type(node).__name__}"


# ----------------------------------------------------------------------------------------------------------
# Run-time side (inside the render child; observes only)


def module_name_reason(module_name: str) -> str | None:
    """The static rule skips ``if __name__ == "__main__":`` bodies; that needs the CLI module's name to differ
    from ``"__main__"`` (it is ``"manim"`` in the reference audit)."""
    return "module_named_main" if module_name in (MAIN, "manim") else None


class UpdaterPolicy:
    """The approved updater functions of the script (from its own file, parsed once)."""

    def __init__(self, code_file: str | None):
        self.code_file = code_file
        self.updaters: dict = {}
        self.redraws: set = set()
        if code_file:
            try:
                with open(code_file, encoding="utf-8") as fh:
                    analysis = analyse(ast.parse(fh.read()))
                self.updaters, self.redraws = analysis.updaters, analysis.redraws
            except (OSError, SyntaxError, ValueError, RecursionError, MemoryError, AnalysisBudget):
                pass  # nothing approved: every updater is a reason
        self._redraw_code = _always_redraw_code()

    def classify(self, updater, mob) -> tuple[str, object] | None:
        """``("updater", f)`` / ``("redraw", (owner, func))`` for an approved updater attached to ``mob``, else
        None. ``f`` applies the updater to a given mobject (the parameter, or the chain's root name rebound)."""
        code = getattr(updater, "__code__", None)
        if code is None:
            return None
        if code is self._redraw_code:
            cells = dict(zip(code.co_freevars, (c.cell_contents for c in (updater.__closure__ or ()))))
            func, mob = cells.get("func"), cells.get("mob")
            fcode = getattr(func, "__code__", None)
            if fcode is not None and self._ours(fcode, self.redraws) and not _wrong_signature(func, 0):
                return "redraw", (mob, func)
            return None
        if self._ours(code, self.updaters) and not _wrong_signature(updater, 1):
            root = self.updaters[(code.co_firstlineno, code.co_name)]
            if root is None:
                return "updater", updater
            probe = _rebound(updater, root, mob)
            if probe is not None:
                return "updater", probe
        return None

    def _ours(self, code, approved) -> bool:
        return code.co_filename == self.code_file and (code.co_firstlineno, code.co_name) in approved


def _rebound(updater, name: str, mob):
    """For ``label.add_updater(lambda m: label.next_to(dot))``: when ``label`` is ``mob`` itself (a closure
    cell or a module global), a function that runs the same code on a given mobject instead; else None."""
    import types

    func = getattr(updater, "__func__", updater)
    if getattr(updater, "__self__", None) is not None:
        return None  # a bound method whose chain starts from a name: not supported
    code = func.__code__
    if name in code.co_freevars:
        cells = list(func.__closure__ or ())
        i = code.co_freevars.index(name)
        if not _cell_ok(cells[i]) or cells[i].cell_contents is not mob:
            return None

        def probe(target):
            new = list(cells)
            new[i] = types.CellType(target)
            f = types.FunctionType(code, func.__globals__, func.__name__, func.__defaults__, tuple(new))
            return f(target)

        return probe
    globs = func.__globals__
    if name in code.co_names and globs.get(name) is mob:
        def probe(target):
            f = types.FunctionType(code, {**globs, name: target}, func.__name__, func.__defaults__,
                                   func.__closure__)
            return f(target)

        return probe
    return None


def _wrong_signature(func, n: int) -> bool:
    """True when ``func`` does NOT take exactly ``n`` positional parameters, none of them ``dt``."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return True
    return len(params) != n or "dt" in params


def _always_redraw_code():
    try:
        from manim.animation.updaters.mobject_update_utils import always_redraw
    except ImportError:
        return None
    for const in always_redraw.__code__.co_consts:
        if inspect.iscode(const):
            return const
    return None


def animation_reasons(anim) -> list[str]:
    """An alpha-pure animation that reads *another* mobject at every frame: ``MoveAlongPath`` evaluates its path
    at each alpha, so a path with updaters (whose state at the last frame depends on the frame times) would put
    the moved mobject at a frame-dependent point. (Every other listed animation copies what it reads at
    ``begin()``.)"""
    path = getattr(anim, "path", None)
    if type(anim).__name__ == "MoveAlongPath" and path is not None:
        if any(getattr(m, "updaters", None) for m in path.get_family()):
            return ["path_with_updaters"]
    return []


def updater_reasons(mobjects, policy: UpdaterPolicy) -> list[str]:
    """Reasons found among the updaters of ``mobjects``' families (checked before each play)."""
    reasons = []
    for top in mobjects:
        for mob in top.get_family():
            for upd in getattr(mob, "updaters", None) or ():
                if policy.classify(upd, mob) is None:
                    reasons.append("mobject_updater")
                    return reasons
    return reasons


STYLE_ARRAYS = ("points", "fill_rgbas", "stroke_rgbas", "background_stroke_rgbas", "stroke_width",
                "background_stroke_width")


def _same_geometry(a, b) -> bool:
    """Same family shape, points and style arrays (what the audit's atoms read: points, fill/stroke)."""
    import numpy as np

    fa, fb = a.get_family(), b.get_family()
    if len(fa) != len(fb):
        return False
    for i, (ma, mb) in enumerate(zip(fa, fb)):
        # the atoms' ids and type sets read class and name (spatial_audit.md §7); the updated mobject keeps its
        # own (injected) name, which `become` never copies
        if len(ma.submobjects) != len(mb.submobjects) or type(ma) is not type(mb) or (i and ma.name != mb.name):
            return False
        for name in STYLE_ARRAYS:
            va, vb = getattr(ma, name, None), getattr(mb, name, None)
            if va is None and vb is None:
                continue
            va, vb = np.asarray(va), np.asarray(vb)
            if va.shape != vb.shape or not np.array_equal(va, vb):
                return False
    return True


def checkpoint_reasons(scene, policy: UpdaterPolicy) -> list[str]:
    """At an audit checkpoint: every updated mobject must be a fixed point of its updaters and the updaters'
    read graph must have no cycle. Observes only (copies, fresh redraws)."""
    updated = []  # (mob, kind, payload)
    for top in scene.mobjects:
        for mob in top.get_family():
            for upd in getattr(mob, "updaters", None) or ():
                cls = policy.classify(upd, mob)
                if cls is None:
                    return ["mobject_updater"]
                updated.append((mob, *cls, upd))
    if not updated:
        return []
    reasons = []
    for mob, kind, payload, _upd in updated:
        try:
            if kind == "redraw":
                owner, func = payload
                if not _same_geometry(owner, func()):
                    reasons.append("updater_not_at_fixed_point")
            else:
                probe = mob.copy()
                payload(probe)
                if not _same_geometry(mob, probe):
                    reasons.append("updater_not_at_fixed_point")
        except Exception as exc:  # an updater that fails on a copy: distrust
            reasons.append(f"updater_check_failed:{type(exc).__name__}")
        if reasons:
            return reasons
    if _has_cycle(scene, updated, policy):
        reasons.append("updater_cycle")
    return reasons


def _reads(func, scene, skip_name: str | None = None) -> set[int]:
    """ids of the mobjects a function can read: its closure cells and the globals its code names (``skip_name``,
    the updated mobject's own name, aside), through functions it reaches, lists, tuples, dicts, mobject
    families and the scene attributes its code names."""
    import types

    from manim.mobject.mobject import Mobject

    out: set[int] = set()
    seen: set[int] = set()
    todo = [(func, 0, skip_name)]
    while todo:
        obj, depth, skip = todo.pop()
        if id(obj) in seen or depth > 6:
            continue
        seen.add(id(obj))
        obj = getattr(obj, "__func__", obj)  # a bound method: its function (self is the scene or a mobject)
        if isinstance(obj, types.FunctionType):
            names: set[str] = set()
            codes = [obj.__code__]
            while codes:
                code = codes.pop()
                names.update(code.co_names)
                names.update(code.co_freevars)
                codes.extend(c for c in code.co_consts if inspect.iscode(c))
            for var, cell in zip(obj.__code__.co_freevars, obj.__closure__ or ()):
                if var != skip and _cell_ok(cell):
                    todo.append((_scene_view(cell.cell_contents, scene, names), depth + 1, None))
            globs = obj.__globals__
            todo.extend((_scene_view(globs[n], scene, names), depth + 1, None) for n in names
                        if n in globs and n != skip)
        elif isinstance(obj, Mobject):
            out.update(id(m) for m in obj.get_family())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            todo.extend((x, depth + 1, None) for x in obj)
        elif isinstance(obj, dict):
            todo.extend((x, depth + 1, None) for x in obj.values())
    return out


def _scene_view(value, scene, names):
    """The scene itself stands for the attributes the code names (``self.axes``), as a tuple."""
    if value is scene:
        return tuple(getattr(scene, n) for n in names if n in vars(scene))
    return value


def _cell_ok(cell) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _has_cycle(scene, updated, policy) -> bool:
    owners = {}
    for mob, kind, payload, upd in updated:
        owner = payload[0] if kind == "redraw" else mob
        func = payload[1] if kind == "redraw" else upd
        skip = None
        if kind == "updater":  # the chain's root name is the updated mobject itself (checked by classify)
            code = getattr(upd, "__code__", None)
            skip = policy.updaters.get((code.co_firstlineno, code.co_name)) if code is not None else None
        owners.setdefault(id(owner), (owner, []))[1].append((func, skip))
    family = {key: {id(m) for m in owner.get_family()} for key, (owner, _f) in owners.items()}
    edges = {}
    for key, (owner, funcs) in owners.items():
        reads = set()
        for func, skip in funcs:
            reads |= _reads(func, scene, skip)
        edges[key] = {other for other, fam in family.items() if fam & reads}
        # an updated mobject inside another updated one: the outer's updater may rewrite the inner's points
        edges[key] |= {other for other in family if other != key and other in family[key]}
    state: dict = {}

    def visit(node) -> bool:
        state[node] = 1
        for nxt in edges.get(node, ()):
            if state.get(nxt) == 1 or (nxt not in state and visit(nxt)):
                return True
        state[node] = 2
        return False

    return any(node not in state and visit(node) for node in edges)
