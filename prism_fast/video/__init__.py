"""prism_fast.video stage: decoding into BGR uint8 chunks and the per-pair frame signals on CPU.

The batched, device-agnostic kernels live in ``prism_kernels``; ``cpu_signals`` is the OpenCV per-frame
backend used on CPU devices (same integers, faster there).
"""

from .cpu_signals import Cv2FrameSignalStream, make_signal_stream
from .decode import DECODERS, DEFAULT_CHUNK, VideoFrames, VideoProbe, probe_video
from .scan import VideoScan, read_frames_at, scan_video

__all__ = ["Cv2FrameSignalStream", "make_signal_stream", "DECODERS", "DEFAULT_CHUNK", "VideoFrames",
           "VideoProbe", "probe_video", "VideoScan", "read_frames_at", "scan_video"]
