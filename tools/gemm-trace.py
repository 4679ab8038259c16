#!/usr/bin/env python3
"""tools/gemm-trace.py - where the time of one wgmma GEMM launch goes, phase by phase.

A diagnostic for kernel work on a GPU machine, not part of the library: it copies the
working tree, writes %globaltimer stamps into the copy's kernel source
(src/cuda/gemm_wgmma.c), builds it, runs `kiln-bench gemm --only CASE`, and summarizes
the stamps. The library itself is never changed.

Stamps, per block, in ns of the GPU's global timer (thread 0 for the first two, the first
consumer's leader for the rest): entry, after griddepcontrol.wait (set-up done), the first
full stage of the first item (first load latency), the first item's mainloop end, the end
of a split tile's wait for the other partials (the block that sums), the last epilogue's
end (before the final TMA-store wait), exit. The device's printf prints them for three
consecutive launches (by a block counter in the module: launches LAUNCH .. LAUNCH + 2, far
enough into the benchmark's timed runs); printing makes those launches' neighbours wait,
so the report shows a launch on an otherwise idle GPU, not its overlap with the next.

  python3 tools/gemm-trace.py run "fc4096 fprop" ["fc9216 fprop" ...] [--dtype f16] [--launch 1000]
  python3 tools/gemm-trace.py patch FILE [--launch 1000]     (the source edit alone)
  python3 tools/gemm-trace.py report LOG [--pairs]            (the summary of a saved log)

Used on the H100 on 2026-11-25 (bench/NOTES.md step 12): fc4096 fprop spent ~2 us before its
first stage, 12.4 us streaming, then 4.5 us in the split-K sum and store.
"""
import os
import re
import shutil
import statistics
import subprocess
import sys

SRC = "src/cuda/gemm_wgmma.c"
PHASES = ["entry", "set-up", "first stage", "mainloop", "split wait", "epilogue", "exit"]


def kernel_line(text):
    """One line of the kernel source as the C string literal gemm_wgmma.c holds it."""
    return '    "' + text.replace("\\", "\\\\").replace('"', '\\"') + '\\n"\n'


def patch_source(src, launch):
    """The kernel source with the stamps; fails loudly where gemm_wgmma.c has moved on."""
    def after(anchor, lines):
        nonlocal src
        old = kernel_line(anchor)
        if src.count(old) != 1:
            sys.exit("gemm-trace: the anchor %r is in %s %d times (want 1): update the tool" % (anchor, SRC, src.count(old)))
        src = src.replace(old, old + "".join(kernel_line(x) for x in lines))

    kernel = '    "extern \\"C\\" __global__ void __launch_bounds__(NT, 1) kiln_gemm_wgmma('
    if src.count(kernel) != 1:
        sys.exit("gemm-trace: the kernel's signature is not in %s once: update the tool" % SRC)
    src = src.replace(kernel, "".join(kernel_line(x) for x in [
        "__device__ unsigned kg_tr_blocks; /* gemm-trace: blocks started, over every launch */",
        "__device__ __forceinline__ unsigned long long kg_tr_now() {",
        "  unsigned long long t;",
        '  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));',
        "  return t;",
        "}",
    ]) + kernel)
    after("  const int tid = (int)threadIdx.x, wg = tid >> 7;", [
        "  __shared__ unsigned long long kg_tr[7];",
        "  __shared__ unsigned kg_tr_launch;",
        "  if (tid == 0) {",
        "    for (int i = 1; i < 7; i++) kg_tr[i] = 0;",
        "    kg_tr[0] = kg_tr_now();",
        "    kg_tr_launch = atomicAdd(&kg_tr_blocks, 1u) / gridDim.x;",
        "  }",
    ])
    after("  kg_grid_dep(); /* the barriers and the maps' prefetch above overlap the previous kernel */",
          ["  if (tid == 0) kg_tr[1] = kg_tr_now();"])
    after("      kg_bar_wait(full0 + 8 * s, (it / STAGES) & 1);",
          ["      if (tid == 128 && local == 0 && kt == kb) kg_tr[2] = kg_tr_now();"])
    after("    kg_wg_wait<0>();", ["    if (tid == 128 && local == 0) kg_tr[3] = kg_tr_now();"])
    after("        counters[tile] = 0; /* every other block is through: zero again for the next launch */",
          ["        kg_tr[4] = kg_tr_now();"])
    end = kernel_line("  if (TMA_STORE && leader) kg_bulk_wait_read<0>();")
    if src.count(end) != 1:
        sys.exit("gemm-trace: the final store wait is not in %s once: update the tool" % SRC)
    src = src.replace(end, kernel_line("  if (tid == 128) kg_tr[5] = kg_tr_now();") + end)
    last = kernel_line("  if constexpr (MC) kg_cluster_sync(); /* (the producer's) */") + '    "}\\n";'
    if src.count(last) != 1:
        sys.exit("gemm-trace: the kernel's end is not in %s once: update the tool" % SRC)
    src = src.replace(last, kernel_line("  if constexpr (MC) kg_cluster_sync(); /* (the producer's) */") + "".join(
        kernel_line(x) for x in [
            "  if (tid == 128) {",
            "    kg_tr[6] = kg_tr_now();",
            "    unsigned sm;",
            '    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));',
            "    if (kg_tr_launch >= %du && kg_tr_launch < %du)" % (launch, launch + 3),
            '      printf("KG_TRACE %u %u %u %llu %llu %llu %llu %llu %llu %llu %lld\\n", kg_tr_launch, blockIdx.x, sm,',
            "             kg_tr[0], kg_tr[1], kg_tr[2], kg_tr[3], kg_tr[4], kg_tr[5], kg_tr[6], local);",
            "  }",
        ]) + '    "}\\n";')
    return src


def parse(lines):
    """{launch: [(block, sm, stamps[7], items)]} from the KG_TRACE lines."""
    launches = {}
    for line in lines:
        f = line.split()
        if len(f) != 12 or f[0] != "KG_TRACE":
            continue
        launches.setdefault(int(f[1]), []).append((int(f[2]), int(f[3]), [int(x) for x in f[4:11]], int(f[11])))
    return launches


def report(lines, pairs=False, out=sys.stdout):
    launches = parse(lines)
    if not launches:
        out.write("gemm-trace: no KG_TRACE lines (the case ran fewer launches than --launch + 3, or failed)\n")
        return 1
    for launch in sorted(launches):
        rows = launches[launch]
        t0 = min(r[2][0] for r in rows)
        span = max(r[2][6] for r in rows) - t0
        out.write("launch %d: %d blocks, %.2f us from the first entry to the last exit\n" % (launch, len(rows), span / 1e3))
        out.write("  %-12s %8s %8s %8s  (us after the first entry; blocks with the stamp)\n" % ("phase", "min", "median", "max"))
        for i, name in enumerate(PHASES):
            v = sorted((r[2][i] - t0) / 1e3 for r in rows if r[2][i])
            if v:
                out.write("  %-12s %8.2f %8.2f %8.2f  (%d)\n" % (name, v[0], statistics.median(v), v[-1], len(v)))
        if pairs:
            for block, sm, t, items in sorted(rows):
                out.write("  block %4d sm %3d items %d: %s\n" % (block, sm, items, " ".join(
                    "%7.2f" % ((x - t0) / 1e3) if x else "      -" for x in t)))
    return 0


def main(argv):
    launch = 1000
    if "--launch" in argv:
        i = argv.index("--launch")
        launch = int(argv[i + 1])
        del argv[i:i + 2]
    if len(argv) >= 2 and argv[0] == "patch":
        with open(argv[1]) as f:
            src = f.read()
        with open(argv[1], "w") as f:
            f.write(patch_source(src, launch))
        return 0
    if len(argv) >= 2 and argv[0] == "report":
        with open(argv[1]) as f:
            return report(f.readlines(), pairs="--pairs" in argv)
    if len(argv) >= 2 and argv[0] == "run":
        dtype = "f16"
        if "--dtype" in argv:
            i = argv.index("--dtype")
            dtype = argv[i + 1]
            del argv[i:i + 2]
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        work = "/tmp/kiln-gemm-trace"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(root, work, ignore=shutil.ignore_patterns("build*", ".venv", ".git"))
        path = os.path.join(work, SRC)
        with open(path) as f:
            src = f.read()
        with open(path, "w") as f:
            f.write(patch_source(src, launch))
        build = os.path.join(work, "build-trace")
        subprocess.run(["cmake", "-S", work, "-B", build, "-DKILN_CUDA=ON", "-DKILN_CUDA_ARCH=90a"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", build, "-j", str(os.cpu_count() or 4)], check=True, stdout=subprocess.DEVNULL)
        status = 0
        for case in argv[1:]:
            r = subprocess.run([os.path.join(build, "kiln-bench"), "gemm", "--dtype", dtype, "--only", case],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            lines = r.stdout.splitlines()
            print("== %s (%s)" % (case, dtype))
            for line in lines:
                if re.match(r"^\S.*\d+x\d+x\d+", line) and "KG_TRACE" not in line:
                    print(line)
            status |= report(lines) | r.returncode
        return status
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
