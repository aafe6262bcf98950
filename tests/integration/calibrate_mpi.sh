#!/usr/bin/env bash
# coll-run calibrate under mpirun: the quick calibration of this host's discovered ranks writes a
# calibrated topology (a calibration block, copy bandwidth on the ranks' vertex) that coll-plan
# reads and simulates with; compare on a run with it; bad input with one-line errors.
source "$(dirname "$0")/lib.sh"
run="$COLLKIT_BIN/coll-run"
plan="$COLLKIT_BIN/coll-plan"
if ! command -v mpirun >/dev/null; then echo "skip: mpirun not found"; exit 77; fi

if mpi 3 "$run" calibrate --quick -o "$TMP/cal.json" 2>"$TMP/cal.txt"; then
  ok "calibrate --quick on 3 ranks"
else
  bad "calibrate: $(tail -3 "$TMP/cal.txt")"
fi
[ "$(json_get "$TMP/cal.json" 'any(c["name"].startswith("shared memory on ") for c in j["calibration"]["classes"])')" = True ] &&
  ok "the ranks' shared-memory class measured" || bad "the ranks' shared-memory class not fitted: $(cat "$TMP/cal.txt")"
expect_eq "$(json_get "$TMP/cal.json" 'j["calibration"]["per_message_us"] > 0 and j["calibration"]["reduce_gbps"] > 0')" True \
  "per-message time and reduction rate fitted"
expect_eq "$(json_get "$TMP/cal.json" 'all(v.get("local_bw_gbps", 0) > 0 for v in j["vertices"] if v["id"] in j["ranks"])')" True \
  "the ranks' vertex has a copy bandwidth"
grep -q "^plans: [0-9]* timed; factors" "$TMP/cal.txt" && ok "fitted to timed plans" || bad "no plan fit: $(cat "$TMP/cal.txt")"
expect_eq "$(json_get "$TMP/cal.json" '(j["provenance"]["tool"], j["provenance"]["command"][1:], j["calibration"]["source"].endswith(j["provenance"]["date"][:10]))')" \
  "('coll-run', ['calibrate', '--quick', '-o', '$TMP/cal.json'], True)" "the calibrated topology: written by coll-run calibrate, dated alike"
grep -q "^coll-run: wrote $TMP/cal.json (calibrated topology, collkit.topology/1)$" "$TMP/cal.txt" && ok "calibrate says what it wrote" ||
  bad "calibrate's wrote line: $(tail -2 "$TMP/cal.txt")"
"$plan" generate --topo "$TMP/cal.json" --nranks 3 --coll allreduce --size 1M --algo ring -o "$TMP/p.json" >"$TMP/gen.txt" 2>&1 &&
  expect_eq "$(json_get "$TMP/p.json" 'j["predicted_us"] > 0')" True "a plan on the calibrated topology is predicted" ||
  bad "generate on the calibrated topology: $(cat "$TMP/gen.txt")"

# A run measured on the calibrated topology, compared with it.
mpi 3 "$run" --topo "$TMP/cal.json" --coll allgather --algo ring -b 64K -e 1M -f 16 -n 3 -w 1 --no-baseline --json "$TMP/run.json" \
  >"$TMP/run.txt" 2>&1 && "$plan" compare --results "$TMP/run.json" --topo "$TMP/cal.json" >"$TMP/cmp.txt" &&
  grep -q "^# 2 rows: median |error|" "$TMP/cmp.txt" && ok "compare on the calibrated topology" || bad "compare: $(tail -n 3 "$TMP/cmp.txt" "$TMP/run.txt")"

# Bad input.
expect_fail 2 "coll-run: error: calibrate: needs two ranks or more (run it under mpirun -np N)" mpi_said 1 "$run" calibrate --quick
"$COLLKIT_BIN/coll-topo" synth --node pcie-8gpu:gpus=2 -o "$TMP/two.json" 2>/dev/null
expect_fail 2 "coll-run: error: calibrate: the topology has 2 ranks, the job 3" mpi_said 3 "$run" calibrate --quick --topo "$TMP/two.json"
expect_fail 2 "coll-run: error: --timeout: must be more than 0 seconds" mpi_said 2 "$run" calibrate --timeout 0

finish
