// AVX2 + FMA kernels of the packed formats. This file alone is compiled with -mavx2 -mfma -mf16c.
//   dense f32-activation formats (bf16, int8, int4): fmt_dense.inc over VecAvx2
//   w8a8: sign trick + _mm256_maddubs_epi16 + _mm256_madd_epi16, exact int32 accumulation
//   sparse (f32_sparse, int8_sparse): u16 column lists, x gathered 8 at a time (scalar loads)
//   int8_bs: 1x16 blocks, contiguous x loads;  int8_24: in-register permutes of x
#include <immintrin.h>

#include <cstring>

#include "engines/kernels/fmt_common.h"

namespace cibench {
namespace fmt {
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
  static inline T fmadd(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static inline T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static inline T add(T a, T b) { return _mm256_add_ps(a, b); }
  static inline float hsum(T v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static inline T cvt_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static inline T cvt_bf16(const uint8_t* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
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

#include "engines/kernels/fmt_dense.inc"

inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// ---- w8a8 ------------------------------------------------------------------------------------
// a . w over 32 int8 lanes, as 8 int32 partial sums: |w| (u8) x (a * sign w) (s8) pairs fit in
// int16 because both sides are in [-127, 127]; exact.
inline __m256i dot32_i8(__m256i a, __m256i w, __m256i aw, __m256i ones) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(a, w)), ones);
}

template <int NR>
inline void w8a8_rows(const uint8_t* const* rows, int64_t kp, const uint8_t* act, float* y) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_si256();
  const uint8_t* a8 = act + kActHeader;
  for (int64_t c = 0; c < kp; c += 32) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a8 + c));
    for (int r = 0; r < NR; ++r) {
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r] + 4 + c));
      acc[r] = _mm256_add_epi32(acc[r], dot32_i8(a, w, _mm256_abs_epi8(w), ones));
    }
  }
  const float sx = load_f32(act);
  for (int r = 0; r < NR; ++r)
    y[r] = static_cast<float>(hsum_i32(acc[r])) * (load_f32(rows[r]) * sx);
}

void w8a8_matvec(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, float* y,
                 int64_t row_begin, int64_t row_end) {
  const int64_t kp = round_up(k, 32);
  const uint8_t* act = static_cast<const uint8_t*>(x);
  int64_t r = row_begin;
  for (; r + 4 <= row_end; r += 4) {
    const uint8_t* rows[4] = {w + r * row_bytes, w + (r + 1) * row_bytes, w + (r + 2) * row_bytes,
                              w + (r + 3) * row_bytes};
    w8a8_rows<4>(rows, kp, act, y + (r - row_begin));
  }
  for (; r < row_end; ++r) {
    const uint8_t* rows[1] = {w + r * row_bytes};
    w8a8_rows<1>(rows, kp, act, y + (r - row_begin));
  }
}

// MR activation rows x NR weight rows in registers (8 int32 accumulators at 4 x 2).
template <int MR, int NR>
inline void w8a8_tile(const uint8_t* const* rows, int64_t kp, const uint8_t* x, size_t xrb,
                      float* y, int64_t ldy) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int t = 0; t < NR; ++t) acc[i][t] = _mm256_setzero_si256();
  for (int64_t c = 0; c < kp; c += 32) {
    __m256i wv[NR], wa[NR];
    for (int t = 0; t < NR; ++t) {
      wv[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[t] + 4 + c));
      wa[t] = _mm256_abs_epi8(wv[t]);
    }
    for (int i = 0; i < MR; ++i) {
      const __m256i a =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i * xrb + kActHeader + c));
      for (int t = 0; t < NR; ++t)
        acc[i][t] = _mm256_add_epi32(acc[i][t], dot32_i8(a, wv[t], wa[t], ones));
    }
  }
  for (int i = 0; i < MR; ++i) {
    const float sx = load_f32(x + i * xrb);
    for (int t = 0; t < NR; ++t)
      y[i * ldy + t] = static_cast<float>(hsum_i32(acc[i][t])) * (load_f32(rows[t]) * sx);
  }
}

template <int NR>
inline void w8a8_tile_rows(const uint8_t* const* rows, int64_t kp, const uint8_t* x, size_t xrb,
                           int64_t m, float* y, int64_t ldy) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) w8a8_tile<4, NR>(rows, kp, x + i * xrb, xrb, y + i * ldy, ldy);
  for (; i < m; ++i) w8a8_tile<1, NR>(rows, kp, x + i * xrb, xrb, y + i * ldy, ldy);
}

void w8a8_matmul(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes,
                 int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  const int64_t kp = round_up(k, 32);
  const uint8_t* xa = static_cast<const uint8_t*>(x);
  int64_t r = row_begin;
  for (; r + 2 <= row_end; r += 2) {
    const uint8_t* rows[2] = {w + r * row_bytes, w + (r + 1) * row_bytes};
    w8a8_tile_rows<2>(rows, kp, xa, x_row_bytes, m, y + r, ldy);
  }
  if (r < row_end) {
    const uint8_t* rows[1] = {w + r * row_bytes};
    w8a8_tile_rows<1>(rows, kp, xa, x_row_bytes, m, y + r, ldy);
  }
}

// ---- sparse: shared row/token loops ----------------------------------------------------------
// S::dot<MR>(row, k, xs, y): y[i] = dot(row, xs[i]) for i < MR (the row decoded once for MR
// activation rows). matvec uses MR = 1; matmul walks rows, 4 activation rows at a time, so each
// row's compressed data is read from memory once and from L1 for the other tokens.
template <typename S>
void sparse_matvec(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, float* y,
                   int64_t row_begin, int64_t row_end) {
  const float* xs[1] = {static_cast<const float*>(x)};
  for (int64_t r = row_begin; r < row_end; ++r)
    S::template dot<1>(row_ptr(w, row_bytes, r), k, xs, y + (r - row_begin), 1);
}

template <typename S>
void sparse_matmul(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes,
                   int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  const float* xf = static_cast<const float*>(x);
  const int64_t ldx = static_cast<int64_t>(x_row_bytes / sizeof(float));
  // 8 activation rows at a time stay in L2 while every weight row of the range passes by.
  for (int64_t i0 = 0; i0 < m; i0 += 8) {
    const int64_t i1 = m - i0 < 8 ? m : i0 + 8;
    for (int64_t r = row_begin; r < row_end; ++r) {
      const uint8_t* row = row_ptr(w, row_bytes, r);
      int64_t i = i0;
      for (; i + 4 <= i1; i += 4) {
        const float* xs[4] = {xf + i * ldx, xf + (i + 1) * ldx, xf + (i + 2) * ldx, xf + (i + 3) * ldx};
        S::template dot<4>(row, k, xs, y + i * ldy + r, ldy);
      }
      for (; i < i1; ++i) {
        const float* xs[1] = {xf + i * ldx};
        S::template dot<1>(row, k, xs, y + i * ldy + r, ldy);
      }
    }
  }
}

inline __m256 cvt8_i8(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// x[idx[0..8)] for 8 u16 column indices. Scalar loads + inserts beat vgatherdps on Zen 3 by
// about 1.6x here (measured: 4096x4096 int8 at 90 % sparsity, 485 vs 800 us per matvec); the
// indices are read 4 at a time with one 64-bit load.
inline __m256 gather8(const float* x, const uint8_t* idx) {
  uint64_t q0, q1;
  std::memcpy(&q0, idx, 8);
  std::memcpy(&q1, idx + 8, 8);
  const __m128 lo = _mm_setr_ps(x[q0 & 0xffff], x[(q0 >> 16) & 0xffff], x[(q0 >> 32) & 0xffff], x[q0 >> 48]);
  const __m128 hi = _mm_setr_ps(x[q1 & 0xffff], x[(q1 >> 16) & 0xffff], x[(q1 >> 32) & 0xffff], x[q1 >> 48]);
  return _mm256_set_m128(hi, lo);
}

struct F32Sparse {
  template <int MR>
  static void dot(const uint8_t* row, int64_t, const float* const* xs, float* y, int64_t ldy) {
    const int64_t n = load_u32(row);
    const uint8_t* vals = row + 4;
    const uint8_t* idx = vals + 4 * n;
    __m256 acc[MR];
    for (int i = 0; i < MR; ++i) acc[i] = _mm256_setzero_ps();
    for (int64_t j = 0; j < n; j += 8) {
      const __m256 v = _mm256_loadu_ps(reinterpret_cast<const float*>(vals + 4 * j));
      for (int i = 0; i < MR; ++i) acc[i] = _mm256_fmadd_ps(v, gather8(xs[i], idx + 2 * j), acc[i]);
    }
    for (int i = 0; i < MR; ++i) y[i * ldy] = VecAvx2::hsum(acc[i]);
  }
};

struct Int8Sparse {
  template <int MR>
  static void dot(const uint8_t* row, int64_t, const float* const* xs, float* y, int64_t ldy) {
    const int64_t n = load_u32(row);
    const uint8_t* idx = row + 8;
    const uint8_t* vals = idx + 2 * n;
    __m256 acc[MR][2];
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
      const __m256 v0 = cvt8_i8(vals + j), v1 = cvt8_i8(vals + j + 8);
      for (int i = 0; i < MR; ++i) {
        acc[i][0] = _mm256_fmadd_ps(v0, gather8(xs[i], idx + 2 * j), acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(v1, gather8(xs[i], idx + 2 * j + 16), acc[i][1]);
      }
    }
    if (j < n) {
      const __m256 v0 = cvt8_i8(vals + j);
      for (int i = 0; i < MR; ++i) acc[i][0] = _mm256_fmadd_ps(v0, gather8(xs[i], idx + 2 * j), acc[i][0]);
    }
    const float s = load_f32(row + 4);
    for (int i = 0; i < MR; ++i) y[i * ldy] = VecAvx2::hsum(_mm256_add_ps(acc[i][0], acc[i][1])) * s;
  }
};

struct Int8BlockSparse {
  template <int MR>
  static void dot(const uint8_t* row, int64_t k, const float* const* xs, float* y, int64_t ldy) {
    const int64_t nb = load_u32(row);
    const uint8_t* idx = row + 8;
    const uint8_t* vals = idx + 2 * nb;
    __m256 acc[MR][2];
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int64_t j = 0; j < nb; ++j) {
      const int64_t c = load_u16(idx + 2 * j) * kSparseBlock;
      const __m256 w0 = cvt8_i8(vals + kSparseBlock * j), w1 = cvt8_i8(vals + kSparseBlock * j + 8);
      if (c + kSparseBlock <= k) {
        for (int i = 0; i < MR; ++i) {
          acc[i][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xs[i] + c), acc[i][0]);
          acc[i][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xs[i] + c + 8), acc[i][1]);
        }
      } else {  // the ragged last block: x is masked to zero beyond k
        const int64_t t = k - c;
        for (int i = 0; i < MR; ++i) {
          acc[i][0] = _mm256_fmadd_ps(w0, VecAvx2::load_partial(xs[i] + c, t), acc[i][0]);
          if (t > 8)
            acc[i][1] = _mm256_fmadd_ps(w1, VecAvx2::load_partial(xs[i] + c + 8, t - 8), acc[i][1]);
        }
      }
    }
    const float s = load_f32(row + 4);
    for (int i = 0; i < MR; ++i) y[i * ldy] = VecAvx2::hsum(_mm256_add_ps(acc[i][0], acc[i][1])) * s;
  }
};

struct Int8Semi24 {
  template <int MR>
  static void dot(const uint8_t* row, int64_t k, const float* const* xs, float* y, int64_t ldy) {
    const float s = load_f32(row);
    const uint8_t* p = row + 4;
    const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i seven = _mm256_set1_epi32(7);
    __m256 acc[MR];
    for (int i = 0; i < MR; ++i) acc[i] = _mm256_setzero_ps();
    for (int64_t c = 0; c < k; c += 16, p += 12) {
      const __m256i ix = _mm256_and_si256(
          _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(load_u32(p + 8))), shifts), seven);
      const __m256 v = cvt8_i8(p);
      for (int i = 0; i < MR; ++i) {
        __m256 lo, hi;
        if (c + 16 <= k) {
          lo = _mm256_loadu_ps(xs[i] + c);
          hi = _mm256_loadu_ps(xs[i] + c + 8);
        } else {
          lo = VecAvx2::load_partial(xs[i] + c, k - c < 8 ? k - c : 8);
          hi = k - c > 8 ? VecAvx2::load_partial(xs[i] + c + 8, k - c - 8) : _mm256_setzero_ps();
        }
        const __m256 xv = _mm256_blend_ps(_mm256_permutevar8x32_ps(lo, ix),
                                          _mm256_permutevar8x32_ps(hi, ix), 0xf0);
        acc[i] = _mm256_fmadd_ps(v, xv, acc[i]);
      }
    }
    for (int i = 0; i < MR; ++i) y[i * ldy] = VecAvx2::hsum(acc[i]) * s;
  }
};

template <typename S>
FormatKernels sparse_kernels() {
  return FormatKernels{sparse_matvec<S>, sparse_matmul<S>};
}

// Unstructured sparse matmul: 8 activation rows at a time are transposed into a stack buffer
// (column-major, 8 tokens per column, 2048 columns per chunk: 64 KB), so every stored non-zero
// costs one broadcast + one load + one FMA for 8 tokens instead of a gather per token.
// S: columns(row), count(row), value(row, j) (scale folded in later), scale(row).
constexpr int64_t kTokBlock = 8, kColChunk = 2048;

inline int64_t lower_col(const uint8_t* idx, int64_t n, int64_t col) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (load_u16(idx + 2 * mid) < col) lo = mid + 1; else hi = mid;
  }
  return lo;
}

template <typename S>
void sparse_matmul_t(const uint8_t* w, size_t row_bytes, int64_t k, const void* x,
                     size_t x_row_bytes, int64_t m, float* y, int64_t ldy, int64_t row_begin,
                     int64_t row_end) {
  if (m < 4) {
    sparse_matmul<S>(w, row_bytes, k, x, x_row_bytes, m, y, ldy, row_begin, row_end);
    return;
  }
  const float* xf = static_cast<const float*>(x);
  const int64_t ldx = static_cast<int64_t>(x_row_bytes / sizeof(float));
  alignas(64) float xt[kColChunk * kTokBlock];
  for (int64_t i0 = 0; i0 < m; i0 += kTokBlock) {
    const int64_t tb = m - i0 < kTokBlock ? m - i0 : kTokBlock;
    for (int64_t c0 = 0; c0 < k; c0 += kColChunk) {
      const int64_t kc = k - c0 < kColChunk ? k - c0 : kColChunk;
      for (int64_t t = 0; t < kTokBlock; ++t) {
        const float* src = xf + (i0 + t) * ldx + c0;
        if (t < tb) {
          for (int64_t c = 0; c < kc; ++c) xt[c * kTokBlock + t] = src[c];
        } else {
          for (int64_t c = 0; c < kc; ++c) xt[c * kTokBlock + t] = 0.f;
        }
      }
      const bool whole = c0 == 0 && kc == k;
      for (int64_t r = row_begin; r < row_end; ++r) {
        const uint8_t* row = row_ptr(w, row_bytes, r);
        const int64_t n = S::count(row);
        const uint8_t* idx = S::columns(row);
        const int64_t j0 = whole || c0 == 0 ? 0 : lower_col(idx, n, c0);
        const int64_t j1 = whole || c0 + kc >= k ? n : lower_col(idx, n, c0 + kc);
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
        int64_t j = j0;
        for (; j + 2 <= j1; j += 2) {
          a0 = _mm256_fmadd_ps(_mm256_set1_ps(S::value(row, n, j)),
                               _mm256_load_ps(xt + (load_u16(idx + 2 * j) - c0) * kTokBlock), a0);
          a1 = _mm256_fmadd_ps(_mm256_set1_ps(S::value(row, n, j + 1)),
                               _mm256_load_ps(xt + (load_u16(idx + 2 * j + 2) - c0) * kTokBlock), a1);
        }
        if (j < j1)
          a0 = _mm256_fmadd_ps(_mm256_set1_ps(S::value(row, n, j)),
                               _mm256_load_ps(xt + (load_u16(idx + 2 * j) - c0) * kTokBlock), a0);
        alignas(32) float out[kTokBlock];
        _mm256_store_ps(out, _mm256_mul_ps(_mm256_add_ps(a0, a1), _mm256_set1_ps(S::scale(row))));
        for (int64_t t = 0; t < tb; ++t) {
          float& o = y[(i0 + t) * ldy + r];
          o = c0 == 0 ? out[t] : o + out[t];
        }
      }
    }
  }
}

struct F32SparseT : F32Sparse {
  static int64_t count(const uint8_t* row) { return load_u32(row); }
  static const uint8_t* columns(const uint8_t* row) { return row + 4 + 4 * int64_t{load_u32(row)}; }
  static float value(const uint8_t* row, int64_t, int64_t j) { return load_f32(row + 4 + 4 * j); }
  static float scale(const uint8_t*) { return 1.f; }
};
struct Int8SparseT : Int8Sparse {
  static int64_t count(const uint8_t* row) { return load_u32(row); }
  static const uint8_t* columns(const uint8_t* row) { return row + 8; }
  static float value(const uint8_t* row, int64_t n, int64_t j) {
    return static_cast<float>(static_cast<int8_t>(row[8 + 2 * n + j]));
  }
  static float scale(const uint8_t* row) { return load_f32(row + 4); }
};

}  // namespace

FormatKernels kernels_avx2(const Spec& s) {
  switch (s.kind) {
    case Kind::w8a8: return FormatKernels{w8a8_matvec, w8a8_matmul};
    case Kind::f32_sparse: return FormatKernels{sparse_matvec<F32Sparse>, sparse_matmul_t<F32SparseT>};
    case Kind::int8_sparse: return FormatKernels{sparse_matvec<Int8Sparse>, sparse_matmul_t<Int8SparseT>};
    case Kind::int8_bs: return sparse_kernels<Int8BlockSparse>();
    case Kind::int8_24: return sparse_kernels<Int8Semi24>();
    default: return dense_kernels<VecAvx2>(s);
  }
}

}  // namespace fmt
}  // namespace cibench
