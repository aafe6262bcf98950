#!/usr/bin/env bash
# coll-run on a GPU: the cuda backend (every rank in one process, several ranks on one GPU) over
# every algorithm, collective, datatype and operator at small sizes, in and out of place, with
# zero wrong elements; the nccl backend under mpirun -np 1, and -np 2 where two GPUs exist, with
# its native collectives checked beside the plans. Skips (77) without a GPU or a CUDA build.
source "$(dirname "$0")/lib.sh"
run=$COLLKIT_BIN/coll-run
[ -x "$run" ] || { echo "skip: $run not built"; exit 77; }
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "skip: no GPU (nvidia-smi -L lists none)"
  exit 77
fi
gpus=$(nvidia-smi -L | grep -c '^GPU ')
probe=$("$run" --backend cuda --coll allreduce -b 1K -e 1K -n 1 -w 0 2>&1 >/dev/null || true)
if [[ "$probe" == *"this build of collkit has no CUDA"* ]]; then
  echo "skip: this build has no CUDA ($probe)"
  exit 77
fi

small=(-b 4K -e 64K -f 16 -n 1 -w 0 -c 1 --no-discover)

# Several ranks on one GPU, every algorithm that applies, every datatype and operator (the same
# matrix takes about 3 s per rank count on the mpi backend here: the GPU adds little to it).
for ranks in 2 3 4 5 8; do
  types=all ops=all
  for coll in allreduce reducescatter allgather alltoall broadcast reduce; do
    json="$TMP/cuda-$ranks-$coll.json"
    if timeout 240 "$run" --backend cuda --ranks "$ranks" --coll "$coll" --algo all -d "$types" -o "$ops" "${small[@]}" \
         --json "$json" >"$TMP/out.txt" 2>"$TMP/err.txt"; then
      tables=$(json_get "$json" "len(j['tables'])")
      wrong=$(json_get "$json" "sum(r['out_of_place']['wrong'] + r['in_place']['wrong'] for t in j['tables'] for r in t['rows'])")
      [ "$wrong" = 0 ] && [ "$tables" -gt 0 ] && ok "cuda $ranks ranks $coll: $tables tables, 0 wrong" ||
        bad "cuda $ranks ranks $coll: $wrong wrong over $tables tables"
    else
      bad "cuda $ranks ranks $coll: exit $?: $(tail -3 "$TMP/err.txt")"
    fi
  done
done

# Several ranks per GPU with the channels of generated plans raised.
if timeout 120 "$run" --backend cuda --ranks 4 --coll allreduce --algo ring --channels 2 -d float32 -o sum "${small[@]}" >"$TMP/out.txt" 2>"$TMP/err.txt"; then
  ok "cuda 4 ranks ring on 2 channels"
else
  bad "cuda 4 ranks ring on 2 channels: $(tail -3 "$TMP/err.txt")"
fi

nccl_case() {
  local np=$1
  local json="$TMP/nccl-$np.json"
  if timeout 240 mpirun -np "$np" --oversubscribe "$run" --backend nccl --coll all --algo all -d all -o all "${small[@]}" \
       --json "$json" >"$TMP/out.txt" 2>"$TMP/err.txt"; then
    local wrong native
    wrong=$(json_get "$json" "sum(r['out_of_place']['wrong'] + r['in_place']['wrong'] for t in j['tables'] for r in t['rows'])")
    native=$(json_get "$json" "sum(r['native_out_of_place']['wrong'] + r['native_in_place']['wrong'] for t in j['tables'] for r in t['rows'])")
    [ "$wrong" = 0 ] && [ "$native" = 0 ] && ok "nccl -np $np: every plan and native collective, 0 wrong" ||
      bad "nccl -np $np: $wrong wrong in plans, $native in native collectives"
  else
    bad "nccl -np $np: exit $?: $(tail -3 "$TMP/err.txt")"
  fi
}
"$run" --backend nccl --coll allreduce -b 1K -e 1K -n 1 -w 0 >/dev/null 2>"$TMP/nccl-probe.txt" || true
if grep -q "this build of collkit has no NCCL" "$TMP/nccl-probe.txt"; then
  echo "note: this build has no NCCL: nccl cases left out"
else
  nccl_case 1
  if [ "$gpus" -ge 2 ]; then nccl_case 2; else echo "note: one GPU: nccl -np 2 left out"; fi
fi

finish
