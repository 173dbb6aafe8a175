"""The one-pass audit's static rule (parent side, before rendering; design: docs/design.md "One-pass audit").

An AST rule: any construct through which the render and the reference audit execution could diverge makes the
sample ineligible for sharing its render with the audit (updaters, TracedPath, ``config``/``camera``/``renderer``/
``time`` access, ``__file__``/``__name__``, the compatibility shims' names, a used result of ``remove``, ``try``
blocks, imports outside a short list, reflection, ...). Pure: text in, reasons out.
"""

from __future__ import annotations

import ast
import re

from prism_fast.audit import onepass_rules
from prism_fast.execute import fastpaths, source_text
from prism_fast.execute.script_reach import (  # the deny-list of reflection, shared with the TeX cache's gate
    COPY_PROTOCOL, FRAME_ATTRS, FRAME_INFO, MODULE_ATTRS, REACH_ATTRS, SAFE_IMPORTS, STATE_HOOKS, STDLIB_SAFE,
    STRING_ACCESS)
from prism_fast.execute.script_reach import DUNDER as _DUNDER
from prism_fast.execute.script_reach import a_class as _a_class
from prism_fast.execute.script_reach import annotation_nodes as _annotations
from prism_fast.execute.script_reach import format_reads_attributes as _format_reads_attributes
from prism_fast.execute.script_reach import import_reasons, over_budget
from prism_fast.execute.script_reach import keyword_forwards as _keyword_forwards
from prism_fast.execute.script_reach import literal_keywords as _literal_keywords
from prism_fast.execute.script_reach import private as _private

# bare names that make a script ineligible (frame-rate dependent objects, config, reflection, the shims)
FLAG_NAMES = frozenset({
    "config", "tempconfig", "always_redraw", "TracedPath", "always", "f_always", "always_shift", "always_rotate",
    "turn_animation_into_updater", "cycle_animation", "UpdateFromFunc", "UpdateFromAlphaFunc", "PhaseFlow",
    "MaintainPositionRelativeTo", "ChangeSpeed", "AnimatedBoundary", "StreamLines", "ArrowVectorField",
    "VectorField", "Pixels", "getattr", "setattr", "delattr", "hasattr", "globals", "locals", "vars", "eval",
    "exec", "compile", "open", "input", "breakpoint", "exit", "quit", "repr", "id", "ImageMobject",
    "SVGMobject", "ImageMobjectFromCamera", "ChangingDecimal",
    # a script property (`name`'s setter runs in Mobject.set(name=...), the injected call: see _injected_set_reasons)
    "property",
    # the reference audit's compatibility shims (spatial_audit.md §2.2)
    "CENTER", "UP_LEFT", "UP_RIGHT", "DOWN_LEFT", "DOWN_RIGHT", "LIGHT_BLUE", "CYAN", "HGroup", "BulletList",
    "Colors",
})
FLAG_ATTRS = frozenset({
    "add_updater", "updaters", "time", "renderer", "camera", "frame_rate", "pixel_width", "pixel_height",
    "config", "name", "wait_until", "stop_condition", "random_seed", "file_writer", "skip_animations",
    "_full_id", "frame_width", "frame_height", "match_updaters", "always",
    # the scene's per-frame state, left by a play's last frame (issue 19 red team): `self.last_t` is the last frame
    # time (14/15 of a 1 s play in the render, 59/60 in the audit-only run), `time_progression` its frame grid
    "last_t", "time_progression",
})
FLAG_KEYWORDS = frozenset({"code_file", "file_name", "stop_condition"})


# PEP 263 declarations other than UTF-8 (red team 3): execute/source_text.py, shared with the fast paths' decline
source_encoding_reason = source_text.source_encoding_reason


def static_reasons(source: str) -> list[str]:
    """Why this script cannot share its render with the audit (empty list: statically eligible)."""
    coding = source_encoding_reason(source)
    if coding is not None:
        return [coding]
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ["syntax_error"]
    except (RecursionError, MemoryError):
        return ["too_deep_to_parse"]
    if over_budget(tree):  # past the analyses' size bound (script_reach.MAX_NODES): not eligible, not analysed
        return [onepass_rules.ANALYSIS_BUDGET]
    try:
        return _static_reasons(tree)
    except (RecursionError, MemoryError):  # a walk over a pathologically nested tree: not eligible, no crash
        return ["too_deep_to_analyse"]
    except onepass_rules.AnalysisBudget:  # the precise rules' step bound (onepass_rules.MAX_STEPS)
        return [onepass_rules.ANALYSIS_BUDGET]


def _static_reasons(tree: ast.AST) -> list[str]:
    reasons: list[str] = []

    def add(reason: str) -> None:
        if reason not in reasons:
            reasons.append(reason)

    # constructs decided by a precise rule (onepass_rules): exempt nodes, never-run branches, updater bodies
    rules = onepass_rules.analyse(tree) if isinstance(tree, ast.Module) else onepass_rules.Analysis()
    exempt = rules.exempt
    statement_calls = {id(n.value) for n in onepass_rules.walk(tree, rules.skip) if isinstance(n, ast.Expr)}
    remove_funcs = set()
    for node in onepass_rules.walk(tree, rules.skip):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "remove":
            if id(node) in statement_calls:
                remove_funcs.add(id(node.func))
    stdlib_aliases = {}  # names bound to a standard-library module of SAFE_IMPORTS (`import typing as t`)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                stdlib_aliases[bound] = alias.name.split(".")[0] in STDLIB_SAFE
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in STDLIB_SAFE:
            for alias in node.names:
                stdlib_aliases[alias.asname or alias.name] = True  # a submodule or any object of the module
    forwards = _keyword_forwards(tree)
    for node in onepass_rules.walk(tree, rules.skip):
        if id(node) in exempt:
            continue
        # a single-underscore attribute: a library object's internals (`console._caller_frame_info`); a script's own
        # too, since `self` is only a name (`H.leak(logger)` runs `self._log` on manim's logger: red team)
        if isinstance(node, ast.Attribute) and _private(node.attr):
            add(f"private:.{node.attr}")
        elif isinstance(node, ast.keyword) and node.arg is not None and _private(node.arg):
            add(f"private:{node.arg}=")
        word = fastpaths.stack_word(node)
        if word is not None:
            add(f"frame_info:{word}")
        if isinstance(node, ast.Attribute) and node.attr[:4] in ("get_", "set_") and _magic_flagged(node.attr[4:]):
            # manim's Mobject.__getattr__ turns `m.get_<x>()` into getattr(m, "<x>") and `m.set_<x>(v)` into
            # setattr: the rule judges <x> as if written (red team: `get___dict__`, `get__caller_frame_info`)
            add(f"getattr_magic:{node.attr}")
        if isinstance(node, ast.keyword) and node.arg is None and not _literal_keywords(node.value) \
                and id(node) not in forwards:
            add("dynamic_keywords")  # `f(**mapping)`: keywords the rule cannot read (`**{"stack" + "_info": 1}`)
        for reason in import_reasons(node, SAFE_IMPORTS):
            add(reason)
        if isinstance(node, ast.Import):
            pass  # (its only reasons: above)
        elif isinstance(node, ast.ImportFrom):
            if any(a.name.startswith("_") for a in node.names):  # (a private name of any module, manim's too)
                add(f"private:{node.module}")
            for alias in node.names:  # `from manim.utils.module_ops import inspect`, `from operator import attrgetter`
                if alias.name in MODULE_ATTRS or alias.name.lstrip("_") in MODULE_ATTRS:
                    add(f"module_attr:{alias.name}")
                elif alias.name in STRING_ACCESS or alias.name in FRAME_ATTRS or alias.name in REACH_ATTRS:
                    add(f"string_access:{alias.name}")
                elif alias.name in STATE_HOOKS:
                    add(f"library_state:{alias.name}")
                if alias.name.startswith("__") or (alias.asname not in (None, alias.name)
                                                   and (alias.name in FLAG_NAMES or alias.name in FLAG_ATTRS)):
                    # the name or attribute rule, which an alias would escape (red team: `from manim import config
                    # as c` then `c["frame_rate"]`, 15 in the render and 60 in the audit-only run; `from numpy
                    # import __builtins__ as b`, `from <module> import __dict__ as d`); imported under its own
                    # name, every use meets the name rule (and its precise rules: `always_redraw`)
                    add(f"import_name:{alias.name}")
        elif isinstance(node, ast.Name):
            if node.id in FLAG_NAMES:
                add(f"name:{node.id}")
            elif node.id.startswith("__") and node.id.endswith("__"):
                add(f"name:{node.id}")
        elif isinstance(node, ast.Attribute):
            if id(node) in rules.unhooked_only:  # moot where every audited scene is unhooked (decided at run time)
                add(onepass_rules.UNHOOKED_ONLY + rules.unhooked_only[id(node)])
            elif node.attr in FLAG_ATTRS or node.attr.startswith("__"):
                add(f"attr:{node.attr}")
            if node.attr == "remove" and id(node) not in remove_funcs:
                add("remove_result_used")  # the hooked remove returns None (Q-SPATIAL-8)
        elif isinstance(node, ast.keyword) and (node.arg in FLAG_KEYWORDS or _DUNDER.fullmatch(node.arg or "")):
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
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and isinstance(node.value, ast.Name)
                and stdlib_aliases.get(node.value.id)):
            add(f"private:{node.value.id}.{node.attr}")
        if isinstance(node, ast.Attribute) and (node.attr in MODULE_ATTRS or node.attr.lstrip("_") in MODULE_ATTRS):
            add(f"module_attr:{node.attr}")  # a module hop from an allowed import (see MODULE_ATTRS)
        elif isinstance(node, ast.Attribute) and (node.attr in FRAME_ATTRS or node.attr in REACH_ATTRS):
            add(f"attr:{node.attr}")
        if (isinstance(node, ast.Name) and node.id in STRING_ACCESS) or (
                isinstance(node, ast.Attribute) and node.attr in STRING_ACCESS):
            add(f"string_access:{node.id if isinstance(node, ast.Name) else node.attr}")
        elif (isinstance(node, ast.Name) and node.id in STATE_HOOKS) or (
                isinstance(node, ast.Attribute) and node.attr in STATE_HOOKS):
            add(f"library_state:{node.id if isinstance(node, ast.Name) else node.attr}")
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and _DUNDER.fullmatch(node.value)
                and node.value != "__main__"):  # (a module's name, compared in the decided `__main__` block)
            add("string:dunder")
        elif isinstance(node, ast.Attribute) and node.attr == "format":
            template = node.value
            if not (isinstance(template, ast.Constant) and isinstance(template.value, str)):
                add("string_access:format")  # a template the rule cannot read
            elif _format_reads_attributes(template.value):
                add("string_access:format_field")
    for reason in _injected_set_reasons(tree):
        add(reason)
    for reason in _scene_identity_reasons(tree):
        add(reason)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in COPY_PROTOCOL:
            add(f"copy_protocol:{node.name}")
        elif isinstance(node, ast.Attribute) and node.attr == "set" and _a_class(node.value):
            add("unbound_set")
    for annotation in _annotations(tree):
        if any(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in ast.walk(annotation)):
            add("string_annotation")  # typing.get_type_hints / functools.singledispatch evaluate it
    for reason in rules.reasons:  # why an updater was not approved (its add_updater/always_redraw stays flagged)
        add(reason)
    return reasons



# What shows the render child's `Scene` (the observers' hooked subclass of manim's Scene, as the audit's AuditScene
# is) instead of manim's own: the name used anywhere but as a class's base, its methods and attributes listed
# (red team: `isinstance(self, Scene)` in a MovingCameraScene, `issubclass(MovingCameraScene, Scene)` in a hooked
# scene -- False in the one-pass render and in the audit, True in a plain render: a different video)
SCENE_NAMES = frozenset({"Scene"})
IDENTITY_NAMES = frozenset({"dir", "help"})
IDENTITY_ATTRS = frozenset({"mro"})


def _scene_identity_reasons(tree: ast.AST) -> list[str]:
    out: list[str] = []
    bases = {id(b) for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for b in n.bases}
    # type hints (`SCENES: dict[str, type[Scene]] = {}`): evaluated at most into `__annotations__`, which only a
    # dunder read (refused above) or `typing.get_type_hints` on a string annotation (refused) could look at
    for n in ast.walk(tree):
        hints = []
        if isinstance(n, ast.AnnAssign):
            hints.append(n.annotation)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = n.args
            hints += [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                      if x is not None and x.annotation is not None]
            if n.returns is not None:
                hints.append(n.returns)
        bases |= {id(m) for h in hints for m in ast.walk(h)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in SCENE_NAMES and not isinstance(node.ctx, ast.Store):
            if id(node) not in bases:
                out.append(f"scene_identity:{node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in SCENE_NAMES and id(node) not in bases:
            out.append(f"scene_identity:.{node.attr}")
        elif isinstance(node, ast.alias) and node.name in SCENE_NAMES and node.asname not in (None, node.name):
            out.append(f"scene_identity:as_{node.asname}")
        elif isinstance(node, ast.Name) and node.id in IDENTITY_NAMES:
            out.append(f"scene_identity:{node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in IDENTITY_ATTRS:
            out.append(f"scene_identity:.{node.attr}")
    return list(dict.fromkeys(out))


def _magic_flagged(name: str) -> bool:
    """Whether the rule refuses ``name`` as an attribute: a private name or a dunder, or one of its lists."""
    return name.startswith("_") or any(name in names for names in (
        FLAG_ATTRS, FRAME_ATTRS, REACH_ATTRS, STRING_ACCESS, STATE_HOOKS, MODULE_ATTRS, FRAME_INFO, COPY_PROTOCOL))


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _injected_set_reasons(tree: ast.AST) -> list[str]:
    """The audit's name injection (``x.set(name="x")`` after every single-name assignment, audit/inject.py) runs in
    the one-pass render too, not in a plain render: where ``set`` (or the setter of ``name``) can be script code,
    that code runs in the one-pass render only -- its side effects change the render itself (a failure, a video a
    plain render does not make; issue 19 red team). Refused: a script binding of ``set`` (a def, a name, an
    attribute, a keyword, a string naming a field or a key ``set``, as ``namedtuple("P", "set")`` or
    ``{"set": f}`` do), ``name`` bound in a class body, and ``type(name, bases, dict)``."""
    out: list[str] = []

    def add(reason: str) -> None:
        if reason not in out:
            out.append(reason)

    shown = _shown_text(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "set":
            add("binds:set")
        elif isinstance(node, ast.Name) and node.id == "set" and isinstance(node.ctx, (ast.Store, ast.Del)):
            add("binds:set")
        elif isinstance(node, ast.Attribute) and node.attr == "set" and isinstance(node.ctx, (ast.Store, ast.Del)):
            add("binds:set")
        elif isinstance(node, ast.keyword) and node.arg == "set":
            add("keyword:set")
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in shown
              and "set" in _WORD.findall(node.value)):
            add("string:set")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type" and (
                len(node.args) + len(node.keywords) > 1):
            add("dynamic_class")
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                targets = []
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    targets = [stmt.name]
                elif isinstance(stmt, ast.Assign):
                    targets = [n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
                elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and isinstance(stmt.target, ast.Name):
                    targets = [stmt.target.id]
                if "name" in targets:
                    add("binds:name")
    return out


# manim's text mobjects: their string arguments are drawn, never turned into attribute names
TEXT_CLASSES = frozenset({"Text", "Tex", "MathTex", "MarkupText", "Paragraph", "Title", "BulletedList",
                          "SingleStringMathTex"})


def _shown_text(tree: ast.AST) -> set[int]:
    """The string constants passed to a text mobject's constructor (``Text("the set of integers")``): positional
    arguments, their f-string parts and the items of list/tuple arguments -- text to draw, not a field name."""
    rebound = set()  # a text class name the script binds itself is not manim's (`Text = namedtuple`)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            rebound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            rebound.add(node.name)
        elif isinstance(node, ast.alias):
            rebound.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.arg):
            rebound.add(node.arg)
    names = TEXT_CLASSES - rebound
    out: set[int] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names):
            continue
        for arg in node.args:
            parts = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
            for part in parts:
                if isinstance(part, ast.JoinedStr):
                    out.update(id(v) for v in part.values if isinstance(v, ast.Constant))
                elif isinstance(part, ast.Constant):
                    out.add(id(part))
    return out
