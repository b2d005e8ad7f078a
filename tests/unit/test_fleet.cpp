// Fleets (harness/lib/fleet.h, harness/lib/cost.h): the hosts file and its errors, the job arrays
// per resource group and their batch scripts, Slurm's answers (scontrol, sacct) read back into task
// states, a submission that fails half-way cancelled, a task that died named with its reason, the
// network-filesystem check, and cost per answer at a knee or a measured rate with the host types
// ranked. The real Slurm runs in tests/e2e/fleet_slurm.sh.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "harness/lib/cost.h"
#include "reports/analysis/hosts.h"
#include "reports/report.h"
#include "harness/lib/fleet.h"
#include "harness/lib/store.h"
#include "tests/gui/reports_fixture.h"

namespace cibench {
namespace {
namespace fs = std::filesystem;

const char* kHosts = R"(currency = "EUR"

[[host]]
name = "small"
price_per_hour = 0.05
source = "1 vCPU, list price 2026-12"
cpus_per_task = 1

[[host]]
name = "large"
price_per_hour = 0.12
cpus_per_task = 2
cpu_bind = "threads"

[[host]]
name = "zen4"
price_per_hour = 0.4
partition = "amd"
constraint = "zen4"
cpus_per_task = 4
exclusive = true
)";

std::string hosts_error(const std::string& text) {
  try {
    parse_hosts_text(text, "hosts.toml");
  } catch (const FleetError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Fleet, HostsFileAndItsGroups) {
  const HostsFile h = parse_hosts_text(kHosts, "hosts.toml");
  ASSERT_EQ(h.hosts.size(), 3u);
  EXPECT_EQ(h.currency, "EUR");
  EXPECT_EQ(h.hosts[0].name, "small");
  EXPECT_DOUBLE_EQ(h.hosts[0].price_per_hour, 0.05);
  EXPECT_EQ(h.hosts[0].currency, "EUR");
  EXPECT_EQ(h.hosts[0].source, "1 vCPU, list price 2026-12");
  EXPECT_EQ(h.hosts[0].cpu_bind, "cores");
  EXPECT_EQ(h.hosts[1].cpu_bind, "threads");
  EXPECT_TRUE(h.hosts[2].exclusive);
  EXPECT_EQ(h.find("zen4")->constraint, "zen4");
  EXPECT_EQ(h.find("nope"), nullptr);
  // small and large share the default partition: one array at the larger CPU count; zen4 its own.
  const auto g = array_groups(h);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].hosts, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(g[0].cpus, 2);
  EXPECT_EQ(g[0].script, "array-0.sbatch");
  EXPECT_EQ(g[1].hosts, std::vector<size_t>{2});
  EXPECT_EQ(g[1].partition, "amd");
  EXPECT_TRUE(g[1].exclusive);
}

TEST(Fleet, BadHostsFilesNameTheLineAndKey) {
  EXPECT_NE(hosts_error("[[host]]\nname = \"a\"\n").find("hosts.toml:1:1: host 'a': no price_per_hour"),
            std::string::npos)
      << hosts_error("[[host]]\nname = \"a\"\n");
  EXPECT_NE(hosts_error("[[host]]\nname = \"a\"\nprice_per_hour = -1\n")
                .find("hosts.toml:3:18: host 'a'.price_per_hour: -1 is negative"),
            std::string::npos)
      << hosts_error("[[host]]\nname = \"a\"\nprice_per_hour = -1\n");
  EXPECT_NE(hosts_error("[[host]]\nname = \"a\"\nprice_per_hour = 1\nprise = 2\n")
                .find("hosts.toml:4:9: host[1].prise: unknown key"),
            std::string::npos);
  EXPECT_NE(hosts_error("[[host]]\nname = \"a\"\nprice_per_hour = 1\n[[host]]\nname = \"a\"\nprice_per_hour = 2\n")
                .find("hosts.toml:5:8: host 'a' is named twice"),
            std::string::npos);
  EXPECT_NE(hosts_error("[[host]]\nprice_per_hour = 1\n").find("host[1]: no name"), std::string::npos);
  EXPECT_NE(hosts_error("[[host]]\nname = \"a b\"\nprice_per_hour = 1\n").find("'a b' is not a host type name"),
            std::string::npos);
  EXPECT_NE(hosts_error("[[host]]\nname = \"a\"\nprice_per_hour = 1\ncpus_per_task = 0\n").find("cpus_per_task"),
            std::string::npos);
  EXPECT_NE(hosts_error("[[host]]\nname = \"a\"\nprice_per_hour = 1\ncpu_bind = \"socket\"\n").find("cpu_bind: 'socket'"),
            std::string::npos);
  EXPECT_NE(hosts_error("").find("hosts.toml: no host types"), std::string::npos);
  EXPECT_NE(hosts_error("price = 3\n").find("hosts.toml:1:9: price: unknown key"), std::string::npos);
  EXPECT_NE(hosts_error("[[host]\n").find("hosts.toml:1:"), std::string::npos);
  EXPECT_THROW(parse_hosts_file("/nonexistent/hosts.toml"), FleetError);
}

FleetPlan plan_in(const std::string& dir) {
  FleetPlan p;
  p.hosts = parse_hosts_text(kHosts, "/etc/hosts.toml");
  p.dir = dir;
  p.name = "t";
  p.scenarios = {"/s/it's.toml"};
  p.sets = {"run.min_duration_ms=2000"};
  p.cibench = "/opt/cibench/bin/cibench";
  p.groups = array_groups(p.hosts);
  return p;
}

TEST(Fleet, BatchScriptsAndTheManifest) {
  const std::string dir = test::fresh_db_path("fleet_plan", "fleet");
  FleetPlan p = plan_in(dir);
  const std::string s0 = batch_script(p, 0), s1 = batch_script(p, 1);
  for (const char* want : {"#SBATCH --array=0-1\n", "#SBATCH --cpus-per-task=2\n", "HOSTS=('small' 'large')\n",
                           "CPUS=('1' '2')\n", "BIND=('cores' 'threads')\n", "export CIBENCH_CPUS=\"${CPUS[$i]}\"",
                           "'/opt/cibench/bin/cibench' run '/s/it'\\''s.toml' --db \"$local_store\" --quiet --set "
                           "'run.min_duration_ms=2000'",
                           "--cpu-bind=\"${BIND[$i]}\"", "/logs/%A_%a.err\n", "stores/'\"$host.sqlite\"\n"})
    EXPECT_NE(s0.find(want), std::string::npos) << want << "\n" << s0;
  EXPECT_EQ(s0.find("--partition"), std::string::npos);
  EXPECT_EQ(s0.find("--exclusive"), std::string::npos);
  for (const char* want : {"#SBATCH --array=0-0\n", "#SBATCH --partition=amd\n", "#SBATCH --constraint=zen4\n",
                           "#SBATCH --exclusive\n", "CIBENCH_SLURM_EXCLUSIVE=1"})
    EXPECT_NE(s1.find(want), std::string::npos) << want;
  write_fleet(p, false);
  EXPECT_TRUE(fs::exists(dir + "/array-0.sbatch"));
  EXPECT_TRUE(fs::exists(dir + "/stores"));
  EXPECT_THROW(write_fleet(p, false), FleetError);  // a fleet is already planned there
  const FleetPlan back = read_fleet(dir);
  EXPECT_EQ(back.hosts.hosts.size(), 3u);
  EXPECT_EQ(back.hosts.hosts[1].cpu_bind, "threads");
  EXPECT_EQ(back.groups.size(), 2u);
  EXPECT_EQ(back.groups[0].hosts, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(back.sets, p.sets);
  std::ofstream(dir + "/fleet.json") << "{\"name\": 3}";
  EXPECT_THROW(read_fleet(dir), FleetError);
  EXPECT_THROW(read_fleet(dir + "/nothing-here"), FleetError);
}

TEST(Fleet, SlurmAnswersReadBack) {
  const auto sc = parse_scontrol_jobs(
      "JobId=42 ArrayJobId=41 ArrayTaskId=1 JobName=cibench-fleet-t UserId=root(0) JobState=FAILED Reason=NonZeroExitCode "
      "Dependency=(null) ExitCode=1:0 Command=/f/array-0.sbatch\n"
      "JobId=41 ArrayJobId=41 ArrayTaskId=0 JobName=cibench-fleet-t JobState=COMPLETED Reason=None ExitCode=0:0\n"
      "JobId=43 ArrayJobId=43 ArrayTaskId=0-3 JobName=x JobState=PENDING Reason=Resources ExitCode=0:0\n");
  ASSERT_EQ(sc.size(), 3u);
  EXPECT_EQ(sc[0].task, 1);
  EXPECT_EQ(sc[0].state, "FAILED");
  EXPECT_EQ(sc[0].exit_code, "1:0");
  EXPECT_EQ(sc[0].reason, "NonZeroExitCode");
  EXPECT_EQ(sc[1].state, "COMPLETED");
  EXPECT_EQ(sc[2].task, -1);  // the pending rest of an array
  const auto sa = parse_sacct("41_0|COMPLETED|0:0|None\n41_1|CANCELLED by 0|0:15|None\n41|COMPLETED|0:0|None\n");
  ASSERT_EQ(sa.size(), 2u);
  EXPECT_EQ(sa[1].task, 1);
  EXPECT_EQ(sa[1].state, "CANCELLED by 0");
  EXPECT_TRUE(terminal_state(sa[1].state));
  EXPECT_TRUE(terminal_state("TIMEOUT"));
  EXPECT_FALSE(terminal_state("RUNNING"));
  EXPECT_FALSE(terminal_state("PENDING"));
}

// A fake Slurm: records every command, answers sbatch with job ids, fails the second sbatch.
struct FakeSlurm {
  std::vector<std::vector<std::string>> calls;
  int sbatch_calls = 0;
  bool fail_second = false;
  std::string scontrol;
  CommandResult operator()(const std::vector<std::string>& argv) {
    calls.push_back(argv);
    if (argv[0] == "sinfo") return {0, "debug\n"};
    if (argv[0] == "sbatch") {
      ++sbatch_calls;
      if (fail_second && sbatch_calls == 2) return {1, "sbatch: error: Invalid feature specification\n"};
      return {0, std::to_string(100 + sbatch_calls) + "\n"};
    }
    if (argv[0] == "sacct") return {1, "Slurm accounting storage is disabled\n"};
    if (argv[0] == "scontrol") return {0, scontrol};
    return {0, ""};
  }
};

TEST(Fleet, AFailedSubmissionCancelsWhatWentBefore) {
  if (!on_path("sbatch")) GTEST_SKIP() << "submit_fleet checks for sbatch on PATH first (Debian: slurm-client)";
  const std::string dir = test::fresh_db_path("fleet_submit", "fleet");
  FleetPlan p = plan_in(dir);
  write_fleet(p, false);
  FakeSlurm fake;
  fake.fail_second = true;
  CommandRunner run = [&](const std::vector<std::string>& a) { return fake(a); };
  try {
    submit_fleet(p, run);
    FAIL() << "no error";
  } catch (const FleetError& e) {
    EXPECT_NE(std::string(e.what()).find("sbatch array-1.sbatch failed (sbatch: error: Invalid feature"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("cancelled the arrays submitted before it"), std::string::npos) << e.what();
  }
  ASSERT_FALSE(fake.calls.empty());
  EXPECT_EQ(fake.calls.back(), (std::vector<std::string>{"scancel", "101"}));
  for (const auto& g : p.groups) EXPECT_TRUE(g.job_id.empty());
  for (const auto& g : read_fleet(dir).groups) EXPECT_TRUE(g.job_id.empty());
  // Both accepted: the ids recorded in the manifest.
  FakeSlurm ok;
  CommandRunner run_ok = [&](const std::vector<std::string>& a) { return ok(a); };
  submit_fleet(p, run_ok);
  EXPECT_EQ(read_fleet(dir).groups[1].job_id, "102");
}

TEST(Fleet, ATaskThatDiedIsNamedWithItsReason) {
  const std::string dir = test::fresh_db_path("fleet_tasks", "fleet");
  FleetPlan p = plan_in(dir);
  p.groups.resize(1);  // small and large
  p.groups[0].job_id = "41";
  write_fleet(p, false);
  { Store s(dir + "/stores/small.sqlite"); }
  std::ofstream(dir + "/logs/41_1.err") << "srun: cluster configuration lacks support for cpu binding\n"
                                         << "cibench: /s/it's.toml:3:1: unknown key\n\n"
                                         << "srun: error: vm: task 0: Exited with exit code 1\n";
  FakeSlurm fake;
  fake.scontrol =
      "JobId=41 ArrayJobId=41 ArrayTaskId=0 JobState=COMPLETED Reason=None ExitCode=0:0\n"
      "JobId=42 ArrayJobId=41 ArrayTaskId=1 JobState=FAILED Reason=NonZeroExitCode ExitCode=1:0\n";
  const auto tasks = fleet_tasks(p, [&](const std::vector<std::string>& a) { return fake(a); });
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].host, "small");
  EXPECT_EQ(tasks[0].job_id, "41_0");
  EXPECT_TRUE(tasks[0].store_exists);
  EXPECT_EQ(tasks[0].why, "");
  EXPECT_EQ(tasks[1].host, "large");
  EXPECT_EQ(tasks[1].why,
            "FAILED (exit 1:0, reason NonZeroExitCode), no store written: cibench: /s/it's.toml:3:1: unknown key");
  // sacct was asked first; accounting is disabled here, so scontrol answered.
  EXPECT_EQ(fake.calls[0][0], "sacct");
  EXPECT_EQ(fake.calls[1][0], "scontrol");
  // An array never submitted.
  p.groups[0].job_id.clear();
  EXPECT_THROW(fleet_tasks(p, [&](const std::vector<std::string>& a) { return fake(a); }), FleetError);
}

TEST(Fleet, LocalDisksAreNotNetworkFilesystems) {
  EXPECT_EQ(network_filesystem(fs::temp_directory_path().string()), "");
  EXPECT_EQ(network_filesystem("/nonexistent/deeper/x.sqlite"), "");  // the nearest existing folder: /
}

TEST(Cost, PricedAtTheKneeOrTheMeasuredRate) {
  CostInput in;
  in.price_per_hour = 0.36;  // 0.0001 per second
  in.knee_qps = 4;
  in.achieved_qps = 3.9;
  in.output_tokens = 240;  // 24 per request
  in.queries = 10;
  Cost c = cost_per_answer(in);
  EXPECT_EQ(c.basis, "knee 4 queries/s");
  EXPECT_DOUBLE_EQ(*c.qps, 4);
  EXPECT_NEAR(*c.per_thousand_requests, 0.0001 / 4 * 1000, 1e-15);
  EXPECT_NEAR(*c.tokens_per_s, 96, 1e-12);
  EXPECT_NEAR(*c.per_million_tokens, 0.0001 / 96 * 1e6, 1e-12);
  in.knee_reached = false;
  EXPECT_EQ(cost_per_answer(in).basis, "knee >= 4 queries/s (every rate tried met the SLOs)");
  in.knee_qps.reset();
  c = cost_per_answer(in);
  EXPECT_EQ(c.basis, "measured 3.9 queries/s");
  EXPECT_NEAR(*c.per_thousand_requests, 0.0001 / 3.9 * 1000, 1e-15);
  in.output_tokens.reset();  // a classifier
  c = cost_per_answer(in);
  EXPECT_TRUE(c.per_thousand_requests.has_value());
  EXPECT_FALSE(c.per_million_tokens.has_value());
  EXPECT_NE(c.reason.find("no output tokens"), std::string::npos);
  in.achieved_qps.reset();
  c = cost_per_answer(in);
  EXPECT_FALSE(c.per_thousand_requests.has_value());
  EXPECT_NE(c.reason.find("no rate"), std::string::npos);
}

// Two host types of one stepped scenario: the cheaper per answer is the one whose knee is higher
// per unit of price, failed variants are not priced, and a host type with no variant meeting the
// floor ranks last with the reason.
TEST(Cost, HostTypesRankedByCostAtTheFloor) {
  const std::string path = test::fresh_db_path("cost_rank", "fleet.sqlite");
  Store s(path);
  s.insert("host_types", {{"name", std::string("small")}, {"price_per_hour", 0.36}, {"currency", std::string("USD")},
                          {"updated_utc", std::string("2026-12-07T00:00:00Z")}});
  s.insert("host_types", {{"name", std::string("large")}, {"price_per_hour", 1.08}, {"currency", std::string("USD")},
                          {"updated_utc", std::string("2026-12-07T00:00:00Z")}});
  s.insert("host_types", {{"name", std::string("tiny")}, {"price_per_hour", 0.01}, {"currency", std::string("USD")},
                          {"updated_utc", std::string("2026-12-07T00:00:00Z")}});
  auto run = [&](const std::string& host, const std::string& started) {
    Fields f = test::fixture_run("fleet", "", host, started, "stepped");
    f.push_back({"host_type", host});
    return s.insert("runs", f);
  };
  // small: knee 4 (0.0001/s / 4 qps = 0.025 per 1k); large: knee 8 at 3x the price (0.0375 per 1k).
  auto variant = [&](int64_t r, int index, double rate, double knee, bool slo, const std::string& verdict,
                     const std::string& status = "ok") {
    s.insert("variants", {{"run_id", r}, {"variant_index", int64_t{index}}, {"step_index", int64_t{rate > 2 ? 1 : 0}},
                          {"label", std::string(index ? "int8" : "f32") + " @" + std::to_string(int(rate))},
                          {"status", status}, {"offered_qps", rate}, {"achieved_qps", rate * 0.98},
                          {"knee_qps", knee}, {"knee_reached", int64_t{1}}, {"slo_met", int64_t{slo}},
                          {"output_tokens", int64_t{240}}, {"queries", int64_t{10}}, {"latency_p95_ms", 100.0 * rate},
                          {"valid", int64_t{1}}, {"quality_verdict", verdict}});
  };
  const int64_t rs = run("small", "2026-12-07T01:00:00Z"), rl = run("large", "2026-12-07T02:00:00Z"),
                rt = run("tiny", "2026-12-07T03:00:00Z");
  variant(rs, 0, 2, 4, true, "pass");
  variant(rs, 0, 4, 4, true, "");  // accuracy is scored on the first step only
  variant(rs, 1, 2, 2, true, "fail");  // below the floor: not the small host's answer
  variant(rl, 0, 2, 8, true, "pass");
  variant(rl, 0, 8, 8, true, "pass");
  variant(rl, 1, 2, 8, true, "pass", "failed");  // failed: not priced
  variant(rt, 0, 2, 2, true, "fail");
  const auto costs = host_costs(s, "fleet");
  ASSERT_EQ(costs.size(), 4u);
  EXPECT_EQ(costs[0].host_type, "small");
  EXPECT_EQ(costs[0].label, "f32 @4");  // the knee's step
  EXPECT_NEAR(*costs[0].cost.per_thousand_requests, 0.025, 1e-12);
  EXPECT_NEAR(*costs[0].p95_ms, 400, 1e-9);
  EXPECT_FALSE(costs[1].meets_floor);
  const auto ranks = rank_host_types(costs);
  ASSERT_EQ(ranks.size(), 3u);
  EXPECT_EQ(ranks[0].host_type, "small");
  EXPECT_EQ(ranks[1].host_type, "large");
  EXPECT_NEAR(*ranks[1].best->cost.per_thousand_requests, 0.0003 / 8 * 1000, 1e-12);
  EXPECT_EQ(ranks[2].host_type, "tiny");
  EXPECT_FALSE(ranks[2].best.has_value());
  EXPECT_NE(ranks[2].reason.find("none of its 1 variants"), std::string::npos);
  // Restricted to one run.
  EXPECT_EQ(host_costs(s, "fleet", {rl}).size(), 1u);
  EXPECT_TRUE(host_costs(s, "another scenario").empty());
}

}  // namespace
}  // namespace cibench

namespace cibench::reports {
namespace {

std::string read_all(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The reports side (reports::hosts, the report's "Cost per answer by host type") on the fleet
// fixture (tests/gui/reports_fixture.h make_fleet_fixture): every priced variant at its knee step,
// the host types ranked, the frontier, and both documents' tables.
TEST(ReportsHosts, TheFleetFixtureRankedAndRendered) {
  const std::string path = test::fresh_db_path("reports_hosts", "fleet.sqlite");
  const test::FleetFixture fx = test::make_fleet_fixture(path);
  Db db(path);
  const Hosts h = hosts(db, {fx.run_small});  // one run selected: its scenario on every host type
  ASSERT_EQ(h.scenarios.size(), 1u);
  const HostsScenario& s = h.scenarios[0];
  EXPECT_EQ(s.scenario, "fixture-fleet");
  ASSERT_EQ(s.costs.size(), 4u);
  EXPECT_EQ(s.costs[0].label, "f32 t1 w1 @2 qps");
  EXPECT_NEAR(*s.costs[0].cost.per_thousand_requests, 0.05, 1e-12);
  EXPECT_EQ(s.costs[1].label, "int8 t1 w1 @4 qps");
  EXPECT_NEAR(*s.costs[1].cost.per_thousand_requests, 0.025, 1e-12);
  EXPECT_NEAR(*s.costs[1].cost.per_million_tokens, 0.0001 / (4 * 24) * 1e6, 1e-9);
  EXPECT_EQ(s.costs[2].cost.basis, "knee >= 8 queries/s (every rate tried met the SLOs)");
  EXPECT_FALSE(s.costs[3].meets_floor);  // large int8: top-1 0.90 < 0.95
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.ranks[0].host_type, "small");
  EXPECT_EQ(s.ranks[0].best->label, "int8 t1 w1 @4 qps");
  EXPECT_EQ(s.ranks[1].host_type, "large");
  EXPECT_NEAR(*s.ranks[1].best->cost.per_thousand_requests, 0.0375, 1e-12);
  EXPECT_EQ(s.frontier, (std::vector<size_t>{2, 1}));
  // A run of another scenario has no hosts section.
  const std::string plain = test::fresh_db_path("reports_hosts", "plain.sqlite");
  const auto ids = test::make_reports_fixture(plain);
  Db pdb(plain);
  EXPECT_TRUE(hosts(pdb, {ids.run_formats}).empty());
  // The report: the ranking and every priced variant, in Markdown and HTML.
  const std::string out = test::fresh_db_path("reports_hosts", "report");
  write_report(db, {fx.run_small, fx.run_large}, out);
  const std::string md = read_all(out + "/report.md"), html = read_all(out + "/report.html");
  EXPECT_NE(md.find("## Cost per answer by host type"), std::string::npos);
  EXPECT_NE(md.find("| 1 | small | 0.36 USD | int8 t1 w1 @4 qps | " + std::to_string(fx.run_small) +
                    " | knee 4 queries/s | 250 | 0.025 USD |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 2 | large | 1.08 USD | f32 t1 w1 @8 qps |"), std::string::npos);
  EXPECT_NE(md.find("| large | int8 t1 w1 @8 qps | " + std::to_string(fx.run_large)), std::string::npos);
  EXPECT_NE(html.find("<h2>Cost per answer by host type</h2>"), std::string::npos);
  EXPECT_NE(html.find("Cost per answer against latency p95: fixture-fleet"), std::string::npos);
  write_report(pdb, {ids.run_formats}, out + "-plain");
  EXPECT_EQ(read_all(out + "-plain/report.md").find("Cost per answer"), std::string::npos);
}

}  // namespace
}  // namespace cibench::reports
