"""Point-in-polygon engine: scalar rule vs NumPy vs torch vs matplotlib (the reference's own function)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.path import Path as MPath

from prism_fast.audit.polygon import (
    _edges, cover, inside_numpy, inside_scalar, inside_torch_batched, leak, oob, pair_ratios, round3,
)

# coordinates on a coarse lattice make exact ties (points on edges/vertices, horizontal edges) common
lattice = st.integers(-6, 6).map(lambda k: k * 0.25)
anyfloat = st.floats(-3, 3, allow_nan=False, allow_infinity=False)
coord = st.one_of(lattice, anyfloat)
polygons = st.lists(st.tuples(coord, coord), min_size=0, max_size=12)


def _torch_inside(points: np.ndarray, verts: np.ndarray, device="cpu") -> np.ndarray:
    x0, y0, x1, y1 = (np.asarray(a)[None, :] for a in _edges(verts))
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(device)  # noqa: E731
    owner = torch.zeros(len(points), dtype=torch.int64, device=device)
    return inside_torch_batched(t(points), owner, t(x0), t(y0), t(x1), t(y1)).cpu().numpy()


def test_round3_is_half_to_even_on_the_binary_value():
    assert round3(5 / 16) == 0.312
    assert round3(0.0625) == 0.062
    assert round3(0.3425) == round(0.3425, 3)


@settings(max_examples=300, deadline=None)
@given(verts=polygons, extra=st.lists(st.tuples(coord, coord), max_size=10))
def test_numpy_and_torch_match_scalar_rule_and_matplotlib(verts, extra):
    v = np.array(verts, dtype=np.float64).reshape(-1, 2)
    # test points: random ones plus every vertex and every edge midpoint (boundary cases)
    pts = [*extra, *verts]
    if len(v) >= 2:
        pts += [tuple((v[k] + v[k - 1]) / 2) for k in range(len(v))]
    p = np.array(pts, dtype=np.float64).reshape(-1, 2)
    scalar = np.array([inside_scalar(x, y, verts) for x, y in p], dtype=bool)
    np.testing.assert_array_equal(inside_numpy(p, v), scalar)
    if len(v) >= 3:
        np.testing.assert_array_equal(_torch_inside(p, v), scalar)
        np.testing.assert_array_equal(np.asarray(MPath(v).contains_points(p), dtype=bool), scalar)


@pytest.mark.gpu
def test_torch_kernel_on_cuda_is_bit_exact():
    rng = np.random.default_rng(0)
    v = np.round(rng.normal(size=(40, 2)), 2)
    p = np.concatenate([np.round(rng.normal(size=(4000, 2)), 2), v, (v + np.roll(v, 1, axis=0)) / 2])
    np.testing.assert_array_equal(_torch_inside(p, v, "cuda"), _torch_inside(p, v, "cpu"))


def test_non_finite_points_are_outside_and_nan_polygons_follow_matplotlib():
    sq = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=float)
    p = np.array([[0.5, 0.5], [np.nan, 0.5], [np.inf, 0.5], [0.5, np.nan]])
    assert inside_numpy(p, sq).tolist() == [True, False, False, False]
    holes = np.array([[0, 0], [4, 0], [4, 4], [0, 4], [np.nan, np.nan], [1, 1], [3, 1], [3, 3], [1, 3]])
    q = np.array([[0.5, 0.5], [2, 2], [5, 5]])
    np.testing.assert_array_equal(inside_numpy(q, holes), MPath(holes).contains_points(q))


def test_touching_squares_count_boundary_points_like_matplotlib():
    # boundary points count inside or outside by side (spec §8); the engine must agree with matplotlib
    def square(x0):
        corners = [(x0 + 1, 1), (x0, 1), (x0, 0), (x0 + 1, 0)]  # manim's order: UR, UL, DL, DR
        pts = []
        for k in range(4):
            a, b = np.array(corners[k]), np.array(corners[(k + 1) % 4])
            pts += [a, a + (b - a) / 3, a + 2 * (b - a) / 3, b]
        return np.array(pts, dtype=float)

    a, b = square(0.0), square(1.0)
    r = max(cover(a, b), cover(b, a))
    assert 0 < r < 0.5
    assert r == max(round3(MPath(b).contains_points(a).sum() / len(a)),
                    round3(MPath(a).contains_points(b).sum() / len(b)))


def test_cover_leak_oob_guards():
    tri = np.array([[0, 0], [2, 0], [0, 2]], dtype=float)
    one = np.array([[0.1, 0.1]])
    assert cover(one, tri) == 0          # |a| < 2
    assert cover(tri, tri[:2]) == 0      # |b| < 3
    assert leak(one, tri) == 0.0         # inside
    assert leak(np.array([[5.0, 5.0]]), tri) == 1.0  # no bbox shortcut
    far = tri + 100
    assert cover(far, tri) == 0          # strictly disjoint bboxes
    assert oob(np.array([[10.0, 0.0]]), 7.1111, 4.0) == round3(10.0 - 7.1111)
    assert oob(np.zeros((0, 2)), 7.1, 4.0) == 0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.tuples(lattice, lattice), min_size=1, max_size=8), min_size=1, max_size=7),
       st.sampled_from(["mpl_batched", "numpy", "torch", "matplotlib"]))
def test_pair_ratios_equal_brute_force_cover(atoms, backend):
    xys = [np.array(a, dtype=np.float64) for a in atoms]
    ratios, _, stats = pair_ratios(xys, backend=backend)
    got = {(i, j): r for i, j, r in ratios}
    for i in range(len(xys)):
        for j in range(i + 1, len(xys)):
            want = max(cover(xys[i], xys[j]), cover(xys[j], xys[i]))
            assert got.get((i, j), 0) == want
    assert stats.backend == backend


ROOT = Path(__file__).resolve().parents[2]


# --- matplotlib imported by the render server (polygon.preload_matplotlib) -------------------------------------------

_RC_DUMP = (  # (dict.items: reading "backend" through rcParams would resolve it, importing pyplot)
    "import json, sys, matplotlib\n"
    "from matplotlib import rcsetup\n"
    "raw = dict.items(matplotlib.rcParams)\n"
    "print(json.dumps({k: 'auto' if v is rcsetup._auto_backend_sentinel else repr(v) for k, v in sorted(raw)}))\n"
)


def _run_py(code: str, cwd, env: dict) -> str:
    import subprocess

    proc = subprocess.run([sys.executable, "-c", code], cwd=str(cwd), env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def test_the_render_server_imports_matplotlib_as_a_render_child_would(tmp_path):
    """The prefork render server imports matplotlib's Path once (onepass_child.warm), so no one-pass render child
    imports it at its first overlap check (≈ 0.12 s each). Its rc parameters must be a child's -- a child has no
    MATPLOTLIBRC/MPLBACKEND, a fresh cwd and HOME, so it reads matplotlib's default file -- even where the server's
    own environment names other settings: an rc file in its cwd, in $MATPLOTLIBRC and in its user's config dir, and
    $MPLBACKEND. The server's environment, cwd and tempfile's (uncached) temp dir are as before, no config dir is
    made, and Pillow's format list has a plain process's order after its first image is opened."""
    import json
    import os

    clean_home = tmp_path / "child"
    clean_home.mkdir()
    path_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    child = _run_py("import matplotlib.path\n" + _RC_DUMP, clean_home, {**path_env, "HOME": str(clean_home)})

    server = tmp_path / "server"
    (server / "home" / ".config" / "matplotlib").mkdir(parents=True)
    (server / "home" / ".config" / "matplotlib" / "matplotlibrc").write_text("lines.linewidth: 7\n")
    (server / "cwd").mkdir()
    (server / "cwd" / "matplotlibrc").write_text("lines.linewidth: 9\n")
    (server / "env.rc").write_text("path.simplify: False\n")
    hostile = {**path_env, "HOME": str(server / "home"), "MATPLOTLIBRC": str(server / "env.rc"), "MPLBACKEND": "pdf"}
    code = (
        "import json, os, sys\n"
        "from prism_fast.audit import polygon\n"
        "import tempfile\n"
        "cwd = os.getcwd()\n"
        "assert tempfile.tempdir is None\n"
        "assert polygon.preload_matplotlib() and 'matplotlib.path' in sys.modules\n"
        "assert tempfile.tempdir is None  # (a child must find its own TMPDIR)\n"
        "assert os.getcwd() == cwd and os.environ['MATPLOTLIBRC'].endswith('env.rc') and os.environ['MPLBACKEND'] == 'pdf'\n"
        "assert not polygon.preload_matplotlib()  # once\n"
        "from PIL import Image\n"
        "print(json.dumps(Image.ID))\n"
    )
    ids = _run_py(code, server / "cwd", {**hostile, "PYTHONPATH": str(ROOT)})
    assert sorted(p.name for p in (server / "home" / ".config" / "matplotlib").iterdir()) == ["matplotlibrc"]
    assert sorted(p.name for p in (server / "home").iterdir()) == [".config"]
    rc = _run_py("from prism_fast.audit import polygon\npolygon.preload_matplotlib()\n" + _RC_DUMP, server / "cwd",
                 {**hostile, "PYTHONPATH": str(ROOT)})
    assert json.loads(rc) == json.loads(child)
    assert json.loads(rc)["lines.linewidth"] == "1.5" and json.loads(rc)["path.simplify"] == "True"
    plain_ids = _run_py("import json\nfrom PIL import Image\nImage.preinit()\nprint(json.dumps(Image.ID))\n",
                        clean_home, {**path_env, "HOME": str(clean_home)})
    assert json.loads(ids) == json.loads(plain_ids) and json.loads(ids)[-1] == "PNG"
    assert json.loads(rc)["backend"] == "auto"  # (not the server's $MPLBACKEND)
