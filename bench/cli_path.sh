#!/usr/bin/env bash
# The default CLI path of issue 10, timed as users run it: `coll-topo synth`, then
# `coll-plan generate` (auto: its knob search included), `coll-plan verify` and `coll-plan simulate`
# of a 1 GiB AllReduce, each a new process, on 128 and 2048 DGX H100 (1024 and 16384 GPUs, the
# default rail-optimised fat-tree). Wall and CPU seconds and peak RSS per step from /usr/bin/time.
# Goals: 1024 GPUs under 2 s and 300 MB in all, 16384 under 10 s.
#
# Usage: bench/cli_path.sh [build/bin] [out.md]
#   COLLKIT_BASELINE_BIN=DIR adds bench/cpu_ab.sh's table: this build against the one in DIR.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$root/build/bin}" && pwd)
out=${2:-$root/results/cli_path.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

{
  echo "# The default CLI path: generate (auto) + verify + simulate, AllReduce 1 GiB (\`bench/cli_path.sh\`)"
  echo
  echo "Written by \`bench/cli_path.sh\` on $(date -u +%Y-%m-%d) (commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg) at the start)."
  echo "Each step is a new process, as a user runs it; wall and CPU (user + system) seconds, peak RSS."
  echo
  echo "| GPUs | step | wall (s) | CPU (s) | peak RSS (MB) | says |"
  echo "| --- | --- | --- | --- | --- | --- |"
} >"$tmp/out.md"

step() {  # step GPUS NAME COMMAND...
  local gpus=$1 name=$2
  shift 2
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
  read -r wall user sys rss <"$tmp/time"
  local says
  says=$(grep -h -E "auto chose|verified|time [0-9.]+ us" "$tmp/stdout" "$tmp/stderr" | head -1 | sed "s|$tmp/||g; s/^ *//; s/|/\\\\|/g" | cut -c1-140)
  printf '| %s | %s | %.2f | %.2f | %.0f | %s |\n' "$gpus" "$name" "$wall" "$(echo "$user + $sys" | bc -l)" "$(echo "$rss / 1024" | bc -l)" "$says" >>"$tmp/out.md"
  echo "$wall $(echo "$user + $sys" | bc -l) $rss"
}

for nodes in 128 2048; do
  gpus=$((nodes * 8))
  echo "cli_path: $gpus GPUs" >&2
  "$bin/coll-topo" synth --node dgx-h100 --nodes "$nodes" -o "$tmp/t.json" >/dev/null 2>&1
  read -r w1 c1 r1 < <(step "$gpus" "generate --algo auto" "$bin/coll-plan" generate --topo "$tmp/t.json" --coll allreduce --size 1G -o "$tmp/p.json")
  read -r w2 c2 r2 < <(step "$gpus" "verify" "$bin/coll-plan" verify "$tmp/p.json")
  read -r w3 c3 r3 < <(step "$gpus" "simulate" "$bin/coll-plan" simulate "$tmp/p.json" --topo "$tmp/t.json")
  max=$(printf '%s\n' "$r1" "$r2" "$r3" | sort -n | tail -1)
  printf '| %s | **all three** | **%.2f** | **%.2f** | **%.0f** (the largest) | |\n' "$gpus" "$(echo "$w1 + $w2 + $w3" | bc -l)" \
    "$(echo "$c1 + $c2 + $c3" | bc -l)" "$(echo "$max / 1024" | bc -l)" >>"$tmp/out.md"
done
cat >>"$tmp/out.md" <<'TEXT'

Before this session's changes (commit 3f33539, same machine, CPU seconds): at 16384 GPUs generate
(auto) took 15.4 s (a tree pipeline searched unfolded, nine folds at about 1 s), verify 23.6 s and
642 MB (hier's channels executed whole), simulate about 3.1 s: about 42 s in all. At 1024 GPUs
1.76 s. What changed: verify runs hier's channel 0 alone (its staggered channels are images of it),
auto does not search the knobs of candidates more than 4 x the best, the simulator's fold keeps
resource orbits in an array and stops growing its group once the representatives run little, and
routing finds a spine's equal-cost predecessors once per source (docs/plan.md).

Then (commits 246aea9..17d1d31, the same plans and predictions byte for byte, bench/same_outputs.sh):
the topology's connectivity check is one breadth-first search under the routes' rules instead of
every route from rank 0 (a load at 16384 GPUs: 0.82 -> 0.65 CPU s, 262 -> 219 MB), the fold's
rank-pair index hashes by the top bits and its used resources come from marks instead of a sort,
hier computes its host cycles once per layout, and the route cache looks a kept route up once.
The table "against the baseline" (when present) is bench/cpu_ab.sh's: baseline and new build
alternately in one run, CPU seconds, so that others' load falls on both.
TEXT
if [ -n "${COLLKIT_BASELINE_BIN:-}" ]; then
  {
    echo
    echo "## Against the baseline"
    echo
    "$root/bench/cpu_ab.sh" "$COLLKIT_BASELINE_BIN" "$bin" /dev/stdout
  } >>"$tmp/out.md"
fi
cp "$tmp/out.md" "$out"
echo "cli_path: wrote $out" >&2
