#include "engines/models/hf_config.h"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "engines/core/buffer.h"
#include "engines/core/error.h"

namespace cibench::hf {

Folder open_folder(const std::string& spec) {
  namespace fs = std::filesystem;
  Folder f;
  f.spec = fs::path(spec);
  f.spec_is_dir = fs::is_directory(f.spec);
  f.dir = f.spec_is_dir ? f.spec : f.spec.parent_path();
  if (f.dir.empty()) f.dir = ".";
  f.dir_s = f.dir.string();
  f.cfg = (f.dir / "config.json").string();
  if (!fs::exists(f.cfg))
    throw FileError(f.dir_s, "no config.json in this folder (a Hugging Face model folder needs "
                             "config.json and model.safetensors)");
  f.cfg_text = read_file(f.cfg);
  try {
    f.config = nlohmann::json::parse(f.cfg_text);
  } catch (const nlohmann::json::exception& e) {
    throw FileError(f.cfg, str("not valid JSON (", e.what(), ")"));
  }
  if (!f.config.is_object()) throw FileError(f.cfg, "not a JSON object");
  return f;
}

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
