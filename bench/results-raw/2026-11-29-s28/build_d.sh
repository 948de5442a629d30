#!/bin/bash
# Builds build-var/s28/d for dev_s28.sh PART d: the FA2-precision program
# (--fast-math, sm_90a) at this session's main (base/) and forced tilings for
# the long batches (M,W,N,B; S stages; Q in shared memory): w8k64 (1,8,64,2:
# two warpgroups, 128 rows a block), w8k64s3 (1,8,64,1, 3 stages), w4k128
# (1,4,128,2), w4k64s3 (1,4,64,3, 3 stages). --explain of each in explain_*.txt.
set -euo pipefail
F=build-var/s28/d
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
build w8k64 --attention-tiles=1,8,64,2 --attention-q=smem &
wait
build w8k64s3 --attention-tiles=1,8,64,1 --attention-stages=3 --attention-q=smem &
build w4k128 --attention-tiles=1,4,128,2 --attention-q=smem &
wait
build w4k64s3 --attention-tiles=1,4,64,3 --attention-stages=3 --attention-q=smem
du -sh $F
