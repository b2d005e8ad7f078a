// The vocabulary inside a GGUF file (tokenizer.ggml.model "llama"; "gpt2" goes to
// tokenizer_bpe.cpp) and the SentencePiece-BPE
// encoder of llama.cpp's llm_tokenizer_spm: spaces escaped as U+2581, an optional "▁" prefix,
// UTF-8 characters merged pairwise by the merged piece's score, unknown symbols as byte pieces.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <queue>
#include <unordered_map>
#include <variant>

#include "engines/core/error.h"
#include "engines/models/gguf.h"
#include "engines/models/tokenizer_impl.h"

namespace cibench {
namespace tokenizer_detail {
namespace {

// GGUF token types (llama.cpp's llama_token_type).
enum GgufTokenType : int {
  kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

// Bytes of the UTF-8 sequence that starts with `c`, from its high nibble (llama.cpp's
// unicode_len_utf8): a stray continuation byte counts as one character.
size_t utf8_len(unsigned char c) {
  static const size_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lookup[c >> 4];
}

std::string escape_spaces(const std::string& s) {
  std::string out;
  out.reserve(s.size() + s.size() / 2);
  for (char c : s) {
    if (c == ' ') out += "\xE2\x96\x81";
    else out.push_back(c);
  }
  return out;
}

class GgufSpmTokenizer final : public Tokenizer {
 public:
  GgufSpmTokenizer(std::string path, std::vector<std::string> tokens, std::vector<float> scores,
                   std::vector<int> types, int bos, int eos, int unk, bool add_space_prefix)
      : path_(std::move(path)), tokens_(std::move(tokens)), scores_(std::move(scores)),
        types_(std::move(types)), bos_(bos), eos_(eos), unk_(unk),
        add_space_prefix_(add_space_prefix) {
    const int n = static_cast<int>(tokens_.size());
    token_to_id_.reserve(tokens_.size() * 2);
    // As llama.cpp builds its map: a later duplicate replaces an earlier one.
    for (int i = 0; i < n; ++i) token_to_id_[tokens_[i]] = i;
    for (int i = 0; i < n; ++i) {
      PieceKind k = PieceKind::text;
      if (types_[i] == kControl) k = PieceKind::control;
      else if (types_[i] == kByte) k = PieceKind::byte;
      pieces_.add(unescape_spaces(tokens_[i]), k);
    }
    specials_ = special_pieces(tokens_, types_);
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      auto it = token_to_id_.find(name);
      byte_token_[b] = it == token_to_id_.end() ? -1 : it->second;
    }
  }

  std::vector<int> encode(const std::string& text, bool add_bos, bool add_eos) const override {
    return encode_segments({TextSegment{text, false}}, add_bos, add_eos);
  }
  std::vector<int> encode_segments(const std::vector<TextSegment>& segments, bool add_bos,
                                   bool add_eos) const override;

  std::string decode(int prev, int token) const override {
    return decode_piece(pieces_, bos_, prev, token);
  }
  int vocab_size() const override { return static_cast<int>(tokens_.size()); }
  int bos_id() const override { return bos_; }
  int eos_id() const override { return eos_; }
  std::string kind() const override { return "gguf-spm"; }
  VocabPieces pieces() const override {
    VocabPieces v;
    v.tokens = tokens_;
    v.scores = scores_;
    v.types.assign(types_.begin(), types_.end());
    v.bos_id = bos_;
    v.eos_id = eos_;
    v.unk_id = unk_;
    return v;
  }

 private:
  int text_to_token(const std::string& s) const {
    auto it = token_to_id_.find(s);
    return it == token_to_id_.end() ? -1 : it->second;
  }
  void tokenize_fragment(const std::string& text, std::vector<int>& out) const;

  std::string path_;
  std::vector<std::string> tokens_;  // (vocab) piece text with "▁" for spaces
  std::vector<float> scores_;        // (vocab)
  std::vector<int> types_;           // (vocab) GgufTokenType
  int bos_, eos_, unk_;
  bool add_space_prefix_;
  std::unordered_map<std::string, int> token_to_id_;
  std::vector<SpecialPiece> specials_;  // control, unknown and user-defined pieces, longest first
  int byte_token_[256];
  PieceTable pieces_;
};

// One piece of llama.cpp's llm_tokenizer_spm_session::tokenize.
void GgufSpmTokenizer::tokenize_fragment(const std::string& text, std::vector<int>& out) const {
  struct Symbol {
    size_t off, n;
    int prev, next;
  };
  struct Bigram {
    float score;
    int left, right;
    size_t size;
  };
  auto lower = [](const Bigram& l, const Bigram& r) {
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  };

  std::vector<Symbol> sym;
  sym.reserve(text.size());
  for (size_t off = 0; off < text.size();) {
    const size_t len = std::min(utf8_len(static_cast<unsigned char>(text[off])), text.size() - off);
    const int index = static_cast<int>(sym.size());
    sym.push_back(Symbol{off, len, index - 1, off + len == text.size() ? -1 : index + 1});
    off += len;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, decltype(lower)> queue(lower);
  std::string merged;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    merged.assign(text, sym[left].off, sym[left].n + sym[right].n);
    const int id = text_to_token(merged);
    if (id < 0) return;
    queue.push(Bigram{scores_[id], left, right, merged.size()});
  };
  for (int i = 1; i < static_cast<int>(sym.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = sym[b.left];
    Symbol& r = sym[b.right];
    // Skip pairs that an earlier merge changed (a symbol only grows by absorbing its right
    // neighbour, so unchanged lengths mean unchanged symbols).
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  // Resegment. Every merged symbol is a piece (merges only form pieces), so llama.cpp's
  // rev_merge step never applies: a symbol is a piece or falls back to byte pieces.
  if (sym.empty()) return;
  for (int i = 0; i != -1; i = sym[i].next) {
    const Symbol& s = sym[i];
    const int id = text_to_token(text.substr(s.off, s.n));
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (size_t j = 0; j < s.n; ++j) {
      const int bt = byte_token_[static_cast<unsigned char>(text[s.off + j])];
      if (bt >= 0) {
        out.push_back(bt);
      } else if (unk_ >= 0) {
        out.push_back(unk_);
      } else {
        throw Error(str(path_, ": vocabulary has neither the byte piece for 0x", std::hex,
                        static_cast<int>(static_cast<unsigned char>(text[s.off + j])),
                        " nor an unknown token"));
      }
    }
  }
}

std::vector<int> GgufSpmTokenizer::encode_segments(const std::vector<TextSegment>& segments, bool add_bos,
                                                   bool add_eos) const {
  std::vector<int> out;
  if (add_bos) {
    if (bos_ < 0) throw Error(str(path_, ": vocabulary has no BOS token"));
    out.push_back(bos_);
  }
  // Fragments: raw text, or a piece cut out of it before tokenizing (llama.cpp's
  // tokenizer_st_partition: control and unknown pieces only in special segments).
  std::string text;
  const std::vector<Fragment> frags = partition_specials(segments, specials_, tokens_, text);
  out.reserve(out.size() + text.size() + 2);

  // As llama.cpp: the prefix space goes before the first text and after each user-defined piece.
  bool prev_special = true;
  for (const Fragment& f : frags) {
    if (f.token >= 0) {
      out.push_back(f.token);
      prev_special = true;
      continue;
    }
    std::string piece;
    if (add_space_prefix_ && prev_special) piece = " ";
    piece.append(text, f.off, f.len);
    tokenize_fragment(escape_spaces(piece), out);
    prev_special = false;
  }
  if (add_eos) {
    if (eos_ < 0) throw Error(str(path_, ": vocabulary has no EOS token"));
    out.push_back(eos_);
  }
  return out;
}

const GgufValue& get_array(const GgufFile& g, const std::string& key, size_t expect) {
  const GgufValue& v = g.get(key);
  if (v.type != GgufType::array)
    throw FileError(g.path(), str("metadata ", key, " is not an array"));
  if (expect != 0 && v.array.size() != expect)
    throw FileError(g.path(), str("metadata ", key, " has ", v.array.size(), " entries but ",
                                  "tokenizer.ggml.tokens has ", expect));
  return v;
}

// A special-token id: absent -> fallback; -1 or 0xFFFFFFFF (how converters write "none") -> -1.
int special_id(const GgufFile& g, const std::string& key, int fallback, int n_vocab) {
  if (!g.has(key)) return fallback;
  const int64_t v = g.get(key).as_int(key, g.path());
  if (v == -1 || v == 0xFFFFFFFFLL) return -1;
  if (v < 0 || v >= n_vocab)
    throw FileError(g.path(), str("metadata ", key, " is ", v, ", outside the vocabulary of ",
                                  n_vocab, " tokens"));
  return static_cast<int>(v);
}

}  // namespace

std::unique_ptr<Tokenizer> open_gguf_vocab(const std::string& path) {
  const GgufFile g(path);
  return tokenizer_from_gguf(g);
}

}  // namespace tokenizer_detail

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& g) {
  using namespace tokenizer_detail;
  const std::string& path = g.path();
  if (!g.has("tokenizer.ggml.model"))
    throw FileError(path, "GGUF file has no vocabulary (no tokenizer.ggml.model)");
  const std::string& model = g.get("tokenizer.ggml.model").as_string("tokenizer.ggml.model", path);
  if (model == "gpt2") return bpe_from_gguf(g);
  if (model != "llama")
    throw FileError(path, str("tokenizer.ggml.model is '", model,
                              "'; supported: 'llama' (SentencePiece) and 'gpt2' (byte-level BPE)"));

  const GgufValue& tv = get_array(g, "tokenizer.ggml.tokens", 0);
  const size_t n = tv.array.size();
  if (n == 0) throw FileError(path, "tokenizer.ggml.tokens is empty");
  if (n > static_cast<size_t>(INT32_MAX))
    throw FileError(path, str("tokenizer.ggml.tokens has ", n, " entries (too many)"));
  std::vector<std::string> tokens;
  tokens.reserve(n);
  for (const GgufValue& v : tv.array) tokens.push_back(v.as_string("tokenizer.ggml.tokens", path));

  std::vector<float> scores(n, 0.0f);  // llama.cpp: scores are optional
  if (g.has("tokenizer.ggml.scores")) {
    const GgufValue& sv = get_array(g, "tokenizer.ggml.scores", n);
    for (size_t i = 0; i < n; ++i) {
      scores[i] = static_cast<float>(sv.array[i].as_float("tokenizer.ggml.scores", path));
      if (!std::isfinite(scores[i]))  // merges are ranked by score
        throw FileError(path, str("tokenizer.ggml.scores[", i, "] is not finite (", scores[i], ")"));
    }
  }
  std::vector<int> types(n, kNormal);  // llama.cpp: types are optional
  if (g.has("tokenizer.ggml.token_type")) {
    const GgufValue& tt = get_array(g, "tokenizer.ggml.token_type", n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t t = tt.array[i].as_int("tokenizer.ggml.token_type", path);
      if (t < 0 || t > kByte)
        throw FileError(path, str("tokenizer.ggml.token_type[", i, "] is ", t,
                                  " (expected 0..6)"));
      types[i] = static_cast<int>(t);
    }
  }
  const int nv = static_cast<int>(n);
  // llama.cpp's defaults for SentencePiece vocabularies: <unk> 0, BOS 1, EOS 2.
  const int bos = special_id(g, "tokenizer.ggml.bos_token_id", nv > 1 ? 1 : -1, nv);
  const int eos = special_id(g, "tokenizer.ggml.eos_token_id", nv > 2 ? 2 : -1, nv);
  const int unk = special_id(g, "tokenizer.ggml.unknown_token_id", 0, nv);
  bool add_space_prefix = true;
  if (g.has("tokenizer.ggml.add_space_prefix")) {
    const GgufValue& v = g.get("tokenizer.ggml.add_space_prefix");
    if (const bool* b = std::get_if<bool>(&v.scalar); b && v.type == GgufType::boolean)
      add_space_prefix = *b;
    else
      add_space_prefix = v.as_int("tokenizer.ggml.add_space_prefix", path) != 0;
  }
  return std::make_unique<GgufSpmTokenizer>(path, std::move(tokens), std::move(scores),
                                            std::move(types), bos, eos, unk, add_space_prefix);
}

}  // namespace cibench
