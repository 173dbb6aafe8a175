"""Error taxonomy: 12 fine error types, their stages, and the paper's six categories (spec execution.md §6–§8).

The decision list and the pattern lists reproduce the authors' ``scripts/error_taxonomy.py`` exactly, in both
profiles. The collapse onto the paper's six categories (§6.5) and the producer of the inputs (§8) are ours.

Public API::

    inputs = build_taxonomy_inputs(passed=..., code=..., render_error=..., render_stderr=..., findings=[...])
    c = classify(inputs)            # Classification(fine_type, category, stage, matched_pattern, ...)
    row.update(c.to_row())
    row.update(taxonomy_fields(code=..., render_row=...))  # all of the above in one call, checker included
    aggregate_error_breakdown(rows)  # counts and rates per type / stage / category
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from prism_fast.execute.hallucination import Finding, corroborated_count

# --------------------------------------------------------------------------------------------------------------
# Closed vocabularies
# --------------------------------------------------------------------------------------------------------------

# Display order (§6.2), which differs from the decision order.
ERROR_TYPE_ORDER: tuple[str, ...] = (
    "empty_output", "provider_error", "timeout_error", "format_contamination", "syntax_error",
    "api_hallucination", "api_misuse", "text_render_error", "asset_error", "value_error",
    "other_runtime_error", "other_error",
)
ERROR_TYPE_LABELS: dict[str, str] = {
    "empty_output": "Empty output", "provider_error": "Provider/server", "timeout_error": "Timeout",
    "format_contamination": "Format contamination", "syntax_error": "Syntax error",
    "api_hallucination": "API hallucination", "api_misuse": "API misuse",
    "text_render_error": "Text render error", "asset_error": "Asset error",
    "value_error": "Value/semantic error", "other_runtime_error": "Other runtime", "other_error": "Other error",
}
ERROR_STAGE_ORDER: tuple[str, ...] = ("llm_call", "llm_output", "parse", "render", "postprocess", "other")
ERROR_STAGE_LABELS: dict[str, str] = {
    "llm_call": "LLM call", "llm_output": "LLM output", "parse": "Python parse", "render": "Manim render",
    "postprocess": "Post-process", "other": "Other",
}

# The paper's six categories (§6.5, ours): id -> label, and the collapse of the 12 types onto them.
CATEGORY_ORDER: tuple[str, ...] = (
    "api_hallucination", "api_misuse", "text_rendering_error", "format_pollution", "syntax_error", "other_error",
)
CATEGORY_LABELS: dict[str, str] = {
    "api_hallucination": "API hallucination", "api_misuse": "API misuse",
    "text_rendering_error": "Text rendering error", "format_pollution": "Format pollution",
    "syntax_error": "Syntax error", "other_error": "Other error",
}
CATEGORY_OF_TYPE: dict[str, str] = {
    "api_hallucination": "api_hallucination",
    "api_misuse": "api_misuse",
    "text_render_error": "text_rendering_error",
    "format_contamination": "format_pollution",
    "syntax_error": "syntax_error",
    **{t: "other_error" for t in ("empty_output", "provider_error", "timeout_error", "asset_error",
                                  "value_error", "other_runtime_error", "other_error")},
}

# --------------------------------------------------------------------------------------------------------------
# Pattern lists (§6.3, complete, lower-case substrings, in list order)
# --------------------------------------------------------------------------------------------------------------

EMPTY_PATTERNS = ("empty model output after cleanup", "empty response")
PROVIDER_PATTERNS = (
    "server busy", "service unavailable", "provider busy", "rate limit", "too many requests",
    "temporarily unavailable", "overloaded", "upstream", "bad gateway", "gateway timeout",
    "status code 429", "status code 502", "status code 503", "status code 504",
)
TIMEOUT_PATTERNS = ("timed out", "timeout")
TEXT_RENDER_PATTERNS = (
    "latex error converting to dvi", "unknown tag", "continuation byte", "invalid continuation byte", "markup",
    "pangocairo", "pangomarkup", "tex error",
)
ASSET_PATTERNS = (
    "must specify file for svgmobject", "no such file or directory", "file not found", "cannot find image",
    "cannot open resource", "failed to load svg",
)
API_MISUSE_PATTERNS = (
    "unexpected keyword argument", "unexpected positional argument", "unexpected keyword",
    "got multiple values for keyword argument", "multiple values for keyword argument", "has no attribute",
    "object has no attribute", "module 'manim", "module 'manim.utils", "module 'manim.'",
    "got an unexpected keyword", "missing 1 required positional argument", "missing required positional argument",
    "takes ",
)
VALUE_PATTERNS = (
    "too few rows and columns", "a.any() or a.all()", "must be str or falsy value", "argument 'stretch'",
    "argument 'x'", "argument 'y'", "argument 'z'", "keyword argument 'font_size'", "values for keyword argument",
    "could not broadcast",
)

# Format contamination (§7)
PROSE_START_MARKERS = ("```", "<think", "</think", "Thought process", "Reasoning:", "思考过程", "推理过程")
PROSE_HINT_WORDS = frozenset({
    "replace", "using", "ensure", "positioning", "scale", "keep", "avoid", "make", "center", "render", "set",
    "adjust", "move", "use", "add",
})
_BULLET_RE = re.compile(r"^[-*+]\s+[A-Za-z\u4e00-\u9fff]")
_NUMBERED_RE = re.compile(r"^\d+\.\s+[A-Za-z\u4e00-\u9fff]")
_PAREN_DASH_RE = re.compile(r"\)\s*-\s+[A-Za-z\u4e00-\u9fff]")
_WORD_RE = re.compile(r"[A-Za-z]+")
_CODE_MARKERS = ("```", "<think", "</think>")

# §8: an exception line in the render stderr.
EXCEPTION_LINE_RE = re.compile(r"^\w+(\.\w+)*(Error|Exception|Exit|Interrupt)\b")
EMPTY_OUTPUT_MESSAGE = "empty model output after cleanup"


# --------------------------------------------------------------------------------------------------------------
# Inputs and result
# --------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TaxonomyInputs:
    """Exactly what the classifier reads (§6.1); see :func:`build_taxonomy_inputs` for how it is produced."""

    passed: bool
    error_msg: str = ""
    error_trace: str = ""
    code_parse_error: str = ""
    hallucination_count: int = 0
    code: str = ""

    def combined(self) -> str:
        parts = (_clean(self.error_msg), _clean(self.error_trace), _clean(self.code_parse_error))
        return "\n".join(p for p in parts if p).lower()


@dataclass(frozen=True)
class Classification:
    fine_type: str | None            # one of ERROR_TYPE_ORDER, None when the row passed
    category: str | None             # one of CATEGORY_ORDER, None when the row passed
    stage: str | None                # one of ERROR_STAGE_ORDER, None when the row passed
    matched_pattern: str | None      # what decided: a pattern-list entry, a rule name, or a contamination reason
    rule: int = 0                    # the decision-list rule number (§6.2) that fired
    flags: tuple[str, ...] = field(default_factory=tuple)

    @property
    def display(self) -> str | None:
        return ERROR_TYPE_LABELS[self.fine_type] if self.fine_type else None

    def to_row(self) -> dict:
        """The toolkit's four fields (``annotate_result_error``) followed by ours."""
        return {
            "error_stage": self.stage,
            "error_type": self.fine_type,
            "error_type_display": self.display,
            "error_flags": list(self.flags),
            "error_category": self.category,
            "error_category_display": CATEGORY_LABELS[self.category] if self.category else None,
            "error_matched_pattern": self.matched_pattern,
            "error_rule": self.rule,
        }


def _clean(value) -> str:
    return str(value or "").strip()


def _first_match(text: str, patterns: Iterable[str]) -> str | None:
    return next((p for p in patterns if p in text), None)


# --------------------------------------------------------------------------------------------------------------
# Format contamination (§7)
# --------------------------------------------------------------------------------------------------------------

def prose_line_reason(line: str) -> str | None:
    """Which §7 rule (a)–(f) makes this line look like prose, or None."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    if stripped.startswith(PROSE_START_MARKERS):
        return "a"
    if _BULLET_RE.match(stripped):
        return "b"
    if _NUMBERED_RE.match(stripped):
        return "c"
    if _PAREN_DASH_RE.search(stripped):
        return "d"
    words = _WORD_RE.findall(stripped)
    if len(words) >= 3 and words[0].lower() in PROSE_HINT_WORDS and "=" not in stripped:
        return "e"
    if len(words) >= 5 and not any(ch in stripped for ch in "()[]=,.:"):
        return "f"
    return None


def format_contamination_reason(code: str | None, parse_error: str | None) -> str | None:
    """Why rule 4 calls a parse failure format contamination (§7), or None for a plain syntax error."""
    if "invalid character" in _clean(parse_error).lower():
        return "invalid character"
    text = _clean(code)
    if not text:
        return None
    marker = _first_match(text, _CODE_MARKERS)
    if marker:
        return f"marker {marker}"
    for number, line in enumerate(text.splitlines(), 1):
        reason = prose_line_reason(line)
        if reason:
            return f"prose line {number} ({reason})"
    return None


def looks_like_format_contamination(code: str | None, parse_error: str | None = None) -> bool:
    return format_contamination_reason(code, parse_error) is not None


# --------------------------------------------------------------------------------------------------------------
# Decision list (§6.2)
# --------------------------------------------------------------------------------------------------------------

def _result(fine_type: str, stage: str, matched: str | None, rule: int, flags: list[str]) -> Classification:
    return Classification(fine_type, CATEGORY_OF_TYPE[fine_type], stage, matched, rule, tuple(sorted(set(flags))))


def classify(inputs: TaxonomyInputs) -> Classification:
    """First-match classification of one row (§6.2)."""
    if inputs.passed:
        return Classification(None, None, None, None, 0, ())
    combined = inputs.combined()
    parse_error = _clean(inputs.code_parse_error)
    error_msg, error_trace = _clean(inputs.error_msg), _clean(inputs.error_trace)
    hallucinations = int(inputs.hallucination_count or 0)
    flags = []
    if parse_error:
        flags.append("code_parse_error")
    if hallucinations > 0:
        flags.append("api_hallucination_detected")

    if (hit := _first_match(combined, EMPTY_PATTERNS)) is not None:
        return _result("empty_output", "llm_output", hit, 1, flags)
    if (hit := _first_match(combined, PROVIDER_PATTERNS)) is not None:
        return _result("provider_error", "llm_call", hit, 2, flags)
    if (hit := _first_match(combined, TIMEOUT_PATTERNS)) is not None:
        return _result("timeout_error", "render", hit, 3, flags)
    if parse_error:
        reason = format_contamination_reason(inputs.code, parse_error)
        if reason is not None:
            flags.append("format_contamination_detected")
            return _result("format_contamination", "parse", reason, 4, flags)
        return _result("syntax_error", "parse", "code_parse_error", 4, flags)
    if hallucinations > 0:
        return _result("api_hallucination", "render", "hallucination_count > 0", 5, flags)
    if (hit := _first_match(combined, ASSET_PATTERNS)) is not None:
        return _result("asset_error", "render", hit, 6, flags)
    if (hit := _first_match(combined, TEXT_RENDER_PATTERNS)) is not None:
        return _result("text_render_error", "render", hit, 7, flags)
    if (hit := _first_match(combined, API_MISUSE_PATTERNS)) is not None:
        return _result("api_misuse", "render", hit, 8, flags)
    if (hit := _first_match(combined, VALUE_PATTERNS)) is not None:
        return _result("value_error", "render", hit, 9, flags)
    if error_msg or error_trace:
        return _result("other_runtime_error", "render", "error_msg or error_trace", 10, flags)
    return _result("other_error", "other", None, 11, flags)


# --------------------------------------------------------------------------------------------------------------
# Producing the inputs (§8, ours)
# --------------------------------------------------------------------------------------------------------------

def code_parse_error(code: str, filename: str = "<script>") -> str:
    """``<ExceptionType>: <msg>`` from ``ast.parse`` (then ``compile``), or "" when the code compiles."""
    for step in (lambda: ast.parse(code, filename), lambda: compile(code, filename, "exec")):
        try:
            step()
        except SyntaxError as exc:  # IndentationError and TabError included
            return f"{type(exc).__name__}: {exc.msg}"
        except (ValueError, TypeError) as exc:  # e.g. null bytes in the source
            return f"{type(exc).__name__}: {exc}"
        except (RecursionError, MemoryError) as exc:  # nesting too deep to compile: Python cannot import it either
            return f"{type(exc).__name__}: {exc}"
    return ""


def error_msg_from_render(render_stderr: str | None, render_error: str | None) -> str:
    """The last exception line of the render stderr, else the last non-empty line of the render ``error``."""
    for line in reversed((render_stderr or "").splitlines()):
        if EXCEPTION_LINE_RE.match(line):
            return line.strip()
    for line in reversed((render_error or "").splitlines()):
        if line.strip():
            return line.strip()
    return ""


def build_taxonomy_inputs(
    *,
    passed: bool,
    code: str | None,
    render_error: str | None = None,
    render_stderr: str | None = None,
    findings: Sequence[Finding] | Sequence[dict] = (),
    generation_status: str = "success",
    provider_error: str | None = None,
    script_id: str = "<script>",
) -> TaxonomyInputs:
    """Fill the §6.1 fields for one task (§8).

    ``code`` is the cleaned script, or None/"" when generation produced none. ``generation_status`` is the
    generation row's status; ``provider_error`` (Q-GEN-4, improved) is the exception text of a provider failure.
    ``findings`` are the static hallucination findings of the script.
    """
    if not code:
        if generation_status == "provider_error":  # only produced when Q-GEN-4 is fixed (improved)
            msg = f"provider error: {provider_error or ''}".strip()
        else:
            msg = EMPTY_OUTPUT_MESSAGE
        return TaxonomyInputs(passed=False, error_msg=msg, code="")
    trace = (render_error or "")[-4000:]
    msg = error_msg_from_render(render_stderr, render_error) if not passed else ""
    runtime_text = "\n".join(p for p in (msg, trace.strip()) if p)
    return TaxonomyInputs(
        passed=bool(passed),
        error_msg=msg,
        error_trace=trace if not passed else "",
        code_parse_error=code_parse_error(code, script_id),
        hallucination_count=corroborated_count(list(findings), runtime_text),
        code=code,
    )


def taxonomy_fields(
    *,
    code: str | None,
    render_row: Mapping | None,
    generation_status: str = "success",
    provider_error: str | None = None,
    script_id: str = "<script>",
) -> dict:
    """One task's taxonomy: checker + inputs (§8) + classification, as flat row fields.

    ``render_row`` is the render stage's row (``success``, ``error``, ``stderr_tail``), or None when nothing was
    rendered (no script).
    """
    from prism_fast.execute.hallucination import HallucinationReport, check_code

    report = check_code(code) if code else HallucinationReport(parsed=False, notes=["no script"])
    render_row = render_row or {}
    inputs = build_taxonomy_inputs(
        passed=bool(render_row.get("success")), code=code, render_error=render_row.get("error"),
        render_stderr=render_row.get("stderr_tail"), findings=report.findings,
        generation_status=generation_status, provider_error=provider_error, script_id=script_id,
    )
    return {
        **classify(inputs).to_row(),
        "error_msg": inputs.error_msg,
        "code_parse_error": inputs.code_parse_error,
        "hallucination_count": inputs.hallucination_count,
        **report.to_row(),
    }


# --------------------------------------------------------------------------------------------------------------
# Aggregation (§6.4, plus the category breakdown)
# --------------------------------------------------------------------------------------------------------------

def _breakdown(counts: Counter, order: Sequence[str], total: int, failures: int, prefix: str) -> dict:
    return {
        f"{prefix}_counts": {k: counts.get(k, 0) for k in order},
        f"{prefix}_rates_overall": {k: (counts.get(k, 0) / total if total else 0.0) for k in order},
        f"{prefix}_rates_within_failures": {k: (counts.get(k, 0) / failures if failures else 0.0) for k in order},
    }


def aggregate_error_breakdown(rows: Sequence[Mapping]) -> dict:
    """Counts and rates over rows carrying ``pass``, ``error_type``, ``error_stage`` (and ``error_category``).

    The first six keys reproduce the toolkit's ``aggregate_error_breakdown``; the category block is ours.
    """
    total = len(rows)
    failed = [r for r in rows if not r.get("pass")]
    n_fail = len(failed)
    types = Counter(r.get("error_type") for r in failed if r.get("error_type"))
    stages = Counter(r.get("error_stage") for r in failed if r.get("error_stage"))
    categories = Counter(r.get("error_category") or CATEGORY_OF_TYPE.get(r.get("error_type") or "")
                         for r in failed if r.get("error_type"))
    out = {"failure_count": n_fail, "failure_rate": n_fail / total if total else 0.0}
    out.update(_breakdown(types, ERROR_TYPE_ORDER, total, n_fail, "error_type"))
    out.update(_breakdown(stages, ERROR_STAGE_ORDER, total, n_fail, "error_stage"))
    out.update(_breakdown(categories, CATEGORY_ORDER, total, n_fail, "error_category"))
    return out
