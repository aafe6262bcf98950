# Turns a build's output (CMake's Makefile or Ninja lines) into progress a person can follow:
# on a terminal (-v tty=1) one line rewritten in place, else a line at each 10% step; warnings
# and errors pass through whole. scripts/demo.sh pipes scripts/build.sh through it.
function show(pct, what) {
  if (tty) printf "\r\033[K  building: %3d%%  %s", pct, what
  else if (pct >= shown + 10 || (pct == 100 && shown < 100)) {
    printf "  building: %3d%%  %s\n", pct, what
    shown = pct - pct % 10
  }
  fflush()
}
# "Building CXX object libs/plan/.../ring.cpp.o" -> "compiling ring.cpp"; other steps as they are.
function step(what,   w, n) {
  if (what !~ /^Building/) return what
  n = split(what, w, "/")
  sub(/\.o$/, "", w[n])
  return "compiling " w[n]
}
BEGIN { shown = -10 }
# Makefiles: "[ 42%] Building CXX object libs/plan/CMakeFiles/collkit_plan.dir/src/ring.cpp.o"
/^\[ *[0-9]+%\]/ {
  match($0, /[0-9]+%/)
  pct = substr($0, RSTART, RLENGTH - 1) + 0
  what = $0
  sub(/^\[ *[0-9]+%\] */, "", what)
  show(pct, step(what))
  next
}
# Ninja: "[12/345] Building CXX object ..."
/^\[[0-9]+\/[0-9]+\]/ {
  split(substr($0, 2, index($0, "]") - 2), f, "/")
  what = $0
  sub(/^\[[0-9]+\/[0-9]+\] */, "", what)
  show(int(100 * f[1] / f[2]), step(what))
  next
}
/error|warning|Error/ { if (tty) printf "\n"; print; fflush() }
END { if (tty) printf "\n" }
