"""PADVC benchmark: OCR calls per video vs the authors' policy, and peak RSS of the metric stage.

    python -m bench.padvc_bench --videos 'runs/*/models/*/videos/*.mp4' [--limit 6]
    python -m bench.padvc_bench --rss-synthetic 60        # peak RSS on a synthetic 60 s 854×480 clip

OCR calls are counted without running OCR: the frames a video needs (stride frames, event ends, gap midpoints)
do not depend on the OCR output, so a counting engine that returns no boxes gives the exact number of OCR
inferences of each policy:
- authors, no cache dir:  ⌈N/15⌉ + K + (K − 1) requests, each one an OCR call;
- authors, shared run cache (both pipelines): one call per distinct frame index;
- prism_fast: one call per distinct frame content (sha256), across the videos of one worker.
The RSS measurement runs the real pipeline path (decode twice, kernels, RapidOCR on the distinct frames).
"""

from __future__ import annotations

import argparse
import glob
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


class CountingEngine:
    name = "count"
    provider = "cpu"
    provider_fallback = None

    def __init__(self):
        self.calls = 0

    def polygons(self, frame_bgr):
        self.calls += 1
        return []


def ocr_counts(videos: list[str]) -> list[dict]:
    from prism_fast.metrics.padvc import compute_padvc_details
    from prism_fast.video.ocr import FrameOcrCache, OcrSettings, TextMasker

    class _Pvd:
        pvd_raw = 1

    settings = OcrSettings()
    shared = FrameOcrCache()
    rows = []
    for v in videos:
        engine = CountingEngine()
        d = compute_padvc_details(v, _Pvd, TextMasker(engine, settings, shared))
        n, k = d["video_frame_count"], d["event_count"]
        idx = {s["frame_index"] for s in d["sampled_text_energy_series"]} | {e for _, e in d["events"]} | \
            {b["mid_frame_index"] for b in d["segment_boundary_details"]}
        per_video = TextMasker(CountingEngine(), settings)   # dedup within this video only
        rows.append({"video": v, "frames": n, "events": k, "authors_no_cache": -(-n // 15) + k + max(k - 1, 0),
                     "authors_index_cache": len(idx), "ours_shared": engine.calls,
                     "ours_per_video": _per_video_calls(v, per_video)})
    return rows


def _per_video_calls(video, masker) -> int:
    from prism_fast.metrics.padvc import compute_padvc_details

    class _Pvd:
        pvd_raw = 1

    compute_padvc_details(video, _Pvd, masker)
    return masker.engine.calls


def synthetic_clip(path: Path, seconds: int, fps: int = 15) -> Path:
    """Manim-like 854×480 clip: black background, white text lines that appear one per 5 s and stay, a moving
    shape every other second (events), static holds in between."""
    import cv2

    w, h = 854, 480
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
    for t in range(seconds * fps):
        f = np.zeros((h, w, 3), np.uint8)
        for line in range(min(t // (5 * fps) + 1, 8)):
            cv2.putText(f, f"Line {line}: the area of a circle", (40, 40 + 50 * line), cv2.FONT_HERSHEY_SIMPLEX,
                        1.0, (255, 255, 255), 2)
        sec = t // fps
        x = 400 + (sec % 2) * ((t % fps) * 10)
        cv2.rectangle(f, (x, 300), (x + 80, 380), (200, 120, 40), -1)
        writer.write(f)
    writer.release()
    return path


def peak_rss(video: str) -> dict:
    from prism_fast.metrics.padvc import compute_padvc_details
    from prism_fast.video.ocr import OcrSettings, TextMasker, make_ocr_engine

    class _Pvd:
        pvd_raw = 3

    def rss_mb() -> float:
        return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)

    after_imports = rss_mb()                     # torch (CUDA build), cv2, onnxruntime, prism_fast imported
    s = OcrSettings(provider="cpu")
    masker = TextMasker(make_ocr_engine(s), s)
    after_engine = rss_mb()
    t0 = time.perf_counter()
    d = compute_padvc_details(video, _Pvd, masker)
    wall = time.perf_counter() - t0
    return {"video": video, "frames": d["video_frame_count"], "events": d["event_count"],
            "ocr_requests": d["_ocr_requests"], "ocr_calls": d["_ocr_calls"], "wall_s": round(wall, 2),
            "rss_after_imports_mb": after_imports, "rss_after_ocr_init_mb": after_engine, "peak_rss_mb": rss_mb(),
            "padvc_raw": d["padvc_raw"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--videos", help="glob of rendered videos")
    ap.add_argument("--limit", type=int, default=6)
    ap.add_argument("--rss-synthetic", type=int, default=0, help="seconds of synthetic 854x480 video for the RSS run")
    ap.add_argument("--rss-video", help="a video for the RSS run")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    report = {}
    if args.videos:
        vids = sorted(glob.glob(args.videos))[: args.limit]
        rows = ocr_counts(vids)
        for r in rows:
            print(json.dumps(r))
        tot = {k: sum(r[k] for r in rows) for k in ("authors_no_cache", "authors_index_cache", "ours_shared",
                                                     "ours_per_video")}
        tot["ratio_vs_no_cache"] = tot["ours_per_video"] / max(tot["authors_no_cache"], 1)
        tot["ratio_vs_index_cache"] = tot["ours_per_video"] / max(tot["authors_index_cache"], 1)
        print("totals", json.dumps(tot))
        report["ocr_counts"] = {"videos": rows, "totals": tot}
    if args.rss_synthetic or args.rss_video:
        video = args.rss_video or str(synthetic_clip(Path(tempfile.gettempdir()) / f"padvc_bench_{args.rss_synthetic}s.mp4",
                                                     args.rss_synthetic))
        r = peak_rss(video)
        print("rss", json.dumps(r))
        report["rss"] = r
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
