#!/usr/bin/env bash
# session 55 call 4 (never ran; run after `git apply bench/patches/2026-12-06-rowcache-kmax.patch`): KILN_ROWV a (as landed), b (row_fill's kept-value kmax undone under the cache), c (b at 32 registers)
set -u
cd "$(dirname "$0")/../.."
A=$OUT/all.txt; B=$PWD/build-gpu
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 )) s] $*" >>"$A"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; git log --oneline -1; git diff --stat; } >>"$A" 2>&1
cmake -S . -B "$B" -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a -DKILN_WERROR=ON >"$OUT/build.log" 2>&1 &&
  cmake --build "$B" -j16 --target test_cuda_backend kiln-gpu-bench >>"$OUT/build.log" 2>&1
rc=$?; ts "build rc $rc"; tail -2 "$OUT/build.log" >>"$A"
[ $rc -eq 0 ] || exit 1
export KILN_DEVICE=cuda
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
run() { # name rowv sections cmd-prefix...
  local n=$1 v=$2 sec=$3; shift 3
  ( cd "$B"; s=$(date +%s); mkdir -p "$B/kc-$n"; KILN_ROWV=$v KILN_CACHE_DIR="$B/kc-$n" KILN_CUDA_TEST="$sec" timeout 90 "$@" "$B/test_cuda_backend" >"$OUT/$n.log" 2>&1
    echo "== $n (ROWV=$v $sec): rc $? in $(( $(date +%s) - s )) s: $(grep -E 'passed|ERROR SUMMARY' "$OUT/$n.log" | tail -2 | tr '\n' ' ')" >>"$OUT/sum.txt" ) &
}
mkdir -p $B/kc-ab; export KILN_CACHE_DIR=$B/kc-ab
timeout 120 "$B/kiln-gpu-bench" --ab KILN_ROWV=a,b,c --only 'softmax(A,1),batchnorm A in place' --sizes 2048x50257,4096x32000,4096x32001,256x50257,4096x24576,4096x16384,1024x128257 >>"$A" 2>&1
ts "ab done"
run pb b rowsmem
run pc c rowsmem
wait; cat "$OUT/sum.txt" >>"$A"; ts "tests done"
for n in pb pc; do grep -iE 'FAIL|error|want' "$OUT/$n.log" | grep -v 'ERROR SUMMARY: 0\| 0 failed' | head -8 | sed "s/^/$n: /" >>"$A"; done
