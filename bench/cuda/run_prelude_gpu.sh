#!/usr/bin/env bash
# On a GPU machine: builds the CUDA hosts against a folder made by
# scripts/gpu_prelude_bundle.sh and runs, for both sources of the prelude's
# device copy (host-then-upload, then DCCC_CUDA_PRELUDE=gpu), the checked
# mha host (float64 reference, error paths) and bench_prelude_cuda; fails
# when a check fails or the two modes' results differ.
#
#   run_prelude_gpu.sh BUNDLE_DIR [OUT_DIR]
set -euo pipefail
B="$(cd "$1" && pwd)"
OUT="${2:-$B}"
NVCC="${DCCC_NVCC:-/usr/local/cuda/bin/nvcc}"
cd "$B"
"$NVCC" -O2 -std=c++17 -o mha_cuda_host mha_cuda_host.cu -I. ./mha.so -Xlinker -rpath="$B"
"$NVCC" -O2 -std=c++17 -o bench_prelude_cuda bench_prelude_cuda.cu -I. ./mha.so -Xlinker -rpath="$B"
sums=()
for mode in host gpu; do
  echo "== device copy of the prelude: $mode"
  DCCC_CUDA_PRELUDE=$mode ./mha_cuda_host > "$OUT/mha_cuda_host_$mode.txt" || true
  tail -2 "$OUT/mha_cuda_host_$mode.txt"
  grep -q "mha cuda host check: OK" "$OUT/mha_cuda_host_$mode.txt" || { echo "run_prelude_gpu: mha_cuda_host failed ($mode)"; exit 1; }
  DCCC_CUDA_PRELUDE=$mode ./bench_prelude_cuda --seqlens seqlens | tee "$OUT/bench_prelude_$mode.txt"
  sums+=("$(grep -o 'checksum [0-9a-f]*' "$OUT/bench_prelude_$mode.txt")")
done
if [[ "${sums[0]}" != "${sums[1]}" ]]; then
  echo "run_prelude_gpu: results differ between the two modes: ${sums[*]}"
  exit 1
fi
echo "run_prelude_gpu: OK"
