#pragma once
// The weight-format table. A format is one row: its name, block geometry, how a row of K floats
// is packed and unpacked (the reference), what activation type its dot products want, and its
// matrix kernels per ISA. Tests and micro-benchmarks loop over format_table(); adding a format
// is adding a row (engines/kernels/formats.cpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engines/core/cpu.h"

namespace cibench {

enum class ActType : uint8_t {
  f32,            // activations stay float
  int8_per_row,   // activations quantised per token (row) at run time to int8 + scale
  int8_per_block, // quantised per block of the row's block_size values: int8 + f32 scale per block
  bf16,           // rounded to bf16 (round to nearest even): uint16 x round_up(k, 32), zero padded
};
const char* act_type_name(ActType a);

struct ActVariant;

// Matrix kernels of one format at one ISA. W is `rows` packed rows of `row_bytes` each.
//   matvec: y[r - row_begin] = dot(W[r], x)            for r in [row_begin, row_end)
//   matmul: Y[i, r] = dot(W[r], X[i])  (Y leading dim ldy) for i < m, r in [row_begin, row_end)
// `x` is in the format's activation type (see quantize_act); kernels never allocate.
struct FormatKernels {
  void (*matvec)(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, float* y,
                 int64_t row_begin, int64_t row_end) = nullptr;
  void (*matmul)(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes,
                 int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) = nullptr;
  // This level's activation quantiser, bit-identical to FormatRow::quantize_act (nullptr = use
  // that reference; see FormatRow::quantizer_at).
  void (*quantize)(const float* x, int64_t k, void* dst) = nullptr;
  // Set when these kernels take their activations in another type than the row's `act` (the bf16
  // row at avx512_vnni: activations rounded to bf16 for vdpbf16ps, in matvec and matmul alike, so
  // prefill and decode compute the same arithmetic). `quantize`, when set, is then this level's
  // conversion, bit-identical to the variant's.
  const ActVariant* act_variant = nullptr;
  // Prefill from a copy of the weights laid out for this level's matrix unit (AMX: each block of
  // 16 rows as ready B tiles), made once per matrix (WeightMatrix::tiles_for): its bytes for
  // `rows` x `k`, the repack, and the matmul that reads it beside W (whose rows still give their
  // scales, and the rows and calls no tile covers). The arithmetic is matmul's, output for output
  // (the twin tests compare both with the generic kernels). nullptr = this level has none.
  size_t (*tiles_bytes)(int64_t rows, int64_t k) = nullptr;
  void (*tiles_pack)(const uint8_t* w, size_t row_bytes, int64_t rows, int64_t k, uint8_t* dst) = nullptr;
  void (*matmul_tiles)(const uint8_t* tiles, const uint8_t* w, size_t row_bytes, int64_t k, const void* x,
                       size_t x_row_bytes, int64_t m, float* y, int64_t ldy, int64_t row_begin,
                       int64_t row_end) = nullptr;
  // Fewest tokens for which matmul_tiles is worth its repack.
  int64_t tiles_min_tokens = 0;
  // Decode (one token) from a copy of the weights laid out for this level's matrix-vector
  // product (16-row blocks whose groups lie in one piece each, read as one stream), made once per
  // matrix (WeightMatrix::decode_for): its bytes, the repack, and the matvec that reads it beside
  // W (the rows no whole block covers stay with `matvec`). Bit for bit `matvec`'s arithmetic (the
  // twin tests compare both with the generic kernels). nullptr = this level has none.
  size_t (*decode_bytes)(int64_t rows, int64_t k) = nullptr;
  void (*decode_pack)(const uint8_t* w, size_t row_bytes, int64_t rows, int64_t k, uint8_t* dst) = nullptr;
  void (*matvec_decode)(const uint8_t* dec, const uint8_t* w, size_t row_bytes, int64_t k, const void* x, float* y,
                        int64_t row_begin, int64_t row_end) = nullptr;
};

// Activations some level's kernels take instead of their row's: the type, the bytes of a
// converted row of k values, the reference conversion, and the generic kernels of the same
// arithmetic on those activations (the twin the fast kernels are tested against).
struct ActVariant {
  ActType type;
  size_t (*row_bytes)(int64_t k);
  void (*convert)(const float* x, int64_t k, void* dst);
  FormatKernels generic;
};

struct FormatRow {
  const char* name;         // "f32", "bf16", "int8", ...
  const char* description;  // one line for `cibench formats`
  int64_t block_size;       // elements per block along K (1 = element-wise)
  size_t bytes_per_block;   // bytes per full block (scales included)
  double bits_per_weight;   // effective, scales included
  ActType act;
  // Bytes of one packed row of k weights (ragged last block included).
  size_t (*row_bytes)(int64_t k);
  // Packs k floats into row_bytes(k) bytes; reference unpack is its inverse up to rounding.
  void (*pack_row)(const float* src, int64_t k, uint8_t* dst);
  void (*unpack_row)(const uint8_t* src, int64_t k, float* dst);
  // Activation conversion (nullptr when act == f32): bytes for k values, and the quantiser.
  size_t (*act_row_bytes)(int64_t k);
  void (*quantize_act)(const float* x, int64_t k, void* dst);
  // Kernels per ISA level; a level with no entry uses the next lower one that has one.
  FormatKernels kernels[kIsaCount];
  // Variable-size rows (sparse formats): the exact bytes pack_row writes for this row, at most
  // row_bytes(k). nullptr = every row is row_bytes(k). pack_matrix stores variable rows back to
  // back behind a row-offset table and passes row_bytes == 0 to the kernels (see matrix.h).
  size_t (*packed_row_bytes)(const float* src, int64_t k) = nullptr;
  // Static activation quantisation (w8a8_static): the activation layout of quantize_act, but
  // with the per-tensor scale calibrated for the matrix (WeightMatrix::act_scale) instead of one
  // derived from each row; values beyond 127 * scale are clamped. nullptr = dynamic only.
  void (*quantize_act_static)(const float* x, int64_t k, float scale, void* dst) = nullptr;

  // The kernels to run at `isa` (falls back towards generic, which every row must have).
  const FormatKernels& kernels_at(Isa isa) const;
  // The level whose kernels actually run at `isa` (for provenance).
  Isa kernel_isa_at(Isa isa) const;
  // The activation quantiser to use at `isa`: the conversion of the kernels' ActVariant when they
  // have one (their level's own, else the variant's), else the highest level at or below `isa`
  // with a quantiser of its own, else quantize_act (nullptr for f32-activation rows).
  void (*quantizer_at(Isa isa) const)(const float* x, int64_t k, void* dst);
  // The activations the kernels at `isa` take, and the bytes of such a row of k values (0 for
  // f32, which the kernels read in place).
  ActType act_at(Isa isa) const;
  size_t act_row_bytes_at(Isa isa, int64_t k) const;
};

const std::vector<FormatRow>& format_table();
// Throws Error listing the known names when `name` is not a row.
const FormatRow& format_by_name(const std::string& name);

}  // namespace cibench
