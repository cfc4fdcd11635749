#!/usr/bin/env bash
# Sets up the model zoo's Python environment OUTSIDE the repository (PyPI's torch pulls ~3 GB of
# CUDA libraries: fine here, never in CI). Usage: bench/zoo/setup.sh [VENV_DIR]
# Default VENV_DIR: $REFOLD_ZOO_VENV, else ~/.cache/refold-zoo/venv. Prints the venv's python.
set -euo pipefail
venv="${1:-${REFOLD_ZOO_VENV:-$HOME/.cache/refold-zoo/venv}}"
if [[ ! -x "$venv/bin/python" ]]; then
  if ! /usr/bin/python3 -m venv --help >/dev/null 2>&1 || ! /usr/bin/python3 -c 'import ensurepip' 2>/dev/null; then
    apt-get install -y --no-install-recommends python3-venv >&2
  fi
  /usr/bin/python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip >&2
"$venv/bin/python" -m pip install --quiet torch torchvision timm ultralytics onnx onnxscript \
  onnxruntime openvino ncnn pnnx numpy >&2
echo "$venv/bin/python"
