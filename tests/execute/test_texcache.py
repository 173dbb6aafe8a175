"""The shared TeX SVG cache (prism_fast/execute/texcache.py): real prefork renders, real latex + dvisvgm."""

from __future__ import annotations

import hashlib
import os
import json
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from prism_fast.execute import texcache
from prism_fast.execute.render import RenderConfig, render_one
from tests.scratch_names import scratch_neutral

MATH = textwrap.dedent('''
    from manim import *

    class Eq(Scene):
        def construct(self):
            eq = MathTex(r"E = mc^2", r"\\int_0^1 x\\,dx").to_edge(UP)
            t = Tex(r"a $\\sqrt{2}$ b")
            self.play(Write(eq), FadeIn(t), run_time=0.4)
    ''')


def _sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "svg").rglob("*.svg"))


def test_compile_commands_are_manims(tmp_path):
    from manim.utils.tex_file_writing import make_tex_compilation_command

    tex = tmp_path / "0123456789abcdef.tex"
    for compiler, fmt in (("latex", ".dvi"), ("pdflatex", ".pdf"), ("lualatex", ".pdf"), ("xelatex", ".xdv"),
                          ("xelatex", ".pdf")):
        first, second = texcache.compile_commands(tex, compiler, fmt)
        assert first == make_tex_compilation_command(compiler, fmt, tex, tmp_path)
        assert second[0] == "dvisvgm" and second[-1] == tex.with_suffix(fmt).as_posix()
        assert ("--pdf" in second) == (fmt == ".pdf")


def test_cached_renders_are_identical_to_uncached(worker_cfg):
    """First sighting → marker only; second → trusted re-compile publishes; third → served from the cache. Every
    video is byte-identical to a render without the cache, and so are the sizes of stdout/stderr."""
    root, cfg, worker = worker_cfg
    rows = [render_one("eq", MATH, root / f"out{k}", cfg, runner=worker.run) for k in range(3)]
    plain = render_one("eq", MATH, root / "plain", replace(cfg, tex_cache_dir=None), runner=worker.run)
    assert plain["success"] and plain["tex_cache"] == "off"
    for row in rows:
        assert row["success"], row["error"]
        assert row["tex_cache"] == "on"
        assert _sha(row["video_path"]) == _sha(plain["video_path"])
        assert (row["stdout_bytes"], row["stderr_bytes"]) == (plain["stdout_bytes"], plain["stderr_bytes"])
    first, second, third = rows
    assert first["tex_cache_hits"] == 0 and first["tex_cache_published"] == 0
    # every distinct compile of the scene (at least the MathTex and the Tex) is published once, then served
    assert second["tex_cache_hits"] == 0 and second["tex_cache_published"] >= 2
    assert third["tex_cache_hits"] == second["tex_cache_published"] and third["tex_cache_published"] == 0
    assert len(_entries(Path(cfg.tex_cache_dir))) == second["tex_cache_published"]


def test_cli_backend_says_unsupported(worker_cfg, tmp_path):
    _root, cfg, _worker = worker_cfg
    row = render_one("nope", "from manim import *\nclass A(Scene):\n    def construct(self):\n        pass\n",
                     tmp_path, cfg)
    assert row["backend"] == "cli" and row["tex_cache"] == "unsupported_backend"


def test_a_script_cannot_poison_the_cache(worker_cfg):
    """A hostile script plants a wrong SVG under the right manim name and logs a fake compile, twice (so the
    second time is verified). The trusted re-compile disagrees: nothing is published; the cache directory is
    read-only for the script; the cache's variables are not in its environment."""
    root, cfg, worker = worker_cfg
    cache = Path(cfg.tex_cache_dir)
    hostile = textwrap.dedent(f'''
        import os
        from pathlib import Path
        from manim import *
        from manim.utils.tex_file_writing import tex_hash

        class Evil(Scene):
            def construct(self):
                leaked = [k for k in os.environ if k.startswith("PRISM_FAST")]
                try:
                    Path({str(cache)!r}, "svg", "planted.svg").write_text("x")
                    wrote = True
                except OSError:
                    wrote = False
                code = config.tex_template.get_texcode_for_expression_in_env("y = 2", "align*")
                tex_dir = Path(config.media_dir) / "Tex"
                tex_dir.mkdir(parents=True, exist_ok=True)
                name = tex_hash(code)
                (tex_dir / (name + ".tex")).write_text(code)
                (tex_dir / (name + ".svg")).write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
                with open({texcache.LOG_NAME!r}, "a") as f:
                    f.write('{{"event": "miss", "tex": "' + name + '.tex", "compiler": "latex", "format": ".dvi"}}\\n')
                    f.write('{{"event": "miss", "tex": "../../etc/passwd", "compiler": "latex", "format": ".dvi"}}\\n')
                raise SystemExit(40 + 2 * bool(leaked) + bool(wrote))
        ''')
    before = _entries(cache)
    rows = [render_one("evil", hostile, root / f"evil{k}", cfg, runner=worker.run) for k in range(2)]
    for row in rows:
        assert row["exit_status"] == 40 if row["fs_readonly"] else row["exit_status"] in (40, 41), row["error"]
        assert row["tex_cache_published"] == 0
    assert _entries(cache) == before
    assert not (cache / "svg" / "planted.svg").exists()


def test_profile_render_keeps_the_cache_off_unless_asked(tmp_path):
    from prism_fast.execute.profiling import ProfileSettings, profile_renders

    cfg = RenderConfig(timeout_s=300, tmp_root=str(tmp_path / "tmp"), tex_cache_dir=str(tmp_path / "cache"))
    script = "from manim import *\nclass A(Scene):\n    def construct(self):\n        self.play(FadeIn(MathTex('q')), run_time=0.2)\n"
    out = profile_renders([("m", "a", script)], cfg, ProfileSettings(repeats=1, warmup=0))
    assert out["method"]["tex_cache"] == "off" and out["method"]["backend"] == "cli"
    assert not (tmp_path / "cache").exists()
    out = profile_renders([("m", "a", script)], cfg, ProfileSettings(repeats=1, warmup=2, tex_cache=True))
    assert out["method"]["tex_cache"] == "warm" and out["samples"][0]["failures"] == 0
    assert len(_entries(tmp_path / "cache")) == 1
    json.dumps(out)


SVG_TEMPLATE = """<?xml version='1.0' encoding='UTF-8'?>
<svg version='1.1' xmlns='http://www.w3.org/2000/svg' xmlns:xlink='http://www.w3.org/1999/xlink' width='20pt' height='10pt' viewBox='0 -10 20 10'>
<defs>
{defs}
</defs>
<g id='page1'>
<use x='1' y='-2' xlink:href='#g1-1'/>
<use x='9' y='-2' xlink:href='#g2-7'/>
</g>
</svg>
"""
GLYPH_A = "<path id='g1-1' d='M0 0L4 0L4-6L0-6Z'/>"
GLYPH_B = "<path id='g2-7' d='M0 0L3-6L6 0Z'/>"


def test_glyph_definition_order_is_not_part_of_the_comparison_nor_of_the_mobject(tmp_path):
    """dvisvgm varies the order of <defs> between runs; the canonical form ignores exactly that, and manim's
    parsed mobject does not depend on it. Any other byte difference still counts."""
    from manim import SVGMobject

    ab = SVG_TEMPLATE.format(defs=f"{GLYPH_A}\n{GLYPH_B}").encode()
    ba = SVG_TEMPLATE.format(defs=f"{GLYPH_B}\n{GLYPH_A}").encode()
    assert ab != ba and texcache.canonical_svg(ab) == texcache.canonical_svg(ba)
    changed = ba.replace(b"L3-6", b"L3-5")
    assert texcache.canonical_svg(changed) != texcache.canonical_svg(ab)
    moved = ab.replace(b"x='9'", b"x='8'")
    assert texcache.canonical_svg(moved) != texcache.canonical_svg(ab)
    points = []
    for k, data in enumerate((ab, ba)):
        path = tmp_path / f"g{k}.svg"
        path.write_bytes(data)
        mob = SVGMobject(str(path))
        points.append([sm.points.tobytes() for sm in mob.family_members_with_points()])
    assert points[0] == points[1] and len(points[0]) == 2


def test_harvest_with_a_relative_cache_dir(tmp_path, monkeypatch):
    """runs_root is relative by default: the verifier runs in another cwd, so every path it uses must be
    absolute (a relative one produced no SVG at all in a pipeline run)."""
    import subprocess

    from manim import TexTemplate

    from prism_fast.execute import sandbox

    monkeypatch.chdir(tmp_path)
    code = TexTemplate().get_texcode_for_expression_in_env("y = x^2", "align*")
    work = tmp_path / "work"
    tex_dir = work / "media" / "Tex"
    tex_dir.mkdir(parents=True)
    tex = tex_dir / f"{texcache.manim_tex_hash(code)}.tex"
    tex.write_text(code, encoding="utf-8")
    for cmd in texcache.compile_commands(tex, "latex", ".dvi"):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    (work / texcache.LOG_NAME).write_text(json.dumps({"event": "miss", "tex": tex.name, "compiler": "latex",
                                                      "format": ".dvi"}) + "\n", encoding="utf-8")

    def make_spec(argv, cwd):
        return sandbox.SandboxSpec(argv=argv, cwd=cwd, env=sandbox.scrub_env(os.environ, home=cwd), timeout_s=120)

    rel = Path("runs") / ".cache" / "tex"
    first = texcache.harvest(work, work / "media", rel, sandbox.run_sandboxed, make_spec)
    second = texcache.harvest(work, work / "media", rel, sandbox.run_sandboxed, make_spec)
    assert (first.first_seen, first.published) == (1, 0)
    assert (second.published, second.rejected) == (1, 0), second.notes
    assert len(_entries(tmp_path / rel)) == 1


def test_render_cache_never_stores_private_fields(tmp_path):
    """A caller's private field (e.g. ``_onepass_audit``, popped by the caller) must not be written into a
    render cache entry, or a later hit would carry it into the exec rows."""
    from prism_fast.execute.cache import RenderCache

    cache = RenderCache(tmp_path)
    row = {"id": "a", "success": False, "error_kind": "exit_nonzero", "_onepass_audit": {"report": {}}}
    assert cache.put("ab" * 32, row)
    hit = cache.get("ab" * 32, tmp_path / "a.mp4")
    assert hit is not None and "_onepass_audit" not in hit and hit["cache_hit"] is True


# ---- the gate: a hit (or the format) only where it gives the script what its own compile gives -------------------

EMC = textwrap.dedent('''
    from manim import *

    class Emc(Scene):
        def construct(self):
            self.add(MathTex(r"E = mc^2"))
            self.wait(0.1)
    ''')
# patches manim's compile path (the static gate refuses the names)
PATCHED = EMC.replace("class Emc", textwrap.dedent('''\
    def refuse(*args, **kwargs):
        raise RuntimeError("the script's own compile")
    utils.tex_file_writing.compile_tex = refuse

    class Emc'''))
# plants a package file where TeX's "." search path finds it first, with nothing the static gate refuses: numpy writes
# it. A plain render reads it (amsmath.sty is not a package any more: LaTeX fails); a hit, or the format (which has
# amsmath preloaded), would not
PLANTED = EMC.replace('self.add(MathTex', 'np.savetxt("amsmath.sty", [1.0])\n        self.add(MathTex')


def test_gate_reads_the_script_text():
    clean = texcache.script_reasons(EMC)
    assert clean == []
    assert texcache.script_reasons(EMC + "\nif __name__ == '__main__':\n    __all__ = ['Emc']\n") == []
    assert texcache.script_reasons(EMC.replace("self.wait(0.1)", "self.wait(0.1 + 0 * self.time)")) == []
    assert texcache.script_reasons(EMC.replace("self.wait(0.1)", "super().__init__()")) == []
    assert "tex_path:tex_file_writing" in texcache.script_reasons(PATCHED)
    assert "tex_path:compile_tex" in texcache.script_reasons(PATCHED)
    assert texcache.script_reasons(PLANTED) == []  # (decided at run time: the next test)
    for src, reason in (("import os\n", "import:os"), ("import subprocess\n", "import:subprocess"),
                        ("config.media_dir = 'x'\n", "tex_path:media_dir"),
                        ("x = config['tex_dir']\n", "tex_path:tex_dir"),
                        ("f = getattr(np, 'save')\n", "name:getattr"), ("y = utils.file_ops.os\n", "attr:os"),
                        ("y = np.__dict__\n", "attr:__dict__"), ("y = np._core\n", "attr:_core"),
                        ("y = Mobject().get___dict__()\n", "getattr_magic:get___dict__"),
                        ("d = {}\nMobject().set(**d)\n", "dynamic_keywords"), ("e = eval('1')\n", "name:eval")):
        assert reason in texcache.script_reasons(src + EMC), (src, texcache.script_reasons(src + EMC))


def test_process_state_sees_what_the_compile_reads(tmp_path, monkeypatch):
    """The in-process half of the gate, on this process: each change a compile would see is named."""
    import pathlib

    import manim.utils.tex_file_writing as tfw
    from manim import TexTemplate

    work, tex_dir = tmp_path / "work", tmp_path / "work" / "media" / "Tex"
    tex_dir.mkdir(parents=True)
    (tex_dir / "0123456789abcdef.tex").write_text("x")
    monkeypatch.chdir(work)
    state = texcache._ProcessState.now(tfw)
    (work / texcache.LOG_NAME).write_text("")  # the wrapper's own log appears later: not a change
    (work / "__pycache__").mkdir()  # a directory TeX does not search
    assert state.changed(tfw, TexTemplate()) is None and texcache._tex_dir_changed(tex_dir) is None
    monkeypatch.setenv("TEXINPUTS", str(tmp_path))
    assert state.changed(tfw) == "environ"
    monkeypatch.delenv("TEXINPUTS")
    for owner, name in ((tfw, "compile_tex"), (pathlib.PosixPath, "write_bytes"), (TexTemplate, "output_format")):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(owner, name, lambda *a: None)
            assert state.changed(tfw) == "compile_path", name
    assert state.changed(tfw) is None
    import logging

    manim_logger = logging.getLogger("manim")
    manim_logger.addFilter(lambda record: True)  # (manim logs "Writing ..." while it builds the .tex file)
    try:
        assert state.changed(tfw) == "logging"
    finally:
        manim_logger.filters.pop()
    assert state.changed(tfw) is None
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    held = []
    try:  # leave fewer free descriptors than manim's compile could need (counted once: re-listing
        # /proc/self/fd per open is quadratic in the limit, minutes at a soft limit of 20000)
        for _ in range(soft - len(os.listdir("/proc/self/fd")) - texcache.MIN_FREE_FDS + 1):
            held.append(os.open(os.devnull, os.O_RDONLY))
        assert soft - len(os.listdir("/proc/self/fd")) < texcache.MIN_FREE_FDS
        assert state.changed(tfw) == "file_descriptors"
    finally:
        for fd in held:
            os.close(fd)

    class Sub(TexTemplate):
        pass

    assert state.changed(tfw, Sub()) == "template"
    odd = TexTemplate()
    odd.description = Sub  # (a field that is not a plain string)
    assert state.changed(tfw, odd) == "template"
    (tex_dir / "0123456789abcdef.aux").write_text("\\relax")
    assert texcache._tex_dir_changed(tex_dir) == "tex_dir"
    (tex_dir / "0123456789abcdef.aux").unlink()
    (work / "texmf").mkdir()  # TEXMFHOME=~/texmf (the sample's HOME is its directory)
    assert state.changed(tfw) == "working_dir"
    (work / "texmf").rmdir()
    (work / "amsmath.sty").write_text("")
    assert state.changed(tfw) == "working_dir"
    (work / "amsmath.sty").unlink()
    monkeypatch.chdir(tmp_path)
    assert state.changed(tfw) == "cwd"


def test_a_hit_never_depends_on_what_other_samples_compiled(worker_cfg):
    """Once another sample has published a formula, a script that changed its own compile path (patched manim's
    compile, planted a package file) must still get what an uncached render gives it: its row may not depend on
    which samples ran before it."""
    root, cfg, worker = worker_cfg
    warm = [render_one("emc", EMC, root / f"emc{k}", cfg, runner=worker.run) for k in range(3)]
    assert warm[-1]["tex_cache_hits"] >= 1 and warm[-1]["tex_format"] == "on"  # the formula is served now
    for name, src, state, reason in (("patched", PATCHED, "declined", "tex_path:compile_tex"),
                                     ("planted", PLANTED, "on", "runtime:working_dir")):
        cached = render_one(name, src, root / f"{name}_cached", cfg, runner=worker.run)
        plain = render_one(name, src, root / f"{name}_plain", replace(cfg, tex_cache_dir=None), runner=worker.run)
        assert plain["success"] is False  # uncached, the script's change breaks its own compile
        assert (cached["success"], cached["error_kind"]) == (plain["success"], plain["error_kind"])
        last = [scratch_neutral(row["error"], f"render_{name}_").splitlines()[-1] for row in (cached, plain)]
        assert last[0] == last[1]
        assert cached["tex_cache"] == state and cached["tex_cache_hits"] == 0
        assert reason in json.loads(cached["tex_cache_reasons"])


def test_tex_that_reads_the_clock_is_never_cached(worker_cfg):
    root, cfg, worker = worker_cfg
    clock = EMC.replace('r"E = mc^2"', 'r"\\text{\\the\\year}"')
    rows = [render_one("clock", clock, root / f"clock{k}", cfg, runner=worker.run) for k in range(3)]
    assert all(r["success"] for r in rows), rows[0]["error"]
    assert [r["tex_cache_hits"] for r in rows] == [0, 0, 0] and [r["tex_cache_published"] for r in rows] == [0, 0, 0]


# red team of the gate (2026-12-05): routes that pass the static half
COUNTING_TEMPLATE = textwrap.dedent('''
    from manim import *

    class T(TexTemplate):
        reads = []

        @property
        def output_format(self):
            T.reads.append(1)
            return ".dvi"

        @output_format.setter
        def output_format(self, value):
            pass

    class Emc(Scene):
        def construct(self):
            t = T()
            T.reads.clear()
            self.add(MathTex(r"E = mc^2", tex_template=t))
            if len(T.reads) != 2:  # manim's compile reads it twice
                raise ValueError(f"output_format read {len(T.reads)} times")
            self.wait(0.1)
    ''')
PATCHED_PATH = textwrap.dedent('''
    from manim import *

    def refuse(path, data):
        raise RuntimeError("write_bytes called")

    class Emc(Scene):
        def construct(self):
            type(config.get_dir("text_dir")).write_bytes = refuse  # manim's compile never calls it
            self.add(MathTex(r"E = mc^2"))
            self.wait(0.1)
    ''')


def test_only_tex_whose_result_is_its_text_is_cached():
    from manim import TexTemplate

    def source(body, template=None):
        return (template or TexTemplate()).get_texcode_for_expression_in_env(body, "align*").encode()

    for body in (r"E = mc^2", r"\int_0^1 x^2\,dx = \frac{1}{3}", r"\text{Area } = \pi r^2 \quad \\",
                 r"\left( \begin{pmatrix} a & b \\ c & d \end{pmatrix} \right)", r"\vec{v} \cdot \hat{n} \geq 0"):
        assert texcache.cacheable(source(body)), body
    for body in (r"\number\csname time\endcsname", r"\the\year", r"\InputIfFileExists{media/x.tex}{}{}Hello",
                 r"\IfFileExists{victim.py}{YES}{NO}", r"\input{x}", "\\^^74ime", r"\expandafter\x",
                 r"\begin{verbatim}x\end{verbatim}", r"\pdfuniformdeviate 100", r"\def\x{1}\x", r"\catcode`\@=11",
                 r"\@input{x}", r"\directlua{x}", r"\begin{align*}\csname\end{align*}"):
        assert not texcache.cacheable(source(body)), body
    custom = TexTemplate()
    custom.add_to_preamble(r"\usepackage{esvect}")
    assert not texcache.cacheable(source(r"\vv{x}", custom))
    assert not texcache.cacheable(b"\xff\xfe")


def test_template_and_library_changes_take_manims_own_path(worker_cfg):
    """A template subclass whose attribute reads run script code, and a pathlib method only the hit path calls:
    the cached render equals the uncached one (red team of the gate)."""
    root, cfg, worker = worker_cfg
    warm = [render_one("emc", EMC, root / f"emc_again{k}", cfg, runner=worker.run) for k in range(3)]
    assert warm[-1]["tex_cache_hits"] >= 1
    for name, src, reason in (("template", COUNTING_TEMPLATE, "runtime:template"),
                              ("pathlib", PATCHED_PATH, "runtime:compile_path")):
        assert texcache.script_reasons(src) == []
        cached = render_one(name, src, root / f"{name}_cached", cfg, runner=worker.run)
        plain = render_one(name, src, root / f"{name}_plain", replace(cfg, tex_cache_dir=None), runner=worker.run)
        assert (cached["success"], cached["error_kind"]) == (plain["success"], plain["error_kind"]), name
        if plain["success"]:
            assert _sha(cached["video_path"]) == _sha(plain["video_path"])
        assert cached["tex_cache_hits"] == 0 and reason in json.loads(cached["tex_cache_reasons"]), cached


def test_tex_that_reads_a_file_is_never_served(worker_cfg):
    """A formula that reads a file the script can plant: published by clean samples, it would serve their result
    to one that planted the file (red team of the gate). Only TeX whose result is its text is cached."""
    root, cfg, worker = worker_cfg
    reader = EMC.replace('self.add(MathTex(r"E = mc^2"))',
                         'self.add(Tex(r"\\InputIfFileExists{media/x.tex}{}{}Hello"))')
    planter = reader.replace("self.add(Tex", 'np.savetxt("media/x.tex", [0.0], header=r"\\errmessage{planted}", '
                                             'comments="")\n        self.add(Tex')
    rows = [render_one("reader", reader, root / f"reader{k}", cfg, runner=worker.run) for k in range(3)]
    assert all(r["success"] for r in rows) and [r["tex_cache_published"] for r in rows] == [0, 0, 0]
    cached = render_one("planter", planter, root / "planter_cached", cfg, runner=worker.run)
    plain = render_one("planter", planter, root / "planter_plain", replace(cfg, tex_cache_dir=None), runner=worker.run)
    assert plain["success"] is False and (cached["success"], cached["error_kind"]) == (False, plain["error_kind"])


# red team 2 (2026-12-05): script code inside manim's .tex building, descriptors, the format's dump name
RED_TEAM_2 = {
    "logger_filter": textwrap.dedent('''
        from manim import *

        def plant(record):
            if str(record.msg).startswith("Writing"):  # manim's log line while it writes the .tex file
                np.frombuffer(b"not a tfm file at all", dtype=np.uint8).tofile("msam10.tfm")
            return True

        class A(Scene):
            def construct(self):
                logger.addFilter(plant)
                self.add(MathTex(r"E = mc^2"))
                self.wait(0.1)
        '''),
    "str_subclass": textwrap.dedent('''
        from manim import *

        class Env(str):
            def __radd__(self, other):  # runs inside manim's text building
                np.frombuffer(b"not a tfm file at all", dtype=np.uint8).tofile("msam10.tfm")
                return other + str(self)

        class E(Scene):
            def construct(self):
                self.add(MathTex(r"E = mc^2", tex_environment=Env("align*")))
                self.wait(0.1)
        '''),
    "descriptors": textwrap.dedent('''
        from manim import *

        class B(Scene):
            def construct(self):
                held = []
                try:
                    while len(held) < 5000:
                        held.append(np.memmap("manim.cfg", mode="r"))
                except Exception:
                    pass
                held.pop()
                err = "ok"
                try:
                    MathTex(r"E = mc^2")
                except Exception as e:
                    err = repr(e)[:120]
                held.clear()
                if err != "ok":
                    raise RuntimeError(err)
                self.wait(0.1)
        '''),
    "format_name": textwrap.dedent(r'''
        from manim import *

        class C(Scene):
            def construct(self):
                t = Tex(r"\ExplSyntaxOn\str_if_eq:VVTF\g_file_curr_name_str\c_sys_jobname_str{plain}{format}"
                        r"\ExplSyntaxOff")
                self.add(t)
                if len(t[0]) != 5:
                    raise ValueError(f"the format was used: {len(t[0])} glyphs")
                self.wait(0.1)
        '''),
}


@pytest.mark.parametrize("name", sorted(RED_TEAM_2))
def test_red_team_2_routes_render_as_uncached(worker_cfg, name):
    """With the formula published by clean samples (and the format ready), each script's row equals its uncached
    render: declined by the gate (a logger filter, a str subclass's method, np.memmap), or a source neither the
    format nor the cache takes (expl3 reads the format's dump name)."""
    root, cfg, worker = worker_cfg
    for k in range(3):
        render_one("emc", EMC, root / f"rt2_{name}_emc{k}", cfg, runner=worker.run)
    src = RED_TEAM_2[name]
    cached = render_one(name, src, root / f"rt2_{name}_cached", cfg, runner=worker.run)
    plain = render_one(name, src, root / f"rt2_{name}_plain", replace(cfg, tex_cache_dir=None), runner=worker.run)
    assert (cached["success"], cached["error_kind"]) == (plain["success"], plain["error_kind"]), cached["error"]
    if plain["success"]:
        assert _sha(cached["video_path"]) == _sha(plain["video_path"])
    else:
        last = [scratch_neutral(row["error"], f"render_{name}_").splitlines()[-1] for row in (cached, plain)]
        assert last[0] == last[1]
    assert cached["tex_cache_hits"] == 0 and cached["tex_format_compiles"] == 0


def test_a_log_line_nested_past_the_parsers_depth_is_skipped(worker_cfg, tmp_path):
    """A script writes a JSON line nested deeper than the parser recurses into its own TeX log: the readers skip it
    (as any unreadable line) instead of raising RecursionError, and the render's row is an ordinary one."""
    root, cfg, worker = worker_cfg
    deep = "[" * 200000
    log_path = tmp_path / texcache.LOG_NAME
    log_path.write_text(deep + "\n" + json.dumps({"event": "declined", "why": "x"}) + "\n", encoding="utf-8")
    assert texcache.declined_reasons(log_path) == ["runtime:x"]
    assert texcache.own_hit_count(log_path) == 0
    hostile = textwrap.dedent(f'''
        import numpy as np
        from manim import *

        class Deep(Scene):
            def construct(self):
                # (through NumPy and a name in pieces: what the TeX cache's gate lets through)
                log_name = {texcache.LOG_NAME[:5]!r} + {texcache.LOG_NAME[5:]!r}
                np.frombuffer(b"[" * 200000 + b"\\n", dtype=np.uint8).tofile(log_name)
                self.add(MathTex("q^{{7}}"))
                self.wait(0.2)
        ''')
    row = render_one("deep", hostile, root / "deep", cfg, runner=worker.run)
    assert row["success"] and row["exit_status"] == 0, row["error"]
    assert row["tex_cache"] != "declined" and row["tex_format_compiles"] + row["tex_cache_hits"] >= 1, row
