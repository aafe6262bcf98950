# Helpers shared by the integration scripts (sourced, not run: ctest runs *.sh except this one).
set -euo pipefail
: "${COLLKIT_BIN:?COLLKIT_BIN must point at build/bin}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
checks=0

ok() { checks=$((checks + 1)); echo "ok: $*"; }

# mpi N command...: mpirun with N ranks (oversubscribed), bounded so that a launcher that cannot
# start its ranks fails the test instead of hanging it.
mpi() { timeout 300 mpirun --oversubscribe -np "$@"; }
# mpi_said N command...: the same, stderr reduced to what the ranks printed (lines from coll-*),
# without mpirun's own report, for expect_fail.
mpi_said() {
  local rc=0
  mpi "$@" 2>"$TMP/mpi_err" >/dev/null || rc=$?
  grep '^coll-' "$TMP/mpi_err" >&2
  return $rc
}
bad() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL: $*"; }

# expect_fail CODE "exact stderr line" command...: the command exits with CODE and prints exactly that line.
expect_fail() {
  local code=$1 want=$2
  shift 2
  local got rc=0
  got=$("$@" 2>&1 >/dev/null) || rc=$?
  if [ "$rc" = "$code" ] && [ "$got" = "$want" ]; then ok "$* -> $code"; else bad "$*: exit $rc (want $code), stderr: $got (want: $want)"; fi
}

# json_get FILE EXPR: evaluates a Python expression over the parsed file bound to j.
json_get() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

expect_eq() {
  if [ "$1" = "$2" ]; then ok "$3 = $2"; else bad "$3: got $1, want $2"; fi
}

finish() {
  echo "$((checks - failures)) passed, $failures failed"
  [ "$failures" -eq 0 ]
}

# strip_provenance FILE: the JSON artifact without its "provenance" (where and when it was written),
# keys sorted: for comparing two files that two command lines wrote.
strip_provenance() { python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); j.pop("provenance", None); print(json.dumps(j, sort_keys=True))' "$1"; }
