// Fuzz target for the scenario reader and the fleet's hosts file reader: each input is parsed as a
// scenario file's text (TOML, then every key checked), once more with a --set override made of its
// first line, and as a hosts file (harness/lib/fleet.h). A
// cibench::Error (ScenarioError) is the expected way to reject a bad text; any other exception, a
// crash, a hang or a sanitizer report is a bug. Nothing is run and no file is written.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engines/core/error.h"
#include "harness/lib/fleet.h"
#include "harness/lib/scenario.h"
#include "tests/fuzz/fuzz_support.h"

// The text is read as a file of scenarios/ (CIBENCH_FUZZ_SCENARIO_DIR), so that a shipped
// scenario's paths beside it (tasks/...) resolve as they do for the file itself.
#ifndef CIBENCH_FUZZ_SCENARIO_DIR
#define CIBENCH_FUZZ_SCENARIO_DIR "."
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  cibench::fuzz::rejecting_errors([&] { cibench::parse_scenario_text(text, CIBENCH_FUZZ_SCENARIO_DIR "/fuzz.toml"); });
  const std::string first = text.substr(0, text.find('\n'));
  cibench::fuzz::rejecting_errors(
      [&] { cibench::parse_scenario_text("[model]\nsource = \"sut:null\"\n", "fuzz.toml", {first}); });
  cibench::fuzz::rejecting_errors([&] { cibench::parse_hosts_text(text, "fuzz-hosts.toml"); });
  return 0;
}
