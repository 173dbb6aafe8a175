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
  intermediate files) the wrapper never uses the cache.
* **Filling, in the trusted parent** (:func:`harvest`, after the sample's process has exited): the wrapper
  logs each compile it did into a file in the sample's directory. That file is untrusted, so the parent
  re-derives everything: the ``.tex`` file's name must be manim's hash of its content, the compiler and
  format must be known ones, and the SVG is compiled again by the parent in a sandbox with the command lines
  manim uses (:func:`compile_commands`, tested equal to manim's). Only an SVG that the trusted compile
  reproduces enters the cache: byte for byte, up to the order of the glyph definitions, which dvisvgm varies
  between runs (:func:`canonical_svg`; the DVI's timestamp does not reach the SVG). A key is compiled again only the second time it is seen (a marker file records the first
  sighting), so expressions that occur once cost nothing extra.

Integrity (issue #13): a hostile script once wrote a poisoned SVG straight into the shared cache. The sandbox
no longer shows the cache to a script, and besides that no entry reaches a sample unless the trusted parent
has verified it:

* Every published entry ``svg/<k>/<key>.svg`` has a sidecar ``<key>.tag`` =
  ``{"sha256", "tag": HMAC(integrity key, key + sha256)}`` (:mod:`prism_fast.integrity`; the key is
  ``<runs_root>/.cache/integrity.key`` by default, :func:`prism_fast.integrity.default_key_dir`, never visible
  to a sample). The tag is written before the SVG, both atomically.
* **Where verification happens: in the parent, never in the sample** (the sample cannot hold the key: it
  would be readable by the script it runs). :func:`prepare_cache_dir`, which the render parent calls right
  before each sample, returns this process's *verified view* ``views/<host>-<pid>-<random>/``, the only cache
  directory the sample is shown (read-only). The parent brings the view up to date first: each published
  entry whose tag verifies and whose SVG hashes to the tagged sha256 is hard-linked into the view (copied
  where links do not work; the linked file is hashed again, so a swap between check and link is caught), and
  its sha256 appended to the view's ``verified.txt`` -- under names no reader can turn into another sample's
  formula (``view_name``/``manifest_id``, folders that cannot be listed: :data:`VIEW_DIR_MODE`). An entry without a valid tag -- written by anyone else,
  edited, or carrying the tag of another key -- is left out, logged and counted (:func:`integrity_failures`);
  the sample then compiles the expression itself, and :func:`harvest` republishes the entry over the bad one
  (``HarvestStats.tampered``).
* In the sample, :func:`install` serves an SVG from the view only if its bytes hash to the sha256 the parent
  recorded in ``verified.txt`` (read before the script can run). That catches what the view cannot: a
  published file edited in place, which a hard link shares. A mismatch is a miss, logged as ``bad_entry`` and
  counted by the parent (``HarvestStats.bad_entries``). A directory without ``verified.txt`` (the raw cache
  root) serves nothing.
* The view is rescanned only where a ``svg/<k>`` directory changed (new or replaced entries change the
  directory's times), so the check costs ~256 ``stat`` calls per sample; it is removed when the process exits
  and views of dead processes on this host are swept when a new one is made.

What differs from an uncached render: the wall/CPU time of the sample (that is the point; rows record
``tex_cache_hits`` and ``profile-render`` always runs without this cache), and a script that lists its own
``media/Tex`` directory while running sees no leftover ``.log``/``.aux`` files — manim deletes them after every
compile anyway. Text/MarkupText SVGs (Pango) are not cached: their cache name hashes the settings, which
cannot be re-derived by the parent to verify an entry, and Pango takes milliseconds.
"""

from __future__ import annotations

import ast
import atexit
import functools
import hashlib
import json
import logging
import os
import re
import secrets
import shlex
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from prism_fast import fsutil, integrity
from prism_fast.execute import script_reach, source_text, texformat
from prism_fast.execute import texsvg
from prism_fast.execute.texformat import canonical_svg, compile_commands  # noqa: F401  (used here and by callers)

log = logging.getLogger(__name__)

ENV_CACHE = "PRISM_FAST_TEX_CACHE"  # the verified view of the cache (read-only for the sample)
ENV_LOG = "PRISM_FAST_TEX_LOG"  # the compile log the wrapper appends to (in the sample's own directory)
LOG_NAME = ".prism_fast_tex_log.jsonl"
ENV_FORMAT = "PRISM_FAST_TEX_FORMAT"  # the view's LaTeX format to compile from, as the sample sees it (texformat.py)
ENV_OWN = "PRISM_FAST_TEX_OWN"  # a separate audit's copy of its own sample's render compiles (:func:`own_svgs`)
OWN_MANIFEST = "own.txt"  # in an own directory: "<key> <sha256>" per line, written by the trusted parent
MAX_OWN_FILES = 256
MAX_OWN_BYTES = 64 * 1024 * 1024
VIEW_INSIDE = "/prism_fast_tex_cache"  # where a sandboxed script sees its view of the cache (read-only)

# compiler -> the output formats manim 0.19.0 knows for it (TexTemplate.tex_compiler / output_format)
COMPILERS = ("latex", "pdflatex", "xelatex", "lualatex", "luatex", "uplatex", "platex")
FORMATS = (".dvi", ".xdv", ".pdf")
_TEX_NAME = re.compile(r"^[0-9a-f]{16}\.tex$")
MAX_TEX_BYTES = 256 * 1024
MAX_SVG_BYTES = 8 * 1024 * 1024
MAX_LOG_BYTES = 1024 * 1024
MAX_VERIFY_PER_SAMPLE = 64
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
MANIFEST_NAME = "verified.txt"  # in a view: "<manifest_id(key)> <sha256>" per line, appended by the parent
# A view's svg folders can be traversed but not listed (a script must not enumerate other samples' formulas: their
# SVG glyphs spell them); its files are named view_name(key) and its manifest says manifest_id(key), two different
# one-way names of the key, so nothing a script can read names a file it could open without the formula's text.
VIEW_DIR_MODE = 0o311
TAG_KIND = "tex_svg"
_KEY_HEX = re.compile(r"^[0-9a-f]{64}$")


# ----------------------------------------------------------------------------------------------------------
# What may be cached: TeX whose result depends on its text alone

# A source is served from and published to the cache only if its SVG is a function of its text: manim's default
# preamble (the one texformat.py builds the format of), and a document part made only of the control words and
# environments below -- typesetting, nothing that reads a file (`\input`, `\IfFileExists`, a font or package named
# in the text), the clock or random numbers (`\time`, `\year`, `\pdfuniformdeviate`), builds a name at run time
# (`\csname`, `\expandafter`, `^^` character codes), changes category codes or defines commands. A positive list:
# TeX composes names at run time, so no deny-list of spellings can be complete (red team 2026-12-05:
# `\number\csname time\endcsname` published a stale minute, `\InputIfFileExists{media/x.tex}` a file the script
# planted later, `\IfFileExists{<id>.py}` what the verifier's directory held). Anything else compiles as manim does.
TEX_WORDS = frozenset("""
alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa varkappa lambda mu nu xi pi varpi
rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi
Psi Omega digamma varGamma varDelta varTheta varLambda varXi varPi varSigma varUpsilon varPhi varPsi varOmega
pm mp times div cdot ast star circ bullet oplus ominus otimes oslash odot cap cup uplus sqcap sqcup vee wedge
setminus smallsetminus wr diamond bigtriangleup bigtriangledown triangleleft triangleright amalg dagger ddagger
land lor
leq le geq ge neq ne equiv sim simeq approx cong propto prec succ preceq succeq ll gg subset supset subseteq
supseteq sqsubseteq sqsupseteq in ni notin mid nmid parallel nparallel perp models vdash dashv smile frown doteq
asymp bowtie leqslant geqslant lesssim gtrsim nleq ngeq subsetneq supsetneq approxeq backsim thicksim thickapprox
lll ggg
leftarrow rightarrow to gets leftrightarrow Leftarrow Rightarrow Leftrightarrow longleftarrow longrightarrow
longleftrightarrow Longleftarrow Longrightarrow Longleftrightarrow iff implies impliedby mapsto longmapsto uparrow
downarrow updownarrow Uparrow Downarrow Updownarrow nearrow searrow swarrow nwarrow hookleftarrow hookrightarrow
leftharpoonup rightharpoonup leftharpoondown rightharpoondown rightleftharpoons leftrightarrows rightleftarrows
xrightarrow xleftarrow circlearrowleft circlearrowright curvearrowleft curvearrowright
infty partial nabla forall exists nexists emptyset varnothing neg lnot top bot angle measuredangle
sphericalangle triangle square blacksquare Box checkmark ldots cdots vdots ddots dots dotsc dotsb dotsm dotsi
hbar hslash ell Re Im aleph beth wp prime backprime backslash therefore because clubsuit diamondsuit heartsuit
spadesuit flat natural sharp surd imath jmath complement mho eth Finv Game circledS
sum prod coprod int iint iiint oint bigcup bigcap bigoplus bigotimes bigodot biguplus bigsqcup bigvee bigwedge
lim limsup liminf sup inf max min arg det dim exp gcd hom ker lg ln log Pr deg sin cos tan cot sec csc arcsin
arccos arctan sinh cosh tanh coth
left right middle big Big bigg Bigg bigl bigr Bigl Bigr biggl biggr Biggl Biggr bigm Bigm langle rangle lfloor
rfloor lceil rceil lvert rvert lVert rVert vert Vert lbrace rbrace lbrack rbrack ulcorner urcorner llcorner
lrcorner
frac dfrac tfrac cfrac binom dbinom tbinom sqrt overline underline widehat widetilde hat check tilde acute grave
dot ddot dddot breve bar vec mathring overrightarrow overleftarrow overleftrightarrow underrightarrow
underleftarrow underbrace overbrace stackrel overset underset substack boxed pmod bmod mod pod not over choose
atop brack brace
mathrm mathbf mathit mathsf mathtt mathcal mathbb mathfrak mathnormal boldsymbol pmb text textrm textbf textit
textsf texttt textnormal textup textsl textsc emph mbox operatorname displaystyle textstyle scriptstyle
scriptscriptstyle rm bf it sf tt sl sc cal mit normalfont tiny scriptsize footnotesize small normalsize large Large
LARGE huge Huge
quad qquad enspace thinspace negthinspace medspace negmedspace thickspace negthickspace hspace vspace hfill vfill
phantom hphantom vphantom smash mathstrut strut limits nolimits displaylimits colon
newline linebreak par noindent centering raggedright raggedleft hline cline item tag notag nonumber intertext
LaTeX TeX LaTeXe dag ddag S P copyright pounds textbackslash textasciitilde textasciicircum textbar textless
textgreater textendash textemdash textbullet textperiodcentered textdegree
begin end
""".split())
TEX_ENVIRONMENTS = frozenset("""
document align align* aligned alignat alignat* alignedat gather gather* gathered equation equation* split cases
matrix pmatrix bmatrix Bmatrix vmatrix Vmatrix smallmatrix array center flushleft flushright tabular itemize
enumerate multline multline* subarray
""".split())
# control symbols: spacing, escaped specials, line breaks, accents in text
TEX_SYMBOLS = frozenset(list(",;:!>\\{}%$&#_| '\"`^~=.-/") + ["\n", "\t"])
_CONTROL = re.compile(r"\\(?:([A-Za-z@]+)|(.))", re.S)
_ENV_ARG = re.compile(r"\s*\{([A-Za-z*]+)\}")


def cacheable(source: bytes) -> bool:
    """Whether the cache may serve or publish this ``.tex`` source: manim's default preamble and a document part of
    :data:`TEX_WORDS` / :data:`TEX_ENVIRONMENTS` / :data:`TEX_SYMBOLS` only (see above)."""
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if texformat.preamble_of(text) != texformat.DEFAULT_PREAMBLE:
        return False
    body = text[len(texformat.DEFAULT_PREAMBLE):]
    if "^^" in body:  # TeX's character-code notation can spell any control sequence
        return False
    for m in _CONTROL.finditer(body):
        word, symbol = m.group(1), m.group(2)
        if word is None:
            if symbol not in TEX_SYMBOLS:
                return False
            continue
        if word not in TEX_WORDS:
            return False
        if word in ("begin", "end"):
            arg = _ENV_ARG.match(body, m.end())
            if arg is None or arg.group(1) not in TEX_ENVIRONMENTS:
                return False
    return True


# ----------------------------------------------------------------------------------------------------------
# The gate: whether a cache hit (or the LaTeX format) would give this script what its own compile gives

# A hit skips manim's compile path -- ``compile_tex``/``convert_to_svg``, ``subprocess``, ``latex``/``dvisvgm`` and
# what they read: the environment, the working directory (TeX's "." search path, also the sample's HOME, where
# TEXMFHOME and TEXMFVAR live), the Tex directory (an ``.aux``, a ``.dvi`` left there), resource limits. A script that
# changes any of these compiles differently in an uncached render; served from the cache it would not, and whether
# it is served depends on what other samples compiled before (a script patching ``compile_tex`` failed uncached and
# passed once another sample had published its formula). So a hit, and the format, need both:
# * the parent's static gate (:func:`script_reasons`, trusted, before the sample starts): the script's text shows no
#   way to reach the compile path or the process state (the reflection deny-list of execute/script_reach.py, which
#   the one-pass rule shares, with imports limited to :data:`GATE_IMPORTS`) and names none of :data:`GATE_NAMES`;
# * in the sample's process: at every call, first, the expression and environment are plain ``str`` and the
#   template manim's own class with plain string fields (building the ``.tex`` text then runs nothing of the
#   script's; ``TexTemplate``'s class is checked here too); where manim would compile (:meth:`_ProcessState.changed`,
#   after manim has built the ``.tex`` file, whose "Writing ..." log line runs the logger's filters and handlers):
#   the environment, cwd, resource limits, free file descriptors and SIGCHLD's disposition are those the script
#   started with, the namespaces the compile path and the hit path look up (manim's
#   TeX module, its config and ``TexTemplate`` classes, ``subprocess``, ``Popen``, pathlib's classes) hold the same
#   objects, so do manim's and the root logger's filters and handlers, no file and no TeX-looking directory
#   appeared in the working directory, and the Tex directory holds nothing but manim's own ``<hash>.tex`` and
#   ``<hash>.svg`` files. Otherwise that expression compiles exactly as manim does (no format either; rows:
#   tex_cache_reasons ``runtime:<why>``);
# * and the source itself must be :func:`cacheable` (above): its result a function of its text. The LaTeX format is
#   used for such sources only (expl3 keeps the format's dump name, which a document can read).
# Left (docs/security.md): a script can time its own compile (about 1 ms from the cache, 0.2 s compiled) and branch
# on it; such a script is not deterministic uncached either. The full check runs only where manim compiles (it
# costs ~0.16 ms; an always_redraw scene makes thousands of calls that find their SVG made).
GATE_NAMES = frozenset({
    "tex_file_writing", "compile_tex", "convert_to_svg", "delete_nonsvg_files", "make_tex_compilation_command",
    "generate_tex_file", "tex_to_svg_file", "print_all_tex_errors", "tex_hash", "tex_dir", "media_dir",
    "no_latex_cleanup", "environ", "putenv", "unsetenv", "chdir", "fchdir", "system", "popen", "subprocess",
    "file_ops", "setrlimit", "prlimit", "umask", "TEXINPUTS", "TEXMFHOME", "TEXMFVAR", "TEXMFCONFIG", "HOME", "PATH",
    # red team 2: descriptors held without `open`, code run by manim's logger while it writes the .tex file
    "memmap", "mmap_mode", "addFilter", "addHandler", "setLogRecordFactory", "filters", "handlers",
})
GATE_IMPORTS = script_reach.SAFE_IMPORTS | {"time"}  # `time` reads clocks; it changes nothing TeX reads
GATE_HARMLESS = frozenset({"__name__", "__all__", "__file__", "__doc__", "__init__"})


def script_reasons(source: str) -> list[str]:
    """Why a cache hit or the LaTeX format might not give this script what its own compile gives (empty: the gate
    lets it use them). Trusted, parent side, from the text alone."""
    coding = source_text.source_encoding_reason(source)
    if coding is not None:
        return [coding]
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []  # Python refuses it before any TeX
    except (RecursionError, MemoryError):
        return ["too_deep_to_parse"]
    if script_reach.over_budget(tree):  # past the analyses' size bound (script_reach.MAX_NODES): declined
        return [script_reach.ANALYSIS_BUDGET]
    try:
        reasons = script_reach.reach_reasons(tree, GATE_IMPORTS, script_reach.MODULE_ATTRS - {"time"},
                                             GATE_HARMLESS)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                word = node.id
            elif isinstance(node, ast.Attribute):
                word = node.attr
            elif isinstance(node, ast.keyword):
                word = node.arg
            elif isinstance(node, ast.alias):
                word = node.name.split(".")[-1]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                word = node.value
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and script_reach.DUNDER.fullmatch(
                    node.name) and node.name not in GATE_HARMLESS:
                # a method Python calls by itself (`__del__` at any collection, `__radd__` inside manim's string
                # building): script code that runs inside the compile path (red team 2)
                if f"dunder_method:{node.name}" not in reasons:
                    reasons.append(f"dunder_method:{node.name}")
                continue
            else:
                continue
            if word in GATE_NAMES and f"tex_path:{word}" not in reasons:
                reasons.append(f"tex_path:{word}")
    except (RecursionError, MemoryError):
        return ["too_deep_to_analyse"]
    return reasons


def entry_key(tex_source: bytes, compiler: str, output_format: str) -> str:
    h = hashlib.sha256()
    h.update(compiler.encode() + b"\0" + output_format.encode() + b"\0")
    h.update(tex_source)
    return h.hexdigest()


def entry_path(cache_dir: str | os.PathLike, key: str) -> Path:
    return Path(cache_dir) / "svg" / key[:2] / f"{key}.svg"


def view_name(key: str) -> str:
    """The file name of an entry in a view (never the key itself: see VIEW_DIR_MODE)."""
    return hashlib.sha256(b"prism_fast.tex_view.file\0" + key.encode()).hexdigest()


def manifest_id(key: str) -> str:
    """How a view's manifest names an entry (not its file name: see VIEW_DIR_MODE)."""
    return hashlib.sha256(b"prism_fast.tex_view.manifest\0" + key.encode()).hexdigest()


def view_path(view: str | os.PathLike, key: str) -> Path:
    name = view_name(key)
    return Path(view) / "svg" / name[:2] / f"{name}.svg"


def tag_path(cache_dir: str | os.PathLike, key: str) -> Path:
    return Path(cache_dir) / "svg" / key[:2] / f"{key}.tag"


def seen_path(cache_dir: str | os.PathLike, key: str) -> Path:
    return Path(cache_dir) / "seen" / key[:2] / key


def manim_tex_hash(text: str) -> str:
    """manim.utils.tex_file_writing.tex_hash: the first 16 hex digits of SHA-256 of the source."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------------------------------------
# In the sample's process


def _read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file (no symlink followed) of at most ``limit`` bytes, else None. ``O_NONBLOCK``: a
    FIFO a sample left under the name does not block the trusted reader (it is then refused as not regular)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
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


def arm() -> None:
    """Take the process state the gate compares against (:class:`_ProcessState`) again, now: the caller's last step
    before the script runs (the prefork child after every installer removed its variables, the audit child after
    moving to its output directory). A no-op where the wrapper is not installed."""
    global _STARTED
    if _STARTED is not None:
        import manim.utils.tex_file_writing as tfw

        _STARTED = _ProcessState.now(tfw, _STARTED.log_name)


_STARTED = None  # the sample's process state before its script ran (install, arm)
_TEX_DIR_ENTRY = re.compile(r"^[0-9a-f]{16}\.(?:tex|svg)$")  # what manim itself leaves in its Tex directory
_RLIMITS = ("RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NPROC", "RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_NOFILE",
            "RLIMIT_CORE")


def _watched_namespaces(tfw) -> tuple:
    """The namespaces whose bindings manim's compile path and the wrapper's hit path look up at run time: manim's TeX
    module and its config and template classes, ``subprocess`` and ``Popen``, and pathlib's classes (red team: a
    script patched ``PosixPath.write_bytes`` through ``type(config.get_dir(...))``, which only the hit path calls)."""
    import pathlib
    import subprocess

    from manim import config
    from manim.utils.tex_templates import TexTemplate

    return (tfw, subprocess, subprocess.Popen, type(config), TexTemplate, pathlib.PurePath, pathlib.PurePosixPath,
            pathlib.Path, pathlib.PosixPath)


def _bindings(namespace) -> tuple:
    """A namespace's (name, object) pairs, but ``__slotnames__``, which copyreg caches in a class the first time one
    of its instances is copied (manim copies the template)."""
    return tuple(item for item in vars(namespace).items() if item[0] != "__slotnames__")


MIN_FREE_FDS = 32  # what manim's compile needs at most, with room: fewer free and a hit could pass where it fails


def _logging_state() -> tuple:
    """The filters and handlers of manim's logger and of the root logger, and the record factory: manim logs
    "Writing ..." while it builds a ``.tex`` file, so a script's filter or handler runs inside that step (red team 2
    planted a font file from one)."""
    import logging

    loggers = (logging.getLogger("manim"), logging.getLogger())
    return (logging.getLogRecordFactory(), logging.Logger.manager.disable,
            *((tuple(lg.filters), tuple(lg.handlers), *(tuple(h.filters) for h in lg.handlers)) for lg in loggers))


def _plain_template(template) -> bool:
    """manim's own ``TexTemplate`` class with plain string fields: reading its attributes and building its text run
    nothing of the script's (red team: a subclass counting reads of ``output_format``, a template whose text changed
    between two calls)."""
    from manim.utils.tex_templates import TexTemplate

    try:
        return type(template) is TexTemplate and all(type(v) is str for v in vars(template).values())
    except TypeError:
        return False


def _tex_dir_changed(tex_dir: Path) -> str | None:
    """Anything but manim's own ``<hash>.tex``/``<hash>.svg`` files in the Tex directory (an ``.aux`` or ``.dvi``
    left there is read by the compile)."""
    try:
        for entry in os.scandir(tex_dir):
            if not (_TEX_DIR_ENTRY.match(entry.name) and entry.is_file(follow_symlinks=False)):
                return "tex_dir"
    except OSError as exc:
        return f"unreadable:{type(exc).__name__}"
    return None


@dataclass
class _ProcessState:
    """What manim's compile path reads besides the ``.tex`` source, taken in the sample's process before the script
    runs; :meth:`changed` says what differs now (module docstring, "The gate")."""

    environ: object
    env: dict
    cwd: str
    cwd_entries: frozenset
    rlimits: tuple
    sigchld: object
    namespaces: tuple
    log_name: str  # the wrapper's own log, which appears in the working directory later
    logging: tuple = ()

    def template_class_same(self) -> bool:
        from manim.utils.tex_templates import TexTemplate

        for ns, items in self.namespaces:
            if ns is TexTemplate:
                now = _bindings(ns)
                return len(now) == len(items) and all(a[0] == b[0] and a[1] is b[1] for a, b in zip(now, items))
        return False

    @staticmethod
    def _free_fds() -> int:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        used = len(os.listdir("/proc/self/fd"))
        return (1 << 30) if soft == resource.RLIM_INFINITY else soft - used

    @staticmethod
    def _rlimits() -> tuple:
        import resource

        return tuple(resource.getrlimit(getattr(resource, n)) for n in _RLIMITS if hasattr(resource, n))

    @classmethod
    def now(cls, tfw, log_name: str = LOG_NAME) -> "_ProcessState":
        import signal

        cwd = os.getcwd()
        return cls(os.environ, dict(os.environ), cwd, frozenset(os.listdir(cwd)), cls._rlimits(),
                   signal.getsignal(signal.SIGCHLD),
                   tuple((ns, _bindings(ns)) for ns in _watched_namespaces(tfw)), log_name, _logging_state())

    def changed(self, tfw, template=None) -> str | None:
        import signal

        try:
            if os.environ is not self.environ or dict(os.environ) != self.env:
                return "environ"
            if os.getcwd() != self.cwd:
                return "cwd"
            if self._rlimits() != self.rlimits:
                return "rlimit"
            if signal.getsignal(signal.SIGCHLD) != self.sigchld:
                return "sigchld"
            for ns, items in self.namespaces:
                now = _bindings(ns)
                if len(now) != len(items) or any(a[0] != b[0] or a[1] is not b[1] for a, b in zip(now, items)):
                    return "compile_path"
            if template is not None and not _plain_template(template):
                return "template"
            if _logging_state() != self.logging:
                return "logging"
            if self._free_fds() < MIN_FREE_FDS:
                return "file_descriptors"  # the hit needs fewer than manim's compile (red team 2: np.memmap)
            for name in os.listdir(self.cwd):
                if name in self.cwd_entries or name == self.log_name:
                    continue
                st = os.lstat(os.path.join(self.cwd, name))
                # TeX's "." search path, and the sample's HOME (TEXMFHOME=~/texmf, ~/.texlive*/texmf-var)
                if not stat.S_ISDIR(st.st_mode) or "tex" in name.lower() or "kpse" in name.lower():
                    return "working_dir"
        except (OSError, ValueError, TypeError, AttributeError, RecursionError) as exc:
            return f"unreadable:{type(exc).__name__}"
        return None


def install(cache_dir: str, log_path: str, format_path: str | None = None, own_dir: str | None = None) -> None:
    """Wrap manim's ``tex_to_svg_file`` in this (forked, sandboxed) process. Call before manim's CLI runs.
    ``own_dir``: the SVGs this sample's own render compiled (a separate audit's, :func:`own_svgs`), served like
    verified entries where the view has none."""
    import manim
    import manim.mobject.text.tex_mobject as tex_mobject
    import manim.utils.tex_file_writing as tfw
    from manim import config

    original = tfw.tex_to_svg_file
    # the checked LaTeX format the parent handed over, {preamble: format path} (texformat.py)
    formats = {texformat.DEFAULT_PREAMBLE: format_path} if format_path and texformat.usable(format_path) else {}
    # The sha256 the trusted parent verified for each key (the view's verified.txt; the last line wins). Read
    # now, before the script runs: an entry is served only if its bytes still hash to this.
    verified: dict[str, str] = {}
    data = _read_regular(Path(cache_dir) / MANIFEST_NAME, MAX_MANIFEST_BYTES) or b""
    for line in data.decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) == 2:
            verified[parts[0]] = parts[1]
    # the sample's own render's compiles (a separate audit's), read now and their directory removed: the script
    # never finds them (red team: a script that looked for them could tell this audit from one without them)
    own = _load_own(Path(own_dir)) if own_dir else {}

    def _log(event: dict) -> None:
        try:
            with open(log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(event) + "\n")
        except OSError:
            pass


    @functools.wraps(original)
    def tex_to_svg_file(expression, environment=None, tex_template=None):
        # first, cheaply (every call; most find their SVG already made): the arguments are plain strings and the
        # template manim's own class, so building the .tex text runs nothing of the script's (red team 2: a str
        # subclass's __radd__, a template subclass) -- else manim's own path, exactly, and no format
        why = None if _STARTED is not None else "not_armed"
        if why is None and not (type(expression) is str and (environment is None or type(environment) is str)):
            why = "argument_type"
        if why is None and not _STARTED.template_class_same():
            why = "compile_path"  # TexTemplate's own methods build the text
        template = tex_template if tex_template is not None or why is not None else config["tex_template"]
        if why is None and not _plain_template(template):
            why = "template"
        if why is not None:
            _log({"event": "declined", "why": why})
            return original(expression, environment, tex_template)
        tex_file = tfw.generate_tex_file(expression, environment, template)
        svg_file = tex_file.with_suffix(".svg")
        if svg_file.exists():
            return svg_file  # manim's own steps, each once (its tex_to_svg_file returns here too)
        tex_template = template
        if config["no_latex_cleanup"]:
            return original(expression, environment, tex_template)
        # where manim would compile: the whole process state, after generate_tex_file logged "Writing ..." through
        # manim's logger (a script's filter or handler runs there, red team 2); nothing of the script's runs
        # between this check and the lookup or the format's latex
        again = _STARTED.changed(tfw, tex_template) or _tex_dir_changed(tex_file.parent)
        if again is not None:
            _log({"event": "declined", "why": again, "tex": tex_file.name})
            return original(expression, environment, tex_template)
        compiler, fmt = tex_template.tex_compiler, tex_template.output_format
        source = _read_regular(tex_file, MAX_TEX_BYTES)
        if source is not None and not cacheable(source):
            source = None  # its SVG may depend on more than its text: neither the cache nor the format
        if source is not None and compiler in COMPILERS and fmt in FORMATS:
            key = entry_key(source, compiler, fmt)
            expected, event = verified.get(manifest_id(key)), "hit"
            cached = _read_regular(view_path(cache_dir, key), MAX_SVG_BYTES) if expected else None
            if cached is not None and hashlib.sha256(cached).hexdigest() != expected:
                _log({"event": "bad_entry", "key": key})  # edited after the parent verified it: never served
                cached = None
            if expected is None and key in own:  # not in the view: this sample's own render compiled it
                cached, event = own[key], "own_hit"
                expected = hashlib.sha256(cached).hexdigest()
            if cached is not None:
                svg_file.write_bytes(cached)
                tfw.delete_nonsvg_files()  # what manim does after a compile (no_latex_cleanup is False here)
                _log({"event": event, "key": key, "sha256": expected})
                return svg_file
        if formats and compiler == "latex" and fmt == ".dvi" and source is not None:
            # (only for a cacheable source: expl3 keeps the format's dump name in `\g_file_curr_name_str`, which a
            # document can read -- red team 2; the allow-list reaches no expl3)
            _format_compile(tex_file, source, fmt, config.get_dir("tex_dir"), formats, _log)
            dvi = tex_file.with_suffix(fmt)
            # the format made the .dvi: its SVG without dvisvgm's PostScript start-up where no special can draw
            # (texsvg.py); manim's convert_to_svg then finds it, as its compile_tex found the .dvi
            if dvi.exists() and texsvg.fast_svg(dvi):
                tfw.delete_nonsvg_files()  # what manim does after its conversion (no_latex_cleanup is False here)
                _log({"event": "svg_fast", "tex": tex_file.name})
        result = original(expression, environment, tex_template)
        _log({"event": "miss", "tex": tex_file.name, "compiler": compiler, "format": fmt})
        return result

    tfw.tex_to_svg_file = tex_to_svg_file
    tex_mobject.tex_to_svg_file = tex_to_svg_file
    if getattr(manim, "tex_to_svg_file", None) is original:
        manim.tex_to_svg_file = tex_to_svg_file
    global _STARTED
    # what an untouched compile path looks like (again at arm(): the script's start)
    _STARTED = _ProcessState.now(tfw, os.path.basename(log_path))


def _load_own(own_dir: Path) -> dict[str, bytes]:
    """The own SVGs the parent left in ``own_dir`` (:func:`own_dir_for_audit`): those whose bytes hash to the
    manifest's sha256, at most :data:`MAX_OWN_FILES` / :data:`MAX_OWN_BYTES`; the directory is then removed."""
    out: dict[str, bytes] = {}
    total = 0
    data = _read_regular(own_dir / OWN_MANIFEST, MAX_MANIFEST_BYTES) or b""
    for line in data.decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) != 2 or not _KEY_HEX.match(parts[0]) or parts[0] in out or len(out) >= MAX_OWN_FILES:
            continue
        svg = _read_regular(own_dir / f"{parts[0]}.svg", MAX_SVG_BYTES)
        if svg is None or total + len(svg) > MAX_OWN_BYTES or hashlib.sha256(svg).hexdigest() != parts[1]:
            continue
        out[parts[0]] = svg
        total += len(svg)
    shutil.rmtree(own_dir, ignore_errors=True)
    return out


def _format_compile(tex_file: Path, source: bytes | None, output_format: str, tex_dir: Path,
                    formats: dict[str, str], _log) -> None:
    """Before manim compiles ``tex_file`` (``latex``, ``.dvi``): where the view holds a checked format of the file's
    preamble, make the ``.dvi`` from that format (texformat.py). manim's ``compile_tex`` then finds it and does not
    run ``latex``; everything else (dvisvgm, clean-up, logs) is manim's. On any failure the attempt's files are
    removed and manim compiles as usual, so its error output (and the traceback, which gains no frame) is
    unchanged."""
    import subprocess

    result = tex_file.with_suffix(output_format)
    if result.exists():
        return
    try:
        text = source.decode("utf-8") if source is not None else None
    except UnicodeDecodeError:
        text = None
    preamble = texformat.preamble_of(text) if text is not None else None
    fmt = formats.get(preamble) if preamble is not None else None
    if fmt is None:
        return
    # the document part, in a fresh private directory named like the .tex file (nothing the script left next to the
    # .tex file, e.g. ``<hash>.body.tex``, can stand in for it, and manim's clean-up of its Tex dir never sees it)
    where = None
    cp = None
    try:
        where = Path(tempfile.mkdtemp(prefix="prism_fmt_"))
        body = where / tex_file.name
        body.write_text(texformat.body_of(text, preamble), encoding="utf-8")
        cp = subprocess.run(texformat.latex_command(fmt, body, tex_dir), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
        ok = cp.returncode == 0 and result.exists()
    except OSError:
        ok = False
    finally:
        if where is not None:
            shutil.rmtree(where, ignore_errors=True)
    if ok:
        if cp.stderr:  # what latex printed, as manim's own compile would have let it through; dropped on a fallback
            try:
                sys.stderr.flush()
                data = memoryview(cp.stderr)
                while data:  # a pipe may take less than all of it at once
                    data = data[os.write(2, data):]
            except (OSError, ValueError):  # the script closed its stderr: latex's own write would have failed too
                pass
        _log({"event": "format", "tex": tex_file.name})
        return
    for suffix in (output_format, ".log", ".aux"):  # nothing of this attempt reaches manim's own compile
        tex_file.with_suffix(suffix).unlink(missing_ok=True)
    _log({"event": "format_fallback", "tex": tex_file.name})


def install_from_env() -> None:
    """In a forked render child: if the parent asked for the cache, remove its variables from the environment
    (the script sees the scrubbed environment of an uncached render) and install the wrapper."""
    cache_dir = os.environ.pop(ENV_CACHE, None)
    log_path = os.environ.pop(ENV_LOG, None)
    format_path = os.environ.pop(ENV_FORMAT, None)
    own_dir = os.environ.pop(ENV_OWN, None)
    if cache_dir and log_path:
        install(cache_dir, log_path, format_path, own_dir)


def sample_env(view: Path, seen_as: str, log_path: Path, tex_format: bool,
               protected: bool, deferred: bool = False) -> tuple[dict[str, str], str]:
    """The variables that give a sample the view (seen at ``seen_as``) and, with ``tex_format`` and a checked
    format in the view, the format's path as the sample sees it; and the sample's ``tex_format`` row value:
    on | off | failed (no checked format) | unavailable (``protected`` is False: the view would be writable by
    scripts, so one sample could leave a format for the next, or the sample's process installs no wrapper) |
    not_ready (``deferred``: the format is wanted but not built yet -- the pipeline's head start renders before
    the driver has built it --, so this sample compiles in full; where it could not be used anyway, the row says
    unavailable as it would with the format ready)."""
    env = {ENV_CACHE: seen_as, ENV_LOG: str(log_path)}
    if not tex_format:
        return env, "off"
    if not protected:
        if "unavailable" not in _WARNED:
            _WARNED.add("unavailable")
            log.warning("tex cache: the LaTeX format is not used at this sandbox level (the view is not read-only "
                        "for scripts, or the sample runs without our wrappers); rows: tex_format=unavailable")
        return env, "unavailable"
    if deferred:
        return env, "not_ready"
    view_state = next((v for v in _VIEWS.values() if v.path == Path(view)), None)
    if view_state is None or view_state.fmt is None:
        return env, format_state(view)
    env[ENV_FORMAT] = f"{seen_as}/{texformat.FMT_DIR}/{view_state.fmt.name}"
    return env, "on"


_WARNED: set[str] = set()


# ----------------------------------------------------------------------------------------------------------
# In the trusted parent


@dataclass
class HarvestStats:
    hits: int = 0
    misses: int = 0
    format_compiles: int = 0  # compiles the sample made from the view's LaTeX format (texformat.py)
    format_fallbacks: int = 0  # format compiles that failed: manim compiled those itself (same SVG, full cost)
    first_seen: int = 0
    published: int = 0
    rejected: int = 0
    tampered: int = 0  # published entries found without a valid tag (or not matching it); republished
    bad_entries: int = 0  # entries the sample found edited after verification (its own report; not served)
    declined: list[str] = field(default_factory=list)  # why the sample's gate refused the cache (run time, distinct)
    notes: list[str] = field(default_factory=list)


def format_compiles(log_path: Path) -> int:
    """Compiles the sample's log says it made from the LaTeX format (its own report: a count, never a result)."""
    return _count_events(log_path).get("format", 0)


def format_fallbacks(log_path: Path) -> int:
    """Compiles the sample's log says the format could not make (manim then compiled them itself)."""
    return _count_events(log_path).get("format_fallback", 0)


def own_hit_count(log_path: Path) -> int:
    """SVGs a separate audit's log says it took from its own render's compiles (:func:`own_svgs`)."""
    return _count_events(log_path).get("own_hit", 0)


def count_hits(log_path: Path) -> tuple[int, int]:
    """(hits, misses) as logged by the sample's process (informational: the sample could lie about itself)."""
    counts = _count_events(log_path)
    return counts.get("hit", 0), counts.get("miss", 0)


def declined_reasons(log_path: Path) -> list[str]:
    """The distinct reasons the sample's gate refused the cache at run time (``runtime:<why>``), in order."""
    data = _read_regular(log_path, MAX_LOG_BYTES) or b""
    out: list[str] = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            ev = json.loads(line)
        except (ValueError, RecursionError):  # (a line the script wrote, nested past the parser's depth)
            continue
        why = ev.get("why") if isinstance(ev, dict) and ev.get("event") == "declined" else None
        if isinstance(why, str) and len(why) <= 64 and f"runtime:{why}" not in out and len(out) < 16:
            out.append(f"runtime:{why}")
    return out


def _count_events(log_path: Path) -> dict[str, int]:
    data = _read_regular(log_path, MAX_LOG_BYTES) or b""
    counts: dict[str, int] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            ev = json.loads(line)
        except (ValueError, RecursionError):  # (a line the script wrote, nested past the parser's depth)
            continue
        if isinstance(ev, dict) and isinstance(ev.get("event"), str):
            counts[ev["event"]] = counts.get(ev["event"], 0) + 1
    return counts


# ----------------------------------------------------------------------------------------------------------
# Integrity of published entries (trusted parent only)


def _tag_message(key: str, sha: str) -> bytes:
    return integrity.message(TAG_KIND, key=key, sha256=sha)


def _tagged_sha(cache_dir: Path, key: str, ikey: bytes) -> tuple[str | None, str]:
    """(sha256 the entry's tag vouches for, or None; why not)."""
    raw = _read_regular(tag_path(cache_dir, key), 4096)
    if raw is None:
        return None, "missing tag"
    try:
        doc = json.loads(raw.decode("ascii"))
        sha, tag = doc["sha256"], doc["tag"]
    except (ValueError, KeyError, TypeError):
        return None, "unreadable tag"
    if not (isinstance(sha, str) and _KEY_HEX.match(sha)) or not integrity.verify(ikey, _tag_message(key, sha), tag):
        return None, "invalid tag"
    return sha, ""


def verify_entry(cache_dir: str | os.PathLike, key: str, ikey: bytes) -> tuple[bytes | None, str]:
    """(the published SVG's bytes if its tag verifies and they hash to the tagged sha256, else None; why not)."""
    cache_dir = Path(cache_dir)
    sha, why = _tagged_sha(cache_dir, key, ikey)
    if sha is None:
        return None, why
    data = _read_regular(entry_path(cache_dir, key), MAX_SVG_BYTES)
    if data is None:
        return None, "no SVG"
    if hashlib.sha256(data).hexdigest() != sha:
        return None, "SVG does not match its tag"
    return data, ""


def _publish(cache_dir: Path, key: str, svg: bytes, ikey: bytes) -> None:
    """Tag first, then the SVG (both atomic): an SVG is never visible without the tag that vouches for it."""
    dest = entry_path(cache_dir, key)
    dest.parent.mkdir(parents=True, exist_ok=True)
    sha = hashlib.sha256(svg).hexdigest()
    doc = {"sha256": sha, "tag": integrity.tag(ikey, _tag_message(key, sha))}
    fsutil.atomic_write_text(tag_path(cache_dir, key), json.dumps(doc, sort_keys=True))
    fsutil.atomic_write_bytes(dest, svg)


def _root(cache_dir: str | os.PathLike) -> Path:
    """Create the cache's folders; returns its absolute path (the sample and the verifier run in other cwds)."""
    root = Path(cache_dir).resolve()
    for sub in ("svg", "seen", "tmp", "views"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    return root


def _key_for(root: Path, integrity_key: bytes | None) -> bytes:
    return integrity_key if integrity_key is not None else integrity.load_or_create_key(
        integrity.default_key_dir(root))


def _compiled(log_path: Path, tex_dir: Path, stats: HarvestStats):
    """The sample's logged compiles (``miss`` events) whose ``.tex`` file is manim's (named by the hash of its
    content) and cacheable, with its SVG as the sample left it: (key, source, svg, compiler, format), each key once.
    All of it is the sample's word; the caller decides what it may stand for. ``tex_dir`` is ``<work>/media/Tex``:
    a ``media`` or ``Tex`` the sample made a symlink is not followed (nothing from outside its own directory)."""
    try:
        real = os.path.realpath(tex_dir) == os.path.join(os.path.realpath(tex_dir.parent.parent), "media", "Tex")
    except OSError:
        real = False
    if not real:
        return
    data = _read_regular(log_path, MAX_LOG_BYTES) or b""
    keys = set()
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            ev = json.loads(line)
        except (ValueError, RecursionError):  # (a line the script wrote, nested past the parser's depth)
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
        if not cacheable(source):
            continue  # its SVG may depend on more than its text: never published
        key = entry_key(source, compiler, fmt)
        if key in keys:
            continue
        keys.add(key)
        yield key, source, svg, compiler, fmt


def _candidates(log_path: Path, tex_dir: Path, cache_dir: Path, stats: HarvestStats, ikey: bytes,
                failures: integrity.FailureLog) -> list[tuple[str, bytes, bytes, str, str]]:
    out = []
    for key, source, svg, compiler, fmt in _compiled(log_path, tex_dir, stats):
        if entry_path(cache_dir, key).exists() or tag_path(cache_dir, key).exists():
            good, why = verify_entry(cache_dir, key, ikey)
            if good is not None:
                continue  # published meanwhile by another sample
            stats.tampered += 1  # a bad entry must not block its own replacement: verify and republish it
            failures(key[:16], why)
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


def harvest(work_dir: Path, media_dir: Path, cache_dir: Path, run_sandboxed, make_spec,
            integrity_key: bytes | None = None) -> HarvestStats:
    """Verify the sample's fresh compiles and publish the reproduced ones, tagged with ``integrity_key``
    (default: the key of :func:`prism_fast.integrity.default_key_dir`). ``make_spec(argv, cwd)`` builds the
    sandbox spec for the trusted compile; ``run_sandboxed(spec)`` runs it. Never raises for bad input."""
    stats = HarvestStats()
    cache_dir = _root(cache_dir)
    ikey = _key_for(cache_dir, integrity_key)
    failures = integrity.FailureLog(log, "tex cache")
    log_path = work_dir / LOG_NAME
    counts = _count_events(log_path)
    stats.hits, stats.misses = counts.get("hit", 0), counts.get("miss", 0)
    stats.format_compiles = counts.get("format", 0)
    stats.format_fallbacks = counts.get("format_fallback", 0)
    stats.bad_entries = counts.get("bad_entry", 0)
    stats.declined = declined_reasons(log_path)
    if stats.bad_entries:
        log.warning("tex cache: the sample found %d cache entr%s edited after verification (not served)",
                    stats.bad_entries, "y" if stats.bad_entries == 1 else "ies")
    candidates = _candidates(log_path, media_dir / "Tex", cache_dir, stats, ikey, failures)
    if not candidates:
        return stats
    scratch = Path(tempfile.mkdtemp(prefix="texverify_", dir=str(cache_dir / "tmp")))
    try:
        lines = []
        for key, source, _svg, compiler, fmt in candidates:
            d = scratch / key  # (each compile in a directory of its own, also its cwd: red team, a source that
            d.mkdir()          # tested for another candidate's file saw it there)
            tex_file = d / f"{manim_tex_hash(source.decode('utf-8'))}.tex"
            tex_file.write_bytes(source)
            cmds = " && ".join(" ".join(shlex.quote(c) for c in cmd) + " >/dev/null 2>&1"
                               for cmd in compile_commands(tex_file, compiler, fmt))
            lines.append(f"(cd {shlex.quote(str(d))} && {cmds})")
        res = run_sandboxed(make_spec(["/bin/sh", "-c", "\n".join(lines)], str(scratch)))
        if res.launch_error or res.timed_out:
            stats.notes.append(f"verify compile did not run: {res.launch_error or 'timeout'}")
            return stats
        for key, source, svg, _compiler, _fmt in candidates:
            d = scratch / key
            produced = _read_regular((d / manim_tex_hash(source.decode("utf-8"))).with_suffix(".svg"),
                                     MAX_SVG_BYTES)
            if produced is None or canonical_svg(produced) != canonical_svg(svg):
                stats.rejected += 1
                _keep_rejected(cache_dir, key, source, svg, produced)
                log.warning("tex cache: the sample's SVG for key %s was not reproduced by the trusted compile "
                            "(%s); not cached", key[:16],
                            "no SVG produced" if produced is None else f"{len(produced)} vs {len(svg)} bytes")
                continue
            _publish(cache_dir, key, produced, ikey)
            stats.published += 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return stats


# ----------------------------------------------------------------------------------------------------------
# A sample's own compiles, from its render to its separate audit (trusted parent)
#
# A sample whose render could not audit itself is audited right after it, in the same process (one-pass hand-off,
# audit/onepass.py). Its audit would compile again every formula its render compiled -- a second sighting that
# the shared cache serves only after a trusted re-compile of a third. Within :func:`own_svgs`, the render's harvest
# copies the SVGs the render compiled (its log's ``miss`` events, with the checks of :func:`_compiled`) into a
# private directory, and the audit hands them to its child, which serves one where manim would compile that very
# source and the gate passes, exactly as a verified hit (same path, same clean-up, event ``own_hit``). They are the
# sample's own output, unverified: they reach no other sample (the directory lives for this one hand-off) and give
# the script nothing it cannot do in its audit anyway (a script can leave any SVG under manim's name in its own Tex
# directory, where manim takes it, ours and the authors'). For a script that does not rewrite its own compiled SVGs,
# the audit's mobjects are those of its own compile: same source, same gate, same compile path.

_OWN = threading.local()  # .sinks: the own_svgs() directories of this thread, innermost last; .failed: those whose
# compiles could not all be kept or handed over (:func:`own_state`)


class own_svgs:
    """``with own_svgs():`` -- renders harvested inside, in this thread, copy their compiles into a fresh private
    directory (``sandbox.owned_dir``: removed at the end, or by the next one made after this process was killed), and
    separate audits inside serve them (:func:`own_dir_for_audit`)."""

    def __init__(self, base: str | os.PathLike | None = None):
        self.base = Path(base) if base is not None else None  # None: this process's run root (sandbox.run_root)
        self.dir = self.path = None

    def __enter__(self) -> Path:
        from prism_fast.execute import sandbox

        self.dir = sandbox.owned_dir(self.base if self.base is not None else sandbox.run_root(), "tex_own_")
        self.path = self.dir.__enter__()
        sinks = getattr(_OWN, "sinks", None)
        if sinks is None:
            sinks = _OWN.sinks = []
        sinks.append(self.path)
        return self.path

    def __exit__(self, *exc) -> None:
        sinks = getattr(_OWN, "sinks", [])
        if self.path in sinks:
            sinks.remove(self.path)
        getattr(_OWN, "failed", set()).discard(self.path)
        if self.dir is not None:
            self.dir.__exit__(*exc)


def own_sink() -> Path | None:
    """The innermost :class:`own_svgs` directory of this thread, else None."""
    sinks = getattr(_OWN, "sinks", None)
    return sinks[-1] if sinks else None


def mark_own_failed(sink: Path) -> None:
    """Some of the render's compiles could not be kept in ``sink`` or handed to its audit (the audit compiles them
    itself: the same report; :func:`own_state` says so in the audit's row)."""
    failed = getattr(_OWN, "failed", None)
    if failed is None:
        failed = _OWN.failed = set()
    failed.add(Path(sink))


def own_state() -> str | None:
    """What the separate audit about to run in this thread gets of its render's compiles (row ``tex_own``; the
    audit asks only where it uses the TeX cache): None outside a hand-off (:class:`own_svgs`), ``failed`` where
    some could not be kept or copied (warned), ``handed`` where the render's compiles are there for it, ``none``
    where the render compiled nothing to hand over."""
    src = own_sink()
    if src is None:
        return None
    if src in getattr(_OWN, "failed", ()):
        return "failed"
    return "handed" if (src / OWN_MANIFEST).exists() else "none"


def collect_own(log_path: Path, tex_dir: Path, dest: Path) -> int:
    """Copy the compiles the sample's log reports (:func:`_compiled`) from its ``tex_dir`` into ``dest`` (after the
    sample's process is gone), with their sha256 in ``dest/own.txt``; returns how many. Bounded in files and bytes.
    """
    stats = HarvestStats()
    have = {line.split()[0] for line in (_read_regular(dest / OWN_MANIFEST, MAX_MANIFEST_BYTES) or b"")
            .decode("ascii", "replace").splitlines() if line.split()}
    total = sum(f.stat().st_size for f in dest.glob("*.svg"))
    lines, n = [], 0
    for key, _source, svg, _compiler, _fmt in _compiled(log_path, tex_dir, stats):
        if key in have:
            continue
        if len(have) >= MAX_OWN_FILES or total + len(svg) > MAX_OWN_BYTES:
            break
        (dest / f"{key}.svg").write_bytes(svg)  # (a private directory of this process: no reader before the audit)
        lines.append(f"{key} {hashlib.sha256(svg).hexdigest()}\n")
        have.add(key)
        total += len(svg)
        n += 1
    if lines:
        with open(dest / OWN_MANIFEST, "a", encoding="ascii") as f:
            f.write("".join(lines))
    return n


def own_dir_for_audit(scratch: Path) -> Path | None:
    """Within :func:`own_svgs`: a copy of its directory inside the audit's ``scratch``, else None. The child reads
    it into memory and removes it before the script runs (:func:`_load_own`)."""
    src = own_sink()
    if src is None or not (src / OWN_MANIFEST).exists():
        return None
    dest = scratch / ".tmp" / "tex_own"
    try:
        shutil.copytree(src, dest, dirs_exist_ok=True)
    except OSError as exc:  # the audit then compiles them itself (its report is the same; row: tex_own=failed)
        log.warning("tex cache: own compiles not handed to the audit (row: tex_own=failed): %s", exc)
        mark_own_failed(src)
        shutil.rmtree(dest, ignore_errors=True)
        return None
    return dest


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


# ----------------------------------------------------------------------------------------------------------
# The verified view a sample is given (trusted parent)


@dataclass
class _View:
    root: Path
    path: Path
    key: bytes
    failures: integrity.FailureLog
    dirs: dict[str, tuple] = field(default_factory=dict)  # svg/<k> -> its stat when last scanned
    entries: dict[str, tuple] = field(default_factory=dict)  # key -> (svg stat, tag stat) when last examined
    shown: dict[str, int] = field(default_factory=dict)  # key -> inode of the file in the view
    fmt: texformat.FormatInfo | None = None  # the checked format of manim's default preamble, in the view
    fmt_state: str = "off"  # on | off | failed (texformat.py; recorded per row as ``tex_format``)


_VIEWS: dict[tuple[int, str, str], _View] = {}


def _ident(st: os.stat_result) -> tuple:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _stat(path: Path) -> tuple | None:
    try:
        return _ident(os.stat(path, follow_symlinks=False))
    except OSError:
        return None


def _sweep_stale_views(views: Path) -> None:
    """Remove the views of processes on this host that are gone (killed before their exit handler ran)."""
    host = socket.gethostname()
    for d in views.iterdir() if views.is_dir() else ():
        try:
            h, pid, _token = d.name.rsplit("-", 2)
            pid = int(pid)
        except ValueError:
            continue
        if h != host or pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            _rmtree_view(d)
        except OSError:
            pass


def _rmtree_view(path: Path) -> None:
    """Remove a view whose svg folders cannot be listed (VIEW_DIR_MODE): made listable first by their owner."""
    svg = path / "svg"
    try:
        os.chmod(svg, 0o700)
        for sub in os.scandir(svg):
            if sub.is_dir(follow_symlinks=False):
                os.chmod(sub.path, 0o700)
    except OSError:
        pass
    shutil.rmtree(path, ignore_errors=True)


def _remove_view(path: Path, owner: int) -> None:
    if os.getpid() == owner:  # not in a forked child that happens to run exit handlers
        _rmtree_view(path)


def _new_view(root: Path, ikey: bytes) -> _View:
    _sweep_stale_views(root / "views")
    path = root / "views" / f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
    (path / "svg").mkdir(parents=True)
    os.chmod(path / "svg", VIEW_DIR_MODE)
    (path / MANIFEST_NAME).touch()
    atexit.register(_remove_view, path, os.getpid())
    return _View(root, path, ikey, integrity.FailureLog(log, "tex cache"))


def _show(view: _View, key: str, data: bytes, manifest) -> None:
    """Hard-link (else copy) the published SVG into the view, hash the linked file again (a swap between the
    check and the link is caught) and record its sha256."""
    dest = view_path(view.path, key)
    if not dest.parent.is_dir():
        dest.parent.mkdir()
        os.chmod(dest.parent, VIEW_DIR_MODE)
    tmp = fsutil.temp_name(dest)
    try:
        try:
            os.link(entry_path(view.root, key), tmp)
        except OSError:
            fsutil.atomic_write_bytes(tmp, data, fsync=False)
        linked = _read_regular(tmp, MAX_SVG_BYTES)
        sha = hashlib.sha256(data).hexdigest()
        if linked is None or hashlib.sha256(linked).hexdigest() != sha:
            view.failures(key[:16], "SVG changed while it was being verified")
            return
        st = os.stat(tmp)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    view.shown[key] = st.st_ino
    manifest.write(f"{manifest_id(key)} {sha}\n")


def _sync(view: _View) -> None:
    svg_root = view.root / "svg"
    now = time.time_ns()
    with open(view.path / MANIFEST_NAME, "a", encoding="ascii") as manifest:
        for sub in sorted(os.scandir(svg_root), key=lambda e: e.name):
            if not sub.is_dir(follow_symlinks=False):
                continue
            st = os.stat(sub.path, follow_symlinks=False)
            ident = _ident(st)
            if view.dirs.get(sub.name) == ident:
                continue
            for ent in os.scandir(sub.path):
                name = ent.name
                if not name.endswith(".svg") or not _KEY_HEX.match(name[:-4]):
                    continue
                key = name[:-4]
                state = (_stat(Path(ent.path)), _stat(tag_path(view.root, key)))
                if view.entries.get(key) == state:
                    continue
                view.entries[key] = state
                data, why = verify_entry(view.root, key, view.key)
                if data is None:
                    view.failures(key[:16], why)
                    if key in view.shown and state[0] is not None and state[0][0] == view.shown[key]:
                        view_path(view.path, key).unlink(missing_ok=True)  # the view shares the bad file
                        view.shown.pop(key)
                    continue
                _show(view, key, data, manifest)
            # a directory changed within the last second may change again within the same clock tick: rescan
            view.dirs[sub.name] = ident if now - st.st_mtime_ns > 1_000_000_000 else None


def _keep_format(view: _View, wanted: bool, prebuilt: tuple[str, str] | None = None) -> None:
    """Build the view's format the first time it is wanted, and again (with a warning) when its file is no longer
    the one that was checked."""
    if not wanted:
        return  # a format built for earlier samples stays; this sample is not told about it (ENV_FORMAT)
    if view.fmt is not None and not texformat.unchanged(view.fmt):
        log.warning("tex cache: the LaTeX format in %s changed after its self-check; built again", view.path)
        shutil.rmtree(view.path / texformat.FMT_DIR, ignore_errors=True)
        view.fmt, view.fmt_state = None, "off"
    if view.fmt_state == "failed" or view.fmt is not None:
        return
    if prebuilt is not None:
        info, why = texformat.adopt(view.path, prebuilt[0], prebuilt[1])
        if info is not None:
            view.fmt, view.fmt_state = info, "on"
            log.info("tex cache: LaTeX format %s taken from %s in %.2f s", info.name, prebuilt[0], info.build_s)
            return
        log.info("tex cache: the prebuilt LaTeX format was not taken (%s); building one here", why)
    info, why = texformat.build(view.path)
    if info is None:
        shutil.rmtree(view.path / texformat.FMT_DIR, ignore_errors=True)
        view.fmt_state = "failed"
        log.warning("tex cache: no LaTeX format for manim's default preamble (%s); every TeX compile runs in full "
                    "(rows: tex_format=failed)", why)
        return
    view.fmt, view.fmt_state = info, "on"
    log.info("tex cache: LaTeX format %s built and checked in %.2f s", info.name, info.build_s)


def prepare_cache_dir(cache_dir: str | os.PathLike, integrity_key: bytes | None = None,
                      tex_format: bool = False, prebuilt: tuple[str, str] | None = None) -> Path:
    """Create the cache's folders and return the directory to give the next sample (read-only, as the
    :data:`ENV_CACHE` of :func:`install`): this process's verified view of the cache, brought up to date
    (module docstring). ``integrity_key``: default, the key of :func:`prism_fast.integrity.default_key_dir`.
    ``tex_format``: the view also holds a self-checked LaTeX format of manim's default preamble (texformat.py);
    :func:`format_state` says whether it does. ``prebuilt``: (file, sha256) of a format trusted code already built
    and checked (``texformat.adopt``; the pipeline's driver builds one while Ray starts), else it is built here."""
    root = _root(cache_dir)
    ikey = _key_for(root, integrity_key)
    ident = (os.getpid(), str(root), fsutil.sha256_hex(ikey))
    view = _VIEWS.get(ident)
    if view is None or not (view.path / MANIFEST_NAME).is_file():
        view = _VIEWS[ident] = _new_view(root, ikey)
    _sync(view)
    _keep_format(view, tex_format, prebuilt)
    return view.path


def format_state(view_path: str | os.PathLike) -> str:
    """``on`` | ``off`` | ``failed``: the LaTeX format of the view :func:`prepare_cache_dir` returned (``off``:
    never asked for). A sample uses it only if its environment has :data:`ENV_FORMAT` (:func:`sample_env`)."""
    for v in _VIEWS.values():
        if v.path == Path(view_path):
            return v.fmt_state
    return "off"


def integrity_failures(cache_dir: str | os.PathLike) -> int:
    """Published entries this process found without a valid tag (or not matching it) while keeping its view."""
    root = Path(cache_dir).resolve()
    return sum(v.failures.count for (pid, r, _k), v in _VIEWS.items() if pid == os.getpid() and r == str(root))
