#!/usr/bin/env bash
# `cibench show` of a stepped run: variants numbered from 1 of the matrix's total, as `cibench run`
# numbers them on its console (in the text and in --json), and a knee at the highest rate tried stated as not reached there
# (every step met the SLOs) while a knee below it is named. Test SUTs: no shared files needed.
# Usage: show_knee.sh PATH-TO-CIBENCH [SHARED-DIR]
set -euo pipefail
CIBENCH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/r.sqlite
fail() { echo "FAIL: $*" >&2; exit 1; }

# Two variants (1 and 2 workers) at 20 and 40 qps of 1 ms requests: every step meets p99 <= 1 s.
cat >"$tmp/held.toml" <<'EOF'
[scenario]
name = "held"
[model]
source = "sut:sleep?ms=1"
[matrix]
workers = [1, 2]
[load]
pattern = "stepped"
rates_qps = [20, 40]
[run]
min_queries = 4
min_duration_ms = 200
max_duration_ms = 5000
[slo]
p99_ms = 1000
[counters]
enabled = false
EOF
"$CIBENCH" run "$tmp/held.toml" --db "$db" 2>"$tmp/run.txt" >/dev/null || { cat "$tmp/run.txt" >&2; fail "run"; }
"$CIBENCH" show last --db "$db" >"$tmp/show.txt" || fail "show"

# The numbers show prints are the ones the run printed: 1/2 and 2/2, never 0.
numbers() { { grep -o 'variant [0-9]*/[0-9]*' "$1" || true; } | sort -u | tr '\n' ' '; }
run_numbers=$(numbers "$tmp/run.txt")
show_numbers=$(numbers "$tmp/show.txt")
[ "$run_numbers" = "variant 1/2 variant 2/2 " ] || fail "run console numbers: '$run_numbers'"
[ "$show_numbers" = "$run_numbers" ] || { cat "$tmp/show.txt" >&2; fail "show numbers '$show_numbers' vs run '$run_numbers'"; }
! grep -q 'variant 0' "$tmp/show.txt" || fail "show numbers a variant 0"
for n in 1 2; do
  grep -qx "variant $n/2: knee (highest rate meeting the SLOs) = not reached below the highest rate tried (40 qps)" \
    "$tmp/show.txt" || { cat "$tmp/show.txt" >&2; fail "knee of variant $n not stated as not reached"; }
done
# The JSON numbers the variants and steps as the text does (from 1, of variant_count), with no
# 0-based index beside them; run --json and export --format json too.
"$CIBENCH" show last --db "$db" --json >"$tmp/show.json" || fail "show --json"
python3 - "$tmp/show.json" <<'PY' || fail "show --json numbers"
import json, sys
j = json.load(open(sys.argv[1]))
got = [(v["variant"], v["step"]) for v in j["variants"]]
assert got == [(1, 1), (1, 2), (2, 1), (2, 2)], got
assert j["variant_count"] == 2, j.get("variant_count")
assert not any("variant_index" in v or "step_index" in v for v in j["variants"]), "0-based index in the JSON"
PY
"$CIBENCH" export last --db "$db" --format json >"$tmp/export.json" || fail "export json"
python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["variants"]; assert [x["variant"] for x in v] == [1, 1, 2, 2] and not any("variant_index" in x for x in v), v' \
  "$tmp/export.json" || fail "export --format json numbers"
grep -q 'knee (highest rate meeting the SLOs): not reached below the highest rate tried (40 qps)' "$tmp/run.txt" \
  || fail "run console knee"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM variants WHERE knee_qps = 40 AND knee_reached = 0")" = "4" ] \
  || fail "stored knee_qps / knee_reached of the four steps"
# A run stored before knee_reached (schema < 6): show reads the knee as reached only when a step broke an SLO.
sqlite3 "$db" "UPDATE variants SET knee_reached = NULL"
"$CIBENCH" show last --db "$db" >"$tmp/show_old.txt" || fail "show of a row without knee_reached"
diff "$tmp/show.txt" "$tmp/show_old.txt" >&2 || fail "show differs without knee_reached"
! grep -q '= 40.00 qps' "$tmp/show.txt" || fail "show names the highest rate tried as the knee"

# 40 ms requests on one worker: 10 qps holds p99 <= 200 ms, 200 qps does not: the knee is 10 qps.
sed -e 's/ms=1"/ms=40"/' -e 's/workers = \[1, 2\]/workers = [1]/' -e 's/\[20, 40\]/[10, 200]/' \
  -e 's/p99_ms = 1000/p99_ms = 200/' -e 's/min_duration_ms = 200/min_duration_ms = 400/' "$tmp/held.toml" >"$tmp/broke.toml"
"$CIBENCH" run "$tmp/broke.toml" --db "$db" -q >/dev/null 2>&1 || fail "run broke"
"$CIBENCH" show last --db "$db" >"$tmp/show2.txt" || fail "show broke"
grep -qx 'variant 1/1: knee (highest rate meeting the SLOs) = 10 qps' "$tmp/show2.txt" \
  || { cat "$tmp/show2.txt" >&2; fail "knee below the highest rate"; }
echo "show_knee: ok"
