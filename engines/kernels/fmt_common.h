#pragma once
// Byte layouts of the packed weight formats, and how the format table reaches each level's kernels.
//
// The rows of the format table (formats.cpp) are built from these layouts; the kernels live in
// one source per ISA (fmt_generic.cpp, fmt_avx2.cpp, fmt_avx512.cpp, fmt_avx512vnni.cpp,
// fmt_amx.cpp), the SIMD ones partly generated from shared templates (fmt_dense.inc, the *_512.inc
// files) over a vector-traits type, each above the baseline in a target region of its own
// level (isa_target.h) and reached only through its entry table (FormatEntries below).
//
// Layouts (all little-endian, rows packed independently; K = columns):
//   bf16         uint16 x K (upper half of the IEEE float, round-to-nearest-even)
//   int8         [f32 scale][int8 x K]                         w = scale * q, q in [-127, 127]
//   w8a8         [f32 scale][int8 x round_up(K, 32)]           zero padded so kernels need no tails
//   w8a7         [f32 scale][i32 sum of the int8 values][int8 x round_up(K, 32)]   (w8a8's values)
//   int4 gG      groups of G along K (the last one ragged when G does not divide K), each
//                [f16 d]([f16 m] asym)[nibbles: 16 bytes per 32-element sub-block]; in a sub-block
//                byte j holds element j (low nibble) and element 16 + j (high nibble); a ragged
//                group is padded to whole sub-blocks with code 8 (sym) / 0 (asym).
//                sym: w = d * (q - 8);  asym: w = d * q + m
//   f32_sparse   [u32 n][f32 value x n][u16 column x n]        n = nonzeros rounded up to 8
//   int8_sparse  [u32 n][f32 scale][u16 base x n/8][u8 offset x n][int8 x n]   n = 8 x groups
//                entry j sits at column base[j / 8] + offset[j]. A group of 8 entries starts at a
//                non-zero (base = its column) and takes the next non-zeros while they are fewer
//                than 256 columns past the base; a short group is padded with entries repeating
//                its last offset with value 0 (columns stay ascending). 2.25 bytes per entry; any
//                gap is allowed, a row without non-zeros has n = 0.
//   int8_bs      [u32 nb][f32 scale][u16 block x nb][int8 x 16 x nb]   1x16 blocks along K
//   int8_24      [f32 scale] then per 16 columns (4 groups of 4): [int8 x 8 values][u32 index
//                nibbles]: value j (0..7) sits at column 8 * (j / 4) + nibble j of its 16 columns
// Sparse rows (f32_sparse, int8_sparse, int8_bs) have a size that depends on the data; packed in
// a WeightMatrix they are stored back to back behind a row-offset table (see matrix.h). Their
// kernels accept either form: row_bytes > 0 = fixed stride, row_bytes == 0 = offset table at w.
//
// Activations for int8 dot products (w8a8): [f32 scale][28 bytes pad][int8 x round_up(K, 32)],
// quantised per row (token) symmetric to [-127, 127], zero padded.
//
// Activations rounded to bf16 (the bf16 row's kernels at avx512_vnni): uint16 x round_up(K, 32),
// each f32_to_bf16(x) (round to nearest even), zero padded. A product of two bf16 values is exact
// in f32 (8 x 8 significant bits), so a dot product of such rows differs between twins only in
// the order of its f32 sums. (vdpbf16ps also treats subnormal inputs as zero and flushes
// subnormal results: differences below 2^-126 per term, far inside that order's bound.)
//
// Activations of w8a7: [f32 scale][i32 zero point z][24 bytes pad][uint8 x round_up(K, 32)],
// quantised per row (token) asymmetric to 7 bits: scale = (max(x, 0) - min(x, 0)) / 127,
// q = clamp(round(x / scale) + z, 0, 127), z = clamp(round(-min / scale), 0, 127); padding 0.
// Seven bits keep every pair of unsigned x signed products of _mm256_maddubs_epi16 inside int16
// (2 x 127 x 127 < 32767), so AVX2 needs no sign trick (what fbgemm's reduce_range does for
// PyTorch's dynamic quantisation). dot = scale_w * scale_x * (sum(q w) - z * sum(w)), exact in
// int32 up to the float product.
//
// int4_gG_a8 weights: the int4 gG symmetric layout above, unchanged. Their activations are
// quantised per block of G values (the blocks line up with the weight groups, the last one ragged):
//   [f32 scale x nb][i32 sum of the block's int8 values x nb][pad to a multiple of 32 bytes]
//   [int8 x round_up(K, 32)]                       nb = ceil(K / G), values zero padded
// symmetric to [-127, 127] per block. The per-block sums let SIMD kernels multiply the unsigned
// codes q (0..15) and correct with -8 * sum: sum((q - 8) a) = sum(q a) - 8 sum(a), exact in int32.
// Per group the dot product is (d_w * d_a) * float(int32 sum), accumulated in group order with
// fma, the same in every twin.
//
// int8_g32_a8 weights: ggml's block_q8_0 byte for byte, blocks of 32 along K, each
//   [f16 d][int8 q x 32]                           34 bytes, w = d * q, q in [-127, 127]
// d = amax / 127 rounded to f16 (round to nearest even), q = roundf(x * (1 / d)) with the f32 d
// (ggml's quantize_row_q8_0_ref). A ragged last block is padded with q = 0 to 32 values (a row
// with K a multiple of 32 is exactly ggml's row). Activations: the int4_g32_a8 rows above (G = 32,
// the blocks line up with the weight blocks). Per block the int32 sum(q a) is exact; the dot
// product is acc = fma(d_w * d_a, float(sum), acc) in block order, as for int4_gG_a8.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <vector>

#include "engines/core/format.h"
#include "engines/kernels/half.h"

namespace cibench {
namespace fmt {

enum class Kind : uint8_t { bf16, int8, w8a8, w8a7, int4, f32_sparse, int8_sparse, int8_bs, int8_24, int4_a8, q8_a8 };

// What a kernel getter needs to know about a row.
struct Spec {
  Kind kind;
  int group = 0;      // int4, int4_a8: 32, 64 or 128
  bool asym = false;  // int4: zero point (min) stored per group
};

constexpr int64_t kSparseBlock = 16;      // int8_bs block width along K
constexpr int64_t kActHeader = 32;        // bytes before the int8 values of an activation row
constexpr int64_t kMaxSparseCols = 65536; // u16 column indices
constexpr int64_t kSparseGroup = 8;       // int8_sparse entries per group (one u16 base)
constexpr int64_t kSparseGroupBytes = 2 + 2 * kSparseGroup;  // base + u8 offsets + int8 values

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// ---- scalar conversions (shared by every ISA so the twins agree bit for bit) -----------------
inline float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
// IEEE half -> float (the int4 scales): half_to_float in engines/kernels/half.h, exact.
inline uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const float a = std::fabs(f);
  if (!(a < 65504.f)) return static_cast<uint16_t>(sign | (std::isnan(f) ? 0x7e00u : 0x7bffu));
  if (a < 6.103515625e-05f) {  // subnormal half
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.f)));
  }
  uint32_t v;
  std::memcpy(&v, &a, 4);
  uint32_t exp = ((v >> 23) & 0xff) - 112, man = v & 0x7fffffu;
  // round to nearest even on the 13 dropped bits
  uint32_t r = (exp << 10) | (man >> 13);
  const uint32_t rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}

inline float load_f32(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Row r of a weight buffer: fixed stride, or (row_bytes == 0) via the offset table at w.
inline const uint8_t* row_ptr(const uint8_t* w, size_t row_bytes, int64_t r) {
  if (row_bytes) return w + static_cast<size_t>(r) * row_bytes;
  return w + reinterpret_cast<const uint64_t*>(w)[r];
}

// Software prefetch of the bytes [p, p + n) (one hint per 64-byte line; never faults, so it may
// run past the end of a buffer). Decode matvecs walk NR rows at once; those rows are adjacent, so
// the next group of NR rows is the NR * row_bytes bytes right after them. At column offset c
// (bytes into a row) a kernel prefetches next + NR * c, for as many bytes as its step reads over
// the NR rows: the next group arrives in time, in address order, however short the rows are.
inline void prefetch_span(const uint8_t* p, int64_t n) {
  for (int64_t i = 0; i < n; i += 64) __builtin_prefetch(p + i, 0, 3);
}

// ---- int4 group geometry -----------------------------------------------------------------
inline int64_t int4_hdr(bool asym) { return asym ? 4 : 2; }
inline int64_t int4_group_bytes(int64_t group_len, bool asym) {
  return int4_hdr(asym) + round_up(group_len, 32) / 2;
}
inline size_t int4_row_bytes(int64_t k, int64_t group, bool asym) {
  const int64_t full = k / group, tail = k % group;
  return static_cast<size_t>(full * int4_group_bytes(group, asym) +
                             (tail ? int4_group_bytes(tail, asym) : 0));
}

// ---- int8_g32_a8 (Q8_0) block geometry ------------------------------------------------------
constexpr int64_t kQ8Block = 32;       // values per block
constexpr int64_t kQ8BlockBytes = 34;  // f16 d + 32 int8
inline size_t q8_row_bytes(int64_t k) { return static_cast<size_t>((k + kQ8Block - 1) / kQ8Block * kQ8BlockBytes); }

// ---- int8 activation rows (w8a8) -----------------------------------------------------------
inline size_t act8_row_bytes(int64_t k) { return static_cast<size_t>(kActHeader + round_up(k, 32)); }
constexpr int64_t kW8a7Header = 8;  // w8a7 weight row: f32 scale + i32 sum of the values

// Round to nearest even for |v| < 2^22 without libm (the same bits in every twin). Callers clamp
// a product before rounding it, so no FMA contraction can fuse the multiply into the add.
inline float round_even_small(float v) { return (v + 12582912.f) - 12582912.f; }
// nearbyint(v) clamped to [-127, 127] (the int8 weight and activation quantisers of every
// twin): clamping first changes nothing, and it keeps the product that v usually is apart from
// the rounding add.
inline int8_t round_clamp127(float v) {
  const float c = v < -127.f ? -127.f : (127.f < v ? 127.f : v);
  return static_cast<int8_t>(round_even_small(c));
}
inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// w8a7 activation parameters from the row's min and max (both already folded with 0): every
// twin computes them with this one function, so the scale, its inverse and z agree bit for bit.
struct Act7Params {
  float scale, inv, zf;
};
inline Act7Params act7_params(float mn, float mx) {
  Act7Params p;
  p.scale = (mx - mn) / 127.f;
  p.inv = p.scale > 0.f ? 1.f / p.scale : 0.f;
  const float z = -mn * p.inv;
  p.zf = round_even_small(z < 0.f ? 0.f : (z > 127.f ? 127.f : z));
  return p;
}
// One value: clamp(round(clamp(x * inv, -128, 128)) + z, 0, 127).
inline uint8_t act7_q(float x, const Act7Params& p) {
  float t = x * p.inv;
  t = t < -128.f ? -128.f : (t > 128.f ? 128.f : t);
  float q = round_even_small(t) + p.zf;
  q = q < 0.f ? 0.f : (q > 127.f ? 127.f : q);
  return static_cast<uint8_t>(q);
}

// ---- int8 activation rows quantised per block of g (int4_gG_a8) ---------------------------
inline int64_t actb_blocks(int64_t k, int64_t g) { return (k + g - 1) / g; }
inline int64_t actb_header(int64_t k, int64_t g) { return round_up(8 * actb_blocks(k, g), 32); }
inline size_t actb_row_bytes(int64_t k, int64_t g) {
  return static_cast<size_t>(actb_header(k, g) + round_up(k, 32));
}

// ---- bf16 activation rows --------------------------------------------------------------------
inline size_t actbf16_row_bytes(int64_t k) { return static_cast<size_t>(2 * round_up(k, 32)); }
// The reference conversion and the generic kernels on such rows (fmt_generic.cpp).
const ActVariant& bf16_act_variant();

// ---- the kernels of each level ---------------------------------------------------------------
// The generic ones, baseline code (fmt_generic.cpp): {nullptr, nullptr} for a Spec it has none of.
FormatKernels kernels_generic(const Spec& s);

// What the kernel file of a level above the baseline (fmt_avx2.cpp, fmt_avx512.cpp,
// fmt_avx512vnni.cpp, fmt_amx.cpp) gives out: a constant table of pointers into code compiled for
// that level (engines/kernels/isa_entries.h, isa_target.h). Reading it runs none of that code;
// format_entries() hands it out only where the level is supported.
struct FormatEntries {
  // The level's kernels of a row ({} where the level has none of its own for that Spec).
  FormatKernels (*kernels)(const Spec& s) = nullptr;
  // Decode from the rows laid out in 16-row blocks: sets decode_bytes, decode_pack and
  // matvec_decode. avx512_vnni (fmt_decode_512.inc): int8_g32_a8 (Kind::q8_a8), w8a8 (and
  // w8a8_static), w8a7 and int4_gG_a8, over the row matvecs format_table() gives those rows on Intel
  // CPUs; avx512: the int4 gG weight-only rows (Kind::int4, f32 activations;
  // fmt_int4_decode_512.inc) over their AVX-512 row matvec, and int4_gG_a8 on AVX-512 BW (no VNNI)
  // over the AVX2 row matvec; avx2: the same layout read at 256 bits over the AVX2 row matvec
  // (int4 gG, int4_gG_a8, int8_g32_a8). Nothing for other kinds. format_table() adds it where it
  // measured faster (formats.cpp). nullptr where the level has none.
  void (*add_decode_layout)(const Spec& s, FormatKernels& f) = nullptr;
  // avx512_vnni only (nullptr elsewhere), the kernels format_table() swaps in on some CPUs:
  // int4_g32_a8's matvec over 16 long row streams (fmt_int4a8_512.inc), on Intel's;
  decltype(FormatKernels::matvec) int4g32a8_streams_matvec = nullptr;
  // bf16's matmul on f32 FMAs (the same products and f32 sums as vdpbf16ps, which runs at half
  // the FMA rate on Intel's cores), on Intel's;
  decltype(FormatKernels::matmul) bf16_fma_matmul = nullptr;
  // bf16's matmul with the lane-form GEMM on blocks of 32 tokens (2 x 12 register tiles) instead
  // of 64 (4 x 6), on AMD's from Zen 5;
  decltype(FormatKernels::matmul) bf16_matmul_32_token_blocks = nullptr;
  // w8a8's prefill reading its whole 16-row blocks from the decode layout in place
  // (FormatKernels::matmul_tiles), and w8a7's (its weights signed in the layout, the row sums
  // beside the scales), where the row has the layout.
  decltype(FormatKernels::matmul_tiles) w8a8_matmul_layout = nullptr;
  decltype(FormatKernels::matmul_tiles) w8a7_matmul_layout = nullptr;
};
// The gate between baseline code and code above the baseline: the entry table of `level`'s
// kernel file, or nullptr when that level is not supported (isa_supported: the CPU lacks it, or it
// is above CIBENCH_ISA) or has no kernel file (generic). Defined in isa_entries.cpp, the only file
// that names the tables.
const FormatEntries* format_entries(Isa level);

// The same for the kernel files above `level` that run some of its kernels: format_entries(level),
// throwing Error where it gives nullptr (never, for a caller above that level).
const FormatEntries& lower_entries(Isa level);
// The avx2 level's kernels of a row (the AVX-512 files run some of them: a matvec, a quantiser, a
// few-token matmul).
inline FormatKernels avx2_kernels(const Spec& s) { return lower_entries(Isa::avx2).kernels(s); }

// w8a8's VNNI GEMM (avx512_vnni) takes over from kW8a8GemmMinTokens tokens (fewer: the few-token
// kernels), w8a7's from kW8a7GemmMinTokens: 2048 x 2048 matrices, one thread, crossovers measured
// at 12-16 tokens for w8a8 and below 8 for w8a7 against its AVX2 kernel.
constexpr int64_t kW8a8GemmMinTokens = 16;
constexpr int64_t kW8a7GemmMinTokens = 8;

// How far ahead (bytes) the decode-layout kernels prefetch into L2 (fmt_decode_layout.h): set
// once, in baseline code, from the CPU (formats.cpp).
extern const int64_t kDecodePrefetchBytes;

// Appends every row but f32 to the format table (fmt_pack.cpp).
void append_packed_rows(std::vector<FormatRow>& table);

}  // namespace fmt
}  // namespace cibench
