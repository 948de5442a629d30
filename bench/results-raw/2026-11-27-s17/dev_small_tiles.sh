#!/bin/bash
# Smaller query tiles on the short batches (session 17, evidence for a
# per-launch tile choice): the default (4 warps of 16 rows, 64 keys, 3 blocks
# an SM) against --attention-tiles=1,1,64,3 (one warp, 16 rows a block) and
# 1,2,64,3 (32 rows), bf16, D = 64 and 128, end to end and with a cold L2.
R=$OUT
cd build-var || exit 1
for fl in "" "--flush-l2"; do
timeout 250 python3 bench_fused.py --dir . --seqlens seqlens --batches mnli,cola,wiki128 --reps 20 $fl \
  --variants w1=t1_1_64_3,w2=t1_2_64_3 > $R/small$fl.txt 2>&1; cat $R/small$fl.txt
done
