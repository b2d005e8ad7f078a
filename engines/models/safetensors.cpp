#include "engines/models/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "engines/core/error.h"
#include "engines/kernels/half.h"

namespace cibench {

// ---------------------------------------------------------------------------------------------
// Half-precision conversions (exact: every f16 and bf16 value is representable in f32).

float f16_to_f32(uint16_t h) { return half_to_float(h); }  // engines/kernels/half.h

float bf16_to_f32(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// ---------------------------------------------------------------------------------------------
// SafetensorInfo

namespace {

// Bytes per element of the safetensors dtypes; 0 when unknown.
size_t dtype_size(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  return 0;
}

// Deepest [ or { nesting outside strings; bounds the recursion of the JSON parser and printer.
int json_nesting_depth(const char* p, size_t n) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < n; ++i) {
    const char c = p[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw FileError(path, what);
}

[[noreturn]] void fail_tensor(const std::string& path, const std::string& name,
                              const std::string& what) {
  throw FileError(path, str("tensor '", name, "': ", what));
}

}  // namespace

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}


int64_t SafetensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // shapes were checked for overflow when the file was opened
  return n;
}

void SafetensorInfo::read_rows_f32(int64_t row_begin, int64_t n_rows, float* dst) const {
  const int64_t rows = shape.empty() ? 1 : shape[0];
  const int64_t n = numel();
  const int64_t cols = rows > 0 ? n / rows : 0;
  if (row_begin < 0 || n_rows < 0 || row_begin > rows || n_rows > rows - row_begin)
    throw Error(str("tensor '", name, "': rows [", row_begin, ", ", row_begin + n_rows,
                    ") are outside its ", rows, " rows"));
  const size_t count = static_cast<size_t>(n_rows * cols);
  const size_t first = static_cast<size_t>(row_begin * cols);
  if (dtype == "F32") {
    std::memcpy(dst, data + first * 4, count * 4);
  } else if (dtype == "F16" || dtype == "BF16") {
    const uint8_t* src = data + first * 2;
    const bool half = dtype == "F16";
    for (size_t i = 0; i < count; ++i) {
      const uint16_t h = static_cast<uint16_t>(src[2 * i] | (src[2 * i + 1] << 8));
      dst[i] = half ? f16_to_f32(h) : bf16_to_f32(h);
    }
  } else {
    throw Error(str("tensor '", name, "' has dtype ", dtype,
                    "; only F32, F16 and BF16 can be read as f32"));
  }
}

// ---------------------------------------------------------------------------------------------
// SafetensorsFile

SafetensorsFile::SafetensorsFile(const std::string& path)
    : file_(std::make_shared<const MappedFile>(path)) {
  const uint8_t* base = file_->data();
  const size_t size = file_->size();
  if (size < 8)
    fail(path, str("file too short for a safetensors header: ", size, " bytes, need at least 8"));
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | base[i];
  if (header_len > size - 8)
    fail(path, str("safetensors header length ", header_len, " runs past the end of the file (",
             size, " bytes, so at most ", size - 8, " bytes of header)"));
  const char* hdr = reinterpret_cast<const char*>(base + 8);
  const uint8_t* data_begin = base + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;

  constexpr int kMaxDepth = 64;
  if (json_nesting_depth(hdr, header_len) > kMaxDepth)
    fail(path, str("safetensors header JSON is nested deeper than ", kMaxDepth, " levels"));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(hdr, hdr + header_len);
  } catch (const nlohmann::json::exception& e) {
    fail(path, str("safetensors header is not valid JSON (", e.what(), ")"));
  }
  if (!j.is_object()) fail(path, "safetensors header is not a JSON object");

  for (const auto& [key, val] : j.items()) {
    if (key == "__metadata__") {
      if (!val.is_object()) fail(path, "safetensors '__metadata__' is not a JSON object");
      for (const auto& [mk, mv] : val.items())
        metadata_[mk] = mv.is_string() ? mv.get<std::string>() : mv.dump();
      continue;
    }
    if (!val.is_object()) fail_tensor(path, key, "entry is not a JSON object");
    SafetensorInfo info;
    info.name = key;

    auto dt = val.find("dtype");
    if (dt == val.end() || !dt->is_string()) fail_tensor(path, key, "missing or non-string 'dtype'");
    info.dtype = dt->get<std::string>();
    const size_t esize = dtype_size(info.dtype);
    if (esize == 0) fail_tensor(path, key, str("unknown dtype '", info.dtype, "'"));

    auto sh = val.find("shape");
    if (sh == val.end() || !sh->is_array()) fail_tensor(path, key, "missing or non-array 'shape'");
    uint64_t numel = 1;
    for (const auto& d : *sh) {
      if (!d.is_number_unsigned()) fail_tensor(path, key, str("shape ", sh->dump(), " has a non-integer or negative entry"));
      const uint64_t v = d.get<uint64_t>();
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          (v != 0 && numel > std::numeric_limits<uint64_t>::max() / v))
        fail_tensor(path, key, str("shape ", sh->dump(), " is too large"));
      numel *= v;
      info.shape.push_back(static_cast<int64_t>(v));
    }
    if (numel > std::numeric_limits<uint64_t>::max() / esize ||
        numel * esize > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail_tensor(path, key, str("shape ", shape_str(info.shape), " is too large"));

    auto off = val.find("data_offsets");
    if (off == val.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      fail_tensor(path, key, "'data_offsets' must be two non-negative integers");
    const uint64_t b = (*off)[0].get<uint64_t>(), e = (*off)[1].get<uint64_t>();
    if (b > e) fail_tensor(path, key, str("data_offsets [", b, ", ", e, ") begin after they end"));
    if (e > data_size)
      fail_tensor(path, key, str("data_offsets [", b, ", ", e, ") run past the end of the data section (",
              data_size, " bytes)"));
    if (e - b != numel * esize)
      fail_tensor(path, key, str("data_offsets [", b, ", ", e, ") hold ", e - b, " bytes but ", info.dtype, " ",
              shape_str(info.shape), " needs ", numel * esize));
    info.data = data_begin + b;
    info.nbytes = static_cast<size_t>(e - b);
    tensors_.emplace(key, std::move(info));
  }
  // Two tensors sharing bytes would both read them: one of them is not what the file means.
  std::vector<ByteRange> ranges;
  for (const auto& [name, t] : tensors_) ranges.push_back({static_cast<uint64_t>(t.data - data_begin), t.nbytes, name});
  if (const auto o = first_overlap(std::move(ranges)))
    fail_tensor(path, o->second.name, str("data_offsets overlap those of tensor '", o->first.name, "'"));
}

const SafetensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const SafetensorInfo& SafetensorsFile::get(const std::string& name) const {
  const SafetensorInfo* t = find(name);
  if (!t) throw FileError(path(), str("missing tensor '", name, "'"));
  return *t;
}

}  // namespace cibench
