#pragma once
// Suites across a fleet of candidate host types on Slurm (`cibench fleet slurm`, `cibench fleet
// collect`; docs/fleet.md). A hosts file names each host type with its price per hour and how
// Slurm places a task on it (partition, constraint, CPUs per task, exclusive, CPU binding).
// `fleet slurm` writes a folder on shared storage: the manifest (fleet.json), one job-array batch
// script per resource group and, after --submit, the job ids. Each array task runs the suite as
// one host type into a store on the node's local disk (SQLite must not be written over a network
// filesystem) and copies it, finished, into the folder's stores/. `fleet collect` waits for the
// arrays, names each task that failed and why, and merges the stores with the host types' prices.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engines/core/error.h"

namespace cibench {

class FleetError : public Error {
 public:
  using Error::Error;
};

struct HostType {
  std::string name;          // [A-Za-z0-9._-]+, unique in the file
  double price_per_hour = 0;
  std::string currency;      // the file's (default USD)
  std::string source;        // where the price comes from ("aws c7i.large on-demand, 2026-12"); may be empty
  std::string partition;     // Slurm partition; empty = the cluster's default
  std::string constraint;    // Slurm --constraint; empty = none
  int cpus_per_task = 1;
  bool exclusive = false;    // --exclusive: the node to itself
  std::string cpu_bind = "cores";  // srun --cpu-bind
};

struct HostsFile {
  std::string path;
  std::string currency = "USD";
  std::vector<HostType> hosts;
  const HostType* find(const std::string& name) const;
};

// Parses a hosts file; throws FleetError naming path:line:column and the key for a syntax error,
// an unknown key, a host without a name or a price, a negative price, a duplicate name, a bad
// CPU count or binding, an empty file.
HostsFile parse_hosts_file(const std::string& path);
HostsFile parse_hosts_text(const std::string& text, const std::string& path);

// Host types that share a partition, constraint and exclusivity run as one job array; tasks of an
// array share one resource request, so the array asks for its largest --cpus-per-task and each
// task narrows itself to its host type's CPUs with srun.
struct ArrayGroup {
  std::string partition, constraint;
  bool exclusive = false;
  int cpus = 1;                     // the array's --cpus-per-task (the largest of its hosts)
  std::vector<size_t> hosts;        // indices into HostsFile::hosts, task i = hosts[i]
  std::string script;               // the batch script's file name in the fleet folder
  std::string job_id;               // after submission
};
std::vector<ArrayGroup> array_groups(const HostsFile& h);

struct FleetPlan {
  std::string dir;                        // absolute
  std::string name;                       // job name: cibench-fleet-NAME
  std::vector<std::string> scenarios;     // absolute paths
  std::vector<std::string> sets;          // --set overrides for every scenario
  std::string cibench;                    // absolute path of the cibench binary the tasks run
  std::string time_limit;                 // sbatch --time; empty = the partition's
  HostsFile hosts;
  std::vector<ArrayGroup> groups;
};

// The batch script of group `g` (written as plan.groups[g].script).
std::string batch_script(const FleetPlan& p, size_t g);
// Writes DIR/fleet.json, the batch scripts, DIR/stores and DIR/logs. Refuses a folder that already
// holds a fleet.json (a fleet already planned there) unless `replace`.
void write_fleet(const FleetPlan& p, bool replace);
nlohmann::json fleet_manifest(const FleetPlan& p);
FleetPlan read_fleet(const std::string& dir);  // FleetError naming DIR/fleet.json

// One array task as Slurm reports it.
struct TaskState {
  int task = -1;            // array index; -1: the whole array (still pending as one record)
  std::string state;        // PENDING RUNNING COMPLETED FAILED CANCELLED TIMEOUT OUT_OF_MEMORY NODE_FAIL ...
  std::string exit_code;    // "0:0"
  std::string reason;       // Slurm's reason (None, NonZeroExitCode, ...)
};
bool terminal_state(const std::string& state);
// `scontrol show job -o ID` output: one line per array task (or one for the pending rest).
std::vector<TaskState> parse_scontrol_jobs(const std::string& text);
// `sacct -X -n -P -o JobID,State,ExitCode,Reason -j ID` output ("41_0|COMPLETED|0:0|None").
std::vector<TaskState> parse_sacct(const std::string& text);

// Runs a command, returning its exit status and standard output (stderr folded in when asked).
struct CommandResult {
  int status = -1;
  std::string out;
};
using CommandRunner = std::function<CommandResult(const std::vector<std::string>& argv)>;
CommandResult run_command(const std::vector<std::string>& argv);
// Whether `name` is an executable on PATH.
bool on_path(const std::string& name);

// Submits every array (sbatch --parsable); a failure cancels what was submitted before it
// (scancel) and throws FleetError, so nothing is half-submitted. Records the job ids in fleet.json.
void submit_fleet(FleetPlan& p, const CommandRunner& run = run_command);

// The tasks of every array of the plan, by querying sacct (or scontrol where accounting storage
// is disabled). index = the task's position in the plan (group by group).
struct FleetTask {
  size_t group = 0;
  int task = 0;
  std::string host;
  std::string job_id;       // "41_0"
  TaskState state;
  std::string store;        // DIR/stores/HOST.sqlite
  bool store_exists = false;
  std::string why;          // failed: the state, exit code and the last line of its error log
};
std::vector<FleetTask> fleet_tasks(const FleetPlan& p, const CommandRunner& run = run_command);

}  // namespace cibench
