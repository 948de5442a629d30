#!/bin/bash
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
python3 bench_fused.py --dir old --variants new=new,c2=c2,g2=g2,f2=f2 --seqlens seqlens --D 64,128 --mask full,causal --reps 10 --out $OUT/tune_bf16.txt > $OUT/tune_bf16_log.txt 2>&1
python3 bench_fused.py --dtype f32 --dir old --variants new=new --seqlens seqlens --D 64,128 --mask full,causal --reps 10 --out $OUT/tune_f32.txt > $OUT/tune_f32_log.txt 2>&1
cuobjdump -sass -fun '_Z17mha_bf16__k0__d6420mha_bf16__k0__launch' new/mha_bf16.so > $OUT/sass_new_d64.txt 2>&1
timeout 200 ncu --clock-control none --kernel-name regex:'mha_bf16__k0__d64' --launch-skip 3 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section InstructionStats --section Occupancy --section SchedulerStats python3 bench_fused.py --dir new --seqlens seqlens --batches race --mask full --D 64 --reps 2 > $OUT/ncu_new_race_d64.txt 2>&1
echo done
