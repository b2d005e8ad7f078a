#include "harness/schema/run_ref.h"

#include "engines/core/error.h"

namespace cibench {

RunRef RunRef::parse(const std::string& ref) {
  auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 15 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  RunRef r;
  if (ref == "last") return r;
  if (ref.rfind("last~", 0) == 0 && digits(ref.substr(5))) {
    r.back = std::stoll(ref.substr(5));
    return r;
  }
  if (digits(ref) && std::stoll(ref) > 0) {
    r.id = std::stoll(ref);
    return r;
  }
  throw Error(str("run '", ref, "': expected a run id, 'last' or 'last~N' with N >= 0"));
}

}  // namespace cibench
