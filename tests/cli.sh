#!/bin/sh
# The command-line interface: exit statuses, error messages, --input and
# --output handling, and hostile inputs (empty, binary junk, a 10 MB
# line, deep nesting, a very long chain) that must give a diagnostic and
# never a crash.
. "$top_srcdir/tests/tap.sh"
ex=$top_srcdir/examples
npy=$top_srcdir/tests/fixtures/npy
fx=$top_srcdir/tests/fixtures/examples

# expect_fail DESC PATTERN COMMAND...: exits 1 or 2 (not a signal) and
# stderr contains PATTERN; stdout is ignored.
expect_fail() {
  d=$1 pat=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  st=$?
  if [ $st -ge 1 ] && [ $st -le 2 ] && grep -q -- "$pat" "$tmp/err"; then
    ok "$d"
  else
    not_ok "$d (status $st)"
    show "$tmp/err"
  fi
}

check "check accepts mlp.pir" quiet $VALGRIND "$PARTIR" check "$ex/mlp.pir"
check "fmt --expr prints the talk's expression form" sh -c \
  "'$PARTIR' fmt --expr '$ex/mlp_tiled.pir' | grep -qF 'tile 0 (\\r:range<16,8> -> matmul(matmul(slice 0 x[r], w), u))'"
check "--version" quiet "$PARTIR" --version
expect_fail "no command" "usage" "$PARTIR"
expect_fail "unknown command" "unknown command 'frob'" "$PARTIR" frob
expect_fail "a mistyped command: did you mean" \
  "unknown command 'rewite' (did you mean 'rewrite'?)" "$PARTIR" rewite "$ex/mlp.pir"
expect_fail "...an engine command" "unknown command 'propagte' (did you mean 'propagate'?)" \
  "$PARTIR" rewrite "$ex/mlp.pir" --do propagte
expect_fail "...a rule name" "no rule 'matmul-sun' (did you mean 'matmul-sum'?)" \
  "$PARTIR" rewrite "$ex/mlp.pir" --do 'apply matmul-sun'
expect_fail "...and nothing when no name is near" "unknown command 'zzzzzz'\$" \
  "$PARTIR" rewrite "$ex/mlp.pir" --do zzzzzz
expect_fail "missing file" "nope.pir" "$PARTIR" check "$tmp/nope.pir"
expect_fail "two files" "exactly one FILE" "$PARTIR" check "$ex/mlp.pir" "$ex/mlp.pir"
expect_fail "unknown option" "Unknown option" "$PARTIR" run --frob "$ex/mlp.pir"

# --input errors
expect_fail "input for an unknown argument" "has no argument '%q'" \
  "$PARTIR" run "$ex/mlp.pir" -i q="$fx/mlp.x.npy"
expect_fail "input with the wrong shape" "holds tensor<256x256xf32> but '%x' is tensor<16x256xf32>" \
  "$PARTIR" run "$ex/mlp.pir" -i x="$fx/mlp.w.npy"
expect_fail "input without NAME=" "expected NAME=FILE.npy" \
  "$PARTIR" run "$ex/mlp.pir" -i "$fx/mlp.x.npy"
expect_fail "input given twice" "given twice" \
  "$PARTIR" run "$ex/mlp.pir" -i x="$fx/mlp.x.npy" -i x="$fx/mlp.x.npy"
expect_fail "input that is not npy" "mlp.pir" \
  "$PARTIR" run "$ex/mlp.pir" -i x="$ex/mlp.pir"

# --output: written only when everything succeeded
mkdir -p "$tmp/o"
check "run --output writes result0.npy" sh -c \
  "'$PARTIR' run '$ex/mlp.pir' -o '$tmp/o' >/dev/null && test -s '$tmp/o/result0.npy'"
check "the output is named after the returned value" sh -c \
  "'$PARTIR' run '$ex/transformer_layer.pir' -o '$tmp/o2' >/dev/null && test -s '$tmp/o2/out.npy'"
: >"$tmp/afile"
expect_fail "output into a file path fails" "afile" \
  "$PARTIR" run "$ex/mlp.pir" -o "$tmp/afile/sub"
expect_fail "a failing run writes nothing" "has no argument" \
  "$PARTIR" run "$ex/mlp.pir" -i q=x.npy -o "$tmp/none"
check "no output directory after the failure" test ! -e "$tmp/none"
# results written together or not at all: a later result that cannot be
# written (a directory has its name) leaves an earlier one's file as it
# was, and a directory made for them goes
cat >"$tmp/two.pir" <<'EOF'
func @two(%a: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %b = neg(%a)
  return %a, %b
}
EOF
mkdir -p "$tmp/od/b.npy"
echo "the user's own" >"$tmp/od/result0.npy"
expect_fail "a result whose file is a directory: refused" "od/b.npy: Is a directory" \
  "$PARTIR" run "$tmp/two.pir" -o "$tmp/od"
check "...and the other result's file is left as it was" \
  grep -qx "the user's own" "$tmp/od/result0.npy"
mkdir -p "$tmp/ro"
chmod 555 "$tmp/ro"
if [ "$(id -u)" != 0 ]; then
  expect_fail "results into a read-only directory: refused" "Permission denied" \
    "$PARTIR" run "$tmp/two.pir" -o "$tmp/ro/new"
fi
chmod 755 "$tmp/ro"

# -o into a pipe writes into it (and does not replace it with a file)
mkfifo "$tmp/fifo"
cat "$tmp/fifo" >"$tmp/from-fifo" &
reader=$!
"$PARTIR" rewrite "$ex/mlp.pir" --do propagate -o "$tmp/fifo"
wait $reader
check "-o into a pipe writes the program through it" grep -q 'func @mlp' "$tmp/from-fifo"
check "...and leaves the pipe a pipe" test -p "$tmp/fifo"
# -o into a symbolic link writes the file it names, and the link stays
echo old >"$tmp/named.pir"
ln -s named.pir "$tmp/link.pir"
"$PARTIR" rewrite "$ex/mlp.pir" --do propagate -o "$tmp/link.pir"
check "-o into a link writes the file it names, and leaves the link a link" \
  sh -c "test -L '$tmp/link.pir' && grep -q 'func @mlp' '$tmp/named.pir'"

# hostile programs
: >"$tmp/empty.pir"
expect_fail "empty file" "empty.pir:1:1: error: expected 'func'" "$PARTIR" check "$tmp/empty.pir"
awk 'BEGIN { srand(42); for (i = 0; i < 4096; i++) printf "%c", int(rand() * 256) }' \
  >"$tmp/junk.pir" 2>/dev/null
expect_fail "binary junk" "junk.pir:1:" $VALGRIND "$PARTIR" check "$tmp/junk.pir"
printf 'func @f(%%a: tensor<2xf32>) -> tensor<2xf32> {\0}\n' >"$tmp/nul.pir"
expect_fail "NUL byte" "unexpected byte 0x00" "$PARTIR" check "$tmp/nul.pir"
awk 'BEGIN { printf "func @f(%%a: tensor<2xf32>) -> tensor<2xf32> { return %%a } //";
             for (i = 0; i < 10485760 / 64; i++) printf "0123456789012345678901234567890123456789012345678901234567890123";
             printf " `\n" }' >"$tmp/longcomment.pir"
check "a 10 MB comment line parses" quiet "$PARTIR" check "$tmp/longcomment.pir"
awk 'BEGIN { printf "func @f(%%a: tensor<2xf32>) -> tensor<2xf32> { %%b = add(%%a, %%a) {x = ";
             for (i = 0; i < 10485760 / 8; i++) printf "1234567,";
             printf "`\n" }' >"$tmp/longline.pir"
expect_fail "a 10 MB line of junk gives a short diagnostic" "longline.pir:1:" \
  "$PARTIR" check "$tmp/longline.pir"
check "...whose source excerpt is cut to a window" \
  test "$(wc -c <"$tmp/err")" -lt 1000
awk 'BEGIN { printf "func @f(%%a: tensor<2xf32>) -> tensor<2xf32> { %%b = add(%%a, %%a) {x = ";
             for (i = 0; i < 100000; i++) printf "[";
             printf "\n" }' >"$tmp/deeplist.pir"
expect_fail "deeply nested attribute lists" "nest deeper than 200" \
  "$PARTIR" check "$tmp/deeplist.pir"
awk 'BEGIN { printf "func @f(%%x: tensor<8xf32>) -> tensor<8xf32> {\n";
             for (i = 0; i < 100; i++) printf "%%t%d = partir.tile 0 (%%r%d : !partir.range<8,8>) {\n", i, i;
             printf "}\n" }' >"$tmp/deeptile.pir"
expect_fail "deeply nested regions" "regions nest deeper than 60" \
  "$PARTIR" check "$tmp/deeptile.pir"
awk 'BEGIN { printf "func @f(%%x: tensor<2xf32>) -> tensor<2xf32> {\n  %%v0 = neg(%%x)\n";
             for (i = 1; i < 300000; i++) printf "  %%v%d = neg(%%v%d)\n", i, i - 1;
             printf "  return %%v299999\n}\n" }' >"$tmp/chain.pir"
check "a 300000-statement chain checks, prints and runs" sh -c \
  "'$PARTIR' fmt '$tmp/chain.pir' | tail -2 | grep -q 'return %v299999' &&
   '$PARTIR' run '$tmp/chain.pir' | grep -q 'tensor<2xf32>'"
# only regular files are read, whole and up to a size: a FIFO would block
# the reader and /dev/zero never ends (each refused within the timeout)
mkfifo "$tmp/in.fifo"
mkdir "$tmp/adir"
expect_fail "check: a FIFO is refused, not waited on" \
  "in.fifo: not a regular file (a FIFO)" timeout 20 "$PARTIR" check "$tmp/in.fifo"
expect_fail "check: /dev/zero is refused, not read" \
  "/dev/zero: not a regular file (a character device)" \
  timeout 20 "$PARTIR" check /dev/zero
expect_fail "check: a directory is refused" \
  "adir: not a regular file (a directory)" "$PARTIR" check "$tmp/adir"
expect_fail "--rules: a FIFO is refused" "in.fifo: not a regular file" \
  timeout 20 "$PARTIR" rewrite --rules "$tmp/in.fifo" "$ex/mlp.pir" --do propagate
expect_fail "--hw: a FIFO is refused" "in.fifo: not a regular file" \
  timeout 20 "$PARTIR" cost "$ex/mlp.pir" --mesh model=2 --hw "$tmp/in.fifo"
expect_fail "--input: a FIFO .npy is refused" "in.fifo: not a regular file" \
  timeout 20 "$PARTIR" run "$ex/mlp.pir" -i x="$tmp/in.fifo"
expect_fail "--input: /dev/zero as .npy is refused" "/dev/zero: not a regular file" \
  timeout 20 "$PARTIR" run "$ex/mlp.pir" -i x=/dev/zero
truncate -s 257M "$tmp/huge.pir"
expect_fail "a program over 256 MiB is refused unread" \
  "huge.pir: larger than 256 MiB" timeout 20 "$PARTIR" check "$tmp/huge.pir"
rm -f "$tmp/huge.pir"

# a 60000-deep chain lowers and costs: the lowering recursed in 18 KB
# frames and overflowed even the deep stack (1 GiB)
awk 'BEGIN { printf "func @f(%%x: tensor<4xf32>) -> tensor<4xf32> {\n  %%v1 = neg(%%x)\n";
             for (i = 2; i <= 60000; i++) printf "  %%v%d = neg(%%v%d)\n", i, i - 1;
             printf "  return %%v60000\n}\n" }' >"$tmp/deep.pir"
"$PARTIR" lower "$tmp/deep.pir" --mesh a=2 >"$tmp/out" 2>"$tmp/err"
check "a 60000-deep chain lowers to 60000 negs" sh -c \
  "test $? -eq 0 && test \$(grep -c '= neg(' '$tmp/out') -eq 60000"
"$PARTIR" cost "$tmp/deep.pir" --mesh a=2 >"$tmp/out" 2>"$tmp/err"
check "a 60000-deep chain costs 60000 x 4 FLOPs a device" sh -c \
  "test $? -eq 0 && grep -q 'FLOPs  *240000 ' '$tmp/out'"
# sizes past the store's limits are refused, not overflowed
cat >"$tmp/ovf.pir" <<'EOF2'
func @f(%x: tensor<1x65536xf32>) -> tensor<281474976710656x65536xf32> {
  %0 = partir.tile 0 (%r : !partir.range<281474976710656,1>) {
    partir.yield %x
  }
  return %0
}
EOF2
expect_fail "a tile whose result exceeds 2^48 elements" "more than 2^48 elements" \
  "$PARTIR" check "$tmp/ovf.pir"
printf 'func @f(%%x: tensor<281474976710656xf32>) -> tensor<281474976710656xf32> {\n  return %%x\n}\n' \
  >"$tmp/big.pir"
expect_fail "an argument too large to interpret is refused before allocating" \
  "too large for the reference interpreter" "$PARTIR" run "$tmp/big.pir"
# N values of 2^29 elements (under the limit), all alive when %sN-1 is
# computed, with the 8-element argument: each dtype at its own width, by
# hand; far more than any memory, refused up front (it grew to the OOM
# killer).  f32: 1000 values, 1001 x 2^31 + 32 bytes (it was twice that
# when f32 was stored as double); bf16: 2000 values, 2001 x 2^30 + 16.
alive() { # DTYPE N
  awk -v t="$1" -v n="$2" 'BEGIN {
    printf "func @f(%%x: tensor<8x%s>) -> tensor<8x67108864x%s> {\n", t, t;
    printf "  %%v1 = broadcast_in_dim(%%x) {dims = [0]} : tensor<8x67108864x%s>\n", t;
    for (i = 2; i <= n; i++) printf "  %%v%d = neg(%%v%d)\n", i, i - 1;
    printf "  %%s%d = add(%%v%d, %%v%d)\n", n - 1, n, n - 1;
    for (i = n - 2; i >= 1; i--) printf "  %%s%d = add(%%s%d, %%v%d)\n", i, i + 1, i;
    printf "  return %%s1\n}\n" }' >"$tmp/alive.pir"
}
alive f32 1000
expect_fail "values alive at once past the memory available are refused up front" \
  "running it needs 2.1 TB (2149631131680 bytes) of values alive at once, more than the" \
  "$PARTIR" run "$tmp/alive.pir"
alive bf16 2000
expect_fail "...counting bf16 values at 2 bytes an element" \
  "running it needs 2.1 TB (2148557389840 bytes) of values alive at once" \
  "$PARTIR" run "$tmp/alive.pir"
# regions nested past the limit by rewriting: refused with the reason
cat >"$tmp/deep.lua" <<'EOF2'
return function(s)
  for _ = 1, 70 do
    local vals = s:values()
    s = s:tile(vals[#vals].name, 0, 1)
  end
  return s
end
EOF2
expect_fail "rewrites that would nest regions past 60 fail cleanly" \
  "regions would nest deeper than 60" "$PARTIR" tactic "$tmp/deep.lua" "$ex/mlp.pir"
# meshes and hardware what-ifs past their limits are refused, saying the
# limit, instead of overflowing
expect_fail "a mesh of more than 2^31 devices is refused" \
  "its axes make more than 2^31 devices" \
  "$PARTIR" lower "$ex/mlp.pir" --mesh a=65536,b=65536,c=65536,d=65536
expect_fail "a mesh axis too large says the limit" \
  "axis 'a' has size 4000000, more than the limit of 2^20" \
  "$PARTIR" lower "$ex/mlp.pir" --mesh a=4000000
check "a mesh of exactly 2^31 devices is accepted" \
  quiet "$PARTIR" lower "$ex/mlp.pir" --mesh a=1048576,b=2048
expect_fail "a what-if factor that overflows is refused, naming the setting" \
  "'peak_flops=1e308x': peak_flops_f32 would be inf" \
  "$PARTIR" cost "$ex/mlp.pir" --mesh a=2 --set peak_flops=1e308x
expect_fail "...and one that falls below the smallest figure (1e-30)" \
  "'link_bw=1e-20x': link_bw would be 1e-40 bytes/s" \
  "$PARTIR" cost "$ex/mlp.pir" --mesh a=2 --set link_bw=1e-20 --set link_bw=1e-20x
check "...where zero is allowed, zero is fine" quiet "$PARTIR" cost "$ex/mlp.pir" \
  --mesh a=2 --set link_latency=0

# options that do not mean what they say are refused, naming them
expect_fail "search --time nan" "take a positive number" \
  "$PARTIR" search "$ex/mlp.pir" --mesh model=2 --time nan
expect_fail "calibrate --devices -1 (not the default, silently)" "from 1 to 64, not -1" \
  "$PARTIR" calibrate --devices -1
expect_fail "grad --params-from-arg -1" "an argument's index, 0 or more" \
  "$PARTIR" grad "$ex/mlp.pir" --loss sum --params-from-arg -1
expect_fail "grad --wrt w,w" "parameter 'w' is named twice" \
  "$PARTIR" grad "$ex/mlp.pir" --loss sum --wrt w,w
expect_fail "tactic --set dim=abc" "dim=abc: expected a whole number" \
  "$PARTIR" tactic "$top_srcdir/tactics/batch.lua" "$ex/mlp.pir" --mesh batch=2 --set dim=abc
expect_fail "partir-repl --json --allow of a directory that is not there" "not a directory" \
  "$top_builddir/repl/partir-repl" --json --allow "$tmp/not-there"

# counts must be positive: a usage error (status 2) otherwise
usage_error() {
  d=$1 pat=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  st=$?
  if [ $st -eq 2 ] && grep -q -- "$pat" "$tmp/err" && ! grep -q 'preserve' "$tmp/out"; then
    ok "$d"
  else
    not_ok "$d (status $st)"
    show "$tmp/err"
  fi
}
usage_error "walk --walks -1 is a usage error" "--walks takes a count from 1 to 1000000, not -1" \
  "$PARTIR" walk "$ex/mlp.pir" --walks -1
usage_error "walk --steps 0 is a usage error" "--steps takes a count from 1 to 10000, not 0" \
  "$PARTIR" walk "$ex/mlp.pir" --steps 0
usage_error "check-rules --tries -3 is a usage error" "--tries takes a count from 1 to 10000, not -3" \
  "$PARTIR" check-rules --tries -3
# the locale: UTF-8 in file names, arguments and programs reads and
# prints as typed; numbers keep the C format in every locale
utf8=$(locale -a 2>/dev/null | grep -ix 'c\.utf-\{0,1\}8' | head -1)
if [ -n "$utf8" ]; then
  LC_ALL=$utf8 "$PARTIR" check "$tmp/nowhere-é.pir" 2>"$tmp/err"
  check "UTF-8: a file name prints as typed" grep -q 'nowhere-é\.pir' "$tmp/err"
  printf 'func @f(%%a: tensor<2xf32>) -> tensor<2xf32> {\n  %%b = add(%%a, %%a) {note = "é", x = 2!}\n  return %%b\n}\n' \
    >"$tmp/bé.pir"
  LC_ALL=$utf8 "$PARTIR" check "$tmp/bé.pir" 2>"$tmp/err"
  { printf '%s:2:39: error: expected '"','"', got '"'!'"'\n' "$tmp/bé.pir"
    printf '    %%b = add(%%a, %%a) {note = "é", x = 2!}\n%39s^\n' ''
  } >"$tmp/caret.want"
  check "...and a diagnostic shows the line's UTF-8, the caret under the column" \
    cmp -s "$tmp/caret.want" "$tmp/err"
  expect_fail "UTF-8 in --do reaches the command" "no argument '%é'" env LC_ALL=$utf8 \
    "$PARTIR" rewrite "$ex/mlp.pir" --do 'arg-tile %é 0 8'
  expect_fail "...and in partir-repl's options" "axis name 'é' must be" \
    env LC_ALL=$utf8 "$PARTIR_REPL" --mesh 'é=2'
else
  ok "UTF-8 locale # SKIP no C.UTF-8 locale"
fi
# a locale whose decimal point is ',' leaves numbers alone: cost tables,
# JSON and Lua print what they print in the C locale
mkdir -p "$tmp/locale"
if command -v localedef >/dev/null 2>&1 &&
  localedef -i de_DE -f UTF-8 "$tmp/locale/de_DE.UTF-8" >/dev/null 2>&1 ||
  test -d "$tmp/locale/de_DE.UTF-8"; then
  "$PARTIR" tactic "$top_srcdir/tactics/megatron.lua" "$ex/mlp.pir" --mesh model=2 \
    -o "$tmp/m.pir" >/dev/null
  LC_ALL=C "$PARTIR" cost "$tmp/m.pir" --mesh model=2 >"$tmp/cost.c"
  LOCPATH=$tmp/locale LC_ALL=de_DE.UTF-8 "$PARTIR" cost "$tmp/m.pir" --mesh model=2 >"$tmp/cost.de"
  check "a ',' locale: the cost table is the C locale's" sh -c \
    "grep -q '[0-9]\.[0-9]' '$tmp/cost.c' && cmp -s '$tmp/cost.c' '$tmp/cost.de'"
  printf 'lua return 1.5 + 1\n' >"$tmp/lua.cmds"
  LOCPATH=$tmp/locale LC_ALL=de_DE.UTF-8 "$PARTIR_REPL" "$ex/mlp.pir" \
    --batch "$tmp/lua.cmds" 2>&1 | tail -n 1 >"$tmp/lua.de"
  check "...and Lua's numbers in the REPL" grep -qxF '2.5' "$tmp/lua.de"
else
  ok "a ',' locale # SKIP localedef cannot make de_DE.UTF-8"
fi
# an unknown hardware name lists the shipped ones, sorted
expect_fail "an unknown --hw lists the known names in order" \
  "known: cpu2, cpu2-mpi, h100x8, tpuv4" "$PARTIR" cost "$ex/mlp.pir" --hw nosuch
done_testing
