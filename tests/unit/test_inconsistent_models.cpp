// Model and tokenizer files that are readable but inconsistent, each of which used to run with
// exit 0 and changed numbers: a config naming fewer layers than the weights hold (HF Llama, GGUF,
// BERT, .cbq), tensors whose bytes overlap (safetensors, GGUF, .cbq), non-finite BERT weights and
// non-finite tokenizer scores. Each is now a FileError naming the file and what disagrees.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/models/bert.h"
#include "engines/models/gguf.h"
#include "engines/models/llama_config.h"
#include "engines/models/safetensors.h"
#include "engines/models/tokenizer.h"
#include "engines/quant/quantized_file.h"
#include "engines/quant/recipe.h"
#include "tests/unit/test_support.h"

namespace cibench {
namespace {

namespace fs = std::filesystem;

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("cibench_inconsistent_" + std::to_string(getpid()));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() { fs::remove_all(dir); }
  std::string path(const std::string& name) const { return (dir / name).string(); }
};

std::string bytes_of(const std::string& path) { return read_file(path); }
void write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FileError& e) {
    return e.what();
  }
  return "(no error)";
}

// A copy of a Hugging Face folder whose config.json is edited by `edit`.
std::string copy_folder_with_config(const Scratch& s, const std::string& from, const std::string& name,
                                    const std::function<void(nlohmann::json&)>& edit) {
  const std::string to = s.path(name);
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from))
    if (e.is_regular_file()) fs::copy_file(e.path(), fs::path(to) / e.path().filename(), fs::copy_options::overwrite_existing);
  nlohmann::json j = nlohmann::json::parse(bytes_of(to + "/config.json"));
  edit(j);
  write(to + "/config.json", j.dump(1));
  return to;
}

TEST(InconsistentModels, ConfigsNamingFewerLayersThanTheWeightsAreRefused) {
  Scratch s;
  if (test::have_shared("models/stories260K/hf/config.json")) {
    const std::string hf = copy_folder_with_config(s, test::shared_path("models/stories260K/hf"), "hf",
                                                   [](nlohmann::json& j) { j["num_hidden_layers"] = 4; });
    const std::string e = error_of([&] { open_llama_source(hf); });
    EXPECT_NE(e.find("9 tensors that " + hf + "/config.json (4 layers) does not account for, e.g. 'model.layers.4."),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("the config and the weights disagree"), std::string::npos) << e;
  } else {
    ADD_FAILURE() << "the shared stories260K HF folder is needed (" << test::shared_dir() << ")";
  }
  if (test::have_shared("models/bert-tiny-sst2/config.json")) {
    const std::string bert = copy_folder_with_config(s, test::shared_path("models/bert-tiny-sst2"), "bert",
                                                     [](nlohmann::json& j) { j["num_hidden_layers"] = 1; });
    const std::string e = error_of([&] { open_bert_source(bert); });
    EXPECT_NE(e.find("does not account for, e.g. 'bert.encoder.layer.1."), std::string::npos) << e;
  } else {
    ADD_FAILURE() << "the shared bert-tiny-sst2 folder is needed";
  }
}

TEST(InconsistentModels, NonFiniteBertWeightsAreRefused) {
  if (!test::have_shared("models/bert-tiny-sst2/model.safetensors")) GTEST_SKIP() << "no shared bert-tiny-sst2";
  Scratch s;
  const std::string bert = copy_folder_with_config(s, test::shared_path("models/bert-tiny-sst2"), "bert", [](nlohmann::json&) {});
  std::string bytes = bytes_of(bert + "/model.safetensors");
  size_t at = 0;
  std::string name;
  {
    SafetensorsFile st(bert + "/model.safetensors");
    for (const auto& [n, info] : st.tensors())
      if (info.dtype == "F32" && n.find("layer.1.output.dense.weight") != std::string::npos) {
        at = static_cast<size_t>(info.data - st.file()->data()) + 4 * 7;  // element 7
        name = n;
      }
  }
  ASSERT_FALSE(name.empty());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&bytes[at], &nan, 4);
  write(bert + "/model.safetensors", bytes);
  const std::string e = error_of([&] { open_bert_source(bert); });
  EXPECT_NE(e.find("tensor '" + name + "' has a non-finite value (nan) at row 0, column 7"), std::string::npos) << e;
}

TEST(InconsistentModels, OverlappingTensorBytesAreRefused) {
  Scratch s;
  // safetensors: b reads the last 4 bytes of a.
  {
    const std::string header =
        R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
    std::string f(8, '\0');
    const uint64_t n = header.size();
    std::memcpy(&f[0], &n, 8);
    f += header + std::string(12, '\0');
    write(s.path("overlap.safetensors"), f);
    const std::string e = error_of([&] { SafetensorsFile st(s.path("overlap.safetensors")); });
    EXPECT_NE(e.find("data_offsets overlap those of tensor 'a'"), std::string::npos) << e;
  }
  // GGUF: two tensor infos at the same offset.
  {
    std::string g = "GGUF";
    auto pod = [&](auto v) { g.append(reinterpret_cast<const char*>(&v), sizeof v); };
    auto str_ = [&](const std::string& x) {
      pod(uint64_t{x.size()});
      g += x;
    };
    pod(uint32_t{3});
    pod(uint64_t{2});  // tensors
    pod(uint64_t{0});  // metadata
    for (const char* name : {"t0", "t1"}) {
      str_(name);
      pod(uint32_t{1});
      pod(uint64_t{8});  // 8 f32
      pod(uint32_t{0});  // F32
      pod(uint64_t{0});  // both at offset 0
    }
    while (g.size() % 32) g += '\0';
    g += std::string(32, '\0');
    write(s.path("overlap.gguf"), g);
    const std::string e = error_of([&] { GgufFile f(s.path("overlap.gguf")); });
    EXPECT_NE(e.find("tensor 't1' data [0, +32) overlaps tensor 't0' [0, +32)"), std::string::npos) << e;
  }
}

// Rewrites the JSON header of a .cbq file (magic, version, header length, header, padding, payload).
void edit_cbq_header(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
  const std::string d = bytes_of(path);
  uint64_t hlen = 0;
  std::memcpy(&hlen, d.data() + 16, 8);
  const auto align = [](uint64_t x) { return (x + 63) / 64 * 64; };
  const std::string payload = d.substr(align(24 + hlen));
  nlohmann::json h = nlohmann::json::parse(d.substr(24, hlen));
  edit(h);
  const std::string hs = h.dump(1);
  std::string out = d.substr(0, 16);
  const uint64_t n = hs.size();
  out.append(reinterpret_cast<const char*>(&n), 8);
  out += hs;
  out += std::string(align(24 + n) - (24 + n), '\0');
  write(path, out + payload);
}

TEST(InconsistentModels, QuantizedFilesWithAliasedOrUnaccountedTensorsAreRefused) {
  Scratch s;
  const LlamaSource src = open_llama_source("synthetic:stories260k");
  const RecipeOutput out = apply_recipe(src, RecipeSpec::parse("rtn", "int8"), nullptr);
  const std::string path = s.path("m.cbq");
  write_quantized(path, out.source, quantized_meta(out, nullptr, ""));
  ASSERT_NO_THROW(load_quantized(path));  // the file as written (and the header rewrite) is sound
  edit_cbq_header(path, [](nlohmann::json&) {});
  ASSERT_NO_THROW(load_quantized(path));

  // Aliased: layers.0.wk pointing at the bytes of layers.0.wq (same size in this model? use wv/wk).
  edit_cbq_header(path, [](nlohmann::json& h) {
    nlohmann::json* wk = nullptr;
    nlohmann::json* wv = nullptr;
    for (auto& t : h["tensors"]) {
      if (t["name"] == "layers.0.wk") wk = &t;
      if (t["name"] == "layers.0.wv") wv = &t;
    }
    ASSERT_TRUE(wk && wv);
    (*wv)["offset"] = (*wk)["offset"];
  });
  std::string e = error_of([&] { load_quantized(path); });
  EXPECT_NE(e.find("overlaps tensor"), std::string::npos) << e;

  // A config with one layer fewer than the tensors hold.
  write_quantized(path, out.source, quantized_meta(out, nullptr, ""));
  edit_cbq_header(path, [](nlohmann::json& h) { h["config"]["n_layers"] = h["config"]["n_layers"].get<int>() - 1; });
  e = error_of([&] { load_quantized(path); });
  EXPECT_NE(e.find("is not part of the model its config describes (4 layers)"), std::string::npos) << e;
}

TEST(InconsistentModels, NonFiniteTokenizerScoresAreRefused) {
  if (!test::have_shared("models/stories260K/tok512.bin")) GTEST_SKIP() << "no shared tok512.bin";
  Scratch s;
  std::string t = bytes_of(test::shared_path("models/stories260K/tok512.bin"));
  // Token 10's score: skip the 4-byte header and tokens 0..9 (4-byte score, 4-byte length, bytes).
  size_t pos = 4;
  for (int i = 0; i < 10; ++i) {
    int32_t len = 0;
    std::memcpy(&len, &t[pos + 4], 4);
    pos += 8 + static_cast<size_t>(len);
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&t[pos], &nan, 4);
  write(s.path("tok.bin"), t);
  const std::string e = error_of([&] { open_tokenizer(s.path("tok.bin"), 512); });
  EXPECT_NE(e.find("llama2.c tokenizer token 10 has a non-finite score (nan)"), std::string::npos) << e;
}

}  // namespace
}  // namespace cibench
