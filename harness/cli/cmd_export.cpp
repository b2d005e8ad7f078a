// cibench export RUN --format csv|json [--table variants|requests|counters|histograms] [-o FILE]
#include <iostream>
#include <memory>

#include "engines/core/output_file.h"
#include "harness/cli/command.h"
#include "harness/lib/store.h"
#include "harness/lib/suite.h"

namespace cibench::cli {
namespace cmd_export {

struct Args {
  std::string run;
  std::string db = "results/cibench.sqlite";
  std::string format = "csv";
  std::string table = "variants";
  std::string output;
};

std::string csv_field(const SqlValue& v) {
  std::string s = sql_to_string(v);
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

RegisterCommand reg{Command{
    "export", "Export a run as CSV (one table) or JSON (run, variants and counters)",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<Args>();
      sub.add_option("run", a->run, "Run id, 'last' or 'last~N'")->required();
      sub.add_option("--db", a->db, "Results database")->capture_default_str();
      sub.add_option("--format", a->format, "csv or json")->check(CLI::IsMember({"csv", "json"}))->capture_default_str();
      sub.add_option("--table", a->table, "Table for CSV: variants, requests, counters, histograms")
          ->check(CLI::IsMember({"variants", "requests", "counters", "histograms"}))
          ->capture_default_str();
      sub.add_option("-o,--output", a->output, "Write to this file instead of stdout");
      return [a]() {
        Store st(a->db, false);
        const int64_t id = st.resolve_run(a->run);
        std::unique_ptr<ReplacingFile> file;
        if (!a->output.empty()) file = std::make_unique<ReplacingFile>(a->output, "the export");
        std::ostream& os = file ? file->stream() : std::cout;
        if (a->format == "json") {
          nlohmann::json j;
          j["schema_version"] = st.schema_version();
          j["run"] = st.query("SELECT * FROM runs WHERE run_id = ?", {id}).to_json()[0];
          j["variants"] = nlohmann::json::array();
          for (const auto& r : st.query("SELECT variant_id FROM variants WHERE run_id = ? ORDER BY variant_index, step_index", {id}).rows) {
            const int64_t vid = std::get<int64_t>(r[0]);
            nlohmann::json v = variant_summary_json(st, vid);
            v["counters"] = st.query("SELECT name, phase, scope, value, unit, source, unavailable_reason FROM counters "
                                     "WHERE variant_id = ? ORDER BY rowid", {vid}).to_json();
            j["variants"].push_back(v);
          }
          os << j.dump(2) << "\n";
          if (file) file->commit();
          return 0;
        }
        const std::string sql =
            a->table == "variants"
                ? "SELECT * FROM variants WHERE run_id = ? ORDER BY variant_index, step_index"
                : "SELECT t.* FROM " + a->table + " t JOIN variants v USING (variant_id) WHERE v.run_id = ? ORDER BY t.rowid";
        const QueryResult r = st.query(sql, {id});
        for (size_t i = 0; i < r.columns.size(); ++i) os << (i ? "," : "") << r.columns[i];
        os << "\n";
        for (const auto& row : r.rows) {
          for (size_t i = 0; i < row.size(); ++i) os << (i ? "," : "") << csv_field(row[i]);
          os << "\n";
        }
        if (file) file->commit();
        return 0;
      };
    }}};

}  // namespace cmd_export
}  // namespace cibench::cli
