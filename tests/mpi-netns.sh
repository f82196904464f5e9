#!/bin/sh
# The MPI runtime across a network: two network namespaces joined by a
# veth pair stand for two hosts, a rank in each, and the ranks talk over
# TCP only (--mca btl tcp,self: no shared memory).  The results equal
# the threaded runtime's byte for byte, and the veth pair carried the
# traffic (its byte counters grow).
#
# Launching: mpirun starts the remote rank's daemon through its rsh
# agent; here the agent is a script that runs the command with
# 'ip netns exec' in the namespace that owns the address, instead of
# ssh (docs/runtime.md shows the hostfile run on real hosts).
#
# Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN for the namespaces), 'ip' and
# the MPI runtime; skipped with a message where any is missing.
. "$top_srcdir/tests/tap.sh"
# Under --enable-asan, LeakSanitizer reports OpenMPI's allocations that
# outlive MPI_Finalize; its components are unloaded by then, so no
# suppression can name them.  These runs keep ASan's and UBSan's other
# checks, without leak detection (the threaded runtime's tests check
# partir's leaks on the same compiled code).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS
PARTIR=${PARTIR:-$top_builddir/repl/partir}
case $PARTIR in /*) ;; *) PARTIR=$PWD/$PARTIR ;; esac

skip() {
  echo "# SKIP $*"
  done_testing
}
"$PARTIR" exec "$top_srcdir/examples/mlp.pir" --runtime mpi --repeat -1 \
  >/dev/null 2>"$tmp/err"
grep -q 'not built' "$tmp/err" && skip "the MPI runtime is not built"
command -v mpirun >/dev/null 2>&1 || skip "mpirun is not in PATH"
command -v ip >/dev/null 2>&1 || skip "no 'ip' command (iproute2)"
[ "$(id -u)" = 0 ] || skip "network namespaces need root"

a=partir-a-$$
b=partir-b-$$
va=pva$$
vb=pvb$$
cleanup() {
  ip netns del "$a" 2>/dev/null
  ip netns del "$b" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
if ! { ip netns add "$a" && ip netns add "$b" &&
  ip link add "$va" type veth peer name "$vb" &&
  ip link set "$va" netns "$a" && ip link set "$vb" netns "$b" &&
  ip -n "$a" addr add 10.77.0.1/24 dev "$va" &&
  ip -n "$b" addr add 10.77.0.2/24 dev "$vb" &&
  ip -n "$a" link set "$va" up && ip -n "$b" link set "$vb" up &&
  ip -n "$a" link set lo up && ip -n "$b" link set lo up; } 2>"$tmp/err"; then
  show "$tmp/err"
  skip "cannot make network namespaces here"
fi

cat >"$tmp/agent" <<EOF
#!/bin/sh
# mpirun's rsh agent: 'agent HOST COMMAND...' runs COMMAND in the
# namespace that owns HOST's address
host=\$1
shift
case \$host in
10.77.0.1) ns=$a ;;
10.77.0.2) ns=$b ;;
*) echo "agent: no namespace for \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
EOF
chmod +x "$tmp/agent"
printf '10.77.0.1 slots=1\n10.77.0.2 slots=1\n' >"$tmp/hosts"


# across NAME FILE MESH ARGS...: 2 ranks, one a namespace, against the
# threads.
across() {
  name=$1
  file=$2
  mesh=$3
  shift 3
  rm -rf "$tmp/threads" "$tmp/mpi"
  "$PARTIR" exec "$file" --mesh "$mesh" --exact --output "$tmp/threads" "$@" \
    >"$tmp/threads.out" 2>"$tmp/err" || {
    not_ok "$name: the threaded runtime runs it"
    show "$tmp/err"
    return
  }
  before=$(ip netns exec "$a" cat "/sys/class/net/$va/statistics/tx_bytes")
  timeout 60 ip netns exec "$a" mpirun --allow-run-as-root -np 2 \
    --hostfile "$tmp/hosts" --mca plm_rsh_agent "$tmp/agent" \
    --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 \
    --mca oob_tcp_if_include 10.77.0.0/24 \
    "$PARTIR" exec "$file" --mesh "$mesh" --exact --output "$tmp/mpi" "$@" \
    --runtime mpi >"$tmp/mpi.out" 2>"$tmp/err"
  status=$?
  after=$(ip netns exec "$a" cat "/sys/class/net/$va/statistics/tx_bytes")
  if [ $status -ne 0 ]; then
    not_ok "$name: 2 ranks in 2 namespaces run it (exit $status)"
    show "$tmp/err"
    return
  fi
  check "$name: 2 ranks over TCP between namespaces give the threads' results byte for byte" \
    sh -c "cmp -s '$tmp/threads.out' '$tmp/mpi.out' &&
      for f in '$tmp/threads'/*.npy; do
        cmp -s \"\$f\" '$tmp/mpi'/\"\$(basename \"\$f\")\" || exit 1; done"
  check "...and the veth pair carried their messages ($((after - before)) bytes)" \
    test $((after - before)) -gt 1000
}

lua5.4 "$top_srcdir/examples/models/transformer.lua" --layers 4 --batch 4 \
  --seq 8 --d_model 32 --heads 4 --d_ff 64 >"$tmp/t4.pir"
"$PARTIR" tactic "$top_srcdir/tactics/megatron.lua" "$tmp/t4.pir" \
  --mesh model=2 -o "$tmp/t4-megatron.pir"
across "4-layer transformer, megatron (all_reduce)" "$tmp/t4-megatron.pir" \
  model=2 --seed 9
"$PARTIR" tactic "$top_srcdir/tactics/zero.lua" "$tmp/t4.pir" \
  --mesh data=2 -o "$tmp/t4-zero.pir"
across "4-layer transformer, zero (all_gather)" "$tmp/t4-zero.pir" data=2 \
  --seed 9
across "reduce_scatter" "$top_srcdir/tests/fixtures/spmd/reduce_scatter.pir" \
  model=2 --seed 3
across "all_to_all" "$top_srcdir/tests/fixtures/spmd/all_to_all.pir" \
  model=2 --seed 3
done_testing
