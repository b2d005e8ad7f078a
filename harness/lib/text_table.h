#pragma once
// A plain text table for the console commands (list, show, compare).
#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

namespace cibench {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& os) const {
    std::vector<size_t> w;
    for (const auto& r : rows_)
      for (size_t i = 0; i < r.size(); ++i) {
        if (w.size() <= i) w.push_back(0);
        w[i] = std::max(w[i], r[i].size());
      }
    for (size_t k = 0; k < rows_.size(); ++k) {
      const auto& r = rows_[k];
      for (size_t i = 0; i < r.size(); ++i) {
        os << r[i];
        if (i + 1 < r.size()) os << std::string(w[i] - r[i].size() + 2, ' ');
      }
      os << "\n";
      if (k == 0) {
        size_t total = 0;
        for (size_t i = 0; i < w.size(); ++i) total += w[i] + (i + 1 < w.size() ? 2 : 0);
        os << std::string(total, '-') << "\n";
      }
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace cibench
