#!/usr/bin/env bash
# Every artifact says where it came from (issue #15, docs/artifacts.md): each tool's writers
# (coll-topo synth, coll-plan generate / --explicit / sweep / export, coll-run under mpirun,
# coll-overlap) record tool, version, command line and date, measured results their iterations and
# warm-up; SOURCE_DATE_EPOCH makes two runs of one command byte-identical and a malformed one is
# refused; "wrote FILE" goes to stderr in every tool, and what goes to stdout with "-" is the
# artifact alone.
source "$(dirname "$0")/lib.sh"
topo=$COLLKIT_BIN/coll-topo
plan=$COLLKIT_BIN/coll-plan
run=$COLLKIT_BIN/coll-run
ov=$COLLKIT_BIN/coll-overlap
for t in "$topo" "$plan" "$run" "$ov"; do [ -x "$t" ] || { echo "skip: $t not built"; exit 77; }; done

export SOURCE_DATE_EPOCH=1796429581
date=2026-12-05T00:13:01Z
version=$("$topo" --version | sed -n 's/^coll-topo (collkit \(.*\))$/\1/p')
[ -n "$version" ] || bad "coll-topo --version: $("$topo" --version)"

# made_by FILE TOOL ARG...: FILE's provenance is {tool, version, command (exactly the arguments),
# date}, nothing else.
made_by() {
  local file=$1
  shift
  local got
  got=$(python3 - "$file" "$version" "$date" "$@" <<'PY'
import json, sys
file, version, date, tool, command = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
p = json.load(open(file)).get("provenance")
want = {"tool": tool, "version": version, "command": command, "date": date}
print("ok" if p == want else f"{p} != {want}")
PY
  )
  expect_eq "$got" ok "$file: made by $2"
}
# said_wrote TOOL FILE OUT ERR: "TOOL: wrote FILE (" on stderr, nothing of it on stdout.
said_wrote() {
  if grep -q "^$1: wrote $2 (" "$4" && ! grep -q "wrote" "$3"; then ok "$1 says it wrote $2 on stderr"; else
    bad "$1 wrote $2: stdout $(cat "$3" | head -3), stderr $(cat "$4" | head -3)"
  fi
}

# same_but_provenance A B WHAT: two artifacts equal once their provenance is left out.
same_but_provenance() {
  if [ "$(strip_provenance "$1")" = "$(strip_provenance "$2")" ]; then ok "$3"; else bad "$3: $1 and $2 differ"; fi
}

# coll-topo synth, to a file and to stdout.
"$topo" synth --node dgx-h100 --nodes 2 -o "$TMP/t.json" >"$TMP/out" 2>"$TMP/err"
made_by "$TMP/t.json" coll-topo "$topo" synth --node dgx-h100 --nodes 2 -o "$TMP/t.json"
said_wrote coll-topo "$TMP/t.json" "$TMP/out" "$TMP/err"
"$topo" synth --node dgx-h100 --nodes 2 >"$TMP/t-stdout.json" 2>"$TMP/err"
made_by "$TMP/t-stdout.json" coll-topo "$topo" synth --node dgx-h100 --nodes 2
expect_eq "$(cat "$TMP/err")" "" "coll-topo synth to stdout: nothing on stderr"
# The same command, the same bytes; another spelling of it, the same topology but for provenance.
"$topo" synth --node dgx-h100 --nodes 2 -o "$TMP/t.json" 2>/dev/null
cp "$TMP/t.json" "$TMP/t-first.json"
"$topo" synth --node dgx-h100 --nodes 2 -o "$TMP/t.json" 2>/dev/null
cmp -s "$TMP/t.json" "$TMP/t-first.json" && ok "coll-topo synth twice: byte-identical" || bad "coll-topo synth twice differs"
"$topo" synth --nodes 2 --node dgx-h100 -o "$TMP/t2.json" 2>/dev/null
cmp -s "$TMP/t.json" "$TMP/t2.json" && bad "two command lines, one provenance" || ok "another command line: another provenance"
same_but_provenance "$TMP/t.json" "$TMP/t2.json" "another command line: the same topology"
fingerprint=$(json_get "$TMP/t.json" 'j["fingerprint"]')

# coll-plan generate, compact and explicit: the plan records the topology's fingerprint.
"$plan" generate --topo "$TMP/t.json" --coll allreduce --size 1M --algo ring -o "$TMP/p.json" >"$TMP/out" 2>"$TMP/err"
made_by "$TMP/p.json" coll-plan "$plan" generate --topo "$TMP/t.json" --coll allreduce --size 1M --algo ring -o "$TMP/p.json"
said_wrote coll-plan "$TMP/p.json" "$TMP/out" "$TMP/err"
grep -q "^ring allreduce of 1M on 16 ranks: 8 channel(s)$" "$TMP/out" && grep -q "^predicted " "$TMP/out" &&
  ok "generate -o FILE: the summary on stdout" || bad "generate -o FILE: $(cat "$TMP/out")"
expect_eq "$(json_get "$TMP/p.json" 'j["topology"]["fingerprint"]')" "$fingerprint" "the plan names the topology's fingerprint"
"$plan" generate --nranks 4 --coll allgather --size 4K --algo ring --explicit -o "$TMP/e.json" 2>/dev/null >/dev/null
made_by "$TMP/e.json" coll-plan "$plan" generate --nranks 4 --coll allgather --size 4K --algo ring --explicit -o "$TMP/e.json"
"$plan" verify "$TMP/e.json" >/dev/null && ok "an explicit plan with provenance verifies" || bad "verify $TMP/e.json"
# -o -: the plan alone on stdout, the summary on stderr.
"$plan" generate --topo "$TMP/t.json" --coll allreduce --size 1M --algo ring -o - >"$TMP/p-stdout.json" 2>"$TMP/err"
made_by "$TMP/p-stdout.json" coll-plan "$plan" generate --topo "$TMP/t.json" --coll allreduce --size 1M --algo ring -o -
grep -q "^ring allreduce of 1M on 16 ranks: 8 channel(s)$" "$TMP/err" && grep -q "^predicted " "$TMP/err" && ! grep -q wrote "$TMP/err" &&
  ok "generate -o -: the summary on stderr" || bad "generate -o - stderr: $(cat "$TMP/err")"
"$plan" generate --topo "$TMP/t.json" --coll allreduce --size 1M --algo ring -o "$TMP/p2.json" >/dev/null 2>&1
same_but_provenance "$TMP/p-stdout.json" "$TMP/p2.json" "generate: -o - and -o FILE, one plan"

# coll-plan sweep to a file and to stdout; export to MSCCL XML, provenance in a comment.
"$plan" sweep --topo "$TMP/t.json" -b 1K -e 16K -f 4 --json "$TMP/tuning.json" >"$TMP/out" 2>"$TMP/err"
made_by "$TMP/tuning.json" coll-plan "$plan" sweep --topo "$TMP/t.json" -b 1K -e 16K -f 4 --json "$TMP/tuning.json"
said_wrote coll-plan "$TMP/tuning.json" "$TMP/out" "$TMP/err"
expect_eq "$(json_get "$TMP/tuning.json" '"iters" in j')" False "a predicted tuning table has no iterations"
"$plan" sweep --topo "$TMP/t.json" -b 1K -e 16K -f 4 --json - >"$TMP/tuning-stdout.json" 2>/dev/null
made_by "$TMP/tuning-stdout.json" coll-plan "$plan" sweep --topo "$TMP/t.json" -b 1K -e 16K -f 4 --json -
"$plan" export --format msccl-xml "$TMP/p.json" -o "$TMP/p.xml" >"$TMP/out" 2>"$TMP/err"
said_wrote coll-plan "$TMP/p.xml" "$TMP/out" "$TMP/err"
python3 - "$TMP/p.xml" "$TMP/p.xml.json" <<'PY'
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1], parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))
text = open(sys.argv[1]).read()
start = text.index("<!-- collkit provenance ") + len("<!-- collkit provenance ")
json.dump({"provenance": json.loads(text[start:text.index(" -->", start)])}, open(sys.argv[2], "w"))
PY
made_by "$TMP/p.xml.json" coll-plan "$plan" export --format msccl-xml "$TMP/p.json" -o "$TMP/p.xml"

# coll-run under mpirun: results with iterations and warm-up; the rows' plans carry none of their own.
mpi 2 "$run" --coll allreduce --algo ring -b 1K -e 4K -n 3 -w 1 --no-discover --json "$TMP/r.json" >"$TMP/out" 2>"$TMP/err" ||
  bad "coll-run: $(tail -3 "$TMP/err")"
made_by "$TMP/r.json" coll-run "$run" --coll allreduce --algo ring -b 1K -e 4K -n 3 -w 1 --no-discover --json "$TMP/r.json"
said_wrote coll-run "$TMP/r.json" "$TMP/out" "$TMP/err"
expect_eq "$(json_get "$TMP/r.json" '(j["iters"], j["warmup_iters"])')" "(3, 1)" "results: iterations and warm-up"
expect_eq "$(json_get "$TMP/r.json" 'any("provenance" in r["plan"] for t in j["tables"] for r in t["rows"])')" False \
  "results: no provenance in the rows' plans"
"$plan" compare --results "$TMP/r.json" --topo "$TMP/t.json" >/dev/null && ok "compare reads results with provenance" ||
  bad "compare --results $TMP/r.json"
# A plan file run, the results to stdout: they alone there, made by coll-run (not by the plan's coll-plan).
"$plan" generate --nranks 2 --coll allreduce --size 4K --algo ring -o "$TMP/p2r.json" >/dev/null 2>&1
mpi 2 "$run" --plan "$TMP/p2r.json" -n 2 -w 0 --json - >"$TMP/r-stdout.json" 2>"$TMP/err" || bad "coll-run --plan --json -: $(tail -3 "$TMP/err")"
made_by "$TMP/r-stdout.json" coll-run "$run" --plan "$TMP/p2r.json" -n 2 -w 0 --json -

# coll-overlap: the report and the trace; --json -: the report alone on stdout.
"$ov" --model "$COLLKIT_DOCS/examples/model.json" --tp 2 --dp 4 --ep 4 --seq-len 512 --json "$TMP/o.json" --trace "$TMP/trace.json" \
  >"$TMP/out" 2>"$TMP/err"
made_by "$TMP/o.json" coll-overlap "$ov" --model "$COLLKIT_DOCS/examples/model.json" --tp 2 --dp 4 --ep 4 --seq-len 512 \
  --json "$TMP/o.json" --trace "$TMP/trace.json"
said_wrote coll-overlap "$TMP/o.json" "$TMP/out" "$TMP/err"
said_wrote coll-overlap "$TMP/trace.json" "$TMP/out" "$TMP/err"
python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); json.dump({"provenance": j["otherData"]["provenance"]}, open(sys.argv[2], "w"))' \
  "$TMP/trace.json" "$TMP/trace-provenance.json"
made_by "$TMP/trace-provenance.json" coll-overlap "$ov" --model "$COLLKIT_DOCS/examples/model.json" --tp 2 --dp 4 --ep 4 \
  --seq-len 512 --json "$TMP/o.json" --trace "$TMP/trace.json"
"$ov" --model "$COLLKIT_DOCS/examples/model.json" --tp 2 --dp 4 --ep 4 --seq-len 512 --json - >"$TMP/o-stdout.json" 2>"$TMP/err"
made_by "$TMP/o-stdout.json" coll-overlap "$ov" --model "$COLLKIT_DOCS/examples/model.json" --tp 2 --dp 4 --ep 4 --seq-len 512 --json -
grep -q "^auto " "$TMP/err" && ok "coll-overlap --json -: the table on stderr" || bad "coll-overlap --json - stderr: $(head -3 "$TMP/err")"

# A malformed SOURCE_DATE_EPOCH is refused by every tool before it writes anything.
want='SOURCE_DATE_EPOCH: expected whole seconds since 1970-01-01 00:00 UTC (at most 253402300799), got "soon"'
expect_fail 2 "coll-topo: error: $want" env SOURCE_DATE_EPOCH=soon "$topo" synth -o "$TMP/never.json"
expect_fail 2 "coll-plan: error: $want" env SOURCE_DATE_EPOCH=soon "$plan" generate --nranks 4 --algo ring -o "$TMP/never.json"
expect_fail 2 "coll-run: error: $want" env SOURCE_DATE_EPOCH=soon "$run" --no-discover --json "$TMP/never.json"
expect_fail 2 "coll-overlap: error: $want" env SOURCE_DATE_EPOCH=soon "$ov" --model llama3-8b --tp 8 --json "$TMP/never.json"
[ ! -e "$TMP/never.json" ] && ok "nothing written with a malformed SOURCE_DATE_EPOCH" || bad "a file was written"
# Without it, the date is the clock's (UTC, to the second).
d=$(env -u SOURCE_DATE_EPOCH "$topo" synth --node dgx-h100 | python3 -c 'import json, sys; print(json.load(sys.stdin)["provenance"]["date"])')
python3 -c 'import datetime, sys; d = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc); sys.exit(abs((datetime.datetime.now(datetime.timezone.utc) - d).total_seconds()) > 600)' "$d" &&
  ok "without SOURCE_DATE_EPOCH: now, $d" || bad "without SOURCE_DATE_EPOCH: $d"
finish
