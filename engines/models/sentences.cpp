#include "engines/models/sentences.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "engines/core/buffer.h"
#include "engines/core/error.h"

namespace cibench {

std::vector<LabelledText> read_labelled_sentences(const std::string& path, bool* is_tsv) {
  std::istringstream in(read_file(path));
  std::string line;
  std::vector<LabelledText> out;
  int text_col = -1, label_col = -1;
  bool first = true;
  for (int ln = 1; std::getline(in, line); ++ln) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> cols;
    for (size_t pos = 0;;) {
      const size_t tab = line.find('\t', pos);
      cols.push_back(line.substr(pos, tab == std::string::npos ? std::string::npos : tab - pos));
      if (tab == std::string::npos) break;
      pos = tab + 1;
    }
    if (first) {
      first = false;
      for (size_t i = 0; i < cols.size(); ++i) {
        if (cols[i] == "sentence" || cols[i] == "text") text_col = static_cast<int>(i);
        if (cols[i] == "label") label_col = static_cast<int>(i);
      }
      if (text_col >= 0) continue;  // a header; otherwise the file is plain text
    }
    if (line.empty()) continue;
    LabelledText e;
    if (text_col < 0) {
      e.text = line;
    } else {
      if (static_cast<int>(cols.size()) <= std::max(text_col, label_col))
        throw FileError(path, str("line ", ln, " has ", cols.size(), " columns, the header names ",
                                  std::max(text_col, label_col) + 1));
      e.text = cols[static_cast<size_t>(text_col)];
      if (label_col >= 0) {
        const std::string& l = cols[static_cast<size_t>(label_col)];
        char* end = nullptr;
        const long v = std::strtol(l.c_str(), &end, 10);
        if (l.empty() || *end != '\0' || v < 0 || v > (1 << 20))
          throw FileError(path, str("line ", ln, ": label '", l, "' is not a class index (integer >= 0)"));
        e.label = static_cast<int>(v);
      }
    }
    out.push_back(std::move(e));
  }
  if (is_tsv) *is_tsv = text_col >= 0;
  return out;
}

}  // namespace cibench
