#!/usr/bin/env bash
# bench/NOTES.md step 76 Next (0) and (2), the next visit: OUT=$OUT bash bench/patches/2026-12-08.visit.sh [varwritten] [coldepth]
# (both when no argument; ~150 s cold each). Each applies its patch to a copy of the tree and builds it fresh.
#  varwritten (v76c, 2026-12-08-varwritten.patch): var_one_pass told whether the variance is written out or
#    broadcast back; written-out f16 / bf16 variances down the columns take one pass from 2048 rows below the
#    L2 too. Runs the tests whose plans it moves and times var(A,0) / batch norm; if all pass, git apply the
#    patch on main, make test, commit.
#  coldepth (v76d, 2026-12-08-coldepth.patch, an experiment): KILN_REDUCE_COLDEPTH=D caps the row workers of
#    COLUMN mode's narrowed unsplit blocks so each walks at least D rows before the fold; times short wide
#    columns at D = 0 (as main), 16, 32, 64. If a depth wins, write the rule into launch_shape, not the knob.
# Delete the patches and this script once done. All into $OUT/all.txt.
set -u
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
A=$OUT/all.txt; export KILN_DEVICE=cuda; T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader >>"$A"

# patched_copy PATCH DIR TARGETS...: the tree copied to DIR with PATCH applied, built in DIR/b
patched_copy() {
  local patch=$1 dir=$2; shift 2
  rm -rf "$dir"; mkdir -p "$dir"; tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$dir"
  ( cd "$dir" && patch -p1 < "bench/patches/$patch" >/dev/null ); echo "$patch: patch rc $?" >>"$A"
  cmake -S "$dir" -B "$dir/b" -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a -DKILN_WERROR=ON >/dev/null 2>&1 &&
    cmake --build "$dir/b" -j16 --target "$@" >"$dir/build.log" 2>&1
  echo "$patch: build rc $? at $(( $(date +%s) - T0 )) s" >>"$A"
}

varwritten() {
  local B=/tmp/vw76/b
  patched_copy 2026-12-08-varwritten.patch /tmp/vw76 kiln-gpu-bench test_cuda_backend test_expr test_oracle test_plan
  mkdir -p $B/k1 $B/k2 $B/k3 $B/k4 $B/k5 $B/kb
  ( KILN_CUDA_TEST=welford,batchnorm KILN_CACHE_DIR=$B/k1 timeout 150 $B/test_cuda_backend > $B/t1.log 2>&1; echo "welford,batchnorm rc $? $(tail -1 $B/t1.log)" >>"$A" ) &
  ( KILN_CUDA_TEST=lanes,keep,stats KILN_CACHE_DIR=$B/k2 timeout 150 $B/test_cuda_backend > $B/t2.log 2>&1; echo "lanes,keep,stats rc $? $(tail -1 $B/t2.log)" >>"$A" ) &
  ( KILN_CUDA_TEST=reductions,split,rowsmem KILN_CACHE_DIR=$B/k3 timeout 200 $B/test_cuda_backend > $B/t3.log 2>&1; echo "reductions,split,rowsmem rc $? $(tail -1 $B/t3.log)" >>"$A" ) &
  ( KILN_CACHE_DIR=$B/k4 timeout 150 $B/test_expr > $B/t4.log 2>&1; echo "test_expr rc $? $(tail -1 $B/t4.log)" >>"$A"; timeout 100 $B/test_plan > $B/t6.log 2>&1; echo "test_plan rc $? $(tail -1 $B/t6.log)" >>"$A" ) &
  ( KILN_CACHE_DIR=$B/k5 timeout 300 $B/test_oracle > $B/t5.log 2>&1; echo "test_oracle rc $? $(tail -1 $B/t5.log)" >>"$A" ) &
  ( for d in f16 bf16; do KILN_CACHE_DIR=$B/kb timeout 60 $B/kiln-gpu-bench --only 'var(A,0),batchnorm(A,0) in place' --dtype $d --sizes 4096x4096,2048x8192,16384x1024,1024x16384,4096x512,50000x64 --ab KILN_VAR_PASSES=2,1 2>&1 | grep -E '^(var|batch)'; done > $B/b.log 2>&1 ) &
  wait; cat $B/b.log >>"$A"; grep -hE 'err|failed:|want' $B/t[1-6].log | head -10 >>"$A"
}

coldepth() {
  local B=/tmp/cd76/b S=1024x16384,1024x65536,2048x8192,4096x4096,512x32768
  patched_copy 2026-12-08-coldepth.patch /tmp/cd76 kiln-gpu-bench
  mkdir -p $B/kc
  for d in f16 f32; do
    KILN_CACHE_DIR=$B/kc timeout 120 $B/kiln-gpu-bench --only 'var(A,0),sum(A,0),batchnorm(A,0) in place' --dtype $d --sizes $S --ab KILN_REDUCE_COLDEPTH=0,16,32,64 2>&1 | grep -E '^(case|var|sum|batch)' >>"$A"
    KILN_VAR_PASSES=1 KILN_CACHE_DIR=$B/kc timeout 60 $B/kiln-gpu-bench --only 'var(A,0)' --dtype $d --sizes $S --ab KILN_REDUCE_COLDEPTH=0,16,32,64 2>&1 | grep -E '^var' | sed 's/^/one pass: /' >>"$A"
  done
}

for part in ${@:-varwritten coldepth}; do echo "== $part" >>"$A"; $part; done
echo "### end $(( $(date +%s) - T0 )) s" >>"$A"
