#!/usr/bin/env bash
# tools/gemm-ab-trees.sh — A/B of two source trees' GEMM kernels on one GPU, in one visit.
#
#   tools/gemm-ab-trees.sh BASE_TREE [ROUNDS] -- KILN_BENCH_ARGS...
#
# Builds BASE_TREE (another kiln source tree: the kernel before a change) and this tree for
# sm_90a side by side, then runs each one's `kiln-bench KILN_BENCH_ARGS` in turn, ROUNDS times
# (default 3), and prints every case's own-kernel times per round, their medians and
# new / base: of the gemm table's rows (`gemm ...`), or of gemm-epilogue's plain kernel and
# full epilogue (`gemm-epilogue --graph ...`, two cases a row). Both binaries meet the same
# clocks within a few seconds, which a table from an
# earlier visit cannot (the H100's clock moves 1 410-1 980 MHz and the tables 5-10 % with it).
# For a change an environment variable can switch, `kiln-bench gemm-ab VAR=v1,v2` needs one
# tree. Make BASE_TREE on the machine with the repository, e.g.
#   rm -rf ab-base && mkdir ab-base && git archive main | tar -x -C ab-base
# (ab-base/ is in .gitignore: name it in the device tool's carry). Example:
#   tools/gemm-ab-trees.sh ab-base 3 -- gemm --dtype f16 --only fprop
#   tools/gemm-ab-trees.sh ab-base 2 -- gemm-epilogue --graph --dtype f16,bf16 --only fc
# Logs: $OUT/ab-trees.log when $OUT is set (the device machine's output folder), else
# build-gpu/ab-trees.log. `tools/gemm-ab-trees.sh --parse LOG` reads such a log again (no build,
# no GPU).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 2 ]; then sed -n '2,21p' "$0"; exit 2; fi
parse() {
python3 - "$1" <<'EOF'
import re, statistics, sys
side, runs, order = None, {}, []
def case(key):  # a case's times per side, in the order the log first names them
    if key not in runs:
        runs[key] = {"base": [], "new": [], "vendor": []}
        order.append(key)
    return runs[key]
for line in open(sys.argv[1]):
    m = re.match(r"^== \d+ (base|new)$", line.strip())
    if m:
        side = m.group(1)
        continue
    # a gemm-epilogue row: name, dtype, M x N x K, own plain ms, +bias %, +relu %, +sr %, full ms,
    # cost %, vendor ms ...: two cases, the plain kernel and the full epilogue
    e = re.match(r"^(\S.*?)\s+(f16|bf16)\s+(\d+x\d+x\d+)\s+([\d.]+)\s+(?:-?[\d.]+%\s+){3}([\d.]+)\s+-?[\d.]+%"
                 r"\s+([\d.]+)", line)
    if e and side:
        for what, ms in (("plain", e.group(4)), ("full", e.group(5))):
            c = case("%s %s %s %s" % (e.group(1), e.group(2), e.group(3), what))
            c[side].append(float(ms))
            c["vendor"].append(float(e.group(6)))
        continue
    # a gemm row: name, dtype, M x N x K [B^T], then on a GPU vendor ms, TFLOP/s, own ms,
    # TFLOP/s, the ratio ...; on the CPU ms, GFLOP/s, the check
    m = re.match(r"^(\S.*?)\s+(f16|bf16|f32|f64)\s+(\d+x\d+x\d+(?: B\^T)?)\s+([\d.]+)\s+[\d.]+\s+(\S+)", line)
    if m and side:
        c = case("%s %s %s" % (m.group(1), m.group(2), m.group(3)))
        gpu = re.match(r"[\d.]+$", m.group(5)) is not None
        c[side].append(float(m.group(5) if gpu else m.group(4)))
        c["vendor"].append(float(m.group(4)) if gpu else float("nan"))
if not order:
    print("gemm-ab-trees: no gemm or gemm-epilogue rows in the log")
    sys.exit(1)
print("%-40s %-26s %-26s %9s %9s" % ("case", "base (ms)", "new (ms)", "new/base", "vendor"))  # vendor: GPU only
for k in order:
    b, n, v = runs[k]["base"], runs[k]["new"], runs[k]["vendor"]
    if b and n:
        print("%-40s %-26s %-26s %9.3f %9.4f" % (k, " ".join("%.4f" % x for x in b), " ".join("%.4f" % x for x in n),
                                               statistics.median(n) / statistics.median(b), statistics.median(v)))
EOF
}
if [ "$1" = --parse ]; then
    [ -f "$2" ] || { echo "gemm-ab-trees: --parse: no log file '$2'" >&2; exit 2; }
    parse "$2"
    exit
fi
BASE=$(cd "$1" && pwd) || exit 2
shift
ROUNDS=3
if [ "$1" != "--" ]; then ROUNDS=$1; shift; fi
[ "${1:-}" = "--" ] && shift
LOG=${OUT:-$ROOT/build-gpu}/ab-trees.log
mkdir -p "$(dirname "$LOG")"
: > "$LOG"
build() {
    cmake -S "$1" -B "$1/build-gpu" -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a >/dev/null &&
        cmake --build "$1/build-gpu" -j "$(nproc)" >"$1/build-gpu/ab-build.log" 2>&1 && return 0
    echo "gemm-ab-trees: the build of $1 failed (its build-gpu/ab-build.log):"
    tail -20 "$1/build-gpu/ab-build.log"
    return 1
}
build "$ROOT" & p1=$!
build "$BASE" & p2=$!
wait $p1 || exit 1
wait $p2 || exit 1
for r in $(seq "$ROUNDS"); do
    for side in base new; do
        tree=$ROOT
        [ $side = base ] && tree=$BASE
        echo "== $r $side" >>"$LOG"
        "$tree/build-gpu/kiln-bench" "$@" >>"$LOG" 2>&1
    done
done
parse "$LOG"
