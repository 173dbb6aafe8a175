"""Exact fast paths for three of manim 0.19.0's hottest pure-Python helpers (issue #19 item 6).

A ``-ql`` render spends a fifth of its main thread in the Python around Cairo's path calls, and an audit of an
``always_redraw`` scene a tenth in point comparisons made one pair at a time. Three methods are replaced by
versions that do the same arithmetic on whole arrays and hand Cairo the same doubles:

* ``Camera.set_cairo_context_path``: the subpath split (``consider_points_equals_2d`` between consecutive
  curves' end and start anchors) as one vectorised comparison written with the same operations in the same
  order (``abs(a - b) > atol + rtol * abs(b)`` per coordinate), and the ``move_to``/``curve_to`` calls fed from
  one ``tolist()`` of the points (a ``numpy.float64`` and the ``float`` it converts to are the same double;
  pycairo reads both with ``PyFloat_AsDouble``). Closing a subpath still calls ``consider_points_equals_2d``.
* ``VMobject.get_subpaths_from_points``: ``np.allclose`` of each pair of anchors becomes numpy's own ``isclose``
  expression evaluated once over all pairs (``allclose`` is ``all(isclose(...))``, element-wise ufuncs).
* ``VMobject.get_points_defining_boundary``: the anchors of the family interleaved by slicing instead of a
  Python ``zip``/``chain`` of rows (the same values copied into the same float64 array).

Each replacement takes its fast path only where the original's behaviour is fully known: the object's class and
instance resolve every method and attribute the original would call to manim's own (a script's subclass or
instance override, or a patched ``VMobject``, goes through the original unchanged), the names the originals look up
at run time are unchanged, the points are a 2-D float64 ``ndarray`` and a cubic curve has four points (docs/design.md
"Exact fast paths" lists every condition). Everything else runs the original's steps. Byte identity of videos,
error text and audit reports with and without these paths: tests/execute/test_fastpaths.py (direct comparisons
on adversarial point sets, and full renders/audits both ways).

Installed by trusted code only, in the process that later runs the script (the prefork render server, the audit
zygote), before any script code runs, where the parent asks for them (``execute.fast_paths``, default on; rows:
``fast_paths``).
"""

from __future__ import annotations

import os
import sys

ENV = "PRISM_FAST_PATHS"  # the parent's request: the path of the tripwire file (below)
MARKER_NAME = ".prism_fast_paths_tripped"
# A tripped wire also ends the process at once with this status (red team 5): the file alone lived in the script's
# writable directory, and a script that deleted it (or held every descriptor, or made the directory read-only)
# before tripping kept the run that showed a fast path. The parent runs the sample again without fast paths on
# either sign; a script that exits with this status itself only gets that (its own row, rendered the plain way).
TRIP_EXIT = 213
_exit = os._exit  # (taken before any script runs: a script that rebinds os._exit does not reach this one)
_EXIT_ON_TRIP = False  # set by install_from_env: in the child that runs the script (not where tests call install)
SHARE_ENV = "PRISM_FAST_COPY"  # "1": copies share glyph paths (install_copier), where the parent decided it is exact

# What hands a script the interpreter's call stack without a frame attribute (red team 4): logging's caller lookup
# (`logger.findCaller(True)` -- manim's `logger` -- gives every frame's file and function as text; a record's
# `stack_info`, a `stacklevel` naming an outer frame) and rich's (`console._caller_frame_info(n)`: the *locals* of
# any caller frame). A fast path is a frame of ours where manim's own code would be, so a script that reads the
# stack renders without them (row fast_paths=declined; the one-pass rule refuses these names too: FRAME_INFO there).
FRAME_INFO = frozenset({"findCaller", "stack_info", "stacklevel", "currentframe", "_caller_frame_info",
                        "_stack_offset", "log_locals", "show_locals", "print_stack", "extract_stack", "format_stack",
                        "walk_stack", "getframeinfo", "getouterframes", "getinnerframes"})


def stack_word(node) -> str | None:
    """The name of :data:`FRAME_INFO` an AST node uses, else None: a name, an attribute (also behind manim's
    ``get_``/``set_`` prefixes: ``Mobject.__getattr__`` turns ``m.get_<x>()`` into ``getattr(m, "<x>")``), a keyword,
    an imported name, a string constant (a key of a ``**`` dict)."""
    import ast

    if isinstance(node, ast.Name):
        names = (node.id,)
    elif isinstance(node, ast.Attribute):
        names = (node.attr, node.attr[4:]) if node.attr[:4] in ("get_", "set_") else (node.attr,)
    elif isinstance(node, ast.keyword):
        names = (node.arg,)
    elif isinstance(node, ast.alias):
        names = (node.name,)
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        names = (node.value,)
    else:
        return None
    return next((n for n in names if n in FRAME_INFO), None)


def reads_call_stack(script_text: str) -> bool:
    """Whether the script uses anything of :data:`FRAME_INFO` (:func:`stack_word`; identifiers as Python reads them,
    NFKC-folded), declares a coding other than UTF-8 (its text is then not what Python runs), or cannot be read."""
    import ast
    import unicodedata

    from prism_fast.execute.source_text import source_encoding_reason

    if source_encoding_reason(script_text) is not None:
        return True
    if not any(word in text for word in FRAME_INFO
               for text in (script_text, unicodedata.normalize("NFKC", script_text))):
        return False
    try:
        return any(stack_word(node) is not None for node in ast.walk(ast.parse(script_text)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True


_ORIG: dict[str, object] = {}
_INSTALLED = False
_MARKER: str | None = None


def _tripped() -> None:
    """An exception passed through a replaced method. Its traceback now holds a frame of this module where the
    original has manim's own (and a script may print it), so the parent must run this sample again without the
    fast paths: create the tripwire file (once) and, in the script's own process (:func:`install_from_env`), end it
    at once with :data:`TRIP_EXIT`, so no script code runs after a trip (a script could delete the file). A script
    that creates the file or exits with that status itself gets only a second, plain execution of its own."""
    global _MARKER
    marker, _MARKER = _MARKER, None
    if marker:
        try:
            os.close(os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600))
        except OSError:
            pass
    if _EXIT_ON_TRIP:
        _exit(TRIP_EXIT)  # nothing of this run is kept; no script code runs after the trip (TRIP_EXIT)


def _originals():
    from manim.camera.camera import Camera
    from manim.mobject.types.vectorized_mobject import VMobject

    return Camera, VMobject


def install(marker: str | None = None) -> bool:
    """Replace the three methods (idempotent); ``marker``: the tripwire file to create when an exception passes
    through one of them (:func:`tripped`). Returns whether they are installed."""
    global _INSTALLED, _MARKER
    if marker:
        _MARKER = marker
    if _INSTALLED:
        return True
    import builtins
    import itertools

    import cairo
    import numpy as np
    from manim.camera.three_d_camera import ThreeDCamera
    from manim.mobject.types import vectorized_mobject as vm_module

    Camera, VMobject = _originals()
    orig_path = Camera.__dict__["set_cairo_context_path"]
    orig_subpaths = VMobject.__dict__["get_subpaths_from_points"]
    orig_boundary = VMobject.__dict__["get_points_defining_boundary"]
    # what the originals resolve on a VMobject (by name), each must still be manim's own at the call
    vm_funcs = {name: getattr(VMobject, name) for name in (
        "gen_subpaths_from_points_2d", "_gen_subpaths_from_points", "consider_points_equals_2d",
        "gen_cubic_bezier_tuples_from_points", "consider_points_equals", "get_anchors", "get_start_anchors",
        "get_end_anchors", "get_family")}
    path_names = ("gen_subpaths_from_points_2d", "_gen_subpaths_from_points", "consider_points_equals_2d",
                  "gen_cubic_bezier_tuples_from_points")
    subpath_names = ("_gen_subpaths_from_points", "consider_points_equals")
    anchor_names = ("get_anchors", "get_start_anchors", "get_end_anchors")
    plain_attrs = ("points", "tolerance_for_point_equality", "n_points_per_cubic_curve")
    # the cameras' own point hooks (a subclass's hook runs first in the original: then the original runs)
    own_transforms = (Camera.__dict__["transform_points_pre_display"],
                      ThreeDCamera.__dict__["transform_points_pre_display"])
    cairo_context = cairo.Context
    # what the originals look up at run time and a script could rebind: builtins, vectorized_mobject's `np`/`it`
    # and numpy's allclose/array; the fast paths run only while they are the objects seen here
    builtin_names = ("abs", "len", "range", "tuple", "list", "filter", "zip")
    builtin_objs = tuple(getattr(builtins, n) for n in builtin_names)
    np_allclose, np_array, it_chain = np.allclose, np.array, itertools.chain
    # our own operations, held here: a script's rebinding of numpy's names cannot reach them
    n_abs, n_le, n_isfinite, n_empty, n_concatenate = np.abs, np.less_equal, np.isfinite, np.empty, np.concatenate
    float64 = np.dtype(np.float64)
    ndarray = np.ndarray
    obj_getattribute = object.__getattribute__

    def world_unchanged() -> bool:
        if vm_module.np is not np or vm_module.it is not itertools or np.allclose is not np_allclose \
                or np.array is not np_array or itertools.chain is not it_chain:
            return False
        for name, obj in zip(builtin_names, builtin_objs):
            if getattr(builtins, name, None) is not obj:
                return False
        return True

    def own(obj, names) -> bool:
        """``obj``'s class resolves every name to manim's VMobject function, and its instance overrides none
        (and none of the plain attributes is a class-level descriptor, e.g. a script's property, nor does the
        class intercept attribute reads)."""
        cls = type(obj)
        if cls.__getattribute__ is not obj_getattribute:
            return False
        for name in names:
            if getattr(cls, name, None) is not vm_funcs[name]:
                return False
        d = getattr(obj, "__dict__", None)
        if d is None:
            return False
        for name in names:
            if name in d:
                return False
        for klass in cls.__mro__:
            kd = klass.__dict__
            for name in plain_attrs:
                if name in kd and hasattr(type(kd[name]), "__get__"):
                    return False
        return True

    def float_points(points) -> bool:
        return type(points) is ndarray and points.dtype == float64 and points.ndim == 2 and points.shape[1] >= 2

    def quiet(values) -> bool:
        """No comparison the original makes on these values can raise a floating-point flag numpy reports
        (overflow, underflow, invalid): all finite, each 0 or of a magnitude in [1e-290, 1e150]. Elsewhere the
        original runs, with its own warnings or errors (``np.seterr``) at its own place."""
        if values.size == 0:
            return True
        mag = n_abs(values)
        return bool(mag.max() < 1e150) and not bool(((mag < 1e-290) & (mag != 0)).any())

    def quiet_tolerance(tol) -> bool:
        return type(tol) is float and (tol == 0 or 1e-290 <= abs(tol) < 1e150)

    def four(nppcc) -> bool:
        return type(nppcc) is int and nppcc == 4

    # Each replacement is one frame (the try below is how an exception through it trips the wire).
    def set_cairo_context_path(self, ctx, vmobject):
        try:
            if not (type(self).transform_points_pre_display in own_transforms and type(ctx) is cairo_context):
                return orig_path(self, ctx, vmobject)
            points = self.transform_points_pre_display(vmobject, vmobject.points)
            if len(points) == 0:
                return None
            if not (world_unchanged() and own(vmobject, path_names) and four(vmobject.n_points_per_cubic_curve)
                    and quiet_tolerance(vmobject.tolerance_for_point_equality) and float_points(points)
                    and quiet(points[:, :2])):
                # the original's steps after its point hook, on the object's own methods (one frame, as the original)
                ctx.new_path()
                for subpath in vmobject.gen_subpaths_from_points_2d(points):
                    quads = vmobject.gen_cubic_bezier_tuples_from_points(subpath)
                    ctx.new_sub_path()
                    start = subpath[0]
                    ctx.move_to(*start[:2])
                    for _p0, p1, p2, p3 in quads:
                        ctx.curve_to(*p1[:2], *p2[:2], *p3[:2])
                    if vmobject.consider_points_equals_2d(subpath[0], subpath[-1]):
                        ctx.close_path()
                return self
            n = points.shape[0]
            atol = vmobject.tolerance_for_point_equality
            rtol = 1.0e-5
            splits = [0]
            if n > 4:
                a = points[3:n - 1:4]  # points[k - 1] for k in range(4, n, 4)
                b = points[4:n:4]  # points[k]
                x_far = n_abs(a[:, 0] - b[:, 0]) > atol + rtol * n_abs(b[:, 0])
                y_near = n_abs(a[:, 1] - b[:, 1]) <= atol + rtol * n_abs(b[:, 1])
                breaks = (x_far | ~y_near).nonzero()[0]
                splits.extend((breaks * 4 + 4).tolist())
            splits.append(n)
            xy = points[:, :2].tolist()
            ctx.new_path()
            equals_2d = vmobject.consider_points_equals_2d
            for i1, i2 in zip(splits, splits[1:]):
                if i2 - i1 < 4:
                    continue
                ctx.new_sub_path()
                x0, y0 = xy[i1]
                ctx.move_to(x0, y0)
                for i in range(i1, i2 - (i2 - i1) % 4, 4):
                    (x1, y1), (x2, y2), (x3, y3) = xy[i + 1], xy[i + 2], xy[i + 3]
                    ctx.curve_to(x1, y1, x2, y2, x3, y3)
                if equals_2d(points[i1], points[i2 - 1]):
                    ctx.close_path()
            return self
        except BaseException:
            _tripped()
            raise

    def get_subpaths_from_points(self, points):
        try:
            if not (world_unchanged() and own(self, subpath_names) and four(self.n_points_per_cubic_curve)
                    and float_points(points) and quiet_tolerance(self.tolerance_for_point_equality)
                    and quiet(points)):
                return orig_subpaths(self, points)
            n = points.shape[0]
            splits = [0]
            if n > 4:
                # np.allclose(p, q, atol=tol) per pair = all(isclose): numpy's isclose expression for float64 arrays
                # and float tolerances (no flag can be raised here: quiet), element-wise
                x, y = points[3:n - 1:4], points[4:n:4]
                same = (n_le(n_abs(x - y), self.tolerance_for_point_equality + 1.0e-5 * n_abs(y)) & n_isfinite(y)
                        | (x == y)).all(axis=1)
                splits.extend(((~same).nonzero()[0] * 4 + 4).tolist())
            splits.append(n)
            return [points[i1:i2] for i1, i2 in zip(splits, splits[1:]) if i2 - i1 >= 4]
        except BaseException:
            _tripped()
            raise

    def get_points_defining_boundary(self):
        try:
            if not (world_unchanged() and own(self, ("get_family",))):
                return orig_boundary(self)
            family = self.get_family()
            parts = []
            width = None
            for sm in family:
                pts = sm.points if own(sm, anchor_names) else None
                if pts is None or not float_points(pts) or (width is not None and pts.shape[1] != width) \
                        or not (pts.shape[0] == 1 or four(sm.n_points_per_cubic_curve)):
                    # the original's expression on the family already taken (get_family is called once)
                    return vm_module.np.array(tuple(vm_module.it.chain(*(m.get_anchors() for m in family))))
                width = pts.shape[1]
                if pts.shape[0] == 1:
                    parts.append(pts)
                    continue
                starts, ends = pts[::4], pts[3::4]
                k = min(len(starts), len(ends))
                if k:
                    both = n_empty((2 * k, width), dtype=float64)
                    both[0::2] = starts[:k]
                    both[1::2] = ends[:k]
                    parts.append(both)
            if not parts:
                return np_array(())
            return n_concatenate(parts) if len(parts) > 1 else parts[0].copy()
        except BaseException:
            _tripped()
            raise

    _ORIG.update(set_cairo_context_path=orig_path, get_subpaths_from_points=orig_subpaths,
                 get_points_defining_boundary=orig_boundary)
    for fn, orig in ((set_cairo_context_path, orig_path), (get_subpaths_from_points, orig_subpaths),
                     (get_points_defining_boundary, orig_boundary)):
        fn.__name__, fn.__qualname__, fn.__doc__, fn.__module__ = (orig.__name__, orig.__qualname__, orig.__doc__,
                                                                   orig.__module__)
        fn.__annotations__ = dict(orig.__annotations__)
    Camera.set_cairo_context_path = set_cairo_context_path
    VMobject.get_subpaths_from_points = get_subpaths_from_points
    VMobject.get_points_defining_boundary = get_points_defining_boundary
    _INSTALLED = True
    return True


def uninstall() -> None:
    """Put manim's originals back (tests)."""
    global _INSTALLED
    if not _INSTALLED:
        return
    Camera, VMobject = _originals()
    Camera.set_cairo_context_path = _ORIG["set_cairo_context_path"]
    VMobject.get_subpaths_from_points = _ORIG["get_subpaths_from_points"]
    VMobject.get_points_defining_boundary = _ORIG["get_points_defining_boundary"]
    _INSTALLED = False


# -- Mobject copies that share a glyph's parsed SVG path ------------------------------------------------------------
_getframe, _getlimit = sys._getframe, sys.getrecursionlimit  # (held before any script runs)


def near_recursion_limit(probe: bool = True) -> bool:
    """Whether the caller runs within ``HEADROOM`` levels of the recursion limit (where a standard deep copy of a
    glyph's path, which a shared copy skips, could have raised ``RecursionError``). Python 3.11 counts C-level
    recursion (a script's ``__eq__`` through a comparison, ``repr`` of nested lists) against the same limit as
    frames, so the frame count alone misses it (red team 4: a copy inside recursion through ``__eq__`` at 490
    frames of a 1000 limit): a probe that recurses ``HEADROOM`` levels measures what is really left (~10-25 µs).
    ``probe=False``: the frame count only (the separate audit's copier, whose walk differs from the standard
    library's in depth anyway: docs/design.md)."""
    limit = _getlimit()
    if limit <= HEADROOM:
        return True
    try:
        _getframe(limit - HEADROOM)
    except ValueError:
        pass
    else:
        return True
    if not probe:
        return False
    try:
        _probe(HEADROOM)
    except RecursionError:
        return True
    return False


def _probe(n: int) -> int:
    return 0 if n <= 0 else 1 + _probe(n - 1)


def manim_glyph_classes() -> dict:
    """manim's glyph classes (``VMobjectFromSVGPath`` and manim's own subclasses: ``Brace``, ...) with the attribute
    hooks each has now: call before any script runs. :func:`own_glyph` tells an instance of one of them."""
    from manim.mobject.svg.svg_mobject import VMobjectFromSVGPath

    classes, todo = {}, [VMobjectFromSVGPath]
    while todo:
        klass = todo.pop()
        if klass.__module__.startswith("manim."):
            # keyed by id: a lookup by the class itself would hash the class of the object being copied, and a
            # script's metaclass ``__hash__`` would count the copier's steps (red team 5)
            classes[id(klass)] = (klass, klass.__setattr__, klass.__getattribute__)
            todo.extend(klass.__subclasses__())
    return classes


def own_glyph(obj, classes: dict) -> bool:
    """``obj`` is exactly one of ``classes`` (:func:`manim_glyph_classes`), its attribute hooks unchanged since.
    Runs nothing of the script's: the class is found by its id and compared by identity first."""
    cls = type(obj)
    entry = classes.get(id(cls))
    return entry is not None and entry[0] is cls and entry[1] is cls.__setattr__ and entry[2] is cls.__getattribute__


def tripped_here() -> None:
    """Trip the wire (for the separate audit's copier, audit/fastcopy.py)."""
    _tripped()


_COPIER_INSTALLED = False
_GUARD_INSTALLED = False
HEADROOM = 200  # frames: far more than the standard library's deepcopy of an svgelements Path nests


def guard_glyph_paths(marker: str | None = None, writers: tuple = ()) -> bool:
    """Make every access to a glyph's ``path_obj`` other than manim's own trip the wire (:func:`_tripped`).

    Where copies share a glyph's parsed path (:func:`install_copier`, the separate audit's ``audit/fastcopy.py``),
    anything that reads it (``get_merged_array("path" + "_obj")``, any other string-driven ``getattr`` in manim)
    or writes it (``.set(**{...})``) could see the sharing. A data descriptor on ``VMobjectFromSVGPath`` (so on
    manim's subclasses too) keeps the value where it was (the instance's ``__dict__``) and lets through, silently,
    only manim's read while building the glyph (``handle_commands``) and the writes of its constructor and of the
    copiers (``writers``: the code objects of other copiers that set it); any other access works as before and
    trips the wire, so the sample runs again without fast paths."""
    global _GUARD_INSTALLED, _MARKER
    if marker:
        _MARKER = marker
    if _GUARD_INSTALLED:
        _GUARD_CODES["writes"].update((id(c), c) for c in writers)
        return True
    import sys

    from manim.mobject.mobject import Mobject
    from manim.mobject.svg.svg_mobject import VMobjectFromSVGPath

    getframe = sys._getframe
    # code objects by identity (a set would compare them by content: a script's copy of one would pass)
    read_code = VMobjectFromSVGPath.__dict__["handle_commands"].__code__
    class_scan = Mobject.__dict__["_add_intrinsic_animation_overrides"].__func__.__code__
    writes = {id(c): c for c in (VMobjectFromSVGPath.__dict__["__init__"].__code__,
                                 _ORIG.get("__deepcopy__", Mobject.__deepcopy__).__code__, *writers)}
    if "__deepcopy__" in _ORIG:  # our copier (installed first) writes too
        ours = Mobject.__dict__["__deepcopy__"].__code__
        writes[id(ours)] = ours
    _GUARD_CODES["writes"] = writes
    plain_dict = object.__getattribute__

    class GlyphPath:
        __slots__ = ()

        def __get__(self, obj, owner=None):
            if obj is None:  # on the class: manim's subclass set-up lists every class attribute (and skips this one)
                if getframe(1).f_code is not class_scan:
                    _tripped()
                return self
            if getframe(1).f_code is not read_code:
                _tripped()
            try:
                return plain_dict(obj, "__dict__")["path_obj"]
            except KeyError:
                raise AttributeError("path_obj") from None  # (then the class's __getattr__, as without us)

        def __set__(self, obj, value):
            code = getframe(1).f_code
            if writes.get(id(code)) is not code:
                _tripped()
            plain_dict(obj, "__dict__")["path_obj"] = value

        def __delete__(self, obj):
            _tripped()
            try:
                del plain_dict(obj, "__dict__")["path_obj"]
            except KeyError:
                raise AttributeError("path_obj") from None

    VMobjectFromSVGPath.path_obj = GlyphPath()
    # Readers of an object's instance dict bypass the descriptor (red team 3): manim's hashing (on only where a
    # script turned caching back on: `get_json`, the play hash) and pickling (`ndarray.dumps` of an object array)
    # number objects by identity, so a shared path shows. Both trip the wire; their results are unchanged.
    from manim.utils import hashing

    orig_default = hashing._CustomEncoder.__dict__["default"]
    obj_getstate = object.__getstate__

    def default(self, obj):
        _tripped()
        return orig_default(self, obj)

    def __getstate__(self):
        _tripped()
        return obj_getstate(self)

    default.__name__, default.__qualname__ = orig_default.__name__, orig_default.__qualname__
    _ORIG["hashing_default"] = orig_default
    hashing._CustomEncoder.default = default
    VMobjectFromSVGPath.__getstate__ = __getstate__
    _GUARD_INSTALLED = True
    return True


_GUARD_CODES: dict = {}


def install_copier(marker: str | None = None) -> bool:
    """Replace ``Mobject.__deepcopy__`` with manim 0.19.0's own steps, except that a glyph (exactly
    ``VMobjectFromSVGPath`` or one of manim's own subclasses, e.g. ``Brace``) shares its ``path_obj`` -- the parsed
    ``svgelements.Path`` it was built from, thousands of objects that ``copy.deepcopy`` walks one by one on every
    Tex/Text copy -- with its copy instead of copying it. manim reads ``path_obj`` only while building that glyph
    and never changes it, so sharing is exact where nothing else can reach it: the parent asks for this only when
    the script's text cannot name or reach it (audit/fastcopy.py ``may_share_svg_paths``: no ``path_obj``, no
    reflection, no ``deepcopy``, no import of manim's submodules), and :func:`guard_glyph_paths` (installed with
    it) trips the wire at any other access. Everything else is the original's steps, in one frame as the original
    (the same names looked up at run time: the module's ``copy``, ``setattr``/``id``/``str``; where a script rebound
    one of those, or ``copy.deepcopy``, the original itself runs). The wire also trips on an exception passing
    through this frame (its traceback names this module) and on a glyph copied within ``HEADROOM`` frames of the
    recursion limit (where copying the path could have raised ``RecursionError``); the parent then runs the sample
    again without fast paths. Only a value that is an ``svgelements.Path`` is shared."""
    global _COPIER_INSTALLED, _MARKER
    if marker:
        _MARKER = marker
    if _COPIER_INSTALLED:
        return True
    import builtins
    import copy as copy_module

    import manim
    from manim.mobject.mobject import Mobject
    from manim.mobject.svg import svg_mobject

    if manim.__version__ != "0.19.0":
        return False
    orig = Mobject.__dict__["__deepcopy__"]
    g = orig.__globals__  # manim.mobject.mobject's namespace: where the original finds `copy`
    std_deepcopy = copy_module.deepcopy
    se_path = svg_mobject.se.Path
    glyph_classes = manim_glyph_classes()  # (seen before any script runs)
    names = ("setattr", "id", "str")
    objs = tuple(getattr(builtins, n) for n in names)
    near_limit = near_recursion_limit

    def names_unchanged() -> bool:
        if g.get("copy") is not copy_module or copy_module.deepcopy is not std_deepcopy:
            return False
        for name, obj in zip(names, objs):
            if name in g or getattr(builtins, name, None) is not obj:
                return False
        return True

    def __deepcopy__(self, clone_from_id):
        try:
            if not names_unchanged():
                return orig(self, clone_from_id)
            cls = self.__class__
            result = cls.__new__(cls)
            clone_from_id[id(self)] = result
            if own_glyph(self, glyph_classes):
                for k, v in self.__dict__.items():
                    if type(k) is str and k == "path_obj" and type(v) is se_path:  # (a str subclass's __eq__: no)
                        if near_limit():  # the standard copy of the path could have hit the recursion limit
                            _tripped()
                        setattr(result, k, v)
                    else:
                        setattr(result, k, g["copy"].deepcopy(v, clone_from_id))
            else:
                for k, v in self.__dict__.items():
                    setattr(result, k, g["copy"].deepcopy(v, clone_from_id))
            result.original_id = str(id(self))
            return result
        except BaseException:
            _tripped()
            raise

    __deepcopy__.__name__, __deepcopy__.__qualname__, __deepcopy__.__doc__, __deepcopy__.__module__ = (
        orig.__name__, orig.__qualname__, orig.__doc__, orig.__module__)
    __deepcopy__.__annotations__ = dict(orig.__annotations__)
    _ORIG["__deepcopy__"] = orig
    Mobject.__deepcopy__ = __deepcopy__
    _COPIER_INSTALLED = True
    guard_glyph_paths(writers=(__deepcopy__.__code__,))
    return True


def uninstall_copier() -> None:
    """Put manim's ``Mobject.__deepcopy__`` back and remove the guard (tests)."""
    global _COPIER_INSTALLED, _GUARD_INSTALLED
    from manim.mobject.mobject import Mobject
    from manim.mobject.svg.svg_mobject import VMobjectFromSVGPath

    if _COPIER_INSTALLED:
        Mobject.__deepcopy__ = _ORIG.pop("__deepcopy__")
        _COPIER_INSTALLED = False
    if _GUARD_INSTALLED:
        from manim.utils import hashing

        del VMobjectFromSVGPath.path_obj
        del VMobjectFromSVGPath.__getstate__
        hashing._CustomEncoder.default = _ORIG.pop("hashing_default")
        _GUARD_INSTALLED = False


def install_from_env() -> bool:
    """In the forked child that will run a script: install when the parent asked (``PRISM_FAST_PATHS`` = the
    tripwire file's path; ``PRISM_FAST_COPY=1``: the glyph-path sharing copier too, :func:`install_copier`; both
    variables are removed here, so the script never sees them). Returns whether the fast paths are installed."""
    global _EXIT_ON_TRIP
    marker = os.environ.pop(ENV, None)
    share = os.environ.pop(SHARE_ENV, None) == "1"
    if not marker:
        return _INSTALLED
    _EXIT_ON_TRIP = True
    ok = install(marker)
    if ok and share:
        install_copier(marker)
    return ok


def tripped(work_dir, returncode: int | None = None) -> bool:
    """Parent side: whether the child in ``work_dir`` tripped the wire (an exception through a fast path, a
    guarded access): its marker file, or its exit status :data:`TRIP_EXIT` (the file is the script's to delete)."""
    return returncode == TRIP_EXIT or os.path.lexists(os.path.join(os.fspath(work_dir), MARKER_NAME))
