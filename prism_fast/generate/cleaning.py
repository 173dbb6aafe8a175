"""Cleaning a raw model reply into a script (spec generation.md §4).

The chain, in order: strip / busy sentinel → remove thinking blocks and header lines → keep the longest fenced
block (or drop stray fence markers) → cut leading lines before the first code-start line → strip →
``looks_like_code`` → font injection. ``reference`` reproduces the authors' toolkit exactly (quirks Q-GEN-1,
Q-GEN-2, Q-GEN-5 included); ``improved`` fixes them.

Besides the code, the result records which kinds of format pollution were seen (fences, think tags, header lines,
prose before / after the code), so a row can say *why* a reply was polluted even when cleaning rescued it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from prism_fast.profile import REFERENCE, Profile

# The toolkit's LLM client returns this when retries are exhausted or the reply is empty (generation.md §3).
BUSY_SENTINEL = "服务器繁忙，请稍后再试吧"

_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL
# The toolkit's pattern. Python's backtracking engine takes quadratic time on it (every unclosed ``<think>``
# scans to the end of the reply: 20 s for 140 KB), so :func:`strip_think_blocks` computes the same
# substitution in linear time; tests/generate/test_cleaning.py checks both agree.
THINK_RE = re.compile(r"<think(?:ing)?[^>]*>.*?</think(?:ing)?>", _FLAGS)
_THINK_OPEN = re.compile(r"<think", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_HEADER = r"^\s*(?:思考过程|推理过程|Reasoning|Thought process)\s*[:：].*$"
HEADER_RE_REFERENCE = re.compile(_HEADER, _FLAGS)  # DOTALL: `.*$` runs to the end of the text (Q-GEN-1)
HEADER_RE_IMPROVED = re.compile(_HEADER, re.IGNORECASE | re.MULTILINE)  # one line only
# The same patterns without their leading ``^\s*``: matched at the first non-space character of a line start's
# whitespace run (strip_header_lines; the leading ``\s*`` costs quadratic time on long whitespace runs).
_HEADER_TAIL = r"(?:思考过程|推理过程|Reasoning|Thought process)\s*[:：].*$"
_HEADER_TAIL_REFERENCE = re.compile(_HEADER_TAIL, _FLAGS)
_HEADER_TAIL_IMPROVED = re.compile(_HEADER_TAIL, re.IGNORECASE | re.MULTILINE)
_WS = re.compile(r"\s*")
FENCE_RE = re.compile(r"```(?:python|py)?\s*(.*?)```", re.IGNORECASE | re.DOTALL)
STRAY_FENCE_RE = re.compile(r"```(?:python|py)?|```", re.IGNORECASE)

# Reference code-start prefixes (cut and looks_like_code). "from manim import *" is redundant with the first,
# kept because the toolkit lists it.
CODE_START_PREFIXES = ("from manim import", "import manim", "from manim import *", "class ")
_CUT_PREFIXES = ("from manim import", "import manim", "class ")
# Improved (Q-GEN-2): any import statement or class definition starts the code.
_IMPROVED_CODE_START_RE = re.compile(r"(?:import\s|from\s+[\w.]+\s+import\b|class\s)")

FONT_LINES_STAR = "from manim import *\nfrom manim import config\nText.set_default(font='SimHei')"
FONT_LINES_MODULE = "import manim\nfrom manim import config\nmanim.Text.set_default(font='SimHei')"

CLEAN_STATUSES = ("success", "empty_after_cleanup")


@dataclass(frozen=True)
class FormatPollution:
    """Evidence of format pollution found in the raw reply (recorded whether or not cleaning removed it)."""

    fenced_blocks: int = 0        # complete ```…``` blocks
    stray_fences: int = 0         # fence markers outside complete blocks that were deleted
    think_blocks: int = 0         # <think>/<thinking> blocks removed
    header_lines: int = 0         # "Reasoning:" / "思考过程：" … header matches removed
    header_removed_chars: int = 0  # characters removed by the header pattern (Q-GEN-1 makes this large)
    prose_before: bool = False    # non-blank text before the kept code
    prose_after: bool = False     # non-blank text after the kept fenced block

    @property
    def fences(self) -> bool:
        return self.fenced_blocks > 0 or self.stray_fences > 0

    @property
    def any(self) -> bool:
        return bool(self.fences or self.think_blocks or self.header_lines or self.prose_before or self.prose_after)

    def kinds(self) -> list[str]:
        """The kinds found, in a fixed order: fences, think_tags, header_lines, prose_before, prose_after."""
        flags = (("fences", self.fences), ("think_tags", self.think_blocks > 0),
                 ("header_lines", self.header_lines > 0), ("prose_before", self.prose_before),
                 ("prose_after", self.prose_after))
        return [name for name, on in flags if on]


@dataclass(frozen=True)
class CleanResult:
    code: str                     # the cleaned script; "" when nothing usable is left
    status: str                   # "success" | "empty_after_cleanup"
    empty_reason: str | None      # None | "empty_reply" | "busy_sentinel" | "nothing_left" | "not_code" | "reply_too_large"
    pollution: FormatPollution = field(default_factory=FormatPollution)
    font_injected: bool = False
    language: str = "en"
    profile: str = "reference"
    reply_chars: int = 0  # length of the raw reply
    max_reply_chars: int | None = None  # the cap it was cleaned under

    @property
    def evidence(self) -> dict:
        """Format-pollution evidence as a plain dict: ``kinds`` (fixed order) plus the raw counts."""
        return {"kinds": self.pollution.kinds(), **asdict(self.pollution), "empty_reason": self.empty_reason,
                "font_injected": self.font_injected, "reply_chars": self.reply_chars,
                "max_reply_chars": self.max_reply_chars}

    def to_row(self) -> dict:
        """Per-row fields (the cleaned code itself is written to cleaned_scripts/<id>.py, not the row)."""
        return {
            "status": self.status,
            "error_kind": None if self.status == "success" else "empty_after_cleanup",
            "error_detail": self.empty_reason,
            "cleaned_chars": len(self.code),
            "format_pollution": self.pollution.kinds(),
            "format_pollution_detail": asdict(self.pollution),
            "font_injected": self.font_injected,
            "cleaning_profile": self.profile,
            "reply_chars": self.reply_chars,
            "max_reply_chars": self.max_reply_chars,
        }


def _is_code_start(stripped_line: str, profile: Profile) -> bool:
    if profile.fixes("Q-GEN-2"):  # improved: any import / from-import / class line starts the code
        return bool(_IMPROVED_CODE_START_RE.match(stripped_line))
    return stripped_line.startswith(_CUT_PREFIXES)


def looks_like_code(text: str, profile: Profile = REFERENCE) -> bool:
    """Step 6: the left-stripped text must start like code.

    Reference: ``from manim import``, ``import manim`` or ``class ``. Under Q-GEN-2 (improved) the same starts as
    the improved cut are accepted, otherwise the numpy import that the fix keeps would empty the script.
    """
    stripped = (text or "").lstrip()
    if profile.fixes("Q-GEN-2"):  # improved: consistent with the improved leading-line cut
        return bool(_IMPROVED_CODE_START_RE.match(stripped))
    return stripped.startswith(CODE_START_PREFIXES)


def inject_font_defaults(code: str) -> str:
    """Step 7: insert the SimHei default after the first ``from manim import *`` (else ``import manim``)."""
    if "from manim import *" in code:
        return code.replace("from manim import *", FONT_LINES_STAR, 1)
    if "import manim" in code:
        return code.replace("import manim", FONT_LINES_MODULE, 1)
    return code


# Code-start lines as patterns over "\n"-joined lines (each line's own whitespace only: ``[^\S\n]``), equal to
# ``_is_code_start(line.strip(), profile)``: a prefix ending in whitespace needs a non-space after it on the line,
# since ``strip()`` removes trailing whitespace.
_CODE_LINE_REFERENCE = re.compile(r"^[^\S\n]*(?:from manim import|import manim|class [^\S\n]*\S)", re.MULTILINE)
_CODE_LINE_IMPROVED = re.compile(
    r"^[^\S\n]*(?:import[^\S\n]+\S|from[^\S\n]+[\w.]+[^\S\n]+import\b|class[^\S\n]+\S)", re.MULTILINE)
_NON_SPACE = re.compile(r"\S")


def _cut_leading_lines(text: str, profile: Profile) -> tuple[str, bool]:
    """Step 4: drop the lines before the first code-start line; also says whether non-blank lines were dropped.

    The toolkit's loop over ``text.splitlines()`` (re-joined with "\n"), done with one pattern search so that a
    reply of millions of lines costs C time, not a Python iteration per line."""
    joined = "\n".join(text.splitlines())
    pattern = _CODE_LINE_IMPROVED if profile.fixes("Q-GEN-2") else _CODE_LINE_REFERENCE  # Q-GEN-2
    m = pattern.search(joined)
    if m is None:
        return joined, False
    start = m.start()  # a line start ("^"), the first line that _is_code_start accepts
    end = joined.find("\n", start)
    if not _is_code_start(joined[start:end if end >= 0 else len(joined)].strip(), profile):  # never seen; exact
        lines = joined.split("\n")  # fallback rather than a wrong cut
        first = next((i for i, ln in enumerate(lines) if _is_code_start(ln.strip(), profile)), 0)
        return "\n".join(lines[first:]), any(ln.strip() for ln in lines[:first])
    return joined[start:], _NON_SPACE.search(joined, 0, start) is not None


def strip_think_blocks(text: str) -> tuple[str, int]:
    """``THINK_RE.subn("", text)`` in linear time.

    A match starts at a ``<think`` (case-insensitive); its opening tag ends at the first ``>`` after it (whatever
    ``(?:ing)?[^>]*`` absorbs), and the lazy ``.*?`` ends at the first ``</think>``/``</thinking>`` after that.
    Both positions only move forward as the start moves forward, so each is searched once per advance; and when
    no closer (or no ``>``) follows a start, none follows any later start either: the scan stops."""
    out: list[str] = []
    count = 0
    pos = 0  # everything before pos is decided
    gt = -1  # first '>' at or after the current candidate's tag name
    close = None  # the first closer at or after (gt + 1), cached
    while True:
        m = _THINK_OPEN.search(text, pos)
        if m is None:
            break
        start = m.start()
        if gt < m.end():
            gt = text.find(">", m.end())
            if gt < 0:
                break
        if close is None or close.start() <= gt:
            close = _THINK_CLOSE.search(text, gt + 1)
            if close is None:
                break
        out.append(text[pos:start])
        count += 1
        pos = close.end()
    out.append(text[pos:])
    return "".join(out), count


_HEADER_KEY = re.compile(r"思考过程|推理过程|Reasoning|Thought process", re.IGNORECASE)


def strip_header_lines(text: str, improved: bool) -> tuple[str, int]:
    """``(HEADER_RE_IMPROVED if improved else HEADER_RE_REFERENCE).subn("", text)`` in linear time.

    Every match is anchored at a header keyword ``q``: its line start ``p`` is the first line start inside the
    whitespace run (``\\s*``, newlines included) that ends at ``q``. So the scan jumps from keyword to keyword
    (no keyword: no match), takes the run before each from ``rstrip`` (runs before different keywords do not
    overlap), and checks the rest of the pattern at ``q``."""
    tail = _HEADER_TAIL_IMPROVED if improved else _HEADER_TAIL_REFERENCE
    out: list[str] = []
    count = 0
    pos = 0  # everything before pos is decided (the regex resumes its scan here)
    scan = 0  # where to look for the next keyword
    n = len(text)
    while scan < n:
        k = _HEADER_KEY.search(text, scan)
        if k is None:
            break
        q = k.start()
        # The run before q starts at or after `scan` (the end of an earlier keyword: not whitespace) and a match
        # cannot start before `pos`; so this gives max(run start, pos) from a slice no other keyword rescans.
        lo = max(pos, scan)
        run_start = lo + len(text[lo:q].rstrip())
        p = None
        if run_start == 0 or text[run_start - 1] == "\n":
            p = run_start
        else:
            nl = text.find("\n", run_start, q)
            if nl >= 0:
                p = nl + 1
        m = tail.match(text, q) if p is not None else None
        if m is None:
            scan = k.end()
            continue
        out.append(text[pos:p])
        count += 1
        pos = scan = m.end()
    out.append(text[pos:])
    return "".join(out), count


# Replies longer than this are not cleaned (``empty_reason: reply_too_large``, recorded with the reply's length).
# The toolkit has no cap; real replies are far below it (a 32k-token reply is ~130k characters), so it changes
# no real row, while a multi-megabyte reply cannot stall the driver.
MAX_REPLY_CHARS = 1 << 20


def clean_model_output(raw: str | None, language: str, profile: Profile = REFERENCE,
                       max_reply_chars: int | None = MAX_REPLY_CHARS) -> CleanResult:
    """Clean one raw reply (generation.md §4) and report what pollution was found. Linear time in the reply's
    length (each step; tests/generate/test_cleaning.py), and replies over ``max_reply_chars`` (None: no cap)
    are refused before any step."""
    if language not in ("en", "zh"):
        raise ValueError(f"language must be 'en' or 'zh', got {language!r}")
    reply_chars = len(raw or "")

    def empty(reason: str, pollution: FormatPollution = FormatPollution()) -> CleanResult:
        return CleanResult("", "empty_after_cleanup", reason, pollution, False, language, profile.name,
                           reply_chars, max_reply_chars)

    if max_reply_chars is not None and reply_chars > max_reply_chars:
        return empty("reply_too_large")
    # 1. strip; empty reply or busy sentinel → nothing.
    text = (raw or "").strip()
    if not text:
        return empty("empty_reply")
    if text == BUSY_SENTINEL:
        return empty("busy_sentinel")

    # 2. thinking blocks, then header lines.
    text, think_blocks = strip_think_blocks(text)
    before_header = len(text)
    text, header_lines = strip_header_lines(text, improved=profile.fixes("Q-GEN-1"))  # Q-GEN-1
    header_removed = before_header - len(text)

    # 3. longest fenced block (the first of equal-length ones), else drop stray markers.
    blocks = list(FENCE_RE.finditer(text))
    prose_before = prose_after = False
    stray = 0
    if blocks:
        kept = max(blocks, key=lambda m: len(m.group(1)))
        outside_before = FENCE_RE.sub("", text[: kept.start()])
        outside_after = FENCE_RE.sub("", text[kept.end():])
        prose_before = bool(STRAY_FENCE_RE.sub("", outside_before).strip())
        prose_after = bool(STRAY_FENCE_RE.sub("", outside_after).strip())
        stray = len(STRAY_FENCE_RE.findall(outside_before + "\n" + outside_after))
        text = kept.group(1).strip()
    else:
        text, stray = STRAY_FENCE_RE.subn("", text)
        text = text.strip()

    # 4.–5. leading-line cut (Q-GEN-2 inside), strip.
    text, dropped = _cut_leading_lines(text, profile)
    text = text.strip()
    pollution = FormatPollution(
        fenced_blocks=len(blocks), stray_fences=stray, think_blocks=think_blocks, header_lines=header_lines,
        header_removed_chars=header_removed, prose_before=prose_before or dropped, prose_after=prose_after,
    )
    if not text:
        return empty("nothing_left", pollution)

    # 6. must look like code.
    if not looks_like_code(text, profile):
        return empty("not_code", pollution)

    # 7. font injection: every language in reference, zh only when Q-GEN-5 is fixed.
    inject = language == "zh" if profile.fixes("Q-GEN-5") else True  # Q-GEN-5
    code = inject_font_defaults(text) if inject else text
    return CleanResult(code, "success", None, pollution, code != text, language, profile.name, reply_chars,
                       max_reply_chars)
