#include "engines/core/output_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "engines/core/error.h"

namespace cibench {

namespace fs = std::filesystem;

ReplacingFile::ReplacingFile(const std::string& path, const std::string& what)
    : path_(path), tmp_(str(path, ".tmp.", ::getpid())), what_(what) {
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw FileError(path, str("cannot write ", what, ": the folder ", parent.string(), " does not exist"));
  if (fs::is_directory(path, ec)) throw FileError(path, str("cannot write ", what, ": a folder is in the way"));
  fs::remove(tmp_, ec);
  errno = 0;
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) throw FileError(path, str("cannot write ", what, ": ", errno ? std::strerror(errno) : "open failed"));
}

ReplacingFile::~ReplacingFile() {
  if (committed_) return;
  out_.close();
  std::error_code ec;
  fs::remove(tmp_, ec);
}

void ReplacingFile::commit() {
  errno = 0;
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  const std::string why = errno ? std::strerror(errno) : "write failed";
  out_.close();
  if (!ok || out_.fail()) throw FileError(path_, str("cannot write ", what_, ": ", why));
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw FileError(path_, str("cannot replace ", what_, ": ", std::strerror(errno)));
  committed_ = true;
}

void write_file_replacing(const std::string& path, const std::string& text, const std::string& what) {
  ReplacingFile f(path, what);
  f.stream() << text;
  f.commit();
}

}  // namespace cibench
