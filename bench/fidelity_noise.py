#!/usr/bin/env python3
"""How well the measurements behind results/fidelity.md repeat: the floor under any model's error.

The simulator's error is judged against one measurement per row. When the same plan measured twice
on the same machine differs by x%, a model that predicted one of the two measurements exactly is
x% off the other: no model fitted to one run can be judged closer than the runs agree.

Usage: bench/fidelity_noise.py ROWS.csv [FIDELITY.md] [OTHER_ROWS.csv]
  ROWS.csv        the rows judged (results/fidelity_rows.csv, written by bench/fidelity.sh)
  FIDELITY.md     the same run's results/fidelity.md: its calibration report times ring and rhd
                  plans (the same plans as those rows) minutes before the rows were measured
  OTHER_ROWS.csv  another run's rows file (e.g. `git show d349f35:results/fidelity_rows.csv`)
For each source: the rows in common, and the median and worst |other / row - 1| (the error a
perfect model of the other measurement has against the rows), per collective and over all.
"""
import csv
import re
import statistics
import sys


def rows(path):
    out = {}
    for r in csv.DictReader(open(path)):
        t = r.get("measured us") or r.get("measured_us")
        out[(r["collective"], r["algorithm"], r["size"])] = float(t)
    return out


def timed(path):
    out = {}
    for line in open(path):
        m = re.match(r"^  (\S+) (\S+) (\S+): measured ([0-9.]+) us", line)
        if m:
            out[(m[1], m[2], m[3])] = float(m[4])
    return out


def report(name, judged, other):
    common = [k for k in judged if k in other]
    if not common:
        sys.exit(f"fidelity_noise.py: no rows in common with {name}")
    print(f"# {name}: {len(common)} rows in common; |other / row - 1| (a perfect model of the other run, judged on these rows)")
    print(f"{'collective':>14} {'rows':>5} {'median':>8} {'worst':>8}  worst row")
    for coll in sorted({k[0] for k in common}) + ["all"]:
        ks = [k for k in common if coll in (k[0], "all")]
        e = sorted((abs(other[k] / judged[k] - 1) * 100, k) for k in ks)
        med = statistics.median(x for x, _ in e)
        worst, wk = e[-1]
        over = sum(1 for x, _ in e if x > 30)
        print(f"{coll:>14} {len(ks):>5} {med:>7.1f}% {worst:>7.1f}%  {' '.join(wk)} ({over} rows over 30%)")


def main():
    if len(sys.argv) < 2 or len(sys.argv) > 4:
        sys.exit(__doc__.split("\n\n")[2])
    judged = rows(sys.argv[1])
    if len(sys.argv) >= 3:
        t = timed(sys.argv[2])
        if not t:
            sys.exit(f"fidelity_noise.py: {sys.argv[2]}: no calibration report with timed plans")
        report(f"calibrate's timed plans in {sys.argv[2]}", judged, t)
    if len(sys.argv) == 4:
        report(f"the rows of {sys.argv[3]}", judged, rows(sys.argv[3]))


main()
