#!/bin/bash
# Device calls (session 17), from the repository root with build-gpu/ carried
# (scripts/gpu_bundle.sh) for PART=a; build-var/ for b and c: the bundle's mha_bf16.so, mha_causal_bf16.so,
# bench_fused.py and seqlens/, f32main/ with mha.so and mha_causal.so,
# f32_scores/ from the bundle, flash/ with fa.so and fa_materialized.so, grid_static/ and grid_atomic/: mha_bf16.so,
# mha_causal_bf16.so, mha.so, mha_causal.so built with --attention-grid=static
# and =atomic). PART=a: the GPU tests (CudaBackend.*: every example against
# the CPU backend, causal_attention.toy's one-pass kernel and
# mha_bf16_f32_scores.toy included), the float64 differential tests of
# mha_bf16_f32_scores.toy's two functions (and mha_bf16's, as before).
# PART=b: the bf16 benchmark (both entry points; the f32-scores program and
# the persistent grids as variants) and the f32 one with the grids. PART=c:
# flash_attention.toy's benchmark through the stream entry (flash/: fa.so
# and fa_materialized.so) and compute-sanitizer on the persistent grids.
# PART=d: b's bf16 table with --flush-l2. (Each call is a fresh machine: the
# device is handed back after 30 s idle.)
R=$OUT; mkdir -p /tmp/dccc-gpu
if [[ $PART == a ]]; then
cd build-gpu || exit 1
tar -xJf test.tar.xz -C /tmp/dccc-gpu
[[ -f online.tar.xz && ! -d online ]] && tar -xJf online.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
  DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
  timeout 450 /tmp/dccc-gpu/dccc_cuda_backend_tests 2>&1 | tail -40 > $R/gpu_test.txt
grep -E "OK \]|FAILED|PASSED|error|Error" $R/gpu_test.txt | head -20
for fn in mha_bf16_f32_scores mha_causal_bf16_f32_scores mha_bf16; do
  timeout 60 python3 attention_diff.py --prebuilt online $fn --target=cuda > $R/online_$fn.txt 2>&1; tail -1 $R/online_$fn.txt
done
fi
if [[ $PART == b || $PART == c || $PART == d ]]; then cd build-var || exit 1; fi
if [[ $PART == d ]]; then  # run b's bf16 table again, every call with a cold L2 (--flush-l2)
timeout 250 python3 bench_fused.py --dir . --seqlens seqlens --entry both --reps 20 --flush-l2 \
  --variants f32s=f32_scores,static=grid_static,atomic=grid_atomic --out $R/bench_fused_bf16_flush.txt > $R/bench_fused_bf16_flush_log.txt 2>&1
echo "bench_fused bf16 flush rc=$?"; grep -v variant $R/bench_fused_bf16_flush_log.txt
fi
if [[ $PART == b ]]; then
timeout 250 python3 bench_fused.py --dir . --seqlens seqlens --entry both --reps 20 \
  --variants f32s=f32_scores,static=grid_static,atomic=grid_atomic --out $R/bench_fused_bf16.txt > $R/bench_fused_bf16_log.txt 2>&1
echo "bench_fused bf16 rc=$?"; cat $R/bench_fused_bf16_log.txt
timeout 200 python3 bench_fused.py --dir f32main --seqlens seqlens --dtype f32 --entry both --reps 10 \
  --variants static=grid_static,atomic=grid_atomic --out $R/bench_fused_f32.txt > $R/bench_fused_f32_log.txt 2>&1
echo "bench_fused f32 rc=$?"; cat $R/bench_fused_f32_log.txt
fi
if [[ $PART == c ]]; then
timeout 150 python3 ../bench/cuda/bench_flash.py --dir flash --seqlens seqlens --reps 20 --out $R/bench_flash.txt \
  > $R/bench_flash_log.txt 2>&1; echo "bench_flash rc=$?"; cat $R/bench_flash_log.txt
for g in grid_atomic grid_static; do
  for t in racecheck memcheck; do
    [[ $g == grid_static && $t == memcheck ]] && continue
    timeout 130 compute-sanitizer --tool $t python3 bench_fused.py --dir $g --lengths 300,0,1,17,70 --check-only \
      --dccc-only --D 64 --mask full,causal > $R/${t}_$g.txt 2>&1
    echo "$t $g: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Hazard|check OK|wrong' $R/${t}_$g.txt | sort | uniq -c | tr '\n' ' ')"
  done
done
fi
