#!/usr/bin/env bash
# Installs the Debian packages refold needs to build and test. Idempotent and non-interactive:
# does nothing when everything is present.
#   scripts/install-deps.sh           build + test dependencies
#   scripts/install-deps.sh --torch   also Debian's python3-torch, to regenerate test goldens
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config clang-format
          libfmt-dev nlohmann-json3-dev libcli11-dev libdnnl-dev
          libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
          libgtest-dev libgmock-dev libbenchmark-dev
          clang libclang-rt-14-dev libomp-14-dev)  # sanitizer build + libFuzzer (scripts/sanitize.sh)
if [[ "${1:-}" == "--torch" ]]; then
  packages+=(python3-torch python3-numpy)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
