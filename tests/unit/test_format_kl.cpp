// End to end on stories260K: every weight format runs, and its KL divergence from the f32 build
// over held-out TinyStories text stays under a bound stated per format (bf16 << int8 < int4).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "engines/core/buffer.h"
#include "engines/core/format.h"
#include "engines/models/llama.h"
#include "engines/models/tokenizer.h"
#include "engines/runtime/session.h"
#include "test_support.h"

namespace cibench {
namespace {

// Mean over positions of KL(p_f32 || p_fmt), in nats.
double mean_kl(const std::vector<float>& ref, const std::vector<float>& got, int n, int vocab) {
  double total = 0;
  for (int t = 0; t < n; ++t) {
    const float* a = ref.data() + static_cast<size_t>(t) * vocab;
    const float* b = got.data() + static_cast<size_t>(t) * vocab;
    double ma = a[0], mb = b[0];
    for (int i = 1; i < vocab; ++i) ma = std::max<double>(ma, a[i]), mb = std::max<double>(mb, b[i]);
    double za = 0, zb = 0;
    for (int i = 0; i < vocab; ++i) za += std::exp(a[i] - ma), zb += std::exp(b[i] - mb);
    double kl = 0;
    for (int i = 0; i < vocab; ++i) {
      const double la = a[i] - ma - std::log(za), lb = b[i] - mb - std::log(zb);
      kl += std::exp(la) * (la - lb);
    }
    total += kl;
  }
  return total / n;
}

// Upper bounds on mean KL (nats/token) per format family, about 2-5x above what this model
// measures (run with --gtest_filter=FormatKl* to print them: bf16 4e-5, int8 5e-4, w8a8 1.6e-3,
// int4 0.09-0.15; bf16 6e-5 where its kernels round the activations to bf16 too). The ordering
// bf16 << int8 < int4 is asserted separately. Sparse formats at
// sparsity 0 keep every weight, so they equal their dense twins -- except int8_24, which is 2:4
// semi-structured by construction (half the weights go), a loss this 260K-parameter model does
// not survive (about 3.6 nats): its bound only says it runs and stays finite.
double kl_bound(const std::string& f) {
  if (f == "f32" || f == "f32_sparse") return 1e-9;
  if (f == "bf16") return 2e-4;
  if (f == "int8_24") return 8.0;
  if (f.rfind("int8", 0) == 0) return 2e-3;
  if (f == "w8a8") return 5e-3;
  if (f == "w8a7") return 8e-3;  // one bit fewer per activation than w8a8 (measures 2.6e-3)
  if (f.rfind("int4", 0) == 0) return 0.3;
  return 1.0;
}

// At each ISA level: the formats' kernels differ per level (VNNI, AVX-512 BF16 dot products), the
// bounds and the ordering must hold at all of them.
class FormatKl : public ::testing::TestWithParam<Isa> {};

TEST_P(FormatKl, EveryFormatRunsWithinItsBoundOnStories260K) {
  CIBENCH_REQUIRE_SHARED("models/stories260K");
  CIBENCH_REQUIRE_SHARED("data/tinystories-validation-1000");
  CIBENCH_REQUIRE_ISA(GetParam());
  test::IsaScope at(GetParam());
  LlamaSource src = open_llama_source(test::shared_path("models/stories260K/stories260K.bin"));
  auto tok = open_tokenizer(test::shared_path("models/stories260K/tok512.bin"), 512);
  std::string text =
      read_file(test::shared_path("data/tinystories-validation-1000/tinystories_val_first1000.txt"));
  // Story 10 onwards: held out from anything used to tune the bounds' headroom.
  size_t start = 0;
  for (int i = 0; i < 10; ++i) start = text.find("<|endoftext|>", start) + 14;
  std::vector<int> ids = tok->encode(text.substr(start, 4000), true, false);
  const int n = std::min<int>(static_cast<int>(ids.size()), 256);
  ASSERT_GE(n, 200);
  const int V = src.config.vocab_size;

  auto logits_for = [&](const std::string& fmt) {
    LlamaBuildOptions bo;
    bo.format = fmt;
    LlamaModel m = build_llama(src, bo);
    LlamaSession s(m, SessionOptions{});
    std::vector<float> out(static_cast<size_t>(n) * V);
    s.forward_all(ids.data(), n, out.data());
    return out;
  };
  const std::vector<float> ref = logits_for("f32");
  std::map<std::string, double> kl;
  for (const FormatRow& f : format_table()) {
    // Static activation scales come from calibration (recipes; tests/unit/test_recipes.cpp).
    if (f.quantize_act_static) continue;
    kl[f.name] = mean_kl(ref, logits_for(f.name), n, V);
    RecordProperty(std::string("kl_") + f.name, std::to_string(kl[f.name]));
    EXPECT_LE(kl[f.name], kl_bound(f.name)) << f.name << " mean KL " << kl[f.name];
  }
  // KL grows with the power of the perturbation. int8's step max|w| / 127 (max ~3.3 sigma) has RMS
  // 0.0075 sigma; bf16's half step of 8 significant bits, 2^-9 to 2^-8 of |w|, about 0.0017 sigma:
  // ~19x less power on the weights, ~10x where the activations are rounded to bf16 as well (the
  // same relative error on the other factor of every product). Half that must show.
  const bool bf16_acts = format_by_name("bf16").act_at(GetParam()) == ActType::bf16;
  EXPECT_LT(kl["bf16"] * (bf16_acts ? 5 : 10), kl["int8"]);
  EXPECT_LT(kl["int8"], kl["int4_g32"]);
  EXPECT_LT(kl["int4_g32"], kl["int4_g128"]);
  // Nothing pruned: the same weights (summed in another order).
  EXPECT_NEAR(kl["int8_sparse"], kl["int8"], 1e-3 * kl["int8"]);
  EXPECT_GT(kl["int8_24"], kl["int4_g128"]);  // pruning half the weights costs more than int4
  EXPECT_GT(kl["bf16"], 0.0);  // the formats really are lossy: the check above can fail
  for (auto& [name, v] : kl)
    std::printf("  %-12s %-16s mean KL %.3g nats/token\n", isa_name(GetParam()), name.c_str(), v);
}

INSTANTIATE_TEST_SUITE_P(AllIsas, FormatKl, ::testing::ValuesIn(all_isas()), test::isa_param_name);

}  // namespace
}  // namespace cibench
