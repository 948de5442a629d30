#!/bin/bash
# Builds build-var/s32/b for dev_s32.sh PART b (run from the repository root,
# build/ at the commit under test): f32 examples/mha.toy and mha_causal.toy
# with V's tf32 parts made under S's wgmma (new/) against session 31's final
# libraries (base/: build-var/s31/f/f32/new, compiler 009669d; its f32
# kernels print the same as this session's before the change).
set -euo pipefail
B=build-var/s32/b
rm -rf $B && mkdir -p $B/seqlens $B/new
cp bench/cuda/bench_fused.py $B/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $B/seqlens/
cp -r build-var/s31/f/f32/new $B/base
for ex in mha mha_causal; do
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $B/new/$ex.so examples/$ex.toy &
done
wait
strip --strip-unneeded $B/new/*.so
du -sh $B
