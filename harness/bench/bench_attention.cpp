// Micro-benchmarks of the decode attention kernels: one token's attention over all 12 heads of a
// 110M-class layer (head_dim 64, rows of kv_dim 768 in the cache) at 128, 512 and 1024 cached
// positions, at every ISA level with its own kernels:
//   attention/rowwise_f32   the per-position kernel (one dot + horizontal sum, one axpy each)
//   attention/blocked_f32   8 positions per step (shared reductions, 8 value rows per pass)
//   attention/blocked_f16   the same over an IEEE-half cache (KvMode::preallocated_f16)
// Counters: positions_per_s = head-positions scored and summed per second.
//
//   cibench-microbench --benchmark_filter='attention/.*/avx2/hd64/n512'
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engines/core/cpu.h"
#include "engines/kernels/kernels.h"

namespace cibench {
namespace {

constexpr int64_t kHeads = 12, kHeadDim = 64, kKvDim = kHeads * kHeadDim;

enum class AttKind { rowwise_f32, blocked_f32, blocked_f16 };

void bench_attention(benchmark::State& st, Isa isa, AttKind kind, int64_t n_pos) {
  const KernelTable& K = kernels_for(isa);
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> q(kKvDim), kc(static_cast<size_t>(n_pos * kKvDim)), vc(kc.size());
  for (auto& x : q) x = d(rng);
  for (auto& x : kc) x = d(rng);
  for (auto& x : vc) x = d(rng);
  std::vector<uint16_t> kh(kc.size()), vh(vc.size());
  K.f32_to_f16(kc.data(), kh.data(), static_cast<int64_t>(kc.size()));
  K.f32_to_f16(vc.data(), vh.data(), static_cast<int64_t>(vc.size()));
  std::vector<float> att(static_cast<size_t>(n_pos)), out(kKvDim);
  const float scale = 1.f / std::sqrt(static_cast<float>(kHeadDim));
  for (auto _ : st) {
    for (int64_t h = 0; h < kHeads; ++h) {
      const int64_t o = h * kHeadDim;
      switch (kind) {
        case AttKind::rowwise_f32:
          K.attention_rowwise(q.data() + o, kc.data() + o, vc.data() + o, n_pos, kHeadDim, kKvDim,
                              scale, att.data(), out.data() + o);
          break;
        case AttKind::blocked_f32:
          K.attention(q.data() + o, kc.data() + o, vc.data() + o, n_pos, kHeadDim, kKvDim, scale,
                      att.data(), out.data() + o);
          break;
        case AttKind::blocked_f16:
          K.attention_f16(q.data() + o, kh.data() + o, vh.data() + o, n_pos, kHeadDim, kKvDim,
                          scale, att.data(), out.data() + o);
          break;
      }
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  st.counters["positions_per_s"] = benchmark::Counter(static_cast<double>(kHeads * n_pos),
                                                      benchmark::Counter::kIsIterationInvariantRate);
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
      for (const auto& [kind, name] : kinds) {
        const std::string bname = std::string("attention/") + name + "/" + isa_name(isa) + "/hd" +
                                  std::to_string(kHeadDim) + "/n" + std::to_string(n_pos);
        benchmark::RegisterBenchmark(bname.c_str(), bench_attention, isa, kind, n_pos)
            ->Unit(benchmark::kMicrosecond)
            ->MinTime(0.2);
      }
  }
  return true;
}

const bool kRegistered = register_attention();

}  // namespace
}  // namespace cibench
