#!/bin/bash
# Session 22 on the device: the wgmma form of the 16-bit grouped GEMM (issue 16).
# Libraries built here by build-var/s22/build.sh DIR FLAGS (batched_gemm_bf16.so):
# gw5 --gemm-stages=5 (sm_90a: wgmma, 5 stages), gw3 / gw4 / gw6 --gemm-stages=3 (two blocks an SM) / 4 / 6,
# gw0 the default
# (no wgmma form: the mma.sync kernel of sessions 10-21). Not run in session 22 (no device
# time left); kept for the next session.
R=$OUT
cd build-var/s22 || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/${P}device.txt
case "${PART:-a}" in
a)
  timeout 120 python3 bench_gemm.py --dir gw5 --check-only --variants w3=gw3,w4=gw4,w6=gw6,w0=gw0 --out /dev/null 2>&1 | tee $R/${P}check.txt
  timeout 200 compute-sanitizer --tool memcheck python3 bench_gemm.py --dir gw5 --check-only --out /dev/null > $R/${P}memcheck.txt 2>&1
  echo "memcheck rc=$?"; tail -3 $R/${P}memcheck.txt
  timeout 250 compute-sanitizer --tool racecheck python3 bench_gemm.py --dir gw5 --check-only --out /dev/null > $R/${P}racecheck.txt 2>&1
  echo "racecheck rc=$?"; tail -3 $R/${P}racecheck.txt
  timeout 300 python3 bench_gemm.py --dir gw5 --seqlens seqlens --bf16-only --reps 20 --variants w0=gw0,w3=gw3,w4=gw4,w6=gw6 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -v "^#" $R/${P}bench_gemm.txt | head -80
  ;;
f)
  # The GPU tests of the grouped GEMMs, the wgmma form's cases included
  # (CudaBackend.MmaGemmRaggedLengthsTo4096: --gemm-stages 5 bf16, 3 f16),
  # from test.tar.xz as session 21's PART f made it (the stripped
  # dccc_cuda_backend_tests, dccc and their shared libraries; include/ and
  # libdccrt.a beside it).
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  ROOT=$(cd ../.. && pwd)
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 \
    timeout 400 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.MmaGemm*' > $R/${P}gpu_gemm_tests.txt 2>&1
  echo "rc=$?"; grep -E "OK \]|FAILED|PASSED|max \|err|Failure" $R/${P}gpu_gemm_tests.txt | head -20
  ;;
esac
