#!/bin/bash
# Device call: examples/flash_attention.toy fused (bench_flash.py: check, the
# shared batches at B = 128, one 32,768-token sequence), the streaming
# instantiation at head dims 320 and 300 (bench_fused.py checks, bf16 and
# f32), and memcheck / racecheck on both. Run from the repository root with
# build-flash/ carried (fa.so, fa_materialized.so, mha_bf16.so, mha.so, seqlens/).
R=$OUT; cd build-flash || exit 1
B=../bench/cuda
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
timeout 300 python3 $B/bench_flash.py --dir . --seqlens seqlens --long 32768 --reps 10 --out $R/bench_flash.txt > $R/bench_flash_log.txt 2>&1; echo "bench_flash rc=$?"; cat $R/bench_flash_log.txt
for dt in bf16 f32; do
  python3 $B/bench_fused.py --dir . --dtype $dt --lengths 300,0,1,17,130 --D 320,300,600,64 --mask full --check-only --dccc-only 2>&1 | tail -4 | tee $R/wide_check_$dt.txt
done
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 86 python3 $B/bench_flash.py --dir . --check-only --dccc-only > $R/memcheck_flash.txt 2>&1; echo "memcheck flash rc=$?"; grep "ERROR SUMMARY" $R/memcheck_flash.txt | tail -1
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 86 python3 $B/bench_flash.py --dir . --check-only --dccc-only > $R/racecheck_flash.txt 2>&1; echo "racecheck flash rc=$?"; grep "RACECHECK SUMMARY" $R/racecheck_flash.txt | tail -1
for dt in bf16 f32; do
  timeout 100 compute-sanitizer --tool memcheck --error-exitcode 86 python3 $B/bench_fused.py --dir . --dtype $dt --lengths 70,0,1,17 --D 320,300 --mask full --check-only --dccc-only > $R/memcheck_wide_$dt.txt 2>&1; echo "memcheck wide $dt rc=$?"; grep "ERROR SUMMARY" $R/memcheck_wide_$dt.txt | tail -1
  timeout 100 compute-sanitizer --tool racecheck --error-exitcode 86 python3 $B/bench_fused.py --dir . --dtype $dt --lengths 70,0,1,17 --D 320 --mask full --check-only --dccc-only > $R/racecheck_wide_$dt.txt 2>&1; echo "racecheck wide $dt rc=$?"; grep "RACECHECK SUMMARY" $R/racecheck_wide_$dt.txt | tail -1
done
