#!/bin/sh
# The layers of the source tree (docs/architecture.md), checked from the
# '#include' lines and, in a built tree, from the symbols of the objects.
#
#   0 core  1 import  2 eval  3 rewrite  4 spmd  5 codegen  6 check
#   7 pipeline (src/pipeline.[ch], src/calibrate.c, src/search.c)  8 bind  9 repl
#
# A file may include the headers of its own layer and of the layers
# below; an include upward, or a cycle of includes between files, fails.
# In the build tree the same holds for calls: an object may use symbols
# defined only in its own layer or below, and the graph of which object
# uses which is acyclic (so 'kernels.c <-> interp.c' or 'rewrite.c <->
# propagate.c' would fail even though they share one header).
#
# LAYERS_SELFTEST=no skips the check that the checker itself catches a
# planted upward include, cycle and upward call.
. "$top_srcdir/tests/tap.sh"

# layer_of PATH: the layer number of a path relative to the root, or -1.
layer_of() {
  case $1 in
  src/partir.h | src/core/*) echo 0 ;;
  src/import/*) echo 1 ;;
  src/eval/*) echo 2 ;;
  src/rewrite/*) echo 3 ;;
  src/spmd/*) echo 4 ;;
  codegen/*) echo 5 ;;
  src/check/*) echo 6 ;;
  src/pipeline.c | src/pipeline.h | src/calibrate.c | src/search.c) echo 7 ;;
  src/bind/*) echo 8 ;;
  repl/*) echo 9 ;;
  *) echo -1 ;;
  esac
}

# includes ROOT: "FILE TARGET" for every quoted include of every source
# file under ROOT (paths relative to ROOT; TARGET '?X' when X is not
# found next to FILE, under src/ or under ROOT: codegen/ sits beside
# src/).
includes() {
  (cd "$1" && find src repl codegen -name '*.[ch]' -o -name '*.def' 2>/dev/null) |
    sort | while read -r f; do
      sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$1/$f" |
        while read -r inc; do
          [ "$inc" = config.h ] && continue
          dir=$(dirname "$f")
          if [ -f "$1/$dir/$inc" ]; then
            echo "$f $dir/$inc"
          elif [ -f "$1/src/$inc" ]; then
            echo "$f src/$inc"
          elif [ -f "$1/$inc" ]; then
            echo "$f $inc"
          else
            echo "$f ?$inc"
          fi
        done
    done
}

# cycles EDGES-FILE: prints the nodes left on a cycle ("A B" edges), by
# removing nodes without successors until none is left.
cycles() {
  sort -u "$1" | awk '
    { if ($1 != $2) { succ[$1] = succ[$1] " " $2; out[$1]++; nodes[$1]; nodes[$2] } }
    END {
      do {
        removed = 0
        for (v in nodes) if (!(v in gone) && out[v] + 0 == 0) {
          gone[v] = 1; removed = 1
          for (u in nodes) if (!(u in gone) && index(succ[u] " ", " " v " ")) out[u]--
        }
      } while (removed)
      for (v in nodes) if (!(v in gone)) print v
    }' | sort
}

# upward EDGES-FILE: the edges "A B" where B lies in a higher layer than
# A, or either is in no known layer.
upward() {
  while read -r a b; do
    case $b in
    \?*) echo "$a includes $b, which is not in the tree"; continue ;;
    esac
    la=$(layer_of "$a")
    lb=$(layer_of "$b")
    if [ "$la" -lt 0 ] || [ "$lb" -lt 0 ]; then
      echo "$a -> $b: a folder tests/layers.sh does not know (give it a layer)"
    elif [ "$lb" -gt "$la" ]; then
      echo "$a (layer $la) -> $b (layer $lb)"
    fi
  done <"$1"
}

# symbol_edges BUILDDIR: "A B" (sources) when object A uses a symbol that
# object B defines.
symbol_edges() {
  objs=$(cd "$1" && find src repl codegen -name '*.o' 2>/dev/null | sort)
  [ -n "$objs" ] || return 0
  for o in $objs; do
    nm --defined-only -g "$1/$o" | awk -v f="$o" 'NF == 3 { print $3, f }'
  done | sort -k1,1 >"$tmp/defs"
  for o in $objs; do
    nm -u "$1/$o" | awk '{ print $NF }' | sort -u | join - "$tmp/defs" |
      awk -v f="$o" '$2 != f { print f, $2 }'
  done | sed 's/\.o\b/.c/g' | sort -u
}

# judge EDGES LABEL VERB NOUN: two results on one graph: no edge goes up
# a layer, and the graph has no cycle.
judge() {
  upward "$1" >"$tmp/up"
  if [ -s "$tmp/up" ]; then
    not_ok "$2: $3 up a layer"
    show "$tmp/up"
  else
    ok "$2: every one of $(sort -u "$1" | wc -l) $4 stays in its layer or goes down"
  fi
  cycles "$1" >"$tmp/cyc"
  if [ -s "$tmp/cyc" ]; then
    not_ok "$2: $4 form a cycle through these files"
    show "$tmp/cyc"
  else
    ok "$2: $4 form no cycle"
  fi
}

# check_tree ROOT BUILDDIR LABEL: includes, then (in a built tree) calls.
check_tree() {
  includes "$1" >"$tmp/inc"
  judge "$tmp/inc" "$3" "an include goes" "includes"
  [ -n "$2" ] || return 0
  symbol_edges "$2" >"$tmp/sym"
  if [ -s "$tmp/sym" ]; then
    judge "$tmp/sym" "$3" "an object calls" "calls between files"
  else
    ok "$3: # SKIP no objects in $2 (build first)"
  fi
}

check_tree "$top_srcdir" "$top_builddir" "source tree"

# The checker must see what it is for: a planted upward include, an
# include cycle, and (when a compiler is there) a call cycle.
if [ "${LAYERS_SELFTEST:-yes}" != no ]; then
  planted=$tmp/planted
  mkdir -p "$planted/src/core" "$planted/src/spmd"
  printf '#include "spmd/spmd.h"\n' >"$planted/src/core/core.h"
  printf '#include "b.h"\n' >"$planted/src/spmd/spmd.h"
  printf '#include "spmd.h"\n' >"$planted/src/spmd/b.h"
  printf 'int g(void);\nint f(void) { return g(); }\n' >"$planted/src/core/a.c"
  printf 'int f(void);\nint g(void) { return f(); }\n' >"$planted/src/spmd/c.c"
  includes "$planted" >"$tmp/pinc"
  upward "$tmp/pinc" >"$tmp/pup"
  check "the checker finds a planted upward include" \
    grep -q 'src/core/core.h (layer 0) -> src/spmd/spmd.h (layer 4)' "$tmp/pup"
  cycles "$tmp/pinc" >"$tmp/pcyc"
  check "the checker finds a planted include cycle" \
    sh -c "grep -qx src/spmd/b.h '$tmp/pcyc' && grep -qx src/spmd/spmd.h '$tmp/pcyc'"
  if ${CC:-cc} -c -o "$planted/src/core/a.o" "$planted/src/core/a.c" &&
    ${CC:-cc} -c -o "$planted/src/spmd/c.o" "$planted/src/spmd/c.c"; then
    symbol_edges "$planted" >"$tmp/psym"
    upward "$tmp/psym" >"$tmp/pup"
    cycles "$tmp/psym" >"$tmp/pcyc"
    check "the checker finds a planted upward call and call cycle" \
      sh -c "grep -q 'src/core/a.c (layer 0) -> src/spmd/c.c (layer 4)' '$tmp/pup' && grep -qx src/core/a.c '$tmp/pcyc'"
  else
    ok "# SKIP no C compiler for the planted call cycle"
  fi
fi

done_testing
