#!/usr/bin/env bash
# coll-overlap run --device gpu on a GPU: cuBLAS GEMMs on each rank's GPU and, with two GPUs or
# more, the collectives through the nccl backend under mpirun -np 2 (TP 2 with SP, then DP 2 with
# ZeRO 3), every collective's output checked (0 wrong), every task started after its dependencies,
# a calibration measured and fed back. With one GPU: the compute side alone (every group of one
# rank: no collective). Skips (77) without a GPU or a CUDA build; no check reads a time against a
# threshold.
source "$(dirname "$0")/lib.sh"
ov=$COLLKIT_BIN/coll-overlap
[ -x "$ov" ] || { echo "skip: $ov not built"; exit 77; }
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "skip: no GPU (nvidia-smi -L lists none)"
  exit 77
fi
probe=$("$ov" run --model llama3-8b --scale 64 --device gpu --iters 1 2>&1 >/dev/null || true)
if [[ "$probe" == *"this build of collkit has no CUDA"* ]]; then
  echo "skip: this build has no CUDA ($probe)"
  exit 77
fi
gpus=$(nvidia-smi -L | grep -c '^GPU ')
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
common=(--scale 16 --seq-len 4096 --iters 2 --device gpu)

# One rank: the compute side (cuBLAS) alone, every strategy's schedule.
if timeout 300 "$ov" run --model llama3-8b "${common[@]}" --json "$TMP/one.json" >"$TMP/one.txt" 2>"$TMP/err.txt"; then
  expect_eq "$(json_get "$TMP/one.json" 'all(m["step_us"] > 0 and m["compute_us"] > 0 for m in j["measured"])')" "True" "one GPU: steps and GEMMs measured"
  grep -q "^executed with: cuBLAS bf16 GEMM" "$TMP/one.txt" && ok "one GPU: executed with cuBLAS" || bad "one GPU: $(grep executed "$TMP/one.txt")"
else
  bad "one GPU: exit $?: $(tail -3 "$TMP/err.txt")"
fi

if [ "$gpus" -ge 2 ] && command -v mpirun >/dev/null; then
  for layout in "--tp 2 --sp --strategy tp-decompose" "--dp 2 --zero 3 --strategy fsdp-prefetch"; do
    name=${layout%% --strategy*}
    # shellcheck disable=SC2086
    if timeout 600 mpirun -np 2 --oversubscribe "$ov" run --model llama3-8b $layout "${common[@]}" --calibrate \
         --json "$TMP/two.json" >"$TMP/two.txt" 2>"$TMP/err.txt"; then
      expect_eq "$(json_get "$TMP/two.json" 'sum(m["wrong"] for m in j["measured"])')" "0" "$name: wrong elements"
      expect_eq "$(json_get "$TMP/two.json" 'all(m["collectives_checked"] > 0 for m in j["measured"])')" "True" "$name: collectives checked"
      expect_eq "$(json_get "$TMP/two.json" 'sum(1 for m in j["measured"] for t in m["tasks"] for d in t["deps"] if m["tasks"][d]["start_us"] + m["tasks"][d]["dur_us"] > t["start_us"] + 0.001)')" \
        "0" "$name: tasks started before a dependency ended"
      grep -q "collectives on libs/exec's nccl backend" "$TMP/two.txt" && ok "$name: nccl backend" || bad "$name: $(grep executed "$TMP/two.txt")"
    else
      bad "$name: exit $?: $(tail -3 "$TMP/err.txt")"
    fi
  done
else
  echo "note: $gpus GPU(s): the nccl collectives need two (one per rank); compute side only"
fi
finish
