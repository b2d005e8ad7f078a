#pragma once
// The entry tables of the kernel files above the x86-64 baseline: one constant per file, named
// after it, its only symbol with external linkage. A table holds pointers into code compiled for
// its level (in a target region, isa_target.h); reading it runs none of that code, calling
// through it does. This header is included by those kernel files and by the gate,
// isa_entries.cpp, alone: everyone else asks the gate (kernels_for, fmt::format_entries), which
// hands a table out only where its level is supported. scripts/check-isa-isolation.py holds the
// build to that (each object's exports, its weak copies, the uses of every name declared here).
#include "engines/kernels/fmt_common.h"
#include "engines/kernels/kernels.h"

namespace cibench {
namespace isa_entry {

extern const KernelTable kernels_avx2;        // kernels_avx2.cpp
extern const KernelTable kernels_avx512;      // kernels_avx512.cpp (avx512_vnni and amx run it too)
extern const fmt::FormatEntries fmt_avx2;     // fmt_avx2.cpp
extern const fmt::FormatEntries fmt_avx512;   // fmt_avx512.cpp
extern const fmt::FormatEntries fmt_avx512vnni;  // fmt_avx512vnni.cpp
extern const fmt::FormatEntries fmt_amx;      // fmt_amx.cpp

}  // namespace isa_entry
}  // namespace cibench
