#!/bin/bash
# Session 29 device calls, from the repository root (P: a prefix for the
# output files; PART: which part).
#   PART a -- build-var/s29/a (build_a.sh): float64 checks of wg/ (f32 on
#     tf32 wgmma) incl. a 4,096-token sequence beside empty ones, memcheck and
#     racecheck on its kernels, then wg/ against _efficient_attention_forward
#     with sync/ (the mma.sync form) interleaved on the short batches.
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/${P}gpu.txt
check() {  # check DIR DTYPE
  local f=$R/${P}check_$1.txt
  timeout 120 python3 bench_fused.py --dir $1 --dtype $2 --lengths 4096,0,1,17,300 --check-only > $f 2>&1
  timeout 60 python3 bench_fused.py --dir $1 --dtype $2 --lengths 600,590,610 --D 128 --check-only >> $f 2>&1
  timeout 60 python3 bench_fused.py --dir $1 --dtype $2 --lengths 33,1,0,65,7 --D 64,128 --check-only >> $f 2>&1
  echo "check $1: $(grep -c 'check OK' $f) OK, $(grep -ci 'wrong\|error\|Traceback' $f) wrong"
}
sanitize() {  # sanitize DIR DTYPE TOOLS...
  local d=$1 t=$2; shift 2
  for tool in "$@"; do
    timeout 150 compute-sanitizer --tool $tool python3 bench_fused.py --dir $d --dtype $t --lengths 300,0,1,17,70 --check-only \
      --dccc-only --D 64,128 --mask full,causal > $R/${P}${tool}_$d.txt 2>&1
    echo "$tool $d: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}${tool}_$d.txt | tail -1)"
  done
}
if [[ $PART == a ]]; then
  cd build-var/s29/a || exit 1
  cuobjdump -res-usage mha.cubin > $R/${P}res.txt 2>&1
  cuobjdump -sass mha.cubin > $R/${P}mha.sass 2>&1
  check wg f32
  sanitize wg f32 memcheck
  timeout 360 python3 bench_fused.py --dir wg --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants sync=sync --out $R/${P}bench_f32.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == b ]]; then
  # build-var/s29/b (build_b.sh): the committed defaults wg/ (head dim 64 on
  # tf32 wgmma), sync/ (--attention-f32-wgmma=off) and all/ (=all): float64
  # checks of wg/ and all/, memcheck and racecheck on all/ (both wgmma
  # instantiations), then wg/ against the peers with sync/ and all/ interleaved.
  cd build-var/s29/b || exit 1
  cuobjdump -res-usage mha.cubin > $R/${P}res.txt 2>&1
  check wg f32
  check all f32
  sanitize all f32 memcheck racecheck
  timeout 400 python3 bench_fused.py --dir wg --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants sync=sync,all=all --out $R/${P}bench_f32.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == c ]]; then
  # build-var/s29/b (build_b.sh) at the final compiler: wg/ = the defaults
  # (head dim 64 on tf32 wgmma; head dim 128's wgmma form as its long-key
  # instantiation, entries averaging >= 192 keys), sync/ (off), all/ (=all).
  # float64 checks (600/590/610 at D = 128 take d128L), memcheck and racecheck
  # on wg/ with lengths whose entries average 264 keys (d128L) and 184 (d128),
  # then the benchmark.
  cd build-var/s29/b || exit 1
  check wg f32
  for tool in memcheck racecheck; do
    for L in 300,0,1,280 300,0,1,17,70; do
      timeout 120 compute-sanitizer --tool $tool python3 bench_fused.py --dir wg --dtype f32 --lengths $L --check-only \
        --dccc-only --D 64,128 --mask full,causal > $R/${P}${tool}_$L.txt 2>&1
      echo "$tool $L: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}${tool}_$L.txt | tail -1), $(grep -c 'check OK' $R/${P}${tool}_$L.txt) OK"
    done
  done
  timeout 300 python3 bench_fused.py --dir wg --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants sync=sync,all=all --out $R/${P}bench_f32.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == d ]]; then
  # build-var/s29/d (build_d.sh): the GPU test binary at the final compiler:
  # every attention example on the GPU (sm_90a: f32 head dim 64 and head dim
  # 128's long-key form on tf32 wgmma) against the CPU backend and float64.
  cd build-var/s29/d || exit 1
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  DCCC_EXAMPLES_ONLY=mha,mha_causal,flash_attention,mha_window,mha_softcap,mha_scale_after_max,causal_attention,mha_bf16,gqa_bf16,mha_bf16_f32_scores,mha_generic,attention_data,transformer_block \
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
    timeout 500 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.ExamplesMatch*' > $R/${P}gpu_test.txt 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) *\]|Failure" $R/${P}gpu_test.txt | tail -8
fi
if [[ $PART == f ]]; then
  # build-var/s29/b at the final compiler: where the f32 wgmma form's time
  # goes (head dim 64, race, full): ncu's sections for dccc's d64 kernel
  # and the peer's (_efficient_attention_forward's fmha kernel).
  cd build-var/s29/b || exit 1
  for who in dccc eff; do
    k="regex:mha__k0__d64"; [[ $who == eff ]] && k="regex:fmha"
    timeout 120 ncu --clock-control none --kernel-name "$k" --launch-skip 3 --launch-count 1 --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
      --section ComputeWorkloadAnalysis --section InstructionStats \
      python3 bench_fused.py --dir wg --dtype f32 --seqlens seqlens --batches race --mask full --D 64 --reps 2 > $R/${P}ncu_${who}.txt 2>&1
    echo "ncu $who rc=$?: $(grep -E 'Duration|Executed Ipc A|Registers Per|Achieved Occupancy|Block Limit|Issue Slots Busy|No Eligible' $R/${P}ncu_${who}.txt | tr -s ' ' | tr '\n' ';')"
  done
fi
