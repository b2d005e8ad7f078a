// Packing (f32 -> format), the reference unpack (format -> f32) and activation quantisation of
// every non-f32 row, and the rows themselves (appended to the table by formats.cpp).
// Layouts: engines/kernels/fmt_common.h. Portable C++, no ISA flags.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engines/core/error.h"
#include "engines/kernels/fmt_common.h"

namespace cibench {
namespace fmt {
namespace {

void store_f32(uint8_t* p, float f) { std::memcpy(p, &f, 4); }
void store_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

float absmax(const float* x, int64_t k) {
  float a = 0.f;
  for (int64_t i = 0; i < k; ++i) a = std::max(a, std::fabs(x[i]));
  return a;
}

// Symmetric per-row int8: scale = max|x| / 127, q = round(x / scale) in [-127, 127].
struct Q8 {
  float scale, inv;
  explicit Q8(const float* x, int64_t k) {
    scale = absmax(x, k) / 127.f;
    inv = scale > 0.f ? 1.f / scale : 0.f;
  }
  int8_t q(float v) const {
    return round_clamp127(v * inv);
  }
};

// ---- bf16 ------------------------------------------------------------------------------------
size_t bf16_row_bytes(int64_t k) { return static_cast<size_t>(k) * 2; }
void bf16_pack(const float* src, int64_t k, uint8_t* dst) {
  for (int64_t i = 0; i < k; ++i) store_u16(dst + 2 * i, f32_to_bf16(src[i]));
}
void bf16_unpack(const uint8_t* src, int64_t k, float* dst) {
  for (int64_t i = 0; i < k; ++i) dst[i] = bf16_to_f32(load_u16(src + 2 * i));
}

// ---- int8 (weight-only) and w8a8 -------------------------------------------------------------
size_t int8_row_bytes(int64_t k) { return 4 + static_cast<size_t>(k); }
size_t w8a8_row_bytes(int64_t k) { return 4 + static_cast<size_t>(round_up(k, 32)); }
void int8_pack_n(const float* src, int64_t k, int64_t kp, uint8_t* dst) {
  Q8 q(src, k);
  store_f32(dst, q.scale);
  for (int64_t i = 0; i < k; ++i) dst[4 + i] = static_cast<uint8_t>(q.q(src[i]));
  for (int64_t i = k; i < kp; ++i) dst[4 + i] = 0;
}
void int8_pack(const float* src, int64_t k, uint8_t* dst) { int8_pack_n(src, k, k, dst); }
void w8a8_pack(const float* src, int64_t k, uint8_t* dst) {
  int8_pack_n(src, k, round_up(k, 32), dst);
}
void int8_unpack(const uint8_t* src, int64_t k, float* dst) {
  const float s = load_f32(src);
  for (int64_t i = 0; i < k; ++i) dst[i] = s * static_cast<float>(static_cast<int8_t>(src[4 + i]));
}
size_t act8_bytes(int64_t k) { return act8_row_bytes(k); }
void act8_quantize(const float* x, int64_t k, void* dst_v) {
  uint8_t* dst = static_cast<uint8_t*>(dst_v);
  std::memset(dst, 0, static_cast<size_t>(kActHeader));
  Q8 q(x, k);
  store_f32(dst, q.scale);
  uint8_t* v = dst + kActHeader;
  for (int64_t i = 0; i < k; ++i) v[i] = static_cast<uint8_t>(q.q(x[i]));
  for (int64_t i = k; i < round_up(k, 32); ++i) v[i] = 0;
}
// w8a8_static: the same layout with a calibrated per-tensor scale, values clamped to +-127.
void act8_quantize_static(const float* x, int64_t k, float scale, void* dst_v) {
  uint8_t* dst = static_cast<uint8_t*>(dst_v);
  std::memset(dst, 0, static_cast<size_t>(kActHeader));
  store_f32(dst, scale);
  const float inv = scale > 0.f ? 1.f / scale : 0.f;
  uint8_t* v = dst + kActHeader;
  for (int64_t i = 0; i < k; ++i)
    v[i] = static_cast<uint8_t>(round_clamp127(x[i] * inv));
  for (int64_t i = k; i < round_up(k, 32); ++i) v[i] = 0;
}

// ---- w8a7: w8a8's int8 values behind [scale][sum]; 7-bit asymmetric activations -------------
size_t w8a7_row_bytes(int64_t k) { return kW8a7Header + static_cast<size_t>(round_up(k, 32)); }
void w8a7_pack(const float* src, int64_t k, uint8_t* dst) {
  Q8 q(src, k);
  store_f32(dst, q.scale);
  int32_t sum = 0;
  for (int64_t i = 0; i < k; ++i) {
    const int8_t v = q.q(src[i]);
    dst[kW8a7Header + i] = static_cast<uint8_t>(v);
    sum += v;
  }
  for (int64_t i = k; i < round_up(k, 32); ++i) dst[kW8a7Header + i] = 0;
  std::memcpy(dst + 4, &sum, 4);
}
void w8a7_unpack(const uint8_t* src, int64_t k, float* dst) {
  const float s = load_f32(src);
  for (int64_t i = 0; i < k; ++i)
    dst[i] = s * static_cast<float>(static_cast<int8_t>(src[kW8a7Header + i]));
}
void act7_quantize(const float* x, int64_t k, void* dst_v) {
  uint8_t* dst = static_cast<uint8_t*>(dst_v);
  std::memset(dst, 0, static_cast<size_t>(kActHeader));
  float mn = 0.f, mx = 0.f;
  for (int64_t i = 0; i < k; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  const Act7Params p = act7_params(mn, mx);
  store_f32(dst, p.scale);
  const int32_t z = static_cast<int32_t>(p.zf);
  std::memcpy(dst + 4, &z, 4);
  uint8_t* v = dst + kActHeader;
  for (int64_t i = 0; i < k; ++i) v[i] = act7_q(x[i], p);
  for (int64_t i = k; i < round_up(k, 32); ++i) v[i] = 0;
}

// ---- int4 group-wise -------------------------------------------------------------------------
template <int G, bool Asym>
size_t int4_bytes(int64_t k) {
  return int4_row_bytes(k, G, Asym);
}

// Packs one group of n <= G values (padded to whole 32-element sub-blocks).
template <bool Asym>
uint8_t* int4_pack_group(const float* x, int64_t n, uint8_t* dst) {
  uint8_t codes[128];
  const int64_t np = round_up(n, 32);
  if constexpr (Asym) {
    float lo = x[0], hi = x[0];
    for (int64_t i = 1; i < n; ++i) {
      lo = std::min(lo, x[i]);
      hi = std::max(hi, x[i]);
    }
    const uint16_t dh = f32_to_f16((hi - lo) / 15.f), mh = f32_to_f16(lo);
    const float d = half_to_float(dh), m = half_to_float(mh);
    const float id = d > 0.f ? 1.f / d : 0.f;
    for (int64_t i = 0; i < n; ++i)
      codes[i] = static_cast<uint8_t>(std::clamp(std::nearbyint((x[i] - m) * id), 0.f, 15.f));
    for (int64_t i = n; i < np; ++i) codes[i] = 0;
    store_u16(dst, dh);
    store_u16(dst + 2, mh);
    dst += 4;
  } else {
    // The value of largest magnitude maps to code 0 (-8): d = v / -8, so all 16 codes are used.
    float mx = 0.f;
    for (int64_t i = 0; i < n; ++i)
      if (std::fabs(x[i]) > std::fabs(mx)) mx = x[i];
    const uint16_t dh = f32_to_f16(mx / -8.f);
    const float d = half_to_float(dh);
    const float id = d != 0.f ? 1.f / d : 0.f;
    for (int64_t i = 0; i < n; ++i)
      codes[i] = static_cast<uint8_t>(std::clamp(std::nearbyint(x[i] * id) + 8.f, 0.f, 15.f));
    for (int64_t i = n; i < np; ++i) codes[i] = 8;
    store_u16(dst, dh);
    dst += 2;
  }
  for (int64_t s = 0; s < np; s += 32) {
    for (int64_t j = 0; j < 16; ++j)
      dst[j] = static_cast<uint8_t>(codes[s + j] | (codes[s + 16 + j] << 4));
    dst += 16;
  }
  return dst;
}

template <int G, bool Asym>
void int4_pack(const float* src, int64_t k, uint8_t* dst) {
  for (int64_t g = 0; g < k; g += G) dst = int4_pack_group<Asym>(src + g, std::min<int64_t>(G, k - g), dst);
}

template <int G, bool Asym>
void int4_unpack(const uint8_t* src, int64_t k, float* dst) {
  for (int64_t g = 0; g < k; g += G) {
    const int64_t n = std::min<int64_t>(G, k - g);
    const float d = half_to_float(load_u16(src));
    const float m = Asym ? half_to_float(load_u16(src + 2)) : 0.f;
    src += int4_hdr(Asym);
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t b = src[(i / 32) * 16 + (i % 16)];
      const int q = ((i % 32) < 16) ? (b & 0xf) : (b >> 4);
      dst[g + i] = Asym ? d * static_cast<float>(q) + m : d * static_cast<float>(q - 8);
    }
    src += round_up(n, 32) / 2;
  }
}

// ---- int4 weights x int8 activations per block (int4_gG_a8) ----------------------------------
template <int G>
size_t actb_bytes(int64_t k) {
  return actb_row_bytes(k, G);
}
template <int G>
void actb_quantize(const float* x, int64_t k, void* dst_v) {
  uint8_t* dst = static_cast<uint8_t*>(dst_v);
  const int64_t nb = actb_blocks(k, G), hdr = actb_header(k, G);
  std::memset(dst, 0, static_cast<size_t>(hdr));
  int8_t* v = reinterpret_cast<int8_t*>(dst + hdr);
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t c0 = b * G, n = std::min<int64_t>(G, k - c0);
    Q8 q(x + c0, n);
    int32_t sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      v[c0 + i] = q.q(x[c0 + i]);
      sum += v[c0 + i];
    }
    store_f32(dst + 4 * b, q.scale);
    store_u32(dst + 4 * nb + 4 * b, static_cast<uint32_t>(sum));
  }
  for (int64_t i = k; i < round_up(k, 32); ++i) v[i] = 0;
}

// ---- int8_g32_a8: ggml's block_q8_0 ---------------------------------------------------------
size_t q8_bytes(int64_t k) { return q8_row_bytes(k); }
// quantize_row_q8_0_ref: d = amax / 127 (f32), stored rounded to f16; q = roundf(x * (1 / d)) with
// the f32 d (one rounding of the product, no fused multiply-add; halves away from zero). A
// ragged last block is quantised as if padded with zeros (they change neither amax nor any q).
void q8_pack(const float* src, int64_t k, uint8_t* dst) {
  for (int64_t c0 = 0; c0 < k; c0 += kQ8Block, dst += kQ8BlockBytes) {
    const int64_t n = std::min<int64_t>(kQ8Block, k - c0);
    const float d = absmax(src + c0, n) / 127.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    store_u16(dst, half_from_float(d));
    for (int64_t j = 0; j < kQ8Block; ++j) {
      const float v = j < n ? src[c0 + j] * id : 0.f;
      dst[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(v)));
    }
  }
}
void q8_unpack(const uint8_t* src, int64_t k, float* dst) {
  for (int64_t c0 = 0; c0 < k; c0 += kQ8Block, src += kQ8BlockBytes) {
    const float d = half_to_float(load_u16(src));
    for (int64_t j = 0; j < kQ8Block && c0 + j < k; ++j)
      dst[c0 + j] = d * static_cast<float>(static_cast<int8_t>(src[2 + j]));
  }
}

// ---- sparse ----------------------------------------------------------------------------------
void check_sparse_k(int64_t k) {
  CIBENCH_CHECK(k <= kMaxSparseCols, "sparse formats index columns with 16 bits: K=", k,
                " exceeds ", kMaxSparseCols);
}

int64_t count_nonzero(const float* x, int64_t k) {
  int64_t n = 0;
  for (int64_t i = 0; i < k; ++i) n += x[i] != 0.f;
  return n;
}
size_t f32s_max_bytes(int64_t k) { return 4 + static_cast<size_t>(round_up(k, 8)) * 6; }
size_t f32s_bytes(const float* x, int64_t k) {
  return 4 + static_cast<size_t>(round_up(count_nonzero(x, k), 8)) * 6;
}
void f32s_pack(const float* src, int64_t k, uint8_t* dst) {
  check_sparse_k(k);
  const int64_t n = round_up(count_nonzero(src, k), 8);
  store_u32(dst, static_cast<uint32_t>(n));
  uint8_t* vals = dst + 4;
  uint8_t* idx = vals + 4 * n;
  int64_t j = 0;
  for (int64_t i = 0; i < k; ++i)
    if (src[i] != 0.f) {
      store_f32(vals + 4 * j, src[i]);
      store_u16(idx + 2 * j, static_cast<uint16_t>(i));
      ++j;
    }
  const uint16_t last = j ? load_u16(idx + 2 * (j - 1)) : 0;  // padding keeps the list sorted
  for (; j < n; ++j) {
    store_f32(vals + 4 * j, 0.f);
    store_u16(idx + 2 * j, last);
  }
}
void f32s_unpack(const uint8_t* src, int64_t k, float* dst) {
  std::fill(dst, dst + k, 0.f);
  const int64_t n = load_u32(src);
  const uint8_t* vals = src + 4;
  const uint8_t* idx = vals + 4 * n;
  for (int64_t j = 0; j < n; ++j) dst[load_u16(idx + 2 * j)] += load_f32(vals + 4 * j);
}

// int8_sparse: the non-zeros in groups of 8 entries, each group [u16 base] + 8 u8 offsets (column
// = base + offset) + 8 int8 values. A group starts at a non-zero (base = its column) and takes the
// following non-zeros while they are fewer than 256 columns past the base; a short group is padded
// with entries that repeat its last offset with value 0. So a row of any length up to 65536 and
// any gaps packs, a row without non-zeros has no group, and the columns stay ascending.

// Columns of the non-zero int8 values of a row, and the group each starts (-1 = continues).
int64_t i8s_groups(const float* x, int64_t k, const Q8& q, std::vector<int64_t>* cols,
                   std::vector<int64_t>* starts) {
  int64_t groups = 0, base = 0, in_group = kSparseGroup;
  for (int64_t i = 0; i < k; ++i) {
    if (q.q(x[i]) == 0) continue;
    const bool start = in_group == kSparseGroup || i - base > 255;
    if (start) {
      base = i;
      in_group = 0;
      ++groups;
    }
    ++in_group;
    if (cols) {
      cols->push_back(i);
      starts->push_back(start ? 1 : 0);
    }
  }
  return groups;
}
size_t i8s_bytes_for(int64_t groups) { return 8 + static_cast<size_t>(groups * kSparseGroupBytes); }
// Groups closed before 8 entries span at least 256 columns each (at most (k - 1) / 256 of them);
// the others hold 8 non-zeros.
size_t i8s_max_bytes(int64_t k) {
  return i8s_bytes_for((k + kSparseGroup - 1) / kSparseGroup + (k - 1) / 256 + 1);
}
size_t i8s_bytes(const float* x, int64_t k) {
  Q8 q(x, k);
  return i8s_bytes_for(i8s_groups(x, k, q, nullptr, nullptr));
}
void i8s_pack(const float* src, int64_t k, uint8_t* dst) {
  check_sparse_k(k);
  Q8 q(src, k);
  std::vector<int64_t> cols, starts;
  const int64_t groups = i8s_groups(src, k, q, &cols, &starts);
  const int64_t n = groups * kSparseGroup;
  store_u32(dst, static_cast<uint32_t>(n));
  store_f32(dst + 4, q.scale);
  uint8_t* base = dst + 8;
  uint8_t* off = base + 2 * groups;
  uint8_t* vals = off + n;
  int64_t j = -1, b = 0;  // j: last entry written
  for (size_t t = 0; t < cols.size(); ++t) {
    if (starts[t]) {
      for (++j; j % kSparseGroup; ++j) {  // pad the previous group
        off[j] = off[j - 1];
        vals[j] = 0;
      }
      b = cols[t];
      store_u16(base + 2 * (j / kSparseGroup), static_cast<uint16_t>(b));
    } else {
      ++j;
    }
    off[j] = static_cast<uint8_t>(cols[t] - b);
    vals[j] = static_cast<uint8_t>(q.q(src[cols[t]]));
  }
  for (++j; j < n; ++j) {
    off[j] = off[j - 1];
    vals[j] = 0;
  }
}
void i8s_unpack(const uint8_t* src, int64_t k, float* dst) {
  std::fill(dst, dst + k, 0.f);
  const int64_t n = load_u32(src);
  const float s = load_f32(src + 4);
  const uint8_t* base = src + 8;
  const uint8_t* off = base + n / kSparseGroup * 2;
  const uint8_t* vals = off + n;
  for (int64_t j = 0; j < n; ++j)
    dst[load_u16(base + 2 * (j / kSparseGroup)) + off[j]] +=
        s * static_cast<float>(static_cast<int8_t>(vals[j]));
}

int64_t count_q8_blocks(const float* x, int64_t k, const Q8& q) {
  int64_t nb = 0;
  for (int64_t b = 0; b < k; b += kSparseBlock) {
    bool any = false;
    for (int64_t i = b; i < std::min(k, b + kSparseBlock); ++i) any |= q.q(x[i]) != 0;
    nb += any;
  }
  return nb;
}
size_t bs_max_bytes(int64_t k) {
  return 8 + static_cast<size_t>((k + kSparseBlock - 1) / kSparseBlock) * (2 + kSparseBlock);
}
size_t bs_bytes(const float* x, int64_t k) {
  Q8 q(x, k);
  return 8 + static_cast<size_t>(count_q8_blocks(x, k, q)) * (2 + kSparseBlock);
}
void bs_pack(const float* src, int64_t k, uint8_t* dst) {
  check_sparse_k(k);
  Q8 q(src, k);
  const int64_t nb = count_q8_blocks(src, k, q);
  store_u32(dst, static_cast<uint32_t>(nb));
  store_f32(dst + 4, q.scale);
  uint8_t* idx = dst + 8;
  uint8_t* vals = idx + 2 * nb;
  int64_t j = 0;
  for (int64_t b = 0; b < k; b += kSparseBlock) {
    int8_t v[kSparseBlock] = {};
    bool any = false;
    for (int64_t i = b; i < std::min(k, b + kSparseBlock); ++i) {
      v[i - b] = q.q(src[i]);
      any |= v[i - b] != 0;
    }
    if (!any) continue;
    store_u16(idx + 2 * j, static_cast<uint16_t>(b / kSparseBlock));
    std::memcpy(vals + kSparseBlock * j, v, kSparseBlock);
    ++j;
  }
}
void bs_unpack(const uint8_t* src, int64_t k, float* dst) {
  std::fill(dst, dst + k, 0.f);
  const int64_t nb = load_u32(src);
  const float s = load_f32(src + 4);
  const uint8_t* idx = src + 8;
  const uint8_t* vals = idx + 2 * nb;
  for (int64_t j = 0; j < nb; ++j) {
    const int64_t c0 = load_u16(idx + 2 * j) * kSparseBlock;
    for (int64_t i = 0; i < kSparseBlock && c0 + i < k; ++i)
      dst[c0 + i] = s * static_cast<float>(static_cast<int8_t>(vals[kSparseBlock * j + i]));
  }
}

// 2:4: in every group of 4 columns the 2 of largest magnitude are kept (the pack prunes).
size_t s24_bytes(int64_t k) { return 4 + static_cast<size_t>((k + 15) / 16) * 12; }
void s24_pack(const float* src, int64_t k, uint8_t* dst) {
  Q8 q(src, k);
  store_f32(dst, q.scale);
  dst += 4;
  for (int64_t c = 0; c < k; c += 16) {
    uint32_t nib = 0;
    for (int64_t g = 0; g < 4; ++g) {
      const int64_t g0 = c + 4 * g;
      // the two largest magnitudes among the valid columns of this group (lower index on ties)
      int64_t best[2] = {-1, -1};
      for (int64_t i = g0; i < std::min(k, g0 + 4); ++i) {
        const float a = std::fabs(src[i]);
        if (best[0] < 0 || a > std::fabs(src[best[0]])) {
          best[1] = best[0];
          best[0] = i;
        } else if (best[1] < 0 || a > std::fabs(src[best[1]])) {
          best[1] = i;
        }
      }
      if (best[0] >= 0 && best[1] >= 0 && best[1] < best[0]) std::swap(best[0], best[1]);
      for (int t = 0; t < 2; ++t) {
        const int64_t j = 2 * g + t;
        const int64_t col = best[t] >= 0 ? best[t] : g0;  // padding: value 0 at the group start
        dst[j] = best[t] >= 0 ? static_cast<uint8_t>(q.q(src[col])) : 0;
        nib |= static_cast<uint32_t>((col - c) % 8) << (4 * j);
      }
    }
    store_u32(dst + 8, nib);
    dst += 12;
  }
}
void s24_unpack(const uint8_t* src, int64_t k, float* dst) {
  std::fill(dst, dst + k, 0.f);
  const float s = load_f32(src);
  src += 4;
  for (int64_t c = 0; c < k; c += 16) {
    const uint32_t nib = load_u32(src + 8);
    for (int64_t j = 0; j < 8; ++j) {
      const int64_t col = c + 8 * (j / 4) + ((nib >> (4 * j)) & 7);
      if (col < k) dst[col] += s * static_cast<float>(static_cast<int8_t>(src[j]));
    }
    src += 12;
  }
}

FormatRow base_row(const char* name, const char* description, const Spec& spec) {
  FormatRow r{};
  r.name = name;
  r.description = description;
  r.act = ActType::f32;
  r.kernels[static_cast<int>(Isa::generic)] = kernels_generic(spec);
  // The levels above the baseline that the process may use; the others stay empty (their code is
  // never entered on a CPU without them, nor above CIBENCH_ISA).
  for (Isa level : {Isa::avx2, Isa::avx512, Isa::avx512_vnni, Isa::amx})
    if (const FormatEntries* e = format_entries(level)) r.kernels[static_cast<int>(level)] = e->kernels(spec);
  return r;
}

// A row of int8 weights (one byte per weight, per-row header) with int8 activations per token.
FormatRow int8_act_row(const char* name, const char* description, Kind kind,
                       size_t (*row_bytes)(int64_t), void (*pack)(const float*, int64_t, uint8_t*),
                       void (*unpack)(const uint8_t*, int64_t, float*),
                       void (*quantize)(const float*, int64_t, void*)) {
  FormatRow r = base_row(name, description, Spec{kind});
  r.block_size = 1;
  r.bytes_per_block = 1;
  r.bits_per_weight = 8;
  r.act = ActType::int8_per_row;
  r.row_bytes = row_bytes;
  r.pack_row = pack;
  r.unpack_row = unpack;
  r.act_row_bytes = act8_bytes;
  r.quantize_act = quantize;
  return r;
}

template <int G, bool Asym>
FormatRow int4_row(const char* name, const char* description) {
  FormatRow r = base_row(name, description, Spec{Kind::int4, G, Asym});
  r.block_size = G;
  r.bytes_per_block = static_cast<size_t>(int4_group_bytes(G, Asym));
  r.bits_per_weight = 8.0 * static_cast<double>(r.bytes_per_block) / G;
  r.row_bytes = int4_bytes<G, Asym>;
  r.pack_row = int4_pack<G, Asym>;
  r.unpack_row = int4_unpack<G, Asym>;
  return r;
}

template <int G>
FormatRow int4_a8_row(const char* name, const char* description) {
  FormatRow r = base_row(name, description, Spec{Kind::int4_a8, G, false});
  r.block_size = G;
  r.bytes_per_block = static_cast<size_t>(int4_group_bytes(G, false));
  r.bits_per_weight = 8.0 * static_cast<double>(r.bytes_per_block) / G;
  r.act = ActType::int8_per_block;
  r.row_bytes = int4_bytes<G, false>;
  r.pack_row = int4_pack<G, false>;
  r.unpack_row = int4_unpack<G, false>;
  r.act_row_bytes = actb_bytes<G>;
  r.quantize_act = actb_quantize<G>;
  return r;
}

}  // namespace

void append_packed_rows(std::vector<FormatRow>& t) {
  {
    FormatRow r = base_row("bf16", "bfloat16 (upper half of f32, round to nearest even); activations f32, rounded to bf16 at avx512_vnni (vdpbf16ps)",
                           Spec{Kind::bf16});
    r.block_size = 1;
    r.bytes_per_block = 2;
    r.bits_per_weight = 16;
    r.row_bytes = bf16_row_bytes;
    r.pack_row = bf16_pack;
    r.unpack_row = bf16_unpack;
    t.push_back(r);
  }
  {
    FormatRow r = base_row("int8",
                           "int8 weight-only, symmetric, one f32 scale per output channel; f32 "
                           "activations",
                           Spec{Kind::int8});
    r.block_size = 1;
    r.bytes_per_block = 1;
    r.bits_per_weight = 8;
    r.row_bytes = int8_row_bytes;
    r.pack_row = int8_pack;
    r.unpack_row = int8_unpack;
    t.push_back(r);
  }
  {
    FormatRow r = int8_act_row("w8a8",
                               "dynamic int8: int8 weights (f32 scale per output channel) x int8 "
                               "activations quantised per token at run time; int32 accumulation",
                               Kind::w8a8, w8a8_row_bytes, w8a8_pack, int8_unpack, act8_quantize);
    t.push_back(r);
    // The same weights and kernels; activations use the matrix's calibrated scale.
    r.name = "w8a8_static";
    r.description =
        "static int8: w8a8 weights and kernels, activations quantised with a per-tensor scale "
        "calibrated offline (WeightMatrix::act_scale, clamped); per token when uncalibrated";
    r.quantize_act_static = act8_quantize_static;
    t.push_back(r);
  }
  {
    t.push_back(int8_act_row("w8a7",
                             "dynamic int8 weights (w8a8's values) x 7-bit asymmetric activations "
                             "per token (fbgemm's reduce_range): unsigned x signed int8 products "
                             "without the sign trick on AVX2; int32 accumulation",
                             Kind::w8a7, w8a7_row_bytes, w8a7_pack, w8a7_unpack, act7_quantize));
  }
  t.push_back(int4_row<32, false>("int4_g32", "int4 symmetric, group 32 along K, f16 scale per group; f32 activations"));
  t.push_back(int4_row<64, false>("int4_g64", "int4 symmetric, group 64 along K, f16 scale per group; f32 activations"));
  t.push_back(int4_row<128, false>("int4_g128", "int4 symmetric, group 128 along K, f16 scale per group; f32 activations"));
  t.push_back(int4_row<32, true>("int4_g32_asym", "int4 asymmetric, group 32, f16 scale + f16 min per group; f32 activations"));
  t.push_back(int4_row<64, true>("int4_g64_asym", "int4 asymmetric, group 64, f16 scale + f16 min per group; f32 activations"));
  t.push_back(int4_row<128, true>("int4_g128_asym", "int4 asymmetric, group 128, f16 scale + f16 min per group; f32 activations"));
  t.push_back(int4_a8_row<32>("int4_g32_a8", "int4 symmetric, group 32 (as int4_g32) x int8 activations quantised per block of 32 at run time; int32 per block"));
  t.push_back(int4_a8_row<64>("int4_g64_a8", "int4 symmetric, group 64 (as int4_g64) x int8 activations quantised per block of 64 at run time; int32 per block"));
  t.push_back(int4_a8_row<128>("int4_g128_a8", "int4 symmetric, group 128 (as int4_g128) x int8 activations quantised per block of 128 at run time; int32 per block"));
  {
    FormatRow r = base_row("int8_g32_a8",
                           "int8 symmetric, group 32 along K, f16 scale per group (ggml's Q8_0 block "
                           "byte for byte) x int8 activations quantised per block of 32 at run time; "
                           "int32 per block",
                           Spec{Kind::q8_a8, 32, false});
    r.block_size = kQ8Block;
    r.bytes_per_block = kQ8BlockBytes;
    r.bits_per_weight = 8.0 * kQ8BlockBytes / kQ8Block;
    r.act = ActType::int8_per_block;
    r.row_bytes = q8_bytes;
    r.pack_row = q8_pack;
    r.unpack_row = q8_unpack;
    r.act_row_bytes = actb_bytes<32>;
    r.quantize_act = actb_quantize<32>;
    t.push_back(r);
  }
  {
    FormatRow r = base_row("f32_sparse",
                           "unstructured sparse f32: per row the non-zeros as (f32 value, u16 "
                           "column) lists; rows vary in size (row-offset table)",
                           Spec{Kind::f32_sparse});
    r.block_size = 1;
    r.bytes_per_block = 6;  // per stored non-zero
    r.bits_per_weight = 48; // per stored non-zero; dense-equivalent = 48 * (1 - sparsity)
    r.row_bytes = f32s_max_bytes;
    r.pack_row = f32s_pack;
    r.unpack_row = f32s_unpack;
    r.packed_row_bytes = f32s_bytes;
    t.push_back(r);
  }
  {
    FormatRow r = base_row("int8_sparse",
                           "unstructured sparse int8 (f32 scale per row): the non-zeros in groups "
                           "of 8 (u16 base column, 8 u8 offsets, 8 int8 values); rows vary in size "
                           "(row-offset table)",
                           Spec{Kind::int8_sparse});
    r.block_size = kSparseGroup;  // stored entries per group
    r.bytes_per_block = kSparseGroupBytes;
    r.bits_per_weight = 18;  // per stored entry (non-zeros plus group padding)
    r.row_bytes = i8s_max_bytes;
    r.pack_row = i8s_pack;
    r.unpack_row = i8s_unpack;
    r.packed_row_bytes = i8s_bytes;
    t.push_back(r);
  }
  {
    FormatRow r = base_row("int8_bs",
                           "block-sparse int8, 1x16 blocks along K: per row u16 block list + 16 "
                           "int8 per kept block (f32 scale per row); row-offset table",
                           Spec{Kind::int8_bs});
    r.block_size = kSparseBlock;
    r.bytes_per_block = 2 + kSparseBlock;
    r.bits_per_weight = 9;  // per weight of a kept block
    r.row_bytes = bs_max_bytes;
    r.pack_row = bs_pack;
    r.unpack_row = bs_unpack;
    r.packed_row_bytes = bs_bytes;
    t.push_back(r);
  }
  {
    FormatRow r = base_row("int8_24",
                           "2:4 semi-structured int8 (pack keeps the 2 largest of every 4): 8 "
                           "values + 8 column nibbles per 16 columns, f32 scale per row",
                           Spec{Kind::int8_24});
    r.block_size = 16;
    r.bytes_per_block = 12;
    r.bits_per_weight = 6;
    r.row_bytes = s24_bytes;
    r.pack_row = s24_pack;
    r.unpack_row = s24_unpack;
    t.push_back(r);
  }
}

}  // namespace fmt
}  // namespace cibench
