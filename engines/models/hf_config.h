#pragma once
// Typed reads of a Hugging Face config.json, shared by the Llama-family and BERT-family loaders:
// a missing or mistyped key is a FileError naming the config file and the key.
#include <string>

#include <nlohmann/json.hpp>

namespace cibench::hf {

// The value of `key`, or null when absent or JSON null.
const nlohmann::json* field(const nlohmann::json& j, const char* key);
// An integer in int range; `fallback` (when given) for an absent key, otherwise an error.
int get_int(const nlohmann::json& j, const char* key, const std::string& cfg, const int* fallback = nullptr);
double get_number(const nlohmann::json& j, const char* key, const std::string& cfg, double fallback);
std::string get_string(const nlohmann::json& j, const char* key, const std::string& cfg, const std::string& fallback);

}  // namespace cibench::hf
