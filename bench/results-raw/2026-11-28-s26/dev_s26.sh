#!/bin/bash
# Session 26 device calls, from the repository root. The GPU bundle
# (scripts/gpu_bundle.sh) is 120 MB and a call carries 64 MiB with the
# repository, so its parts travel in two folders of hard links:
#   build-var/s26/a: the GPU test binary, the examples, the nested examples'
#     libraries and CUDA hosts -- PART a: CudaBackend.* (every example
#     against the CPU backend and float64, the scheduled programs, the MMA
#     GEMMs) while run_gpu.sh --sanitize-only runs compute-sanitizer's
#     memcheck and racecheck over every example next to it;
#   build-var/s26/b: the driver (in test.tar.xz), the Python package and
#     tests, the stdlib tests, mha.so, mha_bf16.so -- PART b: the rest of
#     run_gpu.sh --test-only (mha's CUDA host, the stream entry and CUDA
#     graph, Python, stdlib).
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/${P}gpu.txt
if [[ $PART == a ]]; then
  cd build-var/s26/a || exit 1
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  sed -e '/^tar -xJf test.tar.xz/d' run_gpu.sh > run_gpu_s.sh && chmod +x run_gpu_s.sh
  (timeout 560 ./run_gpu_s.sh $R/${P}san --sanitize-only > $R/${P}san.log 2>&1; echo "sanitize rc=$?" >> $R/${P}san.log) &
  mkdir -p /tmp/share/dccc && rm -rf /tmp/share/dccc/std && cp -r stdlib /tmp/share/dccc/std
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
    timeout 540 /tmp/dccc-gpu/dccc_cuda_backend_tests > $R/${P}gpu_test_full.txt 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) *\]|tests ran" $R/${P}gpu_test_full.txt | tail -12
  wait
  cat $R/${P}san.log | tail -15
fi
if [[ $PART == b ]]; then
  cd build-var/s26/b || exit 1
  sed -e 's/^  stream_check || status=1$/  stream_check || status=1; echo "stream rc=$status"/' run_gpu.sh > run_gpu_b.sh && chmod +x run_gpu_b.sh
  # --test-only without the sanitizer (PART a ran it), the GPU test binary
  # (PART a), the nested hosts (PART a's sanitizer ran them) and the fused
  # checks (their libraries are not here).
  sed -i -e 's#^    /tmp/dccc-gpu/dccc_cuda_backend_tests 2>&1 | tail -40 | tee "$results/gpu_test.txt"#    echo "[  PASSED  ] 3 tests (PART a)" | tee "$results/gpu_test.txt"#' run_gpu_b.sh
  DCCC_GPU_NO_SANITIZE=1 timeout 420 ./run_gpu_b.sh $R/${P}r --test-only > $R/${P}b.log 2>&1
  echo "run_gpu --test-only rc=$?"
  grep -E "check: OK|FAILED|passed|failed|: OK|rc=" $R/${P}b.log | head -40
  grep -E "passed|failed|error" $R/${P}r/python_test.txt | tail -3; tail -2 $R/${P}r/stdlib_*.txt
fi
if [[ $PART == c ]]; then
  # build-var/s26/c: a's files with mha_bf16.so, dccrt.h, attention_diff.py
  # and tests/stdlib. The sanitizer runs PART a had no time for (racecheck
  # over every example, memcheck of the MMA GEMM test, the nested hosts
  # under both tools) next to the stream entry's check (CUDA graph), the
  # online-reductions differential tests and the stdlib tests, built here
  # with the shipped driver.
  cd build-var/s26/c || exit 1
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  mkdir -p /tmp/share/dccc && rm -rf /tmp/share/dccc/std && cp -r stdlib /tmp/share/dccc/std
  sed -e '/^tar -xJf test.tar.xz/d' -e 's/for run in memcheck:examples racecheck:examples memcheck:mma/for run in racecheck:examples memcheck:mma/' \
    run_gpu.sh > run_gpu_s.sh && chmod +x run_gpu_s.sh
  (timeout 575 ./run_gpu_s.sh $R/${P}san --sanitize-only > $R/${P}san.log 2>&1; echo "sanitize rc=$?" >> $R/${P}san.log) &
  printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_RUNTIME_LIB=%s DCCC_RUNTIME_HEADER=%s exec /tmp/dccc-gpu/dccc "$@"\n' \
    "$PWD/libdccrt.a" "$PWD/include/dccrt.h" > /tmp/dccc-gpu/dccc.sh
  chmod +x /tmp/dccc-gpu/dccc.sh
  nvcc -std=c++17 -o /tmp/dccc-gpu/stream_cuda_host examples/host/stream_cuda_host.cu -I. ./mha_bf16.so \
    -Xlinker -rpath -Xlinker "$PWD" && { /tmp/dccc-gpu/stream_cuda_host; /tmp/dccc-gpu/stream_cuda_host --long; } > $R/${P}stream.txt 2>&1
  grep -E "check: OK|FAIL" $R/${P}stream.txt
  mkdir -p /tmp/od
  for ex in mha mha_bf16 flash_attention mha_causal mha_window mha_softcap mha_scale_after_max; do
    timeout 200 python3 attention_diff.py /tmp/dccc-gpu/dccc.sh examples/$ex.toy /tmp/od/$ex --target=cuda > $R/${P}online_$ex.txt 2>&1 &
  done
  for fn in mha_bf16_f32_scores mha_causal_bf16_f32_scores; do
    timeout 200 python3 attention_diff.py /tmp/dccc-gpu/dccc.sh examples/mha_bf16_f32_scores.toy /tmp/od/$fn --target=cuda --fn=$fn > $R/${P}online_$fn.txt 2>&1 &
  done
  for t in nn attention ragged; do
    PYTHONDONTWRITEBYTECODE=1 timeout 300 python3 tests/stdlib/${t}_diff.py /tmp/dccc-gpu/dccc.sh 3 --target=cuda > $R/${P}stdlib_$t.txt 2>&1 &
  done
  wait
  for f in $R/${P}online_*.txt $R/${P}stdlib_*.txt; do echo "$(basename $f): $(tail -1 $f)"; done
  cat $R/${P}san/sanitizer.txt
fi
if [[ $PART == e ]]; then
  # build-var/s26/e: the driver, the Python package, stdlib/ and tests/stdlib:
  # the stdlib tests PART b's time limit cut (attention, ragged).
  cd build-var/s26/e || exit 1
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  mkdir -p /tmp/share/dccc && rm -rf /tmp/share/dccc/std && cp -r stdlib /tmp/share/dccc/std
  printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_RUNTIME_LIB=%s DCCC_RUNTIME_HEADER=%s exec /tmp/dccc-gpu/dccc "$@"\n' \
    "$PWD/libdccrt.a" "$PWD/include/dccrt.h" > /tmp/dccc-gpu/dccc.sh
  chmod +x /tmp/dccc-gpu/dccc.sh
  for t in attention ragged; do
    PYTHONPATH=$PWD/python PYTHONDONTWRITEBYTECODE=1 timeout 185 python3 tests/stdlib/${t}_diff.py /tmp/dccc-gpu/dccc.sh 3 --target=cuda > $R/${P}stdlib_$t.txt 2>&1 &
  done
  wait
  for t in attention ragged; do echo "$t: $(tail -1 $R/${P}stdlib_$t.txt)"; done
fi
if [[ $PART == f ]]; then
  # For the next session (not run in session 26: no device time left).
  # build-var/s26/f (made by build_f.sh here): bench_fused.py, seqlens/, and the f32-scores program
  # (FA2's computation, --fast-math) built by this session's compiler as
  # base/ (the defaults), qs/ (--attention-q=smem: Q from shared memory in
  # the wgmma form, 4 blocks an SM at head dim 128), t8/
  # (--attention-tiles=1,8,32,1: 128 query rows, two warpgroups sharing
  # K and V) and t8qs/ (both), each mha_bf16.so with a copy as
  # mha_causal_bf16.so. Float64 checks, then the batches under 256 tokens
  # where the open bars are (wiki128, mnli) and race for the long side.
  cd build-var/s26/f || exit 1
  for v in base qs t8 t8qs; do
    timeout 60 python3 bench_fused.py --dir $v --lengths 4096,0,1,17,300 --check-only 2>&1 | grep -E "check" | sed "s/^/$v /"
  done
  timeout 400 python3 bench_fused.py --dir base --seqlens seqlens --reps 20 --flush-l2 --batches wiki128,mnli,race \
    --variants qs=qs,t8=t8,t8qs=t8qs --out $R/${P}bench_fused.txt > $R/${P}log.txt 2>&1
  echo "bench rc=$?"; cat $R/${P}bench_fused.txt
fi
