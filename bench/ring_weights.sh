#!/usr/bin/env bash
# Weighted ring channels (docs/algorithms.md, "Weighted channels") on degraded clusters, on the
# path users take: `coll-topo synth`, a what-if edit in `coll-plan shell` saved as a topology,
# `coll-plan generate --algo ring` (the shares laid out by default) and `coll-plan simulate`,
# beside the same plan with equal shares (param weights removed, the buffers cut by channels
# again) simulated on the same topology, and `auto`'s choice. Predictions of the simulator (Queue
# link model) at 1 GiB, no clock read.
#
# Usage: bench/ring_weights.sh [build/bin] [out.md]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$root/build/bin}" && pwd)
out=${2:-$root/results/ring_weights.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# predicted PLAN TOPO: the simulated time in us.
predicted() { "$bin/coll-plan" simulate "$1" --topo "$2" | awk '$1 == "time" {print $2}'; }

# equal PLAN OUT: the plan with equal shares.
equal() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
plan = json.load(open(sys.argv[1]))
w = plan["params"].pop("weights", None)
if w is not None:
    units, channels = sum(int(x) for x in w.split(",")), len(w.split(","))
    plan["chunks"] = {k: v // units * channels for k, v in plan["chunks"].items()}
json.dump(plan, open(sys.argv[2], "w"))
EOF
}

rows=()
source "$root/bench/degraded_cases.sh"
for c in "${degraded_cases[@]}" "16 x dgx-h100, healthy|dgx-h100|16|"; do
  degraded_topology "$bin" "$c" "$tmp"
  name=$case_name
  echo "ring_weights.sh: $name" >&2
  for coll in allgather reducescatter allreduce broadcast; do
    "$bin/coll-plan" generate --topo "$tmp/t.json" --coll $coll --size 1G --algo ring -o "$tmp/w.json" >/dev/null 2>&1
    weights=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['params'].get('weights', '-'))" "$tmp/w.json")
    bound=$("$bin/coll-plan" simulate "$tmp/w.json" --topo "$tmp/t.json" | awk '$1 == "bound" {print $2; exit}')
    equal "$tmp/w.json" "$tmp/e.json"
    w=$(predicted "$tmp/w.json" "$tmp/t.json")
    e=$(predicted "$tmp/e.json" "$tmp/t.json")
    auto=$("$bin/coll-plan" generate --topo "$tmp/t.json" --coll $coll --size 1G --algo auto -o "$tmp/a.json" 2>&1 |
      awk '$1 == "predicted" {t = $2} / on [0-9]+ ranks/ && !algo {algo = $1} END {print algo " " t}')
    rows+=("$(printf '| %s | %s | %.1f | %.1f (%.3f) | %.1f (%.3f) | %.3f | %s | %s |' "$name" "$coll" "$bound" "$e" "$(echo "$e / $bound" | bc -l)" \
      "$w" "$(echo "$w / $bound" | bc -l)" "$(echo "$w / $e" | bc -l)" "$weights" "$auto")")
  done
done

{
  echo "# Weighted ring channels on degraded clusters (\`bench/ring_weights.sh\`)"
  echo
  echo "$(date -u +%Y-%m-%d), commit $(git -C "$root" rev-parse --short HEAD), $(nproc) cores. Each cluster is \`coll-topo synth --node X --nodes N\`"
  echo "(default fabric) with one what-if of \`coll-plan shell\` saved as a topology; \`coll-plan generate --algo ring --size 1G\` at"
  echo "default options (the shares it lays out), simulated (Queue); \"equal shares\" is the same plan (orders, channels,"
  echo "pipeline) with param \`weights\` removed. Times in us, x the bound in brackets; auto: \`--algo auto\`'s algorithm and"
  echo "its predicted time. A ring that crosses the slowed link (or, on a host short of a GPU, another rail's NIC) sets the"
  echo "pace of every ring when shares are equal."
  echo
  echo "| cluster | collective | bound | ring, equal shares | ring, weighted | weighted / equal | weights | auto |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
} >"$out"
echo "wrote $out" >&2
