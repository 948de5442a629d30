#!/bin/bash
# Head dim 128's tiles (session 17): the default (1 m16 tile a warp, 4 warps,
# 32 keys, 3 blocks an SM) against --attention-tiles=1,4,64,2 / 1,4,64,3 /
# 1,4,32,2 (build-var/tM_W_N_B), bf16, end to end and with a cold L2.
R=$OUT
cd build-var || exit 1
for fl in "" "--flush-l2"; do
timeout 250 python3 bench_fused.py --dir . --seqlens seqlens --D 128 --reps 20 $fl \
  --variants t1_4_64_2=t1_4_64_2,t1_4_64_3=t1_4_64_3,t1_4_32_2=t1_4_32_2 > $R/tiles128$fl.txt 2>&1; cat $R/tiles128$fl.txt
done
