#!/usr/bin/env bash
# coll-run's mpi backend against Open MPI's own collectives, measured in the same run (issue 4):
# mpirun -np 4 on this machine, every applicable plan for AllReduce, AllGather and ReduceScatter,
# the best plan per size against the best of the native collective's measurements at that size.
# Targets: time ratio <= 1.0 from 4 MiB up, <= 1.5 at 64 KiB and below. Four ranks share two
# cores, so scheduling noise is large: the whole run is repeated (COLLKIT_BENCH_REPEATS, default 5)
# and each side keeps its best time per size.
# Usage: bench/coll_run_mpi.sh [build/bin] [out.txt]
set -euo pipefail
bin=${1:-build/bin}
out=${2:-results/coll_run_mpi.txt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for rep in $(seq "${COLLKIT_BENCH_REPEATS:-5}"); do
  for coll in allreduce allgather reducescatter; do
    mpirun --oversubscribe -np 4 "$bin/coll-run" --coll "$coll" --algo all -b 1K -e 16M -f 4 -n 20 -w 5 -c 1 \
      --json "$tmp/$coll.$rep.json" >"$tmp/$coll.$rep.txt"
  done
done
python3 - "$tmp" "$out" "$(nproc)" <<'PY'
import json, sys, os, datetime
tmp, out, cores = sys.argv[1], sys.argv[2], sys.argv[3]
import glob
lines = [f"# coll-run mpi backend vs Open MPI, mpirun -np 4 on {cores} cores, {datetime.date.today()}",
         "# ratio = best plan's out-of-place time / best native out-of-place time at that size, over every",
         "# algorithm and repeat (lower is better); every row checked: #wrong must be 0",
         "# targets: <= 1.0 from 4 MiB up, <= 1.5 at 64 KiB and below"]
verdict = True
for coll in ["allreduce", "allgather", "reducescatter"]:
    best, native = {}, {}
    wrong = 0
    for path in sorted(glob.glob(os.path.join(tmp, coll + ".*.json"))):
        j = json.load(open(path))
        wrong += j["total_wrong"]
        rows = [(t["algorithm"], r) for t in j["tables"] for r in t["rows"]]
        for algo, r in rows:
            b = r["bytes"]
            if r["out_of_place"] and (b not in best or r["out_of_place"]["time_us"] < best[b][1]):
                best[b] = (algo, r["out_of_place"]["time_us"])
            if r["native_out_of_place"]:
                native[b] = min(native.get(b, 1e30), r["native_out_of_place"]["time_us"])
    verdict &= wrong == 0
    lines.append(f"## {coll} ({j['library_version']}), wrong elements over all runs: {wrong}")
    lines.append(f"{'bytes':>10} {'best plan':>10} {'plan us':>10} {'native us':>10} {'ratio':>7} target")
    for b in sorted(best):
        algo, t = best[b]
        ratio = t / native[b]
        target = 1.0 if b >= 4 << 20 else (1.5 if b <= 64 << 10 else None)
        ok = "" if target is None else ("ok" if ratio <= target else "MISSED")
        verdict &= ok != "MISSED"
        lines.append(f"{b:>10} {algo:>10} {t:>10.1f} {native[b]:>10.1f} {ratio:>7.3f} {'' if target is None else '<= %.1f %s' % (target, ok)}")
lines.append("# all targets met" if verdict else "# some targets missed")
text = "\n".join(lines) + "\n"
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
open(out, "w").write(text)
print(text, end="")
PY
