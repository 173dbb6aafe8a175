"""The HTML report in headless Debian chromium: it renders (a screenshot is taken), logs nothing to the console,
and its DOM shows the fixture numbers. The console check is shown to fail on an injected console.error and on
an uncaught exception. Chromium is a system dependency (scripts/install_system_deps.sh), so a missing binary
fails the test instead of skipping it."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from prism_fast.report.cli import ReportOptions, build_report

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                  "--enable-logging=stderr", "--v=0"]


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium not found: run scripts/install_system_deps.sh (Debian package 'chromium')")
    return exe


def _run(page: Path, *extra: str, profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run([_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


def console_lines(stderr: str) -> list[str]:
    """Chromium's log lines for console messages and uncaught page errors (any level)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def _table_rows(dom: str, table_id: str) -> list[list[str]]:
    m = re.search(rf'<table id="{table_id}">(.*?)</table>', dom, re.S)
    assert m, f"table {table_id} not in the DOM"
    rows = []
    for tr in re.findall(r"<tr>(.*?)</tr>", m.group(1), re.S):
        rows.append([html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)])
    return rows


@pytest.fixture(scope="module")
def report_html(run_a, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html")
    # an inspect picture for t4 (the overlap sample) so the drill-down embeds one
    pic_dir = run_a / "inspect" / "t4"
    pic_dir.mkdir(parents=True, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 1))
    ax.add_patch(plt.Rectangle((0, 0), 0.6, 0.6, color="c"))
    ax.add_patch(plt.Rectangle((0.3, 0.3), 0.6, 0.6, color="r"))
    fig.savefig(pic_dir / "segment_0.png")
    plt.close(fig)
    build_report(ReportOptions(runs=[str(run_a)], out_dir=str(out / "rep"), resamples=1000))
    return out / "rep" / "report.html"


def test_report_opens_without_console_errors_and_shows_numbers(report_html, tmp_path):
    res = _run(report_html, "--dump-dom", profile=tmp_path / "p1")
    assert res.returncode == 0, res.stderr[-2000:]
    assert console_lines(res.stderr) == []
    dom = res.stdout
    t1 = _table_rows(dom, "table1")
    assert t1[0][:5] == ["model", "lang", "tasks", "Exec %", "Spatial %"]
    assert ["m1", "en", "8", "75.0", "62.5", "—", "0.3500", "12.5", "12.5", "12.5"] in t1
    assert ["m2", "en", "4", "100.0", "50.0", "—", "—", "25.0", "0.0", "25.0"] in t1
    t2 = _table_rows(dom, "table2")
    m1en = [r for r in t2 if r[:2] == ["m1", "en"]][0]
    assert m1en[3:5] == ["2", "25.0"] and m1en[-3:] == ["4.1667", "3.5000", "8.7500"]
    # drill-down: failing samples with their error text, findings and the inspect picture
    assert "Error: syntax_error in t7" in dom and "overlaps: " in dom and 'alt="segment_0.png"' in dom
    assert 'href="' in dom and "t4.mp4" in dom


def test_screenshot_is_a_png(report_html, tmp_path):
    shot = tmp_path / "shot.png"
    res = _run(report_html, f"--screenshot={shot}", "--window-size=1280,1600", profile=tmp_path / "p2")
    assert res.returncode == 0, res.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


@pytest.mark.parametrize("script, needle", [
    ('console.error("injected-report-error")', "injected-report-error"),
    ("no_such_function_in_report()", "no_such_function_in_report"),
])
def test_console_check_detects_errors(report_html, tmp_path, script, needle):
    page = tmp_path / "broken.html"
    page.write_text(report_html.read_text(encoding="utf-8").replace("</body>", f"<script>{script}</script></body>"),
                    encoding="utf-8")
    res = _run(page, "--dump-dom", profile=tmp_path / "p3")
    lines = console_lines(res.stderr)
    assert any(needle in line for line in lines), res.stderr[-2000:]


def test_statistics_are_tables_in_the_browser(report_html, tmp_path):
    """Chromium's DOM of the Statistics section: tables (the Exec → Spatial gap with its numbers), no <pre>."""
    res = _run(report_html, "--dump-dom", profile=tmp_path / "p4")
    assert res.returncode == 0, res.stderr[-2000:]
    dom = res.stdout
    section = dom[dom.index("<h2>Statistics</h2>"):dom.index("<h2>Plots</h2>")]
    assert "<pre>" not in section and "|---|" not in section
    tables = re.findall(r"<table>(.*?)</table>", section, re.S)
    assert len(tables) >= 3  # gap, TD deciles, TextExpand quintiles
    gap = [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)]
           for tr in re.findall(r"<tr>(.*?)</tr>", tables[0], re.S)]
    # m1: Exec 7/10, Spatial 6/10 (conftest); m2: 4/4, 2/4; the CI bounds depend on the seeded bootstrap
    assert gap[0] == ["model", "tasks", "Exec %", "Spatial %", "gap [95 % CI]"]
    assert [r[:4] for r in gap[1:3]] == [["m1", "10", "70.0", "60.0"], ["m2", "4", "100.0", "50.0"]]
    assert gap[1][4].startswith("10.0 [") and gap[3][0] == "average of 2 model(s)"
    assert "<h3>Exec → Spatial gap (percentage points, all tasks)</h3>" in section
