#!/bin/bash
# Device calls (session 19), from the repository root, build-var/s19 carried
# (test.tar.xz, bench_fused.py, seqlens and libs.tar.xz: the libraries below
# from build-gpu/, compressed to fit the carry), built by
# (scripts/gpu_bundle.sh; fast_math/ holds examples/mha_bf16_f32_scores.toy
# under bench_fused.py's names and mha.toy / mha_causal.toy, all built with
# --fast-math).
# PART=a: CudaBackend.FastExpWithinItsBound and the 16-bit math test, the
# float64 checks of the --fast-math libraries (4,096-token sequence), memcheck
# on them, and the bf16 benchmark: mha_bf16.toy (default) against FA2-varlen
# and cuDNN with the f32-scores program accurate (f32s) and --fast-math (fast)
# as variants in the same interleaving.
# PART=f: the fixed FastExp test, ncu (race, D = 64 / 128: default, --fast-math,
# FA2), the f32 benchmark (mha.toy, 3xTF32) with --fast-math as a variant.
R=$OUT; mkdir -p /tmp/dccc-gpu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
cd "$(ls -d build-var/s19* | head -1)" || exit 1
[[ -f mha_bf16.so ]] || tar -xJf libs.tar.xz
if [[ $PART == a ]]; then
tar -xJf test.tar.xz -C /tmp/dccc-gpu
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
  DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
  timeout 150 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.FastExp*:CudaBackend.Exp16*' > $R/gpu_test.txt 2>&1
grep -E "OK \]|FAILED|PASSED|largest|error|Error" $R/gpu_test.txt | head -20
for dt in bf16 f32; do
  timeout 90 python3 bench_fused.py --dir fast_math --dtype $dt --lengths 4096,0,1,17,300 --check-only > $R/check_fast_$dt.txt 2>&1
  echo "check fast $dt rc=$?: $(grep -c 'check OK' $R/check_fast_$dt.txt) OK"; grep -E "check|wrong" $R/check_fast_$dt.txt | head -4
done
timeout 90 python3 bench_fused.py --dir f32_scores --lengths 4096,0,1,17,300 --check-only > $R/check_f32s.txt 2>&1
echo "check f32s rc=$?: $(grep -c 'check OK' $R/check_f32s.txt) OK"; grep -E "check|wrong" $R/check_f32s.txt | head -4
timeout 100 compute-sanitizer --tool memcheck python3 bench_fused.py --dir fast_math --lengths 300,0,1,17,70 --check-only \
  --dccc-only --D 64,128 --mask full,causal > $R/memcheck_fast.txt 2>&1
echo "memcheck fast: $(grep -E 'ERROR SUMMARY|check OK|wrong' $R/memcheck_fast.txt | sort | uniq -c | tr '\n' ' ')"
timeout 330 python3 bench_fused.py --dir . --seqlens seqlens --reps 20 --variants f32s=f32_scores,fast=fast_math \
  --out $R/bench_fused_bf16.txt > $R/bench_fused_bf16_log.txt 2>&1
echo "bench_fused bf16 rc=$?"; cat $R/bench_fused_bf16_log.txt
fi
if [[ $PART == f ]]; then
tar -xJf test.tar.xz -C /tmp/dccc-gpu
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib timeout 100 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.FastExp*' \
  > $R/gpu_test2.txt 2>&1
grep -E "OK \]|FAILED|PASSED|largest|Failure" $R/gpu_test2.txt | head -20
timeout 240 python3 bench_fused.py --dir . --dtype f32 --seqlens seqlens --reps 20 --variants fast=fast_math \
  --out $R/bench_fused_f32.txt > $R/bench_fused_f32_log.txt 2>&1
echo "bench_fused f32 rc=$?"; cat $R/bench_fused_f32_log.txt
# Where the time goes: ncu on race, D = 64 and 128, full, the default
# mha_bf16 (top), the --fast-math f32-scores program and FA2: speed of light,
# memory, warp states and every stall reason per issued instruction.
for D in 64 128; do
  for who in dccc fast fa2; do
    dir=.; [[ $who == fast ]] && dir=fast_math
    k="regex:mha_bf16__k0__d$D"; [[ $who == fa2 ]] && k="regex:flash"
    timeout 75 ncu --clock-control none --kernel-name "$k" --launch-skip 3 --launch-count 1 --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy \
      --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,lts__t_bytes.sum.per_second,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum \
      python3 bench_fused.py --dir $dir --seqlens seqlens --batches race --mask full --D $D --reps 2 > $R/ncu_${who}_d$D.txt 2>&1
    echo "ncu $who D=$D rc=$?: $(grep -E 'Duration|Executed Ipc A|L2 Cache Throughput|Memory Throughput' $R/ncu_${who}_d$D.txt | tr -s ' ' | tr '\n' ';')"
  done
done
fi
if [[ $PART == g ]]; then
# The FastExp test with the bundle's environment, and ncu's per-SASS-instruction
# stall samples of the default mha_bf16 kernel and the --fast-math one (race,
# D = 64, full) to see which instructions the warps wait at.
tar -xJf test.tar.xz -C /tmp/dccc-gpu
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
  DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCCC_RUNTIME_INCLUDE="$PWD/include" \
  timeout 100 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.FastExp*' > $R/gpu_test3.txt 2>&1
grep -E "OK \]|FAILED|PASSED|largest|Failure" $R/gpu_test3.txt | head -20
for who in dccc fast; do
  dir=.; [[ $who == fast ]] && dir=fast_math
  timeout 120 ncu --clock-control none --kernel-name regex:mha_bf16__k0__d64 --launch-skip 3 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --import-source no -o /tmp/prof_$who \
    python3 bench_fused.py --dir $dir --seqlens seqlens --batches race --mask full --D 64 --reps 2 > $R/ncu_src_${who}_log.txt 2>&1
  echo "ncu src $who rc=$?"
  ncu -i /tmp/prof_$who.ncu-rep --page source --csv --print-source sass > $R/sass_${who}.csv 2> $R/sass_${who}_err.txt
  echo "source page $who rc=$? $(wc -l < $R/sass_${who}.csv) lines"; head -c 600 $R/sass_${who}_err.txt
  ncu -i /tmp/prof_$who.ncu-rep --page details > $R/details_${who}.txt 2>&1
done
fi
if [[ $PART == h ]]; then
# build-var/s19b carried: libs.tar.xz holds the libraries of this session's
# later compiler (the stores' block invariants: the output offset read once a
# block; the first K and V tile copied before Q is read) at its top and in
# fast_math/ (--fast-math), and the earlier ones of PART a in old/ and
# old_fast/. Float64 checks (4,096-token sequence), sanitizers on the new
# bf16 kernels, then the bf16 and f32 benchmarks with the old libraries as
# variants in the same interleaving.
cd ../s19b || exit 1
tar -xJf libs.tar.xz
for dt in bf16 f32; do
  for dir in . fast_math; do
    timeout 90 python3 bench_fused.py --dir $dir --dtype $dt --lengths 4096,0,1,17,300 --check-only > $R/check_${dt}_${dir/./new}.txt 2>&1
    echo "check $dt $dir rc=$?: $(grep -c 'check OK' $R/check_${dt}_${dir/./new}.txt) OK"; grep -E "check|wrong" $R/check_${dt}_${dir/./new}.txt | head -4
  done
done
for t in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $t python3 bench_fused.py --dir . --lengths 300,0,1,17,70 --check-only \
    --dccc-only --D 64,128 --mask full,causal > $R/${t}.txt 2>&1
  echo "$t: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Hazard|check OK|wrong' $R/${t}.txt | sort | uniq -c | tr '\n' ' ')"
done
timeout 200 python3 bench_fused.py --dir . --seqlens seqlens --reps 20 --variants old=old,fast=fast_math,oldfast=old_fast \
  --out $R/bench_bf16.txt > $R/bench_bf16_log.txt 2>&1
echo "bench bf16 rc=$?"
timeout 200 python3 bench_fused.py --dir . --dtype f32 --seqlens seqlens --reps 20 --variants old=old,fast=fast_math \
  --out $R/bench_f32.txt > $R/bench_f32_log.txt 2>&1
echo "bench f32 rc=$?"
fi
if [[ $PART == i ]]; then
# build-var/s19b carried: compute-sanitizer on the later compiler's bf16
# libraries, and ncu's per-SASS stall samples of its kernel (race, full,
# D = 64 and 128).
cd ../s19b || exit 1
tar -xJf libs.tar.xz
for t in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $t python3 bench_fused.py --dir . --lengths 300,0,1,17,70 --check-only \
    --dccc-only --D 64,128 --mask full,causal > /tmp/${t}.txt 2>&1
  echo "$t: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Hazard|check OK|wrong' /tmp/${t}.txt | sort | uniq -c | tr '\n' ' ')" | tee -a $R/sanitizers.txt
done
for D in 64 128; do
  timeout 120 ncu --clock-control none --kernel-name regex:mha_bf16__k0__d$D --launch-skip 3 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no -o /tmp/prof_$D \
    python3 bench_fused.py --dir . --seqlens seqlens --batches race --mask full --D $D --reps 2 > /tmp/ncu_$D.txt 2>&1
  echo "ncu D=$D rc=$?"
  ncu -i /tmp/prof_$D.ncu-rep --page source --csv --print-source sass > $R/sass_d$D.csv 2>/dev/null; xz -9 $R/sass_d$D.csv
  ncu -i /tmp/prof_$D.ncu-rep --page details > $R/details_d$D.txt 2>&1
  grep -E "Duration|Warp Cycles Per Issued" $R/details_d$D.txt
done
fi
if [[ $PART == j ]]; then
# build-var/s19c carried: the compiler after the epilogue's column check
# was hoisted (columns unchecked when all of the lane's lie inside) and Q read
# 4 bytes at a time, at the top and in fast_math/; the previous PART h ones in
# prev/ and prev_fast/. Float64 checks, sanitizers, bf16 and f32 benchmarks.
cd ../s19c || exit 1
tar -xJf libs.tar.xz
for dt in bf16 f32; do
  for dir in . fast_math; do
    echo "== $dt $dir" >> $R/checks.txt
    timeout 90 python3 bench_fused.py --dir $dir --dtype $dt --lengths 4096,0,1,17,300 --check-only >> $R/checks.txt 2>&1
    echo "check $dt $dir rc=$?" | tee -a $R/checks.txt
  done
done
grep -c "check OK" $R/checks.txt
for t in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $t python3 bench_fused.py --dir . --lengths 300,0,1,17,70 --check-only \
    --dccc-only --D 64,128 --mask full,causal > /tmp/${t}.txt 2>&1
  echo "$t: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Hazard|check OK|wrong' /tmp/${t}.txt | sort | uniq -c | tr '\n' ' ')" | tee -a $R/sanitizers.txt
done
timeout 200 python3 bench_fused.py --dir . --seqlens seqlens --reps 20 --variants prev=prev,fast=fast_math,prevfast=prev_fast \
  --out $R/bench_bf16.txt > $R/bench_bf16_log.txt 2>&1
echo "bench bf16 rc=$?"
timeout 200 python3 bench_fused.py --dir . --dtype f32 --seqlens seqlens --reps 20 --variants prev=prev,fast=fast_math \
  --out $R/bench_f32.txt > $R/bench_f32_log.txt 2>&1
echo "bench f32 rc=$?"
fi
if [[ $PART == k ]]; then
# build-var/s19d carried: wgmma descriptors built once a stage (each k-step's
# by an add) and the stages' shared addresses once a block, at the top and in
# fast_math/; prev/ and prev_fast/ the PART j libraries, old/ the session's
# first (PART a). Checks, sanitizers, and the bf16 benchmark twice.
cd ../s19d || exit 1
tar -xJf libs.tar.xz
for dir in . fast_math; do
  echo "== bf16 $dir" >> $R/checks.txt
  timeout 90 python3 bench_fused.py --dir $dir --lengths 4096,0,1,17,300 --check-only >> $R/checks.txt 2>&1
  echo "check bf16 $dir rc=$?" | tee -a $R/checks.txt
done
grep -c "check OK" $R/checks.txt
for t in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $t python3 bench_fused.py --dir . --lengths 300,0,1,17,70 --check-only \
    --dccc-only --D 64,128 --mask full,causal > /tmp/${t}.txt 2>&1
  echo "$t: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Hazard|check OK|wrong' /tmp/${t}.txt | sort | uniq -c | tr '\n' ' ')" | tee -a $R/sanitizers.txt
done
for r in 1 2; do
  timeout 200 python3 bench_fused.py --dir . --seqlens seqlens --reps 20 --variants prev=prev,old=old,fast=fast_math,prevfast=prev_fast \
    --out $R/bench_bf16_r$r.txt > $R/bench_bf16_r${r}_log.txt 2>&1
  echo "bench bf16 r$r rc=$?"
done
fi
if [[ $PART == l ]]; then
# build-var/s19e carried: the session's final compiler's bf16 libraries (top;
# fast_math/: the f32-scores program with --fast-math; k64/: 64 keys a tile
# at every head dim, --attention-tiles=1,4,64,3, sm_90a), old/ the session's
# first. Checks of the new ones, then the bf16 benchmark with 50 repetitions.
cd ../s19e || exit 1
tar -xJf libs.tar.xz
for dir in . k64; do
  echo "== bf16 $dir" >> $R/checks.txt
  timeout 90 python3 bench_fused.py --dir $dir --lengths 4096,0,1,17,300 --check-only >> $R/checks.txt 2>&1
  echo "check bf16 $dir rc=$?" | tee -a $R/checks.txt
done
grep -c "check OK" $R/checks.txt
timeout 400 python3 bench_fused.py --dir . --seqlens seqlens --reps 50 --variants old=old,fast=fast_math,k64=k64 \
  --out $R/bench_bf16.txt > $R/bench_bf16_log.txt 2>&1
echo "bench bf16 rc=$?"
fi
if [[ $PART == m ]]; then
# build-var/s19f carried: the final compiler -- head dim 128's long-key
# instantiation (d128L: 64 keys a tile with wgmma when a launch's entries
# average 256 keys or more) -- its test binary (test.tar.xz: CudaBackend.*,
# every example on this GPU against the CPU backend and float64) and its bf16
# libraries (prev/: PART l's). Checks with long keys (the d128L path),
# sanitizers on a 600-token launch (entries of 543 keys on average), bench.
cd ../s19f || exit 1
tar -xJf libs.tar.xz
tar -xJf test.tar.xz -C /tmp/dccc-gpu
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
  DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
  timeout 330 /tmp/dccc-gpu/dccc_cuda_backend_tests > $R/gpu_test.txt 2>&1
echo "gpu tests rc=$?"; grep -E "OK \]|FAILED|PASSED|largest" $R/gpu_test.txt | head -20
timeout 90 python3 bench_fused.py --dir . --lengths 4096,0,1,17,300 --check-only > $R/checks.txt 2>&1
echo "check rc=$?: $(grep -c 'check OK' $R/checks.txt) OK"
timeout 60 python3 bench_fused.py --dir . --lengths 600,1,17 --check-only >> $R/checks.txt 2>&1
echo "check long rc=$?: $(grep -c 'check OK' $R/checks.txt) OK"
for t in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $t python3 bench_fused.py --dir . --lengths 600,1,17 --check-only \
    --dccc-only --D 64,128 --mask full,causal > /tmp/${t}.txt 2>&1
  echo "$t: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Hazard|check OK|wrong' /tmp/${t}.txt | sort | uniq -c | tr '\n' ' ')" | tee -a $R/sanitizers.txt
done
timeout 200 python3 bench_fused.py --dir . --seqlens seqlens --reps 30 --variants prev=prev \
  --out $R/bench_bf16.txt > $R/bench_bf16_log.txt 2>&1
echo "bench bf16 rc=$?"
fi
if [[ $PART == n ]]; then
# build-var/s19f carried (PART m's, with old/: the session's first kernels):
# the GPU tests PART m's time limit cut (all but the examples test), and the
# bf16 benchmark with the L2 flushed before every call (the variants are
# timed after cuDNN, whose padded copies evict the inputs from L2, while
# dccc follows the last variant on the same inputs: identical kernels timed
# 1.02-1.13 apart in PART m) -- final against old (session start) and prev
# (without d128L).
cd ../s19f || exit 1
tar -xJf libs.tar.xz
tar -xJf test.tar.xz -C /tmp/dccc-gpu
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
  DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
  timeout 200 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.*-CudaBackend.ExamplesMatch*' > $R/gpu_test2.txt 2>&1
echo "gpu tests rc=$?"; grep -E "OK \]|FAILED|PASSED|largest" $R/gpu_test2.txt | head -20
timeout 300 python3 bench_fused.py --dir . --seqlens seqlens --reps 30 --flush-l2 --variants old=old,prev=prev \
  --out $R/bench_bf16_flush.txt > $R/bench_bf16_flush_log.txt 2>&1
echo "bench bf16 flush rc=$?"
fi
if [[ $PART == o ]]; then
# build-var/s19g carried: the final libraries at the top, the f32-scores
# program with the accurate expf (f32s/) and with --fast-math (fast/), all
# from the final compiler; the bf16 benchmark with the L2 flushed before
# every call (the fair comparison of variants).
cd ../s19g || exit 1
tar -xJf libs.tar.xz
timeout 300 python3 bench_fused.py --dir . --seqlens seqlens --reps 30 --flush-l2 --variants f32s=f32s,fast=fast \
  --out $R/bench_bf16_flush.txt > $R/bench_bf16_flush_log.txt 2>&1
echo "bench bf16 flush rc=$?"
fi
