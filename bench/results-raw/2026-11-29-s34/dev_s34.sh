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
