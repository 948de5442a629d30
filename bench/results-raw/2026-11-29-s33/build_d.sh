#!/bin/bash
# Builds build-var/s33/d for dev_s33.sh PART d (from the repository root,
# build/ at the commit under test): f32 examples/mha.toy and mha_causal.toy
# with V's transposed addresses from four a block (new/) against
# build-var/s33/b/new (base/: 03946be).
set -euo pipefail
B=build-var/s33/d
rm -rf $B && mkdir -p $B/seqlens $B/new
cp bench/cuda/bench_fused.py $B/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $B/seqlens/
cp -r build-var/s33/b/new $B/base
for ex in mha mha_causal; do
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $B/new/$ex.so examples/$ex.toy &
done
wait
strip --strip-unneeded $B/new/*.so
du -sh $B
