// Byte-level BPE: llama.cpp's test vectors for every BPE vocabulary in ../shared (exact ids), the
// SentencePiece-style vocabularies shipped beside them, tokenizer.json written from those GGUF
// vocabularies (the same ids), a hand-made tokenizer.json, the pre-tokenizer regex matcher, and
// malformed files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engines/core/error.h"
#include "engines/models/gguf.h"
#include "engines/models/pretokenizer.h"
#include "engines/models/tokenizer.h"
#include "engines/models/unicode_category.h"
#include "engines/models/unicode_nfc.h"
#include "test_support.h"
#include "tokenizer_vectors.h"

namespace cibench {
namespace {

using nlohmann::json;
using test::escaped;
using test::ids_str;
using test::shared_path;

const std::string kVectorDir = "models/tokenizer-test-vectors/";

std::string vocab_rel(const std::string& name) { return kVectorDir + "ggml-vocab-" + name + ".gguf"; }

std::string concat_decode(const Tokenizer& t, const std::vector<int>& ids) {
  std::string s;
  int prev = -1;
  for (int id : ids) {
    s += t.decode(prev, id);
    prev = id;
  }
  return s;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  ASSERT_TRUE(f.good()) << path;
}

template <typename F>
void expect_file_error(const std::string& path, const std::vector<std::string>& needles, F fn) {
  try {
    fn();
    ADD_FAILURE() << "no FileError for " << path;
  } catch (const FileError& e) {
    EXPECT_EQ(e.path(), path);
    for (const std::string& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "message: " << e.what() << "\nexpected: " << n;
  }
}

// ---------------------------------------------------------------- llama.cpp test vectors

// The byte-level BPE vocabularies that ship with .inp/.out vectors, with their
// tokenizer.ggml.pre and vocabulary size.
struct BpeVocab {
  const char* name;
  const char* pre;
  int n_vocab;
};
const BpeVocab kBpeVocabs[] = {
    {"gpt-2", "gpt-2", 50257},           {"falcon", "falcon", 65024},
    {"mpt", "mpt", 50432},               {"starcoder", "starcoder", 49152},
    {"deepseek-llm", "deepseek-llm", 102400}, {"deepseek-coder", "deepseek-coder", 32256},
    {"refact", "refact", 49216},
};

class BpeVectors : public ::testing::TestWithParam<BpeVocab> {};

TEST_P(BpeVectors, MatchLlamaCppAndRoundTrip) {
  const BpeVocab& v = GetParam();
  const std::string rel = vocab_rel(v.name);
  CIBENCH_REQUIRE_SHARED(rel);
  const auto vectors = test::read_tokenizer_vectors(rel);
  ASSERT_GT(vectors.size(), 30u);
  const auto tok = open_tokenizer(shared_path(rel));
  EXPECT_EQ(tok->kind(), "gguf-bpe");
  EXPECT_EQ(tok->vocab_size(), v.n_vocab);
  EXPECT_EQ(tok->pieces().pre, v.pre);
  size_t n_ids = 0;
  for (const auto& x : vectors) {
    const std::vector<int> ids = tok->encode(x.text, false, false);
    EXPECT_EQ(ids_str(ids), ids_str(x.ids)) << v.name << " text " << escaped(x.text);
    // Byte-level BPE loses nothing: the tokens' bytes are the text's bytes.
    EXPECT_EQ(concat_decode(*tok, ids), x.text) << v.name << " text " << escaped(x.text);
    n_ids += ids.size();
  }
  EXPECT_GT(n_ids, 200u);
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, BpeVectors, ::testing::ValuesIn(kBpeVocabs),
                         [](const ::testing::TestParamInfo<BpeVocab>& p) {
                           std::string n = p.param.name;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// Phi-3 is a SentencePiece vocabulary: the existing GGUF SentencePiece path matches its vectors.
TEST(BpeVectorsSpm, Phi3ThroughTheSentencePiecePath) {
  const std::string rel = vocab_rel("phi-3");
  CIBENCH_REQUIRE_SHARED(rel);
  const auto vectors = test::read_tokenizer_vectors(rel);
  ASSERT_GT(vectors.size(), 30u);
  const auto tok = open_tokenizer(shared_path(rel));
  EXPECT_EQ(tok->kind(), "gguf-spm");
  for (const auto& x : vectors)
    EXPECT_EQ(ids_str(tok->encode(x.text, false, false)), ids_str(x.ids)) << escaped(x.text);
}

// Vocabularies shipped without vectors: they open as their kind and round-trip the gpt-2
// strings (Baichuan is SentencePiece: decoding after BOS drops the dummy prefix space).
TEST(BpeVectorsSpm, VocabulariesWithoutVectorsRoundTrip) {
  const std::string neox = vocab_rel("gpt-neox"), baichuan = vocab_rel("baichuan"), gpt2 = vocab_rel("gpt-2");
  CIBENCH_REQUIRE_SHARED(neox);
  CIBENCH_REQUIRE_SHARED(baichuan);
  CIBENCH_REQUIRE_SHARED(gpt2);
  const auto texts = test::read_tokenizer_vectors(gpt2);
  const auto n = open_tokenizer(shared_path(neox));
  EXPECT_EQ(n->kind(), "gguf-bpe");
  EXPECT_EQ(n->pieces().pre, "default");  // the file has no tokenizer.ggml.pre
  const auto b = open_tokenizer(shared_path(baichuan));
  EXPECT_EQ(b->kind(), "gguf-spm");
  for (const auto& x : texts) {
    EXPECT_EQ(concat_decode(*n, n->encode(x.text, false, false)), x.text) << escaped(x.text);
    const std::vector<int> ids = b->encode(x.text, true, false);
    std::string s;
    for (size_t i = 1; i < ids.size(); ++i) s += b->decode(ids[i - 1], ids[i]);
    EXPECT_EQ(s, x.text) << escaped(x.text);
  }
}

// ---------------------------------------------------------------- decoding

TEST(BpeDecode, SplitCharactersAndInvalidUtf8) {
  const std::string rel = vocab_rel("gpt-2");
  CIBENCH_REQUIRE_SHARED(rel);
  const auto tok = open_tokenizer(shared_path(rel));
  // A rare CJK character and an emoji are several byte tokens each: single tokens decode to
  // partial UTF-8, which is whole again once concatenated.
  const std::string text = "\xF0\x9F\xA6\x99 \xE9\xBE\x98!";
  const auto ids = tok->encode(text, false, false);
  ASSERT_GT(ids.size(), 3u);
  bool partial = false;
  for (int id : ids) {
    const std::string p = tok->decode(-1, id);
    partial |= !p.empty() && (static_cast<unsigned char>(p[0]) & 0xC0) == 0x80;
  }
  EXPECT_TRUE(partial) << "expected a token that starts inside a character";
  EXPECT_EQ(concat_decode(*tok, ids), text);
  // Invalid UTF-8 is read as U+FFFD per bad byte, as llama.cpp does.
  EXPECT_EQ(concat_decode(*tok, tok->encode("a\xFF" "b", false, false)), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(tok->encode("", false, false), std::vector<int>{});
  // GPT-2 asks for no BOS: encode(..., true, ...) adds none.
  EXPECT_EQ(tok->encode("Hello", true, false), tok->encode("Hello", false, false));
  EXPECT_THROW(tok->decode(-1, tok->vocab_size()), Error);
  EXPECT_THROW(tok->decode(-1, -1), Error);
}

// ---------------------------------------------------------------- tokenizer.json from GGUF

// A tokenizer.json holding a GGUF vocabulary: tokens, merges, control tokens as special added
// tokens, user-defined ones as non-special, the pre-tokenizer's regexes as Split steps.
json tokenizer_json_from(const Tokenizer& t) {
  const VocabPieces v = t.pieces();
  json vocab = json::object(), added = json::array();
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.types[i] == 3 || v.types[i] == 4) {
      added.push_back({{"id", i}, {"content", v.tokens[i]}, {"special", v.types[i] == 3},
                       {"single_word", false}, {"lstrip", false}, {"rstrip", false}, {"normalized", false}});
    } else {
      vocab[v.tokens[i]] = i;
    }
  }
  std::vector<std::string> patterns;
  bool ignore_merges = false;
  EXPECT_TRUE(bpe::named_pre_tokenizer(v.pre, patterns, ignore_merges)) << v.pre;
  json steps = json::array();
  for (const std::string& p : patterns)
    steps.push_back({{"type", "Split"}, {"pattern", {{"Regex", p}}}, {"behavior", "Isolated"}, {"invert", false}});
  steps.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}});
  json merges = json::array();
  for (size_t i = 0; i < v.merges.size(); ++i) {
    const std::string& m = v.merges[i];
    const size_t sp = m.find(' ', 1);
    // Both spellings of merges: "a b" and ["a", "b"].
    if (i % 2) merges.push_back(json::array({m.substr(0, sp), m.substr(sp + 1)}));
    else merges.push_back(m);
  }
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", steps}}},
          {"post_processor", {{"type", "ByteLevel"}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
            {"ignore_merges", ignore_merges}, {"vocab", vocab}, {"merges", merges}}}};
}

TEST_P(BpeVectors, TokenizerJsonGivesTheSameIds) {
  const BpeVocab& v = GetParam();
  const std::string rel = vocab_rel(v.name);
  CIBENCH_REQUIRE_SHARED(rel);
  const auto gguf = open_tokenizer(shared_path(rel));
  test::TempDir dir("bpe_json");
  // As a model folder: open_tokenizer on the folder finds its tokenizer.json.
  write_text(dir.file("tokenizer.json"), tokenizer_json_from(*gguf).dump());
  const auto tj = open_tokenizer(dir.str());
  EXPECT_EQ(tj->kind(), "bpe");
  EXPECT_EQ(tj->vocab_size(), gguf->vocab_size());
  for (const auto& x : test::read_tokenizer_vectors(rel)) {
    const std::vector<int> ids = tj->encode(x.text, false, false);
    EXPECT_EQ(ids_str(ids), ids_str(x.ids)) << v.name << " text " << escaped(x.text);
    EXPECT_EQ(concat_decode(*tj, ids), x.text);
  }
}

// ---------------------------------------------------------------- hand-made tokenizer.json

// GPT-2 byte characters: ' ' is U+0120 "Ġ", 'é' is bytes C3 A9 = "Ã" "©".
const char* kTinyJson = R"({
  "version": "1.0",
  "added_tokens": [
    {"id": 0, "content": "<|end|>", "special": true},
    {"id": 9, "content": "<x>", "special": false}
  ],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
  "post_processor": {"type": "ByteLevel"},
  "model": {
    "type": "BPE", "byte_fallback": false,
    "vocab": {"<|end|>": 0, "a": 1, "b": 2, "c": 3, "\u0120": 4, "ab": 5, "\u0120ab": 6, "bc": 7,
              "!": 8, "<x>": 9, "\u00c3": 10, "\u00a9": 11, "\u00c3\u00a9": 12},
    "merges": ["a b", "\u0120 ab", "b c", "\u00c3 \u00a9"]
  }
})";

TEST(BpeTokenizerJson, HandMadeVocabulary) {
  test::TempDir dir("bpe_tiny");
  const std::string path = dir.file("tokenizer.json");
  write_text(path, kTinyJson);
  write_text(dir.file("tokenizer_config.json"), R"({"eos_token": "<|end|>", "bos_token": null})");
  const auto tok = open_tokenizer(path);
  EXPECT_EQ(tok->kind(), "bpe");
  EXPECT_EQ(tok->vocab_size(), 13);
  EXPECT_EQ(tok->eos_id(), 0);
  EXPECT_EQ(tok->bos_id(), -1);
  // "abc": a+b (rank 0) before b+c (rank 2); "ab"+"c" is no merge.
  EXPECT_EQ(tok->encode("abc", false, false), (std::vector<int>{5, 3}));
  // " ab" is one piece: a+b, then Ġ+ab (rank 1).
  EXPECT_EQ(tok->encode(" ab", false, false), (std::vector<int>{6}));
  // "bc ab" is the pieces "bc" and " ab".
  EXPECT_EQ(tok->encode("bc ab", false, false), (std::vector<int>{7, 6}));
  // The non-special added token is cut out first; the special one stays text ("<", "|", ... are
  // not in the vocabulary and are dropped, "!" is kept), as llama.cpp without parse_special.
  EXPECT_EQ(tok->encode("a<x>b", false, false), (std::vector<int>{1, 9, 2}));
  EXPECT_EQ(tok->encode("<|end|>!", false, false), (std::vector<int>{8}));
  // "é" is two bytes merged into one token; its two byte tokens decode to half a character each.
  EXPECT_EQ(tok->encode("\xC3\xA9", false, false), (std::vector<int>{12}));
  EXPECT_EQ(tok->decode(-1, 12), "\xC3\xA9");
  EXPECT_EQ(tok->decode(-1, 10), "\xC3");
  EXPECT_EQ(tok->decode(-1, 10) + tok->decode(10, 11), "\xC3\xA9");
  EXPECT_EQ(tok->decode(-1, 6), " ab");
  EXPECT_EQ(tok->decode(-1, 0), "");  // control tokens print nothing
  EXPECT_EQ(tok->decode(-1, 9), "<x>");
  // No BOS in the post-processor or the config: none is added; EOS is not asked for either.
  EXPECT_EQ(tok->encode("abc", true, true), (std::vector<int>{5, 3}));
  // export-gguf needs a pre-tokenizer name, which a tokenizer.json does not have.
  EXPECT_EQ(tok->pieces().model, "gpt2");
  EXPECT_EQ(tok->pieces().merges.size(), 4u);
  EXPECT_EQ(tok->pieces().pre, "");
}

TEST(BpeTokenizerJson, TemplateBosAndSplitPatterns) {
  json j = json::parse(kTinyJson);
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({{{"SpecialToken", {{"id", "<|end|>"}, {"type_id", 0}}}},
                                                 {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}};
  // Split on single letters first, then ByteLevel without its own regex: nothing merges.
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         json::array({{{"type", "Split"}, {"pattern", {{"Regex", "\\p{L}"}}}, {"behavior", "Isolated"}},
                                      {{"type", "ByteLevel"}, {"use_regex", false}}})}};
  test::TempDir dir("bpe_tpl");
  const std::string path = dir.file("tokenizer.json");
  write_text(path, j.dump());
  const auto tok = open_tokenizer(path);
  EXPECT_EQ(tok->bos_id(), 0);
  EXPECT_EQ(tok->encode("abc", true, false), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(tok->encode("abc", false, false), (std::vector<int>{1, 2, 3}));
}

// ---------------------------------------------------------------- the regex matcher

std::vector<std::string> pieces_of(const std::string& text, const std::vector<std::string>& patterns,
                                   bpe::RegexMode mode = bpe::RegexMode::unicode) {
  std::vector<bpe::SplitRegex> res;
  for (const auto& p : patterns) res.emplace_back(p);
  const auto cps = unicode::decode_utf8_lenient(text);
  const auto lens = bpe::split_pieces(bpe::SplitText::make(cps, mode), res);
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t n : lens) {
    std::string s;
    for (size_t i = at; i < at + n; ++i) unicode::append_utf8(s, cps[i]);
    out.push_back(s);
    at += n;
  }
  EXPECT_EQ(at, cps.size());
  return out;
}

std::vector<std::string> named(const std::string& name) {
  std::vector<std::string> p;
  bool ignore = false;
  EXPECT_TRUE(bpe::named_pre_tokenizer(name, p, ignore)) << name;
  return p;
}

using Pieces = std::vector<std::string>;

TEST(BpeRegex, Gpt2AndLlama3PiecesByHand) {
  const std::string text = "Hello world's 1234567 !!\n\n  x";
  EXPECT_EQ(pieces_of(text, named("gpt-2")),
            (Pieces{"Hello", " world", "'s", " 1234567", " !!", "\n\n ", " x"}));
  // Llama 3: digits in threes; the space before a digit is its own piece; punctuation takes the
  // newlines after it; "\s+(?!\S)" leaves the last space for " x".
  EXPECT_EQ(pieces_of(text, named("llama-bpe")),
            (Pieces{"Hello", " world", "'s", " ", "123", "456", "7", " !!\n\n", " ", " x"}));
  // Case-insensitive contractions in Llama 3 only.
  EXPECT_EQ(pieces_of("IT'S", named("llama-bpe")), (Pieces{"IT", "'S"}));
  EXPECT_EQ(pieces_of("IT'S", named("gpt-2")), (Pieces{"IT", "'", "S"}));
  EXPECT_EQ(pieces_of("IT'S", {"(?i:'s|'t)|\\p{L}+"}), (Pieces{"IT", "'S"}));
  // Unicode letters and numbers (U+00BD "½" is No).
  EXPECT_EQ(pieces_of("na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC \xC2\xBD", named("gpt-2")),
            (Pieces{"na\xC3\xAFve", " \xE6\x97\xA5\xE6\x9C\xAC", " \xC2\xBD"}));
  // Several patterns in turn: StarCoder splits single digits first.
  EXPECT_EQ(pieces_of("ab 12", named("starcoder")), (Pieces{"ab", " ", "1", "2"}));
}

TEST(BpeRegex, SyntaxSubset) {
  EXPECT_EQ(pieces_of("aaaa", {"a{1,3}"}), (Pieces{"aaa", "a"}));
  EXPECT_EQ(pieces_of("aaaa", {"a{2}"}), (Pieces{"aa", "aa"}));
  EXPECT_EQ(pieces_of("ab-cd", {"[^-]+"}), (Pieces{"ab", "-", "cd"}));
  EXPECT_EQ(pieces_of("a.b", {"\\."}), (Pieces{"a", ".", "b"}));
  EXPECT_EQ(pieces_of("x  ", {"\\s+$"}), (Pieces{"x", "  "}));
  EXPECT_EQ(pieces_of("ab", {"(?:a|ab)b?"}), (Pieces{"ab"}));  // first alternative that completes
  EXPECT_EQ(pieces_of("aab", {"a(?=b)"}), (Pieces{"a", "a", "b"}));
  EXPECT_EQ(pieces_of("IMGIMGABZ", {"(IMGIMG)((A|B|C){1,4})Z"}), (Pieces{"IMGIMGABZ"}));
  // A literal non-ASCII space in a class: llama.cpp sees U+3000 as U+000B, Unicode engines as itself.
  EXPECT_EQ(pieces_of("a\xE3\x80\x80" "b", {"[\xE3\x80\x80]"}, bpe::RegexMode::unicode),
            (Pieces{"a", "\xE3\x80\x80", "b"}));
  EXPECT_EQ(pieces_of("a\xE3\x80\x80" "b", {"[\xE3\x80\x80]"}, bpe::RegexMode::llama_cpp),
            (Pieces{"a\xE3\x80\x80" "b"}));
  EXPECT_EQ(pieces_of("a\xE3\x80\x80" "b", {"\\s"}, bpe::RegexMode::llama_cpp), (Pieces{"a", "\xE3\x80\x80", "b"}));
  // '~' is not \p{S} for llama.cpp.
  EXPECT_EQ(pieces_of("~", {"\\p{S}"}, bpe::RegexMode::unicode), (Pieces{"~"}));
  EXPECT_EQ(pieces_of("a~", {"\\p{S}|a"}, bpe::RegexMode::llama_cpp), (Pieces{"a", "~"}));

  // Exponential backtracking is stopped with an error.
  try {
    pieces_of(std::string(40, 'a'), {"(a|a)*b"});
    ADD_FAILURE() << "no error for an exponential pattern";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("backtracks too much"), std::string::npos) << e.what();
  }

  for (const char* bad : {"(?<=a)b", "a{2,1}", "\\d+", "[abc", "a)", "(a", "a+?", "*a", "\\p{Xy}", "[z-a]"}) {
    try {
      bpe::SplitRegex r(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(BpeRegex, EveryNamedPreTokenizerCompiles) {
  const std::string names = bpe::known_pre_tokenizers();
  size_t n = 0;
  for (const std::string& name : test::split_all(names, ", ")) {
    for (const std::string& p : named(name)) EXPECT_NO_THROW(bpe::SplitRegex r(p)) << name << ": " << p;
    ++n;
  }
  EXPECT_GE(n, 40u);
}

TEST(BpeUnicode, Categories) {
  EXPECT_EQ(unicode::category('A'), unicode::Lu);
  EXPECT_EQ(unicode::category('a'), unicode::Ll);
  EXPECT_EQ(unicode::category('5'), unicode::Nd);
  EXPECT_EQ(unicode::category(0xBD), unicode::No);
  EXPECT_EQ(unicode::category(0x65E5), unicode::Lo);
  EXPECT_EQ(unicode::category(0x301), unicode::Mn);
  EXPECT_EQ(unicode::category('~'), unicode::Sm);
  EXPECT_EQ(unicode::category(0xA0), unicode::Zs);
  EXPECT_EQ(unicode::category(0x0378), unicode::Cn);
  EXPECT_EQ(unicode::category(0x10FFFF), unicode::Cn);
  EXPECT_EQ(unicode::category(0xE000), unicode::Co);
  EXPECT_TRUE(unicode::is_white_space(0x3000));
  EXPECT_FALSE(unicode::is_white_space(0x200B));
  EXPECT_EQ(unicode::decode_utf8_lenient("\xC3"), (std::vector<char32_t>{0xFFFD}));
  EXPECT_EQ(unicode::decode_utf8_lenient("\xE6\x97\xA5x"), (std::vector<char32_t>{0x65E5, 'x'}));
}

// NFC against Python's unicodedata on every character with a canonical decomposition (composed
// and decomposed), reordered combining marks and Hangul jamo (tools/unicode/gen_nfc.py --cases).
TEST(BpeUnicode, NfcMatchesPythonsUnicodedata) {
  const std::string path = std::string(CIBENCH_SOURCE_DIR) + "/tests/fixtures/unicode/nfc_cases.txt";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  auto cps = [](const std::string& hex) {
    std::vector<char32_t> v;
    std::istringstream ss(hex);
    std::string h;
    while (ss >> h) v.push_back(static_cast<char32_t>(std::stoul(h, nullptr, 16)));
    return v;
  };
  std::string line;
  int cases = 0, changed = 0, wrong = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    const std::vector<char32_t> input = cps(line.substr(0, tab)), want = cps(line.substr(tab + 1));
    const std::vector<char32_t> got = unicode::nfc(input);
    ++cases;
    changed += input != want;
    if (got != want && ++wrong <= 10) ADD_FAILURE() << "NFC of " << line.substr(0, tab) << ": want " << line.substr(tab + 1);
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(cases, 4000);
  EXPECT_GT(changed, 1500);  // decomposed forms recomposed, singletons replaced, marks reordered
  EXPECT_EQ(unicode::combining_class(0x301), 230);
  EXPECT_EQ(unicode::combining_class(0x327), 202);
  EXPECT_EQ(unicode::combining_class('a'), 0);
  // e + acute + dot below: the dot (class 220) moves before the acute (230), e + dot below
  // composes to U+1EB9 and the acute stays (U+1EB9 + acute has no composite).
  EXPECT_EQ(unicode::nfc({'e', 0x301, 0x323}), (std::vector<char32_t>{0x1EB9, 0x301}));
  EXPECT_EQ(unicode::nfc({0x1100, 0x1161, 0x11A8}), (std::vector<char32_t>{0xAC01}));  // Hangul L V T
  EXPECT_EQ(unicode::nfc({'a', 'b'}), (std::vector<char32_t>{'a', 'b'}));
}

// A tokenizer.json whose normalizer is NFC (Qwen2's) composes the text before pre-tokenizing: a
// decomposed "é" (e + U+0301) becomes the composed token; without the normalizer it does not.
TEST(BpeTokenizerJson, NfcNormalizerComposesTheText) {
  test::TempDir dir("bpe_nfc");
  json j = json::parse(kTinyJson);
  const std::string plain = dir.file("plain.json"), nfc = dir.file("nfc.json");
  write_text(plain, j.dump());
  j["normalizer"] = {{"type", "NFC"}};
  write_text(nfc, j.dump());
  const std::string decomposed = "e\xCC\x81", composed = "\xC3\xA9";
  EXPECT_EQ(open_tokenizer(nfc)->encode(decomposed, false, false), (std::vector<int>{12}));
  EXPECT_EQ(open_tokenizer(nfc)->encode(composed, false, false), (std::vector<int>{12}));
  EXPECT_NE(open_tokenizer(plain)->encode(decomposed, false, false), (std::vector<int>{12}));
  // Added tokens are cut out before normalising and stay as they are.
  EXPECT_EQ(open_tokenizer(nfc)->encode("a<x>" + decomposed, false, false), (std::vector<int>{1, 9, 12}));
}

// ---------------------------------------------------------------- malformed files

TEST(BpeFiles, BadTokenizerJson) {
  test::TempDir dir("bpe_bad");
  const std::string p = dir.file("tokenizer.json");
  auto with = [&](const std::function<void(json&)>& edit) {
    json j = json::parse(kTinyJson);
    edit(j);
    write_text(p, j.dump());
  };
  with([](json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "_"}}; });
  expect_file_error(p, {p, "pre_tokenizer.type", "Metaspace"}, [&] { open_tokenizer(p); });
  with([](json& j) { j["model"]["merges"][1] = "abc"; });
  expect_file_error(p, {p, "model.merges[1]", "\"abc\""}, [&] { open_tokenizer(p); });
  with([](json& j) { j["model"]["merges"][0] = json::array({"a", "zz"}); });
  expect_file_error(p, {p, "model.merges[0]", "\"zz\""}, [&] { open_tokenizer(p); });
  with([](json& j) {
    j["model"]["vocab"] = json::object();
    j["added_tokens"] = json::array();
  });
  expect_file_error(p, {p, "model.vocab", "empty"}, [&] { open_tokenizer(p); });
  with([](json& j) { j["model"]["type"] = "Unigram"; });
  expect_file_error(p, {p, "model.type", "Unigram"}, [&] { open_tokenizer(p); });
  with([](json& j) { j["model"]["byte_fallback"] = true; });
  expect_file_error(p, {p, "model.byte_fallback"}, [&] { open_tokenizer(p); });
  with([](json& j) { j["model"]["vocab"].erase("c"); });
  expect_file_error(p, {p, "no token has id 3"}, [&] { open_tokenizer(p); });
  with([](json& j) {
    j["pre_tokenizer"] = {{"type", "Sequence"},
                          {"pretokenizers", json::array({{{"type", "Split"}, {"pattern", {{"Regex", "(?<=x)y"}}},
                                                          {"behavior", "Isolated"}},
                                                         {{"type", "ByteLevel"}}})}};
  });
  expect_file_error(p, {p, "pre_tokenizer.pretokenizers[0].pattern", "(?<=x)y", "lookbehind"},
                    [&] { open_tokenizer(p); });
  with([](json& j) { j["normalizer"] = {{"type", "Lowercase"}}; });
  expect_file_error(p, {p, "normalizer", "Lowercase"}, [&] { open_tokenizer(p); });
  write_text(p, "{\"model\": ");
  expect_file_error(p, {p, "not valid JSON"}, [&] { open_tokenizer(p); });
  const std::string empty_dir = dir.file("empty_model");
  std::filesystem::create_directories(empty_dir);
  expect_file_error(empty_dir, {"without tokenizer.json"}, [&] { open_tokenizer(empty_dir); });
}

TEST(BpeFiles, BadGgufBpeVocabulary) {
  const std::string rel = vocab_rel("gpt-2");
  CIBENCH_REQUIRE_SHARED(rel);
  // Copy the metadata of the real file with one value changed, through the GGUF test writer of
  // test_gguf_writer's kind: simplest is to rewrite the pre-tokenizer name in place (same length).
  std::string bytes = read_file(shared_path(rel));
  const std::string key = "tokenizer.ggml.pre";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  // key, then u32 type (8 = string), u64 length, then the value "gpt-2".
  const size_t value = at + key.size() + 4 + 8;
  ASSERT_EQ(bytes.substr(value, 5), "gpt-2");
  bytes.replace(value, 5, "gpt-9");
  test::TempDir dir("bpe_gguf");
  const std::string p = dir.file("vocab.gguf");
  write_text(p, bytes);
  expect_file_error(p, {p, "tokenizer.ggml.pre", "'gpt-9'", "qwen2"}, [&] { open_tokenizer(p); });
  // A merge without a separator.
  bytes = read_file(shared_path(rel));
  const size_t m = bytes.find("\xC4\xA0 t");  // the first merge, "Ġ t"
  ASSERT_NE(m, std::string::npos);
  bytes[m + 2] = 'x';
  write_text(p, bytes);
  expect_file_error(p, {p, "tokenizer.ggml.merges[0]", "\xC4\xA0xt"}, [&] { open_tokenizer(p); });
}

}  // namespace
}  // namespace cibench
