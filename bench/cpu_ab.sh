#!/usr/bin/env bash
# CPU seconds (user + system) and peak RSS of the default CLI path (bench/cli_path.sh's three
# steps) and of a shell `compare`, for a baseline build and a new one run alternately in the same
# run, so that load from other work on the machine falls on both alike. CPU time, not wall: the
# machine is shared. Writes a Markdown table with the new / baseline ratio.
#
# Usage: bench/cpu_ab.sh BASELINE_BIN_DIR NEW_BIN_DIR [out.md]
#   COLLKIT_AB_NODES: dgx-h100 host counts (default "128 2048"); COLLKIT_AB_REPEATS (default 1).
set -euo pipefail
base=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
out=${3:-/dev/stdout}
root=$(cd "$(dirname "$0")/.." && pwd)
topo_bin=$new/coll-topo
[ -x "$topo_bin" ] || topo_bin=$root/build/bin/coll-topo
reps=${COLLKIT_AB_REPEATS:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# cpu BIN ARGS...: "cpu_seconds rss_mb" of one run (stdin from $tmp/stdin when it exists).
cpu() {
  local in=/dev/null
  [ -f "$tmp/stdin" ] && in=$tmp/stdin
  /usr/bin/time -f "%U %S %M" -o "$tmp/time" "$@" <"$in" >"$tmp/stdout" 2>&1
  read -r u s m <"$tmp/time"
  echo "$(echo "$u + $s" | bc -l) $((m / 1024))"
}

{
  echo "| GPUs | what | baseline CPU (s) | new CPU (s) | new / baseline | baseline RSS (MB) | new RSS (MB) |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
} >"$tmp/table"

row() {  # row GPUS WHAT BASE_CPU NEW_CPU BASE_RSS NEW_RSS
  printf '| %s | %s | %.2f | %.2f | %.2f | %s | %s |\n' "$1" "$2" "$3" "$4" "$(echo "$4 / $3" | bc -l)" "$5" "$6" >>"$tmp/table"
}

for nodes in ${COLLKIT_AB_NODES:-128 2048}; do
  gpus=$((nodes * 8))
  t=$tmp/t.json
  "$topo_bin" synth --node dgx-h100 --nodes "$nodes" -o "$t" >/dev/null 2>&1
  echo "cpu_ab: $gpus GPUs" >&2
  for _ in $(seq "$reps"); do
    declare -A c=() r=()
    rm -f "$tmp/stdin"
    for side in base new; do
      bin=$base
      [ $side = new ] && bin=$new
      read -r c[$side.g] r[$side.g] < <(cpu "$bin/coll-plan" generate --topo "$t" --coll allreduce --size 1G -o "$tmp/p.$side.json")
      read -r c[$side.v] r[$side.v] < <(cpu "$bin/coll-plan" verify "$tmp/p.$side.json")
      read -r c[$side.s] r[$side.s] < <(cpu "$bin/coll-plan" simulate "$tmp/p.$side.json" --topo "$t")
    done
    # Plans state the command and date that wrote them (provenance), which differ by design.
    cmp -s <(grep -v '^  "provenance": ' "$tmp/p.base.json") <(grep -v '^  "provenance": ' "$tmp/p.new.json") ||
      echo "cpu_ab: the two builds wrote different plans at $gpus GPUs" >&2
    row "$gpus" "generate (auto)" "${c[base.g]}" "${c[new.g]}" "${r[base.g]}" "${r[new.g]}"
    row "$gpus" "verify" "${c[base.v]}" "${c[new.v]}" "${r[base.v]}" "${r[new.v]}"
    row "$gpus" "simulate" "${c[base.s]}" "${c[new.s]}" "${r[base.s]}" "${r[new.s]}"
    row "$gpus" "**CLI path, all three**" "$(echo "${c[base.g]} + ${c[base.v]} + ${c[base.s]}" | bc -l)" \
      "$(echo "${c[new.g]} + ${c[new.v]} + ${c[new.s]}" | bc -l)" \
      "$(printf '%s\n' "${r[base.g]}" "${r[base.v]}" "${r[base.s]}" | sort -n | tail -1)" \
      "$(printf '%s\n' "${r[new.g]}" "${r[new.v]}" "${r[new.s]}" | sort -n | tail -1)"
    # The shell: a session that only loads, then one that loads and compares (the difference is
    # the compare's CPU time).
    for size in 1G 1M; do
      for side in base new; do
        bin=$base
        [ $side = new ] && bin=$new
        printf 'load %s\n' "$t" >"$tmp/stdin"
        read -r c[$side.l] r[$side.l] < <(cpu "$bin/coll-plan" shell --strict)
        printf 'load %s\ncompare allreduce %s\n' "$t" "$size" >"$tmp/stdin"
        read -r c[$side.c] r[$side.c] < <(cpu "$bin/coll-plan" shell --strict)
      done
      row "$gpus" "shell: compare allreduce $size (session less its load)" "$(echo "${c[base.c]} - ${c[base.l]}" | bc -l)" \
        "$(echo "${c[new.c]} - ${c[new.l]}" | bc -l)" "${r[base.c]}" "${r[new.c]}"
      c[base.$size]=${c[base.c]}
      c[new.$size]=${c[new.c]}
    done
    # A second question in the session: compare 1M after compare 1G (routes and fold checks kept).
    for side in base new; do
      bin=$base
      [ $side = new ] && bin=$new
      printf 'load %s\ncompare allreduce 1G\ncompare allreduce 1M\n' "$t" >"$tmp/stdin"
      read -r c[$side.n] r[$side.n] < <(cpu "$bin/coll-plan" shell --strict)
    done
    row "$gpus" "shell: compare allreduce 1M after 1G (session less load and 1G)" "$(echo "${c[base.n]} - ${c[base.1G]}" | bc -l)" \
      "$(echo "${c[new.n]} - ${c[new.1G]}" | bc -l)" "${r[base.n]}" "${r[new.n]}"
    row "$gpus" "shell: load" "${c[base.l]}" "${c[new.l]}" "${r[base.l]}" "${r[new.l]}"
    rm -f "$tmp/stdin"
  done
done
{
  echo "Written by \`bench/cpu_ab.sh\` on $(date -u +%Y-%m-%d) ($(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg) at the end);"
  echo "baseline: $base, new: $new. CPU = user + system seconds, RSS = peak resident set."
  echo
  cat "$tmp/table"
} >"$out"
