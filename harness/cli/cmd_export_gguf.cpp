// cibench export-gguf MODEL -o OUT.gguf --type f32|f16|bf16|q8_0|q4_0: writes any Llama source
// cibench opens as a GGUF v3 file that llama.cpp loads (engines/models/gguf_writer.h), so both
// engines can run the very same weights. The file is read back before success is reported.
#include <cstdio>
#include <memory>

#include "engines/core/error.h"
#include "engines/models/gguf_writer.h"
#include "engines/models/llama_config.h"
#include "harness/cli/command.h"

namespace cibench::cli {
namespace cmd_export_gguf {

struct Args {
  std::string model, out, type = "f32", tokenizer, name;
};

int run(const Args& a) {
  const GgufWeightType type = parse_gguf_weight_type(a.type);
  const LlamaSource src = open_llama_source(a.model);
  std::string vocab_origin;
  const VocabPieces vocab = vocab_for_export(src, a.tokenizer, &vocab_origin);
  const std::string name = a.name.empty() ? gguf_default_name(src) : a.name;
  const GgufExportSummary s = write_llama_gguf(src, vocab, type, name, a.out);
  // Read back: the file must open as the same shape.
  const LlamaSource back = open_llama_source(a.out);
  const LlamaConfig &c = src.config, &b = back.config;
  if (b.dim != c.dim || b.hidden_dim != c.hidden_dim || b.n_layers != c.n_layers ||
      b.n_heads != c.n_heads || b.n_kv_heads != c.n_kv_heads || b.vocab_size != c.vocab_size ||
      b.tied_output != c.tied_output || b.head_dim() != c.head_dim() || b.rot_dim() != c.rot_dim() ||
      b.qkv_bias != c.qkv_bias || b.o_bias != c.o_bias || b.qk_norm != c.qk_norm || b.ffn_act != c.ffn_act ||
      b.embed_scale != c.embed_scale || b.post_norms != c.post_norms || b.attn_softcap != c.attn_softcap ||
      b.final_softcap != c.final_softcap)
    throw Error(str(a.out, ": the written file reads back with a different shape"));
  std::printf("wrote %s: %s, %d tensors, %llu bytes (tensor data %llu)\n", a.out.c_str(),
              gguf_weight_type_name(type), s.tensors, static_cast<unsigned long long>(s.file_bytes),
              static_cast<unsigned long long>(s.tensor_bytes));
  std::printf("  source %s (%s), general.name '%s'\n", src.origin.c_str(), src.content_hash.c_str(),
              name.c_str());
  const std::string features = c.features();
  std::printf("  architecture %s%s%s\n", gguf_architecture_for(c).c_str(), features.empty() ? "" : ": ",
              features.c_str());
  std::printf("  vocabulary %d pieces from %s\n", c.vocab_size, vocab_origin.c_str());
  if (vocab_origin == "placeholder" && src.container != "synthetic")
    std::fprintf(stderr, "cibench: no tokenizer found for %s; the GGUF file holds a placeholder "
                         "vocabulary (give --tokenizer)\n", src.origin.c_str());
  return 0;
}

const RegisterCommand reg{
    {"export-gguf", "write a Llama model as a GGUF file llama.cpp loads (f32, f16, bf16, q8_0, q4_0)",
     [](CLI::App& sub) -> std::function<int()> {
       auto a = std::make_shared<Args>();
       sub.add_option("model", a->model,
                      "model: synthetic:NAME[@seed], llama2.c .bin, Hugging Face folder, .gguf")
           ->required();
       sub.add_option("-o,--out", a->out, "output .gguf file")->required();
       sub.add_option("--type", a->type,
                      "type of every 2-D tensor (norms stay f32): f32, f16, bf16, q8_0, q4_0")
           ->capture_default_str();
       sub.add_option("-z,--tokenizer", a->tokenizer,
                      "vocabulary to write (default: the model's own, found beside it; a "
                      "placeholder for synthetic models)");
       sub.add_option("--name", a->name, "general.name (default: the model's file or preset name)");
       return [a] { return run(*a); };
     }}};

}  // namespace cmd_export_gguf
}  // namespace cibench::cli
