#!/usr/bin/env bash
# bench/NOTES.md step 76 Next (1), one visit (~150 s cold): OUT=$OUT bash bench/patches/2026-12-08-varwritten.visit.sh
# v76c, prepared without device time left: kiln_backend.var_one_pass told whether the variance is written out
# (the destination holds no more values than it) or broadcast back; written-out f16 / bf16 variances down
# the columns take one pass from 2048 rows below the L2 too (call 10: 1.09-1.66x; 4096 x 4096 1.84x with
# the lanes override). Applies the patch to a copy of the tree, builds it fresh, runs the tests whose plans
# it moves and times var(A,0) / batch norm as the rule now picks. If all pass: git apply the patch on main,
# make test, commit, and delete both files.
set -u
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
A=$OUT/all.txt; export KILN_DEVICE=cuda; T0=$(date +%s); W=/tmp/vw76; B=$W/b
nvidia-smi --query-gpu=name --format=csv,noheader >>"$A"
rm -rf $W; mkdir -p $W; tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C $W
( cd $W && patch -p1 < bench/patches/2026-12-08-varwritten.patch >/dev/null ) ; echo "patch rc $?" >>"$A"
cmake -S $W -B $B -DKILN_CUDA=ON -DKILN_CUDA_ARCH=90a -DKILN_WERROR=ON >/dev/null 2>&1 &&
  cmake --build $B -j16 --target kiln-gpu-bench test_cuda_backend test_expr test_oracle test_plan >$B.log 2>&1; echo "build rc $? at $(( $(date +%s) - T0 )) s" >>"$A"
mkdir -p $B/k1 $B/k2 $B/k3 $B/k4 $B/k5 $B/kb
( KILN_CUDA_TEST=welford,batchnorm KILN_CACHE_DIR=$B/k1 timeout 150 $B/test_cuda_backend > $B/t1.log 2>&1; echo "welford,batchnorm rc $? $(tail -1 $B/t1.log)" >>"$A" ) &
( KILN_CUDA_TEST=lanes,keep,stats KILN_CACHE_DIR=$B/k2 timeout 150 $B/test_cuda_backend > $B/t2.log 2>&1; echo "lanes,keep,stats rc $? $(tail -1 $B/t2.log)" >>"$A" ) &
( KILN_CUDA_TEST=reductions,split,rowsmem KILN_CACHE_DIR=$B/k3 timeout 200 $B/test_cuda_backend > $B/t3.log 2>&1; echo "reductions,split,rowsmem rc $? $(tail -1 $B/t3.log)" >>"$A" ) &
( KILN_CACHE_DIR=$B/k4 timeout 150 $B/test_expr > $B/t4.log 2>&1; echo "test_expr rc $? $(tail -1 $B/t4.log)" >>"$A"; timeout 100 $B/test_plan > $B/t6.log 2>&1; echo "test_plan rc $? $(tail -1 $B/t6.log)" >>"$A" ) &
( KILN_CACHE_DIR=$B/k5 timeout 300 $B/test_oracle > $B/t5.log 2>&1; echo "test_oracle rc $? $(tail -1 $B/t5.log)" >>"$A" ) &
( for d in f16 bf16; do KILN_CACHE_DIR=$B/kb timeout 60 $B/kiln-gpu-bench --only 'var(A,0),batchnorm(A,0) in place' --dtype $d --sizes 4096x4096,2048x8192,16384x1024,1024x16384,4096x512,50000x64 --ab KILN_VAR_PASSES=2,1 2>&1 | grep -E '^(var|batch)'; done > $B/b.log 2>&1 ) &
wait; cat $B/b.log >>"$A"; grep -hE 'err|failed:|want' $B/t[1-6].log | head -10 >>"$A"; echo "### end $(( $(date +%s) - T0 )) s" >>"$A"
