#!/usr/bin/env bash
# Two hosts on this machine (scripts/testbed.sh: network namespaces, a bridge, 1 Gbit/s tc-shaped
# links) and mpirun across them through the testbed's rsh agent, 2 hosts x 2 ranks:
# coll-topo discover merges both hosts, finds their veth NICs and the shaped rate; the plan made on
# the discovered cluster is hierarchical; coll-run runs ring, hier and auto AllReduce, then every
# collective with every plan that applies, across the hosts with 0 wrong elements, the native
# collective beside each and its time ratio recorded.
# Needs root (network namespaces); skips with exit 77 where they cannot be made.
# One testbed per machine (fixed namespace names): the whole script runs holding it, after waiting
# up to 30 minutes for a session in another checkout (its ctest or bench) to end (exit 77 then).
# flock -o: the lock stays with flock itself, not with daemons the script leaves behind.
[ -n "${COLLKIT_TESTBED_LOCKED:-}" ] ||
  exec env COLLKIT_TESTBED_LOCKED=1 flock -o -w 1800 -E 77 /tmp/collkit-testbed.lock bash "$0" "$@"
source "$(dirname "$0")/lib.sh"
root="$(cd "$(dirname "$0")/../.." && pwd)"
tb="$root/scripts/testbed.sh"
why=$("$tb" check) || { echo "skip: $why"; exit 77; }

export COLLKIT_TESTBED_DIR="$TMP/testbed"
trap '"$tb" down >/dev/null 2>&1 || true; rm -rf "$TMP"' EXIT

# Bad input: one line, exit 2, nothing made.
expect_fail 2 "testbed.sh: up: N must be a number of hosts from 1 to 200, got '0'" "$tb" up 0
expect_fail 2 "testbed.sh: bad link rate 'fast': expected e.g. 1gbit, 100mbit" "$tb" up 2 --link fast
expect_fail 2 "testbed.sh: bad link delay '5 parsecs': expected e.g. 50us, 1ms" "$tb" up 2 --link "1gbit,5 parsecs"
expect_fail 2 "testbed.sh: up: unknown argument '--hosts'" "$tb" up 2 --hosts 3
expect_fail 2 "testbed.sh: the testbed is down: run 'testbed.sh up N' first" "$tb" mpirun hostname
expect_fail 2 "testbed-rsh.sh: 'node7' is not a testbed host (ckhN)" "$root/scripts/testbed-rsh.sh" node7 true
# The delay line's own bad input (where it is built: libnetfilter-queue-dev).
delay_bin="$COLLKIT_BIN/coll-testbed-delay"
if [ -x "$delay_bin" ]; then
  expect_fail 2 "coll-testbed-delay: error: --delay: expected e.g. 50us, 1ms, 0.5s (at most 10 s), got '5x'" "$delay_bin" --queue 0 --delay 5x
  expect_fail 2 "coll-testbed-delay: error: --queue: expected a queue number from 0 to 65535, got '-1'" "$delay_bin" --queue -1 --delay 1ms
  expect_fail 2 "coll-testbed-delay: error: --queue and --delay are required" "$delay_bin" --delay 1ms
fi
# 50 us of delay one way: netem where the kernel has it, else the delay line; the rate alone where
# neither is there.
link=1gbit,50us
if ! "$tb" up 2 --ranks-per-host 2 --link "$link" >"$TMP/up.txt" 2>&1; then
  grep -q netem "$TMP/up.txt" && link=1gbit
  "$tb" up 2 --ranks-per-host 2 --link "$link" >"$TMP/up.txt" 2>&1 || { cat "$TMP/up.txt"; bad "testbed up"; finish; }
fi
ok "testbed up 2 --link $link"
mpi() { timeout 120 "$tb" mpirun --host ckh1:2,ckh2:2 "$@"; }

# Distinct hosts, as the ranks see them.
expect_eq "$(mpi hostname 2>&1 | sort | uniq -c | awk '{print $1 $2}' | tr '\n' ' ')" "2ckh1 2ckh2 " "ranks on two hosts"

# Discovery across the hosts.
if mpi "$COLLKIT_BIN/coll-topo" discover --ranks-per-host 2 --fabric single-switch -o "$TMP/cluster.json" >"$TMP/disc.txt" 2>&1; then
  ok "discover across two hosts"
else
  bad "discover: $(tail -5 "$TMP/disc.txt")"
fi
expect_eq "$(json_get "$TMP/cluster.json" 'sorted({v["host"] for v in j["vertices"] if v.get("host")})')" "['ckh1', 'ckh2']" "merged hosts"
expect_eq "$(json_get "$TMP/cluster.json" 'len(j["ranks"])')" 4 "ranks"
expect_eq "$(json_get "$TMP/cluster.json" 'sorted((v["host"], v["attrs"]["netdev"], v["attrs"]["kind"]) for v in j["vertices"] if v["kind"] == "nic")')" \
  "[('ckh1', 'eth0', 'veth'), ('ckh2', 'eth0', 'veth')]" "each host's NIC is its veth"
expect_eq "$(json_get "$TMP/cluster.json" 'sorted({(v["port_gbps"], v["attrs"]["rate_source"]) for v in j["vertices"] if v["kind"] == "nic"})')" \
  "[(0.125, 'tc tbf')]" "the NICs' rate is the 1 Gbit/s tc shaping"

# An error of discovery (two hosts, no fabric to join them) is printed once, by rank 0.
rc=0
mpi "$COLLKIT_BIN/coll-topo" discover --ranks-per-host 2 -o "$TMP/nofabric.json" >"$TMP/nofabric.txt" 2>&1 || rc=$?
[ "$rc" != 0 ] && ok "discover without --fabric fails (exit $rc)" || bad "discover without --fabric succeeded"
expect_eq "$(grep -c '^coll-topo: error: .*--fabric' "$TMP/nofabric.txt" || true)" 1 "the error printed once, not by every rank"

# A plan on the discovered cluster crosses the hosts hierarchically.
if "$COLLKIT_BIN/coll-plan" generate --topo "$TMP/cluster.json" --coll allreduce --size 16M --algo auto -o "$TMP/plan.json" >"$TMP/plan.txt" 2>&1; then
  ok "plan on the discovered cluster"
else
  bad "plan: $(tail -3 "$TMP/plan.txt")"
fi
expect_eq "$(json_get "$TMP/plan.json" 'j["algorithm"]')" hier "auto picks the hierarchical plan across the 1 Gbit/s link"

# Collectives across the hosts, 0 wrong, native beside them.
if mpi "$COLLKIT_BIN/coll-run" --topo "$TMP/cluster.json" --coll allreduce --algo ring,hier,auto -b 64K -e 1M -f 16 -n 2 -w 1 \
     --json "$TMP/ar.json" >"$TMP/ar.txt" 2>&1; then
  ok "allreduce ring, hier, auto across two hosts"
else
  bad "allreduce: $(tail -5 "$TMP/ar.txt")"
fi
expect_eq "$(json_get "$TMP/ar.json" 'j["total_wrong"]')" 0 "allreduce wrong elements"
expect_eq "$(json_get "$TMP/ar.json" 'sorted({t["algorithm"] for t in j["tables"]})')" "['auto', 'hier', 'ring']" "allreduce algorithms run"
expect_eq "$(json_get "$TMP/ar.json" 'all(r["native_out_of_place"]["wrong"] == 0 for t in j["tables"] for r in t["rows"])')" True "native beside, right"
# Every collective with every plan that applies, Open MPI's collective beside each.
if mpi "$COLLKIT_BIN/coll-run" --topo "$TMP/cluster.json" --coll all --algo all -b 64K -e 64K -n 1 -w 0 \
     --json "$TMP/more.json" >"$TMP/more.txt" 2>&1; then
  ok "every collective and algorithm across two hosts"
else
  bad "every collective and algorithm: $(tail -5 "$TMP/more.txt")"
fi
expect_eq "$(json_get "$TMP/more.json" 'j["total_wrong"]')" 0 "every collective and algorithm: wrong elements"
expect_eq "$(json_get "$TMP/more.json" 'sorted({t["collective"] for t in j["tables"]})')" \
  "['allgather', 'allreduce', 'alltoall', 'broadcast', 'reduce', 'reducescatter']" "every collective run"
tables=$(json_get "$TMP/more.json" 'len(j["tables"])')
[ "$tables" -ge 20 ] && ok "$tables tables (collective x algorithm)" || bad "only $tables tables"
expect_eq "$(json_get "$TMP/more.json" 'all(r.get("ratio", 0) > 0 for t in j["tables"] for r in t["rows"])')" True \
  "every row has its ratio to the native collective"

# The delay is a floor on the round trip (a packet is held at least DELAY each way; load only adds):
# 5 ms on both hosts' links, then taken off one of them (its line and its iptables rule gone).
rtt_min() { # UDP echo from ckh1 to ckh2, 10 round trips: the least, in ms
  ip netns exec ckh2 python3 -c '
import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 9999)); s.settimeout(5)
try:
    while True:
        d, a = s.recvfrom(64); s.sendto(d, a)
except socket.timeout: pass' &
  local echo=$!
  sleep 0.3
  ip netns exec ckh1 python3 -c '
import socket, time; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3); best = 1e9
for _ in range(10):
    t = time.monotonic(); s.sendto(b"x", ("198.18.0.2", 9999)); s.recvfrom(64); best = min(best, time.monotonic() - t); time.sleep(0.02)
print(f"{best * 1e3:.3f}")'
  kill "$echo" 2>/dev/null || true
}
if [ "$link" = 1gbit,50us ]; then
  "$tb" link ckh1 1gbit,5ms && "$tb" link ckh2 1gbit,5ms && ok "link reshaped to 1gbit,5ms on both hosts" || bad "link reshape"
  rtt=$(rtt_min)
  python3 -c "import sys; sys.exit(0 if float('$rtt') >= 10 else 1)" && ok "round trip ${rtt} ms with 5 ms each way (floor 10 ms)" ||
    bad "round trip ${rtt} ms with 5 ms each way, under the 10 ms floor"
  echo "measured: round trip ckh1-ckh2 with 5 ms each way: ${rtt} ms (least of 10)"
  "$tb" link ckh1 1gbit
  if have_line=$("$tb" status | grep -c "^ckh1 .*delay line"); [ "$have_line" = 0 ]; then ok "delay taken off ckh1's link"; else bad "ckh1 still delayed"; fi
  expect_eq "$(ip netns exec ckh1 iptables-legacy -t mangle -S POSTROUTING 2>/dev/null | grep -c NFQUEUE || true)" 0 "ckh1's queue rule gone"
fi

"$tb" down && ok "testbed down"
expect_eq "$(ip netns list | grep -Ec '^ck(h[0-9]+|br|head)\b' || true)" 0 "no namespace left"
expect_eq "$(pgrep -c -f "coll-testbed-delay --queue 0 --delay .* --ready $COLLKIT_TESTBED_DIR/" || true)" 0 "no delay line left"
finish
