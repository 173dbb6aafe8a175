"""A precompiled LaTeX format of manim's default TeX preamble (issue #19 item 6: render cost).

Why: ``latex`` spends much of a ``Tex``/``MathTex`` compile loading the preamble's packages (``standalone``,
``babel``, ``amsmath``, ``amssymb``), for every expression, in every render and every separate audit. A format is
TeX's memory dumped at a point of a run; one dumped right after the preamble (``etex -ini "&latex" <preamble>\\dump``)
lets a compile start there. Measured here (warm caches): ``latex`` on manim's template 0.13-0.15 CPU-s, from the
format 0.09-0.10; inside the sandbox, 12 ``MathTex`` of one scene 4.35 → 3.50 CPU-s of the whole render (≈ 0.07 CPU-s
per compile). dvisvgm (≈ 0.1 s) is unchanged.

How a compile uses it: the part of the ``.tex`` file from its first ``\\begin{document}`` on is written next to it
(as ``<hash>.tex`` in a private directory, removed afterwards, after one comment line per preamble line) and compiled
with ``-fmt=<format> -progname=latex -jobname=<hash>`` and manim's other options,
so the ``.dvi`` has manim's name and TeX runs the document part from the very state the preamble leaves. TeX's state
at ``\\begin{document}`` depends only on the text before it, so the format is used only where that text equals,
byte for byte, the preamble it was dumped from. (``mylatexformat``, which skips the preamble of the full file instead,
was tried: its dump loads fonts the plain run does not, so the DVI numbers its fonts differently and dvisvgm names
the glyphs differently. This way the SVG is byte-identical.)

Where it is not used, the compile is manim's own, unchanged:

* the template is not manim's default one (another preamble);
* the compiler is not ``latex`` with ``.dvi`` output, or the script keeps its intermediate files
  (``no_latex_cleanup``: the ``.log`` would name the format);
* the compile with the format fails (a non-zero exit or no ``.dvi``): its outputs are removed and manim's own compile
  runs, so a LaTeX error prints exactly what it prints without the format.

Who builds it: the trusted parent, once per cache view (:func:`build`), with the system's ``etex`` on a preamble that
is ours, never a script's. Before it is used it passes a self-check: probe expressions compiled with and without it
must give byte-identical SVGs; otherwise it is not used, with a warning, and rows say ``tex_format=failed``. A sample
sees it read-only inside the verified TeX cache view (texcache.py), which hands its path over in the sample's
environment. A script that overrides a package in its own ``TEXMFHOME`` gets the standard package with the format,
as it already does from a verified cache entry.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

FMT_DIR = "fmt"
# manim 0.19.0's TexTemplate(): documentclass + preamble, then "\begin{document}" (tests check this against manim)
DEFAULT_PREAMBLE = ("\\documentclass[preview]{standalone}\n\\usepackage[english]{babel}\n\\usepackage{amsmath}\n"
                    "\\usepackage{amssymb}\n")
BEGIN_DOCUMENT = "\\begin{document}"
# what the self-check compiles both ways: text, inline and display maths (manim's MathTex uses align*), symbols of
# amssymb, an accented letter through babel's hyphenation and a tall fraction that drives the preview box
PROBES = (
    "\\begin{center}\nHello, Wörld -- fi ffl? \\textbf{bold} \\emph{it}\n\\end{center}",
    "\\begin{align*}\n\\int_0^1 x^2\\,dx = \\frac{1}{3},\\quad \\mathbb{R} \\ni \\sqrt[3]{\\alpha}\n\\end{align*}",
    "\\begin{center}\n$\\displaystyle\\sum_{k=1}^{n} \\binom{n}{k} \\leqslant"
    " \\lim_{x\\to\\infty} e^{x}$\n\\end{center}",
    "line \\the\\inputlineno\\ of \\jobname",  # where the document stands in its file, and under which name
)
BUILD_TIMEOUT_S = 60.0


_DEFS = re.compile(rb"<defs>(.*?)</defs>", re.S)
_DEF_ITEM = re.compile(rb"<(\w+) id='[^']*'[^>]*?/>", re.S)


def canonical_svg(data: bytes) -> bytes:
    """dvisvgm writes the glyph definitions of ``<defs>`` in an order that varies from run to run (seen here: the
    same .tex compiled twice gave the same glyphs with two fonts' blocks swapped). Glyphs are only referenced by
    id (``<use xlink:href='#g3-101'>``), so that order cannot change the parsed mobject. The canonical form sorts
    the self-closing elements inside ``<defs>``; everything else must match byte for byte. A ``<defs>`` holding
    anything but self-closing elements and whitespace is left as it is."""
    m = _DEFS.search(data)
    if not m:
        return data
    body = m.group(1)
    items = [x.group(0) for x in _DEF_ITEM.finditer(body)]
    if not items or _DEF_ITEM.sub(b"", body).strip():
        return data
    return data[:m.start(1)] + b"\n".join(sorted(items)) + data[m.end(1):]


def compile_commands(tex_file: Path, compiler: str, output_format: str) -> list[list[str]]:
    """The two commands manim 0.19.0 runs for one expression (compile_tex + convert_to_svg)."""
    out_dir = tex_file.parent
    if compiler in ("latex", "pdflatex", "luatex", "lualatex"):
        first = [compiler, "-interaction=batchmode", f"-output-format={output_format[1:]}", "-halt-on-error",
                 f"-output-directory={out_dir.as_posix()}", f"{tex_file.as_posix()}"]
    elif compiler == "xelatex":
        outflag = ["-no-pdf"] if output_format == ".xdv" else []
        first = ["xelatex", *outflag, "-interaction=batchmode", "-halt-on-error",
                 f"-output-directory={out_dir.as_posix()}", f"{tex_file.as_posix()}"]
    else:
        raise ValueError(f"tex compiler {compiler!r} is not supported by the cache")
    dvi = tex_file.with_suffix(output_format)
    second = ["dvisvgm", *(["--pdf"] if output_format == ".pdf" else []), "--page=1", "--no-fonts",
              "--verbosity=0", f"--output={dvi.with_suffix('.svg').as_posix()}", f"{dvi.as_posix()}"]
    return [first, second]


def preamble_of(source: str) -> str | None:
    """The part of a ``.tex`` source before its first ``\\begin{document}`` (None without one)."""
    i = source.find(BEGIN_DOCUMENT)
    return None if i < 0 else source[:i]


def format_name(preamble: str) -> str:
    return "prism_" + hashlib.sha256(preamble.encode("utf-8")).hexdigest()[:16]


def body_of(source: str, preamble: str) -> str:
    """What a compile with the format of ``preamble`` reads: the source from its ``\\begin{document}`` on, after one
    comment line per line of the preamble, so that ``\\inputlineno`` and the line numbers of errors are those of
    the full file (red team: a document can typeset or test its line number)."""
    return "%\n" * preamble.count("\n") + source[len(preamble):]


def latex_command(fmt_path: str, body_file: Path, out_dir: Path) -> list[str]:
    """manim 0.19.0's ``latex`` command line for a ``.dvi`` (:func:`compile_commands`) on the body file (named like the
    ``.tex`` file, in another directory), started from the format. ``-progname=latex``: kpathsea would otherwise take
    the format's path as the program name and skip texmf.cnf's ``.latex`` settings (search paths), as a plain
    ``latex`` run has them."""
    return ["latex", f"-fmt={fmt_path}", "-progname=latex", f"-jobname={body_file.stem}", "-interaction=batchmode",
            "-output-format=dvi", "-halt-on-error", f"-output-directory={out_dir.as_posix()}",
            f"{body_file.as_posix()}"]


@dataclass(frozen=True)
class FormatInfo:
    """A built, self-checked format: ``path`` is the format file without its ``.fmt`` suffix (``-fmt=`` takes it
    so); ``ident`` the file's (inode, size, mtime, ctime) when it was checked."""

    name: str
    preamble: str
    path: Path
    sha256: str
    ident: tuple
    build_s: float
    # (path, sha256) of every file outside the build directory that TeX read while it dumped the format (its
    # ``-recorder`` list: latex.fmt, the packages of the preamble, their language files): what the format froze
    inputs: tuple = ()


def _ident(path: Path) -> tuple | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _run(cmd: list[str], cwd: Path) -> int:
    # (key by key: the main thread may set or remove a variable meanwhile, e.g. around ray.init)
    env = {k: v for k in list(os.environ) if (v := os.environ.get(k)) is not None
           and not k.startswith(("TEXMF", "TEXINPUTS"))}
    env["HOME"] = str(cwd)  # no personal texmf tree of whoever runs us
    try:
        return subprocess.run(cmd, cwd=str(cwd), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=BUILD_TIMEOUT_S).returncode
    except (OSError, subprocess.TimeoutExpired):
        return -1


def _svg(tex_file: Path, fmt: tuple[str, str] | None) -> bytes | None:
    """Compile ``tex_file`` as manim does, or from the format ``fmt`` = (path, preamble); the SVG's bytes or None."""
    first, second = compile_commands(tex_file, "latex", ".dvi")
    if fmt is not None:
        (tex_file.parent / "body").mkdir(exist_ok=True)
        body = tex_file.parent / "body" / tex_file.name
        body.write_text(body_of(tex_file.read_text(encoding="utf-8"), fmt[1]), encoding="utf-8")
        first = latex_command(fmt[0], body, tex_file.parent)
    if _run(first, tex_file.parent) != 0 or _run(second, tex_file.parent) != 0:
        return None
    try:
        return tex_file.with_suffix(".svg").read_bytes()
    except OSError:
        return None


def build(dest: Path, preamble: str = DEFAULT_PREAMBLE) -> tuple[FormatInfo | None, str]:
    """Dump ``preamble`` into ``<dest>/fmt/<name>.fmt`` and self-check it; (info, "") or (None, why not).
    Trusted code only: the preamble is ours, never a script's."""
    t0 = time.perf_counter()
    name = format_name(preamble)
    fmt_dir = Path(dest) / FMT_DIR
    fmt_dir.mkdir(parents=True, exist_ok=True)
    if shutil.which("etex") is None or shutil.which("latex") is None:
        return None, "etex/latex not found"
    with tempfile.TemporaryDirectory(prefix="texfmt_", dir=str(fmt_dir)) as tmp:
        work = Path(tmp)
        seed = work / f"{name}.tex"
        seed.write_text(preamble + "\\dump\n", encoding="utf-8")
        rc = _run(["etex", "-ini", "-interaction=batchmode", "-halt-on-error", "-recorder", f"-jobname={name}",
                   "&latex", seed.name], work)
        built = work / f"{name}.fmt"
        if rc != 0 or not built.is_file():
            return None, f"format dump failed (etex exit {rc})"
        if not _inflate(built):
            return None, "format dump unreadable (a broken gzip stream)"
        # (without the recorder's list the format still serves this run; it is just not kept for later ones)
        inputs = _recorded_inputs(work / f"{name}.fls", work) or ()
        for i, probe in enumerate(PROBES):
            source = preamble + BEGIN_DOCUMENT + "\n" + probe + "\n\\end{document}"
            plain_dir, fmt_dir_i = work / f"plain{i}", work / f"fmt{i}"
            plain_dir.mkdir()
            fmt_dir_i.mkdir()
            (plain_dir / "probe.tex").write_text(source, encoding="utf-8")
            (fmt_dir_i / "probe.tex").write_text(source, encoding="utf-8")
            plain = _svg(plain_dir / "probe.tex", None)
            fast = _svg(fmt_dir_i / "probe.tex", (str(work / name), preamble))
            if plain is None:
                return None, f"self-check: probe {i} does not compile without the format"
            if fast is None or canonical_svg(fast) != canonical_svg(plain):
                return None, f"self-check: probe {i} gives another SVG with the format"
        final = fmt_dir / f"{name}.fmt"
        os.replace(built, final)
    sha = hashlib.sha256(final.read_bytes()).hexdigest()
    info = FormatInfo(name, preamble, final.with_suffix(""), sha, _ident(final), time.perf_counter() - t0, inputs)
    return info, ""


def _inflate(fmt: Path) -> bool:
    """Store the dumped format uncompressed (same name). TeX writes formats through zlib (gzip, fastest level) and
    reads them back through zlib's ``gzread``, which passes a file without the gzip header through unchanged: the
    same bytes undumped, without inflating ≈ 18 MB at every start (a formula's ``latex`` run 90 → 46 ms on this
    machine; the DVI is byte-identical, tests/execute/test_texformat.py). The self-check below runs on the stored
    file."""
    import gzip

    try:
        with open(fmt, "rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                return True  # a TeX that dumps uncompressed: nothing to do
        with gzip.open(fmt, "rb") as src, open(fmt.with_suffix(".raw"), "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(fmt.with_suffix(".raw"), fmt)
    except (OSError, EOFError, gzip.BadGzipFile):
        return False
    return True


def _file_sha256(path: str | os.PathLike) -> str | None:
    """The sha256 of a regular file (None for anything else: a device, a FIFO, a missing file)."""
    h = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    finally:
        os.close(fd)
    return h.hexdigest()


def _recorded_inputs(fls: Path, work: Path) -> tuple | None:
    """(path, sha256) of the files TeX's ``-recorder`` list ``fls`` says it read, those in ``work`` (our own seed)
    left out; None without a readable list."""
    try:
        lines = fls.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    except OSError:
        return None
    work = work.resolve()
    pwd, paths = work, set()
    for line in lines:
        kind, _, rest = line.partition(" ")
        if kind == "PWD":
            pwd = Path(rest)
        elif kind == "INPUT" and rest:
            p = Path(os.path.normpath(pwd / rest))
            if not (p == work or work in p.parents) and p.is_file():  # (not /dev/null, which TeX also opens)
                paths.add(str(p))
    out = []
    for p in sorted(paths):
        sha = _file_sha256(p)
        if sha is None:
            return None
        out.append((p, sha))
    return tuple(out)


def adopt(dest: Path, source: str | os.PathLike, sha256: str,
          preamble: str = DEFAULT_PREAMBLE) -> tuple[FormatInfo | None, str]:
    """Take into ``<dest>/fmt/`` a format that another trusted process built and self-checked with :func:`build`
    (its file and the sha256 it recorded, handed over by trusted code, e.g. the driver to its render actors).
    Copied, not linked, and hashed as copied; (info, "") or (None, why not)."""
    t0 = time.perf_counter()
    name = format_name(preamble)
    if Path(source).name != name + ".fmt":
        return None, f"{Path(source).name} is not the format of this preamble"
    try:
        data = Path(source).read_bytes()
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})"
    if hashlib.sha256(data).hexdigest() != sha256:
        return None, "its sha256 is not the one recorded when it was built"
    fmt_dir = Path(dest) / FMT_DIR
    fmt_dir.mkdir(parents=True, exist_ok=True)
    final = fmt_dir / f"{name}.fmt"
    tmp = fmt_dir / f".{name}.{os.getpid()}.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, final)
    if hashlib.sha256(final.read_bytes()).hexdigest() != sha256:
        final.unlink(missing_ok=True)
        return None, "changed while it was copied"
    return FormatInfo(name, preamble, final.with_suffix(""), sha256, _ident(final), time.perf_counter() - t0), ""


def usable(path: str, preamble: str = DEFAULT_PREAMBLE) -> bool:
    """In the sample: whether the format path the parent handed over is the format of ``preamble`` (by its name)."""
    return bool(path) and Path(path).name == format_name(preamble)


def unchanged(info: FormatInfo) -> bool:
    """Whether the format file is still the very file that was built and checked (an edit changes its ctime)."""
    return _ident(info.path.with_suffix(".fmt")) == info.ident


# -- kept for later runs -------------------------------------------------------------------------------------
# The driver's self-checked format is published under the TeX cache root (one directory per render environment
# fingerprint: another TeX install never sees it), tagged under the cache's integrity key: a later run takes it
# after hashing it and checking the tag, instead of building and self-checking again (≈ 3 s while its render head
# start waits for it; pipeline/headstart.py). The root is read-only for scripts; a file changed by anything without
# the key fails the tag and is built again. The tag also covers what the self-check held for: the TeX files the
# dump read (``-recorder``; a package updated since leaves `latex --version`, hence the cache root, as it was) and
# the code that built and checked it (this module), both compared again before a later run takes it.
PUBLISHED_DIR = "format"


def _builder_sha256() -> str:
    """The code that builds and self-checks a format (this module: the dump, the probes, how a compile uses it):
    a format checked by other code is checked again."""
    return _file_sha256(__file__) or "unknown"


def _published_message(root: Path, name: str, sha256: str, inputs, builder: str) -> bytes:
    from prism_fast import integrity

    return integrity.message("tex_format", cache=root.name, name=name, sha256=sha256,
                             inputs=[list(i) for i in inputs], builder=builder)


def published(root: str | os.PathLike, key: bytes, preamble: str = DEFAULT_PREAMBLE) -> FormatInfo | None:
    """The format an earlier run built, self-checked and :func:`publish`\\ ed under the TeX cache root ``root``,
    hashed now and its tag verified; None where there is none or it does not verify."""
    from prism_fast import integrity

    root = Path(root)
    name = format_name(preamble)
    fmt = root / PUBLISHED_DIR / f"{name}.fmt"
    try:
        record = json.loads((root / PUBLISHED_DIR / f"{name}.json").read_text(encoding="ascii"))
        data = fmt.read_bytes()
    except (OSError, ValueError):
        return None
    sha = hashlib.sha256(data).hexdigest()
    inputs = record.get("inputs") if isinstance(record, dict) else None
    if not (isinstance(record, dict) and record.get("sha256") == sha and isinstance(inputs, list) and inputs
            and all(isinstance(i, list) and len(i) == 2 and all(isinstance(x, str) for x in i) for i in inputs)
            and record.get("builder") == _builder_sha256()
            and integrity.verify(key, _published_message(root, name, sha, inputs, record["builder"]),
                                 record.get("tag"))):
        log.info("tex cache: the published LaTeX format in %s does not verify; built again", fmt.parent)
        return None
    # its self-check holds for the TeX files it was dumped from: a package updated since (the same `latex --version`,
    # hence the same cache root) needs a new dump and a new check
    changed = [p for p, want in inputs if _file_sha256(p) != want]
    if changed:
        log.info("tex cache: %d file(s) the published LaTeX format was dumped from changed since (%s); built again",
                 len(changed), changed[0])
        return None
    return FormatInfo(name, preamble, fmt.with_suffix(""), sha, _ident(fmt), 0.0, tuple(tuple(i) for i in inputs))


def publish(info: FormatInfo, root: str | os.PathLike, key: bytes) -> bool:
    """Keep the built and self-checked ``info`` under ``root`` for later runs, tagged; whether it was written."""
    from prism_fast import fsutil, integrity

    root = Path(root)
    where = root / PUBLISHED_DIR
    try:
        where.mkdir(parents=True, exist_ok=True)
        fsutil.atomic_copy(info.path.with_suffix(".fmt"), where / f"{info.name}.fmt", expect_sha256=info.sha256)
        if not info.inputs:
            raise ValueError("no record of the files it was dumped from")
        builder = _builder_sha256()
        record = {"sha256": info.sha256, "inputs": [list(i) for i in info.inputs], "builder": builder,
                  "tag": integrity.tag(key, _published_message(root, info.name, info.sha256, info.inputs, builder))}
        fsutil.atomic_write_text(where / f"{info.name}.json", json.dumps(record))
    except Exception as exc:  # noqa: BLE001 - this run has its format; only later runs build theirs again
        log.warning("tex cache: the LaTeX format was not kept for later runs (%s: %s)", type(exc).__name__, exc)
        return False
    return True
