#!/usr/bin/env bash
# Installs the Debian packages that building and testing dccc needs, and only
# those that are missing. Idempotent: on a machine that has them all it
# changes nothing and touches no network. Nothing is downloaded from anywhere
# but the system's own apt sources.
set -euo pipefail

PACKAGES=(
  antlr4                 # the ANTLR4 tool (generates the parser at build time)
  libantlr4-runtime-dev  # the ANTLR4 C++ runtime
  llvm-19-dev            # LLVM 19 (CPU backend, later issues)
  llvm-19-tools          # FileCheck, which checks the pass tests (tests/passes)
  libz3-dev              # Z3 C++ API (extent and bounds proofs)
  libfmt-dev             # fmt (diagnostic formatting)
  libgtest-dev           # GoogleTest (tests/unit)
  libedit-dev            # libedit, under LLVM's LineEditor (`dccc repl` line editing)
  cmake
  ninja-build
  ccache
  g++
  clang                  # the fuzz preset builds with clang++
  libclang-rt-dev        # libFuzzer and the sanitizer runtimes for clang
  python3                # tests/cuda/fatbin_archs.py (what a CUDA library holds)
  python3-numpy          # the Python package's tests (tests/python, label python)
  python3-pytest         # runs them
)

installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} build packages are installed"
else
  echo "setup: installing missing packages: ${missing[*]}"
  if [[ "$(id -u)" -eq 0 ]]; then
    SUDO=()
  elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "setup: error: not root and no sudo; install as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update
  "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
  for p in "${missing[@]}"; do
    if ! installed "$p"; then
      echo "setup: error: package $p is still not installed" >&2
      exit 1
    fi
  done
fi

# CUDA is not a Debian package here: later issues (the CUDA backend) use the
# toolkit at /usr/local/cuda when the machine has one. Nothing is installed.
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: CUDA toolkit found at /usr/local/cuda ($(/usr/local/cuda/bin/nvcc --version | sed -n 's/.*release \([^,]*\).*/\1/p'))"
else
  echo "setup: no CUDA toolkit at /usr/local/cuda (only needed by the CUDA backend of later issues)"
fi
