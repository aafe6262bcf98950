#!/usr/bin/env bash
# The straggler plan against the ring under an injected slow rank (issue #13), A/B back to back:
# each repetition runs, in one coll-run each, the plain ring healthy, then ring and straggler with
# the rank slowed (--algo ring,straggler in one run: the two a moment apart). Medians of the
# repetitions; recovered = (ring degraded - straggler) / (ring degraded - ring healthy).
# straggler's default straggler is the last rank, so the last rank is the one slowed.
# Usage: bench/straggler_ab.sh [build/bin] [out.md]; COLLKIT_BENCH_REPEATS (default 5).
set -euo pipefail
bin=${1:-build/bin}
out=${2:-results/straggler_ab.md}
reps=${COLLKIT_BENCH_REPEATS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
load=$(cut -d' ' -f1-3 /proc/loadavg)
args=(--coll allreduce -b 1M -e 16M -f 4 -n 10 -w 3 -c 0 --no-discover --no-baseline)
for ((i = 0; i < reps; i++)); do
  mpirun --oversubscribe -np 4 "$bin/coll-run" "${args[@]}" --algo ring >"$tmp/healthy$i.txt"
  for f in 4 8; do
    mpirun --oversubscribe -np 4 "$bin/coll-run" "${args[@]}" --algo ring,straggler --inject "slow-rank=3:x$f" >"$tmp/x$f-$i.txt"
  done
done
python3 - "$tmp" "$reps" "$out" "$load" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(nproc)" "${args[*]}" <<'PY'
import re, statistics, sys, datetime
tmp, reps, out, load, commit, cores, args = sys.argv[1:8]
reps = int(reps)

def times(path):
    """{(algo, bytes): out-of-place us} from a coll-run table."""
    res, algo = {}, None
    for line in open(path):
        m = re.match(r"# \w+, plan (\w+),", line)
        if m:
            algo = m.group(1)
        f = line.split()
        if algo and len(f) > 6 and f[0].isdigit():
            res[(algo, int(f[0]))] = float(f[5])
    return res

rows = []
sizes = sorted({b for (_, b) in times(f"{tmp}/healthy0.txt")})
lines = ["# The straggler plan against the ring under a slow rank: A/B", "",
         f"{datetime.date.today()}, commit {commit}, {cores} cores, `mpirun -np 4` on one host; load average before the run: {load}.",
         f"Written by `bench/straggler_ab.sh`, {reps} repetitions, each:", "", "```",
         f"mpirun --oversubscribe -np 4 coll-run {args} --algo ring                                    # healthy",
         f"mpirun --oversubscribe -np 4 coll-run {args} --algo ring,straggler --inject slow-rank=3:x4",
         f"mpirun --oversubscribe -np 4 coll-run {args} --algo ring,straggler --inject slow-rank=3:x8", "```", "",
         "Medians over the repetitions of the out-of-place time (us); recovered = (ring degraded - straggler) / "
         "(ring degraded - ring healthy); the straggler plan around rank 3 (its default, the last rank). "
         "Per repetition in brackets.", "",
         "| fault | size | ring healthy | ring degraded | straggler degraded | straggler / ring degraded | recovered |",
         "|---|---|---|---|---|---|---|"]
for f in (4, 8):
    for b in sizes:
        h = [times(f"{tmp}/healthy{i}.txt")[("ring", b)] for i in range(reps)]
        d = [times(f"{tmp}/x{f}-{i}.txt")[("ring", b)] for i in range(reps)]
        s = [times(f"{tmp}/x{f}-{i}.txt")[("straggler", b)] for i in range(reps)]
        mh, md, ms = statistics.median(h), statistics.median(d), statistics.median(s)
        rec = f"{(md - ms) / (md - mh) * 100:.0f}%" if md > 1.1 * mh else "(no loss)"
        per = ", ".join(f"{x:.2f}" for x in (si / di for si, di in zip(s, d)))
        lines.append(f"| slow-rank=3:x{f} | {b >> 20}M | {mh:.0f} | {md:.0f} | {ms:.0f} | {ms / md:.2f} [{per}] | {rec} |")
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
