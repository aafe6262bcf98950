#!/usr/bin/env bash
# The simulator against measurement (issue #13's fidelity goal): mpirun -np 4 coll-run on this host's
# discovered topology (the path users take: no --topo, so coll-run discovers the host and predicts
# every plan on it), ring, tree, rd, rhd, direct, bruck, pairwise and hier x AllReduce, AllGather,
# ReduceScatter and AlltoAll x 64K-64M; then `coll-plan compare` per collective and over all rows:
# median and worst |error| of the predicted time against the measured out-of-place time.
# Goal: median <= 10%, worst <= 30% after calibration; the figures before it are recorded too.
# Usage: bench/fidelity.sh [build/bin] [out.md]
set -euo pipefail
bin=${1:-build/bin}
out=${2:-results/fidelity.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
algos=ring,tree,rd,rhd,direct,bruck,pairwise,hier
colls=allreduce,allgather,reducescatter,alltoall
start=$(date +%s)
mpirun --oversubscribe -np 4 "$bin/coll-run" --coll "$colls" --algo "$algos" -b 64K -e 64M -f 4 -n 10 -w 2 -c 1 --no-baseline \
  --json "$tmp/run.json" >"$tmp/run.txt" 2>&1 || { cat "$tmp/run.txt"; exit 1; }
"$bin/coll-plan" compare --results "$tmp/run.json" >"$tmp/compare.txt"
python3 - "$tmp" "$out" "$(nproc)" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(( $(date +%s) - start ))" <<'PY'
import datetime, json, re, statistics, sys
tmp, out, cores, commit, secs = sys.argv[1:6]
rows = []
for line in open(f"{tmp}/compare.txt"):
    if line.startswith("#") or not line.strip():
        continue
    coll, algo, typ, size, meas, pred, err = line.split()
    rows.append((coll, algo, size, float(meas), float(pred), float(err)))
def summary(rs):
    e = sorted(abs(r[5]) for r in rs)
    return statistics.median(e), e[-1], sum(1 for r in rs if r[5] < 0) / len(rs) * 100
run = json.load(open(f"{tmp}/run.json"))
topo = run.get("topology", {})
lines = [f"# Simulator fidelity on this host: predicted vs measured", "",
         f"{datetime.date.today()}, commit {commit}, {cores} cores, `mpirun -np 4`, {secs} s. Written by `bench/fidelity.sh`:",
         "", "```", f"mpirun --oversubscribe -np 4 coll-run --coll allreduce,allgather,reducescatter,alltoall \\",
         "  --algo ring,tree,rd,rhd,direct,bruck,pairwise,hier -b 64K -e 64M -f 4 -n 10 -w 2 -c 1 --no-baseline --json run.json",
         "coll-plan compare --results run.json", "```", "",
         "coll-run discovers the host (no `--topo`: the path users take) and predicts each plan on it; error =",
         "(predicted - measured) / measured of the out-of-place time. **Before calibration**: the topology has",
         "hwloc's figures and the copy bandwidth `discover` measures (one thread's memcpy); `coll-run calibrate`",
         "does not exist yet.", "",
         "| collective | rows | median \\|error\\| | worst \\|error\\| | rows predicted too fast |", "| --- | --- | --- | --- | --- |"]
for coll in sorted({r[0] for r in rows}):
    rs = [r for r in rows if r[0] == coll]
    m, w, fast = summary(rs)
    lines.append(f"| {coll} | {len(rs)} | {m:.1f}% | {w:.1f}% | {fast:.0f}% |")
m, w, fast = summary(rows)
lines.append(f"| **all** | {len(rows)} | **{m:.1f}%** | **{w:.1f}%** | {fast:.0f}% |")
lines += ["", "Goal (issue #13): median at most 10%, worst at most 30%, after calibration.", "",
          "Per algorithm (all collectives):", "", "| algorithm | rows | median \\|error\\| | worst \\|error\\| |", "| --- | --- | --- | --- |"]
for algo in sorted({r[1] for r in rows}):
    rs = [r for r in rows if r[1] == algo]
    m, w, _ = summary(rs)
    lines.append(f"| {algo} | {len(rs)} | {m:.1f}% | {w:.1f}% |")
lines += ["", "Every row:", "", "```"] + [l.rstrip() for l in open(f"{tmp}/compare.txt")] + ["```", ""]
open(out, "w").write("\n".join(lines))
print(f"wrote {out}: {len(rows)} rows, median |error| {summary(rows)[0]:.1f}%")
PY
