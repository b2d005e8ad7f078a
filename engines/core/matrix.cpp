#include "engines/core/matrix.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "engines/core/error.h"

namespace cibench {

WeightMatrix pack_matrix(const std::string& name, int64_t rows, int64_t cols,
                         const FormatRow& format, const RowSource& source) {
  CIBENCH_CHECK(rows > 0 && cols > 0, name, ": matrix shape must be positive, got ", rows, " x ",
                cols);
  WeightMatrix w;
  w.name = name;
  w.rows = rows;
  w.cols = cols;
  w.format = &format;
  const int64_t block_rows = std::max<int64_t>(1, (1 << 20) / cols);
  std::vector<float> tmp(static_cast<size_t>(std::min(block_rows, rows) * cols));
  if (!format.packed_row_bytes) {
    w.row_bytes = format.row_bytes(cols);
    w.storage = AlignedBuffer(w.bytes());
    for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
      const int64_t n = std::min(block_rows, rows - r0);
      source(r0, n, tmp.data());
      for (int64_t r = 0; r < n; ++r)
        format.pack_row(tmp.data() + r * cols, cols, w.storage.data() + (r0 + r) * w.row_bytes);
    }
    return w;
  }
  // Variable-size rows: pack into a growing buffer, then lay out table + rows in one allocation.
  constexpr size_t kAlign = 16;
  const size_t table = (static_cast<size_t>(rows) + 1) * sizeof(uint64_t);
  std::vector<uint64_t> offsets(static_cast<size_t>(rows) + 1);
  std::vector<uint8_t> packed;
  size_t at = (table + kAlign - 1) / kAlign * kAlign;
  for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
    const int64_t n = std::min(block_rows, rows - r0);
    source(r0, n, tmp.data());
    for (int64_t r = 0; r < n; ++r) {
      const float* src = tmp.data() + r * cols;
      const size_t nb = format.packed_row_bytes(src, cols);
      offsets[r0 + r] = at;
      const size_t begin = at - (table + kAlign - 1) / kAlign * kAlign;
      packed.resize(begin + (nb + kAlign - 1) / kAlign * kAlign);
      format.pack_row(src, cols, packed.data() + begin);
      at += (nb + kAlign - 1) / kAlign * kAlign;
    }
  }
  offsets[rows] = at;
  w.row_bytes = 0;
  w.storage = AlignedBuffer(at);
  std::copy(offsets.begin(), offsets.end(), w.storage.as<uint64_t>());
  std::copy(packed.begin(), packed.end(), w.storage.data() + (table + kAlign - 1) / kAlign * kAlign);
  return w;
}

WeightMatrix pack_matrix(const std::string& name, const float* src, int64_t rows, int64_t cols,
                         const FormatRow& format) {
  return pack_matrix(name, rows, cols, format, [&](int64_t r0, int64_t n, float* dst) {
    std::copy(src + r0 * cols, src + (r0 + n) * cols, dst);
  });
}

void unpack_matrix(const WeightMatrix& w, float* dst) {
  for (int64_t r = 0; r < w.rows; ++r) w.format->unpack_row(w.row(r), w.cols, dst + r * w.cols);
}

const uint8_t* WeightMatrix::repacked(Repack* r, size_t (*size)(int64_t, int64_t),
                                      void (*pack)(const uint8_t*, size_t, int64_t, int64_t, uint8_t*)) const {
  if (!pack || !r || variable_rows() || storage.size() == 0) return nullptr;
  if (const uint8_t* p = r->ready.load(std::memory_order_acquire); p && r->pack == pack) return p;
  const size_t n = size(rows, cols);
  if (n == 0) return nullptr;  // no whole block (fewer than 16 rows): nothing to make, no lock taken
  std::lock_guard<std::mutex> lock(r->mu);
  if (r->ready.load(std::memory_order_relaxed)) return r->pack == pack ? r->buf.data() : nullptr;
  r->buf = AlignedBuffer(n);
  pack(data(), row_bytes, rows, cols, r->buf.data());
  r->pack = pack;
  r->ready.store(r->buf.data(), std::memory_order_release);
  return r->buf.data();
}

const uint8_t* WeightMatrix::tiles_for(const FormatKernels& k) const {
  if (k.tiles_pack && k.tiles_pack == k.decode_pack) return decode_for(k);  // one layout for both
  return repacked(tiles_.get(), k.tiles_bytes, k.tiles_pack);
}

size_t WeightMatrix::tiles_bytes() const {
  return tiles_ && tiles_->ready.load(std::memory_order_acquire) ? tiles_->buf.size() : 0;
}

const uint8_t* WeightMatrix::decode_for(const FormatKernels& k) const {
  return repacked(decode_.get(), k.decode_bytes, k.decode_pack);
}

size_t WeightMatrix::decode_bytes() const {
  return decode_ && decode_->ready.load(std::memory_order_acquire) ? decode_->buf.size() : 0;
}

MatmulRunner::MatmulRunner(ThreadPool& pool, Isa isa) : pool_(pool), isa_(isa) {}

void MatmulRunner::reserve(int64_t m, int64_t k) {
  // Large enough for any activation type: int8 + per-row scale + sums, generously padded.
  size_t need = static_cast<size_t>(m) * (static_cast<size_t>(k) * 4 + 256);
  if (act_.size() < need) act_ = AlignedBuffer(need);
}

const void* MatmulRunner::convert(const WeightMatrix& w, const float* x, int64_t ldx, int64_t m,
                                  size_t* act_row_bytes) {
  const FormatRow& f = *w.format;
  const size_t rb = f.act_row_bytes_at(isa_, w.cols);
  if (rb == 0) {  // f32 activations, read in place
    *act_row_bytes = static_cast<size_t>(ldx) * sizeof(float);
    return x;
  }
  if (act_.size() < rb * m) reserve(m, w.cols);
  // Rows split over the pool from kParallelConvertRows on (below, a dispatch costs more than it saves).
  constexpr int64_t kParallelConvertRows = 16;
  auto rows = [&](int64_t i0, int64_t i1) {
    if (f.quantize_act_static && w.act_scale > 0.f) {
      for (int64_t i = i0; i < i1; ++i)
        f.quantize_act_static(x + i * ldx, w.cols, w.act_scale, act_.data() + i * rb);
    } else {
      const auto quantize = f.quantizer_at(isa_);
      for (int64_t i = i0; i < i1; ++i) quantize(x + i * ldx, w.cols, act_.data() + i * rb);
    }
  };
  if (m >= kParallelConvertRows && pool_.size() > 1) {
    pool_.run([&](int i, int n) {
      int64_t b, e;
      ThreadPool::split(m, i, n, &b, &e, 1);
      if (b < e) rows(b, e);
    });
  } else {
    rows(0, m);
  }
  *act_row_bytes = rb;
  return act_.data();
}

namespace {

// One matrix's call: the kernel matmul() takes for m tokens (the decode layout or the matvec for
// one, the tiles from kern.tiles_min_tokens, else the matmul), its weight copies made on the
// calling thread; run(i, n) computes thread i of n's share of the rows (16-row multiples), then
// the epilogue on them if there is one.
struct MatrixCall {
  const FormatKernels& kern;
  const WeightMatrix& w;
  const void* xa;
  size_t arb;
  int64_t m;
  float* y;
  int64_t ldy;
  const uint8_t* tiles = nullptr;
  const uint8_t* dec = nullptr;
  MatrixCall(const FormatKernels& k, const WeightMatrix& wm, const void* x, size_t xrb, int64_t tokens, float* out,
             int64_t ld)
      : kern(k), w(wm), xa(x), arb(xrb), m(tokens), y(out), ldy(ld) {
    if (m == 1 && kern.matvec_decode) dec = w.decode_for(kern);
    if (m > 1 && kern.matmul_tiles && m >= kern.tiles_min_tokens) tiles = w.tiles_for(kern);
  }
  void run(int i, int n, MatmulRunner::Epilogue epilogue = nullptr, void* ctx = nullptr) const {
    int64_t b, e;
    ThreadPool::split(w.rows, i, n, &b, &e, 16);
    if (b >= e) return;
    if (!epilogue) return rows(b, e);
    // With an epilogue, the rows in chunks whose outputs (m x chunk floats) fit in about a quarter
    // of a core's L2, each chunk's epilogue right after it: the epilogue then reads what is in
    // cache instead of the whole share from L3 or memory.
    constexpr int64_t kEpilogueBytes = 256 << 10;
    const int64_t chunk = std::max<int64_t>(64, (kEpilogueBytes / (4 * std::max<int64_t>(m, 1))) / 64 * 64);
    for (int64_t r = b; r < e; r += chunk) {
      const int64_t re = std::min(e, r + chunk);
      rows(r, re);
      epilogue(ctx, r, re);
    }
  }
  void rows(int64_t b, int64_t e) const {
    if (dec)
      kern.matvec_decode(dec, w.data(), w.row_bytes, w.cols, xa, y + b, b, e);
    else if (m == 1)
      kern.matvec(w.data(), w.row_bytes, w.cols, xa, y + b, b, e);
    else if (tiles)
      kern.matmul_tiles(tiles, w.data(), w.row_bytes, w.cols, xa, arb, m, y, ldy, b, e);
    else
      kern.matmul(w.data(), w.row_bytes, w.cols, xa, arb, m, y, ldy, b, e);
  }
};

}  // namespace

void MatmulRunner::matvec(const WeightMatrix& w, const float* x, float* y) {
  size_t arb = 0;
  const void* xa = convert(w, x, w.cols, 1, &arb);
  const MatrixCall call(w.format->kernels_at(isa_), w, xa, arb, 1, y, 0);
  pool_.run([&](int i, int n) { call.run(i, n); });
}

void MatmulRunner::matmul(const WeightMatrix& w, const float* x, int64_t ldx, int64_t m, float* y,
                          int64_t ldy) {
  matmul(w, x, ldx, m, y, ldy, nullptr, nullptr);
}

void MatmulRunner::matmul(const WeightMatrix& w, const float* x, int64_t ldx, int64_t m, float* y,
                          int64_t ldy, Epilogue epilogue, void* ctx) {
  if (m == 1 && !epilogue) {
    matvec(w, x, y);
    return;
  }
  size_t arb = 0;
  const void* xa = convert(w, x, ldx, m, &arb);
  const MatrixCall call(w.format->kernels_at(isa_), w, xa, arb, m, y, ldy);
  pool_.run([&](int i, int n) { call.run(i, n, epilogue, ctx); });
}

void MatmulRunner::matmul_same_input(std::initializer_list<Out> outs, const float* x, int64_t ldx, int64_t m) {
  if (outs.size() == 0) return;
  const WeightMatrix& w0 = *outs.begin()->w;
  constexpr size_t kMax = 4;
  bool shared = outs.size() <= kMax;
  for (const Out& o : outs)
    shared = shared && o.w->format == w0.format && o.w->cols == w0.cols && o.w->act_scale == w0.act_scale;
  if (!shared) {
    for (const Out& o : outs) matmul(*o.w, x, ldx, m, o.y, o.ldy);
    return;
  }
  size_t arb = 0;
  const void* xa = convert(w0, x, ldx, m, &arb);
  const FormatKernels& kern = w0.format->kernels_at(isa_);
  std::optional<MatrixCall> calls[kMax];
  size_t nc = 0;
  for (const Out& o : outs) calls[nc++].emplace(kern, *o.w, xa, arb, m, o.y, o.ldy);
  pool_.run([&](int i, int n) {
    for (size_t j = 0; j < nc; ++j) calls[j]->run(i, n);
  });
}

}  // namespace cibench
