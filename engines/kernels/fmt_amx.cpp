// AMX kernels (tiles, INT8 and BF16). This file alone is compiled with the AVX-512 VNNI/BF16
// flags plus -mamx-tile -mamx-int8 -mamx-bf16.
// No row has an AMX kernel yet: every row falls back to its AVX-512 VNNI / AVX-512 kernels.
#include "engines/kernels/fmt_common.h"

namespace cibench {
namespace fmt {

FormatKernels kernels_amx(const Spec&) { return {}; }

}  // namespace fmt
}  // namespace cibench
