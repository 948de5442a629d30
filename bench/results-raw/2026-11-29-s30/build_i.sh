#!/bin/bash
# Builds build-var/s30/i for dev_s30.sh PART i (run from the repository root,
# build/ at the compiler under test): examples/mha.toy and mha_causal.toy
# (f32, 3xTF32, sm_90a) as new/ (the final compiler, a91905b: the next
# tile's copy after the conversion), prev/ (build-var/s30/e/new: commit
# e4a8056's defaults) and base/ (session 29's final).
set -euo pipefail
F=build-var/s30/i
rm -rf $F && mkdir -p $F/seqlens $F/new
cp bench/cuda/bench_fused.py $F/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $F/seqlens/
cp -r build-var/s29/b/wg $F/base
cp -r build-var/s30/e/new $F/prev
for ex in mha mha_causal; do
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $F/new/$ex.so examples/$ex.toy &
done
wait
strip --strip-unneeded $F/new/*.so
du -sh $F
