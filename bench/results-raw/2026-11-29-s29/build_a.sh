#!/bin/bash
# Builds build-var/s29/a for dev_s29.sh PART a (run from the repository root,
# build/ at the commit under test): examples/mha.toy and mha_causal.toy (f32,
# 3xTF32, sm_90a) as wg/ (the defaults: f32 on tf32 wgmma) and sync/
# (--attention-f32-wgmma=off: session 26's mma.sync form), and wg's cubin
# for the SASS and register counts.
set -euo pipefail
F=build-var/s29/a
rm -rf $F && mkdir -p $F/seqlens
cp bench/cuda/bench_fused.py $F/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $F/seqlens/
build() {  # build DIR FLAGS...
  local v=$1; shift
  mkdir -p $F/$v
  for ex in mha mha_causal; do
    ./build/tools/dccc --target=cuda --cuda-arch=sm_90a "$@" -o $F/$v/$ex.so examples/$ex.toy
    strip --strip-unneeded $F/$v/$ex.so
  done
}
build wg &
build sync --attention-f32-wgmma=off &
wait
./build/tools/dccc --target=cuda --emit=cuda examples/mha.toy > $F/mha.cu
/usr/local/cuda/bin/nvcc -cubin -gencode arch=compute_90a,code=sm_90a -I runtime/include -O3 -o $F/mha.cubin $F/mha.cu 2>/dev/null
rm $F/mha.cu
du -sh $F
