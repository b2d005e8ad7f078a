#pragma once
// AWQ (Lin et al. 2023), activation-aware weight quantisation: before group quantisation the
// input channels of a layer are scaled by s_j = mean|X_j|^a (a searched on a grid in [0, 1]),
// W' = W diag(s); the activations carry 1/s (folded into the operation that produces them), so
// the product is unchanged in exact arithmetic while salient channels get finer steps.
// The exponent minimising the layer's output error on calibration rows,
//   || Q(W diag(s)) diag(1/s) X^T - W X^T ||_F^2,
// summed over the matrices that share the input, wins (a = 0 is plain round-to-nearest, so
// the search never does worse than RTN on the calibration rows).
#include <cstdint>
#include <vector>

#include "engines/core/matrix.h"
#include "engines/quant/recipe_grid.h"

namespace cibench {

// A (rows x cols) row-major f32 matrix; the matrices of one site share cols.
struct MatView {
  const float* w;
  int64_t rows;
};

struct AwqOptions {
  int grid = 20;  // exponents 0, 1/grid, ..., 1
};

struct AwqResult {
  std::vector<float> scales;  // per input channel (1.0 when a = 0 wins)
  double exponent = 0;        // the a that won
  double err = 0;             // output error of the winner on the calibration rows
  double rtn_err = 0;         // output error of plain RTN (a = 0)
  double ref_energy = 0;      // ||W X^T||^2, for relative errors
};

// `x`: nx calibration rows of `cols` values; `mean_abs`: per channel mean |x| over all
// calibration rows. `tie` (empty or cols entries): channels with the same tie id must share one
// scale (e.g. attention-output channels of query heads that read the same value head); their
// statistic is averaged.
AwqResult awq_search(const std::vector<MatView>& ws, int64_t cols, const float* x, int64_t nx,
                     const float* mean_abs, const QuantGrid& grid, const AwqOptions& opts,
                     const std::vector<int64_t>& tie, MatmulRunner& runner);

// ||X (W_hat - W)^T||_F^2 over nx rows of x (f32 kernels).
double output_sq_error(const float* w, const float* w_hat, int64_t rows, int64_t cols,
                       const float* x, int64_t nx, MatmulRunner& runner);
// ||X W^T||_F^2.
double output_energy(const float* w, int64_t rows, int64_t cols, const float* x, int64_t nx,
                     MatmulRunner& runner);

// Scales columns: w[r, j] *= s[j].
void scale_columns(float* w, int64_t rows, int64_t cols, const float* s);
// Averages (or maxes) a per-channel statistic within tie classes, in place.
void tie_channels(std::vector<float>& v, const std::vector<int64_t>& tie, bool use_max);

}  // namespace cibench
