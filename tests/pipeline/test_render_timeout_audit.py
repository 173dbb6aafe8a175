"""A render that timed out is not followed by an audit of the same script where no audit of it can pass.

Under a profile that fixes Q-FUNNEL-1 (``improved``: a Spatial pass needs Exec success, as Table 1 counts it) the
audit of a timed-out render can only ever be a Spatial failure, so it is not executed again (neither in the render
actor right after the render nor in the audit stage: for a script that loops, that would last until the audit's own
timeout). Its audit row is made without executing anything: status ``skipped``, ``error_kind=render_timed_out``.

Under the reference funnel (Q-FUNNEL-1 as the toolkit) a failed render's audit still counts: a script that plays
past the render timeout is audited in about a second without rasterising and can pass (checked: 400 one-second
plays, render timed out at 8 s, audit passed in 1.0 s), so there the audit runs as before.
"""

from __future__ import annotations

import json

import pytest

from prism_fast.audit.stage import RENDER_TIMED_OUT, render_timed_out_row, skips_audit
from prism_fast.profile import REFERENCE, resolve_profile
from prism_fast.store import ResultsStore

from tests.pipeline.conftest import compose_config

IMPROVED = resolve_profile("improved", {})
SLOW, QUICK = "SAMPLE-EN-000001", "SAMPLE-EN-000002"
SCRIPTS = {
    SLOW: "from manim import *\n\n\nclass Waits(Scene):\n    def construct(self):\n        self.add(Square())\n"
          "        self.wait(3000)\n",
    QUICK: "from manim import *\n\n\nclass Quick(Scene):\n    def construct(self):\n"
           "        self.play(Create(Square()), run_time=0.3)\n",
}


def test_only_a_timed_out_render_under_a_spatial_needs_exec_profile_skips_its_audit():
    timed_out = {"success": False, "timed_out": True, "wall_s": 5.01}
    assert skips_audit(timed_out, IMPROVED)
    assert not skips_audit(timed_out, REFERENCE)  # reference: its audit may still pass (Q-FUNNEL-1)
    assert not skips_audit({"success": False, "timed_out": False}, IMPROVED)
    assert not skips_audit(None, IMPROVED)
    row = render_timed_out_row("en", "x", timed_out)
    assert (row["status"], row["error_kind"], row["visual_structure_pass"], row["audit_success"]) == \
        ("skipped", RENDER_TIMED_OUT, 0, 0)
    assert "timed out after 5.0 s" in row["error_detail"] and row["runtime_sec"] == 0.0


def test_the_summary_counts_spatial_as_table_1_where_it_needs_exec(tmp_path):
    """The summary's Spatial count follows the profile's funnel rule, as the report's Table 1 does: a skipped
    audit of a timed-out render and an audit pass of a failed render count the same (not at all) under
    ``improved``; under reference the audit pass of a failed render counts (the toolkit's funnel)."""
    from prism_fast.pipeline.summary import summarize_run

    store = ResultsStore(tmp_path)
    key = {"model": "m", "lang": "en", "profile": "p"}
    store.append("tasks", [{**key, "id": i, "status": "ok"} for i in ("a", "b")])
    store.append("exec", [{**key, "id": "a", "status": "error", "success": False, "timed_out": True,
                           "manim_executions": 1},
                          {**key, "id": "b", "status": "ok", "success": True, "manim_executions": 1}])
    store.append("audit", [{**key, "id": "a", "status": "ok", "audit_success": 1, "visual_structure_pass": 1,
                            "audit_pass": "separate"},
                           {**key, "id": "b", "status": "ok", "audit_success": 1, "visual_structure_pass": 1,
                            "audit_pass": "separate"}])
    (ref,) = summarize_run(store, "m", ["a", "b"], {})["groups"]
    (imp,) = summarize_run(store, "m", ["a", "b"], {}, spatial_requires_exec=True)["groups"]
    assert (ref["spatial_pass"], imp["spatial_pass"]) == (2, 1)
    store.append("audit", [{**key, **render_timed_out_row("en", "a", {"timed_out": True})}])
    (skipped,) = summarize_run(store, "m", ["a", "b"], {}, spatial_requires_exec=True)["groups"]
    assert skipped["spatial_pass"] == imp["spatial_pass"] == 1
    assert skipped["manim_exec_per_sample"] == 1.5  # a: its render only; b: render + audit


@pytest.mark.slow  # ~30 s on the 2-core machine: Ray start-up, a 5 s render timeout, one quick render and audit
def test_a_timed_out_render_gets_a_skipped_audit_row_and_no_audit_execution(tmp_path):
    from prism_fast.pipeline.options import model_output_dir
    from prism_fast.pipeline.run import options_from_config, run_eval

    preds = tmp_path / "preds"
    preds.mkdir()
    for sid, text in SCRIPTS.items():
        (preds / f"{sid}.py").write_text(text)
    cfg = compose_config("profile=improved", "model=predictions", "model.name=timeouts",
                         f"model.predictions={preds}", f"dataset.ids=[{SLOW},{QUICK}]", f"runs_root={tmp_path}/runs",
                         "cluster.num_cpus=2", "execute.timeout_s=5", "metrics.td.enabled=false",
                         "metrics.text_expand.enabled=false")
    opts = options_from_config(cfg)
    assert opts.audit_cfg.one_pass == "auto"  # the render actors audit separately right after their render
    summary = run_eval(opts)
    store = ResultsStore(opts.run_dir)
    execs = {r["id"]: r for r in store.read("exec").to_pylist()}
    audits = {r["id"]: r for r in store.read("audit").to_pylist()}

    slow, audit = execs[SLOW], audits[SLOW]
    assert (slow["success"], slow["timed_out"], slow["manim_executions"]) == (False, True, 1)
    assert (audit["status"], audit["error_kind"], audit["audit_status"], audit["audit_pass"]) == \
        ("skipped", RENDER_TIMED_OUT, "skipped", "skipped")
    assert (audit["audit_success"], audit["visual_structure_pass"], audit["runtime_sec"]) == (0, 0, 0.0)
    assert "render timed out" in audit["error_detail"]
    # no audit execution: neither the render actor's separate audit nor the audit stage's left any file
    audit_dir = model_output_dir(opts) / "audit"
    assert not (audit_dir / "audits" / SLOW).exists() and not (audit_dir / "onepass" / f"{SLOW}.json").exists()

    quick = audits[QUICK]  # the other sample: rendered and audited as before
    assert execs[QUICK]["success"] is True and quick["audit_pass"] == "separate" and quick["runtime_sec"] > 0
    (group,) = summary["groups"]
    assert group["manim_exec_per_sample"] == 1.5  # SLOW: its render only; QUICK: render + separate audit
    assert group["spatial_pass"] == int(quick["visual_structure_pass"] == 1)
    assert json.loads(json.dumps(summary))  # (the summary stays JSON)
