// Chat templates: every rendering on one conversation (expectations written out by hand from the
// template definitions), detection from excerpts of the real Jinja texts, the template read from
// a GGUF key and from tokenizer_config.json, control pieces as single ids while the same text in
// a user's message stays text (phi-3's GGUF vocabulary, a hand-made tokenizer.json), and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engines/core/error.h"
#include "engines/models/chat_template.h"
#include "engines/models/tokenizer.h"
#include "engines/models/unicode_category.h"
#include "test_support.h"

namespace cibench {
namespace {

using nlohmann::json;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  ASSERT_TRUE(f.good()) << path;
}

template <typename E = FileError, typename F>
std::string error_of(F fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

std::vector<int> cat(std::initializer_list<std::vector<int>> parts) {
  std::vector<int> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// System, user, assistant (with spaces around, to show which templates trim), user.
const std::vector<ChatMessage> kChat = {
    {"system", "Be brief."}, {"user", "Hello"}, {"assistant", " Hi there \n"}, {"user", "Who are you?"}};

std::string render(const std::string& name, bool add_ass = true) { return joined_text(render_chat(name, kChat, add_ass)); }

// ---------------------------------------------------------------- renderings

TEST(ChatTemplate, RenderingsOfOneConversation) {
  const std::string eos3 = "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
  const std::string u3 = "<\xEF\xBD\x9C" "User\xEF\xBD\x9C>", a3 = "<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>";
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"chatml",
       "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
       "<|im_start|>assistant\n Hi there \n<|im_end|>\n<|im_start|>user\nWho are you?<|im_end|>\n"
       "<|im_start|>assistant\n"},
      {"llama3",
       "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
       "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
       "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
       "<|start_header_id|>user<|end_header_id|>\n\nWho are you?<|eot_id|>"
       "<|start_header_id|>assistant<|end_header_id|>\n\n"},
      {"llama2", "[INST] Be brief.\nHello [/INST] Hi there \n</s>[INST] Who are you? [/INST]"},
      {"llama2-sys", "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHello [/INST] Hi there \n</s>[INST] Who are you? [/INST]"},
      {"llama2-sys-bos",
       "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHello [/INST] Hi there \n</s><s>[INST] Who are you? [/INST]"},
      {"llama2-sys-strip", "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHello [/INST]Hi there</s>[INST] Who are you? [/INST]"},
      {"mistral-v1", " [INST] Be brief.\n\nHello [/INST]  Hi there \n</s> [INST] Who are you? [/INST]"},
      {"mistral-v3", "[INST] Be brief.\n\nHello[/INST] Hi there</s>[INST] Who are you?[/INST]"},
      {"mistral-v3-tekken", "[INST]Be brief.\n\nHello[/INST] Hi there \n</s>[INST]Who are you?[/INST]"},
      {"mistral-v7", "[SYSTEM_PROMPT] Be brief.[/SYSTEM_PROMPT][INST] Hello[/INST]  Hi there \n</s>[INST] Who are you?[/INST]"},
      {"phi3",
       "<|system|>\nBe brief.<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\n Hi there \n<|end|>\n"
       "<|user|>\nWho are you?<|end|>\n<|assistant|>\n"},
      {"phi4",
       "<|im_start|>system<|im_sep|>Be brief.<|im_end|><|im_start|>user<|im_sep|>Hello<|im_end|>"
       "<|im_start|>assistant<|im_sep|> Hi there \n<|im_end|><|im_start|>user<|im_sep|>Who are you?<|im_end|>"
       "<|im_start|>assistant<|im_sep|>"},
      {"falcon3", "<|system|>\nBe brief.\n<|user|>\nHello\n<|assistant|>\n Hi there \n\n<|user|>\nWho are you?\n<|assistant|>\n"},
      {"zephyr",
       "<|system|>\nBe brief.<|endoftext|>\n<|user|>\nHello<|endoftext|>\n<|assistant|>\n Hi there \n<|endoftext|>\n"
       "<|user|>\nWho are you?<|endoftext|>\n<|assistant|>\n"},
      {"gemma",
       "<start_of_turn>user\nBe brief.\n\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n"
       "<start_of_turn>user\nWho are you?<end_of_turn>\n<start_of_turn>model\n"},
      {"command-r",
       "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>Be brief.<|END_OF_TURN_TOKEN|>"
       "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hello<|END_OF_TURN_TOKEN|>"
       "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Hi there<|END_OF_TURN_TOKEN|>"
       "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Who are you?<|END_OF_TURN_TOKEN|>"
       "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"},
      {"vicuna", "Be brief.\n\nUSER: Hello\nASSISTANT:  Hi there \n</s>\nUSER: Who are you?\nASSISTANT:"},
      {"vicuna-orca", "SYSTEM: Be brief.\nUSER: Hello\nASSISTANT:  Hi there \n</s>\nUSER: Who are you?\nASSISTANT:"},
      {"deepseek", "Be brief.### Instruction:\nHello\n### Response:\n Hi there \n\n<|EOT|>\n### Instruction:\nWho are you?\n### Response:\n"},
      {"deepseek2", "Be brief.\n\nUser: Hello\n\nAssistant:  Hi there \n" + eos3 + "User: Who are you?\n\nAssistant:"},
      {"deepseek3", "Be brief.\n\n" + u3 + "Hello" + a3 + " Hi there \n" + eos3 + u3 + "Who are you?" + a3},
      {"openchat",
       "Be brief.<|end_of_turn|>GPT4 Correct User: Hello<|end_of_turn|>GPT4 Correct Assistant:  Hi there \n<|end_of_turn|>"
       "GPT4 Correct User: Who are you?<|end_of_turn|>GPT4 Correct Assistant:"},
      {"zephyr-eos",
       "<|system|>\nBe brief.</s>\n<|user|>\nHello</s>\n<|assistant|>\n Hi there \n</s>\n"
       "<|user|>\nWho are you?</s>\n<|assistant|>\n"},
  };
  std::vector<std::string> covered;
  for (const auto& [name, text] : expected) {
    EXPECT_EQ(render(name), text) << name;
    covered.push_back(name);
  }
  std::sort(covered.begin(), covered.end());
  EXPECT_EQ(covered, chat_template_names());  // every rendered template is checked here
}

TEST(ChatTemplate, GenerationPromptAndSegments) {
  // Without add_generation_prompt the assistant's opening is left out.
  EXPECT_EQ(render("chatml", false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\n Hi there \n<|im_end|>\n<|im_start|>user\nWho are you?<|im_end|>\n");
  // The templates that end on the user's turn marker render the same either way.
  EXPECT_EQ(render("llama2-sys", false), render("llama2-sys", true));
  // Template text is special, message contents plain: a control piece typed by the user is in a
  // plain segment.
  const auto segs = render_chat("chatml", {{"user", "<|im_end|>x"}}, true);
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_TRUE(segs[0].special);
  EXPECT_EQ(segs[0].text, "<|im_start|>user\n");
  EXPECT_FALSE(segs[1].special);
  EXPECT_EQ(segs[1].text, "<|im_end|>x");
  EXPECT_TRUE(segs[2].special);
  EXPECT_EQ(segs[2].text, "<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_NE(error_of<Error>([] { render_chat("chatml", {{"tool", "x"}}, true); }).find("role 'tool'"),
            std::string::npos);
  EXPECT_NE(error_of<Error>([] { render_chat("jinja", kChat, true); }).find("chatml, command-r"), std::string::npos);
}

// ---------------------------------------------------------------- detection

TEST(ChatTemplate, DetectionFromJinjaExcerpts) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      // Qwen2.5-Instruct
      {"chatml",
       "{%- if messages[0]['role'] == 'system' %}\n    {{- '<|im_start|>system\\n' + messages[0]['content'] + "
       "'<|im_end|>\\n' }}\n{%- else %}\n    {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud."},
      // SmolLM2-Instruct
      {"chatml",
       "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
       "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}"
       "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"},
      // Llama-3.2-Instruct
      {"llama3",
       "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}\n{%- if tools is not none %}\n"
       "{%- for message in messages %}\n{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ "
       "message['content'] | trim + '<|eot_id|>' }}"},
      // Llama-2-chat
      {"llama2-sys-strip",
       "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
       "messages[0]['content'] %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + "
       "system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"},
      // Mistral-7B-Instruct-v0.2
      {"llama2",
       "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + "
       "message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}"},
      // Mistral-7B-Instruct-v0.3
      {"mistral-v3",
       "{%- if messages[0][\"role\"] == \"system\" %}\n{%- for message in loop_messages %}\n{%- if message[\"role\"] == "
       "\"user\" %}\n{%- if tools is not none and (message == user_messages[-1]) %}\n{{- \"[AVAILABLE_TOOLS] [\" }}"
       "{{- \"[INST] \" + system_message + \"\\n\\n\" + message[\"content\"] + \"[/INST]\" }}"},
      // Mistral-Small-24B-Instruct-2501
      {"mistral-v7",
       "{%- set today = strftime_now(\"%Y-%m-%d\") %}{{- bos_token }}{{- '[SYSTEM_PROMPT]' + system_message + "
       "'[/SYSTEM_PROMPT]' }}{{- '[INST]' + message['content'] + '[/INST]' }}"},
      // gemma-2-2b-it
      {"gemma",
       "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
       "{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}"},
      // Phi-3-mini (the text in ggml-vocab-phi-3.gguf)
      {"phi3",
       "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') %}{{'<|user|>' + '\n' + "
       "message['content'] + '<|end|>' + '\n' + '<|assistant|>' + '\n'}}"},
      // phi-4
      {"phi4", "{{'<|im_start|>' + message['role'] + '<|im_sep|>' + message['content'] + '<|im_end|>'}}"},
      // stablelm-2-zephyr-1_6b
      {"zephyr",
       "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + "
       "'<|endoftext|>' }}"},
      // zephyr-7b-beta, TinyLlama-1.1B-Chat-v1.0
      {"zephyr-eos",
       "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + "
       "eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + "
       "eos_token }}\n{% endif %}"},
      // Falcon3-1B-Instruct
      {"falcon3",
       "{% if message['role'] == 'user' %}{{ '<|user|>\n' + message['content'] + '\n' }}{% elif message['role'] == "
       "'assistant' %}{{ '<|assistant|>\n' + message['content'] + '</s>\n' }}"},
      // GLM-Edge: recognised, but not rendered
      {"glmedge",
       "{% for item in messages %}{% if item['role'] == 'user' %}<|user|>\n{{ item['content'] }}{% elif item['role'] "
       "== 'assistant' %}<|assistant|>\n{{ item['content'] }}{% endif %}{% endfor %}<|assistant|>"},
      // deepseek-coder-instruct
      {"deepseek", "{{'### Instruction:\\n' + message['content'] + '\\n'}}{{'### Response:\\n' + message['content'] + '\\n<|EOT|>\\n'}}"},
      // A name instead of a template
      {"gemma", "gemma"},
      {"", "{% for message in messages %}{{ message['content'] }}{% endfor %}"},
  };
  for (const auto& [name, text] : cases) EXPECT_EQ(detect_chat_template(text), name) << text;
}

// ---------------------------------------------------------------- template files

// A GGUF holding only metadata: string keys, and `tokens` / `types` arrays when given.
void write_gguf(const std::string& path, const std::vector<std::pair<std::string, std::string>>& strings) {
  std::string b = "GGUF";
  auto u32 = [&](uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
  auto u64 = [&](uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); };
  auto s = [&](const std::string& x) {
    u64(x.size());
    b += x;
  };
  u32(3);
  u64(0);
  u64(strings.size());
  for (const auto& [k, v] : strings) {
    s(k);
    u32(8);  // string
    s(v);
  }
  write_text(path, b);
}

TEST(ChatTemplateFiles, GgufKey) {
  test::TempDir dir("chat_gguf");
  const std::string p = dir.file("m.gguf");
  write_gguf(p, {{"general.architecture", "llama"}, {"tokenizer.chat_template", "{{'<|im_start|>' + role}}"}});
  const auto t = read_chat_template(p);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->file, p);
  EXPECT_EQ(t->key, "tokenizer.chat_template");
  EXPECT_EQ(choose_chat_template(t, "", p), "chatml");
  EXPECT_EQ(choose_chat_template(t, "llama3", p), "llama3");  // the override wins

  // An unknown template names the file and the key; an override makes it usable.
  write_gguf(p, {{"tokenizer.chat_template", "{{ messages }}"}});
  const auto u = read_chat_template(p);
  const std::string e = error_of([&] { choose_chat_template(u, "", p); });
  EXPECT_NE(e.find(p + ": tokenizer.chat_template: a chat template cibench does not recognise (\"{{ messages }}\")"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("--chat-template NAME, one of: chatml,"), std::string::npos) << e;
  EXPECT_EQ(choose_chat_template(u, "gemma", p), "gemma");

  // A recognised family cibench does not render.
  write_gguf(p, {{"tokenizer.chat_template", "[gMASK]<sop>{% for item in messages %}"}});
  EXPECT_NE(error_of([&] { choose_chat_template(read_chat_template(p), "", p); })
                .find("tokenizer.chat_template: recognised as the 'chatglm4' template, which cibench does not render"),
            std::string::npos);

  // No template at all.
  write_gguf(p, {{"general.architecture", "llama"}});
  EXPECT_FALSE(read_chat_template(p).has_value());
  const std::string none = error_of<Error>([&] { choose_chat_template(std::nullopt, "", p); });
  EXPECT_NE(none.find("no chat template in " + p), std::string::npos) << none;
  EXPECT_NE(none.find("one of: " + chat_template_names_joined()), std::string::npos) << none;
  EXPECT_NE(error_of<Error>([&] { choose_chat_template(std::nullopt, "jinja2", p); })
                .find("--chat-template 'jinja2' is not a chat template cibench knows (known: chatml,"),
            std::string::npos);
  // A key of the wrong type.
  {
    std::string b = "GGUF";
    auto u32 = [&](uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
    auto u64 = [&](uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); };
    u32(3), u64(0), u64(1);
    const std::string k = "tokenizer.chat_template";
    u64(k.size());
    b += k;
    u32(4), u32(7);  // uint32 7
    write_text(p, b);
  }
  const std::string wt = error_of([&] { read_chat_template(p); });
  EXPECT_NE(wt.find(p), std::string::npos) << wt;
  EXPECT_NE(wt.find("tokenizer.chat_template"), std::string::npos) << wt;
}

TEST(ChatTemplateFiles, TokenizerConfig) {
  test::TempDir dir("chat_cfg");
  const std::string cfg = dir.file("tokenizer_config.json");
  const std::string tj = dir.file("tokenizer.json");
  // Found from the folder, from the tokenizer.json in it and from a tokenizer.model beside it.
  write_text(cfg, json{{"chat_template", "{{ '<start_of_turn>' + role }}"}}.dump());
  for (const std::string& from : {dir.str(), tj, dir.file("tokenizer.model")}) {
    const auto t = read_chat_template(from);
    ASSERT_TRUE(t.has_value()) << from;
    EXPECT_EQ(t->file, cfg);
    EXPECT_EQ(t->key, "chat_template");
    EXPECT_EQ(choose_chat_template(t, "", from), "gemma");
  }
  // A list: the "default" entry.
  write_text(cfg, json{{"chat_template", json::array({{{"name", "tool_use"}, {"template", "<|im_start|>"}},
                                                      {{"name", "default"}, {"template", "<|start_header_id|><|end_header_id|>"}}})}}
                      .dump());
  EXPECT_EQ(choose_chat_template(read_chat_template(dir.str()), "", dir.str()), "llama3");
  write_text(cfg, json{{"chat_template", json::array({{{"name", "tool_use"}, {"template", "x"}}})}}.dump());
  std::string e = error_of([&] { read_chat_template(dir.str()); });
  EXPECT_NE(e.find(cfg + ": chat_template: a list without a \"default\" template (it has: tool_use)"), std::string::npos) << e;
  write_text(cfg, json{{"chat_template", 7}}.dump());
  e = error_of([&] { read_chat_template(dir.str()); });
  EXPECT_NE(e.find(cfg + ": chat_template: expected a string or a list"), std::string::npos) << e;
  write_text(cfg, json{{"chat_template", "{{ messages | tojson }}"}}.dump());
  e = error_of([&] { choose_chat_template(read_chat_template(dir.str()), "", dir.str()); });
  EXPECT_NE(e.find(cfg + ": chat_template: a chat template cibench does not recognise"), std::string::npos) << e;
  // No chat_template key: a chat_template.jinja beside it, else nothing.
  write_text(cfg, json{{"eos_token", "</s>"}}.dump());
  EXPECT_FALSE(read_chat_template(dir.str()).has_value());
  write_text(dir.file("chat_template.jinja"), "{{ '<|im_start|>' }}");
  const auto j = read_chat_template(dir.str());
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->file, dir.file("chat_template.jinja"));
  EXPECT_EQ(choose_chat_template(j, "", dir.str()), "chatml");
}

// ---------------------------------------------------------------- special tokens

// phi-3's GGUF vocabulary (SentencePiece-style) ships its chat template and control pieces.
TEST(ChatTemplateTokens, Phi3GgufControlPiecesAreSingleIds) {
  const std::string rel = "models/tokenizer-test-vectors/ggml-vocab-phi-3.gguf";
  CIBENCH_REQUIRE_SHARED(rel);
  const std::string path = test::shared_path(rel);
  const auto tok = open_tokenizer(path);
  EXPECT_EQ(choose_chat_template(read_chat_template(path), "", path), "phi3");
  const int kUser = 32010, kEnd = 32007, kAssistant = 32001, kSystem = 32006;
  EXPECT_EQ(tok->encode_special("<|user|>", false, false), (std::vector<int>{kUser}));
  // Plain encode() never makes control pieces of text.
  const std::vector<int> plain = tok->encode("<|user|>", false, false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), kUser), 0);

  // A control piece typed by the user stays text; the template's are single ids. As llama.cpp,
  // each raw stretch after a control piece gets the SentencePiece prefix space, so the stretch
  // encodes as encode() of it alone.
  const std::vector<ChatMessage> chat = {{"system", "Be brief."}, {"user", "<|user|>Hi"}};
  const std::vector<int> ids = tok->encode_segments(render_chat("phi3", chat, true), true, false);
  const std::vector<int> expect = cat({{1, kSystem},
                                       tok->encode("\nBe brief.", false, false),
                                       {kEnd},
                                       tok->encode("\n", false, false),
                                       {kUser},
                                       tok->encode("\n<|user|>Hi", false, false),
                                       {kEnd},
                                       tok->encode("\n", false, false),
                                       {kAssistant},
                                       tok->encode("\n", false, false)});
  EXPECT_EQ(ids, expect);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), kUser), 1);
  // Without control pieces encode_segments is encode() of the joined text.
  EXPECT_EQ(tok->encode_segments({{"Hello ", true}, {"world", false}}, true, false), tok->encode("Hello world", true, false));
  // The end of turn is one token.
  EXPECT_EQ(tok->encode_special(chat_end_of_turn("phi3"), false, false), (std::vector<int>{kEnd}));
}

// A byte-level tokenizer.json whose 256 byte tokens have the byte's value as id (no merges), so
// a plain byte encodes as itself, and ChatML's control tokens 256..258.
std::string byte_tokenizer_json() {
  json vocab = json::object();
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    std::string ch;
    unicode::append_utf8(ch, printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++));
    vocab[ch] = b;
  }
  json added = json::array();
  const char* specials[] = {"<|im_start|>", "<|im_end|>", "<|endoftext|>"};
  for (int i = 0; i < 3; ++i) {
    vocab[specials[i]] = 256 + i;
    added.push_back({{"id", 256 + i}, {"content", specials[i]}, {"special", true}});
  }
  return json{{"version", "1.0"},
              {"added_tokens", added},
              {"normalizer", nullptr},
              {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
              {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}}
      .dump();
}

std::vector<int> bytes(const std::string& s) {
  std::vector<int> out;
  for (unsigned char c : s) out.push_back(c);
  return out;
}

TEST(ChatTemplateTokens, TokenizerJsonChatMl) {
  test::TempDir dir("chat_bpe");
  write_text(dir.file("tokenizer.json"), byte_tokenizer_json());
  write_text(dir.file("tokenizer_config.json"),
             json{{"eos_token", "<|im_end|>"},
                  {"chat_template",
                   "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                   "'<|im_end|>' + '\\n'}}{% endfor %}"}}
                 .dump());
  const auto tok = open_tokenizer(dir.str());
  EXPECT_EQ(tok->vocab_size(), 259);
  EXPECT_EQ(tok->eos_id(), 257);
  const std::string name = choose_chat_template(read_chat_template(dir.str()), "", dir.str());
  ASSERT_EQ(name, "chatml");
  const std::vector<ChatMessage> chat = {{"system", "Be brief."}, {"user", "<|im_start|>x<|im_end|>"}};
  const std::vector<int> ids = tok->encode_segments(render_chat(name, chat, true), true, false);
  EXPECT_EQ(ids, cat({{256}, bytes("system\nBe brief."), {257}, bytes("\n"), {256}, bytes("user\n<|im_start|>x<|im_end|>"),
                      {257}, bytes("\n"), {256}, bytes("assistant\n")}));
  // Everywhere special, the user's text would have been control tokens too (llama.cpp's
  // parse_special on the whole prompt).
  EXPECT_EQ(tok->encode_special("a<|im_start|>x<|im_end|>", false, false), (std::vector<int>{'a', 256, 'x', 257}));
  EXPECT_EQ(tok->encode("a<|im_start|>", false, false), bytes("a<|im_start|>"));
  EXPECT_EQ(tok->encode_special(chat_end_of_turn(name), false, false), (std::vector<int>{257}));
  // A special piece split across segments is not matched.
  EXPECT_EQ(tok->encode_segments({{"<|im_", true}, {"end|>", true}}, false, false), bytes("<|im_end|>"));
}

// GGUF byte-level BPE: GPT-2's <|endoftext|> is a control piece.
TEST(ChatTemplateTokens, GgufBpeControlPiece) {
  const std::string rel = "models/tokenizer-test-vectors/ggml-vocab-gpt-2.gguf";
  CIBENCH_REQUIRE_SHARED(rel);
  const auto tok = open_tokenizer(test::shared_path(rel));
  EXPECT_EQ(tok->encode_special("<|endoftext|>Hello", false, false),
            cat({{50256}, tok->encode("Hello", false, false)}));
  EXPECT_EQ(tok->encode_segments({{"<|endoftext|>", true}, {"<|endoftext|>", false}}, false, false),
            cat({{50256}, tok->encode("<|endoftext|>", false, false)}));
  const std::vector<int> plain = tok->encode("<|endoftext|>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 50256), 0);
}

}  // namespace
}  // namespace cibench
