"""Single-script GPU benchmark of prism_kernels (≤ 5 minutes; about 1 minute on one modern GPU).

Prints, per batch size: frames/s for the whole kernel set (gray, pair signals, events, 7×7 dilation,
E_geo per event, E_text every 15th frame) and achieved GB/s under a minimal-traffic model; plus the
pinned-memory host→device upload rate of BGR frames. Before timing, it checks that the GPU results equal
the CPU kernels and the per-frame oracle on the first frames, and stops on any mismatch.

    .venv/bin/python -m bench.gpu_kernels [--device cuda] [--frames 900] [--batches 64,256,900]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from bench.kernels_bench import TEXT_STRIDE, make_inputs, run_kernels, run_oracle
from prism_kernels import (FrameSignalStream, dilate, geo_energies, segment_events, text_energies)

BUDGET_S = 300.0


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def kernel_pass(clip: torch.Tensor, masks: torch.Tensor, batch: int) -> int:
    """The benchmarked work over a device-resident clip, in batches of ``batch`` frames; returns #events."""
    stream = FrameSignalStream(25)
    grays = [stream.update(clip[i:i + batch]) for i in range(0, clip.shape[0], batch)]
    totals = stream.finish()
    gray = torch.cat(grays)
    events = segment_events(totals.positive, 50_000.0)
    s, e = events[:, 0], events[:, 1]
    geo_energies(gray[s], gray[e], dilate(masks[e]))
    text_energies(masks[::TEXT_STRIDE])
    return int(events.shape[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--frames", type=int, default=900, help="frames per synthetic video (900 = 60 s at 15 fps)")
    ap.add_argument("--batches", default="64,256,900")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda requested but CUDA is not available")
    t_start = time.perf_counter()
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"device: {name}; torch {torch.__version__}")

    # 1. correctness on the device, small clip: device == CPU kernels == oracle
    small_np, small_masks_np = make_inputs(48, seed=3)
    ref = run_oracle(small_np, small_masks_np)
    cpu = run_kernels(torch.from_numpy(small_np), torch.from_numpy(small_masks_np), 16)
    dev = run_kernels(torch.from_numpy(small_np).to(device), torch.from_numpy(small_masks_np).to(device), 16)
    if not (ref == cpu == dev):
        raise SystemExit("MISMATCH: device/CPU/oracle results differ on the check clip")
    print(f"check: {args.device} == cpu kernels == oracle on 48 frames ({len(ref['events'])} events)")

    # 2. inputs: a 150-frame synthetic clip tiled to --frames, resident on the device
    base_np, base_masks_np = make_inputs(150, seed=0)
    reps = -(-args.frames // 150)
    clip_cpu = torch.from_numpy(np.concatenate([base_np] * reps)[: args.frames])
    masks_cpu = torch.from_numpy(np.concatenate([base_masks_np] * reps)[: args.frames])
    n, h, w = clip_cpu.shape[0], clip_cpu.shape[1], clip_cpu.shape[2]
    bgr_gb = n * h * w * 3 / 1e9

    # 3. pinned host → device upload
    if device.type == "cuda":
        pinned = clip_cpu.pin_memory()
        clip = pinned.to(device, non_blocking=True)
        _sync(device)
        t0 = time.perf_counter()
        for _ in range(3):
            clip = pinned.to(device, non_blocking=True)
        _sync(device)
        dt = (time.perf_counter() - t0) / 3
        print(f"upload (pinned, non_blocking): {bgr_gb / dt:7.2f} GB/s, {n / dt:10.0f} frames/s")
    else:
        clip = clip_cpu
    masks = masks_cpu.to(device)

    # 4. kernels, per batch size
    # minimal traffic per frame: read BGR (3 B/px) + write gray (1) + read 2 gray for the pair (2)
    model_bytes = n * h * w * (3 + 1 + 2)
    for batch in [int(b) for b in args.batches.split(",")]:
        if time.perf_counter() - t_start > BUDGET_S * 0.8:
            print("time budget nearly used; stopping")
            break
        n_events = kernel_pass(clip, masks, batch)   # warm-up
        _sync(device)
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            kernel_pass(clip, masks, batch)
            _sync(device)
            times.append(time.perf_counter() - t0)
        best = min(times)
        print(f"batch {batch:5d}: {n / best:12.0f} frames/s  {model_bytes / best / 1e9:8.1f} GB/s (model)  "
              f"best {best * 1e3:8.2f} ms / {n} frames, {n_events} events")
    if device.type == "cuda":
        print(f"peak memory: {torch.cuda.max_memory_allocated(device) / 2**30:.2f} GiB")
    print(f"total time: {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
