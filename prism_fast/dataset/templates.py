"""Instruction templates: how a markdown teaching outline becomes a PRISM instruction.

The Chinese template is benchmark input data reproduced verbatim from the spec (generation.md §2.1). The
English dataset template of the paper could not be inspected (spec D-6); the bundled English samples use our
own wording that ends in the body marker TextExpand and PVD look for (``The Markdown lecture notes are as
follows:``). Released PRISM rows always carry their own full instruction, so this English text never
affects a number computed on the released dataset.
"""

from __future__ import annotations

ZH_BODY_MARKER = "Markdown 讲义如下："
EN_BODY_MARKER = "The Markdown lecture notes are as follows:"

ZH_TEMPLATE = (
    "你是 Manim 专家，请将 Markdown 讲义转换为一段中文展示的 Manim CE v0.19.0 可运行代码。"
    "要求页面排版逻辑清晰、无元素遮挡，且严禁输出任何代码以外的说明或解释文本。"
    "代码需特别注意规避 LaTeX 语法错误、索引越界等常见报错，确保直接运行。"
    + ZH_BODY_MARKER
    + "\n\n{markdown}"
)

# Ours (see the module docstring): same structure as the zh template, English on-screen text.
EN_TEMPLATE = (
    "You are a Manim expert. Turn the Markdown lecture notes below into one runnable Manim CE v0.19.0 "
    "program whose on-screen text is in English. The layout must be logically clear with no element "
    "covering another, and you must output nothing but code: no explanations or commentary. Take particular "
    "care to avoid LaTeX syntax errors, index-out-of-range mistakes and other common errors so that the code "
    "runs as it is. "
    + EN_BODY_MARKER
    + "\n\n{markdown}"
)

TEMPLATES = {"zh": ZH_TEMPLATE, "en": EN_TEMPLATE}
BODY_MARKERS = {"zh": ZH_BODY_MARKER, "en": EN_BODY_MARKER}


def build_instruction(markdown: str, language: str) -> str:
    """Apply the language's template to the stripped markdown (as prepare_reference_dataset does for zh)."""
    try:
        template = TEMPLATES[language]
    except KeyError:
        raise ValueError(f"unknown language {language!r}; expected one of {sorted(TEMPLATES)}") from None
    return template.replace("{markdown}", markdown.strip())
