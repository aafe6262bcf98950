"""The predicted ranking of overlap strategies held against the measured one, pair by pair
(bench/overlap_measured.sh; tested by tests/integration/overlap_ranking.sh).

A ranking is only claimed where the measurement can tell two strategies apart: a pair of rows
counts when their schedules differ (rows of one schedule, `auto` choosing a single strategy's
knobs, differ by noise alone) and their measured steps differ by more than `noise` (slower /
faster - 1). The model orders such a pair correctly only when it predicts the measured faster one
strictly faster: a prediction that calls the two equal is a tie, not an agreement, so a model that
predicts every strategy alike orders no pair correctly.
"""

# Predicted steps closer than this (relative) are equal: the model is deterministic, so only a
# difference of rounding is a tie.
PREDICTED_EQUAL = 1e-6


def gap(a, b):
    """Slower / faster - 1 of two positive times."""
    lo, hi = min(a, b), max(a, b)
    return hi / lo - 1 if lo > 0 else float("inf")


def compare_pairs(rows, noise):
    """rows: dicts with name, schedule (anything comparable: rows with equal ones are skipped),
    predicted and measured step. Returns counts and the pairs by outcome:
    distinct (measured apart by more than noise), correct, tie (predicted equal), reversed, and
    within (measured within the noise; what the model claims about them is not judged)."""
    out = {"pairs": 0, "distinct": 0, "correct": 0, "tie": 0, "reversed": 0, "within": 0, "details": []}
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            if a["schedule"] == b["schedule"]:
                continue
            out["pairs"] += 1
            if gap(a["measured"], b["measured"]) <= noise:
                out["within"] += 1
                continue
            out["distinct"] += 1
            fast, slow = (a, b) if a["measured"] < b["measured"] else (b, a)
            if abs(fast["predicted"] / slow["predicted"] - 1) < PREDICTED_EQUAL:
                outcome = "tie"
            elif fast["predicted"] < slow["predicted"]:
                outcome = "correct"
            else:
                outcome = "reversed"
            out[outcome] += 1
            out["details"].append((fast["name"], slow["name"], gap(fast["measured"], slow["measured"]), outcome))
    return out


def percentile(values, q):
    """The q-quantile (0..1) of values by linear interpolation; None for no values."""
    v = sorted(values)
    if not v:
        return None
    x = q * (len(v) - 1)
    lo = int(x)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (x - lo)


def describe(result):
    """One line: how many measured-distinct pairs the model orders correctly, and how the rest fell."""
    d = result["distinct"]
    if d == 0:
        return f"no pair of distinct schedules measured apart beyond the noise ({result['pairs']} within it): no ranking to hold the model to"
    worse = ", ".join(f"{f} < {s} by {100 * g:.1f}% predicted {o}" for f, s, g, o in result["details"] if o != "correct")
    return (f"{result['correct']}/{d} measured-distinct pairs ordered correctly ({result['tie']} predicted equal, {result['reversed']} reversed"
            f"{'; ' + worse if worse else ''}); {result['within']} pair(s) within the noise not judged")
