"""PADVC benchmark: scene text masks (issue #18), OCR calls per video vs the authors' policy, and peak RSS.

    python -m bench.padvc_bench --render DIR [--render-ab N]     # bundled answers, text boxes on: render cost
    python -m bench.padvc_bench --scene-vs-ocr 'DIR/videos/*.mp4' --frame-cache CACHE [--pictures IMG]
                                                                 # scene masks vs RapidOCR: time + agreement
    python -m bench.padvc_bench --ocr-budget 'DIR/videos/*.mp4' --frame-cache CACHE --tolerances 0,8,255
                                                                 # reference OCR calls, reduced vs unreduced
    python -m bench.padvc_bench --videos 'runs/*/models/*/videos/*.mp4' [--limit 6]
    python -m bench.padvc_bench --rss-synthetic 60        # peak RSS on a synthetic 60 s 854×480 clip

Results and how to read them: docs/bench_padvc.md.

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


# --- renders with text boxes (issue #18) -----------------------------------------------------------------------

def render_bundled(out: Path, limit: int | None = None, ab: int = 0, ids: list[str] | None = None) -> list[dict]:
    """Render the bundled reference answers with the prefork worker (the eval path: sandbox, ``--disable_caching``),
    text boxes on: ``<out>/videos/<id>.mp4`` + ``<id>.textboxes.json``. Per sample: render CPU (``cpu_s``, the
    forked child and its threads), the recorder's own CPU (``record_sec``, main-thread CPU inside its hooks) and
    frames. ``ab`` > 0: for the first ``ab`` samples also render with text boxes off, interleaved A/B/A/B, and
    compare render CPU (the machine's noise is larger than the effect; ``record_sec`` is the direct figure)."""
    from dataclasses import replace

    from prism_fast.dataset.bundled import build_records
    from prism_fast.execute.render import RenderConfig, prefork_worker, render_one
    from prism_fast.execute.textboxes import sidecar_path

    recs = build_records()
    if ids:
        recs = [r for r in recs if r["id"] in ids]
    recs = recs[:limit] if limit else recs
    tmp = Path(tempfile.mkdtemp(prefix="tbr", dir="/tmp"))
    cfg = RenderConfig(tmp_root=str(tmp), timeout_s=300)
    worker = prefork_worker(cfg)
    rows = []
    try:
        for k, r in enumerate(recs):
            row = render_one(r["id"], r["reference_answer"], out, cfg, runner=worker.run)
            doc = json.loads(sidecar_path(row["video_path"]).read_text()) if row["success"] else {}
            item = {"id": r["id"], "lang": r["language"], "success": row["success"], "cpu_s": row["cpu_s"],
                    "wall_s": row["wall_s"], "textboxes": doc.get("status"), "frames": doc.get("frames"),
                    "record_sec": (doc.get("stats") or {}).get("record_sec"),
                    "states": (doc.get("stats") or {}).get("states"), "distinct": (doc.get("stats") or {}).get("distinct")}
            if k < ab:
                cpu_on, cpu_off = [row["cpu_s"]], []
                for rep in range(2):   # fresh output dirs: an existing video would be trusted (Q-FUNNEL-2)
                    off = render_one(r["id"], r["reference_answer"], tmp / f"off{rep}", replace(cfg, text_boxes=False),
                                     runner=worker.run)
                    cpu_off.append(off["cpu_s"])
                    on = render_one(r["id"], r["reference_answer"], tmp / f"on{rep}", cfg, runner=worker.run)
                    cpu_on.append(on["cpu_s"])
                    same = Path(on["video_path"]).read_bytes() == Path(off["video_path"]).read_bytes()
                    item["identical_video"] = item.get("identical_video", True) and same
                item.update(cpu_on=cpu_on, cpu_off=cpu_off)
            rows.append(item)
            print(json.dumps(item), flush=True)
    finally:
        worker.close()
    return rows


def render_cost_summary(rows: list[dict]) -> dict:
    ok = [r for r in rows if r.get("record_sec") is not None]
    rec, cpu = sum(r["record_sec"] for r in ok), sum(r["cpu_s"] for r in ok)
    out = {"samples": len(ok), "render_cpu_s": round(cpu, 2), "record_cpu_s": round(rec, 3),
           "record_share": round(rec / max(cpu, 1e-9), 4),
           "max_share": round(max((r["record_sec"] / r["cpu_s"] for r in ok if r["cpu_s"]), default=0), 4)}
    ab = [r for r in rows if r.get("cpu_off")]
    if ab:
        on = sum(min(r["cpu_on"]) for r in ab)
        off = sum(min(r["cpu_off"]) for r in ab)
        out.update(ab_samples=len(ab), ab_cpu_on_min_s=round(on, 2), ab_cpu_off_min_s=round(off, 2),
                   ab_growth=round(on / max(off, 1e-9) - 1, 4),
                   ab_identical_videos=all(r.get("identical_video") for r in ab))
    return out


# --- scene masks vs RapidOCR: speed and agreement (issue #18) -----------------------------------------------------

class RecordingMasker:
    """Wraps a masker: remembers the polygons each frame index was answered with."""

    def __init__(self, inner):
        self.inner = inner
        self.polys: dict[int, list] = {}

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def prefetch(self, index, frame):
        return self.inner.prefetch(index, frame)

    def polygons_at(self, index, frame=None):
        r = self.inner.polygons_at(index, frame)
        self.polys[int(index)] = r.polys
        return r

    def flush(self):
        return self.inner.flush()


def _mask(polys, hw=(480, 854)):
    from prism_fast.video.ocr import fill_text_mask

    return fill_text_mask(hw, polys) > 0


def _cover(mask, poly) -> float:
    """Share of a polygon's own pixels that ``mask`` covers."""
    m = _mask([poly], mask.shape)
    return float((m & mask).sum()) / max(int(m.sum()), 1)


def scene_vs_ocr(videos: list[str], frame_cache: str | None = None, provider: str = "cpu") -> list[dict]:
    """Per video, one run, side by side: the PADVC computation with scene masks (the render's text boxes) and with
    RapidOCR (reference settings, rec on), process CPU and wall time of each; both with the reference formula and
    the same PVD, so every difference comes from the masks. Agreement per requested frame: IoU of the two masks,
    E_text of both; per scene line box whether OCR covers it (≥ 50 % of its pixels), per OCR box whether it lies on
    recorded text (≥ 20 % of its pixels inside the 3 px-dilated scene mask)."""
    from prism_fast.execute.textboxes import load_sidecar
    from prism_fast.metrics.padvc import compute_padvc_details
    from prism_fast.video.ocr import FrameOcrCache, OcrSettings, SceneTextMasker, TextMasker, make_ocr_engine
    from prism_kernels import text_energies
    import cv2
    import torch

    class _Pvd:
        pvd_raw = 3

    settings = OcrSettings(provider=provider)
    engine = make_ocr_engine(settings)
    cache = FrameOcrCache(frame_cache) if frame_cache else FrameOcrCache()
    rows = []
    for v in videos:
        boxes, why = load_sidecar(v)
        if boxes is None:
            rows.append({"video": v, "error": why})
            continue
        lang = "zh" if "-ZH-" in Path(v).name else "en"
        t0, c0 = time.perf_counter(), time.process_time()
        sm = RecordingMasker(SceneTextMasker(boxes, settings))
        ds = compute_padvc_details(v, _Pvd, sm)
        t1, c1 = time.perf_counter(), time.process_time()
        om = RecordingMasker(TextMasker(engine, settings, cache))
        do = compute_padvc_details(v, _Pvd, om)
        t2, c2 = time.perf_counter(), time.process_time()
        frames = []
        kernel = np.ones((7, 7), np.uint8)
        misses, fps = [], []
        for i in sorted(sm.polys):
            s_mask, o_mask = _mask(sm.polys[i]), _mask(om.polys[i])
            union = int((s_mask | o_mask).sum())
            iou = float((s_mask & o_mask).sum()) / union if union else 1.0
            es, eo = [float(x) for x in text_energies(torch.from_numpy(np.stack([s_mask, o_mask]).astype(np.uint8)
                                                                         * 255))]
            frames.append({"index": i, "iou": iou, "e_text_scene": es, "e_text_ocr": eo,
                           "boxes_scene": len(sm.polys[i]), "boxes_ocr": len(om.polys[i])})
            owners = boxes.owners(i)
            from prism_fast.execute.textboxes import line_boxes
            for kind, alpha, glyphs in owners:
                for x0, y0, x1, y1 in line_boxes(glyphs):
                    poly = [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]
                    cov = _cover(o_mask, poly)
                    misses.append({"index": i, "kind": kind, "alpha": alpha, "h": y1 - y0 + 1, "w": x1 - x0 + 1,
                                   "covered": cov})
            dil = cv2.dilate(s_mask.astype(np.uint8), kernel) > 0
            for poly in om.polys[i]:
                fps.append({"index": i, "on_text": _cover(dil, poly),
                            "h": int(np.ptp(np.asarray(poly)[:, 1])) + 1, "w": int(np.ptp(np.asarray(poly)[:, 0])) + 1})
        rows.append({"video": v, "lang": lang, "frames": ds["video_frame_count"], "events": ds["event_count"],
                     "scene_cpu_s": c1 - c0, "scene_wall_s": t1 - t0, "ocr_cpu_s": c2 - c1, "ocr_wall_s": t2 - t1,
                     "ocr_requests": do["_ocr_requests"], "ocr_calls": do["_ocr_calls"],
                     "padvc_raw_scene": ds["padvc_raw"], "padvc_raw_ocr": do["padvc_raw"],
                     "e_text_max_scene": ds["max_raw_text_energy"], "e_text_max_ocr": do["max_raw_text_energy"],
                     "segments_scene": ds["animation_segment_count"], "segments_ocr": do["animation_segment_count"],
                     "geo_scene": [e["raw_geo_energy"] for e in ds["event_energy_details"]],
                     "geo_ocr": [e["raw_geo_energy"] for e in do["event_energy_details"]],
                     "per_frame": frames, "scene_boxes": misses, "ocr_boxes": fps,
                     "ocr_polys": {str(i): p for i, p in om.polys.items()}})
        r = rows[-1]
        print(json.dumps({k: r[k] for k in ("video", "frames", "events", "scene_cpu_s", "ocr_cpu_s", "ocr_calls",
                                            "padvc_raw_scene", "padvc_raw_ocr")}), flush=True)
    return rows


def scene_vs_ocr_summary(rows: list[dict]) -> dict:
    ok = [r for r in rows if "error" not in r]
    out = {"videos": len(ok), "errors": [r for r in rows if "error" in r]}
    for k in ("scene_cpu_s", "ocr_cpu_s", "scene_wall_s", "ocr_wall_s"):
        out[k] = round(sum(r[k] for r in ok), 2)
    out["speedup_cpu"] = round(out["ocr_cpu_s"] / max(out["scene_cpu_s"], 1e-9), 1)
    out["speedup_wall"] = round(out["ocr_wall_s"] / max(out["scene_wall_s"], 1e-9), 1)
    ious = [f["iou"] for r in ok for f in r["per_frame"]]
    both = [f["iou"] for r in ok for f in r["per_frame"] if f["boxes_scene"] and f["boxes_ocr"]]
    out["frames_compared"] = len(ious)
    out["iou_mean"] = round(float(np.mean(ious)), 4) if ious else None
    out["iou_median_both_nonempty"] = round(float(np.median(both)), 4) if both else None
    out["frames_text_scene_only"] = sum(1 for r in ok for f in r["per_frame"] if f["boxes_scene"] and not f["boxes_ocr"])
    out["frames_text_ocr_only"] = sum(1 for r in ok for f in r["per_frame"] if f["boxes_ocr"] and not f["boxes_scene"])
    d_raw = [abs(r["padvc_raw_scene"] - r["padvc_raw_ocr"]) / max(r["padvc_raw_ocr"], 1e-12) for r in ok]
    out["padvc_raw_rel_diff_median"] = round(float(np.median(d_raw)), 4) if d_raw else None
    out["padvc_raw_rel_diff_p90"] = round(float(np.percentile(d_raw, 90)), 4) if d_raw else None
    out["padvc_raw_scene_over_ocr_median"] = round(float(np.median(
        [r["padvc_raw_scene"] / r["padvc_raw_ocr"] for r in ok if r["padvc_raw_ocr"] > 0])), 4) if ok else None
    out["e_text_max_scene_over_ocr_median"] = round(float(np.median(
        [r["e_text_max_scene"] / r["e_text_max_ocr"] for r in ok if r["e_text_max_ocr"] > 0])), 4) if ok else None
    out["segments_equal"] = sum(1 for r in ok if r["segments_scene"] == r["segments_ocr"])
    from scipy.stats import spearmanr

    if len(ok) > 2:
        out["padvc_raw_spearman"] = round(float(spearmanr([r["padvc_raw_scene"] for r in ok],
                                                          [r["padvc_raw_ocr"] for r in ok]).statistic), 4)
    # OCR misses: scene line boxes OCR leaves ≥ 50 % uncovered, by kind, language and height
    miss = {}
    for r in ok:
        for b in r["scene_boxes"]:
            if b["alpha"] < 0.5:
                continue
            small = "small(<14px)" if b["h"] < 14 else "normal"
            key = f"{b['kind']}/{r['lang']}/{small}"
            tot, m = miss.get(key, (0, 0))
            miss[key] = (tot + 1, m + (b["covered"] < 0.5))
    out["scene_boxes_missed_by_ocr"] = {k: {"boxes": t, "missed": m, "share": round(m / t, 3)}
                                        for k, (t, m) in sorted(miss.items())}
    ob = [b for r in ok for b in r["ocr_boxes"]]
    out["ocr_boxes"] = len(ob)
    out["ocr_boxes_not_on_text"] = sum(1 for b in ob if b["on_text"] < 0.2)
    return out


def worst_pictures(rows: list[dict], out_dir: Path, n: int = 4, frames: list[tuple[str, int]] | None = None) -> list[str]:
    """The n requested frames (one per video) where scene and OCR masks agree least (or the given (video stem,
    index) pairs): the frame with the scene's line boxes (green) and OCR's boxes (red), as a small PNG."""
    import cv2

    from prism_fast.execute.textboxes import load_sidecar
    from prism_fast.video.ocr import OcrSettings

    cands = []
    for r in rows:
        if "error" in r:
            continue
        if frames is not None:
            cands += [(0.0, r["video"], i) for stem, i in frames if Path(r["video"]).stem == stem]
            continue
        worst = min((f for f in r["per_frame"] if f["boxes_scene"] or f["boxes_ocr"]), key=lambda f: f["iou"],
                    default=None)
        if worst is not None:
            cands.append((worst["iou"], r["video"], worst["index"]))
    cands.sort()
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for iou, video, index in cands[:n]:
        cap = cv2.VideoCapture(video)
        cap.set(cv2.CAP_PROP_POS_FRAMES, index)
        ok, frame = cap.read()
        if not ok:
            continue
        boxes, _ = load_sidecar(video)
        img = frame.copy()
        s = OcrSettings()
        for poly in boxes.polygons(index, s.scene_min_opacity, s.scene_pad):
            cv2.polylines(img, [np.asarray(poly, np.int32)], True, (0, 255, 0), 1)
        row = next(r for r in rows if r["video"] == video)
        for f in row.get("ocr_polys", {}).get(str(index), []):
            cv2.polylines(img, [np.asarray(f, np.int32)], True, (0, 0, 255), 1)
        name = f"padvc_scene_vs_ocr_{Path(video).stem}_{index}.png"
        small = cv2.resize(img, (640, 360), interpolation=cv2.INTER_AREA)
        cv2.imwrite(str(out_dir / name), small, [cv2.IMWRITE_PNG_COMPRESSION, 9])
        paths.append(str(out_dir / name))
    return paths


# --- OCR budget in reference: reduced (reuse=text) vs unreduced, every number compared (issue #18 item 4) ---------

class CachedOcrEngine:
    """RapidOCR (reference settings, CPU) answered from a persistent frame cache filled by an earlier real run
    (``--scene-vs-ocr --frame-cache``); a frame the cache lacks is OCR'd for real. ``calls`` counts requests."""

    name = "rapidocr"
    provider = "cpu"
    provider_fallback = None

    def __init__(self, cache_dir: str, settings):
        from prism_fast.video.ocr import FrameOcrCache, TextMasker

        self.cache = FrameOcrCache(cache_dir)
        self.sig = TextMasker(self, settings)._sig   # the key the real run stored its results under
        self.settings = settings
        self.calls = self.misses = 0
        self._real = None

    def polygons(self, frame_bgr):
        from prism_fast.video.ocr import frame_digest, make_ocr_engine

        self.calls += 1
        polys = self.cache.get(f"{frame_digest(frame_bgr)}.{self.sig}")
        if polys is None:
            self.misses += 1
            self._real = self._real or make_ocr_engine(self.settings)
            polys = self._real.polygons(frame_bgr)
        return polys


def ocr_budget(videos: list[str], frame_cache: str, tolerances=(0,)) -> dict:
    """Per video: the reference computation unreduced (one OCR call per distinct frame) and reduced with the
    experimental ``reuse=text`` at each BGR tolerance (video/ocr.py "OCR reuse"), with the same OCR results; every
    detail of a reduced run must equal the unreduced one. Returns {tolerance: rows}."""
    from prism_fast.metrics.padvc import compute_padvc_details
    from prism_fast.video import ocr
    from prism_fast.video.ocr import FrameOcrCache, OcrSettings, TextMasker

    class _Pvd:
        pvd_raw = 3

    public = lambda d: {k: x for k, x in d.items() if not k.startswith("_")}  # noqa: E731
    out: dict = {t: [] for t in tolerances}
    saved = ocr.REUSE_TOLERANCE
    try:
        for v in videos:
            engine = CachedOcrEngine(frame_cache, OcrSettings(provider="cpu"))
            du = compute_padvc_details(v, _Pvd, TextMasker(engine, OcrSettings(provider="cpu"), FrameOcrCache()))
            for tol in tolerances:
                ocr.REUSE_TOLERANCE = tol
                e2 = CachedOcrEngine(frame_cache, OcrSettings(provider="cpu"))
                dr = compute_padvc_details(v, _Pvd, TextMasker(e2, OcrSettings(provider="cpu", reuse="text"),
                                                               FrameOcrCache()))
                diff = sorted(k for k in public(du) if public(du)[k] != public(dr).get(k))
                out[tol].append({"video": v, "requests": du["_ocr_requests"], "calls_unreduced": engine.calls,
                                 "calls_reduced": e2.calls, "reused": dr["_ocr_reused"],
                                 "cache_misses": engine.misses + e2.misses, "identical": not diff,
                                 "differing_fields": diff, "padvc_raw": du["padvc_raw"],
                                 "padvc_raw_reduced": dr["padvc_raw"]})
            print(json.dumps({"video": v, **{str(t): out[t][-1]["calls_reduced"] for t in tolerances},
                              "unreduced": engine.calls}), flush=True)
    finally:
        ocr.REUSE_TOLERANCE = saved
    return out


def ocr_budget_summary(rows: list[dict]) -> dict:
    req = sum(r["requests"] for r in rows)
    out = {"videos": len(rows), "authors_calls": req, "unreduced_calls": sum(r["calls_unreduced"] for r in rows),
           "reduced_calls": sum(r["calls_reduced"] for r in rows), "reused": sum(r["reused"] for r in rows),
           "identical_videos": sum(r["identical"] for r in rows),
           "cache_misses": sum(r["cache_misses"] for r in rows)}
    out["unreduced_ratio"] = round(out["unreduced_calls"] / max(req, 1), 4)
    out["reduced_ratio"] = round(out["reduced_calls"] / max(req, 1), 4)
    out["differing"] = [(Path(r["video"]).stem, r["differing_fields"]) for r in rows if not r["identical"]]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--videos", help="glob of rendered videos")
    ap.add_argument("--limit", type=int, default=None, help="videos/samples at most (--videos: default 6; else all)")
    ap.add_argument("--rss-synthetic", type=int, default=0, help="seconds of synthetic 854x480 video for the RSS run")
    ap.add_argument("--rss-video", help="a video for the RSS run")
    ap.add_argument("--out", default=None)
    ap.add_argument("--render", metavar="DIR", help="render the bundled reference answers (text boxes on) into DIR")
    ap.add_argument("--render-ab", type=int, default=0, help="with --render: A/B render CPU on the first N samples")
    ap.add_argument("--scene-vs-ocr", metavar="GLOB", help="videos with text-box sidecars: scene masks vs RapidOCR")
    ap.add_argument("--frame-cache", help="persistent OCR frame cache dir (a later --ocr-budget run reuses it)")
    ap.add_argument("--pictures", metavar="DIR", help="with --scene-vs-ocr: PNGs of the 4 worst frames")
    ap.add_argument("--ocr-budget", metavar="GLOB", help="reference OCR calls, reduced (reuse=text) vs unreduced, "
                                                          "from the --frame-cache of a --scene-vs-ocr run")
    ap.add_argument("--tolerances", default="0", help="with --ocr-budget: BGR tolerances of reuse=text, e.g. 0,8,255")
    args = ap.parse_args(argv)
    report = {}
    if args.ocr_budget:
        vids = sorted(glob.glob(args.ocr_budget))[: args.limit]
        tols = [int(t) for t in args.tolerances.split(",")]
        by_tol = ocr_budget(vids, args.frame_cache, tols)
        report["ocr_budget"] = {}
        for tol, rows in by_tol.items():
            summary = ocr_budget_summary(rows)
            print("ocr_budget tolerance", tol, json.dumps({k: v for k, v in summary.items() if k != "differing"}),
                  "differing", [d[0] for d in summary["differing"]])
            report["ocr_budget"][str(tol)] = {"videos": rows, "summary": summary}
    if args.scene_vs_ocr:
        vids = sorted(glob.glob(args.scene_vs_ocr))[: args.limit]
        rows = scene_vs_ocr(vids, args.frame_cache)
        summary = scene_vs_ocr_summary(rows)
        print("scene_vs_ocr", json.dumps(summary, indent=1))
        report["scene_vs_ocr"] = {"videos": rows, "summary": summary}
        if args.pictures:
            report["scene_vs_ocr"]["pictures"] = worst_pictures(rows, Path(args.pictures))
    if args.render:
        rows = render_bundled(Path(args.render), args.limit, args.render_ab)
        summary = render_cost_summary(rows)
        print("render_cost", json.dumps(summary))
        report["render"] = {"samples": rows, "summary": summary}
        (Path(args.render) / "render_cost.json").write_text(json.dumps(report["render"], indent=1))
    if args.videos:
        vids = sorted(glob.glob(args.videos))[: args.limit or 6]
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
