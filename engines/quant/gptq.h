#pragma once
// GPTQ (Frantar et al. 2022): quantises a weight matrix column by column and spreads each
// column's rounding error over the columns not yet quantised, using the inverse Hessian of the
// layer's squared output error on calibration inputs, H = 2 X^T X.
#include <cstdint>
#include <vector>

#include "engines/quant/recipe_grid.h"

namespace cibench {

struct GptqOptions {
  double damp = 0.01;      // added to H's diagonal: damp * mean(diag(H))
  int64_t block = 128;     // columns per lazy-update block
  bool act_order = false;  // quantise columns in order of decreasing diag(H)
};

struct GptqResult {
  double damp_used = 0;  // after any retries for a Hessian that was not positive definite
  int64_t dead_columns = 0;  // input channels never active in the calibration data
};

// w: (rows x cols) row-major f32, replaced by values on `grid`. xtx: (cols x cols) sum over the
// calibration rows x of x x^T (any positive multiple works; only its shape matters).
// keep: optional (rows x cols) mask, 0 = pruned: such weights are quantised as 0 (their error is
// compensated like any other). The grid's scale of a group is fitted on the (already
// error-compensated) weights when its first column is reached; with act_order the groups are
// fitted on the original weights up front (static groups), since the format's groups are
// contiguous in the original column order.
GptqResult gptq_quantize(float* w, int64_t rows, int64_t cols, const double* xtx,
                         const QuantGrid& grid, const GptqOptions& opts,
                         const uint8_t* keep = nullptr);

}  // namespace cibench
