#!/usr/bin/env bash
# bench/NOTES.md step 76 Next (2), an experiment (~120 s cold): OUT=$OUT bash bench/patches/2026-12-08-coldepth.visit.sh
# v76d: KILN_REDUCE_COLDEPTH=D (the patch, an env knob for measuring only) caps the row workers of COLUMN
# mode's narrowed (unsplit) blocks so that each walks at least D rows before the block's fold. Times
# var(A,0), sum(A,0) and batch norm down the columns on short wide shapes at D = 0 (as main), 16, 32, 64, one
# process each dtype; var also with one pass forced. Keep nothing from it on main: if a depth wins, write
# the rule into launch_shape (no knob), with test_codegen_nvrtc launch-choice cases, then make test-gpu.
set -u
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
A=$OUT/all.txt; export KILN_DEVICE=cuda; T0=$(date +%s); W=/tmp/cd76; B=$W/b
nvidia-smi --query-gpu=name --format=csv,noheader >>"$A"
rm -rf $W; mkdir -p $W; tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C $W
( cd $W && patch -p1 < bench/patches/2026-12-08-coldepth.patch >/dev/null ); echo "patch rc $?" >>"$A"
cmake -S $W -B $B -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a >/dev/null 2>&1 && cmake --build $B -j16 --target kiln-gpu-bench >$B.log 2>&1
echo "build rc $? at $(( $(date +%s) - T0 )) s" >>"$A"; mkdir -p $B/kc
S=1024x16384,1024x65536,2048x8192,4096x4096,512x32768
for d in f16 f32; do
  KILN_CACHE_DIR=$B/kc timeout 120 $B/kiln-gpu-bench --only 'var(A,0),sum(A,0),batchnorm(A,0) in place' --dtype $d --sizes $S --ab KILN_REDUCE_COLDEPTH=0,16,32,64 2>&1 | grep -E '^(case|var|sum|batch)' >>"$A"
  KILN_VAR_PASSES=1 KILN_CACHE_DIR=$B/kc timeout 60 $B/kiln-gpu-bench --only 'var(A,0)' --dtype $d --sizes $S --ab KILN_REDUCE_COLDEPTH=0,16,32,64 2>&1 | grep -E '^var' | sed 's/^/one pass: /' >>"$A"
done
echo "### end $(( $(date +%s) - T0 )) s" >>"$A"
