#!/bin/bash
# Builds build-var/s28/b for dev_s28.sh PART b: the FA2-precision program
# (--fast-math, sm_90a) with the planner's tiles (base/) and forced tilings
# for head dim 128's short batches (M,W,N,B = m16 tiles a warp, warps, keys a
# tile, blocks an SM; S stages; Q in shared memory): k64s3 (1,4,64,2, 3
# stages), k64s2 (1,4,64,2, 2 stages), k32s3 (1,4,32,3, 3 stages), k16s4
# (1,4,16,4, 4 stages). --explain of each in explain_*.txt.
set -euo pipefail
F=build-var/s28/b
rm -rf $F && mkdir -p $F/seqlens
cp bench/cuda/bench_fused.py $F/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $F/seqlens/
sed -e 's/fn mha_bf16_f32_scores(/fn mha_bf16(/' -e 's/fn mha_causal_bf16_f32_scores(/fn mha_causal(/' \
  examples/mha_bf16_f32_scores.toy > $F/fa2.toy
build() {  # build DIR FLAGS...
  local v=$1; shift
  mkdir -p $F/$v
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --explain --fast-math "$@" $F/fa2.toy > $F/explain_$v.txt 2>&1
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --fast-math "$@" -o $F/$v/mha_bf16.so $F/fa2.toy
  strip --strip-unneeded $F/$v/mha_bf16.so
}
build base &
build k64s3 --attention-tiles=1,4,64,2 --attention-stages=3 --attention-q=smem &
wait
build k64s2 --attention-tiles=1,4,64,2 --attention-stages=2 --attention-q=smem &
build k32s3 --attention-tiles=1,4,32,3 --attention-stages=3 --attention-q=smem &
wait
build k16s4 --attention-tiles=1,4,16,4 --attention-stages=4 --attention-q=smem
du -sh $F
