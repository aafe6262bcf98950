#!/usr/bin/env bash
# coll-run's rdma backend on a machine with an RDMA device: mpirun -np 2 (and 3) over every
# algorithm, collective and datatype at small sizes, in and out of place, with zero wrong
# elements, and a size that needs many landing slots. Skips (77) with no RDMA device, no mpirun,
# or a build without ibverbs.
source "$(dirname "$0")/lib.sh"
run=$COLLKIT_BIN/coll-run
[ -x "$run" ] || { echo "skip: $run not built"; exit 77; }
command -v mpirun >/dev/null || { echo "skip: mpirun not found"; exit 77; }
if [ -z "$(ls -A /sys/class/infiniband 2>/dev/null)" ] && ! { command -v ibv_devices >/dev/null && ibv_devices 2>/dev/null | tail -n +3 | grep -q .; }; then
  echo "skip: no RDMA device (/sys/class/infiniband is empty and ibv_devices lists none)"
  exit 77
fi
probe=$("$run" --backend rdma -b 1K -e 1K -n 1 -w 0 --no-baseline 2>&1 >/dev/null || true)
if [[ "$probe" == *"this build of collkit has no"* ]]; then
  echo "skip: $probe"
  exit 77
fi

small=(-b 4K -e 64K -f 16 -n 1 -w 0 -c 1 --no-baseline --no-discover)
for np in 2 3; do
  json="$TMP/rdma-$np.json"
  if timeout 240 mpirun -np "$np" --oversubscribe "$run" --backend rdma --coll all --algo all -d all -o sum,max,avg "${small[@]}" \
       --json "$json" >"$TMP/out.txt" 2>"$TMP/err.txt"; then
    wrong=$(json_get "$json" "sum(r['out_of_place']['wrong'] + r['in_place']['wrong'] for t in j['tables'] for r in t['rows'])")
    [ "$wrong" = 0 ] && ok "rdma -np $np: every algorithm, 0 wrong" || bad "rdma -np $np: $wrong wrong"
  else
    bad "rdma -np $np: exit $?: $(tail -3 "$TMP/err.txt")"
  fi
done

# Messages many times the landing slots (128 KiB x 4 per channel), on two channels.
if timeout 120 mpirun -np 2 --oversubscribe "$run" --backend rdma --coll allreduce --algo ring --channels 2 -b 8M -e 8M -n 2 -w 1 \
     --no-baseline --no-discover >"$TMP/out.txt" 2>"$TMP/err.txt"; then
  ok "rdma -np 2 8 MiB ring on 2 channels"
else
  bad "rdma -np 2 8 MiB ring on 2 channels: $(tail -3 "$TMP/err.txt")"
fi
finish
