// AMX kernels, in the amx target region (the AVX-512 VNNI/BF16 features plus AMX tiles,
// isa_target.h): internal linkage all, reached through isa_entry::fmt_amx only.
//   Prefill through MatmulRunner (FormatKernels::matmul_tiles) on weights laid out once per
//   matrix as B tiles (bf16: a repack of its own; w8a8 and int8_g32_a8: the decode layout, whose
//   vectors are B tiles; int4_gG_a8: the decode layout's nibbles, expanded per call and 32-row
//   block), the activation rows as the A tiles where they lie:
//     bf16 (tdpbf16ps, the activations rounded to bf16 as the avx512_vnni kernels take them, so
//     prefill and decode agree) and w8a8 (tdpbssd, exact int32 sums: bit for bit the generic
//     twin): tiles_gemm;
//     int4_g32/64/128_a8 and int8_g32_a8 (tdpbssd per group of 32 columns, the scales applied in
//     AVX-512 group after group: bit for bit the generic twin): group_matmul_tiles.
//   The kernels' plain matmul (a caller without the repack): bf16 and w8a8 with the weight rows as
//   the A tiles (amx_gemm), int4_g64_a8 / int4_g128_a8 per group (group_a8_matmul_amx).
//   Their matvecs (decode: one token does not fill a tile), the calls of fewer than 16 tokens and
//   the rows outside whole tiles of 16: the avx512_vnni kernels.
// Every other row falls back to its AVX-512 VNNI / AVX-512 kernels.
// Written to the Intel intrinsics documentation; handed out (fmt::format_entries) only where cpuid
// reports AMX and the kernel granted the tile permission (engines/core/cpu.cpp). The twin tests
// run it only on a host with AMX, and skip it (saying so) on every other.
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "engines/kernels/fmt_common.h"
#include "engines/kernels/half.h"
#include "engines/kernels/isa_entries.h"
#include "engines/kernels/isa_target.h"

CIBENCH_TARGET_BEGIN_AMX
#include "engines/kernels/transpose_avx.h"

namespace cibench {
namespace fmt {
namespace {

// ldtilecfg layout (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// Every one of the 8 tiles 16 rows x 64 bytes: tmm0-3 the 2 x 2 C tiles (16 rows x 16 tokens of
// f32 or int32), tmm4-5 two A tiles (16 weight rows x 64 bytes of K), tmm6-7 two B tiles (16
// 32-bit K groups x 16 tokens).
inline void configure_tiles() {
  TileConfig cfg{};
  cfg.palette_id = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
}

// The C tiles 0-3 of an NA x NB block (C tile i from A tile 4 + i / 2 and B tile 6 + i % 2):
// zeroed, and stored to c (int32 or f32 bits, rows ldc elements apart) as [16 NA][16 NB].
template <int NA, int NB>
inline void zero_c() {
  _tile_zero(0);
  if constexpr (NB > 1) _tile_zero(1);
  if constexpr (NA > 1) _tile_zero(2);
  if constexpr (NA > 1 && NB > 1) _tile_zero(3);
}
template <int NA, int NB>
inline void store_c(int32_t* c, int64_t ldc) {
  const int st = static_cast<int>(ldc * 4);
  _tile_stored(0, c, st);
  if constexpr (NB > 1) _tile_stored(1, c + 16, st);
  if constexpr (NA > 1) _tile_stored(2, c + 16 * ldc, st);
  if constexpr (NA > 1 && NB > 1) _tile_stored(3, c + 16 * ldc + 16, st);
}

// ---- the GEMM with the weights as the A tiles ------------------------------------------------
// Y[t][r] = sum over K of W[r][.] X[t][.], both bf16 (tdpbf16ps: pairs) or both int8 (tdpbssd:
// quads), so one K step of a tile is 64 bytes of a row either way and one 32-bit element of a B
// tile is one pair or quad. The weight rows are the A tiles: a block of 32 rows is copied once per
// call, each row read in order, into whole tiles (16 rows x 64 bytes = 1 KB in a row; the last
// step zero padded, so no load reads past a row's own bytes). Loading the tiles straight from the
// matrix at the rows' stride was no faster (matmul128/bf16/amx, 768x768, 768x2048, 2048x5632,
// two alternating rounds on one Xeon core, within 3 % either way) and needs the padded last step
// staged anyway. B tiles are X transposed once per call into 16 x 16 blocks of 32-bit elements
// (pack_lanes: [K group][token], tokens past m zero), the VNNI layout tdp* expects; the
// activation rows are zero padded to whole 32-bit groups already, and the pack zero fills the
// rest of the last step. Each register step: 2 A + 2 B loads for 4 tdp (2 x 2 C tiles, 32 rows x
// 32 tokens); C stays in its tile over the whole K of the row block, then goes to a buffer
// [row][token] that the epilogue turns into Y[t][r] (with the in-register transposes). Row ranges
// are processed in whole tiles of 16; the < 16 rows of a range's end go to the caller's fallback.
constexpr int64_t kAmxTokenChunk = 128;            // tokens packed at once (at most)
constexpr int64_t kAmxPackBytes = 1024 * 1024;     // X^T of one chunk (kept in L2), at most

// The tile numbers are literals (GCC's tile intrinsics paste them into the instruction):
// C tile i from A tile 4 + i / 2 and B tile 6 + i % 2.
struct Bf16Ops {
  static inline void dp0() { _tile_dpbf16ps(0, 4, 6); }
  static inline void dp1() { _tile_dpbf16ps(1, 4, 7); }
  static inline void dp2() { _tile_dpbf16ps(2, 5, 6); }
  static inline void dp3() { _tile_dpbf16ps(3, 5, 7); }
};
struct Int8Ops {
  static inline void dp0() { _tile_dpbssd(0, 4, 6); }
  static inline void dp1() { _tile_dpbssd(1, 4, 7); }
  static inline void dp2() { _tile_dpbssd(2, 5, 6); }
  static inline void dp3() { _tile_dpbssd(3, 5, 7); }
};
// Signed activations (A) times weights biased to unsigned (B, the decode layout's).
struct Int8BiasedOps {
  static inline void dp0() { _tile_dpbsud(0, 4, 6); }
  static inline void dp1() { _tile_dpbsud(1, 4, 7); }
  static inline void dp2() { _tile_dpbsud(2, 5, 6); }
  static inline void dp3() { _tile_dpbsud(3, 5, 7); }
};

// Tokens [0, mt) of X (rows xrb bytes apart, their data from x_off) as B tiles: blocks of 16
// tokens, each [32-bit group][16 tokens] for `groups` groups, the groups past x_groups (X's zero
// padded data) and the tokens past mt zero.
inline void pack_b_tiles(const uint8_t* x, size_t xrb, int64_t x_off, int64_t x_groups, int64_t groups, int64_t mt,
                         float* xpack) {
  for (int64_t b = 0; b < (mt + 15) / 16; ++b) {
    const int64_t bt = mt - 16 * b < 16 ? mt - 16 * b : 16;
    float* dst = xpack + b * groups * 16;
    pack_lanes(reinterpret_cast<const float*>(x + 16 * b * static_cast<int64_t>(xrb) + x_off),
               static_cast<int64_t>(xrb / 4), bt, x_groups, dst, 16);
    std::memset(dst + x_groups * 16, 0, static_cast<size_t>(groups - x_groups) * 64);
  }
}

template <int NA, int NB, class Ops>
inline void amx_block(const uint8_t* a0, const uint8_t* a1, int64_t steps, const uint8_t* b0, const uint8_t* b1,
                      int32_t* c, int64_t ldc) {
  zero_c<NA, NB>();
  for (int64_t s = 0; s < steps; ++s) {
    _tile_loadd(4, a0 + 1024 * s, 64);
    _tile_loadd(6, b0 + 1024 * s, 64);
    if constexpr (NB > 1) _tile_loadd(7, b1 + 1024 * s, 64);
    Ops::dp0();
    if constexpr (NB > 1) Ops::dp1();
    if constexpr (NA > 1) {
      _tile_loadd(5, a1 + 1024 * s, 64);
      Ops::dp2();
      if constexpr (NB > 1) Ops::dp3();
    }
  }
  store_c<NA, NB>(c, ldc);
}

// rows [row_begin, row_begin + n16) of W (n16 a multiple of 16) for tokens [0, m): see above.
//   w_off, w_data: where a row's K data starts and how many bytes of it there are;
//   x_off, x_data: the same for an activation row (x_data a multiple of 4, zero padded past K);
//   epi(c, ldc, rows, r0, tokens, t0): the C buffer of `rows` rows from r0 x `tokens` tokens from t0
template <class Ops, class Epi>
void amx_gemm(const uint8_t* w, size_t row_bytes, int64_t w_off, int64_t w_data, const uint8_t* x, size_t xrb,
              int64_t x_off, int64_t x_data, int64_t m, int64_t row_begin, int64_t n16, const Epi& epi) {
  const int64_t steps = (w_data + 63) / 64, full = w_data / 64, tail = w_data % 64;
  const int64_t groups = steps * 16;  // 32-bit K groups per token, zero filled past x_data / 4
  int64_t chunk = kAmxPackBytes / (groups * 4) / 32 * 32;
  chunk = chunk < 32 ? 32 : (chunk > kAmxTokenChunk ? kAmxTokenChunk : chunk);
  thread_local std::vector<float> xpack;  // [token block][K group][16 tokens], 32-bit patterns
  thread_local std::vector<int32_t> cbuf;  // [32 rows][chunk tokens]
  thread_local std::vector<uint8_t> apack;  // [2 tiles][step][16 rows][64 bytes]
  if (static_cast<int64_t>(xpack.size()) < chunk * groups) xpack.resize(chunk * groups);
  if (static_cast<int64_t>(cbuf.size()) < 32 * chunk) cbuf.resize(32 * chunk);
  if (static_cast<int64_t>(apack.size()) < 2 * steps * 1024) apack.resize(2 * steps * 1024);
  configure_tiles();
  for (int64_t t0 = 0; t0 < m; t0 += chunk) {
    const int64_t mt = m - t0 < chunk ? m - t0 : chunk, nblocks = (mt + 15) / 16, ldc = nblocks * 16;
    pack_b_tiles(x + t0 * static_cast<int64_t>(xrb), xrb, x_off, x_data / 4, groups, mt, xpack.data());
    for (int64_t r = 0; r < n16; r += 32) {
      const int64_t na = n16 - r >= 32 ? 2 : 1;
      // The rows of the block, each read once in order, into whole tiles: a tile's 16 rows of
      // one step are 1 KB in a row (loads at the rows' own stride, a multiple of 4 KB for K =
      // 2048 bf16, put all 16 in one L1 set), the last step zero padded.
      for (int64_t j = 0; j < 16 * na; ++j) {
        const uint8_t* src = w + (row_begin + r + j) * static_cast<int64_t>(row_bytes) + w_off;
        uint8_t* d = apack.data() + (j / 16) * steps * 1024 + (j % 16) * 64;
        for (int64_t st = 0; st < full; ++st) std::memcpy(d + st * 1024, src + 64 * st, 64);
        if (tail) {
          std::memcpy(d + full * 1024, src + 64 * full, static_cast<size_t>(tail));
          std::memset(d + full * 1024 + tail, 0, static_cast<size_t>(64 - tail));
        }
      }
      const uint8_t* a0 = apack.data();
      const uint8_t* a1 = a0 + steps * 1024;
      for (int64_t b = 0; b < nblocks; b += 2) {
        const uint8_t* b0 = reinterpret_cast<const uint8_t*>(xpack.data() + b * groups * 16);
        const uint8_t* b1 = b0 + groups * 64;
        int32_t* c = cbuf.data() + 16 * b;
        if (na == 2 && b + 1 < nblocks)
          amx_block<2, 2, Ops>(a0, a1, steps, b0, b1, c, ldc);
        else if (na == 2)
          amx_block<2, 1, Ops>(a0, a1, steps, b0, b1, c, ldc);
        else if (b + 1 < nblocks)
          amx_block<1, 2, Ops>(a0, a1, steps, b0, b1, c, ldc);
        else
          amx_block<1, 1, Ops>(a0, a1, steps, b0, b1, c, ldc);
      }
      epi(cbuf.data(), ldc, 16 * na, row_begin + r, mt, t0);
    }
  }
  _tile_release();
}


// The avx512_vnni matmul of a row: the fallback for few tokens and the rows of a range's end.
template <Kind K, int G = 0>
void vnni_matmul(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t xrb, int64_t m, float* y,
                 int64_t ldy, int64_t row_begin, int64_t row_end) {
  static const FormatKernels f = lower_entries(Isa::avx512_vnni).kernels(Spec{K, G});
  f.matmul(w, row_bytes, k, x, xrb, m, y, ldy, row_begin, row_end);
}

// bf16 x bf16 (activations rounded to bf16 as at avx512_vnni: the same act variant), f32 sums.
// Each output is one chain of tdpbf16ps over K in order (per step: the 16 pairs in order), so a
// token's outputs do not depend on the other tokens of the call. From 16 tokens (one tile of B);
// below, the vdpbf16ps kernels.
constexpr int64_t kAmxBf16MinTokens = 16;
void bf16_matmul_amx(const uint8_t* w, size_t row_bytes, int64_t k, const void* xv, size_t x_row_bytes, int64_t m,
                     float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  const int64_t n16 = m >= kAmxBf16MinTokens ? (row_end - row_begin) / 16 * 16 : 0;
  if (n16 > 0) {
    auto epi = [&](const int32_t* c, int64_t ldc, int64_t rows, int64_t r0, int64_t tokens, int64_t t0) {
      transpose_block<false>(reinterpret_cast<const float*>(c), ldc, rows, tokens, y + t0 * ldy + r0, ldy);
    };
    amx_gemm<Bf16Ops>(w, row_bytes, 0, 2 * k, static_cast<const uint8_t*>(xv), x_row_bytes, 0,
                      static_cast<int64_t>(actbf16_row_bytes(k)), m, row_begin, n16, epi);
  }
  if (row_begin + n16 < row_end)
    vnni_matmul<Kind::bf16>(w, row_bytes, k, xv, x_row_bytes, m, y, ldy, row_begin + n16, row_end);
}

// w8a8: int32 sums (exact, as every twin), then float(sum) * (scale_w * scale_x) as the generic
// twin: bit for bit.
constexpr int64_t kAmxW8a8MinTokens = 16;
void w8a8_matmul_amx(const uint8_t* w, size_t row_bytes, int64_t k, const void* xv, size_t x_row_bytes, int64_t m,
                     float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  const int64_t n16 = m >= kAmxW8a8MinTokens ? (row_end - row_begin) / 16 * 16 : 0;
  const uint8_t* xa = static_cast<const uint8_t*>(xv);
  if (n16 > 0) {
    thread_local std::vector<float> sx;
    if (static_cast<int64_t>(sx.size()) < m + 16) sx.resize(m + 16);
    for (int64_t t = 0; t < m; ++t) sx[t] = load_f32(xa + t * x_row_bytes);
    auto epi = [&](int32_t* c, int64_t ldc, int64_t rows, int64_t r0, int64_t tokens, int64_t t0) {
      float* cf = reinterpret_cast<float*>(c);
      for (int64_t r = 0; r < rows; ++r) {
        const __m512 swv = _mm512_set1_ps(load_f32(w + (r0 + r) * static_cast<int64_t>(row_bytes)));
        for (int64_t t = 0; t < tokens; t += 16) {
          const __m512 s = _mm512_mul_ps(swv, _mm512_loadu_ps(sx.data() + t0 + t));
          const __m512 v = _mm512_cvtepi32_ps(_mm512_loadu_si512(c + r * ldc + t));
          _mm512_storeu_ps(cf + r * ldc + t, _mm512_mul_ps(v, s));
        }
      }
      transpose_block<false>(cf, ldc, rows, tokens, y + t0 * ldy + r0, ldy);
    };
    amx_gemm<Int8Ops>(w, row_bytes, 4, round_up(k, 32), xa, x_row_bytes, kActHeader, round_up(k, 32), m, row_begin,
                      n16, epi);
  }
  if (row_begin + n16 < row_end)
    vnni_matmul<Kind::w8a8>(w, row_bytes, k, xv, x_row_bytes, m, y, ldy, row_begin + n16, row_end);
}

// ---- the GEMM on weights repacked as B tiles (the runner's prefill of w8a8 and bf16) -------------
// FormatKernels::matmul_tiles: the weights of each whole block of 16 rows are repacked once per
// matrix (WeightMatrix::tiles_for) as B tiles, one per 64-byte step of K: [16 four-byte K groups]
// [16 rows], zero past the row's data. The activation rows are the A tiles where they lie (16
// tokens x 64 bytes at the rows' own stride), so a C tile comes out [token][row], Y's own layout:
// no copy of W per call, no transposed pack of X and no transposed output (amx_gemm above pays
// all three, ~40 % of a DistilBERT w8a8 pass at 128 tokens). 2 x 2 C tiles (32 tokens x 32 rows)
// per register step, 2 A + 2 B loads for 4 tdp; the B tiles of a 32-row block are reused over the
// tokens of a chunk (whose activations, at most 1 MB, stay in L2). A step of K past an activation
// row's data (w8a8 with round_up(K, 32) % 64 == 32) and a last block of fewer than 16 tokens are
// staged zero padded, so no load reads outside the rows it was given.
inline int64_t tile_steps(int64_t w_data) { return (w_data + 63) / 64; }

void pack_weight_tiles(const uint8_t* w, size_t row_bytes, int64_t rows, int64_t w_off, int64_t w_data,
                       uint8_t* dst) {
  const int64_t steps = tile_steps(w_data);
  // Per 16 steps (16 KB of tiles, kept in L1), row by row, each row's span read once in order into
  // column r of every step's tile (reading the 16 rows of one step together put them in one L1 set
  // at the 4 KB stride of K = 2048 bf16, and tiles of a whole row's K overflowed L1: 3-14x slower).
  for (int64_t rb = 0; rb < rows / 16; ++rb)
    for (int64_t s0 = 0; s0 < steps; s0 += 16)
    for (int64_t r = 0; r < 16; ++r) {
      const uint8_t* src = w + (16 * rb + r) * static_cast<int64_t>(row_bytes) + w_off;
      for (int64_t s = s0; s < (s0 + 16 < steps ? s0 + 16 : steps); ++s) {
        uint8_t* d = dst + (rb * steps + s) * 1024 + r * 4;
        const int64_t n = w_data - 64 * s < 64 ? w_data - 64 * s : 64;
        if (n == 64) {
          for (int64_t q = 0; q < 16; ++q) std::memcpy(d + q * 64, src + 64 * s + 4 * q, 4);
          continue;
        }
        for (int64_t q = 0; q < 16; ++q) {
          const int64_t c = n - 4 * q < 4 ? (n - 4 * q > 0 ? n - 4 * q : 0) : 4;  // bytes of this group in the row
          std::memset(d + q * 64, 0, 4);
          std::memcpy(d + q * 64, src + 64 * s + 4 * q, static_cast<size_t>(c));
        }
      }
    }
}

// One A operand: steps [0, direct) at p + 64 s (rows `stride` bytes apart), a last step (when
// direct < steps) at tail (rows tstride apart).
struct ASrc {
  const uint8_t* p;
  int64_t stride;
  const uint8_t* tail;
  int64_t tstride;
};

template <int NT, int NR, class Ops>
inline void tiles_block(const ASrc& a0, const ASrc& a1, int64_t direct, int64_t steps, const uint8_t* b0,
                        const uint8_t* b1, int32_t* c) {
  zero_c<NT, NR>();
  auto step = [&](const uint8_t* p0, int64_t s0, const uint8_t* p1, int64_t s1, int64_t s) {
    _tile_loadd(6, b0 + 1024 * s, 64);
    _tile_loadd(4, p0, s0);
    Ops::dp0();
    if constexpr (NR > 1) {
      _tile_loadd(7, b1 + 1024 * s, 64);
      Ops::dp1();
    }
    if constexpr (NT > 1) {
      _tile_loadd(5, p1, s1);
      Ops::dp2();
      if constexpr (NR > 1) Ops::dp3();
    }
  };
  for (int64_t s = 0; s < direct; ++s) step(a0.p + 64 * s, a0.stride, a1.p + 64 * s, a1.stride, s);
  if (direct < steps) step(a0.tail, a0.tstride, a1.tail, a1.tstride, direct);
  store_c<NT, NR>(c, 32);
}

// Rows [r0, r0 + n16) (r0 and n16 multiples of 16) for tokens [0, m), m >= 16:
//   epi(c, tokens, t, rows, r): C [32 tokens][32 rows] int32 (or f32 bits), `tokens` from t and
//   `rows` from r valid.
//   The B tiles of rows [16 j, 16 j + 16) start at tiles + j * block_bytes (0: steps x 1024,
//   the repack's; the decode layout's 16-row blocks are further apart).
template <class Ops, class Epi>
void tiles_gemm(const uint8_t* tiles, int64_t w_data, const uint8_t* x, size_t xrb, int64_t x_off, int64_t x_data,
                int64_t m, int64_t r0, int64_t n16, const Epi& epi, int64_t block_bytes = 0) {
  const int64_t steps = tile_steps(w_data);
  if (block_bytes == 0) block_bytes = steps * 1024;
  const int64_t direct = x_data / 64 < steps ? x_data / 64 : steps;
  const int64_t xb = x_data < 64 * steps ? x_data : 64 * steps;  // activation bytes a step may read
  int64_t chunk = kAmxPackBytes / (steps * 64) / 32 * 32;
  chunk = chunk < 32 ? 32 : chunk;
  thread_local std::vector<uint8_t> tails;  // [full token block of the chunk][16 tokens][64 bytes]
  thread_local std::vector<uint8_t> part;   // the last block of < 16 tokens: [16 tokens][steps x 64]
  alignas(64) int32_t cbuf[32 * 32];
  const int64_t ntails = direct < steps ? (chunk < m ? chunk : m) / 16 : 0;
  if (static_cast<int64_t>(tails.size()) < ntails * 1024) tails.resize(ntails * 1024);
  if (m % 16 && static_cast<int64_t>(part.size()) < steps * 1024) part.resize(steps * 1024);
  configure_tiles();
  for (int64_t t0 = 0; t0 < m; t0 += chunk) {
    const int64_t mt = m - t0 < chunk ? m - t0 : chunk, full = mt / 16, nblocks = (mt + 15) / 16;
    const uint8_t* xc = x + t0 * static_cast<int64_t>(xrb) + x_off;
    for (int64_t b = 0; b < (direct < steps ? full : 0); ++b)
      for (int64_t i = 0; i < 16; ++i) {
        uint8_t* d = tails.data() + b * 1024 + i * 64;
        const int64_t n = xb - 64 * direct;
        std::memcpy(d, xc + (16 * b + i) * static_cast<int64_t>(xrb) + 64 * direct, static_cast<size_t>(n));
        std::memset(d + n, 0, static_cast<size_t>(64 - n));
      }
    if (full < nblocks) {
      std::memset(part.data(), 0, static_cast<size_t>(steps * 1024));
      for (int64_t i = 0; i < mt - 16 * full; ++i)
        std::memcpy(part.data() + i * steps * 64, xc + (16 * full + i) * static_cast<int64_t>(xrb),
                    static_cast<size_t>(xb));
    }
    auto src = [&](int64_t b) {
      if (b >= full) return ASrc{part.data(), steps * 64, part.data() + 64 * direct, steps * 64};
      return ASrc{xc + 16 * b * static_cast<int64_t>(xrb), static_cast<int64_t>(xrb),
                  direct < steps ? tails.data() + b * 1024 : nullptr, 64};
    };
    for (int64_t r = 0; r < n16; r += 32) {
      const bool two_r = n16 - r >= 32;
      const uint8_t* b0 = tiles + (r0 + r) / 16 * block_bytes;
      const uint8_t* b1 = b0 + block_bytes;
      for (int64_t b = 0; b < nblocks; b += 2) {
        const bool two_t = b + 1 < nblocks;
        const ASrc a0 = src(b), a1 = two_t ? src(b + 1) : a0;
        if (two_t && two_r) tiles_block<2, 2, Ops>(a0, a1, direct, steps, b0, b1, cbuf);
        else if (two_t) tiles_block<2, 1, Ops>(a0, a1, direct, steps, b0, b1, cbuf);
        else if (two_r) tiles_block<1, 2, Ops>(a0, a1, direct, steps, b0, b1, cbuf);
        else tiles_block<1, 1, Ops>(a0, a1, direct, steps, b0, b1, cbuf);
        epi(cbuf, mt - 16 * b < 32 ? mt - 16 * b : 32, t0 + 16 * b, two_r ? 32 : 16, r0 + r);
      }
    }
  }
  _tile_release();
}

// Rows [row_begin, row_end): the whole tiles of 16 from the first multiple of 16 on through
// tiles_gemm, the rest (and calls of fewer than 16 tokens) on the avx512_vnni kernels.
template <Kind K, class Gemm>
void tiles_split(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t xrb, int64_t m, float* y,
                 int64_t ldy, int64_t row_begin, int64_t row_end, const Gemm& gemm) {
  int64_t a = (row_begin + 15) / 16 * 16;
  a = a < row_end ? a : row_end;
  const int64_t n16 = m >= 16 ? (row_end - a) / 16 * 16 : 0;
  if (n16 == 0) {
    vnni_matmul<K>(w, row_bytes, k, x, xrb, m, y, ldy, row_begin, row_end);
    return;
  }
  if (row_begin < a) vnni_matmul<K>(w, row_bytes, k, x, xrb, m, y, ldy, row_begin, a);
  gemm(a, n16);
  if (a + n16 < row_end) vnni_matmul<K>(w, row_bytes, k, x, xrb, m, y, ldy, a + n16, row_end);
}

size_t w8a8_tiles_bytes(int64_t rows, int64_t k) {
  return static_cast<size_t>(rows / 16 * tile_steps(round_up(k, 32)) * 1024);
}
void w8a8_tiles_pack(const uint8_t* w, size_t row_bytes, int64_t rows, int64_t k, uint8_t* dst) {
  pack_weight_tiles(w, row_bytes, rows, 4, round_up(k, 32), dst);
}
// As w8a8_matmul_amx: exact int32 sums, then float(sum) * (scale_w * scale_x), bit for bit the
// generic twin.
void w8a8_matmul_tiles(const uint8_t* tiles, const uint8_t* w, size_t row_bytes, int64_t k, const void* xv,
                       size_t xrb, int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  const uint8_t* xa = static_cast<const uint8_t*>(xv);
  tiles_split<Kind::w8a8>(w, row_bytes, k, xv, xrb, m, y, ldy, row_begin, row_end, [&](int64_t a, int64_t n16) {
    thread_local std::vector<float> sx;
    if (static_cast<int64_t>(sx.size()) < m) sx.resize(m);
    for (int64_t t = 0; t < m; ++t) sx[t] = load_f32(xa + t * xrb);
    alignas(64) float sw[32];
    int64_t sw_r = -1;
    auto epi = [&](const int32_t* c, int64_t tokens, int64_t t, int64_t rows, int64_t r) {
      if (sw_r != r) {
        for (int64_t i = 0; i < rows; ++i) sw[i] = load_f32(w + (r + i) * static_cast<int64_t>(row_bytes));
        sw_r = r;
      }
      for (int64_t h = 0; h < rows / 16; ++h) {
        const __m512 swv = _mm512_load_ps(sw + 16 * h);
        for (int64_t i = 0; i < tokens; ++i) {
          const __m512 v = _mm512_cvtepi32_ps(_mm512_load_si512(c + i * 32 + 16 * h));
          _mm512_storeu_ps(y + (t + i) * ldy + r + 16 * h, _mm512_mul_ps(v, _mm512_mul_ps(swv, _mm512_set1_ps(sx[t + i]))));
        }
      }
    };
    tiles_gemm<Int8Ops>(tiles, round_up(k, 32), xa, xrb, kActHeader, round_up(k, 32), m, a, n16, epi);
  });
}

// The same products with the weights read from the decode layout (fmt_decode_512.inc), which is
// made of B tiles already: in each 16-row block, after the 16 f32 scales, 64-byte vectors of
// 16 rows x 4 columns, biased to unsigned; 16 consecutive vectors are the tile of a 64-column
// step. tdpbsud, then 128 x the token's activation sum comes off each int32 sum: exact, so bit
// for bit the generic twin, and no second copy of the weights for prefill. When round_up(K, 32)
// is an odd multiple of 32 the last step's tile runs 512 bytes into the next block (or the
// layout's tail slack): those columns meet the activations' zero padding.
void w8a8_matmul_decode_tiles(const uint8_t* dec, const uint8_t* w, size_t row_bytes, int64_t k, const void* xv,
                              size_t xrb, int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  const uint8_t* xa = static_cast<const uint8_t*>(xv);
  const int64_t kp = round_up(k, 32);
  tiles_split<Kind::w8a8>(w, row_bytes, k, xv, xrb, m, y, ldy, row_begin, row_end, [&](int64_t a, int64_t n16) {
    thread_local std::vector<float> sx;
    thread_local std::vector<int32_t> bias;
    if (static_cast<int64_t>(sx.size()) < m) sx.resize(m), bias.resize(m);
    for (int64_t t = 0; t < m; ++t) {
      sx[t] = load_f32(xa + t * xrb);
      const int8_t* q = reinterpret_cast<const int8_t*>(xa + t * xrb + kActHeader);
      int32_t sum = 0;
      for (int64_t c = 0; c < kp; ++c) sum += q[c];
      bias[t] = 128 * sum;
    }
    const int64_t block = 16 * static_cast<int64_t>(row_bytes);
    auto epi = [&](const int32_t* c, int64_t tokens, int64_t t, int64_t rows, int64_t r) {
      for (int64_t h = 0; h < rows / 16; ++h) {
        const __m512 swv = _mm512_loadu_ps(reinterpret_cast<const float*>(dec + (r / 16 + h) * block));
        for (int64_t i = 0; i < tokens; ++i) {
          const __m512i sum = _mm512_sub_epi32(_mm512_load_si512(c + i * 32 + 16 * h), _mm512_set1_epi32(bias[t + i]));
          _mm512_storeu_ps(y + (t + i) * ldy + r + 16 * h,
                           _mm512_mul_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(swv, _mm512_set1_ps(sx[t + i]))));
        }
      }
    };
    tiles_gemm<Int8BiasedOps>(dec + 64, kp, xa, xrb, kActHeader, kp, m, a, n16, epi, block);
  });
}

size_t bf16_tiles_bytes(int64_t rows, int64_t k) { return static_cast<size_t>(rows / 16 * tile_steps(2 * k) * 1024); }
void bf16_tiles_pack(const uint8_t* w, size_t row_bytes, int64_t rows, int64_t k, uint8_t* dst) {
  pack_weight_tiles(w, row_bytes, rows, 0, 2 * k, dst);
}
// As bf16_matmul_amx: one chain of tdpbf16ps per output over K in order.
void bf16_matmul_tiles(const uint8_t* tiles, const uint8_t* w, size_t row_bytes, int64_t k, const void* xv,
                       size_t xrb, int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  tiles_split<Kind::bf16>(w, row_bytes, k, xv, xrb, m, y, ldy, row_begin, row_end, [&](int64_t a, int64_t n16) {
    auto epi = [&](const int32_t* c, int64_t tokens, int64_t t, int64_t rows, int64_t r) {
      const float* cf = reinterpret_cast<const float*>(c);
      for (int64_t i = 0; i < tokens; ++i)
        for (int64_t h = 0; h < rows / 16; ++h)
          _mm512_storeu_ps(y + (t + i) * ldy + r + 16 * h, _mm512_load_ps(cf + i * 32 + 16 * h));
    };
    tiles_gemm<Bf16Ops>(tiles, 2 * k, static_cast<const uint8_t*>(xv), xrb, 0,
                        static_cast<int64_t>(actbf16_row_bytes(k)), m, a, n16, epi);
  });
}

// ---- per-group formats on tiles from the decode layout (int4_gG_a8, int8_g32_a8) ----------------
// FormatKernels::matmul_tiles for the rows whose weights and activations carry a scale per group
// of G. The weights come from the decode layout (one copy for decode and prefill): int8_g32_a8's
// pieces are B tiles already; int4_gG_a8's nibbles are expanded per call and 32-row block
// (expand_int4_block) to signed bytes q - 8 as B tiles of one 32-column sub-step each ([8
// four-byte K groups][16 rows], 512 bytes; zero past K), their f16 scales as floats beside them.
// The activation rows are the A tiles where they lie (16 tokens x 32 bytes, at the rows' stride;
// the quantiser pads K to 32 with zeros). Per group and 2 x 2 C tiles (32 tokens x 32 rows): G /
// 32 tdpbssd give the exact int32 sums of the group, stored, then acc = fma(d_w * d_a,
// float(sum), acc) per (token, 16 rows) in AVX-512, group after group: the generic twin's
// expression per lane, bit for bit (the next group's tile products are issued before this
// group's sums are scaled, from a second buffer). The float accumulators of the 32 x 32 block
// live in L1 (4 KB); the block is written to Y once, after the last group. Unlike
// group_a8_matmul_amx below, nothing is packed or transposed per call beyond that expansion
// (which was no slower than reading a repack of a byte per weight: TinyStories-110M prefill,
// int4_g32_a8 and int4_g128_a8, three alternating rounds on one Xeon core), which is what made
// the tile form of groups of 32 no faster than VNNI there. What bounds it on that core: a tile
// store of the group's sums costs more than its tile product (16 x 16 x 32 products whose sums
// are stored each group: ~44 cycles each against ~19 accumulating in the tiles), and the
// AVX-512 scaling does not overlap the tile instructions (tile products plus 64 independent
// vector multiply-adds per group took the sum of the two alone, 184 against 77 and 103 cycles).
inline int64_t group_tile_bytes(int64_t k) { return round_up(k, 32) / 32 * 512; }  // B tiles of a 16-row block
inline int64_t group_scale_bytes(int64_t k, int64_t g) { return (k + g - 1) / g * 64; }

// Every one of the 8 tiles for 32-byte sub-steps: C 16 x 64 bytes, A 16 x 32, B 8 x 64.
inline void configure_group_tiles() {
  TileConfig cfg{};
  cfg.palette_id = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = t >= 6 ? 8 : 16;
    cfg.colsb[t] = t >= 4 && t < 6 ? 32 : 64;
  }
  _tile_loadconfig(&cfg);
}

// One int4 sub-block (16 bytes: byte j holds element j in its low nibble and 16 + j in its high
// one) as 32 signed bytes q - 8, in column order.
inline void decode_q4_sub(const uint8_t* p, int8_t* out) {
  const __m128i low4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_sub_epi8(_mm_and_si128(b, low4), eight)),
                                            _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), low4), eight), 1);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), v);
}

// Per 16-row block: [sub-step][8 quads][16 rows][4 bytes] (the B tiles), then [group][16 scales].
template <int G>
inline int64_t group_block_bytes(int64_t k) { return group_tile_bytes(k) + group_scale_bytes(k, G); }

// Where a 16-row block's B tiles and scales are. Layout::expanded (int4_gG_a8's blocks as
// expand_int4_block writes them): [sub-step][512-byte tile] then [group][16 f32 scales] (bt = the
// block, dw = its scales). The decode layout's
// (Layout::decode, int8_g32_a8, fmt_decode_512.inc): per group a 544-byte piece, 16 f16 scales
// then the 8 x 64-byte tile of the signed weights. Either way tdpbssd gives the exact sums.
// Layout::decode_int4 (int4_gG_a8's decode layout, nibbles) is expanded per 32-row block and read
// as Layout::expanded.
enum class Layout { expanded, decode, decode_int4 };
template <Layout L, int G>
struct GroupSrc {
  static const uint8_t* tile(const uint8_t* bt, int64_t g) {
    return L == Layout::expanded ? bt + g * (G / 32) * 512 : bt + g * 544 + 32;
  }
  static __m512 scales(const uint8_t* bt, const float* dw, int64_t g) {
    if constexpr (L == Layout::expanded) return _mm512_loadu_ps(dw + 16 * g);
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bt + g * 544)));
  }
};

// One 16-row block of int4_gG_a8's decode layout (fmt_decode_layout.h: per group the 16 rows'
// f16 d, then 64-byte vectors whose low nibbles are a sub-block's quads 0-3 and high nibbles its
// quads 4-7, row i at bytes 4 i) as B tiles and f32 scales in Layout::expanded's form: codes - 8 as
// signed bytes, the scales widened exactly. Per call and
// 32-row block, so int4_gG_a8 keeps one copy of its weights (half a byte each) for decode and
// prefill alike instead of a second of a byte per weight, and its prefill streams half the bytes.
template <int G>
inline void expand_int4_block(const uint8_t* dec, int64_t k, uint8_t* out) {
  const int64_t ng = (k + G - 1) / G, tb = group_tile_bytes(k);
  float* sc = reinterpret_cast<float*>(out + tb);
  const __m512i low4 = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
  uint8_t* t = out;
  for (int64_t g = 0; g < ng; ++g) {
    _mm512_storeu_ps(sc + 16 * g, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dec))));
    const int64_t subs = g + 1 < ng ? G / 32 : round_up(k - g * G, 32) / 32;
    const uint8_t* v = dec + 32;
    for (int64_t sb = 0; sb < subs; ++sb, v += 256, t += 512)
      for (int q = 0; q < 4; ++q) {
        const __m512i b = _mm512_loadu_si512(v + 64 * q);
        _mm512_storeu_si512(t + 64 * q, _mm512_sub_epi8(_mm512_and_si512(b, low4), eight));
        _mm512_storeu_si512(t + 64 * (4 + q), _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(b, 4), low4), eight));
      }
    dec = v;
  }
}

template <int NT, int NR>
inline void group_tiles_products(const uint8_t* a0, const uint8_t* a1, int64_t as, const uint8_t* b0,
                                 const uint8_t* b1, int subs) {
  zero_c<NT, NR>();
  for (int s = 0; s < subs; ++s) {
    _tile_loadd(6, b0 + 512 * s, 64);
    _tile_loadd(4, a0 + 32 * s, as);
    Int8Ops::dp0();
    if constexpr (NR > 1) {
      _tile_loadd(7, b1 + 512 * s, 64);
      Int8Ops::dp1();
    }
    if constexpr (NT > 1) {
      _tile_loadd(5, a1 + 32 * s, as);
      Int8Ops::dp2();
      if constexpr (NR > 1) Int8Ops::dp3();
    }
  }
}

// One 32 x 32 block over all groups: the tile products of group g + 1 are issued before group g's
// sums are scaled (from the other of two C buffers), so the tiles and the AVX-512 epilogue overlap.
template <int NT, int NR, int G, Layout L>
inline void group_tiles_run(const uint8_t* x0, const uint8_t* x1, int64_t xrb, int64_t hdr, const uint8_t* bt0,
                            const uint8_t* bt1, const float* dw0, const float* dw1, int64_t k, int64_t tokens,
                            int32_t (*cb)[32 * 32], float* acc) {
  using Src = GroupSrc<L, G>;
  constexpr int SUBS = G / 32;
  const int64_t ng = (k + G - 1) / G;
  auto products = [&](int64_t g) {  // a ragged last group: only the sub-steps the activations' zero pad covers
    const int subs = g + 1 < ng ? SUBS : static_cast<int>(round_up(k - g * G, 32) / 32);
    group_tiles_products<NT, NR>(x0 + hdr + g * G, x1 + hdr + g * G, xrb, Src::tile(bt0, g), Src::tile(bt1, g),
                                    subs);
  };
  for (int64_t i = 0; i < 32 * 32; i += 16) _mm512_store_ps(acc + i, _mm512_setzero_ps());
  products(0);
  store_c<NT, NR>(cb[0], 32);
  for (int64_t g = 0; g < ng; ++g) {
    if (g + 1 < ng) products(g + 1);
    // acc = fma(d_w * d_a, float(sum), acc) per lane (the generic twin's expression)
    const int32_t* c = cb[g & 1];
    const __m512 w0 = Src::scales(bt0, dw0, g);
    const __m512 w1 = NR > 1 ? Src::scales(bt1, dw1, g) : w0;
    for (int half = 0; half < NT; ++half) {  // tokens [16 half, 16 half + n) from x0 or x1
      const int64_t n = tokens - 16 * half < 16 ? tokens - 16 * half : 16;
      const uint8_t* xr = (half ? x1 : x0) + 4 * g;
      float* ai = acc + 16 * half * 32;
      const int32_t* ci = c + 16 * half * 32;
      for (int64_t i = 0; i < n; ++i, xr += xrb, ai += 32, ci += 32) {
        const __m512 da = _mm512_set1_ps(load_f32(xr));
        _mm512_store_ps(ai, _mm512_fmadd_ps(_mm512_mul_ps(w0, da), _mm512_cvtepi32_ps(_mm512_load_si512(ci)),
                                            _mm512_load_ps(ai)));
        if constexpr (NR > 1)
          _mm512_store_ps(ai + 16, _mm512_fmadd_ps(_mm512_mul_ps(w1, da),
                                                   _mm512_cvtepi32_ps(_mm512_load_si512(ci + 16)),
                                                   _mm512_load_ps(ai + 16)));
      }
    }
    if (g + 1 < ng) store_c<NT, NR>(cb[(g + 1) & 1], 32);
  }
}

template <Kind K, int G, Layout L>
void group_matmul_tiles(const uint8_t* tiles, const uint8_t* w, size_t row_bytes, int64_t k, const void* xv,
                        size_t xrb, int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  int64_t a = (row_begin + 15) / 16 * 16;
  a = a < row_end ? a : row_end;
  const int64_t n16 = m >= 16 ? (row_end - a) / 16 * 16 : 0;
  if (n16 == 0) {
    vnni_matmul<K, G>(w, row_bytes, k, xv, xrb, m, y, ldy, row_begin, row_end);
    return;
  }
  if (row_begin < a) vnni_matmul<K, G>(w, row_bytes, k, xv, xrb, m, y, ldy, row_begin, a);
  const uint8_t* x = static_cast<const uint8_t*>(xv);
  const int64_t hdr = actb_header(k, G), tb = group_tile_bytes(k);
  const int64_t bb = 16 * static_cast<int64_t>(row_bytes);  // a 16-row block of the decode layout
  constexpr Layout RL = L == Layout::decode_int4 ? Layout::expanded : L;  // how the runs read the tiles
  thread_local std::vector<uint8_t> expanded;  // Layout::decode_int4: two 16-row blocks, expanded
  const int64_t eb = group_block_bytes<G>(k);
  if (L == Layout::decode_int4 && static_cast<int64_t>(expanded.size()) < 2 * eb) expanded.resize(2 * eb);
  thread_local std::vector<uint8_t> part;  // the last block of < 16 tokens, zero padded: [16][xrb]
  alignas(64) int32_t cbuf[2][32 * 32];
  alignas(64) float acc[32 * 32];
  int64_t chunk = kAmxPackBytes / static_cast<int64_t>(xrb) / 32 * 32;
  chunk = chunk < 32 ? 32 : chunk;
  if (m % 16 && static_cast<int64_t>(part.size()) < 16 * static_cast<int64_t>(xrb)) part.resize(16 * xrb);
  configure_group_tiles();
  for (int64_t t0 = 0; t0 < m; t0 += chunk) {
    const int64_t mt = m - t0 < chunk ? m - t0 : chunk, full = mt / 16, nblocks = (mt + 15) / 16;
    const uint8_t* xc = x + t0 * static_cast<int64_t>(xrb);
    if (full < nblocks) {
      std::memset(part.data(), 0, 16 * xrb);
      std::memcpy(part.data(), xc + 16 * full * static_cast<int64_t>(xrb), static_cast<size_t>((mt - 16 * full) * xrb));
    }
    auto rows_of = [&](int64_t b) { return b < full ? xc + 16 * b * static_cast<int64_t>(xrb) : part.data(); };
    for (int64_t r = 0; r < n16; r += 32) {
      const bool two_r = n16 - r >= 32;
      const uint8_t* bt0 = tiles + (a + r) / 16 * bb;
      const uint8_t* bt1 = bt0 + bb;
      if constexpr (L == Layout::decode_int4) {
        expand_int4_block<G>(bt0, k, expanded.data());
        if (two_r) expand_int4_block<G>(bt1, k, expanded.data() + eb);
        bt0 = expanded.data();
        bt1 = bt0 + eb;
      }
      const float* dw0 = reinterpret_cast<const float*>(bt0 + tb);
      const float* dw1 = reinterpret_cast<const float*>(bt1 + tb);
      for (int64_t b = 0; b < nblocks; b += 2) {
        const bool two_t = b + 1 < nblocks;
        const uint8_t* x0 = rows_of(b);
        const uint8_t* x1 = two_t ? rows_of(b + 1) : x0;
        const int64_t tokens = mt - 16 * b < 32 ? mt - 16 * b : 32;
        const int64_t as = static_cast<int64_t>(xrb);
        if (two_t && two_r) group_tiles_run<2, 2, G, RL>(x0, x1, as, hdr, bt0, bt1, dw0, dw1, k, tokens, cbuf, acc);
        else if (two_t) group_tiles_run<2, 1, G, RL>(x0, x1, as, hdr, bt0, bt1, dw0, dw1, k, tokens, cbuf, acc);
        else if (two_r) group_tiles_run<1, 2, G, RL>(x0, x1, as, hdr, bt0, bt1, dw0, dw1, k, tokens, cbuf, acc);
        else group_tiles_run<1, 1, G, RL>(x0, x1, as, hdr, bt0, bt1, dw0, dw1, k, tokens, cbuf, acc);
        for (int64_t i = 0; i < tokens; ++i) {
          float* yr = y + (t0 + 16 * b + i) * ldy + a + r;
          _mm512_storeu_ps(yr, _mm512_load_ps(acc + i * 32));
          if (two_r) _mm512_storeu_ps(yr + 16, _mm512_load_ps(acc + i * 32 + 16));
        }
      }
    }
  }
  _tile_release();
  if (a + n16 < row_end) vnni_matmul<K, G>(w, row_bytes, k, xv, xrb, m, y, ldy, a + n16, row_end);
}

// ---- int4_gG_a8, G = 64 and 128: AMX-INT8 per group, the scales in AVX-512 ------------------------
// The weights of a block of 32 rows are decoded once per call to signed int8 (q - 8) into A tiles
// of one 64-column step each (G / 64 steps per group; a ragged group zero filled); X's int8
// values are B tiles as in amx_gemm. Per group and 2 x 2 C tiles: tdpbssd gives the exact int32
// sums of the group; stored, then per (row, 16 tokens) acc = fma(d_w * d_a, float(sum), acc) in
// group order: the generic twin's expression per lane, so bit for bit. That epilogue (a tile
// store and three vector operations per 16 outputs and group) is the cost, not the tile
// products: with groups of 32 (int4_g32_a8, int8_g32_a8; B tiles of 8 rows) this form was no
// faster than the avx512_vnni GEMM and those rows stay there (TinyStories-110M prefill, 128
// tokens, 1 thread, one Xeon core, two alternating rounds, tok/s avx512_vnni / this form:
// int4_g32_a8 1467-1473 / 1480-1512, int8_g32_a8 1395-1451 / 1386-1413; int4_g128_a8
// 1680-1845 / 2113-2137).
template <int G>
struct GroupFmt {
  static_assert(G % 64 == 0, "whole 64-column steps");
  static constexpr int64_t kStep = 64;  // bytes of K per tile step
  static constexpr int64_t kSteps = G / kStep;
  static constexpr int64_t kGroupBytes = 2 + G / 2;
  // Row `row`'s group g (n columns, n <= G) as G signed bytes (zero past n), its scale in *d.
  // Sub-block sb (32 values) goes to out + (32 sb / kStep) * step_stride + (32 sb) % kStep: the
  // row's line of its A tile's step.
  static void decode(const uint8_t* row, int64_t g, int64_t n, int8_t* out, int64_t step_stride, float* d) {
    const uint8_t* p = row + g * kGroupBytes;
    *d = half_to_float(load_u16(p));
    const int64_t subs = round_up(n, 32) / 32;
    for (int64_t sb = 0; sb < G / 32; ++sb) {
      int8_t* o = out + (32 * sb / kStep) * step_stride + (32 * sb) % kStep;
      if (sb < subs)
        decode_q4_sub(p + 2 + 16 * sb, o);
      else
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), _mm256_setzero_si256());
    }
  }
};

template <int NA, int NB, class F>
inline void group_block(const int8_t* ap, int64_t ng, const uint8_t* b0, const uint8_t* b1, const float* dwb,
                        const float* dat, int64_t ldt, float (*acc)[32]) {
  constexpr int64_t G = F::kStep * F::kSteps, AT = 16 * G;  // bytes of one A tile's group
  alignas(64) int32_t cb[32][32];
  for (int r = 0; r < 16 * NA; ++r) std::memset(acc[r], 0, sizeof(float) * 16 * NB);
  for (int64_t g = 0; g < ng; ++g) {
    zero_c<NA, NB>();
    for (int64_t s = 0; s < F::kSteps; ++s) {
      const int64_t boff = (g * G + s * F::kStep) / 4 * 64;
      _tile_loadd(4, ap + g * AT + s * 16 * F::kStep, static_cast<int>(F::kStep));
      _tile_loadd(6, b0 + boff, 64);
      if constexpr (NB > 1) _tile_loadd(7, b1 + boff, 64);
      _tile_dpbssd(0, 4, 6);
      if constexpr (NB > 1) _tile_dpbssd(1, 4, 7);
      if constexpr (NA > 1) {
        _tile_loadd(5, ap + ng * AT + g * AT + s * 16 * F::kStep, static_cast<int>(F::kStep));
        _tile_dpbssd(2, 5, 6);
        if constexpr (NB > 1) _tile_dpbssd(3, 5, 7);
      }
    }
    store_c<NA, NB>(&cb[0][0], 32);
    const __m512 da0 = _mm512_loadu_ps(dat + g * ldt), da1 = _mm512_loadu_ps(dat + g * ldt + 16);
    for (int r = 0; r < 16 * NA; ++r) {
      const __m512 dw = _mm512_set1_ps(dwb[g * 32 + r]);
      _mm512_storeu_ps(acc[r], _mm512_fmadd_ps(_mm512_mul_ps(dw, da0), _mm512_cvtepi32_ps(_mm512_load_si512(cb[r])),
                                               _mm512_loadu_ps(acc[r])));
      if constexpr (NB > 1)
        _mm512_storeu_ps(acc[r] + 16, _mm512_fmadd_ps(_mm512_mul_ps(dw, da1),
                                                      _mm512_cvtepi32_ps(_mm512_load_si512(cb[r] + 16)),
                                                      _mm512_loadu_ps(acc[r] + 16)));
    }
  }
}

template <int G>
void group_a8_matmul_amx(const uint8_t* w, size_t row_bytes, int64_t k, const void* xv, size_t xrb, int64_t m,
                         float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  using F = GroupFmt<G>;
  const int64_t n16 = m >= 16 ? (row_end - row_begin) / 16 * 16 : 0;
  const uint8_t* x = static_cast<const uint8_t*>(xv);
  if (n16 > 0) {
    const int64_t ng = actb_blocks(k, G), hdr = actb_header(k, G);
    const int64_t quads = ng * G / 4, xq = round_up(k, 32) / 4;  // B groups in all, and those in X
    const int64_t chunk = kAmxTokenChunk;
    thread_local std::vector<float> xpack, dat, dwb;
    thread_local std::vector<int8_t> apack;
    if (static_cast<int64_t>(xpack.size()) < chunk * quads) xpack.resize(chunk * quads);
    if (static_cast<int64_t>(dat.size()) < ng * (chunk + 32)) dat.resize(ng * (chunk + 32));
    if (static_cast<int64_t>(dwb.size()) < ng * 32) dwb.resize(ng * 32);
    if (static_cast<int64_t>(apack.size()) < 2 * ng * 16 * G) apack.resize(2 * ng * 16 * G);
    alignas(64) float acc[32][32];
    configure_tiles();
    for (int64_t t0 = 0; t0 < m; t0 += chunk) {
      const int64_t mt = m - t0 < chunk ? m - t0 : chunk, nblocks = (mt + 15) / 16, ldt = nblocks * 16 + 16;
      pack_b_tiles(x + t0 * static_cast<int64_t>(xrb), xrb, hdr, xq, quads, mt, xpack.data());
      for (int64_t g = 0; g < ng; ++g)
        for (int64_t t = 0; t < ldt; ++t) dat[g * ldt + t] = t < mt ? load_f32(x + (t0 + t) * xrb + 4 * g) : 0.f;
      for (int64_t r = 0; r < n16; r += 32) {
        const int64_t na = n16 - r >= 32 ? 2 : 1;
        for (int64_t j = 0; j < 16 * na; ++j) {  // [tile][group][step][16 rows][step bytes]
          const uint8_t* row = w + (row_begin + r + j) * static_cast<int64_t>(row_bytes);
          int8_t* base = apack.data() + (j / 16) * ng * 16 * G;
          for (int64_t g = 0; g < ng; ++g) {
            const int64_t n = k - g * G < G ? k - g * G : G;
            F::decode(row, g, n, base + g * 16 * G + (j % 16) * F::kStep, 16 * F::kStep, &dwb[g * 32 + j]);
          }
        }
        for (int64_t b = 0; b < nblocks; b += 2) {
          const uint8_t* b0 = reinterpret_cast<const uint8_t*>(xpack.data() + b * quads * 16);
          const uint8_t* b1 = b0 + quads * 64;
          const float* dt = dat.data() + 16 * b;
          const int8_t* ap = apack.data();
          const bool two = b + 1 < nblocks;
          if (na == 2 && two) group_block<2, 2, F>(ap, ng, b0, b1, dwb.data(), dt, ldt, acc);
          else if (na == 2) group_block<2, 1, F>(ap, ng, b0, b1, dwb.data(), dt, ldt, acc);
          else if (two) group_block<1, 2, F>(ap, ng, b0, b1, dwb.data(), dt, ldt, acc);
          else group_block<1, 1, F>(ap, ng, b0, b1, dwb.data(), dt, ldt, acc);
          const int64_t tokens = mt - 16 * b < 32 ? mt - 16 * b : 32;
          transpose_block<false>(&acc[0][0], 32, 16 * na, tokens, y + (t0 + 16 * b) * ldy + row_begin + r, ldy);
        }
      }
    }
    _tile_release();
  }
  if (row_begin + n16 < row_end)
    vnni_matmul<Kind::int4_a8, G>(w, row_bytes, k, xv, xrb, m, y, ldy, row_begin + n16, row_end);
}

FormatKernels level_kernels(const Spec& s) {
  if (s.kind == Kind::w8a8 || s.kind == Kind::bf16) {
    // the matvec, the conversion of the activations
    FormatKernels f = lower_entries(Isa::avx512_vnni).kernels(s);
    f.matmul = s.kind == Kind::bf16 ? bf16_matmul_amx : w8a8_matmul_amx;
    f.tiles_bytes = s.kind == Kind::bf16 ? bf16_tiles_bytes : w8a8_tiles_bytes;
    f.tiles_pack = s.kind == Kind::bf16 ? bf16_tiles_pack : w8a8_tiles_pack;
    f.matmul_tiles = s.kind == Kind::bf16 ? bf16_matmul_tiles : w8a8_matmul_tiles;
    f.tiles_min_tokens = 16;
    if (s.kind == Kind::w8a8) {  // prefill from the decode layout: one copy for both
      lower_entries(Isa::avx512_vnni).add_decode_layout(s, f);
      f.tiles_bytes = f.decode_bytes;
      f.tiles_pack = f.decode_pack;
      f.matmul_tiles = w8a8_matmul_decode_tiles;
    }
    return f;
  }
  if (s.kind == Kind::int4_a8) {
    FormatKernels f = lower_entries(Isa::avx512_vnni).kernels(s);  // the matvec, the quantiser
    if (s.group == 128) f.matmul = group_a8_matmul_amx<128>;
    if (s.group == 64) f.matmul = group_a8_matmul_amx<64>;
    lower_entries(Isa::avx512_vnni).add_decode_layout(s, f);
    f.tiles_bytes = f.decode_bytes;  // prefill from the decode layout, expanded per 32-row block
    f.tiles_pack = f.decode_pack;
    f.matmul_tiles = s.group == 128 ? group_matmul_tiles<Kind::int4_a8, 128, Layout::decode_int4>
                   : s.group == 64 ? group_matmul_tiles<Kind::int4_a8, 64, Layout::decode_int4>
                                   : group_matmul_tiles<Kind::int4_a8, 32, Layout::decode_int4>;
    f.tiles_min_tokens = 16;
    return f;
  }
  if (s.kind == Kind::q8_a8) {  // prefill from the decode layout too: one copy for both
    FormatKernels f = lower_entries(Isa::avx512_vnni).kernels(s);
    lower_entries(Isa::avx512_vnni).add_decode_layout(s, f);
    f.tiles_bytes = f.decode_bytes;
    f.tiles_pack = f.decode_pack;
    f.matmul_tiles = group_matmul_tiles<Kind::q8_a8, 32, Layout::decode>;
    f.tiles_min_tokens = 16;
    return f;
  }
  return {};
}

}  // namespace
}  // namespace fmt

namespace isa_entry {
constinit const fmt::FormatEntries fmt_amx{.kernels = fmt::level_kernels};
}  // namespace isa_entry

}  // namespace cibench
CIBENCH_TARGET_END
