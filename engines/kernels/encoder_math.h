#pragma once
// The encoder's element-wise numerics (BERT/DistilBERT): the feed-forward activations, LayerNorm
// with its residual add, and the masked softmax of attention scores. Written once, here, and
// compiled into every level's kernel table (kernels_generic.cpp and, with that level's flags,
// simd_kernels.inc) as bias_activation, add_layer_norm and masked_softmax. The sums are written
// with explicit 16-way partials (kPartials), so every level adds in the same order; the SIMD levels run more
// lanes and, being built with FMA, may fuse a multiply-add (KernelTwin.EncoderNumerics bounds
// the difference from the generic twin).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "engines/kernels/kernels.h"

namespace cibench::encoder {

// exp(x) in float, branch-free so the loops calling it vectorise (the kernel sources are built with
// -fno-trapping-math, which lets GCC if-convert the clamps; results are unchanged): Cephes'
// expf (range reduction by ln 2, degree-6 polynomial), relative error below 1e-7. Inputs are
// clamped to [-87.33, 88.72], so exp of a masked score (-1e30) is ~1e-38, i.e. 0 beside 1; above
// 88.03 (127.5 ln 2) the scale 2^n overflows and the result is +inf (float's exp overflows at 88.72).
inline float exp_approx(float x) {
  x = std::min(88.72f, x);
  x = std::max(-87.33f, x);
  const float magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float t = x * 1.44269504088896341f + magic;
  const float n = t - magic;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n from n's bits in t's mantissa (t = 0x4B400000 + n as bits).
  int32_t ti;
  std::memcpy(&ti, &t, sizeof ti);
  const int32_t bits = (ti - 0x4B400000 + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// 1 / d for d in [1, 5]: a first guess from the bits (within 13 %), then three Newton steps
// (relative error ~1e-7, one or two ulp). A vector division is a long serial operation (its
// throughput was the limit of the GELU loop on a Xeon core: 7 % of a DistilBERT w8a8 pass at 128
// tokens); these are seven multiply-adds that pipeline.
inline float recip_1_5(float d) {
  int32_t i;
  std::memcpy(&i, &d, sizeof i);
  i = 0x7EF311C3 - i;
  float r;
  std::memcpy(&r, &i, sizeof r);
  r = r * (2.0f - d * r);
  r = r * (2.0f - d * r);
  r = r * (2.0f - d * r);
  return r;
}

// erf(x) by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7, i.e. float resolution of
// GELU's 0.5 * (1 + erf)); branch-free. |x| is clamped to 10 for t (erf is 1 in float from 3.9 on;
// exp(-x^2) is 0 there either way), which keeps t's divisor in [1, 4.3].
inline float erf_approx(float x) {
  const float ax = std::min(std::fabs(x), 10.0f);
  const float t = recip_1_5(1.0f + 0.3275911f * ax);
  float y = 1.061405429f;
  y = y * t - 1.453152027f;
  y = y * t + 1.421413741f;
  y = y * t - 0.284496736f;
  y = y * t + 0.254829592f;
  y = 1.0f - y * t * exp_approx(-ax * ax);
  return std::copysign(y, x);
}

// One feed-forward activation over n values, bias added first (branch-free, so it vectorises).
__attribute__((always_inline)) inline void bias_activation_body(float* x, const float* bias,
                                                                int64_t n, Activation act) {
  switch (act) {
    case Activation::gelu:
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i] + bias[i];
        x[i] = 0.5f * v * (1.0f + erf_approx(v * 0.70710678118654752f));
      }
      break;
    case Activation::gelu_tanh:
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i] + bias[i];
        // tanh(u) = 1 - 2 / (exp(2u) + 1)
        const float u = 0.79788456080286536f * (v + 0.044715f * v * v * v);
        x[i] = 0.5f * v * (2.0f - 2.0f / (exp_approx(2.0f * u) + 1.0f));
      }
      break;
    case Activation::relu:
      for (int64_t i = 0; i < n; ++i) x[i] = std::max(0.0f, x[i] + bias[i]);
      break;
  }
}


// The sums of LayerNorm and softmax run in this many interleaved partials, the same at every level:
// one 16-lane vector at AVX-512 (8 partials left those loops at half width there).
constexpr int kPartials = 16;

// x = LayerNorm(x + a + bias) over n values (a and bias may be null). With out2, also
// out2 = the same normalised values with gamma w2 and beta b2 (a folded second output).
inline void add_layer_norm_body(float* x, const float* a, const float* bias, const float* w, const float* b,
                               int64_t n, float eps, float* out2, const float* w2, const float* b2) {
  if (a)
    for (int64_t i = 0; i < n; ++i) x[i] += a[i] + bias[i];
  constexpr int P = kPartials;
  float sum[P] = {0};
  int64_t i = 0;
  for (; i + P <= n; i += P)
    for (int k = 0; k < P; ++k) sum[k] += x[i + k];
  float s = 0.0f;
  for (; i < n; ++i) s += x[i];
  for (int k = 0; k < P; ++k) s += sum[k];
  const float mean = s / static_cast<float>(n);
  float sq[P] = {0};
  for (i = 0; i + P <= n; i += P)
    for (int k = 0; k < P; ++k) {
      const float d = x[i + k] - mean;
      sq[k] += d * d;
    }
  float v = 0.0f;
  for (; i < n; ++i) v += (x[i] - mean) * (x[i] - mean);
  for (int k = 0; k < P; ++k) v += sq[k];
  const float inv = 1.0f / std::sqrt(v / static_cast<float>(n) + eps);
  if (out2)
    for (i = 0; i < n; ++i) out2[i] = (x[i] - mean) * inv * w2[i] + b2[i];
  for (i = 0; i < n; ++i) x[i] = (x[i] - mean) * inv * w[i] + b[i];
}

// Masked softmax in place over n scores (masked entries get probability 0; when every entry
// is masked the row becomes uniform, as adding a large negative to all of them would give).
inline void masked_softmax_body(float* s, const uint8_t* mask, int64_t n) {
  constexpr float kMasked = -1e30f;
  if (mask)
    for (int64_t j = 0; j < n; ++j) s[j] = mask[j] ? s[j] : kMasked;
  // The maximum (any order gives the same value) and the sum in kPartials-way partials, as
  // LayerNorm's: a serial sum kept the exp loop scalar (8 % of the cpu-clock samples of a
  // DistilBERT w8a8 forward pass at 128 tokens on one Xeon core).
  constexpr int P = kPartials;
  float mp[P];
  for (int k = 0; k < P; ++k) mp[k] = s[0];
  int64_t j = 0;
  for (; j + P <= n; j += P)
    for (int k = 0; k < P; ++k) mp[k] = std::max(mp[k], s[j + k]);
  float mx = s[0];
  for (; j < n; ++j) mx = std::max(mx, s[j]);
  for (int k = 0; k < P; ++k) mx = std::max(mx, mp[k]);
  if (mx == kMasked) {  // nothing to attend to: equal weights
    std::fill(s, s + n, 0.0f);
    mx = 0.0f;
  }
  float sump[P] = {0};
  for (j = 0; j + P <= n; j += P)
    for (int k = 0; k < P; ++k) {
      s[j + k] = exp_approx(s[j + k] - mx);
      sump[k] += s[j + k];
    }
  float sum = 0.0f;
  for (; j < n; ++j) {
    s[j] = exp_approx(s[j] - mx);
    sum += s[j];
  }
  for (int k = 0; k < P; ++k) sum += sump[k];
  const float inv = 1.0f / sum;
  for (j = 0; j < n; ++j) s[j] *= inv;
}

}  // namespace cibench::encoder
