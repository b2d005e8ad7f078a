#!/usr/bin/env bash
# End to end: the shipped scenarios/speculative-stories.toml (stories5M speculating with
# stories260K, its own int4 weights and prompt lookup), shortened with --set. Checks the stored
# rows (acceptance = accepted / drafted, acceptance by position of k entries, the speed-up the
# ratio of the plain row's mean TPOT to the variant's, the plain row's reason), that cibench show
# prints the speculative table naming the lowest TPOT p95, and that a scenario combining
# speculation with continuous batching, or a draft model of another vocabulary, is refused with
# the key named and nothing stored.
# Usage: harness_speculative.sh PATH-TO-CIBENCH SHARED-DIR
set -euo pipefail
CIBENCH=$1
export CIBENCH_SHARED=${2:-${CIBENCH_SHARED:-}}
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/r.sqlite
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 "$db" "$1"; }

if [ ! -e "$CIBENCH_SHARED/models/stories5M/stories5M.bin" ]; then
  [ -n "${CI:-}" ] && fail "missing $CIBENCH_SHARED/models/stories5M"
  echo "skip: no shared models"; exit 0
fi

scenario=$here/scenarios/speculative-stories.toml
"$CIBENCH" run "$scenario" --db "$db" -q --set 'matrix.draft_tokens=[2,4]' --set run.min_queries=3 \
  --set run.min_duration_ms=0 --set run.warmup_queries=1 --set workload.gen_tokens=24

[ "$(q 'SELECT status FROM runs')" = "complete" ] || fail "run status"
[ "$(q "SELECT COUNT(*) FROM variants WHERE status = 'ok'")" = "7" ] || fail "7 variants ok: $(q 'SELECT label, status, error FROM variants')"
[ "$(q "SELECT speculative || '|' || IFNULL(draft_tokens, 'null') || '|' || spec_reason FROM variants WHERE variant_index = 0")" = \
  "off|null|speculative decoding off" ] || fail "plain row: $(q 'SELECT speculative, draft_tokens, spec_reason FROM variants WHERE variant_index = 0')"
# Every speculative row: acceptance from its counts, k positions, the speed-up from the stored TPOTs.
bad=$(q "SELECT v.label FROM variants v JOIN variants b ON b.variant_id = v.spec_baseline_variant_id
         WHERE v.draft_tokens IS NOT NULL AND NOT (
           ABS(v.spec_acceptance - CAST(v.spec_accepted AS REAL) / v.spec_drafted) < 1e-12
           AND json_array_length(v.spec_acceptance_by_position) = v.draft_tokens
           AND ABS(v.spec_speedup - b.tpot_mean_ms / v.tpot_mean_ms) < 1e-9 * v.spec_speedup
           AND v.spec_draft_share >= 0 AND v.spec_verify_share > 0 AND v.spec_draft_share + v.spec_verify_share <= 1
           AND b.speculative = 'off')")
[ -z "$bad" ] || fail "speculative rows inconsistent: $bad"
[ "$(q "SELECT COUNT(*) FROM variants WHERE draft_tokens IS NOT NULL AND spec_speedup IS NOT NULL")" = "6" ] || fail "6 speed-ups"
# Prompt lookup runs no draft model; the model drafters do.
[ "$(q "SELECT SUM(spec_draft_forwards) FROM variants WHERE speculative LIKE 'lookup%'")" = "0" ] || fail "lookup forwards"
[ "$(q "SELECT MIN(spec_draft_forwards) > 0 FROM variants WHERE speculative LIKE 'self%' OR speculative LIKE 'draft%'")" = "1" ] || fail "draft forwards"

"$CIBENCH" show last --db "$db" >"$tmp/show.txt" || fail "show"
grep -q "^speculative decoding" "$tmp/show.txt" || fail "show has no speculative table"
grep -q "lowest TPOT p95: f32 t1 w1" "$tmp/show.txt" || fail "show names the lowest TPOT p95"
grep -q "spec=draft:stories260K.bin k2" "$tmp/show.txt" || fail "draft model labelled by its file name"

# Refused before anything is stored: speculation with continuous batching, a draft of another vocabulary.
before=$(q 'SELECT COUNT(*) FROM runs')
if "$CIBENCH" run "$scenario" --db "$db" -q --set 'matrix.batching=["continuous"]' 2>"$tmp/e1"; then fail "batching accepted"; fi
grep -q "key 'matrix.speculative': speculative decoding runs with batching \"none\"" "$tmp/e1" || fail "batching error: $(cat "$tmp/e1")"
if "$CIBENCH" run "$scenario" --db "$db" -q --set 'matrix.speculative=["off","draft:synthetic:tinystories-15m"]' 2>"$tmp/e2"; then
  fail "vocabulary mismatch accepted"
fi
grep -q "draft model synthetic:tinystories-15m has a vocabulary of 32000 tokens" "$tmp/e2" || fail "vocabulary error: $(cat "$tmp/e2")"
[ "$(q 'SELECT COUNT(*) FROM runs')" = "$before" ] || fail "a refused scenario stored a run"
echo "ok"
