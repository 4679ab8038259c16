#!/usr/bin/env python3
"""tools/cache-sass.py - the SASS of kernels in kiln's disk kernel cache, counted between barriers.

The expression engine's kernels are compiled at run time (src/cuda/nvrtc.c) and kept in the
disk cache (KILN_CACHE_DIR, one `<key>.kbin` a kernel: the header "KILNKRN1", key, source
length, binary length, checksum; then the source; then the cubin). On a machine with the CUDA
toolkit this takes the entries whose source holds every --match string, writes each cubin and
its `cuobjdump -sass` listing into OUTDIR, and prints, for each, the instructions between block
barriers (BAR.SYNC): in a ROW-mode reduction kernel segment 0 is the first pass, and the passes
and block folds follow in order, the output's walk last (bench/NOTES.md step 70 read softmax's
that way). Counts are static (the listing), not executed instructions (Nsight Compute's).

    python3 tools/cache-sass.py CACHE_DIR OUTDIR [--match TEXT]... [--top N]

Exit status 2 on a bad argument (named), 1 when cuobjdump is missing or no entry matched.
"""
import argparse
import collections
import os
import shutil
import struct
import subprocess
import sys

HEADER = struct.Struct("<8sQQQQ")
MAGIC = b"KILNKRN1"


def entries(cache_dir):
    """(path, source, cubin) of every well-formed entry in cache_dir."""
    for name in sorted(os.listdir(cache_dir)):
        if not name.endswith(".kbin"):
            continue
        path = os.path.join(cache_dir, name)
        with open(path, "rb") as f:
            data = f.read()
        if len(data) < HEADER.size:
            continue
        magic, _key, src_len, bin_len, _checksum = HEADER.unpack_from(data)
        if magic != MAGIC or HEADER.size + src_len + bin_len > len(data):
            continue
        src = data[HEADER.size:HEADER.size + src_len].decode("utf-8", "replace")
        yield path, src, data[HEADER.size + src_len:HEADER.size + src_len + bin_len]


def opcode(line):
    """The opcode of one SASS instruction text ("@!P0 FFMA.RM R0, ..." -> "FFMA")."""
    words = line.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def instructions(sass):
    """The instruction texts of a cuobjdump -sass listing, in order."""
    out = []
    for line in sass.splitlines():
        s = line.strip()
        if s.startswith("/*") and "*/" in s and ";" in s:
            text = s.split("*/", 1)[1].split(";")[0].strip()
            if text:
                out.append(text)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cache_dir")
    ap.add_argument("outdir")
    ap.add_argument("--match", action="append", default=[], help="text the kernel's source must hold")
    ap.add_argument("--top", type=int, default=20, help="opcodes listed a segment")
    a = ap.parse_args()
    if not os.path.isdir(a.cache_dir):
        print(f"cache-sass: argument 'cache_dir': {a.cache_dir} is not a directory", file=sys.stderr)
        return 2
    if a.top < 1:
        print(f"cache-sass: argument '--top': {a.top} is not a positive count", file=sys.stderr)
        return 2
    tool = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if not os.access(tool, os.X_OK):
        print("cache-sass: no cuobjdump (the CUDA toolkit's) on this machine", file=sys.stderr)
        return 1
    os.makedirs(a.outdir, exist_ok=True)
    n = 0
    for path, src, cubin in entries(a.cache_dir):
        if not all(m in src for m in a.match):
            continue
        base = os.path.join(a.outdir, os.path.basename(path)[:-len(".kbin")])
        with open(base + ".cubin", "wb") as f:
            f.write(cubin)
        with open(base + ".cu", "w") as f:
            f.write(src)
        sass = subprocess.run([tool, "-sass", base + ".cubin"], capture_output=True, text=True).stdout
        with open(base + ".sass", "w") as f:
            f.write(sass)
        ins = instructions(sass)
        print(f"==== {base}: {len(ins)} instructions")
        seg = []
        segs = [seg]
        for text in ins:
            seg.append(text)
            if opcode(text) == "BAR":
                seg = []
                segs.append(seg)
        for i, s in enumerate(segs):
            counts = collections.Counter(opcode(t) for t in s)
            print(f"  segment {i}: {len(s)}: " + ", ".join(f"{k} {v}" for k, v in counts.most_common(a.top)))
        n += 1
    if n == 0:
        print("cache-sass: no entry matched", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
