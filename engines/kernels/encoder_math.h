#pragma once
// The encoder's element-wise numerics (BERT/DistilBERT): the feed-forward activations, LayerNorm
// with its residual add, and the masked softmax of attention scores. Written once, here, and
// compiled into every level's kernel table (kernels_generic.cpp and, in that level's target region,
// simd_kernels.inc) as bias_activation, add_layer_norm and masked_softmax. LayerNorm's sums are
// written with explicit 16-way partials (kPartials), so every level adds in the same order; the
// softmax is written in vectors at the SIMD levels and reduces its sum as a tree there. The SIMD
// levels, built with FMA, may fuse a multiply-add; KernelTwin.EncoderNumerics bounds the
// difference from the generic twin.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

// The level of the file including this one (isa_target.h): 0 in baseline files.
#ifndef CIBENCH_TARGET_LEVEL
#define CIBENCH_TARGET_LEVEL 0
#endif
#if CIBENCH_TARGET_LEVEL >= 1
#include <immintrin.h>
#endif
#if CIBENCH_TARGET_LEVEL >= 2
#include "engines/kernels/vec_avx512.h"
#endif

#include "engines/kernels/kernels.h"

namespace cibench::encoder {
// Internal linkage: each level's kernel source compiles these in its own target region (and, below,
// its own vector code), so no two translation units may share one out-of-line copy.
namespace {

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

// erf on [0, 4] as eight polynomials of degree 6, one per half-unit interval, in t = a - centre
// (the first, on [0, 0.5), in a itself with no constant term, so erf(a) / a stays accurate as a
// goes to 0); erf is 1 in float from 3.92 on, and the last piece ends there, at 4. Least-squares
// fits at Chebyshev nodes, rounded to float (scripts/fit-erf.py prints these tables and checks
// them): evaluated in float with multiply-adds, the absolute
// error is below 1.4e-7 on [0, 4.5] (relative below 2.3e-7 on (0, 0.5]), as small as the
// Abramowitz & Stegun form with exp and a reciprocal it replaced, in seven multiply-adds and seven
// table selects per vector instead of about thirty multiplies (the GELU loop was 5 % of a
// DistilBERT w8a8 pass at 128 tokens on one Zen 5 core). kErfPoly[k][i]: the coefficient of
// t^(6 - k) in piece i.
alignas(64) constexpr float kErfPoly[7][16] = {
  {-3.497083858e-02f, -2.658282965e-02f, 2.059773728e-02f, 9.049494751e-03f, -2.779565053e-03f, -1.667850534e-03f, -2.737584582e-04f, -2.069242146e-05f},
  {1.310456395e-01f, -5.126086250e-02f, -4.677693173e-02f, 5.969540216e-03f, 1.058114227e-02f, 2.825833391e-03f, 3.326159786e-04f, 2.020526335e-05f},
  {-4.497011658e-03f, 1.506756246e-01f, -6.132035051e-03f, -4.810552299e-02f, -1.908825710e-02f, -3.257710487e-03f, -2.861694375e-04f, -1.378540856e-05f},
  {-3.756166101e-01f, 2.672721818e-02f, 1.675230861e-01f, 9.017766267e-02f, 2.172697894e-02f, 2.758207032e-03f, 1.952192833e-04f, 7.911728062e-06f},
  {-2.132689769e-05f, -4.821981490e-01f, -2.956517339e-01f, -9.235620499e-02f, -1.607015729e-02f, -1.612267457e-03f, -9.486933413e-05f, -3.306070994e-06f},
  {1.128379345e+00f, 6.429315209e-01f, 2.365212291e-01f, 5.277483538e-02f, 7.142299786e-03f, 5.862942780e-04f, 2.919364670e-05f, 8.818866490e-07f},
  {0.0f, 7.111556530e-01f, 9.229001403e-01f, 9.866716862e-01f, 9.985373020e-01f, 9.998993874e-01f, 9.999957085e-01f, 9.999998808e-01f},
};
alignas(64) constexpr float kErfCentre[16] = {0.0f, 0.75f, 1.25f, 1.75f, 2.25f, 2.75f, 3.25f, 3.75f};

// erf(x) from the pieces above (branch-free; NaN and |x| >= 4 take the last piece at 4: +-1).
inline float erf_approx(float x) {
  float a = std::fabs(x);
  if (!(a < 4.0f)) a = 4.0f;
  const int i = std::min(static_cast<int>(a * 2.0f), 7);
  const float t = a - kErfCentre[i];
  float p = kErfPoly[0][i];
  for (int k = 1; k < 7; ++k) p = p * t + kErfPoly[k][i];
  return std::copysign(p, x);
}

#if CIBENCH_TARGET_LEVEL >= 2
// GELU (erf form) on 16 values: the same pieces, selected per lane by vpermps.
inline __m512 gelu_vec(__m512 v) {
  const __m512 u = _mm512_mul_ps(v, _mm512_set1_ps(0.70710678118654752f));
  const __m512 a = _mm512_min_ps(_mm512_abs_ps(u), _mm512_set1_ps(4.0f));  // NaN -> 4
  const __m512i i = _mm512_min_epi32(_mm512_cvttps_epi32(_mm512_mul_ps(a, _mm512_set1_ps(2.0f))), _mm512_set1_epi32(7));
  const __m512 t = _mm512_sub_ps(a, _mm512_permutexvar_ps(i, _mm512_load_ps(kErfCentre)));
  __m512 p = _mm512_permutexvar_ps(i, _mm512_load_ps(kErfPoly[0]));
  for (int k = 1; k < 7; ++k) p = _mm512_fmadd_ps(p, t, _mm512_permutexvar_ps(i, _mm512_load_ps(kErfPoly[k])));
  const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(0x80000000u)));
  const __m512 erf = _mm512_or_ps(p, _mm512_and_ps(u, sign));  // p >= 0
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v), _mm512_add_ps(_mm512_set1_ps(1.0f), erf));
}
#elif CIBENCH_TARGET_LEVEL >= 1
// GELU (erf form) on 8 values: the same pieces, selected per lane by vpermps.
inline __m256 gelu_vec(__m256 v) {
  const __m256 u = _mm256_mul_ps(v, _mm256_set1_ps(0.70710678118654752f));
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
  const __m256 a = _mm256_min_ps(_mm256_andnot_ps(sign, u), _mm256_set1_ps(4.0f));  // NaN -> 4
  const __m256i i = _mm256_min_epi32(_mm256_cvttps_epi32(_mm256_mul_ps(a, _mm256_set1_ps(2.0f))), _mm256_set1_epi32(7));
  const __m256 t = _mm256_sub_ps(a, _mm256_permutevar8x32_ps(_mm256_load_ps(kErfCentre), i));
  __m256 p = _mm256_permutevar8x32_ps(_mm256_load_ps(kErfPoly[0]), i);
  for (int k = 1; k < 7; ++k) p = _mm256_fmadd_ps(p, t, _mm256_permutevar8x32_ps(_mm256_load_ps(kErfPoly[k]), i));
  const __m256 erf = _mm256_or_ps(p, _mm256_and_ps(u, sign));  // p >= 0
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v), _mm256_add_ps(_mm256_set1_ps(1.0f), erf));
}
#endif

// One feed-forward activation over n values, bias added first (branch-free, so it vectorises).
__attribute__((always_inline)) inline void bias_activation_body(float* x, const float* bias,
                                                                int64_t n, Activation act) {
  switch (act) {
    case Activation::gelu: {
      int64_t i = 0;
#if CIBENCH_TARGET_LEVEL >= 2
      // whole vectors unmasked, the tail masked (masked loads and stores issue slower)
      for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(x + i, gelu_vec(_mm512_add_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(bias + i))));
      if (i < n) {
        const __mmask16 k = VecAvx512::lanes(n - i);
        const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, bias + i));
        _mm512_mask_storeu_ps(x + i, k, gelu_vec(v));
        i = n;
      }
#elif CIBENCH_TARGET_LEVEL >= 1
      for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, gelu_vec(_mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(bias + i))));
#endif
      for (; i < n; ++i) {
        const float v = x[i] + bias[i];
        x[i] = 0.5f * v * (1.0f + erf_approx(v * 0.70710678118654752f));
      }
      break;
    }
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
    case Activation::none:
      for (int64_t i = 0; i < n; ++i) x[i] += bias[i];
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

#if CIBENCH_TARGET_LEVEL >= 1
// exp_approx on a vector: the same steps, lane by lane (the scalar form contracts the same
// products into multiply-adds where the compiler may; each step rounds once either way). The
// vector types are GCC vectors, so + - * and the bit casts are written once for both widths.
#if CIBENCH_TARGET_LEVEL >= 2
using VecF = __m512;
inline VecF vfma(VecF a, VecF b, VecF c) { return _mm512_fmadd_ps(a, b, c); }
inline VecF vmin(VecF a, VecF b) { return _mm512_min_ps(a, b); }
inline VecF vmax(VecF a, VecF b) { return _mm512_max_ps(a, b); }
#else
using VecF = __m256;
inline VecF vfma(VecF a, VecF b, VecF c) { return _mm256_fmadd_ps(a, b, c); }
inline VecF vmin(VecF a, VecF b) { return _mm256_min_ps(a, b); }
inline VecF vmax(VecF a, VecF b) { return _mm256_max_ps(a, b); }
#endif
using VecI32 = int32_t __attribute__((vector_size(sizeof(VecF))));
inline VecF vset(float a) { return VecF{} + a; }
inline VecF vfnma(VecF a, VecF b, VecF c) { return vfma(-a, b, c); }
inline VecF exp_vec(VecF x) {
  x = vmin(vset(88.72f), x);
  x = vmax(vset(-87.33f), x);
  const VecF magic = vset(12582912.0f);
  const VecF t = vfma(x, vset(1.44269504088896341f), magic);
  const VecF n = t - magic;
  VecF r = vfnma(n, vset(0.693359375f), x);
  r = vfnma(n, vset(-2.12194440e-4f), r);
  VecF p = vset(1.9875691500e-4f);
  p = vfma(p, r, vset(1.3981999507e-3f));
  p = vfma(p, r, vset(8.3334519073e-3f));
  p = vfma(p, r, vset(4.1665795894e-2f));
  p = vfma(p, r, vset(1.6666665459e-1f));
  p = vfma(p, r, vset(5.0000001201e-1f));
  p = vfma(p * r, r, r) + 1.0f;
  // 2^n from n's bits in t's mantissa (t = 0x4B400000 + n as bits).
  const VecF scale = reinterpret_cast<VecF>((reinterpret_cast<VecI32>(t) + (127 - 0x4B400000)) << 23);
  return p * scale;
}
#endif

// Masked softmax in place over n scores, each first multiplied by `scale` (masked entries get
// probability 0; when every entry is masked the row becomes uniform, as adding a large negative
// to all of them would give). The scaled score is rounded once, as a separate multiply would.
inline void masked_softmax_body(float* s, const uint8_t* mask, int64_t n, float scale = 1.0f) {
  constexpr float kMasked = -1e30f;
#if CIBENCH_TARGET_LEVEL >= 2
  // In registers, 16 lanes; the tail by masked loads and stores. The maximum is order-free; the
  // sum is reduced as a tree, which KernelTwin.EncoderNumerics bounds against the generic order.
  // (The 16 partials, spilled and added in order, with the row's scalar tail, were most of a
  // 128-score row's time: 3.5 % of a DistilBERT w8a8 pass at 128 tokens on one Zen 5 core.)
  // Whole vectors unmasked, the last (ragged) one masked: masked loads and stores issue slower.
  const __m512 vs = _mm512_set1_ps(scale), vmask = _mm512_set1_ps(kMasked);
  const int64_t nw = n / 16 * 16;
  const __mmask16 kt = VecAvx512::lanes(n - nw);
  __m512 mx = vmask;
  auto scaled = [&](__m512 v, __m128i mb, __mmask16 k) {
    v = _mm512_mul_ps(v, vs);
    if (mask) v = _mm512_mask_blend_ps(_mm512_mask_cmpneq_epi32_mask(k, _mm512_cvtepu8_epi32(mb), _mm512_setzero_si512()), vmask, v);
    return v;
  };
  for (int64_t j = 0; j < nw; j += 16) {
    const __m512 v = scaled(_mm512_loadu_ps(s + j), mask ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(mask + j)) : __m128i(), 0xffff);
    _mm512_storeu_ps(s + j, v);
    mx = _mm512_max_ps(mx, v);
  }
  if (kt) {
    const __m512 v = scaled(_mm512_maskz_loadu_ps(kt, s + nw), mask ? _mm_maskz_loadu_epi8(kt, mask + nw) : __m128i(), kt);
    _mm512_mask_storeu_ps(s + nw, kt, v);
    mx = _mm512_mask_max_ps(mx, kt, mx, v);
  }
  float m = _mm512_reduce_max_ps(mx);
  if (m == kMasked) {  // nothing to attend to: equal weights
    std::fill(s, s + n, 0.0f);
    m = 0.0f;
  }
  const __m512 vm = _mm512_set1_ps(m);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < nw; j += 16) {
    const __m512 e = exp_vec(_mm512_sub_ps(_mm512_loadu_ps(s + j), vm));
    _mm512_storeu_ps(s + j, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (kt) {
    const __m512 e = exp_vec(_mm512_sub_ps(_mm512_maskz_loadu_ps(kt, s + nw), vm));
    _mm512_mask_storeu_ps(s + nw, kt, e);
    sum = _mm512_mask_add_ps(sum, kt, sum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  for (int64_t j = 0; j < nw; j += 16) _mm512_storeu_ps(s + j, _mm512_mul_ps(_mm512_loadu_ps(s + j), inv));
  if (kt) _mm512_mask_storeu_ps(s + nw, kt, _mm512_mul_ps(_mm512_maskz_loadu_ps(kt, s + nw), inv));
#else
  // The maximum (any order gives the same value) and the sum in kPartials-way partials, as
  // LayerNorm's: a serial sum kept the exp loop scalar (8 % of the cpu-clock samples of a
  // DistilBERT w8a8 forward pass at 128 tokens on one Xeon core).
  for (int64_t j = 0; j < n; ++j) s[j] = !mask || mask[j] ? s[j] * scale : kMasked;
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
#if CIBENCH_TARGET_LEVEL >= 1
  // Two 8-lane vectors hold the 16 partials; reduced as a tree at the end.
  __m256 s0 = _mm256_setzero_ps(), s1 = s0;
  const __m256 vm = _mm256_set1_ps(mx);
  for (j = 0; j + P <= n; j += P) {
    const __m256 e0 = exp_vec(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm));
    const __m256 e1 = exp_vec(_mm256_sub_ps(_mm256_loadu_ps(s + j + 8), vm));
    _mm256_storeu_ps(s + j, e0);
    _mm256_storeu_ps(s + j + 8, e1);
    s0 = _mm256_add_ps(s0, e0);
    s1 = _mm256_add_ps(s1, e1);
  }
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1));
  h = _mm_add_ps(h, _mm_add_ps(_mm256_castps256_ps128(s1), _mm256_extractf128_ps(s1, 1)));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  float sum = _mm_cvtss_f32(h);
  for (; j < n; ++j) {
    s[j] = exp_approx(s[j] - mx);
    sum += s[j];
  }
#else
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
#endif
  const float inv = 1.0f / sum;
  for (j = 0; j < n; ++j) s[j] *= inv;
#endif
}

}  // namespace
}  // namespace cibench::encoder
