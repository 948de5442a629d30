#!/bin/bash
# Device call C: the stdlib on CUDA and the Python tests (session 14 script).
cd "$(dirname "$0")"
R=$OUT/c; mkdir -p $R /tmp/dccc-gpu
[[ -x /tmp/dccc-gpu/dccc ]] || tar -xJf test.tar.xz -C /tmp/dccc-gpu
mkdir -p /tmp/share/dccc && rm -rf /tmp/share/dccc/std && cp -r stdlib /tmp/share/dccc/std
printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_RUNTIME_LIB=%s DCCC_RUNTIME_HEADER=%s exec /tmp/dccc-gpu/dccc "$@"\n' "$PWD/libdccrt.a" "$PWD/include/dccrt.h" > /tmp/dccc-gpu/dccc.sh
chmod +x /tmp/dccc-gpu/dccc.sh
for t in attention nn; do
  PYTHONDONTWRITEBYTECODE=1 DCCC_CUDA_ARCH=-arch=sm_90 timeout 200 python3 tests/stdlib/${t}_diff.py /tmp/dccc-gpu/dccc.sh 2 --target=cuda 2>&1 | tail -3 | tee $R/stdlib_${t}.txt
done
pylibs=/tmp/dccc-gpu/python-libs
for toy in examples/*.toy; do echo "$toy"; done | DCCC_CUDA_ARCH=-arch=sm_90 xargs -P 12 -I{} sh -c \
  'ex=$(basename {} .toy); mkdir -p '"$pylibs"'/$ex && /tmp/dccc-gpu/dccc.sh --target=cuda -o '"$pylibs"'/$ex/$ex.so {}' 2>&1 | tail -2
pypath="$PWD/python"; python3 -c "import pytest" 2>/dev/null || pypath="$pypath:$PWD/pylib"
DCCC=/tmp/dccc-gpu/dccc.sh DCCC_CUDA_LIBS="$pylibs" DCCC_CACHE_DIR=/tmp/dccc-gpu/cache DCCC_CUDA_ARCH=-arch=sm_90 \
  PYTHONPATH="$pypath" PYTHONDONTWRITEBYTECODE=1 timeout 280 python3 -m pytest tests/python -q -x -p no:cacheprovider 2>&1 | tail -6 | tee $R/python_test.txt
# The GPU math test rebuilt after the bundle (adds the exact bf16 rounding check).
xz -dc t2/dccc_cuda_backend_tests.xz > /tmp/dccc-gpu/t2_tests && chmod +x /tmp/dccc-gpu/t2_tests
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" DCCC_RUNTIME_INCLUDE="$PWD/include" \
  timeout 120 /tmp/dccc-gpu/t2_tests --gtest_filter='*Exp16*' 2>&1 | tail -5 | tee $R/gpu_math16.txt
