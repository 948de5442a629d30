#!/bin/bash
# Builds build-var/s31/e for dev_s31.sh PART e: f32/ examples/mha.toy and
# mha_causal.toy (3xTF32, sm_90a) with this compiler (new/: the outputs
# staged through shared memory, f32 pairs too) and build-var/s31/a's base/
# (ecd4d96); bf16/ the FA2-precision program with this compiler (new/) and
# ecd4d96's (base/).
set -euo pipefail
F=build-var/s31/e
rm -rf $F && mkdir -p $F/f32/seqlens $F/f32/new $F/bf16/seqlens $F/bf16/new
for d in f32 bf16; do
  cp bench/cuda/bench_fused.py $F/$d/
  cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $F/$d/seqlens/
  cp -r build-var/s31/a/$d/base $F/$d/base
done
for ex in mha mha_causal; do
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $F/f32/new/$ex.so examples/$ex.toy &
done
./build/tools/dccc --target=cuda --cuda-arch=sm_90a --fast-math -o $F/bf16/new/mha_bf16.so build-var/s31/a/bf16/fa2.toy &
wait
cp $F/bf16/new/mha_bf16.so $F/bf16/new/mha_causal_bf16.so
strip --strip-unneeded $F/*/*/*.so
du -sh $F
