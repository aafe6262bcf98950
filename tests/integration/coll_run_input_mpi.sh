#!/usr/bin/env bash
# Bad input to coll-run under mpirun -np 4 (issue #15, "Messages"): whatever is wrong (a plan
# file missing or malformed, a bad --topo, a bad flag value, a bad --inject, sizes the wrong way
# round) is printed once, by rank 0, as one line, and every rank exits with the same non-zero code
# without waiting for the others (mpirun --tag-output shows which rank printed; a wrapper per rank
# records each rank's exit status).
source "$(dirname "$0")/lib.sh"
run="$COLLKIT_BIN/coll-run"
if ! command -v mpirun >/dev/null; then echo "skip: mpirun not found"; exit 77; fi

cat >"$TMP/rank.sh" <<'EOF'
#!/usr/bin/env bash
dir=$1
shift
rc=0
"$@" || rc=$?
echo "$rc" >"$dir/exit.$OMPI_COMM_WORLD_RANK"
exit "$rc"
EOF
chmod +x "$TMP/rank.sh"
printf '{ "schema": "collkit.plan/1", "nranks": ' >"$TMP/malformed.json"
printf '{"schema": "collkit.topology/1"}' >"$TMP/badtopo.json"

cases=0
# input_case NAME CODE "rank 0's first line" coll-run options...: what the ranks printed is what
# mpirun tags "[1,R]<stderr>:" (mpirun's own report of the failed job is not counted). Twice: as
# mpirun runs by default (the first rank to exit non-zero ends the job: rank 0's line must still be
# out) and under orte_abort_on_non_zero_status 0, where every rank must end on its own (none waits
# for another) and give the code.
input_case() {
  local name=$1 code=$2 want=$3 rc r mode dir
  shift 3
  for mode in default noabort; do
    dir="$TMP/$name.$mode"
    mkdir -p "$dir"
    local opts=()
    [ $mode = noabort ] && opts=(--mca orte_abort_on_non_zero_status 0)
    rc=0
    timeout 120 mpirun --oversubscribe --tag-output -np 4 "${opts[@]}" "$TMP/rank.sh" "$dir" "$run" --no-discover "$@" >"$dir/out.txt" 2>&1 || rc=$?
    # (Under orte_abort_on_non_zero_status 0 mpirun itself exits 0: the ranks' codes are checked instead.)
    if [ $mode = default ]; then
      [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && ok "$name ($mode): mpirun exited $rc, not timed out" || bad "$name ($mode): mpirun exit $rc"
    else
      [ "$rc" -ne 124 ] && ok "$name ($mode): every rank ended, not timed out" || bad "$name ($mode): timed out"
    fi
    expect_eq "$(grep -c '^\[1,[123]\]<' "$dir/out.txt" || true)" 0 "$name ($mode): lines printed by ranks 1-3"
    expect_eq "$(grep -m1 '^\[1,0\]<' "$dir/out.txt" || true)" "[1,0]<stderr>:$want" "$name ($mode): rank 0's line"
    if [ $mode = noabort ]; then
      for r in 0 1 2 3; do expect_eq "$(cat "$dir/exit.$r" 2>/dev/null || echo none)" "$code" "$name: rank $r's exit"; done
    fi
  done
  cases=$((cases + 1))
}

input_case plan-missing 3 "coll-run: error: /nonexistent/plan.json: cannot open: No such file or directory" --plan /nonexistent/plan.json
expect_eq "$(grep -c '^\[1,0\]<' "$TMP/plan-missing.default/out.txt")" 1 "plan-missing: lines printed by rank 0"
input_case plan-malformed 2 "coll-run: error: $TMP/malformed.json:1:41: invalid JSON: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal" \
  --plan "$TMP/malformed.json"
input_case topo-missing 3 "coll-run: error: /nonexistent/topo.json: cannot open: No such file or directory" --topo /nonexistent/topo.json
input_case topo-malformed 2 "coll-run: error: $TMP/badtopo.json: /: missing field \"vertices\"" --topo "$TMP/badtopo.json"
input_case size 2 'coll-run: error: invalid size "1Q": unknown suffix (use K, M, G or T, 1024-based)' -b 1Q -e 1Q
input_case sizes-reversed 2 "coll-run: error: -e 1K is smaller than -b 1M" -b 1M -e 1K
expect_eq "$(grep -c '^\[1,0\]<' "$TMP/sizes-reversed.default/out.txt")" 1 "sizes-reversed: lines printed by rank 0"
# A bad flag value: CLI11's own two lines (as every collkit tool prints them) and its exit code.
input_case flag-value 104 "Could not convert: --iters = abc" -n abc
input_case inject 2 'coll-run: error: --inject slow-rank=9:x4: "9" is not a rank of 0..3' --inject slow-rank=9:x4
echo "input cases checked: $cases"
finish
