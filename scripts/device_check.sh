#!/usr/bin/env bash
# The GPU checks, as one prepared script for the day a device is lent (budget: ≤ 15 min of device time in all;
# this script stops itself after DEVICE_CHECK_LIMIT_S, default 540 s). Run it on the GPU machine from the repo
# root, with prism_fast installed (the node image, or `bash scripts/install_python.sh .venv gpu,dev`):
#
#   bash scripts/device_check.sh            # logs and a summary under $OUT (or ./device_check_out)
#
# Order: 1. correctness — the gpu-marked tests: every kernel device == CPU, the exact YUV kernel and the yuv /
# nvdec decoders == OpenCV's frames, TD through nvdec == OpenCV's; 2. bench/gpu_kernels.py: device == CPU ==
# oracle again, then throughput, achieved GB/s of decode + kernels and peak GPU memory. A mismatch stops it.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
OUT=${OUT:-device_check_out}
LIMIT=${DEVICE_CHECK_LIMIT_S:-540}
mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - start) )); }
export PYTHONUNBUFFERED=1

{
  echo "== device"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
  "$PY" -m prism_fast.buildinfo
} 2>&1 | tee "$OUT/device.txt"

echo "== 1. gpu-marked tests (limit $(( $(left) * 2 / 3 )) s)"
timeout "$(( $(left) * 2 / 3 ))" "$PY" -m pytest -m gpu --device cuda -q -p no:cacheprovider \
  tests/kernels/test_kernel_device_parity.py tests/kernels/test_kernel_yuv.py \
  tests/video/test_video_yuv_decode.py tests/video/test_video_decode.py 2>&1 | tee "$OUT/gpu_tests.log"
tests_rc=${PIPESTATUS[0]}

echo "== 2. bench/gpu_kernels.py (limit $(left) s)"
timeout "$(left)" "$PY" -m bench.gpu_kernels --device cuda --frames 900 --batches 64,256,900 --repeats 3 2>&1 \
  | tee "$OUT/gpu_bench.log"
bench_rc=${PIPESTATUS[0]}

echo "gpu tests rc=$tests_rc bench rc=$bench_rc elapsed $(( $(date +%s) - start )) s" | tee "$OUT/summary.txt"
[ "$tests_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
