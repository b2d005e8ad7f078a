// AVX-512 VNNI + AVX-512 BF16 kernels, in the avx512_vnni target region (isa_target.h): internal
// linkage all, reached through isa_entry::fmt_avx512vnni only. w8a8 (matvec and matmul), the
// w8a7 matmul, the int4_gG_a8 matmuls (G = 32, 64, 128) and int8_g32_a8 (matvec and matmul) have
// kernels of their own here (vpdpbusd): for a few tokens, and for many (prefill) a
// register-blocked GEMM over weight panels repacked per call; so has bf16 (vdpbf16ps, on
// activations rounded to bf16; on Intel CPUs its prefill takes the same products on f32 FMAs,
// bf16_fma_matmul). Every other row falls back to its AVX-512 (w8a7: AVX2) kernels.
// Handed out only where the level is supported (fmt::format_entries); the twin tests
// (tests/unit/test_formats.cpp) check every kernel here bit for bit against the generic ones on a
// host that has them (they ran on an AMD Zen 5 class VM with AVX-512 VNNI) and skip the level
// elsewhere.
#include <immintrin.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "engines/kernels/fmt_common.h"
#include "engines/kernels/half.h"
#include "engines/kernels/isa_entries.h"
#include "engines/kernels/isa_target.h"

CIBENCH_TARGET_BEGIN_AVX512_VNNI
#include "engines/kernels/fmt_decode_layout.h"
#include "engines/kernels/transpose_avx.h"
#include "engines/kernels/vec_avx512.h"

namespace cibench {
namespace fmt {
namespace {

#include "engines/kernels/gemm_xt.inc"
#include "engines/kernels/fmt_dense.inc"

struct Dot64Vnni {
  // acc += |w| (u8) . (a * sign w) (s8), four products per int32 lane, no saturation.
  static inline __m512i acc(__m512i acc, __m512i a, __m512i w, __m512i wabs) {
    const __m512i sa = _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(w), _mm512_setzero_si512(), a);
    return _mm512_dpbusd_epi32(acc, wabs, sa);
  }
};

#include "engines/kernels/fmt_w8a8_512.inc"

#include "engines/kernels/fmt_group_gemm_512.inc"
#include "engines/kernels/fmt_int4a8_512.inc"

// ---- w8a8 / w8a7 prefill: a register-blocked vpdpbusd GEMM over repacked weight panels ---------
// Per call, each panel of up to 32 adjacent weight rows is repacked (per 16 rows, a 16 x 16 dword
// transpose per 64 columns) into the VNNI layout P[s][v] = 64 bytes holding rows 16 v .. 16 v + 15
// x columns 4 s .. 4 s + 3 (row n's four bytes in int32 lane n), and every tile of up to
// kGemmTokens tokens then walks it: per 4 columns, one 4-byte broadcast per token and one vpdpbusd
// per (token, 16 rows), 16 outputs per accumulator and no horizontal sums. The repack reads each
// row once per kGemmBlock tokens and costs about 1/32 of the multiply-adds of each token it serves,
// so it pays from a few tokens on (kGemmMinTokens). K is taken kGemmKc columns at a time (a 32 KB
// panel chunk, in L1 while the tiles walk it); between chunks a tile parks its int32 sums in a
// stack buffer. The first tile of a chunk prefetches the rows of the next chunk or panel.
//   w8a8: the weights are biased to unsigned in the repack (w + 128, an XOR), the activations are
//         the signed operand; the bias comes off per output with the token's sum:
//         sum((w + 128) a) - 128 sum(a) = sum(w a).
//   w8a7: the 7-bit activations are the unsigned operand, the weights the signed one as stored;
//         the zero point comes off per output: sum(q w) - z sum(w) (sum(w) in the row header).
// Both are exact int32 (modulo 2^32 on the way, the true sum at the end), then the generic twin's
// float expression float(s) * (scale_w * scale_x) in 16 lanes: bit-identical.
// On one Zen 5 class core (tokens x rows x K = 128 x 768 x 768) it runs at ~410 G multiply-adds/s,
// ~95 % of the measured vpdpbusd peak (two 512-bit vpdpbusd per cycle); see docs/formats.md.
constexpr int kGemmTokens = 12;       // tokens per register tile (12 x 2 accumulators)
// From how many tokens the GEMMs take over (below, the kernels for a few tokens read the rows from
// memory faster: 2048 x 2048 matrices, one thread, crossovers measured at 12-16 tokens for w8a8,
// below 8 for w8a7 against its AVX2 kernel (fmt_common.h), 16-24 for int4_gG_a8).
constexpr int64_t kGemmMinTokens = kW8a8GemmMinTokens;
constexpr int64_t kGemmMinTokensA7 = kW8a7GemmMinTokens;
constexpr int64_t kGemmMinTokensQ4 = 24;  // int4_gG_a8
static_assert(kGemmKc % 64 == 0 && kGemmBlock % kGemmTokens == 0, "chunk and block geometry");

// Rows w[0 .. nr) (nr <= 16; missing rows read as 0) of a panel, columns [0, kc) (kc a multiple of
// 32), into P[s * nv + v]; w8a8 (Bias) XORs every byte with 0x80.
template <bool Bias>
inline void repack16(const uint8_t* w, size_t row_bytes, int64_t nr, int64_t kc, __m512i* P, int nv, int v) {
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t c = 0; c < kc; c += 64) {
    const __mmask64 mk = w8a8_mask(c, kc);
    __m512i r[16];
#pragma GCC unroll 16
    for (int n = 0; n < 16; ++n) {
      r[n] = n < nr ? _mm512_maskz_loadu_epi8(mk, w + n * row_bytes + c) : _mm512_setzero_si512();
      if constexpr (Bias) r[n] = _mm512_xor_si512(r[n], bias);
    }
    // the 16 x 16 dword transpose into the panel (store_vnni_columns)
    store_vnni_columns(r, (kc - c) / 4 < 16 ? (kc - c) / 4 : 16, P + (c / 4) * nv + v, nv);
  }
}

// One panel chunk as the tiles see it (lanes of rows that do not exist hold 0).
struct PanelChunk {
  const __m512i* P;          // the chunk's first 16 rows: step s at P[s * step]
  const __m512i* P1;         // its second 16 rows (NV = 2): step s at P1[s * step]
  int64_t step;              // vectors from one step of 4 columns to the next
  int64_t S;                 // steps of 4 columns
  int64_t col;               // the chunk's first column
  bool first, last;          // first / last chunk of K: start from 0 / finish the outputs
  __m512 sw[kPanelVecs];     // weight scales
  __m512i rsum[kPanelVecs];  // w8a7: sum of each row's int8 values
  __mmask16 keep;            // valid lanes of the last vector
  // Prefetch for the first tile: `pf_rows` rows of `pf_len` bytes from pf (stride row_bytes),
  // pf_lines 64-byte lines per step.
  const uint8_t* pf;
  int64_t pf_rows, pf_len, pf_lines;
  size_t row_bytes;
};

// acc += u (unsigned bytes) . s (signed bytes), four products per int32 lane. Written as inline asm
// because with the intrinsic GCC 12 does not keep the accumulator in place: it copies each one to
// a fresh register and stores it to the stack at every step (about half the speed).
__attribute__((always_inline)) inline void dpbusd_asm(__m512i& acc, __m512i u, __m512i s) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
}

// The exact int32 sums of 16 rows for one token, corrected, scaled and stored (lanes in `keep`).
template <bool A7>
inline void gemm_out(__m512i acc, int32_t corr, __m512i rsum, __m512 sw, __m512 sx, __mmask16 keep, float* y) {
  const __m512i c = A7 ? _mm512_mullo_epi32(_mm512_set1_epi32(corr), rsum) : _mm512_set1_epi32(corr);
  _mm512_mask_storeu_ps(y, keep, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc, c)), _mm512_mul_ps(sw, sx)));
}

// MR tokens x NV 16-row vectors over one chunk: start from 0 or from the parked sums part[i][32],
// then park the sums again or (last chunk) correct, scale and store y[i * ldy + 16 v + lane].
// `corr` holds per token 128 sum(a) (w8a8) or z (w8a7).
// Not inlined, and one array per 16-row vector: inlined into its callers, or as one 2-D array, GCC
// 12 kept the accumulators in memory.
template <bool A7, int MR, int NV, bool Prefetch>
__attribute__((noinline)) void gemm_tile(const PanelChunk& pc, const uint8_t* x, size_t xrb, const int32_t* corr,
                                         int32_t* part, float* y, int64_t ldy) {
  static_assert(NV == 1 || NV == 2, "one or two 16-row vectors");
  __m512i acc0[MR], acc1[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    acc0[i] = pc.first ? _mm512_setzero_si512() : _mm512_load_si512(part + i * kPanelRows);
    acc1[i] = pc.first ? _mm512_setzero_si512() : _mm512_load_si512(part + i * kPanelRows + 16);
  }
  const __m512i* P = pc.P;
  const __m512i* P1 = pc.P1;
  const int64_t st = pc.step;
  const uint8_t* a = x + kActHeader + pc.col;
  int64_t pr = 0, pcol = 0;  // prefetch position: row, byte within it
  for (int64_t s = 0; s < pc.S; ++s) {
    if constexpr (Prefetch) {
      for (int64_t l = 0; l < pc.pf_lines && pr < pc.pf_rows; ++l) {
        __builtin_prefetch(pc.pf + pr * pc.row_bytes + pcol, 0, 3);
        if ((pcol += 64) >= pc.pf_len) pcol = 0, ++pr;
      }
    }
    const __m512i w0 = _mm512_loadu_si512(P + s * st);
    const __m512i w1 = NV == 2 ? _mm512_loadu_si512(P1 + s * st) : w0;
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512i ab = _mm512_set1_epi32(load_i32(a + i * xrb + 4 * s));
      if constexpr (A7) {
        dpbusd_asm(acc0[i], ab, w0);
        if constexpr (NV == 2) dpbusd_asm(acc1[i], ab, w1);
      } else {
        dpbusd_asm(acc0[i], w0, ab);
        if constexpr (NV == 2) dpbusd_asm(acc1[i], w1, ab);
      }
    }
  }
  if (!pc.last) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      _mm512_store_si512(part + i * kPanelRows, acc0[i]);
      if constexpr (NV == 2) _mm512_store_si512(part + i * kPanelRows + 16, acc1[i]);
    }
    return;
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    const __m512 sx = _mm512_set1_ps(load_f32(x + i * xrb));
    gemm_out<A7>(acc0[i], corr[i], pc.rsum[0], pc.sw[0], sx, NV == 1 ? pc.keep : static_cast<__mmask16>(0xffff),
                 y + i * ldy);
    if constexpr (NV == 2) gemm_out<A7>(acc1[i], corr[i], pc.rsum[1], pc.sw[1], sx, pc.keep, y + i * ldy + 16);
  }
}

// Every tile of m tokens (<= kGemmBlock) over one panel chunk.
template <bool A7, int NV>
inline void gemm_chunk(const PanelChunk& pc, const uint8_t* x, size_t xrb, const int32_t* corr, int32_t* part,
                       int64_t m, float* y, int64_t ldy) {
  static_assert(kGemmTokens == 12, "tails of 1 .. 11 tokens");
  for (int64_t i = 0; i < m;) {
    const int64_t n = m - i < kGemmTokens ? m - i : kGemmTokens;
    const bool pf = i == 0 && pc.pf_rows > 0;
    auto tile = [&](auto mr) {
      constexpr int R = decltype(mr)::value;
      int32_t* pt = part + i * kPanelRows;
      pf ? gemm_tile<A7, R, NV, true>(pc, x + i * xrb, xrb, corr + i, pt, y + i * ldy, ldy)
         : gemm_tile<A7, R, NV, false>(pc, x + i * xrb, xrb, corr + i, pt, y + i * ldy, ldy);
    };
    with_tile_rows<12>(n, tile);
    i += n;
  }
}

// Rows [row_begin, row_end) x m tokens. A7 = w8a7 (header [scale][sum], unsigned activations).
// Stack: a 32 KB panel chunk, 30 KB of parked sums.
template <bool A7>
void int8_gemm_vnni(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t xrb, int64_t m,
                    float* y, int64_t ldy, int64_t row_begin, int64_t row_end, const uint8_t* layout = nullptr) {
  const int64_t kp = round_up(k, 32);
  const int64_t hdr = A7 ? kW8a7Header : 4;
  const uint8_t* xa = static_cast<const uint8_t*>(x);
  alignas(64) __m512i panel[kGemmKc / 4 * kPanelVecs];
  alignas(64) int32_t part[kGemmBlock * kPanelRows];
  int32_t corr[kGemmBlock];
  for (int64_t i0 = 0; i0 < m; i0 += kGemmBlock) {
    const int64_t mc = m - i0 < kGemmBlock ? m - i0 : kGemmBlock;
    const uint8_t* xc = xa + i0 * xrb;
    float* yc = y + i0 * ldy;
    for (int64_t i = 0; i < mc; ++i) {
      const uint8_t* xi = xc + i * xrb;
      if constexpr (A7) {
        corr[i] = load_i32(xi + 4);  // z
      } else {  // 128 sum(a), modulo 2^32 like the accumulators
        const __m512i ones = _mm512_set1_epi8(1);
        __m512i sa = _mm512_setzero_si512();
        for (int64_t c = 0; c < kp; c += 64)
          sa = _mm512_dpbusd_epi32(sa, ones, _mm512_maskz_loadu_epi8(w8a8_mask(c, kp), xi + kActHeader + c));
        corr[i] = static_cast<int32_t>(128u * static_cast<uint32_t>(_mm512_reduce_add_epi32(sa)));
      }
    }
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kPanelRows) {
      const int64_t nr = row_end - r0 < kPanelRows ? row_end - r0 : kPanelRows;
      const int nv = static_cast<int>((nr + 15) / 16);
      const int64_t nl = nr - 16 * (nv - 1);
      PanelChunk pc;
      const int64_t block_bytes = kDecodeRows * static_cast<int64_t>(row_bytes);
      alignas(64) float sw[kPanelRows] = {};
      alignas(64) int32_t rs[kPanelRows] = {};
      if (layout) {
        // The 16 scales (w8a7: then the 16 sums) at the head of each whole block (the rows' own
        // headers are a cache line apart each: loading them one by one was 4.5 % of a DistilBERT
        // w8a8 pass, 128 tokens).
        for (int v = 0; v < nv; ++v) {
          const uint8_t* head = layout + (r0 / kDecodeRows + v) * block_bytes;
          std::memcpy(sw + 16 * v, head, 64);
          if constexpr (A7) std::memcpy(rs + 16 * v, head + 64, 64);
        }
      } else {
        for (int64_t n = 0; n < nr; ++n) {
          const uint8_t* row = w + (r0 + n) * row_bytes;
          sw[n] = load_f32(row);
          if constexpr (A7) rs[n] = load_i32(row + 4);
        }
      }
      for (int v = 0; v < kPanelVecs; ++v) {
        pc.sw[v] = _mm512_load_ps(sw + 16 * v);
        pc.rsum[v] = _mm512_load_si512(rs + 16 * v);
      }
      pc.keep = static_cast<__mmask16>(nl == 16 ? 0xffff : (1u << nl) - 1);
      pc.row_bytes = row_bytes;
      auto lay_at = [&](int64_t r, int64_t col) {  // block r / 16's vector of column col
        return reinterpret_cast<const __m512i*>(layout + r / kDecodeRows * block_bytes + kDecodeRows * hdr) + col / 4;
      };
      for (int64_t k0 = 0; k0 < kp; k0 += kGemmKc) {
        const int64_t kc = kp - k0 < kGemmKc ? kp - k0 : kGemmKc;
        if (layout) {
          pc.P = lay_at(r0, k0);
          pc.P1 = pc.P + block_bytes / 64;
          pc.step = 1;
        } else {
          for (int v = 0; v < nv; ++v) {
            const int64_t n16 = nr - 16 * v < 16 ? nr - 16 * v : 16;
            repack16<!A7>(w + (r0 + 16 * v) * row_bytes + hdr + k0, row_bytes, n16, kc, panel, nv, v);
          }
          pc.P = panel;
          pc.P1 = panel + 1;
          pc.step = nv;
        }
        pc.S = kc / 4;
        pc.col = k0;
        pc.first = k0 == 0;
        pc.last = k0 + kc == kp;
        // What comes next: this panel's next chunk, else the next panel, else (another block of
        // tokens) the first panel again.
        int64_t nr0 = r0, nk0 = k0 + kc;
        if (pc.last) nr0 = r0 + kPanelRows < row_end ? r0 + kPanelRows : (i0 + mc < m ? row_begin : row_end), nk0 = 0;
        pc.pf = w + nr0 * row_bytes + hdr + nk0;
        pc.pf_rows = nr0 < row_end ? (row_end - nr0 < kPanelRows ? row_end - nr0 : kPanelRows) : 0;
        pc.pf_len = kp - nk0 < kGemmKc ? kp - nk0 : kGemmKc;
        if (layout) {  // the next chunk in the layout: per 16-row block, 16 bytes a column
          pc.row_bytes = static_cast<size_t>(block_bytes);
          pc.pf = reinterpret_cast<const uint8_t*>(nr0 < row_end ? lay_at(nr0, nk0) : pc.P);
          pc.pf_rows = pc.pf_rows / kDecodeRows;
          pc.pf_len *= kDecodeRows;
        }
        pc.pf_lines = (pc.pf_rows * ((pc.pf_len + 63) / 64) + pc.S - 1) / pc.S;
        if (nv == 2)
          gemm_chunk<A7, 2>(pc, xc, xrb, corr, part, mc, yc + r0, ldy);
        else
          gemm_chunk<A7, 1>(pc, xc, xrb, corr, part, mc, yc + r0, ldy);
      }
    }
  }
}

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
// second). 9 to 15 tokens: 4 tokens x 4 rows, the rows re-read from L1 by each 4 tokens. From
// kGemmMinTokens on (prefill): the GEMM above.
void w8a8_matmul_vnni(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes,
                      int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  if (m >= kGemmMinTokens) {
    int8_gemm_vnni<false>(w, row_bytes, k, x, x_row_bytes, m, y, ldy, row_begin, row_end);
    return;
  }
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

// w8a7: the GEMM from kGemmMinTokensA7 tokens on, the AVX2 kernels below that.
void w8a7_matmul_vnni(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes,
                      int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  if (m >= kGemmMinTokensA7) {
    int8_gemm_vnni<true>(w, row_bytes, k, x, x_row_bytes, m, y, ldy, row_begin, row_end);
    return;
  }
  static const decltype(FormatKernels::matmul) few = avx2_kernels(Spec{Kind::w8a7, 0, false}).matmul;
  few(w, row_bytes, k, x, x_row_bytes, m, y, ldy, row_begin, row_end);
}

// w8a8 (A7 = false) and w8a7 prefill from the decode layout (FormatKernels::matmul_tiles, where
// format_table() gives the row the layout): the whole 16-row blocks of the range read their
// panels in place (w8a7's weights stay signed there, its 16 row sums after the 16 scales at the
// head of each block), the rows before and after them repacked per call as the row's matmul does;
// fewer tokens than its GEMM takes: that matmul. The same products and sums, so the same bits.
template <bool A7>
void int8_matmul_layout(const uint8_t* dec, const uint8_t* w, size_t row_bytes, int64_t k, const void* x,
                        size_t x_row_bytes, int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  if (m < (A7 ? kGemmMinTokensA7 : kGemmMinTokens)) {
    (A7 ? w8a7_matmul_vnni : w8a8_matmul_vnni)(w, row_bytes, k, x, x_row_bytes, m, y, ldy, row_begin, row_end);
    return;
  }
  decode_spans(row_begin, row_end, [&](int64_t r0, int64_t r1, bool whole) {
    int8_gemm_vnni<A7>(w, row_bytes, k, x, x_row_bytes, m, y, ldy, r0, r1, whole ? dec : nullptr);
  });
}

// int8_g32_a8: the Q8_0 values biased to unsigned in the repack (XOR 0x80), so
// sum((w + 128) a) - 128 sum(a) = sum(w a), exact (|.| <= 32 x 255 x 127 per block).
struct Q8Panel {
  static constexpr int64_t G = kQ8Block, gb = kQ8BlockBytes;
  static constexpr int kShift = 7;
  static int64_t span(int64_t n) { return (n + G - 1) / G * gb; }
  // As repack16_q4: rows w[0 .. nr) (nr <= 16), columns [k0, k0 + kc) (k0, kc multiples of 32).
  static void repack16(const uint8_t* w, size_t row_bytes, int64_t nr, int64_t k0, int64_t kc, __m512i* P, int nv,
                       int v) {
    const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
    for (int64_t c = 0; c < kc; c += 64) {
      const bool two = c + 64 <= kc;
      const int64_t o = (k0 + c) / G * gb + 2;
      __m512i r[16];
#pragma GCC unroll 16
      for (int n = 0; n < 16; ++n) {
        if (n < nr) {
          const uint8_t* row = w + n * row_bytes + o;
          const __m256i lo = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row)), bias);
          const __m256i hi = two ? _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + gb)), bias)
                                 : _mm256_setzero_si256();
          r[n] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        } else {
          r[n] = _mm512_setzero_si512();
        }
      }
      store_vnni_columns(r, two ? 16 : 8, P + (c / 4) * nv + v, nv);
    }
  }
};

// The panel GEMM of fmt_group_gemm_512.inc on vpdpbusd (6-token tiles).
struct GroupDotVnni {
  static constexpr bool kVnni = true;
  template <int64_t G>
  static constexpr int tokens() { return 6; }
  __attribute__((always_inline)) static void dp(__m512i& acc, __m512i u, __m512i s) { dpbusd_asm(acc, u, s); }
};

template <typename B>
void group_gemm_vnni(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t xrb, int64_t m,
                     float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  group_gemm_512<B, GroupDotVnni>(w, row_bytes, k, x, xrb, m, y, ldy, row_begin, row_end);
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
  if (m >= kGemmMinTokensQ4) {
    group_gemm_vnni<Q4Panel<128>>(w, row_bytes, k, x, x_row_bytes, m, y, ldy, row_begin, row_end);
    return;
  }
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
struct A8ActBlock {  // d_a and 8 (int4) or 128 (int8) x block sum of token 4 q + s, group g at (q * nb + g) * 4 + s (0 if none)
  const float* da;
  const int32_t* cs;
};

// The few-token tiles' step after group g's products (int4a8s_vnni_tile, q8a8s_vnni_tile):
// v[4 q + s] holds token 4 q + s's int32 sums per lane, lane L for row L; the 4 rows' f16 scales
// are at rows[t] + h. Each 4 tokens' vectors reduce in lane (two unpack-and-add steps) to one
// vector whose lane 4 L + s is (row L, token s); the block sum term comes off and
// acc[q] = fma(d_w * d_a, float(sum), acc[q]).
template <int NQ>
inline void a8s_group_finish(const uint8_t* const* rows, int64_t h, const __m512i* v, A8ActBlock ab, int64_t nb,
                             int64_t g, __m512* acc) {
  const __m512i lane_row = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
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

// y[(4 q + s) * ldy + t] = lane 4 t + s of acc[q], for the nrv rows and MR tokens that exist.
template <int NQ, int MR>
inline void a8s_store(const __m512* acc, int nrv, float* y, int64_t ldy) {
  for (int q = 0; q < NQ; ++q) {
    alignas(64) float out[16];
    _mm512_store_ps(out, acc[q]);
    for (int t = 0; t < nrv; ++t)
      for (int s = 0; s < 4 && 4 * q + s < MR; ++s) y[(4 * q + s) * ldy + t] = out[4 * t + s];
  }
}

template <int G, int MR, bool Prefetch>
inline void int4a8s_vnni_tile(const uint8_t* const* rows, int nrv, const uint8_t* next, const uint8_t* x,
                              size_t xrb, A8ActBlock ab, int64_t k, float* y, int64_t ldy) {
  static_assert(G == 32 || G == 64, "one or two sub-blocks per group");
  static_assert(MR >= 1 && MR <= 8, "one lane per (row, token) of 4 x 4, one or two vectors");
  constexpr int NQ = (MR + 3) / 4;  // output vectors: tokens 4q .. 4q + 3
  constexpr int64_t gb = 2 + G / 2;
  const int64_t nb = actb_blocks(k, G), hdr = actb_header(k, G);
  const __m512i low4 = _mm512_set1_epi8(0x0f);
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
    a8s_group_finish<NQ>(rows, g * gb, v, ab, nb, g, acc);
  }
  a8s_store<NQ, MR>(acc, nrv, y, ldy);
}

// Tokens in blocks of 16 (their activation rows stay in L1/L2 while the weight rows pass), rows
// 4 at a time, each group of 4 rows against the block's tokens 8 at a time: the first tile reads
// the rows from memory and prefetches 8 rows ahead, the others find them in L1. One token alone
// takes F::one; from F::kGemmMin tokens on the panel GEMM (group_gemm_vnni<F::Panel>). F is the
// format's few-token set: F::G values per group, F::tile<MR, Prefetch> (as int4a8s_vnni_tile),
// and the groups' int32 sums start at -(sum(a) << F::Panel::kShift).
template <typename F>
void a8_few_matmul_vnni(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes,
                        int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  constexpr int G = F::G;
  if (m == 1) {
    F::one(w, row_bytes, k, x, x_row_bytes, m, y, ldy, row_begin, row_end);
    return;
  }
  if (m >= F::kGemmMin) {
    group_gemm_vnni<typename F::Panel>(w, row_bytes, k, x, x_row_bytes, m, y, ldy, row_begin, row_end);
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
          cs[at] = i < mc ? static_cast<int32_t>(load_u32(xc + i * x_row_bytes + 4 * nb + 4 * g)) * (1 << F::Panel::kShift)
                          : 0;
        }
    for (int64_t r = row_begin; r < row_end; r += 4) {
      const int nrv = row_end - r < 4 ? static_cast<int>(row_end - r) : 4;
      const uint8_t* rows[4];
      for (int t = 0; t < 4; ++t) rows[t] = w + (r + (t < nrv ? t : nrv - 1)) * row_bytes;
      const uint8_t* next = rows[0] + 8 * row_bytes;
      for (int64_t q = 0; q < nq; q += 2) {
        const A8ActBlock ab{da.data() + q * nb * 4, cs.data() + q * nb * 4};
        const uint8_t* xq = xc + 4 * q * x_row_bytes;
        float* yq = yc + 4 * q * ldy + r;
        const bool pf = q == 0 && nrv == 4;
        auto tile = [&](auto mr) {
          constexpr int R = decltype(mr)::value;
          pf ? F::template tile<R, true>(rows, nrv, next, xq, x_row_bytes, ab, k, yq, ldy)
             : F::template tile<R, false>(rows, nrv, next, xq, x_row_bytes, ab, k, yq, ldy);
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

template <int G_>
struct Int4a8Few {
  static constexpr int G = G_;
  static constexpr int64_t kGemmMin = kGemmMinTokensQ4;
  using Panel = Q4Panel<G_>;
  template <int MR, bool Prefetch>
  static void tile(const uint8_t* const* rows, int nrv, const uint8_t* next, const uint8_t* x, size_t xrb,
                   A8ActBlock ab, int64_t k, float* y, int64_t ldy) {
    int4a8s_vnni_tile<G_, MR, Prefetch>(rows, nrv, next, x, xrb, ab, k, y, ldy);
  }
  static void one(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes, int64_t m,
                  float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
    static const decltype(FormatKernels::matmul) avx2 = avx2_kernels(Spec{Kind::int4_a8, G_, false}).matmul;
    avx2(w, row_bytes, k, x, x_row_bytes, m, y, ldy, row_begin, row_end);
  }
};

// ---- int8_g32_a8: Q8_0 weights x int8 activations per block of 32 ----------------------------
// One token (the matvec, and a matmul of one token) takes the 16-row kernel of fmt_q8a8_512.inc
// with the weights biased to unsigned per load (w + 128, an XOR): per block one vpdpbusd per
// (token, two rows) from 0, and the bias comes off with the token's block sum: sum((w + 128) a) -
// 128 sum(a) = sum(w a), exact. 2 .. kGemmMinTokensQ8 - 1 tokens take q8a8s_vnni_tile below (the
// rows of 4 in lanes, so no 16-way reduction per token and block), and from kGemmMinTokensQ8 tokens
// on (prefill) the panel GEMM above (Q8Panel).
struct Q8DotVnni {
  static constexpr int kBiasShift = 7;
  using Wt = __m512i;
  static inline Wt prep(__m512i w) { return _mm512_xor_si512(w, _mm512_set1_epi8(static_cast<char>(0x80))); }
  static inline __m512i dot(Wt w, __m512i a) { return _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, a); }
};

#include "engines/kernels/fmt_q8a8_512.inc"
#include "engines/kernels/fmt_actb_512.inc"
#include "engines/kernels/fmt_decode_512.inc"

constexpr int64_t kGemmMinTokensQ8 = 16;

// int4a8s_vnni_tile's layout with Q8_0 blocks: a vector holds one half (16 bytes) of the block of
// 4 adjacent rows, one row per 128-bit lane, biased to unsigned (XOR 0x80), and meets each token's
// 16 activations of that half broadcast to every lane: two vpdpbusd per (token, block). The 4
// tokens' vectors reduce in lane (two unpack-and-add steps) to one vector of exact biased sums
// whose lane 4 L + s is (row L, token s); 128 x the token's block sum comes off and each lane does
// acc = fma(d_w * d_a, float(sum), acc) in block order: the generic twin's expression, so
// bit-identical. Fewer than 4 rows repeat the last one and do not store it.
template <int MR, bool Prefetch>
inline void q8a8s_vnni_tile(const uint8_t* const* rows, int nrv, const uint8_t* next, const uint8_t* x, size_t xrb,
                            A8ActBlock ab, int64_t k, float* y, int64_t ldy) {
  static_assert(MR >= 1 && MR <= 8, "one lane per (row, token) of 4 x 4, one or two vectors");
  constexpr int NQ = (MR + 3) / 4;  // output vectors: tokens 4q .. 4q + 3
  const int64_t nb = actb_blocks(k, kQ8Block), hdr = actb_header(k, kQ8Block);
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512 acc[NQ];
#pragma GCC unroll 2
  for (int q = 0; q < NQ; ++q) acc[q] = _mm512_setzero_ps();
  auto load4 = [&](int64_t o) __attribute__((always_inline)) {  // bytes [o, o + 16) of the 4 rows
    __m512i b = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[0] + o)));
    b = _mm512_inserti32x4(b, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[1] + o)), 1);
    b = _mm512_inserti32x4(b, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2] + o)), 2);
    b = _mm512_inserti32x4(b, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[3] + o)), 3);
    return _mm512_xor_si512(b, bias);
  };
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t o = b * kQ8BlockBytes;
    if constexpr (Prefetch) prefetch_span(next + 4 * o, 4 * kQ8BlockBytes);
    const __m512i wlo = load4(o + 2), whi = load4(o + 18);
    __m512i v[4 * NQ];
#pragma GCC unroll 8
    for (int i = 0; i < 4 * NQ; ++i) {
      if (i < MR) {
        const uint8_t* ai = x + i * xrb + hdr + kQ8Block * b;
        const __m512i alo = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ai)));
        const __m512i ahi = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ai + 16)));
        v[i] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), wlo, alo), whi, ahi);
      } else {
        v[i] = _mm512_setzero_si512();
      }
    }
    a8s_group_finish<NQ>(rows, o, v, ab, nb, b, acc);
  }
  a8s_store<NQ, MR>(acc, nrv, y, ldy);
}

struct Q8a8Few {
  static constexpr int G = kQ8Block;
  static constexpr int64_t kGemmMin = kGemmMinTokensQ8;
  using Panel = Q8Panel;
  template <int MR, bool Prefetch>
  static void tile(const uint8_t* const* rows, int nrv, const uint8_t* next, const uint8_t* x, size_t xrb,
                   A8ActBlock ab, int64_t k, float* y, int64_t ldy) {
    q8a8s_vnni_tile<MR, Prefetch>(rows, nrv, next, x, xrb, ab, k, y, ldy);
  }
  static void one(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes, int64_t m,
                  float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
    q8a8_matmul_512<Q8DotVnni>(w, row_bytes, k, x, x_row_bytes, m, y, ldy, row_begin, row_end);
  }
};

// ---- bf16 weights x bf16 activations: vdpbf16ps ------------------------------------------------
// The activations arrive rounded to bf16 (actbf16 rows: bf16_act_variant, converted once per call
// by the runner with bf16_convert below). vdpbf16ps multiplies 32 bf16 pairs into 16 f32 lanes,
// each lane adding its two exact products to its accumulator: the generic twin's arithmetic
// (dot_bf16_bf16) in another order of the f32 sums.
// The weights are loaded with masks at the end of a row (no padding; masked loads do not fault);
// the activation rows are zero padded to 32 values.

inline __m512bh as_bh(__m512i v) { return (__m512bh)v; }

// f32_to_bf16 on 16 lanes, bit for bit (round to nearest even on the integer bits, NaN quieted;
// vcvtne2ps2bf16 would flush subnormals to zero, which the reference does not).
inline __m256i bf16_from_f32x16(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  const __m512i q = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x400000));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(q, 16));
}

void bf16_convert(const float* x, int64_t k, void* dst) {
  uint8_t* d = static_cast<uint8_t*>(dst);
  const int64_t kp = round_up(k, 32);
  for (int64_t i = 0; i < kp; i += 16) {
    const __mmask16 mk = i + 16 <= k ? static_cast<__mmask16>(0xffff)
                                     : static_cast<__mmask16>(i < k ? (1u << (k - i)) - 1u : 0u);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + 2 * i), bf16_from_f32x16(_mm512_maskz_loadu_ps(mk, x + i)));
  }
}

inline __mmask32 bf16_mask(int64_t c, int64_t k) {
  return c + 32 <= k ? ~__mmask32{0} : static_cast<__mmask32>((1u << (k - c)) - 1u);
}

// matvec: NR rows share every activation load; the rows of a tile are a quarter of the range
// apart (r, r + q, r + 2q, r + 3q), so each of the four load streams walks contiguous memory for a
// quarter of the matrix and the hardware prefetcher follows it without software prefetches
// (four adjacent rows are four short streams that it has to pick up again every tile: TinyStories-
// 110M bf16 decode, 1 thread, Zen 4: 56 tok/s adjacent, 118 with the quarter streams; without
// software prefetches either way: with the adjacent rows they slowed Zen 5, 12.2-13.5 tok/s without
// against 9.2-11.0 with, TinyLlama-1.1B).
template <int NR>
inline void bf16dp_rows(const uint8_t* const* rows, int64_t k, const uint8_t* x, float* y, int64_t ys) {
  __m512 acc[NR][2];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  int64_t c = 0;
  for (; c + 64 <= k; c += 64) {
    const __m512bh x0 = as_bh(_mm512_loadu_si512(x + 2 * c)), x1 = as_bh(_mm512_loadu_si512(x + 2 * c + 64));
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], as_bh(_mm512_loadu_si512(rows[r] + 2 * c)), x0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], as_bh(_mm512_loadu_si512(rows[r] + 2 * c + 64)), x1);
    }
  }
  for (; c < k; c += 32) {
    const __mmask32 mk = bf16_mask(c, k);
    const __m512bh xv = as_bh(_mm512_loadu_si512(x + 2 * c));
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r)
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], as_bh(_mm512_maskz_loadu_epi16(mk, rows[r] + 2 * c)), xv);
  }
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) y[r * ys] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]));
}

void bf16dp_matvec(const uint8_t* w, size_t row_bytes, int64_t k, const void* xv, float* y,
                   int64_t row_begin, int64_t row_end) {
  const uint8_t* x = static_cast<const uint8_t*>(xv);
  const int64_t q = (row_end - row_begin) / 4;
  const size_t qb = static_cast<size_t>(q) * row_bytes;
  for (int64_t t = 0; t < q; ++t) {
    const uint8_t* r0 = w + (row_begin + t) * row_bytes;
    const uint8_t* rows[4] = {r0, r0 + qb, r0 + 2 * qb, r0 + 3 * qb};
    bf16dp_rows<4>(rows, k, x, y + t, q);
  }
  for (int64_t r = row_begin + 4 * q; r < row_end; ++r) {
    const uint8_t* rows[1] = {w + r * row_bytes};
    bf16dp_rows<1>(rows, k, x, y + (r - row_begin), 1);
  }
}

// matmul (prefill): tiles of MR tokens x NR weight rows, MR x NR 512-bit accumulators (4 x 4: 16
// of the 32 registers, enough independent chains to cover the latency of two vdpbf16ps a cycle),
// each 32-column step loading NR weight vectors and MR activation vectors. K is cut in chunks
// whose activations (m tokens x kc bf16) stay in L2 while every group of NR rows passes over
// them; a group's rows stay in L1 across its token tiles, and the first tile of a group
// prefetches the next group's chunk at the pace it reads its own. Partial sums over chunks
// accumulate in Y.
constexpr int kBfMr = 4, kBfNr = 4;
constexpr int64_t kBfActChunkBytes = 512 * 1024;  // m x kc bf16 activations per chunk

// out[q] = the sum of the 16 lanes of a[q], q < 16 (a transposing tree: 15 adds, 30 shuffles).
inline __m512 reduce16(const __m512* a) {
  __m512 b[8], c[4];
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j)
    b[j] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * j], a[2 * j + 1]), _mm512_unpackhi_ps(a[2 * j], a[2 * j + 1]));
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m512d lo = _mm512_unpacklo_pd(_mm512_castps_pd(b[2 * j]), _mm512_castps_pd(b[2 * j + 1]));
    const __m512d hi = _mm512_unpackhi_pd(_mm512_castps_pd(b[2 * j]), _mm512_castps_pd(b[2 * j + 1]));
    c[j] = _mm512_add_ps(_mm512_castpd_ps(lo), _mm512_castpd_ps(hi));
  }
  // c[j], 128-bit lane L, element p: lane L's part of the sum of a[4 j + p]
  const __m512 d0 = _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm512_shuffle_f32x4(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 d1 = _mm512_add_ps(_mm512_shuffle_f32x4(c[2], c[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm512_shuffle_f32x4(c[2], c[3], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(d0, d1, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(d0, d1, _MM_SHUFFLE(3, 1, 3, 1)));
}

template <int MR, int NR, bool Masked>
inline void bf16dp_step(__m512 (&acc)[MR][NR], const uint8_t* const* rows, const uint8_t* x,
                        size_t xrb, int64_t c, __mmask32 mk) {
  __m512bh wv[NR];
#pragma GCC unroll 4
  for (int t = 0; t < NR; ++t)
    wv[t] = as_bh(Masked ? _mm512_maskz_loadu_epi16(mk, rows[t] + 2 * c) : _mm512_loadu_si512(rows[t] + 2 * c));
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
    const __m512bh a = as_bh(_mm512_loadu_si512(x + i * xrb + 2 * c));
#pragma GCC unroll 4
    for (int t = 0; t < NR; ++t) acc[i][t] = _mm512_dpbf16_ps(acc[i][t], wv[t], a);
  }
}

// Y[i, t] (+)= dot over columns [c0, c1) of token i < MR and row t < NR.
template <int MR, int NR, bool Prefetch>
inline void bf16dp_tile(const uint8_t* const* rows, const uint8_t* next, size_t row_bytes, int64_t c0,
                        int64_t c1, int64_t k, const uint8_t* x, size_t xrb, float* y, int64_t ldy,
                        bool accumulate) {
  __m512 acc[MR][NR];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int t = 0; t < NR; ++t) acc[i][t] = _mm512_setzero_ps();
  const int64_t full = c1 < k ? c1 : c0 + (k - c0) / 32 * 32;  // unmasked steps end here
  int64_t c = c0;
  for (; c < full; c += 32) {
    if constexpr (Prefetch)
      for (int t = 0; t < NR; ++t) prefetch_span(next + t * row_bytes + 2 * c, 64);
    bf16dp_step<MR, NR, false>(acc, rows, x, xrb, c, 0);
  }
  if (c < c1) bf16dp_step<MR, NR, true>(acc, rows, x, xrb, c, bf16_mask(c, k));
  if constexpr (MR == 4 && NR == 4) {
    // lanes 4i .. 4i + 3 hold token i's four rows (through memory: the lane index of
    // _mm512_extractf32x4_ps must be an immediate, which an unoptimised build does not see)
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, reduce16(&acc[0][0]));
    for (int i = 0; i < MR; ++i) {
      __m128 v = _mm_load_ps(lanes + 4 * i);
      float* out = y + i * ldy;
      if (accumulate) v = _mm_add_ps(_mm_loadu_ps(out), v);
      _mm_storeu_ps(out, v);
    }
  } else {
    for (int i = 0; i < MR; ++i)
      for (int t = 0; t < NR; ++t) {
        const float v = _mm512_reduce_add_ps(acc[i][t]);
        float& out = y[i * ldy + t];
        out = accumulate ? out + v : v;
      }
  }
}

template <int NR>
inline void bf16dp_group(const uint8_t* const* rows, const uint8_t* next, size_t row_bytes, int64_t c0,
                         int64_t c1, int64_t k, const uint8_t* x, size_t xrb, int64_t m, float* y,
                         int64_t ldy, bool accumulate) {
  int64_t i = 0;
  for (; i + kBfMr <= m; i += kBfMr) {
    const uint8_t* xi = x + i * xrb;
    float* yi = y + i * ldy;
    if (i == 0)
      bf16dp_tile<kBfMr, NR, true>(rows, next, row_bytes, c0, c1, k, xi, xrb, yi, ldy, accumulate);
    else
      bf16dp_tile<kBfMr, NR, false>(rows, next, row_bytes, c0, c1, k, xi, xrb, yi, ldy, accumulate);
  }
  const uint8_t* xi = x + i * xrb;
  float* yi = y + i * ldy;
  switch (m - i) {
    case 3: bf16dp_tile<3, NR, false>(rows, next, row_bytes, c0, c1, k, xi, xrb, yi, ldy, accumulate); break;
    case 2: bf16dp_tile<2, NR, false>(rows, next, row_bytes, c0, c1, k, xi, xrb, yi, ldy, accumulate); break;
    case 1: bf16dp_tile<1, NR, false>(rows, next, row_bytes, c0, c1, k, xi, xrb, yi, ldy, accumulate); break;
    default: break;
  }
}

void bf16dp_matmul(const uint8_t* w, size_t row_bytes, int64_t k, const void* xv, size_t x_row_bytes,
                   int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  const uint8_t* x = static_cast<const uint8_t*>(xv);
  int64_t kc = kBfActChunkBytes / (2 * m) / 32 * 32;
  if (kc < 256) kc = 256;
  for (int64_t c0 = 0; c0 < k; c0 += kc) {
    const int64_t c1 = k - c0 < kc ? k : c0 + kc;
    const bool accumulate = c0 > 0;
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kBfNr) {
      const int nr = static_cast<int>(row_end - r0 < kBfNr ? row_end - r0 : kBfNr);
      const uint8_t* rows[kBfNr];
      for (int t = 0; t < kBfNr; ++t) rows[t] = w + (r0 + (t < nr ? t : nr - 1)) * row_bytes;
      const uint8_t* next = w + (r0 + kBfNr) * row_bytes;
      float* yr = y + r0;
      switch (nr) {
        case 4: bf16dp_group<4>(rows, next, row_bytes, c0, c1, k, x, x_row_bytes, m, yr, ldy, accumulate); break;
        case 3: bf16dp_group<3>(rows, next, row_bytes, c0, c1, k, x, x_row_bytes, m, yr, ldy, accumulate); break;
        case 2: bf16dp_group<2>(rows, next, row_bytes, c0, c1, k, x, x_row_bytes, m, yr, ldy, accumulate); break;
        default: bf16dp_group<1>(rows, next, row_bytes, c0, c1, k, x, x_row_bytes, m, yr, ldy, accumulate); break;
      }
    }
  }
}

// ---- bf16 GEMM with the tokens along the lanes (many tokens) ---------------------------------
// The f32 GEMM's form (simd_kernels.inc, matmul_xt_t) on vdpbf16ps: X is transposed once per call
// into blocks of up to MV = 4 vectors of 16 tokens whose 32-bit elements are bf16 column pairs
// (xp[p * B + t] = columns 2p, 2p + 1 of token t, B = 16 x the block's vectors, zero past m); a
// register tile of NR weight rows x MV token vectors then takes, per pair p, MV loads of X^T and NR
// broadcasts of a weight row's pair p into MV x NR independent chains (4 x 6 = 24; a block of
// fewer tokens: 3 x 8, 2 x 12, 1 x 16). No horizontal sums (the 4 x 4 tiles above end every K
// chunk with a 16-vector reduction tree) and no packing of W. The 4 x 6 tile needs a broadcast per
// 4 vdpbf16ps where 2 x 12 needed one per 2: matmul128/bf16 on one Zen 4 core (cibench-microbench,
// two alternating rounds) 179-206 GOPs with the 4 x 4 dot-product tiles, 180-204 with 2 x 12, and
// 188-221 with 4 x 6, of the 235 GOPs vdpbf16ps peak (6 x 4, L2 panels of 64-128 KB, and the
// broadcast embedded in each vdpbf16ps were no better). On AMD Zen 5 (full-width AVX-512) the
// other way round: blocks of 32 tokens in 2 x 12 tiles (bf16_matmul_t<2>, given to the row there by
// formats.cpp) ran matmul128 at 442-473 GOPs against 389-469 with 4 x 6 (3 x 8: 433-471), of the
// 516 GOPs peak (AMD EPYC VM, family 0x1A, one thread, two alternating rounds, the five 110M /
// 1.1B shapes). Each output is one chain over the pairs of
// a K chunk in order, the chunks added in order, whatever the other tokens of the call. K is cut in
// chunks of kBxKc columns (a block of X^T stays in L2), W in panels of ~256 KB that stay in L2
// while every block of tokens passes. Even K only (a weight row's last pair is read whole; rows
// are not padded); the per-thread buffers grow to the largest call.
constexpr int kBxMv = 4;  // token vectors per block (at most)
// weight rows per register tile for MV token vectors: MV x NR accumulators, MV + 1 more registers
constexpr int kBxNrOf(int mv) { return mv == 1 ? 16 : (mv == 2 ? 12 : (mv == 3 ? 8 : 6)); }
constexpr int64_t kBxMinRows = 24, kBxKc = 2048, kBxPanelBytes = 256 * 1024;

template <int MV, int NR>
inline void bx_tile(const float* xp, const uint8_t* w, size_t row_bytes, int64_t pairs, float* out) {
  constexpr int64_t NB = 16 * MV;
  __m512 c[NR][MV];
#pragma GCC unroll 16
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) c[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; ++p) {
    __m512bh a[MV];
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) a[v] = as_bh(_mm512_castps_si512(_mm512_loadu_ps(xp + p * NB + 16 * v)));
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) {
      const __m512bh b = as_bh(_mm512_set1_epi32(static_cast<int>(load_u32(w + r * row_bytes + 4 * p))));
#pragma GCC unroll 4
      for (int v = 0; v < MV; ++v) c[r][v] = _mm512_dpbf16_ps(c[r][v], a[v], b);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) _mm512_storeu_ps(out + r * NB + 16 * v, c[r][v]);
}

// Rows [0, nr) of w against one block of tokens; out is nr x (16 MV).
template <int MV>
inline void bx_rows(const float* xp, const uint8_t* w, size_t row_bytes, int64_t pairs, int64_t nr, float* out) {
  constexpr int64_t NB = 16 * MV;
  constexpr int NR = kBxNrOf(MV);
  static_assert(NR <= 16, "the tails below");
  int64_t r = 0;
  for (; r + NR <= nr; r += NR) bx_tile<MV, NR>(xp, w + r * row_bytes, row_bytes, pairs, out + r * NB);
  const uint8_t* wr = w + r * row_bytes;
  float* o = out + r * NB;
  switch (nr - r) {  // the last 1 .. NR - 1 rows
    case 15: if constexpr (NR > 15) bx_tile<MV, 15>(xp, wr, row_bytes, pairs, o); break;
    case 14: if constexpr (NR > 14) bx_tile<MV, 14>(xp, wr, row_bytes, pairs, o); break;
    case 13: if constexpr (NR > 13) bx_tile<MV, 13>(xp, wr, row_bytes, pairs, o); break;
    case 12: if constexpr (NR > 12) bx_tile<MV, 12>(xp, wr, row_bytes, pairs, o); break;
    case 11: if constexpr (NR > 11) bx_tile<MV, 11>(xp, wr, row_bytes, pairs, o); break;
    case 10: if constexpr (NR > 10) bx_tile<MV, 10>(xp, wr, row_bytes, pairs, o); break;
    case 9: if constexpr (NR > 9) bx_tile<MV, 9>(xp, wr, row_bytes, pairs, o); break;
    case 8: if constexpr (NR > 8) bx_tile<MV, 8>(xp, wr, row_bytes, pairs, o); break;
    case 7: if constexpr (NR > 7) bx_tile<MV, 7>(xp, wr, row_bytes, pairs, o); break;
    case 6: if constexpr (NR > 6) bx_tile<MV, 6>(xp, wr, row_bytes, pairs, o); break;
    case 5: if constexpr (NR > 5) bx_tile<MV, 5>(xp, wr, row_bytes, pairs, o); break;
    case 4: if constexpr (NR > 4) bx_tile<MV, 4>(xp, wr, row_bytes, pairs, o); break;
    case 3: if constexpr (NR > 3) bx_tile<MV, 3>(xp, wr, row_bytes, pairs, o); break;
    case 2: if constexpr (NR > 2) bx_tile<MV, 2>(xp, wr, row_bytes, pairs, o); break;
    case 1: bx_tile<MV, 1>(xp, wr, row_bytes, pairs, o); break;
    default: break;
  }
}

// MVmax: token vectors per block (a block of 16 x MVmax tokens; its tiles MVmax x kBxNrOf(MVmax)).
template <int MVmax>
void bf16xt_matmul(const uint8_t* w, size_t row_bytes, int64_t k, const uint8_t* x, size_t xrb, int64_t m,
                   float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  static_assert(MVmax >= 1 && MVmax <= kBxMv, "the block widths bx_rows has");
  constexpr int64_t NB = 16 * MVmax;
  const int64_t n = row_end - row_begin;
  w += row_begin * static_cast<int64_t>(row_bytes);
  y += row_begin;
  const int64_t kc_max = k < kBxKc ? k : kBxKc;  // even: k is
  const int64_t blocks = (m + NB - 1) / NB;
  thread_local std::vector<float> xbuf, obuf;  // X^T pairs (32-bit elements), the tile outputs
  if (static_cast<int64_t>(xbuf.size()) < blocks * NB * (kc_max / 2)) xbuf.resize(blocks * NB * (kc_max / 2));
  int64_t panel = kBxPanelBytes / (2 * kc_max) / 48 * 48;  // whole tiles of 6, 8, 12 and 16 rows
  panel = panel < 48 ? 48 : panel;
  if (static_cast<int64_t>(obuf.size()) < panel * NB) obuf.resize(panel * NB);
  const float* xf = reinterpret_cast<const float*>(x);  // moved as 32-bit patterns, never as numbers
  const int64_t ldx = static_cast<int64_t>(xrb / 4);
  for (int64_t c0 = 0; c0 < k; c0 += kc_max) {
    const int64_t pairs = (k - c0 < kc_max ? k - c0 : kc_max) / 2;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t mt = m - b * NB < NB ? m - b * NB : NB, nb = (mt + 15) / 16 * 16;
      float* xp = xbuf.data() + b * NB * pairs;
      pack_lanes(xf + b * NB * ldx + c0 / 2, ldx, mt, pairs, xp, nb);
    }
    for (int64_t j0 = 0; j0 < n; j0 += panel) {
      const int64_t nr = n - j0 < panel ? n - j0 : panel;
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t mt = m - b * NB < NB ? m - b * NB : NB, nb = (mt + 15) / 16 * 16;
        const float* xp = xbuf.data() + b * NB * pairs;
        const uint8_t* wp = w + j0 * static_cast<int64_t>(row_bytes) + 2 * c0;
        switch (nb / 16) {
          case 1: bx_rows<1>(xp, wp, row_bytes, pairs, nr, obuf.data()); break;
          case 2: if constexpr (MVmax >= 2) bx_rows<2>(xp, wp, row_bytes, pairs, nr, obuf.data()); break;
          case 3: if constexpr (MVmax >= 3) bx_rows<3>(xp, wp, row_bytes, pairs, nr, obuf.data()); break;
          default: if constexpr (MVmax >= 4) bx_rows<4>(xp, wp, row_bytes, pairs, nr, obuf.data()); break;
        }
        float* yb = y + b * NB * ldy + j0;  // Y[t][r] (+)= out[r][t]
        if (c0 == 0)
          transpose_block<false>(obuf.data(), nb, nr, mt, yb, ldy);
        else
          transpose_block<true>(obuf.data(), nb, nr, mt, yb, ldy);
      }
    }
  }
}

// Many tokens and rows: the lane-transposed GEMM; else the 4 x 4 dot-product tiles. Below 48 tokens
// the lane form computes zero-padded token lanes and needs more broadcasts per vdpbf16ps (tiles of
// 16 x 1, 12 x 2, 8 x 3): TinyStories-110M prefill, 1 thread, Zen 4, two alternating rounds, tok/s
// dot-product tiles / lane form: 16 tokens 581-594 / 563-590, 24: 710 / 662-672, 40: 851-852 /
// 822-826, 48: 877-887 / 981, 64: 932-936 / 991-993, 128: 979-981 / 1010-1026.
constexpr int64_t kBxMinTokens = 48;
template <int MVmax>
void bf16_matmul_t(const uint8_t* w, size_t row_bytes, int64_t k, const void* xv, size_t x_row_bytes, int64_t m,
                   float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  if (m >= kBxMinTokens && row_end - row_begin >= kBxMinRows && k % 2 == 0)
    bf16xt_matmul<MVmax>(w, row_bytes, k, static_cast<const uint8_t*>(xv), x_row_bytes, m, y, ldy, row_begin, row_end);
  else
    bf16dp_matmul(w, row_bytes, k, xv, x_row_bytes, m, y, ldy, row_begin, row_end);
}

void bf16_matmul(const uint8_t* w, size_t row_bytes, int64_t k, const void* xv, size_t x_row_bytes, int64_t m,
                 float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  bf16_matmul_t<kBxMv>(w, row_bytes, k, xv, x_row_bytes, m, y, ldy, row_begin, row_end);
}

// ---- bf16 x bf16 on f32 FMAs (Intel) ----------------------------------------------------------
// The same arithmetic as vdpbf16ps (bf16 weights times the bf16 activation rows, each product
// exact in f32, f32 sums) on the f32 FMA units: on Intel's cores vdpbf16ps runs at half their
// rate (`cibench-microbench --benchmark_filter=peak` on the Xeon with AMX: 57.7 G multiply-adds/s
// against 113 G with FMAs, per thread), on AMD's Zen 4 and Zen 5 at twice it. The activation rows
// are widened to f32 exactly (a bf16 is the upper half of its f32) a chunk of tokens at a time
// into a per-thread buffer, then the lane form of the bf16 row's own AVX-512 prefill below
// avx512_vnni takes them (matmul_dense_lanes, fmt_dense.inc: the weights widened a panel at a
// time, the f32 GEMM with the tokens along the lanes), every chunk, so that each output is one
// chain whatever the other tokens (FormatTwin.Bf16ManyTokens). format_table() gives it to the bf16 row at avx512_vnni on Intel CPUs
// (formats.cpp) for calls of a vector of tokens and two tiles of rows; others keep bf16_matmul.
void bf16_fma_matmul(const uint8_t* w, size_t row_bytes, int64_t k, const void* xv, size_t x_row_bytes, int64_t m,
                     float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  if (m < VecAvx512::kWidth || row_end - row_begin < 2 * XtGeom<VecAvx512>::kNr) {
    bf16_matmul(w, row_bytes, k, xv, x_row_bytes, m, y, ldy, row_begin, row_end);
    return;
  }
  const uint8_t* x = static_cast<const uint8_t*>(xv);
  // tokens per chunk: about 2 MB of widened activations, whole blocks of 32 tokens
  int64_t chunk = (int64_t{2} << 20) / (4 * k) / 32 * 32;
  chunk = chunk < 32 ? 32 : chunk;
  thread_local std::vector<float> xf;
  const int64_t mt_max = m < chunk ? m : chunk;
  if (static_cast<int64_t>(xf.size()) < mt_max * k) xf.resize(static_cast<size_t>(mt_max * k));
  for (int64_t t0 = 0; t0 < m; t0 += chunk) {
    const int64_t mt = m - t0 < chunk ? m - t0 : chunk;
    for (int64_t i = 0; i < mt; ++i)
      decode_bf16<VecAvx512>(x + (t0 + i) * static_cast<int64_t>(x_row_bytes), k, 0, k, xf.data() + i * k);
    matmul_dense_lanes<VecAvx512, decode_bf16<VecAvx512>>(w, row_bytes, k, xf.data(),
                                                          static_cast<size_t>(k) * sizeof(float), mt, y + t0 * ldy, ldy,
                                                          row_begin, row_end);
  }
}

void add_decode_layout(const Spec& s, FormatKernels& f) {
  auto set = [&f](auto bytes, auto pack, auto matvec) {
    f.decode_bytes = bytes;
    f.decode_pack = pack;
    f.matvec_decode = matvec;
  };
  if (s.kind == Kind::q8_a8)
    set(decode_bytes_512<Kind::q8_a8, 32>, decode_pack_512<Kind::q8_a8, 32>, decode_matvec_512<Kind::q8_a8, 32>);
  else if (s.kind == Kind::w8a8)
    set(decode_bytes_512<Kind::w8a8, 32>, decode_pack_512<Kind::w8a8, 32>, decode_matvec_512<Kind::w8a8, 32>);
  else if (s.kind == Kind::w8a7)
    set(decode_bytes_512<Kind::w8a7, 32>, decode_pack_512<Kind::w8a7, 32>, decode_matvec_512<Kind::w8a7, 32>);
  else if (s.kind == Kind::int4_a8 && s.group == 32)
    set(decode_bytes_512<Kind::int4_a8, 32>, decode_pack_512<Kind::int4_a8, 32>, decode_matvec_512<Kind::int4_a8, 32>);
  else if (s.kind == Kind::int4_a8 && s.group == 64)
    set(decode_bytes_512<Kind::int4_a8, 64>, decode_pack_512<Kind::int4_a8, 64>, decode_matvec_512<Kind::int4_a8, 64>);
  else if (s.kind == Kind::int4_a8 && s.group == 128)
    set(decode_bytes_512<Kind::int4_a8, 128>, decode_pack_512<Kind::int4_a8, 128>,
        decode_matvec_512<Kind::int4_a8, 128>);
}

FormatKernels level_kernels(const Spec& s) {
  if (s.kind == Kind::bf16) {
    FormatKernels f{bf16dp_matvec, bf16_matmul, bf16_convert};
    f.act_variant = &bf16_act_variant();
    return f;
  }
  if (s.kind == Kind::w8a8) return FormatKernels{w8a8_matvec_512<Dot64Vnni>, w8a8_matmul_vnni, act8_quantize_512};
  if (s.kind == Kind::w8a7) {
    FormatKernels f = avx2_kernels(s);  // the AVX2 matvec; the matmul below, the quantiser at 512 bits
    f.matmul = w8a7_matmul_vnni;
    f.quantize = act7_quantize_512;
    return f;
  }
  if (s.kind == Kind::q8_a8)
    return FormatKernels{q8a8_matvec_512<Q8DotVnni>, a8_few_matmul_vnni<Q8a8Few>, actb_quantize_512<kQ8Block>};
  if (s.kind == Kind::int4_a8) {
    FormatKernels f = avx2_kernels(s);  // the matvec, matmuls and quantiser here
    f.quantize = s.group == 128 ? actb_quantize_512<128> : (s.group == 64 ? actb_quantize_512<64> : actb_quantize_512<32>);
    f.matvec = s.group == 128 ? int4a8_matvec_512<128> : (s.group == 64 ? int4a8_matvec_512<64> : int4a8_matvec_512<32>);
    f.matmul = s.group == 128 ? int4g128a8_matmul_vnni
                              : (s.group == 64 ? a8_few_matmul_vnni<Int4a8Few<64>> : a8_few_matmul_vnni<Int4a8Few<32>>);
    return f;
  }
  return {};
}

}  // namespace
}  // namespace fmt

namespace isa_entry {
constinit const fmt::FormatEntries fmt_avx512vnni{.kernels = fmt::level_kernels,
                                                  .add_decode_layout = fmt::add_decode_layout,
                                                  .int4g32a8_streams_matvec = fmt::int4a8_matvec_512<32, true>,
                                                  .bf16_fma_matmul = fmt::bf16_fma_matmul,
                                                  .bf16_matmul_32_token_blocks = fmt::bf16_matmul_t<2>,
                                                  .w8a8_matmul_layout = fmt::int8_matmul_layout<false>,
                                                  .w8a7_matmul_layout = fmt::int8_matmul_layout<true>};
}  // namespace isa_entry

}  // namespace cibench
CIBENCH_TARGET_END
