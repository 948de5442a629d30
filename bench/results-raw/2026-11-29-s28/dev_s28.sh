#!/bin/bash
# Session 28 device calls, from the repository root (P: a prefix for the
# output files; PART: which part).
#   PART a -- build-var/s28/a (build_a.sh): float64 checks of on/ and ons/,
#     compute-sanitizer memcheck on on/ (the prefetch's addresses), then the
#     benchmark: on/ against FA2 and cuDNN, off/ and ons/ interleaved.
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/${P}gpu.txt
check() {  # check DIR DTYPE
  local f=$R/${P}check_$1.txt
  timeout 90 python3 bench_fused.py --dir $1 --dtype $2 --lengths 4096,0,1,17,300 --check-only > $f 2>&1
  timeout 60 python3 bench_fused.py --dir $1 --dtype $2 --lengths 600,590,610 --D 128 --check-only >> $f 2>&1
  timeout 60 python3 bench_fused.py --dir $1 --dtype $2 --lengths 33,1,0,65,7 --D 64,128 --check-only >> $f 2>&1
  echo "check $1: $(grep -c 'check OK' $f) OK, $(grep -ci 'wrong\|error\|Traceback' $f) wrong"
}
sanitize() {  # sanitize DIR TOOLS...
  local d=$1; shift
  for tool in "$@"; do
    timeout 150 compute-sanitizer --tool $tool python3 bench_fused.py --dir $d --lengths 300,0,1,17,70 --check-only \
      --dccc-only --D 64,128 --mask full,causal > $R/${P}${tool}_$d.txt 2>&1
    echo "$tool $d: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}${tool}_$d.txt | tail -1)"
  done
}
if [[ $PART == a ]]; then
  cd build-var/s28/a || exit 1
  for v in on off ons; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  for v in on ons; do check $v bf16 > $R/${P}sum_$v.txt & done
  sanitize on memcheck > $R/${P}san_on.txt &
  wait
  cat $R/${P}sum_*.txt $R/${P}san_*.txt
  timeout 330 python3 bench_fused.py --dir on --seqlens seqlens --reps 30 --flush-l2 \
    --variants off=off,ons=ons --out $R/${P}bench_fused.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_fused.txt
fi
if [[ $PART == b ]]; then
  # build-var/s28/b (build_b.sh): float64 checks of every tiling, then head
  # dim 128 on the short batches with the tilings interleaved against the
  # planner's (base/); then base/ on the long batches (the stretch bar: FA2
  # on documents up to 2,048 and chat up to 4,096 tokens).
  cd build-var/s28/b || exit 1
  V="base k64s3 k64s2 k32s3 k16s4"
  for v in $V; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  for v in $V; do
    (timeout 90 python3 bench_fused.py --dir $v --lengths 4096,0,1,17,300 --check-only > $R/${P}check_$v.txt 2>&1
     echo "check $v: $(grep -c 'check OK' $R/${P}check_$v.txt) OK, $(grep -ci 'wrong\|error\|Traceback' $R/${P}check_$v.txt) wrong") &
  done
  wait
  timeout 200 python3 bench_fused.py --dir base --seqlens seqlens --reps 30 --flush-l2 --D 128 --batches wiki128,mnli,cola \
    --variants k64s3=k64s3,k64s2=k64s2,k32s3=k32s3,k16s4=k16s4 --out $R/${P}bench_tiles.txt > $R/${P}log_tiles.txt 2>&1
  echo "bench tiles rc=$?"; cat $R/${P}bench_tiles.txt
  timeout 240 python3 bench_fused.py --dir base --seqlens seqlens --reps 20 --flush-l2 --batches docs2k,chat4k \
    --out $R/${P}bench_long.txt > $R/${P}log_long.txt 2>&1
  echo "bench long rc=$?"; cat $R/${P}bench_long.txt
fi
if [[ $PART == c ]]; then
  # build-var/s28/c: base/ (session 27's kernel, build_b.sh) against unif/
  # (the Q descriptor without a warp term for one-warpgroup blocks: uniform
  # descriptors); the SASS of unif's head-dim-128 kernel (fa2u.cubin).
  cd build-var/s28/c || exit 1
  cuobjdump -sass fa2u.cubin > $R/${P}fa2u.sass 2>&1
  for v in base unif; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  timeout 90 python3 bench_fused.py --dir unif --lengths 4096,0,1,17,300 --check-only > $R/${P}check_unif.txt 2>&1
  timeout 60 python3 bench_fused.py --dir unif --lengths 33,1,0,65,7 --D 64,128 --check-only >> $R/${P}check_unif.txt 2>&1
  echo "check unif: $(grep -c 'check OK' $R/${P}check_unif.txt) OK, $(grep -ci 'wrong\|error\|Traceback' $R/${P}check_unif.txt) wrong"
  timeout 300 python3 bench_fused.py --dir unif --seqlens seqlens --reps 30 --flush-l2 \
    --variants base=base --out $R/${P}bench_fused.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_fused.txt
fi
if [[ $PART == d ]]; then
  # build-var/s28/d (build_d.sh): float64 checks of the tilings, then the
  # long batches (and race) with the tilings interleaved against base/.
  cd build-var/s28/d || exit 1
  V="base w8k64 w8k64s3 w4k128 w4k64s3"
  for v in $V; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  for v in $V; do
    (timeout 90 python3 bench_fused.py --dir $v --lengths 4096,0,1,17,300 --check-only > $R/${P}check_$v.txt 2>&1
     echo "check $v: $(grep -c 'check OK' $R/${P}check_$v.txt) OK, $(grep -ci 'wrong\|error\|Traceback' $R/${P}check_$v.txt) wrong") &
  done
  wait
  timeout 400 python3 bench_fused.py --dir base --seqlens seqlens --reps 15 --flush-l2 --batches docs2k,chat4k,race \
    --variants w8k64=w8k64,w8k64s3=w8k64s3,w4k128=w4k128,w4k64s3=w4k64s3 --out $R/${P}bench_long.txt > $R/${P}log_long.txt 2>&1
  echo "bench long rc=$?"; cat $R/${P}bench_long.txt
fi
if [[ $PART == e ]]; then
  # build-var/s28/e: new/ (head dim 64's long-key instantiation: 128 keys a
  # tile where entries average 768 keys or more, Q in registers) against
  # base/ and w4k128/ (PART d's: 128 keys everywhere, Q in shared memory):
  # checks (a long sequence takes the new instantiation), sanitizers, the
  # long batches and race/squad, then all batches at head dim 64.
  cd build-var/s28/e || exit 1
  for v in new base w4k128; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  f=$R/${P}check_new.txt
  timeout 90 python3 bench_fused.py --dir new --lengths 4096,0,1,17,300 --check-only > $f 2>&1
  timeout 90 python3 bench_fused.py --dir new --lengths 2000,1500,900,3 --D 64 --check-only >> $f 2>&1
  timeout 60 python3 bench_fused.py --dir new --lengths 33,1,0,65,7 --D 64,128 --check-only >> $f 2>&1
  echo "check new: $(grep -c 'check OK' $f) OK, $(grep -ci 'wrong\|error\|Traceback' $f) wrong"
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $tool python3 bench_fused.py --dir new --lengths 2000,900,0,1,17 --check-only \
      --dccc-only --D 64 --mask full,causal > $R/${P}${tool}_new.txt 2>&1
    echo "$tool new: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}${tool}_new.txt | tail -1)"
  done
  timeout 300 python3 bench_fused.py --dir new --seqlens seqlens --reps 20 --flush-l2 --D 64 \
    --batches docs2k,chat4k,race,squad,wiki128,mnli,cola --variants base=base,w4k128=w4k128 \
    --out $R/${P}bench_d64.txt > $R/${P}log_d64.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_d64.txt
fi
if [[ $PART == f ]]; then
  # build-var/s28/f (build_f.sh): the final compiler. GPU tests first: every
  # fused-attention example on the GPU against the CPU backend and float64
  # (CudaBackend.ExamplesMatch*, DCCC_EXAMPLES_ONLY), then float64 checks and
  # compute-sanitizer on um/, then every batch (short and long) at both head
  # dims with and without the mask, umoff/ interleaved.
  cd build-var/s28/f || exit 1
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  DCCC_EXAMPLES_ONLY=mha,mha_bf16,mha_causal,mha_window,mha_softcap,mha_scale_after_max,gqa_bf16,mha_bf16_f32_scores,mha_generic,flash_attention,attention_data,transformer_block,causal_attention \
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
    timeout 330 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.ExamplesMatch*' > $R/${P}gpu_test.txt 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) *\]|Failure" $R/${P}gpu_test.txt | tail -8
  for v in um umoff; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  f=$R/${P}check_um.txt
  timeout 90 python3 bench_fused.py --dir um --lengths 4096,0,1,17,300 --check-only > $f 2>&1
  timeout 90 python3 bench_fused.py --dir um --lengths 2000,1500,900,3 --check-only >> $f 2>&1
  timeout 60 python3 bench_fused.py --dir um --lengths 33,1,0,65,7 --D 64,128 --check-only >> $f 2>&1
  echo "check um: $(grep -c 'check OK' $f) OK, $(grep -ci 'wrong\|error\|Traceback' $f) wrong"
  for tool in memcheck racecheck; do
    timeout 120 compute-sanitizer --tool $tool python3 bench_fused.py --dir um --lengths 300,0,1,17,70 --check-only \
      --dccc-only --D 64,128 --mask causal > $R/${P}${tool}_um.txt 2>&1
    echo "$tool um: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}${tool}_um.txt | tail -1)"
  done
  timeout 330 python3 bench_fused.py --dir um --seqlens seqlens --reps 20 --flush-l2 \
    --batches race,squad,wiki128,mnli,cola,docs2k,chat4k --variants umoff=umoff \
    --out $R/${P}bench_fused.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_fused.txt
fi
