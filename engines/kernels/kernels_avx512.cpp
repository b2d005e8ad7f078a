// AVX-512 kernels. This file alone is compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq.
#include <immintrin.h>

#include <cmath>

#include "engines/kernels/kernels.h"

namespace cibench {
namespace {

struct VecAvx512 {
  using T = __m512;
  static constexpr int64_t kWidth = 16;
  static inline __mmask16 tail_mask(int64_t n) {
    return static_cast<__mmask16>((1u << static_cast<unsigned>(n)) - 1u);
  }
  static inline T zero() { return _mm512_setzero_ps(); }
  static inline T set1(float f) { return _mm512_set1_ps(f); }
  static inline T load(const float* p) { return _mm512_loadu_ps(p); }
  static inline T load_partial(const float* p, int64_t n) {
    return _mm512_maskz_loadu_ps(tail_mask(n), p);
  }
  static inline void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static inline void store_partial(float* p, T v, int64_t n) {
    _mm512_mask_storeu_ps(p, tail_mask(n), v);
  }
  static inline T fmadd(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static inline T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static inline T add(T a, T b) { return _mm512_add_ps(a, b); }
  static inline float hsum(T v) { return _mm512_reduce_add_ps(v); }
};

#include "engines/kernels/simd_kernels.inc"

}  // namespace

const KernelTable& kernels_avx512() {
  static const KernelTable t = make_table<VecAvx512>(Isa::avx512);
  return t;
}

}  // namespace cibench
