#!/bin/bash
# Builds build-var/s34/e for dev_s34.sh PART e (from the repository root,
# build/ at the commit under test): f32 examples/mha.toy and mha_causal.toy
# as the final compiler builds them (new/: head dim 64 at one K/V stage,
# head dim 128 on wgmma at 16 keys a tile for every launch) against
# session 33's kernels (base/: build-var/s34/a/new); k16b4/: head dim 64 at
# 16 keys a tile, 4 blocks an SM (--attention-tiles=1,4,16,4: 53 KB, 128
# registers, 64 bytes of spills), for its rows only.
set -euo pipefail
B=build-var/s34/e
rm -rf $B && mkdir -p $B/seqlens $B/new $B/k16b4
cp bench/cuda/bench_fused.py $B/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $B/seqlens/
cp -r build-var/s34/a/new $B/base
./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $B/new/mha.so examples/mha.toy &
./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $B/new/mha_causal.so examples/mha_causal.toy &
wait
./build/tools/dccc --target=cuda --cuda-arch=sm_90a --attention-tiles=1,4,16,4 -o $B/k16b4/mha.so examples/mha.toy &
./build/tools/dccc --target=cuda --cuda-arch=sm_90a --attention-tiles=1,4,16,4 -o $B/k16b4/mha_causal.so examples/mha_causal.toy &
wait
strip --strip-unneeded $B/*/*.so
du -sh $B
