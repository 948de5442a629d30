#!/usr/bin/env bash
# Packs what the GPU tests and the CUDA benchmark need into one folder, for a
# GPU machine that has nvcc, python3 and PyTorch but not dccc's build
# dependencies (LLVM 19, ANTLR4, Z3): the GPU test binary with the shared
# libraries it links (xz-compressed), libdccrt, the examples, the schedules
# of the scheduled GPU test, the length batches, the benchmark's .so files
# built here with --target=cuda, the nested examples' .so files with their
# CUDA hosts, the Python package with its tests (tests/python: the dccc
# driver itself travels in test.tar.xz, 1 MB more, so that run_gpu.sh builds
# the libraries of the Python tests there -- the CPU ones for that CPU, the
# CUDA ones with that nvcc, which keeps them out of the bundle; Debian's
# pytest in pylib/ for a Python without one), the stdlib differential
# tests (tests/stdlib) with stdlib/, bench/python/ddp_encoder.py,
# and bench/cuda/run_gpu.sh. Run that script there (see bench/README.md).
#
#   scripts/gpu_bundle.sh [OUT_DIR]     default: build-gpu (ignored by git)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/build-gpu}"
BUILD="${DCCC_BUILD_DIR:-$ROOT/build}"
SEQLENS="${DCCC_SEQLENS:-$ROOT/../shared/bench/seqlens}"

"$ROOT/scripts/build.sh" default "$BUILD" dccc dccc_cuda_backend_tests dccrt
rm -rf "$OUT"
mkdir -p "$OUT/include" "$OUT/seqlens" "$OUT/stage/lib"
test_bin="$BUILD/tests/unit/backend/dccc_cuda_backend_tests"
# The shared libraries that a stock CUDA image lacks (everything but libc,
# libstdc++ and friends).
for lib in $(ldd "$test_bin" | awk '/=> \// {print $3}' |
             grep -v -E '/(libc|libm|libgcc_s|libstdc\+\+|libpthread|libdl|librt|ld-linux[^/]*)\.so'); do
  cp -L "$lib" "$OUT/stage/lib/"
done
# The driver too, for the Python tests (its libraries are mostly the same).
for lib in $(ldd "$BUILD/tools/dccc" | awk '/=> \// {print $3}' |
             grep -v -E '/(libc|libm|libgcc_s|libstdc\+\+|libpthread|libdl|librt|ld-linux[^/]*)\.so'); do
  cp -L -n "$lib" "$OUT/stage/lib/"
done
cp "$test_bin" "$OUT/stage/dccc_cuda_backend_tests"
cp "$BUILD/tools/dccc" "$OUT/stage/dccc"
strip "$OUT/stage/dccc_cuda_backend_tests" "$OUT/stage/dccc"
echo "gpu_bundle: compressing the test binary and $(ls "$OUT/stage/lib" | wc -l) libraries"
XZ_OPT="-T2 -6" tar -cJf "$OUT/test.tar.xz" -C "$OUT/stage" .
rm -rf "$OUT/stage"
cp "$BUILD/runtime/libdccrt.a" "$OUT/" && strip --strip-debug "$OUT/libdccrt.a"
cp "$ROOT/runtime/include/dccrt.h" "$OUT/include/"
cp -r "$ROOT/examples" "$OUT/examples"
mkdir -p "$OUT/schedules"   # the scheduled programs of CudaBackend.ScheduledMatchCpuBackend
cp "$ROOT"/tests/cuda/schedules/*.schedule "$ROOT"/tests/host/*.schedule "$OUT/schedules/"
cp "$SEQLENS"/*.txt "$OUT/seqlens/"
cp "$ROOT"/bench/seqlens/*.txt "$OUT/seqlens/"  # the long batches (bench/make_long_seqlens.py)
cp "$ROOT/bench/cuda/bench_mha.py" "$ROOT/bench/cuda/run_gpu.sh" "$ROOT/examples/host/mha_cuda_host.cu" "$OUT/"
for ex in mha mha_bf16; do
  "$BUILD/tools/dccc" --target=cuda -o "$OUT/$ex.so" "$ROOT/examples/$ex.toy"
done
# The fused attention benchmark and GPU check (bench/cuda/bench_fused.py):
# mha_bf16.so above (fused by default on the CUDA target) and the bf16
# version of mha_causal (every tensor bf16, as mha_bf16 is mha's).
cp "$ROOT/bench/cuda/bench_fused.py" "$ROOT/bench/cuda/kernel_times.sh" "$OUT/"
sed -e 's/\]f32/]bf16/g' "$ROOT/examples/mha_causal.toy" > "$OUT/mha_causal_bf16.toy"
"$BUILD/tools/dccc" --target=cuda -o "$OUT/mha_causal_bf16.so" "$OUT/mha_causal_bf16.toy"
# f16 (bench_fused.py --dtype f16): the same two programs with every bf16
# made f16 (the f16 wgmma instantiations on sm_90a).
sed -e 's/\]bf16/]f16/g' "$ROOT/examples/mha_bf16.toy" > "$OUT/mha_f16.toy"
sed -e 's/\]bf16/]f16/g' "$OUT/mha_causal_bf16.toy" > "$OUT/mha_causal_f16.toy"
"$BUILD/tools/dccc" --target=cuda -o "$OUT/mha_f16.so" "$OUT/mha_f16.toy"
"$BUILD/tools/dccc" --target=cuda -o "$OUT/mha_causal_f16.so" "$OUT/mha_causal_f16.toy"
# f32 (bench_fused.py --dtype f32): mha.so above and mha_causal.so, 3xTF32.
"$BUILD/tools/dccc" --target=cuda -o "$OUT/mha_causal.so" "$ROOT/examples/mha_causal.toy"
# FlashAttention-2's precision (examples/mha_bf16_f32_scores.toy: f32 scores
# and sums, P in bf16) under the names bench_fused.py calls, for
# `bench_fused.py --variants f32s=f32_scores`.
mkdir -p "$OUT/f32_scores"
sed -e 's/fn mha_bf16_f32_scores(/fn mha_bf16(/' -e 's/fn mha_causal_bf16_f32_scores(/fn mha_causal(/' \
  "$ROOT/examples/mha_bf16_f32_scores.toy" > "$OUT/f32_scores/mha_f32_scores.toy"
"$BUILD/tools/dccc" --target=cuda -o "$OUT/f32_scores/mha_bf16.so" "$OUT/f32_scores/mha_f32_scores.toy"
cp "$OUT/f32_scores/mha_bf16.so" "$OUT/f32_scores/mha_causal_bf16.so"
# The same program and the f32 ones with --fast-math (FlashAttention's exp:
# one ex2.approx; docs/cuda.md "Fast math"), for the checks in run_gpu.sh and
# `bench_fused.py --variants fast=fast_math` (bf16 and --dtype f32).
mkdir -p "$OUT/fast_math"
"$BUILD/tools/dccc" --target=cuda --fast-math -o "$OUT/fast_math/mha_bf16.so" "$OUT/f32_scores/mha_f32_scores.toy"
cp "$OUT/fast_math/mha_bf16.so" "$OUT/fast_math/mha_causal_bf16.so"
"$BUILD/tools/dccc" --target=cuda --fast-math -o "$OUT/fast_math/mha.so" "$ROOT/examples/mha.toy"
"$BUILD/tools/dccc" --target=cuda --fast-math -o "$OUT/fast_math/mha_causal.so" "$ROOT/examples/mha_causal.toy"
for toy in "$ROOT/examples/mha_bf16.toy" "$OUT/mha_causal_bf16.toy" "$OUT/mha_f16.toy" "$ROOT/examples/gqa_bf16.toy" \
           "$OUT/f32_scores/mha_f32_scores.toy" \
           "$ROOT/examples/mha.toy" "$ROOT/examples/mha_causal.toy"; do
  [[ "$("$BUILD/tools/dccc" --target=cuda --explain "$toy")" == *"fused attention"* ]] ||
    { echo "gpu_bundle: $toy is not built as the fused attention kernel"; exit 1; }
done
# The grouped GEMM benchmark (bench/cuda/bench_gemm.py): bf16 and f32 on
# tensor cores (3xTF32, the default; TF32), and f32 without them (ieee).
cp "$ROOT/bench/cuda/bench_gemm.py" "$OUT/"
"$BUILD/tools/dccc" --target=cuda -o "$OUT/batched_gemm_bf16.so" "$ROOT/examples/batched_gemm_bf16.toy"
"$BUILD/tools/dccc" --target=cuda -o "$OUT/batched_gemm.so" "$ROOT/examples/batched_gemm.toy"
for m in tf32 ieee; do
  "$BUILD/tools/dccc" --target=cuda --fp32-math=$m -o "$OUT/batched_gemm_$m.so" "$ROOT/examples/batched_gemm.toy"
done
# mha with the host tests' schedules (fuse maps and remap permutations in
# the prelude cache): run_gpu.sh runs the CUDA host check on these too.
for s in mha_fused mha_remap; do
  "$BUILD/tools/dccc" --target=cuda --schedule="$(cat "$ROOT/tests/host/$s.schedule")" -o "$OUT/$s.so" "$ROOT/examples/mha.toy"
done
# The nested examples and their CUDA hosts (run_gpu.sh compiles each host
# against its .so): the C wrapper copies the nested length arrays from the
# device.
for ex in causal_attention documents; do
  "$BUILD/tools/dccc" --target=cuda -o "$OUT/$ex.so" "$ROOT/examples/$ex.toy"
done
# The online-reductions examples (issue 15) for run_gpu.sh's differential
# test: each as written (online) and with its scores kept (materialised).
mkdir -p "$OUT/online"
cp "$ROOT/tests/online/attention_diff.py" "$OUT/"
for pair in mha:scores mha_bf16:scores flash_attention:scores mha_causal:scores mha_window:dot \
            mha_softcap:raw mha_scale_after_max:s; do
  ex=${pair%%:*} keep=${pair#*:}
  fn=$ex
  "$BUILD/tools/dccc" --target=cuda --online-reductions -o "$OUT/online/${ex}_cuda_online.so" "$ROOT/examples/$ex.toy"
  "$BUILD/tools/dccc" --target=cuda --schedule="schedule $fn { materialize($keep); }" \
    -o "$OUT/online/${ex}_cuda_materialised.so" "$ROOT/examples/$ex.toy"
done
# examples/mha_bf16_f32_scores.toy holds two functions, each checked by name.
for fn in mha_bf16_f32_scores mha_causal_bf16_f32_scores; do
  "$BUILD/tools/dccc" --target=cuda --online-reductions -o "$OUT/online/${fn}_cuda_online.so" \
    "$ROOT/examples/mha_bf16_f32_scores.toy"
  "$BUILD/tools/dccc" --target=cuda --schedule="schedule $fn { materialize(scores); }" \
    -o "$OUT/online/${fn}_cuda_materialised.so" "$ROOT/examples/mha_bf16_f32_scores.toy"
done
cp "$ROOT/examples/host/causal_cuda_host.cu" "$ROOT/examples/host/causal_reference.h" \
   "$ROOT/examples/host/documents_cuda_host.cu" "$ROOT/examples/host/documents_reference.h" \
   "$ROOT/examples/host/cuda_host_util.h" "$OUT/"
# The Python package and its tests, laid out as in the repository
# (tests/python/test_docs.py runs the README's and docs/python.md's blocks
# from the bundle's root).
mkdir -p "$OUT/tests" "$OUT/docs" "$OUT/bench" "$OUT/pylib"
cp -r "$ROOT/python" "$OUT/python"
cp -r "$ROOT/tests/python" "$OUT/tests/python"
# The stdlib differential tests (tests/stdlib/*_diff.py --target=cuda: the
# std files compiled there with that nvcc, called with CUDA tensors) and
# the standard library they compile.
cp -r "$ROOT/tests/stdlib" "$OUT/tests/stdlib"
cp -r "$ROOT/stdlib" "$OUT/stdlib"
cp -r "$ROOT/bench/python" "$OUT/bench/python"
cp "$ROOT/README.md" "$OUT/README.md"
cp "$ROOT/docs/python.md" "$OUT/docs/python.md"
find "$OUT/python" "$OUT/tests/python" "$OUT/tests/stdlib" "$OUT/bench/python" -name __pycache__ -prune -exec rm -rf {} +
# Debian's pytest (pure Python), used there only when python3 has none.
for m in pytest _pytest py.py pluggy iniconfig attr attrs packaging; do
  if [[ -e /usr/lib/python3/dist-packages/$m ]]; then cp -r "/usr/lib/python3/dist-packages/$m" "$OUT/pylib/"; fi
done
find "$OUT/pylib" -name __pycache__ -prune -exec rm -rf {} +
# The device's transfer limit is 64 MiB: the libraries without their symbol
# tables (about a quarter of their size), and the online-reductions
# libraries packed (run_gpu.sh unpacks them).
strip --strip-unneeded "$OUT"/*.so "$OUT"/online/*.so
XZ_OPT="-T2 -6" tar -cJf "$OUT/online.tar.xz" -C "$OUT" online && rm -rf "$OUT/online"
echo "gpu_bundle: wrote $OUT ($(du -sh "$OUT" | cut -f1))"
