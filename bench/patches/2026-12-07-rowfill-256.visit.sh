#!/usr/bin/env bash
# bench/NOTES.md step 73 Next (0), one visit on the tree as it is (no patch):
#   OUT=$OUT bash bench/patches/2026-12-07-rowfill-256.visit.sh      (~350 s on a fresh machine)
# 1. v73a confirmed: softmax f16 and bf16 under row_fill's rule (unset) against KILN_REDUCE_ROWFILL=1, which on
#    these unshifted kept rows is the rule before v73a (always doubled), rounds unset / 1 / unset / 1.
# 2. cached_division: --ab KILN_REDUCE_DIV=0,1 on the f16 rows cached whole and unshifted.
# 3. after the timings, test_dot's own and mma engines, one process each, nothing else beside them (in session 59 they did not
#    finish in 190 s with four processes sharing the host).
# Built into a fresh directory (the device's checkout has an older HEAD and older mtimes). All into $OUT/all.txt.
set -u
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null || echo "$(dirname "$0")/../..")"
A=$OUT/all.txt; export KILN_DEVICE=cuda; T0=$(date +%s); B=build-r256
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >>"$A"
rm -rf $B
cmake -S . -B $B -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a -DKILN_WERROR=ON >/dev/null 2>&1 &&
  cmake --build $B -j16 --target kiln-gpu-bench test_dot >$B.log 2>&1; echo "build rc $? at $(( $(date +%s) - T0 )) s" >>"$A"
S=4096x6000,4096x8192,4096x10000,4096x12000,4096x16384,8x32000,16x20000,2x65536
mkdir -p $B/kc
for r in 1 2; do for v in unset 1; do for d in f16 bf16; do echo "== ROWFILL $v $d" >>"$A"
  if [ $v = unset ]; then env -u KILN_REDUCE_ROWFILL KILN_CACHE_DIR=$B/kc timeout 80 $B/kiln-gpu-bench --only 'softmax(A,1)' --dtype $d --sizes $S 2>&1 | grep softmax >>"$A"
  else KILN_REDUCE_ROWFILL=$v KILN_CACHE_DIR=$B/kc timeout 80 $B/kiln-gpu-bench --only 'softmax(A,1)' --dtype $d --sizes $S 2>&1 | grep softmax >>"$A"; fi
done; done; done
KILN_CACHE_DIR=$B/kc timeout 80 $B/kiln-gpu-bench --only 'softmax(A,1)' --dtype f16 --sizes 4096x32000,4096x24576 \
  --ab KILN_REDUCE_DIV=0,1 2>&1 | grep -E 'softmax|A/B' >>"$A"
echo "timed at $(( $(date +%s) - T0 )) s" >>"$A"
( cd $B; for e in own mma; do mkdir -p kd-$e; ( t=$(date +%s); KILN_CACHE_DIR=kd-$e KILN_TEST_ENGINES=$e timeout 330 ./test_dot >d-$e.log 2>&1
  echo "== test_dot $e: rc $? in $(( $(date +%s) - t )) s: $(grep passed d-$e.log | tail -1)" >d-$e.res ) & done; wait )
cat $B/d-*.res >>"$A"; grep -hE ' FAIL|want ' $B/d-*.log | head -8 >>"$A"
echo "### end $(( $(date +%s) - T0 )) s" >>"$A"
