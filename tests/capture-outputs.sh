#!/bin/bash
# capture-outputs.sh BINDIR OUTDIR: the outputs of a behaviour-preserving
# change, to compare before and after (diff -r, after replacing OUTDIR in
# the files).  Every example and SPMD fixture, a 4-layer transformer, a
# 10-layer MLP and a GPT-3-shaped 4-layer transformer, through fmt
# (--expr), rewrite (4 scripts), tactic (batch, megatron, zero x 5
# meshes), lower --stats, --emit dot and --simulate of each tactic's
# output, cost (3 hardware files and a what-if), rules, check-rules,
# walk, the REPL fixture sessions and a protocol transcript: about 1450
# runs.  BINDIR holds partir and partir-repl.  Run from the source root;
# not part of make check (it takes a few minutes).
B=$1; O=$2; mkdir -p $O; rm -rf "${O:?}"/*
export PARTIR_RULES=$PWD/rules PARTIR_TACTICS=$PWD/tactics PARTIR_HW=$PWD/hw
G=$O.models; mkdir -p $G
[ -f $G/gpt3.pir ] || lua5.4 examples/models/transformer.lua --layers 4 --batch 8 --seq 2048 --d_model 12288 --heads 96 --d_ff 49152 > $G/gpt3.pir
[ -f $G/tf4.pir ] || lua5.4 examples/models/transformer.lua --layers 4 > $G/tf4.pir
[ -f $G/mlp10.pir ] || lua5.4 examples/models/mlp.lua --layers 10 > $G/mlp10.pir
progs="examples/mlp.pir examples/mlp_tiled.pir examples/transformer_layer.pir $G/gpt3.pir $G/tf4.pir $G/mlp10.pir tests/fixtures/spmd/*.pir"
run() { local name=$1; shift; "$@" > $O/$name.out 2> $O/$name.err; echo "rc=$?" >> $O/$name.out; }
for p in $progs; do
  b=$(basename $p .pir)
  run fmt.$b $B/partir fmt $p
  case $b in gpt3|tf4|mlp10) ;; *) run fmtexpr.$b $B/partir fmt --expr $p;; esac
  run check.$b $B/partir check $p
  for script in 'arg-tile 0 0 8; propagate' 'arg-tile 0 0 2 batch; propagate' 'arg-tile 1 1 2 model; propagate; simplify' 'propagate; fuse; simplify'; do
    s=$(echo "$script" | tr -c 'a-z0-9' _)
    run rw.$b.$s $B/partir rewrite $p --do "$script"
    case $b in gpt3|tf4|mlp10) ;; *) run rwx.$b.$s $B/partir rewrite $p --do "$script" --expr;; esac
  done
  for mesh in "batch=2" "model=2" "batch=2,model=2" "batch=8,model=8" "model=4"; do
    m=$(echo $mesh | tr -c 'a-z0-9' _)
    for t in tactics/batch.lua tactics/megatron.lua tactics/zero.lua; do
      tn=$(basename $t .lua)
      run tac.$b.$m.$tn $B/partir tactic $t $p --mesh $mesh -o $O/tacout.$b.$m.$tn.pir
      if [ -s $O/tacout.$b.$m.$tn.pir ]; then
        q=$O/tacout.$b.$m.$tn.pir
        run low.$b.$m.$tn $B/partir lower $q --mesh $mesh --stats
        run dot.$b.$m.$tn $B/partir lower $q --mesh $mesh --emit dot
        for hw in cpu2 h100x8 tpuv4; do run cost.$b.$m.$tn.$hw $B/partir cost $q --mesh $mesh --hw $hw; done
        run costset.$b.$m.$tn $B/partir cost $q --mesh $mesh --hw h100x8 --set link_bw=2x
        case $b in gpt3) ;; *) run sim.$b.$m.$tn $B/partir lower $q --mesh $mesh --simulate;; esac
      fi
    done
    run lowraw.$b.$m $B/partir lower $p --mesh $mesh --stats
    run costraw.$b.$m $B/partir cost $p --mesh $mesh
  done
done
run rules $B/partir rules
run checkrules $B/partir check-rules --tries 3
run walk $B/partir walk examples/mlp.pir --walks 20
# protocol transcripts
cat > $O/proto.in <<'J'
{"jsonrpc":"2.0","id":1,"method":"reset","params":{"path":"examples/mlp.pir","mesh":"model=2"}}
{"jsonrpc":"2.0","id":2,"method":"actions","params":{"state":1}}
{"jsonrpc":"2.0","id":3,"method":"step","params":{"state":1,"actions":["arg-tile %w 1 128 model","arg-tile %u 0 128 model","propagate"],"observe":["cost","features","text"]}}
{"jsonrpc":"2.0","id":4,"method":"trace","params":{"state":2}}
{"jsonrpc":"2.0","id":5,"method":"step","params":{"state":2,"actions":["arg-tile %x 0 5 model"]}}
{"jsonrpc":"2.0","id":6,"method":"expand","params":{"state":1}}
{"jsonrpc":"2.0","id":7,"method":"observe","params":{"state":2,"observe":["cost","features","text","spmd"]}}
{"jsonrpc":"2.0","id":8,"method":"reset","params":{"path":"examples/transformer_layer.pir","mesh":"batch=2,model=2","hw":"h100x8"}}
{"jsonrpc":"2.0","id":9,"method":"actions","params":{"state":3,"limit":50}}
{"jsonrpc":"2.0","id":10,"method":"expand","params":{"state":3}}
{"jsonrpc":"2.0","id":11,"method":"reset","params":{"path":"/etc/passwd"}}
{"jsonrpc":"2.0","id":12,"method":"bogus"}
not json
{"jsonrpc":"2.0","id":13,"method":"drop","params":{"states":[2]}}
{"jsonrpc":"2.0","id":14,"method":"reset","params":{"program":"func @f(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {\n %0 = relu(%x)\n return %0\n}\n","mesh":"m=2"}}
{"jsonrpc":"2.0","id":15,"method":"stats"}
{"jsonrpc":"2.0","id":16,"method":"shutdown"}
J
$B/partir-repl --json --allow examples < $O/proto.in > $O/proto.out 2> $O/proto.err; echo "rc=$?" >> $O/proto.out
# repl transcript
for f in tests/fixtures/repl/*.in; do n=$(basename $f .in); $B/partir-repl examples/mlp.pir < $f > $O/repl.$n.out 2>&1; echo "rc=$?" >> $O/repl.$n.out; done

rm -f tiled.pir
ls $O | wc -l
