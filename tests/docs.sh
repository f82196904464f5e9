#!/bin/sh
# The examples in the documentation are what the commands print: every
# fenced block of README.md and docs/*.md whose first line starts with
# '$ ' is a session; its '$ ' lines run (in a directory that has the
# source tree's examples/, tactics/, rules/ and hw/) and together must
# print exactly the block's other lines.
. "$top_srcdir/tests/tap.sh"
top=$(cd "$top_srcdir" && pwd)
bin=$(cd "$(dirname "$PARTIR")" && pwd)
work=$tmp/work
mkdir -p "$work"
for d in examples tactics rules hw; do ln -s "$top/$d" "$work/$d"; done
for doc in "$top/README.md" "$top"/docs/*.md; do
  awk -v out="$tmp/blocks" '
    /^```/ { if (inblock) { inblock = 0; next }
             inblock = 1; first = 1; next }
    inblock && first { first = 0
                       if ($0 !~ /^\$ /) { inblock = 0; next }
                       n++; file = out "." n }
    inblock { print > file }
  ' "$doc"
  for block in "$tmp"/blocks.*; do
    [ -f "$block" ] || continue
    sed -n 's/^\$ //p' "$block" >"$tmp/cmds"
    grep -v '^\$ ' "$block" >"$tmp/want"
    (cd "$work" && PATH="$bin:$PATH" PARTIR_HW=hw PARTIR_RULES=rules \
      sh -e "$tmp/cmds") >"$tmp/got" 2>"$tmp/err"
    name="$(basename "$doc"): $(head -1 "$tmp/cmds" | cut -c1-60)"
    if cmp -s "$tmp/got" "$tmp/want"; then
      ok "$name"
    else
      not_ok "$name"
      diff "$tmp/want" "$tmp/got" | head -10 | sed 's/^/#   /'
      sed 's/^/#   /' "$tmp/err" | head -5
    fi
    rm -f "$block"
  done
done
done_testing
