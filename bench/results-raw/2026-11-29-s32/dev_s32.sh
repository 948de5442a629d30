#!/bin/bash
# Session 32 device calls, from the repository root (P: a prefix for the
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
  # build-var/s32/a (build_a.sh): more blocks an SM on the short batches
  # (forced tilings, more_blocks.patch) against the planner's tiles.
  cd build-var/s32/a || exit 1
  for v in base b5 k32b5 k32b6 k16b5; do check $v bf16; done
  timeout 420 python3 bench_fused.py --dir base --seqlens seqlens --reps 20 --flush-l2 \
    --batches race,squad,wiki128,mnli,cola --variants b5=b5,k32b5=k32b5,k32b6=k32b6,k16b5=k16b5 \
    --out $R/${P}bench.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench.txt
fi
if [[ $PART == b ]]; then
  # build-var/s32/b (build_b.sh): f32 with V's tf32 parts made under S's
  # wgmma (new) against session 31's final f32 libraries (base).
  cd build-var/s32/b || exit 1
  check new f32
  sanitize new f32 memcheck 300,0,1,17,70
  sanitize new f32 racecheck 300,0,1,17,70
  sanitize new f32 racecheck 600,590,610
  timeout 300 python3 bench_fused.py --dir new --dtype f32 --seqlens seqlens --reps 10 --flush-l2 \
    --variants base=base --out $R/${P}bench_f32.txt > $R/${P}log_f32.txt 2>&1
  echo "bench f32 rc=$?"; cat $R/${P}bench_f32.txt
fi
if [[ $PART == c ]]; then
  # ncu on wiki128 causal (build-var/s32/a/base: the planner's tiles): the
  # FA2-precision kernels at head dims 64 and 128, and FA2-varlen's kernel
  # at 128 (SpeedOfLight, occupancy, warp states; ours with per-SASS stall
  # samples).
  cd build-var/s32/a || exit 1
  for d in 64 128; do
    timeout 150 ncu --clock-control none --kernel-name regex:mha_causal__k0__d${d}\$ --launch-skip 3 --launch-count 1 \
      --section SourceCounters --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section MemoryWorkloadAnalysis --import-source no -o /tmp/prof_c$d \
      python3 bench_fused.py --dir base --seqlens seqlens --batches wiki128 --mask causal --D $d --reps 2 --dccc-only > /tmp/ncu_c$d.txt 2>&1
    echo "ncu d$d rc=$?"; tail -2 /tmp/ncu_c$d.txt
    ncu -i /tmp/prof_c$d.ncu-rep --page source --csv --print-source sass > $R/${P}sass_causal_d$d.csv 2>/dev/null; xz -9 $R/${P}sass_causal_d$d.csv
    ncu -i /tmp/prof_c$d.ncu-rep --page details > $R/${P}details_causal_d$d.txt 2>&1
  done
  timeout 150 ncu --clock-control none --kernel-name regex:flash --launch-skip 3 --launch-count 1 \
    --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    -o /tmp/prof_fa2 python3 bench_fused.py --dir base --seqlens seqlens --batches wiki128 --mask causal --D 128 --reps 2 > /tmp/ncu_fa2.txt 2>&1
  echo "ncu fa2 rc=$?"; tail -2 /tmp/ncu_fa2.txt
  ncu -i /tmp/prof_fa2.ncu-rep --page details > $R/${P}details_fa2_causal_d128.txt 2>&1
  ls -la $R
fi
