#!/bin/bash
# Session 23 device calls, from the repository root, build-var/s23 carried
# (bench_gemm.py, seqlens, include/, libdccrt.a, gws.tar.xz = session 22's
# gw0/gw3/gw4/gw5/gw6 batched_gemm_bf16.so builds, test.tar.xz = the stripped
# dccc_cuda_backend_tests + dccc + shared libraries).
# PART=g: the wgmma form of the bf16 grouped GEMM (issue 16): float64 checks of
# every variant, memcheck / racecheck of gw5, the GPU GEMM tests, the bf16 table.
R=$OUT; mkdir -p /tmp/dccc-gpu
cd build-var/s23 || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/${P}gpu.txt
tar -xJf gws.tar.xz
if [[ $PART == g ]]; then
  timeout 90 python3 bench_gemm.py --dir gw5 --check-only --variants w3=gw3,w4=gw4,w6=gw6,w0=gw0 --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?"; grep -ciE "wrong|fail|nan" $R/${P}check.txt; tail -4 $R/${P}check.txt
  tar -xJf test.tar.xz -C /tmp/dccc-gpu
  ROOT=$(cd ../.. && pwd)
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 \
    timeout 150 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.MmaGemm*' > $R/${P}gpu_gemm_tests.txt 2>&1
  echo "tests rc=$?"; grep -E "OK \]|FAILED|PASSED|Failure" $R/${P}gpu_gemm_tests.txt | head -20
  timeout 200 python3 bench_gemm.py --dir gw5 --seqlens seqlens --bf16-only --reps 20 --variants w0=gw0,w3=gw3,w4=gw4,w6=gw6 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -v "^#" $R/${P}bench_gemm.txt | head -60
  timeout 80 compute-sanitizer --tool memcheck python3 bench_gemm.py --dir gw5 --check-only --out /dev/null > $R/${P}memcheck.txt 2>&1
  echo "memcheck rc=$?"; grep -E "ERROR SUMMARY" $R/${P}memcheck.txt
  timeout 100 compute-sanitizer --tool racecheck python3 bench_gemm.py --dir gw5 --check-only --out /dev/null > $R/${P}racecheck.txt 2>&1
  echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY" $R/${P}racecheck.txt
fi
if [[ $PART == p ]]; then
# The float64 check of the default (4 stages) with sanitizers, then where the
# wgmma form's time goes: ncu on race K = 4,096 for dccc's kernel (stall
# samples per SASS instruction) and torch._grouped_mm's (its launch shape).
  timeout 60 python3 bench_gemm.py --dir gw4 --bf16-only --check-only --variants w3=gw3,w5=gw5,w6=gw6,w0=gw0 --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -3 $R/${P}check.txt
  for tool in memcheck racecheck; do
    timeout 120 compute-sanitizer --tool $tool python3 bench_gemm.py --dir gw4 --bf16-only --check-only --out /dev/null > $R/${P}$tool.txt 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$tool.txt | tail -1); $(grep -c 'check' $R/${P}$tool.txt) check lines"
  done
  timeout 150 ncu --clock-control none --kernel-name regex:grouped_gemm_bf16__k0 --launch-skip 4 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section ComputeWorkloadAnalysis --section SourceCounters --section InstructionStats --import-source no -o /tmp/prof_g \
    python3 bench_gemm.py --dir gw4 --seqlens seqlens --batches race --K 4096 --bf16-only --reps 3 --out /dev/null > /tmp/ncu_g.txt 2>&1
  echo "ncu dccc rc=$?"; tail -2 /tmp/ncu_g.txt
  ncu -i /tmp/prof_g.ncu-rep --page details > $R/${P}ncu_dccc.txt 2>&1
  ncu -i /tmp/prof_g.ncu-rep --page source --csv --print-source sass 2>/dev/null | xz -9 > $R/${P}sass_dccc.csv.xz
  grep -E "Duration|Executed Ipc A|Registers|Achieved Occ|Compute \(SM\) Thr|Memory Thr|Stall|L2 Hit|Block Limit|Dynamic Shared" $R/${P}ncu_dccc.txt | tr -s ' ' | head -40
  timeout 120 ncu --clock-control none --kernel-name regex:'^(?!grouped_gemm_bf16).*(gemm|Gemm|cutlass|sm90|grouped).*' --launch-skip 0 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    python3 bench_gemm.py --dir gw4 --seqlens seqlens --batches race --K 4096 --bf16-only --reps 3 --out /dev/null > $R/${P}ncu_torch.txt 2>&1
  echo "ncu torch rc=$?"; grep -E "^  [a-zA-Z_].*\(|Duration|Registers|Block Size|Grid Size|Shared Memory Config|Dynamic Shared|Static Shared|Achieved Occ|Executed Ipc A|Compute \(SM\) Thr|Memory Thr|L2 Hit" $R/${P}ncu_torch.txt | tr -s ' ' | head -30
fi
if [[ $PART == q ]]; then
# The copies' addresses once a block and the paired epilogue stores
# (newlibs.tar.xz: n4 = the default, 4 stages; n3 = --gemm-stages=3; n0 =
# --gemm-stages=0, mma.sync) against session 22's libraries (gw4, gw0):
# float64 checks, memcheck / racecheck of n4, then the table (bf16 and f32).
  tar -xJf newlibs.tar.xz
  timeout 60 python3 bench_gemm.py --dir n4 --bf16-only --check-only --variants n3=n3,n0=n0 --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -2 $R/${P}check.txt
  for tool in memcheck racecheck; do
    timeout 100 compute-sanitizer --tool $tool python3 bench_gemm.py --dir n4 --bf16-only --check-only --variants n0=n0 --out /dev/null > $R/${P}$tool.txt 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$tool.txt | tail -1); $(grep -c 'check: OK' $R/${P}$tool.txt) OK"
  done
  timeout 330 python3 bench_gemm.py --dir n4 --seqlens seqlens --reps 20 --variants n3=n3,n0=n0,o4=gw4,o0=gw0 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio" $R/${P}bench_gemm.txt | head -90
fi
if [[ $PART == r ]]; then
# One MMA group in flight (the default) or none (copies a step further
# ahead; temporary planner switch DCC_EXP_INFLIGHT=0): explibs.tar.xz: n3 =
# --gemm-stages=3 (default in flight), e3 / e4 = 3 / 4 stages, none in flight;
# o3 = session 22's 3 stages.
  tar -xJf explibs.tar.xz
  timeout 60 python3 bench_gemm.py --dir n3 --bf16-only --check-only --variants e3=e3,e4=e4 --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -1 $R/${P}check.txt
  timeout 300 python3 bench_gemm.py --dir n3 --seqlens seqlens --reps 20 --bf16-only --variants e3=e3,e4=e4,o3=gw3 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio|dccc bf16 " $R/${P}bench_gemm.txt | head -90
fi
if [[ $PART == s ]]; then
# The final libraries (finallibs.tar.xz: f3 = the defaults -- 3 stages, no
# MMA group in flight, copies' addresses once a block, paired stores -- with
# the f32 ones; n4 = --gemm-stages=4; n0 = --gemm-stages=0, mma.sync) and
# hlibs.tar.xz (h: the mma.sync kernels with the copies' addresses once a
# block, temporary planner switch DCC_EXP_HOIST: batched_gemm.so 3xTF32 and
# batched_gemm_bf16.so --gemm-stages=0) against session 22's gw4 / gw0:
# checks, sanitizers, the table, ncu of the default on race K = 4,096.
  tar -xJf finallibs.tar.xz; tar -xJf hlibs.tar.xz
  timeout 60 python3 bench_gemm.py --dir f3 --bf16-only --check-only --variants n4=n4,n0=n0,h0=h --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -1 $R/${P}check.txt
  for tool in memcheck racecheck; do
    timeout 100 compute-sanitizer --tool $tool python3 bench_gemm.py --dir f3 --bf16-only --check-only --variants n0=n0 --out /dev/null > $R/${P}$tool.txt 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$tool.txt | tail -1); $(grep -c 'check: OK' $R/${P}$tool.txt) OK"
  done
  timeout 330 python3 bench_gemm.py --dir f3 --seqlens seqlens --reps 20 --variants n4=n4,n0=n0,h0=h,o4=gw4,o0=gw0 --f32-variants h=h \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio" $R/${P}bench_gemm.txt | head -120
  timeout 100 ncu --clock-control none --kernel-name regex:grouped_gemm_bf16__k0 --launch-skip 4 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section ComputeWorkloadAnalysis --section SourceCounters --section InstructionStats --import-source no -o /tmp/prof_f \
    python3 bench_gemm.py --dir f3 --seqlens seqlens --batches race --K 4096 --bf16-only --reps 3 --out /dev/null > /tmp/ncu_f.txt 2>&1
  echo "ncu rc=$?"
  ncu -i /tmp/prof_f.ncu-rep --page details > $R/${P}ncu_dccc.txt 2>&1
  ncu -i /tmp/prof_f.ncu-rep --page source --csv --print-source sass 2>/dev/null | xz -9 > $R/${P}sass_dccc.csv.xz
  grep -E "Duration|Executed Ipc A|Registers Per|Achieved Occ|Compute \(SM\) Thr|Memory Thr|L2 Hit|Issued Instructions  " $R/${P}ncu_dccc.txt | tr -s ' ' | head -20
fi
if [[ $PART == t || $PART == u ]]; then
# PART t: the stage kept as a 32-bit counter and the k check in 32 bits
# (f3), PART u: the stage once a step, the k check in 64 bits (f3; c3 = t's
# f3)
# (finallibs.tar.xz: f3 = this build's defaults, p3 = PART s's f3) against
# session 22's gw4: checks, sanitizers, the table, ncu's instruction count.
  tar -xJf finallibs.tar.xz
  timeout 60 python3 bench_gemm.py --dir f3 --bf16-only --check-only --variants p3=p3 --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -1 $R/${P}check.txt
  for tool in memcheck racecheck; do
    timeout 100 compute-sanitizer --tool $tool python3 bench_gemm.py --dir f3 --bf16-only --check-only --out /dev/null > $R/${P}$tool.txt 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$tool.txt | tail -1); $(grep -c 'check: OK' $R/${P}$tool.txt) OK"
  done
  if [[ $PART == u ]]; then V="p3=p3,c3=c3,o4=gw4"; FV="p3=p3,c3=c3"; else V="p3=p3,o4=gw4,o0=gw0"; FV="p3=p3"; fi
  timeout 330 python3 bench_gemm.py --dir f3 --seqlens seqlens --reps 20 --variants $V --f32-variants $FV \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio" $R/${P}bench_gemm.txt | head -120
  timeout 100 ncu --clock-control none --kernel-name regex:grouped_gemm_bf16__k0 --launch-skip 4 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section InstructionStats \
    python3 bench_gemm.py --dir f3 --seqlens seqlens --batches race --K 4096 --bf16-only --reps 3 --out /dev/null > $R/${P}ncu_dccc.txt 2>&1
  echo "ncu rc=$?"; grep -E "Duration|Executed Ipc A|Registers Per|Achieved Occ|Compute \(SM\) Thr|Memory Thr|Issued Instructions  |Executed Instructions  " $R/${P}ncu_dccc.txt | tr -s ' ' | head -20
fi
if [[ $PART == v ]]; then
# The session's final compiler: every CUDA backend test (test.tar.xz: every
# example against the CPU backend and float64, the scheduled programs, the
# 16-bit math, the ragged GEMMs to 4,096 on both forms), the final
# libraries' checks and sanitizers, and the GEMM table with each round
# starting one implementation later (f3 = the defaults; o4 / o0 = session
# 22's wgmma 4 stages / mma.sync).
  tar -xJf finallibs.tar.xz
  tar -xJf test.tar.xz -C /tmp/dccc-gpu
  ROOT=$(cd ../.. && pwd)
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_CUDA_SCHEDULES_DIRS="$ROOT/tests/cuda/schedules" DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 \
    timeout 420 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.*' > $R/${P}gpu_test_all.txt 2>&1
  echo "tests rc=$?"; grep -E "OK \]|FAILED|PASSED|Failure" $R/${P}gpu_test_all.txt | head -20
  timeout 40 python3 bench_gemm.py --dir f3 --bf16-only --check-only --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -1 $R/${P}check.txt
  for tool in memcheck racecheck; do
    timeout 60 compute-sanitizer --tool $tool python3 bench_gemm.py --dir f3 --bf16-only --check-only --out /dev/null > $R/${P}$tool.txt 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$tool.txt | tail -1); $(grep -c 'check: OK' $R/${P}$tool.txt) OK"
  done
  timeout 120 python3 bench_gemm.py --dir f3 --seqlens seqlens --reps 20 --variants o4=gw4,o0=gw0 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio" $R/${P}bench_gemm.txt | head -80
fi
if [[ $PART == w ]]; then
# Full K-steps' copies without the k check (k3: temporary printer switch
# DCC_EXP_KFULL, a second copy loop for steps with 64 k left) against the
# final f3, bf16 only, 30 rounds in rotated order.
  tar -xJf finallibs.tar.xz
  timeout 60 python3 bench_gemm.py --dir k3 --bf16-only --check-only --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -1 $R/${P}check.txt
  timeout 200 python3 bench_gemm.py --dir f3 --seqlens seqlens --reps 30 --bf16-only --variants k3=k3 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio|dccc bf16 |variant k3 |_grouped_mm bf16 " $R/${P}bench_gemm.txt | head -60
fi
if [[ $PART == x ]]; then
# The final compiler (9c8617a): the GPU GEMM tests (test.tar.xz) and the
# default library's float64 checks, memcheck and racecheck.
  tar -xJf finallibs.tar.xz
  tar -xJf test.tar.xz -C /tmp/dccc-gpu
  ROOT=$(cd ../.. && pwd)
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 \
    timeout 150 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.MmaGemm*' > $R/${P}gpu_gemm_tests.txt 2>&1
  echo "tests rc=$?"; grep -E "OK \]|FAILED|PASSED|Failure" $R/${P}gpu_gemm_tests.txt | head
  timeout 40 python3 bench_gemm.py --dir f3 --bf16-only --check-only --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -1 $R/${P}check.txt
  for tool in memcheck racecheck; do
    timeout 60 compute-sanitizer --tool $tool python3 bench_gemm.py --dir f3 --bf16-only --check-only --out /dev/null > $R/${P}$tool.txt 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$tool.txt | tail -1); $(grep -c 'check: OK' $R/${P}$tool.txt) OK"
  done
fi
