#!/usr/bin/env bash
# bench/NOTES.md step 78 Next (0), the next visit: OUT=$OUT bash bench/patches/2026-12-08-coldepth-twowalk.visit.sh
# (~220-330 s cold). Applies 2026-12-08-coldepth-twowalk.patch (v77c: two-walk COLUMN kernels over 16-bit inputs,
# two-pass variances and batch norm, take step 77's deeper workers too) to a copy of the tree, builds it fresh,
# runs the tests whose kernels it moves (test_cuda_backend's column sections a process each, test_expr,
# test_plan, test_codegen_nvrtc, test_oracle; memcheck on lanes, welford and batchnorm; racecheck on batchnorm
# and lanes), then times batch norm and two-pass column variances with KILN_REDUCE_COLDEPTH=0 against the rule
# in f16, bf16 and f32 (f32 should read 1.00x). If all pass and the times hold: git apply the patch on main,
# make test, then make test-gpu whole; delete the patch and this script. All into $OUT/all.txt.
set -u
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
A=$OUT/all.txt; export KILN_DEVICE=cuda; T0=$(date +%s); D=/tmp/c78; B=$D/b
nvidia-smi --query-gpu=name --format=csv,noheader >>"$A"
rm -rf $D; mkdir -p $D; tar --exclude='./build*' --exclude=./.git --exclude=./.venv -cf - . | tar -xf - -C $D
( cd $D && patch -p1 < bench/patches/2026-12-08-coldepth-twowalk.patch >/dev/null ); echo "patch rc $?" >>"$A"
cmake -S $D -B $B -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a -DKILN_WERROR=ON >/dev/null 2>&1 &&
  cmake --build $B -j16 --target kiln-gpu-bench test_cuda_backend test_expr test_plan test_oracle test_codegen_nvrtc >$D/build.log 2>&1
echo "build rc $? at $(( $(date +%s) - T0 )) s" >>"$A"
run() { # name timeout command...: in the background, its own kernel cache, its last line into $A
  local n=$1 t=$2; shift 2; mkdir -p $B/k_$n
  ( KILN_CACHE_DIR=$B/k_$n timeout $t "$@" > $B/$n.log 2>&1; echo "$n rc $? $(tail -1 $B/$n.log)" >>"$A" ) &
}
SAN="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
for sec in welford batchnorm lanes keep stats reductions split random; do KILN_CUDA_TEST=$sec run $sec 200 $B/test_cuda_backend; done
run expr 200 $B/test_expr
run plan 200 $B/test_plan
run cg 200 $B/test_codegen_nvrtc
run oracle ${ORACLE_S:-300} $B/test_oracle
KILN_CUDA_TEST=lanes,welford,batchnorm run mc 200 $SAN --tool memcheck --error-exitcode 9 $B/test_cuda_backend
KILN_CUDA_TEST=batchnorm,lanes run rc 200 $SAN --tool racecheck --error-exitcode 9 $B/test_cuda_backend
wait
echo "tests done at $(( $(date +%s) - T0 )) s" >>"$A"
grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' $B/mc.log $B/rc.log >>"$A"; grep -hE 'want|failed:' $B/*.log | head -12 >>"$A"
S=1024x16384,768x12288,512x32768,256x65536,2048x8192,512x8192,1024x4096,4096x4096,16384x1024,100000x256
for d in f16 bf16 f32; do
  KILN_CACHE_DIR=$B/kb timeout 60 $B/kiln-gpu-bench --only 'batchnorm(A,0) in place' --dtype $d --sizes $S --ab KILN_REDUCE_COLDEPTH=0,1 2>&1 | grep -E '^(case|batch)' >>"$A"
  KILN_VAR_PASSES=2 KILN_CACHE_DIR=$B/kb timeout 60 $B/kiln-gpu-bench --only 'var(A,0)' --dtype $d --sizes $S --ab KILN_REDUCE_COLDEPTH=0,1 2>&1 | grep -E '^(case|var)' | sed 's/^/two passes: /' >>"$A"
done
echo "### end $(( $(date +%s) - T0 )) s" >>"$A"
