"""Where a run's CPU goes, every process counted: run one command under Linux process accounting (``acct(2)``) and
print the CPU-seconds per command name, and per (command, parent's command), of every process that exited meanwhile
-- the short-lived ones too (``latex``, ``dvisvgm``, forked render children), which a sampler of ``/proc`` misses.

    sudo .venv/bin/python -m bench.cpu_accounting [--out acct.json] [--top 30] -- COMMAND [ARG ...]

e.g. ``-- .venv/bin/prism-fast eval dataset.path=CORPUS_JSONL model=reference cluster.num_cpus=2
metrics.padvc.enabled=false``. Needs root and the ``accton`` tool (Debian: ``apt-get install acct``); it turns
accounting on into a temporary file for the command's duration only. Other processes that exit meanwhile are
counted too: keep the machine otherwise idle. A process's CPU is recorded by the kernel in 1/100 s ticks
(truncated), and its command name is the last 15 characters the process or its last thread set (Ray's workers:
``ray::RenderActo``; the driver often shows as its last exiting thread, e.g. ``grpc_global_tim``). Not a test.
"""

from __future__ import annotations

import argparse
import collections
import json
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RECORD = struct.Struct("<BBHIIIIIIf8H16s")  # struct acct_v3 (linux/acct.h), 64 bytes
AHZ = 100.0


def _comp_t(value: int) -> int:
    """A ``comp_t``: 13-bit mantissa, 3-bit base-8 exponent."""
    return (value & 0x1FFF) << (3 * ((value >> 13) & 7))


def read_pacct(path: Path) -> list[dict]:
    data = path.read_bytes()
    out = []
    for off in range(0, len(data) - RECORD.size + 1, RECORD.size):
        (flag, version, _tty, exitcode, _uid, _gid, pid, ppid, btime, etime, utime, stime, *_rest,
         comm) = RECORD.unpack_from(data, off)
        if version & 0x0F != 3:
            continue
        out.append({"pid": pid, "ppid": ppid, "comm": comm.split(b"\0")[0].decode("utf-8", "replace"),
                    "cpu_s": (_comp_t(utime) + _comp_t(stime)) / AHZ, "elapsed_s": etime / AHZ,
                    "start": btime, "exitcode": exitcode, "flag": flag})
    return out


def summarise(records: list[dict], top: int) -> dict:
    by_comm: dict = collections.defaultdict(lambda: [0, 0.0])
    by_pair: dict = collections.defaultdict(lambda: [0, 0.0])
    comm_of = {r["pid"]: r["comm"] for r in records}
    for r in records:
        by_comm[r["comm"]][0] += 1
        by_comm[r["comm"]][1] += r["cpu_s"]
        pair = f"{r['comm']} <- {comm_of.get(r['ppid'], '?')}"
        by_pair[pair][0] += 1
        by_pair[pair][1] += r["cpu_s"]

    def rank(table):
        return [{"name": k, "processes": n, "cpu_s": round(c, 2)}
                for k, (n, c) in sorted(table.items(), key=lambda kv: -kv[1][1])[:top]]

    return {"processes": len(records), "cpu_s": round(sum(r["cpu_s"] for r in records), 2),
            "by_command": rank(by_comm), "by_command_and_parent": rank(by_pair)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the summary (and the raw records) as JSON here")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no command (give it after --)")
    with tempfile.TemporaryDirectory(prefix="cpu_accounting_") as tmp:
        pacct = Path(tmp) / "pacct"
        pacct.touch()
        subprocess.run(["accton", str(pacct)], check=True, stdout=subprocess.DEVNULL)
        t0 = time.perf_counter()
        try:
            rc = subprocess.run(command).returncode
        finally:
            wall = time.perf_counter() - t0
            subprocess.run(["accton", "off"], check=False, stdout=subprocess.DEVNULL)
        records = read_pacct(pacct)
    summary = {"command": command, "returncode": rc, "wall_s": round(wall, 2), **summarise(records, args.top)}
    print(f"wall {summary['wall_s']} s, {summary['processes']} processes, {summary['cpu_s']} CPU-s")
    for title, key in (("by command", "by_command"), ("by command <- parent's command", "by_command_and_parent")):
        print(f"\n{title}:")
        for row in summary[key]:
            print(f"  {row['name']:40s} {row['processes']:6d} processes {row['cpu_s']:9.2f} CPU-s")
    if args.out:
        Path(args.out).write_text(json.dumps({**summary, "records": records}, indent=1), encoding="utf-8")
    return rc


if __name__ == "__main__":
    sys.exit(main())
