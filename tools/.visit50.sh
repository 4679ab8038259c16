#!/usr/bin/env bash
set -u
STEPS=seg VISIT_SECONDS=470 tools/gpu-visit.sh
t0=$(date +%s)
KILN_DEVICE=cuda KILN_CACHE_DIR=$PWD/build-gpu/kernel-cache KILN_CUDA_TEST=elementwise,chains timeout 90 build-gpu/test_cuda_backend > "$OUT/ew.txt" 2>&1
echo "== ew: rc $? in $(($(date +%s)-t0)) s" >> "$OUT/visit.txt"
cd "$OUT" && for f in visit.txt seg-build.txt seg-tests.txt seg-ab.txt seg-memcheck.txt seg-racecheck.txt ew.txt; do echo "=================== $f"; tail -c 20000 "$f" 2>/dev/null; done > all.txt
find "$OUT" -type f ! -name all.txt -delete; ls -la "$OUT"
