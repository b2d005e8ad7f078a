// cibench fleet slurm SCENARIO... --hosts hosts.toml --dir DIR [--submit]: plans (and submits) a
// Slurm job array per resource group, one task per host type, each running the suite into its own
// store; cibench fleet collect DIR [-o OUT]: waits for the arrays, names the tasks that failed and
// why, merges the stores with the host types' prices (harness/lib/fleet.h, docs/fleet.md).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include "harness/cli/command.h"
#include "harness/lib/fleet.h"
#include "harness/lib/merge.h"
#include "harness/lib/scenario.h"
#include "harness/lib/store.h"
#include "harness/lib/sysinfo.h"
#include "harness/lib/text_table.h"

namespace cibench::cli {
namespace cmd_fleet {
namespace fs = std::filesystem;

struct SlurmArgs {
  std::vector<std::string> scenarios;
  std::vector<std::string> sets;
  std::vector<std::string> only;  // --host: these host types of the file only
  std::string hosts;
  std::string dir;
  std::string name;
  std::string time_limit;
  std::string cibench;
  bool submit = false;
  bool replace = false;
};

struct CollectArgs {
  std::string dir;
  std::string output;
  double timeout_s = 3600;
  double poll_s = 2;
  bool partial = false;
  bool no_wait = false;
};

std::string self_path() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("cibench") : p.string();
}

int plan(const SlurmArgs& a) {
  FleetPlan p;
  p.hosts = parse_hosts_file(a.hosts);
  if (!a.only.empty()) {
    std::vector<HostType> kept;
    for (const auto& name : a.only) {
      const HostType* h = p.hosts.find(name);
      if (!h) {
        std::string known;
        for (const auto& k : p.hosts.hosts) known += (known.empty() ? "" : ", ") + k.name;
        throw FleetError(str(a.hosts, ": no host type '", name, "' (--host; the file has ", known, ")"));
      }
      kept.push_back(*h);
    }
    p.hosts.hosts = kept;
  }
  for (const auto& s : a.scenarios) {
    parse_scenario_file(s, a.sets);  // every scenario must parse before anything is written
    p.scenarios.push_back(fs::absolute(s).lexically_normal().string());
  }
  p.sets = a.sets;
  p.dir = fs::absolute(a.dir).lexically_normal().string();
  p.name = a.name.empty() ? fs::path(p.dir).filename().string() : a.name;
  p.time_limit = a.time_limit;
  p.cibench = a.cibench.empty() ? self_path() : fs::absolute(a.cibench).string();
  p.groups = array_groups(p.hosts);
  // Where Slurm is absent, say so before writing anything --submit would need.
  if (a.submit && !on_path("sbatch"))
    throw FleetError("Slurm is not installed here (no sbatch on PATH): nothing written or submitted (install Debian's "
                     "slurm-wlm, or leave out --submit to write the batch scripts only)");
  write_fleet(p, a.replace);
  const std::string nfs = network_filesystem(p.dir);
  std::cout << "fleet '" << p.name << "' in " << p.dir << (nfs.empty() ? "" : " (" + nfs + ")") << ": "
            << p.scenarios.size() << " scenario" << (p.scenarios.size() == 1 ? "" : "s") << " on " << p.hosts.hosts.size()
            << " host types\n";
  TextTable t({"array", "task", "host type", "price/h", "cpus", "partition", "constraint", "exclusive", "bind"});
  for (size_t g = 0; g < p.groups.size(); ++g)
    for (size_t k = 0; k < p.groups[g].hosts.size(); ++k) {
      const HostType& h = p.hosts.hosts[p.groups[g].hosts[k]];
      t.add({p.groups[g].script, std::to_string(k), h.name, str(h.price_per_hour, " ", h.currency),
             std::to_string(h.cpus_per_task), h.partition.empty() ? "(default)" : h.partition,
             h.constraint.empty() ? "-" : h.constraint, h.exclusive ? "yes" : "no", h.cpu_bind});
    }
  t.print(std::cout);
  if (!a.submit) {
    std::cout << "not submitted: sbatch " << p.dir << "/" << p.groups[0].script
              << (p.groups.size() > 1 ? " (and the other arrays)" : "") << ", or run again with --submit\n";
    return 0;
  }
  submit_fleet(p);
  for (const auto& g : p.groups) std::cout << "submitted " << g.script << " as job " << g.job_id << "\n";
  std::cout << "then: cibench fleet collect " << p.dir << "\n";
  return 0;
}

int collect(const CollectArgs& a) {
  FleetPlan p = read_fleet(a.dir);
  const std::string out = a.output.empty() ? (fs::path(p.dir) / "fleet.sqlite").string() : a.output;
  const auto start = std::chrono::steady_clock::now();
  std::vector<FleetTask> tasks;
  for (;;) {
    tasks = fleet_tasks(p);
    size_t done = 0;
    for (const auto& t : tasks) done += terminal_state(t.state.state);
    if (done == tasks.size() || a.no_wait) break;
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > a.timeout_s) {
      std::string pending;
      for (const auto& t : tasks)
        if (!terminal_state(t.state.state)) pending += str(pending.empty() ? "" : ", ", t.job_id, " (", t.host, ": ", t.state.state, ")");
      throw FleetError(str("fleet ", p.dir, ": ", tasks.size() - done, " tasks not finished after ", a.timeout_s,
                           " s: ", pending, "; nothing merged"));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(a.poll_s));
  }
  TextTable t({"task", "host type", "state", "exit", "store"});
  std::vector<std::string> stores;
  std::vector<std::string> failed;
  for (const auto& k : tasks) {
    t.add({k.job_id, k.host, k.state.state, k.state.exit_code, k.store_exists ? k.store : "-"});
    if (k.why.empty() && terminal_state(k.state.state)) stores.push_back(k.store);
    else if (!k.why.empty()) failed.push_back(str("task ", k.job_id, " (host type ", k.host, "): ", k.why));
    else failed.push_back(str("task ", k.job_id, " (host type ", k.host, "): ", k.state.state, ", not finished"));
  }
  t.print(std::cout);
  for (const auto& f : failed) std::cerr << "cibench fleet collect: " << f << "\n";
  if (!failed.empty() && !a.partial)
    throw FleetError(str(failed.size(), " of ", tasks.size(), " tasks did not finish with a store; nothing merged (",
                         "--partial merges the others)"));
  if (stores.empty()) throw FleetError(str("fleet ", p.dir, ": no task wrote a store; nothing merged"));
  // Each store holds the runs of its task's host type only (a store copied in by hand is refused).
  for (const auto& k : tasks) {
    if (std::find(stores.begin(), stores.end(), k.store) == stores.end()) continue;
    Store st(k.store, false);
    const auto r = st.query("SELECT run_id, host_type FROM runs WHERE host_type IS NOT ? OR host_type IS NULL", {k.host});
    if (!r.rows.empty())
      throw FleetError(str(k.store, ": run ", sql_to_string(r.rows[0][0]), " ran as host type '",
                           sql_to_string(r.rows[0][1]).empty() ? "(none)" : sql_to_string(r.rows[0][1]), "', not '",
                           k.host, "' (task ", k.job_id, "); nothing merged"));
  }
  std::vector<Fields> prices;
  for (const auto& h : p.hosts.hosts)
    prices.push_back({{"name", h.name},
                      {"price_per_hour", h.price_per_hour},
                      {"currency", h.currency},
                      {"source", h.source.empty() ? sql_null() : SqlValue(h.source)},
                      {"slurm_partition", h.partition.empty() ? sql_null() : SqlValue(h.partition)},
                      {"slurm_constraint", h.constraint.empty() ? sql_null() : SqlValue(h.constraint)},
                      {"cpus_per_task", int64_t{h.cpus_per_task}},
                      {"exclusive", int64_t{h.exclusive}},
                      {"hosts_file", p.hosts.path},
                      {"updated_utc", utc_now_iso()}});
  const MergeResult r = merge_stores(stores, out, prices);
  std::cout << out << ": " << r.added << " runs added from " << stores.size() << " stores (" << r.already
            << " already there); host types priced: " << p.hosts.hosts.size() << "\n";
  return failed.empty() ? 0 : 3;
}

RegisterCommand reg{Command{
    "fleet", "Run a suite on several host types through Slurm and merge the results (fleet slurm, fleet collect)",
    [](CLI::App& sub) -> std::function<int()> {
      auto s = std::make_shared<SlurmArgs>();
      auto c = std::make_shared<CollectArgs>();
      sub.require_subcommand(1);
      CLI::App* slurm = sub.add_subcommand("slurm", "Write (and with --submit submit) one job array per resource group, "
                                                    "one task per host type");
      slurm->add_option("scenarios", s->scenarios, "Scenario files of the suite")->required();
      slurm->add_option("--hosts", s->hosts, "Hosts file: each host type with its price per hour")->required();
      slurm->add_option("--dir", s->dir, "Fleet folder on storage every node sees (scripts, logs, stores)")->required();
      slurm->add_option("--host", s->only, "Only this host type of the hosts file (repeatable)");
      slurm->add_option("--name", s->name, "Job name suffix (default: the folder's name)");
      slurm->add_option("--set", s->sets, "Override a scenario key for every task: table.key=value, repeatable");
      slurm->add_option("--time", s->time_limit, "sbatch --time of each array (default: the partition's)");
      slurm->add_option("--cibench", s->cibench, "The cibench binary the tasks run (default: this one)");
      slurm->add_flag("--submit", s->submit, "Submit the arrays (sbatch); a failed submission cancels the others");
      slurm->add_flag("--replace", s->replace, "Overwrite a fleet already planned in --dir");
      CLI::App* col = sub.add_subcommand("collect", "Wait for a fleet's arrays, report failed tasks, merge the stores");
      col->add_option("dir", c->dir, "The fleet folder (as given to fleet slurm --dir)")->required();
      col->add_option("-o,--output", c->output, "Merged store (default DIR/fleet.sqlite)");
      col->add_option("--timeout", c->timeout_s, "Give up after this many seconds")->capture_default_str();
      col->add_option("--poll", c->poll_s, "Seconds between looks at the queue")->capture_default_str();
      col->add_flag("--partial", c->partial, "Merge the tasks that finished even if others failed (exit status 3)");
      col->add_flag("--no-wait", c->no_wait, "Look once; merge only if every task has finished");
      return [s, c, slurm, col]() {
        if (slurm->parsed()) return plan(*s);
        if (col->parsed()) return collect(*c);
        return 2;
      };
    }}};

}  // namespace cmd_fleet
}  // namespace cibench::cli
