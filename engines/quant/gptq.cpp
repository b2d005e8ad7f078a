#include "engines/quant/gptq.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engines/core/error.h"

namespace cibench {
namespace {

// In-place lower Cholesky factor of a symmetric (n x n) matrix; false if not positive definite.
bool cholesky_lower(std::vector<double>& a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (int64_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0.0)) return false;
    d = std::sqrt(d);
    a[j * n + j] = d;
    for (int64_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      const double* ai = &a[i * n];
      const double* aj = &a[j * n];
      for (int64_t k = 0; k < j; ++k) s -= ai[k] * aj[k];
      a[i * n + j] = s / d;
    }
    for (int64_t i = 0; i < j; ++i) a[i * n + j] = 0.0;
  }
  return true;
}

// The upper Cholesky factor U of H^-1 (H^-1 = U^T U), the form GPTQ's updates use.
bool inverse_upper_cholesky(const std::vector<double>& h, int64_t n, std::vector<double>& u) {
  std::vector<double> l = h;
  if (!cholesky_lower(l, n)) return false;
  // inv(L) by forward substitution, column by column (lower triangular).
  std::vector<double> li(static_cast<size_t>(n * n), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    li[j * n + j] = 1.0 / l[j * n + j];
    for (int64_t i = j + 1; i < n; ++i) {
      double s = 0;
      for (int64_t k = j; k < i; ++k) s += l[i * n + k] * li[k * n + j];
      li[i * n + j] = -s / l[i * n + i];
    }
  }
  // H^-1 = inv(L)^T inv(L)
  std::vector<double> hi(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      double s = 0;
      for (int64_t k = i; k < n; ++k) s += li[k * n + i] * li[k * n + j];
      hi[i * n + j] = hi[j * n + i] = s;
    }
  if (!cholesky_lower(hi, n)) return false;
  u.assign(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) u[j * n + i] = hi[i * n + j];  // U = L^T
  return true;
}

}  // namespace

GptqResult gptq_quantize(float* w, int64_t rows, int64_t cols, const double* xtx,
                         const QuantGrid& grid, const GptqOptions& opts, const uint8_t* keep) {
  CIBENCH_CHECK(opts.damp >= 0.0, "gptq: damping must be >= 0, got ", opts.damp);
  CIBENCH_CHECK(opts.block >= 1, "gptq: block size must be >= 1, got ", opts.block);
  GptqResult res;
  const int64_t n = cols;
  // Column order.
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  if (opts.act_order)
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return xtx[a * n + a] > xtx[b * n + b]; });

  // Permuted Hessian; dead channels get a unit diagonal and their weights zeroed (as GPTQ does).
  std::vector<double> h(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) h[i * n + j] = xtx[perm[i] * n + perm[j]];
  std::vector<float> wp(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) wp[r * n + i] = w[r * n + perm[i]];
  double mean_diag = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (h[i * n + i] <= 0.0) {
      h[i * n + i] = 1.0;
      ++res.dead_columns;
      for (int64_t r = 0; r < rows; ++r) wp[r * n + i] = 0.f;
    }
    mean_diag += h[i * n + i];
  }
  mean_diag /= static_cast<double>(n);
  std::vector<double> u;
  double damp = opts.damp;
  for (int attempt = 0;; ++attempt) {
    std::vector<double> hd = h;
    for (int64_t i = 0; i < n; ++i) hd[i * n + i] += damp * mean_diag;
    if (inverse_upper_cholesky(hd, n, u)) break;
    CIBENCH_CHECK(attempt < 6, "gptq: the calibration Hessian is not positive definite even with "
                  "damping ", damp);
    damp = damp > 0 ? damp * 10 : 1e-6;
  }
  res.damp_used = damp;

  // Group parameters per (row, group of the ORIGINAL column order).
  const int64_t glen = grid.group_len(cols);
  const int64_t ngroups = (cols + glen - 1) / glen;
  std::vector<QuantGrid::Params> params(static_cast<size_t>(rows * ngroups));
  std::vector<char> fitted(static_cast<size_t>(ngroups), 0);
  std::vector<float> gbuf(static_cast<size_t>(glen));
  auto fit_group = [&](int64_t g, bool from_original) {
    const int64_t c0 = g * glen, len = std::min(glen, cols - c0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < len; ++i) {
        float v;
        if (from_original) {
          v = w[r * n + c0 + i];
        } else {
          v = wp[r * n + c0 + i];  // identity permutation here
        }
        if (keep && !keep[r * n + c0 + i]) v = 0.f;
        gbuf[static_cast<size_t>(i)] = v;
      }
      params[static_cast<size_t>(r * ngroups + g)] = grid.fit(gbuf.data(), len);
    }
    fitted[static_cast<size_t>(g)] = 1;
  };
  if (opts.act_order)
    for (int64_t g = 0; g < ngroups; ++g) fit_group(g, true);

  std::vector<float> err(static_cast<size_t>(rows * opts.block));
  for (int64_t i1 = 0; i1 < n; i1 += opts.block) {
    const int64_t i2 = std::min(n, i1 + opts.block), bn = i2 - i1;
    for (int64_t i = i1; i < i2; ++i) {
      const int64_t c = perm[i];  // original column
      const int64_t g = c / glen;
      if (!fitted[static_cast<size_t>(g)]) fit_group(g, false);
      const double d = u[i * n + i];
      for (int64_t r = 0; r < rows; ++r) {
        const float x = wp[r * n + i];
        const QuantGrid::Params& p = params[static_cast<size_t>(r * ngroups + g)];
        float q;
        if (keep && !keep[r * n + c] && c - g * glen != p.anchor_lo && c - g * glen != p.anchor_hi)
          q = grid.quantize(p, 0.f);
        else
          q = grid.quantize_at(p, c - g * glen, x);
        wp[r * n + i] = q;
        const float e = static_cast<float>((static_cast<double>(x) - q) / d);
        err[static_cast<size_t>(r * opts.block + (i - i1))] = e;
        // Update the rest of this block now.
        float* wr = &wp[r * n];
        const double* ui = &u[i * n];
        for (int64_t j = i + 1; j < i2; ++j) wr[j] -= static_cast<float>(e * ui[j]);
      }
    }
    // Lazy update of the columns after the block.
    if (i2 < n) {
      for (int64_t r = 0; r < rows; ++r) {
        float* wr = &wp[r * n];
        for (int64_t k = 0; k < bn; ++k) {
          const double e = err[static_cast<size_t>(r * opts.block + k)];
          const double* uk = &u[(i1 + k) * n];
          for (int64_t j = i2; j < n; ++j) wr[j] -= static_cast<float>(e * uk[j]);
        }
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) w[r * n + perm[i]] = wp[r * n + i];
  return res;
}

}  // namespace cibench
