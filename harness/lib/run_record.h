#pragma once
// The runs row every stored result hangs from, shared by `cibench run` (a scenario's suite) and
// by the measurement commands `bench`, `recipes` and `bert-recipes` with --db: the build, the
// machine (with the reason for each knob that could not be read) and the process, in the
// columns of harness/schema/migrations.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include "harness/lib/store.h"
#include "harness/lib/sysinfo.h"
#include "harness/schema/slo.h"

namespace cibench {

// model_hash, model_container, model_params of a runs row for a model source (a LlamaSource or a
// BertSource: content_hash, container, config.parameter_count()).
template <class Source>
Fields model_fields(const Source& src) {
  return {{"model_hash", src.content_hash},
          {"model_container", src.container},
          {"model_params", static_cast<int64_t>(src.config.parameter_count())}};
}

// variants.calibration: the JSON record of the calibration data a recipe used.
std::string calibration_json(const std::string& slice, int64_t docs, const std::string& text_hash, int samples,
                             int seq_len, uint64_t seed, const std::string& token_hash);

// cibench_version .. warnings and pid of a runs row, from `si` and this build.
Fields run_provenance_fields(const SystemInfo& si);
// Where the process runs (schema 14): host_type (CIBENCH_HOST_TYPE), the Slurm job, array task,
// partition, node and CPUs per task it runs in (SLURM_* variables), the binding asked for
// (SLURM_CPU_BIND or CIBENCH_CPU_BIND) and the CPUs it may run on (sched_getaffinity:
// cpu_affinity "0-3,8", affinity_cpus 5). NULL where unset.
Fields placement_fields();
// CIBENCH_CPUS=N (the fleet batch scripts set it to the host type's CPUs per task): when the
// process may run on more than N CPUs (a cluster whose Slurm does not bind, TaskPlugin=task/none),
// it is restricted to the first N of them. Returns what was done ("" when nothing); throws on a
// malformed value.
std::string apply_cpu_limit_from_env();
// A new run's identity across stores: 32 hex digits from the system's random source.
std::string new_run_uid();
// "0-3,8,10-11" for {0,1,2,3,8,10,11}.
std::string cpu_list_text(const std::vector<int>& cpus);

// "cibench bench --models a b" with arguments that need it single-quoted: the command line as a
// user would type it again.
std::string shell_command_line(const std::vector<std::string>& argv);

// A measurement command's results in the store: one runs row of `kind` (bench, recipes,
// bert-recipes) with the command line, the provenance, `model_spec` and `model` (model_fields),
// then one variants row per result as it is measured (each in its own transaction, so an
// interrupted command keeps what it measured). finish() marks the run complete; a CommandRun
// destroyed unfinished (an exception) marks it failed with the error given to fail() or a note
// that it stopped early. Throws StoreError naming the file when the store cannot be written.
class CommandRun {
 public:
  CommandRun(const std::string& db_path, const std::string& kind, const std::vector<std::string>& argv,
             const std::string& model_spec, const Fields& model, const std::vector<QualityFloor>& floors = {});
  ~CommandRun();
  CommandRun(const CommandRun&) = delete;
  CommandRun& operator=(const CommandRun&) = delete;

  int64_t run_id() const { return run_id_; }
  const std::string& path() const { return store_.path(); }
  // One result: `label` and its columns (format, threads, measures...). Returns the variant_id.
  int64_t add(const std::string& label, const Fields& fields);
  // Marks the run complete; returns "stored as run N in PATH" for the command to print.
  std::string finish();
  void fail(const std::string& error);

 private:
  Store store_;
  int64_t run_id_ = 0;
  int next_index_ = 0;
  bool ended_ = false;
};

}  // namespace cibench
