// AVX-512 kernels. This file alone is compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq.
#include <immintrin.h>

#include <cmath>
#include <vector>

#include "engines/kernels/encoder_math.h"
#include "engines/kernels/kernels.h"
#include "engines/kernels/vec_avx512.h"
#include "engines/kernels/transpose_avx.h"

namespace cibench {
namespace {

#include "engines/kernels/simd_kernels.inc"

}  // namespace

const KernelTable& kernels_avx512() {
  static const KernelTable t = make_table<VecAvx512>(Isa::avx512);
  return t;
}

}  // namespace cibench
