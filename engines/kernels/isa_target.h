#pragma once
// Target regions: the only way code above the x86-64 baseline enters cibench.
//
// Every translation unit is compiled for the baseline (no -mavx2, -march=...; the check
// scripts/check-isa-isolation.py fails otherwise). A kernel file of a level (fmt_avx2.cpp,
// kernels_avx512.cpp, ...) first includes the standard and baseline headers, then opens the
// level's region, includes its vector headers and defines its kernels, all with internal linkage,
// and its entry table (engines/kernels/isa_entries.h), then closes the region:
//
//   #include <vector>                              // standard and baseline headers first
//   #include "engines/kernels/fmt_common.h"
//   #include "engines/kernels/isa_entries.h"
//   #include "engines/kernels/isa_target.h"
//   #define CIBENCH_TARGET_LEVEL 1                  // what encoder_math.h and friends test
//   CIBENCH_TARGET_BEGIN_AVX2
//   #include "engines/kernels/vec_avx2.h"         // vector headers inside
//   namespace cibench { ... namespace { kernels } ... isa_entry::fmt_avx2 ... }
//   CIBENCH_TARGET_END
//
// Why a region and not per-file flags: inline functions and template instantiations of headers
// (std::vector<float>::resize, std::min, a project header's inline helper) are emitted as weak
// copies in every object that uses them out of line, and the linker keeps one copy for the whole
// program. Compiled with -mavx512f, such a copy can be the one baseline code calls on every CPU.
// A function takes the target options in force where it is declared, so templates and inline
// functions declared before the region (the standard library, the baseline headers) keep the
// baseline in their out-of-line copies, while the region's own functions, and the headers
// included inside it, get the level. GCC and Clang both inline a baseline function into a
// function of a higher target, so the kernels lose nothing.
//
// GCC's C++ front end does not define __AVX2__ / __AVX512F__ after a target pragma (its C front
// end does), hence CIBENCH_TARGET_LEVEL: 0 generic, 1 AVX2 + FMA + F16C, 2 AVX-512 F/BW/VL/DQ,
// 3 + VNNI and BF16, 4 + AMX (the cibench::Isa order).

#define CIBENCH_PRAGMA_(x) _Pragma(#x)
#define CIBENCH_PRAGMA(x) CIBENCH_PRAGMA_(x)

#if defined(__clang__)
#define CIBENCH_TARGET_BEGIN_(features) \
  CIBENCH_PRAGMA(clang attribute push(__attribute__((target(features))), apply_to = function))
#define CIBENCH_TARGET_END CIBENCH_PRAGMA(clang attribute pop)
#elif defined(__GNUC__)
#define CIBENCH_TARGET_BEGIN_(features) CIBENCH_PRAGMA(GCC push_options) CIBENCH_PRAGMA(GCC target(features))
#define CIBENCH_TARGET_END CIBENCH_PRAGMA(GCC pop_options)
#else
#error "cibench's kernel files need GCC or Clang (target regions)"
#endif

// The features of each level, as cpu_has_isa() requires them (engines/core/cpu.cpp).
#define CIBENCH_TARGET_BEGIN_AVX2 CIBENCH_TARGET_BEGIN_("avx2,fma,f16c")
#define CIBENCH_TARGET_BEGIN_AVX512 CIBENCH_TARGET_BEGIN_("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")
#define CIBENCH_TARGET_BEGIN_AVX512_VNNI \
  CIBENCH_TARGET_BEGIN_("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16")
#define CIBENCH_TARGET_BEGIN_AMX \
  CIBENCH_TARGET_BEGIN_("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,amx-tile,amx-int8,amx-bf16")
