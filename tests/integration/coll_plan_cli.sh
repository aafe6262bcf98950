#!/usr/bin/env bash
# coll-plan from the command line: generate every algorithm on a synthetic cluster, verify,
# simulate, sweep to a tuning table, export to MSCCL XML, show; and bad input.
source "$(dirname "$0")/lib.sh"
topo=$COLLKIT_BIN/coll-topo
plan=$COLLKIT_BIN/coll-plan
[ -x "$plan" ] || { echo "skip: $plan not built"; exit 77; }

"$topo" synth --node dgx-h100 --nodes 2 --fabric fat-tree:rails=8 -o "$TMP/t.json" 2>/dev/null
# notes FILE: what a command said on stderr besides where it wrote (tests/integration/provenance.sh).
notes() { grep -v "^coll-plan: wrote " "$1" || true; }

# Every applicable algorithm for every collective: generate with the topology, verify, simulate.
for coll in allreduce reducescatter allgather alltoall broadcast reduce; do
  for algo in ring tree rd rhd bruck pairwise direct hier twoshot scatter_allgather reducescatter_gather; do
    out="$TMP/$coll-$algo.json"
    if "$plan" generate --topo "$TMP/t.json" --coll "$coll" --size 1M --algo "$algo" -o "$out" >"$TMP/gen.txt" 2>"$TMP/gen.err"; then
      if "$plan" verify "$out" >/dev/null && "$plan" simulate "$out" --topo "$TMP/t.json" >"$TMP/sim.txt" &&
         grep -q "busbw" "$TMP/sim.txt" && grep -q "predicted" "$TMP/gen.txt"; then
        ok "$coll $algo: generated, verified, simulated"
      else
        bad "$coll $algo: $(cat "$TMP/sim.txt" 2>/dev/null | head -3)"
      fi
    else
      # Refusals are fine when the algorithm does not do that collective: one line, exit 2.
      rc=$?
      [ "$rc" = 2 ] && [ "$(wc -l <"$TMP/gen.err")" = 1 ] && ok "$coll $algo refused: $(cat "$TMP/gen.err")" || bad "$coll $algo: exit $rc $(cat "$TMP/gen.err")"
    fi
  done
done

# synth AlltoAll: the flow LP's optimum beside the bound (dgx-h100 x2: the NICs bind, 6.25 GB/s a pair).
"$plan" generate --topo "$TMP/t.json" --coll alltoall --size 1G --algo synth -o "$TMP/a2a.json" >"$TMP/a2a.txt"
expect_eq "$(grep -c "^  flow LP optimum 10737.42 us (6.25 GB/s per pair: routes through any NIC, host paths, relays)  gap " "$TMP/a2a.txt")" 1 \
  "synth alltoall: LP optimum printed"
"$plan" verify "$TMP/a2a.json" >/dev/null && ok "synth alltoall verifies" || bad "synth alltoall verify"

# A ring's 8 channels: channel 0 runs, the other 7 are checked to be its images (docs/plan.md).
"$plan" generate --topo "$TMP/t.json" --coll allreduce --size 1M --algo ring -o "$TMP/ring8.json" >/dev/null
expect_eq "$("$plan" verify "$TMP/ring8.json" | sed 's/.*(//')" \
  "7680 ops, 3840 transfers; channel 0 executed, channels 1-7 checked op for op to be its images)" "verify by channel 0"

# Sizes that do not split evenly (72 GPUs of a gb200-nvl72 rack): rounded to whole elements per
# rank with one line saying so, then planned, verified and simulated; AllReduce takes any count.
"$topo" synth --node gb200-nvl72 --nodes 1 -o "$TMP/nvl72.json" 2>/dev/null
for coll in allgather reducescatter alltoall allreduce broadcast reduce; do
  for size in 1M 64M 1G; do
    out="$TMP/nvl72-$coll-$size.json"
    if "$plan" generate --topo "$TMP/nvl72.json" --coll "$coll" --size "$size" -o "$out" >"$TMP/gen.txt" 2>"$TMP/gen.err" &&
       "$plan" verify "$out" >/dev/null && "$plan" simulate "$out" --topo "$TMP/nvl72.json" >/dev/null; then
      ok "nvl72 $coll $size: auto planned ($(json_get "$out" 'j["algorithm"]')), verified, simulated"
    else
      bad "nvl72 $coll $size: $(cat "$TMP/gen.err")"
    fi
  done
done
expect_eq "$(notes "$TMP/gen.err")" "" "reduce 1G: nothing rounded"
"$plan" generate --topo "$TMP/nvl72.json" --coll allgather --size 1M --algo ring -o "$TMP/ag72.json" >/dev/null 2>"$TMP/ag72.err"
expect_eq "$(notes "$TMP/ag72.err")" "coll-plan: size 1048576 rounded down to 1048536 bytes: whole elements per rank" "allgather 1M on 72 ranks"
expect_eq "$(json_get "$TMP/ag72.json" 'j["bytes"]')" 1048536 "the plan's size"
"$plan" generate --nranks 5 --coll allreduce --size 1004 --elem-bytes 4 --algo ring -o "$TMP/ar5.json" 2>"$TMP/ar5.err"
expect_eq "$(json_get "$TMP/ar5.json" '(j["bytes"], j["elem_bytes"], j["chunks"]["input"])')" "(1004, 4, 5)" "uneven allreduce: 251 floats in 5 chunks"
expect_eq "$(notes "$TMP/ar5.err")" "" "allreduce: nothing rounded"
"$plan" verify "$TMP/ar5.json" >/dev/null && ok "uneven allreduce verifies" || bad "uneven allreduce"

# auto picks the fastest and says so; the file records the topology it was made for.
"$plan" generate --topo "$TMP/t.json" --coll allreduce --size 256M --algo auto -o "$TMP/auto.json" >/dev/null
expect_eq "$(json_get "$TMP/auto.json" 'j["topology"]["fingerprint"] != "" and j["predicted_us"] > 0')" True "auto plan carries prediction and fingerprint"

# Explicit programs round-trip through verify.
"$plan" generate --nranks 5 --coll allgather --size 5K --algo ring --explicit -o "$TMP/explicit.json"
expect_eq "$(json_get "$TMP/explicit.json" 'len(j["programs"])')" 5 "explicit programs"
"$plan" verify "$TMP/explicit.json" >/dev/null && ok "explicit plan verifies" || bad "explicit plan"

# A tampered plan: one receive's chunk changed. Verify must refuse it with exit 2.
python3 - "$TMP/explicit.json" "$TMP/tampered.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for op in j["programs"][2]:
    if op["op"] == "recv":
        op["dst"][1] = (op["dst"][1] + 1) % j["chunks"]["output"]
        break
json.dump(j, open(sys.argv[2], "w"))
PY
rc=0; "$plan" verify "$TMP/tampered.json" >/dev/null 2>"$TMP/err" || rc=$?
[ "$rc" = 2 ] && grep -q "^coll-plan: error: $TMP/tampered.json: plan is wrong: " "$TMP/err" && ok "tampered plan refused" || bad "tampered plan: $rc $(cat "$TMP/err")"

# Sweep with a tuning table.
"$plan" sweep --topo "$TMP/t.json" --coll allreduce -b 1K -e 64M -f 8 --json "$TMP/tuning.json" >"$TMP/sweep.txt"
grep -q "gap%" "$TMP/sweep.txt" && ok "sweep table" || bad "sweep table"
expect_eq "$(json_get "$TMP/tuning.json" 'j["schema"]')" collkit.tuning/1 "tuning table schema"
expect_eq "$(json_get "$TMP/tuning.json" 'j["ranges"][0]["min_bytes"]')" 0 "tuning table starts at 0"
expect_eq "$(json_get "$TMP/tuning.json" '"max_bytes" in j["ranges"][-1]')" False "tuning table's last range is open, not 2^64-1"
expect_eq "$(json_get "$TMP/tuning.json" 'all(r["nccl"]["algorithm"] in ("ring", "tree") for r in j["ranges"])')" True \
  "tuning table ranges carry NCCL's choice"

# MSCCL XML export of a small ring parses as XML with one <gpu> per rank.
"$plan" generate --nranks 4 --coll allreduce --size 1M --algo ring -o "$TMP/r4.json"
"$plan" export --format msccl-xml "$TMP/r4.json" -o "$TMP/r4.xml"
expect_eq "$(python3 -c 'import sys,xml.etree.ElementTree as E; print(len(E.parse(sys.argv[1]).getroot().findall("gpu")))' "$TMP/r4.xml")" 4 "msccl gpus"
"$plan" show "$TMP/r4.json" --rank 1 >"$TMP/show.txt" && grep -q "send" "$TMP/show.txt" && ok "show" || bad "show"
# A synthesised Broadcast (one root's trees, a channel per tree arc) exports within MSCCL's 32
# channels; one whose tree arcs carry 64 chunks each way is refused with the reason.
"$topo" synth --node dgx-a100 --nodes 1 -o "$TMP/a100.json"
"$plan" generate --topo "$TMP/a100.json" --coll broadcast --root 3 --size 1M --algo synth --pipeline 4 -o "$TMP/sb.json"
"$plan" export --format msccl-xml "$TMP/sb.json" -o "$TMP/sb.xml"
expect_eq "$(python3 -c 'import sys,xml.etree.ElementTree as E; a = E.parse(sys.argv[1]).getroot(); print(a.get("coll"), len(a.findall("gpu")), int(a.get("nchannels")) <= 32)' "$TMP/sb.xml")" \
  "broadcast 8 True" "synth broadcast as msccl xml"
"$plan" generate --topo "$TMP/a100.json" --coll allgather --size 1M --algo synth --pipeline 65 -o "$TMP/sg.json"
expect_fail 2 "coll-plan: error: $TMP/sg.json: rank 0 threadblock 1 needs 65 steps, MSCCL allows 64 (--max-steps for a runtime built with a larger MSCCL_MAX_NUM_STEPS)" "$plan" export --format msccl-xml "$TMP/sg.json"
"$plan" export --format msccl-xml --max-steps 256 "$TMP/sg.json" -o "$TMP/sg.xml" && grep -q "<algo " "$TMP/sg.xml" && ok "--max-steps 256 exports the 65-step plan" || bad "--max-steps 256 refused"

# synth-info: a synthesised plan's trees or flow LP; with --topo, the simulated time beside the
# bound and the optimal rates (dgx-a100 x1: the optimum over every link counts GPUs relaying over
# PCIe, 47.36 GB/s a root, which routed sends cannot, 42.86).
"$plan" synth-info "$TMP/sb.json" >"$TMP/si.txt"
expect_eq "$(sed -n 2p "$TMP/si.txt")" "  trees: k = 7 from root 3 (7 in all); depth deepest 2, mean 2.00; fan-out most 6, mean 3.50" \
  "synth-info: broadcast's trees"
expect_eq "$(sed -n 3p "$TMP/si.txt")" "  pipeline: 4 chunks per tree" "synth-info: broadcast's pipeline"
"$plan" generate --topo "$TMP/a100.json" --coll allgather --size 1M --algo synth -o "$TMP/sg1.json" >/dev/null
"$plan" synth-info "$TMP/sg1.json" --topo "$TMP/a100.json" >"$TMP/si.txt"
expect_eq "$(sed -n 2p "$TMP/si.txt")" "  trees: k = 4 per rank (32 in all); depth deepest 1, mean 1.00; fan-out most 7, mean 7.00" \
  "synth-info: allgather's trees"
expect_eq "$(grep -c '^on dgx-a100: simulated [0-9.]* us  bound 2.77 us  gap ' "$TMP/si.txt")" 1 "synth-info: time and bound"
expect_eq "$(grep -c '^    optimal over every link: *47.36 GB/s *2.77 us  simulated ' "$TMP/si.txt")" 1 "synth-info: optimum"
expect_eq "$(grep -c '^    optimal over the routed links: *42.86 GB/s *3.06 us  simulated ' "$TMP/si.txt")" 1 "synth-info: routed optimum"
expect_eq "$(grep -c '^    packed, k = 4: *42.86 GB/s' "$TMP/si.txt")" 1 "synth-info: packed rate"
"$plan" generate --topo "$TMP/a100.json" --coll allreduce --size 1M --algo synth -o "$TMP/sr1.json" >/dev/null
expect_eq "$("$plan" synth-info "$TMP/sr1.json" | sed -n 2p)" "  allreduce as rs-ag (ReduceScatter up every rank's trees, AllGather down them)" \
  "synth-info: allreduce's form"
"$plan" synth-info "$TMP/a2a.json" --topo "$TMP/t.json" >"$TMP/si.txt"
expect_eq "$(sed -n 2,3p "$TMP/si.txt")" "  LP optimum 6.25 GB/s per pair (routes through any NIC, host paths, relays): 10737.42 us
  relays: 0 paths through 0 ranks, 0 of 15360 chunks (0.0%); 64 chunks per block" "synth-info: alltoall's LP"
expect_eq "$(grep -c '^  over the LP optimum (10737.42 us): 1.0[0-9]* x$' "$TMP/si.txt")" 1 "synth-info: alltoall over its LP"
expect_fail 2 "coll-plan: error: $TMP/r4.json: not a synthesised plan (algorithm ring); synth-info reads plans made by --algo synth" \
  "$plan" synth-info "$TMP/r4.json"
expect_fail 3 "coll-plan: error: $TMP/none.json: cannot open: No such file or directory" "$plan" synth-info "$TMP/none.json"
expect_fail 2 "coll-plan: error: $TMP/a2a.json: simulate: the plan has 16 ranks but topology \"dgx-a100\" maps 8" \
  "$plan" synth-info "$TMP/a2a.json" --topo "$TMP/a100.json"
python3 - "$TMP/sg1.json" "$TMP/sg1-bad.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
trees = j["params"]["trees"].split(";")
trees[0] = "-1,1,0,0,0,0,0,0"  # rank 1's parent is itself: it never reaches root 0
j["params"]["trees"] = ";".join(trees)
json.dump(j, open(sys.argv[2], "w"))
PY
expect_fail 2 "coll-plan: error: $TMP/sg1-bad.json: synth: plan parameter trees: tree 0 does not lead rank 1 to its root 0" \
  "$plan" synth-info "$TMP/sg1-bad.json"
# A ring's shares (param weights, docs/algorithms.md "Weighted channels") malformed in a plan file.
for w in 0 3,1; do
  python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); j["params"]["weights"] = sys.argv[3]; json.dump(j, open(sys.argv[2], "w"))' \
    "$TMP/r4.json" "$TMP/r4-weights.json" "$w"
  [ "$w" = 0 ] && why='weights="0": expected a positive integer per channel, comma-separated' || why='weights has 2 entries for 1 channels'
  expect_fail 2 "coll-plan: error: $TMP/r4-weights.json: plan is wrong: rank 0: cannot expand its program: ring: plan parameter $why" \
    "$plan" verify "$TMP/r4-weights.json"
done
python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); j["params"]["lp_gbps"] = "fast"; json.dump(j, open(sys.argv[2], "w"))' \
  "$TMP/a2a.json" "$TMP/a2a-bad.json"
expect_fail 2 "coll-plan: error: $TMP/a2a-bad.json: plan parameter lp_gbps=\"fast\": expected a positive number" \
  "$plan" synth-info "$TMP/a2a-bad.json"
python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); j["params"]["lp_us"] = "1e400"; json.dump(j, open(sys.argv[2], "w"))' \
  "$TMP/a2a.json" "$TMP/a2a-bad2.json"
expect_fail 2 "coll-plan: error: $TMP/a2a-bad2.json: plan parameter lp_us=\"1e400\": expected a positive number" \
  "$plan" simulate "$TMP/a2a-bad2.json" --topo "$TMP/t.json"

# Bad input: one line, exit 2 (or 3 for a missing file).
rc=0; "$plan" generate --nranks 2 --algo spiral >/dev/null 2>"$TMP/err" || rc=$?
[ "$rc" = 2 ] && grep -q '^coll-plan: error: unknown algorithm "spiral" (known: ring, .*)$' "$TMP/err" && ok "unknown algorithm" || bad "unknown algorithm: $rc $(cat "$TMP/err")"
expect_fail 2 "coll-plan: error: unknown collective \"allscatter\" (expected allreduce, reducescatter, allgather, alltoall, broadcast or reduce)" \
  "$plan" generate --nranks 2 --coll allscatter --algo ring
expect_fail 2 "coll-plan: error: --algo auto needs a topology to simulate the candidates (give --topo)" "$plan" generate --nranks 2
expect_fail 2 "coll-plan: error: 64 ranks asked, the topology dgx-h100x2-fat-tree has 16" \
  "$plan" generate --topo "$TMP/t.json" --nranks 64 --algo ring
# Errors found while using a plan's content (its parameters, its chunk indices: checked when the
# programs expand) name the plan's file in every command that reads it.
"$plan" generate --nranks 4 --algo ring -o "$TMP/r4p.json" >/dev/null
python3 - "$TMP/r4p.json" "$TMP/badparam.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
p["params"]["pipeline"] = "x"
json.dump(p, open(sys.argv[2], "w"))
EOF
param='plan parameter pipeline="x": expected an integer'
expect_fail 2 "coll-plan: error: $TMP/badparam.json: plan is wrong: rank 0: cannot expand its program: $param" "$plan" verify "$TMP/badparam.json"
expect_fail 2 "coll-plan: error: $TMP/badparam.json: $param" "$plan" simulate "$TMP/badparam.json" --topo "$TMP/t.json"
expect_fail 2 "coll-plan: error: $TMP/badparam.json: rank 0: cannot expand its program: $param" "$plan" export "$TMP/badparam.json"
expect_fail 2 "coll-plan: error: $TMP/badparam.json: $param" "$plan" show "$TMP/badparam.json"

# One rank more than the topology maps: the ring ordered the topology's ranks before the check.
for a in ring tree rhd direct auto; do
  expect_fail 2 "coll-plan: error: 17 ranks asked, the topology dgx-h100x2-fat-tree has 16" \
    "$plan" generate --topo "$TMP/t.json" --nranks 17 --algo "$a"
done
expect_fail 2 "coll-plan: error: allgather: size 2 is less than 3 bytes, the least that gives whole elements per rank" \
  "$plan" generate --nranks 3 --coll allgather --size 2 --algo ring
expect_fail 2 "coll-plan: error: allreduce: size 6 is less than 8 bytes, the least that gives whole 8-byte elements" \
  "$plan" generate --nranks 3 --size 6 --elem-bytes 8 --algo ring
expect_fail 2 "coll-plan: error: invalid size \"12Q\": unknown suffix (use K, M, G or T, 1024-based)" \
  "$plan" generate --nranks 3 --size 12Q --algo ring
# What a plan file cannot hold is refused by generate, not written for the loader to refuse.
expect_fail 2 "coll-plan: error: channels must be between 0 (the algorithm's) and 65535 (what a plan holds), got 65536" \
  "$plan" generate --nranks 4 --algo ring --channels 65536 -o "$TMP/never.json"
expect_fail 2 "coll-plan: error: allreduce: the number of ranks must be at most 16777216 (what a plan holds), got 16777217" \
  "$plan" generate --nranks 16777217 --algo ring -o "$TMP/never.json"
expect_fail 2 "coll-plan: error: allreduce: the size must be at most 9223372036854775807 bytes (what a plan holds), got 9223372036854775808" \
  "$plan" generate --nranks 4 --size 9223372036854775808 --algo ring -o "$TMP/never.json"
expect_fail 2 "coll-plan: error: 1 channels x 8 ranks x pipeline 1000000000 make more than 4294967295 chunks (what a plan holds)" \
  "$plan" generate --nranks 8 --algo ring --pipeline 1000000000 -o "$TMP/never.json"
[ ! -e "$TMP/never.json" ] && ok "nothing written past the limits" || bad "a plan past the limits was written"
# An output that is an input is refused before any work, and the input stays as it was.
cp "$TMP/ring8.json" "$TMP/same.json"
expect_fail 2 "coll-plan: error: $TMP/same.json: the output would overwrite the input $TMP/same.json; write it elsewhere" \
  "$plan" export --format msccl-xml "$TMP/same.json" -o "$TMP/same.json"
cmp -s "$TMP/ring8.json" "$TMP/same.json" && ok "export left its input alone" || bad "export overwrote its input"
expect_fail 2 "coll-plan: error: $TMP/./t.json: the output would overwrite the input $TMP/t.json; write it elsewhere" \
  "$plan" generate --topo "$TMP/t.json" --algo ring -o "$TMP/./t.json"
expect_fail 2 "coll-plan: error: $TMP/t.json: the output would overwrite the input $TMP/t.json; write it elsewhere" \
  "$plan" sweep --topo "$TMP/t.json" --json "$TMP/t.json"
expect_fail 2 "coll-plan: error: $TMP/t.json: /schema: expected \"collkit.plan/1\", got \"collkit.topology/1\"" "$plan" verify "$TMP/t.json"
expect_fail 3 "coll-plan: error: $TMP/none.json: cannot open: No such file or directory" "$plan" verify "$TMP/none.json"
expect_fail 3 "coll-plan: error: $TMP/none.json: cannot open: No such file or directory" "$plan" compare --results "$TMP/none.json"
expect_fail 2 "coll-plan: error: $TMP/ring8.json: /schema: expected \"collkit.results/1\", got \"collkit.plan/1\"" \
  "$plan" compare --results "$TMP/ring8.json"
expect_fail 2 "coll-plan: error: unknown --measured \"best\" (expected mean or block-median)" \
  "$plan" compare --results "$TMP/ring8.json" --measured best
expect_fail 2 "coll-plan: error: verify: channel 0 of this plan runs about 960 ops, which would take about 39 kB, more than the limit of 10 kB; verify the same algorithm on fewer ranks" \
  "$plan" verify "$TMP/ring8.json" --max-memory 10K
expect_fail 2 "coll-plan: error: --max-memory must be more than 0 bytes" "$plan" verify "$TMP/ring8.json" --max-memory 0
expect_fail 2 "coll-plan: error: invalid size \"lots\": expected a number with an optional K, M, G or T suffix" "$plan" verify "$TMP/ring8.json" --max-memory lots
expect_fail 2 "coll-plan: error: unknown link model \"fluid\" (expected queue or maxmin)" \
  "$plan" simulate "$TMP/r4.json" --topo "$TMP/t.json" --model fluid
expect_fail 2 "coll-plan: error: simulate: the per-message overhead must be a finite number >= 0 (us), got nan" \
  timeout 20 "$plan" simulate "$TMP/r4.json" --topo "$TMP/t.json" --per-message-us nan

# --no-fold simulates every rank's threads: under MaxMin the ring's symmetric copies give the
# folded time exactly (Queue's order of service may differ a little: docs/plan.md, "Symmetry").
folded=$("$plan" simulate "$TMP/ring8.json" --topo "$TMP/t.json" --model maxmin | sed -n 2p)
unfolded=$("$plan" simulate "$TMP/ring8.json" --topo "$TMP/t.json" --model maxmin --no-fold | sed -n 2p)
case "$folded" in *", each simulated thread standing for "[0-9]*")") ok "simulate says how far it folded" ;; *) bad "simulate: $folded" ;; esac
expect_eq "$unfolded" "${folded%%, each simulated thread*})" "simulate --no-fold: the same time, every thread simulated"

# "-" reads standard input, for any one input file.
"$plan" generate --topo - --algo ring --coll allreduce --size 1M -o "$TMP/stdin.json" <"$TMP/t.json" >/dev/null 2>&1 &&
  ok "generate --topo - reads the topology from stdin" || bad "generate --topo - failed"
out=$("$plan" generate --topo "$TMP/t.json" --algo ring --coll allreduce --size 1M -o - 2>/dev/null | "$plan" verify - 2>&1) || true
case "$out" in "-: verified allreduce of 1M"*) ok "generate -o - | verify -" ;; *) bad "generate -o - | verify -: $out" ;; esac
expect_fail 2 'coll-plan: error: -: standard input was already read for another input (only one can be "-")' \
  "$plan" simulate - --topo - <"$TMP/stdin.json"
printf '{\n  "schema": 1e309}\n' >"$TMP/huge.json"
expect_fail 2 "coll-plan: error: $TMP/huge.json:2:13: invalid JSON: number out of range (1e309)" "$plan" verify "$TMP/huge.json"

# sweep --json -: the tuning table alone on stdout, the human table on stderr.
"$plan" sweep --topo "$TMP/t.json" -b 1K -e 4K --json - >"$TMP/sweep.json" 2>"$TMP/sweep.txt" &&
  expect_eq "$(json_get "$TMP/sweep.json" 'j["schema"]')" "collkit.tuning/1" "sweep --json - on stdout" || bad "sweep --json - failed"
grep -q "predicted time (us) per algorithm" "$TMP/sweep.txt" && ok "sweep --json -: the table on stderr" || bad "sweep --json -: no table on stderr"

# A flag given twice takes its last value; --help shows defaults.
"$plan" generate --nranks 4 --coll allreduce --size 1K --size 2K --algo ring -o "$TMP/twice.json" >/dev/null 2>&1
expect_eq "$(json_get "$TMP/twice.json" 'j["bytes"]')" "2048" "--size 1K --size 2K takes the last"
"$plan" generate --help | grep -q -- "--coll TEXT=allreduce" && ok "generate --help shows defaults" || bad "generate --help shows no defaults"

finish
