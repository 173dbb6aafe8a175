"""Exec success needs a real video: the render's mp4 must decode, every frame, as the video manim was asked for.

The toolkit counts any ``*.mp4`` a render leaves as a success, and a script runs in manim's process: it can
overwrite its output with random bytes, truncate it (e.g. from an ``atexit`` handler, after manim wrote it) or
leave a clip of another format. After the sample's processes are gone, :func:`check_video` reads the parent's own
copy of the mp4 (``<out_dir>/videos/<id>.mp4``, out of the script's reach) and requires:

1. a container the mp4 demuxer opens, with a video stream;
2. H.264, the codec manim's mp4 writer uses (only the mp4 demuxer and the H.264 decoder ever see the bytes a
   script left: no other FFmpeg parser is exposed to them). Size and rate are the stream's own: a script may set
   ``config.frame_rate`` or the pixel size itself, as the toolkit lets it; a caller may still ask for one format
   (:data:`QUALITY_FORMATS`);
3. every frame decodes, at the stream's size (PyAV, frames kept as decoded YUV: decoding the bitstream is the check,
   a conversion to RGB would only add cost), at most :data:`MAX_FRAMES` of them;
4. the decoded count agrees with the stream's duration x fps (+-1 frame) and, where the render recorded it, with
   the frames manim wrote (the text-box recorder's count, ``textboxes.py``: prefork backend with text boxes on,
   record ``ok``; trusted code, but inside the script's process, so it is a cross-check: the decode is the
   parent's own measurement).

Not checked: what the frames show (a script may still leave another real video of the right format). The
check never changes a valid video; a render cache entry stores its outcome (``cache.py``), so changing these
criteria means bumping ``cache.CACHE_SCHEMA``. Cost: docs/security.md "Exec success needs a real video".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

FRAME_SLACK = 1  # frames the decoded count may differ from duration x fps (rounding of the last frame's duration)
# Most frames the check decodes: bounds the trusted parent's work on a hostile file (one that claims a long
# duration and holds as many tiny frames). 2 h at -ql's 15 fps, ~700x the bundled reference answers' length.
MAX_FRAMES = 108_000
DETAIL_CHARS = 500


@dataclass(frozen=True)
class VideoFormat:
    """What manim writes for one quality flag."""

    codec: str
    width: int
    height: int
    fps: int


# manim CE 0.19's quality presets (manim.constants.QUALITIES) for the mp4 it writes with libx264.
QUALITY_FORMATS = {
    "-ql": VideoFormat("h264", 854, 480, 15), "-qm": VideoFormat("h264", 1280, 720, 30),
    "-qh": VideoFormat("h264", 1920, 1080, 60), "-qp": VideoFormat("h264", 2560, 1440, 60),
    "-qk": VideoFormat("h264", 3840, 2160, 60),
}


@dataclass(frozen=True)
class VideoCheck:
    """The outcome: ``detail`` says what was wrong (None when ok); ``frames`` = decoded frames (None when the
    check stopped before decoding)."""

    detail: str | None
    frames: int | None = None

    @property
    def ok(self) -> bool:
        return self.detail is None

    def row_fields(self) -> dict:
        """The exec row's record of the check (schema: ``video_check``, ``video_frames``)."""
        return {"video_check": "ok" if self.ok else "invalid", "video_frames": self.frames}


def expected_format(quality_flag: str) -> VideoFormat | None:
    """The format a render with this quality flag writes; None for a flag this table does not know."""
    return QUALITY_FORMATS.get(quality_flag)


def frames_written(text_boxes: dict | None) -> int | None:
    """The frames the render wrote, from its text-box record (``textboxes.collect``), only when that record is
    ``ok`` (no tamper evidence, every written frame accounted for); None otherwise."""
    if not text_boxes or text_boxes.get("status") != "ok":
        return None
    frames = text_boxes.get("frames")
    return frames if type(frames) is int else None


def check_video(path: str | Path, expect: VideoFormat | None, written: int | None = None) -> VideoCheck:
    """Whether ``path`` is a real video of format ``expect`` (None: any size and rate) with ``written`` frames
    (None: not recorded). Never raises for what the file holds."""
    import av

    try:
        container = av.open(str(path), format="mp4")  # the mp4 demuxer only, whatever the bytes claim to be
    except Exception as exc:  # noqa: BLE001 - any failure to open is the file's fault
        return VideoCheck(_clip(f"not an mp4: {_error_text(exc)}"))
    try:
        return _check_open(container, expect, written)
    except Exception as exc:  # noqa: BLE001 - a stream property libav cannot give is the file's fault too
        return VideoCheck(_clip(f"unreadable stream: {_error_text(exc)}"))
    finally:
        container.close()


def _check_open(container, expect: VideoFormat | None, written: int | None) -> VideoCheck:
    if not container.streams.video:
        return VideoCheck("no video stream")
    stream = container.streams.video[0]
    problem = _format_problem(stream, expect)
    if problem:
        return VideoCheck(problem)
    fps = expect.fps if expect else float(stream.average_rate)
    duration = _duration_s(stream, container)
    if duration is None or duration <= 0:
        return VideoCheck("no duration")
    if duration * fps > MAX_FRAMES:
        return VideoCheck(f"duration {duration:g} s x {fps:g} fps, more than the check's {MAX_FRAMES} frames")
    limit = round(duration * fps) + FRAME_SLACK
    n, problem = _decode_all(container, stream, limit)
    if problem:
        return VideoCheck(_clip(problem), n)
    return VideoCheck(_count_problem(n, duration, fps, written), n)


CODEC = "h264"  # manim CE 0.19 writes every mp4 with libx264


def _format_problem(stream, expect: VideoFormat | None) -> str | None:
    """The stream's codec (and, with ``expect``, size and frame rate) before a frame is decoded."""
    codec = stream.codec_context.name
    rate = stream.average_rate
    want = expect.codec if expect is not None else CODEC
    if codec != want:
        return f"codec {codec}, expected {want}"
    if not rate or rate <= 0:
        return "no frame rate"
    if expect is None:
        return None
    if (stream.width, stream.height) != (expect.width, expect.height):
        return f"{stream.width}x{stream.height}, expected {expect.width}x{expect.height}"
    if abs(float(rate) - expect.fps) > 1e-3:
        return f"{float(rate):g} fps, expected {expect.fps} fps"
    return None


def _duration_s(stream, container) -> float | None:
    """The video stream's duration in seconds (the container's when the stream has none)."""
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return container.duration / 1_000_000  # AV_TIME_BASE
    return None


def _decode_all(container, stream, limit: int) -> tuple[int, str | None]:
    """Decode every frame (no conversion); stop at the first error, a frame of another size, or past ``limit``
    frames (the file holds more than its duration says: no need to decode the rest)."""
    size = (stream.width, stream.height)
    n = 0
    frames = container.decode(stream)
    while True:
        try:
            frame = next(frames)
        except StopIteration:
            return n, None
        except Exception as exc:  # noqa: BLE001 - any decoder/demuxer error is the file's fault
            return n, f"decode failed at frame {n}: {_error_text(exc)}"
        if (frame.width, frame.height) != size:
            return n, f"frame {n} is {frame.width}x{frame.height}, expected {size[0]}x{size[1]}"
        n += 1
        if n > limit:
            return n, f"more than {limit} frames in {limit - FRAME_SLACK} frames' duration"


def _count_problem(n: int, duration: float, fps: float, written: int | None) -> str | None:
    if n == 0:
        return "no frames"
    if abs(n - duration * fps) > FRAME_SLACK:
        return f"frames {n} vs duration {duration:g} s x {fps:g} fps"
    if written is not None and n != written:
        return f"frames {n} decoded vs {written} written by the render"
    return None


def _error_text(exc: BaseException) -> str:
    """``Type: message`` without the file name FFmpeg errors append (the row must not depend on out_dir)."""
    text = getattr(exc, "strerror", None) or str(exc)
    return f"{type(exc).__name__}: {text}"


def _clip(text: str) -> str:
    return text[:DETAIL_CHARS]
