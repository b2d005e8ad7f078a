#!/usr/bin/env bash
# A fleet on a real Slurm (Debian's slurm-wlm and munge, one node, started by scripts/slurm-local.sh
# unless one answers already, as under .ci/run): scenarios/fleet-quickstart.toml on two host types
# (1 and 2 CPUs per task, priced) as one two-task job array, collected and merged; the merged store
# holds both runs with their placement and the hosts' prices, `cibench show` ranks the host types
# by cost per answer, and merging a task's store again adds nothing. Then the failures: a task that
# dies is named with its state, exit code and error line and nothing is merged (--partial merges
# the rest, exit 3); a submission Slurm rejects cancels the array submitted before it; without
# Slurm nothing is written. Needs root (the daemons).
# Usage: fleet_slurm.sh PATH-TO-CIBENCH [SHARED-DIR]
set -euo pipefail
CIBENCH=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
started=""
cleanup() {
  [ -n "$started" ] && bash "$repo/scripts/slurm-local.sh" stop "$tmp/slurm" || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "$(id -u)" != 0 ]; then
  echo "fleet_slurm: needs root to start slurmctld, slurmd and munged" >&2
  exit 77
fi
# The running Slurm (SLURM_CONF of .ci/run), else one of our own.
if ! { [ -n "${SLURM_CONF:-}" ] && sinfo -h >/dev/null 2>&1; }; then
  started=1
  conf=$(bash "$repo/scripts/slurm-local.sh" start "$tmp/slurm") || fail "scripts/slurm-local.sh start failed"
  eval "$conf"
fi
sinfo -h -o '%T' | grep -qx idle || fail "the Slurm node is not idle: $(sinfo -h -N 2>&1)"

cat >"$tmp/hosts.toml" <<'EOF'
currency = "USD"

[[host]]
name = "small"
price_per_hour = 0.05
source = "1 CPU of this machine, priced for the test"
cpus_per_task = 1

[[host]]
name = "large"
price_per_hour = 0.12
source = "2 CPUs of this machine, priced for the test"
cpus_per_task = 2
EOF

# ---- the fleet end to end ------------------------------------------------------------------
fleet=$tmp/fleet
"$CIBENCH" fleet slurm "$repo/scenarios/fleet-quickstart.toml" --hosts "$tmp/hosts.toml" --dir "$fleet" --submit \
  >"$tmp/plan.txt" || { cat "$tmp/plan.txt" >&2; fail "fleet slurm --submit"; }
grep -q "submitted array-0.sbatch as job [0-9]" "$tmp/plan.txt" || fail "no job id: $(cat "$tmp/plan.txt")"
grep -q "^#SBATCH --array=0-1$" "$fleet/array-0.sbatch" || fail "not a two-task array"
"$CIBENCH" fleet collect "$fleet" --timeout 600 --poll 1 >"$tmp/collect.txt" 2>&1 ||
  { cat "$tmp/collect.txt" "$fleet"/logs/*.err >&2; fail "fleet collect"; }
[ "$(grep -c ' COMPLETED ' "$tmp/collect.txt")" = 2 ] || fail "two tasks completed: $(cat "$tmp/collect.txt")"
grep -q "fleet.sqlite: 2 runs added from 2 stores" "$tmp/collect.txt" || fail "merge: $(cat "$tmp/collect.txt")"
db=$fleet/fleet.sqlite
q() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print("\n".join("|".join("" if v is None else str(v) for v in r) for r in c.execute(sys.argv[2])))' "$db" "$1"; }
placement=$(q "SELECT host_type, slurm_array_task_id, slurm_cpus_per_task, affinity_cpus, cpu_bind, scenario_name, status FROM runs ORDER BY host_type")
expect=$'large|1|2|2|cores|fleet-quickstart|complete\nsmall|0|1|1|cores|fleet-quickstart|complete'
[ "$placement" = "$expect" ] || fail "placement: got
$placement
expected
$expect"
[ "$(q "SELECT COUNT(DISTINCT slurm_array_job_id) FROM runs")" = 1 ] || fail "one array"
[ "$(q "SELECT name, price_per_hour FROM host_types ORDER BY name")" = $'large|0.12\nsmall|0.05' ] || fail "prices"
[ "$(q "SELECT COUNT(*) FROM merge_sources WHERE source_path LIKE '%/stores/%.sqlite'")" = 2 ] || fail "mapping"
[ "$(q "SELECT COUNT(*) FROM variants WHERE status = 'ok'")" -ge 8 ] || fail "variants: $(q "SELECT label, status, error FROM variants")"
run=$(q "SELECT run_id FROM runs WHERE host_type = 'small'")
"$CIBENCH" show "$run" --db "$db" >"$tmp/show.txt" || fail "show"
grep -q "^placement  host type small; slurm job" "$tmp/show.txt" || fail "show: no placement line"
grep -q "cost per answer on host type small (0.0500 USD/h" "$tmp/show.txt" || fail "show: no cost table"
grep -q "host types for scenario 'fleet-quickstart' in this store, cheapest first" "$tmp/show.txt" ||
  fail "show: no host ranking: $(cat "$tmp/show.txt")"
ranked=$(awk '/cheapest first/ {on=1; next} on && /^[0-9-] / {print $2}' "$tmp/show.txt" | sort | tr '\n' ' ')
[ "$ranked" = "large small " ] || fail "ranking lists both host types: '$ranked'"
# Merging a task's store again adds nothing.
"$CIBENCH" merge "$fleet/stores/small.sqlite" -o "$db" >"$tmp/merge.txt" || fail "merge again"
grep -q "0 runs added" "$tmp/merge.txt" || fail "merge again added: $(cat "$tmp/merge.txt")"
echo "fleet: $(tr '\n' ' ' <"$tmp/collect.txt")"
# A store that is not its task's (small's copied over large's) is refused, nothing merged.
cp "$fleet/stores/small.sqlite" "$fleet/stores/large.sqlite"
set +e
"$CIBENCH" fleet collect "$fleet" -o "$tmp/mixed.sqlite" >"$tmp/mixed.txt" 2>&1
st=$?
set -e
[ "$st" = 1 ] || fail "a store of another host type: exit $st"
grep -q "large.sqlite: run 1 ran as host type 'small', not 'large'" "$tmp/mixed.txt" || fail "mixed: $(cat "$tmp/mixed.txt")"
[ ! -e "$tmp/mixed.sqlite" ] || fail "mixed stores were merged"
# An unknown host type.
set +e
"$CIBENCH" fleet slurm "$repo/scenarios/fleet-quickstart.toml" --hosts "$tmp/hosts.toml" --dir "$tmp/unknown" \
  --host medium >"$tmp/unknown.txt" 2>&1
st=$?
set -e
[ "$st" = 1 ] || fail "an unknown host type: exit $st"
grep -q "hosts.toml: no host type 'medium' (--host; the file has small, large)" "$tmp/unknown.txt" ||
  fail "unknown host: $(cat "$tmp/unknown.txt")"
[ ! -e "$tmp/unknown" ] || fail "the fleet folder of an unknown host type was written"

# ---- a task that dies ----------------------------------------------------------------------
cat >"$tmp/quick.toml" <<'EOF'
[scenario]
name = "quick"
[model]
source = "sut:sleep?ms=1"
[load]
pattern = "closed_loop"
[run]
min_queries = 4
min_duration_ms = 200
max_duration_ms = 2000
[counters]
enabled = false
EOF
# The tasks run this wrapper: it fails as host type "large".
cat >"$tmp/cibench-wrapper" <<EOF
#!/bin/bash
if [ "\$CIBENCH_HOST_TYPE" = large ]; then echo "wrapper: large refuses to run" >&2; exit 4; fi
exec "$CIBENCH" "\$@"
EOF
chmod +x "$tmp/cibench-wrapper"
"$CIBENCH" fleet slurm "$tmp/quick.toml" --hosts "$tmp/hosts.toml" --dir "$tmp/dies" --cibench "$tmp/cibench-wrapper" \
  --submit >/dev/null || fail "submit the dying fleet"
set +e
"$CIBENCH" fleet collect "$tmp/dies" --timeout 300 --poll 1 >"$tmp/dies.txt" 2>&1
st=$?
set -e
[ "$st" = 1 ] || fail "collect of a fleet with a dead task: exit $st: $(cat "$tmp/dies.txt")"
grep -q "task [0-9]*_1 (host type large): FAILED (exit 4:0" "$tmp/dies.txt" || fail "the dead task: $(cat "$tmp/dies.txt")"
grep -q "wrapper: large refuses to run" "$tmp/dies.txt" || fail "its error line: $(cat "$tmp/dies.txt")"
grep -q "nothing merged" "$tmp/dies.txt" || fail "nothing merged: $(cat "$tmp/dies.txt")"
[ ! -e "$tmp/dies/fleet.sqlite" ] || fail "a store was merged half-way"
set +e
"$CIBENCH" fleet collect "$tmp/dies" --partial >"$tmp/partial.txt" 2>&1
st=$?
set -e
[ "$st" = 3 ] || fail "--partial: exit $st: $(cat "$tmp/partial.txt")"
grep -q "1 runs added from 1 stores" "$tmp/partial.txt" || fail "--partial merged: $(cat "$tmp/partial.txt")"

# ---- a submission Slurm rejects: nothing left submitted -------------------------------------
cat >"$tmp/bad-hosts.toml" <<'EOF'
[[host]]
name = "here"
price_per_hour = 0.05

[[host]]
name = "nowhere"
price_per_hour = 0.10
constraint = "nosuchfeature"
EOF
set +e
"$CIBENCH" fleet slurm "$tmp/quick.toml" --hosts "$tmp/bad-hosts.toml" --dir "$tmp/rejected" --submit \
  >"$tmp/rejected.txt" 2>&1
st=$?
set -e
[ "$st" = 1 ] || fail "a rejected submission: exit $st: $(cat "$tmp/rejected.txt")"
grep -q "sbatch array-1.sbatch failed" "$tmp/rejected.txt" || fail "rejected: $(cat "$tmp/rejected.txt")"
grep -q "cancelled the arrays submitted before it" "$tmp/rejected.txt" || fail "not cancelled: $(cat "$tmp/rejected.txt")"
sleep 1
left=$(squeue -h -n cibench-fleet-rejected -t PENDING,RUNNING -o %i | wc -l)
[ "$left" = 0 ] || fail "$left jobs of the rejected fleet still queued"

# ---- no Slurm: a clear message, nothing written --------------------------------------------
set +e
env PATH=/nonexistent "$CIBENCH" fleet slurm "$tmp/quick.toml" --hosts "$tmp/hosts.toml" --dir "$tmp/noslurm" --submit \
  >"$tmp/noslurm.txt" 2>&1
st=$?
set -e
[ "$st" = 1 ] || fail "without Slurm: exit $st"
grep -q "Slurm is not installed here (no sbatch on PATH): nothing written or submitted" "$tmp/noslurm.txt" ||
  fail "without Slurm: $(cat "$tmp/noslurm.txt")"
[ ! -e "$tmp/noslurm" ] || fail "without Slurm, the fleet folder was written"
echo "PASS"
