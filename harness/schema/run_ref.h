#pragma once
// How a run is named on the command line, in the GUI and in reports: its id, "last", or "last~N"
// (the N-th before the last). One parser for the store and the readers.
#include <cstdint>
#include <string>

namespace cibench {

struct RunRef {
  int64_t id = 0;    // > 0 when the run was named by id
  int64_t back = 0;  // otherwise: how many runs before the last (0 = the last)
  bool by_id() const { return id > 0; }
  // Throws Error ("run 'x': expected a run id, 'last' or 'last~N' with N >= 0").
  static RunRef parse(const std::string& ref);
};

}  // namespace cibench
