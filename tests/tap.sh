# tap.sh — sourced by the test scripts: TAP output helpers.
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n - $*"; }
# check DESCRIPTION COMMAND...: passes when the command succeeds.
check() {
  d=$1
  shift
  if "$@"; then ok "$d"; else not_ok "$d"; fi
}
# quiet COMMAND...: runs a command with its stdout discarded.
quiet() { "$@" >/dev/null; }
# show FILE: prints a file as TAP comments.
show() { sed 's/^/#   /' "$1"; }
done_testing() {
  echo "1..$n"
  exit $failed
}
tmp=${TESTS_TMPDIR:-/tmp}/$(basename "$0" .sh).$$
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
