"""Render-time observers (execute/observers.py): the request never reaches the script, an observer that cannot be
installed leaves the render as it is and its result empty. (A working observer, the one-pass audit's, is tested
end to end in tests/audit/test_audit_onepass.py.) Real renders."""

from __future__ import annotations

import re

import pytest

from prism_fast.execute.observers import ENV, Observer
from prism_fast.execute.render import RenderConfig, prefork_worker, render_one

# the script reports, through its error text, every PRISM* variable it can see
PEEK = '''import os
from manim import *


class Peek(Scene):
    def construct(self):
        self.add(Square())
        raise RuntimeError("seen:" + ",".join(sorted(k for k in os.environ if k.startswith("PRISM"))) + ":end")
'''


def test_observer_records_are_validated():
    with pytest.raises(ValueError):
        Observer(name="Bad-Name", entry="a.b:c")
    with pytest.raises(ValueError):
        Observer(name="ok", entry="a.b")  # no function
    assert Observer(name="ok", entry="a.b:c").result is None


@pytest.mark.slow
def test_request_never_reaches_the_script_and_a_broken_observer_changes_nothing(tmp_path):
    cfg = RenderConfig()
    broken = Observer(name="probe", entry="prism_fast.no_such_module:install", request={"x": 1})
    worker = prefork_worker(cfg)
    try:
        observed = render_one("P1", PEEK, tmp_path / "observed", cfg, runner=worker.run, observers=(broken,))
        plain = render_one("P1", PEEK, tmp_path / "plain", cfg, runner=worker.run)
    finally:
        worker.close()
    cli = Observer(name="probe", entry="prism_fast.no_such_module:install")
    by_cli = render_one("P1", PEEK, tmp_path / "cli", cfg, observers=(cli,))  # no child installs: never asked
    for row in (observed, plain, by_cli):
        assert row["error_kind"] == "exit_nonzero", row["error"]
        assert "seen::end" in row["error"], row["error"][-300:]  # no PRISM* variable, the observers' included
    assert ENV.startswith("PRISM")  # (so the check above covers it)
    assert observed["backend"] == "prefork" and by_cli["backend"] == "cli"
    assert broken.result is None and cli.result is None
    norm = lambda r: re.sub(r"render_P1_\w+", "@", r["error"])  # the scratch dir's random name
    assert norm(observed) == norm(plain)


def test_a_result_file_nested_past_the_parsers_depth_is_unreadable_not_a_crash(tmp_path):
    """The result file lies in the sample's own scratch: a script can write anything there, JSON nested deeper than
    the parser recurses included -- the parent reads it as unreadable (no result), never raises."""
    from prism_fast.execute.observers import read_result

    path = tmp_path / "result.json"
    path.write_text("[" * 200000, encoding="utf-8")
    assert read_result(path, "00" * 16) == (None, "unreadable")
    path.write_text('{"body": "x", "tag": "y"}', encoding="utf-8")
    assert read_result(path, "00" * 16) == (None, "seal_mismatch")
