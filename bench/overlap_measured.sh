#!/usr/bin/env bash
# coll-overlap run against its own model (issue 16): on this machine, mpirun -np 2 and 4, scaled
# Llama-3 8B / 70B TP and DP layouts and Mixtral EP. Per layout: a run with the uncalibrated model
# (this CPU's nominal peak x the default efficiencies, the GPU contention figure, plans simulated
# on the discovered host), and a run that calibrates first (`run --calibrate`: coll-overlap
# calibrate's measurements, in the same job) and predicts with the calibrated model. Every run
# measures each strategy's schedule (the one the model in force chose) and prints the model's step
# beside it; per run the |error| of every strategy, the median per layout and overall, and whether
# the predicted ranking of strategies equals the measured one.
# Usage: bench/overlap_measured.sh [build/bin] [results/overlap_measured.md]
# COLLKIT_BENCH_RAW=DIR keeps every run's JSON, text and calibration there (and `meta`: the
# script's time, load and steps); COLLKIT_BENCH_FROM=DIR runs nothing and summarises such a
# directory again (the same runs, the summary's code changed); with COLLKIT_BENCH_REPREDICT=1 as
# well, every prediction is made again by this build's model from the recorded runs' schedules and
# calibrations (`coll-overlap run --predict-only --schedules RUN.json [--calibration CAL.json]`):
# model changes judged on one set of measurements.
set -euo pipefail
bin=${1:-build/bin}
out=${2:-results/overlap_measured.md}
if [ -n "${COLLKIT_BENCH_FROM:-}" ]; then
  tmp=$COLLKIT_BENCH_FROM
else
  tmp=$(mktemp -d)
  trap '[ -n "${COLLKIT_BENCH_RAW:-}" ] && mkdir -p "$COLLKIT_BENCH_RAW" && cp "$tmp"/* "$COLLKIT_BENCH_RAW"/; rm -rf "$tmp"' EXIT
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
iters=${COLLKIT_BENCH_ITERS:-5}
start=$(date +%s)

# name|ranks|flags
layouts=(
  "llama3-8b TP2+SP|2|--model llama3-8b --tp 2 --sp --scale 16"
  "llama3-8b DP2|2|--model llama3-8b --dp 2 --scale 16"
  "llama3-70b TP2+SP|2|--model llama3-70b --tp 2 --sp --scale 32 --seq-len 8192"
  "llama3-70b DP2 ZeRO-3|2|--model llama3-70b --dp 2 --zero 3 --scale 32 --seq-len 8192"
  "mixtral-8x7b EP2|2|--model mixtral-8x7b --dp 2 --ep 2 --scale 16"
  "llama3-8b TP4+SP|4|--model llama3-8b --tp 4 --sp --scale 16"
  "llama3-70b DP4|4|--model llama3-70b --dp 4 --scale 32 --seq-len 8192"
  "mixtral-8x7b EP4|4|--model mixtral-8x7b --dp 4 --ep 4 --scale 16"
  "llama3-8b TP2+SP x DP2|4|--model llama3-8b --tp 2 --sp --dp 2 --scale 16"
)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
i=0
[ -n "${COLLKIT_BENCH_FROM:-}" ] && layouts=()
for entry in "${layouts[@]}"; do
  IFS='|' read -r name np flags <<<"$entry"
  i=$((i + 1))
  echo "$name (np $np)" >&2
  # shellcheck disable=SC2086
  mpirun --oversubscribe -np "$np" "$bin/coll-overlap" run $flags --iters "$iters" --json "$tmp/$i.before.json" >"$tmp/$i.before.txt"
  # The calibration measured in the same job, right before its runs (run --calibrate: what
  # coll-overlap calibrate measures), so that both meet the host's load of the same minute.
  # shellcheck disable=SC2086
  mpirun --oversubscribe -np "$np" "$bin/coll-overlap" run $flags --iters "$iters" --calibrate --calibration-out "$tmp/$i.cal.json" \
    --json "$tmp/$i.after.json" >"$tmp/$i.after.txt"
  echo "$name|$np|$flags" >"$tmp/$i.name"
done
elapsed=$(($(date +%s) - start))
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
if [ -n "${COLLKIT_BENCH_FROM:-}" ]; then
  IFS='|' read -r elapsed iters load_start load_end recorded <"$tmp/meta"
  layouts=("$tmp"/*.name)
else
  recorded=$(date -u '+%Y-%m-%d %H:%M')
  echo "$elapsed|$iters|$load_start|$load_end|$recorded" >"$tmp/meta"
fi

pred=""
if [ -n "${COLLKIT_BENCH_FROM:-}" ] && [ "${COLLKIT_BENCH_REPREDICT:-0}" = 1 ]; then
  pred=$(mktemp -d)
  trap 'rm -rf "$pred"' EXIT
  for f in "$tmp"/*.name; do
    i=$(basename "$f" .name)
    IFS='|' read -r name np flags <"$f"
    # A calibration recorded before chunk_sync_us was measured: the figure calibrate now measures
    # (its serial and its most chunked row, the uncalibrated model's, run as run runs them) taken
    # from the same layout's uncalibrated run, which measured those very schedules a minute before.
    python3 - "$tmp/$i.cal.json" "$tmp/$i.before.json" "$pred/$i.cal.json" <<'PY'
import json, re, sys
cal = json.load(open(sys.argv[1]))
if "chunk_sync_us" not in cal:
    rows = json.load(open(sys.argv[2]))["measured"]
    # Collectives run (a skipped one, of a one-rank group, takes no time) and chunks beyond a first ("name[cK]", K > 0).
    comm = lambda m: [t for t in m["tasks"] if t["stream"] != "compute" and t.get("bytes") and t["dur_us"] > 1.0]
    further = lambda m: sum(1 for t in comm(m) if re.search(r"\[c([1-9][0-9]*)\]$", t["name"]))
    excess = lambda m: m["step_us"] - m["compute_us"] - m["comm_us"]
    serial, n = rows[0], len(comm(rows[0]))
    chunked = max(rows[1:], key=further, default=None)
    cal["chunk_sync_us"] = 0.0
    if chunked is not None and n > 0 and further(chunked) > 0:
        whole = len(comm(chunked)) - further(chunked)
        cal["chunk_sync_us"] = max(0.0, excess(chunked) - excess(serial) / n * whole) / further(chunked)
json.dump(cal, open(sys.argv[3], "w"))
PY
    # A calibration recorded before compute_scale and comm_scale were measured (and sync_us taken
    # as step - compute alone - comm alone, the figures the median of three runs of those schedules):
    # all four from the same layout's uncalibrated run, as chunk_sync_us above: its serial row's
    # compute and collectives alone against the same tasks from the recorded samples (predicted at
    # level 1), its excess per collective, and the chunked row's excess beyond that per further chunk.
    if python3 -c 'import json,sys; sys.exit("compute_scale" in json.load(open(sys.argv[1])))' "$tmp/$i.cal.json"; then
      # shellcheck disable=SC2086
      "$bin/coll-overlap" run --predict-only $flags --calibration "$pred/$i.cal.json" --schedules "$tmp/$i.before.json" \
        --json "$pred/$i.samples.json" >/dev/null 2>&1
      python3 - "$pred/$i.cal.json" "$tmp/$i.before.json" "$pred/$i.samples.json" <<'PY'
import json, re, sys
cal = json.load(open(sys.argv[1]))
rows = json.load(open(sys.argv[2]))["measured"]
samples = json.load(open(sys.argv[3]))["strategies"][0]
comm = lambda m: [t for t in m["tasks"] if t["stream"] != "compute" and t.get("bytes") and t["dur_us"] > 1.0]
further = lambda m: sum(1 for t in comm(m) if re.search(r"\[c([1-9][0-9]*)\]$", t["name"]))
excess = lambda m: m["step_us"] - m["compute_us"] - m["comm_us"]
serial, n = rows[0], len(comm(rows[0]))
level = lambda measured, model: measured / model if measured > 0 and model > 0 else 1.0
cal["compute_scale"] = level(serial["compute_us"], samples["compute_us"])
cal["comm_scale"] = level(serial["comm_us"], samples["comm_us"])
if n > 0:
    cal["sync_us"] = max(0.0, excess(serial)) / n
chunked = max(rows[1:], key=further, default=None)
if chunked is not None and n > 0 and further(chunked) > 0:
    whole = len(comm(chunked)) - further(chunked)
    cal["chunk_sync_us"] = max(0.0, excess(chunked) - excess(serial) / n * whole) / further(chunked)
json.dump(cal, open(sys.argv[1], "w"))
PY
    fi
    # The calibrated runs only: the uncalibrated model simulates plans on the job's discovered
    # topology, whose measured copy bandwidth differs from run to run and is not recorded.
    # shellcheck disable=SC2086
    "$bin/coll-overlap" run --predict-only $flags --calibration "$pred/$i.cal.json" --schedules "$tmp/$i.after.json" \
      --json "$pred/$i.after.json" >/dev/null 2>&1
  done
fi

COLLKIT_BENCH_DIR=$(cd "$(dirname "$0")" && pwd) python3 - "$tmp" "${#layouts[@]}" "$out" "$elapsed" "$iters" "$load_start" "$load_end" "$recorded" "$pred" <<'PY'
import json, statistics, sys, datetime, platform, os
sys.path.insert(0, os.environ["COLLKIT_BENCH_DIR"])
import overlap_ranking
tmp, n, out, elapsed, iters = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
load_start, load_end, recorded, pred_dir = sys.argv[6], sys.argv[7], sys.argv[8], sys.argv[9]

def load_run(i, when):
    """A run's JSON; with re-predictions, its predicted rows (and each measured row's predicted
    step) replaced by this build's model's for the same schedules."""
    j = json.load(open(f"{tmp}/{i}.{when}.json"))
    if pred_dir and os.path.exists(f"{pred_dir}/{i}.{when}.json"):
        p = json.load(open(f"{pred_dir}/{i}.{when}.json"))
        by = {s["name"]: s for s in p["strategies"]}
        j["strategies"] = [by[s["name"]] for s in j["strategies"]]
        for m in j["measured"]:
            m["predicted_step_us"] = by[m["name"]]["step_us"]
    return j
lines = []
w = lines.append
w("# coll-overlap run: measured against predicted (bench/overlap_measured.sh)")
w("")
w(f"Recorded {recorded} UTC on {platform.node()} (2 cores shared by the ranks and their")
w(f"communication threads), `mpirun --oversubscribe`, {iters} timed steps per strategy and mode, median; the")
w(f"whole script took {elapsed} s. Load average (1, 5, 15 min) {load_start} at the start, {load_end} at the end")
w("(2 cores: anything above 2 is other work queued beside the ranks). Step times in ms. `error` = predicted / measured - 1;")
w("`spread` = rank 0's fastest and slowest of the timed steps (the median is `measured`). Each run measures")
w("the schedules its own model chose (knobs may differ before and after calibration), so each")
w("prediction is held against its own measurement.")
if pred_dir:
    w("")
    w("Predictions made again from the recorded runs' schedules and calibrations by this build's model")
    w("(`COLLKIT_BENCH_FROM=DIR COLLKIT_BENCH_REPREDICT=1`: `coll-overlap run --predict-only --schedules`), not the ones the runs printed,")
    w("for the calibrated runs (the uncalibrated model simulates plans on the job's discovered topology, not recorded: those stay as printed).")
    w("Calibrations recorded before `chunk_sync_us` was measured take it from the same layout's uncalibrated run (its `none` row and")
    w("its most chunked one: the schedules calibrate now runs for it, measured a minute earlier in another job).")
w("")
# Rows of one run whose schedules are the same measure how far apart this host puts two runs of
# one schedule: the noise. Two rows have the same schedule when they ran the same tasks (names,
# streams, dependencies, sizes): `auto` choosing one strategy's knobs, or a knob that changes
# nothing (dp-bucket with a bucket as large as every gradient is the serial schedule).
def schedule_of(m):
    return json.dumps([(t["name"], t["stream"], t["deps"], t.get("bytes", 0)) for t in m["tasks"]])

def same_schedule_gaps(i, when):
    j = load_run(i, when)
    by = {}
    for m in j["measured"]:
        by.setdefault(schedule_of(m), []).append(m["step_us"])
    return [max(v) / min(v) - 1 for v in by.values() if len(v) > 1]
gaps = [g for i in range(1, n + 1) for when in ("before", "after") for g in same_schedule_gaps(i, when)]
tie = max(0.02, statistics.median(gaps)) if gaps else 0.02

tie90 = max(tie, overlap_ranking.percentile(gaps, 0.9) or 0)
pair_totals = {(w_, q): {"distinct": 0, "correct": 0, "tie": 0, "reversed": 0} for w_ in ("before", "after") for q in ("median", "p90")}

errs = {"before": [], "after": []}
parts = {w_: {"compute": [], "comm": [], "exposed": []} for w_ in ("before", "after")}
same_pairs, chunked, flat = [], [], []
spread_rows = []
ranks_ok = {"before": 0, "after": 0}
best_ok = {"before": 0, "after": 0}
summary = []
for i in range(1, n + 1):
    name, np_, flags = open(f"{tmp}/{i}.name").read().strip().split("|")
    # The calibration the predictions used (re-predicted: with the figures back-filled).
    cal_file = f"{pred_dir}/{i}.cal.json" if pred_dir and os.path.exists(f"{pred_dir}/{i}.cal.json") else f"{tmp}/{i}.cal.json"
    cal = json.load(open(cal_file))
    w(f"## {name} (`mpirun -np {np_}`, `{flags}`)")
    w("")
    levels = (f", samples at x{cal['compute_scale']:.2f} (compute) and x{cal['comm_scale']:.2f} (communication) to the serial step's level"
              if "compute_scale" in cal else "")
    w(f"calibration: {len(cal['gemms'])} GEMM shapes, {len(cal['collectives'])} collectives, compute slowdown under "
      f"communication {cal['compute_slowdown']:.3f}, communication slowdown under compute {cal['comm_slowdown']:.3f}, "
      f"wait {cal['sync_us']:.0f} us a collective and {cal.get('chunk_sync_us', 0):.0f} us a further chunk{levels}")
    w("")
    w("| model | strategy | knobs | predicted | measured | spread | error | measured compute | comm | exposed | overlap | slowdown | speedup vs none |")
    w("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    per = {}
    for when in ("before", "after"):
        j = load_run(i, when)
        rows = j["measured"]
        knobs = {s["name"]: " ".join(f"{k}={v}" for k, v in s["knobs"].items()) or "-" for s in j["strategies"]}
        pstrat = {s["name"]: s for s in j["strategies"]}
        none = rows[0]["step_us"]
        e = []
        for m in rows:
            err = m["predicted_step_us"] / m["step_us"] - 1
            e.append(abs(err))
            spread_rows.append(m["step_max_us"] / m["step_min_us"] - 1 if m["step_min_us"] > 0 else 0)
            p = pstrat[m["name"]]
            for part, pk, mk in (("compute", "compute_us", "compute_us"), ("comm", "comm_us", "comm_us"), ("exposed", "exposed_comm_us", "exposed_comm_us")):
                parts[when][part].append((p[pk], m[mk]))
            w(f"| {when} | {m['name']} | {knobs.get(m['name'], '-')} | {m['predicted_step_us']/1e3:.2f} | {m['step_us']/1e3:.2f} | "
              f"{m['step_min_us']/1e3:.1f}-{m['step_max_us']/1e3:.1f} | {100*err:+.1f}% | "
              f"{m['compute_us']/1e3:.2f} | {m['comm_us']/1e3:.2f} | {m['exposed_comm_us']/1e3:.2f} | {100*m['overlap_ratio']:.1f}% | "
              f"{m['compute_slowdown']:.2f} | {none/m['step_us']:.3f}x |")
        errs[when] += e
        bykn = {}
        for m in rows:
            bykn.setdefault(schedule_of(m), []).append(m["step_us"])
        same_pairs.extend(100 * (max(v) / min(v) - 1) for v in bykn.values() if len(v) > 1)
        if when == "after":
            for m in rows:
                err = m["predicted_step_us"] / m["step_us"] - 1
                (chunked if any(k in ("tp-decompose", "moe-pipeline") for k in pstrat[m["name"]]["knobs"]) else flat).append(err)
        # Distinct schedules only: a strategy whose schedule is another's (auto picking one) is a tie by construction.
        pred = sorted(rows, key=lambda m: m["predicted_step_us"])
        meas = sorted(rows, key=lambda m: m["step_us"])
        same = [m["name"] for m in pred] == [m["name"] for m in meas]
        best = pred[0]["name"] == meas[0]["name"] or abs(pred[0]["step_us"] / meas[0]["step_us"] - 1) < 0.02
        rk = [{"name": m["name"], "schedule": schedule_of(m), "predicted": m["predicted_step_us"], "measured": m["step_us"]} for m in rows]
        pairs = overlap_ranking.compare_pairs(rk, tie)
        pairs90 = overlap_ranking.compare_pairs(rk, tie90)
        for q, res in (("median", pairs), ("p90", pairs90)):
            for k in pair_totals[(when, q)]:
                pair_totals[(when, q)][k] += res[k]
        ranks_ok[when] += same
        best_ok[when] += best
        per[when] = (statistics.median(e), same, best, [m["name"] for m in pred], [m["name"] for m in meas], pairs, pairs90)
    w("")
    for when in ("before", "after"):
        med, same, best, p, m, pairs, pairs90 = per[when]
        w(f"- {when} calibration: median |error| {100*med:.1f}%; predicted ranking {' < '.join(p)}; measured {' < '.join(m)}: "
          f"{'same' if same else 'differs'}; fastest {'agrees' if best else 'differs'} (within 2% counts); pairs measured apart by more "
          f"than {100*tie:.1f}%: {overlap_ranking.describe(pairs)}")
    w("")
    summary.append((name, np_, per))
w("## Summary")
w("")
w(f"| layout | ranks | median \\|error\\| before | after | ranking equal before | after | pairs apart > {100*tie:.1f}% ordered correctly, before | after |")
w("| --- | ---: | ---: | ---: | --- | --- | ---: | ---: |")
def frac(res):
    return f"{res['correct']}/{res['distinct']}" if res["distinct"] else "- (none apart)"
for name, np_, per in summary:
    w(f"| {name} | {np_} | {100*per['before'][0]:.1f}% | {100*per['after'][0]:.1f}% | {'yes' if per['before'][1] else 'no'} | {'yes' if per['after'][1] else 'no'} | "
      f"{frac(per['before'][5])} | {frac(per['after'][5])} |")
w("")
mb, ma = statistics.median(errs["before"]), statistics.median(errs["after"])
w(f"Median |error| over every strategy and layout: **{100*mb:.1f}%** before calibration, **{100*ma:.1f}%** after "
  f"(target <= 10% after): {'met' if ma <= 0.10 else 'not met'}. Predicted ranking equal to the measured one in "
  f"{ranks_ok['before']}/{n} layouts before and {ranks_ok['after']}/{n} after; fastest strategy agreed in "
  f"{best_ok['before']}/{n} before and {best_ok['after']}/{n} after.")
w("")
w("Ranking, pair by pair (bench/overlap_ranking.py): only pairs of distinct schedules whose measured steps differ by more than the noise")
w("are judged, and the model orders a pair correctly only when it predicts the measured faster one strictly faster (a prediction of two")
w("equal steps is a tie, not an agreement).")
w("")
w("| model | noise | measured-distinct pairs | ordered correctly | predicted equal | reversed |")
w("| --- | --- | ---: | ---: | ---: | ---: |")
for when in ("before", "after"):
    for q, label in (("median", f"{100*tie:.1f}% (median gap between rows of one schedule, at least 2%)"),
                     ("p90", f"{100*tie90:.1f}% (90th percentile of those gaps)")):
        t = pair_totals[(when, q)]
        w(f"| {when} | {label} | {t['distinct']} | {t['correct']} | {t['tie']} | {t['reversed']} |")
w("")
w("## Where the error comes from")
w("")
w("Each row's step split into its parts, predicted against measured over every strategy and layout: compute alone (the")
w("model's GEMM times against the compute tasks run with the collectives skipped), communication alone (the model's")
w("collective times against the collectives run with the compute skipped; the calibrated wait for the slowest rank, `sync_us`, is")
w("not in it: the model charges it to the step, where ranks meet after computing apart) and")
w("exposed communication (step - compute as run). `median error` is signed (predicted / measured - 1), `median |error|` not;")
w("`summed` is the ratio of the totals over the rows (large rows weigh more).")
w("")
w("| model | part | median error | median \\|error\\| | predicted / measured, summed |")
w("| --- | --- | ---: | ---: | ---: |")
for when in ("before", "after"):
    for part in ("compute", "comm", "exposed"):
        pairs = [(p, m) for p, m in parts[when][part] if m > 0]
        if not pairs:
            continue
        e = [p / m - 1 for p, m in pairs]
        tot = sum(p for p, _ in pairs) / sum(m for _, m in pairs)
        w(f"| {when} | {part} | {100*statistics.median(e):+.1f}% | {100*statistics.median(abs(x) for x in e):.1f}% | {tot:.2f} |")
w("")
w(f"Noise: rank 0's slowest timed step over its fastest, per row: median {100*statistics.median(spread_rows):.0f}%, "
  f"largest {100*max(spread_rows):.0f}% ({len(spread_rows)} rows, {iters} steps each). Rows of one run whose schedules are")
w(f"the same (the same tasks: `auto` choosing a single strategy's knobs, or a bucket as large as every gradient) measured {', '.join(f'{x:.1f}%' for x in sorted(same_pairs))} apart "
  f"(slower / faster - 1; median {statistics.median(same_pairs) if same_pairs else 0:.1f}%).")
w("")
w("After calibration, by kind of schedule (signed error: predicted / measured - 1):")
w("")
w("| schedules | rows | median error | median \\|error\\| |")
w("| --- | ---: | ---: | ---: |")
for label, v in (("chunked (tp-decompose or moe-pipeline among the knobs): more collectives, each smaller", chunked),
                 ("not chunked (none, dp-bucket, fsdp-prefetch)", flat)):
    if v:
        w(f"| {label} | {len(v)} | {100*statistics.median(v):+.1f}% | {100*statistics.median(abs(x) for x in v):.1f}% |")
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines[-3:]))
PY
echo "wrote $out" >&2
