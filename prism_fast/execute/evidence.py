"""Static evidence that a script reaches for the evaluator's own machinery (shared by the audit's tamper check
and the text-box recorder): references by name, attribute, import or string to things ordinary Manim code
never names. Trusted, parent-side, AST only (nothing of the script runs or is imported)."""

from __future__ import annotations

import ast


def reference_evidence(tree: ast.AST, *, names: frozenset[str] = frozenset(),
                       attributes: frozenset[str] = frozenset(), strings: tuple[str, ...] = ()) -> set[str]:
    """``name:``, ``attribute:``, ``import:prism_fast…`` and ``string:`` evidence found in ``tree``
    (strings are matched case-insensitively as substrings of every string constant)."""
    found: set[str] = set()
    lowered = [(s, s.lower()) for s in strings]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in attributes:
            found.add(f"attribute:{node.attr}")
        elif isinstance(node, ast.Name) and node.id in names:
            found.add(f"name:{node.id}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found.update(f"import:{m}" for m in mods if m.split(".")[0] == "prism_fast")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value.lower()
            found.update(f"string:{s}" for s, low in lowered if low in value)
    return found
