// AVX2 + FMA kernels. This file alone is compiled with -mavx2 -mfma -mf16c.
#include <immintrin.h>

#include <cmath>

#include "engines/kernels/kernels.h"

namespace cibench {
namespace {

struct VecAvx2 {
  using T = __m256;
  static constexpr int64_t kWidth = 8;
  static inline __m256i tail_mask(int64_t n) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), idx);
  }
  static inline T zero() { return _mm256_setzero_ps(); }
  static inline T set1(float f) { return _mm256_set1_ps(f); }
  static inline T load(const float* p) { return _mm256_loadu_ps(p); }
  static inline T load_partial(const float* p, int64_t n) {
    return _mm256_maskload_ps(p, tail_mask(n));
  }
  static inline void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static inline void store_partial(float* p, T v, int64_t n) {
    _mm256_maskstore_ps(p, tail_mask(n), v);
  }
  static inline T fmadd(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static inline T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static inline T add(T a, T b) { return _mm256_add_ps(a, b); }
  static inline float hsum(T v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

#include "engines/kernels/simd_kernels.inc"

}  // namespace

const KernelTable& kernels_avx2() {
  static const KernelTable t = make_table<VecAvx2>(Isa::avx2);
  return t;
}

}  // namespace cibench
