#pragma once
// A GGUF v3 reader: header, metadata key/values and tensor directory, over a mapped file.
// Every offset and count is checked against the file size; problems throw FileError naming the
// file and what is wrong.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "engines/core/buffer.h"

namespace cibench {

enum class GgufType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8,
  array = 9, u64 = 10, i64 = 11, f64 = 12,
};

struct GgufValue {
  GgufType type = GgufType::u8;
  // Scalars are widened: integers to int64/uint64, floats to double.
  std::variant<int64_t, uint64_t, double, bool, std::string> scalar;
  GgufType array_type = GgufType::u8;     // for arrays
  std::vector<GgufValue> array;           // for arrays (strings and numbers)

  int64_t as_int(const std::string& key, const std::string& path) const;
  double as_float(const std::string& key, const std::string& path) const;
  const std::string& as_string(const std::string& key, const std::string& path) const;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // GGUF order: dims[0] is the innermost (contiguous) dimension
  uint32_t ggml_type = 0;     // 0 = F32, 1 = F16, 30 = BF16, ...
  uint64_t offset = 0;        // from the start of the data section
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
};

class GgufFile {
 public:
  explicit GgufFile(const std::string& path);

  const std::string& path() const { return file_->path(); }
  uint32_t version() const { return version_; }
  bool has(const std::string& key) const { return kv_.count(key) != 0; }
  const GgufValue& get(const std::string& key) const;  // throws naming file and key
  const std::map<std::string, GgufValue>& metadata() const { return kv_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(const std::string& name) const;
  std::shared_ptr<const MappedFile> file() const { return file_; }

  static const char* ggml_type_name(uint32_t t);

 private:
  std::shared_ptr<const MappedFile> file_;
  uint32_t version_ = 0;
  std::map<std::string, GgufValue> kv_;
  std::vector<GgufTensorInfo> tensors_;
};

}  // namespace cibench
