// GGUF K-quant and legacy blocks (Q2_K..Q6_K, Q4_1, Q5_0, Q5_1): hand-built blocks against values
// computed by hand from ggml's block layouts; a fixture quantised by llama.cpp's own llama-quantize
// (tests/fixtures/gguf/kquant-mix.gguf) against reference numbers from gguf-py's independent numpy
// dequantisers (kquant-mix.ref, made by make_kquant_fixture.py beside it); the model it holds run
// at f32 against one built from the dequantised weights; the conversion error of packing the
// dequantised weights into cibench formats, exactly 0 for GGUF Q4_0 into int4_g32 (the same bytes,
// copied); bad files rejected naming the file, the tensor and the type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engines/core/error.h"
#include "engines/core/splitmix.h"
#include "engines/kernels/half.h"
#include "engines/models/ggml_quants.h"
#include "engines/models/gguf.h"
#include "engines/models/gguf_writer.h"
#include "engines/models/llama.h"
#include "engines/models/llama_config.h"
#include "engines/runtime/session.h"
#include "pair_tolerance.h"
#include "test_support.h"

using namespace cibench;

namespace {

using cibench::test::TempDir;

const std::string kFixture = std::string(CIBENCH_SOURCE_DIR) + "/tests/fixtures/gguf/kquant-mix.gguf";
const std::string kFixtureRef = std::string(CIBENCH_SOURCE_DIR) + "/tests/fixtures/gguf/kquant-mix.ref";

void put_half(uint8_t* p, uint16_t h) {
  p[0] = static_cast<uint8_t>(h & 0xff);
  p[1] = static_cast<uint8_t>(h >> 8);
}

// f16 bit patterns used below.
constexpr uint16_t kHalfOne = 0x3C00, kHalfHalf = 0x3800, kHalfQuarter = 0x3400, kHalfMinusOne = 0xBC00;

std::vector<float> dequant(uint32_t type, const std::vector<uint8_t>& block) {
  const int64_t n = ggml_block_values(type);
  EXPECT_EQ(block.size(), ggml_block_bytes(type));
  std::vector<float> y(static_cast<size_t>(n), NAN);
  dequantize_ggml(type, block.data(), n, y.data());
  return y;
}

// ---- Hand-built blocks -------------------------------------------------------------------------

TEST(GgmlKQuantBlocks, Sizes) {
  EXPECT_EQ(ggml_block_bytes(kGgmlQ4_1), 20u);
  EXPECT_EQ(ggml_block_bytes(kGgmlQ5_0), 22u);
  EXPECT_EQ(ggml_block_bytes(kGgmlQ5_1), 24u);
  EXPECT_EQ(ggml_block_bytes(kGgmlQ2_K), 84u);
  EXPECT_EQ(ggml_block_bytes(kGgmlQ3_K), 110u);
  EXPECT_EQ(ggml_block_bytes(kGgmlQ4_K), 144u);
  EXPECT_EQ(ggml_block_bytes(kGgmlQ5_K), 176u);
  EXPECT_EQ(ggml_block_bytes(kGgmlQ6_K), 210u);
  for (uint32_t t : {kGgmlQ2_K, kGgmlQ3_K, kGgmlQ4_K, kGgmlQ5_K, kGgmlQ6_K}) EXPECT_EQ(ggml_block_values(t), 256);
  for (uint32_t t : {16u, 17u, 20u, 23u, 15u, 9u, 99u}) EXPECT_FALSE(ggml_type_readable(t)) << t;
}

TEST(GgmlKQuantBlocks, Q4_1) {
  std::vector<uint8_t> b(20, 0);
  put_half(&b[0], kHalfHalf);      // d = 0.5
  put_half(&b[2], kHalfMinusOne);  // m = -1
  b[4] = 0x3A;                     // value 0: 10, value 16: 3
  const std::vector<float> y = dequant(kGgmlQ4_1, b);
  EXPECT_EQ(y[0], 4.0f);    // 10 * 0.5 - 1
  EXPECT_EQ(y[16], 0.5f);   // 3 * 0.5 - 1
  EXPECT_EQ(y[1], -1.0f);   // code 0: the minimum
}

TEST(GgmlKQuantBlocks, Q5_0HighBits) {
  std::vector<uint8_t> b(22, 0);
  put_half(&b[0], kHalfQuarter);  // d = 0.25
  // qh (u32 little-endian) bits 0, 16 and 31: the fifth bit of values 0, 16 and 31.
  b[2] = 0x01;
  b[4] = 0x01;
  b[5] = 0x80;
  b[6 + 0] = 0x21;   // value 0: 1, value 16: 2
  b[6 + 1] = 0xF0;   // value 1: 0, value 17: 15
  b[6 + 15] = 0xF0;  // value 15: 0, value 31: 15
  const std::vector<float> y = dequant(kGgmlQ5_0, b);
  EXPECT_EQ(y[0], 0.25f);   // (1 | 16) - 16 = 1
  EXPECT_EQ(y[16], 0.5f);   // (2 | 16) - 16 = 2
  EXPECT_EQ(y[1], -4.0f);   // 0 - 16
  EXPECT_EQ(y[17], -0.25f); // 15 - 16
  EXPECT_EQ(y[15], -4.0f);
  EXPECT_EQ(y[31], 3.75f);  // (15 | 16) - 16 = 15
}

TEST(GgmlKQuantBlocks, Q5_1HighBits) {
  std::vector<uint8_t> b(24, 0);
  put_half(&b[0], kHalfOne);   // d = 1
  put_half(&b[2], kHalfHalf);  // m = 0.5
  b[4] = 0x01;                 // qh bit 0
  b[7] = 0x40;                 // qh bit 30: value 30
  b[8 + 0] = 0x03;             // value 0: 3, value 16: 0
  b[8 + 14] = 0x20;            // value 14: 0, value 30: 2
  const std::vector<float> y = dequant(kGgmlQ5_1, b);
  EXPECT_EQ(y[0], 19.5f);   // (3 | 16) + 0.5
  EXPECT_EQ(y[16], 0.5f);
  EXPECT_EQ(y[14], 0.5f);
  EXPECT_EQ(y[30], 18.5f);  // (2 | 16) + 0.5
}

// Q4_K: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles.
std::vector<uint8_t> q4k_scales_block(size_t bytes, size_t qs_at) {
  std::vector<uint8_t> b(bytes, 0);
  put_half(&b[0], kHalfOne);   // d = 1
  put_half(&b[2], kHalfHalf);  // dmin = 0.5
  uint8_t* sc = &b[4];
  sc[0] = 0xC3;  // sub-block 0 scale 3; top bits 3 = bits 4-5 of sub-block 4's scale
  sc[4] = 0x87;  // sub-block 0 min 7; top bits 2 = bits 4-5 of sub-block 4's min
  sc[8] = 0x52;  // sub-block 4: scale low bits 2, min low bits 5 -> scale 50, min 37
  sc[9] = 0x31;  // sub-block 5: scale 1, min 3 (no top bits from sc[1], sc[5])
  uint8_t* qs = &b[qs_at];
  qs[0] = 0x09;   // value 0 (sub-block 0): 9; value 32 (sub-block 1: scale 0, min 0): 0
  qs[64] = 0x7B;  // value 128 (sub-block 4): 11; value 160 (sub-block 5): 7
  return b;
}

TEST(GgmlKQuantBlocks, Q4_KSixBitScalesAndMins) {
  const std::vector<float> y = dequant(kGgmlQ4_K, q4k_scales_block(144, 16));
  EXPECT_EQ(y[0], 23.5f);    // 3 * 9 - 0.5 * 7
  EXPECT_EQ(y[1], -3.5f);    // code 0: - 0.5 * 7
  EXPECT_EQ(y[32], 0.0f);
  EXPECT_EQ(y[128], 531.5f); // 50 * 11 - 0.5 * 37
  EXPECT_EQ(y[129], -18.5f);
  EXPECT_EQ(y[160], 5.5f);   // 1 * 7 - 0.5 * 3
  EXPECT_EQ(y[255], 0.0f);   // sub-block 7: scale and min 0
}

TEST(GgmlKQuantBlocks, Q5_KHighBits) {
  std::vector<uint8_t> b = q4k_scales_block(176, 48);
  uint8_t* qh = &b[16];
  qh[0] = 0x11;  // bit 0: value 0; bit 4: value 128 (the third 64, low nibbles)
  qh[1] = 0x20;  // bit 5: value 161 (the third 64, high nibbles, l = 1)
  const std::vector<float> y = dequant(kGgmlQ5_K, b);
  EXPECT_EQ(y[0], 71.5f);     // 3 * (9 + 16) - 3.5
  EXPECT_EQ(y[128], 1331.5f); // 50 * (11 + 16) - 18.5
  EXPECT_EQ(y[160], 5.5f);    // bit 5 of qh[0] clear
  EXPECT_EQ(y[161], 14.5f);   // 1 * (0 + 16) - 1.5
  EXPECT_EQ(y[1], -3.5f);
}

TEST(GgmlKQuantBlocks, Q6_KSignedScales) {
  std::vector<uint8_t> b(210, 0);
  uint8_t* ql = &b[0];
  uint8_t* qh = &b[128];
  int8_t* sc = reinterpret_cast<int8_t*>(&b[192]);
  put_half(&b[208], kHalfHalf);  // d = 0.5
  sc[0] = -3;
  sc[2] = 5;
  sc[4] = 1;
  sc[9] = -128;
  ql[0] = 0xF0;   // value 0: low nibble 0; value 64: high nibble 15
  ql[32] = 0x05;  // value 32: 5
  qh[0] = 0x0C;   // bits 2-3 = 3: the top two bits of value 32
  ql[80] = 0x0F;  // second 128, value 16 of it (256-value index 144): 15
  qh[48] = 0x03;  // its top bits 3
  const std::vector<float> y = dequant(kGgmlQ6_K, b);
  EXPECT_EQ(y[0], 48.0f);     // 0.5 * -3 * (0 - 32)
  EXPECT_EQ(y[32], 52.5f);    // 0.5 * 5 * ((5 | 48) - 32)
  EXPECT_EQ(y[64], -8.5f);    // 0.5 * 1 * (15 - 32)
  EXPECT_EQ(y[144], -1984.0f);// 0.5 * -128 * (63 - 32)
  EXPECT_EQ(y[16], 0.0f);     // scale 1 is 0
}

TEST(GgmlKQuantBlocks, Q2_K) {
  std::vector<uint8_t> b(84, 0);
  uint8_t* scales = &b[0];
  uint8_t* qs = &b[16];
  put_half(&b[80], kHalfOne);      // d = 1
  put_half(&b[82], kHalfQuarter);  // dmin = 0.25
  scales[0] = 0x21;   // values 0-15: scale 1, min 2
  scales[1] = 0xF5;   // values 16-31: scale 5, min 15
  scales[2] = 0x13;   // values 32-47: scale 3, min 1
  scales[8] = 0x04;   // values 128-143: scale 4, min 0
  scales[14] = 0x10;  // values 224-239: scale 0, min 1
  qs[0] = 0xE7;   // bits 0-1: value 0 = 3; bits 2-3: value 32 = 1
  qs[16] = 0x02;  // value 16 = 2
  qs[32] = 0x03;  // second 128: value 128 = 3; bits 6-7 (value 224) = 0
  const std::vector<float> y = dequant(kGgmlQ2_K, b);
  EXPECT_EQ(y[0], 2.5f);     // 1 * 3 - 0.25 * 2
  EXPECT_EQ(y[16], 6.25f);   // 5 * 2 - 0.25 * 15
  EXPECT_EQ(y[32], 2.75f);   // 3 * 1 - 0.25
  EXPECT_EQ(y[128], 12.0f);  // 4 * 3
  EXPECT_EQ(y[224], -0.25f); // 0 - 0.25 * 1
}

TEST(GgmlKQuantBlocks, Q3_KScalesAndHighBits) {
  std::vector<uint8_t> b(110, 0);
  uint8_t* hmask = &b[0];
  uint8_t* qs = &b[32];
  uint8_t* sc = &b[96];
  put_half(&b[108], kHalfHalf);  // d = 0.5
  sc[0] = 0xF1;   // scale 0 low bits 1; scale 8 low bits 15
  sc[8] = 0x02;   // scale 0 high bits 2 (-> 33 - 32 = 1); scale 8 high bits 0 (-> 15 - 32 = -17)
  sc[7] = 0xA0;   // scale 15 low bits 10
  sc[11] = 0xC0;  // scale 15 high bits 3 (-> 58 - 32 = 26)
  qs[0] = 0x03;     // value 0: 3, its hmask bit clear: 3 - 4
  qs[1] = 0x02;     // value 1: 2, hmask bit set: 2
  hmask[1] = 0x01;
  qs[32] = 0x01;    // value 128: 1, hmask[0] bit 4 set
  hmask[0] = 0x10;
  qs[48] = 0x40;    // value 240: bits 6-7 = 1, hmask[16] bit 7 clear: 1 - 4
  const std::vector<float> y = dequant(kGgmlQ3_K, b);
  EXPECT_EQ(y[0], -0.5f);   // 0.5 * 1 * -1
  EXPECT_EQ(y[1], 1.0f);    // 0.5 * 1 * 2
  EXPECT_EQ(y[2], -2.0f);   // 0.5 * 1 * (0 - 4)
  EXPECT_EQ(y[128], -8.5f); // 0.5 * -17 * 1
  EXPECT_EQ(y[240], -39.0f);// 0.5 * 26 * -3
}

// ---- The llama-quantize fixture against gguf-py ------------------------------------------------

uint64_t fnv1a64(const std::vector<float>& v) {
  uint64_t h = 0xCBF29CE484222325ull;
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  for (size_t i = 0; i < v.size() * 4; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

struct RefTensor {
  std::string type;
  int64_t n = 0;
  uint64_t hash = 0;
  double sum = 0, sumsq = 0;
  std::vector<std::pair<int64_t, double>> samples;
};

std::map<std::string, RefTensor> read_ref() {
  std::ifstream in(kFixtureRef);
  EXPECT_TRUE(in) << kFixtureRef;
  std::map<std::string, RefTensor> out;
  std::string line, current;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    if (line[0] == ' ') {
      int64_t i;
      double v;
      ls >> i >> v;
      out[current].samples.emplace_back(i, v);
    } else {
      RefTensor r;
      std::string hash;
      ls >> current >> r.type >> r.n >> hash >> r.sum >> r.sumsq;
      r.hash = std::stoull(hash, nullptr, 16);
      out[current] = r;
    }
  }
  return out;
}

TEST(GgufKQuantFixture, DequantisedAsGgufPy) {
  const GgufFile g(kFixture);
  const auto ref = read_ref();
  ASSERT_EQ(ref.size(), g.tensors().size());
  std::map<std::string, int> types;
  for (const GgufTensorInfo& t : g.tensors()) {
    SCOPED_TRACE(t.name);
    ASSERT_TRUE(ref.count(t.name));
    const RefTensor& r = ref.at(t.name);
    EXPECT_EQ(GgufFile::ggml_type_name(t.ggml_type), r.type);
    ASSERT_TRUE(ggml_type_readable(t.ggml_type));
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    ASSERT_EQ(n, r.n);
    std::vector<float> y(static_cast<size_t>(n));
    dequantize_ggml(t.ggml_type, t.data, n, y.data());
    // Bit for bit: both evaluate ggml's expressions in binary32, one rounding per operation.
    EXPECT_EQ(fnv1a64(y), r.hash);
    double sum = 0, sumsq = 0;
    for (float v : y) {
      sum += v;
      sumsq += static_cast<double>(v) * v;
    }
    // numpy sums pairwise, this loop in order: both in binary64 over n <= 65536 values.
    EXPECT_NEAR(sum, r.sum, 1e-12 * n * std::sqrt(r.sumsq));
    EXPECT_NEAR(sumsq, r.sumsq, 1e-12 * n * r.sumsq);
    for (const auto& [i, v] : r.samples) EXPECT_EQ(static_cast<double>(y[static_cast<size_t>(i)]), v) << "value " << i;
    ++types[r.type];
  }
  for (const char* t : {"Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q4_1", "Q5_0", "Q5_1", "Q8_0"})
    EXPECT_EQ(types[t], 1) << t;
}

TEST(GgufKQuantFixture, LoaderDeliversTheDequantisedTensors) {
  const GgufFile g(kFixture);
  const LlamaSource src = open_llama_source(kFixture);
  EXPECT_EQ(src.config.dim, 256);
  EXPECT_FALSE(src.config.tied_output);
  const std::map<std::string, std::string> names = {
      {"tok_embeddings", "token_embd.weight"}, {"output", "output.weight"},
      {"layers.0.wq", "blk.0.attn_q.weight"},  {"layers.0.wk", "blk.0.attn_k.weight"},
      {"layers.0.wv", "blk.0.attn_v.weight"},  {"layers.0.wo", "blk.0.attn_output.weight"},
      {"layers.0.w1", "blk.0.ffn_gate.weight"}, {"layers.0.w2", "blk.0.ffn_down.weight"},
      {"layers.0.w3", "blk.0.ffn_up.weight"},  {"norm", "output_norm.weight"}};
  for (const auto& [canon, gname] : names) {
    SCOPED_TRACE(canon);
    const GgufTensorInfo* ti = g.find_tensor(gname);
    ASSERT_NE(ti, nullptr);
    const TensorSource& t = src.tensor(canon);
    std::vector<float> want(static_cast<size_t>(t.rows * t.cols));
    dequantize_ggml(ti->ggml_type, ti->data, t.rows * t.cols, want.data());
    EXPECT_EQ(fnv1a64(t.read_all()), fnv1a64(want));
    EXPECT_EQ(t.stored_type, canon == "norm" ? "" : GgufFile::ggml_type_name(ti->ggml_type));
    if (t.rows > 3) {  // rows from the middle start at whole blocks
      std::vector<float> part(static_cast<size_t>(t.cols * 2));
      t.read(2, 2, part.data());
      EXPECT_EQ(fnv1a64(part), fnv1a64(std::vector<float>(want.begin() + 2 * t.cols, want.begin() + 4 * t.cols)));
    }
  }
}

// Every tensor of `src` read into memory: the same values, no stored type.
LlamaSource dequantised_copy(const LlamaSource& src) {
  LlamaSource out;
  out.config = src.config;
  out.origin = "dequantised";
  out.container = "memory";
  auto held = std::make_shared<std::map<std::string, std::vector<float>>>();
  for (const auto& [name, t] : src.tensors) (*held)[name] = t.read_all();
  for (const auto& [name, t] : src.tensors) {
    TensorSource c;
    c.rows = t.rows;
    c.cols = t.cols;
    const float* data = (*held)[name].data();
    const int64_t cols = t.cols;
    c.read = [held, data, cols](int64_t r0, int64_t n, float* dst) {
      std::memcpy(dst, data + r0 * cols, static_cast<size_t>(n * cols) * 4);
    };
    out.tensors[name] = std::move(c);
  }
  out.keepalive = held;
  return out;
}

std::vector<float> session_logits(const LlamaModel& m, const std::vector<int>& toks) {
  std::vector<float> out;
  LlamaSession s(m, SessionOptions{});
  for (int t : toks) {
    const float* l = s.step(t);
    out.insert(out.end(), l, l + m.config.vocab_size);
  }
  return out;
}

const std::vector<int> kTokens = {1, 5, 31, 0, 17, 2, 9, 30};

class GgufKQuantModel : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { CIBENCH_REQUIRE_ISA(GetParam()); }
};

TEST_P(GgufKQuantModel, F32LogitsEqualTheDequantisedModel) {
  test::IsaScope isa(GetParam());
  const LlamaSource src = open_llama_source(kFixture);
  const LlamaModel m = build_llama(src);
  const LlamaModel want = build_llama(dequantised_copy(src));
  const std::vector<float> a = session_logits(m, kTokens), b = session_logits(want, kTokens);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "at " << i;
  // f32 holds the dequantised values exactly: every class converts without error.
  ASSERT_EQ(m.conversion.size(), 3u);
  for (const auto& [cls, c] : m.conversion) {
    SCOPED_TRACE(cls);
    EXPECT_EQ(c.err_sq, 0.0);
    EXPECT_GT(c.ref_sq, 0.0);
    EXPECT_EQ(c.relative_rms(), 0.0);
    EXPECT_EQ(c.format, "f32");
  }
  EXPECT_EQ(m.conversion.at("attention").tensors, 4);
  EXPECT_EQ(m.conversion.at("ffn").tensors, 3);
  EXPECT_EQ(m.conversion.at("output").tensors, 1);
  EXPECT_EQ(m.conversion.at("attention").stored_types, (std::vector<std::string>{"Q2_K", "Q3_K", "Q4_K", "Q5_K"}));
  EXPECT_EQ(m.conversion.at("ffn").stored_types, (std::vector<std::string>{"Q4_1", "Q5_0", "Q5_1"}));
  EXPECT_EQ(m.conversion.at("output").stored_types, (std::vector<std::string>{"Q6_K"}));
  EXPECT_EQ(m.conversion_overall().tensors, 8);
  // A source without quantised tensors measures nothing.
  EXPECT_TRUE(want.conversion.empty());
  EXPECT_EQ(want.conversion_summary(), "");
}

INSTANTIATE_TEST_SUITE_P(Isa, GgufKQuantModel, ::testing::ValuesIn(all_isas()), test::isa_param_name);

// The relative RMS error of packing `values` (rows x cols) into `format`, computed here from the
// format's own pack and unpack.
double repack_error(const std::vector<float>& values, int64_t rows, int64_t cols, const std::string& format) {
  const FormatRow& f = format_by_name(format);
  std::vector<uint8_t> row(f.row_bytes(cols));
  std::vector<float> back(static_cast<size_t>(cols));
  double e = 0, r = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const float* x = values.data() + i * cols;
    f.pack_row(x, cols, row.data());
    f.unpack_row(row.data(), cols, back.data());
    for (int64_t j = 0; j < cols; ++j) {
      e += (static_cast<double>(back[j]) - x[j]) * (static_cast<double>(back[j]) - x[j]);
      r += static_cast<double>(x[j]) * x[j];
    }
  }
  return std::sqrt(e / r);
}

TEST(GgufKQuantConversion, CompactFormatsReportTheirError) {
  const LlamaSource src = open_llama_source(kFixture);
  for (const char* fmt : {"int8", "int4_g32", "bf16"}) {
    SCOPED_TRACE(fmt);
    LlamaBuildOptions o;
    o.format = fmt;
    const LlamaModel m = build_llama(src, o);
    ASSERT_EQ(m.conversion.size(), 3u);
    for (const auto& [cls, c] : m.conversion) {
      SCOPED_TRACE(cls);
      EXPECT_EQ(c.copied, 0);
      // The model's figure is the pack/unpack error of the class's tensors, recomputed here.
      double e = 0, r = 0;
      const std::vector<std::string> names =
          cls == "attention" ? std::vector<std::string>{"wq", "wk", "wv", "wo"}
          : cls == "ffn"     ? std::vector<std::string>{"w1", "w2", "w3"}
                             : std::vector<std::string>{"output"};
      for (const std::string& n : names) {
        const TensorSource& t = src.tensor(n == "output" ? n : "layers.0." + n);
        const std::vector<float> v = t.read_all();
        const double rel = repack_error(v, t.rows, t.cols, fmt);
        double ss = 0;
        for (float x : v) ss += static_cast<double>(x) * x;
        e += rel * rel * ss;
        r += ss;
      }
      EXPECT_NEAR(c.relative_rms(), std::sqrt(e / r), 1e-9 * std::sqrt(e / r));
      // The rows' documented error bounds (docs/formats.md): bf16 2^-9 RMS, int8 a step of
      // max/127 per row (RMS max/440 for uniform values, more for heavy tails), int4_g32 the group's
      // max/8 (about 9 % for Gaussian rows). Nonzero: none of these layouts is a GGUF block's.
      const double rel = c.relative_rms();
      EXPECT_GT(rel, 0.0);
      if (std::string(fmt) == "bf16") {
        EXPECT_LT(rel, std::ldexp(1.0, -9));
      }
      if (std::string(fmt) == "int8") {
        EXPECT_LT(rel, 0.05);
      }
      if (std::string(fmt) == "int4_g32") {
        EXPECT_GT(rel, 0.01);
        EXPECT_LT(rel, 0.25);
      }
    }
    EXPECT_NE(m.conversion_summary().find("overall"), std::string::npos);
  }
  // A tied head is packed from the embeddings (Q8_0 here): its conversion is theirs.
  LlamaSource tied = open_llama_source(kFixture);
  tied.config.tied_output = true;
  tied.tensors.erase("output");
  LlamaBuildOptions o;
  o.format = "int8";
  const LlamaModel m = build_llama(tied, o);
  const WeightConversion& out = m.conversion.at("output");
  EXPECT_EQ(out.stored_types, std::vector<std::string>{"Q8_0"});
  EXPECT_EQ(out.tensors, 1);
  const TensorSource& emb = tied.tensor("tok_embeddings");
  const double want = repack_error(emb.read_all(), emb.rows, emb.cols, "int8");
  EXPECT_NEAR(out.relative_rms(), want, 1e-9 * want);
}

// ---- GGUF Q4_0 into int4_g32: the same bytes -----------------------------------------------------

LlamaConfig q4_config() {
  LlamaConfig c;
  c.dim = 64;
  c.hidden_dim = 96;
  c.n_layers = 1;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 40;
  c.seq_len = 32;
  c.tied_output = false;
  return c;
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// A small decoder (q4_config) of uniform weights in [-0.1, 0.1), norms 1, held in memory.
LlamaSource small_source() {
  const LlamaConfig c = q4_config();
  LlamaSource src;
  src.config = c;
  src.origin = "q4";
  src.container = "memory";
  auto held = std::make_shared<std::map<std::string, std::vector<float>>>();
  auto add = [&](const std::string& name, int64_t rows, int64_t cols, bool norm) {
    std::vector<float> v(static_cast<size_t>(rows * cols));
    uint64_t s = splitmix64(fnv1a64_name(name));
    for (float& x : v) {
      s = splitmix64(s);
      x = norm ? 1.0f : (static_cast<float>(s >> 40) / 16777216.0f * 2.0f - 1.0f) * 0.1f;
    }
    (*held)[name] = std::move(v);
    TensorSource t;
    t.rows = rows;
    t.cols = cols;
    const float* data = (*held)[name].data();
    t.read = [held, data, cols](int64_t r0, int64_t n, float* dst) {
      std::memcpy(dst, data + r0 * cols, static_cast<size_t>(n * cols) * 4);
    };
    src.tensors[name] = std::move(t);
  };
  const int64_t d = c.dim, h = c.hidden_dim, kv = c.kv_dim();
  add("tok_embeddings", c.vocab_size, d, false);
  add("output", c.vocab_size, d, false);
  add("norm", 1, d, true);
  add("layers.0.attention_norm", 1, d, true);
  add("layers.0.ffn_norm", 1, d, true);
  add("layers.0.wq", d, d, false);
  add("layers.0.wk", kv, d, false);
  add("layers.0.wv", kv, d, false);
  add("layers.0.wo", d, d, false);
  add("layers.0.w1", h, d, false);
  add("layers.0.w2", d, h, false);
  add("layers.0.w3", h, d, false);
  src.keepalive = held;
  return src;
}

// A GGUF with every 2-D tensor in Q4_0 blocks whose codes avoid 0 (-8) and whose scales are not
// the block's largest magnitude / 8, as an importance-weighted quantiser may choose: re-quantising
// their values would pick other scales and codes; copying keeps them.
std::string write_q4_0_gguf(const TempDir& tmp) {
  const LlamaSource src = small_source();
  const std::string path = tmp.file("q4_0.gguf");
  write_llama_gguf(src, placeholder_vocab(src.config.vocab_size), GgufWeightType::q4_0, "q4", path);
  // Every block: code 0 becomes 1 (no value at -8 d any more) and d grows by 1.25 (exact in f16).
  std::vector<uint8_t> b = file_bytes(path);
  {
    const GgufFile g(path);
    for (const GgufTensorInfo& t : g.tensors()) {
      if (t.ggml_type != kGgmlQ4_0) continue;
      uint8_t* p = b.data() + (t.data - g.file()->data());
      for (size_t blk = 0; blk < t.nbytes / kQ4_0BlockBytes; ++blk, p += kQ4_0BlockBytes) {
        const float dd = half_to_float(static_cast<uint16_t>(p[0] | p[1] << 8)) * 1.25f;
        put_half(p, half_from_float(dd));
        for (int j = 2; j < 18; ++j) {
          if ((p[j] & 0x0f) == 0) p[j] |= 0x01;
          if ((p[j] >> 4) == 0) p[j] |= 0x10;
        }
      }
    }
  }
  write_bytes(path, b);
  return path;
}

// Every class of `m` (attention, ffn, output) was copied from `stored` blocks: 0 error.
void expect_every_class_copied(const LlamaModel& m, const std::string& stored) {
  ASSERT_EQ(m.conversion.size(), 3u);
  for (const auto& [cls, c] : m.conversion) {
    SCOPED_TRACE(cls);
    EXPECT_EQ(c.err_sq, 0.0);
    EXPECT_EQ(c.relative_rms(), 0.0);
    EXPECT_GT(c.tensors, 0);
    EXPECT_EQ(c.copied, c.tensors);
    EXPECT_EQ(c.stored_types, std::vector<std::string>{stored});
  }
  EXPECT_NE(m.conversion_summary().find("(copied)"), std::string::npos);
}

// Writes `src` (opened from the GGUF `g`) again as `type` and expects every tensor of ggml type
// `ggml_type` in `g` to come out with the same bytes; returns how many were compared.
int expect_reexported_blocks(const LlamaSource& src, const GgufFile& g, GgufWeightType type, uint32_t ggml_type,
                             const TempDir& tmp) {
  const std::string again = tmp.file("again.gguf");
  write_llama_gguf(src, placeholder_vocab(src.config.vocab_size), type, "again", again);
  const GgufFile g2(again);
  int compared = 0;
  for (const GgufTensorInfo& t : g.tensors()) {
    if (t.ggml_type != ggml_type) continue;
    SCOPED_TRACE(t.name);
    const GgufTensorInfo* t2 = g2.find_tensor(t.name);
    EXPECT_NE(t2, nullptr);
    if (!t2) continue;
    EXPECT_EQ(t2->nbytes, t.nbytes);
    EXPECT_EQ(std::memcmp(t2->data, t.data, std::min(t.nbytes, t2->nbytes)), 0);
    ++compared;
  }
  return compared;
}

TEST(GgufQ4_0Conversion, BlocksWithoutTheMinusEightCodeAreTheInt4G32Rows) {
  TempDir tmp;
  const std::string path = write_q4_0_gguf(tmp);
  const GgufFile g(path);
  const LlamaSource src = open_llama_source(path);
  EXPECT_EQ(src.tensor("layers.0.wq").native_format, "int4_g32");
  for (const char* fmt : {"int4_g32", "int4_g32_a8"}) {
    SCOPED_TRACE(fmt);
    LlamaBuildOptions o;
    o.format = fmt;
    const LlamaModel m = build_llama(src, o);
    expect_every_class_copied(m, "Q4_0");
    // The packed rows are the file's bytes.
    const GgufTensorInfo* ti = g.find_tensor("blk.0.ffn_down.weight");
    ASSERT_EQ(m.layers[0].w2.bytes(), ti->nbytes);
    EXPECT_EQ(std::memcmp(m.layers[0].w2.data(), ti->data, ti->nbytes), 0);
  }
  // Re-quantising the same values instead would not be lossless: the codes never reach -8, so
  // int4_g32's own quantiser picks another scale.
  const TensorSource& wq = src.tensor("layers.0.wq");
  EXPECT_GT(repack_error(wq.read_all(), wq.rows, wq.cols, "int4_g32"), 0.0);
  // Tied heads come from the embeddings: copied as well.
  LlamaSource tied = open_llama_source(path);
  tied.config.tied_output = true;
  tied.tensors.erase("output");
  LlamaBuildOptions o;
  o.format = "int4_g32";
  const LlamaModel mt = build_llama(tied, o);
  EXPECT_EQ(mt.conversion.at("output").copied, 1);
  EXPECT_EQ(mt.conversion.at("output").err_sq, 0.0);
  const GgufTensorInfo* emb = g.find_tensor("token_embd.weight");
  EXPECT_EQ(std::memcmp(mt.output.data(), emb->data, emb->nbytes), 0);
  // Exported again as Q4_0, the stored rows are copied as well: the file's bytes, which
  // re-quantising the values would not give back.
  EXPECT_GT(expect_reexported_blocks(src, g, GgufWeightType::q4_0, kGgmlQ4_0, tmp), 5);
}

// Packs `src` (GGUF Q4_0 weights) as int4_g32 and checks its logits against the model built from
// the dequantised f32 weights; returns the int4_g32 model.
LlamaModel expect_int4_g32_logits_of_dequantised(const LlamaSource& src) {
  LlamaBuildOptions o;
  o.format = "int4_g32";
  LlamaModel m4 = build_llama(src, o);
  const LlamaSource deq = dequantised_copy(src);
  const LlamaModel m32 = build_llama(deq);
  const std::vector<int> toks = {1, 5, 39, 0, 17, 2};
  const std::vector<float> a = session_logits(m4, toks), b = session_logits(m32, toks);
  // The same weights, sums in other orders (per group d * sum((q - 8) x) against sum(w x)).
  const double tol = test::pair_tolerance(deq, toks);
  EXPECT_LE(test::max_abs_diff(a, b), tol);
  return m4;
}

class GgufQ4_0Model : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { CIBENCH_REQUIRE_ISA(GetParam()); }
};

TEST_P(GgufQ4_0Model, Int4G32LogitsMatchTheF32DequantisedModel) {
  test::IsaScope isa(GetParam());
  TempDir tmp;
  const std::string path = write_q4_0_gguf(tmp);
  expect_int4_g32_logits_of_dequantised(open_llama_source(path));
}

INSTANTIATE_TEST_SUITE_P(Isa, GgufQ4_0Model, ::testing::ValuesIn(all_isas()), test::isa_param_name);

// The family fixture `family` written as a GGUF of `type` in `tmp` and opened again; its q/k
// projections are stored as `stored` blocks, natively rows of `native`.
LlamaSource family_gguf(const TempDir& tmp, const char* family, GgufWeightType type, const char* native,
                        const char* stored) {
  const LlamaSource hf = open_llama_source(std::string(CIBENCH_SOURCE_DIR) + "/tests/fixtures/families/" + family);
  const std::string path = tmp.file(std::string(family) + ".gguf");
  write_llama_gguf(hf, placeholder_vocab(hf.config.vocab_size), type, family, path);
  LlamaSource src = open_llama_source(path);
  EXPECT_EQ(src.tensor("layers.0.wq").native_format, native);
  EXPECT_EQ(src.tensor("layers.0.wk").stored_type, stored);
  return src;
}

// The families whose q/k rows the loader reorders (rotate-half in the file: qwen2) or cuts out of
// a fused tensor (phi3's attn_qkv and ffn_up): the stored Q4_0 rows move with them, still copied.
TEST_P(GgufQ4_0Model, ReorderedAndFusedRowsAreCopiedToo) {
  test::IsaScope isa(GetParam());
  for (const char* family : {"qwen2", "phi3"}) {
    SCOPED_TRACE(family);
    TempDir tmp;
    const LlamaSource src = family_gguf(tmp, family, GgufWeightType::q4_0, "int4_g32", "Q4_0");
    const LlamaModel m4 = expect_int4_g32_logits_of_dequantised(src);
    EXPECT_EQ(m4.conversion.at("attention").err_sq, 0.0);
    EXPECT_GT(m4.conversion.at("attention").copied, 0);
  }
}

// ---- GGUF Q8_0 into int8_g32_a8: the same bytes -------------------------------------------------

// A Q8_0 file cibench writes holds the int8_g32_a8 rows of its f32 weights (the same rounding,
// ggml's): loaded as int8_g32_a8 they are copied (0 conversion error, the file's bytes), and the
// model computes the logits of int8_g32_a8 built from the dequantised weights bit for bit (re-
// quantising a Q8_0 block's values gives the block back: d * 127 / 127 = d, q * d / d rounds to q).
// Written again as Q8_0, the file's tensors are the same bytes.
class GgufQ8_0Model : public GgufQ4_0Model {};

TEST_P(GgufQ8_0Model, Q8_0RowsAreCopiedIntoInt8G32A8WithTheSameLogits) {
  test::IsaScope isa(GetParam());
  TempDir tmp;
  const LlamaSource orig = small_source();
  const std::string path = tmp.file("q8_0.gguf");
  write_llama_gguf(orig, placeholder_vocab(orig.config.vocab_size), GgufWeightType::q8_0, "q8", path);
  const GgufFile g(path);
  const LlamaSource src = open_llama_source(path);
  EXPECT_EQ(src.tensor("layers.0.wq").native_format, "int8_g32_a8");
  LlamaBuildOptions o;
  o.format = "int8_g32_a8";
  const LlamaModel m = build_llama(src, o);
  expect_every_class_copied(m, "Q8_0");
  for (const char* t : {"blk.0.ffn_down.weight", "output.weight"}) {
    const GgufTensorInfo* ti = g.find_tensor(t);
    const WeightMatrix& w = std::string(t) == "output.weight" ? m.output : m.layers[0].w2;
    ASSERT_EQ(w.bytes(), ti->nbytes) << t;
    EXPECT_EQ(std::memcmp(w.data(), ti->data, ti->nbytes), 0) << t;
  }
  // Packing the f32 weights gives the same rows: the model of the dequantised weights (its
  // embeddings are the file's too) re-quantises to the file's bytes and computes the same logits.
  const LlamaModel requantised = build_llama(dequantised_copy(src), o);
  EXPECT_EQ(requantised.conversion.size(), 0u);
  EXPECT_EQ(std::memcmp(requantised.layers[0].w2.data(), m.layers[0].w2.data(), m.layers[0].w2.bytes()), 0);
  const std::vector<int> toks = {1, 5, 39, 0, 17, 2};
  EXPECT_EQ(session_logits(m, toks), session_logits(requantised, toks));
  // Written again as Q8_0 (rows copied): the same tensor bytes.
  EXPECT_GT(expect_reexported_blocks(src, g, GgufWeightType::q8_0, kGgmlQ8_0, tmp), 5);
}

// As GgufQ4_0Model.ReorderedAndFusedRowsAreCopiedToo, for Q8_0 into int8_g32_a8: the rows the
// loader reorders (qwen2's rotate-half q/k) or cuts out of a fused tensor (phi3's attn_qkv and
// ffn_up) are still copied, with the logits of the dequantised weights re-quantised.
TEST_P(GgufQ8_0Model, ReorderedAndFusedRowsAreCopiedToo) {
  test::IsaScope isa(GetParam());
  for (const char* family : {"qwen2", "phi3"}) {
    SCOPED_TRACE(family);
    TempDir tmp;
    const LlamaSource src = family_gguf(tmp, family, GgufWeightType::q8_0, "int8_g32_a8", "Q8_0");
    LlamaBuildOptions o;
    o.format = "int8_g32_a8";
    const LlamaModel m = build_llama(src, o);
    EXPECT_EQ(m.conversion.at("attention").err_sq, 0.0);
    EXPECT_EQ(m.conversion.at("ffn").err_sq, 0.0);
    EXPECT_GT(m.conversion.at("attention").copied, 0);
    const LlamaModel requantised = build_llama(dequantised_copy(src), o);
    const std::vector<int> toks = {1, 5, 39, 0, 17, 2};
    EXPECT_EQ(session_logits(m, toks), session_logits(requantised, toks));
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, GgufQ8_0Model, ::testing::ValuesIn(all_isas()), test::isa_param_name);

// ---- Bad files ---------------------------------------------------------------------------------

std::vector<uint8_t> fixture_bytes() { return file_bytes(kFixture); }

// Offset of a tensor's directory entry fields after its name: n_dims (u32), dims, type, offset.
size_t tensor_entry(const std::vector<uint8_t>& b, const std::string& name) {
  std::vector<uint8_t> key(8);
  const uint64_t len = name.size();
  std::memcpy(key.data(), &len, 8);
  key.insert(key.end(), name.begin(), name.end());
  const auto it = std::search(b.begin(), b.end(), key.begin(), key.end());
  EXPECT_NE(it, b.end()) << name;
  return static_cast<size_t>(it - b.begin()) + key.size();
}

std::string open_error(const std::string& path) {
  try {
    open_llama_source(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

void expect_has(const std::string& msg, const std::vector<std::string>& parts) {
  for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

TEST(GgufKQuantErrors, TruncatedDataNamesFileTensorAndType) {
  TempDir tmp;
  std::vector<uint8_t> b = fixture_bytes();
  b.resize(b.size() - 100);  // the last tensor's blocks lose their end
  const std::string path = tmp.file("cut.gguf");
  write_bytes(path, b);
  const GgufFile full(kFixture);
  const GgufTensorInfo* last = &full.tensors().front();
  for (const GgufTensorInfo& t : full.tensors())
    if (t.offset > last->offset) last = &t;
  expect_has(open_error(path), {path, "tensor '" + last->name + "'", GgufFile::ggml_type_name(last->ggml_type),
                                "runs past the end"});
}

TEST(GgufKQuantErrors, BlockCountsAndUnknownTypes) {
  TempDir tmp;
  const std::vector<uint8_t> orig = fixture_bytes();
  const std::string name = "blk.0.attn_q.weight";  // Q4_K, dims [256, 256]
  const size_t at = tensor_entry(orig, name);
  uint32_t n_dims;
  std::memcpy(&n_dims, &orig[at], 4);
  ASSERT_EQ(n_dims, 2u);
  const size_t dim0 = at + 4, type_at = at + 4 + 8 * n_dims;
  {  // A row of 128 values is half a Q4_K super-block.
    std::vector<uint8_t> b = orig;
    const uint64_t cols = 128;
    std::memcpy(&b[dim0], &cols, 8);
    const std::string path = tmp.file("rows.gguf");
    write_bytes(path, b);
    expect_has(open_error(path), {path, name, "Q4_K", "not a multiple of its block size 256"});
  }
  {  // More rows than the blocks stored: runs into the next tensor's bytes or past the end.
    std::vector<uint8_t> b = orig;
    const uint64_t rows = 100000;
    std::memcpy(&b[dim0 + 8], &rows, 8);
    const std::string path = tmp.file("rows2.gguf");
    write_bytes(path, b);
    expect_has(open_error(path), {path, name, "Q4_K"});
  }
  {  // An unknown type id.
    std::vector<uint8_t> b = orig;
    const uint32_t t = 99;
    std::memcpy(&b[type_at], &t, 4);
    const std::string path = tmp.file("type99.gguf");
    write_bytes(path, b);
    expect_has(open_error(path), {path, name, "unknown ggml type 99"});
  }
  {  // A known type cibench does not read (IQ4_XS, 136 bytes per 256: the sizes still fit).
    std::vector<uint8_t> b = orig;
    const uint32_t t = 23;
    std::memcpy(&b[type_at], &t, 4);
    const std::string path = tmp.file("iq4xs.gguf");
    write_bytes(path, b);
    expect_has(open_error(path), {path, name, "IQ4_XS", "Q4_K", "Q6_K"});
  }
}

}  // namespace
