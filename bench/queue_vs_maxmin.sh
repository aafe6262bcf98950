#!/usr/bin/env bash
# How far the Queue link model (the default, fast) stands from MaxMin (max-min fair sharing, the
# reference it approximates; docs/plan.md, "Link models") on the plans users generate: every
# preset at 1, 2 and 4 hosts (dgx1-v100 also at 8), the six collectives at 16 MiB and 1 GiB,
# `coll-plan generate` at default options for synth, direct, tree and hier (where each applies),
# then `coll-plan simulate` of that plan file under both models. With COLLKIT_BASELINE_BIN set (a
# bin/ of an older build), the same plan files are also simulated there under Queue, as a column
# beside. Writes the rows (CSV) and a summary: median, mean, 90th percentile and worst of
# |Queue / MaxMin - 1|, the rows furthest apart and those the baseline differs on most. About 15
# minutes on 2 cores. COLLKIT_QVM_SUMMARY=1: only the summary, from the CSV already written.
# Usage: bench/queue_vs_maxmin.sh [build/bin] [out.md]
set -euo pipefail
bin=${1:-build/bin}
out=${2:-results/queue_vs_maxmin.md}
base=${COLLKIT_BASELINE_BIN:-}
csv=${out%.md}.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
limit=${COLLKIT_MAXMIN_LIMIT:-120}  # seconds one MaxMin simulation may take

time_of() { grep -o 'time [0-9.]*' | head -1 | cut -d' ' -f2; }
[ -n "${COLLKIT_QVM_SUMMARY:-}" ] || {
echo "topology,hosts,collective,algorithm,size,bound_us,queue_us,maxmin_us,baseline_queue_us" > "$csv"
for th in dgx-a100:1 dgx-a100:2 dgx-h100:1 dgx-h100:2 dgx-h100:4 mi300x:1 mi300x:2 dgx1-v100:1 dgx1-v100:2 dgx1-v100:8 \
  pcie-8gpu:1 pcie-8gpu:2 pcie-8gpu:4 hgx-h200:1; do
  node=${th%%:*} hosts=${th##*:}
  topo="$tmp/$node-$hosts.json"
  "$bin/coll-topo" synth --node "$node" --nodes "$hosts" -o "$topo" > /dev/null 2>&1
  for coll in allgather reducescatter allreduce broadcast reduce alltoall; do
    for algo in synth direct tree hier; do
      for size in 16M 1G; do
        plan="$tmp/plan.json"
        "$bin/coll-plan" generate --topo "$topo" --coll "$coll" --size "$size" --algo "$algo" -o "$plan" > /dev/null 2>&1 || continue
        sim=$("$bin/coll-plan" simulate "$plan" --topo "$topo")
        queue=$(time_of <<< "$sim")
        bound=$(grep -o 'bound [0-9.]*' <<< "$sim" | head -1 | cut -d' ' -f2)
        maxmin=$(timeout "$limit" "$bin/coll-plan" simulate "$plan" --topo "$topo" --model maxmin | time_of || true)
        [ -n "$maxmin" ] || continue
        baseline=""
        [ -z "$base" ] || baseline=$("$base/coll-plan" simulate "$plan" --topo "$topo" | time_of || true)
        echo "$node,$hosts,$coll,$algo,$size,$bound,$queue,$maxmin,$baseline" >> "$csv"
      done
    done
  done
done
}

python3 - "$csv" "$out" "$(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo unknown)" "$base" << 'PYEOF'
import csv, statistics, sys
path, out, commit, base = sys.argv[1:5]
rows = list(csv.DictReader(open(path)))
def off(r, col):
    return abs(float(r[col]) / float(r["maxmin_us"]) - 1)
def summary(col, name):
    v = sorted(off(r, col) for r in rows if r[col])
    if not v:
        return None
    pct = lambda x: f"{100 * x:.2f}%"
    return (f"| {name} | {len(v)} | {pct(statistics.median(v))} | {pct(statistics.mean(v))} | {pct(v[int(0.9 * len(v))])} | "
            f"{pct(v[-1])} | {sum(x > 0.02 for x in v)} | {sum(x > 0.05 for x in v)} |")
lines = [
    "# The Queue link model against MaxMin (`bench/queue_vs_maxmin.sh`)", "",
    f"Written by `bench/queue_vs_maxmin.sh` (commit {commit}): each plan generated at default options, then simulated"
    " under Queue (the default) and MaxMin (max-min fair sharing, the reference Queue approximates). "
    "Rows: every preset at 1, 2 and 4 hosts (dgx1-v100 also 8), six collectives, synth / direct / tree / hier, "
    f"16 MiB and 1 GiB; {path.split('/')[-1]} holds them.", "",
    "| Queue | plans | median off MaxMin | mean | 90th percentile | worst | over 2% | over 5% |", "|---|---|---|---|---|---|---|---|",
]
lines.append(summary("queue_us", "this build"))
if base:
    s = summary("baseline_queue_us", f"baseline ({base})")
    if s:
        lines.append(s)
lines += ["", "Furthest apart (Queue / MaxMin):", "", "| topology | collective | algorithm | size | Queue / MaxMin | baseline Queue / MaxMin |", "|---|---|---|---|---|---|"]
for r in sorted(rows, key=lambda r: -off(r, "queue_us"))[:15]:
    b = f"{float(r['baseline_queue_us']) / float(r['maxmin_us']):.3f}" if r["baseline_queue_us"] else "-"
    lines.append(f"| {r['topology']} x{r['hosts']} | {r['collective']} | {r['algorithm']} | {r['size']} | "
                 f"{float(r['queue_us']) / float(r['maxmin_us']):.3f} | {b} |")
changed = [r for r in rows if r["baseline_queue_us"]]
changed.sort(key=lambda r: off(r, "queue_us") - off(r, "baseline_queue_us"))
if changed:
    lines += ["", "Changed most from the baseline (nearer MaxMin first, then further):", "",
              "| topology | collective | algorithm | size | baseline Queue / MaxMin | Queue / MaxMin |", "|---|---|---|---|---|---|"]
    for r in changed[:12] + [r for r in changed[-6:] if off(r, "queue_us") > off(r, "baseline_queue_us")]:
        lines.append(f"| {r['topology']} x{r['hosts']} | {r['collective']} | {r['algorithm']} | {r['size']} | "
                     f"{float(r['baseline_queue_us']) / float(r['maxmin_us']):.3f} | {float(r['queue_us']) / float(r['maxmin_us']):.3f} |")
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PYEOF
