#!/bin/bash
# tools/gemm-sass.sh - registers, spills and the mainloop of the GEMM kernel kiln would build
# for one product (wgmma; mma.sync or FFMA with gemm-src's --kernel), from its generated
# source, on any machine with nvcc and a disassembler (no GPU).
#
# A diagnostic for kernel work. tools/gemm-src (built with kiln) writes the tile rule's kernel
# source; nvcc compiles it as NVRTC does (sm_90a, --fmad=false, C++17) with ptxas's report;
# cuobjdump disassembles it. The script prints the report's registers and spills and counts
# the consumer's instructions from the mainloop's full-barrier wait to its first wgmma
# (HGMMA), the work between a stage's arrival and its multiply. A kernel change that leaves
# the registers and spills alone can still put work there: EARLY_SR's kernels had ~20
# instructions more there and ran 2-7 % slower (bench/NOTES.md step 43). For the tiled
# kernels (mma.sync, FFMA) it counts their main loop (the backward branch around the first
# HMMA or FFMA): instructions, multiplies and local-memory reloads (LDL: spills read back
# every k step; bench/NOTES.md step 51).
#
#   tools/gemm-sass.sh MxNxK [gemm-src's options: --kernel, --dtype, --epilogue, --bt, --sms, --opt ...]
#   SHOW=1 tools/gemm-sass.sh ...   also prints that stretch of SASS
#   ARCH=sm_80 tools/gemm-sass.sh MxNxK --kernel mma ...   another target (default sm_90a)
#
# BUILD (default build) holds gemm-src; KEEP=DIR keeps the .cu, .cubin and .sass there.
# The disassembler: $CUOBJDUMP, else cuobjdump on the PATH or beside nvcc. Machines without
# one (the CUDA image on the GPU machines has it) can take the one in NVIDIA's wheel:
# `python3 -m pip download --no-deps nvidia-cuda-cuobjdump`, unzip it, and use
# nvidia/cu13/bin/cuobjdump (or Triton's: triton/backends/nvidia/bin/cuobjdump).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
[ $# -ge 1 ] || { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ -x "$BUILD/gemm-src" ] || { echo "gemm-sass: no $BUILD/gemm-src (build kiln first: make build)" >&2; exit 2; }
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$NVCC" ] || { echo "gemm-sass: no nvcc (set NVCC)" >&2; exit 2; }
DIS=${CUOBJDUMP:-$(command -v cuobjdump || echo "$(dirname "$NVCC")/cuobjdump")}
[ -x "$DIS" ] || { echo "gemm-sass: no cuobjdump (set CUOBJDUMP; see the top of this script)" >&2; exit 2; }
WORK=${KEEP:-$(mktemp -d)}
mkdir -p "$WORK"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT

"$BUILD/gemm-src" "$@" >"$WORK/k.cu"
"$NVCC" -arch="${ARCH:-sm_90a}" -cubin --fmad=false -std=c++17 -w -Xptxas -v -o "$WORK/k.cubin" "$WORK/k.cu" 2>"$WORK/ptxas.txt" ||
    { cat "$WORK/ptxas.txt" >&2; exit 1; }
grep -E "registers|spill" "$WORK/ptxas.txt" | sed 's/^ *ptxas info *: */  /; s/^ */  /'
"$DIS" --dump-sass "$WORK/k.cubin" 2>/dev/null | grep -E '^ +/\*[0-9a-f]{4,}\*/' | sed -E 's/ +/ /g; s/ ;.*$//' >"$WORK/k.sass"
if ! grep -q 'HGMMA' "$WORK/k.sass"; then
    # a tiled kernel: the main loop is the backward branch's span around the first multiply
    python3 - "$WORK/k.sass" "${SHOW:-}" <<'PY'
import re, sys
ins = [l.strip() for l in open(sys.argv[1])]
addr = [int(re.match(r'/\*([0-9a-f]+)\*/', l).group(1), 16) for l in ins]
op = [re.sub(r'^/\*[0-9a-f]+\*/ (@!?U?P\w+ )?', '', l).split(' ')[0] for l in ins]
first = next((i for i, o in enumerate(op) if o.startswith(('HMMA', 'FFMA'))), None)
if first is None:
    sys.exit('gemm-sass: no HMMA or FFMA in the kernel')
loop = None
for j in range(first, len(ins)):
    m = re.search(r'BRA (?:`\()?0x([0-9a-f]+)', ins[j]) if op[j] == 'BRA' else None
    if m and int(m.group(1), 16) <= addr[first]:
        loop = (addr.index(int(m.group(1), 16)), j)
        break
if loop is None:
    sys.exit('gemm-sass: no backward branch around the first multiply')
body = op[loop[0]:loop[1] + 1]
count = lambda *p: sum(o.startswith(p) for o in body)
print(f"  {len(ins)} instructions; main loop {len(body)}: HMMA {count('HMMA')}, FFMA {count('FFMA')}, "
      f"LDSM {count('LDSM')}, LDS {count('LDS.')}, LDG/LDGSTS {count('LDG')}, LDL {count('LDL')}")
if sys.argv[2]:
    print('\n'.join(ins[loop[0]:loop[1] + 1]))
PY
    exit
fi
first=$(grep -n -m1 'HGMMA' "$WORK/k.sass" | cut -d: -f1 || true)
wait_line=$(head -n "$first" "$WORK/k.sass" | grep -n 'SYNCS.PHASECHK' | tail -1 | cut -d: -f1 || true)
[ -n "$wait_line" ] || { echo "gemm-sass: no full-barrier wait before the first HGMMA" >&2; exit 1; }
echo "  $(wc -l <"$WORK/k.sass") instructions; from the mainloop's wait to its first HGMMA: $((first - wait_line))"
if [ -n "${SHOW:-}" ]; then sed -n "${wait_line},${first}p" "$WORK/k.sass"; fi
