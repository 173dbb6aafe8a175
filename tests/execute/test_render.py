"""render_one on real Manim renders: the authors' semantics, parity with the plain CLI, hostile scenes.

Oracles: the spec's -ql format (854×480, 15 fps, H.264) read back with ffprobe; the authors' command run
directly with ``subprocess.run(capture_output=True, text=True)`` (what scripts/render_directory.py does) for
byte-identical videos and identical error text; the spec's error strings (execution.md §2.4).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from prism_fast.execute.render import (
    ERR_NO_MP4, ERR_SCENE_NOT_FOUND, RenderConfig, find_final_mp4, manim_command, render_one,
)
from prism_fast.execute.sandbox import Limits, host_isolation
from prism_fast.profile import IMPROVED, REFERENCE
from tests.scratch_names import scratch_neutral

MANIM = str(Path(sys.executable).with_name("manim"))
HOST = host_isolation()

TINY = textwrap.dedent("""
    from manim import *

    class Tiny(Scene):
        def construct(self):
            self.play(Create(Square()), run_time=0.4)
""").lstrip()


def cfg_for(tmp_path: Path, **kw) -> RenderConfig:
    kw.setdefault("timeout_s", 120)
    return RenderConfig(manim_bin=MANIM, tmp_root=str(tmp_path / "tmp"), **kw)


def ffprobe(path: str) -> dict:
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "stream=codec_name,width,height,r_frame_rate", "-of", "json", path],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["streams"][0]


def toolkit_render(script: Path, scene: str, media_dir: Path, sample_id: str, cwd: Path):
    """The authors' invocation, run directly (no sandbox)."""
    cmd = manim_command(MANIM, script, scene, media_dir, sample_id)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=cwd, stdin=subprocess.DEVNULL)


def test_tiny_scene_success_format_and_parity_with_plain_cli(tmp_path):
    out = tmp_path / "run"
    row = render_one("tiny_1", TINY, out, cfg_for(tmp_path))
    assert row["success"] is True and row["status"] == "ok" and row["error"] is None, row
    assert row["video_path"] == str(out / "videos" / "tiny_1.mp4")
    assert row["exit_status"] == 0 and row["signal"] is None and row["scene_class"] == "Tiny"
    assert row["runtime_sec"] == row["wall_s"] > 0 and row["cpu_s"] > 0 and row["peak_rss_mb"] > 50
    assert row["profile"] == "reference" and len(row["env_fingerprint"]) == 16
    assert list(row)[:7] == ["id", "file_path", "success", "skipped", "video_path", "runtime_sec", "error"]
    assert ffprobe(row["video_path"]) == {"codec_name": "h264", "width": 854, "height": 480, "r_frame_rate": "15/1"}
    assert not list((tmp_path / "tmp").iterdir())  # the sample's temp dir is gone

    # The same script rendered by the authors' plain command gives the same bytes.
    plain = tmp_path / "plain"
    plain.mkdir()
    script = plain / "tiny_1.py"
    script.write_text(TINY)
    proc = toolkit_render(script, "Tiny", plain / "media", "tiny_1", plain)
    assert proc.returncode == 0, proc.stderr
    direct = find_final_mp4(plain / "media", "tiny_1.mp4")
    assert Path(row["video_path"]).read_bytes() == direct.read_bytes()

    # Q-FUNNEL-2 reference: an existing video is a skipped success, nothing runs.
    again = render_one("tiny_1", "this is not even python", out, cfg_for(tmp_path))
    assert (again["success"], again["skipped"], again["status"], again["runtime_sec"]) == (True, True, "skipped", 0.0)


def test_scene_class_not_found_runs_nothing(tmp_path):
    for profile in (REFERENCE, IMPROVED):
        row = render_one("noscene", "print('hello')\n", tmp_path / "run", cfg_for(tmp_path), profile)
        assert row["error"] == ERR_SCENE_NOT_FOUND and row["runtime_sec"] == 0.0
        assert row["success"] is False and row["status"] == "failed" and row["error_kind"] == "scene_not_found"
        assert row["exit_status"] is None


def test_zero_animation_scene_has_no_mp4(tmp_path):
    src = "from manim import *\nclass Still(Scene):\n    def construct(self):\n        self.add(Circle())\n"
    row = render_one("still", src, tmp_path / "run", cfg_for(tmp_path))
    assert row["exit_status"] == 0
    assert row["error"] == ERR_NO_MP4 and row["error_kind"] == "no_mp4" and row["success"] is False
    assert not (tmp_path / "run" / "videos" / "still.mp4").exists()


def test_exception_error_text_equals_the_toolkits(tmp_path):
    src = textwrap.dedent("""
        from manim import *
        class Boom(Scene):
            def construct(self):
                self.play(Create(Circle()), run_time=0.2)
                x = 1 / 0
    """).lstrip()
    sid = "boom"
    # A short temp root: rich wraps long paths inside the traceback box, which would split the name below.
    short_root = Path(tempfile.mkdtemp(prefix="pf", dir="/tmp"))
    try:
        _compare_error_with_toolkit(sid, src, short_root, tmp_path)
    finally:
        shutil.rmtree(short_root, ignore_errors=True)


def _compare_error_with_toolkit(sid: str, src: str, short_root: Path, tmp_path: Path) -> None:
    cfg = RenderConfig(manim_bin=MANIM, tmp_root=str(short_root), timeout_s=120)
    row = render_one(sid, src, tmp_path / "run", cfg)
    assert row["exit_status"] == 1 and row["error_kind"] == "exit_nonzero"
    assert "ZeroDivisionError" in row["error"] and len(row["error"]) <= 4000

    # Oracle: the authors' code path on a script at a path of the same length (render_<id>_XXXXXXXX), so
    # that rich wraps the traceback identically; only the directory name then differs.
    oracle_dir = short_root / f"render_{sid}_ORACLE01"
    oracle_dir.mkdir(parents=True)
    script = oracle_dir / f"{sid}.py"
    script.write_text(src)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = subprocess.run(manim_command(MANIM, script, "Boom", oracle_dir / "media", sid), capture_output=True,
                          text=True, timeout=300, cwd=oracle_dir, stdin=subprocess.DEVNULL, env=env)
    expected = (proc.stderr or proc.stdout or "render failed").strip()[-4000:]
    assert proc.returncode == 1
    ours = row["error"]
    start = ours.index(f"render_{sid}_")
    ours = ours.replace(ours[start:start + len(f"render_{sid}_") + 8], f"render_{sid}_ORACLE01")
    assert ours == expected


def test_timeout_reference_message(tmp_path):
    src = "import time\nfrom manim import *\nclass Slow(Scene):\n    def construct(self):\n        time.sleep(1000)\n"
    row = render_one("slow", src, tmp_path / "run", cfg_for(tmp_path, timeout_s=5), REFERENCE)
    assert row["error"] == "timeout after 5s: render timed out after 5s"  # Q-EXEC-2 reference
    assert row["status"] == "timeout" and row["error_kind"] == "timeout" and row["timed_out"] is True
    assert row["signal"] == "SIGKILL" and 5 <= row["runtime_sec"] < 9


def test_timeout_improved_keeps_partial_stderr(tmp_path):
    src = ("import sys, time\nprint('partial-marker-42', file=sys.stderr, flush=True)\ntime.sleep(1000)\n"
           "from manim import *\nclass Slow(Scene):\n    def construct(self):\n        pass\n")
    # 12 s: the marker is printed only after the CLI has imported manim (3-8 s on a loaded 2-core machine)
    row = render_one("slow2", src, tmp_path / "run", cfg_for(tmp_path, timeout_s=12), IMPROVED)
    assert row["error"] == "timeout after 12s: partial-marker-42"  # Q-EXEC-2 improved
    assert row["profile"] == "improved"


def scene(body: str, pre: str = "") -> str:
    """A valid scene whose construct does something hostile before animating."""
    return (f"import os, sys, time, ctypes, socket\n{pre}\nfrom manim import *\n\nclass Hostile(Scene):\n"
            f"    def construct(self):\n{textwrap.indent(textwrap.dedent(body).strip(), ' ' * 8)}\n"
            f"        self.play(Create(Square()), run_time=0.2)\n")


@pytest.mark.slow  # eight manim processes in a row: ~25-50 s on a loaded 2-core machine
def test_hostile_batch_fast_failures_then_a_valid_render(tmp_path):
    out = tmp_path / "run"
    victim = out / "videos" / "other_sample.mp4"
    victim.parent.mkdir(parents=True)
    victim.write_bytes(b"precious result")
    cases = [
        ("exit3", scene("sys.exit(3)"), "exit_nonzero", lambda r: r["exit_status"] == 3),
        ("osexit", scene("os._exit(5)"), "exit_nonzero", lambda r: r["exit_status"] == 5),
        ("segv", scene("ctypes.string_at(0)"), "killed_by_signal", lambda r: r["signal"] == "SIGSEGV"),
        ("alloc50g", scene("b = bytearray(50 * 10**9)"), "exit_nonzero", lambda r: "MemoryError" in r["error"]),
        ("net", scene("socket.create_connection(('1.1.1.1', 80), timeout=5)"), "exit_nonzero",
         lambda r: (not HOST.netns) or "Network is unreachable" in r["error"]),
        ("writeout", scene(f"open({str(victim)!r}, 'wb').write(b'overwritten')"), "exit_nonzero",
         lambda r: (not HOST.mountns) or ("No such file or directory" if HOST.level == "namespaces"
                                          else "Read-only file system") in r["error"]),
        # a planted symlink that sorts before the real mp4: never followed (it would copy /dev/zero forever)
        ("symlink", scene("os.makedirs('media/videos/evil', exist_ok=True)\n"
                          "os.symlink('/dev/zero', 'media/videos/evil/symlink.mp4')"), "mp4_copy_failed",
         lambda r: r["exit_status"] == 0 and "render succeeded but mp4 copy failed" in r["error"]),
    ]
    rows = [render_one(sid, code, out, cfg_for(tmp_path, timeout_s=60)) for sid, code, _, _ in cases]
    rows.append(render_one("after", TINY, out, cfg_for(tmp_path)))
    for (sid, _, kind, check), row in zip(cases, rows):
        assert row["success"] is False and row["status"] == "failed", (sid, row)
        assert row["error_kind"] == kind and check(row), (sid, row)
        assert row["error"] and row["video_path"] is None
    assert rows[-1]["success"] is True
    if HOST.mountns:
        assert victim.read_bytes() == b"precious result"
    assert sorted(p.name for p in (out / "videos").iterdir()) == ["after.mp4", "other_sample.mp4"]


@pytest.mark.skipif(HOST.is_root and not HOST.cgroup_pids_root, reason="no process limit on this host")
def test_hostile_batch_timeouts(tmp_path):
    marker = "print('hostile-started', file=sys.stderr, flush=True)"
    bomb = f"{marker}\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    cases = [
        ("loop", scene(f"{marker}\nwhile True:\n    pass")),
        ("forkbomb", scene(bomb)),
    ]  # sleeping forever: test_timeout_* here and the prefork test
    # 12 s: the hostile code starts only after the CLI imported manim (3-8 s on a loaded 2-core machine)
    cfg = cfg_for(tmp_path, timeout_s=12, limits=Limits(max_processes=64))
    rows = [render_one(sid, code, tmp_path / "run", cfg, IMPROVED) for sid, code in cases]
    for (sid, _), row in zip(cases, rows):
        assert row["status"] == "timeout" and row["error_kind"] == "timeout", (sid, row)
        assert row["error"].startswith("timeout after 12s: ") and "hostile-started" in row["error"], (sid, row)
        assert row["runtime_sec"] < 16
    leftover = subprocess.run(["pgrep", "-f", "hostile-started"], capture_output=True, text=True).stdout
    assert leftover.strip() == ""


def test_render_cache_rerun_skips_identical_work(tmp_path):
    cache_dir = tmp_path / "cache"
    cfg = cfg_for(tmp_path, cache_dir=str(cache_dir))
    first = render_one("cached", TINY, tmp_path / "run1", cfg)
    assert first["success"] and first["cache_hit"] is False and len(first["cache_key"]) == 64
    second = render_one("cached", TINY, tmp_path / "run2", cfg)
    assert second["cache_hit"] is True and second["cache_key"] == first["cache_key"]
    assert second["video_path"] == str(tmp_path / "run2" / "videos" / "cached.mp4")
    assert Path(second["video_path"]).read_bytes() == Path(first["video_path"]).read_bytes()
    strip = lambda r: {k: v for k, v in r.items() if k not in ("video_path", "cache_hit")}  # noqa: E731
    assert strip(second) == strip(first)  # the original timings are kept, and flagged by cache_hit

    # A corrupted cached video is a miss, never a wrong answer.
    (stored,) = cache_dir.rglob("*.mp4")
    stored.write_bytes(b"garbage")
    from prism_fast.execute.cache import RenderCache
    assert RenderCache(cache_dir).get(first["cache_key"], tmp_path / "run3" / "x.mp4") is None


def test_render_cache_key_and_policy(tmp_path):
    from prism_fast.execute.cache import RenderCache, render_cache_key

    base = dict(script_text=TINY, sample_id="a", scene="Tiny", render_settings={"timeout_s": 600},
                exec_switches={"Q-EXEC-1": False}, env_fingerprint="f" * 16)
    k0 = render_cache_key(**base)
    variants = [dict(script_text=TINY + " "), dict(sample_id="b"), dict(scene="Other"),
                dict(render_settings={"timeout_s": 60}), dict(exec_switches={"Q-EXEC-1": True}),
                dict(env_fingerprint="e" * 16)]
    keys = {render_cache_key(**{**base, **v}) for v in variants}
    assert k0 not in keys and len(keys) == len(variants)
    assert render_cache_key(**base) == k0

    cache = RenderCache(tmp_path / "c")
    assert not cache.put("ab" * 32, {"success": False, "error_kind": "timeout", "status": "timeout"})
    assert not cache.put("cd" * 32, {"success": False, "error_kind": "sandbox_error"})
    failed = {"id": "x", "success": False, "error_kind": "exit_nonzero", "error": "Traceback ...", "video_path": None}
    assert cache.put("ef" * 32, failed)
    got = cache.get("ef" * 32, tmp_path / "unused.mp4")
    assert got == {**failed, "cache_hit": True, "cache_key": "ef" * 32}
    assert not (tmp_path / "unused.mp4").exists()


PARITY_SCENES = {
    "text_and_shapes": textwrap.dedent("""
        from manim import *
        class Shapes(Scene):
            def construct(self):
                config.background_color = BLUE_E      # mutates global config: must not leak to the next sample
                self.play(Write(Text("Hello 你好")), run_time=0.5)
                self.play(Create(Square().shift(LEFT)), FadeIn(Circle()), run_time=0.4)
    """).lstrip(),
    "plain_after_mutation": TINY,
    "raises": textwrap.dedent("""
        from manim import *
        class Raises(Scene):
            def construct(self):
                self.play(Create(Circle()), run_time=0.2)
                self.undefined_method()
    """).lstrip(),
    # a traceback through manim's own frames: rich highlights their source with pygments (preloaded by the server)
    "raises_in_manim": textwrap.dedent("""
        from manim import *
        class RaisesInManim(Scene):
            def construct(self):
                self.add(VGroup(Circle(), Square()).arrange(direction=np.array([1.0, 0.0])))
    """).lstrip(),
}
# backend-specific by design: where trusted code runs in the child (the prefork backend), the fast paths do (rows say so)
VOLATILE = {"runtime_sec", "wall_s", "cpu_s", "peak_rss_mb", "backend", "video_path", "fast_paths"}


def _normalised(row: dict) -> dict:
    out = {k: v for k, v in row.items() if k not in VOLATILE}
    for key in ("error", "stderr_tail"):
        if out.get(key):
            out[key] = scratch_neutral(out[key], f"render_{row['id']}_")
    return out


@pytest.mark.slow  # eight manim renders: ~40-50 s on a loaded 2-core machine
def test_prefork_worker_gives_identical_rows_and_videos(tmp_path):
    from prism_fast.execute.render import prefork_worker

    short_root = Path(tempfile.mkdtemp(prefix="pf", dir="/tmp"))
    cfg = RenderConfig(manim_bin=MANIM, tmp_root=str(short_root), timeout_s=120)
    worker = prefork_worker(cfg)
    try:
        for sid, src in PARITY_SCENES.items():
            cli = render_one(sid, src, tmp_path / "cli", cfg)
            pre = render_one(sid, src, tmp_path / "pre", cfg, runner=worker.run)
            assert (cli["backend"], pre["backend"]) == ("cli", "prefork")
            assert (cli["fast_paths"], pre["fast_paths"]) == ("off", "on")
            assert _normalised(pre) == _normalised(cli), sid
            if cli["success"]:
                assert Path(pre["video_path"]).read_bytes() == Path(cli["video_path"]).read_bytes(), sid
        assert worker.restarts == 0
    finally:
        worker.close()
        shutil.rmtree(short_root, ignore_errors=True)


def _prefork_then_cli(sid: str, src: str, tmp_path: Path) -> tuple[dict, dict]:
    """The rows of ``src`` rendered by a fresh prefork worker and then by the plain CLI backend."""
    from prism_fast.execute.render import prefork_worker

    cfg = RenderConfig(manim_bin=MANIM, tmp_root=str(tmp_path / "tmp"), timeout_s=120)
    worker = prefork_worker(cfg)
    try:
        pre = render_one(sid, src, tmp_path / "pre", cfg, runner=worker.run)
    finally:
        worker.close()
    return pre, render_one(sid, src, tmp_path / "cli", cfg)


def test_prefork_children_start_with_the_servers_heap_frozen(tmp_path):
    """The prefork server freezes its heap (manim and the preloaded modules) before forking, so a child's cyclic
    garbage collector skips it (execute/worker.py); a fresh `manim` process has nothing frozen. Seen by a script
    whose error text says so (the rows are otherwise identical: test_prefork_worker_gives_identical_rows_...)."""
    src = textwrap.dedent("""
        import gc
        from manim import *

        class Frozen(Scene):
            def construct(self):
                raise ValueError(f"frozen: {gc.get_freeze_count() > 10000}")
    """).lstrip()
    pre, cli = _prefork_then_cli("frozen", src, tmp_path)
    assert pre["backend"] == "prefork" and "ValueError: frozen: True" in pre["error"]
    assert cli["backend"] == "cli" and "ValueError: frozen: False" in cli["error"]


def test_prefork_children_keep_glibcs_default_malloc_settings(tmp_path):
    """x264's bytes depend on the allocator's state (docs/parity.md: with ``mallopt(M_MMAP_THRESHOLD, 32 MiB)`` in the
    render process, 18 of the corpus's videos changed for the same frames), so a prefork child must allocate as a
    fresh ``manim`` process does: a 4 MiB block mapped on its own (glibc's ``IS_MMAPPED`` chunk flag), in both."""
    src = textwrap.dedent("""
        import ctypes
        from manim import *

        class Heap(Scene):
            def construct(self):
                libc = ctypes.CDLL(None)
                libc.malloc.restype = ctypes.c_void_p
                p = libc.malloc(4 * 1024 * 1024)
                raise ValueError(f"mapped: {bool(ctypes.c_size_t.from_address(p - 8).value & 2)}")
    """).lstrip()
    pre, cli = _prefork_then_cli("heap", src, tmp_path)
    assert pre["backend"] == "prefork" and "ValueError: mapped: True" in pre["error"]
    assert cli["backend"] == "cli" and "ValueError: mapped: True" in cli["error"]


def test_prefork_children_find_the_console_modules_imported(tmp_path):
    """The prefork server imports what a child would import only after its scene ran -- manim's log table, rich's
    traceback with pygments' Python lexer (execute/worker.py CONSOLE_MODULES) -- once; a fresh `manim` process has
    only one of them when the scene runs. Seen by a script whose error text says so (the printed tracebacks are the
    same: test_prefork_worker_gives_identical_rows_and_videos, "raises_in_manim")."""
    from prism_fast.execute.worker import CONSOLE_MODULES

    src = textwrap.dedent(f"""
        import sys
        from manim import *

        class Mods(Scene):
            def construct(self):
                raise ValueError(f"preloaded: {{sum(m in sys.modules for m in {CONSOLE_MODULES!r})}}")
    """).lstrip()
    pre, cli = _prefork_then_cli("mods", src, tmp_path)
    assert pre["backend"] == "prefork" and f"ValueError: preloaded: {len(CONSOLE_MODULES)}" in pre["error"]
    # (manim's CLI has imported rich's emoji table by the time the scene runs; nothing else of the list)
    assert cli["backend"] == "cli" and "ValueError: preloaded: 1" in cli["error"]


@pytest.mark.slow  # seven renders plus one server restart: ~30-40 s on a loaded 2-core machine
def test_prefork_worker_contains_hostile_children(tmp_path):
    from prism_fast.execute.render import prefork_worker

    cfg = cfg_for(tmp_path, timeout_s=12, limits=Limits(max_processes=64))
    rand = ("import sys, numpy\nprint('rand', numpy.random.rand(), file=sys.stderr)\nsys.exit(2)\n"
            "from manim import *\nclass R(Scene):\n    pass\n")
    worker = prefork_worker(cfg)
    try:
        run = lambda sid, src: render_one(sid, src, tmp_path / "run", cfg, IMPROVED, runner=worker.run)  # noqa: E731
        segv = run("segv", scene("ctypes.string_at(0)"))
        assert segv["error_kind"] == "killed_by_signal" and segv["signal"] == "SIGSEGV"
        sleeper = run("sleeper", scene("print('hostile-started', file=sys.stderr, flush=True)\ntime.sleep(10**6)"))
        assert sleeper["status"] == "timeout" and "hostile-started" in sleeper["error"]
        assert sleeper["runtime_sec"] < 16
        net = run("net", scene("socket.create_connection(('1.1.1.1', 80), timeout=5)"))
        assert net["error_kind"] == "exit_nonzero" and ((not HOST.netns) or "Network is unreachable" in net["error"])
        # the forked child (no exec) really lost its capabilities (control case: test_sandbox.py)
        probe = ("import ctypes, sys\nrc = ctypes.CDLL(None, use_errno=True).unshare(0x00020000)\n"
                 "print('ESCAPED' if rc == 0 else 'DENIED', file=sys.stderr)\nsys.exit(2)\n"
                 "from manim import *\nclass L(Scene):\n    pass\n")
        probed = run("capprobe", probe)
        assert probed["caps_dropped"] == HOST.capdrop
        assert probed["error"] == ("DENIED" if HOST.capdrop else "ESCAPED")
        # numpy's global RNG is reseeded per child, as in a fresh process
        r1, r2 = run("rand1", rand)["error"], run("rand2", rand)["error"]
        assert r1.startswith("rand ") and r1 != r2
        # a script that tries to kill the warm server: in its own PID namespace its parent is invisible
        # (getppid() == 0), so the server survives; without the namespace the server dies, the row is a
        # sandbox error and the next sample gets a new server
        killer = run("killer", scene("os.kill(os.getppid(), 9)\ntime.sleep(30)"))
        ok = run("after", TINY)
        if HOST.level == "namespaces":
            assert killer["status"] == "timeout" and worker.restarts == 0
        else:
            assert killer["error_kind"] == "sandbox_error" and "prefork worker died" in killer["error"]
            assert worker.restarts == 1
        assert ok["success"] is True
    finally:
        worker.close()
    leftover = subprocess.run(["pgrep", "-f", "hostile-started"], capture_output=True, text=True).stdout
    assert leftover.strip() == ""
