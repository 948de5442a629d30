#!/bin/bash
cd "$(dirname "$0")"
which cuobjdump nvdisasm ncu > $OUT/which.txt 2>&1
cuobjdump -sass -fun '_Z17mha_bf16__k0__d6420mha_bf16__k0__launch' a/mha_bf16.so > $OUT/sass_a_d64.txt 2>&1
cuobjdump -sass -fun '_Z17mha_bf16__k0__d6420mha_bf16__k0__launch' c/mha_bf16.so > $OUT/sass_c_d64.txt 2>&1
timeout 200 ncu --clock-control none --kernel-name regex:'mha_bf16__k0__d64' --launch-skip 3 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section InstructionStats --section Occupancy --section ComputeWorkloadAnalysis --section SchedulerStats python3 bench_fused.py --dir a --seqlens seqlens --batches race --mask full --D 64 --reps 2 > $OUT/ncu_a_race_d64.txt 2>&1
timeout 200 ncu --clock-control none --kernel-name regex:'flash' --launch-skip 3 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section InstructionStats --section Occupancy --section ComputeWorkloadAnalysis --section SchedulerStats python3 bench_fused.py --dir a --seqlens seqlens --batches race --mask full --D 64 --reps 2 > $OUT/ncu_fa2_race_d64.txt 2>&1
echo done
