#!/bin/bash
# Builds build-var/s34/b for dev_s34.sh PART b (from the repository root,
# build/ at the commit under test): f32 examples/mha.toy and mha_causal.toy
# as the planner builds them (new/: one K/V stage at head dim 64), causal
# without the mask-free copy (nou/), against session 33's kernels (base/:
# build-var/s34/a/new).
set -euo pipefail
B=build-var/s34/b
rm -rf $B && mkdir -p $B/seqlens $B/new $B/nou
cp bench/cuda/bench_fused.py $B/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $B/seqlens/
cp -r build-var/s34/a/new $B/base
./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $B/new/mha.so examples/mha.toy &
./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $B/new/mha_causal.so examples/mha_causal.toy &
wait
./build/tools/dccc --target=cuda --cuda-arch=sm_90a --attention-unmasked=off -o $B/nou/mha_causal.so examples/mha_causal.toy
cp $B/new/mha.so $B/new/mha.h $B/new/dccrt.h $B/nou/
strip --strip-unneeded $B/*/*.so
du -sh $B
