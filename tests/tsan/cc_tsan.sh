#!/usr/bin/env bash
# The C compiler for `dccc -o` under scripts/tsan_check.sh ($CC): links the
# generated wrapper, compiled with -fsanitize=thread, against the TSan builds
# of the kernels ($TSAN_KERNELS: objects instrumented by LLVM's tsan pass, in
# place of dccc's kernels.o) and of libdccrt ($TSAN_RT: objects, in place of
# libdccrt.a), so that the whole library is checked.
set -euo pipefail
args=()
for a in "$@"; do
  case "$a" in
    */kernels.o) read -r -a k <<< "$TSAN_KERNELS"; args+=("${k[@]}") ;;
    */libdccrt.a) read -r -a rt <<< "$TSAN_RT"; args+=("${rt[@]}") ;;
    *) args+=("$a") ;;
  esac
done
exec clang -fsanitize=thread -g "${args[@]}"
