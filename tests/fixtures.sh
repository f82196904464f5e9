#!/bin/sh
# Text fixtures (parser, printer, kernels) and the round trip of every
# example, through tests/fixture-runner (which prints TAP itself).
exec $VALGRIND "$FIXTURE_RUNNER" \
  "$top_srcdir/tests/fixtures/parse.test" \
  "$top_srcdir/tests/fixtures/kernels.test" \
  "$top_srcdir/tests/fixtures/rewrite.test" \
  "$top_srcdir/tests/fixtures/rules.test" \
  --roundtrip "$top_srcdir"/examples/*.pir
