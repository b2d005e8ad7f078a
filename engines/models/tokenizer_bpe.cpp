// Byte-level BPE (GPT-2 style): the vocabulary of a GGUF file with tokenizer.ggml.model "gpt2"
// and Hugging Face tokenizer.json files with a "BPE" model. Text is split into pieces by the
// vocabulary's pre-tokenizer regexes, each piece's UTF-8 bytes are written as GPT-2's printable
// byte characters, and adjacent symbols are merged by merge rank (lowest first, leftmost on
// ties), as llama.cpp's llm_tokenizer_bpe does.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>
#include <variant>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/models/gguf.h"
#include "engines/models/pretokenizer.h"
#include "engines/models/unicode_nfc.h"
#include "engines/models/tokenizer_impl.h"
#include "engines/models/unicode_category.h"

namespace cibench::tokenizer_detail {
namespace {

enum TokenType : int {
  kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

// GPT-2's byte <-> printable character mapping: the printable Latin-1 bytes stand for
// themselves, the other 68 bytes for U+0100.. in byte order.
struct ByteMap {
  std::string byte_to_text[256];
  std::unordered_map<char32_t, uint8_t> cp_to_byte;
  ByteMap() {
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
      unicode::append_utf8(byte_to_text[b], cp);
      cp_to_byte[cp] = static_cast<uint8_t>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

// Bytes -> GPT-2 characters.
std::string byte_encode(const std::string& bytes) {
  const ByteMap& m = byte_map();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += m.byte_to_text[b];
  return out;
}

// GPT-2 characters -> bytes; a character outside the mapping is kept as its UTF-8.
std::string byte_decode(const std::string& text) {
  const ByteMap& m = byte_map();
  std::string out;
  for (char32_t cp : unicode::decode_utf8_lenient(text)) {
    auto it = m.cp_to_byte.find(cp);
    if (it != m.cp_to_byte.end()) out.push_back(static_cast<char>(it->second));
    else unicode::append_utf8(out, cp);
  }
  return out;
}

std::string merge_key(const std::string& a, const std::string& b) {
  std::string k;
  k.reserve(a.size() + b.size() + 1);
  k += a;
  k.push_back('\xFF');  // never in UTF-8
  k += b;
  return k;
}

class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(BpeSpec spec) : s_(std::move(spec)) {
    const int n = static_cast<int>(s_.tokens.size());
    token_to_id_.reserve(s_.tokens.size() * 2);
    for (int i = 0; i < n; ++i) token_to_id_[s_.tokens[i]] = i;  // a later duplicate wins
    ranks_.reserve(s_.merges.size() * 2);
    for (size_t r = 0; r < s_.merges.size(); ++r)  // the first of duplicate merges wins
      ranks_.emplace(merge_key(s_.merges[r].first, s_.merges[r].second), static_cast<int>(r));
    for (const std::string& p : s_.patterns) patterns_.emplace_back(p);
    decoded_.resize(s_.tokens.size());
    for (int i = 0; i < n; ++i) {
      const int t = s_.types[i];
      if (t == kControl || t == kUnknown) continue;  // print nothing, as llama.cpp
      if (t == kUserDefined) {
        decoded_[i] = s_.tokens[i];
      } else if (t == kByte && parse_byte_piece(s_.tokens[i]) >= 0) {
        decoded_[i] = std::string(1, static_cast<char>(parse_byte_piece(s_.tokens[i])));
      } else {
        decoded_[i] = byte_decode(s_.tokens[i]);
      }
    }
    specials_ = special_pieces(s_.tokens, s_.types);
  }

  std::vector<int> encode(const std::string& text, bool add_bos, bool add_eos) const override {
    return encode_segments({TextSegment{text, false}}, add_bos, add_eos);
  }

  std::vector<int> encode_segments(const std::vector<TextSegment>& segments, bool add_bos,
                                   bool add_eos) const override {
    std::vector<int> out;
    if (add_bos && s_.add_bos) {
      if (s_.bos < 0) throw Error(str(s_.path, ": the vocabulary asks for a BOS token but names none"));
      out.push_back(s_.bos);
    }
    // Fragments: raw text, or a piece cut out of it first (llama.cpp's tokenizer_st_partition;
    // Hugging Face's added tokens): control pieces only in special segments.
    std::string text;
    const std::vector<Fragment> frags = partition_specials(segments, specials_, s_.tokens, text);
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        out.push_back(f.token);
        continue;
      }
      std::string piece = text.substr(f.off, f.len);
      if (s_.add_prefix_space && piece[0] != ' ') piece.insert(piece.begin(), ' ');
      encode_fragment(piece, out);
    }
    if (add_eos && s_.add_eos) {
      if (s_.eos < 0) throw Error(str(s_.path, ": the vocabulary asks for an EOS token but names none"));
      out.push_back(s_.eos);
    }
    return out;
  }

  std::string decode(int /*prev*/, int token) const override {
    if (token < 0 || token >= vocab_size())
      throw Error(str("decode: token ", token, " is outside the vocabulary [0, ", vocab_size(), ")"));
    return decoded_[static_cast<size_t>(token)];
  }
  int vocab_size() const override { return static_cast<int>(s_.tokens.size()); }
  int bos_id() const override { return s_.bos; }
  int eos_id() const override { return s_.eos; }
  std::string kind() const override { return s_.kind; }
  VocabPieces pieces() const override {
    VocabPieces v;
    v.model = "gpt2";
    v.pre = s_.pre;
    v.tokens = s_.tokens;
    v.scores.assign(s_.tokens.size(), 0.0f);
    v.types.assign(s_.types.begin(), s_.types.end());
    v.bos_id = s_.bos;
    v.eos_id = s_.eos;
    v.unk_id = s_.unk;
    for (const auto& [a, b] : s_.merges) v.merges.push_back(a + " " + b);
    return v;
  }

 private:
  int lookup(const std::string& s) const {
    auto it = token_to_id_.find(s);
    return it == token_to_id_.end() ? -1 : it->second;
  }
  int rank(const std::string& a, const std::string& b) const {
    auto it = ranks_.find(merge_key(a, b));
    return it == ranks_.end() ? -1 : it->second;
  }

  void encode_fragment(const std::string& text, std::vector<int>& out) const {
    std::vector<char32_t> cps = unicode::decode_utf8_lenient(text);
    if (s_.nfc) cps = unicode::nfc(cps);
    const bpe::SplitText st = bpe::SplitText::make(cps, s_.mode);
    size_t start = 0;
    std::string word;
    for (size_t len : bpe::split_pieces(st, patterns_)) {
      std::string bytes;
      for (size_t i = start; i < start + len; ++i) unicode::append_utf8(bytes, cps[i]);
      start += len;
      encode_word(byte_encode(bytes), out);
    }
  }

  // One pre-tokenized piece, already in GPT-2 characters.
  void encode_word(const std::string& word, std::vector<int>& out) const {
    if (word.empty()) return;
    if (s_.ignore_merges) {
      const int id = lookup(word);
      if (id >= 0) {
        out.push_back(id);
        return;
      }
    }
    struct Sym {
      size_t off, n;
      int prev, next;
    };
    std::vector<Sym> sym;
    for (size_t off = 0; off < word.size();) {
      static const size_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
      const size_t len = std::min(kLen[static_cast<unsigned char>(word[off]) >> 4], word.size() - off);
      const int index = static_cast<int>(sym.size());
      sym.push_back(Sym{off, len, index - 1, off + len == word.size() ? -1 : index + 1});
      off += len;
    }
    struct Bigram {
      int rank, left, right;
      size_t size;
    };
    auto later = [](const Bigram& a, const Bigram& b) {
      return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    };
    std::priority_queue<Bigram, std::vector<Bigram>, decltype(later)> queue(later);
    auto try_add = [&](int l, int r) {
      if (l < 0 || r < 0) return;
      const int rk = rank(word.substr(sym[l].off, sym[l].n), word.substr(sym[r].off, sym[r].n));
      if (rk >= 0) queue.push(Bigram{rk, l, r, sym[l].n + sym[r].n});
    };
    for (int i = 1; i < static_cast<int>(sym.size()); ++i) try_add(i - 1, i);
    while (!queue.empty()) {
      const Bigram b = queue.top();
      queue.pop();
      Sym& l = sym[b.left];
      Sym& r = sym[b.right];
      // Symbols only grow (by absorbing their right neighbour), so unchanged lengths mean the
      // pair is still the one that was queued.
      if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = b.left;
      try_add(l.prev, b.left);
      try_add(b.left, l.next);
    }
    for (int i = 0; i != -1; i = sym[i].next) {
      const std::string s = word.substr(sym[i].off, sym[i].n);
      const int id = lookup(s);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
      // As llama.cpp: a symbol that is not a token falls back to its single bytes that are.
      for (char c : s) {
        const int b = lookup(std::string(1, c));
        if (b >= 0) out.push_back(b);
      }
    }
  }

  BpeSpec s_;
  std::unordered_map<std::string, int> token_to_id_;
  std::unordered_map<std::string, int> ranks_;
  std::vector<bpe::SplitRegex> patterns_;
  std::vector<std::string> decoded_;
  std::vector<SpecialPiece> specials_;  // control, unknown and user-defined pieces, longest first
};

// ---------------------------------------------------------------- GGUF

const GgufValue& array_of(const GgufFile& g, const std::string& key) {
  const GgufValue& v = g.get(key);
  if (v.type != GgufType::array) throw FileError(g.path(), str("metadata ", key, " is not an array"));
  return v;
}

int gguf_special(const GgufFile& g, const std::string& key, int n_vocab) {
  if (!g.has(key)) return -1;
  const int64_t v = g.get(key).as_int(key, g.path());
  if (v == -1 || v == 0xFFFFFFFFLL) return -1;
  if (v < 0 || v >= n_vocab)
    throw FileError(g.path(), str("metadata ", key, " is ", v, ", outside the vocabulary of ", n_vocab, " tokens"));
  return static_cast<int>(v);
}

bool gguf_bool(const GgufFile& g, const std::string& key, bool fallback) {
  if (!g.has(key)) return fallback;
  const GgufValue& v = g.get(key);
  if (const bool* b = std::get_if<bool>(&v.scalar); b && v.type == GgufType::boolean) return *b;
  return v.as_int(key, g.path()) != 0;
}

// ---------------------------------------------------------------- tokenizer.json

using nlohmann::json;

[[noreturn]] void json_fail(const std::string& path, const std::string& key, const std::string& what) {
  throw FileError(path, str(key, ": ", what));
}

std::string dump(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

// obj[name] as a bool / string, `fallback` when absent or null; another type is an error naming
// `key` (the path of obj) and the name.
bool opt_bool(const std::string& path, const json& obj, const std::string& key, const char* name, bool fallback) {
  if (!obj.is_object() || !obj.contains(name) || obj[name].is_null()) return fallback;
  if (!obj[name].is_boolean()) json_fail(path, str(key, ".", name), str("expected true or false, got ", dump(obj[name])));
  return obj[name].get<bool>();
}

std::string opt_string(const std::string& path, const json& obj, const std::string& key, const char* name) {
  if (!obj.is_object() || !obj.contains(name) || obj[name].is_null()) return std::string();
  if (!obj[name].is_string()) json_fail(path, str(key, ".", name), str("expected a string, got ", dump(obj[name])));
  return obj[name].get<std::string>();
}

// A regex that matches `s` literally.
std::string escape_regex(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string("\\^$.|?*+()[]{}-").find(c) != std::string::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// One pre-tokenizer object of tokenizer.json into patterns (in order) and ByteLevel settings.
void read_pre_tokenizer(const std::string& path, const json& pt, const std::string& key,
                        BpeSpec& spec, bool& byte_level) {
  if (!pt.is_object() || !pt.contains("type") || !pt["type"].is_string())
    json_fail(path, key, str("expected an object with a \"type\", got ", dump(pt)));
  const std::string type = pt["type"];
  if (type == "Sequence") {
    if (!pt.contains("pretokenizers") || !pt["pretokenizers"].is_array())
      json_fail(path, key + ".pretokenizers", "expected an array");
    for (size_t i = 0; i < pt["pretokenizers"].size(); ++i)
      read_pre_tokenizer(path, pt["pretokenizers"][i], str(key, ".pretokenizers[", i, "]"), spec, byte_level);
  } else if (type == "ByteLevel") {
    if (byte_level) json_fail(path, key, "a second ByteLevel pre-tokenizer");
    byte_level = true;
    if (opt_bool(path, pt, key, "add_prefix_space", false)) spec.add_prefix_space = true;
    if (opt_bool(path, pt, key, "use_regex", true)) spec.patterns.push_back(bpe::kGpt2Pattern);
  } else if (type == "Split") {
    if (byte_level) json_fail(path, key, "a Split after the ByteLevel pre-tokenizer is not supported");
    const std::string behavior = opt_string(path, pt, key, "behavior");
    if (behavior != "Isolated")
      json_fail(path, key + ".behavior", str("is \"", behavior, "\"; only \"Isolated\" is supported"));
    if (opt_bool(path, pt, key, "invert", false)) json_fail(path, key + ".invert", "is true; only false is supported");
    const json& pat = pt.contains("pattern") ? pt["pattern"] : json();
    if (pat.is_object() && pat.contains("Regex") && pat["Regex"].is_string()) {
      spec.patterns.push_back(pat["Regex"].get<std::string>());
    } else if (pat.is_object() && pat.contains("String") && pat["String"].is_string()) {
      spec.patterns.push_back(escape_regex(pat["String"].get<std::string>()));
    } else {
      json_fail(path, key + ".pattern", str("expected {\"Regex\": ...} or {\"String\": ...}, got ", dump(pat)));
    }
    try {
      bpe::SplitRegex check(spec.patterns.back());
    } catch (const Error& e) {
      json_fail(path, key + ".pattern", e.what());
    }
  } else if (type == "Digits") {
    if (byte_level) json_fail(path, key, "Digits after the ByteLevel pre-tokenizer is not supported");
    spec.patterns.push_back(opt_bool(path, pt, key, "individual_digits", false) ? "\\p{N}" : "\\p{N}+");
  } else {
    json_fail(path, key + ".type", str("is \"", type, "\"; supported: ByteLevel, Split, Digits, Sequence"));
  }
}

// A token named in tokenizer_config.json ("<s>" or {"content": "<s>", ...}).
int config_token(const std::string& path, const json& cfg, const std::string& key,
                 const std::unordered_map<std::string, int>& ids) {
  if (!cfg.contains(key) || cfg[key].is_null()) return -1;
  const json& v = cfg[key];
  std::string text;
  if (v.is_string()) text = v.get<std::string>();
  else if (v.is_object() && v.contains("content") && v["content"].is_string()) text = v["content"];
  else json_fail(path, key, str("expected a string or {\"content\": ...}, got ", dump(v)));
  auto it = ids.find(text);
  if (it == ids.end()) json_fail(path, key, str("\"", text, "\" is not a token of the vocabulary"));
  return it->second;
}

}  // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer(BpeSpec spec) {
  if (spec.types.empty()) spec.types.assign(spec.tokens.size(), kNormal);
  // Compile the patterns here so that a bad one is reported as the file's error.
  for (const std::string& p : spec.patterns) {
    try {
      bpe::SplitRegex check(p);
    } catch (const Error& e) {
      throw FileError(spec.path, e.what());
    }
  }
  return std::make_unique<BpeTokenizer>(std::move(spec));
}

std::unique_ptr<Tokenizer> bpe_from_gguf(const GgufFile& g) {
  const std::string& path = g.path();
  BpeSpec spec;
  spec.path = path;
  spec.kind = "gguf-bpe";
  spec.mode = bpe::RegexMode::llama_cpp;

  const GgufValue& tv = array_of(g, "tokenizer.ggml.tokens");
  const size_t n = tv.array.size();
  if (n == 0) throw FileError(path, "tokenizer.ggml.tokens is empty");
  if (n > static_cast<size_t>(INT32_MAX))
    throw FileError(path, str("tokenizer.ggml.tokens has ", n, " entries (too many)"));
  spec.tokens.reserve(n);
  for (const GgufValue& v : tv.array) spec.tokens.push_back(v.as_string("tokenizer.ggml.tokens", path));

  spec.types.assign(n, kNormal);
  if (g.has("tokenizer.ggml.token_type")) {
    const GgufValue& tt = array_of(g, "tokenizer.ggml.token_type");
    if (tt.array.size() != n)
      throw FileError(path, str("metadata tokenizer.ggml.token_type has ", tt.array.size(),
                                " entries but tokenizer.ggml.tokens has ", n));
    for (size_t i = 0; i < n; ++i) {
      const int64_t t = tt.array[i].as_int("tokenizer.ggml.token_type", path);
      if (t < 0 || t > kByte)
        throw FileError(path, str("tokenizer.ggml.token_type[", i, "] is ", t, " (expected 0..6)"));
      spec.types[i] = static_cast<int>(t);
    }
  }

  if (!g.has("tokenizer.ggml.merges"))
    throw FileError(path, "tokenizer.ggml.model is 'gpt2' but there is no tokenizer.ggml.merges");
  const GgufValue& mv = array_of(g, "tokenizer.ggml.merges");
  spec.merges.reserve(mv.array.size());
  for (size_t i = 0; i < mv.array.size(); ++i) {
    const std::string m = mv.array[i].as_string("tokenizer.ggml.merges", path);
    const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (sp == std::string::npos || sp + 1 >= m.size())
      throw FileError(path, str("tokenizer.ggml.merges[", i, "] is \"", m,
                                "\": expected two tokens separated by a space"));
    spec.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
  }

  spec.pre = "default";  // llama.cpp's choice when the key is missing
  if (g.has("tokenizer.ggml.pre")) spec.pre = g.get("tokenizer.ggml.pre").as_string("tokenizer.ggml.pre", path);
  if (!bpe::named_pre_tokenizer(spec.pre, spec.patterns, spec.ignore_merges))
    throw FileError(path, str("tokenizer.ggml.pre is '", spec.pre, "', a pre-tokenizer cibench does not know (known: ",
                              bpe::known_pre_tokenizers(), ")"));
  // llama.cpp adds BOS by default only for these pre-tokenizers; the file's key decides.
  const bool bos_default = spec.pre == "llama3" || spec.pre == "llama-v3" || spec.pre == "llama-bpe" ||
                           spec.pre == "falcon3" || spec.pre == "tekken" || spec.pre == "chameleon";
  const int nv = static_cast<int>(n);
  spec.bos = gguf_special(g, "tokenizer.ggml.bos_token_id", nv);
  spec.eos = gguf_special(g, "tokenizer.ggml.eos_token_id", nv);
  spec.unk = gguf_special(g, "tokenizer.ggml.unknown_token_id", nv);
  spec.add_bos = gguf_bool(g, "tokenizer.ggml.add_bos_token", bos_default);
  spec.add_eos = gguf_bool(g, "tokenizer.ggml.add_eos_token", false);
  return make_bpe_tokenizer(std::move(spec));
}

namespace {

std::unique_ptr<Tokenizer> read_tokenizer_json(const std::string& path) {
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw FileError(path, str("not valid JSON: ", e.what()));
  }
  if (!j.is_object()) throw FileError(path, "expected a JSON object at the top level");
  if (!j.contains("model") || !j["model"].is_object()) json_fail(path, "model", "missing or not an object");
  const json& model = j["model"];
  const std::string type = opt_string(path, model, "model", "type");
  if (type != "BPE")
    json_fail(path, "model.type", str("is \"", type, "\"; only \"BPE\" (byte-level) is supported"));
  if (opt_bool(path, model, "model", "byte_fallback", false))
    json_fail(path, "model.byte_fallback", "is true (a SentencePiece-style BPE); only byte-level BPE is supported");
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(k) && !model[k].is_null() && !(model[k].is_string() && model[k].get<std::string>().empty()))
      json_fail(path, str("model.", k), str("is ", dump(model[k]), "; only null is supported"));

  BpeSpec spec;
  spec.path = path;
  spec.kind = "bpe";
  spec.mode = bpe::RegexMode::unicode;
  spec.pre.clear();
  spec.ignore_merges = opt_bool(path, model, "model", "ignore_merges", false);

  // Vocabulary: model.vocab {token: id} plus added_tokens [{id, content, special}].
  if (!model.contains("vocab") || !model["vocab"].is_object()) json_fail(path, "model.vocab", "missing or not an object");
  const json& vocab = model["vocab"];
  if (vocab.empty()) json_fail(path, "model.vocab", "is empty");
  std::vector<std::string> tokens;
  std::vector<int> types;
  std::vector<char> seen;
  // Ids are dense: none can reach the number of entries.
  const json* added_list = j.contains("added_tokens") ? &j["added_tokens"] : nullptr;
  const int64_t n_entries =
      static_cast<int64_t>(vocab.size() + (added_list && added_list->is_array() ? added_list->size() : 0));
  auto put = [&](int64_t id, const std::string& text, int t, const std::string& key) {
    if (id < 0 || id >= n_entries)
      json_fail(path, key, str("id ", id, " is out of range (the file has ", n_entries, " tokens)"));
    const size_t i = static_cast<size_t>(id);
    if (i >= tokens.size()) {
      tokens.resize(i + 1);
      types.resize(i + 1, kNormal);
      seen.resize(i + 1, 0);
    }
    if (seen[i] && tokens[i] != text)
      json_fail(path, key, str("id ", id, " is given to both \"", tokens[i], "\" and \"", text, "\""));
    tokens[i] = text;
    types[i] = t;
    seen[i] = 1;
  };
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer())
      json_fail(path, str("model.vocab[\"", it.key(), "\"]"), str("expected an integer id, got ", dump(it.value())));
    put(it.value().get<int64_t>(), it.key(), kNormal, str("model.vocab[\"", it.key(), "\"]"));
  }
  if (j.contains("added_tokens") && !j["added_tokens"].is_null()) {
    const json& added = j["added_tokens"];
    if (!added.is_array()) json_fail(path, "added_tokens", "expected an array");
    for (size_t i = 0; i < added.size(); ++i) {
      const json& a = added[i];
      const std::string key = str("added_tokens[", i, "]");
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string())
        json_fail(path, key, str("expected {\"id\": int, \"content\": string, ...}, got ", dump(a)));
      const std::string content = a["content"];
      if (content.empty()) json_fail(path, key + ".content", "is empty");
      // Hugging Face matches added tokens in the text verbatim: special ones are control tokens
      // (as llama.cpp's converter marks them), the others user-defined.
      put(a["id"].get<int64_t>(), content, opt_bool(path, a, key, "special", false) ? kControl : kUserDefined, key);
    }
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) json_fail(path, "model.vocab", str("no token has id ", i, " (ids must be 0..", seen.size() - 1, ")"));
  spec.tokens = std::move(tokens);
  spec.types = std::move(types);
  std::unordered_map<std::string, int> ids;
  for (size_t i = 0; i < spec.tokens.size(); ++i) ids[spec.tokens[i]] = static_cast<int>(i);

  // Merges: "a b" strings or [a, b] pairs, by rank.
  if (!model.contains("merges") || !model["merges"].is_array()) json_fail(path, "model.merges", "missing or not an array");
  const json& merges = model["merges"];
  spec.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    const std::string key = str("model.merges[", i, "]");
    std::string a, b;
    if (m.is_string()) {
      const std::string s = m;
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() || s.find(' ', sp + 1) != std::string::npos)
        json_fail(path, key, str("is \"", s, "\": expected two tokens separated by one space"));
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0];
      b = m[1];
    } else {
      json_fail(path, key, str("is ", dump(m), ": expected \"a b\" or [\"a\", \"b\"]"));
    }
    for (const std::string* part : {&a, &b})
      if (!ids.count(*part)) json_fail(path, key, str("\"", *part, "\" is not a token of model.vocab"));
    if (!ids.count(a + b)) json_fail(path, key, str("the merged token \"", a + b, "\" is not in model.vocab"));
    spec.merges.emplace_back(std::move(a), std::move(b));
  }

  // Normalizer: none, or NFC (applied to the text between added tokens, before pre-tokenizing).
  if (j.contains("normalizer") && !j["normalizer"].is_null()) {
    const json& nz = j["normalizer"];
    const std::string nt = nz.is_object() && nz.contains("type") && nz["type"].is_string() ? nz["type"].get<std::string>() : std::string();
    if (nt != "NFC") json_fail(path, "normalizer", str("is ", dump(nz), "; only null or NFC is supported"));
    spec.nfc = true;
  }
  // Pre-tokenizer: ByteLevel, or Split/Digits pieces followed by ByteLevel.
  if (!j.contains("pre_tokenizer") || j["pre_tokenizer"].is_null())
    json_fail(path, "pre_tokenizer", "is missing; a byte-level BPE needs a ByteLevel pre-tokenizer");
  bool byte_level = false;
  read_pre_tokenizer(path, j["pre_tokenizer"], "pre_tokenizer", spec, byte_level);
  if (!byte_level)
    json_fail(path, "pre_tokenizer", str("has no ByteLevel step (", dump(j["pre_tokenizer"]), ")"));

  // BOS/EOS: tokenizer_config.json beside the file when there is one, else the post-processor's
  // template (a leading special token is the BOS that encoding adds).
  if (j.contains("post_processor") && j["post_processor"].is_object()) {
    std::vector<const json*> procs{&j["post_processor"]};
    if (opt_string(path, j["post_processor"], "post_processor", "type") == "Sequence" && j["post_processor"].contains("processors") &&
        j["post_processor"]["processors"].is_array()) {
      procs.clear();
      for (const json& p : j["post_processor"]["processors"]) procs.push_back(&p);
    }
    for (const json* p : procs) {
      if (!p->is_object() || !p->contains("type") || (*p)["type"] != "TemplateProcessing") continue;
      if (!p->contains("single") || !(*p)["single"].is_array() || (*p)["single"].empty()) continue;
      const json& first = (*p)["single"][0];
      if (first.is_object() && first.contains("SpecialToken") && first["SpecialToken"].is_object()) {
        const std::string name = opt_string(path, first["SpecialToken"], "post_processor.single[0].SpecialToken", "id");
        auto it = ids.find(name);
        if (it == ids.end())
          json_fail(path, "post_processor.single[0]", str("\"", name, "\" is not a token of the vocabulary"));
        spec.bos = it->second;
        spec.add_bos = true;
      }
    }
  }
  const std::filesystem::path cfg_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (std::filesystem::exists(cfg_path, ec)) {
    const std::string cp = cfg_path.string();
    json cfg;
    try {
      cfg = json::parse(read_file(cp));
    } catch (const json::exception& e) {
      throw FileError(cp, str("not valid JSON: ", e.what()));
    }
    if (!cfg.is_object()) throw FileError(cp, "expected a JSON object at the top level");
    if (const int b = config_token(cp, cfg, "bos_token", ids); b >= 0) spec.bos = b;
    if (const int e = config_token(cp, cfg, "eos_token", ids); e >= 0) spec.eos = e;
    if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()) spec.add_bos = cfg["add_bos_token"];
    if (cfg.contains("add_eos_token") && cfg["add_eos_token"].is_boolean()) spec.add_eos = cfg["add_eos_token"];
  }
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    auto it = ids.find(model["unk_token"].get<std::string>());
    if (it != ids.end()) spec.unk = it->second;
  }
  return make_bpe_tokenizer(std::move(spec));
}

}  // namespace

std::unique_ptr<Tokenizer> open_tokenizer_json(const std::string& path) {
  try {
    return read_tokenizer_json(path);
  } catch (const json::exception& e) {
    // A value of an unexpected type that no check names.
    throw FileError(path, str("unexpected JSON content: ", e.what()));
  }
}

}  // namespace cibench::tokenizer_detail
