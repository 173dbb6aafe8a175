"""Per-frame NumPy/OpenCV oracle, written directly from the spec (td.md §2, padvc.md §3–§7).

Deliberately slow and obvious: one frame or one pair at a time, OpenCV where the spec names an OpenCV
call, plain Python for the scans. Tests compare every prism_kernels function against these; the kernel
benchmark times the same work per frame.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

TAU = 25
EVENT_THRESHOLD_ABS = 50_000.0
DILATE_KSIZE = 7


# --- gray ---------------------------------------------------------------------------------------------

def gray_cv2(frame_bgr: np.ndarray) -> np.ndarray:
    """One ``(H, W, 3) uint8`` BGR frame → ``(H, W) uint8`` via ``cv2.cvtColor(BGR2GRAY)``."""
    return cv2.cvtColor(frame_bgr, cv2.COLOR_BGR2GRAY)


def gray_formula(frame_bgr: np.ndarray) -> np.ndarray:
    """The spec's closed form ``(3735·B + 19235·G + 9798·R + 16384) >> 15`` in int64 NumPy."""
    f = frame_bgr.astype(np.int64)
    return ((3735 * f[..., 0] + 19235 * f[..., 1] + 9798 * f[..., 2] + 16384) >> 15).astype(np.uint8)


# --- pair signals -------------------------------------------------------------------------------------

def positive_diff(prev: np.ndarray, cur: np.ndarray) -> int:
    return int(np.maximum(cur.astype(np.int32) - prev.astype(np.int32), 0).sum())


def absolute_diff(prev: np.ndarray, cur: np.ndarray) -> int:
    return int(np.sum(cv2.absdiff(cur, prev), dtype=np.int64))


def changed_count(prev: np.ndarray, cur: np.ndarray, tau: int = TAU) -> int:
    return int(np.count_nonzero(cv2.absdiff(cur, prev) > tau))


def change_ratio(prev: np.ndarray, cur: np.ndarray, tau: int = TAU) -> float:
    d = cv2.absdiff(cur, prev)
    return float(np.count_nonzero(d > tau) / d.size)


def pair_series(grays: list[np.ndarray], fn) -> list:
    return [fn(grays[i - 1], grays[i]) for i in range(1, len(grays))]


# --- TD -----------------------------------------------------------------------------------------------

def td_raw_from_grays(grays: list[np.ndarray], container_frame_count: int, fps: float, tau: int = TAU) -> float:
    """td.md §2 on already-gray frames: sequential float64 sum of ratios, divided by (N − 1)/fps."""
    duration = (container_frame_count - 1) / fps if fps > 0 and container_frame_count > 1 else 0.0
    if duration <= 0 or not grays:
        return 0.0
    total = 0.0
    for i in range(1, len(grays)):
        total += change_ratio(grays[i - 1], grays[i], tau)
    return float(total / duration)


def read_frames_cv2(path) -> list[np.ndarray]:
    """Every BGR frame of a video, decoded one by one with OpenCV (the toolkit's reader)."""
    cap = cv2.VideoCapture(str(path))
    frames = []
    try:
        while True:
            ok, frame = cap.read()
            if not ok:
                break
            frames.append(frame)
    finally:
        cap.release()
    return frames


def td_raw_video(path: str, tau: int = TAU) -> float:
    """td.md §2 verbatim on a file: cv2.VideoCapture, container N, per-frame loop, 0.0 on any failure."""
    cap = cv2.VideoCapture(path)
    if not cap.isOpened():
        return 0.0
    fps = float(cap.get(cv2.CAP_PROP_FPS) or 0.0)
    n = int(cap.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
    duration = (n - 1) / fps if fps > 0 and n > 1 else 0.0
    if duration <= 0:
        cap.release()
        return 0.0
    ok, frame = cap.read()
    if not ok:
        cap.release()
        return 0.0
    prev = gray_cv2(frame)
    total = 0.0
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        cur = gray_cv2(frame)
        total += change_ratio(prev, cur, tau)
        prev = cur
    cap.release()
    return float(total / duration)


def td_center(td_raw: float, mu: float, sigma: float, eps: float) -> tuple[float, float]:
    """td.md §3: (center, z) with z = (ln(raw + eps) − μ)/σ, no clamping."""
    z = (math.log(float(td_raw) + eps) - mu) / sigma
    return math.exp(-0.5 * z * z), z


# --- events -------------------------------------------------------------------------------------------

def segment_events(diffs: list[float], threshold: float) -> list[tuple[int, int]]:
    """padvc.md §5 pseudo-code, strict ``d_i > θ``."""
    events = []
    inside = False
    start = 0
    for i, d in enumerate(diffs):
        if d > threshold and not inside:
            start, inside = i, True
        elif d <= threshold and inside:
            events.append((start, i))
            inside = False
    if inside:
        events.append((start, len(diffs)))
    return events


# --- Laplacian, dilation, energies --------------------------------------------------------------------

def laplacian(x: np.ndarray) -> np.ndarray:
    """``cv2.Laplacian`` ksize 1 in float64 (4-neighbour, BORDER_REFLECT_101 = OpenCV's default)."""
    return cv2.Laplacian(x.astype(np.float64), cv2.CV_64F, ksize=1)


def dilate(mask: np.ndarray, ksize: int = DILATE_KSIZE) -> np.ndarray:
    """padvc.md §4.3: 7×7 all-ones kernel, one iteration, default border; skipped for an empty mask."""
    if not np.any(mask):
        return mask.copy()
    return cv2.dilate(mask, np.ones((ksize, ksize), dtype=np.uint8))


def text_energy(mask: np.ndarray) -> float:
    """E_text(t) = Σ|L(M_t)| / 1e5 on the undilated 0/255 mask (float64)."""
    return float(np.sum(np.absolute(laplacian(mask))) / 1e5)


def geo_energy(gray_start: np.ndarray, gray_end: np.ndarray, dilated_text_mask: np.ndarray) -> float:
    """E_geo for one event: |L(max(g_e − g_s, 0))| summed where the geo mask (NOT text) is non-zero, / 1e5."""
    delta = np.maximum(gray_end.astype(np.int16) - gray_start.astype(np.int16), 0).astype(np.uint8)
    lap = np.absolute(cv2.Laplacian(delta, cv2.CV_64F))
    geo_mask = cv2.bitwise_not(dilated_text_mask)
    return float(np.sum(cv2.bitwise_and(lap, lap, mask=geo_mask)) / 1e5)


def fill_mask(shape_hw: tuple[int, int], polys: list) -> np.ndarray:
    """padvc.md §4.3: 0/255 uint8 mask, each polygon filled separately (points truncated to int32)."""
    mask = np.zeros(shape_hw, dtype=np.uint8)
    for pts in polys:
        arr = np.array(pts).astype(np.int32)
        if arr.size:
            cv2.fillPoly(mask, [arr], 255)
    return mask


# --- whole-video per-frame path (the benchmark's baseline) --------------------------------------------

def per_frame_signals(frames_bgr: list[np.ndarray], tau: int = TAU) -> dict:
    """Gray, positive diff sums, TD change counts and events for a list of BGR frames, one at a time."""
    grays = [gray_cv2(f) for f in frames_bgr]
    positive = pair_series(grays, positive_diff)
    changed = pair_series(grays, lambda a, b: changed_count(a, b, tau))
    events = segment_events([float(d) for d in positive], EVENT_THRESHOLD_ABS)
    return {"grays": grays, "positive": positive, "changed": changed, "events": events}


# --- synthetic clips (shared by tests and benchmarks) -------------------------------------------------

def synthetic_clip(seed: int, frames: int = 24, height: int = 120, width: int = 160) -> np.ndarray:
    """``(T, H, W, 3) uint8`` BGR clip in the style of a Manim video: black background, moving and
    brightening coloured rectangles, static holds (so events split), sparse noise, and pixels that change
    by exactly 25 and 26 gray levels (the TD threshold boundary)."""
    rng = np.random.default_rng(seed)
    clip = np.zeros((frames, height, width, 3), dtype=np.uint8)
    n_rect = 3
    pos = rng.integers(0, [height // 2, width // 2], size=(n_rect, 2))
    vel = rng.integers(-3, 4, size=(n_rect, 2))
    size = rng.integers(8, [height // 3, width // 3], size=(n_rect, 2))
    colour = rng.integers(40, 256, size=(n_rect, 3))
    for t in range(frames):
        if t > 0 and rng.random() < 0.25:          # static hold: identical frame
            clip[t] = clip[t - 1]
            continue
        f = clip[t]
        for k in range(n_rect):
            y, x = (pos[k] + vel[k] * t) % [height - size[k][0], width - size[k][1]]
            level = min(1.0, 0.3 + 0.1 * t)
            f[y:y + size[k][0], x:x + size[k][1]] = (colour[k] * level).astype(np.uint8)
        noise = rng.random((height, width)) < 0.01
        f[noise] = rng.integers(0, 256, size=(int(noise.sum()), 3), dtype=np.uint8)
        # gray-level steps of exactly 25 and 26 on a gray patch (B = G = R keeps gray = value)
        f[:4, :4] = 100 + (25 if t % 2 else 0)
        f[:4, 4:8] = 100 + (26 if t % 2 else 0)
    return clip


# --- PADVC, whole video, one frame at a time (padvc.md §4–§9) ------------------------------------------

def padvc_video_oracle(frames_bgr: list[np.ndarray], ocr_polys, pvd: int, *, p: float = 0.7,
                       threshold: float = EVENT_THRESHOLD_ABS, stride: int = 15,
                       divide_by_segments: bool = True) -> dict:
    """The toolkit's ``evaluate_single`` as the spec states it, on a list of BGR frames held in memory.

    ``ocr_polys(index, frame_bgr) -> polygons`` stands for the OCR call (already truncated to int32).
    Returns the per-frame quantities and the score: ``series`` (E_text at stride frames), ``events``,
    ``geo`` (raw E_geo per event), ``mids``/``mid_energy``, ``segments`` (S), ``e_text_max``, ``peak``,
    ``padvc_raw``.
    """
    n = len(frames_bgr)
    h, w = frames_bgr[0].shape[:2]
    series = []
    e_max, peak = 0.0, 0
    for t in range(0, n, stride):
        e = text_energy(fill_mask((h, w), ocr_polys(t, frames_bgr[t])))
        series.append((t, e))
        if e > e_max:
            e_max, peak = e, t
    grays = [gray_cv2(f) for f in frames_bgr]
    diffs = [positive_diff(grays[i - 1], grays[i]) for i in range(1, n)]
    events = segment_events([float(d) for d in diffs], threshold)
    geo = []
    for s, e in events:
        mask = dilate(fill_mask((h, w), ocr_polys(e, frames_bgr[e])))
        geo.append(geo_energy(grays[s], grays[e], mask))
    g = 0.0
    for x in geo:
        g += math.pow(x, p) if x > 0 else 0.0
    segments, mids, mid_energy = 1, [], []
    for k in range(1, len(events)):
        mid = (events[k - 1][1] + events[k][0]) // 2
        e = text_energy(fill_mask((h, w), ocr_polys(mid, frames_bgr[mid])))
        mids.append(mid)
        mid_energy.append(e)
        if e < 0.005:
            segments += 1
    numerator = g / max(segments, 1) if divide_by_segments else g
    burden = math.pow(e_max, p) if e_max > 0 else 0.0
    raw = numerator / (math.log(pvd + math.e) * (1 + burden)) if events else 0.0
    return {"diffs": diffs, "series": series, "events": events, "geo": geo, "mids": mids, "mid_energy": mid_energy,
            "segments": segments, "e_text_max": e_max, "peak": peak, "geo_sum_p": g, "padvc_raw": raw}


# --- video witness (kernels/witness.py) ----------------------------------------------------------------

def witness_frame(frame: np.ndarray, previous: np.ndarray, background: tuple, threshold: int,
                  explained: list, expected: list) -> tuple[int, int, list[int]]:
    """One checkpoint frame, pixel by pixel: ``(drawn, unexplained, [drawn-or-moving pixels in each expected box])``.
    Boxes are half-open ``(x0, y0, x1, y1)`` pixel rectangles; a pixel is drawn when a channel differs from the
    background by more than ``threshold``, moving when one differs from ``previous`` by more than it."""
    h, w = frame.shape[:2]
    drawn_n = unexplained = 0
    live = np.zeros((h, w), dtype=bool)
    for y in range(h):
        for x in range(w):
            px = [int(c) for c in frame[y, x]]
            is_drawn = any(abs(px[c] - int(background[c])) > threshold for c in range(3))
            moving = any(abs(px[c] - int(previous[y, x, c])) > threshold for c in range(3))
            live[y, x] = is_drawn or moving
            if not is_drawn:
                continue
            drawn_n += 1
            if moving:
                continue
            if not any(b[0] <= x < b[2] and b[1] <= y < b[3] for b in explained):
                unexplained += 1
    held = [int(sum(live[y, x] for y in range(max(b[1], 0), min(b[3], h)) for x in range(max(b[0], 0), min(b[2], w))))
            for b in expected]
    return drawn_n, unexplained, held
