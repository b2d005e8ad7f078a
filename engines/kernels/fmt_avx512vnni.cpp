// AVX-512 VNNI + AVX-512 BF16 kernels. This file alone is compiled with the AVX-512 flags plus
// -mavx512vnni -mavx512bf16. w8a8 (matvec and matmul) and the int4_gG_a8 matmuls (G = 32, 64,
// 128) have kernels of their own here (vpdpbusd); every other row falls back to its AVX-512 kernels.
// Dispatched only when cpuid reports the features; the twin tests (tests/unit/test_formats.cpp)
// check every kernel here bit for bit against the generic ones on a host that has them (they ran
// on an AMD Zen 5 class VM with AVX-512 VNNI) and skip the level elsewhere.
#include <immintrin.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "engines/kernels/fmt_common.h"

namespace cibench {
namespace fmt {
namespace {

struct Dot64Vnni {
  // acc += |w| (u8) . (a * sign w) (s8), four products per int32 lane, no saturation.
  static inline __m512i acc(__m512i acc, __m512i a, __m512i w, __m512i wabs) {
    const __m512i sa = _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(w), _mm512_setzero_si512(), a);
    return _mm512_dpbusd_epi32(acc, wabs, sa);
  }
};

#include "engines/kernels/fmt_w8a8_512.inc"
#include "engines/kernels/fmt_int4a8_512.inc"

// ---- w8a8 matmul for a few tokens (batched decode) and prefill -------------------------------
// vpdpbusd multiplies unsigned by signed bytes. Instead of the sign trick per (token, row) pair
// (an abs per row and a masked negate per pair), the weights are biased once per load to
// unsigned, w + 128 (an XOR with 0x80), and the bias comes off per output with the token's sum:
// sum((w + 128) a) - 128 sum(a) = sum(w a). The token sums are computed once per call (kTokens
// tokens at a time), so a 64-byte step of an MR x NR tile costs MR * NR vpdpbusd and NR XORs.
// Exact: the lanes wrap modulo 2^32 (vpdpbusd does not saturate) and the difference is taken
// modulo 2^32 too, so it is the true sum whenever that fits int32 (|sum| <= 127 * 127 * K), as
// the matvec's own accumulation needs anyway. Then the same float expression as the matvec and
// the generic twin: bit-identical.
// A tile is MR tokens x NR adjacent weight rows (MR x NR <= 16 accumulators); the first pass over
// a row group prefetches 8 rows ahead at the pace it reads this group; the other passes find the
// rows in L1. The loops are unrolled by pragma: left to itself GCC keeps the 4 x 4 accumulator
// array in memory and stores every accumulator at every step (half the speed from cache).
constexpr int64_t kTokens = 256;

template <int MR, int NR, bool Prefetch>
inline void vnni_tile(const uint8_t* const* rows, const uint8_t* next, int64_t kp, const uint8_t* x,
                      size_t xrb, const int32_t* xsum, float* y, int64_t ldy) {
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int t = 0; t < NR; ++t) acc[i][t] = _mm512_setzero_si512();
  for (int64_t c = 0; c < kp; c += 64) {
    const __mmask64 mk = w8a8_mask(c, kp);
    // (A compile-time switch: a run-time test here makes GCC store every accumulator each step.)
    if constexpr (Prefetch) prefetch_span(next + NR * c, NR * 64);
    __m512i wv[NR];
#pragma GCC unroll 8
    for (int t = 0; t < NR; ++t) wv[t] = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mk, rows[t] + 4 + c), bias);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512i a = _mm512_maskz_loadu_epi8(mk, x + i * xrb + kActHeader + c);
#pragma GCC unroll 8
      for (int t = 0; t < NR; ++t) acc[i][t] = _mm512_dpbusd_epi32(acc[i][t], wv[t], a);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    const float sx = load_f32(x + i * xrb);
#pragma GCC unroll 8
    for (int t = 0; t < NR; ++t) {
      const int32_t s = static_cast<int32_t>(static_cast<uint32_t>(_mm512_reduce_add_epi32(acc[i][t])) -
                                             128u * static_cast<uint32_t>(xsum[i]));
      y[i * ldy + t] = static_cast<float>(s) * (load_f32(rows[t]) * sx);
    }
  }
}

// The MR x NR tiles of one group of NR weight rows over all m tokens, MR tokens at a time (the
// first tile streams the rows from memory and prefetches ahead, the others find them in L1).
template <int NR, int MR>
inline void vnni_tile_rows(const uint8_t* const* rows, const uint8_t* next, int64_t kp, const uint8_t* x,
                           size_t xrb, const int32_t* xsum, int64_t m, float* y, int64_t ldy) {
  int64_t i = 0;
  if (m >= MR) {
    vnni_tile<MR, NR, true>(rows, next, kp, x, xrb, xsum, y, ldy);
    for (i = MR; i + MR <= m; i += MR)
      vnni_tile<MR, NR, false>(rows, next, kp, x + i * xrb, xrb, xsum + i, y + i * ldy, ldy);
  }
  const int64_t rest = m - i;
  if (rest == 0) return;
  const uint8_t* xi = x + i * xrb;
  const int32_t* si = xsum + i;
  float* yi = y + i * ldy;
  auto tail = [&](auto mr) {
    constexpr int R = decltype(mr)::value;
    i ? vnni_tile<R, NR, false>(rows, next, kp, xi, xrb, si, yi, ldy)
      : vnni_tile<R, NR, true>(rows, next, kp, xi, xrb, si, yi, ldy);
  };
  switch (rest) {
    case 1: tail(std::integral_constant<int, 1>{}); break;
    case 2: if constexpr (MR > 2) tail(std::integral_constant<int, 2>{}); break;
    case 3: if constexpr (MR > 3) tail(std::integral_constant<int, 3>{}); break;
    case 4: if constexpr (MR > 4) tail(std::integral_constant<int, 4>{}); break;
    case 5: if constexpr (MR > 5) tail(std::integral_constant<int, 5>{}); break;
    case 6: if constexpr (MR > 6) tail(std::integral_constant<int, 6>{}); break;
    case 7: if constexpr (MR > 7) tail(std::integral_constant<int, 7>{}); break;
    default: break;
  }
}

// Batched decode (m <= 8 tokens): tiles of all m tokens x 2 rows, so each weight byte is read
// from memory once and used by every token in the same pass, and the stream of weights keeps
// pace with the multiply-adds (two 4-token passes over 4 rows would leave memory idle during the
// second). Prefill (m > 8): 4 tokens x 4 rows, the rows re-read from L1 by each 4 tokens.
void w8a8_matmul_vnni(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes,
                      int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  const int64_t kp = round_up(k, 32);
  const __m512i ones = _mm512_set1_epi8(1);
  int32_t xsum[kTokens];
  for (int64_t i0 = 0; i0 < m; i0 += kTokens) {
    const int64_t mc = m - i0 < kTokens ? m - i0 : kTokens;
    const uint8_t* xa = static_cast<const uint8_t*>(x) + i0 * x_row_bytes;
    float* yc = y + i0 * ldy;
    for (int64_t i = 0; i < mc; ++i) {  // sum(a) per token, exact
      __m512i s = _mm512_setzero_si512();
      for (int64_t c = 0; c < kp; c += 64)
        s = _mm512_dpbusd_epi32(s, ones, _mm512_maskz_loadu_epi8(w8a8_mask(c, kp), xa + i * x_row_bytes + kActHeader + c));
      xsum[i] = _mm512_reduce_add_epi32(s);
    }
    int64_t r = row_begin;
    if (mc <= 8) {
      for (; r + 2 <= row_end; r += 2) {
        const uint8_t* rows[2] = {w + r * row_bytes, w + (r + 1) * row_bytes};
        vnni_tile_rows<2, 8>(rows, rows[0] + 8 * row_bytes, kp, xa, x_row_bytes, xsum, mc, yc + r, ldy);
      }
    } else {
      for (; r + 4 <= row_end; r += 4) {
        const uint8_t* rows[4] = {w + r * row_bytes, w + (r + 1) * row_bytes, w + (r + 2) * row_bytes,
                                  w + (r + 3) * row_bytes};
        vnni_tile_rows<4, 4>(rows, rows[0] + 8 * row_bytes, kp, xa, x_row_bytes, xsum, mc, yc + r, ldy);
      }
    }
    for (; r < row_end; ++r) {
      const uint8_t* rows[1] = {w + r * row_bytes};
      vnni_tile_rows<1, 8>(rows, rows[0] + row_bytes, kp, xa, x_row_bytes, xsum, mc, yc + r, ldy);
    }
  }
}

// ---- int4_g128_a8 matmul for a few tokens (batched decode) and prefill ------------------------
// One group of 128 is one 64-byte load of nibbles: the low nibbles are elements 32b + j and the
// high ones 32b + 16 + j of sub-block b (fmt_common.h), so the activations' 16-byte lanes are
// regrouped to match (two vshufi64x2) and each (token, row) pair takes two vpdpbusd of the
// unsigned codes q (0..15) by the int8 activations per group: 16 int32 lanes whose sum is the
// exact sum(q a). The MR x NR <= 16 pairs' lanes are then reduced together into one vector (a
// transpose-add tree), -8 times the block sum comes off (sum((q - 8) a) = sum(q a) - 8 sum(a),
// exact), and lane l = (i, t) does acc = fma(d_w * d_a, float(sum), acc) in group order: the
// generic twin's expression, so bit-identical. A ragged last group loads only its bytes.

// out = the 16 lane sums of v[0..16), in order (exact int32 adds).
inline __m512i reduce16_i32(const __m512i* v) {
  __m512i t[8], u[4];
  for (int k = 0; k < 8; ++k)
    t[k] = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2 * k], v[2 * k + 1]),
                            _mm512_unpackhi_epi32(v[2 * k], v[2 * k + 1]));
  for (int k = 0; k < 4; ++k)
    u[k] = _mm512_add_epi32(_mm512_unpacklo_epi64(t[2 * k], t[2 * k + 1]),
                            _mm512_unpackhi_epi64(t[2 * k], t[2 * k + 1]));
  // u[k]: per 128-bit lane the partial sums of v[4k .. 4k + 4) over that lane.
  const __m512i w0 = _mm512_add_epi32(_mm512_shuffle_i64x2(u[0], u[1], 0x44), _mm512_shuffle_i64x2(u[0], u[1], 0xee));
  const __m512i w1 = _mm512_add_epi32(_mm512_shuffle_i64x2(u[2], u[3], 0x44), _mm512_shuffle_i64x2(u[2], u[3], 0xee));
  return _mm512_add_epi32(_mm512_shuffle_i64x2(w0, w1, 0x88), _mm512_shuffle_i64x2(w0, w1, 0xdd));
}

template <int MR, int NR, bool Prefetch>
inline void int4a8_vnni_tile(const uint8_t* const* rows, const uint8_t* next, const uint8_t* x, size_t xrb,
                             int64_t k, float* y, int64_t ldy) {
  constexpr int64_t G = 128, gb = 2 + G / 2;
  const int64_t nb = actb_blocks(k, G), hdr = actb_header(k, G);
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  // Per lane l < MR * NR: its token l / NR and its row l % NR (lanes beyond are not stored).
  const __m512i lane_i = NR == 4 ? _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3)
                                 : _mm512_setr_epi32(0, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i lane_t = NR == 4 ? _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3)
                                 : _mm512_setzero_si512();
  static_assert(NR == 4 || NR == 1, "lane maps for 4 or 1 weight rows");
  __m512 acc = _mm512_setzero_ps();
  for (int64_t g = 0; g < nb; ++g) {
    const int64_t n = k - g * G < G ? k - g * G : G;
    const int64_t nv = round_up(n, 32);  // activation bytes, 2x the nibble bytes
    const __mmask64 mw = nv == G ? ~static_cast<__mmask64>(0) : ((static_cast<__mmask64>(1) << (nv / 2)) - 1);
    const __mmask64 ma0 = nv >= 64 ? ~static_cast<__mmask64>(0) : ((static_cast<__mmask64>(1) << nv) - 1);
    const __mmask64 ma1 = nv >= 128 ? ~static_cast<__mmask64>(0)
                                    : (nv > 64 ? ((static_cast<__mmask64>(1) << (nv - 64)) - 1) : 0);
    if constexpr (Prefetch) prefetch_span(next + NR * g * gb, NR * gb);
    __m512i lo[NR], hi[NR];
    for (int t = 0; t < NR; ++t) {
      const __m512i b = _mm512_maskz_loadu_epi8(mw, rows[t] + g * gb + 2);
      lo[t] = _mm512_and_si512(b, low4);
      hi[t] = _mm512_and_si512(_mm512_srli_epi16(b, 4), low4);
    }
    __m512i v[16];
    for (int l = MR * NR; l < 16; ++l) v[l] = _mm512_setzero_si512();
    for (int i = 0; i < MR; ++i) {
      const uint8_t* a = x + i * xrb + hdr + g * G;
      const __m512i a0 = _mm512_maskz_loadu_epi8(ma0, a), a1 = _mm512_maskz_loadu_epi8(ma1, a + 64);
      const __m512i alo = _mm512_shuffle_i64x2(a0, a1, 0x88), ahi = _mm512_shuffle_i64x2(a0, a1, 0xdd);
      for (int t = 0; t < NR; ++t)
        v[i * NR + t] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[t], alo), hi[t], ahi);
    }
    // Lane l = (i, t) = (l / NR, l % NR): its weight scale, activation scale and 8 * block sum,
    // gathered in registers (scalar stores read back as one vector would stall store forwarding).
    uint16_t h[4] = {0, 0, 0, 0};
    float da[4] = {0.f, 0.f, 0.f, 0.f};
    int32_t bs[4] = {0, 0, 0, 0};
    for (int t = 0; t < NR; ++t) h[t] = load_u16(rows[t] + g * gb);
    for (int i = 0; i < MR; ++i) {
      da[i] = load_f32(x + i * xrb + 4 * g);
      bs[i] = 8 * static_cast<int32_t>(load_u32(x + i * xrb + 4 * nb + 4 * g));
    }
    const __m512 dw = _mm512_permutexvar_ps(
        lane_t, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_setr_epi16(static_cast<short>(h[0]), static_cast<short>(h[1]),
                                                                   static_cast<short>(h[2]), static_cast<short>(h[3]),
                                                                   0, 0, 0, 0))));
    const __m512 dav = _mm512_permutexvar_ps(lane_i, _mm512_castps128_ps512(_mm_setr_ps(da[0], da[1], da[2], da[3])));
    const __m512i cs = _mm512_permutexvar_epi32(lane_i, _mm512_castsi128_si512(_mm_setr_epi32(bs[0], bs[1], bs[2], bs[3])));
    const __m512i sum = _mm512_sub_epi32(reduce16_i32(v), cs);
    acc = _mm512_fmadd_ps(_mm512_mul_ps(dw, dav), _mm512_cvtepi32_ps(sum), acc);
  }
  alignas(64) float out[16];
  _mm512_store_ps(out, acc);
  for (int l = 0; l < MR * NR; ++l) y[(l / NR) * ldy + l % NR] = out[l];
}

template <int NR>
inline void int4a8_vnni_rows(const uint8_t* const* rows, const uint8_t* next, const uint8_t* x, size_t xrb,
                             int64_t m, int64_t k, float* y, int64_t ldy) {
  int64_t i = 0;
  if (m >= 4) {
    int4a8_vnni_tile<4, NR, true>(rows, next, x, xrb, k, y, ldy);
    for (i = 4; i + 4 <= m; i += 4) int4a8_vnni_tile<4, NR, false>(rows, next, x + i * xrb, xrb, k, y + i * ldy, ldy);
  }
  const uint8_t* xi = x + i * xrb;
  float* yi = y + i * ldy;
  switch (m - i) {
    case 3:
      i ? int4a8_vnni_tile<3, NR, false>(rows, next, xi, xrb, k, yi, ldy)
        : int4a8_vnni_tile<3, NR, true>(rows, next, xi, xrb, k, yi, ldy);
      break;
    case 2:
      i ? int4a8_vnni_tile<2, NR, false>(rows, next, xi, xrb, k, yi, ldy)
        : int4a8_vnni_tile<2, NR, true>(rows, next, xi, xrb, k, yi, ldy);
      break;
    case 1:
      i ? int4a8_vnni_tile<1, NR, false>(rows, next, xi, xrb, k, yi, ldy)
        : int4a8_vnni_tile<1, NR, true>(rows, next, xi, xrb, k, yi, ldy);
      break;
    default: break;
  }
}

void int4g128a8_matmul_vnni(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes,
                            int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  const uint8_t* xa = static_cast<const uint8_t*>(x);
  int64_t r = row_begin;
  for (; r + 4 <= row_end; r += 4) {
    const uint8_t* rows[4] = {w + r * row_bytes, w + (r + 1) * row_bytes, w + (r + 2) * row_bytes,
                              w + (r + 3) * row_bytes};
    int4a8_vnni_rows<4>(rows, rows[0] + 8 * row_bytes, xa, x_row_bytes, m, k, y + r, ldy);
  }
  for (; r < row_end; ++r) {
    const uint8_t* rows[1] = {w + r * row_bytes};
    int4a8_vnni_rows<1>(rows, rows[0] + row_bytes, xa, x_row_bytes, m, k, y + r, ldy);
  }
}

// ---- int4_g32_a8 / int4_g64_a8 matmul for a few tokens (batched decode) and prefill -----------
// A group of 32 or 64 is one or two sub-blocks of 16 nibble bytes, too short for a 64-byte load,
// so a vector holds one sub-block of 4 adjacent weight rows, one per 128-bit lane (4 x 16-byte
// loads), and meets each token's 32 activations of that sub-block, 16 for the low nibbles and 16
// for the high ones broadcast to every lane: two vpdpbusd of the unsigned codes q (0..15) by the
// int8 activations per (token, sub-block). The 4 tokens' vectors then reduce in lane (two
// unpack-and-add steps) to one vector of exact sum(q a) whose lane 4 L + i is (row L, token i);
// -8 times the block sum comes off (sum((q - 8) a) = sum(q a) - 8 sum(a), exact) and each lane
// does acc = fma(d_w * d_a, float(sum), acc) in group order: the generic twin's expression, so
// bit-identical. The activation scales and block sums are laid out per group as 4-token vectors
// once per call. Fewer than 4 tokens leave lanes unused; fewer than 4 rows repeat the last one
// and do not store it; 5 to 8 tokens make two such vectors from the same 4 rows' nibbles and scales.
// The sub-block step is forced inline: called twice (G = 64), GCC otherwise made it a call and kept
// the int32 vectors in memory. On a TinyLlama-sized 5632 x 2048 matrix (one thread of a Zen 5
// class core, min of 30 runs, load average 2.2) G = 32 took 0.29 / 0.38 / 0.67 / 1.37 ms for
// 2 / 4 / 8 / 16 tokens against 0.46 / 0.93 / 1.89 / 4.08 ms through the AVX2 kernels (G = 64:
// 0.22 / 0.34 / 0.54 / 1.10 against 0.35 / 0.70 / 1.45 / 2.60 ms); one token, 0.23 / 0.18 ms,
// stays on the AVX2 kernels.
template <int G>
struct Int4a8ActBlock {  // d_a and 8 * block sum of token 4 q + s, group g at (q * nb + g) * 4 + s (0 if none)
  const float* da;
  const int32_t* cs;
};

template <int G, int MR, bool Prefetch>
inline void int4a8s_vnni_tile(const uint8_t* const* rows, int nrv, const uint8_t* next, const uint8_t* x,
                              size_t xrb, Int4a8ActBlock<G> ab, int64_t k, float* y, int64_t ldy) {
  static_assert(G == 32 || G == 64, "one or two sub-blocks per group");
  static_assert(MR >= 1 && MR <= 8, "one lane per (row, token) of 4 x 4, one or two vectors");
  constexpr int NQ = (MR + 3) / 4;  // output vectors: tokens 4q .. 4q + 3
  constexpr int64_t gb = 2 + G / 2;
  const int64_t nb = actb_blocks(k, G), hdr = actb_header(k, G);
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i lane_row = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  __m512 acc[NQ];
#pragma GCC unroll 2
  for (int q = 0; q < NQ; ++q) acc[q] = _mm512_setzero_ps();
  for (int64_t g = 0; g < nb; ++g) {
    if constexpr (Prefetch) prefetch_span(next + 4 * g * gb, 4 * gb);
    __m512i v[4 * NQ];
#pragma GCC unroll 8
    for (int i = 0; i < 4 * NQ; ++i) v[i] = _mm512_setzero_si512();
    // one sub-block: 16 nibble bytes at w[t] for row t, token i's 32 activations at a + i * as
    auto sub = [&](const uint8_t* const* w, const uint8_t* a, size_t as) __attribute__((always_inline)) {
      __m512i b = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[0])));
      b = _mm512_inserti32x4(b, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[1])), 1);
      b = _mm512_inserti32x4(b, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[2])), 2);
      b = _mm512_inserti32x4(b, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[3])), 3);
      const __m512i lo = _mm512_and_si512(b, low4), hi = _mm512_and_si512(_mm512_srli_epi16(b, 4), low4);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const uint8_t* ai = a + i * as;
        const __m512i alo = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ai)));
        const __m512i ahi = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ai + 16)));
        v[i] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(v[i], lo, alo), hi, ahi);
      }
    };
    const int64_t o = g * gb + 2;
    const uint8_t* w0[4] = {rows[0] + o, rows[1] + o, rows[2] + o, rows[3] + o};
    sub(w0, x + hdr + g * G, xrb);
    if constexpr (G == 64) {
      if (k - g * G > 32) {  // the second sub-block (absent from a ragged last group of <= 32)
        const uint8_t* w1[4] = {w0[0] + 16, w0[1] + 16, w0[2] + 16, w0[3] + 16};
        sub(w1, x + hdr + g * G + 32, xrb);
      }
    }
    const int64_t h = g * gb;
    const __m512 dw = _mm512_permutexvar_ps(
        lane_row, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_setr_epi16(
                      static_cast<short>(load_u16(rows[0] + h)), static_cast<short>(load_u16(rows[1] + h)),
                      static_cast<short>(load_u16(rows[2] + h)), static_cast<short>(load_u16(rows[3] + h)), 0, 0, 0, 0))));
#pragma GCC unroll 2
    for (int q = 0; q < NQ; ++q) {
      // per lane L: [v0 v1 v2 v3] totals over the lane's 4 int32
      const __m512i* vq = v + 4 * q;
      const __m512i t0 = _mm512_add_epi32(_mm512_unpacklo_epi32(vq[0], vq[1]), _mm512_unpackhi_epi32(vq[0], vq[1]));
      const __m512i t1 = _mm512_add_epi32(_mm512_unpacklo_epi32(vq[2], vq[3]), _mm512_unpackhi_epi32(vq[2], vq[3]));
      const __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1), _mm512_unpackhi_epi64(t0, t1));
      const int64_t at = (q * nb + g) * 4;
      const __m512i sum =
          _mm512_sub_epi32(u, _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ab.cs + at))));
      const __m512 da = _mm512_broadcast_f32x4(_mm_loadu_ps(ab.da + at));
      acc[q] = _mm512_fmadd_ps(_mm512_mul_ps(dw, da), _mm512_cvtepi32_ps(sum), acc[q]);
    }
  }
  for (int q = 0; q < NQ; ++q) {
    alignas(64) float out[16];
    _mm512_store_ps(out, acc[q]);
    for (int t = 0; t < nrv; ++t)
      for (int s = 0; s < 4 && 4 * q + s < MR; ++s) y[(4 * q + s) * ldy + t] = out[4 * t + s];
  }
}

// Tokens in blocks of 16 (their activation rows stay in L1/L2 while the weight rows pass), rows
// 4 at a time, each group of 4 rows against the block's tokens 8 at a time: the first tile reads
// the rows from memory and prefetches 8 rows ahead, the others find them in L1. One token alone
// takes the AVX2 kernels (their 8-row matvec packs two rows per vector with no lanes unused).
template <int G>
void int4a8_matmul_vnni(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes,
                        int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  if (m == 1) {
    static const decltype(FormatKernels::matmul) one = kernels_avx2(Spec{Kind::int4_a8, G, false}).matmul;
    one(w, row_bytes, k, x, x_row_bytes, m, y, ldy, row_begin, row_end);
    return;
  }
  constexpr int64_t kTok = 16;
  const uint8_t* xa = static_cast<const uint8_t*>(x);
  const int64_t nb = actb_blocks(k, G);
  std::vector<float> da(static_cast<size_t>(kTok * nb));
  std::vector<int32_t> cs(static_cast<size_t>(kTok * nb));
  for (int64_t i0 = 0; i0 < m; i0 += kTok) {
    const int64_t mc = m - i0 < kTok ? m - i0 : kTok;
    const uint8_t* xc = xa + i0 * x_row_bytes;
    float* yc = y + i0 * ldy;
    const int64_t nq = (mc + 3) / 4;
    for (int64_t q = 0; q < nq; ++q)
      for (int64_t g = 0; g < nb; ++g)
        for (int64_t s = 0; s < 4; ++s) {
          const int64_t i = 4 * q + s;
          const size_t at = static_cast<size_t>((q * nb + g) * 4 + s);
          da[at] = i < mc ? load_f32(xc + i * x_row_bytes + 4 * g) : 0.f;
          cs[at] = i < mc ? 8 * static_cast<int32_t>(load_u32(xc + i * x_row_bytes + 4 * nb + 4 * g)) : 0;
        }
    for (int64_t r = row_begin; r < row_end; r += 4) {
      const int nrv = row_end - r < 4 ? static_cast<int>(row_end - r) : 4;
      const uint8_t* rows[4];
      for (int t = 0; t < 4; ++t) rows[t] = w + (r + (t < nrv ? t : nrv - 1)) * row_bytes;
      const uint8_t* next = rows[0] + 8 * row_bytes;
      for (int64_t q = 0; q < nq; q += 2) {
        const Int4a8ActBlock<G> ab{da.data() + q * nb * 4, cs.data() + q * nb * 4};
        const uint8_t* xq = xc + 4 * q * x_row_bytes;
        float* yq = yc + 4 * q * ldy + r;
        const bool pf = q == 0 && nrv == 4;
        auto tile = [&](auto mr) {
          constexpr int R = decltype(mr)::value;
          pf ? int4a8s_vnni_tile<G, R, true>(rows, nrv, next, xq, x_row_bytes, ab, k, yq, ldy)
             : int4a8s_vnni_tile<G, R, false>(rows, nrv, next, xq, x_row_bytes, ab, k, yq, ldy);
        };
        switch (mc - 4 * q < 8 ? mc - 4 * q : 8) {
          case 8: tile(std::integral_constant<int, 8>{}); break;
          case 7: tile(std::integral_constant<int, 7>{}); break;
          case 6: tile(std::integral_constant<int, 6>{}); break;
          case 5: tile(std::integral_constant<int, 5>{}); break;
          case 4: tile(std::integral_constant<int, 4>{}); break;
          case 3: tile(std::integral_constant<int, 3>{}); break;
          case 2: tile(std::integral_constant<int, 2>{}); break;
          default: tile(std::integral_constant<int, 1>{}); break;
        }
      }
    }
  }
}

}  // namespace

FormatKernels kernels_avx512vnni(const Spec& s) {
  if (s.kind == Kind::w8a8) return FormatKernels{w8a8_matvec_512<Dot64Vnni>, w8a8_matmul_vnni};
  if (s.kind == Kind::int4_a8) {
    FormatKernels f = kernels_avx2(s);  // the AVX2 quantiser; the matvec and matmuls here
    f.matvec = s.group == 128 ? int4a8_matvec_512<128> : (s.group == 64 ? int4a8_matvec_512<64> : int4a8_matvec_512<32>);
    f.matmul = s.group == 128 ? int4g128a8_matmul_vnni
                              : (s.group == 64 ? int4a8_matmul_vnni<64> : int4a8_matmul_vnni<32>);
    return f;
  }
  return {};
}

}  // namespace fmt
}  // namespace cibench
