#!/bin/bash
# Device call (session 16, after transformer_block's fused attention): the GPU
# tests of the bundle (CudaBackend.*: every example against the CPU backend
# and float64, transformer_block's attention now one fused kernel), the fused
# checks, the stdlib's attention and nn on CUDA, and bench_flash.py's check
# (its timing loop now shared with bench_fused.py). Run from the repository
# root with build-gpu/ carried.
R=$OUT; mkdir -p /tmp/dccc-gpu
cd build-gpu || exit 1
tar -xJf test.tar.xz -C /tmp/dccc-gpu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
  DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
  timeout 400 /tmp/dccc-gpu/dccc_cuda_backend_tests 2>&1 | tail -40 > $R/gpu_test.txt
grep -E "OK \]|FAILED|PASSED|error|Error" $R/gpu_test.txt | head -20
python3 bench_fused.py --dir . --lengths 4096,0,1,17,300 --check-only 2>&1 | tail -4 | tee $R/fused_check_bf16.txt
python3 bench_fused.py --dir . --dtype f32 --lengths 4096,0,1,17,300 --check-only 2>&1 | tail -4 | tee $R/fused_check_f32.txt
mkdir -p /tmp/share/dccc && rm -rf /tmp/share/dccc/std && cp -r stdlib /tmp/share/dccc/std
printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_RUNTIME_LIB=%s DCCC_RUNTIME_HEADER=%s exec /tmp/dccc-gpu/dccc "$@"\n' "$PWD/libdccrt.a" "$PWD/include/dccrt.h" > /tmp/dccc-gpu/dccc.sh
chmod +x /tmp/dccc-gpu/dccc.sh
for t in attention nn; do
  PYTHONDONTWRITEBYTECODE=1 DCCC_CUDA_ARCH=-arch=sm_90 timeout 200 python3 tests/stdlib/${t}_diff.py /tmp/dccc-gpu/dccc.sh 2 --target=cuda 2>&1 | tail -3 | tee $R/stdlib_${t}.txt
done
mkdir -p /tmp/dccc-gpu/fa && /tmp/dccc-gpu/dccc.sh examples/flash_attention.toy --target=cuda --cuda-arch=sm_90 -o /tmp/dccc-gpu/fa/fa.so 2>&1 | tail -1
python3 ../bench/cuda/bench_flash.py --dir /tmp/dccc-gpu/fa --check-only 2>&1 | tail -2 | tee $R/flash_check.txt
