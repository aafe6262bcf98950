#!/usr/bin/env bash
# Calibration and adaptation across real hosts (issues 12 and 13), on the testbed of
# scripts/testbed.sh (network namespaces on this machine; docs/testbed.md):
#  1. Calibration with two real link classes: 2 hosts x 2 ranks, 1 Gbit/s links (tc). coll-topo
#     discover, coll-run calibrate (shared memory inside a host, TCP between hosts), then ring, rhd,
#     direct and hier x AllReduce, AllGather, ReduceScatter x 64K-16M measured, and `coll-plan compare`
#     of the simulator's predictions against them before calibration (the discovered topology) and
#     after (the calibrated one).
#  2. Adaptation to a real slow link: 4 hosts x 1 rank, links unshaped. coll-run adapt first as is
#     (healthy: the plain ring's time), then with the traffic between hosts 1 and 2 slowed by tc
#     (`testbed.sh pair ckh1 ckh2 RATE`: no injection, the network itself is slow): the probe must
#     name ranks 0-1, the adapted ring avoids them; healthy / degraded / adapted times and the share
#     of the loss recovered.
# Usage: bench/testbed_adapt.sh [build/bin] [out.md]   (root: it makes network namespaces)
# COLLKIT_BENCH_PAIR_RATE (default 200mbit): the slow pair's rate in part 2, well below what unshaped
# TCP between the namespaces reaches here (bound by the shared cores, not by a link rate).
set -euo pipefail
# One testbed per machine (fixed namespace names): the whole script runs holding it, after waiting
# up to 30 minutes for a session in another checkout (its ctest or bench) to end (exit 3 then).
# flock -o: the lock stays with flock itself, not with daemons the script leaves behind.
[ -n "${COLLKIT_TESTBED_LOCKED:-}" ] ||
  exec env COLLKIT_TESTBED_LOCKED=1 flock -o -w 1800 -E 3 /tmp/collkit-testbed.lock bash "$0" "$@"
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$root/build/bin}" && pwd)
out=${2:-$root/results/testbed_adapt.md}
tb="$root/scripts/testbed.sh"
why=$("$tb" check) || { echo "testbed_adapt.sh: $why" >&2; exit 2; }
tmp=$(mktemp -d)
export COLLKIT_TESTBED_DIR="$tmp/testbed"
trap '"$tb" down >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
pair_rate=${COLLKIT_BENCH_PAIR_RATE:-200mbit}
start=$(date +%s)

echo "testbed_adapt.sh: 1. calibration, 2 hosts x 2 ranks at 1gbit" >&2
"$tb" up 2 --ranks-per-host 2 --link 1gbit >/dev/null
mpi2() { timeout 1800 "$tb" mpirun --host ckh1:2,ckh2:2 "$@"; }
mpi2 "$bin/coll-topo" discover --ranks-per-host 2 --fabric single-switch -o "$tmp/cluster.json" 2>"$tmp/discover.txt"
mpi2 "$bin/coll-run" calibrate --topo "$tmp/cluster.json" -o "$tmp/cal.json" 2>"$tmp/cal.txt" || { cat "$tmp/cal.txt"; exit 1; }
mpi2 "$bin/coll-run" --topo "$tmp/cluster.json" --coll allreduce,allgather,reducescatter --algo ring,rhd,direct,hier \
  -b 64K -e 16M -f 4 -n 5 -w 1 -c 1 --no-baseline --json "$tmp/run.json" >"$tmp/run.txt" 2>&1 || { tail "$tmp/run.txt"; exit 1; }
"$bin/coll-plan" compare --results "$tmp/run.json" >"$tmp/compare.txt"
"$bin/coll-plan" compare --results "$tmp/run.json" --topo "$tmp/cal.json" >"$tmp/compare_cal.txt"
"$tb" down

echo "testbed_adapt.sh: 2. adaptation, 4 hosts x 1 rank, the pair ckh1-ckh2 slowed to $pair_rate" >&2
"$tb" up 4 --ranks-per-host 1 >/dev/null
mpi4() { timeout 1800 "$tb" mpirun --host ckh1:1,ckh2:1,ckh3:1,ckh4:1 "$@"; }
adapt_args=(adapt --detect probe --coll allreduce -b 1M -e 16M -f 4 -n 10 -w 2)
mpi4 "$bin/coll-run" "${adapt_args[@]}" >"$tmp/healthy.txt" 2>&1 || { cat "$tmp/healthy.txt"; exit 1; }
"$tb" pair ckh1 ckh2 "$pair_rate"
mpi4 "$bin/coll-run" "${adapt_args[@]}" >"$tmp/slow.txt" 2>&1 || { cat "$tmp/slow.txt"; exit 1; }
"$tb" down

python3 - "$tmp" "$out" "$(nproc)" "$(git -C "$root" rev-parse --short HEAD)" "$(($(date +%s) - start))" "$pair_rate" "${adapt_args[*]}" <<'PY'
import datetime, json, platform, statistics, sys
tmp, out, cores, commit, secs, pair_rate, adapt_args = sys.argv[1:8]

def compare(name):
    rows = []
    for line in open(f"{tmp}/{name}"):
        if line.startswith("#") or not line.strip():
            continue
        coll, algo, typ, size, meas, pred, err = line.split()
        rows.append((coll, algo, size, float(meas), float(pred), float(err)))
    return rows

def summary(rs):
    e = sorted(abs(r[5]) for r in rs)
    return statistics.median(e), e[-1]

def adapt(name):
    text = open(f"{tmp}/{name}").read().splitlines()
    rows, found, order = {}, "", ""
    for l in text:
        if l.startswith("# slow pairs found:"):
            found = l.split(":", 1)[1].strip()
        elif l.startswith("# adapted ring order:"):
            order = l.split(":", 1)[1].strip()
        elif l.strip() and not l.startswith("#") and len(l.split()) >= 4:
            f = l.split()
            try:
                rows[f[0]] = (float(f[1]), float(f[2]), float(f[3]))
            except ValueError:
                pass
    return rows, found, order, [l for l in text if l.startswith("# probe")]

before, after = compare("compare.txt"), compare("compare_cal.txt")
lines = ["# Calibration and adaptation across hosts (the testbed)", "",
         f"{datetime.date.today()}, commit {commit}, {platform.node()} ({cores} cores, kernel {platform.release()}), {secs} s in all; "
         "generated by `bench/testbed_adapt.sh`. The hosts are network namespaces on this machine "
         "(`scripts/testbed.sh`, docs/testbed.md): the network between them is real (TCP over tc-shaped veths), "
         "the cores are shared.", "",
         "## 1. Calibration with two real link classes", "",
         "2 hosts x 2 ranks, 1 Gbit/s links: shared memory inside a host, TCP between hosts.", "", "```",
         "scripts/testbed.sh up 2 --ranks-per-host 2 --link 1gbit",
         "scripts/testbed.sh mpirun --host ckh1:2,ckh2:2 coll-topo discover --ranks-per-host 2 --fabric single-switch -o cluster.json",
         "scripts/testbed.sh mpirun --host ckh1:2,ckh2:2 coll-run calibrate --topo cluster.json -o cal.json",
         "scripts/testbed.sh mpirun --host ckh1:2,ckh2:2 coll-run --topo cluster.json --coll allreduce,allgather,reducescatter \\",
         "  --algo ring,rhd,direct,hier -b 64K -e 16M -f 4 -n 5 -w 1 -c 1 --no-baseline --json run.json",
         "coll-plan compare --results run.json                   # before: predicted on the discovered cluster",
         "coll-plan compare --results run.json --topo cal.json   # after: on the calibrated one", "```", "",
         "| collective | rows | before: median \\|error\\| | worst | after: median \\|error\\| | worst |", "|---|---|---|---|---|---|"]
for coll in sorted({r[0] for r in before}) + ["all"]:
    b = [r for r in before if coll in (r[0], "all")]
    a = [r for r in after if coll in (r[0], "all")]
    (bm, bw), (am, aw) = summary(b), summary(a)
    lines.append(f"| {'**all**' if coll == 'all' else coll} | {len(b)} | {bm:.1f}% | {bw:.1f}% | {am:.1f}% | {aw:.1f}% |")
lines += ["", "Per algorithm after calibration:", "", "| algorithm | rows | median \\|error\\| | worst |", "|---|---|---|---|"]
for algo in sorted({r[1] for r in after}):
    m, w = summary([r for r in after if r[1] == algo])
    lines.append(f"| {algo} | {len([r for r in after if r[1] == algo])} | {m:.1f}% | {w:.1f}% |")
lines += ["", "The calibration's report:", "", "```"] + [l.rstrip() for l in open(f"{tmp}/cal.txt")] + ["```", ""]

healthy, _, _, _ = adapt("healthy.txt")
slow, found, order, probe = adapt("slow.txt")
lines += ["## 2. Adaptation to a real slow link", "",
          f"4 hosts x 1 rank, links unshaped; then the traffic between hosts ckh1 and ckh2 (ranks 0 and 1) slowed to "
          f"{pair_rate} both ways by tc, with no injection: the probe measures the network as it is.", "", "```",
          "scripts/testbed.sh up 4 --ranks-per-host 1",
          f"scripts/testbed.sh mpirun --host ckh1:1,ckh2:1,ckh3:1,ckh4:1 coll-run {adapt_args}   # healthy",
          f"scripts/testbed.sh pair ckh1 ckh2 {pair_rate}",
          f"scripts/testbed.sh mpirun --host ckh1:1,ckh2:1,ckh3:1,ckh4:1 coll-run {adapt_args}   # degraded, adapted",
          "```", "", f"Slow pairs the probe found: **{found}**; adapted ring order: **{order}** (the plain ring is 0,1,2,3).", "",
          "```"] + probe + ["```", "",
          "| size | healthy us | degraded us | adapted us | loss | recovered |", "|---|---|---|---|---|---|"]
for size in healthy:
    if size not in slow:
        continue
    h = healthy[size][0]
    d, a = slow[size][0], slow[size][2]
    rec = (d - a) / (d - h) * 100 if d > 1.1 * h else None
    lines.append(f"| {size} | {h:.0f} | {d:.0f} | {a:.0f} | {d / h:.2f}x | {'%.0f%%' % rec if rec is not None else '(no loss)'} |")
lines += ["", "healthy: the plain ring before the pair was slowed (the first run's healthy column); degraded and adapted: "
          "the plain and the adapted ring with the pair slow (the second run, whose \"healthy\" and \"degraded\" "
          "columns both run on the slow network, since nothing is injected).", ""]
open(out, "w").write("\n".join(lines))
print("\n".join(lines))
PY
