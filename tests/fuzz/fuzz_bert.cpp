// Fuzz target for the BERT-family loader: each input is the model.safetensors of a BERT, of
// a DistilBERT and of a ModernBERT Hugging Face folder (fixed small configs, the shapes of the
// seeds written by tests/fuzz/corpus/make_bert_seeds.py and of tests/fixtures/modernbert/mean). What loads is packed in f32 and int8 and classifies one
// sentence. A cibench::Error is the clean rejection of a bad file; any other exception, a crash,
// a hang or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "engines/core/error.h"
#include "engines/models/bert.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

namespace fs = std::filesystem;
using cibench::fuzz::rejecting_errors;

const char* kBertConfig = R"({
  "architectures": ["BertForSequenceClassification"], "model_type": "bert",
  "hidden_act": "gelu", "hidden_size": 16, "intermediate_size": 32, "layer_norm_eps": 1e-12,
  "max_position_embeddings": 32, "num_attention_heads": 2, "num_hidden_layers": 2,
  "type_vocab_size": 2, "vocab_size": 64, "id2label": {"0": "negative", "1": "positive"}
})";

const char* kDistilConfig = R"({
  "architectures": ["DistilBertForSequenceClassification"], "model_type": "distilbert",
  "activation": "gelu", "dim": 16, "hidden_dim": 32, "n_heads": 2, "n_layers": 2,
  "max_position_embeddings": 32, "vocab_size": 64, "sinusoidal_pos_embds": false,
  "id2label": {"0": "negative", "1": "positive"}
})";

// tests/fixtures/modernbert/mean's config (every bias, mean pooling, rope_parameters).
const char* kModernConfig = R"({
  "architectures": ["ModernBertForSequenceClassification"], "model_type": "modernbert",
  "hidden_size": 16, "intermediate_size": 24, "num_attention_heads": 2, "num_hidden_layers": 3,
  "global_attn_every_n_layers": 2, "local_attention": 8, "max_position_embeddings": 128,
  "vocab_size": 288, "norm_eps": 1e-6, "hidden_activation": "gelu_pytorch_tanh",
  "classifier_activation": "gelu_new", "classifier_pooling": "mean", "attention_bias": true,
  "mlp_bias": true, "norm_bias": true, "classifier_bias": true,
  "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 80000.0},
                      "sliding_attention": {"rope_type": "default", "rope_theta": 5000.0}}
})";

struct Scratch {
  fs::path dir = cibench::fuzz::scratch_dir("cibench_fuzz_bert");
  Scratch() {
    for (const auto& [name, config] : {std::pair{"bert", kBertConfig}, std::pair{"distil", kDistilConfig},
                                       std::pair{"modern", kModernConfig}}) {
      fs::create_directories(dir / name);
      std::ofstream(dir / name / "config.json") << config;
      std::ofstream vocab(dir / name / "vocab.txt");
      vocab << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
      for (char c = 'a'; c <= 'z'; ++c) vocab << c << "\n##" << c << "\n";
      for (const char* w : {"the", "movie", "good", "bad", "fun", "!", "."}) vocab << w << "\n";
    }
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

Scratch& scratch() {
  static Scratch s;
  return s;
}

void load_and_classify(const std::string& folder) {
  const cibench::BertSource src = cibench::open_bert_source(folder);
  for (const char* format : {"f32", "int8"}) {
    cibench::BertBuildOptions opts;
    opts.format = format;
    const cibench::BertModel model = cibench::build_bert(src, opts);
    cibench::BertSessionOptions so;
    so.max_length = 8;
    cibench::BertSession session(model, so);
    const int ids[] = {2, 57, 58, 61, 3};  // [CLS] the movie fun [SEP]
    session.classify(ids, 5);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Scratch& s = scratch();
  for (const char* name : {"bert", "distil", "modern"}) {
    const std::string folder = (s.dir / name).string();
    cibench::fuzz::write_input(folder + "/model.safetensors", data, size);
    rejecting_errors([&] { load_and_classify(folder); });
  }
  return 0;
}
