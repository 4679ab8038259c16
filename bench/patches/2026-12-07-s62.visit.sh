#!/usr/bin/env bash
# Session 62's second visit (bench/NOTES.md step 77): the column depth rule and the written-out
# variance's one pass from 256 rows, built fresh; the tests whose kernels they move, memcheck on
# the column sections, and the A/B timings. All into $OUT/all.txt. Delete after the visit.
set -u
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
A=$OUT/all.txt; export KILN_DEVICE=cuda; T0=$(date +%s); B=/tmp/s62b
nvidia-smi --query-gpu=name --format=csv,noheader >>"$A"
rm -rf $B; cmake -S . -B $B -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a -DKILN_WERROR=ON >/dev/null 2>&1 &&
  cmake --build $B -j16 --target kiln-gpu-bench test_cuda_backend test_expr test_codegen_nvrtc >$B.build.log 2>&1
echo "build rc $? at $(( $(date +%s) - T0 )) s" >>"$A"
run() { # name timeout cmd...
  local n=$1 t=$2; shift 2; mkdir -p $B/k_$n
  ( KILN_CACHE_DIR=$B/k_$n timeout $t "$@" > $B/$n.log 2>&1; echo "$n rc $? $(tail -1 $B/$n.log)" >>"$A" ) &
}
SAN="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer) --tool memcheck --error-exitcode 9"
KILN_CUDA_TEST=welford,batchnorm run wb 130 $B/test_cuda_backend
KILN_CUDA_TEST=lanes,keep,stats run lks 130 $B/test_cuda_backend
KILN_CUDA_TEST=reductions,split run rs 130 $B/test_cuda_backend
KILN_CUDA_TEST=random run rr 130 $B/test_cuda_backend
run expr 130 $B/test_expr
run cg 130 $B/test_codegen_nvrtc
KILN_CUDA_TEST=lanes,welford run mc 130 $SAN $B/test_cuda_backend
wait
echo "tests done at $(( $(date +%s) - T0 )) s" >>"$A"
grep -h 'ERROR SUMMARY' $B/mc.log >>"$A"; grep -hE 'want|failed:' $B/*.log | head -12 >>"$A"
S=1024x16384,768x12288,512x32768,256x65536,2048x8192,512x8192,4096x4096
for d in f16 f32; do
  KILN_CACHE_DIR=$B/kb timeout 45 $B/kiln-gpu-bench --only 'var(A,0),sum(A,0),batchnorm(A,0) in place' --dtype $d --sizes $S --ab KILN_REDUCE_COLDEPTH=0,1 2>&1 | grep -E '^(case|var|sum|batch)' >>"$A"
  KILN_CACHE_DIR=$B/kb timeout 30 $B/kiln-gpu-bench --only 'var(A,0)' --dtype $d --sizes $S --ab KILN_VAR_PASSES=2,1 2>&1 | grep -E '^(case|var)' | sed 's/^/passes: /' >>"$A"
done
echo "### end $(( $(date +%s) - T0 )) s" >>"$A"
