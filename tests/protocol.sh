#!/bin/sh
# The agent protocol (partir-repl --json): tests/protocol/check_protocol.py
# drives it over pipes and prints TAP.
PARTIR_REPL=${PARTIR_REPL:-$top_builddir/repl/partir-repl}
if ! command -v python3 >/dev/null 2>&1; then
  echo "1..0 # SKIP no python3"
  exit 0
fi
exec python3 "$top_srcdir/tests/protocol/check_protocol.py" "$PARTIR_REPL" \
  "$(cd "$top_srcdir/examples" && pwd)"
