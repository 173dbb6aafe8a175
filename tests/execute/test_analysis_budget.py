"""Every static analysis of a script's text runs in linear (or bounded) work.

Found: a script of a few thousand chained helper functions (``def f1(): return f0()`` ... plus a Scene calling the
last) made a 2-sample run sit in Exec for 24+ minutes: the one-pass rule's helper fixpoint took one full pass per
link of the chain and copied the helper set at every function it judged (cubic). Also quadratic: a list used as a
queue (``pop(0)``) in the rule's walk, the hallucination checker's ``self.X`` check (the whole class chain walked
at every ``self`` attribute), its attribute-chain resolution, the ``**kwargs`` forwarding scan (every function's
body walked again: nested functions cost the square of their depth) and the improved scene selection's transitive
closure (one pass per class of a chain declared subclass first).

Work is counted, never timed (the machine is shared): the number of Python and C function calls an analysis makes
(``sys.setprofile``) on a generated script of n and of 4n functions. Linear work grows about 4x; the quadratic
versions grew 16x and the cubic one 64x. The optimised algorithms are also checked against their former,
straightforward versions (kept below) on the bundled samples, the fixture responses and small generated scripts:
the same answers.
"""

from __future__ import annotations

import ast
import json
import sys

import pytest

from prism_fast.audit import fastcopy, onepass_rule, onepass_rules, tamper
from prism_fast.dataset.bundled import build_records
from prism_fast.execute import cost, determinism, fastpaths, hallucination, scene_select, script_reach, texcache
from prism_fast.profile import REFERENCE, resolve_profile

IMPROVED = resolve_profile("improved", {})
HEAD = "from manim import *\n\n"


# ---------------------------------------------------------------------------------------------------- scripts
def chain(n):
    """The reported script: n helper functions, each calling the previous one, and a Scene calling the last."""
    out = [HEAD, "def f0():\n    return 1\n\n"]
    out += [f"def f{i}():\n    return f{i - 1}()\n\n" for i in range(1, n + 1)]
    out.append(f"class S(Scene):\n    def construct(self):\n        x = f{n}()\n        self.add(Dot())\n")
    return "".join(out)


def chain_args(n):
    """Helpers with parameters and nested helpers, used by an updater and an always_redraw."""
    out = [HEAD, "def f0(a, b):\n    return a + b\n\n"]
    out += [f"def f{i}(a, b):\n    c = f{i - 1}(a, b)\n    def g(x):\n        return x * 2\n"
            f"    return g(c) + f{i - 1}(b, a)\n\n" for i in range(1, n + 1)]
    out.append(f"class S(Scene):\n    def construct(self):\n        d = Dot()\n"
               f"        d.add_updater(lambda m: m.become(Dot(point=[f{n}(1, 2), 0, 0])))\n"
               f"        self.add(d, always_redraw(lambda: Circle(radius=f{n}(1, 2))))\n        self.wait(1)\n")
    return "".join(out)


def classes_rev(n):
    """A chain of classes, each reading `self`, declared subclass first (only a static analysis meets that order)."""
    out = [HEAD]
    out += [f"class C{i}(C{i + 1}):\n    def m{i}(self):\n        self.a{i} = Dot()\n        return self.a{i}\n\n"
            for i in range(n)]
    out.append(f"class C{n}(Scene):\n    def construct(self):\n        self.add(Dot())\n")
    return "".join(out)


def attrs(n):
    """Many attribute chains in one scene."""
    out = [HEAD, "class S(Scene):\n    def construct(self):\n        d = Dot()\n"]
    out += [f"        x{i} = manim.mobject.geometry.arc.Dot().get_center().tolist\n"
            f"        y{i} = self.camera.frame.width + d.width\n" for i in range(n)]
    return "".join(out) + "        self.add(d)\n"


def deep(n):
    """Deep nesting: functions nested n/4 deep, each forwarding its **kw (the forwarding scan walked every body)."""
    depth = max(1, n // 4)
    out = [HEAD]
    for d in range(depth):
        out.append("    " * d + f"def g{d}(x, **kw):\n" + "    " * (d + 1) + "y = f(**kw) if x else Dot(**kw)\n")
    out.append("    " * depth + "return x\n")
    return "".join(out) + "class S(Scene):\n    def construct(self):\n        self.add(Dot())\n"


def wide(n):
    """One long construct."""
    out = [HEAD, "class S(Scene):\n    def construct(self):\n"]
    out += [f"        d{i} = Dot(point=[{i}, 0, 0], color=RED).shift(UP * {i})\n"
            f"        self.play(Create(d{i}), run_time=0.1)\n" for i in range(n)]
    return "".join(out)


SCRIPTS = {"chain": chain, "chain_args": chain_args, "classes_rev": classes_rev, "attrs": attrs, "deep": deep,
           "wide": wide}

ANALYSES = {
    "onepass_rule.static_reasons": onepass_rule.static_reasons,
    "texcache.script_reasons": texcache.script_reasons,
    "hallucination.check_code": hallucination.check_code,
    "determinism.static_marks": determinism.static_marks,
    "cost.expected_render_cost": cost.expected_render_cost,
    "tamper.static_evidence": tamper.static_evidence,
    "fastcopy.may_share_svg_paths": fastcopy.may_share_svg_paths,
    "fastpaths.reads_call_stack": fastpaths.reads_call_stack,
    "scene_select.improved": lambda s: scene_select.select_scene(s, IMPROVED),
    "scene_select.reference": lambda s: scene_select.select_scene(s, REFERENCE),
}


def calls(f, *args) -> int:
    """Python and C function calls made by ``f(*args)``: the analysis's work, the same on any machine."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        f(*args)
    finally:
        sys.setprofile(None)
    return count


@pytest.fixture(scope="module", autouse=True)
def _namespace_loaded():
    hallucination.check_code("x = 1")  # the frozen namespace is loaded once, outside any count


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("analysis", ANALYSES)
def test_work_grows_linearly(analysis, script):
    small, large = (calls(ANALYSES[analysis], SCRIPTS[script](n)) for n in (60, 240))
    assert large / small < 6.0, (analysis, script, small, large)  # linear ~4, quadratic ~16


def test_a_3000_function_chain_is_analysed_exactly():
    """The reported script, at its size: every analysis completes, with its exact answer (no budget reached)."""
    src = chain(3000)
    assert onepass_rule.static_reasons(src) == []  # eligible: pure helpers, nothing refused
    assert onepass_rules.steps_used() < onepass_rules.MAX_STEPS / 100
    assert texcache.script_reasons(src) == []
    report = hallucination.check_code(src)
    assert report.parsed and report.findings == [] and not report.notes
    assert determinism.static_marks(src) == []
    assert cost.script_features(src) is not None
    assert fastcopy.may_share_svg_paths(src) is True and fastpaths.reads_call_stack(src) is False
    assert scene_select.select_scene(src, IMPROVED).name == "S" == scene_select.select_scene(src, REFERENCE).name
    tree = ast.parse(src)
    assert onepass_rules.analyse(tree).reasons == []
    helpers = onepass_rules._pure_helpers(onepass_rules._function_defs(tree), set(),
                                          onepass_rules._script_bindings(tree))
    assert len(helpers) == 3001  # the whole chain is pure


def test_the_one_pass_rule_step_budget_is_a_reason(monkeypatch):
    """Past its step bound the rule refuses the script (``analysis_budget``) instead of judging on; the child's
    updater policy then approves nothing."""
    src = chain_args(40)
    assert onepass_rule.static_reasons(src) == []
    with pytest.raises(onepass_rules.AnalysisBudget):
        onepass_rules.analyse(ast.parse(src), max_steps=50)
    monkeypatch.setattr(onepass_rules, "MAX_STEPS", 50)
    assert onepass_rule.static_reasons(src) == [onepass_rules.ANALYSIS_BUDGET]


def test_the_updater_policy_approves_nothing_past_the_budget(monkeypatch, tmp_path):
    script = tmp_path / "s.py"
    script.write_text(chain_args(20))
    assert onepass_rules.UpdaterPolicy(str(script)).updaters  # the lambda updater is approved
    monkeypatch.setattr(onepass_rules, "MAX_STEPS", 50)
    policy = onepass_rules.UpdaterPolicy(str(script))
    assert policy.updaters == {} and policy.redraws == set()


def test_the_size_bound_declines_the_tex_cache_and_one_pass(monkeypatch):
    src = wide(30)
    assert texcache.script_reasons(src) == [] and onepass_rule.static_reasons(src) == []
    monkeypatch.setattr(script_reach, "MAX_NODES", 100)
    assert texcache.script_reasons(src) == [script_reach.ANALYSIS_BUDGET]
    assert onepass_rule.static_reasons(src) == [script_reach.ANALYSIS_BUDGET]


def test_the_self_attribute_budget_stops_checks_with_a_note(monkeypatch):
    """Past its bound the hallucination checker stops checking `self.X` (no finding, never a false one) and says
    so in its notes."""
    src = classes_rev(30).replace("return self.a0\n", "return self.no_such_attribute\n", 1)
    full = hallucination.check_code(src)
    assert [f.identifier for f in full.findings] == ["no_such_attribute"] and not full.notes
    monkeypatch.setattr(hallucination, "SELF_CHAIN_BUDGET", 20)
    cut = hallucination.check_code(src)
    assert cut.findings == [] and cut.notes == [hallucination.ANALYSIS_BUDGET_NOTE]
    assert "analysis_budget" in hallucination.ANALYSIS_BUDGET_NOTE


# ------------------------------------------------------------------- the former algorithms, for equivalence
def _former_pure_helpers(defs, stores, defined):
    helpers = frozenset()
    while True:
        found = set()
        for name, nodes in defs.items():
            if len(nodes) != 1 or name in stores:
                continue
            fn = nodes[0]
            nparams = len(fn.args.posonlyargs) + len(fn.args.args)
            if onepass_rules._function_problem(fn, nparams, defined, helpers) is None:
                found.add(name)
        if found <= helpers:
            return helpers
        helpers = helpers | frozenset(found)


def _former_keyword_forwards(tree):
    safe = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) or fn.args.kwarg is None:
            continue
        name = fn.args.kwarg.arg
        body = fn.body if isinstance(fn.body, list) else [fn.body]
        uses = [n for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == name]
        kws = [n for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.keyword) and n.arg is None
               and isinstance(n.value, ast.Name) and n.value.id == name]
        rebound = [n for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.arg) and n.arg == name]
        if len(uses) == len(kws) and not rebound:
            safe.update(id(k) for k in kws)
    return safe


def _former_scene_closure(tree):
    aliases = scene_select._manim_bindings(tree)
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    bases = {cls.name: [b.id for b in cls.bases if isinstance(b, ast.Name)] for cls in classes}
    names = {cls.name for cls in classes if any(scene_select._base_is_manim_scene(b, *aliases) for b in cls.bases)}
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name not in names and any(b in names for b in bases[cls.name]):
                names.add(cls.name)
                changed = True
    candidates = [cls for cls in classes if cls.name in names]
    derived = {b for cls in candidates for b in bases[cls.name] if b != cls.name}
    return next((cls.name for cls in candidates if cls.name not in derived), None)


class _FormerChecker(hallucination._Checker):
    """The checker with its former `self.X` check (the class chain walked at every attribute, no memo)."""

    def static_kind(self, node):
        return hallucination.BindingCollector.static_kind(self, node)

    def _self_allowed(self, classdef, self_name):
        manim_keys, names, seen, todo = [], set(), set(), [classdef]
        while todo:
            cdef = todo.pop()
            if id(cdef) in seen:
                continue
            seen.add(id(cdef))
            for stmt in ast.walk(cdef):
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt is not cdef:
                    names.add(stmt.name)
                elif isinstance(stmt, ast.Attribute) and isinstance(stmt.ctx, ast.Store) \
                        and isinstance(stmt.value, ast.Name):
                    names.add(stmt.attr)
                elif isinstance(stmt, ast.Call) and isinstance(stmt.func, ast.Name) and stmt.func.id == "setattr":
                    return None
            for stmt in cdef.body:
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                    for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                        names.update(hallucination.target_names(target))
            for base in cdef.bases:
                kind = self.static_kind(base)
                if kind and kind.startswith("class:") and self.ns.has_class(kind[6:]):
                    manim_keys.append(kind[6:])
                elif isinstance(base, ast.Name) and base.id in self.classdefs \
                        and self.binding_sites.get(base.id) == 1:
                    todo.append(self.classdefs[base.id])
                else:
                    return None
        if not any(self.ns.is_subclass(k, hallucination.SCENE_KEY) or self.ns.is_subclass(k, hallucination.MOBJECT_KEY)
                   for k in manim_keys):
            return None
        return manim_keys, names


def _report(checker_class, code):
    checker = checker_class(ast.parse(code), hallucination.load_namespace())
    checker.collect()
    checker.check()
    return (sorted(f.to_dict().items() for f in checker.findings.values()), sorted(checker.unresolved),
            sorted(f.to_dict().items() for f in checker.keyword_findings.values()), checker.notes)


def _corpus():
    from prism_fast.fixtures import bundled_responses_path
    from prism_fast.generate.cleaning import clean_model_output

    scripts = {r["id"]: r["reference_answer"] for r in build_records()}
    assert len(scripts) == 48
    for line in bundled_responses_path().read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        code = clean_model_output(rec["response"] if isinstance(rec["response"], str) else "", "en", REFERENCE).code
        if code:
            scripts[f"fixture:{rec['id']}"] = code
    for name, make in SCRIPTS.items():
        for n in (2, 25):
            scripts[f"{name}:{n}"] = make(n)
    return scripts


CORPUS = _corpus()


@pytest.mark.parametrize("sample", CORPUS)
def test_same_answers_as_the_former_algorithms(sample):
    code = CORPUS[sample]
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return
    defs = onepass_rules._function_defs(tree)
    defined = onepass_rules._script_bindings(tree)
    stores = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    assert onepass_rules._pure_helpers(defs, stores, defined) == _former_pure_helpers(defs, stores, defined)
    assert script_reach.keyword_forwards(tree) == _former_keyword_forwards(tree)
    assert scene_select.select_scene_ast(tree) == _former_scene_closure(tree)
    assert _report(hallucination._Checker, code) == _report(_FormerChecker, code)
