#!/usr/bin/env bash
# The simulator's fidelity against measurements already recorded (by default the idle run at
# 8e4c6dd, results/fidelity_idle_8e4c6dd.md and its rows, written by bench/fidelity.sh on an idle
# machine; results/fidelity.md and results/fidelity_rows.csv are the latest run), with this build's
# model and fit: a model change judged without measuring again on a loaded machine. coll-run runs
# every row once (-n 1) only to get the plans it makes here; their times are replaced by the
# recorded ones. fidelity_replay fits the recorded calibration report again (shared-memory classes,
# reduction rate, cache, the timed plans' measured times), then `coll-plan compare` as
# fidelity.sh does. Prints compare's table; the last line has the median and worst |error|.
# COLLKIT_REPLAY_FIT_COLLS=allgather,reducescatter,allreduce fits the factors to those collectives' ring and rhd
# rows as recorded (not the report's timed plans): models compared on one measurement.
# COLLKIT_REPLAY_EXTRA="allreduce tree,..." adds those rows as recorded to the timed plans (fidelity_replay.cpp).
# Usage: bench/fidelity_replay.sh [build/bin] [fidelity.md] [fidelity_rows.csv]
set -euo pipefail
bin=${1:-build/bin}
md=${2:-results/fidelity_idle_8e4c6dd.md}
csv=${3:-results/fidelity_idle_8e4c6dd_rows.csv}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe -np 4 "$bin/coll-topo" discover --no-measure -o "$tmp/topo.json" >/dev/null
mpirun --oversubscribe -np 4 "$bin/coll-run" --coll allreduce,allgather,reducescatter,alltoall \
  --algo ring,tree,rd,rhd,direct,bruck,pairwise,hier -b 64K -e 64M -f 4 -n 1 -w 0 -c 0 --no-baseline \
  --json "$tmp/plans.json" >"$tmp/run.txt" 2>&1 || { cat "$tmp/run.txt"; exit 1; }
python3 - "$tmp/plans.json" "$csv" "$tmp/run.json" <<'PY'
import csv, json, sys
plans, rows_csv, out = sys.argv[1:4]
measured = {}
for r in csv.DictReader(open(rows_csv)):
    measured[(r["collective"], r["algorithm"], r["size"])] = float(r.get("measured us") or r["measured_us"])
def size(b):
    return f"{b >> 20}M" if b >= 1 << 20 else f"{b >> 10}K"
d = json.load(open(plans))
n = 0
for t in d["tables"]:
    t["rows"] = [x for x in t["rows"] if (t["collective"], x["algorithm"], size(x["bytes"])) in measured and x["out_of_place"]]
    for x in t["rows"]:
        x["out_of_place"]["time_us"] = measured[(t["collective"], x["algorithm"], size(x["bytes"]))]
        n += 1
if n != len(measured):
    sys.exit(f"fidelity_replay.sh: {n} of the {len(measured)} recorded rows found in coll-run's plans")
json.dump(d, open(out, "w"))
PY
"$bin/fidelity_replay" "$tmp/topo.json" "$tmp/run.json" "$md" "$tmp/cal.json" >&2
"$bin/coll-plan" compare --results "$tmp/run.json" --topo "$tmp/cal.json"
