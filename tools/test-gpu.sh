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
# "cpu cuda memcheck racecheck"), RACECHECK_TESTS (default "test_cuda_backend", its
# RACECHECK_SECTIONS only: reductions,batchnorm),
# JOBS (build parallelism), TEST_TIMEOUT (seconds per run, default 600).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_GPU:-$ROOT/build-gpu}
LOG=$BUILD/gpu-logs
MODES=${MODES:-"cpu cuda memcheck racecheck"}
RACECHECK_TESTS=${RACECHECK_TESTS:-"test_cuda_backend"}
# racecheck is slow: only the sections of test_cuda_backend that launch reduction kernels
RACECHECK_SECTIONS=${RACECHECK_SECTIONS:-"reductions,batchnorm"}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
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
TESTS=$(cd "$BUILD" && ls test_* 2>/dev/null | grep -v '\.' | sort)
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
TABLE="$LOG/table.txt"
printf '%-22s %-7s %-10s %-10s %8s\n' test backend mode result seconds >"$TABLE"
[ "$build_failed" = 1 ] && printf '%-22s %-7s %-10s %-10s %8s\n' "(build)" - - FAIL - >>"$TABLE"
fail=$build_failed

run_one() { # name backend mode cmd...
    local name=$1 backend=$2 mode=$3; shift 3
    local logf="$LOG/$name.$mode.log" t0 t1 rc res
    t0=$(date +%s.%N)
    (cd "$BUILD" && KILN_DEVICE=$backend timeout "$TEST_TIMEOUT" "$@") >"$logf" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    case $rc in
        0) res=pass ;;
        77) res=skip ;;
        124) res="TIMEOUT"; fail=1 ;;
        *) res="FAIL($rc)"; fail=1 ;;
    esac
    printf '%-22s %-7s %-10s %-10s %8.1f\n' "$name" "$backend" "$mode" "$res" "$(awk "BEGIN{print $t1 - $t0}")" | tee -a "$TABLE"
    if [ -n "${OUT:-}" ]; then cp "$TABLE" "$OUT/table.txt"; fi
}

for mode in $MODES; do
    for t in $TESTS; do
        case $mode in
            cpu) run_one "$t" cpu plain "./$t" ;;
            cuda) run_one "$t" cuda plain "./$t" ;;
            memcheck) run_one "$t" cuda memcheck "$SAN" --tool memcheck --report-api-errors no --leak-check no --error-exitcode 99 "./$t" ;;
            racecheck)
                case " $RACECHECK_TESTS " in *" $t "*) ;; *) continue ;; esac
                run_one "$t" cuda racecheck env KILN_CUDA_TEST="$RACECHECK_SECTIONS" "$SAN" --tool racecheck --racecheck-report all --error-exitcode 99 "./$t" ;;
        esac
    done
done
# the failing logs' tails, then the table last (it is what a reader sees first)
for f in "$LOG"/*.log; do
    case $f in *configure.log|*build.log) continue ;; esac
    if grep -q -E " [1-9][0-9]* failed$|FAILED|ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: [1-9]" "$f" 2>/dev/null; then
        echo "---- $(basename "$f") (tail)"; grep -E "failed|err|ERROR|Invalid|race" "$f" | head -20
    fi
done
if [ -n "${OUT:-}" ]; then
    tar czf "$OUT/gpu-logs.tgz" -C "$BUILD" gpu-logs 2>/dev/null
    cp "$TABLE" "$OUT/table.txt"
fi
echo
cat "$TABLE"
exit $fail
