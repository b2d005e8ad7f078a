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

// Teacher-forced logits at every position of `toks` from a reference of arithmetic Real (the
// context covers the tokens, past the trained length if need be: the dynamic fixture runs there).
template <typename Real>
std::vector<double> reference_logits(const LlamaSource& src, const std::vector<int>& toks) {
  LlamaReferenceT<Real> ref(src, std::max(src.config.seq_len, static_cast<int>(toks.size())));
  std::vector<double> out;
  for (size_t p = 0; p < toks.size(); ++p) {
    const auto& r = ref.forward(toks[p], static_cast<int>(p));
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

// Twice the bound of one evaluation: 4 x the FP32 reference's measured error against the exact
// logits plus 4 ulps of the largest exact logit.
inline double pair_tolerance_from(double ref32_err, double max_exact) {
  return 2.0 * (4.0 * ref32_err + 4.0 * kF32U * max_exact);
}

inline double pair_tolerance(const LlamaSource& src, const std::vector<int>& toks) {
  const std::vector<double> exact = reference_logits<double>(src, toks);
  return pair_tolerance_from(max_abs_diff(reference_logits<float>(src, toks), exact), max_abs(exact));
}

}  // namespace cibench::test
