#!/usr/bin/env bash
# Reproduces the "predicted" column of docs/overlap.md's comparison with Flux, Async-TP, Domino
# and Comet: each published layout on collkit's presets, the speedup of the matching strategy over
# the baseline that system was compared against.
set -euo pipefail
cd "$(dirname "$0")/.."
ov=${COLLKIT_BIN:-build/bin}/coll-overlap
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# speedup FILE ROW [BASE]: step(BASE, default none) / step(ROW), from a --json file.
speedup() {
  python3 -c "import json,sys; r={x['name']: x['step_us'] for x in json.load(open(sys.argv[1]))['strategies']}; print(f'{r[sys.argv[3]] / r[sys.argv[2]]:.3f}x')" "$1" "$2" "${3:-none}"
}
row() {  # row LABEL ROW BASE coll-overlap-args...
  local label=$1 name=$2 base=$3
  shift 3
  "$ov" "$@" --json "$tmp/o.json" >/dev/null
  printf '%-58s %s\n' "$label" "$(speedup "$tmp/o.json" "$name" "$base")"
}

row "Flux train gpt3-175b TP8 SP PP16 (16 x dgx-h100)" tp-decompose none \
  --nodes 16 --model gpt3-175b --tp 8 --sp --pp 16 --microbatches 16 --micro-batch 2 --seq-len 2048
row "Flux train gpt3-175b TP8 SP, one dgx-h100" tp-decompose none --model gpt3-175b --tp 8 --sp --micro-batch 2 --seq-len 2048
row "Flux train gpt3-175b TP8 SP, pcie-8gpu" tp-decompose none --topo pcie-8gpu --model gpt3-175b --tp 8 --sp --micro-batch 2 --seq-len 2048
row "Flux prefill llama3-70b TP8 (AllReduce)" tp-decompose none --model llama3-70b --tp 8 --mode prefill --seq-len 4096
row "Flux prefill llama3-70b TP8 --sp" tp-decompose none --model llama3-70b --tp 8 --sp --mode prefill --seq-len 4096
row "Flux prefill llama3-70b TP8, pcie-8gpu (AllReduce)" tp-decompose none --topo pcie-8gpu --model llama3-70b --tp 8 --mode prefill --seq-len 4096
row "Flux prefill llama3-70b TP8 --sp, pcie-8gpu" tp-decompose none --topo pcie-8gpu --model llama3-70b --tp 8 --sp --mode prefill --seq-len 4096
row "Flux decode llama3-70b TP8 batch 64 (tp-decompose forced)" tp-decompose none \
  --model llama3-70b --tp 8 --mode decode --micro-batch 64 --seq-len 2048 --strategy tp-decompose
row "Flux decode llama3-70b TP8 batch 64 (auto)" auto none --model llama3-70b --tp 8 --mode decode --micro-batch 64 --seq-len 2048
row "Async-TP llama3-8b FSDP8 TP8 batch 12 (vs fsdp-prefetch)" auto fsdp-prefetch \
  --nodes 8 --model llama3-8b --tp 8 --sp --dp 8 --zero 3 --seq-len 8192 --micro-batch 12
row "Async-TP llama3-70b FSDP32 TP8 batch 16 (vs fsdp-prefetch)" auto fsdp-prefetch \
  --nodes 32 --model llama3-70b --tp 8 --sp --dp 32 --zero 3 --seq-len 8192 --micro-batch 16
row "Domino llama3-8b TP8 (AllReduce) 8 x 2048" tp-decompose none --model llama3-8b --tp 8 --seq-len 2048 --micro-batch 8
row "Domino gpt3-175b TP8 (AllReduce) 4 x 2048" tp-decompose none --model gpt3-175b --tp 8 --seq-len 2048 --micro-batch 4
row "Comet mixtral-8x7b EP8 DP8, one dgx-h100" moe-pipeline none --model mixtral-8x7b --dp 8 --ep 8 --seq-len 4096
row "Comet mixtral-8x7b EP8 DP8, pcie-8gpu" moe-pipeline none --topo pcie-8gpu --model mixtral-8x7b --dp 8 --ep 8 --seq-len 4096
row "Comet mixtral-8x7b EP8 DP16 (2 x dgx-h100)" moe-pipeline none --nodes 2 --model mixtral-8x7b --dp 16 --ep 8 --seq-len 4096
