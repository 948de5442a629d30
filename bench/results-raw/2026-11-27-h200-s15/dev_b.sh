#!/bin/bash
# Device call B: the benchmark, bf16 and f32, this build against session 14's libraries (old/)
# interleaved in the same run, with FA2-varlen / cuDNN (bf16) and the efficient kernel / SDPA-eff (f32);
# then FlexAttention on race and squad; kernel instruction counts with Nsight Compute.
cd "$(dirname "$0")"
R=$OUT/b; mkdir -p $R
timeout 200 python3 bench_fused.py --dir . --variants s14=old --seqlens seqlens --mask full,causal --D 64,128 --reps 20 --out $R/bench_fused_bf16.txt > $R/bench_fused_bf16_log.txt 2>&1; echo "bf16 rc=$?"
timeout 200 python3 bench_fused.py --dir . --dtype f32 --variants s14=old --seqlens seqlens --mask full,causal --D 64,128 --reps 10 --out $R/bench_fused_f32.txt > $R/bench_fused_f32_log.txt 2>&1; echo "f32 rc=$?"
for k in new:. s14:old; do
  timeout 120 ncu --clock-control none --kernel-name regex:'mha_bf16__k0__d64' --launch-skip 3 --launch-count 1 --section SpeedOfLight --section InstructionStats --section Occupancy python3 bench_fused.py --dir ${k#*:} --seqlens seqlens --batches race --mask full --D 64 --reps 2 > $R/ncu_${k%%:*}_race_d64.txt 2>&1
done
grep -E "Duration|Issued Instructions  " $R/ncu_*_race_d64.txt
timeout 280 python3 bench_fused.py --dir . --flex --seqlens seqlens --batches race,squad,mnli --mask full,causal --D 64,128 --reps 10 --out $R/bench_flex.txt > $R/bench_flex_log.txt 2>&1; echo "flex rc=$?"
