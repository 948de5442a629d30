#!/bin/bash
# Builds build-var/s34/a for dev_s34.sh PART a (from the repository root,
# build/ at the commit under test): f32 examples/mha.toy and mha_causal.toy
# as the planner builds them (new/) and with one K/V stage in f32's wgmma
# form (s1/: --attention-stages=1, head dim 64 at 3 blocks an SM), and one
# stage without the mask-free copy (s1nou/).
set -euo pipefail
B=build-var/s34/a
rm -rf $B && mkdir -p $B/seqlens $B/new $B/s1 $B/s1nou
cp bench/cuda/bench_fused.py $B/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $B/seqlens/
for ex in mha mha_causal; do
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $B/new/$ex.so examples/$ex.toy &
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --attention-stages=1 -o $B/s1/$ex.so examples/$ex.toy &
  wait
done
./build/tools/dccc --target=cuda --cuda-arch=sm_90a --attention-stages=1 --attention-unmasked=off -o $B/s1nou/mha_causal.so examples/mha_causal.toy
cp $B/s1/mha.so $B/s1nou/mha.so
strip --strip-unneeded $B/*/*.so
du -sh $B
