#!/bin/bash
# Device calls (session 18), from the repository root. build-var/s18/ holds
# bench_fused.py, seqlens/ and the bundle's mha_bf16.so / mha_causal_bf16.so
# (default --cuda-arch: sm_80 + sm_90a, the wgmma instantiations) at its top,
# sync/ the same programs built with --cuda-arch=sm_90 (mma.sync).
# PART=b: correctness (--check-only on ragged lengths with empty sequences,
# under compute-sanitizer memcheck and racecheck) and the bf16 benchmark with
# sync/ as a variant (wgmma vs mma.sync in the same run), FA2-varlen, cuDNN.
# PART=a (build-gpu/ carried, scripts/gpu_bundle.sh): the GPU tests
# (CudaBackend.*, built for sm_90a on this GPU) and attention_diff.py's
# float64 checks of the online libraries.
R=$OUT; mkdir -p /tmp/dccc-gpu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
if [[ $PART == b ]]; then
cd build-var/s18 || exit 1
timeout 60 python3 bench_fused.py --dir . --lengths 300,0,1,17,70,129 --check-only --dccc-only --D 64,128 --mask full,causal \
  > $R/check.txt 2>&1; echo "check rc=$?"; tail -4 $R/check.txt
for t in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $t python3 bench_fused.py --dir . --lengths 300,0,1,17,70 --check-only \
    --dccc-only --D 64,128 --mask full,causal > $R/${t}.txt 2>&1
  echo "$t: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Hazard|check OK|wrong' $R/${t}.txt | sort | uniq -c | tr '\n' ' ')"
done
timeout 280 python3 bench_fused.py --dir . --seqlens seqlens --reps 20 --variants sync=sync \
  --out $R/bench_fused_bf16.txt > $R/bench_fused_bf16_log.txt 2>&1
echo "bench_fused bf16 rc=$?"; cat $R/bench_fused_bf16_log.txt
fi
if [[ $PART == a ]]; then
cd build-gpu || exit 1
tar -xJf test.tar.xz -C /tmp/dccc-gpu
[[ -f online.tar.xz && ! -d online ]] && tar -xJf online.tar.xz
LD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_EXAMPLES_DIR="$PWD/examples" DCCC_RUNTIME_LIB="$PWD/libdccrt.a" \
  DCCC_CUDA_SCHEDULES_DIRS="$PWD/schedules" DCC_POISON_UNINIT=1 DCCC_RUNTIME_INCLUDE="$PWD/include" \
  timeout 480 /tmp/dccc-gpu/dccc_cuda_backend_tests 2>&1 | tail -40 > $R/gpu_test.txt
grep -E "OK \]|FAILED|PASSED|error|Error" $R/gpu_test.txt | head -20
for fn in mha_bf16 mha_bf16_f32_scores mha_causal_bf16_f32_scores; do
  timeout 60 python3 attention_diff.py --prebuilt online $fn --target=cuda > $R/online_$fn.txt 2>&1; tail -1 $R/online_$fn.txt
done
fi
if [[ $PART == t ]]; then  # tile variants of the wgmma kernel (--attention-tiles=M,W,N,B dirs under build-var/s18)
cd build-var/s18 || exit 1
for v in $VARIANTS; do
  timeout 60 python3 bench_fused.py --dir $v --lengths 300,0,1,17,70,129 --check-only --dccc-only --D 64,128 --mask full,causal \
    > $R/check_$v.txt 2>&1; echo "check $v rc=$?: $(grep -c 'check OK' $R/check_$v.txt) OK"
done
vs=$(for v in $VARIANTS; do printf '%s=%s,' $v $v; done)
timeout 400 python3 bench_fused.py --dir . --seqlens seqlens --reps 20 --variants ${vs%,} \
  --out $R/bench_tiles.txt > $R/bench_tiles_log.txt 2>&1
echo "bench tiles rc=$?"; cat $R/bench_tiles_log.txt
fi
if [[ $PART == p ]]; then  # pipelined wgmma variants (build-var/s18/<dir>) against the unpipelined libraries at the top, under sanitizers too
cd build-var/s18 || exit 1
for v in $VARIANTS; do
  timeout 60 python3 bench_fused.py --dir $v --lengths 300,0,1,17,70,129 --check-only --dccc-only --D 64,128 --mask full,causal \
    > $R/check_$v.txt 2>&1; echo "check $v rc=$?: $(grep -c 'check OK' $R/check_$v.txt) OK"
done
for t in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $t python3 bench_fused.py --dir ${VARIANTS%% *} --lengths 300,0,1,17,70 --check-only \
    --dccc-only --D 64,128 --mask full,causal > $R/${t}_pipe.txt 2>&1
  echo "$t: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Hazard|check OK|wrong' $R/${t}_pipe.txt | sort | uniq -c | tr '\n' ' ')"
done
vs=$(for v in $VARIANTS; do printf '%s=%s,' $v $v; done)
timeout 300 python3 bench_fused.py --dir . --seqlens seqlens --reps 20 --variants ${vs%,} \
  --out $R/bench_pipe.txt > $R/bench_pipe_log.txt 2>&1
echo "bench pipe rc=$?"; cat $R/bench_pipe_log.txt
fi
if [[ $PART == s ]]; then  # std/attention and std/nn on the GPU (build-gpu/ carried): their f16 / bf16 instances
cd build-gpu || exit 1
tar -xJf test.tar.xz -C /tmp/dccc-gpu
mkdir -p /tmp/share/dccc && rm -rf /tmp/share/dccc/std && cp -r stdlib /tmp/share/dccc/std
printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/dccc-gpu/lib DCCC_RUNTIME_LIB=%s DCCC_RUNTIME_HEADER=%s exec /tmp/dccc-gpu/dccc "$@"\n' \
  "$PWD/libdccrt.a" "$PWD/include/dccrt.h" > /tmp/dccc-gpu/dccc.sh
chmod +x /tmp/dccc-gpu/dccc.sh
for t in attention nn; do
  PYTHONDONTWRITEBYTECODE=1 timeout 280 python3 tests/stdlib/${t}_diff.py /tmp/dccc-gpu/dccc.sh 3 --target=cuda > $R/stdlib_$t.txt 2>&1
  echo "stdlib $t rc=$?"; tail -3 $R/stdlib_$t.txt
done
fi
if [[ $PART == c ]]; then  # the final libraries (build-var/final: the bundle's, sync/ = mma.sync): checks, sanitizers, bench
cd build-var/final || exit 1
for dt in bf16 f16 f32; do
  timeout 90 python3 bench_fused.py --dir . --dtype $dt --lengths 4096,0,1,17,300 --check-only > $R/check_$dt.txt 2>&1
  echo "check $dt rc=$?: $(grep -c 'check OK' $R/check_$dt.txt) OK"; grep -E "check|wrong" $R/check_$dt.txt | head -4
done
for dt in bf16 f16; do
  for t in memcheck racecheck; do
    timeout 100 compute-sanitizer --tool $t python3 bench_fused.py --dir . --dtype $dt --lengths 300,0,1,17,70 --check-only \
      --dccc-only --D 64,128 --mask full,causal > $R/${t}_$dt.txt 2>&1
    echo "$t $dt: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Hazard|check OK|wrong' $R/${t}_$dt.txt | sort | uniq -c | tr '\n' ' ')"
  done
done
timeout 200 python3 bench_fused.py --dir . --seqlens seqlens --reps 20 --variants sync=sync \
  --out $R/bench_final_bf16.txt > $R/bench_final_bf16_log.txt 2>&1
echo "bench final rc=$?"; cat $R/bench_final_bf16_log.txt
fi
