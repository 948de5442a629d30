#!/usr/bin/env bash
# CTest `cuda_compile/nested_hosts`: the CUDA hosts of the nested examples
# that bench/cuda/run_gpu.sh runs on a GPU machine
# (examples/host/causal_cuda_host.cu, examples/host/documents_cuda_host.cu)
# must compile and link against examples/causal_attention.toy and
# examples/documents.toy built with --target=cuda, so that the GPU run does
# not break unseen. No GPU needed (nothing is run); exits 77 (SKIP) without nvcc.
#   compile_nested_hosts.sh DCCC SOURCE_DIR OUT_DIR
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
for pair in causal:causal_attention documents:documents; do
  host=${pair%%:*} so=${pair#*:}
  rm -f "$out/$so.so" "$out/$so.h" "$out/${host}_cuda_host"
  DCCC_CUDA_ARCH="${DCCC_CUDA_ARCH:-$fast_arch}" "$dccc" --target=cuda -o "$out/$so.so" "$src/examples/$so.toy"
  host_nvcc "$out/${host}_cuda_host" "$src/examples/host/${host}_cuda_host.cu" -I"$out" "$out/$so.so"
  # The host calls every function the library's header declares.
  used="$(nm -D --undefined-only "$out/${host}_cuda_host" | awk '{print $NF}')"
  # (Not FN_on_stream: a nested prelude is computed per call, so it refuses.)
  for fn in $(sed -n 's/^dcc_status \([A-Za-z0-9_]*\)(.*/\1/p' "$out/$so.h" | grep -v '_on_stream$'); do
    grep -qx "$fn" <<<"$used" || { echo "${host}_cuda_host never calls $fn of $so.so"; exit 1; }
  done
done
echo "nested hosts: compiled"
