// AVX-512 (F/BW/VL/DQ) kernels of the packed formats. This file alone is compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512dq.
//   dense f32-activation formats (bf16, int8, int4): fmt_dense.inc over VecAvx512
//   w8a8: the AVX2 sign trick at 512 bits (_mm512_maddubs_epi16 + _mm512_madd_epi16)
//   sparse formats: none of their own here, so the table falls back to the AVX2 kernels.
// NOT EXECUTED on the development host (AMD EPYC Zen 3, no AVX-512): written to the Intel
// intrinsics documentation, compiled, dispatched only when cpuid reports AVX-512, and covered by
// the twin tests (tests/unit/test_formats.cpp), which skip here.
#include <immintrin.h>

#include <cstring>

#include "engines/kernels/fmt_common.h"

namespace cibench {
namespace fmt {
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
  static inline T fmadd(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static inline T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static inline T add(T a, T b) { return _mm512_add_ps(a, b); }
  static inline float hsum(T v) { return _mm512_reduce_add_ps(v); }
  static inline T cvt_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static inline T cvt_bf16(const uint8_t* p) {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
  static inline void nib32(const uint8_t* p, int off, T* out) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i m = _mm_set1_epi8(0x0f), o = _mm_set1_epi8(static_cast<char>(off));
    const __m128i lo = _mm_sub_epi8(_mm_and_si128(b, m), o);
    const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), m), o);
    out[0] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo));
    out[1] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi));
  }
};

#include "engines/kernels/fmt_dense.inc"

// ---- w8a8 at 512 bits ------------------------------------------------------------------------
struct Dot64Bw {
  // acc += 16 int32 partial sums of a . w over 64 int8 lanes: |w| (u8) x (a * sign w) (s8)
  // pairs, both sides in [-127, 127], so the int16 pair sums cannot saturate: exact.
  // (Where w == 0, |w| == 0 and the other side does not matter.)
  static inline __m512i acc(__m512i acc, __m512i a, __m512i w, __m512i wabs) {
    const __m512i sa = _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(w), _mm512_setzero_si512(), a);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(wabs, sa), _mm512_set1_epi16(1)));
  }
};

#include "engines/kernels/fmt_w8a8_512.inc"

}  // namespace

FormatKernels kernels_avx512(const Spec& s) {
  if (s.kind == Kind::w8a8) return FormatKernels{w8a8_matvec_512<Dot64Bw>, w8a8_matmul_512<Dot64Bw>};
  return dense_kernels<VecAvx512>(s);
}

}  // namespace fmt
}  // namespace cibench
