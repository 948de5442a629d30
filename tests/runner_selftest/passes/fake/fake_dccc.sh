#!/bin/sh
# Stands in for a dccc that prints IR the test's CHECK line matches, then
# misbehaves as the test file's name says: exit 70 (internal_error), a
# signal (crash), or "internal error" on stderr with exit 0
# (internal_error_text). tests/passes/run_pass_test.sh must fail each.
file=""
for a in "$@"; do file="$a"; done
echo "func main() {"
echo "}"
case "$(basename "$file" .vloop)" in
  internal_error) echo "dccc: internal error: invariant broken" >&2; exit 70 ;;
  crash) kill -SEGV $$ ;;
  internal_error_text) echo "dccc: internal error: invariant broken" >&2; exit 0 ;;
esac
