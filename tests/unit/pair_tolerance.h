#pragma once
// How far two binary32 evaluations of a Llama network on the same tokens may differ when their sums
// run in different orders (a chunked forward against single steps, batched rows against a lone
// session): each is within the FP32 reference's forward-error bound against the exact (binary64)
// reference realised on these tokens (test_llama.cpp's tolerance_vs_exact: 4 x the measured error
// plus 4 ulps of the largest exact logit), so they are within twice that.
#include <algorithm>
#include <cmath>
#include <vector>

#include "engines/models/llama.h"
#include "engines/models/llama_reference.h"
#include "test_support.h"

namespace cibench::test {

// Twice the bound of one evaluation: 4 x the FP32 reference's measured error against the exact
// logits plus 4 ulps of the largest exact logit.
inline double pair_tolerance_from(double ref32_err, double max_exact) {
  return 2.0 * (4.0 * ref32_err + 4.0 * kF32U * max_exact);
}

inline double pair_tolerance(const LlamaSource& src, const std::vector<int>& toks) {
  LlamaReference r32(src);
  LlamaReference64 r64(src);
  double err = 0, mx = 0;
  for (size_t p = 0; p < toks.size(); ++p) {
    const auto& a = r32.forward(toks[p], static_cast<int>(p));
    const auto& b = r64.forward(toks[p], static_cast<int>(p));
    for (size_t i = 0; i < a.size(); ++i) {
      err = std::max(err, std::fabs(static_cast<double>(a[i]) - b[i]));
      mx = std::max(mx, std::fabs(b[i]));
    }
  }
  return pair_tolerance_from(err, mx);
}

}  // namespace cibench::test
