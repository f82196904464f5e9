#!/bin/sh
# partir-repl on a real terminal: tmux runs it in a detached pane, the
# test types keys (send-keys) and reads the screen (capture-pane).
# Completion of commands, rule names, value names and options; Ctrl-C during a
# command and at the prompt; the history file; Up-arrow after a restart.
. "$top_srcdir/tests/tap.sh"
if ! command -v tmux >/dev/null 2>&1; then
  echo "1..0 # SKIP tmux not installed"
  exit 0
fi
PARTIR_REPL=${PARTIR_REPL:-$top_builddir/repl/partir-repl}
repl=$(cd "$(dirname "$PARTIR_REPL")" && pwd)/$(basename "$PARTIR_REPL")
mlp=$(cd "$top_srcdir/examples" && pwd)/mlp.pir
sock=$tmp/tmux.sock
trap 'tmux -S "$sock" kill-server 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/home"
# a known readline setup: list the candidates on the first Tab
printf 'set show-all-if-ambiguous on\nset bell-style none\n' >"$tmp/inputrc"

# The whole script polls at most 200 times 0.1 s (about 20 s).
polls=0
screen() { tmux -S "$sock" capture-pane -p -t repl >"$tmp/pane" 2>/dev/null; }
# poll COMMAND...: captures the screen until COMMAND (which reads
# $tmp/pane) succeeds, or the script's polls run out.
poll() {
  while [ $polls -lt 200 ]; do
    screen
    "$@" && return 0
    polls=$((polls + 1))
    sleep 0.1
  done
  return 1
}
lines() { grep -v '^ *$' "$tmp/pane"; }
last_is() { [ "$(lines | tail -n 1)" = "$1" ]; }
only_prompt() { [ "$(lines)" = "partir>" ]; }
# wait_for GREP-ARGS...: until grep finds the pattern on the screen.
wait_for() { poll grep -q "$@" "$tmp/pane"; }
# wait_cleared: until the prompt is the only non-empty line (the prompt
# alone is on the screen before C-l has cleared it, too).
wait_cleared() { poll only_prompt; }
# wait_last LINE: until the last non-empty line of the screen is LINE.
wait_last() { poll last_is "$1"; }
keys() { tmux -S "$sock" send-keys -t repl "$@"; }
# clear: an empty screen but for the prompt (readline's C-l), so that
# what is checked next comes from what is typed next
clear() {
  keys C-l
  wait_cleared || not_ok "C-l clears the screen"
}
# start: a fresh session whose last line is "EXITED status" when it ends
start() {
  tmux -S "$sock" kill-session -t repl 2>/dev/null
  tmux -S "$sock" new-session -d -s repl -x 160 -y 60 \
    "env HOME='$tmp/home' PARTIR_HISTORY='$tmp/history' INPUTRC='$tmp/inputrc' \
     TERM=screen '$repl' '$mlp'; echo EXITED \$?; sleep 30"
}
start
check "the prompt appears after the program" wait_for -x 'partir>'

keys 'arg-t' Tab
check "Tab completes a command: arg-t -> arg-tile" wait_for -x 'partir> arg-tile'
keys '0 0 8.' Enter
check "the command runs: the batch is tiled" \
  wait_for -xF 'new tile: %0 = partir.tile 0 (%r : !partir.range<16,8>) { ... }'

clear
keys 'apply mat' Tab
check "Tab completes a rule name to the common prefix" wait_for -x 'partir> apply matmul-'
check "...and lists the candidates" \
  grep -Eq 'matmul-sum +matmul-sum-rev +matmul-tile-0 +matmul-tile-0-rev +matmul-tile-1' "$tmp/pane"
keys C-u 'show %' Tab
check "Tab lists the value names of the current state" \
  wait_for -E '%0 +%1 +%2 +%3 +%u +%w +%x'
keys C-u 'show %u' Tab
check "Tab completes a value name" wait_for -x 'partir> show %u'
keys C-u 'save ' "$tmp/ho" Tab
check "Tab completes a file name after save" wait_for -F "partir> save $tmp/home/"
keys C-u 'set ' Tab
check "Tab after set lists every setting" wait_for -E '^cost +hw +mesh +show *$'
keys C-u 'set cost ' Tab
check "...and on|off after set cost" wait_for -E '^off +on *$'
keys C-u 'set hw ' Tab
check "...and the hardware names after set hw" wait_for -E '^cpu2 +cpu2-mpi +h100x8 +tpuv4 *$'
# tactics: the tactic files only, not the helper module nor dot-files
keys C-u 'tactic ' Tab
check "Tab after tactic lists the tactics only" wait_for -E '^batch +megatron +sequence +zero *$'
keys C-u 'tactic meg' Tab
check "...and completes one" wait_for -x 'partir> tactic megatron'
keys C-u 'info %' Tab
check "Tab after info lists the values" wait_for -E '%0 +%1 +%2 +%3 +%u +%w +%x'
keys C-u 'exec --' Tab
check "Tab after exec lists its options" wait_for -E '^--exact +--mesh +--seed *$'
keys C-u 'bench --r' Tab
check "...and bench's: --r -> --repeat" wait_for -x 'partir> bench --repeat'
keys C-u 'search --a' Tab
check "...and search's: --a -> --algo" wait_for -x 'partir> search --algo'
keys C-u 'search --algo ' Tab
check "...and its algorithms after --algo" wait_for -E '^beam +mcts *$'
keys C-u 'exec --mesh ' Tab
check "...and after --mesh, 'none'" wait_for -x 'partir> exec --mesh none'
keys C-u
clear
keys 'propagate.' Enter
check "propagate pulls the tile out" wait_for -xF 'rewritten: %0, %2, %3'

clear
keys 'lua while true do end' Enter
sleep 0.3
keys C-c
check "Ctrl-C interrupts a running command" wait_for -F 'error: lua: interrupted'
check "...and the session goes on at a prompt" wait_last 'partir>'
keys 'garbage'
wait_for -x 'partir> garbage'
keys C-c
check "Ctrl-C at the prompt drops the line" wait_for -x 'partir> garbage^C'
check "...for a fresh prompt" wait_last 'partir>'
clear
keys 'undo' Enter
check "...and the next line starts empty" \
  wait_for -xF 'rewritten: %0, %2, %3'
check "...with no error" sh -c "! grep -q 'unknown command' '$tmp/pane'"

keys 'quit' Enter
check "quit ends the session with status 0" wait_for -x 'EXITED 0'
check "the history file holds the commands" \
  sh -c "grep -qx 'arg-tile 0 0 8.' '$tmp/history' && grep -qx 'propagate.' '$tmp/history'"
check "...but not the line dropped with Ctrl-C" sh -c "! grep -q garbage '$tmp/history'"

start
wait_for -x 'partir>'
# newest first: quit, undo, lua ..., propagate., arg-tile 0 0 8.
keys Up Up Up Up
check "Up-arrow recalls a command of the last session" wait_for -x 'partir> propagate.'
keys Up Enter
check "...which runs again" wait_for -F 'new tile: %0 = partir.tile 0'
keys C-d
check "Ctrl-D ends the session" wait_for -x 'EXITED 0'

if [ $failed -ne 0 ]; then
  echo "# the screen at the end:"
  show "$tmp/pane"
fi
done_testing
