#!/bin/bash
# Session 25 device calls, from the repository root, build-var/s25 carried
# (bench_gemm.py, seqlens/, libraries built here by dccc: n3 = the defaults,
# f32 on the new tf32 wgmma form (3xTF32), with batched_gemm_tf32.so and
# batched_gemm_ieee.so; g0 = --gemm-stages=0, f32 on the mma.sync form (the
# f32 form of session 24); s2 = --gemm-stages=2; t3 = --fp32-math=tf32).
R=$OUT
cd build-var/s25 || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/${P}gpu.txt
if [[ $PART == a ]]; then
# PART a: float64 checks of every library (bf16 and f32, odd ragged sizes),
# memcheck and racecheck of the f32 forms, then the table.
  timeout 90 python3 bench_gemm.py --dir n3 --check-only --f32-variants g0=g0,s2=s2,t3=t3 --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; cat $R/${P}check.txt | cut -c1-200
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $tool python3 bench_gemm.py --dir n3 --check-only --f32-variants s2=s2 --out /dev/null > $R/${P}$tool.txt 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$tool.txt | tail -1); $(grep -c 'check: OK' $R/${P}$tool.txt) OK"
  done
  timeout 280 python3 bench_gemm.py --dir n3 --seqlens seqlens --reps 20 --f32-variants g0=g0,s2=s2 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio|dccc |f32variant|SGEMM|loop" $R/${P}bench_gemm.txt | head -120
fi
build() {  # build NAME FLAGS...: ws/$SRC (default ws.cu: a generated batched_gemm kernels.cu with -D hooks) for sm_90a
  local n=$1; shift; mkdir -p $n
  nvcc "$@" -O3 -std=c++17 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a -Iws -o $n/batched_gemm.so ws/${SRC:-ws.cu} ws/abi.o ws/libdccrt.a -lpthread > $n.log 2>&1
  echo "$n rc=$? $(grep -c error $n.log)"
}
if [[ $PART == b ]]; then
# PART b: the producer pipelined by one step (registers), hand-edited
# variants of its generated code: w0 as generated (ptxas spills 412 bytes),
# w1 with setmaxnreg (producers 176, consumers 160: 156 bytes), and two
# bounds -- wn: the producers load nothing (the consumers' and stores'
# time), wm: the consumers issue no wgmma (the producers' time) -- against
# n3 (not pipelined) and g0 (mma.sync).
  build w0 &
  build w1 -DWS_PREG=176 -DWS_CREG=160 &
  build wn -DWS_NOLOAD &
  build wm -DWS_NOMMA &
  wait
  timeout 90 python3 bench_gemm.py --dir n3 --check-only --f32-variants w0=w0,w1=w1 --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?"; grep -E "FAIL|OK|worst" $R/${P}check.txt | cut -c1-60
  timeout 300 python3 bench_gemm.py --dir n3 --seqlens seqlens --reps 15 --K 4096 --f32-variants w0=w0,w1=w1,wn=wn,wm=wm,g0=g0 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|f32|FAIL" $R/${P}bench_gemm.txt | head -60
fi
if [[ $PART == c ]]; then
# PART c: two producer warpgroups (512 threads, setmaxnreg: producers 88
# registers, consumers 168; x2 = the compiler's, with batched_gemm_tf32.so),
# x3 = the same pipelined by a step (104 / 152; ptxas spills 48 bytes), and
# with a suspend-time hint on the mbarrier waits (x2h, x3h; WS_HINT),
# against n3 (one producer warpgroup) and the SGEMM loop.
  SRC=ws.cu build x3 &
  SRC=ws.cu build x3h -DWS_HINT &
  SRC=wsn.cu build x2h -DWS_HINT &
  wait
  timeout 90 python3 bench_gemm.py --dir x2 --check-only --f32-variants x3=x3,x3h=x3h,x2h=x2h --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?"; grep -E "FAIL|OK|worst" $R/${P}check.txt | cut -c1-60
  timeout 100 compute-sanitizer --tool racecheck python3 bench_gemm.py --dir x2 --check-only --out /dev/null > $R/${P}racecheck.txt 2>&1
  echo "racecheck rc=$?: $(grep -E 'RACECHECK SUMMARY' $R/${P}racecheck.txt | tail -1)"
  timeout 300 python3 bench_gemm.py --dir x2 --seqlens seqlens --reps 15 --f32-variants n3=n3,x3=x3,x3h=x3h,x2h=x2h \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|f32|FAIL" $R/${P}bench_gemm.txt | head -90
fi
if [[ $PART == d ]]; then
# PART d: why --fp32-math=tf32 (a third of the MMAs) runs 2x slower than
# 3xTF32 on the same form: th = the tf32 form with a suspend-time hint on
# the mbarrier waits; ncu of both forms (tt/ = x2's tf32 library as
# batched_gemm.so) on race, K = 4,096.
  SRC=wst.cu build th -DWS_HINT
  timeout 200 python3 bench_gemm.py --dir x2 --seqlens seqlens --batches race --reps 10 --K 4096 --f32-variants th=th,tt=tt \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|f32|FAIL" $R/${P}bench_gemm.txt | head -30
  for d in x2 tt; do
    timeout 120 ncu --clock-control none --kernel-name regex:grouped_gemm__k0 --launch-skip 4 --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
      --section ComputeWorkloadAnalysis --section InstructionStats --import-source no -o /tmp/prof_$d \
      python3 bench_gemm.py --dir $d --seqlens seqlens --batches race --K 4096 --reps 3 --out /dev/null > /tmp/ncu_$d.txt 2>&1
    echo "ncu $d rc=$?"
    ncu -i /tmp/prof_$d.ncu-rep --page details > $R/${P}ncu_$d.txt 2>&1
    grep -E "Duration|Registers Per|Achieved Occ|Compute \(SM\) Thr|Issued Instructions  |Stall|Executed Ipc A|Block Size|Grid Size" $R/${P}ncu_$d.txt | tr -s ' ' | head -30
  done
fi
if [[ $PART == e ]]; then
# PART e: the final compiler (f5 = the defaults: f32 on the tf32 wgmma form,
# two producer warpgroups, setmaxnreg; with tf32 and ieee libraries; s2 =
# --gemm-stages=2; g0 = --gemm-stages=0, f32 on mma.sync as in session 24):
# float64 checks of every library, memcheck and racecheck, the table.
  timeout 90 python3 bench_gemm.py --dir f5 --check-only --f32-variants s2=s2,g0=g0 --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?"; grep -E "FAIL|OK|worst" $R/${P}check.txt | cut -c1-40,300-
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $tool python3 bench_gemm.py --dir f5 --check-only --f32-variants s2=s2 --out /dev/null > $R/${P}$tool.txt 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$tool.txt | tail -1); $(grep -c 'check: OK' $R/${P}$tool.txt) OK"
  done
  timeout 330 python3 bench_gemm.py --dir f5 --seqlens seqlens --reps 30 --f32-variants s2=s2,g0=g0 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio|dccc|f32variant|loop" $R/${P}bench_gemm.txt | head -150
fi
if [[ $PART == f ]]; then
# PART f: the GPU tests (test.tar.xz: the test binary and dccc of the final compiler).
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  ROOT=$(cd ../.. && pwd)
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 \
    timeout ${TLIM:-540} /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter="${FILTER:-CudaBackend.*}" > $R/${P}gpu_tests.txt 2>&1
  echo "tests rc=$?"; grep -E "OK \]|FAILED|PASSED|Failure|max \|err" $R/${P}gpu_tests.txt | head -30
fi
if [[ $PART == h ]]; then
# PART h: --fp32-math=tf32 on the wgmma form runs 2x slower than 3xTF32
# (a third of the MMAs): do the consumers' mbarrier polls slow the
# producers? ws/ws_{tf32,3xtf32}.cu = the compiler's kernels, WS_SLEEP = a
# __nanosleep(N) between polls of the mbarrier waits.
  SRC=ws_tf32.cu build t0 &
  SRC=ws_tf32.cu build ts -DWS_SLEEP=100 &
  SRC=ws_tf32.cu build ts5 -DWS_SLEEP=500 &
  SRC=ws_3xtf32.cu build xs -DWS_SLEEP=100 &
  wait
  timeout 200 python3 bench_gemm.py --dir f5 --seqlens seqlens --reps 10 --K 4096 --f32-variants t0=t0,ts=ts,ts5=ts5,xs=xs \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|f32|FAIL" $R/${P}bench_gemm.txt | head -60
fi
if [[ $PART == i ]]; then
# PART i: tp = the 3xTF32 kernel issuing only a_big b_big (one wgmma a k8,
# still into per-step partial sums: TF32's MMAs on 3xTF32's schedule);
# ncu's source counters (stall reasons by SASS line) of the tf32 library.
  SRC=ws_3xtf32.cu build tp -DWS_ONE
  timeout 200 python3 bench_gemm.py --dir f5 --seqlens seqlens --batches race --reps 10 --K 4096 --f32-variants tp=tp \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|f32|FAIL" $R/${P}bench_gemm.txt | head -30
  mkdir -p tt && cp f5/batched_gemm_tf32.so tt/batched_gemm.so && cp f5/batched_gemm_bf16.so tt/
  timeout 150 ncu --clock-control none --kernel-name regex:grouped_gemm__k0 --launch-skip 4 --launch-count 1 \
      --section WarpStateStats --section SourceCounters --section SpeedOfLight --import-source no -o /tmp/prof_t \
      python3 bench_gemm.py --dir tt --seqlens seqlens --batches race --K 4096 --reps 3 --out /dev/null > /tmp/ncu_t.txt 2>&1
  echo "ncu rc=$?"
  ncu -i /tmp/prof_t.ncu-rep --page details > $R/${P}ncu_tf32.txt 2>&1
  ncu -i /tmp/prof_t.ncu-rep --page source --csv --print-source sass > $R/${P}ncu_tf32_sass.csv 2>&1
  grep -E "Duration|Stall|Warp Cycles" $R/${P}ncu_tf32.txt | head; wc -l $R/${P}ncu_tf32_sass.csv
fi
if [[ $PART == j ]]; then
# PART j: the tf32 form's stores as explicit st.shared.v4 (NVVM had split
# the transposed chunks' float4 stores of the TF32 form into 4-byte ones):
# f5 = the new libraries, p5 / p5t = e1_'s 3xTF32 / TF32 libraries.
  timeout 90 python3 bench_gemm.py --dir f5 --check-only --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?"; grep -E "FAIL|OK" $R/${P}check.txt | cut -c1-40
  timeout 300 python3 bench_gemm.py --dir f5 --seqlens seqlens --reps 15 --f32-variants p5=p5,p5t=p5t \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|f32|FAIL" $R/${P}bench_gemm.txt | grep -v "ieee" | head -80
fi
if [[ $PART == k ]]; then
# PART k: what makes the TF32 form slow: ta = setmaxnreg 88 / 168 (3xTF32's;
# ptxas spills 104 bytes), tb = 120 / 136, t4 = --gemm-stages=4 (4 stages,
# 128 KB of shared memory) against f5's (104 / 152, 3 stages).
  SRC=wst.cu build ta -DWS_P=88 -DWS_C=168 &
  SRC=wst.cu build tb -DWS_P=120 -DWS_C=136 &
  wait
  timeout 200 python3 bench_gemm.py --dir f5 --seqlens seqlens --batches race --reps 10 --K 4096 --f32-variants ta=ta,tb=tb,t4=t4 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|f32|FAIL" $R/${P}bench_gemm.txt | grep -v "ieee" | head -30
fi
if [[ $PART == l ]]; then
# PART l: the producers' 16-byte loads as one predicated ld.global.v4 each
# (dcc_ldg4_or_zero) instead of `ok ? load : zero`: f5 = new, o5 / o5t =
# j1_'s 3xTF32 / TF32 libraries. Checks, memcheck, racecheck, the table.
  timeout 90 python3 bench_gemm.py --dir f5 --check-only --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?"; grep -E "FAIL|OK" $R/${P}check.txt | cut -c1-40
  for tool in memcheck racecheck; do
    timeout 100 compute-sanitizer --tool $tool python3 bench_gemm.py --dir f5 --check-only --out /dev/null > $R/${P}$tool.txt 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$tool.txt | tail -1); $(grep -c 'check: OK' $R/${P}$tool.txt) OK"
  done
  timeout 280 python3 bench_gemm.py --dir f5 --seqlens seqlens --reps 20 --f32-variants o5=o5,o5t=o5t \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|f32|FAIL|bf16" $R/${P}bench_gemm.txt | grep -v "ieee" | head -80
fi
if [[ $PART == m ]]; then
# PART m: compute-sanitizer memcheck and racecheck over the GPU GEMM test
# (every MMA path with ragged lengths to 4,096, the f32 wgmma forms
# included), as run_gpu.sh's memcheck:mma.
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  ROOT=$(cd ../.. && pwd)
  for tool in memcheck racecheck; do
    LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
      DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 \
      timeout 130 compute-sanitizer --tool $tool --error-exitcode 86 --print-limit 20 \
      /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.MmaGemm*' > $R/${P}$tool.txt 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$tool.txt | tail -1); $(grep -E 'PASSED|FAILED' $R/${P}$tool.txt | tail -1)"
  done
fi
if [[ $PART == n ]]; then
# PART n: compute-sanitizer memcheck and racecheck over the examples whose f32
# contractions now take the tf32 wgmma form (DCCC_EXAMPLES_ONLY). Not run in
# session 25 (no device time left): for the next session.
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  ROOT=$(cd ../.. && pwd)
  for tool in memcheck racecheck; do
    LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
      DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 DCCC_EXAMPLES_ONLY=ragged_pool,batched_gemm \
      timeout 60 compute-sanitizer --tool $tool --error-exitcode 86 --print-limit 20 \
      /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.ExamplesMatch*' > $R/${P}$tool.txt 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$tool.txt | tail -1); $(grep -E 'PASSED|FAILED' $R/${P}$tool.txt | tail -1)"
  done
fi
