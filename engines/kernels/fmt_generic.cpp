// Generic (scalar) kernels of every packed format: the oracle the SIMD kernels are tested
// against. One dot product per (row, activation row), written for clarity. No ISA flags.
#include <cmath>

#include "engines/kernels/fmt_common.h"

namespace cibench {
namespace fmt {
namespace {

using DotFn = float (*)(const uint8_t* row, int64_t k, const void* x);

float dot_bf16(const uint8_t* row, int64_t k, const void* xv) {
  const float* x = static_cast<const float*>(xv);
  float s = 0.f;
  for (int64_t i = 0; i < k; ++i) s += bf16_to_f32(load_u16(row + 2 * i)) * x[i];
  return s;
}

// bf16 weights x bf16 activations (actbf16 rows): every product exact in f32, summed in order.
float dot_bf16_bf16(const uint8_t* row, int64_t k, const void* xv) {
  const uint8_t* x = static_cast<const uint8_t*>(xv);
  float s = 0.f;
  for (int64_t i = 0; i < k; ++i) s += bf16_to_f32(load_u16(row + 2 * i)) * bf16_to_f32(load_u16(x + 2 * i));
  return s;
}

void convert_bf16_act(const float* x, int64_t k, void* dst) {
  uint8_t* d = static_cast<uint8_t*>(dst);
  int64_t i = 0;
  for (; i < k; ++i) {
    const uint16_t h = f32_to_bf16(x[i]);
    std::memcpy(d + 2 * i, &h, 2);
  }
  std::memset(d + 2 * i, 0, static_cast<size_t>(2 * (round_up(k, 32) - k)));
}

float dot_int8(const uint8_t* row, int64_t k, const void* xv) {
  const float* x = static_cast<const float*>(xv);
  const int8_t* q = reinterpret_cast<const int8_t*>(row + 4);
  float s = 0.f;
  for (int64_t i = 0; i < k; ++i) s += static_cast<float>(q[i]) * x[i];
  return s * load_f32(row);
}

// Exact int32 dot product; the SIMD twins produce the same integer, then the same float expression.
float dot_w8a8(const uint8_t* row, int64_t k, const void* xv) {
  const uint8_t* xa = static_cast<const uint8_t*>(xv);
  const int8_t* q = reinterpret_cast<const int8_t*>(row + 4);
  const int8_t* a = reinterpret_cast<const int8_t*>(xa + kActHeader);
  int32_t s = 0;
  for (int64_t i = 0; i < k; ++i) s += static_cast<int32_t>(q[i]) * a[i];
  return static_cast<float>(s) * (load_f32(row) * load_f32(xa));
}

// Exact int32: sum(q a) - z sum(q), then the same float expression as the SIMD twins.
float dot_w8a7(const uint8_t* row, int64_t k, const void* xv) {
  const uint8_t* xa = static_cast<const uint8_t*>(xv);
  const int8_t* q = reinterpret_cast<const int8_t*>(row + kW8a7Header);
  const uint8_t* a = xa + kActHeader;
  int32_t s = 0;
  for (int64_t i = 0; i < k; ++i) s += static_cast<int32_t>(q[i]) * a[i];
  s -= load_i32(xa + 4) * load_i32(row + 4);
  return static_cast<float>(s) * (load_f32(row) * load_f32(xa));
}

template <int G, bool Asym>
float dot_int4(const uint8_t* row, int64_t k, const void* xv) {
  const float* x = static_cast<const float*>(xv);
  float acc = 0.f;
  for (int64_t g = 0; g < k; g += G) {
    const int64_t n = k - g < G ? k - g : G;
    const float d = half_to_float(load_u16(row));
    const float m = Asym ? half_to_float(load_u16(row + 2)) : 0.f;
    row += int4_hdr(Asym);
    float sq = 0.f, sx = 0.f;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t b = row[(i / 32) * 16 + (i % 16)];
      const int q = ((i % 32) < 16) ? (b & 0xf) : (b >> 4);
      sq += static_cast<float>(Asym ? q : q - 8) * x[g + i];
      if (Asym) sx += x[g + i];
    }
    acc += d * sq + m * sx;
    row += round_up(n, 32) / 2;
  }
  return acc;
}

// Symmetric int4 x int8 activations per block of G: exact int32 per group, then
// acc = fma(d_w * d_a, float(sum), acc) in group order (the SIMD twins do the same per lane).
template <int G>
float dot_int4_a8(const uint8_t* row, int64_t k, const void* xv) {
  const uint8_t* xa = static_cast<const uint8_t*>(xv);
  const int8_t* a = reinterpret_cast<const int8_t*>(xa + actb_header(k, G));
  const int64_t nb = actb_blocks(k, G);
  float acc = 0.f;
  for (int64_t g = 0; g < nb; ++g) {
    const int64_t n = k - g * G < G ? k - g * G : G;
    const float dw = half_to_float(load_u16(row));
    row += 2;
    int32_t s = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t b = row[(i / 32) * 16 + (i % 16)];
      const int q = ((i % 32) < 16) ? (b & 0xf) : (b >> 4);
      s += (q - 8) * a[g * G + i];
    }
    acc = std::fma(dw * load_f32(xa + 4 * g), static_cast<float>(s), acc);
    row += round_up(n, 32) / 2;
  }
  return acc;
}

// int8_g32_a8 (Q8_0 weights) x int8 activations per block of 32: exact int32 per block, then
// acc = fma(d_w * d_a, float(sum), acc) in block order (the SIMD twins do the same per lane).
float dot_q8_a8(const uint8_t* row, int64_t k, const void* xv) {
  const uint8_t* xa = static_cast<const uint8_t*>(xv);
  const int8_t* a = reinterpret_cast<const int8_t*>(xa + actb_header(k, kQ8Block));
  const int64_t nb = actb_blocks(k, kQ8Block);
  float acc = 0.f;
  for (int64_t b = 0; b < nb; ++b, row += kQ8BlockBytes) {
    const int8_t* q = reinterpret_cast<const int8_t*>(row + 2);
    int32_t s = 0;
    for (int64_t i = 0; i < kQ8Block; ++i) s += q[i] * a[b * kQ8Block + i];  // padding: 0 x 0
    acc = std::fma(half_to_float(load_u16(row)) * load_f32(xa + 4 * b), static_cast<float>(s), acc);
  }
  return acc;
}

float dot_f32_sparse(const uint8_t* row, int64_t, const void* xv) {
  const float* x = static_cast<const float*>(xv);
  const int64_t n = load_u32(row);
  const uint8_t* vals = row + 4;
  const uint8_t* idx = vals + 4 * n;
  float s = 0.f;
  for (int64_t j = 0; j < n; ++j) s += load_f32(vals + 4 * j) * x[load_u16(idx + 2 * j)];
  return s;
}

float dot_int8_sparse(const uint8_t* row, int64_t, const void* xv) {
  const float* x = static_cast<const float*>(xv);
  const int64_t n = load_u32(row);
  const uint8_t* base = row + 8;
  const uint8_t* off = base + 2 * (n / kSparseGroup);
  const int8_t* vals = reinterpret_cast<const int8_t*>(off + n);
  float s = 0.f;
  for (int64_t j = 0; j < n; ++j)
    s += static_cast<float>(vals[j]) * x[load_u16(base + 2 * (j / kSparseGroup)) + off[j]];
  return s * load_f32(row + 4);
}

float dot_int8_bs(const uint8_t* row, int64_t k, const void* xv) {
  const float* x = static_cast<const float*>(xv);
  const int64_t nb = load_u32(row);
  const uint8_t* idx = row + 8;
  const int8_t* vals = reinterpret_cast<const int8_t*>(idx + 2 * nb);
  float s = 0.f;
  for (int64_t j = 0; j < nb; ++j) {
    const int64_t c0 = load_u16(idx + 2 * j) * kSparseBlock;
    for (int64_t i = 0; i < kSparseBlock && c0 + i < k; ++i)
      s += static_cast<float>(vals[kSparseBlock * j + i]) * x[c0 + i];
  }
  return s * load_f32(row + 4);
}

float dot_int8_24(const uint8_t* row, int64_t k, const void* xv) {
  const float* x = static_cast<const float*>(xv);
  const float scale = load_f32(row);
  row += 4;
  float s = 0.f;
  for (int64_t c = 0; c < k; c += 16) {
    const uint32_t nib = load_u32(row + 8);
    for (int64_t j = 0; j < 8; ++j) {
      const int64_t col = c + 8 * (j / 4) + ((nib >> (4 * j)) & 7);
      if (col < k) s += static_cast<float>(static_cast<int8_t>(row[j])) * x[col];
    }
    row += 12;
  }
  return s * scale;
}

template <DotFn Dot>
void matvec(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, float* y,
            int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) y[r - row_begin] = Dot(row_ptr(w, row_bytes, r), k, x);
}

template <DotFn Dot>
void matmul(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes,
            int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  for (int64_t i = 0; i < m; ++i) {
    const void* xi = static_cast<const uint8_t*>(x) + i * x_row_bytes;
    for (int64_t r = row_begin; r < row_end; ++r)
      y[i * ldy + r] = Dot(row_ptr(w, row_bytes, r), k, xi);
  }
}

template <DotFn Dot>
FormatKernels make() {
  return FormatKernels{matvec<Dot>, matmul<Dot>};
}

template <bool Asym>
FormatKernels int4_kernels(int group) {
  switch (group) {
    case 32: return make<dot_int4<32, Asym>>();
    case 64: return make<dot_int4<64, Asym>>();
    default: return make<dot_int4<128, Asym>>();
  }
}

}  // namespace

const ActVariant& bf16_act_variant() {
  static const ActVariant v{ActType::bf16, actbf16_row_bytes, convert_bf16_act, make<dot_bf16_bf16>()};
  return v;
}

FormatKernels kernels_generic(const Spec& s) {
  switch (s.kind) {
    case Kind::bf16: return make<dot_bf16>();
    case Kind::int8: return make<dot_int8>();
    case Kind::w8a8: return make<dot_w8a8>();
    case Kind::w8a7: return make<dot_w8a7>();
    case Kind::int4: return s.asym ? int4_kernels<true>(s.group) : int4_kernels<false>(s.group);
    case Kind::f32_sparse: return make<dot_f32_sparse>();
    case Kind::int8_sparse: return make<dot_int8_sparse>();
    case Kind::int8_bs: return make<dot_int8_bs>();
    case Kind::int8_24: return make<dot_int8_24>();
    case Kind::q8_a8: return make<dot_q8_a8>();
    case Kind::int4_a8:
      if (s.group == 32) return make<dot_int4_a8<32>>();
      if (s.group == 64) return make<dot_int4_a8<64>>();
      return make<dot_int4_a8<128>>();
  }
  return {};
}

}  // namespace fmt
}  // namespace cibench
