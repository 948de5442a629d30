#!/bin/bash
# Builds build-var/s30/c for dev_s30.sh PART d (run from the repository root,
# build/ at the compiler under test): examples/mha.toy and mha_causal.toy
# (f32, 3xTF32, sm_90a) as new/ (the defaults), all/
# (--attention-f32-wgmma=all: head dim 128 on wgmma for every launch),
# sync/ (=off: the mma.sync form), and base/ (session 29's final libraries,
# build-var/s29/b/wg).
set -euo pipefail
F=build-var/s30/c
rm -rf $F && mkdir -p $F/seqlens
cp bench/cuda/bench_fused.py $F/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $F/seqlens/
cp -r build-var/s29/b/wg $F/base
build() {  # build DIR FLAGS...
  local v=$1; shift
  mkdir -p $F/$v
  for ex in mha mha_causal; do
    ./build/tools/dccc --target=cuda --cuda-arch=sm_90a "$@" -o $F/$v/$ex.so examples/$ex.toy
    strip --strip-unneeded $F/$v/$ex.so
  done
}
build new &
build all --attention-f32-wgmma=all &
wait
build sync --attention-f32-wgmma=off
du -sh $F
