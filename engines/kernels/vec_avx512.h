#pragma once
// The AVX-512 (F/BW/VL/DQ) vector-traits type shared by kernels_avx512.cpp (f32 kernels,
// simd_kernels.inc) and fmt_avx512.cpp (packed formats, fmt_dense.inc). Include only inside an
// AVX-512 target region (isa_target.h), after the standard headers. Internal linkage (anonymous
// namespace), as in vec_avx2.h.
#include <immintrin.h>

#include <cstdint>

namespace cibench {
namespace {

struct VecAvx512 {
  using T = __m512;
  static constexpr int64_t kWidth = 16;
  static inline __mmask16 tail_mask(int64_t n) {
    return static_cast<__mmask16>((1u << static_cast<unsigned>(n)) - 1u);
  }
  // The lanes of the next vector that hold values when n are left (any n: none at n <= 0).
  static inline __mmask16 lanes(int64_t n) { return n >= kWidth ? __mmask16(0xffff) : n > 0 ? tail_mask(n) : 0; }
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
  // Eight sums at once: out[j] = hsum(v[j]) for j < 8 (halves folded, then as in VecAvx2).
  static inline void hsum8(const T* v, float* out) {
    __m256 h[8];
    for (int j = 0; j < 8; ++j)
      h[j] = _mm256_add_ps(_mm512_castps512_ps256(v[j]), _mm512_extractf32x8_ps(v[j], 1));
    const __m256 a = _mm256_hadd_ps(_mm256_hadd_ps(h[0], h[1]), _mm256_hadd_ps(h[2], h[3]));
    const __m256 b = _mm256_hadd_ps(_mm256_hadd_ps(h[4], h[5]), _mm256_hadd_ps(h[6], h[7]));
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20),
                                        _mm256_permute2f128_ps(a, b, 0x31)));
  }
  // kWidth IEEE halves <-> f32 (round to nearest even on the way down)
  static inline T load_h(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static inline T load_h_partial(const uint16_t* p, int64_t n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(tail_mask(n), p));
  }
  static inline void store_h(uint16_t* p, T v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static inline void store_h_partial(uint16_t* p, T v, int64_t n) {
    _mm256_mask_storeu_epi16(p, tail_mask(n),
                             _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  // kWidth int8 -> f32
  static inline T cvt_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  // kWidth bf16 (raw bytes) -> f32
  static inline T cvt_bf16(const uint8_t* p) {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
  // 16 bytes of a 32-element int4 sub-block -> 2 vectors of (code - off) as f32, in order
  static inline void nib32(const uint8_t* p, int off, T* out) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i m = _mm_set1_epi8(0x0f), o = _mm_set1_epi8(static_cast<char>(off));
    const __m128i lo = _mm_sub_epi8(_mm_and_si128(b, m), o);
    const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), m), o);
    out[0] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo));
    out[1] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi));
  }
};

}  // namespace
}  // namespace cibench
