#!/usr/bin/env bash
# ctest's doctest discovery splits a test's name at ';': a TEST_CASE named "a; b" becomes a ctest
# entry that runs no case and passes. Thirteen such tests once never ran (one of them failing).
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
names=$(grep -rhoE 'TEST_CASE\("[^"]*"' "$root/tests/unit" | wc -l)
bad_names=$(grep -rnE 'TEST_CASE\("[^"]*;[^"]*"' "$root/tests/unit" || true)
[ "$names" -gt 100 ] && ok "$names test case names read" || bad "only $names TEST_CASE names found"
[ -z "$bad_names" ] && ok "no test case name has a ';'" || bad "names with ';' (ctest would run nothing for them): $bad_names"
finish
