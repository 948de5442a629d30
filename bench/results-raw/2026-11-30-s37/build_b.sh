#!/bin/bash
# Builds build-var/s37/b for dev_s37.sh PART b (from the repository root,
# build/ at the commit under test, BASE=<a build folder of the commit
# before>): the planner's tile-list order (new/: bf16 by sequence, its
# query tiles together, most key tiles first; f32 by key tiles run) against
# the order before, by key count (base/, BASE's dccc), and the other order
# of each (bf16 tiles/: --attention-order=tiles; f32 seq/:
# --attention-order=sequences); programs as build_a.sh's, sm_90a only.
set -euo pipefail
A=build-var/s37/b
BASE=${BASE:?BASE: the build folder of the commit before}
export DCCC_COMPILER_LAUNCHER=ccache
rm -rf $A && mkdir -p $A/seqlens $A/bf16 $A/f32
cp bench/cuda/bench_fused.py $A/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $A/seqlens/
sed -e 's/fn mha_bf16_f32_scores(/fn mha_bf16(/' -e 's/fn mha_causal_bf16_f32_scores(/fn mha_causal(/' \
  examples/mha_bf16_f32_scores.toy > $A/fa2.toy
D=./build/tools/dccc
mkdir -p $A/bf16/new $A/bf16/base $A/bf16/tiles $A/f32/new $A/f32/base $A/f32/seq
$D --target=cuda --fast-math --cuda-arch=sm_90a -o $A/bf16/new/mha_bf16.so $A/fa2.toy &
$BASE/tools/dccc --target=cuda --fast-math --cuda-arch=sm_90a -o $A/bf16/base/mha_bf16.so $A/fa2.toy &
wait
$D --target=cuda --fast-math --cuda-arch=sm_90a --attention-order=tiles -o $A/bf16/tiles/mha_bf16.so $A/fa2.toy &
$D --target=cuda --cuda-arch=sm_90a -o $A/f32/new/mha_causal.so examples/mha_causal.toy &
wait
$BASE/tools/dccc --target=cuda --cuda-arch=sm_90a -o $A/f32/base/mha_causal.so examples/mha_causal.toy &
$D --target=cuda --cuda-arch=sm_90a --attention-order=sequences -o $A/f32/seq/mha_causal.so examples/mha_causal.toy &
wait
strip --strip-unneeded $A/*/*/*.so
du -sh $A
