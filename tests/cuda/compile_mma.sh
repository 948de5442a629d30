#!/usr/bin/env bash
# CTest `cuda_compile/mma_<arch>`: the tensor-core kernels of backend/gpu
# (every MMA path: bf16, f16, f32 as 3xTF32 and as TF32, and two batch
# loops) built by nvcc for one architecture with --cuda-arch (sm_80:
# mma.sync and cp.async; sm_90a: the same code for the H100's
# architecture-specific target), and the fused attention kernel's source. No GPU needed; exits 77 (CTest SKIP)
# without nvcc.
#   compile_mma.sh DCCC SOURCE_DIR OUT_DIR ARCH
set -euo pipefail
dccc="$1" src="$2" out="$3" arch="$4"
if [[ -z "${DCCC_NVCC:-}" && ! -x /usr/local/cuda/bin/nvcc ]] && ! command -v nvcc >/dev/null; then
  echo "SKIP: no nvcc (install the CUDA toolkit in /usr/local/cuda or set DCCC_NVCC)"
  exit 77
fi
mkdir -p "$out"
build() {  # NAME TOY [dccc options]
  local name="$1" toy="$2"
  shift 2
  "$dccc" --target=cuda --cuda-arch="$arch" "$@" -o "$out/$name.$arch.so" "$toy"
  grep -q "mma.sync.aligned" <("$dccc" --emit=cuda "$@" "$toy") ||
    { echo "cuda_compile: $name: no mma.sync in the CUDA source"; exit 1; }
  listing="$(python3 "$src/tests/cuda/fatbin_archs.py" "$out/$name.$arch.so")" ||
    { echo "cuda_compile: cannot list the CUDA code in $name.$arch.so"; exit 1; }
  want="elf ${arch%a}"
  grep -q "^$want" <<<"$listing" || { echo "no $want code in $name.$arch.so:"; echo "$listing"; exit 1; }
  echo "cuda_compile: $name ($arch) OK"
}
build gemm16 "$src/examples/batched_gemm_bf16.toy"
build gemm3xtf32 "$src/examples/batched_gemm.toy" --fp32-math=3xtf32
build gemmtf32 "$src/examples/batched_gemm.toy" --fp32-math=tf32
build heads "$src/tests/kernel_ir/bf16_heads.toy"
# The 16-bit contractions' sm_90a (wgmma) form (--gemm-stages; the sm_80
# compilation holds the mma.sync one only).
if [[ "$arch" == sm_90a ]]; then
  build gemm16wgmma "$src/examples/batched_gemm_bf16.toy" --gemm-stages=2
  grep -q "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" <("$dccc" --emit=cuda --gemm-stages=2 "$src/examples/batched_gemm_bf16.toy") ||
    { echo "cuda_compile: gemm16wgmma: no wgmma in the CUDA source"; exit 1; }
fi
# The fused attention kernel (backend/gpu/plan_attention.h), every head dim:
# its CUDA source is the same for every --cuda-arch, and
# cuda_compile/mha_bf16 builds it for sm_80 and sm_90a at -O3 (here it was
# the same nvcc work again, a third of this test's time); here only that
# the source holds the fused kernel.
grep -q "mha_bf16__k0__d128(" <("$dccc" --emit=cuda --cuda-arch="$arch" "$src/examples/mha_bf16.toy") ||
  { echo "cuda_compile: attention: no fused kernel in the CUDA source"; exit 1; }
echo "cuda_compile: mma $arch: compiled"
