#!/usr/bin/env bash
# bench/NOTES.md step 74 Next (0), one visit on the tree as it is (~150 s warm):
#   OUT=$OUT bash bench/patches/2026-12-08-fewrows.visit.sh
# row_fill doubles kept unshifted 16-bit rows where the rows are few enough to split and the doubled walk
# fits one 1024-thread tile (v74a); unsplit, they take the row cache with the walk undone. Times softmax
# f16/bf16 on the few-row shapes, the rule (unset: v74a's cached kernel, 2 vectors a worker) against
# KILN_REDUCE_ROWFILL=1 (cached, doubled walk: 4) and =0 (v73a's split kernel), two rounds; then
# test_cuda_backend's split section, whose new few-row cases count the splits. Fresh build dir (the device checkout has older mtimes). All into $OUT/all.txt.
set -u
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
A=$OUT/all.txt; export KILN_DEVICE=cuda; T0=$(date +%s); B=build-few74
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >>"$A"
rm -rf $B; cmake -S . -B $B -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a -DKILN_WERROR=ON >/dev/null 2>&1 &&
  cmake --build $B -j16 --target kiln-gpu-bench test_cuda_backend >$B.log 2>&1; echo "build rc $? at $(( $(date +%s) - T0 )) s" >>"$A"
mkdir -p $B/kc $B/kt
S=8x32000,16x20000,2x65536
for v in unset 1 0 unset 1 0; do for d in f16 bf16; do echo "== ROWFILL $v $d" >>"$A"
  if [ $v = unset ]; then env -u KILN_REDUCE_ROWFILL KILN_CACHE_DIR=$B/kc timeout 60 $B/kiln-gpu-bench --only 'softmax(A,1)' --dtype $d --sizes $S 2>&1 | grep softmax >>"$A"
  else KILN_REDUCE_ROWFILL=$v KILN_CACHE_DIR=$B/kc timeout 60 $B/kiln-gpu-bench --only 'softmax(A,1)' --dtype $d --sizes $S 2>&1 | grep softmax >>"$A"; fi
done; done
KILN_CUDA_TEST=split KILN_CACHE_DIR=$B/kt timeout 90 $B/test_cuda_backend > $B/t.log 2>&1; echo "split rc $? $(tail -1 $B/t.log)" >>"$A"; grep -E 'want|failed:' $B/t.log | head -5 >>"$A"; echo "### end $(( $(date +%s) - T0 )) s" >>"$A"
