"""The LaTeX format of manim's default preamble (execute/texformat.py): byte-identical SVGs, renders, error text and
audit reports with and without it; used only for manim's default template; rebuilt when its file changes."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from prism_fast.execute import texcache, texformat
from prism_fast.execute.render import render_one
from tests.scratch_names import scratch_neutral

# what a generated script typesets: text with ligatures and accents, maths in manim's align*, amssymb, matrices,
# a tall display, a single letter, sizes and the date, braces and arrows
EXPRESSIONS = [
    ("Hello, Wörld -- fi ffl? \\textbf{bold} \\emph{it} naïve café", None),
    ("\\int_0^1 x^2\\,dx = \\frac{1}{3}", "align*"),
    ("\\mathbb{R} \\ni \\sqrt[3]{\\alpha} \\leqslant \\varnothing", "align*"),
    ("\\begin{bmatrix} 1 & 2 \\\\ 3 & 4 \\end{bmatrix}", "align*"),
    ("\\sum_{k=1}^{n} \\binom{n}{k} = 2^n", "align*"),
    ("$x$ and $\\displaystyle\\lim_{x\\to\\infty} e^{-x} = 0$", "center"),
    ("x", None),
    ("\\underbrace{a+b}_{c} \\quad \\overrightarrow{AB}", "align*"),
    ("{\\Large Big} {\\tiny small} \\S 3 \\today", None),
]


def _source(expression: str, environment: str | None) -> str:
    from manim import TexTemplate

    t = TexTemplate()
    return t.get_texcode_for_expression_in_env(expression, environment) if environment else \
        t.get_texcode_for_expression(expression)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("fmt")
    info, why = texformat.build(root)
    assert info is not None, why
    return root, info


def test_the_default_preamble_is_manims():
    from manim import TexTemplate

    body = TexTemplate().body
    assert texformat.preamble_of(body) == texformat.DEFAULT_PREAMBLE
    part = texformat.body_of(body, texformat.DEFAULT_PREAMBLE)
    # the document part keeps its line numbers: as many lines as the full file, \begin{document} on the same line
    assert part.count("\n") == body.count("\n")
    assert part.splitlines().index(texformat.BEGIN_DOCUMENT) == body.splitlines().index(texformat.BEGIN_DOCUMENT)


def test_svgs_are_byte_identical_with_the_format(built, tmp_path):
    """Not only up to glyph order: the very bytes (a format that preloads fonts would rename the glyphs)."""
    _root, info = built
    for k, (expr, env) in enumerate(EXPRESSIONS):
        src = _source(expr, env)
        plain_dir, fast_dir = tmp_path / f"p{k}", tmp_path / f"f{k}"
        plain_dir.mkdir()
        fast_dir.mkdir()
        (plain_dir / "e.tex").write_text(src, encoding="utf-8")
        (fast_dir / "e.tex").write_text(src, encoding="utf-8")
        plain = texformat._svg(plain_dir / "e.tex", None)
        fast = texformat._svg(fast_dir / "e.tex", (str(info.path), info.preamble))
        assert plain is not None, expr
        assert fast == plain, expr


def test_the_format_is_stored_uncompressed_and_gives_the_same_dvi(built, tmp_path):
    """TeX reads a format through zlib, which passes an uncompressed file through: the format is stored inflated
    (no 18 MB inflation at each start) and the DVI is the one the gzip-compressed dump gives."""
    import gzip

    _root, info = built
    raw = info.path.with_suffix(".fmt").read_bytes()
    assert raw[:2] != b"\x1f\x8b" and len(raw) > 1_000_000
    packed = tmp_path / "packed" / f"{info.name}.fmt"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(raw, compresslevel=1))
    src = _source("\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}", "align*")
    body = texformat.body_of(src, info.preamble)
    dvis = []
    for k, fmt in enumerate((info.path, packed.with_suffix(""))):
        d = tmp_path / f"d{k}"
        d.mkdir()
        (d / "e.tex").write_text(body, encoding="utf-8")
        import subprocess

        # (the DVI's comment holds the minute: both runs at one fixed date)
        env = {**os.environ, "SOURCE_DATE_EPOCH": "1700000000", "FORCE_SOURCE_DATE": "1"}
        subprocess.run(texformat.latex_command(str(fmt), d / "e.tex", d), stdout=subprocess.DEVNULL, check=True,
                       env=env)
        dvis.append((d / "e.dvi").read_bytes())
    assert dvis[0] == dvis[1]


def test_build_refuses_a_format_whose_probes_differ(tmp_path):
    """The self-check is real: a preamble that sets ``\\everyjob`` runs it when a job starts from its format, not in
    a plain run, so the probe's bold text gets another mark with the format: refused."""
    pre = texformat.DEFAULT_PREAMBLE + ("\\def\\jobmark{A}\\everyjob{\\def\\jobmark{B}}\\let\\oldbf\\textbf"
                                        "\\renewcommand{\\textbf}[1]{\\oldbf{#1\\jobmark}}\n")
    info, why = texformat.build(tmp_path, pre)
    assert info is None and "probe 0 gives another SVG with the format" in why, why
    info, why = texformat.build(tmp_path / "default")
    assert info is not None, why


def test_a_sample_gets_the_format_only_from_a_protected_view(tmp_path):
    """The parent hands the format's path over in the sample's environment (no index file a script could edit);
    a view scripts could write (``protected=False``) gets none, and the row says why."""
    view = texcache.prepare_cache_dir(tmp_path / "cache", tex_format=True)
    env, state = texcache.sample_env(view, "/inside", tmp_path / "log", True, protected=True)
    (fmt,) = (view / "fmt").glob("*.fmt")
    assert state == "on" and env[texcache.ENV_FORMAT] == "/inside/fmt/" + fmt.stem
    env, state = texcache.sample_env(view, "/inside", tmp_path / "log", True, protected=False)
    assert state == "unavailable" and texcache.ENV_FORMAT not in env
    env, state = texcache.sample_env(view, "/inside", tmp_path / "log", False, protected=True)
    assert state == "off" and texcache.ENV_FORMAT not in env
    # wanted but not built yet (the pipeline's head start): no format, and the row says why -- unless the view is
    # not protected, where the format would not be used anyway
    env, state = texcache.sample_env(view, "/inside", tmp_path / "log", True, protected=True, deferred=True)
    assert state == "not_ready" and texcache.ENV_FORMAT not in env
    env, state = texcache.sample_env(view, "/inside", tmp_path / "log", True, protected=False, deferred=True)
    assert state == "unavailable" and texcache.ENV_FORMAT not in env
    # in the sample: only a path named after the default preamble's format is taken
    assert texformat.usable("/inside/fmt/" + fmt.stem)
    assert not texformat.usable("/inside/fmt/other") and not texformat.usable("")


SCENE = textwrap.dedent('''
    from manim import *

    class Eq(Scene):
        def construct(self):
            eq = MathTex(r"E = mc^2", r"\\int_0^1 x\\,dx").to_edge(UP)
            t = Tex(r"a $\\sqrt{2}$ b")
            self.play(Write(eq), FadeIn(t), run_time=0.4)
            self.add(MathTex(r"\\mathbb{N}").to_edge(DOWN))
            self.wait(0.2)
    ''')

BAD = textwrap.dedent('''
    from manim import *

    class Bad(Scene):
        def construct(self):
            self.add(MathTex(r"x = 1"))
            self.play(Write(MathTex(r"\\notacommand{y}")))
    ''')

CUSTOM = textwrap.dedent('''
    from manim import *

    class Custom(Scene):
        def construct(self):
            tpl = TexTemplate()
            tpl.add_to_preamble(r"\\newcommand{\\R}{\\mathbb{R}}")
            self.play(Write(MathTex(r"\\R^2", tex_template=tpl)), run_time=0.3)
    ''')


# red team: kpathsea looks for ``X.body.tex`` before ``X.body``, so a body file next to the .tex file could be
# replaced by the script; and a failed attempt's stderr (here mktextfm's, for a font that does not exist) must not
# reach the sample's stderr twice
PLANTED = textwrap.dedent('''
    from pathlib import Path
    from manim import *
    from manim.utils.tex_file_writing import tex_hash

    class Planted(Scene):
        def construct(self):
            code = config.tex_template.get_texcode_for_expression_in_env("y = 2", "align*")
            tex_dir = Path(config.media_dir) / "Tex"
            tex_dir.mkdir(parents=True, exist_ok=True)
            evil = "\\\\begin{document}HACKED\\\\end{document}"
            for name in (".body.tex", ".body", "/prism_fmt.tex"):
                try:
                    (tex_dir / (tex_hash(code) + name)).write_text(evil)
                except OSError:
                    pass
            self.play(Write(MathTex("y = 2")), run_time=0.3)
    ''')

FONT = textwrap.dedent('''
    from manim import *

    class Font(Scene):
        def construct(self):
            self.add(Tex(r"\\font\\qq=qqnonexistentfont at 10pt \\qq a"))
    ''')


def _sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.mark.parametrize("name,script", [("eq", SCENE), ("bad", BAD), ("custom", CUSTOM), ("planted", PLANTED),
                                         ("font", FONT)])
def test_renders_are_identical_with_and_without_the_format(worker_cfg, name, script):
    """Video bytes, success, the error text of a LaTeX error (the format's failed attempt is undone and manim's own
    compile prints it) and the output sizes equal a render with the format off; the row says which it was. A render
    with the format deferred (the head start's before the driver's format is built) is a render without it."""
    root, cfg, worker = worker_cfg
    fast = render_one(name, script, root / f"fast_{name}", cfg, runner=worker.run)
    plain = render_one(name, script, root / f"plain_{name}", replace(cfg, tex_format=False), runner=worker.run)
    deferred = render_one(name, script, root / f"deferred_{name}", replace(cfg, tex_format_deferred=True),
                          runner=worker.run)
    if name == "planted":  # it names manim's compile path: the TeX cache's gate declines cache and format (texcache.py)
        assert fast["tex_format"] == plain["tex_format"] == deferred["tex_format"] == "declined"
    else:
        assert fast["tex_format"] == "on" and plain["tex_format"] == "off" and deferred["tex_format"] == "not_ready"
    assert deferred["tex_format_compiles"] == plain["tex_format_compiles"] == 0
    assert deferred["success"] == plain["success"]
    if plain["success"]:
        assert _sha(deferred["video_path"]) == _sha(plain["video_path"])
    assert fast["success"] == plain["success"] == (name not in ("bad", "font")), (fast["error"], plain["error"])
    if fast["success"]:
        assert _sha(fast["video_path"]) == _sha(plain["video_path"])
    else:  # manim's LaTeX error, printed by its own compile after the format's attempt failed
        assert "latex error converting to dvi" in fast["stderr_tail"].replace("\n", "")
    norm = (lambda t: scratch_neutral(t or "", f"render_{name}_"))  # the scratch dir's random name
    assert norm(fast["stderr_tail"]) == norm(plain["stderr_tail"]) == norm(deferred["stderr_tail"])
    assert (fast["stdout_bytes"], fast["stderr_bytes"]) == (plain["stdout_bytes"], plain["stderr_bytes"]) == \
        (deferred["stdout_bytes"], deferred["stderr_bytes"])


def test_the_format_is_used_only_for_the_default_template(worker_cfg, monkeypatch, tmp_path):
    """The sample's TeX log (kept by a probe of the wrapper in this process) records a format compile for each
    default-template expression and none for a custom preamble; a failing one falls back."""
    root, cfg, _worker = worker_cfg
    view = texcache.prepare_cache_dir(cfg.tex_cache_dir, tex_format=True)
    log = tmp_path / "log.jsonl"
    import manim.utils.tex_file_writing as tfw
    from manim import TexTemplate, config

    saved = (tfw.tex_to_svg_file, config.media_dir)
    try:
        (tmp_path / "media").mkdir()
        config.media_dir = str(tmp_path / "media")
        (fmt,) = (view / "fmt").glob("*.fmt")
        texcache.install(str(view), str(log), format_path=str(fmt.with_suffix("")))
        tfw.tex_to_svg_file("x^2", "align*", TexTemplate())
        tpl = TexTemplate()
        tpl.add_to_preamble("\\usepackage{xcolor}")
        tfw.tex_to_svg_file("y^2", "align*", tpl)
        with pytest.raises(ValueError):
            tfw.tex_to_svg_file("\\frac{1}", "align*", TexTemplate())  # (a cacheable source that fails)
    finally:
        tfw.tex_to_svg_file, config.media_dir = saved
    events = [json.loads(line)["event"] for line in log.read_text().splitlines()]
    assert events.count("format") == 1 and events.count("format_fallback") == 1
    assert texcache.format_compiles(log) == 1 and texcache.format_fallbacks(log) == 1  # (rows and their warning)
    assert events.count("miss") == 2  # the default one and the custom one; the failure raised before logging
    assert events.count("svg_fast") == 1  # the format's DVI converted without PostScript start-up (texsvg.py)
    assert all(p.is_file() for p in (tmp_path / "media" / "Tex").iterdir())  # no body directory left behind


def test_a_changed_format_file_is_rebuilt(tmp_path, caplog):
    cache = tmp_path / "cache"
    view = texcache.prepare_cache_dir(cache, tex_format=True)
    assert texcache.format_state(view) == "on"
    (fmt,) = (view / "fmt").glob("*.fmt")
    with open(fmt, "r+b") as f:  # an edit in place keeps the inode and can keep the size and mtime
        st = os.stat(fmt)
        f.seek(100)
        f.write(b"\0")
    os.utime(fmt, ns=(st.st_atime_ns, st.st_mtime_ns))
    with caplog.at_level(logging.WARNING):
        assert texcache.prepare_cache_dir(cache, tex_format=True) == view
    assert "changed after its self-check" in caplog.text
    (again,) = (view / "fmt").glob("*.fmt")
    assert texcache.format_state(view) == "on"
    info = next(v.fmt for v in texcache._VIEWS.values() if v.path == view)
    assert texformat.unchanged(info) and hashlib.sha256(again.read_bytes()).hexdigest() == info.sha256


def test_a_prebuilt_format_is_taken_only_as_built(built, tmp_path, caplog):
    """The driver builds the format while Ray starts (pipeline/run.py) and hands (file, sha256) to its workers: a
    worker takes a copy whose hash it checks; another file or another hash is refused and the worker builds its
    own, with a log line."""
    _root, info = built
    src = info.path.with_suffix(".fmt")
    taken, why = texformat.adopt(tmp_path / "a", src, info.sha256)
    assert taken is not None, why
    assert taken.sha256 == info.sha256 and taken.path != info.path and texformat.unchanged(taken)
    assert os.stat(taken.path.with_suffix(".fmt")).st_ino != os.stat(src).st_ino  # a copy, not a link
    assert texformat.adopt(tmp_path / "b", src, "0" * 64)[0] is None
    other = tmp_path / "other.fmt"
    other.write_bytes(src.read_bytes())
    assert texformat.adopt(tmp_path / "c", other, info.sha256)[0] is None
    with caplog.at_level(logging.INFO, logger="prism_fast.execute.texcache"):
        view = texcache.prepare_cache_dir(tmp_path / "cache", tex_format=True, prebuilt=(str(src), "f" * 64))
    assert "was not taken" in caplog.text and texcache.format_state(view) == "on"  # built its own instead
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="prism_fast.execute.texcache"):
        view2 = texcache.prepare_cache_dir(tmp_path / "cache2", tex_format=True, prebuilt=(str(src), info.sha256))
    assert texcache.format_state(view2) == "on" and "taken from" in caplog.text


def test_a_published_format_is_taken_by_a_later_run_only_as_published(built, tmp_path):
    """The driver keeps its self-checked format under the TeX cache root for later runs (texformat.publish), tagged
    under the cache's integrity key: a later run takes it (no build, no self-check) only when its bytes hash to the
    recorded sha256 and the tag verifies for this very cache root; anything else is built again."""
    import shutil

    _root, info = built
    key, other_key = b"k" * 32, b"o" * 32
    cache = tmp_path / "tex" / "envA"
    assert texformat.published(cache, key) is None  # nothing yet
    assert texformat.publish(info, cache, key)
    got = texformat.published(cache, key)
    assert got is not None and got.sha256 == info.sha256 and got.name == info.name
    assert got.path.with_suffix(".fmt").read_bytes() == info.path.with_suffix(".fmt").read_bytes()
    assert texformat.published(cache, other_key) is None  # a tag under another key
    moved = tmp_path / "tex" / "envB"  # another render environment's cache: the tag names the root it was made for
    shutil.copytree(cache, moved)
    assert texformat.published(moved, key) is None
    fmt = cache / texformat.PUBLISHED_DIR / f"{info.name}.fmt"
    data = bytearray(fmt.read_bytes())
    data[len(data) // 2] ^= 1
    fmt.write_bytes(bytes(data))
    assert texformat.published(cache, key) is None  # a changed file
    record = json.loads((cache / texformat.PUBLISHED_DIR / f"{info.name}.json").read_text())
    record["sha256"] = hashlib.sha256(bytes(data)).hexdigest()  # its record edited to match: the tag does not
    (cache / texformat.PUBLISHED_DIR / f"{info.name}.json").write_text(json.dumps(record))
    assert texformat.published(cache, key) is None
    assert texformat.publish(info, cache, key) and texformat.published(cache, key).sha256 == info.sha256


def test_a_published_format_is_not_taken_once_a_file_it_was_dumped_from_changed(tmp_path):
    """The published format skips a later run's build and self-check, and its cache root names the render
    environment by `latex --version` only: a TeX package updated in place (tlmgr, a distribution's point release)
    keeps that root. The format froze the old package; the plain compile it must equal reads the new one. So the tag
    covers the files the dump read, and a later run re-hashes them before it takes the format. Here the preamble
    reads a file of ours, which then changes (what an updated package does to the format's inputs)."""
    import shutil
    import tempfile

    inputs = Path(tempfile.mkdtemp(prefix="texin", dir="/tmp"))  # (a path TeX reads as is: no `_` or spaces)
    try:
        defs = inputs / "defs.tex"
        defs.write_text("\\newcommand{\\prismprobe}{A}\n", encoding="utf-8")
        preamble = texformat.DEFAULT_PREAMBLE + f"\\input{{{defs.as_posix()}}}\n"
        info, why = texformat.build(tmp_path / "build", preamble)
        assert info is not None, why
        key = b"k" * 32
        cache = tmp_path / "tex" / "envA"
        assert texformat.publish(info, cache, key)
        assert texformat.published(cache, key, preamble) is not None
        defs.write_text("\\newcommand{\\prismprobe}{B}\n", encoding="utf-8")  # "updated": same TeX, same root
        assert texformat.published(cache, key, preamble) is None
        assert str(defs) in dict(info.inputs)  # (the dump's own record of what it read)
        defs.write_text("\\newcommand{\\prismprobe}{A}\n", encoding="utf-8")
        assert texformat.published(cache, key, preamble) is not None
        # and the record of the inputs is under the tag: dropping a file from it does not get past the check
        record_file = cache / texformat.PUBLISHED_DIR / f"{info.name}.json"
        record = json.loads(record_file.read_text())
        record["inputs"] = [i for i in record["inputs"] if i[0] != str(defs)]
        record_file.write_text(json.dumps(record))
        defs.write_text("\\newcommand{\\prismprobe}{B}\n", encoding="utf-8")
        assert texformat.published(cache, key, preamble) is None
    finally:
        shutil.rmtree(inputs, ignore_errors=True)
