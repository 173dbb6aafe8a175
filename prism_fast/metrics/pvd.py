"""PVD, the prompt visual density of PADVC (spec padvc.md §8): cleaning, N_struct, anchor lexicons, EN
normalisation, exact hits, semantic (embedding) hits.

    PVD = max(1, N_struct + N_action),   pvd_factor = ln(PVD + e)

PVD depends on the prompt only, so ``PvdCalculator`` caches it by sha256(prompt text) (plus the profile's
PVD switches and the backends): once per prompt, never once per (model, prompt).

Embeddings (the only model use): shibing624/text2vec-base-chinese (zh, threshold 0.80) and
sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2 (en, threshold 0.55), through
sentence-transformers, fp32, unnormalised. A missing model is an error in every profile (Q-PADVC-2); the
toolkit's char 2–4-gram TF-IDF similarity for EN runs only when ``embedding_backend="tfidf"`` is selected, and
rows then say ``pvd_en_backend: "tfidf"``.

Quirk switches: Q-PADVC-6 (prompt as path), Q-PADVC-9 ("lead to" double count), Q-PADVC-10 (``<…>``
stripping), Q-PADVC-11 (EN stemmer misses), Q-PADVC-12 (EN candidates are stems), Q-PADVC-13 (preamble).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from prism_fast.profile import REFERENCE, Profile

log = logging.getLogger("prism_fast.pvd")

ZH_MODEL_ID = "shibing624/text2vec-base-chinese"
EN_MODEL_ID = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
ZH_THRESHOLD = 0.80
EN_THRESHOLD = 0.55
EMBEDDING_BACKENDS = ("sentence-transformers", "tfidf")

# §8.3, three groups in this order: (name, zh words, en words/phrases).
ANCHOR_GROUPS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("指向/因果", ("演化", "导致", "转化", "转换", "衍生", "生成", "引起", "产生"),
     ("evolve", "evolution", "lead", "lead to", "cause", "result", "result in", "convert", "conversion",
      "transform", "transformation", "derive", "generate", "produce")),
    ("包含/结构", ("包含", "分为", "组成", "属于", "囊括", "构成", "包括"),
     ("contain", "include", "consist", "consist of", "compose", "be composed of", "belong", "belong to", "form",
      "structure", "component")),
    ("对比/平行", ("区别", "相比", "对应", "对比", "映射", "不同于", "平行"),
     ("difference", "different", "compare", "compare with", "contrast", "correspond", "correspond to",
      "mapping", "map", "parallel", "versus", "different from")),
)

# §8.4 rule 1.
IRREGULAR = {
    "led": "lead", "caused": "cause", "causes": "cause", "resulting": "result", "results": "result",
    "generated": "generate", "generates": "generate", "generating": "generate", "produced": "produce",
    "produces": "produce", "composed": "compose", "composes": "compose", "contained": "contain",
    "contains": "contain", "included": "include", "includes": "include", "consists": "consist",
    "belonged": "belong", "belongs": "belong", "compared": "compare", "compares": "compare",
    "comparing": "compare", "contrasted": "contrast", "contrasts": "contrast", "corresponds": "correspond",
    "mapped": "map", "maps": "map", "differences": "difference", "components": "component",
    "structures": "structure", "transforms": "transform", "transformed": "transform", "converts": "convert",
    "converted": "convert", "derives": "derive", "derived": "derive", "evolves": "evolve", "evolved": "evolve",
}

# §8.2 N_struct regexes (MULTILINE findall on clean_md), keyed as in the toolkit.
STRUCT_PATTERNS = {"标题": re.compile(r"^#+", re.M), "列表": re.compile(r"\n\s*[-*]", re.M),
                   "引用": re.compile(r"\n\s*>", re.M), "有序": re.compile(r"\n\s*\d+\.", re.M)}
_CONTEXT_PATTERNS = (re.compile(r"<!--\s*CONTEXT:BEGIN\s*-->.*?<!--\s*CONTEXT:END\s*-->\s*", re.S | re.I),
                     re.compile(r"<context_begin>.*?<context_end>\s*", re.S | re.I))
_FENCE = re.compile(r"```.*?```", re.S)
_ANGLE_ANY = re.compile(r"<.*?>", re.S)                # reference, Q-PADVC-10
_ANGLE_TAG = re.compile(r"<[A-Za-z/!][^<>]*>")         # improved
_EN_TOKEN = re.compile(r"[A-Za-z][A-Za-z\-]{1,}")
_WS = re.compile(r"\s+")
_HAN = re.compile("[\u4e00-\u9fd5]")


# --- cleaning and structure -----------------------------------------------------------------------------

def clean_markdown(md: str, *, profile: Profile = REFERENCE) -> tuple[str, str]:
    """§8.1 → ``(clean_md, pure_text)``."""
    text = md
    for pat in _CONTEXT_PATTERNS:
        text = pat.sub("", text)
    clean_md = _FENCE.sub("", text)
    angle = _ANGLE_TAG if profile.fixes("Q-PADVC-10") else _ANGLE_ANY
    return clean_md, angle.sub("", clean_md)


def structure_counts(clean_md: str) -> dict[str, int]:
    """§8.2: non-zero match counts per key."""
    out = {}
    for key, pat in STRUCT_PATTERNS.items():
        n = len(pat.findall(clean_md))
        if n:
            out[key] = n
    return out


def prompt_for_pvd(prompt: str, *, profile: Profile = REFERENCE) -> str:
    """The text PVD reads. Reference: the whole instruction (Q-PADVC-13), and a prompt that is the path of
    an existing file is replaced by that file's text (Q-PADVC-6). Improved: the body after the first body
    marker (TextExpand's list), never a path."""
    if not profile.fixes("Q-PADVC-6"):
        try:
            if len(prompt) < 4096 and os.path.isfile(prompt):
                return Path(prompt).read_text(encoding="utf-8")
        except (OSError, ValueError):
            pass
    if profile.fixes("Q-PADVC-13"):
        from prism_fast.metrics.text_expand_text import PROMPT_BODY_MARKERS

        for marker in PROMPT_BODY_MARKERS:
            if marker in prompt:
                return prompt.split(marker, 1)[1]
    return prompt


# --- tokens ---------------------------------------------------------------------------------------------

def normalize_zh(token: str) -> str:
    return _WS.sub("", token.strip())


def normalize_en_reference(token: str) -> str:
    """§8.4 exactly (reference)."""
    t = token.lower().strip("-'")
    if not t:
        return t
    if t in IRREGULAR:
        return IRREGULAR[t]
    if t.endswith("ies") and len(t) > 4:
        return t[:-3] + "y"
    if t.endswith("ing") and len(t) > 5:
        return t[:-3]
    if t.endswith("ed") and len(t) > 4:
        return t[:-2]
    if t.endswith("es") and len(t) > 4:
        return t[:-2]
    if t.endswith("s") and len(t) > 3:
        return t[:-1]
    return t


def _improved_base(token: str) -> str:
    """Reference rules, except that words ending in us/ss/is skip the plain ``s`` rule (Q-PADVC-11)."""
    t = token.lower().strip("-'")
    if t.endswith(("us", "ss", "is")) and not t.endswith(("ies", "es")) and t not in IRREGULAR:
        return t
    return normalize_en_reference(t)


def _improved_lexicon() -> frozenset[str]:
    words = set()
    for _, _, en in ANCHOR_GROUPS:
        for phrase in en:
            words.add(" ".join(_improved_base(w) for w in phrase.split()))
    return frozenset(words)


def normalize_en_improved(token: str, lexicon: frozenset[str] | None = None) -> str:
    """Q-PADVC-11 fixed: after the reference rules, a miss tries ``+e`` and then an undoubled final consonant."""
    lex = lexicon if lexicon is not None else _IMPROVED_LEXICON_WORDS
    base = _improved_base(token)
    if not base or base in lex:
        return base
    if base + "e" in lex:
        return base + "e"
    if len(base) > 2 and base[-1] == base[-2] and base[-1] not in "aeiou" and base[:-1] in lex:
        return base[:-1]
    return base


def en_lexicon(profile: Profile = REFERENCE) -> frozenset[str]:
    """The normalised EN lexicon (37 entries in reference, §8.4)."""
    if profile.fixes("Q-PADVC-11"):
        base = _improved_lexicon()
        return frozenset(" ".join(normalize_en_improved(w, base) for w in p.split()) for p in base)
    return frozenset(" ".join(t for t in (normalize_en_reference(w) for w in p.lower().split()) if t)
                     for _, _, en in ANCHOR_GROUPS for p in en)


ZH_LEXICON = frozenset(normalize_zh(w) for _, zh, _ in ANCHOR_GROUPS for w in zh)
_IMPROVED_LEXICON_WORDS = frozenset(w for p in _improved_lexicon() for w in p.split()) | _improved_lexicon()


def zh_words(pure_text: str) -> list[str]:
    """§8.5: jieba POS words whose flag starts with v/p/c and whose length is > 1 (duplicates kept).

    Text without a Han character (jieba's range U+4E00–U+9FD5) gives [] without loading jieba: there jieba only
    emits ``eng``/``m``/``x`` tags or dictionary words with no Han character, none of which is tagged v/p/c
    (checked on jieba 0.42.1's dictionary; tests/metrics/test_padvc_pvd.py compares with jieba)."""
    if not _HAN.search(pure_text):
        return []
    try:
        import jieba
        import jieba.posseg as pseg
    except ImportError as exc:  # pragma: no cover - jieba is a hard dependency
        raise RuntimeError("PVD needs jieba (pip install jieba==0.42.1)") from exc
    jieba.setLogLevel(logging.WARNING)
    return [normalize_zh(pair.word) for pair in pseg.cut(pure_text)
            if pair.flag[:1] in ("v", "p", "c") and len(pair.word) > 1]


def en_surface_tokens(pure_text: str) -> list[str]:
    return [t.lower() for t in _EN_TOKEN.findall(pure_text)]


def en_phrases(words: Sequence[str]) -> set[str]:
    """All 2-, 3- and 4-grams of the normalised words, joined by single spaces."""
    out = set()
    for n in range(2, 5):
        for i in range(len(words) - n + 1):
            phrase = " ".join(w for w in words[i:i + n] if w)
            if phrase:
                out.add(phrase)
    return out


# --- similarity backends --------------------------------------------------------------------------------

def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity. Uses scikit-learn's ``cosine_similarity`` when installed (the toolkit's own
    function, for parity of the last bits at the 0.80/0.55 thresholds), else the same formula in NumPy."""
    try:
        from sklearn.metrics.pairwise import cosine_similarity
    except ImportError:
        def unit(x):
            n = np.sqrt(np.einsum("ij,ij->i", x, x))
            n[n == 0] = 1
            return x / n[:, None]
        return unit(np.asarray(a)) @ unit(np.asarray(b)).T
    return cosine_similarity(a, b)


class CharTfidf:
    """The toolkit's EN forensic fallback: scikit-learn ``TfidfVectorizer(analyzer="char_wb",
    ngram_range=(2, 4))`` semantics (lower-case, whitespace collapsed, words padded with one space, smooth
    idf = ln((1+n)/(1+df)) + 1, raw counts × idf, L2-normalised rows), written out so that no scikit-learn is
    needed. tests/metrics/test_padvc_pvd.py checks it against scikit-learn."""

    def __init__(self, ngram_range: tuple[int, int] = (2, 4)):
        self.lo, self.hi = ngram_range
        self.vocab: dict[str, int] = {}
        self.idf: np.ndarray | None = None

    def _grams(self, text: str) -> list[str]:
        out = []
        for word in _WS.sub(" ", text.lower()).split():
            w = f" {word} "
            for n in range(self.lo, self.hi + 1):
                offset = 0
                out.append(w[offset:offset + n])
                while offset + n < len(w):
                    offset += 1
                    out.append(w[offset:offset + n])
                if offset == 0:
                    break
        return out

    def fit(self, docs: Sequence[str]) -> "CharTfidf":
        grams = [set(self._grams(d)) for d in docs]
        self.vocab = {g: i for i, g in enumerate(sorted(set().union(*grams)))}
        df = np.zeros(len(self.vocab))
        for gs in grams:
            for g in gs:
                df[self.vocab[g]] += 1
        self.idf = np.log((1 + len(docs)) / (1 + df)) + 1.0
        return self

    def transform(self, docs: Sequence[str]) -> np.ndarray:
        assert self.idf is not None
        out = np.zeros((len(docs), len(self.vocab)))
        for r, d in enumerate(docs):
            for g, c in Counter(self._grams(d)).items():
                if g in self.vocab:
                    out[r, self.vocab[g]] = c
        out *= self.idf
        norms = np.linalg.norm(out, axis=1)
        norms[norms == 0] = 1.0
        return out / norms[:, None]


def resolve_model_path(model_id: str, *, configured: str | None, env_var: str, hf_cache: str | None,
                       hub_fallback: bool) -> str | None:
    """§8.7 model resolution: configured path/id, else env var, else the lexicographically last snapshot under
    ``<hf_cache>/models--<org>--<name>/snapshots``, else the hub id (zh only; loaded offline, so only from the
    local hub cache)."""
    if configured:
        return str(configured)
    if os.environ.get(env_var):
        return os.environ[env_var]
    roots = [hf_cache, os.environ.get("PADVC_HF_CACHE")]
    for root in [r for r in roots if r]:
        snaps = Path(root) / ("models--" + model_id.replace("/", "--")) / "snapshots"
        if snaps.is_dir():
            found = sorted(p for p in snaps.iterdir())
            if found:
                return str(found[-1])
    return model_id if hub_fallback else None


class SentenceEmbedder:
    """``SentenceTransformer(path).encode`` in fp32, unnormalised, offline."""

    def __init__(self, name_or_path: str, device: str = "cpu"):
        os.environ["HF_HUB_OFFLINE"] = "1"  # forced (spec §8.7): never a download at run time
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise RuntimeError("PADVC embeddings need sentence-transformers: pip install -e .[embeddings] "
                               "(or select metrics.padvc.embedding_backend=tfidf, forensic only)") from exc
        try:
            self.model = SentenceTransformer(name_or_path, device=device)
        except Exception as exc:  # noqa: BLE001 - re-raised with the fix
            raise RuntimeError(f"PADVC embedding model {name_or_path!r} could not be loaded offline "
                               f"({type(exc).__name__}: {exc}); put it in the HF hub cache or set "
                               "metrics.padvc.models.* to a local folder") from exc
        self.name = str(name_or_path)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.model.encode(list(texts), show_progress_bar=False, convert_to_numpy=True),
                          dtype=np.float32)


# --- PVD ------------------------------------------------------------------------------------------------

@dataclass
class PvdResult:
    pvd_raw: int
    pvd_factor: float
    n_struct: int
    n_action: int
    structure_counts: dict
    matched_words: list
    zh_exact: list
    en_exact: list
    zh_semantic: dict          # word -> [group, similarity]
    en_semantic: dict
    zh_backend: str
    en_backend: str
    prompt_sha256: str

    def fields(self) -> dict:
        return {"pvd_raw": self.pvd_raw, "pvd_factor": self.pvd_factor, "pvd_n_struct": self.n_struct,
                "pvd_n_action": self.n_action, "pvd_matched_words": list(self.matched_words),
                "pvd_zh_backend": self.zh_backend, "pvd_en_backend": self.en_backend,
                "prompt_sha256": self.prompt_sha256}


@dataclass
class PvdConfig:
    embedding_backend: str = "sentence-transformers"   # or tfidf (EN forensic fallback; zh still needs its model)
    zh_model: str | None = None
    en_model: str | None = None
    hf_cache: str | None = None
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.embedding_backend not in EMBEDDING_BACKENDS:
            raise ValueError(f"embedding_backend: expected one of {EMBEDDING_BACKENDS}, got {self.embedding_backend!r}")


class PvdCalculator:
    """PVD with its embedders (loaded lazily, once) and a per-prompt cache.

    ``zh_encoder`` / ``en_encoder`` may be injected (any object with ``encode(list[str]) -> ndarray``); they are
    otherwise built from ``config``.
    """

    def __init__(self, config: PvdConfig | None = None, *, profile: Profile = REFERENCE,
                 zh_encoder=None, en_encoder=None):
        self.config = config or PvdConfig()
        self.profile = profile
        self._zh, self._en = zh_encoder, en_encoder
        self._zh_anchor = self._en_anchor = None
        self._tfidf: CharTfidf | None = None
        self._tfidf_anchor = None
        self._cache: dict[str, PvdResult] = {}
        self._lock = threading.Lock()
        self.en_lexicon = en_lexicon(profile)
        self.normalize_en: Callable[[str], str] = (normalize_en_improved if profile.fixes("Q-PADVC-11")
                                                   else normalize_en_reference)
        if self.config.embedding_backend == "tfidf":
            log.warning("PVD: EN semantic hits use the TF-IDF fallback (forensic switch, Q-PADVC-2): PADVC is "
                        "not comparable with the paper's; rows record pvd_en_backend='tfidf'")

    # -- backends
    @property
    def zh_backend(self) -> str:
        return getattr(self._zh, "name", None) or (self.config.zh_model or ZH_MODEL_ID)

    @property
    def en_backend(self) -> str:
        if self.config.embedding_backend == "tfidf":
            return "tfidf"
        return getattr(self._en, "name", None) or (self.config.en_model or EN_MODEL_ID)

    def _zh_encoder(self):
        if self._zh is None:
            path = resolve_model_path(ZH_MODEL_ID, configured=self.config.zh_model, env_var="PADVC_ZH_MODEL",
                                      hf_cache=self.config.hf_cache, hub_fallback=True)
            self._zh = SentenceEmbedder(path, self.config.device)
        if self._zh_anchor is None:
            self._zh_anchor = np.array([np.mean(self._zh.encode(list(zh)), axis=0) for _, zh, _ in ANCHOR_GROUPS])
        return self._zh

    def _en_encoder(self):
        if self._en is None:
            path = resolve_model_path(EN_MODEL_ID, configured=self.config.en_model, env_var="PADVC_EN_MODEL",
                                      hf_cache=self.config.hf_cache, hub_fallback=False)
            if path is None:
                raise RuntimeError(f"PADVC EN embedding model {EN_MODEL_ID} not found (metrics.padvc.models.en, "
                                   "env PADVC_EN_MODEL or the HF cache). The toolkit would silently switch to "
                                   "TF-IDF (Q-PADVC-2); select metrics.padvc.embedding_backend=tfidf to do so on "
                                   "the record")
            self._en = SentenceEmbedder(path, self.config.device)
        if self._en_anchor is None:
            self._en_anchor = np.array([np.mean(self._en.encode(list(en)), axis=0) for _, _, en in ANCHOR_GROUPS])
        return self._en

    def _best(self, sims: np.ndarray, threshold: float, words: Sequence[str]) -> dict:
        hits = {}
        names = [g for g, _, _ in ANCHOR_GROUPS]
        for i, word in enumerate(words):
            j = int(np.argmax(sims[i]))
            s = float(sims[i][j])
            if s >= threshold:
                hits[word] = [names[j], s]
        return hits

    def _zh_semantic(self, candidates: list[str]) -> dict:
        if not candidates:
            return {}
        enc = self._zh_encoder()
        return self._best(cosine_matrix(enc.encode(candidates), self._zh_anchor), ZH_THRESHOLD, candidates)

    def _en_semantic(self, candidates: list[str], texts: list[str]) -> dict:
        if not candidates:
            return {}
        if self.config.embedding_backend == "tfidf":
            if self._tfidf is None:
                self._tfidf = CharTfidf().fit([" ".join(en) for _, _, en in ANCHOR_GROUPS])
                self._tfidf_anchor = self._tfidf.transform([" ".join(en) for _, _, en in ANCHOR_GROUPS])
            sims = cosine_matrix(self._tfidf.transform(texts), self._tfidf_anchor)
        else:
            enc = self._en_encoder()
            sims = cosine_matrix(enc.encode(texts), self._en_anchor)
        return self._best(sims, EN_THRESHOLD, candidates)

    # -- main
    def compute(self, prompt: str) -> PvdResult:
        text = prompt_for_pvd(prompt, profile=self.profile)
        key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        result = self._compute(text, key)
        with self._lock:
            self._cache[key] = result
        return result

    def _compute(self, md: str, key: str) -> PvdResult:
        p = self.profile
        clean_md, pure = clean_markdown(md, profile=p)
        counts = structure_counts(clean_md)
        n_struct = sum(counts.values())

        zh = zh_words(pure)
        surface = en_surface_tokens(pure)
        en = [self.normalize_en(t) for t in surface]
        phrases = en_phrases(en)
        zh_exact = {w for w in zh if w in ZH_LEXICON} | {k for k in ZH_LEXICON if len(k) > 1 and k in pure}
        en_phrase_hits = {ph for ph in phrases if ph in self.en_lexicon}
        covered = {w for ph in en_phrase_hits for w in ph.split()}
        en_token_hits = {w for w in en if w in self.en_lexicon and w not in covered}
        en_exact = en_token_hits | en_phrase_hits

        zh_cands = [w for w in zh if w and w not in zh_exact]
        en_cands, en_texts, seen = [], [], set()
        stop = _stop_words() if p.fixes("Q-PADVC-12") else frozenset()
        for stem, word in zip(en, surface):
            if not stem or stem in en_exact or stem in seen:
                continue
            if p.fixes("Q-PADVC-9") and stem in covered:   # improved: phrase words are not candidates again
                continue
            seen.add(stem)
            if p.fixes("Q-PADVC-12"):   # improved: embed the surface form of the first occurrence, skip stopwords
                if word.strip("-'") in stop:
                    continue
                en_cands.append(stem)
                en_texts.append(word.strip("-'"))
            else:
                en_cands.append(stem)
                en_texts.append(stem)
        zh_sem = self._zh_semantic(zh_cands)
        en_sem = self._en_semantic(en_cands, en_texts)
        matched = sorted(zh_exact | en_exact | set(zh_sem) | set(en_sem))
        pvd = max(n_struct + len(matched), 1)
        return PvdResult(pvd, math.log(pvd + math.e), n_struct, len(matched), counts, matched, sorted(zh_exact),
                         sorted(en_exact), zh_sem, en_sem,
                         self.zh_backend, self.en_backend, key)


def _stop_words() -> frozenset[str]:
    try:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
    except ImportError as exc:
        raise RuntimeError("improved PVD (Q-PADVC-12) needs scikit-learn's ENGLISH_STOP_WORDS "
                           "(installed with the [embeddings] extra)") from exc
    return frozenset(ENGLISH_STOP_WORDS)


__all__ = ["ANCHOR_GROUPS", "ZH_LEXICON", "CharTfidf", "PvdCalculator", "PvdConfig", "PvdResult",
           "SentenceEmbedder", "clean_markdown", "cosine_matrix", "en_lexicon", "en_phrases", "normalize_en_improved",
           "normalize_en_reference", "prompt_for_pvd", "resolve_model_path", "structure_counts", "zh_words"]
