"""TextExpand / InfoExpand (spec text_expand.md). Pure Python: no Manim, no video.

Expected values come from the spec: the golden values of §7 (checked against the authors' toolkit), or counts
derived by hand from the rules of §2–§5 (the derivation is in the comment next to each).
"""

from __future__ import annotations

import json
import logging

import pytest

from prism_fast.metrics.text_expand import segment_statistics, summarize, text_expand_row
from prism_fast.metrics.text_expand_eval import UNKNOWN, ConstantEvaluator
from prism_fast.metrics.text_expand_extract import MODE_AST, MODE_FALLBACK, extract_display_text
from prism_fast.metrics.text_expand_scan import (
    heuristic_text,
    parenthesized_argument_text,
    split_keyword_argument,
    split_top_level_arguments,
)
from prism_fast.metrics.text_expand_run import load_difficulty_map, score_generation_dir
from prism_fast.metrics.text_expand_text import (
    PROMPT_BODY_MARKERS,
    normalize_segment,
    prompt_body,
    tokenize,
)
from prism_fast.profile import IMPROVED, REFERENCE, resolve_profile

PROFILES = [pytest.param(REFERENCE, id="reference"), pytest.param(IMPROVED, id="improved")]


def segments(code: str, profile=REFERENCE) -> list[str]:
    extraction = extract_display_text(code, profile)
    assert extraction.mode == MODE_AST
    return extraction.segments


def scene(body: str, extra: str = "") -> str:
    """A module with one Scene whose construct body is ``body`` (4-space indented lines)."""
    indented = "\n".join("        " + line if line else "" for line in body.strip("\n").splitlines())
    return f"from manim import *\n{extra}\nclass S(Scene):\n    def construct(self):\n{indented}\n"


# ----------------------------------------------------------------------------------------------------------------
# §7 golden values
# ----------------------------------------------------------------------------------------------------------------

# examples/sample_prompts.jsonl of the toolkit (dataset.md §5), verbatim.
EN_PROMPT = (
    "Write a Manim CE v0.19.0 scene that explains a linear function y = ax + b. Show axes, draw a line, and "
    "label slope and intercept. Output only executable Python code."
)

# Written from the description of examples/reference_code/example_0001.py in dataset.md §5.
EN_CODE = """\
from manim import *


class LinearFunctionExample(Scene):
    def construct(self):
        heading = Text("Linear Function", font_size=36).to_edge(UP)
        axes = Axes(x_range=[-3, 3], y_range=[-2, 4], x_length=6, y_length=4).shift(DOWN * 0.3)
        line = axes.plot(lambda x: 0.8 * x + 1, color=BLUE)
        equation = MathTex("y=ax+b", font_size=34).next_to(heading, DOWN)
        slope = Text("slope a", font_size=24, color=YELLOW).next_to(line, RIGHT)
        intercept = Text("intercept b", font_size=24, color=GREEN).next_to(axes.c2p(0, 1), LEFT)
        self.play(Write(heading), Write(equation))
        self.play(Create(axes))
        self.play(Create(line))
        self.play(FadeIn(slope), FadeIn(intercept))
        self.wait(1)
"""

ZH_PROMPT = (
    "你是 Manim 专家，请将 Markdown 讲义转换为一段中文展示的 Manim CE v0.19.0 可运行代码。要求页面排版逻辑清晰、"
    "无元素遮挡，且严禁输出任何代码以外的说明或解释文本。代码需特别注意规避 LaTeX 语法错误、索引越界等常见报错，"
    "确保直接运行。Markdown 讲义如下：\n\n# 线性函数\n\n线性函数的形式为 `y = ax + b`，画出坐标轴和一条直线，"
    "并标注斜率和截距。"
)

# The zh golden code of §7, written from its description.
ZH_CODE = r'''from manim import *

TITLE = "线性函数"


class LinearFunctionZh(Scene):
    def construct(self):
        title = Text(TITLE)
        formula = MathTex(r"y = \frac{a}{b} x + b", r"\text{slope } k")
        axes = Axes()
        for i, lab in enumerate(["斜率 a", "截距 b"]):
            item = Text(f"{i}: {lab}")
        labels = axes.get_axis_labels(x_label="x", y_label="y")
        self.show_caption("Hello World")

    def show_caption(self, s):
        caption = Tex(s)
        note = Text("斜率 a")
'''


def test_golden_english_example_pair():
    row = text_expand_row("example_0001", EN_CODE, EN_PROMPT, "en", REFERENCE)
    assert row["status"] == "ok" and row["extract_mode"] == "ast"
    assert row["prompt_token_count"] == 31
    assert row["display_text_unique_preview"] == ["linear function", "y=ax+b", "slope a", "intercept b"]
    assert row["display_token_count_unique"] == 9
    assert row["display_overlap_token_count"] == 9
    assert round(row["text_expand_ratio_unique"], 6) == 0.290323
    assert row["info_expand_ratio"] == 0
    assert row["novelty_ratio"] == 0
    assert row["prompt_body_text"] == EN_PROMPT  # no body marker: the whole prompt


@pytest.mark.parametrize("profile", PROFILES)
def test_golden_english_is_profile_independent(profile):
    # The example uses none of the quirky constructs, so both profiles agree.
    assert text_expand_row("e", EN_CODE, EN_PROMPT, "en", profile)["display_text_unique_preview"] == [
        "linear function", "y=ax+b", "slope a", "intercept b"]


def test_golden_chinese_reference():
    row = text_expand_row("zh", ZH_CODE, ZH_PROMPT, "zh", REFERENCE)
    assert row["prompt_token_count"] == 33
    assert row["display_text_unique_preview"] == [
        "线性函数", "y = a b x + b", "slope k", "0: 斜率 a", "1: 截距 b", "x", "y", "斜率 a"]
    assert row["display_segment_count_unique"] == 8
    assert row["display_token_count_unique"] == 24
    assert row["display_overlap_token_count"] == 14
    assert row["display_novel_token_count"] == 10
    assert round(row["text_expand_ratio_unique"], 6) == 0.727273
    assert round(row["info_expand_ratio"], 6) == 0.303030
    assert round(row["novelty_ratio"], 6) == 0.416667
    assert "hello world" not in row["display_text_unique_preview"]  # lost to the self shift (Q-TEXT-1)


def test_golden_chinese_improved_keeps_hello_world():
    row = text_expand_row("zh", ZH_CODE, ZH_PROMPT, "zh", IMPROVED)
    # Q-TEXT-1 fixed: s = "Hello World", so Tex(s) adds one unique segment of 2 novel tokens: 24+2, 10+2.
    assert row["display_text_unique_preview"] == [
        "线性函数", "y = a b x + b", "slope k", "0: 斜率 a", "1: 截距 b", "x", "y", "hello world", "斜率 a"]
    assert row["display_token_count_unique"] == 26
    assert row["display_novel_token_count"] == 12
    assert row["info_expand_ratio"] == 12 / 33


def test_golden_fallback_scan():
    code = ("Here is the code:\nfrom manim import *\nclass A(Scene):\n    def construct(self):\n"
            "        t = Text('Hi there'\n")
    row = text_expand_row("fb", code, EN_PROMPT, "en", REFERENCE)
    assert row["status"] == "ok"
    assert row["extract_mode"] == "fallback_scan"
    assert row["display_text_unique_preview"] == ["hi there"]
    assert row["extract_fallback_reason"].startswith("SyntaxError")


def test_fallback_is_warned(caplog):
    with caplog.at_level(logging.WARNING, logger="prism_fast.metrics.text_expand"):
        text_expand_row("fb1", "Text('x'", "p", "en")
    assert any("fallback_scan" in record.getMessage() for record in caplog.records)


# ----------------------------------------------------------------------------------------------------------------
# §5.1 prompt body
# ----------------------------------------------------------------------------------------------------------------

def test_marker_strings_exact():
    assert PROMPT_BODY_MARKERS == (
        "Markdown 讲义如下：",
        "Markdown 讲义如下:",
        "The Markdown lecture notes are as follows:",
        "The Markdown lecture notes are as follows：",
    )


@pytest.mark.parametrize("marker", PROMPT_BODY_MARKERS)
def test_each_marker_cuts_the_preamble(marker):
    assert prompt_body(f"preamble words {marker}\n\n# Body text\n") == "# Body text"


def test_marker_order_wins_over_position():
    # The zh full-width marker is checked first even though the English marker appears earlier in the text.
    prompt = "The Markdown lecture notes are as follows: A Markdown 讲义如下：B"
    assert prompt_body(prompt) == "B"


def test_only_first_occurrence_is_cut():
    assert prompt_body("x Markdown 讲义如下：a Markdown 讲义如下：b") == "a Markdown 讲义如下：b"


def test_context_blocks_and_html_comments_removed():
    prompt = ("Markdown 讲义如下：keep <!-- CONTEXT:BEGIN -->secret\nlines<!--CONTEXT:END--> mid "
              "<!-- note\nmore --> end")
    assert prompt_body(prompt) == "keep   mid   end"
    assert tokenize(prompt_body(prompt)) == ["keep", "mid", "end"]


# ----------------------------------------------------------------------------------------------------------------
# §5.2 normalisation and tokens
# ----------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    (r"\text{slope } k", "slope k"),
    (r"y = \frac{a}{b} x + b", "y = a b x + b"),
    (r"\mathbf{\textit{v}}", "v"),               # repeated until nothing changes
    (r"a \\ b", "a b"),
    (r"\alpha^2_i & $x$", "2 i x"),
    ("“Quoted” ‘One’", "\"quoted\" 'one'"),
    ("ÄBC Ωmega ＡＢ", "Äbc Ωmega ＡＢ"),        # only ASCII A-Z is lower-cased
    ("  many   \n spaces ", "many spaces"),
    ("$${}$$", ""),
])
def test_normalize_segment(raw, expected):
    assert normalize_segment(raw) == expected


@pytest.mark.parametrize("text, expected", [
    ("y=ax+b", ["y", "ax", "b"]),
    ("123abc", ["123", "abc"]),
    ("It's 3.14 o'clock", ["it's", "3.14", "o'clock"]),
    ("线性函数", ["线", "性", "函", "数"]),
    ("α β 㐀 !? ²", []),                         # Greek, CJK Ext A, punctuation, superscripts dropped
    # The spec's regex uses Python's Unicode `\d`, so full-width digits ARE one token (the toolkit agrees;
    # the spec's prose listing them as dropped is wrong).
    ("１２", ["１２"]),
    ("Mixed 中文 text 42", ["mixed", "中", "文", "text", "42"]),
])
def test_tokenize(text, expected):
    assert tokenize(text) == expected


# ----------------------------------------------------------------------------------------------------------------
# §5.3 statistics
# ----------------------------------------------------------------------------------------------------------------

def test_statistics_dedup_overlap_and_zero_token_segments():
    prompt = "Markdown 讲义如下：a a b"  # tokens a, a, b → 3
    stats = segment_statistics(prompt, ["A a c", "a a c", "  ", "!!", "b", "b"])
    # raw segments drop only blank-after-normalisation ("  "); "!!" stays (normalises to "!!", 0 tokens).
    assert stats["display_segment_count_raw"] == 5
    # unique normalised: "a a c", "!!", "b" (the first two raw segments normalise to the same string)
    assert stats["display_text_unique_preview"] == ["a a c", "!!", "b"]
    assert stats["display_segment_count_unique"] == 3
    assert stats["display_token_count_raw"] == 3 + 3 + 0 + 1 + 1
    assert stats["display_token_count_unique"] == 3 + 1
    # "a a c": min(2, 2) = 2 overlap; "b": 1 → 3; the prompt counter is not consumed between segments.
    assert stats["display_overlap_token_count"] == 3
    assert stats["display_novel_token_count"] == 1
    assert stats["text_expand_ratio_raw"] == 8 / 3
    assert stats["info_expand_ratio"] == 1 / 3
    assert stats["novelty_ratio"] == 1 / 4


def test_statistics_empty_prompt_and_no_text():
    stats = segment_statistics("", [])
    assert stats["prompt_token_count"] == 0
    assert stats["text_expand_ratio_unique"] == 0 and stats["novelty_ratio"] == 0.0
    # den = max(len, 1): two novel tokens over an empty prompt give 2.0
    assert segment_statistics("", ["x y"])["info_expand_ratio"] == 2.0


def test_preview_holds_first_twenty_unique_segments():
    stats = segment_statistics("p", [f"s{i}" for i in range(25)])
    assert stats["display_text_unique_preview"] == [f"s{i}" for i in range(20)]
    assert stats["display_segment_count_unique"] == 25


def test_row_field_order_and_project_fields():
    row = text_expand_row("id1", EN_CODE, EN_PROMPT, "en", REFERENCE, source_id="src", difficulty="easy",
                          prompt_path="p.txt", code_path="c.py", meta_path=None)
    keys = list(row)
    assert keys[:5] == ["id", "source_id", "difficulty", "prompt_path", "code_path"]
    assert keys[5] == "prompt_body_text" and keys[17] == "display_text_unique_preview"
    assert keys[18:21] == ["status", "extract_mode", "meta_path"]
    assert keys[21:] == ["language", "profile", "error_kind", "error_detail", "extract_fallback_reason"]
    assert row["profile"] == "reference" and row["error_kind"] is None


def test_missing_input_row():
    row = text_expand_row("m", None, "prompt", "zh", IMPROVED)
    assert row["status"] == "missing_input"
    assert "prompt_token_count" not in row and "extract_mode" not in row
    assert row["error_kind"] == "missing_input" and row["error_detail"] == "missing code"
    assert row["profile"] == "improved"


def test_custom_profile_is_recorded():
    custom = resolve_profile("reference", {"Q-TEXT-1": True})
    row = text_expand_row("c", ZH_CODE, ZH_PROMPT, "zh", custom)
    assert row["profile"] == "custom" and row["quirks_fixed"] == ["Q-TEXT-1"]
    assert "hello world" in row["display_text_unique_preview"]


# ----------------------------------------------------------------------------------------------------------------
# §2 which calls count
# ----------------------------------------------------------------------------------------------------------------

def test_constructor_argument_tables():
    code = scene("""
Text("t1", "not taken")
manim.MarkupText("m1")
Title("ti")
Paragraph("p1", "p2")
BulletedList("b1", "b2")
Tex("x1", "x2", tex_environment="center")
SingleStringMathTex("ss")
BraceLabel(obj, "brace", label="bl", text="bt")
LabeledDot("ld", label="ld2")
LabeledLine(a, b, "ll", label="ll2")
Table([["t", 1]], row_labels=["r"], col_labels=["c"], top_left_entry="tl")
IntegerMatrix([[1, 2]])
BarChart([3, 4], bar_names=["n1"], x_axis_label="xa", y_axis_label="ya")
DecimalNumber(3.5)
Integer(7)
Variable(1, "var")
BraceText(obj, "bt2")
""")
    assert segments(code) == [
        "t1", "m1", "ti", "p1", "p2", "b1", "b2", "x1", "x2", "ss",
        "brace", "bl", "bt",                      # positional index 1, then keywords in call order
        "ld", "ld2", "ll", "ll2",
        "t", "1", "r", "c", "tl",
        "1", "2",
        "n1", "xa", "ya",
    ]


def test_method_tables_need_an_attribute_callee():
    code = scene("""
ax.get_axis_labels("xl", y_label="yl")
ax.get_x_axis_label("gx")
ax.get_graph_label(g, "gl")
chart.add_labels(["l1", "l2"], "not taken")
ax.add_coordinates([1, 2], [3])
ax.set_title("st")
get_axis_labels("bare name is not a method call")
""")
    # get_graph_label takes all positionals: `g` is unknown and is dropped.
    assert segments(code) == ["xl", "yl", "gx", "gl", "l1", "l2", "1", "2", "st"]


def test_flattening_rules():
    code = scene("""
Text(3)
Text(2.5)
Text(True)
Text(None)
Text(-4)
Text("   ")
Text({"k": "dv", "n": 1})
Text(("tu", ["li", {"x": "nested"}]))
Text({"s1", "s2"})
Text(b"bytes")
""")
    assert segments(code) == ["3", "2.5", "True", "-4", "dv", "1", "tu", "li", "nested", "s1", "s2"]


def test_module_level_text_is_discarded_and_classes_concatenate():
    code = """
from manim import *
HEADER = Text("module level")
NAME = "bound"
class First(Scene):
    def construct(self):
        Text(NAME)
class NotAScene:
    def helper(self):
        Text("never")
class Second(Scene):
    def construct(self):
        Text("second")
"""
    assert segments(code) == ["bound", "second"]


# ----------------------------------------------------------------------------------------------------------------
# §3.2 statements
# ----------------------------------------------------------------------------------------------------------------

def test_for_over_known_list_runs_body_and_else_per_item():
    code = scene("""
for i, name in enumerate(["a", "b"], 1):
    Text(f"{i}-{name}")
else:
    Text(name)
for z in unknown_iterable:
    Text("once")
else:
    Text("unknown-iterator else is skipped")
""")
    assert segments(code) == ["1-a", "a", "2-b", "b", "once"]


def test_if_known_and_unknown_tests():
    code = scene("""
FLAG = False
if FLAG:
    Text("no")
else:
    Text("yes")
if x > 1:
    Text("both1")
else:
    Text("both2")
""")
    assert segments(code) == ["yes", "both1", "both2"]


def test_while_with_try_and_block_scoping():
    code = scene("""
v = "outer"
while cond:
    v = "in loop"
    Text(v)
else:
    Text("while else")
with open_ctx():
    Text(v)
try:
    v = "in try"
    Text("try")
except Exception:
    Text("handler")
else:
    Text("else")
finally:
    Text("finally")
Text(v)
""")
    # Bindings made in blocks do not survive them: the last Text(v) still sees "outer".
    assert segments(code) == ["in loop", "while else", "outer", "try", "handler", "else", "finally", "outer"]


def test_tuple_unpacking_is_zip_truncated():
    code = scene("""
a, (b, c) = ["A", ["B", "C", "extra"]]
d, e = ("D",)
Text(a + b + c)
Text(d)
Text(e)
""")
    assert segments(code) == ["ABC", "D"]


def test_nested_calls_lambdas_and_comprehension_scopes_are_scanned():
    code = scene("""
group = VGroup(Text("in group"), *[Text("in list")])
make = lambda: Tex("in lambda")
names = ["n1", "n2"]
texts = [Text(n) for n in names]
""")
    # the comprehension variable is unknown during the scan, so Text(n) contributes nothing
    assert segments(code) == ["in group", "in list", "in lambda"]


# ----------------------------------------------------------------------------------------------------------------
# §3.4 constant evaluator
# ----------------------------------------------------------------------------------------------------------------

def _eval(expr: str, env: dict | None = None, profile=REFERENCE):
    import ast
    return ConstantEvaluator(profile, {}).value(ast.parse(expr, mode="eval").body, env or {})


@pytest.mark.parametrize("expr, expected", [
    ("'a' + 'b'", "ab"),
    ("1 + 2.5", 3.5),
    ("[1] + [2]", [1, 2]),
    ("(1,) + (2,)", (1, 2)),
    ("-3", -3),
    ("{'b', 'a'}", ["b", "a"]),                 # a set display is a list in source order
    ("{'k': [1, 2]}['k'][1]", 2),
    ("'abc'[1]", "b"),
    ("str(12)", "12"),
    ("range(1, 4)", [1, 2, 3]),
    ("enumerate(['a'], 5)", [(5, "a")]),
    ("zip([1, 2], ('a', 'b', 'c'))", [(1, "a"), (2, "b")]),
    ("'{} {x}'.format(1, x='y')", "1 y"),
    ("[s + '!' for s in ['a', 'b', 'c'] if s != 'b']", []),   # comparisons are unknown: every item skipped
    ("[s + '!' for s in ['a', 'b']]", ["a!", "b!"]),
    ("[s for s in ['a', 'b'] if True]", ["a", "b"]),
    ("[s for s in ['a', 'b'] if flag]", []),    # an unknown clause skips the item
    ("[u for s in ['a']]", UNKNOWN),            # an unknown element makes the whole comprehension unknown
    ("f'{1.5:.3f}|{\"q\"!r}|{None}'", "1.5|q|"),
    ("'a' + 1", UNKNOWN),
    ("'a' * 2", UNKNOWN),
    ("str([1])", UNKNOWN),
    ("[1, 2][5]", UNKNOWN),
    ("range(x)", UNKNOWN),
    ("len('abc')", UNKNOWN),
    ("{**d}", UNKNOWN),
    ("[1, 2][0:1]", UNKNOWN),                   # slices are not evaluated
])
def test_constant_evaluator(expr, expected):
    assert _eval(expr) == expected


def test_constant_evaluator_names_local_then_global():
    import ast
    evaluator = ConstantEvaluator(REFERENCE, {"g": "global", "both": "global"})
    node = ast.parse("[g, both]", mode="eval").body
    assert evaluator.value(node, {"both": "local"}) == ["global", "local"]


def test_improved_fstring_applies_spec_and_conversion():
    assert _eval("f'{1.5:.3f}|{\"q\"!r}|{7:03d}'", profile=IMPROVED) == "1.500|'q'|007"


# ----------------------------------------------------------------------------------------------------------------
# Quirks: each one in both profiles (README §5.6)
# ----------------------------------------------------------------------------------------------------------------

SELF_SHIFT_CODE = """
from manim import *
class S(Scene):
    def construct(self):
        self.caption("first", "second")
    def caption(self, a, b="default b"):
        Text(a)
        Text(b)
"""


@pytest.mark.parametrize("profile, expected", [
    # reference binds self="first", a="second"; b has no actual argument left and takes its default
    (REFERENCE, ["second", "default b"]),
    (IMPROVED, ["first", "second"]),
])
def test_q_text_1_self_shift(profile, expected):
    assert segments(SELF_SHIFT_CODE, profile) == expected


RECURSIVE_CODE = """
from manim import *
def label(n):
    Text("label")
    return label(n)
class S(Scene):
    def construct(self):
        label(1)
"""


def test_q_text_2_reference_recursion_is_parse_fail():
    row = text_expand_row("r", RECURSIVE_CODE, "p", "en", REFERENCE)
    assert row["status"] == "parse_fail"
    assert row["parse_error"].startswith("RecursionError:")
    assert row["error_kind"] == "parse_fail" and row["error_detail"] == row["parse_error"]
    assert list(row)[:7] == ["id", "source_id", "difficulty", "prompt_path", "code_path", "status", "parse_error"]


def test_q_text_2_improved_guard_stops_reentry():
    row = text_expand_row("r", RECURSIVE_CODE, "p", "en", IMPROVED)
    assert row["status"] == "ok" and row["display_text_unique_preview"] == ["label"]


CODE_CALL = scene('Code("scene.py", code="print(1)", code_string="print(2)")\nCode(code_string="print(3)")')


@pytest.mark.parametrize("profile, expected", [
    (REFERENCE, ["scene.py", "print(1)"]),
    (IMPROVED, ["print(1)", "print(2)", "print(3)"]),
])
def test_q_text_3_code_arguments(profile, expected):
    assert segments(CODE_CALL, profile) == expected


FSTRING_CODE = scene('v = 3.14159\nText(f"pi={v:.2f}")\nText(f"{v!r}")\nText(f"{v}")')


@pytest.mark.parametrize("profile, expected", [
    (REFERENCE, ["pi=3.14159", "3.14159"]),      # spec and conversion ignored; "3.14159" is de-duplicated later
    (IMPROVED, ["pi=3.14", "3.14159"]),
])
def test_q_text_4_fstring_specs(profile, expected):
    assert list(dict.fromkeys(segments(FSTRING_CODE, profile))) == expected


def test_q_text_5_manifest_formats(tmp_path):
    jsonl = tmp_path / "m.jsonl"
    jsonl.write_text('{"id": "a", "difficulty": "easy"}\n\n{"id": "b"}\n', encoding="utf-8")
    listed = tmp_path / "task_manifest.json"
    listed.write_text(json.dumps([{"id": "a", "difficulty": "hard"}], indent=2), encoding="utf-8")
    for profile in (REFERENCE, IMPROVED):
        assert load_difficulty_map(jsonl, profile) == ({"a": "easy", "b": None}, "jsonl")
    assert load_difficulty_map(listed, REFERENCE) == ({}, "not_jsonl")
    assert load_difficulty_map(listed, IMPROVED) == ({"a": "hard"}, "json_list")


UNVISITED_CODE = """
from manim import *
class Card(VGroup):
    def __init__(self, title):
        super().__init__()
        self.add(Text(title), Text("card body"))
class S(Scene):
    def construct(self):
        def local_label(msg):
            return Text(msg)
        local_label("nested arg")
        Card("card title")
"""


@pytest.mark.parametrize("profile, expected", [
    (REFERENCE, []),
    (IMPROVED, ["nested arg", "card title", "card body"]),
])
def test_q_text_6_unvisited_code(profile, expected):
    assert segments(UNVISITED_CODE, profile) == expected


STALE_CODE = scene("""
t = "stale"
t = make_title()
Text(t)
n = "counter"
n += "x"
Text(n)
""")


@pytest.mark.parametrize("profile, expected", [
    (REFERENCE, ["stale", "counter"]),
    (IMPROVED, []),
])
def test_q_text_7_stale_bindings(profile, expected):
    assert segments(STALE_CODE, profile) == expected


def test_q_text_7_stale_global_is_shadowed_in_improved():
    code = scene('TITLE = unknown_call()\nText(TITLE)', extra='TITLE = "module constant"')
    assert segments(code, REFERENCE) == ["module constant"]
    assert segments(code, IMPROVED) == []


SCOPE_LEAK_CODE = """
from manim import *
def show(s):
    Text(s)
    Text(secret)
class S(Scene):
    def construct(self):
        secret = "caller local"
        s = "caller s"
        show("arg")
        show()
"""


@pytest.mark.parametrize("profile, expected", [
    # reference: the callee sees the caller's locals; a missing parameter keeps the caller's `s`
    (REFERENCE, ["arg", "caller local", "caller s", "caller local"]),
    (IMPROVED, ["arg"]),
])
def test_q_text_8_caller_scope(profile, expected):
    assert segments(SCOPE_LEAK_CODE, profile) == expected


def test_single_switch_changes_only_its_own_behaviour():
    # Turning one switch on changes only its own behaviour (here: Q-TEXT-8 alone).
    only_8 = resolve_profile("reference", {"Q-TEXT-8": True})
    assert segments(SCOPE_LEAK_CODE, only_8) == ["arg"]
    assert segments(SELF_SHIFT_CODE, only_8) == ["second", "default b"]


# ----------------------------------------------------------------------------------------------------------------
# Parse failures
# ----------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("code, error_type", [
    (scene('for i, s in enumerate(["a"], 1.5):\n    Text(s)'), "TypeError"),   # non-int enumerate start
    (scene('Text("x")', extra='TABLE = {["k"]: "v"}'), "TypeError"),            # unhashable dict key
])
def test_evaluator_errors_become_parse_fail(profile, code, error_type):
    row = text_expand_row("e", code, "p", "en", profile)
    assert row["status"] == "parse_fail"
    assert row["parse_error"].split(":")[0] == error_type


def test_parse_fail_rows_are_counted_not_scored():
    rows = [
        text_expand_row("ok", EN_CODE, EN_PROMPT, "en"),
        text_expand_row("bad", RECURSIVE_CODE, EN_PROMPT, "en"),
        text_expand_row("missing", None, EN_PROMPT, "en"),
    ]
    summary = summarize(rows)
    assert summary["total_records"] == 3 and summary["scored_count"] == 1
    assert summary["parse_fail_count"] == 1 and summary["missing_input_count"] == 1
    assert summary["avg_text_expand_ratio_unique"] == rows[0]["text_expand_ratio_unique"]


# ----------------------------------------------------------------------------------------------------------------
# §4 fallback scan
# ----------------------------------------------------------------------------------------------------------------

def test_fallback_argument_scanners():
    text = 'Text("a, (b)", \'c\\\'d\', """x)y""", f(1, 2), k=[1, 2])  # tail'
    inner = parenthesized_argument_text(text, text.index("("))
    assert inner == '"a, (b)", \'c\\\'d\', """x)y""", f(1, 2), k=[1, 2]'
    assert split_top_level_arguments(inner) == ['"a, (b)"', "'c\\'d'", '"""x)y"""', "f(1, 2)", "k=[1, 2]"]
    assert split_top_level_arguments("a,,b,") == ["a", "", "b"]
    assert split_keyword_argument("k=[1, 2]") == ("k", "[1, 2]")
    assert split_keyword_argument('"x=1"') == (None, '"x=1"')
    assert split_keyword_argument("d['k']=1") == (None, "d['k']=1")
    # After an opening triple quote the scan resumes behind all three quotes: in `("""")` the string never
    # closes, so the argument text runs to the end.
    assert parenthesized_argument_text('("""")', 0) == '"""")'
    # A newline ends a single-quoted string, so an unclosed quote cannot swallow the rest of the file.
    assert parenthesized_argument_text("T('abc\n) more", 1) == "'abc\n"


def test_fallback_heuristic_text():
    assert heuristic_text('rf"Value: " + str(x) + f\'{y}\'') == "Value str x y"
    assert heuristic_text("True, None, (1 + 2)") == "1 2"
    assert heuristic_text("(), [], None") == ""


def test_fallback_scan_selection_and_environment():
    code = '''Sure! Here is your scene:
TITLE = "Fallback title"  # a comment
COUNT = 2 + 3
LABEL = make(label) + "tail"
class A(Scene):
    def construct(self):
        self.add(Text(TITLE), Text(COUNT), Text(LABEL), Text(MISSING))
        ax.get_axis_labels(y_label="yl", x_label="xl")
        Axes().add_coordinates([1, 2])
        (obj).Text("after a bare dot only methods count")
        Code("file.py", code="c1", code_string="c2")
        BraceLabel(b, "brace", label="lb")
        Text("unfinished
'''
    reference = extract_display_text(code, REFERENCE)
    assert reference.mode == MODE_FALLBACK
    assert reference.segments == [
        "Fallback title", "5", "make label tail",          # env: constant, then heuristic text
        # Text(MISSING): unknown identifier gives nothing
        "xl", "yl",                                        # keywords in table order, not call order
        "1", "2",
        "file.py", "c1",
        "brace", "lb",
        "unfinished",                                      # unclosed string: heuristic text of the rest
    ]
    improved = extract_display_text(code, IMPROVED)
    assert "c2" in improved.segments and "file.py" not in improved.segments  # Q-TEXT-3 in fallback mode too


def test_fallback_keyword_detection_quirk():
    # `a == b` has a top-level '=' whose left side is the identifier `a`: it is read as keyword `a`, so the
    # first *positional* argument of Text is "second", and MathTex's only positional is "z".
    code = 'Text(a == b, "second")\nMathTex(x == "y", "z"\n'
    assert extract_display_text(code).segments == ["second", "z"]


# ----------------------------------------------------------------------------------------------------------------
# Summary (§5.4) and the run directory (§1)
# ----------------------------------------------------------------------------------------------------------------

def test_summary_keys_and_by_difficulty():
    rows = [
        text_expand_row("1", EN_CODE, EN_PROMPT, "en", difficulty="easy"),
        text_expand_row("2", ZH_CODE, ZH_PROMPT, "zh", difficulty="hard"),
        text_expand_row("3", "Text('x'", EN_PROMPT, "en", difficulty="hard"),
    ]
    summary = summarize(rows, gen_dir="runs/x", manifest_path=None)
    assert list(summary) == [
        "formula", "total_records", "scored_count", "avg_text_expand_ratio_raw", "avg_text_expand_ratio_unique",
        "avg_info_expand_ratio", "avg_novelty_ratio", "avg_prompt_token_count", "avg_display_token_count_unique",
        "fallback_count", "parse_fail_count", "missing_input_count", "by_difficulty", "gen_dir", "manifest_path",
        "profile",
    ]
    assert summary["formula"]["info_expand_ratio"] == "novel_display_text_tokens / prompt_body_tokens"
    assert summary["fallback_count"] == 1
    assert summary["avg_prompt_token_count"] == (31 + 33 + 31) / 3
    assert summary["by_difficulty"]["easy"]["count"] == 1
    assert summary["by_difficulty"]["medium"] == {
        "count": 0, "avg_text_expand_ratio_raw": 0.0, "avg_text_expand_ratio_unique": 0.0,
        "avg_info_expand_ratio": 0.0, "avg_novelty_ratio": 0.0, "avg_prompt_token_count": 0.0,
        "avg_display_token_count_unique": 0.0}
    hard = summary["by_difficulty"]["hard"]
    assert hard["avg_info_expand_ratio"] == (rows[1]["info_expand_ratio"] + rows[2]["info_expand_ratio"]) / 2
    assert not any("quintile" in key or "decile" in key for key in summary)


def test_summary_refuses_mixed_profiles():
    rows = [text_expand_row("1", EN_CODE, EN_PROMPT, "en", REFERENCE),
            text_expand_row("2", EN_CODE, EN_PROMPT, "en", IMPROVED)]
    with pytest.raises(ValueError):
        summarize(rows)
    with pytest.raises(ValueError):
        summarize(rows[:1], profile=IMPROVED)


def test_score_generation_dir(tmp_path):
    gen = tmp_path / "gen"
    for sub in ("prompt_snapshots", "cleaned_scripts", "meta"):
        (gen / sub).mkdir(parents=True)
    manifest = tmp_path / "prism.jsonl"
    manifest.write_text(json.dumps({"id": "PRISM-ZH-000001", "language": "zh"}, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    details = [
        {"id": "prism__PRISM-ZH-000001", "source_id": "PRISM-ZH-000001", "manifest_path": str(manifest)},
        {"id": "prism__PRISM-EN-000002", "source_id": "PRISM-EN-000002", "manifest_path": str(manifest)},
    ]
    (gen / "results.json").write_text(json.dumps({"details": details}), encoding="utf-8")
    (gen / "prompt_snapshots" / "prism__PRISM-ZH-000001.txt").write_text(ZH_PROMPT, encoding="utf-8")
    # undecodable bytes are ignored when reading
    (gen / "cleaned_scripts" / "prism__PRISM-ZH-000001.py").write_bytes(ZH_CODE.encode("utf-8") + b"\n# \xff\n")
    (gen / "meta" / "prism__PRISM-ZH-000001.json").write_text("{}", encoding="utf-8")
    (gen / "prompt_snapshots" / "prism__PRISM-EN-000002.txt").write_text(EN_PROMPT, encoding="utf-8")

    rows, summary = score_generation_dir(gen, REFERENCE)
    out = gen / "info_expand_final"
    assert [r["status"] for r in rows] == ["ok", "missing_input"]
    assert rows[0]["display_token_count_unique"] == 24 and rows[0]["language"] == "zh"
    assert rows[0]["meta_path"] == str(gen / "meta" / "prism__PRISM-ZH-000001.json")
    assert rows[1]["language"] == "en" and rows[0]["difficulty"] is None
    assert summary["manifest_path"] == str(manifest) and summary["difficulty_source"] == "jsonl"
    assert [json.loads(line) for line in (out / "info_expand_scores.jsonl").read_text("utf-8").splitlines()] == rows
    assert json.loads((out / "info_expand_scores.json").read_text("utf-8")) == rows
    assert json.loads((out / "summary.json").read_text("utf-8")) == summary

    _, improved_summary = score_generation_dir(gen, IMPROVED)
    assert (gen / "info_expand_final_improved" / "summary.json").exists()
    assert improved_summary["profile"] == "improved"
    assert json.loads((out / "summary.json").read_text("utf-8"))["profile"] == "reference"  # not overwritten


# ------------------------------------------------------------------- untrusted code in the driver (#13, #15)

def _te_row(code: str, profile=REFERENCE):
    from prism_fast.metrics.text_expand import text_expand_row

    return text_expand_row("X-1", code, "Show the title", "en", profile)


def test_terminating_recursion_is_a_parse_fail_row_the_store_accepts(tmp_path):
    """Q-TEXT-2 reference: a recursive helper ends in RecursionError → ``parse_fail`` with the toolkit's
    ``parse_error`` field, which the store must accept (it used to raise KeyError and stop the run)."""
    from prism_fast.store import ResultsStore

    code = ("from manim import *\ndef label(n):\n    if n <= 0:\n        return Text('x')\n    return label(n - 1)\n"
            "class S(Scene):\n    def construct(self):\n        self.add(label(3))\n")
    row = _te_row(code)
    assert row["status"] == "parse_fail" and row["parse_error"].startswith("RecursionError")
    row.update(model="m", lang="en", id="X-1", text_expand_status=row["status"], status="error")  # as the pipeline
    ResultsStore(tmp_path).append("text_expand", [row])
    assert ResultsStore(tmp_path).read("text_expand").to_pylist()[0]["parse_error"] == row["parse_error"]


@pytest.mark.parametrize("body", [
    "for i in range(1000000000):\n            self.add(Text(str(i)))",
    "for i in range(900000):\n            for j in range(900000):\n                self.add(Text('a'))",
    "self.add(Text(f'{1:>300000000}'))",  # format specs apply under Q-TEXT-4 improved only
    "self.add(Text('{:.300000000f}'.format(1.0)))",
])
@pytest.mark.parametrize("profile", [REFERENCE, IMPROVED])
def test_work_bombs_are_bounded_parse_fail_rows(body, profile):
    import time

    code = f"from manim import *\nclass S(Scene):\n    def construct(self):\n        {body}\n"
    t0 = time.perf_counter()
    row = _te_row(code, profile)
    if "f'" in body and profile is REFERENCE:  # reference ignores the spec: nothing is allocated
        assert row["status"] == "ok" and time.perf_counter() - t0 < 30
        return
    assert time.perf_counter() - t0 < 30
    assert row["status"] == "parse_fail" and row["parse_error"].startswith("ExtractionBudgetExceeded")


def test_long_numbers_in_template_text_are_not_widths():
    code = ("from manim import *\nclass S(Scene):\n    def construct(self):\n"
            "        self.add(Text('call 123456789012 or {}'.format('now')))\n")
    row = _te_row(code)
    assert row["status"] == "ok"
