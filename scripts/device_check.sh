#!/usr/bin/env bash
# The GPU checks, as one prepared script for a lent GPU machine (budget: ≤ 15 min of device time in all). Run it
# from the repo root there: `bash scripts/device_check.sh` (logs and a summary under $OUT, or ./device_check_out).
#
# Where prism_fast is installed there (the node image, or `bash scripts/install_python.sh .venv gpu,dev`), it
# uses that. A machine with only torch/OpenCV/pytest (no Manim, no pinned stack) works too, prepared here:
#   .whl/          cp3xx wheels of av==13.1.0 and pynvvideocodec==2.2.4, installed with --no-deps into /tmp/site
#   .devcarry/videos/   renders: the video tests' fixtures (`python -m tests.video.conftest .devcarry/videos`, read
#                       through PRISM_TEST_RENDERS) and a run's renders with their text-box records, plus
#   .devcarry/expected.json   the CPU path's frames, TD and PADVC rows of the latter, recorded with the pinned
#                       stack (`python -m bench.gpu_parity record --videos RUN_VIDEOS --out .devcarry/expected.json`)
#
# Order: 1. correctness — the gpu-marked tests (every kernel device == CPU, the exact YUV kernel and the yuv /
# nvdec decoders == OpenCV's frames, TD through nvdec == OpenCV's); 2. bench/gpu_parity.py check: frames, TD and
# PADVC rows on the GPU (yuv, nvdec) == the CPU rows recorded with the pinned stack; 3. bench/gpu_kernels.py:
# throughput, achieved GB/s of decode + kernels and peak GPU memory. Each step has its own time limit.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
OUT=${OUT:-device_check_out}
T_TESTS=${T_TESTS:-150} T_PARITY=${T_PARITY:-90} T_BENCH=${T_BENCH:-150}
mkdir -p "$OUT"
start=$(date +%s)
export PYTHONUNBUFFERED=1

if ! "$PY" -c "import prism_kernels" 2>/dev/null; then   # not installed: the source tree, kernels/ as prism_kernels
  mkdir -p /tmp/prism_src && ln -sfn "$PWD/kernels" /tmp/prism_src/prism_kernels
  export PYTHONPATH="$PWD:/tmp/prism_src${PYTHONPATH:+:$PYTHONPATH}"
fi
if compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
[ -f .devcarry/videos/DecodeClip.mp4 ] && export PRISM_TEST_RENDERS="$PWD/.devcarry/videos"
export NVIDIA_DRIVER_CAPABILITIES=${NVIDIA_DRIVER_CAPABILITIES:-all}

{
  echo "== device"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3
  "$PY" -c "import sys, torch, cv2, numpy; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available(), 'cv2', cv2.__version__, 'numpy', numpy.__version__)"
  "$PY" -c "from prism_fast.video.decode import nvdec_status; print('nvdec', nvdec_status())"
} 2>&1 | tee "$OUT/device.txt"

deselect=()
"$PY" -c "import decord" 2>/dev/null || deselect=(--deselect tests/video/test_video_decode.py::test_cuda_upload_equals_cpu)
echo "== 1. gpu-marked tests (limit $T_TESTS s) ${deselect[*]}"
timeout "$T_TESTS" "$PY" -m pytest -m gpu --device cuda -q -p no:cacheprovider "${deselect[@]}" \
  tests/kernels/test_kernel_device_parity.py tests/kernels/test_kernel_yuv.py \
  tests/video/test_video_yuv_decode.py tests/video/test_video_decode.py tests/audit/test_audit_polygon.py 2>&1 \
  | tee "$OUT/gpu_tests.log"
tests_rc=${PIPESTATUS[0]}

parity_rc=skipped
if [ -f .devcarry/expected.json ]; then
  echo "== 2. bench/gpu_parity.py check (limit $T_PARITY s)"
  timeout "$T_PARITY" "$PY" -m bench.gpu_parity check --videos .devcarry/videos --expected .devcarry/expected.json \
    --device cuda --decoders yuv,nvdec 2>&1 | tee "$OUT/gpu_parity.log"
  parity_rc=${PIPESTATUS[0]}
fi

echo "== 3. bench/gpu_kernels.py (limit $T_BENCH s)"
timeout "$T_BENCH" "$PY" -m bench.gpu_kernels --device cuda --frames 900 --batches 64,256,900 --repeats 3 2>&1 \
  | tee "$OUT/gpu_bench.log"
bench_rc=${PIPESTATUS[0]}

echo "gpu tests rc=$tests_rc parity rc=$parity_rc bench rc=$bench_rc elapsed $(( $(date +%s) - start )) s" \
  | tee "$OUT/summary.txt"
[ "$tests_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ] && { [ "$parity_rc" = 0 ] || [ "$parity_rc" = skipped ]; }
