#include "engines/core/cpu.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "engines/core/error.h"

namespace cibench {
namespace {

constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtileData = 18;

unsigned long long read_xcr0() {
  unsigned int eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

CpuFeatures detect() {
  CpuFeatures f;
  f.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  unsigned int a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  const unsigned int max_leaf = a;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  f.vendor = vendor;

  __get_cpuid(1, &a, &b, &c, &d);
  const unsigned int base_family = (a >> 8) & 0xF, base_model = (a >> 4) & 0xF;
  f.family = static_cast<int>(base_family == 0xF ? base_family + ((a >> 20) & 0xFF) : base_family);
  f.model = static_cast<int>(base_family == 0x6 || base_family == 0xF ? (((a >> 16) & 0xF) << 4) | base_model : base_model);
  f.sse42 = c & (1u << 20);
  f.fma = c & (1u << 12);
  f.f16c = c & (1u << 29);
  const bool osxsave = c & (1u << 27);
  f.avx = c & (1u << 28);
  unsigned long long xcr0 = osxsave ? read_xcr0() : 0;
  f.os_avx = (xcr0 & 0x6) == 0x6;
  f.os_avx512 = (xcr0 & 0xe6) == 0xe6;

  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    f.avx2 = b & (1u << 5);
    f.avx512f = b & (1u << 16);
    f.avx512dq = b & (1u << 17);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
    f.avx512_vnni = c & (1u << 11);
    f.amx_bf16 = d & (1u << 22);
    f.amx_tile = d & (1u << 24);
    f.amx_int8 = d & (1u << 25);
    __cpuid_count(7, 1, a, b, c, d);
    f.avx_vnni = a & (1u << 4);
    f.avx512_bf16 = a & (1u << 5);
  }
  if (!f.os_avx) {
    f.avx = f.avx2 = f.fma = f.f16c = false;
  }
  if (!f.os_avx512) {
    f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512_vnni = f.avx512_bf16 = false;
  }

  if (f.amx_tile) {
    // Linux keeps AMX tile state off until a process asks for it (once per process).
    long rc = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData);
    unsigned long bitmask = 0;
    long rc2 = syscall(SYS_arch_prctl, kArchGetXcompPerm, &bitmask);
    f.amx_permitted = rc == 0 && rc2 == 0 && (bitmask & (1ul << kXfeatureXtileData));
    if (!f.amx_permitted) f.amx_note = "the kernel refused ARCH_REQ_XCOMP_PERM for AMX tile data";
  } else {
    f.amx_note = "the CPU has no AMX tiles (cpuid leaf 7)";
  }

  unsigned int ext = __get_cpuid_max(0x80000000, nullptr);
  if (ext >= 0x80000004) {
    char brand[49] = {};
    for (unsigned int i = 0; i < 3; ++i) {
      __get_cpuid(0x80000002 + i, &a, &b, &c, &d);
      std::memcpy(brand + 16 * i, &a, 4);
      std::memcpy(brand + 16 * i + 4, &b, 4);
      std::memcpy(brand + 16 * i + 8, &c, 4);
      std::memcpy(brand + 16 * i + 12, &d, 4);
    }
    std::string s = brand;
    const size_t first = s.find_first_not_of(' ');
    const size_t last = s.find_last_not_of(' ');
    f.model_name = first == std::string::npos ? "" : s.substr(first, last - first + 1);
  }
  return f;
}

std::once_flag g_isa_once;
std::atomic<int> g_active_isa{-1};

}  // namespace

std::string CpuFeatures::flags_string() const {
  std::string s;
  auto add = [&](bool v, const char* n) {
    if (!v) return;
    if (!s.empty()) s += ' ';
    s += n;
  };
  add(sse42, "sse4_2");
  add(avx, "avx");
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512dq, "avx512dq");
  add(avx512_vnni, "avx512_vnni");
  add(avx512_bf16, "avx512_bf16");
  add(avx_vnni, "avx_vnni");
  add(avx512_split_datapath(), "avx512_split");  // not a cpuid flag: see avx512_split_datapath()
  add(amx_tile, "amx_tile");
  add(amx_int8, "amx_int8");
  add(amx_bf16, "amx_bf16");
  add(amx_permitted, "amx_permitted");
  return s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::generic: return "generic";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::avx512_vnni: return "avx512_vnni";
    case Isa::amx: return "amx";
  }
  return "unknown";
}

Isa parse_isa(const std::string& name) {
  for (Isa i : all_isas())
    if (name == isa_name(i)) return i;
  if (name == "avx512vnni") return Isa::avx512_vnni;
  if (name == "native" || name == "best") return best_supported_isa();
  throw Error(str("unknown ISA '", name,
                  "' (expected one of: generic, avx2, avx512, avx512_vnni, amx, native)"));
}

std::vector<Isa> all_isas() {
  return {Isa::generic, Isa::avx2, Isa::avx512, Isa::avx512_vnni, Isa::amx};
}

bool cpu_has_isa(Isa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::generic: return true;
    case Isa::avx2: return f.avx2 && f.fma && f.f16c;
    case Isa::avx512:
      return cpu_has_isa(Isa::avx2) && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
    case Isa::avx512_vnni:
      return cpu_has_isa(Isa::avx512) && f.avx512_vnni && f.avx512_bf16;
    case Isa::amx:
      return cpu_has_isa(Isa::avx512_vnni) && f.amx_tile && f.amx_int8 && f.amx_bf16 &&
             f.amx_permitted;
  }
  return false;
}

Isa best_cpu_isa() {
  Isa best = Isa::generic;
  for (Isa i : all_isas())
    if (cpu_has_isa(i)) best = i;
  return best;
}

namespace {

struct Ceiling {
  Isa isa = Isa::generic;
  std::string source;
};

Ceiling read_ceiling() {
  const char* env = std::getenv("CIBENCH_ISA");
  if (!env || !*env) return {best_cpu_isa(), ""};
  const std::string name = env;
  // "native"/"best" mean the CPU's best here (parse_isa would ask for the ceiling being read).
  const Isa want = (name == "native" || name == "best") ? best_cpu_isa() : parse_isa(name);
  if (!cpu_has_isa(want))
    throw Error(str("CIBENCH_ISA=", env, " but this CPU (", cpu_features().model_name,
                    ") does not support it; best available is '", isa_name(best_cpu_isa()), "'"));
  return {want, "CIBENCH_ISA=" + name};
}

const Ceiling& ceiling() {
  static const Ceiling c = read_ceiling();  // a throw here is retried on the next call
  return c;
}

}  // namespace

Isa isa_ceiling() { return ceiling().isa; }
std::string isa_ceiling_source() { return ceiling().source; }

bool isa_supported(Isa isa) {
  return cpu_has_isa(isa) && static_cast<int>(isa) <= static_cast<int>(isa_ceiling());
}

std::string isa_unavailable_reason(Isa isa) {
  if (isa_supported(isa)) return "";
  if (cpu_has_isa(isa)) return str(isa_name(isa), " is above ", isa_ceiling_source());
  return str(isa_name(isa), " is not on this CPU (", cpu_features().model_name, "; best: ",
             isa_name(best_cpu_isa()), ")");
}

Isa best_supported_isa() { return isa_ceiling(); }

std::vector<Isa> supported_isas() {
  std::vector<Isa> v;
  for (Isa i : all_isas())
    if (isa_supported(i)) v.push_back(i);
  return v;
}

void set_active_isa(Isa isa) {
  if (!cpu_has_isa(isa))
    throw Error(str("ISA '", isa_name(isa), "' was requested but this CPU (",
                    cpu_features().model_name, ") does not support it; best available is '",
                    isa_name(best_supported_isa()), "'"));
  if (!isa_supported(isa))
    throw Error(str("ISA '", isa_name(isa), "' was requested but ", isa_ceiling_source(),
                    " caps this process at '", isa_name(isa_ceiling()), "'"));
  g_active_isa.store(static_cast<int>(isa));
}

Isa active_isa() {
  int v = g_active_isa.load();
  if (v >= 0) return static_cast<Isa>(v);
  std::call_once(g_isa_once, [] {
    if (g_active_isa.load() >= 0) return;
    g_active_isa.store(static_cast<int>(isa_ceiling()));
  });
  return static_cast<Isa>(g_active_isa.load());
}

}  // namespace cibench
