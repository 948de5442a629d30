#!/usr/bin/env bash
# CPU multi-head attention benchmark: dccc's generated kernel against
# PyTorch on the CPU, in one run (bench/cpu/mha_bench.py; bench/README.md).
#
#   bench/cpu/run.sh [--threads N] [--repeat N] [--datasets race,squad,...]
#
# Runs Debian's /usr/bin/python3 (not a python3 earlier on PATH) and installs
# its python3-torch (PyTorch 1.13) with libopenblas0, the BLAS the package
# recommends, when they are missing — the benchmark's own dependencies, not the compiler's, so scripts/setup.sh and CI
# do not install it — builds dccc in build/ if needed, compiles
# examples/mha.toy to build/bench-cpu/mha.so and runs the comparison.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

if ! /usr/bin/python3 -c "import torch" 2>/dev/null || ! dpkg -s libopenblas0 >/dev/null 2>&1; then
  echo "bench/cpu: installing python3-torch and libopenblas0 (Debian) ..." >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-torch libopenblas0
fi

[ -x build/tools/dccc ] || scripts/build.sh default build dccc
mkdir -p build/bench-cpu
# --cpu=native: this machine's AVX-512, as the numbers in RESULTS.md were
# measured (the default, x86-64-v2, is for libraries that travel).
build/tools/dccc examples/mha.toy --cpu=native -o build/bench-cpu/mha.so
exec /usr/bin/python3 bench/cpu/mha_bench.py --lib build/bench-cpu/mha.so "$@"
