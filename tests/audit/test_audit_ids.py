"""Id helpers: the spec's own examples (spatial_audit.md §7.3)."""

from prism_fast.audit.ids import family, leaf_id, norm_parts, parent_id


def test_spec_examples_cut_at_first_hash():
    assert parent_id("grid#1/Square#2") == ""
    assert leaf_id("cells#1/Square") == "cells"
    assert parent_id("a/b/c#3") == "a/b"
    assert parent_id("top") == ""
    assert leaf_id("a/b/c#3") == "c"


def test_per_component_switch_q_spatial_14():
    assert parent_id("grid#1/Square#2", per_component=True) == "grid"
    assert leaf_id("cells#1/Square", per_component=True) == "Square"


def test_norm_parts_and_family():
    assert norm_parts("table/row#2//cell#1/rect") == ["table", "row", "cell", "rect"]
    assert family("g/box_12") == "box"
    assert family("g/box_top") == "box"       # tail of <= 3 chars
    assert family("g/box_bottom") == "box_bottom"
    assert family("g/plain") == "plain"
