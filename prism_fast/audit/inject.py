"""Variable-name injection (spec spatial_audit.md §3 step 3). Pure AST transform.

After every ``Assign`` with exactly one bare-``Name`` target (any depth), insert
``try: <name>.set(name="<name>")`` with a bare ``except: pass``.
"""

from __future__ import annotations

import ast


class _NameSetter(ast.NodeTransformer):
    def visit_Assign(self, node: ast.Assign):
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            return node
        var = node.targets[0].id
        call = ast.Call(
            func=ast.Attribute(value=ast.Name(id=var, ctx=ast.Load()), attr="set", ctx=ast.Load()),
            args=[],
            keywords=[ast.keyword(arg="name", value=ast.Constant(value=var))],
        )
        guard = ast.Try(
            body=[ast.Expr(value=call)],
            handlers=[ast.ExceptHandler(type=None, name=None, body=[ast.Pass()])],
            orelse=[],
            finalbody=[],
        )
        return [node, guard]


def inject_names(tree: ast.Module) -> ast.Module:
    """Transform ``tree`` in place and return it with locations fixed."""
    tree = _NameSetter().visit(tree)
    ast.fix_missing_locations(tree)
    return tree
