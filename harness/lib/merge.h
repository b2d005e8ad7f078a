#pragma once
// Folding results stores into one (`cibench merge`, `cibench fleet collect`): every run of every
// source with all its rows (variants, counters, requests, histograms) and its provenance, under
// new run and variant ids, with a mapping back to each source (merge_sources, merge_variants).
//
// A run is known by its identity, not its id: runs.run_uid (schema 14), or for a run written
// before there was one, a digest of its host, start time, process id, scenario and model. Merging
// a store twice adds nothing; two stores holding the same identity with different contents
// collide, and the merge is refused. Sources are read, never written: one of an older schema is
// copied and the copy migrated. Everything is one transaction on the output: an error leaves it as
// it was (and a new output file is removed).
#include <cstdint>
#include <string>
#include <vector>

#include "engines/core/error.h"
#include "harness/lib/store.h"  // Fields

namespace cibench {

class MergeError : public Error {
 public:
  using Error::Error;
};

struct MergedRun {
  std::string source;       // the source file as given
  int64_t source_run_id = 0;
  int64_t run_id = 0;       // in the output
  bool added = false;       // false: the output already held it (same identity, same contents)
  std::string identity;     // run_uid, or "legacy:<digest>"
};

struct MergeSourceInfo {
  std::string path;
  int schema = 0;         // as found (older ones were migrated on a copy)
  int64_t runs = 0;
};

struct MergeResult {
  std::vector<MergeSourceInfo> sources;
  std::vector<MergedRun> runs;
  int64_t added = 0, already = 0;
  int64_t variants = 0, requests = 0;  // rows added
};

// Merges `sources` into the store at `output` (created when absent). Throws MergeError naming the
// file (and run) for: a missing or unreadable file, a file that is not a cibench store, a schema
// newer than this cibench, an output that is also a source, a run whose identity is in the output
// with different contents, a host type priced differently in two stores.
// `host_types`: rows of the host_types table to record in the same transaction (fleet collect: the
// hosts file's prices), refused like a source's when the output prices a host type otherwise.
MergeResult merge_stores(const std::vector<std::string>& sources, const std::string& output,
                         const std::vector<Fields>& host_types = {});

// The identity of a runs row: its run_uid, or for a row without one "legacy:" and a digest of
// hostname, started_utc, pid, scenario_hash and model_spec.
std::string run_identity(const std::string& run_uid, const std::string& hostname, const std::string& started_utc,
                         const std::string& pid, const std::string& scenario_hash, const std::string& model_spec);

}  // namespace cibench
