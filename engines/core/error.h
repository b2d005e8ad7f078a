#pragma once
// Errors are exceptions that carry the values that did not match; only main() decides to exit.
#include <sstream>
#include <stdexcept>
#include <string>

namespace cibench {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A file could not be read or is malformed; the message names the file and the problem.
class FileError : public Error {
 public:
  FileError(const std::string& path, const std::string& what)
      : Error(path + ": " + what), path_(path) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... R>
void append(std::ostringstream& os, const T& v, const R&... rest) {
  os << v;
  append(os, rest...);
}
}  // namespace detail

// str("expected ", a, " got ", b) -> std::string
template <typename... A>
std::string str(const A&... a) {
  std::ostringstream os;
  detail::append(os, a...);
  return os.str();
}

}  // namespace cibench

#define CIBENCH_CHECK(cond, ...)                                    \
  do {                                                              \
    if (!(cond)) throw ::cibench::Error(::cibench::str(__VA_ARGS__)); \
  } while (0)
