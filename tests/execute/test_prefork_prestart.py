"""execute/render.py ``prestart_prefork``: the head start's prefork server launched ahead of need (pipeline/run.py),
handed out by ``prefork_worker`` only when it was started with the same arguments and environment as a new one
would be; otherwise, and when no one takes it, closed with its directory."""

from __future__ import annotations

import os

from prism_fast.execute import render
from prism_fast.execute.render import RenderConfig, discard_prestarted, prefork_worker, prestart_prefork


def test_a_prestarted_server_is_handed_out_and_serves(tmp_path):
    cfg = RenderConfig(tmp_root=str(tmp_path / "tmp"), timeout_s=60)
    assert prestart_prefork(cfg)
    early = render._PRESTARTED[0]
    worker = prefork_worker(cfg)
    try:
        assert worker is early and not render._PRESTARTED and worker.import_s is not None
        row = render.render_one("tiny", "from manim import *\nclass T(Scene):\n    def construct(self):\n"
                                "        self.play(Create(Circle()), run_time=0.2)\n", tmp_path / "out", cfg,
                                runner=worker.run)
        assert row["success"] and row["backend"] == "prefork"
    finally:
        worker.close()
    assert not early.server_dir.exists()


def test_other_arguments_or_a_changed_environment_start_a_new_server(tmp_path, monkeypatch):
    cfg = RenderConfig(tmp_root=str(tmp_path / "tmp"), timeout_s=60)
    assert prestart_prefork(cfg, preload=("json",))
    other = prefork_worker(cfg)  # no preload: not the prestarted one, which stays for a caller that matches
    try:
        assert len(render._PRESTARTED) == 1 and other is not render._PRESTARTED[0]
    finally:
        other.close()
    early = render._PRESTARTED[0]
    monkeypatch.setenv("LANG", "C.UTF-8" if os.environ.get("LANG") != "C.UTF-8" else "POSIX")  # allow-listed
    fresh = prefork_worker(cfg, preload=("json",))
    try:
        assert fresh is not early and not render._PRESTARTED
        assert early.proc is None and not early.server_dir.exists()  # ended, directory removed
        assert fresh.launched_env["LANG"] == os.environ["LANG"]
    finally:
        fresh.close()


def test_servers_no_one_took_are_closed(tmp_path):
    cfg = RenderConfig(tmp_root=str(tmp_path / "tmp"), timeout_s=60)
    assert prestart_prefork(cfg) and prestart_prefork(cfg, preload=("json",))
    servers = list(render._PRESTARTED)
    assert discard_prestarted() == 2 and not render._PRESTARTED
    for s in servers:
        assert s.proc is None and not s.server_dir.exists()
