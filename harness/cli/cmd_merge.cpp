// cibench merge A.sqlite B.sqlite ... -o fleet.sqlite [--json]: folds results stores into one
// (harness/lib/merge.h): every run with its provenance under new ids, mapped back to its source.
#include <iostream>

#include "harness/cli/command.h"
#include "harness/lib/merge.h"
#include "harness/lib/store.h"
#include "harness/lib/text_table.h"

namespace cibench::cli {
namespace cmd_merge {

struct Args {
  std::vector<std::string> sources;
  std::string output;
  bool json = false;
};

RegisterCommand reg{Command{
    "merge", "Fold results stores into one (runs keyed on their identity: merging a store twice adds nothing)",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<Args>();
      sub.add_option("stores", a->sources, "Stores to merge (read, never written; older schemas migrated on a copy)")
          ->required();
      sub.add_option("-o,--output", a->output, "The merged store (created when absent, else added to)")->required();
      sub.add_flag("--json", a->json, "JSON on stdout");
      return [a]() {
        const MergeResult r = merge_stores(a->sources, a->output);
        if (a->json) {
          nlohmann::json j{{"output", a->output}, {"added", r.added}, {"already", r.already},
                           {"variants", r.variants}, {"requests", r.requests}};
          for (const auto& s : r.sources) j["sources"].push_back({{"path", s.path}, {"schema", s.schema}, {"runs", s.runs}});
          for (const auto& m : r.runs)
            j["runs"].push_back({{"source", m.source}, {"source_run", m.source_run_id}, {"run", m.run_id},
                                 {"added", m.added}, {"identity", m.identity}});
          std::cout << j.dump(2) << "\n";
          return 0;
        }
        for (const auto& s : r.sources)
          std::cout << s.path << ": " << s.runs << " runs, schema " << s.schema
                    << (s.schema < kSchemaVersion ? " (migrated on a copy)" : "") << "\n";
        TextTable t({"source", "source run", "run", ""});
        for (const auto& m : r.runs)
          t.add({m.source, std::to_string(m.source_run_id), std::to_string(m.run_id),
                 m.added ? "added" : "already there"});
        t.print(std::cout);
        std::cout << a->output << ": " << r.added << " runs added (" << r.variants << " variant rows, " << r.requests
                  << " requests), " << r.already << " already there\n";
        return 0;
      };
    }}};

}  // namespace cmd_merge
}  // namespace cibench::cli
