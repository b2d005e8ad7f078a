#include "harness/lib/fleet.h"

#include <sys/wait.h>
#include <unistd.h>

#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "harness/lib/sysinfo.h"  // utc_now_iso

namespace cibench {
namespace fs = std::filesystem;
namespace {

std::string where(const std::string& path, const toml::node& n) {
  return str(path, ":", n.source().begin.line, ":", n.source().begin.column);
}

bool valid_name(const std::string& s) {
  return !s.empty() && s.size() <= 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'; });
}

// Single-quoted for a POSIX shell.
std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string read_text(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FleetError(str(path, ": cannot read ", what));
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// "Key=Value Key2=Value two" fields of one scontrol -o line (values run to the next " Key=").
std::map<std::string, std::string> scontrol_fields(const std::string& line) {
  std::map<std::string, std::string> f;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t eq = line.find('=', i);
    if (eq == std::string::npos) break;
    const std::string key = line.substr(i, eq - i);
    // The value ends where the next " Word=" starts.
    size_t end = eq + 1;
    for (;;) {
      const size_t sp = line.find(' ', end);
      if (sp == std::string::npos) {
        end = line.size();
        break;
      }
      const size_t next_eq = line.find('=', sp + 1);
      const size_t next_sp = line.find(' ', sp + 1);
      if (next_eq != std::string::npos && (next_sp == std::string::npos || next_eq < next_sp)) {
        end = sp;
        break;
      }
      end = sp + 1;
    }
    f[key] = line.substr(eq + 1, end - eq - 1);
    i = end;
  }
  return f;
}

// The last non-empty line of a task's error log that the task's program wrote: Slurm's own lines
// ("srun: error: node: task 0: Exited with exit code 4", "slurmstepd: ...") come after it and say
// less; they are the answer only when there is nothing else.
std::string last_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line, last, last_any;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    last_any = line;
    if (line.rfind("srun: ", 0) != 0 && line.rfind("slurmstepd: ", 0) != 0) last = line;
  }
  return last.empty() ? last_any : last;
}

}  // namespace

const HostType* HostsFile::find(const std::string& name) const {
  for (const auto& h : hosts)
    if (h.name == name) return &h;
  return nullptr;
}

HostsFile parse_hosts_file(const std::string& path) { return parse_hosts_text(read_text(path, "the hosts file"), path); }

HostsFile parse_hosts_text(const std::string& text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, std::string_view(path));
  } catch (const toml::parse_error& e) {
    throw FleetError(str(path, ":", e.source().begin.line, ":", e.source().begin.column, ": ", e.description()));
  }
  HostsFile h;
  h.path = path;
  for (auto&& [k, v] : root) {
    const std::string key(k.str());
    if (key == "currency") {
      if (!v.is_string() || v.as_string()->get().empty())
        throw FleetError(str(where(path, v), ": currency: expected a currency name such as \"USD\""));
      h.currency = v.as_string()->get();
    } else if (key != "host") {
      throw FleetError(str(where(path, v), ": ", key, ": unknown key (known: currency, [[host]])"));
    }
  }
  const toml::node* hosts = root.get("host");
  if (!hosts) throw FleetError(str(path, ": no host types (add [[host]] tables with a name and a price_per_hour)"));
  const toml::array* arr = hosts->as_array();
  if (!arr || !arr->is_array_of_tables())
    throw FleetError(str(where(path, *hosts), ": host: expected [[host]] tables"));
  static const std::set<std::string> known{"name",          "price_per_hour", "source",    "partition",
                                           "constraint",    "cpus_per_task",  "exclusive", "cpu_bind"};
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::table& t = *arr->get(i)->as_table();
    const std::string at = where(path, t);
    const std::string label = str("host[", i + 1, "]");
    HostType ht;
    ht.currency = h.currency;
    for (auto&& [k, v] : t) {
      const std::string key(k.str());
      if (!known.count(key))
        throw FleetError(str(where(path, v), ": ", label, ".", key,
                             ": unknown key (known: name, price_per_hour, source, partition, constraint, "
                             "cpus_per_task, exclusive, cpu_bind)"));
    }
    const auto text_key = [&](const char* key, std::string& out) {
      if (const toml::node* n = t.get(key)) {
        if (!n->is_string()) throw FleetError(str(where(path, *n), ": ", label, ".", key, ": expected a string"));
        out = n->as_string()->get();
      }
    };
    text_key("name", ht.name);
    if (ht.name.empty()) throw FleetError(str(at, ": ", label, ": no name (name = \"c7i.large\")"));
    if (!valid_name(ht.name))
      throw FleetError(str(where(path, *t.get("name")), ": ", label, ".name: '", ht.name,
                           "' is not a host type name (letters, digits, '.', '_', '-'; at most 64)"));
    const std::string hl = "host '" + ht.name + "'";
    if (h.find(ht.name)) throw FleetError(str(where(path, *t.get("name")), ": ", hl, " is named twice"));
    const toml::node* price = t.get("price_per_hour");
    if (!price)
      throw FleetError(str(at, ": ", hl, ": no price_per_hour (what an hour of this host costs, in ", h.currency,
                           "; cost per answer needs it)"));
    if (!price->is_number()) throw FleetError(str(where(path, *price), ": ", hl, ".price_per_hour: expected a number"));
    ht.price_per_hour = price->value<double>().value_or(-1);
    if (!(ht.price_per_hour >= 0))
      throw FleetError(str(where(path, *price), ": ", hl, ".price_per_hour: ", ht.price_per_hour, " is negative"));
    text_key("source", ht.source);
    text_key("partition", ht.partition);
    text_key("constraint", ht.constraint);
    text_key("cpu_bind", ht.cpu_bind);
    static const std::set<std::string> binds{"none", "cores", "threads", "sockets", "ldoms", "rank"};
    if (!binds.count(ht.cpu_bind))
      throw FleetError(str(where(path, *t.get("cpu_bind")), ": ", hl, ".cpu_bind: '", ht.cpu_bind,
                           "' (srun --cpu-bind: none, cores, threads, sockets, ldoms, rank)"));
    if (const toml::node* n = t.get("cpus_per_task")) {
      if (!n->is_integer() || n->value<int64_t>().value_or(0) < 1 || n->value<int64_t>().value_or(0) > 4096)
        throw FleetError(str(where(path, *n), ": ", hl, ".cpus_per_task: expected a whole number from 1 to 4096"));
      ht.cpus_per_task = static_cast<int>(*n->value<int64_t>());
    }
    if (const toml::node* n = t.get("exclusive")) {
      if (!n->is_boolean()) throw FleetError(str(where(path, *n), ": ", hl, ".exclusive: expected true or false"));
      ht.exclusive = *n->value<bool>();
    }
    for (const std::string* s : {&ht.partition, &ht.constraint})
      if (s->find_first_of("\n'\"") != std::string::npos)
        throw FleetError(str(at, ": ", hl, ": partition and constraint cannot hold quotes or line breaks"));
    h.hosts.push_back(ht);
  }
  if (h.hosts.empty()) throw FleetError(str(path, ": no host types (add [[host]] tables)"));
  return h;
}

std::vector<ArrayGroup> array_groups(const HostsFile& h) {
  std::vector<ArrayGroup> g;
  for (size_t i = 0; i < h.hosts.size(); ++i) {
    const HostType& t = h.hosts[i];
    auto it = std::find_if(g.begin(), g.end(), [&](const ArrayGroup& a) {
      return a.partition == t.partition && a.constraint == t.constraint && a.exclusive == t.exclusive;
    });
    if (it == g.end()) {
      ArrayGroup a;
      a.partition = t.partition;
      a.constraint = t.constraint;
      a.exclusive = t.exclusive;
      g.push_back(a);
      it = g.end() - 1;
    }
    it->hosts.push_back(i);
    it->cpus = std::max(it->cpus, t.cpus_per_task);
  }
  for (size_t i = 0; i < g.size(); ++i) g[i].script = str("array-", i, ".sbatch");
  return g;
}

std::string batch_script(const FleetPlan& p, size_t gi) {
  const ArrayGroup& g = p.groups.at(gi);
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# Written by cibench fleet slurm: array " << gi << " of the fleet in " << p.dir << "; task i runs the suite as\n"
    << "# host type HOSTS[i] into a store on the node's local disk, then copies it into stores/.\n"
    << "#SBATCH --job-name=cibench-fleet-" << p.name << "\n"
    << "#SBATCH --array=0-" << g.hosts.size() - 1 << "\n"
    << "#SBATCH --ntasks=1\n"
    << "#SBATCH --cpus-per-task=" << g.cpus << "\n";
  if (!g.partition.empty()) s << "#SBATCH --partition=" << g.partition << "\n";
  if (!g.constraint.empty()) s << "#SBATCH --constraint=" << g.constraint << "\n";
  if (g.exclusive) s << "#SBATCH --exclusive\n";
  if (!p.time_limit.empty()) s << "#SBATCH --time=" << p.time_limit << "\n";
  s << "#SBATCH --output=" << p.dir << "/logs/%A_%a.out\n"
    << "#SBATCH --error=" << p.dir << "/logs/%A_%a.err\n"
    << "set -euo pipefail\n";
  const auto list = [&](auto field) {
    std::string out = "(";
    for (size_t k = 0; k < g.hosts.size(); ++k) {
      if (k) out += ' ';
      out += sh_quote(field(p.hosts.hosts[g.hosts[k]]));
    }
    return out + ")";
  };
  s << "HOSTS=" << list([](const HostType& h) { return h.name; }) << "\n"
    << "CPUS=" << list([](const HostType& h) { return std::to_string(h.cpus_per_task); }) << "\n"
    << "BIND=" << list([](const HostType& h) { return h.cpu_bind; }) << "\n"
    << "i=${SLURM_ARRAY_TASK_ID:?not run as a Slurm array task}\n"
    << "host=${HOSTS[$i]}\n"
    << "export CIBENCH_HOST_TYPE=\"$host\" CIBENCH_CPU_BIND=\"${BIND[$i]}\" CIBENCH_SLURM_EXCLUSIVE="
    << (g.exclusive ? 1 : 0) << "\n"
    << "# Where Slurm does not bind CPUs (task/none), cibench keeps to the host type's CPUs itself.\n"
    << "export CIBENCH_CPUS=\"${CPUS[$i]}\"\n"
    << "# SQLite must not be written over a network filesystem: the store is written on local disk.\n"
    << "local_store=\"${TMPDIR:-/tmp}/cibench-fleet-${SLURM_JOB_ID}.sqlite\"\n"
    << "rm -f \"$local_store\" \"$local_store-wal\" \"$local_store-shm\"\n"
    << "status=0\n";
  for (const auto& sc : p.scenarios) {
    s << "srun --ntasks=1 --cpus-per-task=\"${CPUS[$i]}\" --cpu-bind=\"${BIND[$i]}\" --exact " << sh_quote(p.cibench)
      << " run " << sh_quote(sc) << " --db \"$local_store\" --quiet";
    for (const auto& set : p.sets) s << " --set " << sh_quote(set);
    s << " || status=$?\n";
  }
  s << "if [[ -f \"$local_store\" ]]; then\n"
    << "  cp \"$local_store\" " << sh_quote(p.dir + "/stores/") << "\"$host.sqlite.part\"\n"
    << "  mv " << sh_quote(p.dir + "/stores/") << "\"$host.sqlite.part\" " << sh_quote(p.dir + "/stores/")
    << "\"$host.sqlite\"\n"
    << "  rm -f \"$local_store\"\n"
    << "fi\n"
    << "exit \"$status\"\n";
  return s.str();
}

nlohmann::json fleet_manifest(const FleetPlan& p) {
  nlohmann::json j;
  j["name"] = p.name;
  j["dir"] = p.dir;
  j["scenarios"] = p.scenarios;
  j["sets"] = p.sets;
  j["cibench"] = p.cibench;
  j["time_limit"] = p.time_limit;
  j["hosts_file"] = p.hosts.path;
  j["currency"] = p.hosts.currency;
  for (const auto& h : p.hosts.hosts)
    j["hosts"].push_back({{"name", h.name},
                          {"price_per_hour", h.price_per_hour},
                          {"source", h.source},
                          {"partition", h.partition},
                          {"constraint", h.constraint},
                          {"cpus_per_task", h.cpus_per_task},
                          {"exclusive", h.exclusive},
                          {"cpu_bind", h.cpu_bind}});
  for (const auto& g : p.groups)
    j["arrays"].push_back({{"script", g.script},
                           {"partition", g.partition},
                           {"constraint", g.constraint},
                           {"exclusive", g.exclusive},
                           {"cpus_per_task", g.cpus},
                           {"hosts", g.hosts},
                           {"job_id", g.job_id}});
  j["written_utc"] = utc_now_iso();
  return j;
}

namespace {
void write_file(const fs::path& path, const std::string& text, bool executable) {
  const fs::path tmp = path.string() + ".part";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out.flush()) throw FleetError(str(path.string(), ": cannot write"));
  }
  if (executable) fs::permissions(tmp, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                           fs::perms::others_read | fs::perms::others_exec);
  fs::rename(tmp, path);
}
}  // namespace

void write_fleet(const FleetPlan& p, bool replace) {
  const fs::path dir(p.dir);
  if (fs::exists(dir / "fleet.json") && !replace)
    throw FleetError(str((dir / "fleet.json").string(),
                         ": a fleet is already planned in this folder (collect it, or give another --dir)"));
  fs::create_directories(dir / "stores");
  fs::create_directories(dir / "logs");
  for (size_t g = 0; g < p.groups.size(); ++g) write_file(dir / p.groups[g].script, batch_script(p, g), true);
  write_file(dir / "fleet.json", fleet_manifest(p).dump(2) + "\n", false);
}

FleetPlan read_fleet(const std::string& dir) {
  const std::string path = (fs::path(dir) / "fleet.json").string();
  if (!fs::exists(path)) throw FleetError(str(path, ": no such file (plan the fleet with cibench fleet slurm first)"));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text(path, "the fleet manifest"));
    FleetPlan p;
    p.name = j.at("name").get<std::string>();
    p.dir = j.at("dir").get<std::string>();
    p.scenarios = j.at("scenarios").get<std::vector<std::string>>();
    p.sets = j.at("sets").get<std::vector<std::string>>();
    p.cibench = j.at("cibench").get<std::string>();
    p.time_limit = j.at("time_limit").get<std::string>();
    p.hosts.path = j.at("hosts_file").get<std::string>();
    p.hosts.currency = j.at("currency").get<std::string>();
    for (const auto& h : j.at("hosts")) {
      HostType t;
      t.name = h.at("name").get<std::string>();
      t.price_per_hour = h.at("price_per_hour").get<double>();
      t.currency = p.hosts.currency;
      t.source = h.at("source").get<std::string>();
      t.partition = h.at("partition").get<std::string>();
      t.constraint = h.at("constraint").get<std::string>();
      t.cpus_per_task = h.at("cpus_per_task").get<int>();
      t.exclusive = h.at("exclusive").get<bool>();
      t.cpu_bind = h.at("cpu_bind").get<std::string>();
      p.hosts.hosts.push_back(t);
    }
    for (const auto& a : j.at("arrays")) {
      ArrayGroup g;
      g.script = a.at("script").get<std::string>();
      g.partition = a.at("partition").get<std::string>();
      g.constraint = a.at("constraint").get<std::string>();
      g.exclusive = a.at("exclusive").get<bool>();
      g.cpus = a.at("cpus_per_task").get<int>();
      g.hosts = a.at("hosts").get<std::vector<size_t>>();
      g.job_id = a.at("job_id").get<std::string>();
      for (size_t h : g.hosts)
        if (h >= p.hosts.hosts.size()) throw FleetError(str(path, ": array ", g.script, " names host ", h, " of ", p.hosts.hosts.size()));
      p.groups.push_back(g);
    }
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw FleetError(str(path, ": not a fleet manifest cibench wrote: ", e.what()));
  }
}

bool terminal_state(const std::string& s) {
  static const std::set<std::string> t{"COMPLETED", "FAILED",   "CANCELLED", "TIMEOUT",  "OUT_OF_MEMORY", "NODE_FAIL",
                                       "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"};
  // sacct writes "CANCELLED by 0".
  return t.count(s.substr(0, s.find(' ')));
}

std::vector<TaskState> parse_scontrol_jobs(const std::string& text) {
  std::vector<TaskState> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("JobId=") == std::string::npos) continue;
    const auto f = scontrol_fields(line);
    TaskState t;
    auto it = f.find("ArrayTaskId");
    if (it != f.end()) {
      const std::string& id = it->second;
      t.task = id.find_first_not_of("0123456789") == std::string::npos && !id.empty() ? std::stoi(id) : -1;
    }
    t.state = f.count("JobState") ? f.at("JobState") : "";
    t.exit_code = f.count("ExitCode") ? f.at("ExitCode") : "";
    t.reason = f.count("Reason") ? f.at("Reason") : "";
    out.push_back(t);
  }
  return out;
}

std::vector<TaskState> parse_sacct(const std::string& text) {
  std::vector<TaskState> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::string cell;
    std::istringstream ls(line);
    while (std::getline(ls, cell, '|')) f.push_back(cell);
    if (f.size() < 3) continue;
    TaskState t;
    const size_t us = f[0].find('_');
    if (us == std::string::npos) continue;  // not an array task
    const std::string idx = f[0].substr(us + 1);
    t.task = !idx.empty() && idx.find_first_not_of("0123456789") == std::string::npos ? std::stoi(idx) : -1;
    t.state = f[1];
    t.exit_code = f[2];
    t.reason = f.size() > 3 ? f[3] : "";
    out.push_back(t);
  }
  return out;
}

bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::istringstream in(path);
  std::string d;
  while (std::getline(in, d, ':'))
    if (!d.empty() && access((fs::path(d) / name).c_str(), X_OK) == 0) return true;
  return false;
}

CommandResult run_command(const std::vector<std::string>& argv) {
  std::string cmd;
  for (const auto& a : argv) {
    if (!cmd.empty()) cmd += ' ';
    cmd += sh_quote(a);
  }
  cmd += " 2>&1";
  CommandResult r;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) throw FleetError(str("cannot run ", argv.at(0)));
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.out.append(buf, n);
  const int st = pclose(f);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

void submit_fleet(FleetPlan& p, const CommandRunner& run) {
  if (!on_path("sbatch"))
    throw FleetError("Slurm is not installed here (no sbatch on PATH): nothing submitted; the batch scripts are in " +
                     p.dir + " (run them with sbatch where Slurm is, or install Debian's slurm-wlm)");
  const CommandResult ping = run({"sinfo", "-h", "-o", "%P"});
  if (ping.status != 0)
    throw FleetError(str("Slurm does not answer (sinfo: ", ping.out.substr(0, 300),
                         "): nothing submitted; the batch scripts are in ", p.dir));
  std::vector<std::string> submitted;
  for (auto& g : p.groups) {
    const CommandResult r = run({"sbatch", "--parsable", (fs::path(p.dir) / g.script).string()});
    std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
    if (r.status != 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
      for (const auto& s : submitted) run({"scancel", s});
      for (auto& g2 : p.groups) g2.job_id.clear();
      throw FleetError(str("sbatch ", g.script, " failed (", r.out.substr(0, 400), ")",
                           submitted.empty() ? std::string() : "; cancelled the arrays submitted before it",
                           ": nothing is left submitted"));
    }
    g.job_id = id;
    submitted.push_back(id);
  }
  write_fleet(p, true);
}

std::vector<FleetTask> fleet_tasks(const FleetPlan& p, const CommandRunner& run) {
  std::vector<FleetTask> out;
  for (size_t gi = 0; gi < p.groups.size(); ++gi) {
    const ArrayGroup& g = p.groups[gi];
    if (g.job_id.empty()) throw FleetError(str(p.dir, "/fleet.json: array ", g.script, " was never submitted (--submit)"));
    std::vector<TaskState> states;
    const CommandResult sa = run({"sacct", "-X", "-n", "-P", "-o", "JobID,State,ExitCode,Reason", "-j", g.job_id});
    if (sa.status == 0 && sa.out.find("accounting storage is disabled") == std::string::npos) states = parse_sacct(sa.out);
    if (states.empty()) {
      const CommandResult sc = run({"scontrol", "show", "job", "-o", g.job_id});
      if (sc.status != 0)
        throw FleetError(str("array ", g.job_id, " (", g.script, "): neither sacct nor scontrol knows it (",
                             sc.out.substr(0, 300), ")"));
      states = parse_scontrol_jobs(sc.out);
    }
    for (size_t k = 0; k < g.hosts.size(); ++k) {
      FleetTask t;
      t.group = gi;
      t.task = static_cast<int>(k);
      t.host = p.hosts.hosts[g.hosts[k]].name;
      t.job_id = g.job_id + "_" + std::to_string(k);
      t.state.state = "PENDING";
      for (const auto& s : states)
        if (s.task == static_cast<int>(k)) t.state = s;
      // A record for the array's not yet started rest (ArrayTaskId=1-3) leaves those PENDING.
      t.store = (fs::path(p.dir) / "stores" / (t.host + ".sqlite")).string();
      t.store_exists = fs::exists(t.store);
      if (terminal_state(t.state.state) &&
          (t.state.state != "COMPLETED" || !t.store_exists)) {
        const std::string err = last_line_of(str(p.dir, "/logs/", g.job_id, "_", k, ".err"));
        t.why = str(t.state.state, " (exit ", t.state.exit_code.empty() ? "?" : t.state.exit_code, ", reason ",
                    t.state.reason.empty() ? "none" : t.state.reason, ")",
                    t.store_exists ? std::string() : ", no store written",
                    err.empty() ? std::string() : ": " + err);
      }
      out.push_back(t);
    }
  }
  return out;
}

}  // namespace cibench
