# cmake --install into a fresh prefix: the tools run from there and find their presets and models
# there (not in the source tree), the tuner plugin and docs are in place, and the bash completion
# each tool wrote completes its subcommands and flags.
source "$(dirname "$0")/lib.sh"
build=$(cd "$COLLKIT_BIN/.." && pwd)
pfx=$TMP/prefix
cmake --install "$build" --prefix "$pfx" >"$TMP/install.log" 2>&1 && ok "cmake --install" || bad "cmake --install: $(tail -2 "$TMP/install.log")"
for f in bin/coll-topo bin/coll-plan bin/coll-run bin/coll-overlap lib/libnccl-tuner-collkit.so share/doc/collkit/README.md \
  share/collkit/configs/nodes/dgx-h100.json; do
  [ -e "$pfx/$f" ] && ok "installed $f" || bad "missing $f"
done
# A preset that exists only in the installed configs proves the installed tool reads them.
sed 's/"name": *"dgx-h100"/"name": "installed-only"/' "$pfx/share/collkit/configs/nodes/dgx-h100.json" \
  >"$pfx/share/collkit/configs/nodes/installed-only.json"
env -u COLLKIT_CONFIGS "$pfx/bin/coll-topo" synth --node installed-only --nodes 1 -o "$TMP/t.json" >/dev/null 2>&1 &&
  ok "the installed coll-topo reads <prefix>/share/collkit/configs" || bad "installed coll-topo did not find its configs"
"$pfx/bin/coll-plan" --version | grep -q "^coll-plan (collkit " && ok "installed coll-plan runs" || bad "installed coll-plan --version"

# Completion, as bash runs it: COMP_WORDS up to the word being completed.
for tool in coll-topo coll-plan coll-run coll-overlap; do
  # shellcheck disable=SC1090
  source "$pfx/share/bash-completion/completions/$tool" && ok "completion script of $tool sources" || bad "completion of $tool"
done
complete_words() {
  local fn=$1
  shift
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  "$fn"
  echo "${COMPREPLY[*]}"
}
expect_eq "$(complete_words _collkit_coll_plan coll-plan gen)" "generate" "coll-plan gen<TAB>"
expect_eq "$(complete_words _collkit_coll_plan coll-plan generate --to)" "--topo" "coll-plan generate --to<TAB>"
expect_eq "$(complete_words _collkit_coll_topo coll-topo synth --no)" "--node --nodes" "coll-topo synth --no<TAB>"
expect_eq "$(complete_words _collkit_coll_run coll-run --pl)" "--plan" "coll-run --pl<TAB>"
# A shell other than bash: CLI11's usage error (docs/errors.md), a non-zero exit.
rc=0
said=$("$COLLKIT_BIN/coll-plan" --completion zsh 2>&1 >/dev/null) || rc=$?
[ "$rc" -ne 0 ] && [ "$(echo "$said" | head -1)" = '--completion: only bash is supported, got "zsh"' ] &&
  ok "--completion zsh refused" || bad "--completion zsh: exit $rc, $said"
finish
