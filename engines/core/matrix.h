#pragma once
// A weight matrix in one format, and the front ends that validate shapes, convert activations
// and split rows across the thread pool before calling a format's kernels.
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "engines/core/buffer.h"
#include "engines/core/format.h"
#include "engines/core/thread_pool.h"

namespace cibench {

struct WeightMatrix {
  std::string name;                 // e.g. "layers.3.attention.wq"
  int64_t rows = 0;                 // output features (N)
  int64_t cols = 0;                 // input features (K)
  const FormatRow* format = nullptr;
  size_t row_bytes = 0;             // format->row_bytes(cols); 0 = variable-size rows
  // Fixed rows: rows * row_bytes. Variable rows (formats with packed_row_bytes, e.g. sparse):
  // a table of rows + 1 uint64 byte offsets from data() (row r = [offset[r], offset[r + 1]),
  // each 16-byte aligned), then the rows back to back. Kernels get data() and row_bytes == 0.
  AlignedBuffer storage;
  // Calibrated per-tensor activation scale for formats with quantize_act_static (w8a8_static):
  // activations are quantised as round(x / act_scale) clamped to [-127, 127]. 0 = not
  // calibrated: such a matrix quantises its activations per token like w8a8.
  float act_scale = 0.f;

  bool variable_rows() const { return row_bytes == 0 && storage.size() != 0; }
  const uint8_t* data() const { return storage.data(); }
  const uint8_t* row(int64_t r) const {
    return variable_rows() ? storage.data() + storage.as<uint64_t>()[r]
                           : storage.data() + r * row_bytes;
  }
  // Bytes of weights (the offset table included for variable rows).
  size_t bytes() const {
    return variable_rows() ? static_cast<size_t>(storage.as<uint64_t>()[rows])
                           : static_cast<size_t>(rows) * row_bytes;
  }

  // The weights repacked for a level's matrix unit (FormatKernels::tiles_pack: AMX tiles), made
  // by the first matmul that takes them and kept beside the rows (extra memory: tiles_bytes()).
  // Thread-safe: sessions sharing the matrix share one copy. nullptr when `k` has no repack,
  // the rows are variable-size, or the matrix holds no weights (moved from).
  const uint8_t* tiles_for(const FormatKernels& k) const;
  size_t tiles_bytes() const;
  // The same for decode (FormatKernels::decode_pack: 16-row blocks read as one stream), made by
  // the first matvec that takes it (extra memory: decode_bytes()).
  const uint8_t* decode_for(const FormatKernels& k) const;
  size_t decode_bytes() const;
  // Both copies (tiles and decode layout) made so far: memory beside bytes().
  size_t repacked_bytes() const { return tiles_bytes() + decode_bytes(); }

 private:
  struct Repack {
    std::mutex mu;
    std::atomic<const uint8_t*> ready{nullptr};
    void (*pack)(const uint8_t*, size_t, int64_t, int64_t, uint8_t*) = nullptr;  // which repack
    AlignedBuffer buf;
  };
  const uint8_t* repacked(Repack* r, size_t (*size)(int64_t, int64_t),
                          void (*pack)(const uint8_t*, size_t, int64_t, int64_t, uint8_t*)) const;
  std::unique_ptr<Repack> tiles_ = std::make_unique<Repack>();
  std::unique_ptr<Repack> decode_ = std::make_unique<Repack>();
};

// Fills `dst` with rows [row_begin, row_begin + n_rows) of a (rows x cols) f32 matrix.
using RowSource = std::function<void(int64_t row_begin, int64_t n_rows, float* dst)>;

// Packs a matrix row block by row block, so the f32 form is never materialised whole
// (a Llama-2-7B can be built straight into a compact format).
WeightMatrix pack_matrix(const std::string& name, int64_t rows, int64_t cols,
                         const FormatRow& format, const RowSource& source);
WeightMatrix pack_matrix(const std::string& name, const float* src, int64_t rows, int64_t cols,
                         const FormatRow& format);
// Reference unpack of the whole matrix to f32 (rows * cols floats).
void unpack_matrix(const WeightMatrix& w, float* dst);

// Runs matrix products through one pool at one ISA level. Owns its activation scratch; after
// reserve() the hot path does not allocate.
class MatmulRunner {
 public:
  MatmulRunner(ThreadPool& pool, Isa isa);
  // Makes room for activation conversion of up to m rows of k values.
  void reserve(int64_t m, int64_t k);

  // y[rows] = W x
  void matvec(const WeightMatrix& w, const float* x, float* y);
  // Y[m, rows] = X[m, cols] W^T, X rows `ldx` floats apart, Y rows `ldy` floats apart.
  void matmul(const WeightMatrix& w, const float* x, int64_t ldx, int64_t m, float* y,
              int64_t ldy);
  // The same, then epilogue(ctx, col_begin, col_end) on the thread that computed the columns
  // Y[:, col_begin, col_end) (a bias and activation, say), before the pool's barrier: no pass of
  // its own, and the columns are still in that thread's cache.
  using Epilogue = void (*)(void* ctx, int64_t col_begin, int64_t col_end);
  void matmul(const WeightMatrix& w, const float* x, int64_t ldx, int64_t m, float* y,
              int64_t ldy, Epilogue epilogue, void* ctx);

  // Several matrices of one input (a layer's wq, wk and wv; w1 and w3): Y_i[m, w_i.rows] =
  // X W_i^T, X rows `ldx` floats apart, Y_i rows ldy_i apart. Where they share the format, the
  // width and the static activation scale, X is converted once for all of them and they run in
  // one pass of the pool, each thread computing its share of each matrix in turn (one barrier
  // instead of one per matrix); otherwise one matmul() each. Each Y_i is bit for bit what
  // matmul(w_i, ...) writes: the same kernels over the same row ranges.
  struct Out {
    const WeightMatrix* w;
    float* y;
    int64_t ldy;
  };
  void matmul_same_input(std::initializer_list<Out> outs, const float* x, int64_t ldx, int64_t m);

  ThreadPool& pool() { return pool_; }
  Isa isa() const { return isa_; }

 private:
  const void* convert(const WeightMatrix& w, const float* x, int64_t ldx, int64_t m,
                      size_t* act_row_bytes);
  ThreadPool& pool_;
  Isa isa_;
  AlignedBuffer act_;
};

}  // namespace cibench
