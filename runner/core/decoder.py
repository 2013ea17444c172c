"""The `transformer-decode` model: a small pre-norm decoder doing one-token decode steps.

Imports torch: only runner.core.workloads' build function imports this module.

The KV cache is a set of buffers sized by prepare_batch(), read and never written inside
forward(). A real decode loop appends the new token's K/V in place; here the new token is
attended to beside the cache instead, so the step is a pure function of its input. That
keeps every mode comparable: an in-place cache write would be a mutated input, which
makes reduce-overhead skip CUDA graphs, and would change the cache between timed steps.
"""

from __future__ import annotations

import math
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, heads: int, kv_len: int):
        super().__init__()
        self.heads, self.head_dim, self.kv_len = heads, d_model // heads, kv_len
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.up = nn.Linear(d_model, 4 * d_model)
        self.down = nn.Linear(4 * d_model, d_model)
        empty = torch.zeros(0, heads, kv_len, self.head_dim)
        self.register_buffer("k_cache", empty, persistent=False)
        self.register_buffer("v_cache", empty.clone(), persistent=False)

    def prepare_batch(self, batch_size: int, generator: torch.Generator) -> None:
        ref = self.proj.weight
        shape = (batch_size, self.heads, self.kv_len, self.head_dim)
        # Drawn on the device: a CPU draw of a GiB-sized cache would dominate setup.
        self.k_cache = torch.randn(shape, generator=generator, device=ref.device,
                                   dtype=torch.float32).to(ref.dtype)
        self.v_cache = torch.randn(shape, generator=generator, device=ref.device,
                                   dtype=torch.float32).to(ref.dtype)
        # Buffers of a user module are not static inputs by default: CUDA graph trees
        # would copy the whole cache into the graph's placeholders on every replay.
        # mark_static_address is torch's own answer for KV caches.
        mark = getattr(torch._dynamo, "mark_static_address", None)
        if mark is not None:
            mark(self.k_cache)
            mark(self.v_cache)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, 3, self.heads, self.head_dim).unbind(1)
        scale = 1.0 / math.sqrt(self.head_dim)
        cached = (q.unsqueeze(-2) @ self.k_cache.transpose(-1, -2)).squeeze(-2)  # b,h,L
        new = (q * k).sum(-1, keepdim=True)  # b,h,1: the token attends to itself too
        # Softmax in fp32: bf16 logits over a long cache lose too much precision.
        p = torch.softmax(torch.cat([cached, new], -1).float() * scale, -1).to(x.dtype)
        attn = (p[..., :-1].unsqueeze(-2) @ self.v_cache).squeeze(-2) + p[..., -1:] * v
        x = x + self.proj(attn.reshape(b, d))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class Decoder(nn.Module):
    def __init__(self, layers: int, d_model: int, heads: int, kv_len: int, vocab: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList(DecoderLayer(d_model, heads, kv_len)
                                    for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    @torch.no_grad()
    def prepare_batch(self, batch_size: int) -> None:
        """Allocate a KV cache of batch_size sequences (fixed seed: same for every mode)."""
        gen = torch.Generator(device=self.head.weight.device).manual_seed(1234)
        for layer in self.layers:  # DecoderLayers (__init__): a ModuleList yields Modules
            cast(DecoderLayer, layer).prepare_batch(batch_size, gen)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(token_ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.ln_f(x))
