#include "engines/models/ggml_quants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engines/core/error.h"
#include "engines/core/format.h"
#include "engines/kernels/half.h"

namespace cibench {

namespace {

void store_half(uint8_t* p, float d) {
  const uint16_t h = half_from_float(d);
  p[0] = static_cast<uint8_t>(h & 0xff);
  p[1] = static_cast<uint8_t>(h >> 8);
}

float load_half(const uint8_t* p) {
  return half_to_float(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

}  // namespace

// Q8_0 blocks are the rows of the int8_g32_a8 format (engines/kernels/fmt_pack.cpp), which
// packs and unpacks them with quantize_row_q8_0_ref's rounding: one implementation for both.
void quantize_q8_0(const float* x, int64_t n, uint8_t* out) {
  static const auto pack = format_by_name("int8_g32_a8").pack_row;
  pack(x, n, out);
}

void quantize_q4_0(const float* x, int64_t n, uint8_t* out) {
  for (int64_t b = 0; b < n / kGgmlBlock; ++b, x += kGgmlBlock, out += kQ4_0BlockBytes) {
    float amax = 0.0f, m = 0.0f;
    for (int j = 0; j < kGgmlBlock; ++j) {
      if (amax < std::fabs(x[j])) {  // strictly larger: the first of tied magnitudes wins
        amax = std::fabs(x[j]);
        m = x[j];
      }
    }
    const float d = m / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_half(out, d);
    for (int j = 0; j < kGgmlBlock / 2; ++j) {
      const float v0 = x[j] * id, v1 = x[j + kGgmlBlock / 2] * id;
      // v + 8.5 lies in [0.5, 16.5]: the conversion truncates (floor), 16 is clamped to 15.
      const int q0 = std::min(15, static_cast<int>(v0 + 8.5f));
      const int q1 = std::min(15, static_cast<int>(v1 + 8.5f));
      out[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void dequantize_q8_0(const uint8_t* in, int64_t n, float* y) {
  static const auto unpack = format_by_name("int8_g32_a8").unpack_row;
  unpack(in, n, y);
}

void dequantize_q4_0(const uint8_t* in, int64_t n, float* y) {
  for (int64_t b = 0; b < n / kGgmlBlock; ++b, in += kQ4_0BlockBytes, y += kGgmlBlock) {
    const float d = load_half(in);
    for (int j = 0; j < kGgmlBlock / 2; ++j) {
      y[j] = static_cast<float>((in[2 + j] & 0x0f) - 8) * d;
      y[j + kGgmlBlock / 2] = static_cast<float>((in[2 + j] >> 4) - 8) * d;
    }
  }
}

}  // namespace cibench

// ---------------------------------------------------------------------------------------------
// Reading GGUF tensors. Every expression below keeps ggml's: f32 products of f32 factors in its
// order, integer codes converted exactly, so the values equal ggml-quants.c's dequantize_row_*.

namespace cibench {

namespace {

uint32_t load_u32le(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

float load_bf16(const uint8_t* p) {
  const uint32_t bits = static_cast<uint32_t>(p[0] | (p[1] << 8)) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

constexpr int64_t kSuper = 256;  // values per K-quant super-block

void dequantize_q4_1(const uint8_t* in, int64_t n, float* y) {
  for (int64_t b = 0; b < n / 32; ++b, in += 20, y += 32) {
    const float d = load_half(in), m = load_half(in + 2);
    const uint8_t* qs = in + 4;
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(qs[j] & 0x0f) * d + m;
      y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
    }
  }
}

// Q5_0 (Asym false) and Q5_1 (true): the fifth bit of value j is bit j of the u32 qh.
template <bool Asym>
void dequantize_q5(const uint8_t* in, int64_t n, float* y) {
  constexpr size_t bytes = Asym ? 24 : 22;
  for (int64_t b = 0; b < n / 32; ++b, in += bytes, y += 32) {
    const float d = load_half(in);
    const float m = Asym ? load_half(in + 2) : 0.0f;
    const uint32_t qh = load_u32le(in + (Asym ? 4 : 2));
    const uint8_t* qs = in + (Asym ? 8 : 6);
    for (int j = 0; j < 16; ++j) {
      const int q0 = (qs[j] & 0x0f) | static_cast<int>((qh >> j) & 1) << 4;
      const int q1 = (qs[j] >> 4) | static_cast<int>((qh >> (j + 16)) & 1) << 4;
      if constexpr (Asym) {
        y[j] = static_cast<float>(q0) * d + m;
        y[j + 16] = static_cast<float>(q1) * d + m;
      } else {
        y[j] = static_cast<float>(q0 - 16) * d;
        y[j + 16] = static_cast<float>(q1 - 16) * d;
      }
    }
  }
}

void dequantize_q2_k(const uint8_t* in, int64_t n, float* y) {
  for (int64_t b = 0; b < n / kSuper; ++b, in += 84) {
    const uint8_t* scales = in;
    const uint8_t* qs = in + 16;
    const float d = load_half(in + 80), dmin = load_half(in + 82);
    int sub = 0;
    for (int half = 0; half < 2; ++half, qs += 32) {
      for (int s = 0; s < 4; ++s) {
        for (int part = 0; part < 2; ++part, ++sub) {  // 16 values each, bytes 16 part + l
          const float dl = d * static_cast<float>(scales[sub] & 0x0f);
          const float ml = dmin * static_cast<float>(scales[sub] >> 4);
          for (int l = 0; l < 16; ++l)
            *y++ = dl * static_cast<float>((qs[16 * part + l] >> (2 * s)) & 3) - ml;
        }
      }
    }
  }
}

void dequantize_q3_k(const uint8_t* in, int64_t n, float* y) {
  for (int64_t b = 0; b < n / kSuper; ++b, in += 110) {
    const uint8_t* hmask = in;
    const uint8_t* qs = in + 32;
    const uint8_t* sc = in + 96;
    const float d = load_half(in + 108);
    int scale[16];
    for (int j = 0; j < 16; ++j) {
      const int lo = j < 8 ? (sc[j] & 0x0f) : (sc[j - 8] >> 4);
      const int hi = (sc[8 + j % 4] >> (2 * (j / 4))) & 3;
      scale[j] = (lo | hi << 4) - 32;
    }
    int sub = 0;
    for (int half = 0; half < 2; ++half, qs += 32) {
      for (int s = 0; s < 4; ++s) {
        const uint8_t bit = static_cast<uint8_t>(1u << (4 * half + s));
        for (int part = 0; part < 2; ++part, ++sub) {
          const float dl = d * static_cast<float>(scale[sub]);
          for (int l = 0; l < 16; ++l) {
            const int i = 16 * part + l;
            const int q = ((qs[i] >> (2 * s)) & 3) - ((hmask[i] & bit) ? 0 : 4);
            *y++ = dl * static_cast<float>(q);
          }
        }
      }
    }
  }
}

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K super-block.
void scale_min_k4(int j, const uint8_t* q, int* sc, int* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
    *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q4_K (High false) and Q5_K (true).
template <bool High>
void dequantize_q45_k(const uint8_t* in, int64_t n, float* y) {
  constexpr size_t bytes = High ? 176 : 144;
  for (int64_t b = 0; b < n / kSuper; ++b, in += bytes) {
    const float d = load_half(in), dmin = load_half(in + 2);
    const uint8_t* scales = in + 4;
    const uint8_t* qh = in + 16;
    const uint8_t* ql = in + (High ? 48 : 16);
    for (int i = 0; i < 4; ++i, ql += 32) {  // 64 values: low nibbles, then high nibbles
      for (int part = 0; part < 2; ++part) {
        int sc, mn;
        scale_min_k4(2 * i + part, scales, &sc, &mn);
        const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
        for (int l = 0; l < 32; ++l) {
          int q = part ? (ql[l] >> 4) : (ql[l] & 0x0f);
          if constexpr (High) q += ((qh[l] >> (2 * i + part)) & 1) << 4;
          *y++ = dl * static_cast<float>(q) - ml;
        }
      }
    }
  }
}

void dequantize_q6_k(const uint8_t* in, int64_t n, float* y) {
  for (int64_t b = 0; b < n / kSuper; ++b, in += 210) {
    const uint8_t* ql = in;
    const uint8_t* qh = in + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(in + 192);
    const float d = load_half(in + 208);
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, y += 128) {
      for (int s = 0; s < 4; ++s) {  // values 32 s + l of these 128
        for (int l = 0; l < 32; ++l) {
          const uint8_t lo = ql[l + 32 * (s & 1)];
          const int q = ((s < 2 ? lo & 0x0f : lo >> 4) | (((qh[l] >> (2 * s)) & 3) << 4)) - 32;
          // ggml: d * sc * q, left to right.
          y[32 * s + l] = d * static_cast<float>(sc[2 * s + l / 16]) * static_cast<float>(q);
        }
      }
    }
  }
}

}  // namespace

bool ggml_type_readable(uint32_t t) {
  switch (t) {
    case kGgmlF32: case kGgmlF16: case kGgmlBF16: case kGgmlQ4_0: case kGgmlQ4_1: case kGgmlQ5_0:
    case kGgmlQ5_1: case kGgmlQ8_0: case kGgmlQ2_K: case kGgmlQ3_K: case kGgmlQ4_K: case kGgmlQ5_K:
    case kGgmlQ6_K:
      return true;
    default:
      return false;
  }
}

const char* ggml_readable_types() {
  return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K";
}

int64_t ggml_block_values(uint32_t t) {
  switch (t) {
    case kGgmlF32: case kGgmlF16: case kGgmlBF16: return 1;
    case kGgmlQ4_0: case kGgmlQ4_1: case kGgmlQ5_0: case kGgmlQ5_1: case kGgmlQ8_0: return 32;
    case kGgmlQ2_K: case kGgmlQ3_K: case kGgmlQ4_K: case kGgmlQ5_K: case kGgmlQ6_K: return kSuper;
    default: return 0;
  }
}

size_t ggml_block_bytes(uint32_t t) {
  switch (t) {
    case kGgmlF32: return 4;
    case kGgmlF16: case kGgmlBF16: return 2;
    case kGgmlQ4_0: return kQ4_0BlockBytes;
    case kGgmlQ4_1: return 20;
    case kGgmlQ5_0: return 22;
    case kGgmlQ5_1: return 24;
    case kGgmlQ8_0: return kQ8_0BlockBytes;
    case kGgmlQ2_K: return 84;
    case kGgmlQ3_K: return 110;
    case kGgmlQ4_K: return 144;
    case kGgmlQ5_K: return 176;
    case kGgmlQ6_K: return 210;
    default: return 0;
  }
}

void dequantize_ggml(uint32_t t, const uint8_t* in, int64_t n, float* y) {
  switch (t) {
    case kGgmlF32: std::memcpy(y, in, static_cast<size_t>(n) * 4); return;
    case kGgmlF16:
      for (int64_t i = 0; i < n; ++i) y[i] = load_half(in + 2 * i);
      return;
    case kGgmlBF16:
      for (int64_t i = 0; i < n; ++i) y[i] = load_bf16(in + 2 * i);
      return;
    case kGgmlQ4_0: dequantize_q4_0(in, n, y); return;
    case kGgmlQ4_1: dequantize_q4_1(in, n, y); return;
    case kGgmlQ5_0: dequantize_q5<false>(in, n, y); return;
    case kGgmlQ5_1: dequantize_q5<true>(in, n, y); return;
    case kGgmlQ8_0: dequantize_q8_0(in, n, y); return;
    case kGgmlQ2_K: dequantize_q2_k(in, n, y); return;
    case kGgmlQ3_K: dequantize_q3_k(in, n, y); return;
    case kGgmlQ4_K: dequantize_q45_k<false>(in, n, y); return;
    case kGgmlQ5_K: dequantize_q45_k<true>(in, n, y); return;
    case kGgmlQ6_K: dequantize_q6_k(in, n, y); return;
    default: break;
  }
  throw Error(str("ggml type ", t, " cannot be dequantised"));
}

}  // namespace cibench
