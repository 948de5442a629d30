#!/usr/bin/python3
"""A ragged transformer encoder layer in PyTorch whose attention is the
generated multi-head attention of examples/mha.toy, called as the custom
operator `lib.ops.mha` on a jagged nested tensor (no padding, no copy of
the sequences), checked against torch.nn.functional.scaled_dot_product_attention
on the padded batch with the same weights.

    PYTHONPATH=python examples/python/encoder_layer.py [--device cuda] [--compile]

Needs PyTorch 2.4 or later (custom operators, jagged nested tensors); run by
tests/python/test_torch.py (CPU) and tests/python/test_cuda.py (GPU, with
torch.compile(fullgraph=True)).
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class RaggedEncoderLayer(nn.Module):
    """Post-norm encoder layer: x + attention, LayerNorm, + feed-forward,
    LayerNorm. Takes and returns a jagged nested tensor (B, j, d_model)."""

    def __init__(self, lib, d_model=64, nhead=4, dim_ff=128):
        super().__init__()
        self.lib, self.H, self.D = lib, nhead, d_model // nhead
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, dim_ff), nn.GELU(), nn.Linear(dim_ff, d_model))

    def forward(self, x):
        values, offsets = x.values(), x.offsets()  # (T, d_model) packed rows and cu_seqlens: views, no copy
        qkv = self.qkv(values).view(-1, 3, self.H, self.D)
        q, k, v = (qkv[:, i].contiguous() for i in range(3))
        q = torch.nested.nested_tensor_from_jagged(q, offsets)
        attn = self.lib.ops.mha(q, {"k": k, "v": v, "cu_seqlens": offsets})  # a nested tensor, like q
        h = self.ln1(values + self.proj(attn.values().reshape(-1, self.H * self.D)))
        out = self.ln2(h + self.ff(h))
        return torch.nested.nested_tensor_from_jagged(out, offsets)


def reference(layer, seqs):
    """The same layer on the zero-padded batch, attention by SDPA with the
    padded keys masked out."""
    lens = torch.tensor([s.shape[0] for s in seqs], device=seqs[0].device)
    B, L, d = len(seqs), int(lens.max()), seqs[0].shape[1]
    x = torch.zeros(B, L, d, device=seqs[0].device)
    for b, s in enumerate(seqs):
        x[b, : s.shape[0]] = s
    q, k, v = layer.qkv(x).view(B, L, 3, layer.H, layer.D).unbind(2)
    keep = torch.arange(L, device=x.device)[None, :] < lens[:, None]
    a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                       attn_mask=keep[:, None, None, :])
    h = layer.ln1(x + layer.proj(a.transpose(1, 2).reshape(B, L, d)))
    out = layer.ln2(h + layer.ff(h))
    return [out[b, :n] for b, n in enumerate(lens.tolist())]


def check(lib, device="cpu", compile=False, lengths=(5, 1, 9, 3), seed=0):
    """Runs the layer (eager, and compiled with fullgraph=True when asked)
    and returns the largest difference from the padded SDPA reference."""
    torch.manual_seed(seed)
    layer = RaggedEncoderLayer(lib).to(device).eval()
    seqs = [torch.randn(n, 64, device=device) for n in lengths]
    x = torch.nested.nested_tensor(seqs, layout=torch.jagged)
    with torch.no_grad():
        want = torch.cat(reference(layer, seqs))
        got = layer(x)
        assert got.is_nested and torch.equal(got.offsets(), x.offsets())
        err = (got.values() - want).abs().max().item()
        if compile:
            compiled = torch.compile(layer, fullgraph=True)
            got_c = compiled(x)
            err = max(err, (got_c.values() - want).abs().max().item())
            # compiled and eager agree closely (the same operator does the attention)
            torch.testing.assert_close(got_c.values(), got.values(), rtol=1e-4, atol=1e-5)
    return err


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--compile", action="store_true")
    a = ap.parse_args()
    import dccc

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    lib = dccc.compile(os.path.join(root, "examples", "mha.toy"), target="cuda" if a.device.startswith("cuda") else "cpu",
                       torch_namespace="dccc")
    err = check(lib, a.device, a.compile)
    print(f"encoder layer ({a.device}{', compiled' if a.compile else ''}): max |dccc - SDPA| = {err:.2e}")
    sys.exit(0 if err < 1e-4 else 1)


if __name__ == "__main__":
    main()
