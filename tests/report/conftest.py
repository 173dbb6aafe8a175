"""Small fixture runs written with the real ResultsStore. Every expected number in the report tests is derived by
hand from the rows below (the derivations are in the tests' comments).

Run A (``run_a``), reference profile:

| model/lang | id | script | exec | error_type | runtime | audit pass | findings | td_c | TextExpand |
|---|---|---|---|---|---|---|---|---|---|
| m1/en | t1 | y | ok | | 1 | 1 | | 0.1 | 0.5 |
| m1/en | t2 | y | ok | | 2 | 1 | | 0.2 | 0.1 |
| m1/en | t3 | y | ok | | 3 | 1 | | 0.3 | 0.2 |
| m1/en | t4 | y | ok | | 4 | 0 | overlaps 2 | 0.4 | 0.9 |
| m1/en | t5 | y | ok | | 5 | 0 | oob 1, leak 1 | 0.5 | 0.8 |
| m1/en | t6 | y | ok | | 10 | 1 | | 0.6 | 0.3 |
| m1/en | t7 | y | fail | syntax_error | | 1 (Q-FUNNEL-1) | | 0.0 | 0.4 |
| m1/en | t8 | n | fail | empty_output | | (no row) | | (no row) | missing_input |
| m1/zh | z1 | y | ok | | 2 | 1 | | 0.7 | 0.6 |
| m1/zh | z2 | y | fail | text_render_error | | audit failed | | (no row) | 0.7 |
| m2/en | u1..u4 | y | ok | | 1 each | 1,1,0,0 | u3 overlap 1, u4 oob 1 | (no rows) | (no rows) |

Run B (``run_b``): model m1 only, same ids; exec ok for t1..t8, z1, z2 except t2; spatial pass for t1..t6, z1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prism_fast.store import ResultsStore

CATEGORY = {"syntax_error": "syntax_error", "empty_output": "other_error", "text_render_error": "text_rendering_error"}


def _breakdown(overlaps=0, oob=0, leaks=0):
    return {"overlaps": overlaps, "out_of_bounds": oob, "leaks": leaks}


def _report(overlaps=0, oob=0, leaks=0):
    return {"S": {"Segment_0": {"overlaps": [{"a": "Square", "b": "Square#2", "r": 0.5}] * overlaps,
                                "out_of_bounds": [{"id": "Text", "d": 1.2}] * oob,
                                "leaks": [{"item": "Text", "cont": "Rectangle", "lr": 0.2}] * leaks}}}


def write_run(run_dir: Path, spec: list[dict], manifest: dict | None = None) -> Path:
    """``spec``: one dict per task: model, lang, id, script, exec (True/False/None), error_type, runtime,
    audit (None | dict(pass, success, overlaps, oob, leaks)), td (None | float), te (None | float | 'missing')."""
    store = ResultsStore(run_dir)
    tasks, execs, audits, tds, tes = [], [], [], [], []
    for s in spec:
        key = {"model": s["model"], "lang": s["lang"], "id": s["id"]}
        tasks.append({**key, "status": "ok", "has_script": s.get("script", True),
                      "script_path": f"models/{s['model']}/scripts/{s['id']}.py",
                      "clean_status": "success" if s.get("script", True) else "empty_after_cleanup"})
        if s.get("exec") is not None:
            ok = bool(s["exec"])
            et = None if ok else s.get("error_type")
            execs.append({**key, "status": "ok" if ok else "error", "success": ok, "skipped": False,
                          "runtime_sec": s.get("runtime") if ok else 0.5,
                          "video_path": f"models/{s['model']}/videos/{s['id']}.mp4" if ok else None,
                          "error_type": et, "error_category": CATEGORY.get(et) if et else None,
                          "error_msg": None if ok else f"Error: {et} in {s['id']}"})
        a = s.get("audit")
        if a is not None:
            b = _breakdown(a.get("overlaps", 0), a.get("oob", 0), a.get("leaks", 0))
            audits.append({**key, "status": "ok" if a.get("success", 1) else "error",
                           "audit_success": a.get("success", 1), "visual_structure_pass": a["pass"],
                           "visual_structure_rate": 1.0 if a["pass"] else 0.0, "segment_count": 1,
                           "visual_issue_total": sum(b.values()), "visual_issue_breakdown": b,
                           "visual_audit_report": _report(b["overlaps"], b["out_of_bounds"], b["leaks"]),
                           "error_msg": None if a.get("success", 1) else "Audit produced no valid segments"})
        if s.get("td") is not None:
            tds.append({**key, "status": "ok", "td_raw": s["td"], "td_center": s["td"], "u_td": s["td"],
                        "render_success": bool(s.get("exec"))})
        te = s.get("te")
        if te == "missing":
            tes.append({**key, "status": "error", "error_kind": "missing_input", "text_expand_status": "missing_input"})
        elif te is not None:
            tes.append({**key, "status": "ok", "text_expand_status": "ok", "text_expand_ratio_unique": te,
                        "text_expand_ratio_raw": 2 * te, "info_expand_ratio": te / 2})
    store.append("tasks", tasks)
    for stage, rows in (("exec", execs), ("audit", audits), ("td", tds), ("text_expand", tes)):
        if rows:
            store.append(stage, rows)
    (run_dir / "run.json").write_text(json.dumps(manifest or {"profile": "reference", "quirks_fixed": []}))
    return run_dir


def _t(model, lang, id_, exec_=True, **kw):
    return {"model": model, "lang": lang, "id": id_, "exec": exec_, **kw}


RUN_A = [
    _t("m1", "en", "t1", runtime=1.0, audit={"pass": 1}, td=0.1, te=0.5),
    _t("m1", "en", "t2", runtime=2.0, audit={"pass": 1}, td=0.2, te=0.1),
    _t("m1", "en", "t3", runtime=3.0, audit={"pass": 1}, td=0.3, te=0.2),
    _t("m1", "en", "t4", runtime=4.0, audit={"pass": 0, "overlaps": 2}, td=0.4, te=0.9),
    _t("m1", "en", "t5", runtime=5.0, audit={"pass": 0, "oob": 1, "leaks": 1}, td=0.5, te=0.8),
    _t("m1", "en", "t6", runtime=10.0, audit={"pass": 1}, td=0.6, te=0.3),
    _t("m1", "en", "t7", False, error_type="syntax_error", audit={"pass": 1}, td=0.0, te=0.4),
    _t("m1", "en", "t8", False, error_type="empty_output", script=False, te="missing"),
    _t("m1", "zh", "z1", runtime=2.0, audit={"pass": 1}, td=0.7, te=0.6),
    _t("m1", "zh", "z2", False, error_type="text_render_error", audit={"pass": 0, "success": 0}, te=0.7),
    _t("m2", "en", "u1", runtime=1.0, audit={"pass": 1}),
    _t("m2", "en", "u2", runtime=1.0, audit={"pass": 1}),
    _t("m2", "en", "u3", runtime=1.0, audit={"pass": 0, "overlaps": 1}),
    _t("m2", "en", "u4", runtime=1.0, audit={"pass": 0, "oob": 1}),
]

_B_EXEC_FAIL = {"t2"}
_B_SPATIAL = {"t1", "t2", "t3", "t4", "t5", "t6", "z1"}
RUN_B = [
    _t("m1", lang, i, i not in _B_EXEC_FAIL, error_type="api_misuse", runtime=1.0,
       audit={"pass": int(i in _B_SPATIAL)}, td=0.5, te=0.5)
    for lang, ids in (("en", ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"]), ("zh", ["z1", "z2"])) for i in ids
]


@pytest.fixture(scope="session")
def run_a(tmp_path_factory) -> Path:
    return write_run(tmp_path_factory.mktemp("runs") / "run_a", RUN_A)


@pytest.fixture(scope="session")
def run_b(tmp_path_factory) -> Path:
    return write_run(tmp_path_factory.mktemp("runs") / "run_b", RUN_B)
