#pragma once
// ggml's quantised blocks as GGUF files hold them, dequantised exactly as ggml's reference
// dequantisers do (one f32 rounding per product, in the same order; no fused multiply-add), and
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

// ---- Reading GGUF tensors --------------------------------------------------------------------
// Block layouts (ggml-common.h), all little-endian, f16 = IEEE half; K-quant super-blocks hold 256
// values in sub-blocks of 32 (Q4_K, Q5_K) or 16 (Q2_K, Q3_K, Q6_K):
//   Q4_1  (20 B / 32): f16 d, f16 m, 16 B nibbles (low = j, high = j + 16);   v = d q + m
//   Q5_0  (22 B / 32): f16 d, u32 qh (bit j = 5th bit of value j), 16 B nibbles;  v = d (q - 16)
//   Q5_1  (24 B / 32): f16 d, f16 m, u32 qh, 16 B nibbles;                    v = d q + m
//   Q2_K  (84 B / 256): 16 B scales (low nibble scale, high nibble min, one per 16 values),
//         64 B 2-bit codes, f16 d, f16 dmin;          v = d sc q - dmin mn
//   Q3_K (110 B / 256): 32 B hmask (high bit set = no -4), 64 B 2-bit codes, 12 B of 16 6-bit
//         scales (biased by 32), f16 d;               v = d (sc - 32) (q - 4 [if the high bit is 0])
//         scale j: low 4 bits from byte j (j < 8, low nibble) or byte j - 8 (high nibble), high 2
//         bits = bits 2 (j / 4) .. 2 (j / 4) + 1 of byte 8 + j % 4
// In the 2-bit types (Q2_K, Q3_K) each 128 values take 32 code bytes: value 32 s + l of the
// 128 is bits 2 s .. 2 s + 1 of byte l (and Q3_K's high bit is bit s + 4 h of hmask[l], h the
// 128-value half); sub-block i of 16 values has scale i. Q6_K per 128 values: 64 bytes ql and
// 32 bytes qh; value l + 32 s = (ql[l + 32 (s & 1)] nibble s / 2) | ((qh[l] >> 2 s) & 3) << 4.
//   Q4_K (144 B / 256): f16 d, f16 dmin, 12 B of 8 6-bit scales + 8 6-bit mins, 128 B nibbles
//         (per 64 values: 32 bytes, low nibbles = the first 32, high = the next 32);
//                                                     v = d sc q - dmin mn
//   Q5_K (176 B / 256): as Q4_K plus 32 B qh between scales and nibbles (bit 2i / 2i+1 of qh[l]
//         = 5th bit of value l of the low / high half of the i-th 64 values)
//   Q6_K (210 B / 256): 128 B low nibbles, 64 B 2-bit high parts, 16 int8 scales, f16 d;
//                                                     v = d sc (q - 32)
// The 12 bytes of K-quant 6-bit scales/mins (Q4_K, Q5_K): for sub-block j < 4, scale = b[j] & 63
// and min = b[j + 4] & 63; for j >= 4, scale = (b[j + 4] & 15) | (b[j - 4] >> 6) << 4 and
// min = (b[j + 4] >> 4) | (b[j] >> 6) << 4.

// ggml type ids (the GGUF tensor type field).
enum GgmlTypeId : uint32_t {
  kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlQ4_1 = 3, kGgmlQ5_0 = 6, kGgmlQ5_1 = 7,
  kGgmlQ8_0 = 8, kGgmlQ2_K = 10, kGgmlQ3_K = 11, kGgmlQ4_K = 12, kGgmlQ5_K = 13, kGgmlQ6_K = 14,
  kGgmlBF16 = 30,
};

// Whether cibench reads tensors of ggml type t: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
bool ggml_type_readable(uint32_t t);
// Their names, comma separated, for error messages.
const char* ggml_readable_types();
// Values per block and bytes per block of a readable type (1 and the element size for F32 /
// F16 / BF16).
int64_t ggml_block_values(uint32_t t);
size_t ggml_block_bytes(uint32_t t);
// `n` values (whole blocks, n a multiple of ggml_block_values(t)) of readable type t starting at
// `in` (ggml_block_bytes(t) * n / ggml_block_values(t) bytes) into y. The caller checks t and n.
void dequantize_ggml(uint32_t t, const uint8_t* in, int64_t n, float* y);

}  // namespace cibench
