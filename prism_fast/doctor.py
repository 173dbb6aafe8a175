"""``prism-fast doctor``: what this node will get, one line per capability — ok / degraded / optional / missing.

``degraded`` says what happens to the numbers (or only to speed); ``missing`` says what breaks and the fix;
``optional`` marks a capability that is not there (or not at its best) but that the judged command, with the composed
config, never uses (e.g. the embedding models while ``metrics.padvc.enabled=false``). The judged command is ``eval``
unless named (``prism-fast doctor generate model=openai``: ``+doctor.command=generate``); :class:`Needs` says what
it will use, and :func:`judge` turns every other shortfall into ``optional``. Exit status 1 only for ``missing``.
Each check is a pure classification of facts (``check_*``, plain arguments) fed by a probe that takes the
environment or paths it looks at as arguments (``probe_*``), so every line is testable without mocks: e.g.
``probe_tex(path=...)`` with a PATH that holds no ``latex``. Nothing here starts a Ray cluster or downloads
anything; the render check goes through the real sandboxed render path (``execute.render.render_one``); for
``generate`` the only request is one ``GET <base_url>/models`` (does the endpoint answer, is the key accepted).
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

OK, DEGRADED, MISSING, OPTIONAL = "ok", "degraded", "missing", "optional"
GIB = 1 << 30
SHM_MIN_BYTES = 2 * GIB          # Ray's object store lives in /dev/shm; below this it is cramped or moved to /tmp
DISK_MIN_BYTES = 10 * GIB
DISK_CRITICAL_BYTES = 1 * GIB
FONTS = ("DejaVu Sans", "Noto Sans CJK SC")
TEX_BINARIES = ("latex", "dvisvgm")
MANIM_VERSION = "0.19.0"
# Installed versions that change videos, decoded frames or render errors (docs/design.md "Environment pins that
# change results"); the tested versions are this package's own requirements (setup.py INSTALL_REQUIRES).
PINNED = ("pillow", "av", "opencv-python", "manim")
INSTALL_SYSTEM = "bash scripts/install_system_deps.sh (or the node image)"


@dataclass(frozen=True)
class Check:
    name: str
    status: str                 # ok | degraded | missing
    summary: str
    consequence: str = ""       # degraded: effect on the numbers or speed; missing: what breaks
    fix: str = ""

    def line(self) -> str:
        text = f"{self.status:<9} {self.name:<12} {self.summary}"
        if self.consequence:
            text += f"\n{'':22}→ {self.consequence}"
        if self.fix:
            text += f"\n{'':22}fix: {self.fix}"
        return text


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


# --- build ----------------------------------------------------------------------------------------------------

def check_build(version: str, commit: str | None) -> Check:
    if commit:
        return Check("build", OK, f"prism_fast {version}, commit {commit[:12]}")
    return Check("build", DEGRADED, f"prism_fast {version}, commit unknown",
                 "run.json records git_commit null: results cannot be traced to the code",
                 "build the image with --build-arg PRISM_FAST_GIT_COMMIT=$(git rev-parse HEAD), or set "
                 "PRISM_FAST_GIT_COMMIT")


# --- manim, TeX, fonts, a real render --------------------------------------------------------------------------

def check_manim(version: str | None) -> Check:
    if version is None:
        return Check("manim", MISSING, "manim is not installed", "nothing renders: Exec 0 %",
                     "pip install -e . (manim==0.19.0)")
    if version != MANIM_VERSION:
        return Check("manim", DEGRADED, f"manim {version} (the benchmark pins {MANIM_VERSION})",
                     "renders, errors and geometry may differ from the paper's: numbers not comparable",
                     f"pip install manim=={MANIM_VERSION}")
    return Check("manim", OK, f"manim {version}")


def tested_pins(requires: list[str], names: tuple[str, ...] = PINNED) -> dict[str, str]:
    """name -> version specifier of ``names`` among requirement strings (``metadata.requires``); extras skipped."""
    from packaging.requirements import Requirement

    found = {}
    for text in requires:
        req = Requirement(text)
        if req.marker is None and req.name.lower() in names:
            found[req.name.lower()] = str(req.specifier)
    return found


def probe_pins(names: tuple[str, ...] = PINNED) -> dict:
    """The tested versions (this package's installed requirements) and the installed ones."""
    try:
        tested = tested_pins(metadata.requires("prism_fast") or [], names)
    except metadata.PackageNotFoundError:
        tested = {}
    return {"tested": tested, "installed": {n: _dist_version(n) for n in names}}


def _within(version: str | None, spec: str) -> bool:
    from packaging.specifiers import SpecifierSet

    return version is not None and SpecifierSet(spec).contains(version, prereleases=True)


def check_pins(tested: dict[str, str], installed: dict[str, str | None]) -> Check:
    if not tested:
        return Check("pins", DEGRADED, "tested versions unknown (prism_fast is not installed as a package)",
                     "Pillow/PyAV/OpenCV/manim versions unchecked: numbers may not be comparable", "pip install -e .")
    off = {n: spec for n, spec in tested.items() if not _within(installed.get(n), spec)}
    if off:
        return Check("pins", DEGRADED, "outside the tested versions: " + "; ".join(
                         f"{n} {installed.get(n) or 'not installed'} (tested {spec})" for n, spec in off.items()),
                     "videos, decoded frames or render errors may differ from the tested set-up (docs/design.md "
                     "\"Environment pins that change results\"): numbers not comparable",
                     "pip install " + " ".join(f"'{n}{spec}'" for n, spec in off.items()))
    return Check("pins", OK, ", ".join(f"{n} {installed[n]} ({tested[n]})" for n in tested) + ": the tested versions")


def probe_tex(path: str) -> dict[str, str | None]:
    """Where each TeX tool manim needs resolves on ``path`` (None = not found)."""
    return {name: shutil.which(name, path=path) for name in TEX_BINARIES}


def check_tex(found: dict[str, str | None]) -> Check:
    missing = [name for name, where in found.items() if not where]
    if missing:
        return Check("tex", MISSING, f"not on PATH: {', '.join(missing)}",
                     "every Tex/MathTex scene fails (LaTeX error rows): Exec % and everything after it drop, "
                     "not comparable with the paper",
                     f"{INSTALL_SYSTEM}: TeX Live incl. Chinese, dvisvgm")
    return Check("tex", OK, ", ".join(f"{k}={v}" for k, v in found.items()))


def probe_fonts(path: str, families: tuple[str, ...] = FONTS) -> dict[str, bool] | None:
    """Which font families fontconfig lists (``fc-list`` found on ``path``); None when there is no fc-list."""
    fc_list = shutil.which("fc-list", path=path)
    if fc_list is None:
        return None
    out = subprocess.run([fc_list, ":", "family"], capture_output=True, text=True, timeout=60).stdout
    listed = {part.strip() for line in out.splitlines() for part in line.split(",")}
    return {family: family in listed for family in families}


def check_fonts(found: dict[str, bool] | None) -> Check:
    if found is None:
        return Check("fonts", MISSING, "fc-list not found: fontconfig missing",
                     "Text (Pango) cannot find fonts: text renders fail or fall back", INSTALL_SYSTEM)
    missing = [family for family, ok in found.items() if not ok]
    if missing:
        return Check("fonts", DEGRADED, f"missing: {', '.join(missing)}",
                     "Text falls back to another font: glyph geometry differs, so Spatial, TextExpand and "
                     "PADVC numbers are not comparable (zh text may render as boxes)",
                     f"{INSTALL_SYSTEM}: DejaVu + Noto CJK fonts")
    return Check("fonts", OK, ", ".join(found))


RENDER_PROBES = {
    "mathtex": ("DoctorMathTex", 'from manim import *\n\nclass DoctorMathTex(Scene):\n    def construct(self):\n'
                                 '        self.add(MathTex(r"e^{i\\pi} + 1 = 0"))\n        self.wait(0.1)\n'),
    "cjk_text": ("DoctorCjkText", 'from manim import *\n\nclass DoctorCjkText(Scene):\n    def construct(self):\n'
                                  '        self.add(Text("空间推理", font="Noto Sans CJK SC"))\n'
                                  '        self.wait(0.1)\n'),
}


def _render_probe_main(out_dir: str) -> int:
    """Child side of :func:`probe_render`: render each probe scene with ``render_one`` (sandboxed) and print
    one JSON object per probe."""
    from prism_fast.execute.render import RenderConfig, render_one

    cfg = RenderConfig(timeout_s=180, tmp_root=str(Path(out_dir) / "tmp"))
    result = {}
    for name, (_, script) in RENDER_PROBES.items():
        row = render_one(f"doctor_{name}", script, Path(out_dir) / name, cfg)
        result[name] = {"success": bool(row.get("success")), "sandbox": row.get("sandbox"),
                        "error_kind": row.get("error_kind"),
                        "error": (row.get("error") or row.get("error_detail") or "")[-600:],
                        "wall_s": row.get("wall_s")}
    print(json.dumps(result))
    return 0


def probe_render(env: dict[str, str], workdir: str | Path | None = None, timeout_s: int = 600) -> dict:
    """Render a one-line MathTex and a CJK Text through the real sandboxed render path, in a child process
    running with ``env`` (its PATH decides which TeX the render finds)."""
    with tempfile.TemporaryDirectory(prefix="prism_doctor_", dir=workdir) as tmp:
        proc = subprocess.run([sys.executable, "-m", "prism_fast.doctor", "--render-probe", tmp], env=env,
                              capture_output=True, text=True, timeout=timeout_s)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout)[-600:]
        return {name: {"success": False, "error": f"render probe failed (rc {proc.returncode}): {tail}"}
                for name in RENDER_PROBES}
    return json.loads(lines[-1])


def check_render(result: dict) -> Check:
    failed = {name: r for name, r in result.items() if not r.get("success")}
    if not failed:
        walls = ", ".join(f"{n} {r.get('wall_s', 0):.1f} s" for n, r in result.items())
        sandbox = {r.get("sandbox") for r in result.values()}
        return Check("render", OK, f"MathTex and CJK Text render (sandbox {', '.join(map(str, sandbox))}; {walls})")
    what = []
    if "mathtex" in failed:
        what.append("MathTex/Tex scenes fail (LaTeX): Exec % drops")
    if "cjk_text" in failed:
        what.append("Chinese Text scenes fail: zh Exec % drops")
    detail = "; ".join(f"{n}: {(r.get('error_kind') or '')} {r.get('error', '').strip().splitlines()[-1:]}"
                       for n, r in failed.items())
    return Check("render", MISSING, f"failed: {', '.join(failed)} ({detail})", "; ".join(what),
                 f"{INSTALL_SYSTEM}; then prism-fast doctor again")


# --- torch, GPU decoder, exact YUV path, OCR provider, embeddings ----------------------------------------------

def probe_torch() -> dict:
    import torch

    cuda = torch.cuda.is_available()
    return {"version": torch.__version__, "cuda_build": torch.version.cuda, "cuda_available": cuda,
            "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else []}


def check_torch(facts: dict) -> Check:
    if facts["cuda_available"]:
        return Check("torch", OK, f"torch {facts['version']} (CUDA {facts['cuda_build']}), "
                                  f"{len(facts['devices'])} × {', '.join(sorted(set(facts['devices'])))}")
    return Check("torch", DEGRADED, f"torch {facts['version']} (CUDA build {facts['cuda_build']}): CPU only, no "
                                    "CUDA device",
                 "metric kernels run on the CPU (metrics.device=cpu): identical numbers, slower",
                 "on a GPU node: NVIDIA driver for CUDA 13 (>= 580) and `docker run --gpus all`")


def check_gpu_decoder(nvdec_ok: bool, detail: str, cuda_available: bool, selected: bool = False) -> Check:
    if nvdec_ok and cuda_available:
        return Check("gpu_decoder", OK, f"NVDEC via {detail}: NV12 planes stay on the GPU (metrics.decoder=auto)")
    why = detail if not nvdec_ok else f"{detail} imports, but no CUDA device"
    if selected:  # metrics.decoder=nvdec asks for it by name: no fallback
        return Check("gpu_decoder", MISSING, f"metrics.decoder=nvdec but no GPU decoder ({why})",
                     "TD/PADVC cannot decode a video: their rows are errors",
                     'metrics.decoder=auto, or pip install ".[gpu]" on a GPU node with NVIDIA_DRIVER_CAPABILITIES '
                     "including video")
    return Check("gpu_decoder", DEGRADED, f"no GPU decoder ({why})",
                 "frames decode on the CPU (OpenCV on a CPU device; PyAV planes converted on the GPU otherwise): "
                 "identical numbers, decoding is CPU-bound",
                 'pip install ".[gpu]" (PyNvVideoCodec) with NVIDIA_DRIVER_CAPABILITIES including video')


def check_yuv_parity(identical: bool, max_abs_diff: int, fraction: float, detail: str) -> Check:
    if identical:
        return Check("yuv_parity", OK, f"exact YUV→BGR kernel == this host's OpenCV frames ({detail})")
    return Check("yuv_parity", DEGRADED,
                 f"kernel differs from this host's OpenCV frames: max |Δ| {max_abs_diff} on "
                 f"{fraction:.2%} of values ({detail})",
                 "the yuv/nvdec decoders would not reproduce OpenCV here (OpenCV's FFmpeg is not running "
                 "swscale's x86 SSSE3 path): not for parity numbers",
                 "metrics.decoder=opencv on this host")


def probe_ort(model_path: str | None) -> dict:
    """onnxruntime's build, its compiled providers, and the provider a real session (one of RapidOCR's bundled
    models) actually gets when CUDA is asked for first."""
    facts = {"ort": _dist_version("onnxruntime"), "ort_gpu": _dist_version("onnxruntime-gpu"),
             "available": [], "session": None, "error": None}
    try:
        import onnxruntime as ort
    except Exception as exc:  # noqa: BLE001 - reported as missing
        facts["error"] = f"{type(exc).__name__}: {exc}"
        return facts
    facts["available"] = list(ort.get_available_providers())
    if model_path and "CUDAExecutionProvider" in facts["available"]:
        try:
            if hasattr(ort, "preload_dlls"):
                ort.preload_dlls()
            sess = ort.InferenceSession(model_path, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
            facts["session"] = sess.get_providers()[0]
        except Exception as exc:  # noqa: BLE001 - the provider did not load
            facts["error"] = f"{type(exc).__name__}: {exc}"
    return facts


def rapidocr_model() -> str | None:
    try:
        import rapidocr_onnxruntime
    except Exception:  # noqa: BLE001
        return None
    found = sorted((Path(rapidocr_onnxruntime.__file__).parent / "models").glob("*det*.onnx"))
    return str(found[0]) if found else None


def check_ort(facts: dict) -> Check:
    fix_both = (f"pip uninstall -y onnxruntime && pip install --no-deps --force-reinstall "
                f"onnxruntime-gpu=={facts.get('ort_gpu')} (scripts/install_python.sh does this)")
    if not facts["available"]:
        return Check("ocr_ort", MISSING, f"onnxruntime not importable ({facts.get('error')})",
                     "PADVC's RapidOCR cannot run: PADVC rows are errors", "pip install -e .")
    if facts.get("ort") and facts.get("ort_gpu"):
        return Check("ocr_ort", DEGRADED, f"both onnxruntime {facts['ort']} and onnxruntime-gpu {facts['ort_gpu']} "
                                          "are installed (one module, the last writer wins)",
                     "the CUDA provider may be absent or broken: OCR may run on CPU", fix_both)
    version = facts.get("ort_gpu") or facts.get("ort")
    if "CUDAExecutionProvider" not in facts["available"]:
        return Check("ocr_ort", DEGRADED, f"onnxruntime {version}: CPU providers only "
                                          f"({', '.join(facts['available'])})",
                     "RapidOCR runs on the CPU (rows: ocr_provider=cpu): same settings, slower; GPU OCR may "
                     "differ slightly anyway (spec D-2)", 'pip install ".[gpu]" via scripts/install_python.sh')
    if facts.get("session") != "CUDAExecutionProvider":
        return Check("ocr_ort", DEGRADED, f"onnxruntime-gpu {version}: the CUDA provider is compiled in but did "
                                          f"not load ({facts.get('error') or facts.get('session')})",
                     "OCR falls back to CPU with a warning (rows: ocr_provider=cpu, ocr_provider_fallback)",
                     "CUDA 13 + cuDNN 9 libraries (the [gpu] extra's nvidia wheels) and a CUDA 13 driver")
    return Check("ocr_ort", OK, f"onnxruntime-gpu {version}: CUDAExecutionProvider loads (RapidOCR on GPU)")


def probe_embeddings(zh: str | None, en: str | None, hf_cache: str | None) -> dict:
    from prism_fast.metrics.pvd import EN_MODEL_ID, ZH_MODEL_ID, resolve_model_path

    found = {}
    for lang, model_id, configured, env_var in (("zh", ZH_MODEL_ID, zh, "PADVC_ZH_MODEL"),
                                                ("en", EN_MODEL_ID, en, "PADVC_EN_MODEL")):
        where = resolve_model_path(model_id, configured=configured, env_var=env_var, hf_cache=hf_cache,
                                   hub_fallback=False)
        found[lang] = where if where and Path(where).is_dir() else None
    return {"sentence_transformers": _dist_version("sentence-transformers"), **found}


def check_embeddings(facts: dict) -> Check:
    consequence = ("PADVC (metrics.padvc.enabled=true) stops with an error: no PVD; Exec, Spatial, TD and "
                   "TextExpand are unaffected (embedding_backend=tfidf runs EN forensically, not comparable)")
    if not facts["sentence_transformers"]:
        return Check("embeddings", MISSING, "sentence-transformers not installed", consequence,
                     'pip install ".[embeddings]"')
    missing = [lang for lang in ("zh", "en") if not facts[lang]]
    if missing:
        return Check("embeddings", MISSING, f"sentence-transformers {facts['sentence_transformers']}; no local "
                                            f"model for {', '.join(missing)} (offline only)", consequence,
                     "PADVC_ZH_MODEL / PADVC_EN_MODEL or metrics.padvc.models.zh/.en = local folders, or "
                     "PADVC_HF_CACHE = a hub cache holding them")
    return Check("embeddings", OK, f"zh: {facts['zh']}; en: {facts['en']}")


def probe_paddleocr(model_dir: str | None) -> dict:
    """PaddleOCR's distributions (not imported: seconds) and the local model folder it would load."""
    where = Path(model_dir) if model_dir else None
    return {"paddleocr": _dist_version("paddleocr"), "paddlepaddle": _dist_version("paddlepaddle"),
            "model_dir": model_dir, "det": bool(where and (where / "det").is_dir()),
            "rec": bool(where and (where / "rec").is_dir())}


def check_paddleocr(facts: dict) -> Check:
    consequence = "PADVC with metrics.padvc.ocr_backend=paddleocr stops before any work"
    if not (facts["paddleocr"] and facts["paddlepaddle"]):
        return Check("paddleocr", MISSING, "paddleocr / paddlepaddle not installed", consequence,
                     'pip install -e ".[paddle]"')
    if not (facts["det"] and facts["rec"]):
        return Check("paddleocr", MISSING, f"paddleocr {facts['paddleocr']}; metrics.padvc.ocr.paddle_model_dir="
                                           f"{facts['model_dir']} holds no det/ and rec/ models", consequence,
                     "metrics.padvc.ocr.paddle_model_dir=<folder with det/ and rec/> (never downloaded)")
    return Check("paddleocr", OK, f"paddleocr {facts['paddleocr']}, models in {facts['model_dir']}")


def probe_decord() -> dict:
    try:
        import decord
    except Exception as exc:  # noqa: BLE001 - reported as missing
        return {"version": None, "error": f"{type(exc).__name__}: {exc}"}
    return {"version": getattr(decord, "__version__", "?"), "error": None}


def check_decord(facts: dict) -> Check:
    if facts["version"] is None:
        return Check("decord", MISSING, f"decord does not import ({facts['error']})",
                     "metrics.decoder=decord cannot decode: TD/PADVC rows are errors",
                     "pip install decord==0.6.0, or metrics.decoder=auto")
    return Check("decord", OK, f"decord {facts['version']} (metrics.decoder=decord)")


# --- generate: the endpoint and its key --------------------------------------------------------------------------

def probe_endpoint(base_url: str, api_key: str | None, timeout_s: float = 5.0) -> dict:
    """GET ``<base_url>/models`` (OpenAI-compatible servers list their models there): the HTTP status it answers
    with (any status counts as an answer), or the error when nothing answered. The key goes only into the
    Authorization header; the standard library honours HTTP(S)_PROXY / NO_PROXY."""
    import urllib.error
    import urllib.request

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    request = urllib.request.Request(base_url.rstrip("/") + "/models", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return {"status": response.status, "error": None, "key_sent": bool(api_key)}
    except urllib.error.HTTPError as exc:
        return {"status": exc.code, "error": None, "key_sent": bool(api_key)}
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return {"status": None, "error": f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}",
                "key_sent": bool(api_key)}


def check_api_key(var: str | None, is_set: bool) -> Check:
    if not var:
        return Check("api_key", OK, "model.endpoint.api_key_env null: requests carry no Authorization header")
    if not is_set:
        return Check("api_key", MISSING, f"{var} is not set (model.endpoint.api_key_env)",
                     "the endpoint refuses every request: generate FAILED", f"export {var}=... (read from it only)")
    return Check("api_key", OK, f"{var} is set (the value is never printed or written)")


def check_endpoint(base_url: str | None, model_id: str | None, answer: dict | None) -> Check:
    unset = [k for k, v in (("base_url", base_url), ("model_id", model_id)) if not v]
    if unset:
        return Check("endpoint", MISSING, f"model.endpoint.{'/'.join(unset)} not set", "generate cannot send a request",
                     " ".join(f"model.endpoint.{k}=..." for k in unset))
    status = (answer or {}).get("status")
    if status is None:
        return Check("endpoint", MISSING, f"{base_url} did not answer ({(answer or {}).get('error')})",
                     "every request fails: generate FAILED (exit 1)",
                     "start the server, or fix model.endpoint.base_url (and HTTP(S)_PROXY / NO_PROXY)")
    if status in (401, 403) and answer.get("key_sent"):
        return Check("endpoint", MISSING, f"{base_url} refused the key (HTTP {status} on GET /models)",
                     "every request is refused: generate FAILED", "check the key in model.endpoint.api_key_env")
    return Check("endpoint", OK, f"{base_url} answers (HTTP {status} on GET /models); model {model_id}")


# --- sandbox, Ray, disk, shm -------------------------------------------------------------------------------------

def check_sandbox(level: str, is_root: bool, missing: list[str], requested: str = "auto") -> Check:
    extra = f" (not available: {', '.join(missing)})" if missing else ""
    if requested == "unsafe":  # the config opted out: said, not failed
        return Check("sandbox", DEGRADED, f"execute.sandbox=unsafe: scripts run uncontained (this host: level {level})"
                                          f"{extra}", "an untrusted script can read and change what this user can; "
                                                      "rows record sandbox=unsafe",
                     "execute.sandbox=auto on a host with root namespaces or bubblewrap (docs/security.md)")
    if level == "namespaces":
        return Check("sandbox", OK, f"level namespaces: root with mount + PID namespaces{extra}")
    if level == "bwrap":
        return Check("sandbox", OK, f"level bwrap: bubblewrap with user namespaces{extra}")
    return Check("sandbox", MISSING, f"level none ({'root' if is_root else 'not root'}, no working bubblewrap)"
                                     f"{extra}",
                 "every render and audit is refused (Exec 0 %) unless execute.sandbox=unsafe, which runs "
                 "untrusted scripts uncontained",
                 "docker run --cap-add SYS_ADMIN (root with mount+PID namespaces) or --privileged, or bubblewrap "
                 "with unprivileged user namespaces (docs/security.md)")


def probe_ray(env: dict[str, str], ray_tmp: str | Path = "/tmp/ray") -> dict:
    """Ray's version and the cluster an ``address: auto`` would join (RAY_ADDRESS, else the address file
    ``ray start`` leaves in ``ray_tmp``). Starts nothing."""
    address_file = Path(ray_tmp) / "ray_current_cluster"
    running = address_file.read_text().strip() if address_file.is_file() else None
    return {"version": _dist_version("ray"), "env_address": env.get("RAY_ADDRESS"), "running": running}


def check_ray(facts: dict, configured: str | None) -> Check:
    if not facts["version"]:
        return Check("ray", MISSING, "ray is not installed", "eval cannot run its stages", "pip install -e .")
    if not configured:
        return Check("ray", OK, f"ray {facts['version']}: embedded local Ray (cluster=local), this node's cores")
    target = configured
    if configured == "auto":
        target = facts["env_address"] or facts["running"]
        if not target:
            return Check("ray", MISSING, f"ray {facts['version']}: cluster=ray (address auto) but no cluster "
                                         "found (no RAY_ADDRESS, no `ray start` on this node)",
                         "eval stops when it connects", "ray start --head (or --address=<head>:6379) first, or "
                                                        "cluster=local")
    return Check("ray", OK, f"ray {facts['version']}: would join {target} (not contacted)")


def check_disk(path: str, free_bytes: int) -> Check:
    free = f"{free_bytes / GIB:.1f} GiB free under {path}"
    if free_bytes < DISK_CRITICAL_BYTES:
        return Check("disk", MISSING, free, "videos, caches and rows cannot be written: the run fails",
                     "free space or point runs_root elsewhere")
    if free_bytes < DISK_MIN_BYTES:
        return Check("disk", DEGRADED, free, "a full benchmark run (videos, render cache) may run out of space "
                                             "mid-run", "runs_root on a larger volume")
    return Check("disk", OK, free)


def check_shm(total_bytes: int | None) -> Check:
    if total_bytes is None:
        return Check("shm", DEGRADED, "/dev/shm not found", "Ray puts its object store in /tmp: slower",
                     "docker run --shm-size=8g")
    size = f"/dev/shm {total_bytes / GIB:.1f} GiB"
    if total_bytes < SHM_MIN_BYTES:
        return Check("shm", DEGRADED, size, "Ray's object store is cramped or moved to /tmp (Docker's default "
                                            "is 64 MB): slower, large batches may spill", "docker run --shm-size=8g")
    return Check("shm", OK, size)


def shm_size(path: str = "/dev/shm") -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_blocks * st.f_frsize


# --- what the judged command uses ---------------------------------------------------------------------------------

# check name -> the capability it is about; a capability the judged command does not use is `optional` there
CAPABILITY = {"tex": "render", "fonts": "render", "render": "render", "sandbox": "render", "ray": "ray",
              "embeddings": "embeddings", "ocr_ort": "rapidocr", "paddleocr": "paddleocr"}
USED_BY = {"render": "commands that run scripts: eval, profile-render, inspect, generate.rounds>1",
           "ray": "eval (its stages run in Ray)",
           "embeddings": "PADVC: metrics.padvc.enabled=true, fit-reference",
           "rapidocr": "PADVC with metrics.padvc.ocr_backend=rapidocr or scene",
           "paddleocr": "PADVC with metrics.padvc.ocr_backend=paddleocr"}
JUDGED = ("eval", "generate", "fit-reference", "profile-render", "report", "calibrate", "inspect")


@dataclass
class Needs:
    """What the judged command will use with the composed config: ``uses`` maps a capability (:data:`USED_BY`)
    to the setting that makes it used; the rest are the settings the checks compare against."""
    command: str = "eval"
    uses: dict[str, str] = field(default_factory=lambda: {"render": "eval", "ray": "eval"})
    sandbox: str = "auto"
    decoder: str = "auto"
    cluster_address: str | None = None
    models: dict = field(default_factory=dict)          # metrics.padvc.models
    paddle_model_dir: str | None = None
    endpoint: dict | None = None                         # generate: base_url, model_id, api_key_env


def _sel(cfg, key: str, default=None):
    from omegaconf import OmegaConf

    value = OmegaConf.select(cfg, key, default=default, throw_on_missing=False)
    return default if value is None else value


def _padvc_uses(cfg, command: str) -> dict[str, str]:
    """The PADVC capabilities (embedding models, the OCR engine) ``command`` loads with this config."""
    if command == "eval" and _sel(cfg, "metrics.padvc.enabled", False):
        why = "metrics.padvc.enabled=true"
    elif command == "fit-reference" and _sel(cfg, "fit_reference.padvc", True):
        why = "fit-reference (fit_reference.padvc=true)"
    else:
        return {}
    backend = _sel(cfg, "metrics.padvc.ocr_backend", "rapidocr")  # scene falls back to RapidOCR
    return {"embeddings": why, ("paddleocr" if backend == "paddleocr" else "rapidocr"): f"{why}, ocr_backend={backend}"}


def needs_from_config(cfg) -> Needs:
    """What ``doctor.command`` (default ``eval``) will use with ``cfg``."""
    from omegaconf import OmegaConf

    from prism_fast.pipeline.preflight import runs_scripts

    command = str(_sel(cfg, "doctor.command", "eval"))
    if command not in JUDGED:
        raise SystemExit(f"doctor.command={command}: doctor judges one of {', '.join(JUDGED)}")
    uses = {"render": command} if runs_scripts(cfg, command) else {}
    uses.update({"ray": command} if command == "eval" else {}, **_padvc_uses(cfg, command))
    endpoint = None
    if command == "generate":
        ep = _sel(cfg, "model.endpoint")
        ep = OmegaConf.to_container(ep, resolve=True, throw_on_missing=False) if ep is not None else {}
        endpoint = {k: (None if ep.get(k) in (None, "???") else ep[k]) for k in ("base_url", "model_id", "api_key_env")}
    decodes = command == "fit-reference" or (command == "eval" and (_sel(cfg, "metrics.td.enabled", True)
                                                                    or "embeddings" in uses))
    return Needs(command, uses, sandbox=str(_sel(cfg, "execute.sandbox", "auto")),
                 decoder=str(_sel(cfg, "metrics.decoder", "auto")) if decodes else "auto",
                 cluster_address=_sel(cfg, "cluster.address"), models=dict(_sel(cfg, "metrics.padvc.models", {})),
                 paddle_model_dir=_sel(cfg, "metrics.padvc.ocr.paddle_model_dir"), endpoint=endpoint)


def judge(checks: list[Check], needs: Needs) -> list[Check]:
    """A shortfall of a capability ``needs`` does not use becomes ``optional`` (never fails the doctor)."""
    out = []
    for c in checks:
        cap = CAPABILITY.get(c.name)
        if cap and cap not in needs.uses and c.status != OK:
            c = replace(c, status=OPTIONAL, consequence=f"not used by `{needs.command}` with these settings (used by "
                                                         f"{USED_BY[cap]}); there: {c.consequence}")
        out.append(c)
    return out


# --- the whole report --------------------------------------------------------------------------------------------

def _sandbox_facts() -> tuple[str, bool, list[str]]:
    from prism_fast.execute import sandbox

    host = sandbox.host_isolation()
    missing = [n for n, ok in (("network namespace", host.netns), ("capability drop", host.capdrop),
                               ("cgroup pids", host.cgroup_pids_root), ("cgroup memory", host.cgroup_memory_root))
               if not ok]
    return host.level, host.is_root, missing


def _endpoint_facts(endpoint: dict) -> dict:
    from prism_fast.secret_env import get_secret

    var = endpoint.get("api_key_env")
    key = get_secret(var) if var else None  # (the entry point moved secrets out of os.environ)
    answer = probe_endpoint(endpoint["base_url"], key) if endpoint.get("base_url") else None
    return {**endpoint, "key_set": bool(key), "answer": answer}


def gather_facts(needs: Needs, *, env: dict[str, str], runs_root: str = "runs", render: bool = True,
                 workdir: str | None = None) -> dict:
    """Every probe's result (what :func:`checks_from_facts` judges); ``env`` supplies PATH."""
    from prism_fast import buildinfo
    from prism_fast.video.decode import nvdec_status
    from prism_fast.video.yuv import host_selftest

    path = env.get("PATH", "")
    parity = host_selftest(workdir)
    root = Path(runs_root).resolve()
    existing = next((p for p in (root, *root.parents) if p.exists()), Path("/"))
    models = needs.models
    return {
        "build": (buildinfo.version(), buildinfo.git_commit(env)), "manim": _dist_version("manim"),
        "pins": probe_pins(), "tex": probe_tex(path), "fonts": probe_fonts(path),
        "render": probe_render(env, workdir) if render else None, "torch": probe_torch(), "nvdec": nvdec_status(),
        "yuv": (parity.identical, parity.max_abs_diff, parity.differing_fraction, parity.detail),
        "ort": probe_ort(rapidocr_model()),
        "embeddings": probe_embeddings(models.get("zh"), models.get("en"), models.get("hf_cache")),
        "paddleocr": probe_paddleocr(needs.paddle_model_dir),
        "decord": probe_decord() if needs.decoder == "decord" else None,
        "sandbox": _sandbox_facts(), "ray": probe_ray(env),
        "disk": (str(existing), shutil.disk_usage(existing).free), "shm": shm_size(),
        "endpoint": _endpoint_facts(needs.endpoint) if needs.endpoint is not None else None,
    }


def checks_from_facts(facts: dict, needs: Needs) -> list[Check]:
    """Every line, judged against what ``needs`` uses (pure: the facts are plain data)."""
    checks = [check_build(*facts["build"]), check_manim(facts["manim"]), check_pins(**facts["pins"]),
              check_tex(facts["tex"]), check_fonts(facts["fonts"])]
    checks += [check_render(facts["render"])] if facts.get("render") is not None else []
    checks += [check_torch(facts["torch"]),
               check_gpu_decoder(*facts["nvdec"], facts["torch"]["cuda_available"], needs.decoder == "nvdec"),
               check_yuv_parity(*facts["yuv"]), check_ort(facts["ort"]), check_embeddings(facts["embeddings"]),
               check_paddleocr(facts["paddleocr"])]
    checks += [check_decord(facts["decord"])] if facts.get("decord") is not None else []
    checks += [check_sandbox(*facts["sandbox"], requested=needs.sandbox), check_ray(facts["ray"], needs.cluster_address),
               check_disk(*facts["disk"]), check_shm(facts["shm"])]
    ep = facts.get("endpoint")
    if ep is not None:
        checks += [check_api_key(ep.get("api_key_env"), ep["key_set"]),
                   check_endpoint(ep.get("base_url"), ep.get("model_id"), ep.get("answer"))]
    return judge(checks, needs)


def run_doctor(*, env: dict[str, str] | None = None, runs_root: str = "runs", needs: Needs | None = None,
               render: bool = True, workdir: str | None = None) -> list[Check]:
    """Every check, in the order a reader wants them, judged for ``needs`` (default: ``eval`` with the default
    config). ``env`` (default ``os.environ``) supplies PATH for the TeX, font and render checks."""
    needs = needs or Needs()
    env = dict(os.environ if env is None else env)
    return checks_from_facts(gather_facts(needs, env=env, runs_root=runs_root, render=render, workdir=workdir), needs)


def exit_status(checks: list[Check]) -> int:
    return 1 if any(c.status == MISSING for c in checks) else 0


def format_report(checks: list[Check], command: str = "eval") -> str:
    counts = {s: sum(c.status == s for c in checks) for s in (OK, DEGRADED, OPTIONAL, MISSING)}
    head = (f"prism-fast doctor (for `{command}` with this config): "  # (a status no line has is not named)
            + ", ".join(f"{n} {s}" for s, n in counts.items() if n or s == OK))
    return "\n".join([head, *(c.line() for c in checks)])


def doctor_from_config(cfg) -> int:
    """``prism-fast doctor [COMMAND]`` (``+doctor.render=false`` skips the two renders; ``+doctor.json=FILE`` also
    writes the checks as JSON). Exit status 1 when something the judged command uses is missing."""
    opts = cfg.get("doctor") or {}
    needs = needs_from_config(cfg)
    checks = run_doctor(runs_root=str(cfg.get("runs_root") or "runs"), needs=needs,
                        render=bool(opts.get("render", True)) and "render" in needs.uses)
    print(format_report(checks, needs.command))
    if opts.get("json"):
        Path(str(opts["json"])).write_text(json.dumps([asdict(c) for c in checks], indent=2), encoding="utf-8")
    return exit_status(checks)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--render-probe":
        raise SystemExit(_render_probe_main(sys.argv[2]))
    raise SystemExit("usage: prism-fast doctor   (this module's own entry is the render probe)")
