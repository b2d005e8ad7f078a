#include "harness/lib/run_record.h"

#include <unistd.h>

#include "harness/lib/build_info.h"
#include "harness/lib/scenario.h"

namespace cibench {

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
          {"warnings", warnings.empty() ? sql_null() : SqlValue(warnings)}};
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
