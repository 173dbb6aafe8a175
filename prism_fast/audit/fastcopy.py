"""``Mobject.copy`` without the cost of the generic ``copy.deepcopy`` walk (issue #19 deliverable 3).

Profiles of the separate audit on updater scenes (``always_redraw``, ``DecimalNumber`` under a ``ValueTracker``)
spend 30-50 % of the audit in ``copy.deepcopy``: manim copies a mobject on every ``become``, every
``DecimalNumber.set_value`` (one cached glyph copy per character) and every Tex/SVG build (a copy of the cached
parse), at 60 frames per second. Most of that time is the pure-Python dispatch of ``copy.deepcopy`` itself,
called once per float of the thousands of ``svgelements`` points an SVG mobject keeps.

:func:`deepcopy` below is the standard library's algorithm (Python 3.11 ``copy.deepcopy`` and ``_reconstruct``),
step for step, with the same memo and keep-alive bookkeeping and the same object graph as result: the same
types, values, sharing and ``__dict__`` key order. It only takes shorter paths: atomic values (exactly the
types ``copy`` itself treats as atomic) return before any memo lookup (they are never memoised, and every id in
a memo belongs to a live original, so the lookup could not hit), and ``list``/``dict``/``tuple``/``__deepcopy__``
/``__reduce_ex__`` objects are handled inline instead of through the dispatch table. Anything it does not
recognise goes to ``copy.deepcopy`` itself. :func:`install` makes ``Mobject.__deepcopy__`` (manim 0.19.0's,
unchanged otherwise) copy its attributes with it; tests/audit/test_audit_fastcopy.py compares the copies of
many mobjects, node by node, with the standard library's.

One deliberate difference, ``share_svg_paths`` (the audit child turns it on only when :func:`may_share_svg_paths`:
the script's text names no ``path_obj`` and has no reflection that could reach it by a computed name --
``vars(glyph)["path" + "_obj"]`` mutated in a copy and rebuilt into a glyph changed the report): every glyph of a Tex/Text/SVG mobject is a ``VMobjectFromSVGPath`` that keeps the parsed
``svgelements.Path`` it was built from (``path_obj``, thousands of point objects per formula). manim reads it
only while building that mobject (``handle_commands`` from ``__init__``; construction gets a freshly parsed path)
and never changes it afterwards, so the copy shares it instead of copying it: every other node of the copy is
still the standard library's, and the points, styles and everything the audit reads are the copy's own.
"""

from __future__ import annotations

import copy
import copyreg
import functools

# one-pass static reasons (audit/onepass_rule.py) that mean the script may reach an attribute by a name its text
# does not show (reflection, evaluators, module hops, imports outside the short list): it could then mutate a
# shared ``path_obj`` and rebuild a glyph from it, which the standard library's copies would not see
_REFLECTION = ("name:getattr", "name:setattr", "name:delattr", "name:hasattr", "name:vars", "name:globals",
               "name:locals", "name:eval", "name:exec", "name:compile", "name:breakpoint", "name:__", "attr:__",
               "module_attr:", "string_access:", "private:", "string_annotation", "import:", "relative_import",
               "binds:__name__", "global", "syntax_error", "too_deep", "attr:bltns", "attr:sp", "attr:eval",
               "attr:exec", "attr:getattr", "attr:setattr", "attr:delattr", "attr:globals", "attr:locals",
               "attr:vars", "attr:_eval", "attr:_evaluate", "attr:_type", "attr:import_module", "attr:gi_",
               "attr:cr_", "attr:ag_", "attr:f_", "attr:tb_", "attr:co_", "attr:cell_contents", "attr:modules",
               "attr:_os", "attr:sys", "attr:_sys", "attr:builtins", "attr:ctypeslib",
               # (glyph-path sharing) state of the copy machinery, and a text decoded other than as read here
               "library_state:", "copy_protocol:", "source_encoding:",
               # (red team 4) the call stack and its frames' locals (the copy walk's memo), object addresses
               "frame_info:",
               # (red team 5) names the rule cannot read or that manim turns into attribute access: a dunder or
               # private keyword (`.set(__class__=VMobject)` moves a glyph off its guarded class), `**{computed}`,
               # `m.get___dict__()` (manim's get_<x> is getattr(m, "<x>"))
               "keyword:_", "dynamic_keywords", "getattr_magic:")


# words that end sharing wherever they appear: the attribute, the copy machinery, the parser, and manim's SVG
# methods that hand a parsed path (or the parsed document) to code a script could override
_NO_SHARE_WORDS = ("path_obj", "deepcopy", "svgelements", "get_mobjects_from", "path_to_mobject",
                   "apply_style_to_mobject", "generate_mobject", "init_svg_mobject", "handle_commands",
                   "modify_xml_tree", "handle_transform", "VMobjectFromSVGPath", "svg_mobject", "dispatch_table",
                   "copyreg",
                   # (red team 4) SVGMobject's other element handlers: each gets a parsed element of the document
                   # whose paths the glyphs keep
                   "rect_to_mobject", "line_to_mobject", "ellipse_to_mobject", "polygon_to_mobject",
                   "polyline_to_mobject", "text_to_mobject")
# names and attributes that end sharing: the classes of objects (`type(x)` of a captured path part, to patch or
# spy on its copying), listings of the guard's class attribute, the svgelements module under manim's packages
_NO_SHARE_NAMES = ("type", "dir", "help", "id", "hash")  # (id/hash: object addresses, which sharing changes)
_NO_SHARE_ATTRS = ("se", "svg_mobject", "svgelements")


def may_share_svg_paths(script_text: str, reasons: list[str] | None = None) -> bool:
    """Whether copies may share ``path_obj`` for this script: its text never names ``path_obj`` and has no
    construct through which it could reach that attribute by a computed name (``vars(glyph)["path" + "_obj"]``,
    ``getattr``, an evaluator; the one-pass rule's reflection reasons), and none that could see how a copy was made
    or build a path of its own: no ``deepcopy`` (a script's memo or ``__deepcopy__`` sees every object copied), no
    ``copyreg``/``dispatch_table``/copy-protocol methods, no ``svgelements`` and no import of a manim submodule or
    ``.se``/``.svg_mobject`` attribute (where ``se.Path`` lives), no ``VMobjectFromSVGPath``, no name of manim's SVG
    methods that hand a parsed path to overridable code (``path_to_mobject``, ``handle_transform``, ...), no
    ``type`` (the class of a captured part), no ``dir``/``help`` (they list the guard's class attribute), no coding
    declaration other than UTF-8; words are matched in the NFKC-folded text too, as Python reads identifiers. What is
    still reachable is guarded at run time (``execute/fastpaths.py`` ``guard_glyph_paths``). ``reasons``: the
    script's ``static_reasons`` where the caller has them already (more reasons only ever say no more often)."""
    import unicodedata

    # Python folds identifiers to NFKC (`ｐath_obj` is `path_obj`): the words are looked for in the folded text too
    folded = unicodedata.normalize("NFKC", script_text)
    if any(word in text for word in _NO_SHARE_WORDS for text in (script_text, folded)):
        return False
    if reasons is None:
        from prism_fast.audit.onepass_rule import static_reasons

        reasons = static_reasons(script_text)
    if any(r.startswith(_REFLECTION) for r in reasons):
        return False
    import ast

    try:
        tree = ast.parse(script_text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    try:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name.startswith("manim.") for a in node.names):
                return False
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("manim.")):
                return False
            if isinstance(node, ast.Name) and node.id in _NO_SHARE_NAMES:
                return False
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("__") \
                    and node.name.endswith("__") and node.name != "__init__":
                return False  # (red team 5) Python calls these by itself: `__getattr__` answers copy's lookup of
                # `__deepcopy__` on the script's own objects and is handed the copy walk's memo
            if isinstance(node, ast.Attribute) and node.attr in _NO_SHARE_ATTRS:
                return False
    except RecursionError:
        return False
    return True


_nil: list = []
# exactly the types copy.deepcopy returns as they are (its own dispatch table decides)
_ATOMIC = frozenset(t for t, f in copy._deepcopy_dispatch.items() if f is copy._deepcopy_atomic)
_DISPATCH = copy._deepcopy_dispatch
_std_deepcopy = copy.deepcopy
MANIM_VERSION = "0.19.0"


def _keep_alive(x, memo) -> None:
    try:
        memo[id(memo)].append(x)
    except KeyError:
        memo[id(memo)] = [x]


def deepcopy(x, memo):
    """``copy.deepcopy(x, memo)`` (``memo`` required), same result, shorter paths."""
    cls = type(x)
    if cls in _ATOMIC:
        return x
    d = id(x)
    y = memo.get(d, _nil)
    if y is not _nil:
        return y
    if cls is list:
        y = []
        memo[d] = y
        append = y.append
        for a in x:
            append(a if type(a) in _ATOMIC else deepcopy(a, memo))
    elif cls is dict:
        y = {}
        memo[d] = y
        for key, value in x.items():
            y[key if type(key) in _ATOMIC else deepcopy(key, memo)] = \
                value if type(value) in _ATOMIC else deepcopy(value, memo)
    elif cls is tuple:
        ys = [deepcopy(a, memo) for a in x]
        try:  # a member's copy may have copied this tuple already (cycles through mutable members)
            return memo[d]
        except KeyError:
            pass
        y = x
        for k, j in zip(x, ys):
            if k is not j:
                y = tuple(ys)
                break
    elif cls in _DISPATCH:  # the standard library's own copier for the remaining dispatch types
        y = _DISPATCH[cls](x, memo)
    elif issubclass(cls, type):
        y = x
    else:
        copier = getattr(x, "__deepcopy__", None)
        if copier is not None:
            y = copier(memo)
        else:
            reductor = copyreg.dispatch_table.get(cls)
            if reductor:
                rv = reductor(x)
            else:
                reductor = getattr(x, "__reduce_ex__", None)
                if reductor is not None:
                    rv = reductor(4)
                else:
                    reductor = getattr(x, "__reduce__", None)
                    if reductor:
                        rv = reductor()
                    else:
                        return _std_deepcopy(x, memo)  # raises copy.Error as the standard library does
            if isinstance(rv, str):
                y = x
            else:
                y = _reconstruct(x, memo, *rv)
    if y is not x:
        memo[d] = y
        _keep_alive(x, memo)
    return y


def _reconstruct(x, memo, func, args, state=None, listiter=None, dictiter=None):
    """``copy._reconstruct`` for a deep copy."""
    if args:
        args = [deepcopy(arg, memo) for arg in args]
    y = func(*args)
    memo[id(x)] = y
    if state is not None:
        state = deepcopy(state, memo)
        if hasattr(y, "__setstate__"):
            y.__setstate__(state)
        else:
            if isinstance(state, tuple) and len(state) == 2:
                state, slotstate = state
            else:
                slotstate = None
            if state is not None:
                y.__dict__.update(state)
            if slotstate is not None:
                for key, value in slotstate.items():
                    setattr(y, key, value)
    if listiter is not None:
        for item in listiter:
            y.append(deepcopy(item, memo))
    if dictiter is not None:
        for key, value in dictiter:
            key = deepcopy(key, memo)
            y[key] = deepcopy(value, memo)
    return y


def mobject_deepcopy(self, clone_from_id):
    """manim 0.19.0 ``Mobject.__deepcopy__`` with :func:`deepcopy` for the attributes."""
    cls = self.__class__
    result = cls.__new__(cls)
    clone_from_id[id(self)] = result
    for k, v in self.__dict__.items():
        setattr(result, k, v if type(v) in _ATOMIC else deepcopy(v, clone_from_id))
    result.original_id = str(id(self))
    return result


_SHARING: dict = {}  # once installed with shared SVG paths: manim's glyph classes, svgelements' Path, the tripwire


def mobject_deepcopy_sharing_svg_paths(self, clone_from_id):
    """:func:`mobject_deepcopy`, except that the ``path_obj`` of one of manim's glyph classes (the parsed
    ``svgelements.Path`` it was built from) is shared with the copy instead of copied: only a value that is an
    ``svgelements.Path``, on exactly manim's ``VMobjectFromSVGPath`` or one of its own subclasses with their own
    attribute hooks. As the render's copier (execute/fastpaths.py ``install_copier``), it trips the fast paths'
    wire on an exception through it and on a glyph copied near the recursion limit (the sample is audited again
    without fast paths)."""
    try:
        cls = self.__class__
        result = cls.__new__(cls)
        clone_from_id[id(self)] = result
        glyph = _SHARING["own_glyph"](self, _SHARING["classes"])
        for k, v in self.__dict__.items():
            if glyph and type(k) is str and k == "path_obj" and type(v) is _SHARING["path"]:
                if _SHARING["near_limit"]():
                    _SHARING["trip"]()
                setattr(result, k, v)
                continue
            setattr(result, k, v if type(v) in _ATOMIC else deepcopy(v, clone_from_id))
        result.original_id = str(id(self))
        return result
    except BaseException:
        _SHARING["trip"]()
        raise


def install(meta: dict | None = None, share_svg_paths: bool = False) -> bool:
    """Use :func:`mobject_deepcopy` (``share_svg_paths``: :func:`mobject_deepcopy_sharing_svg_paths`) for every
    ``Mobject`` copy in this process (manim 0.19.0 only)."""
    import manim
    from manim.mobject.mobject import Mobject

    if manim.__version__ != MANIM_VERSION:
        if meta is not None:
            meta["fastcopy"] = f"off (manim {manim.__version__}, written for {MANIM_VERSION})"
        return False
    if share_svg_paths:
        from manim.mobject.svg import svg_mobject

        from prism_fast.execute.fastpaths import manim_glyph_classes, near_recursion_limit, own_glyph, tripped_here

        _SHARING.update(classes=manim_glyph_classes(), own_glyph=own_glyph, path=svg_mobject.se.Path,
                        near_limit=functools.partial(near_recursion_limit, probe=False), trip=tripped_here)
        Mobject.__deepcopy__ = mobject_deepcopy_sharing_svg_paths
    else:
        Mobject.__deepcopy__ = mobject_deepcopy
    if meta is not None:
        meta["fastcopy"] = "on, svg paths shared" if share_svg_paths else "on"
    return True
