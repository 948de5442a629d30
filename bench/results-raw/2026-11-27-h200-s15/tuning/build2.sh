#!/bin/bash
cd /work/main/build-tune
for v in new= c2=2,4,64,2 g2=2,2,64,4 f2=1,8,32,2; do
  n=${v%%=*}; t=${v#*=}; mkdir -p $n; export PTXLOG=$PWD/$n/ptx.txt; rm -f $PTXLOG
  fl=""; [ -n "$t" ] && fl="--attention-tiles=$t"
  DCCC_NVCC=$PWD/nvcc-v.sh ../build/tools/dccc --target=cuda --cuda-arch=sm_90 $fl -o $n/mha_bf16.so ../examples/mha_bf16.toy &
  DCCC_NVCC=$PWD/nvcc-v.sh ../build/tools/dccc --target=cuda --cuda-arch=sm_90 $fl -o $n/mha_causal_bf16.so mha_causal_bf16.toy
  wait
  if [ $n = new ]; then
    DCCC_NVCC=$PWD/nvcc-v.sh ../build/tools/dccc --target=cuda --cuda-arch=sm_90 -o $n/mha.so ../examples/mha.toy &
    DCCC_NVCC=$PWD/nvcc-v.sh ../build/tools/dccc --target=cuda --cuda-arch=sm_90 -o $n/mha_causal.so ../examples/mha_causal.toy
    wait
  fi
  echo "$n $t done"
done
strip */*.so; rm -f */*.h
