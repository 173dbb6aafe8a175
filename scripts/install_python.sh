#!/usr/bin/env bash
# Installs prism_fast and its Python dependencies into a virtual environment. The one Python install step of
# both set-up paths: `make demo` / `make test` (editable, extras dev,embeddings) and the Dockerfile (the
# cluster node image: a wheel install, extras gpu,embeddings). tests/test_packaging.py keeps them on it.
#
#   bash scripts/install_python.sh VENV EXTRAS [editable|wheel]      (PYTHON picks the interpreter, 3.10-3.12)
set -euo pipefail

VENV=${1:?usage: install_python.sh VENV EXTRAS [editable|wheel]}
EXTRAS=${2:?usage: install_python.sh VENV EXTRAS [editable|wheel]}
MODE=${3:-editable}
PYTHON=${PYTHON:-python3}
cd "$(dirname "$0")/.."

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PY="$VENV/bin/python"
"$PY" -m pip install -q --upgrade pip setuptools wheel
case "$MODE" in
  editable) "$PY" -m pip install -e ".[$EXTRAS]" ;;
  wheel) "$PY" -m pip install ".[$EXTRAS]" ;;
  *) echo "install_python.sh: MODE must be editable or wheel, got '$MODE'" >&2; exit 2 ;;
esac

case ",$EXTRAS," in
  *,gpu,*)
    # onnxruntime-gpu (extra gpu) and onnxruntime (required by rapidocr-onnxruntime) install the same
    # `onnxruntime` module; whichever was written last would win. Keep the GPU build: it has the CPU provider too.
    ORT_GPU=$("$PY" -c "import importlib.metadata as m; print(m.version('onnxruntime-gpu'))")
    "$PY" -m pip uninstall -y onnxruntime
    "$PY" -m pip install --no-deps --force-reinstall "onnxruntime-gpu==$ORT_GPU"
    ;;
esac
"$PY" -c "import prism_fast, prism_kernels; print('prism_fast', prism_fast.__version__, 'installed in $VENV')"
