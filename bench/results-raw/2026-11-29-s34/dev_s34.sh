#!/bin/bash
# Session 34 device calls, from the repository root (P: a prefix for the
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
  # build-var/s34/a (build_a.sh): f32 with one K/V stage in the wgmma form
  # (s1: head dim 64 at 3 blocks an SM) and also without the mask-free copy
  # (s1nou), against the planner's build (new).
  cd build-var/s34/a || exit 1
  check s1 f32
  check s1nou f32
  sanitize s1 f32 memcheck 300,0,1,17,70
  sanitize s1 f32 racecheck 300,0,1,17,70
  timeout 360 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 --D 64 \
    --variants s1=s1,s1nou=s1nou --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == b ]]; then
  # build-var/s34/b (build_b.sh): f32 at one K/V stage (new) against
  # session 33's kernels (base), causal also without the mask-free copy (nou).
  cd build-var/s34/b || exit 1
  check new f32
  check nou f32
  sanitize new f32 memcheck 300,0,1,17,70
  sanitize new f32 racecheck 300,0,1,17,70
  sanitize new f32 racecheck 600,590,610
  timeout 480 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants base=base,nou=nou --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == c ]]; then
  # build-var/s34/c (build_c.sh): f32 head dim 128's long-key wgmma form at
  # 16 keys, one stage, 2 blocks an SM (new; nou: causal without the
  # mask-free copy) against 32 keys, 1 block (base).
  cd build-var/s34/c || exit 1
  check new f32
  check nou f32
  sanitize new f32 memcheck 300,0,1,17,70
  sanitize new f32 racecheck 300,0,1,17,70
  sanitize new f32 racecheck 600,590,610
  timeout 300 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 --D 128 \
    --variants base=base,nou=nou --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == d ]]; then
  # build-var/s34/d: f32 head dim 128's long-key wgmma form (16 keys, 2 blocks
  # an SM) for every launch (l1: a dccc whose threshold is 1 key instead of
  # 32) against the planner's (new: cola's entries, 13 keys on average, on
  # the mma.sync form).
  cd build-var/s34/d || exit 1
  check l1 f32
  timeout 200 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 --D 128 \
    --batches mnli,cola --variants l1=l1 --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == e ]]; then
  # build-var/s34/e (build_e.sh): the final f32 kernels (new) against
  # session 33's (base), every batch, both head dims and masks.
  cd build-var/s34/e || exit 1
  check new f32
  sanitize new f32 memcheck 300,0,1,17,70
  sanitize new f32 racecheck 300,0,1,17,70
  sanitize new f32 racecheck 600,590,610
  sanitize new f32 memcheck 13,1,0,7,40
  check k16b4 f32
  timeout 420 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants base=base --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
  timeout 150 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 --D 64 \
    --variants k16b4=k16b4 --out $R/${P}bench_k16b4.txt > $R/${P}log_k16b4.txt 2>&1
  echo "bench k16b4 rc=$?"; cat $R/${P}bench_k16b4.txt
fi
if [[ $PART == g ]]; then
  # build-var/s34/f (build_f.sh): the GPU test binary at the final compiler:
  # every attention example on the GPU against the CPU backend and float64.
  cd build-var/s34/f || exit 1
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  DCCC_EXAMPLES_ONLY=mha,mha_causal,flash_attention,mha_window,mha_softcap,mha_scale_after_max,causal_attention,mha_bf16,gqa_bf16,mha_bf16_f32_scores,mha_generic,attention_data,transformer_block \
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
    timeout 540 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.ExamplesMatch*' > $R/${P}gpu_test.txt 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) *\]|Failure" $R/${P}gpu_test.txt | tail -8
fi
if [[ $PART == h ]]; then
  # build-var/s34/h (build_h.sh): f32 head dim 64 at 16 keys, 4 blocks an SM
  # for short launches, d64L (32 keys, 3 blocks) for the rest (new), against
  # 32 keys everywhere (base).
  cd build-var/s34/h || exit 1
  check new f32
  sanitize new f32 memcheck 13,1,0,7,40
  sanitize new f32 racecheck 13,1,0,7,40
  sanitize new f32 racecheck 300,0,1,17,70
  timeout 200 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 --D 64 \
    --variants base=base --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == i ]]; then
  # build-var/s34/i (build_i.sh): the final f32 table in one run.
  cd build-var/s34/i || exit 1
  timeout 420 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants base=base --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
