"""A one-pass render that the observers may have changed is rendered again without them, and the observed run's
success must leave no trace: not its video, not its render-cache entry (audit/onepass.py ``_render_plain_again``).

The script's own Mobject method is called by the audit's snapshots only, so the observed render succeeds where
the plain one fails (exit status 1, a cacheable failure) or hangs until its timeout (not cacheable)."""

from __future__ import annotations

import pytest

from prism_fast.audit import onepass
from prism_fast.audit.config import AuditConfig
from prism_fast.audit.onepass import render_with_onepass
from prism_fast.execute.cache import RenderCache
from prism_fast.execute.render import RenderConfig, prefork_worker, render_one
from prism_fast.profile import REFERENCE

SCRIPT = '''
from manim import *


class Probe(Square):
    calls = 0

    def get_all_points(self):
        Probe.calls += 1
        return super().get_all_points()


class ProbeScene(Scene):
    def construct(self):
        self.add(Probe())
        self.wait(0.2)
        self.wait(0.2)
        if Probe.calls == 0:
            {on_plain}
'''
FAILS = SCRIPT.format(on_plain='raise RuntimeError("no snapshot called get_all_points")')
HANGS = SCRIPT.format(on_plain="while True:\n                pass")   # (an import would make it ineligible)


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    base = tmp_path_factory.mktemp("render_again")
    cfg = RenderConfig(cache_dir=str(base / "cache"), timeout_s=10)
    worker = prefork_worker(cfg, preload=onepass.PRELOAD)
    acfg = AuditConfig().to_dict()
    try:
        return {
            "base": base, "cfg": cfg,
            "plain": render_one("S-plain", FAILS, base / "plain", RenderConfig(), runner=worker.run),
            "fails": render_with_onepass("S-fails", FAILS, base / "op", cfg, REFERENCE, None, worker.run, acfg),
            "hangs": render_with_onepass("S-hangs", HANGS, base / "op", cfg, REFERENCE, None, worker.run, acfg),
        }
    finally:
        worker.close()


def _cache_files(base, key):
    return sorted(p.name for p in (base / "cache").rglob(f"{key}*"))


def test_the_script_fails_in_a_plain_render(rows):
    assert not rows["plain"]["success"] and rows["plain"]["error_kind"] == "exit_nonzero"
    assert "no snapshot called get_all_points" in rows["plain"]["error"]


def test_a_failed_plain_render_replaces_the_observed_success_in_the_cache(rows):
    row, base = rows["fails"], rows["base"]
    assert row["onepass"] == "fallback" and row["manim_executions"] == 2
    assert row["onepass_reasons"][:2] == ["render_changed", "script_mobject_method:Probe.get_all_points"]
    assert not row["success"] and row["error_kind"] == "exit_nonzero"
    assert "no snapshot called get_all_points" in row["error"]
    assert not (base / "op" / "videos" / "S-fails.mp4").exists()
    key = row["cache_key"]
    assert f"{key}.json" in _cache_files(base, key) and f"{key}.mp4" not in _cache_files(base, key)
    cached = RenderCache(rows["cfg"].cache_dir).get(key, base / "restored.mp4")
    assert cached is not None and not cached["success"] and cached["error_kind"] == "exit_nonzero"
    assert not (base / "restored.mp4").exists()


def test_a_plain_render_that_cannot_be_cached_removes_the_observed_entry(rows):
    row, base = rows["hangs"], rows["base"]
    assert row["onepass"] == "fallback" and row["timed_out"] and not row["success"]
    assert not (base / "op" / "videos" / "S-hangs.mp4").exists()
    key = row["cache_key"]
    assert not any(name in _cache_files(base, key) for name in (f"{key}.json", f"{key}.mp4"))
    assert RenderCache(rows["cfg"].cache_dir).get(key, base / "restored2.mp4") is None
