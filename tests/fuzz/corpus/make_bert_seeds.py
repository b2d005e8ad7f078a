#!/usr/bin/env python3
"""Writes the BERT and DistilBERT fuzz seeds (bert-mini.safetensors, distilbert-mini.safetensors)
beside this script: the shapes of the configs in tests/fuzz/fuzz_bert.cpp (hidden 16, 2 layers,
2 heads, intermediate 32, vocabulary 64, 32 positions, 2 labels), F32, deterministic values.
Standard library only:  python3 tests/fuzz/corpus/make_bert_seeds.py"""
import json
import os
import struct

H, L, I, V, P, T, N = 16, 2, 32, 64, 32, 2, 2


def values(n, state=[12345]):
    out = []
    for _ in range(n):
        state[0] = (state[0] * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        out.append(((state[0] >> 40) / float(1 << 24) - 0.5) * 0.2)
    return out


def tensor(name, shape, kind="rand"):
    n = 1
    for s in shape:
        n *= s
    v = [1.0] * n if kind == "one" else [0.0] * n if kind == "zero" else values(n)
    return name, list(shape), v


def linear(prefix, rows, cols):
    return [tensor(prefix + ".weight", (rows, cols)), tensor(prefix + ".bias", (rows,))]


def norm(prefix):
    return [tensor(prefix + ".weight", (H,), "one"), tensor(prefix + ".bias", (H,), "zero")]


def bert():
    ts = [tensor("bert.embeddings.word_embeddings.weight", (V, H)),
          tensor("bert.embeddings.position_embeddings.weight", (P, H)),
          tensor("bert.embeddings.token_type_embeddings.weight", (T, H))]
    ts += norm("bert.embeddings.LayerNorm")
    for l in range(L):
        p = "bert.encoder.layer.%d." % l
        for part in ("query", "key", "value"):
            ts += linear(p + "attention.self." + part, H, H)
        ts += linear(p + "attention.output.dense", H, H) + norm(p + "attention.output.LayerNorm")
        ts += linear(p + "intermediate.dense", I, H) + linear(p + "output.dense", H, I)
        ts += norm(p + "output.LayerNorm")
    return ts + linear("bert.pooler.dense", H, H) + linear("classifier", N, H)


def distilbert():
    ts = [tensor("distilbert.embeddings.word_embeddings.weight", (V, H)),
          tensor("distilbert.embeddings.position_embeddings.weight", (P, H))]
    ts += norm("distilbert.embeddings.LayerNorm")
    for l in range(L):
        p = "distilbert.transformer.layer.%d." % l
        for part in ("q_lin", "k_lin", "v_lin", "out_lin"):
            ts += linear(p + "attention." + part, H, H)
        ts += norm(p + "sa_layer_norm") + linear(p + "ffn.lin1", I, H) + linear(p + "ffn.lin2", H, I)
        ts += norm(p + "output_layer_norm")
    return ts + linear("pre_classifier", H, H) + linear("classifier", N, H)


def write(path, ts):
    header, off = {}, 0
    for name, shape, v in ts:
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + 4 * len(v)]}
        off += 4 * len(v)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for _, _, v in ts:
            f.write(struct.pack("<%df" % len(v), *v))


here = os.path.dirname(os.path.abspath(__file__))
write(os.path.join(here, "bert-mini.safetensors"), bert())
write(os.path.join(here, "distilbert-mini.safetensors"), distilbert())
