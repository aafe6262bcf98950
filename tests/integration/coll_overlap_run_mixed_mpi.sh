#!/usr/bin/env bash
# coll-overlap run on layouts with mixed groups under mpirun -np 4 (issue 16): TP 2 x DP 2 of a
# scaled Llama-3 8B (TP collectives in pairs {0,1} {2,3}, DP ones in {0,2} {1,3}, each pair on a
# communicator of its own), the same with --order dp,tp,pp (the pairs swap), TP 2 x FSDP 2, and
# Mixtral with DP 4 and EP 2 (EP pairs and expert-DP pairs beside the whole job's DP). For each:
# the groups MPI formed, read from the JSON, are the layout's; every collective's output checked
# element by element (#wrong 0); the measured tasks start only after their dependencies end; none
# overlaps nothing. Then the refusals, one line each. No check reads a time against a threshold.
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
  expect_eq "$(json_get "$f" 'sum(1 for m in j["measured"] for t in m["tasks"] for d in t["deps"] if m["tasks"][d]["start_us"] + m["tasks"][d]["dur_us"] > t["start_us"] + 0.001)')" \
    "0" "$name: tasks started before a dependency ended"
  expect_eq "$(json_get "$f" '[m["name"] for m in j["measured"]][0]')" "none" "$name: first row"
  expect_eq "$(json_get "$f" 'j["measured"][0]["overlap_ratio"]')" "0.0" "$name: none overlap"
  expect_eq "$(json_get "$f" 'all(m["step_us"] > 0 and m["compute_us"] > 0 and m["comm_us"] > 0 for m in j["measured"])')" "True" "$name: times measured"
}

common=(--scale 64 --seq-len 4096 --iters 1)

# TP 2 (SP) x DP 2: tp-decompose and dp-bucket, alone and combined.
mpi 4 "$ov" run --model llama3-8b --tp 2 --sp --dp 2 "${common[@]}" --strategy tp-decompose,dp-bucket --tp-chunks 2 --bucket-mb 1 \
  --json "$TMP/mixed.json" --trace "$TMP/mixed.trace.json" >"$TMP/mixed.txt"
check_run tp2xdp2 "$TMP/mixed.json"
expect_eq "$(json_get "$TMP/mixed.json" 'j["groups"]')" "{'dp': [[0, 2], [1, 3]], 'tp': [[0, 1], [2, 3]]}" "tp2xdp2: groups formed"
expect_eq "$(json_get "$TMP/mixed.json" '[m["name"] for m in j["measured"]]')" "['none', 'dp-bucket', 'tp-decompose', 'dp-bucket+tp-decompose']" "tp2xdp2: rows"
expect_eq "$(json_get "$TMP/mixed.json" 'sorted({c["collective"] for c in j["collectives"]})')" "['allgather', 'allreduce', 'reducescatter']" \
  "tp2xdp2: TP and DP collectives"
# Both kinds ran in the measured step: TP tasks and DP tasks with bytes and a duration.
expect_eq "$(json_get "$TMP/mixed.json" 'sorted({t["stream"].split(":")[-1].split("-")[0] for t in j["measured"][-1]["tasks"] if t.get("bytes") and t["dur_us"] > 0})')" \
  "['dp', 'tp']" "tp2xdp2: TP and DP collectives in one step"
grep -q "^groups (a communicator each): tp \[0,1\] \[2,3\]; dp \[0,2\] \[1,3\]$" "$TMP/mixed.txt" && ok "tp2xdp2: groups line" \
  || bad "tp2xdp2 output: $(head -5 "$TMP/mixed.txt")"
grep -q "collectives checked: .*, 0 wrong elements; tasks started before a dependency ended: 0" "$TMP/mixed.txt" && ok "tp2xdp2: check line" \
  || bad "tp2xdp2 output: $(tail -3 "$TMP/mixed.txt")"

# DP innermost: the TP pairs are {0,2} and {1,3} now.
mpi 4 "$ov" run --model llama3-8b --tp 2 --dp 2 --order dp,tp,pp "${common[@]}" --strategy dp-bucket --bucket-mb 1 --json "$TMP/order.json" >/dev/null
check_run order "$TMP/order.json"
expect_eq "$(json_get "$TMP/order.json" 'j["groups"]')" "{'dp': [[0, 1], [2, 3]], 'tp': [[0, 2], [1, 3]]}" "order dp,tp,pp: groups formed"

# TP 2 x FSDP 2 (ZeRO 3): parameter gathers and gradient scatters in the DP pairs.
mpi 4 "$ov" run --model llama3-8b --tp 2 --dp 2 --zero 3 "${common[@]}" --strategy fsdp-prefetch --prefetch-depth 1 --json "$TMP/fsdp.json" >/dev/null
check_run tp2xfsdp2 "$TMP/fsdp.json"
expect_eq "$(json_get "$TMP/fsdp.json" '"reducescatter" in {c["collective"] for c in j["collectives"]} and "allgather" in {c["collective"] for c in j["collectives"]}')" \
  "True" "tp2xfsdp2: gathers and scatters"

# Mixtral DP 4 with EP 2: AlltoAll in the EP pairs, expert gradients in the expert-DP pairs, the
# dense gradients over all four.
mpi 4 "$ov" run --model mixtral-8x7b --dp 4 --ep 2 "${common[@]}" --strategy moe-pipeline --moe-chunks 2 --json "$TMP/moe.json" >/dev/null
check_run dp4xep2 "$TMP/moe.json"
expect_eq "$(json_get "$TMP/moe.json" 'j["groups"]')" "{'dp': [[0, 1, 2, 3]], 'ep': [[0, 1], [2, 3]], 'expert-dp': [[0, 2], [1, 3]]}" \
  "dp4xep2: groups formed"
expect_eq "$(json_get "$TMP/moe.json" '"alltoall" in {c["collective"] for c in j["collectives"]}')" "True" "dp4xep2: AlltoAll run"

# Refusals, one line each: every rank meets them alike before any collective, and rank 0 alone
# prints the line (mpi_said keeps the ranks' lines, not mpirun's report).
expect_fail 2 "coll-overlap: error: the layout needs 4 ranks (tp 2 x dp 2 x pp 1) but the job has 2 (mpirun -np)" \
  mpi_said 2 "$ov" run --model llama3-8b --tp 2 --dp 2 --scale 64
expect_fail 2 "coll-overlap: error: the layout needs 2 ranks (tp 2 x dp 1 x pp 1) but the job has 4 (mpirun -np)" \
  mpi_said 4 "$ov" run --model llama3-8b --tp 2 --scale 64
expect_fail 2 "coll-overlap: error: coll-overlap run executes one pipeline stage's schedule on every rank: --pp must be 1" \
  mpi_said 4 "$ov" run --model llama3-8b --tp 2 --pp 2 --scale 64
expect_fail 2 "coll-overlap: error: the layout needs 4 ranks (tp 2 x dp 2 x pp 1) but the job has 2 (mpirun -np)" \
  mpi_said 2 "$ov" calibrate --model llama3-8b --tp 2 --dp 2 --scale 64 -o "$TMP/never.json"
# A calibration from a 2-rank job is refused by a 4-rank one.
mpi 2 "$ov" calibrate --model llama3-8b --tp 2 --sp --scale 64 --seq-len 4096 --strategy tp-decompose --tp-chunks 2 -o "$TMP/cal2.json" >/dev/null
expect_fail 2 "coll-overlap: error: $TMP/cal2.json: calibrated on 2 ranks, this job has 4" \
  mpi_said 4 "$ov" run --model llama3-8b --tp 2 --dp 2 --scale 64 --calibration "$TMP/cal2.json"
# A TP 2 x DP 2 calibration measures both groups' collectives, and a run fed it predicts from them.
mpi 4 "$ov" calibrate --model llama3-8b --tp 2 --sp --dp 2 --scale 64 --seq-len 4096 --strategy tp-decompose,dp-bucket --tp-chunks 2 --bucket-mb 1 \
  -o "$TMP/cal4.json" >/dev/null
expect_eq "$(json_get "$TMP/cal4.json" 'sorted({c["collective"] for c in j["collectives"]}) + [j["ranks"]]')" \
  "['allgather', 'allreduce', 'reducescatter', 4]" "tp2xdp2 calibration: both groups' collectives"
# Each sample names its group: the TP gathers and scatters, the DP gradient AllReduce.
expect_eq "$(json_get "$TMP/cal4.json" 'sorted({(c["group"], c["collective"]) for c in j["collectives"]})')" \
  "[('dp', 'allreduce'), ('tp', 'allgather'), ('tp', 'reducescatter')]" "tp2xdp2 calibration: a sample per group"
mpi 4 "$ov" run --model llama3-8b --tp 2 --sp --dp 2 "${common[@]}" --strategy tp-decompose,dp-bucket --tp-chunks 2 --bucket-mb 1 \
  --calibration "$TMP/cal4.json" --json "$TMP/mixedc.json" >/dev/null
check_run tp2xdp2-calibrated "$TMP/mixedc.json"
expect_eq "$(json_get "$TMP/mixedc.json" '{c["algorithm"] for c in j["collectives"]}')" "{'measured'}" "tp2xdp2 calibrated: measured collectives"

finish
