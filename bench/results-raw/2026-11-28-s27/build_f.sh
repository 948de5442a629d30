#!/bin/bash
# Builds build-var/s27/f for dev_s27.sh PART f (the device script copies each mha_bf16.so to mha_causal_bf16.so there, to keep the carry small; run here, from the
# repository root, after scripts/gpu_bundle.sh or with build/ built): the
# FA2-precision program (examples/mha_bf16_f32_scores.toy with its functions
# named as bench_fused.py calls them) with --fast-math, sm_90a only, as
# base/ (defaults), qs/ (--attention-q=smem), t8/ (--attention-tiles=1,8,32,1)
# t8qs/ (both) and qsa/ (--attention-q=smem --attention-grid=atomic); bench_fused.py and the length batches beside them.
set -euo pipefail
F=build-var/s27/f
rm -rf $F && mkdir -p $F/seqlens
cp bench/cuda/bench_fused.py $F/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $F/seqlens/
sed -e 's/fn mha_bf16_f32_scores(/fn mha_bf16(/' -e 's/fn mha_causal_bf16_f32_scores(/fn mha_causal(/' \
  examples/mha_bf16_f32_scores.toy > $F/fa2.toy
build() {
  local v=$1; shift
  mkdir -p $F/$v
  ./build/tools/dccc --target=cuda --fast-math --cuda-arch=sm_90a "$@" -o $F/$v/mha_bf16.so $F/fa2.toy
  strip --strip-unneeded $F/$v/mha_bf16.so
}
build base
build qs --attention-q=smem
build t8 --attention-tiles=1,8,32,1
build t8qs --attention-tiles=1,8,32,1 --attention-q=smem
build qsa --attention-q=smem --attention-grid=atomic
du -sh $F
