#!/bin/bash
# Builds build-var/s31/f for dev_s31.sh PARTs f and g (run from the repository root,
# build/ at the commit under test): the GPU test binary with the libraries it
# links, the driver, libdccrt, the examples and the schedules, packed as
# scripts/gpu_bundle.sh packs them (test.tar.xz).
set -euo pipefail
F=build-var/s31/f
rm -rf $F && mkdir -p $F/stage/lib $F/include $F/schedules
t=build/tests/unit/backend/dccc_cuda_backend_tests
for lib in $(ldd $t build/tools/dccc | awk '/=> \// {print $3}' | sort -u |
             grep -v -E '/(libc|libm|libgcc_s|libstdc\+\+|libpthread|libdl|librt|ld-linux[^/]*)\.so'); do
  cp -L -n "$lib" $F/stage/lib/
done
cp $t build/tools/dccc $F/stage/ && strip $F/stage/dccc_cuda_backend_tests $F/stage/dccc
XZ_OPT="-T2 -6" tar -cJf $F/test.tar.xz -C $F/stage . && rm -rf $F/stage
cp build/runtime/libdccrt.a $F/ && strip --strip-debug $F/libdccrt.a
cp runtime/include/dccrt.h $F/include/
cp -r examples $F/examples
cp tests/cuda/schedules/*.schedule tests/host/*.schedule $F/schedules/
du -sh $F
# The final libraries: bf16/ the FA2-precision program (new/ this compiler,
# base/ ecd4d96's from build-var/s31/a), f32/ examples/mha.toy and
# mha_causal.toy (new/, base/ likewise).
for d in f32 bf16; do
  mkdir -p $F/$d/seqlens $F/$d/new
  cp bench/cuda/bench_fused.py $F/$d/
  cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $F/$d/seqlens/
  cp -r build-var/s31/a/$d/base $F/$d/base
done
for ex in mha mha_causal; do
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a -o $F/f32/new/$ex.so examples/$ex.toy &
done
./build/tools/dccc --target=cuda --cuda-arch=sm_90a --fast-math -o $F/bf16/new/mha_bf16.so build-var/s31/a/bf16/fa2.toy &
wait
cp $F/bf16/new/mha_bf16.so $F/bf16/new/mha_causal_bf16.so
strip --strip-unneeded $F/*/*/*.so
du -sh $F
