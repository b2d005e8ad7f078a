#pragma once
// Float (or any 32-bit) transposes in AVX registers, shared by simd_kernels.inc (the f32 GEMM with
// the tokens along the lanes) and fmt_avx512vnni.cpp (its bf16 twin). Include only inside an AVX2
// (or higher) target region (isa_target.h). Internal linkage (anonymous namespace): each of those
// files gets its own copy, so no inline function compiled for one level can be picked up by
// another. Data movement only: the bits of every element arrive unchanged (NaNs included).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace cibench {
namespace {

// dst[c * ldd + r] (+)= src[r * lds + c] for r, c < 8: an 8 x 8 block of floats transposed in
// registers (8 loads, 24 shuffles, 8 stores; AVX, so in both the AVX2 and the AVX-512 build).
// The element-by-element copies it replaced in pack_xt and in the GEMM's output took 6.8 % of the
// cpu-clock samples of `cibench classify --bench` (DistilBERT shape, 128 tokens, one Zen 4 core);
// with it that forward pass took 101-103 ms instead of 106-107 (three alternating rounds).
template <bool Accumulate>
inline void transpose8x8(const float* src, int64_t lds, float* dst, int64_t ldd) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);      // a0 b0 a1 b1 | a4 b4 a5 b5
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);  // a2 b2 a3 b3 | a6 b6 a7 b7
  }
  for (int i = 0; i < 2; ++i) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));      // column 0 | 4
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));  // column 1 | 5
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));  // 2 | 6
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));  // 3 | 7
  }
  for (int c = 0; c < 4; ++c) {
    __m256 lo = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20), hi = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    if constexpr (Accumulate) {
      lo = _mm256_add_ps(_mm256_loadu_ps(dst + c * ldd), lo);
      hi = _mm256_add_ps(_mm256_loadu_ps(dst + (c + 4) * ldd), hi);
    }
    _mm256_storeu_ps(dst + c * ldd, lo);
    _mm256_storeu_ps(dst + (c + 4) * ldd, hi);
  }
}

// dst[c * ldd + r] (+)= src[r * lds + c] for r < rows, c < cols: 8 x 8 blocks, the edges one by one.
template <bool Accumulate>
inline void transpose_block(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd) {
  const int64_t r8 = rows / 8 * 8, c8 = cols / 8 * 8;
  // Column blocks outer: each 8 x 8 block's 8 destination rows are written along, 32 bytes after
  // 32 bytes, while a block of 8 source columns passes. With rows outer, the GEMMs' outputs (dst = Y,
  // ldd the matrix's rows: 8 KB and more, the same L1 sets) took 64 token rows half a line at a
  // time, evicting each other. matmul128 at avx512_vnni (cibench-microbench, AMD Zen 5, one thread,
  // two alternating rounds) bf16 2048 x 768 330-338 -> 378-380 GOPs, 2048 x 5632 389-396 -> 425-427;
  // TinyStories-110M prefill bf16 1829-1937 -> 1993-2006 tok/s, f32 1199-1220 -> 1228-1248.
  for (int64_t c = 0; c < c8; c += 8)
    for (int64_t r = 0; r < r8; r += 8) transpose8x8<Accumulate>(src + r * lds + c, lds, dst + c * ldd + r, ldd);
  auto one = [&](int64_t r, int64_t c) {
    if constexpr (Accumulate)
      dst[c * ldd + r] += src[r * lds + c];
    else
      std::memcpy(dst + c * ldd + r, src + r * lds + c, sizeof(float));  // bits, whatever the storage
  };
  for (int64_t r = 0; r < r8; ++r)
    for (int64_t c = c8; c < cols; ++c) one(r, c);
  for (int64_t r = r8; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) one(r, c);
}

// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols, and 0 for rows <= r < ldd: a block of
// tokens transposed for the GEMMs with the tokens along the lanes, the lanes past the last token
// zeroed (+0.0; as a bf16 pair, (0, 0)).
inline void pack_lanes(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd) {
  transpose_block<false>(src, lds, rows, cols, dst, ldd);
  if (rows < ldd)
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t r = rows; r < ldd; ++r) dst[c * ldd + r] = 0.f;
}

}  // namespace
}  // namespace cibench
