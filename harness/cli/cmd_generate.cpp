// cibench generate: run the engine on one prompt and print the text (and, with --json, a line
// with the token ids and prefill/decode tokens per second, timed here, never by the engine).
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/models/chat_template.h"
#include "engines/models/llama.h"
#include "engines/models/tokenizer.h"
#include "engines/runtime/sampler.h"
#include "engines/runtime/session.h"
#include "engines/quant/quantized_file.h"
#include "harness/cli/command.h"
#include "harness/lib/memory_check.h"
#include "harness/cli/engine_options.h"
#include "harness/lib/build_info.h"

namespace cibench::cli {
namespace cmd_generate {

struct GenerateArgs {
  EngineOptions engine;
  std::string tokenizer;
  std::string prompt;
  std::string chat;           // a user message rendered with the chat template
  std::string system;         // the system message before it
  std::string chat_template;  // a template name that overrides the detected one
  bool show_prompt = false;
  int steps = 256;
  float temperature = 0.0f;
  float top_p = 0.9f;
  unsigned long long seed = 42;
  int threads = 1;
  bool json = false;
};

int run_generate(const GenerateArgs& a) {
  using clock = std::chrono::steady_clock;
  LlamaBuildOptions bo = a.engine.build_options();
  // A quantised model file (.cbq) carries its own format: built as written.
  const bool cbq = is_quantized_file(a.engine.model);
  LlamaModel model;
  if (cbq) {
    model = build_quantized(load_quantized(a.engine.model));
  } else {
    const LlamaSource src = open_llama_source(a.engine.model);
    require_llama_memory(str("cibench generate on ", a.engine.model), src.config, bo,
                         a.engine.session_options(a.threads));
    model = build_llama(src, bo);
    if (!a.json && !model.conversion.empty()) std::fprintf(stderr, "%s\n", weight_conversion_line(model).c_str());
  }
  if (cbq && bo.format != "f32" && bo.format != model.build.format_for("attention"))
    throw Error(str(a.engine.model, " holds ", model.build.describe(), " weights; --format ", bo.format, " cannot apply"));
  const LlamaConfig& c = model.config;
  std::unique_ptr<Tokenizer> tok;
  if (!a.tokenizer.empty()) tok = open_tokenizer(a.tokenizer, c.vocab_size);
  if (tok && tok->vocab_size() != c.vocab_size)
    throw Error(str(a.tokenizer, ": tokenizer has ", tok->vocab_size(),
                    " tokens but the model's vocabulary is ", c.vocab_size));
  if (!tok && !a.prompt.empty())
    throw Error("--prompt needs --tokenizer (the model has no tokenizer of its own)");
  const bool chat = !a.chat.empty();
  if (chat && !a.prompt.empty()) throw Error("--chat and --prompt exclude each other (--chat is the prompt)");
  if (!chat && (!a.system.empty() || !a.chat_template.empty()))
    throw Error(str(a.system.empty() ? "--chat-template" : "--system", " needs --chat"));
  if (chat && !tok) throw Error("--chat needs --tokenizer (the model has no tokenizer of its own)");
  CIBENCH_CHECK(a.steps >= 1, "--steps must be >= 1, got ", a.steps);

  SessionOptions so = a.engine.session_options(a.threads);
  // Positions past the model's context are past what it was trained on: only when asked for.
  if (so.max_context == 0) {
    if (a.steps > c.seq_len)
      throw Error(str("--steps ", a.steps, " is past the model's context of ", c.seq_len,
                      " positions; give --max-context ", a.steps, " to generate past it anyway"));
    so.max_context = c.seq_len;
  }
  CIBENCH_CHECK(a.steps <= so.max_context, "--steps ", a.steps, " is more than --max-context ", so.max_context);
  LlamaSession session(model, so);
  Sampler sampler(c.vocab_size, a.temperature, a.top_p, a.seed);

  std::vector<int> prompt;
  std::string template_name;
  int end_of_turn = -1;  // the chat template's end-of-turn token, when it is one token
  if (chat) {
    // The template comes with the tokenizer (a GGUF's key, a Hugging Face folder's
    // tokenizer_config.json), else with the model file.
    std::optional<ChatTemplateText> found = read_chat_template(a.tokenizer);
    std::string searched = a.tokenizer;
    if (!found && a.engine.model != a.tokenizer && !cbq) {
      found = read_chat_template(a.engine.model);
      searched += " and " + a.engine.model;
    }
    template_name = choose_chat_template(found, a.chat_template, searched);
    std::vector<ChatMessage> messages;
    if (!a.system.empty()) messages.push_back({"system", a.system});
    messages.push_back({"user", a.chat});
    const std::vector<TextSegment> segs = render_chat(template_name, messages, true);
    prompt = tok->encode_segments(segs, true, false);
    const std::vector<int> eot = tok->encode_special(chat_end_of_turn(template_name), false, false);
    if (eot.size() == 1) end_of_turn = eot[0];
    if (a.show_prompt) {
      std::cerr << "chat template " << template_name;
      if (found && a.chat_template.empty()) std::cerr << " (" << found->file << (found->key.empty() ? "" : " ") << found->key << ")";
      std::cerr << "\nprompt:\n" << joined_text(segs) << "\nprompt ids (" << prompt.size() << "):";
      for (int id : prompt) std::cerr << ' ' << id;
      std::cerr << "\n";
      std::cerr.flush();
    }
  } else {
    prompt = tok ? tok->encode(a.prompt, true, false) : std::vector<int>{c.bos_id};
    if (a.show_prompt) {
      std::cerr << "prompt ids (" << prompt.size() << "):";
      for (int id : prompt) std::cerr << ' ' << id;
      std::cerr << "\n";
    }
  }
  CIBENCH_CHECK(static_cast<int>(prompt.size()) <= a.steps, "the prompt has ", prompt.size(),
                " tokens, more than --steps ", a.steps);
  std::vector<int> out_ids(prompt);

  // Prefill: the whole prompt in one call. llama2.c's convention: a forward pass at each of
  // `steps` positions, the prompt's included, each predicting the next token; stop at BOS.
  auto t0 = clock::now();
  const float* logits = session.prefill(prompt.data(), static_cast<int>(prompt.size()));
  auto t1 = clock::now();
  int token = prompt.back();
  int generated = 0;
  // (A chat prompt is not echoed: only the reply is printed.)
  if (!a.json && tok && !a.prompt.empty()) {
    for (size_t i = 1; i < prompt.size(); ++i) std::cout << tok->decode(prompt[i - 1], prompt[i]);
  }
  for (int pos = static_cast<int>(prompt.size()) - 1; pos < a.steps; ++pos) {
    if (generated > 0) logits = session.step(token);
    const int next = sampler.sample(logits);
    if (next == c.bos_id) break;
    // A chat reply ends at the template's end of turn or the vocabulary's EOS.
    if (chat && (next == end_of_turn || next == tok->eos_id())) break;
    if (tok) {
      std::cout << tok->decode(token, next);
    } else if (!a.json) {
      std::cout << next << ' ';
    }
    std::cout.flush();
    out_ids.push_back(next);
    token = next;
    ++generated;
  }
  auto t2 = clock::now();
  std::cout << "\n";
  const double prefill_s = std::chrono::duration<double>(t1 - t0).count();
  const double decode_s = std::chrono::duration<double>(t2 - t1).count();
  // The first generated token comes from the prefill logits; the rest each cost one step.
  const int decode_steps = std::max(0, generated - 1);
  if (a.json) {
    nlohmann::json j;
    j["model"] = model.origin;
    j["model_hash"] = model.content_hash;
    j["format"] = model.build.describe();
    j["isa"] = isa_name(session.isa());
    j["threads"] = a.threads;
    j["kv_mode"] = kv_mode_name(so.kv_mode);
    j["token_ids"] = out_ids;
    if (chat) j["chat_template"] = template_name;
    j["prompt_tokens"] = prompt.size();
    j["generated_tokens"] = generated;
    j["prefill_tokens_per_s"] = prefill_s > 0 ? prompt.size() / prefill_s : 0.0;
    if (decode_steps > 0) j["decode_tokens_per_s"] = decode_steps / decode_s;
    else j["decode_tokens_per_s"] = nullptr;  // nothing was decoded: unmeasured, not zero
    j["weight_bytes"] = model.weight_bytes();
    j["weight_conversion"] = weight_conversion_json(model);
    j["peak_rss_bytes"] = peak_rss_bytes();
    j["cibench_commit"] = build_info().commit;
    std::cout << j.dump() << "\n";
  } else {
    std::fprintf(stderr,
                 "cibench: %s [%s, isa %s, %d thread%s, kv %s]: prefill %zu tok %.1f tok/s, "
                 "decode %d tok %.1f tok/s\n",
                 model.origin.c_str(), model.build.describe().c_str(), isa_name(session.isa()),
                 a.threads, a.threads == 1 ? "" : "s", kv_mode_name(so.kv_mode), prompt.size(),
                 prefill_s > 0 ? prompt.size() / prefill_s : 0.0, decode_steps,
                 decode_steps > 0 ? decode_steps / decode_s : 0.0);
  }
  return 0;
}

const RegisterCommand reg{{"generate", "generate text from a prompt with the in-tree engine",
                           [](CLI::App& sub) -> std::function<int()> {
                             auto a = std::make_shared<GenerateArgs>();
                             a->engine.add_to(sub);
                             sub.add_option("-z,--tokenizer", a->tokenizer,
                                            "tokenizer: llama2.c tokenizer.bin, SentencePiece "
                                            ".model, a .gguf with a vocabulary, a tokenizer.json "
                                            "or a Hugging Face folder");
                             sub.add_option("-i,--prompt", a->prompt, "prompt text");
                             sub.add_option("--chat", a->chat,
                                            "a user message, rendered with the chat template of the "
                                            "tokenizer (or model) file; the reply is printed");
                             sub.add_option("--system", a->system, "a system message before --chat");
                             sub.add_option("--chat-template", a->chat_template,
                                            str("the chat template by name, over the file's (",
                                                chat_template_names_joined(), ")"));
                             sub.add_flag("--show-prompt", a->show_prompt,
                                          "print the rendered prompt and its token ids to stderr");
                             sub.add_option("-n,--steps", a->steps,
                                            "positions in all, the prompt included")
                                 ->capture_default_str();
                             sub.add_option("-t,--temperature", a->temperature,
                                            "0 = greedy")
                                 ->capture_default_str();
                             sub.add_option("-p,--top-p", a->top_p, "nucleus sampling mass")
                                 ->capture_default_str();
                             sub.add_option("-s,--seed", a->seed, "sampling seed")->capture_default_str();
                             sub.add_option("-T,--threads", a->threads, "threads")->capture_default_str();
                             sub.add_flag("--json", a->json, "print a JSON line with ids and speeds");
                             return [a] { return run_generate(*a); };
                           }}};

}  // namespace cmd_generate
}  // namespace cibench::cli
