// Results of the measurement commands (bench, recipes, bert-recipes --db) in the store: the run
// row (kind, command line, provenance, floors), one row per result, complete/failed endings, and
// the reports reading them back; the recipe variant grammar both recipes commands share.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "engines/core/error.h"
#include "engines/quant/recipe.h"
#include "harness/lib/recipe_results.h"
#include "harness/lib/run_record.h"
#include "reports/analysis/compare.h"
#include "reports/analysis/counters.h"
#include "reports/analysis/labels.h"
#include "reports/analysis/latency.h"
#include "reports/analysis/serving.h"
#include "reports/analysis/speculative.h"
#include "reports/analysis/tradeoff.h"
#include "reports/db.h"
#include "reports/format.h"
#include "tests/gui/reports_fixture.h"

namespace cibench {
namespace {

namespace fs = std::filesystem;

std::string temp_db(const std::string& name) { return test::fresh_db_path("command_run", name); }

TEST(CommandRun, StoresKindCommandProvenanceAndOneRowPerResult) {
  const std::string path = temp_db("bench.sqlite");
  int64_t run = 0;
  {
    CommandRun r(path, "bench", {"cibench", "bench", "--models", "synthetic:a b", "-T", "1"}, "synthetic:a b",
                 {{"model_hash", std::string("h")}});
    run = r.run_id();
    r.add("f32 t1", {{"format", std::string("f32")}, {"threads", int64_t{1}}, {"decode_tokens_per_s", 10.0},
                     {"prefill_tokens_per_s", 100.0}});
    r.add("int8 t1", {{"format", std::string("int8")}, {"threads", int64_t{1}}, {"decode_tokens_per_s", 30.0},
                      {"prefill_tokens_per_s", 90.0}});
    EXPECT_EQ(r.finish(), str("stored as run ", run, " in ", path));
  }
  Store st(path);
  const auto q = st.query("SELECT kind, command, status, scenario_name, scenario_toml, cpu_model, pid, slos_json, "
                          "floors_json, finished_utc FROM runs WHERE run_id = ?",
                          {run});
  ASSERT_EQ(q.rows.size(), 1u);
  const auto& row = q.rows[0];
  EXPECT_EQ(sql_to_string(row[0]), "bench");
  EXPECT_EQ(sql_to_string(row[1]), "cibench bench --models 'synthetic:a b' -T 1");
  EXPECT_EQ(sql_to_string(row[2]), "complete");
  EXPECT_EQ(sql_to_string(row[3]), "bench");
  EXPECT_EQ(sql_to_string(row[4]), "");
  EXPECT_FALSE(sql_to_string(row[5]).empty());
  EXPECT_EQ(std::get<int64_t>(row[6]), getpid());
  EXPECT_EQ(sql_to_string(row[7]), "[]");
  EXPECT_EQ(sql_to_string(row[8]), "[]");
  EXPECT_FALSE(sql_to_string(row[9]).empty());
  const auto v = st.query("SELECT variant_index, label, status, decode_tokens_per_s FROM variants WHERE run_id = ? "
                          "ORDER BY variant_index", {run});
  ASSERT_EQ(v.rows.size(), 2u);
  EXPECT_EQ(std::get<int64_t>(v.rows[1][0]), 1);
  EXPECT_EQ(sql_to_string(v.rows[1][1]), "int8 t1");
  EXPECT_EQ(sql_to_string(v.rows[1][2]), "ok");
  EXPECT_EQ(std::get<double>(v.rows[1][3]), 30.0);

  // The readers: the run's kind and command, and the bench rate as the default x axis.
  reports::Db db(path);
  const reports::RunInfo info = db.run(run);
  EXPECT_EQ(info.kind, "bench");
  EXPECT_EQ(info.model_spec, "synthetic:a b");
  EXPECT_EQ(info.origin(), "cibench bench --models 'synthetic:a b' -T 1");
  EXPECT_EQ(info.variants, 2);
  EXPECT_EQ(reports::default_axes(db, {run}).first, "decode_tokens_per_s");
  const reports::Tradeoff t = reports::tradeoff(db, {run}, "decode_tokens_per_s", "top1_agreement");
  EXPECT_TRUE(t.points.empty());
  EXPECT_EQ(t.unplotted.size(), 2u);  // no accuracy measured: listed, not plotted at 0
  // Scaling plots the decode rate when no point has queries/s.
  const auto sc = reports::scaling(db, {run});
  EXPECT_TRUE(reports::scaling_plots_decode(sc));
  ASSERT_EQ(sc.size(), 2u);
  ASSERT_EQ(sc[1].points.size(), 1u);
  EXPECT_EQ(sc[1].points[0].throughput(true), 30.0);
  EXPECT_FALSE(sc[1].points[0].throughput(false));
}

TEST(CommandRun, AnUnfinishedCommandIsStoredFailedWithWhatItMeasured) {
  const std::string path = temp_db("failed.sqlite");
  int64_t stopped = 0, failed = 0;
  {
    CommandRun r(path, "recipes", {"cibench", "recipes"}, "m", {});
    stopped = r.run_id();
    r.add("rtn int8", {{"format", std::string("int8")}, {"kl_mean", 0.001}});
  }  // an exception unwound it
  {
    CommandRun r(path, "recipes", {"cibench", "recipes"}, "m", {});
    failed = r.run_id();
    r.fail("gptq: the Hessian is not positive definite");
  }
  Store st(path);
  auto status = [&](int64_t id) {
    const auto q = st.query("SELECT status, error FROM runs WHERE run_id = ?", {id});
    return sql_to_string(q.rows.at(0)[0]) + ": " + sql_to_string(q.rows.at(0)[1]);
  };
  EXPECT_EQ(status(stopped), "failed: the command stopped before it finished");
  EXPECT_EQ(status(failed), "failed: gptq: the Hessian is not positive definite");
  const auto kept = st.query("SELECT kl_mean FROM variants WHERE run_id = ?", {stopped});
  ASSERT_EQ(kept.rows.size(), 1u);
  EXPECT_EQ(std::get<double>(kept.rows[0][0]), 0.001);
}

TEST(CommandRun, AStoredFloorIsTheDashboardsDefaultAxisAndFloor) {
  const std::string path = temp_db("bert.sqlite");
  int64_t run = 0;
  {
    CommandRun r(path, "bert-recipes", {"cibench", "bert-recipes", "--max-drop", "1"}, "m", {},
                 {QualityFloor::make("max_accuracy_drop", 0.01)});
    run = r.run_id();
    const double delta[] = {0.0, -0.005, -0.02};
    for (int i = 0; i < 3; ++i)
      r.add(str("v", i), {{"format", std::string(i ? "int8" : "f32")}, {"sparsity", 0.1 * i}, {"threads", int64_t{1}},
                          {"latency_p50_ms", 1.0 - 0.2 * i}, {"task_accuracy", 0.8 + delta[i]},
                          {"top1_agreement", 1.0 - 0.01 * i}, {"accuracy_delta", delta[i]}});
    r.finish();
  }
  reports::Db db(path);
  const auto axes = reports::default_axes(db, {run});
  EXPECT_EQ(axes.first, "latency_p50_ms");  // p95 not measured by the command
  EXPECT_EQ(axes.second, "accuracy_delta");  // the floor's column, not the first accuracy axis
  const reports::Tradeoff t = reports::tradeoff(db, {run}, axes.first, axes.second);
  ASSERT_TRUE(t.floor);
  EXPECT_DOUBLE_EQ(*t.floor, -0.01);
  ASSERT_EQ(t.points.size(), 3u);
  int meets = 0;
  for (const auto& p : t.points) meets += p.meets_floor;
  EXPECT_EQ(meets, 2);  // -0.02 is below a drop of 0.01
}

TEST(CommandRun, AnUnknownKindIsRefusedByTheSchema) {
  const std::string path = temp_db("kind.sqlite");
  EXPECT_THROW(CommandRun(path, "nonsense", {"cibench"}, "m", {}), StoreError);
  Store st(path);
  EXPECT_TRUE(st.query("SELECT * FROM runs").rows.empty());
}

TEST(CommandRun, CommandLinesAreQuotedForTheShell) {
  EXPECT_EQ(shell_command_line({"cibench", "bench", "-f", "f32", "int8"}), "cibench bench -f f32 int8");
  EXPECT_EQ(shell_command_line({"--eval", "data/SST-2 val.tsv:perm=1:0-8"}), "--eval 'data/SST-2 val.tsv:perm=1:0-8'");
  EXPECT_EQ(shell_command_line({"it's"}), "'it'\\''s'");
  EXPECT_EQ(shell_command_line({""}), "''");
}

TEST(RecipeVariant, OneGrammarForBothRecipesCommands) {
  const RecipeSpec g = RecipeSpec::parse_variant("gptq:int4_g32:damp=0.02", 0.5);
  EXPECT_EQ(g.recipe, "gptq");
  EXPECT_EQ(g.format, "int4_g32");
  EXPECT_EQ(g.sparsity, 0.5);
  EXPECT_EQ(g.param("damp"), 0.02);
  EXPECT_EQ(g.all_params().size(), recipe_by_name("gptq").params.size());
  EXPECT_NE(g.params_text().find("damp=0.02"), std::string::npos) << g.params_text();
  EXPECT_EQ(recipe_label(g), "gptq int4_g32 sp0.5");

  const RecipeSpec p = RecipeSpec::parse_variant("prune:f32_sparse", 0.8);
  EXPECT_TRUE(p.prune_only());
  EXPECT_EQ(recipe_label(p), "prune f32_sparse sp0.8");
  const Fields f = recipe_fields(p);  // stored like a scenario's sparsity without a recipe
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(std::get<std::string>(f[0].second), "f32_sparse");
  EXPECT_EQ(std::get<double>(f[1].second), 0.8);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(f[2].second));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(f[3].second));
  const Fields q = recipe_fields(RecipeSpec::parse_variant("smoothquant:w8a8:alpha=0.8"));
  EXPECT_EQ(std::get<std::string>(q[2].second), "smoothquant");
  EXPECT_EQ(std::get<std::string>(q[3].second), "{\"alpha\":0.8}");

  auto error_of = [](const std::string& v) {
    try {
      RecipeSpec::parse_variant(v);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("prune:int8").find("prune applies to f32 or f32_sparse"), std::string::npos);
  EXPECT_NE(error_of("gptq").find("variant 'gptq': expected RECIPE:FORMAT"), std::string::npos);
  EXPECT_NE(error_of("optq:int8").find("variant 'optq:int8'"), std::string::npos);
  EXPECT_NE(error_of("gptq:int8:dampp=1").find("dampp"), std::string::npos);
  EXPECT_NE(error_of("rtn:f16").find("f16"), std::string::npos);

  EXPECT_EQ(parse_variant_list("rtn:int8,,awq:int4_g32", 0).size(), 2u);
  EXPECT_EQ(parse_number_list("0.5,0.9", "--sparsities"), (std::vector<double>{0.5, 0.9}));
  EXPECT_THROW(parse_number_list("0.5,x", "--sparsities"), Error);
  EXPECT_THROW(parse_number_list("0.5x", "--sparsities"), Error);
}

TEST(RecipeVariant, MeanCalibrationErrorSkipsMatricesWithoutData) {
  std::vector<RecipeMatrixReport> m(3);
  m[0].rel_err = 0.1;
  m[0].rtn_rel_err = 0.3;
  m[1].rel_err = 0.2;
  m[1].rtn_rel_err = 0.5;  // m[2]: no calibration data (-1)
  EXPECT_DOUBLE_EQ(*mean_rel_err(m), 0.15);
  EXPECT_DOUBLE_EQ(*mean_rel_err(m, true), 0.4);
  EXPECT_FALSE(mean_rel_err({RecipeMatrixReport{}}));
}

}  // namespace
}  // namespace cibench
