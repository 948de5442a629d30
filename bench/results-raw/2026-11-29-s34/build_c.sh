#!/bin/bash
# Builds build-var/s34/c for dev_s34.sh PART c (from the repository root,
# build/ at the commit under test): f32 examples/mha.toy and mha_causal.toy
# with head dim 128's long-key wgmma form at 16 keys a tile, one K/V stage,
# 2 blocks an SM (new/), causal also without the mask-free copy (nou/),
# against build-var/s34/b/new (base/: 32 keys, 1 block).
set -euo pipefail
B=build-var/s34/c
rm -rf $B && mkdir -p $B/seqlens $B/new $B/nou
cp bench/cuda/bench_fused.py $B/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $B/seqlens/
cp -r build-var/s34/b/new $B/base
./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $B/new/mha.so examples/mha.toy &
./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $B/new/mha_causal.so examples/mha_causal.toy &
wait
./build/tools/dccc --target=cuda --cuda-arch=sm_90a --attention-unmasked=off -o $B/nou/mha_causal.so examples/mha_causal.toy
cp $B/new/mha.so $B/new/mha.h $B/new/dccrt.h $B/nou/
strip --strip-unneeded $B/*/*.so
du -sh $B
