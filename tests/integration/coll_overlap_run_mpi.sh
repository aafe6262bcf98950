#!/usr/bin/env bash
# coll-overlap run under mpirun -np 2: every strategy's schedule executed on a tiny layout (TP with
# SP, DP with ZeRO 0, 1 and 3, MoE with EP). For each: every collective's output checked element by
# element (#wrong 0, as coll-run checks), the measured tasks started only after the tasks they
# depend on ended (read from the JSON, not from the tool's own count), none overlaps nothing, and
# the measured trace opens like --trace. Then calibrate, and a run fed its file. Bad input pinned.
# No check reads a time against a threshold.
source "$(dirname "$0")/lib.sh"
ov=$COLLKIT_BIN/coll-overlap
[ -x "$ov" ] || { echo "skip: $ov not built"; exit 77; }
command -v mpirun >/dev/null || { echo "skip: no mpirun"; exit 77; }

# check_run NAME FILE: the measured rows of one run's JSON.
check_run() {
  local name=$1 f=$2
  expect_eq "$(json_get "$f" 'len(j["measured"]) == len(j["strategies"]) and len(j["measured"]) >= 2')" "True" "$name: every row measured"
  expect_eq "$(json_get "$f" 'sum(m["wrong"] for m in j["measured"])')" "0" "$name: wrong elements"
  expect_eq "$(json_get "$f" 'all(m["collectives_checked"] > 0 for m in j["measured"])')" "True" "$name: collectives checked in every row"
  # Every task starts after each dependency ended (timestamps rounded to ns: allow 1 ns).
  expect_eq "$(json_get "$f" 'sum(1 for m in j["measured"] for t in m["tasks"] for d in t["deps"] if m["tasks"][d]["start_us"] + m["tasks"][d]["dur_us"] > t["start_us"] + 0.001)')" \
    "0" "$name: tasks started before a dependency ended"
  expect_eq "$(json_get "$f" 'sum(len(m["tasks"]) for m in j["measured"]) > 10')" "True" "$name: tasks measured"
  expect_eq "$(json_get "$f" '[m["name"] for m in j["measured"]][0]')" "none" "$name: first row"
  expect_eq "$(json_get "$f" 'j["measured"][0]["hidden_comm_us"]')" "0.0" "$name: none hides no communication"
  expect_eq "$(json_get "$f" 'j["measured"][0]["overlap_ratio"]')" "0.0" "$name: none overlap"
  expect_eq "$(json_get "$f" 'all(m["step_us"] > 0 and m["compute_us"] > 0 and m["comm_us"] > 0 for m in j["measured"])')" "True" "$name: times measured"
  expect_eq "$(json_get "$f" '(j["iters"], j["warmup_iters"], j["provenance"]["tool"], j["provenance"]["command"][1])')" \
    "(1, 1, 'coll-overlap', 'run')" "$name: iterations, warm-up and provenance"
}

common=(--scale 64 --seq-len 4096 --iters 1)

# TP 2 with SP: tp-decompose.
mpi 2 "$ov" run --model llama3-8b --tp 2 --sp "${common[@]}" --strategy tp-decompose --tp-chunks 2 \
  --json "$TMP/tp.json" --trace "$TMP/tp.trace.json" --trace-predicted "$TMP/tp.pred.json" >"$TMP/tp.txt"
check_run tp "$TMP/tp.json"
expect_eq "$(json_get "$TMP/tp.json" '[m["name"] for m in j["measured"]]')" "['none', 'tp-decompose']" "tp: rows"
expect_eq "$(json_get "$TMP/tp.json" 'sorted({c["collective"] for c in j["collectives"]})')" "['allgather', 'reducescatter']" "tp: collectives"
expect_eq "$(json_get "$TMP/tp.trace.json" 'j["otherData"]["simulated"]')" "False" "measured trace is marked measured"
expect_eq "$(json_get "$TMP/tp.pred.json" 'j["otherData"]["simulated"]')" "True" "predicted trace beside it"
expect_eq "$(json_get "$TMP/tp.trace.json" 'len([e for e in j["traceEvents"] if e["ph"] == "X"]) > 10')" "True" "measured trace has slices"
# Slices on one track never overlap (Perfetto needs them nested).
expect_eq "$(json_get "$TMP/tp.trace.json" 'sum(1 for t in {e["tid"] for e in j["traceEvents"] if e["ph"] == "X"} for a, b in zip(sorted((e["ts"], e["ts"] + e["dur"]) for e in j["traceEvents"] if e["ph"] == "X" and e["tid"] == t), sorted((e["ts"], e["ts"] + e["dur"]) for e in j["traceEvents"] if e["ph"] == "X" and e["tid"] == t)[1:]) if a[1] > b[0] + 0.001)')" \
  "0" "measured trace: slices on one track disjoint"
grep -q "^measured" "$TMP/tp.txt" && grep -q "collectives checked: .*, 0 wrong elements; tasks started before a dependency ended: 0" "$TMP/tp.txt" \
  && ok "tp: table and check line" || bad "tp output: $(cat "$TMP/tp.txt")"

# DP 2: dp-bucket (ZeRO 0: AllReduce buckets; ZeRO 1: ReduceScatter + parameter AllGather) and
# fsdp-prefetch (ZeRO 3).
mpi 2 "$ov" run --model llama3-8b --dp 2 "${common[@]}" --strategy dp-bucket --bucket-mb 1 --json "$TMP/dp.json" >/dev/null
check_run dp "$TMP/dp.json"
expect_eq "$(json_get "$TMP/dp.json" 'sorted({c["collective"] for c in j["collectives"]})')" "['allreduce']" "dp: collectives"
mpi 2 "$ov" run --model llama3-8b --dp 2 --zero 1 "${common[@]}" --strategy dp-bucket --bucket-mb 1 --json "$TMP/z1.json" >/dev/null
check_run zero1 "$TMP/z1.json"
mpi 2 "$ov" run --model llama3-8b --dp 2 --zero 3 "${common[@]}" --strategy fsdp-prefetch --prefetch-depth 1 --json "$TMP/fsdp.json" >/dev/null
check_run fsdp "$TMP/fsdp.json"
expect_eq "$(json_get "$TMP/fsdp.json" '[m["name"] for m in j["measured"]][-1]')" "fsdp-prefetch" "fsdp: last row"

# MoE with EP 2: moe-pipeline, then auto over everything that applies.
mpi 2 "$ov" run --model mixtral-8x7b --dp 2 --ep 2 "${common[@]}" --strategy moe-pipeline --moe-chunks 2 --json "$TMP/moe.json" >/dev/null
check_run moe "$TMP/moe.json"
expect_eq "$(json_get "$TMP/moe.json" '"alltoall" in {c["collective"] for c in j["collectives"]}')" "True" "moe: AlltoAll run"
mpi 2 "$ov" run --model mixtral-8x7b --dp 2 --ep 2 "${common[@]}" --json "$TMP/auto.json" >/dev/null
check_run auto "$TMP/auto.json"
expect_eq "$(json_get "$TMP/auto.json" 'j["measured"][-1]["name"]')" "auto" "auto: last row"

# Calibrate, then the model fed the file predicts with the measured figures.
mpi 2 "$ov" calibrate --model llama3-8b --tp 2 --sp --scale 64 --seq-len 4096 --strategy tp-decompose --tp-chunks 2 -o "$TMP/cal.json" >/dev/null
expect_eq "$(json_get "$TMP/cal.json" 'j["schema"]')" "collkit.overlap-calibration/1" "calibration schema"
expect_eq "$(json_get "$TMP/cal.json" 'len(j["gemms"]) > 0 and len(j["collectives"]) > 0 and j["ranks"] == 2')" "True" "calibration measured"
# The chunked row (tp-decompose, 2 chunks) run beside the serial one: the cost of a further chunk's meeting, measured.
expect_eq "$(json_get "$TMP/cal.json" 'j["chunk_sync_us"] >= 0 and j["sync_us"] >= 0')" "True" "chunk wait measured"
# The serial step run as run runs it sets the samples' level: a positive factor each.
expect_eq "$(json_get "$TMP/cal.json" 'j["compute_scale"] > 0 and j["comm_scale"] > 0')" "True" "levels measured"
mpi 2 "$ov" run --model llama3-8b --tp 2 --sp "${common[@]}" --strategy tp-decompose --tp-chunks 2 --calibration "$TMP/cal.json" \
  --json "$TMP/tpc.json" >/dev/null
check_run calibrated "$TMP/tpc.json"
expect_eq "$(json_get "$TMP/tpc.json" 'j["calibration"]["gemm_shapes"] > 0')" "True" "run reports its calibration"
expect_eq "$(json_get "$TMP/tpc.json" '{c["algorithm"] for c in j["collectives"]}')" "{'measured'}" "calibrated collectives are measured ones"

# run --calibrate: the same measurements in the job itself, written with --calibration-out.
mpi 2 "$ov" run --model llama3-8b --dp 2 "${common[@]}" --strategy dp-bucket --bucket-mb 1 --calibrate --calibration-out "$TMP/cal2.json" \
  --json "$TMP/dpc.json" >/dev/null
check_run run-calibrate "$TMP/dpc.json"
expect_eq "$(json_get "$TMP/cal2.json" 'j["ranks"] == 2 and len(j["gemms"]) > 0')" "True" "run --calibrate wrote its calibration"
expect_eq "$(json_get "$TMP/dpc.json" 'j["calibration"]["file"]')" "$TMP/cal2.json" "run --calibrate names it"

# Bad input: one line each, before any step.
expect_fail 2 "coll-overlap: error: run: give --calibrate or --calibration FILE, not both" \
  "$ov" run --model llama3-8b --scale 64 --calibrate --calibration "$TMP/cal.json"
expect_fail 2 "coll-overlap: error: --scale must be a positive integer, got 0" "$ov" run --model llama3-8b --tp 2 --scale 0
expect_fail 2 "coll-overlap: error: --scale must be a positive integer, got 0" "$ov" --model llama3-8b --tp 2 --scale 0
expect_fail 2 "coll-overlap: error: the layout needs 2 ranks (tp 2 x dp 1 x pp 1) but the job has 1 (mpirun -np)" "$ov" run --model llama3-8b --tp 2 --scale 64
expect_fail 2 "coll-overlap: error: coll-overlap run executes one pipeline stage's schedule on every rank: --pp must be 1" \
  "$ov" run --model llama3-8b --pp 2 --scale 64
expect_fail 2 "coll-overlap: error: unknown strategy \"bogus\" (known: none, dp-bucket, fsdp-prefetch, tp-decompose, moe-pipeline, auto)" \
  "$ov" run --model llama3-8b --scale 64 --strategy bogus
expect_fail 3 "coll-overlap: error: $TMP/nope.json: cannot open: No such file or directory" "$ov" run --model llama3-8b --scale 64 --calibration "$TMP/nope.json"
echo '{"schema": "collkit.overlap-calibration/2"}' >"$TMP/bad.json"
expect_fail 2 "coll-overlap: error: $TMP/bad.json: /schema: unsupported version \"collkit.overlap-calibration/2\" (this collkit reads \"collkit.overlap-calibration/1\")" \
  "$ov" --model llama3-8b --scale 64 --calibration "$TMP/bad.json"
# A calibration from another rank count is refused.
expect_fail 2 "coll-overlap: error: $TMP/cal.json: calibrated on 2 ranks, this job has 1" "$ov" run --model llama3-8b --scale 64 --calibration "$TMP/cal.json"

finish
