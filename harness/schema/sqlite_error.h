#pragma once
// What an SQLite failure on a results database means, for the user: SQLite's message, and for
// the failures with a cause outside cibench a hint at it (a full disk, a damaged file).
#include <string>

struct sqlite3;

namespace cibench {

// sqlite3_errmsg(db), followed for I/O errors and a full disk by the free space of the
// filesystem holding `path` ("disk I/O error (4 KiB free where PATH is: is the disk full?)"),
// and for a damaged file by "(the file is damaged or not an SQLite database)".
std::string sqlite_error_text(sqlite3* db, const std::string& path);

}  // namespace cibench
