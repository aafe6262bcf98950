#!/usr/bin/env bash
# Synthesis on tori by translation (issue #11, docs/synth.md "Tori by translation"): on tori of one
# GPU a host, `coll-plan generate --algo synth --inter torus` at 1 GiB under /usr/bin/time -v (wall
# time and peak RSS of the whole synthesis, which includes simulating the candidates it chooses
# among), then `coll-plan simulate` and `coll-plan verify` of the plan it wrote, timed; ring and
# the default synth (relay trees and chains up to 32 ranks; the torus trees beyond) beside it.
# Time over the bound: generate's predicted time (Queue) over its lower bound. Routed sends alone
# stop at 1.26 (a GPU's routes enter through one 25 GB/s NIC, the bound's cut is its 31.5 GB/s PCIe
# link); the torus trees send some trees through the host's second NIC (the plan's channel_nics,
# the "nics" column of shape) to reach the PCIe link.
# verify runs up to verify_max_ranks ranks under --max-memory $VERIFY_MEMORY (4G), and says so where refused.
# Usage: bench/synth_torus.sh [build/bin] [out.md] ["dims ..."] [verify_max_ranks]
set -euo pipefail
bin=${1:-build/bin}
out=${2:-/dev/stdout}
cases=${3:-"3x3 4x4 8x8 16x16 4x4x4 8x8x8"}
verify_max=${4:-64}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
size=1G
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b - a}'; }
# predicted and bound (us) from generate's output
pred() { awk '/^predicted /{p=$2} /bound /{for(i=1;i<NF;i++) if($i=="bound") b=$(i+1)} END{print p, b}' "$1"; }

{
  echo "# synth on tori by translation (\`bench/synth_torus.sh\`)"
  echo
  echo "Written by \`bash bench/synth_torus.sh $bin $out \"$cases\" $verify_max\`, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) shared cores (load $(cut -d' ' -f1 /proc/loadavg) at the start)."
  echo "Tori of one GPU a host: \`coll-topo synth --node pcie-8gpu:gpus=1 --nodes N --fabric torus:dims=D\`; 1 GiB, Queue link model."
  echo "Columns: \`--inter torus\` and default synth (up to 32 ranks, with its synthesis wall time) and ring over \`coll-plan\`'s bound;"
  echo "generate s / peak RSS: \`/usr/bin/time -v coll-plan generate --algo synth --inter torus\` (the bound's max flows and the simulations of the candidates included);"
  echo "simulate s: \`coll-plan simulate\` of that plan; verify s: \`coll-plan verify --max-memory \${VERIFY_MEMORY:-4G}\` up to $verify_max ranks."
  echo "Routed sends alone stop at 1.260 x the bound (25 / 31.5); shape's \"NIC n: q/k\" is how many of a root's k trees go through NIC n of every host (channel_nics; docs/synth.md, \"Tori by translation\")."
  echo
  echo "MaxMin / bound: \`coll-plan simulate --model maxmin\` of the same plan, up to $verify_max ranks."
  echo
  echo "| torus | ranks | collective | bound (us) | synth torus / bound | MaxMin / bound | default synth / bound | ring / bound | generate s | peak RSS MB | simulate s | verify s | shape |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for dims in $cases; do
    p=$(awk -v d="$dims" 'BEGIN{n=split(d,a,"x"); p=1; for(i=1;i<=n;i++) p*=a[i]; print p}')
    "$bin/coll-topo" synth --node pcie-8gpu:gpus=1 --nodes "$p" --fabric "torus:dims=$dims" -o "$tmp/t.json" >/dev/null 2>&1
    for coll in allgather reducescatter allreduce; do
      /usr/bin/time -v "$bin/coll-plan" generate --topo "$tmp/t.json" --coll "$coll" --size $size --algo synth --inter torus -o "$tmp/plan.json" \
        >"$tmp/gen.txt" 2>"$tmp/time.txt" || { echo "| $dims | $p | $coll | failed: $(grep -m1 -v '^\s' "$tmp/time.txt") |"; continue; }
      wall=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$tmp/time.txt")
      rss=$(awk -F': ' '/Maximum resident set size/{printf "%.0f", $2/1024}' "$tmp/time.txt")
      read -r us bound < <(pred "$tmp/gen.txt")
      t0=$(now)
      "$bin/coll-plan" simulate "$tmp/plan.json" --topo "$tmp/t.json" >/dev/null
      sim_s=$(since "$t0")
      mm=-
      [ "$p" -le "$verify_max" ] && mm=$("$bin/coll-plan" simulate "$tmp/plan.json" --topo "$tmp/t.json" --model maxmin | awk '/^  time /{print $2}')
      t0=$(now)
      if [ "$p" -gt "$verify_max" ]; then ver="not run"
      elif "$bin/coll-plan" verify "$tmp/plan.json" --max-memory "${VERIFY_MEMORY:-4G}" >"$tmp/ver.txt" 2>&1; then ver="$(since "$t0")"
      elif grep -q "which would take about" "$tmp/ver.txt"; then ver="refused: needs $(grep -o 'take about [0-9.]* [kMG]B' "$tmp/ver.txt" | cut -d' ' -f3-)"
      else ver="FAILED: $(head -c 160 "$tmp/ver.txt")"; fi
      shape=$(python3 -c "
import json; j=json.load(open('$tmp/plan.json')); q=j['params']; k=int(q.get('channels',1)); n=j.get('channel_nics',[])
per=len(n)//k if n else 1; tr=[n[i*per] for i in range(k)] if n else []
nics=', '.join('NIC %d: %d/%d' % (x, tr.count(x), k) for x in sorted(set(tr)) if x >= 0) or 'routes'
print('%s, k %s, m %s, packed %.4g GB/s, %s' % (q.get('sym_torus_trees','-'), q.get('channels'), q.get('pipeline'), float(q.get('packed_gbps',0)), nics))")
      ratio() { awk -v a="$1" -v b="$bound" 'BEGIN{ if (a == "" || a == "-") print "-"; else printf "%.3f", a / b}'; }
      ring=-; def=-
      "$bin/coll-plan" generate --topo "$tmp/t.json" --coll "$coll" --size $size --algo ring -o "$tmp/c.json" >"$tmp/c.txt" 2>/dev/null &&
        ring=$(ratio "$(pred "$tmp/c.txt" | cut -d' ' -f1)")
      if [ "$p" -le 32 ]; then
        t0=$(now)
        "$bin/coll-plan" generate --topo "$tmp/t.json" --coll "$coll" --size $size --algo synth -o "$tmp/c.json" >"$tmp/c.txt" 2>/dev/null &&
          def="$(ratio "$(pred "$tmp/c.txt" | cut -d' ' -f1)") ($(since "$t0") s)"
      else def="(= torus)"; fi
      echo "| $dims | $p | $coll | $bound | $(ratio "$us") | $(ratio "$mm") | $def | $ring | $wall | $rss | $sim_s | $ver | $shape |"
    done
  done
} >"$out"
