#!/bin/bash
# Grouped GEMM (issue 16) on the current main, sm_90 libraries in build-var/gemm
# (batched_gemm_bf16.so, batched_gemm.so = 3xTF32, _tf32, _ieee), as
# run_gpu.sh --gemm-only runs bench_gemm.py.
R=$OUT
cd build-var/gemm || exit 1
timeout 500 python3 bench_gemm.py --dir . --seqlens ../seqlens --out $R/bench_gemm.txt > $R/bench_gemm_log.txt 2>&1
echo "rc=$?"; cat $R/bench_gemm_log.txt | tail -30
