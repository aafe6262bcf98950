#!/usr/bin/env bash
# Broadcast and Reduce by rails on many hosts (issue #11, docs/synth.md "Broadcast and Reduce
# beyond 16 hosts"): `coll-plan generate --algo synth` on N x dgx-h100 (`coll-topo synth --node
# dgx-h100 --nodes N`, the default fabric: a rail-optimised fat-tree, 1:1), at 1 GiB and 1 MiB,
# under /usr/bin/time -v (wall and user CPU time, peak RSS of the whole generate, which includes
# simulating the candidates it weighs and the plan it writes: its "predicted" line). Time over
# the bound: generate's prediction (Queue link model) over coll-plan's lower bound. With a second
# bin (a baseline build), the same commands run with it right after, for an A/B on one machine.
# Usage: bench/synth_rooted.sh [build/bin] [out.md] ["hosts ..."] [baseline/bin] ["colls"]
set -euo pipefail
bin=${1:-build/bin}
out=${2:-/dev/stdout}
hosts=${3:-"4 16 32 64 128"}
base=${4:-}
colls=${5:-"broadcast reduce"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# predicted and bound (us) from generate's output
pred() { awk '/^predicted /{p=$2} /bound /{for(i=1;i<NF;i++) if($i=="bound") b=$(i+1)} END{print p, b}' "$1"; }
run() {  # bin topo coll size -> "ratio | predicted | wall s | user s | RSS MB | shape"
  local b=$1 t=$2 coll=$3 size=$4
  if ! /usr/bin/time -v "$b/coll-plan" generate --topo "$t" --coll "$coll" --size "$size" --algo synth -o "$tmp/plan.json" \
    >"$tmp/gen.txt" 2>"$tmp/time.txt"; then
    echo "failed: $(grep -m1 -v '^\s' "$tmp/time.txt") | | | | |"
    return
  fi
  local wall user rss us bound shape
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$tmp/time.txt")
  user=$(awk -F': ' '/User time/{printf "%.2f", $2}' "$tmp/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/{printf "%.0f", $2/1024}' "$tmp/time.txt")
  read -r us bound < <(pred "$tmp/gen.txt")
  shape=$(python3 -c "
import json; q=json.load(open('$tmp/plan.json')); a=q['params']
print('k %s, m %s, fan-out %s%s' % (a.get('channels'), a.get('pipeline'), a.get('rails_fanout', '-'),
      ', ' + a['arc_channels'] + ' arcs' if 'arc_channels' in a else ''))")
  echo "$(awk -v a="$us" -v b="$bound" 'BEGIN{printf "%.3f", a / b}') | $us | $wall | $user | $rss | $shape"
}
{
  echo "| hosts (ranks) | collective | size | bound (us) | synth / bound | predicted (us) | generate wall s | user s | peak RSS MB | shape |$([ -n "$base" ] && echo " baseline: synth / bound | wall s | user s | RSS MB | shape |")"
  echo "|---|---|---|---|---|---|---|---|---|---|$([ -n "$base" ] && echo "---|---|---|---|---|")"
  for n in $hosts; do
    "$bin/coll-topo" synth --node dgx-h100 --nodes "$n" -o "$tmp/t.json" >/dev/null 2>&1
    for size in 1G 1M; do
      for coll in $colls; do
        line=$(run "$bin" "$tmp/t.json" "$coll" "$size")
        bound=$(pred "$tmp/gen.txt" | cut -d' ' -f2)
        b=""
        if [ -n "$base" ]; then
          bl=$(run "$base" "$tmp/t.json" "$coll" "$size")
          b=" $(echo "$bl" | cut -d'|' -f1,3-6) |"
        fi
        echo "| $n ($((n * 8))) | $coll | $size | $bound | $line |$b"
      done
    done
  done
} >"$out"
