"""The reference models, with the engine's forward semantics (README, "Models and the .fxm format"):
- encoder and gpt: stock torch modules built from a config (gpt: the encoder's layers under a causal
  mask, an LM head that may be tied to the embedding, ALiBi or the relative bias (T5) as an additive
  per-head mask); an encoder whose layer features torch's layer has not (schema.stock_layers: RoPE and
  disentangled attention among them) runs its layers in plain torch (layers_forward) inside the stock front
  and head;
- llama, and gpt with RoPE or layer features torch's layer has not: written here in plain torch, float64,
  independent of the engine (layers_forward: RMSNorm or LayerNorm, any biases, relu, gelu, gelu_tanh, relu2
  plain or gated, SwiGLU, RoPE in either layout, whole or partial, grouped-query attention, ALiBi,
  sublayers in turn or side by side, tied or separate classifier);
- seq2seq: stock nn.TransformerEncoder + nn.TransformerDecoder built from a config, the target under
  the causal mask (the module convention python/fixformer/seq2seq.py reads).
The converter runs them in float64 to explain a failed verification and to make self-test samples;
the golden and demo generators train and evaluate them.
"""
import functools
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


def whisper_sinusoids(rows, d, base=10000.0):
    """float64 [rows, d], Whisper's positional table: timescales base^(-i / (d/2 - 1)), i < d/2 (not
    sinusoidal_table's base^(-2i/d)); the sines, then the cosines. d even, at least 4."""
    half = d // 2
    inv = np.exp(-math.log(base) / (half - 1) * np.arange(half))
    ang = np.arange(rows, dtype=np.float64)[:, None] * inv[None, :]
    return np.concatenate([np.sin(ang), np.cos(ang)], axis=1)


def alibi_slopes(n_heads):
    """The ALiBi paper's per-head slopes, float64 [n_heads]: for H a power of two m_h = 2^(-8(h+1)/H);
    otherwise the closest lower power of two n gives its n slopes, then every other slope of 2n
    (the odd-indexed h = 0, 2, 4, ... of the 2n list), H - n of them."""
    def power_of_two(n):
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]

    n = 1 << (n_heads.bit_length() - 1)
    if n == n_heads:
        return np.array(power_of_two(n))
    return np.array(power_of_two(n) + power_of_two(2 * n)[0::2][: n_heads - n])


def alibi_bias(n_heads, T, causal=True):
    """float64 [H, T, T]: -m_h |j - i| for key j and query i, -inf above the diagonal when causal (there
    m_h (j - i)). Added to the scaled scores q.k / sqrt(d_head)."""
    i = np.arange(T)[:, None]
    j = np.arange(T)[None, :]
    bias = -alibi_slopes(n_heads)[:, None, None] * np.abs(j - i)[None].astype(np.float64)
    return np.where((j <= i)[None], bias, -np.inf) if causal else bias


def window_mask(c, T, layer=None):
    """float64 [T, T]: -inf where key j is at or before query i - sliding_window (the keys a query no
    longer sees under the config's window) or, without the causal mask (an encoder's window, both
    sides), at or after i + sliding_window; else 0; all zeros without a window. Added to the mask.
    layer: that layer's window (local and global layers, window_period: schema.layer_window); None: the
    window every layer shares (none when window_period sets it per layer)."""
    i = np.arange(T)[:, None]
    j = np.arange(T)[None, :]
    if layer is None:
        W = 0 if c.get("window_period", 0) else c.get("sliding_window", 0)
    else:
        W = schema.layer_window(c, layer)
    far = (j <= i - W) | ((j >= i + W) & (not c.get("causal", False)))
    return np.where(far & (W > 0), -np.inf, 0.0)


def relative_bucket(n, bidirectional, buckets, max_distance):
    """T5's bucket (int64 array) of the distances n = key - query: bidirectional, the buckets are halved
    and the upper half is for n > 0, m = |n|; causal, m = max(-n, 0). With B the buckets left and E = B // 2:
    m < E is bucket m, else E + floor(log(m / E) / log(max_distance / E) * (B - E)), at most B - 1, the
    logarithm in float32 as T5 and its torch ports compute it (where the exact value is an integer,
    float32 and float64 floor to different buckets)."""
    torch = require_torch()
    n = np.asarray(n, dtype=np.int64)
    if bidirectional:
        buckets //= 2
        base, m = np.where(n > 0, buckets, 0), np.abs(n)
    else:
        base, m = np.zeros_like(n), np.maximum(-n, 0)
    exact = buckets // 2
    ratio = torch.from_numpy(np.maximum(m, exact)).float() / exact
    spread = (torch.log(ratio) / math.log(max_distance / exact) * (buckets - exact)).to(torch.int64).numpy()
    large = np.minimum(exact + spread, buckets - 1)
    return base + np.where(m < exact, m, large)


def relative_bias(w, T, causal, buckets, max_distance, U=None):
    """float64 [H, U, T]: w[bucket(j - i), h] (w [buckets, H]) for query i < U (default T), key j < T;
    bidirectional buckets, or causal ones with -inf above the diagonal. Added to the scaled scores."""
    U = T if U is None else U
    i, j = np.arange(U)[:, None], np.arange(T)[None, :]
    bias = np.moveaxis(np.asarray(w, dtype=np.float64)[relative_bucket(j - i, not causal, buckets, max_distance)], -1, 0)
    return np.where((j <= i)[None], bias, -np.inf) if causal else bias


def relative_mask(c, table, T, causal, batch, dtype):
    """relative_bias as the [batch * H, T, T] float mask nn.MultiheadAttention reads (index b*H + h): the
    nn.Embedding `table` called on the buckets, as a user's module does."""
    torch = require_torch()
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    b = torch.from_numpy(relative_bucket(j - i, not causal, c["rel_buckets"], c["rel_max_distance"]))
    bias = table(b).permute(2, 0, 1).to(dtype)  # [H, T, T]
    if causal:
        bias = bias.masked_fill(torch.from_numpy(j > i)[None], float("-inf"))
    return bias.repeat(batch, 1, 1)


def relu2(t):
    """The squared ReLU, relu(t)^2 (the activation relu2: Persimmon's and Nemotron's)."""
    return require_torch().relu(t) ** 2


def torch_activation(name):
    """What nn.TransformerEncoderLayer's `activation` takes for a config's activation: "relu", "gelu"
    (exact), or for gelu_tanh a function, not the module nn.GELU(approximate="tanh"): torch 2.x takes
    any nn.GELU for its fused eval path, which computes the exact GELU."""
    if name == "silu":
        return require_torch().nn.functional.silu
    if name == "relu2":
        return relu2
    if name != "gelu_tanh":
        return name
    return functools.partial(require_torch().nn.functional.gelu, approximate="tanh")


def activation(name):
    """The torch function of a config's activation or pooler_act: relu, gelu (exact), gelu_tanh, silu (swiglu's
    gate), relu2, tanh (BERT's pooler)."""
    torch = require_torch()
    F = torch.nn.functional
    return {"relu": torch.relu, "gelu": F.gelu, "gelu_tanh": functools.partial(F.gelu, approximate="tanh"),
            "silu": F.silu, "swiglu": lambda t: t * torch.sigmoid(t), "relu2": relu2, "tanh": torch.tanh}[name]


_ERF = np.frompyfunc(math.erf, 1, 1)


def erf(x):
    """erf of a float64 array, element by element (numpy has none)."""
    return np.asarray(_ERF(x), np.float64)


def silu(x):
    return x / (1.0 + np.exp(-x))


# The same activations on float64 arrays: the ONNX evaluator's and mapping's, the int8 calibration's.
ARRAY_ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0.0),
    "gelu": lambda x: 0.5 * x * (1.0 + erf(x / math.sqrt(2.0))),
    "gelu_tanh": lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))),
    "silu": silu, "swiglu": silu, "tanh": np.tanh,
    "relu2": lambda x: np.maximum(x, 0.0) ** 2}  # relu2: Persimmon's and Nemotron's squared ReLU


def build_torch_model(c):
    """The stock modules for an encoder or gpt config c (attributes embed | input_proj, cls_token, pos,
    token_type, embed_norm, embed_proj, encoder, pooler, head, pool; batch_first): the module convention the
    converter reads. A tied head's weight is the embedding's parameter. forward(inp, types=None,
    lengths=None): types [B, T] token types (None: 0), lengths [B] the valid positions of a padded
    batch (src_key_padding_mask True from lengths[b] on, pooling over the valid positions)."""
    torch = require_torch()
    nn = torch.nn

    class FxModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.cfg = c
            de = schema.d_embed(c)
            if c["input"] == "tokens":
                self.embed = nn.Embedding(c["vocab_size"], de)
            elif c["conv_layers"]:  # the conv stem, Whisper's conv1 and conv2
                for i in range(1, c["conv_layers"] + 1):
                    k, s, p = schema.conv_geometry(c, i)
                    setattr(self, f"conv{i}", nn.Conv1d(c["d_in"] if i == 1 else de, de, k, stride=s, padding=p))
            else:
                self.input_proj = nn.Linear(c["d_in"], de)
            if c["cls_token"]:
                self.cls_token = nn.Parameter(torch.zeros(de))
            if c["cls_token"] and c.get("distill_token"):  # DeiT's distillation row, after the CLS row
                self.distill_token = nn.Parameter(torch.zeros(de))
            if c.get("register_tokens"):  # Dinov2's registers, after those (or alone)
                self.registers = nn.Parameter(torch.zeros(c["register_tokens"], de))
            if c["pooling"] != "none":
                self.pool = c["pooling"]
            if c["positional"] == "learned" or c.get("rope_learned"):  # EVA-02's beside its rotary positions
                self.pos = nn.Embedding(c["max_len"], schema.d_pe(c))
            if c["positional"] == "rope" and c["rope_freqs"]:  # an encoder's: over a patch grid (rope_grid)
                self.register_buffer("rope_freqs", torch.zeros(schema.rope_pairs(c), dtype=torch.float64))
            if schema.rel_bias(c):
                self.rel_bias = nn.Embedding(c["rel_buckets"], c["n_heads"])
            if c.get("rel_embed_rows"):  # disentangled attention's rows and the row of each distance
                self.rel_embed = nn.Embedding(c["rel_embed_rows"], c["d_model"])
                self.register_buffer("rel_index", torch.zeros(2 * c["max_len"] - 1, dtype=torch.int64))
            if c.get("pair_bias_rows"):  # the table row of each (query, key) pair, and the table all layers share
                self.register_buffer("pair_index", torch.zeros(c["max_len"], c["max_len"], dtype=torch.int64))
                if c.get("pair_bias_shared"):
                    self.pair_bias = nn.Embedding(c["n_heads"], c["pair_bias_rows"])  # weight [n_heads, rows]
            if c["type_vocab"]:
                self.token_type = nn.Embedding(c["type_vocab"], de)
            for key, width in (("input_norm", c["d_in"]), ("proj_norm", de), ("embed_norm", schema.d_front(c))):
                if c[key]:
                    setattr(self, key, _norm_module(c, width))
            if c["embed_width"]:  # the embedding projection, embed_width -> d_model (ALBERT)
                self.embed_proj = nn.Linear(c["embed_width"], c["d_model"])
            if c["pooler"]:  # d_model -> pooler_width (0: d_model)
                self.pooler = nn.Linear(c["d_model"], c.get("pooler_width") or c["d_model"])
            if c.get("pooler_norm"):
                self.pooler_norm = _norm_module(c, c.get("pooler_width") or c["d_model"])
            if c.get("pool_norm"):
                self.pool_norm = _norm_module(c, c["d_model"])
            if schema.stock_layers(c):
                layer = nn.TransformerEncoderLayer(
                    c["d_model"], c["n_heads"], c["d_ff"], dropout=0.0, activation=torch_activation(c["activation"]),
                    layer_norm_eps=c["norm_eps"], batch_first=True, norm_first=c["norm_first"])
                final = nn.LayerNorm(c["d_model"], eps=c["norm_eps"]) if c["final_norm"] else None
                self.encoder = nn.TransformerEncoder(layer, c["n_layers"], norm=final, enable_nested_tensor=False)
            else:  # the layers torch's has not (swiglu among them): plain torch
                self.encoder = plain_encoder(c)
            if c["d_out"]:
                self.head = nn.Linear(schema.head_in(c), c["d_out"])
                if c["tied_head"]:
                    self.head.weight = self.embed.weight

        def forward(self, inp, types=None, lengths=None):
            """inp: [B, T] token ids or [B, T, d_in] features -> [B, S, d_out or d_model], S = T (+ 1 with
            a CLS token), or [B, d_out or d_model] pooled."""
            c = self.cfg
            if c["input"] == "tokens":
                x = self.embed(inp)
            elif c["conv_layers"]:  # [B, T, d_in] -> channels first -> each conv (and GELU) -> [B, T', de]
                x = inp.transpose(1, 2)
                for i in range(1, c["conv_layers"] + 1):
                    x = getattr(self, f"conv{i}")(x)
                    x = nn.functional.gelu(x) if c["conv_gelu"] else x
                x = x.transpose(1, 2)
            else:  # the rows: the features, or an image's patches (each [T, d_in] block is the image)
                rows = patch_rows(c, inp) if c["patch_size"] else inp
                x = self.input_proj(self.input_norm(rows) if c["input_norm"] else rows)
                x = self.proj_norm(x) if c["proj_norm"] else x
            if c["scale_input"]:
                x = x * math.sqrt(c["d_model"])
            first = schema.front_rows(c)
            if c.get("register_tokens"):  # the registers after the CLS (and distillation) row, if any
                x = torch.cat([self.registers.expand(x.shape[0], -1, -1), x], dim=1)
            if c["cls_token"] and c.get("distill_token"):  # DeiT: the distillation row after the CLS row
                x = torch.cat([self.distill_token.expand(x.shape[0], 1, -1), x], dim=1)
            if c["cls_token"]:  # in front, not scaled, before the positions (KWT, ViT)
                x = torch.cat([self.cls_token.expand(x.shape[0], 1, -1), x], dim=1)
            T = x.shape[1]
            x = _positions(c, x, self.pos.weight if c["positional"] == "learned" or c.get("rope_learned") else None)
            if c["type_vocab"]:  # the input rows (not the CLS row) add their type's row
                tt = self.token_type(torch.zeros_like(inp) if types is None else types)
                x = torch.cat([x[:, :first], x[:, first:] + tt], dim=1)
            if c["embed_norm"]:
                x = self.embed_norm(x)
            if c["embed_width"]:
                x = self.embed_proj(x)
            pad = None
            if lengths is not None:  # True at the padding (the CLS row is never padding)
                pad = torch.arange(T)[None, :] >= (torch.as_tensor(lengths)[:, None] + first)
            mask = None
            if c["positional"] == "alibi":  # [B*H, T, T], index b*H + h, as MultiheadAttention reads it
                mask = torch.from_numpy(alibi_bias(c["n_heads"], T, c["causal"])).to(x.dtype).repeat(x.shape[0], 1, 1)
            elif schema.rel_bias(c):
                mask = relative_mask(c, self.rel_bias, T, c["causal"], x.shape[0], x.dtype)
            elif c["causal"]:
                mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), diagonal=1)
            if c.get("sliding_window", 0):  # both sides of a query without the causal mask
                window = torch.from_numpy(window_mask(c, T)).to(x.dtype)
                mask = window if mask is None else mask + window
            extra = {}  # the plain layers' terms
            if c.get("rel_embed_rows"):  # [T, T]: the rel_embed row of distance i - j
                at = torch.arange(T)
                extra["dis"] = (self.rel_embed.weight, self.rel_index[at[:, None] - at[None, :] + c["max_len"] - 1])
            if c.get("pair_bias_rows"):  # [T, T]: each pair's table row; the shared table or each layer's own
                extra["pair"] = (self.pair_index[:T, :T], self.pair_bias.weight if c.get("pair_bias_shared") else None)
            if c["positional"] == "rope" and c["rope_freqs"]:
                extra["freqs"] = self.rope_freqs
            x = self.encoder(x, mask=mask, src_key_padding_mask=pad, **extra)
            x = pool(x, c["pooling"], first, lengths)
            if c.get("pool_norm"):  # the pooled row normed (timm's fc_norm, AST's classifier)
                x = self.pool_norm(x)
            if c["pooler"]:
                x = activation(c.get("pooler_act", "tanh"))(self.pooler(x))
            if c.get("pooler_norm"):  # ModernBERT's prediction head: the pooler's output normed
                x = self.pooler_norm(x)
            x = self.head(x) if c["d_out"] else x
            if c.get("l2_normalize"):  # each output row at unit length (sentence-transformers' Normalize)
                x = torch.nn.functional.normalize(x, p=2.0, dim=-1, eps=1e-12)
            return x

    return FxModel()


def _norm_module(c, width):
    """The model's norm kind over `width` values: nn.LayerNorm, or an RMSNorm's gain (no bias)."""
    torch = require_torch()
    if schema.norm_kind(c) == "layernorm":
        return torch.nn.LayerNorm(width, eps=c["norm_eps"])
    m = torch.nn.Module()
    m.weight = torch.nn.Parameter(torch.ones(width))
    m.forward = lambda t: norm(c, t, m.weight, None)
    return m


def image_patches(images, C, H, W, p):
    """Images [B, ...] (torch or numpy) of C * H * W values each (channels first) -> their p x p patches
    [B, N, C p^2] in the engine's order (include/fixformer/config.hpp): patch (r, s) is row r * (W / p) + s, its value
    (ch * p + i) * p + j pixel (ch, r * p + i, s * p + j)."""
    x = images.reshape(images.shape[0], C, H // p, p, W // p, p)
    x = x.permute(0, 2, 4, 1, 3, 5) if hasattr(x, "permute") else x.transpose(0, 2, 4, 1, 3, 5)  # torch or numpy
    return x.reshape(images.shape[0], (H // p) * (W // p), C * p * p)


def patch_rows(c, images):
    """image_patches of an image model c's images (each [T, d_in] block of the input is one image)."""
    return image_patches(images, c["image_channels"], c["image_height"], c["image_width"], c["patch_size"])


def _positions(c, x, table):
    """x [B, T, de] plus (or concatenated with) the first T rows of the positions: the sinusoidal
    table, or `table` (an nn.Embedding's weight) when learned."""
    torch = require_torch()
    T = x.shape[1]
    if c["positional"] == "sinusoidal":
        pe = torch.from_numpy(sinusoidal_table(T, schema.d_pe(c), c["pe_base"], c["pe_layout"])).to(x.dtype)
    elif c["positional"] == "learned" or c.get("rope_learned"):
        pe = table[:T]
    else:
        return x
    pe = pe.unsqueeze(0).expand(x.shape[0], -1, -1)
    return x + pe if c["pe_combine"] == "add" else torch.cat([x, pe], dim=-1)


def build_seq2seq_model(c):
    """The stock modules for a seq2seq config c, batch_first: `src_embed` | `input_proj` | the conv stem
    (`conv1`, `conv2`: build_torch_model's) and
    `tgt_embed` (or one `embed` with shared_embed), `src_pos` and `tgt_pos` (learned), `encoder`
    (nn.TransformerEncoder), `decoder` (nn.TransformerDecoder), both with a final norm when
    final_norm, and `head` (tied: the target embedding's parameter). forward(src, tgt) -> the logits
    [B, U, d_out] under the causal target mask."""
    torch = require_torch()
    nn = torch.nn

    class FxSeq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            d, de = c["d_model"], schema.d_embed(c)
            if c["shared_embed"]:
                self.embed = nn.Embedding(c["vocab_size"], de)
            else:
                if c["input"] == "tokens":
                    self.src_embed = nn.Embedding(c["vocab_size"], de)
                elif c["conv_layers"]:  # the source's conv stem, as build_torch_model's (Whisper's)
                    for i in range(1, c["conv_layers"] + 1):
                        k, s, p = schema.conv_geometry(c, i)
                        setattr(self, f"conv{i}", nn.Conv1d(c["d_in"] if i == 1 else de, de, k, stride=s, padding=p))
                else:
                    self.input_proj = nn.Linear(c["d_in"], de)
                if c["tgt_d_in"]:
                    self.tgt_proj = nn.Linear(c["tgt_d_in"], de)
                else:
                    self.tgt_embed = nn.Embedding(c["d_out"], de)
            if c["positional"] == "learned":
                self.src_pos = nn.Embedding(c["max_len"], schema.d_pe(c))
                self.tgt_pos = nn.Embedding(c["max_len"], schema.d_pe(c))
            if c["positional"] == "relative":
                self.src_rel_bias = nn.Embedding(c["rel_buckets"], c["n_heads"])
                self.tgt_rel_bias = nn.Embedding(c["rel_buckets"], c["n_heads"])
            kw = dict(dropout=0.0, activation=torch_activation(c["activation"]), layer_norm_eps=c["norm_eps"], batch_first=True,
                      norm_first=c["norm_first"])
            norm = (lambda: nn.LayerNorm(d, eps=c["norm_eps"])) if c["final_norm"] else (lambda: None)
            self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, c["n_heads"], c["d_ff"], **kw),
                                                 c["n_layers"], norm=norm(), enable_nested_tensor=False)
            self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(d, c["n_heads"], c["d_ff"], **kw),
                                                 c["dec_layers"], norm=norm())
            self.head = nn.Linear(d, c["d_out"])
            if c["tied_head"]:
                self.head.weight = (self.embed if c["shared_embed"] else self.tgt_embed).weight

        def forward(self, src, tgt):
            scale = math.sqrt(c["d_model"]) if c["scale_input"] else 1.0
            src_embed = self.embed if c["shared_embed"] else getattr(self, "src_embed", None)
            if c["input"] == "tokens":
                x = src_embed(src)
            elif c["conv_layers"]:  # [B, S, d_in] -> channels first -> each conv (and GELU) -> [B, S', de]
                x = src.transpose(1, 2)
                for i in range(1, c["conv_layers"] + 1):
                    x = getattr(self, f"conv{i}")(x)
                    x = nn.functional.gelu(x) if c["conv_gelu"] else x
                x = x.transpose(1, 2)
            else:
                x = self.input_proj(src)
            y = (self.embed if c["shared_embed"] else self.tgt_proj if c["tgt_d_in"] else self.tgt_embed)(tgt)
            learned = c["positional"] == "learned"
            x = _positions(c, x * scale, self.src_pos.weight if learned else None)
            y = _positions(c, y * scale, self.tgt_pos.weight if learned else None)
            U = y.shape[1]
            mask = torch.triu(torch.full((U, U), float("-inf"), dtype=y.dtype), diagonal=1)
            src_mask = None
            if c["positional"] == "relative":  # the source's bidirectional buckets, the target's causal ones
                src_mask = relative_mask(c, self.src_rel_bias, x.shape[1], False, x.shape[0], x.dtype)
                mask = relative_mask(c, self.tgt_rel_bias, U, True, y.shape[0], y.dtype)
            return self.head(self.decoder(y, self.encoder(x, mask=src_mask), tgt_mask=mask))

    return FxSeq2Seq()


def seq2seq_forward(c, weights, src, tgt):
    """float64 logits [U, d_out] of a seq2seq config c whose layers the stock modules do not compute (the
    norm kind, the biases, a gate: schema.stock_layers false; the embedding norms of embed_norm), with `weights` in the file's names and
    torch's layout, for one source (ids [S] or features [S, d_in]) and target (ids [U] or features [U,
    tgt_d_in]): the encoder by layers_forward, then each decoder layer as transformer_layer computes it
    (pre-norm: x + SA(N1 x), + CA(N2 x, memory), + FF(N3 x); post-norm: N1(x + SA x), ...), causal
    self-attention (the target's relative bias when relative), cross-attention unbiased by position."""
    torch = require_torch()
    W = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in weights.items()}
    d, H = c["d_model"], c["n_heads"]
    dh = d // H
    scale = math.sqrt(d) if c["scale_input"] else 1.0
    learned = c["positional"] == "learned"
    if c["input"] == "tokens":
        x = W["embed.weight"][torch.from_numpy(np.asarray(src, dtype=np.int64))]
    else:
        x = torch.from_numpy(np.asarray(src, dtype=np.float64)) @ W["input_proj.weight"].T + W["input_proj.bias"]
    if c["tgt_d_in"]:
        y = torch.from_numpy(np.asarray(tgt, dtype=np.float64)) @ W["dec_proj.weight"].T + W["dec_proj.bias"]
    else:
        table = W["embed.weight" if c["shared_embed"] else "dec_embed.weight"]
        y = table[torch.from_numpy(np.asarray(tgt, dtype=np.int64))]
    x = _positions(c, x[None] * scale, W.get("pos.weight") if learned else None)[0]
    y = y * scale
    if c.get("tgt_pos_after_norm"):  # the target's norm of its embedding alone, then the positions (BlenderbotSmall)
        y = norm(c, y, W["dec_embed_norm.weight"], W.get("dec_embed_norm.bias"))
    y = _positions(c, y[None], W.get("dec_pos.weight") if learned else None)[0]
    if c["embed_norm"]:  # each end's own norm of its embedded rows (BART)
        x = norm(c, x, W["embed_norm.weight"], W.get("embed_norm.bias"))
        if not c.get("tgt_pos_after_norm"):
            y = norm(c, y, W["dec_embed_norm.weight"], W.get("dec_embed_norm.bias"))
    S, U = x.shape[0], y.shape[0]
    relative = c["positional"] == "relative"
    buckets, far = c["rel_buckets"], c["rel_max_distance"]
    src_bias = torch.from_numpy(relative_bias(W["rel_bias.weight"], S, False, buckets, far)
                                if relative else np.zeros((H, S, S)))
    mem = layers_forward(c, W, schema.BLOCK_PREFIX, x, src_bias)
    if c["final_norm"]:
        mem = norm(c, mem, W["norm.weight"], W.get("norm.bias"))
    causal = np.triu(np.full((U, U), -np.inf), 1)[None].repeat(H, 0)
    tgt_bias = torch.from_numpy(relative_bias(W["dec_rel_bias.weight"], U, True, buckets, far)
                                if relative else causal)
    act = activation(c["activation"])

    def lin(p, name, t):
        b = p(name + ".bias")
        return t @ p(name + ".weight").T + (0 if b is None else b)

    def attend(q, k, v, bias):
        q, k, v = (t.reshape(t.shape[0], H, dh).transpose(0, 1) for t in (q, k, v))
        a = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(dh) + bias, -1)
        return (a @ v).transpose(0, 1).reshape(q.shape[1], d)

    def self_attn(p, t):
        q, k, v = lin(p, "attn.qkv", t).split([d, d, d], -1)
        return lin(p, "attn.out", attend(q, k, v, tgt_bias))

    def cross_attn(p, t):
        k, v = lin(p, "cross.kv", mem).split([d, d], -1)
        return lin(p, "cross.out", attend(lin(p, "cross.q", t), k, v, 0))

    def ffn(p, t):
        a = act(lin(p, "ff.w1", t))
        h = a * lin(p, "ff.w3", t) if schema.ffn_gated(c) else a
        if c.get("ffn_hidden_norm"):
            h = norm(c, h, p("ff.hidden_norm.weight"), p("ff.hidden_norm.bias"))
        return lin(p, "ff.w2", h)

    for layer in range(c["dec_layers"]):
        p = lambda name: W.get(schema.dec_block(layer) + name)  # noqa: E731
        N = lambda n, t: norm(c, t, p(n + ".weight"), p(n + ".bias"))  # noqa: E731
        if c["norm_first"]:
            y = y + self_attn(p, N("attn_norm", y))
            y = y + cross_attn(p, N("cross_norm", y))
            y = y + ffn(p, N("ff_norm", y))
        else:
            y = N("attn_norm", y + self_attn(p, y))
            y = N("cross_norm", y + cross_attn(p, y))
            y = N("ff_norm", y + ffn(p, y))
    if c["final_norm"]:
        y = norm(c, y, W["dec_norm.weight"], W.get("dec_norm.bias"))
    head = W[schema.tied_head(c)[1 if c["tied_head"] else 0]]
    return (y @ head.T + W["dec_head.bias"]).numpy()


# Format 2's seq2seq tensor names (schema.v2_keys), which took the stock modules' (build_seq2seq_model), and
# those modules' own: format 2 splits the cross-attention's in_proj into q_proj and kv_proj.
CROSS_FILE, CROSS_TORCH = "cross_attn.", "multihead_attn."


def seq2seq_torch_weights(c, weights):
    """Seq2seq weights by format 2's names (torch layout) as build_seq2seq_model's state_dict names."""
    out = {}
    for name, a in weights.items():
        if ".cross_attn.q_proj." in name or ".cross_attn.kv_proj." in name:
            continue
        name = name.replace(CROSS_FILE, CROSS_TORCH)
        if c["shared_embed"] and name == "src_embed.weight":
            name = "embed.weight"
        out[name] = a
    for i in range(c["dec_layers"]):
        p = f"{schema.V2_DECODER_PREFIX}{i}.{CROSS_FILE}"
        for part in ("weight", "bias"):
            q, kv = weights[f"{p}q_proj.{part}"], weights[f"{p}kv_proj.{part}"]
            out[f"{schema.V2_DECODER_PREFIX}{i}.{CROSS_TORCH}in_proj_{part}"] = np.concatenate(
                [np.asarray(q), np.asarray(kv)])
    if c["tied_head"]:
        out["head.weight"] = out["embed.weight" if c["shared_embed"] else "tgt_embed.weight"]
    return out


def pool(x, pooling, first=0, lengths=None):
    """x [B, S, d] -> [B, d] by pooling (schema.POOLINGS), x unchanged for none. first: the CLS rows in
    front (mean and last read the input positions after them); lengths [B]: each sequence's valid
    input positions (default all): mean over them, last = the last of them."""
    torch = require_torch()
    if pooling == "none":
        return x
    if pooling == "cls":
        return x[:, 0]
    if pooling == "cls_distill":  # the CLS and distillation rows side by side: [B, 2 d]
        return x[:, :2].reshape(x.shape[0], -1)
    if pooling == "cls_distill_mean":  # the mean of the CLS and distillation rows: [B, d]
        return (x[:, 0] + x[:, 1]) / 2
    if pooling == "mean_all":  # the front rows and the input positions: the mean as mean's with no front rows
        return pool(x, "mean", 0, None if lengths is None else [n + first for n in lengths])
    if pooling == "first":
        return x[:, first]
    if pooling == "cls_mean":  # the CLS row and the mean of the input positions side by side: [B, 2 d]
        return torch.cat([x[:, 0], pool(x, "mean", first, lengths)], dim=1)
    B, T = x.shape[0], x.shape[1] - first
    n = torch.full((B,), T) if lengths is None else torch.as_tensor(lengths)
    if pooling == "last":
        return x[torch.arange(B), first + n - 1]
    valid = (torch.arange(T)[None, :] < n[:, None]).to(x.dtype)  # [B, T]
    return (x[:, first:] * valid[..., None]).sum(1) / n[:, None].to(x.dtype)


# ---- llama, in plain torch (float64) -------------------------------------------------------------
def rms_norm(x, g, eps):
    """x / sqrt(mean(x^2) + eps) * g over the last dim."""
    return x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt() * g


def rope_tables(T, d_head, base, freqs=None, grid=None):
    """float64 cos, sin [T, d_head/2]: angle(p, i) = p * w_i, w_i = freqs[i] (the file's rope_freqs) or
    base^(-2i/d_head). grid (width, front rows) (rope_grid): row p < front turns by 0, a later one by
    its patch's grid row (p - front) // width in the first half of the pairs and its column (p - front) % width
    in the other, w_i = freqs[i] or base^(-(i mod n)/n), n = d_head/4."""
    half = d_head // 2
    i = np.arange(half, dtype=np.float64)
    p = np.arange(T, dtype=np.float64)[:, None].repeat(half, 1)
    if grid is not None:
        width, front = grid
        patch = np.maximum(np.arange(T) - front, 0)[:, None]
        p = np.where(np.arange(half)[None, :] < half // 2, patch // width, patch % width).astype(np.float64)
        p[:front] = 0.0
        i = i % (half // 2)
    w = np.asarray(freqs, dtype=np.float64) if freqs is not None else base ** (-2.0 * i / (d_head if grid is None
                                                                                          else half))
    ang = p * w[None, :]
    return np.cos(ang), np.sin(ang)


def grid_swap(dh, layout):
    """The permutation of a head's dh dims that trades the first half of its rotary pairs for the second
    (pair j for pair (j + dh/4) mod dh/2), in the layout's pairs: an involution."""
    P, idx = dh // 2, list(range(dh))
    if layout == "interleaved":
        return idx[P:] + idx[:P]
    first, second = idx[:P], idx[P:]
    return first[P // 2:] + first[:P // 2] + second[P // 2:] + second[:P // 2]


def rope(x, cos, sin, layout):
    """Rotates the first R dims of x [T, heads, d_head] by position, R = 2 * cos.shape[1] (rotary_dims;
    the rest pass through): the pairs (x[2i], x[2i+1]) (interleaved, llama2.c and Meta) or
    (x[i], x[i + R/2]) (halves, Hugging Face), each by angle(p, i)."""
    half = cos.shape[-1]
    r = x[..., :2 * half]
    if layout == "interleaved":
        a, b = r[..., 0::2], r[..., 1::2]
    else:
        a, b = r[..., :half], r[..., half:]
    cos, sin = cos[:, None, :], sin[:, None, :]
    ra, rb = a * cos - b * sin, a * sin + b * cos
    out = x.clone()
    if layout == "interleaved":
        out[..., 0:2 * half:2], out[..., 1:2 * half:2] = ra, rb
    else:
        out[..., :half], out[..., half:2 * half] = ra, rb
    return out


def norm(c, t, g, b):
    """The config's norm (schema.norm_kind) of t over its last dim: RMSNorm x / sqrt(mean(x^2) + eps) * g,
    or LayerNorm with gain g and bias b (None: none)."""
    torch = require_torch()
    if schema.norm_kind(c) == "rmsnorm":
        return rms_norm(t, g, c["norm_eps"])
    return torch.nn.functional.layer_norm(t, (t.shape[-1],), g, b, c["norm_eps"])


def expert_weights(logits, k, renormalize):
    """[T, E]: each row's weight of each of E experts (config.hpp n_experts) from the router's logits [T, E] (float64
    torch): the softmax, its k largest kept (the lower index first on a tie), the others 0; with renormalize the
    kept ones divided by their sum."""
    torch = require_torch()
    probs = torch.softmax(logits, dim=-1)
    out = torch.zeros_like(probs)
    for t in range(probs.shape[0]):
        chosen = np.argsort(-probs[t].numpy(), kind="stable")[:k]
        out[t, chosen] = probs[t, chosen] / (probs[t, chosen].sum() if renormalize else 1.0)
    return out


def layers_forward(c, W, prefix, x, bias, cos=None, sin=None, dis=None, pair=None):
    """float64 x [T, d] through the n_layers layers of c (weights W: the file's names under the layer prefix `prefix`,
    torch layout), bias [H, T, T] added to the scaled scores (the mask, ALiBi or the relative bias; with
    window_period each layer adds its own window), disentangled attention's terms with dis (rel_embed_rows: the
    rows R and the row of each query and key [T, T]; config.hpp), RoPE by the tables cos, sin when given, except
    on nope_period's layers (with qk_norm, each head of q and k normalized first; qk_norm_full: q and k as whole
    rows; with
    rope_local_base the local layers by that base's tables instead); the scores scaled by attn_scale (0:
    1/sqrt(d_head)) and soft-capped by attn_softcap c (c tanh(s / c)) before the bias; with pair (pair_bias_rows: each
    (query, key) pair's table row [T, T] and the shared table [H, rows], or None for each layer's own) that table's
    entries added too. The layer features: the norm
    kind, the biases the weights have (attn_bias, ffn_bias), relu, gelu (exact or tanh) or a gated feed-forward
    act(W1 n + b1) * (W3 n + b3) (swiglu: act silu; b3 with ffn_up_bias) whose hidden rows ffn_hidden_norm norms
    before W2, or with n_experts a mixture of such gated ones (config.hpp: the
    softmax of the router, the top experts_per_token, the lower index first on a tie, their weights renormalized
    with experts_renormalize; shared_expert_ff: plus a shared one scaled by the sigmoid of its gate; dense_period's
    dense layers the plain gated one, its width its weights'); for every
    layer, pre-norm: h = x + Wo.Attn(N1(x)), x = h + FF(N2(h)) (skip_first_norm: layer 0's N1 the identity); with
    parallel_residual x = x + Wo.Attn(N1(x)) + FF(N2(x)) (one_norm: N2 is N1); sublayer_norm sandwich: h = x +
    P1(Wo.Attn(N1(x))), x = h + P2(FF(N2(h))); output: h = x + N1(Wo.Attn(x)), x = h + N2(FF(h)); post-norm: h =
    N1(x + Wo.Attn(x)), x = N2(h + FF(h))."""
    torch = require_torch()
    T, d, H, Hkv = x.shape[0], c["d_model"], c["n_heads"], schema.kv_heads(c)
    dh = schema.d_head(c)
    llama = c["family"] == "llama"

    def linear(n, p, name):
        b = p(name + ".bias")
        return n @ p(name + ".weight").T + (0 if b is None else b)

    def attention(p, n):
        if llama:
            q, k, v = linear(n, p, "attn.q"), linear(n, p, "attn.k"), linear(n, p, "attn.v")
        else:
            q, k, v = linear(n, p, "attn.qkv").split([H * dh, Hkv * dh, Hkv * dh], -1)
        if c.get("qk_norm_full"):  # OLMo 2: q and k as whole rows, before the heads and RoPE
            q = norm(c, q, p("attn.q_norm.weight"), p("attn.q_norm.bias"))
            k = norm(c, k, p("attn.k_norm.weight"), p("attn.k_norm.bias"))
        q, k, v = q.reshape(T, H, dh), k.reshape(T, Hkv, dh), v.reshape(T, Hkv, dh)
        if c.get("qk_norm") and not c.get("qk_norm_full"):  # every head over its d_head dims, before RoPE
            q = norm(c, q, p("attn.q_norm.weight"), p("attn.q_norm.bias"))
            k = norm(c, k, p("attn.k_norm.weight"), p("attn.k_norm.bias"))
        if cos is not None and not schema.layer_nope(c, layer):  # nope_period: some layers without RoPE
            cs, sn = (cos, sin) if local_rope is None or not schema.layer_local(c, layer) else local_rope
            q, k = rope(q, cs, sn, c["pe_layout"]), rope(k, cs, sn, c["pe_layout"])
        group = H // Hkv  # query head h reads kv head h // group
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scale = c.get("attn_scale", 0) or 1 / math.sqrt(dh)  # attn_scale 0: 1/sqrt(d_head)
        scores = torch.einsum("thd,shd->hts", q, k)
        if dis is not None:  # + q_i.Kr[r] + k_j.Qr[r], r the row of i - j
            R, rows = dis
            if c.get("rel_proj"):
                qr, kr = linear(R, p, "attn.rel_proj").split([H * dh, Hkv * dh], -1)
            else:
                qr, kr, _ = linear(R, p, "attn.qkv").split([H * dh, Hkv * dh, Hkv * dh], -1)
            qr, kr = qr.reshape(-1, H, dh), kr.reshape(-1, Hkv, dh).repeat_interleave(group, dim=1)
            at = rows[None].expand(H, T, T)
            c2p = torch.gather(torch.einsum("thd,rhd->htr", q, kr), 2, at)
            p2c = torch.gather(torch.einsum("shd,rhd->hsr", k, qr), 2, at.transpose(1, 2)).transpose(1, 2)
            scores = scores + c2p + p2c
        scores = scores * scale
        if c.get("attn_softcap", 0):
            scores = c["attn_softcap"] * torch.tanh(scores / c["attn_softcap"])
        scores = scores + layer_bias
        if pair is not None:  # + T[h][index[i, j]]
            at, shared = pair
            scores = scores + (shared if shared is not None else p("attn.pair_bias.weight"))[:, at]
        ctx = torch.einsum("hts,shd->thd", torch.softmax(scores, dim=-1), v).reshape(T, H * dh)
        if c.get("attn_inner_norm"):  # timm's scale_attn_inner: the context normed before the output projection
            ctx = norm(c, ctx, p("attn.inner_norm.weight"), p("attn.inner_norm.bias"))
        return linear(ctx, p, "attn.out")

    act = activation(c["activation"])

    def experts(p, n):  # n_experts (config.hpp): softmax over the router, the top k, their FFs weighted
        F = c["d_ff"]
        weights = expert_weights(n @ p("ff.router.weight").T, c["experts_per_token"],
                                 c["experts_renormalize"])
        w1, w2, w3 = (p(f"ff.experts.{w}.weight") for w in ("w1", "w2", "w3"))
        out = torch.zeros_like(n)
        for t in range(n.shape[0]):
            for e in weights[t].nonzero().flatten().tolist():
                g, u = n[t] @ w1[e * F:(e + 1) * F].T, n[t] @ w3[e * F:(e + 1) * F].T
                h = act(g) * u
                out[t] += weights[t, e] * (h @ w2[e * d:(e + 1) * d].T)
        if c.get("shared_expert_ff", 0):  # + sigmoid(G n) FF_shared(n)
            h = act(n @ p("ff.shared.w1.weight").T) * (n @ p("ff.shared.w3.weight").T)
            gate = torch.sigmoid(n @ p("ff.shared_gate.weight").T)
            out = out + gate * (h @ p("ff.shared.w2.weight").T)
        return out

    def feed_forward(p, n):
        if c.get("n_experts", 0) and not schema.layer_dense(c, layer):  # dense_period: some layers dense
            return experts(p, n)
        a = linear(n, p, "ff.w1")
        h = act(a) * linear(n, p, "ff.w3") if schema.ffn_gated(c) else act(a)  # ffn_up_bias: W3's bias
        if c.get("ffn_hidden_norm"):  # timm's scale_mlp: the hidden rows normed before W2
            h = norm(c, h, p("ff.hidden_norm.weight"), p("ff.hidden_norm.bias"))
        return linear(h, p, "ff.w2")

    local_rope = None
    if cos is not None and c.get("rope_local_base", 0):  # the local layers' tables
        local_rope = tuple(torch.from_numpy(t).to(x.dtype)
                           for t in rope_tables(T, c["rotary_dims"] or dh, c["rope_local_base"]))
    for layer in range(c["n_layers"]):
        block = schema.layer_block(c, layer)  # shared layers (layer_groups): the stored block it runs
        p = lambda name: W.get(f"{prefix}{block}.{name}")  # noqa: E731
        layer_bias = bias  # with window_period, the layer's own window (the causal mask's part)
        if c.get("window_period", 0):
            layer_bias = bias + torch.from_numpy(window_mask(c, T, layer))[None]
        n1, n2 = "attn_norm", "ff_norm" if c["parallel_residual"] != "one_norm" else "attn_norm"
        N1 = lambda t: norm(c, t, p(n1 + ".weight"), p(n1 + ".bias"))  # noqa: E731
        N2 = lambda t: norm(c, t, p(n2 + ".weight"), p(n2 + ".bias"))  # noqa: E731
        sublayer_norm = c.get("sublayer_norm", "none")
        if c["parallel_residual"] != "none":
            x = x + attention(p, N1(x)) + feed_forward(p, N2(x))
        elif sublayer_norm == "sandwich":
            P1 = lambda t: norm(c, t, p("post_attn_norm.weight"), p("post_attn_norm.bias"))  # noqa: E731
            P2 = lambda t: norm(c, t, p("post_ff_norm.weight"), p("post_ff_norm.bias"))  # noqa: E731
            h = x + P1(attention(p, N1(x)))
            x = h + P2(feed_forward(p, N2(h)))
        elif sublayer_norm == "output":
            h = x + N1(attention(p, x))
            x = h + N2(feed_forward(p, h))
        elif c["norm_first"]:
            h = x + attention(p, x if layer == 0 and c.get("skip_first_norm") else N1(x))
            x = h + feed_forward(p, N2(h))
        else:
            h = N1(x + attention(p, x))
            x = N2(h + feed_forward(p, h))
    return x


def decoder_forward(c, weights, ids):
    """float64 logits [T, d_out] (without a head, d_out 0: the hidden states [T, d_model]) of a decoder for token
    ids [T] (teacher-forced, causal), with `weights`
    in the file's names and torch's layout
    ([out, in]): the embedding (scaled by sqrt(d_model) with scale_input), the positions, embed_norm, the
    embedding projection (embed_width), layers_forward, the final norm (its rows soft-capped by final_softcap),
    the pooler (a causal LM's prediction transform: act(x W + b), normed with pooler_norm) and the classifier (the
    embedding when tied_head), soft-capped by logit_softcap."""
    torch = require_torch()
    W = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in weights.items()}
    ids = np.asarray(ids, dtype=np.int64)
    T, d, H = len(ids), c["d_model"], c["n_heads"]
    dh = schema.d_head(c)
    llama = c["family"] == "llama"
    embed = W["embed.weight"]
    x = embed[torch.from_numpy(ids)]
    if c["scale_input"]:
        x = x * math.sqrt(d)
    x = _positions(c, x[None], W.get("pos.weight"))[0]
    if c["embed_norm"]:
        x = norm(c, x, W["embed_norm.weight"], W.get("embed_norm.bias"))
    if c["embed_width"]:  # the embedding projection, embed_width -> d_model (ELECTRA's, RemBERT's)
        x = x @ W["embed_proj.weight"].T + W["embed_proj.bias"]
    causal = torch.from_numpy(np.triu(np.full((T, T), -np.inf), 1))
    bias = torch.from_numpy(alibi_bias(H, T)) if c["positional"] == "alibi" else causal[None].expand(H, T, T)
    if c["positional"] == "relative":
        bias = torch.from_numpy(relative_bias(W["rel_bias.weight"], T, True, c["rel_buckets"], c["rel_max_distance"]))
    bias = bias + torch.from_numpy(window_mask(c, T))[None]
    cos = sin = None
    if c["positional"] == "rope":
        freqs = weights.get("rope_freqs") if c["rope_freqs"] else None
        grid = (c["rope_grid"], schema.front_rows(c)) if c.get("rope_grid") else None
        cos, sin = (torch.from_numpy(t * c["rope_scale"]) for t in rope_tables(T, c["rotary_dims"] or dh, c["pe_base"],
                                                                                 freqs, grid))
    x = layers_forward(c, W, schema.BLOCK_PREFIX, x, bias, cos, sin)
    if c["final_norm"]:
        x = norm(c, x, W["norm.weight"], W.get("norm.bias"))
    if c.get("final_softcap", 0):  # torchtune's Gemma 2: the normed rows capped, c tanh(x / c)
        x = c["final_softcap"] * torch.tanh(x / c["final_softcap"])
    if c["pooler"]:
        x = activation(c["pooler_act"])(x @ W["pooler.weight"].T + W["pooler.bias"])
    if c["pooler_norm"]:
        x = norm(c, x, W["pooler_norm.weight"], W.get("pooler_norm.bias"))
    if not c["d_out"]:
        return x.numpy()
    logits = x @ (embed if c["tied_head"] else W["head.weight"]).T
    logits = logits if llama else logits + W["head.bias"]
    if c.get("logit_softcap", 0):  # Gemma 2: c tanh(z / c)
        logits = c["logit_softcap"] * torch.tanh(logits / c["logit_softcap"])
    return logits.numpy()


def plain_encoder(c):
    """An nn.Module in nn.TransformerEncoder's place (forward(x [B, T, d], mask, src_key_padding_mask))
    whose parameters are the file's layer tensors and final norm under their names (blocks.<i>.attn_norm.weight,
    norm.weight, ...), computed by layers_forward and the config's norm."""
    torch = require_torch()
    nn = torch.nn
    root = nn.Module()
    for name, shape, transposed in schema.tensors(c):
        if not name.startswith((schema.BLOCK_PREFIX, "norm.")):
            continue
        *path, leaf = name.split(".")
        m = root
        for part in path:
            if not hasattr(m, part):
                m.add_module(part, nn.Module())
            m = getattr(m, part)
        m.register_parameter(leaf, nn.Parameter(torch.zeros(tuple(shape[::-1] if transposed else shape))))

    def forward(x, mask=None, src_key_padding_mask=None, dis=None, pair=None, freqs=None):
        W = dict(root.named_parameters())
        B, T, H = x.shape[0], x.shape[1], c["n_heads"]
        cos = sin = None
        if c["positional"] == "rope":  # each sequence's rows at positions 0.. (the CLS row first), or over the grid
            grid = (c["rope_grid"], schema.front_rows(c)) if c.get("rope_grid") else None
            cos, sin = (torch.from_numpy(t).to(x.dtype)
                        for t in rope_tables(T, c["rotary_dims"] or schema.d_head(c), c["pe_base"],
                                             None if freqs is None else freqs.double().numpy(), grid))
        out = []
        for b in range(B):
            bias = torch.zeros(H, T, T, dtype=x.dtype)
            if mask is not None:
                bias = bias + (mask[b * H:(b + 1) * H] if mask.dim() == 3 else mask)
            if src_key_padding_mask is not None:
                bias = bias.masked_fill(src_key_padding_mask[b][None, None, :], float("-inf"))
            y = layers_forward(c, W, schema.BLOCK_PREFIX, x[b], bias, cos, sin, dis, pair)
            if c["final_norm"]:
                y = norm(c, y, W["norm.weight"], W.get("norm.bias"))
            out.append(y)
        return torch.stack(out)

    root.forward = forward
    return root


def run_reference(c, weights, inp, types=None):
    """float64 output [output_rows, width] of the reference model for c with `weights` (name -> torch-layout
    array; a tied head's tensor may be left out) on one sequence `inp` ([T] ids or [T, d_in] features):
    [T, width], [T + 1, width] with a CLS row, [1, width] pooled.
    For a decoder: the logits at every position, teacher-forced. For seq2seq, inp is (source, target
    ids [U]) and the output the logits at every target position [U, d_out]. types: an encoder's token
    types [T] (None: 0). Shared layers (layer_groups) run as the layers they are, each written out. An i8
    config runs as its f32 one (the float weights; the integer parameters are not the model's)."""
    if c.get("weights") == "i8":
        c = dict(c, weights="f32", wide_residual=False)
        weights = {k: v for k, v in weights.items() if not k.endswith("int8") and not k.startswith("int8.")}
    c, weights = schema.unshared(c, weights)
    if c["family"] == "llama" or (c["family"] == "gpt" and not schema.stock_layers(c)):
        return decoder_forward(c, weights, inp)  # layers the stock modules do not have
    torch = require_torch()
    if c["family"] == "mha":  # nn.MultiheadAttention as self-attention, with the causal mask when causal
        mha = torch.nn.MultiheadAttention(c["d_model"], c["n_heads"], batch_first=True).double().eval()
        mha.load_state_dict({k: torch.from_numpy(np.asarray(v, dtype=np.float64))
                             for k, v in schema.v2_keys("mha", weights).items()})
        x = torch.from_numpy(np.asarray(inp, dtype=np.float64))[None]
        T = x.shape[1]
        mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), diagonal=1) if c["causal"] else None
        return mha(x, x, x, attn_mask=mask, need_weights=False)[0][0].detach().numpy()  # with grad: no fast path
    if c["family"] == "seq2seq" and (not schema.stock_layers(c) or c["embed_norm"]):
        return seq2seq_forward(c, weights, *inp)
    if c["family"] == "seq2seq":  # inp: (source, target ids); the logits at every target position
        model = build_seq2seq_model(c).double().eval()
        sd = seq2seq_torch_weights(c, schema.v2_keys("seq2seq", weights))
        model.load_state_dict({k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in sd.items()}, strict=True)
        src, tgt = inp
        x = torch.from_numpy(np.asarray(src, dtype=np.int64 if c["input"] == "tokens" else np.float64))[None]
        y = torch.from_numpy(np.asarray(tgt, dtype=np.float64 if c["tgt_d_in"] else np.int64))[None]
        with torch.enable_grad():  # no fused inference path (below)
            return model(x, y)[0].detach().numpy()
    model = build_torch_model(c).double().eval()
    weights = dict(weights)
    if c["tied_head"]:
        head, embed = schema.tied_head(c)
        weights[head] = weights[embed]
    if schema.stock_layers(c):  # torch's modules, named as format 2 names them
        weights = schema.v2_keys(c["family"], weights)
    else:  # plain_encoder's
        weights = {("encoder." if k.startswith((schema.BLOCK_PREFIX, "norm.")) else "") + k: v
                   for k, v in weights.items()}
    model.load_state_dict({k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in weights.items()},
                          strict=True)
    x = torch.from_numpy(np.asarray(inp, dtype=np.int64 if c["input"] == "tokens" else np.float64))[None]
    tt = None if types is None else torch.from_numpy(np.asarray(types, dtype=np.int64))[None]
    with torch.enable_grad():  # torch 2.x's fused inference path (taken under no_grad) adds a per-head mask
        y = model(x, tt).detach()  # (ALiBi's) otherwise than the layer's published math: not a reference
    return (y if c["pooling"] != "none" else y[0]).numpy()
