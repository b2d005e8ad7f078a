#pragma once
// The AVX2 + FMA + F16C vector-traits type shared by kernels_avx2.cpp (f32 kernels,
// simd_kernels.inc) and fmt_avx2.cpp (packed formats, fmt_dense.inc). Include only inside an AVX2
// (or higher) target region (isa_target.h), after the standard headers. Internal linkage
// (anonymous namespace): each of those files gets its own copy, so no inline function compiled
// for this level can be picked up elsewhere.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

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
  // Eight sums at once: out[j] = hsum(v[j]) for j < 8, the reductions sharing their shuffles and
  // adding in hsum's order ((x0+x4)+(x2+x6)) + ((x1+x5)+(x3+x7)), so each sum equals hsum's.
  static inline void hsum8(const T* v, float* out) {
    T w[4];  // w[j] = [v[j] halves added | v[j+4] halves added]
    for (int j = 0; j < 4; ++j)
      w[j] = _mm256_add_ps(_mm256_permute2f128_ps(v[j], v[j + 4], 0x20),
                           _mm256_permute2f128_ps(v[j], v[j + 4], 0x31));
    // s01 = [v0: x0+x2, v1: x0+x2, v0: x1+x3, v1: x1+x3] per lane; s23 likewise for v2, v3
    const T s01 = _mm256_add_ps(_mm256_unpacklo_ps(w[0], w[1]), _mm256_unpackhi_ps(w[0], w[1]));
    const T s23 = _mm256_add_ps(_mm256_unpacklo_ps(w[2], w[3]), _mm256_unpackhi_ps(w[2], w[3]));
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                                        _mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2))));
  }
  // kWidth IEEE halves <-> f32 (F16C; round to nearest even on the way down)
  static inline T load_h(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static inline T load_h_partial(const uint16_t* p, int64_t n) {
    alignas(16) uint16_t b[8] = {};
    std::memcpy(b, p, static_cast<size_t>(n) * sizeof(uint16_t));
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(b)));
  }
  static inline void store_h(uint16_t* p, T v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static inline void store_h_partial(uint16_t* p, T v, int64_t n) {
    alignas(16) uint16_t b[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(b),
                    _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    std::memcpy(p, b, static_cast<size_t>(n) * sizeof(uint16_t));
  }
  // kWidth int8 -> f32
  static inline T cvt_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  // kWidth bf16 (raw bytes) -> f32
  static inline T cvt_bf16(const uint8_t* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
  // 16 bytes of a 32-element int4 sub-block -> 4 vectors of (code - off) as f32, in order
  static inline void nib32(const uint8_t* p, int off, T* out) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i m = _mm_set1_epi8(0x0f), o = _mm_set1_epi8(static_cast<char>(off));
    const __m128i lo = _mm_sub_epi8(_mm_and_si128(b, m), o);
    const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), m), o);
    out[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
    out[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
    out[2] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
    out[3] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
  }
};

}  // namespace
}  // namespace cibench
