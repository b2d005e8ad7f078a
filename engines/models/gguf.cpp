#include "engines/models/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "engines/core/error.h"

namespace cibench {

namespace {

// ---------------------------------------------------------------------------------------------
// ggml tensor types: name, elements per block, bytes per block (as in ggml-common.h).

struct GgmlTypeTraits {
  const char* name;
  uint32_t block_size;
  uint32_t block_bytes;
};

const GgmlTypeTraits* ggml_traits(uint32_t t) {
  static const GgmlTypeTraits kTable[] = {
      {"F32", 1, 4},         // 0
      {"F16", 1, 2},         // 1
      {"Q4_0", 32, 18},      // 2
      {"Q4_1", 32, 20},      // 3
      {nullptr, 0, 0},       // 4 (Q4_2, removed)
      {nullptr, 0, 0},       // 5 (Q4_3, removed)
      {"Q5_0", 32, 22},      // 6
      {"Q5_1", 32, 24},      // 7
      {"Q8_0", 32, 34},      // 8
      {"Q8_1", 32, 36},      // 9
      {"Q2_K", 256, 84},     // 10
      {"Q3_K", 256, 110},    // 11
      {"Q4_K", 256, 144},    // 12
      {"Q5_K", 256, 176},    // 13
      {"Q6_K", 256, 210},    // 14
      {"Q8_K", 256, 292},    // 15
      {"IQ2_XXS", 256, 66},  // 16
      {"IQ2_XS", 256, 74},   // 17
      {"IQ3_XXS", 256, 98},  // 18
      {"IQ1_S", 256, 50},    // 19
      {"IQ4_NL", 32, 18},    // 20
      {"IQ3_S", 256, 110},   // 21
      {"IQ2_S", 256, 82},    // 22
      {"IQ4_XS", 256, 136},  // 23
      {"I8", 1, 1},          // 24
      {"I16", 1, 2},         // 25
      {"I32", 1, 4},         // 26
      {"I64", 1, 8},         // 27
      {"F64", 1, 8},         // 28
      {"IQ1_M", 256, 56},    // 29
      {"BF16", 1, 2},        // 30
      {nullptr, 0, 0},       // 31 (Q4_0_4_4, removed from files)
      {nullptr, 0, 0},       // 32 (Q4_0_4_8, removed from files)
      {nullptr, 0, 0},       // 33 (Q4_0_8_8, removed from files)
      {"TQ1_0", 256, 54},    // 34
      {"TQ2_0", 256, 66},    // 35
  };
  if (t >= sizeof kTable / sizeof kTable[0] || kTable[t].name == nullptr) return nullptr;
  return &kTable[t];
}

const char* value_type_name(GgufType t) {
  switch (t) {
    case GgufType::u8: return "u8";
    case GgufType::i8: return "i8";
    case GgufType::u16: return "u16";
    case GgufType::i16: return "i16";
    case GgufType::u32: return "u32";
    case GgufType::i32: return "i32";
    case GgufType::f32: return "f32";
    case GgufType::boolean: return "bool";
    case GgufType::string: return "string";
    case GgufType::array: return "array";
    case GgufType::u64: return "u64";
    case GgufType::i64: return "i64";
    case GgufType::f64: return "f64";
  }
  return "unknown";
}

// Bytes of a fixed-size value type; 0 for string, array and unknown types.
size_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
    case GgufType::u16: case GgufType::i16: return 2;
    case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
    case GgufType::u64: case GgufType::i64: case GgufType::f64: return 8;
    default: return 0;
  }
}

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::f64); }

// Fewest bytes one array element of type t can occupy (so counts can be checked up front).
size_t min_element_bytes(GgufType t) {
  if (t == GgufType::string) return 8;       // u64 length
  if (t == GgufType::array) return 4 + 8;    // element type + count
  return scalar_size(t);
}

// ---------------------------------------------------------------------------------------------
// A bounds-checked little-endian cursor over the mapped file.

class Reader {
 public:
  Reader(const std::string& path, const uint8_t* p, size_t n) : path_(path), p_(p), n_(n) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return n_ - pos_; }

  [[noreturn]] void fail(const std::string& what) const { throw FileError(path_, what); }

  void need(uint64_t bytes, const char* what) const {
    if (bytes > remaining())
      fail(str("truncated: ", what, " needs ", bytes, " bytes at offset ", pos_, " but only ",
               remaining(), " bytes are left in the file (", n_, " bytes)"));
  }

  template <typename T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string string(const char* what) {
    const size_t at = pos_;
    const uint64_t len = get<uint64_t>(what);
    if (len > remaining())
      fail(str(what, ": string length ", len, " at offset ", at, " exceeds the ", remaining(),
               " bytes left in the file"));
    std::string s(reinterpret_cast<const char*>(p_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }

 private:
  const std::string& path_;
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

constexpr int kMaxArrayNesting = 3;

GgufValue read_value(Reader& r, GgufType type, const std::string& key, int depth) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufType::u8: v.scalar = static_cast<uint64_t>(r.get<uint8_t>("u8 value")); break;
    case GgufType::i8: v.scalar = static_cast<int64_t>(r.get<int8_t>("i8 value")); break;
    case GgufType::u16: v.scalar = static_cast<uint64_t>(r.get<uint16_t>("u16 value")); break;
    case GgufType::i16: v.scalar = static_cast<int64_t>(r.get<int16_t>("i16 value")); break;
    case GgufType::u32: v.scalar = static_cast<uint64_t>(r.get<uint32_t>("u32 value")); break;
    case GgufType::i32: v.scalar = static_cast<int64_t>(r.get<int32_t>("i32 value")); break;
    case GgufType::u64: v.scalar = r.get<uint64_t>("u64 value"); break;
    case GgufType::i64: v.scalar = r.get<int64_t>("i64 value"); break;
    case GgufType::f32: v.scalar = static_cast<double>(r.get<float>("f32 value")); break;
    case GgufType::f64: v.scalar = r.get<double>("f64 value"); break;
    case GgufType::boolean: v.scalar = r.get<uint8_t>("bool value") != 0; break;
    case GgufType::string: v.scalar = r.string("string value"); break;
    case GgufType::array: {
      if (depth >= kMaxArrayNesting)
        r.fail(str("metadata '", key, "': arrays nested deeper than ", kMaxArrayNesting,
                   " levels"));
      const size_t at = r.pos();
      const uint32_t et = r.get<uint32_t>("array element type");
      if (!valid_value_type(et))
        r.fail(str("metadata '", key, "': unknown array element type ", et, " at offset ", at));
      v.array_type = static_cast<GgufType>(et);
      const uint64_t count = r.get<uint64_t>("array count");
      const size_t min_bytes = min_element_bytes(v.array_type);
      if (count > r.remaining() / min_bytes)
        r.fail(str("metadata '", key, "': array count ", count, " at offset ", at + 4,
                   " needs at least ", min_bytes, " bytes per ", value_type_name(v.array_type),
                   " element but only ", r.remaining(), " bytes are left in the file"));
      v.array.reserve(static_cast<size_t>(count));
      for (uint64_t i = 0; i < count; ++i)
        v.array.push_back(read_value(r, v.array_type, key, depth + 1));
      break;
    }
  }
  return v;
}

std::string dims_str(const std::vector<int64_t>& d) {
  std::string out = "[";
  for (size_t i = 0; i < d.size(); ++i) out += (i ? ", " : "") + std::to_string(d[i]);
  return out + "]";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// GgufValue accessors

int64_t GgufValue::as_int(const std::string& key, const std::string& path) const {
  if (type != GgufType::array) {
    if (const auto* i = std::get_if<int64_t>(&scalar)) return *i;
    if (const auto* u = std::get_if<uint64_t>(&scalar)) {
      if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw FileError(path, str("metadata '", key, "' = ", *u, " is too large"));
      return static_cast<int64_t>(*u);
    }
  }
  throw FileError(path, str("metadata '", key, "' is ", value_type_name(type),
                            ", expected an integer"));
}

double GgufValue::as_float(const std::string& key, const std::string& path) const {
  if (type != GgufType::array) {
    if (const auto* d = std::get_if<double>(&scalar)) return *d;
    if (const auto* i = std::get_if<int64_t>(&scalar)) return static_cast<double>(*i);
    if (const auto* u = std::get_if<uint64_t>(&scalar)) return static_cast<double>(*u);
  }
  throw FileError(path, str("metadata '", key, "' is ", value_type_name(type),
                            ", expected a number"));
}

const std::string& GgufValue::as_string(const std::string& key, const std::string& path) const {
  if (type == GgufType::string)
    if (const auto* s = std::get_if<std::string>(&scalar)) return *s;
  throw FileError(path, str("metadata '", key, "' is ", value_type_name(type),
                            ", expected a string"));
}

// ---------------------------------------------------------------------------------------------
// GgufFile

const char* GgufFile::ggml_type_name(uint32_t t) {
  const GgmlTypeTraits* tr = ggml_traits(t);
  return tr ? tr->name : "unknown";
}

GgufFile::GgufFile(const std::string& path) : file_(std::make_shared<const MappedFile>(path)) {
  const std::string& p = file_->path();
  Reader r(p, file_->data(), file_->size());

  // Header: magic, version, tensor count, metadata count.
  if (file_->size() < 4 || std::memcmp(file_->data(), "GGUF", 4) != 0) {
    std::string shown;
    for (size_t i = 0; i < std::min<size_t>(4, file_->size()); ++i) {
      const char c = static_cast<char>(file_->data()[i]);
      shown += (c >= 32 && c < 127) ? c : '.';
    }
    throw FileError(p, str("not a GGUF file: bad magic '", shown, "' (expected 'GGUF')"));
  }
  r.get<uint32_t>("magic");
  version_ = r.get<uint32_t>("version");
  if (version_ != 2 && version_ != 3) {
    const uint32_t swapped = __builtin_bswap32(version_);
    if (swapped == 2 || swapped == 3)
      throw FileError(p, str("big-endian GGUF (version ", swapped,
                             ") is not supported; cibench reads little-endian GGUF v2 and v3"));
    throw FileError(p, str("unsupported GGUF version ", version_,
                           "; cibench reads GGUF versions 2 and 3"));
  }
  const uint64_t n_tensors = r.get<uint64_t>("tensor count");
  const uint64_t n_kv = r.get<uint64_t>("metadata count");
  // Each key/value takes at least 8 (key length) + 4 (type) + 1 bytes; each tensor info at
  // least 8 (name length) + 4 (n_dims) + 4 (type) + 8 (offset).
  if (n_kv > r.remaining() / 13)
    r.fail(str("metadata count ", n_kv, " cannot fit in the ", r.remaining(),
               " bytes left in the file"));
  if (n_tensors > r.remaining() / 24)
    r.fail(str("tensor count ", n_tensors, " cannot fit in the ", r.remaining(),
               " bytes left in the file"));

  // Metadata.
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.string("metadata key");
    const size_t at = r.pos();
    const uint32_t t = r.get<uint32_t>("metadata value type");
    if (!valid_value_type(t))
      r.fail(str("metadata '", key, "' has unknown value type ", t, " at offset ", at));
    GgufValue v = read_value(r, static_cast<GgufType>(t), key, 0);
    if (!kv_.emplace(key, std::move(v)).second)
      r.fail(str("duplicate metadata key '", key, "'"));
  }

  // Tensor directory.
  std::set<std::string> names;
  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo ti;
    ti.name = r.string("tensor name");
    if (!names.insert(ti.name).second) r.fail(str("duplicate tensor '", ti.name, "'"));
    const uint32_t n_dims = r.get<uint32_t>("tensor dimension count");
    if (n_dims == 0 || n_dims > 4)
      r.fail(str("tensor '", ti.name, "' has ", n_dims, " dimensions (GGUF allows 1 to 4)"));
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t n = r.get<uint64_t>("tensor dimension");
      if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          (n != 0 && numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / n))
        r.fail(str("tensor '", ti.name, "' dimension ", d, " = ", n, " is too large"));
      numel *= n;
      ti.dims.push_back(static_cast<int64_t>(n));
    }
    ti.ggml_type = r.get<uint32_t>("tensor type");
    const GgmlTypeTraits* tr = ggml_traits(ti.ggml_type);
    if (!tr) r.fail(str("tensor '", ti.name, "' has unknown ggml type ", ti.ggml_type));
    if (ti.dims[0] % tr->block_size != 0)
      r.fail(str("tensor '", ti.name, "' of type ", tr->name, " has a row of ", ti.dims[0],
                 " elements, not a multiple of its block size ", tr->block_size));
    const uint64_t blocks = numel / tr->block_size;
    if (blocks > std::numeric_limits<uint64_t>::max() / tr->block_bytes)
      r.fail(str("tensor '", ti.name, "' ", dims_str(ti.dims), " is too large"));
    // blocks * block_bytes bytes: the whole blocks the dimensions imply, no more, no fewer.
    ti.nbytes = static_cast<size_t>(blocks * tr->block_bytes);
    ti.offset = r.get<uint64_t>("tensor offset");
    tensors_.push_back(std::move(ti));
  }

  // Alignment and data section.
  uint64_t alignment = 32;
  if (auto it = kv_.find("general.alignment"); it != kv_.end()) {
    const int64_t a = it->second.as_int("general.alignment", p);
    if (a <= 0 || a > (1 << 30) || (a & (a - 1)) != 0)
      r.fail(str("general.alignment = ", a, " is not a power of two"));
    alignment = static_cast<uint64_t>(a);
  }
  const uint64_t data_start = (r.pos() + alignment - 1) / alignment * alignment;
  if (!tensors_.empty() && data_start > file_->size())
    r.fail(str("the tensor data section would start at offset ", data_start,
               ", past the end of the file (", file_->size(), " bytes)"));
  const uint64_t data_size = data_start <= file_->size() ? file_->size() - data_start : 0;
  for (GgufTensorInfo& ti : tensors_) {
    if (ti.offset % alignment != 0)
      r.fail(str("tensor '", ti.name, "' offset ", ti.offset, " is not a multiple of the alignment ",
                 alignment));
    if (ti.offset > data_size || ti.nbytes > data_size - ti.offset)
      r.fail(str("tensor '", ti.name, "' (", ggml_type_name(ti.ggml_type), ", ", dims_str(ti.dims),
                 ") data [", ti.offset, ", +", ti.nbytes,
                 " bytes) runs past the end of the file: the data section holds ", data_size,
                 " bytes from offset ", data_start));
    ti.data = file_->data() + data_start + ti.offset;
  }
  // Two tensors sharing bytes would both read them: one is not what the file means.
  std::vector<ByteRange> ranges;
  for (const GgufTensorInfo& ti : tensors_) ranges.push_back({ti.offset, ti.nbytes, ti.name});
  if (const auto o = first_overlap(std::move(ranges)))
    r.fail(str("tensor '", o->second.name, "' data [", o->second.begin, ", +", o->second.size, ") overlaps tensor '",
               o->first.name, "' [", o->first.begin, ", +", o->first.size, ")"));
}

const GgufValue& GgufFile::get(const std::string& key) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) throw FileError(path(), str("missing metadata key '", key, "'"));
  return it->second;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  for (const GgufTensorInfo& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace cibench
