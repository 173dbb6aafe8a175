"""The HTML report's Statistics section is HTML (headings, tables, lists) made from stats.md, not a <pre> of
Markdown source; the browser check is in test_report_html.py."""

from __future__ import annotations

from prism_fast.report import render
from prism_fast.report.cli import ReportOptions, build_report, stats_markdown

MD = """# Statistics

Bootstrap: 10 resamples, seed 0.

## Exec → Spatial gap

run <a>:

| model | tasks | gap [95 % CI] |
|---|---|---|
| m1 | 10 | 10.0 [-20.0, 40.0] |
| average of 2 model(s) |  | 30.0 [0.0, 57.6] |

### Pearson r (TextExpand = `text_expand_ratio_unique`)

- run_a: r = -0.8216 (n = 9)
- run_b: skipped — no audit rows
"""


def test_markdown_html_turns_each_block_into_html():
    out = render.markdown_html(MD)
    assert "<h2>" not in out and "# Statistics" not in out  # the page's own section heading stands for it
    assert "<p>Bootstrap: 10 resamples, seed 0.</p>" in out and "<h3>Exec → Spatial gap</h3>" in out
    assert "<p>run &lt;a&gt;:</p>" in out  # escaped
    assert render.html_table(["model", "tasks", "gap [95 % CI]"],
                             [["m1", "10", "10.0 [-20.0, 40.0]"], ["average of 2 model(s)", "", "30.0 [0.0, 57.6]"]],
                             key_cols=1) in out
    assert "<h4>Pearson r (TextExpand = <code>text_expand_ratio_unique</code>)</h4>" in out
    assert "<ul><li>run_a: r = -0.8216 (n = 9)</li><li>run_b: skipped — no audit rows</li></ul>" in out
    assert "|" not in out and "---" not in out and "<pre>" not in out


def test_report_statistics_section_is_tables(run_a, run_b, tmp_path):
    built = build_report(ReportOptions(runs=[str(run_a)], out_dir=str(tmp_path), resamples=200,
                                       compare=[str(run_a), str(run_b)], formats=("markdown", "html")))
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    section = page[page.index("<h2>Statistics</h2>"):page.index("<h2>Plots</h2>")]
    assert "<pre>" not in section and "|---|" not in section
    md = stats_markdown(built["result"])
    md_tables = sum(1 for line in md.splitlines() if line.startswith("|---"))
    assert section.count("<table>") == md_tables == 4  # gap, TD deciles, TextExpand quintiles, comparison
    assert (tmp_path / "stats.md").read_text(encoding="utf-8") == md  # stats.md keeps its Markdown
