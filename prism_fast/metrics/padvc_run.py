"""PADVC over a run's rows (spec padvc.md §2, §10, §11): settings, the gate and PVD (once per prompt), the
per-video worker that decodes and OCRs, and the reference fit's records. The pipeline only wires these to Ray
and the store (``pipeline/eval_stages.py``, ``pipeline/fit_reference.py``).

Settings: the typed ``metrics.padvc`` group (``prism_fast.config_schema.PadvcSchema``: p, event_threshold,
text_dilate, text_stride, ocr_backend, ``ocr`` (provider, paddle_model_dir, RapidOCR thresholds), embedding_backend,
``models`` (zh, en, hf_cache), ``ocr_cache_dir`` (default ``<run_dir>/ocr_cache``, the toolkit's shared per-run
cache) and ``frame_cache_dir`` (default ``<runs_root>/.cache/ocr_frames``, content-keyed, shared across runs)),
handed in by the pipeline; this package reads it through :class:`PadvcSettings` and never imports the schema.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Protocol

from prism_fast.metrics.padvc import (PadvcConfig, PadvcParams, VideoDecodeError, base_fields, compute_padvc_details,
                                      error_row, finish_ok_row, gate_error)
from prism_fast.profile import Profile
from prism_fast.schema import normalize_status

if TYPE_CHECKING:
    from prism_fast.video.ocr import OcrSettings

log = logging.getLogger("prism_fast")


# -- settings ------------------------------------------------------------------------------------------------------
class PadvcSettings(Protocol):
    """What the worker reads of the typed ``metrics.padvc`` group (``prism_fast.config_schema.PadvcSchema``, which
    holds the settings and their conversions; the pipeline hands it in)."""

    def padvc_config(self) -> PadvcConfig: ...

    def ocr_settings(self, profile: Profile) -> OcrSettings: ...


def ocr_cache_dir(configured: str | None, run_dir: str | Path) -> str:
    """``metrics.padvc.ocr_cache_dir`` (``configured``), else ``<run_dir>/ocr_cache`` (the toolkit's per-run
    cache)."""
    return str(Path(configured or (Path(run_dir) / "ocr_cache")).absolute())


def forget_video_ocr(ocr_dir: str | Path, sample_ids: Iterable[str]) -> None:
    """Drop the per-video OCR cache of samples whose video is re-rendered: reference keys it by the video's path
    (Q-PADVC-7), so a clean run would not have it."""
    ocr_dir = Path(ocr_dir)
    if not ocr_dir.is_dir():
        return
    for sid in sample_ids:
        for p in ocr_dir.glob(f"{sid[:80]}__*.json*"):
            p.unlink(missing_ok=True)


# -- PVD: once per prompt, in the driver ---------------------------------------------------------------------------
# Prompts that make PVD load every embedding model a language's prompts can need (words outside the lexicons):
# English prompts reach only the EN model; Chinese prompts the ZH model and, for Latin words, the EN model.
_PREFLIGHT_PROMPTS = {"en": "Make the hexagon wobble gently beside a lighthouse.",
                      "zh": "让六边形在灯塔旁轻轻摇晃, then wobble the hexagon."}


def pvd_preflight(calc, languages, command: str = "eval") -> None:
    """Load what PVD needs for these languages before any PADVC work: a missing embedding model (or
    sentence-transformers) is a setting to fix, named here with the fix, not one error row per sample."""
    for lang in languages:
        prompt = _PREFLIGHT_PROMPTS.get(lang)
        if prompt is None:
            continue
        try:
            calc.compute(prompt)
        except Exception as exc:  # noqa: BLE001 - re-raised as the message a user can act on
            raise SystemExit(
                f"{command}: PADVC needs the PVD embedding model(s) for {lang!r}, which did not load offline: "
                f"{type(exc).__name__}: {exc}\nFix: put the models in local folders and set "
                "metrics.padvc.models.zh=/path/to/text2vec-base-chinese metrics.padvc.models.en=/path/to/"
                "paraphrase-multilingual-MiniLM-L12-v2 (or env PADVC_ZH_MODEL / PADVC_EN_MODEL, or PADVC_HF_CACHE / "
                "metrics.padvc.models.hf_cache = a Hugging Face hub cache holding them; `pip install -e .[embeddings]` "
                "for sentence-transformers). `prism-fast doctor` shows what this machine finds. "
                + ("Or fit TD only: fit_reference.padvc=false." if command == "fit-reference"
                   else "Or run without PADVC: metrics.padvc.enabled=false.")) from None


def plan_padvc(keys: Iterable[tuple[str, str]], instructions: Mapping[str, str], exec_rows: Mapping,
               audit_rows: Mapping, make_pvd: Callable[[], object], languages: Iterable[str],
               profile: Profile) -> tuple[list[dict], list[tuple[str, str, dict, dict]]]:
    """Gate every (lang, id) (§2.3) and compute PVD once per distinct prompt.

    Returns the finished rows (gate failures, prompts PVD could not score) and the work for the video worker:
    ``(lang, id, base, pvd_fields)``. ``make_pvd()`` builds the PVD calculator, only once a sample passes the
    gate; its models are loaded (:func:`pvd_preflight`) before the first prompt."""
    rows, work = [], []
    pvd_calc = None
    for lang, sid in keys:
        ex, au = exec_rows.get((lang, sid), {}), audit_rows.get((lang, sid), {})
        # instruction_text = the full instruction sent to the model (§2.4); our manifests always carry it, so
        # Q-PADVC-5 (markdown-mode manifests without it) cannot arise here.
        task_view = {"id": sid, "source_id": sid, "instruction_text": instructions[sid]}
        base = base_fields(task_view, au, ex)
        message = gate_error(task_view, au, ex)
        if message is not None:
            row = error_row(base, f"RuntimeError: {message}", profile=profile)
            row.update(lang=lang, error_kind="gate", error_detail=message)
            rows.append(normalize_status(row, "padvc_status"))
            continue
        if pvd_calc is None:
            pvd_calc = make_pvd()
            pvd_preflight(pvd_calc, sorted(set(languages)))
        try:
            pvd = pvd_calc.compute(instructions[sid])   # cached by prompt hash: once per prompt
        except Exception as exc:  # noqa: BLE001 - the models loaded (preflight): this prompt's own error row
            row = error_row(base, f"{type(exc).__name__}: {exc}", profile=profile)
            row.update(lang=lang, error_kind="pvd_failed", error_detail=f"{type(exc).__name__}: {exc}"[:4000])
            rows.append(normalize_status(row, "padvc_status"))
            continue
        work.append((lang, sid, base, pvd.fields()))
    return rows, work


def padvc_lost_row(base: dict, exc: BaseException) -> dict:
    """PADVC fields of a sample whose worker never returned."""
    return {"padvc_status": "worker_lost", **base, "error": f"{type(exc).__name__}: {exc}"[:4000]}


# -- the video worker ---------------------------------------------------------------------------------------------
class PadvcWorker:
    """Loads the OCR engine once; scores one gated row at a time (used inside the pipeline's actor and by fits)."""

    def __init__(self, settings: PadvcSettings, profile: Profile, ocr_cache_dir: str | None,
                 frame_cache_dir: str | None, decoder: str = "opencv", device: str = "cpu"):
        from prism_fast.video.ocr import FrameOcrCache, make_ocr_engine

        self.profile = profile
        self.config = settings.padvc_config()
        self.ocr = settings.ocr_settings(profile)
        self.engine = make_ocr_engine(self.ocr)
        self.frame_cache = FrameOcrCache(frame_cache_dir)
        self.ocr_cache_dir = ocr_cache_dir
        # The toolkit decodes with OpenCV; decord/PyAV are bit-identical on -ql renders (tests/video).
        self.decoder = "opencv" if decoder == "auto" else decoder
        self.device = device

    def masker(self, video_path: str):
        from prism_fast.video.ocr import TextMasker, VideoOcrCacheFile, file_sha256

        video_cache = None
        if self.ocr_cache_dir:
            # Q-PADVC-7: reference keys the per-video cache by the path string (stale after a re-render to
            # the same path, as the toolkit); improved by the video's content.
            key = file_sha256(video_path) if self.profile.fixes("Q-PADVC-7") else str(video_path)
            video_cache = VideoOcrCacheFile(self.ocr_cache_dir, video_path, key, self.ocr.signature())
        return TextMasker(self.engine, self.ocr, self.frame_cache, video_cache)

    def details(self, video_path: str, pvd) -> dict:
        return compute_padvc_details(video_path, pvd, self.masker(video_path), config=self.config,
                                     profile=self.profile, decoder=self.decoder, device=self.device)

    def provenance(self, details: dict | None) -> dict:
        out = {"ocr_backend": self.ocr.backend, "ocr_signature": self.ocr.signature(),
               "ocr_provider": self.engine.provider, "ocr_provider_fallback": self.engine.provider_fallback,
               "device": self.device}
        if details:
            out.update(ocr_requests=details.get("_ocr_requests"), ocr_calls=details.get("_ocr_calls"),
                       decoder=details.get("_decoder"), decoder_fallback=details.get("_decoder_fallback"))
        return out

    def score(self, base: dict, pvd_fields: dict, params: PadvcParams) -> dict:
        class _Pvd:
            pvd_raw = int(pvd_fields["pvd_raw"])

        try:
            details = self.details(base["video_path"], _Pvd)
        except VideoDecodeError as exc:
            if self.profile.fixes("Q-PADVC-3"):
                row = error_row(base, "RuntimeError: video decode failed", profile=self.profile)
            else:  # the toolkit's evaluate_single returns 0.0 and merging it into the row raises (Q-PADVC-3)
                row = error_row(base, "TypeError: 'float' object is not iterable", profile=self.profile)
            row.update(error_kind="video_decode_failed", error_detail=str(exc), **self.provenance(None))
            return row
        except Exception as exc:  # noqa: BLE001 - the toolkit turns any exception into an error row
            row = error_row(base, f"{type(exc).__name__}: {exc}", profile=self.profile)
            row.update(error_kind="exception", error_detail=f"{type(exc).__name__}: {exc}"[:4000],
                       **self.provenance(None))
            return row
        row = finish_ok_row(base, details, params, profile=self.profile)
        row.update(pvd_fields)
        row.update(self.provenance(details))
        return row


# -- the reference fit (§11) ---------------------------------------------------------------------------------------
def padvc_reference_record(task, video_path: str | None, worker: PadvcWorker, pvd_calc, profile: Profile) -> dict:
    """One ``padvc_reference_raw_scores.jsonl`` record (§11)."""
    rec = {"id": task.id, "source_id": task.id, "language": task.language, "video_path": video_path}
    if not video_path or not Path(video_path).exists():
        rec.update(status="error", error="FileNotFoundError: video missing")
        return rec
    try:
        pvd = pvd_calc.compute(task.instruction)
        details = worker.details(video_path, pvd)
    except VideoDecodeError as exc:
        if profile.fixes("Q-PADVC-3"):   # improved: excluded from the fit
            rec.update(status="error", error=f"RuntimeError: video decode failed ({exc})")
        else:                            # reference: evaluate_single returned 0.0, which enters the fit
            rec.update(status="ok", padvc_raw=0.0)
        return rec
    except Exception as exc:  # noqa: BLE001 - recorded per row, as the toolkit's pool does
        rec.update(status="error", error=f"{type(exc).__name__}: {exc}")
        return rec
    rec.update(status="ok", padvc_raw=float(details["padvc_raw"]))
    return rec
