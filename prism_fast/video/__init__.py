"""prism_fast.video stage: decoding into BGR uint8 chunks and the per-pair frame signals on CPU.

The batched, device-agnostic kernels live in ``prism_kernels``; ``cpu_signals`` is the OpenCV per-frame
backend used on CPU devices (same integers, faster there).

The names below are loaded on first use (PEP 562): a CPU consumer of ``decode``/``cpu_signals`` (the render
workers' TD_raw) never imports torch, which ``scan`` and the tensor paths need (docs/scaling.md "torch only
where needed").
"""

from importlib import import_module

_WHERE = {
    "Cv2FrameSignalStream": "cpu_signals", "make_signal_stream": "cpu_signals",
    "DECODERS": "decode", "DEFAULT_CHUNK": "decode", "VideoFrames": "decode", "VideoProbe": "decode",
    "probe_video": "decode",
    "VideoScan": "scan", "read_frames_at": "scan", "scan_video": "scan",
}

__all__ = list(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
