#pragma once
// CPU feature detection and instruction-set selection.
//
// The ISA level is chosen once, at first use, from the CPU's features. CIBENCH_ISA=<name> makes
// the process behave as if the CPU stopped at that level: it is the level in force and the ceiling
// of every level the process may use (tests that loop over the supported levels then cover
// exactly what a host of that level would run). Naming a level the CPU lacks fails loudly. Every
// result records the level that actually ran.
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
  int family = 0, model = 0;  // cpuid leaf 1, display family and model (extended fields added)

  // AVX-512 executed as two 256-bit halves (AMD Zen 4, family 0x19). There the AVX2 decode
  // matvecs of w8a8 and int8_g32_a8 stream the weights faster than the AVX-512 ones (measured
  // 1.3-1.8x), so the format table runs those at the AVX-512 levels (formats.cpp).
  bool avx512_split_datapath() const { return vendor == "AuthenticAMD" && family == 0x19 && avx512f; }
  // AVX-512 on a full-width datapath: Intel's, AMD's from Zen 5 (family 0x1A; its mobile parts,
  // which split 512-bit operations too, are not told apart: not measured). There the format table
  // decodes the int8-activation and int4 rows from the rows laid out in 16-row blocks (formats.cpp).
  bool avx512_full_width() const { return avx512f && !avx512_split_datapath(); }

  // Space-separated list of the flags above that are present, and "avx512_split" (for provenance).
  std::string flags_string() const;
};

// Detected once per process (thread-safe). Requests the AMX permission on first call.
const CpuFeatures& cpu_features();

const char* isa_name(Isa isa);
// Parses "generic", "avx2", "avx512", "avx512_vnni" (or "avx512vnni"), "amx". Throws on others.
Isa parse_isa(const std::string& name);
std::vector<Isa> all_isas();

// What the CPU (and the OS) can run, ignoring CIBENCH_ISA.
bool cpu_has_isa(Isa isa);
Isa best_cpu_isa();
// The highest level this process may use: CIBENCH_ISA when set (throws Error if the name is
// unknown or the CPU lacks it), otherwise best_cpu_isa(). Read once.
Isa isa_ceiling();
// Why the ceiling is where it is: "CIBENCH_ISA=avx2" or "" when it is the CPU's best.
std::string isa_ceiling_source();

// Usable by this process: the CPU has it and it is not above the ceiling.
bool isa_supported(Isa isa);
// Why `isa` is not usable ("avx512 is not on this CPU (NAME)", "avx512 is above CIBENCH_ISA=avx2"),
// or "" when it is.
std::string isa_unavailable_reason(Isa isa);
Isa best_supported_isa();  // == isa_ceiling()
std::vector<Isa> supported_isas();

// The level in force: the ceiling unless set_active_isa() chose a lower one.
Isa active_isa();
// Overrides the level in force (tests and `--isa`); throws if the CPU lacks it or it is above
// the CIBENCH_ISA ceiling, naming which.
void set_active_isa(Isa isa);

}  // namespace cibench
