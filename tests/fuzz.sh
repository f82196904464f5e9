#!/bin/sh
# The fuzz corpora (tests/fuzz/corpus/NAME/) replayed through every
# harness in the normal build, without a fuzzing engine: each harness
# runs every file of its own corpus, then every file of the others (a
# .npy file is also a strange program).  An oracle that fails or a
# sanitizer error aborts the harness, so a crash once found and fixed
# stays fixed once its input is in the corpus (tests/fuzz/README).
. "$top_srcdir/tests/tap.sh"
bin=$abs_top_builddir/tests/fuzz
corpus=$abs_top_srcdir/tests/fuzz/corpus
names=${FUZZ_NAMES:-pir rules repl protocol npy hw hwset mesh lower stablehlo}
# the protocol's requests name programs relative to the source tree
cd "$abs_top_srcdir" || exit 1

# replay NAME DESCRIPTION DIR...: one TAP line for harness NAME on DIRs
replay() {
  h=$1 what=$2
  shift 2
  files=$(find "$@" -type f | wc -l)
  if TMPDIR=$tmp $VALGRIND "$bin/fuzz-$h" "$@" >"$tmp/$h.log" 2>&1; then
    ok "fuzz-$h: $what ($files files)"
  else
    not_ok "fuzz-$h: $what ($files files)"
    tail -n 30 "$tmp/$h.log" | sed 's/^/#   /'
  fi
}

for h in $names; do
  if [ ! -d "$corpus/$h" ]; then
    not_ok "fuzz-$h: no corpus in tests/fuzz/corpus/$h"
    continue
  fi
  replay "$h" "its corpus" "$corpus/$h"
  others=
  for c in $names; do
    [ "$c" = "$h" ] || others="$others $corpus/$c"
  done
  # shellcheck disable=SC2086 # the directories have no spaces
  replay "$h" "the other corpora" $others
done
left=$(find "$tmp" -name 'partir-fuzz-*' | wc -l)
check "the harnesses leave no file in \$TMPDIR" test "$left" -eq 0
done_testing
