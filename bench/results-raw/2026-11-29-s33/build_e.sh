#!/bin/bash
# Builds build-var/s33/e for dev_s33.sh PART e (from the repository root,
# build/ at the commit under test): the FA2-precision bf16 program as the
# planner builds it (base) and with head dim 128 at 64 keys a tile, 3 blocks
# an SM, Q in registers (k64b3).
set -euo pipefail
F=build-var/s33/e
rm -rf $F && mkdir -p $F/seqlens
cp bench/cuda/bench_fused.py $F/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $F/seqlens/
sed -e 's/fn mha_bf16_f32_scores(/fn mha_bf16(/' -e 's/fn mha_causal_bf16_f32_scores(/fn mha_causal(/' \
  examples/mha_bf16_f32_scores.toy > $F/fa2.toy
bf16() {  # bf16 VARIANT FLAGS...
  local v=$1; shift
  mkdir -p $F/$v
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --explain --fast-math "$@" $F/fa2.toy > $F/explain_$v.txt 2>&1
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --fast-math "$@" -o $F/$v/mha_bf16.so $F/fa2.toy
  cp $F/$v/mha_bf16.so $F/$v/mha_causal_bf16.so
}
bf16 base & bf16 k64b3 --attention-tiles=1,4,64,3 --attention-q=registers & wait
strip --strip-unneeded $F/*/*.so
du -sh $F
