#!/bin/sh
# The term store collected at every safe point (PARTIR_COLLECT_MIN_TERMS=0):
# the Lua module, the tactics, the REPL and the agent protocol run their
# checks again while every term that no module or state holds is freed
# between commands, requests and Lua rewrites.  A term kept by anything
# else would be used after it is freed: a wrong result here, a crash, or
# an ASan report in the sanitizer build.
. "$top_srcdir/tests/tap.sh"
PARTIR_COLLECT_MIN_TERMS=0
export PARTIR_COLLECT_MIN_TERMS
for script in lua tactics repl protocol; do
  sh "$top_srcdir/tests/$script.sh" >"$tmp/$script.tap" 2>"$tmp/$script.err"
  st=$?
  plan=$(grep -c '^ok ' "$tmp/$script.tap")
  if [ $st -eq 0 ] && ! grep -q '^not ok' "$tmp/$script.tap" && [ "$plan" -gt 0 ]; then
    ok "$script checks pass with a collection at every safe point ($plan)"
  else
    not_ok "$script checks with a collection at every safe point"
    grep '^not ok' "$tmp/$script.tap" | head -5 | sed 's/^/#   /'
    tail -5 "$tmp/$script.err" | sed 's/^/#   /'
  fi
done
done_testing
