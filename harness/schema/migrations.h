#pragma once
// The schema of the results store, defined once: an ordered list of migrations, version N being
// the state after migration N (PRAGMA user_version). The store (harness/lib/store) applies them;
// the readers (reports/, the GUI) check the version against the oldest they read. Never edit a
// migration that has shipped: append one (and document it in docs/schema.md).
#include <vector>

namespace cibench {

struct Migration {
  int version;
  const char* description;
  const char* sql;
};

const std::vector<Migration>& migrations();

// The version a store has after every migration (the last one's).
constexpr int kSchemaVersion = 15;

}  // namespace cibench
