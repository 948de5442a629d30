#!/bin/bash
# Session 18: where the wgmma kernel's time goes (race, D = 64 and 128, full):
# its SASS and ncu's warp-state / scheduler / instruction sections, with
# FA2-varlen's kernel beside it. build-var/s18 carried (the bundle's libraries).
cd build-var/s18 || exit 1
cuobjdump -sass -fun '_Z17mha_bf16__k0__d6420mha_bf16__k0__launch' mha_bf16.so > $OUT/sass_wg_d64.txt 2>&1
for D in 64 128; do
timeout 200 ncu --clock-control none --kernel-name regex:"mha_bf16__k0__d$D" --launch-skip 3 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section InstructionStats --section Occupancy --section ComputeWorkloadAnalysis --section SchedulerStats python3 bench_fused.py --dir . --seqlens seqlens --batches race --mask full --D $D --reps 2 > $OUT/ncu_wg_race_d$D.txt 2>&1
timeout 200 ncu --clock-control none --kernel-name regex:'flash' --launch-skip 3 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section InstructionStats --section Occupancy --section ComputeWorkloadAnalysis --section SchedulerStats python3 bench_fused.py --dir . --seqlens seqlens --batches race --mask full --D $D --reps 2 > $OUT/ncu_fa2_race_d$D.txt 2>&1
done
echo done
