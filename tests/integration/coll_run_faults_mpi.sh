#!/usr/bin/env bash
# The fault matrix of coll-run under mpirun (issue #15, #13's rank failure): 3 ranks run a long
# ring AllReduce; mid-run one of these faults hits:
#  - rank 1 killed (SIGKILL), as mpirun runs by default (it ends the job: SIGTERM to the others);
#  - rank 1 killed under --mca orte_abort_on_non_zero_status 0 (mpirun leaves the survivors to find
#    out: they time out);
#  - rank 1 stalled (SIGSTOP: alive, silent);
#  - rank 1 slowed (--inject slow-rank=1:x4): the run must complete, correct, exit 0 everywhere;
#  - mpirun killed (SIGKILL): no rank may be left behind (orphans);
#  - mpirun stopped (SIGTERM): every rank says it was stopped, names nobody, and is gone.
# For kill and stall every survivor (ranks 0 and 2) must exit non-zero, print exactly one line
# naming the peer with its host ("rank 1 on host H"), and exit within --timeout + 2 s of the fault.
# That bound is a liveness deadline, not a performance figure: the fault is timestamped by this
# script after start-up and each survivor's end by polling its process (every 0.05 s), and the
# timeout (10 s) is far above a loaded machine's scheduling delays.
source "$(dirname "$0")/lib.sh"
run="$COLLKIT_BIN/coll-run"
if ! command -v mpirun >/dev/null; then echo "skip: mpirun not found"; exit 77; fi
T=10
host=$(hostname)
cases=0

# rank.sh DIR coll-run...: one rank: starts coll-run (which keeps the default SIGTERM, so mpirun's
# signals to the rank's process group reach it), then ignores SIGTERM itself and records coll-run's
# exit status and the time it ended. mpirun's SIGKILL, a second after its SIGTERM, takes the wrapper
# too: a rank that did not end on its own leaves no record.
cat >"$TMP/rank.sh" <<'EOF'
#!/usr/bin/env bash
dir=$1
shift
"$@" &
child=$!
trap '' TERM INT HUP
echo "$child" >"$dir/pid.$OMPI_COMM_WORLD_RANK"
rc=0
wait "$child" || rc=$?
echo "$rc $(date +%s.%N)" >"$dir/exit.$OMPI_COMM_WORLD_RANK"
# Ended as coll-run did, so that mpirun sees what it would without the wrapper: a rank killed by
# a signal, or its exit code.
trap - TERM INT HUP
[ "$rc" -gt 128 ] && kill -s "$((rc - 128))" $$
exit "$rc"
EOF
chmod +x "$TMP/rank.sh"

# Starts the run in the background (through the wrapper unless NOWRAP=1) and waits until its
# timed iterations are under way (rank 0 has printed the table's header and every rank a pid).
start_case() { # start_case NAME [MPIRUN OPTIONS] -- [COLL-RUN OPTIONS]
  name=$1
  shift
  dir="$TMP/$name"
  mkdir -p "$dir"
  local mpi_opts=() run_opts=()
  while [ "$1" != -- ]; do mpi_opts+=("$1"); shift; done
  shift
  run_opts=("$@")
  local wrap=("$TMP/rank.sh" "$dir")
  [ "${NOWRAP:-0}" = 1 ] && wrap=()
  timeout 300 mpirun --oversubscribe -np 3 "${mpi_opts[@]}" "${wrap[@]}" "$run" --coll allreduce --algo ring -b 1M -e 1M -w 1 \
    --no-baseline --no-discover --timeout $T --json "$dir/res.json" "${run_opts[@]}" >"$dir/out.txt" 2>&1 &
  launcher=$!
  for _ in $(seq 600); do
    if [ "${NOWRAP:-0}" = 1 ]; then
      pids=$(pgrep -f -- "--json $dir/res.json" | while read -r p; do [ "$(cat /proc/$p/comm 2>/dev/null)" = coll-run ] && echo "$p"; done || true)
      [ "$(echo "$pids" | grep -c .)" = 3 ] && grep -q float "$dir/out.txt" && break
    else
      [ -s "$dir/pid.0" ] && [ -s "$dir/pid.1" ] && [ -s "$dir/pid.2" ] && grep -q float "$dir/out.txt" && break
    fi
    kill -0 "$launcher" 2>/dev/null || break
    sleep 0.1
  done
  sleep 1  # into the timed iterations
}

# After a fault: polls the ranks' coll-run processes (every 0.05 s, up to --timeout + 5 s) and
# writes when each was gone (exited, zombie or reaped) to $dir/gone.R.
watch_exits() { # watch_exits RANKS...
  local r p st end
  end=$(python3 -c "import time; print(time.time() + $T + 5)")
  while :; do
    local left=0
    for r in "$@"; do
      [ -e "$dir/gone.$r" ] && continue
      p=$(cat "$dir/pid.$r")
      st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null || true)
      if [ -z "$st" ] || [ "$st" = Z ]; then date +%s.%N >"$dir/gone.$r"; else left=$((left + 1)); fi
    done
    [ "$left" = 0 ] && return
    python3 -c "import sys, time; sys.exit(0 if time.time() < $end else 1)" || return
    sleep 0.05
  done
}

# The survivors' verdict: exactly one line naming rank 1 and its host, gone within --timeout + 2 s
# of the fault, exit status non-zero. The status is the wrapper's record where the rank ended on
# its own; Open MPI's launcher SIGKILLs every rank left (with its wrapper) as soon as one has
# exited after its SIGTERM, so a survivor may end by that SIGKILL after its line (status 137).
check_survivors() { # check_survivors NAME FAULT_TIME
  local name=$1 fault=$2 r rc at took lines
  for r in 0 2; do
    lines=$(grep -c "^coll-run: error: rank $r on host $host: .*rank 1 on host $host did not answer" "$dir/out.txt" || true)
    expect_eq "$lines" 1 "$name: lines of survivor rank $r naming rank 1 on host $host"
    if [ -s "$dir/exit.$r" ]; then
      read -r rc _ <"$dir/exit.$r"
    else
      rc="137 (SIGKILL from mpirun after its line)"
    fi
    [ "${rc%% *}" -ne 0 ] && ok "$name: survivor rank $r exited $rc" || bad "$name: survivor rank $r exited 0"
    if [ ! -s "$dir/gone.$r" ]; then
      bad "$name: survivor rank $r still there $((T + 5)) s after the fault"
      continue
    fi
    at=$(cat "$dir/gone.$r")
    took=$(python3 -c "print(f'{$at - $fault:.2f}')")
    if python3 -c "import sys; sys.exit(0 if $at - $fault <= $T + 2 else 1)"; then
      ok "$name: survivor rank $r gone ${took} s after the fault (limit --timeout $T + 2)"
    else
      bad "$name: survivor rank $r gone ${took} s after the fault (limit --timeout $T + 2)"
    fi
    echo "measured: $name: rank $r exit $rc, gone ${took} s after the fault"
  done
  [ "$(json_get "$dir/res.json" 'j.get("complete")')" = False ] && ok "$name: the --json holds what finished, marked incomplete" ||
    bad "$name: --json not marked incomplete"
}

# 1. Rank 1 killed; mpirun as it runs by default ends the job (SIGTERM to the survivors, SIGKILL a
# second later): the survivors still say who is gone.
start_case kill -- -n 100000000 -c 0
fault=$(date +%s.%N)
kill -KILL "$(cat "$dir/pid.1")"
watch_exits 0 2
rc=0
wait "$launcher" || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && ok "kill: mpirun exited $rc" || bad "kill: mpirun exit $rc"
check_survivors kill "$fault"
cases=$((cases + 1))

# 2. Rank 1 killed, mpirun told not to end the job: the survivors time out, call the roll, name it
# and end the job themselves.
start_case kill-noabort --mca orte_abort_on_non_zero_status 0 -- -n 100000000 -c 0
fault=$(date +%s.%N)
kill -KILL "$(cat "$dir/pid.1")"
watch_exits 0 2
rc=0
wait "$launcher" || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && ok "kill-noabort: mpirun exited $rc" || bad "kill-noabort: mpirun exit $rc"
check_survivors kill-noabort "$fault"
grep -q "^coll-run: error: rank [02] on host $host: no progress for $T s: waiting on op" "$dir/out.txt" &&
  ok "kill-noabort: a survivor names the op it waited on" || bad "kill-noabort: no 'no progress' line"
cases=$((cases + 1))

# 3. Rank 1 stalled (SIGSTOP): alive to the launcher, silent to its peers.
start_case stall -- -n 100000000 -c 0
fault=$(date +%s.%N)
kill -STOP "$(cat "$dir/pid.1")"
watch_exits 0 2
rc=0
wait "$launcher" || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && ok "stall: mpirun exited $rc" || bad "stall: mpirun exit $rc"
kill -KILL "$(cat "$dir/pid.1")" 2>/dev/null || true
check_survivors stall "$fault"
grep -q "^coll-run: error: rank [02] on host $host: no progress for $T s: waiting on op .* rank 1" "$dir/out.txt" &&
  ok "stall: a survivor names the op it waited on and rank 1" || bad "stall: no 'no progress' line naming rank 1"
cases=$((cases + 1))

# 4. Rank 1 slowed 4x (in the backend's transport): slow is not dead. The run completes, checked,
# and no rank gives up.
start_case slow -- -n 30 -c 1 --inject slow-rank=1:x4
rc=0
wait "$launcher" || rc=$?
expect_eq "$rc" 0 "slow: mpirun's exit"
for r in 0 1 2; do
  if [ -s "$dir/exit.$r" ]; then read -r rrc _ <"$dir/exit.$r"; expect_eq "$rrc" 0 "slow: rank $r's exit"; else bad "slow: rank $r left no exit record"; fi
done
expect_eq "$(json_get "$dir/res.json" 'j["total_wrong"]')" 0 "slow: wrong elements"
expect_eq "$(json_get "$dir/res.json" 'j.get("complete", True)')" True "slow: the --json is complete"
expect_eq "$(grep -c '^coll-run: error' "$dir/out.txt" || true)" 0 "slow: error lines"
cases=$((cases + 1))

# 5. mpirun itself killed (SIGKILL): the ranks lose their launcher (and the pipes their output went
# to). Each finds its parent gone and exits: none may linger.
NOWRAP=1 start_case mpirun-kill -- -n 100000000 -c 0
ranks=$pids
fault=$(date +%s.%N)
kill -KILL "$(pgrep -P "$launcher" -x mpirun || pgrep -P "$launcher")"
{ wait "$launcher"; } 2>/dev/null || true
left=3
for _ in $(seq $(((T + 2) * 10))); do
  left=0
  for p in $ranks; do [ "$(cat /proc/$p/comm 2>/dev/null)" = coll-run ] && left=$((left + 1)); done
  [ "$left" = 0 ] && break
  sleep 0.1
done
took=$(python3 -c "import time; print(f'{time.time() - $fault:.2f}')")
expect_eq "$left" 0 "mpirun-kill: coll-run processes left ${took} s after mpirun was killed (limit --timeout $T + 2)"
echo "measured: mpirun-kill every rank gone after ${took} s"
for p in $ranks; do kill -KILL "$p" 2>/dev/null || true; done
cases=$((cases + 1))

# 6. mpirun stopped (SIGTERM, as Ctrl-C or a batch system's time limit): it passes SIGTERM to the
# ranks; each says so in one line, names nobody (every rank answers the roll) and ends.
start_case mpirun-term -- -n 100000000 -c 0
fault=$(date +%s.%N)
kill -TERM "$(pgrep -P "$launcher" -x mpirun || pgrep -P "$launcher")"
watch_exits 0 1 2
rc=0
wait "$launcher" || rc=$?
[ "$rc" -ne 0 ] && ok "mpirun-term: mpirun exited $rc" || bad "mpirun-term: mpirun exited 0"
for r in 0 1 2; do
  expect_eq "$(grep -c "^coll-run: error: rank $r on host $host: stopped by SIGTERM (the launcher ends the job: a rank failed or mpirun was stopped)$" \
    "$dir/out.txt" || true)" 1 "mpirun-term: rank $r's lines saying it was stopped (naming no rank)"
  if [ -s "$dir/exit.$r" ]; then read -r rrc _ <"$dir/exit.$r"; else rrc="137 (SIGKILL from mpirun after its line)"; fi
  [ "${rrc%% *}" -ne 0 ] && ok "mpirun-term: rank $r exited $rrc" || bad "mpirun-term: rank $r exited 0"
  if [ -s "$dir/gone.$r" ]; then
    took=$(python3 -c "print(f'{$(cat "$dir/gone.$r") - $fault:.2f}')")
    python3 -c "import sys; sys.exit(0 if $took <= $T + 2 else 1)" && ok "mpirun-term: rank $r gone ${took} s after mpirun's SIGTERM (limit --timeout $T + 2)" ||
      bad "mpirun-term: rank $r gone ${took} s after mpirun's SIGTERM (limit --timeout $T + 2)"
    echo "measured: mpirun-term: rank $r exit $rrc, gone ${took} s after the fault"
  else
    bad "mpirun-term: rank $r still there"
  fi
done
cases=$((cases + 1))

echo "fault cases checked: $cases (kill, kill with orte_abort_on_non_zero_status 0, stall, slow, mpirun killed, mpirun stopped)"
finish
