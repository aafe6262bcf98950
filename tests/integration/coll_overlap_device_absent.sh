#!/usr/bin/env bash
# coll-overlap run and calibrate --device gpu on a machine without a GPU: they stop before any
# prediction or communication with one line saying why (rank 0's alone under mpirun) and exit 4;
# --device with anything but cpu or gpu is a usage error. Where a GPU exists, the no-GPU cases are
# left to coll_overlap_gpu.
source "$(dirname "$0")/lib.sh"
ov=$COLLKIT_BIN/coll-overlap
[ -x "$ov" ] || { echo "skip: $ov not built"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

expect_fail 2 "coll-overlap: error: --device must be cpu or gpu, got 'tpu'" "$ov" run --model llama3-8b --scale 64 --device tpu
expect_fail 2 "coll-overlap: error: --device must be cpu or gpu, got ''" "$ov" calibrate -o "$TMP/cal.json" --model llama3-8b --scale 64 --device ''

if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "note: a GPU is present: the no-GPU cases are left to coll_overlap_gpu"
else
  rc=0
  got=$("$ov" run --model llama3-8b --scale 64 --device gpu 2>&1 >/dev/null) || rc=$?
  if [[ "$got" == *"this build of collkit has no CUDA"* ]]; then
    expect_fail 4 "coll-overlap: error: --device gpu: this build of collkit has no CUDA (configure with CUDA at /usr/local/cuda or CUDAToolkit_ROOT)" \
      "$ov" run --model llama3-8b --scale 64 --device gpu
    prefix="coll-overlap: error: rank 0 (*): --device gpu: this build of collkit has no CUDA"
  else
    [ "$rc" = 4 ] && [ "$(printf '%s\n' "$got" | wc -l)" = 1 ] &&
      [[ "$got" == "coll-overlap: error: --device gpu: no GPU found (cudaGetDeviceCount: "* ]] &&
      ok "run --device gpu -> 4: $got" || bad "run --device gpu: exit $rc, stderr: $got"
    rc=0
    got=$("$ov" calibrate -o "$TMP/cal.json" --model llama3-8b --scale 64 --device gpu 2>&1 >/dev/null) || rc=$?
    [ "$rc" = 4 ] && [[ "$got" == "coll-overlap: error: --device gpu: no GPU found (cudaGetDeviceCount: "* ]] && [ ! -e "$TMP/cal.json" ] &&
      ok "calibrate --device gpu -> 4, no file written" || bad "calibrate --device gpu: exit $rc, stderr: $got"
    prefix="coll-overlap: error: rank 0 (*): --device gpu: no GPU found (cudaGetDeviceCount: "
  fi
  if command -v mpirun >/dev/null; then
    # Under mpirun every rank finds it has no GPU; rank 0 alone prints the line, every rank exits 4.
    rc=0
    timeout 120 mpirun -np 2 --oversubscribe "$ov" run --model llama3-8b --tp 2 --scale 64 --device gpu >/dev/null 2>"$TMP/np2.err" || rc=$?
    mine=$(grep '^coll-overlap:' "$TMP/np2.err" || true)
    # shellcheck disable=SC2053
    [ "$rc" = 4 ] && [ "$(printf '%s\n' "$mine" | grep -c .)" = 1 ] && [[ "$mine" == $prefix* ]] &&
      ok "mpirun -np 2 run --device gpu -> 4, one line: $mine" || bad "mpirun -np 2 run --device gpu: exit $rc, $(head -3 "$TMP/np2.err")"
  fi
fi
finish
