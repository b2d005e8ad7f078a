// AVX2 + FMA + F16C kernels: the f32 and element-wise table at the avx2 level. Everything below
// the standard and baseline headers is in the AVX2 target region (isa_target.h) with internal
// linkage; the table, isa_entry::kernels_avx2, is a constant handed out by kernels_for() only.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engines/kernels/isa_entries.h"
#include "engines/kernels/isa_target.h"
#include "engines/kernels/kernels.h"

#define CIBENCH_TARGET_LEVEL 1
CIBENCH_TARGET_BEGIN_AVX2
#include "engines/kernels/encoder_math.h"
#include "engines/kernels/transpose_avx.h"
#include "engines/kernels/vec_avx2.h"

namespace cibench {
namespace {

#include "engines/kernels/simd_kernels.inc"

}  // namespace

namespace isa_entry {
constinit const KernelTable kernels_avx2 = make_table<VecAvx2>(Isa::avx2);
}  // namespace isa_entry

}  // namespace cibench
CIBENCH_TARGET_END
