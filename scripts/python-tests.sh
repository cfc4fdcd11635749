#!/usr/bin/env bash
# The Python package's tests (tests/python, pytest), run against the package as pip installs it
# into a virtual environment — never against the build tree.
#   scripts/python-tests.sh [BUILD_DIR]      (default: build)
#   1. `pip wheel .` in BUILD_DIR/python-venv, a venv made with --system-site-packages so that
#      Debian's python3-torch, python3-numpy and python3-pytest (scripts/install-deps.sh) serve
#      the tests; pip adds scikit-build-core and nanobind from PyPI. The wheel is built in
#      BUILD_DIR itself with scripts/build.sh's flags, so a tree scripts/build.sh already built
#      compiles only the extension (a cold `pip install .` builds the whole library).
#   2. that wheel installed there, and every test but Ray's.
#   3. unless REFOLD_TEST_RAY=0: Ray's test (examples/ray_batch_inference.py) in a venv of its own,
#      BUILD_DIR/ray-venv, with ray[data] from PyPI — it needs NumPy 2, which Debian's torch 1.13
#      cannot load, so it does not share the first venv.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(realpath "${1:-build}")
pip_quiet=(-q --disable-pip-version-check)

venv="$build/python-venv"
[[ -x "$venv/bin/python" ]] || /usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install "${pip_quiet[@]}" "scikit-build-core>=0.10" "nanobind>=2.0"
rm -rf "$build/python-dist"
"$venv/bin/python" -m pip wheel "${pip_quiet[@]}" --no-build-isolation --no-deps . \
  -w "$build/python-dist" --config-settings=build-dir="$build" \
  --config-settings=cmake.define.REFOLD_WERROR=ON \
  --config-settings=cmake.define.REFOLD_BUILD_TESTS=ON \
  --config-settings=cmake.define.REFOLD_BUILD_BENCHMARKS=ON \
  --config-settings=cmake.define.REFOLD_BUILD_EXAMPLES=ON
wheel=$(ls "$build"/python-dist/refold-*.whl)
"$venv/bin/python" -m pip install "${pip_quiet[@]}" --no-deps --force-reinstall "$wheel"

# From outside the checkout, so that `import refold` can only find the installed package.
cd "$build"
pytest=(-q -p no:cacheprovider --rootdir="$root/tests/python")
"$venv/bin/python" -m pytest "${pytest[@]}" "$root/tests/python" \
  --ignore="$root/tests/python/test_ray_batch_inference.py"

if [[ "${REFOLD_TEST_RAY:-1}" != 0 ]]; then
  ray_venv="$build/ray-venv"
  [[ -x "$ray_venv/bin/python" ]] || /usr/bin/python3 -m venv "$ray_venv"
  "$ray_venv/bin/python" -m pip install "${pip_quiet[@]}" "ray[data]" pytest numpy
  "$ray_venv/bin/python" -m pip install "${pip_quiet[@]}" --no-deps --force-reinstall "$wheel"
  "$ray_venv/bin/python" -m pytest "${pytest[@]}" -W ignore::DeprecationWarning \
    "$root/tests/python/test_ray_batch_inference.py"
fi
