#!/bin/bash
# Builds build-var/s30/e for dev_s30.sh PART f (run from the repository root,
# build/ at the final compiler): examples/mha.toy and mha_causal.toy (f32,
# 3xTF32, sm_90a) as new/ (the defaults), sync/ (--attention-f32-wgmma=off)
# and base/ (session 29's final libraries, build-var/s29/b/wg), and the new
# build's cubin.
set -euo pipefail
F=build-var/s30/e
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
build sync --attention-f32-wgmma=off &
wait
./build/tools/dccc --target=cuda --emit=cuda examples/mha.toy > $F/mha.cu
/usr/local/cuda/bin/nvcc -cubin -gencode arch=compute_90a,code=sm_90a -I runtime/include -O3 -o $F/mha.cubin $F/mha.cu 2>/dev/null
rm $F/mha.cu
du -sh $F
