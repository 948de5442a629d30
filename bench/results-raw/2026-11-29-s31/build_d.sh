#!/bin/bash
# Builds build-var/s31/d for dev_s31.sh PART d: the FA2-precision program
# (--fast-math, sm_90a) with this compiler: new/ (Q's tile copied a column
# a thread with a pointer step a row; 16-bit outputs staged through shared
# memory), nostage/ (new with --attention-staged-stores=off: the Q copy
# alone), newst/ (new with --attention-grid=static); base/ = build-var/s31/a's
# (commit ecd4d96's defaults).
set -euo pipefail
F=build-var/s31/d
rm -rf $F && mkdir -p $F/seqlens
cp bench/cuda/bench_fused.py $F/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $F/seqlens/
cp -r build-var/s31/a/bf16/base $F/base
cp build-var/s31/a/bf16/fa2.toy $F/
build() {  # build DIR FLAGS...
  local v=$1; shift
  mkdir -p $F/$v
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --explain --fast-math "$@" $F/fa2.toy > $F/explain_$v.txt 2>&1
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --fast-math "$@" -o $F/$v/mha_bf16.so $F/fa2.toy
  cp $F/$v/mha_bf16.so $F/$v/mha_causal_bf16.so
}
build new & build nostage --attention-staged-stores=off & wait
build newst --attention-grid=static
strip --strip-unneeded $F/*/*.so
./build/tools/dccc --target=cuda --emit=cuda --fast-math $F/fa2.toy > $F/fa2.cu
/usr/local/cuda/bin/nvcc -cubin -gencode arch=compute_90a,code=sm_90a -I runtime/include -O3 -o $F/fa2.cubin $F/fa2.cu 2>/dev/null
rm $F/fa2.cu
du -sh $F
