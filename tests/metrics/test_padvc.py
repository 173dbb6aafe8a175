"""PADVC core (spec padvc.md): formula and center golden values, events/E_text/E_geo/S against the per-frame
oracle on synthetic clips written to real video files, gating, rows, the fit."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import cv2
import numpy as np
import pytest

from bench import oracle
from prism_fast.metrics.padvc import (PadvcConfig, PadvcParams, VideoDecodeError, base_fields,
                                      compute_padvc_details, finish_ok_row, fit_padvc_reference, gate_error,
                                      padvc_center, padvc_raw_formula, summarize_rows)
from prism_fast.profile import IMPROVED
from prism_fast.video.ocr import OcrEngine, OcrSettings, TextMasker, VideoOcrCacheFile

ZH = (-0.6663, 0.6547)
EN = (-2.4470, 1.8098)


class BrightBoxEngine(OcrEngine):
    """A deterministic stand-in OCR for synthetic clips: one box per connected bright-green region (the clips
    draw "text" in pure green), so masks are exact and cheap. Counts its calls."""

    name = "bright-box"

    def __init__(self):
        self.calls = 0

    def polygons(self, frame_bgr):
        self.calls += 1
        green = ((frame_bgr[..., 1] == 255) & (frame_bgr[..., 0] == 0) & (frame_bgr[..., 2] == 0)).astype(np.uint8)
        n, _, stats, _ = cv2.connectedComponentsWithStats(green, connectivity=8)
        polys = []
        for x, y, w, h, _ in stats[1:]:
            polys.append([[int(x), int(y)], [int(x + w - 1), int(y)], [int(x + w - 1), int(y + h - 1)],
                          [int(x), int(y + h - 1)]])
        return polys


class _Pvd:
    def __init__(self, n):
        self.pvd_raw = n


# --- formula golden values (§15) ------------------------------------------------------------------------

def test_formula_golden():
    parts = padvc_raw_formula([10, 4, 0.5], 2, 7, 4.7, 0.7)
    num = parts["geo_evolution_avg_p"]
    den = parts["pvd_factor"] * (1 + parts["max_text_burden_p"])
    assert num == pytest.approx(4.133230, abs=5e-7)
    assert den == pytest.approx(8.992328, abs=5e-7)
    assert parts["padvc_raw"] == pytest.approx(0.459640, abs=5e-7)
    # improved (Q-PADVC-1): the paper formula, no division by S
    assert padvc_raw_formula([10, 4, 0.5], 2, 7, 4.7, divide_by_segments=False)["padvc_raw"] == \
        pytest.approx(2 * 0.459640, abs=2e-6)
    assert padvc_raw_formula([], 1, 7, 4.7)["padvc_raw"] == 0.0
    assert padvc_raw_formula([1.0], 1, 0, 0)["pvd_factor"] == pytest.approx(1.0)  # ln(0 + e)


@pytest.mark.parametrize("raw,zh,en", [(0.2, 0.354299, 0.898446), (1.0, 0.595785, 0.400892)])
def test_center_golden(raw, zh, en):
    assert padvc_center(raw, *ZH) == pytest.approx(zh, abs=5e-7)
    assert padvc_center(raw, *EN) == pytest.approx(en, abs=5e-7)


def test_center_of_zero_and_peak():
    assert padvc_center(0.0, *ZH) == pytest.approx(2.04e-160, rel=5e-3)
    assert padvc_center(0.0, *EN) == pytest.approx(1.21e-17, rel=5e-3)
    assert padvc_center(-1.0, *EN) == padvc_center(0.0, *EN)           # raw clamped at 0
    assert padvc_center(math.exp(ZH[0]) - 1e-8, *ZH) == pytest.approx(1.0)
    assert padvc_center(0.3, 0.0, 0.0) == padvc_center(0.3, 0.0, 1e-12)  # σ clamped at 1e-12


# --- synthetic videos vs the oracle ---------------------------------------------------------------------

def _write_video(path: Path, frames: list[np.ndarray], fps: int = 15) -> Path:
    """Lossless-enough: FFV1 in .avi keeps the exact BGR frames, so the oracle can use the arrays."""
    h, w = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"FFV1"), fps, (w, h))
    assert writer.isOpened()
    for f in frames:
        writer.write(f)
    writer.release()
    return path


def _clip(seed: int, n: int = 40, h: int = 96, w: int = 256) -> list[np.ndarray]:
    """Manim-like: black background, a growing/moving blue square (events), a green "text" bar that appears,
    holds and disappears (text masks, E_text, gap midpoints with and without text), static holds."""
    rng = np.random.default_rng(seed)
    frames = []
    x = 10
    for t in range(n):
        f = np.zeros((h, w, 3), np.uint8)
        if t in range(3, 9) or t in range(20, 27):
            x += int(rng.integers(8, 13))
        side = 36 + min(t, 30) // 3
        f[40:40 + side, x:x + side] = (230, 230, 230)
        if 5 <= t < 17 or t >= 30:
            f[8:16, 20:100] = (0, 255, 0)
        frames.append(f)
    return frames


@pytest.fixture(scope="module")
def synthetic_videos(tmp_path_factory):
    d = tmp_path_factory.mktemp("padvc_syn")
    return [(_write_video(d / f"clip{s}.avi", _clip(s)), _clip(s)) for s in (1, 2)]



@pytest.mark.parametrize("idx", [0, 1])
def test_video_matches_oracle(synthetic_videos, idx):
    path, _ = synthetic_videos[idx]
    frames = oracle.read_frames_cv2(path)
    engine = BrightBoxEngine()
    settings = OcrSettings()
    details = compute_padvc_details(path, _Pvd(5), TextMasker(engine, settings), config=PadvcConfig(text_stride=15),
                                    decoder="opencv")
    ref = oracle.padvc_video_oracle(frames, lambda i, f: BrightBoxEngine().polygons(f), 5, stride=15)
    assert details["frame_diff_series"] == [float(d) for d in ref["diffs"]]
    assert details["events"] == [list(e) for e in ref["events"]]
    assert len(ref["events"]) >= 2 and ref["segments"] >= 1
    assert [s["raw_text_energy"] for s in details["sampled_text_energy_series"]] == [e for _, e in ref["series"]]
    assert [d["raw_geo_energy"] for d in details["event_energy_details"]] == ref["geo"]
    assert [b["mid_frame_index"] for b in details["segment_boundary_details"]] == ref["mids"]
    assert [b["mid_raw_text_energy"] for b in details["segment_boundary_details"]] == ref["mid_energy"]
    assert details["animation_segment_count"] == ref["segments"]
    assert details["max_raw_text_energy"] == ref["e_text_max"]
    assert details["text_peak_frame_index"] == ref["peak"]
    assert details["padvc_raw"] == pytest.approx(ref["padvc_raw"], rel=1e-12)
    assert details["video_frame_count"] == len(frames) and details["frame_diff_count"] == len(frames) - 1


def test_improved_switches_change_only_their_part(synthetic_videos):
    path, _ = synthetic_videos[0]
    s = OcrSettings()
    ref = compute_padvc_details(path, _Pvd(5), TextMasker(BrightBoxEngine(), s))
    imp = compute_padvc_details(path, _Pvd(5), TextMasker(BrightBoxEngine(), s), profile=IMPROVED)
    assert imp["events"] == ref["events"] and imp["geo_evolution_sum_p"] == ref["geo_evolution_sum_p"]
    assert imp["geo_evolution_avg_p"] == imp["geo_evolution_sum_p"]            # Q-PADVC-1: no division by S
    assert imp["max_raw_text_energy"] >= ref["max_raw_text_energy"]            # Q-PADVC-14: more frames


def test_identical_frames_ocr_once_and_index_cache(synthetic_videos, tmp_path):
    path, _ = synthetic_videos[0]
    engine = BrightBoxEngine()
    s = OcrSettings()
    masker = TextMasker(engine, s, video_cache=VideoOcrCacheFile(tmp_path, path, str(path), s.signature()))
    d = compute_padvc_details(path, _Pvd(5), masker)
    distinct = len({hashlib.sha256(f.tobytes()).hexdigest() for f in _ocr_frames(path, d)})
    assert engine.calls == distinct < d["_ocr_requests"]
    assert d["ocr_cache_misses"] + d["ocr_cache_hits"] == d["_ocr_requests"]
    cache_file = Path(d["ocr_cache_path"])
    assert cache_file.is_file()
    # a second run over the same path is served entirely by the per-video cache: no OCR call, all hits
    engine2 = BrightBoxEngine()
    d2 = compute_padvc_details(path, _Pvd(5), TextMasker(engine2, s, video_cache=VideoOcrCacheFile(
        tmp_path, path, str(path), s.signature())))
    assert engine2.calls == 0 and d2["ocr_cache_misses"] == 0 and d2["padvc_raw"] == d["padvc_raw"]


def _ocr_frames(path, d):
    frames = oracle.read_frames_cv2(path)
    idx = [s["frame_index"] for s in d["sampled_text_energy_series"]] + [e for _, e in d["events"]] + \
        [b["mid_frame_index"] for b in d["segment_boundary_details"]]
    return [frames[i] for i in idx]


def test_missing_and_empty_video(tmp_path):
    with pytest.raises(VideoDecodeError):
        compute_padvc_details(tmp_path / "nope.mp4", _Pvd(1), TextMasker(BrightBoxEngine(), OcrSettings()))
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video")
    with pytest.raises(VideoDecodeError):
        compute_padvc_details(bad, _Pvd(1), TextMasker(BrightBoxEngine(), OcrSettings()))


# --- gates, rows, summary, fit --------------------------------------------------------------------------

def test_gates_in_order():
    task = {"id": "a", "instruction_text": "x"}
    assert gate_error(task, {"audit_success": 0}, {"success": True, "video_path": "v"}) == "audit_success != 1"
    assert gate_error(task, {"audit_success": 1}, {"success": True, "video_path": ""}) == "render video missing"
    assert gate_error({"id": "a"}, {"audit_success": 1}, {"success": True, "video_path": "v"}) == \
        "instruction_text missing"
    assert gate_error(task, {"audit_success": 1}, {"success": True, "video_path": "v"}) is None


def test_ok_row_order_and_u_scores():
    base = base_fields({"id": "a", "source_id": "a"}, {"audit_success": 1, "visual_structure_pass": 1,
                                                       "visual_structure_rate": 0.5}, {"success": True, "video_path": "v"})
    details = {"detail_version": 4, "padvc_raw": 0.2, "padvc_norm": None, "p_exponent": 0.7, "_ocr_calls": 3}
    row = finish_ok_row(base, details, PadvcParams(*ZH))
    keys = list(row)
    assert keys[:10] == ["detail_version", "id", "source_id", "difficulty", "difficulty_score", "audit_success",
                         "visual_structure_pass", "visual_structure_rate", "render_success", "video_path"]
    assert keys.index("padvc_norm") < keys.index("padvc_center") < keys.index("u_padvc") < keys.index("status")
    assert row["padvc_norm"] == row["padvc_center"] == pytest.approx(0.354299, abs=5e-7)
    assert row["u_padvc"] == 0.2 and "_ocr_calls" not in row and "u_padvc_center" not in row
    imp = finish_ok_row(base, details, PadvcParams(*ZH), profile=IMPROVED)
    assert imp["u_padvc_center"] == pytest.approx(0.354299, abs=5e-7)


def test_summary_excludes_errors():
    rows = [{"status": "ok", "padvc_raw": 0.2, "padvc_center": 0.5, "u_padvc": 0.2, "visual_structure_pass": 1,
             "visual_structure_rate": 1.0, "difficulty": None, "render_success": True},
            {"status": "ok", "padvc_raw": 0.4, "padvc_center": 0.1, "u_padvc": 0.0, "visual_structure_pass": 0,
             "visual_structure_rate": 0.5, "render_success": True},
            {"status": "error", "render_success": False}]
    s = summarize_rows(rows)
    assert s["total_records"] == 3 and s["scored_count"] == 2 and s["visual_pass_count"] == 1
    assert s["avg_padvc_raw"] == pytest.approx(0.3) and s["avg_padvc_raw_visual_pass"] == pytest.approx(0.2)
    assert s["by_difficulty"]["easy"]["count"] == 0 and s["by_difficulty"]["easy"]["avg_padvc_raw"] == 0.0


def test_fit_by_hand():
    recs = [{"status": "ok", "padvc_raw": 0.5}, {"status": "ok", "padvc_raw": 0.1},
            {"status": "ok", "padvc_raw": 0.0}, {"status": "error"}]
    logs = [math.log(0.5 + 1e-8), math.log(0.1 + 1e-8), math.log(1e-8)]
    mu = sum(logs) / 3
    sigma = math.sqrt(sum((v - mu) ** 2 for v in logs) / 3)
    fit = fit_padvc_reference(recs)
    assert fit["mu"] == pytest.approx(mu, rel=1e-12) and fit["sigma"] == pytest.approx(sigma, rel=1e-12)
    assert fit["success_records"] == 3 and fit["failed_records"] == 1 and fit["raw_median"] == pytest.approx(0.1)
    imp = fit_padvc_reference(recs, profile=IMPROVED)     # Q-PADVC-4: zeros excluded
    assert imp["zero_count"] == 1
    assert imp["mu"] == pytest.approx((logs[0] + logs[1]) / 2, rel=1e-12)
    assert fit_padvc_reference([{"status": "ok", "padvc_raw": 0.3}])["sigma"] == 1e-12
    with pytest.raises(ValueError):
        fit_padvc_reference([{"status": "error"}])
