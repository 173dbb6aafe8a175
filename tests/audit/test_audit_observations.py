"""audit/observations.py + verdict.py: the child's raw geometry survives the trip to trusted code exactly (floats,
class identity, shared atom objects), the parent's reader refuses anything the recorder never writes, and the
verdict computed from observations is the cascade's on the same atoms (salvage pick included)."""

from __future__ import annotations

import base64
import copy
import json

import numpy as np
import pytest

from prism_fast.audit.cascade import Atom, check_snapshot
from prism_fast.audit.config import AuditConfig
from prism_fast.audit.observations import ObservationError, RawSnapshot, decode, encode_scenes
from prism_fast.audit.polygon import rings_from_members
from prism_fast.audit.segments import SegmentLog, segment_report
from prism_fast.audit.verdict import fill_stand_ins, report_from_observations, segments_of
from prism_fast.profile import IMPROVED, REFERENCE


class Square:  # stand-ins for two distinct classes (class identity is what the cascade compares)
    pass


class Text:
    pass


def _atom(name: str, cls, x0: float, y0: float, w: float, h: float, **kw) -> Atom:
    xy = np.array([[x0, y0], [x0 + w, y0], [x0 + w, y0 + h], [x0, y0 + h]], dtype=np.float64)
    return Atom(id=name, cls_key=cls, cls_name=cls.__name__, xy=xy, **kw)


def _layout(shift: float = 0.0) -> list:
    a = _atom("a", Square, -1.0 + shift, -1.0, 2.0, 2.0, fill=0.5, sw=4.0, sop=1.0, is_vmobject=True)
    b = _atom("b", Square, -0.3 + shift, -0.4, 2.0, 2.0, fill=0.5, sw=4.0, sop=1.0, is_vmobject=True)
    t = _atom("Text", Text, 6.9, 0.0, 1.0 / 3, 0.1 + 1e-13, is_text_like=True, is_item=True,
              children_xy=(np.array([[6.9, 0.0], [7.0, 0.1]]),))
    return [a, b, t, t]  # the reference walk repeats one shared object


def _log(snaps: list, removes_after: tuple = (), render_end: bool = True, every: bool = False) -> SegmentLog:
    log = SegmentLog(every_checkpoint=every)
    for k, atoms in enumerate(snaps):
        log.on_play_start()
        log.on_snapshot(RawSnapshot(log.next_label(), atoms, (64 / 9, 4.0)))
        if k in removes_after:
            log.on_remove(1)
    if render_end:
        log.on_render_end()
    log.finalize()
    return log


def _doc(log: SegmentLog, name: str = "S") -> dict:
    kept = log.kept()
    where = {id(s): k for k, s in enumerate(kept)}
    doc = encode_scenes([(name, kept, [where[id(s)] for s in log.segments], log.salvage, log.taken)])
    return json.loads(json.dumps(doc))  # as it crosses the process boundary


def _expected(snaps_atoms: list, cfg=AuditConfig()) -> dict:
    segs = []
    for label, atoms in snaps_atoms:
        issues = check_snapshot(atoms, cfg, 64 / 9, 4.0)
        from prism_fast.audit.segments import Snapshot

        segs.append(Snapshot(label, issues.out_of_bounds, issues.overlaps, issues.leaks))
    return segment_report(segs)


def test_round_trip_keeps_floats_identity_and_classes():
    atoms = _layout()
    atoms[0].rings = rings_from_members([[atoms[0].xy]])
    doc = _doc(_log([atoms]))
    obs = decode(doc)
    (label, got, lx, ly, center), = obs.scenes[0].snapshots
    assert (label, lx, ly, center) == ("Step_0", 64 / 9, 4.0, None)
    assert got[2] is got[3] and got[0] is not got[1]  # shared objects stay shared, distinct ones distinct
    assert got[0].cls_key == got[1].cls_key != got[2].cls_key
    for a, b in zip(atoms, got):
        assert a.xy.tobytes() == b.xy.tobytes() and a.id == b.id
        assert (a.fill, a.sw, a.sop, a.is_text_like) == (b.fill, b.sw, b.sop, b.is_text_like)
    assert got[2].children_xy[0].tobytes() == atoms[2].children_xy[0].tobytes()
    assert got[0].rings.x0.tobytes() == atoms[0].rings.x0.tobytes()
    assert got[0].rings.member_starts.dtype == np.int64
    # points shared by snapshots are stored once (a, b, Text and its child; the witness's empty drawn table)
    assert len(_doc(_log([_layout()]))["arrays"]) == len(_doc(_log([_layout(), _layout()]))["arrays"]) == 5


def test_verdict_equals_the_cascade_on_the_same_atoms():
    first, second = _layout(), _layout(shift=3.0)
    log = _log([first, second], removes_after=(0,))
    report, engine = report_from_observations(_doc(log), AuditConfig(), REFERENCE)
    assert report == {"S": _expected([("Step_0", first), ("Step_1", second)])}
    assert report["S"]["Segment_0"]["overlaps"] and report["S"]["Segment_0"]["out_of_bounds"]
    assert engine["snapshots"] == 2 and engine["checked"] == 2
    # thresholds are the parent's: the same observations under another setting give that setting's verdict
    loose, _ = report_from_observations(_doc(log), AuditConfig(oob_margin=5.0), REFERENCE)
    assert loose["S"]["Segment_0"]["out_of_bounds"] == [] and loose["S"]["Segment_0"]["overlaps"]


def test_snapshots_no_pick_can_reach_drop_their_atoms():
    log = _log([_layout(), _layout(), _layout(shift=3.0), _layout(shift=0.01)], removes_after=(0,))
    assert [s.label for s in log.kept()] == ["Step_0", "Step_3"]
    assert [s.label for s in log.segments] == ["Step_0", "Step_3"]
    log = _log([_layout(), _layout()], render_end=False)  # no segment yet: the salvage pick may need any of them
    assert [s.label for s in log.kept()] == ["Step_0", "Step_1"] and log.salvage


def test_salvage_pick_is_the_last_snapshot_with_an_issue():
    clean = [_atom("c", Square, 0.0, 0.0, 1.0, 1.0, is_vmobject=True)]
    bad = _layout()
    log = _log([clean, bad, clean, clean], render_end=False)
    per_scene, _ = segments_of(decode(_doc(log)), AuditConfig(), REFERENCE)
    name, snaps, kept = per_scene[0]
    assert kept == [1] and snaps[0].label == "Step_1" and snaps[0].has_issue()
    log = _log([clean, clean], render_end=False)  # none with an issue: the last one
    per_scene, _ = segments_of(decode(_doc(log)), AuditConfig(), REFERENCE)
    assert per_scene[0][2] == [1] and not per_scene[0][1][0].has_issue()


def test_improved_switches_reach_the_cascade():
    layouts = [_layout(), _layout(shift=2.0)]
    log = _log(layouts, every=True)  # every checkpoint is a segment (Q-SPATIAL-7, the child's side)
    imp, _ = report_from_observations(_doc(log), AuditConfig(), IMPROVED)
    from prism_fast.audit.segments import Snapshot

    want = []
    for k, atoms in enumerate(layouts):
        i = check_snapshot(atoms, AuditConfig(), 64 / 9, 4.0, per_component_ids=True, composite_needs_parent=True,
                           filled_lines_not_line_like=True, user_name_keywords=True)
        want.append(Snapshot(f"Step_{k}", i.out_of_bounds, i.overlaps, i.leaks))
    assert imp == {"S": segment_report(want)} and len(imp["S"]) == 2


def _bad(mutate) -> dict:
    doc = _doc(_log([_layout()]))
    mutate(doc)
    return doc


@pytest.mark.parametrize("mutate", [
    lambda d: d.update(version=1),
    lambda d: d["arrays"][0].update(b64="!!!"),
    lambda d: d["arrays"][0].update(b64=base64.b64encode(b"\0" * 7).decode()),
    lambda d: d["arrays"][0].update(shape=[4, 3]),
    lambda d: d["arrays"][0].update(shape=[10 ** 9, 2]),
    lambda d: d["arrays"][0].update(dtype="object"),
    lambda d: d["scenes"][0]["snapshots"][0]["atoms"].append(99),
    lambda d: d["scenes"][0]["snapshots"][0]["table"][0].update(xy=10 ** 6),
    lambda d: d["scenes"][0]["snapshots"][0]["table"][0].update(fill="0.5"),
    lambda d: d["scenes"][0]["snapshots"][0]["table"][0].update(is_item=1),
    lambda d: d["scenes"][0]["snapshots"][0].update(half=[1.0]),
    lambda d: d["scenes"][0].update(segments=[5]),
    lambda d: d["scenes"][0].update(salvage=True),  # salvage with segments: the recorder never writes that
    lambda d: d["scenes"].append(copy.deepcopy(d["scenes"][0])),  # one scene name twice
    lambda d: d.update(scenes={"S": 1}),
    lambda d: d["scenes"][0].update(name="/tmp/x/host"),  # the parent names files after scenes and labels
    lambda d: d["scenes"][0]["snapshots"][0].update(label="../Step_0"),
])
def test_reader_refuses_what_the_recorder_never_writes(mutate):
    with pytest.raises(ObservationError):
        decode(_bad(mutate))


def test_stand_ins_are_filled_with_the_computed_report():
    log = _log([_layout()])
    report, _ = report_from_observations(_doc(log), AuditConfig(), REFERENCE)
    from prism_fast.audit.observations import STAND_IN

    err = "progress\n" + json.dumps({"S": STAND_IN}, indent=2, ensure_ascii=False) + "\n"
    filled = fill_stand_ins(err, report)
    assert filled == "progress\n" + json.dumps(report, indent=2, ensure_ascii=False) + "\n"


def test_ring_starts_past_the_edges_are_refused():
    atoms = _layout()
    atoms[0].rings = rings_from_members([[atoms[0].xy]])
    doc = _doc(_log([atoms]))
    rec = doc["scenes"][0]["snapshots"][0]["table"][0]
    n = len(decode(doc).scenes[0].snapshots[0][1][0].rings.x0)
    doc["arrays"][rec["rings"][4]].update(b64=base64.b64encode(np.array([n], "<i8").tobytes()).decode())
    with pytest.raises(ObservationError):
        decode(doc)


def _repeated(n: int) -> dict:
    """A forged snapshot that repeats one atom ``n`` times: a few bytes, a quadratic cascade."""
    doc = _doc(_log([_layout()[:1]]))
    doc["scenes"][0]["snapshots"][0]["atoms"] = [0] * n
    return doc


def test_a_long_cascade_runs_apart_and_is_bounded(monkeypatch):
    from prism_fast.audit import verdict

    doc = _doc(_log([_layout(), _layout(shift=3.0)], removes_after=(0,)))
    inline = verdict.verdict_bounded(doc, AuditConfig(), REFERENCE, 60.0)
    monkeypatch.setattr(verdict, "INLINE_PAIRS", 0)  # every document in a process of its own
    apart = verdict.verdict_bounded(doc, AuditConfig(), REFERENCE, 120.0)
    assert apart[:2] == inline[:2] and [s[2] for s in apart[2]] == [s[2] for s in inline[2]]
    assert verdict.pair_work(decode(_repeated(3000))) == 3000 ** 2
    with pytest.raises(verdict.VerdictTimeout):
        verdict.verdict_bounded(_repeated(3000), AuditConfig(), REFERENCE, 1.0)


def test_the_witness_fields_round_trip_and_bad_ones_are_refused():
    """The video witness's data (audit/witness.py): plays, and per snapshot its play, camera, background and drawn
    table whose owners index the snapshot's atom table; anything else is refused like a bad atom."""
    atoms = _layout()
    log = SegmentLog()
    snap = RawSnapshot(log.next_label(), atoms, (64 / 9, 4.0), play=1, camera=(0.5, 0.0, 14.0, 8.0),
                       background=(1.0, 1.0, 1.0),
                       drawn=[((-1.0, -1.0, 1.0, 1.0, 0.0, 4.0, 1, 0, 0, 1, 0, 0, 0, 0), atoms[1]),
                              ((2.0, 2.0, 3.0, 3.0, 2.0, 0.0, 0, 0, 0, 0, 1, 1, 1, 0), None)])
    log.on_snapshot(snap)
    log.on_render_end()
    doc = encode_scenes([("S", log.kept(), [0], False, 1, [(0.5, False, False, -1.0), (1.0, True, False, 0.4)])])
    scene = decode(doc).scenes[0]
    assert scene.plays == [(0.5, False, False, -1.0), (1.0, True, False, 0.4)]
    w = scene.witness[0]
    assert (w.play, w.camera, w.background) == (1, (0.5, 0.0, 14.0, 8.0), (1.0, 1.0, 1.0))
    assert w.drawn.shape == (2, 15) and w.drawn[:, -1].tolist() == [1.0, -1.0]

    def broken(change) -> dict:
        bad = json.loads(json.dumps(doc))
        change(bad)
        return bad

    for change in (lambda d: d["scenes"][0]["snapshots"][0]["witness"].update(play=2),  # past the last play
                   lambda d: d["scenes"][0]["snapshots"][0]["witness"].update(camera=[0, 0, 0, 8]),
                   lambda d: d["scenes"][0]["snapshots"][0]["witness"].update(background=[2, 0, 0]),
                   lambda d: d["scenes"][0].update(plays=[[-1.0, False, False, -1.0], [1.0, True, False, -1.0]]),
                   lambda d: d["scenes"][0].update(plays=[[1.0, False, False], [1.0, True, False]]),
                   lambda d: d["scenes"][0].update(plays="x"),
                   lambda d: d["scenes"][0]["snapshots"][0].pop("witness")):
        with pytest.raises(ObservationError):
            decode(broken(change))
    owners = np.array([[0.0] * 14 + [99.0]])  # an owner outside the atom table
    bad = broken(lambda d: None)
    bad["arrays"].append({"dtype": "<f8", "shape": [1, 15], "b64": base64.b64encode(owners.tobytes()).decode()})
    bad["scenes"][0]["snapshots"][0]["witness"]["drawn"] = len(bad["arrays"]) - 1
    with pytest.raises(ObservationError, match="drawn owners"):
        decode(bad)
