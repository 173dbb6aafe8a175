"""Scene text boxes (issue #18, execute/textboxes.py): the render records the pixel box of every visible text glyph
of every written frame; PADVC builds its text masks from them.

Acceptance checks on rendered scenes with known text positions:
- moving, fading, scaled, rotated, CJK and MathTex texts: every recorded text box matches the drawn glyphs' pixel
  extent within 1 px, in the renderer's raw frames (non-background pixels) and in the decoded video;
- opacity and z-order: a text under an opaque fill (family order or z-index) is not recorded; a text over one is;
  a text partly outside the frame is clipped;
- through the real path (prefork child, sandbox, trusted hand-off): the sidecar describes every decoded frame,
  the video is byte-identical to a render without the recorder, the one-pass audit still shares the render;
- tampering (static names, a hook replaced at run time, forged/oversized/symlinked records) gives
  ``tampered`` sidecars, and PADVC then falls back to OCR and records why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from prism_fast.execute import textboxes
from prism_fast.execute.render import RenderConfig, render_one
from prism_fast.execute.textboxes import (FORMAT, Plan, SceneBoxes, collect, line_boxes, load_sidecar, sidecar_path,
                                          static_evidence, validate)

ROOT = Path(__file__).resolve().parents[2]
MANIM = str(Path(sys.executable).with_name("manim"))

# Known positions: three texts kept far apart (so that each one's pixels can be cut out of the frame), moving,
# scaled, fading, rotated; CJK and a MathTex with a fraction and a root.
GEOMETRY = '''from manim import *

class Geometry(Scene):
    def construct(self):
        t = Text("Moving text", font_size=36).move_to(UP * 2.6 + LEFT * 3.5)
        m = MathTex(r"\\\\frac{a^2+b^2}{c} = \\\\sqrt{x}", font_size=40).move_to(DOWN * 1.2 + RIGHT * 3)
        z = Text("中文标签", font_size=30).move_to(DOWN * 2.8 + LEFT * 4.5)
        self.add(t)
        self.play(t.animate.shift(RIGHT * 5), FadeIn(m), run_time=0.6)
        self.play(m.animate.scale(1.5), FadeIn(z), run_time=0.6)
        self.play(FadeOut(t), Rotate(z, PI / 6), run_time=0.6)
        self.wait(0.2)
'''

# Opacity and z-order: "hidden" lies under an opaque square added after it; "low" has a lower z-index than the
# opaque square added before it; "front" is drawn over an opaque square; "Edge text" leaves the frame on the right.
OCCLUSION = '''from manim import *

class Occlusion(Scene):
    def construct(self):
        hidden = Text("hidden", font_size=30).move_to(LEFT * 4 + UP * 1.5)
        cover = Square(2.5, fill_opacity=1, fill_color=BLUE, stroke_width=0).move_to(LEFT * 4 + UP * 1.5)
        lid = Square(2.5, fill_opacity=1, fill_color=RED, stroke_width=0).move_to(LEFT * 1 + DOWN * 2).set_z_index(2)
        low = Text("low", font_size=30).move_to(LEFT * 1 + DOWN * 2)
        back = Square(2.5, fill_opacity=1, fill_color=GREEN, stroke_width=0).move_to(RIGHT * 3 + UP * 1.5)
        front = Text("front", font_size=30).move_to(RIGHT * 3 + UP * 1.5)
        edge = Text("Edge text", font_size=40).move_to(RIGHT * 7.0 + DOWN * 3.2)
        self.add(hidden, cover, lid, low, back, front, edge)
        self.play(edge.animate.shift(LEFT * 0.5), run_time=0.4)
'''

# Camera transforms: a moving/zooming camera frame, and a 3D camera (a text placed in 3D, one fixed in the frame).
CAMERAS = '''from manim import *

class Zoom(MovingCameraScene):
    def construct(self):
        t = Text("Zoom me", font_size=30).move_to(LEFT * 2)
        m = MathTex(r"e^{i\\pi}+1=0").move_to(RIGHT * 3 + DOWN * 2)
        self.add(t, m)
        self.play(self.camera.frame.animate.scale(0.6).move_to(LEFT * 1.5), run_time=0.6)
        self.wait(0.2)

class Three(ThreeDScene):
    def construct(self):
        self.set_camera_orientation(phi=60 * DEGREES, theta=-45 * DEGREES)
        title = Text("Fixed title", font_size=30).to_corner(UL)
        self.add_fixed_in_frame_mobjects(title)
        self.add(Text("in 3D", font_size=30).move_to(RIGHT * 2))
        self.play(FadeIn(title), run_time=0.4)
        self.wait(0.2)
'''

HARNESS = r'''
import json, os, sys
import numpy as np
scene_file, scene, record, frames_out = sys.argv[1:5]
sys.argv = ["manim", "-ql", scene_file, scene, "--media_dir", "media", "--disable_caching", "--progress_bar", "none"]
from manim.scene.scene_file_writer import SceneFileWriter
frames = []
orig = SceneFileWriter.write_frame
def write_frame(self, frame, num_frames=1):
    out = orig(self, frame, num_frames)
    for _ in range(num_frames):
        frames.append(np.asarray(frame)[..., :3].max(axis=2))
    return out
SceneFileWriter.write_frame = write_frame   # before the recorder: it wraps this capture like manim's own method
os.environ["PRISM_FAST_TEXTBOXES"] = json.dumps({"file": record, "nonce": "harness"})
from prism_fast.execute import textboxes
textboxes.install_from_env()
from manim.__main__ import main
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
np.save(frames_out, np.stack(frames))
'''


def _raw_render(tmp: Path, source: str, scene: str) -> tuple[dict, np.ndarray]:
    """Render in a plain subprocess with the recorder and a capture of the renderer's raw frames (no encoding)."""
    (tmp / "scene.py").write_text(source, encoding="utf-8")
    (tmp / "harness.py").write_text(HARNESS, encoding="utf-8")
    (tmp / "manim.cfg").write_text("[CLI]\nnotify_outdated_version = False\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "harness.py", "scene.py", scene, str(tmp / "rec.json"), str(tmp / "f.npy")],
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((tmp / "rec.json").read_text())
    return doc, np.load(tmp / "f.npy")


def _frame_contents(doc: dict) -> list:
    out = []
    for cid, n in doc["runs"]:
        out += [doc["contents"][cid] if cid >= 0 else []] * n
    return out


def _union(boxes) -> tuple[int, int, int, int]:
    b = np.asarray(boxes)
    return int(b[:, 0].min()), int(b[:, 1].min()), int(b[:, 2].max()), int(b[:, 3].max())


def _drawn_extent(mask: np.ndarray, box, margin: int = 6):
    """The bounding box of the drawn pixels in a window of ``margin`` px around ``box``."""
    x0, y0, x1, y1 = box
    X0, Y0 = max(x0 - margin, 0), max(y0 - margin, 0)
    ys, xs = np.nonzero(mask[Y0:y1 + margin + 1, X0:x1 + margin + 1])
    if not len(xs):
        return None
    return int(xs.min() + X0), int(ys.min() + Y0), int(xs.max() + X0), int(ys.max() + Y0)


def _check_owner_extents(contents: list, masks, min_alpha: float = 0.0) -> dict:
    """Each recorded text (the union of its glyph boxes) against the drawn pixels around it; every drawn pixel
    lies in some recorded text (these scenes draw nothing else). Returns the error histogram."""
    hist: dict[int, int] = {}
    for i, (owners, mask) in enumerate(zip(contents, masks)):
        covered = np.zeros_like(mask, dtype=bool)
        for kind, alpha, boxes in owners:
            box = _union(boxes)
            covered[max(box[1] - 1, 0):box[3] + 2, max(box[0] - 1, 0):box[2] + 2] = True
            if alpha <= min_alpha:
                continue
            got = _drawn_extent(mask, box)
            assert got is not None, (i, kind, alpha, box)
            err = max(abs(a - b) for a, b in zip(got, box))
            assert err <= 1, (i, kind, alpha, box, got)
            hist[err] = hist.get(err, 0) + 1
        if min_alpha == 0.0:
            assert not (mask & ~covered).any(), f"frame {i}: drawn pixels outside every recorded text"
    return hist


@pytest.fixture(scope="module")
def geometry_raw(tmp_path_factory):
    return _raw_render(tmp_path_factory.mktemp("geometry_raw"), GEOMETRY, "Geometry")


@pytest.fixture(scope="module")
def occlusion_raw(tmp_path_factory):
    return _raw_render(tmp_path_factory.mktemp("occlusion_raw"), OCCLUSION, "Occlusion")


@pytest.mark.slow
def test_boxes_match_the_drawn_glyphs_in_raw_frames(geometry_raw):
    doc, frames = geometry_raw
    assert doc["evidence"] == [] and doc["frames"] == len(frames) == doc["encoded_frames"]
    contents = _frame_contents(doc)
    kinds = {o[0] for c in contents for o in c}
    assert kinds == {"text", "tex"}, kinds
    hist = _check_owner_extents(contents, frames > 0)
    assert sum(hist.values()) > 40 and set(hist) <= {0, 1}
    # the cases the scene is made of really occur
    alphas = [o[1] for c in contents for o in c if o[0] == "tex"]
    assert min(alphas) < 0.2 and max(alphas) == 1.0              # MathTex fading in
    assert any(o[1] < 0.5 for c in contents for o in c if o[0] == "text")   # FadeOut of the moving text
    widths = [_union(o[2])[2] - _union(o[2])[0] for c in contents for o in c if o[0] == "tex"]
    assert max(widths) > 1.4 * min(widths)                        # scaled
    xs = [_union(o[2])[0] for c in contents for o in c if o[0] == "text" and len(o[2]) == 10]
    assert max(xs) - min(xs) >= 290                               # moved 5 units = 300 px ("Moving text": 10 glyphs)
    cjk = [o for c in contents for o in c if o[0] == "text" and len(o[2]) == 4]
    assert cjk and max(_union(o[2])[3] - _union(o[2])[1] for o in cjk) > \
        min(_union(o[2])[3] - _union(o[2])[1] for o in cjk) + 10     # rotated: taller


@pytest.mark.slow
def test_opacity_z_order_and_clipping(occlusion_raw):
    doc, frames = occlusion_raw
    contents = _frame_contents(doc)
    assert doc["evidence"] == [] and len(contents) == len(frames)
    clipped = 0
    for owners, frame in zip(contents, frames):
        # "front" and "Edge text" only ("hidden" and "low" are covered); of "Edge text", the glyphs inside the frame
        assert len(owners) == 2, owners
        edge = max(owners, key=lambda o: _union(o[2])[2])
        assert 0 < len(edge[2]) < 8
        box = _union(edge[2])
        assert box[2] <= 853
        clipped += box[2] == 853      # a glyph across the frame's right edge, clipped to it
        got = _drawn_extent(frame > 0, box)
        assert max(abs(a - b) for a, b in zip(got, box)) <= 1
        front = next(o for o in owners if o is not edge)
        assert len(front[2]) == 5
        fb = _union(front[2])
        on_green = (np.abs(frame.astype(int) - int(frame[fb[1] - 8, fb[0] - 8])) > 0)  # differs from the square
        got = _drawn_extent(on_green, fb, margin=4)
        assert max(abs(a - b) for a, b in zip(got, fb)) <= 1
    assert clipped >= 2


@pytest.mark.slow
@pytest.mark.parametrize("scene", ["Zoom", "Three"])
def test_boxes_follow_the_camera(tmp_path, scene):
    doc, frames = _raw_render(tmp_path, CAMERAS, scene)
    contents = _frame_contents(doc)
    assert doc["evidence"] == [] and len(contents) == len(frames)
    hist = _check_owner_extents(contents, frames > 0)
    assert set(hist) <= {0, 1} and sum(hist.values()) >= len(frames)
    if scene == "Zoom":   # the zoom makes the text larger on screen
        heights = [_union(o[2])[3] - _union(o[2])[1] for c in contents for o in c if o[0] == "text"]
        assert max(heights) > 1.5 * min(heights)


def test_bezier_bounds_are_the_curve_extrema():
    """The box of an outline is the extent of its cubic curves, not of their control points (which overshoot)."""
    pts = np.array([[0, 0, 0], [0, 2, 0], [2, 2, 0], [2, 0, 0]], dtype=float)   # an arch: handles at y=2
    lo, hi = textboxes._bounds([pts], True, np)
    t = np.linspace(0, 1, 100001)[:, None]
    curve = (1 - t) ** 3 * pts[0] + 3 * (1 - t) ** 2 * t * pts[1] + 3 * (1 - t) * t ** 2 * pts[2] + t ** 3 * pts[3]
    assert np.allclose(lo[0], curve[:, :2].min(axis=0)) and np.allclose(hi[0], curve[:, :2].max(axis=0), atol=1e-9)
    assert hi[0][1] == pytest.approx(1.5)


def test_line_boxes_group_glyphs_into_text_lines():
    line1 = [(10, 10, 20, 30), (22, 14, 30, 30), (32, 10, 40, 34)]        # a descender: still one line
    line2 = [(10, 40, 20, 60), (22, 40, 30, 60)]
    assert line_boxes(line1 + line2) == [(10, 10, 40, 34), (10, 40, 30, 60)]
    frac = [(10, 10, 30, 25), (8, 28, 32, 28), (12, 31, 28, 46)]           # numerator, bar, denominator
    assert line_boxes(frac) == [(8, 10, 32, 28), (12, 31, 28, 46)]       # the bar joins the nearest line
    far = [(10, 10, 20, 30), (200, 10, 210, 30)]                          # a gap of 9 line heights: two boxes
    assert line_boxes(far) == [(10, 10, 20, 30), (200, 10, 210, 30)]
    sup = [(10, 20, 20, 40), (21, 12, 26, 24)]                            # a superscript overlaps its base
    assert line_boxes(sup) == [(10, 12, 26, 40)]


def _doc(**over):
    doc = {"format": FORMAT, "nonce": "n", "pixel_width": 854, "pixel_height": 480, "frames": 3,
           "contents": [[["text", 1.0, [[1, 2, 3, 4]]]], []], "runs": [[0, 2], [1, 1]], "evidence": [],
           "stats": {"record_sec": 0.1}}
    doc.update(over)
    return doc


@pytest.mark.parametrize("change,why", [
    ({"nonce": "other"}, "nonce"), ({"format": "x"}, "format"), ({"frames": 4}, "frame count"),
    ({"contents": [[["text", 1.0, [[1, 2, 900, 4]]]], []]}, "box bounds"),
    ({"contents": [[["text", 1.0, [[3, 2, 1, 4]]]], []]}, "box bounds"),
    ({"contents": [[["script", 1.0, [[1, 2, 3, 4]]]], []]}, "owner"),
    ({"contents": [[["text", 0, [[1, 2, 3, 4]]]], []]}, "owner"),
    ({"contents": [[["text", 1.0, [[1, 2, 3.5, 4]]]], []]}, "box"),
    ({"runs": [[0, 2], [5, 1]]}, "run"), ({"runs": [[0, 2], [1, 0], [1, 1]]}, "run"),
    ({"evidence": "none"}, "evidence"),
])
def test_validation_rejects_forged_records(change, why):
    assert validate(_doc(), "n")["frames"] == 3
    with pytest.raises(textboxes.RecordError, match=why):
        validate(_doc(**change), "n")


def test_static_evidence():
    assert static_evidence("from manim import *\nclass A(Scene):\n    def construct(self):\n        pass\n") == []
    assert "attribute:update_frame" in static_evidence("x = self.renderer.update_frame\n")
    assert "attribute:write_frame" in static_evidence("import manim\nmanim.SceneFileWriter.write_frame = None\n")
    assert "import:prism_fast.execute.textboxes" in static_evidence("import prism_fast.execute.textboxes\n")
    assert "string:PRISM_FAST" in static_evidence("import os\nos.environ.get('PRISM_FAST_TEXTBOXES')\n")
    assert static_evidence("print('update_frame'\n")   # unparsable: the raw text is searched


def _fake_video(tmp_path: Path, name: str = "v.mp4", payload: bytes = b"video bytes") -> Path:
    v = tmp_path / "videos" / name
    v.parent.mkdir(parents=True, exist_ok=True)
    v.write_bytes(payload)
    return v


def test_collect_hands_off_a_valid_record_and_flags_forgeries(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    video = _fake_video(tmp_path)
    plan = Plan(str(work / ".tb_x.json"), "n")
    (work / ".tb_x.json").write_text(json.dumps(_doc()))
    doc = collect(plan, video, work)
    assert doc["status"] == "ok" and doc["runs"] == [[0, 2], [1, 1]]
    boxes, why = load_sidecar(video)
    assert why == "" and boxes.polygons(1) == [[[1, 2], [3, 2], [3, 4], [1, 4]]] and boxes.polygons(2) == []
    # forged (wrong nonce), garbage, a symlink planted at the record's path, too large, absent
    (work / ".tb_x.json").write_text(json.dumps(_doc(nonce="guess")))
    assert collect(plan, video, work)["status"] == "tampered"
    assert load_sidecar(video)[1].startswith("scene_masks_tampered: record fails validation: nonce")
    (work / ".tb_x.json").write_text("{not json")
    assert collect(plan, video, work)["status"] == "tampered"
    os.unlink(work / ".tb_x.json")
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(_doc()))
    os.symlink(secret, work / ".tb_x.json")
    assert collect(plan, video, work)["status"] == "tampered"
    os.unlink(work / ".tb_x.json")
    (work / ".tb_x.json").write_text(json.dumps(_doc()))
    assert collect(plan, video, work, max_bytes=10)["status"] == "tampered"
    os.unlink(work / ".tb_x.json")
    assert collect(plan, video, work)["status"] == "missing"
    # the child's own evidence
    (work / ".tb_x.json").write_text(json.dumps(_doc(evidence=["tamper:hook_replaced:CairoRenderer.update_frame"])))
    assert collect(plan, video, work)["status"] == "tampered"
    (work / ".tb_x.json").write_text(json.dumps(_doc(evidence=["unsupported:write_without_capture"])))
    assert collect(plan, video, work)["status"] == "unsupported"
    assert load_sidecar(video)[1].startswith("scene_masks_unsupported")
    # static evidence: nothing was recorded
    assert collect(Plan(None, None, ["static:name:update_frame"]), video, work)["status"] == "tampered"
    # a sidecar is bound to its video's bytes
    (work / ".tb_x.json").write_text(json.dumps(_doc()))
    collect(plan, video, work)
    video.write_bytes(b"another render")
    assert load_sidecar(video)[1].startswith("scene_masks_stale")
    assert collect(None, video, work) == {"status": "off"} and not sidecar_path(video).exists()


def test_render_cache_carries_the_sidecar(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    video = _fake_video(tmp_path)
    (work / ".tb_x.json").write_text(json.dumps(_doc()))
    collect(Plan(str(work / ".tb_x.json"), "n"), video, work)
    cache = tmp_path / "cache" / "render"
    assert textboxes.cache_store(cache, "ab" * 32, video)
    other = _fake_video(tmp_path, "w.mp4")          # the same bytes, as a cache hit copies them
    assert textboxes.cache_restore(cache, "ab" * 32, other) and load_sidecar(other)[1] == ""
    changed = _fake_video(tmp_path, "x.mp4", b"other bytes")
    assert not textboxes.cache_restore(cache, "ab" * 32, changed)
    stored = cache / "ab" / ("ab" * 32 + textboxes.SIDECAR_SUFFIX)
    stored.write_text(stored.read_text().replace('"text"', '"tex"'))   # edited: its tag no longer verifies
    assert not textboxes.cache_restore(cache, "ab" * 32, other) and not sidecar_path(other).exists()


def test_scene_boxes_frame_lookup():
    rec = validate(_doc(frames=6, runs=[[0, 2], [-1, 1], [1, 3]], evidence=[]), "n")
    sb = SceneBoxes(rec)
    assert [sb.content_id(i) for i in range(6)] == [0, 0, -1, 1, 1, 1]
    assert sb.polygons(0, pad=2) == [[[0, 0], [5, 0], [5, 6], [0, 6]]]
    assert sb.polygons(0, min_opacity=1.0) == []
    with pytest.raises(IndexError):
        sb.content_id(6)


# --- through the real render path -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def prefork(tmp_path_factory):
    from prism_fast.execute.render import prefork_worker

    root = Path(tempfile.mkdtemp(prefix="tb", dir="/tmp"))
    cfg = RenderConfig(manim_bin=MANIM, tmp_root=str(root), timeout_s=180)
    worker = prefork_worker(cfg)
    yield cfg, worker, tmp_path_factory.mktemp("tb_runs")
    worker.close()
    shutil.rmtree(root, ignore_errors=True)


def _decoded_gray(video: Path) -> list[np.ndarray]:
    cap = cv2.VideoCapture(str(video))
    out = []
    while True:
        ok, frame = cap.read()
        if not ok:
            return out
        out.append(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY))


@pytest.mark.slow
def test_sandboxed_render_hands_off_boxes_of_every_decoded_frame(prefork, geometry_raw):
    from prism_fast.audit.config import AuditConfig
    from prism_fast.audit.onepass import render_with_onepass
    from prism_fast.profile import REFERENCE

    cfg, worker, base = prefork
    row = render_one("GEO", GEOMETRY, base / "on", cfg, runner=worker.run)
    assert row["success"] and row["backend"] == "prefork" and row["sandbox"] in ("namespaces", "unsafe")
    video = Path(row["video_path"])
    boxes, why = load_sidecar(video)
    assert why == ""
    gray = _decoded_gray(video)
    assert boxes.frames == len(gray) == geometry_raw[0]["frames"]
    doc = json.loads(sidecar_path(video).read_text())
    assert (doc["contents"], doc["runs"]) == (geometry_raw[0]["contents"], geometry_raw[0]["runs"])  # = the raw run
    # the decoded video (H.264: a gray threshold of 30 separates glyphs from codec noise) within 1 px too
    hist = _check_owner_extents(_frame_contents(doc), [g > 30 for g in gray], min_alpha=0.5)
    assert set(hist) <= {0, 1} and sum(hist.values()) > 30
    # the recorder changes nothing in the video
    off = render_one("GEO", GEOMETRY, base / "off", replace(cfg, text_boxes=False), runner=worker.run)
    assert Path(off["video_path"]).read_bytes() == video.read_bytes()
    assert not sidecar_path(off["video_path"]).exists()
    # with the one-pass audit in the same child: still shared, same boxes
    one = render_with_onepass("GEO", GEOMETRY, base / "onepass", cfg, REFERENCE, None, worker.run,
                              AuditConfig().to_dict())
    assert one["onepass"] == "shared", one["onepass_reasons"]
    assert Path(one["video_path"]).read_bytes() == video.read_bytes()
    assert json.loads(sidecar_path(one["video_path"]).read_text())["runs"] == doc["runs"]


TAMPER_STATIC = '''from manim import *

class T(Scene):
    def construct(self):
        self.renderer.update_frame(self)
        self.play(FadeIn(Text("static")), run_time=0.2)
'''

TAMPER_RUNTIME = '''from manim import *
import manim.renderer.cairo_renderer as cr

name = "update_" + "fr" + "ame"
real = cr.CairoRenderer.__dict__[name]
setattr(cr.CairoRenderer, name, lambda *a, **k: real(*a, **k))

class T(Scene):
    def construct(self):
        self.play(FadeIn(Text("runtime")), run_time=0.2)
'''


@pytest.mark.slow
def test_tampering_scripts_fall_back_to_ocr(prefork):
    from prism_fast.metrics.padvc import compute_padvc_details, finish_ok_row, PadvcParams
    from prism_fast.video.ocr import OcrEngine, OcrSettings, TextMasker

    class CountingEngine(OcrEngine):
        name = "count"

        def __init__(self):
            self.calls = 0

        def polygons(self, frame):
            self.calls += 1
            return []

    class _Pvd:
        pvd_raw = 2

    cfg, worker, base = prefork
    settings = OcrSettings(backend="scene")
    for sid, src, evidence in (("TS", TAMPER_STATIC, "static:attribute:update_frame"),
                               ("TR", TAMPER_RUNTIME, "tamper:hook_replaced:CairoRenderer.update_frame")):
        row = render_one(sid, src, base / "tamper", cfg, runner=worker.run)
        assert row["success"], row["error"]
        doc = json.loads(sidecar_path(row["video_path"]).read_text())
        assert doc["status"] == "tampered" and evidence in doc["detail"], doc
        engine = CountingEngine()
        details = compute_padvc_details(row["video_path"], _Pvd, TextMasker(engine, settings))
        assert details["_mask_source"] == "ocr" and engine.calls > 0
        assert details["_mask_source_detail"].startswith("scene_masks_tampered")
        out = finish_ok_row({"id": sid, "visual_structure_pass": 1}, details, PadvcParams(-1.0, 1.0))
        assert out["mask_source"] == "ocr" and out["mask_source_detail"].startswith("scene_masks_tampered")


def test_text_like_classes():
    from manim import (Brace, Code, DecimalNumber, Integer, MarkupText, MathTex, Paragraph, Square, Tex, Text, Title,
                       VMobjectFromSVGPath)

    t = textboxes._Types()
    kinds = {cls: t.kind_of(cls) for cls in (Text, MarkupText, Paragraph, Code, MathTex, Tex, Title, DecimalNumber,
                                              Integer, Square)}
    assert kinds == {Text: "text", MarkupText: "markup", Paragraph: "paragraph", Code: "code", MathTex: "tex",
                     Tex: "tex", Title: "tex", DecimalNumber: "number", Integer: "number", Square: None}
    assert t.svg_types(VMobjectFromSVGPath) == (False, True)   # a loose glyph path can be a piece of a text
    assert t.svg_types(Brace) == (False, False)                # a brace is an SVG path, never a glyph


TINY_TEXT = '''from manim import *

class Tiny(Scene):
    def construct(self):
        self.play(FadeIn(Text("cached")), run_time=0.2)
'''


@pytest.mark.slow
def test_render_cache_hit_brings_its_text_boxes(prefork):
    cfg, worker, base = prefork
    cached = replace(cfg, cache_dir=str(base / "render_cache"))
    first = render_one("TINY", TINY_TEXT, base / "c1", cached, runner=worker.run)
    assert first["success"] and not first["cache_hit"] and load_sidecar(first["video_path"])[1] == ""
    hit = render_one("TINY", TINY_TEXT, base / "c2", cached, runner=worker.run)
    assert hit["cache_hit"] and load_sidecar(hit["video_path"])[1] == ""
    assert sidecar_path(hit["video_path"]).read_bytes() == sidecar_path(first["video_path"]).read_bytes()
    for stale in (base / "render_cache").rglob("*" + textboxes.SIDECAR_SUFFIX):
        stale.unlink()                                   # an entry from before text boxes existed
    again = render_one("TINY", TINY_TEXT, base / "c3", cached, runner=worker.run)
    assert not again["cache_hit"] and load_sidecar(again["video_path"])[1] == ""   # rendered again, boxes back
    assert render_one("TINY", TINY_TEXT, base / "c4", cached, runner=worker.run)["cache_hit"]
