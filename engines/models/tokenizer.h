#pragma once
// Tokenizers for the Llama family: llama2.c tokenizer.bin, SentencePiece tokenizer.model
// (libsentencepiece) and the vocabulary inside a GGUF file.
#include <memory>
#include <string>
#include <vector>

namespace cibench {

class GgufFile;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Text to ids. Adds BOS/EOS when asked. Follows the vocabulary's own conventions (a dummy
  // space prefix for SentencePiece-style vocabularies, byte fallback for unknown bytes).
  virtual std::vector<int> encode(const std::string& text, bool add_bos, bool add_eos) const = 0;
  // The text of `token` when it follows `prev` (the leading space after BOS is dropped, byte
  // tokens <0xAB> become the raw byte), as llama2.c prints it.
  virtual std::string decode(int prev, int token) const = 0;
  virtual int vocab_size() const = 0;
  virtual int bos_id() const = 0;
  virtual int eos_id() const = 0;
  virtual std::string kind() const = 0;  // "llama2c", "sentencepiece", "gguf-spm"
};

// Opens a tokenizer by file: *.bin (llama2.c), *.model (SentencePiece), *.gguf (its vocabulary).
// `vocab_size_hint` > 0 is the model's vocabulary size (llama2.c files do not store it).
// Throws FileError naming the file and the problem.
std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path, int vocab_size_hint = 0);

// The vocabulary of an already opened GGUF file (tokenizer.ggml.model "llama" only).
// Throws FileError naming the file and the problem.
std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& gguf);

}  // namespace cibench
