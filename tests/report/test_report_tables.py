"""Table 1 / Table 2, every statistic and the writers, on the fixture runs of conftest.py (real ResultsStore).
Expected numbers are derived by hand from the fixture table in conftest.py's docstring."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from prism_fast.report import analyses
from prism_fast.report.cli import ReportOptions, build_report, compute, load_runs
from prism_fast.report.render import LATEX_HEADERS, table1_latex
from prism_fast.report.tables import table1, table2
from prism_fast.report.tasks import TASK_COLUMNS, load_run, total_energy_of

R = 2_000  # resamples in tests; the default (10 000) is checked in test_defaults


def _row(rows, model, lang, run=None):
    (hit,) = [r for r in rows if r["model"] == model and r["lang"] == lang and (run is None or r["run"] == run)]
    return hit


def test_load_run_joins_stages(run_a):
    run = load_run(run_a)
    assert run.tasks.num_rows == 14 and set(run.stages) == {"exec", "audit", "td", "text_expand"}
    rows = {r["id"]: r for r in run.tasks.to_pylist()}
    assert rows["t8"]["exec_success"] is False and rows["t8"]["audit_present"] is False
    assert rows["t8"]["error_type"] == "empty_output" and rows["t8"]["text_expand"] is None  # missing_input
    assert rows["t5"]["n_oob"] == 1 and rows["t5"]["n_leak"] == 1 and rows["t5"]["n_overlap"] == 0
    assert rows["t7"]["spatial_pass"] is True  # reference: Spatial is not conditioned on Exec (Q-FUNNEL-1)
    assert rows["z2"]["audit_success"] is False
    assert any("padvc" in n for n in run.notes)


def test_table1_all_tasks(run_a):
    rows = table1(load_run(run_a).tasks, "all_tasks", {"run_a": {"exec", "audit", "td"}})
    m1en = _row(rows, "m1", "en")
    # 8 tasks: exec t1..t6 = 6/8; spatial t1,t2,t3,t6,t7 = 5/8; overlap t4, leak t5, oob t5 = 1/8 each
    assert m1en["tasks"] == 8 and m1en["exec_pct"] == 75.0 and m1en["spatial_pct"] == 62.5
    assert (m1en["overlap_pct"], m1en["leak_pct"], m1en["oob_pct"]) == (12.5, 12.5, 12.5)
    # TD_c over rendered, scored tasks: mean(0.1 … 0.6) = 0.35 (t7's 0.0 is not rendered)
    assert m1en["td_c"] == pytest.approx(0.35) and m1en["td_c_n"] == 6
    assert m1en["padvc_c"] is None  # no padvc stage
    m1zh, m2en = _row(rows, "m1", "zh"), _row(rows, "m2", "en")
    assert (m1zh["exec_pct"], m1zh["spatial_pct"], m1zh["td_c"]) == (50.0, 50.0, pytest.approx(0.7))
    assert (m2en["exec_pct"], m2en["spatial_pct"], m2en["overlap_pct"], m2en["oob_pct"], m2en["leak_pct"]) == (
        100.0, 50.0, 25.0, 25.0, 0.0)
    assert m2en["td_c"] is None  # td stage present but no m2 rows


def test_table1_other_denominators_and_improved(run_a):
    tasks = load_run(run_a).tasks
    m1en = _row(table1(tasks, "rendered"), "m1", "en")
    # rendered t1..t6: spatial t1,t2,t3,t6 = 4/6, overlap t4 = 1/6
    assert m1en["denominator_n"] == 6 and m1en["spatial_pct"] == pytest.approx(400 / 6)
    assert m1en["overlap_pct"] == pytest.approx(100 / 6) and m1en["exec_pct"] == 75.0  # Exec stays over all
    m1en = _row(table1(tasks, "audited"), "m1", "en")
    assert m1en["denominator_n"] == 7 and m1en["spatial_pct"] == pytest.approx(500 / 7)  # t8 has no audit row
    improved = load_run(run_a, spatial_requires_exec=True).tasks
    assert _row(table1(improved), "m1", "en")["spatial_pct"] == 50.0  # t7 drops out: 4/8
    with pytest.raises(ValueError):
        table1(tasks, "bogus")


def test_table2_failures_categories_render_time(run_a):
    tasks = load_run(run_a).tasks
    m1en = _row(table2(tasks), "m1", "en")
    assert m1en["failures"] == 2 and m1en["failure_pct"] == 25.0
    assert m1en["cat_syntax_error_pct"] == 50.0 and m1en["cat_other_error_pct"] == 50.0
    assert m1en["cat_api_misuse_pct"] == 0.0
    assert m1en["type_syntax_error_n"] == 1 and m1en["type_empty_output_n"] == 1 and m1en["type_timeout_error_n"] == 0
    # runtimes [1, 2, 3, 4, 5, 10]: mean 25/6, median 3.5, p95 (linear): x[4] + 0.75·(x[5] − x[4]) = 8.75
    assert m1en["render_mean_s"] == pytest.approx(25 / 6) and m1en["render_median_s"] == 3.5
    assert m1en["render_p95_s"] == pytest.approx(8.75)
    m1zh = _row(table2(tasks), "m1", "zh")
    assert m1zh["cat_text_rendering_error_pct"] == 100.0 and m1zh["render_mean_s"] == 2.0
    assert _row(table2(tasks, "all_tasks"), "m1", "en")["cat_syntax_error_pct"] == 12.5


def _slow_group_ci(groups, resamples, confidence, seed):
    """Reference: one resample at a time, group after group, from one generator."""
    rng = np.random.default_rng(seed)
    sums = [0.0] * resamples
    for g in groups:
        for r in range(resamples):
            idx = rng.integers(0, len(g), size=(1, len(g)))[0]
            sums[r] += sum(g[i] for i in idx) / len(g)
    means = np.array(sums) / len(groups)
    a = (1 - confidence) / 2
    return np.quantile(means, [a, 1 - a])


def test_gap_per_model_and_average_vs_slow_loop(run_a):
    (gap,) = analyses.exec_spatial_gaps(load_run(run_a).tasks, resamples=R, seed=7)
    m1, m2 = gap["models"]
    # m1 (store order t1..t8, z1, z2): d = 100·(exec − spatial) = [0,0,0,100,100,0,−100,0,0,0] → 10 points
    d1 = [0, 0, 0, 100, 100, 0, -100, 0, 0, 0]
    d2 = [0, 0, 100, 100]  # m2: u3, u4 rendered but fail Spatial → 50 points
    assert (m1["exec_pct"], m1["spatial_pct"], m1["gap"]["estimate"]) == (70.0, 60.0, pytest.approx(10.0))
    assert m2["gap"]["estimate"] == pytest.approx(50.0)
    rng = np.random.default_rng(7)
    slow = [np.mean([d1[i] for i in rng.integers(0, 10, size=(1, 10))[0]]) for _ in range(R)]
    assert (m1["gap"]["low"], m1["gap"]["high"]) == pytest.approx(tuple(np.quantile(slow, [0.025, 0.975])), rel=1e-12)
    assert gap["average"]["estimate"] == pytest.approx(30.0)
    lo, hi = _slow_group_ci([d1, d2], R, 0.95, 7)
    assert (gap["average"]["low"], gap["average"]["high"]) == pytest.approx((lo, hi), rel=1e-12)
    assert gap["average"]["resamples"] == R and gap["average"]["seed"] == 7


def test_quintiles_deciles_and_pearson(run_a, run_b):
    opts = ReportOptions(runs=[str(run_a)], resamples=R)
    res = compute(load_runs(opts), opts)
    (te,) = res["text_expand_quintiles"]["runs"]
    # 9 scored tasks sorted by TextExpand: t2 t3 | t6 t7 | t1 z1 | z2 t5 | t4 (bins (i·5)//9); spatial 1,1|1,1|1,1|0,0|0
    assert [b["n"] for b in te["bins"]] == [2, 2, 2, 2, 1]
    assert [b["outcome_mean"] for b in te["bins"]] == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert (te["bins"][0]["min"], te["bins"][4]["max"]) == (0.1, 0.9)
    (td,) = res["td_deciles"]["runs"]
    # rendered tasks with TD: t1..t6, z1 (7; t7's TD of a failed render is excluded): bins (i·10)//7 + 1
    assert [b["bin"] for b in td["bins"]] == [1, 2, 3, 5, 6, 8, 9]
    assert [b["outcome_mean"] for b in td["bins"]] == [1, 1, 1, 0, 0, 1, 1]
    (pv,) = res["padvc_deciles"]["runs"]
    assert "no PADVC" in pv["skipped"]
    x = [0.5, 0.1, 0.2, 0.9, 0.8, 0.3, 0.4, 0.6, 0.7]
    y = [1, 1, 1, 0, 0, 1, 1, 1, 0]
    mx, my = sum(x) / 9, sum(y) / 9
    r = sum((a - mx) * (b - my) for a, b in zip(x, y)) / math.sqrt(
        sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))
    (p,) = res["text_expand_pearson"]
    assert p["n"] == 9 and p["pearson_r"] == pytest.approx(r, rel=1e-12) and p["pearson_r"] < 0
    (j,) = res["joint"]
    assert "no PADVC" in j["skipped"]


def _task_table(rows: list[dict]) -> pa.Table:
    cols = {name: [r.get(name) for r in rows] for name, _ in TASK_COLUMNS}
    return pa.Table.from_pydict(cols, schema=pa.schema([pa.field(n, t) for n, t in TASK_COLUMNS]))


def test_joint_diagnosis_by_hand():
    # 20 tasks: PADVC_raw = i → top 2 = a19, a18; TextExpand top 2 = a19, a17 → intersection {a19};
    # total energy is largest for a0 → the same-size (1) energy selection is {a0}.
    rows = []
    for i in range(20):
        te = {19: 10.0, 17: 9.0}.get(i, i / 100)
        rows.append({"run": "r", "model": "m", "lang": "en", "id": f"a{i:02d}", "exec_success": True,
                     "padvc_raw": float(i), "text_expand": te, "total_energy": 100.0 - i,
                     "spatial_pass": i % 2 == 0})
    (j,) = analyses.joint_diagnosis(_task_table(rows), 0.10)
    assert (j["n"], j["top_k"], j["intersection_n"]) == (20, 2, 1)
    assert j["intersection_ids"] == ["m/a19"]
    assert j["intersection_spatial_pct"] == 0.0  # a19 is odd → fails
    assert j["energy_spatial_pct"] == 100.0 and j["overlap_with_energy_n"] == 0  # a0 passes
    assert j["all_spatial_pct"] == 50.0
    rows[3]["total_energy"] = None
    (j,) = analyses.joint_diagnosis(_task_table(rows), 0.10)
    assert "energy_skipped" in j
    (j,) = analyses.joint_diagnosis(_task_table(rows), 0.10, has_padvc={"r": False})
    assert "no PADVC" in j["skipped"]


def test_total_energy_definition():
    assert total_energy_of({"geo_evolution_sum_p": 2.5, "max_text_burden_p": 0.5}) == 3.0
    assert total_energy_of({"total_energy": 7.0, "geo_evolution_sum_p": 1.0, "max_text_burden_p": 1.0}) == 7.0
    assert total_energy_of({"geo_evolution_sum_p": 2.5}) is None


def test_compare_runs_paired(run_a, run_b):
    c = analyses.compare_runs(load_run(run_a), load_run(run_b), resamples=R, seed=0)
    assert c["paired_on"] == ["model", "lang", "id"] and c["n_paired"] == 10
    assert (c["only_a"], c["only_b"]) == (4, 0)  # m2's tasks are only in A
    m = {x["metric"]: x for x in c["metrics"]}
    # Exec: B − A per task = t2 −100, t7 +100, t8 +100, z2 +100 → +20 points; A only t2, B only t7 t8 z2
    assert m["Exec %"]["diff"]["estimate"] == pytest.approx(20.0)
    assert (m["Exec %"]["mean_a"], m["Exec %"]["mean_b"], m["Exec %"]["a_only"], m["Exec %"]["b_only"]) == (70, 90, 1, 3)
    # Spatial: t4 +100, t5 +100, t7 −100 → +10 points
    assert m["Spatial %"]["diff"]["estimate"] == pytest.approx(10.0)
    assert (m["Spatial %"]["a_only"], m["Spatial %"]["b_only"]) == (1, 2)
    # TD_c paired where both have it (t1..t7, z1): mean(0.5 − [.1 .2 .3 .4 .5 .6 0 .7]) = 0.15
    assert m["TD_c"]["n"] == 8 and m["TD_c"]["diff"]["estimate"] == pytest.approx(0.15)
    lo, hi = m["Exec %"]["diff"]["low"], m["Exec %"]["diff"]["high"]
    assert lo <= 20.0 <= hi
    assert "skipped" in m["PADVC_c"]


SELFDEBUG = [  # rounds from 1; later rounds keyed "<id>#r<k>"
    {"id": "x", "round": 1, "exec_success": False, "spatial_pass": False},
    {"id": "x#r2", "round": 2, "exec_success": True, "spatial_pass": True},
    {"id": "y", "round": 1, "exec_success": True, "spatial_pass": False},
    {"id": "y#r2", "round": 2, "exec_success": True, "spatial_pass": False},
    {"id": "z", "round": 1, "exec_success": True, "spatial_pass": True},
    {"id": "w", "round": 1, "exec_success": False, "spatial_pass": False},
]


def test_exec_spatial_at_k_from_rows():
    rows = [{"model": "m", "lang": "en", **r} for r in SELFDEBUG]
    out = analyses.exec_spatial_at_k_from_rows(rows)
    # k=1: exec y, z = 2/4, spatial z = 1/4; k=2: exec x, y, z = 3/4, spatial x, z = 2/4
    assert [(r["k"], r["exec_at_k_pct"], r["spatial_at_k_pct"]) for r in out] == [(1, 50.0, 25.0), (2, 75.0, 50.0)]


def test_exec_spatial_at_k_in_the_report(tmp_path):
    from prism_fast.schema import STAGE_FIELDS
    from prism_fast.store import ResultsStore
    from tests.report.conftest import write_run

    assert "selfdebug" in STAGE_FIELDS
    run = write_run(tmp_path / "sd", [{"model": "m", "lang": "en", "id": i, "exec": True, "runtime": 1.0}
                                      for i in "wxyz"])
    ResultsStore(run).append("selfdebug", [{"model": "m", "lang": "en", "sample_id": r["id"].split("#")[0], **r}
                                           for r in SELFDEBUG])
    opts = ReportOptions(runs=[str(run)], resamples=100)
    (at_k,) = compute(load_runs(opts), opts)["at_k"]
    assert at_k["source"].startswith("prism_fast.generate.selfdebug")  # the generate helper, when it exists
    assert [(r["k"], r["exec_at_k_pct"], r["spatial_at_k_pct"]) for r in at_k["rows"]] == [
        (1, 50.0, 25.0), (2, 75.0, 50.0)]


def test_latex_column_order(run_a):
    tex = table1_latex(table1(load_run(run_a).tasks, "all_tasks", {"run_a": {"audit", "td"}}))
    lines = tex.splitlines()
    assert lines[2] == " & ".join(LATEX_HEADERS) + r" \\"
    assert [h.split(" ")[0] for h in LATEX_HEADERS] == [
        "Model", "Lang", "Exec", "Spatial", "PADVC$_c$", "TD$_c$", "Overlap", "Leak", "OOB"]
    assert r"m1 & en & 75.0 & 62.5 & -- & 0.3500 & 12.5 & 12.5 & 12.5 \\" in lines


def test_build_report_writes_every_format(run_a, run_b, tmp_path):
    out = build_report(ReportOptions(runs=[str(run_a), str(run_b)], out_dir=str(tmp_path / "rep"), resamples=R,
                                     compare=[str(run_a), str(run_b)]))
    names = {p.relative_to(out["out_dir"]).as_posix() for p in out["files"]}
    assert {"table1.md", "table2.md", "stats.md", "stats.json", "table1.csv", "table2.csv", "per_task.csv",
            "table1.tex", "report.html", "plots/funnel.png", "plots/failures.png"} <= names
    for name in names:
        if name.endswith(".png"):
            assert (out["out_dir"] / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out["out_dir"] / "table1.md").read_text()
    assert "| run_a | m1 | en | 8 | 75.0 | 62.5 | — | 0.3500 | 12.5 | 12.5 | 12.5 |" in md
    assert "all tasks of the (model, language) run" in md
    with open(out["out_dir"] / "table1.csv") as fh:
        rows = list(csv.DictReader(fh))
    m1en = [r for r in rows if r["run"] == "run_b" and r["model"] == "m1" and r["lang"] == "en"][0]
    assert float(m1en["exec_pct"]) == 87.5 and float(m1en["spatial_pct"]) == 75.0  # B: 7/8 exec, t1..t6 = 6/8
    stats = json.loads((out["out_dir"] / "stats.json").read_text())
    assert stats["compare"]["n_paired"] == 10
    assert "Two-run comparison" in (out["out_dir"] / "stats.md").read_text()
    html = (out["out_dir"] / "report.html").read_text()
    assert "http://" not in html and "https://" not in html and "data:image/png;base64," in html
    again = build_report(ReportOptions(runs=[str(run_a), str(run_b)], out_dir=str(tmp_path / "rep2"), resamples=R,
                                       compare=[str(run_a), str(run_b)]))
    for name in ("report.html", "stats.json", "table1.tex", "plots/funnel.png"):  # bit-for-bit reproducible
        assert (again["out_dir"] / name).read_bytes() == (out["out_dir"] / name).read_bytes(), name


def test_defaults_and_config_cli(run_a, tmp_path):
    assert ReportOptions(runs=["x"]).resamples >= 10_000
    out = subprocess.run([sys.executable, "-m", "prism_fast.cli", "report", f"report.runs=[{run_a}]",
                          f"report.out_dir={tmp_path / 'cli'}", "report.bootstrap.resamples=500",
                          "report.formats=[markdown,csv]"], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "| m1 | en | 8 | 75.0 | 62.5 |" in out.stdout
    assert (tmp_path / "cli" / "table2.csv").exists() and not (tmp_path / "cli" / "report.html").exists()


def test_padvc_rows_table1_deciles_and_joint(tmp_path):
    """The joint-diagnosis table of test_joint_diagnosis_by_hand, written as real padvc/text_expand rows."""
    from prism_fast.schema import STAGE_FIELDS
    from prism_fast.store import ResultsStore
    from tests.report.conftest import write_run

    assert "padvc" in STAGE_FIELDS
    spec = [{"model": "m", "lang": "en", "id": f"a{i:02d}", "exec": True, "runtime": 1.0,
             "audit": {"pass": int(i % 2 == 0)}, "te": {19: 10.0, 17: 9.0}.get(i, i / 100)} for i in range(20)]
    run = write_run(tmp_path / "pv", spec)
    rows = [{"model": "m", "lang": "en", "id": f"a{i:02d}", "status": "ok", "padvc_status": "ok",
             "padvc_raw": float(i), "padvc_center": i / 100, "u_padvc": float(i) * (i % 2 == 0),
             "geo_evolution_sum_p": 90.0 - i, "max_text_burden_p": 10.0} for i in range(20)]
    rows.append({"model": "m", "lang": "en", "id": "a00", "status": "error", "padvc_status": "error",
                 "error": "TypeError: x"})  # the newest row of a00 is an error: excluded everywhere
    ResultsStore(run).append("padvc", rows[:20])
    ResultsStore(run).append("padvc", rows[20:])
    opts = ReportOptions(runs=[str(run)], resamples=100)
    res = compute(load_runs(opts), opts)
    (t1,) = res["table1"]
    assert t1["padvc_c"] == pytest.approx(sum(range(1, 20)) / 19 / 100) and t1["padvc_c_n"] == 19
    (dec,) = res["padvc_deciles"]["runs"]
    # 19 tasks a01..a19 by PADVC_raw, bins (i·10)//19: sizes 2,2,2,2,2,2,2,2,2,1; odd ids fail Spatial
    assert [b["n"] for b in dec["bins"]] == [2] * 9 + [1]
    assert [b["outcome_mean"] for b in dec["bins"]] == [0.5] * 9 + [0.0]
    (j,) = res["joint"]
    # 19 scored: top ceil(1.9) = 2 each; PADVC a19, a18; TextExpand a19, a17 → {a19}; energy 100 − i → a01
    assert (j["n"], j["top_k"], j["intersection_ids"]) == (19, 2, ["m/a19"])
    assert j["intersection_spatial_pct"] == 0.0 and j["energy_spatial_pct"] == 0.0  # a01 is odd
    assert j["all_spatial_pct"] == pytest.approx(100 * 9 / 19)
