#!/usr/bin/env bash
# Open MPI plm_rsh_agent for scripts/testbed.sh: called as `testbed-rsh.sh [ssh options] HOST
# COMMAND...`, runs COMMAND in HOST's network namespace and in a new UTS namespace whose hostname
# is HOST, so the daemon and its ranks see their own host name. No ssh.
set -euo pipefail
while [[ ${1:-} == -* ]]; do
  case $1 in -x | -T | -q | -n) shift ;; -o | -p | -l) shift 2 ;; *) shift ;; esac
done
host=${1:?testbed-rsh.sh: no host given}
shift
[[ $host =~ ^ckh[0-9]+$ ]] || { echo "testbed-rsh.sh: '$host' is not a testbed host (ckhN)" >&2; exit 2; }
ip netns list | awk '{print $1}' | grep -qx "$host" || { echo "testbed-rsh.sh: no namespace '$host': is the testbed up?" >&2; exit 2; }
# ORTE passes the daemon's command line as one string for a remote shell to parse.
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$1"; shift; exec sh -c "$*"' sh "$host" "$@"
