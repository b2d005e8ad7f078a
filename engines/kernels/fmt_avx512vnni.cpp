// AVX-512 VNNI + AVX-512 BF16 kernels. This file alone is compiled with the AVX-512 flags plus
// -mavx512vnni -mavx512bf16. Only w8a8 has a kernel of its own here for now (vpdpbusd); every
// other row falls back to its AVX-512 kernels.
// NOT EXECUTED on the development host (AMD EPYC Zen 3: no AVX-512, no VNNI): written to the
// Intel intrinsics documentation, compiled, dispatched only when cpuid reports the features, and
// untested here (the twin tests skip unsupported levels).
#include <immintrin.h>

#include <cstring>

#include "engines/kernels/fmt_common.h"

namespace cibench {
namespace fmt {
namespace {

struct Dot64Vnni {
  // acc += |w| (u8) . (a * sign w) (s8), four products per int32 lane, no saturation.
  static inline __m512i acc(__m512i acc, __m512i a, __m512i w, __m512i wabs) {
    const __m512i sa = _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(w), _mm512_setzero_si512(), a);
    return _mm512_dpbusd_epi32(acc, wabs, sa);
  }
};

#include "engines/kernels/fmt_w8a8_512.inc"

}  // namespace

FormatKernels kernels_avx512vnni(const Spec& s) {
  if (s.kind == Kind::w8a8) return FormatKernels{w8a8_matvec_512<Dot64Vnni>, w8a8_matmul_512<Dot64Vnni>};
  return {};
}

}  // namespace fmt
}  // namespace cibench
