// Fuzz target for the results store: each input is written as a SQLite file and read as every
// reader reads a store (reports::Db: runs, provenance, SLOs, floors, variants, latency CDFs,
// load sweeps, scaling, counters, compare, the HTML and Markdown reports), then opened by the
// writer (Store: ownership check, migrations, stale-run marking) and read again. A cibench::Error
// is the clean rejection of a damaged or foreign file; any other exception, a crash, a hang or a
// sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engines/core/error.h"
#include "harness/lib/store.h"
#include "reports/analysis/compare.h"
#include "reports/analysis/counters.h"
#include "reports/analysis/labels.h"
#include "reports/analysis/latency.h"
#include "reports/analysis/serving.h"
#include "reports/analysis/speculative.h"
#include "reports/analysis/tradeoff.h"
#include "reports/db.h"
#include "reports/format.h"
#include "reports/report.h"
#include "reports/render/html_report.h"
#include "reports/render/markdown_report.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

namespace fs = std::filesystem;
using cibench::fuzz::rejecting_errors;

struct Scratch {
  fs::path dir = cibench::fuzz::scratch_dir("cibench_fuzz_store");
  Scratch() { fs::create_directories(dir); }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string db() const { return (dir / "store.sqlite").string(); }
};

Scratch& scratch() {
  static Scratch s;
  return s;
}

void read_as_readers_do(const std::string& path) {
  namespace r = cibench::reports;
  r::Db db(path);
  std::vector<int64_t> ids;
  for (const r::RunInfo& run : db.runs()) {
    ids.push_back(run.run_id);
    rejecting_errors([&] { db.provenance(run.run_id); });
    rejecting_errors([&] { db.slos(run.run_id); });
    rejecting_errors([&] { db.floors(run.run_id); });
    rejecting_errors([&] { cibench::reports::load_sweep(db, run.run_id); });
  }
  rejecting_errors([&] {
    for (const r::Variant& v : db.variants(ids)) rejecting_errors([&] { cibench::reports::latency_cdf(db, v.variant_id); });
  });
  rejecting_errors([&] { cibench::reports::scaling(db, ids); });
  rejecting_errors([&] { cibench::reports::counters(db, ids); });
  if (ids.size() >= 2) rejecting_errors([&] { cibench::reports::compare_runs(db, ids[0], ids[1], 20); });
  rejecting_errors([&] {
    r::ReportOptions opt;
    opt.compare_resamples = 20;
    const r::ReportData d = r::collect_report(db, ids, opt);
    r::rank_variants(d);
    r::render_html(d);
    r::render_markdown(d);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = scratch().db();
  for (const char* side : {"", "-wal", "-shm", "-journal"}) fs::remove(path + side);
  cibench::fuzz::write_input(path, data, size);
  rejecting_errors([&] { read_as_readers_do(path); });
  rejecting_errors([&] {
    cibench::Store st(path, false);
    st.mark_stale_runs();
  });
  rejecting_errors([&] { read_as_readers_do(path); });
  return 0;
}
