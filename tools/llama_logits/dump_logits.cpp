// dump_logits: the logits llama.cpp computes for a GGUF model over a fixed token sequence, one
// line per position, so cibench's tests can compare against an independent implementation.
// Not part of the cibench build: compile it against a llama.cpp build (see DEVELOPERS.md).
//
//   dump_logits MODEL.gguf OUT.txt TOKEN [TOKEN ...]
//
// The KV cache is kept in f32 (type_k = type_v = GGML_TYPE_F32; llama.cpp's default f16 cache
// would round every key and value), one thread, all tokens in one batch with logits for each.
// OUT.txt: a first line "tokens N vocab V", then N lines of V logits (%.9g).
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf OUT.txt TOKEN [TOKEN ...]\n", argv[0]);
    return 2;
  }
  std::vector<llama_token> tokens;
  for (int i = 3; i < argc; ++i) tokens.push_back(static_cast<llama_token>(std::atoi(argv[i])));

  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    std::fprintf(stderr, "cannot load %s\n", argv[1]);
    return 1;
  }
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(tokens.size()) + 8;
  cp.n_batch = cp.n_ctx;
  cp.n_ubatch = cp.n_ctx;
  cp.n_threads = 1;
  cp.n_threads_batch = 1;
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F32;
  cp.flash_attn = false;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    std::fprintf(stderr, "cannot create a context\n");
    return 1;
  }
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  const int n = static_cast<int>(tokens.size());
  llama_batch batch = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) {
    batch.token[i] = tokens[i];
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = n;
  if (llama_decode(ctx, batch) != 0) {
    std::fprintf(stderr, "llama_decode failed\n");
    return 1;
  }
  FILE* out = std::fopen(argv[2], "w");
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", argv[2]);
    return 1;
  }
  std::fprintf(out, "tokens %d vocab %d\n", n, n_vocab);
  for (int i = 0; i < n; ++i) {
    const float* l = llama_get_logits_ith(ctx, i);
    for (int v = 0; v < n_vocab; ++v) std::fprintf(out, v ? " %.9g" : "%.9g", l[v]);
    std::fprintf(out, "\n");
  }
  std::fclose(out);
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
