#pragma once
// Writing a decoder as a GGUF v3 file that llama.cpp loads, the way llama.cpp's converter writes
// its family: general.architecture "llama" (Llama, Mistral, SmolLM2), "qwen2" (q/k/v biases) or
// "qwen3" (q/k norms, explicit head_dim); the config as {arch}.* metadata, a SentencePiece-style
// vocabulary as tokenizer.ggml.*, and the tensors under llama.cpp's names (token_embd,
// output_norm, output, blk.N.attn_q, blk.N.attn_q.bias, blk.N.attn_q_norm, rope_freqs, ...),
// dims innermost first. The 1-D tensors (norms, biases, RoPE factors) stay F32 (as llama.cpp
// keeps them); every 2-D tensor takes the requested type (as llama-quantize --pure). For
// "llama" cibench's canonical q/k row order (RoPE pairs interleaved) is GGUF's; for qwen2/qwen3
// (llama.cpp's NEOX RoPE) q/k rows, their biases and norms are written in rotate-half order.
// llama3 RoPE scaling is written as the rope_freqs tensor, linear and yarn as
// {arch}.rope.scaling.*.
#include <string>

#include "engines/models/llama_config.h"
#include "engines/models/tokenizer.h"

namespace cibench {

enum class GgufWeightType { f32, f16, bf16, q8_0, q4_0 };

// "f32", "f16", "bf16", "q8_0", "q4_0"; throws Error naming the choices for anything else.
GgufWeightType parse_gguf_weight_type(const std::string& name);
const char* gguf_weight_type_name(GgufWeightType t);
uint32_t ggml_type_of(GgufWeightType t);       // ggml_type: 0, 1, 30, 8, 2
uint32_t gguf_file_type_of(GgufWeightType t);  // llama_ftype: 0, 1, 32, 7, 2

// The placeholder vocabulary of a model without a tokenizer (synthetic models): <unk>, <s>,
// </s>, the 256 byte pieces <0x00> .. <0xFF> (type byte), then "▁tN" pieces scored -N, cut to
// `vocab_size` entries.
VocabPieces placeholder_vocab(int vocab_size);

// The vocabulary to write for `src`: the tokenizer at `tokenizer_path` when given; else the
// source's own (a GGUF file's vocabulary, tokenizer.model in a Hugging Face folder, tokenizer.bin
// or tok{vocab_size}.bin beside a llama2.c .bin); else the placeholder. `origin` receives the
// file it came from, or "placeholder". Throws FileError for a tokenizer that cannot be read or
// whose size differs from the model's vocabulary.
VocabPieces vocab_for_export(const LlamaSource& src, const std::string& tokenizer_path,
                             std::string* origin);

// The general.architecture write_llama_gguf uses for this config; throws Error naming the knob
// when no architecture llama.cpp reads holds it (NoPE layers, dynamic RoPE scaling, ...).
std::string gguf_architecture_for(const LlamaConfig& c);

// general.name when none is given: the synthetic preset and seed, or the file or folder name.
std::string gguf_default_name(const LlamaSource& src);

struct GgufExportSummary {
  uint64_t file_bytes = 0;
  uint64_t tensor_bytes = 0;  // tensor data, without header and padding
  int tensors = 0;
};

// Writes `src` to `path` through a temporary file renamed into place, so a failure leaves
// nothing behind (and an existing `path` untouched). `name` is general.name. Throws Error before
// anything is written when a 2-D tensor's columns are not a multiple of 32 for q8_0/q4_0 or the
// vocabulary does not fit the model, and FileError when the file cannot be written.
GgufExportSummary write_llama_gguf(const LlamaSource& src, const VocabPieces& vocab,
                                   GgufWeightType type, const std::string& name,
                                   const std::string& path);

}  // namespace cibench
