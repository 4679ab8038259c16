#!/usr/bin/env bash
# bench/NOTES.md step 71 Next (1), measurement only (no patch): why row_fill's doubled walk for kept values
# costs f16 softmax 4096 x 10000 24 % and gains 8192 x 8192 21 % (H100, session 57's call 4).
#   OUT=$OUT bash bench/patches/2026-12-06-rowfill-ncu.visit.sh      (~120 s on a fresh machine)
# For each shape and KILN_REDUCE_ROWFILL=0,1: the time, then one launch under Nsight Compute (registers, spill
# traffic, occupancy, issue rate and its stalls, instructions) and the kernel's SASS by barrier segment
# (tools/cache-sass.py). Everything goes into $OUT/all.txt.
set -u
cd "$(dirname "$0")/../.."
A=$OUT/all.txt; B=build-vf; export KILN_DEVICE=cuda PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >>"$A"
rm -rf "$B"
cmake -S . -B "$B" -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a >/dev/null 2>&1 && cmake --build "$B" -j16 --target kiln-gpu-bench >/dev/null 2>&1
echo "build $?" >>"$A"
M=gpu__time_duration.sum,launch__registers_per_thread,launch__block_size,launch__grid_size,launch__occupancy_limit_registers
M=$M,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.per_cycle_active,smsp__inst_executed.sum
M=$M,dram__bytes.sum,smsp__thread_inst_executed_per_inst_executed.ratio
# the spill traffic in a second profile (names unchecked on this ncu: a failure there spoils only its lines)
MS=smsp__inst_executed_op_local_ld.sum,smsp__inst_executed_op_local_st.sum
for s in 4096x10000 8192x8192 4096x16001; do for f in 0 1; do
  c=$B/kc-$s-$f; mkdir -p "$c"; echo "== $s ROWFILL=$f" >>"$A"
  KILN_REDUCE_ROWFILL=$f KILN_CACHE_DIR=$c timeout 60 $B/kiln-gpu-bench --only 'softmax(A,1)' --dtype f16 --sizes $s 2>&1 | grep softmax >>"$A"
  KILN_REDUCE_ROWFILL=$f KILN_CACHE_DIR=$c timeout 90 ncu --kernel-name regex:kiln --launch-skip 12 --launch-count 1 \
    --metrics "$M" $B/kiln-gpu-bench --only 'softmax(A,1)' --dtype f16 --sizes $s 2>&1 |
    grep -E '^\s+(gpu__|smsp__|launch__|sm__|dram__)' >>"$A"
  KILN_REDUCE_ROWFILL=$f KILN_CACHE_DIR=$c timeout 60 ncu --kernel-name regex:kiln --launch-skip 12 --launch-count 1 \
    --metrics "$MS" $B/kiln-gpu-bench --only 'softmax(A,1)' --dtype f16 --sizes $s 2>&1 | grep -E '^\s+smsp__|ERR' | head -4 >>"$A"
  python3 tools/cache-sass.py "$c" $B/sass-$s-$f --match 'kiln_op_max' --top 10 >>"$A" 2>&1
done; done
