#pragma once
// Tokenizers: llama2.c tokenizer.bin, SentencePiece tokenizer.model (libsentencepiece), the
// vocabulary inside a GGUF file (SentencePiece-style "llama" or byte-level BPE "gpt2") and
// Hugging Face tokenizer.json files with a byte-level BPE model.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cibench {

class GgufFile;

// A vocabulary as GGUF stores it (tokenizer.ggml.tokens / scores / token_type, and for byte-level
// BPE merges and the pre-tokenizer name): what `cibench export-gguf` writes.
struct VocabPieces {
  std::string model = "llama";      // tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2" (BPE)
  std::string pre;                  // tokenizer.ggml.pre of a BPE vocabulary ("" when it has no name)
  std::vector<std::string> merges;  // BPE merges "a b", by rank
  std::vector<std::string> tokens;  // (vocab) piece text: spaces as U+2581 "▁" (SentencePiece) or
                                    // bytes as GPT-2's printable characters (BPE)
  std::vector<float> scores;        // (vocab) merge priority
  // (vocab) llama.cpp's token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused,
  // 6 byte (<0xAB>)
  std::vector<int32_t> types;
  int bos_id = 1, eos_id = 2, unk_id = 0;
};

// One stretch of a text to encode (see Tokenizer::encode_segments): text written by a chat
// template, where the vocabulary's control pieces ("<|im_start|>", "</s>") are single tokens, or
// plain text such as a user's message, where they are not.
struct TextSegment {
  std::string text;
  bool special = false;  // control pieces in `text` are matched as their tokens
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Text to ids. Adds BOS/EOS when asked. Follows the vocabulary's own conventions (a dummy
  // space prefix for SentencePiece-style vocabularies, byte fallback for unknown bytes).
  // Control pieces in `text` are encoded as text (llama.cpp's parse_special = false).
  virtual std::vector<int> encode(const std::string& text, bool add_bos, bool add_eos) const = 0;
  // The segments encoded as one text: a control or unknown piece (type 3 or 2) that appears whole
  // inside a `special` segment becomes its single id, in plain segments it stays text;
  // user-defined pieces (type 4) are matched everywhere, as encode() does. The plain stretches
  // between matched pieces are encoded together, across segment boundaries, so segments without
  // control pieces give exactly encode() of their concatenation. Vocabularies without control
  // pieces beyond BOS/EOS (llama2.c) encode the concatenation as plain text.
  virtual std::vector<int> encode_segments(const std::vector<TextSegment>& segments, bool add_bos,
                                           bool add_eos) const;
  // encode() with control pieces matched everywhere (llama.cpp's parse_special = true).
  std::vector<int> encode_special(const std::string& text, bool add_bos, bool add_eos) const {
    return encode_segments({TextSegment{text, true}}, add_bos, add_eos);
  }
  // The text of `token` when it follows `prev` (the leading space after BOS is dropped, byte
  // tokens <0xAB> become the raw byte), as llama2.c prints it. A byte-level BPE token is its bytes
  // (a character split across tokens comes out whole once the pieces are concatenated); control
  // tokens print as "".
  virtual std::string decode(int prev, int token) const = 0;
  virtual int vocab_size() const = 0;
  virtual int bos_id() const = 0;
  virtual int eos_id() const = 0;
  // "llama2c", "sentencepiece", "gguf-spm", "gguf-bpe" (GGUF byte-level BPE), "bpe" (tokenizer.json)
  virtual std::string kind() const = 0;
  // Every piece with its score and type, in id order.
  virtual VocabPieces pieces() const = 0;
};

// Opens a tokenizer by file: *.bin (llama2.c), *.model (SentencePiece), *.gguf (its vocabulary),
// *.json (Hugging Face tokenizer.json, byte-level BPE), or a folder holding tokenizer.json or
// tokenizer.model (a Hugging Face model folder).
// `vocab_size_hint` > 0 is the model's vocabulary size (llama2.c files do not store it).
// Throws FileError naming the file and the problem.
std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path, int vocab_size_hint = 0);

// The vocabulary of an already opened GGUF file (tokenizer.ggml.model "llama" or "gpt2").
// Throws FileError naming the file and the problem.
std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& gguf);

}  // namespace cibench
