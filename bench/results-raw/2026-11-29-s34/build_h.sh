#!/bin/bash
# Builds build-var/s34/h for dev_s34.sh PART h (from the repository root,
# build/ at the commit under test): f32 examples/mha.toy and mha_causal.toy
# with head dim 64 at 16 keys a tile and 4 blocks an SM for launches whose
# entries average under 32 keys, 32 keys and 3 blocks (d64L) for the rest
# (new/), against build-var/s34/e/new (base/: 32 keys for every launch).
set -euo pipefail
B=build-var/s34/h
rm -rf $B && mkdir -p $B/seqlens $B/new
cp bench/cuda/bench_fused.py $B/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $B/seqlens/
cp -r build-var/s34/e/new $B/base
./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $B/new/mha.so examples/mha.toy &
./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $B/new/mha_causal.so examples/mha_causal.toy &
wait
strip --strip-unneeded $B/*/*.so
du -sh $B
