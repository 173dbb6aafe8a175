"""The video witness on scripts nobody here wrote: how often it says ``ok`` / ``mismatch`` / ``not_checked`` on honest
scripts, and what it costs beside the whole evaluation (docs/security.md "The video witness").

    nice -n 10 .venv/bin/python bench/witness_corpus.py --scripts DIR --work DIR [--workers 2] [--limit N]

``--scripts``: ``<id>.py`` files (e.g. the open corpus of ``bench/corpus.py``, or the bundled answers). They run as
a dataset's reference answers through ``eval`` (``model=reference lang=en``, PADVC and TextExpand off), the same
path as ``bench/parity.py``'s own side. Then, for every audited sample with a plan and a video, the witness runs
again on its own with this checkout's code, its decode of the frames it reads and its judgement timed apart: in the
run the render worker's TD decode keeps those frames, so the judgement is what the witness adds there. Prints the
counts (now and in the run), every mismatch with its figures, and the times against the run's wall time; writes
``<work>/witness.json``. ``--skip-run`` judges again what ``<work>`` holds.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PROMPT_STUB = "(reference answer of a public script)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scripts", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--ids", nargs="*", default=None)
    ap.add_argument("--skip-run", action="store_true", help="judge again what <work> holds (no eval)")
    args = ap.parse_args()

    from hydra import compose, initialize_config_module

    from prism_fast.audit.witness import read_plan
    from prism_fast.pipeline.options import model_output_dir
    from prism_fast.pipeline.run import options_from_config, run_eval
    from prism_fast.store import ResultsStore
    from prism_fast.video.decode import probe_video
    from prism_fast.video.scan import read_frames_at
    from prism_fast.video.witness import judge, needed_frames

    ids = sorted(p.stem for p in args.scripts.glob("*.py"))
    if args.ids:
        ids = [i for i in ids if i in set(args.ids)]
    ids = ids[: args.limit] if args.limit else ids
    record_path = args.work / "witness.json"
    dataset = args.work / "dataset.jsonl"
    if not args.skip_run:
        shutil.rmtree(args.work, ignore_errors=True)
        args.work.mkdir(parents=True)
        with dataset.open("w", encoding="utf-8") as fh:
            for sid in ids:
                fh.write(json.dumps({"id": sid, "language": "en", "instruction": PROMPT_STUB,
                                     "reference_answer": (args.scripts / f"{sid}.py").read_text(encoding="utf-8")})
                         + "\n")
    overrides = [f"dataset.path={dataset}", "model=reference", "lang=en", f"runs_root={args.work / 'runs'}",
                 f"cluster.num_cpus={args.workers}", "metrics.padvc.enabled=false", "metrics.text_expand.enabled=false"]
    with initialize_config_module(config_module="prism_fast.conf", version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    opts = options_from_config(cfg)
    if args.skip_run:
        wall = json.loads(record_path.read_text(encoding="utf-8"))["wall_s"]
    else:
        t0 = time.perf_counter()
        run_eval(opts)
        wall = time.perf_counter() - t0
    store = ResultsStore(opts.run_dir)
    execs = {r["id"]: r for r in store.read("exec").to_pylist()}
    audits = {r["id"]: r for r in store.read("audit").to_pylist()}
    in_run = collections.Counter(str(r.get("video_consistency")) for r in audits.values())
    # the witness again, on its own, with this checkout's code: its decode and its judgement timed apart
    now, mismatches = collections.Counter(), {}
    decode_s = judge_s = 0.0
    timed = 0
    audit_root = model_output_dir(opts) / "audit" / "audits"
    for sid, au in sorted(audits.items()):
        ex = execs.get(sid) or {}
        plan = read_plan(audit_root / sid)
        video = ex.get("video_path") if ex.get("success") else None
        if plan is None or not video:
            now[str(au.get("video_consistency"))] += 1  # not_checked in the run: nothing to time
            continue
        probe = probe_video(video)
        fps, n = float(probe.fps or 0.0), int(probe.container_frame_count or 0)
        t = time.perf_counter()
        frames = read_frames_at(video, needed_frames(plan, ex.get("scene_class"), fps, n))
        t1 = time.perf_counter()
        out = judge(plan, ex.get("scene_class"), fps, n, frames)
        t2 = time.perf_counter()
        decode_s, judge_s, timed = decode_s + (t1 - t), judge_s + (t2 - t1), timed + 1
        now[out["video_consistency"]] += 1
        if out["video_consistency"] == "mismatch":
            mismatches[sid] = out["video_consistency_detail"]
    record = {"scripts": len(ids), "wall_s": round(wall, 2), "counts_in_run": dict(in_run), "counts": dict(now),
              "mismatches": mismatches, "witness_timed": timed, "decode_s": round(decode_s, 3),
              "judge_s": round(judge_s, 3),
              "judge_share_of_wall": round(judge_s / args.workers / wall, 4) if wall else None,
              "standalone_share_of_wall": round((decode_s + judge_s) / args.workers / wall, 4) if wall else None,
              "exec_success": sum(1 for r in execs.values() if r.get("success"))}
    record_path.write_text(json.dumps(record, indent=2, default=str), encoding="utf-8")
    print(f"{len(ids)} scripts, eval wall {wall:.1f} s at {args.workers} workers, Exec success {record['exec_success']}")
    for k in sorted(set(now) | set(in_run)):
        print(f"  video_consistency {k}: {now.get(k, 0)} (in the run: {in_run.get(k, 0)})")
    for sid, detail in mismatches.items():
        print(f"  mismatch {sid}: {json.dumps(detail)[:300]}")
    print(f"witness over {timed} videos: its own decode {decode_s:.2f} s, judgement {judge_s:.2f} s (worker-seconds); "
          f"judgement = {record['judge_share_of_wall']:.2%} of the wall time (what it adds where it reads the TD "
          f"decode's frames), with its own decode {record['standalone_share_of_wall']:.2%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
