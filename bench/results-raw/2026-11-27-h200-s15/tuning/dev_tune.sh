#!/bin/bash
# Tuning run: every variant's fused bf16 kernel against FA2-varlen and cuDNN, interleaved.
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee $OUT/gpu.txt
python3 bench_fused.py --dir a --variants b=b,c=c,d=d,e=e,f=f,g=g,h=h,i=i --seqlens seqlens --D 64,128 --mask full,causal --reps 10 --out $OUT/tune.txt 2>&1 | tail -n 300 > $OUT/tune_log.txt
echo rc=$?
