#!/bin/sh
# run.sh — 'make fuzz': libFuzzer on the harnesses of tests/fuzz.
#
#   run.sh SRCDIR BUILDDIR
#
# 'make fuzz' passes, in the environment:
#   FUZZ_CC           clang with libFuzzer (configure's FUZZ_CC)
#   FUZZ_CPPFLAGS     the library's preprocessor flags, absolute paths
#   FUZZ_LIBS         the libraries a program links
#   FUZZ_LIB_SOURCES  the library's sources and the REPL's session files
#                     (relative to SRCDIR; headers are left out here)
#   FUZZ_TARGETS      the harnesses to run (names: pir, npy, ...)
#   FUZZ_SECONDS      seconds each (default 60)
#   FUZZ_RUNS         stop each harness after this many inputs (default:
#                     only the time limit), e.g. 1000000
#   FUZZ_JOBS         parallel compiles (default 2)
#   FUZZ_TIMEOUT      seconds one input may take before libFuzzer calls
#                     it a hang (default 10; a long campaign on a loaded
#                     machine may need more, a real hang still trips it)
#
# 1. Build, in BUILDDIR only (the normal build is untouched): the
#    sources compiled again with FUZZ_CC and
#    -fsanitize=fuzzer-no-link,address,undefined into BUILDDIR/obj, by a
#    makefile written here (with the compiler's dependency files, so a
#    second run recompiles only what changed), archived into
#    libpartir-fuzz.a; then BUILDDIR/fuzz-NAME, each harness with
#    fuzz.c, the archive and -fsanitize=fuzzer.
# 2. Run each harness FUZZ_SECONDS on a fresh copy of its corpus
#    (BUILDDIR/work/NAME/corpus: what libFuzzer finds goes there, never
#    into the tree), from SRCDIR (protocol requests name examples/
#    relative to it), with TMPDIR=BUILDDIR/tmp.  A crash stops that
#    harness; its input is kept as BUILDDIR/work/NAME/crash-* (or leak-,
#    timeout-, oom-) and the log as BUILDDIR/work/NAME/log.
# 3. Report per harness: executions, libFuzzer's cov: (edges) and ft:
#    (features) at the end, how many functions of the harness's own
#    files ran (from -print_coverage), and crashes.  The exit status is
#    1 when a harness crashed.
set -u
srcdir=$1
build=$2
secs=${FUZZ_SECONDS:-60}
runs=${FUZZ_RUNS:+-runs=$FUZZ_RUNS}
jobs=${FUZZ_JOBS:-2}
timeout=${FUZZ_TIMEOUT:-10}
targets=${FUZZ_TARGETS:-pir rules repl protocol npy hw hwset mesh lower stablehlo}
: "${FUZZ_CC:?FUZZ_CC: clang with libFuzzer}"
mkdir -p "$build/obj" "$build/work" "$build/tmp" || exit 1

# ---------------------------------------------------------------- build

# the files whose functions count as a harness's own, for the report
target_files() {
  case $1 in
  pir) echo src/core/parse.c src/core/lex.c src/core/typerule.c \
    src/core/print.c src/core/print_expr.c ;;
  rules) echo src/rewrite/rule.c src/rewrite/spec.c src/rewrite/match.c \
    src/rewrite/apply.c src/check/rulecheck.c ;;
  repl) echo repl/repl-input.c repl/repl-commands.c src/rewrite/command.c \
    src/rewrite/propagate.c ;;
  protocol) echo src/bind/protocol.c src/bind/protocol_json.c ;;
  npy) echo src/eval/npy.c ;;
  hw | hwset) echo src/spmd/hardware.c ;;
  mesh) echo src/core/mesh.c ;;
  stablehlo) echo src/import/syntax.c src/import/pretty.c \
    src/import/reader.c src/import/support.c src/import/dense.c \
    src/import/lower.c ;;
  lower) echo src/spmd/lower.c src/spmd/redistribute.c \
    src/spmd/simulate.c src/spmd/cost.c src/check/lowercheck.c ;;
  esac
}

mk=$build/fuzz.mk
{
  echo "# written by tests/fuzz/run.sh; 'make fuzz' rewrites it"
  echo "CC = $FUZZ_CC"
  echo "CPPFLAGS = $FUZZ_CPPFLAGS"
  echo "CFLAGS = -std=gnu11 -g -O1 -fno-omit-frame-pointer" \
    "-fsanitize=fuzzer-no-link,address,undefined" \
    "-fno-sanitize-recover=undefined"
  echo "LIBS = $FUZZ_LIBS"
  objs=
  for s in $FUZZ_LIB_SOURCES; do
    case $s in *.c) objs="$objs obj/${s%.c}.o" ;; esac
  done
  echo "OBJS =$objs"
  progs=
  for h in $targets; do progs="$progs fuzz-$h"; done
  echo "all:$progs"
  echo "libpartir-fuzz.a: \$(OBJS)"
  printf '\t@rm -f $@ && ar cr $@ $(OBJS) && ranlib $@\n'
  for s in $FUZZ_LIB_SOURCES tests/fuzz/fuzz.c; do
    case $s in *.c) ;; *) continue ;; esac
    o=obj/${s%.c}.o
    extra=
    case $s in
    # the interpreter's kernels loop over tensor elements: comparison
    # tracing there guides the fuzzer nowhere and made 'run' in the
    # REPL harness cost ~20 ms (edge coverage and the sanitizers stay)
    src/eval/kernels.c) extra=" -fno-sanitize-coverage=trace-cmp" ;;
    esac
    echo "$o: $srcdir/$s flags"
    printf '\t@mkdir -p %s && echo "  CC       %s"\n' "$(dirname "$o")" "$s"
    printf '\t@$(CC) $(CPPFLAGS) $(CFLAGS)%s -MMD -MP -c -o %s %s\n' \
      "$extra" "$o" "$srcdir/$s"
  done
  for h in $targets; do
    o=obj/tests/fuzz/fuzz-$h.o
    echo "$o: $srcdir/tests/fuzz/fuzz-$h.c flags"
    printf '\t@mkdir -p obj/tests/fuzz && echo "  CC       %s"\n' \
      "tests/fuzz/fuzz-$h.c"
    printf '\t@$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o %s %s\n' "$o" \
      "$srcdir/tests/fuzz/fuzz-$h.c"
    echo "fuzz-$h: $o obj/tests/fuzz/fuzz.o libpartir-fuzz.a"
    printf '\t@echo "  CCLD     fuzz-%s"\n' "$h"
    printf '\t@$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ %s %s %s $(LIBS)\n' \
      "$o" obj/tests/fuzz/fuzz.o libpartir-fuzz.a
  done
  echo "-include \$(OBJS:.o=.d) obj/tests/fuzz/fuzz.d"
  for h in $targets; do echo "-include obj/tests/fuzz/fuzz-$h.d"; done
} >"$mk"
# 'flags' changes only when the compile flags do: every object depends on
# it, so a change of flags (here or in configure) recompiles them
sed -n '/^CC =/,/^CFLAGS =/p; /-fno-sanitize-coverage/p' "$mk" \
  >"$build/flags.new"
if cmp -s "$build/flags.new" "$build/flags"; then
  rm -f "$build/flags.new"
else
  mv "$build/flags.new" "$build/flags"
fi
(cd "$build" && ${MAKE:-make} -s -f fuzz.mk -j"$jobs" all) || {
  echo "make fuzz: the build failed" >&2
  exit 1
}

# ------------------------------------------------------------------ run

# field NAME LOG: the value after 'NAME: ' on the last line that has it
field() {
  grep -o "$1: *[0-9]*" "$2" | tail -n 1 | sed 's/.*: *//'
}

# reached NAME LOG: "file.c F/N fn E/M edges" for each of the harness's
# own files: functions run of the file's functions, and edges run of
# their edges (libFuzzer's -print_coverage)
reached() {
  for f in $(target_files "$1"); do
    awk -v file="$srcdir/$f" -v base="${f##*/}" '
      /^(UN)?COVERED_FUNC:/ {
        loc = $NF; where = loc; sub(/:[0-9]+$/, "", loc)
        if (loc != file || seen[where]++) next
        split($5, e, "/")
        n++; edges += e[2]
        if ($1 == "COVERED_FUNC:") { c++; hit += e[1] }
      }
      END { if (n) printf "%s %d/%d fn %d/%d edges; ", base, c, n, hit, edges }' "$2"
  done
}

# Term traversals recurse: the front ends run on a 1 GiB stack
# (partir_call_with_stack); libFuzzer calls the harness on its main
# thread, whose stack can grow to the limit set before it starts.
stack_kb=1048576
status=0
summary=$build/summary
: >"$summary"
printf '%-9s %10s %8s %8s %7s  %s\n' harness executions cov ft crashes \
  "functions reached (of the harness's files)" >>"$summary"
for h in $targets; do
  work=$build/work/$h
  rm -rf "$work" "$build/tmp/$h"
  mkdir -p "$work/corpus" "$build/tmp/$h"
  cp "$srcdir/tests/fuzz/corpus/$h/"* "$work/corpus/" 2>/dev/null
  echo "fuzz-$h: ${secs}s on $(ls "$work/corpus" | wc -l) seed inputs"
  (cd "$srcdir" || exit 1
    ulimit -s "$stack_kb" 2>/dev/null
    # shellcheck disable=SC2086 # $runs is one option or none
    TMPDIR=$build/tmp/$h \
      ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
      UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
      "$build/fuzz-$h" -max_total_time="$secs" $runs -timeout="$timeout" \
      -rss_limit_mb=2048 -close_fd_mask=3 -print_final_stats=1 \
      -print_coverage=1 -artifact_prefix="$work/" "$work/corpus") \
    >"$work/log" 2>&1
  crashes=$(find "$work" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' \
    -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  printf '%-9s %10s %8s %8s %7s  %s\n' "$h" \
    "$(field stat::number_of_executed_units "$work/log")" \
    "$(field cov "$work/log")" "$(field ft "$work/log")" "$crashes" \
    "$(reached "$h" "$work/log")" >>"$summary"
  if [ "$crashes" -gt 0 ]; then
    status=1
    find "$work" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' \
      -o -name 'timeout-*' -o -name 'oom-*' \) | sed 's/^/  input: /'
    grep -m 3 -E 'ERROR: |runtime error|^fuzz: |SUMMARY' "$work/log" |
      sed 's/^/  /'
    echo "  log: $work/log"
  fi
done
echo
cat "$summary"
exit $status
