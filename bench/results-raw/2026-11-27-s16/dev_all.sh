#!/bin/bash
# Device call (session 16): the GPU tests of the bundle (CudaBackend.*: every
# example, flash_attention.toy now fused, against the CPU backend), the fused
# bf16/f32 checks of the head-dim instances, flash_attention.toy's benchmark
# (bench_flash.py: fused, stored, PyTorch's efficient kernel, and the split
# instance at 4 warps x 128 columns as a variant; one 32,768-token sequence),
# and flash_attention.toy at H x D = 576 (streaming) and 90 on the device.
# Run from the repository root, in two calls (the carry limit): PART=gpu with
# build-gpu/ carried, PART=flash with build-flash/.
R=$OUT; mkdir -p /tmp/dccc-gpu
if [[ $PART == gpu ]]; then
cd build-gpu || exit 1
tar -xJf test.tar.xz -C /tmp/dccc-gpu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
  DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
  timeout 400 /tmp/dccc-gpu/dccc_cuda_backend_tests 2>&1 | tail -40 > $R/gpu_test.txt
grep -E "OK \]|FAILED|PASSED|error|Error" $R/gpu_test.txt | head -20
python3 bench_fused.py --dir . --lengths 4096,0,1,17,300 --check-only 2>&1 | tail -4 | tee $R/fused_check_bf16.txt
python3 bench_fused.py --dir . --dtype f32 --lengths 4096,0,1,17,300 --check-only 2>&1 | tail -4 | tee $R/fused_check_f32.txt
fi
if [[ $PART == flash ]]; then
cd build-flash || exit 1
B=../bench/cuda
timeout 400 python3 $B/bench_flash.py --dir . --seqlens seqlens --variants 4x128=v4w --long 32768 --reps 20 \
  --out $R/bench_flash.txt > $R/bench_flash_log.txt 2>&1; echo "bench_flash rc=$?"; cat $R/bench_flash_log.txt
for hd in "9 64" "3 30"; do
  set -- $hd
  python3 $B/bench_flash.py --dir . --check-only --dccc-only --H $1 --D $2 2>&1 | tail -1 | tee $R/flash_check_$1x$2.txt
done
fi
