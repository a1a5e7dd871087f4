#!/usr/bin/env python3
"""A float64 reference for the text decoder of a Qwen3-VL checkpoint, for text-only prompts: the
greedy tokens and the full logits after the prompt and after each generated token. Weights are
bf16 widened exactly; every sum, norm, softmax and product is float64. It covers what a
text-only prompt uses (embedding, RMS norms, q/k norms, rotary positions, grouped-query causal
attention, SwiGLU MLP, final norm, tied or separate lm_head) and nothing of the vision tower.

For a text-only prompt Qwen3-VL's interleaved multimodal rotary positions are the same number
in all three sections, so they reduce to plain rotary positions (rotate-half form, rope_theta).
tests/tools/text_ref64_test.py holds this file to the repository's float64 oracle goldens
(tests/data/golden/text_only) so that it can stand in for the oracle on checkpoints the oracle
was never run on (tests/runtime/quantized_wide_test.cpp's hidden-512 model with outliers).

usage: text_ref64.py --model DIR --ids 151644,872,... --steps 20 --out FILE
  FILE: steps int32 greedy tokens, then steps x vocab float32 logits (the float64 values
  rounded once), little-endian."""
import argparse
import json
import os
import struct
import sys

import numpy as np


def read_safetensors(path, wanted):
    """The tensors whose names pass wanted(name): bf16 and f32 as float64, i64 as int64."""
    out = {}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        for name, info in header.items():
            if name == "__metadata__" or not wanted(name):
                continue
            start, end = info["data_offsets"]
            f.seek(base + start)
            raw = f.read(end - start)
            if info["dtype"] == "BF16":
                bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
                values = bits.view(np.float32)
            elif info["dtype"] == "F32":
                values = np.frombuffer(raw, dtype="<f4")
            elif info["dtype"] == "I64":
                out[name] = np.frombuffer(raw, dtype="<i8").reshape(info["shape"])
                continue
            else:
                raise ValueError(f"{name}: dtype {info['dtype']} is not supported here")
            out[name] = values.astype(np.float64).reshape(info["shape"])
    return out


def checkpoint_files(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            return sorted({os.path.join(model_dir, v) for v in json.load(f)["weight_map"].values()})
    return [os.path.join(model_dir, "model.safetensors")]


class TextModel:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        self.cfg = cfg.get("text_config", cfg)
        tied = cfg.get("tie_word_embeddings", self.cfg.get("tie_word_embeddings", False))
        w = {}
        for path in checkpoint_files(model_dir):
            w.update(read_safetensors(path, lambda n: n.startswith("model.language_model.") or n == "lm_head.weight"))
        p = "model.language_model."
        self.embed = w[p + "embed_tokens.weight"]
        self.lm_head = self.embed if tied else w["lm_head.weight"]
        self.norm = w[p + "norm.weight"]
        self.layers = [{k[len(f"{p}layers.{i}."):]: v for k, v in w.items() if k.startswith(f"{p}layers.{i}.")}
                       for i in range(self.cfg["num_hidden_layers"])]
        self.heads = self.cfg["num_attention_heads"]
        self.kv_heads = self.cfg["num_key_value_heads"]
        self.head_dim = self.cfg.get("head_dim", self.cfg["hidden_size"] // self.heads)
        self.eps = self.cfg["rms_norm_eps"]
        theta = self.cfg.get("rope_theta", 10000.0)
        self.inv_freq = 1.0 / theta ** (np.arange(0, self.head_dim, 2, dtype=np.float64) / self.head_dim)
        self.cache = [([], []) for _ in self.layers]  # per layer: keys, values (n x kv_heads x head_dim)
        self.length = 0

    def rms(self, x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * w

    def rope(self, x, positions):  # x: n x heads x head_dim
        angle = positions[:, None] * self.inv_freq[None, :]
        cos = np.concatenate([np.cos(angle)] * 2, axis=-1)[:, None, :]
        sin = np.concatenate([np.sin(angle)] * 2, axis=-1)[:, None, :]
        half = self.head_dim // 2
        rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
        return x * cos + rotated * sin

    def attention(self, lw, h, positions, cache):
        n = h.shape[0]
        q = (h @ lw["self_attn.q_proj.weight"].T).reshape(n, self.heads, self.head_dim)
        k = (h @ lw["self_attn.k_proj.weight"].T).reshape(n, self.kv_heads, self.head_dim)
        v = (h @ lw["self_attn.v_proj.weight"].T).reshape(n, self.kv_heads, self.head_dim)
        q = self.rope(self.rms(q, lw["self_attn.q_norm.weight"]), positions)
        k = self.rope(self.rms(k, lw["self_attn.k_norm.weight"]), positions)
        cache[0].append(k)
        cache[1].append(v)
        keys, values = np.concatenate(cache[0]), np.concatenate(cache[1])  # total x kv x d
        group = self.heads // self.kv_heads
        out = np.empty((n, self.heads, self.head_dim))
        for head in range(self.heads):
            scores = q[:, head, :] @ keys[:, head // group, :].T / np.sqrt(self.head_dim)
            # Causal: query i (at position start + i) sees keys up to its own position.
            scores[np.arange(keys.shape[0])[None, :] > positions[:, None]] = -np.inf
            p = np.exp(scores - scores.max(axis=-1, keepdims=True))
            out[:, head, :] = (p / p.sum(axis=-1, keepdims=True)) @ values[:, head // group, :]
        return out.reshape(n, -1) @ lw["self_attn.o_proj.weight"].T

    def forward(self, ids):
        """Appends ids to the sequence; returns the last position's logits."""
        positions = np.arange(self.length, self.length + len(ids), dtype=np.float64)
        x = self.embed[np.asarray(ids)]
        for lw, cache in zip(self.layers, self.cache):
            x = x + self.attention(lw, self.rms(x, lw["input_layernorm.weight"]), positions, cache)
            h = self.rms(x, lw["post_attention_layernorm.weight"])
            gate = h @ lw["mlp.gate_proj.weight"].T
            x = x + (gate / (1 + np.exp(-gate)) * (h @ lw["mlp.up_proj.weight"].T)) @ lw["mlp.down_proj.weight"].T
        self.length += len(ids)
        return self.rms(x[-1], self.norm) @ self.lm_head.T


def greedy(model, ids, steps):
    """(tokens, logits): the logits after the prompt and after each of the first steps - 1 greedy
    tokens, and the argmax of each."""
    tokens, logits = [], []
    last = model.forward(ids)
    for i in range(steps):
        logits.append(last)
        tokens.append(int(np.argmax(last)))
        if i + 1 < steps:
            last = model.forward([tokens[-1]])
    return tokens, logits


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--ids", required=True, help="the prompt's token ids, comma-separated")
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    ids = [int(x) for x in args.ids.split(",")]
    tokens, logits = greedy(TextModel(args.model), ids, args.steps)
    with open(args.out, "wb") as f:
        f.write(np.asarray(tokens, dtype="<i4").tobytes())
        f.write(np.asarray(logits, dtype="<f4").tobytes())
    print(f"text_ref64: {len(ids)} prompt tokens, {args.steps} steps, tokens {tokens}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
