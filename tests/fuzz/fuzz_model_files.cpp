// Fuzz target for the model file readers. Each input is written to a scratch folder and opened
// as a llama2.c .bin, as a .gguf, and as the model.safetensors of a Hugging Face folder (with a
// fixed stories260K-shaped config.json). A cibench::Error is the expected way to reject a bad
// file; any other exception, a crash or a sanitizer report is a bug.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engines/core/error.h"
#include "engines/models/gguf.h"
#include "engines/models/llama_config.h"
#include "engines/models/safetensors.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

namespace fs = std::filesystem;

const char* kConfig = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "vocab_size": 512, "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 5,
  "num_attention_heads": 8, "num_key_value_heads": 4, "max_position_embeddings": 512,
  "rms_norm_eps": 1e-05, "hidden_act": "silu", "rope_theta": 10000.0,
  "tie_word_embeddings": true, "bos_token_id": 1, "eos_token_id": 2
})";

class Scratch {
 public:
  Scratch() {
    // Inputs are rewritten for every run: prefer memory (/dev/shm) to the disk.
    dir_ = cibench::fuzz::scratch_dir("cibench_fuzz");
    fs::create_directories(dir_ / "hf");
    std::ofstream(dir_ / "hf" / "config.json") << kConfig;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string bin() const { return (dir_ / "input.bin").string(); }
  std::string gguf() const { return (dir_ / "input.gguf").string(); }
  std::string hf_dir() const { return (dir_ / "hf").string(); }
  std::string safetensors() const { return (dir_ / "hf" / "model.safetensors").string(); }

 private:
  fs::path dir_;
};

Scratch& scratch() {
  static Scratch s;
  return s;
}

void write(const std::string& path, const uint8_t* data, size_t size) { cibench::fuzz::write_input(path, data, size); }

// Reads every tensor, one row block at a time, as the engine would.
void read_all_rows(const cibench::LlamaSource& src) {
  std::vector<float> buf;
  for (const auto& [name, t] : src.tensors) {
    const int64_t block = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, t.cols));
    for (int64_t r = 0; r < t.rows; r += block) {
      const int64_t n = std::min(block, t.rows - r);
      buf.resize(static_cast<size_t>(n * t.cols));
      t.read(r, n, buf.data());
    }
  }
}

using cibench::fuzz::rejecting_errors;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Scratch& s = scratch();

  write(s.bin(), data, size);
  rejecting_errors([&] { read_all_rows(cibench::open_llama_source(s.bin())); });

  write(s.gguf(), data, size);
  rejecting_errors([&] {
    cibench::GgufFile g(s.gguf());
    for (const auto& kv : g.metadata()) {
      const std::string& key = kv.first;  // (named: clang 14 cannot capture bindings)
      const cibench::GgufValue& v = kv.second;
      rejecting_errors([&] { v.as_int(key, g.path()); });
      rejecting_errors([&] { v.as_float(key, g.path()); });
      rejecting_errors([&] { v.as_string(key, g.path()); });
    }
  });
  rejecting_errors([&] { read_all_rows(cibench::open_llama_source(s.gguf())); });

  write(s.safetensors(), data, size);
  rejecting_errors([&] {
    cibench::SafetensorsFile st(s.safetensors());
    std::vector<float> buf;
    for (const auto& [name, t] : st.tensors()) {
      if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16") continue;
      const int64_t rows = t.shape.empty() ? 1 : t.shape[0];
      if (rows == 0 || t.numel() > (int64_t{1} << 24)) continue;
      buf.resize(static_cast<size_t>(t.numel() / rows));
      for (int64_t r = 0; r < rows; ++r) t.read_rows_f32(r, 1, buf.data());
    }
  });
  rejecting_errors([&] { read_all_rows(cibench::open_llama_source(s.hf_dir())); });
  return 0;
}
