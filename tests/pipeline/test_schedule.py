"""execute.schedule: longest-first hands out the expected-longest render first and changes no row, video or
report (execute/cost.py; issue: no idle tail at the end of a run)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from prism_fast.dataset.bundled import bundled_dataset_path
from prism_fast.execute.cost import expected_render_cost
from prism_fast.store import ResultsStore

from tests.pipeline.conftest import compose_config

IDS = ["SAMPLE-EN-000001", "SAMPLE-EN-000002"]   # dataset order; the second is expected to cost more
EXEC_KEYS = ("success", "status", "exec_status", "error_type", "onepass", "manim_executions", "scene_class")
AUDIT_KEYS = ("audit_success", "visual_structure_pass", "visual_structure_rate", "segment_count",
              "visual_audit_report", "audit_pass")


def _run(tmp: Path, schedule: str) -> tuple[list[str], dict]:
    from prism_fast.pipeline.run import options_from_config, run_eval

    cfg = compose_config(f"runs_root={tmp}", "lang=en", f"dataset.ids=[{','.join(IDS)}]", "cluster.num_cpus=2",
                         "execute.workers=1", "execute.cache.enabled=false", "audit.cache=false",
                         f"execute.schedule={schedule}",
                         "execute.head_start=false")  # (the head start renders the back first: test_headstart.py)
    opts = options_from_config(cfg)
    run_eval(opts)
    store = ResultsStore(opts.run_dir)
    exec_rows = store.read("exec").to_pylist()
    # one render worker: rows are finished (written_at_ns) in the order the renders were handed out
    order = [r["id"] for r in sorted(exec_rows, key=lambda r: r["written_at_ns"])]
    out = {}
    for r in exec_rows:
        video = Path(r["video_path"])
        out[r["id"]] = {k: r.get(k) for k in EXEC_KEYS} | {"video": hashlib.sha256(video.read_bytes()).hexdigest()}
    for r in store.read("audit").to_pylist():
        out[r["id"]] |= {k: r.get(k) for k in AUDIT_KEYS}
    for r in store.read("td").to_pylist():
        out[r["id"]] |= {"td_raw": r.get("td_raw"), "td_status": r.get("status")}
    return order, out


def test_longest_first_changes_the_order_and_nothing_else(tmp_path):
    import json

    scripts = {}
    for line in bundled_dataset_path().read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec.get("id") in IDS:
            scripts[rec["id"]] = rec["reference_answer"]
    assert set(scripts) == set(IDS) and all(scripts.values())
    expected = sorted(IDS, key=lambda i: -expected_render_cost(scripts[i]))
    assert expected != IDS   # the input order is not already longest-first: the test can see the difference

    order_in, rows_in = _run(tmp_path / "input", "input")
    order_lf, rows_lf = _run(tmp_path / "lf", "longest_first")
    assert order_in == IDS   # input: dataset order
    assert order_lf == expected
    assert rows_in == rows_lf
    assert all(r["success"] for r in rows_in.values())
