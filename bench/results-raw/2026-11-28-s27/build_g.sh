#!/bin/bash
# Builds build-var/s27/g for dev_s27.sh PART g (run here, from the repository
# root, with build/ built at the commit under test; the device script copies
# each FA2-precision mha_bf16.so to mha_causal_bf16.so): the FA2-precision program
# (examples/mha_bf16_f32_scores.toy, functions named as bench_fused.py calls
# them) with --fast-math, sm_90a only, as new/ (the defaults: Q in shared
# memory where it buys a block an SM, AttentionKernel::q_smem), reg/
# (--attention-q=registers: the previous default) and t8qs/
# (--attention-tiles=1,8,32,1 --attention-q=smem: two warpgroups reading Q
# from shared memory, wrong before this session's fix); asw/ is
# examples/mha_bf16.toy as written with the defaults, f16/ the same with
# every bf16 made f16.
set -euo pipefail
F=build-var/s27/g
rm -rf $F && mkdir -p $F/seqlens
cp bench/cuda/bench_fused.py $F/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $F/seqlens/
sed -e 's/fn mha_bf16_f32_scores(/fn mha_bf16(/' -e 's/fn mha_causal_bf16_f32_scores(/fn mha_causal(/' \
  examples/mha_bf16_f32_scores.toy > $F/fa2.toy
build() {  # build DIR LIB TOY FLAGS...
  local v=$1 lib=$2 toy=$3; shift 3
  mkdir -p $F/$v
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a "$@" -o $F/$v/$lib.so $toy
  strip --strip-unneeded $F/$v/$lib.so
}
build new mha_bf16 $F/fa2.toy --fast-math
build reg mha_bf16 $F/fa2.toy --fast-math --attention-q=registers
build t8qs mha_bf16 $F/fa2.toy --fast-math --attention-tiles=1,8,32,1 --attention-q=smem
# As written (mha_bf16.toy and mha_causal.toy with every f32 made bf16), and in f16.
sed -e 's/\]f32/]bf16/g' examples/mha_causal.toy > $F/mha_causal_bf16.toy
sed -e 's/\]bf16/]f16/g' examples/mha_bf16.toy > $F/mha_f16.toy
sed -e 's/\]bf16/]f16/g' $F/mha_causal_bf16.toy > $F/mha_causal_f16.toy
build asw mha_bf16 examples/mha_bf16.toy
build asw mha_causal_bf16 $F/mha_causal_bf16.toy
build f16 mha_f16 $F/mha_f16.toy
build f16 mha_causal_f16 $F/mha_causal_f16.toy
du -sh $F
