"""PADVC with scene text masks (issue #18): the ``scene`` backend takes E_text / E_geo / S masks from the render's
text-box sidecar, falls back to OCR (recorded) where the sidecar is missing, tampered, stale or does not describe
the decoded video, and is what ``improved`` selects by default; ``reference`` keeps OCR."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from prism_fast.execute.textboxes import FORMAT, Plan, collect, sidecar_path
from prism_fast.metrics.padvc import (PadvcConfig, PadvcParams, compute_padvc_details, finish_ok_row,
                                      ocr_settings_for_profile)
from prism_fast.profile import IMPROVED, REFERENCE
from prism_fast.video.ocr import OcrEngine, OcrSettings, SceneTextEngine, TextMasker, make_ocr_engine

BAR = (20, 8, 99, 15)   # the green "text" bar, inclusive pixel box


class GreenBoxEngine(OcrEngine):
    """Stand-in OCR: one box per connected pure-green region (exact on FFV1 clips); counts its calls."""

    name = "green"

    def __init__(self):
        self.calls = 0

    def polygons(self, frame_bgr):
        self.calls += 1
        green = ((frame_bgr[..., 1] == 255) & (frame_bgr[..., 0] == 0) & (frame_bgr[..., 2] == 0)).astype(np.uint8)
        _, _, stats, _ = cv2.connectedComponentsWithStats(green, connectivity=8)
        return [[[int(x), int(y)], [int(x + w - 1), int(y)], [int(x + w - 1), int(y + h - 1)], [int(x), int(y + h - 1)]]
                for x, y, w, h, _ in stats[1:]]


class _Pvd:
    pvd_raw = 4


def _bar_on(t: int) -> bool:
    return 5 <= t < 17 or t >= 30


def _clip(n: int = 40, h: int = 96, w: int = 256) -> list[np.ndarray]:
    frames, x = [], 10
    for t in range(n):
        f = np.zeros((h, w, 3), np.uint8)
        if t in range(3, 9) or t in range(20, 27):
            x += 10
        f[40:76, x:x + 36] = (230, 230, 230)
        if _bar_on(t):
            f[BAR[1]:BAR[3] + 1, BAR[0]:BAR[2] + 1] = (0, 255, 0)
        frames.append(f)
    return frames


def _video(path: Path, frames) -> Path:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"FFV1"), 15, (frames[0].shape[1], frames[0].shape[0]))
    for f in frames:
        writer.write(f)
    writer.release()
    return path


def _record(n: int, h: int = 96, w: int = 256) -> dict:
    """What the render would record for the clip: the bar (one glyph of one text) where it is shown."""
    runs = []
    for t in range(n):
        cid = 0 if _bar_on(t) else 1
        if runs and runs[-1][0] == cid:
            runs[-1][1] += 1
        else:
            runs.append([cid, 1])
    return {"format": FORMAT, "nonce": "n", "pixel_width": w, "pixel_height": h, "frames": n,
            "contents": [[["text", 1.0, [list(BAR)]]], []], "runs": runs, "evidence": [], "stats": {}}


def _hand_off(tmp_path: Path, video: Path, record: dict) -> None:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / ".tb_rec.json").write_text(json.dumps(record))
    assert collect(Plan(str(work / ".tb_rec.json"), "n"), video, work)["status"] == "ok"


@pytest.fixture
def clip(tmp_path):
    return _video(tmp_path / "clip.avi", _clip())


SAME_KEYS = ("padvc_raw", "sampled_text_energy_series", "frame_diff_series", "events", "event_energy_details",
             "segment_boundary_details", "max_raw_text_energy", "animation_segment_count", "text_peak_frame_index",
             "geo_evolution_sum_p")


def _strip(d: dict, key: str):
    """Compare a detail field without the OCR bookkeeping (cache_hit flags)."""
    v = d[key]
    if isinstance(v, list) and v and isinstance(v[0], dict):
        return [{k: x for k, x in item.items() if "cache_hit" not in k} for item in v]
    return v


def test_scene_masks_equal_ocr_masks_when_the_boxes_agree(clip, tmp_path):
    """The scene path feeds the same polygons through the same kernels: where the recorded boxes are what the OCR
    finds, every number is the OCR path's, with no OCR call."""
    _hand_off(tmp_path, clip, _record(40))
    ocr_engine, scene_engine = GreenBoxEngine(), GreenBoxEngine()
    ocr = compute_padvc_details(clip, _Pvd, TextMasker(ocr_engine, OcrSettings()), config=PadvcConfig())
    scene = compute_padvc_details(clip, _Pvd, TextMasker(scene_engine, OcrSettings(backend="scene")),
                                  config=PadvcConfig())
    assert ocr["_mask_source"] == "ocr" and ocr["_mask_source_detail"] is None and ocr_engine.calls > 0
    assert scene["_mask_source"] == "scene" and scene["_mask_source_detail"] is None
    assert scene_engine.calls == 0 and scene["_ocr_calls"] == 0 and scene["ocr_cache_path"] is None
    assert ocr["event_count"] >= 2 and ocr["max_raw_text_energy"] > 0
    for key in SAME_KEYS:
        assert _strip(scene, key) == _strip(ocr, key), key
    # improved: the same switch, chosen by the profile
    imp = compute_padvc_details(clip, _Pvd, TextMasker(GreenBoxEngine(), ocr_settings_for_profile(OcrSettings(),
                                                                                                   IMPROVED)),
                                profile=IMPROVED)
    assert imp["_mask_source"] == "scene"


def test_padding_and_opacity_shape_scene_masks(clip, tmp_path):
    rec = _record(40)
    rec["contents"][0][0][1] = 0.3
    _hand_off(tmp_path, clip, rec)
    plain = compute_padvc_details(clip, _Pvd, TextMasker(GreenBoxEngine(), OcrSettings(backend="scene")))
    padded = compute_padvc_details(clip, _Pvd, TextMasker(GreenBoxEngine(), OcrSettings(backend="scene", scene_pad=2)))
    faint = compute_padvc_details(clip, _Pvd, TextMasker(GreenBoxEngine(), OcrSettings(backend="scene",
                                                                                     scene_min_opacity=0.5)))
    w, h = BAR[2] - BAR[0] + 1, BAR[3] - BAR[1] + 1
    assert plain["max_raw_text_energy"] == pytest.approx(0.0051 * 2 * (w + h))       # the closed form (§4.5)
    assert padded["max_raw_text_energy"] == pytest.approx(0.0051 * 2 * (w + 4 + h + 4))
    assert faint["max_raw_text_energy"] == 0.0


@pytest.mark.parametrize("case", ["missing", "frames", "size", "stale", "tampered"])
def test_unusable_records_fall_back_to_ocr(clip, tmp_path, case):
    record = _record(40)
    if case == "frames":
        record = _record(41)
    elif case == "size":
        record = {**_record(40), "pixel_width": 854, "pixel_height": 480}
    if case != "missing":
        _hand_off(tmp_path, clip, record)
    if case == "stale":
        clip.write_bytes(_video(tmp_path / "other.avi", _clip()[::-1]).read_bytes())
    if case == "tampered":
        doc = json.loads(sidecar_path(clip).read_text())
        sidecar_path(clip).write_text(json.dumps({**doc, "status": "tampered", "detail": "static:name:update_frame"}))
    engine = GreenBoxEngine()
    d = compute_padvc_details(clip, _Pvd, TextMasker(engine, OcrSettings(backend="scene")))
    ocr = compute_padvc_details(clip, _Pvd, TextMasker(GreenBoxEngine(), OcrSettings()))
    expected = {"missing": "scene_masks_missing", "frames": "scene_masks_mismatch", "size": "scene_masks_mismatch",
                "stale": "scene_masks_stale", "tampered": "scene_masks_tampered"}[case]
    assert d["_mask_source"] == "ocr" and d["_mask_source_detail"].startswith(expected) and engine.calls > 0
    assert d["padvc_raw"] == ocr["padvc_raw"]
    row = finish_ok_row({"id": "x", "visual_structure_pass": 1}, d, PadvcParams(-1.0, 1.0), profile=IMPROVED)
    assert row["mask_source"] == "ocr" and row["mask_source_detail"].startswith(expected)
    assert list(row)[-3:] == ["mask_source", "mask_source_detail", "ocr_reused"]   # after the toolkit's fields


def test_profiles_choose_the_mask_source():
    base = OcrSettings()
    assert ocr_settings_for_profile(base, REFERENCE) == base                       # reference keeps OCR (parity)
    imp = ocr_settings_for_profile(base, IMPROVED)
    assert (imp.backend, imp.use_rec) == ("scene", False)                           # Q-PADVC-15
    assert imp.signature() == "rapidocr_cls0_rec0_ts0.500_bt0.500_ur1.600_ls736"   # its fallback OCR's signature
    off = ocr_settings_for_profile(OcrSettings(scene_masks="off"), IMPROVED)
    assert (off.backend, off.use_rec) == ("rapidocr", False)
    asked = ocr_settings_for_profile(OcrSettings(backend="scene"), REFERENCE)       # any profile may ask for it
    assert asked.backend == "scene" and asked.use_rec
    assert ocr_settings_for_profile(OcrSettings(backend="scene", scene_masks="off"), REFERENCE).backend == "rapidocr"
    with pytest.raises(ValueError, match="scene_masks"):
        OcrSettings(scene_masks="sometimes")


def test_scene_engine_loads_ocr_only_when_needed():
    engine = make_ocr_engine(OcrSettings(backend="scene", provider="cpu"))
    assert isinstance(engine, SceneTextEngine) and engine._fallback is None
    assert engine.provider == "cpu" and engine.provider_fallback is None


def test_schema_declares_the_new_fields():
    from prism_fast.schema import STAGE_FIELDS

    names = {n for n, _ in STAGE_FIELDS["padvc"]}
    assert {"mask_source", "mask_source_detail", "ocr_reused"} <= names


# --- OCR reuse (reuse=text) -----------------------------------------------------------------------------------

def test_reuse_text_keeps_every_number_and_saves_calls(clip, tmp_path):
    """reuse=text answers a frame with the result of an OCR'd frame of the same video when the recorded text is
    identical and the text regions' pixels agree; on this clip the stand-in OCR reads only the bar, so the reduced
    run must equal the unreduced one exactly, with fewer calls. Reused results never enter the shared frame cache."""
    from prism_fast.video.ocr import FrameOcrCache

    _hand_off(tmp_path, clip, _record(40))
    exact, text = GreenBoxEngine(), GreenBoxEngine()
    shared = FrameOcrCache()
    du = compute_padvc_details(clip, _Pvd, TextMasker(exact, OcrSettings(), FrameOcrCache()))
    dr = compute_padvc_details(clip, _Pvd, TextMasker(text, OcrSettings(reuse="text"), shared))
    public = lambda d: {k: v for k, v in d.items() if not k.startswith("_")}  # noqa: E731
    assert public(dr) == public(du)
    assert dr["_ocr_reused"] > 0 and text.calls == dr["_ocr_calls"] < exact.calls
    assert text.calls + dr["_ocr_reused"] == exact.calls
    assert len(shared._mem) == text.calls          # only real OCR results are shared
    # without a record: whole frames must agree (the square moves between requested frames: fewer reuses)
    sidecar_path(clip).unlink()
    bare = GreenBoxEngine()
    db = compute_padvc_details(clip, _Pvd, TextMasker(bare, OcrSettings(reuse="text"), FrameOcrCache()))
    assert public(db) == public(du) and db["_ocr_reused"] < dr["_ocr_reused"]


def test_reuse_text_respects_text_changes(tmp_path):
    """A frame whose recorded text differs, or whose text region's pixels differ, is OCR'd."""
    from prism_fast.video.ocr import FrameOcrCache

    frames = _clip()
    for t in range(20, 40):   # the bar's content changes (a glyph recoloured) while the record says the same
        frames[t][BAR[1]:BAR[3] + 1, BAR[0]:BAR[0] + 10] = (0, 120, 0)
    clip = _video(tmp_path / "c.avi", frames)
    _hand_off(tmp_path, clip, _record(40))
    engine = GreenBoxEngine()
    d = compute_padvc_details(clip, _Pvd, TextMasker(engine, OcrSettings(reuse="text"), FrameOcrCache()))
    truth = compute_padvc_details(clip, _Pvd, TextMasker(GreenBoxEngine(), OcrSettings(), FrameOcrCache()))
    assert d["sampled_text_energy_series"] == truth["sampled_text_energy_series"]
    assert d["padvc_raw"] == truth["padvc_raw"]
    with pytest.raises(ValueError, match="reuse"):
        OcrSettings(reuse="always")


# --- on a real render with RapidOCR ---------------------------------------------------------------------------

HOLDS = '''from manim import *

class Holds(Scene):
    def construct(self):
        self.add(Text("Reuse and holds", font_size=36).to_edge(UP), MathTex(r"x^2+y^2=1").to_edge(DOWN))
        s = Square(1).shift(LEFT * 3)
        self.add(s)
        for _ in range(3):
            self.play(s.animate.shift(RIGHT * 2), run_time=0.5)
            self.wait(0.6)
'''


@pytest.mark.slow
def test_real_render_exact_dedup_and_scene_masks(tmp_path):
    """On a real render: the OCR actually kept (one call per distinct frame) gives exactly the numbers of one call
    per request (the authors' policy), with fewer calls; the scene path needs no OCR at all."""
    import shutil
    import sys
    import tempfile

    from prism_fast.execute.render import RenderConfig, prefork_worker, render_one
    from prism_fast.video.ocr import FrameOcrCache, make_ocr_engine

    class Counting(OcrEngine):
        name = "rapidocr"
        provider = "cpu"

        def __init__(self, inner):
            self.inner, self.calls = inner, 0

        def polygons(self, frame):
            self.calls += 1
            return self.inner.polygons(frame)

    class EveryRequest(TextMasker):   # the authors' policy: every request is an OCR call
        def _lookup(self, frame_bgr, index=None):
            polys = self.engine.polygons(np.ascontiguousarray(frame_bgr))
            key = f"{index}.{len(self._polys_of)}"
            self._polys_of[key] = polys
            self.stats.ocr_calls += 1
            return key, polys, True

    root = Path(tempfile.mkdtemp(prefix="tbh", dir="/tmp"))
    cfg = RenderConfig(manim_bin=str(Path(sys.executable).with_name("manim")), tmp_root=str(root), timeout_s=180)
    worker = prefork_worker(cfg)
    try:
        row = render_one("HOLDS", HOLDS, tmp_path / "run", cfg, runner=worker.run)
    finally:
        worker.close()
        shutil.rmtree(root, ignore_errors=True)
    assert row["success"], row["error"]
    video = row["video_path"]
    settings = OcrSettings(provider="cpu")
    rapid = make_ocr_engine(settings)
    every, dedup = Counting(rapid), Counting(rapid)
    d_every = compute_padvc_details(video, _Pvd, EveryRequest(every, settings, FrameOcrCache()))
    d_dedup = compute_padvc_details(video, _Pvd, TextMasker(dedup, settings, FrameOcrCache()))
    public = lambda d: {k: v for k, v in d.items() if not k.startswith("_")}  # noqa: E731
    assert public(d_dedup) == public(d_every)
    assert every.calls == d_every["_ocr_requests"] and dedup.calls < every.calls
    assert d_every["event_count"] >= 3 and d_every["max_raw_text_energy"] > 0
    scene = compute_padvc_details(video, _Pvd, TextMasker(Counting(rapid), OcrSettings(backend="scene")))
    assert scene["_mask_source"] == "scene" and scene["_ocr_calls"] == 0
    assert scene["event_count"] == d_every["event_count"] and scene["max_raw_text_energy"] > 0
