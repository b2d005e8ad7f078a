#pragma once
// Chat templates: a conversation rendered into the prompt text a chat model was trained on.
// Models ship their template as Jinja text (GGUF key tokenizer.chat_template, Hugging Face
// tokenizer_config.json "chat_template"); cibench does not run Jinja but recognises the known
// templates by distinctive substrings of that text and renders them itself, as llama.cpp's
// llm_chat_detect_template / llm_chat_apply_template do.
#include <optional>
#include <string>
#include <vector>

#include "engines/models/tokenizer.h"

namespace cibench {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

// A template's Jinja text and where it was read.
struct ChatTemplateText {
  std::string text;
  std::string file;  // the file it was read from
  std::string key;   // "tokenizer.chat_template" (GGUF), "chat_template" (tokenizer_config.json),
                     // "" (a chat_template.jinja file)
};

// The names cibench renders: chatml, command-r, deepseek, falcon3, gemma, llama2, llama2-sys,
// llama2-sys-bos, llama2-sys-strip, llama3, mistral-v1, mistral-v3, mistral-v3-tekken,
// mistral-v7, openchat, phi3, phi4, vicuna, vicuna-orca, zephyr, zephyr-eos (Zephyr-7B and
// TinyLlama-Chat: zephyr with "</s>" for eos_token, not a llama.cpp name).
const std::vector<std::string>& chat_template_names();
std::string chat_template_names_joined();  // "chatml, command-r, ..."

// The template's name from its Jinja text, by llama.cpp's heuristics (a text that is exactly a
// name is that name). It may name a family cibench does not render (e.g. "chatglm4"); "" when
// nothing matches.
std::string detect_chat_template(const std::string& jinja);

// The conversation as the template renders it: the template's own text as special segments
// (its control pieces become single tokens), message contents and roles as plain segments (a
// "<|im_start|>" typed by the user stays text). No BOS: encoding adds it as the vocabulary asks,
// as llama.cpp does. add_generation_prompt ends with the opening of the assistant's turn.
// Throws Error for an unknown name or role.
std::vector<TextSegment> render_chat(const std::string& name, const std::vector<ChatMessage>& messages,
                                     bool add_generation_prompt);
std::string joined_text(const std::vector<TextSegment>& segments);

// The text that ends an assistant turn under the template ("<|im_end|>", "<|eot_id|>", "</s>",
// ...): generation stops at it when it is one token.
std::string chat_end_of_turn(const std::string& name);

// The template shipped with a tokenizer or model: the GGUF key tokenizer.chat_template of a
// .gguf; for a Hugging Face folder, a tokenizer.json or a tokenizer.model, the chat_template of
// the tokenizer_config.json beside it (a string, or a list of {name, template} of which
// "default" is taken), else a chat_template.jinja beside it. nullopt when there is none; a key
// of the wrong type is a FileError naming the file and the key.
std::optional<ChatTemplateText> read_chat_template(const std::string& path);

// The template to render: `override_name` when given (it must be a name cibench renders, else
// Error listing them), else the one detected in `found`. A template that is not recognised is a
// FileError naming its file and key; no template at all is an Error saying so (`searched`
// names where it was looked for) and listing the names.
std::string choose_chat_template(const std::optional<ChatTemplateText>& found, const std::string& override_name,
                                 const std::string& searched);

}  // namespace cibench
