// Micro-benchmarks of the decode attention kernels: one token's attention over all 12 heads of a
// 110M-class layer (head_dim 64, rows of kv_dim 768 in the cache) at 128, 512 and 1024 cached
// positions, at every ISA level with its own kernels:
//   attention/rowwise_f32   the per-position kernel (one dot + horizontal sum, one axpy each)
//   attention/blocked_f32   8 positions per step (shared reductions, 8 value rows per pass)
//   attention/blocked_f16   the same over an IEEE-half cache (KvMode::preallocated_f16)
// Every iteration uses the next of enough copies of the cache to exceed 96 MB (the same number of
// copies for the f32 and f16 caches), so the cache streams from DRAM, as a whole model's cache
// at long context does (110M at 1024 positions: 75 MB in f32), not from the 32 MB L3. The cache
// lives in AlignedBuffers as in LlamaSession.
// Counters: positions_per_s = head-positions scored and summed per second; copies.
//
//   cibench-microbench --benchmark_filter='attention/.*/avx2/hd64/n512'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engines/core/buffer.h"
#include "engines/core/cpu.h"
#include "engines/kernels/kernels.h"

namespace cibench {
namespace {

constexpr int64_t kHeads = 12, kHeadDim = 64, kKvDim = kHeads * kHeadDim;
constexpr size_t kRotateBytes = size_t{96} << 20;

enum class AttKind { rowwise_f32, blocked_f32, blocked_f16 };

void bench_attention(benchmark::State& st, Isa isa, AttKind kind, int64_t n_pos, bool head_major) {
  const KernelTable& K = kernels_for(isa);
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.f, 1.f);
  const size_t elems = static_cast<size_t>(n_pos * kKvDim);
  const size_t copies = std::clamp<size_t>(kRotateBytes / (2 * elems * sizeof(float)) + 1, 1, 512);
  // Cache buffers as the session allocates them (AlignedBuffer: huge pages where the system
  // allows, so rows kv_dim apart do not each cost a TLB miss).
  const size_t esize = kind == AttKind::blocked_f16 ? sizeof(uint16_t) : sizeof(float);
  AlignedBuffer kbuf(copies * elems * esize), vbuf(copies * elems * esize);
  std::vector<float> q(kKvDim), x(elems);
  for (auto& v : q) v = d(rng);
  for (size_t c = 0; c < 2 * copies; ++c) {
    for (auto& v : x) v = d(rng);
    AlignedBuffer& buf = c % 2 ? vbuf : kbuf;
    if (kind == AttKind::blocked_f16)
      K.f32_to_f16(x.data(), buf.as<uint16_t>() + c / 2 * elems, static_cast<int64_t>(elems));
    else
      std::copy(x.begin(), x.end(), buf.as<float>() + c / 2 * elems);
  }
  const float* kc = kbuf.as<float>();
  const float* vc = vbuf.as<float>();
  const uint16_t* kh = kbuf.as<uint16_t>();
  const uint16_t* vh = vbuf.as<uint16_t>();
  std::vector<float> att(static_cast<size_t>(n_pos)), out(kKvDim);
  const float scale = 1.f / std::sqrt(static_cast<float>(kHeadDim));
  size_t it = 0;
  for (auto _ : st) {
    const size_t base = (it++ % copies) * elems;
    for (int64_t h = 0; h < kHeads; ++h) {
      const int64_t o = static_cast<int64_t>(base) + h * kHeadDim * (head_major ? n_pos : 1);
      const int64_t stride = head_major ? kHeadDim : kKvDim;
      switch (kind) {
        case AttKind::rowwise_f32:
          K.attention_rowwise(q.data() + h * kHeadDim, kc + o, vc + o, n_pos, kHeadDim, stride,
                              scale, att.data(), out.data() + h * kHeadDim);
          break;
        case AttKind::blocked_f32:
          K.attention(q.data() + h * kHeadDim, kc + o, vc + o, 0, n_pos, kHeadDim, stride,
                      scale, 0.0f, att.data(), out.data() + h * kHeadDim);
          break;
        case AttKind::blocked_f16:
          K.attention_f16(q.data() + h * kHeadDim, kh + o, vh + o, 0, n_pos, kHeadDim,
                          stride, scale, 0.0f, att.data(), out.data() + h * kHeadDim);
          break;
      }
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  st.counters["positions_per_s"] = benchmark::Counter(static_cast<double>(kHeads * n_pos),
                                                      benchmark::Counter::kIsIterationInvariantRate);
  st.counters["copies"] = static_cast<double>(copies);
}

bool register_attention() {
  const std::pair<AttKind, const char*> kinds[] = {{AttKind::rowwise_f32, "rowwise_f32"},
                                                   {AttKind::blocked_f32, "blocked_f32"},
                                                   {AttKind::blocked_f16, "blocked_f16"}};
  const KernelTable* prev = nullptr;
  for (Isa isa : supported_isas()) {
    const KernelTable* K = &kernels_for(isa);
    if (K == prev) continue;  // the same table as the level below
    prev = K;
    for (int64_t n_pos : {int64_t{128}, int64_t{512}, int64_t{1024}})
      for (const auto& [kind, name] : kinds)
        for (bool head_major : {false, true}) {
          const std::string bname = std::string("attention/") + name + "/" + isa_name(isa) +
                                    "/hd" + std::to_string(kHeadDim) + "/n" + std::to_string(n_pos) +
                                    (head_major ? "/heads" : "/rows");
          benchmark::RegisterBenchmark(bname.c_str(), bench_attention, isa, kind, n_pos, head_major)
              ->Unit(benchmark::kMicrosecond)
              ->MinTime(0.2);
        }
  }
  return true;
}

const bool kRegistered = register_attention();

}  // namespace
}  // namespace cibench
