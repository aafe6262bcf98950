#!/usr/bin/env bash
# What `auto` answers on degraded clusters (a NIC slower than its rail's others, a GPU gone), on the
# path users take: `coll-topo synth`, a what-if of `coll-plan shell` saved as a topology, then
# `coll-plan generate --algo auto --size 1G` for each collective: its choice, its predicted time
# over the bound and the CPU seconds it took, beside COLLKIT_BASELINE_BIN's build on the same
# topology (run one after the other). Then `--algo synth` (trees by rails with the shares it lays
# out: param tree_chunks for Broadcast and Reduce, tree_units for every rank's trees) beside the
# same plan with equal shares, simulated on the same topology. Predictions of the simulator (Queue), no
# clock read but the CPU seconds.
#
# Usage: COLLKIT_BASELINE_BIN=/old/build/bin bench/degraded.sh [build/bin] [out.md]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$root/build/bin}" && pwd)
out=${2:-$root/results/degraded.md}
base=${COLLKIT_BASELINE_BIN:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# auto BIN TOPO COLL: "algorithm predicted_us cpu_s" of `generate --algo auto`.
auto() {
  /usr/bin/time -f '%U %S' -o "$tmp/cpu" "$1/coll-plan" generate --topo "$2" --coll "$3" --size 1G --algo auto -o "$tmp/a.json" >"$tmp/a.txt" 2>&1
  python3 - "$tmp/a.json" "$tmp/cpu" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
u, s = open(sys.argv[2]).read().split()[-2:]
print(j["algorithm"], j["predicted_us"], float(u) + float(s))
EOF
}
# predicted PLAN TOPO: the simulated time in us.
predicted() { "$bin/coll-plan" simulate "$1" --topo "$2" | awk '$1 == "time" {print $2}'; }

auto_rows=()
synth_rows=()
source "$root/bench/degraded_cases.sh"
for c in "${degraded_cases[@]}" \
  "128 x dgx-h100 (1024 GPUs), one NIC at half rate|dgx-h100|128|scale link node3/nic2 fabric/leaf2.0 bw 0.5" \
  "128 x dgx-h100 (1024 GPUs), one GPU gone|dgx-h100|128|fail vertex node5/gpu3"; do
  degraded_topology "$bin" "$c" "$tmp"
  name=$case_name
  echo "degraded.sh: $name" >&2
  for coll in allgather reducescatter allreduce broadcast reduce; do
    read -r algo us cpu <<<"$(auto "$bin" "$tmp/t.json" $coll)"
    bound=$("$bin/coll-plan" simulate "$tmp/a.json" --topo "$tmp/t.json" | awk '$1 == "bound" {print $2; exit}')
    before="-"
    if [ -n "$base" ]; then
      read -r balgo bus bcpu <<<"$(auto "$base" "$tmp/t.json" $coll)"
      before=$(printf '%s %.1f (%.3f), %.1f s' "$balgo" "$bus" "$(echo "$bus / $bound" | bc -l)" "$bcpu")
    fi
    auto_rows+=("$(printf '| %s | %s | %.1f | %s | %s %.1f (%.3f), %.1f s |' "$name" "$coll" "$bound" "$before" "$algo" "$us" \
      "$(echo "$us / $bound" | bc -l)" "$cpu")")
    if ! "$bin/coll-plan" generate --topo "$tmp/t.json" --coll $coll --size 1G --algo synth -o "$tmp/s.json" >"$tmp/s.txt" 2>&1; then
      synth_rows+=("| $name | $coll | refused: $(grep -o 'error: .*' "$tmp/s.txt" | cut -c8-90)... | | | |")
      continue
    fi
    # Equal shares: one root's trees without tree_chunks (k m chunks, m each); every rank's with
    # each tree a k-th of its root's units (the same buffers). Shares: one root's, or rank 0's.
    shares=$(python3 - "$tmp/s.json" "$tmp/e.json" <<'EOF'
import json, sys
plan = json.load(open(sys.argv[1]))
params = plan["params"]
shares = params.pop("tree_chunks", None)
if "tree_units" in params:
    units = [int(u) for u in params["tree_units"].split(",")]
    k = int(params["channels"])
    shares = ",".join(map(str, units[:k])) + " units (rank 0's)"
    params["tree_units"] = ",".join([str(sum(units[:k]) // k)] * len(units))
json.dump(plan, open(sys.argv[2], "w"))
print(shares or "-")
EOF
)
    w=$(predicted "$tmp/s.json" "$tmp/t.json")
    e=$(predicted "$tmp/e.json" "$tmp/t.json")
    synth_rows+=("$(printf '| %s | %s | %.1f (%.3f) | %.1f (%.3f) | %.3f | %s |' "$name" "$coll" "$e" "$(echo "$e / $bound" | bc -l)" \
      "$w" "$(echo "$w / $bound" | bc -l)" "$(echo "$w / $e" | bc -l)" "$shares")")
  done
done

{
  echo "# auto on degraded clusters (\`bench/degraded.sh\`)"
  echo
  echo "$(date -u +%Y-%m-%d), commit $(git -C "$root" rev-parse --short HEAD), $(nproc) cores. Each cluster is \`coll-topo synth --node X --nodes N\`"
  echo "(default fabric) with one what-if of \`coll-plan shell\` saved as a topology; \`coll-plan generate --algo auto --size 1G\`:"
  echo "its algorithm, predicted time in us (x the bound) and CPU seconds (user + system), this build against"
  if [ -n "$base" ]; then echo "the baseline \`$base\` on the same topology. Predictions of the simulator (Queue)."; else echo "no baseline. Predictions of the simulator (Queue)."; fi
  echo
  echo "| cluster | collective | bound (us) | baseline auto | this build's auto |"
  echo "| --- | --- | --- | --- | --- |"
  printf '%s\n' "${auto_rows[@]}"
  echo
  echo "## Trees by rails with shares"
  echo
  echo "\`coll-plan generate --algo synth\` (1 GiB, its default layout) simulated, beside the same plan with equal shares"
  echo "(Broadcast, Reduce: param \`tree_chunks\` removed; AllGather, ReduceScatter, AllReduce where every rank's trees"
  echo "by rails have param \`tree_units\`: each tree a k-th of its root's units). Times in us, x the bound in brackets."
  echo
  echo "| cluster | collective | synth, equal shares | synth, shares | shares / equal | shares (chunks a tree) |"
  echo "| --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${synth_rows[@]}"
} >"$out"
echo "wrote $out" >&2
