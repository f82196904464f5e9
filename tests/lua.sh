#!/bin/sh
# The Lua module 'partir' and the combinators: each tests/lua/test_*.lua
# is a tactic whose function runs assertions and writes TAP lines to the
# file given by --set tap=FILE (stdout carries the program); they are
# relayed here, renumbered.  A script must get to its end ('# done') and
# return the state it was given.
. "$top_srcdir/tests/tap.sh"
top=$(cd "$top_srcdir" && pwd)
lua_dir=$top/tests/lua
# 'require "tap"' finds tests/lua/tap.lua; the shipped tactics stay found
PARTIR_TACTICS=$lua_dir:${PARTIR_TACTICS:-$top/tactics}
export PARTIR_TACTICS

# under valgrind the scripts make fewer states and skip the memory check
light=0
[ -n "$VALGRIND" ] && light=1
"$PARTIR" fmt "$top/examples/mlp.pir" >"$tmp/mlp.txt"
for script in "$lua_dir"/test_*.lua; do
  name=$(basename "$script" .lua)
  : >"$tmp/$name.tap"
  $VALGRIND "$PARTIR" tactic "$script" "$top/examples/mlp.pir" \
    --mesh batch=2,model=4 --set tap="$tmp/$name.tap" --set top="$top" \
    --set tmp="$tmp" --set light=$light --set pair=a=b -o "$tmp/$name.out" 2>"$tmp/$name.err"
  st=$?
  while read -r status rest; do
    case $status in
    ok) ok "$name: ${rest#* - }" ;;
    not) not_ok "$name: ${rest#* * - }" ;;
    '#') echo "# $rest" ;;
    esac
  done <"$tmp/$name.tap"
  if [ $st -eq 0 ] && grep -q '^# done' "$tmp/$name.tap"; then
    check "$name: ran to its end and returned mlp.pir" cmp -s "$tmp/$name.out" "$tmp/mlp.txt"
  else
    [ $st -gt 128 ] && st="$st, killed by signal $((st - 128))"
    not_ok "$name: ran to its end and returned mlp.pir (status $st)"
    show "$tmp/$name.err"
  fi
done
done_testing
