#!/usr/bin/env bash
# Every command a committed results/ file names still exists (issue #17): each `coll-topo|plan|run|
# overlap SUBCOMMAND` written as code (inside backticks or a ``` block, where results/ files quote
# what was run) is among that tool's subcommands in its --help, and each bench/ or scripts/ script
# path (*.sh, *.py) is a file of the repository. First the check itself on a made-up file, which it
# must fail.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

cat >"$TMP/check.py" <<'PY'
import os, re, subprocess, sys
binary, root, files = sys.argv[1], sys.argv[2], sys.argv[3:]
tools = ("coll-topo", "coll-plan", "coll-run", "coll-overlap")
subs = {}
for t in tools:
    p = subprocess.run([os.path.join(binary, t), "--help"], capture_output=True, text=True)
    # CLI11's help: a "SUBCOMMANDS:" heading, then one indented name per line.
    names, inside = set(), False
    for line in p.stdout.splitlines():
        if re.match(r"^subcommands:", line, re.I):
            inside = True
        elif inside and re.match(r"^\s+\S", line):
            names.add(line.split()[0])
        elif inside and line.strip():
            inside = False
    if not names:
        sys.exit(f"{t} --help lists no subcommands")
    subs[t] = names
missing, checked = [], 0
for path in files:
    text = open(path, encoding="utf-8", errors="replace").read()
    code = re.findall(r"```.*?```", text, re.S) + re.findall(r"`[^`\n]+`", text)
    for block in code:
        for m in re.finditer(r"(?<![\w/-])(coll-(?:topo|plan|run|overlap)) ([a-z][a-z-]*)\b(?![.'])", block):
            checked += 1
            if m.group(2) not in subs[m.group(1)]:
                missing.append(f"{path}: '{m.group(1)} {m.group(2)}': no such subcommand ({', '.join(sorted(subs[m.group(1)]))})")
    for m in re.finditer(r"(?<![\w/.-])((?:bench|scripts)/[\w./-]+\.(?:sh|py))\b", text):
        checked += 1
        if not os.path.isfile(os.path.join(root, m.group(1))):
            missing.append(f"{path}: {m.group(1)}: no such file")
for x in missing:
    print(x)
print(f"{checked} command mentions checked in {len(files)} files, {len(missing)} missing")
sys.exit(1 if missing or checked == 0 else 0)
PY

printf '%s\n' '`coll-plan frobnicate plan.json`' '`bench/no_such_bench.sh`' >"$TMP/made_up.md"
out=$(python3 "$TMP/check.py" "$COLLKIT_BIN" "$root" "$TMP/made_up.md") && bad "the check passed a made-up file: $out" \
  || { echo "$out" | grep -q "coll-plan frobnicate" && echo "$out" | grep -q "no_such_bench.sh" \
       && ok "the check names a made-up subcommand and script" || bad "the check's report: $out"; }

mapfile -t files < <(find "$root/results" -maxdepth 1 -type f \( -name '*.md' -o -name '*.txt' \) | sort)
if python3 "$TMP/check.py" "$COLLKIT_BIN" "$root" "${files[@]}" >"$TMP/report.txt"; then
  ok "results/: $(tail -1 "$TMP/report.txt")"
else
  bad "results/ names commands that no longer exist:"
  cat "$TMP/report.txt"
fi
finish
