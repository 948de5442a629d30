#!/bin/bash
# Session 31 device calls, from the repository root (P: a prefix for the
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
  # build-var/s31/a (build_a.sh): f32 two warpgroups a block (w8) against
  # the defaults at head dim 64; bf16 (FA2's precision) 128-row blocks (w8)
  # and persistent grids (st, at) against the defaults.
  cd build-var/s31/a/f32 || exit 1
  check base f32; check w8 f32
  timeout 170 python3 bench_fused.py --dir base --dtype f32 --seqlens seqlens --reps 10 --flush-l2 --D 64 \
    --variants w8=w8 --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
  cd ../bf16 || exit 1
  for v in base w8 st at; do check $v bf16; done
  timeout 260 python3 bench_fused.py --dir base --seqlens seqlens --reps 20 --flush-l2 \
    --variants w8=w8,st=st,at=at --out $R/${P}bench_bf16.txt > $R/${P}log_bf16.txt 2>&1
  echo "bench bf16 rc=$?"; cat $R/${P}bench_bf16.txt
fi
if [[ $PART == b ]]; then
  # build-var/s31/b: nc/ = the f32 wgmma form with no conversion (the patch
  # no_conversion_bound.patch: each stage holds four raw tiles -- K, a copy
  # for K's small part, two copies of V for its transposed parts -- copied
  # by cp.async, nothing converted or transposed; wrong results, timing
  # only): the bound on what a prelude that writes the parts once a launch
  # would buy; base/ = this session's defaults.
  cd build-var/s31/b || exit 1
  timeout 250 python3 bench_fused.py --dir base --dtype f32 --seqlens seqlens --reps 10 --flush-l2 --unchecked nc \
    --variants nc=nc --out $R/${P}bench_nc.txt > $R/${P}log_nc.txt 2>&1
  echo "bench nc rc=$?"; cat $R/${P}bench_nc.txt
fi
if [[ $PART == c ]]; then
  # ncu's per-SASS-instruction stall samples: the bf16 (FA2-precision)
  # head-dim-128 kernel on wiki128 (full; the row under FA2-varlen) and the
  # f32 d128L kernel on race (full), build-var/s31/a's base/ libraries.
  cd build-var/s31/a/bf16 || exit 1
  timeout 200 ncu --clock-control none --kernel-name regex:mha_bf16__k0__d128 --launch-skip 3 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section MemoryWorkloadAnalysis --import-source no -o /tmp/prof_bf16 \
    python3 bench_fused.py --dir base --seqlens seqlens --batches wiki128 --mask full --D 128 --reps 2 > /tmp/ncu_bf16.txt 2>&1
  echo "ncu bf16 rc=$?"; tail -3 /tmp/ncu_bf16.txt
  ncu -i /tmp/prof_bf16.ncu-rep --page source --csv --print-source sass > $R/${P}sass_bf16_d128.csv 2>/dev/null; xz -9 $R/${P}sass_bf16_d128.csv
  ncu -i /tmp/prof_bf16.ncu-rep --page details > $R/${P}details_bf16_d128.txt 2>&1
  cd ../f32 || exit 1
  timeout 200 ncu --clock-control none --kernel-name regex:mha__k0__d128L --launch-skip 3 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --section Occupancy \
    --import-source no -o /tmp/prof_f32 \
    python3 bench_fused.py --dir base --dtype f32 --seqlens seqlens --batches race --mask full --D 128 --reps 2 > /tmp/ncu_f32.txt 2>&1
  echo "ncu f32 rc=$?"; tail -3 /tmp/ncu_f32.txt
  ncu -i /tmp/prof_f32.ncu-rep --page source --csv --print-source sass > $R/${P}sass_f32_d128L.csv 2>/dev/null; xz -9 $R/${P}sass_f32_d128L.csv
  ncu -i /tmp/prof_f32.ncu-rep --page details > $R/${P}details_f32_d128L.txt 2>&1
  ls -la $R
fi
if [[ $PART == d ]]; then
  # build-var/s31/d (build_d.sh): the FA2-precision program with Q's copy a
  # column a thread and the outputs staged (new), without the staging
  # (nostage), new on a static persistent grid (newst), base (ecd4d96).
  cd build-var/s31/d || exit 1
  cuobjdump -res-usage fa2.cubin 2>&1 | grep -A1 "k0__d\(64\|128\)\b\|k0__d128L\|k0__d64L" | grep -E "Function|REG" > $R/${P}res.txt
  head -8 $R/${P}res.txt
  for v in new nostage newst; do check $v bf16; done
  sanitize new bf16 memcheck 300,0,1,17,70
  sanitize new bf16 racecheck 300,0,1,17,70
  sanitize new bf16 racecheck 130,129,64,1,0
  timeout 300 python3 bench_fused.py --dir new --seqlens seqlens --reps 20 --flush-l2 \
    --variants base=base,nostage=nostage,newst=newst --out $R/${P}bench.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench.txt
fi
if [[ $PART == e ]]; then
  # build-var/s31/e (build_e.sh): f32 with the outputs staged (new) against
  # ecd4d96 (base); the bf16 final's sanitizers and its check.
  cd build-var/s31/e/f32 || exit 1
  check new f32
  sanitize new f32 memcheck 300,0,1,17,70
  sanitize new f32 racecheck 300,0,1,17,70
  timeout 200 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants base=base --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
  cd ../bf16 || exit 1
  check new bf16
  sanitize new bf16 memcheck 300,0,1,17,70
  sanitize new bf16 racecheck 300,0,1,17,70
  sanitize new bf16 racecheck 130,129,64,1,0
fi
if [[ $PART == f ]]; then
  # build-var/s31/f (build_f.sh): the final compiler's libraries against the
  # peers, base/ (ecd4d96) interleaved: bf16 (FA2's precision) on the shared
  # and the long batches, f32 on the shared ones.
  cd build-var/s31/f/bf16 || exit 1
  check new bf16
  timeout 330 python3 bench_fused.py --dir new --seqlens seqlens --reps 20 --flush-l2 \
    --batches race,squad,wiki128,mnli,cola,docs2k,chat4k --variants base=base --out $R/${P}bench_bf16.txt > $R/${P}log_bf16.txt 2>&1
  echo "bench bf16 rc=$?"; cat $R/${P}bench_bf16.txt
  cd ../f32 || exit 1
  timeout 200 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants base=base --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == g ]]; then
  # build-var/s31/f: the GPU test binary at the final compiler: every
  # attention example on the GPU against the CPU backend and float64.
  cd build-var/s31/f || exit 1
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  DCCC_EXAMPLES_ONLY=mha,mha_causal,flash_attention,mha_window,mha_softcap,mha_scale_after_max,causal_attention,mha_bf16,gqa_bf16,mha_bf16_f32_scores,mha_generic,attention_data,transformer_block \
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
    timeout 540 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.ExamplesMatch*' > $R/${P}gpu_test.txt 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) *\]|Failure" $R/${P}gpu_test.txt | tail -8
fi
if [[ $PART == h ]]; then
  # build-var/s31/h (build_h.sh): the tile list sorted by work (new) against
  # by key count (prev): bf16 on the shared and long batches, f32 causal.
  cd build-var/s31/h/bf16 || exit 1
  check new bf16
  timeout 300 python3 bench_fused.py --dir new --seqlens seqlens --reps 20 --flush-l2 \
    --batches race,squad,wiki128,mnli,cola,docs2k,chat4k --variants prev=prev --out $R/${P}bench_bf16.txt > $R/${P}log_bf16.txt 2>&1
  echo "bench bf16 rc=$?"; cat $R/${P}bench_bf16.txt
  cd ../f32 || exit 1
  check new f32
  timeout 150 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 --mask causal \
    --variants prev=prev --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
