#pragma once
// Storage for tensors: 64-byte aligned heap memory, or a read-only memory-mapped file.
#include <vector>
#include <utility>
#include <optional>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace cibench {

// Owns 64-byte aligned, zero-initialised memory. Large buffers are advised for huge pages.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& o) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(data_);
  }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data_);
  }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A whole file mapped read-only. Throws FileError naming the file when it cannot be opened.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A named byte range of a file (a tensor's data).
struct ByteRange {
  uint64_t begin = 0;
  uint64_t size = 0;
  std::string name;
};
// The first two ranges (in order of begin) that share a byte, earlier first; nullopt when none
// do (empty ranges never overlap). Model readers refuse files whose tensors alias each other.
std::optional<std::pair<ByteRange, ByteRange>> first_overlap(std::vector<ByteRange> ranges);

// Reads a whole (small) file into a string; throws FileError on failure.
// Refuses (FileError naming the path) what is not a regular file, before anything reads it:
// a FIFO would block forever, a directory or device is not a model, tokenizer or data file.
void require_regular_file(const std::string& path);
// The whole file; FileError naming it when it is not a regular file or cannot be read.
std::string read_file(const std::string& path);

}  // namespace cibench
