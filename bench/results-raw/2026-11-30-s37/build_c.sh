#!/bin/bash
# Builds build-var/s37/c for dev_s37.sh PART c (from the repository root,
# build/ at the commit under test): the bf16 FA2-precision program (as
# build_a.sh's) with the planner's tiles (new/), and forced: 128-row query
# tiles of 8 warps at 2 blocks an SM with Q in shared memory, 32 keys a
# tile (t8a/: --attention-tiles=1,8,32,2 --attention-q=smem) or 64 (t8b/),
# and 64-row tiles of 64 keys at 4 blocks with Q in shared memory (k64/:
# 1,4,64,4); sm_90a only.
set -euo pipefail
A=build-var/s37/c
export DCCC_COMPILER_LAUNCHER=ccache
rm -rf $A && mkdir -p $A/seqlens $A/bf16
cp bench/cuda/bench_fused.py $A/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $A/seqlens/
sed -e 's/fn mha_bf16_f32_scores(/fn mha_bf16(/' -e 's/fn mha_causal_bf16_f32_scores(/fn mha_causal(/' \
  examples/mha_bf16_f32_scores.toy > $A/fa2.toy
D=./build/tools/dccc
build() {
  local v=$1; shift
  mkdir -p $A/bf16/$v
  $D --target=cuda --fast-math --cuda-arch=sm_90a "$@" -o $A/bf16/$v/mha_bf16.so $A/fa2.toy
}
build new &
build t8a --attention-tiles=1,8,32,2 --attention-q=smem &
wait
build t8b --attention-tiles=1,8,64,2 --attention-q=smem &
build k64 --attention-tiles=1,4,64,4 --attention-q=smem &
wait
strip --strip-unneeded $A/*/*/*.so
du -sh $A
