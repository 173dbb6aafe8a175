"""``prism-fast doctor``: what this node will get, one line per capability — ok / degraded / missing.

``degraded`` says what happens to the numbers (or only to speed); ``missing`` says what breaks and the fix.
Each check is a pure classification of facts (``check_*``, plain arguments) fed by a probe that takes the
environment or paths it looks at as arguments (``probe_*``), so every line is testable without mocks: e.g.
``probe_tex(path=...)`` with a PATH that holds no ``latex``. Nothing here starts a Ray cluster or downloads
anything; the render check goes through the real sandboxed render path (``execute.render.render_one``).
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

OK, DEGRADED, MISSING = "ok", "degraded", "missing"
GIB = 1 << 30
SHM_MIN_BYTES = 2 * GIB          # Ray's object store lives in /dev/shm; below this it is cramped or moved to /tmp
DISK_MIN_BYTES = 10 * GIB
DISK_CRITICAL_BYTES = 1 * GIB
FONTS = ("DejaVu Sans", "Noto Sans CJK SC")
TEX_BINARIES = ("latex", "dvisvgm")
MANIM_VERSION = "0.19.0"
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


def check_gpu_decoder(nvdec_ok: bool, detail: str, cuda_available: bool) -> Check:
    if nvdec_ok and cuda_available:
        return Check("gpu_decoder", OK, f"NVDEC via {detail}: NV12 planes stay on the GPU (metrics.decoder=auto)")
    why = detail if not nvdec_ok else f"{detail} imports, but no CUDA device"
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


# --- sandbox, Ray, disk, shm -------------------------------------------------------------------------------------

def check_sandbox(level: str, is_root: bool, missing: list[str]) -> Check:
    extra = f" (not available: {', '.join(missing)})" if missing else ""
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


# --- the whole report --------------------------------------------------------------------------------------------

def run_doctor(*, env: dict[str, str] | None = None, runs_root: str = "runs", cluster_address: str | None = None,
               models: dict | None = None, render: bool = True, workdir: str | None = None) -> list[Check]:
    """Every check, in the order a reader wants them. ``env`` (default ``os.environ``) supplies PATH for the
    TeX, font and render checks."""
    from prism_fast import buildinfo
    from prism_fast.execute import sandbox
    from prism_fast.video.decode import nvdec_status
    from prism_fast.video.yuv import host_selftest

    env = dict(os.environ if env is None else env)
    path = env.get("PATH", "")
    models = models or {}
    checks = [check_build(buildinfo.version(), buildinfo.git_commit(env)),
              check_manim(_dist_version("manim")),
              check_tex(probe_tex(path)),
              check_fonts(probe_fonts(path))]
    if render:
        checks.append(check_render(probe_render(env, workdir)))
    torch_facts = probe_torch()
    checks.append(check_torch(torch_facts))
    checks.append(check_gpu_decoder(*nvdec_status(), torch_facts["cuda_available"]))
    parity = host_selftest(workdir)
    checks.append(check_yuv_parity(parity.identical, parity.max_abs_diff, parity.differing_fraction, parity.detail))
    checks.append(check_ort(probe_ort(rapidocr_model())))
    checks.append(check_embeddings(probe_embeddings(models.get("zh"), models.get("en"), models.get("hf_cache"))))
    host = sandbox.host_isolation()
    missing = [n for n, ok in (("network namespace", host.netns), ("capability drop", host.capdrop),
                               ("cgroup pids", host.cgroup_pids_root), ("cgroup memory", host.cgroup_memory_root))
               if not ok]
    checks.append(check_sandbox(host.level, host.is_root, missing))
    checks.append(check_ray(probe_ray(env), cluster_address))
    root = Path(runs_root).resolve()
    existing = next((p for p in (root, *root.parents) if p.exists()), Path("/"))
    checks.append(check_disk(str(existing), shutil.disk_usage(existing).free))
    checks.append(check_shm(shm_size()))
    return checks


def format_report(checks: list[Check]) -> str:
    counts = {s: sum(c.status == s for c in checks) for s in (OK, DEGRADED, MISSING)}
    head = f"prism-fast doctor: {counts[OK]} ok, {counts[DEGRADED]} degraded, {counts[MISSING]} missing"
    return "\n".join([head, *(c.line() for c in checks)])


def doctor_from_config(cfg) -> int:
    """``prism-fast doctor`` (``+doctor.render=false`` skips the two renders; ``+doctor.json=FILE`` also
    writes the checks as JSON). Exit status 1 when anything is missing."""
    opts = cfg.get("doctor") or {}
    padvc = ((cfg.get("metrics") or {}).get("padvc") or {})
    models = dict(padvc.get("models") or {})
    address = (cfg.get("cluster") or {}).get("address")
    checks = run_doctor(runs_root=str(cfg.get("runs_root") or "runs"), cluster_address=address, models=models,
                        render=bool(opts.get("render", True)))
    print(format_report(checks))
    if opts.get("json"):
        Path(str(opts["json"])).write_text(json.dumps([asdict(c) for c in checks], indent=2), encoding="utf-8")
    return 1 if any(c.status == MISSING for c in checks) else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--render-probe":
        raise SystemExit(_render_probe_main(sys.argv[2]))
    raise SystemExit("usage: prism-fast doctor   (this module's own entry is the render probe)")
