// Tokenizer front door (open_tokenizer), the decoding rule shared by all kinds, and the llama2.c
// tokenizer.bin reader and encoder.
#include "engines/models/tokenizer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <queue>
#include <unordered_map>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/models/tokenizer_impl.h"

namespace cibench {
namespace tokenizer_detail {

// ---------------------------------------------------------------- pieces and decoding

int parse_byte_piece(const std::string& s) {
  if (s.size() != 6 || s[0] != '<' || s[1] != '0' || s[2] != 'x' || s[5] != '>') return -1;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(s[3]), lo = hex(s[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

std::string unescape_spaces(const std::string& s) {
  static const std::string kSpace = "\xE2\x96\x81";  // U+2581
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, kSpace.size(), kSpace) == 0) {
      out.push_back(' ');
      i += kSpace.size();
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

void PieceTable::add(std::string piece_text, PieceKind k) {
  int b = -1;
  if (k == PieceKind::byte || k == PieceKind::text) b = parse_byte_piece(piece_text);
  if (k == PieceKind::text && b >= 0) k = PieceKind::byte;
  // A piece typed as byte whose text is not <0xAB> is printed as its text.
  if (k == PieceKind::byte && b < 0) k = PieceKind::text;
  text.push_back(std::move(piece_text));
  kind.push_back(k);
  byte.push_back(static_cast<uint8_t>(b < 0 ? 0 : b));
}

std::string decode_piece(const PieceTable& pieces, int bos, int prev, int token) {
  if (token < 0 || token >= pieces.size())
    throw Error(str("decode: token ", token, " is outside the vocabulary [0, ", pieces.size(), ")"));
  const size_t t = static_cast<size_t>(token);
  switch (pieces.kind[t]) {
    case PieceKind::byte:
      return std::string(1, static_cast<char>(pieces.byte[t]));
    case PieceKind::control:
      return std::string();
    case PieceKind::text:
      break;
  }
  const std::string& s = pieces.text[t];
  if (prev == bos && !s.empty() && s[0] == ' ') return s.substr(1);
  return s;
}

// ---------------------------------------------------------------- control and user-defined pieces

std::vector<SpecialPiece> special_pieces(const std::vector<std::string>& texts, const std::vector<int>& types) {
  std::vector<SpecialPiece> out;
  for (size_t i = 0; i < texts.size() && i < types.size(); ++i) {
    if (texts[i].empty()) continue;
    const int t = types[i];
    if (t == 2 || t == 3) out.push_back(SpecialPiece{static_cast<int>(i), true});
    else if (t == 4) out.push_back(SpecialPiece{static_cast<int>(i), false});
  }
  // Longest first, as llama.cpp's special-token cache is ordered.
  std::stable_sort(out.begin(), out.end(), [&](const SpecialPiece& a, const SpecialPiece& b) {
    return texts[static_cast<size_t>(a.id)].size() > texts[static_cast<size_t>(b.id)].size();
  });
  return out;
}

std::vector<Fragment> partition_specials(const std::vector<TextSegment>& segments,
                                         const std::vector<SpecialPiece>& specials,
                                         const std::vector<std::string>& texts, std::string& joined) {
  struct Part {
    Fragment f;
    bool special;  // raw text from a special segment
  };
  std::vector<Part> parts;
  joined.clear();
  for (const TextSegment& seg : segments) {
    if (seg.text.empty()) continue;
    parts.push_back(Part{Fragment{-1, joined.size(), seg.text.size()}, seg.special});
    joined += seg.text;
  }
  std::vector<Part> next;
  for (const SpecialPiece& sp : specials) {
    const std::string& t = texts[static_cast<size_t>(sp.id)];
    next.clear();
    for (const Part& p : parts) {
      if (p.f.token >= 0 || (sp.control && !p.special)) {
        next.push_back(p);
        continue;
      }
      size_t start = p.f.off;
      const size_t end = p.f.off + p.f.len;
      for (;;) {
        const size_t hit = joined.find(t, start);
        if (hit == std::string::npos || hit + t.size() > end) break;
        if (hit > start) next.push_back(Part{Fragment{-1, start, hit - start}, p.special});
        next.push_back(Part{Fragment{sp.id, hit, t.size()}, p.special});
        start = hit + t.size();
      }
      if (start < end) next.push_back(Part{Fragment{-1, start, end - start}, p.special});
    }
    parts.swap(next);
  }
  std::vector<Fragment> out;
  out.reserve(parts.size());
  for (const Part& p : parts) {
    if (p.f.token < 0 && !out.empty() && out.back().token < 0 && out.back().off + out.back().len == p.f.off)
      out.back().len += p.f.len;
    else
      out.push_back(p.f);
  }
  return out;
}

// ---------------------------------------------------------------- llama2.c tokenizer.bin

namespace {

class Llama2cTokenizer final : public Tokenizer {
 public:
  Llama2cTokenizer(std::vector<std::string> vocab, std::vector<float> scores)
      : vocab_(std::move(vocab)), scores_(std::move(scores)) {
    lookup_.reserve(vocab_.size() * 2);
    // llama2.c looks pieces up by binary search in a sorted copy; with duplicate pieces the id it
    // finds is unspecified. Here the lowest id wins (neither shipped vocabulary has duplicates).
    for (size_t i = 0; i < vocab_.size(); ++i) lookup_.emplace(vocab_[i], static_cast<int>(i));
    for (const std::string& v : vocab_) pieces_.add(v, PieceKind::text);
    auto it = lookup_.find(" ");
    space_id_ = it == lookup_.end() ? -1 : it->second;
  }

  std::vector<int> encode(const std::string& text, bool add_bos, bool add_eos) const override;

  std::string decode(int prev, int token) const override {
    return decode_piece(pieces_, kBos, prev, token);
  }
  int vocab_size() const override { return static_cast<int>(vocab_.size()); }
  int bos_id() const override { return kBos; }
  int eos_id() const override { return kEos; }
  std::string kind() const override { return "llama2c"; }
  VocabPieces pieces() const override;

 private:
  static constexpr int kBos = 1;  // fixed by llama2.c
  static constexpr int kEos = 2;

  int lookup(const std::string& s) const {
    auto it = lookup_.find(s);
    return it == lookup_.end() ? -1 : it->second;
  }
  int byte_token(unsigned char b) const {
    const int id = b + 3;  // llama2.c: the 256 byte pieces follow <unk>, <s>, </s>
    return id < vocab_size() ? id : 0;
  }

  std::vector<std::string> vocab_;  // (vocab) piece bytes as stored (spaces as ' ')
  std::vector<float> scores_;       // (vocab) merge priority
  std::unordered_map<std::string, int> lookup_;
  PieceTable pieces_;
  int space_id_ = -1;
};

// llama2.c's tokenizer.bin is a SentencePiece vocabulary written with "▁" turned into spaces and
// BOS/EOS as "\n<s>\n" / "\n</s>\n" (llama2.c's tokenizer.py): undone here.
VocabPieces Llama2cTokenizer::pieces() const {
  static const std::string kSpace = "\xE2\x96\x81";  // U+2581
  VocabPieces v;
  v.bos_id = kBos;
  v.eos_id = kEos;
  v.unk_id = 0;
  v.scores = scores_;
  for (size_t i = 0; i < vocab_.size(); ++i) {
    std::string t = vocab_[i];
    int32_t type = 1;
    if (i == kBos || i == kEos) {
      if (t.size() >= 2 && t.front() == '\n' && t.back() == '\n') t = t.substr(1, t.size() - 2);
      type = 3;
    } else if (i == 0 && t == "<unk>") {
      type = 2;
    } else if (parse_byte_piece(t) >= 0) {
      type = 6;
    }
    std::string escaped;
    for (char c : t) {
      if (c == ' ') escaped += kSpace;
      else escaped.push_back(c);
    }
    v.tokens.push_back(std::move(escaped));
    v.types.push_back(type);
  }
  return v;
}

std::vector<int> Llama2cTokenizer::encode(const std::string& text, bool add_bos,
                                          bool add_eos) const {
  std::vector<int> tokens;
  tokens.reserve(text.size() + 3);
  if (add_bos) tokens.push_back(kBos);
  // The dummy prefix: llama2.c always adds the " " piece before non-empty text.
  if (!text.empty() && space_id_ >= 0) tokens.push_back(space_id_);

  // Codepoint-wise lookup, exactly as run.c walks the bytes: a lead byte starts a new buffer,
  // continuation bytes are appended (at most 4 bytes per buffer), and a buffer that is not a
  // piece falls back to one byte token per byte.
  std::string buf;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) != 0x80) buf.clear();
    buf.push_back(static_cast<char>(c));
    const unsigned char next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if ((next & 0xC0) == 0x80 && buf.size() < 4) continue;
    const int id = lookup(buf);
    if (id >= 0) {
      tokens.push_back(id);
    } else {
      for (char b : buf) tokens.push_back(byte_token(static_cast<unsigned char>(b)));
    }
    buf.clear();
  }

  // run.c repeatedly scans all adjacent pairs and merges the one whose concatenation is a piece
  // with the highest score (strictly above -1e10; ties go to the leftmost pair). The same result
  // in O(n log n): a heap of candidate pairs ordered by (score desc, position asc) over a linked
  // list, where entries made stale by an earlier merge are skipped. Every current pair is in the
  // heap (each new adjacency is pushed when it forms), so the top valid entry is run.c's choice.
  const int n = static_cast<int>(tokens.size());
  if (n >= 2) {
    std::vector<int> prev(n), next(n);
    for (int i = 0; i < n; ++i) {
      prev[i] = i - 1;
      next[i] = i + 1 < n ? i + 1 : -1;
    }
    std::vector<char> alive(n, 1);
    struct Cand {
      float score;
      int left, right;         // positions in the original sequence
      int left_tok, right_tok; // the tokens the pair was made of
      int merged;
    };
    auto lower = [](const Cand& a, const Cand& b) {
      return a.score < b.score || (a.score == b.score && a.left > b.left);
    };
    std::priority_queue<Cand, std::vector<Cand>, decltype(lower)> heap(lower);
    std::string cat;
    auto consider = [&](int l, int r) {
      if (l < 0 || r < 0) return;
      cat.assign(vocab_[tokens[l]]);
      cat.append(vocab_[tokens[r]]);
      const int id = lookup(cat);
      if (id < 0) return;
      const float s = scores_[id];
      if (!(s > -1e10f)) return;
      heap.push(Cand{s, l, r, tokens[l], tokens[r], id});
    };
    for (int i = 0; i + 1 < n; ++i) consider(i, i + 1);
    while (!heap.empty()) {
      const Cand c = heap.top();
      heap.pop();
      if (!alive[c.left] || !alive[c.right] || next[c.left] != c.right ||
          tokens[c.left] != c.left_tok || tokens[c.right] != c.right_tok)
        continue;
      tokens[c.left] = c.merged;
      alive[c.right] = 0;
      next[c.left] = next[c.right];
      if (next[c.right] >= 0) prev[next[c.right]] = c.left;
      consider(prev[c.left], c.left);
      consider(c.left, next[c.left]);
    }
    std::vector<int> merged;
    merged.reserve(n);
    for (int i = 0; i >= 0; i = next[i]) merged.push_back(tokens[i]);
    tokens.swap(merged);
  }
  if (add_eos) tokens.push_back(kEos);
  return tokens;
}

}  // namespace

std::unique_ptr<Tokenizer> open_llama2c(const std::string& path, int vocab_size_hint) {
  const std::string data = read_file(path);
  const size_t size = data.size();
  size_t pos = 0;
  auto read_i32 = [&](size_t at) {
    int32_t v;
    std::memcpy(&v, data.data() + at, 4);
    return v;
  };
  if (size < 4)
    throw FileError(path, str("llama2.c tokenizer is ", size,
                              " bytes, too short for its 4-byte max_token_length header"));
  const int32_t max_len = read_i32(0);
  pos = 4;
  if (max_len <= 0)
    throw FileError(path, str("llama2.c tokenizer header max_token_length is ", max_len,
                              " (must be positive)"));

  std::vector<std::string> vocab;
  std::vector<float> scores;
  const size_t cap = size / 8;  // every token takes at least 8 bytes
  vocab.reserve(vocab_size_hint > 0 ? std::min(cap, static_cast<size_t>(vocab_size_hint)) : cap);
  scores.reserve(vocab.capacity());
  while (vocab_size_hint > 0 ? vocab.size() < static_cast<size_t>(vocab_size_hint) : pos < size) {
    const size_t i = vocab.size();
    if (size - pos < 8) {
      throw FileError(path, str("llama2.c tokenizer truncated: token ", i, " at offset ", pos,
                                " needs 8 bytes (score, length), ", size - pos, " left",
                                vocab_size_hint > 0 ? str(" (expected ", vocab_size_hint,
                                                          " tokens)")
                                                    : std::string()));
    }
    float score;
    std::memcpy(&score, data.data() + pos, 4);
    const int32_t len = read_i32(pos + 4);
    pos += 8;
    if (len < 0)
      throw FileError(path, str("llama2.c tokenizer token ", i, " has negative length ", len));
    // Merges are ranked by score: a NaN or infinity would silently change every encoding.
    if (!std::isfinite(score))
      throw FileError(path, str("llama2.c tokenizer token ", i, " has a non-finite score (", score, ")"));
    if (static_cast<size_t>(len) > size - pos)
      throw FileError(path, str("llama2.c tokenizer truncated: token ", i, " has length ", len,
                                " but only ", size - pos, " bytes are left at offset ", pos));
    if (len > max_len)
      throw FileError(path, str("llama2.c tokenizer token ", i, " has length ", len,
                                " > max_token_length ", max_len));
    vocab.emplace_back(data.data() + pos, static_cast<size_t>(len));
    scores.push_back(score);
    pos += static_cast<size_t>(len);
  }
  if (vocab.size() < 3)
    throw FileError(path, str("llama2.c tokenizer has ", vocab.size(),
                              " tokens; it needs at least 3 (<unk>, BOS, EOS)"));
  return std::make_unique<Llama2cTokenizer>(std::move(vocab), std::move(scores));
}

}  // namespace tokenizer_detail

// ---------------------------------------------------------------- front door

std::vector<int> Tokenizer::encode_segments(const std::vector<TextSegment>& segments, bool add_bos,
                                            bool add_eos) const {
  std::string text;
  for (const TextSegment& s : segments) text += s.text;
  return encode(text, add_bos, add_eos);
}

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path, int vocab_size_hint) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (vocab_size_hint < 0)
    throw FileError(path, str("vocabulary size hint ", vocab_size_hint, " is negative"));
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw FileError(path, "tokenizer file does not exist");
  if (std::filesystem::is_directory(path, ec)) {
    // A Hugging Face model folder: its tokenizer.json, else its SentencePiece tokenizer.model.
    for (const char* name : {"tokenizer.json", "tokenizer.model"}) {
      const std::filesystem::path f = std::filesystem::path(path) / name;
      if (std::filesystem::is_regular_file(f, ec)) return open_tokenizer(f.string(), vocab_size_hint);
    }
    throw FileError(path, "is a directory without tokenizer.json or tokenizer.model");
  }
  if (ext == ".bin") return tokenizer_detail::open_llama2c(path, vocab_size_hint);
  if (ext == ".model") return tokenizer_detail::open_sentencepiece(path);
  if (ext == ".gguf") return tokenizer_detail::open_gguf_vocab(path);
  if (ext == ".json") return tokenizer_detail::open_tokenizer_json(path);
  throw FileError(path, str("unknown tokenizer file type '", ext,
                            "' (expected .bin for llama2.c, .model for SentencePiece, .gguf, "
                            ".json for a Hugging Face tokenizer.json, or a model folder)"));
}

}  // namespace cibench
