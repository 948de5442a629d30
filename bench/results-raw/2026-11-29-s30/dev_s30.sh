#!/bin/bash
# Session 30 device calls, from the repository root (P: a prefix for the
# output files; PART: which part).
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/${P}gpu.txt
check() {  # check DIR DTYPE
  local f=$R/${P}check_$1.txt
  timeout 120 python3 bench_fused.py --dir $1 --dtype $2 --lengths 4096,0,1,17,300 --check-only > $f 2>&1
  timeout 60 python3 bench_fused.py --dir $1 --dtype $2 --lengths 600,590,610 --D 128 --check-only >> $f 2>&1
  timeout 60 python3 bench_fused.py --dir $1 --dtype $2 --lengths 33,1,0,65,7 --D 64,128 --check-only >> $f 2>&1
  echo "check $1: $(grep -c 'check OK' $f) OK, $(grep -ci 'wrong\|error\|Traceback' $f) wrong"
}
sanitize() {  # sanitize DIR DTYPE TOOL LENGTHS
  timeout 120 compute-sanitizer --tool $3 python3 bench_fused.py --dir $1 --dtype $2 --lengths $4 --check-only \
    --dccc-only --D 64,128 --mask full,causal > $R/${P}$3_$1_${4//,/_}.txt 2>&1
  echo "$3 $1 $4: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$3_$1_${4//,/_}.txt | tail -1), $(grep -c 'check OK' $R/${P}$3_$1_${4//,/_}.txt) OK"
}
if [[ $PART == a ]]; then
  # build-var/s30/a (build_a.sh): new/ = the f32 wgmma form with P V left in
  # flight under the next tile's conversion; base/ = session 29's final.
  cd build-var/s30/a || exit 1
  cuobjdump -res-usage mha.cubin > $R/${P}res.txt 2>&1
  cuobjdump -sass mha.cubin > $R/${P}mha.sass 2>&1
  grep -E "Function|REG|STACK" $R/${P}res.txt | grep -A1 "d64\b\|d6415\|d128L" | head -8
  check new f32
  sanitize new f32 memcheck 300,0,1,280
  sanitize new f32 memcheck 300,0,1,17,70
  timeout 330 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants base=base --out $R/${P}bench_f32.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == b ]]; then
  # build-var/s30/a: ncu's per-SASS-instruction stall samples of session
  # 29's final f32 kernels (base/: d64 on race D = 64, d128L on race
  # D = 128, full), to see where the wgmma form's iteration waits.
  cd build-var/s30/a || exit 1
  for D in 64 128; do
    k=regex:mha__k0__d$D; [[ $D == 128 ]] && k=regex:mha__k0__d128L
    timeout 150 ncu --clock-control none --kernel-name $k --launch-skip 3 --launch-count 1 \
      --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no -o /tmp/prof_$D \
      python3 bench_fused.py --dir base --dtype f32 --seqlens seqlens --batches race --mask full --D $D --reps 2 > /tmp/ncu_$D.txt 2>&1
    echo "ncu D=$D rc=$?"; tail -3 /tmp/ncu_$D.txt
    ncu -i /tmp/prof_$D.ncu-rep --page source --csv --print-source sass > $R/${P}sass_d$D.csv 2>/dev/null; xz -9 $R/${P}sass_d$D.csv
    ncu -i /tmp/prof_$D.ncu-rep --page details > $R/${P}details_d$D.txt 2>&1
  done
  ls -la $R
fi
if [[ $PART == c ]]; then
  # build-var/s30/b (build_b.sh): new/ = f32 divisions by the block's
  # sqrt(D) corrected from its reciprocal (dcc_fdiv_pre), Q's tile and each
  # key tile's chunks read before written; base/ = session 29's final.
  cd build-var/s30/b || exit 1
  cuobjdump -res-usage mha.cubin > $R/${P}res.txt 2>&1
  check new f32
  sanitize new f32 memcheck 300,0,1,280
  sanitize new f32 memcheck 300,0,1,17,70
  sanitize new f32 racecheck 300,0,1,17,70
  timeout 330 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants base=base --out $R/${P}bench_f32.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_f32.txt
  k=regex:mha__k0__d64
  timeout 150 ncu --clock-control none --kernel-name $k --launch-skip 3 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no -o /tmp/prof_64 \
    python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --batches race --mask full --D 64 --reps 2 > /tmp/ncu_64.txt 2>&1
  echo "ncu rc=$?"
  ncu -i /tmp/prof_64.ncu-rep --page source --csv --print-source sass > $R/${P}sass_d64.csv 2>/dev/null; xz -9 $R/${P}sass_d64.csv
  ncu -i /tmp/prof_64.ncu-rep --page details > $R/${P}details_d64.txt 2>&1
fi
if [[ $PART == d ]]; then
  # build-var/s30/c (build_c.sh): new/ = the final compiler's defaults
  # (the score and output divisions corrected from reciprocals), all/ (head
  # dim 128 on wgmma for every launch), sync/ (the mma.sync form), base/
  # (session 29's final): checks, memcheck/racecheck on new/ and all/, then
  # new/ against the peers with the variants interleaved.
  cd build-var/s30/c || exit 1
  check new f32
  check all f32
  sanitize new f32 memcheck 300,0,1,280
  sanitize all f32 memcheck 300,0,1,17,70
  sanitize new f32 racecheck 300,0,1,17,70
  timeout 400 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants base=base,all=all,sync=sync --out $R/${P}bench_f32.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == e ]]; then
  # build-var/s30/d (build_d.sh): the GPU test binary at the final compiler:
  # dcc_fdiv_pre on the GPU, then every attention example on the GPU against
  # the CPU backend and float64.
  cd build-var/s30/d || exit 1
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  # (dev9 ran this without DCCC_RUNTIME_LIB / _INCLUDE: the element kernels
  # failed to link; dev10 is this line as it is now, run by hand.)
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_RUNTIME_LIB="$PWD/libdccrt.a" DCCC_RUNTIME_INCLUDE="$PWD/include" timeout 200 \
    /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.FdivPre*:CudaBackend.Exp16*:CudaBackend.FastExp*' \
    > $R/${P}gpu_fdiv.txt 2>&1
  echo "fdiv rc=$?"; grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) *\]|Failure" $R/${P}gpu_fdiv.txt | tail -5
  DCCC_EXAMPLES_ONLY=mha,mha_causal,flash_attention,mha_window,mha_softcap,mha_scale_after_max,causal_attention,mha_bf16,gqa_bf16,mha_bf16_f32_scores,mha_generic,attention_data,transformer_block \
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
    timeout 450 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.ExamplesMatch*' > $R/${P}gpu_test.txt 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) *\]|Failure" $R/${P}gpu_test.txt | tail -8
fi
if [[ $PART == f ]]; then
  # build-var/s30/e (build_e.sh): the final compiler's defaults new/ (head
  # dim 128 on wgmma where entries average 32 keys or more), sync/ (off),
  # base/ (session 29's final): checks, sanitizers, the benchmark, then
  # ncu's stall samples of the new d64 and d128L kernels (race, full).
  cd build-var/s30/e || exit 1
  check new f32
  sanitize new f32 memcheck 300,0,1,17,70
  sanitize new f32 racecheck 300,0,1,280
  timeout 360 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants base=base,sync=sync --out $R/${P}bench_f32.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_f32.txt
  for D in 64 128; do
    k=regex:mha__k0__d$D; [[ $D == 128 ]] && k=regex:mha__k0__d128L
    timeout 150 ncu --clock-control none --kernel-name $k --launch-skip 3 --launch-count 1 \
      --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no -o /tmp/prof_$D \
      python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --batches race --mask full --D $D --reps 2 > /tmp/ncu_$D.txt 2>&1
    echo "ncu D=$D rc=$?"
    ncu -i /tmp/prof_$D.ncu-rep --page source --csv --print-source sass > $R/${P}sass_d$D.csv 2>/dev/null; xz -9 $R/${P}sass_d$D.csv
  done
fi
if [[ $PART == g ]]; then
  # build-var/s30/g (build_g.sh): new/ (V's parts written 16 bytes at a
  # time, the next tile's copy after the conversion) against prev/ (the
  # previous commit) and base/ (session 29's final).
  cd build-var/s30/g || exit 1
  check new f32
  sanitize new f32 memcheck 300,0,1,17,70
  sanitize new f32 racecheck 300,0,1,280
  timeout 360 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants prev=prev,base=base --out $R/${P}bench_f32.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == h ]]; then
  # build-var/s30/g plus vonly/ (V's parts written 16 bytes at a time, the
  # next tile's copy where it was: before the conversion; built by hand from
  # the printer with that one line moved back): new/ against vonly/ and prev/.
  cd build-var/s30/g || exit 1
  check vonly f32
  timeout 360 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants vonly=vonly,prev=prev --out $R/${P}bench_f32.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == i ]]; then
  # build-var/s30/i (build_i.sh): the final compiler's defaults new/ against
  # prev/ (commit e4a8056's) and base/ (session 29's final).
  cd build-var/s30/i || exit 1
  check new f32
  sanitize new f32 memcheck 300,0,1,17,70
  sanitize new f32 racecheck 300,0,1,280
  sanitize new f32 racecheck 300,0,1,17,70
  timeout 360 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants prev=prev,base=base --out $R/${P}bench_f32.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_f32.txt
fi
