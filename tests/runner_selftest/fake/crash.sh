#!/bin/sh
# Stands in for a dccc that prints the expected error and then dies by a signal.
file=""
for a in "$@"; do file="$a"; done
echo "$file:4:12: error: unknown name \`x\` [UnknownName]" >&2
kill -SEGV $$
