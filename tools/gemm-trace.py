#!/usr/bin/env python3
"""tools/gemm-trace.py - where the time of one wgmma GEMM launch goes, phase by phase.

A diagnostic for kernel work on a GPU machine, not part of the library: it copies the
working tree, writes %globaltimer stamps into the copy's kernel source
(src/cuda/gemm_wgmma_kernel.cuh; in trees before 2026-11-27's thirtieth session, the C string
literals of src/cuda/gemm_wgmma.c), builds it, runs `kiln-bench gemm --only CASE`, and summarizes
the stamps. The library itself is never changed.

Stamps, per block, in ns of the GPU's global timer (thread 0 for the first three, the first
consumer's leader for the rest): entry, after griddepcontrol.wait (set-up done), the
producer's first load issued, the first full stage of the first item (first load latency),
the first item's mainloop end, the end of a split tile's wait for the other partials (the
block that sums), the last epilogue's end (before the final TMA-store wait), exit. The
device's printf prints them for three consecutive launches (by a counter of finished blocks
in the module, taken at the exit so that its atomic's round trip is in no phase: launches
LAUNCH .. LAUNCH + 2, far enough into the benchmark's timed runs); printing makes those
launches' neighbours wait, so the report shows a launch on an otherwise idle GPU, not its
overlap with the next.

  python3 tools/gemm-trace.py run "fc4096 fprop" ["fc9216 fprop" | 128x4096x1024 ...] [--dtype f16]
                                 [--epilogue bias,relu,sr]
                                 [--launch 1000] [--clock] [--tree DIR]
  python3 tools/gemm-trace.py patch FILE [--launch 1000] [--clock]  (the source edit alone)
  python3 tools/gemm-trace.py report LOG [--pairs] [--clock]         (the summary of a saved log)

A case is a name from the gemm table (`kiln-bench gemm --only`) or a shape MxNxK (`kiln-bench
gemm-one`, A (M, K) @ B (K, N); --epilogue gives the shapes gemm-one's epilogue, and takes only
shapes). --clock stamps the SM's clock64 instead of the global timer: each block's phases are
then counted in its own SM's cycles from its own entry (cycles compare with tools/ring-rate.cu's;
blocks on different SMs do not compare with each other), and the report adds the first item's cycles
from the end of set-up (the producer's first load) to the mainloop's end.
Phases bound by memory take more cycles at a higher SM clock, and the clock moves between runs
(1 275-1 980 MHz on the H100): compare cycles of phases that wait on memory only within one run.
--tree DIR traces another source tree (a `git archive` of a branch, say) with this tool's patch.

Used on the H100 on 2026-11-25 (bench/NOTES.md step 12): fc4096 fprop spent ~2 us before its
first stage, 12.4 us streaming, then 4.5 us in the split-K sum and store.
"""
import os
import re
import shutil
import statistics
import subprocess
import sys

# where the kernel's source is, and whether as C string literals (trees before the thirtieth
# session) or as the plain file; main() picks the form the traced tree has
FORMS = (("src/cuda/gemm_wgmma_kernel.cuh", False), ("src/cuda/gemm_wgmma.c", True))
SRC, LITERAL = FORMS[0]
# the phases in time order, each with its stamp's place in a KG_TRACE line
PHASES = [("entry", 0), ("set-up", 1), ("first load", 7), ("first stage", 2), ("mainloop", 3), ("split wait", 4),
          ("epilogue", 5), ("exit", 6)]


def kernel_line(text):
    """One line of the kernel source as the file holds it (LITERAL: as a C string literal)."""
    if LITERAL:
        return '    "' + text.replace("\\", "\\\\").replace('"', '\\"') + '\\n"\n'
    return text + "\n"


def anchor(text):
    """What finds the whole line `text` in the source (in the plain file, with the newline before
    it, so that a line ending the same way does not match)."""
    return kernel_line(text) if LITERAL else "\n" + kernel_line(text)


def insert_before(src, key, lines):
    """src with lines inserted before the anchor key."""
    lead = "" if LITERAL else "\n"
    return src.replace(key, lead + "".join(kernel_line(x) for x in lines) + key[len(lead):])


def patch_source(src, launch, clock=False):
    """The kernel source with the stamps (global timer ns, or with clock SM cycles); fails loudly
    where the kernel's source has moved on."""
    def after(line, lines):
        nonlocal src
        old = anchor(line)
        if src.count(old) != 1:
            sys.exit("gemm-trace: the anchor %r is in %s %d times (want 1): update the tool" % (line, SRC, src.count(old)))
        src = src.replace(old, old + "".join(kernel_line(x) for x in lines))

    signature = 'extern "C" __global__ void __launch_bounds__(NT, 1) kiln_gemm_wgmma('
    kernel = '    "' + signature.replace('"', '\\"') if LITERAL else "\n" + signature
    if src.count(kernel) != 1:
        sys.exit("gemm-trace: the kernel's signature is not in %s once: update the tool" % SRC)
    src = insert_before(src, kernel, [
        "__device__ unsigned kg_tr_blocks; /* gemm-trace: blocks finished, over every launch */",
        "__device__ __forceinline__ unsigned long long kg_tr_now() {",
        "  unsigned long long t;",
        ('  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));' if clock else
         '  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));'),
        "  return t;",
        "}",
    ])
    after("  const int tid = (int)threadIdx.x, wg = tid >> 7;", [
        "  __shared__ unsigned long long kg_tr[8];",
        "  if (tid == 0) {",
        "    for (int i = 1; i < 8; i++) kg_tr[i] = 0;",
        "    kg_tr[0] = kg_tr_now();",
        "  }",
    ])
    after("  kg_grid_dep(); /* the barriers and the maps' prefetch above overlap the previous kernel */",
          ["  if (tid == 0) kg_tr[1] = kg_tr_now();"])
    # the consumer's full-stage wait: main's loop over every slice, or the loop over its own slices
    # (branch wip/own-slices), each with the test for its item's first slice
    waits = [("      kg_bar_wait(full0 + 8 * s, (it / STAGES) & 1);", "kt == kb"),
             ("      kg_bar_wait(full0 + 8 * s, ph);", "j == j0")]
    found = [(a, first) for a, first in waits if src.count(anchor(a)) == 1]
    if not found:
        sys.exit("gemm-trace: no known full-stage wait is in %s once: update the tool" % SRC)
    after(found[0][0], ["      if (tid == 128 && local == 0 && %s) kg_tr[2] = kg_tr_now();" % found[0][1]])
    # the producer's first load issued (A's first box, K-major or not)
    # (through the slices lambda's map ma since the edge boxes, NOTES step 35; &p.ta before)
    forms = [[pad + "kg_tma(sa, %s, k0, m0, ab, full);" % m,
              pad + "for (int c = 0; c < BM / 64; c++) kg_tma(sa + c * CHUNK, %s, m0 + 64 * c, k0, ab, full);" % m]
             for pad, m in ((" " * 14, "ma"), (" " * 12, "&p.ta"))]
    loads = next((f for f in forms if all(src.count(anchor(x)) == 1 for x in f)), forms[0])
    for load in loads:
        after(load, ["            if (kg_tr[7] == 0) kg_tr[7] = kg_tr_now();"])
    after("    kg_wg_wait<0>();", ["    if (tid == 128 && local == 0) kg_tr[3] = kg_tr_now();"])
    after("        counters[tile] = 0; /* every other block is through: zero again for the next launch */",
          ["        kg_tr[4] = kg_tr_now();"])
    end = anchor("  if (TMA_STORE && leader) kg_bulk_wait_read<0>();")
    if src.count(end) != 1:
        sys.exit("gemm-trace: the final store wait is not in %s once: update the tool" % SRC)
    src = insert_before(src, end, ["  if (tid == 128) kg_tr[5] = kg_tr_now();"])
    closing = anchor("  if constexpr (MC) kg_cluster_sync(); /* (the producer's) */")
    last = closing + ('    "}\\n";' if LITERAL else "}\n")
    if src.count(last) != 1:
        sys.exit("gemm-trace: the kernel's end is not in %s once: update the tool" % SRC)
    src = src.replace(last, closing + "".join(
        kernel_line(x) for x in [
            "  if (tid == 128) {",
            "    kg_tr[6] = kg_tr_now();",
            "    const unsigned kg_tr_launch = atomicAdd(&kg_tr_blocks, 1u) / gridDim.x;",
            "    unsigned sm;",
            '    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));',
            "    if (kg_tr_launch >= %du && kg_tr_launch < %du)" % (launch, launch + 3),
            '      printf("KG_TRACE %u %u %u %llu %llu %llu %llu %llu %llu %llu %llu %lld\\n", kg_tr_launch, blockIdx.x,',
            "             sm, kg_tr[0], kg_tr[1], kg_tr[2], kg_tr[3], kg_tr[4], kg_tr[5], kg_tr[6], kg_tr[7], local);",
            "  }",
        ]) + last[len(closing):])
    return src


def parse(lines):
    """{launch: [(block, sm, stamps[8], items)]} from the KG_TRACE lines."""
    launches = {}
    for line in lines:
        f = line.split()
        if len(f) != 13 or f[0] != "KG_TRACE":
            continue
        launches.setdefault(int(f[1]), []).append((int(f[2]), int(f[3]), [int(x) for x in f[4:12]], int(f[12])))
    return launches


def report_clock(launches, out):
    """Per block, its own SM's cycles from its own entry; medians over the blocks."""
    for launch in sorted(launches):
        rows = launches[launch]
        out.write("launch %d: %d blocks (SM cycles from each block's own entry)\n" % (launch, len(rows)))
        out.write("  %-12s %8s %8s %8s  (blocks with the stamp)\n" % ("phase", "min", "median", "max"))
        for name, i in PHASES:
            v = sorted(r[2][i] - r[2][0] for r in rows if r[2][i])
            if v:
                out.write("  %-12s %8d %8d %8d  (%d)\n" % (name, v[0], statistics.median(v), v[-1], len(v)))
        v = sorted(r[2][3] - r[2][1] for r in rows if r[2][1] and r[2][3])
        if v:
            out.write("  first item, set-up to mainloop end: median %d cycles (min %d, max %d)\n" % (
                statistics.median(v), v[0], v[-1]))
    return 0


def report(lines, pairs=False, out=sys.stdout, clock=False):
    launches = parse(lines)
    if not launches:
        out.write("gemm-trace: no KG_TRACE lines (the case ran fewer launches than --launch + 3, or failed)\n")
        return 1
    if clock:
        return report_clock(launches, out)
    for launch in sorted(launches):
        rows = launches[launch]
        t0 = min(r[2][0] for r in rows)
        span = max(r[2][6] for r in rows) - t0
        out.write("launch %d: %d blocks, %.2f us from the first entry to the last exit\n" % (launch, len(rows), span / 1e3))
        out.write("  %-12s %8s %8s %8s  (us after the first entry; blocks with the stamp)\n" % ("phase", "min", "median", "max"))
        for name, i in PHASES:
            v = sorted((r[2][i] - t0) / 1e3 for r in rows if r[2][i])
            if v:
                out.write("  %-12s %8.2f %8.2f %8.2f  (%d)\n" % (name, v[0], statistics.median(v), v[-1], len(v)))
        if pairs:
            for block, sm, t, items in sorted(rows):
                out.write("  block %4d sm %3d items %d: %s\n" % (block, sm, items, " ".join(
                    "%7.2f" % ((t[i] - t0) / 1e3) if t[i] else "      -" for _, i in PHASES)))
    return 0


def take_option(argv, name, default):
    """The value after name in argv (removing both), else default."""
    if name not in argv:
        return default
    i = argv.index(name)
    if i + 1 >= len(argv):
        sys.exit("gemm-trace: %s takes a value" % name)
    value = argv[i + 1]
    del argv[i:i + 2]
    return value


def main(argv):
    launch = int(take_option(argv, "--launch", "1000"))
    clock = "--clock" in argv
    if clock:
        argv.remove("--clock")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = os.path.abspath(take_option(argv, "--tree", root))
    global SRC, LITERAL
    forms = [f for f in FORMS if os.path.isfile(os.path.join(root, f[0]))]
    if not forms:
        sys.exit("gemm-trace: --tree %s has neither %s" % (root, " nor ".join(f[0] for f in FORMS)))
    SRC, LITERAL = forms[0]
    if len(argv) >= 2 and argv[0] == "patch":
        SRC, LITERAL = argv[1], argv[1].endswith(".c")
        with open(argv[1]) as f:
            src = f.read()
        with open(argv[1], "w") as f:
            f.write(patch_source(src, launch, clock))
        return 0
    if len(argv) >= 2 and argv[0] == "report":
        with open(argv[1]) as f:
            return report(f.readlines(), pairs="--pairs" in argv, clock=clock)
    if len(argv) >= 2 and argv[0] == "run":
        dtype = take_option(argv, "--dtype", "f16")
        epilogue = take_option(argv, "--epilogue", None)
        named = [c for c in argv[1:] if not re.fullmatch(r"\d+x\d+x\d+", c)]
        if epilogue and named:
            sys.exit("gemm-trace: --epilogue takes shapes MxNxK only, not the gemm table's %r" % named[0])
        work = "/tmp/kiln-gemm-trace"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(root, work, ignore=shutil.ignore_patterns("build*", ".venv", ".git"))
        path = os.path.join(work, SRC)
        with open(path) as f:
            src = f.read()
        with open(path, "w") as f:
            f.write(patch_source(src, launch, clock))
        build = os.path.join(work, "build-trace")
        subprocess.run(["cmake", "-S", work, "-B", build, "-DKILN_CUDA=ON", "-DKILN_CUDA_ARCH=90a"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", build, "-j", str(os.cpu_count() or 4), "--target", "kiln", "kiln-bench"],
                       check=True, stdout=subprocess.DEVNULL)
        status = 0
        for case in argv[1:]:
            shape = re.fullmatch(r"\d+x\d+x\d+", case)
            cmd = ["gemm-one", case, "--dtype", dtype] if shape else ["gemm", "--dtype", dtype, "--only", case]
            if shape and epilogue:
                cmd += ["--epilogue", epilogue]
            r = subprocess.run([os.path.join(build, "kiln-bench")] + cmd,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            lines = r.stdout.splitlines()
            print("== %s (%s)" % (case, dtype))
            for line in lines:
                if re.match(r"^\S.*\d+x\d+x\d+", line) and "KG_TRACE" not in line:
                    print(line)
            status |= report(lines, clock=clock) | r.returncode
        return status
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
