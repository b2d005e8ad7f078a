#pragma once
// SmoothQuant (Xiao et al. 2022): moves activation outliers into the weights before int8
// weight x int8 activation (w8a8) quantisation. Per input channel j,
//   s_j = max|X_j|^alpha / max|W_:,j|^(1 - alpha)
// (max over calibration rows, and over the rows of every matrix that reads this input);
// W' = W diag(s) and the activations become X diag(1/s), the 1/s being folded into the
// operation that produces X (an RMSNorm weight, or the rows of the matrix before). Per-token
// activation quantisation then sees a flatter row, and per-channel weight quantisation absorbs
// the moved range.
#include <cstdint>
#include <vector>

#include "engines/quant/awq.h"

namespace cibench {

// `act_absmax`: max |x_j| over the calibration rows. Channels never active (or with an all-zero
// weight column) keep s = 1. `tie`: as for awq_search (the maximum is taken within a class).
std::vector<float> smoothquant_scales(const std::vector<MatView>& ws, int64_t cols,
                                      const float* act_absmax, double alpha,
                                      const std::vector<int64_t>& tie);

}  // namespace cibench
