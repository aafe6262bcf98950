#!/usr/bin/env bash
# coll-overlap from the command line: the model listing, a run on a preset and on a topology file
# with its JSON and trace, free communication, and bad input pinned word for word.
source "$(dirname "$0")/lib.sh"
ov=$COLLKIT_BIN/coll-overlap
topo=$COLLKIT_BIN/coll-topo
[ -x "$ov" ] || { echo "skip: $ov not built"; exit 77; }

"$ov" models >"$TMP/models.txt"
for m in llama3-8b llama3-70b llama3-405b gpt3-175b mixtral-8x7b deepseek-v3; do
  grep -q "^$m " "$TMP/models.txt" && ok "models lists $m" || bad "models does not list $m"
done

# A preset, two hosts: TP 8 with SP inside each host, DP 2 across them.
"$ov" --topo dgx-h100 --nodes 2 --model llama3-8b --tp 8 --sp --dp 2 --seq-len 2048 \
  --json "$TMP/o.json" --trace "$TMP/trace.json" >"$TMP/out.txt"
grep -q "^none " "$TMP/out.txt" && grep -q "^auto " "$TMP/out.txt" && ok "summary has none and auto rows" || bad "summary: $(cat "$TMP/out.txt")"
expect_eq "$(json_get "$TMP/o.json" 'j["schema"]')" "collkit.overlap/1" "schema"
expect_eq "$(json_get "$TMP/o.json" 'j["strategies"][-1]["name"]')" "auto" "last row"
expect_eq "$(json_get "$TMP/o.json" 'j["strategies"][-1]["speedup"] >= 1.0')" "True" "auto never slower than none"
expect_eq "$(json_get "$TMP/o.json" 'all(r["exposed_comm_us"] >= 0 for r in j["strategies"])')" "True" "exposed communication >= 0"
expect_eq "$(json_get "$TMP/o.json" 'sorted({c["group"] for c in j["collectives"]})')" "['dp', 'tp']" "groups planned"
expect_eq "$(json_get "$TMP/trace.json" 'len([e for e in j["traceEvents"] if e["ph"] == "X"]) > 100')" "True" "trace has slices"
expect_eq "$(json_get "$TMP/trace.json" 'j["otherData"]["strategy"]')" "auto" "trace of the chosen schedule"

# The same cluster from a topology file; a strategy with its knob fixed.
"$topo" synth --node dgx-h100 --nodes 2 -o "$TMP/t.json" 2>/dev/null
"$ov" --topo "$TMP/t.json" --model llama3-8b --tp 8 --sp --dp 2 --seq-len 2048 --strategy tp-decompose --tp-chunks 4 \
  --json "$TMP/o2.json" >/dev/null
expect_eq "$(json_get "$TMP/o2.json" 'j["schedule"]["knobs"]')" "{'tp-decompose': 4}" "fixed knob kept"

# Free communication: nothing to hide, auto gains nothing.
"$ov" --nodes 2 --model llama3-8b --tp 8 --sp --dp 2 --seq-len 2048 --comm-scale 0 --json "$TMP/free.json" >/dev/null
expect_eq "$(json_get "$TMP/free.json" 'round(j["strategies"][-1]["speedup"], 9)')" "1.0" "free communication: speedup 1"

# MoE: EP 8 strided over two hosts (TP 2 inside), its AlltoAll crosses the network.
"$ov" --nodes 2 --model mixtral-8x7b --tp 2 --sp --dp 8 --ep 8 --seq-len 1024 --json "$TMP/moe.json" >/dev/null
expect_eq "$(json_get "$TMP/moe.json" '[r["name"] for r in j["strategies"]]')" "['none', 'dp-bucket', 'tp-decompose', 'moe-pipeline', 'auto']" "MoE rows"
expect_eq "$(json_get "$TMP/moe.json" '[c["algorithm"] for c in j["collectives"] if c["group"] == "ep"][0] != "-"')" "True" "EP AlltoAll planned"

# The documented example model file, by path.
"$ov" --model "$COLLKIT_DOCS/examples/model.json" --tp 2 --dp 4 --ep 4 --seq-len 512 --json "$TMP/tiny.json" >/dev/null
expect_eq "$(json_get "$TMP/tiny.json" 'j["model"]["name"]')" "tiny-moe" "docs/examples/model.json runs"

expect_fail 2 "coll-overlap: error: --tp 3 does not divide the 64 attention heads of llama3-70b" \
  "$ov" --model llama3-70b --tp 3
expect_fail 2 "coll-overlap: error: the layout needs 32 GPUs (tp 8 x dp 4 x pp 1) but the topology dgx-h100x2-fat-tree has 16" \
  "$ov" --nodes 2 --model llama3-70b --tp 8 --dp 4
expect_fail 2 "coll-overlap: error: unknown model \"gpt5\" (known: deepseek-v3, gpt3-175b, llama3-405b, llama3-70b, llama3-8b, mixtral-8x7b)" \
  "$ov" --model gpt5
expect_fail 2 "coll-overlap: error: node0/gpu0 (Tesla V100-SXM2-32GB) has no \"peak_bf16_tflops\"; add it from the GPU's datasheet (docs/presets.md)" \
  "$ov" --topo dgx1-v100 --model llama3-8b --tp 8
expect_fail 2 "coll-overlap: error: --strategy moe-pipeline does not apply: the model has no MoE layer" \
  "$ov" --model llama3-8b --tp 8 --strategy moe-pipeline
expect_fail 2 "coll-overlap: error: give --model (one of configs/models/, or a collkit.model/1 file)" "$ov"
"$COLLKIT_BIN/coll-topo" synth --node dgx-h100 -o "$TMP/node.json" 2>/dev/null
expect_fail 2 "coll-overlap: error: $TMP/node.json: the output would overwrite the input $TMP/node.json; write it elsewhere" \
  "$ov" --topo "$TMP/node.json" --model llama3-8b --tp 8 --json "$TMP/node.json"
# Counts that once ran without end or into bad_alloc: refused at their limit (docs/errors.md).
expect_fail 2 "coll-overlap: error: --microbatches must be at most 1024 (the limit on micro-batches per step), got 1000000000" \
  timeout 20 "$ov" --model llama3-8b --microbatches 1000000000
expect_fail 2 "coll-overlap: error: --nodes 100000: 100000 nodes of 27 vertices exceed the limit of 1048576 vertices in a topology" \
  timeout 20 "$ov" --model llama3-8b --nodes 100000
expect_fail 2 "coll-overlap: error: tp-decompose: the knob must be at most 1024 (the limit on a strategy's knob), got 1000000" \
  timeout 20 "$ov" --model llama3-8b --tp 8 --tp-chunks 1000000
# run --predict-only: the prediction run makes on a job of the layout's ranks on this host, without
# mpirun; with --schedules, a recorded run's rows predicted again (bench/overlap_measured.sh's
# COLLKIT_BENCH_REPREDICT). With a calibration, the same schedules predict the same steps.
cat >"$TMP/cal.json" <<'JSON'
{"schema": "collkit.overlap-calibration/1", "source": "test", "ranks": 2, "compute_slowdown": 0.1, "comm_slowdown": 2, "sync_us": 300,
 "gemms": [{"m": 256, "k": 256, "n": 448, "reps": 1, "time_us": 800, "gflops": 73}],
 "collectives": [{"collective": "allgather", "nranks": 2, "bytes": 131072, "time_us": 60, "group": "tp"},
                 {"collective": "reducescatter", "nranks": 2, "bytes": 131072, "time_us": 70, "group": "tp"}]}
JSON
"$ov" run --predict-only --model llama3-8b --tp 2 --sp --scale 16 --calibration "$TMP/cal.json" --strategy auto \
  --json "$TMP/p1.json" >"$TMP/p1.txt"
grep -q "^none " "$TMP/p1.txt" && ok "predict-only prints the table" || bad "predict-only: $(cat "$TMP/p1.txt")"
expect_eq "$(json_get "$TMP/p1.json" '[r["name"] for r in j["strategies"]]')" "['none', 'tp-decompose', 'auto']" "predict-only rows"
# The wait for the slowest rank is the step's, not communication alone's: 300 us per collective of the serial step.
expect_eq "$(json_get "$TMP/p1.json" 'j["strategies"][0]["comm_wait_us"] > 0 and abs(j["strategies"][0]["exposed_comm_us"] - j["strategies"][0]["comm_us"] - j["strategies"][0]["comm_wait_us"]) < 0.01')" "True" "serial exposed = comm alone + waits"
# The recorded schedules, one knob forced to another value than the model chose: kept as given.
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); j['strategies'][1]['knobs']={'tp-decompose': 3}; json.dump(j, open(sys.argv[2], 'w'))" \
  "$TMP/p1.json" "$TMP/rec.json"
"$ov" run --predict-only --model llama3-8b --tp 2 --sp --scale 16 --calibration "$TMP/cal.json" --schedules "$TMP/rec.json" \
  --json "$TMP/p2.json" >/dev/null
expect_eq "$(json_get "$TMP/p2.json" '[(r["name"], r["knobs"]) for r in j["strategies"]]')" \
  "$(json_get "$TMP/p1.json" '[(r["name"], r["knobs"] if r["name"] != "tp-decompose" else {"tp-decompose": 3}) for r in j["strategies"]]')" "schedules kept"
expect_eq "$(python3 -c "import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); print([x['step_us'] for x in a['strategies']][::2] == [x['step_us'] for x in b['strategies']][::2])" "$TMP/p1.json" "$TMP/p2.json")" \
  "True" "the same schedules predict the same steps"
expect_fail 2 "coll-overlap: error: run: --schedules needs --predict-only" \
  "$ov" run --model llama3-8b --tp 2 --schedules "$TMP/p1.json"
expect_fail 2 "coll-overlap: error: run: --predict-only measures nothing: give --calibration FILE, not --calibrate" \
  "$ov" run --predict-only --calibrate --model llama3-8b --tp 2
expect_fail 2 "coll-overlap: error: $TMP/cal.json: calibrated on 2 ranks, this layout has 4" \
  "$ov" run --predict-only --model llama3-8b --tp 4 --scale 16 --calibration "$TMP/cal.json"
echo '{"schema": "collkit.overlap/1", "strategies": [{"name": "x", "knobs": {"nope": 2}}]}' >"$TMP/bad.json"
expect_fail 2 "coll-overlap: error: $TMP/bad.json: /strategies/0/knobs/nope: unknown strategy \"nope\"" \
  "$ov" run --predict-only --model llama3-8b --tp 2 --scale 16 --schedules "$TMP/bad.json"
finish
