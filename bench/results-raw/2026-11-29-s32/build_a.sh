#!/bin/bash
# Builds build-var/s32/a for dev_s32.sh PART a (run from the repository root,
# build/ with kAttentionMaxWarpsPerSm = 24 and --attention-tiles' B up to 6:
# the experiment's patch, more_blocks.patch): the FA2-precision program
# (fa2.toy) with the planner's tiles (base/) and forced tilings with more
# blocks an SM: b5 (head dim 64: 64 keys, 5 blocks), k32b5 (32 keys, 5),
# k32b6 (32 keys, 6), k16b5 (16 keys, 5; head dim 128: 16 keys, 5 blocks).
set -euo pipefail
A=build-var/s32/a
rm -rf $A && mkdir -p $A/seqlens
cp bench/cuda/bench_fused.py $A/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $A/seqlens/
cp build-var/s31/a/bf16/fa2.toy $A/
build() {  # NAME [flags]
  local n=$1; shift
  mkdir -p $A/$n
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --fast-math "$@" -o $A/$n/mha_bf16.so $A/fa2.toy
  cp $A/$n/mha_bf16.so $A/$n/mha_causal_bf16.so
}
build base &
build b5 --attention-tiles=1,4,64,4 &
wait
build k32b5 --attention-tiles=1,4,32,4 &
build k32b6 --attention-tiles=1,4,32,5 &
wait
build k16b5 --attention-tiles=1,4,16,4
strip --strip-unneeded $A/*/*.so
du -sh $A
