"""The one-pass audit's static rule (parent side, before rendering; design: docs/design.md "One-pass audit").

An AST rule: any construct through which the render and the reference audit execution could diverge makes the
sample ineligible for sharing its render with the audit (updaters, TracedPath, ``config``/``camera``/``renderer``/
``time`` access, ``__file__``/``__name__``, the compatibility shims' names, a used result of ``remove``, ``try``
blocks, imports outside a short list, reflection, ...). Pure: text in, reasons out.
"""

from __future__ import annotations

import ast

from prism_fast.audit import onepass_rules

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

