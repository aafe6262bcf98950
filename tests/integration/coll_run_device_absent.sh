#!/usr/bin/env bash
# coll-run's GPU and RDMA backends on a machine without the device: each stops at start, before
# any communication, with one line saying so and a non-zero exit. Skips (77) where the device exists.
source "$(dirname "$0")/lib.sh"
run=$COLLKIT_BIN/coll-run
[ -x "$run" ] || { echo "skip: $run not built"; exit 77; }

# expect_one_line CODE PREFIX command...: exits with CODE, stderr is one line starting with PREFIX.
expect_one_line() {
  local code=$1 prefix=$2
  shift 2
  local got rc=0
  got=$("$@" 2>&1 >/dev/null) || rc=$?
  if [ "$rc" = "$code" ] && [ "$(printf '%s\n' "$got" | wc -l)" = 1 ] && [[ "$got" == "$prefix"* ]]; then
    ok "$* -> $code: $got"
  else
    bad "$*: exit $rc (want $code), stderr: $got (want one line starting: $prefix)"
  fi
}

ran=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "note: a GPU is present: the no-GPU cases are left to coll_run_gpu"
else
  got=$("$run" --backend cuda -b 1K -e 1K 2>&1 >/dev/null || true)
  if [[ "$got" == *"this build of collkit has no CUDA"* ]]; then
    expect_fail 4 "coll-run: error: backend cuda: this build of collkit has no CUDA (configure with CUDA at /usr/local/cuda or CUDAToolkit_ROOT)" \
      "$run" --backend cuda -b 1K -e 1K
  else
    expect_one_line 4 "coll-run: error: cuda: no GPU found (cudaGetDeviceCount: " "$run" --backend cuda -b 1K -e 1K
    expect_one_line 4 "coll-run: error: nccl: rank 0: no GPU found (cudaGetDeviceCount: " "$run" --backend nccl -b 1K -e 1K
    if command -v mpirun >/dev/null; then
      # Under mpirun, rank 0 prints the line once and every rank exits 4 (mpirun adds its own report).
      rc=0
      timeout 120 mpirun -np 2 --oversubscribe "$run" --backend nccl -b 1K -e 1K >/dev/null 2>"$TMP/np2.err" || rc=$?
      lines=$(grep -c "^coll-run: error: nccl: rank 0: no GPU found (cudaGetDeviceCount: " "$TMP/np2.err" || true)
      [ "$rc" = 4 ] && [ "$lines" = 1 ] && [ "$(grep -c '^coll-run:' "$TMP/np2.err")" = 1 ] &&
        ok "mpirun -np 2 --backend nccl -> 4, one line" || bad "mpirun -np 2 --backend nccl: exit $rc, $(head -3 "$TMP/np2.err")"
    fi
  fi
  ran=1
fi

if [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
  echo "note: an RDMA device is present: the no-device case is left to coll_run_rdma"
else
  got=$("$run" --backend rdma -b 1K -e 1K 2>&1 >/dev/null || true)
  if [[ "$got" == *"this build of collkit has no"* ]]; then
    expect_one_line 4 "coll-run: error: backend rdma: this build of collkit has no" "$run" --backend rdma -b 1K -e 1K
  else
    expect_fail 4 "coll-run: error: rdma: no RDMA device found (ibv_get_device_list returned none)" "$run" --backend rdma -b 1K -e 1K
  fi
  ran=1
fi

# --ranks belongs to the cuda backend.
expect_fail 2 "coll-run: error: --ranks is for --backend cuda (one process runs every rank); mpi takes one rank per process from mpirun -np" \
  "$run" --backend mpi --ranks 2 -b 1K -e 1K

[ "$ran" = 1 ] || { echo "skip: a GPU and an RDMA device are both present"; exit 77; }
finish
