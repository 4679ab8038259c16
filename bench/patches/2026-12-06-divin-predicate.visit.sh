#!/usr/bin/env bash
# v71b (bench/NOTES.md step 71), never run on a GPU. Run on a tree WITHOUT the patch applied (it builds both):
#   OUT=$OUT bash bench/patches/2026-12-06-divin-predicate.visit.sh      (~150 s on a fresh machine)
# Base and new each build into a fresh directory (the device's checkout keeps this machine's older file times,
# so a reused build directory can look up to date; step 71's void calls). Timing: base, new, base, new on
# softmax rows (KILN_REDUCE_DIV unset); then test_cuda_backend's rdiv section (odd dividends: tiny, huge, inf,
# NaN, whose quotients must keep KILN_REDUCE_DIV=0's bits) on the new tree, plain and under memcheck.
# (The rdiv section also counts that its three 100-row cases cache their rows: new in session 57, unrun.)
# Everything goes into $OUT/all.txt.
set -u
cd "$(dirname "$0")/../.."
A=$OUT/all.txt; export KILN_DEVICE=cuda; P=bench/patches/2026-12-06-divin-predicate.patch
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >>"$A"
rm -rf build-vb build-vn
cmake -S . -B build-vb -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a >/dev/null 2>&1 && cmake --build build-vb -j16 --target kiln-gpu-bench >/dev/null 2>&1; echo "base build $?" >>"$A"
git apply "$P" || { echo "patch does not apply" >>"$A"; exit 1; }
cmake -S . -B build-vn -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a -DKILN_WERROR=ON >/dev/null 2>&1 && cmake --build build-vn -j16 --target kiln-gpu-bench test_cuda_backend >/dev/null 2>&1; echo "new build $?" >>"$A"
S=2048x50257,4096x32000,4096x24576,4096x32001,1024x128257,256x50257,65536x1024,8192x8192
for x in b n b n; do mkdir -p build-v$x/kc; echo "== $x" >>"$A"; KILN_CACHE_DIR=build-v$x/kc timeout 60 build-v$x/kiln-gpu-bench --only 'softmax(A,1)' --sizes $S 2>&1 | grep softmax >>"$A"; done
SAN=/usr/local/cuda/bin/compute-sanitizer
( cd build-vn; mkdir -p kt; KILN_CACHE_DIR=kt KILN_CUDA_TEST=rdiv timeout 150 ./test_cuda_backend > rd.log 2>&1; echo "rdiv rc $? $(grep passed rd.log | tail -1)" )  >>"$A"
( cd build-vn; mkdir -p km; KILN_CACHE_DIR=km KILN_CUDA_TEST=rdiv timeout 200 $SAN --tool memcheck --error-exitcode 99 ./test_cuda_backend > rm.log 2>&1; echo "rdiv memcheck rc $? $(grep -E 'passed|SUMMARY' rm.log | tail -2 | tr '\n' ' ')" ) >>"$A"
grep -iE ' FAIL|want ' build-vn/rd.log build-vn/rm.log | head -8 >>"$A"
git apply -R "$P"
