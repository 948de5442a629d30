#!/bin/bash
# std/nn.toy and std/attention.toy on the GPU (session 17): their log_softmax
# and _weigh instances (f16, bf16) are now derived as one-pass loops on the
# CUDA target too (element-wise per-key values). tests/stdlib/*_diff.py
# --target=cuda against float64 NumPy, as bench/cuda/run_gpu.sh runs them.
R=$OUT; mkdir -p /tmp/dccc-gpu
cd build-gpu || exit 1
tar -xJf test.tar.xz -C /tmp/dccc-gpu
mkdir -p /tmp/share/dccc && rm -rf /tmp/share/dccc/std && cp -r stdlib /tmp/share/dccc/std
printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_RUNTIME_LIB=%s DCCC_RUNTIME_HEADER=%s exec /tmp/dccc-gpu/dccc "$@"\n' \
  "$PWD/libdccrt.a" "$PWD/include/dccrt.h" > /tmp/dccc-gpu/dccc.sh
chmod +x /tmp/dccc-gpu/dccc.sh
for t in nn attention; do
  PYTHONDONTWRITEBYTECODE=1 timeout 280 python3 tests/stdlib/${t}_diff.py /tmp/dccc-gpu/dccc.sh 3 --target=cuda > $R/stdlib_$t.txt 2>&1
  tail -3 $R/stdlib_$t.txt
done
