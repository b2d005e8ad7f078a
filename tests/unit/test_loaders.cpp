// Model file readers: llama2.c .bin, Hugging Face safetensors folders and GGUF. The three
// stories260K files must give the same model bit for bit; corrupt copies of them must fail with
// a FileError naming the file and the problem.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/models/gguf.h"
#include "engines/models/llama_config.h"
#include "engines/models/safetensors.h"
#include "engines/quant/calibration.h"
#include "test_support.h"

namespace fs = std::filesystem;
using cibench::FileError;
using cibench::GgufFile;
using cibench::LlamaSource;
using cibench::open_llama_source;

namespace {

const char* kBin = "models/stories260K/stories260K.bin";
const char* kHf = "models/stories260K/hf";
const char* kGguf = "models/stories260K/gguf/stories260K.gguf";

using cibench::test::TempDir;

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void write_text(const std::string& path, const std::string& s) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << s;
}

template <typename T>
void put(std::vector<uint8_t>& b, size_t at, T v) {
  ASSERT_LE(at + sizeof(T), b.size());
  std::memcpy(b.data() + at, &v, sizeof(T));
}

template <typename T>
T get(const std::vector<uint8_t>& b, size_t at) {
  T v{};
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

// Offset of the first byte after the GGUF string `s` (u64 length + bytes) in the file.
size_t after_gguf_string(const std::vector<uint8_t>& b, const std::string& s) {
  std::vector<uint8_t> needle(8 + s.size());
  const uint64_t n = s.size();
  std::memcpy(needle.data(), &n, 8);
  std::memcpy(needle.data() + 8, s.data(), s.size());
  auto it = std::search(b.begin(), b.end(), needle.begin(), needle.end());
  EXPECT_NE(it, b.end()) << "no GGUF string '" << s << "'";
  return static_cast<size_t>(it - b.begin()) + needle.size();
}

// Runs f, which must throw a FileError whose message holds `path` and every phrase.
void expect_file_error(const std::function<void()>& f, const std::string& path,
                       const std::vector<std::string>& phrases) {
  try {
    f();
  } catch (const FileError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << "message lacks the path " << path << ": " << msg;
    for (const auto& p : phrases)
      EXPECT_NE(msg.find(p), std::string::npos) << "message lacks '" << p << "': " << msg;
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected FileError, got another exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected FileError mentioning " << path << ", nothing was thrown";
}

void expect_open_fails(const std::string& spec, const std::vector<std::string>& phrases,
                       const std::string& path_in_message = "") {
  expect_file_error([&] { open_llama_source(spec); },
                    path_in_message.empty() ? spec : path_in_message, phrases);
}

std::vector<uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<uint32_t> b(v.size());
  std::memcpy(b.data(), v.data(), v.size() * 4);
  return b;
}

// Every tensor of `a` equals the same tensor of `b` bit for bit.
void expect_same_tensors(const LlamaSource& a, const LlamaSource& b, bool skip_output = false) {
  for (const auto& [name, ta] : a.tensors) {
    if (skip_output && name == "output") continue;
    SCOPED_TRACE(name);
    ASSERT_TRUE(b.tensors.count(name));
    const auto& tb = b.tensors.at(name);
    ASSERT_EQ(ta.rows, tb.rows);
    ASSERT_EQ(ta.cols, tb.cols);
    EXPECT_EQ(bits_of(ta.read_all()), bits_of(tb.read_all()));
  }
}

void expect_stories260k_shape(const cibench::LlamaConfig& c) {
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.bos_id, 1);
  EXPECT_EQ(c.eos_id, 2);
}

std::string shared(const char* rel) { return cibench::test::shared_path(rel); }

}  // namespace

// -------------------------------------------------------------------------------------------
// The three stories260K formats

TEST(Loaders, Llama2cBinHasTheDocumentedConfig) {
  CIBENCH_REQUIRE_SHARED(kBin);
  const LlamaSource s = open_llama_source(shared(kBin));
  expect_stories260k_shape(s.config);
  EXPECT_EQ(s.config.seq_len, 512);
  EXPECT_TRUE(s.config.tied_output);
  EXPECT_EQ(s.container, "llama2c");
  EXPECT_EQ(s.origin, shared(kBin));
  EXPECT_EQ(s.tensors.count("output"), 0u);
  EXPECT_EQ(s.tensors.size(), 2u + 9u * 5u);
  // Known answer from the reference tool: `xxhsum -H64 stories260K.bin` (xxHash 0.8.1).
  EXPECT_EQ(s.content_hash, "xxh64:a63dd90f31c958a4");
  // The file's first weight (after the 28-byte header) is tok_embeddings[0][0].
  const auto bytes = read_bytes(shared(kBin));
  const float first = get<float>(bytes, 28);
  EXPECT_EQ(s.tensor("tok_embeddings").read_all()[0], first);
}

TEST(Loaders, HfFolderMatchesBinAfterUnpermutingQK) {
  CIBENCH_REQUIRE_SHARED(kBin);
  CIBENCH_REQUIRE_SHARED(kHf);
  const LlamaSource bin = open_llama_source(shared(kBin));
  const LlamaSource hf = open_llama_source(shared(kHf));
  expect_stories260k_shape(hf.config);
  EXPECT_EQ(hf.config.seq_len, 512);
  EXPECT_TRUE(hf.config.tied_output);
  EXPECT_EQ(hf.container, "hf-safetensors");
  EXPECT_EQ(hf.tensors.size(), bin.tensors.size());
  expect_same_tensors(bin, hf);

  // The raw (rotate-half) q_proj differs from llama2.c's wq, so the equality above really
  // depends on the un-permutation.
  cibench::SafetensorsFile st(shared(kHf) + "/model.safetensors");
  const auto& q = st.get("model.layers.0.self_attn.q_proj.weight");
  std::vector<float> raw(static_cast<size_t>(q.numel()));
  q.read_rows_f32(0, q.shape[0], raw.data());
  EXPECT_NE(bits_of(raw), bits_of(bin.tensor("layers.0.wq").read_all()));
}

TEST(Loaders, HfFolderCanBeNamedByItsFiles) {
  CIBENCH_REQUIRE_SHARED(kHf);
  const LlamaSource by_dir = open_llama_source(shared(kHf));
  for (const std::string f : {"/config.json", "/model.safetensors"}) {
    const LlamaSource s = open_llama_source(shared(kHf) + f);
    EXPECT_EQ(s.content_hash, by_dir.content_hash) << f;
    EXPECT_EQ(s.config.dim, by_dir.config.dim) << f;
    EXPECT_EQ(s.tensors.size(), by_dir.tensors.size()) << f;
  }
  // The folder's hash covers config.json then model.safetensors. Known answer from the
  // reference tool: `cat config.json model.safetensors | xxhsum -H64` (xxHash 0.8.1).
  EXPECT_EQ(by_dir.content_hash, "xxh64:0a015e23692d5ff8");
}

TEST(Loaders, GgufMatchesBin) {
  CIBENCH_REQUIRE_SHARED(kBin);
  CIBENCH_REQUIRE_SHARED(kGguf);
  const LlamaSource bin = open_llama_source(shared(kBin));
  const LlamaSource gg = open_llama_source(shared(kGguf));
  expect_stories260k_shape(gg.config);
  EXPECT_EQ(gg.config.seq_len, 128);  // the converter's default, as the README says
  EXPECT_EQ(gg.container, "gguf");
  // Known answer from the reference tool: `xxhsum -H64 stories260K.gguf` (xxHash 0.8.1).
  EXPECT_EQ(gg.content_hash, "xxh64:5d0cc6c438fce6a4");
  // The converter wrote output.weight explicitly, so the GGUF model is untied, with the
  // embeddings' values.
  EXPECT_FALSE(gg.config.tied_output);
  EXPECT_EQ(bits_of(gg.tensor("output").read_all()), bits_of(bin.tensor("tok_embeddings").read_all()));
  expect_same_tensors(bin, gg);
  expect_same_tensors(gg, bin, /*skip_output=*/true);
}

TEST(Loaders, DispatchOnMagicWhenTheExtensionSaysNothing) {
  CIBENCH_REQUIRE_SHARED(kGguf);
  TempDir tmp;
  const std::string renamed = tmp.file("model.weights");
  fs::copy_file(shared(kGguf), renamed);
  const LlamaSource s = open_llama_source(renamed);
  EXPECT_EQ(s.container, "gguf");
  EXPECT_EQ(s.config.seq_len, 128);
}

TEST(Loaders, UntiedLlama2cClassifierIsRead) {
  CIBENCH_REQUIRE_SHARED(kBin);
  TempDir tmp;
  auto b = read_bytes(shared(kBin));
  const size_t base = b.size();
  std::vector<float> cls(512 * 64);
  for (size_t i = 0; i < cls.size(); ++i) cls[i] = static_cast<float>(i % 97) * 0.25f - 3.0f;
  b.resize(base + cls.size() * 4);
  std::memcpy(b.data() + base, cls.data(), cls.size() * 4);

  // Positive vocab_size: the classifier is shared, so the extra bytes are an error with a hint.
  write_bytes(tmp.file("extra.bin"), b);
  expect_open_fails(tmp.file("extra.bin"), {"more", "negative vocab_size"});

  put<int32_t>(b, 20, -512);
  write_bytes(tmp.file("untied.bin"), b);
  const LlamaSource s = open_llama_source(tmp.file("untied.bin"));
  EXPECT_FALSE(s.config.tied_output);
  EXPECT_EQ(s.config.vocab_size, 512);
  EXPECT_EQ(bits_of(s.tensor("output").read_all()), bits_of(cls));
}

TEST(Loaders, ContentHashChangesWithOneByte) {
  CIBENCH_REQUIRE_SHARED(kBin);
  TempDir tmp;
  auto b = read_bytes(shared(kBin));
  const size_t at = b.size() - 100;  // inside the unused RoPE tables: still a valid model
  b[at] ^= 1;
  write_bytes(tmp.file("m.bin"), b);
  EXPECT_NE(open_llama_source(tmp.file("m.bin")).content_hash,
            open_llama_source(shared(kBin)).content_hash);
}

// -------------------------------------------------------------------------------------------
// GGUF and safetensors readers on their own

TEST(Loaders, GgufMetadataArrays) {
  CIBENCH_REQUIRE_SHARED(kGguf);
  GgufFile g(shared(kGguf));
  EXPECT_EQ(g.version(), 3u);
  const auto& tokens = g.get("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.type, cibench::GgufType::array);
  EXPECT_EQ(tokens.array_type, cibench::GgufType::string);
  ASSERT_EQ(tokens.array.size(), 512u);
  EXPECT_EQ(tokens.array[1].as_string("tokens", g.path()), "<s>");
  EXPECT_EQ(tokens.array[2].as_string("tokens", g.path()), "</s>");
  const auto& scores = g.get("tokenizer.ggml.scores");
  EXPECT_EQ(scores.array_type, cibench::GgufType::f32);
  EXPECT_EQ(scores.array.size(), 512u);
  const auto& types = g.get("tokenizer.ggml.token_type");
  EXPECT_EQ(types.array_type, cibench::GgufType::i32);
  ASSERT_EQ(types.array.size(), 512u);
  EXPECT_EQ(types.array[3].as_int("token_type", g.path()), 6);  // <0x00> is a byte token
  EXPECT_EQ(g.get("llama.block_count").as_int("llama.block_count", g.path()), 5);
  EXPECT_EQ(g.get("general.architecture").as_string("a", g.path()), "llama");
  // A u32 read as an integer but not as a string.
  expect_file_error([&] { g.get("llama.block_count").as_string("llama.block_count", g.path()); },
                    g.path(), {"llama.block_count", "expected a string"});
  expect_file_error([&] { g.get("no.such.key"); }, g.path(), {"no.such.key"});

  // 2 + 9 per layer + output = 48 tensors, all F32, inside the file.
  EXPECT_EQ(g.tensors().size(), 48u);
  const auto* q = g.find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dims, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(q->ggml_type, 0u);
  EXPECT_EQ(q->nbytes, 64u * 64u * 4u);
  const auto* k = g.find_tensor("blk.0.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->dims, (std::vector<int64_t>{64, 32}));  // innermost first: [cols, rows]
  for (const auto& t : g.tensors()) {
    EXPECT_GE(t.data, g.file()->data());
    EXPECT_LE(t.data + t.nbytes, g.file()->data() + g.file()->size());
    EXPECT_EQ(t.offset % 32, 0u);
  }
}

TEST(Loaders, GgmlTypeNames) {
  EXPECT_STREQ(GgufFile::ggml_type_name(0), "F32");
  EXPECT_STREQ(GgufFile::ggml_type_name(1), "F16");
  EXPECT_STREQ(GgufFile::ggml_type_name(2), "Q4_0");
  EXPECT_STREQ(GgufFile::ggml_type_name(8), "Q8_0");
  EXPECT_STREQ(GgufFile::ggml_type_name(10), "Q2_K");
  EXPECT_STREQ(GgufFile::ggml_type_name(15), "Q8_K");
  EXPECT_STREQ(GgufFile::ggml_type_name(16), "IQ2_XXS");
  EXPECT_STREQ(GgufFile::ggml_type_name(24), "I8");
  EXPECT_STREQ(GgufFile::ggml_type_name(28), "F64");
  EXPECT_STREQ(GgufFile::ggml_type_name(30), "BF16");
  EXPECT_STREQ(GgufFile::ggml_type_name(4), "unknown");  // Q4_2, removed from ggml
  EXPECT_STREQ(GgufFile::ggml_type_name(1000), "unknown");
}

TEST(Loaders, VocabOnlyGgufHasNoTensors) {
  const char* rel = "models/tokenizer-test-vectors/ggml-vocab-llama-spm.gguf";
  CIBENCH_REQUIRE_SHARED(rel);
  GgufFile g(shared(rel));
  EXPECT_TRUE(g.tensors().empty());
  EXPECT_EQ(g.get("tokenizer.ggml.tokens").array.size(), 32000u);
}

TEST(Loaders, SafetensorsHeaderAndMetadata) {
  CIBENCH_REQUIRE_SHARED(kHf);
  cibench::SafetensorsFile st(shared(kHf) + "/model.safetensors");
  EXPECT_EQ(st.tensors().size(), 47u);
  EXPECT_EQ(st.tensors().count("__metadata__"), 0u);
  ASSERT_EQ(st.metadata().count("format"), 1u);
  EXPECT_EQ(st.metadata().at("format"), "pt");
  const auto& e = st.get("model.embed_tokens.weight");
  EXPECT_EQ(e.dtype, "F32");
  EXPECT_EQ(e.shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(e.nbytes, 512u * 64u * 4u);
  EXPECT_EQ(st.find("lm_head.weight"), nullptr);
  expect_file_error([&] { st.get("lm_head.weight"); }, st.path(), {"lm_head.weight"});
  std::vector<float> row(64);
  EXPECT_THROW(e.read_rows_f32(510, 3, row.data()), cibench::Error);
}

// f16 and bf16 conversions against an independent formula, for every bit pattern.
TEST(Loaders, HalfConversionsAreExact) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const int sign = (h >> 15) ? -1 : 1;
    const int exp = (h >> 10) & 31;
    const int mant = h & 1023;
    const float got = cibench::f16_to_f32(static_cast<uint16_t>(h));
    if (exp == 31) {
      EXPECT_TRUE(mant ? std::isnan(got) : std::isinf(got)) << h;
      continue;
    }
    const double want = exp == 0 ? sign * std::ldexp(mant, -24)
                                  : sign * std::ldexp(1024 + mant, exp - 25);
    ASSERT_EQ(got, static_cast<float>(want)) << "f16 bits " << h;
    ASSERT_EQ(std::signbit(got), sign < 0) << h;
  }
  const uint32_t f = 0x3fc00000u;  // 1.5f
  EXPECT_EQ(cibench::bf16_to_f32(static_cast<uint16_t>(f >> 16)), 1.5f);
  EXPECT_EQ(cibench::bf16_to_f32(0xc040), -3.0f);
}

// A BF16 copy of the HF folder (weights truncated to bf16) loads, and its tensors are the
// .bin's weights rounded the same way.
TEST(Loaders, HfBf16AndF16Tensors) {
  CIBENCH_REQUIRE_SHARED(kBin);
  CIBENCH_REQUIRE_SHARED(kHf);
  const LlamaSource bin = open_llama_source(shared(kBin));
  cibench::SafetensorsFile orig(shared(kHf) + "/model.safetensors");
  for (const std::string dtype : {"BF16", "F16"}) {
    SCOPED_TRACE(dtype);
    TempDir tmp;
    fs::copy_file(shared(kHf) + "/config.json", tmp.file("config.json"));
    // Rebuild the file: same tensors, 2 bytes per weight.
    std::string header = "{";
    std::vector<uint8_t> data;
    for (const auto& [name, info] : orig.tensors()) {
      std::vector<float> v(static_cast<size_t>(info.numel()));
      info.read_rows_f32(0, info.shape[0], v.data());
      const size_t begin = data.size();
      for (float x : v) {
        uint32_t u;
        std::memcpy(&u, &x, 4);
        uint16_t h;
        if (dtype == "BF16") {
          h = static_cast<uint16_t>(u >> 16);
        } else {
          // f32 -> f16 by truncation; the weights of this tiny model are within f16's normal
          // range or flush to (signed) zero here, which is fine for a reader test.
          const uint32_t sign = (u >> 16) & 0x8000u;
          const int e = static_cast<int>((u >> 23) & 0xff) - 127 + 15;
          h = e <= 0 ? static_cast<uint16_t>(sign)
                     : static_cast<uint16_t>(sign | (std::min(e, 30) << 10) | ((u >> 13) & 0x3ffu));
        }
        data.push_back(static_cast<uint8_t>(h & 0xff));
        data.push_back(static_cast<uint8_t>(h >> 8));
      }
      std::string shape;
      for (size_t i = 0; i < info.shape.size(); ++i)
        shape += (i ? "," : "") + std::to_string(info.shape[i]);
      header += (header.size() > 1 ? "," : "") + std::string("\"") + name + "\":{\"dtype\":\"" +
                dtype + "\",\"shape\":[" + shape + "],\"data_offsets\":[" +
                std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
    }
    header += "}";
    std::vector<uint8_t> file(8);
    put<uint64_t>(file, 0, header.size());
    file.insert(file.end(), header.begin(), header.end());
    file.insert(file.end(), data.begin(), data.end());
    write_bytes(tmp.file("model.safetensors"), file);

    const LlamaSource s = open_llama_source(tmp.str());
    ASSERT_EQ(s.tensors.size(), bin.tensors.size());
    cibench::SafetensorsFile half(tmp.file("model.safetensors"));
    EXPECT_EQ(half.get("model.norm.weight").dtype, dtype);
    for (const auto& [name, tb] : bin.tensors) {
      SCOPED_TRACE(name);
      const std::vector<float> want = tb.read_all(), got = s.tensor(name).read_all();
      ASSERT_EQ(want.size(), got.size());
      for (size_t i = 0; i < want.size(); ++i) {
        // Relative error of truncation: 2^-7 for bf16, 2^-10 for f16 (plus flushed tiny values).
        const float tol = dtype == "BF16" ? std::ldexp(std::fabs(want[i]), -7)
                                          : std::ldexp(std::fabs(want[i]), -10) + 6.2e-5f;
        ASSERT_LE(std::fabs(got[i] - want[i]), tol) << i;
      }
    }
  }
}

// -------------------------------------------------------------------------------------------
// A small GGUF writer for files the shared folder does not have (F16 tensors, tied output).

namespace {

class GgufWriter {
 public:
  void kv_u32(const std::string& k, uint32_t v) { key(k, 4); pod(kv_, v); }
  void kv_f32(const std::string& k, float v) { key(k, 6); pod(kv_, v); }
  void kv_str(const std::string& k, const std::string& v) { key(k, 8); string(kv_, v); }
  void kv_str_array(const std::string& k, const std::vector<std::string>& v) {
    key(k, 9);
    pod(kv_, uint32_t{8});
    pod(kv_, uint64_t{v.size()});
    for (const auto& s : v) string(kv_, s);
  }
  void tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type,
              const std::vector<uint8_t>& bytes) {
    while (data_.size() % 32) data_.push_back(0);
    string(info_, name);
    pod(info_, static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) pod(info_, d);
    pod(info_, type);
    pod(info_, uint64_t{data_.size()});
    data_.insert(data_.end(), bytes.begin(), bytes.end());
    ++n_tensors_;
  }
  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
    pod(out, uint32_t{3});
    pod(out, n_tensors_);
    pod(out, n_kv_);
    out.insert(out.end(), kv_.begin(), kv_.end());
    out.insert(out.end(), info_.begin(), info_.end());
    while (out.size() % 32) out.push_back(0);
    out.insert(out.end(), data_.begin(), data_.end());
    return out;
  }

 private:
  template <typename T>
  static void pod(std::vector<uint8_t>& b, T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
  }
  static void string(std::vector<uint8_t>& b, const std::string& s) {
    pod(b, uint64_t{s.size()});
    b.insert(b.end(), s.begin(), s.end());
  }
  void key(const std::string& k, uint32_t type) {
    string(kv_, k);
    pod(kv_, type);
    ++n_kv_;
  }
  std::vector<uint8_t> kv_, info_, data_;
  uint64_t n_kv_ = 0, n_tensors_ = 0;
};

}  // namespace

TEST(Loaders, GgufF16TiedModelFromScratch) {
  TempDir tmp;
  const int dim = 16, hidden = 40, layers = 2, heads = 4, kv_heads = 2, vocab = 24, ctx = 32;
  const int kv = dim / heads * kv_heads;
  GgufWriter w;
  w.kv_str("general.architecture", "llama");
  w.kv_u32("llama.embedding_length", dim);
  w.kv_u32("llama.feed_forward_length", hidden);
  w.kv_u32("llama.block_count", layers);
  w.kv_u32("llama.attention.head_count", heads);
  w.kv_u32("llama.attention.head_count_kv", kv_heads);
  w.kv_u32("llama.context_length", ctx);
  w.kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-6f);
  w.kv_f32("llama.rope.freq_base", 500000.0f);
  std::vector<std::string> toks;
  for (int i = 0; i < vocab; ++i) toks.push_back("t" + std::to_string(i));
  w.kv_str_array("tokenizer.ggml.tokens", toks);

  std::mt19937 rng(7);
  std::map<std::string, std::vector<uint16_t>> written;  // canonical name -> f16 bits
  auto add = [&](const std::string& gname, const std::string& cname, int rows, int cols) {
    std::vector<uint16_t> h(static_cast<size_t>(rows) * cols);
    for (auto& x : h) {
      do x = static_cast<uint16_t>(rng() & 0xffff);
      while (((x >> 10) & 31) == 31);  // finite values only
    }
    std::vector<uint8_t> bytes(h.size() * 2);
    std::memcpy(bytes.data(), h.data(), bytes.size());
    std::vector<uint64_t> dims = {static_cast<uint64_t>(cols)};
    if (rows > 1 || cname == "tok_embeddings") dims.push_back(static_cast<uint64_t>(rows));
    w.tensor(gname, dims, 1, bytes);
    written[cname] = h;
  };
  add("token_embd.weight", "tok_embeddings", vocab, dim);
  add("output_norm.weight", "norm", 1, dim);
  for (int l = 0; l < layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".", c = "layers." + std::to_string(l) + ".";
    add(b + "attn_norm.weight", c + "attention_norm", 1, dim);
    add(b + "ffn_norm.weight", c + "ffn_norm", 1, dim);
    add(b + "attn_q.weight", c + "wq", dim, dim);
    add(b + "attn_k.weight", c + "wk", kv, dim);
    add(b + "attn_v.weight", c + "wv", kv, dim);
    add(b + "attn_output.weight", c + "wo", dim, dim);
    add(b + "ffn_gate.weight", c + "w1", hidden, dim);
    add(b + "ffn_down.weight", c + "w2", dim, hidden);
    add(b + "ffn_up.weight", c + "w3", hidden, dim);
  }
  write_bytes(tmp.file("tiny.gguf"), w.bytes());

  const LlamaSource s = open_llama_source(tmp.file("tiny.gguf"));
  EXPECT_EQ(s.config.dim, dim);
  EXPECT_EQ(s.config.hidden_dim, hidden);
  EXPECT_EQ(s.config.n_layers, layers);
  EXPECT_EQ(s.config.n_heads, heads);
  EXPECT_EQ(s.config.n_kv_heads, kv_heads);
  EXPECT_EQ(s.config.vocab_size, vocab);
  EXPECT_EQ(s.config.seq_len, ctx);
  EXPECT_FLOAT_EQ(s.config.norm_eps, 1e-6f);
  EXPECT_FLOAT_EQ(s.config.rope_theta, 500000.0f);
  EXPECT_TRUE(s.config.tied_output);  // no output.weight
  EXPECT_EQ(s.tensors.size(), written.size());
  for (const auto& [name, h] : written) {
    SCOPED_TRACE(name);
    const auto got = s.tensor(name).read_all();
    ASSERT_EQ(got.size(), h.size());
    for (size_t i = 0; i < h.size(); ++i)
      ASSERT_EQ(bits_of({got[i]})[0], bits_of({cibench::f16_to_f32(h[i])})[0]) << i;
    // Reading a block of rows from the middle gives the same values as read_all.
    const auto& t = s.tensor(name);
    if (t.rows > 2) {
      std::vector<float> part(static_cast<size_t>(t.cols) * 2);
      t.read(1, 2, part.data());
      for (size_t i = 0; i < part.size(); ++i)
        ASSERT_EQ(bits_of({part[i]})[0], bits_of({got[t.cols + i]})[0]);
    }
  }
}

// -------------------------------------------------------------------------------------------
// Bad files: each fails with a FileError naming the file and the problem.

TEST(LoadersBadFiles, MissingFileAndFolderWithoutConfig) {
  TempDir tmp;
  expect_open_fails(tmp.file("nope.bin"), {"no such file"});
  expect_open_fails(tmp.file("nope.gguf"), {"no such file"});
  expect_open_fails(tmp.str(), {"no config.json"});
}

TEST(LoadersBadFiles, TruncatedBin) {
  CIBENCH_REQUIRE_SHARED(kBin);
  TempDir tmp;
  auto b = read_bytes(shared(kBin));
  const size_t full = b.size();
  b.resize(500000);
  write_bytes(tmp.file("t.bin"), b);
  expect_open_fails(tmp.file("t.bin"),
                    {"truncated", "implies " + std::to_string(full) + " bytes",
                     "the file has 500000 bytes"});
  b.resize(20);  // shorter than the header itself
  write_bytes(tmp.file("tiny.bin"), b);
  expect_open_fails(tmp.file("tiny.bin"), {"too short", "20 bytes"});
}

TEST(LoadersBadFiles, BinHeaderLargerThanFile) {
  CIBENCH_REQUIRE_SHARED(kBin);
  TempDir tmp;
  auto b = read_bytes(shared(kBin));
  put<int32_t>(b, 8, 50);  // n_layers 5 -> 50
  write_bytes(tmp.file("h.bin"), b);
  expect_open_fails(tmp.file("h.bin"),
                    {"n_layers=50", "the file has " + std::to_string(b.size()) + " bytes"});
}

TEST(LoadersBadFiles, BinNonPositiveDimension) {
  CIBENCH_REQUIRE_SHARED(kBin);
  TempDir tmp;
  for (const auto& [field, value] : std::vector<std::pair<int, int32_t>>{
           {0, -64}, {1, 0}, {3, 0}, {6, -1}, {5, std::numeric_limits<int32_t>::min()}}) {
    SCOPED_TRACE(field);
    auto b = read_bytes(shared(kBin));
    put<int32_t>(b, static_cast<size_t>(field) * 4, value);
    write_bytes(tmp.file("d.bin"), b);
    expect_open_fails(tmp.file("d.bin"), {"invalid"});
  }
  auto b = read_bytes(shared(kBin));
  put<int32_t>(b, 0, -64);
  write_bytes(tmp.file("neg.bin"), b);
  expect_open_fails(tmp.file("neg.bin"), {"must be positive", "dim=-64"});
}

TEST(LoadersBadFiles, BinWithNaNWeight) {
  CIBENCH_REQUIRE_SHARED(kBin);
  TempDir tmp;
  auto b = read_bytes(shared(kBin));
  // layers.0.wq starts after the header, the embeddings and rms_att: row 3, column 5.
  const size_t wq0 = 28 + 4 * (512 * 64 + 5 * 64);
  put<float>(b, wq0 + 4 * (3 * 64 + 5), std::numeric_limits<float>::quiet_NaN());
  write_bytes(tmp.file("nan.bin"), b);
  expect_open_fails(tmp.file("nan.bin"), {"tensor 'layers.0.wq'", "non-finite", "row 3, column 5"});
}

TEST(LoadersBadFiles, GgufMagicAndVersion) {
  CIBENCH_REQUIRE_SHARED(kGguf);
  TempDir tmp;
  auto b = read_bytes(shared(kGguf));
  b[3] = 'X';
  write_bytes(tmp.file("magic.gguf"), b);
  expect_open_fails(tmp.file("magic.gguf"), {"not a GGUF file", "magic"});

  b = read_bytes(shared(kGguf));
  put<uint32_t>(b, 4, 7);
  write_bytes(tmp.file("v7.gguf"), b);
  expect_open_fails(tmp.file("v7.gguf"), {"unsupported GGUF version 7"});

  put<uint32_t>(b, 4, 1);
  write_bytes(tmp.file("v1.gguf"), b);
  expect_open_fails(tmp.file("v1.gguf"), {"unsupported GGUF version 1"});

  put<uint32_t>(b, 4, 2);  // v2 has the same layout as v3 and is accepted
  write_bytes(tmp.file("v2.gguf"), b);
  EXPECT_EQ(GgufFile(tmp.file("v2.gguf")).version(), 2u);
}

TEST(LoadersBadFiles, GgufTensorOffsetPastEnd) {
  CIBENCH_REQUIRE_SHARED(kGguf);
  TempDir tmp;
  auto b = read_bytes(shared(kGguf));
  // output_norm.weight: name, n_dims (u32 = 1), dims[0] (u64), type (u32), offset (u64).
  const size_t off = after_gguf_string(b, "output_norm.weight") + 4 + 8 + 4;
  ASSERT_EQ(get<uint64_t>(b, off), 131072u);  // as the file was written
  put<uint64_t>(b, off, uint64_t{1} << 32);
  write_bytes(tmp.file("off.gguf"), b);
  expect_open_fails(tmp.file("off.gguf"), {"tensor 'output_norm.weight'", "past the end"});
}

TEST(LoadersBadFiles, GgufHugeStringLengthAndArrayCount) {
  CIBENCH_REQUIRE_SHARED(kGguf);
  TempDir tmp;
  auto b = read_bytes(shared(kGguf));
  put<uint64_t>(b, 24, uint64_t{1} << 40);  // the first metadata key's length
  write_bytes(tmp.file("str.gguf"), b);
  expect_open_fails(tmp.file("str.gguf"), {"string length 1099511627776", "bytes left"});

  b = read_bytes(shared(kGguf));
  // The first key is tokenizer.ggml.tokens: type (u32 = array), element type, count.
  const size_t count_at = after_gguf_string(b, "tokenizer.ggml.tokens") + 4 + 4;
  ASSERT_EQ(get<uint64_t>(b, count_at), 512u);
  put<uint64_t>(b, count_at, uint64_t{1} << 62);
  write_bytes(tmp.file("arr.gguf"), b);
  expect_open_fails(tmp.file("arr.gguf"), {"tokenizer.ggml.tokens", "array count", "bytes"});

  b = read_bytes(shared(kGguf));
  put<uint64_t>(b, 8, uint64_t{1} << 60);  // tensor count
  write_bytes(tmp.file("nt.gguf"), b);
  expect_open_fails(tmp.file("nt.gguf"), {"tensor count"});
}

TEST(LoadersBadFiles, GgufUnsupportedTensorType) {
  CIBENCH_REQUIRE_SHARED(kGguf);
  TempDir tmp;
  auto b = read_bytes(shared(kGguf));
  const size_t type_at = after_gguf_string(b, "blk.0.attn_q.weight") + 4 + 8 + 8;
  ASSERT_EQ(get<uint32_t>(b, type_at), 0u);
  put<uint32_t>(b, type_at, 20);  // IQ4_NL: 32-value blocks of 18 bytes, a type cibench does not read
  write_bytes(tmp.file("iq4.gguf"), b);
  expect_open_fails(tmp.file("iq4.gguf"),
                    {"tensor 'blk.0.attn_q.weight' has type IQ4_NL; cibench reads "
                     "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K GGUF tensors"});
  put<uint32_t>(b, type_at, 12);  // Q4_K: 64 columns are not a whole 256-value block
  write_bytes(tmp.file("q4k.gguf"), b);
  expect_open_fails(tmp.file("q4k.gguf"), {"blk.0.attn_q.weight", "Q4_K", "block size 256"});
  put<uint32_t>(b, type_at, 99);
  write_bytes(tmp.file("t99.gguf"), b);
  expect_open_fails(tmp.file("t99.gguf"), {"blk.0.attn_q.weight", "unknown ggml type 99"});
}

TEST(LoadersBadFiles, GgufWrongArchitecture) {
  CIBENCH_REQUIRE_SHARED(kGguf);
  TempDir tmp;
  auto b = read_bytes(shared(kGguf));
  const size_t at = after_gguf_string(b, "general.architecture") + 4 + 8;
  std::memcpy(b.data() + at, "gpt2x", 5);  // same length as "llama"
  write_bytes(tmp.file("arch.gguf"), b);
  expect_open_fails(tmp.file("arch.gguf"), {"general.architecture is 'gpt2x'"});
}

namespace {
// A copy of the HF folder in `tmp`, with config.json edited by `edit`.
void copy_hf(const TempDir& tmp, const std::function<void(std::string&)>& edit = nullptr) {
  std::string cfg;
  {
    std::ifstream in(shared(kHf) + "/config.json");
    cfg.assign(std::istreambuf_iterator<char>(in), {});
  }
  if (edit) edit(cfg);
  write_text(tmp.file("config.json"), cfg);
  fs::copy_file(shared(kHf) + "/model.safetensors", tmp.file("model.safetensors"));
}

void replace(std::string& s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  s.replace(at, from.size(), to);
}
}  // namespace

TEST(LoadersBadFiles, SafetensorsHeaderLengthPastEnd) {
  CIBENCH_REQUIRE_SHARED(kHf);
  TempDir tmp;
  copy_hf(tmp);
  auto b = read_bytes(tmp.file("model.safetensors"));
  put<uint64_t>(b, 0, uint64_t{1} << 40);
  write_bytes(tmp.file("model.safetensors"), b);
  expect_open_fails(tmp.str(), {"header length 1099511627776", "past the end"},
                    tmp.file("model.safetensors"));
}

TEST(LoadersBadFiles, SafetensorsBadHeaderContents) {
  CIBENCH_REQUIRE_SHARED(kHf);
  TempDir tmp;
  copy_hf(tmp);
  const auto orig = read_bytes(tmp.file("model.safetensors"));
  const uint64_t n = get<uint64_t>(orig, 0);
  std::string header(orig.begin() + 8, orig.begin() + 8 + static_cast<long>(n));
  auto with_header = [&](const std::string& h) {
    std::vector<uint8_t> b(8);
    put<uint64_t>(b, 0, h.size());
    b.insert(b.end(), h.begin(), h.end());
    b.insert(b.end(), orig.begin() + 8 + static_cast<long>(n), orig.end());
    write_bytes(tmp.file("model.safetensors"), b);
  };
  const std::string path = tmp.file("model.safetensors");
  // Not JSON.
  with_header("{\"a\": [1, 2");
  expect_open_fails(tmp.str(), {"not valid JSON"}, path);
  // A tensor whose data_offsets end past the data section: named.
  std::string h = header;
  replace(h, "\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[64],\"data_offsets\":[",
          "\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[64],\"data_offsets\":[99999999");
  with_header(h);
  expect_open_fails(tmp.str(), {"tensor 'model.norm.weight'"}, path);
  // A shape that does not match the byte range.
  h = header;
  replace(h, "\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[64]",
          "\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[65]");
  with_header(h);
  expect_open_fails(tmp.str(), {"tensor 'model.norm.weight'", "needs 260"}, path);
}

TEST(LoadersBadFiles, HfConfigDisagreesWithTensors) {
  CIBENCH_REQUIRE_SHARED(kHf);
  TempDir tmp;
  copy_hf(tmp, [](std::string& c) { replace(c, "\"intermediate_size\": 172", "\"intermediate_size\": 96"); });
  expect_open_fails(tmp.str(),
                    {"tensor 'model.layers.0.mlp.gate_proj.weight'", "has shape [172, 64]",
                     "implies [96, 64]", "config.json"},
                    tmp.file("model.safetensors"));
}

TEST(LoadersBadFiles, HfConfigErrorsNameConfigJson) {
  CIBENCH_REQUIRE_SHARED(kHf);
  {
    TempDir tmp;
    copy_hf(tmp, [](std::string& c) { replace(c, "\"hidden_size\": 64,", ""); });
    expect_open_fails(tmp.str(), {"missing 'hidden_size'"}, tmp.file("config.json"));
  }
  {
    TempDir tmp;
    copy_hf(tmp, [](std::string& c) { c += "}"; });
    expect_open_fails(tmp.str(), {"not valid JSON"}, tmp.file("config.json"));
  }
  {
    TempDir tmp;
    copy_hf(tmp, [](std::string& c) { replace(c, "\"num_attention_heads\": 8", "\"num_attention_heads\": 7"); });
    expect_open_fails(tmp.str(), {"not a multiple of n_heads"}, tmp.file("config.json"));
  }
  {
    TempDir tmp;
    copy_hf(tmp, [](std::string& c) { replace(c, "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false"); });
    expect_open_fails(tmp.str(), {"lm_head.weight", "tie_word_embeddings"});
  }
}

// A FIFO named as a model, tokenizer, text slice or any file cibench reads is refused at once
// (opening it would wait forever for a writer); so is a folder where a file is expected.
TEST(Loaders, FifosAndFoldersAreRefusedWithoutBlocking) {
  const fs::path dir = fs::temp_directory_path() / ("cibench_fifo_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string fifo = (dir / "model.bin").string();
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto error_of = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const cibench::FileError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string want = "is a FIFO, expected a regular file";
  EXPECT_NE(error_of([&] { cibench::MappedFile m(fifo); }).find(want), std::string::npos);
  EXPECT_NE(error_of([&] { cibench::read_file(fifo); }).find(want), std::string::npos);
  EXPECT_NE(error_of([&] { cibench::open_llama_source(fifo); }).find(fifo), std::string::npos);
  EXPECT_NE(error_of([&] { cibench::load_slice(cibench::TextSlice::parse(fifo)); }).find(want), std::string::npos);
  EXPECT_NE(error_of([&] { cibench::read_file(dir.string()); }).find("is a directory, expected a regular file"),
            std::string::npos);
  fs::remove_all(dir);
}
