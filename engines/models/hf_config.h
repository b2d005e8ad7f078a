#pragma once
// Typed reads of a Hugging Face config.json, shared by the Llama-family and BERT-family loaders:
// a missing or mistyped key is a FileError naming the config file and the key.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace cibench::hf {

// A Hugging Face model folder named by its path or by a file in it: the folder, whether the spec
// was the folder, and its config.json read and parsed (FileError naming the folder when there is
// no config.json, the file when it is not a JSON object).
struct Folder {
  std::filesystem::path spec;  // as given
  bool spec_is_dir = false;
  std::filesystem::path dir;
  std::string dir_s;
  std::string cfg;       // path of config.json
  std::string cfg_text;  // its bytes (hashed with the weights)
  nlohmann::json config;
};
Folder open_folder(const std::string& spec);

// The value of `key`, or null when absent or JSON null.
const nlohmann::json* field(const nlohmann::json& j, const char* key);
// An integer in int range; `fallback` (when given) for an absent key, otherwise an error.
int get_int(const nlohmann::json& j, const char* key, const std::string& cfg, const int* fallback = nullptr);
double get_number(const nlohmann::json& j, const char* key, const std::string& cfg, double fallback);
std::string get_string(const nlohmann::json& j, const char* key, const std::string& cfg, const std::string& fallback);

}  // namespace cibench::hf
