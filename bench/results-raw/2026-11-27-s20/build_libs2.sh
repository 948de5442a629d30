#!/bin/bash
# build2.sh VARIANT WHICH FLAGS...: WHICH=bf16 (mha_bf16, bf16 causal) or f32 (mha, mha_causal)
v=$1; w=$2; shift 2
mkdir -p $v
D=/work/main/build/tools/dccc
E=/work/main/examples
if [[ $w == bf16 ]]; then
$D --target=cuda "$@" -o $v/mha_bf16.so $E/mha_bf16.toy && $D --target=cuda "$@" -o $v/mha_causal_bf16.so /tmp/mha_causal_bf16.toy
else
$D --target=cuda "$@" -o $v/mha.so $E/mha.toy && $D --target=cuda "$@" -o $v/mha_causal.so $E/mha_causal.toy
fi
