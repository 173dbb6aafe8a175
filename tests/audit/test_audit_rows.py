"""Batch rows and results.json summary (spec §10), from the fixtures' expected reports.

The expected row values are the "Batch-row expectations" table of the spec fixtures' README.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from prism_fast.audit.rows import aggregate, build_row, error_from_stderr, results_document

FIX = Path(__file__).parent / "fixtures"

# fixture: (audit_success, segment_count, rate, pass, total, (oob, overlaps, leaks), error_msg)
TABLE = {
    "t_geom": (1, 5, 0.4, 0, 3, (0, 2, 1), None),
    "t_segments": (1, 2, 0.0, 0, 2, (1, 1, 0), None),
    "t_tracker": (1, 1, 0.0, 0, 1, (1, 0, 0), None),
    "t_crash": (1, 1, 0.0, 0, 1, (0, 1, 0), None),
    "t_moving": (0, 0, 0.0, 0, 0, (0, 0, 0), "Audit produced no valid segments"),
    "t_static": (0, 0, 0.0, 0, 0, (0, 0, 0), "Audit produced no valid segments"),
    "traced": (1, 1, 1.0, 1, 0, (0, 0, 0), None),
    "traced2": (1, 1, 0.0, 0, 1, (1, 0, 0), None),
    "heavy": (1, 2, 0.5, 0, 1, (1, 0, 0), None),
    "grid": (1, 1, 1.0, 1, 0, (0, 0, 0), None),
}


def check_row(row: dict, name: str) -> None:
    ok, segs, rate, vpass, total, (oob, ov, lk), err = TABLE[name]
    assert (row["audit_success"], row["segment_count"], row["visual_structure_pass"]) == (ok, segs, vpass)
    assert row["visual_structure_rate"] == pytest.approx(rate)
    assert row["visual_issue_total"] == total
    assert row["visual_issue_breakdown"] == {"out_of_bounds": oob, "overlaps": ov, "leaks": lk}
    assert row["error_msg"] == err
    assert row["status"] == ("ok" if ok else "audit_failed")


@pytest.mark.parametrize("name", sorted(TABLE))
def test_rows_from_expected_reports(name):
    text = (FIX / f"expected_{name}.json").read_text(encoding="utf-8")
    row = build_row(name, f"{name}.py", 1.0, 0, "", text)
    check_row(row, name)
    keys = list(row)
    assert keys[:10] == ["id", "file_path", "audit_success", "runtime_sec", "segment_count",
                         "visual_structure_rate", "visual_structure_pass", "visual_issue_total",
                         "visual_issue_breakdown", "error_msg"]
    assert keys[10] == "visual_audit_report"


def test_failures_timeouts_and_stderr_selection():
    row = build_row("x", "x.py", 2.0, 1, "Traceback...\n  File \"<unknown>\", line 2\nSyntaxError: expected ':'\n", None)
    assert (row["audit_success"], row["error_msg"], row["error_kind"]) == (0, "SyntaxError: expected ':'", "nonzero_exit")
    row = build_row("x", "x.py", 2.0, 0, "", None)
    assert row["error_msg"] == "Audit report not generated" and row["error_kind"] == "no_report"
    row = build_row("x", "x.py", 900.5, None, "", None, timed_out=True, timeout_sec=900)
    assert row["error_msg"] == "TimeoutExpired: > 900s" and row["status"] == "timeout"
    assert "visual_audit_report" not in row
    assert error_from_stderr("") == "Audit failed with no stderr"
    assert error_from_stderr("ValueError: bad\n/usr/lib/x.py line\n") == "ValueError: bad"
    assert error_from_stderr("only /path line\n") == "only /path line"
    # an empty report file reads as {} -> zero segments
    row = build_row("x", "x.py", 1.0, 0, "", "")
    assert row["error_msg"] == "Audit produced no valid segments" and row["error_kind"] == "no_segments"


def test_salvaged_exception_reference_vs_improved():
    text = (FIX / "expected_t_crash.json").read_text(encoding="utf-8")
    errs = [{"scene": "Crash", "where": "render", "error": "RuntimeError: boom"}]
    ref = build_row("t_crash", "t.py", 1.0, 0, "", text, scene_errors=errs)
    assert ref["audit_success"] == 1 and "boom" in ref["error_detail"]          # Q-SPATIAL-9 reference
    imp = build_row("t_crash", "t.py", 1.0, 0, "", text, scene_errors=errs, fail_on_scene_error=True)
    assert imp["audit_success"] == 0 and imp["error_msg"] == "RuntimeError: boom"
    assert imp["visual_audit_report"]["Crash"]  # kept for diagnosis


def test_aggregate_over_fixture_rows():
    rows = [build_row(n, f"{n}.py", 2.0, 0, "", (FIX / f"expected_{n}.json").read_text(encoding="utf-8"))
            for n in sorted(TABLE)]
    s = aggregate(rows)
    n = len(TABLE)
    ok = sum(v[0] for v in TABLE.values())
    passed = sum(v[3] for v in TABLE.values())
    kept = [k for k, v in TABLE.items() if v[0] and v[5][0] == 0]
    kept_clean = [k for k in kept if TABLE[k][5] == (0, 0, 0)]
    assert (s["total"], s["audit_success_count"], s["visual_pass_count"]) == (n, ok, passed)
    assert s["visual_pass_rate_among_audited"] == pytest.approx(passed / ok)
    assert s["kept_count_no_oob"] == len(kept) and s["visual_pass_count_no_oob"] == len(kept_clean)
    assert s["avg_visual_structure_rate"] == pytest.approx(sum(v[2] for v in TABLE.values()) / n)
    assert s["issue_counts"] == {k: sum(v[5][i] for v in TABLE.values())
                                 for i, k in enumerate(["out_of_bounds", "overlaps", "leaks"])}
    assert s["error_count"] == sum(1 for v in TABLE.values() if v[6])
    assert s["avg_runtime_sec"] == pytest.approx(2.0)
    doc = results_document(rows[::-1], "in", 8, 900)
    assert [d["id"] for d in doc["details"]] == sorted(TABLE)
    assert list(doc)[:6] == ["timestamp", "input_dir", "workers", "timeout_sec", "summary", "details"]
