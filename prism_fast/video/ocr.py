"""OCR text masks for PADVC behind one interface (spec padvc.md §4).

Backends (``OcrSettings.backend``):
- ``rapidocr`` (reference): ``rapidocr_onnxruntime.RapidOCR(det_limit_side_len=736)``, called per frame with the
  full-resolution BGR array and ``use_cls=False, use_rec=True, box_thresh=0.5, unclip_ratio=1.6,
  text_score=0.5``. The CUDA execution provider is used when ``provider`` asks for it (``auto``: when
  onnxruntime offers it); the provider actually used is recorded (``OcrEngine.provider``), and a requested
  provider that is not available is a warning plus ``provider_fallback`` (spec D-2: GPU OCR may differ).
- ``paddleocr`` (optional extra ``[paddle]``): PaddleOCR with models from a configured local directory; a
  clear error when the package or the directory is missing. Not part of the reference configuration.
- ``scene``: no OCR where the render recorded the text: the line boxes of every visible text mobject of every
  frame, from the sidecar ``<id>.textboxes.json`` the render wrote next to the video
  (:mod:`prism_fast.execute.textboxes`; :class:`SceneTextMasker`). Where a video has no usable record
  (missing, tampered, stale, frame count or size not the decoded video's) PADVC falls back to RapidOCR with the
  same settings, recorded per row (``mask_source``, ``mask_source_detail``). ``scene_masks`` (``auto``: this
  backend in profiles that fix Q-PADVC-15 — improved — and whenever it is asked for; ``off``: always OCR),
  ``scene_min_opacity`` (a text counts when its alpha exceeds it) and ``scene_pad`` (pixels added around each
  line box) shape these masks; none of them enters the OCR signature (scene masks never enter an OCR cache).

Caching (ours, exact because OCR is deterministic on identical input):
- ``FrameOcrCache``: polygons keyed by sha256(frame shape + bytes) + the OCR signature, so identical frames
  (static Manim waits) are OCR'd once, whichever video or index they come from. Optionally persisted.
- ``VideoOcrCacheFile``: the toolkit's per-video JSON (§4.4), same file name rule and format, so caches
  written by the authors' toolkit are reused. Its key is the video path string in reference (Q-PADVC-7: a
  re-render to the same path reuses the stale entries, which can change the numbers, and reference keeps
  that) and sha256(video bytes) in improved. Its index-level hits give the toolkit's ``cache_hit`` fields.

Integrity (issue #13, :mod:`prism_fast.integrity`): the frame cache is shared by every run under a runs_root,
so a poisoned entry would change every later PADVC on that frame. Each persisted entry carries
``tag = HMAC(key, content key + polygons)`` (key: ``<runs_root>/.cache/integrity.key`` by default, see
:func:`prism_fast.integrity.default_key_dir`); an entry without a valid tag is a miss (logged, counted in
``FrameOcrCache.integrity_failures``, OCR'd again and overwritten). The per-video file keeps the toolkit's
format byte for byte (spec padvc.md §4.4: caches written by the authors' toolkit are reused); given an
``integrity_key`` it also writes a sidecar ``<file>.tag`` and, on load, ignores a file whose sidecar does
not verify (toolkit-written caches are then not reused).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import cv2
import numpy as np

from prism_fast import fsutil, integrity
from prism_fast.integrity import ContentCache
from prism_fast.profile import Profile

log = logging.getLogger("prism_fast.ocr")

OCR_BACKENDS = ("rapidocr", "paddleocr", "scene")
OCR_PROVIDERS = ("auto", "cpu", "cuda")
SCENE_MASKS = ("auto", "off")
REUSE_MODES = ("exact", "text")   # OcrSettings.reuse, see "OCR reuse" below


class OcrUnavailable(RuntimeError):
    """The configured OCR backend cannot run here (package, models or data missing)."""


@dataclass(frozen=True)
class OcrSettings:
    """Everything that changes the boxes. ``signature()`` is the toolkit's cache signature (§4.4)."""

    backend: str = "rapidocr"
    use_cls: bool = False
    use_rec: bool = True
    text_score: float = 0.5
    box_thresh: float = 0.5
    unclip_ratio: float = 1.6
    det_limit_side_len: int = 736
    provider: str = "auto"               # auto | cpu | cuda (onnxruntime execution provider)
    paddle_model_dir: str | None = None  # paddleocr: folder with det/ and rec/ inference models
    scene_masks: str = "auto"            # auto | off: scene text boxes instead of OCR (module docstring)
    scene_min_opacity: float = 0.1       # scene masks: a text counts when its alpha exceeds this (OCR never sees < 0.05)
    scene_pad: int = 0                   # scene masks: pixels added on every side of each line box
    reuse: str = "exact"                 # exact | text (experimental, changes numbers): see "OCR reuse" below

    def __post_init__(self) -> None:
        if self.backend not in OCR_BACKENDS:
            raise ValueError(f"ocr backend: expected one of {OCR_BACKENDS}, got {self.backend!r}")
        if self.provider not in OCR_PROVIDERS:
            raise ValueError(f"ocr provider: expected one of {OCR_PROVIDERS}, got {self.provider!r}")
        if self.scene_masks not in SCENE_MASKS:
            raise ValueError(f"ocr scene_masks: expected one of {SCENE_MASKS}, got {self.scene_masks!r}")
        if self.reuse not in REUSE_MODES:
            raise ValueError(f"ocr reuse: expected one of {REUSE_MODES}, got {self.reuse!r}")

    def signature(self) -> str:
        """The toolkit's per-video cache signature of the OCR that runs. ``scene`` falls back to RapidOCR with
        these settings, so its OCR results are RapidOCR's and carry RapidOCR's signature."""
        if self.backend == "paddleocr":
            return "paddle"
        return (f"rapidocr_cls{int(self.use_cls)}_rec{int(self.use_rec)}_ts{self.text_score:.3f}"
                f"_bt{self.box_thresh:.3f}_ur{self.unclip_ratio:.3f}_ls{int(self.det_limit_side_len)}")


def ocr_settings_for_profile(settings: OcrSettings, profile: Profile) -> OcrSettings:
    """Q-PADVC-15 (the mask depends on the recogniser): improved takes the text masks from the render's text boxes
    (backend ``scene``, unless ``scene_masks: off``) and, where a video has none, from detection-only OCR
    (``use_rec`` off; the cache signature says rec0). ``scene_masks: off`` also turns an explicit ``scene`` backend
    back into RapidOCR."""
    if settings.scene_masks == "off" and settings.backend == "scene":
        settings = replace(settings, backend="rapidocr")
    if profile.fixes("Q-PADVC-15"):
        settings = replace(settings, use_rec=False)
        if settings.scene_masks == "auto" and settings.backend == "rapidocr":
            settings = replace(settings, backend="scene")
    return settings


def _backend_versions() -> str:
    from importlib import metadata

    out = []
    for dist in ("rapidocr-onnxruntime", "onnxruntime", "onnxruntime-gpu", "paddleocr", "paddlepaddle"):
        try:
            out.append(f"{dist}={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    return ",".join(out)


# --- polygons and masks ---------------------------------------------------------------------------------

def _is_point(p: Any) -> bool:
    return isinstance(p, (list, tuple, np.ndarray)) and len(p) >= 2 and not isinstance(p[0], (list, tuple, np.ndarray))


def _is_polygon(item: Any) -> bool:
    """A bare polygon: ≥ 4 points of ≥ 2 scalar coordinates."""
    return isinstance(item, (list, tuple, np.ndarray)) and len(item) >= 4 and _is_point(item[0])


def _is_line(item: Any) -> bool:
    """A recognised line ``[polygon, text, score]``."""
    try:
        first = item[0]
    except (TypeError, IndexError, KeyError):
        return False
    return isinstance(first, (list, tuple, np.ndarray)) and len(first) >= 4 and \
        isinstance(first[0], (list, tuple, np.ndarray)) and len(first[0]) >= 2


def truncate_polygon(points: Any) -> list[list[int]]:
    """Points → int32 by truncation toward zero (``np.asarray(...).astype(np.int32)``), as nested lists."""
    return np.asarray(points).astype(np.int32).tolist()


def extract_polygons(result: Any) -> list[list[list[int]]]:
    """§4.2: the polygons of an OCR result (RapidOCR tuple/list, PaddleOCR list or dict form)."""
    if isinstance(result, tuple) and len(result) >= 1:
        result = result[0]
    if result is None or not isinstance(result, list) or not result:
        return []
    if all(_is_polygon(item) for item in result):
        return [truncate_polygon(p) for p in result]
    first = result[0]
    lines = result
    if not all(_is_line(item) for item in result) and isinstance(first, list) and \
            all(_is_line(item) for item in first):
        lines = first   # PaddleOCR 2.x: one list of lines per image
    if all(_is_line(item) for item in lines):
        return [truncate_polygon(line[0]) for line in lines]
    if isinstance(first, dict):
        for key in ("rec_polys", "dt_polys"):
            if first.get(key) is not None:
                return [truncate_polygon(p) for p in first[key]]
    return []


def fill_text_mask(shape_hw: tuple[int, int], polygons: Sequence) -> np.ndarray:
    """§4.3: a 0/255 uint8 mask, each polygon filled separately (LINE_8, shift 0, edges included)."""
    mask = np.zeros((int(shape_hw[0]), int(shape_hw[1])), dtype=np.uint8)
    for poly in polygons:
        pts = np.asarray(poly, dtype=np.int32)
        if pts.size == 0:
            continue
        cv2.fillPoly(mask, [pts], 255)
    return mask


def frame_digest(frame_bgr: np.ndarray) -> str:
    """sha256 over the frame's shape, dtype and bytes: equal digests ⇔ identical OCR input."""
    arr = np.ascontiguousarray(frame_bgr)
    h = hashlib.sha256(f"{arr.shape}|{arr.dtype}|".encode())
    h.update(memoryview(arr).cast("B"))
    return h.hexdigest()


# --- memory -------------------------------------------------------------------------------------------
# ONNX Runtime's inference threads each get a glibc malloc arena, and the ~290 MB of detection activations per
# call are freed into them without being returned to the OS, so a long video's peak RSS creeps up call after
# call. Two arenas and a trim after each call keep the metric stage of a 60 s clip under 1 GB
# (docs/bench_padvc.md). Memory policy only: no effect on any result. No-ops where libc is not glibc.
M_ARENA_MAX = -8


def _glibc():
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:
        return None


_LIBC = _glibc()


def limit_malloc_arenas(n: int = 2) -> bool:
    """Cap glibc's malloc arenas for this process (threads created later share them)."""
    return bool(_LIBC is not None and _LIBC.mallopt(M_ARENA_MAX, int(n)))


def release_free_memory() -> None:
    """Return freed heap memory to the OS (``malloc_trim(0)``)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


# --- engines --------------------------------------------------------------------------------------------

class OcrEngine:
    """One OCR backend. ``polygons(frame)`` returns the truncated polygons of one BGR uint8 frame."""

    name = "base"
    provider: str = "cpu"
    provider_fallback: str | None = None

    def polygons(self, frame_bgr: np.ndarray) -> list[list[list[int]]]:  # pragma: no cover - interface
        raise NotImplementedError


def _onnx_cuda_available() -> bool:
    try:
        import onnxruntime as ort
    except ImportError:
        return False
    return "CUDAExecutionProvider" in ort.get_available_providers()


class RapidOcrEngine(OcrEngine):
    name = "rapidocr"

    def __init__(self, settings: OcrSettings):
        try:
            from rapidocr_onnxruntime import RapidOCR
        except ImportError as exc:
            raise OcrUnavailable(f"rapidocr backend: rapidocr_onnxruntime is not installed ({exc})") from exc
        self.settings = settings
        cuda_ok = _onnx_cuda_available()
        want_cuda = settings.provider == "cuda" or (settings.provider == "auto" and cuda_ok)
        if settings.provider == "cuda" and not cuda_ok:
            self.provider_fallback = "CUDAExecutionProvider not available in onnxruntime; OCR runs on CPU"
            log.warning("OCR: %s", self.provider_fallback)
            want_cuda = False
        limit_malloc_arenas(2)  # before the sessions and their threads exist (see "memory" above)
        kwargs = dict(det_limit_side_len=int(settings.det_limit_side_len), print_verbose=False)
        if want_cuda:
            kwargs.update(det_use_cuda=True, rec_use_cuda=True, cls_use_cuda=True)
        self._ocr = RapidOCR(**kwargs)
        self.provider = self._session_provider() or ("cuda" if want_cuda else "cpu")
        if want_cuda and self.provider != "cuda":
            self.provider_fallback = f"asked for CUDA, onnxruntime session runs on {self.provider}"
            log.warning("OCR: %s", self.provider_fallback)

    def _session_provider(self) -> str | None:
        try:
            providers = self._ocr.text_det.infer.session.get_providers()
        except AttributeError:
            return None
        return "cuda" if providers and providers[0] == "CUDAExecutionProvider" else "cpu"

    def raw(self, frame_bgr: np.ndarray):
        s = self.settings
        try:
            return self._ocr(frame_bgr, use_cls=s.use_cls, use_rec=s.use_rec, box_thresh=s.box_thresh,
                             unclip_ratio=s.unclip_ratio, text_score=s.text_score)
        finally:
            release_free_memory()

    def polygons(self, frame_bgr: np.ndarray) -> list[list[list[int]]]:
        return extract_polygons(self.raw(frame_bgr))


class PaddleOcrEngine(OcrEngine):
    """PaddleOCR 2.x with local models only: ``<paddle_model_dir>/det`` and ``/rec`` (never downloads)."""

    name = "paddleocr"

    def __init__(self, settings: OcrSettings):
        model_dir = settings.paddle_model_dir
        if not model_dir:
            raise OcrUnavailable("paddleocr backend: set metrics.padvc.ocr.paddle_model_dir to a local folder "
                                 "holding det/ and rec/ inference models (models are never downloaded)")
        det, rec = Path(model_dir) / "det", Path(model_dir) / "rec"
        if not det.is_dir() or not rec.is_dir():
            raise OcrUnavailable(f"paddleocr backend: {model_dir} must contain det/ and rec/ model folders")
        try:
            from paddleocr import PaddleOCR
        except ImportError as exc:
            raise OcrUnavailable("paddleocr backend: install the optional extra `pip install -e .[paddle]` "
                                 f"({exc})") from exc
        self._ocr = PaddleOCR(lang="ch", use_angle_cls=False, det_model_dir=str(det), rec_model_dir=str(rec),
                              use_gpu=settings.provider == "cuda", show_log=False)
        self.provider = "cuda" if settings.provider == "cuda" else "cpu"

    def polygons(self, frame_bgr: np.ndarray) -> list[list[list[int]]]:
        return extract_polygons(self._ocr.ocr(frame_bgr, cls=False))


class SceneTextEngine(OcrEngine):
    """The ``scene`` backend's OCR, for videos without a usable text-box record: RapidOCR with the same settings,
    created on first use (a run whose videos all have records never loads it)."""

    name = "scene"

    def __init__(self, settings: OcrSettings):
        self.settings = settings
        self._fallback: RapidOcrEngine | None = None

    @property
    def fallback(self) -> "RapidOcrEngine":
        if self._fallback is None:
            self._fallback = RapidOcrEngine(replace(self.settings, backend="rapidocr"))
        return self._fallback

    @property
    def provider(self) -> str:   # what the fallback runs on (predicted until it exists)
        if self._fallback is not None:
            return self._fallback.provider
        s = self.settings.provider
        return "cuda" if s == "cuda" or (s == "auto" and _onnx_cuda_available()) else "cpu"

    @property
    def provider_fallback(self) -> str | None:
        return self._fallback.provider_fallback if self._fallback is not None else None

    def polygons(self, frame_bgr: np.ndarray) -> list[list[list[int]]]:
        return self.fallback.polygons(frame_bgr)


def make_ocr_engine(settings: OcrSettings) -> OcrEngine:
    return {"rapidocr": RapidOcrEngine, "paddleocr": PaddleOcrEngine, "scene": SceneTextEngine}[settings.backend](settings)


# --- caches ---------------------------------------------------------------------------------------------

class OcrFrameStore(ContentCache):
    """The persisted part of :class:`FrameOcrCache` (:class:`prism_fast.integrity.ContentCache`: layout, tags).
    An entry is ``{"polys": [...]}``; its tag message is the one used before the shared base (``polys`` named
    directly), so entries written earlier stay valid."""

    KIND = "ocr_frame"
    WHAT = "OCR frame cache"

    def tag_message(self, key: str, entry: dict) -> bytes:
        return integrity.message(self.KIND, key=key, polys=entry.get("polys"))


class FrameOcrCache:
    """Polygons by (frame content digest, OCR signature); in memory (LRU, ``max_entries``) and, with
    ``directory``, one small JSON file per entry (:class:`OcrFrameStore`) so that later runs and other workers reuse
    it. Persisted entries are HMAC-tagged (module docstring); ``integrity_key`` defaults to the key of
    :func:`prism_fast.integrity.default_key_dir` of ``directory``."""

    def __init__(self, directory: str | Path | None = None, max_entries: int = 4096,
                 integrity_key: bytes | None = None):
        self.directory = Path(directory) if directory else None
        self.max_entries = int(max_entries)
        self._mem: OrderedDict[str, list] = OrderedDict()
        self._lock = threading.Lock()
        self._disk = OcrFrameStore(self.directory, integrity_key) if self.directory is not None else None
        self.key = self._disk.key if self._disk is not None else None

    @property
    def integrity_failures(self) -> int:
        """Persisted entries rejected by this object because their tag did not verify."""
        return self._disk.integrity_failures if self._disk is not None else 0

    def get(self, key: str) -> list | None:
        with self._lock:
            if key in self._mem:
                self._mem.move_to_end(key)
                return self._mem[key]
        if self._disk is None:
            return None
        entry = self._disk.load(key)
        polys = entry.get("polys") if entry is not None else None
        if not isinstance(polys, list):
            return None
        self._remember(key, polys)
        return polys

    def put(self, key: str, polys: list) -> None:
        self._remember(key, polys)
        if self._disk is not None:
            self._disk.store(key, {"polys": polys})

    def _remember(self, key: str, polys: list) -> None:
        with self._lock:
            self._mem[key] = polys
            self._mem.move_to_end(key)
            while len(self._mem) > self.max_entries:
                self._mem.popitem(last=False)


def file_sha256(path: str | Path) -> str:
    return fsutil.sha256_file(path)


class VideoOcrCacheFile:
    """The toolkit's per-video OCR cache (§4.4): ``<stem[:80]>__<sha1("{key}::{sig}")[:16]>.json`` holding
    ``{"video_path", "frames": {"<index>": {"shape", "box_count", "polys"}}}``, compact, non-ASCII kept,
    written atomically at ``flush()`` only when something was added. ``key`` is the video path string in
    reference (Q-PADVC-7) and the video's sha256 in improved.

    ``integrity_key`` (optional): also write ``<file>.tag`` = HMAC(key, file name + payload) and load a file only
    when its sidecar verifies (else start empty, ``integrity_failure`` set, warning logged). Off by default, so
    that caches written by the authors' toolkit are reused as the spec asks."""

    def __init__(self, directory: str | Path, video_path: str | Path, key: str, signature: str,
                 integrity_key: bytes | None = None):
        self.video_path = str(video_path)
        stem = Path(self.video_path).stem[:80]
        digest = hashlib.sha1(f"{key}::{signature}".encode("utf-8")).hexdigest()[:16]
        self.path = Path(directory) / f"{stem}__{digest}.json"
        self.tag_path = self.path.with_name(self.path.name + ".tag")
        self.key = integrity_key
        self.integrity_failure = False
        self.payload: dict = {"video_path": self.video_path, "frames": {}}
        self.dirty = False
        if self.path.is_file():
            try:
                raw = self.path.read_bytes()
                loaded = json.loads(raw.decode("utf-8"))
                if isinstance(loaded, dict) and self._trusted(raw):
                    loaded.setdefault("video_path", self.video_path)
                    loaded.setdefault("frames", {})
                    self.payload = loaded
            except (OSError, ValueError):
                pass

    def _message(self, raw: bytes) -> bytes:
        return integrity.message("ocr_video", name=self.path.name, sha256=fsutil.sha256_hex(raw))

    def _trusted(self, raw: bytes) -> bool:
        if self.key is None:
            return True
        try:
            tag = self.tag_path.read_text(encoding="ascii").strip()
        except (OSError, ValueError):
            tag = None
        if integrity.verify(self.key, self._message(raw), tag):
            return True
        self.integrity_failure = True
        log.warning("OCR cache file %s failed its integrity check (%s); starting it afresh", self.path.name,
                    "missing tag" if tag is None else "invalid tag")
        return False

    def get(self, index: int) -> dict | None:
        return self.payload["frames"].get(str(int(index)))

    def put(self, index: int, shape_hw: tuple[int, int], polys: list) -> None:
        self.payload["frames"][str(int(index))] = {"shape": [int(shape_hw[0]), int(shape_hw[1])],
                                                   "box_count": len(polys), "polys": polys}
        self.dirty = True

    def flush(self) -> None:
        if not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        raw = json.dumps(self.payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if self.key is not None:  # the tag first: a reader never sees the new file with no tag for it
            fsutil.atomic_write_text(self.tag_path, integrity.tag(self.key, self._message(raw)))
        fsutil.atomic_write_bytes(self.path, raw)
        self.dirty = False


@dataclass
class MaskResult:
    index: int
    polys: list
    box_count: int
    cache_hit: bool      # the toolkit's meaning: this frame index was already in the per-video cache
    ocr_called: bool     # an OCR inference actually ran for this request


@dataclass
class OcrStats:
    requests: int = 0
    ocr_calls: int = 0
    content_hits: int = 0   # served by an identical frame seen before (any index, any video)
    index_hits: int = 0     # served by the per-video index cache
    reused: int = 0         # served by another frame of this video whose text regions are unchanged (reuse=text)


# --- OCR reuse (``OcrSettings.reuse``) ------------------------------------------------------------------------
# "exact" (default, every profile): a frame is OCR'd unless an identical frame was (sha256 of its bytes): exact by
# construction.
# "text" (EXPERIMENTAL, never selected by a profile, not in the default config; it CHANGES NUMBERS): also reuse
# the result of an OCR'd frame A of the same video for a frame B when
#   - the render's text boxes of A and B are identical (same recorded content: every visible glyph at the same
#     pixel box with the same opacity; the sidecar of execute/textboxes.py, used only when it describes the decoded
#     video), and
#   - inside the text regions -- A's OCR boxes and the recorded text line boxes, each grown by REUSE_MARGIN px --
#     no BGR value of B differs from A's by more than REUSE_TOLERANCE;
#   without a usable record, only when the whole frames satisfy that tolerance.
# Results are compared with OCR'd frames only (never with a reused result), kept per video, and never enter the
# shared frame cache. Measured on the 48 bundled renders (bench/padvc_bench.py --ocr-budget, docs/bench_padvc.md):
# even with the text regions pixel-identical (tolerance 0) RapidOCR answers some such frames differently (the
# detector sees the whole frame), so 4 of 48 videos change, for 0.90x of the authors' calls. Kept for that study.
REUSE_MARGIN = 16
REUSE_TOLERANCE = 0


@dataclass
class _Ref:
    index: int
    frame: np.ndarray
    polys: list
    content: int | None      # the recorded text content id of this frame (None: no record)
    region: np.ndarray | None


def reuse_region(shape_hw, polys, lines, margin: int = REUSE_MARGIN) -> np.ndarray:
    """The pixels whose values decide whether a result can be reused: OCR boxes and text line boxes, grown."""
    h, w = int(shape_hw[0]), int(shape_hw[1])
    region = np.zeros((h, w), dtype=bool)
    for poly in polys:
        pts = np.asarray(poly)
        if pts.size:
            x0, y0 = pts[:, 0].min(), pts[:, 1].min()
            x1, y1 = pts[:, 0].max(), pts[:, 1].max()
            region[max(y0 - margin, 0):y1 + margin + 1, max(x0 - margin, 0):x1 + margin + 1] = True
    for x0, y0, x1, y1 in lines:
        region[max(y0 - margin, 0):y1 + margin + 1, max(x0 - margin, 0):x1 + margin + 1] = True
    return region


class TextMasker:
    """Per-video front end: polygons per frame index + the toolkit's cache bookkeeping.

    Two steps, so that a caller can OCR frames while it decodes them (no BGR frame is kept) and still report
    the toolkit's per-request ``cache_hit`` values in the toolkit's request order:
    - ``prefetch(index, frame)``: make sure the polygons of this frame are known — from the per-video index
      cache, else the frame-content cache, else one OCR call; remembers the frame's content key;
    - ``polygons_at(index[, frame])``: one toolkit request, answered from the per-video index cache (a toolkit
      ``cache_hit``), else from the content cache (OCR'ing the frame if it was not prefetched).
    Without a per-video cache file (no OCR cache dir, like the toolkit without ``--ocr-cache-dir``) every request
    reports ``cache_hit = False``, as the toolkit does.
    """

    def __init__(self, engine: OcrEngine, settings: OcrSettings, frame_cache: FrameOcrCache | None = None,
                 video_cache: VideoOcrCacheFile | None = None):
        self.engine, self.settings = engine, settings
        self.frame_cache = frame_cache if frame_cache is not None else FrameOcrCache()
        self.video_cache = video_cache
        self.signature = settings.signature()  # the toolkit's per-video cache signature (unchanged)
        self._sig_value: str | None = None
        self.stats = OcrStats()
        self._key_of: dict[int, str] = {}          # prefetched index → content key
        self._polys_of: dict[str, list] = {}       # content key → polygons (this video)
        self._shape: tuple[int, int] | None = None
        self._fresh: set[str] = set()              # keys OCR'd by prefetch, not yet reported as called
        self.scene = None                          # reuse=text: the render's text boxes (SceneBoxes), if usable
        self._refs: list[_Ref] = []                # reuse=text: the OCR'd frames of this video

    @property
    def _sig(self) -> str:
        """The content cache is shared across runs: its key also holds what the toolkit's signature leaves out and
        can change boxes (the execution provider: GPU OCR may differ, spec D-2; backend versions; paddle models).
        Computed on first use (the ``scene`` backend's provider is known once its OCR exists)."""
        if self._sig_value is None:
            self._sig_value = hashlib.sha1("|".join((
                self.signature, str(getattr(self.engine, "provider", "?")), str(self.settings.paddle_model_dir),
                _backend_versions())).encode()).hexdigest()[:12]
        return self._sig_value

    def _lookup(self, frame_bgr: np.ndarray, index: int | None = None) -> tuple[str, list, bool]:
        key = f"{frame_digest(frame_bgr)}.{self._sig}"
        if key in self._polys_of:
            return key, self._polys_of[key], False
        polys = self.frame_cache.get(key)
        called = polys is None
        if called:
            reused = self._reuse(frame_bgr, index)
            if reused is not None:
                self.stats.reused += 1
                self._polys_of[key] = reused
                return key, reused, False
            polys = self.engine.polygons(np.ascontiguousarray(frame_bgr))
            self.frame_cache.put(key, polys)
            self.stats.ocr_calls += 1
        else:
            self.stats.content_hits += 1
        self._polys_of[key] = polys
        self._remember(frame_bgr, index, polys)
        return key, polys, called

    def _content(self, index: int | None):
        if self.scene is None or index is None or not 0 <= int(index) < self.scene.frames:
            return None   # (a record shorter than the video is caught after the scan, which then runs again)
        return self.scene.content_id(int(index))

    def _remember(self, frame_bgr: np.ndarray, index: int | None, polys: list) -> None:
        if self.settings.reuse != "text" or index is None:
            return
        content = self._content(index)
        region = None
        if content is not None:   # (index is inside the record)
            region = reuse_region(frame_bgr.shape[:2], polys, self.scene.line_boxes(int(index)))
        self._refs.append(_Ref(int(index), np.array(frame_bgr, copy=True), polys, content, region))

    def _reuse(self, frame_bgr: np.ndarray, index: int | None) -> list | None:
        """reuse=text: the polygons of an OCR'd frame of this video whose text regions this frame leaves unchanged
        (see REUSE_* above), or None."""
        if self.settings.reuse != "text" or index is None or not self._refs:
            return None
        content = self._content(index)
        for ref in reversed(self._refs):
            if ref.frame.shape != frame_bgr.shape or ref.content != content:
                continue
            if content is None:   # no record: the whole frame must agree
                diff = cv2.absdiff(ref.frame, frame_bgr)
            else:
                ys, xs = np.nonzero(ref.region.any(axis=1))[0], np.nonzero(ref.region.any(axis=0))[0]
                if not len(ys):   # nothing that reads as text, recorded or OCR'd: the region is empty
                    return ref.polys
                sl = (slice(ys[0], ys[-1] + 1), slice(xs[0], xs[-1] + 1))
                diff = cv2.absdiff(ref.frame[sl], frame_bgr[sl])[ref.region[sl]]
            if int(diff.max(initial=0)) <= REUSE_TOLERANCE:
                return ref.polys
        return None

    def prefetch(self, index: int, frame_bgr: np.ndarray) -> None:
        self._shape = (int(frame_bgr.shape[0]), int(frame_bgr.shape[1]))
        if self.video_cache is not None and self.video_cache.get(index) is not None:
            return
        key, _, called = self._lookup(frame_bgr, index)
        self._key_of[int(index)] = key
        if called:
            self._fresh.add(key)

    def polygons_at(self, index: int, frame_bgr: np.ndarray | None = None) -> MaskResult:
        self.stats.requests += 1
        if self.video_cache is not None:
            entry = self.video_cache.get(index)
            if entry is not None:
                polys = entry.get("polys", [])
                self.stats.index_hits += 1
                return MaskResult(index, polys, int(entry.get("box_count", len(polys))), True, False)
        if frame_bgr is not None:
            self._shape = (int(frame_bgr.shape[0]), int(frame_bgr.shape[1]))
            key, polys, called = self._lookup(frame_bgr, index)
        elif int(index) in self._key_of:
            key = self._key_of[int(index)]
            polys = self._polys_of[key]
            called = key in self._fresh
            self._fresh.discard(key)
        else:
            raise KeyError(f"frame {index} was neither prefetched nor passed")
        if self.video_cache is not None:
            self.video_cache.put(index, self._shape, polys)
        return MaskResult(index, polys, len(polys), False, called)

    def flush(self) -> None:
        if self.video_cache is not None:
            self.video_cache.flush()


class SceneTextMasker:
    """The ``TextMasker`` interface over a render's text-box record (:class:`prism_fast.execute.textboxes.SceneBoxes`):
    polygons per frame index = the line boxes of the visible texts, no OCR, no cache. ``cache_hit`` is always
    False (no OCR cache is involved)."""

    video_cache = None

    def __init__(self, boxes, settings: OcrSettings):
        self.boxes, self.settings = boxes, settings
        self.stats = OcrStats()

    def prefetch(self, index: int, frame_bgr: np.ndarray) -> None:
        pass

    def polygons_at(self, index: int, frame_bgr: np.ndarray | None = None) -> MaskResult:
        self.stats.requests += 1
        polys = self.boxes.polygons(int(index), self.settings.scene_min_opacity, self.settings.scene_pad)
        return MaskResult(int(index), polys, len(polys), False, False)

    def flush(self) -> None:
        pass


__all__ = ["OCR_BACKENDS", "OcrUnavailable", "OcrSettings", "extract_polygons", "fill_text_mask", "frame_digest",
           "OcrEngine", "RapidOcrEngine", "PaddleOcrEngine", "SceneTextEngine", "make_ocr_engine", "FrameOcrCache",
           "VideoOcrCacheFile", "TextMasker", "SceneTextMasker", "MaskResult", "OcrStats", "file_sha256"]
