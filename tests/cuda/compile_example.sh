#!/usr/bin/env bash
# CTest `cuda_compile/<example>`: `dccc --target=cuda -o` must build the
# example's CUDA kernels with nvcc (no GPU needed). Exits 77 (CTest SKIP)
# when no nvcc is installed, so the test is reported as skipped, not passed.
#   compile_example.sh DCCC EXAMPLE.toy OUT_DIR [--expect-unsupported | --schedule-file=FILE | --sm90a-only]
# With --schedule-file the example is compiled with FILE's `schedule` blocks
# (`--schedule=`, docs/schedules.md) into OUT_DIR/EXAMPLE.SCHEDULE.so: every
# directive the CUDA target takes must give kernels nvcc builds.
# With --expect-unsupported the example uses something the CUDA target does
# not handle yet: dccc must refuse it with exit 1 and a message saying so
# (never a crash or an nvcc failure); the test fails once it compiles, so
# that the example is taken off the list.
# With --sm90a-only the library is built with --cuda-arch=sm_90a (its code
# and compute_90 PTX only; CI time), and must hold those; its device code
# unoptimized (nvcc -Xcicc -O0 -Xptxas -O0, through DCCC_CUDA_ARCH: nvcc's
# optimizer is about 3/5 of the time, 49 -> 20 s for mha_generic.toy) --
# the check is that nvcc and ptxas accept the code; cuda_compile/mha_bf16
# builds the same templates optimized for sm_80 and sm_90a, and the GPU runs
# build everything at -O3.
# DCCC_FAST_NVCC set in the environment does the same for the other forms
# (the scheduled programs, the stdlib's slicing library).
set -euo pipefail
dccc="$1" toy="$2" out="$3" expect="${4:-}"
if [[ -z "${DCCC_NVCC:-}" && ! -x /usr/local/cuda/bin/nvcc ]] && ! command -v nvcc >/dev/null; then
  echo "SKIP: no nvcc (install the CUDA toolkit in /usr/local/cuda or set DCCC_NVCC)"
  exit 77
fi
mkdir -p "$out"
name="$(basename "$toy" .toy)"
sched=()
if [[ "$expect" == --schedule-file=* ]]; then
  file="${expect#--schedule-file=}"
  sched=("--schedule=$(grep -v '^[[:space:]]*//' "$file")")
  name="$name.$(basename "$file" .schedule)"
  # The scheduled kernels are not the unscheduled ones.
  if [[ -n "$("$dccc" --emit=cuda "$toy" | diff -q - <("$dccc" --emit=cuda "${sched[@]}" "$toy") || true)" ]]; then :; else
    echo "cuda_compile: $name: the schedule changed nothing in the CUDA source"
    exit 1
  fi
fi
if [[ "$expect" == --expect-unsupported ]]; then
  set +e
  msg="$("$dccc" --target=cuda "${sched[@]}" -o "$out/$name.so" "$toy" 2>&1)"
  rc=$?
  set -e
  echo "$msg"
  if [[ $rc -eq 0 ]]; then
    echo "cuda_compile: $name now compiles for CUDA: remove it from DCCC_CUDA_UNSUPPORTED in tests/CMakeLists.txt"
    exit 1
  fi
  if [[ $rc -ne 1 ]] || ! grep -qE "(is not supported|does not support)" <<<"$msg"; then
    echo "cuda_compile: $name: expected exit 1 and an 'is not supported' message, got exit $rc"
    exit 1
  fi
  echo "cuda_compile: $name refused as expected"
  exit 0
fi
archs=()
wants=("elf sm_80" "elf sm_90" "ptx sm_")
if [[ "$expect" == --sm90a-only || -n "${DCCC_FAST_NVCC:-}" ]]; then
  archs=(--cuda-arch=sm_90a)
  wants=("elf sm_90" "ptx sm_")
  export DCCC_CUDA_ARCH="-gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=compute_90 -Xcicc -O0 -Xptxas -O0"
fi
"$dccc" --target=cuda "${archs[@]}" "${sched[@]}" -o "$out/$name.so" "$toy"
test -s "$out/$name.so"
test -s "$out/$name.h"
# The library holds machine code for sm_80 and sm_90a and PTX: read from the
# fatbinary itself (fatbin_archs.py), so the check runs wherever nvcc does,
# cuobjdump or not, and fails loudly when the fatbinary cannot be read.
listing="$(python3 "$(dirname "${BASH_SOURCE[0]}")/fatbin_archs.py" "$out/$name.so")" ||
  { echo "cuda_compile: cannot list the CUDA code in $name.so"; exit 1; }
for want in "${wants[@]}"; do
  grep -q "^$want" <<<"$listing" || { echo "no $want code in $name.so:"; echo "$listing"; exit 1; }
done
echo "cuda_compile: $name OK"
