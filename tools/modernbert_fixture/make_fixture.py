#!/usr/bin/env python3
"""Tiny random ModernBertForSequenceClassification checkpoints as Hugging Face folders
(config.json, model.safetensors f32, a byte-level BPE tokenizer.json framed [CLS] ... [SEP] by a
TemplateProcessing post-processor) and the logits of an independent NumPy forward pass in
Hugging Face's layout and formulas (modeling_modernbert: pre-LayerNorm layers, fused Wqkv,
rotate-half RoPE with the global or local theta, the bidirectional sliding-window mask
|q - k| <= local_attention // 2 on the layers that are not global, the GLU feed-forward,
final_norm, [CLS] or mean pooling, dense + act + LayerNorm head, classifier), float64 throughout.

Not part of the cibench build; needs only NumPy. See DEVELOPERS.md.

    python3 tools/modernbert_fixture/make_fixture.py tests/fixtures/modernbert
"""
import json
import math
import os
import re
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "family_fixtures"))
from make_fixtures import write_safetensors  # noqa: E402  (the decoder fixtures' writer)

# Texts encoded with the tokenizer below; the last is longer than the local windows.
TEXTS = [
    "The movie was great fun.",
    "I did not like it at all, and the ending was bad!",
    "",
    ("A long review: the first hour drags, the second finds its feet, and by the end the cast "
     "and the music carry the whole thing; I'd see it again, though not at 3am."),
]
CORPUS = " ".join(TEXTS) + " the then there these this that thing think movie music review"
N_MERGES = 24
SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
VOCAB_SIZE = 288  # embedding rows: more than the tokenizer's pieces, as ModernBERT's 50368

MODELS = {
    # [CLS] pooling, no biases (ModernBERT-base's flags), exact GELU, the classic rope keys:
    # layers 0 and 3 global, 1 and 2 local with a window of 16 (8 on each side).
    "cls": dict(hidden_size=32, num_attention_heads=4, num_hidden_layers=4, intermediate_size=40,
                global_attn_every_n_layers=3, local_attention=16, global_rope_theta=160000.0,
                local_rope_theta=10000.0, hidden_activation="gelu", classifier_activation="gelu",
                classifier_pooling="cls", attention_bias=False, mlp_bias=False, norm_bias=False,
                classifier_bias=False, norm_eps=1e-5,
                id2label={"0": "negative", "1": "neutral", "2": "positive"},
                label2id={"negative": 0, "neutral": 1, "positive": 2}),
    # Mean pooling, every bias, tanh GELU in the feed-forward and the head, and the newer
    # rope_parameters / layer_types keys: layers 0 and 2 global, 1 local with a window of 8.
    "mean": dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=3, intermediate_size=24,
                 global_attn_every_n_layers=2, local_attention=8,
                 rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 80000.0},
                                  "sliding_attention": {"rope_type": "default", "rope_theta": 5000.0}},
                 layer_types=["full_attention", "sliding_attention", "full_attention"],
                 hidden_activation="gelu_pytorch_tanh", classifier_activation="gelu_new",
                 classifier_pooling="mean", attention_bias=True, mlp_bias=True, norm_bias=True,
                 classifier_bias=True, norm_eps=1e-6),
}

# ------------------------------------------------------------------------------------------------
# Byte-level BPE (GPT-2's byte-to-unicode map and pre-tokenizer regex; ASCII texts only here).


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


BYTE_CHARS = bytes_to_unicode()
PRETOKENIZE = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")


def words(text):
    return ["".join(BYTE_CHARS[b] for b in w.encode("utf-8")) for w in PRETOKENIZE.findall(text)]


def train_merges(corpus, n):
    seqs = [list(w) for w in words(corpus)]
    merges = []
    for _ in range(n):
        counts = {}
        for s in seqs:
            for a, b in zip(s, s[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        best = max(sorted(counts), key=lambda p: counts[p])
        merges.append(best)
        for s in seqs:
            i = 0
            while i + 1 < len(s):
                if (s[i], s[i + 1]) == best:
                    s[i:i + 2] = [s[i] + s[i + 1]]
                else:
                    i += 1
    return merges


def make_tokenizer():
    vocab = {}
    for b in range(256):
        vocab[BYTE_CHARS[b]] = len(vocab)
    merges = train_merges(CORPUS, N_MERGES)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    special_ids = {}
    for s in SPECIALS:
        special_ids[s] = len(vocab) + len(special_ids)
    return vocab, merges, special_ids


def bpe_encode(text, vocab, merges):
    rank = {m: i for i, m in enumerate(merges)}
    ids = []
    for w in words(text):
        s = list(w)
        while len(s) > 1:
            pairs = [(rank.get((a, b), math.inf), i) for i, (a, b) in enumerate(zip(s, s[1:]))]
            r, i = min(pairs)
            if r == math.inf:
                break
            s[i:i + 2] = [s[i] + s[i + 1]]
        ids.extend(vocab[p] for p in s)
    return ids


def tokenizer_json(vocab, merges, special_ids):
    cls, sep = special_ids["[CLS]"], special_ids["[SEP]"]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": i, "content": s, "single_word": False, "lstrip": s == "[MASK]", "rstrip": False,
                          "normalized": False, "special": True} for s, i in special_ids.items()],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [cls], "tokens": ["[CLS]"]},
                               "[SEP]": {"id": "[SEP]", "ids": [sep], "tokens": ["[SEP]"]}},
        },
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }


# ------------------------------------------------------------------------------------------------
# Config and weights.


def config_of(name, special_ids):
    c = dict(architectures=["ModernBertForSequenceClassification"], model_type="modernbert",
             vocab_size=VOCAB_SIZE, max_position_embeddings=128, pad_token_id=special_ids["[PAD]"],
             cls_token_id=special_ids["[CLS]"], sep_token_id=special_ids["[SEP]"],
             bos_token_id=special_ids["[CLS]"], eos_token_id=special_ids["[SEP]"],
             attention_dropout=0.0, embedding_dropout=0.0, mlp_dropout=0.0, classifier_dropout=0.0,
             deterministic_flash_attn=False, initializer_range=0.02, torch_dtype="float32")
    c.update(MODELS[name])
    return c


def global_layer(c, l):
    return l % c["global_attn_every_n_layers"] == 0


def make_weights(c, seed):
    rng = np.random.default_rng(seed)
    h, f, n = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    w = {}

    def lin(name, rows, cols, bias):
        w[name + ".weight"] = rng.normal(0.0, 1.0 / math.sqrt(cols), (rows, cols))
        if bias:
            w[name + ".bias"] = rng.normal(0.0, 0.1, rows)

    def norm(name):
        w[name + ".weight"] = 1.0 + rng.normal(0.0, 0.1, h)
        if c["norm_bias"]:
            w[name + ".bias"] = rng.normal(0.0, 0.1, h)

    w["model.embeddings.tok_embeddings.weight"] = rng.normal(0.0, 1.0, (c["vocab_size"], h))
    norm("model.embeddings.norm")
    for l in range(n):
        p = f"model.layers.{l}."
        if l > 0:
            norm(p + "attn_norm")
        # Larger q/k rows than 1/sqrt(fan-in): peaked attention, so the window matters.
        lin(p + "attn.Wqkv", 3 * h, h, c["attention_bias"])
        w[p + "attn.Wqkv.weight"][: 2 * h] *= 2.0
        lin(p + "attn.Wo", h, h, c["attention_bias"])
        norm(p + "mlp_norm")
        lin(p + "mlp.Wi", 2 * f, h, c["mlp_bias"])
        lin(p + "mlp.Wo", h, f, c["mlp_bias"])
    norm("model.final_norm")
    lin("head.dense", h, h, c["classifier_bias"])
    norm("head.norm")
    lin("classifier", len(c["id2label"]) if "id2label" in c else 2, h, True)
    # Stored as f32: the forward pass below reads the same rounded values.
    return {k: np.asarray(a, dtype=np.float32) for k, a in w.items()}


# ------------------------------------------------------------------------------------------------
# The forward pass (modeling_modernbert, eager attention), float64.


def layer_norm(x, W, name, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps) * W[name + ".weight"]
    return y + W[name + ".bias"] if name + ".bias" in W else y


def act(x, name):
    if name == "gelu":
        return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    raise ValueError(name)


def linear(x, W, name):
    y = x @ W[name + ".weight"].T
    return y + W[name + ".bias"] if name + ".bias" in W else y


def rope_theta(c, global_):
    if "rope_parameters" in c:
        return c["rope_parameters"]["full_attention" if global_ else "sliding_attention"]["rope_theta"]
    return c["global_rope_theta"] if global_ else c["local_rope_theta"]


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def forward(c, w32, ids, window=True):
    W = {k: v.astype(np.float64) for k, v in w32.items()}
    n, h, nh = len(ids), c["hidden_size"], c["num_attention_heads"]
    hd, f, eps = h // nh, c["intermediate_size"], c["norm_eps"]
    x = layer_norm(W["model.embeddings.tok_embeddings.weight"][ids], W, "model.embeddings.norm", eps)
    pos = np.arange(n, dtype=np.float64)
    dist = np.abs(pos[:, None] - pos[None, :])
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        g = global_layer(c, l)
        a = x if l == 0 else layer_norm(x, W, p + "attn_norm", eps)
        qkv = linear(a, W, p + "attn.Wqkv").reshape(n, 3, nh, hd)
        q, k, v = (qkv[:, i].transpose(1, 0, 2) for i in range(3))  # (heads, n, hd)
        inv_freq = 1.0 / (rope_theta(c, g) ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
        ang = np.concatenate([np.outer(pos, inv_freq)] * 2, axis=-1)  # (n, hd)
        q = q * np.cos(ang) + rotate_half(q) * np.sin(ang)
        k = k * np.cos(ang) + rotate_half(k) * np.sin(ang)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        if not g and window:
            s = np.where(dist <= c["local_attention"] // 2, s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = (s @ v).transpose(1, 0, 2).reshape(n, h)
        x = x + linear(o, W, p + "attn.Wo")
        u = linear(layer_norm(x, W, p + "mlp_norm", eps), W, p + "mlp.Wi")
        x = x + linear(act(u[:, :f], c["hidden_activation"]) * u[:, f:], W, p + "mlp.Wo")
    x = layer_norm(x, W, "model.final_norm", eps)
    pooled = x[0] if c["classifier_pooling"] == "cls" else x.mean(0)
    hid = layer_norm(act(linear(pooled, W, "head.dense"), c["classifier_activation"]), W, "head.norm", eps)
    return linear(hid, W, "classifier")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/modernbert"
    vocab, merges, special_ids = make_tokenizer()
    tok = tokenizer_json(vocab, merges, special_ids)
    cls, sep = special_ids["[CLS]"], special_ids["[SEP]"]
    text_ids = [[cls] + bpe_encode(t, vocab, merges) + [sep] for t in TEXTS]
    rng = np.random.default_rng(7)
    n_pieces = len(vocab) + len(special_ids)
    # Token sequences beside the texts: short, past the windows, and 100 long.
    seqs = [[cls] + [int(t) for t in rng.integers(0, n_pieces, n - 2)] + [sep] for n in (5, 33, 100)]
    for i, name in enumerate(MODELS):
        c = config_of(name, special_ids)
        folder = os.path.join(root, name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "config.json"), "w") as out:
            json.dump(c, out, indent=2, sort_keys=True)
            out.write("\n")
        with open(os.path.join(folder, "tokenizer.json"), "w") as out:
            json.dump(tok, out, indent=1, ensure_ascii=False)
            out.write("\n")
        w = make_weights(c, 2000 + i)
        write_safetensors(os.path.join(folder, "model.safetensors"), w)
        all_ids = text_ids + seqs
        logits = [forward(c, w, ids) for ids in all_ids]
        # The local mask matters: without it the long sequences' logits move by this much.
        moved = max(float(np.abs(forward(c, w, ids, window=False) - lg).max())
                    for ids, lg in zip(all_ids, logits) if len(ids) > c["local_attention"] // 2 + 1)
        assert moved > 1e-3, moved
        ref = {"texts": TEXTS, "text_ids": text_ids, "sequences": seqs,
               "logits": [[float(v) for v in lg] for lg in logits],
               "window_effect": moved}
        with open(os.path.join(folder, "reference.json"), "w") as out:
            out.write(json.dumps(ref, indent=1))
            out.write("\n")
        print(f"{folder}: {len(w)} tensors, logits of {len(all_ids)} sequences, "
              f"the local window moves them by up to {moved:.3g}")


if __name__ == "__main__":
    main()
