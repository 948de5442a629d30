#!/bin/bash
# Builds build-var/s28/f for dev_s28.sh PART f (run here, from the repository
# root, with build/ at the commit under test): the FA2-precision program
# (--fast-math, sm_90a) as um/ (the defaults: the mask-free copy of the tile
# body for causal's tiles below the diagonal, AttentionKernel::unmasked) and
# umoff/ (--attention-unmasked=off); and the GPU test binary with the
# libraries it links, the driver, libdccrt, the examples and the schedules,
# packed as scripts/gpu_bundle.sh packs them (test.tar.xz).
set -euo pipefail
F=build-var/s28/f
rm -rf $F && mkdir -p $F/seqlens $F/stage/lib $F/include $F/schedules
cp bench/cuda/bench_fused.py $F/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $F/seqlens/
sed -e 's/fn mha_bf16_f32_scores(/fn mha_bf16(/' -e 's/fn mha_causal_bf16_f32_scores(/fn mha_causal(/' \
  examples/mha_bf16_f32_scores.toy > $F/fa2.toy
build() {  # build DIR FLAGS...
  local v=$1; shift
  mkdir -p $F/$v
  ./build/tools/dccc --target=cuda --cuda-arch=sm_90a --fast-math "$@" -o $F/$v/mha_bf16.so $F/fa2.toy
  strip --strip-unneeded $F/$v/mha_bf16.so
}
build um &
build umoff --attention-unmasked=off &
wait
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
