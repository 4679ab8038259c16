#!/usr/bin/env bash
# tools/gpu-visit.sh — one whole visit to the GPU machine in one command, with a deadline:
#   1. the suite on the CUDA backend: C tests and the Python package (tools/test-gpu.sh,
#      MODES="cuda python"; table in $OUT/table-run.txt)
#   2. benchmarks: kiln-bench (expr + gemm; on a GPU it runs kiln-gpu-bench, the ratio to a
#      device copy and the compile latencies), the PyTorch peer (bench/peers/torch_expr.py),
#      bench/rbm.py, bench/overhead.py, and the Python examples on the GPU; steps gemm-regs,
#      gemm-tf32, gemm-sweep and gemm-epilogue (not in the default STEPS) time the wgmma GEMM
#      with KILN_WGMMA_STORE=regs, in tf32, over forced tile widths / k splits / stores, and
#      the cost of the full epilogue (bias + ReLU + stochastic rounding); step gemm-fast-dram
#      times the tile rule's fast-memory plans against the H100's, gemm-sweep-tf32 sweeps tf32
#      on SWEEP_ONLY's cases, dram-read-a streams fc36864 fprop's B with and without A's L2
#      re-reads (tools/dram-read), gemm-random runs GEMM_RANDOM random GEMM cases (default 400)
#      against the CPU backend, then 100 under memcheck, gemm-stats times the output statistics
#      in kiln's own kernels' epilogues against kiln_dot's pass over C, tiled-ab the mma.sync and
#      FFMA kernels of this tree against those of AB_BASE (ab-base), split the reductions split
#      across blocks (tests, sanitizers, kiln-gpu-bench with and without); lanes COLUMN mode's
#      lanes and the one-pass variance (tests, sanitizers, kiln-gpu-bench --ab KILN_REDUCE_COLVEC=0,1);
#      var the one-pass variance alone (tests, sanitizers, --ab KILN_VAR_PASSES=2,1, the torch peer);
#      var-rule times one pass against two around the default rule's edges; host-ab a small call's
#      host time against the AB_BASE tree (kiln-bench overhead, host-prof); row-ncu Nsight Compute on
#      ROW mode's f16 variance and batch norm; seg ROW mode's short rows (tests, A/B KILN_REDUCE_SEG=0,1,
#      sanitizers); keep the values kept across passes (tests, A/B KILN_REDUCE_KEEP=0,1, sanitizers); row-ab ROW mode's
#      reductions against the AB_BASE tree; rowfill KILN_REDUCE_ROWFILL=0,1 (tests, memcheck, racecheck, A/B);
#      rowsmem ROW mode's row cache (tests in both forms, A/B KILN_REDUCE_SMEM=0,tile,1, the torch peer, sanitizers);
#      step gemm-ncu runs Nsight Compute on one call of kiln's kernel and of cuBLASLt's per shape (NCU_SHAPES)
#   3. the suite under compute-sanitizer (MODES="memcheck racecheck"; $OUT/table-san.txt)
# Each step gets what is left of VISIT_SECONDS (default 540) and is cut off at the deadline,
# keeping its partial output. Logs: $OUT/*.txt (OUT defaults to ./gpu-out). The device tool
# brings back only a handful of files from $OUT: pack them (tar) when calling it from there.
# A fresh machine compiles every kernel with NVRTC once (the oracle alone takes about two
# minutes, test_dot's own-GEMM pass about as long), so the first tests step is the long one.
# Environment: VISIT_SECONDS, STEPS (default "tests bench examples sanitizer"), BUILD_GPU.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
export BUILD_GPU=${BUILD_GPU:-$ROOT/build-gpu}
STEPS=${STEPS:-"tests bench examples sanitizer"}
T_END=$(($(date +%s) + ${VISIT_SECONDS:-540}))
left() { echo $((T_END - $(date +%s))); }

step() { # name limit-seconds cmd... : runs cmd with min(limit, time left) into $OUT/name.txt
    local name=$1 lim=$2 rem rc t0
    shift 2
    rem=$(left)
    [ "$lim" -gt "$rem" ] && lim=$rem
    if [ "$lim" -lt 5 ]; then
        echo "== $name: skipped (no time left)" | tee -a "$OUT/visit.txt"
        return
    fi
    t0=$(date +%s)
    timeout --kill-after=5 "$lim" "$@" >"$OUT/$name.txt" 2>&1
    rc=$?
    echo "== $name: rc $rc in $(($(date +%s) - t0)) s (limit $lim s)" | tee -a "$OUT/visit.txt"
}

# The reduction steps' build (test_cuda_backend and kiln-gpu-bench, log $OUT/NAME-build.txt) and
# environment (the device, the kernel cache); then their sections under memcheck and racecheck.
reduction_build() {
    cmake -S "$ROOT" -B "$BUILD_GPU" -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a >"$OUT/$1-build.txt" 2>&1 &&
        cmake --build "$BUILD_GPU" -j"$(nproc)" --target test_cuda_backend kiln-gpu-bench >>"$OUT/$1-build.txt" 2>&1
    export KILN_DEVICE=cuda KILN_CACHE_DIR="$BUILD_GPU/kernel-cache"
}
reduction_sanitizers() { # name sections limit-seconds
    local san
    san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    step "$1-memcheck" "$3" env KILN_CUDA_TEST="$2" "$san" --tool memcheck --target-processes application-only \
        --report-api-errors no --leak-check no --error-exitcode 99 "$BUILD_GPU/test_cuda_backend"
    step "$1-racecheck" "$3" env KILN_CUDA_TEST="$2" "$san" --tool racecheck --error-exitcode 99 \
        "$BUILD_GPU/test_cuda_backend"
}

{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
    python3 -c 'import sys, numpy, torch; print(sys.version.split()[0], "numpy", numpy.__version__, "torch", torch.__version__)'
    python3 -c 'import cupy; print("cupy", cupy.__version__)'
    nvcc --version | tail -2
} >"$OUT/visit.txt" 2>&1

for s in $STEPS; do
    case $s in
        tests)
            step tests 420 env MODES="cuda python" TABLE_SUFFIX=-run "$ROOT/tools/test-gpu.sh" ;;
        bench)
            step kiln-bench 200 "$BUILD_GPU/kiln-bench"
            step torch-expr 200 python3 bench/peers/torch_expr.py
            step rbm 90 env PYTHONPATH="$BUILD_GPU/python" python3 bench/rbm.py --device cuda
            step overhead 40 env PYTHONPATH="$BUILD_GPU/python" python3 bench/overhead.py --device cuda ;;
        gemm-regs) # the wgmma kernel with its register epilogue (not the TMA-store default)
            step gemm-regs 120 env KILN_WGMMA_STORE=regs "$BUILD_GPU/kiln-bench" gemm --dtype f16,bf16 ;;
        gemm-epilogue) # the cost of bias + ReLU + stochastic rounding in kiln's own kernels
            step gemm-epilogue 150 "$BUILD_GPU/kiln-bench" gemm-epilogue ;;
        gemm-tf32) # f32 with TF32 allowed: cuBLASLt's TF32 and kiln's tf32 kernel (the B^T rows)
            step gemm-tf32 150 "$BUILD_GPU/kiln-bench" gemm --tf32 --dtype f32 ;;
        gemm-fast-dram) # the tile rule's fast-memory plans against the H100's on the fprop shapes
            # (KILN_WGMMA_FAST_DRAM=0,1, interleaved, graphed; 16-bit only: tf32 keeps its plans)
            for dt in f16 bf16; do
                step "gemm-fast-dram-$dt" 150 "$BUILD_GPU/kiln-bench" gemm-ab KILN_WGMMA_FAST_DRAM=0,1 --graph \
                    --dtype "$dt" --only fprop
            done ;;
        gemm-sweep-tf32) # the sweep in tf32 (B stored (N, K)) on SWEEP_ONLY's cases (default fc36864
            # fprop, whose one-row plan the fast-memory rule leaves to 16-bit operands)
            step gemm-sweep-tf32 300 "$BUILD_GPU/kiln-bench" gemm-sweep --graph --dtype f32 --tf32 \
                --only "${SWEEP_ONLY:-fc36864 fprop}" ;;
        dram-read-a) # B's stream in fc36864 fprop's 128- and 256-wide split plans (72-120 blocks) with
            # A's L2 re-reads beside it and without (tools/dram-read; bench/NOTES.md step 48, Next 2)
            nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -o "$BUILD_GPU/dram-read" \
                "$ROOT/tools/dram-read.cu" -lcuda >"$OUT/dram-read-build.txt" 2>&1
            step dram-read-a 150 bash -c 'for p in "128 3" "128 4" "128 5" "256 8" "256 10"; do
                    set -- $p; for a in 128 0; do "$0" --K 36864 --N 3072 --W "$1" --splits "$2" --a-rows "$a"; done
                done' "$BUILD_GPU/dram-read" ;;
        gemm-random) # random GEMM shapes, views and epilogues through kiln's own kernels against the CPU
            # backend (test_cuda_backend's section random), GEMM_RANDOM of them (default 400), then
            # 100 under compute-sanitizer memcheck with test-gpu.sh's flags
            step gemm-random 240 env KILN_DEVICE=cuda KILN_CACHE_DIR="$BUILD_GPU/kernel-cache" KILN_CUDA_TEST=random \
                KILN_TEST_GEMM_RANDOM="${GEMM_RANDOM:-400}" "$BUILD_GPU/test_cuda_backend"
            step gemm-random-memcheck 240 env KILN_DEVICE=cuda KILN_CACHE_DIR="$BUILD_GPU/kernel-cache" \
                KILN_CUDA_TEST=random KILN_TEST_GEMM_RANDOM=100 "$(command -v compute-sanitizer ||
                    echo /usr/local/cuda/bin/compute-sanitizer)" --tool memcheck --target-processes application-only \
                --report-api-errors no --leak-check no --error-exitcode 99 \
                "$BUILD_GPU/test_cuda_backend" ;;
        gemm-stats) # the output statistics in the own kernels' epilogues (KILN_GEMM_STATS=fused, the
            # default) against kiln_dot's two reductions over C after the GEMM (pass), interleaved,
            # graphed: f16 with the statistics alone and with the full epilogue, and f32 (the FFMA kernel)
            step gemm-stats-f16 150 "$BUILD_GPU/kiln-bench" gemm-ab KILN_GEMM_STATS=fused,pass --graph --dtype f16 \
                --epilogue stats
            step gemm-stats-f16-full 150 "$BUILD_GPU/kiln-bench" gemm-ab KILN_GEMM_STATS=fused,pass --graph \
                --dtype f16 --epilogue bias,relu,sr,stats
            step gemm-stats-f32 150 "$BUILD_GPU/kiln-bench" gemm-ab KILN_GEMM_STATS=fused,pass --graph --dtype f32 \
                --epilogue stats ;;
        tiled-ab) # the tiled kernels (mma.sync f16 / bf16, FFMA f32) of this tree against those of
            # AB_BASE (default ab-base: another source tree, e.g. `git archive main | tar -x -C ab-base`,
            # named in the device tool's carry), each against cuBLASLt in its own interleaved run
            # (gemm-ab: KILN_GEMM=mma or ffma beside wgmma / vendor), graphed; plain and, for mma.sync,
            # bias + ReLU + SR. Compare own/vendor between the trees (bench/NOTES.md step 51)
            base=${AB_BASE:-$ROOT/ab-base}
            if [ -d "$base" ]; then
                cmake -S "$base" -B "$base/build-gpu" -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a >"$OUT/tiled-ab-build.txt" 2>&1 &&
                    cmake --build "$base/build-gpu" -j"$(nproc)" --target kiln-bench >>"$OUT/tiled-ab-build.txt" 2>&1
                for t in base new; do
                    bin=$BUILD_GPU; [ $t = base ] && bin=$base/build-gpu
                    step "tiled-ab-mma-$t" 120 env KILN_CACHE_DIR="$bin/kernel-cache" "$bin/kiln-bench" gemm-ab \
                        KILN_GEMM=mma,wgmma --graph --dtype f16
                    step "tiled-ab-mma-sr-$t" 120 env KILN_CACHE_DIR="$bin/kernel-cache" "$bin/kiln-bench" gemm-ab \
                        KILN_GEMM=mma,wgmma --graph --dtype bf16 --epilogue bias,relu,sr
                    step "tiled-ab-ffma-$t" 120 env KILN_CACHE_DIR="$bin/kernel-cache" "$bin/kiln-bench" gemm-ab \
                        KILN_GEMM=ffma,own --graph --dtype f32 --epilogue bias,relu
                done
            else
                echo "== tiled-ab: no base tree $base (skipped)" | tee -a "$OUT/visit.txt"
            fi ;;
        split) # reductions split across blocks (src/cuda/codegen.c): test_cuda_backend's sections split,
            # reductions and batchnorm, plain, under memcheck and racecheck; kiln-gpu-bench's table and
            # its --split-ab sweep (unsplit, rule, forced). Builds what it needs when the tests
            # step did not run.
            reduction_build split
            step split-tests 150 env KILN_CUDA_TEST=split,reductions,batchnorm "$BUILD_GPU/test_cuda_backend"
            step split-bench 120 "$BUILD_GPU/kiln-gpu-bench"
            # unsplit, the rule and forced splits in turn in one process, around the rule's thresholds
            # (16 tiles of 16 K elements one pass, 24 down columns, 8 for two passes; NOTES step 54)
            step split-ab 120 "$BUILD_GPU/kiln-gpu-bench" --split-ab --only 'sum(A),A-max(A),var(A,1),sum(A,0)' \
                --sizes 256x256,1x131072,1x196608,1x262144,1x524288,4x65536,16x65536,4096x1000,8192x1000,16384x1000
            reduction_sanitizers split split 150
            unset KILN_DEVICE KILN_CACHE_DIR ;;
        lanes) # COLUMN mode with lanes (a thread owns VEC columns, 16-byte loads; src/cuda/codegen.c)
            # and the one-pass variance (KILN_VAR_PASSES=1): test_cuda_backend's sections lanes, welford,
            # reductions, batchnorm and split, plain, memcheck and racecheck on lanes and welford;
            # kiln-gpu-bench --ab KILN_REDUCE_COLVEC=0,1 on column reductions
            reduction_build lanes
            step lanes-tests 150 env KILN_CUDA_TEST=lanes,welford,reductions,batchnorm,split "$BUILD_GPU/test_cuda_backend"
            step lanes-ab 150 "$BUILD_GPU/kiln-gpu-bench" --ab KILN_REDUCE_COLVEC=0,1 \
                --only 'sum(A,0),batchnorm(A,0) in place' \
                --sizes 512x1024,8192x1024,65536x1024,32768x4096,1024x65536,8192x8192,4096x64,100000x256,256x8192,2048x4096
            reduction_sanitizers lanes lanes,welford 120
            unset KILN_DEVICE KILN_CACHE_DIR ;;
        var) # the one-pass variance (RED_VAR, KILN_VAR_PASSES=1) on the GPU: test_cuda_backend's
            # section welford and test_expr (its settings unset / 1 / 2), plain and under the
            # sanitizers; kiln-gpu-bench --ab KILN_VAR_PASSES=2,1 on the variance and both batch
            # norms; the PyTorch peer's batch norms (torch.compile's one pass) in the same visit
            reduction_build var
            cmake --build "$BUILD_GPU" -j"$(nproc)" --target test_expr >>"$OUT/var-build.txt" 2>&1
            step var-tests 120 env KILN_CUDA_TEST=welford,batchnorm,reductions "$BUILD_GPU/test_cuda_backend"
            step var-expr 120 "$BUILD_GPU/test_expr"
            step var-ab 150 "$BUILD_GPU/kiln-gpu-bench" --ab KILN_VAR_PASSES=2,1 \
                --only 'var(A,1),batchnorm A in place,batchnorm(A,0) in place' \
                --sizes 8192x8192,65536x1024,1024x65536,4096x4096,32768x4096,256x8192
            step var-peer 150 python3 bench/peers/torch_expr.py --quick --only 'batchnorm A in place,batchnorm(A,0) in place'
            reduction_sanitizers var welford 120
            unset KILN_DEVICE KILN_CACHE_DIR ;;
        var-rule) # the variance's one-pass rule (cuda_var_one_pass: down columns, >= 2048 rows, more
            # bytes than the L2): --ab KILN_VAR_PASSES=2,1 around its edges, and the default's table
            reduction_build var-rule
            step var-rule-ab 120 "$BUILD_GPU/kiln-gpu-bench" --ab KILN_VAR_PASSES=2,1 \
                --only 'var(A,0),batchnorm(A,0) in place' \
                --sizes 8192x8192,65536x1024,1024x65536,4096x4096,2048x8192,6000x4096,16384x1024,1536x32768
            step var-rule-default 60 "$BUILD_GPU/kiln-gpu-bench" --only 'var(A,0),batchnorm(A,0) in place' \
                --sizes 8192x8192,4096x4096,1024x65536
            unset KILN_DEVICE KILN_CACHE_DIR ;;
        host-ab) # a small call's host time, this tree against AB_BASE (default ab-base, carried: see
            # tiled-ab), three rounds of kiln-bench overhead alternating on one machine, then
            # tools/host-prof on both (bench/NOTES.md steps 56-57)
            base=${AB_BASE:-$ROOT/ab-base}
            if [ -d "$base" ]; then
                { cmake -S "$ROOT" -B "$BUILD_GPU" -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a &&
                    cmake --build "$BUILD_GPU" -j8 --target kiln-bench host-prof; } >"$OUT/host-ab-build.txt" 2>&1 &
                { cmake -S "$base" -B "$base/build-gpu" -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a &&
                    cmake --build "$base/build-gpu" -j8 --target kiln-bench host-prof; } >"$OUT/host-ab-build-base.txt" 2>&1 &
                wait
                for r in 1 2 3; do
                    for bin in "$base/build-gpu" "$BUILD_GPU"; do
                        step "host-ab-$r-$([ "$bin" = "$BUILD_GPU" ] && echo new || echo base)" 40 env KILN_DEVICE=cuda \
                            KILN_CACHE_DIR="$bin/kernel-cache" "$bin/kiln-bench" overhead
                    done
                done
                step host-prof-new 40 env KILN_DEVICE=cuda KILN_CACHE_DIR="$BUILD_GPU/kernel-cache" "$BUILD_GPU/host-prof" assign 30000
                step host-prof-base 40 env KILN_DEVICE=cuda KILN_CACHE_DIR="$base/build-gpu/kernel-cache" \
                    "$base/build-gpu/host-prof" assign 30000
            else
                echo "== host-ab: no base tree $base (skipped)" | tee -a "$OUT/visit.txt"
            fi ;;
        row-ab) # ROW mode's reductions, this tree against AB_BASE (default ab-base, carried): both
            # trees' kiln-gpu-bench built side by side, then ROW_AB_ROUNDS (default 3) rounds that
            # alternate base and new on ROW_AB_CASES / ROW_AB_SIZES (bench/NOTES.md step 59 v59c)
            base=${AB_BASE:-$ROOT/ab-base}
            if [ -d "$base" ]; then
                reduction_build row-ab &
                { cmake -S "$base" -B "$base/build-gpu" -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a &&
                    cmake --build "$base/build-gpu" -j8 --target kiln-gpu-bench; } >"$OUT/row-ab-build-base.txt" 2>&1 &
                wait
                export KILN_DEVICE=cuda
                for r in $(seq 1 "${ROW_AB_ROUNDS:-3}"); do
                    for t in base new; do
                        bin=$BUILD_GPU; [ $t = base ] && bin=$base/build-gpu
                        step "row-ab-$r-$t" 90 env KILN_CACHE_DIR="$bin/kernel-cache" "$bin/kiln-gpu-bench" \
                            --only "${ROW_AB_CASES:-batchnorm A in place,prod(A,1),var(A,1),sum(A)}" \
                            --sizes "${ROW_AB_SIZES:-8192x8192,4096x1024,65536x1024}"
                    done
                done
                unset KILN_DEVICE
            else
                echo "== row-ab: no base tree $base (skipped)" | tee -a "$OUT/visit.txt"
            fi ;;
        rowfill) # ROW mode's 16-bit rows with f32's bytes a worker (KILN_REDUCE_ROWFILL=1, codegen.c
            # row_fill; NOTES step 57): test_cuda_backend's section reductions (its rowfill cases) plain
            # and under memcheck, then --ab KILN_REDUCE_ROWFILL=0,1 on the row reductions
            reduction_build rowfill
            step rowfill-tests 120 env KILN_CUDA_TEST=reductions,batchnorm "$BUILD_GPU/test_cuda_backend"
            step rowfill-ab 150 "$BUILD_GPU/kiln-gpu-bench" --ab KILN_REDUCE_ROWFILL=0,1 \
                --only 'var(A,1),batchnorm A in place,sum(A)' \
                --sizes 8192x8192,65536x1024,1024x65536,4096x4096,256x8192,32768x4096,16384x2048
            reduction_sanitizers rowfill reductions 120
            unset KILN_DEVICE KILN_CACHE_DIR ;;
        seg) # ROW mode's short rows on W lanes of a warp (KILN_REDUCE_SEG, codegen.c row_segments; NOTES
            # step 61): test_cuda_backend's sections seg (short rows against the CPU, bits a row, the
            # knob), reductions, batchnorm, welford and split, then --ab KILN_REDUCE_SEG=0,1 on short and
            # long rows, then the seg section under memcheck and racecheck
            reduction_build seg
            step seg-tests 240 env KILN_CUDA_TEST=seg,reductions,batchnorm,welford,split "$BUILD_GPU/test_cuda_backend"
            step seg-ab 200 "$BUILD_GPU/kiln-gpu-bench" --ab KILN_REDUCE_SEG=0,1 \
                --only 'softmax(A,1),batchnorm A in place,var(A,1),prod(A,1)' \
                --sizes 1048576x32,4194304x8,262144x100,131072x36,65536x500,65536x512,65536x1024
            reduction_sanitizers seg seg 120
            unset KILN_DEVICE KILN_CACHE_DIR ;;
        rowsmem) # ROW mode's row cache in shared memory (KILN_REDUCE_SMEM, codegen.c row_cache; NOTES
            # steps 67-68): test_cuda_backend's sections rowsmem (both forms: =tile and the block rule,
            # unset), keep, rdiv, shift, reductions, batchnorm and split, then --ab KILN_REDUCE_SMEM=0,tile,1
            # (off, the 1024-thread form, the rule) on language-model rows, the same cases unset (the
            # rule), the torch peer's softmax on the same rows,
            # then the rowsmem section under memcheck and racecheck
            reduction_build rowsmem
            step rowsmem-tests 300 env KILN_CUDA_TEST=rowsmem,keep,rdiv,shift,reductions,batchnorm,split \
                "$BUILD_GPU/test_cuda_backend"
            rows=2048x50257,4096x32000,4096x32001,256x50257,4096x24576,4096x16384,1024x128257
            step rowsmem-ab 200 "$BUILD_GPU/kiln-gpu-bench" --ab KILN_REDUCE_SMEM=0,tile,1 \
                --only 'softmax(A,1),batchnorm A in place' --sizes "$rows"
            step rowsmem-unset 100 "$BUILD_GPU/kiln-gpu-bench" --only 'softmax(A,1),batchnorm A in place' --sizes "$rows"
            step rowsmem-peer 120 python3 bench/peers/torch_expr.py --no-compile --only 'softmax(A,1)' --sizes "$rows"
            reduction_sanitizers rowsmem rowsmem 240
            unset KILN_DEVICE KILN_CACHE_DIR ;;
        keep) # ROW mode's computed values kept across passes (KILN_REDUCE_KEEP, codegen.c keep_values;
            # NOTES step 63): test_cuda_backend's sections keep, seg, reductions, batchnorm, welford,
            # split, rng and lanes, then --ab KILN_REDUCE_KEEP=0,1 on softmax and batch norm along rows,
            # then the keep section under memcheck and racecheck
            reduction_build keep
            step keep-tests 240 env KILN_CUDA_TEST=keep,seg,reductions,batchnorm,welford,split,rng,lanes \
                "$BUILD_GPU/test_cuda_backend"
            step keep-ab 200 "$BUILD_GPU/kiln-gpu-bench" --ab KILN_REDUCE_KEEP=0,1 \
                --only 'softmax(A,1),batchnorm A in place' \
                --sizes 8192x8192,65536x1024,4096x4096,16384x2048,1048576x32,262144x100
            reduction_sanitizers keep keep 120
            unset KILN_DEVICE KILN_CACHE_DIR ;;
        row-ncu) # Nsight Compute on ROW mode's f16 reductions (ROW_NCU_CASES, ';'-separated, default var(A,1)
            # and batch norm along rows; ROW_NCU_SIZES, space-separated, default 8192x8192; NOTES step 57),
            # one launch each, and their sources (a fresh kernel cache, packed into $OUT/row-ncu-cache.tgz)
            reduction_build row-ncu
            ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
            IFS=';' read -r -a ncu_cases <<<"${ROW_NCU_CASES:-var(A,1);batchnorm A in place}"
            for c in "${ncu_cases[@]}"; do
                for sz in ${ROW_NCU_SIZES:-8192x8192}; do
                    step "row-ncu-$(echo "$c-$sz" | tr -c 'a-zA-Z0-9\n' '_')" 90 "$ncu" --kernel-name regex:kiln_kernel \
                        --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
                        --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
                        --section InstructionStats "$BUILD_GPU/kiln-gpu-bench" --only "$c" --sizes "$sz" --dtype f16
                done
            done
            rm -rf "$OUT/row-ncu-cache" && mkdir -p "$OUT/row-ncu-cache"
            step row-ncu-sources 60 env KILN_CACHE_DIR="$OUT/row-ncu-cache" "$BUILD_GPU/kiln-gpu-bench" \
                --only "$(echo "${ROW_NCU_CASES:-var(A,1);batchnorm A in place}" | tr ';' ',')" \
                --sizes "$(echo "${ROW_NCU_SIZES:-8192x8192}" | tr ' ' ',')" --dtype f16
            tar czf "$OUT/row-ncu-cache.tgz" -C "$OUT" row-ncu-cache && rm -rf "$OUT/row-ncu-cache"
            unset KILN_DEVICE KILN_CACHE_DIR ;;
        gemm-sweep) # tile width x k splits x epilogue store per shape: the data for the tile rule
            step gemm-sweep 300 "$BUILD_GPU/kiln-bench" gemm-sweep --dtype f16 ;;
        gemm-ncu) # Nsight Compute on one timed call of kiln's kernel and of cuBLASLt's, per shape in
            # NCU_SHAPES (default: fc4096 fprop, fc9216 update, one 128 x 128 x 64 tile): speed of
            # light, memory workload, warp states, DRAM bytes (ncu locks the clocks: compare
            # within a run). KILN_GEMM picks the engine; the warm-up call is launch 1.
            ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
            for shape in ${NCU_SHAPES:-128x4096x4096 9216x4096x128 128x128x64}; do
                step "ncu-own-$shape" 90 env KILN_DEVICE=cuda KILN_GEMM=own "$ncu" --kernel-name regex:kiln_gemm \
                    --launch-skip 1 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
                    --section WarpStateStats --metrics dram__bytes_read.sum,dram__bytes_write.sum \
                    "$BUILD_GPU/kiln-bench" gemm-one "$shape" --dtype f16
                step "ncu-vendor-$shape" 90 env KILN_DEVICE=cuda KILN_GEMM=vendor "$ncu" \
                    --kernel-name "regex:gemm|nvjet|xmma|sm90" --launch-skip 1 --launch-count 1 \
                    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
                    --metrics dram__bytes_read.sum,dram__bytes_write.sum "$BUILD_GPU/kiln-bench" gemm-one "$shape" --dtype f16
            done ;;
        examples)
            for e in gemm_fp16 variance_batchnorm rbm_gnumpy; do
                step "example-$e" 60 env KILN_DEVICE=cuda PYTHONPATH="$BUILD_GPU/python" python3 "examples/$e.py"
            done ;;
        sanitizer)
            step sanitizer 600 env MODES="memcheck racecheck" TABLE_SUFFIX=-san TEST_TIMEOUT=240 "$ROOT/tools/test-gpu.sh" ;;
        *) echo "gpu-visit: unknown step '$s'" >&2; exit 2 ;;
    esac
done
cat "$OUT/visit.txt"
cat "$OUT"/table*.txt 2>/dev/null
