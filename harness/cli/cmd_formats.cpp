// cibench formats: the weight-format table, with the ISA level whose kernels run for each row.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "engines/core/cpu.h"
#include "engines/core/format.h"
#include "harness/cli/command.h"

namespace cibench::cli {
namespace cmd_formats {

int run_formats(bool json) {
  const Isa isa = active_isa();
  nlohmann::json rows = nlohmann::json::array();
  if (!json) {
    std::printf("| format | block | bytes/block | bits/weight | activations | kernels at %s | description |\n",
                isa_name(isa));
    std::printf("|---|---|---|---|---|---|---|\n");
  }
  for (const FormatRow& f : format_table()) {
    if (json) {
      rows.push_back({{"name", f.name},
                      {"block_size", f.block_size},
                      {"bytes_per_block", f.bytes_per_block},
                      {"bits_per_weight", f.bits_per_weight},
                      {"activations", act_type_name(f.act_at(isa))},
                      {"kernel_isa", isa_name(f.kernel_isa_at(isa))},
                      {"description", f.description}});
    } else {
      std::printf("| %s | %lld | %zu | %.2f | %s | %s | %s |\n", f.name,
                  static_cast<long long>(f.block_size), f.bytes_per_block, f.bits_per_weight,
                  act_type_name(f.act_at(isa)), isa_name(f.kernel_isa_at(isa)), f.description);
    }
  }
  if (json) std::cout << nlohmann::json{{"isa", isa_name(isa)}, {"formats", rows}}.dump(2) << "\n";
  return 0;
}

const RegisterCommand reg{{"formats", "list the weight-format table",
                           [](CLI::App& sub) -> std::function<int()> {
                             auto json = std::make_shared<bool>(false);
                             sub.add_flag("--json", *json, "JSON output");
                             return [json] { return run_formats(*json); };
                           }}};

}  // namespace cmd_formats
}  // namespace cibench::cli
