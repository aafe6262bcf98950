#!/usr/bin/env bash
# The fault matrix across hosts, on the testbed (scripts/testbed.sh: 2 hosts x 2 ranks, 1 Gbit/s
# links): while coll-run runs AllReduce between the hosts,
#  - host 2's link goes down (its bridge port: the host sees silence, not an error): every rank, on
#    both hosts, gives up and exits within --timeout plus slack, with a message naming the stuck op
#    and its peer. mpirun itself cannot end the job while it cannot reach host 2's daemon (Open
#    MPI's launcher waits for it); once the link is back it does, with a non-zero exit;
#  - host 2's coll-run processes are killed, as mpirun runs by default and under
#    orte_abort_on_non_zero_status 0: each rank on host 1 names ranks 2 and 3 on ckh2 in one line
#    and is gone within --timeout + 2 s;
# then, on 4 hosts x 1 rank, the traffic between hosts 1 and 2 alone slowed by tc (a real slow link,
# nothing injected): coll-run adapt --detect probe names ranks 0-1 and its ring avoids them; and the
# same link slowed 10x under a running AllReduce: it goes on and ends right, no rank gives up.
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
"$tb" up 2 --ranks-per-host 2 --link 1gbit >"$TMP/up.txt" 2>&1 || { cat "$TMP/up.txt"; bad "testbed up"; finish; }
ok "testbed up 2 --link 1gbit"
mpi() { timeout 120 "$tb" mpirun --host ckh1:2,ckh2:2 "$@"; }

# Bad input to `link`: one line, exit 2.
expect_fail 2 "testbed.sh: link: 'ckh9' is not a testbed host (ckh1 ckh2)" "$tb" link ckh9 down
expect_fail 2 "testbed.sh: bad link rate 'slow': expected e.g. 1gbit, 100mbit" "$tb" link ckh2 slow
expect_fail 2 "testbed.sh: pair: needs a testbed whose links are not shaped (up without --link)" "$tb" pair ckh1 ckh2 100mbit

# The coll-run processes of a host (its network namespace holds them).
ranks_on() { for p in $(ip netns pids "$1"); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = coll-run ] && echo "$p"; done; true; }

# Starts a long AllReduce across the hosts in the background; waits until both hosts' ranks run.
start_run() { # start_run NAME ITERS TIMEOUT [MPIRUN OPTIONS]
  mpi "${@:4}" "$COLLKIT_BIN/coll-run" --no-discover --coll allreduce --algo ring -b 1M -e 1M -n "$2" -w 1 -c 1 --no-baseline \
    --timeout "$3" --json "$TMP/$1.json" >"$TMP/$1.txt" 2>&1 &
  launcher=$!
  started=$(date +%s)
  for _ in $(seq 150); do
    [ "$(ranks_on ckh2 | wc -l)" = 2 ] && [ "$(ranks_on ckh1 | wc -l)" = 2 ] && break
    sleep 0.2
  done
  sleep 2  # past start-up: into the timed iterations
}

# Waits for the job; says how it ended and how long it took from the fault.
end_run() { # end_run NAME FAULT_TIME -> rc, took
  rc=0
  wait "$launcher" || rc=$?
  took=$(($(date +%s) - $2))
}

# 1. Host 2's link goes down mid-run.
start_run down 1000000 5
fault=$(date +%s)
"$tb" link ckh2 down
for _ in $(seq 120); do
  [ "$(ranks_on ckh1 | wc -l)" = 0 ] && [ "$(ranks_on ckh2 | wc -l)" = 0 ] && break
  sleep 0.5
done
gone=$(($(date +%s) - fault))
left=$(($(ranks_on ckh1 | wc -l) + $(ranks_on ckh2 | wc -l)))
if [ "$left" = 0 ] && [ "$gone" -lt 30 ]; then ok "link down: every rank on both hosts exited ${gone}s after the fault (--timeout 5)"; else bad "link down: $left ranks left after ${gone}s"; fi
"$tb" link ckh2 up
end_run down "$fault"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && ok "link down: mpirun ended with exit $rc once the link was back" || bad "link down: mpirun exit $rc"
grep -Eq "no progress for 5 s: waiting on op .*rank [0-3]" "$TMP/down.txt" && ok "link down: a rank names the stuck op and its peer" ||
  bad "link down: no stall message: $(grep -m3 -i error "$TMP/down.txt")"
expect_eq "$(json_get "$TMP/down.json" 'j.get("complete")')" False "link down: the partial --json is marked incomplete"
named=0
for r in 0 1; do grep -q "^coll-run: error: rank $r on host ckh1: .*ranks 2 on host ckh2, 3 on host ckh2 did not answer within 0.5 s (silent without MPI too" "$TMP/down.txt" && named=$((named + 1)); done
for r in 2 3; do grep -q "^coll-run: error: rank $r on host ckh2: .*ranks 0 on host ckh1, 1 on host ckh1 did not answer within 0.5 s (silent without MPI too" "$TMP/down.txt" && named=$((named + 1)); done
expect_eq "$named" 4 "link down: every rank names the other host's ranks as not answering, without MPI either (unreachable, not gone)"

# Polls until host 1 has no coll-run left (up to 60 s); $gone: seconds from $1 (the fault).
host1_gone() {
  gone=never
  for _ in $(seq 600); do
    if [ "$(ranks_on ckh1 | wc -l)" = 0 ]; then gone=$(python3 -c "import time; print(f'{time.time() - $1:.2f}')"); return; fi
    sleep 0.1
  done
}
within() { python3 -c "import sys; sys.exit(0 if '$1' != 'never' and $1 <= $2 else 1)"; }

# 2. Host 2's ranks are killed mid-run. By default Open MPI ends the job itself when a process
# dies (SIGTERM to the others): each rank on host 1 says so in one line, naming ranks 2 and 3 on
# ckh2 as gone, and is gone. Open MPI's TCP transport keeps its calls to the dead from returning (a
# rank hung posting its roll call to a dead peer), so the names come from the liveness side channel
# (UDP, no MPI: their ports refuse), asked by a watchdog at the signal (docs/errors.md).
start_run killed 1000000 5
fault=$(date +%s.%N)
for p in $(ranks_on ckh2); do kill -9 "$p"; done
host1_gone "$fault"
end_run killed "${fault%.*}"
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then ok "ranks killed: the job ended with exit $rc"; else bad "ranks killed: exit $rc after ${took}s"; fi
within "$gone" 7 && ok "ranks killed: host 1's ranks gone ${gone} s after the fault (limit --timeout 5 + 2)" ||
  bad "ranks killed: host 1's ranks gone after $gone s"
echo "measured: ranks killed (default): host 1's ranks gone after $gone s"
# Each of host 1's ranks says it was stopped at most once, and one of them at least: Open MPI
# SIGKILLs what is left as soon as one rank exits after its SIGTERM, which can take the other rank,
# stuck in a call to the dead peer, before its watchdog's line (2 runs in 5 here). A rank whose MPI
# call failed outright (MPI_ERR_INTERN) names them at once instead (docs/errors.md).
said=0
for r in 0 1; do
  n=$(grep -c "^coll-run: error: rank $r on host ckh1: \(stopped by\|MPI_\)" "$TMP/killed.txt" || true)
  [ "$n" -le 1 ] && ok "ranks killed: rank $r (host 1) said it was stopped $n time(s), at most once" ||
    bad "ranks killed: rank $r printed $n lines"
  said=$((said + n))
done
[ "$said" -ge 1 ] && ok "ranks killed: $said of host 1's ranks said they were stopped" || bad "ranks killed: host 1 silent"
named=$(grep -c "^coll-run: error: rank [01] on host ckh1: \(stopped by\|MPI_\).*ranks \([01] on host ckh1, \)\?2 on host ckh2, 3 on host ckh2 \(are gone\|did not answer within 0.3 s (gone\)" "$TMP/killed.txt" || true)
expect_eq "$named" "$said" "ranks killed: every line of host 1 names ranks 2 and 3 on ckh2 as gone"

# 3. The same under --mca orte_abort_on_non_zero_status 0: mpirun leaves the survivors to find
# out (issue #12: this form once hung a survivor and mpirun under CI's load, with an unbounded
# MPI_Abort and 4 s of roll call and lingering). They time out, call the roll, name the dead and
# end the job within --timeout + 3 s: a clean CI run beside the other tests measured 7.02 s (the
# survivor's 5 s, its roll call, mpirun's teardown and this script's 0.1 s polling of the
# namespace's processes), past the + 2 s this check first allowed; a hang reads "never" (60 s).
start_run killed-noabort 1000000 5 --mca orte_abort_on_non_zero_status 0
fault=$(date +%s.%N)
for p in $(ranks_on ckh2); do kill -9 "$p"; done
host1_gone "$fault"
end_run killed-noabort "${fault%.*}"
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then ok "ranks killed, no abort: the job ended with exit $rc"; else bad "ranks killed, no abort: exit $rc after ${took}s"; fi
within "$gone" 8 && ok "ranks killed, no abort: host 1's ranks gone ${gone} s after the fault (limit --timeout 5 + 3)" ||
  bad "ranks killed, no abort: host 1's ranks gone after $gone s"
echo "measured: ranks killed (orte_abort_on_non_zero_status 0): host 1's ranks gone after $gone s"
# Each of host 1's ranks prints at most one line, one at least, and every line names ranks 2 and 3
# as gone: after its timeout ("no progress for 5 s: ...") or, where Open MPI ended the job itself
# all the same (1 run in about 30 under load: its TCP transport can abort the job on a write to a
# dead peer's socket), after the launcher's SIGTERM, as by default; or where an MPI call failed
# outright (MPI_ERR_INTERN on a send to the dead peer's closed socket), at once, naming them over
# the side channel; the other rank then also names that one, which has exited with its line.
said=0
for r in 0 1; do
  n=$(grep -c "^coll-run: error: rank $r on host ckh1: " "$TMP/killed-noabort.txt" || true)
  [ "$n" -le 1 ] && ok "ranks killed, no abort: rank $r (host 1) printed $n line(s), at most one" || bad "ranks killed, no abort: rank $r printed $n lines"
  said=$((said + n))
done
[ "$said" -ge 1 ] && ok "ranks killed, no abort: $said of host 1's ranks printed their line" || bad "ranks killed, no abort: host 1 silent"
named=$(grep -c "^coll-run: error: rank [01] on host ckh1: .*ranks \([01] on host ckh1, \)\?2 on host ckh2, 3 on host ckh2 \(did not answer within 0\.[35] s (gone: their processes have exited)\|are gone\)" \
  "$TMP/killed-noabort.txt" || true)
expect_eq "$named" "$said" "ranks killed, no abort: every line of host 1 names ranks 2 and 3 on ckh2 as gone"
[ "$named" = "$said" ] || grep "^coll-run: error:" "$TMP/killed-noabort.txt"
timed_out=$(grep -c "^coll-run: error: rank [01] on host ckh1: no progress for 5 s: " "$TMP/killed-noabort.txt" || true)
echo "measured: ranks killed, no abort: $timed_out of $said lines after the survivor's own timeout (the others after Open MPI's SIGTERM)"
expect_eq "$(json_get "$TMP/killed-noabort.json" 'j.get("complete")')" False "ranks killed, no abort: the partial --json is marked incomplete"

# (A link slowed 10x mid-run by reshaping its tbf is not used: the reshaping drops what the qdisc
# holds, and on a loaded machine TCP's retransmission backoff then stalled the run past any
# --timeout we tried (10 s, 30 s). Section 5 slows a link with an htb class changed in place.)

# 4. A real slow link between two hosts, found and routed around.
"$tb" up 4 --ranks-per-host 1 >"$TMP/up4.txt" 2>&1 || { cat "$TMP/up4.txt"; bad "testbed up 4"; finish; }
expect_fail 2 "testbed.sh: pair: 'ckh9' is not a testbed host (ckh1 ckh2 ckh3 ckh4)" "$tb" pair ckh1 ckh9 100mbit
expect_fail 2 "testbed.sh: pair: a host and itself: give two hosts" "$tb" pair ckh3 ckh3 100mbit
# 100 Mbit/s: the adaptive classifier (adapt.cpp, slow_outliers) needs the slow pair to stand out of
# the other pairs' noise, which four TCP ranks on a loaded 2-core machine spread over 2x; at 200 Mbit/s it
# stood out by 1.9x there, at 100 Mbit/s by 3-5x.
"$tb" pair ckh1 ckh2 100mbit
expect_eq "$(tc -n ckh1 filter show dev eth0 | grep -c 'match c6120002/ffffffff at 16' || true)" 1 "ckh1's traffic to ckh2 (198.18.0.2) is filtered into the slow band"
if timeout 120 "$tb" mpirun --host ckh1:1,ckh2:1,ckh3:1,ckh4:1 "$COLLKIT_BIN/coll-run" adapt --detect probe --coll allreduce -b 1M -e 1M -n 3 -w 1 \
     >"$TMP/adapt.txt" 2>&1; then
  ok "coll-run adapt across 4 hosts with the ckh1-ckh2 link slow"
else
  bad "adapt: $(tail -3 "$TMP/adapt.txt")"
fi
# Slowest first; four processes on two cores talking TCP can make the probe flag other pairs too.
expect_eq "$(sed -n 's/^# slow pairs found: //p' "$TMP/adapt.txt" | awk '{print $1}')" "0-1" "the probe names the slow link, ranks 0-1, first"
# The adapted plan: a ring that never joins 0 and 1; or, where the noisy probe also flagged other
# pairs of rank 0 or 1 (so that one looks like a slow rank, which no ring order avoids), the
# straggler plan around that rank, an end of the slow link.
order=$(grep '^# adapted ring order:' "$TMP/adapt.txt" | sed 's/.*: //' || true)
straggler=$(sed -n 's/^# adapted: straggler around rank \([0-9]*\).*/\1/p' "$TMP/adapt.txt" | head -1)
if [ -n "$order" ]; then
  [[ ",$order,$order," != *",0,1,"* && ",$order,$order," != *",1,0,"* ]] && ok "the adapted ring ($order) never sends between 0 and 1" ||
    bad "the adapted ring $order still joins 0 and 1"
elif [ "$straggler" = 0 ] || [ "$straggler" = 1 ]; then
  ok "the probe flagged more pairs of rank $straggler: the straggler plan around it, an end of the slow link"
  echo "measured: adapt chose the straggler plan around rank $straggler ($(grep '^# slow pairs found' "$TMP/adapt.txt"))"
else
  bad "adapt: no ring order and no straggler at 0 or 1: $(grep '^# ' "$TMP/adapt.txt" | tail -4 | tr '\n' ' ')"
fi
# 5. A link slowed 10x mid-run: ckh1-ckh2 at 1 Gbit/s, then 100 Mbit/s while the ring AllReduce
# runs (the htb class changed in place: nothing queued is dropped). A slow link is not a dead one:
# the run goes on, slower, ends with every element right, and no rank times out or names a peer.
"$tb" pair ckh1 ckh2 1gbit
timeout 120 "$tb" mpirun --host ckh1:1,ckh2:1,ckh3:1,ckh4:1 "$COLLKIT_BIN/coll-run" --no-discover --coll allreduce --algo ring \
  -b 1M -e 1M -n 40 -w 1 -c 1 --no-baseline --timeout 10 --json "$TMP/slowed.json" >"$TMP/slowed.txt" 2>&1 &
launcher=$!
for _ in $(seq 150); do
  [ "$(ranks_on ckh1 | wc -l)" = 1 ] && [ "$(ranks_on ckh2 | wc -l)" = 1 ] && break
  sleep 0.2
done
sleep 0.3
fault=$(date +%s.%N)
"$tb" pair ckh1 ckh2 100mbit
kill -0 "$launcher" 2>/dev/null && ok "slowed: the run was still going when the link slowed" || bad "slowed: the run had ended before the link slowed"
expect_eq "$(tc -n ckh1 class show dev eth0 classid 1:20 | grep -o 'rate [0-9]*[A-Za-z]*' | head -1)" "rate 100Mbit" "slowed: ckh1's class toward ckh2 now at 100 Mbit/s"
rc=0
wait "$launcher" || rc=$?
took=$(python3 -c "import time; print(f'{time.time() - $fault:.1f}')")
expect_eq "$rc" 0 "slowed mid-run: the run ended normally"
expect_eq "$(json_get "$TMP/slowed.json" 'j["total_wrong"]')" 0 "slowed mid-run: wrong elements"
expect_eq "$(grep -c 'error' "$TMP/slowed.txt" || true)" 0 "slowed mid-run: no rank gave up or named a peer"
echo "measured: link ckh1-ckh2 slowed 1 Gbit/s -> 100 Mbit/s mid-run: the run ended ${took} s after the change"
"$tb" pair ckh1 ckh2 off
expect_eq "$(tc -n ckh1 qdisc show dev eth0 | grep -c htb || true)" 0 "pair off: the htb qdisc is gone"

"$tb" down && ok "testbed down"
expect_eq "$(ip netns list | grep -Ec '^ck(h[0-9]+|br|head)\b' || true)" 0 "no namespace left"
finish
