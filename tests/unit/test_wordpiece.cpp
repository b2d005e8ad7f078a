// WordPiece tokenizer: Hugging Face BertTokenizer compatibility on the SST-2 validation set and on
// llama.cpp's bert-bge test vectors, GGUF vocabulary conversion, and the Unicode pieces.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/models/wordpiece.h"
#include "tests/unit/test_support.h"

namespace cibench {
namespace {

namespace wu = wordpiece_unicode;

const char* const kVocab = "models/bert-tiny-sst2/vocab.txt";
const char* const kSst2 = "data/sst2-validation/SST-2-val.tsv";
const char* const kBgeGguf = "models/tokenizer-test-vectors/ggml-vocab-bert-bge.gguf";

// Sentences of the SST-2 TSV (header `sentence\tlabel`), in file order.
std::vector<std::string> read_sst2_sentences(const std::string& path) {
  std::istringstream in(read_file(path));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("sentence\tlabel", 0), 0u) << path << " header: " << line;
  std::vector<std::string> out;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t tab = line.rfind('\t');
    out.push_back(line.substr(0, tab));
  }
  return out;
}

std::vector<std::vector<int>> read_ids_jsonl(const std::string& path) {
  std::istringstream in(read_file(path));
  std::vector<std::vector<int>> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j.at("idx").get<size_t>(), out.size()) << path;
    out.push_back(j.at("ids").get<std::vector<int>>());
  }
  return out;
}

std::string pieces_of(const WordPieceTokenizer& tok, const std::vector<int>& ids) {
  std::string s;
  for (int id : ids) s += (s.empty() ? "" : " ") + tok.piece(id);
  return s;
}

std::u32string U(const char* utf8) { return wu::utf8_to_u32(utf8); }

// ---- Hugging Face reference ids -----------------------------------------------------------------

TEST(WordPiece, Sst2ValidationIdsMatchReferenceExactly) {
  CIBENCH_REQUIRE_SHARED(kVocab);
  CIBENCH_REQUIRE_SHARED(kSst2);
  const auto tok = WordPieceTokenizer::from_vocab_txt(test::shared_path(kVocab));
  EXPECT_EQ(tok.vocab_size(), 30522);
  const auto sentences = read_sst2_sentences(test::shared_path(kSst2));
  ASSERT_EQ(sentences.size(), 872u);
  for (const char* model : {"bert-tiny-sst2", "bert-mini-sst2"}) {
    const std::string ref = std::string("models/") + model + "/ref/";
    CIBENCH_REQUIRE_SHARED(ref + "val_token_ids.jsonl");
    const auto summary = nlohmann::json::parse(read_file(test::shared_path(ref + "summary.json")));
    const int max_length = summary.at("token_ids_file").at("max_length").get<int>();
    const auto expected = read_ids_jsonl(test::shared_path(ref + "val_token_ids.jsonl"));
    ASSERT_EQ(expected.size(), sentences.size()) << model;
    size_t mismatches = 0;
    for (size_t i = 0; i < sentences.size(); ++i) {
      const auto ids = tok.encode(sentences[i], max_length);
      if (ids != expected[i] && ++mismatches <= 5)
        ADD_FAILURE() << model << " sentence " << i << " '" << sentences[i] << "'\n  got      "
                      << pieces_of(tok, ids) << "\n  expected " << pieces_of(tok, expected[i]);
    }
    EXPECT_EQ(mismatches, 0u) << model << ": sentences whose ids differ from the reference";
  }
}

// llama.cpp's tokenizer test vectors: strings separated by "\n__ggml_vocab_test__\n" (as its
// test-tokenizer-0 splits them) and one line of expected ids per string, without [CLS]/[SEP].
// The expected ids were produced by Hugging Face's tokenizer, so BertTokenizer semantics apply
// to every one of them (none needs an exception: all match, with both vocabularies).
struct VocabVectors {
  std::vector<std::string> texts;
  std::vector<std::vector<int>> ids;
};

VocabVectors read_vectors(const std::string& base) {
  VocabVectors v;
  std::string raw = read_file(base + ".inp");
  const std::string delim = "\n__ggml_vocab_test__\n";
  for (size_t pos; (pos = raw.find(delim)) != std::string::npos; raw.erase(0, pos + delim.size()))
    v.texts.push_back(raw.substr(0, pos));
  std::istringstream out(read_file(base + ".out"));
  std::string line;
  while (std::getline(out, line)) {
    std::istringstream ls(line);
    std::vector<int> ids;
    for (int id; ls >> id;) ids.push_back(id);
    v.ids.push_back(ids);
  }
  return v;
}

void expect_vectors(const WordPieceTokenizer& tok, const VocabVectors& v, const char* which) {
  ASSERT_EQ(v.texts.size(), v.ids.size());
  ASSERT_GE(v.texts.size(), 40u);
  size_t matched = 0;
  for (size_t i = 0; i < v.texts.size(); ++i) {
    const auto ids = tok.tokenize(v.texts[i]);
    if (ids == v.ids[i]) {
      ++matched;
      continue;
    }
    ADD_FAILURE() << which << " vector " << i << " '" << v.texts[i] << "'\n  got      "
                  << pieces_of(tok, ids) << "\n  expected " << pieces_of(tok, v.ids[i]);
  }
  EXPECT_EQ(matched, v.texts.size()) << which;
}

TEST(WordPiece, LlamaCppBgeVectorsWithVocabTxt) {
  CIBENCH_REQUIRE_SHARED(kVocab);
  CIBENCH_REQUIRE_SHARED(kBgeGguf);
  const auto tok = WordPieceTokenizer::from_vocab_txt(test::shared_path(kVocab));
  expect_vectors(tok, read_vectors(test::shared_path(kBgeGguf)), "vocab.txt");
}

TEST(WordPiece, LlamaCppBgeVectorsWithGgufVocab) {
  CIBENCH_REQUIRE_SHARED(kBgeGguf);
  const auto tok = WordPieceTokenizer::from_gguf(test::shared_path(kBgeGguf));
  expect_vectors(tok, read_vectors(test::shared_path(kBgeGguf)), "gguf");
}

TEST(WordPiece, GgufVocabularyConvertsToVocabTxtPieceForPiece) {
  CIBENCH_REQUIRE_SHARED(kVocab);
  CIBENCH_REQUIRE_SHARED(kBgeGguf);
  const auto txt = WordPieceTokenizer::from_vocab_txt(test::shared_path(kVocab));
  const auto gguf = WordPieceTokenizer::from_gguf(test::shared_path(kBgeGguf));
  ASSERT_EQ(gguf.vocab_size(), txt.vocab_size());
  int differ = 0;
  for (int i = 0; i < txt.vocab_size(); ++i)
    if (txt.piece(i) != gguf.piece(i) && ++differ <= 5)
      ADD_FAILURE() << "id " << i << ": vocab.txt '" << txt.piece(i) << "' gguf '"
                    << gguf.piece(i) << "'";
  EXPECT_EQ(differ, 0);
  EXPECT_EQ(gguf.unk_id(), txt.unk_id());
  EXPECT_EQ(gguf.cls_id(), txt.cls_id());
  EXPECT_EQ(gguf.sep_id(), txt.sep_id());
  EXPECT_EQ(gguf.pad_id(), txt.pad_id());
}

// ---- Behaviour on hand-made inputs --------------------------------------------------------------

TEST(WordPiece, BasicTokenizerSteps) {
  CIBENCH_REQUIRE_SHARED(kVocab);
  const auto tok = WordPieceTokenizer::from_vocab_txt(test::shared_path(kVocab));
  using V = std::vector<std::string>;
  EXPECT_EQ(tok.basic_tokenize("Hello, World!"), (V{"hello", ",", "world", "!"}));
  // Control characters vanish (joining their neighbours); every whitespace kind splits.
  EXPECT_EQ(tok.basic_tokenize("a\x07" "b\tc\nd\xC2\xA0" "e\xE3\x80\x80" "f"),
            (V{"ab", "c", "d", "e", "f"}));
  // Zero-width joiner (Cf) is dropped, U+2028 (line separator) splits.
  EXPECT_EQ(tok.basic_tokenize("x\xE2\x80\x8Dy\xE2\x80\xA8z"), (V{"xy", "z"}));
  // Accents stripped after lower-casing; CJK ideographs are words of their own.
  EXPECT_EQ(tok.basic_tokenize("Crème Brûlée 我想apple"),
            (V{"creme", "brulee", "我", "想", "apple"}));
  // Unicode punctuation (Po, Pd, Ps/Pe, Pi/Pf) splits; symbols (Sm, Sc, So) do not.
  EXPECT_EQ(tok.basic_tokenize("¿qué?—«sí» a+b €5 x～y"),
            (V{"¿", "que", "?", "—", "«", "si", "»", "a", "+", "b", "€5", "x～y"}));
  EXPECT_EQ(tok.normalize("  Hello,   WORLD  "), "hello , world");
  EXPECT_EQ(tok.normalize(""), "");
  EXPECT_TRUE(tok.tokenize(" \t\n ").empty());
}

TEST(WordPiece, GreedyLongestMatchAndUnknowns) {
  CIBENCH_REQUIRE_SHARED(kVocab);
  const auto tok = WordPieceTokenizer::from_vocab_txt(test::shared_path(kVocab));
  // Longest match first: "una" (a piece) wins over "un", and so on along the word.
  EXPECT_EQ(pieces_of(tok, tok.tokenize("unaffable")), "una ##ffa ##ble");
  // A word with no matching continuation is one [UNK], not a partial match.
  EXPECT_EQ(pieces_of(tok, tok.tokenize("hello \xE2\x9C\x85x")), "hello [UNK]");
  // 100 characters are still split into pieces; 101 are [UNK].
  const std::string a100(100, 'a'), a101(101, 'a');
  const auto ids100 = tok.tokenize(a100);
  EXPECT_GT(ids100.size(), 1u);
  std::string joined;
  for (int id : ids100) {
    std::string p = tok.piece(id);
    joined += p.rfind("##", 0) == 0 ? p.substr(2) : p;
  }
  EXPECT_EQ(joined, a100);
  EXPECT_EQ(tok.tokenize(a101), std::vector<int>{tok.unk_id()});
  // Special pieces spelled out in the text are kept whole (case-sensitive).
  EXPECT_EQ(pieces_of(tok, tok.tokenize("yes[SEP]no [cls]")), "yes [SEP] no [ cl ##s ]");
}

TEST(WordPiece, EncodeAddsSpecialsAndTruncatesKeepingSep) {
  CIBENCH_REQUIRE_SHARED(kVocab);
  const auto tok = WordPieceTokenizer::from_vocab_txt(test::shared_path(kVocab));
  const std::string text = "the quick brown fox jumps over the lazy dog";
  const auto pieces = tok.tokenize(text);
  ASSERT_EQ(pieces.size(), 9u);
  const auto full = tok.encode(text, 128);
  ASSERT_EQ(full.size(), 11u);
  EXPECT_EQ(full.front(), tok.cls_id());
  EXPECT_EQ(full.back(), tok.sep_id());
  const auto cut = tok.encode(text, 5);
  ASSERT_EQ(cut.size(), 5u);
  EXPECT_EQ(cut, (std::vector<int>{tok.cls_id(), pieces[0], pieces[1], pieces[2], tok.sep_id()}));
  EXPECT_EQ(tok.encode("", 2), (std::vector<int>{tok.cls_id(), tok.sep_id()}));
  EXPECT_THROW(tok.encode(text, 1), Error);
}

TEST(WordPiece, HuggingFaceFolderOptions) {
  CIBENCH_REQUIRE_SHARED(kVocab);
  const std::string model_dir = test::shared_path("models/bert-tiny-sst2");
  const auto uncased = WordPieceTokenizer::from_hf_folder(model_dir);
  EXPECT_TRUE(uncased.options().lower_case);
  EXPECT_EQ(uncased.basic_tokenize("Café"), std::vector<std::string>{"cafe"});
  // A cased configuration keeps case and accents.
  const std::string dir = ::testing::TempDir() + "/cibench_wp_cased_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tokenizer_config.json") << R"({"do_lower_case": false})";
  std::ofstream(dir + "/vocab.txt") << read_file(test::shared_path(kVocab));
  const auto cased = WordPieceTokenizer::from_hf_folder(dir);
  EXPECT_FALSE(cased.options().lower_case);
  EXPECT_EQ(cased.basic_tokenize("Café!"), (std::vector<std::string>{"Café", "!"}));
  std::ofstream(dir + "/tokenizer_config.json") << R"({"do_lower_case": "yes"})";
  EXPECT_THROW(WordPieceTokenizer::from_hf_folder(dir), FileError);
  std::filesystem::remove_all(dir);
}

// ---- Unicode pieces ------------------------------------------------------------------------------

TEST(WordPieceUnicode, Categories) {
  for (char32_t c : {U'!', U'/', U':', U'@', U'[', U'`', U'{', U'~', U'$', U'^', U'+', U'<',
                     U'¿', U'¡', U'—', U'«', U'»', U'“', U'、', U'。', U'،'})
    EXPECT_TRUE(wu::is_punctuation(c)) << std::hex << static_cast<uint32_t>(c);
  for (char32_t c : {U'a', U'0', U'€', U'～', U'½', U'©', U'é', U' '})
    EXPECT_FALSE(wu::is_punctuation(c)) << std::hex << static_cast<uint32_t>(c);
  for (char32_t c : {U' ', U'\t', U'\n', U'\r', U'\u00A0', U'\u2003', U'\u3000', U'\u2028'})
    EXPECT_TRUE(wu::is_whitespace(c)) << std::hex << static_cast<uint32_t>(c);
  for (char32_t c : {U'\0', U'\x07', U'\x0B', U'\x7F', U'\u0085', U'\u200D', U'\uFEFF',
                     U'\uE000', char32_t{0x0378} /* unassigned */})
    EXPECT_TRUE(wu::is_control(c)) << std::hex << static_cast<uint32_t>(c);
  for (char32_t c : {U'\t', U'\n', U'\r', U'a'}) EXPECT_FALSE(wu::is_control(c));
  for (char32_t c : {U'\u0301', U'\u0308', U'\u0483', U'\uFE0F', U'\u17CB'})
    EXPECT_TRUE(wu::is_nonspacing_mark(c)) << std::hex << static_cast<uint32_t>(c);
  EXPECT_FALSE(wu::is_nonspacing_mark(U'\u17B6'));  // Khmer vowel sign AA is Mc
  for (char32_t c : {U'一', U'龥', U'\u3400', U'\uF900', char32_t{0x20000}})
    EXPECT_TRUE(wu::is_cjk(c));
  for (char32_t c : {U'あ', U'ア', U'가', U'a'}) EXPECT_FALSE(wu::is_cjk(c));
}

TEST(WordPieceUnicode, LowerCase) {
  EXPECT_EQ(wu::lower(U("ÀÉÎÕÜ ÇÑ Ÿ")), U("àéîõü çñ ÿ"));
  EXPECT_EQ(wu::lower(U("ЖУРНАЛ Ёж")), U("журнал ёж"));
  EXPECT_EQ(wu::lower(U("ΑΒΓ")), U("αβγ"));
  // Final sigma: at the end of a word after a letter, not before one.
  EXPECT_EQ(wu::lower(U("ΟΔΟΣ")), U("οδος"));
  EXPECT_EQ(wu::lower(U("ΣΑ")), U("σα"));
  EXPECT_EQ(wu::lower(U("Σ")), U("σ"));
  EXPECT_EQ(wu::lower(U("ΟΔΟΣ.")), U("οδος."));
  // U+0130 lower-cases to "i" + combining dot above; Kelvin and Ohm signs to k and omega.
  EXPECT_EQ(wu::lower(U("İ")), U("i\u0307"));
  EXPECT_EQ(wu::lower(U("\u212A\u2126")), U("kω"));
  EXPECT_EQ(wu::lower(U("ǅ")), U("ǆ"));
}

TEST(WordPieceUnicode, StripAccents) {
  EXPECT_EQ(wu::strip_accents(U("crème brûlée naïve façade")), U("creme brulee naive facade"));
  EXPECT_EQ(wu::strip_accents(U("Cửa Việt")), U("Cua Viet"));           // stacked marks
  EXPECT_EQ(wu::strip_accents(U("ῷ ἄ ΐ")), U("ω α ι"));                  // polytonic Greek
  EXPECT_EQ(wu::strip_accents(U("й ё ї")), U("и е і"));                  // Cyrillic
  EXPECT_EQ(wu::strip_accents(U("e\u0301")), U("e"));                    // already decomposed
  EXPECT_EQ(wu::strip_accents(U("\u212B")), U("A"));                     // Angstrom sign
  EXPECT_EQ(wu::strip_accents(U("가각")), U("\u1100\u1161\u1100\u1161\u11A8"));  // Hangul
  EXPECT_EQ(wu::strip_accents(U("ﬁ ½ ø ß")), U("ﬁ ½ ø ß"));  // no canonical decomposition
  EXPECT_EQ(wu::strip_accents(U("\uF900")), U("\u8C48"));    // CJK compatibility ideograph
}

TEST(WordPieceUnicode, Utf8RoundTripAndInvalidBytes) {
  const std::string s = "a\xC3\xA9\xE4\xB8\x80\xF0\x9F\x98\x80";
  EXPECT_EQ(wu::utf8_to_u32(s), (std::u32string{U'a', 0xE9, 0x4E00, 0x1F600}));
  EXPECT_EQ(wu::u32_to_utf8(wu::utf8_to_u32(s)), s);
  // Stray continuation, overlong form, surrogate and truncated sequence become U+FFFD.
  EXPECT_EQ(wu::utf8_to_u32("\x80" "a\xC0\xAF" "b\xED\xA0\x80" "c\xE4\xB8"),
            (std::u32string{0xFFFD, U'a', 0xFFFD, 0xFFFD, U'b', 0xFFFD, 0xFFFD, 0xFFFD, U'c',
                            0xFFFD, 0xFFFD}));
}

// ---- Bad files -----------------------------------------------------------------------------------

TEST(WordPiece, BadVocabulariesAreFileErrors) {
  const std::string dir = ::testing::TempDir();
  const std::string pid = std::to_string(::getpid());
  const std::string missing = dir + "/cibench_no_such_vocab_" + pid + ".txt";
  try {
    WordPieceTokenizer::from_vocab_txt(missing);
    FAIL() << "no exception";
  } catch (const FileError& e) {
    EXPECT_EQ(e.path(), missing);
  }
  const std::string no_unk = dir + "/cibench_vocab_no_unk_" + pid + ".txt";
  std::ofstream(no_unk) << "[PAD]\n[CLS]\n[SEP]\nhello\n";
  try {
    WordPieceTokenizer::from_vocab_txt(no_unk);
    FAIL() << "no exception";
  } catch (const FileError& e) {
    EXPECT_EQ(e.path(), no_unk);
    EXPECT_NE(std::string(e.what()).find("[UNK]"), std::string::npos) << e.what();
  }
  std::remove(no_unk.c_str());
  const char* spm = "models/tokenizer-test-vectors/ggml-vocab-llama-spm.gguf";
  if (test::have_shared(spm)) {
    try {
      WordPieceTokenizer::from_gguf(test::shared_path(spm));
      FAIL() << "no exception";
    } catch (const FileError& e) {
      EXPECT_EQ(e.path(), test::shared_path(spm));
      EXPECT_NE(std::string(e.what()).find("not 'bert'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace cibench
