#!/usr/bin/env bash
# ThreadSanitizer check of the parallel loops of generated code and of the
# prelude cache (it needs clang's TSan runtime, libclang-rt-dev, and takes
# two to three minutes on 2 cores). `scripts/test.sh --full`, so CI, runs
# all of it; `--prelude` runs the prelude cache part only.
# Compiles examples/mha.toy and tests/tsan/ragged_div.toy with
# `dccc --emit=llvm`, adds `sanitize_thread` to every function, scalarizes
# vector loads and stores (the tsan pass ignores accesses wider than 16
# bytes), instruments them with LLVM 19's tsan pass (opt) and compiles them
# (llc); builds libdccrt's sources with clang -fsanitize=thread; links
# tests/tsan/parallel_driver.cpp and runs it: 4 threads against 1 on mha,
# and a division by zero inside a parallel body. Then runs the driver's
# --race mode, which must produce a TSan report (so the check can fail).
# Then the prelude cache (issue 14): the runtime's prelude cache unit tests
# that hammer it from 8 threads, built with TSan against the same libdccrt
# objects, and examples/mha.toy built by `dccc -o` as a TSan library (CC is
# tests/tsan/cc_tsan.sh: the instrumented kernels and libdccrt objects in
# place of dccc's) called by tests/host/prelude/threads_host.cpp from 8
# threads with DCC_PRELUDE_CACHE_BYTES=1024, compared with single-threaded
# results.
# Exits 0 when the real runs are clean and the planted race is reported.
set -euo pipefail
parallel=1
case "${1:-}" in
  --prelude) parallel=0 ;;
  "") ;;
  *) echo "tsan_check: unknown argument \`$1\`; expected --prelude" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "$0")/.." && pwd)"
dccc="${DCCC:-$root/build/tools/dccc}"
llvm=/usr/lib/llvm-19/bin
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
cat "$root/examples/mha.toy" "$root/tests/tsan/ragged_div.toy" > both.toy
"$dccc" both.toy --emit=llvm > both.ll
# The text names its target CPU and features on every function; drop them
# here so that opt expands the masked stores of vector tails (legal on
# AVX-512, so kept there) for a plain x86-64: LLVM's tsan pass does not
# instrument llvm.masked.store, and a race through one went unreported.
# llc then compiles for this CPU again (-mcpu=native), which the AVX-512
# libmvec calls the optimizer chose need for their vector arguments.
sed -E -e 's/"target-(cpu|features)"="[^"]*"//g' \
  -e 's/^attributes #([0-9]+) = \{ +\}$/attributes #\1 = { nounwind }/' \
  -e 's/^(define .*) \{$/\1 sanitize_thread {/' both.ll > both.san.ll
# LLVM's tsan pass also skips accesses wider than 16 bytes (the kernels'
# AVX-512 loads and stores): split vector loads and stores into scalar ones
# first. Masked gathers (reads) stay unchecked.
"$llvm/opt" -mcpu=x86-64 -passes='function(scalarize-masked-mem-intrin,scalarizer),tsan-module,function(tsan)' \
  -scalarize-load-store both.san.ll -S -o both.tsan.ll
"$llvm/llc" -O2 -mcpu=native -filetype=obj -relocation-model=pic both.tsan.ll -o kernels.o
flags=(-std=c++20 -O1 -g -fsanitize=thread -fPIC -DFMT_HEADER_ONLY -I "$root/runtime/include" -I "$root/runtime/src")
pids=()
for f in "$root"/runtime/src/*.cpp; do
  clang++ "${flags[@]}" -c "$f" -o "rt_$(basename "$f" .cpp).o" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
if ((parallel)); then
clang++ "${flags[@]}" "$root/tests/tsan/parallel_driver.cpp" kernels.o rt_*.o -lmvec -lm -lpthread -o driver
echo "== tsan_check: 4 threads vs 1, error in a parallel body"
TSAN_OPTIONS=halt_on_error=1 ./driver
echo "== tsan_check: planted race (must be reported)"
if ./driver --race > race.log 2>&1 || ! grep -q "ThreadSanitizer: data race" race.log; then
  echo "tsan_check: the planted race was not reported: the check is not working" >&2
  exit 1
fi
grep -m1 -A2 "ThreadSanitizer: data race" race.log
fi

echo "== tsan_check: prelude cache unit tests, 8 threads"
clang++ "${flags[@]}" "$root/runtime/tests/prelude_cache_test.cpp" rt_*.o -lgtest -lgtest_main \
  -lpthread -o prelude_cache_test
TSAN_OPTIONS=halt_on_error=1 ./prelude_cache_test \
  --gtest_filter='PinnedPrelude.*:PreludeCache.Concurrent*:HeldPrelude.*'
echo "== tsan_check: mha from 8 host threads, DCC_PRELUDE_CACHE_BYTES=1024"
clang++ "${flags[@]}" -c "$root/tests/tsan/tsan_shims.cpp" -o shims.o
TSAN_KERNELS="$PWD/kernels.o $PWD/shims.o" TSAN_RT="$(echo "$PWD"/rt_*.o)" \
  CC="$root/tests/tsan/cc_tsan.sh" "$dccc" "$root/examples/mha.toy" -o "$work/mha.so"
clang++ "${flags[@]}" -I "$work" "$root/tests/host/prelude/threads_host.cpp" "$work/mha.so" \
  -Wl,-rpath,"$work" -o threads_host
# Two pool threads per call: the host threads' calls share the pool too.
DCC_PRELUDE_CACHE_BYTES=1024 TSAN_OPTIONS=halt_on_error=1 ./threads_host 8 40 2
echo "tsan_check: OK"
