#!/bin/bash
# Device calls (session 20), from the repository root, build-var/s20a carried
# (bench_fused.py, seqlens, libs.tar.xz: def/, s3/, s4/ -- mha_bf16.so,
# mha_causal_bf16.so (the bf16 mha_causal.toy), mha.so, mha_causal.so, built
# here by build-var/s20a/build.sh with dccc --target=cuda and
# --attention-stages=3 / 4 for s3 / s4).
# PART=a: float64 checks of s3 and s4 (a 4,096-token sequence with 0/1/17/300,
# and a 600-token launch that takes d128L), memcheck and racecheck on s3 and
# s4, then bf16 B = 128 with s3 and s4 as variants, the L2 flushed.
# PART=b: f32 (3xTF32) likewise.
R=$OUT; mkdir -p /tmp/dccc-gpu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
cd build-var/s20a || exit 1
[[ -f def/mha_bf16.so ]] || tar -xJf libs.tar.xz
if [[ $PART == a ]]; then
for v in s3 s4; do
  for dt in bf16 f32; do
    timeout 60 python3 bench_fused.py --dir $v --dtype $dt --lengths 4096,0,1,17,300 --check-only > $R/check_${v}_$dt.txt 2>&1
    timeout 40 python3 bench_fused.py --dir $v --dtype $dt --lengths 600,590,610 --D 128 --check-only >> $R/check_${v}_$dt.txt 2>&1
    echo "check $v $dt rc=$?: $(grep -c 'check OK' $R/check_${v}_$dt.txt) OK, $(grep -ci 'wrong\|error' $R/check_${v}_$dt.txt) wrong"
  done
  for tool in memcheck racecheck; do
    timeout 100 compute-sanitizer --tool $tool python3 bench_fused.py --dir $v --lengths 300,0,1,17,70 --check-only \
      --dccc-only --D 64,128 --mask full,causal > $R/${tool}_$v.txt 2>&1
    echo "$tool $v: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|check OK|wrong' $R/${tool}_$v.txt | sort | uniq -c | tr '\n' ' ')"
  done
done
timeout 330 python3 bench_fused.py --dir def --seqlens seqlens --reps 30 --flush-l2 --variants s3=s3,s4=s4 \
  --out $R/bench_bf16.txt > $R/bench_bf16_log.txt 2>&1
echo "bench bf16 rc=$?"; cat $R/bench_bf16_log.txt | tail -30
fi
if [[ $PART == b ]]; then
timeout 400 python3 bench_fused.py --dir def --dtype f32 --seqlens seqlens --reps 20 --flush-l2 --variants s3=s3,s4=s4 \
  --out $R/bench_f32.txt > $R/bench_f32_log.txt 2>&1
echo "bench f32 rc=$?"; cat $R/bench_f32_log.txt | tail -30
fi
if [[ $PART == c ]]; then
# The refactored element-wise GPU tests (test.tar.xz: dccc_cuda_backend_tests
# and its libraries; the repository's examples and schedules), then where
# wiki128's time goes at D = 128 (FA2/dccc 0.55): ncu's details for dccc's
# kernel and FA2's, and per-SASS-instruction stall samples of dccc's.
tar -xJf test.tar.xz -C /tmp/dccc-gpu
ROOT=$(cd ../.. && pwd)
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
  DCCC_CUDA_SCHEDULES_DIRS="$ROOT/tests/cuda/schedules" DCCC_RUNTIME_INCLUDE="$PWD/include" \
  timeout 150 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.FastExp*:CudaBackend.Exp16*' > $R/gpu_test.txt 2>&1
grep -E "OK \]|FAILED|PASSED|largest|rror" $R/gpu_test.txt | head -20
for who in dccc fa2; do
  k="regex:mha_bf16__k0__d128"; [[ $who == fa2 ]] && k="regex:flash"
  timeout 90 ncu --clock-control none --kernel-name "$k" --launch-skip 3 --launch-count 1 --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
    --section ComputeWorkloadAnalysis --section InstructionStats \
    python3 bench_fused.py --dir def --seqlens seqlens --batches wiki128 --mask full --D 128 --reps 2 > $R/ncu_${who}.txt 2>&1
  echo "ncu $who rc=$?: $(grep -E 'Duration|Executed Ipc A|Registers Per|Achieved Occupancy|Block Limit' $R/ncu_${who}.txt | tr -s ' ' | tr '\n' ';')"
done
timeout 120 ncu --clock-control none --kernel-name regex:mha_bf16__k0__d128 --launch-skip 3 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --import-source no -o /tmp/prof_dccc \
  python3 bench_fused.py --dir def --seqlens seqlens --batches wiki128 --mask full --D 128 --reps 2 > /tmp/ncu_src_log.txt 2>&1
echo "ncu src rc=$?"; tail -3 /tmp/ncu_src_log.txt
ncu -i /tmp/prof_dccc.ncu-rep --page source --csv --print-source sass > /tmp/sass_dccc.csv 2> /tmp/sass_err.txt
echo "source page rc=$? $(wc -l < /tmp/sass_dccc.csv) lines"; head -c 400 /tmp/sass_err.txt
xz -9 -c /tmp/sass_dccc.csv > $R/sass_dccc_wiki128_d128.csv.xz
fi
if [[ $PART == d ]]; then
# The epilogue/prologue step (new/: paired 32-bit output stores, one-multiply
# divisions by the row sum, unchecked Q loads) against the session's first
# libraries (def/): float64 checks, memcheck and racecheck, then bf16 with
# def as the variant `old`, the L2 flushed.
for dt in bf16 f32; do
  timeout 60 python3 bench_fused.py --dir new --dtype $dt --lengths 4096,0,1,17,300 --check-only > $R/check_new_$dt.txt 2>&1
  timeout 40 python3 bench_fused.py --dir new --dtype $dt --lengths 600,590,610 --D 128 --check-only >> $R/check_new_$dt.txt 2>&1
  timeout 40 python3 bench_fused.py --dir new --dtype $dt --lengths 33,1,0,65,7 --D 64,128 --check-only >> $R/check_new_$dt.txt 2>&1
  echo "check new $dt: $(grep -c 'check OK' $R/check_new_$dt.txt) OK, $(grep -ci 'wrong\|error' $R/check_new_$dt.txt) wrong"
done
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool python3 bench_fused.py --dir new --lengths 300,0,1,17,70 --check-only \
    --dccc-only --D 64,128 --mask full,causal >> $R/check_new_bf16.txt 2>&1
  echo "$tool new: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/check_new_bf16.txt | tail -1)"
done
timeout 330 python3 bench_fused.py --dir new --seqlens seqlens --reps 30 --flush-l2 --variants old=def \
  --out $R/bench_bf16_new.txt > $R/bench_bf16_new_log.txt 2>&1
echo "bench bf16 rc=$?"; grep -E "full|causal" $R/bench_bf16_new_log.txt | tail -40
fi
if [[ $PART == e ]]; then
# Every CUDA backend test with this session's final compiler (test.tar.xz).
tar -xJf test.tar.xz -C /tmp/dccc-gpu
ROOT=$(cd ../.. && pwd)
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
  DCCC_CUDA_SCHEDULES_DIRS="$ROOT/tests/cuda/schedules" DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 \
  timeout 560 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.*' > $R/gpu_test_all.txt 2>&1
echo "rc=$?"; grep -E "OK \]|FAILED|PASSED|largest|Failure" $R/gpu_test_all.txt | head -20
fi
if [[ $PART == f ]]; then
# Where the time goes after the epilogue step (new/): ncu details and
# per-SASS-instruction stall samples, wiki128 D = 128 and race D = 64, full.
for cfg in "wiki128 128" "race 64"; do
  set -- $cfg
  timeout 120 ncu --clock-control none --kernel-name regex:mha_bf16__k0__d$2 --launch-skip 3 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats \
    --import-source no -o /tmp/prof_$1 \
    python3 bench_fused.py --dir new --seqlens seqlens --batches $1 --mask full --D $2 --reps 2 > /tmp/ncu_log_$1.txt 2>&1
  echo "ncu $1 rc=$?"
  ncu -i /tmp/prof_$1.ncu-rep --page source --csv --print-source sass > /tmp/sass_$1.csv 2>/dev/null
  xz -9 -c /tmp/sass_$1.csv > $R/sass_new_$1_d$2.csv.xz
  ncu -i /tmp/prof_$1.ncu-rep --page details > $R/details_new_$1_d$2.txt 2>&1
  grep -E "Duration|Executed Ipc A|Executed Instructions  " $R/details_new_$1_d$2.txt | tr -s ' '
done
fi
if [[ $PART == g ]]; then
# The final libraries (fin/: the final compiler, f32 stores paired as float2
# and f32 Q loads unchecked too): float64 checks, memcheck and racecheck,
# then bf16 and f32 against FA2 / cuDNN / the memory-efficient kernel with
# the session's first libraries (def/) as the variant `old`, the L2 flushed.
for dt in bf16 f32; do
  timeout 60 python3 bench_fused.py --dir fin --dtype $dt --lengths 4096,0,1,17,300 --check-only > $R/check_fin_$dt.txt 2>&1
  timeout 40 python3 bench_fused.py --dir fin --dtype $dt --lengths 600,590,610 --D 128 --check-only >> $R/check_fin_$dt.txt 2>&1
  timeout 40 python3 bench_fused.py --dir fin --dtype $dt --lengths 33,1,0,65,7 --D 64,128 --check-only >> $R/check_fin_$dt.txt 2>&1
  echo "check fin $dt: $(grep -c 'check OK' $R/check_fin_$dt.txt) OK, $(grep -ci 'wrong\|error' $R/check_fin_$dt.txt) wrong"
  for tool in memcheck racecheck; do
    timeout 100 compute-sanitizer --tool $tool python3 bench_fused.py --dir fin --dtype $dt --lengths 300,0,1,17,70 --check-only \
      --dccc-only --D 64,128 --mask full,causal >> $R/check_fin_$dt.txt 2>&1
    echo "$tool fin $dt: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/check_fin_$dt.txt | tail -1)"
  done
done
timeout 200 python3 bench_fused.py --dir fin --seqlens seqlens --reps 30 --flush-l2 --variants old=def \
  --out $R/bench_bf16_fin.txt > $R/bench_bf16_fin_log.txt 2>&1
echo "bench bf16 rc=$?"
timeout 250 python3 bench_fused.py --dir fin --dtype f32 --seqlens seqlens --reps 20 --flush-l2 --variants old=def \
  --out $R/bench_f32_fin.txt > $R/bench_f32_fin_log.txt 2>&1
echo "bench f32 rc=$?"; grep -E "full|causal" $R/bench_f32_fin_log.txt | tail -40
fi
if [[ $PART == h ]]; then
# With the block's fixed work cut, the tile choices session 18 rejected,
# again: k64 (--attention-tiles=1,4,64,3: 64 keys a tile at every head dim)
# and w8 (--attention-tiles=1,8,64,2: two warpgroups, 128 query rows a
# block), bf16, against the final libraries (fin/), the L2 flushed.
for v in k64 w8; do
  timeout 60 python3 bench_fused.py --dir $v --lengths 4096,0,1,17,300 --check-only > $R/check_$v.txt 2>&1
  echo "check $v: $(grep -c 'check OK' $R/check_$v.txt) OK, $(grep -ci 'wrong\|error' $R/check_$v.txt) wrong"
done
timeout 300 python3 bench_fused.py --dir fin --seqlens seqlens --reps 30 --flush-l2 --variants k64=k64,w8=w8 \
  --out $R/bench_bf16_tiles.txt > $R/bench_bf16_tiles_log.txt 2>&1
echo "bench rc=$?"; grep variant $R/bench_bf16_tiles.txt
fi
if [[ $PART == i ]]; then
# ent/: the block's offsets and lengths in its tile-list entry (computed by
# the host), against fin/ (the libraries before): float64 checks, memcheck,
# racecheck, then bf16 and f32 with fin as the variant, the L2 flushed.
for dt in bf16 f32; do
  timeout 60 python3 bench_fused.py --dir ent --dtype $dt --lengths 4096,0,1,17,300 --check-only > $R/check_ent_$dt.txt 2>&1
  timeout 40 python3 bench_fused.py --dir ent --dtype $dt --lengths 600,590,610 --D 128 --check-only >> $R/check_ent_$dt.txt 2>&1
  timeout 40 python3 bench_fused.py --dir ent --dtype $dt --lengths 33,1,0,65,7 --D 64,128 --check-only >> $R/check_ent_$dt.txt 2>&1
  echo "check ent $dt: $(grep -c 'check OK' $R/check_ent_$dt.txt) OK, $(grep -ci 'wrong\|error' $R/check_ent_$dt.txt) wrong"
  for tool in memcheck racecheck; do
    timeout 100 compute-sanitizer --tool $tool python3 bench_fused.py --dir ent --dtype $dt --lengths 300,0,1,17,70 --check-only \
      --dccc-only --D 64,128 --mask full,causal >> $R/check_ent_$dt.txt 2>&1
    echo "$tool ent $dt: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/check_ent_$dt.txt | tail -1)"
  done
done
timeout 200 python3 bench_fused.py --dir ent --seqlens seqlens --reps 30 --flush-l2 --variants fin=fin \
  --out $R/bench_bf16_ent.txt > $R/bench_bf16_ent_log.txt 2>&1
echo "bench bf16 rc=$?"; grep variant $R/bench_bf16_ent.txt
timeout 250 python3 bench_fused.py --dir ent --dtype f32 --seqlens seqlens --reps 20 --flush-l2 --variants fin=fin \
  --out $R/bench_f32_ent.txt > $R/bench_f32_ent_log.txt 2>&1
echo "bench f32 rc=$?"; grep variant $R/bench_f32_ent.txt
fi
