#!/bin/sh
# Stands in for a dccc that exits 1 as expected but says "internal error".
file=""
for a in "$@"; do file="$a"; done
echo "$file:4:12: error: unknown name \`x\` [UnknownName]" >&2
echo "dccc: internal error: unknown exception" >&2
exit 1
