// BERT-family encoders: the SST-2 classifiers in FP32 against their stored PyTorch logits and
// accuracy, padding vs dynamic shapes, the fast session vs the readable reference, threads,
// DistilBERT loading, synthetic presets, every weight format, and bad files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engines/core/buffer.h"
#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/core/format.h"
#include "engines/core/matrix.h"
#include "engines/models/bert.h"
#include "tests/unit/test_support.h"

namespace cibench {
namespace {

namespace fs = std::filesystem;

// ---- Reference data beside each model -----------------------------------------------------------

struct Sst2Ref {
  std::vector<std::vector<int>> ids;  // [CLS] ... [SEP] per sentence
  std::vector<float> logits;          // (n, 2)
  std::vector<int> labels;
  double accuracy = 0;
  int n_correct = 0;
};

Sst2Ref load_ref(const std::string& model_dir) {
  Sst2Ref r;
  std::istringstream ids(read_file(model_dir + "/ref/val_token_ids.jsonl"));
  for (std::string line; std::getline(ids, line);)
    if (!line.empty()) r.ids.push_back(nlohmann::json::parse(line).at("ids").get<std::vector<int>>());
  const std::string raw = read_file(model_dir + "/ref/val_logits.f32");
  r.logits.resize(raw.size() / sizeof(float));
  std::memcpy(r.logits.data(), raw.data(), r.logits.size() * sizeof(float));
  std::istringstream labels(read_file(model_dir + "/ref/val_labels.txt"));
  for (int v; labels >> v;) r.labels.push_back(v);
  const auto summary = nlohmann::json::parse(read_file(model_dir + "/ref/summary.json"));
  r.accuracy = summary.at("accuracy").get<double>();
  r.n_correct = summary.at("n_correct").get<int>();
  return r;
}

int argmax(const float* v, int n) { return static_cast<int>(std::max_element(v, v + n) - v); }

class Sst2Models : public ::testing::TestWithParam<const char*> {
 protected:
  std::string dir() const { return test::shared_path(std::string("models/") + GetParam()); }
};

// Every validation sentence alone (dynamic shape): logits within 1e-4 of PyTorch's, and the
// accuracy exactly the reference accuracy.
TEST_P(Sst2Models, Fp32LogitsAndAccuracyMatchReference) {
  CIBENCH_REQUIRE_SHARED(std::string("models/") + GetParam() + "/ref/summary.json");
  const Sst2Ref ref = load_ref(dir());
  ASSERT_EQ(ref.ids.size(), 872u);
  ASSERT_EQ(ref.logits.size(), ref.ids.size() * 2);
  ASSERT_EQ(ref.labels.size(), ref.ids.size());
  const BertModel model = build_bert(open_bert_source(dir()));
  ASSERT_EQ(model.config.num_labels, 2);
  BertSession session(model, {});
  double max_err = 0;
  int correct = 0;
  for (size_t i = 0; i < ref.ids.size(); ++i) {
    const float* lg = session.classify(ref.ids[i].data(), static_cast<int>(ref.ids[i].size()));
    for (int j = 0; j < 2; ++j)
      max_err = std::max(max_err, static_cast<double>(std::fabs(lg[j] - ref.logits[i * 2 + j])));
    correct += argmax(lg, 2) == ref.labels[i];
  }
  EXPECT_LE(max_err, 1e-4) << GetParam() << ": max abs logit error vs PyTorch " << max_err;
  std::printf("[ %s ] max abs logit error vs PyTorch over 872 sentences: %.3g\n", GetParam(),
              max_err);
  EXPECT_EQ(correct, ref.n_correct) << GetParam();
  EXPECT_EQ(static_cast<double>(correct) / static_cast<double>(ref.ids.size()), ref.accuracy)
      << GetParam();
}

// Batches of 8 padded to their longest sentence and to 128, with attention masks, give the
// logits of the sentences run alone.
TEST_P(Sst2Models, PaddedBatchesMatchDynamicShapes) {
  CIBENCH_REQUIRE_SHARED(std::string("models/") + GetParam() + "/ref/summary.json");
  const Sst2Ref ref = load_ref(dir());
  const BertModel model = build_bert(open_bert_source(dir()));
  BertSessionOptions one;
  BertSessionOptions batched;
  batched.max_batch = 8;
  BertSession alone(model, one), batch(model, batched);
  const int pad = model.config.pad_token_id;
  // The first 128 sentences padded to their batch's longest, the first 32 to 128 (a subset
  // keeps the suite fast; every sentence is checked unpadded above).
  for (const bool to_max : {false, true}) {
    const size_t n = to_max ? 32 : 128;
    double max_diff = 0;
    std::vector<int> ids;
    std::vector<uint8_t> mask;
    std::vector<float> logits(8 * 2);
    for (size_t b0 = 0; b0 < n; b0 += 8) {
      const size_t bn = std::min<size_t>(8, n - b0);
      size_t len = 0;
      for (size_t i = 0; i < bn; ++i) len = std::max(len, ref.ids[b0 + i].size());
      if (to_max) len = 128;
      ids.assign(bn * len, pad);
      mask.assign(bn * len, 0);
      for (size_t i = 0; i < bn; ++i) {
        std::copy(ref.ids[b0 + i].begin(), ref.ids[b0 + i].end(), ids.begin() + i * len);
        std::fill_n(mask.begin() + i * len, ref.ids[b0 + i].size(), 1);
      }
      batch.classify_batch(ids.data(), mask.data(), static_cast<int>(bn), static_cast<int>(len),
                           logits.data());
      for (size_t i = 0; i < bn; ++i) {
        const auto& s = ref.ids[b0 + i];
        const float* lg = alone.classify(s.data(), static_cast<int>(s.size()));
        for (int j = 0; j < 2; ++j)
          max_diff = std::max(max_diff, static_cast<double>(std::fabs(lg[j] - logits[i * 2 + j])));
      }
    }
    EXPECT_LE(max_diff, 1e-4) << GetParam() << (to_max ? " padded to 128" : " padded to longest")
                              << ": max abs difference " << max_diff;
  }
}

// The session (packed matrices, kernels, threads, [CLS]-only last layer) equals the readable
// reference forward pass, which itself matches PyTorch.
TEST_P(Sst2Models, SessionMatchesReferenceForward) {
  CIBENCH_REQUIRE_SHARED(std::string("models/") + GetParam() + "/ref/summary.json");
  const Sst2Ref ref = load_ref(dir());
  const BertSource src = open_bert_source(dir());
  const BertModel model = build_bert(src);
  const BertReference oracle(src);
  BertSessionOptions two;
  two.threads = 2;
  BertSession s1(model, {}), s2(model, two);
  double vs_ref = 0, vs_torch = 0, threads = 0;
  for (size_t i = 0; i < 16; ++i) {
    const auto& ids = ref.ids[i];
    const std::vector<float> want = oracle.forward(ids);
    const float* a = s1.classify(ids.data(), static_cast<int>(ids.size()));
    const float b[2] = {a[0], a[1]};
    const float* c = s2.classify(ids.data(), static_cast<int>(ids.size()));
    for (int j = 0; j < 2; ++j) {
      vs_ref = std::max(vs_ref, static_cast<double>(std::fabs(b[j] - want[j])));
      vs_torch = std::max(vs_torch, static_cast<double>(std::fabs(want[j] - ref.logits[i * 2 + j])));
      threads = std::max(threads, static_cast<double>(std::fabs(b[j] - c[j])));
    }
  }
  EXPECT_LE(vs_ref, 1e-4) << "session vs reference " << vs_ref;
  EXPECT_LE(vs_torch, 1e-4) << "reference vs PyTorch " << vs_torch;
  EXPECT_LE(threads, 1e-5) << "1 vs 2 threads " << threads;
}

INSTANTIATE_TEST_SUITE_P(Bert, Sst2Models, ::testing::Values("bert-tiny-sst2", "bert-mini-sst2"),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// ---- Synthetic presets -------------------------------------------------------------------------

std::vector<int> random_ids(uint64_t seed, int n, int vocab) {
  std::vector<int> ids(n);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int& id : ids) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    id = 1000 + static_cast<int>(s % static_cast<uint64_t>(vocab - 1000));
  }
  ids.front() = 101;
  ids.back() = 102;
  return ids;
}

TEST(Bert, SyntheticPresetsAreDeterministicPerSeed) {
  const BertSource a = open_bert_source("synthetic:bert-tiny@7");
  const BertSource b = open_bert_source("synthetic:bert-tiny@7");
  const BertSource c = open_bert_source("synthetic:bert-tiny@8");
  for (const char* name : {"embeddings.word", "layers.1.ffn_in.weight", "head.classifier.bias"}) {
    EXPECT_EQ(a.tensor(name).read_all(), b.tensor(name).read_all()) << name;
    EXPECT_NE(a.tensor(name).read_all(), c.tensor(name).read_all()) << name;
  }
  // Any row block reads the same values as the whole tensor.
  const TensorSource& w = a.tensor("layers.0.query.weight");
  const std::vector<float> all = w.read_all();
  std::vector<float> part(5 * w.cols);
  w.read(17, 5, part.data());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin() + 17 * w.cols));

  const BertSource d = open_bert_source("synthetic:distilbert-base");
  EXPECT_EQ(d.config.arch, BertArch::distilbert);
  EXPECT_EQ(d.config.hidden, 768);
  EXPECT_EQ(d.config.n_layers, 6);
  EXPECT_EQ(d.config.n_heads, 12);
  EXPECT_EQ(d.config.intermediate, 3072);
  EXPECT_EQ(d.config.vocab_size, 30522);
  EXPECT_EQ(d.config.max_positions, 512);
  EXPECT_EQ(d.config.num_labels, 2);
  EXPECT_EQ(d.config.parameter_count(), 66955010);  // DistilBertForSequenceClassification
  const BertSource e = open_bert_source("synthetic:bert-base");
  EXPECT_EQ(e.config.n_layers, 12);
  EXPECT_EQ(e.config.parameter_count(), 109483778);  // BertForSequenceClassification
  EXPECT_THROW(open_bert_source("synthetic:bert-huge"), Error);
  EXPECT_THROW(open_bert_source("synthetic:bert-tiny@x"), Error);
  EXPECT_TRUE(is_bert_spec("synthetic:distilbert-base@3"));
  EXPECT_FALSE(is_bert_spec("synthetic:stories260k"));
}

// Session vs reference on both architectures, dynamic and padded (mask in both), 1 and 2 threads.
TEST(Bert, SyntheticSessionMatchesReferenceBothArchitectures) {
  for (const char* spec : {"synthetic:bert-tiny@3", "synthetic:distilbert-mini@3"}) {
    const BertSource src = open_bert_source(spec);
    const BertModel model = build_bert(src);
    const BertReference oracle(src);
    const int lens[3] = {5, 33, 64};
    const int L = 64;
    std::vector<int> ids(3 * L, 0);
    std::vector<uint8_t> mask(3 * L, 0);
    std::vector<std::vector<float>> want;
    double ref_padded_diff = 0;
    for (int b = 0; b < 3; ++b) {
      const std::vector<int> seq = random_ids(b + 1, lens[b], src.config.vocab_size);
      std::copy(seq.begin(), seq.end(), ids.begin() + b * L);
      std::fill_n(mask.begin() + b * L, lens[b], 1);
      want.push_back(oracle.forward(seq));
      // The reference with the padding and mask in the sequence agrees with itself unpadded.
      const std::vector<int> pseq(ids.begin() + b * L, ids.begin() + (b + 1) * L);
      const std::vector<uint8_t> pmask(mask.begin() + b * L, mask.begin() + (b + 1) * L);
      const std::vector<float> ref_padded = oracle.forward(pseq, pmask);
      for (int j = 0; j < 2; ++j)
        ref_padded_diff =
            std::max(ref_padded_diff, static_cast<double>(std::fabs(ref_padded[j] - want[b][j])));
    }
    EXPECT_LE(ref_padded_diff, 2e-5) << spec << ": reference padded vs alone";
    for (int threads : {1, 2}) {
      BertSessionOptions o;
      o.threads = threads;
      o.max_batch = 3;
      o.max_length = 64;
      BertSession s(model, o);
      double dyn = 0, padded = 0;
      for (int b = 0; b < 3; ++b) {
        const float* lg = s.classify(ids.data() + b * L, lens[b]);
        for (int j = 0; j < 2; ++j)
          dyn = std::max(dyn, static_cast<double>(std::fabs(lg[j] - want[b][j])));
      }
      float out[6];
      s.classify_batch(ids.data(), mask.data(), 3, L, out);
      for (int b = 0; b < 3; ++b)
        for (int j = 0; j < 2; ++j)
          padded = std::max(padded, static_cast<double>(std::fabs(out[b * 2 + j] - want[b][j])));
      EXPECT_LE(dyn, 2e-5) << spec << " threads " << threads << ": session vs reference " << dyn;
      EXPECT_LE(padded, 2e-5) << spec << " threads " << threads << ": padded vs alone " << padded;
    }
  }
}

// Sessions share one read-only model: two workers running at once give the results of one
// running alone; and every ISA level the CPU supports agrees with the others.
// The reference computes unfolded weights only: a source carrying the folded LayerNorm outputs
// of a recipe (layers.{i}.qkv_in_norm / ffn_in_norm) is refused, naming the tensor; the session
// still builds from it.
TEST(Bert, ReferenceRefusesFoldedLayerNormTensors) {
  for (const char* part : {"qkv_in_norm", "ffn_in_norm"}) {
    BertSource src = open_bert_source("synthetic:bert-tiny@5");
    ASSERT_NO_THROW(BertReference{src});
    const std::string name = std::string("layers.1.") + part;
    src.tensors[name + ".weight"] = src.tensor("layers.1.attn_norm.weight");
    src.tensors[name + ".bias"] = src.tensor("layers.1.attn_norm.bias");
    try {
      BertReference ref(src);
      ADD_FAILURE() << part << ": the reference accepted a folded LayerNorm tensor";
    } catch (const FileError& e) {
      EXPECT_EQ(e.path(), src.origin) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
    const BertModel model = build_bert(src);
    EXPECT_FALSE(std::string(part) == "qkv_in_norm" ? model.layers[1].qkv_in_norm_w.empty()
                                                     : model.layers[1].ffn_in_norm_w.empty());
  }
}

TEST(Bert, WorkersShareTheModelAndIsaLevelsAgree) {
  const BertModel model = build_bert(open_bert_source("synthetic:bert-tiny@4"));
  std::vector<std::vector<int>> seqs;
  for (int i = 0; i < 12; ++i) seqs.push_back(random_ids(100 + i, 8 + 5 * i, 30522));
  std::vector<float> alone(seqs.size() * 2);
  {
    BertSession s(model, {});
    for (size_t i = 0; i < seqs.size(); ++i) {
      const float* lg = s.classify(seqs[i].data(), static_cast<int>(seqs[i].size()));
      alone[i * 2] = lg[0];
      alone[i * 2 + 1] = lg[1];
    }
  }
  std::vector<float> got[2];
  auto worker = [&](int w) {
    BertSession s(model, {});
    for (int rep = 0; rep < 3; ++rep)
      for (size_t i = 0; i < seqs.size(); ++i) {
        const float* lg = s.classify(seqs[i].data(), static_cast<int>(seqs[i].size()));
        if (rep == 2) got[w].insert(got[w].end(), lg, lg + 2);
      }
  };
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(got[0], alone);
  EXPECT_EQ(got[1], alone);

  for (Isa isa : supported_isas()) {
    BertSessionOptions o;
    o.isa = static_cast<int>(isa);
    BertSession s(model, o);
    EXPECT_EQ(s.isa(), isa);
    double diff = 0;
    for (size_t i = 0; i < seqs.size(); ++i) {
      const float* lg = s.classify(seqs[i].data(), static_cast<int>(seqs[i].size()));
      for (int j = 0; j < 2; ++j)
        diff = std::max(diff, static_cast<double>(std::fabs(lg[j] - alone[i * 2 + j])));
    }
    EXPECT_LE(diff, 1e-5) << isa_name(isa);
  }
}

TEST(Bert, SessionChecksShapesAndIds) {
  const BertModel model = build_bert(open_bert_source("synthetic:bert-tiny"));
  BertSessionOptions o;
  o.max_length = 16;
  o.max_batch = 2;
  BertSession s(model, o);
  EXPECT_EQ(s.max_length(), 16);
  std::vector<int> ids(3 * 17, 101);
  float out[6];
  EXPECT_THROW(s.classify(ids.data(), 17), Error);
  EXPECT_THROW(s.classify(ids.data(), 0), Error);
  EXPECT_THROW(s.classify_batch(ids.data(), nullptr, 3, 4, out), Error);
  ids[2] = 30522;
  EXPECT_THROW(s.classify(ids.data(), 4), Error);
  ids[2] = -1;
  EXPECT_THROW(s.classify(ids.data(), 4), Error);
  ids[2] = 5;
  const int types[4] = {0, 1, 2, 0};
  EXPECT_THROW(s.classify(ids.data(), 4, types), Error);
  EXPECT_NO_THROW(s.classify(ids.data(), 2, types));
  BertSessionOptions too_long;
  too_long.max_length = 513;
  EXPECT_THROW(BertSession(model, too_long), Error);
}

// A format that prunes while packing (2:4 keeps 2 of every 4 weights) is not expected to stay
// near FP32 on its own.
bool prunes_on_pack(const FormatRow& row) {
  std::vector<float> src(64), back(64);
  for (int i = 0; i < 64; ++i) src[i] = 1.0f + 0.01f * static_cast<float>(i);
  std::vector<uint8_t> packed(row.row_bytes(64));
  row.pack_row(src.data(), 64, packed.data());
  row.unpack_row(packed.data(), 64, back.data());
  return std::count(back.begin(), back.end(), 0.0f) > 0;
}

// Every row of the format table builds and runs the encoder; formats that do not prune stay
// near FP32 on the synthetic model (fidelity on random weights, not task quality).
TEST(Bert, EveryWeightFormatRuns) {
  const BertSource src = open_bert_source("synthetic:bert-tiny@5");
  const BertModel ref_model = build_bert(src);
  BertSession ref(ref_model, {});
  const std::vector<int> ids = random_ids(9, 40, src.config.vocab_size);
  const float* r = ref.classify(ids.data(), 40);
  const float want[2] = {r[0], r[1]};
  for (const FormatRow& row : format_table()) {
    BertBuildOptions opts;
    opts.format = row.name;
    const BertModel m = build_bert(src, opts);
    BertSession s(m, {});
    const float* lg = s.classify(ids.data(), 40);
    for (int j = 0; j < 2; ++j) {
      EXPECT_TRUE(std::isfinite(lg[j])) << row.name;
      if (!prunes_on_pack(row)) {
        EXPECT_NEAR(lg[j], want[j], 0.25) << row.name;
      }
    }
    if (std::string(row.name) == "f32") {
      EXPECT_EQ(m.projection_bytes(), ref_model.projection_bytes());
    }
  }
  BertBuildOptions bad;
  bad.class_format["embeddings"] = "f32";
  EXPECT_THROW(build_bert(src, bad), Error);
  BertBuildOptions bad_sparsity;
  bad_sparsity.sparsity = 1.0;
  EXPECT_THROW(build_bert(src, bad_sparsity), Error);
}

// Pruning at build time: half the projection weights become zero (visible through the packed
// matrices), and the model still runs.
TEST(Bert, SparsityPrunesProjections) {
  const BertSource src = open_bert_source("synthetic:bert-tiny@5");
  BertBuildOptions opts;
  opts.sparsity = 0.5;
  const BertModel m = build_bert(src, opts);
  EXPECT_EQ(m.build.describe(), "f32,sparsity=0.5");
  for (const WeightMatrix* w : {&m.layers[0].wqkv, &m.layers[1].w_out}) {
    std::vector<float> all(static_cast<size_t>(w->rows * w->cols));
    unpack_matrix(*w, all.data());
    EXPECT_EQ(std::count(all.begin(), all.end(), 0.0f), static_cast<long>(all.size() / 2))
        << w->name;
  }
  // Embeddings and the head are never pruned.
  EXPECT_EQ(std::count(m.classifier_b.begin(), m.classifier_b.end(), 0.0f), 0);
  BertSession s(m, {});
  const std::vector<int> ids = random_ids(2, 12, src.config.vocab_size);
  const float* lg = s.classify(ids.data(), 12);
  EXPECT_TRUE(std::isfinite(lg[0]) && std::isfinite(lg[1]));
}

// ---- DistilBERT from a Hugging Face folder ------------------------------------------------------

// Writes a safetensors file of F32 tensors (name -> shape, values).
struct StTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

void write_safetensors(const std::string& path, const std::vector<StTensor>& ts) {
  nlohmann::json h = nlohmann::json::object();
  size_t off = 0;
  for (const StTensor& t : ts) {
    const size_t n = t.values.size() * sizeof(float);
    h[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {off, off + n}}};
    off += n;
  }
  std::string header = h.dump();
  while (header.size() % 8) header.push_back(' ');
  std::ofstream out(path, std::ios::binary);
  const uint64_t len = header.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const StTensor& t : ts)
    out.write(reinterpret_cast<const char*>(t.values.data()),
              static_cast<std::streamsize>(t.values.size() * sizeof(float)));
}

// The Hugging Face names of DistilBertForSequenceClassification, written out independently of
// the loader's own table.
std::vector<std::pair<std::string, std::string>> distilbert_names(int layers) {
  std::vector<std::pair<std::string, std::string>> v = {
      {"embeddings.word", "distilbert.embeddings.word_embeddings.weight"},
      {"embeddings.position", "distilbert.embeddings.position_embeddings.weight"},
      {"embeddings.norm.weight", "distilbert.embeddings.LayerNorm.weight"},
      {"embeddings.norm.bias", "distilbert.embeddings.LayerNorm.bias"},
      {"head.dense.weight", "pre_classifier.weight"},
      {"head.dense.bias", "pre_classifier.bias"},
      {"head.classifier.weight", "classifier.weight"},
      {"head.classifier.bias", "classifier.bias"}};
  const std::pair<const char*, const char*> parts[] = {
      {"query", "attention.q_lin"},    {"key", "attention.k_lin"},
      {"value", "attention.v_lin"},    {"attn_out", "attention.out_lin"},
      {"attn_norm", "sa_layer_norm"},  {"ffn_in", "ffn.lin1"},
      {"ffn_out", "ffn.lin2"},         {"ffn_norm", "output_layer_norm"}};
  for (int l = 0; l < layers; ++l)
    for (const auto& [canon, hf] : parts)
      for (const char* wb : {".weight", ".bias"})
        v.emplace_back("layers." + std::to_string(l) + "." + canon + wb,
                       "distilbert.transformer.layer." + std::to_string(l) + "." + hf + wb);
  return v;
}

// A fresh folder under the test temp dir, removed again at scope exit; the process id keeps
// concurrent runs of the suite apart.
struct ScratchDir {
  explicit ScratchDir(const std::string& name)
      : path((fs::path(::testing::TempDir()) /
              ("cibench_bert_" + name + "_" + std::to_string(::getpid())))
                 .string()) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

TEST(Bert, DistilBertFolderLoadsWithHuggingFaceNames) {
  const BertSource syn = open_bert_source("synthetic:distilbert-mini@11");
  const BertConfig& c = syn.config;
  const ScratchDir scratch("distil");
  const std::string& dir = scratch.path;
  std::vector<StTensor> ts;
  for (const auto& [canon, hf] : distilbert_names(c.n_layers)) {
    const TensorSource& t = syn.tensor(canon);
    const bool vector = canon.find(".bias") != std::string::npos ||
                        canon.find("norm.weight") != std::string::npos;
    ts.push_back({hf, vector ? std::vector<int64_t>{t.cols} : std::vector<int64_t>{t.rows, t.cols},
                  t.read_all()});
  }
  write_safetensors(dir + "/model.safetensors", ts);
  nlohmann::json cfg = {{"architectures", {"DistilBertForSequenceClassification"}},
                        {"model_type", "distilbert"},
                        {"activation", "gelu"},
                        {"dim", c.hidden},
                        {"hidden_dim", c.intermediate},
                        {"n_heads", c.n_heads},
                        {"n_layers", c.n_layers},
                        {"max_position_embeddings", c.max_positions},
                        {"vocab_size", c.vocab_size},
                        {"sinusoidal_pos_embds", false},
                        {"id2label", {{"0", "NEGATIVE"}, {"1", "POSITIVE"}}}};
  std::ofstream(dir + "/config.json") << cfg.dump(2);

  const BertSource hf = open_bert_source(dir);
  EXPECT_EQ(hf.config.arch, BertArch::distilbert);
  EXPECT_EQ(hf.config.labels, (std::vector<std::string>{"NEGATIVE", "POSITIVE"}));
  EXPECT_EQ(hf.container, "hf-safetensors");
  EXPECT_TRUE(is_bert_spec(dir));
  const BertModel a = build_bert(syn), b = build_bert(hf);
  BertSession sa(a, {}), sb(b, {});
  const std::vector<int> ids = random_ids(4, 21, c.vocab_size);
  const float* la = sa.classify(ids.data(), 21);
  const float x0 = la[0], x1 = la[1];
  const float* lb = sb.classify(ids.data(), 21);
  EXPECT_EQ(x0, lb[0]);
  EXPECT_EQ(x1, lb[1]);
}

// ---- Bad files -------------------------------------------------------------------------------------

// Expects a FileError whose path is `path` and whose message contains `needle`.
template <typename F>
void expect_file_error(F&& f, const std::string& path, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no FileError (expected one naming " << path << ")";
  } catch (const FileError& e) {
    EXPECT_EQ(e.path(), path) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Bert, BadFilesAreFileErrorsNamingTheFile) {
  const char* kTiny = "models/bert-tiny-sst2";
  CIBENCH_REQUIRE_SHARED(std::string(kTiny) + "/model.safetensors");
  const std::string src_dir = test::shared_path(kTiny);
  const std::string cfg_text = read_file(src_dir + "/config.json");

  // config.json disagreeing with the tensors
  {
    const ScratchDir scratch("cfg");
    const std::string& dir = scratch.path;
    auto j = nlohmann::json::parse(cfg_text);
    j["intermediate_size"] = 1024;
    std::ofstream(dir + "/config.json") << j.dump();
    fs::create_symlink(src_dir + "/model.safetensors", dir + "/model.safetensors");
    expect_file_error([&] { open_bert_source(dir); }, dir + "/model.safetensors",
                      "tensor 'bert.encoder.layer.0.intermediate.dense.");
  }
  // more labels in id2label than classifier rows
  {
    const ScratchDir scratch("labels");
    const std::string& dir = scratch.path;
    auto j = nlohmann::json::parse(cfg_text);
    j["id2label"] = {{"0", "a"}, {"1", "b"}, {"2", "c"}};
    std::ofstream(dir + "/config.json") << j.dump();
    fs::create_symlink(src_dir + "/model.safetensors", dir + "/model.safetensors");
    expect_file_error([&] { open_bert_source(dir); }, dir + "/model.safetensors",
                      "tensor 'classifier.");
  }
  // a truncated safetensors file
  {
    const ScratchDir scratch("trunc");
    const std::string& dir = scratch.path;
    std::ofstream(dir + "/config.json") << cfg_text;
    const std::string bytes = read_file(src_dir + "/model.safetensors");
    std::ofstream(dir + "/model.safetensors", std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
    try {
      open_bert_source(dir);
      ADD_FAILURE() << "truncated file accepted";
    } catch (const FileError& e) {
      EXPECT_EQ(e.path(), dir + "/model.safetensors") << e.what();
    }
  }
  // a tensor missing from the file
  {
    const ScratchDir scratch("missing");
    const std::string& dir = scratch.path;
    std::ofstream(dir + "/config.json") << cfg_text;
    const BertSource full = open_bert_source(src_dir);
    std::vector<StTensor> ts;
    for (const auto& [canon, hf] : full.source_names) {
      if (hf == "bert.pooler.dense.bias") continue;
      const TensorSource& t = full.tensor(canon);
      const bool vector = t.rows == 1 && canon.find("embeddings.token_type") == std::string::npos;
      ts.push_back({hf, vector ? std::vector<int64_t>{t.cols} : std::vector<int64_t>{t.rows, t.cols},
                    t.read_all()});
    }
    write_safetensors(dir + "/model.safetensors", ts);
    expect_file_error([&] { open_bert_source(dir); }, dir + "/model.safetensors",
                      "bert.pooler.dense.bias");
  }
  // no config.json, and a config that is not a BERT classifier
  {
    const ScratchDir scratch("nocfg");
    const std::string& dir = scratch.path;
    expect_file_error([&] { open_bert_source(dir); }, dir, "config.json");
    std::ofstream(dir + "/config.json") << R"({"model_type": "llama"})";
    expect_file_error([&] { open_bert_source(dir); }, dir + "/config.json", "BERT");
  }
}

}  // namespace
}  // namespace cibench
