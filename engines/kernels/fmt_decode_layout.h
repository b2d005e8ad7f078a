#pragma once
// The decode layout of the packed rows: the weights of 16 rows at a time rearranged so that one
// token's matvec reads them as one stream, with no reduction across vector lanes. Its kernels:
// fmt_decode_512.inc (the int8-activation rows, vpdpbusd, fmt_avx512vnni.cpp) and
// fmt_int4_decode_512.inc (the int4 weight-only rows, f32 activations, fmt_avx512.cpp); why one
// stream: fmt_decode_512.inc. Scalar code and a prefetch only; each kernel file includes it in its
// target region, into an anonymous namespace of its own, as vec_avx512.h.
//
// Layout (WeightMatrix::decode_for keeps it beside the rows): a row is a sequence of units, each
// a header (the scales) and data (a multiple of 4 bytes): per group its header and codes (int4
// gG and int4_gG_a8: 16 nibble bytes per sub-block of 32, a ragged last group as padded in the
// rows; int8_g32_a8: 32 int8 q), or (w8a8, w8a7) the whole row, its header (w8a8: an f32 scale;
// w8a7: the f32 scale and the i32 sum of its values) and round_up(K, 32) int8 q.
// For each block of 16 rows (rows / 16 whole blocks; the rows past them stay with the row
// kernel), unit by unit:
//   [the 16 rows' headers: row i at bytes h i .. h i + h - 1 (h = 2: 32 bytes, h = 4: 64)]
//   [64-byte vectors: vector v, bytes 4 i .. 4 i + 3 = data bytes 4 v .. 4 v + 3 of row i's unit]
// The headers: the f16 d (h = 2), w8a8's f32 scale (h = 4); asymmetric int4 (4 bytes a row: f16 d,
// f16 m) has the 16 rows' d (32 bytes), then their m (32 bytes), so each is one vcvtph2ps, and
// w8a7 (8 bytes a row) the 16 scales (64 bytes), then the 16 sums (64 bytes). int4: the low
// nibbles of sub-block s's vector v are its columns 4v .. 4v + 3, the high ones 16 + 4v .. 16 +
// 4v + 3, codes 0..15 unsigned; w8a8's int8 values are biased to unsigned (XOR 0x80),
// int8_g32_a8's and w8a7's stay signed. So the layout has the rows' bytes exactly, and block b
// starts at b * 16 * row_bytes.
#include <xmmintrin.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "engines/core/cpu.h"
#include "engines/kernels/fmt_common.h"

namespace cibench {
namespace fmt {
namespace {

constexpr int64_t kDecodeRows = 16;
// How far ahead (bytes) the decode kernels prefetch the layout into L2: kDecodePrefetchBytes
// (fmt_common.h), set in baseline code from the CPU (formats.cpp, where the figures are). Read as
// a plain load in the kernels' loops: a call there (a function-local static's guard) made GCC
// spill the accumulators around it (int4_g32 at avx512 ~35 -> ~28 GB/s).

// One format's units. K: Kind::int4_a8 and Kind::int4 (G = 32, 64, 128; Asym: int4 with a zero
// point), Kind::q8_a8 (G = 32), Kind::w8a8, Kind::w8a7.
template <Kind K, int G, bool Asym = false>
struct DecodeUnits {
  static constexpr bool whole_row = K == Kind::w8a8 || K == Kind::w8a7;
  static constexpr int64_t header = K == Kind::w8a7 ? kW8a7Header : (whole_row || Asym ? 4 : 2);
  // headers of two fields (asymmetric int4's f16 d and m, w8a7's f32 scale and i32 sum) are laid
  // out as the 16 rows' first fields, then their second ones
  static constexpr bool split_header = Asym || K == Kind::w8a7;
  static int64_t units(int64_t k) { return whole_row ? 1 : (k + G - 1) / G; }
  // data bytes of unit u (a ragged last int4 group: its sub-blocks only)
  static int64_t data(int64_t k, int64_t u) {
    if (whole_row) return round_up(k, 32);
    if (K == Kind::q8_a8) return 32;
    const int64_t n = (u + 1) * G <= k ? G : k - u * G;
    return round_up(n, 32) / 2;
  }
};

// The rows' bytes of the whole blocks; w8a8 with round_up(K, 32) an odd multiple of 32 adds 512
// bytes of slack, so the AMX prefill's last 64-column tile of the last block stays inside.
template <Kind K, int G, bool Asym = false>
size_t decode_bytes_512(int64_t rows, int64_t k) {
  using U = DecodeUnits<K, G, Asym>;
  int64_t row = 0;
  for (int64_t u = 0; u < U::units(k); ++u) row += U::header + U::data(k, u);
  const int64_t blocks = rows / kDecodeRows;
  const int64_t slack = K == Kind::w8a8 && blocks > 0 && round_up(k, 32) % 64 ? 512 : 0;
  return static_cast<size_t>(blocks * kDecodeRows * row + slack);
}

template <Kind K, int G, bool Asym = false>
void decode_pack_512(const uint8_t* w, size_t row_bytes, int64_t rows, int64_t k, uint8_t* dst) {
  using U = DecodeUnits<K, G, Asym>;
  constexpr bool bias = K == Kind::w8a8;
  const int64_t nu = U::units(k);
  for (int64_t b = 0; b < rows / kDecodeRows; ++b) {
    const uint8_t* w0 = w + b * kDecodeRows * static_cast<int64_t>(row_bytes);
    int64_t off = 0;  // the unit's offset in a row
    for (int64_t u = 0; u < nu; ++u) {
      const int64_t nd = U::data(k, u);
      // 64 vectors (4 KB) at a time over the 16 rows, so each pass reads 16 short runs
      for (int64_t v0 = 0; v0 < nd / 4; v0 += 64) {
        const int64_t v1 = v0 + 64 < nd / 4 ? v0 + 64 : nd / 4;
        for (int i = 0; i < kDecodeRows; ++i) {
          const uint8_t* p = w0 + i * static_cast<int64_t>(row_bytes) + off;
          if (v0 == 0) {
            if (U::split_header) {  // the first field of the 16 rows, then their second
              constexpr int64_t f = U::header / 2;
              std::memcpy(dst + f * i, p, f);
              std::memcpy(dst + f * kDecodeRows + f * i, p + f, f);
            } else {
              std::memcpy(dst + U::header * i, p, U::header);
            }
          }
          for (int64_t v = v0; v < v1; ++v) {
            uint32_t q = load_u32(p + U::header + 4 * v);
            if (bias) q ^= 0x80808080u;
            std::memcpy(dst + U::header * kDecodeRows + 64 * v + 4 * i, &q, 4);
          }
        }
      }
      dst += (U::header + nd) * kDecodeRows;
      off += U::header + nd;
    }
  }
}

inline void decode_prefetch(const uint8_t* p, int64_t n) {
  const uint8_t* a = p + kDecodePrefetchBytes;
  for (int64_t l = 0; l < n; l += 64) _mm_prefetch(reinterpret_cast<const char*>(a + l), _MM_HINT_T1);
}

// Rows [row_begin, row_end) split on the layout's blocks: span(r0, r1, whole) for the rows before
// the first whole 16-row block inside the range, the whole blocks together (whole = true), and the
// rows after the last (a range not on block bounds, the rows past the last whole block).
template <typename Span>
inline void decode_spans(int64_t row_begin, int64_t row_end, const Span& span) {
  const int64_t b0 = (row_begin + kDecodeRows - 1) / kDecodeRows, b1 = row_end / kDecodeRows;
  if (b0 >= b1) {
    span(row_begin, row_end, false);
    return;
  }
  if (b0 * kDecodeRows > row_begin) span(row_begin, b0 * kDecodeRows, false);
  span(b0 * kDecodeRows, b1 * kDecodeRows, true);
  if (b1 * kDecodeRows < row_end) span(b1 * kDecodeRows, row_end, false);
}

// The same for a decode matvec: block(b) for each whole block, rows(r0, r1) for the others, which
// the row kernel takes.
template <typename Rows, typename Block>
inline void decode_blocks(int64_t row_begin, int64_t row_end, const Rows& rows, const Block& block) {
  decode_spans(row_begin, row_end, [&](int64_t r0, int64_t r1, bool whole) {
    if (!whole) {
      rows(r0, r1);
      return;
    }
    for (int64_t b = r0 / kDecodeRows; b < r1 / kDecodeRows; ++b) block(b);
  });
}

// group(g, S) for each group g of a row of k columns in order, S its 32-column sub-blocks as a
// std::integral_constant: G / 32 for the whole groups, fewer for a ragged last one (its data in the
// layout: the sub-blocks its values cover), so a kernel's group step is instantiated per count.
template <int S, typename Group>
inline void decode_ragged_group(int64_t g, int64_t subs, const Group& group) {
  if constexpr (S > 1) {
    if (subs < S) return decode_ragged_group<S - 1>(g, subs, group);
  }
  group(g, std::integral_constant<int, S>{});
}
template <int G, typename Group>
inline void decode_each_group(int64_t k, const Group& group) {
  const int64_t full = k / G;
  for (int64_t g = 0; g < full; ++g) group(g, std::integral_constant<int, G / 32>{});
  if (full * G < k) decode_ragged_group<G / 32>(full, (k - full * G + 31) / 32, group);
}

// One token's activations quantised per block of G (the int4_gG_a8 / int8_g32_a8 row: the blocks'
// f32 scales, their int32 sums, then the int8 values from actb_header) as the layout kernels of
// those rows read them, group g's: values(g), sum(g), scale(g).
template <int G>
class ActBlocks {
 public:
  ActBlocks(const void* x, int64_t k)
      : x_(static_cast<const uint8_t*>(x)), ng_((k + G - 1) / G), a8_(x_ + actb_header(k, G)) {}
  const uint8_t* values(int64_t g) const { return a8_ + g * G; }
  int32_t sum(int64_t g) const { return static_cast<int32_t>(load_u32(x_ + 4 * ng_ + 4 * g)); }
  float scale(int64_t g) const { return load_f32(x_ + 4 * g); }

 private:
  const uint8_t* x_;
  int64_t ng_;
  const uint8_t* a8_;
};

// One token's f32 activations as the int4 weight-only layout kernels read them: group(g) is x from
// group g's first column, the ragged last group from a copy zero padded to its sub-blocks; with
// `sums`, sum(g) is the group's activation sum in column order, as the generic twin sums it.
template <int G>
class DecodeActs {
 public:
  DecodeActs(const float* x, int64_t k, bool sums) : x_(x), full_(k / G) {
    std::memcpy(tail_, x + full_ * G, static_cast<size_t>(k - full_ * G) * sizeof(float));
    if (!sums) return;
    const int64_t ng = (k + G - 1) / G;
    if (ng > kStackGroups) {
      heap_.resize(static_cast<size_t>(ng));
      sx_ = heap_.data();
    }
    for (int64_t g = 0; g < ng; ++g) {
      float t = 0.f;
      for (int64_t c = g * G; c < k && c < (g + 1) * G; ++c) t += x[c];
      sx_[g] = t;
    }
  }
  DecodeActs(const DecodeActs&) = delete;
  DecodeActs& operator=(const DecodeActs&) = delete;
  const float* group(int64_t g) const { return g < full_ ? x_ + g * G : tail_; }
  float sum(int64_t g) const { return sx_[g]; }

 private:
  static constexpr int64_t kStackGroups = 1024;
  const float* x_;
  int64_t full_;
  alignas(64) float tail_[G] = {};
  float stack_[kStackGroups];
  std::vector<float> heap_;
  float* sx_ = stack_;
};

}  // namespace
}  // namespace fmt
}  // namespace cibench
