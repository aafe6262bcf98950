#!/usr/bin/env bash
# scripts/reproduce.sh --quick --out TMP (issue #17): every section runs, every table and CSV parses,
# every figure is a valid image (check_outputs.py), and nothing is written into results/. Its own
# check of the checker: a broken table, CSV and figure must each be caught.
set -euo pipefail
: "${COLLKIT_BIN:?COLLKIT_BIN must point at build/bin}"
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/tests/reproduce"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
checks=0
ok() { checks=$((checks + 1)); echo "ok: $*"; }
bad() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL: $*"; }

touch "$tmp/stamp"
sleep 1
if "$root/scripts/reproduce.sh" --quick --out "$tmp/out" --bin "$COLLKIT_BIN" 2>"$tmp/stderr"; then
  ok "reproduce.sh --quick --out exits 0"
else
  bad "reproduce.sh --quick --out: exit $?; its stderr ends:"
  tail -20 "$tmp/stderr"
fi
grep -q '^reproduce \[.* s\] section 7' "$tmp/stderr" && ok "progress on stderr" || bad "no progress lines on stderr"
if python3 "$here/check_outputs.py" "$tmp/out"; then ok "check_outputs.py: the outputs"; else bad "check_outputs.py: the outputs"; fi
changed=$(find "$root/results" -newer "$tmp/stamp" -print)
[ -z "$changed" ] && ok "nothing written into results/ with --out" || bad "written into results/ with --out: $changed"

# The checker must fail on what it exists to catch.
expect_caught() {  # expect_caught WHAT: check_outputs.py on the broken copy in $tmp/broken fails
  if python3 "$here/check_outputs.py" "$tmp/broken" >"$tmp/check.txt"; then bad "checker missed: $1"; else ok "checker catches $1"; fi
  rm -rf "$tmp/broken"
}
cp -r "$tmp/out" "$tmp/broken" && printf '| a | b |\n| --- | --- |\n| 1 | 2 | 3 |\n' >>"$tmp/broken/scale.md"
expect_caught "a table row with an extra cell"
cp -r "$tmp/out" "$tmp/broken" && printf '1,2,3\n' >>"$tmp/broken/scale.csv"
expect_caught "a CSV row with an extra field"
cp -r "$tmp/out" "$tmp/broken" && head -c 100 "$tmp/out/scale.png" >"$tmp/broken/scale.png"
expect_caught "a truncated PNG"
cp -r "$tmp/out" "$tmp/broken" && rm "$tmp/broken/fidelity.png"
expect_caught "a missing figure"
cp -r "$tmp/out" "$tmp/broken" && echo '<svg><g></svg>' >"$tmp/broken/extra.svg"
expect_caught "an SVG that is not XML"

# Bad usage: one line, exit 2.
for args in "--frobnicate" "--out" "--bin $tmp/nowhere"; do
  # shellcheck disable=SC2086
  rc=0; "$root/scripts/reproduce.sh" $args 2>"$tmp/err" >/dev/null || rc=$?
  if [ $rc = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ]; then ok "reproduce.sh $args -> 2: $(cat "$tmp/err")"; else bad "reproduce.sh $args: exit $rc, stderr: $(cat "$tmp/err")"; fi
done
echo "$((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
