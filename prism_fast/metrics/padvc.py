"""PADVC, prompt-aware dynamic visual complexity (spec padvc.md): events, E_geo, E_text, S, PADVC_raw,
PADVC_center, uPADVC, the score row (§10.1), the summary (§10.2) and the reference fit (§11).

    PADVC_raw    = (Σ_k E_geo(k)^p / S) / (ln(PVD + e) · (1 + E_text_max^p))     (0 without events)
    PADVC_center = exp(−½ ((ln(max(raw, 0) + eps) − μ) / max(σ, 1e-12))²)
    uPADVC       = PADVC_raw × visual_structure_pass

Pure core: the video is decoded in two sequential passes and never held whole: pass 1 streams the exact
per-pair signals (events) and OCRs the stride frames as they go by; pass 2 OCRs the event end frames and gap
midpoints and keeps only the gray frames of event endpoints. OCR results are then replayed in the toolkit's
request order, which fixes its ``cache_hit`` bookkeeping. Tensor work uses ``prism_kernels`` (Laplacian energies in int64, 7×7 dilation). PVD comes in
as a ``PvdResult`` (computed once per prompt by ``prism_fast.metrics.pvd``).

Quirk switches: Q-PADVC-1 (S divisor), -3 (empty video), -4 (zeros in the fit), -14 (E_text_max sampling),
-15 (rec-score filter: OCR settings, see ``ocr_settings_for_profile``), -16 (u_padvc_center), -5/-6 (gates and
prompt: pipeline / pvd).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import cv2
import numpy as np
import torch

from prism_fast.profile import REFERENCE, Profile
from prism_fast.video.cpu_signals import make_signal_stream
from prism_fast.video.decode import VideoFrames, probe_video
from prism_fast.metrics.params import PADVC_FIT_EPS, PadvcParams  # noqa: F401 - PadvcParams re-exported
from prism_fast.video.ocr import (OcrSettings, SceneTextMasker, TextMasker, fill_text_mask,  # noqa: F401
                                  ocr_settings_for_profile)  # (re-exported: it lives beside OcrSettings)
from prism_kernels import dilate, event_threshold, geo_energies, segment_events, text_energies

DETAIL_VERSION = 4
SEGMENT_TEXT_THRESHOLD = 0.005
FIT_EPS = PADVC_FIT_EPS
MIN_SIGMA = 1e-12
GEO_BATCH = 8   # frames per energy batch (bounds memory: 8 × H × W × int32 per temporary)
PADVC_CHUNK = 16  # decoded frames per chunk (the decode of a 60 s clip never holds more than this)


@dataclass(frozen=True)
class PadvcConfig:
    p: float = 0.7
    event_threshold_mode: str = "absolute"
    event_threshold_abs: float = 50_000.0
    event_threshold_ratio: float = 0.08
    delta_mode: str = "positive"
    text_dilate: int = 7
    text_stride: int = 15
    sticky_peak_rescue: bool = False

    def __post_init__(self) -> None:
        if self.delta_mode not in ("positive", "absolute"):
            raise ValueError(f"delta_mode: expected 'positive' or 'absolute', got {self.delta_mode!r}")
        if self.event_threshold_mode not in ("absolute", "ratio"):
            raise ValueError(f"event_threshold_mode: expected 'absolute' or 'ratio', got {self.event_threshold_mode!r}")
        if self.sticky_peak_rescue:
            raise NotImplementedError("sticky_peak_rescue is not implemented (off in every toolkit pipeline)")

    def describe(self) -> dict:
        return {"p": self.p, "event_threshold_mode": self.event_threshold_mode,
                "event_threshold_abs": self.event_threshold_abs, "event_threshold_ratio": self.event_threshold_ratio,
                "delta_mode": self.delta_mode, "text_dilate": self.text_dilate, "text_stride": self.text_stride,
                "sticky_peak_rescue": self.sticky_peak_rescue}


class VideoDecodeError(RuntimeError):
    """No frame could be decoded (the toolkit's ``evaluate_single`` returns the float 0.0 then, Q-PADVC-3)."""


# --- formula --------------------------------------------------------------------------------------------

def power_p(x: float, p: float) -> float:
    return math.pow(x, p) if x > 0 else 0.0


def padvc_raw_formula(geo: Sequence[float], segments: int, pvd: int, e_text_max: float, p: float = 0.7, *,
                      divide_by_segments: bool = True) -> dict:
    """§9: the score and its parts. ``divide_by_segments`` False is the paper formula (Q-PADVC-1 improved)."""
    g = 0.0
    for e in geo:
        g += power_p(float(e), p)
    avg = g / max(int(segments), 1) if divide_by_segments else g
    factor = math.log(int(pvd) + math.e)
    burden = power_p(float(e_text_max), p)
    raw = avg / (factor * (1 + burden)) if len(geo) else 0.0
    return {"padvc_raw": float(raw), "geo_evolution_sum_p": float(g), "geo_evolution_avg_p": float(avg),
            "pvd_factor": float(factor), "max_text_burden_p": float(burden)}


def padvc_center(raw: float, mu: float, sigma: float, eps: float = FIT_EPS) -> float:
    """§9: exp(−z²/2), z = (ln(max(raw, 0) + eps) − μ) / max(σ, 1e-12)."""
    z = (math.log(max(float(raw), 0.0) + eps) - mu) / max(float(sigma), MIN_SIGMA)
    return math.exp(-0.5 * z * z)


# --- per-video computation ------------------------------------------------------------------------------

def _t(index: int, fps: float):
    return float(index / fps) if fps > 0 else None


def _scan_pass(path, cfg: PadvcConfig, decoder: str, chunk_size: int, masker: TextMasker, device="cpu"):
    """Pass 1: exact per-pair signals; the BGR frames at 0, stride, 2·stride, … are OCR'd as they are decoded
    (``masker.prefetch``) and not kept. Frames decode onto ``device`` (nvdec needs a GPU one) and the pair
    signals run there; only the frames OCR reads come to the host."""
    frames = VideoFrames(path, decoder=decoder, chunk_size=chunk_size, device=device)
    stream = make_signal_stream("auto", frames.device, 25, absolute=cfg.delta_mode == "absolute")
    start = 0
    for chunk in frames:
        stream.update(chunk)
        n = int(chunk.shape[0])
        first = -(-start // cfg.text_stride) * cfg.text_stride
        for i in range(first, start + n, cfg.text_stride):
            masker.prefetch(i, chunk[i - start].cpu().numpy())
        start += n
    return frames, stream.finish()


def _endpoint_pass(path, ocr_indices, gray_indices, decoder: str, chunk_size: int,
                   masker: TextMasker, device="cpu") -> dict[int, np.ndarray]:
    """Pass 2 (one sequential decode, no seeking): OCR the event end frames and gap midpoints as they are
    decoded, and keep the gray frames of the event endpoints only."""
    ocr_set, gray_set = set(ocr_indices), set(gray_indices)
    last = max(ocr_set | gray_set, default=-1)
    grays: dict[int, np.ndarray] = {}
    seen: set[int] = set()
    if last < 0:
        return grays
    start = 0
    for chunk in VideoFrames(path, decoder=decoder, chunk_size=chunk_size, device=device):
        n = int(chunk.shape[0])
        for i in range(start, start + n):
            if i in ocr_set or i in gray_set:
                frame = chunk[i - start].cpu().numpy()
                if i in ocr_set:
                    masker.prefetch(i, frame)
                if i in gray_set:
                    grays[i] = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
                seen.add(i)
        start += n
        if start > last:
            break
    missing = sorted((ocr_set | gray_set) - seen)
    if missing:
        raise VideoDecodeError(f"second decode pass ended before frame(s) {missing[:5]}")
    return grays


class _SceneMismatch(RuntimeError):
    """The render's text-box record does not describe the decoded video (frame count or frame size)."""


def compute_padvc_details(video_path: str | Path, pvd, masker: TextMasker, *, config: PadvcConfig = PadvcConfig(),
                          profile: Profile = REFERENCE, decoder: str = "opencv", chunk_size: int = PADVC_CHUNK,
                          device: str | torch.device = "cpu") -> dict:
    """The toolkit's ``evaluate_single(..., return_details=True)`` payload (§10.1 groups 2–10) for one video.

    ``pvd``: a ``PvdResult`` (or any object with ``pvd_raw``). Raises ``VideoDecodeError`` when no frame
    decodes (missing file included); callers turn that into the profile's row.

    Text masks: from ``masker`` (OCR), or, when its settings select the ``scene`` backend, from the text boxes the
    render recorded next to the video (``prism_fast.execute.textboxes``); a video without a usable record falls
    back to ``masker``'s OCR. ``_mask_source`` (scene | ocr) and ``_mask_source_detail`` (why not scene) say
    which.
    """
    path = str(video_path)
    detail = None
    if getattr(masker, "settings", None) is not None and masker.settings.backend == "scene" and \
            not isinstance(masker, SceneTextMasker):
        from prism_fast.execute.textboxes import load_sidecar

        boxes, detail = load_sidecar(path) if Path(path).exists() else (None, "scene_masks_missing: no video")
        if boxes is not None:
            try:
                out = _details(path, pvd, SceneTextMasker(boxes, masker.settings), config, profile, decoder,
                               chunk_size, device, scene=boxes)
                out.update(_mask_source="scene", _mask_source_detail=None)
                return out
            except _SceneMismatch as exc:
                detail = f"scene_masks_mismatch: {exc}"
    if isinstance(masker, TextMasker) and masker.settings.reuse == "text" and Path(path).exists():
        # OCR reuse keyed on the render's text boxes (video/ocr.py "OCR reuse"); without a usable record the
        # reuse rule falls back to whole-frame comparisons
        from prism_fast.execute.textboxes import load_sidecar

        masker.scene = load_sidecar(path)[0]
        if masker.scene is not None:
            try:
                out = _details(path, pvd, masker, config, profile, decoder, chunk_size, device, scene=masker.scene)
                out.update(_mask_source="ocr", _mask_source_detail=detail)
                return out
            except _SceneMismatch:
                masker = TextMasker(masker.engine, masker.settings, masker.frame_cache, masker.video_cache)
    out = _details(path, pvd, masker, config, profile, decoder, chunk_size, device)
    out.update(_mask_source="ocr", _mask_source_detail=detail)
    return out


def _details(path: str, pvd, masker, cfg: PadvcConfig, profile: Profile, decoder: str, chunk_size: int, device,
             scene=None) -> dict:
    if not Path(path).exists():
        raise VideoDecodeError(f"video file missing: {path}")
    probe = probe_video(path)
    frames, totals = _scan_pass(path, cfg, decoder, chunk_size, masker, device)
    n = totals.frame_count
    if n == 0:
        raise VideoDecodeError(frames.decode_error or "no frame could be decoded")
    if scene is not None and (scene.frames != n or (scene.pixel_height, scene.pixel_width) !=
                              (totals.height, totals.width)):
        raise _SceneMismatch(f"the record has {scene.frames} frames of {scene.pixel_width}x{scene.pixel_height}, "
                             f"the video {n} of {totals.width}x{totals.height}")
    fps = probe.fps
    dev = torch.device(device)

    diffs = totals.absolute if cfg.delta_mode == "absolute" else totals.positive
    thresh = event_threshold(diffs, cfg.event_threshold_mode, absolute=cfg.event_threshold_abs,
                             ratio=cfg.event_threshold_ratio)
    events = [(int(s), int(e)) for s, e in segment_events(diffs, thresh).tolist()]
    mids = [(events[k - 1][1] + events[k][0]) // 2 for k in range(1, len(events))]
    grays = _endpoint_pass(path, [e for _, e in events] + mids, [i for ev in events for i in ev], frames.decoder,
                           chunk_size, masker, device)
    hw = (totals.height, totals.width)

    def energies(polys_list):
        out: list[float] = []
        for b in range(0, len(polys_list), GEO_BATCH):   # bounded batches: int32 Laplacians are 4 B/pixel
            masks = torch.from_numpy(np.stack([fill_text_mask(hw, p) for p in polys_list[b:b + GEO_BATCH]]))
            out.extend(text_energies(masks.to(dev)).cpu().tolist())
        return out

    # Step 1 (toolkit order, which fixes the cache_hit bookkeeping): stride frames → E_text series.
    stride_idx = list(range(0, n, cfg.text_stride))
    stride_res = [masker.polygons_at(i) for i in stride_idx]
    stride_e = energies([r.polys for r in stride_res])
    series, e_max, peak = [], 0.0, 0
    for r, e in zip(stride_res, stride_e):
        series.append({"frame_index": r.index, "time_sec": _t(r.index, fps), "raw_text_energy": float(e),
                       "box_count": r.box_count, "cache_hit": r.cache_hit})
        if e > e_max:   # strict: first argmax
            e_max, peak = e, r.index

    # Step 2: events → E_geo with the dilated end-frame mask.
    end_res = [masker.polygons_at(e) for _, e in events]
    geo: list[float] = []
    for b in range(0, len(events), GEO_BATCH):
        batch = events[b:b + GEO_BATCH]
        g_s = torch.from_numpy(np.stack([grays[s] for s, _ in batch])).to(dev)
        g_e = torch.from_numpy(np.stack([grays[e] for _, e in batch])).to(dev)
        masks = torch.from_numpy(np.stack([fill_text_mask(hw, r.polys) for r in end_res[b:b + GEO_BATCH]])).to(dev)
        geo.extend(geo_energies(g_s, g_e, dilate(masks, cfg.text_dilate)).cpu().tolist())
    details = []
    for k, ((s, e), r, g) in enumerate(zip(events, end_res, geo)):
        details.append({"event_index": k, "start_frame": s, "end_frame": e, "start_time_sec": _t(s, fps),
                        "end_time_sec": _t(e, fps), "duration_frames": max(0, e - s),
                        "text_box_count_end_frame": r.box_count, "text_mask_cache_hit": r.cache_hit,
                        "raw_geo_energy": float(g), "geo_energy_p": power_p(g, cfg.p)})

    # Step 3: S from the undilated masks of the gap midpoints.
    mid_res = [masker.polygons_at(m) for m in mids]
    mid_e = energies([r.polys for r in mid_res])
    segments, boundaries = 1, []
    for k, (m, r, e) in enumerate(zip(mids, mid_res, mid_e)):
        new = bool(e < SEGMENT_TEXT_THRESHOLD)
        segments += int(new)
        boundaries.append({"boundary_index": k, "prev_event_end_frame": events[k][1],
                           "next_event_start_frame": events[k + 1][0], "mid_frame_index": m,
                           "mid_time_sec": _t(m, fps), "mid_raw_text_energy": float(e),
                           "text_mask_cache_hit": r.cache_hit, "new_segment": new})
    masker.flush()

    e_text_max_used, peak_used = e_max, peak
    if profile.fixes("Q-PADVC-14"):   # improved: max over every OCR'd frame (undilated masks)
        extra_e = list(zip([i for _, i in events], energies([r.polys for r in end_res]))) + list(zip(mids, mid_e))
        for i, e in extra_e:
            if e > e_text_max_used:
                e_text_max_used, peak_used = e, i
    parts = padvc_raw_formula(geo, segments, pvd.pvd_raw, e_text_max_used, cfg.p,
                              divide_by_segments=not profile.fixes("Q-PADVC-1"))
    rec_hits = sum(int(r.cache_hit) for r in stride_res + end_res + mid_res)
    rec_total = len(stride_res) + len(end_res) + len(mid_res)
    out = {
        "detail_version": DETAIL_VERSION,
        "padvc_raw": parts["padvc_raw"], "padvc_norm": None, "padvc_selected": parts["padvc_raw"],
        "score_output": "raw", "score_norm_method": "none", "norm_mu": None, "norm_sigma": None,
        "norm_log_space": True, "p_exponent": float(cfg.p), "video_fps": float(fps), "video_frame_count": int(n),
        "video_source_frame_count": int(probe.container_frame_count),
        "video_duration_sec": float(n / fps) if fps > 0 else None, "text_sample_stride": cfg.text_stride,
        "text_peak_frame_index": int(peak_used), "text_peak_time_sec": _t(peak_used, fps),
        "sampled_text_energy_series": series,
        "frame_diff_series": [float(d) for d in diffs.tolist()], "frame_diff_count": int(diffs.numel()),
        "pvd_raw": int(pvd.pvd_raw), "pvd_factor": parts["pvd_factor"],
        "max_raw_text_energy": float(e_text_max_used), "max_text_burden_p": parts["max_text_burden_p"],
        "geo_evolution_sum_p": parts["geo_evolution_sum_p"], "geo_evolution_avg_p": parts["geo_evolution_avg_p"],
        "animation_segment_count": int(segments), "segment_text_energy_threshold": SEGMENT_TEXT_THRESHOLD,
        "segment_boundary_details": boundaries,
        "event_count": len(events), "event_threshold_mode": cfg.event_threshold_mode,
        "event_threshold_abs": float(cfg.event_threshold_abs), "event_threshold_ratio": float(cfg.event_threshold_ratio),
        "event_threshold": float(thresh), "delta_mode": cfg.delta_mode,
        "event_rescue_info": {"applied": False, "original_event_count": len(events),
                              "original_above_ratio": (sum(e - s for s, e in events) / diffs.numel()
                                                       if diffs.numel() else 0.0)},
        "events": [[s, e] for s, e in events], "event_energy_details": details,
        "ocr_cache_hits": rec_hits, "ocr_cache_misses": rec_total - rec_hits,
        "ocr_cache_path": str(masker.video_cache.path) if masker.video_cache is not None else None,
        # ours (not in the toolkit's payload): what OCR really cost, and how the frames were decoded
        "_ocr_requests": rec_total, "_ocr_calls": masker.stats.ocr_calls, "_ocr_reused": masker.stats.reused,
        "_decoder": frames.decoder, "_decoder_fallback": frames.decoder_fallback,
    }
    return out


# --- rows (§10.1) ---------------------------------------------------------------------------------------

BASE_KEYS = ("id", "source_id", "difficulty", "difficulty_score", "audit_success", "visual_structure_pass",
             "visual_structure_rate", "render_success", "video_path")


def base_fields(task: Mapping, audit: Mapping, render: Mapping) -> dict:
    """The 10 base fields of every row (detail_version first)."""
    return {"detail_version": DETAIL_VERSION, "id": task.get("id"), "source_id": task.get("source_id"),
            "difficulty": task.get("difficulty"), "difficulty_score": task.get("difficulty_score"),
            "audit_success": audit.get("audit_success"), "visual_structure_pass": audit.get("visual_structure_pass"),
            "visual_structure_rate": audit.get("visual_structure_rate"), "render_success": render.get("success"),
            "video_path": render.get("video_path")}


def gate_error(task: Mapping, audit: Mapping, render: Mapping) -> str | None:
    """§2.3 gates in order; the message of the first failure, else None."""
    if audit.get("audit_success") != 1:
        return "audit_success != 1"
    if not render.get("success") or not render.get("video_path"):
        return "render video missing"
    if not task.get("instruction_text"):
        return "instruction_text missing"
    return None


def finish_ok_row(base: dict, details: dict, params: PadvcParams, *, profile: Profile = REFERENCE) -> dict:
    """§10.1 key order for an ok row; ``padvc_norm`` is overwritten with the center value."""
    row = dict(base)
    for key, value in details.items():
        if key not in ("detail_version",) and not key.startswith("_"):
            row[key] = value
    center = padvc_center(row["padvc_raw"], params.mu, params.sigma, params.eps)
    row["padvc_norm"] = center
    passed = int(base.get("visual_structure_pass") or 0)
    row["padvc_center"] = center
    row["u_padvc"] = float(row["padvc_raw"] * passed)
    row["padvc_norm_name"] = "padvc_center"
    row["status"] = "ok"
    row["profile"] = profile.name
    row["params_source"] = params.source
    if profile.fixes("Q-PADVC-16"):
        row["u_padvc_center"] = float(center * passed)
    # ours: where the text masks came from (scene: the render's text boxes; ocr: OCR, with why not scene) and
    # how many OCR requests were answered by reusing another frame's result (OcrSettings.reuse)
    if "_mask_source" in details:
        row["mask_source"] = details["_mask_source"]
        row["mask_source_detail"] = details.get("_mask_source_detail")
    if "_ocr_reused" in details:
        row["ocr_reused"] = details["_ocr_reused"]
    return row


def error_row(base: dict, message: str, *, profile: Profile = REFERENCE) -> dict:
    row = dict(base)
    row.update(status="error", error=message, profile=profile.name)
    return row


# --- summary (§10.2) ------------------------------------------------------------------------------------

def _avg(values) -> float:
    values = [float(v) for v in values if v is not None]
    return sum(values) / len(values) if values else 0.0


def summarize_rows(rows: Sequence[Mapping]) -> dict:
    ok = [r for r in rows if r.get("status") == "ok"]
    vp = [r for r in ok if r.get("visual_structure_pass") == 1]
    out = {
        "detail_version": DETAIL_VERSION,
        "formula": {"padvc_center": "exp(-0.5 * ((log(padvc_raw + eps) - mu) / sigma)^2)",
                    "u_padvc": "padvc_raw * visual_structure_pass"},
        "total_records": len(rows), "render_success_count": sum(1 for r in rows if r.get("render_success")),
        "scored_count": len(ok), "visual_pass_count": len(vp),
        "avg_padvc_raw": _avg(r["padvc_raw"] for r in ok), "avg_padvc_center": _avg(r["padvc_center"] for r in ok),
        "avg_u_padvc": _avg(r["u_padvc"] for r in ok),
        "avg_visual_structure_pass_scored": _avg(r.get("visual_structure_pass") or 0 for r in ok),
        "avg_visual_structure_rate_scored": _avg(r.get("visual_structure_rate") or 0 for r in ok),
        "avg_padvc_raw_visual_pass": _avg(r["padvc_raw"] for r in vp),
        "avg_padvc_center_visual_pass": _avg(r["padvc_center"] for r in vp),
        "avg_u_padvc_visual_pass": _avg(r["u_padvc"] for r in vp),
        "by_difficulty": {},
    }
    for d in ("easy", "medium", "hard"):
        sub = [r for r in ok if r.get("difficulty") == d]
        out["by_difficulty"][d] = {"count": len(sub), "avg_padvc_raw": _avg(r["padvc_raw"] for r in sub),
                                   "avg_padvc_center": _avg(r["padvc_center"] for r in sub),
                                   "avg_u_padvc": _avg(r["u_padvc"] for r in sub),
                                   "avg_visual_structure_pass": _avg(r.get("visual_structure_pass") or 0 for r in sub),
                                   "avg_visual_structure_rate": _avg(r.get("visual_structure_rate") or 0 for r in sub)}
    return out


# --- reference fit (§11) --------------------------------------------------------------------------------

def fit_padvc_reference(records: Sequence[Mapping], *, eps: float = FIT_EPS, profile: Profile = REFERENCE) -> dict:
    """μ = mean(ln(raw + eps)), σ = population std (≤ 0 → 1e-12) over the status-ok records.

    Reference keeps zeros (they enter at ln(eps), Q-PADVC-4); improved fits over raw > 0 only and reports
    ``zero_count``. Zero usable records raise (the toolkit crashes)."""
    ok = [r for r in records if r.get("status") == "ok"]
    raws = [float(r["padvc_raw"]) for r in ok]
    fit_values = [v for v in raws if v > 0] if profile.fixes("Q-PADVC-4") else raws
    if not fit_values:
        raise ValueError(f"PADVC fit: no usable rows ({len(ok)} ok of {len(records)})")
    logs = [math.log(v + eps) for v in fit_values]
    sigma = statistics.pstdev(logs)
    out = {"total_records": len(records), "success_records": len(ok), "failed_records": len(records) - len(ok),
           "sample_count": len(raws), "eps": eps, "mu": float(statistics.fmean(logs)),
           "sigma": float(sigma if sigma > 0 else MIN_SIGMA)}
    for prefix, arr in (("raw", np.asarray(raws, dtype=float)), ("log", np.asarray(logs, dtype=float))):
        out[f"{prefix}_min"] = float(arr.min())
        for q, name in ((5, "p5"), (25, "p25"), (50, "median"), (75, "p75"), (95, "p95")):
            out[f"{prefix}_{name}"] = float(np.percentile(arr, q))
        out[f"{prefix}_max"] = float(arr.max())
    if profile.fixes("Q-PADVC-4"):
        out["zero_count"] = len(raws) - len(fit_values)
    out.update(profile.describe())
    return out
