// cibench: the command line. Each sub-command lives in its own cmd_*.cpp and registers itself.
#include <algorithm>
#include <exception>
#include <iostream>
#include <map>

#include "harness/cli/command.h"
#include "harness/lib/build_info.h"

namespace cibench::cli {
std::vector<Command>& command_registry() {
  static std::vector<Command> r;
  return r;
}
std::vector<std::string>& invocation() {
  static std::vector<std::string> v;
  return v;
}
}  // namespace cibench::cli

int main(int argc, char** argv) {
  using namespace cibench::cli;
  invocation().assign(argv, argv + argc);
  if (!invocation().empty()) invocation()[0] = "cibench";
  CLI::App app{"cibench: which build of your model meets your latency, throughput and quality "
               "targets on this CPU"};
  app.set_version_flag("--version", "cibench " + cibench::build_info().version + " (" +
                                        cibench::build_info().commit + ")");
  app.require_subcommand(1);
  auto& cmds = command_registry();
  std::sort(cmds.begin(), cmds.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  std::map<CLI::App*, std::function<int()>> actions;
  for (auto& c : cmds) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    actions[sub] = c.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, action] : actions)
      if (sub->parsed()) return action();
  } catch (const std::exception& e) {
    std::cerr << "cibench: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
