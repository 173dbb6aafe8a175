"""Segment selection (spec §4, §5.3, §6), on the pure SegmentLog."""

from prism_fast.audit.segments import SegmentLog, Snapshot, segment_report


def snap(label, issue=False):
    return Snapshot(label, [{"id": "x", "dist": 1.0}] if issue else [], [], [])


def play(log, issue=False):
    log.on_play_start()
    log.on_snapshot(snap(log.next_label(), issue))


def test_fadeout_locks_previous_snapshot_then_tail():
    log = SegmentLog()
    play(log)              # Step_0
    play(log, issue=True)  # Step_1
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


def test_salvage_takes_last_snapshot_with_issue():
    log = SegmentLog()
    play(log, issue=True)
    play(log)
    assert log.finalize() is not None
    assert [s.label for s in log.segments] == ["Step_0"]
    log2 = SegmentLog()
    play(log2)
    play(log2)
    log2.finalize()
    assert [s.label for s in log2.segments] == ["Step_1"]


def test_every_checkpoint_switch_q_spatial_7():
    log = SegmentLog(every_checkpoint=True)
    play(log)
    play(log)
    log.on_remove(1)
    log.on_render_end()
    assert [s.label for s in log.segments] == ["Step_0", "Step_1"]
