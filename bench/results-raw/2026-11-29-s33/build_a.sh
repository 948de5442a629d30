#!/bin/bash
# Builds build-var/s33/a for dev_s33.sh PART a (from the repository root,
# build/ at the commit under test): f32 examples/mha.toy and mha_causal.toy
# as the planner builds them (new/) and with --attention-unmasked=off (nou/).
set -euo pipefail
B=build-var/s33/a
rm -rf $B && mkdir -p $B/seqlens $B/new $B/nou
cp bench/cuda/bench_fused.py $B/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $B/seqlens/
for ex in mha mha_causal; do
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $B/new/$ex.so examples/$ex.toy &
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --attention-unmasked=off -o $B/nou/$ex.so examples/$ex.toy &
  wait
done
strip --strip-unneeded $B/*/*.so
du -sh $B
