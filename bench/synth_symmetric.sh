#!/usr/bin/env bash
# Synthesis by symmetry (issue #11 "Scale by symmetry", docs/synth.md): `coll-plan generate --algo
# synth` at 1 GiB on hosts alike, under /usr/bin/time -v (wall time and peak RSS of the whole
# synthesis, which includes simulating the candidates it chooses among), then `coll-plan simulate`
# and `coll-plan verify` of the plan it wrote, timed; ring and hier generated beside it (their
# prediction is the same simulation), and at 4 hosts the general solver (--inter general).
# Usage: bench/synth_symmetric.sh [build/bin] [out.md] ["node:hosts ..."]
set -euo pipefail
bin=${1:-build/bin}
out=${2:-/dev/stdout}
cases=${3:-"dgx-h100:4 dgx-h100:8 dgx-h100:16 dgx-a100:8 mi300x:8 dgx-h100:128"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
size=1G
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b - a}'; }
# predicted and bound (us) from generate's output
pred() { awk '/^predicted /{p=$2} /bound /{for(i=1;i<NF;i++) if($i=="bound") b=$(i+1)} END{print p, b}' "$1"; }

{
  echo "| topology | ranks | collective | bound (us) | synth symmetric | ring | hier | general synth | generate s | peak RSS MB | simulate s | verify s | shape |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for c in $cases; do
    node=${c%%:*} n=${c##*:}
    "$bin/coll-topo" synth --node "$node" --nodes "$n" -o "$tmp/t.json" >/dev/null 2>&1
    p=$((n * $(python3 -c "import json;t=json.load(open('$tmp/t.json'));print(len(t['ranks'])//$n)")))
    for coll in allgather reducescatter allreduce; do
      /usr/bin/time -v "$bin/coll-plan" generate --topo "$tmp/t.json" --coll "$coll" --size $size --algo synth --inter symmetric -o "$tmp/plan.json" \
        >"$tmp/gen.txt" 2>"$tmp/time.txt" || { echo "| $node x$n | $p | $coll | failed: $(grep -m1 -v '^\s' "$tmp/time.txt") |"; continue; }
      wall=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$tmp/time.txt")
      rss=$(awk -F': ' '/Maximum resident set size/{printf "%.0f", $2/1024}' "$tmp/time.txt")
      read -r us bound < <(pred "$tmp/gen.txt")
      t0=$(now)
      "$bin/coll-plan" simulate "$tmp/plan.json" --topo "$tmp/t.json" >/dev/null
      sim_s=$(since "$t0")
      t0=$(now)
      # verify interprets every op of every rank (no folding): at 1024 ranks it grew past 22 GB and
      # was killed, so it is not run beyond 256 ranks.
      if [ "$p" -gt 256 ]; then ver="not run"
      elif "$bin/coll-plan" verify "$tmp/plan.json" >/dev/null 2>&1; then ver="$(since "$t0")"; else ver="FAILED"; fi
      shape=$(python3 -c "
import json; q=json.load(open('$tmp/plan.json'))['params']
print('grid %s, fan-out %s, k %s, m %s, packed %.3g GB/s' % (q.get('sym_grid','-'), q.get('sym_fanout','-'), q.get('channels'), q.get('pipeline'), float(q.get('packed_gbps',0))))")
      ratio() { awk -v a="$1" -v b="$bound" 'BEGIN{ if (a == "" || a == "-") print "-"; else printf "%.3f", a / b}'; }
      ring=-; hier=-; gen=-
      "$bin/coll-plan" generate --topo "$tmp/t.json" --coll "$coll" --size $size --algo ring -o "$tmp/c.json" >"$tmp/c.txt" 2>/dev/null &&
        ring=$(ratio "$(pred "$tmp/c.txt" | cut -d' ' -f1)")
      "$bin/coll-plan" generate --topo "$tmp/t.json" --coll "$coll" --size $size --algo hier -o "$tmp/c.json" >"$tmp/c.txt" 2>/dev/null &&
        hier=$(ratio "$(pred "$tmp/c.txt" | cut -d' ' -f1)")
      if [ "$p" -le 32 ]; then
        t0=$(now)
        "$bin/coll-plan" generate --topo "$tmp/t.json" --coll "$coll" --size $size --algo synth --inter general -o "$tmp/c.json" \
          >"$tmp/c.txt" 2>/dev/null && gen="$(ratio "$(pred "$tmp/c.txt" | cut -d' ' -f1)") ($(since "$t0") s)"
      fi
      echo "| $node x$n | $p | $coll | $bound | $(ratio "$us") | $ring | $hier | $gen | $wall | $rss | $sim_s | $ver | $shape |"
    done
  done
} >"$out"
