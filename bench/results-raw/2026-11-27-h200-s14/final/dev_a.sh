#!/bin/bash
# Device call A: the GPU differential tests (CudaBackend.*) on the merged main.
cd "$(dirname "$0")"
R=$OUT/a; mkdir -p $R /tmp/dccc-gpu
tar -xJf test.tar.xz -C /tmp/dccc-gpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
  DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
  timeout 540 /tmp/dccc-gpu/dccc_cuda_backend_tests 2>&1 | tail -40 > $R/gpu_test.txt
grep -E "OK \]|FAILED|PASSED|error|Error" $R/gpu_test.txt | head -20
