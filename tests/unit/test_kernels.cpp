// Every fast kernel equals its generic twin within a stated tolerance, at every ISA this host
// supports, on random shapes including ragged ones (stories260K's feed-forward width is 172).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engines/core/cpu.h"
#include "engines/kernels/kernels.h"

namespace cibench {
namespace {

std::vector<float> randv(size_t n, std::mt19937& rng, float scale = 1.f) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Relative tolerance for f32 reductions of length k: summation order differs between twins.
float f32_tol(int64_t k, float magnitude) { return 1e-5f * std::sqrt(float(k)) * magnitude + 1e-6f; }

class KernelTwin : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not on this CPU";
  }
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
        ASSERT_NEAR(y0[r], y1[r], f32_tol(k, 1.f)) << "k=" << k << " rows=" << rows;
      ASSERT_NEAR(ref().dot_f32(w.data(), x.data(), k), fast().dot_f32(w.data(), x.data(), k),
                  f32_tol(k, 1.f));
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
          ASSERT_NEAR(y0[i], y1[i], f32_tol(k, 1.f)) << "m=" << m << " n=" << n << " k=" << k;
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
          ASSERT_NEAR(y0[i * ldy + j], y1[i * ldy + j], f32_tol(k, 1.f)) << "k=" << k << " i=" << i << " j=" << j;
        else
          ASSERT_EQ(y1[i * ldy + j], 3.f) << "wrote past N";
      }
  }
}

TEST_P(KernelTwin, Elementwise) {
  std::mt19937 rng(3);
  for (int64_t n : kSizes) {
    auto x = randv(n, rng, 4.f), w = randv(n, rng), g = randv(n, rng, 6.f), u = randv(n, rng);
    std::vector<float> a(n), b(n);
    ref().rmsnorm(x.data(), w.data(), a.data(), n, 1e-5f);
    fast().rmsnorm(x.data(), w.data(), b.data(), n, 1e-5f);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(a[i], b[i], 1e-5f) << "rmsnorm n=" << n;
    a = x;
    b = x;
    ref().softmax(a.data(), n);
    fast().softmax(b.data(), n);
    float sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(a[i], b[i], 1e-6f);
      sum += b[i];
    }
    ASSERT_NEAR(sum, 1.f, 1e-5f);
    ref().swiglu(g.data(), u.data(), a.data(), n);
    fast().swiglu(g.data(), u.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(a[i], b[i], 1e-6f);
    a = u;
    b = u;
    ref().axpy_f32(0.37f, x.data(), a.data(), n);
    fast().axpy_f32(0.37f, x.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(a[i], b[i], 1e-6f);
  }
}

TEST_P(KernelTwin, RopeAndAttention) {
  std::mt19937 rng(4);
  for (int64_t hd : {2, 8, 16, 64, 128}) {
    auto v = randv(3 * hd, rng), c = randv(hd / 2, rng), s = randv(hd / 2, rng);
    auto a = v, b = v;
    ref().rope(a.data(), 3, hd, c.data(), s.data());
    fast().rope(b.data(), 3, hd, c.data(), s.data());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-6f);
    for (int64_t n_pos : {1, 2, 17, 100}) {
      const int64_t stride = hd * 2 + 3;
      auto q = randv(hd, rng), kc = randv(n_pos * stride, rng), vc = randv(n_pos * stride, rng);
      std::vector<float> att0(n_pos), att1(n_pos), o0(hd), o1(hd);
      const float scale = 1.f / std::sqrt(float(hd));
      ref().attention(q.data(), kc.data(), vc.data(), n_pos, hd, stride, scale, att0.data(),
                      o0.data());
      fast().attention(q.data(), kc.data(), vc.data(), n_pos, hd, stride, scale, att1.data(),
                       o1.data());
      for (int64_t i = 0; i < hd; ++i) ASSERT_NEAR(o0[i], o1[i], 1e-5f) << "hd=" << hd;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, KernelTwin, ::testing::ValuesIn(all_isas()),
                         [](const ::testing::TestParamInfo<Isa>& p) { return std::string(isa_name(p.param)); });

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
