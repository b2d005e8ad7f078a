// AVX-512 VNNI + AVX-512 BF16 kernels. This file alone is compiled with the AVX-512 flags plus
// -mavx512vnni -mavx512bf16. Only w8a8 has a kernel of its own here for now (vpdpbusd); every
// other row falls back to its AVX-512 kernels.
// NOT EXECUTED on the development host (AMD EPYC Zen 3: no AVX-512, no VNNI): written to the
// Intel intrinsics documentation, compiled, dispatched only when cpuid reports the features, and
// untested here (the twin tests skip unsupported levels).
#include <immintrin.h>

#include <cstring>

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
// A tile is MR tokens x NR adjacent weight rows; the first pass over a row group (tokens 0-3)
// prefetches the group after next at the pace it reads this one; the other passes find the rows
// in L1.
constexpr int64_t kTokens = 256;

template <int MR, int NR, bool Prefetch>
inline void vnni_tile(const uint8_t* const* rows, const uint8_t* next, int64_t kp, const uint8_t* x,
                      size_t xrb, const int32_t* xsum, float* y, int64_t ldy) {
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int t = 0; t < NR; ++t) acc[i][t] = _mm512_setzero_si512();
  for (int64_t c = 0; c < kp; c += 64) {
    const __mmask64 mk = w8a8_mask(c, kp);
    // (A compile-time switch: a run-time test here makes GCC store every accumulator each step.)
    if constexpr (Prefetch) prefetch_span(next + NR * c, NR * 64);
    __m512i wv[NR];
    for (int t = 0; t < NR; ++t) wv[t] = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mk, rows[t] + 4 + c), bias);
    for (int i = 0; i < MR; ++i) {
      const __m512i a = _mm512_maskz_loadu_epi8(mk, x + i * xrb + kActHeader + c);
      for (int t = 0; t < NR; ++t) acc[i][t] = _mm512_dpbusd_epi32(acc[i][t], wv[t], a);
    }
  }
  for (int i = 0; i < MR; ++i) {
    const float sx = load_f32(x + i * xrb);
    for (int t = 0; t < NR; ++t) {
      const int32_t s = static_cast<int32_t>(static_cast<uint32_t>(_mm512_reduce_add_epi32(acc[i][t])) -
                                             128u * static_cast<uint32_t>(xsum[i]));
      y[i * ldy + t] = static_cast<float>(s) * (load_f32(rows[t]) * sx);
    }
  }
}

template <int NR>
inline void vnni_tile_rows(const uint8_t* const* rows, const uint8_t* next, int64_t kp, const uint8_t* x,
                           size_t xrb, const int32_t* xsum, int64_t m, float* y, int64_t ldy) {
  int64_t i = 0;
  if (m >= 4) {
    vnni_tile<4, NR, true>(rows, next, kp, x, xrb, xsum, y, ldy);
    for (i = 4; i + 4 <= m; i += 4)
      vnni_tile<4, NR, false>(rows, next, kp, x + i * xrb, xrb, xsum + i, y + i * ldy, ldy);
  }
  const uint8_t* xi = x + i * xrb;
  const int32_t* si = xsum + i;
  float* yi = y + i * ldy;
  switch (m - i) {
    case 3:
      i ? vnni_tile<3, NR, false>(rows, next, kp, xi, xrb, si, yi, ldy)
        : vnni_tile<3, NR, true>(rows, next, kp, xi, xrb, si, yi, ldy);
      break;
    case 2:
      i ? vnni_tile<2, NR, false>(rows, next, kp, xi, xrb, si, yi, ldy)
        : vnni_tile<2, NR, true>(rows, next, kp, xi, xrb, si, yi, ldy);
      break;
    case 1:
      i ? vnni_tile<1, NR, false>(rows, next, kp, xi, xrb, si, yi, ldy)
        : vnni_tile<1, NR, true>(rows, next, kp, xi, xrb, si, yi, ldy);
      break;
    default: break;
  }
}

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
    for (; r + 4 <= row_end; r += 4) {
      const uint8_t* rows[4] = {w + r * row_bytes, w + (r + 1) * row_bytes, w + (r + 2) * row_bytes,
                                w + (r + 3) * row_bytes};
      vnni_tile_rows<4>(rows, rows[0] + 8 * row_bytes, kp, xa, x_row_bytes, xsum, mc, yc + r, ldy);
    }
    for (; r < row_end; ++r) {
      const uint8_t* rows[1] = {w + r * row_bytes};
      vnni_tile_rows<1>(rows, rows[0] + row_bytes, kp, xa, x_row_bytes, xsum, mc, yc + r, ldy);
    }
  }
}

}  // namespace

FormatKernels kernels_avx512vnni(const Spec& s) {
  if (s.kind == Kind::w8a8) return FormatKernels{w8a8_matvec_512<Dot64Vnni>, w8a8_matmul_vnni};
  return {};
}

}  // namespace fmt
}  // namespace cibench
