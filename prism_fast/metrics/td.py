"""Temporal Density (spec td.md): TD_raw, TD_center, uTD, output rows, summary, and the reference fit.

    r_t       = count(|gray_t − gray_{t−1}| > τ) / (H·W)       per decoded consecutive pair
    TD_raw    = Σ_t r_t / ((N − 1) / fps)                       N = container frame count   (reference)
    TD_center = exp(−½ z²),  z = (ln(TD_raw + eps) − μ) / σ
    uTD       = TD_center × visual_structure_rate

Pure core: plain arguments in, dicts/dataclasses out. (μ, σ, eps) come in as plain numbers per row
(``TDParams``); the caller picks them by language. Quirk switches: Q-TD-1 (denominator), Q-TD-2 (missing
video), Q-TD-3 (zeros in the fit), Q-TD-4 (implicit eps).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

import numpy as np

from prism_fast.profile import REFERENCE, Profile
from prism_fast.metrics.params import (TD_FIT_SENSITIVE, TOOLKIT_DEFAULT_EPS, TOOLKIT_DEFAULT_MU,  # noqa: F401
                                       TOOLKIT_DEFAULT_SIGMA, TDParams, check_params_for_profile,
                                       td_params_from_json)
from prism_fast.metrics.td_rows import (PADVC_PASSTHROUGH, TD_STATUSES, TDRaw,  # noqa: F401
                                       build_td_row, td_center)
from prism_fast.metrics.td_rows import no_video as _no_video
from prism_fast.video.cpu_signals import Cv2FrameSignalStream, PlainTotals, make_signal_stream
from prism_fast.video.decode import DEFAULT_CHUNK, VideoFrames, VideoProbe, probe_video

if TYPE_CHECKING:  # torch is imported only by the tensor paths: a CPU TD_raw never loads it (scaling.md)
    import torch

    from prism_kernels import StreamTotals

TD_PIXEL_THRESHOLD = 25
FIT_EMPTY_EPS = 1e-8
FIT_MIN_SIGMA = 1e-12

BIN_EDGES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


# --- TD_raw -------------------------------------------------------------------------------------------

def sequential_sum(values: Iterable[float]) -> float:
    """Σ in order with plain float64 additions — the toolkit's ``total += r`` loop (never fsum, never the
    compensated ``sum`` of Python ≥ 3.12)."""
    total = 0.0
    for v in values:
        total += v
    return total


def plain_change_ratios(changed: Sequence[int], pixels_per_frame: int) -> list[float]:
    """``prism_kernels.change_ratios`` for Python ints, without torch: ``float(count) / float(H·W)``, one IEEE
    double division each. Bit for bit the kernel's (int64 → float64, then a correctly rounded division): the
    counts and the pixel total are integers far below 2**53, so both conversions are exact
    (tests/metrics/test_td.py compares the two)."""
    if pixels_per_frame <= 0:
        raise ValueError(f"pixels_per_frame: expected > 0, got {pixels_per_frame}")
    total = float(int(pixels_per_frame))
    return [float(int(c)) / total for c in changed]


def td_raw_from_counts(changed: torch.Tensor | Sequence[int], pixels_per_frame: int, *, fps: float,
                       container_frame_count: int, decoded_frame_count: int,
                       profile: Profile = REFERENCE) -> TDRaw:
    """TD_raw from the per-pair changed-pixel counts of a decoded video (td.md §2).

    ``decoded_frame_count`` ≥ 1 is assumed (the caller handles "no frame decoded").
    """
    if hasattr(changed, "cpu"):  # a tensor (the batched streams): prism_kernels' division, on the CPU
        from prism_kernels import change_ratios

        ratios = change_ratios(changed.cpu(), pixels_per_frame).tolist()
    else:
        ratios = plain_change_ratios(changed, pixels_per_frame)
    s = sequential_sum(ratios)
    pairs = len(ratios)
    common = dict(fps=fps, container_frame_count=container_frame_count,
                  decoded_frame_count=decoded_frame_count, pair_count=pairs, ratio_sum=s)
    if profile.fixes("Q-TD-1"):  # improved: divide by the decoded pair count
        if fps <= 0 or pairs == 0:
            return TDRaw(0.0, "zero_duration", "zero_duration",
                         f"fps={fps}, decoded pairs={pairs}", **common)
        return TDRaw(float(fps * s / pairs), "ok", **common)
    # reference: D = (N − 1) / fps with the container-reported N, even if another number of pairs decoded
    duration = _container_duration(fps, container_frame_count)
    if duration <= 0:
        return TDRaw(0.0, "zero_duration", "zero_duration",
                     f"fps={fps}, container_frame_count={container_frame_count}", **common)
    return TDRaw(float(s / duration), "ok", **common)


def _container_duration(fps: float, n: int) -> float:
    return (n - 1) / fps if fps > 0 and n > 1 else 0.0


def td_raw_from_stream(totals: StreamTotals | PlainTotals, probe: VideoProbe, *, profile: Profile = REFERENCE,
                       decoder: str | None = None, decoder_fallback: str | None = None) -> TDRaw:
    """TD_raw from a finished ``FrameSignalStream`` (lets PADVC and TD share one decode pass)."""
    extra = dict(fps=probe.fps, container_frame_count=probe.container_frame_count, decoder=decoder,
                 decoder_fallback=decoder_fallback)
    if totals.frame_count == 0:
        return TDRaw(0.0, "decode_failed", "no_frames", "no frame could be decoded", **extra)
    raw = td_raw_from_counts(totals.changed, totals.height * totals.width, fps=probe.fps,
                             container_frame_count=probe.container_frame_count,
                             decoded_frame_count=totals.frame_count, profile=profile)
    return replace(raw, decoder=decoder, decoder_fallback=decoder_fallback)


def compute_td_raw(video_path: str | Path, *, pixel_threshold: int = TD_PIXEL_THRESHOLD,
                   profile: Profile = REFERENCE, decoder: str = "opencv", chunk_size: int = DEFAULT_CHUNK,
                   device: str | torch.device = "cpu", signal_backend: str = "auto",
                   keep: dict | None = None) -> TDRaw:
    """TD_raw of one video file: streamed CPU decode + exact signals; never raises for a bad video.

    ``signal_backend``: ``auto`` = OpenCV per frame on a CPU device, batched prism_kernels on a GPU;
    both give identical integers (tests/video/test_cpu_signals.py).

    Reference: an unopenable video, a zero container duration or no decodable first frame give 0.0, as
    the toolkit does — here with a non-"ok" status saying which.

    ``keep``: ``{index: None}`` of frames to keep from this decode (BGR ``(H, W, 3) uint8`` put in its place: an
    array on the CPU path, a tensor on the batched one; the video witness reads them, video/witness.py).
    """
    probe = probe_video(video_path)
    if not probe.opened:
        kind = "file_missing" if probe.error_detail == "video file missing" else "open_failed"
        return TDRaw(0.0, "decode_failed", kind, probe.error_detail)
    if not profile.fixes("Q-TD-1") and _container_duration(probe.fps, probe.container_frame_count) <= 0:
        # the toolkit returns before reading any frame
        return TDRaw(0.0, "zero_duration", "zero_duration",
                     f"fps={probe.fps}, container_frame_count={probe.container_frame_count}",
                     fps=probe.fps, container_frame_count=probe.container_frame_count)
    frames = VideoFrames(video_path, decoder=decoder, chunk_size=chunk_size, device=device)
    stream = make_signal_stream(signal_backend, frames.device_type, pixel_threshold)
    if isinstance(stream, Cv2FrameSignalStream):  # CPU: frame by frame, no batches (same frames and integers)
        for i, frame in enumerate(frames.iter_frames()):
            stream.update_bgr_frame(frame)
            if keep and i in keep:
                keep[i] = frame.copy()  # (a NumPy array: the CPU path loads no torch)
    else:
        start = 0
        for chunk in frames:
            stream.update(chunk)
            for i in range(start, start + int(chunk.shape[0])) if keep else ():
                if i in keep:
                    keep[i] = chunk[i - start].to("cpu").clone()
            start += int(chunk.shape[0])
    totals = stream.finish_plain() if isinstance(stream, Cv2FrameSignalStream) else stream.finish()
    raw = td_raw_from_stream(totals, probe, profile=profile, decoder=frames.decoder,
                             decoder_fallback=frames.decoder_fallback)
    if frames.decode_error:
        if raw.status == "decode_failed":
            raw = replace(raw, error_kind="open_failed", error_detail=frames.decode_error)
        elif raw.error_kind is None:
            # decoding stopped early (the toolkit also stops at the first failed read): keep it on record
            raw = replace(raw, error_kind="decode_truncated", error_detail=frames.decode_error)
    return raw


def score_td_row(base_row: Mapping, params: TDParams, *, profile: Profile = REFERENCE,
                 pixel_threshold: int = TD_PIXEL_THRESHOLD, decoder: str = "opencv",
                 chunk_size: int = DEFAULT_CHUNK, device: str | torch.device = "cpu",
                 signal_backend: str = "auto") -> dict:
    """The toolkit's ``process_one``: gate on the render, compute TD_raw, centre, build the row."""
    check_params_for_profile(params, profile)
    td = _no_video(base_row)
    if td is None:
        td = compute_td_raw(base_row["video_path"], pixel_threshold=pixel_threshold, profile=profile,
                            decoder=decoder, chunk_size=chunk_size, device=device,
                            signal_backend=signal_backend)
    return build_td_row(base_row, td, params, profile=profile)


# --- summary (summary.json) ---------------------------------------------------------------------------

def _mean(values: list) -> float:
    return sum(values) / len(values) if values else 0.0


def _median(values: list) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _values(rows: list[Mapping], key: str, default=0.0) -> list:
    # improved rows may hold None (no video): excluded from the means (Q-TD-2); reference rows never do
    return [v for v in (row.get(key, default) for row in rows) if v is not None]


def summarize_subset(rows: list[Mapping]) -> dict:
    raw, center, u = _values(rows, "td_raw"), _values(rows, "td_center"), _values(rows, "u_td")
    return {
        "count": len(rows),
        "mean_td_raw": _mean(raw), "median_td_raw": _median(raw),
        "mean_td_center": _mean(center), "median_td_center": _median(center),
        "mean_u_td": _mean(u), "median_u_td": _median(u),
        "mean_visual_rate": _mean(_values(rows, "visual_structure_rate")),
    }


def summarize_bins(rows: list[Mapping]) -> list[dict]:
    """Half-open [lo, hi) bins of td_center, the last one closed [0.8, 1.0]."""
    bins = []
    scored = [row for row in rows if row.get("td_center", 0.0) is not None]
    for i in range(len(BIN_EDGES) - 1):
        lo, hi = BIN_EDGES[i], BIN_EDGES[i + 1]
        last = i == len(BIN_EDGES) - 2
        subset = [r for r in scored if lo <= r.get("td_center", 0.0) and
                  (r.get("td_center", 0.0) <= hi if last else r.get("td_center", 0.0) < hi)]
        bins.append({
            "range": [lo, hi], "count": len(subset),
            "visual_pass_rate": _mean(_values(subset, "visual_structure_pass", 0)),
            "mean_td_raw": _mean(_values(subset, "td_raw")),
            "mean_u_td": _mean(_values(subset, "u_td")),
        })
    return bins


def make_td_summary(rows: list[Mapping], params: TDParams, pixel_threshold: int, source_jsonl: str,
                    output_jsonl: str, *, profile: Profile = REFERENCE) -> dict:
    """``summary.json`` of score_td (td.md §4), project fields appended."""
    return {
        "params": {"mu": params.mu, "sigma": params.sigma, "eps": params.eps, "threshold": pixel_threshold},
        "source_jsonl": source_jsonl,
        "output_jsonl": output_jsonl,
        "overall": summarize_subset(list(rows)),
        "render_success": summarize_subset([r for r in rows if r.get("render_success")]),
        "visual_pass": summarize_subset([r for r in rows if r.get("visual_structure_pass") == 1]),
        "visual_fail": summarize_subset([r for r in rows if r.get("visual_structure_pass") != 1]),
        "by_difficulty": {d: summarize_subset([r for r in rows if r.get("difficulty") == d])
                          for d in ("easy", "medium", "hard")},
        "td_center_bins": summarize_bins(list(rows)),
        **profile.describe(),
        "params_source": params.source,
    }


# --- reference fit (fit_reference_td.py) --------------------------------------------------------------

def reference_record(row: Mapping, video_root: str | Path | None, *, profile: Profile = REFERENCE,
                     pixel_threshold: int = TD_PIXEL_THRESHOLD, decoder: str = "opencv",
                     chunk_size: int = DEFAULT_CHUNK, device: str | torch.device = "cpu",
                     signal_backend: str = "auto") -> dict:
    """One ``td_reference_raw_scores.jsonl`` record: ``video_path`` if it exists, else
    ``<video_root>/<id>.mp4``; missing → status "error"; anything else "ok" with td_raw (0.0 when the
    video cannot be read, as the toolkit; ``td_status`` says so)."""
    path = None
    if row.get("video_path") and Path(row["video_path"]).exists():
        path = Path(row["video_path"])
    elif video_root is not None and (Path(video_root) / f"{row['id']}.mp4").exists():
        path = Path(video_root) / f"{row['id']}.mp4"
    record = {"id": row["id"], "source_id": row.get("source_id"), "language": row.get("language"),
              "video_path": str(path) if path else None}
    if path is None:
        record.update(status="error", error="FileNotFoundError: video missing")
        return record
    td = compute_td_raw(path, pixel_threshold=pixel_threshold, profile=profile, decoder=decoder,
                        chunk_size=chunk_size, device=device, signal_backend=signal_backend)
    record.update(status="ok", td_raw=float(td.td_raw), td_status=td.status, decoder=td.decoder)
    return record


def fit_td_reference(records: Sequence[Mapping], *, profile: Profile = REFERENCE) -> dict:
    """(μ, σ, eps) and the distribution stats of ``td_center_params.json`` (td.md §5).

    eps = the smallest strictly positive td_raw of the ok records (1e-8 if none); L = ln(td_raw + eps);
    μ = mean(L), σ = population std (≤ 0 → 1e-12). Reference keeps zeros in L (at ln eps, Q-TD-3);
    improved fits μ, σ over td_raw > 0 only and reports ``zero_count``. The caller adds threshold,
    dataset_jsonl, video_root and language.
    """
    ok = [r for r in records if r.get("status") == "ok"]
    raws = [float(r["td_raw"]) for r in ok]
    positives = sorted(v for v in raws if v > 0)
    eps = float(positives[0]) if positives else FIT_EMPTY_EPS
    fit_values = positives if profile.fixes("Q-TD-3") else raws  # improved: zeros excluded from μ, σ
    if not fit_values:
        raise ValueError(f"TD fit: no usable rows ({len(ok)} ok of {len(records)}; "
                         f"{len(raws) - len(positives)} zero) — nothing to fit")
    logs = [math.log(v + eps) for v in fit_values]
    mu = statistics.fmean(logs)
    sigma = statistics.pstdev(logs)
    if sigma <= 0:
        sigma = FIT_MIN_SIGMA
    out = {
        "total_records": len(records),
        "success_records": len(ok),
        "failed_records": len(records) - len(ok),
        "sample_count": len(raws),
        "threshold": None,
        "eps": eps,
        "mu": float(mu),
        "sigma": float(sigma),
    }
    for prefix, arr in (("raw", np.asarray(raws, dtype=float)), ("log", np.asarray(logs, dtype=float))):
        out[f"{prefix}_min"] = float(arr.min()) if len(arr) else 0.0
        for q, name in ((5, "p5"), (25, "p25"), (50, "median"), (75, "p75"), (95, "p95")):
            out[f"{prefix}_{name}"] = float(np.percentile(arr, q)) if len(arr) else 0.0
        out[f"{prefix}_max"] = float(arr.max()) if len(arr) else 0.0
    if profile.fixes("Q-TD-3"):
        out["zero_count"] = len(raws) - len(positives)
        out["fit_count"] = len(fit_values)
    out.update(profile.describe())
    return out


def params_from_fit(fit: Mapping, *, profile: Profile, source: str) -> TDParams:
    """TDParams from a ``fit_td_reference`` result, tagged with the fit-sensitive switches of ``profile``."""
    quirks = frozenset(q for q in TD_FIT_SENSITIVE if profile.fixes(q))
    return TDParams(float(fit["mu"]), float(fit["sigma"]), float(fit["eps"]), source, quirks)
