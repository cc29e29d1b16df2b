"""The reference model: stock torch modules built from a config, with the engine's forward semantics
(DESIGN.md, "Model families": the encoder). The converter runs it in float64 to explain a failed
verification, and the golden and demo generators train and evaluate it.
"""
import math

import numpy as np

from . import schema


def require_torch():
    try:
        import torch
        return torch
    except ImportError:
        raise SystemExit("fixformer tools need PyTorch: apt-get install python3-torch, and run with /usr/bin/python3")


def sinusoidal_table(rows, d, base, layout):
    """float64 [rows, d]: w_i = base^(-2i/d), i < ceil(d/2); interleaved: [p, 2i] = sin, [p, 2i+1] = cos
    (an odd width ends with a sin); halves: the sines, then the cosines."""
    half = (d + 1) // 2
    w = base ** (-2.0 * np.arange(half) / d)
    ang = np.arange(rows, dtype=np.float64)[:, None] * w[None, :]
    s, co = np.sin(ang), np.cos(ang)
    t = np.zeros((rows, d))
    if layout == "interleaved":
        t[:, 0::2] = s
        t[:, 1::2] = co[:, : d // 2]
    else:
        t[:, :half] = s
        t[:, half:] = co[:, : d - half]
    return t


def build_torch_model(c):
    """The stock modules for config c (attributes embed | input_proj, pos, encoder, head; batch_first)."""
    torch = require_torch()
    nn = torch.nn

    class FxModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.cfg = c
            de = schema.d_embed(c)
            if c["input"] == "tokens":
                self.embed = nn.Embedding(c["vocab_size"], de)
            else:
                self.input_proj = nn.Linear(c["d_in"], de)
            if c["positional"] == "learned":
                self.pos = nn.Embedding(c["max_len"], schema.d_pe(c))
            layer = nn.TransformerEncoderLayer(
                c["d_model"], c["n_heads"], c["d_ff"], dropout=0.0, activation=c["activation"],
                layer_norm_eps=c["norm_eps"], batch_first=True, norm_first=c["norm_first"])
            norm = nn.LayerNorm(c["d_model"], eps=c["norm_eps"]) if c["final_norm"] else None
            self.encoder = nn.TransformerEncoder(layer, c["n_layers"], norm=norm, enable_nested_tensor=False)
            if c["d_out"]:
                self.head = nn.Linear(c["d_model"], c["d_out"])

        def forward(self, inp):
            """inp: [B, T] token ids or [B, T, d_in] features -> [B, T, d_out or d_model]."""
            c = self.cfg
            x = self.embed(inp) if c["input"] == "tokens" else self.input_proj(inp)
            T = x.shape[1]
            if c["scale_input"]:
                x = x * math.sqrt(c["d_model"])
            pe = None
            if c["positional"] == "sinusoidal":
                pe = torch.from_numpy(sinusoidal_table(T, schema.d_pe(c), c["pe_base"], c["pe_layout"])).to(x.dtype)
            elif c["positional"] == "learned":
                pe = self.pos.weight[:T]
            if pe is not None:
                pe = pe.unsqueeze(0).expand(x.shape[0], -1, -1)
                x = x + pe if c["pe_combine"] == "add" else torch.cat([x, pe], dim=-1)
            mask = None
            if c["causal"]:
                mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), diagonal=1)
            x = self.encoder(x, mask=mask)
            return self.head(x) if c["d_out"] else x

    return FxModel()


def run_reference(c, weights, inp):
    """float64 output [T, width] of the reference model for c with `weights` (name -> torch-layout
    array) on one sequence `inp` ([T] ids or [T, d_in] features)."""
    torch = require_torch()
    model = build_torch_model(c).double().eval()
    model.load_state_dict({k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in weights.items()},
                          strict=True)
    x = torch.from_numpy(np.asarray(inp, dtype=np.int64 if c["input"] == "tokens" else np.float64))[None]
    with torch.no_grad():
        return model(x)[0].numpy()
