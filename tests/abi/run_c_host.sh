#!/usr/bin/env bash
# CTest abi/<name> and abi_cuda/<name>: `dccc TOY -o` builds the library,
# HOST.c (next to TOY, named NAME_host.c) is compiled against its header
# as C11 and as C++17 with warnings as errors, and both are run; each checks
# the results against its own float64 reference and prints "... host check: OK".
#   run_c_host.sh DCCC CXX TOY [--target=cuda] [FLAGS...]
# The C compiler is $CC (default cc); FLAGS (sanitizers) go to dccc's link
# ($DCCC_CFLAGS) and to both hosts.
# With --target=cuda the library holds CUDA kernels (nvcc): exits 77 (CTest
# SKIP) without nvcc; the hosts are built with DCC_HOST_CUDA (device copies
# of the arguments) and run only when a GPU is present (nvidia-smi -L).
set -euo pipefail
DCCC="$1"; CXX="$2"; TOY="$3"; shift 3
TARGET=""
if [[ "${1:-}" == --target=* ]]; then TARGET="$1"; shift; fi
FLAGS=("$@")
CC="${CC:-cc}"
name="$(basename "$TOY" .toy)"
src="$(cd "$(dirname "$TOY")" && pwd)"
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
extra=()
if [[ "$TARGET" == --target=cuda ]]; then
  nvcc="${DCCC_NVCC:-/usr/local/cuda/bin/nvcc}"
  if [[ ! -x "$nvcc" ]] && ! command -v nvcc >/dev/null; then
    echo "SKIP: no nvcc"
    exit 77
  fi
  cuda_home="$(cd "$(dirname "$(command -v "$nvcc" || echo "$nvcc")")/.." && pwd)"
  extra=(-DDCC_HOST_CUDA -I"$cuda_home/include" -L"$cuda_home/lib64" -lcudart)
  export DCCC_CUDA_ARCH="${DCCC_CUDA_ARCH:--arch=sm_90}"
fi
DCCC_CFLAGS="${FLAGS[*]+"${FLAGS[*]}"}" "$DCCC" ${TARGET:+"$TARGET"} "$TOY" -o "$DIR/$name.so"
"$CC" -std=c11 -Wall -Wextra -Werror -I"$DIR" -I"$src" "$src/${name}_host.c" "$DIR/$name.so" \
  -Wl,-rpath,"$DIR" -o "$DIR/host_c" -lm ${extra[@]+"${extra[@]}"} ${FLAGS[@]+"${FLAGS[@]}"}
"$CXX" -x c++ -std=c++17 -Wall -Wextra -Werror -I"$DIR" -I"$src" "$src/${name}_host.c" -x none "$DIR/$name.so" \
  -Wl,-rpath,"$DIR" -o "$DIR/host_cxx" -lm ${extra[@]+"${extra[@]}"} ${FLAGS[@]+"${FLAGS[@]}"}
if [[ "$TARGET" == --target=cuda ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "$name: built for CUDA and compiled as C and C++; no GPU to run it: $name host check: OK (compile only)"
  exit 0
fi
"$DIR/host_c"
"$DIR/host_cxx"
