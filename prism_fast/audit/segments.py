"""Snapshot log and segment selection (spec spatial_audit.md §4, §5.3, §6). Pure: no Manim.

``SegmentLog`` mirrors the state the authors' AuditScene keeps: the audit log (snapshots appended after
every play/wait whose scene has atoms), the segment list, and the lock that ``remove`` sets. The
``every_checkpoint`` switch is Q-SPATIAL-7 fixed (every snapshot is a segment). It runs in the audit's child
on raw snapshots: the one pick that needs a verdict (the salvage's "last snapshot with an issue") is only
marked here (``salvage``) and made by trusted code (``verdict.py``); snapshots no pick can reach any more drop
their atoms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LOCK_MESSAGE = "\n[动作拦截] 检测到 FadeOut/Remove，锁定 Segment_{k}\n"   # the toolkit's stderr line
SALVAGE_MESSAGE = "\n[兜底分段] segment_snapshots 为空，回退生成 Segment_0\n"


@dataclass
class Snapshot:
    label: str
    out_of_bounds: list
    overlaps: list
    leaks: list

    def has_issue(self) -> bool:
        return bool(self.out_of_bounds or self.overlaps or self.leaks)


@dataclass
class SegmentLog:
    every_checkpoint: bool = False     # Q-SPATIAL-7 fixed
    audit_log: list = field(default_factory=list)
    segments: list = field(default_factory=list)
    locked: bool = False
    salvage: bool = False

    @property
    def taken(self) -> int:
        return len(self.audit_log)

    def kept(self) -> list:
        """The snapshots a pick may name: every segment, the last snapshot, and all of them before the first
        segment exists (the salvage pick scans them)."""
        return [s for s in self.audit_log if s.atoms is not None]

    def _prune(self) -> None:
        if self.every_checkpoint or not self.segments or len(self.audit_log) < 2:
            return
        chosen = {id(s) for s in self.segments}
        for snap in self.audit_log[:-1]:
            if id(snap) not in chosen and snap.atoms is not None:
                snap.drop_payload()

    def next_label(self) -> str:
        return f"Step_{len(self.audit_log)}"

    def on_play_start(self) -> None:
        self.locked = False

    def on_snapshot(self, snap: Snapshot | None) -> None:
        if snap is None:
            return
        self.audit_log.append(snap)
        if self.every_checkpoint:  # Q-SPATIAL-7 fixed: every checkpoint is a segment
            self.segments.append(snap)
        self._prune()

    def on_remove(self, n_args: int) -> str | None:
        """Lock the current snapshot; returns the stderr message the toolkit writes, if any."""
        if self.every_checkpoint:  # Q-SPATIAL-7 fixed: nothing to lock
            return None
        if n_args > 0 and self.audit_log and not self.locked:
            last = self.audit_log[-1]
            if not self.segments or last.label != self.segments[-1].label:
                self.segments.append(last)
                self.locked = True
                self._prune()
                return LOCK_MESSAGE.format(k=len(self.segments) - 1)
        return None

    def on_render_end(self) -> None:
        """After a normal render: the tail snapshot becomes the last segment (unless it already is)."""
        if self.audit_log:
            last = self.audit_log[-1]
            if not self.segments or self.segments[-1].label != last.label:
                self.segments.append(last)

    def finalize(self) -> str | None:
        """Salvage path (no segments, non-empty log): the pick is the last snapshot with an issue, else the last
        one -- marked here (``salvage``), made from the verdicts by ``verdict.segments_of``."""
        if not self.segments and self.audit_log and not self.salvage:
            self.salvage = True
            return SALVAGE_MESSAGE
        return None


def segment_report(segments: list[Snapshot]) -> dict:
    """``{"Segment_i": {"out_of_bounds", "overlaps", "leaks"}}`` in the toolkit's JSON shape."""
    report = {}
    for i, snap in enumerate(segments):
        report[f"Segment_{i}"] = {
            "out_of_bounds": [{"mobject": x["id"], "dist": x["dist"]} for x in snap.out_of_bounds],
            "overlaps": [{"mobjects": x["ids"], "ratio": x["ratio"]} for x in snap.overlaps],
            "leaks": [{"mobject": x["id"], "container": x.get("cont_id", "unknown"), "ratio": x["ratio"]}
                      for x in snap.leaks],
        }
    return report
