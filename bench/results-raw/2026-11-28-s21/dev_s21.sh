#!/bin/bash
# Device calls (session 21), from the repository root, build-var/s21a carried
# (bench_fused.py, seqlens, include/, libdccrt.a, libs.tar.xz with the
# variant folders built by build-var/s21a/build.sh = build_libs.sh here).
# PART=a: the f32-scores program (mha_bf16_f32_scores.toy, FlashAttention-2's
# computation) with and without --fast-math against mha_bf16.toy: float64
# checks, bf16 B = 128 timing with both as variants (L2 flushed), and ncu's
# pipe utilisation for race D = 64 full of mha_bf16 and of f32sf.
R=$OUT; mkdir -p /tmp/dccc-gpu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
cd build-var/s21a || exit 1
tar -xJf libs.tar.xz
check() {  # check DIR DTYPE -> $R/check_DIR_DTYPE.txt
  local f=$R/check_$1_$2.txt
  timeout 60 python3 bench_fused.py --dir $1 --dtype $2 --lengths 4096,0,1,17,300 --check-only > $f 2>&1
  timeout 40 python3 bench_fused.py --dir $1 --dtype $2 --lengths 600,590,610 --D 128 --check-only >> $f 2>&1
  timeout 40 python3 bench_fused.py --dir $1 --dtype $2 --lengths 33,1,0,65,7 --D 64,128 --check-only >> $f 2>&1
  echo "check $1 $2: $(grep -c 'check OK' $f) OK, $(grep -ci 'wrong\|error' $f) wrong"
}
sanitize() {  # sanitize DIR DTYPE
  for tool in memcheck racecheck; do
    timeout 100 compute-sanitizer --tool $tool python3 bench_fused.py --dir $1 --dtype $2 --lengths 300,0,1,17,70 --check-only \
      --dccc-only --D 64,128 --mask full,causal > $R/${tool}_$1_$2.txt 2>&1
    echo "$tool $1 $2: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${tool}_$1_$2.txt | tail -1)"
  done
}
pipes() {  # pipes DIR BATCH D NAME: ncu pipe utilisation and instruction mix of the fused kernel
  timeout 120 ncu --clock-control none --kernel-name regex:__k0__d$3 --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats \
    --section Occupancy --metrics smsp__inst_executed_pipe_fp16.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_xu.sum,smsp__inst_executed.sum,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fp16_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_xu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_active \
    python3 bench_fused.py --dir $1 --seqlens seqlens --batches $2 --mask full --D $3 --reps 2 --dccc-only > $R/ncu_$4.txt 2>&1
  echo "ncu $4 rc=$?: $(grep -E 'Duration|Executed Ipc A|pipe_.*pct|inst_executed' $R/ncu_$4.txt | tr -s ' ' | tr '\n' ';')"
}
if [[ $PART == a ]]; then
for v in f32s f32sf; do check $v bf16; done
sanitize f32sf bf16
timeout 360 python3 bench_fused.py --dir cur --seqlens seqlens --reps 30 --flush-l2 --variants f32s=f32s,f32sf=f32sf \
  --out $R/bench_bf16.txt > $R/bench_bf16_log.txt 2>&1
echo "bench bf16 rc=$?"; grep -E "full|causal" $R/bench_bf16_log.txt | tail -40
pipes cur race 64 cur_race64
pipes f32sf race 64 f32sf_race64
fi
if [[ $PART == b ]]; then
# After the two compiler changes (a division rounded to 16 bits by a cast
# one multiply by the row's reciprocal; causal tiles below the diagonal
# without the mask): new/ (mha_bf16, bf16 causal), f32sf2/ (f32-scores,
# --fast-math), f32s2/ (f32-scores) against cur/ (the session's first
# mha_bf16 libraries): float64 checks, memcheck / racecheck, bf16 timing.
for v in new f32sf2 f32s2; do check $v bf16; done
sanitize new bf16
sanitize f32sf2 bf16
timeout 400 python3 bench_fused.py --dir new --seqlens seqlens --reps 30 --flush-l2 --variants cur=cur,f32sf=f32sf2,f32s=f32s2 \
  --out $R/bench_bf16.txt > $R/bench_bf16_log.txt 2>&1
echo "bench bf16 rc=$?"; grep -E "full|causal" $R/bench_bf16_log.txt | tail -80
fi
if [[ $PART == c ]]; then
# Which form of the unmasked copy (AttentionKernel::clear_cond) pays, causal
# only, built with a temporary switch in the printer (DCC_CLEAR_MODE):
# m3 = three copies (unmasked / full / partial), m2 = two (unmasked / the
# partial tile's checked body for the rest), m0 = none; bm* the bf16
# mha_causal.toy, fm* the f32-scores program with --fast-math. Then ncu's
# per-SASS stall samples for f32sf2 on wiki128, D = 128, full.
for v in fm2 bm2; do check $v bf16; done
timeout 300 python3 bench_fused.py --dir fm3 --mask causal --seqlens seqlens --reps 30 --flush-l2 \
  --variants fm2=fm2,fm0=fm0,bm3=bm3,bm2=bm2,bm0=bm0 --out $R/bench_causal.txt > $R/bench_causal_log.txt 2>&1
echo "bench causal rc=$?"; grep -E "causal" $R/bench_causal_log.txt | tail -80
timeout 120 ncu --clock-control none --kernel-name regex:__k0__d128 --launch-skip 3 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats \
  --section InstructionStats --import-source no -o /tmp/prof_w \
  python3 bench_fused.py --dir f32sf2 --seqlens seqlens --batches wiki128 --mask full --D 128 --reps 2 --dccc-only > /tmp/ncu_log_w.txt 2>&1
echo "ncu rc=$?"; tail -2 /tmp/ncu_log_w.txt
ncu -i /tmp/prof_w.ncu-rep --page source --csv --print-source sass > /tmp/sass_w.csv 2>/dev/null
xz -9 -c /tmp/sass_w.csv > $R/sass_f32sf2_wiki128_d128.csv.xz
ncu -i /tmp/prof_w.ncu-rep --page details > $R/details_f32sf2_wiki128_d128.txt 2>&1
grep -E "Duration|Executed Ipc A|Executed Instructions  |Registers|Achieved Occ" $R/details_f32sf2_wiki128_d128.txt | tr -s ' '
fi
if [[ $PART == d ]]; then
# The f32-scores program with --fast-math (fdef/, the committed compiler)
# against two tile choices (ft64/: 64 keys a tile at every head dim,
# --attention-tiles=1,4,64,3; fm2/: 128 query rows a block, 4 warps of 32
# rows, mma.sync, 2 blocks an SM, --attention-tiles=2,4,64,2) and against
# mha_bf16.toy as written (cur/): float64 checks, timing full and causal.
for v in fdef ft64 fm2; do check $v bf16; done
timeout 450 python3 bench_fused.py --dir fdef --seqlens seqlens --reps 30 --flush-l2 \
  --variants t64=ft64,m2=fm2,asw=cur --out $R/bench_tiles.txt > $R/bench_tiles_log.txt 2>&1
echo "bench rc=$?"; grep -E "full|causal" $R/bench_tiles_log.txt | tail -80
fi
if [[ $PART == e ]]; then
# The final libraries: fin/ (mha_bf16_f32_scores.toy with --fast-math under
# the names bench_fused.py calls), finb/ (mha_bf16.toy and the bf16
# mha_causal.toy), with cur/ (mha_bf16 at the session's start) and fdef/
# (the f32-scores program after the division step, before the P-rounding
# and the 192-key threshold) as variants: float64 checks, memcheck and
# racecheck, then the bf16 table, the L2 flushed.
for v in fin finb; do check $v bf16; sanitize $v bf16; done
timeout 420 python3 bench_fused.py --dir fin --seqlens seqlens --reps 30 --flush-l2 \
  --variants asw=finb,asw0=cur,fdef=fdef --out $R/bench_final.txt > $R/bench_final_log.txt 2>&1
echo "bench rc=$?"; grep -E "full|causal" $R/bench_final_log.txt | tail -80
fi
if [[ $PART == f ]]; then
# Every CUDA backend test with the session's final compiler (test.tar.xz).
tar -xJf test.tar.xz -C /tmp/dccc-gpu
ROOT=$(cd ../.. && pwd)
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
  DCCC_CUDA_SCHEDULES_DIRS="$ROOT/tests/cuda/schedules" DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 \
  timeout 560 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.*' > $R/gpu_test_all.txt 2>&1
echo "rc=$?"; grep -E "OK \]|FAILED|PASSED|largest|Failure" $R/gpu_test_all.txt | head -20
fi
if [[ $PART == g ]]; then
# A lane's two 16-bit output columns rounded and packed by one cvt from
# their f32 values (fin2/, finb2/) against the final libraries before
# (fin/, finb/): float64 checks, memcheck, then bf16 timing with both pairs.
for v in fin2 finb2; do check $v bf16; done
for v in fin2 finb2; do
  timeout 100 compute-sanitizer --tool memcheck python3 bench_fused.py --dir $v --lengths 300,0,1,17,70 --check-only \
    --dccc-only --D 64,128 --mask full,causal > $R/memcheck_$v.txt 2>&1
  echo "memcheck $v: $(grep -E 'ERROR SUMMARY' $R/memcheck_$v.txt | tail -1)"
done
timeout 420 python3 bench_fused.py --dir fin2 --seqlens seqlens --reps 30 --flush-l2 \
  --variants fin=fin,asw2=finb2,asw=finb --out $R/bench_pack.txt > $R/bench_pack_log.txt 2>&1
echo "bench rc=$?"; grep -E "full|causal" $R/bench_pack_log.txt | tail -80
fi
