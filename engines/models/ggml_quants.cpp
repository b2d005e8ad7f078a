#include "engines/models/ggml_quants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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

void quantize_q8_0(const float* x, int64_t n, uint8_t* out) {
  for (int64_t b = 0; b < n / kGgmlBlock; ++b, x += kGgmlBlock, out += kQ8_0BlockBytes) {
    float amax = 0.0f;
    for (int j = 0; j < kGgmlBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_half(out, d);
    for (int j = 0; j < kGgmlBlock; ++j) {
      const float v = x[j] * id;  // one rounding, then roundf: as ggml (no fused multiply-add)
      out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(v)));
    }
  }
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
  for (int64_t b = 0; b < n / kGgmlBlock; ++b, in += kQ8_0BlockBytes, y += kGgmlBlock) {
    const float d = load_half(in);
    for (int j = 0; j < kGgmlBlock; ++j)
      y[j] = static_cast<float>(static_cast<int8_t>(in[2 + j])) * d;
  }
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
