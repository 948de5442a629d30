#!/bin/bash
# Builds build-var/s37/j for dev_s37.sh PART j (from the repository root,
# build/ at the commit under test; ONE=<the build folder of a dccc whose K/V
# copies take one pointer per thread for aligned and unaligned tensors,
# the element path not unrolled>): the bf16 FA2-precision program (as
# build_a.sh's) and the f32 mha.toy / mha_causal.toy from both (new/, one/);
# sm_90a only.
set -euo pipefail
A=build-var/s37/j
ONE=${ONE:?ONE: the build folder of the variant}
export DCCC_COMPILER_LAUNCHER=ccache
rm -rf $A && mkdir -p $A/seqlens $A/bf16/new $A/bf16/one $A/f32/new $A/f32/one
cp bench/cuda/bench_fused.py $A/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $A/seqlens/
sed -e 's/fn mha_bf16_f32_scores(/fn mha_bf16(/' -e 's/fn mha_causal_bf16_f32_scores(/fn mha_causal(/' \
  examples/mha_bf16_f32_scores.toy > $A/fa2.toy
for v in new one; do
  D=./build/tools/dccc
  [[ $v == one ]] && D=$ONE/tools/dccc
  $D --target=cuda --fast-math --cuda-arch=sm_90a -o $A/bf16/$v/mha_bf16.so $A/fa2.toy &
  $D --target=cuda --cuda-arch=sm_90a -o $A/f32/$v/mha.so examples/mha.toy &
  wait
  $D --target=cuda --cuda-arch=sm_90a -o $A/f32/$v/mha_causal.so examples/mha_causal.toy
done
strip --strip-unneeded $A/*/*/*.so
du -sh $A
