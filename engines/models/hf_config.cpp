#include "engines/models/hf_config.h"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "engines/core/error.h"

namespace cibench::hf {

const nlohmann::json* field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return (it == j.end() || it->is_null()) ? nullptr : &*it;
}

int get_int(const nlohmann::json& j, const char* key, const std::string& cfg, const int* fallback) {
  const nlohmann::json* f = field(j, key);
  if (!f) {
    if (fallback) return *fallback;
    throw FileError(cfg, str("missing '", key, "'"));
  }
  if (!f->is_number_integer())
    throw FileError(cfg, str("'", key, "' must be an integer, got ", f->dump()));
  const int64_t v = f->is_number_unsigned()
                        ? static_cast<int64_t>(std::min<uint64_t>(f->get<uint64_t>(), INT64_MAX))
                        : f->get<int64_t>();
  if (v < INT_MIN || v > INT_MAX) throw FileError(cfg, str("'", key, "' = ", v, " is out of range"));
  return static_cast<int>(v);
}

double get_number(const nlohmann::json& j, const char* key, const std::string& cfg, double fallback) {
  const nlohmann::json* f = field(j, key);
  if (!f) return fallback;
  if (!f->is_number()) throw FileError(cfg, str("'", key, "' must be a number, got ", f->dump()));
  return f->get<double>();
}

std::string get_string(const nlohmann::json& j, const char* key, const std::string& cfg,
                       const std::string& fallback) {
  const nlohmann::json* f = field(j, key);
  if (!f) return fallback;
  if (!f->is_string()) throw FileError(cfg, str("'", key, "' must be a string, got ", f->dump()));
  return f->get<std::string>();
}

}  // namespace cibench::hf
