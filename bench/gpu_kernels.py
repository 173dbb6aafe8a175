"""Single-script GPU benchmark of prism_kernels and the decode paths (≤ 5 minutes; ~1–2 minutes on one GPU).

Prints, per batch size: frames/s for the whole kernel set (gray, pair signals, events, 7×7 dilation,
E_geo per event, E_text every 15th frame) and achieved GB/s under a minimal-traffic model; plus the
pinned-memory host→device upload rate of BGR frames. Then the decode paths on a 854×480 H.264 clip: the exact
YUV→BGR kernel alone (GB/s), OpenCV on the CPU, PyAV planes converted on the device (``yuv``) and NVDEC
(``nvdec``, where PyNvVideoCodec loads), each also through gray + pair signals; peak GPU memory per section.
Before any timing it checks device == CPU == oracle (kernels: the per-frame oracle; YUV: OpenCV's frames of
the same file; decoders: OpenCV's frames) and stops on any mismatch.

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
        print(f"peak memory (kernels): {torch.cuda.max_memory_allocated(device) / 2**30:.2f} GiB")
    decode_section(device, base_np, args.frames, args.repeats, t_start)
    print(f"total time: {time.perf_counter() - t_start:.1f} s")


def _peak_reset(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)


def _peak(device: torch.device) -> str:
    return f", peak {torch.cuda.max_memory_allocated(device) / 2**30:.2f} GiB" if device.type == "cuda" else ""


def _frame_diff(got: np.ndarray, ref: np.ndarray) -> str:
    """Where two BGR frame stacks differ: counts, the first differing frame, the largest difference there."""
    if got.shape[1:] != ref.shape[1:]:
        return f"frame shape {got.shape[1:]} vs {ref.shape[1:]}"
    n = min(len(got), len(ref))
    bad = [i for i in range(n) if not np.array_equal(got[i], ref[i])]
    out = f"{len(got)} vs {len(ref)} frames, {len(bad)} of the first {n} differ"
    if bad:
        i = bad[0]
        same_as = [j for j in range(max(0, i - 3), min(len(ref), i + 4)) if np.array_equal(got[i], ref[j])]
        out += (f"; first at {i} (max |diff| {int(np.abs(got[i].astype(int) - ref[i]).max())}; equals reference "
                f"frame(s) {same_as})")
    return out


def decode_section(device: torch.device, base_bgr: np.ndarray, frames: int, repeats: int, t_start: float) -> None:
    """Exact YUV kernel and decoders: correctness first (vs OpenCV), then throughput."""
    import tempfile
    from pathlib import Path

    import av

    from prism_fast.video.decode import VideoFrames, nvdec_status
    from prism_fast.video.yuv import decode_planes, frame_planes, opencv_frames, write_lossless_yuv420
    from prism_kernels import FrameSignalStream, yuv420_to_bgr

    with tempfile.TemporaryDirectory() as tmp:
        # a lossy High-profile H.264 clip (NVDEC decodes it; x264's lossless profile it does not) from the
        # synthetic Manim-like BGR clip, tiled to `frames`
        reps = -(-frames // base_bgr.shape[0])
        bgr = np.concatenate([base_bgr] * reps)[:frames]
        ys, us, vs = [], [], []
        for f in bgr:
            yuv = av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="bgr24").reformat(format="yuv420p")
            for planes, plane in zip((ys, us, vs), frame_planes(yuv)):
                planes.append(plane.copy())
        path = write_lossless_yuv420(Path(tmp) / "bench.mp4", ys, us, vs,
                                     x264_options={"crf": "18", "preset": "veryfast", "profile": "high"})
        reference = opencv_frames(path)
        y, u, v = (torch.from_numpy(a) for a in decode_planes(path))
        n = reference.shape[0]

        # 1. correctness: YUV kernel on CPU and device == OpenCV; each decoder's frames == OpenCV
        cpu = yuv420_to_bgr(y[:48], u[:48], v[:48])
        dev = yuv420_to_bgr(y[:48].to(device), u[:48].to(device), v[:48].to(device)).cpu()
        if not (np.array_equal(cpu.numpy(), reference[:48]) and torch.equal(cpu, dev)):
            raise SystemExit("MISMATCH: yuv420_to_bgr device/CPU/OpenCV differ")
        decoders = ["opencv", "yuv"] + (["nvdec"] if device.type == "cuda" and nvdec_status()[0] else [])
        print(f"decoders: {', '.join(decoders)} ({nvdec_status()[1]})")
        for name in decoders:
            got = torch.cat(list(VideoFrames(path, decoder=name, device=device, chunk_size=64))).cpu().numpy()
            if not np.array_equal(got, reference):
                raise SystemExit(f"MISMATCH: decoder {name} frames differ from OpenCV's: {_frame_diff(got, reference)}")
        print(f"check: yuv kernel {device} == cpu == OpenCV; decoders {decoders} == OpenCV on {n} frames")

        # 2. the kernel alone, planes resident on the device: read 1.5 B/px, write 3 B/px
        yd, ud, vd = y.to(device), u.to(device), v.to(device)
        _peak_reset(device)
        for batch in (64, 256, n):
            yuv420_to_bgr(yd[:batch], ud[:batch], vd[:batch])
            _sync(device)
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                for s in range(0, n, batch):
                    yuv420_to_bgr(yd[s:s + batch], ud[s:s + batch], vd[s:s + batch])
                _sync(device)
                best = min(best, time.perf_counter() - t0)
            gb = n * 480 * 854 * 4.5 / 1e9
            print(f"yuv420_to_bgr batch {batch:5d}: {n / best:10.0f} frames/s  {gb / best:8.1f} GB/s (model)"
                  f"{_peak(device)}")

        # 3. decode (+ gray + pair signals, TD's work) end to end, per decoder
        for name in decoders:
            if time.perf_counter() - t_start > BUDGET_S * 0.9:
                print("time budget nearly used; stopping")
                break
            _peak_reset(device)
            t0 = time.perf_counter()
            count = sum(int(c.shape[0]) for c in VideoFrames(path, decoder=name, device=device, chunk_size=64))
            _sync(device)
            t_decode = time.perf_counter() - t0
            t0 = time.perf_counter()
            stream = FrameSignalStream(25)
            for chunk in VideoFrames(path, decoder=name, device=device, chunk_size=64):
                stream.update(chunk)
            stream.finish()
            _sync(device)
            t_td = time.perf_counter() - t0
            print(f"decode {name:7s}: {count / t_decode:8.0f} frames/s ({count * 480 * 854 * 3 / t_decode / 1e9:5.2f} "
                  f"GB/s of BGR); + gray/pair signals {count / t_td:8.0f} frames/s{_peak(device)}")


if __name__ == "__main__":
    main()
