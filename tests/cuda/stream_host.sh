#!/usr/bin/env bash
# CTest `cuda/stream_host` (label cuda): examples/host/stream_cuda_host.cu on
# examples/mha_bf16.toy built with --target=cuda -- mha_bf16_on_stream with
# host lengths on a stream, captured into a CUDA graph and replayed with new
# data, against mha_bf16 and float64, wrong lengths refused with nothing
# launched -- then the same host with --long (one sequence of 32,768
# tokens). Compiles with nvcc wherever there is one; runs where there is a
# GPU, else exits 77 (SKIP) after compiling. bench/cuda/run_gpu.sh runs the
# same host from the GPU bundle (--stream-only).
#   stream_host.sh DCCC SOURCE_DIR OUT_DIR
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
# Without a GPU nothing runs after the build: device code unoptimized there
# (CI time, as compile_example.sh --sm90a-only).
arch="-arch=sm_90"
nvidia-smi -L >/dev/null 2>&1 || arch="-arch=sm_90 -Xcicc -O0 -Xptxas -O0"
rm -f "$out/mha_bf16.so" "$out/mha_bf16.h" "$out/stream_cuda_host"
DCCC_CUDA_ARCH="${DCCC_CUDA_ARCH:-$arch}" "$dccc" --target=cuda -o "$out/mha_bf16.so" "$src/examples/mha_bf16.toy"
host_nvcc "$out/stream_cuda_host" "$src/examples/host/stream_cuda_host.cu" -I"$out" "$out/mha_bf16.so" \
  -Xlinker -rpath -Xlinker "$out"
rc=0
"$out/stream_cuda_host" || rc=$?
[[ $rc -eq 0 ]] || exit $rc
"$out/stream_cuda_host" --long
