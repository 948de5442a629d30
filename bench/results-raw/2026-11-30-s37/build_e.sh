#!/bin/bash
# Builds build-var/s37/e for dev_s37.sh PART e (from the repository root):
# f32 examples/mha.toy and mha_causal.toy, sm_90a only, by build/'s dccc
# into f32/$V/ (V: ord -- the tile-list order alone, the commit before;
# new -- with the tf32 parts' 16-byte shared stores and V's transposed
# stores on lines of both parities).
set -euo pipefail
A=build-var/s37/e
V=${V:?V: ord or new}
export DCCC_COMPILER_LAUNCHER=ccache
mkdir -p $A/seqlens $A/f32/$V
cp bench/cuda/bench_fused.py $A/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $A/seqlens/
D=./build/tools/dccc
$D --target=cuda --cuda-arch=sm_90a -o $A/f32/$V/mha.so examples/mha.toy &
$D --target=cuda --cuda-arch=sm_90a -o $A/f32/$V/mha_causal.so examples/mha_causal.toy &
wait
strip --strip-unneeded $A/f32/$V/*.so
du -sh $A
