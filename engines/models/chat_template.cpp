// Chat templates: detection from the Jinja text and rendering, following llama.cpp's
// llama-chat.cpp (the same heuristics, in the same order, and the same renderings).
#include "engines/models/chat_template.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/models/gguf.h"

namespace cibench {
namespace {

// Every family llama.cpp detects; the ones marked true are rendered here.
struct Family {
  const char* name;
  bool rendered;
};
const Family kFamilies[] = {
    {"chatml", true},         {"llama2", true},         {"llama2-sys", true},   {"llama2-sys-bos", true},
    {"llama2-sys-strip", true}, {"mistral-v1", true},   {"mistral-v3", true},   {"mistral-v3-tekken", true},
    {"mistral-v7", true},     {"phi3", true},           {"phi4", true},         {"falcon3", true},
    {"zephyr", true},         {"zephyr-eos", true},     {"monarch", false},       {"gemma", true},        {"orion", false},
    {"openchat", true},       {"vicuna", true},         {"vicuna-orca", true},  {"deepseek", true},
    {"deepseek2", true},      {"deepseek3", true},      {"command-r", true},    {"llama3", true},
    {"chatglm3", false},      {"chatglm4", false},      {"glmedge", false},     {"minicpm", false},
    {"exaone3", false},       {"rwkv-world", false},    {"granite", false},     {"gigachat", false},
    {"megrez", false},
};

bool is_family(const std::string& s) {
  return std::any_of(std::begin(kFamilies), std::end(kFamilies), [&](const Family& f) { return s == f.name; });
}

bool is_rendered(const std::string& s) {
  const auto& n = chat_template_names();
  return std::find(n.begin(), n.end(), s) != n.end();
}

// llama.cpp's trim: isspace from both ends.
std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Collects segments: template text (special) and message content (plain).
class Out {
 public:
  Out& t(const std::string& s) {  // the template's own text (and the role names)
    add(s, true);
    return *this;
  }
  Out& c(const std::string& s) {  // message content
    add(s, false);
    return *this;
  }
  std::vector<TextSegment> take() { return std::move(segs_); }

 private:
  void add(const std::string& s, bool special) {
    if (s.empty()) return;
    if (!segs_.empty() && segs_.back().special == special) segs_.back().text += s;
    else segs_.push_back(TextSegment{s, special});
  }
  std::vector<TextSegment> segs_;
};

}  // namespace

const std::vector<std::string>& chat_template_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Family& f : kFamilies)
      if (f.rendered) v.push_back(f.name);
    std::sort(v.begin(), v.end());
    return v;
  }();
  return names;
}

std::string chat_template_names_joined() {
  std::string s;
  for (const std::string& n : chat_template_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string detect_chat_template(const std::string& tmpl) {
  if (is_family(tmpl)) return tmpl;
  auto has = [&](const char* s) { return tmpl.find(s) != std::string::npos; };
  if (has("<|im_start|>")) return has("<|im_sep|>") ? "phi4" : "chatml";
  if (tmpl.rfind("mistral", 0) == 0 || has("[INST]")) {
    if (has("[SYSTEM_PROMPT]")) return "mistral-v7";
    if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
      if (has(" [INST]")) return "mistral-v1";
      if (has("\"[INST]\"")) return "mistral-v3-tekken";
      return "mistral-v3";
    }
    if (has("content.strip()")) return "llama2-sys-strip";
    if (has("bos_token + '[INST]")) return "llama2-sys-bos";
    if (has("<<SYS>>")) return "llama2-sys";
    return "llama2";
  }
  if (has("<|assistant|>") && has("<|end|>")) return "phi3";
  if (has("<|assistant|>") && has("<|user|>")) {
    if (has("</s>")) return "falcon3";
    // Zephyr-7B and TinyLlama-Chat end each turn with eos_token (llama.cpp takes them for
    // GLM-Edge, whose template has no end of turn).
    return has("eos_token") ? "zephyr-eos" : "glmedge";
  }
  if (has("<|user|>") && has("<|endoftext|>")) return "zephyr";
  if (has("bos_token + message['role']")) return "monarch";
  if (has("<start_of_turn>")) return "gemma";
  if (has("'\\n\\nAssistant: ' + eos_token")) return "orion";
  if (has("GPT4 Correct ")) return "openchat";
  if (has("USER: ") && has("ASSISTANT: ")) return has("SYSTEM: ") ? "vicuna-orca" : "vicuna";
  if (has("### Instruction:") && has("<|EOT|>")) return "deepseek";
  if (has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>")) return "command-r";
  if (has("<|start_header_id|>") && has("<|end_header_id|>")) return "llama3";
  if (has("[gMASK]sop")) return "chatglm3";
  if (has("[gMASK]<sop>")) return "chatglm4";
  if (has("<\xE7\x94\xA8\xE6\x88\xB7>")) return "minicpm";  // "<用户>"
  if (has("'Assistant: ' + message['content'] + eos_token")) return "deepseek2";
  // "<｜Assistant｜>", "<｜User｜>", "<｜end▁of▁sentence｜>" (fullwidth bars, U+2581)
  if (has("<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>") && has("<\xEF\xBD\x9C" "User\xEF\xBD\x9C>") &&
      has("<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"))
    return "deepseek3";
  if (has("[|system|]") && has("[|assistant|]") && has("[|endofturn|]")) return "exaone3";
  if (has("rwkv-world")) return "rwkv-world";
  if (has("<|start_of_role|>")) return "granite";
  if (has("message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]"))
    return "gigachat";
  if (has("<|role_start|>")) return "megrez";
  return "";
}

std::string joined_text(const std::vector<TextSegment>& segments) {
  std::string s;
  for (const TextSegment& x : segments) s += x.text;
  return s;
}

std::vector<TextSegment> render_chat(const std::string& name, const std::vector<ChatMessage>& chat, bool add_ass) {
  if (!is_rendered(name))
    throw Error(str("chat template '", name, "' is not one cibench renders (known: ", chat_template_names_joined(), ")"));
  for (const ChatMessage& m : chat)
    if (m.role != "system" && m.role != "user" && m.role != "assistant")
      throw Error(str("chat message role '", m.role, "': expected system, user or assistant"));
  static const std::string kEos = "</s>";
  static const std::string kEndOfSentence = "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
  Out o;
  if (name == "chatml") {
    for (const auto& m : chat) o.t("<|im_start|>" + m.role + "\n").c(m.content).t("<|im_end|>\n");
    if (add_ass) o.t("<|im_start|>assistant\n");
  } else if (name == "mistral-v7") {
    for (const auto& m : chat) {
      if (m.role == "system") o.t("[SYSTEM_PROMPT] ").c(m.content).t("[/SYSTEM_PROMPT]");
      else if (m.role == "user") o.t("[INST] ").c(m.content).t("[/INST]");
      else o.t(" ").c(m.content).t(kEos);
    }
  } else if (name == "mistral-v1" || name == "mistral-v3" || name == "mistral-v3-tekken") {
    const std::string lead = name == "mistral-v1" ? " " : "";
    const std::string trail = name == "mistral-v3-tekken" ? "" : " ";
    const bool trim_assistant = name == "mistral-v3";
    bool inside = false;
    for (const auto& m : chat) {
      if (!inside) {
        o.t(lead + "[INST]" + trail);
        inside = true;
      }
      if (m.role == "system") {
        o.c(m.content).t("\n\n");
      } else if (m.role == "user") {
        o.c(m.content).t(lead + "[/INST]");
      } else {
        o.t(trail).c(trim_assistant ? trim(m.content) : m.content).t(kEos);
        inside = false;
      }
    }
  } else if (name.rfind("llama2", 0) == 0) {
    const bool system = name != "llama2";
    const bool bos_inside = name == "llama2-sys-bos";
    const bool strip = name == "llama2-sys-strip";
    bool inside = true;  // the first BOS is the tokenizer's
    o.t("[INST] ");
    for (const auto& m : chat) {
      const std::string content = strip ? trim(m.content) : m.content;
      if (!inside) {
        inside = true;
        o.t(bos_inside ? "<s>[INST] " : "[INST] ");
      }
      if (m.role == "system") {
        if (system) o.t("<<SYS>>\n").c(content).t("\n<</SYS>>\n\n");
        else o.c(content).t("\n");
      } else if (m.role == "user") {
        o.c(content).t(" [/INST]");
      } else {
        o.c(content).t(kEos);
        inside = false;
      }
    }
  } else if (name == "phi3") {
    for (const auto& m : chat) o.t("<|" + m.role + "|>\n").c(m.content).t("<|end|>\n");
    if (add_ass) o.t("<|assistant|>\n");
  } else if (name == "phi4") {
    for (const auto& m : chat) o.t("<|im_start|>" + m.role + "<|im_sep|>").c(m.content).t("<|im_end|>");
    if (add_ass) o.t("<|im_start|>assistant<|im_sep|>");
  } else if (name == "falcon3") {
    for (const auto& m : chat) o.t("<|" + m.role + "|>\n").c(m.content).t("\n");
    if (add_ass) o.t("<|assistant|>\n");
  } else if (name == "zephyr") {
    for (const auto& m : chat) o.t("<|" + m.role + "|>\n").c(m.content).t("<|endoftext|>\n");
    if (add_ass) o.t("<|assistant|>\n");
  } else if (name == "zephyr-eos") {
    for (const auto& m : chat) o.t("<|" + m.role + "|>\n").c(m.content).t("</s>\n");
    if (add_ass) o.t("<|assistant|>\n");
  } else if (name == "gemma") {
    // No system turn: the system text opens the next user turn.
    std::string system_prompt;
    for (const auto& m : chat) {
      if (m.role == "system") {
        system_prompt = trim(m.content);
        continue;
      }
      const std::string role = m.role == "assistant" ? "model" : m.role;
      o.t("<start_of_turn>" + role + "\n");
      if (!system_prompt.empty() && role != "model") {
        o.c(system_prompt).t("\n\n");
        system_prompt.clear();
      }
      o.c(trim(m.content)).t("<end_of_turn>\n");
    }
    if (add_ass) o.t("<start_of_turn>model\n");
  } else if (name == "openchat") {
    for (const auto& m : chat) {
      if (m.role == "system") {
        o.c(m.content).t("<|end_of_turn|>");
      } else {
        std::string role = m.role;
        role[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(role[0])));
        o.t("GPT4 Correct " + role + ": ").c(m.content).t("<|end_of_turn|>");
      }
    }
    if (add_ass) o.t("GPT4 Correct Assistant:");
  } else if (name == "vicuna" || name == "vicuna-orca") {
    for (const auto& m : chat) {
      if (m.role == "system") {
        if (name == "vicuna-orca") o.t("SYSTEM: ").c(m.content).t("\n");
        else o.c(m.content).t("\n\n");
      } else if (m.role == "user") {
        o.t("USER: ").c(m.content).t("\n");
      } else {
        o.t("ASSISTANT: ").c(m.content).t("</s>\n");
      }
    }
    if (add_ass) o.t("ASSISTANT:");
  } else if (name == "deepseek") {
    for (const auto& m : chat) {
      if (m.role == "system") o.c(m.content);
      else if (m.role == "user") o.t("### Instruction:\n").c(m.content).t("\n");
      else o.t("### Response:\n").c(m.content).t("\n<|EOT|>\n");
    }
    if (add_ass) o.t("### Response:\n");
  } else if (name == "deepseek2") {
    for (const auto& m : chat) {
      if (m.role == "system") o.c(m.content).t("\n\n");
      else if (m.role == "user") o.t("User: ").c(m.content).t("\n\n");
      else o.t("Assistant: ").c(m.content).t(kEndOfSentence);
    }
    if (add_ass) o.t("Assistant:");
  } else if (name == "deepseek3") {
    const std::string user = "<\xEF\xBD\x9C" "User\xEF\xBD\x9C>", assistant = "<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>";
    for (const auto& m : chat) {
      if (m.role == "system") o.c(m.content).t("\n\n");
      else if (m.role == "user") o.t(user).c(m.content);
      else o.t(assistant).c(m.content).t(kEndOfSentence);
    }
    if (add_ass) o.t(assistant);
  } else if (name == "command-r") {
    for (const auto& m : chat) {
      const char* tag = m.role == "system" ? "<|SYSTEM_TOKEN|>" : m.role == "user" ? "<|USER_TOKEN|>" : "<|CHATBOT_TOKEN|>";
      o.t(std::string("<|START_OF_TURN_TOKEN|>") + tag).c(trim(m.content)).t("<|END_OF_TURN_TOKEN|>");
    }
    if (add_ass) o.t("<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
  } else if (name == "llama3") {
    for (const auto& m : chat)
      o.t("<|start_header_id|>" + m.role + "<|end_header_id|>\n\n").c(trim(m.content)).t("<|eot_id|>");
    if (add_ass) o.t("<|start_header_id|>assistant<|end_header_id|>\n\n");
  } else {
    throw Error(str("chat template '", name, "' has no renderer"));  // (every rendered name has one)
  }
  return o.take();
}

std::string chat_end_of_turn(const std::string& name) {
  if (name == "chatml" || name == "phi4") return "<|im_end|>";
  if (name == "llama3") return "<|eot_id|>";
  if (name == "gemma") return "<end_of_turn>";
  if (name == "phi3") return "<|end|>";
  if (name == "zephyr" || name == "falcon3") return "<|endoftext|>";
  if (name == "openchat") return "<|end_of_turn|>";
  if (name == "deepseek") return "<|EOT|>";
  if (name == "deepseek2" || name == "deepseek3") return "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
  if (name == "command-r") return "<|END_OF_TURN_TOKEN|>";
  return "</s>";  // llama2, mistral, vicuna
}

namespace {

using nlohmann::json;

std::optional<ChatTemplateText> from_tokenizer_config(const std::filesystem::path& dir) {
  std::error_code ec;
  const std::filesystem::path cfg = dir / "tokenizer_config.json";
  if (std::filesystem::is_regular_file(cfg, ec)) {
    const std::string cp = cfg.string();
    json j;
    try {
      j = json::parse(read_file(cp));
    } catch (const json::exception& e) {
      throw FileError(cp, str("not valid JSON: ", e.what()));
    }
    if (!j.is_object()) throw FileError(cp, "expected a JSON object at the top level");
    if (j.contains("chat_template") && !j["chat_template"].is_null()) {
      const json& ct = j["chat_template"];
      if (ct.is_string()) return ChatTemplateText{ct.get<std::string>(), cp, "chat_template"};
      if (!ct.is_array())
        throw FileError(cp, str("chat_template: expected a string or a list of {\"name\", \"template\"}, got a ",
                                ct.type_name()));
      std::string names;
      for (size_t i = 0; i < ct.size(); ++i) {
        const json& e = ct[i];
        if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("template") ||
            !e["template"].is_string())
          throw FileError(cp, str("chat_template[", i, "]: expected {\"name\": string, \"template\": string}"));
        if (e["name"] == "default") return ChatTemplateText{e["template"].get<std::string>(), cp, "chat_template"};
        names += (names.empty() ? "" : ", ") + e["name"].get<std::string>();
      }
      throw FileError(cp, str("chat_template: a list without a \"default\" template (it has: ", names, ")"));
    }
  }
  const std::filesystem::path jinja = dir / "chat_template.jinja";
  if (std::filesystem::is_regular_file(jinja, ec)) return ChatTemplateText{read_file(jinja.string()), jinja.string(), ""};
  return std::nullopt;
}

}  // namespace

std::optional<ChatTemplateText> read_chat_template(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return from_tokenizer_config(fs::path(path));
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".gguf") {
    const GgufFile g(path);
    if (!g.has("tokenizer.chat_template")) return std::nullopt;
    return ChatTemplateText{g.get("tokenizer.chat_template").as_string("tokenizer.chat_template", path), path,
                            "tokenizer.chat_template"};
  }
  if (ext == ".json" || ext == ".model") return from_tokenizer_config(fs::path(path).parent_path());
  return std::nullopt;
}

std::string choose_chat_template(const std::optional<ChatTemplateText>& found, const std::string& override_name,
                                 const std::string& searched) {
  if (!override_name.empty()) {
    if (!is_rendered(override_name))
      throw Error(str("--chat-template '", override_name, "' is not a chat template cibench knows (known: ",
                      chat_template_names_joined(), ")"));
    return override_name;
  }
  if (!found)
    throw Error(str("no chat template in ", searched,
                    " (GGUF key tokenizer.chat_template, tokenizer_config.json chat_template or chat_template.jinja); "
                    "give --chat-template NAME, one of: ",
                    chat_template_names_joined()));
  const std::string name = detect_chat_template(found->text);
  std::string excerpt = found->text.substr(0, 60);
  for (char& ch : excerpt)
    if (ch == '\n') ch = ' ';
  const std::string where = found->key.empty() ? std::string("the chat template") : found->key;
  if (name.empty())
    throw FileError(found->file, str(where, ": a chat template cibench does not recognise (\"", excerpt,
                                     found->text.size() > 60 ? "..." : "", "\"); give --chat-template NAME, one of: ",
                                     chat_template_names_joined()));
  if (!is_rendered(name))
    throw FileError(found->file, str(where, ": recognised as the '", name,
                                     "' template, which cibench does not render; give --chat-template NAME, one of: ",
                                     chat_template_names_joined()));
  return name;
}

}  // namespace cibench
