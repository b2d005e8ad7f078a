#pragma once
// IEEE 754 binary16 <-> binary32 in software, bit-exact with the F16C instructions
// (vcvtps2ph with round-to-nearest-even, vcvtph2ps): the generic twin of the half-precision KV
// cache and the tail handling of the SIMD paths. Unlike fmt_common.h's f32_to_f16 (int4 scales,
// which saturate), values of 65520 and above round to infinity as the hardware does, half
// subnormals are produced and read exactly, and NaNs stay NaNs (quietened, top payload bits kept).
// The one scalar half reader of cibench: the packed formats' int4 scales (fmt_common.h), the
// safetensors / GGUF loaders (f16_to_f32 in safetensors.h) and the KV cache all call it.
// Internal linkage (anonymous namespace): every ISA's source file gets its own copy.
#include <cstdint>
#include <cstring>

namespace cibench {
namespace {

inline uint16_t half_from_float(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) {  // inf, NaN
    if (a == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: infinity
  if (a < 0x38800000u) {   // below 2^-14: a half subnormal (or zero), in units of 2^-24
    if (a < 0x33000000u) return static_cast<uint16_t>(sign);  // below 2^-25 (and 2^-25: tie to 0)
    const uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;  // 14..24
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;  // may become the smallest normal
    return static_cast<uint16_t>(sign | q);
  }
  const uint32_t r = a - 0x38000000u;  // rebias the exponent from 127 to 15
  uint32_t q = r >> 13;
  const uint32_t rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;  // a carry may reach infinity
  return static_cast<uint16_t>(sign | q);
}

inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else {  // subnormal: normalise the mantissa
      int e = -1;
      uint32_t m = man;
      do {
        ++e;
        m <<= 1;
      } while ((m & 0x400u) == 0);
      u = sign | ((112u - static_cast<uint32_t>(e)) << 23) | ((m & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0u);  // NaNs come out quiet
  } else {
    u = sign | ((exp + 112u) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace
}  // namespace cibench
