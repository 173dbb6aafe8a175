"""Video decoding into chunks of BGR uint8 tensors ``(T, H, W, 3)``.

Decoders (the ``decoder`` name is recorded per row):
- ``opencv``: ``cv2.VideoCapture`` (FFmpeg backend), frame by frame until the first failed read — the
  authors' toolkit's own path and the parity default (spec README D-1).
- ``decord``: ``VideoReader`` + batched ``get_batch`` through the torch bridge, RGB flipped to BGR. CPU
  decoding; bit-identical to OpenCV on Manim ``-ql`` videos (tests/video/test_video_decode.py proves it).
  The PyPI decord wheels have no CUDA ("CUDA not enabled"); ``gpu_decode`` asks for decord's NVDEC context
  anyway where a CUDA build is installed — its frames are not parity-validated, so it is recorded as
  ``decord-nvdec`` and refused for reference numbers by callers. GPU decoding is ``nvdec``.
- ``pyav``: PyAV ``to_ndarray(format="bgr24")``.
- ``yuv``: PyAV decodes to Y/U/V planes on the CPU (no colour conversion), the planes (1.5 B/pixel instead of
  3) go to ``device`` and ``prism_kernels.yuv420_to_bgr`` converts them there — bit-identical to OpenCV's
  frames (tests/kernels/test_kernel_yuv.py: all 2^24 triples; tests/video/test_video_yuv_decode.py: renders).
- ``nvdec``: NVDEC through PyNvVideoCodec (extra ``[gpu]``): NV12 planes decoded on the GPU, handed over by
  DLPack and converted by the same kernel on the same device; never leaves the GPU. Choice and evidence:
  docs/gpu.md.
  Both YUV paths apply only to streams whose conversion the kernel reproduces (``prism_fast.video.yuv``:
  8-bit 4:2:0, BT.601/BT.709 tags, either range); another stream is decoded with ``opencv`` instead, with a
  warning and ``decoder_fallback`` saying why.
- ``auto``: on a CPU device ``opencv`` (fastest per frame: TD of a ~190-frame -ql video in 0.22 s vs decord
  0.32 s and PyAV 0.26 s, docs/bench_kernels.md); on a GPU device ``nvdec`` where PyNvVideoCodec loads, else
  ``yuv`` — with a warning and ``decoder_fallback`` recording why. An explicit ``decord`` or ``nvdec`` never
  falls back to another library: it records ``decode_error``.

Container metadata (fps, ``CAP_PROP_FRAME_COUNT``) always comes from OpenCV (``probe_video``), because
the toolkit's TD denominator uses exactly that count (td.md §2, Q-TD-1).

CPU-decoded chunks (and planes) are moved to a CUDA device through pinned memory with ``non_blocking=True``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import numpy as np

if TYPE_CHECKING:
    import torch

DECODERS = ("opencv", "decord", "pyav", "yuv", "nvdec", "auto")
DEFAULT_CHUNK = 64


@dataclass(frozen=True)
class VideoProbe:
    """OpenCV's view of a container. ``opened`` False → the other fields are 0 and ``error_detail`` says why."""

    path: str
    opened: bool
    fps: float = 0.0
    container_frame_count: int = 0
    width: int = 0
    height: int = 0
    error_detail: str | None = None


# FFmpeg decoding threads of an OpenCV capture. One: each metric actor is granted one CPU (Ray ``num_cpus=1``),
# and FFmpeg's default (one thread per core) made every actor spread over all cores -- measured on the 9,545
# frames of the open corpus' 121 videos, 2 cores: 11.9 CPU-s at the default, 9.0 at one thread (docs/scaling.md
# "TD decode"). H.264 decoding is exact, so the frames are the same at any thread count
# (tests/video/test_video_decode.py compares them with a default capture's, as the toolkit opens it).
DECODE_THREADS = 1


def open_capture(path: str | Path):
    """``cv2.VideoCapture`` of ``path`` (the backend OpenCV picks, as the toolkit's plain call does) decoding on
    :data:`DECODE_THREADS` threads."""
    import cv2

    return cv2.VideoCapture(str(path), cv2.CAP_ANY, [cv2.CAP_PROP_N_THREADS, DECODE_THREADS])


def probe_video(path: str | Path) -> VideoProbe:
    """fps = ``CAP_PROP_FPS`` (0.0 if missing) and N = ``CAP_PROP_FRAME_COUNT`` (container-reported)."""
    import cv2

    path = str(path)
    if not Path(path).is_file():
        return VideoProbe(path, False, error_detail="video file missing")
    cap = cv2.VideoCapture(path)
    try:
        if not cap.isOpened():
            return VideoProbe(path, False, error_detail="cv2.VideoCapture could not open the file")
        return VideoProbe(
            path, True,
            fps=float(cap.get(cv2.CAP_PROP_FPS) or 0.0),
            container_frame_count=int(cap.get(cv2.CAP_PROP_FRAME_COUNT) or 0),
            width=int(cap.get(cv2.CAP_PROP_FRAME_WIDTH) or 0),
            height=int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT) or 0),
        )
    finally:
        cap.release()


@lru_cache(maxsize=1)
def nvdec_status() -> tuple[bool, str]:
    """(usable, detail): whether PyNvVideoCodec imports here (it needs an NVIDIA driver with NVDEC and, in a
    container, ``NVIDIA_DRIVER_CAPABILITIES`` including ``video``). Probed once per process."""
    try:
        import PyNvVideoCodec as nvc
    except Exception as exc:  # noqa: BLE001 - any import failure means "no GPU decoder here"
        return False, f"PyNvVideoCodec not usable: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return True, f"PyNvVideoCodec {getattr(nvc, '__version__', '?')}"


def device_type(device: str | torch.device) -> str:
    """``"cpu"``, ``"cuda"``, ... of a device given as a torch.device or as its name, without importing torch for a
    name (a CPU consumer of this module never needs torch)."""
    return device.type if hasattr(device, "type") else str(device).split(":", 1)[0]


def _auto_decoder(kind: str) -> str:
    if kind != "cuda":
        return "opencv"
    return "nvdec" if nvdec_status()[0] else "yuv"


def _torch_device(device: str | torch.device) -> torch.device:
    import torch

    return torch.device(device)


def _to_device(chunk: torch.Tensor, device: torch.device) -> torch.Tensor:
    if device.type == "cpu":
        return chunk if chunk.device.type == "cpu" else chunk.cpu()
    if chunk.device == device:
        return chunk
    if chunk.device.type == "cpu":
        return chunk.pin_memory().to(device, non_blocking=True)
    return chunk.to(device)


class VideoFrames:
    """Iterate a video's frames as BGR uint8 tensors ``(≤ chunk_size, H, W, 3)`` on ``device``.

    After (or during) iteration: ``decoder`` is the decoder actually used, ``decoder_fallback`` says why it
    differs from the one requested (else None), ``decoded_frames`` counts the frames yielded so far and
    ``decode_error`` holds an error that ended decoding early (the toolkit stops at the first failed read,
    so this is recorded, never raised).
    """

    def __init__(self, path: str | Path, *, decoder: str = "opencv", chunk_size: int = DEFAULT_CHUNK,
                 device: str | torch.device = "cpu", gpu_decode: bool = False) -> None:
        if decoder not in DECODERS:
            raise ValueError(f"decoder: expected one of {DECODERS}, got {decoder!r}")
        if chunk_size < 1:
            raise ValueError(f"chunk_size: expected >= 1, got {chunk_size}")
        self.path = str(path)
        self.requested = decoder
        self.decoder_fallback: str | None = None
        self.chunk_size = int(chunk_size)
        self.device_type = device_type(device)
        # the torch.device is made on first use (``device``): the CPU path of ``iter_frames`` never needs torch
        self._device_arg = device
        self._device = None if self.device_type == "cpu" else _torch_device(device)
        # auto: OpenCV frame by frame on a CPU device; for a GPU the exact YUV path (NVDEC where it loads)
        self.decoder = _auto_decoder(self.device_type) if decoder == "auto" else decoder
        if decoder == "nvdec" and self.device_type != "cuda":
            raise ValueError(f"decoder 'nvdec': needs a cuda device, got {device}")
        if gpu_decode and (decoder not in ("decord", "auto") or self.device_type != "cuda"):
            raise ValueError(f"gpu_decode: needs decoder 'decord'/'auto' and a cuda device, "
                             f"got decoder {decoder!r} on {device}")
        self.gpu_decode = bool(gpu_decode)
        self.decoded_frames = 0
        self.decode_error: str | None = None

    @property
    def device(self) -> torch.device:
        """The ``torch.device`` the chunks are moved to (imports torch on a CPU device)."""
        if self._device is None:
            self._device = _torch_device(self._device_arg)
        return self._device

    # -- public ------------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[torch.Tensor]:
        self.decoded_frames = 0
        self.decode_error = None
        source = {"decord": self._decord_chunks, "pyav": self._pyav_chunks, "yuv": self._yuv_chunks,
                  "nvdec": self._nvdec_chunks}.get(self.decoder, self._opencv_chunks)
        for chunk in source():
            self.decoded_frames += int(chunk.shape[0])
            yield _to_device(chunk, self.device)

    def iter_frames(self) -> Iterator[np.ndarray]:
        """One BGR ``(H, W, 3) uint8`` NumPy frame at a time, decoded on the CPU (same frames, same decoder
        choice, fallback and bookkeeping as ``__iter__``). For per-frame CPU consumers: no batch is
        allocated, so the working set stays in cache (a 64-frame chunk is ~79 MB at 854×480)."""
        if self.device_type != "cpu" or self.gpu_decode:
            raise ValueError("iter_frames decodes on the CPU; iterate the object for device chunks")
        self.decoded_frames = 0
        self.decode_error = None
        source = {"decord": self._decord_frames, "pyav": self._pyav_frames,
                  "yuv": self._yuv_frames}.get(self.decoder, self._opencv_frames)
        for frame in source():
            self.decoded_frames += 1
            yield frame

    def fields(self) -> dict:
        """Per-row record of how the frames were decoded."""
        return {"decoder": self.decoder, "decoder_fallback": self.decoder_fallback,
                "decoded_frame_count": self.decoded_frames, "decode_error": self.decode_error}

    # -- decoders ----------------------------------------------------------------------------------
    def _stack(self, frames: list[np.ndarray]) -> torch.Tensor:
        import torch

        return torch.from_numpy(np.stack(frames))

    def _chunked(self, frames: Iterator[np.ndarray]) -> Iterator[torch.Tensor]:
        buf: list[np.ndarray] = []
        for frame in frames:
            buf.append(frame)
            if len(buf) == self.chunk_size:
                yield self._stack(buf)
                buf = []
        if buf:
            yield self._stack(buf)

    def _opencv_chunks(self) -> Iterator[torch.Tensor]:
        yield from self._chunked(self._opencv_frames())

    def _opencv_frames(self) -> Iterator[np.ndarray]:
        cap = open_capture(self.path)
        try:
            if not cap.isOpened():
                self.decode_error = "cv2.VideoCapture could not open the file"
                return
            while True:
                ok, frame = cap.read()
                if not ok:
                    break
                yield frame
        finally:
            cap.release()

    def _pyav_chunks(self) -> Iterator[torch.Tensor]:
        yield from self._chunked(self._pyav_frames())

    def _pyav_frames(self) -> Iterator[np.ndarray]:
        import av

        try:
            container = av.open(self.path)
        except Exception as exc:  # noqa: BLE001 - recorded per row, iteration yields nothing
            self.decode_error = f"pyav open failed: {type(exc).__name__}: {exc}"
            return
        try:
            frames = container.decode(video=0)
            while True:
                try:
                    frame = next(frames)
                except StopIteration:
                    break
                except Exception as exc:  # noqa: BLE001 - like a failed cap.read(): stop, but record it
                    self.decode_error = f"pyav decode stopped: {type(exc).__name__}: {exc}"
                    warnings.warn(f"{self.path}: {self.decode_error}", RuntimeWarning, stacklevel=4)
                    break
                yield frame.to_ndarray(format="bgr24")
        finally:
            container.close()

    def _open_decord(self):
        import decord

        if self.gpu_decode and self.device.type == "cuda":
            try:
                reader = decord.VideoReader(self.path, ctx=decord.gpu(self.device.index or 0))
                self.decoder = "decord-nvdec"
                return reader
            except Exception as exc:  # noqa: BLE001 - decord without CUDA: decode on CPU instead
                warnings.warn(f"{self.path}: decord GPU decode unavailable ({exc}); decoding on CPU",
                              RuntimeWarning, stacklevel=4)
                self.decoder_fallback = f"decord gpu unavailable: {exc}"
        return decord.VideoReader(self.path, ctx=decord.cpu(0))

    def _decord_reader(self):
        """decord's reader, or None after recording why it failed (``auto``: switched to PyAV, loudly and on
        the record; the caller then decodes with PyAV)."""
        try:
            return self._open_decord()
        except Exception as exc:  # noqa: BLE001 - recorded; `auto` falls back to PyAV
            reason = f"decord failed: {type(exc).__name__}: {exc}"
            if self.requested != "auto":
                self.decode_error = reason
                warnings.warn(f"{self.path}: {reason}", RuntimeWarning, stacklevel=4)
                return None
            warnings.warn(f"{self.path}: {reason}; falling back to PyAV", RuntimeWarning, stacklevel=4)
            self.decoder = "pyav"
            self.decoder_fallback = reason
            return None

    def _decord_chunks(self) -> Iterator[torch.Tensor]:
        reader = self._decord_reader()
        if reader is None:
            if self.decoder == "pyav":
                yield from self._pyav_chunks()
            return
        import decord  # importable: the reader exists

        n = len(reader)
        for start in range(0, n, self.chunk_size):
            idx = list(range(start, min(start + self.chunk_size, n)))
            try:
                with decord.bridge.use_torch():
                    rgb = reader.get_batch(idx)
            except Exception as exc:  # noqa: BLE001 - like a failed cap.read(): stop, but record it
                self.decode_error = f"decord decode stopped at frame {start}: {type(exc).__name__}: {exc}"
                warnings.warn(f"{self.path}: {self.decode_error}", RuntimeWarning, stacklevel=3)
                return
            yield rgb.flip(-1).contiguous()   # RGB → BGR

    def _decord_frames(self) -> Iterator[np.ndarray]:
        """decord on the CPU, one frame at a time (``next()``), RGB → BGR by OpenCV's exact channel swap."""
        import cv2

        reader = self._decord_reader()
        if reader is None:
            if self.decoder == "pyav":
                yield from self._pyav_frames()
            return
        for i in range(len(reader)):
            try:
                rgb = reader.next().asnumpy()
            except Exception as exc:  # noqa: BLE001 - like a failed cap.read(): stop, but record it
                self.decode_error = f"decord decode stopped at frame {i}: {type(exc).__name__}: {exc}"
                warnings.warn(f"{self.path}: {self.decode_error}", RuntimeWarning, stacklevel=4)
                return
            yield cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)

    # -- exact YUV paths (prism_fast.video.yuv) -----------------------------------------------------------
    def _fall_back_to_opencv(self, why: str) -> Iterator[torch.Tensor]:
        """A stream the exact kernel does not cover: decode it with OpenCV, loudly and on the record."""
        warnings.warn(f"{self.path}: {self.decoder} path not exact for this stream ({why}); decoding with OpenCV",
                      RuntimeWarning, stacklevel=4)
        self.decoder_fallback = f"{self.decoder}: {why}"
        self.decoder = "opencv"
        yield from self._opencv_chunks()

    def _convert_planes(self, planes: list, coeffs) -> torch.Tensor:
        import torch

        from prism_kernels import yuv420_to_bgr

        y, u, v = (_to_device(torch.from_numpy(np.stack([p[k] for p in planes])), self.device) for k in range(3))
        return yuv420_to_bgr(y, u, v, coeffs)

    def _yuv_chunks(self) -> Iterator[torch.Tensor]:
        import av

        from .yuv import frame_planes, stream_coefficients

        try:
            container = av.open(self.path)
        except Exception as exc:  # noqa: BLE001 - recorded per row, iteration yields nothing
            self.decode_error = f"pyav open failed: {type(exc).__name__}: {exc}"
            return
        planes: list = []
        coeffs = None
        fallback: str | None = None
        try:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"   # frame threads: the decoded planes are the same (H.264 is exact)
            frames = container.decode(stream)
            while True:
                try:
                    frame = next(frames)
                except StopIteration:
                    break
                except Exception as exc:  # noqa: BLE001 - like a failed cap.read(): stop, but record it
                    self.decode_error = f"pyav decode stopped: {type(exc).__name__}: {exc}"
                    warnings.warn(f"{self.path}: {self.decode_error}", RuntimeWarning, stacklevel=3)
                    break
                found, why = stream_coefficients(frame.format.name, frame.colorspace, frame.color_range)
                if found is None:
                    if self.decoded_frames == 0 and not planes:
                        fallback = why
                    else:   # tags changed mid-stream: never convert a frame inexactly
                        self.decode_error = f"stream left the exact YUV path mid-stream: {why}"
                        warnings.warn(f"{self.path}: {self.decode_error}", RuntimeWarning, stacklevel=3)
                    break
                if coeffs is not None and found != coeffs and planes:
                    yield self._convert_planes(planes, coeffs)
                    planes = []
                coeffs = found
                planes.append([a.copy() for a in frame_planes(frame)])
                if len(planes) == self.chunk_size:
                    yield self._convert_planes(planes, coeffs)
                    planes = []
            if planes and fallback is None:
                yield self._convert_planes(planes, coeffs)
        finally:
            container.close()
        if fallback is not None:
            yield from self._fall_back_to_opencv(fallback)

    def _yuv_frames(self) -> Iterator[np.ndarray]:
        for chunk in self._yuv_chunks():
            for frame in chunk:
                yield frame.numpy()

    def _nvdec_chunks(self) -> Iterator[torch.Tensor]:
        """NVDEC: NV12 surfaces on the GPU (PyNvVideoCodec, DLPack) → the exact kernel on the same device."""
        import torch

        from prism_kernels import nv12_to_bgr

        from .yuv import probe_stream_tags, split_nv12, stream_coefficients

        try:
            tags = probe_stream_tags(self.path)
        except Exception as exc:  # noqa: BLE001 - recorded per row, iteration yields nothing
            self.decode_error = f"pyav probe failed: {type(exc).__name__}: {exc}"
            return
        coeffs, why = stream_coefficients(tags.pix_fmt, tags.colorspace, tags.color_range)
        if coeffs is None:
            yield from self._fall_back_to_opencv(why)
            return
        try:
            import PyNvVideoCodec as nvc

            # The core demuxer + decoder, fed every packet in file order: FFmpeg's (OpenCV's) sequential decode,
            # frames out in display order. (SimpleDecoder maps frame indices to timestamps for random access.)
            demuxer = nvc.CreateDemuxer(filename=str(self.path))
            decoder = nvc.CreateDecoder(gpuid=self.device.index or 0, codec=demuxer.GetNvCodecId(), cudacontext=0,
                                        cudastream=0, usedevicememory=True,
                                        outputColorType=nvc.OutputColorType.NATIVE)
        except Exception as exc:  # noqa: BLE001 - no NVDEC here
            reason = f"nvdec unavailable: {type(exc).__name__}: {exc}"
            if self.requested != "auto":
                self.decode_error = reason
                warnings.warn(f"{self.path}: {reason}", RuntimeWarning, stacklevel=3)
                return
            warnings.warn(f"{self.path}: {reason}; decoding planes with PyAV instead", RuntimeWarning, stacklevel=3)
            self.decoder, self.decoder_fallback = "yuv", reason
            yield from self._yuv_chunks()
            return

        def convert(frames: list) -> torch.Tensor:
            nv12 = torch.stack(frames)
            if nv12.ndim == 4 and nv12.shape[-1] == 1:
                nv12 = nv12[..., 0]
            y, uv = split_nv12(nv12, tags.height, tags.width)
            return nv12_to_bgr(y, uv, coeffs)

        pending: list = []
        try:
            for packet in demuxer:   # its end-of-stream packet flushes the decoder (every frame came out: docs/gpu.md)
                for frame in decoder.Decode(packet):
                    # (rows, pitch) NV12 in a surface the decoder reuses: copied at once. The decoder works on the
                    # legacy default stream, which torch's default stream waits for.
                    pending.append(torch.from_dlpack(frame).to(self.device, copy=True))
                    if len(pending) == self.chunk_size:
                        yield convert(pending)
                        pending = []
        except Exception as exc:  # noqa: BLE001 - like a failed cap.read(): stop, but record it
            self.decode_error = f"nvdec decode stopped: {type(exc).__name__}: {exc}"
            warnings.warn(f"{self.path}: {self.decode_error}", RuntimeWarning, stacklevel=3)
        if pending:
            yield convert(pending)
