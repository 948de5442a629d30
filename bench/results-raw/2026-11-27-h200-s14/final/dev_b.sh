#!/bin/bash
# Device call B: f32 fused checks and benchmark, hosts, the online/materialised pairs, memcheck.
cd "$(dirname "$0")"
R=$OUT/b; mkdir -p $R /tmp/dccc-gpu
[[ -x /tmp/dccc-gpu/dccc ]] || tar -xJf test.tar.xz -C /tmp/dccc-gpu
[[ -d online ]] || tar -xJf online.tar.xz
python3 bench_fused.py --dir . --dtype f32 --lengths 4096,0,1,17,300 --check-only 2>&1 | tail -4 | tee $R/fused_check_f32.txt
python3 bench_fused.py --dir . --lengths 4096,0,1,17,300 --check-only 2>&1 | tail -4 | tee $R/fused_check_bf16.txt
for so in mha mha_fused mha_remap; do
  [[ -f $so.so ]] || continue
  nvcc -std=c++17 -o /tmp/dccc-gpu/${so}_cuda_host mha_cuda_host.cu -I. ./$so.so -Xlinker -rpath -Xlinker "$PWD" &&
    /tmp/dccc-gpu/${so}_cuda_host $([[ $so == mha ]] && echo --fused) 2>&1 | tail -2 | tee $R/cuda_host_$so.txt
done
for ex in mha mha_bf16 mha_causal mha_scale_after_max; do
  timeout 60 python3 attention_diff.py --prebuilt online "$ex" --target=cuda 2>&1 | tail -1 | tee $R/online_$ex.txt
done
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 86 python3 bench_fused.py --dir . --dtype f32 --lengths 300,0,1,17 --D 64,128 --check-only > $R/memcheck_f32.txt 2>&1; echo "memcheck f32 rc=$?"; grep "ERROR SUMMARY" $R/memcheck_f32.txt | tail -1
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 86 python3 bench_fused.py --dir . --dtype f32 --lengths 70,0,1,17 --D 64,128 --mask full --check-only > $R/racecheck_f32.txt 2>&1; echo "racecheck f32 rc=$?"; grep "RACECHECK SUMMARY" $R/racecheck_f32.txt | tail -1
timeout 200 python3 bench_fused.py --dir . --dtype f32 --seqlens seqlens --mask full,causal --D 64,128 --reps 10 --out $R/bench_fused_f32.txt 2>&1 | tail -22
