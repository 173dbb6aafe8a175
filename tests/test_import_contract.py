"""The dependency direction of the package tree (docs/design.md "Layout"; the contract is ``.importlinter``).

Three checks over every import statement of ``prism_fast`` (function-local ones included, as grimp reads them):
the import-linter layers contract holds (``lint-imports``, as a developer runs it); no prism_fast modules import
each other in a cycle; no module imports a private name (``_x``) of another top-level package.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def _graph():
    return grimp.build_graph("prism_fast", cache_dir=None)


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module, or a module importing itself (iterative Tarjan)."""
    modules = sorted(graph.modules)
    succ = {m: sorted(n for n in graph.find_modules_directly_imported_by(m) if n in graph.modules) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(succ[node]):
                work.append((node, i + 1))
                nxt = succ[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1 or node in succ[node]:
                    found.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def _describe(graph, comp: list[str]) -> str:
    lines = []
    for a in comp:
        for b in sorted(graph.find_modules_directly_imported_by(a)):
            if b in comp:
                at = [d["line_number"] for d in graph.get_import_details(importer=a, imported=b)]
                lines.append(f"  {a} -> {b} (line {', '.join(map(str, at))})")
    return "\n".join(lines)


def test_layers_contract_holds():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())", "--no-cache"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "1 kept, 0 broken" in proc.stdout, proc.stdout[-3000:]


def test_no_import_cycles_among_prism_fast_modules():
    graph = _graph()
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(_describe(graph, c) for c in cycles)


def test_cycle_finder_finds_a_cycle_through_a_function_local_import(tmp_path):
    """The check above can fail: a two-module package whose cycle closes only inside a function."""
    pkg = tmp_path / "cyclepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyclepkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from cyclepkg import a\n    return a\n")
    sys.path.insert(0, str(tmp_path))
    try:
        graph = grimp.build_graph("cyclepkg", cache_dir=None)
    finally:
        sys.path.remove(str(tmp_path))
    assert _cycles(graph) == [["cyclepkg.a", "cyclepkg.b"]]


def test_no_private_names_across_packages():
    """``from prism_fast.<pkg>.<module> import _name`` only within ``<pkg>``: across packages, public names only."""
    found = []
    for path in sorted((ROOT / "prism_fast").rglob("*.py")):
        rel = path.relative_to(ROOT / "prism_fast").parts
        own = rel[0] if len(rel) > 1 else None
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("prism_fast.")):
                continue
            target = node.module.split(".")[1]
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__") and target != own:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module} import {alias.name}")
    assert not found, "\n".join(found)


def test_execute_names_no_later_stage_module_in_strings():
    """Imports by name (``importlib``, a worker's ``entry``) escape the graph above: execute's string constants
    must not name a module of a later stage either (the audit registers its observer through
    ``execute/observers.py`` and hands its fork entry to the worker itself)."""
    later = ("prism_fast.audit", "prism_fast.video", "prism_fast.metrics", "prism_fast.report", "prism_fast.pipeline")
    found = []
    for path in sorted((ROOT / "prism_fast" / "execute").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr)}  # documentation may name a consumer
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                found += [f"{path.relative_to(ROOT)}:{node.lineno}: {name}" for name in later if name in node.value]
    assert not found, "\n".join(found)
