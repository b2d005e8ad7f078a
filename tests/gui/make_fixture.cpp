// cibench-gui-fixture PATH [--serving] [--speculative] [--fleet]: writes the test fixture database (known
// values, real schema) to PATH, for trying cibench-gui and `cibench report` without running a
// scenario; --serving adds the serving run (three ways to batch a decoder at stepped rates),
// --speculative the speculative-decoding run (an off variant and two drafters at k = 2 and 4),
// --fleet one stepped scenario on two priced host types, all described in
// tests/gui/reports_fixture.h.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "tests/gui/reports_fixture.h"

int main(int argc, char** argv) {
  bool serving = false, speculative = false, fleet = false, ok = argc >= 2;
  for (int i = 2; i < argc && ok; ++i) {
    const std::string a = argv[i];
    if (a == "--serving") serving = true;
    else if (a == "--speculative") speculative = true;
    else if (a == "--fleet") fleet = true;
    else ok = false;
  }
  if (!ok) {
    std::fprintf(stderr, "usage: cibench-gui-fixture PATH [--serving] [--speculative] [--fleet]\n");
    return 2;
  }
  try {
    if (std::filesystem::exists(argv[1])) {
      std::fprintf(stderr, "cibench-gui-fixture: %s exists; not overwriting\n", argv[1]);
      return 1;
    }
    const auto ids = cibench::test::make_reports_fixture(argv[1]);
    std::printf("wrote %s: runs %lld (formats, hostA), %lld (formats, hostB), %lld (threads), %lld (stepped)\n",
                argv[1], static_cast<long long>(ids.run_formats), static_cast<long long>(ids.run_formats_b),
                static_cast<long long>(ids.run_threads), static_cast<long long>(ids.run_stepped));
    if (serving)
      std::printf("wrote run %lld (serving)\n", static_cast<long long>(cibench::test::make_serving_fixture(argv[1]).run));
    if (speculative)
      std::printf("wrote run %lld (speculative)\n",
                  static_cast<long long>(cibench::test::make_speculative_fixture(argv[1]).run));
    if (fleet) {
      const auto f = cibench::test::make_fleet_fixture(argv[1]);
      std::printf("wrote runs %lld (fleet, host type small), %lld (fleet, host type large)\n",
                  static_cast<long long>(f.run_small), static_cast<long long>(f.run_large));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cibench-gui-fixture: %s\n", e.what());
    return 1;
  }
  return 0;
}
