"""A separate audit right after its render takes that render's own TeX compiles along (execute/texcache.py
``own_svgs``; the one-pass hand-off, audit/onepass.py ``render_and_hand_off``): the report and the audit fields equal
those of the same audit without them, the compiles it took are counted (``tex_own_hits``), nothing is left behind,
and a sample audited outside the hand-off -- or another sample -- never sees them."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from prism_fast.audit.config import AuditConfig
from prism_fast.audit.runner import audit_one
from prism_fast.execute import sandbox, texcache, texformat
from prism_fast.profile import REFERENCE
from tests.audit.test_audit_tex_cache import CLEAN

# always_redraw (audited separately: its labels at 60 fps are not the render's 15), three static formulas and one
# label value per frame: test_audit_tex_cache.py's scene, with a wait at the end
SWEEP = CLEAN.rstrip("\n") + "\n        self.wait(0.2)\n"

# another sample, audited separately in the same process after the first hand-off: its own compiles only
OTHER = SWEEP.replace('r"k = "', 'r"j = "').replace("sqrt{2}", "sqrt{3}")

# a script that looks for the own SVGs where the audit child got them (through NumPy, which the TeX cache's gate
# allows) and, if it finds them, puts a square out of bounds (red team): it must find nothing
PROBE = SWEEP.replace('r"k = "', 'r"p = "').replace("        self.wait(0.2)\n", """        self.wait(0.2)
        import numpy as np
        for where in ("../.tmp/tex_own/own.txt", ".tmp/tex_own/own.txt", "../../.tmp/tex_own/own.txt"):
            try:
                found = np.fromfile(where, dtype=np.uint8).size
            except Exception:
                continue
            if found:
                self.add(Square(side_length=2).move_to(RIGHT * 7))
                self.wait(0.2)
""")

FIELDS = ("audit_success", "segment_count", "visual_structure_rate", "visual_structure_pass", "visual_issue_total",
          "visual_issue_breakdown", "error_msg", "status", "scene_errors", "tex_format", "tex_cache_reasons",
          "fast_paths")


def _report(base: Path, sid: str) -> bytes:
    return (base / "audits" / sid / "audit_report.json").read_bytes()


@pytest.mark.slow
def test_separate_audit_takes_its_renders_compiles_and_reports_what_it_would_alone(tmp_path):
    from prism_fast.audit import onepass
    from prism_fast.audit.onepass import render_and_hand_off
    from prism_fast.execute.render import RenderConfig, prefork_worker, render_one
    from prism_fast.pipeline.actors import _Auditor

    cache = str(tmp_path / "texcache")
    cfg = RenderConfig(tex_cache_dir=cache)
    acfg = AuditConfig()
    auditor = _Auditor(acfg, REFERENCE, str(tmp_path / "handoff"), None, cache, True)
    audited: dict[str, dict] = {}

    def separate(sid, script):
        audited[sid] = auditor.audit(sid, script)
        return audited[sid]

    own_base = sandbox.run_root()  # this process's private scratch root (execute/sandbox.py)

    def mine() -> set:  # this process's own dirs (its owner file names it): other test processes render beside it
        def owner(path: Path) -> str | None:
            try:
                return path.with_name(f".{path.name}.owner").read_text()
            except OSError:
                return None
        return {p for p in own_base.glob("tex_own_*") if owner(p) == str(os.getpid())}

    before = mine()
    worker = prefork_worker(cfg, preload=onepass.PRELOAD)
    try:
        rows = {sid: render_and_hand_off(sid, script, tmp_path / "videos", cfg, REFERENCE, worker.run,
                                         acfg.to_dict(), str(tmp_path / "handoff"), separate)
                for sid, script in (("sweep", SWEEP), ("other", OTHER), ("probe", PROBE))}
        # a render whose compiles cannot be kept for its audit (the hand-off's directory is not one any more): its
        # row is the render's, and the audit that follows is told (row tex_own=failed)
        with texcache.own_svgs(tmp_path / "own_base") as kept:
            kept.rmdir()
            kept.write_text("not a directory")
            fresh = SWEEP.replace('r"k = "', 'r"w = "')  # labels no render compiled yet: misses to keep
            lost = render_one("lost", fresh, tmp_path / "lost", cfg, REFERENCE, runner=worker.run)
            state = texcache.own_state()
            kept.unlink()
            kept.mkdir()
        assert lost["success"] and lost["tex_format_compiles"] > 0, lost
        assert state == "failed"
    finally:
        worker.close()
    assert texcache.own_sink() is None  # (the hand-off's directory is gone with it)
    assert not list(Path(tmp_path / "handoff").rglob("tex_own*")), "nothing of the own SVGs is left in the run"
    for sid, script in (("sweep", SWEEP), ("other", OTHER), ("probe", PROBE)):
        assert rows[sid]["success"] and rows[sid]["onepass"] == "ineligible", rows[sid]
        # the same audit alone, with the same TeX cache and format (what the audit stage would run)
        alone = audit_one(sid, script, tmp_path / "alone", acfg, tex_cache_dir=cache, tex_format=True)
        got = audited[sid]
        assert _report(tmp_path / "handoff", sid) == _report(tmp_path / "alone", sid), sid
        assert {f: got.get(f) for f in FIELDS} == {f: alone.get(f) for f in FIELDS}, sid
        assert got["audit_success"] == 1 and got["segment_count"] >= 1, got
        # it took the render's compiles (three static formulas, labels at frames both stepped through) instead of
        # compiling them; the audit alone took none (it compiles the labels the 60 fps stepping adds in both cases)
        assert got["tex_own_hits"] >= 4 and alone["tex_own_hits"] == 0, (got["tex_own_hits"], alone["tex_own_hits"])
        assert got["tex_format_compiles"] + got["tex_own_hits"] >= alone["tex_format_compiles"], (got, alone)
        assert got["tex_format_compiles"] < alone["tex_format_compiles"]
        assert got["tex_own"] == "handed" and alone["tex_own"] is None, (got["tex_own"], alone["tex_own"])
    # a hand-off whose compiles cannot be copied into the audit's scratch (a named pipe among them: copytree refuses
    # it): the audit compiles them itself -- the same report -- and its row says so
    with texcache.own_svgs(tmp_path / "own_base") as own:
        (own / texcache.OWN_MANIFEST).write_text(f"{'0' * 64} {'0' * 64}\n", encoding="ascii")
        os.mkfifo(own / "pipe.svg")
        failed = audit_one("sweep", SWEEP, tmp_path / "failed", acfg, tex_cache_dir=cache, tex_format=True)
    assert failed["tex_own"] == "failed" and failed["tex_own_hits"] == 0, failed
    assert _report(tmp_path / "failed", "sweep") == _report(tmp_path / "alone", "sweep")
    # each hand-off had a directory of its own, removed at its end (the second sample's shared formulas came from the
    # verified cache, published when its render compiled them a second time; its labels from its own render)
    assert not (mine() - before)


def test_own_svgs_keep_only_what_the_log_names_under_manims_own_names(tmp_path):
    """``collect_own`` takes a logged compile only where the ``.tex`` file is named by the hash of its content and
    the source is cacheable; the child serves an own SVG only if its bytes still hash to the recorded sha256."""
    tex_dir = tmp_path / "media" / "Tex"
    tex_dir.mkdir(parents=True)
    source = (texformat.DEFAULT_PREAMBLE + r"\begin{document}" "\n" r"\begin{align*}" "\nx^2\n" r"\end{align*}"
              "\n" r"\end{document}").encode()  # what manim writes for MathTex("x^2")
    name = texcache.manim_tex_hash(source.decode()) + ".tex"
    (tex_dir / name).write_bytes(source)
    (tex_dir / name).with_suffix(".svg").write_bytes(b"<svg/>")
    bad = "0123456789abcdef.tex"  # a name that is not the hash of its content
    (tex_dir / bad).write_bytes(source)
    (tex_dir / bad).with_suffix(".svg").write_bytes(b"<svg>forged</svg>")
    log_path = tmp_path / texcache.LOG_NAME
    log_path.write_text("".join(json.dumps({"event": "miss", "tex": n, "compiler": "latex", "format": ".dvi"}) + "\n"
                                for n in (name, bad, name)), encoding="utf-8")
    with texcache.own_svgs(tmp_path / "tmp") as own:
        assert texcache.own_sink() == own
        n = texcache.collect_own(log_path, tex_dir, own)
        key = texcache.entry_key(source, "latex", ".dvi")
        assert texcache.cacheable(source) and n == 1
        assert sorted(p.name for p in own.iterdir()) == sorted([f"{key}.svg", texcache.OWN_MANIFEST])
        assert (own / texcache.OWN_MANIFEST).read_text().split() == [key, hashlib.sha256(
            b"<svg/>").hexdigest()]
        assert texcache.collect_own(log_path, tex_dir, own) == 0  # each key once
        # a sample's `media` that is a symlink (to files that are not its own) is not followed
        linked = tmp_path / "linked"
        linked.mkdir()
        (linked / "media").symlink_to(tmp_path / "media")
        with texcache.own_svgs(tmp_path / "tmp") as own2:
            assert texcache.collect_own(log_path, linked / "media" / "Tex", own2) == 0
        assert texcache.own_state() == "handed"
        scratch = tmp_path / "scratch"
        copied = texcache.own_dir_for_audit(scratch)
        assert copied is not None and (copied / f"{key}.svg").read_bytes() == b"<svg/>"
        # the child's side: what hashes to the manifest's sha256 is taken, and the directory is gone before the script
        other = "f" * 64
        (copied / f"{other}.svg").write_bytes(b"<svg>edited</svg>")
        with open(copied / texcache.OWN_MANIFEST, "a", encoding="ascii") as f:
            f.write(f"{other} {hashlib.sha256(b'<svg/>').hexdigest()}\n")
        assert texcache._load_own(copied) == {key: b"<svg/>"}
        assert not copied.exists()
    assert not own.exists() and texcache.own_sink() is None
    assert texcache.own_dir_for_audit(tmp_path / "scratch2") is None  # outside a hand-off: nothing
    assert texcache.own_state() is None


def test_own_state_says_when_the_renders_compiles_did_not_reach_its_audit(tmp_path):
    """Row ``tex_own``: ``none`` for a hand-off with nothing compiled, ``failed`` once a copy fails (it stays so for
    that hand-off only), None outside one."""
    with texcache.own_svgs(tmp_path / "tmp") as own:
        assert texcache.own_state() == "none"
        assert texcache.own_dir_for_audit(tmp_path / "s1") is None  # nothing to hand over: no failure either
        assert texcache.own_state() == "none"
        (own / texcache.OWN_MANIFEST).write_text(f"{'a' * 64} {'b' * 64}\n", encoding="ascii")
        os.mkfifo(own / "pipe.svg")  # copytree refuses a named pipe
        assert texcache.own_dir_for_audit(tmp_path / "s2") is None
        assert not (tmp_path / "s2" / ".tmp" / "tex_own").exists()
        assert texcache.own_state() == "failed"
        with texcache.own_svgs(tmp_path / "tmp") as inner:  # a nested hand-off has a state of its own
            assert texcache.own_state() == "none"
            texcache.mark_own_failed(inner)
            assert texcache.own_state() == "failed"
        assert texcache.own_state() == "failed"
    assert texcache.own_state() is None
    with texcache.own_svgs(tmp_path / "tmp"):  # the next hand-off starts clean
        assert texcache.own_state() == "none"
