#!/bin/bash
# Builds build-var/s31/h for dev_s31.sh PART h: the tile list sorted by work
# (causal entries by their needed keys): bf16/ the FA2-precision program,
# f32/ examples/mha.toy and mha_causal.toy; new/ this compiler, prev/
# build-var/s31/f's (commit 009669d: sorted by key count).
set -euo pipefail
F=build-var/s31/h
rm -rf $F && mkdir -p $F
for d in f32 bf16; do
  mkdir -p $F/$d/new
  cp -r build-var/s31/f/$d/seqlens build-var/s31/f/$d/bench_fused.py $F/$d/
  cp -r build-var/s31/f/$d/new $F/$d/prev
done
for ex in mha mha_causal; do
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $F/f32/new/$ex.so examples/$ex.toy &
done
./build/tools/dccc --target=cuda --cuda-arch=sm_90a --fast-math -o $F/bf16/new/mha_bf16.so build-var/s31/a/bf16/fa2.toy &
wait
cp $F/bf16/new/mha_bf16.so $F/bf16/new/mha_causal_bf16.so
strip --strip-unneeded $F/*/*/*.so
du -sh $F
