// The classifier tokenizers: WordPiece as before, RoBERTa's byte-level BPE framed by <s> </s>
// (a tokenizer.json in RoBERTa's layout holding GPT-2's vocabulary behind fairseq's four special
// tokens, checked against llama.cpp's GPT-2 test vectors) and XLM-R's SentencePiece renumbering.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engines/core/error.h"
#include "engines/models/classifier_tokenizer.h"
#include "engines/models/tokenizer.h"
#include "engines/models/wordpiece.h"
#include "tests/unit/test_support.h"
#include "tests/unit/tokenizer_vectors.h"

namespace cibench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::shared_path;

const char* kGpt2 = "models/tokenizer-test-vectors/ggml-vocab-gpt-2.gguf";

struct Scratch {
  explicit Scratch(const std::string& name)
      : dir((fs::path(::testing::TempDir()) / ("cibench_clstok_" + name + "_" + std::to_string(::getpid()))).string()) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string dir;
};

// RoBERTa's tokenizer.json layout (ByteLevel pre-tokenizer with GPT-2's regex, RobertaProcessing)
// over GPT-2's vocabulary, every GPT-2 id moved up by 4 behind <s> <pad> </s> <unk>: what
// fairseq's dictionary does to RoBERTa's (there with another order of the pieces).
json roberta_tokenizer_json(const VocabPieces& v) {
  json vocab = json::object(), added = json::array();
  const char* specials[] = {"<s>", "<pad>", "</s>", "<unk>"};
  for (int i = 0; i < 4; ++i) {
    vocab[specials[i]] = i;
    added.push_back({{"id", i}, {"content", specials[i]}, {"special", true}, {"single_word", false},
                     {"lstrip", false}, {"rstrip", false}, {"normalized", false}});
  }
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    vocab[v.tokens[i]] = i + 4;
    if (v.types[i] == 3)
      added.push_back({{"id", i + 4}, {"content", v.tokens[i]}, {"special", true}, {"single_word", false},
                       {"lstrip", false}, {"rstrip", false}, {"normalized", false}});
  }
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
          {"post_processor", {{"type", "RobertaProcessing"}, {"sep", {"</s>", 2}}, {"cls", {"<s>", 0}},
                              {"trim_offsets", true}, {"add_prefix_space", false}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"fuse_unk", false},
                     {"byte_fallback", false}, {"vocab", vocab}, {"merges", v.merges}}}};
}

TEST(ClassifierTokenizer, RobertaFramesGpt2ByteLevelBpeWithFairseqIds) {
  CIBENCH_REQUIRE_SHARED(kGpt2);
  const auto gpt2 = open_tokenizer(shared_path(kGpt2));
  const Scratch s("roberta");
  std::ofstream(s.dir + "/tokenizer.json") << roberta_tokenizer_json(gpt2->pieces()).dump();
  for (const std::string& where : {s.dir, s.dir + "/tokenizer.json"}) {
    const auto tok = open_classifier_tokenizer(where);
    EXPECT_EQ(tok->kind(), "bpe");
    EXPECT_EQ(tok->vocab_size(), gpt2->vocab_size() + 4);
    const auto vectors = test::read_tokenizer_vectors("models/tokenizer-test-vectors/ggml-vocab-gpt-2.gguf");
    ASSERT_GT(vectors.size(), 10u);
    for (const auto& v : vectors) {
      std::vector<int> want = {0};
      for (int id : v.ids) want.push_back(id + 4);
      want.push_back(2);
      EXPECT_EQ(tok->encode(v.text, 4096), want) << "text: " << v.text;
    }
    // Truncation keeps <s> and </s>: max_length 5 leaves three pieces.
    const std::vector<int> full = tok->encode("Hello world, this is a longer sentence.", 4096);
    ASSERT_GT(full.size(), 5u);
    const std::vector<int> cut = tok->encode("Hello world, this is a longer sentence.", 5);
    EXPECT_EQ(cut, (std::vector<int>{0, full[1], full[2], full[3], 2}));
    EXPECT_EQ(tok->encode("", 8), (std::vector<int>{0, 2}));
  }
}

TEST(ClassifierTokenizer, XlmrRenumbersSentencePieceAsFairseq) {
  const char* kSpm = "models/llama2-tokenizer-32k/tokenizer.model";
  CIBENCH_REQUIRE_SHARED(kSpm);
  const auto spm = open_tokenizer(shared_path(kSpm));
  const Scratch s("xlmr");
  fs::copy_file(shared_path(kSpm), s.dir + "/sentencepiece.bpe.model");
  const auto tok = open_classifier_tokenizer(s.dir);
  EXPECT_EQ(tok->kind(), "xlmr-sentencepiece");
  EXPECT_EQ(tok->vocab_size(), spm->vocab_size() + 2);
  for (const std::string text : {"Hello world", "Ünïcödé and 数字 123", "a"}) {
    std::vector<int> want = {0};
    for (int id : spm->encode(text, false, false)) {
      ASSERT_NE(id, spm->pieces().unk_id) << "the reference text should not need <unk>";
      want.push_back(id + 1);
    }
    want.push_back(2);
    EXPECT_EQ(tok->encode(text, 512), want) << text;
  }
  EXPECT_EQ(tok->encode("Hello world, and more words", 3).size(), 3u);
  EXPECT_EQ(tok->encode("Hello world, and more words", 3).back(), 2);
}

TEST(ClassifierTokenizer, WordPieceFolderIsTheWordPieceTokenizer) {
  const char* kTiny = "models/bert-tiny-sst2";
  CIBENCH_REQUIRE_SHARED(std::string(kTiny) + "/vocab.txt");
  const auto tok = open_classifier_tokenizer(shared_path(kTiny));
  const WordPieceTokenizer wp = WordPieceTokenizer::from_hf_folder(shared_path(kTiny));
  EXPECT_EQ(tok->kind(), "wordpiece");
  for (const std::string text : {"a gripping, funny film .", "It's NOT bad at all!!", ""})
    for (int max_length : {4, 128}) EXPECT_EQ(tok->encode(text, max_length), wp.encode(text, max_length)) << text;
  const auto via_file = open_classifier_tokenizer(shared_path(std::string(kTiny) + "/vocab.txt"));
  EXPECT_EQ(via_file->encode("It's NOT bad", 32), wp.encode("It's NOT bad", 32));
}

TEST(ClassifierTokenizer, ErrorsNameTheFile) {
  const Scratch s("bad");
  try {
    open_classifier_tokenizer(s.dir);
    ADD_FAILURE() << "an empty folder opened";
  } catch (const FileError& e) {
    EXPECT_EQ(e.path(), s.dir);
    EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos) << e.what();
  }
  // A byte-level BPE without <s>: not a RoBERTa vocabulary.
  CIBENCH_REQUIRE_SHARED(kGpt2);
  json j = roberta_tokenizer_json(open_tokenizer(shared_path(kGpt2))->pieces());
  j["model"]["vocab"].erase("<s>");
  json added = json::array();
  for (const json& a : j["added_tokens"])
    if (a["content"] != "<s>") added.push_back(a);
  j["added_tokens"] = added;
  // Keep the ids dense: <s>'s slot 0 goes to a new piece.
  j["model"]["vocab"]["<placeholder>"] = 0;
  const std::string path = s.dir + "/tokenizer.json";
  std::ofstream(path) << j.dump();
  try {
    open_classifier_tokenizer(path);
    ADD_FAILURE() << "a vocabulary without <s> opened";
  } catch (const FileError& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_NE(std::string(e.what()).find("'<s>'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(frame_sentence(0, {5, 6}, 2, 1), Error);
}

}  // namespace
}  // namespace cibench
