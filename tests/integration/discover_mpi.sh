#!/usr/bin/env bash
# coll-topo discover under mpirun: two ranks on this host discover it, rank 0 merges and writes
# one collkit.topology/1 file with two ranks on one host.
# Env: COLLKIT_BIN (set by ctest); OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM) where the tests run as root.
set -euo pipefail

tool="${COLLKIT_BIN:-}/coll-topo"
if [[ -z "${COLLKIT_BIN:-}" || ! -x "$tool" ]]; then
  echo "skip: $tool not built (set COLLKIT_BIN)"
  exit 77
fi
if ! "$tool" --help 2>&1 | grep -q discover; then
  echo "skip: $tool has no discover subcommand"
  exit 77
fi
if ! command -v mpirun >/dev/null; then
  echo "skip: mpirun not found"
  exit 77
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Generous but bounded: a launcher that cannot start its ranks must fail the test, not hang it.
timeout 240 mpirun -np 2 --oversubscribe "$tool" discover -o "$tmp/cluster.json"

python3 - "$tmp/cluster.json" <<'EOF'
import json, sys
path = sys.argv[1]
with open(path) as f:
    t = json.load(f)
def check(cond, what):
    if not cond:
        sys.exit(f"{path}: {what}")
check(t.get("schema") == "collkit.topology/1", f"schema is {t.get('schema')!r}")
check(t.get("source") == "discover", f"source is {t.get('source')!r}")
check(len(t["ranks"]) == 2, f"expected 2 ranks, got {len(t['ranks'])}")
ids = {v["id"]: v for v in t["vertices"]}
hosts = {v.get("host") for v in t["vertices"] if v.get("host")}
check(len(hosts) == 1, f"expected one host, got {sorted(hosts)}")
check(any(v["kind"] == "cpu" for v in t["vertices"]), "no cpu vertex")
for r in t["ranks"]:
    check(r in ids, f"rank endpoint {r!r} is not a vertex")
    check(ids[r]["kind"] in ("gpu", "cpu"), f"rank endpoint {r!r} is a {ids[r]['kind']}")
for r in t["ranks"]:
    if ids[r]["kind"] == "cpu":
        check(ids[r].get("local_bw_gbps", 0) > 0, f"rank endpoint {r!r} has no copy bandwidth (measured when hwloc lacks it)")
host = hosts.pop()
check(t.get("name") == host, f"name {t.get('name')!r} is not the host {host!r}")
print(f"ok: {len(t['ranks'])} ranks on {host}, {len(t['vertices'])} vertices, {len(t['links'])} links")
EOF

# And coll-topo's own loader accepts it.
"$tool" validate "$tmp/cluster.json"

# A plan between its two ranks is never predicted free.
plan="$(dirname "$tool")/coll-plan"
"$plan" generate --topo "$tmp/cluster.json" --coll allreduce --size 1M --algo ring -o "$tmp/p.json" >/dev/null
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); t=p.get("predicted_us", 0); sys.exit(0 if t > 0 else f"predicted {t} us")' "$tmp/p.json"
echo "ok: ring AllReduce 1 MiB between the discovered ranks predicted > 0 us"
