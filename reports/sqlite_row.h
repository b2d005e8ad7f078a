#pragma once
// One SQLite result row as typed cells, shared by the writer (harness/lib/store) and the reader
// (reports/query) so both see the same types for the same column. Header-only: the reports
// library stays free of the harness and the engine.
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace cibench {

using SqlCell = std::variant<std::monostate, int64_t, double, std::string>;

// The current row of `st` (after sqlite3_step returned SQLITE_ROW): INTEGER -> int64_t,
// FLOAT -> double, NULL -> monostate, TEXT and BLOB -> string.
inline std::vector<SqlCell> sqlite_row(sqlite3_stmt* st) {
  const int nc = sqlite3_column_count(st);
  std::vector<SqlCell> row;
  row.reserve(static_cast<size_t>(nc));
  for (int i = 0; i < nc; ++i) {
    switch (sqlite3_column_type(st, i)) {
      case SQLITE_INTEGER: row.emplace_back(static_cast<int64_t>(sqlite3_column_int64(st, i))); break;
      case SQLITE_FLOAT: row.emplace_back(sqlite3_column_double(st, i)); break;
      case SQLITE_NULL: row.emplace_back(std::monostate{}); break;
      default: {
        const unsigned char* t = sqlite3_column_text(st, i);
        row.emplace_back(std::string(t ? reinterpret_cast<const char*>(t) : ""));
      }
    }
  }
  return row;
}

}  // namespace cibench
