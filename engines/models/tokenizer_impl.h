#pragma once
// Internals shared by the tokenizer implementations (tokenizer.cpp, tokenizer_sentencepiece.cpp,
// tokenizer_gguf.cpp). Not part of the public interface.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engines/models/pretokenizer.h"
#include "engines/models/tokenizer.h"

namespace cibench::tokenizer_detail {

// What decode() does with a piece.
enum class PieceKind : uint8_t {
  text,     // printed as its text (SentencePiece's "▁" already turned into a space)
  byte,     // a byte-fallback piece <0xAB>: printed as the raw byte
  control,  // BOS/EOS and other control pieces of SentencePiece/GGUF vocabularies: printed as ""
};

// The printable form of every piece, so that all kinds decode by the same rule.
struct PieceTable {
  std::vector<std::string> text;  // (vocab) piece text, spaces as ' '
  std::vector<PieceKind> kind;    // (vocab)
  std::vector<uint8_t> byte;      // (vocab) the byte of PieceKind::byte pieces

  // Appends one piece, deciding its kind from its text when `kind` is text and the text is
  // exactly of the form <0xAB> (two hex digits).
  void add(std::string piece_text, PieceKind k);
  int size() const { return static_cast<int>(text.size()); }
};

// llama2.c's decode(): the piece of `token`; a leading space is dropped when prev == bos;
// byte pieces become the raw byte. Throws Error when `token` is out of range.
std::string decode_piece(const PieceTable& pieces, int bos, int prev, int token);

// "<0xAB>" -> 0xAB; -1 when `s` is not exactly that form.
int parse_byte_piece(const std::string& s);

// Replaces every U+2581 "▁" by a space.
std::string unescape_spaces(const std::string& s);

// A piece matched in the text before it is tokenized: control and unknown pieces (only inside
// special segments) and user-defined pieces (everywhere).
struct SpecialPiece {
  int id;
  bool control;  // control or unknown: matched only inside special segments
};

// A stretch of the joined text: a matched piece (token >= 0) or raw text to tokenize.
struct Fragment {
  int token;  // -1 for raw text
  size_t off, len;
};

// llama.cpp's tokenizer_st_partition over segments: joins them into `joined` and cuts out every
// occurrence of each piece in `specials` (in that order: longest text first) from the raw
// stretches it may appear in; adjacent raw stretches are merged afterwards. `texts` is the
// vocabulary's piece text by id.
std::vector<Fragment> partition_specials(const std::vector<TextSegment>& segments,
                                         const std::vector<SpecialPiece>& specials,
                                         const std::vector<std::string>& texts, std::string& joined);

// The ids of `types` (llama.cpp token types) that partition_specials matches, with their kind,
// longest text first (ties by id).
std::vector<SpecialPiece> special_pieces(const std::vector<std::string>& texts, const std::vector<int>& types);

std::unique_ptr<Tokenizer> open_llama2c(const std::string& path, int vocab_size_hint);
std::unique_ptr<Tokenizer> open_sentencepiece(const std::string& path);
std::unique_ptr<Tokenizer> open_gguf_vocab(const std::string& path);

// Everything a byte-level BPE tokenizer is made of (tokenizer_bpe.cpp).
struct BpeSpec {
  std::string path;  // the file, for errors
  std::string kind;  // "gguf-bpe" or "bpe"
  std::vector<std::string> tokens;  // (vocab) token text in GPT-2's byte characters
  std::vector<int> types;           // (vocab) llama.cpp token types (3 control, 4 user-defined)
  std::vector<std::pair<std::string, std::string>> merges;  // by rank
  std::vector<std::string> patterns;  // pre-tokenizer regexes, applied in turn
  std::string pre;                    // the GGUF pre-tokenizer name, "" if none
  bpe::RegexMode mode = bpe::RegexMode::unicode;
  bool ignore_merges = false;     // a piece that is a whole token is taken as it is
  bool add_prefix_space = false;  // ByteLevel add_prefix_space
  bool nfc = false;               // tokenizer.json normalizer NFC: text is put in NFC first
  bool add_bos = false, add_eos = false;  // what encode(..., true, true) may add
  int bos = -1, eos = -1, unk = -1;
};
// Throws FileError (spec.path) for a pattern it cannot compile.
std::unique_ptr<Tokenizer> make_bpe_tokenizer(BpeSpec spec);
std::unique_ptr<Tokenizer> bpe_from_gguf(const GgufFile& gguf);
std::unique_ptr<Tokenizer> open_tokenizer_json(const std::string& path);

}  // namespace cibench::tokenizer_detail
