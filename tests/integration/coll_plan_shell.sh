#!/usr/bin/env bash
# coll-plan shell: docs/shell.md's example session replayed against its transcript; script mode's
# errors (line numbers, exit codes, --strict); what-if edits, undo and diff; a real terminal
# (shell_pty.py: completion, history, Ctrl-R, Ctrl-C on a sweep and at the prompt).
source "$(dirname "$0")/lib.sh"
root="$(cd "$(dirname "$0")/../.." && pwd)"
plan="$COLLKIT_BIN/coll-plan"

# 1. The documented session, line for line.
python3 - "$root/docs/shell.md" "$TMP/doc.txt" "$TMP/want.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
blocks = dict(re.findall(r"```(shell-script|transcript)\n(.*?)```", text, re.S))
open(sys.argv[2], "w").write(blocks["shell-script"])
open(sys.argv[3], "w").write(blocks["transcript"])
PY
"$plan" shell --strict <"$TMP/doc.txt" >"$TMP/got.txt" 2>&1 && ok "docs/shell.md's session runs" || bad "docs/shell.md's session failed: $(tail -3 "$TMP/got.txt")"
if diff -u "$TMP/want.txt" "$TMP/got.txt" >"$TMP/diff.txt"; then ok "its transcript is what docs/shell.md shows"; else bad "transcript differs: $(head -20 "$TMP/diff.txt")"; fi

# 2. Script mode: errors name the line; the script goes on (exit 1) or, --strict, stops with the code.
printf 'synth pcie-8gpu:gpus=4\nplan allsum 1M\nfail link nope x\ncompare allgather 1M\n' >"$TMP/s.txt"
rc=0
"$plan" shell <"$TMP/s.txt" >"$TMP/out.txt" 2>"$TMP/err.txt" || rc=$?
expect_eq "$rc" 1 "a script with failing commands exits 1"
expect_eq "$(cat "$TMP/err.txt")" 'coll-plan shell: line 2: unknown collective "allsum" (expected allreduce, reducescatter, allgather, alltoall, broadcast or reduce)
coll-plan shell: line 3: unknown vertex "nope"' "each failing command prints one line naming its line"
grep -q '^ \*' "$TMP/out.txt" && ok "the commands after them ran (compare marks its best)" || bad "compare after errors: $(cat "$TMP/out.txt")"
rc=0
"$plan" shell --strict <"$TMP/s.txt" >"$TMP/out.txt" 2>"$TMP/err.txt" || rc=$?
expect_eq "$rc:$(wc -l <"$TMP/err.txt")" "2:1" "--strict stops at the first failing command with its exit code"
grep -q "^# allgather" "$TMP/out.txt" && bad "--strict ran past the error" || ok "--strict ran nothing after it"

# 3. What-if edits stack and undo; bad input gets one line each.
cat >"$TMP/w.txt" <<'S'
synth dgx-h100 2
edits
fail vertex node1/gpu3
scale type infiniband lat 10
edits
plan allreduce 1M
undo
undo
edits
remove rank 15
plan broadcast 1M root=3
S
"$plan" shell --strict <"$TMP/w.txt" >"$TMP/w.out" 2>&1 && ok "a what-if session" || bad "what-if session: $(tail -3 "$TMP/w.out")"
grep -q "^edit 1: fail vertex node1/gpu3 (1 rank(s) gone); 15 ranks$" "$TMP/w.out" && ok "a failed GPU takes its rank" || bad "fail vertex: $(cat "$TMP/w.out")"
grep -q "^  2. scale 32 infiniband links latency x10$" "$TMP/w.out" && ok "edits stack" || bad "edits: $(cat "$TMP/w.out")"
grep -q " on 15 ranks, " "$TMP/w.out" && ok "plans follow the edited topology (15 ranks)" || bad "plan after edits: $(cat "$TMP/w.out")"
expect_eq "$(grep -c '^undone: ' "$TMP/w.out")" 2 "two edits undone"
grep -q "^no edits: dgx-h100x2-fat-tree as loaded$" "$TMP/w.out" && ok "back to the topology as loaded" || bad "undo: $(cat "$TMP/w.out")"
grep -q "^edit 1: remove rank 15 " "$TMP/w.out" && ok "a rank removed" || bad "remove rank: $(cat "$TMP/w.out")"

printf 'synth dgx-h100 2\ncompare allgather 1M\nadd hosts 2\nscale link node0/nic0 fabric/leaf0.0 bw 0.25\ndiff\n' |
  "$plan" shell --strict >"$TMP/add.out" 2>&1 && ok "hosts added" || bad "add hosts: $(cat "$TMP/add.out")"
grep -q "^added 2 host(s): dgx-h100x4-fat-tree, 32 ranks (the new base for diff and undo)$" "$TMP/add.out" && ok "the grown cluster has 32 ranks" ||
  bad "add hosts: $(cat "$TMP/add.out")"
grep -Eq "^  allgather +1M " "$TMP/add.out" && ok "diff answers the earlier question on the grown cluster" || bad "diff after add: $(cat "$TMP/add.out")"

one() { printf '%s\n' "$@" | "$plan" shell --strict 2>&1 >/dev/null; }
expect_eq "$(one 'plan allreduce 1M')" "coll-plan shell: line 1: no topology: load FILE or synth NODE first" "a question before a topology"
expect_eq "$(one frobnicate)" 'coll-plan shell: line 1: unknown command "frobnicate" (help lists them)' "an unknown command"
expect_eq "$(one 'synth pcie-8gpu:gpus=2' 'plan allreduce')" "coll-plan shell: line 2: usage: plan COLL SIZE [ALGO] [channels=N] [pipeline=N] [root=R]" "a short command prints its usage"
expect_eq "$(one 'synth pcie-8gpu:gpus=2' 'undo')" "coll-plan shell: line 2: nothing to undo" "undo with no edit"
expect_eq "$(one 'synth pcie-8gpu:gpus=2' 'scale type nvlink bw 0')" 'coll-plan shell: line 2: F: expected a number > 0, got "0"' "a zero scale"
expect_eq "$(one 'synth pcie-8gpu:gpus=2' 'plan allreduce 1M ring channels=x')" 'coll-plan shell: line 2: channels: expected a whole number from 1 to 65535, got "x"' "a bad knob"
expect_eq "$(one 'synth dgx-h100 2' 'add hosts 2' 'fail link node0/gpu0 node0/nvswitch' 'add hosts 1')" \
  "coll-plan shell: line 4: add hosts: undo the other edits first (hosts are added to the synthesised cluster)" "add hosts after an edit"
expect_eq "$(one 'synth pcie-8gpu:gpus=2' 'run')" "coll-plan shell: line 2: no current plan: plan COLL SIZE first" "run with no plan"
expect_eq "$(one 'synth pcie-8gpu:gpus=2' 'remove rank 1' 'remove rank 0')" "coll-plan shell: line 3: the last rank cannot be removed" "the last rank stays"

# 4. save, export and run.
printf 'synth pcie-8gpu:gpus=4\nplan allreduce 1M ring\nsave plan %s\nrun\nexport %s\nsave topo %s\n' "$TMP/p.json" "$TMP/p.xml" "$TMP/t.json" |
  "$plan" shell --strict >"$TMP/r.out" 2>&1 && ok "save, run, export" || bad "save/run/export: $(cat "$TMP/r.out")"
grep -qx "mpirun -np 4 coll-run --plan $TMP/p.json -b 1048576 -e 1048576" "$TMP/r.out" && ok "run prints the mpirun line" || bad "run: $(cat "$TMP/r.out")"
"$plan" verify "$TMP/p.json" >/dev/null && ok "the saved plan verifies" || bad "saved plan does not verify"
grep -q "<algo " "$TMP/p.xml" && ok "the export is MSCCL XML" || bad "export: $(head -3 "$TMP/p.xml")"
"$COLLKIT_BIN/coll-topo" validate "$TMP/t.json" >/dev/null && ok "the saved topology validates" || bad "saved topology invalid"
# An edited topology says which what-ifs made it, in order; undone ones are gone.
printf 'synth pcie-8gpu:gpus=4\nremove rank 3\nscale type pcie bw 0.5\nscale type pcie lat 2\nundo\nsave topo %s\n' "$TMP/te.json" |
  "$plan" shell --strict >"$TMP/te.out" 2>&1 || bad "save an edited topology: $(cat "$TMP/te.out")"
expect_eq "$(json_get "$TMP/te.json" '[n for n in j.get("notes", []) if n.startswith("coll-plan shell")]')" \
  "['coll-plan shell what-if: remove rank 3 (ranks after it move down one)', 'coll-plan shell what-if: scale 8 pcie links bandwidth x0.5']" "a saved topology lists its what-ifs"

# 5. A real terminal.
if python3 "$(dirname "$0")/shell_pty.py" "$plan" "$TMP/history" >"$TMP/pty.txt" 2>&1; then
  ok "the terminal session: $(tail -1 "$TMP/pty.txt")"
else
  bad "the terminal session: $(grep -v '^ok' "$TMP/pty.txt" | head -5)"
fi
finish
