#!/bin/bash
# Builds build-var/s31/a for dev_s31.sh PART a (run from the repository root,
# build/ at the compiler under test):
#   f32/  examples/mha.toy and mha_causal.toy (3xTF32, sm_90a): base/ (the
#         planner's defaults: one warpgroup a block at head dim 64) and w8/
#         (--attention-tiles=1,8,32,1: two warpgroups, 128 query rows
#         sharing each key tile's tf32 parts);
#   bf16/ the FA2-precision program (--fast-math, sm_90a): base/, w8/
#         (1,8,32,2, Q in shared memory: 128 rows a block, each entry's K
#         and V read once by a block on batches of <= 128 tokens), st/ and
#         at/ (persistent grids: static striding, atomic counter).
set -euo pipefail
F=build-var/s31/a
rm -rf $F && mkdir -p $F/f32/seqlens $F/bf16/seqlens
for d in f32 bf16; do
  cp bench/cuda/bench_fused.py $F/$d/
  cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $F/$d/seqlens/
done
f32() {  # f32 VARIANT FLAGS...
  local v=$1; shift
  mkdir -p $F/f32/$v
  for ex in mha mha_causal; do
    ./build/tools/dccc --target=cuda --cuda-arch=sm_90a "$@" -o $F/f32/$v/$ex.so examples/$ex.toy
  done
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --explain "$@" examples/mha.toy > $F/f32/explain_$v.txt 2>&1
}
sed -e 's/fn mha_bf16_f32_scores(/fn mha_bf16(/' -e 's/fn mha_causal_bf16_f32_scores(/fn mha_causal(/' \
  examples/mha_bf16_f32_scores.toy > $F/bf16/fa2.toy
bf16() {  # bf16 VARIANT FLAGS...
  local v=$1; shift
  mkdir -p $F/bf16/$v
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --explain --fast-math "$@" $F/bf16/fa2.toy > $F/bf16/explain_$v.txt 2>&1
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --fast-math "$@" -o $F/bf16/$v/mha_bf16.so $F/bf16/fa2.toy
  cp $F/bf16/$v/mha_bf16.so $F/bf16/$v/mha_causal_bf16.so
}
f32 base & f32 w8 --attention-tiles=1,8,32,1 & wait
bf16 base & bf16 w8 --attention-tiles=1,8,32,2 --attention-q=smem & wait
bf16 st --attention-grid=static & bf16 at --attention-grid=atomic & wait
strip --strip-unneeded $F/*/*/*.so
du -sh $F
