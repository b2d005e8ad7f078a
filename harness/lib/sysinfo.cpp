#include "harness/lib/sysinfo.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "harness/lib/build_info.h"

namespace cibench {
namespace {

Readable read_first_line(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    const int e = errno;
    return {std::nullopt, str(path, ": ", e == ENOENT ? "absent" : std::strerror(e))};
  }
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return {line, ""};
}

nlohmann::json readable_json(const Readable& r) {
  if (r.value) return *r.value;
  return nlohmann::json{{"value", nullptr}, {"reason", r.reason}};
}

}  // namespace

nlohmann::json SystemInfo::to_json() const {
  return nlohmann::json{{"hostname", hostname},
                        {"kernel", kernel},
                        {"cpu_vendor", cpu_vendor},
                        {"cpu_model", cpu_model},
                        {"cpu_flags", cpu_flags},
                        {"isa_best", isa_best},
                        {"isa_active", isa_active},
                        {"logical_cpus", logical_cpus},
                        {"physical_cores", readable_json(physical_cores)},
                        {"mem_total_bytes", readable_json(mem_total_bytes)},
                        {"governor", readable_json(governor)},
                        {"turbo", readable_json(turbo)},
                        {"smt", readable_json(smt)},
                        {"thp", readable_json(thp)},
                        {"warnings", warnings}};
}

std::optional<int64_t> meminfo_bytes(const std::string& field, const std::string& root) {
  std::ifstream in(root + "/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == field + ":") return kb * 1024;
  return std::nullopt;
}

SystemInfo collect_system_info(const std::string& root) {
  SystemInfo s;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) s.hostname = host;
  utsname u{};
  if (uname(&u) == 0) s.kernel = str(u.sysname, " ", u.release, " ", u.version, " ", u.machine);
  const CpuFeatures& f = cpu_features();
  s.cpu_vendor = f.vendor;
  s.cpu_model = f.model_name;
  s.cpu_flags = f.flags_string();
  s.isa_best = isa_name(best_cpu_isa());  // the machine's, whatever CIBENCH_ISA caps
  s.isa_active = isa_name(active_isa());
  s.logical_cpus = f.logical_cpus;

  // Physical cores: distinct (package, core) pairs in sysfs topology.
  {
    std::set<std::string> cores;
    std::string why;
    for (int c = 0; c < std::max(1, s.logical_cpus); ++c) {
      const std::string base = str(root, "/sys/devices/system/cpu/cpu", c, "/topology/");
      Readable pkg = read_first_line(base + "physical_package_id");
      Readable core = read_first_line(base + "core_id");
      if (!pkg.value || !core.value) {
        why = pkg.value ? core.reason : pkg.reason;
        break;
      }
      cores.insert(*pkg.value + ":" + *core.value);
    }
    if (why.empty() && !cores.empty()) s.physical_cores = {std::to_string(cores.size()), ""};
    else s.physical_cores = {std::nullopt, why.empty() ? "no topology in sysfs" : why};
  }
  if (const auto total = meminfo_bytes("MemTotal", root)) s.mem_total_bytes = {std::to_string(*total), ""};
  else s.mem_total_bytes = {std::nullopt, root + "/proc/meminfo: no MemTotal"};
  s.governor = read_first_line(root + "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  {
    Readable boost = read_first_line(root + "/sys/devices/system/cpu/cpufreq/boost");
    if (boost.value) {
      s.turbo = {*boost.value == "1" ? "on" : "off", ""};
    } else {
      Readable nt = read_first_line(root + "/sys/devices/system/cpu/intel_pstate/no_turbo");
      if (nt.value) s.turbo = {*nt.value == "1" ? "off" : "on", ""};
      else s.turbo = {std::nullopt, boost.reason + "; " + nt.reason};
    }
  }
  {
    Readable active = read_first_line(root + "/sys/devices/system/cpu/smt/active");
    Readable control = read_first_line(root + "/sys/devices/system/cpu/smt/control");
    if (control.value && *control.value == "notsupported") s.smt = {"notsupported", ""};
    else if (active.value) s.smt = {*active.value == "1" ? "on" : "off", ""};
    else s.smt = active;
  }
  {
    Readable t = read_first_line(root + "/sys/kernel/mm/transparent_hugepage/enabled");
    if (t.value) {
      const auto a = t.value->find('['), b = t.value->find(']');
      if (a != std::string::npos && b != std::string::npos && b > a) t.value = t.value->substr(a + 1, b - a - 1);
    }
    s.thp = t;
  }

  if (s.governor.value && *s.governor.value != "performance")
    s.warnings.push_back("CPU frequency scaling governor is '" + *s.governor.value +
                         "', not 'performance': timings may vary");
  if (!s.governor.value)
    s.warnings.push_back("CPU frequency governor unknown (" + s.governor.reason +
                         "): typical of a VM; the host may scale frequency");
  if (build_info().build_type != "Release" && build_info().build_type != "RelWithDebInfo")
    s.warnings.push_back("cibench was built as '" + build_info().build_type + "', not Release: timings are not representative");
  if (!build_info().sanitizer.empty())
    s.warnings.push_back("cibench was built with sanitizer '" + build_info().sanitizer + "': timings are not representative");
  return s;
}

std::optional<int64_t> peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream is(line.substr(6));
      int64_t kb = 0;
      if (is >> kb) return kb * 1024;
    }
  }
  return std::nullopt;
}

bool reset_peak_rss(std::string* why) {
  const char* path = "/proc/self/clear_refs";
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  int e = 0;
  if (fd < 0) {
    e = errno;
  } else {
    if (::write(fd, "5", 1) != 1) e = errno ? errno : EIO;
    ::close(fd);
  }
  if (e == 0) return true;
  if (why) *why = str(path, ": ", std::strerror(e));
  return false;
}

void release_free_memory() { malloc_trim(0); }

std::string utc_now_iso() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return str(buf, ".", (ms < 100 ? (ms < 10 ? "00" : "0") : ""), ms, "Z");
}

}  // namespace cibench
