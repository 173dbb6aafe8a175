"""Segment selection (spec §4, §5.3, §6), on the pure SegmentLog."""

from prism_fast.audit.observations import RawSnapshot
from prism_fast.audit.segments import SegmentLog, segment_report


def snap(label):
    return RawSnapshot(label, [], (64 / 9, 4.0))  # (the log picks by position, never by verdict)


def play(log):
    log.on_play_start()
    log.on_snapshot(snap(log.next_label()))


def test_fadeout_locks_previous_snapshot_then_tail():
    log = SegmentLog()
    play(log)              # Step_0
    play(log)  # Step_1
    log.on_play_start()
    assert log.on_remove(1) is not None            # FadeOut clean-up locks Step_1
    log.on_snapshot(snap(log.next_label()))        # Step_2 (after the FadeOut)
    assert log.on_remove(1) is None                # a second remove without a play locks nothing
    log.on_render_end()
    assert [s.label for s in log.segments] == ["Step_1", "Step_2"]


def test_first_play_fadeout_locks_nothing_and_no_play_gives_no_segment():
    log = SegmentLog()
    log.on_play_start()
    assert log.on_remove(1) is None  # empty log
    log.on_render_end()
    assert log.segments == []
    assert segment_report(log.segments) == {}


def test_salvage_is_marked_for_the_verdict_to_pick():
    """The pick (the last snapshot with an issue) needs verdicts: the log only marks it; verdict.segments_of makes
    it (tests/audit/test_audit_observations.py)."""
    log = SegmentLog()
    play(log)
    play(log)
    assert log.finalize() is not None and log.salvage
    assert log.segments == [] and [s.label for s in log.kept()] == ["Step_0", "Step_1"]
    assert log.finalize() is None  # (a second salvage of the same scene prints nothing)
    log2 = SegmentLog()
    play(log2)
    log2.on_render_end()
    assert log2.finalize() is None and not log2.salvage


def test_every_checkpoint_switch_q_spatial_7():
    log = SegmentLog(every_checkpoint=True)
    play(log)
    play(log)
    log.on_remove(1)
    log.on_render_end()
    assert [s.label for s in log.segments] == ["Step_0", "Step_1"]
