"""Point-in-polygon counting, exactly as the authors' auditor (spec spatial_audit.md §8).

The auditor uses matplotlib ``Path(V).contains_points(Q)`` (no codes, radius 0): an even-odd crossings test
over the vertex chain V, implicitly closed from the last vertex back to the first. For a test point (tx, ty)
and an edge (x0, y0) -> (x1, y1)::

    f0 = y0 >= ty;  f1 = y1 >= ty
    toggle if f0 != f1 and (((y1 - ty) * (x0 - x1) >= (x1 - tx) * (y0 - y1)) == f1)

Everything is float64 with each product rounded on its own (no fused multiply-add): NumPy and torch
element-wise kernels never fuse a multiply into the comparison, so both back-ends are bit-exact with the
scalar rule. Test points that are not finite are outside (matplotlib skips them). Polygons with a
non-finite vertex are split into subpaths by matplotlib's NaN remover; they are delegated to matplotlib
itself, which *is* the reference semantics (counted in ``EngineStats.matplotlib_polygons``).

Layouts: points ``(P, 2) float64``; a polygon ``(M, 2) float64``; results ``(P,) bool``.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

# elements of one (points x edges) block; bounds the memory of one vectorised step
_BLOCK = 1 << 21


def round3(x: float) -> float:
    """Python ``round(float(x), 3)``: half-to-even on the exact binary value (5/16 -> 0.312)."""
    return round(float(x), 3)


# ---------------------------------------------------------------------------------------------------------
# scalar rule (the oracle of the vectorised kernels)
# ---------------------------------------------------------------------------------------------------------
def inside_scalar(tx: float, ty: float, verts: Sequence[Sequence[float]]) -> bool:
    """Even-odd test of one point against the implicitly closed chain ``verts`` (plain Python floats)."""
    m = len(verts)
    if m < 3 or not (math.isfinite(tx) and math.isfinite(ty)):
        return False
    inside = False
    for k in range(m):
        x0, y0 = float(verts[k - 1][0]), float(verts[k - 1][1])  # k = 0 gives the closing edge
        x1, y1 = float(verts[k][0]), float(verts[k][1])
        f0 = y0 >= ty
        f1 = y1 >= ty
        if f0 != f1 and (((y1 - ty) * (x0 - x1) >= (x1 - tx) * (y0 - y1)) == f1):
            inside = not inside
    return inside


# ---------------------------------------------------------------------------------------------------------
# NumPy kernel
# ---------------------------------------------------------------------------------------------------------
def _edges(verts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    x1 = verts[:, 0]
    y1 = verts[:, 1]
    x0 = np.roll(x1, 1)
    y0 = np.roll(y1, 1)
    return x0, y0, x1, y1


def inside_numpy(points: np.ndarray, verts: np.ndarray) -> np.ndarray:
    """``(P, 2), (M, 2) float64 -> (P,) bool``; the even-odd rule of the module docstring."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    verts = np.asarray(verts, dtype=np.float64).reshape(-1, 2)
    out = np.zeros(len(points), dtype=bool)
    if len(verts) < 3 or len(points) == 0:
        return out
    if not np.isfinite(verts).all():
        return _inside_matplotlib(points, verts)
    x0, y0, x1, y1 = _edges(verts)
    dx = x0 - x1
    dy = y0 - y1
    step = max(1, _BLOCK // len(verts))
    with np.errstate(invalid="ignore", over="ignore"):  # non-finite test points are masked below
        for s in range(0, len(points), step):
            _numpy_block(points, s, step, x0, y0, x1, y1, dx, dy, out)
    return out


def _numpy_block(points, s, step, x0, y0, x1, y1, dx, dy, out) -> None:
    """One block of test points against all edges; writes ``out[s:s + step]``."""
    tx = points[s:s + step, 0:1]
    ty = points[s:s + step, 1:2]
    f0 = y0 >= ty
    f1 = y1 >= ty
    lhs = (y1 - ty) * dx
    rhs = (x1 - tx) * dy
    toggle = (f0 != f1) & ((lhs >= rhs) == f1)
    odd = (np.count_nonzero(toggle, axis=1) & 1).astype(bool)
    finite = np.isfinite(points[s:s + step]).all(axis=1)
    out[s:s + step] = odd & finite


def _inside_matplotlib(points: np.ndarray, verts: np.ndarray) -> np.ndarray:
    from matplotlib.path import Path as MPath

    return np.asarray(MPath(verts).contains_points(points), dtype=bool)


# what matplotlib reads from the environment when it is imported (its rc file, its backend)
_MPL_IMPORT_ENV = ("MATPLOTLIBRC", "MPLBACKEND")


def preload_matplotlib() -> bool:
    """Import matplotlib's ``Path`` (:func:`_inside_matplotlib`) in a prefork server, before it forks: the one-pass
    render children checked their first snapshot's overlaps with an import of matplotlib each (≈ 0.12 s a render).

    Imported as a render child would import it: matplotlib reads an rc file at import (``./matplotlibrc``, then
    ``$MATPLOTLIBRC``, then one under the user's config dir) and ``$MPLBACKEND``; a child has neither variable (the
    sandbox's allow-list), a fresh scratch dir as cwd and as HOME, so it reads matplotlib's own default file. Here
    the import runs in an empty directory with ``MATPLOTLIBRC`` naming that default file and no ``MPLBACKEND``
    (both restored after), so the server's rc parameters are the children's, its user's configuration is not read,
    and no config dir is made (matplotlib looks one up only after the candidates before it). matplotlib's import
    also imports Pillow's PNG plugin, which registers PNG in Pillow's format list; ``PIL.Image.preinit()`` runs
    first, so that list has a plain child's order after its first image is opened. tempfile's cached temp dir is left
    as it was. Returns False where matplotlib is missing or was already imported (then nothing is changed)."""
    import importlib.util
    import tempfile

    if "matplotlib" in sys.modules:
        return False
    spec = importlib.util.find_spec("matplotlib")
    if spec is None or not spec.submodule_search_locations:
        return False
    default_rc = os.path.join(list(spec.submodule_search_locations)[0], "mpl-data", "matplotlibrc")
    if not os.path.isfile(default_rc):
        return False
    from PIL import Image

    Image.preinit()
    saved = {k: os.environ.get(k) for k in _MPL_IMPORT_ENV}
    cwd = os.getcwd()
    # (tempfile caches the temp dir it finds first: left cached here, every forked child would make its temp files
    # in the server's temp dir instead of its own TMPDIR -- the LaTeX format's compiles failed so)
    cached_tempdir = tempfile.tempdir
    try:
        with tempfile.TemporaryDirectory(prefix="prism_mpl_") as empty:
            try:
                os.environ.pop("MPLBACKEND", None)
                os.environ["MATPLOTLIBRC"] = default_rc
                os.chdir(empty)
                import matplotlib.path  # noqa: F401
            finally:
                os.chdir(cwd)
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
    finally:
        tempfile.tempdir = cached_tempdir
    return True


# ---------------------------------------------------------------------------------------------------------
# torch kernel (batched over many polygons)
# ---------------------------------------------------------------------------------------------------------
def inside_torch_batched(points, point_poly, x0, y0, x1, y1):
    """Batched even-odd test on torch tensors.

    ``points (P, 2) float64``, ``point_poly (P,) int64`` (row of the polygon each point is tested against),
    ``x0, y0, x1, y1 (B, M) float64``: the edges of B polygons, padded with NaN edges (a NaN edge never
    toggles, because both ``>=`` comparisons are False). All polygon vertices must be finite.
    Returns ``(P,) bool``. Device and dtype follow the inputs.
    """
    import torch

    if points.dtype != torch.float64 or x0.dtype != torch.float64:
        raise TypeError(f"expected float64 tensors, got {points.dtype} and {x0.dtype}")
    if points.ndim != 2 or points.shape[1] != 2:
        raise ValueError(f"expected points of shape (P, 2), got {tuple(points.shape)}")
    m = x0.shape[1]
    out = torch.zeros(points.shape[0], dtype=torch.bool, device=points.device)
    step = max(1, _BLOCK // max(m, 1))  # memory: (points of one block) x (padded edges)
    for s in range(0, points.shape[0], step):
        idx = point_poly[s:s + step]
        tx = points[s:s + step, 0:1]
        ty = points[s:s + step, 1:2]
        ex0, ey0, ex1, ey1 = x0[idx], y0[idx], x1[idx], y1[idx]
        f0 = ey0 >= ty
        f1 = ey1 >= ty
        lhs = (ey1 - ty) * (ex0 - ex1)
        rhs = (ex1 - tx) * (ey0 - ey1)
        toggle = (f0 != f1) & ((lhs >= rhs) == f1)
        odd = (toggle.sum(dim=1) % 2).bool()
        finite = torch.isfinite(points[s:s + step]).all(dim=1)
        out[s:s + step] = odd & finite
    return out


# ---------------------------------------------------------------------------------------------------------
# pair engine: r = max(cover(a, b), cover(b, a)) for every bbox-touching pair of a snapshot
# ---------------------------------------------------------------------------------------------------------
@dataclass
class EngineStats:
    atoms: int = 0
    bbox_pairs: int = 0
    tests: int = 0
    backend: str = "numpy"
    matplotlib_polygons: int = 0
    extra: dict = field(default_factory=dict)


def bboxes(xys: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per-atom ``(N, 2)`` min and max of the x/y columns (NaN propagates, as ``np.min`` does)."""
    n = len(xys)
    bmin = np.full((n, 2), np.nan)
    bmax = np.full((n, 2), np.nan)
    for i, xy in enumerate(xys):
        if len(xy):
            bmin[i] = np.min(xy, axis=0)
            bmax[i] = np.max(xy, axis=0)
    return bmin, bmax


def touching_pairs(bmin: np.ndarray, bmax: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays (i, j), i < j in row-major order, of pairs whose bboxes are not strictly disjoint.

    Strictly disjoint means ``max1 < min2 or min1 > max2`` in x or in y (touching boxes are kept). Any NaN
    comparison is False, so an atom with a NaN coordinate is never disjoint (as in the reference).
    """
    n = len(bmin)
    if n < 2:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    rows_i, rows_j = [], []
    step = max(1, (1 << 22) // n)
    for s in range(0, n, step):
        a_min, a_max = bmin[s:s + step, None, :], bmax[s:s + step, None, :]
        disjoint = ((a_max < bmin[None]) | (a_min > bmax[None])).any(axis=2)
        ii, jj = np.nonzero(~disjoint)
        ii = ii + s
        keep = jj > ii
        rows_i.append(ii[keep])
        rows_j.append(jj[keep])
    return np.concatenate(rows_i).astype(np.int64), np.concatenate(rows_j).astype(np.int64)


def _count_cpu(tasks_by_poly: dict, xys, stats: EngineStats, kernel=None) -> dict:
    """One kernel call per polygon, on the concatenated test points of all its tasks."""
    kernel = kernel or inside_numpy
    counts = {}
    for b, members in tasks_by_poly.items():
        verts = xys[b]
        if not np.isfinite(verts).all():
            stats.matplotlib_polygons += 1
        pts = np.concatenate([xys[a] for a in members]) if len(members) > 1 else xys[members[0]]
        inside = kernel(pts, verts)
        ends = np.cumsum([len(xys[a]) for a in members])
        starts = ends - [len(xys[a]) for a in members]
        csum = np.concatenate([[0], np.cumsum(inside, dtype=np.int64)])
        for a, s, e in zip(members, starts, ends):
            counts[(a, b)] = int(csum[e] - csum[s])
    return counts


def _count_torch(tasks_by_poly: dict, xys, stats: EngineStats, device: str) -> dict:
    import torch

    counts = {}
    finite_polys = []
    for b, members in tasks_by_poly.items():
        if not np.isfinite(xys[b]).all():  # reference semantics through matplotlib (module docstring)
            stats.matplotlib_polygons += 1
            counts.update(_count_cpu({b: members}, xys, EngineStats(), _inside_matplotlib))
        else:
            finite_polys.append(b)
    # bucket polygons by vertex count (powers of two) to bound the NaN padding
    buckets: dict[int, list[int]] = {}
    for b in finite_polys:
        buckets.setdefault(max(3, len(xys[b])).bit_length(), []).append(b)
    dev = torch.device(device)
    for _, polys in sorted(buckets.items()):
        m = max(len(xys[b]) for b in polys)
        x0 = np.full((len(polys), m), np.nan)
        y0 = np.full((len(polys), m), np.nan)
        x1 = np.full((len(polys), m), np.nan)
        y1 = np.full((len(polys), m), np.nan)
        pts, owner, spans = [], [], []
        off = 0
        for row, b in enumerate(polys):
            ex0, ey0, ex1, ey1 = _edges(xys[b])
            k = len(ex0)
            x0[row, :k], y0[row, :k], x1[row, :k], y1[row, :k] = ex0, ey0, ex1, ey1
            for a in tasks_by_poly[b]:
                n_a = len(xys[a])
                pts.append(xys[a])
                owner.append(np.full(n_a, row, dtype=np.int64))
                spans.append((a, b, off, off + n_a))
                off += n_a
        t = lambda arr: torch.from_numpy(np.ascontiguousarray(arr)).to(dev)  # noqa: E731
        inside = inside_torch_batched(t(np.concatenate(pts)), t(np.concatenate(owner)), t(x0), t(y0), t(x1), t(y1))
        csum = np.concatenate([[0], np.cumsum(inside.cpu().numpy(), dtype=np.int64)])
        for a, b, s, e in spans:
            counts[(a, b)] = int(csum[e] - csum[s])
    return counts


BACKENDS = ("auto", "mpl_batched", "numpy", "torch", "matplotlib")


def pair_ratios(
    xys: Sequence[np.ndarray],
    backend: str = "auto",
    device: str = "cpu",
    torch_min_tests: int = 2_000_000,
) -> tuple[list[tuple[int, int, float]], dict, EngineStats]:
    """``r = max(cover(i, j), cover(j, i))`` for every pair i < j whose bboxes touch (others have r = 0).

    ``cover(a, b)`` is 0 when ``|a| < 2`` or ``|b| < 3``, else ``round3(inside(a, b) / |a|)``. Returns the
    list ``[(i, j, r)]`` in (i, j) row-major order, the raw inside counts ``{(a, b): count of a's points
    inside b}`` of every task that was run, and engine statistics.

    Back-ends (all exact; property-tested against each other and the scalar rule):
    - "mpl_batched": one matplotlib ``contains_points`` call per polygon on the concatenated test points of
      all its pairs (the reference's own C++ crossing loop, streaming edges; the fastest exact CPU path);
    - "numpy": the same rule in NumPy (materialises points x edges; an independent oracle);
    - "torch": batched over polygons (NaN-padded edges gathered per test point; for CUDA devices, slow on
      CPU);
    - "matplotlib": one call per ordered pair, as the authors' auditor does (benchmark baseline);
    - "auto": torch when ``device`` is CUDA and the point-edge tests reach ``torch_min_tests``, else
      mpl_batched.
    """
    xys = [np.asarray(xy, dtype=np.float64) for xy in xys]
    stats = EngineStats(atoms=len(xys))
    bmin, bmax = bboxes(xys)
    ii, jj = touching_pairs(bmin, bmax)
    stats.bbox_pairs = int(len(ii))
    sizes = np.array([len(xy) for xy in xys], dtype=np.int64)
    tasks_by_poly: dict[int, list[int]] = {}
    tests = 0
    for i, j in zip(ii.tolist(), jj.tolist()):
        if sizes[i] >= 2 and sizes[j] >= 3:
            tasks_by_poly.setdefault(j, []).append(i)
            tests += int(sizes[i] * sizes[j])
        if sizes[j] >= 2 and sizes[i] >= 3:
            tasks_by_poly.setdefault(i, []).append(j)
            tests += int(sizes[i] * sizes[j])
    stats.tests = tests
    if backend not in BACKENDS:
        raise ValueError(f"unknown geometry backend {backend!r}; expected one of {BACKENDS}")
    if backend == "auto":
        backend = "torch" if (device.startswith("cuda") and tests >= torch_min_tests) else "mpl_batched"
    stats.backend = backend
    if backend == "matplotlib":  # the reference's own per-pair calls: the baseline of the benchmark
        counts = {(a, b): int(np.count_nonzero(_inside_matplotlib(xys[a], xys[b])))
                  for b, members in tasks_by_poly.items() for a in members}
    elif backend == "torch":
        counts = _count_torch(tasks_by_poly, xys, stats, device)
    elif backend == "numpy":
        counts = _count_cpu(tasks_by_poly, xys, stats, inside_numpy)
    else:
        counts = _count_cpu(tasks_by_poly, xys, stats, _inside_matplotlib)
    out = []
    for i, j in zip(ii.tolist(), jj.tolist()):
        c_ij = round3(counts[(i, j)] / sizes[i]) if (i, j) in counts else 0.0
        c_ji = round3(counts[(j, i)] / sizes[j]) if (j, i) in counts else 0.0
        out.append((i, j, max(c_ij, c_ji)))
    return out, counts, stats


def cover(xy_a: np.ndarray, xy_b: np.ndarray) -> float:
    """Fraction of a's points inside b's polygon (§8), with the size guards and the bbox shortcut."""
    if len(xy_a) < 2 or len(xy_b) < 3:
        return 0
    amin, amax = np.min(xy_a, axis=0), np.max(xy_a, axis=0)
    bmin, bmax = np.min(xy_b, axis=0), np.max(xy_b, axis=0)
    if amax[0] < bmin[0] or amin[0] > bmax[0] or amax[1] < bmin[1] or amin[1] > bmax[1]:
        return 0
    return round3(np.count_nonzero(_inside_matplotlib(xy_a, xy_b)) / len(xy_a))


def leak(xy_a: np.ndarray, xy_c: np.ndarray) -> float:
    """Fraction of a's points outside c's polygon (§8); no bbox shortcut."""
    if len(xy_a) == 0 or len(xy_c) < 3:
        return 0
    return round3(np.count_nonzero(~_inside_matplotlib(xy_a, xy_c)) / len(xy_a))


def oob(xy: np.ndarray, lx: float, ly: float) -> float:
    """Largest overflow past the frame ``[-lx, lx] x [-ly, ly]``, floored at 0 and rounded (§8)."""
    if len(xy) == 0:
        return 0
    mins, maxs = np.min(xy, axis=0), np.max(xy, axis=0)
    overflows = [max(0, -lx - mins[0]), max(0, maxs[0] - lx), max(0, -ly - mins[1]), max(0, maxs[1] - ly)]
    return round3(max(overflows))


# ---------------------------------------------------------------------------------------------------------
# Q-SPATIAL-13 fixed (improved profile): sampled curves, per-subpath rings, even-odd per family member
# ---------------------------------------------------------------------------------------------------------
# Each cubic Bezier is sampled at t = 0, 0.5, 1 (not its control points); each closed subpath is its own ring;
# a point is inside a family member when the even-odd count over that member's rings is odd, and inside the
# atom when it is inside any member. The bbox and the test points are the samples. Within a subpath the t = 1
# sample of a curve is the t = 0 sample of the next one, so each curve contributes B(0) and B(0.5), and an
# open subpath also its final B(1) (for a closed one it equals the first sample).
_EQ_RTOL = 1.0e-5   # manim's VMobject.consider_points_equals_2d (np.isclose defaults) ...
_EQ_ATOL = 1.0e-6   # ... with tolerance_for_point_equality


def _close_2d(p: np.ndarray, q: np.ndarray) -> bool:
    """manim's 2-D point equality for subpath splitting: |p - q| <= atol + rtol * |q| per axis."""
    return bool(abs(p[0] - q[0]) <= _EQ_ATOL + _EQ_RTOL * abs(q[0])
                and abs(p[1] - q[1]) <= _EQ_ATOL + _EQ_RTOL * abs(q[1]))


def sample_cubic_path(points: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Samples and closed rings of one VMobject's own points (``(N, 2|3)``, 4 control points per cubic).

    Returns ``(samples (S, 2) float64, [ring (R, 2) float64, ...])``. Subpaths split where a curve's start
    anchor differs from the previous curve's end anchor (manim's 2-D equality); a subpath is closed when its
    last anchor equals its first. A trailing partial curve (``N % 4``) is dropped, as manim does.
    """
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] < 2:
        pts = pts.reshape(-1, 2)
    pts = pts[:, :2]
    n_curves = len(pts) // 4
    if n_curves == 0:
        return np.zeros((0, 2)), []
    cubic = pts[: n_curves * 4].reshape(n_curves, 4, 2)
    p0, p1, p2, p3 = cubic[:, 0], cubic[:, 1], cubic[:, 2], cubic[:, 3]
    mid = 0.125 * (p0 + 3.0 * p1 + 3.0 * p2 + p3)  # B(0.5) of each cubic
    samples, rings = [], []
    # a new subpath starts at curve k when its start anchor differs from curve k-1's end anchor
    joined = (np.abs(p3[:-1] - p0[1:]) <= _EQ_ATOL + _EQ_RTOL * np.abs(p0[1:])).all(axis=1)
    ends = [*(np.flatnonzero(~joined) + 1).tolist(), n_curves]
    start = 0
    for k in ends:
        # curves start..k-1 form one subpath
        seq = np.empty((2 * (k - start), 2))
        seq[0::2] = p0[start:k]
        seq[1::2] = mid[start:k]
        if _close_2d(p3[k - 1], p0[start]):
            samples.append(seq)
            if len(seq) >= 3:
                rings.append(seq)
        else:
            samples.append(np.vstack([seq, p3[k - 1:k]]))
        start = k
    return np.concatenate(samples), rings


@dataclass
class Rings:
    """The closed rings of one atom, grouped by family member, as a flat edge list.

    ``x0, y0, x1, y1`` are ``(E,) float64`` (each ring implicitly closed from its last vertex to its first);
    ``member_starts`` is ``(K,) int64``, the index of each member's first edge (members without a ring are
    left out). An empty edge list contains no point.
    """

    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray
    member_starts: np.ndarray

    @property
    def n_edges(self) -> int:
        return int(len(self.x0))


def rings_from_members(members: Sequence[Sequence[np.ndarray]]) -> Rings:
    """``members[k]`` = the rings ``(R, 2)`` of family member k; rings with < 3 vertices are dropped."""
    cols: list[list[np.ndarray]] = [[], [], [], []]
    starts = []
    n = 0
    for rings in members:
        first = n
        for ring in rings:
            ring = np.asarray(ring, dtype=np.float64).reshape(-1, 2)
            if len(ring) < 3:
                continue
            for col, arr in zip(cols, _edges(ring)):
                col.append(arr)
            n += len(ring)
        if n > first:
            starts.append(first)
    if n == 0:
        empty = np.zeros(0)
        return Rings(empty, empty, empty, empty, np.zeros(0, dtype=np.int64))
    x0, y0, x1, y1 = (np.concatenate(c) for c in cols)
    return Rings(x0, y0, x1, y1, np.asarray(starts, dtype=np.int64))


def inside_rings_scalar(tx: float, ty: float, members: Sequence[Sequence[Sequence[Sequence[float]]]]) -> bool:
    """Scalar oracle of ``inside_rings``: odd even-odd count over some member's rings (rings < 3 ignored)."""
    if not (math.isfinite(tx) and math.isfinite(ty)):
        return False
    for rings in members:
        odd = False
        for ring in rings:
            m = len(ring)
            if m < 3:
                continue
            for k in range(m):
                x0, y0 = float(ring[k - 1][0]), float(ring[k - 1][1])
                x1, y1 = float(ring[k][0]), float(ring[k][1])
                f0 = y0 >= ty
                f1 = y1 >= ty
                if f0 != f1 and (((y1 - ty) * (x0 - x1) >= (x1 - tx) * (y0 - y1)) == f1):
                    odd = not odd
        if odd:
            return True
    return False


def inside_rings(points: np.ndarray, rings: Rings) -> np.ndarray:
    """``(P, 2) float64 -> (P,) bool``: inside any member, each member by the even-odd rule over its rings.

    The same per-edge rule as ``inside_numpy`` (float64, each product rounded on its own)."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    out = np.zeros(len(points), dtype=bool)
    if rings.n_edges == 0 or len(points) == 0:
        return out
    x0, y0, x1, y1 = rings.x0, rings.y0, rings.x1, rings.y1
    dx = x0 - x1
    dy = y0 - y1
    step = max(1, _BLOCK // rings.n_edges)
    with np.errstate(invalid="ignore", over="ignore"):
        for s in range(0, len(points), step):
            tx = points[s:s + step, 0:1]
            ty = points[s:s + step, 1:2]
            f0 = y0 >= ty
            f1 = y1 >= ty
            toggle = (f0 != f1) & (((y1 - ty) * dx >= (x1 - tx) * dy) == f1)
            per_member = np.add.reduceat(toggle, rings.member_starts, axis=1, dtype=np.int64)
            finite = np.isfinite(points[s:s + step]).all(axis=1)
            out[s:s + step] = ((per_member & 1) == 1).any(axis=1) & finite
    return out


def cover_rings(xy_a: np.ndarray, xy_b: np.ndarray, rings_b: Rings) -> float:
    """cover(a, b) with b's rings (Q-SPATIAL-13 fixed): 0 when |a| < 2 or b has no ring, or the sample
    bboxes are strictly disjoint; else round3 of the fraction of a's samples inside b."""
    if len(xy_a) < 2 or rings_b.n_edges == 0 or len(xy_b) == 0:
        return 0
    amin, amax = np.min(xy_a, axis=0), np.max(xy_a, axis=0)
    bmin, bmax = np.min(xy_b, axis=0), np.max(xy_b, axis=0)
    if amax[0] < bmin[0] or amin[0] > bmax[0] or amax[1] < bmin[1] or amin[1] > bmax[1]:
        return 0
    return round3(np.count_nonzero(inside_rings(xy_a, rings_b)) / len(xy_a))


def leak_rings(xy_a: np.ndarray, rings_c: Rings) -> float:
    """leak(a, c) with c's rings (Q-SPATIAL-13 fixed): 0 when a has no sample or c no ring."""
    if len(xy_a) == 0 or rings_c.n_edges == 0:
        return 0
    return round3(np.count_nonzero(~inside_rings(xy_a, rings_c)) / len(xy_a))


def pair_ratios_rings(xys: Sequence[np.ndarray], rings: Sequence[Rings]) -> tuple[list, dict, EngineStats]:
    """``pair_ratios`` for the improved geometry: test points ``xys`` (samples), regions ``rings``.

    Same pair set (bbox-touching, i < j) and output layout as ``pair_ratios``; the guard ``|b| < 3`` becomes
    "b has no ring". NumPy only (backend recorded as ``numpy_rings``)."""
    xys = [np.asarray(xy, dtype=np.float64).reshape(-1, 2) for xy in xys]
    stats = EngineStats(atoms=len(xys), backend="numpy_rings")
    bmin, bmax = bboxes(xys)
    ii, jj = touching_pairs(bmin, bmax)
    stats.bbox_pairs = int(len(ii))
    sizes = [len(xy) for xy in xys]
    tasks_by_poly: dict[int, list[int]] = {}
    for i, j in zip(ii.tolist(), jj.tolist()):
        for a, b in ((i, j), (j, i)):
            if sizes[a] >= 2 and rings[b].n_edges > 0:
                tasks_by_poly.setdefault(b, []).append(a)
                stats.tests += sizes[a] * rings[b].n_edges
    counts = {}
    for b, members in tasks_by_poly.items():
        pts = np.concatenate([xys[a] for a in members])
        csum = np.concatenate([[0], np.cumsum(inside_rings(pts, rings[b]), dtype=np.int64)])
        off = 0
        for a in members:
            counts[(a, b)] = int(csum[off + sizes[a]] - csum[off])
            off += sizes[a]
    out = []
    for i, j in zip(ii.tolist(), jj.tolist()):
        c_ij = round3(counts[(i, j)] / sizes[i]) if (i, j) in counts else 0.0
        c_ji = round3(counts[(j, i)] / sizes[j]) if (j, i) in counts else 0.0
        out.append((i, j, max(c_ij, c_ji)))
    return out, counts, stats
