#!/usr/bin/env bash
# tools/test-gpu.sh — the GPU visit (make test-gpu): on a machine with an NVIDIA GPU, build
# kiln for sm_90a with the CUDA backend, run every test executable with KILN_DEVICE=cuda
# (and with KILN_DEVICE=cpu for comparison), then again under compute-sanitizer (memcheck
# for all; racecheck for the reduction-heavy tests), and print a table:
#   test  backend  mode  result  seconds
# Results: pass / FAIL(rc) / skip (exit 77). Logs go to <build>/gpu-logs; when $OUT is set
# (the device machine's output folder) they are packed into $OUT/gpu-logs.tgz with the
# table in $OUT/table.txt. Exit status 1 when anything failed.
# Environment: BUILD_GPU (build dir, default build-gpu), MODES (default
# "cuda python memcheck racecheck"; also "cpu"; python = the pytest suite on the CUDA
# backend with the machine's python3), RACECHECK_TESTS (default "test_cuda_backend", its
# RACECHECK_SECTIONS only: reductions,batchnorm,split,lanes,welford),
# TESTS (which test programs; default all), PAR (runs at once, default the cores, at least 8), JOBS (build parallelism), TEST_TIMEOUT (seconds per run, default 600),
# CUDA_SECTIONS (test_cuda_backend runs as one process per section, plain and under memcheck,
# default every section its KILN_CUDA_TEST=list prints),
# DOT_SECTIONS (test_dot under memcheck runs as one process per section of its suite, the
# device passes only: whole, it does not finish in a visit; default all nine sections),
# KILN_TEST_ENGINES (test_dot's GEMM engines, default "vendor own mma reference"; test_dot runs
# as one process per engine, and under memcheck one per engine and section, so that their
# NVRTC compiles spread over the cores: in one process the four did not finish in a visit),
# EMU_PARTS (test_gemm_emu runs as that many processes, KILN_EMU_PART=i/n, default 4: whole it
# took 269-470 s by host, most of it compiling its emulated kernels one after another).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_GPU:-$ROOT/build-gpu}
LOG=$BUILD/gpu-logs
MODES=${MODES:-"cuda python memcheck racecheck"}
RACECHECK_TESTS=${RACECHECK_TESTS:-"test_cuda_backend"}
# racecheck is slow: only the sections of test_cuda_backend that launch reduction kernels
RACECHECK_SECTIONS=${RACECHECK_SECTIONS:-"reductions,batchnorm,split,lanes,welford"}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
DOT_SECTIONS=${DOT_SECTIONS:-"sizes tiles layouts epilogue batches empty broadcast stats sr"}
EMU_PARTS=${EMU_PARTS:-4}
DOT_ENGINES=$(echo "${KILN_TEST_ENGINES:-vendor own mma reference}" | tr ',' ' ')
mkdir -p "$LOG"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$LOG/device.txt" 2>&1 || true
echo "device: $(cat "$LOG/device.txt")"
if ! cmake -S "$ROOT" -B "$BUILD" -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a -DKILN_WERROR=ON >"$LOG/configure.log" 2>&1; then
    cat "$LOG/configure.log"; exit 1
fi
build_failed=0
if ! cmake --build "$BUILD" -j "$JOBS" -- -k >"$LOG/build.log" 2>&1; then
    # keep going: run whatever test executables did build, and report the failure
    grep -E "error|Error" "$LOG/build.log" | head -30
    build_failed=1
fi
echo "built in $BUILD (build failed: $build_failed)"

# One shared kernel cache for the visit: the first run compiles, later runs hit the disk.
export KILN_CACHE_DIR=${KILN_CACHE_DIR:-$BUILD/kernel-cache}
TESTS=${TESTS:-$(cd "$BUILD" && ls test_* 2>/dev/null | grep -v '\.' | sort)}
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
TABLE="$LOG/table${TABLE_SUFFIX:-}.txt"
printf '%-28s %-7s %-10s %-10s %8s\n' test backend mode result seconds >"$TABLE"
[ "$build_failed" = 1 ] && printf '%-28s %-7s %-10s %-10s %8s\n' "(build)" - - FAIL - >>"$TABLE"
fail=$build_failed
# Runs go PAR at a time (default the cores, at least 8): most of a GPU test's time is NVRTC compiling its
# kernels on the host, and the shared disk cache makes the second mode cheap.
PAR=${PAR:-$(n=$(nproc 2>/dev/null || echo 8); [ "$n" -gt 8 ] && echo "$n" || echo 8)}

run_one() { # name backend mode cmd... : one run; its table row goes to $LOG/name.mode.row
    local name=$1 backend=$2 mode=$3; shift 3
    local logf="$LOG/$name.$mode.log" t0 t1 rc res
    t0=$(date +%s.%N)
    (cd "$BUILD" && KILN_DEVICE=$backend timeout "$TEST_TIMEOUT" "$@") >"$logf" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    case $rc in
        0) res=pass ;;
        77) res=skip ;;
        124) res="TIMEOUT" ;;
        *) res="FAIL($rc)" ;;
    esac
    printf '%-28s %-7s %-10s %-10s %8.1f\n' "$name" "$backend" "$mode" "$res" "$(awk "BEGIN{print $t1 - $t0}")" \
        | tee "$LOG/$name.$mode.row"
}
launch() {
    while [ "$(jobs -rp | wc -l)" -ge "$PAR" ]; do wait -n; done
    run_one "$@" &
}

# --require-cuda-init no: tests that never touch the GPU (test_plan on the CPU parts,
# test_cpu_exec) are not an error for the sanitizer; --target-processes application-only:
# the test alone, not the processes it starts.
# HOST_ONLY: tests that run no CUDA at all and start processes of their own (test_gemm_emu
# compiles each emulated kernel with the C++ compiler) or only compile (test_gemm_nvrtc: the
# kernels through NVRTC): the sanitizer has nothing to check there, and on 2026-11-24 it
# failed such a run whose cases all passed ("No attachable process found", exit 255, also with
# application-only), so they get a skip row instead.
HOST_ONLY=${HOST_ONLY:-"test_gemm_emu test_gemm_nvrtc"}
skip_row() { # name mode : a skip row for a run that does not happen, and why
    echo "host-only test: not run under compute-sanitizer (tools/test-gpu.sh, HOST_ONLY)" >"$LOG/$1.$2.log"
    printf '%-28s %-7s %-10s %-10s %8s\n' "$1" cuda "$2" skip 0.0 | tee "$LOG/$1.$2.row"
}
MEMCHECK="$SAN --tool memcheck --target-processes application-only --require-cuda-init no --report-api-errors no --leak-check no --error-exitcode 99"
RACECHECK="$SAN --tool racecheck --target-processes application-only --require-cuda-init no --racecheck-report all --error-exitcode 99"
PYTEST_PAR=""
if python3 -c "import xdist" 2>/dev/null; then PYTEST_PAR="-n $PAR"; fi
rm -f "$LOG"/*.row
ROWS=""
for mode in $MODES; do
    if [ "$mode" = python ]; then
        # the Python package against this build, with the machine's own python3 (numpy,
        # pytest, PyTorch and CuPy: the interop tests run), on the CUDA backend
        launch pytest cuda python env BUILD="$BUILD" KILN_PY_VENV=0 KILN_DEVICE=cuda PYTEST_ARGS="-rs $PYTEST_PAR" \
            "$ROOT/tools/python-test.sh"
        ROWS="$ROWS pytest.python"
        continue
    fi
    for t in $TESTS; do
        case $mode in
            cpu) launch "$t" cpu cpu "./$t"; ROWS="$ROWS $t.cpu" ;;
            cuda)
                if [ "$t" = test_dot ]; then # a process per engine; the first also runs the CPU pass
                    first=1
                    for eng in $DOT_ENGINES; do
                        if [ $first = 1 ]; then
                            launch "test_dot:$eng" cuda plain env KILN_TEST_ENGINES="$eng" ./test_dot
                        else
                            launch "test_dot:$eng" cuda plain env KILN_TEST_DEVICE_ONLY=1 KILN_TEST_ENGINES="$eng" ./test_dot
                        fi
                        first=0
                        ROWS="$ROWS test_dot:$eng.plain"
                    done
                elif [ "$t" = test_gemm_emu ] && [ "$EMU_PARTS" -gt 1 ]; then # host only: its cases in parts
                    seed=${KILN_TEST_SEED:-$(date +%s)} # one seed: the parts divide one set of random cases
                    for ((p = 0; p < EMU_PARTS; p++)); do
                        launch "test_gemm_emu:part$p" cuda plain env KILN_TEST_SEED="$seed" KILN_EMU_PART="$p/$EMU_PARTS" \
                            ./test_gemm_emu
                        ROWS="$ROWS test_gemm_emu:part$p.plain"
                    done
                elif [ "$t" = test_cuda_backend ] && secs=$(cd "$BUILD" && KILN_CUDA_TEST=list ./test_cuda_backend) &&
                    [ -n "$secs" ]; then # a process per section (whole, 382 s on an H200: the visit's longest)
                    for sec in ${CUDA_SECTIONS:-$secs}; do
                        launch "test_cuda_backend:$sec" cuda plain env KILN_CUDA_TEST="$sec" ./test_cuda_backend
                        ROWS="$ROWS test_cuda_backend:$sec.plain"
                    done
                else
                    launch "$t" cuda plain "./$t"; ROWS="$ROWS $t.plain"
                fi ;;
            memcheck)
                case " $HOST_ONLY " in
                    *" $t "*) skip_row "$t" memcheck; ROWS="$ROWS $t.memcheck" ;;
                    *)
                        if [ "$t" = test_dot ]; then # a process per section and engine
                            for sec in $DOT_SECTIONS; do
                                for eng in $DOT_ENGINES; do
                                    launch "test_dot:$sec:$eng" cuda memcheck env KILN_TEST_DEVICE_ONLY=1 \
                                        KILN_TEST_SECTIONS="$sec" KILN_TEST_ENGINES="$eng" $MEMCHECK ./test_dot
                                    ROWS="$ROWS test_dot:$sec:$eng.memcheck"
                                done
                            done
                        elif [ "$t" = test_cuda_backend ] && secs=$(cd "$BUILD" && KILN_CUDA_TEST=list ./test_cuda_backend) &&
                            [ -n "$secs" ]; then # a process per section (whole, it ran past 330 s on an H200)
                            for sec in ${CUDA_SECTIONS:-$secs}; do
                                launch "test_cuda_backend:$sec" cuda memcheck env KILN_CUDA_TEST="$sec" $MEMCHECK ./test_cuda_backend
                                ROWS="$ROWS test_cuda_backend:$sec.memcheck"
                            done
                        else
                            launch "$t" cuda memcheck $MEMCHECK "./$t"
                            ROWS="$ROWS $t.memcheck"
                        fi ;;
                esac ;;
            racecheck)
                case " $RACECHECK_TESTS " in *" $t "*) ;; *) continue ;; esac
                case " $HOST_ONLY " in *" $t "*) skip_row "$t" racecheck; ROWS="$ROWS $t.racecheck"; continue ;; esac
                launch "$t" cuda racecheck env KILN_CUDA_TEST="$RACECHECK_SECTIONS" $RACECHECK "./$t"
                ROWS="$ROWS $t.racecheck" ;;
            *) echo "test-gpu: unknown mode '$mode'" >&2; exit 2 ;;
        esac
    done
done
wait
for r in $ROWS; do
    if [ -f "$LOG/$r.row" ]; then cat "$LOG/$r.row" >>"$TABLE"; else printf '%-28s %-7s %-10s %-10s %8s\n' "${r%.*}" - "${r##*.}" "LOST" - >>"$TABLE"; fi
done
grep -q -E "FAIL|TIMEOUT|LOST" "$TABLE" && fail=1
# the failing logs' tails, then the table last (it is what a reader sees first)
for f in "$LOG"/*.log; do
    case $f in *configure.log|*build.log) continue ;; esac
    if grep -q -E " [1-9][0-9]* failed$|FAILED|ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: [1-9]" "$f" 2>/dev/null; then
        echo "---- $(basename "$f") (tail)"; grep -E "failed|err|ERROR|Invalid|race" "$f" | head -20
    fi
done
if [ -n "${OUT:-}" ]; then
    tar czf "$OUT/gpu-logs${TABLE_SUFFIX:-}.tgz" -C "$BUILD" gpu-logs 2>/dev/null
    cp "$TABLE" "$OUT/$(basename "$TABLE")"
fi
echo
cat "$TABLE"
exit $fail
