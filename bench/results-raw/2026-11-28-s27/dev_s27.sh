#!/bin/bash
# Session 27 device calls, from the repository root (P: a prefix for the
# output files; PART: which part).
#   PART f -- build-var/s27/f (made here by build_f.sh): the FA2-precision
#     program with --fast-math, sm_90a, as base/ (defaults), qs/
#     (--attention-q=smem), t8/ (--attention-tiles=1,8,32,1), t8qs/ (both)
#     and qsa/ (--attention-q=smem --attention-grid=atomic). Float64 checks
#     and compute-sanitizer on the fused kernels (deferred rescaling and Q in
#     shared memory), then the benchmark with the variants interleaved.
#   PART a -- build-var/s27/a (hard links into the GPU bundle made by
#     scripts/gpu_bundle.sh at this session's main): CudaBackend.* (every
#     example against the CPU backend and float64, the scheduled programs,
#     the MMA GEMMs) next to the stdlib differential tests on CUDA
#     (attention, ragged) built there by the shipped driver, then the
#     online-reductions differential tests of the attention programs.
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/${P}gpu.txt
if [[ $PART == f ]]; then
  cd build-var/s27/f || exit 1
  V="base qs t8 t8qs qsa"
  for v in $V; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  check() {
    local f=$R/${P}check_$1.txt
    timeout 90 python3 bench_fused.py --dir $1 --lengths 4096,0,1,17,300 --check-only > $f 2>&1
    timeout 60 python3 bench_fused.py --dir $1 --lengths 33,1,0,65,7 --D 64,128 --check-only >> $f 2>&1
    echo "check $1: $(grep -c 'check OK' $f) OK, $(grep -ci 'wrong\|error\|Traceback' $f) wrong"
  }
  sanitize() {
    for tool in memcheck racecheck; do
      timeout 150 compute-sanitizer --tool $tool python3 bench_fused.py --dir $1 --lengths 300,0,1,17,70 --check-only \
        --dccc-only --D 64,128 --mask full,causal > $R/${P}${tool}_$1.txt 2>&1
      echo "$tool $1: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}${tool}_$1.txt | tail -1)"
    done
  }
  for v in $V; do check $v > $R/${P}checksum_$v.txt & done
  sanitize base > $R/${P}san_base.txt &
  sanitize qs > $R/${P}san_qs.txt &
  wait
  cat $R/${P}checksum_*.txt $R/${P}san_*.txt
  timeout 330 python3 bench_fused.py --dir base --seqlens seqlens --reps 20 --flush-l2 \
    --variants qs=qs,t8=t8,t8qs=t8qs,qsa=qsa --out $R/${P}bench_fused.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_fused.txt
fi
if [[ $PART == a ]]; then
  cd build-var/s27/a || exit 1
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  mkdir -p /tmp/share/dccc && rm -rf /tmp/share/dccc/std && cp -r stdlib /tmp/share/dccc/std
  printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_RUNTIME_LIB=%s DCCC_RUNTIME_HEADER=%s exec /tmp/dccc-gpu/dccc "$@"\n' \
    "$PWD/libdccrt.a" "$PWD/include/dccrt.h" > /tmp/dccc-gpu/dccc.sh
  chmod +x /tmp/dccc-gpu/dccc.sh
  for t in attention ragged; do
    PYTHONPATH=$PWD/python PYTHONDONTWRITEBYTECODE=1 timeout 540 python3 tests/stdlib/${t}_diff.py /tmp/dccc-gpu/dccc.sh 3 \
      --target=cuda > $R/${P}stdlib_$t.txt 2>&1 &
  done
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
    timeout 540 /tmp/dccc-gpu/dccc_cuda_backend_tests > $R/${P}gpu_test_full.txt 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) *\]|tests ran" $R/${P}gpu_test_full.txt | tail -12
  mkdir -p /tmp/od
  for ex in mha mha_bf16 mha_causal; do
    timeout 150 python3 attention_diff.py /tmp/dccc-gpu/dccc.sh examples/$ex.toy /tmp/od/$ex --target=cuda > $R/${P}online_$ex.txt 2>&1 &
  done
  for fn in mha_bf16_f32_scores mha_causal_bf16_f32_scores; do
    timeout 150 python3 attention_diff.py /tmp/dccc-gpu/dccc.sh examples/mha_bf16_f32_scores.toy /tmp/od/$fn --target=cuda \
      --fn=$fn > $R/${P}online_$fn.txt 2>&1 &
  done
  wait
  for f in $R/${P}online_*.txt $R/${P}stdlib_*.txt; do echo "$(basename $f): $(tail -1 $f)"; done
fi
if [[ $PART == g ]]; then
  # build-var/s27/g (build_g.sh): the final compiler's libraries. Float64
  # checks of every library (the FA2-precision program with the new default,
  # the previous one, two warpgroups with Q in shared memory after the fix,
  # mha_bf16.toy as written in bf16 and f16), compute-sanitizer on the new
  # default and the fixed two-warpgroup form, then the benchmark: the new
  # default against FA2 and cuDNN with the previous default (reg) and
  # the as-written program interleaved.
  cd build-var/s27/g || exit 1
  for v in new reg t8qs; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  check() {  # check DIR DTYPE
    local f=$R/${P}check_$1.txt
    timeout 90 python3 bench_fused.py --dir $1 --dtype $2 --lengths 4096,0,1,17,300 --check-only > $f 2>&1
    timeout 60 python3 bench_fused.py --dir $1 --dtype $2 --lengths 600,590,610 --D 128 --check-only >> $f 2>&1
    timeout 60 python3 bench_fused.py --dir $1 --dtype $2 --lengths 33,1,0,65,7 --D 64,128 --check-only >> $f 2>&1
    echo "check $1: $(grep -c 'check OK' $f) OK, $(grep -ci 'wrong\|error\|Traceback' $f) wrong"
  }
  sanitize() {
    for tool in memcheck racecheck; do
      timeout 150 compute-sanitizer --tool $tool python3 bench_fused.py --dir $1 --lengths 300,0,1,17,70 --check-only \
        --dccc-only --D 64,128 --mask full,causal > $R/${P}${tool}_$1.txt 2>&1
      echo "$tool $1: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}${tool}_$1.txt | tail -1)"
    done
  }
  for v in new reg t8qs asw; do check $v bf16 > $R/${P}sum_$v.txt & done
  check f16 f16 > $R/${P}sum_f16.txt &
  sanitize new > $R/${P}san_new.txt &
  sanitize t8qs > $R/${P}san_t8qs.txt &
  wait
  cat $R/${P}sum_*.txt $R/${P}san_*.txt
  timeout 300 python3 bench_fused.py --dir new --seqlens seqlens --reps 30 --flush-l2 \
    --variants reg=reg,asw=asw --out $R/${P}bench_fused.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_fused.txt
fi
if [[ $PART == a2 ]]; then
  # build-var/s27/a2: the GPU test binary and driver of the final compiler
  # (Q in shared memory where it buys a block, the two-warpgroup fix), packed
  # as scripts/gpu_bundle.sh packs them, with the examples, schedules and
  # runtime: CudaBackend.* (every example on the GPU against the CPU backend
  # and float64, the scheduled programs, the 16-bit math, the MMA GEMMs).
  cd build-var/s27/a2 || exit 1
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
    timeout 560 /tmp/dccc-gpu/dccc_cuda_backend_tests > $R/${P}gpu_test_full.txt 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) *\]|tests ran" $R/${P}gpu_test_full.txt | tail -12
fi
if [[ $PART == h ]]; then
  # build-var/s27/h: the FA2-precision program (--fast-math, sm_90a) built by
  # the final compiler (fin/: Q in shared memory where it buys a block, no
  # deferred rescaling for 16-bit P) and by the compiler of PART g (lazy/:
  # the same with deferred rescaling, g's new/). Float64 checks and
  # compute-sanitizer on fin, then both timed with their max errors (each
  # as the table's dccc in turn: the error column is dccc's).
  cd build-var/s27/h || exit 1
  for v in fin lazy; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  f=$R/${P}check_fin.txt
  timeout 90 python3 bench_fused.py --dir fin --lengths 4096,0,1,17,300 --check-only > $f 2>&1
  timeout 60 python3 bench_fused.py --dir fin --lengths 600,590,610 --D 128 --check-only >> $f 2>&1
  timeout 60 python3 bench_fused.py --dir fin --lengths 33,1,0,65,7 --D 64,128 --check-only >> $f 2>&1
  echo "check fin: $(grep -c 'check OK' $f) OK, $(grep -ci 'wrong\|error\|Traceback' $f) wrong"
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $tool python3 bench_fused.py --dir fin --lengths 300,0,1,17,70 --check-only \
      --dccc-only --D 64,128 --mask full,causal > $R/${P}${tool}_fin.txt 2>&1 &
  done
  wait
  for tool in memcheck racecheck; do echo "$tool fin: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}${tool}_fin.txt | tail -1)"; done
  timeout 200 python3 bench_fused.py --dir fin --seqlens seqlens --reps 30 --flush-l2 --variants lazy=lazy \
    --out $R/${P}bench_fused.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_fused.txt
  timeout 120 python3 bench_fused.py --dir lazy --seqlens seqlens --reps 10 --flush-l2 --batches race,squad \
    --out $R/${P}bench_lazy_err.txt > $R/${P}log2.txt 2>&1
  echo "bench lazy rc=$?"; cat $R/${P}bench_lazy_err.txt
fi
if [[ $PART == n ]]; then
  # build-var/s27/h's fin/: ncu (caches flushed, clocks as they run) on
  # wiki128, head dim 128, no mask -- the one configuration under FA2 --
  # for dccc's fused kernel and FA2's: memory throughput, occupancy, stalls.
  cd build-var/s27/h || exit 1
  for v in fin; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats --section SchedulerStats"
  timeout 200 ncu --clock-control none --kernel-name regex:'__k0__d128|flash_fwd' --launch-skip 4 --launch-count 4 $S \
    python3 bench_fused.py --dir fin --seqlens seqlens --batches wiki128 --mask full --D 128 --reps 3 > $R/${P}ncu_wiki128.txt 2>&1
  echo "ncu rc=$?"
  grep -E "^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Waves Per SM|Grid Size|Dynamic Shared|Issued Warp|No Eligible|Compute \(SM\) Throughput" $R/${P}ncu_wiki128.txt | head -90
fi
if [[ $PART == t ]]; then
  # build-var/s27/h: fin/ (the final defaults) against 128 query rows a block
  # as two warpgroups with Q in shared memory at 2 blocks an SM (16 warps,
  # FA2's rows a block): t8b2/ (--attention-tiles=1,8,32,2
  # --attention-q=smem) and t8k64/ (1,8,64,2: 64 keys a tile). Checks, then
  # head dim 128 without a mask on the short batches and race.
  cd build-var/s27/h || exit 1
  for v in fin t8b2 t8k64; do cp $v/mha_bf16.so $v/mha_causal_bf16.so; done
  for v in t8b2 t8k64; do
    timeout 60 python3 bench_fused.py --dir $v --lengths 4096,0,1,17,300 --check-only > $R/${P}check_$v.txt 2>&1
    echo "check $v: $(grep -c 'check OK' $R/${P}check_$v.txt) OK, $(grep -ci 'wrong\|error\|Traceback' $R/${P}check_$v.txt) wrong"
  done
  timeout 150 python3 bench_fused.py --dir fin --seqlens seqlens --reps 20 --flush-l2 --D 128 --batches wiki128,mnli,cola,squad,race \
    --variants t8b2=t8b2,t8k64=t8k64 --out $R/${P}bench_fused.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_fused.txt
fi
if [[ $PART == a3 ]]; then
  # build-var/s27/a3: the final compiler's GPU test binary: the examples whose
  # kernels its last changes touch (16-bit fused attention: Q in shared
  # memory by default, deferred rescaling declined for 16-bit P) on the GPU
  # against the CPU backend and float64.
  cd build-var/s27/a3 || exit 1
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  DCCC_EXAMPLES_ONLY=mha_bf16,gqa_bf16,mha_bf16_f32_scores,mha_generic \
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
    timeout 200 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.ExamplesMatch*' > $R/${P}gpu_test.txt 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) *\]|max|Failure" $R/${P}gpu_test.txt | tail -20
fi
