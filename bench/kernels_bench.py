"""CPU benchmark: prism_kernels vs the per-frame NumPy/OpenCV oracle on the same frames (decode excluded).

Work per clip (what TD and PADVC need from pixels, masks given): gray conversion of every frame, the
positive-increment signal and TD change counts of every pair, event segmentation, E_geo of every event
with its 7×7-dilated text mask, and E_text of every 15th frame. Both paths get the same in-memory BGR
frames and the same fixed masks; outputs are checked equal before timing is reported.

    .venv/bin/python -m bench.kernels_bench [--frames 150] [--chunk 32] [--threads N] [--device cpu]

On a CPU it also times the OpenCV per-frame signal backend (prism_fast.video.cpu_signals) that the video
stage uses on CPU devices.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import torch

from bench import oracle
from prism_kernels import (FrameSignalStream, dilate, geo_energies, segment_events, text_energies)

TEXT_STRIDE = 15


def make_inputs(frames: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A 480×854 Manim-like clip and one fixed 0/255 text mask per frame (a few boxes each)."""
    clip = oracle.synthetic_clip(seed, frames=frames, height=480, width=854)
    rng = np.random.default_rng(seed + 1)
    masks = np.zeros((frames, 480, 854), dtype=np.uint8)
    for t in range(frames):
        for _ in range(3):
            y, x = rng.integers(0, 440), rng.integers(0, 700)
            masks[t, y:y + rng.integers(20, 40), x:x + rng.integers(60, 150)] = 255
    return clip, masks


def run_oracle(clip: np.ndarray, masks: np.ndarray) -> dict:
    sig = oracle.per_frame_signals(list(clip))
    grays = sig["grays"]
    geo = [oracle.geo_energy(grays[s], grays[e], oracle.dilate(masks[e])) for s, e in sig["events"]]
    text = [oracle.text_energy(masks[t]) for t in range(0, len(clip), TEXT_STRIDE)]
    return {"positive": sig["positive"], "changed": sig["changed"], "events": [list(e) for e in sig["events"]],
            "geo": geo, "text": text}


def run_kernels(clip: torch.Tensor, masks: torch.Tensor, chunk: int, stream=None) -> dict:
    stream = stream if stream is not None else FrameSignalStream(25)
    grays = [stream.update(clip[i:i + chunk]) for i in range(0, clip.shape[0], chunk)]
    totals = stream.finish()
    gray = torch.cat(grays)
    events = segment_events(totals.positive, 50_000.0)
    s, e = events[:, 0], events[:, 1]
    geo = geo_energies(gray[s], gray[e], dilate(masks[e]))
    text = text_energies(masks[::TEXT_STRIDE])
    if clip.device.type == "cuda":
        torch.cuda.synchronize()
    return {"positive": totals.positive.tolist(), "changed": totals.changed.tolist(),
            "events": events.tolist(), "geo": geo.tolist(), "text": text.tolist()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=150)
    ap.add_argument("--chunk", type=int, default=32)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch default)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    clip_np, masks_np = make_inputs(args.frames)
    clip, masks = torch.from_numpy(clip_np).to(args.device), torch.from_numpy(masks_np).to(args.device)

    run_kernels(clip[:4], masks[:4], args.chunk)          # warm-up (allocator, thread pool)
    t0 = time.perf_counter()
    ref = run_oracle(clip_np, masks_np)
    t_oracle = time.perf_counter() - t0
    t0 = time.perf_counter()
    got = run_kernels(clip, masks, args.chunk)
    t_kernels = time.perf_counter() - t0
    if got != ref:
        raise SystemExit(f"MISMATCH between kernels and oracle: {[k for k in ref if got[k] != ref[k]]}")
    t_cv2 = None
    if clip.device.type == "cpu":
        from prism_fast.video.cpu_signals import Cv2FrameSignalStream

        t0 = time.perf_counter()
        got_cv2 = run_kernels(clip, masks, args.chunk, Cv2FrameSignalStream(25))
        t_cv2 = time.perf_counter() - t0
        if got_cv2 != ref:
            raise SystemExit("MISMATCH between the cv2 backend and the oracle")

    n = args.frames
    print(f"host: {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"threads {torch.get_num_threads()}, device {args.device}")
    print(f"clip: {n} frames 480x854, {len(ref['events'])} events, {len(ref['text'])} E_text frames, "
          f"chunk {args.chunk}; outputs identical")
    print(f"oracle  (per-frame NumPy/OpenCV): {t_oracle:8.3f} s  {n / t_oracle:9.1f} frames/s")
    print(f"kernels (prism_kernels)         : {t_kernels:8.3f} s  {n / t_kernels:9.1f} frames/s")
    print(f"ratio kernels/oracle: {t_oracle / t_kernels:.2f}x (target >= 30x)")
    if t_cv2 is not None:
        print(f"cv2 backend (video.cpu_signals) + kernel energies: {t_cv2:8.3f} s  {n / t_cv2:9.1f} frames/s  "
              f"ratio {t_oracle / t_cv2:.2f}x")


if __name__ == "__main__":
    main()
