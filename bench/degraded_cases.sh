# The degraded clusters bench/ring_weights.sh and bench/degraded.sh plan on (sourced by both):
# `coll-topo synth --node NODE --nodes N` (default fabric) with one what-if of `coll-plan shell`
# saved as a topology. Each case is "name|node|nodes|shell edit" (no edit: the healthy cluster).
degraded_cases=(
  "16 x dgx-h100, one NIC at half rate|dgx-h100|16|scale link node3/nic2 fabric/leaf2.0 bw 0.5"
  "16 x dgx-h100, one NIC at a quarter|dgx-h100|16|scale link node3/nic2 fabric/leaf2.0 bw 0.25"
  "16 x dgx-h100, one GPU gone|dgx-h100|16|fail vertex node5/gpu3"
  "4 x dgx-a100, one NIC at half rate|dgx-a100|4|scale link node1/nic5 fabric/leaf5.0 bw 0.5"
  "4 x mi300x, one NIC at half rate|mi300x|4|scale link node2/nic0 fabric/leaf0.0 bw 0.5"
)

# degraded_topology BIN CASE DIR: writes DIR/t.json, the case's cluster with its edit, and sets
# $case_name to the case's name.
degraded_topology() {
  local node nodes edit
  IFS='|' read -r case_name node nodes edit <<<"$2"
  "$1/coll-topo" synth --node "$node" --nodes "$nodes" -o "$3/base.json" 2>/dev/null
  if [ -n "$edit" ]; then
    printf 'load %s\n%s\nsave topo %s\n' "$3/base.json" "$edit" "$3/t.json" | "$1/coll-plan" shell --strict >/dev/null
  else
    cp "$3/base.json" "$3/t.json"
  fi
}
