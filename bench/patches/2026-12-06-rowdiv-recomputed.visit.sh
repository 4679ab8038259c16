#!/usr/bin/env bash
# v70b (bench/NOTES.md step 70), never run on a GPU: run after `git apply bench/patches/2026-12-06-rowdiv-recomputed.patch`,
# as `OUT=$OUT bash bench/patches/2026-12-06-rowdiv-recomputed.visit.sh` (~300 s on a fresh machine).
# The timing (--ab KILN_REDUCE_DIV=0,1: every point divides / through the row's reciprocal), then the tests that
# meet the change: test_cuda_backend whole, its rdiv/rowsmem/shift/keep sections under memcheck, test_expr and
# test_oracle on CUDA. Everything goes into $OUT/all.txt.
set -u
cd "$(dirname "$0")/../.."
A=$OUT/all.txt; B=$PWD/build-gpu; L=$PWD/vlogs; rm -rf "$L"; mkdir -p "$L"
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 )) s] $*" >>"$A"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; git log --oneline -1; git diff --stat | tail -1; } >>"$A" 2>&1
cmake -S . -B "$B" -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a -DKILN_WERROR=ON >"$L/build.log" 2>&1 &&
  cmake --build "$B" -j16 --target test_cuda_backend test_expr test_oracle kiln-gpu-bench >>"$L/build.log" 2>&1
rc=$?; ts "build rc $rc"; [ $rc -eq 0 ] || { grep -E 'error' "$L/build.log" | head -20 >>"$A"; exit 1; }
export KILN_DEVICE=cuda
mkdir -p "$B/kc-ab"
KILN_CACHE_DIR=$B/kc-ab timeout 90 "$B/kiln-gpu-bench" --ab KILN_REDUCE_DIV=0,1 --only 'softmax(A,1)' \
    --sizes 2048x50257,4096x32000,4096x32001,1024x128257,256x50257,65536x1024 >>"$A" 2>&1
ts "ab rc $?"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
run() { # name test sections cmd-prefix...
  local n=$1 t=$2 sec=$3; shift 3
  ( cd "$B"; s=$(date +%s); mkdir -p "$B/kc-$n"; KILN_CACHE_DIR="$B/kc-$n" KILN_CUDA_TEST="$sec" timeout 300 "$@" "./$t" >"$L/$n.log" 2>&1
    echo "== $n ($t $sec): rc $? in $(( $(date +%s) - s )) s: $(grep -E 'passed|SUMMARY' "$L/$n.log" | tail -2 | tr '\n' ' ')" >>"$L/sum.txt" ) &
}
run p1 test_cuda_backend rowsmem,keep,rdiv,shift
run p2 test_cuda_backend reductions,batchnorm,split,lanes,welford,seg
run p3 test_cuda_backend copies,elementwise,chains,rng,gemm,random,stats,fastdram,pdl,cache,memory,wrap,graph
run mc test_cuda_backend rdiv,rowsmem,shift,keep "$SAN" --tool memcheck --error-exitcode 99
run ex test_expr ""
run or test_oracle ""
wait; cat "$L/sum.txt" >>"$A"; ts "tests done"
for n in p1 p2 p3 mc ex or; do grep -iE ' FAIL|want ' "$L/$n.log" | head -8 | sed "s/^/$n: /" >>"$A"; done
