#!/bin/bash
# Session 33 device calls, from the repository root (P: a prefix for the
# output files; PART: which part).
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/${P}gpu.txt
check() {  # check DIR DTYPE
  local f=$R/${P}check_$(basename $(pwd))_$1.txt
  timeout 120 python3 bench_fused.py --dir $1 --dtype $2 --lengths 4096,0,1,17,300 --check-only > $f 2>&1
  timeout 60 python3 bench_fused.py --dir $1 --dtype $2 --lengths 33,1,0,65,7,130,129 --D 64,128 --check-only >> $f 2>&1
  echo "check $(basename $(pwd))/$1: $(grep -c 'check OK' $f) OK, $(grep -ci 'wrong\|error\|Traceback' $f) wrong"
}
sanitize() {  # sanitize DIR DTYPE TOOL LENGTHS
  local f=$R/${P}$3_$(basename $(pwd))_$1_${4//,/_}.txt
  timeout 120 compute-sanitizer --tool $3 python3 bench_fused.py --dir $1 --dtype $2 --lengths $4 --check-only \
    --dccc-only --D 64,128 --mask full,causal > $f 2>&1
  echo "$3 $1 $4: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1), $(grep -c 'check OK' $f) OK"
}
if [[ $PART == a ]]; then
  # build-var/s33/a (build_a.sh): why f32 causal runs slower than f32 full
  # on the short batches (cola: the same tiles): ncu of both head-dim-64
  # kernels on cola, then the bench with the unmasked copy off (nou).
  cd build-var/s33/a || exit 1
  for m in full causal; do
    timeout 150 ncu --clock-control none --kernel-name regex:__k0__d64\$ --launch-skip 3 --launch-count 1 \
      --section SourceCounters --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section InstructionStats --section SchedulerStats --import-source no -o /tmp/prof_$m \
      python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --batches cola --mask $m --D 64 --reps 2 --dccc-only > /tmp/ncu_$m.txt 2>&1
    echo "ncu $m rc=$?"; tail -2 /tmp/ncu_$m.txt
    ncu -i /tmp/prof_$m.ncu-rep --page source --csv --print-source sass > $R/${P}sass_cola_d64_$m.csv 2>/dev/null; xz -9 $R/${P}sass_cola_d64_$m.csv
    ncu -i /tmp/prof_$m.ncu-rep --page details > $R/${P}details_cola_d64_$m.txt 2>&1
  done
  check nou f32
  timeout 300 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --batches race,wiki128,mnli,cola --D 64 --variants nou=nou --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
  ls -la $R
fi
if [[ $PART == b ]]; then
  # build-var/s33/b (build_b.sh): f32 with the output's quotients once and
  # Q's tile a column a thread (new) against main 4853e04 (base).
  cd build-var/s33/b || exit 1
  check new f32
  sanitize new f32 memcheck 300,0,1,17,70
  sanitize new f32 racecheck 300,0,1,17,70
  timeout 420 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants base=base --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == c ]]; then
  # build-var/s33/c (build_c.sh): bf16 causal with the unmasked copy off
  # (nou), 3 stages (s3), Q in registers (qreg); f32 with it off (nou).
  cd build-var/s33/c/bf16 || exit 1
  for v in nou s3 qreg; do check $v bf16; done
  timeout 300 python3 bench_fused.py --dir base --seqlens seqlens --reps 20 --flush-l2 --mask causal \
    --batches race,squad,wiki128,mnli,cola --variants nou=nou,s3=s3,qreg=qreg --out $R/${P}bench_bf16.txt > $R/${P}log_bf16.txt 2>&1
  echo "bench bf16 rc=$?"; cat $R/${P}bench_bf16.txt
  cd ../f32 || exit 1
  check nou f32
  timeout 200 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 --mask causal \
    --batches race,squad,wiki128,mnli,cola --variants nou=nou --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == d ]]; then
  # build-var/s33/d (build_d.sh): f32 with V's transposed addresses from
  # four a block (new) against 03946be (base).
  cd build-var/s33/d || exit 1
  check new f32
  sanitize new f32 memcheck 300,0,1,17,70
  sanitize new f32 racecheck 300,0,1,17,70
  sanitize new f32 racecheck 600,590,610
  timeout 420 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants base=base --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == g ]]; then
  # build-var/s33/f: the GPU test binary at the final compiler: every
  # attention example on the GPU against the CPU backend and float64.
  cd build-var/s33/f || exit 1
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  DCCC_EXAMPLES_ONLY=mha,mha_causal,flash_attention,mha_window,mha_softcap,mha_scale_after_max,causal_attention,mha_bf16,gqa_bf16,mha_bf16_f32_scores,mha_generic,attention_data,transformer_block \
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
    timeout 540 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.ExamplesMatch*' > $R/${P}gpu_test.txt 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) *\]|Failure" $R/${P}gpu_test.txt | tail -8
fi
if [[ $PART == e ]]; then
  # build-var/s33/e (build_e.sh): bf16 head dim 128 at 64 keys, 3 blocks, Q
  # in registers (k64b3) against the planner's tiles.
  cd build-var/s33/e || exit 1
  check k64b3 bf16
  timeout 300 python3 bench_fused.py --dir base --seqlens seqlens --reps 20 --flush-l2 --D 128 \
    --batches race,squad,wiki128,mnli,cola --variants k64b3=k64b3 --out $R/${P}bench_bf16.txt > $R/${P}log_bf16.txt 2>&1
  echo "bench bf16 rc=$?"; cat $R/${P}bench_bf16.txt
fi
