# strategies.sh — sourced by the test scripts that check a partitioning
# strategy's collectives (after tap.sh): train.sh, sequence.sh.

# collectives FILE MESH: "KIND AXES COUNT BYTES" per collective of the
# program's cost report, sorted.
collectives() {
  "$PARTIR" cost "$1" --mesh "$2" |
    sed -n '/^collectives per device/,/^time per step/p' |
    awk '$1 ~ /^(all_|reduce_|shard)/ { print $1, $2, $4, $5 }' | sort
}

# expect_strategy NAME PROGRAM MESH TACTIC EXPECTED [TACTIC OPTIONS...]:
# the tactic on PROGRAM gives exactly the EXPECTED collectives (lines
# "KIND AXES COUNT BYTES") into $tmp/NAME.pir, and the result computes
# what the interpreter computes, simulated on the mesh's devices.
expect_strategy() {
  name=$1 prog=$2 mesh=$3 tactic=$4 want=$5
  shift 5
  out=$tmp/$name.pir
  if ! "$PARTIR" tactic "$tactic" "$prog" --mesh "$mesh" "$@" -o "$out" \
    2>"$tmp/err"; then
    not_ok "$name: the tactic runs"
    show "$tmp/err"
    return 1
  fi
  printf '%s\n' "$want" | sort >"$tmp/want"
  collectives "$out" "$mesh" >"$tmp/got"
  if cmp -s "$tmp/want" "$tmp/got"; then
    ok "$name on $mesh: $(tr '\n' ',' <"$tmp/want" | sed 's/,$//')"
  else
    not_ok "$name on $mesh: the collectives counted by hand"
    diff "$tmp/want" "$tmp/got" >"$tmp/diff"
    show "$tmp/diff"
  fi
  check "$name: simulated on $mesh, the interpreter's results" \
    quiet "$PARTIR" lower "$out" --mesh "$mesh" --simulate --seed 4
}

# expect_compiled NAME FILE MESH: FILE compiled (--exact), each device on
# its thread, gives bit for bit the interpreter's results (seed 6).
expect_compiled() {
  rm -rf "$tmp/run" "$tmp/exec"
  mkdir -p "$tmp/run" "$tmp/exec"
  if "$PARTIR" run "$2" --seed 6 --output "$tmp/run" >/dev/null 2>"$tmp/err" &&
    "$PARTIR" exec "$2" --mesh "$3" --exact --seed 6 --output "$tmp/exec" \
      >/dev/null 2>>"$tmp/err"; then
    same=yes
    for f in "$tmp/run"/*.npy; do
      cmp -s "$f" "$tmp/exec/$(basename "$f")" || same=no
    done
    check "$1: compiled on $3 (--exact), the interpreter's results" \
      test $same = yes
  else
    not_ok "$1: compiled on $3, it runs"
    show "$tmp/err"
  fi
}
