#!/bin/bash
# Session 37 device calls, from the repository root (P: a prefix for the
# output files; PART: which part).
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/${P}gpu.txt
check() {  # check DIR DTYPE
  local f=$R/${P}check_$(basename $(pwd))_$1.txt
  timeout 120 python3 ../bench_fused.py --dir $1 --dtype $2 --lengths 4096,0,1,17,300 --check-only > $f 2>&1
  timeout 60 python3 ../bench_fused.py --dir $1 --dtype $2 --lengths 33,1,0,65,7,130,129 --D 64,128 --check-only >> $f 2>&1
  echo "check $(basename $(pwd))/$1: $(grep -c 'check OK' $f) OK, $(grep -ci 'wrong\|error\|Traceback' $f) wrong"
}
if [[ $PART == a ]]; then
  # build-var/s37/a (build_a.sh): the tile list by key tiles run (new)
  # against by key count (base); causal only (without a mask the two orders
  # are the same).
  cd build-var/s37/a/bf16 || exit 1
  for v in new base; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  check new bf16
  timeout 300 python3 ../bench_fused.py --dir new --dtype bf16 --seqlens ../seqlens --reps 20 --flush-l2 --mask causal \
    --variants base=base --out $R/${P}bench_bf16.txt > $R/${P}log_bf16.txt 2>&1
  echo "bench bf16 rc=$?"; cat $R/${P}bench_bf16.txt
  cd ../f32 || exit 1
  check new f32
  timeout 240 python3 ../bench_fused.py --dir new --dtype f32 --seqlens ../seqlens --reps 10 --flush-l2 --mask causal \
    --variants base=base --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == b ]]; then
  # build-var/s37/b (build_b.sh): the planner's order (new) against the
  # order before (base) and the other order (bf16 tiles, f32 seq); causal
  # only (without a mask the orders are the same).
  cd build-var/s37/b/bf16 || exit 1
  for v in new base tiles; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  check new bf16
  timeout 300 python3 ../bench_fused.py --dir new --dtype bf16 --seqlens ../seqlens --reps 20 --flush-l2 --mask causal \
    --variants base=base,tiles=tiles --out $R/${P}bench_bf16.txt > $R/${P}log_bf16.txt 2>&1
  echo "bench bf16 rc=$?"; cat $R/${P}bench_bf16.txt
  cd ../f32 || exit 1
  check new f32
  timeout 240 python3 ../bench_fused.py --dir new --dtype f32 --seqlens ../seqlens --reps 10 --flush-l2 --mask causal \
    --variants base=base,seq=seq --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == c ]]; then
  # build-var/s37/c (build_c.sh): bf16 tilings against the planner's, with
  # the memory floor and the launch's time (--floor).
  cd build-var/s37/c/bf16 || exit 1
  for v in new t8a t8b k64; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  check new bf16
  timeout 500 python3 ../bench_fused.py --dir new --dtype bf16 --seqlens ../seqlens --reps 20 --flush-l2 --floor \
    --variants t8a=t8a,t8b=t8b,k64=k64 --out $R/${P}bench_bf16.txt > $R/${P}log_bf16.txt 2>&1
  echo "bench bf16 rc=$?"; cat $R/${P}bench_bf16.txt
fi
if [[ $PART == d ]]; then
  # build-var/s37/d (build_d.sh): f32 causal without the mask-free copy
  # (nou) against the planner's (new); then ncu's stall samples of the
  # planner's head-dim-128 kernel on squad (causal).
  cd build-var/s37/d/f32 || exit 1
  timeout 240 python3 ../bench_fused.py --dir new --dtype f32 --seqlens ../seqlens --reps 10 --flush-l2 --mask causal \
    --variants nou=nou --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
  timeout 200 ncu --clock-control none --kernel-name regex:mha_causal__k0__d128 --launch-skip 3 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats \
    --import-source no -o /tmp/prof_d128 \
    python3 ../bench_fused.py --dir new --dtype f32 --seqlens ../seqlens --batches squad --mask causal --D 128 --reps 2 \
    > /tmp/ncu_d128.txt 2>&1
  echo "ncu rc=$?"; tail -3 /tmp/ncu_d128.txt
  ncu -i /tmp/prof_d128.ncu-rep --page source --csv --print-source sass > $R/${P}sass_d128.csv 2>/dev/null; xz -9 $R/${P}sass_d128.csv
  ncu -i /tmp/prof_d128.ncu-rep --page details > $R/${P}details_d128.txt 2>&1
  grep -E "Duration|Throughput|Warp Cycles|Issued|Achieved Occupancy|Registers|Stall" $R/${P}details_d128.txt | head -30
fi
sanitize() {  # sanitize DIR DTYPE TOOL LENGTHS
  local f=$R/${P}$3_$1_${4//,/_}.txt
  timeout 150 compute-sanitizer --tool $3 python3 ../bench_fused.py --dir $1 --dtype $2 --lengths $4 --check-only \
    --dccc-only --D 64,128 --mask full,causal > $f 2>&1
  echo "$3 $1 $4: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1), $(grep -c 'check OK' $f) OK"
}
if [[ $PART == e ]]; then
  # build-var/s37/e (build_e.sh): f32 with the tf32 parts' 16-byte shared
  # stores and V's transposed stores on both line parities (new) against
  # the order alone (ord); then ncu's memory sections of the bf16 kernel on
  # wiki128 head dim 128 causal (build-var/s37/b/bf16/new).
  ROOT=$PWD
  cd build-var/s37/e/f32 || exit 1
  check new f32
  sanitize new f32 memcheck 300,0,1,17,70
  sanitize new f32 racecheck 300,0,1,17,70
  sanitize new f32 memcheck 13,1,0,7,40
  sanitize new f32 racecheck 13,1,0,7,40
  timeout 300 python3 ../bench_fused.py --dir new --dtype f32 --seqlens ../seqlens --reps 10 --flush-l2 \
    --variants ord=ord --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
  cd $ROOT/build-var/s37/b/bf16 || exit 1
  cp new/mha_bf16.so new/mha_causal_bf16.so
  timeout 150 ncu --clock-control none --kernel-name regex:mha_causal__k0__d128 --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Chart \
    --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section Occupancy \
    python3 ../bench_fused.py --dir new --dtype bf16 --seqlens ../seqlens --batches wiki128 --mask causal --D 128 --reps 2 \
    > $R/${P}ncu_bf16_wiki128_d128.txt 2>&1
  echo "ncu rc=$?"; grep -E "Throughput|Duration|Hit Rate|Busy|Bandwidth|Mem Pipes" $R/${P}ncu_bf16_wiki128_d128.txt | head -30
fi
if [[ $PART == f ]]; then
  # build-var/s37/f (build_f.sh): the GPU test binary at the tf32 parts'
  # 16-byte shared stores (attention and the f32 GEMMs' producers): the
  # attention and contraction examples on the GPU against the CPU backend
  # and float64, and the ragged GEMM sweep.
  cd build-var/s37/f || exit 1
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  DCCC_EXAMPLES_ONLY=mha,mha_causal,flash_attention,mha_window,mha_softcap,causal_attention,mha_bf16,gqa_bf16,mha_bf16_f32_scores,attention_data,transformer_block,batched_gemm,rms_mlp,tril_matmul \
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
    timeout 420 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.ExamplesMatch*:CudaBackend.MmaGemm*' > $R/${P}gpu_test.txt 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) *\]|Failure" $R/${P}gpu_test.txt | tail -8
fi
if [[ $PART == g ]]; then
  # (the rest of PART f, apart: the carry's size) ncu's stall and shared
  # memory samples of the f32 head-dim-128 kernel (build-var/s37/e/f32/new,
  # squad causal) and the bf16 head-dim-128 kernel's spills in its SASS.
  cd build-var/s37/e/f32 || exit 1
  timeout 120 ncu --clock-control none --kernel-name regex:mha_causal__k0__d128 --launch-skip 3 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no -o /tmp/prof_f32 \
    python3 ../bench_fused.py --dir new --dtype f32 --seqlens ../seqlens --batches squad --mask causal --D 128 --reps 2 \
    > /tmp/ncu_f32.txt 2>&1
  echo "ncu rc=$?"
  ncu -i /tmp/prof_f32.ncu-rep --page source --csv --print-source sass > $R/${P}sass_f32_d128.csv 2>/dev/null; xz -9 $R/${P}sass_f32_d128.csv
  ncu -i /tmp/prof_f32.ncu-rep --page details > $R/${P}details_f32_d128.txt 2>&1
  grep -E "Duration|Throughput|excessive" $R/${P}details_f32_d128.txt | head
  cuobjdump -sass -fun '_Z20mha_causal__k0__d12822mha_causal__k0__launch' ../bf16new/mha_bf16.so > $R/${P}sass_bf16_causal_d128.txt 2>&1
  echo "bf16 d128 SASS: $(wc -l < $R/${P}sass_bf16_causal_d128.txt) lines, $(grep -c 'STL' $R/${P}sass_bf16_causal_d128.txt) STL, $(grep -c 'LDL' $R/${P}sass_bf16_causal_d128.txt) LDL"
  xz -9 $R/${P}sass_bf16_causal_d128.txt
fi
if [[ $PART == h ]]; then
  # build-var/s37/h (build_h.sh): bf16 with the next tile's copy issued
  # under S's wgmma (cu) against the planner's (new).
  cd build-var/s37/h/bf16 || exit 1
  for v in new cu; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  check cu bf16
  timeout 300 python3 ../bench_fused.py --dir new --dtype bf16 --seqlens ../seqlens --reps 20 --flush-l2 \
    --variants cu=cu --out $R/${P}bench_bf16.txt > $R/${P}log_bf16.txt 2>&1
  echo "bench bf16 rc=$?"; cat $R/${P}bench_bf16.txt
fi
if [[ $PART == i ]]; then
  # build-var/s37/i (build_i.sh): bf16 with the K/V copies' whole-lines
  # path alone (nofb: no spills at head dim 128) against the planner's (new).
  cd build-var/s37/i/bf16 || exit 1
  for v in new nofb; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  check nofb bf16
  timeout 300 python3 ../bench_fused.py --dir new --dtype bf16 --seqlens ../seqlens --reps 20 --flush-l2 \
    --variants nofb=nofb --out $R/${P}bench_bf16.txt > $R/${P}log_bf16.txt 2>&1
  echo "bench bf16 rc=$?"; cat $R/${P}bench_bf16.txt
fi
if [[ $PART == j ]]; then
  # build-var/s37/j (build_j.sh): one copy path for aligned and unaligned
  # K and V (one) against the planner's at the commit before (new), bf16
  # and f32, with compute-sanitizer on the variant.
  cd build-var/s37/j/bf16 || exit 1
  for v in new one; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  check one bf16
  sanitize one bf16 racecheck 300,0,1,17,70
  timeout 200 python3 ../bench_fused.py --dir new --dtype bf16 --seqlens ../seqlens --reps 20 --flush-l2 \
    --variants one=one --out $R/${P}bench_bf16.txt > $R/${P}log_bf16.txt 2>&1
  echo "bench bf16 rc=$?"; cat $R/${P}bench_bf16.txt
  cd ../f32 || exit 1
  check one f32
  sanitize one f32 memcheck 300,0,1,17,70
  timeout 240 python3 ../bench_fused.py --dir new --dtype f32 --seqlens ../seqlens --reps 10 --flush-l2 \
    --variants one=one --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == k ]]; then
  # PART f again at the final commit (build_f.sh), and a 32,768-token
  # sequence (and the usual short ones) through the final bf16 and f32
  # libraries (build-var/s37/j's one/, copied into build-var/s37/f/libs).
  ROOT=$PWD
  PART=f bash $ROOT/bench/results-raw/2026-11-30-s37/dev_s37.sh
  cd build-var/s37/f/libs || exit 1
  mkdir -p bf16 f32 && cp mha_bf16.so bf16/mha_bf16.so && cp mha_bf16.so bf16/mha_causal_bf16.so
  cp mha.so f32/mha.so && cp mha.so f32/mha_causal.so  # full rows only below
  cp $ROOT/bench/cuda/bench_fused.py .
  timeout 120 python3 bench_fused.py --dir bf16 --dtype bf16 --lengths 32768,0,1 --check-only > $R/${P}long_bf16.txt 2>&1
  echo "32k bf16: $(grep -c 'check OK' $R/${P}long_bf16.txt) OK, $(grep -ci 'wrong\|error\|Traceback' $R/${P}long_bf16.txt) wrong"
  timeout 120 python3 bench_fused.py --dir f32 --dtype f32 --lengths 32768,0,1 --mask full --check-only > $R/${P}long_f32.txt 2>&1
  echo "32k f32: $(grep -c 'check OK' $R/${P}long_f32.txt) OK, $(grep -ci 'wrong\|error\|Traceback' $R/${P}long_f32.txt) wrong"
fi
