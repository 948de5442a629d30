#!/bin/bash
# Builds build-var/s37/d for dev_s37.sh PART d (from the repository root,
# build/ at the commit under test): f32 examples/mha_causal.toy as the
# planner builds it (new/) and without the mask-free copy of the tile body
# (nou/: --attention-unmasked=off); sm_90a only.
set -euo pipefail
A=build-var/s37/d
export DCCC_COMPILER_LAUNCHER=ccache
rm -rf $A && mkdir -p $A/seqlens $A/f32/new $A/f32/nou
cp bench/cuda/bench_fused.py $A/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $A/seqlens/
D=./build/tools/dccc
$D --target=cuda --cuda-arch=sm_90a -o $A/f32/new/mha_causal.so examples/mha_causal.toy &
$D --target=cuda --cuda-arch=sm_90a --attention-unmasked=off -o $A/f32/nou/mha_causal.so examples/mha_causal.toy &
wait
strip --strip-unneeded $A/*/*/*.so
du -sh $A
