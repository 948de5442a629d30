#!/bin/bash
cd "$(dirname "$0")"
python3 bench_fused.py --dir old --variants new1=new1,new2=new2,f3=f3,b4=b4 --seqlens seqlens --D 64,128 --mask full,causal --reps 12 --out $OUT/tune_bf16.txt > $OUT/tune_bf16_log.txt 2>&1
python3 bench_fused.py --dtype f32 --dir old --variants new2=new2 --seqlens seqlens --D 64,128 --mask full,causal --reps 10 --out $OUT/tune_f32.txt > $OUT/tune_f32_log.txt 2>&1
python3 bench_fused.py --dir new2 --lengths 4096,0,1,17,300 --check-only --D 64,128 > $OUT/check_bf16.txt 2>&1
python3 bench_fused.py --dir new2 --dtype f32 --lengths 4096,0,1,17,300 --check-only --D 64,128 > $OUT/check_f32.txt 2>&1
timeout 200 ncu --clock-control none --kernel-name regex:'mha_bf16__k0__d64' --launch-skip 3 --launch-count 1 --section SpeedOfLight --section InstructionStats --section Occupancy python3 bench_fused.py --dir new2 --seqlens seqlens --batches race --mask full --D 64 --reps 2 > $OUT/ncu_new2_race_d64.txt 2>&1
echo done
