#!/usr/bin/env bash
# bench/overlap_ranking.py, the pair-by-pair ranking comparison bench/overlap_measured.sh reports:
# only pairs of distinct schedules measured apart beyond the noise are judged, and a prediction of
# two equal steps is a tie, never an agreement (a model that predicts every strategy alike orders
# no pair correctly).
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
out=$(COLLKIT_BENCH_DIR="$(cd "$(dirname "$0")/../../bench" && pwd)" python3 - <<'PY'
import os, sys
sys.path.insert(0, os.environ["COLLKIT_BENCH_DIR"])
from overlap_ranking import compare_pairs, describe, percentile

def row(name, schedule, predicted, measured):
    return {"name": name, "schedule": schedule, "predicted": predicted, "measured": measured}

checks = 0
def check(cond, what):
    global checks
    checks += 1
    print(("ok: " if cond else "FAIL: ") + what)

# Every strategy predicted alike, measured 10% and 20% apart: three distinct pairs, all ties.
flat = [row("none", "-", 100, 100), row("a", "a=2", 100, 110), row("b", "b=4", 100, 120)]
r = compare_pairs(flat, 0.02)
check((r["distinct"], r["correct"], r["tie"], r["reversed"]) == (3, 0, 3, 0), f"all predicted equal: 0 correct, 3 ties, got {r}")
check(describe(r).startswith("0/3 measured-distinct pairs ordered correctly"), "describe: " + describe(r))

# Predicted in the measured order: every pair correct; the other way: every pair reversed.
good = [row("none", "-", 90, 100), row("a", "a=2", 95, 110), row("b", "b=4", 99, 120)]
r = compare_pairs(good, 0.02)
check((r["distinct"], r["correct"]) == (3, 3), f"same order: 3/3, got {r}")
bad = [row("none", "-", 99, 100), row("a", "a=2", 95, 110), row("b", "b=4", 90, 120)]
r = compare_pairs(bad, 0.02)
check((r["distinct"], r["reversed"], r["correct"]) == (3, 3, 0), f"reversed order: 3 reversed, got {r}")

# Rows of one schedule are never a pair; rows measured within the noise are not judged, whatever the model says.
mixed = [row("none", "-", 100, 100), row("dp", "dp=25", 90, 101), row("auto", "dp=25", 90, 130), row("tp", "tp=2", 80, 130.5)]
r = compare_pairs(mixed, 0.02)
# pairs of distinct schedules: none-dp, none-auto, none-tp, dp-tp, auto-tp (dp-auto is one schedule)
check(r["pairs"] == 5, f"5 pairs of distinct schedules, got {r['pairs']}")
check(r["within"] == 2, f"none-dp (1%) and auto-tp (0.4%) within 2%: not judged, got {r['within']}")
# judged: none<auto (pred 100 vs 90: reversed), none<tp (100 vs 80: reversed), dp<tp (90 vs 80: reversed)
check((r["distinct"], r["reversed"], r["correct"]) == (3, 3, 0), f"3 judged, all reversed, got {r}")

# Nothing measured apart: no ranking claimed.
r = compare_pairs([row("none", "-", 100, 100), row("a", "a=2", 50, 101)], 0.02)
check(r["distinct"] == 0 and describe(r).startswith("no pair"), "nothing apart: " + describe(r))

# The noise threshold decides: 5% apart is distinct at 2%, within at 10%.
two = [row("none", "-", 100, 100), row("a", "a=2", 101, 105)]
check(compare_pairs(two, 0.02)["correct"] == 1 and compare_pairs(two, 0.10)["distinct"] == 0, "threshold 2% vs 10%")

check(percentile([1, 2, 3, 4, 5], 0.5) == 3 and abs(percentile([0, 10], 0.9) - 9) < 1e-12 and percentile([], 0.5) is None, "percentile")
print(f"checks: {checks}")
PY
) || { echo "$out"; bad "overlap_ranking.py did not run"; }
while IFS= read -r line; do
  case "$line" in
    ok:*) ok "${line#ok: }" ;;
    FAIL:*) bad "${line#FAIL: }" ;;
  esac
done <<<"$out"
# shellcheck disable=SC2154 # checks: counted by lib.sh's ok and bad
[ "$checks" -ge 9 ] || bad "only $checks checks ran"
finish
