"""PADVC stage of ``prism-fast eval`` (spec padvc.md §2, §10): gate on the audit and the render, PVD once per
prompt in the driver, video + OCR in a pool of Ray actors, rows into the store.

Enabled by ``metrics.padvc.enabled``. Settings (``metrics.padvc``): p, event_threshold, text_dilate, text_stride,
ocr_backend, ``ocr`` (provider, paddle_model_dir, RapidOCR thresholds), embedding_backend, ``models`` (zh, en,
hf_cache), ``ocr_cache_dir`` (default ``<run_dir>/ocr_cache``, the toolkit's shared per-run cache) and
``frame_cache_dir`` (default ``<runs_root>/.cache/ocr_frames``, content-keyed, shared across runs).
"""

from __future__ import annotations

import logging
from pathlib import Path

import ray

from prism_fast.config_schema import PadvcSchema
from prism_fast.metrics.padvc import PadvcParams
from prism_fast.pipeline.actors import RESTARTS
from prism_fast.profile import Profile

log = logging.getLogger("prism_fast")


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


class PadvcWorker:
    """Loads the OCR engine once; scores one gated row at a time (used inside ``PadvcActor`` and by fits)."""

    def __init__(self, settings: PadvcSchema, profile: Profile, ocr_cache_dir: str | None, frame_cache_dir: str | None,
                 decoder: str = "opencv", device: str = "cpu"):
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
        from prism_fast.metrics.padvc import compute_padvc_details

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
        from prism_fast.metrics.padvc import VideoDecodeError, error_row, finish_ok_row

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


@ray.remote(num_cpus=1, **RESTARTS)
class PadvcActor:
    def __init__(self, settings: PadvcSchema, profile: Profile, params_by_lang: dict, ocr_cache_dir: str | None,
                 frame_cache_dir: str | None, decoder: str, device: str):
        self.worker = PadvcWorker(settings, profile, ocr_cache_dir, frame_cache_dir, decoder, device)
        self.params_by_lang = params_by_lang

    def padvc(self, sample_id: str, lang: str, base: dict, pvd_fields: dict) -> dict:
        return self.worker.score(base, pvd_fields, self.params_by_lang[lang])


def padvc_lost_row(job, exc) -> dict:
    return {"padvc_status": "worker_lost", **job.args[1], "error": f"{type(exc).__name__}: {exc}"[:4000]}


def run_padvc_stage(opts, store, tasks, inputs, progress, fps=None) -> None:
    """Gate every task (§2.3), compute PVD once per distinct prompt, score the rest on ``PadvcActor``s."""
    from prism_fast.metrics.padvc import base_fields, error_row, gate_error
    from prism_fast.metrics.pvd import PvdCalculator
    from prism_fast.pipeline.stages import Job, pending_jobs, run_actor_stage
    from prism_fast.schema import normalize_status

    s, params = opts.padvc, opts.padvc_params
    profile = opts.profile
    by_id = {t.id: t for t in tasks}
    exec_rows = {(r["lang"], r["id"]): r for r in store.read("exec").to_pylist() if r["model"] == opts.model_name}
    audit_rows = {(r["lang"], r["id"]): r for r in store.read("audit").to_pylist() if r["model"] == opts.model_name}
    jobs = pending_jobs(store, "padvc", opts.model_name, (Job(i.language, i.id, ()) for i in inputs),
                        opts.retry_failed, fps.expected("padvc") if fps is not None else None)
    immediate, work = [], []
    pvd_calc = None
    for job in jobs:
        task = by_id[job.id]
        ex, au = exec_rows.get((job.lang, job.id), {}), audit_rows.get((job.lang, job.id), {})
        # instruction_text = the full instruction sent to the model (§2.4); our manifests always carry it, so
        # Q-PADVC-5 (markdown-mode manifests without it) cannot arise here.
        task_view = {"id": task.id, "source_id": task.id, "instruction_text": task.instruction}
        base = base_fields(task_view, au, ex)
        message = gate_error(task_view, au, ex)
        if message is not None:
            row = error_row(base, f"RuntimeError: {message}", profile=profile)
            row.update(lang=job.lang, error_kind="gate", error_detail=message)
            immediate.append(normalize_status(row, "padvc_status"))
            continue
        if pvd_calc is None:
            pvd_calc = PvdCalculator(s.pvd_config(opts.metrics_device), profile=profile)
            pvd_preflight(pvd_calc, sorted({i.language for i in inputs}))
        try:
            pvd = pvd_calc.compute(task.instruction)   # cached by prompt hash: once per prompt
        except Exception as exc:  # noqa: BLE001 - the models loaded (preflight): this prompt's own error row
            row = error_row(base, f"{type(exc).__name__}: {exc}", profile=profile)
            row.update(lang=job.lang, error_kind="pvd_failed", error_detail=f"{type(exc).__name__}: {exc}"[:4000])
            immediate.append(normalize_status(row, "padvc_status"))
            continue
        work.append(Job(job.lang, job.id, (job.lang, base, pvd.fields())))
    run_dir = Path(opts.run_dir)
    ocr_cache_dir = str(Path(s.ocr_cache_dir or (run_dir / "ocr_cache")).absolute())
    frames_dir = s.frame_cache(opts.runs_root)
    gpus = ray.cluster_resources().get("GPU", 0)
    n = int(s.workers or ray.cluster_resources().get("CPU", 1))
    use_gpu = opts.metrics_device.startswith("cuda") and gpus > 0
    actor_opts = {"num_gpus": min(1.0, gpus / max(n, 1))} if use_gpu else {}

    def make():
        return PadvcActor.options(**actor_opts).remote(s, profile, params, ocr_cache_dir, frames_dir,
                                                       opts.decoder, opts.metrics_device)

    run_actor_stage("padvc", store, opts.model_name, profile.name, work, make, "padvc", n, progress,
                    immediate_rows=immediate,
                    lost_row=padvc_lost_row,
                    transform=lambda row: normalize_status(row, "padvc_status"),
                    tag=(lambda lang, sid: fps.tag("padvc", lang, sid)) if fps is not None else None)
