#include "engines/quant/smoothquant.h"

#include <algorithm>
#include <cmath>

#include "engines/core/error.h"

namespace cibench {

std::vector<float> smoothquant_scales(const std::vector<MatView>& ws, int64_t cols,
                                      const float* act_absmax, double alpha,
                                      const std::vector<int64_t>& tie) {
  CIBENCH_CHECK(alpha >= 0.0 && alpha <= 1.0, "smoothquant: alpha must be in [0, 1], got ", alpha);
  std::vector<float> xmax(act_absmax, act_absmax + cols), wmax(static_cast<size_t>(cols), 0.f);
  for (const MatView& m : ws)
    for (int64_t r = 0; r < m.rows; ++r)
      for (int64_t j = 0; j < cols; ++j) wmax[j] = std::max(wmax[j], std::fabs(m.w[r * cols + j]));
  tie_channels(xmax, tie, true);
  tie_channels(wmax, tie, true);
  std::vector<float> s(static_cast<size_t>(cols), 1.f);
  for (int64_t j = 0; j < cols; ++j) {
    if (!(xmax[j] > 0.f) || !(wmax[j] > 0.f)) continue;
    const double v = std::pow(static_cast<double>(xmax[j]), alpha) /
                     std::pow(static_cast<double>(wmax[j]), 1.0 - alpha);
    s[j] = static_cast<float>(std::clamp(v, 1e-5, 1e5));
  }
  return s;
}

}  // namespace cibench
