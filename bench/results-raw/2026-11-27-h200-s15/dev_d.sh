#!/bin/bash
# Device call D: the working tree's kernels (next/: invariant divisions as one multiply, finite-row
# subtractions) against the committed build (.) and session 14's (old/), interleaved; checks and
# sanitizers on next/.
cd "$(dirname "$0")"
R=$OUT/d; mkdir -p $R
python3 bench_fused.py --dir next --lengths 4096,0,1,17,300 --check-only 2>&1 | tail -4 | tee $R/fused_check_bf16.txt
python3 bench_fused.py --dir next --dtype f32 --lengths 4096,0,1,17,300 --check-only 2>&1 | tail -4 | tee $R/fused_check_f32.txt
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 86 python3 bench_fused.py --dir next --lengths 300,0,1,17 --D 64,128 --check-only > $R/memcheck_bf16.txt 2>&1; echo "memcheck bf16 rc=$?"; grep "ERROR SUMMARY" $R/memcheck_bf16.txt | tail -1
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 86 python3 bench_fused.py --dir next --lengths 70,0,1,17 --D 64,128 --mask full --check-only > $R/racecheck_bf16.txt 2>&1; echo "racecheck bf16 rc=$?"; grep "RACECHECK SUMMARY" $R/racecheck_bf16.txt | tail -1
timeout 200 python3 bench_fused.py --dir next --variants cur=.,s14=old --seqlens seqlens --mask full,causal --D 64,128 --reps 20 --out $R/bench_fused_bf16.txt > $R/bench_fused_bf16_log.txt 2>&1; echo "bf16 rc=$?"
timeout 200 python3 bench_fused.py --dir next --dtype f32 --variants cur=.,s14=old --seqlens seqlens --mask full,causal --D 64,128 --reps 10 --out $R/bench_fused_f32.txt > $R/bench_fused_f32_log.txt 2>&1; echo "f32 rc=$?"
timeout 120 ncu --clock-control none --kernel-name regex:'mha_bf16__k0__d64' --launch-skip 3 --launch-count 1 --section SpeedOfLight --section InstructionStats python3 bench_fused.py --dir next --seqlens seqlens --batches race --mask full --D 64 --reps 2 > $R/ncu_next_race_d64.txt 2>&1
grep -E "Duration|Issued Instructions  " $R/ncu_next_race_d64.txt
