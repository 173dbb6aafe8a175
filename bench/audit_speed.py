"""The separate audit (audit-only fast path), before vs after a change: CPU-seconds per audit and byte-identity of
everything the audit row is built from, on the same scripts, in one run (issue #19 deliverable 3).

    .venv/bin/python -m bench.audit_speed --before REV_OR_DIR [--after DIR]
        (--bundled [ID ...] | --scripts DIR [--ids ID ...] [--limit N]) [--needs-separate]
        [--modes before,after,after+prefork] [--timeout 900] [--out audit_speed.json]

``--before``: a git revision of this repository (its ``prism_fast/`` is extracted with ``git archive`` into a
temp dir) or a directory holding a ``prism_fast/`` package; ``--after``: default this checkout. For every script
both trees run the audit child the pipeline's separate audit runs (``python -m prism_fast.audit.child``, reference
profile, ``AuditConfig()`` defaults, ``AUDIT_SAVE_IMAGES=0``) as a plain subprocess (no sandbox: the sandbox adds
the same cost to both sides), alternating which side goes first. CPU = user + system seconds of that process and
every process it reaped (LaTeX, dvisvgm), from ``os.wait4``. Identity: ``audit_report.json`` bytes, the exit
status, the row's error line (``rows.error_from_stderr``) and stderr (less manim's progress bars, which carry
timings) must be equal.

``--needs-separate`` keeps only scripts the one-pass rule sends to the separate audit statically
(``onepass.static_reasons``), i.e. the scripts that still pay for it. Exit status 1 when anything differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def extract_tree(before: str, dest: Path) -> Path:
    """A directory with ``prism_fast/`` for ``before`` (a directory as is, else a git revision of ROOT)."""
    if Path(before).is_dir():
        if not (Path(before) / "prism_fast").is_dir():
            raise SystemExit(f"--before {before}: no prism_fast/ package in it")
        return Path(before).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", before, "prism_fast"], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"--before {before}: git archive failed: {archive.stderr.decode(errors='replace')}")
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


# A minimal fork server per tree, like the pipeline's audit zygote (execute/worker.py, ``audit.prefork``): manim,
# the audit modules and the profile's set-up imported once; one forked child per audit. Protocol: one JSON request
# per stdin line -> one JSON reply per stdout line with the forked child's own rusage (os.wait4).
_ZYGOTE = r"""
import json, os, sys
from prism_fast.audit.child import fork_entry
main = fork_entry("")
out = os.fdopen(os.dup(1), "w")
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.chdir(req["cwd"])
            os.environ.update(req["env"])
            fd = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 2)
            sys.argv = req["argv"]
            code = 0
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:
                import traceback
                traceback.print_exc()
                code = 1
            sys.stdout.flush(); sys.stderr.flush()
        finally:
            os._exit(locals().get("code", 1))
    _, status, ru = os.wait4(pid, 0)
    out.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status), "cpu_s": ru.ru_utime + ru.ru_stime}) + "\n")
    out.flush()
"""


class Zygote:
    def __init__(self, tree: Path, scratch_root: Path):
        env = _base_env(tree, scratch_root)
        scratch_root.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, "-c", _ZYGOTE], cwd=str(scratch_root), env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, argv: list[str], cwd: Path, env: dict, stderr: Path) -> tuple[int, float]:
        self.proc.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd), "env": env, "stderr": str(stderr)}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        return reply["returncode"], reply["cpu_s"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def _base_env(tree: Path, scratch: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(PYTHONPATH=str(tree), AUDIT_SAVE_IMAGES="0", TMPDIR=str(scratch / "tmp"), TEMP=str(scratch / "tmp"),
               TMP=str(scratch / "tmp"), MPLCONFIGDIR=str(scratch / "mpl"), HOME=str(scratch),
               PRISM_AUDIT_TMP_ROOT=str(scratch / "auditor"))
    return env


def run_child(tree: Path, script: Path, scratch: Path, timeout: float, zygote: Zygote | None = None) -> dict:
    """One audit child from ``tree``; its report bytes, stderr and the CPU of its process tree."""
    if scratch.exists():
        shutil.rmtree(scratch)
    (scratch / "tmp").mkdir(parents=True)
    local = scratch / script.name
    shutil.copyfile(script, local)
    env = _base_env(tree, scratch)
    # a tree whose child writes raw observations computes its report in a trusted step of its own (verdict.py)
    observes = "--observations-out" in (tree / "prism_fast" / "audit" / "child.py").read_text(encoding="utf-8")
    out_flag, out_name = ("--observations-out", "obs.json") if observes else ("--json-out", "report.json")
    cmd = [sys.executable, "-m", "prism_fast.audit.child", str(local), out_flag, str(scratch / out_name),
           "--output-dir", str(scratch / "out"), "--meta-out", str(scratch / "meta.json"), "--config", "{}"]
    t0 = time.perf_counter()
    timed_out = False
    if zygote is not None:  # the forked child's own CPU (the zygote's imports are paid once per run)
        keep = ("TMPDIR", "TEMP", "TMP", "PRISM_AUDIT_TMP_ROOT", "HOME", "AUDIT_SAVE_IMAGES")
        rc, cpu = zygote.run(cmd, scratch, {k: env[k] for k in keep}, scratch / "stderr.txt")
    else:
        with open(scratch / "stderr.txt", "wb") as err:
            proc = subprocess.Popen(cmd, cwd=str(scratch), env=env, stdout=subprocess.DEVNULL, stderr=err,
                                    start_new_session=True)
            deadline = t0 + timeout
            while True:
                pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.perf_counter() > deadline:
                    timed_out = True
                    os.killpg(proc.pid, 9)
                    pid, status, ru = os.wait4(proc.pid, 0)
                    break
                time.sleep(0.02)
        rc, cpu = os.waitstatus_to_exitcode(status), ru.ru_utime + ru.ru_stime
    wall = time.perf_counter() - t0
    report = scratch / "report.json"
    if observes and (scratch / "obs.json").exists():  # the report, and the stderr as the audit.log shows it
        subprocess.run([sys.executable, "-c", "import json, sys, pathlib as p; from prism_fast.audit import verdict; "
                        "verdict.report_file(sys.argv[1], sys.argv[2]); e = p.Path(sys.argv[3]); "
                        "e.write_text(verdict.fill_stand_ins(e.read_text(errors='replace'), "
                        "json.loads(p.Path(sys.argv[2]).read_text())))",
                        str(scratch / "obs.json"), str(report), str(scratch / "stderr.txt")],
                       env={**env, "PYTHONPATH": str(tree)}, check=True)
    stderr = (scratch / "stderr.txt").read_text(encoding="utf-8", errors="replace")
    meta = json.loads((scratch / "meta.json").read_text()) if (scratch / "meta.json").exists() else {}
    from prism_fast.audit.rows import error_from_stderr

    return {"cpu_s": cpu, "wall_s": wall, "returncode": rc,
            "timed_out": timed_out, "report": report.read_bytes() if report.exists() else None,
            "stderr": stderr, "error_line": error_from_stderr(stderr), "stepping": meta.get("stepping")}


_PROGRESS = re.compile(r"\d+/\d+ \[[\d:<?]+, *[\d.?]+ *(?:it/s|s/it)\]")


def _stable(stderr: str) -> list[str]:
    """stderr without manim's progress bars (tqdm lines carry timings) and blank lines."""
    return [line for line in re.split(r"[\r\n]", stderr) if line.strip() and not _PROGRESS.search(line)]


def select(args) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    if args.bundled is not None:
        from prism_fast.dataset.bundled import bundled_dataset_path
        from prism_fast.dataset.loader import load_dataset

        src = Path(tempfile.mkdtemp(prefix="audit_speed_bundled_"))
        wanted = set(args.bundled)
        for t in load_dataset(bundled_dataset_path()).tasks:
            if not wanted or t.id in wanted:
                (src / f"{t.id}.py").write_text(t.reference_answer, encoding="utf-8")
                out.append((t.id, src / f"{t.id}.py"))
    if args.scripts is not None:
        from bench.parity import select_scripts

        for sid in select_scripts(args.scripts, None, args.ids):
            out.append((sid, args.scripts / f"{sid}.py"))
    if args.needs_separate:
        from prism_fast.audit.onepass import static_reasons

        out = [(sid, p) for sid, p in out if static_reasons(p.read_text(encoding="utf-8"))]
    if args.skip:
        out = [(sid, p) for sid, p in out if sid not in set(args.skip)]
    return out[:args.limit] if args.limit else out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="git revision or directory with prism_fast/")
    ap.add_argument("--after", type=Path, default=ROOT, help="directory with prism_fast/ (default: this checkout)")
    ap.add_argument("--bundled", nargs="*", default=None, help="bundled reference answers (all, or these ids)")
    ap.add_argument("--scripts", type=Path, default=None, help="directory of <id>.py (+ optional manifest.jsonl)")
    ap.add_argument("--ids", nargs="*", default=None, help="with --scripts: only these ids")
    ap.add_argument("--skip", nargs="*", default=None, help="leave these ids out")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--needs-separate", action="store_true",
                    help="only scripts the one-pass rule sends to the separate audit (static reasons)")
    ap.add_argument("--modes", default="before,after",
                    help="comma list, the first is the reference for identity and ratios: before, after, "
                         "before+prefork, after+prefork (+prefork: forked from a zygote, as audit.prefork=true)")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.bundled is None and args.scripts is None:
        ap.error("give --bundled and/or --scripts")
    chosen = select(args)
    if not chosen:
        ap.error("no scripts selected")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m.split("+")[0] not in ("before", "after") or m.split("+")[1:] not in ([], ["prefork"])]
    if bad or len(modes) < 2:
        ap.error(f"--modes: two or more of before, after, before+prefork, after+prefork (got {args.modes!r})")
    tmp = Path(tempfile.mkdtemp(prefix="audit_speed_"))
    trees = {"before": extract_tree(args.before, tmp / "before_tree"), "after": args.after.resolve()}
    zygotes = {m: Zygote(trees[m.split("+")[0]], tmp / f"zygote_{k}") for k, m in enumerate(modes) if "+" in m}
    load_before = os.getloadavg()
    results = []
    base = modes[0]
    try:
        for k, (sid, path) in enumerate(chosen):
            order = modes if k % 2 == 0 else modes[::-1]  # alternate who goes first
            rec = {"id": sid}
            runs = {}
            for mode in order:
                runs[mode] = run_child(trees[mode.split("+")[0]], path, tmp / "scratch", args.timeout,
                                       zygotes.get(mode))
                rec[f"{mode}_cpu_s"] = round(runs[mode]["cpu_s"], 2)
                rec[f"{mode}_wall_s"] = round(runs[mode]["wall_s"], 2)
            b = runs[base]
            rec["identical"] = True
            for mode in modes[1:]:
                a = runs[mode]
                same = {"report": b["report"] == a["report"], "returncode": b["returncode"] == a["returncode"],
                        "error_line": b["error_line"] == a["error_line"],
                        "stderr": _stable(b["stderr"]) == _stable(a["stderr"])}
                rec[f"{mode}_same"] = same
                rec["identical"] = rec["identical"] and all(same.values())
                if not same["stderr"]:
                    bl, al = _stable(b["stderr"]), _stable(a["stderr"])
                    i = next((j for j in range(min(len(bl), len(al))) if bl[j] != al[j]), min(len(bl), len(al)))
                    rec[f"{mode}_stderr_first_difference"] = {"line": i, "base": bl[i:i + 3], "this": al[i:i + 3]}
                rec[f"{mode}_ratio"] = round(b["cpu_s"] / a["cpu_s"], 2) if a["cpu_s"] else None
                rec[f"{mode}_stepping"] = a["stepping"]
            rec["report_sha256"] = hashlib.sha256(b["report"]).hexdigest()[:16] if b["report"] else None
            rec["returncode"] = b["returncode"]
            rec["timed_out"] = any(r["timed_out"] for r in runs.values())
            results.append(rec)
            cells = "  ".join(f"{m} {runs[m]['cpu_s']:7.2f}"
                              + (f" ({rec[f'{m}_ratio'] or 0:4.2f}x)" if m != base else "") for m in modes)
            diff = [f"{m}:{','.join(k2 for k2, v in rec[f'{m}_same'].items() if not v)}" for m in modes[1:]
                    if not all(rec[f"{m}_same"].values())]
            print(f"{sid:42s} CPU-s {cells}  {'identical' if rec['identical'] else 'DIFFERENT ' + ' '.join(diff)}"
                  f"  rc={b['returncode']}", flush=True)
    finally:
        for z in zygotes.values():
            z.close()
        shutil.rmtree(tmp, ignore_errors=True)
    totals = {m: round(sum(r[f"{m}_cpu_s"] for r in results), 1) for m in modes}
    summary = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "python": platform.python_version(),
               "before": args.before, "modes": modes, "scripts": len(results),
               "identical": sum(r["identical"] for r in results),
               "cpu_s_total": totals,
               "ratio_total": {m: round(totals[base] / totals[m], 2) if totals[m] else None for m in modes[1:]},
               "load_before": load_before, "load_after": os.getloadavg()}
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({**summary, "details": results}, indent=1), encoding="utf-8")
    return 0 if summary["identical"] == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
