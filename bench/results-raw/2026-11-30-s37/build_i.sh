#!/bin/bash
# Builds build-var/s37/i for dev_s37.sh PART i (from the repository root,
# build/ at the commit under test; CU=<the build folder of a dccc whose K/V copies
# keep only the whole-lines 16-byte path (no fallback for unaligned or
# strided tensors: __trap; a measurement)>): the bf16 FA2-precision program (as build_a.sh's) from both
# (new/, nofb/); sm_90a only.
set -euo pipefail
A=build-var/s37/i
CU=${CU:?CU: the build folder of the variant}
export DCCC_COMPILER_LAUNCHER=ccache
rm -rf $A && mkdir -p $A/seqlens $A/bf16/new $A/bf16/nofb
cp bench/cuda/bench_fused.py $A/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $A/seqlens/
sed -e 's/fn mha_bf16_f32_scores(/fn mha_bf16(/' -e 's/fn mha_causal_bf16_f32_scores(/fn mha_causal(/' \
  examples/mha_bf16_f32_scores.toy > $A/fa2.toy
./build/tools/dccc --target=cuda --fast-math --cuda-arch=sm_90a -o $A/bf16/new/mha_bf16.so $A/fa2.toy &
$CU/tools/dccc --target=cuda --fast-math --cuda-arch=sm_90a -o $A/bf16/nofb/mha_bf16.so $A/fa2.toy &
wait
strip --strip-unneeded $A/*/*/*.so
du -sh $A
