#!/usr/bin/env bash
# coll-run under mpirun with the mpi backend: every algorithm of libs/plan for every collective,
# datatype and operator on 2, 3 and 4 ranks with zero wrong elements, in place and out of place;
# hier across two synthetic hosts; a plan file; a mismatched plan; bad input with one-line errors.
source "$(dirname "$0")/lib.sh"
run="$COLLKIT_BIN/coll-run"
if ! command -v mpirun >/dev/null; then echo "skip: mpirun not found"; exit 77; fi

# The matrix: every applicable algorithm x collective x datatype x operator, both placements.
# Ranks spread over hosts of a synthetic topology (2x1, 3x1, 2x2), so hier's inter-host phase runs.
for np in 2 3 4; do
  baseline=--no-baseline
  [ "$np" = 4 ] && baseline=  # once with the native collectives beside, which checks them too
  hosts=$np gpus=1
  [ "$np" = 4 ] && hosts=2 gpus=2
  "$COLLKIT_BIN/coll-topo" synth --node pcie-8gpu:gpus=$gpus --nodes $hosts --fabric single-switch -o "$TMP/t$np.json"
  if mpi "$np" "$run" --coll all --algo all -d all -o all -b 4K -e 64K -f 16 -n 1 -w 0 -r 1 --topo "$TMP/t$np.json" $baseline \
       --json "$TMP/all$np.json" >"$TMP/all$np.txt" 2>&1; then
    ok "np $np: every algorithm, collective, datatype and operator ran"
  else
    bad "np $np: exit $?: $(tail -5 "$TMP/all$np.txt")"
  fi
  expect_eq "$(json_get "$TMP/all$np.json" 'j["total_wrong"]')" 0 "np $np wrong elements"
  expect_eq "$(json_get "$TMP/all$np.json" 'sorted({t["algorithm"] for t in j["tables"]})')" \
    "['bruck', 'direct', 'hier', 'pairwise', 'rd', 'reducescatter_gather', 'rhd', 'ring', 'scatter_allgather', 'straggler', 'synth', 'tree', 'twoshot']" \
    "np $np algorithms run"
  expect_eq "$(json_get "$TMP/all$np.json" 'sorted({t["collective"] for t in j["tables"] if t["algorithm"] == "synth"})')" \
    "['allgather', 'allreduce', 'alltoall', 'broadcast', 'reduce', 'reducescatter']" \
    "np $np synth's collectives (one root's trees for broadcast, reduce; the flow LP for alltoall)"
  expect_eq "$(json_get "$TMP/all$np.json" 'len({(t["collective"], t["type"], t.get("redop")) for t in j["tables"]})')" \
    "$((7 * (5 * 3 + 3)))" "np $np collective x datatype x operator tables"
  expect_eq "$(json_get "$TMP/all$np.json" 'all(r["in_place"]["wrong"] == 0 and r["out_of_place"]["wrong"] == 0 for t in j["tables"] for r in t["rows"])')" \
    True "np $np every row checked and right"
done
expect_eq "$(json_get "$TMP/all4.json" 'sum(r["native_out_of_place"]["wrong"] + r["native_in_place"]["wrong"] for t in j["tables"] for r in t["rows"])')" \
  0 "native collectives agree with the pattern"
# coll-plan compare reads the run back: every measured row against its recorded prediction, and
# against a fresh simulation on the topology (the same figures: the run predicted on it).
"$COLLKIT_BIN/coll-plan" compare --results "$TMP/all4.json" >"$TMP/cmp4.txt" &&
  grep -q "^# [0-9]* rows.*median |error| [0-9.]*%, worst" "$TMP/cmp4.txt" && ok "compare with recorded predictions" ||
  bad "compare: $(tail -2 "$TMP/cmp4.txt")"
"$COLLKIT_BIN/coll-plan" compare --results "$TMP/all4.json" --topo "$TMP/t4.json" >"$TMP/cmp4t.txt" &&
  expect_eq "$(tail -1 "$TMP/cmp4t.txt" | sed 's/ (.*left out)//')" "$(tail -1 "$TMP/cmp4.txt" | sed 's/ (.*left out)//')" "compare re-simulated on the run's topology"
# Every measured placement also records the median of its timed blocks, and compare judges by it on request.
expect_eq "$(json_get "$TMP/all4.json" 'all(r[p]["block_median_us"] > 0 for t in j["tables"] for r in t["rows"] for p in ("out_of_place", "in_place") if r.get(p))')" \
  True "np 4 every placement's block median"
"$COLLKIT_BIN/coll-plan" compare --measured block-median --results "$TMP/all4.json" >"$TMP/cmp4b.txt" &&
  grep -q "^# .*(median of the timed blocks)" "$TMP/cmp4b.txt" && ok "compare by the block median" || bad "compare --measured block-median: $(tail -2 "$TMP/cmp4b.txt")"

# --json -: the JSON alone on stdout (one document, parseable), the tables on stderr.
mpi 2 "$run" --coll allreduce --algo ring -b 1K -e 4K -n 1 -w 0 --no-discover --json - >"$TMP/stdout.json" 2>"$TMP/stderr.txt" &&
  expect_eq "$(json_get "$TMP/stdout.json" 'j["schema"]')" "collkit.results/1" "coll-run --json - on stdout" ||
  bad "coll-run --json -: $(tail -2 "$TMP/stderr.txt")"
grep -q "^# coll-run: backend mpi" "$TMP/stderr.txt" && ok "coll-run --json -: the table on stderr" || bad "coll-run --json -: no table on stderr"

# nccl-tests' flags: -i linear steps from a fractional -b, -c checked runs, -T timeout, --csv.
mpi 2 "$run" --coll allreduce --algo ring -b 1.5K -e 4.5K -i 1.5K -c 2 -T 30 -n 1 -w 0 --no-discover --csv "$TMP/rows.csv" \
  >"$TMP/csv.txt" 2>&1 || bad "coll-run -i/-c/-T/--csv: $(tail -2 "$TMP/csv.txt")"
expect_eq "$(cut -d, -f6 "$TMP/rows.csv" | tail -n +2 | tr '\n' ' ')" "1536 3072 4608 " "-b 1.5K -e 4.5K -i 1.5K sizes in the CSV"
expect_eq "$(head -1 "$TMP/rows.csv" | cut -d, -f1-3)" "collective,algorithm,type" "CSV header"
expect_eq "$(cut -d, -f11 "$TMP/rows.csv" | tail -n +2 | sort -u)" "0" "CSV wrong column after 2 checked runs"
# nccl-tests' -J (JSON) and the short -F for --csv.
mpi 2 "$run" --coll allreduce --algo ring -b 1K -e 1K -n 1 -w 0 --no-discover -J "$TMP/short.json" -F "$TMP/short.csv" \
  >"$TMP/short.txt" 2>&1 || bad "coll-run -J/-F: $(tail -2 "$TMP/short.txt")"
expect_eq "$(json_get "$TMP/short.json" 'sum(len(t["rows"]) for t in j["tables"])'),$(tail -n +2 "$TMP/short.csv" | wc -l)" "1,1" "-J and -F write the row"
expect_fail 2 "coll-run: error: -i and -f both set the step between sizes: give one" \
  mpi_said 2 "$run" -b 1K -e 4K -i 1K -f 4 --no-discover
expect_fail 2 "coll-run: error: -i 1K from -b 1K to -e 1G makes more than 4096 sizes; use a larger step or -f" \
  mpi_said 2 "$run" -b 1K -e 1G -i 1K --no-discover
expect_fail 2 "coll-run: error: -c: expected checked runs >= 0 (0: no check), got -1" mpi_said 2 "$run" -c -1 --no-discover

# The two-phase algorithms' other variants: on one host (the discovered machine) their direct
# phases, without a topology recursive doubling (4 ranks) and the rings.
for np in 3 4; do
  for where in "" --no-discover; do
    if mpi "$np" "$run" --coll allreduce,broadcast,reduce --algo twoshot,scatter_allgather,reducescatter_gather -d all -b 1000 \
         -e 1M -f 32 -n 1 -w 0 --no-baseline $where --json "$TMP/two$np$where.json" >"$TMP/two$np$where.txt" 2>&1; then
      ok "np $np $where: two-phase algorithms ran"
    else
      bad "np $np $where: exit $?: $(tail -5 "$TMP/two$np$where.txt")"
    fi
    expect_eq "$(json_get "$TMP/two$np$where.json" 'sum(1 for t in j["tables"] for r in t["rows"] if r["out_of_place"]["wrong"] == 0 and r["in_place"]["wrong"] == 0)')" \
      "$((3 * 7 * 3))" "np $np $where: every two-phase row checked and right"
  done
done

# Sizes that do not split evenly, as nccl-tests runs them: AllReduce, Broadcast and Reduce run the
# exact count (chunks split unevenly at whole elements), the sliced collectives round down to whole
# elements per rank. Every algorithm, datatype and operator at 1000 bytes; a few at 1M + 24.
for np in 3 5; do
  for case in "all 1000 all" "ring,rhd,tree,bruck 1048600 sum"; do
    set -- $case
    log="$TMP/odd$np-$2"
    if mpi "$np" "$run" --coll all --algo "$1" -d all -o "$3" -b "$2" -e "$2" -n 1 -w 0 --no-baseline --json "$log.json" >"$log.txt" 2>&1; then
      ok "np $np, $2 bytes: ran"
    else
      bad "np $np, $2 bytes: exit $?: $(tail -5 "$log.txt")"
    fi
    expect_eq "$(json_get "$log.json" 'sum(1 for t in j["tables"] for r in t["rows"] if r["out_of_place"]["wrong"] == 0 and r["in_place"]["wrong"] == 0)')" \
      "$(json_get "$log.json" 'sum(len(t["rows"]) for t in j["tables"])')" "np $np, $2 bytes: every row right"
    expect_eq "$(json_get "$log.json" 'sorted({(t["collective"], r["bytes"]) for t in j["tables"] for r in t["rows"] if t["type"] == "float"})')" \
      "$(python3 -c "n, p = $2 // 4, $np; s = 4 * (n - n % p); print(sorted({('allgather', s), ('allreduce', 4 * n), ('alltoall', s), ('broadcast', 4 * n), ('reduce', 4 * n), ('reducescatter', s)}))")" \
      "np $np, $2 bytes: float sizes, rounded per rank only where the collective slices"
  done
done
# 13 with synth, whose AlltoAll runs on the machine's one discovered vertex (its trees need a GPU per rank), and straggler.
expect_eq "$(json_get "$TMP/odd5-1000.json" 'len({t["algorithm"] for t in j["tables"]})')" 13 "odd sizes: every algorithm"
expect_eq "$(json_get "$TMP/odd5-1000.json" 'sorted({t["collective"] for t in j["tables"] if t["algorithm"] == "synth"})')" "['alltoall']" \
  "odd sizes: synth runs alltoall"

# auto and hier with bigger sizes, the simulator's prediction beside each row.
if mpi 4 "$run" --topo "$TMP/t4.json" --coll allreduce,reducescatter,allgather,alltoall --algo hier,auto -d float32,bfloat16 \
     -b 1K -e 256K -f 16 -n 2 -w 1 --json "$TMP/hier.json" >"$TMP/hier.txt" 2>&1; then
  ok "hier and auto on two hosts"
else
  bad "hier on two hosts: $(tail -5 "$TMP/hier.txt")"
fi
expect_eq "$(json_get "$TMP/hier.json" 'j["total_wrong"]')" 0 "hier wrong elements"
expect_eq "$(json_get "$TMP/hier.json" 'all(r["predicted_us"] > 0 for t in j["tables"] for r in t["rows"])')" True \
  "every row has the simulator's prediction beside it"
grep -q "predicted(us)" "$TMP/hier.txt" && ok "the table shows the prediction" || bad "no predicted column"

# A plan file, run at its own size and over a sweep.
"$COLLKIT_BIN/coll-plan" generate --coll allgather --size 64K --nranks 4 --algo bruck -o "$TMP/bruck.json" >/dev/null
if mpi 4 "$run" --plan "$TMP/bruck.json" -d int32 -n 2 --json "$TMP/plan.json" >"$TMP/plan.txt" 2>&1; then
  ok "plan file at its own size"
else
  bad "plan file: $(tail -3 "$TMP/plan.txt")"
fi
expect_eq "$(json_get "$TMP/plan.json" '[r["bytes"] for t in j["tables"] for r in t["rows"]]')" "[65536]" "plan's own size"
expect_eq "$(json_get "$TMP/plan.json" 'j["schema"]')" "collkit.results/1" "results schema"
mpi 4 "$run" --plan "$TMP/bruck.json" -b 1K -e 1M -f 32 -n 1 >"$TMP/sweep.txt" 2>&1 && ok "plan file over a sweep" ||
  bad "plan sweep: $(tail -3 "$TMP/sweep.txt")"

# runs_right NP PLAN WHAT: the plan file run under mpirun -np NP at 256 KiB (float sum), every
# element right.
runs_right() {
  if mpi "$1" "$run" --plan "$2" -d float -o sum -b 256K -e 256K -n 1 -w 0 --json "${2%.json}-run.json" >"$TMP/runs.txt" 2>&1; then
    expect_eq "$(json_get "${2%.json}-run.json" 'j["total_wrong"]')" 0 "$3 under mpirun: wrong elements"
  else
    bad "$3 under mpirun: $(tail -3 "$TMP/runs.txt")"
  fi
}

# synth's chains along the rings (arcs=orders: ring j's chains on channel j, in step order) on
# three GPUs of one PCIe host, at sizes where they are what synth lays out (every rank's at 1 MiB,
# the root's at 64 MiB and 1 GiB), run at 256 KiB: every element right.
"$COLLKIT_BIN/coll-topo" synth --node pcie-8gpu:gpus=3 --nodes 1 -o "$TMP/pcie3.json" >/dev/null
for case in allgather:1M reducescatter:1M allreduce:1M broadcast:64M reduce:1G; do
  coll=${case%%:*}
  "$COLLKIT_BIN/coll-plan" generate --topo "$TMP/pcie3.json" --coll $coll --size ${case#*:} --algo synth -o "$TMP/chains-$coll.json" >/dev/null
  expect_eq "$(json_get "$TMP/chains-$coll.json" 'j["params"].get("arcs")')" orders "synth $coll on one PCIe host: chains along the rings"
  runs_right 3 "$TMP/chains-$coll.json" "synth $coll chains"
done

# Ring channels of unequal shares (param weights; docs/algorithms.md "Weighted channels"): two
# channels, the first carrying three units of each slice and the second one (chunks of a piece
# spanning three and one), as layout gives them where one ring crosses a slower link; verified and
# run on four ranks: every element right.
"$COLLKIT_BIN/coll-topo" synth --node pcie-8gpu:gpus=4 --nodes 1 -o "$TMP/pcie4.json" >/dev/null
for coll in allgather reducescatter allreduce broadcast reduce; do
  "$COLLKIT_BIN/coll-plan" generate --topo "$TMP/pcie4.json" --coll $coll --size 1M --algo ring --channels 2 --pipeline 2 -o "$TMP/ring2-$coll.json" >/dev/null
  python3 - "$TMP/ring2-$coll.json" "$TMP/weighted-$coll.json" <<'EOF'
import json, sys
plan = json.load(open(sys.argv[1]))
plan["params"]["weights"] = "3,1"
plan["chunks"] = {k: v * 2 for k, v in plan["chunks"].items()}  # 4 units a slice where 2 channels had 1 each
json.dump(plan, open(sys.argv[2], "w"))
EOF
  "$COLLKIT_BIN/coll-plan" verify "$TMP/weighted-$coll.json" >/dev/null 2>&1 && ok "weighted ring $coll verifies" || bad "weighted ring $coll does not verify"
  runs_right 4 "$TMP/weighted-$coll.json" "weighted ring $coll"
done

# shares_run_right COLL INTER PARAM WHAT: synth's plan of COLL at 1 MiB on the slow-NIC hosts below
# (--inter INTER) has param PARAM (its shares), verifies and runs on four ranks, every element right.
shares_run_right() {
  "$COLLKIT_BIN/coll-plan" generate --topo "$TMP/p22-slow.json" --coll "$1" --size 1M --algo synth --inter "$2" -o "$TMP/$3-$1.json" >/dev/null
  local shares
  shares=$(json_get "$TMP/$3-$1.json" "j['params'].get('$3', '')")
  [ -n "$shares" ] && ok "synth $1 $4 of unequal shares ($shares)" || bad "synth $1 --inter $2 on a slow NIC: no $3"
  "$COLLKIT_BIN/coll-plan" verify "$TMP/$3-$1.json" >/dev/null 2>&1 && ok "synth $1 $3 verify" || bad "synth $1 $3 do not verify"
  runs_right 4 "$TMP/$3-$1.json" "synth $1 $3"
}

# One root's trees by rails of unequal shares (param tree_chunks; docs/synth.md "Trees by rails on
# a degraded cluster"): two hosts of two GPUs, host 1's second NIC at a quarter of its rate (a
# what-if of the shell saved as a topology), the trees through it laid out with fewer chunks.
"$COLLKIT_BIN/coll-topo" synth --node pcie-8gpu:gpus=2 --nodes 2 -o "$TMP/p22.json" >/dev/null
printf 'load %s\nscale link node1/nic1 fabric/leaf1.0 bw 0.25\nsave topo %s\n' "$TMP/p22.json" "$TMP/p22-slow.json" |
  "$COLLKIT_BIN/coll-plan" shell --strict >/dev/null
for coll in broadcast reduce; do shares_run_right $coll symmetric tree_chunks "trees"; done
# Every rank's trees by rails of unequal shares (param tree_units; docs/synth.md "Every rank's trees
# by rails"), on the same hosts (--inter rails: by default only beyond 16 ranks), each root's trees
# through the slow NIC with fewer units.
for coll in allgather reducescatter allreduce; do shares_run_right $coll rails tree_units "every rank's trees"; done
# Hosts of unlike sizes (docs/synth.md "Hosts short of a GPU"): host 1 without its second GPU, the
# trees by rails lined up by device index, host 1's one GPU standing in for the missing rail; host
# 0's second NIC at a quarter, so that the trees take unequal shares too.
printf 'load %s\nfail vertex node1/gpu1\nscale link node0/nic1 fabric/leaf1.0 bw 0.25\nsave topo %s\n' "$TMP/p22.json" "$TMP/p3.json" |
  "$COLLKIT_BIN/coll-plan" shell --strict >/dev/null
for coll in allgather reducescatter allreduce; do
  "$COLLKIT_BIN/coll-plan" generate --topo "$TMP/p3.json" --coll $coll --size 1M --algo synth --inter rails -o "$TMP/short-$coll.json" \
    >/dev/null 2>&1 || bad "synth $coll on a host short of a GPU: not generated"
  units=$(json_get "$TMP/short-$coll.json" "j['params'].get('tree_units', '')")
  [ -n "$units" ] && ok "synth $coll on a host short of a GPU: shares ($units)" || bad "synth $coll on a host short of a GPU: no tree_units"
  runs_right 3 "$TMP/short-$coll.json" "synth $coll on a host short of a GPU"
done

# Mismatched plan: every rank stops before communicating, one message.
got=$(mpi 3 "$run" --plan "$TMP/bruck.json" 2>&1 >/dev/null | grep '^coll-run' || true)
expect_eq "$got" "coll-run: error: $TMP/bruck.json: the plan is for 4 ranks, this job has 3 (mpirun -np 4)" "mismatched plan, one line"

# Faults (a rank killed or stalled, mpirun killed or stopped) and bad input under mpirun: in
# coll_run_faults_mpi.sh and coll_run_input_mpi.sh.

# Bad input: one line, non-zero exit.
expect_fail 2 'coll-run: error: unknown collective "allsum" (expected allreduce, reducescatter, allgather, alltoall, broadcast, reduce or all)' \
  "$run" --coll allsum
expect_fail 2 'coll-run: error: unknown datatype "quad" (expected float32, float16, bfloat16, float64, int32, int8, uint8 or all)' \
  "$run" -d quad
expect_fail 2 'coll-run: error: -e 1K is smaller than -b 1M' "$run" -b 1M -e 1K --no-discover
expect_fail 2 'coll-run: error: unknown backend "gloo" (expected mpi, nccl, cuda or rdma)' "$run" --backend gloo
expect_fail 2 "coll-run: error: --json: $TMP/no/such/dir/r.json: cannot create a temporary file beside it: No such file or directory" \
  "$run" --coll allreduce --algo ring -b 1K -e 1K --no-discover --json "$TMP/no/such/dir/r.json"
expect_fail 2 'coll-run: error: --plan runs the plan file'"'"'s collective and algorithm: drop --coll and --algo' \
  "$run" --plan "$TMP/bruck.json" --coll allreduce
cp "$TMP/bruck.json" "$TMP/same.json"
expect_fail 2 "coll-run: error: $TMP/same.json: the output would overwrite the input $TMP/same.json; write it elsewhere" \
  "$run" --plan "$TMP/same.json" --no-discover --json "$TMP/same.json"
cmp -s "$TMP/bruck.json" "$TMP/same.json" && ok "--json left the plan alone" || bad "--json overwrote the plan"
got=$(mpi 2 "$run" --algo ring -b 1T -e 1T --no-discover 2>&1 >/dev/null | grep "^coll-run") && rc=0 || rc=$?
[[ $rc = 2 && $got == "coll-run: error: size 1T does not fit: mpi buffers need "*" available; lower -e" ]] &&
  ok "a size that does not fit is refused up front" || bad "1T: exit $rc: $got"
# Sizes whose buffers add up past 2^64 bytes: the sum saturates (it wrapped to "needs 0.0 GiB" and
# passed the check, then died in std::bad_alloc).
for size in 2097152T 4194304T; do
  got=$(mpi 2 "$run" --algo ring -b $size -e $size --no-discover 2>&1 >/dev/null | grep "^coll-run") && rc=0 || rc=$?
  [[ $rc = 2 && $got == "coll-run: error: size $size does not fit: mpi buffers need 17179869184.0 GiB on a host, "* ]] &&
    ok "$size: refused with the need saturated" || bad "$size: exit $rc: $got"
done
echo '{"schema": "collkit.topology/1"}' >"$TMP/notaplan.json"
got=$("$run" --plan "$TMP/notaplan.json" 2>&1 >/dev/null) && rc=0 || rc=$?
[[ $rc = 2 && $got == "coll-run: error: $TMP/notaplan.json: "* ]] && ok "a file of another schema is refused" || bad "schema: $rc $got"

finish
