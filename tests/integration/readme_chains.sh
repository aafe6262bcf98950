#!/usr/bin/env bash
# The README's tool examples run as written, in order, each file made by an earlier command: every
# line of the code blocks under "### coll-topo", "### coll-plan", "### coll-run" and
# "### coll-overlap". What this machine changes, and only that:
#   - `[...]` optional parts are left out, `# ...` comments dropped;
#   - mpirun gets --oversubscribe (2 cores) and runs as root (CI's user);
#   - the NCCL XML that import reads on a cloud VM is a fixture of the same format;
#   - `coll-plan shell` is interactive (coll_plan_shell tests it);
#   - what takes minutes on 2 cores runs smaller with the same flags: the 16-rank run of every
#     plan at 1 iteration (`-n 1 -w 0`), the 1024-rank sweep to 1K, the ring run to 1M, the
#     bfloat16 run at 2 iterations, calibrate --quick.
source "$(dirname "$0")/lib.sh"
readme=$(cd "$(dirname "$0")/../.." && pwd)/README.md
export PATH=$COLLKIT_BIN:$PATH
cd "$TMP"

# The blocks, one command a line, as the README has them.
python3 - "$readme" >"$TMP/commands" <<'EOF'
import re, sys
sections = ("### coll-topo", "### coll-plan", "### coll-run", "### coll-overlap")
lines, section, fenced = [], None, False
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("#"):
        section = line.strip() if line.startswith("###") else None
        continue
    if line.startswith("```"):
        fenced = not fenced
        continue
    if fenced and section in sections and line.strip() and not line.startswith("$ ") and not line.startswith("coll-plan>"):
        if not re.match(r"\s*(mpirun|coll-)", line):
            continue  # a transcript's output lines
        line = re.sub(r"\s+#.*$", "", line)
        line = re.sub(r"\s*\[[^]]*\]", "", line)
        lines.append(line.strip())
print("\n".join(lines))
EOF
n=$(wc -l <"$TMP/commands")
[ "$n" -ge 20 ] && ok "the README has $n tool commands" || bad "only $n tool commands found in the README"

ran=0
while IFS= read -r cmd; do
  case "$cmd" in
    "coll-plan shell") continue ;;
  esac
  run=${cmd//\/var\/run\/nvidia-topologyd\/virtualTopology.xml/$COLLKIT_FIXTURES/nccl-xml/dgx-h100.xml}
  run=${run//mpirun -np/mpirun --oversubscribe -np}
  case "$cmd" in
    *"--coll all --algo all"*) run="$run -n 1 -w 0" ;;
    *"sweep --topo h100x128.json"*) run=${run//-e 1G/-e 1K} ;;
    *"--algo ring -b 1K -e 64M"*) run=${run//-e 64M/-e 1M} ;;
    *"-n 50"*) run=${run//-n 50/-n 2 -w 1} ;;
    *"coll-run calibrate"*) run=${run//coll-run calibrate/coll-run calibrate --quick} ;;
  esac
  start=$SECONDS
  if timeout 600 bash -c "$run" </dev/null >"$TMP/out" 2>&1; then
    ran=$((ran + 1))
    ok "$cmd ($((SECONDS - start)) s)"
  else
    bad "$cmd: exit $? ($(tail -1 "$TMP/out"))"
  fi
done <"$TMP/commands"
echo "ran $ran README commands"
finish
