"""The end-of-run summary (summary.md and what `prism-fast eval` prints) shows PADVC as TD is shown, when PADVC
ran: PADVC_c over the rendered tasks it scored, uPADVC over all tasks. Rows are written with the real
ResultsStore; every expected number is derived by hand in the comments."""

from __future__ import annotations

from prism_fast.pipeline.summary import format_summary, summarize_run
from prism_fast.store import ResultsStore

IDS = ["a", "b", "c", "d"]


def _write(store: ResultsStore, padvc: bool) -> None:
    key = lambda i: {"model": "m", "lang": "en", "id": i}  # noqa: E731
    store.append("tasks", [{**key(i), "status": "ok", "has_script": True} for i in IDS])
    # a, b, c render; d fails (syntax error)
    store.append("exec", [{**key(i), "status": "ok", "success": True, "runtime_sec": 2.0} for i in "abc"]
                 + [{**key("d"), "status": "error", "success": False, "error_type": "syntax_error"}])
    store.append("audit", [{**key(i), "status": "ok", "audit_success": 1, "visual_structure_pass": int(i == "a")}
                           for i in "abc"])
    store.append("td", [{**key(i), "status": "ok", "td_center": 0.5, "u_td": 0.5 * (i == "a"), "render_success": True}
                        for i in "abc"])
    if not padvc:
        return
    store.append("padvc", [
        # a: scored, Spatial pass -> u_padvc = padvc_raw 0.8 × 1; b: scored, Spatial fail -> u_padvc 0
        {**key("a"), "status": "ok", "render_success": True, "padvc_raw": 0.8, "padvc_center": 0.2, "u_padvc": 0.8},
        {**key("b"), "status": "ok", "render_success": True, "padvc_raw": 0.3, "padvc_center": 0.6, "u_padvc": 0.0},
        # c: rendered and audited, but PADVC could not score it (counted); d: the gate's row (not counted)
        {**key("c"), "status": "error", "error_kind": "ocr_error", "render_success": True},
        {**key("d"), "status": "error", "error_kind": "gate", "render_success": False},
    ])


def test_summary_shows_padvc_when_it_ran(tmp_path):
    store = ResultsStore(tmp_path)
    _write(store, padvc=True)
    summary = summarize_run(store, "m", IDS, {"exec": 1.0})
    group = summary["groups"][0]
    # PADVC_c (rendered): mean(0.2, 0.6) = 0.4; uPADVC (all): (0.8 + 0 + 0 + 0) / 4 = 0.2
    assert group["padvc_center_mean_rendered"] == 0.4 and group["u_padvc_mean_all"] == 0.2
    assert group["padvc_errors"] == 1
    text = format_summary(summary)
    header, _, row = text.splitlines()[2:5]
    cells = dict(zip([h.strip() for h in header.strip("|").split("|")], [c.strip() for c in row.strip("|").split("|")]))
    assert cells["PADVC_c (rendered)"] == "0.4" and cells["uPADVC (all)"] == "0.2"
    assert header.index("PADVC_c (rendered)") < header.index("TD_c (rendered)")  # the paper's column order
    assert "PADVC errors on rendered tasks (in no PADVC mean; 0 in uPADVC): m/en=1" in text


def test_summary_has_no_padvc_column_without_padvc_rows(tmp_path):
    store = ResultsStore(tmp_path)
    _write(store, padvc=False)
    text = format_summary(summarize_run(store, "m", IDS, {"exec": 1.0}))
    assert "PADVC" not in text and "TD_c (rendered)" in text
