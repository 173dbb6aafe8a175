"""video/witness.judge on drawn frames and hand-made plans: the timeline, the frame of a checkpoint, what a box
explains, what an expected atom must hold, the decoy and the not_checked reasons. (The real renders are in
tests/security/test_video_witness.py.)"""

from __future__ import annotations

import numpy as np
import torch

from prism_fast.audit.witness import frames_of_play, timeline
from prism_fast.video.witness import judge, needed_frames

W, H = 160, 90          # pixels
CAM = [0.0, 0.0, 16.0, 9.0]   # 10 px per unit, centre at pixel (80, 45)


def _frame(boxes=(), colour=(255, 255, 255)) -> torch.Tensor:
    f = np.zeros((H, W, 3), dtype=np.uint8)
    for x0, y0, x1, y1 in boxes:  # scene units -> pixels
        f[int(45 - y1 * 10):int(45 - y0 * 10), int(80 + x0 * 10):int(80 + x1 * 10)] = colour
    return torch.from_numpy(f)


def _plan(play=1, expect=((-1.0, -1.0, 1.0, 1.0, "sq"),), members=((-1.0, -1.0, 1.0, 1.0, 0.02),),
          plays=((1.0, False, False), (1.0, False, False))) -> dict:
    seg = {"segment": 0, "snapshot": 0, "play": play, "camera": CAM, "background": [0.0, 0.0, 0.0],
           "expect": [list(e) for e in expect], "members": [list(m) for m in members]}
    return {"version": 2, "scenes": {"S": {"plays": [list(p) for p in plays], "segments": [seg]}}}


def test_frames_of_play_follow_manims_counts():
    assert frames_of_play(1.0, False, False, 15) == 15
    assert frames_of_play(1.01, False, False, 15) == 16        # len(arange(0, 1.01, 1/15))
    assert frames_of_play(1.01, True, False, 15) == 15          # a frozen wait: int(d * fps)
    assert frames_of_play(2.0, False, True, 15) == 0            # skipped by its section
    assert timeline([(1.0, False, False), (0.5, True, False)], 15).tolist() == [15, 22]
    # a run time shorter than a frame is one frame at the render's rate (recorded as 0.05 s by a 60 fps audit)
    assert frames_of_play(0.05, True, False, 15) == frames_of_play(0.05, False, False, 15) == 1
    # a wait its stop condition ended at t = 2.0 (frame times 0 .. 2.0): 31 frames, not the 150 of its max time
    assert frames_of_play(10.0, False, False, 15, stopped=2.0) == 31
    assert timeline([(10.0, False, False, 2.0)], 15).tolist() == [31]


def test_the_checkpoint_is_the_last_frame_written_before_it():
    plan = _plan()
    assert needed_frames(plan, "S", 15, 30) == [28, 29]
    frames = {28: _frame([(-1, -1, 1, 1)]), 29: _frame([(-1, -1, 1, 1)])}
    out = judge(plan, "S", 15, 30, frames)
    assert out["video_consistency"] == "ok", out
    (seg,) = out["video_consistency_detail"]["segments"]
    assert (seg["frame"], seg["drawn"], seg["unexplained"], seg["missing"]) == (29, 400, 0, [])


def test_pixels_nothing_explains_and_atoms_nothing_draws_are_mismatches():
    plan = _plan()
    elsewhere = {28: _frame([(3, -1, 5, 1)]), 29: _frame([(3, -1, 5, 1)])}  # drawn, held, where nothing is claimed
    out = judge(plan, "S", 15, 30, elsewhere)
    (seg,) = out["video_consistency_detail"]["segments"]
    assert out["video_consistency"] == "mismatch" and seg["unexplained"] == 400 and seg["missing"] == ["sq"]
    # the same pixels in motion at the checkpoint are excused, the atom that draws nothing is not
    moving = {28: _frame(), 29: _frame([(3, -1, 5, 1)])}
    out = judge(plan, "S", 15, 30, moving)
    (seg,) = out["video_consistency_detail"]["segments"]
    assert out["video_consistency"] == "mismatch" and seg["unexplained"] == 0 and seg["missing"] == ["sq"]
    # a few stray pixels are tolerated
    speck = _frame([(-1, -1, 1, 1)]).numpy().copy()
    speck[5:9, 5:9] = 255
    out = judge(plan, "S", 15, 30, {28: torch.from_numpy(speck), 29: torch.from_numpy(speck)})
    assert out["video_consistency"] == "ok", out


def test_an_atom_mostly_off_the_picture_is_not_expected_to_show():
    plan = _plan(expect=((7.5, -1.0, 9.5, 1.0, "off"),), members=())
    out = judge(plan, "S", 15, 30, {28: _frame(), 29: _frame()})
    assert out["video_consistency"] == "ok", out


def test_a_timeline_that_does_not_make_the_video_is_a_mismatch():
    out = judge(_plan(), "S", 15, 45, {28: _frame(), 29: _frame()})
    assert out["video_consistency"] == "mismatch"
    assert out["video_consistency_detail"]["video_frames"] == 45


def test_a_verdict_resting_on_another_scene_is_a_mismatch_and_the_other_reasons():
    out = judge(_plan(), "Rendered", 15, 30, {})
    assert out["video_consistency"] == "mismatch" and out["video_consistency_detail"]["audited"] == ["S"]
    empty = {"version": 2, "scenes": {"S": {"plays": [[1.0, False, False]], "segments": []}}}
    assert judge(empty, "S", 15, 15, {})["video_consistency"] == "not_checked:no_segments"
    assert judge(None, "S", 15, 15, {})["video_consistency"] == "not_checked:no_plan"


def test_a_filled_atom_must_show_over_a_part_of_its_box():
    """A filled square claimed where only a speck is drawn (another, skipped object) is not explained by it."""
    plan = _plan(expect=((-2.0, -2.0, 2.0, 2.0, "sq", True),), members=((-2.0, -2.0, 2.0, 2.0, 0.02),))
    speck = {28: _frame([(0, 0, 0.3, 0.3)]), 29: _frame([(0, 0, 0.3, 0.3)])}
    out = judge(plan, "S", 15, 30, speck)
    assert out["video_consistency"] == "mismatch" and out["video_consistency_detail"]["segments"][0]["missing"] == ["sq"]
    shown = {28: _frame([(-2, -2, 2, 2)]), 29: _frame([(-2, -2, 2, 2)])}
    assert judge(plan, "S", 15, 30, shown)["video_consistency"] == "ok"


def test_an_atom_the_audit_bounds_hold_but_the_picture_does_not_show_is_missing():
    """The audit judged out of bounds against a taller frame than the camera draws (config.frame_height changed
    without the pixel size): an atom inside the audit's bounds must be in the picture."""
    plan = _plan(expect=((-1.0, 4.6, 1.0, 4.9, "title"),), members=())
    plan["scenes"]["S"]["segments"][0]["bounds"] = [0.0, 0.0, 7.1, 5.0]
    out = judge(plan, "S", 15, 30, {28: _frame(), 29: _frame()})
    assert out["video_consistency"] == "mismatch" and out["video_consistency_detail"]["segments"][0]["missing"] == \
        ["title"]
    plan["scenes"]["S"]["segments"][0]["bounds"] = [0.0, 0.0, 8.0, 4.5]  # the audit's frame is the picture
    assert judge(plan, "S", 15, 30, {28: _frame(), 29: _frame()})["video_consistency"] == "ok"


def test_a_checkpoint_no_frame_shows_is_a_mismatch():
    """The last play was skipped (next_section(skip_animations=True)): the verdict's state is never on screen. A
    skipped play with a shown one after it is checked against the first frame after it."""
    plan = _plan(plays=((1.0, False, False), (1.0, False, True)), play=1)
    assert needed_frames(plan, "S", 15, 15) == []
    out = judge(plan, "S", 15, 15, {13: _frame([(-1, -1, 1, 1)]), 14: _frame([(-1, -1, 1, 1)])})
    assert out["video_consistency"] == "mismatch" and out["video_consistency_detail"]["unshown"] == [0]
    middle = _plan(plays=((1.0, False, False), (1.0, False, True), (1.0, True, False)), play=1)
    assert needed_frames(middle, "S", 15, 30) == [14, 15]
    out = judge(middle, "S", 15, 30, {14: _frame([(-1, -1, 1, 1)]), 15: _frame([(-1, -1, 1, 1)])})
    assert out["video_consistency"] == "ok", out
