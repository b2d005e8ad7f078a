// AVX-512 (F/BW/VL/DQ) kernels of the packed formats, in the AVX-512 target region (isa_target.h):
// internal linkage all, reached through isa_entry::fmt_avx512 only.
//   dense f32-activation formats (bf16, int8, int4): fmt_dense.inc over VecAvx512
//   w8a8: the AVX2 sign trick at 512 bits (_mm512_maddubs_epi16 + _mm512_madd_epi16)
//   int8_g32_a8: the same sign trick per block of 32, 16 rows per step (fmt_q8a8_512.inc)
//   sparse formats: none of their own here, so the table falls back to the AVX2 kernels.
//   int4 gG decode from the decode layout (fmt_int4_decode_512.inc), where AVX-512 runs full width (formats.cpp)
//   int4_gG_a8 prefill: the panel GEMM of fmt_group_gemm_512.inc on vpmaddubsw + vpmaddwd (CPUs
//     without VNNI; a few tokens keep the AVX2 kernels), and its decode from the decode layout
//     where AVX-512 runs full width (the row matvec: AVX2's)
// Handed out only where AVX-512 is supported (fmt::format_entries); the twin tests
// (tests/unit/test_formats.cpp) hold it to the generic kernels on such a host and skip it elsewhere.
#include <immintrin.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "engines/kernels/fmt_common.h"
#include "engines/kernels/half.h"
#include "engines/kernels/isa_entries.h"
#include "engines/kernels/isa_target.h"

CIBENCH_TARGET_BEGIN_AVX512
#include "engines/kernels/fmt_decode_layout.h"
#include "engines/kernels/transpose_avx.h"
#include "engines/kernels/vec_avx512.h"

namespace cibench {
namespace fmt {
namespace {

#include "engines/kernels/gemm_xt.inc"
#include "engines/kernels/fmt_dense.inc"
#include "engines/kernels/fmt_int4_decode_512.inc"

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

// ---- int8_g32_a8 at 512 bits: the sign trick per block -------------------------------------
struct Q8DotBw {
  static constexpr int kBiasShift = 0;
  struct Wt {
    __m512i w, wabs;
  };
  static inline Wt prep(__m512i w) { return Wt{w, _mm512_abs_epi8(w)}; }
  // |w| (u8) x (a * sign w) (s8): pairs of products <= 2 x 127 x 127 fit int16, exact.
  static inline __m512i dot(const Wt& w, __m512i a) {
    const __m512i sa = _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(w.w), _mm512_setzero_si512(), a);
    return _mm512_madd_epi16(_mm512_maddubs_epi16(w.wabs, sa), _mm512_set1_epi16(1));
  }
};

#include "engines/kernels/fmt_q8a8_512.inc"

// ---- int4_gG_a8 prefill: the panel GEMM on AVX-512 BW -----------------------------------------
#include "engines/kernels/fmt_group_gemm_512.inc"
#include "engines/kernels/fmt_actb_512.inc"

struct GroupDotBw {  // the int16 runs of fmt_group_gemm_512.inc
  static constexpr bool kVnni = false;
  template <int64_t G>
  static constexpr int tokens() { return G == 32 ? 6 : 4; }
};

// From how many tokens the GEMM takes over from the AVX2 kernels: on an AMD Zen 5 core (forced
// avx512 level, one thread, cibench-microbench shapes 768 x 768, 2048 x 768, 4096 x 4096), GOPs
// GEMM / AVX2 at 4 tokens 88-96 / 116-121 (G = 32) and 143-159 / 169-174 (G = 128), at 6 tokens
// 129-137 / 118-122 and 197-212 / 180-181, at 8 tokens 162-171 / 120-121 and 248-270 / 186-189;
// at 128 tokens 509-569 against 117-118 (G = 32) and 584-654 against 216-234 (G = 128).
constexpr int64_t kGemmMinTokensQ4Bw = 6;

template <int G>
void int4a8_matmul_bw(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes, int64_t m,
                      float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  if (m >= kGemmMinTokensQ4Bw) {
    group_gemm_512<Q4Panel<G>, GroupDotBw>(w, row_bytes, k, x, x_row_bytes, m, y, ldy, row_begin, row_end);
    return;
  }
  static const decltype(FormatKernels::matmul) avx2 = avx2_kernels(Spec{Kind::int4_a8, G, false}).matmul;
  avx2(w, row_bytes, k, x, x_row_bytes, m, y, ldy, row_begin, row_end);
}

// ---- int4_gG_a8 decode from the decode layout on AVX-512 BW -----------------------------------
// fmt_decode_512.inc's kernel (16-row blocks read as one stream, fmt_decode_layout.h) without
// VNNI: per 64-byte vector the low and the high nibbles each take a vpmaddubsw by the broadcast
// activations (int16 sums of two products, |.| <= 2 x 15 x 128), the 8 of a sub-block added in
// int16 (<= 30720: no saturation), then one vpmaddwd by 1 into the group's int32 sums of the 16
// rows: the same exact sums, -8 times the block sum off, and the generic twin's
// acc = fma(d_w d_a, float(sum), acc): bit for bit. The rows no whole block covers take the AVX2
// matvec.
template <int SUBS>
inline __m512 int4a8_group_bw(const uint8_t* blk, const uint8_t* a, int32_t asum, float da, __m512 acc) {
  decode_prefetch(blk, 32 + 256 * SUBS);
  const uint8_t* q = blk + 32;
  const __m512i low4 = _mm512_set1_epi8(0x0f), ones = _mm512_set1_epi16(1);
  __m512i s = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int sb = 0; sb < SUBS; ++sb) {
    __m512i h0 = _mm512_setzero_si512(), h1 = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int v = 4 * sb; v < 4 * sb + 4; ++v) {  // sub-block v / 4, vector v % 4
      const __m512i b = _mm512_loadu_si512(q + 64 * v);
      const uint8_t* av = a + 32 * (v / 4) + 4 * (v % 4);
      const __m512i alo = _mm512_set1_epi32(static_cast<int32_t>(load_u32(av)));
      const __m512i ahi = _mm512_set1_epi32(static_cast<int32_t>(load_u32(av + 16)));
      h0 = _mm512_add_epi16(h0, _mm512_maddubs_epi16(_mm512_and_si512(b, low4), alo));
      h1 = _mm512_add_epi16(h1, _mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(b, 4), low4), ahi));
    }
    s = _mm512_add_epi32(s, _mm512_madd_epi16(_mm512_add_epi16(h0, h1), ones));
  }
  const __m512i sum = _mm512_sub_epi32(s, _mm512_set1_epi32(8 * asum));
  const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
  return _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(da)), _mm512_cvtepi32_ps(sum), acc);
}

template <int G>
void int4a8_decode_matvec_bw(const uint8_t* dec, const uint8_t* w, size_t row_bytes, int64_t k, const void* xv,
                             float* y, int64_t row_begin, int64_t row_end) {
  static const decltype(FormatKernels::matvec) rows_matvec = avx2_kernels(Spec{Kind::int4_a8, G, false}).matvec;
  constexpr int64_t piece = 32 + 256 * (G / 32);
  const ActBlocks<G> a(xv, k);
  const int64_t block_bytes = static_cast<int64_t>(row_bytes) * kDecodeRows;  // the layout keeps the rows' bytes
  decode_blocks(
      row_begin, row_end,
      [&](int64_t r0, int64_t r1) { rows_matvec(w, row_bytes, k, xv, y + (r0 - row_begin), r0, r1); },
      [&](int64_t b) {
        const uint8_t* blk = dec + b * block_bytes;
        __m512 acc = _mm512_setzero_ps();
        decode_each_group<G>(k, [&](int64_t g, auto subs) {
          acc = int4a8_group_bw<decltype(subs)::value>(blk + g * piece, a.values(g), a.sum(g), a.scale(g), acc);
        });
        _mm512_storeu_ps(y + (b * kDecodeRows - row_begin), acc);
      });
}

template <int G>
void set_int4a8_decode_bw(FormatKernels& f) {
  f.decode_bytes = decode_bytes_512<Kind::int4_a8, G>;
  f.decode_pack = decode_pack_512<Kind::int4_a8, G>;
  f.matvec_decode = int4a8_decode_matvec_bw<G>;
}

void add_decode_layout(const Spec& s, FormatKernels& f) {
  if (s.kind == Kind::int4_a8) {
    if (s.group == 32) set_int4a8_decode_bw<32>(f);
    else if (s.group == 64) set_int4a8_decode_bw<64>(f);
    else set_int4a8_decode_bw<128>(f);
    return;
  }
  if (s.kind != Kind::int4) return;
  if (s.group == 32) s.asym ? set_int4f_decode<32, true>(f) : set_int4f_decode<32, false>(f);
  else if (s.group == 64) s.asym ? set_int4f_decode<64, true>(f) : set_int4f_decode<64, false>(f);
  else s.asym ? set_int4f_decode<128, true>(f) : set_int4f_decode<128, false>(f);
}

FormatKernels level_kernels(const Spec& s) {
  if (s.kind == Kind::w8a8)
    return FormatKernels{w8a8_matvec_512<Dot64Bw>, w8a8_matmul_512<Dot64Bw>, act8_quantize_512};
  if (s.kind == Kind::q8_a8) return FormatKernels{q8a8_matvec_512<Q8DotBw>, q8a8_matmul_512<Q8DotBw>};
  if (s.kind == Kind::int4_a8) {
    FormatKernels f = avx2_kernels(s);  // the matvec, the quantiser and the few-token matmul
    f.matmul = s.group == 128 ? int4a8_matmul_bw<128> : (s.group == 64 ? int4a8_matmul_bw<64> : int4a8_matmul_bw<32>);
    return f;
  }
  return dense_kernels<VecAvx512>(s);
}

}  // namespace
}  // namespace fmt

namespace isa_entry {
constinit const fmt::FormatEntries fmt_avx512{.kernels = fmt::level_kernels,
                                              .add_decode_layout = fmt::add_decode_layout};
}  // namespace isa_entry

}  // namespace cibench
CIBENCH_TARGET_END
