#!/bin/bash
# Builds build-var/s37/a for dev_s37.sh PART a (from the repository root,
# build/ at the commit under test, BASE=<a build folder of the commit
# before>): the tile list sorted by the key tiles each entry runs (new/)
# against sorted by key count (base/), for the bf16 FA2-precision program
# (examples/mha_bf16_f32_scores.toy named as bench_fused.py calls it,
# --fast-math) as bf16/{new,base}/mha_bf16.so and the f32 mha.toy and
# mha_causal.toy as f32/{new,base}/; sm_90a only.
set -euo pipefail
A=build-var/s37/a
BASE=${BASE:?BASE: the build folder of the commit before}
export DCCC_COMPILER_LAUNCHER=ccache
rm -rf $A && mkdir -p $A/seqlens $A/bf16 $A/f32
cp bench/cuda/bench_fused.py $A/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $A/seqlens/
sed -e 's/fn mha_bf16_f32_scores(/fn mha_bf16(/' -e 's/fn mha_causal_bf16_f32_scores(/fn mha_causal(/' \
  examples/mha_bf16_f32_scores.toy > $A/fa2.toy
for v in new base; do
  D=./build/tools/dccc
  [[ $v == base ]] && D=$BASE/tools/dccc
  mkdir -p $A/bf16/$v $A/f32/$v
  $D --target=cuda --fast-math --cuda-arch=sm_90a -o $A/bf16/$v/mha_bf16.so $A/fa2.toy &
  $D --target=cuda --cuda-arch=sm_90a -o $A/f32/$v/mha.so examples/mha.toy &
  wait
  $D --target=cuda --cuda-arch=sm_90a -o $A/f32/$v/mha_causal.so examples/mha_causal.toy
done
strip --strip-unneeded $A/*/*/*.so
du -sh $A
