#!/bin/bash
# Session 24 device calls, from the repository root, build-var/s24 carried
# (bench_gemm.py, seqlens, include/, libdccrt.a, finallibs.tar.xz = session
# 23's final libraries (f3: the defaults), ws.cu + abi.o = the generated
# batched_gemm_bf16 CUDA and C wrapper with a hand-written warp-specialized
# sm_90a form of grouped_gemm_bf16 (an experiment before the planner makes it)).
# PART=a: variants of the warp-specialized kernel, built here with nvcc
# (sm_90a only), float64 checks, then the bf16 table against f3.
R=$OUT
cd build-var/s24 || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/${P}gpu.txt
tar -xJf finallibs.tar.xz
build() {  # build NAME SOURCE FLAGS...
  local n=$1 src=$2; shift 2; mkdir -p $n
  nvcc "$@" -O3 -std=c++17 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a -I. -o $n/batched_gemm_bf16.so $src abi.o libdccrt.a -lpthread > $n.log 2>&1
  echo "$n rc=$? $(grep -c error $n.log)"
}
if [[ $PART == a ]]; then
  build wa ws.cu -DWS_NOREG -DWS_PRODUCERS=64 &
  build wb ws.cu -DWS_NOREG -DWS_PRODUCERS=64 -DWS_INFLIGHT=0 &
  build wc ws.cu -DWS_NOREG -DWS_PRODUCERS=64 -DWS_TN=256 -DWS_S=4 -DWS_MINB=1 &
  build wd ws.cu -DWS_NOREG -DWS_PRODUCERS=128 -DWS_TN=256 -DWS_S=4 -DWS_MINB=1 &
  wait
  V=wa=wa,wb=wb,wc=wc,wd=wd
  timeout 90 python3 bench_gemm.py --dir f3 --bf16-only --check-only --variants $V --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -3 $R/${P}check.txt
  timeout 300 python3 bench_gemm.py --dir f3 --seqlens seqlens --reps 20 --bf16-only --variants $V \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio|dccc bf16 " $R/${P}bench_gemm.txt | head -90
fi
if [[ $PART == b ]]; then
# PART b: the best of a (wd: 128 x 256 tiles, 4 stages, a producer warpgroup,
# one MMA group in flight) against: we = none in flight; wf = 128 x 128 tiles
# in 6 stages with a producer warpgroup (one block an SM); wp = wd persistent
# (one block an SM looping over the tile list: the producer loads the next
# tile while the consumers store this one); wq = wp with none in flight.
  build wd ws.cu -DWS_NOREG -DWS_PRODUCERS=128 -DWS_TN=256 -DWS_S=4 -DWS_MINB=1 &
  build we ws.cu -DWS_NOREG -DWS_PRODUCERS=128 -DWS_TN=256 -DWS_S=4 -DWS_MINB=1 -DWS_INFLIGHT=0 &
  build wf ws.cu -DWS_NOREG -DWS_PRODUCERS=128 -DWS_TN=128 -DWS_S=6 -DWS_MINB=1 &
  build wp wsp.cu -DWS_NOREG -DWS_PRODUCERS=128 -DWS_TN=256 -DWS_S=4 -DWS_MINB=1 &
  build wq wsp.cu -DWS_NOREG -DWS_PRODUCERS=128 -DWS_TN=256 -DWS_S=4 -DWS_MINB=1 -DWS_INFLIGHT=0 &
  wait
  V=wd=wd,we=we,wf=wf,wp=wp,wq=wq
  timeout 90 python3 bench_gemm.py --dir f3 --bf16-only --check-only --variants $V --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -3 $R/${P}check.txt
  timeout 100 compute-sanitizer --tool racecheck python3 bench_gemm.py --dir wp --bf16-only --check-only --out /dev/null > $R/${P}racecheck.txt 2>&1
  echo "racecheck wp rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $R/${P}racecheck.txt | tail -1)"
  timeout 100 compute-sanitizer --tool memcheck python3 bench_gemm.py --dir wp --bf16-only --check-only --out /dev/null > $R/${P}memcheck.txt 2>&1
  echo "memcheck wp rc=$?: $(grep -E 'ERROR SUMMARY' $R/${P}memcheck.txt | tail -1)"
  timeout 300 python3 bench_gemm.py --dir f3 --seqlens seqlens --reps 20 --bf16-only --variants $V \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio|dccc bf16 " $R/${P}bench_gemm.txt | head -90
fi
if [[ $PART == c ]]; then
# PART c: the compiler's warp-specialized form (newlibs.tar.xz: n4 = the
# defaults, 4 stages; n2 = --gemm-stages=2) against session 23's f3 and the
# hand-written wq (PART b): float64 checks, memcheck / racecheck, the GPU
# GEMM tests, the table (bf16 and f32).
  tar -xJf newlibs.tar.xz
  build wq wsp.cu -DWS_NOREG -DWS_PRODUCERS=128 -DWS_TN=256 -DWS_S=4 -DWS_MINB=1 -DWS_INFLIGHT=0
  timeout 90 python3 bench_gemm.py --dir n4 --bf16-only --check-only --variants n2=n2,f3=f3,wq=wq --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -2 $R/${P}check.txt
  for tool in memcheck racecheck; do
    timeout 120 compute-sanitizer --tool $tool python3 bench_gemm.py --dir n4 --bf16-only --check-only --variants n2=n2 --out /dev/null > $R/${P}$tool.txt 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$tool.txt | tail -1); $(grep -c 'check: OK' $R/${P}$tool.txt) OK"
  done
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  ROOT=$(cd ../.. && pwd)
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 \
    timeout 200 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.MmaGemm*' > $R/${P}gpu_gemm_tests.txt 2>&1
  echo "tests rc=$?"; grep -E "OK \]|FAILED|PASSED|Failure|max \|err" $R/${P}gpu_gemm_tests.txt | head -20
  timeout 300 python3 bench_gemm.py --dir n4 --seqlens seqlens --reps 20 --variants n2=n2,f3=f3,wq=wq --f32-variants f3=f3 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio|dccc bf16 " $R/${P}bench_gemm.txt | head -120
fi
if [[ $PART == d ]]; then
# PART d: why the compiler's form (n4, built here by dccc) ran 0.81-0.92x the
# hand-written wq: nd = dccc's generated kernels.cu (n4k.cu) compiled on the
# device like wq; nn = the same without the occupancy query; wl = wq's source
# compiled by the local nvcc.
  tar -xJf newlibs.tar.xz; tar -xJf wl.tar.xz
  build wq wsp.cu -DWS_NOREG -DWS_PRODUCERS=128 -DWS_TN=256 -DWS_S=4 -DWS_MINB=1 -DWS_INFLIGHT=0 &
  mkdir -p nd nn
  nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a -I. -o nd/batched_gemm_bf16.so n4k.cu n4abi.o libdccrt.a -lpthread > nd.log 2>&1 &
  nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a -I. -o nn/batched_gemm_bf16.so n4k_noocc.cu n4abi.o libdccrt.a -lpthread > nn.log 2>&1 &
  wait; ls nd nn wq wl; nvcc --version | tail -1
  V=nd=nd,nn=nn,wq=wq,wl=wl
  timeout 90 python3 bench_gemm.py --dir n4 --bf16-only --check-only --variants $V --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -1 $R/${P}check.txt
  timeout 300 python3 bench_gemm.py --dir n4 --seqlens seqlens --reps 20 --bf16-only --variants $V \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio" $R/${P}bench_gemm.txt | head -120
fi
if [[ $PART == e ]]; then
# PART e: the final compiler's libraries (finallibs24.tar.xz: g4 = the
# defaults with the f32 ones; g2 = --gemm-stages=2; g0 = --gemm-stages=0,
# mma.sync) against session 23's f3, and g4 again as a variant (the same
# library, its own output buffer): checks, sanitizers, the table.
  tar -xJf finallibs24.tar.xz
  V=g4same=g4,g4a=g4a,g2=g2,g0=g0,f3=f3
  timeout 90 python3 bench_gemm.py --dir g4 --bf16-only --check-only --variants g2=g2,g0=g0 --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -1 $R/${P}check.txt
  for tool in memcheck racecheck; do
    timeout 120 compute-sanitizer --tool $tool python3 bench_gemm.py --dir g4 --bf16-only --check-only --variants g2=g2 --out /dev/null > $R/${P}$tool.txt 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$tool.txt | tail -1); $(grep -c 'check: OK' $R/${P}$tool.txt) OK"
  done
  timeout 330 python3 bench_gemm.py --dir g4 --seqlens seqlens --reps 20 --variants $V --f32-variants f3=f3 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio|dccc bf16 " $R/${P}bench_gemm.txt | head -120
  timeout 100 ncu --clock-control none --kernel-name regex:grouped_gemm_bf16__k0 --launch-skip 4 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section ComputeWorkloadAnalysis --section InstructionStats --import-source no -o /tmp/prof_e \
    python3 bench_gemm.py --dir g4 --seqlens seqlens --batches race --K 4096 --bf16-only --reps 3 --out /dev/null > /tmp/ncu_e.txt 2>&1
  echo "ncu rc=$?"
  ncu -i /tmp/prof_e.ncu-rep --page details > $R/${P}ncu_dccc.txt 2>&1
  grep -E "Duration|Registers Per|Achieved Occ|Compute \(SM\) Thr|Memory Thr|DRAM Thr|L2 Hit|Issued Instructions  |Stall|Executed Ipc A" $R/${P}ncu_dccc.txt | tr -s ' ' | head -24
fi
if [[ $PART == f ]]; then
# PART f: every GPU test of the final compiler (test.tar.xz).
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  ROOT=$(cd ../.. && pwd)
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 \
    timeout 540 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.*' > $R/${P}gpu_test_all.txt 2>&1
  echo "tests rc=$?"; grep -E "OK \]|FAILED|PASSED|Failure|SKIPPED" $R/${P}gpu_test_all.txt | head -30
fi
if [[ $PART == g ]]; then
# PART g: the table again with bench_gemm.py's output buffers taken in turn
# (PART e: the same library timed 1.07-1.20x faster as a variant, into a
# buffer of its own, than as the main library), then every GPU test.
  tar -xJf finallibs24.tar.xz
  timeout 200 python3 bench_gemm.py --dir g4 --seqlens seqlens --reps 20 --variants g4same=g4,f3=f3,g0=g0 --f32-variants f3=f3 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio|dccc bf16 " $R/${P}bench_gemm.txt | head -120
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  ROOT=$(cd ../.. && pwd)
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 \
    timeout 380 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.*' > $R/${P}gpu_test_all.txt 2>&1
  echo "tests rc=$?"; grep -E "OK \]|FAILED|PASSED|Failure|SKIPPED" $R/${P}gpu_test_all.txt | head -30
fi
if [[ $PART == h ]]; then
# PART h: the table with the implementations in a random order each round
# (g1_: with the order rotated, the same library measured 1.09-1.18x faster
# right after itself), 30 rounds; then the GPU GEMM test.
  tar -xJf finallibs24.tar.xz
  timeout 300 python3 bench_gemm.py --dir g4 --seqlens seqlens --reps 30 --variants g4same=g4,f3=f3,g0=g0 --f32-variants f3=f3 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio|dccc bf16 " $R/${P}bench_gemm.txt | head -120
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  ROOT=$(cd ../.. && pwd)
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 \
    timeout 150 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.*:-CudaBackend.ExamplesMatchCpuBackendAndFloat64Reference:CudaBackend.ScheduledMatchCpuBackend:CudaBackend.Exp16AndDiv16WithinOneUnitOnEveryInput:CudaBackend.FastExpWithinItsBound' > $R/${P}gpu_test_rest.txt 2>&1
  echo "tests rc=$?"; grep -E "OK \]|FAILED|PASSED|Failure|SKIPPED|max \|err" $R/${P}gpu_test_rest.txt | head -30
fi
if [[ $PART == i ]]; then
# PART i: where the 3xTF32 kernel's time goes (ncu, race K = 4,096; g4's
# batched_gemm.so, unchanged since session 23).
  tar -xJf finallibs24.tar.xz
  mkdir -p t3 && cp g4/batched_gemm.so g4/batched_gemm_bf16.so t3/  # 3xTF32 the only f32 library
  timeout 150 ncu --clock-control none --kernel-name regex:grouped_gemm__k0 --launch-skip 4 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
    --section ComputeWorkloadAnalysis --section InstructionStats -o /tmp/prof_i \
    python3 bench_gemm.py --dir t3 --seqlens seqlens --batches race --K 4096 --reps 3 --out /dev/null > /tmp/ncu_i.txt 2>&1
  echo "ncu rc=$?"; tail -2 /tmp/ncu_i.txt
  ncu -i /tmp/prof_i.ncu-rep --page details > $R/${P}ncu_3xtf32.txt 2>&1
  grep -E "Duration|Registers Per|Achieved Occ|Compute \(SM\) Thr|Issued Instructions  |Executed Ipc A|Warp Cycles Per Issued|Block Size|Grid Size|Shared Memory Per|dominated|Stall" $R/${P}ncu_3xtf32.txt | tr -s ' ' | head -24
  ncu -i /tmp/prof_i.ncu-rep --page details --print-details all 2>/dev/null | grep -E "^ +[A-Za-z_ ]*(Pipe|pipe)|Stall [A-Z]" | tr -s ' ' | head -40 > $R/${P}ncu_3xtf32_pipes.txt
fi
if [[ $PART == j ]]; then
# PART j: the other length batches (bf16, random order, 20 rounds).
  tar -xJf finallibs24.tar.xz
  timeout 300 python3 bench_gemm.py --dir g4 --seqlens seqlens --batches wiki512,wiki128,mnli,cola --reps 20 --bf16-only --variants f3=f3 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio|dccc bf16 " $R/${P}bench_gemm.txt | head -80
fi
if [[ $PART == k ]]; then
# PART k: the epilogue through shared memory (hand-written, wsp2.cu from
# mk2.py + ws_body_p2.cu): each consumer warpgroup stages its 64 x 256 bf16
# rows (528-byte rows), then 16-byte coalesced stores; 3 stages to make room.
# wk4 / wk3 = the persistent form as compiled (4 / 3 stages, stores from
# registers), we3 = 3 stages with the staged epilogue; against g4.
  tar -xJf finallibs24.tar.xz
  F="-DWS_NOREG -DWS_PRODUCERS=128 -DWS_TN=256 -DWS_MINB=1 -DWS_INFLIGHT=0"
  build wk4 wsp2.cu $F -DWS_S=4 &
  build wk3 wsp2.cu $F -DWS_S=3 &
  build we3 wsp2.cu $F -DWS_S=3 -DWS_SMEM_EPI &
  wait
  V=wk4=wk4,wk3=wk3,we3=we3
  timeout 90 python3 bench_gemm.py --dir g4 --bf16-only --check-only --variants $V --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -1 $R/${P}check.txt
  timeout 100 compute-sanitizer --tool racecheck python3 bench_gemm.py --dir we3 --bf16-only --check-only --out /dev/null > $R/${P}racecheck.txt 2>&1
  echo "racecheck we3 rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $R/${P}racecheck.txt | tail -1)"
  timeout 300 python3 bench_gemm.py --dir g4 --seqlens seqlens --batches race,squad,wiki512 --reps 20 --bf16-only --variants $V \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio" $R/${P}bench_gemm.txt | head -80
fi
if [[ $PART == l ]]; then
# PART l: the staged epilogue in the compiler (libs_s.tar.xz: s3 = the new
# defaults, 3 stages, the bf16 output staged; s2 = --gemm-stages=2, staged;
# s4 = --gemm-stages=4, not staged; g4 = e1_'s defaults): checks, sanitizers,
# the GPU GEMM test, the table (random order) and wiki512.
  tar -xJf libs_s.tar.xz; tar -xJf finallibs.tar.xz
  timeout 90 python3 bench_gemm.py --dir s3 --bf16-only --check-only --variants s2=s2,s4=s4 --out /dev/null > $R/${P}check.txt 2>&1
  echo "check rc=$?: $(grep -ciE 'wrong|fail' $R/${P}check.txt) wrong"; tail -1 $R/${P}check.txt
  for tool in memcheck racecheck; do
    timeout 120 compute-sanitizer --tool $tool python3 bench_gemm.py --dir s3 --bf16-only --check-only --variants s2=s2 --out /dev/null > $R/${P}$tool.txt 2>&1
    echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/${P}$tool.txt | tail -1); $(grep -c 'check: OK' $R/${P}$tool.txt) OK"
  done
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  ROOT=$(cd ../.. && pwd)
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 \
    timeout 150 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.MmaGemm*' > $R/${P}gpu_gemm_tests.txt 2>&1
  echo "tests rc=$?"; grep -E "OK \]|FAILED|PASSED|Failure|max \|err" $R/${P}gpu_gemm_tests.txt | head -12
  timeout 240 python3 bench_gemm.py --dir s3 --seqlens seqlens --reps 30 --variants g4=g4,f3=f3,s2=s2 --f32-variants f3=f3 \
      --out $R/${P}bench_gemm.txt > $R/${P}bench_log.txt 2>&1
  echo "bench rc=$?"; grep -E "^##|ratio|dccc bf16 " $R/${P}bench_gemm.txt | head -120
  timeout 100 python3 bench_gemm.py --dir s3 --seqlens seqlens --batches wiki512,wiki128 --reps 20 --bf16-only --variants g4=g4 \
      --out $R/${P}bench_gemm_wiki.txt > $R/${P}bench_log_wiki.txt 2>&1
  echo "bench wiki rc=$?"; grep -E "^##|ratio" $R/${P}bench_gemm_wiki.txt | head -40
fi
if [[ $PART == m ]]; then
# PART m: the GPU tests other than ExamplesMatchCpuBackend (323 s) with the final compiler.
  mkdir -p /tmp/dccc-gpu && tar -xJf test.tar.xz -C /tmp/dccc-gpu
  ROOT=$(cd ../.. && pwd)
  LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$ROOT/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
    DCCC_RUNTIME_INCLUDE="$PWD/include" DCC_POISON_UNINIT=1 \
    timeout 150 /tmp/dccc-gpu/dccc_cuda_backend_tests --gtest_filter='CudaBackend.*:-CudaBackend.ExamplesMatchCpuBackendAndFloat64Reference:CudaBackend.MmaGemm*' > $R/${P}gpu_tests.txt 2>&1
  echo "tests rc=$?"; grep -E "OK \]|FAILED|PASSED|Failure" $R/${P}gpu_tests.txt | head -12
fi
