// The packed weight formats, looping over format_table():
//   pack -> unpack error within a per-format bound; every kernel equals its generic twin at every
//   ISA this host supports (aligned, ragged and tiny shapes; matvec and matmul); the generic
//   kernels equal unpack + f32 math; sparse kernels equal the dense kernel on the pruned weights;
//   magnitude pruning; MatmulRunner at 1 and 2 threads with every format.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engines/core/cpu.h"
#include "tests/unit/test_support.h"
#include "engines/core/error.h"
#include "engines/core/format.h"
#include "engines/core/matrix.h"
#include "engines/core/thread_pool.h"
#include "engines/core/prune.h"
#include "engines/kernels/fmt_common.h"
#include "engines/models/ggml_quants.h"

namespace cibench {
namespace {

std::vector<float> gauss(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

bool is_sparse(const FormatRow& f) {
  const std::string n = f.name;
  return n.find("_sparse") != std::string::npos || n.find("_bs") != std::string::npos ||
         n.find("_24") != std::string::npos;
}

// Sparse rows get pruned weights (the 2:4 pack prunes by itself; the others store every
// non-zero, so unpruned inputs would be legal but pointless).
void prune_for(const FormatRow& f, std::vector<float>& w, int64_t rows, int64_t cols,
               double sparsity = 0.8) {
  if (is_sparse(f)) prune_magnitude(w.data(), rows, cols, sparsity, prune_pattern_for_format(f.name));
}

// Relative RMS error bound of pack -> unpack on N(0, 1) rows, per format:
//   f32, f32_sparse  exact.
//   bf16   8 significant bits, round to nearest: |e| <= 2^-8 |w| per weight, so RMS <= 2^-8;
//          bound 2^-8.
//   int8 family  symmetric per row, step = max|w| / 127; uniform rounding error has RMS
//          step / sqrt(12) = max|w| / 440; the largest of <= 1000 normals is ~3.3 sigma -> 0.75 %;
//          bound 1 %.
//   int4 sym  step = max|w| of the group / 8 -> RMS = max / 27.7; the group maximum is ~2.0
//          (G=32), 2.4 (64), 2.6 (128) sigma -> 7.5 / 8.5 / 9.5 %; bounds 9 / 10 / 11 %.
//   int4 asym  step = range / 15, range ~ 2 x max -> about the same; same bounds.
//   int4_gG_a8  the int4_gG weights, packed identically: same bounds (their activation error is
//          bounded separately, Formats.Int4A8ActivationErrorWithinBound).
// (f16 scales add < 0.1 %.)
double error_bound(const FormatRow& f) {
  const std::string n = f.name;
  if (n == "f32" || n == "f32_sparse") return 0.0;
  if (n == "bf16") return 1.0 / 256;
  if (n.rfind("int4_g32", 0) == 0) return 0.09;
  if (n.rfind("int4_g64", 0) == 0) return 0.10;
  if (n.rfind("int4_g128", 0) == 0) return 0.11;
  return 0.01;  // int8, w8a8, w8a7, int8_sparse, int8_bs, int8_24 (relative to the pruned weights)
}

TEST(Formats, TableHasEveryRowWithConsistentGeometry) {
  for (const char* name : {"f32", "bf16", "int8", "w8a8", "w8a7", "int4_g32", "int4_g64", "int4_g128",
                           "int4_g32_asym", "int4_g64_asym", "int4_g128_asym", "int4_g32_a8",
                           "int4_g64_a8", "int4_g128_a8", "int8_g32_a8", "f32_sparse",
                           "int8_sparse", "int8_bs", "int8_24"})
    EXPECT_EQ(std::string(format_by_name(name).name), name);
  for (const FormatRow& f : format_table()) {
    SCOPED_TRACE(f.name);
    EXPECT_TRUE(f.kernels[0].matvec && f.kernels[0].matmul) << "every row needs generic kernels";
    EXPECT_EQ(f.act == ActType::f32, f.quantize_act == nullptr);
    EXPECT_GT(f.bits_per_weight, 0);
    if (!f.packed_row_bytes) {
      // A whole number of blocks costs bytes_per_block each, plus at most an 8-byte row header
      // (w8a7: scale and the sum of the values).
      const int64_t k = f.block_size * 64;
      EXPECT_GE(f.row_bytes(k), 64 * f.bytes_per_block);
      EXPECT_LE(f.row_bytes(k), 64 * f.bytes_per_block + 8);
    }
  }
}

TEST(Formats, PackUnpackErrorWithinBound) {
  std::mt19937 rng(11);
  for (const FormatRow& f : format_table()) {
    SCOPED_TRACE(f.name);
    for (int64_t k : {1, 5, 31, 32, 33, 100, 172, 256, 1000}) {
      const int64_t rows = 16;
      auto w = gauss(rows * k, rng);
      prune_for(f, w, rows, k);
      double err = 0, ref = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const float* src = w.data() + r * k;
        std::vector<uint8_t> packed(f.row_bytes(k) + 64, 0xcd);
        if (f.packed_row_bytes) {
          ASSERT_LE(f.packed_row_bytes(src, k), f.row_bytes(k));
        }
        f.pack_row(src, k, packed.data());
        std::vector<float> back(k);
        f.unpack_row(packed.data(), k, back.data());
        for (int64_t i = 0; i < k; ++i) {
          err += (double(back[i]) - src[i]) * (double(back[i]) - src[i]);
          ref += double(src[i]) * src[i];
          if (src[i] == 0.f && is_sparse(f)) {
            ASSERT_EQ(back[i], 0.f) << "k=" << k << " i=" << i;
          }
        }
      }
      const double rel = ref > 0 ? std::sqrt(err / ref) : 0.0;
      EXPECT_LE(rel, error_bound(f)) << "k=" << k;
    }
  }
}

// int8_g32_a8 rows are ggml's Q8_0 rows (quantize_q8_0, held to ggml's rounding by GgmlBlocks):
// byte for byte when K is a multiple of 32, and a ragged last block is the block of the row
// padded with zeros. 34 bytes per 32 weights.
TEST(Formats, Int8G32A8RowsAreGgmlQ8_0Rows) {
  const FormatRow& f = format_by_name("int8_g32_a8");
  EXPECT_EQ(f.bits_per_weight, 8.5);
  EXPECT_EQ(f.act, ActType::int8_per_block);
  std::mt19937 rng(13);
  for (int64_t k : {1, 7, 31, 32, 45, 64, 100, 768}) {
    SCOPED_TRACE(k);
    std::vector<float> x = gauss(k, rng);
    x[static_cast<size_t>(k / 2)] *= 20.f;  // one block with a large amax
    const int64_t kp = (k + 31) / 32 * 32;
    ASSERT_EQ(f.row_bytes(k), static_cast<size_t>(kp / 32) * kQ8_0BlockBytes);
    std::vector<uint8_t> got(f.row_bytes(k), 0xcd), want(f.row_bytes(k), 0xab);
    f.pack_row(x.data(), k, got.data());
    std::vector<float> padded(x);
    padded.resize(static_cast<size_t>(kp), 0.f);
    quantize_q8_0(padded.data(), kp, want.data());
    EXPECT_EQ(got, want);
    std::vector<float> back(k), deq(static_cast<size_t>(kp));
    f.unpack_row(got.data(), k, back.data());
    dequantize_q8_0(want.data(), kp, deq.data());
    for (int64_t i = 0; i < k; ++i) ASSERT_EQ(back[i], deq[static_cast<size_t>(i)]) << i;
  }
}

TEST(Formats, Int4RaggedGroupsAndExactValues) {
  // Values that are exactly representable survive the round trip exactly, ragged tail included.
  for (const char* name : {"int4_g32", "int4_g64", "int4_g128"}) {
    const FormatRow& f = format_by_name(name);
    for (int64_t k : {172, 100, 33, 1}) {
      std::vector<float> x(k), y(k);
      for (int64_t i = 0; i < k; ++i) x[i] = 0.25f * static_cast<float>(static_cast<int>(i % 16) - 8);
      x[0] = -2.f;  // the largest magnitude of every group maps to code 0
      for (int64_t g = 0; g < k; g += f.block_size) x[g] = -2.f;
      std::vector<uint8_t> p(f.row_bytes(k));
      f.pack_row(x.data(), k, p.data());
      f.unpack_row(p.data(), k, y.data());
      for (int64_t i = 0; i < k; ++i) ASSERT_EQ(x[i], y[i]) << name << " k=" << k << " i=" << i;
    }
  }
}

// ---- kernels -----------------------------------------------------------------------------------

struct Packed {
  std::vector<uint8_t> bytes;  // fixed stride row_bytes(k)
  std::vector<float> unpacked;
  size_t row_bytes;
};

Packed pack_rows(const FormatRow& f, const std::vector<float>& w, int64_t rows, int64_t k) {
  Packed p;
  p.row_bytes = f.row_bytes(k);
  p.bytes.assign(p.row_bytes * rows + 64, 0);
  p.unpacked.resize(rows * k);
  for (int64_t r = 0; r < rows; ++r) {
    f.pack_row(w.data() + r * k, k, p.bytes.data() + r * p.row_bytes);
    f.unpack_row(p.bytes.data() + r * p.row_bytes, k, p.unpacked.data() + r * k);
  }
  return p;
}

// Activations in the format's type: f32 as is, or quantised rows (x_row_bytes each).
struct Acts {
  std::vector<uint8_t> bytes;
  size_t row_bytes;
  std::vector<float> dequantised;  // what the kernels effectively multiply with
};

// Activations as `variant` takes them (bf16 rows from its reference conversion).
Acts make_variant_acts(const ActVariant& variant, const std::vector<float>& x, int64_t m, int64_t k) {
  Acts a;
  a.row_bytes = variant.row_bytes(k);
  a.bytes.assign(a.row_bytes * m + 64, 0xcd);
  a.dequantised.resize(m * k);
  EXPECT_EQ(variant.type, ActType::bf16);
  for (int64_t i = 0; i < m; ++i) {
    uint8_t* dst = a.bytes.data() + i * a.row_bytes;
    variant.convert(x.data() + i * k, k, dst);
    for (int64_t c = 0; c < k; ++c) {
      uint16_t h;
      std::memcpy(&h, dst + 2 * c, 2);
      a.dequantised[i * k + c] = fmt::bf16_to_f32(h);
    }
    for (size_t c = 2 * k; c < a.row_bytes; ++c) EXPECT_EQ(dst[c], 0) << "padding";
  }
  return a;
}

Acts make_acts(const FormatRow& f, const std::vector<float>& x, int64_t m, int64_t k) {
  Acts a;
  if (f.act == ActType::f32) {
    a.row_bytes = k * sizeof(float);
    a.bytes.resize(a.row_bytes * m + 64);
    std::memcpy(a.bytes.data(), x.data(), a.row_bytes * m);
    a.dequantised = x;
    return a;
  }
  a.row_bytes = f.act_row_bytes(k);
  a.bytes.assign(a.row_bytes * m + 64, 0);
  a.dequantised.resize(m * k);
  for (int64_t i = 0; i < m; ++i) {
    uint8_t* dst = a.bytes.data() + i * a.row_bytes;
    f.quantize_act(x.data() + i * k, k, dst);
    if (f.act == ActType::int8_per_block) {
      // [f32 scale x nb][i32 sum x nb][pad to 32][int8 values], blocks of block_size
      const int64_t g = f.block_size, nb = (k + g - 1) / g, hdr = (8 * nb + 31) / 32 * 32;
      for (int64_t b = 0; b < nb; ++b) {
        float s;
        int32_t sum, want = 0;
        std::memcpy(&s, dst + 4 * b, 4);
        std::memcpy(&sum, dst + 4 * nb + 4 * b, 4);
        for (int64_t c = b * g; c < std::min(k, (b + 1) * g); ++c) {
          const int8_t q = static_cast<int8_t>(dst[hdr + c]);
          EXPECT_GE(q, -127);
          want += q;
          a.dequantised[i * k + c] = s * static_cast<float>(q);
        }
        EXPECT_EQ(sum, want) << "block sum of block " << b;
      }
      for (int64_t c = k; c < (k + 31) / 32 * 32; ++c) EXPECT_EQ(dst[hdr + c], 0) << "padding";
      continue;
    }
    float s;
    std::memcpy(&s, dst, 4);
    if (std::string(f.name) == "w8a7") {
      // [f32 scale][i32 zero point][pad to 32][uint8 values in 0..127]
      int32_t z;
      std::memcpy(&z, dst + 4, 4);
      EXPECT_GE(z, 0);
      EXPECT_LE(z, 127);
      for (int64_t c = 0; c < k; ++c) {
        EXPECT_LE(dst[32 + c], 127) << "7 bits";
        a.dequantised[i * k + c] = s * static_cast<float>(static_cast<int32_t>(dst[32 + c]) - z);
      }
      continue;
    }
    // int8 activation rows: [f32 scale][pad to 32][int8 values]
    for (int64_t c = 0; c < k; ++c)
      a.dequantised[i * k + c] = s * static_cast<float>(static_cast<int8_t>(dst[32 + c]));
  }
  return a;
}

// Tolerance for a dot product of length k computed in f32 in two different orders: each order is
// within gamma_{k+8} (about (k + 8) u; + 8 for the per-group scale products and the final partial
// sums) of the exact value relative to the magnitude sum, so the two are within twice that; we
// allow 4 u (k + 8) of it. Asymmetric int4 sums d*q*x and m*x separately, so the magnitude
// includes 2 max|w| sum|x|; 1e-6 absolute covers outputs whose magnitude sum is ~0 (k = 1 rows
// of a pruned format) where the final scale's rounding dominates.
float tol(const float* w, const float* x, int64_t k) {
  double s = 0, sx = 0, mw = 0;
  for (int64_t i = 0; i < k; ++i) {
    s += std::fabs(double(w[i]) * x[i]);
    sx += std::fabs(x[i]);
    mw = std::max(mw, std::fabs(double(w[i])));
  }
  return static_cast<float>(4 * 6e-8 * double(k + 8) * (s + 2 * mw * sx) + 1e-6);
}

// FormatKernels::matmul_tiles, the runner's prefill on weights repacked once (where `isa` has
// one): the repack, then the call, the weights and activations copied to buffers of their exact
// size (no slack a load past the rows could hide in). False when the level has none.
bool run_tiles(const FormatRow& f, Isa isa, const Packed& p, int64_t rows, int64_t k, const Acts& a, int64_t m,
               float* y, int64_t ldy, int64_t rb, int64_t re) {
  const FormatKernels& kern = f.kernels_at(isa);
  if (!kern.matmul_tiles) return false;
  std::vector<uint8_t> w(p.bytes.begin(), p.bytes.begin() + static_cast<int64_t>(p.row_bytes) * rows);
  std::vector<uint8_t> x(a.bytes.begin(), a.bytes.begin() + static_cast<int64_t>(a.row_bytes) * m);
  std::vector<uint8_t> tiles(kern.tiles_bytes(rows, k) + 1, 0xcd);
  kern.tiles_pack(w.data(), p.row_bytes, rows, k, tiles.data());
  EXPECT_EQ(tiles.back(), 0xcd) << "the repack wrote past tiles_bytes";
  tiles.pop_back();
  kern.matmul_tiles(tiles.data(), w.data(), p.row_bytes, k, x.data(), a.row_bytes, m, y, ldy, rb, re);
  return true;
}

// FormatKernels::matvec_decode, the runner's decode from the weights laid out once for it (where
// `isa` has one), on activation row `i`: the repack, then the call, on buffers of their exact
// size as run_tiles does. False when the level has none.
bool run_decode(const FormatRow& f, Isa isa, const Packed& p, int64_t rows, int64_t k, const Acts& a, int64_t i,
                float* y, int64_t rb, int64_t re) {
  const FormatKernels& kern = f.kernels_at(isa);
  if (!kern.matvec_decode) return false;
  std::vector<uint8_t> w(p.bytes.begin(), p.bytes.begin() + static_cast<int64_t>(p.row_bytes) * rows);
  std::vector<uint8_t> x(a.bytes.begin() + static_cast<int64_t>(a.row_bytes) * i,
                         a.bytes.begin() + static_cast<int64_t>(a.row_bytes) * (i + 1));
  std::vector<uint8_t> dec(kern.decode_bytes(rows, k) + 1, 0xcd);
  kern.decode_pack(w.data(), p.row_bytes, rows, k, dec.data());
  EXPECT_EQ(dec.back(), 0xcd) << "the repack wrote past decode_bytes";
  dec.pop_back();
  kern.matvec_decode(dec.data(), w.data(), p.row_bytes, k, x.data(), y, rb, re);
  return true;
}

// int32 accumulation; f32 sums (f32 or bf16 activations) agree up to their order.
bool exact_twins(const FormatRow& f, Isa isa) {
  return f.act_at(isa) != ActType::f32 && f.act_at(isa) != ActType::bf16;
}

class FormatTwin : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { CIBENCH_REQUIRE_ISA(GetParam()); }
};

void check_twins(const FormatRow& f, Isa isa, int64_t rows, int64_t k, std::mt19937& rng) {
  auto w = gauss(rows * k, rng);
  prune_for(f, w, rows, k);
  Packed p = pack_rows(f, w, rows, k);
  const FormatKernels& fast = f.kernels_at(isa);
  // Kernels that take activations of their own are compared with the generic kernels of the
  // same arithmetic on those activations.
  const ActVariant* variant = fast.act_variant;
  const FormatKernels& ref = variant ? variant->generic : f.kernels[0];
  const bool exact = exact_twins(f, isa);
  for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 17}) {  // tiles of 4 and 8 tokens and every remainder
    auto x = gauss(m * k, rng);
    Acts a = variant ? make_variant_acts(*variant, x, m, k) : make_acts(f, x, m, k);
    if (variant) {  // the level's own conversion, bit for bit
      std::vector<uint8_t> mine(a.row_bytes, 0xcd);
      for (int64_t i = 0; i < m; ++i) {
        f.quantizer_at(isa)(x.data() + i * k, k, mine.data());
        ASSERT_EQ(0, std::memcmp(mine.data(), a.bytes.data() + i * a.row_bytes, a.row_bytes))
            << "activation row " << i << " k=" << k;
      }
    }
    // matvec on the first activation row, over a sub-range of rows too
    for (int64_t rb : {int64_t{0}, rows / 2}) {
      std::vector<float> y0(rows, -1.f), y1(rows, -1.f);
      ref.matvec(p.bytes.data(), p.row_bytes, k, a.bytes.data(), y0.data(), rb, rows);
      fast.matvec(p.bytes.data(), p.row_bytes, k, a.bytes.data(), y1.data(), rb, rows);
      // bit for bit where the sums are int32 (a bound of 0), else within two orders of f32 sums;
      // outputs go to y[0, rows - rb) only (tiles may take rows that are far apart)
      auto same = [&](const std::vector<float>& y, const char* what) {
        for (int64_t r = rb; r < rows; ++r)
          ASSERT_NEAR(y0[r - rb], y[r - rb], exact ? 0.f : tol(&p.unpacked[r * k], a.dequantised.data(), k))
              << what << " k=" << k << " rows=" << rows << " r=" << r;
        for (int64_t r = rows - rb; r < rows; ++r) ASSERT_EQ(y[r], -1.f) << what << " wrote past its rows";
      };
      same(y1, "matvec");
      std::vector<float> y2(rows, -1.f);
      if (run_decode(f, isa, p, rows, k, a, 0, y2.data(), rb, rows)) same(y2, "matvec_decode");
    }
    const int64_t ldy = rows + 3;
    std::vector<float> y0(m * ldy, 7.f), y1(m * ldy, 7.f), y2(m * ldy, 7.f);
    ref.matmul(p.bytes.data(), p.row_bytes, k, a.bytes.data(), a.row_bytes, m, y0.data(), ldy, 0, rows);
    fast.matmul(p.bytes.data(), p.row_bytes, k, a.bytes.data(), a.row_bytes, m, y1.data(), ldy, 0, rows);
    const bool tiles = run_tiles(f, isa, p, rows, k, a, m, y2.data(), ldy, 0, rows);
    for (const std::vector<float>* y : {&y1, &y2}) {
      if (y == &y2 && !tiles) break;
      const char* what = y == &y1 ? "matmul" : "matmul_tiles";
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t r = 0; r < rows; ++r) {
          if (exact)
            ASSERT_EQ(y0[i * ldy + r], (*y)[i * ldy + r]) << what << " m=" << m << " k=" << k;
          else
            ASSERT_NEAR(y0[i * ldy + r], (*y)[i * ldy + r], tol(&p.unpacked[r * k], &a.dequantised[i * k], k))
                << what << " m=" << m << " k=" << k << " rows=" << rows << " i=" << i << " r=" << r;
        }
        for (int64_t r = rows; r < ldy; ++r) ASSERT_EQ((*y)[i * ldy + r], 7.f) << what << " wrote past the rows";
      }
    }
  }
}

TEST_P(FormatTwin, EveryKernelMatchesItsGenericTwin) {
  std::mt19937 rng(21);
  for (const FormatRow& f : format_table()) {
    SCOPED_TRACE(std::string(f.name) + " at " + isa_name(GetParam()) + " (runs " +
                 isa_name(f.kernel_isa_at(GetParam())) + ")");
    for (int64_t k = 1; k <= 7; ++k)
      for (int64_t rows = 1; rows <= 5; ++rows) check_twins(f, GetParam(), rows, k, rng);
    for (int64_t k : {33, 100, 172, 256, 600})
      for (int64_t rows : {3, 8, 19}) check_twins(f, GetParam(), rows, k, rng);
  }
}

// The int8-activation matmuls of many tokens (prefill) against the generic twin, bit for bit, on
// the edges of their tiling: tokens around the register tile (12) and the token block (240), rows
// around the 16-row vectors and 32-row panels, K around the 64-byte steps and the 1024-column
// chunks, and row ranges that start inside a panel (as a thread's share may).
void check_matmul_range(const FormatRow& f, Isa isa, const Packed& p, const Acts& a, int64_t rows, int64_t k,
                        int64_t m, int64_t rb, int64_t re) {
  const int64_t ldy = rows + 5;
  std::vector<float> y0(m * ldy, 7.f), y1(m * ldy, 7.f), y2(m * ldy, 7.f);
  f.kernels[0].matmul(p.bytes.data(), p.row_bytes, k, a.bytes.data(), a.row_bytes, m, y0.data(), ldy, rb, re);
  f.kernels_at(isa).matmul(p.bytes.data(), p.row_bytes, k, a.bytes.data(), a.row_bytes, m, y1.data(), ldy, rb, re);
  const bool tiles = run_tiles(f, isa, p, rows, k, a, m, y2.data(), ldy, rb, re);
  for (const std::vector<float>* y : {&y1, &y2}) {
    if (y == &y2 && !tiles) break;
    const char* what = y == &y1 ? "matmul" : "matmul_tiles";
    for (int64_t i = 0; i < m; ++i)
      for (int64_t r = 0; r < ldy; ++r) {
        if (r >= rb && r < re) {
          ASSERT_EQ(y0[i * ldy + r], (*y)[i * ldy + r]) << what << " m=" << m << " k=" << k << " rows=" << rows
                                                        << " range " << rb << ".." << re << " i=" << i << " r=" << r;
        } else {
          ASSERT_EQ((*y)[i * ldy + r], 7.f) << what << " wrote outside rows " << rb << ".." << re << " m=" << m
                                            << " k=" << k << " i=" << i << " r=" << r;
        }
      }
  }
}

TEST_P(FormatTwin, PrefillTilingEdgesMatchTheGenericTwin) {
  std::mt19937 rng(23);
  for (const char* name : {"w8a8", "w8a7", "int4_g32_a8", "int4_g64_a8", "int4_g128_a8", "int8_g32_a8"}) {
    const FormatRow& f = format_by_name(name);
    SCOPED_TRACE(std::string(name) + " at " + isa_name(GetParam()));
    struct Shape {
      int64_t rows, k;
      std::vector<int64_t> ms;
    };
    const Shape shapes[] = {
        // tokens: every remainder modulo the tiles of 12 (w8a8, w8a7), 6 (int4_gG_a8; at the
        // avx512 level 4 for G = 64 and 128, at avx2 3) from the GEMM thresholds (6 to 24 tokens)
        // on, and a few tokens below them
        {33, 1, {16, 25, 30}},                  // one column
        {17, 31, {24, 27, 32}},                 // K below one 32-column pad
        {31, 64, {8, 26, 35}},                  // one 64-byte step
        {48, 100, {12, 29, 34, 241}},           // ragged step; 241 = a block of 240 + 1
        {65, 1056, {28, 31}},                   // one chunk of 1024 + a ragged 32
        {20, 2100, {33}},                       // three chunks
        {40, 4100, {250}},                      // a ragged step; two token chunks of the AMX tiles
    };
    for (const Shape& sh : shapes) {
      auto w = gauss(sh.rows * sh.k, rng);
      Packed p = pack_rows(f, w, sh.rows, sh.k);
      for (int64_t m : sh.ms) {
        auto x = gauss(m * sh.k, rng);
        Acts a = make_acts(f, x, m, sh.k);
        check_matmul_range(f, GetParam(), p, a, sh.rows, sh.k, m, 0, sh.rows);
        check_matmul_range(f, GetParam(), p, a, sh.rows, sh.k, m, 16 < sh.rows ? 16 : 0, sh.rows);  // a thread's share
        check_matmul_range(f, GetParam(), p, a, sh.rows, sh.k, m, sh.rows / 3, sh.rows - sh.rows / 4);
      }
    }
  }
}

// The prefill of the rows with f32 activations (bf16 below avx512_vnni, int8, int4 gG, symmetric
// and asymmetric) at AVX-512 decodes a panel of rows to f32 and runs the f32 GEMM with the tokens
// along the lanes once a call has a vector of tokens and two register tiles of rows (16 tokens,
// 24 rows), else the dot-product form (as AVX2 always); so does bf16 at avx512_vnni on Intel CPUs
// with its bf16 activations widened to f32 in chunks of tokens (~2 MB). Both sides of those
// thresholds, ragged tiles and token blocks, two panels of rows (~256 KB of f32 each), two K
// chunks (2048 columns: a ragged int4 group in the second), three token chunks, and row ranges
// that start inside a tile, all within two orders of f32 sums of the generic twin and writing
// nothing outside.
TEST_P(FormatTwin, DensePrefillTilingEdgesMatchTheGenericTwin) {
  std::mt19937 rng(29);
  int checked = 0;
  for (const char* name : {"bf16", "int8", "int4_g32", "int4_g64_asym", "int4_g128", "int4_g32_asym"}) {
    const FormatRow& f = format_by_name(name);
    // bf16 at avx512_vnni and amx: its bf16 activation rows against the generic kernels on them
    // (on Intel CPUs avx512_vnni widens both sides to f32 for this GEMM: formats.cpp)
    const ActVariant* variant = f.kernels_at(GetParam()).act_variant;
    const FormatKernels& ref = variant ? variant->generic : f.kernels[0];
    SCOPED_TRACE(std::string(name) + " at " + isa_name(GetParam()));
    struct Shape {
      int64_t rows, k;
      std::vector<int64_t> ms;
    };
    const Shape shapes[] = {
        {24, 64, {7, 8, 15, 16, 17, 31, 32, 33}},  // two AVX-512 tiles of rows exactly
        {23, 96, {16, 40}},                        // one row short of them
        {50, 600, {16, 41}},                       // ragged row tiles
        {130, 600, {20}},                          // two panels (108 rows at K = 600)
        {37, 2100, {18}},                          // two K chunks, a ragged group in the second
        {30, 7, {16, 9}},                          // K below one sub-block
        {26, 20000, {70}},                         // bf16 at avx512_vnni (Intel): 32-token chunks
    };
    for (const Shape& sh : shapes) {
      auto w = gauss(sh.rows * sh.k, rng);
      Packed p = pack_rows(f, w, sh.rows, sh.k);
      for (int64_t m : sh.ms) {
        auto x = gauss(m * sh.k, rng);
        Acts a = variant ? make_variant_acts(*variant, x, m, sh.k) : make_acts(f, x, m, sh.k);
        const int64_t ldy = sh.rows + 5;
        for (auto [rb, re] : {std::pair<int64_t, int64_t>{0, sh.rows}, {1, sh.rows}, {sh.rows / 3, sh.rows - sh.rows / 4}}) {
          std::vector<float> y0(m * ldy, 7.f), y1(m * ldy, 7.f);
          ref.matmul(p.bytes.data(), p.row_bytes, sh.k, a.bytes.data(), a.row_bytes, m, y0.data(), ldy, rb, re);
          f.kernels_at(GetParam()).matmul(p.bytes.data(), p.row_bytes, sh.k, a.bytes.data(), a.row_bytes, m, y1.data(),
                                          ldy, rb, re);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t r = 0; r < ldy; ++r) {
              if (r >= rb && r < re)
                ASSERT_NEAR(y0[i * ldy + r], y1[i * ldy + r], tol(&p.unpacked[r * sh.k], &a.dequantised[i * sh.k], sh.k))
                    << "m=" << m << " k=" << sh.k << " rows=" << sh.rows << " range " << rb << ".." << re << " i=" << i
                    << " r=" << r;
              else
                ASSERT_EQ(y1[i * ldy + r], 7.f) << "wrote outside rows " << rb << ".." << re << " m=" << m << " i=" << i
                                                << " r=" << r;
            }
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 6 * 17 * 3);
}

// The int4_gG_a8 and int8_g32_a8 matvecs work 16 rows at a time (AVX-512) or 8 (AVX2) with one
// group of G per step, and so does every decode layout (w8a8's over 32-column steps; the int4
// weight-only rows' over 8 columns per vector): every row count from 1 to 33 around those steps,
// K with full groups only, a ragged last group of one partial sub-block, and (G = 64, 128) a
// ragged group of more than one sub-block; ranges [row_begin, row_end) of every start and end that
// are not multiples of 16 (a thread's share of rows), against the generic twin (bit for bit where
// the sums are int32, else within the bound of two orders of f32 sums), nothing written past the
// range.
TEST_P(FormatTwin, GroupMatvecRowTailsRaggedGroupsAndRowRanges) {
  std::mt19937 rng(5);
  for (const char* name : {"int4_g32_a8", "int4_g64_a8", "int4_g128_a8", "int8_g32_a8", "w8a8", "int4_g32",
                           "int4_g64_asym", "int4_g128", "int4_g32_asym"}) {
    const FormatRow& f = format_by_name(name);
    const int g = f.block_size > 1 ? static_cast<int>(f.block_size) : 32;  // w8a8: 32-column padding
    const FormatKernels& fast = f.kernels_at(GetParam());
    const FormatKernels& ref = f.kernels[0];
    for (int64_t k : {int64_t{2} * g, int64_t{3} * g + 5, int64_t{g} + g / 2 + 9, int64_t{7}}) {
      for (int64_t rows = 1; rows <= 33; ++rows) {
        SCOPED_TRACE(std::string(name) + " at " + isa_name(GetParam()) + " k=" +
                     std::to_string(k) + " rows=" + std::to_string(rows));
        Packed p = pack_rows(f, gauss(rows * k, rng), rows, k);
        Acts a = make_acts(f, gauss(k, rng), 1, k);
        std::vector<std::pair<int64_t, int64_t>> ranges = {{0, rows}};
        if (rows > 1) ranges.push_back({1, rows});
        if (rows > 2) ranges.push_back({rows / 2, rows});        // second thread of two
        if (rows > 3) ranges.push_back({0, rows / 2 + 1});       // first thread of two
        if (rows > 20) ranges.push_back({3, rows - 2});
        if (rows > 18) ranges.push_back({17, 18});
        for (const auto& [rb, re] : ranges) {
          std::vector<float> y0(rows + 1, -1.f), y1(rows + 1, -1.f);
          ref.matvec(p.bytes.data(), p.row_bytes, k, a.bytes.data(), y0.data(), rb, re);
          fast.matvec(p.bytes.data(), p.row_bytes, k, a.bytes.data(), y1.data(), rb, re);
          const bool exact = exact_twins(f, GetParam());
          auto bound = [&](int64_t r) { return exact ? 0.f : tol(&p.unpacked[r * k], a.dequantised.data(), k); };
          for (int64_t r = rb; r < re; ++r)
            ASSERT_NEAR(y0[r - rb], y1[r - rb], bound(r)) << "rows [" << rb << ", " << re << ") r=" << r;
          for (int64_t i = re - rb; i <= rows; ++i) ASSERT_EQ(y1[i], -1.f) << "wrote past its rows, i=" << i;
          std::vector<float> y2(rows + 1, -1.f);
          if (run_decode(f, GetParam(), p, rows, k, a, 0, y2.data(), rb, re)) {
            for (int64_t r = rb; r < re; ++r)
              ASSERT_NEAR(y0[r - rb], y2[r - rb], bound(r)) << "matvec_decode rows [" << rb << ", " << re << ") r=" << r;
            for (int64_t i = re - rb; i <= rows; ++i) ASSERT_EQ(y2[i], -1.f) << "matvec_decode wrote past its rows";
          }
        }
      }
    }
  }
}

// The largest magnitudes: every weight and activation at +-127 (w8a8 / w8a7 int32 sums near
// 127 * 127 * K, the w8a8 bias and the w8a7 zero point at their extremes), bit for bit.
TEST_P(FormatTwin, PrefillExtremeValuesMatchTheGenericTwin) {
  std::mt19937 rng(29);
  std::bernoulli_distribution coin(0.5);
  for (const char* name : {"w8a8", "w8a7", "int4_g32_a8", "int4_g128_a8", "int8_g32_a8"}) {
    const FormatRow& f = format_by_name(name);
    SCOPED_TRACE(std::string(name) + " at " + isa_name(GetParam()));
    const int64_t rows = 37, k = 2080, m = 14;
    std::vector<float> w(rows * k), x(m * k);
    for (int64_t r = 0; r < rows; ++r)  // rows of one sign, rows of mixed signs
      for (int64_t c = 0; c < k; ++c) w[r * k + c] = r % 3 == 0 ? 1.f : (r % 3 == 1 ? -1.f : (coin(rng) ? 1.f : -1.f));
    for (int64_t i = 0; i < m; ++i)  // all positive, all negative, mixed
      for (int64_t c = 0; c < k; ++c) x[i * k + c] = i % 3 == 0 ? 2.f : (i % 3 == 1 ? -2.f : (coin(rng) ? 2.f : -2.f));
    Packed p = pack_rows(f, w, rows, k);
    Acts a = make_acts(f, x, m, k);
    check_matmul_range(f, GetParam(), p, a, rows, k, m, 0, rows);
    for (int64_t i = 0; i < 3; ++i) {  // decode of each sign pattern
      std::vector<float> y0(rows), y1(rows);
      f.kernels[0].matvec(p.bytes.data(), p.row_bytes, k, a.bytes.data() + i * a.row_bytes, y0.data(), 0, rows);
      if (!run_decode(f, GetParam(), p, rows, k, a, i, y1.data(), 0, rows)) break;
      for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(y0[r], y1[r]) << "matvec_decode token " << i << " r=" << r;
    }
  }
}

// bf16 prefill at the shapes of a model: 48 tokens and more against 24 rows and more take the
// lane-transposed GEMM at avx512_vnni (tile edges in tokens and rows, K chunks of 2048, a row
// range that starts inside the matrix), 16 tokens and more the AMX tiles at amx (ragged last
// 64-byte steps of K, token chunks of 128 and of 64 for K = 5632, the rows past the last whole
// tile of 16 on the avx512_vnni kernels), against the generic twin of the same activations within
// the tolerance of another order of f32 sums; nothing written outside the range; and a token's
// outputs do not depend on the other tokens of the call, bit for bit (one chain per output).
TEST_P(FormatTwin, Bf16ManyTokens) {
  std::mt19937 rng(29);
  const FormatRow& f = format_by_name("bf16");
  const FormatKernels& fast = f.kernels_at(GetParam());
  const ActVariant* variant = fast.act_variant;
  const FormatKernels& ref = variant ? variant->generic : f.kernels[0];
  struct Shape {
    int64_t m, rows, k;
  };
  for (const Shape sh : {Shape{16, 24, 64}, Shape{17, 37, 2}, Shape{47, 100, 600}, Shape{49, 29, 100},
                         Shape{64, 50, 768}, Shape{101, 40, 64}, Shape{130, 61, 256}, Shape{50, 26, 4100},
                         Shape{65, 301, 96}, Shape{84, 37, 300}, Shape{128, 64, 768}, Shape{33, 96, 2048},
                         Shape{200, 48, 40}, Shape{70, 35, 5632}, Shape{16, 16, 33}}) {
    auto w = gauss(sh.rows * sh.k, rng);
    Packed p = pack_rows(f, w, sh.rows, sh.k);
    auto x = gauss(sh.m * sh.k, rng);
    Acts a = variant ? make_variant_acts(*variant, x, sh.m, sh.k) : make_acts(f, x, sh.m, sh.k);
    const int64_t ldy = sh.rows + 3;
    for (int64_t rb : {int64_t{0}, int64_t{2}}) {
      const int64_t re = sh.rows - rb;  // rows [rb, re)
      std::vector<float> y0(sh.m * ldy, 7.f), y1(sh.m * ldy, 7.f);
      ref.matmul(p.bytes.data(), p.row_bytes, sh.k, a.bytes.data(), a.row_bytes, sh.m, y0.data(), ldy, rb, re);
      fast.matmul(p.bytes.data(), p.row_bytes, sh.k, a.bytes.data(), a.row_bytes, sh.m, y1.data(), ldy, rb, re);
      for (int64_t i = 0; i < sh.m; ++i)
        for (int64_t r = 0; r < ldy; ++r) {
          if (r >= rb && r < re)
            ASSERT_NEAR(y0[i * ldy + r], y1[i * ldy + r], tol(&p.unpacked[r * sh.k], &a.dequantised[i * sh.k], sh.k))
                << "m=" << sh.m << " rows=" << sh.rows << " k=" << sh.k << " i=" << i << " r=" << r;
          else
            ASSERT_EQ(y1[i * ldy + r], 7.f) << "wrote outside rows [" << rb << ", " << re << "): i=" << i << " r=" << r;
        }
      std::vector<float> yt(sh.m * ldy, 7.f);
      if (run_tiles(f, GetParam(), p, sh.rows, sh.k, a, sh.m, yt.data(), ldy, rb, re)) {
        for (int64_t i = 0; i < sh.m; ++i)
          for (int64_t r = 0; r < ldy; ++r) {
            if (r >= rb && r < re)
              ASSERT_NEAR(y0[i * ldy + r], yt[i * ldy + r], tol(&p.unpacked[r * sh.k], &a.dequantised[i * sh.k], sh.k))
                  << "matmul_tiles m=" << sh.m << " rows=" << sh.rows << " k=" << sh.k << " i=" << i << " r=" << r;
            else
              ASSERT_EQ(yt[i * ldy + r], 7.f) << "matmul_tiles wrote outside rows [" << rb << ", " << re << ")";
          }
        // one chain per output: the tokens from the second on, alone, give the same bits
        Acts a1 = a;
        a1.bytes.erase(a1.bytes.begin(), a1.bytes.begin() + static_cast<int64_t>(a.row_bytes));
        std::vector<float> yt1((sh.m - 1) * ldy, 7.f);
        run_tiles(f, GetParam(), p, sh.rows, sh.k, a1, sh.m - 1, yt1.data(), ldy, rb, re);
        const int64_t first = (rb + 15) / 16 * 16, end = sh.m - 1 >= 16 ? first + (re - first) / 16 * 16 : first;
        for (int64_t i = 0; i + 1 < sh.m; ++i)
          for (int64_t r = first; r < end; ++r)
            ASSERT_EQ(yt1[i * ldy + r], yt[(i + 1) * ldy + r]) << "matmul_tiles m=" << sh.m << " k=" << sh.k << " i=" << i << " r=" << r;
      }
      const bool lanes = sh.m - 1 >= 48 && re - rb >= 24 && GetParam() == Isa::avx512_vnni;
      const bool tiles = sh.m - 1 >= 16 && re - rb >= 16 && GetParam() == Isa::amx;
      if (lanes || tiles) {  // the lane-transposed GEMM; the AMX tiles (whole tiles of 16 rows)
        std::vector<float> y2((sh.m - 1) * ldy, 7.f);
        fast.matmul(p.bytes.data(), p.row_bytes, sh.k, a.bytes.data() + a.row_bytes, a.row_bytes, sh.m - 1, y2.data(),
                    ldy, rb, re);
        const int64_t checked_end = tiles ? rb + (re - rb) / 16 * 16 : re;
        for (int64_t i = 0; i + 1 < sh.m; ++i)
          for (int64_t r = rb; r < checked_end; ++r)
            ASSERT_EQ(y2[i * ldy + r], y1[(i + 1) * ldy + r]) << "m=" << sh.m << " k=" << sh.k << " i=" << i << " r=" << r;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, FormatTwin, ::testing::ValuesIn(all_isas()), test::isa_param_name);

TEST(Formats, GenericKernelsEqualUnpackPlusF32Math) {
  std::mt19937 rng(31);
  for (const FormatRow& f : format_table()) {
    SCOPED_TRACE(f.name);
    for (int64_t k : {1, 7, 64, 172}) {
      const int64_t rows = 9, m = 3;
      auto w = gauss(rows * k, rng);
      prune_for(f, w, rows, k);
      Packed p = pack_rows(f, w, rows, k);
      auto x = gauss(m * k, rng);
      Acts a = make_acts(f, x, m, k);
      std::vector<float> y(m * rows);
      f.kernels[0].matmul(p.bytes.data(), p.row_bytes, k, a.bytes.data(), a.row_bytes, m, y.data(),
                          rows, 0, rows);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t r = 0; r < rows; ++r) {
          double s = 0;
          for (int64_t c = 0; c < k; ++c) s += double(p.unpacked[r * k + c]) * a.dequantised[i * k + c];
          ASSERT_NEAR(y[i * rows + r], s, tol(&p.unpacked[r * k], &a.dequantised[i * k], k))
              << "k=" << k << " i=" << i << " r=" << r;
        }
    }
  }
}

// The generic kernels of every activation variant (bf16 activations) against unpack + f32 math
// on the activations the variant makes: bf16's (baseline code, on every CPU), and any other a
// level of the table uses here.
TEST(Formats, VariantGenericKernelsEqualUnpackPlusF32Math) {
  std::mt19937 rng(32);
  std::vector<std::pair<const FormatRow*, const ActVariant*>> variants = {
      {&format_by_name("bf16"), &fmt::bf16_act_variant()}};
  for (const FormatRow& f : format_table())
    for (int l = 0; l < kIsaCount; ++l) {
      const ActVariant* v = f.kernels[l].act_variant;
      if (v && std::find(variants.begin(), variants.end(), std::make_pair(&f, v)) == variants.end())
        variants.push_back({&f, v});
    }
  for (const auto& [row, v] : variants) {
    const FormatRow& f = *row;
    SCOPED_TRACE(std::string(f.name) + " with " + act_type_name(v->type) + " activations");
    for (int64_t k : {1, 7, 64, 172}) {
      const int64_t rows = 9, m = 3;
      auto w = gauss(rows * k, rng);
      Packed p = pack_rows(f, w, rows, k);
      auto x = gauss(m * k, rng);
      Acts a = make_variant_acts(*v, x, m, k);
      std::vector<float> y(m * rows), yv(rows);
      v->generic.matmul(p.bytes.data(), p.row_bytes, k, a.bytes.data(), a.row_bytes, m, y.data(), rows, 0, rows);
      v->generic.matvec(p.bytes.data(), p.row_bytes, k, a.bytes.data(), yv.data(), 0, rows);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t r = 0; r < rows; ++r) {
          double s = 0;
          for (int64_t c = 0; c < k; ++c) s += double(p.unpacked[r * k + c]) * a.dequantised[i * k + c];
          ASSERT_NEAR(y[i * rows + r], s, tol(&p.unpacked[r * k], &a.dequantised[i * k], k))
              << "k=" << k << " i=" << i << " r=" << r;
          if (i == 0) {
            ASSERT_EQ(yv[r], y[r]) << "matvec and matmul of the generic twin";
          }
        }
    }
  }
  // bf16 at avx512_vnni takes bf16 activations, wherever the process may use that level
  EXPECT_EQ(format_by_name("bf16").kernels_at(Isa::avx512_vnni).act_variant,
            isa_supported(Isa::avx512_vnni) ? &fmt::bf16_act_variant() : nullptr);
}

// The conversion to bf16 activations, at the reference and at every level that has one of its
// own: round to nearest even (ties to even), NaN kept NaN, infinities and subnormals kept, padding
// zero; every value within half a bf16 step of its input (8 significant bits: 2^-8 relative).
TEST(Formats, Bf16ActivationsRoundToNearestEven) {
  const FormatRow& f = format_by_name("bf16");
  const float tie_down = 1.f + 0x1p-8f, tie_up = 1.f + 3 * 0x1p-8f;  // halfway cases
  std::vector<float> x = {0.f, -0.f, 1.f, tie_down, tie_up, -tie_down, 1.f + 0x1p-8f + 0x1p-20f,
                          3.4e38f, -3.4e38f, INFINITY, -INFINITY, NAN, 1e-40f, -3e-39f, 1.17549435e-38f,
                          65504.f, 0.1f, -2.5f};
  std::mt19937 rng(33);
  auto g = gauss(77, rng);
  x.insert(x.end(), g.begin(), g.end());  // k = 95: a ragged last block of 32
  const int64_t k = static_cast<int64_t>(x.size());
  const ActVariant& v = fmt::bf16_act_variant();  // the reference conversion, baseline code
  for (int l = 0; l < kIsaCount; ++l) {  // the one every level with bf16 activations takes
    if (f.kernels[l].act_variant) {
      EXPECT_EQ(f.kernels[l].act_variant, &v) << isa_name(static_cast<Isa>(l));
    }
  }
  ASSERT_EQ(v.row_bytes(k), 2u * 96);
  std::vector<uint8_t> ref(v.row_bytes(k), 0xcd);
  v.convert(x.data(), k, ref.data());
  auto at = [&](const std::vector<uint8_t>& b, int64_t i) {
    uint16_t h;
    std::memcpy(&h, b.data() + 2 * i, 2);
    return h;
  };
  EXPECT_EQ(at(ref, 3), 0x3f80) << "1 + 2^-8 is halfway: to the even 1";
  EXPECT_EQ(at(ref, 4), 0x3f82) << "1 + 3 2^-8 is halfway: to the even 1 + 2^-6";
  EXPECT_EQ(at(ref, 5), 0xbf80);
  EXPECT_EQ(at(ref, 6), 0x3f81) << "just above halfway rounds up";
  EXPECT_EQ(at(ref, 9), 0x7f80);
  EXPECT_EQ(at(ref, 10), 0xff80);
  EXPECT_TRUE(std::isnan(fmt::bf16_to_f32(at(ref, 11))));
  EXPECT_NE(at(ref, 12), 0) << "a subnormal input is rounded, not flushed";
  for (int64_t i = 0; i < k; ++i) {
    if (!std::isfinite(x[i]) || std::fabs(x[i]) > 3e38f) continue;
    const double b = fmt::bf16_to_f32(at(ref, i));
    EXPECT_LE(std::fabs(b - x[i]), std::max(std::fabs(double(x[i])) * 0x1p-8, 0x1p-134)) << "i=" << i;
  }
  for (size_t c = 2 * k; c < ref.size(); ++c) EXPECT_EQ(ref[c], 0) << "padding";
  for (Isa isa : supported_isas()) {
    if (f.act_at(isa) != ActType::bf16) continue;
    SCOPED_TRACE(isa_name(isa));
    std::vector<uint8_t> mine(ref.size(), 0xcd);
    f.quantizer_at(isa)(x.data(), k, mine.data());
    EXPECT_EQ(mine, ref);
  }
}

// bf16 with bf16 activations against bf16 with f32 activations (the generic kernels), i.e. the
// error the activation rounding adds: each activation moves by at most 2^-8 of itself (half a
// step of 8 significant bits), so per output |y_bf16 - y_f32| <= 2^-8 sum |w x| (+ the two
// orders' f32 rounding, tol each).
TEST(Formats, Bf16ActivationErrorWithinBound) {
  const FormatRow& f = format_by_name("bf16");
  std::mt19937 rng(34);
  for (Isa isa : supported_isas()) {
    const FormatKernels& kern = f.kernels_at(isa);
    if (!kern.act_variant) continue;
    SCOPED_TRACE(isa_name(isa));
    for (int64_t k : {172, 1000}) {
      const int64_t rows = 24, m = 5;
      auto w = gauss(rows * k, rng);
      Packed p = pack_rows(f, w, rows, k);
      auto x = gauss(m * k, rng);
      Acts a = make_variant_acts(*kern.act_variant, x, m, k);
      Acts af = make_acts(f, x, m, k);
      std::vector<float> yb(m * rows), yf(m * rows);
      kern.matmul(p.bytes.data(), p.row_bytes, k, a.bytes.data(), a.row_bytes, m, yb.data(), rows, 0, rows);
      f.kernels[0].matmul(p.bytes.data(), p.row_bytes, k, af.bytes.data(), af.row_bytes, m, yf.data(), rows, 0, rows);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t r = 0; r < rows; ++r) {
          double s = 0;
          for (int64_t c = 0; c < k; ++c) s += std::fabs(double(p.unpacked[r * k + c]) * x[i * k + c]);
          const double bound = 0x1p-8 * s + 2 * tol(&p.unpacked[r * k], &x[i * k], k);
          ASSERT_LE(std::fabs(double(yb[i * rows + r]) - yf[i * rows + r]), bound) << "k=" << k << " i=" << i << " r=" << r;
        }
    }
  }
}

// int4_gG_a8 against int4_gG (the same packed weights, f32 activations), i.e. the error the
// per-block int8 activation quantisation adds. Per block b of G values with scale
// s_b = max|x_b| / 127, each activation moves by at most s_b / 2, so per output
//   |y_a8 - y_f32| <= sum_b (s_b / 2) sum_{i in b} |w_i|            (hard bound, + f32 rounding)
// and statistically (uniform rounding, RMS s_b / sqrt(12) = max|x_b| / 440, the block max of
// N(0, 1) being ~2.0 (G=32) to ~2.6 (G=128) sigma) the relative RMS output error is ~0.5-0.6 %;
// bound 1 %.
TEST(Formats, Int4A8ActivationErrorWithinBound) {
  std::mt19937 rng(71);
  for (int g : {32, 64, 128}) {
    const FormatRow& fa = format_by_name("int4_g" + std::to_string(g) + "_a8");
    const FormatRow& ff = format_by_name("int4_g" + std::to_string(g));
    ASSERT_EQ(fa.act, ActType::int8_per_block);
    ASSERT_EQ(fa.block_size, g);
    for (int64_t k : {172, 1000}) {
      const int64_t rows = 24, m = 5;
      SCOPED_TRACE(std::string(fa.name) + " k=" + std::to_string(k));
      auto w = gauss(rows * k, rng);
      Packed p = pack_rows(fa, w, rows, k);
      Packed pf = pack_rows(ff, w, rows, k);
      ASSERT_EQ(p.bytes, pf.bytes) << "same weight layout as the f32-activation row";
      auto x = gauss(m * k, rng);
      Acts a = make_acts(fa, x, m, k);
      Acts af = make_acts(ff, x, m, k);
      for (Isa isa : supported_isas()) {
        std::vector<float> ya(m * rows), yf(m * rows);
        fa.kernels_at(isa).matmul(p.bytes.data(), p.row_bytes, k, a.bytes.data(), a.row_bytes, m,
                                  ya.data(), rows, 0, rows);
        ff.kernels_at(isa).matmul(pf.bytes.data(), pf.row_bytes, k, af.bytes.data(), af.row_bytes,
                                  m, yf.data(), rows, 0, rows);
        double err = 0, ref = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t r = 0; r < rows; ++r) {
            double bound = 0;
            for (int64_t b = 0; b < k; b += g) {
              double amax = 0, wsum = 0;
              for (int64_t c = b; c < std::min(k, b + g); ++c) {
                amax = std::max(amax, std::fabs(double(x[i * k + c])));
                wsum += std::fabs(double(p.unpacked[r * k + c]));
              }
              bound += amax / 127 / 2 * wsum;
            }
            const float t = tol(&p.unpacked[r * k], &x[i * k], k);
            const double d = double(ya[i * rows + r]) - yf[i * rows + r];
            ASSERT_LE(std::fabs(d), bound + 2 * t) << isa_name(isa) << " i=" << i << " r=" << r;
            err += d * d;
            ref += double(yf[i * rows + r]) * yf[i * rows + r];
          }
        EXPECT_LE(std::sqrt(err / ref), 0.01) << isa_name(isa);
      }
    }
  }
}

// ---- pruning and sparse formats ----------------------------------------------------------------

TEST(Prune, UnstructuredLeavesExactFractionAndKeepsLargest) {
  std::mt19937 rng(41);
  for (double s : {0.5, 0.7, 0.8, 0.9})
    for (int64_t cols : {100, 172, 256}) {
      const int64_t rows = 7;
      auto w = gauss(rows * cols, rng);
      auto orig = w;
      prune_magnitude(w.data(), rows, cols, s, "unstructured");
      const int64_t want = std::llround(s * cols);
      for (int64_t r = 0; r < rows; ++r) {
        int64_t zeros = 0;
        float max_pruned = 0, min_kept = 1e30f;
        for (int64_t c = 0; c < cols; ++c) {
          const float o = std::fabs(orig[r * cols + c]);
          if (w[r * cols + c] == 0.f) {
            ++zeros;
            max_pruned = std::max(max_pruned, o);
          } else {
            ASSERT_EQ(w[r * cols + c], orig[r * cols + c]);
            min_kept = std::min(min_kept, o);
          }
        }
        ASSERT_EQ(zeros, want) << "s=" << s << " cols=" << cols;
        ASSERT_LE(max_pruned, min_kept);
      }
    }
}

TEST(Prune, TwoFourAndBlockPatterns) {
  std::mt19937 rng(42);
  const int64_t rows = 5, cols = 172;  // 172 = 43 groups of 4, 10 blocks of 16 + a ragged 12
  auto w = gauss(rows * cols, rng);
  auto orig = w;
  prune_magnitude(w.data(), rows, cols, 0.5, "2:4");
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < cols; g += 4) {
      int nz = 0;
      float min_kept = 1e30f, max_pruned = 0;
      for (int64_t c = g; c < g + 4; ++c) {
        const float o = std::fabs(orig[r * cols + c]);
        if (w[r * cols + c] != 0.f) {
          ++nz;
          min_kept = std::min(min_kept, o);
        } else {
          max_pruned = std::max(max_pruned, o);
        }
      }
      ASSERT_EQ(nz, 2);
      ASSERT_LE(max_pruned, min_kept);
    }

  for (double s : {0.5, 0.8}) {
    w = orig;
    prune_magnitude(w.data(), rows, cols, s, "block");
    const int64_t nb = (cols + kPruneBlockCols - 1) / kPruneBlockCols;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t zero_blocks = 0;
      double max_pruned = 0, min_kept = 1e30;
      for (int64_t b = 0; b < nb; ++b) {
        int64_t z = 0, n = 0;
        double norm = 0;
        for (int64_t c = b * kPruneBlockCols; c < std::min(cols, (b + 1) * kPruneBlockCols); ++c, ++n) {
          z += w[r * cols + c] == 0.f;
          norm += double(orig[r * cols + c]) * orig[r * cols + c];
        }
        ASSERT_TRUE(z == 0 || z == n) << "a block is either whole or gone";
        if (z == n) {
          ++zero_blocks;
          max_pruned = std::max(max_pruned, norm);
        } else {
          min_kept = std::min(min_kept, norm);
        }
      }
      ASSERT_EQ(zero_blocks, std::llround(s * nb));
      ASSERT_LE(max_pruned, min_kept);
    }
  }
}

TEST(Prune, ValidatesAndMapsFormatsToPatterns) {
  std::vector<float> w(16, 1.f);
  EXPECT_THROW(prune_magnitude(w.data(), 1, 16, 1.0, "unstructured"), Error);
  EXPECT_THROW(prune_magnitude(w.data(), 1, 16, -0.1, "unstructured"), Error);
  EXPECT_THROW(prune_magnitude(w.data(), 1, 16, 0.5, "diagonal"), Error);
  prune_magnitude(w.data(), 1, 16, 0.0, "unstructured");
  EXPECT_EQ(std::count(w.begin(), w.end(), 0.f), 0);
  EXPECT_STREQ(prune_pattern_for_format("int8_24"), "2:4");
  EXPECT_STREQ(prune_pattern_for_format("int8_bs"), "block");
  EXPECT_STREQ(prune_pattern_for_format("int8_sparse"), "unstructured");
  EXPECT_STREQ(prune_pattern_for_format("f32_sparse"), "unstructured");
}

TEST(Sparse, KernelsEqualTheDenseKernelOnPrunedWeights) {
  std::mt19937 rng(51);
  struct Case {
    const char* sparse;
    const char* dense;
  };
  for (Case cs : {Case{"f32_sparse", "f32"}, Case{"int8_sparse", "int8"}, Case{"int8_bs", "int8"},
                  Case{"int8_24", "int8"}}) {
    const FormatRow& fs = format_by_name(cs.sparse);
    const FormatRow& fd = format_by_name(cs.dense);
    // cols 4200: the AVX2 unstructured matmul walks 2048-column chunks
    for (auto [s, cols] : {std::pair<double, int64_t>{0.5, 172}, {0.9, 172}, {0.5, 4200}, {0.9, 4200}}) {
      const int64_t rows = 37, m = 11;
      auto w = gauss(rows * cols, rng);
      prune_magnitude(w.data(), rows, cols, s, prune_pattern_for_format(cs.sparse));
      auto x = gauss(m * cols, rng);
      WeightMatrix ws = pack_matrix("s", w.data(), rows, cols, fs);
      WeightMatrix wd = pack_matrix("d", w.data(), rows, cols, fd);
      EXPECT_EQ(ws.variable_rows(), fs.packed_row_bytes != nullptr);
      std::vector<float> unpacked(rows * cols);
      unpack_matrix(ws, unpacked.data());
      for (Isa isa : supported_isas()) {
        SCOPED_TRACE(std::string(cs.sparse) + " at " + isa_name(isa));
        ThreadPool pool(1);
        MatmulRunner run(pool, isa);
        std::vector<float> ys(m * rows), yd(m * rows), vs(rows), vd(rows);
        run.matmul(ws, x.data(), cols, m, ys.data(), rows);
        run.matmul(wd, x.data(), cols, m, yd.data(), rows);
        run.matvec(ws, x.data(), vs.data());
        run.matvec(wd, x.data(), vd.data());
        for (int64_t i = 0; i < m; ++i)
          for (int64_t r = 0; r < rows; ++r) {
            const float t = tol(&unpacked[r * cols], &x[i * cols], cols);
            ASSERT_NEAR(ys[i * rows + r], yd[i * rows + r], t) << "s=" << s;
            if (i == 0) {
              ASSERT_NEAR(vs[r], vd[r], t) << "s=" << s;
            }
          }
      }
    }
  }
}

TEST(Sparse, CompressedRowsShrinkWithSparsity) {
  std::mt19937 rng(52);
  const int64_t rows = 64, cols = 512;
  auto w = gauss(rows * cols, rng);
  const size_t dense = pack_matrix("d", w.data(), rows, cols, format_by_name("int8")).bytes();
  prune_magnitude(w.data(), rows, cols, 0.9, "unstructured");
  WeightMatrix s = pack_matrix("s", w.data(), rows, cols, format_by_name("int8_sparse"));
  // 10 % of 512 = 52 non-zeros per row: at least 7 groups of 8 entries (u16 base + 8 u8 offsets +
  // 8 int8 values = 18 bytes) + the 8-byte header, 16-aligned, + the table.
  EXPECT_LT(s.bytes(), dense * 3 / 10 + static_cast<size_t>(rows + 1) * 8);
  EXPECT_GT(s.bytes(), static_cast<size_t>(rows) * (8 + 7 * 18));
  std::vector<float> back(rows * cols);
  unpack_matrix(s, back.data());
  for (int64_t i = 0; i < rows * cols; ++i) ASSERT_EQ(back[i] == 0.f, w[i] == 0.f);
}

// int8_sparse groups 8 entries under one u16 base column with u8 offsets: a group ends after 8
// non-zeros or before a non-zero 256 or more columns past its base. Rows with every gap class
// (255, 256, runs of thousands of zeros, a full row, no non-zero at all) at K = 65536, the u16
// limit: the packed size counts the groups, unpack restores the weights' zero pattern, and every
// ISA's matvec and matmul (the AVX2 matmul walks 2048-column chunks) equals the generic twin and
// the dense int8 kernel on the same weights.
TEST(Sparse, Int8SparseGroupsAnyGapAtTheLargestK) {
  const FormatRow& fs = format_by_name("int8_sparse");
  const FormatRow& fd = format_by_name("int8");
  const int64_t cols = 65536, rows = 7;
  std::mt19937 rng(53);
  std::uniform_real_distribution<float> mag(0.5f, 1.f);  // all quantise to non-zero int8
  std::vector<float> w(rows * cols, 0.f);
  auto set = [&](int64_t r, int64_t c) { w[r * cols + c] = (rng() & 1 ? 1.f : -1.f) * mag(rng); };
  std::vector<int64_t> groups(rows);
  // row 0: no non-zero
  groups[0] = 0;
  // row 1: 255 columns past the base (same group) and 256 (a new group), and the last column
  for (int64_t c : {0, 255, 256, 511, 767, 1022, 1023, 65535}) set(1, c);
  groups[1] = 5;  // {0, 255} {256, 511} {767, 1022} {1023} {65535}
  // row 2: one non-zero every 1000 columns (each its own group) from column 999
  for (int64_t c = 999; c < cols; c += 1000) set(2, c);
  groups[2] = 65;  // 999, 1999, ..., 64999
  // row 3: 20 adjacent non-zeros, a 300-column gap, 9 adjacent ones, then a gap to the end
  for (int64_t c = 100; c < 120; ++c) set(3, c);
  for (int64_t c = 420; c < 429; ++c) set(3, c);
  groups[3] = 3 + 2;  // 8 + 8 + 4, then 8 + 1
  // row 4: every column
  for (int64_t c = 0; c < cols; ++c) set(4, c);
  groups[4] = cols / 8;
  // rows 5, 6: random at 90 % and 99 % sparsity
  for (int64_t r = 5; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      if (rng() % 1000 < (r == 5 ? 100u : 10u)) set(r, c);
  groups[5] = groups[6] = -1;
  for (int64_t r = 0; r < rows; ++r) {
    SCOPED_TRACE("row " + std::to_string(r));
    const float* src = &w[r * cols];
    const size_t nb = fs.packed_row_bytes(src, cols);
    ASSERT_LE(nb, fs.row_bytes(cols));
    if (groups[r] >= 0) {
      EXPECT_EQ(nb, static_cast<size_t>(8 + 18 * groups[r]));
    }
    std::vector<uint8_t> packed(nb);
    fs.pack_row(src, cols, packed.data());
    std::vector<float> back(cols);
    fs.unpack_row(packed.data(), cols, back.data());
    for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(back[c] == 0.f, src[c] == 0.f) << "c=" << c;
  }
  const int64_t m = 9;
  auto x = gauss(m * cols, rng);
  WeightMatrix ws = pack_matrix("s", w.data(), rows, cols, fs);
  WeightMatrix wd = pack_matrix("d", w.data(), rows, cols, fd);
  std::vector<float> unpacked(rows * cols);
  unpack_matrix(ws, unpacked.data());
  // the generic twin over the same packed rows
  std::vector<float> yg(m * rows);
  {
    ThreadPool pool(1);
    MatmulRunner run(pool, Isa::generic);
    run.matmul(ws, x.data(), cols, m, yg.data(), rows);
  }
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_name(isa));
    ThreadPool pool(1);
    MatmulRunner run(pool, isa);
    for (int64_t mm : {int64_t{1}, int64_t{3}, m}) {  // matvec, the per-row matmul, the chunked one
      std::vector<float> ys(mm * rows), yd(mm * rows);
      if (mm == 1) {
        run.matvec(ws, x.data(), ys.data());
        run.matvec(wd, x.data(), yd.data());
      } else {
        run.matmul(ws, x.data(), cols, mm, ys.data(), rows);
        run.matmul(wd, x.data(), cols, mm, yd.data(), rows);
      }
      for (int64_t i = 0; i < mm; ++i)
        for (int64_t r = 0; r < rows; ++r) {
          const float t = tol(&unpacked[r * cols], &x[i * cols], cols);
          ASSERT_NEAR(ys[i * rows + r], yg[i * rows + r], t) << "m=" << mm << " i=" << i << " r=" << r;
          ASSERT_NEAR(ys[i * rows + r], yd[i * rows + r], t) << "m=" << mm << " i=" << i << " r=" << r;
          if (r == 0) {
            ASSERT_EQ(ys[i * rows + r], 0.f) << "a row without non-zeros";
          }
        }
    }
  }
}

// ---- activation quantisers per ISA -------------------------------------------------------------

// Every level's own activation quantiser writes the reference's bytes: random rows at ragged and
// aligned widths, one-sided rows (a zero point at 0 or 127 for w8a7), all zeros, tiny and huge
// ranges. The kernels are tested against their generic twins on reference activations, so this
// is what makes a whole MatmulRunner product equal across ISAs.
TEST(Formats, ActivationQuantisersMatchTheReferenceAtEveryIsa) {
  std::mt19937 rng(77);
  int checked = 0;
  for (const FormatRow& f : format_table()) {
    if (!f.quantize_act) continue;
    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(std::string(f.name) + " at " + isa_name(isa));
      const auto q = f.quantizer_at(isa);
      ASSERT_NE(q, nullptr);
      for (int64_t k : {1, 7, 8, 31, 32, 33, 100, 172, 768, 3072}) {
        for (int shape = 0; shape < 6; ++shape) {
          std::vector<float> x = gauss(k, rng);
          for (float& v : x) {
            if (shape == 1) v = std::fabs(v);              // all >= 0: z = 0
            if (shape == 2) v = -std::fabs(v);             // all <= 0: z = 127
            if (shape == 3) v = 0.f;                       // scale 0
            if (shape == 4) v *= 1e-20f;                   // tiny range
            if (shape == 5) v *= 3e4f;                     // huge range
          }
          const size_t n = f.act_row_bytes(k);
          std::vector<uint8_t> want(n, 0xAB), got(n, 0xCD);
          f.quantize_act(x.data(), k, want.data());
          q(x.data(), k, got.data());
          ASSERT_EQ(want, got) << "k=" << k << " shape=" << shape;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// w8a7 activations: each value within half a step of the input (asymmetric, 7 bits), zero exact.
TEST(Formats, W8a7ActivationsWithinHalfAStepAndZeroExact) {
  const FormatRow& f = format_by_name("w8a7");
  std::mt19937 rng(78);
  for (int64_t k : {5, 64, 172}) {
    std::vector<float> x = gauss(k, rng);
    for (int64_t i = 0; i < k; i += 3) x[i] = std::fabs(x[i]) * 4.f;  // skewed to the right
    x[0] = 0.f;
    Acts a = make_acts(f, x, 1, k);
    float s;
    std::memcpy(&s, a.bytes.data(), 4);
    ASSERT_GT(s, 0.f);
    EXPECT_EQ(a.dequantised[0], 0.f) << "zero must be exact (padding and ReLU zeros)";
    for (int64_t i = 0; i < k; ++i) EXPECT_LE(std::fabs(a.dequantised[i] - x[i]), s * 0.5f * 1.0001f) << i;
  }
}

// ---- MatmulRunner with every format ------------------------------------------------------------

TEST(Formats, MatmulRunnerEveryFormatAtOneAndTwoThreads) {
  std::mt19937 rng(61);
  const int64_t rows = 70, cols = 172;
  for (int64_t m : {6, 29})  // a few tokens; prefill (the int8-activation GEMMs)
  for (const FormatRow& f : format_table()) {
    SCOPED_TRACE(f.name);
    auto w = gauss(rows * cols, rng);
    prune_for(f, w, rows, cols);
    auto x = gauss(m * cols, rng);
    WeightMatrix wm = pack_matrix("w", w.data(), rows, cols, f);
    std::vector<float> unpacked(rows * cols);
    unpack_matrix(wm, unpacked.data());
    const Acts af = make_acts(f, x, m, cols);
    for (Isa isa : supported_isas())
      for (int threads : {1, 2}) {
        const ActVariant* variant = f.kernels_at(isa).act_variant;
        const Acts a = variant ? make_variant_acts(*variant, x, m, cols) : af;
        ThreadPool pool(threads);
        MatmulRunner run(pool, isa);
        run.reserve(m, cols);
        std::vector<float> y(m * rows), yv(rows);
        run.matmul(wm, x.data(), cols, m, y.data(), rows);
        run.matvec(wm, x.data(), yv.data());
        for (int64_t i = 0; i < m; ++i)
          for (int64_t r = 0; r < rows; ++r) {
            double s = 0;
            for (int64_t c = 0; c < cols; ++c)
              s += double(unpacked[r * cols + c]) * a.dequantised[i * cols + c];
            const float t = tol(&unpacked[r * cols], &a.dequantised[i * cols], cols);
            ASSERT_NEAR(y[i * rows + r], s, t) << isa_name(isa) << " threads=" << threads;
            if (i == 0) {
              ASSERT_NEAR(yv[r], s, t) << isa_name(isa) << " threads=" << threads;
            }
          }
      }
  }
}

// MatmulRunner::matmul_same_input (a layer's wq, wk, wv; w1 and w3: one conversion of X, one pass
// of the pool) writes each output bit for bit as one matmul() per matrix, for every format and
// level, one token (matvec, decode layouts), a few and many (the GEMMs, AMX tiles from 16), at
// one and two threads; matrices of different formats or static activation scales take one
// matmul() each, with the same results.
TEST(Formats, MatmulSameInputIsOneMatmulPerMatrixBitForBit) {
  std::mt19937 rng(71);
  const int64_t cols = 160;
  const int64_t shapes[3] = {72, 40, 40};  // rows of "wq", "wk", "wv"
  int groups = 0;
  for (const FormatRow& f : format_table()) {
    SCOPED_TRACE(f.name);
    std::vector<WeightMatrix> ws;
    for (int64_t rows : shapes) {
      auto w = gauss(rows * cols, rng);
      prune_for(f, w, rows, cols);
      ws.push_back(pack_matrix("w", w.data(), rows, cols, f));
    }
    if (f.quantize_act_static)
      for (WeightMatrix& w : ws) w.act_scale = 0.02f;
    const WeightMatrix other = [&] {
      auto w = gauss(40 * cols, rng);
      return pack_matrix("w", w.data(), 40, cols, format_by_name(std::string(f.name) == "f32" ? "w8a8" : "f32"));
    }();
    for (int64_t m : {1, 5, 33}) {
      auto x = gauss(m * cols, rng);
      for (Isa isa : supported_isas())
        for (int threads : {1, 2}) {
          SCOPED_TRACE(std::string(isa_name(isa)) + " threads=" + std::to_string(threads) + " m=" + std::to_string(m));
          ThreadPool pool(threads);
          MatmulRunner run(pool, isa);
          std::vector<std::vector<float>> one(3), grouped(3);
          for (int j = 0; j < 3; ++j) {
            one[j].assign(m * ws[j].rows, -1.f);
            grouped[j].assign(m * ws[j].rows, -2.f);
            run.matmul(ws[j], x.data(), cols, m, one[j].data(), ws[j].rows);
          }
          run.matmul_same_input({{&ws[0], grouped[0].data(), ws[0].rows},
                                 {&ws[1], grouped[1].data(), ws[1].rows},
                                 {&ws[2], grouped[2].data(), ws[2].rows}},
                                x.data(), cols, m);
          for (int j = 0; j < 3; ++j)
            ASSERT_EQ(0, std::memcmp(one[j].data(), grouped[j].data(), one[j].size() * sizeof(float))) << "matrix " << j;
          ++groups;
          // a group the runner cannot share: another format beside the first matrix
          std::vector<float> o1(m * other.rows, -1.f), g0(m * ws[0].rows, -2.f), g1(m * other.rows, -2.f);
          run.matmul(other, x.data(), cols, m, o1.data(), other.rows);
          run.matmul_same_input({{&ws[0], g0.data(), ws[0].rows}, {&other, g1.data(), other.rows}}, x.data(), cols, m);
          ASSERT_EQ(0, std::memcmp(one[0].data(), g0.data(), g0.size() * sizeof(float)));
          ASSERT_EQ(0, std::memcmp(o1.data(), g1.data(), g1.size() * sizeof(float)));
        }
    }
  }
  EXPECT_EQ(groups, static_cast<int>(format_table().size() * 3 * supported_isas().size() * 2));
}

// Prefill through MatmulRunner at 1, 2 and 3 threads (shares of 16 rows, the last one ragged)
// equals the generic kernel on one thread bit for bit.
TEST(Formats, PrefillThreadSplitsMatchOneGenericThread) {
  std::mt19937 rng(67);
  const int64_t rows = 83, cols = 300, m = 27;
  for (const char* name : {"w8a8", "w8a7", "int4_g32_a8", "int4_g64_a8", "int4_g128_a8", "int8_g32_a8"}) {
    const FormatRow& f = format_by_name(name);
    SCOPED_TRACE(name);
    auto w = gauss(rows * cols, rng);
    auto x = gauss(m * cols, rng);
    WeightMatrix wm = pack_matrix("w", w.data(), rows, cols, f);
    std::vector<float> y0(m * rows);
    {
      ThreadPool pool(1);
      MatmulRunner run(pool, Isa::generic);
      run.matmul(wm, x.data(), cols, m, y0.data(), rows);
    }
    for (Isa isa : supported_isas())
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        MatmulRunner run(pool, isa);
        std::vector<float> y(m * rows, -1.f);
        run.matmul(wm, x.data(), cols, m, y.data(), rows);
        for (int64_t j = 0; j < m * rows; ++j)
          ASSERT_EQ(y[j], y0[j]) << isa_name(isa) << " threads=" << threads << " i=" << j / rows << " r=" << j % rows;
      }
  }
}

// The generic runner's matrix-vector product on one thread: the reference the levels' decode
// kernels are held to.
std::vector<float> generic_matvec(const WeightMatrix& wm, const float* x) {
  std::vector<float> y(static_cast<size_t>(wm.rows));
  ThreadPool one(1);
  MatmulRunner gen(one, Isa::generic);
  gen.matvec(wm, x, y.data());
  return y;
}

// Four threads ask for a matrix's laid-out copy (the AMX tiles, the decode layout) at once, so
// TSan sees the race if there is one: every one gets the same copy.
template <class Ask>
void ask_from_four_threads(const uint8_t* (&got)[4], const Ask& ask) {
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) ts.emplace_back([&, i] { got[i] = ask(); });
  for (auto& t : ts) t.join();
  for (int i = 1; i < 4; ++i) EXPECT_EQ(got[i], got[0]) << "thread " << i;
}

// The int4 `_a8` rows' AMX prefill reads the decode layout (one copy of the weights, half a byte
// each, for decode and prefill), expanding each 32-row block to B tiles per call: no copy of its
// own, made by the first product of enough tokens, and bit for bit the generic twin (cols = 300:
// a ragged last group at G = 32 and at G = 128; 83 rows: a block of 16 rows alone and 3 rows
// past the blocks).
TEST(Formats, Int4A8PrefillTilesAreTheDecodeLayout_amx) {
  CIBENCH_REQUIRE_ISA(Isa::amx);
  std::mt19937 rng(71);
  const int64_t rows = 83, cols = 300, m = 40;
  for (const char* name : {"int4_g32_a8", "int4_g128_a8"}) {
    SCOPED_TRACE(name);
    const FormatRow& f = format_by_name(name);
    auto w = gauss(rows * cols, rng);
    auto x = gauss(m * cols, rng);
    WeightMatrix wm = pack_matrix("w", w.data(), rows, cols, f);
    EXPECT_EQ(wm.tiles_for(f.kernels_at(Isa::avx512_vnni)), nullptr);
    EXPECT_EQ(wm.repacked_bytes(), 0u);
    {  // a few tokens do not make it
      ThreadPool pool(1);
      MatmulRunner run(pool, Isa::amx);
      std::vector<float> y(8 * rows);
      run.matmul(wm, x.data(), cols, 8, y.data(), rows);
      EXPECT_EQ(wm.repacked_bytes(), 0u);
    }
    const FormatKernels& kern = f.kernels_at(Isa::amx);
    ASSERT_NE(kern.matmul_tiles, nullptr);
    const uint8_t* got[4] = {};
    ask_from_four_threads(got, [&] { return wm.tiles_for(kern); });
    ASSERT_NE(got[0], nullptr);
    EXPECT_EQ(wm.decode_for(kern), got[0]);  // the decode layout itself
    EXPECT_EQ(wm.tiles_bytes(), 0u);
    EXPECT_EQ(wm.repacked_bytes(), static_cast<size_t>(rows / 16 * 16) * wm.row_bytes);
    std::vector<float> y0(m * rows);
    {
      ThreadPool pool(1);
      MatmulRunner run(pool, Isa::generic);
      run.matmul(wm, x.data(), cols, m, y0.data(), rows);
    }
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      MatmulRunner run(pool, Isa::amx);
      std::vector<float> y(m * rows, -1.f);
      run.matmul(wm, x.data(), cols, m, y.data(), rows);
      for (int64_t j = 0; j < m * rows; ++j) ASSERT_EQ(y[j], y0[j]) << "threads=" << threads << " i=" << j / rows;
    }
    EXPECT_EQ(wm.tiles_for(kern), got[0]);  // still the one copy
    // fewer than 16 rows: no whole block, no layout (those rows run on the avx512_vnni kernels)
    WeightMatrix small = pack_matrix("small", w.data(), 15, cols, f);
    EXPECT_EQ(small.tiles_for(kern), nullptr);
    EXPECT_EQ(small.repacked_bytes(), 0u);
  }
}

}  // namespace
}  // namespace cibench

namespace cibench {
namespace {

// On a CPU that splits 512-bit operations (Zen 4) w8a8, w8a8_static and int8_g32_a8 decode with
// their AVX2 matvec at the AVX-512 levels and keep their AVX-512 matmuls; every other row, and every
// row elsewhere, keeps each level's own.
// Either way the twin suites check the kernel a level runs against the generic one.
// On Intel CPUs with AVX-512 (formats.cpp, intel_matvecs): int8_g32_a8 decodes with the AVX2
// matvec and int4_g32_a8 with the avx512_vnni matvec over 16 long row streams; w8a8 and the
// prefill kernels keep their own. Elsewhere int4_g32_a8 keeps the adjacent-row matvec.
TEST(Formats, IntelCpusDecodeInt8G32A8WithTheAvx2MatvecAndInt4G32A8OverRowStreams) {
  const CpuFeatures& cpu = cpu_features();
  const bool intel = cpu.vendor == "GenuineIntel" && cpu.avx512f;
  std::printf("[ cpu ] vendor %s, AVX-512: %s\n", cpu.vendor.c_str(), cpu.avx512f ? "yes" : "no");
  const FormatRow& q8 = format_by_name("int8_g32_a8");
  const FormatRow& i4 = format_by_name("int4_g32_a8");
  const FormatRow& w8 = format_by_name("w8a8");
  const auto lvl = [](Isa i) { return static_cast<int>(i); };
  if (!isa_supported(Isa::avx512)) {  // the table holds no kernels of a level the process may not use
    for (const FormatRow* r : {&q8, &i4, &w8})
      for (Isa level : {Isa::avx512, Isa::avx512_vnni, Isa::amx}) {
        EXPECT_EQ(r->kernels[lvl(level)].matvec, nullptr) << r->name << " at " << isa_name(level);
        EXPECT_EQ(r->kernels[lvl(level)].matmul, nullptr) << r->name << " at " << isa_name(level);
      }
    EXPECT_EQ(fmt::format_entries(Isa::avx512_vnni), nullptr);
    std::printf("[ cpu ] no avx512 here (%s): the empty levels above are the test\n",
                isa_unavailable_reason(Isa::avx512).c_str());
    return;
  }
  for (Isa level : {Isa::avx512, Isa::avx512_vnni}) {
    SCOPED_TRACE(isa_name(level));
    if (!isa_supported(level)) continue;
    EXPECT_EQ(q8.kernels[lvl(level)].matvec == q8.kernels[lvl(Isa::avx2)].matvec,
              intel || cpu.avx512_split_datapath());
    EXPECT_NE(q8.kernels[lvl(level)].matmul, q8.kernels[lvl(Isa::avx2)].matmul);
    if (!cpu.avx512_split_datapath()) {
      EXPECT_NE(w8.kernels[lvl(level)].matvec, w8.kernels[lvl(Isa::avx2)].matvec);
    }
  }
  const fmt::FormatEntries* vnni = fmt::format_entries(Isa::avx512_vnni);
  if (!vnni) {
    std::printf("[ cpu ] no avx512_vnni here (%s): the table check above is the test\n",
                isa_unavailable_reason(Isa::avx512_vnni).c_str());
    return;
  }
  const auto streams = vnni->int4g32a8_streams_matvec;
  ASSERT_NE(streams, nullptr);
  EXPECT_EQ(i4.kernels[lvl(Isa::avx512_vnni)].matvec == streams, intel);
  // the amx level (prefill on the tiles) decodes with avx512_vnni's matvec, whichever that is
  if (isa_supported(Isa::amx))
    for (const FormatRow* r : {&q8, &i4}) {
      EXPECT_NE(r->kernels[lvl(Isa::amx)].matmul_tiles, nullptr) << r->name;
      EXPECT_EQ(r->kernels[lvl(Isa::amx)].matvec, r->kernels[lvl(Isa::avx512_vnni)].matvec) << r->name;
    }
  // the streams matvec against the generic twin on a range of 16 x 3 rows (three streams steps)
  // and a ragged last group, bit for bit
  {
    std::mt19937 rng(41);
    const int64_t rows = 53, k = 200;
    Packed p = pack_rows(i4, gauss(rows * k, rng), rows, k);
    Acts a = make_acts(i4, gauss(k, rng), 1, k);
    std::vector<float> y0(rows), y1(rows);
    i4.kernels[0].matvec(p.bytes.data(), p.row_bytes, k, a.bytes.data(), y0.data(), 0, rows);
    streams(p.bytes.data(), p.row_bytes, k, a.bytes.data(), y1.data(), 0, rows);
    for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(y0[r], y1[r]) << "r=" << r;
  }
}

// bf16's avx512_vnni prefill on blocks of 32 tokens (2 x 12 register tiles), which AMD CPUs with
// full-width AVX-512 run (formats.cpp), takes the same chains as the default 64-token blocks (4 x 6):
// each output is one vdpbf16ps chain over the pairs of a K chunk in order, whatever the tile, so the
// two agree bit for bit (two K chunks, ragged token blocks, row ranges inside a tile, below and above
// the lane form's 48 tokens), wherever the host has avx512_vnni.
TEST(Formats, Bf16PrefillOn32TokenBlocksTakesTheChainsOf64AndRunsOnAmdFullWidthCpus) {
  const CpuFeatures& cpu = cpu_features();
  const FormatRow& f = format_by_name("bf16");
  const fmt::FormatEntries* vnni = fmt::format_entries(Isa::avx512_vnni);
  if (!vnni) {
    EXPECT_EQ(f.kernels[static_cast<int>(Isa::avx512_vnni)].matmul, nullptr);
    std::printf("[ cpu ] no avx512_vnni here (%s): its empty table entry is the test\n",
                isa_unavailable_reason(Isa::avx512_vnni).c_str());
    return;
  }
  const auto narrow = vnni->bf16_matmul_32_token_blocks;
  const auto wide = vnni->kernels(fmt::Spec{fmt::Kind::bf16}).matmul;
  ASSERT_NE(narrow, nullptr);
  ASSERT_NE(narrow, wide);
  const bool amd_full = cpu.vendor == "AuthenticAMD" && cpu.avx512_full_width();
  EXPECT_EQ(f.kernels[static_cast<int>(Isa::avx512_vnni)].matmul == narrow, amd_full);
  const ActVariant* variant = f.kernels_at(Isa::avx512_vnni).act_variant;
  ASSERT_NE(variant, nullptr);
  std::mt19937 rng(31);
  struct Shape {
    int64_t m, rows, k;
  };
  int64_t checked = 0;
  for (const Shape sh : {Shape{130, 61, 4100}, Shape{48, 37, 300}, Shape{97, 50, 768}, Shape{20, 30, 64}}) {
    auto w = gauss(sh.rows * sh.k, rng);
    Packed p = pack_rows(f, w, sh.rows, sh.k);
    Acts a = make_variant_acts(*variant, gauss(sh.m * sh.k, rng), sh.m, sh.k);
    const int64_t ldy = sh.rows + 1, rb = 3, re = sh.rows - 2;
    std::vector<float> y0(sh.m * ldy, 7.f), y1(sh.m * ldy, 7.f);
    wide(p.bytes.data(), p.row_bytes, sh.k, a.bytes.data(), a.row_bytes, sh.m, y0.data(), ldy, rb, re);
    narrow(p.bytes.data(), p.row_bytes, sh.k, a.bytes.data(), a.row_bytes, sh.m, y1.data(), ldy, rb, re);
    for (int64_t i = 0; i < sh.m * ldy; ++i) {
      ASSERT_EQ(y0[i], y1[i]) << "m=" << sh.m << " k=" << sh.k << " at " << i;
      checked += (i % ldy >= rb && i % ldy < re);
    }
  }
  EXPECT_EQ(checked, 130 * 56 + 48 * 32 + 97 * 45 + 20 * 25);
}

// The int4 weight-only decode at avx2 reads a copy of the token's activations scaled per column;
// rows wider than its stack buffer (6144 columns) take a per-thread one: such a row (a ragged last
// group too), on one and two threads, twice (the buffer reused), within another order of f32 sums
// of the generic runner.
TEST(Formats, Int4DecodeAtAvx2TakesRowsWiderThanItsStackCopy) {
  if (!isa_supported(Isa::avx2)) {
    std::printf("[ cpu ] no AVX2 on this host: nothing to run\n");
    return;
  }
  std::mt19937 rng(91);
  const int64_t rows = 35, cols = 6200;
  for (const char* name : {"int4_g32", "int4_g128_asym"}) {
    SCOPED_TRACE(name);
    const FormatRow& f = format_by_name(name);
    ASSERT_NE(f.kernels_at(Isa::avx2).matvec_decode, nullptr);
    auto w = gauss(rows * cols, rng);
    WeightMatrix wm = pack_matrix("w", w.data(), rows, cols, f);
    std::vector<float> u(rows * cols);
    unpack_matrix(wm, u.data());
    for (int pass = 0; pass < 2; ++pass) {
      auto x = gauss(cols, rng);
      const std::vector<float> y0 = generic_matvec(wm, x.data());
      for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        MatmulRunner run(pool, Isa::avx2);
        std::vector<float> y(rows, -1.f);
        run.matvec(wm, x.data(), y.data());
        for (int64_t r = 0; r < rows; ++r)
          ASSERT_NEAR(y[r], y0[r], tol(&u[r * cols], x.data(), cols)) << "pass " << pass << " threads " << threads << " r " << r;
      }
    }
    EXPECT_NE(wm.decode_bytes(), 0u);  // the layout's kernel ran
  }
}

// The decode layout (16-row blocks read as one stream, fmt_decode_512.inc): int8_g32_a8, w8a8,
// w8a8_static and int4_gG_a8 at avx512_vnni where AVX-512 runs full width (Intel, AMD Zen 5) and
// at amx, w8a7 at that avx512_vnni only, and the int4_gG_a8 rows at avx512 too (on AVX-512 BW),
// nowhere else; the int4
// weight-only rows at avx2 on every CPU (read at 256 bits), at avx512 where AVX-512 runs full
// width (its own kernels) or split (the AVX2 set). The AMX prefill
// of w8a8, int8_g32_a8 and the int4 `_a8` rows reads its tiles from it (no repack of its own),
// and so do w8a8's and w8a7's VNNI GEMMs. Where the host runs it: made by the first matvec (not by a matmul
// of a few tokens), once, shared by threads asking at once, its size as documented, and the
// runner's decode the generic runner's at one and two threads (bit for bit where the sums are
// int32; the rows past the last whole block and a ragged last group included).
TEST(Formats, DecodeLayoutIsMadeOnceAndShared) {
  const CpuFeatures& cpu = cpu_features();
  const bool full = cpu.avx512_full_width(), split = cpu.avx512_split_datapath();
  for (const FormatRow& r : format_table())
    for (int level = 0; level < kIsaCount; ++level) {
      const std::string n = r.name;
      const bool row = n == "int8_g32_a8" || n == "w8a8" || n == "w8a8_static" || n == "int4_g32_a8" ||
                       n == "int4_g64_a8" || n == "int4_g128_a8";
      // the amx level has it on every CPU (AMX CPUs are Intel's); avx512_vnni on full-width AVX-512
      // only; the int4 weight-only rows in their avx512 kernels (which avx512_vnni and amx fall back
      // to), on full-width AVX-512
      const bool int4f = r.act == ActType::f32 && n.rfind("int4_g", 0) == 0;
      const bool int4a8 = r.act == ActType::int8_per_block && n.rfind("int4_g", 0) == 0;
      const bool want = (row && ((full && level == static_cast<int>(Isa::avx512_vnni)) || level == static_cast<int>(Isa::amx))) ||
                        (n == "w8a7" && full && level == static_cast<int>(Isa::avx512_vnni)) ||
                        (int4a8 && full && level == static_cast<int>(Isa::avx512)) ||
                        (int4f && (level == static_cast<int>(Isa::avx2) ||
                                   ((full || split) && level == static_cast<int>(Isa::avx512)))) ||
                        ((int4a8 || n == "int8_g32_a8") && level == static_cast<int>(Isa::avx2)) ||
                        ((n == "int4_g32_a8" || n == "int8_g32_a8") && split &&
                         (level == static_cast<int>(Isa::avx512) || level == static_cast<int>(Isa::avx512_vnni)));
      const FormatKernels& k = r.kernels[level];
      const bool here = want && isa_supported(static_cast<Isa>(level));  // empty above what the process may use
      EXPECT_EQ(k.matvec_decode != nullptr, here) << r.name << " at " << isa_name(static_cast<Isa>(level));
      EXPECT_EQ(k.decode_pack != nullptr, here) << r.name;
      EXPECT_EQ(k.decode_bytes != nullptr, here) << r.name;
    }
  const Isa best = isa_supported(Isa::amx) ? Isa::amx : Isa::avx512_vnni;
  std::vector<std::pair<const char*, Isa>> runs;
  if (isa_supported(Isa::avx2))
    for (const char* name : {"int4_g32", "int4_g64_asym", "int4_g128", "int4_g32_a8", "int4_g128_a8", "int8_g32_a8"})
      runs.push_back({name, Isa::avx2});
  if (full && isa_supported(Isa::avx512))
    for (const char* name : {"int4_g32_a8", "int4_g64_a8"}) runs.push_back({name, Isa::avx512});
  if (full && isa_supported(best))
    for (const char* name : {"int8_g32_a8", "int4_g32_a8", "int4_g128_a8", "w8a8", "int4_g32", "int4_g64_asym"})
      runs.push_back({name, best});
  if (full && isa_supported(Isa::avx512_vnni)) runs.push_back({"w8a7", Isa::avx512_vnni});
  if (runs.empty()) {
    std::printf("[ cpu ] no decode layout on this host (vendor %s, family 0x%x): the table check above is the test\n",
                cpu.vendor.c_str(), cpu.family);
    return;
  }
  std::mt19937 rng(73);
  const int64_t rows = 83, cols = 300;  // 5 whole blocks + 3 rows; 10 groups, the last ragged
  for (const auto& [name, level] : runs) {
    SCOPED_TRACE(std::string(name) + " at " + isa_name(level));
    const FormatRow& f = format_by_name(name);
    const FormatKernels& kern = f.kernels_at(level);
    auto w = gauss(rows * cols, rng);
    auto x = gauss(2 * cols, rng);
    WeightMatrix wm = pack_matrix("w", w.data(), rows, cols, f);
    EXPECT_EQ(wm.decode_for(f.kernels_at(Isa::generic)), nullptr);
    {  // two tokens (batched decode) do not make it
      ThreadPool pool(1);
      MatmulRunner run(pool, level);
      std::vector<float> y(2 * rows);
      run.matmul(wm, x.data(), cols, 2, y.data(), rows);
      EXPECT_EQ(wm.decode_bytes(), 0u);
    }
    const uint8_t* got[4] = {};
    ask_from_four_threads(got, [&] { return wm.decode_for(kern); });
    ASSERT_NE(got[0], nullptr);
    EXPECT_EQ(wm.decode_bytes(), kern.decode_bytes(rows, cols));
    EXPECT_EQ(wm.decode_bytes(), rows / 16 * 16 * wm.row_bytes);  // the rows' bytes, rearranged
    const std::vector<float> y0 = generic_matvec(wm, x.data());
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      MatmulRunner run(pool, level);
      std::vector<float> y(rows, -1.f);
      run.matvec(wm, x.data(), y.data());
      if (f.act == ActType::f32) {  // f32 sums in another order
        std::vector<float> u(rows * cols);
        unpack_matrix(wm, u.data());
        for (int64_t r = 0; r < rows; ++r)
          ASSERT_NEAR(y[r], y0[r], tol(&u[r * cols], x.data(), cols)) << "threads=" << threads << " r=" << r;
      } else {
        for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(y[r], y0[r]) << "threads=" << threads << " r=" << r;
      }
    }
    EXPECT_EQ(wm.decode_for(kern), got[0]);  // still the one repack
    const bool w8 = std::string(name) == "w8a8" || std::string(name) == "w8a7";
    if ((f.act != ActType::f32 && level == Isa::amx) || w8) {  // the prefill tiles are the same copy
      EXPECT_EQ(wm.tiles_for(kern), got[0]);
      EXPECT_EQ(wm.tiles_bytes(), 0u);
    }
    if (w8) {  // a prefill (16 tokens and more; w8a7: 8) makes it too, as the first matvec does
      WeightMatrix fresh = pack_matrix("fresh", w.data(), rows, cols, f);
      ThreadPool pool(2);
      MatmulRunner run(pool, level);
      std::vector<float> y(20 * rows), yg(20 * rows);
      auto x20 = gauss(20 * cols, rng);
      run.matmul(fresh, x20.data(), cols, 20, y.data(), rows);
      EXPECT_EQ(fresh.decode_bytes(), kern.decode_bytes(rows, cols));
      ThreadPool one(1);
      MatmulRunner gen(one, Isa::generic);
      gen.matmul(fresh, x20.data(), cols, 20, yg.data(), rows);
      for (int64_t i = 0; i < 20 * rows; ++i) ASSERT_EQ(y[i], yg[i]) << name << " prefill from the layout, at " << i;
    }
    WeightMatrix small = pack_matrix("small", w.data(), 15, cols, f);  // no whole block
    EXPECT_EQ(small.decode_for(kern), nullptr);
    EXPECT_EQ(small.decode_bytes(), 0u);
  }
}

TEST(Formats, SplitDatapathCpusDecodeInt8ActivationsWithTheAvx2Matvec) {
  const bool split = cpu_features().avx512_split_datapath();
  std::printf("[ cpu ] family 0x%x model 0x%x, AVX-512 split datapath: %s\n", cpu_features().family,
              cpu_features().model, split ? "yes" : "no");
  if (!isa_supported(Isa::avx512)) {
    for (const FormatRow& r : format_table())
      for (Isa level : {Isa::avx512, Isa::avx512_vnni})
        EXPECT_EQ(r.kernels[static_cast<int>(level)].matvec, nullptr) << r.name << " at " << isa_name(level);
    std::printf("[ cpu ] no avx512 here (%s): its empty table entries are the test\n",
                isa_unavailable_reason(Isa::avx512).c_str());
    return;
  }
  int rows = 0, whole = 0, bw_gemms = 0;
  for (const FormatRow& r : format_table()) {
    const FormatKernels& avx2 = r.kernels[static_cast<int>(Isa::avx2)];
    for (Isa level : {Isa::avx512, Isa::avx512_vnni}) {
      const FormatKernels& k = r.kernels[static_cast<int>(level)];
      if (!k.matvec || !avx2.matvec || k.act_variant) continue;
      const std::string n = r.name;
      const bool preferred = n == "w8a8" || n == "w8a8_static" || n == "int8_g32_a8" || n == "int4_g32_a8";
      // the weight-only int8 and int4 group-wise rows (f32 activations) take all of AVX2's kernels
      const bool all = r.act == ActType::f32 && (n == "int8" || n.rfind("int4_g", 0) == 0);
      rows += preferred;
      whole += all;
      if (split && preferred) {
        EXPECT_EQ(k.matvec, avx2.matvec) << r.name << " at " << isa_name(level);
        EXPECT_EQ(k.matvec_decode, avx2.matvec_decode) << r.name << " at " << isa_name(level) << ": and its decode layout";
        EXPECT_NE(k.matmul, avx2.matmul) << r.name << " at " << isa_name(level) << ": prefill keeps its own kernel";
      } else if (split && all) {
        EXPECT_EQ(k.matvec, avx2.matvec) << r.name << " at " << isa_name(level);
        EXPECT_EQ(k.matmul, avx2.matmul) << r.name << " at " << isa_name(level);
      } else if (r.act == ActType::f32 || (n == "int4_g128_a8" && level == Isa::avx512_vnni)) {
        EXPECT_NE(k.matvec, avx2.matvec) << r.name << " at " << isa_name(level);  // rows with kernels of their own there
      }
      // the int4 _a8 rows at avx512 (no VNNI): AVX2's matvec, the AVX-512 BW panel GEMM for prefill
      if (level == Isa::avx512 && r.act == ActType::int8_per_block && n.rfind("int4_g", 0) == 0) {
        EXPECT_EQ(k.matvec, avx2.matvec) << r.name;
        EXPECT_NE(k.matmul, avx2.matmul) << r.name;
        ++bw_gemms;
      }
    }
  }
  EXPECT_GE(rows, 4);   // the four at avx512_vnni at least
  EXPECT_GE(whole, 7);  // int8 and the six int4 group-wise rows at avx512
  EXPECT_EQ(bw_gemms, 3);  // int4_g32_a8, int4_g64_a8, int4_g128_a8
}

}  // namespace
}  // namespace cibench
