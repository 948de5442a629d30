#!/bin/sh
# Stands in for a dccc that reports the expected error, then an internal
# error with exit status 70: the runner must still fail the test.
file=""
for a in "$@"; do file="$a"; done
echo "$file:4:12: error: unknown name \`x\` [UnknownName]" >&2
echo "dccc: internal error: invariant broken" >&2
exit 70
