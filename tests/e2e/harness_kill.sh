#!/usr/bin/env bash
# SIGKILL in the middle of `cibench run` leaves a database that opens, passes
# PRAGMA integrity_check, keeps the earlier run, and shows the interrupted run as incomplete.
# Usage: harness_kill.sh PATH-TO-CIBENCH [SHARED-DIR]
set -euo pipefail
CIBENCH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/results.sqlite

cat >"$tmp/short.toml" <<'TOML'
[scenario]
name = "short"
[model]
source = "sut:sleep?ms=1"
[load]
pattern = "offline"
[run]
min_queries = 50
min_duration_ms = 0
TOML
cat >"$tmp/long.toml" <<'TOML'
[scenario]
name = "long"
[model]
source = "sut:sleep?ms=2"
[matrix]
workers = [1, 2]
[load]
pattern = "server"
target_qps = 200
[run]
min_duration_ms = 30000
max_duration_ms = 60000
TOML

"$CIBENCH" run "$tmp/short.toml" --db "$db" -q
"$CIBENCH" run "$tmp/long.toml" --db "$db" -q &
pid=$!
# Wait until the interrupted run's first variant row exists, then kill without warning.
for _ in $(seq 100); do
  n=$(sqlite3 "$db" "SELECT COUNT(*) FROM variants WHERE run_id = 2" 2>/dev/null || echo 0)
  [ "$n" -ge 1 ] && break
  sleep 0.1
done
sleep 0.5
kill -9 "$pid"
wait "$pid" 2>/dev/null || true

fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = "ok" ] || fail "integrity_check"
[ "$(sqlite3 "$db" 'SELECT status FROM runs WHERE run_id = 1')" = "complete" ] || fail "run 1 not complete"
[ "$(sqlite3 "$db" 'SELECT COUNT(*) FROM requests r JOIN variants v USING (variant_id) WHERE v.run_id = 1')" = "50" ] \
  || fail "run 1 lost its requests"
# Still 'running' in the file: the process died before it could say otherwise.
[ "$(sqlite3 "$db" 'SELECT status FROM runs WHERE run_id = 2')" = "running" ] || fail "run 2 should be running before reopen"
# `cibench list` opens the store, which marks it incomplete (the process is gone).
"$CIBENCH" list --db "$db" --json >"$tmp/list.json"
grep -q '"status": "incomplete"' "$tmp/list.json" || fail "list does not show incomplete: $(cat "$tmp/list.json")"
[ "$(sqlite3 "$db" 'SELECT status FROM runs WHERE run_id = 2')" = "incomplete" ] || fail "run 2 not marked incomplete"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM variants WHERE run_id = 2 AND status = 'running'")" = "0" ] \
  || fail "variants of run 2 still running"
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = "ok" ] || fail "integrity_check after reopen"
# A new run after the crash works and gets the next id.
"$CIBENCH" run "$tmp/short.toml" --db "$db" -q
[ "$(sqlite3 "$db" 'SELECT status FROM runs WHERE run_id = 3')" = "complete" ] || fail "run 3"
echo "harness_kill: ok"
