#!/usr/bin/env bash
# tools/python-test.sh — builds kiln's Python package against the library CMake built in
# ./build (or $BUILD) and runs its pytest suite. Called by `make test` after the C tests.
#  - ./.venv is created when missing (python3 -m venv); pinned numpy and pytest are installed
#    into it from PyPI only when they are missing, so re-runs are fast.
#  - The extension (python/src/_kiln.c) is compiled with cc against $BUILD/libkiln.so, with
#    an rpath to it, into $BUILD/python/kiln next to a copy of the pure-Python package; a
#    kiln.pth in the venv points there, so `.venv/bin/python -c "import kiln"` works after.
#  - Exits non-zero when anything fails, pytest included (and when it collects no test).
# Environment: BUILD (default build), KILN_VENV (default .venv), PYTHON (default python3),
# KILN_PY_VENV=0 (use $PYTHON as it is: no venv, no installs; for the GPU machine),
# KILN_DEVICE (the tests default to cpu; `make test-gpu` sets cuda), PYTEST_ARGS,
# KILN_PY_STAGE_ONLY=1 (build and stage the package, run no test: for benchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
VENV=${KILN_VENV:-.venv}
PY=${PYTHON:-python3}
NUMPY_PIN=numpy==1.26.4
PYTEST_PIN=pytest==8.3.3

case $BUILD in /*) BUILD_ABS=$BUILD ;; *) BUILD_ABS=$ROOT/$BUILD ;; esac
if [ ! -f "$BUILD_ABS/libkiln.so" ]; then
  echo "python-test: $BUILD/libkiln.so is missing: run cmake --build $BUILD first" >&2
  exit 1
fi
if [ "${KILN_PY_VENV:-1}" = 0 ]; then
  # Use $PY as it is (e.g. on the GPU machine, whose python3 holds numpy, pytest, PyTorch
  # and CuPy and which reaches no package index).
  VPY=$(command -v "$PY")
  "$VPY" -c "import numpy, pytest" || { echo "python-test: $PY lacks numpy or pytest" >&2; exit 1; }
else
  if [ ! -x "$VENV/bin/python" ]; then
    echo "python-test: creating $VENV"
    "$PY" -m venv "$VENV"
  fi
  VPY="$ROOT/$VENV/bin/python"
  if ! "$VPY" -c "import numpy, pytest, sys; sys.exit(numpy.__version__ != '${NUMPY_PIN#*==}' or pytest.__version__ != '${PYTEST_PIN#*==}')" 2>/dev/null; then
    echo "python-test: installing $NUMPY_PIN $PYTEST_PIN into $VENV"
    "$VPY" -m pip install -q --disable-pip-version-check "$NUMPY_PIN" "$PYTEST_PIN"
  fi
fi

STAGE="$BUILD_ABS/python"
rm -rf "$STAGE/kiln"
mkdir -p "$STAGE/kiln"
cp python/kiln/*.py "$STAGE/kiln/"
EXT_SUFFIX=$("$VPY" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
PYINC=$("$VPY" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
${CC:-cc} -shared -fPIC -O2 -std=c11 -Wall -Wextra -Werror -I"$PYINC" -Iinclude python/src/_kiln.c \
  -L"$BUILD_ABS" -lkiln -Wl,-rpath,"$BUILD_ABS" -o "$STAGE/kiln/_kiln$EXT_SUFFIX"
if [ "${KILN_PY_VENV:-1}" != 0 ]; then
  SITE=$("$VPY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  echo "$STAGE" > "$SITE/kiln.pth"
fi

[ "${KILN_PY_STAGE_ONLY:-0}" = 1 ] && exit 0

export KILN_DEVICE=${KILN_DEVICE:-cpu}
cd "$ROOT"
set +e
PYTHONPATH="$STAGE" "$VPY" -m pytest -q -p no:cacheprovider python/tests ${PYTEST_ARGS:-}
rc=$?
set -e
if [ $rc -eq 5 ]; then
  echo "python-test: pytest collected no tests" >&2
  exit 1
fi
exit $rc
