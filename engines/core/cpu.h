#pragma once
// CPU feature detection and instruction-set selection.
//
// The ISA level is chosen once, at first use, from the CPU's features; CIBENCH_ISA=<name> forces
// a lower level (and fails loudly when the CPU lacks the requested one). Every result records the
// level that actually ran.
#include <string>
#include <vector>

namespace cibench {

// Ordered: each level implies the ones before it.
enum class Isa : int {
  generic = 0,      // portable C++, the oracle for every fast path
  avx2 = 1,         // AVX2 + FMA + F16C
  avx512 = 2,       // AVX-512 F/BW/VL/DQ
  avx512_vnni = 3,  // + AVX-512 VNNI and AVX-512 BF16
  amx = 4,          // + AMX tiles (INT8 and BF16), with the OS permission granted
};
constexpr int kIsaCount = 5;

struct CpuFeatures {
  std::string vendor;
  std::string model_name;  // brand string from cpuid
  bool sse42 = false, avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512_vnni = false, avx512_bf16 = false, avx_vnni = false;
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;
  bool os_avx = false, os_avx512 = false;  // XCR0 says the OS saves the registers
  bool amx_permitted = false;              // arch_prctl(ARCH_REQ_XCOMP_PERM) succeeded
  std::string amx_note;                    // why AMX is unusable, when it is
  int logical_cpus = 0;

  // Space-separated list of the flags above that are present (for provenance).
  std::string flags_string() const;
};

// Detected once per process (thread-safe). Requests the AMX permission on first call.
const CpuFeatures& cpu_features();

const char* isa_name(Isa isa);
// Parses "generic", "avx2", "avx512", "avx512_vnni" (or "avx512vnni"), "amx". Throws on others.
Isa parse_isa(const std::string& name);
std::vector<Isa> all_isas();

bool isa_supported(Isa isa);
Isa best_supported_isa();
std::vector<Isa> supported_isas();

// The level in force: CIBENCH_ISA if set (throws Error if the CPU lacks it or the name is
// unknown), otherwise the best supported level. Cached after the first call.
Isa active_isa();
// Overrides the level in force (tests and `--isa`); throws if unsupported.
void set_active_isa(Isa isa);

}  // namespace cibench
