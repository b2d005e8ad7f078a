#include "engines/models/wordpiece.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iterator>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/models/gguf.h"

namespace cibench {

// ---- Unicode tables ----------------------------------------------------------------------------
// wordpiece_unicode.inc is generated from Python's unicodedata, the module Hugging Face's
// BertTokenizer itself calls, so the two agree code point by code point (the unit tests check
// hand-picked cases; the generator was checked exhaustively against a Python port of
// BasicTokenizer over all 1.1M code points). The generator, run as
// `python3 gen.py > engines/models/wordpiece_unicode.inc`:
//
//   import sys, unicodedata as ud
//   def klass(c):                       # 1 space, 2 control, 3 Mn, 4 punctuation, 0 other
//       ch = chr(c); cat = ud.category(ch)
//       if ch in ' \t\n\r' or cat in ('Zs', 'Zl', 'Zp'): return 1
//       if cat.startswith('C'): return 2
//       if cat == 'Mn': return 3
//       if (33 <= c <= 47 or 58 <= c <= 64 or 91 <= c <= 96 or 123 <= c <= 126
//               or cat.startswith('P')): return 4
//       return 0
//   runs: (first code point of each run of equal class) << 3 | class
//   lower: str.lower() per code point, as runs (first, last, delta, stride 1 or 2) plus the
//          one-to-many mappings (U+0130)
//   cased: ranges where chr(c).islower() or .isupper() or .istitle()
//   case-ignorable: ranges, probed through str.lower()'s own final-sigma rule
//          (cased c: ('A\u03a3' + c).lower()[1] == '\u03c2'; others:
//           ('A\u03a3' + c + 'A').lower()[1] == '\u03c3')
//   decomp: for each non-Mn code point outside Hangul syllables, NFD with the Mn characters
//          removed, when it differs from the code point (one-to-one and one-to-many tables)
//
// (Zl and Zp count as space: clean-up keeps them, and Python's str.split() then splits on them.)
namespace {

struct LowerRun {
  uint32_t first, last;
  int32_t delta;
  uint32_t stride;
};
struct Range {
  uint32_t first, last;
};
struct Decomp1 {
  uint32_t cp, to;
};
struct MultiMap {
  uint32_t cp;
  uint32_t to[3];
};

#include "engines/models/wordpiece_unicode.inc"

enum Class : uint32_t { kOther = 0, kSpace = 1, kControl = 2, kMark = 3, kPunct = 4 };

Class class_of(char32_t c) {
  const uint32_t key = (static_cast<uint32_t>(c) << 3) | 7u;
  const uint32_t* end = kClassRuns + std::size(kClassRuns);
  const uint32_t* it = std::upper_bound(kClassRuns, end, key);  // first run starting after c
  if (it == kClassRuns) return kControl;
  return static_cast<Class>(*(it - 1) & 7u);
}

char32_t lower_simple(char32_t c) {
  const LowerRun* end = kLowerRuns + std::size(kLowerRuns);
  const LowerRun* it = std::upper_bound(kLowerRuns, end, static_cast<uint32_t>(c),
                                        [](uint32_t v, const LowerRun& r) { return v < r.first; });
  if (it == kLowerRuns) return c;
  const LowerRun& r = *(it - 1);
  if (c > r.last || (c - r.first) % r.stride != 0) return c;
  return static_cast<char32_t>(static_cast<int64_t>(c) + r.delta);
}

template <typename T>
const T* find_cp(const T* begin, const T* end, char32_t c) {
  const T* it = std::lower_bound(begin, end, static_cast<uint32_t>(c),
                                 [](const T& e, uint32_t v) { return e.cp < v; });
  return (it != end && it->cp == c) ? it : nullptr;
}

bool in_ranges(const Range* begin, const Range* end, char32_t c) {
  const Range* it = std::upper_bound(begin, end, static_cast<uint32_t>(c),
                                     [](uint32_t v, const Range& r) { return v < r.first; });
  return it != begin && c <= (it - 1)->last;
}
bool is_cased(char32_t c) { return in_ranges(kCased, kCased + std::size(kCased), c); }
bool is_case_ignorable(char32_t c) {
  return in_ranges(kCaseIgnorable, kCaseIgnorable + std::size(kCaseIgnorable), c);
}

constexpr char32_t kCapitalSigma = 0x3A3, kSmallSigma = 0x3C3, kFinalSigma = 0x3C2;

// CPython's handle_capital_sigma: U+03A3 lower-cases to the final form when
//   \p{cased} \p{case-ignorable}* U+03A3 !( \p{case-ignorable}* \p{cased} )
bool final_sigma_context(const std::u32string& s, size_t i) {
  size_t j = i;
  while (j > 0 && is_case_ignorable(s[j - 1])) --j;
  if (j == 0 || !is_cased(s[j - 1])) return false;
  size_t k = i + 1;
  while (k < s.size() && is_case_ignorable(s[k])) ++k;
  return k == s.size() || !is_cased(s[k]);
}

// Hangul syllables decompose algorithmically into conjoining jamo (which are letters, kept).
constexpr char32_t kHangulBase = 0xAC00, kHangulCount = 11172;
constexpr char32_t kJamoL = 0x1100, kJamoV = 0x1161, kJamoT = 0x11A7;
constexpr char32_t kJamoVCount = 21, kJamoTCount = 28;

}  // namespace

namespace wordpiece_unicode {

bool is_whitespace(char32_t c) { return class_of(c) == kSpace; }
bool is_control(char32_t c) { return class_of(c) == kControl; }
bool is_punctuation(char32_t c) { return class_of(c) == kPunct; }
bool is_nonspacing_mark(char32_t c) { return class_of(c) == kMark; }

bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

std::u32string lower(const std::u32string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char32_t c = s[i];
    if (c < 0x80) {
      out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
      continue;
    }
    if (c == kCapitalSigma) {
      out.push_back(final_sigma_context(s, i) ? kFinalSigma : kSmallSigma);
      continue;
    }
    if (const MultiMap* m = find_cp(kLowerSpecial, kLowerSpecial + std::size(kLowerSpecial), c)) {
      for (uint32_t t : m->to)
        if (t) out.push_back(t);
      continue;
    }
    out.push_back(lower_simple(c));
  }
  return out;
}

std::u32string strip_accents(const std::u32string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (const char32_t c : s) {
    if (c < 0x80) {
      out.push_back(c);
      continue;
    }
    if (c >= kHangulBase && c < kHangulBase + kHangulCount) {
      const char32_t idx = c - kHangulBase;
      out.push_back(kJamoL + idx / (kJamoVCount * kJamoTCount));
      out.push_back(kJamoV + (idx % (kJamoVCount * kJamoTCount)) / kJamoTCount);
      if (idx % kJamoTCount) out.push_back(kJamoT + idx % kJamoTCount);
      continue;
    }
    if (class_of(c) == kMark) continue;
    if (const Decomp1* d = find_cp(kStripDecomp1, kStripDecomp1 + std::size(kStripDecomp1), c)) {
      out.push_back(d->to);
      continue;
    }
    if (const MultiMap* m = find_cp(kStripDecompN, kStripDecompN + std::size(kStripDecompN), c)) {
      for (uint32_t t : m->to)
        if (t) out.push_back(t);
      continue;
    }
    out.push_back(c);
  }
  return out;
}

std::u32string utf8_to_u32(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char b = p[i];
    int len = 0;
    char32_t c = 0;
    if (b < 0x80) {
      out.push_back(b);
      ++i;
      continue;
    } else if ((b & 0xE0) == 0xC0) {
      len = 2;
      c = b & 0x1F;
    } else if ((b & 0xF0) == 0xE0) {
      len = 3;
      c = b & 0x0F;
    } else if ((b & 0xF8) == 0xF0) {
      len = 4;
      c = b & 0x07;
    } else {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    bool ok = i + len <= n;
    for (int k = 1; ok && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) ok = false;
      else c = (c << 6) | (p[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid.
    static constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (ok && (c < kMin[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))) ok = false;
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(c);
    i += len;
  }
  return out;
}

std::string u32_to_utf8(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char32_t c : s) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

}  // namespace wordpiece_unicode

// ---- Basic tokenizer ------------------------------------------------------------------------------
namespace {

namespace wu = wordpiece_unicode;

// The special pieces BertTokenizer recognises verbatim in the input before basic tokenization.
const char* const kSpecialPieces[] = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};

// Runs BasicTokenizer on one stretch of text (no special pieces inside) and appends its words.
void basic_words(const std::u32string& text, const WordPieceOptions& opts,
                 std::vector<std::u32string>* words) {
  // Clean-up (drop NUL, U+FFFD and control characters; whitespace becomes a space) and spaces
  // around CJK ideographs, then split on whitespace.
  std::vector<std::u32string> tokens;
  std::u32string cur;
  auto flush = [&] {
    if (!cur.empty()) tokens.push_back(std::move(cur));
    cur.clear();
  };
  for (const char32_t c : text) {
    if (c == 0 || c == 0xFFFD || wu::is_control(c)) continue;
    if (wu::is_whitespace(c)) {
      flush();
    } else if (opts.split_cjk && wu::is_cjk(c)) {
      flush();
      tokens.push_back(std::u32string(1, c));
    } else {
      cur.push_back(c);
    }
  }
  flush();

  const bool strip = opts.strip_accents < 0 ? opts.lower_case : opts.strip_accents > 0;
  for (std::u32string& tok : tokens) {
    if (opts.lower_case) tok = wu::lower(tok);
    if (strip) tok = wu::strip_accents(tok);
    // Punctuation splitting: every punctuation character is a word of its own.
    std::u32string word;
    for (const char32_t c : tok) {
      if (wu::is_punctuation(c)) {
        if (!word.empty()) words->push_back(std::move(word));
        word.clear();
        words->push_back(std::u32string(1, c));
      } else {
        word.push_back(c);
      }
    }
    if (!word.empty()) words->push_back(std::move(word));
  }
}

}  // namespace

// ---- Vocabulary ----------------------------------------------------------------------------------
WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> pieces,
                                       const WordPieceOptions& opts, const std::string& origin)
    : pieces_(std::move(pieces)), opts_(opts), origin_(origin) {
  if (pieces_.empty()) throw FileError(origin_, "the WordPiece vocabulary is empty");
  if (opts_.max_chars_per_word <= 0)
    throw Error(str("max_chars_per_word must be positive, got ", opts_.max_chars_per_word));
  ids_.reserve(pieces_.size() * 2);
  for (size_t i = 0; i < pieces_.size(); ++i) {
    ids_[pieces_[i]] = static_cast<int>(i);  // a repeated piece maps to its last line, as in HF
    std::u32string u = wu::utf8_to_u32(pieces_[i]);
    size_t chars = u.size();
    if (u.size() >= 2 && u[0] == U'#' && u[1] == U'#') chars -= 2;
    max_piece_chars_ = std::max(max_piece_chars_, chars);
  }
  auto need = [&](const char* name) {
    const int id = find(name);
    if (id < 0) throw FileError(origin_, str("the WordPiece vocabulary has no ", name, " piece"));
    return id;
  };
  unk_id_ = need("[UNK]");
  cls_id_ = need("[CLS]");
  sep_id_ = need("[SEP]");
  pad_id_ = std::max(0, find("[PAD]"));
}

WordPieceTokenizer WordPieceTokenizer::from_vocab_txt(const std::string& path,
                                                      const WordPieceOptions& opts) {
  const std::string text = read_file(path);
  std::vector<std::string> pieces;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    pieces.push_back(std::move(line));
    pos = nl + 1;
  }
  return WordPieceTokenizer(std::move(pieces), opts, path);
}

WordPieceTokenizer WordPieceTokenizer::from_hf_folder(const std::string& dir) {
  namespace fs = std::filesystem;
  WordPieceOptions opts;
  const std::string cfg = (fs::path(dir) / "tokenizer_config.json").string();
  if (fs::exists(cfg)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_file(cfg));
    } catch (const nlohmann::json::exception& e) {
      throw FileError(cfg, str("not valid JSON (", e.what(), ")"));
    }
    if (!j.is_object()) throw FileError(cfg, "not a JSON object");
    auto flag = [&](const char* key, bool fallback) {
      auto it = j.find(key);
      if (it == j.end() || it->is_null()) return fallback;
      if (!it->is_boolean()) throw FileError(cfg, str("'", key, "' must be true or false"));
      return it->get<bool>();
    };
    opts.lower_case = flag("do_lower_case", true);
    opts.split_cjk = flag("tokenize_chinese_chars", true);
    auto sa = j.find("strip_accents");
    if (sa != j.end() && !sa->is_null()) opts.strip_accents = flag("strip_accents", false) ? 1 : 0;
  }
  return from_vocab_txt((fs::path(dir) / "vocab.txt").string(), opts);
}

WordPieceTokenizer WordPieceTokenizer::from_gguf(const std::string& path,
                                                 const WordPieceOptions& opts) {
  GgufFile f(path);
  if (f.has("tokenizer.ggml.model")) {
    const std::string& model = f.get("tokenizer.ggml.model").as_string("tokenizer.ggml.model", path);
    if (model != "bert")
      throw FileError(path, str("tokenizer.ggml.model is '", model,
                                "', not 'bert' (a WordPiece vocabulary)"));
  }
  const GgufValue& toks = f.get("tokenizer.ggml.tokens");
  if (toks.type != GgufType::array || toks.array_type != GgufType::string)
    throw FileError(path, "tokenizer.ggml.tokens is not an array of strings");
  const GgufValue* types = nullptr;
  if (f.has("tokenizer.ggml.token_type")) {
    types = &f.get("tokenizer.ggml.token_type");
    if (types->type != GgufType::array || types->array.size() != toks.array.size())
      throw FileError(path, str("tokenizer.ggml.token_type has ", types->array.size(),
                                " entries but tokenizer.ggml.tokens has ", toks.array.size()));
  }
  // llama.cpp's converter writes "▁word" for word-initial pieces and "piece" for "##piece";
  // control pieces ([CLS] ...) and bracketed placeholders ([unused0] ...) are kept as they are.
  static const std::string kWordStart = "\xE2\x96\x81";  // U+2581
  constexpr int64_t kControlType = 3;
  std::vector<std::string> pieces;
  pieces.reserve(toks.array.size());
  for (size_t i = 0; i < toks.array.size(); ++i) {
    const std::string& t = toks.array[i].as_string("tokenizer.ggml.tokens", path);
    const bool control =
        types && types->array[i].as_int("tokenizer.ggml.token_type", path) == kControlType;
    if (t.compare(0, kWordStart.size(), kWordStart) == 0)
      pieces.push_back(t.substr(kWordStart.size()));
    else if (control || (t.size() >= 2 && t.front() == '[' && t.back() == ']'))
      pieces.push_back(t);
    else
      pieces.push_back("##" + t);
  }
  WordPieceTokenizer tok(std::move(pieces), opts, path);
  // Special ids the file states override the by-name lookup.
  auto id_of = [&](const char* key, int* dst) {
    if (!f.has(key)) return;
    const int64_t v = f.get(key).as_int(key, path);
    if (v < 0 || v >= tok.vocab_size())
      throw FileError(path, str(key, " = ", v, " is outside the vocabulary of ", tok.vocab_size()));
    *dst = static_cast<int>(v);
  };
  id_of("tokenizer.ggml.unknown_token_id", &tok.unk_id_);
  id_of("tokenizer.ggml.cls_token_id", &tok.cls_id_);
  id_of("tokenizer.ggml.seperator_token_id", &tok.sep_id_);
  id_of("tokenizer.ggml.padding_token_id", &tok.pad_id_);
  return tok;
}

const std::string& WordPieceTokenizer::piece(int id) const {
  CIBENCH_CHECK(id >= 0 && id < vocab_size(), "token id ", id, " is outside the vocabulary of ",
                vocab_size(), " (", origin_, ")");
  return pieces_[static_cast<size_t>(id)];
}

int WordPieceTokenizer::find(const std::string& p) const {
  auto it = ids_.find(p);
  return it == ids_.end() ? -1 : it->second;
}

// ---- Tokenization ----------------------------------------------------------------------------------
namespace {

// Splits `text` at the special pieces spelled out in it (e.g. "[SEP]"), which BertTokenizer
// keeps whole, and runs the basic tokenizer on the stretches between them:
// on_word(u32 word) for each word, on_special(id, piece) for each special piece.
template <typename OnWord, typename OnSpecial>
void split_text(const WordPieceTokenizer& tok, const std::string& text, OnWord on_word,
                OnSpecial on_special) {
  std::vector<std::u32string> words;
  size_t pos = 0;
  for (;;) {
    size_t best = std::string::npos;
    const char* best_piece = nullptr;
    if (text.find('[', pos) != std::string::npos) {
      for (const char* sp : kSpecialPieces) {
        if (tok.find(sp) < 0) continue;
        const size_t at = text.find(sp, pos);
        if (at < best) {
          best = at;
          best_piece = sp;
        }
      }
    }
    const size_t stop = best == std::string::npos ? text.size() : best;
    words.clear();
    basic_words(wu::utf8_to_u32(text.substr(pos, stop - pos)), tok.options(), &words);
    for (const std::u32string& w : words) on_word(w);
    if (best == std::string::npos) break;
    on_special(tok.find(best_piece), best_piece);
    pos = best + std::strlen(best_piece);
  }
}

}  // namespace

std::vector<std::string> WordPieceTokenizer::basic_tokenize(const std::string& text) const {
  std::vector<std::string> out;
  split_text(
      *this, text, [&](const std::u32string& w) { out.push_back(wu::u32_to_utf8(w)); },
      [&](int, const char* piece) { out.push_back(piece); });
  return out;
}

std::string WordPieceTokenizer::normalize(const std::string& text) const {
  std::string out;
  for (const std::string& w : basic_tokenize(text)) {
    if (!out.empty()) out.push_back(' ');
    out += w;
  }
  return out;
}

void WordPieceTokenizer::wordpiece(const std::u32string& word, std::vector<int>* out) const {
  if (word.size() > static_cast<size_t>(opts_.max_chars_per_word)) {
    out->push_back(unk_id_);
    return;
  }
  // The word in UTF-8 with the byte offset of every character, so candidates are substrings.
  const std::string utf8 = wu::u32_to_utf8(word);
  std::vector<size_t> at(word.size() + 1, 0);
  for (size_t i = 0; i < word.size(); ++i) {
    const char32_t c = word[i];
    at[i + 1] = at[i] + (c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4);
  }
  const size_t first = out->size();
  std::string candidate;
  size_t start = 0;
  while (start < word.size()) {
    // Longest piece first: the rest of the word, shortened one character at a time.
    size_t end = std::min(word.size(), start + max_piece_chars_);
    int found = -1;
    for (; end > start; --end) {
      candidate.assign(start > 0 ? "##" : "");
      candidate.append(utf8, at[start], at[end] - at[start]);
      found = find(candidate);
      if (found >= 0) break;
    }
    if (found < 0) {  // no piece matches here: the whole word is unknown
      out->resize(first);
      out->push_back(unk_id_);
      return;
    }
    out->push_back(found);
    start = end;
  }
}

std::vector<int> WordPieceTokenizer::tokenize(const std::string& text) const {
  std::vector<int> ids;
  split_text(
      *this, text, [&](const std::u32string& w) { wordpiece(w, &ids); },
      [&](int id, const char*) { ids.push_back(id); });
  return ids;
}

std::vector<int> WordPieceTokenizer::encode(const std::string& text, int max_length) const {
  CIBENCH_CHECK(max_length >= 2, "max_length must be at least 2 ([CLS] and [SEP]), got ",
                max_length);
  std::vector<int> pieces = tokenize(text);
  if (pieces.size() > static_cast<size_t>(max_length - 2)) pieces.resize(max_length - 2);
  std::vector<int> ids;
  ids.reserve(pieces.size() + 2);
  ids.push_back(cls_id_);
  ids.insert(ids.end(), pieces.begin(), pieces.end());
  ids.push_back(sep_id_);
  return ids;
}

std::string vocab_size_warning(const std::string& vocab_name, int pieces, int embedding_rows) {
  if (pieces >= embedding_rows) return "";
  return str("the vocabulary (", vocab_name, ") has ", pieces, " pieces but the model's embedding has ", embedding_rows,
             " rows: fine for a padded embedding, wrong for a truncated or different vocab.txt");
}

}  // namespace cibench
