#include "harness/lib/build_info.h"

#include "build_info_gen.h"

namespace cibench {

const BuildInfo& build_info() {
  static const BuildInfo b{CIBENCH_GIT_COMMIT, CIBENCH_COMPILER, CIBENCH_CXX_FLAGS,
                           CIBENCH_BUILD_TYPE, CIBENCH_SANITIZER, "0.1.0"};
  return b;
}

}  // namespace cibench
