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
