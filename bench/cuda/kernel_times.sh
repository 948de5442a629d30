#!/bin/bash
# Kernel-only times of the fused attention kernel and FlashAttention-2's, as
# Nsight Compute measures them (gpu__time_duration of one launch each, after
# warm-up), for every shared batch at B = 128, H = 8, bf16: full and causal,
# head dims $DS (default "64 128"). The end-to-end times (host work
# included) are bench_fused.py's; this one separates the kernel from the
# launch path. Run in a folder with bench_fused.py and seqlens/, DIR holding
# mha_bf16.so and mha_causal_bf16.so (scripts/gpu_bundle.sh makes both):
#
#   DS="64 128" bench/cuda/kernel_times.sh DIR
#
# Prints one line per configuration: dccc's kernel and its time in us, then
# FA2's ("void flash_fwd..." shows as "void").
dir=${1:?usage: kernel_times.sh DIR}
for mask in full causal; do for D in ${DS:-64 128}; do for b in race squad wiki128 mnli cola; do
  t=$(timeout 60 ncu --clock-control none --target-processes all --kernel-name regex:'mha_.*k0|flash' --launch-skip 4 --launch-count 2 --metrics gpu__time_duration.sum python3 bench_fused.py --dir "$dir" --seqlens seqlens --batches $b --mask $mask --D $D --reps 3 2>/dev/null | grep -E "^  [a-zA-Z_].*\(|gpu__time_duration" | paste - - | awk '{n=$1; sub(/\(.*/,"",n); print substr(n,1,28), $(NF)}' | tr '\n' ' ')
  echo "$b D=$D $mask: $t"
done; done; done
