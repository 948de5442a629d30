#!/bin/bash
# Builds build-var/s30/b for dev_s30.sh PART c (run from the repository root,
# build/ at the compiler under test): examples/mha.toy and mha_causal.toy
# (f32, 3xTF32, sm_90a) as new/ (this compiler's defaults), base/ (session
# 29's final libraries, build-var/s29/b/wg, built by its build_b.sh at
# 333aa17) and the new build's cubin.
set -euo pipefail
F=build-var/s30/b
rm -rf $F && mkdir -p $F/seqlens $F/new
cp bench/cuda/bench_fused.py $F/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $F/seqlens/
cp -r build-var/s29/b/wg $F/base
for ex in mha mha_causal; do
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $F/new/$ex.so examples/$ex.toy &
done
wait
strip --strip-unneeded $F/new/*.so
./build/tools/dccc --target=cuda --emit=cuda examples/mha.toy > $F/mha.cu
/usr/local/cuda/bin/nvcc -cubin -gencode arch=compute_90a,code=sm_90a -I runtime/include -O3 -o $F/mha.cubin $F/mha.cu 2>/dev/null
rm $F/mha.cu
du -sh $F
