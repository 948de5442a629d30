#!/usr/bin/env bash
# The random-program tester's long run (CI runs a fixed-seed batch: CTest
# label `progen`). Generates N well-typed programs and N mutated ones and
# requires the checker, `dccc run` (JIT, --interpret, --no-storage-lowering)
# and the -o library called from a generated C host to agree.
#
#   scripts/progen.sh [N [SEED]]      N programs (default 2000) from SEED
#                                     (default: the time), then N mutated ones
#
# PROGEN_BUILD_DIR (default ROOT/build) holds dccc and dccc_progen (built
# here if missing); PROGEN_ARGS adds options (`--avoid-open`, `--avoid
# nested,c_names`, `--asan` with PROGEN_BUILD_DIR an asan build, `--no-host`);
# DCCC_JOBS sets the workers (default 2). Failing programs are kept in
# PROGEN_KEEP (default ROOT/progen-failures/); each is replayed with the
# `dccc_progen ... --seed S -n 1` line printed for it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N="${1:-2000}"
SEED="${2:-$(date +%s)}"
BUILD="${PROGEN_BUILD_DIR:-$ROOT/build}"
KEEP="${PROGEN_KEEP:-$ROOT/progen-failures}"
JOBS="${DCCC_JOBS:-2}"
if [[ ! -x "$BUILD/tools/dccc" || ! -x "$BUILD/fuzz/progen/dccc_progen" ]]; then
  "$ROOT/scripts/build.sh" default "$BUILD" dccc dccc_progen
fi
# shellcheck disable=SC2086
set -- --dccc "$BUILD/tools/dccc" --seed "$SEED" -n "$N" -j "$JOBS" --keep "$KEEP" ${PROGEN_ARGS:-}
status=0
echo "progen: $N programs from seed $SEED"
"$BUILD/fuzz/progen/dccc_progen" "$@" || status=1
echo "progen: $N mutated programs from seed $SEED"
"$BUILD/fuzz/progen/dccc_progen" "$@" --mutate || status=1
if ((status)); then echo "progen: failures kept in $KEEP"; fi
exit $status
