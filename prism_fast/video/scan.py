"""One decode pass per video for TD and PADVC (spec td.md §6: share the decode and the gray frames).

``scan_video`` streams the video once and returns the container probe, the per-pair signals (positive
increments for PADVC events, changed-pixel counts for TD), optionally every gray frame (PADVC needs the
event endpoints, known only at the end) and the BGR frames at a fixed set of indices (e.g. the OCR
stride 0, 15, 30, …). BGR frames needed later (event ends, gap midpoints) are fetched by a second
sequential pass with ``read_frames_at``, so no BGR video is ever held whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import torch

from prism_kernels import StreamTotals

from .cpu_signals import make_signal_stream
from .decode import DEFAULT_CHUNK, VideoFrames, VideoProbe, probe_video


@dataclass
class VideoScan:
    probe: VideoProbe
    totals: StreamTotals
    decode: dict                                   # VideoFrames.fields(): decoder, fallback, counts, error
    gray: torch.Tensor | None = None               # (N, H, W) uint8 when keep_gray
    bgr_at: dict[int, torch.Tensor] = field(default_factory=dict)   # index → (H, W, 3) uint8


def scan_video(path: str | Path, *, tau: int = 25, keep_gray: bool = False, bgr_indices: Iterable[int] = (),
               decoder: str = "opencv", chunk_size: int = DEFAULT_CHUNK, device: str | torch.device = "cpu",
               signal_backend: str = "auto", absolute: bool = False) -> VideoScan:
    """Decode ``path`` once; see the module docstring. Never raises for an unreadable video: the scan then
    has ``totals.frame_count == 0`` and ``decode["decode_error"]`` / ``probe.error_detail`` say why."""
    probe = probe_video(path)
    frames = VideoFrames(path, decoder=decoder, chunk_size=chunk_size, device=device)
    stream = make_signal_stream(signal_backend, frames.device, tau, absolute=absolute)
    wanted = sorted(set(int(i) for i in bgr_indices))
    grays: list[torch.Tensor] = []
    bgr_at: dict[int, torch.Tensor] = {}
    start = 0
    for chunk in frames:
        gray = stream.update(chunk)
        if keep_gray:
            grays.append(gray.to(frames.device))
        for i in wanted:
            if start <= i < start + chunk.shape[0]:
                bgr_at[i] = chunk[i - start].clone()
        start += int(chunk.shape[0])
    gray_all = None
    if keep_gray:
        gray_all = torch.cat(grays) if grays else torch.zeros(0, 0, 0, dtype=torch.uint8, device=frames.device)
    return VideoScan(probe, stream.finish(), frames.fields(), gray_all, bgr_at)


def read_frames_at(path: str | Path, indices: Iterable[int], *, decoder: str = "opencv",
                   chunk_size: int = DEFAULT_CHUNK, device: str | torch.device = "cpu") -> dict[int, torch.Tensor]:
    """BGR frames ``(H, W, 3) uint8`` at ``indices`` by one sequential decode (no seeking, so the frames
    are exactly those of a full decode). Indices past the end are absent from the result."""
    wanted = sorted(set(int(i) for i in indices))
    out: dict[int, torch.Tensor] = {}
    if not wanted:
        return out
    start = 0
    for chunk in VideoFrames(path, decoder=decoder, chunk_size=chunk_size, device=device):
        n = int(chunk.shape[0])
        for i in wanted:
            if start <= i < start + n:
                out[i] = chunk[i - start].clone()
        start += n
        if start > wanted[-1]:
            break
    return out
