#pragma once
// Sub-commands of `cibench` register themselves here, one source file each (cmd_*.cpp), so the
// command line grows without a central list. A command's run function returns the exit code;
// errors are exceptions, turned into a message and exit code 1 by main().
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace cibench::cli {

struct Command {
  std::string name;
  std::string help;
  // Declares options on `sub` and returns the action to run after parsing.
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& command_registry();

// The command line this process was started with ("cibench", "bench", ...): stored with the
// results of a command that writes to the store.
std::vector<std::string>& invocation();

struct RegisterCommand {
  explicit RegisterCommand(Command c) { command_registry().push_back(std::move(c)); }
};

}  // namespace cibench::cli
