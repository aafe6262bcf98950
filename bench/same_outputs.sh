#!/usr/bin/env bash
# Do two builds of coll-plan say the same? For speed work that must change no result: every plan
# `generate` writes (auto, and tree / ring / hier by name) and every `simulate` and shell `compare`
# report, byte for byte, on several presets, fabrics, collectives and sizes. Prints one line per
# case and exits 1 at the first difference (with the diff).
#
# Usage: bench/same_outputs.sh OLD_BIN_DIR NEW_BIN_DIR [--big]
#   --big adds 128 and 2048 x dgx-h100 (1024 and 16384 GPUs; minutes on two cores); --big-only
#   runs those two alone.
set -euo pipefail
old=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
big=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
topo_bin=$new/coll-topo
[ -x "$topo_bin" ] || topo_bin=$root/build/bin/coll-topo
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

topos=("dgx-h100 2 fat-tree:rails=8" "dgx-h100 16 fat-tree:rails=8" "dgx-a100 4 fat-tree:rails=8" "mi300x 4 torus:dims=2x2"
  "dgx1-v100 2 fat-tree:rails=4")
[ "$big" = --big ] && topos+=("dgx-h100 128 fat-tree:rails=8" "dgx-h100 2048 fat-tree:rails=8")
[ "$big" = --big-only ] && topos=("dgx-h100 128 fat-tree:rails=8" "dgx-h100 2048 fat-tree:rails=8")
cases=0

same() {  # same NAME: $tmp/old.* and $tmp/new.* must match
  for f in "$tmp"/old.*; do
    g=$tmp/new.${f##*/old.}
    if ! cmp -s "$f" "$g"; then
      echo "DIFFERENT: $1 (${f##*/})"
      diff "$f" "$g" | head -20
      exit 1
    fi
  done
  cases=$((cases + 1))
  echo "same: $1"
}

for spec in "${topos[@]}"; do
  read -r node nodes fabric <<<"$spec"
  t=$tmp/topo.json
  "$topo_bin" synth --node "$node" --nodes "$nodes" --fabric "$fabric" -o "$t" >/dev/null 2>&1
  sizes=(1M 64M 1G)
  [ "$nodes" -ge 128 ] && sizes=(1M 1G)
  for coll in allreduce allgather; do
    for size in "${sizes[@]}"; do
      algos=(auto tree ring hier)
      [ "$coll" = allreduce ] || algos=(auto ring hier)
      [ "$nodes" -ge 128 ] && algos=(auto)
      for algo in "${algos[@]}"; do
        rm -f "$tmp"/old.* "$tmp"/new.*
        for side in old new; do
          bin=$old
          [ $side = new ] && bin=$new
          # Same output path for both, so the files can be compared whole.
          "$bin/coll-plan" generate --topo "$t" --coll "$coll" --size "$size" --algo "$algo" -o "$tmp/plan.json" \
            >"$tmp/$side.generate" 2>&1 || echo "exit $?" >>"$tmp/$side.generate"
          [ -f "$tmp/plan.json" ] && mv "$tmp/plan.json" "$tmp/$side.plan"
          if [ -f "$tmp/$side.plan" ]; then
            "$bin/coll-plan" simulate "$tmp/$side.plan" --topo "$t" >"$tmp/$side.simulate" 2>&1 || echo "exit $?" >>"$tmp/$side.simulate"
            # Plans state the command and date that wrote them (provenance): those differ by design.
            sed -i '/^  "provenance": /d' "$tmp/$side.plan"
          fi
        done
        same "$node x$nodes $fabric $coll $size $algo: generate + simulate"
      done
      rm -f "$tmp"/old.* "$tmp"/new.*
      for side in old new; do
        bin=$old
        [ $side = new ] && bin=$new
        printf 'load %s\ncompare %s %s\n' "$t" "$coll" "$size" | "$bin/coll-plan" shell --strict >"$tmp/$side.shell" 2>&1
      done
      same "$node x$nodes $fabric $coll $size: shell compare"
    done
  done
  # One session asking every question in turn (and explain, which shows the plans tried): the
  # answers after the first come with the routes and fold checks the session kept.
  [ "$nodes" -ge 128 ] && continue
  rm -f "$tmp"/old.* "$tmp"/new.*
  for side in old new; do
    bin=$old
    [ $side = new ] && bin=$new
    {
      echo "load $t"
      for coll in allreduce allgather; do
        for size in "${sizes[@]}"; do echo "explain $coll $size"; done
      done
      echo "plan allreduce 64M hier"
      echo "simulate"
    } | "$bin/coll-plan" shell --strict >"$tmp/$side.shell" 2>&1
  done
  same "$node x$nodes $fabric: one shell session, every question"
done
echo "same_outputs: $cases cases, all the same"
