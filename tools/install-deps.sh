#!/usr/bin/env bash
# Installs what `make test` needs and is missing: cmake, a C compiler, a C++ compiler (the GPU
# kernels' host emulator compiles their generated sources), and OpenBLAS's
# CBLAS headers (optional: without them kiln builds its own blocked GEMM). Debian packages
# through apt-get, only when run as root; otherwise it says what is missing and goes on.
set -u
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v c++ >/dev/null 2>&1 || need+=(g++) # tests/test_gemm_emu.c compiles the GEMM kernels' sources
command -v make >/dev/null 2>&1 || need+=(make)
have_openblas=0
for f in /usr/lib/libopenblas.so /usr/lib/*/libopenblas.so /usr/lib64/libopenblas.so; do
  [ -e "$f" ] && have_openblas=1
done
[ $have_openblas = 1 ] || need+=(libopenblas-dev)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "kiln: installing ${need[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }; then
    echo "kiln: apt-get could not install ${need[*]}; going on without (GEMM falls back to the built-in kernel)"
  fi
else
  echo "kiln: missing ${need[*]} and not root: going on without (GEMM falls back to the built-in kernel)"
fi
exit 0
