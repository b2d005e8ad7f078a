#!/usr/bin/env python3
"""Tiny random checkpoints of the decoder families cibench reads, as Hugging Face folders
(config.json + model.safetensors, f32), and the logits of an independent NumPy forward pass in
Hugging Face's own layout (rotate-half RoPE, float64) over a fixed token sequence.

Not part of the cibench build; needs only NumPy. See DEVELOPERS.md for the whole procedure
(the GGUF form and llama.cpp's logits come from `cibench export-gguf` and dump_logits).

    python3 tools/family_fixtures/make_fixtures.py tests/fixtures/families
"""
import json
import math
import os
import struct
import sys

import numpy as np

TOKENS = [1, 7, 42, 3, 19, 63, 8, 25, 50, 11, 2, 33]

BASE = dict(hidden_size=64, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=64, max_position_embeddings=64, hidden_act="silu",
            bos_token_id=1, eos_token_id=2)

FAMILIES = {
    # Llama 3.x: llama3 RoPE scaling (a medium band at this size), untied head.
    "llama3": dict(model_type="llama", architectures=["LlamaForCausalLM"], rms_norm_eps=1e-5,
                   rope_theta=10000.0, tie_word_embeddings=False,
                   rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                     high_freq_factor=4.0, original_max_position_embeddings=128)),
    # Mistral: one KV head, sliding window longer than the context, untied.
    "mistral": dict(model_type="mistral", architectures=["MistralForCausalLM"], rms_norm_eps=1e-5,
                    rope_theta=1000000.0, num_key_value_heads=1, sliding_window=4096,
                    tie_word_embeddings=False),
    # Qwen2/2.5: q/k/v biases, tied.
    "qwen2": dict(model_type="qwen2", architectures=["Qwen2ForCausalLM"], rms_norm_eps=1e-6,
                  rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False,
                  sliding_window=4096),
    # Qwen3: explicit head_dim (q is 4 x 32 = 128 wide on a 64 model), q/k norms, tied.
    "qwen3": dict(model_type="qwen3", architectures=["Qwen3ForCausalLM"], rms_norm_eps=1e-6,
                  rope_theta=1000000.0, head_dim=32, attention_bias=False,
                  tie_word_embeddings=True),
    # SmolLM2 (a Llama): tied, linear RoPE scaling.
    "smollm2": dict(model_type="llama", architectures=["LlamaForCausalLM"], rms_norm_eps=1e-5,
                    rope_theta=100000.0, tie_word_embeddings=True,
                    rope_scaling=dict(rope_type="linear", factor=2.0)),
    # SmolLM3: NoPE in every second layer here, yarn RoPE scaling, tied.
    "smollm3": dict(model_type="smollm3", architectures=["SmolLM3ForCausalLM"], rms_norm_eps=1e-6,
                    rope_theta=50000.0, tie_word_embeddings=True, no_rope_layers=[1, 0],
                    rope_scaling=dict(rope_type="yarn", factor=4.0,
                                      original_max_position_embeddings=16)),
    # Gemma: head_dim 32 apart from 64 / 4, one KV head, GeGLU (tanh GELU), embeddings x sqrt(64),
    # norms as offsets from 1, tied.
    "gemma": dict(model_type="gemma", architectures=["GemmaForCausalLM"], rms_norm_eps=1e-6,
                  rope_theta=10000.0, head_dim=32, num_key_value_heads=1,
                  hidden_act="gelu_pytorch_tanh", hidden_activation="gelu_pytorch_tanh",
                  tie_word_embeddings=True),
    # Phi-3: fused qkv and gate_up projections, RoPE over half of each head, untied.
    "phi3": dict(model_type="phi3", architectures=["Phi3ForCausalLM"], rms_norm_eps=1e-5,
                 rope_theta=10000.0, partial_rotary_factor=0.5, sliding_window=2047,
                 tie_word_embeddings=False),
    # A Llama with dynamic NTK scaling, trained on 8 positions: the 12 tokens run past them, where
    # the base grows with the length (no GGUF form: llama.cpp has no dynamic scaling).
    "dynamic": dict(model_type="llama", architectures=["LlamaForCausalLM"], rms_norm_eps=1e-5,
                    rope_theta=10000.0, max_position_embeddings=8, tie_word_embeddings=True,
                    rope_scaling=dict(rope_type="dynamic", factor=2.0)),
    # (New families go last: each one's seed is its place in this list.)
    # Gemma 2: 26 layers (llama.cpp's gemma2 knows the published layer counts only), narrow; a
    # sliding window of 4 in the even layers (the 12 tokens run past it), attention and final
    # soft-caps that bite, post-attention and post-feed-forward norms, tied.
    "gemma2": dict(model_type="gemma2", architectures=["Gemma2ForCausalLM"], hidden_size=16,
                   intermediate_size=16, num_hidden_layers=26, num_attention_heads=2,
                   num_key_value_heads=1, head_dim=8, rms_norm_eps=1e-6, rope_theta=10000.0,
                   hidden_act="gelu_pytorch_tanh", hidden_activation="gelu_pytorch_tanh",
                   query_pre_attn_scalar=8, sliding_window=4, attn_logit_softcapping=1.5,
                   final_logit_softcapping=4.0, tie_word_embeddings=True),
    # Gemma 3 (text): q/k norms, a sliding window of 3 in all but every third layer with its own
    # RoPE base, linear scaling in the global layers only, query_pre_attn_scalar apart from
    # head_dim, no soft-caps, tied.
    "gemma3": dict(model_type="gemma3_text", architectures=["Gemma3ForCausalLM"], hidden_size=32,
                   intermediate_size=32, num_hidden_layers=4, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6, rope_theta=1000000.0,
                   rope_local_base_freq=10000.0, rope_scaling=dict(rope_type="linear", factor=2.0),
                   hidden_act="gelu_pytorch_tanh", hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=24,
                   sliding_window=3, sliding_window_pattern=3, attn_logit_softcapping=None,
                   final_logit_softcapping=None, tie_word_embeddings=True),
}


def config_of(name):
    c = dict(BASE)
    c.update(FAMILIES[name])
    return c


def head_dim(c):
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


def make_weights(c, seed):
    rng = np.random.default_rng(seed)
    d, f, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd = head_dim(c)
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    mt = c["model_type"]

    def lin(rows, cols):
        return rng.uniform(-1, 1, size=(rows, cols)) / math.sqrt(cols)

    def norm(n):
        # Gemma stores its norm weights as offsets from 1.
        return (0.0 if mt.startswith("gemma") else 1.0) + 0.1 * rng.uniform(-1, 1, size=n)

    w = {"model.embed_tokens.weight": rng.uniform(-1, 1, size=(v, d)), "model.norm.weight": norm(d)}
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = lin(v, d)
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        w[p + "input_layernorm.weight"] = norm(d)
        w[p + "post_attention_layernorm.weight"] = norm(d)
        w[p + "self_attn.q_proj.weight"] = lin(q, d)
        w[p + "self_attn.k_proj.weight"] = lin(kv, d)
        w[p + "self_attn.v_proj.weight"] = lin(kv, d)
        w[p + "self_attn.o_proj.weight"] = lin(d, q)
        w[p + "mlp.gate_proj.weight"] = lin(f, d)
        w[p + "mlp.up_proj.weight"] = lin(f, d)
        w[p + "mlp.down_proj.weight"] = lin(d, f)
        if mt == "phi3":
            w[p + "self_attn.qkv_proj.weight"] = np.concatenate(
                [w.pop(p + "self_attn.q_proj.weight"), w.pop(p + "self_attn.k_proj.weight"),
                 w.pop(p + "self_attn.v_proj.weight")])
            w[p + "mlp.gate_up_proj.weight"] = np.concatenate(
                [w.pop(p + "mlp.gate_proj.weight"), w.pop(p + "mlp.up_proj.weight")])
        if mt == "qwen2":
            for n, m in (("q", q), ("k", kv), ("v", kv)):
                w[p + f"self_attn.{n}_proj.bias"] = 0.1 * rng.uniform(-1, 1, size=m)
        if mt in ("qwen3", "gemma3_text"):
            w[p + "self_attn.q_norm.weight"] = norm(hd)
            w[p + "self_attn.k_norm.weight"] = norm(hd)
        if mt in ("gemma2", "gemma3_text"):
            w[p + "pre_feedforward_layernorm.weight"] = norm(d)
            w[p + "post_feedforward_layernorm.weight"] = norm(d)
    # Stored as f32: the forward pass below reads the same rounded values.
    return {k: np.asarray(a, dtype=np.float32) for k, a in w.items()}


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        b = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(h)))
        out.write(h)
        for b in blobs:
            out.write(b)


# ------------------------------------------------------------------------------------------------
# The forward pass, in Hugging Face's layout and semantics (modeling_llama / qwen2 / qwen3 /
# smollm3 and modeling_rope_utils), float64 throughout.

def inv_freq_and_scale(c, seq_len):
    hd = head_dim(c)
    dim = int(hd * c.get("partial_rotary_factor", 1.0))
    base = c["rope_theta"]
    rs = c.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type", "default"))
    inv = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    if kind == "default":
        return inv, 1.0
    factor = rs["factor"]
    if kind == "linear":
        return inv / factor, 1.0
    if kind == "dynamic":
        mp = c["max_position_embeddings"]
        if seq_len > mp:
            base = base * ((factor * seq_len / mp) - (factor - 1)) ** (dim / (dim - 2))
        return 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim), 1.0
    if kind == "llama3":
        old = rs["original_max_position_embeddings"]
        lo, hi = rs["low_freq_factor"], rs["high_freq_factor"]
        wavelen = 2 * math.pi / inv
        out = np.where(wavelen > old / lo, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * out / factor + smooth * out
        medium = ~(wavelen < old / hi) & ~(wavelen > old / lo)
        return np.where(medium, smoothed, out), 1.0
    if kind == "yarn":
        orig = rs.get("original_max_position_embeddings") or c["max_position_embeddings"]
        att = rs.get("attention_factor")
        if att is None:
            att = 1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0
        beta_fast, beta_slow = rs.get("beta_fast", 32), rs.get("beta_slow", 1)

        def corr(rot):
            return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(base))

        low, high = math.floor(corr(beta_fast)), math.ceil(corr(beta_slow))
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
        extra = 1 - ramp
        return (inv / factor) * (1 - extra) + inv * extra, att
    raise ValueError(kind)


def rms(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_f16_table(x):
    """ggml's CPU GELU (GGML_GELU_FP16): the input rounded to binary16, the binary32 tanh GELU of
    that, rounded to binary16; saturated outside (-10, 10)."""
    h = x.astype(np.float16).astype(np.float32)
    y = (np.float32(0.5) * h * (np.float32(1) + np.tanh(np.float32(0.7978845608028654) * h *
                                                        (np.float32(1) + np.float32(0.044715) * h * h))))
    y = y.astype(np.float16).astype(np.float64)
    return np.where(x <= -10, 0.0, np.where(x >= 10, x, y))


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def forward(c, w, tokens, gelu=gelu_tanh):
    d, nh, nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    hd, eps, mt = head_dim(c), c["rms_norm_eps"], c["model_type"]
    rot = int(hd * c.get("partial_rotary_factor", 1.0))
    W = {k: v.astype(np.float64) for k, v in w.items()}
    if mt == "phi3":  # the fused projections, split as Phi3Attention / Phi3MLP do
        q_dim, kv_dim, f = nh * hd, nkv * hd, c["intermediate_size"]
        for l in range(c["num_hidden_layers"]):
            p = f"model.layers.{l}."
            qkv = W.pop(p + "self_attn.qkv_proj.weight")
            W[p + "self_attn.q_proj.weight"] = qkv[:q_dim]
            W[p + "self_attn.k_proj.weight"] = qkv[q_dim:q_dim + kv_dim]
            W[p + "self_attn.v_proj.weight"] = qkv[q_dim + kv_dim:]
            gu = W.pop(p + "mlp.gate_up_proj.weight")
            W[p + "mlp.gate_proj.weight"], W[p + "mlp.up_proj.weight"] = gu[:f], gu[f:]
    gemma = mt.startswith("gemma")
    post_norms = mt in ("gemma2", "gemma3_text")  # Gemma2/3DecoderLayer: four norms
    if gemma:  # GemmaRMSNorm (and Gemma2's, Gemma3's, q/k norms included) multiplies by (1 + w)
        for k in W:
            if k.endswith("norm.weight"):
                W[k] = 1.0 + W[k]
    n = len(tokens)
    x = W["model.embed_tokens.weight"][tokens]
    if gemma:
        x = x * np.float32(math.sqrt(d))

    # Angles of each position as transformers computes them decoding one token at a time (the
    # dynamic type depends on the length seen; the others do not).
    def angles(cfg):
        cos = np.zeros((n, rot))
        sin = np.zeros((n, rot))
        for p in range(n):
            inv, scale = inv_freq_and_scale(cfg, p + 1)
            emb = np.concatenate([p * inv, p * inv])
            cos[p], sin[p] = np.cos(emb) * scale, np.sin(emb) * scale
        return cos, sin

    global_angles = angles(c)
    # Gemma 3's sliding layers: rotary_emb_local, base rope_local_base_freq, default rope type.
    local_angles = angles(dict(c, rope_theta=c["rope_local_base_freq"], rope_scaling=None)) \
        if mt == "gemma3_text" else global_angles
    # Which layers attend through the sliding window: Gemma2Attention slides when layer_idx is
    # even, Gemma3 (layer_types' default) when (i + 1) % sliding_window_pattern != 0.
    L = c["num_hidden_layers"]
    if "layer_types" in c:
        sliding = [t == "sliding_attention" for t in c["layer_types"]]
    elif mt == "gemma2":
        sliding = [l % 2 == 0 for l in range(L)]
    elif mt == "gemma3_text":
        sliding = [(l + 1) % c["sliding_window_pattern"] != 0 for l in range(L)]
    else:
        sliding = [False] * L
    use_rope = c.get("no_rope_layers") or [1] * L
    causal = np.triu(np.full((n, n), -np.inf), 1)
    # The sliding-window mask keeps key k for query q when q - k < sliding_window.
    qi, ki = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    window_mask = np.where(qi - ki >= (c.get("sliding_window") or n + 1), -np.inf, 0.0) + causal
    scaling = c.get("query_pre_attn_scalar", hd) ** -0.5
    att_cap, final_cap = c.get("attn_logit_softcapping"), c.get("final_logit_softcapping")
    for l in range(L):
        p = f"model.layers.{l}."
        mask = window_mask if sliding[l] else causal
        cos, sin = local_angles if sliding[l] else global_angles
        h = rms(x, W[p + "input_layernorm.weight"], eps)

        def proj(name):
            y = h @ W[p + f"self_attn.{name}_proj.weight"].T
            if p + f"self_attn.{name}_proj.bias" in W:
                y = y + W[p + f"self_attn.{name}_proj.bias"]
            return y

        q = proj("q").reshape(n, nh, hd).transpose(1, 0, 2)
        k = proj("k").reshape(n, nkv, hd).transpose(1, 0, 2)
        v = proj("v").reshape(n, nkv, hd).transpose(1, 0, 2)
        if mt in ("qwen3", "gemma3_text"):
            q = rms(q, W[p + "self_attn.q_norm.weight"], eps)
            k = rms(k, W[p + "self_attn.k_norm.weight"], eps)
        if use_rope[l]:
            def rope(t):
                r, rest = t[..., :rot], t[..., rot:]
                return np.concatenate([r * cos + rotate_half(r) * sin, rest], axis=-1)
            q, k = rope(q), rope(k)
        rep = nh // nkv
        k, v = np.repeat(k, rep, axis=0), np.repeat(v, rep, axis=0)
        s = q @ k.transpose(0, 2, 1) * scaling
        if att_cap:  # Gemma 2: softcap * tanh(scores / softcap), before the mask
            s = att_cap * np.tanh(s / att_cap)
        s = s + mask
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
        o = (s @ v).transpose(1, 0, 2).reshape(n, nh * hd)
        o = o @ W[p + "self_attn.o_proj.weight"].T
        if post_norms:  # Gemma 2/3: post_attention_layernorm normalises the attention output
            x = x + rms(o, W[p + "post_attention_layernorm.weight"], eps)
            h = rms(x, W[p + "pre_feedforward_layernorm.weight"], eps)
        else:
            x = x + o
            h = rms(x, W[p + "post_attention_layernorm.weight"], eps)
        g = h @ W[p + "mlp.gate_proj.weight"].T
        u = h @ W[p + "mlp.up_proj.weight"].T
        act = gelu(g) if gemma else g / (1 + np.exp(-g))
        f = (act * u) @ W[p + "mlp.down_proj.weight"].T
        x = x + (rms(f, W[p + "post_feedforward_layernorm.weight"], eps) if post_norms else f)
    x = rms(x, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight"] if c["tie_word_embeddings"] else W["lm_head.weight"]
    logits = x @ head.T
    if final_cap:
        logits = final_cap * np.tanh(logits / final_cap)
    return logits


def write_logits(path, logits):
    with open(path, "w") as out:
        out.write(f"tokens {logits.shape[0]} vocab {logits.shape[1]}\n")
        for row in logits:
            out.write(" ".join(f"{v:.9g}" for v in row) + "\n")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/families"
    for i, name in enumerate(FAMILIES):
        c = config_of(name)
        folder = os.path.join(root, name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "config.json"), "w") as out:
            json.dump(c, out, indent=2, sort_keys=True)
            out.write("\n")
        w = make_weights(c, 1000 + i)
        write_safetensors(os.path.join(folder, "model.safetensors"), w)
        write_logits(os.path.join(folder, "logits_numpy.txt"), forward(c, w, TOKENS))
        if c["model_type"] in ("gemma", "gemma2"):
            # The same network with llama.cpp's binary16 GELU table, to size that difference.
            write_logits(os.path.join(folder, "logits_numpy_gelu_f16.txt"),
                         forward(c, w, TOKENS, gelu=gelu_f16_table))
    with open(os.path.join(root, "tokens.txt"), "w") as out:
        out.write(" ".join(str(t) for t in TOKENS) + "\n")


if __name__ == "__main__":
    main()
