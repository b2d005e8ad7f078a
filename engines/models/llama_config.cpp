#include "engines/models/llama_config.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "engines/core/error.h"

namespace cibench {

FileError unaccounted_tensors(const std::string& file, const std::string& config,
                              const std::vector<std::string>& names) {
  return FileError(file, str(names.size(), " tensor", names.size() == 1 ? "" : "s", " that ", config,
                             " does not account for, e.g. '", names.front(), "'",
                             names.size() > 1 ? str(" and '", names.back(), "'") : std::string(),
                             ": the config and the weights disagree"));
}

int64_t LlamaConfig::parameter_count() const {
  const int64_t d = dim, h = hidden_dim, q = q_dim(), kv = kv_dim(), v = vocab_size;
  int64_t per_layer = 2 * d + 2 * q * d + 2 * kv * d + 3 * d * h;
  if (qkv_bias) per_layer += q + 2 * kv;
  if (o_bias) per_layer += d;
  if (qk_norm) per_layer += 2 * head_dim();
  if (post_norms) per_layer += 2 * d;
  return v * d + n_layers * per_layer + d + (tied_output ? 0 : v * d);
}

namespace {
const char* const kRopeScalingTypes[] = {"none", "linear", "dynamic", "llama3", "yarn", "factors", "longrope"};
}

void LlamaConfig::validate(const std::string& origin) const {
  auto bad = [&](const std::string& what) { throw FileError(origin, "invalid model config: " + what); };
  if (dim <= 0 || hidden_dim <= 0 || n_layers <= 0 || n_heads <= 0 || n_kv_heads <= 0 ||
      vocab_size <= 0 || seq_len <= 0)
    bad(str("all sizes must be positive (dim=", dim, " hidden_dim=", hidden_dim,
            " n_layers=", n_layers, " n_heads=", n_heads, " n_kv_heads=", n_kv_heads,
            " vocab_size=", vocab_size, " seq_len=", seq_len, ")"));
  if (dim > (1 << 16) || hidden_dim > (1 << 18) || n_layers > 1024 || vocab_size > (1 << 22) ||
      seq_len > (1 << 20) || n_heads > dim || head_size < 0 || head_size > 4096)
    bad(str("sizes out of range (dim=", dim, " hidden_dim=", hidden_dim, " n_layers=", n_layers,
            " n_heads=", n_heads, " head_dim=", head_size, " vocab_size=", vocab_size,
            " seq_len=", seq_len, ")"));
  if (head_size == 0 && dim % n_heads != 0)
    bad(str("dim ", dim, " is not a multiple of n_heads ", n_heads, " (and no explicit head_dim)"));
  if (n_heads % n_kv_heads != 0)
    bad(str("n_heads ", n_heads, " is not a multiple of n_kv_heads ", n_kv_heads));
  if (head_dim() % 2 != 0) bad(str("head_dim ", head_dim(), " must be even for RoPE"));
  if (rotary_dim < 0 || rotary_dim > head_dim() || rot_dim() % 2 != 0 || rot_dim() < 2)
    bad(str("rotary width ", rotary_dim, " must be even and in [2, head_dim ", head_dim(), "]"));
  if (!(norm_eps > 0) || !std::isfinite(norm_eps)) bad(str("norm_eps must be > 0, got ", norm_eps));
  if (!(rope_theta > 0) || !std::isfinite(rope_theta))
    bad(str("rope_theta must be > 0, got ", rope_theta));
  if (!rope_layers.empty() && rope_layers.size() != static_cast<size_t>(n_layers))
    bad(str("the per-layer RoPE list has ", rope_layers.size(), " entries for ", n_layers, " layers"));
  if (!attn_window.empty() && attn_window.size() != static_cast<size_t>(n_layers))
    bad(str("the per-layer attention window list has ", attn_window.size(), " entries for ", n_layers, " layers"));
  for (int w : attn_window)
    if (w < 0) bad(str("attention window ", w, " must be >= 0 (0 = global)"));
  if (rope_local_theta < 0 || !std::isfinite(rope_local_theta))
    bad(str("local RoPE base must be >= 0, got ", rope_local_theta));
  if (attn_softcap < 0 || !std::isfinite(attn_softcap)) bad(str("attention soft-cap must be >= 0, got ", attn_softcap));
  if (final_softcap < 0 || !std::isfinite(final_softcap)) bad(str("final logit soft-cap must be >= 0, got ", final_softcap));
  if (query_pre_attn_scalar < 0 || !std::isfinite(query_pre_attn_scalar))
    bad(str("query_pre_attn_scalar must be >= 0, got ", query_pre_attn_scalar));
  if (ffn_act != "silu" && ffn_act != "gelu_tanh")
    bad(str("unknown feed-forward activation '", ffn_act, "' (known: silu, gelu_tanh)"));
  if (embed_scale < 0 || !std::isfinite(embed_scale)) bad(str("embedding scale must be >= 0, got ", embed_scale));
  const RopeScaling& r = rope_scaling;
  bool known = false;
  std::string list;
  for (const char* t : kRopeScalingTypes) {
    known = known || r.type == t;
    list += (list.empty() ? "" : ", ") + std::string(t);
  }
  if (!known) bad(str("unknown RoPE scaling type '", r.type, "' (known: ", list, ")"));
  if (r.type != "none" && r.type != "factors" && (!(r.factor > 0) || !std::isfinite(r.factor)))
    bad(str("RoPE scaling factor must be > 0, got ", r.factor));
  if (r.original_max_position < 0) bad(str("original_max_position_embeddings must be >= 0, got ", r.original_max_position));
  if (r.type == "llama3" && !(r.high_freq_factor > r.low_freq_factor && r.low_freq_factor > 0))
    bad(str("llama3 RoPE scaling needs high_freq_factor > low_freq_factor > 0, got ", r.high_freq_factor,
            " and ", r.low_freq_factor));
  if (r.type == "dynamic" && rot_dim() <= 2) bad("dynamic RoPE scaling needs a rotary width above 2");
  auto check_factors = [&](const std::vector<float>& v, const char* what) {
    if (v.size() != static_cast<size_t>(rot_dim() / 2))
      bad(str("RoPE ", what, ": ", v.size(), " values for ", rot_dim() / 2, " rotary pairs"));
    for (float f : v)
      if (!(f > 0) || !std::isfinite(f)) bad(str("RoPE ", what, " value ", f, " is not positive and finite"));
  };
  if (r.type == "factors") check_factors(r.freq_factors, "frequency factors");
  if (r.type == "longrope") {
    check_factors(r.long_factor, "long_factor");
    check_factors(r.short_factor, "short_factor");
    if (r.original_max_position <= 0) bad("longrope RoPE scaling needs original_max_position_embeddings");
  }
  if (r.attention_factor < 0 || !std::isfinite(r.attention_factor))
    bad(str("RoPE attention_factor must be >= 0, got ", r.attention_factor));
}

std::string LlamaConfig::features() const {
  std::string s;
  auto add = [&](const std::string& f) { s += (s.empty() ? "" : ", ") + f; };
  if (head_size > 0 && head_size * n_heads != dim) add(str("head_dim ", head_size));
  if (rot_dim() != head_dim()) add(str("rotary ", rot_dim(), "/", head_dim()));
  if (rope_scaling.type != "none")
    add(rope_scaling.type == "factors" ? std::string("rope freq factors")
                                       : str("rope ", rope_scaling.type, " x", rope_scaling.factor));
  if (qkv_bias) add("qkv bias");
  if (o_bias) add("o bias");
  if (qk_norm) add("q/k norm");
  if (embed_scale > 0) add(str("embeddings x", embed_scale));
  if (ffn_act != "silu") add(ffn_act);
  if (post_norms) add("post norms");
  if (attn_softcap > 0) add(str("attention soft-cap ", attn_softcap));
  if (final_softcap > 0) add(str("logit soft-cap ", final_softcap));
  if (query_pre_attn_scalar > 0) add(str("query scale ", query_pre_attn_scalar, "^-1/2"));
  int sliding = 0, widest = 0;
  for (int w : attn_window) {
    sliding += w > 0;
    widest = std::max(widest, w);
  }
  if (sliding) add(str("sliding window ", widest, " on ", sliding, "/", n_layers, " layers"));
  if (rope_local_theta > 0) add(str("local rope base ", rope_local_theta));
  if (!rope_layers.empty()) {
    int nope = 0;
    for (uint8_t r : rope_layers) nope += r == 0;
    if (nope) add(str(nope, " NoPE layers"));
  }
  return s;
}

LlamaConfig LlamaConfig::local_rope_config() const {
  LlamaConfig c = *this;
  if (rope_local_theta > 0) {
    c.rope_theta = rope_local_theta;
    c.rope_scaling = RopeScaling{};
  }
  return c;
}

double LlamaConfig::attention_scale() const {
  return 1.0 / std::sqrt(query_pre_attn_scalar > 0 ? static_cast<double>(query_pre_attn_scalar) : head_dim());
}

std::vector<float> llama3_rope_factors(const LlamaConfig& c) {
  const RopeScaling& r = c.rope_scaling;
  const int half = c.rot_dim() / 2;
  const double old_ctx = r.original_max_position > 0 ? r.original_max_position : c.seq_len;
  const double low_wavelen = old_ctx / r.low_freq_factor, high_wavelen = old_ctx / r.high_freq_factor;
  std::vector<float> f(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i) {
    const double freq = 1.0 / std::pow(static_cast<double>(c.rope_theta), (2.0 * i) / c.rot_dim());
    const double wavelen = 2.0 * std::numbers::pi / freq;
    double factor;
    if (wavelen < high_wavelen) {
      factor = 1.0;
    } else if (wavelen > low_wavelen) {
      factor = r.factor;
    } else {
      const double smooth = (old_ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      factor = 1.0 / ((1.0 - smooth) / r.factor + smooth);
    }
    f[static_cast<size_t>(i)] = static_cast<float>(factor);
  }
  return f;
}

namespace {

double yarn_mscale(double scale, double mscale) { return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

}  // namespace

double rope_attention_factor(const LlamaConfig& c) {
  const RopeScaling& r = c.rope_scaling;
  if (r.type == "longrope") {
    if (r.attention_factor > 0) return r.attention_factor;
    return r.factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(r.factor) / std::log(static_cast<double>(r.original_max_position)));
  }
  if (r.type != "yarn") return 1.0;
  if (r.attention_factor > 0) return r.attention_factor;
  if (r.mscale > 0 && r.mscale_all_dim > 0) return yarn_mscale(r.factor, r.mscale) / yarn_mscale(r.factor, r.mscale_all_dim);
  return yarn_mscale(r.factor, 1.0);
}

std::vector<double> rope_inv_freq(const LlamaConfig& c, int pos) {
  const RopeScaling& r = c.rope_scaling;
  const int rot = c.rot_dim(), half = rot / 2;
  double base = c.rope_theta;
  if (r.type == "dynamic") {
    const double max_pos = r.original_max_position > 0 ? r.original_max_position : c.seq_len;
    const double len = pos + 1.0;
    if (len > max_pos) base *= std::pow(r.factor * len / max_pos - (r.factor - 1.0), rot / (rot - 2.0));
  }
  std::vector<double> f(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i) f[static_cast<size_t>(i)] = 1.0 / std::pow(base, (2.0 * i) / rot);
  if (r.type == "linear") {
    for (double& x : f) x /= r.factor;
  } else if (r.type == "longrope") {
    const std::vector<float>& ext = pos + 1 > r.original_max_position ? r.long_factor : r.short_factor;
    for (int i = 0; i < half; ++i) f[static_cast<size_t>(i)] /= ext[static_cast<size_t>(i)];
  } else if (r.type == "llama3" || r.type == "factors") {
    const std::vector<float> div = r.type == "llama3" ? llama3_rope_factors(c) : r.freq_factors;
    for (int i = 0; i < half; ++i) f[static_cast<size_t>(i)] /= div[static_cast<size_t>(i)];
  } else if (r.type == "yarn") {
    const double orig = r.original_max_position > 0 ? r.original_max_position : c.seq_len;
    auto correction_dim = [&](double rotations) {
      return (rot * std::log(orig / (rotations * 2.0 * std::numbers::pi))) / (2.0 * std::log(base));
    };
    double low = correction_dim(r.beta_fast), high = correction_dim(r.beta_slow);
    if (r.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, rot - 1.0);
    if (low == high) high += 0.001;
    for (int i = 0; i < half; ++i) {
      const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
      const double extrapolation = 1.0 - ramp;  // weight of the unscaled frequency
      const double e = f[static_cast<size_t>(i)];
      f[static_cast<size_t>(i)] = (e / r.factor) * (1.0 - extrapolation) + e * extrapolation;
    }
  }
  return f;
}

std::vector<float> TensorSource::read_all() const {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  read(0, rows, v.data());
  return v;
}

const TensorSource& LlamaSource::tensor(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw FileError(origin, str("missing tensor '", name, "'"));
  return it->second;
}

void validate_llama_source(const LlamaSource& src, bool scan_values) {
  const LlamaConfig& c = src.config;
  c.validate(src.origin);
  auto expect = [&](const std::string& name, int64_t rows, int64_t cols) {
    const TensorSource& t = src.tensor(name);
    if (t.rows != rows || t.cols != cols)
      throw FileError(src.origin, str("tensor '", name, "' has shape [", t.rows, ", ", t.cols,
                                      "] but the config implies [", rows, ", ", cols, "]"));
    if (!scan_values) return;
    std::vector<float> buf;
    const int64_t block = std::max<int64_t>(1, (1 << 18) / cols);
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
      const int64_t n = std::min(block, rows - r0);
      buf.resize(static_cast<size_t>(n * cols));
      t.read(r0, n, buf.data());
      for (size_t i = 0; i < buf.size(); ++i)
        if (!std::isfinite(buf[i]))
          throw FileError(src.origin,
                          str("tensor '", name, "' has a non-finite value (", buf[i], ") at row ",
                              r0 + static_cast<int64_t>(i) / cols, ", column ",
                              static_cast<int64_t>(i) % cols));
    }
  };
  expect("tok_embeddings", c.vocab_size, c.dim);
  expect("norm", 1, c.dim);
  if (!c.tied_output) expect("output", c.vocab_size, c.dim);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    expect(p + "attention_norm", 1, c.dim);
    expect(p + "ffn_norm", 1, c.dim);
    expect(p + "wq", c.q_dim(), c.dim);
    expect(p + "wk", c.kv_dim(), c.dim);
    expect(p + "wv", c.kv_dim(), c.dim);
    expect(p + "wo", c.dim, c.q_dim());
    if (c.qkv_bias) {
      expect(p + "bq", 1, c.q_dim());
      expect(p + "bk", 1, c.kv_dim());
      expect(p + "bv", 1, c.kv_dim());
    }
    if (c.o_bias) expect(p + "bo", 1, c.dim);
    if (c.qk_norm) {
      expect(p + "q_norm", 1, c.head_dim());
      expect(p + "k_norm", 1, c.head_dim());
    }
    if (c.post_norms) {
      expect(p + "post_attention_norm", 1, c.dim);
      expect(p + "post_ffn_norm", 1, c.dim);
    }
    expect(p + "w1", c.hidden_dim, c.dim);
    expect(p + "w2", c.dim, c.hidden_dim);
    expect(p + "w3", c.hidden_dim, c.dim);
  }
}

}  // namespace cibench
