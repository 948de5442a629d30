#!/bin/bash
# build.sh VARIANT FLAGS...: the four attention libraries of a variant
v=$1; shift
mkdir -p $v
D=/work/main/build/tools/dccc
E=/work/main/examples
$D --target=cuda "$@" -o $v/mha_bf16.so $E/mha_bf16.toy &&
$D --target=cuda "$@" -o $v/mha_causal_bf16.so /tmp/mha_causal_bf16.toy &&
$D --target=cuda "$@" -o $v/mha.so $E/mha.toy &&
$D --target=cuda "$@" -o $v/mha_causal.so $E/mha_causal.toy && echo "$v built"
