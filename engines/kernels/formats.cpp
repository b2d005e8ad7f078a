// The rows of the weight-format table. Each row's pack/unpack is the reference; its kernels per
// ISA are tested against its generic kernels and against unpack + f32 math.
#include <cstring>
#include <string>

#include "engines/core/cpu.h"
#include "engines/core/error.h"
#include "engines/core/format.h"
#include "engines/kernels/fmt_common.h"
#include "engines/kernels/kernels.h"

namespace cibench {
namespace {

// ---- f32 -----------------------------------------------------------------------------------
size_t f32_row_bytes(int64_t k) { return static_cast<size_t>(k) * sizeof(float); }
void f32_pack(const float* src, int64_t k, uint8_t* dst) { std::memcpy(dst, src, k * 4); }
void f32_unpack(const uint8_t* src, int64_t k, float* dst) { std::memcpy(dst, src, k * 4); }

template <Isa L>
void f32_matvec(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, float* y,
                int64_t row_begin, int64_t row_end) {
  const int64_t ldw = static_cast<int64_t>(row_bytes / sizeof(float));
  kernels_for(L).matvec_f32(reinterpret_cast<const float*>(w) + row_begin * ldw, ldw,
                            static_cast<const float*>(x), y, row_end - row_begin, k);
}

template <Isa L>
void f32_matmul(const uint8_t* w, size_t row_bytes, int64_t k, const void* x, size_t x_row_bytes,
                int64_t m, float* y, int64_t ldy, int64_t row_begin, int64_t row_end) {
  const int64_t ldw = static_cast<int64_t>(row_bytes / sizeof(float));
  kernels_for(L).matmul_f32(reinterpret_cast<const float*>(w) + row_begin * ldw, ldw,
                            static_cast<const float*>(x),
                            static_cast<int64_t>(x_row_bytes / sizeof(float)), y + row_begin, ldy,
                            m, row_end - row_begin, k);
}

template <Isa L>
constexpr FormatKernels f32_kernels() {
  return FormatKernels{f32_matvec<L>, f32_matmul<L>};
}

std::vector<FormatRow> build_table() {
  std::vector<FormatRow> t;
  {
    FormatRow r{};
    r.name = "f32";
    r.description = "IEEE float32, the reference precision";
    r.block_size = 1;
    r.bytes_per_block = 4;
    r.bits_per_weight = 32;
    r.act = ActType::f32;
    r.row_bytes = f32_row_bytes;
    r.pack_row = f32_pack;
    r.unpack_row = f32_unpack;
    // (the levels the process may use only: kernels_for() refuses the others)
    r.kernels[static_cast<int>(Isa::generic)] = f32_kernels<Isa::generic>();
    if (isa_supported(Isa::avx2)) r.kernels[static_cast<int>(Isa::avx2)] = f32_kernels<Isa::avx2>();
    if (isa_supported(Isa::avx512)) r.kernels[static_cast<int>(Isa::avx512)] = f32_kernels<Isa::avx512>();
    t.push_back(r);
  }
  fmt::append_packed_rows(t);  // bf16, int8, w8a8, int4 group-wise, sparse (fmt_pack.cpp)
  return t;
}

}  // namespace

const FormatKernels& FormatRow::kernels_at(Isa isa) const {
  return kernels[static_cast<int>(kernel_isa_at(isa))];
}

Isa FormatRow::kernel_isa_at(Isa isa) const {
  for (int i = static_cast<int>(isa); i > 0; --i)
    if (kernels[i].matvec) return static_cast<Isa>(i);
  return Isa::generic;
}

void (*FormatRow::quantizer_at(Isa isa) const)(const float*, int64_t, void*) {
  const FormatKernels& k = kernels_at(isa);
  if (k.act_variant) return k.quantize ? k.quantize : k.act_variant->convert;
  for (int i = static_cast<int>(isa); i > 0; --i)
    if (kernels[i].quantize) return kernels[i].quantize;
  return quantize_act;
}

ActType FormatRow::act_at(Isa isa) const {
  const FormatKernels& k = kernels_at(isa);
  return k.act_variant ? k.act_variant->type : act;
}

size_t FormatRow::act_row_bytes_at(Isa isa, int64_t k) const {
  const FormatKernels& kern = kernels_at(isa);
  if (kern.act_variant) return kern.act_variant->row_bytes(k);
  return act == ActType::f32 ? 0 : act_row_bytes(k);
}

const char* act_type_name(ActType a) {
  switch (a) {
    case ActType::f32: return "f32";
    case ActType::int8_per_row: return "int8";
    case ActType::int8_per_block: return "int8";
    case ActType::bf16: return "bf16";
  }
  return "unknown";
}

// The rows measured faster with the AVX2 matvec on Zen 4 (docs/formats.md); w8a7 was not
// measured, and int4_g64_a8 / int4_g128_a8 run their own row streams faster: they keep their own.
static bool avx2_matvec_preferred(const FormatRow& r) {
  const std::string n = r.name;
  return n == "w8a8" || n == "w8a8_static" || n == "int8_g32_a8" || n == "int4_g32_a8";
}

// The weight-only rows (f32 activations, weights decoded in registers) whose whole AVX2 kernel
// set measured faster on Zen 4, decode and prefill: int8 and the int4 group-wise rows.
static bool avx2_kernels_preferred(const FormatRow& r) {
  const std::string n = r.name;
  return r.act == ActType::f32 && (n == "int8" || n.rfind("int4_g", 0) == 0);
}

// Whether row r's kernels at `level` may be replaced by its AVX2 ones: only a level with kernels
// of its own and the row's activations (the AVX2 kernels then take the same activation bytes; the
// int8 rows: the same exact int32 sums).
static bool avx2_swappable(const FormatRow& r, Isa level) {
  const FormatKernels& k = r.kernels[static_cast<int>(level)];
  const FormatKernels& avx2 = r.kernels[static_cast<int>(Isa::avx2)];
  return k.matvec && avx2.matvec && !k.act_variant && !avx2.act_variant;
}

static void prefer_avx2_kernels(std::vector<FormatRow>& t) {
  for (FormatRow& r : t) {
    const FormatKernels& avx2 = r.kernels[static_cast<int>(Isa::avx2)];
    for (Isa level : {Isa::avx512, Isa::avx512_vnni}) {
      if (!avx2_swappable(r, level)) continue;
      FormatKernels& k = r.kernels[static_cast<int>(level)];
      if (avx2_matvec_preferred(r)) {  // with its decode layout where it has one (int8_g32_a8, int4_g32_a8)
        k.matvec = avx2.matvec;
        k.decode_bytes = avx2.decode_bytes;
        k.decode_pack = avx2.decode_pack;
        k.matvec_decode = avx2.matvec_decode;
      }
      if (avx2_kernels_preferred(r)) k = avx2;
    }
  }
}

// On an Intel Xeon with AVX-512 and AMX (full-width datapath), decode tok/s, one thread, two
// alternating rounds:
// - int8_g32_a8's AVX2 matvec measured faster than the AVX-512 one at both model sizes (`--isa
//   avx2` / `--isa amx`: TinyStories-110M 120.6-129.1 / 93.7-109.0, TinyLlama-1.1B 11.2-12.0 /
//   10.4-10.6); w8a8 was faster with it at 1.1B (13.8-13.9 / 12.6-12.9) but slower at 110M
//   (117-123 / 138-149), so it keeps its own.
// - int4_g32_a8's avx512_vnni matvec over 16 long row streams (as G = 64 and 128 everywhere)
//   measured faster than over 16 adjacent rows (1.1B 20.9-21.0 / 18.7-19.0, 110M 321-332 /
//   293-308), where on Zen 4 it was 2x slower (fmt_int4a8_512.inc); those row kernels now serve
//   the rows the decode layout's whole 16-row blocks leave (fmt_decode_512.inc).
// - bf16's avx512_vnni prefill on f32 FMAs (bf16_fma_matmul: vdpbf16ps runs at half the FMA rate
//   on this core, twice it on Zen 4 / 5), TinyStories-110M, 128 tokens, `--isa avx512_vnni`,
//   tok/s vdpbf16ps / f32 FMAs: one thread 570 / 747, 556 / 718; two 1092 / 1304, 1060 / 1335.
static void intel_matvecs(std::vector<FormatRow>& t) {
  for (FormatRow& r : t) {
    const std::string n = r.name;
    if (n == "int8_g32_a8") {
      for (Isa level : {Isa::avx512, Isa::avx512_vnni})
        if (avx2_swappable(r, level))
          r.kernels[static_cast<int>(level)].matvec = r.kernels[static_cast<int>(Isa::avx2)].matvec;
    } else if (n == "int4_g32_a8") {
      FormatKernels& k = r.kernels[static_cast<int>(Isa::avx512_vnni)];
      if (const fmt::FormatEntries* vnni = fmt::format_entries(Isa::avx512_vnni); vnni && k.matvec)
        k.matvec = vnni->int4g32a8_streams_matvec;
    } else if (n == "bf16") {
      FormatKernels& k = r.kernels[static_cast<int>(Isa::avx512_vnni)];
      if (const fmt::FormatEntries* vnni = fmt::format_entries(Isa::avx512_vnni); vnni && k.matmul)
        k.matmul = vnni->bf16_fma_matmul;
    }
  }
}

// Decode from the rows laid out in 16-row blocks, one stream (fmt_decode_512.inc), where AVX-512
// runs full width (Intel; AMD from Zen 5): at avx512_vnni w8a8, w8a8_static, w8a7, int8_g32_a8 and
// the int4 _a8 rows (the amx level has it on every CPU: AMX CPUs are Intel's; its int8_g32_a8 and
// int4_g32_a8 rows decode with avx512_vnni's row matvec where no whole block covers them, as the
// layout's kernel does), at avx512 the int4 _a8 rows (fmt_avx512.cpp) and the int4 weight-only
// rows, which avx512_vnni and amx fall back to (fmt_int4_decode_512.inc). Set after intel_matvecs,
// whose row matvecs serve the rows the whole blocks leave. Measured on AMD Zen 5 ("AMD EPYC", family 0x1A), TinyStories-110M decode,
// one thread, tok/s without / with the layout, two alternating rounds: int4_g32 93-116 / 356-361,
// int4_g128 210-224 / 370-388, int4_g128_a8 147-191 / 402-524, int4_g32_a8 290-381 / 378-494,
// int8_g32_a8 210-221 / 230-253, w8a8 239-264 / 250-257 (bf16 there keeps vdpbf16ps: prefill
// 1779-1849 tok/s against 1012-1076 on f32 FMAs).
// The Spec of an int4 weight-only row (int4_gG[_asym], f32 activations), or Kind::f32_sparse for
// any other row.
static fmt::Spec int4_weight_only_spec(const FormatRow& r) {
  const std::string n = r.name;
  if (r.act != ActType::f32 || n.rfind("int4_g", 0) != 0) return fmt::Spec{fmt::Kind::f32_sparse};
  const bool asym = n.size() > 5 && n.compare(n.size() - 5, 5, "_asym") == 0;
  return fmt::Spec{fmt::Kind::int4, static_cast<int>(r.block_size), asym};  // block_size: the group
}

// The Spec of a row with int8 activations that has a decode layout (int8_g32_a8, w8a8,
// w8a8_static, w8a7, int4_gG_a8), or Kind::f32_sparse for any other row.
static fmt::Spec int8_act_layout_spec(const FormatRow& r) {
  const std::string n = r.name;
  return n == "int8_g32_a8"                 ? fmt::Spec{fmt::Kind::q8_a8}
         : n == "w8a8" || n == "w8a8_static" ? fmt::Spec{fmt::Kind::w8a8}
         : n == "w8a7"                       ? fmt::Spec{fmt::Kind::w8a7}
         : n == "int4_g32_a8"                ? fmt::Spec{fmt::Kind::int4_a8, 32}
         : n == "int4_g64_a8"                ? fmt::Spec{fmt::Kind::int4_a8, 64}
         : n == "int4_g128_a8"               ? fmt::Spec{fmt::Kind::int4_a8, 128}
                                             : fmt::Spec{fmt::Kind::f32_sparse};
}

static void decode_layouts(std::vector<FormatRow>& t) {
  const fmt::FormatEntries* avx512 = fmt::format_entries(Isa::avx512);
  const fmt::FormatEntries* avx512vnni = fmt::format_entries(Isa::avx512_vnni);
  for (FormatRow& r : t) {
    const fmt::Spec spec = int8_act_layout_spec(r);
    // the int4 _a8 rows at avx512 (CPUs without VNNI) on vpmaddubsw: Zen 5 at the forced avx512
    // level, TinyStories-110M decode, tok/s without / with, two alternating rounds: int4_g32_a8
    // one thread 281-316 / 573-579, two 479-516 / 704-923; int4_g128_a8 354-359 / 598-600 and
    // 606-646 / 737-957
    if (spec.kind == fmt::Kind::int4_a8) {
      FormatKernels& k = r.kernels[static_cast<int>(Isa::avx512)];
      if (avx512 && k.matvec) avx512->add_decode_layout(spec, k);
    }
    if (spec.kind != fmt::Kind::f32_sparse) {
      FormatKernels& vnni = r.kernels[static_cast<int>(Isa::avx512_vnni)];
      if (avx512vnni && vnni.matvec) avx512vnni->add_decode_layout(spec, vnni);
      // w8a8's prefill reads the same copy in place of its per-call repack (matmul_tiles): on Zen 5,
      // binaries alternating three rounds, one thread, DistilBERT (`cibench classify --bench`) 128
      // tokens 15.0-15.4 -> 14.4-14.6 ms, 16 tokens 2.77-2.82 -> 2.53-2.70; TinyLlama-1.1B prefill
      // 385-400 -> 429-435 tok/s (two rounds). Without a software prefetch of the next chunk it was
      // slower (DistilBERT 16 tokens 2.4-2.5 -> 3.8-4.1 ms): fmt_avx512vnni.cpp, int8_gemm_vnni.
      // w8a7's too, from 8 tokens: DistilBERT 64 tokens 6.90 -> 6.02 ms, 128 13.58 -> 12.48
      // (five rounds, one thread, with its quantiser at 512 bits).
      if (avx512vnni && vnni.matvec && (spec.kind == fmt::Kind::w8a8 || spec.kind == fmt::Kind::w8a7)) {
        const bool a7 = spec.kind == fmt::Kind::w8a7;
        vnni.tiles_bytes = vnni.decode_bytes;
        vnni.tiles_pack = vnni.decode_pack;
        vnni.matmul_tiles = a7 ? avx512vnni->w8a7_matmul_layout : avx512vnni->w8a8_matmul_layout;
        vnni.tiles_min_tokens = a7 ? fmt::kW8a7GemmMinTokens : fmt::kW8a8GemmMinTokens;  // where each GEMM takes over
      }
      FormatKernels& amx = r.kernels[static_cast<int>(Isa::amx)];
      if (amx.matvec) amx.matvec = vnni.matvec;
    }
    const fmt::Spec s4 = int4_weight_only_spec(r);
    if (s4.kind == fmt::Kind::int4) {
      FormatKernels& k = r.kernels[static_cast<int>(Isa::avx512)];
      if (avx512 && k.matvec) avx512->add_decode_layout(s4, k);
    }
  }
}

// The int4 weight-only rows decode at the AVX2 level from the same 16-row blocks, read at 256
// bits (fmt_avx2.cpp), on every CPU: on AMD Zen 5 at the forced avx2 level, TinyStories-110M
// decode, tok/s without / with the layout, two alternating rounds (a binary with a temporary
// switch): int4_g32 one thread 176-179 / 286, two 310-330 / 474-484; int4_g128 one thread 210-218
// / 258-262, two 364-404 / 425-439; cibench-microbench matvec 38-43 / 64-69 GOPs (G = 32) and
// 46-53 / 60-65 (G = 128). On CPUs whose AVX-512 runs on a split datapath (prefer_avx2_kernels:
// Zen 4) the avx512 levels take it with the rest of the AVX2 set (unmeasured there).
// So do the int4_gG_a8 rows and int8_g32_a8 (each row's exact int32 sum in its own lane where the
// row kernels reduce 8 rows' vectors with hadds and gather their scales one by one): Zen 5, forced
// avx2, TinyStories-110M decode, one thread, tok/s 92ecba2's parent / 92ecba2 alternating:
// int4_g32_a8 252-299 / 352-455 (seven rounds), int4_g128_a8 342-400 / 447-473 (five),
// int8_g32_a8 185-204 / 219-258 (two); on Zen 4 the avx512 levels take it with those rows' AVX2
// matvec (prefer_avx2_kernels; unmeasured there).
static void avx2_decode_layouts(std::vector<FormatRow>& t) {
  const fmt::FormatEntries* avx2 = fmt::format_entries(Isa::avx2);
  if (!avx2) return;
  for (FormatRow& r : t) {
    const fmt::Spec a8 = int8_act_layout_spec(r);  // its AVX2 kernels: int8_g32_a8 and int4_gG_a8
    const fmt::Spec s = a8.kind == fmt::Kind::q8_a8 || a8.kind == fmt::Kind::int4_a8 ? a8 : int4_weight_only_spec(r);
    FormatKernels& k = r.kernels[static_cast<int>(Isa::avx2)];
    if (s.kind != fmt::Kind::f32_sparse && k.matvec) avx2->add_decode_layout(s, k);
  }
}

// AMD's full-width AVX-512 (Zen 5): bf16's avx512_vnni prefill on blocks of 32 tokens in 2 x 12
// register tiles (fmt_avx512vnni.cpp, bf16_matmul_t): matmul128 at 442-473 GOPs against 389-469 in
// the 4 x 6 tiles of 64-token blocks that Zen 4 ran fastest; TinyStories-110M prefill (128 tokens,
// two alternating rounds, tok/s 64 / 32-token blocks) one thread 2015 / 2075, 1941 / 2196, two
// 3712 / 4253, 3883 / 4221; TinyLlama-1.1B one thread 219 / 215, 217 / 227.
static void amd_full_width_kernels(std::vector<FormatRow>& t) {
  const fmt::FormatEntries* vnni = fmt::format_entries(Isa::avx512_vnni);
  if (!vnni) return;
  for (FormatRow& r : t)
    if (std::string(r.name) == "bf16") {
      FormatKernels& k = r.kernels[static_cast<int>(Isa::avx512_vnni)];
      if (k.matmul) k.matmul = vnni->bf16_matmul_32_token_blocks;
    }
}

namespace fmt {
// How far ahead (bytes) the decode layout's kernels prefetch into L2 (fmt_decode_layout.h): 3 KB
// measured best on the Intel Xeon (fmt_decode_512.inc), 6 KB on AMD Zen 5 (family 0x1A):
// `cibench-microbench` matvec, 2048 x 768 and 5632 x 2048, one thread, three alternating rounds at
// 3 / 6 / 9 / 12 KB, GB/s of weights 3 KB -> 6 KB: w8a8 at avx512_vnni ~45 -> ~48, int4_g32_a8
// ~42 -> ~45, int8_g32_a8 ~44 -> ~46, int4_g32 at avx512 ~32.5 -> ~35.5 (9 KB about as 6, 12 KB
// below it; none at all 30-31 for int4_g32). Other CPUs keep 3 KB (unmeasured). A constant of this
// baseline file, initialised at start-up: the kernels read it as a plain load.
extern const int64_t kDecodePrefetchBytes =
    cpu_features().vendor == "AuthenticAMD" && cpu_features().family == 0x1A ? 6144 : 3072;
}  // namespace fmt

const std::vector<FormatRow>& format_table() {
  static const std::vector<FormatRow> t = [] {
    std::vector<FormatRow> v = build_table();
    const CpuFeatures& cpu = cpu_features();
    avx2_decode_layouts(v);
    if (cpu.avx512_split_datapath()) {
      prefer_avx2_kernels(v);
    } else if (cpu.avx512_full_width()) {
      if (cpu.vendor == "GenuineIntel") intel_matvecs(v);
      if (cpu.vendor == "AuthenticAMD") amd_full_width_kernels(v);
      decode_layouts(v);
    }
    return v;
  }();
  return t;
}

const FormatRow& format_by_name(const std::string& name) {
  std::string known;
  for (const FormatRow& r : format_table()) {
    if (name == r.name) return r;
    known += known.empty() ? "" : ", ";
    known += r.name;
  }
  throw Error(str("unknown weight format '", name, "' (known: ", known, ")"));
}

}  // namespace cibench
