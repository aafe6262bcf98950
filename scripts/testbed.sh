#!/usr/bin/env bash
# A small multi-host cluster on this machine, made of network namespaces (see docs/testbed.md).
#
#   testbed.sh up N [--ranks-per-host R] [--link RATE[,DELAY]]   make hosts ckh1..ckhN (idempotent)
#   testbed.sh down                                              remove everything `up` made
#   testbed.sh status                                            print hosts, addresses, shaping
#   testbed.sh mpirun ARGS...                                    mpirun from the head namespace
#   testbed.sh link HOST down|up|RATE[,DELAY]                    fail, restore or reshape a host's link
#   testbed.sh pair HOST1 HOST2 RATE|off                         slow (or restore) traffic between two hosts
#   testbed.sh check                                             can one be made here now? (exit 3 and why if not)
#
# Layout: namespace ckbr holds bridge br0; host namespace ckhI has eth0 = 198.18.0.I/24, a veth
# whose peer pI sits on br0; namespace ckhead (198.18.0.254) is where mpirun runs, so the root
# namespace gets no interface, address or route. --link shapes both directions of every host's
# link with tc: tbf at RATE on the host's eth0 and on its bridge port, and DELAY one way on what
# leaves the host's eth0: netem under the tbf where the kernel has it, else coll-testbed-delay (a
# user-space delay line fed by an iptables NFQUEUE rule in the host's namespace). Hostnames: scripts/testbed-rsh.sh starts each
# Open MPI daemon in its host's network namespace and in a new UTS namespace named after the host.
set -euo pipefail

state=${COLLKIT_TESTBED_DIR:-/run/collkit-testbed}
prefix=198.18.0
here=$(cd "$(dirname "$0")" && pwd)

die() { echo "testbed.sh: $*" >&2; exit 2; }
usage() { die "usage: testbed.sh up N [--ranks-per-host R] [--link RATE[,DELAY]] | down | status | mpirun ARGS... | link HOST down|up|RATE[,DELAY] | pair HOST1 HOST2 RATE|off | check"; }

# Every namespace this script made is listed in $state/namespaces; `down` also removes the fixed
# names, so it cleans up after an `up` that failed before writing the list.
ours() {
  ip netns list | awk '{print $1}' | grep -E '^(ckbr|ckhead|ckh[0-9]+)$' || true
}

down() {
  local ns
  # Processes left in our namespaces (delay lines, daemons of a job that did not end) keep them
  # alive after `ip netns del`: ended first.
  for ns in $(ours); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
  done
  for ns in $(ours); do ip netns del "$ns"; done
  rm -rf "$state"
}

# RATE like 1gbit, 100mbit, 10gbit (tc units); prints bits per second.
rate_bps() {
  local r=$1 n u
  [[ $r =~ ^([0-9]+)(|bit|kbit|mbit|gbit)$ ]] || die "bad link rate '$r': expected e.g. 1gbit, 100mbit"
  n=${BASH_REMATCH[1]}; u=${BASH_REMATCH[2]}
  case $u in
    ''|bit) echo "$n" ;; kbit) echo $((n * 1000)) ;; mbit) echo $((n * 1000000)) ;; gbit) echo $((n * 1000000000)) ;;
  esac
}

# RATE[,DELAY] into $rate and $delay, checked.
parse_link() {
  rate=${1%%,*}
  delay=''
  [[ $1 == *,* ]] && delay=${1#*,}
  rate_bps "$rate" >/dev/null
  [[ -z $delay || $delay =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] || die "bad link delay '$delay': expected e.g. 50us, 1ms"
}

shape() { # shape NS DEV RATE DELAY: DELAY only where given (the host's side)
  local ns=$1 dev=$2 rate=$3 delay=$4 bps burst
  bps=$(rate_bps "$rate")
  burst=$((bps / 8 / 1000)) # 1 ms at the rate
  ((burst >= 32768)) || burst=32768
  ip -n "$ns" link set "$dev" gso_max_size 65536 2>/dev/null || true
  tc -n "$ns" qdisc replace dev "$dev" root handle 1: tbf rate "$rate" burst "$burst" latency 20ms
  [[ -z $delay ]] && return 0
  if have_netem; then
    tc -n "$ns" qdisc replace dev "$dev" parent 1:1 handle 10: netem delay "$delay" limit 10000
  else
    delay_line "$ns" "$delay"
  fi
}

# The delay line: coll-testbed-delay in the host's namespace holds every IPv4 packet leaving eth0
# for DELAY (netfilter queue 0, fed by an iptables rule added once the line is listening: a queue
# nobody reads drops). Reshaping restarts it with the new delay.
delay_bin() { echo "${COLLKIT_BIN:-$here/../build/bin}/coll-testbed-delay"; }
have_delay_line() { [[ -x $(delay_bin) ]] && command -v iptables-legacy >/dev/null; }
delay_line() { # delay_line NS DELAY
  local ns=$1 delay=$2 pid
  if [[ -f $state/delay.$ns.pid ]]; then
    kill "$(cat "$state/delay.$ns.pid")" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$(cat "$state/delay.$ns.pid")" 2>/dev/null || break; sleep 0.02; done
  fi
  rm -f "$state/delay.$ns.ready"
  ip netns exec "$ns" setsid "$(delay_bin)" --queue 0 --delay "$delay" --ready "$state/delay.$ns.ready" \
    </dev/null >"$state/delay.$ns.log" 2>&1 &
  pid=$!
  echo "$pid" >"$state/delay.$ns.pid"
  for _ in $(seq 100); do [[ -f $state/delay.$ns.ready ]] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
  [[ -f $state/delay.$ns.ready ]] || die "the delay line of $ns did not start: $(head -1 "$state/delay.$ns.log")"
  ip netns exec "$ns" iptables-legacy -w -t mangle -C POSTROUTING -o eth0 -j NFQUEUE --queue-num 0 2>/dev/null ||
    ip netns exec "$ns" iptables-legacy -w -t mangle -A POSTROUTING -o eth0 -j NFQUEUE --queue-num 0
}
no_delay_line() { # no_delay_line NS: the host's link without delay (rule first, then the line)
  local ns=$1
  ip netns exec "$ns" iptables-legacy -w -t mangle -D POSTROUTING -o eth0 -j NFQUEUE --queue-num 0 2>/dev/null || true
  [[ -f $state/delay.$ns.pid ]] && kill "$(cat "$state/delay.$ns.pid")" 2>/dev/null || true
  rm -f "$state/delay.$ns.pid" "$state/delay.$ns.ready"
}
# Can DELAY be put on a link here? Nothing, or why not (and exit 2).
need_delay() {
  have_netem || have_delay_line ||
    die "link delay '$1' needs the kernel's netem qdisc, which this kernel ($(uname -r)) lacks, or the delay line ($(delay_bin), built where libnetfilter-queue-dev is installed, and iptables-legacy)"
}

# netem is a kernel module some kernels (this machine's 6.18 -fc) lack: probe it before `up`.
have_netem() {
  if [[ -z ${netem_known:-} ]]; then
    netem_known=1
    ip netns add ckprobe
    tc -n ckprobe qdisc add dev lo root netem delay 1us 2>/dev/null || netem_known=0
    ip netns del ckprobe
  fi
  [[ $netem_known == 1 ]]
}

up() {
  local n=${1:-} rpn=2 link='' rate='' delay='' i
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 200)) || die "up: N must be a number of hosts from 1 to 200, got '${n}'"
  shift
  while (($#)); do
    case $1 in
      --ranks-per-host) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--ranks-per-host needs a positive number"; rpn=$2; shift 2 ;;
      --link) [[ -n ${2:-} ]] || die "--link needs RATE[,DELAY]"; link=$2; shift 2 ;;
      *) die "up: unknown argument '$1'" ;;
    esac
  done
  [[ -z $link ]] || parse_link "$link"
  ip netns list >/dev/null 2>&1 || die "cannot list network namespaces (need root and iproute2)"
  down # idempotent: a second `up` rebuilds from nothing
  [[ -z $delay ]] || need_delay "$delay"
  trap 'echo "testbed.sh: up failed at line $LINENO; removing what it made" >&2; down' ERR
  mkdir -p "$state"
  ip netns add ckbr || die "cannot make network namespaces here (need root / CAP_SYS_ADMIN)"
  echo ckbr >"$state/namespaces"
  ip -n ckbr link set lo up
  ip -n ckbr link add br0 type bridge
  ip -n ckbr link set br0 up
  local names=()
  for ((i = 1; i <= n; i++)); do names+=("ckh$i"); done
  names+=(ckhead)
  i=0
  : >"$state/hostfile"; : >"$state/hosts"
  for ns in "${names[@]}"; do
    i=$((i + 1))
    local addr=$prefix.$i
    [[ $ns == ckhead ]] && addr=$prefix.254
    ip netns add "$ns"
    echo "$ns" >>"$state/namespaces"
    ip -n "$ns" link set lo up
    ip link add "tbv$$-$i" netns "$ns" type veth peer name "p$i" netns ckbr
    ip -n "$ns" link set "tbv$$-$i" name eth0
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n ckbr link set "p$i" master br0 up
    if [[ $ns != ckhead ]]; then
      if [[ -n $rate ]]; then
        shape "$ns" eth0 "$rate" "$delay"
        shape ckbr "p$i" "$rate" ""
      fi
      echo "$ns slots=$rpn" >>"$state/hostfile"
    fi
    echo "$addr $ns" >>"$state/hosts"
  done
  trap - ERR
  printf 'hosts=%s\nranks_per_host=%s\nlink=%s\n' "$n" "$rpn" "${link:-unshaped}" >"$state/config"
  echo "testbed: $n hosts (ckh1..ckh$n), $rpn ranks each, link ${link:-unshaped}; hostfile $state/hostfile"
}

status() {
  [[ -f $state/config ]] || { echo "testbed: down"; return 0; }
  cat "$state/config"
  local ns
  while read -r addr ns; do
    local line=''
    [[ -f $state/delay.$ns.pid ]] && kill -0 "$(cat "$state/delay.$ns.pid")" 2>/dev/null &&
      line=" delay line: $(tr '\0' ' ' <"/proc/$(cat "$state/delay.$ns.pid")/cmdline" | grep -o -- '--delay [^ ]*')"
    printf '%-8s %-14s %s%s\n' "$ns" "$addr" "$(tc -n "$ns" qdisc show dev eth0 | tr '\n' ';')" "$line"
  done <"$state/hosts"
}

# A host's link, while jobs run: `down` takes its port on the bridge down (a cut cable or a dead
# switch port: the host's own eth0 stays up, so its sockets see no error, only silence), `up`
# brings it back, RATE[,DELAY] reshapes both directions (a link slowing mid-run).
link() {
  local host=${1:-} what=${2:-} i
  [[ -f $state/config ]] || die "the testbed is down: run 'testbed.sh up N' first"
  (($# == 2)) || usage
  i=$(host_index "$host" link)
  case $what in
    down) ip -n ckbr link set "p$i" down ;;
    up) ip -n ckbr link set "p$i" up ;;
    *)
      parse_link "$what"
      [[ -z $delay ]] || need_delay "$delay"
      tc -n "$host" qdisc del dev eth0 root 2>/dev/null || true
      [[ -n $delay ]] || no_delay_line "$host"
      shape "$host" eth0 "$rate" "$delay"
      shape ckbr "p$i" "$rate" ""
      ;;
  esac
}

# The number I of host HOST (its address 198.18.0.I), or a one-line error.
host_index() {
  local i
  i=$(awk -v h="$1" '$2 == h { n = split($1, a, "."); print a[n] }' "$state/hosts")
  [[ -n $i && $1 != ckhead ]] || die "$2: '$1' is not a testbed host ($(awk '$2 != "ckhead" { printf "%s ", $2 }' "$state/hosts" | sed 's/ $//'))"
  echo "$i"
}

# Traffic between two hosts only, both ways, at RATE (a slow link of the fabric between them,
# while each host's link to the others keeps its speed; a second `pair` for the same two hosts
# changes the rate in place, under a running job), or back to normal with `off`: on each
# host's eth0 an htb qdisc whose default class is not limited (100 Gbit/s) and a class at RATE, into
# which a u32 filter puts the packets to the other host. (htb, not prio: this machine's kernel has
# no sch_prio.) Hosts whose link `up --link` shaped have a tbf at the root already: not supported.
pair() {
  [[ -f $state/config ]] || die "the testbed is down: run 'testbed.sh up N' first"
  (($# == 3)) || usage
  local a=$1 b=$2 what=$3 ia ib ns peer bps burst
  ia=$(host_index "$a" pair)
  ib=$(host_index "$b" pair)
  [[ $a != "$b" ]] || die "pair: a host and itself: give two hosts"
  grep -q '^link=unshaped$' "$state/config" || die "pair: needs a testbed whose links are not shaped (up without --link)"
  if [[ $what != off ]]; then
    parse_link "$what"
    [[ -z $delay ]] || die "pair: a rate alone, no delay: got '$what'"
    bps=$(rate_bps "$rate")
    burst=$((bps / 8 / 1000)) # 1 ms at the rate
    ((burst >= 32768)) || burst=32768
  fi
  for ns in "$a" "$b"; do
    peer=$prefix.$ib
    [[ $ns == "$b" ]] && peer=$prefix.$ia
    # Already slowed toward this peer: the class's rate changes in place (nothing it holds is
    # dropped, so a link can slow down under a running job without TCP's retransmission backoff).
    if [[ $what != off ]] && tc -n "$ns" filter show dev eth0 2>/dev/null | grep -q "match $(printf '%02x' ${peer//./ })/ffffffff at 16"; then
      tc -n "$ns" class change dev eth0 parent 1: classid 1:20 htb rate "$rate" ceil "$rate" burst "$burst" quantum 60000
      continue
    fi
    tc -n "$ns" qdisc del dev eth0 root 2>/dev/null || true
    [[ $what == off ]] && continue
    tc -n "$ns" qdisc add dev eth0 root handle 1: htb default 10
    tc -n "$ns" class add dev eth0 parent 1: classid 1:10 htb rate 100gbit burst 4m quantum 200000
    tc -n "$ns" class add dev eth0 parent 1: classid 1:20 htb rate "$rate" ceil "$rate" burst "$burst" quantum 60000
    tc -n "$ns" filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst "$peer/32" flowid 1:20
  done
}

# Whether a testbed can be made here now (what its callers check first): nothing printed, or why
# not in one line and exit 3.
check() {
  local why=''
  if ! command -v mpirun >/dev/null; then
    why="mpirun not found"
  elif ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
    why="iproute2 (ip, tc) not installed"
  elif [ "$(id -u)" != 0 ] || ! unshare --net true 2>/dev/null; then
    why="cannot make network namespaces here (needs root / CAP_SYS_ADMIN)"
  elif [[ -n $(ours) ]]; then
    why="a testbed is already up (scripts/testbed.sh status); not taking it down under its user"
  fi
  [[ -z $why ]] && return 0
  echo "$why"
  exit 3
}

# mpirun from the head namespace, through the rsh agent, TCP restricted to eth0.
run_mpirun() {
  [[ -f $state/config ]] || die "the testbed is down: run 'testbed.sh up N' first"
  exec ip netns exec ckhead env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --oversubscribe --hostfile "$state/hostfile" \
    --mca plm_rsh_agent "$here/testbed-rsh.sh" \
    --mca btl tcp,self,vader --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 "$@"
}

cmd=${1:-}
(($#)) && shift
case $cmd in
  up) up "$@" ;;
  down) (($# == 0)) || usage; down ;;
  status) (($# == 0)) || usage; status ;;
  mpirun) run_mpirun "$@" ;;
  link) link "$@" ;;
  pair) pair "$@" ;;
  check) (($# == 0)) || usage; check ;;
  *) usage ;;
esac
