// AVX2 + FMA + F16C kernels of the packed formats, in the AVX2 target region (isa_target.h): internal
// linkage all, reached through isa_entry::fmt_avx2 only.
//   dense f32-activation formats (bf16, int8, int4): fmt_dense.inc over VecAvx2, except the int4
//   matvec (zero-extending nibble loads, zero point applied per group with the sum of x)
//   w8a8: sign trick + _mm256_maddubs_epi16 + _mm256_madd_epi16, exact int32 accumulation
//   w8a7: 7-bit unsigned activations straight into _mm256_maddubs_epi16 (no sign trick), exact
//   activation quantisers of w8a8 / w8a7, bit-identical to the reference ones
//   int4_gG_a8: unsigned codes x int8 activations with maddubs/madd, int32 per group, bit-exact
//   int8_g32_a8: the sign trick per block of 32 with maddubs/madd, int32 per block, bit-exact
//   sparse (f32_sparse, int8_sparse): u16 columns / u16 base + u8 offsets per 8, x gathered 8 at a
//   time (scalar loads)
//   int8_bs: 1x16 blocks, contiguous x loads;  int8_24: in-register permutes of x
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engines/kernels/fmt_common.h"
#include "engines/kernels/half.h"
#include "engines/kernels/isa_entries.h"
#include "engines/kernels/isa_target.h"

CIBENCH_TARGET_BEGIN_AVX2
#include "engines/kernels/fmt_decode_layout.h"
#include "engines/kernels/transpose_avx.h"
#include "engines/kernels/vec_avx2.h"

namespace cibench {
namespace fmt {
namespace {

#include "engines/kernels/gemm_xt.inc"
#include "engines/kernels/fmt_dense.inc"

inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// ---- w8a8 and w8a7: int8 weights x int8 activation rows -------------------------------------
// Both are written once over a dot step D:
//   D::kHeader              bytes before a weight row's int8 values
//   D::prep(w)              per weight vector, shared by every activation row (w8a8: |w|)
//   D::dot(a, w, p, ones)   8 int32 partial sums of a . w over 32 int8 lanes, exact
//   D::finish(sum, row, x)  the output from the exact int32 sum
// w8a8: |w| (u8) x (a * sign w) (s8) pairs fit in int16 because both sides are in [-127, 127].
// w8a7: the unsigned 7-bit activations go straight into _mm256_maddubs_epi16 (pairs of products
// stay inside int16: 2 x 127 x 127), one instruction fewer per 32 products and no |w|; the zero
// point comes off once per output: sum(q w) - z sum(w).
static_assert(2 * 127 * 127 <= 32767, "a maddubs pair of 7-bit x int8 products fits int16");

struct W8a8Dot {
  static constexpr int64_t kHeader = 4;
  static __m256i prep(__m256i w) { return _mm256_abs_epi8(w); }
  static __m256i dot(__m256i a, __m256i w, __m256i wabs, __m256i ones) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(wabs, _mm256_sign_epi8(a, w)), ones);
  }
  static float finish(int32_t s, const uint8_t* row, const uint8_t* x) {
    return static_cast<float>(s) * (load_f32(row) * load_f32(x));
  }
};

struct W8a7Dot {
  static constexpr int64_t kHeader = kW8a7Header;
  static __m256i prep(__m256i w) { return w; }
  static __m256i dot(__m256i a, __m256i w, __m256i, __m256i ones) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(a, w), ones);
  }
  static float finish(int32_t s, const uint8_t* row, const uint8_t* x) {
    return static_cast<float>(s - load_i32(x + 4) * load_i32(row + 4)) * (load_f32(row) * load_f32(x));
  }
};

inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// NR weight rows against one activation row (decode); output r goes to y[r * ys]. With
// Prefetch, the NR rows at `next` (adjacent to these) are prefetched at the pace these are read.
template <typename D, int NR, bool Prefetch>
inline void int8_rows(const uint8_t* const* rows, const uint8_t* next, int64_t kp, const uint8_t* act,
                      float* y, int64_t ys) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_si256();
  const uint8_t* a8 = act + kActHeader;
  for (int64_t c = 0; c < kp; c += 32) {
    if constexpr (Prefetch) prefetch_span(next + NR * c, NR * 32);
    const __m256i a = load32(a8 + c);
    for (int r = 0; r < NR; ++r) {
      const __m256i w = load32(rows[r] + D::kHeader + c);
      acc[r] = _mm256_add_epi32(acc[r], D::dot(a, w, D::prep(w), ones));
    }
  }
  for (int r = 0; r < NR; ++r) y[r * ys] = D::finish(hsum_i32(acc[r]), rows[r], act);
}

// Tiles of 4 rows a quarter of the range apart (r, r + q, r + 2q, r + 3q), then the rest one by
// one. Each of the four load streams walks consecutive rows (contiguous memory) for a quarter of
// the matrix, which the hardware prefetcher follows by itself: 1.6x the bytes per second of four
// adjacent rows with a software prefetch of the next four on one thread at 5632x2048 (26.0 vs
// 16.1 GB/s, standalone A/B of the same dot step, load 0.4). Each output is the same exact sum.
template <typename D>
void int8_matvec(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, float* y,
                 int64_t row_begin, int64_t row_end) {
  const int64_t kp = round_up(k, 32);
  const uint8_t* act = static_cast<const uint8_t*>(x);
  const int64_t q = (row_end - row_begin) / 4;
  const size_t qb = static_cast<size_t>(q) * row_bytes;
  for (int64_t t = 0; t < q; ++t) {
    const uint8_t* r0 = w + (row_begin + t) * row_bytes;
    const uint8_t* rows[4] = {r0, r0 + qb, r0 + 2 * qb, r0 + 3 * qb};
    int8_rows<D, 4, false>(rows, nullptr, kp, act, y + t, q);
  }
  for (int64_t r = row_begin + 4 * q; r < row_end; ++r) {
    const uint8_t* rows[1] = {w + r * row_bytes};
    int8_rows<D, 1, true>(rows, rows[0] + row_bytes, kp, act, y + (r - row_begin), 1);
  }
}

// MR activation rows x NR weight rows in registers (8 int32 accumulators at 4 x 2). `next` is the
// first of the NR rows after these (adjacent): one line of each is prefetched every other step,
// so the next pair of rows is in L1 when the first tile of the next column starts.
template <typename D, int MR, int NR>
inline void int8_tile(const uint8_t* const* rows, const uint8_t* next, size_t row_bytes, int64_t kp,
                      const uint8_t* x, size_t xrb, float* y, int64_t ldy) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int t = 0; t < NR; ++t) acc[i][t] = _mm256_setzero_si256();
  for (int64_t c = 0; c < kp; c += 32) {
    if ((c & 63) == 0)
      for (int t = 0; t < NR; ++t) __builtin_prefetch(next + t * row_bytes + c, 0, 3);
    __m256i wv[NR], wp[NR];
    for (int t = 0; t < NR; ++t) {
      wv[t] = load32(rows[t] + D::kHeader + c);
      wp[t] = D::prep(wv[t]);
    }
    for (int i = 0; i < MR; ++i) {
      const __m256i a = load32(x + i * xrb + kActHeader + c);
      for (int t = 0; t < NR; ++t) acc[i][t] = _mm256_add_epi32(acc[i][t], D::dot(a, wv[t], wp[t], ones));
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int t = 0; t < NR; ++t) y[i * ldy + t] = D::finish(hsum_i32(acc[i][t]), rows[t], x + i * xrb);
}

// Walks the m activation rows against NR weight rows.
template <typename D, int NR>
inline void int8_tile_rows(const uint8_t* const* rows, const uint8_t* next, size_t row_bytes,
                           int64_t kp, const uint8_t* x, size_t xrb, int64_t m, float* y,
                           int64_t ldy) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4)
    int8_tile<D, 4, NR>(rows, next, row_bytes, kp, x + i * xrb, xrb, y + i * ldy, ldy);
  // The last 1-3 rows in one tile, so the weight loads are shared by all of them.
  switch (m - i) {
    case 3: int8_tile<D, 3, NR>(rows, next, row_bytes, kp, x + i * xrb, xrb, y + i * ldy, ldy); break;
    case 2: int8_tile<D, 2, NR>(rows, next, row_bytes, kp, x + i * xrb, xrb, y + i * ldy, ldy); break;
    case 1: int8_tile<D, 1, NR>(rows, next, row_bytes, kp, x + i * xrb, xrb, y + i * ldy, ldy); break;
    default: break;
  }
}

// Pairs of weight rows (then a last single one), each against every activation row.
template <typename D>
void int8_matmul(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes,
                 int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  const int64_t kp = round_up(k, 32);
  const uint8_t* xa = static_cast<const uint8_t*>(x);
  int64_t r = row_begin;
  for (; r + 2 <= row_end; r += 2) {
    const uint8_t* rows[2] = {w + r * row_bytes, w + (r + 1) * row_bytes};
    int8_tile_rows<D, 2>(rows, rows[0] + 2 * row_bytes, row_bytes, kp, xa, x_row_bytes, m, y + r, ldy);
  }
  if (r < row_end) {
    const uint8_t* rows[1] = {w + r * row_bytes};
    int8_tile_rows<D, 1>(rows, rows[0] + row_bytes, row_bytes, kp, xa, x_row_bytes, m, y + r, ldy);
  }
}

// ---- activation quantisers (bit-identical to fmt_pack.cpp's act8_quantize / act7_quantize) -----
// 32 int32 lanes (4 vectors, values 0..255 or -127..127) to 32 bytes in order.
inline __m256i pack32(__m256i a, __m256i b, __m256i c, __m256i d, bool is_unsigned) {
  const __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
  const __m256i v = is_unsigned ? _mm256_packus_epi16(ab, cd) : _mm256_packs_epi16(ab, cd);
  return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

inline float hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}
inline float hmin8(__m256 v) {
  __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  m = _mm_min_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

void act8_quantize_avx2(const float* x, int64_t k, void* dst_v) {
  uint8_t* dst = static_cast<uint8_t*>(dst_v);
  std::memset(dst, 0, static_cast<size_t>(kActHeader));
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 va = _mm256_setzero_ps(), vb = va, vc = va, vd = va;
  int64_t i = 0;
  // max(v, acc) keeps acc where v is NaN, as std::max(acc, v) does in the reference; the maximum
  // in four independent chains (one chain of vmaxps was half of this function's time).
  for (; i + 32 <= k; i += 32) {
    va = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), absmask), va);
    vb = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i + 8), absmask), vb);
    vc = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i + 16), absmask), vc);
    vd = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i + 24), absmask), vd);
  }
  for (; i + 8 <= k; i += 8) va = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), absmask), va);
  float amax = hmax8(_mm256_max_ps(_mm256_max_ps(va, vb), _mm256_max_ps(vc, vd)));
  for (; i < k; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float scale = amax / 127.f;
  const float inv = scale > 0.f ? 1.f / scale : 0.f;
  std::memcpy(dst, &scale, 4);
  int8_t* v = reinterpret_cast<int8_t*>(dst + kActHeader);
  const __m256 vinv = _mm256_set1_ps(inv), lo = _mm256_set1_ps(-127.f), hi = _mm256_set1_ps(127.f),
               magic = _mm256_set1_ps(12582912.f);
  auto q8 = [&](const float* p) {
    __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(p), vinv), lo), hi);
    t = _mm256_sub_ps(_mm256_add_ps(t, magic), magic);
    return _mm256_cvtps_epi32(t);
  };
  i = 0;
  for (; i + 32 <= k; i += 32)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + i),
                        pack32(q8(x + i), q8(x + i + 8), q8(x + i + 16), q8(x + i + 24), false));
  for (; i < k; ++i) v[i] = round_clamp127(x[i] * inv);
  for (; i < round_up(k, 32); ++i) v[i] = 0;
}

// Per block of G (int4_gG_a8, int8_g32_a8): fmt_pack.cpp's actb_quantize, bit for bit. Whole
// blocks in vectors (the amax as act8_quantize_avx2 takes it, the values 32 at a time, the block
// sum of the int32 lanes); a ragged last block as the reference does it.
template <int G>
void actb_quantize_avx2(const float* x, int64_t k, void* dst_v) {
  uint8_t* dst = static_cast<uint8_t*>(dst_v);
  const int64_t nb = actb_blocks(k, G), hdr = actb_header(k, G);
  std::memset(dst, 0, static_cast<size_t>(hdr));
  int8_t* v = reinterpret_cast<int8_t*>(dst + hdr);
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 lo = _mm256_set1_ps(-127.f), hi = _mm256_set1_ps(127.f), magic = _mm256_set1_ps(12582912.f);
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t c0 = b * G, n = k - c0 < G ? k - c0 : G;
    const float* xb = x + c0;
    float amax = 0.f;
    int64_t i = 0;
    if (n == G) {
      __m256 va = _mm256_setzero_ps();
      for (; i < G; i += 8) va = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(xb + i), absmask), va);
      amax = hmax8(va);
    }
    for (; i < n; ++i) amax = std::max(amax, std::fabs(xb[i]));
    const float scale = amax / 127.f;
    const float inv = scale > 0.f ? 1.f / scale : 0.f;
    int32_t sum = 0;
    if (n == G) {
      const __m256 vinv = _mm256_set1_ps(inv);
      auto q8 = [&](const float* p) {
        __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(p), vinv), lo), hi);
        t = _mm256_sub_ps(_mm256_add_ps(t, magic), magic);
        return _mm256_cvtps_epi32(t);
      };
      __m256i vs = _mm256_setzero_si256();
      for (int64_t j = 0; j < G; j += 32) {
        const __m256i a = q8(xb + j), bq = q8(xb + j + 8), c = q8(xb + j + 16), d = q8(xb + j + 24);
        vs = _mm256_add_epi32(vs, _mm256_add_epi32(_mm256_add_epi32(a, bq), _mm256_add_epi32(c, d)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + c0 + j), pack32(a, bq, c, d, false));
      }
      __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(vs), _mm256_extracti128_si256(vs, 1));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
      sum = _mm_cvtsi128_si32(s4);
    } else {
      for (int64_t j = 0; j < n; ++j) {
        v[c0 + j] = round_clamp127(xb[j] * inv);
        sum += v[c0 + j];
      }
    }
    std::memcpy(dst + 4 * b, &scale, 4);
    std::memcpy(dst + 4 * nb + 4 * b, &sum, 4);
  }
  for (int64_t i = k; i < round_up(k, 32); ++i) v[i] = 0;
}

void act7_quantize_avx2(const float* x, int64_t k, void* dst_v) {
  uint8_t* dst = static_cast<uint8_t*>(dst_v);
  std::memset(dst, 0, static_cast<size_t>(kActHeader));
  __m256 vmn = _mm256_setzero_ps(), vmx = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    vmn = _mm256_min_ps(xv, vmn);
    vmx = _mm256_max_ps(xv, vmx);
  }
  float mn = hmin8(vmn), mx = hmax8(vmx);
  for (; i < k; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  const Act7Params p = act7_params(mn, mx);
  std::memcpy(dst, &p.scale, 4);
  const int32_t z = static_cast<int32_t>(p.zf);
  std::memcpy(dst + 4, &z, 4);
  uint8_t* v = dst + kActHeader;
  const __m256 vinv = _mm256_set1_ps(p.inv), zf = _mm256_set1_ps(p.zf),
               tlo = _mm256_set1_ps(-128.f), thi = _mm256_set1_ps(128.f),
               qhi = _mm256_set1_ps(127.f), zero = _mm256_setzero_ps(),
               magic = _mm256_set1_ps(12582912.f);
  auto q7 = [&](const float* ptr) {
    __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(ptr), vinv), tlo), thi);
    t = _mm256_add_ps(_mm256_sub_ps(_mm256_add_ps(t, magic), magic), zf);
    return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(t, zero), qhi));
  };
  i = 0;
  for (; i + 32 <= k; i += 32)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + i),
                        pack32(q7(x + i), q7(x + i + 8), q7(x + i + 16), q7(x + i + 24), true));
  for (; i < k; ++i) v[i] = act7_q(x[i], p);
  for (; i < round_up(k, 32); ++i) v[i] = 0;
}

// ---- int4 (f32 activations) matvec ------------------------------------------------------------
// Faster than the shared template on AVX2: 8 nibble bytes are zero-extended straight from memory
// to 8 int32 (vpmovzxbd), low nibbles = elements j, high nibbles (>> 4, no mask) = elements 16 + j,
// and the unsigned codes q are multiplied with x; the zero point is applied once per group with the
// group's sum of x (shared by the 4 rows): sym d * (sum q x - 8 sum x), asym d * sum q x + m sum x.
// The f16 scales go through F16C (vcvtph2ps) and are broadcast; the scalar half_to_float of the
// template (which the generic twin keeps) cost as much per group as the sub-block itself at G = 32.
// Per sub-block each row's 4 products go straight into its one group accumulator (4 FMAs; the
// former mul + mul + fma + fma + add + add did the same work in 6 operations).
inline __m256 f16_broadcast(const uint8_t* h) {
  return _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(load_u16(h))));
}

template <int G, bool Asym, int NR>
inline void int4z_rows(const uint8_t* const* rows, const uint8_t* next, int64_t k, const float* x,
                       float* y) {
  constexpr int64_t hdr = Asym ? 4 : 2;
  const int64_t gb = int4_group_bytes(G, Asym);
  const __m256i m4 = _mm256_set1_epi32(0x0f);
  __m256 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t g = 0; g < k; g += G) {
    const int64_t n = k - g < G ? k - g : G;
    const int64_t gi = g / G;
    __m256 sq[NR];
    for (int r = 0; r < NR; ++r) sq[r] = _mm256_setzero_ps();
    __m256 sx = _mm256_setzero_ps();
    for (int64_t s = 0; s < n; s += 32) {
      __m256 xv[4];
      if (g + s + 32 <= k) {
        for (int v = 0; v < 4; ++v) xv[v] = _mm256_loadu_ps(x + g + s + 8 * v);
      } else {
        load_x32<VecAvx2>(x, g + s, k, xv);
      }
      // the step over sub-block s reads [gi * gb + (s ? hdr + s / 2 : 0), + (s ? 16 : hdr + 16))
      // of each row: consecutive steps cover the row, so every line of the next rows is touched
      prefetch_span(next + NR * (gi * gb + (s ? hdr + s / 2 : 0)), NR * (s ? 16 : hdr + 16));
      sx = _mm256_add_ps(sx, _mm256_add_ps(_mm256_add_ps(xv[0], xv[1]), _mm256_add_ps(xv[2], xv[3])));
      for (int r = 0; r < NR; ++r) {
        const uint8_t* p = rows[r] + gi * gb + hdr + s / 2;
        const __m256i b0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
        const __m256i b1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8)));
        sq[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(b0, m4)), xv[0], sq[r]);
        sq[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(b1, m4)), xv[1], sq[r]);
        sq[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(b0, 4)), xv[2], sq[r]);
        sq[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(b1, 4)), xv[3], sq[r]);
      }
    }
    for (int r = 0; r < NR; ++r) {
      const uint8_t* h = rows[r] + gi * gb;
      const __m256 d = f16_broadcast(h);
      if constexpr (Asym) {
        acc[r] = _mm256_fmadd_ps(d, sq[r], acc[r]);
        acc[r] = _mm256_fmadd_ps(f16_broadcast(h + 2), sx, acc[r]);
      } else {
        acc[r] = _mm256_fmadd_ps(d, _mm256_fnmadd_ps(_mm256_set1_ps(8.f), sx, sq[r]), acc[r]);
      }
    }
  }
  for (int r = 0; r < NR; ++r) y[r] = VecAvx2::hsum(acc[r]);
}

template <int G, bool Asym>
struct Int4ZextRows {
  template <typename V, int NR>
  static void run(const uint8_t* const* rows, const uint8_t* next, int64_t k, const float* x,
                  float* y) {
    int4z_rows<G, Asym, NR>(rows, next, k, x, y);
  }
};

template <int G, bool Asym>
FormatKernels int4_avx2_kernels() {
  return FormatKernels{matvec_rows<VecAvx2, Int4ZextRows<G, Asym>>,
                       matmul_dense<VecAvx2, decode_int4<VecAvx2, G, Asym>>};
}

// ---- int4 gG decode from the decode layout (fmt_decode_layout.h) -----------------------------
// The 16-row blocks of the AVX-512 kernels (fmt_int4_decode_512.inc), read at 256 bits: a 64-byte
// vector is two halves, rows 0..7 and rows 8..15, a dword per row holding 8 nibbles (nibble P:
// column (P & 1) * 16 + 4v' + P / 2 of the sub-block). Both halves in one pass: for each vector and
// nibble P, one broadcast of the column's activation meets both halves' nibble P, each masked in
// place (b & 15 << 4P; the top one shifted down, its mask would take the sign bit) and converted
// (vcvtdq2ps: 16^P q, exact). Every column has one P, so the activations are read from a copy
// scaled by 16^-P per column (ScaledActs, made once per call; P = 7: 1): each product is q x
// exactly (for |x| >= 2^-102, the scaled copy normal), every chain has the same scale, and 3
// chains per half suffice (chain P % 3): per 16 weights a broadcast, 2 masks, 2 conversions and 2
// FMAs. The symmetric zero point's -8 sum x (exact) starts chain 0; at the group's end 2 adds per
// half and the rows' d from one vcvtph2ps: sym d (sum q x - 8 sum x), asym d sum q x + m sum x.
// The sums run in another order than the generic twin's: the twins agree within the bound of two
// orders of f32 sums. On an AMD Zen 5 core at the forced avx2 level, the group loop alone with its
// bytes in L1: 81-82 GOPs against 74-76 for one half at a time with 8 chains of 16^P scales combined
// at each group's end (the 0.75-cycle bound of a mask, a conversion and an FMA per 8 weights: 95 at
// the 4.44 GHz the clock probe read); in the matvec benchmark 72-80 GOPs against 66-72, and with 3
// chains and the zero point in chain 0 1-3 % above 4 chains and a separate add (three alternating
// rounds). Measured slower before: a shift and an AND per nibble into 4 chains per half (50-58
// GOPs against 63-67); nibbles 0..4 made floats by OR-ing 2^23's exponent in and subtracting 2^23
// in place of vcvtdq2ps (more instructions), 55-58 against 66-69.
template <int G>
class ScaledActs {
 public:
  ScaledActs(const float* x, int64_t k) {
    const int64_t n = round_up(k, 32);
    float* d = stack_;
    if (n > kStack) {  // wider rows: a buffer per thread, grown once, not an allocation per call
      thread_local std::vector<float> wide;
      if (wide.size() < static_cast<size_t>(n)) wide.resize(static_cast<size_t>(n));
      d = wide.data();
    }
    xs_ = d;
    // 16^-P (exact powers of two) of nibble P = 2 (j % 4) + j / 16 of column j of a sub-block:
    // columns 0..15 P = 0, 2, 4, 6, 16..31 P = 1, 3, 5, 7 (the top nibble, shifted down: 1)
    const __m256 lo = _mm256_setr_ps(1.f, 0x1p-8f, 0x1p-16f, 0x1p-24f, 1.f, 0x1p-8f, 0x1p-16f, 0x1p-24f);
    const __m256 hi = _mm256_setr_ps(0x1p-4f, 0x1p-12f, 0x1p-20f, 1.f, 0x1p-4f, 0x1p-12f, 0x1p-20f, 1.f);
    for (int64_t c = 0; c < n; c += 8) {
      const __m256 sc = (c % 32) < 16 ? lo : hi;
      const __m256 v = c + 8 <= k ? _mm256_loadu_ps(x + c) : VecAvx2::load_partial(x + c, c < k ? k - c : 0);
      _mm256_storeu_ps(d + c, _mm256_mul_ps(v, sc));
    }
  }
  ScaledActs(const ScaledActs&) = delete;
  ScaledActs& operator=(const ScaledActs&) = delete;
  const float* group(int64_t g) const { return xs_ + g * G; }

 private:
  static constexpr int64_t kStack = 6144;
  alignas(64) float stack_[kStack];
  const float* xs_ = nullptr;
};

template <bool Asym, int SUBS>
inline void int4f_group_256(const uint8_t* blk, const float* xs, float sx, __m256& acc0, __m256& acc1) {
  constexpr int64_t hdr = Asym ? 64 : 32;
  constexpr int NC = 3;  // chains per half: chain P % 3
  const uint8_t* q = blk + hdr;
  __m256 s0[NC], s1[NC];
  for (int i = 0; i < NC; ++i) s0[i] = s1[i] = _mm256_setzero_ps();
  if constexpr (!Asym) s0[0] = s1[0] = _mm256_set1_ps(-8.f * sx);  // the zero point's -8 sum x, exact
#pragma GCC unroll 16
  for (int v = 0; v < 4 * SUBS; ++v) {  // sub-block v / 4, vector v % 4
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * v));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * v + 32));
    const float* xv = xs + 32 * (v / 4) + 4 * (v % 4);
    // each vector's broadcasts after the previous vector's: GCC 12 otherwise issued them all up
    // front and kept them on the stack
    asm volatile("" : "+r"(xv));
#pragma GCC unroll 8
    for (int P = 0; P < 8; ++P) {
      const __m256 xb = _mm256_broadcast_ss(xv + (P & 1) * 16 + P / 2);
      const __m256i m = _mm256_set1_epi32(15 << (4 * P));
      const __m256i c0 = P == 7 ? _mm256_srli_epi32(b0, 28) : _mm256_and_si256(b0, m);
      const __m256i c1 = P == 7 ? _mm256_srli_epi32(b1, 28) : _mm256_and_si256(b1, m);
      s0[P % NC] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c0), xb, s0[P % NC]);
      s1[P % NC] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c1), xb, s1[P % NC]);
    }
  }
  const __m256 t0 = _mm256_add_ps(_mm256_add_ps(s0[0], s0[1]), s0[2]);
  const __m256 t1 = _mm256_add_ps(_mm256_add_ps(s1[0], s1[1]), s1[2]);
  const __m256 d0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
  const __m256 d1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16)));
  if constexpr (Asym) {
    const __m256 vs = _mm256_set1_ps(sx);
    const __m256 m0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 32)));
    const __m256 m1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 48)));
    acc0 = _mm256_fmadd_ps(m0, vs, _mm256_fmadd_ps(d0, t0, acc0));
    acc1 = _mm256_fmadd_ps(m1, vs, _mm256_fmadd_ps(d1, t1, acc1));
  } else {
    acc0 = _mm256_fmadd_ps(d0, t0, acc0);
    acc1 = _mm256_fmadd_ps(d1, t1, acc1);
  }
}

// y[r - row_begin] for r in [row_begin, row_end): the whole 16-row blocks from the decode layout,
// group by group, the other rows with the row kernel above (decode_blocks).
template <int G, bool Asym>
void int4f_decode_matvec_256(const uint8_t* dec, const uint8_t* w, size_t row_bytes, int64_t k, const void* xv,
                             float* y, int64_t row_begin, int64_t row_end) {
  constexpr int64_t piece = (Asym ? 64 : 32) + 256 * (G / 32);
  const DecodeActs<G> acts(static_cast<const float*>(xv), k, true);  // both forms take the group sums
  const ScaledActs<G> xs(static_cast<const float*>(xv), k);
  const int64_t block_bytes = static_cast<int64_t>(row_bytes) * kDecodeRows;  // the layout keeps the rows' bytes
  decode_blocks(
      row_begin, row_end,
      [&](int64_t r0, int64_t r1) {
        matvec_rows<VecAvx2, Int4ZextRows<G, Asym>>(w, row_bytes, k, xv, y + (r0 - row_begin), r0, r1);
      },
      [&](int64_t b) {
        const uint8_t* blk = dec + b * block_bytes;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        decode_each_group<G>(k, [&](int64_t g, auto subs) {
          constexpr int S = decltype(subs)::value;
          const uint8_t* p = blk + g * piece;
          decode_prefetch(p, piece);
          int4f_group_256<Asym, S>(p, xs.group(g), acts.sum(g), acc0, acc1);
        });
        float* yb = y + (b * kDecodeRows - row_begin);
        _mm256_storeu_ps(yb, acc0);
        _mm256_storeu_ps(yb + 8, acc1);
      });
}

template <int G, bool Asym>
void set_int4f_decode_256(FormatKernels& f) {
  f.decode_bytes = decode_bytes_512<Kind::int4, G, Asym>;  // the same layout as the AVX-512 kernels
  f.decode_pack = decode_pack_512<Kind::int4, G, Asym>;
  f.matvec_decode = int4f_decode_matvec_256<G, Asym>;
}

// ---- int4_gG_a8: int4 weights x int8 activations per block (the Q4_0 x Q8_0 approach) ----------
// Per 32-element sub-block: the 16 nibble bytes become 32 unsigned codes (low nibbles = elements
// 0..15 in the low lane, high nibbles = 16..31 in the high lane), _mm256_maddubs_epi16(codes,
// a) gives 16 int16 pair sums (|.| <= 2 * 15 * 127), summed in int16 over a group's <= 4
// sub-blocks (|.| <= 15240), then _mm256_madd_epi16 to int32 once per group. The -8 offset is
// corrected with the activation block sums. A tile's MR x NR (<= 8) int32 vectors are reduced
// together with hadds into one vector of exact group sums; each lane then does
// acc = fma(d_w * d_a, float(sum), acc) as the generic twin does: bit-identical results.
// The matvec (int4a8_rows8) packs two weight rows per vector instead (below): same exact int32
// group sums, same float expression per lane, so it is bit-identical too.

// Horizontal sums of 8 int32 vectors, lane l = sum of v[l].
inline __m256i reduce8_i32(const __m256i* v) {
  const __m256i h0 = _mm256_hadd_epi32(v[0], v[1]), h1 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h2 = _mm256_hadd_epi32(v[4], v[5]), h3 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i q0 = _mm256_hadd_epi32(h0, h1), q1 = _mm256_hadd_epi32(h2, h3);
  return _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20),
                          _mm256_permute2x128_si256(q0, q1, 0x31));
}

// 16 bytes broadcast to both lanes (one load uop).
inline __m256i bcast_16(const uint8_t* p) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// The 16 bytes broadcast to both lanes, the high lane shifted right by 4 with a per-lane
// variable shift: 3 uops instead of load + shift + insert + and.
inline __m256i nib_codes32(const uint8_t* p, __m256i mask) {
  const __m256i b = bcast_16(p);
  return _mm256_and_si256(_mm256_srlv_epi64(b, _mm256_setr_epi64x(0, 0, 4, 4)), mask);
}

// Where the step over sub-block s (a multiple of 32) of group g starts in a row, and how many bytes
// it reads: the first one reads the group's f16 scale too. Consecutive steps cover the row without
// gaps, so prefetching NR * that many bytes at next + NR * start touches every line of the next NR
// rows (prefetch_span).
inline int64_t int4a8_step_at(int64_t g, int64_t s, int64_t group) {
  return g * (2 + group / 2) + (s ? 2 + s / 2 : 0);
}
inline int64_t int4a8_step_bytes(int64_t s) { return s ? 16 : 18; }

// Y[i * ldy + t] = dot(rows[t], act row i) for i < MR, t < NR; act row i at x + i * xrb.
// A single activation row (matvec) prefetches the NR rows at `next`.
template <int G, int MR, int NR>
inline void int4a8_tile(const uint8_t* const* rows, const uint8_t* next, const uint8_t* x,
                        size_t xrb, int64_t k, float* y, int64_t ldy) {
  static_assert(MR * NR <= 8, "one lane per (activation row, weight row)");
  constexpr int64_t gb = 2 + G / 2;
  const int64_t nb = actb_blocks(k, G), hdr = actb_header(k, G);
  const __m256i mask = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t g = 0; g < nb; ++g) {
    const int64_t n = k - g * G < G ? k - g * G : G;
    __m256i s16[MR][NR];
    for (int i = 0; i < MR; ++i)
      for (int t = 0; t < NR; ++t) s16[i][t] = _mm256_setzero_si256();
    for (int64_t s = 0; s < n; s += 32) {
      if constexpr (MR == 1) prefetch_span(next + NR * int4a8_step_at(g, s, G), NR * int4a8_step_bytes(s));
      __m256i wv[NR];
      for (int t = 0; t < NR; ++t) wv[t] = nib_codes32(rows[t] + g * gb + 2 + s / 2, mask);
      for (int i = 0; i < MR; ++i) {
        const __m256i a =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i * xrb + hdr + g * G + s));
        for (int t = 0; t < NR; ++t)
          s16[i][t] = _mm256_add_epi16(s16[i][t], _mm256_maddubs_epi16(wv[t], a));
      }
    }
    __m256i v[8];
    for (int l = 0; l < 8; ++l)
      v[l] = l < MR * NR ? _mm256_madd_epi16(s16[l / NR][l % NR], ones) : _mm256_setzero_si256();
    // lane l = (i, t) = (l / NR, l % NR): its weight scale, activation scale and 8 * block sum
    __m256 dw, da;
    __m256i corr;
    if constexpr (MR == 4 && NR == 2) {  // matmul: lanes (t0 t1) x 4 tokens
      dw = _mm256_cvtph_ps(_mm_set1_epi32(static_cast<int>(
          load_u16(rows[0] + g * gb) | (static_cast<uint32_t>(load_u16(rows[1] + g * gb)) << 16))));
      const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
      da = _mm256_permutevar8x32_ps(
          _mm256_castps128_ps256(_mm_setr_ps(load_f32(x + 4 * g), load_f32(x + xrb + 4 * g),
                                             load_f32(x + 2 * xrb + 4 * g), load_f32(x + 3 * xrb + 4 * g))),
          dup);
      const int64_t so = 4 * nb + 4 * g;
      corr = _mm256_slli_epi32(
          _mm256_permutevar8x32_epi32(
              _mm256_castsi128_si256(_mm_setr_epi32(
                  static_cast<int>(load_u32(x + so)), static_cast<int>(load_u32(x + xrb + so)),
                  static_cast<int>(load_u32(x + 2 * xrb + so)), static_cast<int>(load_u32(x + 3 * xrb + so)))),
              dup),
          3);
    } else {  // tails
      alignas(16) uint16_t dwh[8] = {};
      alignas(32) float das[8] = {};
      alignas(32) int32_t cs[8] = {};
      for (int l = 0; l < MR * NR; ++l) {
        const uint8_t* xi = x + (l / NR) * xrb;
        dwh[l] = load_u16(rows[l % NR] + g * gb);
        das[l] = load_f32(xi + 4 * g);
        cs[l] = 8 * static_cast<int32_t>(load_u32(xi + 4 * nb + 4 * g));
      }
      dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dwh)));
      da = _mm256_load_ps(das);
      corr = _mm256_load_si256(reinterpret_cast<const __m256i*>(cs));
    }
    const __m256i sum = _mm256_sub_epi32(reduce8_i32(v), corr);
    acc = _mm256_fmadd_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(sum), acc);
  }
  alignas(32) float out[8];
  _mm256_store_ps(out, acc);
  for (int l = 0; l < MR * NR; ++l) y[(l / NR) * ldy + l % NR] = out[l];
}

// Decode: 8 weight rows against one activation row, rows t and t + 4 sharing a vector. Per
// sub-block the 16 nibble bytes of row t go to the low lane and those of row t + 4 to the high
// lane (one load + one insert); the low nibbles (elements 0..15) meet the activations 0..15
// broadcast to both lanes, the high nibbles (elements 16..31) meet 16..31, and the two maddubs
// results are added: lane h of s16[t] holds row (t + 4h)'s 8 int16 sums of 4 products each
// (|.| <= 4 * 15 * 127 = 7620 per sub-block, <= 30480 over the 4 sub-blocks of G = 128: no int16
// overflow). One madd per pair of rows and three hadds then give the 8 exact group sums in row
// order (the 8-row tile reduced 8 vectors with 8 madds, 6 hadds and 2 cross-lane permutes).
// The scales of the 8 rows go through one cvtph; each lane does acc = fma(d_w * d_a,
// float(sum - 8 * block sum), acc) in group order, exactly as the generic twin.
static_assert(4 * 4 * 15 * 127 <= 32767, "an int16 lane over the 4 sub-blocks of G = 128 (16 products) fits");

inline __m256i load_2x16(const uint8_t* lo, const uint8_t* hi) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lo))),
                                 _mm_loadu_si128(reinterpret_cast<const __m128i*>(hi)), 1);
}
template <int G>
inline void int4a8_rows8(const uint8_t* const* rows, const uint8_t* next, const uint8_t* x, int64_t k,
                         float* y) {
  static_assert(G <= 128, "int16 sums bounded for at most 4 sub-blocks");
  constexpr int64_t gb = 2 + G / 2;
  const int64_t nb = actb_blocks(k, G), hdr = actb_header(k, G);
  const __m256i mask = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const uint8_t* a8 = x + hdr;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t g = 0; g < nb; ++g) {
    __m256i s16[4];
    // sub-block s of the group; the first one (every group has one) initialises the sums
    auto step = [&](int64_t s, bool first) {
      prefetch_span(next + 8 * int4a8_step_at(g, s, G), 8 * int4a8_step_bytes(s));
      const __m256i alo = bcast_16(a8 + g * G + s), ahi = bcast_16(a8 + g * G + s + 16);
      const int64_t o = g * gb + 2 + s / 2;
      for (int t = 0; t < 4; ++t) {
        const __m256i b = load_2x16(rows[t] + o, rows[t + 4] + o);
        const __m256i lo = _mm256_and_si256(b, mask), hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), mask);
        const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, alo), _mm256_maddubs_epi16(hi, ahi));
        s16[t] = first ? p : _mm256_add_epi16(s16[t], p);
      }
    };
    step(0, true);
    if constexpr (G > 32) {
      const int64_t n = k - g * G < G ? k - g * G : G;
      for (int64_t s = 32; s < n; s += 32) step(s, false);
    }
    // [r0 r0 r1 r1 | r4 r4 r5 r5], [r2 r2 r3 r3 | r6 r6 r7 r7] -> [r0 r1 r2 r3 | r4 r5 r6 r7]
    const __m256i h01 = _mm256_hadd_epi32(_mm256_madd_epi16(s16[0], ones), _mm256_madd_epi16(s16[1], ones));
    const __m256i h23 = _mm256_hadd_epi32(_mm256_madd_epi16(s16[2], ones), _mm256_madd_epi16(s16[3], ones));
    const __m256i sum = _mm256_sub_epi32(
        _mm256_hadd_epi32(h01, h23), _mm256_set1_epi32(8 * static_cast<int32_t>(load_u32(x + 4 * nb + 4 * g))));
    const int64_t h = g * gb;
    const __m256 dw = _mm256_cvtph_ps(_mm_setr_epi16(
        static_cast<short>(load_u16(rows[0] + h)), static_cast<short>(load_u16(rows[1] + h)),
        static_cast<short>(load_u16(rows[2] + h)), static_cast<short>(load_u16(rows[3] + h)),
        static_cast<short>(load_u16(rows[4] + h)), static_cast<short>(load_u16(rows[5] + h)),
        static_cast<short>(load_u16(rows[6] + h)), static_cast<short>(load_u16(rows[7] + h))));
    acc = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(load_f32(x + 4 * g))), _mm256_cvtepi32_ps(sum), acc);
  }
  _mm256_storeu_ps(y, acc);
}

// ---- int8_g32_a8: Q8_0 weights x int8 activations per block of 32 ------------------------------
// Per block of 32: the sign trick, _mm256_maddubs_epi16(|w|, a * sign w) (pairs of products
// <= 2 x 127 x 127 fit int16) and _mm256_madd_epi16 to 8 int32. A tile's MR x NR (<= 8) vectors
// are reduced together (reduce8_i32) into one vector of exact block sums, lane l = (token l / NR,
// row l % NR); each lane does acc = fma(d_w * d_a, float(sum), acc) in block order, as the generic
// twin does: bit-identical. The weight blocks need no tails: a ragged last block is padded with
// zeros, and so are the activations. A single activation row prefetches the NR rows at `next`
// (unless told not to). The matmul is int4_gG_a8's (a8_matmul below, over Q8a8Tiles).
template <int MR, int NR, bool Prefetch = MR == 1>
inline void q8a8_tile(const uint8_t* const* rows, const uint8_t* next, const uint8_t* x, size_t xrb, int64_t k,
                      float* y, int64_t ldy) {
  static_assert(MR * NR <= 8, "one lane per (activation row, weight row)");
  constexpr int L = MR * NR;
  const int64_t nb = actb_blocks(k, kQ8Block), hdr = actb_header(k, kQ8Block);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t o = b * kQ8BlockBytes;
    if constexpr (Prefetch) prefetch_span(next + NR * o, NR * kQ8BlockBytes);
    __m256i wv[NR], wa[NR];
    for (int t = 0; t < NR; ++t) {
      wv[t] = load32(rows[t] + o + 2);
      wa[t] = _mm256_abs_epi8(wv[t]);
    }
    __m256i v[8];
    for (int l = L; l < 8; ++l) v[l] = _mm256_setzero_si256();
    for (int i = 0; i < MR; ++i) {
      const __m256i a = load32(x + i * xrb + hdr + kQ8Block * b);
      for (int t = 0; t < NR; ++t)
        v[i * NR + t] = _mm256_madd_epi16(_mm256_maddubs_epi16(wa[t], _mm256_sign_epi8(a, wv[t])), ones);
    }
    // lane l: the weight scale of row l % NR, the activation scale of token l / NR (0 beyond L)
    auto h = [&](int l) { return static_cast<short>(l < L ? load_u16(rows[l % NR] + o) : 0); };
    auto s = [&](int l) { return l < L ? load_f32(x + (l / NR) * xrb + 4 * b) : 0.f; };
    const __m256 dw = _mm256_cvtph_ps(_mm_setr_epi16(h(0), h(1), h(2), h(3), h(4), h(5), h(6), h(7)));
    const __m256 da = MR == 1 ? _mm256_set1_ps(s(0)) : _mm256_setr_ps(s(0), s(1), s(2), s(3), s(4), s(5), s(6), s(7));
    acc = _mm256_fmadd_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(reduce8_i32(v)), acc);
  }
  alignas(32) float out[8];
  _mm256_store_ps(out, acc);
  for (int l = 0; l < L; ++l) y[(l / NR) * ldy + l % NR] = out[l];
}

// Decode: 8 row streams an eighth of the range apart (rows t, t + q, ..., t + 7q for t < q), each
// walking contiguous rows, which the hardware prefetcher follows by itself (w8a8's int8_matvec does
// the same with 4); the last rows one by one. Each output is the same exact sum either way.
void q8a8_matvec(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, float* y, int64_t row_begin,
                 int64_t row_end) {
  const uint8_t* xa = static_cast<const uint8_t*>(x);
  const int64_t q = (row_end - row_begin) / 8;
  const size_t qb = static_cast<size_t>(q) * row_bytes;
  for (int64_t t = 0; t < q; ++t) {
    const uint8_t* r0 = w + (row_begin + t) * row_bytes;
    const uint8_t* rows[8] = {r0, r0 + qb, r0 + 2 * qb, r0 + 3 * qb, r0 + 4 * qb, r0 + 5 * qb, r0 + 6 * qb, r0 + 7 * qb};
    float out[8];
    q8a8_tile<1, 8, false>(rows, nullptr, xa, 0, k, out, 0);
    for (int j = 0; j < 8; ++j) y[t + j * q] = out[j];
  }
  for (int64_t r = row_begin + 8 * q; r < row_end; ++r) {
    const uint8_t* rows[1] = {w + r * row_bytes};
    q8a8_tile<1, 1, true>(rows, rows[0] + row_bytes, xa, 0, k, y + (r - row_begin), 0);
  }
}

// int8_g32_a8's tiles for a8_matmul: its 8-row tile for the last tokens is q8a8_tile<1, 8> over
// adjacent rows (each row's 32-byte block is one vector already).
struct Q8a8Tiles {
  template <int MR, int NR>
  static void tile(const uint8_t* const* rows, const uint8_t* next, const uint8_t* x, size_t xrb, int64_t k, float* y,
                   int64_t ldy) {
    q8a8_tile<MR, NR>(rows, next, x, xrb, k, y, ldy);
  }
  static void rows8(const uint8_t* const* rows, const uint8_t* next, const uint8_t* x, int64_t k, float* y) {
    q8a8_tile<1, 8>(rows, next, x, 0, k, y, 0);
  }
};

// The tiles of an int8-activation format with groups along K, for the matvec and matmul below:
//   K::tile<MR, NR>(rows, next, x, xrb, k, y, ldy)   MR activation rows x NR weight rows (<= 8)
//   K::rows8(rows, next, x, k, y)                     8 weight rows against one activation row
template <int G>
struct Int4a8Tiles {
  template <int MR, int NR>
  static void tile(const uint8_t* const* rows, const uint8_t* next, const uint8_t* x, size_t xrb, int64_t k, float* y,
                   int64_t ldy) {
    int4a8_tile<G, MR, NR>(rows, next, x, xrb, k, y, ldy);
  }
  static void rows8(const uint8_t* const* rows, const uint8_t* next, const uint8_t* x, int64_t k, float* y) {
    int4a8_rows8<G>(rows, next, x, k, y);
  }
};

template <typename K>
void a8_matvec(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, float* y,
               int64_t row_begin, int64_t row_end) {
  const uint8_t* xa = static_cast<const uint8_t*>(x);
  int64_t r = row_begin;
  for (; r + 8 <= row_end; r += 8) {
    const uint8_t* rows[8];
    for (int t = 0; t < 8; ++t) rows[t] = w + (r + t) * row_bytes;
    K::rows8(rows, rows[0] + 8 * row_bytes, xa, k, y + (r - row_begin));
  }
  for (; r < row_end; ++r) {
    const uint8_t* rows[1] = {w + r * row_bytes};
    K::template tile<1, 1>(rows, rows[0] + row_bytes, xa, 0, k, y + (r - row_begin), 0);
  }
}

// ---- int4_gG_a8 decode from the decode layout, at 256 bits --------------------------------------
// fmt_avx512.cpp's int4a8_group_bw (16-row blocks read as one stream, fmt_decode_layout.h) with a
// 64-byte vector read as two halves, rows 0..7 and rows 8..15, both in one pass so each broadcast
// of 4 activation bytes serves 16 rows: per half the low and the high nibbles each take a
// vpmaddubsw by their broadcast activations (int16 sums of two products, |.| <= 2 x 15 x 128),
// the 8 of a sub-block added in int16 (<= 30720: no saturation), then one vpmaddwd by 1 into the
// group's int32 sums, each row's in its own lane (no reduction across lanes, where the row kernel
// int4a8_rows8 reduces 8 vectors with hadds and gathers 8 scales per group); -8 times the block sum
// off and the generic twin's acc = fma(d_w d_a, float(sum), acc): bit for bit.
template <int SUBS>
inline void int4a8_group_256(const uint8_t* blk, const uint8_t* a, int32_t asum, float da, __m256& acc0,
                             __m256& acc1) {
  decode_prefetch(blk, 32 + 256 * SUBS);
  const uint8_t* q = blk + 32;
  const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int sb = 0; sb < SUBS; ++sb) {
    __m256i h0 = _mm256_setzero_si256(), h1 = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int v = 4 * sb; v < 4 * sb + 4; ++v) {  // sub-block v / 4, vector v % 4
      const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * v));
      const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * v + 32));
      const uint8_t* av = a + 32 * (v / 4) + 4 * (v % 4);
      const __m256i alo = _mm256_set1_epi32(static_cast<int32_t>(load_u32(av)));
      const __m256i ahi = _mm256_set1_epi32(static_cast<int32_t>(load_u32(av + 16)));
      h0 = _mm256_add_epi16(h0, _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(b0, low4), alo),
                                                 _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(b0, 4), low4), ahi)));
      h1 = _mm256_add_epi16(h1, _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(b1, low4), alo),
                                                 _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(b1, 4), low4), ahi)));
    }
    s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(h0, ones));
    s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(h1, ones));
  }
  const __m256i c = _mm256_set1_epi32(8 * asum);
  const __m256 vda = _mm256_set1_ps(da);
  const __m256 d0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
  const __m256 d1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16)));
  acc0 = _mm256_fmadd_ps(_mm256_mul_ps(d0, vda), _mm256_cvtepi32_ps(_mm256_sub_epi32(s0, c)), acc0);
  acc1 = _mm256_fmadd_ps(_mm256_mul_ps(d1, vda), _mm256_cvtepi32_ps(_mm256_sub_epi32(s1, c)), acc1);
}

// y[r - row_begin] for r in [row_begin, row_end): the whole 16-row blocks from the decode layout,
// group by group, the other rows with the row kernel (decode_blocks).
template <int G>
void int4a8_decode_matvec_256(const uint8_t* dec, const uint8_t* w, size_t row_bytes, int64_t k, const void* xv,
                              float* y, int64_t row_begin, int64_t row_end) {
  constexpr int64_t piece = 32 + 256 * (G / 32);
  const ActBlocks<G> a(xv, k);
  const int64_t block_bytes = static_cast<int64_t>(row_bytes) * kDecodeRows;  // the layout keeps the rows' bytes
  decode_blocks(
      row_begin, row_end,
      [&](int64_t r0, int64_t r1) { a8_matvec<Int4a8Tiles<G>>(w, row_bytes, k, xv, y + (r0 - row_begin), r0, r1); },
      [&](int64_t b) {
        const uint8_t* blk = dec + b * block_bytes;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        decode_each_group<G>(k, [&](int64_t g, auto subs) {
          int4a8_group_256<decltype(subs)::value>(blk + g * piece, a.values(g), a.sum(g), a.scale(g), acc0, acc1);
        });
        float* yb = y + (b * kDecodeRows - row_begin);
        _mm256_storeu_ps(yb, acc0);
        _mm256_storeu_ps(yb + 8, acc1);
      });
}

template <int G>
void set_int4a8_decode_256(FormatKernels& f) {
  f.decode_bytes = decode_bytes_512<Kind::int4_a8, G>;  // the same layout as the AVX-512 kernels
  f.decode_pack = decode_pack_512<Kind::int4_a8, G>;
  f.matvec_decode = int4a8_decode_matvec_256<G>;
}

// int8_g32_a8 (Q8_0 blocks) from the same layout: per half of a 64-byte vector the signed values
// take the sign trick, vpmaddubsw(|w|, a with w's sign) (pairs <= 2 x 127 x 127: no int16 sums
// across vectors) and a vpmaddwd by 1 into the block's int32 sums, each row's in its own lane; then
// acc = fma(d_w d_a, float(sum), acc) as the generic twin: bit for bit.
inline void q8a8_block_256(const uint8_t* blk, const uint8_t* a, float da, __m256& acc0, __m256& acc1) {
  decode_prefetch(blk, 544);
  const uint8_t* q = blk + 32;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
  auto dot = [&](__m256i w, __m256i av) __attribute__((always_inline)) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(av, w)), ones);
  };
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v) {
    const __m256i av = _mm256_set1_epi32(static_cast<int32_t>(load_u32(a + 4 * v)));
    s0 = _mm256_add_epi32(s0, dot(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * v)), av));
    s1 = _mm256_add_epi32(s1, dot(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * v + 32)), av));
  }
  const __m256 vda = _mm256_set1_ps(da);
  const __m256 d0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
  const __m256 d1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16)));
  acc0 = _mm256_fmadd_ps(_mm256_mul_ps(d0, vda), _mm256_cvtepi32_ps(s0), acc0);
  acc1 = _mm256_fmadd_ps(_mm256_mul_ps(d1, vda), _mm256_cvtepi32_ps(s1), acc1);
}

void q8a8_decode_matvec_256(const uint8_t* dec, const uint8_t* w, size_t row_bytes, int64_t k, const void* xv,
                            float* y, int64_t row_begin, int64_t row_end) {
  const ActBlocks<kQ8Block> a(xv, k);
  const int64_t nb = actb_blocks(k, kQ8Block);
  const int64_t block_bytes = static_cast<int64_t>(row_bytes) * kDecodeRows;
  decode_blocks(
      row_begin, row_end,
      [&](int64_t r0, int64_t r1) { q8a8_matvec(w, row_bytes, k, xv, y + (r0 - row_begin), r0, r1); },
      [&](int64_t b) {
        const uint8_t* blk = dec + b * block_bytes;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        for (int64_t g = 0; g < nb; ++g) q8a8_block_256(blk + g * 544, a.values(g), a.scale(g), acc0, acc1);
        float* yb = y + (b * kDecodeRows - row_begin);
        _mm256_storeu_ps(yb, acc0);
        _mm256_storeu_ps(yb + 8, acc1);
      });
}

template <typename K, int NR>
inline void a8_tile_rows(const uint8_t* const* rows, const uint8_t* x, size_t xrb, int64_t m,
                             int64_t k, float* y, int64_t ldy) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) K::template tile<4, NR>(rows, nullptr, x + i * xrb, xrb, k, y + i * ldy, ldy);
  switch (m - i) {
    case 3: K::template tile<3, NR>(rows, nullptr, x + i * xrb, xrb, k, y + i * ldy, ldy); break;
    case 2: K::template tile<2, NR>(rows, nullptr, x + i * xrb, xrb, k, y + i * ldy, ldy); break;
    case 1: K::template tile<1, NR>(rows, nullptr, x + i * xrb, xrb, k, y + i * ldy, ldy); break;
    default: break;
  }
}

// Prefill: 2 weight rows x 4 activation rows per tile, so each weight sub-block is unpacked once
// per 4 tokens; tokens in chunks of 16 keep their activation rows in L2 while the rows pass.
// The last m mod 4 tokens (all of them when m <= 8: batched decode) take the matvec's 8-row
// kernel, token after token over each group of 8 rows, so the group is read from
// memory once and from L1 by the next tokens: the 1-3-token tiles gather their per-group scales
// through memory, which for G = 32 cost more than reading the weights again (two tokens took
// 3x the time of one). Same exact group sums and float expression: bit-identical either way.
template <typename K>
void a8_matmul(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes,
               int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  const uint8_t* xa = static_cast<const uint8_t*>(x);
  constexpr int64_t kTok = 16;
  for (int64_t i0 = 0; i0 < m; i0 += kTok) {
    const int64_t mc = m - i0 < kTok ? m - i0 : kTok;
    // Tokens in 4-token tiles; none up to 8 tokens (batched decode), where the tiles fell behind
    // the 8-row kernel token after token (streaming a TinyLlama-sized 5632 x 2048 G = 32 matrix
    // from memory on a Zen 5 class core: 4 tokens 2.3 ms in tiles, 8 tokens 3.4-3.7 ms, against
    // 0.34-0.39 ms for one token through the 8-row kernel).
    const int64_t full = mc <= 8 ? 0 : mc / 4 * 4;
    const uint8_t* xc = xa + i0 * x_row_bytes;
    float* yc = y + i0 * ldy;
    if (full > 0) {
      int64_t r = row_begin;
      for (; r + 2 <= row_end; r += 2) {
        const uint8_t* rows[2] = {w + r * row_bytes, w + (r + 1) * row_bytes};
        a8_tile_rows<K, 2>(rows, xc, x_row_bytes, full, k, yc + r, ldy);
      }
      if (r < row_end) {
        const uint8_t* rows[1] = {w + r * row_bytes};
        a8_tile_rows<K, 1>(rows, xc, x_row_bytes, full, k, yc + r, ldy);
      }
    }
    if (full == mc) continue;
    int64_t r = row_begin;
    for (; r + 8 <= row_end; r += 8) {
      const uint8_t* rows[8];
      for (int t = 0; t < 8; ++t) rows[t] = w + (r + t) * row_bytes;
      for (int64_t i = full; i < mc; ++i)
        K::rows8(rows, rows[0] + 8 * row_bytes, xc + i * x_row_bytes, k, yc + i * ldy + r);
    }
    for (; r < row_end; ++r) {
      const uint8_t* rows[1] = {w + r * row_bytes};
      for (int64_t i = full; i < mc; ++i)
        K::template tile<1, 1>(rows, rows[0] + row_bytes, xc + i * x_row_bytes, 0, k, yc + i * ldy + r, 0);
    }
  }
}

// ---- int4_gG_a8 and int8_g32_a8 prefill: a panel GEMM at 256 bits ---------------------------
// The AVX-512 panel GEMM of fmt_group_gemm_512.inc with 8-row vectors: per call, each panel of up
// to 16 adjacent rows is repacked, kQ4Kc columns at a time, into P[2 s + v] = 32 bytes holding the
// unsigned codes q (0..15) of rows 8v .. 8v + 7 x columns 4s .. 4s + 3 (row n's four codes in
// int32 lane n: per 32 columns the nibbles spread to 32 bytes in column order, then an 8 x 8 dword
// transpose), with the rows' f16 scales per group as 8-lane floats. A tile of MR tokens x 16 rows
// then takes per 4 columns one 4-byte broadcast per token and per (token, 8 rows) one vpmaddubsw
// (int16 sums of two products, |.| <= 2 x 15 x 128), added in int16 over up to 8 steps (<= 30720:
// no saturation) and then vpmaddwd by 1 into the int32 sum of the group, which starts at -8 sum(a)
// of the token's block (sum((q - 8) a) = sum(q a) - 8 sum(a), exact); then acc = fma(d_w * d_a,
// float(sum), acc), the generic twin's expression per lane in group order: bit-identical. Tiles of
// 3 tokens: for G = 32 (one int16 run per group, so no int32 sum is live while it runs) the 3 x 2
// float and int16 accumulators, two weight vectors and a broadcast take 15 of the 16 registers; for
// G = 64 and 128 the float sums live in L1 (read and written once a group) and the int32 ones in
// their place. int8_g32_a8 runs the same GEMM over its signed values (q8a8_matmul256 below).
// Between chunks a tile parks its float accumulators; the first tile of a chunk prefetches the
// rows of the next chunk or panel at the pace it walks the panel.
static_assert(8 * 2 * 15 * 128 <= 32767, "int16 sums of 8 vpmaddubsw steps of codes x int8 activations");
constexpr int64_t kQ4Kc = 1024;    // columns per repacked chunk (a multiple of 128: whole groups)
constexpr int64_t kQ4Block = 240;  // tokens per block (a multiple of the tiles' 3 tokens)

struct Q4Chunk256 {
  const __m256i* P;   // codes, 2 vectors per step of 4 columns
  const __m256* dw;   // weight scales, 2 vectors per group of the chunk
  int64_t g0, ng;     // the chunk's first group and its number of groups
  int64_t k;          // columns of the matrix (the last group may be ragged)
  bool first, last;
  __m256i keep0, keep1;  // valid lanes of the two vectors (maskstore)
  const uint8_t* pf;     // prefetch for the first tile: pf_rows rows of pf_len bytes, pf_lines lines a step
  int64_t pf_rows, pf_len, pf_lines;
  size_t row_bytes;
};

// 8 rows r of 8 dwords -> out[j * stride] = dword j of the 8 rows (j < 8).
inline void transpose8_dwords(const __m256i (&r)[8], __m256i* out, int64_t stride) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {  // rows 4i .. 4i + 3, dwords (lane-wise) 0 1 | 2 3
    u[4 * i + 0] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // u[4i + e], 128-bit half h: rows 4i .. 4i + 3 at dword 4h + e
  for (int e = 0; e < 4; ++e) {
    out[e * stride] = _mm256_permute2x128_si256(u[e], u[4 + e], 0x20);
    out[(4 + e) * stride] = _mm256_permute2x128_si256(u[e], u[4 + e], 0x31);
  }
}

// Rows w[0 .. nr) (nr <= 8) of an int4 gG panel, columns [k0, k0 + kc) (k0 a multiple of G, kc of
// 32), as codes into P[2 s + v] (s from 0); missing rows read as 0.
template <int G>
inline void repack8_q4(const uint8_t* w, size_t row_bytes, int64_t nr, int64_t k0, int64_t kc, __m256i* P, int v) {
  constexpr int64_t gb = 2 + G / 2;
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  for (int64_t c = 0; c < kc; c += 32) {
    const int64_t e = k0 + c;
    __m256i r[8];
    for (int n = 0; n < 8; ++n) {
      if (n < nr) {
        const __m128i b = _mm_loadu_si128(
            reinterpret_cast<const __m128i*>(w + n * row_bytes + (e / G) * gb + 2 + ((e % G) / 32) * 16));
        const __m256i bb = _mm256_inserti128_si256(_mm256_castsi128_si256(b), _mm_srli_epi16(b, 4), 1);
        r[n] = _mm256_and_si256(bb, low4);  // columns 0..15 (low nibbles), 16..31 (high)
      } else {
        r[n] = _mm256_setzero_si256();
      }
    }
    transpose8_dwords(r, P + (c / 4) * 2 + v, 2);
  }
}

// Rows w[0 .. nr) (nr <= 8) of an int8_g32_a8 panel (Q8_0 blocks), columns [k0, k0 + kc) (multiples
// of 32), as the signed values into P[2 s + v]; missing rows read as 0.
inline void repack8_q8(const uint8_t* w, size_t row_bytes, int64_t nr, int64_t k0, int64_t kc, __m256i* P, int v) {
  for (int64_t c = 0; c < kc; c += 32) {
    const int64_t o = (k0 + c) / kQ8Block * kQ8BlockBytes + 2;
    __m256i r[8];
    for (int n = 0; n < 8; ++n)
      r[n] = n < nr ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + n * row_bytes + o)) : _mm256_setzero_si256();
    transpose8_dwords(r, P + (c / 4) * 2 + v, 2);
  }
}

template <int G, int MR, bool Prefetch, bool Q8 = false>
__attribute__((noinline)) void q4_tile256(const Q4Chunk256& pc, const uint8_t* x, size_t xrb, float* part, float* y,
                                          int64_t ldy) {
  const int64_t nb = actb_blocks(pc.k, G), hdr = actb_header(pc.k, G);
  // G = 32: the float sums in registers; G = 64, 128: in `part` (L1), read and written once a group,
  // so the int16 and int32 sums of 3 tokens fit the registers
  constexpr bool kRegs = G == 32 && !Q8;
  __m256 f0[MR], f1[MR];
  for (int i = 0; i < MR; ++i) {
    f0[i] = pc.first ? _mm256_setzero_ps() : _mm256_load_ps(part + i * 16);
    f1[i] = pc.first ? _mm256_setzero_ps() : _mm256_load_ps(part + i * 16 + 8);
    if (!kRegs) {
      _mm256_store_ps(part + i * 16, f0[i]);
      _mm256_store_ps(part + i * 16 + 8, f1[i]);
    }
  }
  const __m256i* P = pc.P;
  const __m256i ones = _mm256_set1_epi16(1);
  int64_t pr = 0, pcol = 0;
  for (int64_t gi = 0; gi < pc.ng; ++gi) {
    const int64_t g = pc.g0 + gi;
    const int64_t n = pc.k - g * G < G ? pc.k - g * G : G;
    const int64_t steps = round_up(n, 32) / 4;
    const uint8_t* a = x + hdr + g * G;
    __m256i s0[MR], s1[MR];
    for (int i = 0; i < MR; ++i) s0[i] = s1[i] = _mm256_setzero_si256();
    if constexpr (Q8) {  // the sign trick: |w| (u8) x (a with w's sign) (s8), a vpmaddwd per vpmaddubsw
      for (int64_t s = 0; s < steps; ++s) {
        if constexpr (Prefetch) {
          for (int64_t l = 0; l < pc.pf_lines && pr < pc.pf_rows; ++l) {
            __builtin_prefetch(pc.pf + pr * pc.row_bytes + pcol, 0, 3);
            if ((pcol += 64) >= pc.pf_len) pcol = 0, ++pr;
          }
        }
        const __m256i w0 = _mm256_load_si256(P + 2 * s), w1 = _mm256_load_si256(P + 2 * s + 1);
        const __m256i u0 = _mm256_abs_epi8(w0), u1 = _mm256_abs_epi8(w1);
        for (int i = 0; i < MR; ++i) {
          const __m256i ab = _mm256_set1_epi32(load_i32(a + i * xrb + 4 * s));
          s0[i] = _mm256_add_epi32(s0[i], _mm256_madd_epi16(_mm256_maddubs_epi16(u0, _mm256_sign_epi8(ab, w0)), ones));
          s1[i] = _mm256_add_epi32(s1[i], _mm256_madd_epi16(_mm256_maddubs_epi16(u1, _mm256_sign_epi8(ab, w1)), ones));
        }
      }
    }
    for (int64_t r0 = 0; r0 < (Q8 ? 0 : steps); r0 += 8) {  // runs of <= 8 steps in int16
      const int64_t r1 = r0 + 8 < steps ? r0 + 8 : steps;
      __m256i h0[MR], h1[MR];
      for (int i = 0; i < MR; ++i) h0[i] = h1[i] = _mm256_setzero_si256();
      for (int64_t s = r0; s < r1; ++s) {
        if constexpr (Prefetch) {
          for (int64_t l = 0; l < pc.pf_lines && pr < pc.pf_rows; ++l) {
            __builtin_prefetch(pc.pf + pr * pc.row_bytes + pcol, 0, 3);
            if ((pcol += 64) >= pc.pf_len) pcol = 0, ++pr;
          }
        }
        const __m256i w0 = _mm256_load_si256(P + 2 * s), w1 = _mm256_load_si256(P + 2 * s + 1);
        for (int i = 0; i < MR; ++i) {
          const __m256i ab = _mm256_set1_epi32(load_i32(a + i * xrb + 4 * s));
          const __m256i p0 = _mm256_maddubs_epi16(w0, ab), p1 = _mm256_maddubs_epi16(w1, ab);
          h0[i] = _mm256_add_epi16(h0[i], p0);
          h1[i] = _mm256_add_epi16(h1[i], p1);
        }
      }
      for (int i = 0; i < MR; ++i) {
        s0[i] = _mm256_add_epi32(s0[i], _mm256_madd_epi16(h0[i], ones));
        s1[i] = _mm256_add_epi32(s1[i], _mm256_madd_epi16(h1[i], ones));
      }
    }
    P += 2 * steps;
    const __m256 dw0 = pc.dw[2 * gi], dw1 = pc.dw[2 * gi + 1];
    for (int i = 0; i < MR; ++i) {
      const __m256i c = Q8 ? _mm256_setzero_si256()
                           : _mm256_slli_epi32(_mm256_set1_epi32(load_i32(x + i * xrb + 4 * nb + 4 * g)), 3);
      const __m256 da = _mm256_set1_ps(load_f32(x + i * xrb + 4 * g));
      if constexpr (kRegs) {
        f0[i] = _mm256_fmadd_ps(_mm256_mul_ps(dw0, da), _mm256_cvtepi32_ps(_mm256_sub_epi32(s0[i], c)), f0[i]);
        f1[i] = _mm256_fmadd_ps(_mm256_mul_ps(dw1, da), _mm256_cvtepi32_ps(_mm256_sub_epi32(s1[i], c)), f1[i]);
      } else {
        _mm256_store_ps(part + i * 16, _mm256_fmadd_ps(_mm256_mul_ps(dw0, da), _mm256_cvtepi32_ps(_mm256_sub_epi32(s0[i], c)),
                                                       _mm256_load_ps(part + i * 16)));
        _mm256_store_ps(part + i * 16 + 8, _mm256_fmadd_ps(_mm256_mul_ps(dw1, da), _mm256_cvtepi32_ps(_mm256_sub_epi32(s1[i], c)),
                                                           _mm256_load_ps(part + i * 16 + 8)));
      }
    }
  }
  if (!kRegs) {
    if (!pc.last) return;
    for (int i = 0; i < MR; ++i) {
      f0[i] = _mm256_load_ps(part + i * 16);
      f1[i] = _mm256_load_ps(part + i * 16 + 8);
    }
  }
  if (!pc.last) {
    for (int i = 0; i < MR; ++i) {
      _mm256_store_ps(part + i * 16, f0[i]);
      _mm256_store_ps(part + i * 16 + 8, f1[i]);
    }
    return;
  }
  for (int i = 0; i < MR; ++i) {
    _mm256_maskstore_ps(y + i * ldy, pc.keep0, f0[i]);
    _mm256_maskstore_ps(y + i * ldy + 8, pc.keep1, f1[i]);
  }
}

// Rows [row_begin, row_end) x m tokens of int4_gG_a8, or with Q8 of int8_g32_a8 (m >= 1).
template <int G, bool Q8 = false>
void int4a8_gemm256(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t xrb, int64_t m, float* y,
                    int64_t ldy, int64_t row_begin, int64_t row_end) {
  constexpr int64_t gb = Q8 ? kQ8BlockBytes : 2 + G / 2;
  constexpr int T = 3;
  static_assert(kQ4Kc % G == 0 && kQ4Kc % 32 == 0 && kQ4Block % T == 0, "chunk and block geometry");
  const int64_t kp = round_up(k, 32);
  const uint8_t* xa = static_cast<const uint8_t*>(x);
  alignas(32) __m256i panel[kQ4Kc / 4 * 2];
  alignas(32) __m256 dw[kQ4Kc / G * 2];
  alignas(32) float part[kQ4Block * 16];
  alignas(32) float sc[8];
  auto span = [&](int64_t n) {
    return Q8 ? (n + G - 1) / G * gb : n / G * gb + (n % G ? 2 + round_up(n % G, 32) / 2 : 0);
  };
  // [&]: a lambda without captures also gets a conversion to a function pointer, which GCC
  // declares outside the target region (a -Wpsabi warning for its vector return)
  auto keep = [&](int64_t n) {  // lanes < n (0..8) all ones
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lane);
  };
  for (int64_t i0 = 0; i0 < m; i0 += kQ4Block) {
    const int64_t mc = m - i0 < kQ4Block ? m - i0 : kQ4Block;
    const uint8_t* xc = xa + i0 * xrb;
    float* yc = y + i0 * ldy;
    for (int64_t r0 = row_begin; r0 < row_end; r0 += 16) {
      const int64_t nr = row_end - r0 < 16 ? row_end - r0 : 16;
      Q4Chunk256 pc;
      pc.keep0 = keep(nr < 8 ? nr : 8);
      pc.keep1 = keep(nr > 8 ? nr - 8 : 0);
      pc.P = panel;
      pc.dw = dw;
      pc.k = k;
      pc.row_bytes = row_bytes;
      for (int64_t k0 = 0; k0 < kp; k0 += kQ4Kc) {
        const int64_t k1 = k - k0 < kQ4Kc ? k : k0 + kQ4Kc;
        pc.g0 = k0 / G;
        pc.ng = (k1 - k0 + G - 1) / G;
        for (int v = 0; v < 2; ++v) {
          const int64_t n8 = nr - 8 * v < 0 ? 0 : (nr - 8 * v < 8 ? nr - 8 * v : 8);
          if constexpr (Q8) repack8_q8(w + (r0 + 8 * v) * row_bytes, row_bytes, n8, k0, round_up(k1 - k0, 32), panel, v);
          else repack8_q4<G>(w + (r0 + 8 * v) * row_bytes, row_bytes, n8, k0, round_up(k1 - k0, 32), panel, v);
          for (int64_t gi = 0; gi < pc.ng; ++gi) {
            for (int64_t t = 0; t < 8; ++t)
              sc[t] = t < n8 ? half_to_float(load_u16(w + (r0 + 8 * v + t) * row_bytes + (pc.g0 + gi) * gb)) : 0.f;
            dw[2 * gi + v] = _mm256_load_ps(sc);
          }
        }
        pc.first = k0 == 0;
        pc.last = k0 + kQ4Kc >= kp;
        int64_t nr0 = r0, nk0 = k0 + kQ4Kc;
        if (pc.last) nr0 = r0 + 16 < row_end ? r0 + 16 : (i0 + mc < m ? row_begin : row_end), nk0 = 0;
        pc.pf = w + nr0 * row_bytes + nk0 / G * gb;
        pc.pf_rows = nr0 < row_end ? (row_end - nr0 < 16 ? row_end - nr0 : 16) : 0;
        const int64_t nk1 = k - nk0 < kQ4Kc ? k : nk0 + kQ4Kc;
        pc.pf_len = nr0 < row_end ? span(nk1 - nk0) : 0;
        const int64_t S = round_up(k1 - k0, 32) / 4;
        pc.pf_lines = (pc.pf_rows * ((pc.pf_len + 63) / 64) + S - 1) / S;
        for (int64_t i = 0; i < mc;) {
          const int64_t n = mc - i < T ? mc - i : T;
          const bool pf = i == 0 && pc.pf_rows > 0;
          float* pt = part + i * 16;
          const uint8_t* xi = xc + i * xrb;
          float* yi = yc + i * ldy + r0;
          if (n == 3) {
            pf ? q4_tile256<G, 3, true, Q8>(pc, xi, xrb, pt, yi, ldy) : q4_tile256<G, 3, false, Q8>(pc, xi, xrb, pt, yi, ldy);
          } else if (n == 2) {
            pf ? q4_tile256<G, 2, true, Q8>(pc, xi, xrb, pt, yi, ldy) : q4_tile256<G, 2, false, Q8>(pc, xi, xrb, pt, yi, ldy);
          } else {
            pf ? q4_tile256<G, 1, true, Q8>(pc, xi, xrb, pt, yi, ldy) : q4_tile256<G, 1, false, Q8>(pc, xi, xrb, pt, yi, ldy);
          }
          i += n;
        }
      }
    }
  }
}

// From how many tokens the panel GEMM takes over from a8_matmul, whose 8-row kernel serves up to 8
// tokens token after token: on an AMD Zen 5 core at the forced avx2 level (cibench-microbench,
// 768 x 768, 2048 x 768, 4096 x 4096, one thread), GOPs GEMM / a8_matmul at 8 tokens G = 32
// 113-115 / 124-125, G = 64 141-145 / 160-164, G = 128 160-169 / 185-193; at 9 tokens 122-126 /
// 89-117, 149-154 / 113-171, 179-184 / 132-222; at 12 tokens G = 64 162-171 / 119-172, at 16 G =
// 128 196-203 / 143-210. At 128 tokens: G = 32 281-304 / 98-119, G = 64 208-244 / 130-179, G = 128
// 252-261 / 140-235 (tiles of 2 tokens with the float sums in registers: G = 64 224-233, G = 128
// 226-239; 4 tokens at G = 32 with them in L1: 280-296).
template <int G>
constexpr int64_t q4_gemm_min() { return G == 32 ? 9 : (G == 64 ? 12 : 16); }

template <int G>
void int4a8_matmul256(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t xrb, int64_t m, float* y,
                      int64_t ldy, int64_t row_begin, int64_t row_end) {
  if (m >= q4_gemm_min<G>()) int4a8_gemm256<G>(w, row_bytes, k, x, xrb, m, y, ldy, row_begin, row_end);
  else a8_matmul<Int4a8Tiles<G>>(w, row_bytes, k, x, xrb, m, y, ldy, row_begin, row_end);
}

// int8_g32_a8 (Q8_0 blocks) on the same panel GEMM, its signed values through the sign trick: per
// (token, 8 rows, 4 columns) a vpsignb, a vpmaddubsw (|w| x (a with w's sign), pairs <= 2 x 127 x
// 127, so no int16 run) and a vpmaddwd into the int32 block sum; the float sums in L1 (3-token
// tiles). From 12 tokens: on the Zen 5 VM at the forced avx2 level (cibench-microbench, 768 x 768,
// 2048 x 768, 4096 x 4096, one thread), GOPs GEMM / a8_matmul at 8 tokens 90-92 / 94-97, at 9
// 94 / 73-106, at 12 103-107 / 71-106, at 16 111-114 / 61-98; at 128 tokens 157-164 / 97-117
// (4-token tiles: 150-161).
constexpr int64_t kQ8GemmMin = 12;
void q8a8_matmul256(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t xrb, int64_t m, float* y,
                    int64_t ldy, int64_t row_begin, int64_t row_end) {
  if (m >= kQ8GemmMin) int4a8_gemm256<kQ8Block, true>(w, row_bytes, k, x, xrb, m, y, ldy, row_begin, row_end);
  else a8_matmul<Q8a8Tiles>(w, row_bytes, k, x, xrb, m, y, ldy, row_begin, row_end);
}

template <int G>
FormatKernels int4a8_kernels() {
  return FormatKernels{a8_matvec<Int4a8Tiles<G>>, int4a8_matmul256<G>, actb_quantize_avx2<G>};
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

// xb[off[0..8)] for the 8 u8 offsets of one int8_sparse group, q = the offsets as one 64-bit
// load; xb = x + the group's base column. Per offset one byte extract (movzbl of the low byte or
// of bits 8..15, the `h` register, which is why q lives in a legacy register: constraint Q) and
// one load folded into vinsertps; 11 integer ops + 8 loads + 7 shuffles per 8 non-zeros. Written
// out because g++ 12 extracts each byte with mov + shr + movzbl and does not fold the loads into
// the inserts (about 12 % slower at 90 % sparsity); vgatherdps is about 2x slower on Zen 3.
inline __m256 gather8_u8(const float* xb, uint64_t q) {
  __m256 v;
  __m128 hi;
  uint64_t t0, t1;
  asm("movzbl %b[q], %k[t0]\n\t"
      "movzbl %h[q], %k[t1]\n\t"
      "vmovss (%[xb],%[t0],4), %x[v]\n\t"
      "shr $16, %[q]\n\t"
      "vinsertps $0x10, (%[xb],%[t1],4), %x[v], %x[v]\n\t"
      "movzbl %b[q], %k[t0]\n\t"
      "movzbl %h[q], %k[t1]\n\t"
      "vinsertps $0x20, (%[xb],%[t0],4), %x[v], %x[v]\n\t"
      "shr $16, %[q]\n\t"
      "vinsertps $0x30, (%[xb],%[t1],4), %x[v], %x[v]\n\t"
      "movzbl %b[q], %k[t0]\n\t"
      "movzbl %h[q], %k[t1]\n\t"
      "vmovss (%[xb],%[t0],4), %[hi]\n\t"
      "shr $16, %[q]\n\t"
      "vinsertps $0x10, (%[xb],%[t1],4), %[hi], %[hi]\n\t"
      "movzbl %b[q], %k[t0]\n\t"
      "movzbl %h[q], %k[t1]\n\t"
      "vinsertps $0x20, (%[xb],%[t0],4), %[hi], %[hi]\n\t"
      "vinsertps $0x30, (%[xb],%[t1],4), %[hi], %[hi]\n\t"
      "vinsertf128 $1, %[hi], %[v], %[v]"
      : [v] "=&x"(v), [hi] "=&x"(hi), [t0] "=&r"(t0), [t1] "=&Q"(t1), [q] "+Q"(q)
      : [xb] "r"(xb), "m"(*reinterpret_cast<const float(*)[256]>(xb)));  // reads xb[0..256)
  return v;
}

// int8_sparse row: [u32 n][f32 scale][u16 base x n/8][u8 offset x n][int8 x n] (fmt_common.h).
// `next` (decode only) is prefetched at the same relative position, one line per 16 entries.
// Separate counters for the bases (2 bytes per 8 entries) and the prefetch (18 bytes per 8) keep
// the loop free of shifts.
template <int MR, bool Prefetch>
inline void int8_sparse_dot(const uint8_t* row, const uint8_t* next, const float* const* xs,
                            float* y, int64_t ldy) {
  const int64_t n = load_u32(row);
  const uint8_t* base = row + 8;
  const uint8_t* off = base + 2 * (n / kSparseGroup);
  const uint8_t* vals = off + n;
  __m256 acc[MR][2];
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  // p walks the offsets; the values are n bytes further (one pointer for both)
  const uint8_t* p = off;
  const uint8_t* const end = off + (n & ~int64_t{2 * kSparseGroup - 1});
  for (; p != end; p += 2 * kSparseGroup, base += 4) {
    if (Prefetch) {
      __builtin_prefetch(next, 0, 3);
      next += 2 * kSparseGroupBytes;
    }
    const __m256 v0 = cvt8_i8(p + n), v1 = cvt8_i8(p + n + 8);
    const uint32_t b = load_u32(base);  // the bases of both groups
    uint64_t q0, q1;
    std::memcpy(&q0, p, 8);
    std::memcpy(&q1, p + 8, 8);
    for (int i = 0; i < MR; ++i) {
      acc[i][0] = _mm256_fmadd_ps(v0, gather8_u8(xs[i] + (b & 0xffff), q0), acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(v1, gather8_u8(xs[i] + (b >> 16), q1), acc[i][1]);
    }
  }
  if (p != vals) {
    const __m256 v0 = cvt8_i8(p + n);
    const int64_t b0 = load_u16(base);
    uint64_t q0;
    std::memcpy(&q0, p, 8);
    for (int i = 0; i < MR; ++i) acc[i][0] = _mm256_fmadd_ps(v0, gather8_u8(xs[i] + b0, q0), acc[i][0]);
  }
  const float s = load_f32(row + 4);
  for (int i = 0; i < MR; ++i) y[i * ldy] = VecAvx2::hsum(_mm256_add_ps(acc[i][0], acc[i][1])) * s;
}

struct Int8Sparse {
  template <int MR>
  static void dot(const uint8_t* row, int64_t, const float* const* xs, float* y, int64_t ldy) {
    int8_sparse_dot<MR, false>(row, nullptr, xs, y, ldy);
  }
};

// Decode: rows are contiguous, so while row r is read, row r + 2 is prefetched at the same
// relative position (one row ahead is too close to hide DRAM latency at ~1 KB per row).
void int8_sparse_matvec(const uint8_t* w, size_t row_bytes, int64_t, const void* x, float* y,
                        int64_t row_begin, int64_t row_end) {
  const float* xs[1] = {static_cast<const float*>(x)};
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint8_t* row = row_ptr(w, row_bytes, r);
    const uint8_t* next = r + 2 < row_end ? row_ptr(w, row_bytes, r + 2) : row;
    int8_sparse_dot<1, true>(row, next, xs, y + (r - row_begin), 1);
  }
}

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

template <typename S>
int64_t lower_col(const uint8_t* row, int64_t n, int64_t col) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (S::column(row, n, mid) < col) lo = mid + 1; else hi = mid;
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
        const int64_t j0 = whole || c0 == 0 ? 0 : S::lower(row, n, c0);
        const int64_t j1 = whole || c0 + kc >= k ? n : S::lower(row, n, c0 + kc);
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                         _mm256_setzero_ps()};
        S::accumulate(row, n, j0, j1, xt, c0, acc);
        const __m256 sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        alignas(32) float out[kTokBlock];
        _mm256_store_ps(out, _mm256_mul_ps(sum, _mm256_set1_ps(S::scale(row))));
        for (int64_t t = 0; t < tb; ++t) {
          float& o = y[(i0 + t) * ldy + r];
          o = c0 == 0 ? out[t] : o + out[t];
        }
      }
    }
  }
}

// accumulate(row, n, j0, j1, xt, c0, acc): acc += value_j * xt[(column_j - c0) * 8 ..] over the
// stored entries [j0, j1) (their columns lie in the chunk that starts at c0), spread over acc[4].
struct F32SparseT : F32Sparse {
  static int64_t count(const uint8_t* row) { return load_u32(row); }
  static int64_t column(const uint8_t* row, int64_t n, int64_t j) {
    return load_u16(row + 4 + 4 * n + 2 * j);
  }
  static float scale(const uint8_t*) { return 1.f; }
  static int64_t lower(const uint8_t* row, int64_t n, int64_t col) {
    return lower_col<F32SparseT>(row, n, col);
  }
  static void accumulate(const uint8_t* row, int64_t n, int64_t j0, int64_t j1, const float* xt,
                         int64_t c0, __m256* acc) {
    const uint8_t* vals = row + 4;
    int64_t j = j0;
    for (; j + 2 <= j1; j += 2) {
      acc[0] = _mm256_fmadd_ps(_mm256_set1_ps(load_f32(vals + 4 * j)),
                               _mm256_load_ps(xt + (column(row, n, j) - c0) * kTokBlock), acc[0]);
      acc[1] = _mm256_fmadd_ps(_mm256_set1_ps(load_f32(vals + 4 * j + 4)),
                               _mm256_load_ps(xt + (column(row, n, j + 1) - c0) * kTokBlock), acc[1]);
    }
    if (j < j1)
      acc[0] = _mm256_fmadd_ps(_mm256_set1_ps(load_f32(vals + 4 * j)),
                               _mm256_load_ps(xt + (column(row, n, j) - c0) * kTokBlock), acc[0]);
  }
};
// Group by group: the base column read once per group, then per entry one byte offset, one
// int8 value converted and broadcast, one FMA. (Converting the group's 8 values with one vector
// op and broadcasting them from a stack line was slower at 90 % sparsity: the loads wait on the
// 32-byte store.)
struct Int8SparseT : Int8Sparse {
  static int64_t count(const uint8_t* row) { return load_u32(row); }
  static int64_t column(const uint8_t* row, int64_t n, int64_t j) {
    return load_u16(row + 8 + 2 * (j / kSparseGroup)) + row[8 + 2 * (n / kSparseGroup) + j];
  }
  static float scale(const uint8_t* row) { return load_f32(row + 4); }
  // The first entry at column >= col: a binary search over the group bases (one load a step),
  // then a scan of the group before.
  static int64_t lower(const uint8_t* row, int64_t n, int64_t col) {
    const uint8_t* base = row + 8;
    const uint8_t* off = base + 2 * (n / kSparseGroup);
    int64_t lo = 0, hi = n / kSparseGroup;  // first group with base >= col
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (load_u16(base + 2 * mid) < col) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) return 0;
    const int64_t g0 = (lo - 1) * kSparseGroup, b = load_u16(base + 2 * (lo - 1));
    int64_t j = g0;
    while (j < g0 + kSparseGroup && b + off[j] < col) ++j;
    return j;
  }
  static void accumulate(const uint8_t* row, int64_t n, int64_t j0, int64_t j1, const float* xt,
                         int64_t c0, __m256* acc) {
    const uint8_t* base = row + 8;
    const uint8_t* off = base + 2 * (n / kSparseGroup);
    const int8_t* vals = reinterpret_cast<const int8_t*>(off + n);
    for (int64_t j = j0; j < j1;) {
      const int64_t g = j / kSparseGroup, g0 = g * kSparseGroup;
      const int64_t e = j1 < g0 + kSparseGroup ? j1 : g0 + kSparseGroup;
      const int64_t xg = (load_u16(base + 2 * g) - c0) * kTokBlock;  // may be < 0 when j0 > g0
      if (j == g0 && e == g0 + kSparseGroup) {
        for (int t = 0; t < kSparseGroup; ++t)
          acc[t % 4] = _mm256_fmadd_ps(_mm256_set1_ps(static_cast<float>(vals[g0 + t])),
                                       _mm256_load_ps(xt + xg + off[g0 + t] * kTokBlock), acc[t % 4]);
        j = e;
      } else {
        for (; j < e; ++j)
          acc[0] = _mm256_fmadd_ps(_mm256_set1_ps(static_cast<float>(vals[j])),
                                   _mm256_load_ps(xt + xg + off[j] * kTokBlock), acc[0]);
      }
    }
  }
};

void add_decode_layout(const Spec& s, FormatKernels& f) {
  if (s.kind == Kind::q8_a8) {
    f.decode_bytes = decode_bytes_512<Kind::q8_a8, kQ8Block>;
    f.decode_pack = decode_pack_512<Kind::q8_a8, kQ8Block>;
    f.matvec_decode = q8a8_decode_matvec_256;
    return;
  }
  if (s.kind == Kind::int4_a8) {
    if (s.group == 32) set_int4a8_decode_256<32>(f);
    else if (s.group == 64) set_int4a8_decode_256<64>(f);
    else set_int4a8_decode_256<128>(f);
    return;
  }
  if (s.kind != Kind::int4) return;
  if (s.group == 32) s.asym ? set_int4f_decode_256<32, true>(f) : set_int4f_decode_256<32, false>(f);
  else if (s.group == 64) s.asym ? set_int4f_decode_256<64, true>(f) : set_int4f_decode_256<64, false>(f);
  else s.asym ? set_int4f_decode_256<128, true>(f) : set_int4f_decode_256<128, false>(f);
}

FormatKernels level_kernels(const Spec& s) {
  switch (s.kind) {
    case Kind::w8a8: return FormatKernels{int8_matvec<W8a8Dot>, int8_matmul<W8a8Dot>, act8_quantize_avx2};
    case Kind::w8a7: return FormatKernels{int8_matvec<W8a7Dot>, int8_matmul<W8a7Dot>, act7_quantize_avx2};
    case Kind::int4:
      if (s.asym) {
        if (s.group == 32) return int4_avx2_kernels<32, true>();
        if (s.group == 64) return int4_avx2_kernels<64, true>();
        return int4_avx2_kernels<128, true>();
      }
      if (s.group == 32) return int4_avx2_kernels<32, false>();
      if (s.group == 64) return int4_avx2_kernels<64, false>();
      return int4_avx2_kernels<128, false>();
    case Kind::int4_a8:
      if (s.group == 32) return int4a8_kernels<32>();
      if (s.group == 64) return int4a8_kernels<64>();
      return int4a8_kernels<128>();
    case Kind::q8_a8: return FormatKernels{q8a8_matvec, q8a8_matmul256, actb_quantize_avx2<kQ8Block>};
    case Kind::f32_sparse: return FormatKernels{sparse_matvec<F32Sparse>, sparse_matmul_t<F32SparseT>};
    case Kind::int8_sparse: return FormatKernels{int8_sparse_matvec, sparse_matmul_t<Int8SparseT>};
    case Kind::int8_bs: return sparse_kernels<Int8BlockSparse>();
    case Kind::int8_24: return sparse_kernels<Int8Semi24>();
    default: return dense_kernels<VecAvx2>(s);
  }
}

}  // namespace
}  // namespace fmt

namespace isa_entry {
constinit const fmt::FormatEntries fmt_avx2{.kernels = fmt::level_kernels,
                                            .add_decode_layout = fmt::add_decode_layout};
}  // namespace isa_entry

}  // namespace cibench
CIBENCH_TARGET_END
