#!/usr/bin/env bash
# Packs what bench/cuda/run_prelude_gpu.sh needs on a GPU machine without
# dccc's build dependencies: examples/mha.toy built here with --target=cuda
# (mha.so, mha.h, dccrt.h), the CUDA hosts (examples/host/mha_cuda_host.cu,
# bench/cuda/bench_prelude_cuda.cu), the length batches and the script.
#
#   scripts/gpu_prelude_bundle.sh [OUT_DIR]     default: build-gpu-prelude (ignored by git)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/build-gpu-prelude}"
BUILD="${DCCC_BUILD_DIR:-$ROOT/build}"
SEQLENS="${DCCC_SEQLENS:-$ROOT/../shared/bench/seqlens}"
"$ROOT/scripts/build.sh" default "$BUILD" dccc dccrt
rm -rf "$OUT"
mkdir -p "$OUT/seqlens"
"$BUILD/tools/dccc" --target=cuda -o "$OUT/mha.so" "$ROOT/examples/mha.toy"
cp "$ROOT/examples/host/mha_cuda_host.cu" "$ROOT/bench/cuda/bench_prelude_cuda.cu" "$ROOT/bench/bench_util.h" "$ROOT/bench/cuda/run_prelude_gpu.sh" "$OUT/"
cp "$SEQLENS"/*.txt "$OUT/seqlens/"
echo "gpu_prelude_bundle: wrote $OUT ($(du -sh "$OUT" | cut -f1))"
