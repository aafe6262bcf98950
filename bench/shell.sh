#!/usr/bin/env bash
# coll-plan shell's answer times (issue 14), on the path users take: sessions fed to
# `coll-plan shell` on stdin, each timed from outside, against the CLI beside it (a new process per
# question that reloads the topology: `coll-plan sweep` at one size, which is `compare`'s table).
# Per cluster (dgx-h100 x 128 = 1024 GPUs, x 2048 = 16384 GPUs, rail-optimised fat-tree):
#   load          a session that only loads the topology file;
#   compare       the first `compare allreduce 1G` (session time less the load's);
#   new size      a second question on the same topology, `compare allreduce 1M` (routes kept);
#   asked again   the first question again (the session keeps every answer per topology);
#   edit + diff   `scale type infiniband bw 0.5` then `diff` (the unedited side is kept);
#   CLI           `coll-plan sweep -b 1G -e 1G` on the same file: load and compare in a new process.
# Then, at 1024 GPUs, a first `compare` of each collective at 1 GiB and 1 MiB (session less its
# load), and `compare broadcast 1G` then `compare reduce 1G`, `compare allgather 1G` then
# `compare alltoall 1G` (the second question's time: what the session kept for the first),
# in CPU seconds (user + system, medians; the machine is shared), beside the same for
# COLLKIT_BASELINE_BIN's build when given, run alternately with this one.
# Each figure is the median of COLLKIT_BENCH_REPEATS runs (default 3; 1 for 16384 GPUs, where one
# compare runs for tens of seconds). Two cores are shared with whatever else runs.
#
# Usage: bench/shell.sh [build/bin] [out.md]
#   COLLKIT_BASELINE_BIN=DIR adds bench/cpu_ab.sh's table (CPU s, RSS): this build against DIR's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$root/build/bin}" && pwd)
out=${2:-$root/results/shell.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
reps=${COLLKIT_BENCH_REPEATS:-3}

# seconds SESSION_LINES...: wall time of one shell session fed those lines.
seconds() {
  printf '%s\n' "$@" >"$tmp/session.txt"
  local s e
  s=$(date +%s.%N)
  "$bin/coll-plan" shell --strict <"$tmp/session.txt" >"$tmp/session.out" 2>&1 || { cat "$tmp/session.out" >&2; exit 1; }
  e=$(date +%s.%N)
  echo "$e - $s" | bc -l
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
# timed N SESSION_LINES...: the median over N sessions.
timed() {
  local n=$1 all=()
  shift
  for _ in $(seq "$n"); do all+=("$(seconds "$@")"); done
  median "${all[@]}"
}

# cpu BIN_DIR SESSION_LINES...: CPU seconds (user + system) of one shell session.
cpu() {
  local dir=$1
  shift
  printf '%s\n' "$@" >"$tmp/session.txt"
  /usr/bin/time -f '%U %S' -o "$tmp/time.txt" "$dir/coll-plan" shell --strict <"$tmp/session.txt" >/dev/null 2>"$tmp/session.err" ||
    { cat "$tmp/session.err" >&2; exit 1; }
  awk '{print $1 + $2}' "$tmp/time.txt"
}

rows=()
for nodes in 128 2048; do
  gpus=$((nodes * 8))
  n=$reps
  [ "$nodes" -lt 1000 ] || n=1
  topo="$tmp/h100x$nodes.json"
  "$bin/coll-topo" synth --node dgx-h100 --nodes "$nodes" --fabric fat-tree:rails=8,oversub=1 -o "$topo" 2>/dev/null
  echo "shell.sh: $gpus GPUs" >&2
  load=$(timed "$n" "load $topo")
  one=$(timed "$n" "load $topo" "compare allreduce 1G")
  best=$(grep '^ \*' "$tmp/session.out" | awk '{sub(/^\*/, "", $1); print $1}')
  two=$(timed "$n" "load $topo" "compare allreduce 1G" "compare allreduce 1M")
  again=$(timed "$n" "load $topo" "compare allreduce 1G" "compare allreduce 1G")
  diff=$(timed "$n" "load $topo" "compare allreduce 1G" "scale type infiniband bw 0.5" "diff")
  cli=()
  for _ in $(seq "$n"); do
    s=$(date +%s.%N)
    "$bin/coll-plan" sweep --topo "$topo" --coll allreduce -b 1G -e 1G >/dev/null
    e=$(date +%s.%N)
    cli+=("$(echo "$e - $s" | bc -l)")
  done
  cli=$(median "${cli[@]}")
  rows+=("$(printf '| %d | %.2f | %.2f | %.2f | %.3f | %.2f | %.2f | %.2f | %s |' "$gpus" "$load" "$(echo "$one - $load" | bc -l)" \
    "$(echo "$two - $one" | bc -l)" "$(echo "$again - $one" | bc -l)" "$(echo "$diff - $one" | bc -l)" "$cli" \
    "$(echo "$cli / ($one - $load)" | bc -l)" "$best")")
done

# Each collective at 1024 GPUs, CPU seconds of the question (the session less its load).
coll_rows=()
topo="$tmp/h100x128.json"
base=${COLLKIT_BASELINE_BIN:-}
for q in "allreduce 1G" "allgather 1G" "reducescatter 1G" "alltoall 1G" "broadcast 1G" "reduce 1G" \
  "allreduce 1M" "allgather 1M" "reducescatter 1M" "alltoall 1M" "broadcast 1M" "reduce 1M" "broadcast 1G|reduce 1G" \
  "allgather 1G|alltoall 1G"; do
  echo "shell.sh: 1024 GPUs, compare $q" >&2
  first=${q%%|*}
  second=${q#*|}
  lines=("load $topo" "compare $first")
  less=("load $topo")
  if [ "$second" != "$q" ]; then
    less=("${lines[@]}")
    lines+=("compare $second")
  fi
  new=() old=()
  for _ in $(seq "$reps"); do
    new+=("$(echo "$(cpu "$bin" "${lines[@]}") - $(cpu "$bin" "${less[@]}")" | bc -l)")
    [ -z "$base" ] || old+=("$(echo "$(cpu "$base" "${lines[@]}") - $(cpu "$base" "${less[@]}")" | bc -l)")
  done
  n=$(median "${new[@]}")
  what="compare ${q/|/, then compare }"
  if [ -n "$base" ]; then
    o=$(median "${old[@]}")
    coll_rows+=("$(printf '| %s | %.2f | %.2f | %.2f |' "$what" "$o" "$n" "$(echo "$n / $o" | bc -l)")")
  else
    coll_rows+=("$(printf '| %s | %.2f |' "$what" "$n")")
  fi
done

{
  echo "# coll-plan shell: answer times"
  echo
  echo "$(date -u +%Y-%m-%d), commit $(git -C "$root" rev-parse --short HEAD), $(nproc) cores, written by \`bench/shell.sh\`."
  echo "Seconds, wall clock, medians of $reps runs (1 at 16384 GPUs); dgx-h100 hosts on a rail-optimised fat-tree."
  echo
  echo "| GPUs | load | compare allreduce 1G | new size (1M) | asked again | edit + diff | CLI sweep at 1G (reload) | CLI / shell compare | best |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Goal (issue 14): plan or compare for one collective and size in under 1 s at 1024 GPUs and"
  echo "under 5 s at 16384, after the first load. \"asked again\" and the unedited side of \"diff\""
  echo "come from the session's memory; a new question pays the planner's simulations, which at"
  echo "16384 GPUs are most of the time (the routes, kept, are not)."
  echo
  echo "## Each collective at 1024 GPUs (CPU seconds of the question, medians of $reps)"
  echo
  if [ -n "$base" ]; then
    echo "Baseline: \`$base\`; this build: \`$bin\`, run alternately."
    echo
    echo "| question (after load) | baseline | this build | this / baseline |"
    echo "| --- | --- | --- | --- |"
  else
    echo "| question (after load) | CPU s |"
    echo "| --- | --- |"
  fi
  printf '%s\n' "${coll_rows[@]}"
  if [ -n "${COLLKIT_BASELINE_BIN:-}" ]; then
    echo
    echo "## CPU seconds against the baseline"
    echo
    # Through a file: cpu_ab.sh opening /dev/stdout (this file) truncated everything above.
    "$root/bench/cpu_ab.sh" "$COLLKIT_BASELINE_BIN" "$bin" "$tmp/cpu_ab.md"
    cat "$tmp/cpu_ab.md"
  fi
} >"$out"
echo "shell.sh: wrote $out" >&2
