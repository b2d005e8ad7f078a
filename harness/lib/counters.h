#pragma once
// Counters per worker thread and per phase, from the best source this machine has, and an
// honest "unavailable" with the reason for every event it cannot count (never a zero).
//
// Sources, tried in order for each event:
//   hardware events (cycles, instructions, L1D/L2/L3 misses, branch misses):
//       PAPI (PAPI_TOT_CYC, PAPI_TOT_INS, PAPI_L1_DCM, PAPI_L2_DCM, PAPI_L3_TCM, PAPI_BR_MSP)
//       -> perf_event_open(PERF_TYPE_HARDWARE / HW_CACHE)
//   software events (task clock, page faults, context switches, CPU migrations):
//       perf_event_open(PERF_TYPE_SOFTWARE) -> getrusage(RUSAGE_THREAD)
//   energy: RAPL via /sys/class/powercap (package, whole machine)
// Derived: IPC = instructions / cycles; MPKI = misses per 1000 instructions.
// The backends are injectable, so the selection logic is tested with a fake PMU as well as on
// this VM (which has none).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "harness/lib/load.h"

namespace cibench {

const std::vector<std::string>& hardware_events();  // cycles, instructions, l1d_misses, ...
const std::vector<std::string>& software_events();  // task_clock_ms, page_faults, ...

// Counts a set of events on the calling thread (and, where the backend can, threads it creates
// afterwards: perf_event's inherit flag, so an engine's thread pool is included).
class ThreadCounters {
 public:
  virtual ~ThreadCounters() = default;
  virtual void start() = 0;
  // Cumulative values since start(), in the order of the events given to open_thread().
  virtual std::vector<double> read() = 0;
  virtual void stop() = 0;
};

class CounterBackend {
 public:
  virtual ~CounterBackend() = default;
  virtual std::string name() const = 0;  // stored as the value's source
  // For each event: "" when it can be counted here, else the reason (e.g. PAPI's error).
  virtual std::vector<std::string> probe(const std::vector<std::string>& events) = 0;
  virtual std::unique_ptr<ThreadCounters> open_thread(const std::vector<std::string>& events) = 0;
};

std::unique_ptr<CounterBackend> make_papi_backend();
std::unique_ptr<CounterBackend> make_perf_hw_backend();
std::unique_ptr<CounterBackend> make_perf_sw_backend();
std::unique_ptr<CounterBackend> make_rusage_backend();

// Which backend counts which event (or why none can).
struct CounterPlan {
  struct Entry {
    std::string event;
    CounterBackend* backend = nullptr;  // null: unavailable
    std::string reason;                 // why unavailable (every backend's reason, joined)
  };
  std::vector<Entry> entries;
  std::vector<std::unique_ptr<CounterBackend>> owned;
  std::string summary() const;  // "cycles: unavailable (...); task_clock_ms: perf_event; ..."
};

// Probes each event along its chain (first backend that can count it wins).
CounterPlan plan_counters(std::vector<std::unique_ptr<CounterBackend>> hw_chain,
                          std::vector<std::unique_ptr<CounterBackend>> sw_chain);
// The default chains for this machine (PAPI -> perf hw; perf sw -> rusage).
CounterPlan default_counter_plan();

// RAPL package energy in joules (sum over packages), or the reason it cannot be read.
struct EnergyReading {
  std::optional<double> joules;
  std::string reason;
};
EnergyReading read_rapl(const std::string& powercap_root = "/sys/class/powercap");

struct CounterRow {
  std::string name;
  std::string phase;  // all | prefill | decode
  std::string scope;  // total | worker N
  std::optional<double> value;
  std::string unit;
  std::string source;
  std::string unavailable_reason;
};

// A WorkerObserver that counts per worker and per phase according to a plan.
class CounterObserver : public WorkerObserver {
 public:
  CounterObserver(CounterPlan& plan, int workers, bool phases,
                  std::string powercap_root = "/sys/class/powercap");
  void attach(int worker) override;
  void begin(int worker) override;
  void phase(int worker, Phase p) override;
  void end(int worker) override;
  void detach(int worker) override;
  bool wants_phases() const override { return phases_; }

  // Rows for the store: every planned event (value or reason) for scope total and per worker,
  // phase all (and prefill/decode when phases were split), plus derived IPC/MPKI and energy.
  std::vector<CounterRow> rows() const;

 private:
  struct Handle {
    CounterBackend* backend;
    std::vector<size_t> entry_index;  // plan entries this handle counts
    std::unique_ptr<ThreadCounters> counters;
    std::vector<double> last;
  };
  struct Worker {
    std::vector<Handle> handles;
    int current_phase = -1;  // -1: none yet (attributed to "all" only)
    // accum[phase][entry]: phase 0 prefill, 1 decode, 2 all
    std::vector<std::vector<double>> accum;
    std::vector<std::string> entry_error;  // per plan entry: why this worker could not count it
  };
  void fail_handle(Worker& w, const Handle& h, const std::string& why);
  void sample(Worker& w, int into_phase);

  CounterPlan& plan_;
  bool phases_;
  std::string powercap_root_;
  std::vector<Worker> workers_;
  std::mutex mu_;
  int begun_ = 0, ended_ = 0;
  EnergyReading energy_begin_, energy_end_;
};

}  // namespace cibench
