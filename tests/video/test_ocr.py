"""OCR text masks (spec padvc.md §4) with the real RapidOCR on a real Manim render, and PADVC on that render
against the per-frame oracle. OCR is ~0.5–1.5 s per frame on CPU, so every OCR result is shared through one
session-scoped run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from bench import oracle
from prism_fast.metrics.padvc import PadvcParams, compute_padvc_details
from prism_fast.profile import IMPROVED, REFERENCE
from prism_fast.video.ocr import (FrameOcrCache, OcrSettings, OcrUnavailable, RapidOcrEngine, TextMasker,
                                  VideoOcrCacheFile, extract_polygons, fill_text_mask, make_ocr_engine)
from prism_kernels import text_energies


class RecordingEngine(RapidOcrEngine):
    """The real RapidOCR engine, recording the digest of every frame it is called on."""

    def __init__(self, settings):
        super().__init__(settings)
        self.calls: list[str] = []

    def polygons(self, frame_bgr):
        self.calls.append(hashlib.sha256(np.ascontiguousarray(frame_bgr).tobytes()).hexdigest())
        return super().polygons(frame_bgr)


class _Pvd:
    pvd_raw = 4


@pytest.fixture(scope="session")
def ocr_run(decode_video, tmp_path_factory):
    cache_dir = tmp_path_factory.mktemp("ocr_cache")
    frame_dir = tmp_path_factory.mktemp("ocr_frames")
    settings = OcrSettings(provider="cpu")
    engine = RecordingEngine(settings)
    video_cache = VideoOcrCacheFile(cache_dir, decode_video, str(decode_video), settings.signature())
    masker = TextMasker(engine, settings, FrameOcrCache(frame_dir), video_cache)
    details = compute_padvc_details(decode_video, _Pvd(), masker)
    polys_by_digest = {}
    for idx, polys in ((int(k), v["polys"]) for k, v in video_cache.payload["frames"].items()):
        polys_by_digest[idx] = polys
    return {"details": details, "engine": engine, "masker": masker, "cache_dir": cache_dir, "frame_dir": frame_dir,
            "settings": settings, "polys_by_index": polys_by_digest}



def test_rendered_text_is_found(ocr_run):
    d = ocr_run["details"]
    # the Text("decode") label is on screen from the end of the first play to the end of the video
    last = d["sampled_text_energy_series"][-1]
    assert last["box_count"] >= 1 and last["raw_text_energy"] > 0.0204
    assert any(e["text_box_count_end_frame"] >= 1 for e in d["event_energy_details"])
    assert d["sampled_text_energy_series"][0]["box_count"] == 0       # frame 0 is black


def test_ocr_once_per_distinct_frame(ocr_run, decode_video):
    d, engine = ocr_run["details"], ocr_run["engine"]
    frames = oracle.read_frames_cv2(decode_video)
    requested = [s["frame_index"] for s in d["sampled_text_energy_series"]] + [e for _, e in d["events"]] + \
        [b["mid_frame_index"] for b in d["segment_boundary_details"]]
    digests = [hashlib.sha256(frames[i].tobytes()).hexdigest() for i in requested]
    assert len(engine.calls) == len(set(engine.calls)) == len(set(digests))
    assert set(engine.calls) == set(digests)          # OCR saw exactly the frames the spec needs
    # the same content at a new index is served without OCR
    masker = ocr_run["masker"]
    before = len(engine.calls)
    res = masker.polygons_at(10_000, frames[requested[-1]])
    assert not res.ocr_called and len(engine.calls) == before


def test_padvc_on_render_equals_oracle(ocr_run, decode_video):
    d = ocr_run["details"]
    frames = oracle.read_frames_cv2(decode_video)
    cache = ocr_run["polys_by_index"]
    ref = oracle.padvc_video_oracle(frames, lambda i, f: cache[i], 4)
    assert d["events"] == [list(e) for e in ref["events"]] and len(ref["events"]) >= 1
    assert [e["raw_geo_energy"] for e in d["event_energy_details"]] == ref["geo"]
    assert [s["raw_text_energy"] for s in d["sampled_text_energy_series"]] == [e for _, e in ref["series"]]
    assert d["animation_segment_count"] == ref["segments"]
    assert d["padvc_raw"] == pytest.approx(ref["padvc_raw"], rel=1e-12) and d["padvc_raw"] > 0


def test_cache_file_format_and_rerun(ocr_run, decode_video):
    s = ocr_run["settings"]
    assert s.signature() == "rapidocr_cls0_rec1_ts0.500_bt0.500_ur1.600_ls736"
    sha = hashlib.sha1(f"{decode_video}::{s.signature()}".encode()).hexdigest()[:16]
    path = Path(ocr_run["cache_dir"]) / f"{Path(decode_video).stem[:80]}__{sha}.json"
    payload = json.loads(path.read_text(encoding="utf-8"))
    assert payload["video_path"] == str(decode_video) and ", " not in path.read_text(encoding="utf-8")
    entry = next(iter(payload["frames"].values()))
    assert set(entry) == {"shape", "box_count", "polys"} and entry["shape"] == [480, 854]
    # rerun on the same path: every request is a toolkit cache hit, no OCR (no engine needed at all)
    masker = TextMasker(None, s, FrameOcrCache(), VideoOcrCacheFile(ocr_run["cache_dir"], decode_video,
                                                                    str(decode_video), s.signature()))
    d2 = compute_padvc_details(decode_video, _Pvd(), masker)
    assert d2["ocr_cache_misses"] == 0 and d2["padvc_raw"] == ocr_run["details"]["padvc_raw"]


def test_worker_rows_share_frame_cache(ocr_run, decode_video, tmp_path):
    """The stage's worker (reference and improved) reuses the content-keyed frame cache: no new OCR call for
    the reference signature; improved (detection-only, Q-PADVC-15) has its own signature."""
    from prism_fast.config_schema import compose_group
    from prism_fast.metrics.padvc_run import PadvcWorker

    w = PadvcWorker(compose_group("metrics.padvc", "metrics.padvc.ocr.provider=cpu"), REFERENCE, str(tmp_path / "oc"),
                    str(ocr_run["frame_dir"]))
    base = {"detail_version": 4, "id": "x", "visual_structure_pass": 1, "video_path": str(decode_video)}
    row = w.score(base, {"pvd_raw": 4, "pvd_en_backend": "x"}, PadvcParams(-0.6663, 0.6547))
    assert row["status"] == "ok" and row["ocr_calls"] == 0 and row["padvc_raw"] == ocr_run["details"]["padvc_raw"]
    assert row["ocr_provider"] == "cpu" and row["u_padvc"] == row["padvc_raw"]
    bad = dict(base, video_path=str(tmp_path / "missing.mp4"))
    err = w.score(bad, {"pvd_raw": 4}, PadvcParams(-0.6663, 0.6547))
    assert err["status"] == "error" and err["error"] == "TypeError: 'float' object is not iterable"  # Q-PADVC-3
    assert "padvc_raw" not in err
    assert PadvcWorker(compose_group("metrics.padvc"), IMPROVED, None, None).ocr.signature().startswith("rapidocr_cls0_rec0")
    # both rows fit the store's padvc schema (nested values become JSON strings) and read back
    from prism_fast.schema import normalize_status
    from prism_fast.store import ResultsStore

    store = ResultsStore(tmp_path / "run")
    store.append("padvc", [{**normalize_status(r, "padvc_status"), "model": "m", "lang": "en", "id": i}
                           for i, r in (("a", row), ("b", err))])
    back = {r["id"]: r for r in store.read("padvc").to_pylist()}
    assert back["a"]["padvc_raw"] == row["padvc_raw"] and back["a"]["padvc_status"] == "ok"
    assert json.loads(back["a"]["events"]) == row["events"]
    assert back["b"]["status"] == "error" and back["b"]["error"] == err["error"]


# --- no OCR needed --------------------------------------------------------------------------------------

def test_extract_polygons_forms():
    box = [[10.9, 5.2], [40.7, 5.0], [40.0, 20.99], [-1.7, 20.0]]
    want = [[10, 5], [40, 5], [40, 20], [-1, 20]]                         # truncation toward zero
    assert extract_polygons(None) == [] and extract_polygons((None, None)) == []
    assert extract_polygons(([[box, "txt", 0.9]], [0.1])) == [want]       # RapidOCR (result, elapse)
    assert extract_polygons([box, box]) == [want, want]                   # bare polygons
    assert extract_polygons([[[box, ("t", 0.9)]]]) == [want]              # PaddleOCR 2.x, one list per image
    assert extract_polygons([{"rec_polys": [np.array(box)], "dt_polys": []}]) == [want]
    assert extract_polygons([{"rec_polys": None, "dt_polys": [box]}]) == [want]


@pytest.mark.parametrize("polys,expected", [
    ([[[100, 100], [199, 100], [199, 149], [100, 149]]], 1.53),
    ([[[0, 0], [99, 0], [99, 49], [0, 49]]], 0.765),
    ([[[300, 300], [300, 300], [300, 300], [300, 300]]], 0.0204),
])
def test_mask_energy_golden(polys, expected):
    mask = fill_text_mask((480, 854), polys)
    assert float(text_energies(torch.from_numpy(mask)[None])[0]) == pytest.approx(expected, abs=1e-12)
    assert oracle.text_energy(mask) == pytest.approx(expected, abs=1e-12)


def test_unavailable_backends(tmp_path):
    # scene (issue #18) is available: masks from the render's text boxes, RapidOCR loaded only for a fallback
    assert make_ocr_engine(OcrSettings(backend="scene")).name == "scene"
    with pytest.raises(OcrUnavailable, match="paddle_model_dir"):
        make_ocr_engine(OcrSettings(backend="paddleocr"))
    with pytest.raises(OcrUnavailable, match="det/ and rec/"):
        make_ocr_engine(OcrSettings(backend="paddleocr", paddle_model_dir=str(tmp_path)))
    assert OcrSettings(backend="paddleocr").signature() == "paddle"


def test_video_cache_key_quirk(tmp_path):
    """Q-PADVC-7: reference keys the per-video file by the path string (a re-render to the same path finds the
    old entries); improved by content, so new content gets a fresh file."""
    v = tmp_path / "a.mp4"
    v.write_bytes(b"first render")
    sig = OcrSettings().signature()
    c = VideoOcrCacheFile(tmp_path / "c", v, str(v), sig)
    c.put(0, (480, 854), [[[1, 1], [5, 1], [5, 5], [1, 5]]])
    c.flush()
    v.write_bytes(b"second render")
    assert VideoOcrCacheFile(tmp_path / "c", v, str(v), sig).get(0) is not None        # stale, reused
    from prism_fast.video.ocr import file_sha256
    assert VideoOcrCacheFile(tmp_path / "c", v, file_sha256(v), sig).get(0) is None


def test_ocr_memory_policy_is_active_and_leaves_boxes_unchanged(ocr_run, decode_video):
    """glibc here: the arena cap and the per-call trim run (they keep a 60 s clip's metric stage < 1 GB,
    docs/bench_padvc.md); a fresh engine still finds exactly the boxes of the run's engine."""
    import platform

    from prism_fast.video import ocr as ocr_mod

    if platform.libc_ver()[0] == "glibc":
        assert ocr_mod.limit_malloc_arenas(2) is True
    ocr_mod.release_free_memory()
    frames = oracle.read_frames_cv2(decode_video)
    engine = RapidOcrEngine(OcrSettings(provider="cpu"))
    with_text = [i for i, polys in sorted(ocr_run["polys_by_index"].items()) if polys]
    assert with_text
    idx = with_text[-1]
    assert engine.polygons(frames[idx]) == ocr_run["polys_by_index"][idx]
