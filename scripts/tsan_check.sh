#!/usr/bin/env bash
# By-hand ThreadSanitizer check of the parallel loops of generated code (not
# run by CI: it needs clang's TSan runtime, libclang-rt-dev, and takes about
# a minute). Compiles examples/mha.toy and tests/tsan/ragged_div.toy with
# `dccc --emit=llvm`, adds `sanitize_thread` to every function, scalarizes
# vector loads and stores (the tsan pass ignores accesses wider than 16
# bytes), instruments them with LLVM 19's tsan pass (opt) and compiles them
# (llc); builds
# libdccrt's sources with clang -fsanitize=thread; links
# tests/tsan/parallel_driver.cpp and runs it: 4 threads against 1 on mha,
# and a division by zero inside a parallel body. Then runs the driver's
# --race mode, which must produce a TSan report (so the check can fail).
# Exits 0 when the real run is clean and the planted race is reported.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dccc="${DCCC:-$root/build/tools/dccc}"
llvm=/usr/lib/llvm-19/bin
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
cat "$root/examples/mha.toy" "$root/tests/tsan/ragged_div.toy" > both.toy
"$dccc" both.toy --emit=llvm > both.ll
sed -E 's/^(define .*) \{$/\1 sanitize_thread {/' both.ll > both.san.ll
# LLVM's tsan pass skips accesses wider than 16 bytes (the kernels' AVX-512
# loads and stores): split vector loads and stores into scalar ones first.
# Masked gathers (reads) stay unchecked.
"$llvm/opt" -passes='function(scalarizer),tsan-module,function(tsan)' -scalarize-load-store \
  both.san.ll -S -o both.tsan.ll
"$llvm/llc" -O2 -filetype=obj -relocation-model=pic both.tsan.ll -o kernels.o
flags=(-std=c++20 -O1 -g -fsanitize=thread -fPIC -DFMT_HEADER_ONLY -I "$root/runtime/include" -I "$root/runtime/src")
for f in "$root"/runtime/src/*.cpp; do clang++ "${flags[@]}" -c "$f" -o "rt_$(basename "$f" .cpp).o"; done
clang++ "${flags[@]}" "$root/tests/tsan/parallel_driver.cpp" kernels.o rt_*.o -lmvec -lm -lpthread -o driver
echo "== tsan_check: 4 threads vs 1, error in a parallel body"
TSAN_OPTIONS=halt_on_error=1 ./driver
echo "== tsan_check: planted race (must be reported)"
if ./driver --race > race.log 2>&1 || ! grep -q "ThreadSanitizer: data race" race.log; then
  echo "tsan_check: the planted race was not reported: the check is not working" >&2
  exit 1
fi
grep -m1 -A2 "ThreadSanitizer: data race" race.log
echo "tsan_check: OK"
