"""Q-SPATIAL-13 (improved): cubics sampled at t in {0, 0.5, 1}, one ring per closed subpath, even-odd per family
member, inside the atom when inside any member; bbox and test points from the samples.

Hand-made shapes where reference and improved differ for the stated reason, real Manim objects, the
per-ring even-odd rule against a scalar implementation (hypothesis), and one audit child run under the
improved profile."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prism_fast.audit.config import AuditConfig
from prism_fast.audit.polygon import (
    inside_numpy, inside_rings, inside_rings_scalar, rings_from_members, round3, sample_cubic_path,
)


def _line_cubics(corners, closed=True) -> np.ndarray:
    """Control points of straight cubics through ``corners`` (manim's Polygon layout: a, a+d/3, a+2d/3, b)."""
    pts = []
    n = len(corners) if closed else len(corners) - 1
    for k in range(n):
        a, b = np.array(corners[k], float), np.array(corners[(k + 1) % len(corners)], float)
        pts += [a, a + (b - a) / 3, a + 2 * (b - a) / 3, b]
    return np.array(pts)


# ---------------------------------------------------------------------------------------------------------
# sampling and rings (pure)
# ---------------------------------------------------------------------------------------------------------
def test_closed_square_gives_one_ring_of_anchors_and_midpoints():
    sq = _line_cubics([(0, 0), (2, 0), (2, 2), (0, 2)])
    samples, rings = sample_cubic_path(sq)
    expected = [(0, 0), (1, 0), (2, 0), (2, 1), (2, 2), (1, 2), (0, 2), (0, 1)]  # B(0), B(0.5) of each side
    np.testing.assert_allclose(samples, expected)
    assert len(rings) == 1
    np.testing.assert_allclose(rings[0], expected)


def test_open_path_has_samples_but_no_ring_and_subpaths_split_on_jumps():
    open_pts = _line_cubics([(0, 0), (1, 0), (1, 1)], closed=False)
    samples, rings = sample_cubic_path(open_pts)
    np.testing.assert_allclose(samples, [(0, 0), (0.5, 0), (1, 0), (1, 0.5), (1, 1)])  # + final B(1)
    assert rings == []
    two = np.concatenate([_line_cubics([(0, 0), (1, 0), (1, 1)]), _line_cubics([(5, 5), (6, 5), (6, 6)])])
    samples, rings = sample_cubic_path(two)
    assert len(rings) == 2 and len(samples) == 12


def test_curved_cubic_midpoint_is_on_the_curve_not_the_handles():
    # one quarter-circle-like cubic: handles at (1, 0.55) and (0.55, 1); B(0.5) = (p0 + 3 p1 + 3 p2 + p3) / 8
    p = np.array([(1, 0), (1, 0.55), (0.55, 1), (0, 1)], float)
    samples, _ = sample_cubic_path(p)
    np.testing.assert_allclose(samples[1], (p[0] + 3 * p[1] + 3 * p[2] + p[3]) / 8)
    assert np.hypot(*samples[1]) == pytest.approx(1.0, abs=2e-3)


def test_hole_and_member_rules():
    outer = np.array([(0, 0), (4, 0), (4, 4), (0, 4)], float)
    inner = np.array([(1, 1), (3, 1), (3, 3), (1, 3)], float)
    pts = np.array([(0.5, 0.5), (2, 2), (5, 5)])
    # one member with two rings: even-odd makes the inner ring a hole
    assert inside_rings(pts, rings_from_members([[outer, inner]])).tolist() == [True, False, False]
    # two members: the point inside both is inside (any member), not cancelled as one chain would be
    assert inside_rings(pts, rings_from_members([[outer], [inner]])).tolist() == [True, True, False]
    # no ring at all: nothing is inside
    assert not inside_rings(pts, rings_from_members([[], [np.zeros((2, 2))]])).any()


# ---------------------------------------------------------------------------------------------------------
# property: vectorised per-ring even-odd == scalar implementation (boundary points included)
# ---------------------------------------------------------------------------------------------------------
lattice = st.integers(-6, 6).map(lambda k: k * 0.25)
coord = st.one_of(lattice, st.floats(-3, 3, allow_nan=False, allow_infinity=False))
ring = st.lists(st.tuples(coord, coord), min_size=0, max_size=8)
members = st.lists(st.lists(ring, min_size=0, max_size=3), min_size=0, max_size=3)


@settings(max_examples=150, deadline=None)
@given(mem=members, extra=st.lists(st.tuples(coord, coord), max_size=8))
def test_inside_rings_matches_scalar_per_ring_even_odd(mem, extra):
    pts = list(extra)
    for rings in mem:
        for r in rings:
            pts += r  # vertices
            pts += [((r[k][0] + r[k - 1][0]) / 2, (r[k][1] + r[k - 1][1]) / 2) for k in range(len(r))]  # edges
    p = np.array(pts, dtype=np.float64).reshape(-1, 2)
    scalar = np.array([inside_rings_scalar(x, y, mem) for x, y in p], dtype=bool)
    got = inside_rings(p, rings_from_members([[np.array(r, float).reshape(-1, 2) for r in rings] for rings in mem]))
    np.testing.assert_array_equal(got, scalar)


@settings(max_examples=100, deadline=None)
@given(verts=st.lists(st.tuples(coord, coord), min_size=3, max_size=10), extra=st.lists(st.tuples(coord, coord),
                                                                                      max_size=8))
def test_one_ring_one_member_is_the_reference_crossing_rule(verts, extra):
    v = np.array(verts, float)
    p = np.array([*extra, *verts], float).reshape(-1, 2)
    np.testing.assert_array_equal(inside_rings(p, rings_from_members([[v]])), inside_numpy(p, v))


# ---------------------------------------------------------------------------------------------------------
# hand-made Manim shapes: reference vs improved, for the stated reason
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def manim(tmp_path_factory):
    import manim

    # Text/Tex caches go to a temp dir, not the cwd's media/
    with manim.tempconfig({"media_dir": str(tmp_path_factory.mktemp("media"))}):
        yield manim


def _check(mobs, sampled):
    from prism_fast.audit.atoms import extract_atoms
    from prism_fast.audit.cascade import check_snapshot
    from manim import config

    atoms = extract_atoms(mobs, sampled_curves=sampled)
    return atoms, check_snapshot(atoms, AuditConfig(), config.frame_width / 2, config.frame_height / 2)


def test_circle_whose_handles_stick_out_is_oob_only_in_reference(manim):
    lx = manim.config.frame_width / 2
    # 8 cubics; rotated by 22.5 deg no anchor sits at angle 0, so the handles next to angle 0 stick out by
    # r * (sqrt(1 + h^2) cos(22.5 deg - atan h) - 1) with h = 4/3 tan(45/4 deg): about 0.025 r
    c = manim.Circle(radius=3).rotate(22.5 * manim.DEGREES)
    c.name = "ring"
    c.move_to([lx - 0.01 - 3, 0, 0])  # the curve itself ends 0.01 inside the frame
    handle_over = float(np.max(c.points[:, 0]) - lx)
    assert handle_over > 0.05  # the control points cross the 0.05 margin
    _, ref = _check([c], sampled=False)
    assert ref.out_of_bounds == [{"id": "ring", "dist": round3(handle_over)}]
    atoms, imp = _check([c], sampled=True)
    assert imp.out_of_bounds == []
    assert float(np.max(atoms[0].xy[:, 0])) < lx  # samples lie on the curve (t = 0.5 of the cubic at angle 0)
    assert len(atoms[0].xy) == 16  # 8 cubics x (B(0), B(0.5)); one closed ring


def test_two_glyph_text_zigzag_phantom_area_only_in_reference(manim):
    # "i    i": 2 glyphs x 2 subpaths (stem, dot). The reference chains all of them into one polygon, and the
    # jumps stem1 -> dot1 -> stem2 -> dot2 -> (close) stem1 enclose the empty gap between the glyphs.
    t = manim.Text("i    i", font_size=96)
    t.name = "word"
    sq = manim.Square(side_length=0.4, fill_opacity=1)
    sq.name = "box"
    sq.move_to(t.get_center())
    ref_atoms, ref = _check([t, sq], sampled=False)
    imp_atoms, imp = _check([t, sq], sampled=True)
    # the reason: the square's points are inside the chain polygon, but inside no glyph ring
    in_chain = inside_numpy(ref_atoms[1].xy, ref_atoms[0].xy)
    in_rings = inside_rings(imp_atoms[1].xy, imp_atoms[0].rings)
    assert in_chain.any() and not in_rings.any()
    r = round3(np.count_nonzero(in_chain) / len(ref_atoms[1].xy))
    assert r >= 0.1
    assert ref.overlaps == [{"ids": ["word", "box"], "ratio": r}]
    assert imp.overlaps == [] and imp.leaks == []
    # each glyph keeps its stem and dot as separate rings of its own member
    assert len(imp_atoms[0].rings.member_starts) == 2


def test_improved_profile_switches_q13_in_the_audit_child(tmp_path):
    from prism_fast.audit.runner import audit_one
    from prism_fast.profile import IMPROVED

    script = (
        "from manim import *\n\n"
        "class Handles(Scene):\n"
        "    def construct(self):\n"
        "        ring = Circle(radius=3).rotate(22.5 * DEGREES)\n"
        "        ring.move_to([config.frame_width / 2 - 3.01, 0, 0])\n"
        "        note = Text('n', font_size=20).to_corner(UL)\n"
        "        self.play(Create(ring), FadeIn(note), run_time=0.2)\n"
    )
    row = audit_one("handles", script, tmp_path, AuditConfig(), IMPROVED)
    assert row["audit_success"] == 1, row["error_msg"]
    assert row["quirks_not_implemented"] == []
    assert row["visual_issue_breakdown"]["out_of_bounds"] == 0, row["visual_audit_report"]
    assert "numpy_rings" in row["engine"]["backends"]
