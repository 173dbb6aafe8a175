"""Atom extraction on real Manim objects, in-process (no render): spec §7.1-§7.2."""

from __future__ import annotations

import numpy as np
import pytest
from manim import Arrow, Dot, Rectangle, Square, Text, ValueTracker, VGroup

from prism_fast.audit.atoms import extract_atoms

# style reads on non-VMobjects go through Mobject.__getattr__'s deprecated getters, as in the reference
pytestmark = pytest.mark.filterwarnings("ignore:This method is not guaranteed:DeprecationWarning")


def test_ids_counters_groups_and_skips():
    a, b = Square(), Square()
    a.set(name="cell")
    b.set(name="cell")
    group = VGroup(Square(), Square())
    group.set(name="grid")
    dot = Dot()
    arrow = Arrow(start=np.array([-1.0, 0, 0]), end=np.array([1.0, 0, 0]))
    atoms = extract_atoms([a, b, group, dot, arrow])
    ids = [x.id for x in atoms]
    assert ids[:4] == ["cell", "cell#1", "grid/Square", "grid/Square#1"]
    assert not any("Dot" in i for i in ids)             # Dot skipped with its subtree
    # Q-SPATIAL-15: the Arrow's shaft (own points of a group) is dropped; only its tip is an atom
    assert ids[4:] == ["Arrow/ArrowTriangleFilledTip"]
    assert atoms[0].is_container and atoms[0].is_rectangle and atoms[0].is_square and atoms[0].is_line_class is False


def test_items_carry_their_family_points_and_glyph_children():
    t = Text("Hi there", font_size=30)
    box = Rectangle(width=3, height=1).add(Square(0.2))   # a container keeps its whole family
    atoms = extract_atoms([t, box])
    assert [x.id for x in atoms] == ["Text", "Rectangle"]
    assert len(atoms[0].xy) == len(t.get_all_points()) and atoms[0].is_text_like and atoms[0].is_item
    assert len(atoms[0].children_xy) == len([c for c in t.submobjects if len(c.get_all_points())])
    assert len(atoms[1].xy) == len(box.get_all_points())


def test_value_tracker_atom_and_q_spatial_10_switch():
    tr = ValueTracker(10)
    atoms = extract_atoms([tr])
    assert len(atoms) == 1 and atoms[0].xy.tolist() == [[10.0, 0.0]]
    assert extract_atoms([tr], skip_value_trackers=True) == []


def test_improved_extraction_switches():
    from manim import ImageMobject, Rectangle as Rect

    ghost = Rect(width=2, height=1, stroke_opacity=0, fill_opacity=0)
    assert [a.id for a in extract_atoms([ghost])] == ["Rectangle"]            # Q-SPATIAL-11 reference
    assert extract_atoms([ghost], skip_invisible=True) == []                  # Q-SPATIAL-11 fixed
    img = ImageMobject(np.zeros((4, 6, 3), dtype=np.uint8))
    ref = extract_atoms([img])[0].xy
    fixed = extract_atoms([img], image_ring_order=True)[0].xy
    assert fixed.tolist() == ref[[0, 1, 3, 2]].tolist()                        # Q-SPATIAL-12
    arrow = Arrow(start=np.array([-1.0, 0, 0]), end=np.array([1.0, 0, 0]))
    ids = [a.id for a in extract_atoms([arrow], group_own_points=True)]
    assert ids == ["Arrow", "Arrow/ArrowTriangleFilledTip"]                    # Q-SPATIAL-15
