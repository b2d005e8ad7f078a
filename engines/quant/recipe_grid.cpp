#include "engines/quant/recipe_grid.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engines/core/error.h"
#include "engines/core/matrix.h"
#include "engines/kernels/fmt_common.h"

namespace cibench {
namespace {

// An int8 row scale s is reproduced by pack_row only if fl(fl(s * 127) / 127) == s (pack takes
// the largest magnitude, s * 127 after unpack, and divides by 127). Most floats are fixed points;
// for the others a neighbour within a few ulps is.
float int8_fixed_scale(float s0) {
  if (!(s0 > 0.f)) return 0.f;
  auto fixed = [](float s) { return (s * 127.f) / 127.f == s; };
  if (fixed(s0)) return s0;
  float up = s0, down = s0;
  for (int i = 0; i < 16; ++i) {
    up = std::nextafter(up, 1e30f);
    if (fixed(up)) return up;
    down = std::nextafter(down, 0.f);
    if (fixed(down)) return down;
  }
  return s0;  // not expected; snap_to_format reports any element that would change
}

}  // namespace

bool QuantGrid::supports(const std::string& n) {
  return n == "int8" || n == "w8a8" || n == "w8a7" || n == "w8a8_static" || n == "int8_sparse" || n == "int8_bs" || n == "int8_24" ||
         n == "int4_g32" || n == "int4_g64" || n == "int4_g128" || n == "int4_g32_asym" ||
         n == "int4_g64_asym" || n == "int4_g128_asym";
}

QuantGrid QuantGrid::for_format(const std::string& n) {
  if (!supports(n))
    throw Error(str("quantisation recipes target int8, w8a8, w8a7, w8a8_static, int8_sparse, int8_bs, int8_24 and "
                    "int4_g{32,64,128}[_asym]; '", n, "' is not one of them"));
  QuantGrid g;
  g.format_ = &format_by_name(n);
  if (n.rfind("int4_g", 0) == 0) {
    g.kind_ = n.find("_asym") != std::string::npos ? Kind::int4_asym : Kind::int4_sym;
    g.group_ = std::stoll(n.substr(6));
  } else {
    g.kind_ = Kind::int8_row;
  }
  return g;
}

QuantGrid::Params QuantGrid::fit(const float* x, int64_t n) const {
  Params p;
  if (n <= 0) return p;
  switch (kind_) {
    case Kind::int8_row: {
      float a = 0.f;
      for (int64_t i = 0; i < n; ++i)
        if (std::fabs(x[i]) > a) {
          a = std::fabs(x[i]);
          p.anchor_lo = i;
        }
      p.scale = int8_fixed_scale(a / 127.f);
      p.inv = p.scale > 0.f ? 1.f / p.scale : 0.f;
      if (p.anchor_lo >= 0) p.anchor_lo_code = x[p.anchor_lo] < 0.f ? -127 : 127;
      if (p.scale == 0.f) p.anchor_lo = -1;
      break;
    }
    case Kind::int4_sym: {
      float mx = 0.f;
      for (int64_t i = 0; i < n; ++i)
        if (std::fabs(x[i]) > std::fabs(mx)) {
          mx = x[i];
          p.anchor_lo = i;
        }
      p.scale = half_to_float(fmt::f32_to_f16(mx / -8.f));
      p.inv = p.scale != 0.f ? 1.f / p.scale : 0.f;
      if (p.scale == 0.f) p.anchor_lo = -1;
      break;
    }
    case Kind::int4_asym: {
      float lo = x[0], hi = x[0];
      p.anchor_lo = p.anchor_hi = 0;
      for (int64_t i = 1; i < n; ++i) {
        if (x[i] < lo) {
          lo = x[i];
          p.anchor_lo = i;
        }
        if (x[i] > hi) {
          hi = x[i];
          p.anchor_hi = i;
        }
      }
      p.scale = half_to_float(fmt::f32_to_f16((hi - lo) / 15.f));
      p.min = half_to_float(fmt::f32_to_f16(lo));
      p.inv = p.scale > 0.f ? 1.f / p.scale : 0.f;
      if (p.scale == 0.f) p.anchor_hi = -1;
      break;
    }
  }
  return p;
}

float QuantGrid::quantize(const Params& p, float v) const {
  switch (kind_) {
    case Kind::int8_row: {
      const float q = std::clamp(std::nearbyint(v * p.inv), -127.f, 127.f) + 0.f;  // no -0
      return p.scale * q;
    }
    case Kind::int4_sym: {
      const float c = std::clamp(std::nearbyint(v * p.inv) + 8.f, 0.f, 15.f);
      return p.scale * (c - 8.f);
    }
    case Kind::int4_asym: {
      const float c = std::clamp(std::nearbyint((v - p.min) * p.inv), 0.f, 15.f);
      return p.scale * c + p.min;
    }
  }
  return v;
}

float QuantGrid::anchor_value(const Params& p, int which) const {
  switch (kind_) {
    case Kind::int8_row: return p.scale * static_cast<float>(p.anchor_lo_code);
    case Kind::int4_sym: return p.scale * -8.f;
    case Kind::int4_asym: return which == 0 ? p.scale * 0.f + p.min : p.scale * 15.f + p.min;
  }
  return 0.f;
}

void QuantGrid::round_matrix(float* w, int64_t rows, int64_t cols) const {
  const int64_t g = group_len(cols);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = w + r * cols;
    for (int64_t c0 = 0; c0 < cols; c0 += g) {
      const int64_t n = std::min(g, cols - c0);
      const Params p = fit(row + c0, n);
      for (int64_t i = 0; i < n; ++i) row[c0 + i] = quantize_at(p, i, row[c0 + i]);
    }
  }
}

int64_t snap_to_format(const FormatRow& format, const float* w, int64_t rows, int64_t cols,
                       float* out) {
  std::vector<uint8_t> buf(format.row_bytes(cols));
  int64_t changed = 0;
  for (int64_t r = 0; r < rows; ++r) {
    format.pack_row(w + r * cols, cols, buf.data());
    format.unpack_row(buf.data(), cols, out + r * cols);
    for (int64_t c = 0; c < cols; ++c) changed += out[r * cols + c] != w[r * cols + c];
  }
  return changed;
}

}  // namespace cibench
