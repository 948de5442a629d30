#!/usr/bin/env bash
# Drives `dccc repl` in a real terminal (a tmux pane): the prompt, a
# continuation prompt for an input over several lines, line editing (a
# character deleted with Backspace), Tab completion and history (Up recalls
# the previous line, kept in $HOME/.dccc-history). Exits 77 (CTest: SKIP) when tmux is not installed.
#
#   tmux_test.sh DCCC
set -uo pipefail
dccc="$1"
if ! command -v tmux >/dev/null 2>&1; then
  echo "repl tmux test: SKIP (tmux is not installed)"
  exit 77
fi
tmp="$(mktemp -d)"
socket="dccc-repl-test-$$"
session="repl"
cleanup() {
  tmux -L "$socket" kill-server >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "repl tmux test: $*"
  echo "--- pane:"
  tmux -L "$socket" capture-pane -p -t "$session" 2>/dev/null
  exit 1
}

# HOME for the history file; a plain terminal type; in the asan build,
# libedit's own leaks suppressed (lsan.supp says which).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lsan="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$here/lsan.supp:print_suppressions=0"
tmux -L "$socket" -f /dev/null new-session -d -s "$session" -x 100 -y 40 \
  "env HOME=$tmp TERM=xterm LSAN_OPTIONS=$lsan $dccc repl; echo REPL-EXITED-\$?; sleep 30" || fail "cannot start tmux"

# Waits until the pane shows `pattern` (a grep -E regex), up to 20 s.
wait_for() {
  for _ in $(seq 200); do
    tmux -L "$socket" capture-pane -p -t "$session" | grep -qE -- "$1" && return 0
    sleep 0.1
  done
  fail "timed out waiting for /$1/"
}
count() { tmux -L "$socket" capture-pane -p -t "$session" | grep -cE -- "$1"; }
# Keys by name (Enter, BSpace, Up); `line TEXT` types TEXT literally and
# presses Enter (tmux reads an argument's final `;` as a command separator
# unless it is written `\;`).
send() { tmux -L "$socket" send-keys -t "$session" "$@"; }
line() {
  local text="$1"
  [[ "$text" == *";" ]] && text="${text%;}\;"
  tmux -L "$socket" send-keys -t "$session" -l "$text"
  send Enter
}

wait_for '^dcc> ?$'
line 'let x: [3]f32 = [1.0, 2.0, 3.0];'
wait_for '^dcc> let x: \[3\]f32 = \[1\.0, 2\.0, 3\.0\];$'
wait_for '^dcc> ?$'
# Over two lines: the second prompt is the continuation prompt.
line 'reduce(+,'
wait_for '^\.\.\.> ?$'
line ' x[i] * x[i])'
wait_for '^14 : f32$'
# Line editing: `2 * 58`, Backspace, `7` gives 2 * 57.
send -l '2 * 58'
send BSpace
line '7'
wait_for '^114 : i64$'
# History: Up recalls `2 * 57`.
send Up Enter
wait_for '^dcc> 2 \* 57$'
for _ in $(seq 100); do
  [[ "$(count '^114 : i64$')" -ge 2 ]] && break
  sleep 0.1
done
[[ "$(count '^114 : i64$')" -eq 2 ]] || fail "Up did not recall and run the previous line"
# Tab completes a name the session declared, and a command.
line 'let longname = 41;'
send -l 'longn'
send Tab
line ' + 1'
wait_for '^42 : i64$'
send -l ':he'
send Tab
send Enter
wait_for '^commands:$'
# An error, and the session goes on.
line 'nope + 1'
wait_for 'error: unknown name `nope` \[UnknownName\]'
line 'x[2]'
wait_for '^3 : f32$'
line ':quit'
wait_for '^REPL-EXITED-1$'
# The history outlives the session.
# (libedit writes spaces as \040.)
grep -q '^2.*57' "$tmp/.dccc-history" 2>/dev/null || fail "no history in \$HOME/.dccc-history"
echo "repl tmux test: ok"
