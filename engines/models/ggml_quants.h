#pragma once
// ggml's Q8_0 and Q4_0 blocks, byte for byte as ggml-common.h lays them out and as ggml-quants.c's
// reference quantisers (quantize_row_q8_0_ref, quantize_row_q4_0_ref) round, so that a GGUF file
// cibench writes holds the bytes llama-quantize would write for the same f32 values:
//   Q8_0 (34 bytes per 32 values): f16 d, then 32 int8 q;        value = d * q,
//          d = amax / 127, q = roundf(x * (1/d)) (halves away from zero).
//   Q4_0 (18 bytes per 32 values): f16 d, then 16 bytes of nibbles; value = d * (q - 8),
//          d = m / -8 where m is the value of largest magnitude (its sign kept; the first such
//          value when several tie), q = min(15, trunc(x * (1/d) + 8.5)), byte j = q[j] | q[j+16] << 4.
// The scale the values are divided by is the f32 d; the file stores d rounded to f16 (round to
// nearest even), which dequantisation reads back. An all-zero block has d = 0 and every q at its
// zero point (0 for Q8_0, 8 for Q4_0).
#include <cstddef>
#include <cstdint>

namespace cibench {

constexpr int64_t kGgmlBlock = 32;          // values per Q8_0 / Q4_0 block
constexpr size_t kQ8_0BlockBytes = 2 + 32;  // f16 d + 32 int8
constexpr size_t kQ4_0BlockBytes = 2 + 16;  // f16 d + 32 nibbles

// `n` values (a multiple of 32) of `x` into n / 32 blocks at `out`. The caller checks n.
void quantize_q8_0(const float* x, int64_t n, uint8_t* out);
void quantize_q4_0(const float* x, int64_t n, uint8_t* out);
// n / 32 blocks at `in` into `n` values: exactly d * q (Q8_0), d * (q - 8) (Q4_0), d from f16.
void dequantize_q8_0(const uint8_t* in, int64_t n, float* y);
void dequantize_q4_0(const uint8_t* in, int64_t n, float* y);

}  // namespace cibench
