#!/bin/bash
# build.sh VARIANT PROGRAM FLAGS...: PROGRAM=bf16 (mha_bf16.toy and the bf16
# mha_causal.toy) or f32s (mha_bf16_f32_scores.toy with its functions named
# mha_bf16 / mha_causal, so bench_fused.py calls them) or f32 (mha, mha_causal).
v=$1; w=$2; shift 2
mkdir -p $v
D=/work/main/build/tools/dccc
E=/work/main/examples
sed -e 's/\]f32/]bf16/g' $E/mha_causal.toy > /tmp/mha_causal_bf16.toy
sed -e 's/fn mha_bf16_f32_scores(/fn mha_bf16(/; s/fn mha_causal_bf16_f32_scores(/fn mha_causal(/' $E/mha_bf16_f32_scores.toy > /tmp/f32s.toy
case $w in
bf16) $D --target=cuda "$@" -o $v/mha_bf16.so $E/mha_bf16.toy && $D --target=cuda "$@" -o $v/mha_causal_bf16.so /tmp/mha_causal_bf16.toy ;;
f32s) $D --target=cuda "$@" -o $v/mha_bf16.so /tmp/f32s.toy && cp $v/mha_bf16.so $v/mha_causal_bf16.so ;;
f32) $D --target=cuda "$@" -o $v/mha.so $E/mha.toy && $D --target=cuda "$@" -o $v/mha_causal.so $E/mha_causal.toy ;;
esac
