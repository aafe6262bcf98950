#!/usr/bin/env bash
# Regenerates every evaluation table and figure (issue #17) into results/, or into DIR with --out
# (then nothing is written into results/): markdown tables headed with the machine, date, commit and
# the exact commands, a CSV beside each, PNG figures drawn by gnuplot, and results/README.md with
# one section per evaluation. It calls the bench/ scripts (plan_gaps.py, synth.sh, coll_run_mpi.sh,
# fidelity.sh, adapt.sh, testbed_adapt.sh) and the tools; scripts/reproduce_report.py turns their
# output into tables and figures. Progress goes to stderr. Running it again rewrites the same files.
#
# Usage: scripts/reproduce.sh [--quick] [--out DIR] [--bin DIR]
#   --quick  smaller sweeps and fewer repeats (about 3 minutes on 2 cores): checks the pipeline
#   --out    where to write (default results/)
#   --bin    the built tools (default build/bin; ./scripts/test.sh or scripts/build.sh builds them)
# A section that needs a capability collkit does not have yet says so in one line of README.md.
# Exit status: 0 when every section ran, 1 when one failed (the others still run), 2 on bad usage.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
quick=0
out=""
bin="$root/build/bin"
usage="usage: scripts/reproduce.sh [--quick] [--out DIR] [--bin DIR]"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --out)
      [ $# -ge 2 ] || { echo "reproduce.sh: --out needs a directory" >&2; exit 2; }
      out=$2
      shift ;;
    --bin)
      [ $# -ge 2 ] || { echo "reproduce.sh: --bin needs a directory" >&2; exit 2; }
      bin=$2
      shift ;;
    -h | --help) echo "$usage"; exit 0 ;;
    *) echo "reproduce.sh: unknown argument '$1'; $usage" >&2; exit 2 ;;
  esac
  shift
done
invocation=scripts/reproduce.sh
[ $quick = 0 ] || invocation+=" --quick"
[ -z "$out" ] || invocation+=" --out DIR"
bin=$(cd "$bin" 2>/dev/null && pwd) || { echo "reproduce.sh: $bin: no such directory (build first: ./scripts/build.sh)" >&2; exit 2; }
for tool in coll-topo coll-plan coll-run coll-overlap bench_mpi_native_forms; do
  [ -x "$bin/$tool" ] || { echo "reproduce.sh: $bin/$tool: not built (./scripts/build.sh builds every tool)" >&2; exit 2; }
done
for cmd in gnuplot python3 mpirun /usr/bin/time; do
  command -v "$cmd" >/dev/null || { echo "reproduce.sh: $cmd: not installed (./scripts/setup-deps.sh installs it)" >&2; exit 2; }
done
out=${out:-$root/results}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
report="$root/scripts/reproduce_report.py"
start=$(date +%s)
failed=()
rm -rf "$out/.reproduce"

say() { echo "reproduce [$(($(date +%s) - start)) s] $*" >&2; }
# The commands a section ran, as a reader would type them: tools by name, paths from the repository
# root, the scratch directory as WORK and the output directory as OUT.
cmds=""
log_cmd() {
  local line="$*"
  line=${line//$work/WORK}
  line=${line//$out/OUT}
  line=${line//$bin\//}
  line=${line//$root\//}
  echo "$line" >>"$cmds"
}
# x COMMAND...: logs it, then runs it with its stdout and stderr kept in WORK/last.log.
x() {
  log_cmd "$@"
  "$@" >"$work/last.log" 2>&1 || { local rc=$?; tail -5 "$work/last.log" >&2; return $rc; }
}
# xt COMMAND...: the same under /usr/bin/time; appends "seconds maxrss_kb" to WORK/time.txt.
xt() {
  log_cmd "$@"
  /usr/bin/time -f '%e %M' -a -o "$work/time.txt" "$@" >"$work/last.log" 2>&1
}
last_time() { tail -1 "$work/time.txt"; }
section() {  # section N TITLE FUNCTION
  local n=$1 title=$2 fn=$3 t0
  t0=$(date +%s)
  cmds="$work/cmds$n.txt"
  : >"$cmds"
  say "section $n: $title"
  # In a subshell outside any condition, so that set -e stops the section at its first failure
  # (a function called as an if's condition would run on past it).
  local rc=0
  set +e
  (
    set -e
    "$fn"
  )
  rc=$?
  set -e
  if [ $rc != 0 ]; then
    say "section $n: FAILED"
    failed+=("$n")
    python3 "$report" note --out "$out" --n "$n" --title "$title" \
      --text "This run failed (see its stderr); the tables of an earlier run may remain."
    return 0
  fi
  say "section $n: done in $(($(date +%s) - t0)) s"
}
note() {  # note N TITLE TEXT: a section that cannot run says why in one line
  python3 "$report" note --out "$out" --n "$1" --title "$2" --text "$3"
  say "section $1: $3"
}

# 1. Algorithm x topology x size (bench/plan_gaps.py; --quick: its 1- and 2-host subset at 1 GiB).
sec_gaps() {
  local args=(--bin "$bin" --out "$out/plan_gaps.md" --jobs 2 --timeout 60)
  # --quick: plan_gaps's 1- and 2-host subset at 1 GiB, of three presets (NVSwitch, full mesh, PCIe)
  [ $quick = 1 ] && args+=(--quick --match '^(dgx-h100|mi300x|pcie-8gpu) ')
  log_cmd python3 bench/plan_gaps.py "${args[@]}"
  # plan_gaps prints a line per case: every 25th is enough progress here.
  (cd "$root" && python3 bench/plan_gaps.py "${args[@]}") 2>&1 | while read -r l; do
    case $l in
      "["*) [[ $l =~ ^\[([0-9]+)/ ]] && [ $((BASH_REMATCH[1] % 25)) = 0 ] && echo "  $l" >&2 || true ;;
      *) echo "  $l" >&2 ;;
    esac
  done
  [ "${PIPESTATUS[0]}" = 0 ] || return 1
  python3 "$report" gaps --out "$out" --work "$work" --cmds "$cmds"
}

# 2. Synthesis (bench/synth.sh), then synthesis time against ranks.
sec_synth() {
  if [ $quick = 1 ]; then x env COLLKIT_BENCH_QUICK=1 bash "$root/bench/synth.sh" "$bin" "$out/synth.md"
  else x bash "$root/bench/synth.sh" "$bin" "$out/synth.md"; fi
  # Up to 1024 ranks: sizes the synthesizer refuses today (it packs trees for 16 ranks at most) are
  # rows saying so, and points on the plot once it takes them.
  local nodes=(1 2 4 8 16 32 64 128) n c t
  [ $quick = 1 ] && nodes=(1 2)
  : >"$work/synth_scale.tsv"
  for n in "${nodes[@]}"; do
    x "$bin/coll-topo" synth --node dgx-h100 --nodes "$n" -o "$work/h$n.json"
    for c in allgather allreduce; do
      if xt "$bin/coll-plan" generate --topo "$work/h$n.json" --coll $c --size 1G --algo synth -o "$work/s.json"; then
        t=$(last_time); printf '%s\t%s\t%s\t%s\tok\n' $c $((8 * n)) ${t% *} ${t#* } >>"$work/synth_scale.tsv"
      else
        t=$(last_time); printf '%s\t%s\t%s\t0\t%s\n' $c $((8 * n)) "${t%% *}" "$(head -1 "$work/last.log")" >>"$work/synth_scale.tsv"
      fi
      say "  synth $c at $((8 * n)) ranks: ${t%% *} s"
    done
  done
  python3 "$report" synth --out "$out" --work "$work" --cmds "$cmds"
}

# 3. Execution against Open MPI (bench/coll_run_mpi.sh; --quick: one repeat up to 1 MiB).
sec_mpi() {
  if [ $quick = 1 ]; then
    export COLLKIT_BENCH_REPEATS=1 COLLKIT_BENCH_MAX_SIZE=1M COLLKIT_BENCH_ITERS=5
    log_cmd "export COLLKIT_BENCH_REPEATS=1 COLLKIT_BENCH_MAX_SIZE=1M COLLKIT_BENCH_ITERS=5"
  fi
  x bash "$root/bench/coll_run_mpi.sh" "$bin" "$out/coll_run_mpi.txt" "$work/coll_run_mpi.csv"
  unset COLLKIT_BENCH_REPEATS COLLKIT_BENCH_MAX_SIZE COLLKIT_BENCH_ITERS
  python3 "$report" mpi --out "$out" --work "$work" --cmds "$cmds"
}

# 4. Fidelity (bench/fidelity.sh; --quick: ring and rhd, AllReduce and AllGather, up to 1 MiB).
sec_fidelity() {
  if [ $quick = 1 ]; then
    export COLLKIT_BENCH_ALGOS=ring,rhd COLLKIT_BENCH_COLLS=allreduce,allgather COLLKIT_BENCH_MAX_SIZE=1M COLLKIT_BENCH_REPEATS=1
    log_cmd "export COLLKIT_BENCH_ALGOS=ring,rhd COLLKIT_BENCH_COLLS=allreduce,allgather COLLKIT_BENCH_MAX_SIZE=1M COLLKIT_BENCH_REPEATS=1"
  fi
  x bash "$root/bench/fidelity.sh" "$bin" "$out/fidelity.md" "$work/fidelity_rows.csv"
  unset COLLKIT_BENCH_ALGOS COLLKIT_BENCH_COLLS COLLKIT_BENCH_MAX_SIZE COLLKIT_BENCH_REPEATS
  python3 "$report" fidelity --out "$out" --work "$work" --cmds "$cmds"
}

# 5. Adaptation (bench/adapt.sh; --quick: one fault up to 4 MiB), and across the testbed's hosts
# (bench/testbed_adapt.sh) in the full run where network namespaces can be made.
sec_adapt() {
  if [ $quick = 1 ]; then
    export COLLKIT_BENCH_FAULTS=slow-link=0-1:x16 COLLKIT_BENCH_PROBE_FAULTS= COLLKIT_BENCH_MAX_SIZE=4M
    log_cmd "export COLLKIT_BENCH_FAULTS=slow-link=0-1:x16 COLLKIT_BENCH_PROBE_FAULTS= COLLKIT_BENCH_MAX_SIZE=4M"
  fi
  x bash "$root/bench/adapt.sh" "$bin" "$out/adapt.md"
  unset COLLKIT_BENCH_FAULTS COLLKIT_BENCH_PROBE_FAULTS COLLKIT_BENCH_MAX_SIZE
  local testbed="not run in --quick (about 2 minutes of tc-shaped TCP)" why
  if [ $quick = 0 ]; then
    if why=$("$root/scripts/testbed.sh" check 2>&1); then
      x bash "$root/bench/testbed_adapt.sh" "$bin" "$out/testbed_adapt.md"
      testbed=ran
    else
      testbed="not run: the testbed cannot start here ($why)"
    fi
  fi
  python3 "$report" adapt --out "$out" --work "$work" --cmds "$cmds" --testbed "$testbed"
}

# 6. Overlap: the predicted breakdown per strategy (coll-overlap); the measured one once
# `coll-overlap run` exists; the published systems' layouts (scripts/overlap-compare.sh).
sec_overlap() {
  : >"$work/overlap_cases.tsv"
  local -a layouts=(
    "llama3-70b TP8 SP DP2, 2 x dgx-h100|--topo dgx-h100 --nodes 2 --model llama3-70b --tp 8 --sp --dp 2 --seq-len 8192"
    "llama3-8b FSDP8 TP8, 8 x dgx-h100|--nodes 8 --model llama3-8b --tp 8 --sp --dp 8 --zero 3 --seq-len 8192 --micro-batch 12"
    "mixtral-8x7b EP8 DP16, 2 x dgx-h100|--topo dgx-h100 --nodes 2 --model mixtral-8x7b --dp 16 --ep 8 --seq-len 4096"
  )
  [ $quick = 1 ] && layouts=("${layouts[0]}")
  local i=0 l
  for l in "${layouts[@]}"; do
    # shellcheck disable=SC2086
    x "$bin/coll-overlap" ${l#*|} --json "$work/overlap$i.json"
    printf '%s\t%s\tpredicted\n' "${l%%|*}" "$work/overlap$i.json" >>"$work/overlap_cases.tsv"
    i=$((i + 1))
  done
  local measured
  # `coll-overlap run --help` alone cannot tell: CLI11 prints the tool's help and exits 0 for an
  # unknown word before --help; so the subcommand must also be in the tool's list.
  if "$bin/coll-overlap" run --help >/dev/null 2>&1 && "$bin/coll-overlap" --help | grep -qE '^ +run +'; then
    # --scale 16 divides hidden size, sequence and layers (docs/overlap.md); the run's JSON holds
    # the model's prediction for the scaled layout beside what was measured.
    local mlayout="llama3-8b TP2+SP, scaled 16x|--model llama3-8b --tp 2 --sp --scale 16 --iters $([ $quick = 1 ] && echo 1 || echo 3)"
    # shellcheck disable=SC2086
    x mpirun --oversubscribe -np 2 "$bin/coll-overlap" run ${mlayout#*|} --json "$work/measured.json"
    printf '%s\t%s\tpredicted\n' "${mlayout%%|*}" "$work/measured.json" >>"$work/overlap_cases.tsv"
    printf '%s\t%s\tmeasured\n' "${mlayout%%|*}" "$work/measured.json" >>"$work/overlap_cases.tsv"
    measured="mpirun -np 2 coll-overlap run (${mlayout%%|*}), in the figure and the table."
  else
    measured="not built: coll-overlap has no run subcommand yet (issue #16), so there is no measured breakdown to set beside the prediction."
  fi
  if [ $quick = 0 ]; then
    log_cmd COLLKIT_BIN="$bin" scripts/overlap-compare.sh
    COLLKIT_BIN="$bin" bash "$root/scripts/overlap-compare.sh" >"$work/overlap_compare.txt" 2>"$work/last.log" || return 1
    python3 "$report" overlap-published --out "$out" --work "$work" --cmds "$cmds"
  else
    rm -f "$out/overlap_published.md" "$out/overlap_published.csv"
  fi
  python3 "$report" overlap --out "$out" --work "$work" --cmds "$cmds" --measured "$measured"
}

# 7. Scale: generate, verify and simulate, each a process under /usr/bin/time, 8 to 16384 ranks
# (--quick: up to 1024). hier: the algorithm bench_plan times at 16384 ranks (a flat ring's plan there
# has 16384 x 8 channels x 2 x 16383 steps).
sec_scale() {
  local nodes=(1 2 4 8 16 32 64 128 256 512 1024 2048) n r step t algo=hier
  [ $quick = 1 ] && nodes=(1 4 16 128)
  : >"$work/scale.tsv"
  for n in "${nodes[@]}"; do
    r=$((8 * n))
    x "$bin/coll-topo" synth --node dgx-h100 --nodes "$n" -o "$work/t.json"
    for step in generate verify simulate; do
      case $step in
        generate) xt "$bin/coll-plan" generate --topo "$work/t.json" --coll allreduce --size 1G --algo $algo -o "$work/p.json" ;;
        verify) xt "$bin/coll-plan" verify "$work/p.json" ;;
        simulate) xt "$bin/coll-plan" simulate "$work/p.json" --topo "$work/t.json" ;;
      esac || { tail -3 "$work/last.log" >&2; return 1; }
      t=$(last_time)
      printf '%s\t%s\t%s\t%s\t%s\tok\n' $r $step $algo ${t% *} ${t#* } >>"$work/scale.tsv"
      say "  $step $algo at $r ranks: ${t% *} s, ${t#* } KB"
    done
  done
  python3 "$report" scale --out "$out" --work "$work" --cmds "$cmds"
}

section 1 "Algorithm x topology x size: predicted busbw and gap to the bound" sec_gaps
section 2 "Synthesis: collkit synth against the bound, ForestColl and TACOS" sec_synth
section 3 "Execution: coll-run's best plan against Open MPI" sec_mpi
section 4 "Fidelity: the simulator against measurement, before and after calibration" sec_fidelity
section 5 "Adaptation: healthy, degraded, adapted" sec_adapt
section 6 "Overlap: step-time breakdown per strategy" sec_overlap
section 7 "Scale: plan, verify and simulate against ranks" sec_scale

quick_flag=()
[ $quick = 0 ] || quick_flag=(--quick)
python3 "$report" readme --out "$out" --seconds "$(($(date +%s) - start))" --invocation "$invocation" "${quick_flag[@]}"
rm -rf "$out/.reproduce"
if [ ${#failed[@]} -gt 0 ]; then
  say "done, sections failed: ${failed[*]}; wrote $out/README.md"
  exit 1
fi
say "done: $out/README.md"
