// Micro-benchmarks of every row of the weight-format table at every ISA level this CPU supports
// (levels whose kernels would fall back to a lower level's are skipped), over transformer-sized
// shapes (rows x cols = N x K): matvec (decode, one token) and matmul with M = 128 tokens
// (prefill), through MatmulRunner on a pool of 1 thread (and 2 threads for 4096x4096). The
// 110M-class shapes (K = 768) and 4096x4096 run both; the 1.1B-class shapes (TinyLlama: K = 2048
// and 5632) run matvec only, dense rows only.
// Sparse rows run at 50/60/70/80/90/95 % magnitude-pruned sparsity (int8_24 is 50 % by
// construction); compare them with the dense int8 row at the same shape for the break-even.
//
// Counters: weight_GBps = packed weight bytes streamed per second; GOPs = 2*N*K*M (dense
// equivalent, also for sparse rows) per second; weight_MB = packed size of one matrix; the label
// names the kernels that actually ran and how many copies of the matrix are rotated.
// Every iteration uses the next of enough copies of the matrix to exceed 96 MB, so weights come
// from DRAM as in decoding a real model, not from the 32 MB L3. matvec-cached runs one matrix of
// 1024 x 768 again and again (0.4 MB at int4, 0.8 at int8: in a 1 MB L2; f32's 3 MB in L3):
// what the format's arithmetic sustains once its bytes are near, the bound of a compute-bound
// decode (beside the matvec rows, which one is binding).
//
// The bf16 and f32 rows run matmul128 at the 1.1B-class shapes too (prefill of a TinyLlama-sized
// model). Two probes give the scale: peak/clock (a chain of dependent integer adds, one per
// cycle: counter GHz) and the multiply rates the kernels aim at, each with 16 independent
// accumulators in registers (12 at AVX2) (counters G_per_s, instructions per second (over GHz:
// per cycle), and GOPs): peak/fma_f32_256 (AVX2 FMA, 16 operations = 8 multiply-adds per instruction),
// peak/fma_f32_512 (AVX-512, 32), where AVX-512 BF16 is usable peak/vdpbf16ps (64 operations, 32
// multiply-adds) and where VNNI is peak/vpdpbusd (128 operations, 64 multiply-adds); where AMX
// is, peak/tdpbf16ps (16384 operations per tile product) and peak/tdpbssd (32768), six tiles.
//
//   cibench-microbench --benchmark_format=json > formats.json        (everything)
//   cibench-microbench --benchmark_filter='matvec/int8.*/avx2/4096x4096'
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engines/core/cpu.h"
#include "engines/core/format.h"
#include "engines/core/matrix.h"
#include "engines/core/thread_pool.h"
#include "engines/core/prune.h"

namespace cibench {
namespace {

struct Shape {
  int64_t rows, cols;
};

constexpr size_t kRotateBytes = size_t{96} << 20;
constexpr int64_t kPrefillTokens = 128;

const std::vector<float>& weights(Shape s, double sparsity, const std::string& pattern) {
  static std::map<std::string, std::vector<float>> cache;
  const std::string key = std::to_string(s.rows) + "x" + std::to_string(s.cols) + "@" +
                          std::to_string(sparsity) + pattern;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::vector<float> w(static_cast<size_t>(s.rows * s.cols));
  if (sparsity > 0) {
    w = weights(s, 0.0, "");
    prune_magnitude(w.data(), s.rows, s.cols, sparsity, pattern);
  } else {
    std::mt19937 rng(static_cast<unsigned>(s.rows * 31 + s.cols));
    std::normal_distribution<float> d(0.f, 0.02f);
    for (auto& v : w) v = d(rng);
  }
  return cache.emplace(key, std::move(w)).first->second;
}

WeightMatrix clone(const WeightMatrix& w) {
  WeightMatrix c;
  c.name = w.name;
  c.rows = w.rows;
  c.cols = w.cols;
  c.format = w.format;
  c.row_bytes = w.row_bytes;
  c.storage = AlignedBuffer(w.storage.size());
  std::memcpy(c.storage.data(), w.storage.data(), w.storage.size());
  return c;
}

void bench(benchmark::State& st, const FormatRow* f, Isa isa, Shape s, double sparsity, int64_t m,
           int threads, bool cached) {
  const std::string pattern = prune_pattern_for_format(f->name);
  const std::vector<float>& src = weights(s, sparsity, pattern);
  std::vector<WeightMatrix> ws;
  ws.push_back(pack_matrix("w", src.data(), s.rows, s.cols, *f));
  const size_t bytes = ws[0].bytes();
  const size_t copies = cached ? 1 : std::clamp<size_t>((kRotateBytes + bytes - 1) / bytes, 1, 512);
  for (size_t c = 1; c < copies; ++c) ws.push_back(clone(ws[0]));

  ThreadPool pool(threads);
  MatmulRunner run(pool, isa);
  run.reserve(m, s.cols);
  std::vector<float> x(static_cast<size_t>(m * s.cols)), y(static_cast<size_t>(m * s.rows));
  std::mt19937 rng(7);
  std::normal_distribution<float> d;
  for (auto& v : x) v = d(rng);
  // Weights repacked for the level's matrix unit (AMX tiles) or its decode (16-row blocks) are
  // made by the first prefill or matvec of each copy: made here, outside the timing, as a model's
  // are by its warm-up.
  for (const WeightMatrix& w : ws) {
    if (m > 1)
      run.matmul(w, x.data(), s.cols, m, y.data(), s.rows);
    else
      run.matvec(w, x.data(), y.data());
  }

  size_t i = 0;
  for (auto _ : st) {
    const WeightMatrix& w = ws[i++ % copies];
    if (m == 1) {
      run.matvec(w, x.data(), y.data());
    } else {
      run.matmul(w, x.data(), s.cols, m, y.data(), s.rows);
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  st.counters["weight_GBps"] =
      benchmark::Counter(static_cast<double>(bytes) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GOPs"] = benchmark::Counter(2.0 * static_cast<double>(s.rows * s.cols * m) / 1e9,
                                           benchmark::Counter::kIsIterationInvariantRate);
  st.counters["weight_MB"] = static_cast<double>(bytes) / 1e6;
  st.counters["sparsity"] = sparsity;
  st.SetLabel(std::string("kernels=") + isa_name(f->kernel_isa_at(isa)) +
              " copies=" + std::to_string(copies));
}

// Register operands: Intel's Golden Cove cores fold chains of adds of an immediate at rename
// (`add $1, %0` four times measured 13 "GHz" on a Xeon with AMX), not adds of two registers.
void peak_clock(benchmark::State& st) {
  int64_t x = 0, one = 1;
  for (auto _ : st)
    for (int i = 0; i < 1000; ++i)
      __asm__ volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0" : "+r"(x) : "r"(one));
  st.counters["GHz"] = benchmark::Counter(4000.0 / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

__attribute__((target("avx512f,avx512bf16"))) void peak_vdpbf16ps(benchmark::State& st) {
  __m512 acc[16];
  for (auto& a : acc) a = _mm512_setzero_ps();
  __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = a;
  for (auto _ : st) {
    for (int it = 0; it < 1000; ++it) {
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
      __asm__ volatile("" : "+v"(a));
    }
  }
  alignas(64) float out[16];
  for (auto& v : acc) {
    _mm512_store_ps(out, v);  // (not _mm512_reduce_add_ps: GCC 12 warns inside it)
    benchmark::DoNotOptimize(out[0]);
  }
  st.counters["GOPs"] = benchmark::Counter(16000.0 * 64 / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["G_per_s"] = benchmark::Counter(16000.0 / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// `chains` independent chains of one instruction, 1000 steps per iteration; counters: G
// instructions and GOPs per second. (AVX2 has 16 vector registers: 12 chains and the operands.)
void peak_counters(benchmark::State& st, double ops_per_instruction, int chains) {
  const double n = 1000.0 * chains;
  st.counters["GOPs"] = benchmark::Counter(n * ops_per_instruction / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["G_per_s"] = benchmark::Counter(n / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}
// One instruction per chain and step; `opnd` (an operand of the step) passes through an empty asm
// every 16 instructions so that the loop cannot be folded; the accumulators stay in registers.
#define CIBENCH_PEAK_LOOP(T, N, seed, opnd, step)           \
  T acc[N];                                                 \
  for (int i = 0; i < N; ++i) acc[i] = seed;                \
  for (auto _ : st) {                                       \
    for (int it = 0; it < 1000; ++it) {                     \
      _Pragma("GCC unroll 16") for (int i = 0; i < N; ++i)  \
          acc[i] = step;                                    \
      __asm__ volatile("" : "+v"(opnd));                    \
    }                                                       \
  }                                                         \
  for (int i = 0; i < N; ++i) __asm__ volatile("" : : "v"(acc[i]));

__attribute__((target("avx2,fma"))) void peak_fma_f32_256(benchmark::State& st) {
  __m256 b = _mm256_set1_ps(0.999f);
  const __m256 c = _mm256_set1_ps(1e-4f);
  CIBENCH_PEAK_LOOP(__m256, 12, _mm256_set1_ps(0.5f + static_cast<float>(i)), b, _mm256_fmadd_ps(acc[i], b, c))
  peak_counters(st, 16, 12);
}

__attribute__((target("avx512f"))) void peak_fma_f32_512(benchmark::State& st) {
  __m512 b = _mm512_set1_ps(0.999f);
  const __m512 c = _mm512_set1_ps(1e-4f);
  CIBENCH_PEAK_LOOP(__m512, 16, _mm512_set1_ps(0.5f + static_cast<float>(i)), b, _mm512_fmadd_ps(acc[i], b, c))
  peak_counters(st, 32, 16);
}

__attribute__((target("avx512f,avx512vnni"))) void peak_vpdpbusd(benchmark::State& st) {
  __m512i a = _mm512_set1_epi8(1);
  const __m512i b = _mm512_set1_epi8(1);
  CIBENCH_PEAK_LOOP(__m512i, 16, _mm512_set1_epi32(i), a, _mm512_dpbusd_epi32(acc[i], a, b))
  peak_counters(st, 128, 16);
}
#undef CIBENCH_PEAK_LOOP

// AMX: six C tiles (tmm0-5, 16 x 16 32-bit) from one A (tmm6) and one B (tmm7) tile, all 16 rows
// x 64 bytes, six independent chains of the tile product; operations per instruction: 16 x 16 x 32
// multiply-adds (tdpbf16ps) or 16 x 16 x 64 (tdpbssd), two operations each.
struct alignas(64) PeakTileConfig {
  uint8_t palette_id = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};
template <bool Int8>
__attribute__((target("amx-tile,amx-int8,amx-bf16"))) void peak_amx(benchmark::State& st) {
  static const PeakTileConfig cfg;
  alignas(64) static uint8_t ab[1024];  // bf16 1.0 pairs / int8 ones: finite, no growth to inf
  for (int i = 0; i < 1024; i += 2) {
    ab[i] = Int8 ? 1 : 0x80;
    ab[i + 1] = Int8 ? 1 : 0x3f;
  }
  _tile_loadconfig(&cfg);
  _tile_loadd(6, ab, 64);
  _tile_loadd(7, ab, 64);
  _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3); _tile_zero(4); _tile_zero(5);
  for (auto _ : st)
    for (int it = 0; it < 100; ++it) {
      if constexpr (Int8) {
        _tile_dpbssd(0, 6, 7); _tile_dpbssd(1, 6, 7); _tile_dpbssd(2, 6, 7);
        _tile_dpbssd(3, 6, 7); _tile_dpbssd(4, 6, 7); _tile_dpbssd(5, 6, 7);
      } else {
        _tile_dpbf16ps(0, 6, 7); _tile_dpbf16ps(1, 6, 7); _tile_dpbf16ps(2, 6, 7);
        _tile_dpbf16ps(3, 6, 7); _tile_dpbf16ps(4, 6, 7); _tile_dpbf16ps(5, 6, 7);
      }
    }
  alignas(64) static int32_t out[256];
  _tile_stored(0, out, 64);
  benchmark::DoNotOptimize(out[0]);
  _tile_release();
  const double n = 600.0, ops = Int8 ? 16.0 * 16 * 64 * 2 : 16.0 * 16 * 32 * 2;
  st.counters["GOPs"] = benchmark::Counter(n * ops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["G_per_s"] = benchmark::Counter(n / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

bool is_sparse(const std::string& n) {
  return n.find("_sparse") != std::string::npos || n.find("_bs") != std::string::npos ||
         n.find("_24") != std::string::npos;
}

void register_all() {
  benchmark::RegisterBenchmark("peak/clock", peak_clock)->Unit(benchmark::kMicrosecond)->MinTime(0.2);
  if (isa_supported(Isa::avx2))
    benchmark::RegisterBenchmark("peak/fma_f32_256", peak_fma_f32_256)->Unit(benchmark::kMicrosecond)->MinTime(0.2);
  if (isa_supported(Isa::avx512))
    benchmark::RegisterBenchmark("peak/fma_f32_512", peak_fma_f32_512)->Unit(benchmark::kMicrosecond)->MinTime(0.2);
  if (isa_supported(Isa::avx512_vnni)) {  // the level that has AVX-512 BF16 and VNNI
    benchmark::RegisterBenchmark("peak/vdpbf16ps", peak_vdpbf16ps)->Unit(benchmark::kMicrosecond)->MinTime(0.2);
    benchmark::RegisterBenchmark("peak/vpdpbusd", peak_vpdpbusd)->Unit(benchmark::kMicrosecond)->MinTime(0.2);
  }
  if (isa_supported(Isa::amx)) {  // the tile permission granted (cpu.cpp)
    benchmark::RegisterBenchmark("peak/tdpbf16ps", peak_amx<false>)->Unit(benchmark::kMicrosecond)->MinTime(0.2);
    benchmark::RegisterBenchmark("peak/tdpbssd", peak_amx<true>)->Unit(benchmark::kMicrosecond)->MinTime(0.2);
  }
  const std::vector<Shape> shapes = {{4096, 4096}, {768, 768}, {2048, 768}, {768, 2048}, {32000, 768}};
  const std::vector<Shape> decode_only = {
      {2048, 2048}, {256, 2048}, {5632, 2048}, {2048, 5632}, {32000, 2048}};
  for (const FormatRow& f : format_table()) {
    const std::string name = f.name;
    std::vector<double> sparsities = {0.0};
    if (name == "int8_24") sparsities = {0.5};
    else if (is_sparse(name)) sparsities = {0.5, 0.6, 0.7, 0.8, 0.9, 0.95};
    Isa prev_kernels = Isa::generic;
    bool first = true;
    for (Isa isa : supported_isas()) {
      const Isa ran = f.kernel_isa_at(isa);
      if (!first && ran == prev_kernels) continue;  // same kernels as the level below
      first = false;
      prev_kernels = ran;
      for (double sp : sparsities) {
        std::string fname = name;
        if (is_sparse(name)) fname += "@" + std::to_string(static_cast<int>(sp * 100 + 0.5));
        std::vector<std::pair<Shape, int64_t>> runs;  // (shape, tokens)
        for (Shape s : shapes)
          for (int64_t m : {int64_t{1}, kPrefillTokens}) runs.push_back({s, m});
        if (!is_sparse(name))
          for (Shape s : decode_only) {
            runs.push_back({s, 1});
            if (name == "bf16" || name == "f32") runs.push_back({s, kPrefillTokens});
          }
        for (const auto& [s, m] : runs)
          for (int threads : {1, 2}) {
            if (threads == 2 && !(s.rows == 4096 && s.cols == 4096)) continue;
            const std::string bname = std::string(m == 1 ? "matvec" : "matmul128") + "/" + fname +
                                      "/" + isa_name(isa) + "/" + std::to_string(s.rows) + "x" +
                                      std::to_string(s.cols) + "/t" + std::to_string(threads);
            auto* b = benchmark::RegisterBenchmark(bname.c_str(), bench, &f, isa, s, sp, m, threads, false);
            if (threads > 1) b->UseRealTime();
            b->Unit(benchmark::kMicrosecond)->MinTime(0.2);
          }
        const Shape c{1024, 768};
        const std::string cname = "matvec-cached/" + fname + "/" + isa_name(isa) + "/" +
                                  std::to_string(c.rows) + "x" + std::to_string(c.cols) + "/t1";
        benchmark::RegisterBenchmark(cname.c_str(), bench, &f, isa, c, sp, int64_t{1}, 1, true)
            ->Unit(benchmark::kMicrosecond)
            ->MinTime(0.2);
      }
    }
  }
}

}  // namespace
}  // namespace cibench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  cibench::register_all();
  benchmark::AddCustomContext("cpu_model", cibench::cpu_features().model_name);
  benchmark::AddCustomContext("cpu_flags", cibench::cpu_features().flags_string());
  benchmark::AddCustomContext("best_isa", cibench::isa_name(cibench::best_supported_isa()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
