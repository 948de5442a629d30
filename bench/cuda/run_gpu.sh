#!/usr/bin/env bash
# Runs on a GPU machine, inside a folder made by scripts/gpu_bundle.sh: the
# CUDA backend's GPU tests (every example, and mha with each schedule of
# schedules/, on the GPU against the CPU backend and the float64 reference),
# the CUDA host check of mha.so (result against the host's float64
# reference; bad arguments, out of memory and a faulting kernel come back as
# statuses), the CUDA host checks of causal_attention.so and documents.so
# (nested raggedness: every function against the float64 reference, bad
# arguments refused with the output untouched), the Python package's
# tests (tests/python: CPU and CUDA, opcheck, torch.compile, zero-copy
# nested tensors; results/python_test.txt), the stdlib differential tests
# on the GPU (tests/stdlib, --target=cuda; results/stdlib_*.txt) and, with
# two GPUs or more, the
# data-parallel encoder layer under torchrun (results/ddp_encoder.txt),
# the fused attention kernel's check on long and empty sequences
# (bench_fused.py --check-only; results/fused_check.txt), then the attention
# benchmark in f32 and bf16, the fused bf16 kernel against FA2-varlen and
# cuDNN (bench_fused.py; results/bench_fused.txt) (and the long batches with
# the online-reductions libraries) and the grouped GEMM benchmark
# (bench_gemm.py: tensor cores against torch._grouped_mm and cuBLAS;
# results/bench_gemm.txt).
# The tests part also runs compute-sanitizer's memcheck and racecheck over
# every example's CUDA library (sanitize, below; results/sanitizer.txt).
# Results go to RESULTS_DIR (default: ./results).
#
# --stream-only runs just the stream entry point's host check (below).
#
#   ./run_gpu.sh [RESULTS_DIR] [--test-only|--bench-only|--gemm-only|--sanitize-only|--stream-only] [bench_mha.py options]
#   DCCC_GPU_NO_SANITIZE=1 ./run_gpu.sh R --test-only   skips compute-sanitizer (run it with --sanitize-only)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
# scripts/gpu_bundle.sh packs the online-reductions libraries.
if [[ -f online.tar.xz && ! -d online ]]; then tar -xJf online.tar.xz; fi
results="${1:-results}"; shift || true
mode=all
if [[ "${1:-}" == --test-only || "${1:-}" == --bench-only || "${1:-}" == --gemm-only || "${1:-}" == --sanitize-only ||
      "${1:-}" == --stream-only ]]; then
  mode="${1#--}"; shift
fi
mkdir -p "$results" /tmp/dccc-gpu
tar -xJf test.tar.xz -C /tmp/dccc-gpu
# The standard library where the test binary and the driver in
# /tmp/dccc-gpu look for `std/...` (<their folder>/../share/dccc/std).
mkdir -p /tmp/share/dccc && rm -rf /tmp/share/dccc/std && cp -r stdlib /tmp/share/dccc/std
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$results/gpu.txt"
status=0
# compute-sanitizer's memcheck and racecheck over every example's CUDA
# library: the GPU test of the examples (each example built by nvcc and run
# on the differential length patterns) under each tool, the MMA GEMM test
# (ragged lengths up to 4,096) under memcheck, and the CUDA hosts of the
# nested examples (built by the test part below, or here) under both.
# mha_cuda_host is excluded by name: it plants a host pointer where device
# memory belongs, so that its kernel faults on purpose. One line per run in
# $results/sanitizer.txt (OK, or FAILED with the tool's summary and its
# log); returns 1 if any run failed.
sanitize() {
  local san rc ok=0 log line tool target filter host so
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  : > "$results/sanitizer.txt"
  if [[ ! -x $san ]]; then
    echo "sanitizer: FAILED (no compute-sanitizer on PATH or in /usr/local/cuda/bin)" | tee -a "$results/sanitizer.txt"
    return 1
  fi
  for host in causal documents; do
    [[ -x /tmp/dccc-gpu/${host}_cuda_host ]] && continue
    so=causal_attention; [[ $host == documents ]] && so=documents
    nvcc -std=c++17 -o /tmp/dccc-gpu/${host}_cuda_host ${host}_cuda_host.cu -I. ./$so.so -Xlinker -rpath -Xlinker "$PWD"
  done
  for run in memcheck:examples racecheck:examples memcheck:mma memcheck:causal racecheck:causal memcheck:documents \
             racecheck:documents; do
    tool=${run%%:*} target=${run#*:}
    log="$results/sanitizer_${tool}_${target}.txt"
    case $target in
      examples|mma)
        filter=CudaBackend.ExamplesMatchCpuBackendAndFloat64Reference
        [[ $target == mma ]] && filter=CudaBackend.MmaGemmRaggedLengthsTo4096
        LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
          DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
          "$san" --tool "$tool" --error-exitcode 86 --print-limit 20 \
          /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter="$filter" > "$log" 2>&1
        rc=$?
        if ! grep -q "\[  PASSED  \] 1 test" "$log" && ((rc == 0)); then rc=1; fi ;;
      *)
        "$san" --tool "$tool" --error-exitcode 86 --print-limit 20 /tmp/dccc-gpu/${target}_cuda_host > "$log" 2>&1
        rc=$?
        if ! grep -q "$target cuda host check: OK" "$log" && ((rc == 0)); then rc=1; fi ;;
    esac
    line=$(grep -E "(ERROR|RACECHECK) SUMMARY" "$log" | tail -1)
    if [[ $rc -eq 0 ]]; then
      echo "sanitizer $tool $target: OK (${line:-no summary})" | tee -a "$results/sanitizer.txt"
    else
      echo "sanitizer $tool $target: FAILED (exit $rc; ${line:-no summary}; log: $log)" | tee -a "$results/sanitizer.txt"
      grep -m 5 -E "^========= (Invalid|Error|Race|Warning)" "$log" | tee -a "$results/sanitizer.txt"
      ok=1
    fi
  done
  echo "mha_cuda_host: not run under compute-sanitizer (its planted host pointer faults on purpose)" | tee -a "$results/sanitizer.txt"
  return $ok
}
if [[ $mode == sanitize-only ]]; then
  sanitize || status=1
  exit $status
fi
# The stream entry point (docs/abi.md, "Without waiting: f_on_stream"):
# examples/host/stream_cuda_host.cu on mha_bf16.so -- mha_bf16_on_stream
# with host lengths on a stream of its own, equal to mha_bf16 and float64,
# captured into a CUDA graph and replayed with new data, wrong lengths
# refused with nothing launched; then (--long) one sequence of 32,768
# tokens (H = 2, D = 64) against float64 on sampled rows, with the memory
# pool's high-water mark below 64 MiB. results/cuda_host_stream.txt.
stream_check() {
  rm -f "$results/cuda_host_stream.txt"
  nvcc -std=c++17 -o /tmp/dccc-gpu/stream_cuda_host examples/host/stream_cuda_host.cu -I. ./mha_bf16.so \
    -Xlinker -rpath -Xlinker "$PWD" &&
    { /tmp/dccc-gpu/stream_cuda_host; /tmp/dccc-gpu/stream_cuda_host --long; } 2>&1 | tee "$results/cuda_host_stream.txt"
  grep -q "stream cuda host check: OK" "$results/cuda_host_stream.txt" &&
    grep -q "long cuda host check: OK" "$results/cuda_host_stream.txt"
}
if [[ $mode == stream-only ]]; then
  stream_check || status=1
  exit $status
fi
if [[ $mode == gemm-only ]]; then
  python3 bench_gemm.py --dir . --seqlens seqlens --out "$results/bench_gemm.txt" "$@" || status=1
  exit $status
fi
if [[ $mode != bench-only ]]; then
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
    /tmp/dccc-gpu/dccc_cuda_backend_tests 2>&1 | tail -40 | tee "$results/gpu_test.txt"
  # All three tests (the examples, the scheduled programs, every MMA GEMM
  # path on ragged lengths up to 4,096) pass; none skipped.
  grep -q "\[  PASSED  \] 3 tests" "$results/gpu_test.txt" || status=1
  # The host check on mha.so, and on mha built with the host tests'
  # schedules (the C wrapper's prelude cache then holds fuse maps and remap
  # permutations) where the bundle has them.
  for so in mha mha_fused mha_remap; do
    [[ -f $so.so ]] || continue
    nvcc -std=c++17 -o /tmp/dccc-gpu/${so}_cuda_host mha_cuda_host.cu -I. ./$so.so -Xlinker -rpath -Xlinker "$PWD" &&
      /tmp/dccc-gpu/${so}_cuda_host $([[ $so == mha ]] && echo --fused) 2>&1 | tee "$results/cuda_host_$so.txt"
    grep -q "mha cuda host check: OK" "$results/cuda_host_$so.txt" || status=1
  done
  # The CUDA hosts of the nested examples (the C wrapper copies nested
  # length arrays from the device): causal_cuda_host.cu on
  # causal_attention.so, documents_cuda_host.cu on documents.so.
  for pair in causal:causal_attention documents:documents; do
    host=${pair%%:*} so=${pair#*:}
    rm -f "$results/cuda_host_$so.txt"
    nvcc -std=c++17 -o /tmp/dccc-gpu/${host}_cuda_host ${host}_cuda_host.cu -I. ./$so.so -Xlinker -rpath -Xlinker "$PWD" &&
      /tmp/dccc-gpu/${host}_cuda_host 2>&1 | tee "$results/cuda_host_$so.txt"
    grep -q "$host cuda host check: OK" "$results/cuda_host_$so.txt" || status=1
  done
  stream_check || status=1
  # DCCC_GPU_NO_SANITIZE=1 leaves compute-sanitizer to a --sanitize-only run
  # (the whole test part takes more than one 10-minute device call with it).
  if [[ -z ${DCCC_GPU_NO_SANITIZE:-} ]]; then sanitize || status=1; fi
  # The Python package (tests/python) under this machine's python3 and
  # PyTorch, with the shipped driver: the CPU tests build their libraries
  # with it (for this CPU), and every example's CUDA library is built here
  # first (sm_90a, 8 at a time) for test_cuda.py and ddp_encoder.py. Every
  # test must pass; skips are listed with their reasons (-rs).
  printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_RUNTIME_LIB=%s DCCC_RUNTIME_HEADER=%s exec /tmp/dccc-gpu/dccc "$@"\n' \
    "$PWD/libdccrt.a" "$PWD/include/dccrt.h" > /tmp/dccc-gpu/dccc.sh
  chmod +x /tmp/dccc-gpu/dccc.sh
  pylibs=/tmp/dccc-gpu/python-libs
  for toy in examples/*.toy; do echo "$toy"; done |
    DCCC_CUDA_ARCH="-gencode arch=compute_90a,code=sm_90a" xargs -P 8 -I{} sh -c \
      'ex=$(basename {} .toy); mkdir -p '"$pylibs"'/$ex && /tmp/dccc-gpu/dccc.sh --target=cuda -o '"$pylibs"'/$ex/$ex.so {}' \
      2>&1 | tail -3 | tee "$results/python_cuda_libs.txt"
  pypath="$PWD/python"
  python3 -c "import pytest" 2>/dev/null || pypath="$pypath:$PWD/pylib"
  DCCC=/tmp/dccc-gpu/dccc.sh DCCC_CUDA_LIBS="$pylibs" DCCC_CACHE_DIR=/tmp/dccc-gpu/cache \
    PYTHONPATH="$pypath" PYTHONDONTWRITEBYTECODE=1 \
    python3 -m pytest tests/python -q -rs -p no:cacheprovider 2>&1 | tee "$results/python_test.txt"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
  # The standard library on the GPU (issue 20): tests/stdlib/*_diff.py
  # --target=cuda compiles std/nn.toy, std/attention.toy,
  # tests/stdlib/ragged_lib.toy and tests/stdlib/ragged_slices_lib.toy
  # (take_rows, slice_rows, slice_rows_each, concat_rows: lengths a kernel
  # computes, copied to the host) here with the shipped driver and nvcc, and
  # runs every function on random ragged inputs (zero lengths, B = 1) with
  # CUDA tensors against float64 NumPy; each must print its OK line (a skip,
  # exit 77, is a failure here: this machine has a GPU).
  for t in nn attention ragged; do
    PYTHONDONTWRITEBYTECODE=1 python3 tests/stdlib/${t}_diff.py /tmp/dccc-gpu/dccc.sh 3 --target=cuda 2>&1 |
      tail -40 | tee "$results/stdlib_${t}.txt"
    grep -q "^${t}_diff --target=cuda: OK" "$results/stdlib_${t}.txt" || status=1
  done
  # Data parallel through PyTorch's engine: the encoder layer with the CUDA
  # mha operator on two GPUs (NCCL), each rank against the single-GPU run.
  if (( $(nvidia-smi -L | wc -l) >= 2 )); then
    PYTHONPATH="$PWD/python" torchrun --nproc_per_node=2 bench/python/ddp_encoder.py \
      --lib "$pylibs/mha/mha.so" 2>&1 | tee "$results/ddp_encoder.txt"
    grep -q "ddp encoder check: OK" "$results/ddp_encoder.txt" || status=1
  else
    echo "ddp_encoder: SKIPPED (one GPU; needs two)" | tee "$results/ddp_encoder.txt"
  fi
  # The online-reductions examples (issue 15), each built as written (the
  # softmax chain in one loop) and with `materialize` (stored scores), against
  # the float64 NumPy reference of tests/online/attention_diff.py on ragged
  # length patterns; fully masked rows must be 0.
  for so in online/*_cuda_online.so; do
    [[ -f $so ]] || continue
    ex=$(basename "$so" _cuda_online.so)
    python3 attention_diff.py --prebuilt online "$ex" --target=cuda 2>&1 | tee "$results/online_$ex.txt"
    grep -q "$ex cuda: OK" "$results/online_$ex.txt" || status=1
  done
  # The fused attention kernel (issue 17) against float64 on a 4,096-token
  # sequence next to empty, 1- and 17-token ones, head dims 64 and 128,
  # non-causal and causal (the emulator tests stop at ~300 tokens).
  if [[ -f bench_fused.py && -f mha_causal_bf16.so ]]; then
    python3 bench_fused.py --dir . --lengths 4096,0,1,17,300 --check-only 2>&1 | tee "$results/fused_check.txt"
    [[ ${PIPESTATUS[0]} -eq 0 && $(grep -c "check OK" "$results/fused_check.txt") -eq 4 ]] || status=1
  fi
  # The same for f16 (mha_f16.so, mha_causal_f16.so; bound 1e-2).
  if [[ -f bench_fused.py && -f mha_causal_f16.so ]]; then
    python3 bench_fused.py --dir . --dtype f16 --lengths 4096,0,1,17,300 --check-only 2>&1 |
      tee "$results/fused_check_f16.txt"
    [[ ${PIPESTATUS[0]} -eq 0 && $(grep -c "check OK" "$results/fused_check_f16.txt") -eq 4 ]] || status=1
  fi
  # The same for f32 (mha.so, mha_causal.so: 3xTF32; bound 1e-3).
  if [[ -f bench_fused.py && -f mha_causal.so ]]; then
    python3 bench_fused.py --dir . --dtype f32 --lengths 4096,0,1,17,300 --check-only 2>&1 |
      tee "$results/fused_check_f32.txt"
    [[ ${PIPESTATUS[0]} -eq 0 && $(grep -c "check OK" "$results/fused_check_f32.txt") -eq 4 ]] || status=1
  fi
  # --fast-math (fast_math/: the f32-scores program as bf16, mha and
  # mha_causal as f32): the same float64 checks and bounds.
  if [[ -f bench_fused.py && -f fast_math/mha_causal.so ]]; then
    for dt in bf16 f32; do
      python3 bench_fused.py --dir fast_math --dtype $dt --lengths 4096,0,1,17,300 --check-only 2>&1 |
        tee "$results/fused_check_fast_$dt.txt"
      [[ ${PIPESTATUS[0]} -eq 0 && $(grep -c "check OK" "$results/fused_check_fast_$dt.txt") -eq 4 ]] || status=1
    done
  fi
fi
if [[ $mode != test-only ]]; then
  export PYTHONUNBUFFERED=1
  python3 bench_mha.py --so ./mha.so --dtype f32 --seqlens seqlens "$@" 2>&1 | tee "$results/bench_f32.txt" || status=1
  python3 bench_mha.py --so ./mha_bf16.so --dtype bf16 --seqlens seqlens "$@" 2>&1 | tee "$results/bench_bf16.txt" || status=1
  # The fused bf16 kernel against FA2-varlen and cuDNN (B = 128, D = 64 and 128, full and causal).
  if [[ -f bench_fused.py && -f mha_causal_bf16.so ]]; then
    python3 bench_fused.py --dir . --seqlens seqlens --out "$results/bench_fused.txt" || status=1
  fi
  # The fused f32 kernel against _efficient_attention_forward varlen and SDPA's memory-efficient backend.
  if [[ -f bench_fused.py && -f mha_causal.so ]]; then
    python3 bench_fused.py --dir . --dtype f32 --seqlens seqlens --out "$results/bench_fused_f32.txt" || status=1
  fi
  python3 bench_gemm.py --dir . --seqlens seqlens --out "$results/bench_gemm.txt" || status=1
  # The long batches of bench/make_long_seqlens.py (issue 15: documents of
  # up to 2,048 tokens, chat turns of up to 4,096, B = 32 and 128), which the
  # materialised form cannot hold: the online-reductions libraries.
  if [[ -f online/mha_cuda_online.so && -f seqlens/docs2k.txt ]]; then
    python3 bench_mha.py --so online/mha_cuda_online.so --dtype f32 --seqlens seqlens --batches docs2k,chat4k \
      --B 32,128 2>&1 | tee "$results/bench_long_f32.txt" || status=1
    python3 bench_mha.py --so online/mha_bf16_cuda_online.so --dtype bf16 --seqlens seqlens --batches docs2k,chat4k \
      --B 32,128 2>&1 | tee "$results/bench_long_bf16.txt" || status=1
  fi
fi
exit $status
