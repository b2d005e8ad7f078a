#pragma once
// Writing a file the user named (a report, an export, a .cbq) without harming what is there:
// the bytes go to PATH.tmp.PID beside it and are renamed over PATH only when every byte was
// written. A failed or interrupted write leaves the old file as it was; an existing PATH that is
// a symlink is replaced as a link, its target is never written through. Errors name the file
// and the system's reason.
#include <fstream>
#include <string>

namespace cibench {

class ReplacingFile {
 public:
  // `what` names the file in errors ("the report", "the quantised model file").
  ReplacingFile(const std::string& path, const std::string& what);
  ~ReplacingFile();  // removes the temporary file unless commit() succeeded
  ReplacingFile(const ReplacingFile&) = delete;
  ReplacingFile& operator=(const ReplacingFile&) = delete;

  std::ostream& stream() { return out_; }
  // Flushes, closes and renames over the path; throws FileError on any failure.
  void commit();

 private:
  std::string path_, tmp_, what_;
  std::ofstream out_;
  bool committed_ = false;
};

// The whole text at once.
void write_file_replacing(const std::string& path, const std::string& text, const std::string& what);

}  // namespace cibench
