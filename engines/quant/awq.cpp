#include "engines/quant/awq.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "engines/core/error.h"

namespace cibench {

void scale_columns(float* w, int64_t rows, int64_t cols, const float* s) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) w[r * cols + j] *= s[j];
}

void tie_channels(std::vector<float>& v, const std::vector<int64_t>& tie, bool use_max) {
  if (tie.empty()) return;
  CIBENCH_CHECK(tie.size() == v.size(), "tie classes: ", tie.size(), " entries for ", v.size(),
                " channels");
  std::map<int64_t, std::pair<double, int64_t>> acc;
  for (size_t j = 0; j < v.size(); ++j) {
    auto& a = acc[tie[j]];
    a.first = use_max ? std::max(a.first, static_cast<double>(v[j])) : a.first + v[j];
    ++a.second;
  }
  for (size_t j = 0; j < v.size(); ++j) {
    const auto& a = acc[tie[j]];
    v[j] = static_cast<float>(use_max ? a.first : a.first / static_cast<double>(a.second));
  }
}

double output_sq_error(const float* w, const float* w_hat, int64_t rows, int64_t cols,
                       const float* x, int64_t nx, MatmulRunner& runner) {
  std::vector<float> d(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < d.size(); ++i) d[i] = w_hat[i] - w[i];
  return output_energy(d.data(), rows, cols, x, nx, runner);
}

double output_energy(const float* w, int64_t rows, int64_t cols, const float* x, int64_t nx,
                     MatmulRunner& runner) {
  const WeightMatrix m = pack_matrix("err", w, rows, cols, format_by_name("f32"));
  double total = 0;
  const int64_t chunk = 64;
  std::vector<float> y(static_cast<size_t>(chunk * rows));
  runner.reserve(chunk, cols);
  for (int64_t i0 = 0; i0 < nx; i0 += chunk) {
    const int64_t m_rows = std::min(chunk, nx - i0);
    runner.matmul(m, x + i0 * cols, cols, m_rows, y.data(), rows);
    for (int64_t i = 0; i < m_rows * rows; ++i) total += static_cast<double>(y[i]) * y[i];
  }
  return total;
}

AwqResult awq_search(const std::vector<MatView>& ws, int64_t cols, const float* x, int64_t nx,
                     const float* mean_abs, const QuantGrid& grid, const AwqOptions& opts,
                     const std::vector<int64_t>& tie, MatmulRunner& runner) {
  CIBENCH_CHECK(opts.grid >= 1, "awq: grid must be >= 1, got ", opts.grid);
  std::vector<float> stat(mean_abs, mean_abs + cols);
  for (float& v : stat) v = std::max(v, 1e-8f);
  tie_channels(stat, tie, false);
  AwqResult res;
  for (const MatView& m : ws) res.ref_energy += output_energy(m.w, m.rows, cols, x, nx, runner);
  std::vector<float> s(static_cast<size_t>(cols)), tmp;
  for (int gi = 0; gi <= opts.grid; ++gi) {
    const double a = static_cast<double>(gi) / opts.grid;
    float smax = 0, smin = 1e30f;
    for (int64_t j = 0; j < cols; ++j) {
      s[j] = static_cast<float>(std::pow(static_cast<double>(stat[j]), a));
      smax = std::max(smax, s[j]);
      smin = std::min(smin, s[j]);
    }
    const float norm = std::sqrt(smax * smin);  // centre the scales around 1
    for (float& v : s) v = std::max(v / norm, 1e-4f);
    double err = 0;
    for (const MatView& m : ws) {
      tmp.assign(m.w, m.w + m.rows * cols);
      scale_columns(tmp.data(), m.rows, cols, s.data());
      grid.round_matrix(tmp.data(), m.rows, cols);
      for (int64_t r = 0; r < m.rows; ++r)
        for (int64_t j = 0; j < cols; ++j) tmp[r * cols + j] /= s[j];
      err += output_sq_error(m.w, tmp.data(), m.rows, cols, x, nx, runner);
    }
    if (gi == 0) {
      res.rtn_err = err;
      res.err = err;
      res.scales.assign(static_cast<size_t>(cols), 1.f);
      res.exponent = 0;
    } else if (err < res.err) {
      res.err = err;
      res.scales = s;
      res.exponent = a;
    }
  }
  return res;
}

}  // namespace cibench
