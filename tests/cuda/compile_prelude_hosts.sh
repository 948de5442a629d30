#!/usr/bin/env bash
# CTest `cuda_compile/prelude_hosts`: the CUDA hosts that
# bench/cuda/run_prelude_gpu.sh runs on a GPU machine (bench_prelude_cuda.cu,
# examples/host/mha_cuda_host.cu) must compile and link against
# examples/mha.toy built with --target=cuda, so that the benchmark the lead
# runs on a GPU does not break unseen. No GPU needed; exits 77 (SKIP) without nvcc.
#   compile_prelude_hosts.sh DCCC SOURCE_DIR OUT_DIR
set -euo pipefail
dccc="$1" src="$2" out="$3"
nvcc="${DCCC_NVCC:-/usr/local/cuda/bin/nvcc}"
if [[ ! -x "$nvcc" ]] && ! nvcc="$(command -v nvcc)"; then
  echo "SKIP: no nvcc"
  exit 77
fi
mkdir -p "$out"
# shellcheck source=tests/cuda/host_nvcc.sh
source "$src/tests/cuda/host_nvcc.sh"
# Nothing here runs the kernels: their device code unoptimized (CI time, as
# compile_example.sh --sm90a-only; the GPU runs build it at -O3).
fast_arch="-arch=sm_90 -Xcicc -O0 -Xptxas -O0"
DCCC_CUDA_ARCH="${DCCC_CUDA_ARCH:-$fast_arch}" "$dccc" --target=cuda -o "$out/mha.so" "$src/examples/mha.toy"
host_nvcc "$out/bench_prelude_cuda" "$src/bench/cuda/bench_prelude_cuda.cu" -I"$out" -I"$src/bench" "$out/mha.so"
host_nvcc "$out/mha_cuda_host" "$src/examples/host/mha_cuda_host.cu" -I"$out" "$out/mha.so"
echo "prelude hosts: compiled"
