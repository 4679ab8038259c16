#!/usr/bin/env bash
# bench/NOTES.md step 72, never run on a GPU. One visit, run on a tree WITHOUT the patches applied:
#   OUT=$OUT bash bench/patches/2026-12-07-rowfill-shift.visit.sh      (~350 s on a fresh machine)
# Three trees copied from the working tree (never `git archive HEAD`: the device's checkout has an older HEAD),
# each built fresh: b = as is, r = + 2026-12-07-rowfill-shift.patch (row_fill leaves kept values on shifted
# rows undoubled), n = r + 2026-12-06-divin-predicate.patch (v71b). Softmax timed b r n b r n, f16 and bf16;
# then on n test_cuda_backend in three parts, its rdiv and shift sections under memcheck, test_expr,
# test_oracle and test_codegen_nvrtc, at once. Between the two, an --ab KILN_REDUCE_ROWFILL=0,1 on unshifted
# rows of 4000-16384 (b). Everything goes into $OUT/all.txt.
set -u
cd "$(dirname "$0")/../.."
A=$OUT/all.txt; export KILN_DEVICE=cuda; T0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >>"$A"
rm -rf t-b t-r t-n build-b build-r build-n
for t in b r n; do mkdir t-$t; tar --exclude="./build*" --exclude="./t-*" --exclude=./.git --exclude=./.venv -cf - CMakeLists.txt Makefile include src tests tools python examples bench | tar -x -C t-$t; done
( cd t-r && patch -p1 < ../bench/patches/2026-12-07-rowfill-shift.patch ) >>"$A" 2>&1
( cd t-n && patch -p1 < ../bench/patches/2026-12-07-rowfill-shift.patch && patch -p1 < ../bench/patches/2026-12-06-divin-predicate.patch ) >>"$A" 2>&1
bld() { cmake -S t-$1 -B build-$1 -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a -DKILN_WERROR=ON >/dev/null 2>&1 && cmake --build build-$1 -j8 --target $2 >build-$1.log 2>&1; echo "build $1 rc $?" >>"$A"; }
bld b kiln-gpu-bench & bld r kiln-gpu-bench & bld n "kiln-gpu-bench test_cuda_backend test_expr test_oracle test_codegen_nvrtc" & wait
echo "built at $(( $(date +%s) - T0 )) s" >>"$A"
S=2048x50257,4096x32000,4096x24576,4096x32001,1024x128257,256x50257,4096x10001,4096x16001,8192x8193,4096x4001,1x50257,4x128257,8192x8192,4096x10000
SB=4096x10001,4096x16001,8192x8193,4096x4001,1x50257,4x128257,4096x32001,8192x8192
for x in b r n b r n; do mkdir -p build-$x/kc; echo "== $x f16" >>"$A"; KILN_CACHE_DIR=build-$x/kc timeout 60 build-$x/kiln-gpu-bench --only 'softmax(A,1)' --dtype f16 --sizes $S 2>&1 | grep softmax >>"$A"
  echo "== $x bf16" >>"$A"; KILN_CACHE_DIR=build-$x/kc timeout 60 build-$x/kiln-gpu-bench --only 'softmax(A,1)' --dtype bf16 --sizes $SB 2>&1 | grep softmax >>"$A"; done
# unshifted rows on either side of 8192 (whether the doubled walk pays depends on more than the spill: H100
# f16 8192 x 8192 1.21x faster doubled, 4096 x 10000 1.24x slower; step 71): the base's rule, 0 against 1
for d in f16 bf16; do KILN_CACHE_DIR=build-b/ks timeout 100 build-b/kiln-gpu-bench --only 'softmax(A,1)' --dtype $d \
  --sizes 4096x4000,4096x6000,4096x8000,4096x8192,4096x10000,4096x12000,4096x12288,4096x16000,4096x16384 \
  --ab KILN_REDUCE_ROWFILL=0,1 2>&1 | grep -E 'softmax|A/B' >>"$A"; done
echo "timed at $(( $(date +%s) - T0 )) s" >>"$A"
B=build-n; SAN=/usr/local/cuda/bin/compute-sanitizer
part() { mkdir -p $B/kc-$1; ( cd $B; t=$(date +%s); KILN_CACHE_DIR=kc-$1 KILN_CUDA_TEST=$2 timeout 330 ./test_cuda_backend >$1.log 2>&1; echo "== $1 ($2): rc $? in $(( $(date +%s) - t )) s: $(grep passed $1.log | tail -1)" >$1.res ); }
prog() { mkdir -p $B/kc-$1; ( cd $B; t=$(date +%s); KILN_CACHE_DIR=kc-$1 timeout 330 ./$1 >$1.log 2>&1; echo "== $1: rc $? in $(( $(date +%s) - t )) s: $(grep passed $1.log | tail -1)" >$1.res ); }
part p1 rowsmem,keep,rdiv,shift & part p2 reductions,batchnorm,split,lanes,welford,seg &
part p3 copies,elementwise,chains,rng,gemm,random,stats,fastdram,pdl,cache,memory,wrap,graph &
prog test_expr & prog test_oracle & prog test_codegen_nvrtc &
( cd $B; mkdir -p km; t=$(date +%s); KILN_CACHE_DIR=km KILN_CUDA_TEST=rdiv,shift timeout 330 $SAN --tool memcheck --error-exitcode 99 ./test_cuda_backend > mc.log 2>&1; echo "== memcheck rdiv,shift: rc $? in $(( $(date +%s) - t )) s: $(grep -E 'passed|SUMMARY' mc.log | tail -2 | tr '\n' ' ')" > mc.res ) &
wait; cat $B/*.res >>"$A"; grep -hE ' FAIL|want |failed' $B/p?.log $B/test_*.log $B/mc.log | grep -v ' 0 failed' | head -12 >>"$A"
echo "### end $(( $(date +%s) - T0 )) s" >>"$A"
