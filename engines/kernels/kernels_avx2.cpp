// AVX2 + FMA kernels. This file alone is compiled with -mavx2 -mfma -mf16c.
#include <immintrin.h>

#include <cmath>
#include <vector>

#include "engines/kernels/encoder_math.h"
#include "engines/kernels/kernels.h"
#include "engines/kernels/vec_avx2.h"
#include "engines/kernels/transpose_avx.h"

namespace cibench {
namespace {

#include "engines/kernels/simd_kernels.inc"

}  // namespace

const KernelTable& kernels_avx2() {
  static const KernelTable t = make_table<VecAvx2>(Isa::avx2);
  return t;
}

}  // namespace cibench
