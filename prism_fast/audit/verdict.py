"""The Spatial verdict from raw observations, in trusted code (docs/security.md "Verdict outside the script's
process"). Pure: no Manim; never runs in a process that runs a script.

:func:`report_from_observations` turns the child's observations document (``observations.decode``) into the
toolkit's per-segment report: the cascade (``cascade.check_snapshot``) on every segment the child's segment log
picked, and the salvage pick (the last snapshot with an issue, else the last) where the log had no segment.
"""

from __future__ import annotations

import json

from prism_fast.audit.cascade import check_snapshot
from prism_fast.audit.config import AuditConfig
from prism_fast.audit.observations import STAND_IN, Observations, decode
from prism_fast.audit.segments import Snapshot, segment_report


class _Totals:
    def __init__(self):
        self.snapshots = 0
        self.checked = 0
        self.atoms_max = 0
        self.tests = 0
        self.backends: set = set()
        self.matplotlib_polygons = 0

    def add(self, stats, n_atoms: int) -> None:
        self.checked += 1
        self.atoms_max = max(self.atoms_max, n_atoms)
        if stats is not None:
            self.tests += stats.tests
            self.backends.add(stats.backend)
            self.matplotlib_polygons += stats.matplotlib_polygons

    def as_dict(self) -> dict:
        return {"snapshots": self.snapshots, "checked": self.checked, "atoms_max": self.atoms_max,
                "point_edge_tests": self.tests, "backends": sorted(self.backends),
                "matplotlib_polygons": self.matplotlib_polygons}


def _check(snap: tuple, cfg: AuditConfig, profile, totals: _Totals) -> Snapshot:
    label, atoms, lx, ly, center = snap
    issues = check_snapshot(atoms, cfg, lx, ly, center=center, per_component_ids=profile.fixes("Q-SPATIAL-14"),
                            composite_needs_parent=profile.fixes("Q-SPATIAL-18"),
                            filled_lines_not_line_like=profile.fixes("Q-SPATIAL-16"),
                            user_name_keywords=profile.fixes("Q-SPATIAL-17"))
    totals.add(issues.stats, len(atoms))
    return Snapshot(label, issues.out_of_bounds, issues.overlaps, issues.leaks)


def segments_of(obs: Observations, cfg: AuditConfig, profile) -> tuple[list, dict]:
    """``([(scene name, [Snapshot with issues], [kept index of each segment])], engine totals)``."""
    totals = _Totals()
    out = []
    for scene in obs.scenes:
        totals.snapshots += scene.taken
        if scene.salvage:  # segments.SegmentLog.finalize: the last snapshot with an issue, else the last one
            pick = last = None
            for k in range(len(scene.snapshots) - 1, -1, -1):
                snap = _check(scene.snapshots[k], cfg, profile, totals)
                last = last or (snap, k)
                if snap.has_issue():
                    pick = (snap, k)
                    break
            pick = pick or last
            out.append((scene.name, [pick[0]], [pick[1]]))
            continue
        cache: dict = {}
        snaps = []
        for k in scene.segments:
            if k not in cache:
                cache[k] = _check(scene.snapshots[k], cfg, profile, totals)
            snaps.append(cache[k])
        out.append((scene.name, snaps, list(scene.segments)))
    return out, totals.as_dict()


def verdict_of(doc, cfg: AuditConfig, profile) -> tuple[dict, dict, list]:
    """``(report, engine totals, per-scene segments)``: the toolkit's ``{scene: {"Segment_i": ...}}`` computed
    here from the child's raw observations (raises ``observations.ObservationError`` on a malformed document)."""
    return _verdict_from(decode(doc), cfg, profile)


class VerdictTimeout(Exception):
    """The cascade on these observations did not finish in the audit's time."""


# pairs of atom references in the snapshots a verdict checks up to which it runs in the caller's process (about
# 1000 atoms in one snapshot, a few seconds); beyond, in a process of its own under the audit's remaining time
INLINE_PAIRS = 1_000_000


def pair_work(obs: Observations) -> int:
    """What the cascade on ``obs`` costs at most, in pairs of atom references (every snapshot a pick may check)."""
    total = 0
    for scene in obs.scenes:
        idx = range(len(scene.snapshots)) if scene.salvage else set(scene.segments)
        total += sum(len(scene.snapshots[k][1]) ** 2 for k in idx)
    return total


def verdict_bounded(doc, cfg: AuditConfig, profile, timeout_s: float) -> tuple[dict, dict, list]:
    """:func:`verdict_of` whose cost is bounded: a document whose cascade may be long (an honest scene of thousands
    of atoms, or a forged one that repeats an atom) is judged in a spawned process killed after ``timeout_s``
    (:class:`VerdictTimeout`), so that no document holds the trusted caller longer than its audit could run."""
    obs = decode(doc)
    if pair_work(obs) <= INLINE_PAIRS:
        return _verdict_from(obs, cfg, profile)
    import multiprocessing as mp

    ctx = mp.get_context("spawn")  # (no fork of a threaded Ray worker)
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_verdict_worker, args=(doc, cfg.to_dict(), profile, send), daemon=True)
    proc.start()
    send.close()
    try:
        if not recv.poll(timeout_s):
            raise VerdictTimeout(f"cascade over {timeout_s:g} s")
        ok, value = recv.recv()
    except EOFError:
        ok, value = False, "the verdict process ended without a result"
    finally:
        proc.kill()
        proc.join()
        recv.close()
    if not ok:
        raise RuntimeError(value)
    return value


def _verdict_worker(doc, cfg_dict: dict, profile, conn) -> None:
    try:
        conn.send((True, _verdict_from(decode(doc), AuditConfig.from_dict(cfg_dict), profile)))
    except Exception as exc:  # noqa: BLE001 - reported to the caller
        conn.send((False, f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _verdict_from(obs: Observations, cfg: AuditConfig, profile) -> tuple[dict, dict, list]:
    per_scene, engine = segments_of(obs, cfg, profile)
    return {name: segment_report(snaps) for name, snaps, _ in per_scene}, engine, per_scene


def report_from_observations(doc, cfg: AuditConfig, profile) -> tuple[dict, dict]:
    """``(report, engine totals)`` (:func:`verdict_of`)."""
    report, engine, _ = verdict_of(doc, cfg, profile)
    return report, engine


def report_text(report: dict) -> str:
    """``audit_report.json`` as the toolkit writes it."""
    return json.dumps(report, indent=2, ensure_ascii=False)


def report_file(obs_path, report_path, cfg: AuditConfig | None = None, profile=None) -> bool:
    """Compute ``report_path`` from an observations file (tools and tests that run the child directly);
    False when there is no observations file."""
    from pathlib import Path

    from prism_fast.profile import REFERENCE

    obs_path = Path(obs_path)
    if not obs_path.exists():
        return False
    report, _ = report_from_observations(json.loads(obs_path.read_text(encoding="utf-8")), cfg or AuditConfig(),
                                         profile or REFERENCE)
    Path(report_path).write_text(report_text(report), encoding="utf-8")
    return True


def fill_stand_ins(text: str, report: dict) -> str:
    """The child's stderr with each scene's stand-in replaced by the report JSON the toolkit prints there."""
    for name, value in report.items():
        stand_in = json.dumps({name: STAND_IN}, indent=2, ensure_ascii=False)
        if stand_in in text:
            text = text.replace(stand_in, json.dumps({name: value}, indent=2, ensure_ascii=False))
    return text


__all__ = ["INLINE_PAIRS", "VerdictTimeout", "fill_stand_ins", "pair_work", "report_file", "report_from_observations",
           "report_text", "segments_of", "verdict_bounded", "verdict_of"]
