#!/bin/bash
# Builds build-var/s37/f for dev_s37.sh PART f (run from the repository root,
# build/ at the commit under test): the GPU test binary with the libraries it
# links, the driver, libdccrt, the examples and the schedules, packed as
# scripts/gpu_bundle.sh packs them (test.tar.xz).
set -euo pipefail
F=build-var/s37/f
rm -rf $F && mkdir -p $F/stage/lib $F/include $F/schedules
t=build/tests/unit/backend/dccc_cuda_backend_tests
for lib in $(ldd $t | awk '/=> \// {print $3}' | sort -u |
             grep -v -E '/(libc|libm|libgcc_s|libstdc\+\+|libpthread|libdl|librt|ld-linux[^/]*)\.so'); do
  cp -L -n "$lib" $F/stage/lib/
done
cp $t $F/stage/ && strip $F/stage/dccc_cuda_backend_tests  # the driver stays here (the tests build in process)
XZ_OPT="-T2 -6" tar -cJf $F/test.tar.xz -C $F/stage . && rm -rf $F/stage
cp build/runtime/libdccrt.a $F/ && strip --strip-debug $F/libdccrt.a
cp runtime/include/dccrt.h $F/include/
cp -r examples $F/examples
cp tests/cuda/schedules/*.schedule tests/host/*.schedule $F/schedules/
du -sh $F
