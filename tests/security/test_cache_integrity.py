"""Caches are written only by trusted code, and every entry carries a tag a script cannot forge (issue #13).

A hostile script once poisoned the render cache (a later clean sample got the poisoner's video with
``cache_hit: true``), flipped an audit cache entry and poisoned the shared TeX SVG cache. The sandbox now hides
those directories; these tests check the second line of defence (``prism_fast/integrity.py``): an entry that
trusted code did not write with the runs_root's key -- edited, forged, copied from another key, or tagged with
another key -- is detected, counted, recomputed and overwritten, and never served. Real files, real renders,
real latex/dvisvgm, real audits.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from prism_fast import fsutil, integrity
from prism_fast.audit.cache import AuditCache, audit_cache_key
from prism_fast.audit.config import AuditConfig
from prism_fast.execute import sandbox, texcache
from prism_fast.execute.cache import RenderCache
from prism_fast.profile import REFERENCE
from prism_fast.video.ocr import FrameOcrCache, OcrEngine, OcrSettings, TextMasker, VideoOcrCacheFile

MATH = textwrap.dedent('''
    from manim import *

    class Eq(Scene):
        def construct(self):
            eq = MathTex(r"E = mc^2", r"\\int_0^1 x\\,dx").to_edge(UP)
            self.play(Write(eq), run_time=0.4)
    ''')
HEAD = "from manim import *\nclass A(Scene):\n    def construct(self):\n"
TINY = HEAD + "        self.play(FadeIn(Square()), run_time=0.3)\n"
OTHER = HEAD + "        self.play(FadeIn(Circle(color=RED)), run_time=0.3)\n"


def _sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _rewrite_json(path: Path, change) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")  # in place, as the attacking script did


# ---------------------------------------------------------------------------------------------------------
# the key and the tags


def test_key_is_created_once_0600_and_agreed_on_by_racing_processes(tmp_path):
    code = "import sys\nfrom prism_fast import integrity\nprint(integrity.load_or_create_key(sys.argv[1]).hex())"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "k")], stdout=subprocess.PIPE, text=True)
             for _ in range(6)]
    keys = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs) and len(keys) == 1
    key_file = tmp_path / "k" / integrity.KEY_NAME
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and key_file.read_bytes().hex() in keys
    assert [p.name for p in (tmp_path / "k").iterdir()] == [integrity.KEY_NAME]  # no temporaries left
    key = bytes.fromhex(keys.pop())
    msg = integrity.message("x", key="k", sha256="0" * 64)
    assert integrity.verify(key, msg, integrity.tag(key, msg))
    assert not integrity.verify(os.urandom(32), msg, integrity.tag(key, msg))
    assert not integrity.verify(key, integrity.message("y", key="k", sha256="0" * 64), integrity.tag(key, msg))
    assert not integrity.verify(key, msg, None) and not integrity.verify(key, msg, "")
    # a truncated key is an error, never silently replaced (that would orphan every entry)
    key_file.write_bytes(b"short")
    with pytest.raises(integrity.IntegrityError):
        integrity.load_or_create_key(tmp_path / "k")


def test_one_key_per_runs_root_for_every_default_cache_dir(tmp_path):
    dot = (tmp_path / "runs" / ".cache").resolve()
    for sub in ("render", "audit", "ocr_frames", "tex/0123abcd"):
        assert integrity.default_key_dir(tmp_path / "runs" / ".cache" / sub) == dot
    assert integrity.default_key_dir(tmp_path / "elsewhere" / "rc") == (tmp_path / "elsewhere").resolve()


# ---------------------------------------------------------------------------------------------------------
# render cache


def _video(path: Path, payload: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(payload)
    return path


def test_render_cache_rejects_tampered_rows_videos_moved_and_foreign_entries(tmp_path):
    root = tmp_path / "runs" / ".cache" / "render"
    cache = RenderCache(root)
    assert (tmp_path / "runs" / ".cache" / integrity.KEY_NAME).exists()
    good_key, evil_key = "aa" * 32, "bb" * 32
    row = {"id": "clean", "success": True, "status": "ok", "error_kind": None, "runtime_sec": 1.5,
           "video_path": str(_video(tmp_path / "v/clean.mp4", b"clean video"))}
    evil = {"id": "evil", "success": True, "status": "ok", "error_kind": None, "runtime_sec": 0.1,
            "video_path": str(_video(tmp_path / "v/evil.mp4", b"EVIL video"))}
    assert cache.put(good_key, row) and cache.put(evil_key, evil)
    hit = cache.get(good_key, tmp_path / "out" / "a.mp4")
    assert hit["cache_hit"] is True and (tmp_path / "out" / "a.mp4").read_bytes() == b"clean video"
    meta = root / good_key[:2] / f"{good_key}.json"
    video = root / good_key[:2] / f"{good_key}.mp4"
    clean_entry = meta.read_bytes()

    # 1. the poisoner's own (legitimately tagged) entry copied over the clean sample's key: json + mp4
    meta.write_bytes((root / evil_key[:2] / f"{evil_key}.json").read_bytes())
    video.write_bytes(b"EVIL video")
    dest = tmp_path / "out" / "b.mp4"
    assert cache.get(good_key, dest) is None and not dest.exists()
    assert cache.integrity_failures == 1

    # 2. the mp4 alone swapped (json intact): the copy is hashed before it is put in place
    meta.write_bytes(clean_entry)
    video.write_bytes(b"EVIL video")
    dest.write_bytes(b"previous")
    assert cache.get(good_key, dest) is None and dest.read_bytes() == b"previous"
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(".")]  # no temporary left behind
    assert cache.integrity_failures == 2

    # 3. a failure row flipped to success, timings edited, the tag kept
    video.write_bytes(b"clean video")
    _rewrite_json(meta, lambda d: d["row"].update(runtime_sec=0.0))
    assert cache.get(good_key, dest) is None
    _rewrite_json(meta, lambda d: d.pop("tag"))  # an untagged (old or forged) entry
    assert cache.get(good_key, dest) is None
    assert cache.integrity_failures == 4

    # 4. an entry tagged with another key (a forger with its own key) is rejected
    foreign = RenderCache(root, integrity_key=os.urandom(32))
    assert foreign.put(good_key, row)
    assert cache.get(good_key, dest) is None and cache.integrity_failures == 5

    # recomputed and overwritten: the next put makes the entry valid again, serving the clean video
    assert cache.put(good_key, row)
    hit = cache.get(good_key, tmp_path / "out" / "c.mp4")
    assert hit is not None and (tmp_path / "out" / "c.mp4").read_bytes() == b"clean video"
    assert {k: v for k, v in hit.items() if k != "video_path"} == {
        **{k: v for k, v in row.items() if k != "video_path"}, "cache_hit": True, "cache_key": good_key}


def test_poisoned_render_cache_entry_is_rerendered_not_served(tmp_path):
    """End to end with real renders: the poisoner's video planted under a clean sample's key (with the
    poisoner's valid tag) yields a fresh render, byte-identical to an uncached one, and a repaired entry."""
    from prism_fast.execute.render import RenderConfig, render_one

    cache_dir = tmp_path / ".cache" / "render"
    cfg = RenderConfig(timeout_s=120, tmp_root=str(tmp_path / "tmp"), cache_dir=str(cache_dir))
    clean = render_one("s1", TINY, tmp_path / "run1", cfg)
    evil = render_one("s2", OTHER, tmp_path / "run1", cfg)
    assert clean["success"] and evil["success"], (clean["error"], evil["error"])
    plain = render_one("s1", TINY, tmp_path / "plain", replace(cfg, cache_dir=None))
    key, ekey = clean["cache_key"], evil["cache_key"]
    for suffix in (".json", ".mp4"):
        (cache_dir / key[:2] / f"{key}{suffix}").write_bytes((cache_dir / ekey[:2] / f"{ekey}{suffix}").read_bytes())

    again = render_one("s1", TINY, tmp_path / "run2", cfg)
    assert again["success"] and again["cache_hit"] is False
    assert _sha(again["video_path"]) == _sha(plain["video_path"]) != _sha(evil["video_path"])
    served = render_one("s1", TINY, tmp_path / "run3", cfg)  # the entry was overwritten with the fresh render
    assert served["cache_hit"] is True and _sha(served["video_path"]) == _sha(plain["video_path"])


# ---------------------------------------------------------------------------------------------------------
# audit cache


def test_flipped_audit_cache_entry_is_reaudited_not_served(tmp_path):
    cfg = AuditConfig()
    cache_dir = tmp_path / ".cache" / "audit"
    work = tmp_path / "work"
    script = HEAD + "        self.play(FadeIn(Square()), FadeIn(Square().shift(0.1*RIGHT)), run_time=0.2)\n"
    key = audit_cache_key(script_text=script, sample_id="a1", audit_cfg=cfg, profile=REFERENCE, env_fingerprint="fp")
    cache = AuditCache(cache_dir)

    from prism_fast.audit.runner import audit_one

    def audit(work_dir: Path) -> dict:
        row = cache.get(key, "a1", work_dir, script)
        if row is None:
            row = audit_one("a1", script, work_dir, cfg, REFERENCE)
            row["audit_cache_hit"] = False
            cache.put(key, row, work_dir / "audits" / "a1" / "audit_report.json")
        return row

    first = audit(work)
    assert first["audit_cache_hit"] is False and first["status"] == "ok", first
    report = (work / "audits" / "a1" / "audit_report.json").read_text(encoding="utf-8")
    assert audit(tmp_path / "w2")["audit_cache_hit"] is True
    entry = cache_dir / key[:2] / f"{key}.json"

    # the attack: flip the verdict (and the report), keep the old tag
    def flip(doc):
        doc["row"].update(visual_structure_pass=1 - int(doc["row"]["visual_structure_pass"]), error_msg="flipped")
        doc["report"] = "{}"
    _rewrite_json(entry, flip)
    third = audit(tmp_path / "w3")
    assert third["audit_cache_hit"] is False and cache.integrity_failures == 1
    assert third["visual_structure_pass"] == first["visual_structure_pass"] and third.get("error_msg") != "flipped"
    assert (tmp_path / "w3" / "audits" / "a1" / "audit_report.json").read_text(encoding="utf-8") == report

    # an entry tagged with another key is rejected too; the recomputed one is served again afterwards
    AuditCache(cache_dir, integrity_key=os.urandom(32)).put(key, {**first, "error_msg": "forged"},
                                                          work / "audits" / "a1" / "audit_report.json")
    assert cache.get(key, "a1", tmp_path / "w4", script) is None and cache.integrity_failures == 2
    assert audit(tmp_path / "w4")["audit_cache_hit"] is False
    fifth = audit(tmp_path / "w5")
    assert fifth["audit_cache_hit"] is True and fifth["visual_structure_pass"] == first["visual_structure_pass"]


# ---------------------------------------------------------------------------------------------------------
# OCR caches


class BrightBoxOcr(OcrEngine):
    """A real, deterministic text detector for synthetic frames: one box around the bright pixels."""

    provider = "cpu"

    def __init__(self):
        self.calls = 0

    def polygons(self, frame_bgr):
        self.calls += 1
        ys, xs = np.nonzero(frame_bgr.max(axis=2) > 128)
        if not len(xs):
            return []
        x0, x1, y0, y1 = int(xs.min()), int(xs.max()), int(ys.min()), int(ys.max())
        return [[[x0, y0], [x1, y0], [x1, y1], [x0, y1]]]


def _frame(x: int) -> np.ndarray:
    f = np.zeros((90, 160, 3), np.uint8)
    f[20:40, x:x + 30] = 255
    return f


def test_tampered_ocr_frame_entry_is_recomputed_not_served(tmp_path):
    frames_dir = tmp_path / "runs" / ".cache" / "ocr_frames"
    settings = OcrSettings()
    engine = BrightBoxOcr()
    m1 = TextMasker(engine, settings, FrameOcrCache(frames_dir))
    truth = m1.polygons_at(0, _frame(10)).polys
    assert engine.calls == 1 and truth == [[[10, 20], [39, 20], [39, 39], [10, 39]]]
    (entry,) = frames_dir.rglob("*.json")

    # a fresh process (empty memory) reuses the persisted entry
    engine2 = BrightBoxOcr()
    assert TextMasker(engine2, settings, FrameOcrCache(frames_dir)).polygons_at(0, _frame(10)).polys == truth
    assert engine2.calls == 0

    # erase the text box (PADVC would count no text), keeping the tag
    _rewrite_json(entry, lambda d: d.update(polys=[]))
    engine3, cache3 = BrightBoxOcr(), FrameOcrCache(frames_dir)
    assert TextMasker(engine3, settings, cache3).polygons_at(0, _frame(10)).polys == truth
    assert engine3.calls == 1 and cache3.integrity_failures == 1

    # an entry written with another key
    FrameOcrCache(frames_dir, integrity_key=os.urandom(32)).put(entry.stem, [])
    engine4, cache4 = BrightBoxOcr(), FrameOcrCache(frames_dir)
    assert TextMasker(engine4, settings, cache4).polygons_at(0, _frame(10)).polys == truth
    assert engine4.calls == 1 and cache4.integrity_failures == 1
    # ... and the recomputed entry (overwritten by engine4's masker) is served again
    engine5 = BrightBoxOcr()
    assert TextMasker(engine5, settings, FrameOcrCache(frames_dir)).polygons_at(0, _frame(10)).polys == truth
    assert engine5.calls == 0


def _legacy_entry(path: Path, kind: str, key: str, body: dict, ikey: bytes, **message_fields) -> None:
    """An entry exactly as the caches wrote it before the shared ContentCache base (issue #16): the tag over
    ``message(kind, key=…, entry=body)`` (render, audit) or the given message fields (OCR frames)."""
    fields = message_fields or {"entry": body}
    doc = {**body, "tag": integrity.tag(ikey, integrity.message(kind, key=key, **fields))}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False, sort_keys=True), encoding="utf-8")


def test_entries_written_before_the_shared_cache_base_are_served_and_untagged_ones_rejected(tmp_path):
    """The render, audit and OCR caches share one base (integrity.ContentCache) since issue #16: their entries and
    tags did not change, so what an older version wrote is still a hit, and an untagged or re-kinded entry is
    still a miss, counted."""
    root = tmp_path / "runs" / ".cache"
    ikey = integrity.load_or_create_key(root)
    key = "cd" * 32
    # render: row + mp4
    render_root = root / "render"
    mp4 = _video(render_root / key[:2] / f"{key}.mp4", b"old video")
    row = {"id": "s", "success": True, "status": "ok", "error_kind": None, "cache_hit": False, "cache_key": key}
    body = {"schema": "prism_fast.render.v1", "row": row, "mp4_sha256": _sha(mp4)}
    _legacy_entry(render_root / key[:2] / f"{key}.json", "render_cache", key, body, ikey)
    rc = RenderCache(render_root)
    hit = rc.get(key, tmp_path / "out" / "s.mp4")
    assert hit is not None and hit["cache_hit"] is True and (tmp_path / "out" / "s.mp4").read_bytes() == b"old video"
    # audit: row + report
    audit_root = root / "audit"
    body = {"schema": "prism_fast.audit.v2", "row": {"id": "s", "audit_success": 1, "audit_cache_hit": False},
            "report": '{"ok": true}'}
    _legacy_entry(audit_root / key[:2] / f"{key}.json", "audit_cache", key, body, ikey)
    ac = AuditCache(audit_root)
    got = ac.get(key, "s", tmp_path / "work", "print(1)\n")
    assert got is not None and got["audit_cache_hit"] is True
    assert (tmp_path / "work" / "audits" / "s" / "audit_report.json").read_text() == '{"ok": true}'
    # OCR frames: the message names the polygons directly
    polys = [[[1, 2], [3, 2], [3, 4], [1, 4]]]
    ocr_root = root / "ocr_frames"
    _legacy_entry(ocr_root / key[:2] / f"{key}.json", "ocr_frame", key, {"polys": polys}, ikey, polys=polys)
    assert FrameOcrCache(ocr_root).get(key) == polys

    # untagged (an older, pre-#13 entry or a forged one): a miss, counted, in each cache
    for path in (render_root, audit_root, ocr_root):
        _rewrite_json(path / key[:2] / f"{key}.json", lambda d: d.pop("tag"))
    rc, ac, oc = RenderCache(render_root), AuditCache(audit_root), FrameOcrCache(ocr_root)
    assert rc.get(key, tmp_path / "out" / "t.mp4") is None and rc.integrity_failures == 1
    assert ac.get(key, "s", tmp_path / "work2", "print(1)\n") is None and ac.integrity_failures == 1
    assert oc.get(key) is None and oc.integrity_failures == 1
    assert not (tmp_path / "out" / "t.mp4").exists() and not (tmp_path / "work2" / "audits").exists()

    # a valid entry of one cache moved into another (same key, same runs_root key): its kind does not match
    ac.put(key, {"id": "s", "audit_success": 1}, tmp_path / "no_report.json")
    (render_root / key[:2] / f"{key}.json").write_bytes((audit_root / key[:2] / f"{key}.json").read_bytes())
    assert AuditCache(audit_root).get(key, "s", tmp_path / "work3", "x") is not None
    moved = RenderCache(render_root)
    assert moved.get(key, tmp_path / "out" / "u.mp4") is None and moved.integrity_failures == 1


def test_per_video_ocr_file_keeps_the_toolkit_format_and_verifies_when_keyed(tmp_path):
    video = tmp_path / "a.mp4"
    video.write_bytes(b"video")
    sig, key = OcrSettings().signature(), os.urandom(32)
    c = VideoOcrCacheFile(tmp_path / "c", video, str(video), sig, integrity_key=key)
    c.put(0, (90, 160), [[[1, 1], [5, 1], [5, 5], [1, 5]]])
    c.flush()
    doc = json.loads(c.path.read_text(encoding="utf-8"))
    assert set(doc) == {"video_path", "frames"}  # the toolkit's format, the tag in a sidecar
    assert VideoOcrCacheFile(tmp_path / "c", video, str(video), sig, integrity_key=key).get(0) is not None
    doc["frames"]["0"]["polys"] = []
    c.path.write_text(json.dumps(doc), encoding="utf-8")
    tampered = VideoOcrCacheFile(tmp_path / "c", video, str(video), sig, integrity_key=key)
    assert tampered.get(0) is None and tampered.integrity_failure
    assert VideoOcrCacheFile(tmp_path / "c", video, str(video), sig, integrity_key=os.urandom(32)).get(0) is None
    # without a key (the default) a toolkit-written file is reused as the spec asks
    assert VideoOcrCacheFile(tmp_path / "c", video, str(video), sig).get(0) is not None


# ---------------------------------------------------------------------------------------------------------
# TeX SVG cache


def _make_spec(argv, cwd):
    return sandbox.SandboxSpec(argv=argv, cwd=cwd, env=sandbox.scrub_env(os.environ, home=cwd), timeout_s=120)


def _compile_and_harvest(tmp_path: Path, cache: Path, expr: str, times: int = 2):
    """What a sample does on a miss (compile, log it), then the parent's harvest; returns (key, stats)."""
    from manim import TexTemplate

    code = TexTemplate().get_texcode_for_expression_in_env(expr, "align*")
    work = tmp_path / f"work_{texcache.manim_tex_hash(code)}"
    tex_dir = work / "media" / "Tex"
    tex_dir.mkdir(parents=True, exist_ok=True)
    tex = tex_dir / f"{texcache.manim_tex_hash(code)}.tex"
    tex.write_text(code, encoding="utf-8")
    for cmd in texcache.compile_commands(tex, "latex", ".dvi"):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    (work / texcache.LOG_NAME).write_text(json.dumps({"event": "miss", "tex": tex.name, "compiler": "latex",
                                                      "format": ".dvi"}) + "\n", encoding="utf-8")
    stats = [texcache.harvest(work, work / "media", cache, sandbox.run_sandboxed, _make_spec) for _ in range(times)]
    return texcache.entry_key(code.encode("utf-8"), "latex", ".dvi"), stats


def _child_lookup(view: Path, expr: str, tmp_path: Path) -> tuple[bytes, list[dict]]:
    """Run the sample-side wrapper (``install``) in a fresh process, build ``MathTex(expr)``; returns the SVG
    manim used and the events the wrapper logged."""
    media = tmp_path / "child_media"
    log_path = tmp_path / "child_log.jsonl"
    log_path.unlink(missing_ok=True)
    code = textwrap.dedent(f"""
        from pathlib import Path
        from manim import config, MathTex
        from prism_fast.execute import texcache
        Path({str(media)!r}).mkdir(parents=True, exist_ok=True)
        config.media_dir = {str(media)!r}
        texcache.install({str(view)!r}, {str(log_path)!r})
        MathTex({expr!r})
        (svg,) = Path({str(media)!r}, "Tex").glob("*.svg")
        Path({str(tmp_path / "child_svg")!r}).write_bytes(svg.read_bytes())
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr.decode(errors="replace")[-3000:]
    served = (tmp_path / "child_svg").read_bytes()
    shutil_rm(media)
    events = [json.loads(line) for line in log_path.read_text().splitlines()] if log_path.exists() else []
    return served, events


def shutil_rm(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def test_tex_cache_entries_reach_a_sample_only_verified(tmp_path):
    cache = tmp_path / "runs" / ".cache" / "tex" / "fp0"
    key, (first, second) = _compile_and_harvest(tmp_path, cache, "y = x^2")
    assert (first.first_seen, second.published) == (1, 1), second.notes
    good_svg = texcache.entry_path(cache, key).read_bytes()
    tag_doc = json.loads(texcache.tag_path(cache, key).read_text())
    assert tag_doc["sha256"] == hashlib.sha256(good_svg).hexdigest()
    assert (tmp_path / "runs" / ".cache" / integrity.KEY_NAME).exists()  # one key per runs_root, outside the cache

    # the sample is given the parent's verified view, never the cache root
    view = texcache.prepare_cache_dir(cache)
    assert view.parent == cache.resolve() / "views" and texcache.view_path(view, key).read_bytes() == good_svg
    manifest = (view / texcache.MANIFEST_NAME).read_text()
    assert f"{texcache.manifest_id(key)} {tag_doc['sha256']}" in manifest
    # nothing in the view names the key: the file is view_name(key), the manifest manifest_id(key), and its svg
    # folders cannot be listed (a script must not enumerate other samples' formulas)
    assert key not in manifest and texcache.view_name(key) not in manifest
    assert not texcache.entry_path(view, key).exists()
    for folder in (view / "svg", texcache.view_path(view, key).parent):
        assert folder.stat().st_mode & 0o777 == texcache.VIEW_DIR_MODE
    served, events = _child_lookup(view, "y = x^2", tmp_path)
    assert served == good_svg and [e["event"] for e in events] == ["hit"]
    # the raw cache root, handed to a sample by mistake, serves nothing
    _svg, events = _child_lookup(cache, "y = x^2", tmp_path)
    assert [e["event"] for e in events] == ["miss"]

    # 1. edited in place after the parent's check (the view links the same file): the sample's own check refuses
    # it and compiles the expression itself
    poisoned = good_svg.replace(b"<g ", b"<g transform='scale(3)' ", 1)
    assert poisoned != good_svg
    texcache.entry_path(cache, key).write_bytes(poisoned)
    served, events = _child_lookup(view, "y = x^2", tmp_path)
    assert served != poisoned and texcache.canonical_svg(served) == texcache.canonical_svg(good_svg)
    assert [e["event"] for e in events] == ["bad_entry", "miss"]

    # 2. a forged entry written over the cache (new SVG + a tag made with another key): the parent keeps it out
    # of the view, counts it, and the sample compiles the expression itself
    fresh_tmp = tmp_path / "forged"
    fresh_tmp.mkdir()
    sha = hashlib.sha256(poisoned).hexdigest()
    svg_path, tag_file = texcache.entry_path(cache, key), texcache.tag_path(cache, key)
    svg_path.unlink()
    fsutil.atomic_write_text(tag_file, json.dumps({"sha256": sha, "tag": integrity.tag(
        os.urandom(32), integrity.message(texcache.TAG_KIND, key=key, sha256=sha))}))
    fsutil.atomic_write_bytes(svg_path, poisoned)
    before = texcache.integrity_failures(cache)
    code = f"""
import json
from prism_fast.execute import texcache
view = texcache.prepare_cache_dir({str(cache)!r})
print(json.dumps([str(view), texcache.integrity_failures({str(cache)!r})]))
"""
    view2, failures = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                check=True, cwd=tmp_path).stdout)
    assert failures == 1 and not texcache.view_path(view2, key).exists()  # a fresh process: never linked
    view = texcache.prepare_cache_dir(cache)
    assert texcache.integrity_failures(cache) == before + 1
    served, events = _child_lookup(view, "y = x^2", tmp_path)
    assert served != poisoned and texcache.canonical_svg(served) == texcache.canonical_svg(good_svg)
    assert "hit" not in [e["event"] for e in events]

    # 3. the sample's miss makes the parent republish the entry over the forged one
    _key, (third,) = _compile_and_harvest(fresh_tmp, cache, "y = x^2", times=1)
    assert third.tampered == 1 and third.published == 1, third.notes
    assert texcache.verify_entry(cache, key, integrity.load_or_create_key(tmp_path / "runs" / ".cache"))[0] is not None
    served, events = _child_lookup(texcache.prepare_cache_dir(cache), "y = x^2", tmp_path)
    assert texcache.canonical_svg(served) == texcache.canonical_svg(good_svg) and events[0]["event"] == "hit"


@pytest.fixture(scope="module")
def prefork(tmp_path_factory):
    from prism_fast.execute.render import RenderConfig, prefork_worker

    root = tmp_path_factory.mktemp("tex_e2e")
    cfg = RenderConfig(timeout_s=300, tmp_root=str(root / "tmp"),
                       tex_cache_dir=str(root / "runs" / ".cache" / "tex" / "fp"))
    worker = prefork_worker(cfg)
    yield root, cfg, worker
    worker.close()


def test_poisoned_tex_cache_is_never_served_to_a_render(prefork):
    """End to end through render_one and the prefork worker: every published entry is replaced by a forged one
    (another expression's SVG with a tag under another key); the next render uses none of them, its video is
    byte-identical to an uncached render, and the entries are republished valid."""
    from prism_fast.execute.render import render_one

    root, cfg, worker = prefork
    cache = Path(cfg.tex_cache_dir)
    rows = [render_one("eq", MATH, root / f"out{k}", cfg, runner=worker.run) for k in range(3)]
    plain = render_one("eq", MATH, root / "plain", replace(cfg, tex_cache_dir=None), runner=worker.run)
    assert all(r["success"] for r in rows) and plain["success"], [r["error"] for r in rows]
    assert rows[2]["tex_cache_hits"] == rows[1]["tex_cache_published"] >= 1
    entries = sorted((cache / "svg").rglob("*.svg"))
    forged_svg = b"<svg xmlns='http://www.w3.org/2000/svg'><path d='M0 0L9 9'/></svg>"
    other = os.urandom(32)
    for svg in entries:
        k = svg.stem
        sha = hashlib.sha256(forged_svg).hexdigest()
        texcache.tag_path(cache, k).write_text(json.dumps({"sha256": sha, "tag": integrity.tag(
            other, integrity.message(texcache.TAG_KIND, key=k, sha256=sha))}))
        svg.write_bytes(forged_svg)  # in place: the same inode the parent's view linked earlier

    after = render_one("eq", MATH, root / "out_after", cfg, runner=worker.run)
    assert after["success"], after["error"]
    assert after["tex_cache_hits"] == 0
    assert _sha(after["video_path"]) == _sha(plain["video_path"])
    key = integrity.load_or_create_key(root / "runs" / ".cache")
    assert all(texcache.verify_entry(cache, svg.stem, key)[0] is not None for svg in entries)  # republished
    again = render_one("eq", MATH, root / "out_again", cfg, runner=worker.run)
    assert again["tex_cache_hits"] == len(entries) and _sha(again["video_path"]) == _sha(plain["video_path"])
