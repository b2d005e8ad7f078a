#include "engines/kernels/kernels.h"

namespace cibench {

const KernelTable& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::amx:
    case Isa::avx512_vnni:
    case Isa::avx512: return kernels_avx512();
    case Isa::avx2: return kernels_avx2();
    case Isa::generic: return kernels_generic();
  }
  return kernels_generic();
}

const KernelTable& active_kernels() { return kernels_for(active_isa()); }

}  // namespace cibench
