#!/bin/bash
# Control run (session 17): is a variant library slower than the main one only
# for being another library? `same/` holds copies of the main mha_bf16.so and
# mha_causal_bf16.so; the variants are listed in two orders. From build-var/.
R=$OUT
cd build-var || exit 1
for fl in "" "--flush-l2"; do
timeout 200 python3 bench_fused.py --dir . --seqlens seqlens --batches race,mnli,cola --D 64 --reps 30 $fl \
  --variants same=same,atomic=grid_atomic,static=grid_static > $R/control1$fl.txt 2>&1; cat $R/control1$fl.txt
timeout 200 python3 bench_fused.py --dir same --seqlens seqlens --batches race,mnli,cola --D 64 --reps 30 $fl \
  --variants static=grid_static,atomic=grid_atomic,main=. > $R/control2$fl.txt 2>&1; cat $R/control2$fl.txt
done
