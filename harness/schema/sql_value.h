#pragma once
// One SQL value as cibench reads and writes it: NULL, integer, real or text. The writer
// (harness/lib/store) and the readers (reports/, the GUI) use this one type; NULL means "not
// measured" and no helper here ever turns it into 0.
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace cibench {

using SqlValue = std::variant<std::monostate, int64_t, double, std::string>;

inline SqlValue sql_null() { return std::monostate{}; }

template <typename T>
SqlValue sql_opt(const std::optional<T>& v) {
  if (!v) return std::monostate{};
  if constexpr (std::is_integral_v<T>) return static_cast<int64_t>(*v);
  else if constexpr (std::is_floating_point_v<T>) return static_cast<double>(*v);
  else return std::string(*v);
}

// A number from an INTEGER or REAL cell; nullopt for NULL and text.
inline std::optional<double> sql_number(const SqlValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&v)) return *d;
  return std::nullopt;
}

// The current row of `st` (after sqlite3_step returned SQLITE_ROW): INTEGER -> int64_t,
// FLOAT -> double, NULL -> monostate, TEXT and BLOB -> string.
inline std::vector<SqlValue> sqlite_row(sqlite3_stmt* st) {
  const int nc = sqlite3_column_count(st);
  std::vector<SqlValue> row;
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
