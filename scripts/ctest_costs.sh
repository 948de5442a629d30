#!/usr/bin/env bash
# The seconds each test took, which CTest schedules by. CTest starts the
# tests it knows to be long first, from BUILD/Testing/Temporary/
# CTestCostData.txt, which it writes after each run; a clean clone (CI) has
# none, so a long test without a COST property (cuda_compile/*, python/*,
# online/diff/*) could start last and run alone on two cores.
# tests/ctest_costs/PRESET.txt, saved from a full local run, seeds it (CTest
# takes a saved time where no COST property is set). Only the order of the
# tests depends on it, never what runs or passes.
#
#   scripts/ctest_costs.sh seed BUILD PRESET   copy tests/ctest_costs/PRESET.txt
#                                              to BUILD when BUILD has no costs
#   scripts/ctest_costs.sh save BUILD PRESET   write the times of BUILD's last
#                                              ctest run (tests of a second or
#                                              more) to that file
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode="${1:-}" build="${2:-}" preset="${3:-}"
if [[ -z "$build" || -z "$preset" || ! "$mode" =~ ^(seed|save)$ ]]; then
  echo "usage: scripts/ctest_costs.sh seed|save BUILD PRESET" >&2
  exit 2
fi
data="$build/Testing/Temporary/CTestCostData.txt"
file="$ROOT/tests/ctest_costs/$preset.txt"
if [[ "$mode" == seed ]]; then
  [[ -f "$data" || ! -f "$file" ]] && exit 0
  mkdir -p "$(dirname "$data")"
  # CTest's format: NAME RUNS SECONDS a line, then `---` and the tests that
  # failed last (none here).
  { grep -v '^#' "$file"; echo '---'; } >"$data"
  exit 0
fi
# The last run's own times (LastTest.log), not CTest's running averages.
log="$build/Testing/Temporary/LastTest.log"
[[ -f "$log" ]] || { echo "ctest_costs: no $log (run ctest first)" >&2; exit 1; }
{
  echo "# Seconds a test took in a full ctest run of the $preset preset on a"
  echo "# 2-core machine (scripts/ctest_costs.sh save); CTest starts the long"
  echo "# ones first. NAME RUNS SECONDS, longest first."
  awk '/^[0-9]+\/[0-9]+ Testing: / { name = $3 } /^Test time = / && name != "" && $4 >= 1 { printf "%s 1 %.1f\n", name, $4; name = "" }' "$log" |
    sort -k3,3 -g -r
} >"$file"
echo "ctest_costs: wrote $(grep -vc '^#' "$file") tests to ${file#"$ROOT"/}"
