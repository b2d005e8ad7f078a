#pragma once
// Sees the input of every weight matrix product of a forward pass (calibration for quantisation
// recipes: activation statistics, Hessians). Called on the session's calling thread, in layer
// order. Declared in core so that the models (which call it), the sessions (which carry it) and
// the recipes (which implement it) need not include each other.
#include <cstdint>
#include <string>

namespace cibench {

class ActivationObserver {
 public:
  virtual ~ActivationObserver() = default;
  // `x` holds `rows` activation rows of `cols` values entering matrix `matrix_name`
  // (e.g. "layers.3.wq"; wq/wk/wv share one input, as do w1/w3).
  virtual void observe(const std::string& matrix_name, const float* x, int64_t rows, int64_t cols) = 0;
};

}  // namespace cibench
