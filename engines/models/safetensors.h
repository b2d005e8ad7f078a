#pragma once
// A safetensors reader (the Hugging Face weights container): an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}}, then the tensor bytes. Every
// offset is checked against the file; problems throw FileError naming the file and the tensor.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engines/core/buffer.h"

namespace cibench {

// "[rows, cols]": a tensor shape in error messages.
std::string shape_str(const std::vector<int64_t>& shape);

struct SafetensorInfo {
  std::string name;
  std::string dtype;           // "F32", "F16", "BF16", ...
  std::vector<int64_t> shape;  // row-major, outermost first
  const uint8_t* data = nullptr;
  size_t nbytes = 0;

  int64_t numel() const;
  // Reads rows [row_begin, row_begin+n_rows) of the tensor viewed as [shape[0], prod(rest)]
  // as f32 (F32, F16 and BF16 are converted); throws for other dtypes.
  void read_rows_f32(int64_t row_begin, int64_t n_rows, float* dst) const;
};

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  const std::string& path() const { return file_->path(); }
  const std::map<std::string, SafetensorInfo>& tensors() const { return tensors_; }
  // nullptr when absent.
  const SafetensorInfo* find(const std::string& name) const;
  // Throws FileError naming the file when absent.
  const SafetensorInfo& get(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  std::shared_ptr<const MappedFile> file() const { return file_; }

 private:
  std::shared_ptr<const MappedFile> file_;
  std::map<std::string, SafetensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// IEEE half and bfloat16 to float (exact).
float f16_to_f32(uint16_t h);
float bf16_to_f32(uint16_t h);

}  // namespace cibench
