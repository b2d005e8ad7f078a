#pragma once
// What build produced this binary: commit, compiler, flags, build type, sanitizer.
#include <string>

namespace cibench {

struct BuildInfo {
  std::string commit;
  std::string compiler;
  std::string cxx_flags;
  std::string build_type;
  std::string sanitizer;
  std::string version;
};

const BuildInfo& build_info();

}  // namespace cibench
