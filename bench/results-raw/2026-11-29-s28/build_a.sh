#!/bin/bash
# Builds build-var/s28/a for dev_s28.sh PART a (run here, from the repository
# root, with build/ at the commit under test; the device script copies each
# mha_bf16.so to mha_causal_bf16.so): the FA2-precision program
# (examples/mha_bf16_f32_scores.toy, functions renamed as bench_fused.py
# calls them) with --fast-math, sm_90a only, as on/ (L2 prefetch of the
# slot's next entry, AttentionKernel::prefetch_l2), off/
# (--attention-prefetch=off: session 27's kernel) and ons/ (prefetch with
# --attention-grid=static: the persistent grid, whose next entry is exact).
set -euo pipefail
F=build-var/s28/a
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
build on mha_bf16 $F/fa2.toy --fast-math --attention-prefetch=on &
build off mha_bf16 $F/fa2.toy --fast-math --attention-prefetch=off &
wait
build ons mha_bf16 $F/fa2.toy --fast-math --attention-prefetch=on --attention-grid=static
du -sh $F
