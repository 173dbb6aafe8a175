"""Trusted analysis never imports, finds or runs a module that a script names (issue #13).

Model-written scripts are adversarial. A script with ``from unittest.__main__ import *`` once made the trusted
API-hallucination checker import that module inside the Ray render actor: unittest's main ran, raised
``SystemExit``, the actor died and other samples got ``worker_lost`` rows. These tests feed such scripts to every
trusted function that parses scripts and check that nothing the script names was imported (an import hook that
refuses those names, a marker file that a module on ``sys.path`` would write on import, ``sys.modules`` before and
after), and that each function still returns its normal result.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from prism_fast.audit.tamper import static_evidence
from prism_fast.execute.hallucination import check_code
from prism_fast.profile import REFERENCE

REPO = Path(__file__).resolve().parents[2]

# Modules a script names; none may ever be imported by the evaluator's own process.
FORBIDDEN = ("unittest.__main__", "antigravity", "this", "evil", "evil.sub", "__hello__", "idlelib.idle")

BODY = "class A(Scene):\n    def construct(self):\n        self.add(Circle())\n        x = Anything()\n"
SCRIPTS = {
    "unittest_main_star": "from unittest.__main__ import *\n",
    "unittest_main_plain": "import unittest.__main__\nfrom unittest.__main__ import main\n",
    "antigravity": "import antigravity\n",
    "antigravity_star": "from antigravity import *\n",
    "this": "import this\nfrom this import *\n",
    "hello": "from __hello__ import *\n",
    "idle": "from idlelib.idle import *\n",
    "evil_import": "import evil\n",
    "evil_from": "from evil import x\n",
    "evil_star": "from evil import *\n",
    "evil_sub": "import evil.sub\nfrom evil.sub import *\n",
    "evil_alias": "import evil as manim_helpers\n",
}


def script(name: str) -> str:
    return "from manim import *\n" + SCRIPTS[name] + BODY


@pytest.fixture
def evil_on_path(tmp_path, monkeypatch):
    """A module ``evil`` importable from ``sys.path`` that writes a marker file when imported."""
    root = tmp_path / "path_entry"
    root.mkdir()
    marker = tmp_path / "evil_was_imported"
    (root / "evil.py").write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\nx = 1\n")
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    assert importlib.util.find_spec("evil") is not None  # the test's own check: it really is importable
    assert "evil" not in sys.modules
    return marker


@pytest.fixture
def import_guard(monkeypatch):
    """Record every import the code under test asks for; refuse (ImportError) the script-named ones, so even a
    regression cannot run them inside the test process."""
    asked: list[str] = []
    real_import, real_import_module = builtins.__import__, importlib.import_module
    real_find_spec = importlib.util.find_spec

    def refuse(name: str) -> None:
        asked.append(name)
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
            raise ImportError(f"test guard: {name} must not be imported by trusted code")

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0:
            refuse(name)
        return real_import(name, globals, locals, fromlist, level)

    def guarded_import_module(name, package=None):
        refuse(name)
        return real_import_module(name, package)

    def guarded_find_spec(name, package=None):
        refuse(name)
        return real_find_spec(name, package)

    monkeypatch.setattr(builtins, "__import__", guarded_import)
    monkeypatch.setattr(importlib, "import_module", guarded_import_module)
    monkeypatch.setattr(importlib.util, "find_spec", guarded_find_spec)
    return asked


def _assert_untouched(asked: list[str], marker: Path, before: set[str]) -> None:
    touched = [n for n in asked if any(n == f or n.startswith(f + ".") for f in FORBIDDEN)]
    assert touched == [], f"trusted code asked to import {touched}"
    assert not marker.exists(), "evil.py was imported (its marker file exists)"
    new = set(sys.modules) - before
    assert not [m for m in new if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)], sorted(new)


# ----------------------------------------------------------------------------------------------- (1) the checker

@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_hallucination_checker_imports_nothing_a_script_names(name, evil_on_path, import_guard):
    check_code("from manim import *\n")  # load the frozen data files before taking the snapshot
    before = set(sys.modules)
    report = check_code(script(name))
    assert report.parsed
    assert ("name", "Circle") not in {(f.kind, f.identifier) for f in report.findings}  # manim's star names hold
    if name.endswith("star") or name in ("this", "hello", "idle", "evil_sub"):
        # A star import from a module outside the frozen index is unknown: name findings off, with a note.
        assert not report.name_findings_enabled
        assert any("not in the frozen star index" in note for note in report.notes)
        assert "Anything" in report.unresolved_names
    else:
        assert report.findings and {(f.kind, f.identifier) for f in report.findings} == {("name", "Anything")}
    _assert_untouched(import_guard, evil_on_path, before)
    assert set(sys.modules) == before, sorted(set(sys.modules) - before)  # the checker imports nothing at all


def test_checker_in_a_fresh_interpreter_survives_every_script_and_imports_nothing(tmp_path):
    """The original failure, end to end: a fresh process (as in a render actor) checks every adversarial script,
    exits normally, and ``sys.modules`` gains nothing while it does (``evil`` is importable there too)."""
    path_entry = tmp_path / "path_entry"
    path_entry.mkdir()
    marker = tmp_path / "evil_was_imported"
    (path_entry / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\nx = 1\n")
    program = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(path_entry)!r})
        from prism_fast.execute.hallucination import check_code
        check_code("from manim import *\\n")
        scripts = json.loads(sys.stdin.read())
        before = set(sys.modules)
        out = {{name: check_code(code).to_row()["hallucination_notes"] for name, code in scripts.items()}}
        print(json.dumps({{"notes": out, "new_modules": sorted(set(sys.modules) - before)}}))
    """)
    env = {**os.environ, "BROWSER": "true"}  # belt and braces: a regressed `import antigravity` opens nothing
    proc = subprocess.run([sys.executable, "-c", program], input=json.dumps({n: script(n) for n in SCRIPTS}),
                          capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Before the fix the process "succeeded" without printing: unittest's main ran and exited it.
    lines = proc.stdout.strip().splitlines()
    assert lines and lines[-1].startswith("{"), (proc.stdout[-2000:], proc.stderr[-2000:])
    result = json.loads(lines[-1])
    assert set(result["notes"]) == set(SCRIPTS)
    assert result["new_modules"] == []
    assert not marker.exists()


def test_star_index_builder_imports_exactly_its_fixed_list(monkeypatch):
    """The trusted builder of the frozen star index imports the literal STAR_MODULES and nothing else."""
    from prism_fast.execute import star_index

    asked: list[str] = []
    real = importlib.import_module

    def recording(name, package=None):
        if sys._getframe(1).f_globals.get("__name__") == star_index.__name__:  # scipy's lazy loaders call it too
            asked.append(name)
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", recording)
    built = star_index.build_star_index()
    assert asked == list(star_index.STAR_MODULES)
    assert not set(star_index.STAR_MODULES) & set(FORBIDDEN)
    assert set(built["modules"]) | set(built["import_failures"]) == set(star_index.STAR_MODULES)


def test_star_index_lookup_is_a_pure_lookup(evil_on_path, import_guard):
    from prism_fast.execute.star_index import star_names

    star_names("math")  # load the file
    before = set(sys.modules)
    assert "sqrt" in star_names("math")
    for name in FORBIDDEN + ("unittest", "no_such_module_xyz"):
        assert star_names(name) is None
    _assert_untouched(import_guard, evil_on_path, before)
    assert set(sys.modules) == before


# ----------------------------------------------------------------------------------------------- (2) other parsers

def _other_static_analyses():
    """Every other trusted function that parses a script's text (found by grepping prism_fast/ for ast.parse,
    compile, exec, eval, importlib, __import__, import_module, find_spec), with a check of its normal result."""
    from prism_fast.audit.onepass import static_reasons
    from prism_fast.execute.scene_select import select_scene
    from prism_fast.execute.taxonomy import code_parse_error, taxonomy_fields
    from prism_fast.metrics.text_expand import text_expand_row
    from prism_fast.profile import IMPROVED

    return {
        "scene_select.reference": (lambda code: select_scene(code, REFERENCE).name, lambda r: r == "A"),
        "scene_select.improved": (lambda code: select_scene(code, IMPROVED).name, lambda r: r == "A"),
        # script-named imports outside its short list of pure modules are a reason, found by reading the AST
        "onepass.static_reasons": (static_reasons, lambda r: any(x.startswith("import:") for x in r)),
        "taxonomy.code_parse_error": (code_parse_error, lambda r: r == ""),
        "taxonomy.taxonomy_fields": (lambda code: taxonomy_fields(code=code, render_row=None),
                                     lambda r: r["code_parse_error"] == ""),
        "text_expand.reference": (lambda code: text_expand_row("X", code, "draw hello", "en", REFERENCE),
                                  lambda r: r["status"] == "ok"),
        "text_expand.improved": (lambda code: text_expand_row("X", code, "draw hello", "en", IMPROVED),
                                 lambda r: r["status"] == "ok"),
    }


@pytest.mark.parametrize("analysis", sorted(_other_static_analyses()))
def test_other_trusted_parsers_import_nothing_a_script_names(analysis, evil_on_path, import_guard):
    fn, expected = _other_static_analyses()[analysis]
    fn("from manim import *\n")  # warm up lazy imports of the evaluator's own modules
    before = set(sys.modules)
    for name in sorted(SCRIPTS):
        result = fn(script(name) + "t = Text('hello')\n")
        assert expected(result), (name, result)
    _assert_untouched(import_guard, evil_on_path, before)
    assert set(sys.modules) == before, sorted(set(sys.modules) - before)


# ----------------------------------------------------------------------------------------------- adversarial shapes

@pytest.mark.parametrize("terms", [1500, 20000])
def test_trusted_parsers_return_on_nesting_too_deep_for_python(terms):
    """A script nested deeper than the parser (20000) or a recursive visitor (1500) can follow still gets a
    result from every trusted analysis, never an exception in the calling actor."""
    code = "from manim import *\nx = " + "+".join(["1"] * terms) + "\n" + BODY
    report = check_code(code)
    assert report.findings == [] and report.notes
    for name, (fn, _) in _other_static_analyses().items():
        fn(code)
    assert static_evidence(code) == []


def test_scanned_sources_have_no_dynamic_import_or_exec():
    """Static guard on the checker's own modules: no importlib/runpy/pkgutil, no __import__/exec/eval/compile
    calls in the code that reads scripts (the namespace *builders* import manim and a fixed list, and are exempt:
    they run only when a maintainer regenerates the data files)."""
    root = REPO / "prism_fast"
    readers = {
        "execute/hallucination.py": (),
        "execute/hallucination_bindings.py": (),
        "execute/scene_select.py": (),
        "audit/onepass_rule.py": (),  # the one-pass static rule: AST only
        "metrics/text_expand_extract.py": (),
        "metrics/text_expand_eval.py": (),
        "metrics/text_expand_walk.py": (),
        "metrics/text_expand_scan.py": (),
        "metrics/text_expand.py": (),
        "metrics/text_expand_text.py": (),
        "execute/taxonomy.py": ("compile",),  # compile only (code_parse_error): never executed
    }
    for rel, allowed in readers.items():
        tree = ast.parse((root / rel).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not [n for n in names if n.split(".")[0] in ("importlib", "runpy", "pkgutil")], (rel, names)
            elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
                if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                        and node.func.value.id == "re":
                    continue  # re.compile
                called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                if called in ("__import__", "exec", "eval", "compile", "import_module", "find_spec",
                              "spec_from_file_location", "run_module", "run_path"):
                    assert called in allowed, (rel, called, node.lineno)
