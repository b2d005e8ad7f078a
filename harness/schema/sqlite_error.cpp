#include "harness/schema/sqlite_error.h"

#include <sqlite3.h>
#include <sys/statvfs.h>

#include <filesystem>

#include "engines/core/error.h"

namespace cibench {

std::string sqlite_error_text(sqlite3* db, const std::string& path) {
  if (!db) return "out of memory opening the database";
  std::string msg = sqlite3_errmsg(db);
  const int code = sqlite3_extended_errcode(db) & 0xff;
  if (code == SQLITE_IOERR || code == SQLITE_FULL || code == SQLITE_CANTOPEN) {
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (dir.empty()) dir = ".";
    struct statvfs st {};
    if (::statvfs(dir.c_str(), &st) == 0) {
      const double free_bytes = static_cast<double>(st.f_bavail) * static_cast<double>(st.f_frsize);
      const char* unit = free_bytes >= 1 << 30 ? "GiB" : free_bytes >= 1 << 20 ? "MiB" : "KiB";
      const double div = free_bytes >= 1 << 30 ? 1 << 30 : free_bytes >= 1 << 20 ? 1 << 20 : 1 << 10;
      msg += str(" (", static_cast<long long>(free_bytes / div), " ", unit, " free where ", path, " is",
                 free_bytes < (1 << 20) ? ": is the disk full?" : "", ")");
    }
  } else if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) {
    msg += " (the file is damaged or not an SQLite database)";
  }
  return msg;
}

}  // namespace cibench
