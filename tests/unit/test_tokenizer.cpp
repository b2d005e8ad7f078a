// Tokenizers: llama.cpp's Llama SentencePiece test vectors through the GGUF vocabulary and
// libsentencepiece, llama2.c tokenizer.bin against SentencePiece and against a literal port of
// run.c's encode(), the stories260K vocabulary in two formats, and malformed files.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/models/gguf.h"
#include "engines/models/tokenizer.h"
#include "test_support.h"
#include "tokenizer_vectors.h"

namespace cibench {
namespace {

using test::shared_path;

const char* kVectorsGguf = "models/tokenizer-test-vectors/ggml-vocab-llama-spm.gguf";
const char* kSpModel = "models/llama2-tokenizer-32k/tokenizer.model";
const char* kBin32k = "models/llama2-tokenizer-32k/tokenizer.bin";
const char* kTok512 = "models/stories260K/tok512.bin";
const char* kStoriesGguf = "models/stories260K/gguf/stories260K.gguf";
const char* kStories = "data/tinystories-validation-1000/tinystories_val_first1000.txt";

// ---------------------------------------------------------------- helpers

using test::escaped;
using test::ids_str;

std::vector<std::string> split(const std::string& s, const std::string& sep) { return test::split_all(s, sep); }

std::vector<test::TokenizerVector> read_vectors(const std::string& rel) { return test::read_tokenizer_vectors(rel); }

// The stories of the TinyStories file, each without its "<|endoftext|>" line.
std::vector<std::string> read_stories(size_t n) {
  std::vector<std::string> all = split(read_file(shared_path(kStories)), "\n<|endoftext|>\n");
  if (!all.empty() && all.back().empty()) all.pop_back();
  if (all.size() > n) all.resize(n);
  return all;
}

// A scratch folder per test process, removed when the process ends.
struct ScratchDir {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("cibench_tok_" + std::to_string(::getpid()));
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

std::string scratch(const std::string& name) {
  static ScratchDir s;
  std::filesystem::create_directories(s.dir);
  return (s.dir / name).string();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

template <typename T>
void put(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  s.append(b, sizeof(T));
}

// A llama2.c tokenizer.bin from pieces and scores.
std::string llama2c_bytes(int32_t max_len, const std::vector<std::pair<std::string, float>>& v) {
  std::string s;
  put<int32_t>(s, max_len);
  for (const auto& [piece, score] : v) {
    put<float>(s, score);
    put<int32_t>(s, static_cast<int32_t>(piece.size()));
    s += piece;
  }
  return s;
}

// llama2.c's vocabulary layout: <unk>, BOS, EOS, 256 byte pieces, then `rest` with scores.
std::vector<std::pair<std::string, float>> llama2c_vocab(
    const std::vector<std::pair<std::string, float>>& rest) {
  std::vector<std::pair<std::string, float>> v = {{"<unk>", 0}, {"\n<s>\n", 0}, {"\n</s>\n", 0}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    v.emplace_back(name, 0.0f);
  }
  v.insert(v.end(), rest.begin(), rest.end());
  return v;
}

// A minimal GGUF v3 writer (metadata only, no tensors) for vocabulary tests.
class GgufWriter {
 public:
  void str(const std::string& key, const std::string& v) {
    head(key, 8);
    string(v);
  }
  void u32(const std::string& key, uint32_t v) {
    head(key, 4);
    put<uint32_t>(kv_, v);
  }
  void boolean(const std::string& key, bool v) {
    head(key, 7);
    put<uint8_t>(kv_, v ? 1 : 0);
  }
  void strings(const std::string& key, const std::vector<std::string>& v) {
    head(key, 9);
    put<uint32_t>(kv_, 8);
    put<uint64_t>(kv_, v.size());
    for (const auto& s : v) string(s);
  }
  void floats(const std::string& key, const std::vector<float>& v) {
    head(key, 9);
    put<uint32_t>(kv_, 6);
    put<uint64_t>(kv_, v.size());
    for (float f : v) put<float>(kv_, f);
  }
  void ints(const std::string& key, const std::vector<int32_t>& v) {
    head(key, 9);
    put<uint32_t>(kv_, 5);
    put<uint64_t>(kv_, v.size());
    for (int32_t x : v) put<int32_t>(kv_, x);
  }
  std::string bytes() const {
    std::string s = "GGUF";
    put<uint32_t>(s, 3);
    put<uint64_t>(s, 0);  // tensors
    put<uint64_t>(s, n_);
    s += kv_;
    while (s.size() % 32) s.push_back('\0');
    return s;
  }

 private:
  void string(const std::string& v) {
    put<uint64_t>(kv_, v.size());
    kv_ += v;
  }
  void head(const std::string& key, uint32_t type) {
    string(key);
    put<uint32_t>(kv_, type);
    ++n_;
  }
  std::string kv_;
  uint64_t n_ = 0;
};

// A literal port of llama2.c run.c encode() (O(n^2) pair scan, sorted-vocab lookup) as the
// oracle for the library's heap-based version.
std::vector<int> run_c_encode(const std::vector<std::string>& vocab,
                              const std::vector<float>& scores, const std::string& text,
                              bool bos, bool eos) {
  std::unordered_map<std::string, int> sorted;
  for (size_t i = 0; i < vocab.size(); ++i) sorted.emplace(vocab[i], static_cast<int>(i));
  auto lookup = [&](const std::string& s) {
    auto it = sorted.find(s);
    return it == sorted.end() ? -1 : it->second;
  };
  std::vector<int> tokens;
  if (bos) tokens.push_back(1);
  if (!text.empty()) tokens.push_back(lookup(" "));
  std::string buf;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((text[i] & 0xC0) != 0x80) buf.clear();
    buf.push_back(text[i]);
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if ((next & 0xC0) == 0x80 && buf.size() < 4) continue;
    const int id = lookup(buf);
    if (id != -1) {
      tokens.push_back(id);
    } else {
      for (char c : buf) tokens.push_back(static_cast<unsigned char>(c) + 3);
    }
    buf.clear();
  }
  for (;;) {
    float best_score = -1e10f;
    int best_id = -1, best_idx = -1;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      const int id = lookup(vocab[tokens[i]] + vocab[tokens[i + 1]]);
      if (id != -1 && scores[id] > best_score) {
        best_score = scores[id];
        best_id = id;
        best_idx = static_cast<int>(i);
      }
    }
    if (best_idx == -1) break;
    tokens[best_idx] = best_id;
    tokens.erase(tokens.begin() + best_idx + 1);
  }
  if (eos) tokens.push_back(2);
  return tokens;
}

void read_llama2c(const std::string& path, std::vector<std::string>& vocab,
                  std::vector<float>& scores) {
  const std::string d = read_file(path);
  size_t pos = 4;
  while (pos + 8 <= d.size()) {
    float s;
    int32_t len;
    std::memcpy(&s, d.data() + pos, 4);
    std::memcpy(&len, d.data() + pos + 4, 4);
    pos += 8;
    vocab.push_back(d.substr(pos, static_cast<size_t>(len)));
    scores.push_back(s);
    pos += static_cast<size_t>(len);
  }
}

// The text of ids[1..] as a generation loop prints it; ids[0] (BOS) is only context.
std::string decode_all(const Tokenizer& t, const std::vector<int>& ids) {
  std::string s;
  for (size_t i = 1; i < ids.size(); ++i) s += t.decode(ids[i - 1], ids[i]);
  return s;
}

// Expects `fn` to throw FileError for `path` with `needle` in the message.
template <typename F>
void expect_file_error(const std::string& path, const std::string& needle, F fn) {
  try {
    fn();
    ADD_FAILURE() << "no FileError for " << path;
  } catch (const FileError& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << needle;
  }
}

// ---------------------------------------------------------------- llama.cpp test vectors

TEST(TokenizerVectors, GgufVocabMatchesLlamaCpp) {
  CIBENCH_REQUIRE_SHARED(kVectorsGguf);
  const auto vectors = read_vectors(kVectorsGguf);
  ASSERT_EQ(vectors.size(), 46u);
  const auto tok = open_tokenizer(shared_path(kVectorsGguf));
  EXPECT_EQ(tok->kind(), "gguf-spm");
  EXPECT_EQ(tok->vocab_size(), 32000);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  for (const auto& v : vectors) {
    EXPECT_EQ(ids_str(tok->encode(v.text, false, false)), ids_str(v.ids))
        << "text " << escaped(v.text);
  }
}

// libsentencepiece adds the dummy "▁" prefix itself, so it gets the raw strings exactly as
// llama.cpp's test passes them; all 46 agree, the whitespace-only strings included (the Llama
// model normalises with "identity" and keeps repeated spaces).
TEST(TokenizerVectors, SentencePieceMatchesLlamaCpp) {
  CIBENCH_REQUIRE_SHARED(kSpModel);
  CIBENCH_REQUIRE_SHARED(kVectorsGguf);
  const auto vectors = read_vectors(kVectorsGguf);
  const auto tok = open_tokenizer(shared_path(kSpModel));
  EXPECT_EQ(tok->kind(), "sentencepiece");
  EXPECT_EQ(tok->vocab_size(), 32000);
  for (const auto& v : vectors) {
    EXPECT_EQ(ids_str(tok->encode(v.text, false, false)), ids_str(v.ids))
        << "text " << escaped(v.text);
  }
}

// The same strings with BOS/EOS through both, and decoding back to the text.
TEST(TokenizerVectors, BosEosAndRoundTrip) {
  CIBENCH_REQUIRE_SHARED(kVectorsGguf);
  CIBENCH_REQUIRE_SHARED(kSpModel);
  const auto vectors = read_vectors(kVectorsGguf);
  const auto gguf = open_tokenizer(shared_path(kVectorsGguf));
  const auto sp = open_tokenizer(shared_path(kSpModel));
  for (const auto& v : vectors) {
    std::vector<int> expect = v.ids;
    expect.insert(expect.begin(), 1);
    expect.push_back(2);
    EXPECT_EQ(gguf->encode(v.text, true, true), expect) << escaped(v.text);
    // Decoding after BOS drops the dummy prefix space; EOS prints nothing.
    EXPECT_EQ(decode_all(*gguf, expect), v.text) << escaped(v.text);
    EXPECT_EQ(decode_all(*sp, expect), v.text) << escaped(v.text);
  }
  EXPECT_TRUE(gguf->encode("", false, false).empty());
  EXPECT_EQ(gguf->encode("", true, false), std::vector<int>{1});
}

// ---------------------------------------------------------------- llama2.c tokenizer.bin

TEST(TokenizerLlama2c, Matches32kSentencePieceOnTinyStories) {
  CIBENCH_REQUIRE_SHARED(kBin32k);
  CIBENCH_REQUIRE_SHARED(kSpModel);
  CIBENCH_REQUIRE_SHARED(kStories);
  const auto bin = open_tokenizer(shared_path(kBin32k), 32000);
  const auto sp = open_tokenizer(shared_path(kSpModel));
  EXPECT_EQ(bin->kind(), "llama2c");
  EXPECT_EQ(bin->vocab_size(), 32000);
  const auto stories = read_stories(50);
  ASSERT_EQ(stories.size(), 50u);
  size_t n_tokens = 0;
  for (const auto& s : stories) {
    const auto ids = bin->encode(s, true, false);
    EXPECT_EQ(ids, sp->encode(s, true, false)) << escaped(s.substr(0, 80));
    EXPECT_EQ(decode_all(*bin, ids), s);
    n_tokens += ids.size();
  }
  EXPECT_GT(n_tokens, 5000u);
}

TEST(TokenizerLlama2c, HeapEncoderMatchesRunC) {
  CIBENCH_REQUIRE_SHARED(kTok512);
  CIBENCH_REQUIRE_SHARED(kStories);
  std::vector<std::string> vocab;
  std::vector<float> scores;
  read_llama2c(shared_path(kTok512), vocab, scores);
  ASSERT_EQ(vocab.size(), 512u);
  const auto tok = open_tokenizer(shared_path(kTok512));  // no hint: read to the end
  EXPECT_EQ(tok->vocab_size(), 512);
  std::vector<std::string> texts = read_stories(12);
  // Awkward inputs: invalid UTF-8, a run of continuation bytes (run.c looks up at most 4 bytes
  // at a time), spaces only, a NUL byte, characters outside the vocabulary.
  texts.insert(texts.end(), {"", " ", "  ", "a", "\xE2\x96\x81", "\x80\x80\x80\x80\x80\x80x",
                             "\xF0\x9F\x98\x81\x80\x80 emoji", "caf\xC3\xA9 \xC3", "tab\there",
                             std::string("nul\0byte", 8), "\n\n\nThe end.\n"});
  for (const auto& t : texts) {
    for (bool bos_eos : {false, true}) {
      EXPECT_EQ(tok->encode(t, bos_eos, bos_eos), run_c_encode(vocab, scores, t, bos_eos, bos_eos))
          << escaped(t.substr(0, 60));
    }
  }
}

TEST(TokenizerLlama2c, DecodeConventions) {
  CIBENCH_REQUIRE_SHARED(kTok512);
  const auto tok = open_tokenizer(shared_path(kTok512), 512);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  // Byte fallback: a character not in the vocabulary becomes its UTF-8 bytes, ids b + 3.
  const std::string smile = "\xF0\x9F\x98\x81";
  const auto ids = tok->encode(smile, false, false);
  ASSERT_EQ(ids.size(), 5u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ids[i + 1], static_cast<unsigned char>(smile[i]) + 3);
  // Byte pieces print as the raw byte, also right after BOS.
  EXPECT_EQ(tok->decode(1, 0x0A + 3), "\n");
  EXPECT_EQ(tok->decode(1, 0x20 + 3), " ");
  // The leading space of a piece is dropped only after BOS.
  const auto once = tok->encode("Once", false, false);
  std::string joined;
  for (int id : once) joined += tok->decode(5, id);
  EXPECT_EQ(joined, " Once");
  EXPECT_EQ(decode_all(*tok, tok->encode("Once", true, false)), "Once");
  EXPECT_THROW(tok->decode(1, 512), Error);
  EXPECT_THROW(tok->decode(1, -1), Error);
}

// A tiny hand-made vocabulary where the merge order matters: "ab" (score 1) beats "bc"
// (score 0.5), so "abc" is " " "ab" "c"; ties go to the leftmost pair.
TEST(TokenizerLlama2c, MergeOrderOnHandMadeVocabulary) {
  const std::string path = scratch("tiny.bin");
  write_bytes(path, llama2c_bytes(6, llama2c_vocab({{" ", 0},     // 259
                                                     {"a", 0},     // 260
                                                     {"b", 0},     // 261
                                                     {"c", 0},     // 262
                                                     {"ab", 1},    // 263
                                                     {"bc", 0.5f}, // 264
                                                     {"abc", 2},   // 265
                                                     {"aa", 3}})));// 266
  const auto tok = open_tokenizer(path);
  EXPECT_EQ(tok->vocab_size(), 267);
  EXPECT_EQ(tok->encode("abc", false, false), (std::vector<int>{259, 265}));
  EXPECT_EQ(tok->encode("bcab", false, false), (std::vector<int>{259, 264, 263}));
  EXPECT_EQ(tok->encode("aaa", false, false), (std::vector<int>{259, 266, 260}));
  EXPECT_EQ(tok->encode("d", true, true), (std::vector<int>{1, 259, 'd' + 3, 2}));
}

// ---------------------------------------------------------------- stories260K: two formats

TEST(TokenizerStories260K, GgufVocabMatchesTok512AndRoundTrips) {
  CIBENCH_REQUIRE_SHARED(kTok512);
  CIBENCH_REQUIRE_SHARED(kStoriesGguf);
  CIBENCH_REQUIRE_SHARED(kStories);
  const auto bin = open_tokenizer(shared_path(kTok512), 512);
  const auto gguf = open_tokenizer(shared_path(kStoriesGguf));
  EXPECT_EQ(gguf->kind(), "gguf-spm");
  EXPECT_EQ(gguf->vocab_size(), 512);
  EXPECT_EQ(gguf->bos_id(), 1);
  EXPECT_EQ(gguf->eos_id(), 2);
  const GgufFile model_file(shared_path(kStoriesGguf));
  const auto from_model = tokenizer_from_gguf(model_file);
  EXPECT_EQ(from_model->vocab_size(), 512);
  const auto stories = read_stories(100);
  ASSERT_EQ(stories.size(), 100u);
  EXPECT_EQ(from_model->encode(stories[0], true, false), gguf->encode(stories[0], true, false));
  size_t n_byte_tokens = 0;
  for (const auto& s : stories) {
    const auto ids = bin->encode(s, true, true);
    EXPECT_EQ(ids, gguf->encode(s, true, true)) << escaped(s.substr(0, 80));
    const std::vector<int> body(ids.begin(), ids.end() - 1);  // without EOS
    EXPECT_EQ(decode_all(*bin, body), s);
    EXPECT_EQ(decode_all(*gguf, ids), s);  // EOS prints nothing from a GGUF vocabulary
    for (int id : ids) n_byte_tokens += (id >= 3 && id < 259);
  }
  // The stories contain characters outside the 512-piece vocabulary (newlines at least), so
  // byte fallback is exercised.
  EXPECT_GT(n_byte_tokens, 0u);
}

// ---------------------------------------------------------------- GGUF vocabulary options

TEST(TokenizerGguf, UserDefinedPiecesAndNoSpacePrefix) {
  const std::vector<std::string> pieces = {
      "<unk>", "<s>", "</s>", "<0x61>", "<0x62>", "<0x0A>",  // 0..5
      "\xE2\x96\x81", "a", "b", "ab", "\xE2\x96\x81" "a",    // 6..10
      "<tag>", "a<", "b\xE2\x96\x81"};                      // 11..13
  const std::vector<float> scores = {0, 0, 0, 0, 0, 0, -1, -2, -3, -1.5f, -0.5f, 0, 5, 4};
  const std::vector<int32_t> types = {2, 3, 3, 6, 6, 6, 1, 1, 1, 1, 1, 4, 1, 1};
  auto write = [&](const std::string& path, bool prefix_key, bool prefix) {
    GgufWriter w;
    w.str("general.architecture", "llama");
    w.str("tokenizer.ggml.model", "llama");
    w.strings("tokenizer.ggml.tokens", pieces);
    w.floats("tokenizer.ggml.scores", scores);
    w.ints("tokenizer.ggml.token_type", types);
    w.u32("tokenizer.ggml.bos_token_id", 1);
    w.u32("tokenizer.ggml.eos_token_id", 2);
    w.u32("tokenizer.ggml.unknown_token_id", 0);
    if (prefix_key) w.boolean("tokenizer.ggml.add_space_prefix", prefix);
    write_bytes(path, w.bytes());
  };
  const std::string with = scratch("prefix.gguf"), without = scratch("noprefix.gguf");
  write(with, false, true);
  write(without, true, false);
  const auto a = open_tokenizer(with);
  const auto b = open_tokenizer(without);
  EXPECT_EQ(a->vocab_size(), 14);
  // "▁a" (-0.5) beats "ab" (-1.5). "<tag>" is cut out before merging, so "a<" (5) never forms,
  // and, as in llama.cpp, the text after a user-defined piece gets the space prefix again.
  // 'c' is neither a piece nor has a byte piece: <unk>.
  EXPECT_EQ(a->encode("ab", false, false), (std::vector<int>{10, 8}));
  EXPECT_EQ(b->encode("ab", false, false), (std::vector<int>{9}));
  EXPECT_EQ(a->encode("a<tag>ab", false, false), (std::vector<int>{10, 11, 10, 8}));
  EXPECT_EQ(b->encode("a<tag>ab", false, false), (std::vector<int>{7, 11, 9}));
  EXPECT_EQ(b->encode("a<ab", false, false), (std::vector<int>{12, 9}));
  EXPECT_EQ(a->encode("c\n", true, true), (std::vector<int>{1, 6, 0, 5, 2}));
  // "b▁" (score 4) wins over "▁a" (-0.5) in "b a": merges follow the merged piece's score.
  EXPECT_EQ(b->encode("b a", false, false), (std::vector<int>{13, 7}));
  EXPECT_EQ(decode_all(*a, {1, 10, 11, 10, 8}), "a<tag> ab");
  EXPECT_EQ(a->decode(7, 6), " ");
  EXPECT_EQ(a->decode(7, 3), "a");
  EXPECT_EQ(a->decode(7, 1), "");  // control pieces print nothing
}

// ---------------------------------------------------------------- malformed files

TEST(TokenizerFiles, MissingAndUnknown) {
  const std::string missing = scratch("does_not_exist.bin");
  expect_file_error(missing, "does not exist", [&] { open_tokenizer(missing); });
  const std::string odd = scratch("vocab.txt");
  write_bytes(odd, "hello\n");
  expect_file_error(odd, "unknown tokenizer file type", [&] { open_tokenizer(odd); });
  const std::string dir = scratch("adir.model");
  std::filesystem::create_directories(dir);
  expect_file_error(dir, "directory", [&] { open_tokenizer(dir); });
  const std::string hint = scratch("hint.bin");
  write_bytes(hint, llama2c_bytes(5, llama2c_vocab({})));
  expect_file_error(hint, "negative", [&] { open_tokenizer(hint, -4); });
}

TEST(TokenizerFiles, BadLlama2cFiles) {
  const std::string good = llama2c_bytes(6, llama2c_vocab({{" ", 0}, {"ab", 1}}));
  const std::string p = scratch("bad.bin");

  write_bytes(p, "");
  expect_file_error(p, "too short", [&] { open_tokenizer(p); });
  write_bytes(p, good.substr(0, 2));
  expect_file_error(p, "too short", [&] { open_tokenizer(p); });

  std::string neg_max = good;
  const int32_t minus = -7;
  std::memcpy(neg_max.data(), &minus, 4);
  write_bytes(p, neg_max);
  expect_file_error(p, "max_token_length is -7", [&] { open_tokenizer(p); });

  // Cut inside the last piece's bytes and inside the last (score, length) header.
  write_bytes(p, good.substr(0, good.size() - 1));
  expect_file_error(p, "truncated", [&] { open_tokenizer(p); });
  write_bytes(p, good.substr(0, good.size() - 2 - 5));
  expect_file_error(p, "truncated", [&] { open_tokenizer(p); });

  // Only the header: no tokens.
  write_bytes(p, good.substr(0, 4));
  expect_file_error(p, "0 tokens", [&] { open_tokenizer(p); });

  // Negative and absurd lengths for token 0 (after 4 bytes of header and 4 of score).
  for (int32_t len : {-1, INT32_MIN, INT32_MAX, 1 << 30}) {
    std::string b = good;
    std::memcpy(b.data() + 8, &len, 4);
    write_bytes(p, b);
    expect_file_error(p, len < 0 ? "negative length" : "truncated", [&] { open_tokenizer(p); });
  }
  // A piece longer than the header's max_token_length.
  write_bytes(p, llama2c_bytes(2, llama2c_vocab({{"abc", 0}})));
  expect_file_error(p, "max_token_length", [&] { open_tokenizer(p); });

  // More tokens asked for than the file holds.
  write_bytes(p, good);
  EXPECT_EQ(open_tokenizer(p)->vocab_size(), 261);
  EXPECT_EQ(open_tokenizer(p, 100)->vocab_size(), 100);
  expect_file_error(p, "expected 262 tokens", [&] { open_tokenizer(p, 262); });
  expect_file_error(p, "expected 2000000000 tokens", [&] { open_tokenizer(p, 2000000000); });
}

TEST(TokenizerFiles, BadSentencePieceFiles) {
  const std::string p = scratch("bad.model");
  write_bytes(p, "");
  expect_file_error(p, "empty", [&] { open_tokenizer(p); });
  write_bytes(p, std::string("\xFF\xFF\xFF\xFF garbage that is not a protobuf", 36));
  expect_file_error(p, "not a SentencePiece model", [&] { open_tokenizer(p); });
  if (test::have_shared(kSpModel)) {
    const std::string whole = read_file(shared_path(kSpModel));
    write_bytes(p, whole.substr(0, whole.size() / 2));
    expect_file_error(p, "not a SentencePiece model", [&] { open_tokenizer(p); });
  }
}

TEST(TokenizerFiles, BadGgufVocabularies) {
  const std::string p = scratch("bad.gguf");
  write_bytes(p, "not a gguf file at all");
  EXPECT_THROW(
      {
        try {
          open_tokenizer(p);
        } catch (const FileError& e) {
          EXPECT_EQ(e.path(), p);
          throw;
        }
      },
      FileError);

  auto base = [](GgufWriter& w) {
    w.str("general.architecture", "llama");
  };
  {
    GgufWriter w;
    base(w);
    write_bytes(p, w.bytes());
    expect_file_error(p, "no vocabulary", [&] { open_tokenizer(p); });
  }
  {
    GgufWriter w;
    base(w);
    w.str("tokenizer.ggml.model", "gpt2");
    w.strings("tokenizer.ggml.tokens", {"a", "b"});
    write_bytes(p, w.bytes());
    expect_file_error(p, "'gpt2'", [&] { open_tokenizer(p); });
  }
  {
    GgufWriter w;
    base(w);
    w.str("tokenizer.ggml.model", "llama");
    w.strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
    w.floats("tokenizer.ggml.scores", {0, 0, 0});
    write_bytes(p, w.bytes());
    expect_file_error(p, "tokenizer.ggml.scores has 3 entries", [&] { open_tokenizer(p); });
  }
  {
    GgufWriter w;
    base(w);
    w.str("tokenizer.ggml.model", "llama");
    w.strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
    w.ints("tokenizer.ggml.token_type", {2, 3, 3, 9});
    write_bytes(p, w.bytes());
    expect_file_error(p, "token_type[3] is 9", [&] { open_tokenizer(p); });
  }
  {
    GgufWriter w;
    base(w);
    w.str("tokenizer.ggml.model", "llama");
    w.strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
    w.u32("tokenizer.ggml.bos_token_id", 40);
    write_bytes(p, w.bytes());
    expect_file_error(p, "bos_token_id is 40", [&] { open_tokenizer(p); });
  }
  {
    GgufWriter w;
    base(w);
    w.str("tokenizer.ggml.model", "llama");
    w.strings("tokenizer.ggml.tokens", {});
    write_bytes(p, w.bytes());
    expect_file_error(p, "empty", [&] { open_tokenizer(p); });
  }
  {
    GgufWriter w;
    base(w);
    w.str("tokenizer.ggml.model", "llama");
    w.str("tokenizer.ggml.tokens", "not an array");
    write_bytes(p, w.bytes());
    expect_file_error(p, "not an array", [&] { open_tokenizer(p); });
  }
}

}  // namespace
}  // namespace cibench
