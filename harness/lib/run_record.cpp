#include "harness/lib/run_record.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <random>

#include "harness/lib/build_info.h"
#include "harness/lib/scenario.h"

namespace cibench {
namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

std::string new_run_uid() {
  std::random_device rd;  // /dev/urandom on Linux
  std::string out;
  static const char* hex = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {  // 128 bits
    const uint32_t w = rd();
    for (int b = 0; b < 4; ++b) out += hex[(w >> (8 * b + 4)) & 15], out += hex[(w >> (8 * b)) & 15];
  }
  return out;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

Fields placement_fields() {
  Fields f;
  const auto text_or_null = [](const std::string& s) { return s.empty() ? sql_null() : SqlValue(s); };
  const auto int_or_null = [](const std::string& s) -> SqlValue {
    char* end = nullptr;
    const long long v = s.empty() ? 0 : std::strtoll(s.c_str(), &end, 10);
    return s.empty() || *end ? sql_null() : SqlValue(static_cast<int64_t>(v));
  };
  f.push_back({"host_type", text_or_null(env_or_empty("CIBENCH_HOST_TYPE"))});
  f.push_back({"slurm_job_id", text_or_null(env_or_empty("SLURM_JOB_ID"))});
  f.push_back({"slurm_array_job_id", text_or_null(env_or_empty("SLURM_ARRAY_JOB_ID"))});
  f.push_back({"slurm_array_task_id", int_or_null(env_or_empty("SLURM_ARRAY_TASK_ID"))});
  f.push_back({"slurm_partition", text_or_null(env_or_empty("SLURM_JOB_PARTITION"))});
  f.push_back({"slurm_node", text_or_null(env_or_empty("SLURMD_NODENAME"))});
  f.push_back({"slurm_cpus_per_task", int_or_null(env_or_empty("SLURM_CPUS_PER_TASK"))});
  // Set by the batch scripts `cibench fleet slurm` writes (Slurm itself does not export it).
  f.push_back({"slurm_exclusive", int_or_null(env_or_empty("CIBENCH_SLURM_EXCLUSIVE"))});
  // The binding asked for: Slurm's (SLURM_CPU_BIND, set under srun --cpu-bind) or the fleet
  // script's; the CPUs the process may run on are what it got.
  std::string bind = env_or_empty("CIBENCH_CPU_BIND");
  if (bind.empty()) bind = env_or_empty("SLURM_CPU_BIND");
  f.push_back({"cpu_bind", text_or_null(bind)});
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    f.push_back({"cpu_affinity", cpu_list_text(cpus)});
    f.push_back({"affinity_cpus", static_cast<int64_t>(cpus.size())});
  }
  return f;
}

std::string apply_cpu_limit_from_env() {
  const std::string want = env_or_empty("CIBENCH_CPUS");
  if (want.empty()) return "";
  char* end = nullptr;
  const long n = std::strtol(want.c_str(), &end, 10);
  if (*end || n < 1) throw Error(str("CIBENCH_CPUS='", want, "': expected a whole number of CPUs, at least 1"));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "";
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (static_cast<long>(cpus.size()) <= n) return "";
  cpu_set_t narrow;
  CPU_ZERO(&narrow);
  for (long i = 0; i < n; ++i) CPU_SET(cpus[static_cast<size_t>(i)], &narrow);
  if (sched_setaffinity(0, sizeof narrow, &narrow) != 0)
    throw Error(str("CIBENCH_CPUS=", n, ": cannot restrict the process to ", n, " CPUs (sched_setaffinity failed)"));
  cpus.resize(static_cast<size_t>(n));
  return str("CIBENCH_CPUS=", n, ": the process could run on ", CPU_COUNT(&set), " CPUs (no binding by the "
             "scheduler); restricted to CPUs ", cpu_list_text(cpus));
}

Fields run_provenance_fields(const SystemInfo& si) {
  const BuildInfo& b = build_info();
  std::string warnings;
  for (const auto& w : si.warnings) warnings += (warnings.empty() ? "" : "; ") + w;
  auto readable = [](const Readable& r) { return r.value ? SqlValue(*r.value) : sql_null(); };
  auto reason = [](const Readable& r) { return r.value ? sql_null() : SqlValue(r.reason); };
  auto readable_int = [](const Readable& r) {
    return r.value ? SqlValue(static_cast<int64_t>(std::stoll(*r.value))) : sql_null();
  };
  return {{"cibench_version", b.version},
          {"cibench_commit", b.commit},
          {"compiler", b.compiler},
          {"cxx_flags", b.cxx_flags},
          {"build_type", b.build_type},
          {"sanitizer", b.sanitizer.empty() ? sql_null() : SqlValue(b.sanitizer)},
          {"hostname", si.hostname},
          {"kernel", si.kernel},
          {"cpu_vendor", si.cpu_vendor},
          {"cpu_model", si.cpu_model},
          {"cpu_flags", si.cpu_flags},
          {"isa_best", si.isa_best},
          {"isa_active", si.isa_active},
          {"logical_cpus", int64_t{si.logical_cpus}},
          {"physical_cores", readable_int(si.physical_cores)},
          {"physical_cores_reason", reason(si.physical_cores)},
          {"mem_total_bytes", readable_int(si.mem_total_bytes)},
          {"governor", readable(si.governor)},
          {"governor_reason", reason(si.governor)},
          {"turbo", readable(si.turbo)},
          {"turbo_reason", reason(si.turbo)},
          {"smt", readable(si.smt)},
          {"smt_reason", reason(si.smt)},
          {"thp", readable(si.thp)},
          {"thp_reason", reason(si.thp)},
          {"pid", static_cast<int64_t>(getpid())},
          {"warnings", warnings.empty() ? sql_null() : SqlValue(warnings)},
          {"run_uid", new_run_uid()}};
}

std::string calibration_json(const std::string& slice, int64_t docs, const std::string& text_hash, int samples,
                             int seq_len, uint64_t seed, const std::string& token_hash) {
  return nlohmann::json{{"slice", slice},     {"docs", docs},       {"text_hash", text_hash},
                        {"samples", samples}, {"seq_len", seq_len}, {"seed", seed},
                        {"token_hash", token_hash}}
      .dump();
}

std::string shell_command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    const bool plain = !a.empty() && a.find_first_not_of(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/@+%") == std::string::npos;
    std::string q;
    if (plain) {
      q = a;
    } else {
      q.push_back('\'');
      for (char c : a) {
        if (c == '\'')
          q += "'\\''";  // close the quote, an escaped quote, reopen
        else
          q.push_back(c);
      }
      q.push_back('\'');
    }
    if (!out.empty()) out += ' ';
    out += q;
  }
  return out;
}

CommandRun::CommandRun(const std::string& db_path, const std::string& kind, const std::vector<std::string>& argv,
                       const std::string& model_spec, const Fields& model, const std::vector<QualityFloor>& floors)
    : store_(db_path) {
  const std::string line = shell_command_line(argv);
  Fields run{{"status", std::string("running")},
             {"started_utc", utc_now_iso()},
             {"kind", kind},
             {"command", line},
             // Not a scenario: the name is the command, the hash is the command line's and there
             // is no scenario text.
             {"scenario_name", kind},
             {"scenario_hash", fnv1a_hex(line)},
             {"scenario_toml", std::string()},
             {"slos_json", std::string("[]")},
             {"floors_json", floors_to_json(floors).dump()},
             {"model_spec", model_spec}};
  for (auto& f : run_provenance_fields(collect_system_info())) run.push_back(std::move(f));
  for (auto& f : placement_fields()) run.push_back(std::move(f));
  for (const auto& f : model) run.push_back(f);
  Store::Transaction t(store_);
  run_id_ = store_.insert("runs", run);
  t.commit();
}

CommandRun::~CommandRun() {
  if (ended_) return;
  try {
    fail("the command stopped before it finished");
  } catch (...) {
  }
}

int64_t CommandRun::add(const std::string& label, const Fields& fields) {
  Fields row{{"run_id", run_id_},
             {"variant_index", int64_t{next_index_++}},
             {"label", label},
             {"status", std::string("ok")},
             {"finished_utc", utc_now_iso()}};
  for (const auto& f : fields) row.push_back(f);
  Store::Transaction t(store_);
  const int64_t id = store_.insert("variants", row);
  t.commit();
  return id;
}

std::string CommandRun::finish() {
  Store::Transaction t(store_);
  store_.update("runs", "run_id", run_id_, {{"status", std::string("complete")}, {"finished_utc", utc_now_iso()}});
  t.commit();
  ended_ = true;
  return str("stored as run ", run_id_, " in ", store_.path());
}

void CommandRun::fail(const std::string& error) {
  ended_ = true;
  Store::Transaction t(store_);
  store_.update("runs", "run_id", run_id_,
                {{"status", std::string("failed")}, {"finished_utc", utc_now_iso()}, {"error", error}});
  t.commit();
}

}  // namespace cibench
