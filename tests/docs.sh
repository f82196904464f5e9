#!/bin/sh
# The examples in the documentation are what the commands print: every
# fenced block of README.md and docs/*.md whose first line starts with
# '$ ' is a session; its '$ ' lines run (in a directory that has the
# source tree's examples/, tactics/, rules/ and hw/, and the built repl/)
# and together must print exactly the block's other lines.  The README's
# sessions run as written in a built checkout: 'repl/partir', with no
# 'partir' on the PATH; the pages in docs/ write the installed names.
. "$top_srcdir/tests/tap.sh"
top=$(cd "$top_srcdir" && pwd)
bin=$(cd "$(dirname "$PARTIR")" && pwd)
work=$tmp/work
mkdir -p "$work" "$tmp/uninstalled"
for d in examples tactics rules hw; do ln -s "$top/$d" "$work/$d"; done
ln -s "$bin" "$work/repl"
# 'partir' and 'partir-repl' as a fresh checkout has them: not installed
for p in partir partir-repl; do
  printf '#!/bin/sh\necho "%s: not installed (the built one is repl/%s)" >&2\nexit 127\n' \
    "$p" "$p" >"$tmp/uninstalled/$p"
  chmod +x "$tmp/uninstalled/$p"
done

# the programs the README names in the tree are the ones the build makes
names=$(grep -o 'repl/partir[-a-z]*' "$top/README.md" | sort -u | tr '\n' ' ')
check "README.md names the built programs repl/partir and repl/partir-repl" \
  test "$names" = "repl/partir repl/partir-repl "
for prog in $names; do
  check "...$prog is built" test -x "$work/$prog"
done

for doc in "$top/README.md" "$top"/docs/*.md; do
  case $doc in
  */README.md) path=$tmp/uninstalled ;;
  *) path=$bin ;;
  esac
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
    (cd "$work" && PATH="$path:$PATH" PARTIR_HW=hw PARTIR_RULES=rules \
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
