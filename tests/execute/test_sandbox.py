"""The sandbox against hostile children (real subprocesses, plain Python, no Manim: fast).

Each test runs a hostile program and checks that the run returns a clean result, that the damage stayed
inside, and that nothing of the child tree is left alive. Oracles: the child's own report of itself
(process_time, ru_maxrss, environment), the /proc table, and the file system.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prism_fast.execute import sandbox
from prism_fast.execute.sandbox import Limits, SandboxSpec, _Bounded, host_isolation, run_sandboxed, scrub_env

HOST = host_isolation()


def run_py(tmp_path: Path, code: str, timeout_s: float = 10, limits: Limits | None = None, **kw):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    spec = SandboxSpec(argv=[sys.executable, "-c", textwrap.dedent(code)], cwd=str(work),
                       env=scrub_env(os.environ, home=str(work)), timeout_s=timeout_s,
                       limits=limits or Limits(cpu_seconds=60), **kw)
    return run_sandboxed(spec)


def live_pids_with(marker: str) -> list[int]:
    """Processes (not zombies) whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def test_exit_codes_and_signals(tmp_path):
    r = run_py(tmp_path, "import sys; print('out'); sys.exit(3)")
    assert (r.returncode, r.exit_status, r.signal, r.timed_out) == (3, 3, None, False)
    assert r.stdout.data == b"out\n"
    r = run_py(tmp_path, "import os; os._exit(7)")
    assert (r.returncode, r.exit_status) == (7, 7)
    r = run_py(tmp_path, "import ctypes; ctypes.string_at(0)")  # segfault
    assert (r.returncode, r.exit_status, r.signal) == (-11, None, "SIGSEGV")


def test_sleep_forever_is_killed_at_the_timeout(tmp_path):
    marker = f"sleepmark{uuid.uuid4().hex}"
    r = run_py(tmp_path, f"import time; x = '{marker}'; time.sleep(10**6)", timeout_s=2)
    assert r.timed_out and r.signal == "SIGKILL"
    assert 2.0 <= r.wall_s < 5.0
    assert live_pids_with(marker) == []


def test_infinite_loop_killed_with_its_children(tmp_path):
    marker = f"loopmark{uuid.uuid4().hex}"
    code = f"""
        import subprocess, sys
        # two grandchildren that spin too; the whole group must die
        for _ in range(2):
            subprocess.Popen([sys.executable, "-c", "while True: pass", "{marker}"])
        while True:
            pass
    """
    r = run_py(tmp_path, code, timeout_s=3)
    assert r.timed_out and r.signal == "SIGKILL"
    assert live_pids_with(marker) == []


def test_background_grandchild_is_killed_after_normal_exit(tmp_path):
    marker = f"bgmark{uuid.uuid4().hex}"
    code = f"""
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", "{marker}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print("parent done")
    """
    r = run_py(tmp_path, code, timeout_s=20)
    assert r.exit_status == 0 and not r.timed_out
    assert r.wall_s < 10
    assert live_pids_with(marker) == []


@pytest.mark.skipif(not HOST.cgroup_pids_root, reason="needs a writable cgroup pids controller (root)")
def test_setsid_escapee_is_killed_through_the_cgroup(tmp_path):
    marker = f"escmark{uuid.uuid4().hex}"
    code = f"""
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", "{marker}"],
                         start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    """
    r = run_py(tmp_path, code, timeout_s=20)
    assert r.exit_status == 0 and r.pids_limit == "cgroup"
    assert live_pids_with(marker) == []


def test_fork_bomb_is_contained(tmp_path):
    if HOST.is_root and not HOST.cgroup_pids_root:
        pytest.skip("root without a cgroup pids controller: no process limit exists, a fork bomb would hit the host")
    marker = f"bombmark{uuid.uuid4().hex}"
    code = f"""
        import os, sys
        tag = "{marker}"
        failures = 0
        while True:
            try:
                os.fork()
            except OSError:
                failures += 1
    """
    r = run_py(tmp_path, code, timeout_s=4, limits=Limits(cpu_seconds=60, max_processes=40))
    assert r.pids_limit in ("cgroup", "rlimit")
    assert r.timed_out
    assert live_pids_with(marker) == []


def _rss_mb() -> float:
    """This process's resident set now (MiB): a child forked from it starts its peak-RSS count there (Linux keeps
    the pre-exec high-water mark in the child's ``ru_maxrss``), so a test process grown past 1 GiB -- two xdist
    processes, each running many files -- is the floor of any child's ``peak_rss_mb``."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def test_huge_allocation_fails_cleanly(tmp_path):
    floor = _rss_mb()
    r = run_py(tmp_path, "b = bytearray(50 * 10**9)", limits=Limits(cpu_seconds=60, address_space_mb=4096))
    assert r.exit_status == 1 and not r.timed_out
    assert r.stderr.text().strip().endswith("MemoryError")
    assert r.peak_rss_mb < max(1024.0, floor + 256.0), (r.peak_rss_mb, floor)  # the 50 GB never materialised


def test_one_gigabyte_of_stdout_is_bounded(tmp_path):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code = """
        import sys
        chunk = b"y" * (1 << 20)
        for _ in range(1024):
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        sys.stderr.write("end-of-output")
    """
    r = run_py(tmp_path, code, timeout_s=60, output_head_bytes=1000, output_tail_bytes=5000)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert r.exit_status == 0
    assert r.stdout.total_bytes == 1 << 30
    assert r.stdout.truncated and len(r.stdout.head) == 1000 and len(r.stdout.tail) == 5000
    assert r.stderr.text() == "end-of-output"
    assert (after - before) / 1024 < 200  # the parent never held the stream (KiB -> MiB)


@pytest.mark.skipif(not HOST.mountns, reason="needs a mount namespace (root) to make paths read-only")
def test_cannot_write_protected_paths(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    victim = results / "other_sample.mp4"
    victim.write_bytes(b"precious")
    code = f"""
        import os
        open("inside.txt", "w").write("mine")          # its own directory stays writable
        for path in [{str(victim)!r}, {str(results / 'new.txt')!r}]:
            try:
                open(path, "w").write("overwritten")
                print("WROTE", path)
            except OSError as exc:
                print("DENIED", exc.errno)
    """
    r = run_py(tmp_path, code, readonly_paths=(str(results),))
    assert r.fs_readonly and r.exit_status == 0
    assert victim.read_bytes() == b"precious"
    assert not (results / "new.txt").exists()
    # the view hides everything outside the scratch (ENOENT); the unsafe level only bind-mounts it read-only
    assert r.stdout.text().count("DENIED 2" if r.sandbox == "namespaces" else "DENIED 30") == 2
    assert (tmp_path / "work" / "inside.txt").read_text() == "mine"


@pytest.mark.skipif(not HOST.mountns, reason="needs a mount namespace (root) to make paths read-only")
def test_unsafe_level_still_protects_listed_paths_read_only(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    code = f"""
        try:
            open({str(results / 'new.txt')!r}, "w").write("x")
            print("WROTE")
        except OSError as exc:
            print("DENIED", exc.errno)
    """
    r = run_py(tmp_path, code, readonly_paths=(str(results),), level="unsafe")
    assert r.sandbox == "unsafe" and "view" not in r.protections and "readonly_binds" in r.protections
    assert r.stdout.text().strip() == "DENIED 30" and not (results / "new.txt").exists()


@pytest.mark.skipif(not HOST.netns, reason="needs a network namespace (root)")
def test_network_is_unreachable(tmp_path):
    code = """
        import socket
        try:
            socket.create_connection(("1.1.1.1", 80), timeout=3)
            print("CONNECTED")
        except OSError as exc:
            print("BLOCKED", exc.errno)
        print(sorted(name for _, name in socket.if_nameindex()))
    """
    r = run_py(tmp_path, code)
    assert r.net_isolated
    lines = r.stdout.text().splitlines()
    assert lines[0] == "BLOCKED 101"  # ENETUNREACH
    assert lines[1] == "['lo']"


UNSHARE_PROBE = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
rc = libc.unshare(0x00020000)  # a new mount namespace needs CAP_SYS_ADMIN
print("ESCAPED" if rc == 0 else "DENIED %d" % ctypes.get_errno())
"""


@pytest.mark.skipif(not HOST.capdrop, reason="capability drop needs root")
def test_child_loses_admin_capabilities(tmp_path):
    # Control: without the drop, root may create namespaces (so the probe can tell the difference) ...
    control = run_py(tmp_path, UNSHARE_PROBE, drop_capabilities=False, level="unsafe")
    assert control.stdout.text().strip() == "ESCAPED"
    # ... with it, it cannot (nor remount read-only paths, set up its own network, lift hard rlimits).
    r = run_py(tmp_path, UNSHARE_PROBE)
    assert r.caps_dropped and r.stdout.text().strip() == "DENIED 1"  # EPERM


def test_environment_is_scrubbed(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-for-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret2")
    monkeypatch.setenv("LANG", "C.UTF-8")
    r = run_py(tmp_path, "import os, json; print(json.dumps(dict(os.environ)))")
    env = json.loads(r.stdout.text())
    assert "OPENAI_API_KEY" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    assert set(env) <= set(sandbox.ENV_ALLOW) | {"HOME", "TMPDIR"}
    assert env["HOME"] == env["TMPDIR"] == str(tmp_path / "work")
    assert env["LANG"] == "C.UTF-8"


def test_cpu_time_and_peak_rss_match_the_childs_own_report(tmp_path):
    code = """
        import resource, time
        block = b"z" * (150 * 1024 * 1024)           # touched pages: RSS grows by 150 MiB
        end = time.process_time() + 0.7
        while time.process_time() < end:
            pass
        u = resource.getrusage(resource.RUSAGE_SELF)
        print(u.ru_utime + u.ru_stime, u.ru_maxrss / 1024)
    """
    r = run_py(tmp_path, code)
    own_cpu, own_rss = map(float, r.stdout.text().split())
    assert own_cpu <= r.cpu_s <= own_cpu + 0.5
    assert own_rss <= r.peak_rss_mb <= own_rss + 5
    assert r.peak_rss_mb >= 150
    assert r.cpu_s <= r.wall_s + 0.2


def test_launch_failure_is_a_result_not_an_exception(tmp_path):
    spec = SandboxSpec(argv=[str(tmp_path / "no-such-binary")], cwd=str(tmp_path), env={"PATH": "/usr/bin"})
    r = run_sandboxed(spec)
    assert r.returncode is None and r.launch_error and "FileNotFoundError" in r.launch_error


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.binary(max_size=300), max_size=40), head=st.integers(0, 500), tail=st.integers(0, 500))
def test_bounded_buffer_keeps_exact_head_and_tail(chunks, head, tail):
    buf = _Bounded(head, tail)
    for chunk in chunks:
        buf.add(chunk)
    full = b"".join(chunks)
    got = buf.freeze()
    assert got.total_bytes == len(full)
    assert got.head == full[:head]
    rest = full[len(got.head):]
    assert got.tail == (rest[-tail:] if tail else b"")
    if not got.truncated:
        assert got.data == full
