#!/bin/bash
# Builds build-var/s33/c for dev_s33.sh PART c (from the repository root,
# build/ at the commit under test): the FA2-precision bf16 program as the
# planner builds it (bf16/base) and with --attention-unmasked=off (nou),
# --attention-stages=3 (s3), --attention-q=registers (qreg); f32 mha.toy and
# mha_causal.toy as built (f32/new) and with --attention-unmasked=off (nou).
set -euo pipefail
F=build-var/s33/c
rm -rf $F && mkdir -p $F/bf16 $F/f32
for d in f32 bf16; do
  cp bench/cuda/bench_fused.py $F/$d/
  mkdir -p $F/$d/seqlens && cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $F/$d/seqlens/
done
sed -e 's/fn mha_bf16_f32_scores(/fn mha_bf16(/' -e 's/fn mha_causal_bf16_f32_scores(/fn mha_causal(/' \
  examples/mha_bf16_f32_scores.toy > $F/bf16/fa2.toy
bf16() {  # bf16 VARIANT FLAGS...
  local v=$1; shift
  mkdir -p $F/bf16/$v
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --explain --fast-math "$@" $F/bf16/fa2.toy > $F/bf16/explain_$v.txt 2>&1
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --fast-math "$@" -o $F/bf16/$v/mha_bf16.so $F/bf16/fa2.toy
  cp $F/bf16/$v/mha_bf16.so $F/bf16/$v/mha_causal_bf16.so
}
f32() {  # f32 VARIANT FLAGS...
  local v=$1; shift
  mkdir -p $F/f32/$v
  for ex in mha mha_causal; do
    ./build/tools/dccc --target=cuda --cuda-arch=sm_90a "$@" -o $F/f32/$v/$ex.so examples/$ex.toy
  done
}
bf16 base & bf16 nou --attention-unmasked=off & wait
bf16 s3 --attention-stages=3 & bf16 qreg --attention-q=registers & wait
f32 new & f32 nou --attention-unmasked=off & wait
strip --strip-unneeded $F/*/*/*.so
du -sh $F
