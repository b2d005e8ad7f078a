#pragma once
// The quantisation grid of a target weight format, as the recipes see it: per row (int8, w8a8)
// or per group of G columns (int4), the scale (and min) the format's pack_row would choose, and
// the values it can represent. Recipes output f32 weights that lie EXACTLY on this grid, so
// packing them with the format row is lossless (pack -> unpack reproduces them bit for bit);
// tests/unit/test_recipes.cpp checks that property against the format table itself.
//
// Exactness needs one detail the formats impose: pack_row derives the scale from the values it
// is given (the largest magnitude for int8 and int4 sym, the min and max for int4 asym). A recipe
// that moves weights after choosing a scale (GPTQ's error compensation) must therefore keep the
// "anchor" elements on the codes that define the scale (code -127/127, code 0 for int4 sym,
// codes 0 and 15 for int4 asym). QuantGrid records the anchors and forces them.
// Layouts and pack rules: engines/kernels/fmt_common.h and fmt_pack.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include "engines/core/format.h"

namespace cibench {

class QuantGrid {
 public:
  enum class Kind { int8_row, int4_sym, int4_asym };

  // Scale parameters of one group (one row for int8) and the indices (within the group) of the
  // elements that carry the scale-defining codes.
  struct Params {
    float scale = 0.f;  // int8: s (w = s q); int4: d
    float inv = 0.f;    // 1 / scale as pack_row computes it (0 when scale is 0)
    float min = 0.f;    // int4 asym: m (w = d q + m)
    int64_t anchor_lo = -1;  // int8: max |w| (code +-127); sym: code 0; asym: the min (code 0)
    int64_t anchor_hi = -1;  // asym: the max (code 15)
    int anchor_lo_code = 0;  // int8: +127 or -127
  };

  // The grid of a format row: int8, w8a8, w8a7, w8a8_static, int8_sparse, int8_bs, int8_24 (per-row int8 scale),
  // int4_g{32,64,128}[_asym]. Throws Error naming the supported formats otherwise.
  static QuantGrid for_format(const std::string& format_name);
  static bool supports(const std::string& format_name);

  Kind kind() const { return kind_; }
  const FormatRow& format() const { return *format_; }
  // Columns per group for a row of `cols` (the whole row for int8 kinds).
  int64_t group_len(int64_t cols) const { return kind_ == Kind::int8_row ? cols : group_; }

  // The parameters pack_row would choose for these n values.
  Params fit(const float* x, int64_t n) const;
  // Nearest representable value of v (clamped), computed as the format's unpack computes it.
  float quantize(const Params& p, float v) const;
  // The value of an anchor element (which = 0: anchor_lo, 1: anchor_hi).
  float anchor_value(const Params& p, int which) const;
  // Quantises element i of a group whose parameters are p (anchors forced to their codes).
  float quantize_at(const Params& p, int64_t i, float v) const {
    if (i == p.anchor_lo) return anchor_value(p, 0);
    if (i == p.anchor_hi) return anchor_value(p, 1);
    return quantize(p, v);
  }

  // Round-to-nearest of a (rows x cols) row-major matrix onto the grid, in place.
  void round_matrix(float* w, int64_t rows, int64_t cols) const;

 private:
  const FormatRow* format_ = nullptr;
  Kind kind_ = Kind::int8_row;
  int64_t group_ = 0;
};

// Packs a (rows x cols) matrix with the format row and unpacks it again into `out`; returns the
// number of elements that changed (0 when `w` lies on the format's grid).
int64_t snap_to_format(const FormatRow& format, const float* w, int64_t rows, int64_t cols,
                       float* out);

}  // namespace cibench
