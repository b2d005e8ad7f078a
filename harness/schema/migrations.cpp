// The results schema: every table and column of the store, as the ordered list of migrations
// that builds it. Read with docs/schema.md.
#include "harness/schema/migrations.h"

#include <iterator>

namespace cibench {
namespace {

const Migration kMigrations[] = {
    {1, "runs, variants (one row per variant result), counters (long), requests, histograms", R"SQL(
CREATE TABLE runs (
  run_id            INTEGER PRIMARY KEY,
  status            TEXT NOT NULL CHECK (status IN ('running','complete','incomplete','failed')),
  started_utc       TEXT NOT NULL,
  finished_utc      TEXT,
  error             TEXT,
  scenario_name     TEXT NOT NULL,
  scenario_path     TEXT,
  scenario_hash     TEXT NOT NULL,
  scenario_toml     TEXT NOT NULL,
  question          TEXT,
  overrides         TEXT,
  pattern           TEXT,
  seed_arrivals     INTEGER,
  seed_samples      INTEGER,
  seed_lengths      INTEGER,
  model_spec        TEXT NOT NULL,
  model_hash        TEXT,
  model_container   TEXT,
  model_params      INTEGER,
  cibench_version   TEXT,
  cibench_commit    TEXT,
  compiler          TEXT,
  cxx_flags         TEXT,
  build_type        TEXT,
  sanitizer         TEXT,
  hostname          TEXT,
  kernel            TEXT,
  cpu_vendor        TEXT,
  cpu_model         TEXT,
  cpu_flags         TEXT,
  isa_best          TEXT,
  isa_active        TEXT,
  logical_cpus      INTEGER,
  physical_cores    INTEGER,
  physical_cores_reason TEXT,
  mem_total_bytes   INTEGER,
  governor          TEXT,
  governor_reason   TEXT,
  turbo             TEXT,
  turbo_reason      TEXT,
  smt               TEXT,
  smt_reason        TEXT,
  thp               TEXT,
  thp_reason        TEXT,
  pid               INTEGER,
  warnings          TEXT
);
CREATE TABLE variants (
  variant_id        INTEGER PRIMARY KEY,
  run_id            INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
  variant_index     INTEGER NOT NULL,
  step_index        INTEGER NOT NULL DEFAULT 0,
  label             TEXT NOT NULL,
  status            TEXT NOT NULL CHECK (status IN ('running','ok','failed','incomplete')),
  error             TEXT,
  started_utc       TEXT,
  finished_utc      TEXT,
  format            TEXT,
  sparsity          REAL,
  threads           INTEGER,
  workers           INTEGER,
  kv_mode           TEXT,
  isa_requested     TEXT,
  isa_used          TEXT,
  pinning           TEXT,
  pattern           TEXT,
  offered_qps       REAL,
  clients           INTEGER,
  queries           INTEGER,
  failed_queries    INTEGER,
  duration_s        REAL,
  achieved_qps      REAL,
  prompt_tokens     INTEGER,
  output_tokens     INTEGER,
  tokens_per_s      REAL,
  latency_mean_ms REAL, latency_p50_ms REAL, latency_p90_ms REAL, latency_p95_ms REAL,
  latency_p99_ms REAL, latency_p999_ms REAL, latency_max_ms REAL,
  queue_mean_ms REAL, queue_p50_ms REAL, queue_p90_ms REAL, queue_p95_ms REAL,
  queue_p99_ms REAL, queue_p999_ms REAL, queue_max_ms REAL,
  service_mean_ms REAL, service_p50_ms REAL, service_p90_ms REAL, service_p95_ms REAL,
  service_p99_ms REAL, service_p999_ms REAL, service_max_ms REAL,
  ttft_mean_ms REAL, ttft_p50_ms REAL, ttft_p90_ms REAL, ttft_p95_ms REAL,
  ttft_p99_ms REAL, ttft_p999_ms REAL, ttft_max_ms REAL,
  tpot_mean_ms REAL, tpot_p50_ms REAL, tpot_p90_ms REAL, tpot_p95_ms REAL,
  tpot_p99_ms REAL, tpot_p999_ms REAL, tpot_max_ms REAL,
  percentile_estimator TEXT,
  peak_rss_bytes    INTEGER,
  weight_bytes      INTEGER,
  kv_cache_bytes    INTEGER,
  valid             INTEGER,
  validity_reasons  TEXT,
  slo_met           INTEGER,
  slo_report        TEXT,
  knee_qps          REAL,
  counters_mode     TEXT,
  counters_queries  INTEGER,
  acc_kind          TEXT,
  acc_eval_set      TEXT,
  acc_tokens        INTEGER,
  kl_mean           REAL,
  kl_p99            REAL,
  top1_agreement    REAL,
  ppl               REAL,
  ppl_ref           REAL,
  ppl_ratio         REAL,
  task_accuracy     REAL,
  quality_verdict   TEXT,
  quality_reasons   TEXT,
  acc_unavailable_reason TEXT,
  UNIQUE (run_id, variant_index, step_index)
);
CREATE INDEX variants_run ON variants(run_id);
CREATE TABLE counters (
  variant_id        INTEGER NOT NULL REFERENCES variants(variant_id) ON DELETE CASCADE,
  name              TEXT NOT NULL,
  phase             TEXT NOT NULL,
  scope             TEXT NOT NULL,
  value             REAL,
  unit              TEXT,
  source            TEXT NOT NULL,
  unavailable_reason TEXT,
  CHECK ((value IS NULL) = (unavailable_reason IS NOT NULL))
);
CREATE INDEX counters_variant ON counters(variant_id);
CREATE TABLE requests (
  variant_id        INTEGER NOT NULL REFERENCES variants(variant_id) ON DELETE CASCADE,
  seq               INTEGER NOT NULL,
  query_index       INTEGER NOT NULL,
  worker            INTEGER NOT NULL,
  sample_index      INTEGER,
  prompt_tokens     INTEGER,
  output_tokens     INTEGER,
  ok                INTEGER NOT NULL,
  scheduled_ms      REAL NOT NULL,
  queue_ms          REAL,
  service_ms        REAL,
  latency_ms        REAL,
  ttft_ms           REAL,
  tpot_ms           REAL
);
CREATE INDEX requests_variant ON requests(variant_id);
CREATE TABLE histograms (
  variant_id        INTEGER NOT NULL REFERENCES variants(variant_id) ON DELETE CASCADE,
  metric            TEXT NOT NULL,
  bucket_low_ns     INTEGER NOT NULL,
  bucket_high_ns    INTEGER NOT NULL,
  count             INTEGER NOT NULL
);
CREATE INDEX histograms_variant ON histograms(variant_id);
CREATE TABLE schema_migrations (
  version           INTEGER PRIMARY KEY,
  description       TEXT NOT NULL,
  applied_utc       TEXT NOT NULL
);
)SQL"},
    {2, "variants: recipe, recipe_params, calibration, quantized_file (how the weights were made)", R"SQL(
ALTER TABLE variants ADD COLUMN recipe TEXT;
ALTER TABLE variants ADD COLUMN recipe_params TEXT;
ALTER TABLE variants ADD COLUMN calibration TEXT;
ALTER TABLE variants ADD COLUMN quantized_file TEXT;
)SQL"},
    {3, "variants: classifier serving (shape, batching, result cache, traffic duplicates) and task accuracy with bootstrap intervals", R"SQL(
ALTER TABLE variants ADD COLUMN shape TEXT;
ALTER TABLE variants ADD COLUMN pad_to INTEGER;
ALTER TABLE variants ADD COLUMN max_batch INTEGER;
ALTER TABLE variants ADD COLUMN max_wait_ms REAL;
ALTER TABLE variants ADD COLUMN batches INTEGER;
ALTER TABLE variants ADD COLUMN cache_enabled INTEGER;
ALTER TABLE variants ADD COLUMN cache_limit_entries INTEGER;
ALTER TABLE variants ADD COLUMN cache_limit_bytes INTEGER;
ALTER TABLE variants ADD COLUMN cache_hits INTEGER;
ALTER TABLE variants ADD COLUMN cache_misses INTEGER;
ALTER TABLE variants ADD COLUMN cache_hit_rate REAL;
ALTER TABLE variants ADD COLUMN cache_evictions INTEGER;
ALTER TABLE variants ADD COLUMN cache_entries INTEGER;
ALTER TABLE variants ADD COLUMN cache_bytes INTEGER;
ALTER TABLE variants ADD COLUMN cache_peak_bytes INTEGER;
ALTER TABLE variants ADD COLUMN traffic TEXT;
ALTER TABLE variants ADD COLUMN duplicate_rate REAL;
ALTER TABLE variants ADD COLUMN expected_duplicate_rate REAL;
ALTER TABLE variants ADD COLUMN task_accuracy_lo REAL;
ALTER TABLE variants ADD COLUMN task_accuracy_hi REAL;
ALTER TABLE variants ADD COLUMN macro_f1 REAL;
ALTER TABLE variants ADD COLUMN ref_task_accuracy REAL;
ALTER TABLE variants ADD COLUMN accuracy_delta REAL;
ALTER TABLE variants ADD COLUMN accuracy_delta_lo REAL;
ALTER TABLE variants ADD COLUMN accuracy_delta_hi REAL;
ALTER TABLE variants ADD COLUMN bootstrap_resamples INTEGER;
)SQL"},
    {4, "runs: the SLOs and quality floors in force, typed (JSON written by harness/schema/slo.h)", R"SQL(
ALTER TABLE runs ADD COLUMN slos_json TEXT;
ALTER TABLE runs ADD COLUMN floors_json TEXT;
)SQL"},
    {5, "runs.kind and runs.command: results of bench, recipes and bert-recipes stored beside scenario runs; "
        "variants: their measures (prefill/decode rates, roofline, recipe errors, reference timings)", R"SQL(
ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'scenario'
  CHECK (kind IN ('scenario','bench','recipes','bert-recipes'));
ALTER TABLE runs ADD COLUMN command TEXT;
ALTER TABLE variants ADD COLUMN repetitions INTEGER;
ALTER TABLE variants ADD COLUMN prefill_tokens_per_s REAL;
ALTER TABLE variants ADD COLUMN prefill_tokens_per_s_sd REAL;
ALTER TABLE variants ADD COLUMN decode_tokens_per_s REAL;
ALTER TABLE variants ADD COLUMN decode_tokens_per_s_sd REAL;
ALTER TABLE variants ADD COLUMN streamed_bytes_per_token INTEGER;
ALTER TABLE variants ADD COLUMN read_bandwidth_gb_s REAL;
ALTER TABLE variants ADD COLUMN decode_roofline_tokens_per_s REAL;
ALTER TABLE variants ADD COLUMN roofline_fraction REAL;
ALTER TABLE variants ADD COLUMN ref_decode_tokens_per_s REAL;
ALTER TABLE variants ADD COLUMN ref_latency_p50_ms REAL;
ALTER TABLE variants ADD COLUMN eval_tokens_per_s REAL;
ALTER TABLE variants ADD COLUMN calib_rel_err REAL;
ALTER TABLE variants ADD COLUMN rtn_calib_rel_err REAL;
ALTER TABLE variants ADD COLUMN quantize_s REAL;
ALTER TABLE variants ADD COLUMN off_grid_weights INTEGER;
)SQL"},
    {6, "variants: peak_rss_load_bytes (the resident peak with the build; peak_rss_bytes is the peak while serving), "
        "peak_rss_reason (why a peak is NULL), knee_reached (whether a stepped load found its knee below the highest rate)", R"SQL(
ALTER TABLE variants ADD COLUMN peak_rss_load_bytes INTEGER;
ALTER TABLE variants ADD COLUMN peak_rss_reason TEXT;
ALTER TABLE variants ADD COLUMN knee_reached INTEGER;
)SQL"},
    {7, "variants: serving measures: inter-token latency (itl_*), goodput_qps and slo_attainment (requests meeting "
        "every SLO), requests in flight and queued (mean, max), the arrival process; NULL with a reason when unmeasured", R"SQL(
ALTER TABLE variants ADD COLUMN itl_count INTEGER;
ALTER TABLE variants ADD COLUMN itl_mean_ms REAL;
ALTER TABLE variants ADD COLUMN itl_p50_ms REAL;
ALTER TABLE variants ADD COLUMN itl_p90_ms REAL;
ALTER TABLE variants ADD COLUMN itl_p95_ms REAL;
ALTER TABLE variants ADD COLUMN itl_p99_ms REAL;
ALTER TABLE variants ADD COLUMN itl_p999_ms REAL;
ALTER TABLE variants ADD COLUMN itl_max_ms REAL;
ALTER TABLE variants ADD COLUMN itl_reason TEXT;
ALTER TABLE variants ADD COLUMN goodput_qps REAL;
ALTER TABLE variants ADD COLUMN slo_attainment REAL;
ALTER TABLE variants ADD COLUMN goodput_reason TEXT;
ALTER TABLE variants ADD COLUMN inflight_mean REAL;
ALTER TABLE variants ADD COLUMN inflight_max INTEGER;
ALTER TABLE variants ADD COLUMN queue_depth_mean REAL;
ALTER TABLE variants ADD COLUMN queue_depth_max INTEGER;
ALTER TABLE variants ADD COLUMN concurrency_reason TEXT;
ALTER TABLE variants ADD COLUMN arrival_process TEXT;
)SQL"},
    {8, "variants: decoder batching (batching none/static/continuous, max_tokens_per_step, kv_pool_tokens, kv_policy, "
        "batch_timeout_ms) and what the scheduler did (engine_steps, preemptions, batch and KV pool occupancy); "
        "NULL with batching_reason when unmeasured", R"SQL(
ALTER TABLE variants ADD COLUMN batching TEXT;
ALTER TABLE variants ADD COLUMN max_tokens_per_step INTEGER;
ALTER TABLE variants ADD COLUMN kv_pool_tokens INTEGER;
ALTER TABLE variants ADD COLUMN kv_policy TEXT;
ALTER TABLE variants ADD COLUMN batch_timeout_ms REAL;
ALTER TABLE variants ADD COLUMN engine_steps INTEGER;
ALTER TABLE variants ADD COLUMN preemptions INTEGER;
ALTER TABLE variants ADD COLUMN batch_occupancy_mean REAL;
ALTER TABLE variants ADD COLUMN batch_occupancy_max INTEGER;
ALTER TABLE variants ADD COLUMN kv_occupancy_mean REAL;
ALTER TABLE variants ADD COLUMN kv_occupancy_max REAL;
ALTER TABLE variants ADD COLUMN batching_reason TEXT;
)SQL"},
    {9, "variants: prefix caching (prefix_cache on/off; admissions that looked up and hit the cache, prompt tokens "
        "offered and attached instead of computed, the token hit rate, cached blocks evicted); NULL with "
        "prefix_cache_reason when unmeasured; the batching engine's mean forward step (forward_ms_mean) and its "
        "scheduling time per forward time (scheduler_overhead)", R"SQL(
ALTER TABLE variants ADD COLUMN prefix_cache INTEGER;
ALTER TABLE variants ADD COLUMN prefix_cache_lookups INTEGER;
ALTER TABLE variants ADD COLUMN prefix_cache_hits INTEGER;
ALTER TABLE variants ADD COLUMN prefix_cache_prompt_tokens INTEGER;
ALTER TABLE variants ADD COLUMN prefix_cache_hit_tokens INTEGER;
ALTER TABLE variants ADD COLUMN prefix_cache_hit_rate REAL;
ALTER TABLE variants ADD COLUMN prefix_cache_evictions INTEGER;
ALTER TABLE variants ADD COLUMN prefix_cache_reason TEXT;
ALTER TABLE variants ADD COLUMN forward_ms_mean REAL;
ALTER TABLE variants ADD COLUMN scheduler_overhead REAL;
)SQL"},
    {10, "variants: speculative decoding (the drafter, draft tokens per verification) and what it did over the timed "
         "run (tokens drafted and accepted, acceptance rate, mean accepted length, acceptance by draft position, "
         "target and draft forward passes, draft and verify time shares); its decode speed-up against the variant "
         "of the same build without speculation in the same run (mean and p95 TPOT ratios); NULL with a reason when "
         "unmeasured", R"SQL(
ALTER TABLE variants ADD COLUMN speculative TEXT;
ALTER TABLE variants ADD COLUMN draft_tokens INTEGER;
ALTER TABLE variants ADD COLUMN spec_drafted INTEGER;
ALTER TABLE variants ADD COLUMN spec_accepted INTEGER;
ALTER TABLE variants ADD COLUMN spec_draft_steps INTEGER;
ALTER TABLE variants ADD COLUMN spec_verify_steps INTEGER;
ALTER TABLE variants ADD COLUMN spec_acceptance REAL;
ALTER TABLE variants ADD COLUMN spec_mean_accepted_length REAL;
ALTER TABLE variants ADD COLUMN spec_acceptance_by_position TEXT;
ALTER TABLE variants ADD COLUMN spec_target_forwards INTEGER;
ALTER TABLE variants ADD COLUMN spec_draft_forwards INTEGER;
ALTER TABLE variants ADD COLUMN spec_draft_share REAL;
ALTER TABLE variants ADD COLUMN spec_verify_share REAL;
ALTER TABLE variants ADD COLUMN spec_reason TEXT;
ALTER TABLE variants ADD COLUMN spec_baseline_variant_id INTEGER;
ALTER TABLE variants ADD COLUMN spec_speedup REAL;
ALTER TABLE variants ADD COLUMN spec_speedup_p95 REAL;
ALTER TABLE variants ADD COLUMN spec_speedup_reason TEXT;
)SQL"},
    {11, "variants: a peer engine measured side by side (cibench bench --peer): which (engine, version, binary, the "
         "model file and its type, its weight bytes, its flags and command line), its prefill and decode rates "
         "(medians, sd), cibench / peer ratios with a paired bootstrap 95 % interval, its fraction of the decode "
         "roofline, and every repetition's pair (JSON)", R"SQL(
ALTER TABLE variants ADD COLUMN peer_engine TEXT;
ALTER TABLE variants ADD COLUMN peer_version TEXT;
ALTER TABLE variants ADD COLUMN peer_binary TEXT;
ALTER TABLE variants ADD COLUMN peer_model TEXT;
ALTER TABLE variants ADD COLUMN peer_type TEXT;
ALTER TABLE variants ADD COLUMN peer_weight_bytes INTEGER;
ALTER TABLE variants ADD COLUMN peer_flags TEXT;
ALTER TABLE variants ADD COLUMN peer_command TEXT;
ALTER TABLE variants ADD COLUMN peer_prefill_tokens_per_s REAL;
ALTER TABLE variants ADD COLUMN peer_prefill_tokens_per_s_sd REAL;
ALTER TABLE variants ADD COLUMN peer_decode_tokens_per_s REAL;
ALTER TABLE variants ADD COLUMN peer_decode_tokens_per_s_sd REAL;
ALTER TABLE variants ADD COLUMN peer_prefill_ratio REAL;
ALTER TABLE variants ADD COLUMN peer_prefill_ratio_lo REAL;
ALTER TABLE variants ADD COLUMN peer_prefill_ratio_hi REAL;
ALTER TABLE variants ADD COLUMN peer_decode_ratio REAL;
ALTER TABLE variants ADD COLUMN peer_decode_ratio_lo REAL;
ALTER TABLE variants ADD COLUMN peer_decode_ratio_hi REAL;
ALTER TABLE variants ADD COLUMN peer_roofline_fraction REAL;
ALTER TABLE variants ADD COLUMN peer_samples TEXT;
)SQL"},
    {12, "variants: the conversion of a quantised source's weights (GGUF blocks) into the variant's formats: "
         "weight_conversion_rel_rms (relative RMS error of the packed weights against the stored values, all "
         "classes), weight_conversion (JSON per class), weight_conversion_reason (why they are NULL)", R"SQL(
ALTER TABLE variants ADD COLUMN weight_conversion_rel_rms REAL;
ALTER TABLE variants ADD COLUMN weight_conversion TEXT;
ALTER TABLE variants ADD COLUMN weight_conversion_reason TEXT;
)SQL"},
    {13, "variants: repacked_weight_bytes, the weights the kernels laid out again beside the packed matrices while "
         "serving (AMX tiles, the 16-row decode layout), resident on top of weight_bytes", R"SQL(
ALTER TABLE variants ADD COLUMN repacked_weight_bytes INTEGER;
)SQL"},
    {14, "fleets: runs.run_uid (a run's identity across stores, which cibench merge keys on), runs.host_type (the "
         "host type a fleet task ran as) and the Slurm job it ran in (job, array job and task, partition, node, "
         "CPUs per task, exclusive, the CPU binding asked for) beside the CPUs the process could run on "
         "(cpu_affinity, affinity_cpus); host_types (each host type's price per hour and where it comes from); "
         "merge_sources and merge_variants (each merged run's and variant's store and id there)", R"SQL(
ALTER TABLE runs ADD COLUMN run_uid TEXT;
ALTER TABLE runs ADD COLUMN host_type TEXT;
ALTER TABLE runs ADD COLUMN slurm_job_id TEXT;
ALTER TABLE runs ADD COLUMN slurm_array_job_id TEXT;
ALTER TABLE runs ADD COLUMN slurm_array_task_id INTEGER;
ALTER TABLE runs ADD COLUMN slurm_partition TEXT;
ALTER TABLE runs ADD COLUMN slurm_node TEXT;
ALTER TABLE runs ADD COLUMN slurm_cpus_per_task INTEGER;
ALTER TABLE runs ADD COLUMN slurm_exclusive INTEGER;
ALTER TABLE runs ADD COLUMN cpu_bind TEXT;
ALTER TABLE runs ADD COLUMN cpu_affinity TEXT;
ALTER TABLE runs ADD COLUMN affinity_cpus INTEGER;
CREATE UNIQUE INDEX runs_uid ON runs(run_uid);
CREATE TABLE host_types (
  name              TEXT PRIMARY KEY,
  price_per_hour    REAL NOT NULL CHECK (price_per_hour >= 0),
  currency          TEXT NOT NULL,
  source            TEXT,
  slurm_partition   TEXT,
  slurm_constraint  TEXT,
  cpus_per_task     INTEGER,
  exclusive         INTEGER,
  hosts_file        TEXT,
  updated_utc       TEXT NOT NULL
);
CREATE TABLE merge_sources (
  run_id            INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
  source_path       TEXT NOT NULL,
  source_run_id     INTEGER NOT NULL,
  source_schema     INTEGER NOT NULL,
  merged_utc        TEXT NOT NULL
);
CREATE INDEX merge_sources_run ON merge_sources(run_id);
CREATE TABLE merge_variants (
  variant_id        INTEGER NOT NULL REFERENCES variants(variant_id) ON DELETE CASCADE,
  source_path       TEXT NOT NULL,
  source_variant_id INTEGER NOT NULL
);
CREATE INDEX merge_variants_variant ON merge_variants(variant_id);
)SQL"},
    {15, "variants: a decoder's task accuracy on the scenario's task file (accuracy.task; the metric in "
         "task_accuracy with its bootstrap interval, the paired delta against the reference build in accuracy_delta, as "
         "for classifiers): task_file, task_format (cibench-mc, hellaswag, cibench-gen), task_metric (acc_norm, acc, "
         "exact_match, contains), task_items, task_mcnemar_p (McNemar's exact test against the reference on the same "
         "items), task_items_per_s", R"SQL(
ALTER TABLE variants ADD COLUMN task_file TEXT;
ALTER TABLE variants ADD COLUMN task_format TEXT;
ALTER TABLE variants ADD COLUMN task_metric TEXT;
ALTER TABLE variants ADD COLUMN task_items INTEGER;
ALTER TABLE variants ADD COLUMN task_mcnemar_p REAL;
ALTER TABLE variants ADD COLUMN task_items_per_s REAL;
)SQL"},
};
}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> m(std::begin(kMigrations), std::end(kMigrations));
  return m;
}

}  // namespace cibench
