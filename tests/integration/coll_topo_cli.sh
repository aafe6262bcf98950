#!/usr/bin/env bash
# coll-topo from the command line: synth for every preset and fabric, show, validate, and every
# kind of bad input with its exit code and exact one-line message.
source "$(dirname "$0")/lib.sh"
topo=$COLLKIT_BIN/coll-topo
fx=$COLLKIT_FIXTURES/topology

# Every preset synthesises, validates and shows.
for preset in $("$topo" presets | awk 'NF && $1 !~ /^fabrics:/ {print $1}'); do
  if "$topo" synth --node "$preset" -o "$TMP/$preset.json" 2>/dev/null && "$topo" validate "$TMP/$preset.json" >/dev/null &&
     "$topo" show "$TMP/$preset.json" >/dev/null && "$topo" show --dot "$TMP/$preset.json" >"$TMP/$preset.dot" &&
     grep -q '^graph collkit {' "$TMP/$preset.dot"; then
    ok "preset $preset"
  else
    bad "preset $preset"
  fi
done

# The issue's example: 128 DGX H100 on a rail-optimised fat-tree.
"$topo" synth --node dgx-h100 --nodes 128 --fabric fat-tree:rails=8,oversub=1 -o "$TMP/big.json" 2>/dev/null
expect_eq "$(json_get "$TMP/big.json" 'len(j["ranks"])')" 1024 "ranks of dgx-h100 x128"
expect_eq "$(json_get "$TMP/big.json" 'j["schema"]')" collkit.topology/1 "schema"
expect_eq "$(json_get "$TMP/big.json" 'sum(1 for v in j["vertices"] if v["kind"]=="net_switch")')" 64 "leaves (8 rails x 4) + spines (32)"
"$topo" show "$TMP/big.json" --count 9 > "$TMP/big.txt"
grep -q "NV18/450" "$TMP/big.txt" && ok "matrix shows NV18/450" || bad "matrix lacks NV18/450"
grep -q "NET/50" "$TMP/big.txt" && ok "matrix shows NET/50" || bad "matrix lacks NET/50"

# Torus and single switch, stdout output.
"$topo" synth --node mi300x --nodes 16 --fabric torus:dims=4x4 > "$TMP/torus.json" 2>/dev/null
expect_eq "$(json_get "$TMP/torus.json" 'len(j["ranks"])')" 128 "ranks of mi300x x16 torus"
"$topo" synth --node pcie-8gpu:gpus=2 --nodes 3 --fabric single-switch -o "$TMP/pcie.json" 2>/dev/null
expect_eq "$(json_get "$TMP/pcie.json" 'len(j["ranks"])')" 6 "ranks of pcie-8gpu:gpus=2 x3"

# The documented example validates.
"$topo" validate "$COLLKIT_DOCS/examples/topology.json" >"$TMP/valid.txt"
grep -q "valid collkit.topology/1, 4 ranks on 2 host(s)" "$TMP/valid.txt" && ok "docs example" || bad "docs example"

# Bad input: one line, exit 2 (input), 3 (system).
expect_fail 2 "coll-topo: error: bad-zero-bandwidth.json: /links/2/bw_gbps: must be > 0, got 0" \
  bash -c "cd '$fx' && '$topo' validate bad-zero-bandwidth.json"
expect_fail 2 "coll-topo: error: bad-duplicate-id.json: /vertices/2/id: duplicate id \"h0/gpu0\" (first at /vertices/1)" \
  bash -c "cd '$fx' && '$topo' validate bad-duplicate-id.json"
expect_fail 2 "coll-topo: error: bad-schema-kind.json: /schema: expected \"collkit.topology/1\", got \"collkit.plan/1\"" \
  bash -c "cd '$fx' && '$topo' show bad-schema-kind.json"
expect_fail 2 "coll-topo: error: bad-disconnected.json: /ranks: rank set is not connected: rank 2 (h0/gpu2) cannot be reached from rank 0 (h0/gpu0)" \
  bash -c "cd '$fx' && '$topo' validate bad-disconnected.json"
expect_fail 3 "coll-topo: error: $TMP/none.json: cannot open: No such file or directory" "$topo" validate "$TMP/none.json"
expect_fail 2 "coll-topo: error: unknown fabric \"ring\" (known: single-switch, fat-tree, torus)" \
  "$topo" synth --node dgx-h100 --nodes 2 --fabric ring
expect_fail 2 "coll-topo: error: fabric torus: dims=2x2 holds 4 hosts, the cluster has 6" \
  "$topo" synth --node dgx-h100 --nodes 6 --fabric torus:dims=2x2
expect_fail 2 "coll-topo: error: pcie-8gpu.json: parameter gpus=x: expected an integer" \
  "$topo" synth --node pcie-8gpu:gpus=x
# Parameters and counts that once hung or ran out of memory: refused at their limit (docs/errors.md).
expect_fail 2 'coll-topo: error: pcie-8gpu.json: /vertices/2/for: in "gpus-1": integer overflow (values are 64-bit)' \
  timeout 20 "$topo" synth --node pcie-8gpu:gpus=-9223372036854775808
expect_fail 2 'coll-topo: error: pcie-8gpu.json: /vertices/2/for: "i in 0..gpus-1" makes more than 65536 bindings (the limit on one entry'"'"'s loops)' \
  timeout 20 "$topo" synth --node pcie-8gpu:gpus=9223372036854775807
expect_fail 2 'coll-topo: error: pcie-8gpu.json: /vertices/2/for: "i in 0..gpus-1" makes more than 65536 bindings (the limit on one entry'"'"'s loops)' \
  timeout 20 "$topo" synth --node pcie-8gpu:gpus=1000000000
expect_fail 2 'coll-topo: error: cpu-host.json: /ranks/for: "r in 0..2*ranks_per_socket-1" makes more than 65536 bindings (the limit on one entry'"'"'s loops)' \
  timeout 20 "$topo" synth --node cpu-host:ranks_per_socket=10000000
expect_fail 2 "coll-topo: error: --nodes 1000000000: 1000000000 nodes of 27 vertices exceed the limit of 1048576 vertices in a topology" \
  timeout 20 "$topo" synth --nodes 1000000000
expect_fail 2 "coll-topo: error: ranks per host must be at most 65536 (the limit on ranks per host), got 1000000000" \
  timeout 20 "$topo" discover --ranks-per-host 1000000000 --no-measure
cp "$COLLKIT_FIXTURES/nccl-xml/dgx-h100.xml" "$TMP/dump.xml"
expect_fail 2 "coll-topo: error: $TMP/dump.xml: the output would overwrite the input $TMP/dump.xml; write it elsewhere" \
  "$topo" import --nccl-xml "$TMP/dump.xml" -o "$TMP/dump.xml"
cmp -s "$COLLKIT_FIXTURES/nccl-xml/dgx-h100.xml" "$TMP/dump.xml" && ok "import left its input alone" || bad "import overwrote its input"
rc=0; "$topo" synth --node dgx-z900 >/dev/null 2>"$TMP/err" || rc=$?
[ $rc = 2 ] && grep -q '^coll-topo: error: unknown node preset "dgx-z900" (known: .*dgx-h100' "$TMP/err" && ok "unknown preset" || bad "unknown preset: $rc $(cat "$TMP/err")"
rc=0; "$topo" synth --nodes 0 >/dev/null 2>&1 || rc=$?
[ $rc != 0 ] && ok "--nodes 0 refused ($rc)" || bad "--nodes 0 accepted"
rc=0; "$topo" frobnicate >/dev/null 2>&1 || rc=$?
[ $rc != 0 ] && ok "unknown subcommand refused ($rc)" || bad "unknown subcommand accepted"

# Atomic output: a failed run leaves no file and no temporary behind.
"$topo" synth --node dgx-h100 --nodes 2 --fabric ring -o "$TMP/never.json" 2>/dev/null || true
[ ! -e "$TMP/never.json" ] && [ -z "$(ls "$TMP" | grep '\.tmp\.' || true)" ] && ok "no partial file" || bad "partial file left"

# --version on every tool (one place: apps/common/subcommands.h), exit 0.
# --dot with a window draws the window's hosts and their switches only; without one, everything.
"$topo" show --dot "$TMP/big.json" >"$TMP/all.dot"
"$topo" show --dot --first 8 --count 8 "$TMP/big.json" >"$TMP/win.dot"
all_links=$(grep -c -- ' -- ' "$TMP/all.dot"); win_links=$(grep -c -- ' -- ' "$TMP/win.dot")
grep -q '"node1/gpu0"' "$TMP/win.dot" && ! grep -q '"node0/gpu0"' "$TMP/win.dot" && ! grep -q '"node2/' "$TMP/win.dot" &&
  [ "$win_links" -gt 0 ] && [ "$win_links" -lt $((all_links / 64)) ] &&
  ok "--dot --first 8 --count 8 draws node1 alone ($win_links of $all_links links)" ||
  bad "--dot window: $win_links of $all_links links, $(grep -c '"node' "$TMP/win.dot") node lines"

expect_fail 2 "coll-topo: error: --first 1024: the topology has 1024 ranks (0 to 1023)" "$topo" show --dot --first 1024 "$TMP/big.json"

# --node takes a preset file of one's own, as --model does, with parameters after ':'.
sed 's/"name": "pcie-8gpu"/"name": "my-box"/' "$(dirname "$0")/../../configs/nodes/pcie-8gpu.json" >"$TMP/my-box.json"
"$topo" synth --node "$TMP/my-box.json:gpus=2" --nodes 2 -o "$TMP/mine.json" 2>/dev/null &&
  expect_eq "$(json_get "$TMP/mine.json" 'len(j["ranks"])')" 4 "--node FILE:gpus=2 x 2 hosts" || bad "--node FILE refused"
expect_fail 3 "coll-topo: error: $TMP/none.json: cannot open: No such file or directory" "$topo" synth --node "$TMP/none.json"

for tool in coll-topo coll-plan coll-run coll-overlap; do
  got=$("$COLLKIT_BIN/$tool" --version 2>&1) && expect_eq "$got" "$tool (collkit 0.1.0)" "$tool --version" || bad "$tool --version failed: $got"
done

finish
