// Every fast kernel equals its generic twin within a tolerance derived from the arithmetic, at
// every ISA this host supports, on random shapes including ragged ones (stories260K's feed-forward
// width is 172). The twins compute the same expressions in binary32 and differ in the order of
// their sums and in FMA contraction; each bound below is the standard forward-error bound of the
// operation (Higham, Accuracy and Stability of Numerical Algorithms, ch. 3), taken twice (one for
// each twin), so it holds whatever order or ISA a kernel uses and depends on nothing measured.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engines/core/cpu.h"
#include "engines/kernels/encoder_math.h"
#include "engines/kernels/kernels.h"
#include "tests/unit/test_support.h"

namespace cibench {
namespace {

std::vector<float> randv(size_t n, std::mt19937& rng, float scale = 1.f) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

using test::gamma_f32;
using test::kF32U;

// Two binary32 dot products of the same length-k vectors differ by at most 2 gamma_k sum|w_i x_i|
// (test::f32_dot_pair_bound); the sum of |products| is taken in double.
double dot_tol(const float* w, const float* x, int64_t k) {
  double s = 0;
  for (int64_t i = 0; i < k; ++i) s += std::fabs(double(w[i]) * x[i]);
  return test::f32_dot_pair_bound(k, s);
}

class KernelTwin : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { CIBENCH_REQUIRE_ISA(GetParam()); }
  const KernelTable& fast() { return kernels_for(GetParam()); }
  const KernelTable& ref() { return kernels_generic(); }
};

const int64_t kSizes[] = {1, 3, 7, 8, 15, 16, 17, 31, 64, 172, 255, 768, 1000};

TEST_P(KernelTwin, DotAndMatvec) {
  std::mt19937 rng(1);
  for (int64_t k : kSizes) {
    for (int64_t rows : {1, 3, 4, 5, 13, 64}) {
      auto w = randv(rows * k, rng), x = randv(k, rng);
      std::vector<float> y0(rows), y1(rows);
      ref().matvec_f32(w.data(), k, x.data(), y0.data(), rows, k);
      fast().matvec_f32(w.data(), k, x.data(), y1.data(), rows, k);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_NEAR(y0[r], y1[r], dot_tol(&w[r * k], x.data(), k)) << "k=" << k << " rows=" << rows;
      ASSERT_NEAR(ref().dot_f32(w.data(), x.data(), k), fast().dot_f32(w.data(), x.data(), k),
                  dot_tol(w.data(), x.data(), k));
    }
  }
}

TEST_P(KernelTwin, Matmul) {
  std::mt19937 rng(2);
  for (int64_t k : {1, 5, 16, 33, 64, 172}) {
    for (int64_t m : {1, 2, 4, 7, 9}) {
      for (int64_t n : {1, 3, 5, 16, 29}) {
        auto w = randv(n * k, rng), x = randv(m * k, rng);
        std::vector<float> y0(m * n), y1(m * n);
        ref().matmul_f32(w.data(), k, x.data(), k, y0.data(), n, m, n, k);
        fast().matmul_f32(w.data(), k, x.data(), k, y1.data(), n, m, n, k);
        for (int64_t i = 0; i < m * n; ++i)
          ASSERT_NEAR(y0[i], y1[i], dot_tol(&w[(i % n) * k], &x[(i / n) * k], k))
              << "m=" << m << " n=" << n << " k=" << k;
      }
    }
  }
  // Long rows: W is walked in panels of rows (a few per panel at this K), the last one ragged;
  // Y has a leading dimension wider than N.
  for (int64_t k : {1000, 5000}) {
    const int64_t m = 6, n = 101, ldy = n + 5;
    auto w = randv(n * k, rng), x = randv(m * k, rng);
    std::vector<float> y0(m * ldy, 3.f), y1(m * ldy, 3.f);
    ref().matmul_f32(w.data(), k, x.data(), k, y0.data(), ldy, m, n, k);
    fast().matmul_f32(w.data(), k, x.data(), k, y1.data(), ldy, m, n, k);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < ldy; ++j) {
        if (j < n)
          ASSERT_NEAR(y0[i * ldy + j], y1[i * ldy + j], dot_tol(&w[j * k], &x[i * k], k))
              << "k=" << k << " i=" << i << " j=" << j;
        else
          ASSERT_EQ(y1[i * ldy + j], 3.f) << "wrote past N";
      }
  }
}

// Many tokens (prefill, encoders): the GEMM with tokens along the vector lanes. Token counts
// around its blocks (one or two vectors of 8 or 16 tokens, a last block of one vector or less),
// weight rows around its tiles (6 or 12 rows, every remainder) and panels, K across its chunks of
// 2048 columns (the second chunk adds into Y), X and Y with leading dimensions wider than K and N;
// against the generic twin within the pair bound, nothing written past N.
TEST_P(KernelTwin, MatmulManyTokens) {
  std::mt19937 rng(12);
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{8, 24, 64},    {9, 25, 33},    {16, 12, 7},    {16, 37, 100},  {17, 30, 5},
                          {31, 48, 172},  {32, 23, 64},   {33, 47, 96},   {40, 131, 768}, {48, 24, 1},
                          {128, 36, 300}, {20, 29, 2100}, {35, 14, 4200}, {64, 700, 96}};
  for (const Shape& sh : shapes) {
    const int64_t ldx = sh.k + 3, ldy = sh.n + 5;
    auto w = randv(sh.n * sh.k, rng), x = randv(sh.m * ldx, rng);
    std::vector<float> y0(sh.m * ldy, 3.f), y1(sh.m * ldy, 3.f);
    ref().matmul_f32(w.data(), sh.k, x.data(), ldx, y0.data(), ldy, sh.m, sh.n, sh.k);
    fast().matmul_f32(w.data(), sh.k, x.data(), ldx, y1.data(), ldy, sh.m, sh.n, sh.k);
    for (int64_t i = 0; i < sh.m; ++i)
      for (int64_t j = 0; j < ldy; ++j) {
        if (j < sh.n)
          ASSERT_NEAR(y0[i * ldy + j], y1[i * ldy + j], dot_tol(&w[j * sh.k], &x[i * ldx], sh.k))
              << "m=" << sh.m << " n=" << sh.n << " k=" << sh.k << " i=" << i << " j=" << j;
        else
          ASSERT_EQ(y1[i * ldy + j], 3.f) << "wrote past N: m=" << sh.m << " n=" << sh.n << " i=" << i;
      }
    // A token's outputs do not depend on which other tokens share the call, bit for bit (one FMA
    // chain per output, per K chunk): the tokens after the first, as a call of their own, while
    // that call still takes the lane-transposed form (>= 16 tokens, >= 24 weight rows).
    if (sh.m - 1 >= 16 && sh.n >= 24) {
      std::vector<float> y2((sh.m - 1) * ldy, 3.f);
      fast().matmul_f32(w.data(), sh.k, x.data() + ldx, ldx, y2.data(), ldy, sh.m - 1, sh.n, sh.k);
      for (int64_t i = 0; i + 1 < sh.m; ++i)
        for (int64_t j = 0; j < sh.n; ++j)
          ASSERT_EQ(y2[i * ldy + j], y1[(i + 1) * ldy + j]) << "m=" << sh.m << " n=" << sh.n << " i=" << i;
    }
  }
}

// encoder::exp_approx (SwiGLU's and the encoder's exp) against exp in double on 2^21 points spread
// over [-87, 88] and densely over [-20, 20], where activations live: the relative error stays below
// 1.2e-7 (2 u); KernelTwin.Elementwise's SwiGLU bound counts exp as 2 u. Above 88.03 (127.5 ln 2)
// it returns +inf, where float's exp overflows at 88.72: SwiGLU meets it only as exp(-g) for
// g < -88, where g / (1 + inf) = -0 stands for a value below 1e-36.
TEST(EncoderMath, ExpApproxRelativeError) {
  double worst = 0, at = 0;
  auto check = [&](double lo, double hi, int n) {
    for (int i = 0; i <= n; ++i) {
      const float x = static_cast<float>(lo + (hi - lo) * i / n);
      const double ref = std::exp(static_cast<double>(x));
      const double e = std::fabs(encoder::exp_approx(x) - ref) / ref;
      if (e > worst) worst = e, at = x;
    }
  };
  check(-87.0, 88.0, 1 << 20);
  check(-20.0, 20.0, 1 << 20);
  EXPECT_LT(worst, 2 * kF32U) << "at x = " << at;
  EXPECT_EQ(encoder::exp_approx(0.f), 1.f);
  EXPECT_GT(encoder::exp_approx(-1e30f), 0.f);  // clamped: exp(-87.33), not 0 or NaN
  EXPECT_EQ(encoder::exp_approx(89.f), INFINITY);
}

TEST_P(KernelTwin, Elementwise) {
  std::mt19937 rng(3);
  for (int64_t n : kSizes) {
    auto x = randv(n, rng, 4.f), w = randv(n, rng), g = randv(n, rng, 6.f), u = randv(n, rng);
    std::vector<float> a(n), b(n);
    // rmsnorm: out_i = x_i w_i / sqrt(sum x^2 / n + eps). The sum of squares carries gamma_n
    // relative error, halved by the square root; the division by n, + eps, sqrt, the reciprocal
    // and the two products add one rounding each (6 u). Twice that, relative to |out_i|.
    ref().rmsnorm(x.data(), w.data(), a.data(), n, 1e-5f);
    fast().rmsnorm(x.data(), w.data(), b.data(), n, 1e-5f);
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    const double inv = 1.0 / std::sqrt(ss / double(n) + 1e-5);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(a[i], b[i], 2 * (gamma_f32(n) / 2 + 6 * kF32U) * std::fabs(x[i] * w[i] * inv))
          << "rmsnorm n=" << n;
    // softmax: p_i = exp(x_i - max) / sum. std::exp (correctly rounded to within 1 ulp), the
    // subtraction and the division: 4 u each; the sum: gamma_n relative. Twice that.
    a = x;
    b = x;
    ref().softmax(a.data(), n);
    fast().softmax(b.data(), n);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(a[i], b[i], 2 * (gamma_f32(n) + 4 * kF32U) * a[i]) << "softmax n=" << n;
      sum += b[i];
    }
    // The probabilities sum to 1 within the rounding of each term and of this sum.
    ASSERT_NEAR(sum, 1.0, (gamma_f32(n) + 4 * kF32U) + gamma_f32(n));
    // swiglu: g / (1 + exp(-g)) * up: exp (within 2 u: std::exp, or exp_approx by
    // EncoderMath.ExpApproxRelativeError), +, /, *: 5 roundings each side.
    ref().swiglu(g.data(), u.data(), a.data(), n);
    fast().swiglu(g.data(), u.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(a[i], b[i], 2 * 5 * kF32U * std::fabs(a[i])) << "swiglu";
    // axpy: y + alpha x, one fused or two separate roundings: 2 u (|alpha x| + |y|) each side.
    a = u;
    b = u;
    ref().axpy_f32(0.37f, x.data(), a.data(), n);
    fast().axpy_f32(0.37f, x.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(a[i], b[i], 2 * 2 * kF32U * (std::fabs(0.37 * x[i]) + std::fabs(u[i]))) << "axpy";
  }
}

// Attention in double precision, position by position: the reference for the blocked kernels.
void attention_ref(const float* q, const std::vector<float>& kc, const std::vector<float>& vc,
                   int64_t n_pos, int64_t hd, int64_t stride, float scale, std::vector<double>& p,
                   std::vector<double>& o) {
  p.assign(n_pos, 0.0);
  o.assign(hd, 0.0);
  double mx = -1e300, sum = 0;
  for (int64_t t = 0; t < n_pos; ++t) {
    double s = 0;
    for (int64_t i = 0; i < hd; ++i) s += double(q[i]) * kc[t * stride + i];
    p[t] = s * scale;
    mx = std::max(mx, p[t]);
  }
  for (auto& v : p) sum += (v = std::exp(v - mx));
  for (auto& v : p) v /= sum;
  for (int64_t t = 0; t < n_pos; ++t)
    for (int64_t i = 0; i < hd; ++i) o[i] += p[t] * vc[t * stride + i];
}

// The encoder's element-wise numerics (encoder_math.h) are one source compiled at every level;
// measured against the generic twin on ragged lengths, with masks, folded second outputs and
// every activation. They agree to the rounding of a fused multiply-add where the compiler
// contracts one (the SIMD levels are built with FMA): each output within 8 u of its magnitude
// (a handful of contractable products per value; the LayerNorm sums use the same 16-way partials).
TEST_P(KernelTwin, EncoderNumericsMatchTheGenericTwin) {
  std::mt19937 rng(6);
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{63}, int64_t{128}, int64_t{768}}) {
    const auto bias = randv(n, rng), w = randv(n, rng), b = randv(n, rng), w2 = randv(n, rng), b2 = randv(n, rng);
    const auto a = randv(n, rng, 2.f);
    for (Activation act : {Activation::gelu, Activation::gelu_tanh, Activation::relu, Activation::none}) {
      const auto xin = randv(n, rng, 6.f);
      auto x0 = xin, x1 = xin;
      ref().bias_activation(x0.data(), bias.data(), n, act);
      fast().bias_activation(x1.data(), bias.data(), n, act);
      // GELU = 0.5 v (1 + erf): for v < 0 the bracket cancels, so a rounding of erf (or of the
      // tanh form's exp) is relative to 0.5 |v|, not to the small output: 8 u (|out| + |v|).
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(x0[i], x1[i], 8 * kF32U * (std::fabs(x0[i]) + std::fabs(xin[i] + bias[i])))
            << "activation " << int(act) << " n=" << n;
    }
    auto x0 = randv(n, rng, 3.f);
    auto x1 = x0;
    std::vector<float> o0(n), o1(n);
    ref().add_layer_norm(x0.data(), a.data(), bias.data(), w.data(), b.data(), n, 1e-12f, o0.data(), w2.data(), b2.data());
    fast().add_layer_norm(x1.data(), a.data(), bias.data(), w.data(), b.data(), n, 1e-12f, o1.data(), w2.data(), b2.data());
    for (int64_t i = 0; i < n; ++i) {
      // The normalised value (x - mean) inv is O(1); gamma and beta are in (-1, 1).
      ASSERT_NEAR(x0[i], x1[i], (gamma_f32(n) + 8 * kF32U) * 4) << "layer_norm n=" << n;
      ASSERT_NEAR(o0[i], o1[i], (gamma_f32(n) + 8 * kF32U) * 4) << "layer_norm out2 n=" << n;
    }
    std::vector<uint8_t> mask(n);
    for (auto& m : mask) m = rng() % 4 != 0;
    auto s0 = randv(n, rng, 4.f);
    auto s1 = s0;
    ref().masked_softmax(s0.data(), mask.data(), n, 0.14433757f);
    fast().masked_softmax(s1.data(), mask.data(), n, 0.14433757f);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(s0[i], s1[i], 2 * (gamma_f32(n) + 8 * kF32U) * s0[i] + 1e-30) << "softmax n=" << n;
      // A masked score's weight is exp of the clamped input (-87.33): ~1e-38, nothing beside the rest.
      if (!mask[i] && std::count(mask.begin(), mask.end(), 1) > 0) {
        ASSERT_LT(s1[i], 1e-37f) << "masked entry";
      }
    }
  }
}

// The transpose moves bits: every level writes exactly the generic twin's values (NaN payloads
// and negative zeros included), on shapes with every remainder of its 8 x 8 blocks, leaving what
// lies outside the destination block alone.
TEST_P(KernelTwin, TransposeMovesEveryElementBitForBit) {
  std::mt19937 rng(11);
  for (int64_t rows : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{13}, int64_t{64}, int64_t{128}})
    for (int64_t cols : {int64_t{1}, int64_t{5}, int64_t{8}, int64_t{17}, int64_t{64}}) {
      const int64_t lds = cols + 3, ldd = rows + 5;
      auto src = randv(rows * lds, rng, 4.f);
      src[0] = -0.0f;
      if (src.size() > 2) src[2] = std::nanf("7");
      std::vector<float> d0(cols * ldd, 9.5f), d1 = d0;
      ref().transpose_f32(src.data(), lds, rows, cols, d0.data(), ldd);
      fast().transpose_f32(src.data(), lds, rows, cols, d1.data(), ldd);
      ASSERT_EQ(0, std::memcmp(d0.data(), d1.data(), d0.size() * sizeof(float))) << rows << " x " << cols;
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t r = 0; r < ldd; ++r) {
          uint32_t a, b;
          const float want = r < rows ? src[r * lds + c] : 9.5f;
          std::memcpy(&a, &want, 4);
          std::memcpy(&b, &d1[c * ldd + r], 4);
          ASSERT_EQ(a, b) << "element (" << r << ", " << c << ") of " << rows << " x " << cols;
        }
    }
}

// GELU (erf form) against erf in double at every level, over [-12, 12] and a few extremes: the
// approximation's error (encoder_math.h's piecewise polynomials: below 1.4e-7 on erf, their fit
// and their evaluation in float together, with or without fused multiply-adds) is relative to
// 0.5 |v|, plus a few roundings of the output: |out - exact| <= 0.5 |v| 2e-7 + 8 u |exact|.
TEST_P(KernelTwin, GeluIsErfWithinTheApproximationsError) {
  std::vector<float> v;
  for (int i = -1200; i <= 1200; ++i) v.push_back(i * 0.01f);
  for (float e : {1e-30f, -1e-30f, 1e-5f, -1e-5f, 3.9f, -3.9f, 30.f, -30.f, 1e20f, -1e20f, 3e38f, -3e38f}) v.push_back(e);
  const int64_t n = static_cast<int64_t>(v.size());
  std::vector<float> x = v, zero(n, 0.f);
  fast().bias_activation(x.data(), zero.data(), n, Activation::gelu);
  for (int64_t i = 0; i < n; ++i) {
    const double exact = 0.5 * double(v[i]) * (1.0 + std::erf(double(v[i]) / std::sqrt(2.0)));
    ASSERT_NEAR(x[i], exact, 0.5 * std::fabs(double(v[i])) * 2e-7 + 8 * kF32U * std::fabs(exact)) << "v=" << v[i];
  }
}

// A bound on |computed - exact| for attention evaluated in binary32 in any order: the score
// s_t = scale q.k_t is off by d_t = (gamma_hd sum|q_i k_ti| + u |q.k_t|) scale; a softmax input
// error of at most d_t changes p_t by at most p_t (d_t + max d) (to first order), and the
// softmax's own rounding adds (gamma_n + 6 u) p_t; the output sum_t p_t v_ti then carries
// sum_t |dp_t| |v_ti| + gamma_n sum_t p_t |v_ti|. `p` and `o` are the exact (double) results.
struct AttentionBound {
  std::vector<double> p, o;
};
AttentionBound attention_bound(const float* q, const std::vector<float>& kc, const std::vector<float>& vc,
                               int64_t n_pos, int64_t hd, int64_t stride, double scale,
                               const std::vector<double>& p) {
  std::vector<double> d(n_pos);
  double dmax = 0;
  for (int64_t t = 0; t < n_pos; ++t) {
    double abs_sum = 0, dot = 0;
    for (int64_t i = 0; i < hd; ++i) {
      abs_sum += std::fabs(double(q[i]) * kc[t * stride + i]);
      dot += double(q[i]) * kc[t * stride + i];
    }
    d[t] = (gamma_f32(hd) * abs_sum + kF32U * std::fabs(dot)) * scale;
    dmax = std::max(dmax, d[t]);
  }
  AttentionBound b;
  b.p.resize(n_pos);
  b.o.assign(hd, 0.0);
  for (int64_t t = 0; t < n_pos; ++t) {
    // (1 + 2 dmax) covers the second-order terms of exp(d) for d << 1. The kernels' exp is
    // encoder::exp_approx (relative error below 2 u, ExpApproxRelativeError): 2 u in the
    // numerator, 2 u in every term of the sum (plus the sum's own gamma), 1 u each for the
    // reciprocal and the product.
    b.p[t] = p[t] * ((d[t] + dmax) * (1 + 2 * dmax) + gamma_f32(n_pos) + 6 * kF32U);
    for (int64_t i = 0; i < hd; ++i)
      b.o[i] += (b.p[t] + gamma_f32(n_pos) * p[t]) * std::fabs(vc[t * stride + i]);
  }
  return b;
}

TEST_P(KernelTwin, RopeAndAttention) {
  std::mt19937 rng(4);
  for (int64_t hd : {2, 8, 16, 64, 128}) {
    auto v = randv(3 * hd, rng), c = randv(hd / 2, rng), s = randv(hd / 2, rng);
    auto a = v, b = v;
    ref().rope(a.data(), 3, hd, c.data(), s.data());
    fast().rope(b.data(), 3, hd, c.data(), s.data());
    // (v0 c - v1 s, v0 s + v1 c): two products and a sum, fused or not: 2 u (|v0 c| + |v1 s|)
    // each side (|c|, |s| <= 1 here, |v| <= 1).
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 2 * 2 * kF32U * 2.0);
    for (int64_t n_pos : {1, 2, 17, 100}) {
      const int64_t stride = hd * 2 + 3;
      auto q = randv(hd, rng), kc = randv(n_pos * stride, rng), vc = randv(n_pos * stride, rng);
      std::vector<float> att0(n_pos), att1(n_pos), o0(hd), o1(hd);
      const float scale = 1.f / std::sqrt(float(hd));
      ref().attention(q.data(), kc.data(), vc.data(), 0, n_pos, hd, stride, scale, 0.0f, att0.data(),
                      o0.data());
      fast().attention(q.data(), kc.data(), vc.data(), 0, n_pos, hd, stride, scale, 0.0f, att1.data(),
                       o1.data());
      std::vector<double> p, o;
      attention_ref(q.data(), kc, vc, n_pos, hd, stride, scale, p, o);
      const AttentionBound bound = attention_bound(q.data(), kc, vc, n_pos, hd, stride, scale, p);
      for (int64_t i = 0; i < hd; ++i) ASSERT_NEAR(o0[i], o1[i], 2 * bound.o[i]) << "hd=" << hd;
    }
  }
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The half-precision KV cache: every level rounds f32 -> IEEE half to the same bits as the
// generic twin (round to nearest even, subnormals, overflow to infinity, NaN), and widens
// every one of the 65536 halves to the same float.
TEST_P(KernelTwin, HalfConversionsAreBitIdentical) {
  std::vector<float> x;
  for (float f : {0.f, -0.f, 1.f, -1.f, 65504.f, 65519.99f, 65520.f, -65520.f, 1e9f, 5.9604645e-8f,
                  2.9802322e-8f, 2.9802326e-8f, 6.1035156e-5f, 6.1e-5f, 1.00048828125f,
                  1.00146484375f, 1e-30f, float_of(0x7f800000u), float_of(0xff800000u),
                  float_of(0x7fc00001u), float_of(0x7f800123u), float_of(0xffc12345u)})
    x.push_back(f);
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 7919 * 13) x.push_back(float_of(static_cast<uint32_t>(u)));
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.f, 2.f);
  for (int i = 0; i < 100000; ++i) x.push_back(d(rng) * std::ldexp(1.f, static_cast<int>(rng() % 40) - 30));
  for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{13}, static_cast<int64_t>(x.size())}) {
    std::vector<uint16_t> a(n), b(n);
    ref().f32_to_f16(x.data(), a.data(), n);
    fast().f32_to_f16(x.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(a[i], b[i]) << "n=" << n << " x=" << x[i] << " bits=0x" << std::hex << bits_of(x[i]);
  }
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  for (int64_t n : {int64_t{5}, int64_t{65536}, int64_t{65535}}) {
    std::vector<float> a(n), b(n);
    ref().f16_to_f32(all.data(), a.data(), n);
    fast().f16_to_f32(all.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bits_of(a[i]), bits_of(b[i])) << "half 0x" << std::hex << i;
  }
}

// Two queries at once (a prefill's consecutive tokens, KernelTable::attention2) give each query's
// scores and output bit for bit as `attention` alone, at every level, f32 and half caches: the
// causal pair (n, n + 1) around the block size, sliding windows that start in different blocks
// or leave one query no whole block, head sizes with and without a vector tail.
TEST_P(KernelTwin, AttentionPairIsTwoSingleQueriesBitForBit) {
  std::mt19937 rng(6);
  for (int64_t hd : {8, 64, 100}) {
    const int64_t stride = hd * 2 + 3, max_pos = 70;
    auto kc = randv(max_pos * stride, rng, 2.f), vc = randv(max_pos * stride, rng);
    std::vector<uint16_t> kh(kc.size()), vh(vc.size());
    ref().f32_to_f16(kc.data(), kh.data(), static_cast<int64_t>(kc.size()));
    ref().f32_to_f16(vc.data(), vh.data(), static_cast<int64_t>(vc.size()));
    auto q = randv(2 * hd, rng, 2.f);
    const float scale = 1.f / std::sqrt(float(hd));
    struct Case { int64_t first0, n0, first1, n1; };
    std::vector<Case> cases;
    for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 68}) cases.push_back({0, n, 0, n + 1});
    for (Case c : {Case{3, 40, 4, 41}, Case{8, 40, 9, 41}, Case{7, 40, 17, 41}, Case{30, 37, 31, 38},
                   Case{0, 16, 9, 17}, Case{12, 69, 0, 70}, Case{5, 20, 5, 20}})
      cases.push_back(c);
    for (float softcap : {0.f, 5.f})
      for (const Case& c : cases) {
        SCOPED_TRACE(testing::Message() << "hd=" << hd << " first/n " << c.first0 << "/" << c.n0 << " and "
                                        << c.first1 << "/" << c.n1 << " softcap " << softcap);
        for (bool half : {false, true}) {
          std::vector<float> a1(max_pos, -7.f), b1(max_pos, -7.f), o1(2 * hd, -7.f);
          std::vector<float> a2(max_pos, -9.f), b2(max_pos, -9.f), o2(2 * hd, -9.f);
          if (half) {
            fast().attention_f16(q.data(), kh.data(), vh.data(), c.first0, c.n0, hd, stride, scale, softcap,
                                 a1.data(), o1.data());
            fast().attention_f16(q.data() + hd, kh.data(), vh.data(), c.first1, c.n1, hd, stride, scale, softcap,
                                 b1.data(), o1.data() + hd);
            fast().attention2_f16(q.data(), q.data() + hd, kh.data(), vh.data(), c.first0, c.n0, c.first1, c.n1,
                                  hd, stride, scale, softcap, a2.data(), b2.data(), o2.data(), o2.data() + hd);
          } else {
            fast().attention(q.data(), kc.data(), vc.data(), c.first0, c.n0, hd, stride, scale, softcap, a1.data(),
                             o1.data());
            fast().attention(q.data() + hd, kc.data(), vc.data(), c.first1, c.n1, hd, stride, scale, softcap,
                             b1.data(), o1.data() + hd);
            fast().attention2(q.data(), q.data() + hd, kc.data(), vc.data(), c.first0, c.n0, c.first1, c.n1, hd,
                              stride, scale, softcap, a2.data(), b2.data(), o2.data(), o2.data() + hd);
          }
          for (int64_t t = c.first0; t < c.n0; ++t) ASSERT_EQ(bits_of(a1[t]), bits_of(a2[t])) << "half " << half << " t=" << t;
          for (int64_t t = c.first1; t < c.n1; ++t) ASSERT_EQ(bits_of(b1[t]), bits_of(b2[t])) << "half " << half << " t=" << t;
          for (int64_t i = 0; i < 2 * hd; ++i) ASSERT_EQ(bits_of(o1[i]), bits_of(o2[i])) << "half " << half << " i=" << i;
        }
      }
  }
}

// The blocked kernels (8 positions per step) against the scalar reference on ragged position
// counts around the block size, for f32 and half caches; the per-position baseline too.
TEST_P(KernelTwin, AttentionMatchesScalarReferenceOnRaggedPositions) {
  std::mt19937 rng(5);
  for (int64_t hd : {8, 64}) {
    for (int64_t n_pos : {1, 3, 7, 8, 9, 130}) {
      const int64_t stride = hd * 2 + 3;  // grouped-query heads interleave in a row
      // Scores of order 1 after scaling: a peaked but not one-hot softmax.
      auto q = randv(hd, rng, 2.f), kc = randv(n_pos * stride, rng, 2.f), vc = randv(n_pos * stride, rng);
      const float scale = 1.f / std::sqrt(float(hd));
      std::vector<uint16_t> kh(kc.size()), vh(vc.size());
      ref().f32_to_f16(kc.data(), kh.data(), static_cast<int64_t>(kc.size()));
      ref().f32_to_f16(vc.data(), vh.data(), static_cast<int64_t>(vc.size()));
      std::vector<float> kd(kc.size()), vd(vc.size());  // the halves, widened
      ref().f16_to_f32(kh.data(), kd.data(), static_cast<int64_t>(kh.size()));
      ref().f16_to_f32(vh.data(), vd.data(), static_cast<int64_t>(vh.size()));

      std::vector<double> p32, o32, p16, o16;
      attention_ref(q.data(), kc, vc, n_pos, hd, stride, scale, p32, o32);
      attention_ref(q.data(), kd, vd, n_pos, hd, stride, scale, p16, o16);
      // The f16 reference really differs from the f32 one (the test would see a mixed-up cache).
      double d16 = 0;
      for (int64_t i = 0; i < hd; ++i) d16 = std::max(d16, std::fabs(o16[i] - o32[i]));
      EXPECT_GT(d16, 0.0);

      // Each kernel against the exact result within attention_bound (the half caches against the
      // exact attention over the widened halves: the halves are the kernel's input).
      const AttentionBound b32 = attention_bound(q.data(), kc, vc, n_pos, hd, stride, scale, p32);
      const AttentionBound b16 = attention_bound(q.data(), kd, vd, n_pos, hd, stride, scale, p16);
      auto check = [&](const char* what, const std::vector<double>& p, const std::vector<double>& o,
                       const AttentionBound& b, const std::vector<float>& att, const std::vector<float>& out) {
        for (int64_t t = 0; t < n_pos; ++t)
          ASSERT_NEAR(att[t], p[t], b.p[t]) << what << " hd=" << hd << " n_pos=" << n_pos << " t=" << t;
        for (int64_t i = 0; i < hd; ++i)
          ASSERT_NEAR(out[i], o[i], b.o[i]) << what << " hd=" << hd << " n_pos=" << n_pos << " i=" << i;
      };
      std::vector<float> att(n_pos), out(hd);
      for (const KernelTable* K : {&ref(), &fast()}) {
        K->attention(q.data(), kc.data(), vc.data(), 0, n_pos, hd, stride, scale, 0.0f, att.data(), out.data());
        check("attention", p32, o32, b32, att, out);
        K->attention_rowwise(q.data(), kc.data(), vc.data(), n_pos, hd, stride, scale, att.data(),
                             out.data());
        check("attention_rowwise", p32, o32, b32, att, out);
        K->attention_f16(q.data(), kh.data(), vh.data(), 0, n_pos, hd, stride, scale, 0.0f, att.data(),
                         out.data());
        check("attention_f16", p16, o16, b16, att, out);
      }
      // A sliding window: positions [first, n_pos) are the exact attention over that part of the
      // cache alone, within its bound; the scores sit at their positions in att.
      for (int64_t first : {int64_t{1}, n_pos / 2 + 1, n_pos - 1}) {
        if (first <= 0 || first >= n_pos) continue;
        const std::vector<float> kw(kc.begin() + first * stride, kc.end()), vw(vc.begin() + first * stride, vc.end());
        std::vector<double> pw, ow;
        attention_ref(q.data(), kw, vw, n_pos - first, hd, stride, scale, pw, ow);
        const AttentionBound bw = attention_bound(q.data(), kw, vw, n_pos - first, hd, stride, scale, pw);
        for (const KernelTable* K : {&ref(), &fast()}) {
          K->attention(q.data(), kc.data(), vc.data(), first, n_pos, hd, stride, scale, 0.0f, att.data(), out.data());
          for (int64_t t = first; t < n_pos; ++t)
            ASSERT_NEAR(att[t], pw[t - first], bw.p[t - first]) << "window from " << first << " n_pos=" << n_pos;
          for (int64_t i = 0; i < hd; ++i)
            ASSERT_NEAR(out[i], ow[i], bw.o[i]) << "window from " << first << " n_pos=" << n_pos << " i=" << i;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, KernelTwin, ::testing::ValuesIn(all_isas()), test::isa_param_name);

TEST(Generic, HalfRoundingIsIeeeNearestEven) {
  // The oracle itself, on hand-checked halves.
  const KernelTable& g = kernels_generic();
  const float x[] = {1.f, -2.f, 65504.f, 65519.f, 65520.f, 5.9604645e-8f /* 2^-24 */,
                     2.9802322e-8f /* 2^-25: a tie, to even (0) */, 8.9406967e-8f /* 1.5 * 2^-24: a tie, to even */,
                     1.00048828125f /* 1 + 2^-11: a tie, to even */, 1.00146484375f /* 1 + 3*2^-11 */,
                     6.097555e-5f /* largest subnormal half, 1023 * 2^-24 */, 1e-10f};
  const uint16_t want[] = {0x3c00, 0xc000, 0x7bff, 0x7bff, 0x7c00, 0x0001, 0x0000, 0x0002,
                           0x3c00, 0x3c02, 0x03ff, 0x0000};
  constexpr int n = static_cast<int>(sizeof(x) / sizeof(x[0]));
  uint16_t h[n];
  float back[n];
  g.f32_to_f16(x, h, n);
  g.f16_to_f32(h, back, n);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(h[i], want[i]) << "x=" << x[i];
    if (h[i] != 0x7c00) {
      EXPECT_NEAR(back[i], x[i], std::fabs(x[i]) * 4.9e-4f + 3e-8f) << "x=" << x[i];
    }
  }
  EXPECT_TRUE(std::isinf(back[4]));
}

TEST(Generic, MatvecIsExact) {
  // The oracle itself: a hand-computed product.
  const float w[] = {1, 2, 3, 4, 5, 6};
  const float x[] = {1, -1, 2};
  float y[2];
  kernels_generic().matvec_f32(w, 3, x, y, 2, 3);
  EXPECT_FLOAT_EQ(y[0], 1 - 2 + 6);
  EXPECT_FLOAT_EQ(y[1], 4 - 5 + 12);
}

}  // namespace
}  // namespace cibench
