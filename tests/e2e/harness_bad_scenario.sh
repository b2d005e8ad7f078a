#!/usr/bin/env bash
# A scenario with an unknown key, a wrong type or a missing model fails with file:line:column
# and the key, exit code 1, and writes nothing (no database is created).
# Usage: harness_bad_scenario.sh PATH-TO-CIBENCH [SHARED-DIR]
set -euo pipefail
CIBENCH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

check() {  # name, scenario text, expected message prefix (grep -F)
  local name=$1 text=$2 expect=$3
  printf '%s\n' "$text" >"$tmp/$name.toml"
  set +e
  "$CIBENCH" run "$tmp/$name.toml" --db "$tmp/$name.sqlite" -q 2>"$tmp/$name.err"
  local rc=$?
  set -e
  [ "$rc" -eq 1 ] || fail "$name: exit code $rc, expected 1"
  grep -qF "$tmp/$name.toml:$expect" "$tmp/$name.err" || fail "$name: got '$(cat "$tmp/$name.err")', expected '$expect'"
  [ ! -e "$tmp/$name.sqlite" ] || fail "$name: a database was written"
}

check unknown_key $'[model]\nsource = "sut:null"\n[load]\npatern = "server"' \
  "4:1: key 'load.patern': unknown key"
check wrong_type $'[model]\nsource = "sut:null"\n[run]\nmin_queries = "many"' \
  "4:15: key 'run.min_queries': expected an integer, got string"
check missing_model $'[model]\nsource = "models/nope/missing.bin"' \
  "2:10: key 'model.source': model 'models/nope/missing.bin' not found"
check bad_synthetic $'[model]\nsource = "synthetic:no-such-preset"' \
  "2:10: key 'model.source': "
printf '[model]\nsource = "sut:null"\n' >"$tmp/bad_set.toml"  # parses; the --set below breaks it
set +e
"$CIBENCH" run "$tmp/bad_set.toml" --db "$tmp/bad_set2.sqlite" -q --set load.target_qps=fast 2>"$tmp/set.err"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "--set: exit code $rc"
grep -qF "key 'load.target_qps': expected a number" "$tmp/set.err" || fail "--set: $(cat "$tmp/set.err")"
[ ! -e "$tmp/bad_set2.sqlite" ] || fail "--set: a database was written"
echo "harness_bad_scenario: ok"
