#!/usr/bin/env bash
# scripts/demo.sh shows the build's progress (scripts/build-progress.awk) instead of 15 silent
# minutes: a line per 10% off a terminal, one line rewritten in place on one, warnings and errors
# passed through whole.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
awk_file=$root/scripts/build-progress.awk

# A Makefile build's output, 0% to 100% in steps of 1, one warning in the middle.
for i in $(seq 0 100); do
  printf '[%3d%%] Building CXX object libs/plan/CMakeFiles/collkit_plan.dir/src/file%d.cpp.o\n' "$i" "$i"
  [ "$i" = 50 ] && echo "libs/plan/src/file50.cpp:7:3: warning: unused variable 'x'"
done >"$TMP/make.out"
awk -v tty=0 -f "$awk_file" <"$TMP/make.out" >"$TMP/plain"
expect_eq "$(grep -c '^  building:' "$TMP/plain")" 11 "a line per 10% off a terminal (0, 10, ..., 100)"
grep -q '^  building:  50%  compiling file50.cpp$' "$TMP/plain" && ok "the file being compiled is named" || bad "no 50% line: $(cat "$TMP/plain")"
grep -qx "libs/plan/src/file50.cpp:7:3: warning: unused variable 'x'" "$TMP/plain" && ok "warnings pass through" || bad "warning lost"
awk -v tty=1 -f "$awk_file" <"$TMP/make.out" >"$TMP/tty"
expect_eq "$(grep -c $'\r' "$TMP/tty")" 2 "on a terminal: one line rewritten (before and after the warning)"

# Ninja's form.
printf '[1/4] Building CXX object a.cpp.o\n[2/4] Building CXX object b.cpp.o\n[4/4] Linking CXX executable bin/coll-plan\n' |
  awk -v tty=0 -f "$awk_file" >"$TMP/ninja"
expect_eq "$(tail -1 "$TMP/ninja")" "  building: 100%  Linking CXX executable bin/coll-plan" "ninja's counts read"

# demo.sh builds through it, and says where the log is.
grep -q 'build-progress.awk' "$root/scripts/demo.sh" && ok "demo.sh pipes the build through the progress filter" ||
  bad "demo.sh does not show build progress"
finish
