#!/bin/bash
cd /work/main/build-tune
for v in a=1,4,64,3 b=1,4,32,3 c=2,4,64,2 d=2,4,32,2 e=1,8,64,2 f=1,8,32,2 g=2,2,64,4 h=2,2,32,4 i=1,4,64,2; do
  n=${v%%=*}; t=${v#*=}; mkdir -p $n; export PTXLOG=$PWD/$n/ptx.txt; rm -f $PTXLOG
  DCCC_NVCC=$PWD/nvcc-v.sh ../build/tools/dccc --target=cuda --cuda-arch=sm_90 --attention-tiles=$t -o $n/mha_bf16.so ../examples/mha_bf16.toy &
  DCCC_NVCC=$PWD/nvcc-v.sh ../build/tools/dccc --target=cuda --cuda-arch=sm_90 --attention-tiles=$t -o $n/mha_causal_bf16.so mha_causal_bf16.toy
  wait
  echo "$n $t done"
done
