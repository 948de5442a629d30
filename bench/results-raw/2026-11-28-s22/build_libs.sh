#!/bin/bash
# build.sh DIR FLAGS...: batched_gemm_bf16.so built with this compiler and FLAGS
v=$1; shift
mkdir -p $v
/work/main/build/tools/dccc --target=cuda "$@" -o $v/batched_gemm_bf16.so /work/main/examples/batched_gemm_bf16.toy
