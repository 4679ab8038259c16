#!/usr/bin/env bash
# bench/NOTES.md step 77 Next (0), the next visit: OUT=$OUT bash bench/patches/2026-12-08-coldepth-rule.visit.sh
# (~250-350 s cold on an H100). Applies 2026-12-08-coldepth-rule.patch (v77a: COLUMN mode's one-walk kernels
# take deeper workers; v77b: written-out f16/bf16/f32 column variances in one pass from 256 rows) to a copy
# of the tree, builds it fresh, runs the tests whose kernels or plans it moves (test_cuda_backend's column
# sections a process each, test_expr, test_plan, test_codegen_nvrtc, test_oracle, memcheck on lanes and
# welford) and times it against KILN_REDUCE_COLDEPTH=0, one pass against two, and the two-walk kernels
# deepened too (=all, for step 77's Left 1). If all pass and the times
# hold: git apply the patch on main, make test, then make test-gpu whole; delete the patch and this script.
# All into $OUT/all.txt.
set -u
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
A=$OUT/all.txt; export KILN_DEVICE=cuda; T0=$(date +%s); D=/tmp/cdr77; B=$D/b
nvidia-smi --query-gpu=name --format=csv,noheader >>"$A"
rm -rf $D; mkdir -p $D; tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C $D
( cd $D && patch -p1 < bench/patches/2026-12-08-coldepth-rule.patch >/dev/null ); echo "patch rc $?" >>"$A"
cmake -S $D -B $B -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a -DKILN_WERROR=ON >/dev/null 2>&1 &&
  cmake --build $B -j16 --target kiln-gpu-bench test_cuda_backend test_expr test_plan test_oracle test_codegen_nvrtc >$D/build.log 2>&1
echo "build rc $? at $(( $(date +%s) - T0 )) s" >>"$A"
run() { # name timeout command...: in the background, its own kernel cache, its last line into $A
  local n=$1 t=$2; shift 2; mkdir -p $B/k_$n
  ( KILN_CACHE_DIR=$B/k_$n timeout $t "$@" > $B/$n.log 2>&1; echo "$n rc $? $(tail -1 $B/$n.log)" >>"$A" ) &
}
SAN="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer) --tool memcheck --error-exitcode 9"
for sec in welford batchnorm lanes keep stats reductions split random; do KILN_CUDA_TEST=$sec run $sec 200 $B/test_cuda_backend; done
run expr 200 $B/test_expr
run plan 200 $B/test_plan
run cg 200 $B/test_codegen_nvrtc
run oracle 330 $B/test_oracle
KILN_CUDA_TEST=lanes,welford run mc 330 $SAN $B/test_cuda_backend
wait
echo "tests done at $(( $(date +%s) - T0 )) s" >>"$A"
grep -h 'ERROR SUMMARY' $B/mc.log >>"$A"; grep -hE 'want|failed:' $B/*.log | head -12 >>"$A"
S=1024x16384,768x12288,512x32768,256x65536,2048x8192,512x8192,1024x4096,4096x4096,50000x64
for d in f16 bf16 f32; do
  KILN_CACHE_DIR=$B/kb timeout 60 $B/kiln-gpu-bench --only 'var(A,0),sum(A,0),batchnorm(A,0) in place' --dtype $d --sizes $S --ab KILN_REDUCE_COLDEPTH=0,1 2>&1 | grep -E '^(case|var|sum|batch)' >>"$A"
  KILN_CACHE_DIR=$B/kb timeout 40 $B/kiln-gpu-bench --only 'var(A,0)' --dtype $d --sizes $S --ab KILN_VAR_PASSES=2,1 2>&1 | grep -E '^(case|var)' | sed 's/^/passes: /' >>"$A"
  # the two-walk kernels deepened too (=all; lanes and splits as without): batch norm, two-pass variances
  KILN_CACHE_DIR=$B/kb timeout 40 $B/kiln-gpu-bench --only 'batchnorm(A,0) in place' --dtype $d --sizes $S --ab KILN_REDUCE_COLDEPTH=1,all 2>&1 | grep -E '^(case|batch)' | sed 's/^/all: /' >>"$A"
  KILN_VAR_PASSES=2 KILN_CACHE_DIR=$B/kb timeout 40 $B/kiln-gpu-bench --only 'var(A,0)' --dtype $d --sizes $S --ab KILN_REDUCE_COLDEPTH=1,all 2>&1 | grep -E '^(case|var)' | sed 's/^/all, two passes: /' >>"$A"
done
echo "### end $(( $(date +%s) - T0 )) s" >>"$A"
