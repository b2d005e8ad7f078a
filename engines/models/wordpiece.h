#pragma once
// WordPiece tokenization compatible with Hugging Face's BertTokenizer (the "slow" Python one,
// whose output the fast one reproduces):
//   BasicTokenizer  — drop control characters, map whitespace to spaces, put spaces around CJK
//                     ideographs, split on whitespace, lower-case, strip accents (NFD, drop
//                     nonspacing marks), split off punctuation;
//   WordpieceTokenizer — greedy longest-match-first per word with "##" continuations; a word
//                     longer than 100 characters or with an unmatched rest becomes [UNK].
// The Unicode properties it needs (categories, lower-case mapping, canonical decompositions)
// come from compact tables generated from Python's unicodedata (no ICU); see wordpiece.cpp.
//
// One gap, measured exhaustively against Python: BertTokenizer normalises its input to NFC
// first. With lower-casing and accent stripping (uncased vocabularies) that never changes the
// result; for cased vocabularies it matters only for decomposed input (a base letter followed
// by combining marks), which is left decomposed here.
//
// Vocabularies: a BERT vocab.txt (one piece per line, id = line number), or the vocabulary of a
// GGUF file (tokenizer.ggml.model "bert"), whose converter writes word-initial pieces with a
// leading U+2581 and continuation pieces without "##"; both are mapped to the vocab.txt form.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace cibench {

struct WordPieceOptions {
  bool lower_case = true;     // BertTokenizer do_lower_case
  int strip_accents = -1;     // -1: follow lower_case (HF's None), 0: keep, 1: strip
  bool split_cjk = true;      // tokenize_chinese_chars
  int max_chars_per_word = 100;
};

class WordPieceTokenizer {
 public:
  // From a vocab.txt (as Hugging Face reads it: a repeated piece maps to its last line).
  // Throws FileError naming the file when it is unreadable or lacks [UNK], [CLS] or [SEP].
  static WordPieceTokenizer from_vocab_txt(const std::string& path,
                                           const WordPieceOptions& opts = {});
  // From the vocabulary stored in a GGUF file (tokenizer.ggml.tokens; special ids from
  // tokenizer.ggml.{unknown,cls,seperator,padding,mask}_token_id when present).
  static WordPieceTokenizer from_gguf(const std::string& path, const WordPieceOptions& opts = {});
  // A Hugging Face folder: vocab.txt with the options of tokenizer_config.json when present
  // (do_lower_case, strip_accents, tokenize_chinese_chars); FileError on a malformed config.
  static WordPieceTokenizer from_hf_folder(const std::string& dir);
  // From pieces in vocab.txt form (id = index). `origin` names the source in errors.
  WordPieceTokenizer(std::vector<std::string> pieces, const WordPieceOptions& opts,
                     const std::string& origin);

  // HF BasicTokenizer: the words (UTF-8) after cleaning, lower-casing, accent stripping and
  // punctuation splitting.
  std::vector<std::string> basic_tokenize(const std::string& text) const;
  // The normalised input: the basic words joined by single spaces (two texts with the same
  // normalised form always get the same ids; a result cache can key on it).
  std::string normalize(const std::string& text) const;
  // WordPiece ids of `text`, without [CLS]/[SEP].
  std::vector<int> tokenize(const std::string& text) const;
  // [CLS] pieces [SEP], truncated to at most max_length ids (>= 2) keeping the final [SEP].
  std::vector<int> encode(const std::string& text, int max_length = 512) const;

  int vocab_size() const { return static_cast<int>(pieces_.size()); }
  const std::string& piece(int id) const;      // throws on an out-of-range id
  int find(const std::string& piece) const;    // -1 when absent
  int unk_id() const { return unk_id_; }
  int cls_id() const { return cls_id_; }
  int sep_id() const { return sep_id_; }
  int pad_id() const { return pad_id_; }
  const WordPieceOptions& options() const { return opts_; }
  const std::string& origin() const { return origin_; }

 private:
  void wordpiece(const std::u32string& word, std::vector<int>* out) const;

  std::vector<std::string> pieces_;
  std::unordered_map<std::string, int> ids_;
  WordPieceOptions opts_;
  std::string origin_;
  int unk_id_ = -1, cls_id_ = -1, sep_id_ = -1, pad_id_ = 0;
  size_t max_piece_chars_ = 1;
};

// A vocabulary with fewer pieces than the model's embedding has rows: right for a padded
// embedding, wrong for a truncated or foreign vocab.txt (words then fall to [UNK] or to other
// ids). The warning to show and store, or "" when the sizes agree.
std::string vocab_size_warning(const std::string& vocab_name, int pieces, int embedding_rows);


// The Unicode pieces BasicTokenizer needs, exposed for tests.
namespace wordpiece_unicode {
bool is_whitespace(char32_t c);   // space, \t, \n, \r, Zs, Zl, Zp
bool is_control(char32_t c);      // category C* except \t \n \r (removed by clean-up)
bool is_punctuation(char32_t c);  // ASCII 33-47, 58-64, 91-96, 123-126, or category P*
bool is_nonspacing_mark(char32_t c);  // category Mn
bool is_cjk(char32_t c);          // the CJK ideograph blocks BertTokenizer isolates
// Python str.lower() of one word (including final sigma and U+0130 -> "i" U+0307).
std::u32string lower(const std::u32string& s);
// NFD, then every Mn character dropped (BasicTokenizer._run_strip_accents).
std::u32string strip_accents(const std::u32string& s);
// UTF-8 <-> UTF-32; invalid bytes decode to U+FFFD (which clean-up then drops).
std::u32string utf8_to_u32(const std::string& s);
std::string u32_to_utf8(const std::u32string& s);
}  // namespace wordpiece_unicode

}  // namespace cibench
