// The gate: the one place that names the kernel files' entry tables (isa_entries.h), each handed
// out only where its level is supported (the CPU has it and CIBENCH_ISA does not cap it below).
// Baseline code reaches code above the baseline through these functions alone, so no table
// builder, initialiser or lookup runs a level's code on a CPU without that level.
#include <array>

#include "engines/core/error.h"
#include "engines/kernels/isa_entries.h"

namespace cibench {
namespace {

template <typename T>
const T* gated(Isa level, const T& entry) {
  return isa_supported(level) ? &entry : nullptr;
}

}  // namespace

namespace fmt {

const FormatEntries* format_entries(Isa level) {
  switch (level) {
    case Isa::generic: return nullptr;
    case Isa::avx2: return gated(Isa::avx2, isa_entry::fmt_avx2);
    case Isa::avx512: return gated(Isa::avx512, isa_entry::fmt_avx512);
    case Isa::avx512_vnni: return gated(Isa::avx512_vnni, isa_entry::fmt_avx512vnni);
    case Isa::amx: return gated(Isa::amx, isa_entry::fmt_amx);
  }
  return nullptr;
}

const FormatEntries& lower_entries(Isa level) {
  const FormatEntries* e = format_entries(level);
  if (!e)
    throw Error(str("the ", isa_name(level), " format kernels were asked for where that level is not supported (",
                    isa_unavailable_reason(level), ")"));
  return *e;
}

}  // namespace fmt

const KernelTable& kernels_for(Isa isa) {
  // Levels without a table of their own run the next lower one's (avx512_vnni and amx: avx512's).
  static const std::array<const KernelTable*, kIsaCount> tables = [] {
    std::array<const KernelTable*, kIsaCount> t{};
    t[static_cast<int>(Isa::generic)] = &kernels_generic();
    t[static_cast<int>(Isa::avx2)] = gated(Isa::avx2, isa_entry::kernels_avx2);
    t[static_cast<int>(Isa::avx512)] = gated(Isa::avx512, isa_entry::kernels_avx512);
    for (Isa above : {Isa::avx512_vnni, Isa::amx})
      if (isa_supported(above)) t[static_cast<int>(above)] = t[static_cast<int>(Isa::avx512)];
    return t;
  }();
  const KernelTable* t = tables[static_cast<int>(isa)];
  if (!t) throw Error(str("no kernels at ", isa_name(isa), ": ", isa_unavailable_reason(isa)));
  return *t;
}

const KernelTable& active_kernels() { return kernels_for(active_isa()); }

}  // namespace cibench
