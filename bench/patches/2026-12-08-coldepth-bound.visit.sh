#!/usr/bin/env bash
# bench/NOTES.md step 79 Left (2), a visit on main as landed: OUT=$OUT bash bench/patches/2026-12-08-coldepth-bound.visit.sh
# (~60-90 s cold build plus the timings). Times COLUMN batch norm in place, into another tensor and of A + B
# (two full-size inputs) with KILN_REDUCE_COLDEPTH=1 (the rule: two-walk kernels deepen where the bytes of
# their inputs fit in 7/8 of the L2) against =all (every kernel deepened) and =0, f32 and f16, at shapes of
# 8-67 MB a tensor. Reads: 1/all near 1.00 where the rule deepens; where it keeps the blocks (A + B past
# 22.9 MB a tensor, anything past 45.9 MB) all/1 below 1.00 says the bound holds. Then one-walk column sums
# and one-pass variances with KILN_REDUCE_COLROWS=16,32,64 (workers deeper than 16 rows). Into $OUT/all.txt.
set -u
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
A=${A:-$OUT/all.txt}; export KILN_DEVICE=cuda; T0=$(date +%s); B=${B:-/tmp/c79} # B: a CUDA build to reuse
nvidia-smi --query-gpu=name --format=csv,noheader >>"$A"; git log --oneline -1 >>"$A"
if [ ! -x $B/kiln-gpu-bench ]; then
  rm -rf $B; cmake -S . -B $B -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a -DKILN_WERROR=ON >/dev/null 2>&1 &&
    cmake --build $B -j16 --target kiln-gpu-bench >$B.build.log 2>&1
  echo "build rc $? at $(( $(date +%s) - T0 )) s" >>"$A"
fi
S=256x8192,512x8192,768x8192,1024x8192,384x24576,320x32768,768x16384,512x32768
for d in f32 f16; do
  KILN_CACHE_DIR=$B/kb timeout 200 $B/kiln-gpu-bench --only 'batchnorm(A,0) in place,batchnorm(A,0) to out,batchnorm(A+B,0) to out' \
    --dtype $d --sizes $S --ab KILN_REDUCE_COLDEPTH=1,all,0 2>&1 | grep -E '^(case|batch)' >>"$A"
done
# step 77's (2)-(3): workers deeper than 16 rows (KILN_REDUCE_COLROWS) for one-walk column sums and variances
S=2048x16384,1024x65536,1024x16384,2048x4096,4096x4096,2048x8192,512x32768
for d in f16 f32; do
  KILN_VAR_PASSES=1 KILN_CACHE_DIR=$B/kb timeout 200 $B/kiln-gpu-bench --only 'sum(A,0),var(A,0)' --dtype $d --sizes $S \
    --ab KILN_REDUCE_COLROWS=16,32,64 2>&1 | grep -E '^(case|sum|var)' >>"$A"
done
echo "### end $(( $(date +%s) - T0 )) s" >>"$A"
