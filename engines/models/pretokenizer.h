#pragma once
// Pre-tokenizer regular expressions of byte-level BPE vocabularies: a small backtracking matcher
// for the subset of regex syntax their patterns use, and the named pattern sets of GGUF's
// tokenizer.ggml.pre.
//
// Supported syntax: literals (UTF-8), escapes \r \n \t \f \v \xHH \x{H..} \uHHHH and escaped
// punctuation; classes [...] and [^...] with ranges, \p{..}/\P{..} (general categories, one or two
// letters), \s and \S; the same escapes outside classes and '.'; groups (...), (?:...),
// (?i:...) (ASCII case-insensitive), lookahead (?=...) and (?!...); alternation; greedy
// quantifiers ? * + {n} {n,} {n,m}; anchors ^ and $ (at the ends of the piece being split).
// Anything else (lazy or possessive quantifiers, backreferences, \d, \w, \b, lookbehind) is
// rejected with the pattern and the position.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace cibench::bpe {

// Which convention the matcher follows where llama.cpp's pre-tokenizer and the Unicode regex
// engines (Hugging Face tokenizers' Oniguruma) differ:
//  - llama_cpp: a non-ASCII White_Space character is seen as U+000B (so it matches \s but no
//    literal), and '~' is not in \p{S} (llama.cpp's ASCII table for \p{S} omits it);
//  - unicode: every code point is itself, with its Unicode general category.
enum class RegexMode { llama_cpp, unicode };

// A code point sequence prepared once for all patterns of a split.
struct SplitText {
  std::vector<char32_t> cp;     // (n) the code point the pattern sees
  std::vector<unsigned char> cat;  // (n) its general category (unicode::Category, 30 = none)
  std::vector<bool> space;      // (n) matched by \s
  static SplitText make(const std::vector<char32_t>& cps, RegexMode mode);
};

class SplitRegex {
 public:
  // Throws Error naming the pattern and the position of what it cannot parse.
  explicit SplitRegex(const std::string& pattern);
  ~SplitRegex();
  SplitRegex(SplitRegex&&) noexcept;
  SplitRegex& operator=(SplitRegex&&) noexcept;

  // Splits the piece [begin, end) of `text`: every non-empty match, left to right, becomes a
  // piece and so does every stretch between matches (Hugging Face's "Isolated" behaviour,
  // llama.cpp's unicode_regex_split). Appends the piece lengths to `out`. Throws Error when a
  // pattern backtracks exponentially (more than 10^6 + 256 n steps for one search on n characters).
  void split(const SplitText& text, size_t begin, size_t end, std::vector<size_t>& out) const;

  // The first match at or after `from` within [begin, end): its start and end, or false.
  bool search(const SplitText& text, size_t begin, size_t end, size_t from, size_t& match_begin,
              size_t& match_end) const;

  const std::string& pattern() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Applies `patterns` in turn, each splitting every piece the previous ones left, and returns
// the final pieces as lengths in code points (summing to text.cp.size()).
std::vector<size_t> split_pieces(const SplitText& text, const std::vector<SplitRegex>& patterns);

// The regexes llama.cpp (commit c392e50) applies for a tokenizer.ggml.pre value; false for a name
// it does not know. `ignore_merges` is set for the vocabularies whose whole-word tokens bypass
// the merges (Llama 3).
bool named_pre_tokenizer(const std::string& name, std::vector<std::string>& patterns,
                         bool& ignore_merges);

// The names named_pre_tokenizer knows, for error messages.
std::string known_pre_tokenizers();

// The GPT-2 pattern of Hugging Face's ByteLevel pre-tokenizer (use_regex = true).
extern const char* const kGpt2Pattern;

}  // namespace cibench::bpe
