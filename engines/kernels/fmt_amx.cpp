// AMX kernels. This file alone is compiled with the AVX-512 VNNI/BF16 flags plus
// -mamx-tile -mamx-int8 -mamx-bf16.
//   w8a8 matmul (prefill): AMX-INT8 tiles (tdpbssd), 16 tokens x 16 output channels per C tile,
//   K in steps of 64; the weight rows of a 16-row block are repacked once per call into the
//   VNNI tile layout (B[k/4][n*4 + k%4]) in a stack buffer and reused by every token block;
//   activation rows are staged 16 x 64 bytes at a time (zero padded). int32 accumulation is
//   exact, so results equal the generic twin bit for bit. K > 8192 uses the VNNI kernel.
//   w8a8 matvec: the AVX-512 VNNI kernel (one token does not fill a tile).
// Every other row falls back to its AVX-512 VNNI / AVX-512 kernels.
// Written to the Intel intrinsics documentation; dispatched only when cpuid reports AMX and the
// kernel granted the tile permission (engines/core/cpu.cpp). The twin tests run it only on a host
// with AMX, and skip it (saying so) on every other.
#include <immintrin.h>

#include <cstring>

#include "engines/kernels/fmt_common.h"

namespace cibench {
namespace fmt {
namespace {

struct Dot64Vnni {
  static inline __m512i acc(__m512i acc, __m512i a, __m512i w, __m512i wabs) {
    const __m512i sa = _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(w), _mm512_setzero_si512(), a);
    return _mm512_dpbusd_epi32(acc, wabs, sa);
  }
};

#include "engines/kernels/fmt_w8a8_512.inc"

// ldtilecfg layout (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

constexpr int64_t kAmxMaxK = 8192;  // 16 rows x 8192 bytes = 128 KB of repacked weights on stack

void w8a8_matmul_amx(const uint8_t* w, size_t row_bytes, int64_t k, const void* x,
                     size_t x_row_bytes, int64_t m, float* y, int64_t ldy, int64_t row_begin,
                     int64_t row_end) {
  const int64_t kp = round_up(k, 32);
  const int64_t k64 = round_up(k, 64);
  if (k64 > kAmxMaxK || m < 16) {
    w8a8_matmul_512<Dot64Vnni>(w, row_bytes, k, x, x_row_bytes, m, y, ldy, row_begin, row_end);
    return;
  }
  const uint8_t* xa = static_cast<const uint8_t*>(x);
  TileConfig cfg{};
  cfg.palette_id = 1;
  for (int t = 0; t < 3; ++t) {  // tmm0 = C (16 x 16 int32), tmm1 = A (16 x 64 int8), tmm2 = B
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
  alignas(64) int8_t bbuf[kAmxMaxK * 16];  // (k64 / 64) blocks of 16 x 64 bytes, VNNI layout
  alignas(64) int8_t abuf[16 * 64];
  alignas(64) int32_t cbuf[16 * 16];
  for (int64_t r0 = row_begin; r0 < row_end; r0 += 16) {
    const int64_t nr = row_end - r0 < 16 ? row_end - r0 : 16;
    // Repack: block s, tile row kk, column n * 4 + b  <-  w[r0 + n][64 s + 4 kk + b]
    for (int64_t s = 0; s < k64 / 64; ++s)
      for (int64_t kk = 0; kk < 16; ++kk)
        for (int64_t n = 0; n < 16; ++n)
          for (int64_t b = 0; b < 4; ++b) {
            const int64_t col = 64 * s + 4 * kk + b;
            bbuf[s * 1024 + kk * 64 + n * 4 + b] =
                n < nr && col < kp ? static_cast<int8_t>(w[(r0 + n) * row_bytes + 4 + col]) : 0;
          }
    for (int64_t i0 = 0; i0 < m; i0 += 16) {
      const int64_t ni = m - i0 < 16 ? m - i0 : 16;
      _tile_zero(0);
      for (int64_t s = 0; s < k64 / 64; ++s) {
        for (int64_t i = 0; i < 16; ++i) {
          const int64_t c0 = 64 * s;
          const int64_t len = i < ni ? (kp - c0 < 64 ? kp - c0 : 64) : 0;
          if (len > 0)
            std::memcpy(abuf + i * 64, xa + (i0 + i) * x_row_bytes + kActHeader + c0,
                        static_cast<size_t>(len));
          if (len < 64) std::memset(abuf + i * 64 + len, 0, static_cast<size_t>(64 - len));
        }
        _tile_loadd(1, abuf, 64);
        _tile_loadd(2, bbuf + s * 1024, 64);
        _tile_dpbssd(0, 1, 2);
      }
      _tile_stored(0, cbuf, 64);
      for (int64_t i = 0; i < ni; ++i) {
        const float sx = load_f32(xa + (i0 + i) * x_row_bytes);
        for (int64_t n = 0; n < nr; ++n)
          y[(i0 + i) * ldy + r0 + n] = static_cast<float>(cbuf[i * 16 + n]) *
                                       (load_f32(w + (r0 + n) * row_bytes) * sx);
      }
    }
  }
  _tile_release();
}

}  // namespace

FormatKernels kernels_amx(const Spec& s) {
  if (s.kind == Kind::w8a8) return FormatKernels{w8a8_matvec_512<Dot64Vnni>, w8a8_matmul_amx};
  return {};
}

}  // namespace fmt
}  // namespace cibench
