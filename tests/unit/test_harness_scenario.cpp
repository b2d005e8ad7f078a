// Scenario files: errors name file:line:column and the key; unknown keys are errors; the
// variant matrix expands to a cross product; --set overrides apply before validation.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "harness/lib/scenario.h"
#include "harness/lib/suite.h"
#include "tests/unit/test_support.h"

namespace cibench {
namespace {

const char* kGood = R"(# a scenario
[scenario]
name = "t"

[model]
source = "sut:sleep?ms=1"

[matrix]
format = ["f32"]
threads = [1, 2]
workers = [1, 2, 3]

[workload]
prompt_tokens = { dist = "uniform", min = 4, max = 8 }
gen_tokens = 3

[load]
pattern = "server"
target_qps = 50.5

[slo]
p95_ms = 100
ttft_p99_ms = 500

[seeds]
arrivals = 9
)";

std::string error_of(const std::string& text, const std::vector<std::string>& ov = {}) {
  try {
    parse_scenario_text(text, "case.toml", ov);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(HarnessScenario, ParsesAndExpandsTheMatrix) {
  const Scenario s = parse_scenario_text(kGood, "case.toml");
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.pattern, Pattern::server);
  EXPECT_DOUBLE_EQ(s.target_qps, 50.5);
  EXPECT_EQ(s.variants().size(), 6u);
  EXPECT_EQ(s.prompt_tokens.dist, "uniform");
  EXPECT_EQ(s.gen_tokens.value, 3);
  EXPECT_EQ(s.seed_arrivals, 9u);
  ASSERT_EQ(s.slos.size(), 2u);
  EXPECT_EQ(s.slos[0].metric, "latency");
  EXPECT_DOUBLE_EQ(s.slos[0].percentile, 95);
  EXPECT_EQ(s.slos[1].metric, "ttft");
  EXPECT_DOUBLE_EQ(s.slos[1].limit_ms, 500);
  // Comments and layout do not change the hash; values do.
  EXPECT_EQ(parse_scenario_text(std::string("# other comment\n") + kGood, "x.toml").hash, s.hash);
  EXPECT_NE(parse_scenario_text(kGood, "x.toml", {"load.target_qps=4"}).hash, s.hash);
}

TEST(HarnessScenario, OverridesApplyBeforeValidation) {
  const Scenario s = parse_scenario_text(kGood, "case.toml",
                                         {"load.target_qps=8", "matrix.threads=[4]", "model.source=sut:null"});
  EXPECT_DOUBLE_EQ(s.target_qps, 8);
  EXPECT_EQ(s.threads, std::vector<int>{4});
  EXPECT_EQ(s.model, "sut:null");
  // A bad value from --set is placed in the --set text ("load.target_qps = fast", column 19), not
  // in the scenario file, whose lines it never was on.
  EXPECT_EQ(error_of(kGood, {"load.target_qps=fast"}).rfind("--set:1:19: key 'load.target_qps': expected a number", 0),
            0u)
      << error_of(kGood, {"load.target_qps=fast"});
  EXPECT_EQ(error_of(kGood, {"matrix.threads=[1,\"x\"]"}).rfind("--set:1:18: key 'matrix.threads': expected an integer", 0),
            0u)
      << error_of(kGood, {"matrix.threads=[1,\"x\"]"});
  EXPECT_NE(error_of(kGood, {"load.bogus=1"}).find("key 'load.bogus': unknown key"), std::string::npos);
}

TEST(HarnessScenario, KvModeHalfCacheExpandsAndUnknownModesListTheKnown) {
  std::string t = kGood;
  t.replace(t.find("workers = [1, 2, 3]"), 19,
            "workers = [1]\nkv_mode = [\"preallocated\", \"preallocated-f16\"]");
  const Scenario s = parse_scenario_text(t, "case.toml");
  const auto vs = s.variants();
  ASSERT_EQ(vs.size(), 4u);  // 2 thread counts x 2 KV modes
  int f16 = 0;
  for (const auto& v : vs) {
    if (v.kv_mode == KvMode::preallocated_f16) {
      ++f16;
      EXPECT_NE(v.label().find("kv=preallocated-f16"), std::string::npos) << v.label();
    } else {
      EXPECT_EQ(v.kv_mode, KvMode::preallocated);
    }
  }
  EXPECT_EQ(f16, 2);
  EXPECT_NO_THROW(prevalidate_scenario(s));

  std::string u = t;
  u.replace(u.find("\"preallocated-f16\""), 18, "\"half\"");  // line 12, column 30
  // Refused by the parser itself (the mode is parsed once, at the scenario boundary).
  try {
    parse_scenario_text(u, "case.toml");
    FAIL() << "no error for kv_mode 'half'";
  } catch (const ScenarioError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("case.toml:12:", 0), 0u) << m;
    EXPECT_NE(m.find("unknown KV cache mode 'half' (known: preallocated, none, preallocated-f16)"),
              std::string::npos)
        << m;
  }
}

// Rates given to a pattern that does not sweep them are refused naming the key (they would be
// ignored, and a huge one was blamed on target_qps).
TEST(HarnessScenario, RatesOutsideASteppedPatternAreRefused) {
  const std::string e = error_of(kGood, {"load.rates_qps=[1, 2]"});
  EXPECT_NE(e.find("key 'load.rates_qps': only pattern = \"stepped\" sweeps rates; the pattern is \"server\""),
            std::string::npos) << e;
  EXPECT_NO_THROW(parse_scenario_text(kGood, "case.toml", {"load.pattern=\"stepped\"", "load.rates_qps=[1, 2]"}));
}

// A largest accuracy drop below zero is not a floor (every variant would fail it): refused.
TEST(HarnessScenario, NegativeAccuracyDropIsRefused) {
  const std::string e = error_of(kGood, {"accuracy.max_accuracy_drop=-1"});
  EXPECT_NE(e.find("key 'accuracy.max_accuracy_drop'"), std::string::npos) << e;
  EXPECT_NE(e.find("-1"), std::string::npos) << e;
}

TEST(HarnessScenario, UnknownKeyNamesFileLineColumn) {
  std::string t = kGood;
  t.replace(t.find("target_qps = 50.5"), 17, "target_qsp = 50.5");  // line 19
  EXPECT_EQ(error_of(t).rfind("case.toml:19:1: key 'load.target_qsp': unknown key", 0), 0u) << error_of(t);
  EXPECT_EQ(error_of(std::string(kGood) + "[extra]\n").rfind("case.toml:", 0), 0u);
  EXPECT_NE(error_of(std::string(kGood) + "[extra]\n").find("key 'extra': unknown key"), std::string::npos);
}

TEST(HarnessScenario, WrongTypeNamesFileLineColumn) {
  std::string t = kGood;
  t.replace(t.find("threads = [1, 2]"), 16, "threads = [1, \"two\"]");  // line 10, column 15
  EXPECT_EQ(error_of(t), "case.toml:10:15: key 'matrix.threads': expected an integer, got string");
  std::string u = kGood;
  u.replace(u.find("target_qps = 50.5"), 17, "target_qps = \"x\"");
  EXPECT_EQ(error_of(u).rfind("case.toml:19:14: key 'load.target_qps': expected a number", 0), 0u) << error_of(u);
  std::string f = kGood;
  f.replace(f.find("format = [\"f32\"]"), 16, "format = [\"f33\"]");
  EXPECT_EQ(error_of(f).rfind("case.toml:9:11: key 'matrix.format': ", 0), 0u) << error_of(f);
}

TEST(HarnessScenario, MissingModelNamesFileLine) {
  std::string t = kGood;
  t.replace(t.find("source = \"sut:sleep?ms=1\""), 25, "source = \"/nonexistent/model.bin\"");
  EXPECT_EQ(error_of(t).rfind("case.toml:6:10: key 'model.source': model '/nonexistent/model.bin' not found", 0), 0u)
      << error_of(t);
  std::string u = kGood;
  u.replace(u.find("source = \"sut:sleep?ms=1\""), 25, "");
  EXPECT_EQ(error_of(u).rfind("case.toml:5:1: key 'model.source': required", 0), 0u) << error_of(u);
  // TOML syntax errors carry the position too.
  EXPECT_EQ(error_of("[model\nsource = 1").rfind("case.toml:1:", 0), 0u) << error_of("[model\nsource = 1");
}

TEST(HarnessScenario, ShippedScenariosParse) {
  const std::filesystem::path dir = std::filesystem::path(CIBENCH_SOURCE_DIR) / "scenarios";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".toml") continue;
    SCOPED_TRACE(e.path().string());
    const Scenario s = parse_scenario_file(e.path().string());
    EXPECT_FALSE(s.question.empty());
    EXPECT_FALSE(s.variants().empty());
    ++n;
  }
  EXPECT_GE(n, 4);
}

}  // namespace
}  // namespace cibench

namespace cibench {
namespace {

// Every scenario shipped in scenarios/ parses (model, eval sets and tokenizers resolved against
// the shared folder) and expands to at least one runnable variant with a question to answer.
TEST(HarnessScenario, EveryShippedScenarioParsesAndExpands) {
  CIBENCH_REQUIRE_SHARED("models/bert-mini-sst2");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(CIBENCH_SOURCE_DIR) + "/scenarios")) {
    if (e.path().extension() != ".toml") continue;
    SCOPED_TRACE(e.path().string());
    ++files;
    const Scenario s = parse_scenario_file(e.path().string());
    EXPECT_FALSE(s.name.empty());
    EXPECT_FALSE(s.question.empty());
    EXPECT_GE(s.variants().size(), 1u);
  }
  EXPECT_GE(files, 8);
}

}  // namespace
}  // namespace cibench

namespace cibench {
namespace {

// Texts the TOML parser would recurse on without bound (a header 40,000 parts deep overflowed the
// stack), and files that would block or are not scenarios: refused with the place, before parsing.
TEST(HarnessScenarioLimits, DeepKeysNestingAndOddFilesAreRefusedBeforeParsing) {
  std::string deep_header = "[";
  for (int i = 0; i < 40000; ++i) deep_header += i ? ".t" : "t";
  deep_header += "]\nx = 1\n";
  EXPECT_EQ(error_of(deep_header),
            "case.toml:1:33: a key or table header of more than 16 dotted parts (scenario keys have two)");
  std::string deep_key = std::string(kGood) + "\n";
  for (int i = 0; i < 40000; ++i) deep_key += "a.";
  deep_key += "b = 1\n";
  EXPECT_NE(error_of(deep_key).find("more than 16 dotted parts"), std::string::npos) << error_of(deep_key);
  // Dotted keys inside inline tables recurse in toml++ as well (500,000 parts crashed it).
  std::string inline_key = "x = { y = 1, ";
  for (int i = 0; i < 40000; ++i) inline_key += "a.";
  inline_key += "b = 1 }\n";
  EXPECT_EQ(error_of(inline_key), "case.toml:1:45: a key or table header of more than 16 dotted parts (scenario keys have two)");
  std::string set_key;
  for (int i = 0; i < 40000; ++i) set_key += "a.";
  EXPECT_NE(error_of(kGood, {set_key + "b=1"}).find("--set 'a.a.a."), std::string::npos);
  const std::string nested = std::string(kGood) + "\n[workload2]\nx = " + std::string(5000, '[') + std::string(5000, ']') + "\n";
  EXPECT_NE(error_of(nested).find(":29:37: arrays or inline tables nested more than 32 deep"), std::string::npos)
      << error_of(nested);
  // Dots, brackets and '#' inside strings and comments are not structure: a normal scenario with
  // such text still parses (and reaches the key check, not the limit).
  std::string texts = std::string(kGood);
  texts.replace(texts.find("name = \"t\""), 10,
                "name = \"t\"\nquestion = \"a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ # x\"\n"
                "description = '''\n[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[.....................'''");
  EXPECT_EQ(error_of(texts), "(no error)");
  EXPECT_EQ(error_of(std::string(kGood) + "# a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n"),
            "(no error)");
  // 16 parts are fine for the limit (the key itself is then unknown: a different error).
  std::string sixteen = "[a";
  for (int i = 1; i < 16; ++i) sixteen += ".a";
  EXPECT_EQ(error_of(sixteen + "]\n").find("more than 16"), std::string::npos);
  EXPECT_NE(error_of(std::string(kMaxScenarioBytes + 1, '#')).find("bytes; a scenario is at most"), std::string::npos);

  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("cibench_scenario_limits_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string fifo = (dir / "fifo.toml").string();
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto file_error = [](const std::string& p) {
    try {
      parse_scenario_file(p);
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(file_error(fifo), fifo + ": not a regular file (a FIFO, socket or device); a scenario is a .toml file");
  EXPECT_EQ(file_error(dir.string()), dir.string() + ": not a regular file (a folder); a scenario is a .toml file");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cibench
