#include "harness/lib/counters.h"

#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "engines/core/error.h"

#ifdef CIBENCH_HAVE_PAPI
#include <papi.h>
#endif

namespace cibench {

const std::vector<std::string>& hardware_events() {
  static const std::vector<std::string> e{"cycles", "instructions", "l1d_misses",
                                          "l2_misses", "l3_misses", "branch_misses"};
  return e;
}
const std::vector<std::string>& software_events() {
  static const std::vector<std::string> e{"task_clock_ms", "page_faults", "context_switches",
                                          "cpu_migrations"};
  return e;
}

namespace {

const char* unit_of(const std::string& e) {
  if (e == "task_clock_ms") return "ms";
  if (e == "ipc") return "instructions/cycle";
  if (e.size() > 5 && e.substr(e.size() - 5) == "_mpki") return "per 1000 instructions";
  if (e == "energy_j") return "J";
  return "count";
}

std::string errno_name(int e) {
  switch (e) {
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EINVAL: return "EINVAL";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ENODEV: return "ENODEV";
    case ENOSYS: return "ENOSYS";
    default: return str("errno ", e, " (", std::strerror(e), ")");
  }
}

// ---- perf_event_open ----------------------------------------------------------------------

struct PerfEvent {
  uint32_t type;
  uint64_t config;
  double scale;  // task clock: ns -> ms
};

std::optional<PerfEvent> perf_event_for(const std::string& e, std::string* why) {
  const uint64_t l1d_read_miss = PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                 (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
  const uint64_t ll_read_miss = PERF_COUNT_HW_CACHE_LL | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
  if (e == "cycles") return PerfEvent{PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1};
  if (e == "instructions") return PerfEvent{PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1};
  if (e == "branch_misses") return PerfEvent{PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 1};
  if (e == "l1d_misses") return PerfEvent{PERF_TYPE_HW_CACHE, l1d_read_miss, 1};
  if (e == "l3_misses") return PerfEvent{PERF_TYPE_HW_CACHE, ll_read_miss, 1};
  if (e == "task_clock_ms") return PerfEvent{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 1e-6};
  if (e == "page_faults") return PerfEvent{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 1};
  if (e == "context_switches") return PerfEvent{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 1};
  if (e == "cpu_migrations") return PerfEvent{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 1};
  if (why) *why = str("perf_event has no generic event for ", e);
  return std::nullopt;
}

const char* perf_type_name(uint32_t t) {
  return t == PERF_TYPE_HARDWARE ? "PERF_TYPE_HARDWARE" : t == PERF_TYPE_HW_CACHE ? "PERF_TYPE_HW_CACHE" : "PERF_TYPE_SOFTWARE";
}

// Opens a counter on the calling thread, inherited by threads it creates later; disabled.
int perf_open(const PerfEvent& pe, int* err) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = pe.type;
  a.config = pe.config;
  a.disabled = 1;
  a.inherit = 1;
  a.exclude_hv = 1;
  a.exclude_kernel = pe.type != PERF_TYPE_SOFTWARE;  // user-space only where paranoia demands it
  int fd = static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
  if (fd < 0 && (errno == EACCES || errno == EPERM) && !a.exclude_kernel) {
    a.exclude_kernel = 1;
    fd = static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
  }
  if (fd < 0) *err = errno;
  return fd;
}

class PerfThread : public ThreadCounters {
 public:
  explicit PerfThread(const std::vector<std::string>& events) {
    for (const auto& e : events) {
      auto pe = perf_event_for(e, nullptr);
      CIBENCH_CHECK(pe, "perf_event: no event for ", e);
      int err = 0;
      const int fd = perf_open(*pe, &err);
      if (fd < 0) {
        close_all();
        throw Error(str("perf_event_open(", perf_type_name(pe->type), ") failed for ", e, ": ", errno_name(err)));
      }
      fds_.push_back(fd);
      scale_.push_back(pe->scale);
    }
  }
  ~PerfThread() override { close_all(); }
  void start() override {
    for (int fd : fds_) {
      ioctl(fd, PERF_EVENT_IOC_RESET, 0);
      ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    }
  }
  std::vector<double> read() override {
    std::vector<double> v;
    for (size_t i = 0; i < fds_.size(); ++i) {
      uint64_t x = 0;
      if (::read(fds_[i], &x, sizeof x) != sizeof x) throw Error(str("perf_event read failed: ", errno_name(errno)));
      v.push_back(static_cast<double>(x) * scale_[i]);
    }
    return v;
  }
  void stop() override {
    for (int fd : fds_) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  }

 private:
  void close_all() {
    for (int fd : fds_) close(fd);
    fds_.clear();
  }
  std::vector<int> fds_;
  std::vector<double> scale_;
};

class PerfBackend : public CounterBackend {
 public:
  explicit PerfBackend(bool hardware) : hardware_(hardware) {}
  std::string name() const override { return "perf_event"; }
  std::vector<std::string> probe(const std::vector<std::string>& events) override {
    std::vector<std::string> out;
    for (const auto& e : events) {
      std::string why;
      auto pe = perf_event_for(e, &why);
      if (!pe) {
        out.push_back(why);
        continue;
      }
      int err = 0;
      const int fd = perf_open(*pe, &err);
      if (fd >= 0) {
        close(fd);
        out.push_back("");
      } else {
        const bool hw = pe->type != PERF_TYPE_SOFTWARE;
        out.push_back(str(hw && (err == ENOENT || err == EOPNOTSUPP || err == ENODEV) ? "no PMU: " : "",
                          "perf_event_open(", perf_type_name(pe->type), ") failed: ", errno_name(err)));
      }
    }
    return out;
  }
  std::unique_ptr<ThreadCounters> open_thread(const std::vector<std::string>& events) override {
    return std::make_unique<PerfThread>(events);
  }

 private:
  bool hardware_;
};

// ---- getrusage(RUSAGE_THREAD) -------------------------------------------------------------

class RusageThread : public ThreadCounters {
 public:
  explicit RusageThread(std::vector<std::string> events) : events_(std::move(events)) {}
  void start() override { base_ = now(); }
  std::vector<double> read() override {
    const auto cur = now();
    std::vector<double> v;
    for (size_t i = 0; i < events_.size(); ++i) v.push_back(cur[i] - base_[i]);
    return v;
  }
  void stop() override {}

 private:
  std::vector<double> now() const {
    rusage u{};
    getrusage(RUSAGE_THREAD, &u);
    std::vector<double> v;
    for (const auto& e : events_) {
      if (e == "task_clock_ms")
        v.push_back((u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-3);
      else if (e == "page_faults") v.push_back(static_cast<double>(u.ru_minflt + u.ru_majflt));
      else if (e == "context_switches") v.push_back(static_cast<double>(u.ru_nvcsw + u.ru_nivcsw));
      else v.push_back(0);
    }
    return v;
  }
  std::vector<std::string> events_;
  std::vector<double> base_;
};

class RusageBackend : public CounterBackend {
 public:
  std::string name() const override { return "rusage(thread)"; }
  std::vector<std::string> probe(const std::vector<std::string>& events) override {
    std::vector<std::string> out;
    for (const auto& e : events)
      out.push_back(e == "task_clock_ms" || e == "page_faults" || e == "context_switches"
                        ? ""
                        : str("getrusage has no ", e));
    return out;
  }
  std::unique_ptr<ThreadCounters> open_thread(const std::vector<std::string>& events) override {
    return std::make_unique<RusageThread>(events);
  }
};

// ---- PAPI ---------------------------------------------------------------------------------

#ifdef CIBENCH_HAVE_PAPI
std::string papi_error(int rc) {
  const char* name = "PAPI_E?";
  switch (rc) {
    case PAPI_EINVAL: name = "PAPI_EINVAL"; break;
    case PAPI_ENOMEM: name = "PAPI_ENOMEM"; break;
    case PAPI_ESYS: name = "PAPI_ESYS"; break;
    case PAPI_ECMP: name = "PAPI_ECMP"; break;
    case PAPI_ENOEVNT: name = "PAPI_ENOEVNT"; break;
    case PAPI_ECNFLCT: name = "PAPI_ECNFLCT"; break;
    case PAPI_ENOCNTR: name = "PAPI_ENOCNTR"; break;
    case PAPI_EPERM: name = "PAPI_EPERM"; break;
    case PAPI_ENOINIT: name = "PAPI_ENOINIT"; break;
    case PAPI_ENOCMP: name = "PAPI_ENOCMP"; break;
    case PAPI_ENOSUPP: name = "PAPI_ENOSUPP"; break;
    case PAPI_EMULPASS: name = "PAPI_EMULPASS"; break;
    default: break;
  }
  std::string d = PAPI_strerror(rc) ? PAPI_strerror(rc) : "";
  if (!d.empty()) d[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(d[0])));
  return str(name, ": ", d);
}

const char* papi_name(const std::string& e) {
  if (e == "cycles") return "PAPI_TOT_CYC";
  if (e == "instructions") return "PAPI_TOT_INS";
  if (e == "l1d_misses") return "PAPI_L1_DCM";
  if (e == "l2_misses") return "PAPI_L2_DCM";
  if (e == "l3_misses") return "PAPI_L3_TCM";
  if (e == "branch_misses") return "PAPI_BR_MSP";
  return nullptr;
}

// PAPI_library_init + PAPI_thread_init once per process; "" or the reason it failed.
const std::string& papi_init() {
  static const std::string why = [] {
    const int v = PAPI_library_init(PAPI_VER_CURRENT);
    if (v != PAPI_VER_CURRENT) return v < 0 ? "PAPI_library_init failed: " + papi_error(v)
                                            : std::string("PAPI_library_init: version mismatch");
    const int t = PAPI_thread_init(reinterpret_cast<unsigned long (*)(void)>(pthread_self));
    if (t != PAPI_OK) return "PAPI_thread_init failed: " + papi_error(t);
    return std::string();
  }();
  return why;
}

class PapiThread : public ThreadCounters {
 public:
  explicit PapiThread(const std::vector<std::string>& events) {
    int rc = PAPI_register_thread();
    if (rc != PAPI_OK) throw Error("PAPI_register_thread failed: " + papi_error(rc));
    registered_ = true;
    rc = PAPI_create_eventset(&es_);
    if (rc != PAPI_OK) throw Error("PAPI_create_eventset failed: " + papi_error(rc));
    for (const auto& e : events) {
      int code = 0;
      rc = PAPI_event_name_to_code(const_cast<char*>(papi_name(e)), &code);
      if (rc == PAPI_OK) rc = PAPI_add_event(es_, code);
      if (rc != PAPI_OK) throw Error(str("PAPI_add_event(", papi_name(e), ") failed: ", papi_error(rc)));
    }
    vals_.resize(events.size());
  }
  ~PapiThread() override {
    if (running_) PAPI_stop(es_, vals_.data());
    if (es_ != PAPI_NULL) {
      PAPI_cleanup_eventset(es_);
      PAPI_destroy_eventset(&es_);
    }
    if (registered_) PAPI_unregister_thread();
  }
  void start() override {
    const int rc = PAPI_start(es_);
    if (rc != PAPI_OK) throw Error("PAPI_start failed: " + papi_error(rc));
    running_ = true;
  }
  std::vector<double> read() override {
    const int rc = PAPI_read(es_, vals_.data());
    if (rc != PAPI_OK) throw Error("PAPI_read failed: " + papi_error(rc));
    return std::vector<double>(vals_.begin(), vals_.end());
  }
  void stop() override {
    if (running_) PAPI_stop(es_, vals_.data());
    running_ = false;
  }

 private:
  int es_ = PAPI_NULL;
  bool registered_ = false, running_ = false;
  std::vector<long long> vals_;
};

class PapiBackend : public CounterBackend {
 public:
  std::string name() const override { return "papi"; }
  std::vector<std::string> probe(const std::vector<std::string>& events) override {
    const std::string& init = papi_init();
    std::vector<std::string> out;
    for (const auto& e : events) {
      if (!init.empty()) {
        out.push_back(init);
        continue;
      }
      const char* n = papi_name(e);
      if (!n) {
        out.push_back(str("PAPI has no preset for ", e));
        continue;
      }
      // PAPI_query_event can say yes for a preset the PMU cannot count (a VM without a PMU):
      // adding it to an event set is the real test.
      int code = 0;
      int rc = PAPI_event_name_to_code(const_cast<char*>(n), &code);
      if (rc == PAPI_OK) rc = PAPI_query_event(code);
      if (rc == PAPI_OK) {
        int es = PAPI_NULL;
        rc = PAPI_create_eventset(&es);
        if (rc == PAPI_OK) {
          rc = PAPI_add_event(es, code);
          PAPI_cleanup_eventset(es);
          PAPI_destroy_eventset(&es);
        }
      }
      out.push_back(rc == PAPI_OK ? "" : str(papi_error(rc), " (", n, ")"));
    }
    return out;
  }
  std::unique_ptr<ThreadCounters> open_thread(const std::vector<std::string>& events) override {
    return std::make_unique<PapiThread>(events);
  }
};
#endif

}  // namespace

std::unique_ptr<CounterBackend> make_papi_backend() {
#ifdef CIBENCH_HAVE_PAPI
  return std::make_unique<PapiBackend>();
#else
  class NoPapi : public CounterBackend {
   public:
    std::string name() const override { return "papi"; }
    std::vector<std::string> probe(const std::vector<std::string>& events) override {
      return std::vector<std::string>(events.size(), "cibench was built without PAPI (papi.h not found)");
    }
    std::unique_ptr<ThreadCounters> open_thread(const std::vector<std::string>&) override {
      throw Error("cibench was built without PAPI");
    }
  };
  return std::make_unique<NoPapi>();
#endif
}
std::unique_ptr<CounterBackend> make_perf_hw_backend() { return std::make_unique<PerfBackend>(true); }
std::unique_ptr<CounterBackend> make_perf_sw_backend() { return std::make_unique<PerfBackend>(false); }
std::unique_ptr<CounterBackend> make_rusage_backend() { return std::make_unique<RusageBackend>(); }

std::string CounterPlan::summary() const {
  std::string s;
  for (const auto& e : entries)
    s += str(s.empty() ? "" : "; ", e.event, ": ", e.backend ? e.backend->name() : "unavailable (" + e.reason + ")");
  return s;
}

CounterPlan plan_counters(std::vector<std::unique_ptr<CounterBackend>> hw_chain,
                          std::vector<std::unique_ptr<CounterBackend>> sw_chain) {
  CounterPlan plan;
  auto place = [&](const std::vector<std::string>& events, std::vector<std::unique_ptr<CounterBackend>>& chain) {
    std::vector<CounterPlan::Entry> es;
    for (const auto& e : events) es.push_back({e, nullptr, ""});
    for (auto& b : chain) {
      std::vector<std::string> todo;
      for (auto& en : es)
        if (!en.backend) todo.push_back(en.event);
      if (todo.empty()) break;
      const auto reasons = b->probe(todo);
      size_t k = 0;
      for (auto& en : es) {
        if (en.backend) continue;
        if (reasons[k].empty()) en.backend = b.get();
        else en.reason += str(en.reason.empty() ? "" : "; ", b->name(), ": ", reasons[k]);
        ++k;
      }
    }
    for (auto& en : es) plan.entries.push_back(en);
    for (auto& b : chain) plan.owned.push_back(std::move(b));
  };
  place(hardware_events(), hw_chain);
  place(software_events(), sw_chain);
  return plan;
}

CounterPlan default_counter_plan() {
  std::vector<std::unique_ptr<CounterBackend>> hw, sw;
  hw.push_back(make_papi_backend());
  hw.push_back(make_perf_hw_backend());
  sw.push_back(make_perf_sw_backend());
  sw.push_back(make_rusage_backend());
  return plan_counters(std::move(hw), std::move(sw));
}

EnergyReading read_rapl(const std::string& root) {
  namespace fs = std::filesystem;
  if (!fs::exists(root)) return {std::nullopt, str("no RAPL: ", root, " absent")};
  double total = 0;
  int found = 0;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(root, ec)) {
    const std::string n = d.path().filename().string();
    // Package domains: intel-rapl:N (no sub-zone suffix); AMD exposes the same interface.
    if (n.rfind("intel-rapl:", 0) != 0 || n.find(':', 11) != std::string::npos) continue;
    std::ifstream in(d.path() / "energy_uj");
    double uj = 0;
    if (!(in >> uj)) return {std::nullopt, str("no RAPL: ", (d.path() / "energy_uj").string(), " not readable (needs root on recent kernels)")};
    total += uj * 1e-6;
    ++found;
  }
  if (!found) return {std::nullopt, str("no RAPL: no package domain under ", root)};
  return {total, ""};
}

// ---- CounterObserver ----------------------------------------------------------------------

CounterObserver::CounterObserver(CounterPlan& plan, int workers, bool phases, std::string powercap_root)
    : plan_(plan), phases_(phases), powercap_root_(std::move(powercap_root)), workers_(static_cast<size_t>(workers)) {}

void CounterObserver::fail_handle(Worker& w, const Handle& h, const std::string& why) {
  for (size_t i : h.entry_index)
    if (w.entry_error[i].empty()) w.entry_error[i] = why;
}

void CounterObserver::attach(int wi) {
  Worker& w = workers_[static_cast<size_t>(wi)];
  w.accum.assign(3, std::vector<double>(plan_.entries.size(), 0.0));
  w.entry_error.assign(plan_.entries.size(), "");
  std::vector<CounterBackend*> used;
  for (const auto& e : plan_.entries)
    if (e.backend && std::find(used.begin(), used.end(), e.backend) == used.end()) used.push_back(e.backend);
  for (CounterBackend* b : used) {
    Handle h{b, {}, nullptr, {}};
    std::vector<std::string> events;
    for (size_t i = 0; i < plan_.entries.size(); ++i)
      if (plan_.entries[i].backend == b) {
        h.entry_index.push_back(i);
        events.push_back(plan_.entries[i].event);
      }
    try {
      h.counters = b->open_thread(events);
      w.handles.push_back(std::move(h));
    } catch (const std::exception& e) {
      fail_handle(w, h, e.what());
    }
  }
}

void CounterObserver::begin(int wi) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (begun_++ == 0) energy_begin_ = read_rapl(powercap_root_);
  }
  Worker& w = workers_[static_cast<size_t>(wi)];
  for (auto& h : w.handles) {
    try {
      h.counters->start();
      h.last = h.counters->read();
    } catch (const std::exception& e) {
      fail_handle(w, h, e.what());
    }
  }
}

void CounterObserver::sample(Worker& w, int into_phase) {
  for (auto& h : w.handles) {
    if (h.last.empty()) continue;  // failed at start
    try {
      const auto cur = h.counters->read();
      for (size_t k = 0; k < h.entry_index.size(); ++k) {
        const double d = cur[k] - h.last[k];
        w.accum[2][h.entry_index[k]] += d;
        if (into_phase >= 0) w.accum[static_cast<size_t>(into_phase)][h.entry_index[k]] += d;
      }
      h.last = cur;
    } catch (const std::exception& e) {
      fail_handle(w, h, e.what());
      h.last.clear();
    }
  }
}

void CounterObserver::phase(int wi, Phase p) {
  Worker& w = workers_[static_cast<size_t>(wi)];
  sample(w, w.current_phase);
  w.current_phase = static_cast<int>(p);
}

void CounterObserver::end(int wi) {
  Worker& w = workers_[static_cast<size_t>(wi)];
  sample(w, w.current_phase);
  for (auto& h : w.handles) {
    try {
      h.counters->stop();
    } catch (const std::exception& e) {
      fail_handle(w, h, e.what());
    }
  }
  std::lock_guard<std::mutex> lk(mu_);
  if (++ended_ == static_cast<int>(workers_.size())) energy_end_ = read_rapl(powercap_root_);
}

void CounterObserver::detach(int wi) { workers_[static_cast<size_t>(wi)].handles.clear(); }

std::vector<CounterRow> CounterObserver::rows() const {
  std::vector<CounterRow> out;
  std::vector<std::string> phases{"all"};
  if (phases_) {
    phases.push_back("prefill");
    phases.push_back("decode");
  }
  const size_t n = plan_.entries.size();
  auto entry_error_in_scope = [&](size_t i, int scope) -> std::string {
    for (int wi = 0; wi < static_cast<int>(workers_.size()); ++wi) {
      const auto& errs = workers_[static_cast<size_t>(wi)].entry_error;
      if ((scope < 0 || scope == wi) && i < errs.size() && !errs[i].empty()) return str("worker ", wi, ": ", errs[i]);
    }
    return "";
  };
  auto phase_index = [](const std::string& p) { return p == "prefill" ? 0 : p == "decode" ? 1 : 2; };
  // scope -1 = total
  for (int scope = -1; scope < static_cast<int>(workers_.size()); ++scope) {
    const std::string scope_name = scope < 0 ? "total" : str("worker ", scope);
    for (const auto& ph : phases) {
      const size_t pi = static_cast<size_t>(phase_index(ph));
      std::map<std::string, std::optional<double>> val;
      std::map<std::string, std::string> why;
      for (size_t i = 0; i < n; ++i) {
        const auto& e = plan_.entries[i];
        CounterRow r{e.event, ph, scope_name, std::nullopt, unit_of(e.event), e.backend ? e.backend->name() : "none", ""};
        if (!e.backend) {
          r.unavailable_reason = e.reason;
        } else if (std::string err = entry_error_in_scope(i, scope); !err.empty()) {
          r.unavailable_reason = err;
        } else {
          double v = 0;
          for (int wi = 0; wi < static_cast<int>(workers_.size()); ++wi)
            if (scope < 0 || scope == wi) v += workers_[static_cast<size_t>(wi)].accum[pi][i];
          r.value = v;
        }
        val[e.event] = r.value;
        why[e.event] = r.unavailable_reason;
        out.push_back(r);
      }
      // Derived: IPC and misses per 1000 instructions.
      auto derived = [&](const std::string& name, const std::string& num, const std::string& den, double scale) {
        CounterRow r{name, ph, scope_name, std::nullopt, unit_of(name), "derived", ""};
        if (!val[num] || !val[den]) {
          r.unavailable_reason = str("needs ", num, " and ", den, ": ", !val[num] ? why[num] : why[den]);
        } else if (*val[den] <= 0) {
          r.unavailable_reason = str(den, " counted 0");
        } else {
          r.value = *val[num] / *val[den] * scale;
        }
        out.push_back(r);
      };
      derived("ipc", "instructions", "cycles", 1);
      derived("l1d_mpki", "l1d_misses", "instructions", 1000);
      derived("l2_mpki", "l2_misses", "instructions", 1000);
      derived("l3_mpki", "l3_misses", "instructions", 1000);
      derived("branch_mpki", "branch_misses", "instructions", 1000);
    }
  }
  CounterRow en{"energy_j", "all", "package", std::nullopt, "J", "rapl", ""};
  if (energy_begin_.joules && energy_end_.joules) en.value = *energy_end_.joules - *energy_begin_.joules;
  else en.unavailable_reason = energy_begin_.joules ? energy_end_.reason : energy_begin_.reason;
  if (!en.value && en.unavailable_reason.empty()) en.unavailable_reason = "no RAPL reading";
  out.push_back(en);
  return out;
}

}  // namespace cibench
