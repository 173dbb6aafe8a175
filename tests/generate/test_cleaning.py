"""Response cleaning (spec generation.md §4, goldens §6, quirks Q-GEN-1/2/5 in both profiles)."""

from __future__ import annotations

import json

import pytest

from prism_fast.fixtures import bundled_responses_path
from prism_fast.generate.cleaning import (
    BUSY_SENTINEL,
    clean_model_output,
    inject_font_defaults,
    looks_like_code,
)
from prism_fast.profile import IMPROVED, REFERENCE, resolve_profile

FENCE = "```"
SCENE = "class A(Scene):\n    def construct(self):\n        self.wait()"
STAR_FONT = "from manim import *\nfrom manim import config\nText.set_default(font='SimHei')"


def clean(raw, language="en", profile=REFERENCE):
    return clean_model_output(raw, language, profile)


# ---------------------------------------------------------------------------------------------- goldens (§6)

def test_golden_reasoning_header_then_fenced_block_is_empty():
    raw = f"Reasoning: I will draw a square.\n{FENCE}python\nfrom manim import *\n{SCENE}\n{FENCE}"
    result = clean(raw)
    assert result.code == ""
    assert result.status == "empty_after_cleanup"
    assert result.pollution.header_lines == 1


def test_golden_think_then_numpy_import_is_lost_and_font_lines_follow_star_import():
    raw = f"<think>plan the scene</think>\nimport numpy as np\nfrom manim import *\n{SCENE}"
    result = clean(raw)
    assert "import numpy" not in result.code
    assert result.code == f"{STAR_FONT}\n{SCENE}"
    assert result.pollution.think_blocks == 1
    assert result.pollution.prose_before  # the dropped numpy line is recorded as text before the code


def test_golden_two_fenced_blocks_keep_the_longer():
    short = "from manim import *"
    long = f"from manim import *\n{SCENE}"
    raw = f"First:\n{FENCE}python\n{short}\n{FENCE}\nThen:\n{FENCE}python\n{long}\n{FENCE}\nDone."
    result = clean(raw)
    assert result.code == inject_font_defaults(long)
    assert result.pollution.fenced_blocks == 2
    assert result.pollution.prose_before and result.pollution.prose_after


@pytest.mark.parametrize("raw", [BUSY_SENTINEL, f"  {BUSY_SENTINEL}\n"])
def test_golden_busy_sentinel_is_empty_after_cleanup(raw):
    result = clean(raw)
    assert (result.code, result.status, result.empty_reason) == ("", "empty_after_cleanup", "busy_sentinel")


# ---------------------------------------------------------------------------------------------- each step

@pytest.mark.parametrize("raw", [None, "", "   \n\t "])
def test_empty_reply(raw):
    result = clean(raw)
    assert (result.code, result.status, result.empty_reason) == ("", "empty_after_cleanup", "empty_reply")


@pytest.mark.parametrize("block", [
    "<think>a\nb</think>", "<THINK>x</THINK>", "<thinking>x</thinking>", "<thinking foo='1'>x\ny</Thinking>",
    "<think>x</thinking>",  # the regex pairs either opening with either closing form
])
def test_think_blocks_are_removed(block):
    result = clean(f"{block}\nfrom manim import *\n{SCENE}")
    assert result.code == f"{STAR_FONT}\n{SCENE}"
    assert result.pollution.think_blocks == 1


@pytest.mark.parametrize("header", ["Reasoning: x", "reasoning : x", "Thought process: x", "思考过程：x",
                                    "推理过程: x", "  THOUGHT PROCESS：x"])
def test_every_header_keyword_matches(header):
    code = f"from manim import *\n{SCENE}"
    ref = clean(f"{code}\n{header}\nmore text")
    imp = clean(f"{code}\n{header}\nmore text", profile=IMPROVED)
    assert ref.pollution.header_lines == imp.pollution.header_lines == 1
    # Reference (Q-GEN-1): everything from the header to the end is gone; here that is only trailing text.
    assert ref.code == inject_font_defaults(code)


def test_header_needs_a_colon():
    code = f"from manim import *\n{SCENE}\n# Reasoning is below"
    assert clean(code).pollution.header_lines == 0


def test_fence_language_tags_and_case():
    for tag in ("python", "py", "PYTHON", "Py", ""):
        result = clean(f"{FENCE}{tag}\nfrom manim import *\n{SCENE}\n{FENCE}")
        assert result.code == f"{STAR_FONT}\n{SCENE}", tag


def test_equal_length_blocks_keep_the_first():
    a = f"class A(Scene):\n    pass"
    b = f"class B(Scene):\n    pass"
    assert len(a) == len(b)
    result = clean(f"{FENCE}python\n{a}\n{FENCE}\n{FENCE}python\n{b}\n{FENCE}")
    assert result.code == a  # no star import, no `import manim`: nothing injected


def test_unclosed_fence_markers_are_deleted():
    result = clean(f"{FENCE}python\nfrom manim import *\n{SCENE}")
    assert result.code == f"{STAR_FONT}\n{SCENE}"
    assert result.pollution.fenced_blocks == 0 and result.pollution.stray_fences == 1


def test_leading_lines_are_cut_at_the_first_code_start_line():
    raw = f"Here is your animation:\n\nSure!\nclass A(Scene):\n    def construct(self):\n        pass"
    result = clean(raw)
    assert result.code.startswith("class A(Scene):")
    assert result.pollution.prose_before


def test_no_code_start_line_keeps_everything_then_fails_looks_like_code():
    result = clean("def helper():\n    return 1")
    assert (result.code, result.empty_reason) == ("", "not_code")


def test_prose_only_reply_is_not_code():
    result = clean("I cannot do that, sorry.")
    assert (result.status, result.empty_reason) == ("empty_after_cleanup", "not_code")


def test_reply_that_is_only_a_think_block_has_nothing_left():
    result = clean("<think>only thoughts</think>")
    assert (result.code, result.empty_reason) == ("", "nothing_left")


# ---------------------------------------------------------------------------------------------- looks_like_code

@pytest.mark.parametrize("text,ref,imp", [
    ("from manim import *", True, True),
    ("   import manim", True, True),
    ("class A:", True, True),
    ("import numpy as np", False, True),
    ("from math import pi", False, True),
    ("def f(): pass", False, False),
    ("classify = 1", False, False),
    ("", False, False),
])
def test_looks_like_code(text, ref, imp):
    assert looks_like_code(text, REFERENCE) is ref
    assert looks_like_code(text, IMPROVED) is imp


# ---------------------------------------------------------------------------------------------- font injection

def test_font_injection_star_import_first_occurrence_only():
    code = "from manim import *\nfrom manim import *\nx = 1"
    assert inject_font_defaults(code) == f"{STAR_FONT}\nfrom manim import *\nx = 1"


def test_font_injection_module_import():
    code = "import manim\nclass A(manim.Scene):\n    pass"
    expected = "import manim\nfrom manim import config\nmanim.Text.set_default(font='SimHei')\nclass A(manim.Scene):\n    pass"
    assert inject_font_defaults(code) == expected


def test_font_injection_without_manim_import_changes_nothing():
    code = "from manim import Circle, Scene\nclass A(Scene):\n    pass"
    assert inject_font_defaults(code) == code
    result = clean(code)
    assert result.code == code and not result.font_injected


# ---------------------------------------------------------------------------------------------- quirks

def test_q_gen_1_header_line_reference_truncates_improved_removes_one_line():
    raw = f"from manim import *\nReasoning: the circle is centred\n{SCENE}"
    assert clean(raw).code == inject_font_defaults("from manim import *")
    assert clean(raw, profile=IMPROVED).code == f"from manim import *\n\n{SCENE}"


def test_q_gen_1_reply_starting_with_header_reference_empty_improved_code():
    raw = f"Thought process: draw a circle.\n{FENCE}python\nfrom manim import *\n{SCENE}\n{FENCE}"
    assert clean(raw).status == "empty_after_cleanup"
    assert clean(raw, "zh", IMPROVED).code == f"{STAR_FONT}\n{SCENE}"


def test_q_gen_2_numpy_import_reference_dropped_improved_kept():
    raw = f"Here you go:\nimport numpy as np\nfrom manim import *\n{SCENE}"
    assert "numpy" not in clean(raw).code
    improved = clean(raw, "zh", IMPROVED)
    assert improved.code.startswith("import numpy as np\nfrom manim import *\nfrom manim import config")
    assert improved.pollution.prose_before  # "Here you go:" was still cut


def test_q_gen_2_improved_cut_accepts_from_module_import():
    raw = f"Explanation first.\nfrom math import pi\nfrom manim import *\n{SCENE}"
    assert clean(raw, "zh", IMPROVED).code.startswith("from math import pi\n")
    assert clean(raw, "zh", REFERENCE).code.startswith("from manim import *\n")


def test_q_gen_5_font_injection_reference_all_languages_improved_zh_only():
    raw = f"from manim import *\n{SCENE}"
    assert clean(raw, "en").font_injected and clean(raw, "zh").font_injected
    assert clean(raw, "zh", IMPROVED).font_injected
    en_improved = clean(raw, "en", IMPROVED)
    assert not en_improved.font_injected and en_improved.code == raw


def test_single_switch_custom_profile_changes_only_that_step():
    only_gen5 = resolve_profile("reference", {"Q-GEN-5": True})
    assert only_gen5.name == "custom"
    raw = f"import numpy as np\nfrom manim import *\n{SCENE}"
    result = clean(raw, "en", only_gen5)
    assert result.code == f"from manim import *\n{SCENE}"  # Q-GEN-2 still reference; no font lines for en


def test_unknown_language_is_an_error():
    with pytest.raises(ValueError):
        clean("from manim import *", "fr")


# ---------------------------------------------------------------------------------------------- evidence

def test_pollution_kinds_in_fixed_order_and_row_fields():
    raw = (f"<think>x</think>\nSure, here it is:\n{FENCE}python\nfrom manim import *\n{SCENE}\n{FENCE}\n"
           "Hope this helps!")
    result = clean(raw)
    assert result.pollution.kinds() == ["fences", "think_tags", "prose_before", "prose_after"]
    row = result.to_row()
    assert row["status"] == "success" and row["error_kind"] is None
    assert row["format_pollution"] == result.pollution.kinds()
    assert result.evidence["kinds"] == result.pollution.kinds()
    json.dumps(row)  # plain JSON-able values only


def test_clean_reply_has_no_pollution():
    result = clean(f"from manim import *\n{SCENE}")
    assert result.pollution.kinds() == [] and not result.pollution.any


def test_empty_row_fields():
    row = clean("").to_row()
    assert (row["status"], row["error_kind"], row["error_detail"]) == (
        "empty_after_cleanup", "empty_after_cleanup", "empty_reply")


# ---------------------------------------------------------------------------------------------- bundled fixtures

FINE_TYPES = {"empty_output", "provider_error", "timeout_error", "format_contamination", "syntax_error",
              "api_hallucination", "api_misuse", "text_render_error", "asset_error", "value_error",
              "other_runtime_error", "other_error"}
CATEGORIES = {"api_hallucination", "api_misuse", "text_rendering_error", "format_pollution", "syntax_error",
              "other_error"}


def _fixtures():
    text = bundled_responses_path().read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_fixture_file_schema_and_coverage():
    rows = _fixtures()
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    for r in rows:
        assert set(r) == {"id", "model", "language", "response", "intent"}
        assert r["model"] == "fixture" and r["language"] in ("en", "zh")
        assert r["id"].startswith(f"SAMPLE-{r['language'].upper()}-") and len(r["id"]) == len("SAMPLE-EN-000001")
        intent = r["intent"]
        assert set(intent) == {"fine_type", "category", "spatial", "note"}
        assert intent["fine_type"] is None or intent["fine_type"] in FINE_TYPES
        assert intent["category"] is None or intent["category"] in CATEGORIES
        assert (intent["fine_type"] is None) == (intent["category"] is None)
        assert intent["spatial"] in (None, "overlap", "oob", "leak")
        assert intent["spatial"] is None or intent["fine_type"] is None  # spatial fixtures render fine
        assert intent["note"]
    types = {r["intent"]["fine_type"] for r in rows}
    # Every type that a reply can produce offline; provider_error needs a failing client (Q-GEN-4) and
    # other_error a failure without any text, so neither can come from a reply.
    assert FINE_TYPES - {"provider_error", "other_error"} <= types
    polluted = [r for r in rows if r["intent"]["fine_type"] == "format_contamination"]
    assert len(polluted) >= 3 and {r["language"] for r in polluted} == {"en", "zh"}
    for rule in ("overlap", "oob", "leak"):
        langs = [r["language"] for r in rows if r["intent"]["spatial"] == rule]
        assert len(langs) >= 2 and set(langs) == {"en", "zh"}, rule
    clean_rows = [r for r in rows if r["intent"]["fine_type"] is None and r["intent"]["spatial"] is None]
    assert 3 <= len(clean_rows) <= 4


def test_fixtures_that_should_be_empty_clean_to_nothing_and_the_rest_to_code():
    for r in _fixtures():
        result = clean(r["response"], r["language"])
        want_empty = r["intent"]["fine_type"] == "empty_output"
        assert (result.code == "") is want_empty, r["id"]


def test_q_gen_1_fixture_is_empty_only_under_reference():
    (fixture,) = [r for r in _fixtures() if r["id"] == "SAMPLE-EN-000007"]
    assert clean(fixture["response"], "en").code == ""
    improved = clean(fixture["response"], "en", IMPROVED)
    assert improved.status == "success" and "class Grow(Scene):" in improved.code
    assert improved.pollution.kinds() == ["fences", "header_lines"]  # the header line itself is not prose


# ------------------------------------------------------------------------------------ linear time (issue #15)

from hypothesis import given, settings, strategies as st  # noqa: E402

from prism_fast.generate.cleaning import (  # noqa: E402
    HEADER_RE_IMPROVED, HEADER_RE_REFERENCE, MAX_REPLY_CHARS, THINK_RE, _cut_leading_lines, _is_code_start,
    strip_header_lines, strip_think_blocks,
)

_PIECES = ["<think>", "<THINK>", "<thinking a=1>", "</think>", "</thinking>", "<think", ">", "</think", "<Think>",
           "Reasoning", "REASONING", "Thought process", "思考过程", "推理过程", ":", "：", "Reason", "ſ",
           "from manim import *", "import manim", "class ", "class", "import ", "from x.y import z", "classX",
           "```", "```python", " ", "\t", "\n", "\r\n", "\r", "x", "\u00a0", "\u2028", "\x0c", "\u3000"]
_texts = st.lists(st.sampled_from(_PIECES), max_size=14).map("".join)


def _cut_oracle(text, profile):
    """The toolkit's loop, verbatim in behaviour: the oracle for the pattern-based cut."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _is_code_start(line.strip(), profile)), 0)
    return "\n".join(lines[start:]), any(line.strip() for line in lines[:start])


@settings(max_examples=3000, deadline=None)
@given(_texts)
def test_linear_steps_equal_the_toolkits_patterns(text):
    assert strip_think_blocks(text) == THINK_RE.subn("", text)
    assert strip_header_lines(text, improved=False) == HEADER_RE_REFERENCE.subn("", text)
    assert strip_header_lines(text, improved=True) == HEADER_RE_IMPROVED.subn("", text)
    for profile in (REFERENCE, IMPROVED):
        assert _cut_leading_lines(text, profile) == _cut_oracle(text, profile)


FIVE_MB = 5_000_000
ADVERSARIAL = {
    "unclosed_think": "<think>" * (FIVE_MB // 7),
    "think_no_gt": "<think " * (FIVE_MB // 7),
    "fences": "```" * (FIVE_MB // 3),
    "whitespace_lines": "a" + " \n" * (FIVE_MB // 2) + "b",
    "short_lines": "x\n" * (FIVE_MB // 2),
    "headers": "  Reasoning\n" * (FIVE_MB // 12),
    "class_lines": "classx\n" * (FIVE_MB // 7),
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_five_megabyte_adversarial_reply(name):
    import time

    reply = ADVERSARIAL[name]
    t0 = time.perf_counter()
    capped = clean_model_output(reply, "en")  # the default cap refuses it before any step
    assert time.perf_counter() - t0 < 1.0
    assert capped.empty_reason == "reply_too_large" and capped.evidence["reply_chars"] == len(reply)
    assert capped.evidence["max_reply_chars"] == MAX_REPLY_CHARS
    for profile in (REFERENCE, IMPROVED):  # uncapped: linear (the toolkit's patterns took minutes to hours)
        t0 = time.perf_counter()
        clean_model_output(reply, "en", profile, max_reply_chars=None)
        # ~1.8 s alone on a 2-core machine; the bound leaves room for the other test process (make test runs two)
        assert time.perf_counter() - t0 < 15.0, (name, profile.name)
