#!/usr/bin/env bash
# `dccc --emit=llvm` text is a complete module: compiled by LLVM 19's llc
# with no -mcpu (the generic x86-64 default) and linked with libdccrt, the
# mha kernel matches a float64 reference (mha_kernel_host.cpp).
#   run.sh DCCC CXX LIBDCCRT_A RUNTIME_INCLUDE [CXXFLAGS...]
set -euo pipefail
dccc="$1" cxx="$2" rt="$3" inc="$4"
flags=("${@:5}")  # the asan preset's sanitizer flags (libdccrt is built with them)
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../../.."
llc=/usr/lib/llvm-19/bin/llc
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$dccc" "$root/examples/mha.toy" --emit=llvm > "$work/mha.ll"
grep -q '"target-cpu"' "$work/mha.ll" || { echo "emit_llvm: no target-cpu attribute in the text" >&2; exit 1; }
"$llc" -O2 -filetype=obj -relocation-model=pic "$work/mha.ll" -o "$work/mha.o"
libs=(-lm -lpthread)
if grep -q '_ZGV' "$work/mha.ll"; then libs=(-lmvec "${libs[@]}"); fi
"$cxx" -std=c++20 -O1 "${flags[@]}" -I "$inc" "$here/mha_kernel_host.cpp" "$work/mha.o" "$rt" "${libs[@]}" -o "$work/host"
"$work/host"
