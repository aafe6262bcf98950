#!/usr/bin/env bash
# synth's host share (docs/synth.md "The PCIe path"): AllGather, ReduceScatter, AllReduce,
# Broadcast and Reduce (or $COLLKIT_SYNTH_HOST_COLLS, space-separated) at 1 GiB, `coll-plan generate --algo synth` with default options, simulated under the Queue and
# MaxMin link models, time over the bound (AllReduce: over its RS+AG-class bound), for a baseline
# build and this one side by side in one run, on the presets at 1 and 2 hosts.
# Usage: bench/synth_host.sh BASE_BIN NEW_BIN [presets...]   (writes a markdown table to stdout)
set -euo pipefail
base=$1
new=$2
shift 2
nodes=("$@")
[ ${#nodes[@]} -gt 0 ] || nodes=(dgx-a100 dgx-h100 mi300x dgx1-v100)
read -r -a colls <<<"${COLLKIT_SYNTH_HOST_COLLS:-allgather reducescatter allreduce broadcast reduce}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ratio LABEL BIN TOPO COLL MODEL: simulated time over the bound of the plan BIN's synth makes
# (kept as $tmp/LABEL-COLL.json for the topology at hand).
ratio() {
  local bin=$2 topo=$3 coll=$4 model=$5 plan="$tmp/$1-$4.json"
  [ -f "$plan" ] || "$bin/coll-plan" generate --topo "$topo" --coll "$coll" --size 1G --algo synth -o "$plan" >/dev/null 2>&1
  "$bin/coll-plan" simulate "$plan" --topo "$topo" --model "$model" | awk -v coll="$coll" '
    /^  time /{t=$2} /^  bound [0-9]/{b=$2} /RS\+AG/{for(i=1;i<=NF;i++) if($i ~ /^[0-9.]+$/){r=$i; break}}
    END{if (coll=="allreduce" && r>0) b=r; printf "%.3f", t/b}'
}

share() {
  python3 -c "import json,sys; q=json.load(open(sys.argv[1]))['params']; h=int(q.get('host_chunks',0)); k=int(q.get('channels',1)); m=int(q.get('pipeline',16)); print(f'{h}/{k*m+h}' if h else '-')" "$1"
}

echo "| topology | collective | before Queue | before MaxMin | after Queue | after MaxMin | host share (chunks a root) |"
echo "|---|---|---|---|---|---|---|"
for node in "${nodes[@]}"; do
  for n in 1 2; do
    topo="$tmp/$node-x$n.json"
    "$new/coll-topo" synth --node "$node" --nodes "$n" -o "$topo" >/dev/null 2>&1
    rm -f "$tmp"/before-*.json "$tmp"/after-*.json
    for coll in "${colls[@]}"; do
      bq=$(ratio before "$base" "$topo" $coll queue)
      bm=$(ratio before "$base" "$topo" $coll maxmin)
      nq=$(ratio after "$new" "$topo" $coll queue)
      nm=$(ratio after "$new" "$topo" $coll maxmin)
      echo "| $node x$n | $coll | $bq | $bm | $nq | $nm | $(share "$tmp/after-$coll.json") |"
    done
  done
done
