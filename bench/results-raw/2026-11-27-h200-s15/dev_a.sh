#!/bin/bash
# Device call A: the GPU tests (CudaBackend.*, with the new exp16/div16 test), the fused checks
# (bf16 and f32), memcheck and racecheck on the bf16 and f32 fused kernels, the CUDA hosts and the
# online/materialised pairs.
cd "$(dirname "$0")"
R=$OUT/a; mkdir -p $R /tmp/dccc-gpu
tar -xJf test.tar.xz -C /tmp/dccc-gpu
[[ -d online ]] || { [[ -f online.tar.xz ]] && tar -xJf online.tar.xz; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
  DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
  timeout 400 /tmp/dccc-gpu/dccc_cuda_backend_tests 2>&1 | tail -40 > $R/gpu_test.txt
grep -E "OK \]|FAILED|PASSED|error|Error" $R/gpu_test.txt | head -20
python3 bench_fused.py --dir . --lengths 4096,0,1,17,300 --check-only 2>&1 | tail -4 | tee $R/fused_check_bf16.txt
python3 bench_fused.py --dir . --dtype f32 --lengths 4096,0,1,17,300 --check-only 2>&1 | tail -4 | tee $R/fused_check_f32.txt
for so in mha mha_fused; do
  [[ -f $so.so ]] || continue
  nvcc -std=c++17 -o /tmp/dccc-gpu/${so}_cuda_host mha_cuda_host.cu -I. ./$so.so -Xlinker -rpath -Xlinker "$PWD" &&
    /tmp/dccc-gpu/${so}_cuda_host $([[ $so == mha ]] && echo --fused) 2>&1 | tail -2 | tee $R/cuda_host_$so.txt
done
if [[ -d online ]]; then
  for ex in mha mha_bf16 mha_causal mha_scale_after_max; do
    timeout 60 python3 attention_diff.py --prebuilt online "$ex" --target=cuda 2>&1 | tail -1 | tee $R/online_$ex.txt
  done
fi
for dt in bf16 f32; do
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 86 python3 bench_fused.py --dir . --dtype $dt --lengths 300,0,1,17 --D 64,128 --check-only > $R/memcheck_$dt.txt 2>&1; echo "memcheck $dt rc=$?"; grep "ERROR SUMMARY" $R/memcheck_$dt.txt | tail -1
  timeout 120 compute-sanitizer --tool racecheck --error-exitcode 86 python3 bench_fused.py --dir . --dtype $dt --lengths 70,0,1,17 --D 64,128 --mask full --check-only > $R/racecheck_$dt.txt 2>&1; echo "racecheck $dt rc=$?"; grep "RACECHECK SUMMARY" $R/racecheck_$dt.txt | tail -1
done
