"""Shared, verified cache of compiled TeX SVGs for the prefork render backend.

Why: a Manim script compiles every distinct ``Tex``/``MathTex`` string with ``latex`` + ``dvisvgm``
(0.2-0.5 s each); axis numbers, ``x``, ``y``, ``=`` and the like recur across thousands of generated scripts.
Manim keeps these SVGs in ``<media_dir>/Tex/<hash>.svg``, but every sample renders into its own fresh media
directory (the authors' semantics), so nothing is shared.

How, without any way to change a result:

* **Key** = SHA-256 of (compiler, output format, the complete ``.tex`` source manim generated). The ``.tex``
  source holds the whole template preamble, so two templates never share an entry; the directory is named
  after the render environment fingerprint (manim, TeX, dvisvgm, fonts), so a TeX upgrade starts a new cache.
* **Lookup, in the sample's process** (:func:`install`, called in the forked child just before manim's CLI
  runs): manim's ``tex_to_svg_file`` is wrapped. It first does exactly what manim does (generate the ``.tex``
  file, log "Writing …", return an SVG that already exists in the sample's own media dir). Only where manim
  would now run ``latex`` + ``dvisvgm`` does the wrapper look the key up; on a hit it writes the cached bytes to
  the very path manim would have written and runs manim's own clean-up, so the mobject, the video and the
  printed output are those of an uncached render. With ``no_latex_cleanup`` set (the script asked to keep the
  intermediate files) the wrapper never uses the cache. The cache directory is mounted read-only for the
  sample, so a script can only poison its own process.
* **Filling, in the trusted parent** (:func:`harvest`, after the sample's process has exited): the wrapper
  logs each compile it did into a file in the sample's directory. That file is untrusted, so the parent
  re-derives everything: the ``.tex`` file's name must be manim's hash of its content, the compiler and
  format must be known ones, and the SVG is compiled again by the parent in a sandbox with the command lines
  manim uses (:func:`compile_commands`, tested equal to manim's). Only an SVG that the trusted compile
  reproduces enters the cache: byte for byte, up to the order of the glyph definitions, which dvisvgm varies
  between runs (:func:`canonical_svg`; the DVI's timestamp does not reach the SVG). A key is compiled again only the second time it is seen (a marker file records the first
  sighting), so expressions that occur once cost nothing extra.

What differs from an uncached render: the wall/CPU time of the sample (that is the point; rows record
``tex_cache_hits`` and ``profile-render`` always runs without this cache), and a script that lists its own
``media/Tex`` directory while running sees no leftover ``.log``/``.aux`` files — manim deletes them after every
compile anyway. Text/MarkupText SVGs (Pango) are not cached: their cache name hashes the settings, which
cannot be re-derived by the parent to verify an entry, and Pango takes milliseconds.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

ENV_CACHE = "PRISM_FAST_TEX_CACHE"  # the cache directory (read-only for the sample)
ENV_LOG = "PRISM_FAST_TEX_LOG"  # the compile log the wrapper appends to (in the sample's own directory)
LOG_NAME = ".prism_fast_tex_log.jsonl"

# compiler -> the output formats manim 0.19.0 knows for it (TexTemplate.tex_compiler / output_format)
COMPILERS = ("latex", "pdflatex", "xelatex", "lualatex", "luatex", "uplatex", "platex")
FORMATS = (".dvi", ".xdv", ".pdf")
_TEX_NAME = re.compile(r"^[0-9a-f]{16}\.tex$")
MAX_TEX_BYTES = 256 * 1024
MAX_SVG_BYTES = 8 * 1024 * 1024
MAX_LOG_BYTES = 1024 * 1024
MAX_VERIFY_PER_SAMPLE = 64


def entry_key(tex_source: bytes, compiler: str, output_format: str) -> str:
    h = hashlib.sha256()
    h.update(compiler.encode() + b"\0" + output_format.encode() + b"\0")
    h.update(tex_source)
    return h.hexdigest()


def entry_path(cache_dir: str | os.PathLike, key: str) -> Path:
    return Path(cache_dir) / "svg" / key[:2] / f"{key}.svg"


def seen_path(cache_dir: str | os.PathLike, key: str) -> Path:
    return Path(cache_dir) / "seen" / key[:2] / key


def manim_tex_hash(text: str) -> str:
    """manim.utils.tex_file_writing.tex_hash: the first 16 hex digits of SHA-256 of the source."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------------------------------------
# In the sample's process


def _read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file (no symlink followed) of at most ``limit`` bytes, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
        return data if len(data) <= limit else None
    finally:
        os.close(fd)


def install(cache_dir: str, log_path: str) -> None:
    """Wrap manim's ``tex_to_svg_file`` in this (forked, sandboxed) process. Call before manim's CLI runs."""
    import manim
    import manim.mobject.text.tex_mobject as tex_mobject
    import manim.utils.tex_file_writing as tfw
    from manim import config

    original = tfw.tex_to_svg_file

    def _log(event: dict) -> None:
        try:
            with open(log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(event) + "\n")
        except OSError:
            pass

    @functools.wraps(original)
    def tex_to_svg_file(expression, environment=None, tex_template=None):
        if tex_template is None:
            tex_template = config["tex_template"]
        tex_file = tfw.generate_tex_file(expression, environment, tex_template)
        svg_file = tex_file.with_suffix(".svg")
        if svg_file.exists() or config["no_latex_cleanup"]:
            return original(expression, environment, tex_template)
        compiler, fmt = tex_template.tex_compiler, tex_template.output_format
        source = _read_regular(tex_file, MAX_TEX_BYTES)
        if source is not None and compiler in COMPILERS and fmt in FORMATS:
            key = entry_key(source, compiler, fmt)
            cached = _read_regular(entry_path(cache_dir, key), MAX_SVG_BYTES)
            if cached is not None:
                svg_file.write_bytes(cached)
                tfw.delete_nonsvg_files()  # what manim does after a compile (no_latex_cleanup is False here)
                _log({"event": "hit", "key": key})
                return svg_file
        result = original(expression, environment, tex_template)
        _log({"event": "miss", "tex": tex_file.name, "compiler": compiler, "format": fmt})
        return result

    tfw.tex_to_svg_file = tex_to_svg_file
    tex_mobject.tex_to_svg_file = tex_to_svg_file
    if getattr(manim, "tex_to_svg_file", None) is original:
        manim.tex_to_svg_file = tex_to_svg_file


def install_from_env() -> None:
    """In a forked render child: if the parent asked for the cache, remove its variables from the environment
    (the script sees the scrubbed environment of an uncached render) and install the wrapper."""
    cache_dir = os.environ.pop(ENV_CACHE, None)
    log_path = os.environ.pop(ENV_LOG, None)
    if cache_dir and log_path:
        install(cache_dir, log_path)


# ----------------------------------------------------------------------------------------------------------
# In the trusted parent


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


@dataclass
class HarvestStats:
    hits: int = 0
    misses: int = 0
    first_seen: int = 0
    published: int = 0
    rejected: int = 0
    notes: list[str] = field(default_factory=list)


def count_hits(log_path: Path) -> tuple[int, int]:
    """(hits, misses) as logged by the sample's process (informational: the sample could lie about itself)."""
    data = _read_regular(log_path, MAX_LOG_BYTES) or b""
    hits = misses = 0
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict):
            hits += ev.get("event") == "hit"
            misses += ev.get("event") == "miss"
    return hits, misses


def _candidates(log_path: Path, tex_dir: Path, cache_dir: Path, stats: HarvestStats) -> list[tuple[str, bytes, bytes, str, str]]:
    data = _read_regular(log_path, MAX_LOG_BYTES) or b""
    out, keys = [], set()
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if not isinstance(ev, dict) or ev.get("event") != "miss":
            continue
        name, compiler, fmt = ev.get("tex"), ev.get("compiler"), ev.get("format")
        if not (isinstance(name, str) and _TEX_NAME.match(name) and compiler in COMPILERS and fmt in FORMATS):
            stats.rejected += 1
            continue
        if compiler not in ("latex", "pdflatex", "luatex", "lualatex", "xelatex") or (
                compiler == "xelatex" and fmt == ".dvi"):
            continue  # manim itself refuses these combinations
        source = _read_regular(tex_dir / name, MAX_TEX_BYTES)
        svg = _read_regular((tex_dir / name).with_suffix(".svg"), MAX_SVG_BYTES)
        if source is None or svg is None:
            continue
        try:
            if manim_tex_hash(source.decode("utf-8")) != name[:-4]:
                stats.rejected += 1
                continue
        except UnicodeDecodeError:
            stats.rejected += 1
            continue
        key = entry_key(source, compiler, fmt)
        if key in keys or entry_path(cache_dir, key).exists():
            continue
        keys.add(key)
        marker = seen_path(cache_dir, key)
        if not marker.exists():
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
            stats.first_seen += 1
            continue
        out.append((key, source, svg, compiler, fmt))
        if len(out) >= MAX_VERIFY_PER_SAMPLE:
            break
    return out


def harvest(work_dir: Path, media_dir: Path, cache_dir: Path, run_sandboxed, make_spec) -> HarvestStats:
    """Verify the sample's fresh compiles and publish the reproduced ones. ``make_spec(argv, cwd)`` builds the
    sandbox spec for the trusted compile; ``run_sandboxed(spec)`` runs it. Never raises for bad input."""
    stats = HarvestStats()
    cache_dir = prepare_cache_dir(cache_dir)
    log_path = work_dir / LOG_NAME
    stats.hits, stats.misses = count_hits(log_path)
    candidates = _candidates(log_path, media_dir / "Tex", cache_dir, stats)
    if not candidates:
        return stats
    scratch = Path(tempfile.mkdtemp(prefix="texverify_", dir=str(cache_dir / "tmp")))
    try:
        lines = []
        for key, source, _svg, compiler, fmt in candidates:
            d = scratch / key[:16]
            d.mkdir()
            tex_file = d / f"{manim_tex_hash(source.decode('utf-8'))}.tex"
            tex_file.write_bytes(source)
            for cmd in compile_commands(tex_file, compiler, fmt):
                lines.append(" ".join(shlex.quote(c) for c in cmd) + " >/dev/null 2>&1")
        res = run_sandboxed(make_spec(["/bin/sh", "-c", "\n".join(lines)], str(scratch)))
        if res.launch_error or res.timed_out:
            stats.notes.append(f"verify compile did not run: {res.launch_error or 'timeout'}")
            return stats
        for key, source, svg, _compiler, _fmt in candidates:
            d = scratch / key[:16]
            produced = _read_regular((d / manim_tex_hash(source.decode("utf-8"))).with_suffix(".svg"),
                                     MAX_SVG_BYTES)
            if produced is None or canonical_svg(produced) != canonical_svg(svg):
                stats.rejected += 1
                _keep_rejected(cache_dir, key, source, svg, produced)
                log.warning("tex cache: the sample's SVG for key %s was not reproduced by the trusted compile "
                            "(%s); not cached", key[:16],
                            "no SVG produced" if produced is None else f"{len(produced)} vs {len(svg)} bytes")
                continue
            dest = entry_path(cache_dir, key)
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
            tmp.write_bytes(produced)
            os.replace(tmp, dest)
            stats.published += 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return stats


def _keep_rejected(cache_dir: Path, key: str, source: bytes, sample_svg: bytes, trusted_svg: bytes | None,
                   limit: int = 50) -> None:
    """Keep a bounded number of rejected entries (the .tex and both SVGs) under ``<cache>/rejected/`` so that a
    mismatch can be diagnosed; they are never served."""
    root = Path(cache_dir) / "rejected"
    try:
        root.mkdir(exist_ok=True)
        if sum(1 for _ in root.iterdir()) >= limit:
            return
        d = root / key[:16]
        d.mkdir(exist_ok=True)
        (d / "source.tex").write_bytes(source)
        (d / "sample.svg").write_bytes(sample_svg)
        if trusted_svg is not None:
            (d / "trusted.svg").write_bytes(trusted_svg)
    except OSError:
        pass


def prepare_cache_dir(cache_dir: str | os.PathLike) -> Path:
    """Create the cache's folders; returns its absolute path (the sample and the verifier run in other cwds)."""
    root = Path(cache_dir).resolve()
    for sub in ("svg", "seen", "tmp"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    return root
