#!/usr/bin/env bash
# Installs the Debian packages refold needs. Idempotent and non-interactive: does nothing when
# everything is present; uses sudo when not root.
#   scripts/install-deps.sh [build|test|torch] [--list]
#     build   the library and the `refold` CLI (scripts/demo.sh)
#     test    build + what scripts/test.sh needs (default), Python package and torch included
#     torch   test + python3-onnx, to regenerate the test goldens (tests/data/)
#     --list  print the group's packages, one a line, and install nothing
# Packages are installed without their Recommends, so every package the build uses is named here,
# also the ones another package's CMake config pulls in (scripts/check-deps.py checks that).
set -euo pipefail

group=test
list_only=0
for arg in "$@"; do
  case "$arg" in
    build | test | torch) group=$arg ;;
    --list) list_only=1 ;;
    *) echo "install-deps: unknown argument '$arg' (build, test, torch, --list)" >&2; exit 2 ;;
  esac
done

# The library and the CLI. ocl-icd-opencl-dev: Debian's oneDNN is built with its OpenCL GPU
# runtime, so its CMake config (dnnl-config.cmake) runs find_package(OpenCL); libdnnl-dev only
# recommends it.
packages=(build-essential cmake ninja-build
          libfmt-dev nlohmann-json3-dev libcli11-dev libdnnl-dev ocl-icd-opencl-dev
          libonnx-dev libprotobuf-dev protobuf-compiler)
if [[ "$group" != build ]]; then
  packages+=(libgtest-dev libgmock-dev libbenchmark-dev  # tests, benchmarks
             libonnx-testdata                            # ONNX backend conformance tests
             clang-format                                # scripts/check-format.sh
             clang libclang-rt-14-dev libomp-14-dev      # ASan/UBSan build, libFuzzer
             python3 strace                              # scripts/check-deps.py
             python3-dev python3-venv python3-numpy      # the Python package (pip install .)
             python3-pytest python3-torch)               # its tests (scripts/python-tests.sh)
fi
if [[ "$group" == torch ]]; then
  packages+=(python3-onnx)
fi

if ((list_only)); then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages of '$group' present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
