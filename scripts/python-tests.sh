#!/usr/bin/env bash
# The Python package's tests (tests/python, pytest), run against the package as `pip install`
# installs it into a virtual environment — never against the build tree.
#   scripts/python-tests.sh [BUILD_DIR]      (default: build)
# The venv is BUILD_DIR/python-venv, made with --system-site-packages so that Debian's
# python3-torch, python3-numpy and python3-pytest (scripts/install-deps.sh) serve the tests; pip
# adds scikit-build-core and nanobind from PyPI. The package is built in BUILD_DIR itself, with
# scripts/build.sh's flags, so a tree scripts/build.sh already built compiles only the
# extension (a cold `pip install .` builds the whole library: README, "Python").
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
venv="$build/python-venv"
if [[ ! -x "$venv/bin/python" ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check "scikit-build-core>=0.10" \
  "nanobind>=2.0"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
  --no-deps --force-reinstall . --config-settings=build-dir="$build" --config-settings=cmake.define.REFOLD_WERROR=ON \
  --config-settings=cmake.define.REFOLD_BUILD_TESTS=ON --config-settings=cmake.define.REFOLD_BUILD_BENCHMARKS=ON \
  --config-settings=cmake.define.REFOLD_BUILD_EXAMPLES=ON
# From outside the checkout, so that `import refold` can only find the installed package.
cd "$build"
exec "$PWD/python-venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir="$OLDPWD/tests/python" \
  "$OLDPWD/tests/python"
