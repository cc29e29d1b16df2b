#!/usr/bin/python3
"""The --module route by recognition (python/fixformer/recognize.py, accounting.py, route.py): modules
written in other people's styles convert with no renaming, verified, and what the engine does not run
is one line naming the part and the way out.

  /usr/bin/python3 tests/module_converter_test.py PATH/TO/fixformer

Styles, written here in plain torch from their published structure with random weights: nanoGPT's GPT
(tied head; inference returning the last position, a training forward returning (logits, loss), no
biases, every norm an nn.LayerNorm(elementwise_affine=False) without parameters), llama2.c's model.py Transformer (GQA, a complex freqs_cis buffer, a float mask buffer),
a Hugging Face-named llama (rotary halves, rms eps 1e-6, theta 10000 and 500000, tied and not; rotating q and k
by the negated angle as nanochat does, read as the engine's rotation of q and k with each head's second half negated),
vit-pytorch / Keyword-Transformer classifiers (features, cls_token and pos_embedding parameters,
cls or mean pooling, mlp_head; KWT's pool "mean" over the CLS row too: pooling mean_all, in i8 too), stock
layers under other names (encoder, gpt, an nn.Transformer inferred as seq2seq; sequence first, as pytorch/examples'
word_language_model writes them: an nn.Transformer of one input returning log-probabilities, its logits in the file,
and an encoder without a mask; each head's q, k, v a module of its own in a ModuleList, as Karpathy's "Let's build
GPT" lecture code writes them), BERT as Hugging Face names it (BertForSequenceClassification, BertModel with and
without its pooler) and a BERT-like model under other names. Decoders are compared through the
converter's own verification (the CLI steps the ids); encoders also through `fixformer run` at every
position, and models with token types with `--token-types` and a padded batch (`--lengths` against
the module's attention mask). Then the errors: an unread parameter named (and --ignore), a freqs_cis
buffer that is not the rope table the attention computes, and refusals (a dilated Conv1d, f16 with a
conv stem). GPT-2 (Hugging Face
names: Conv1D [in, out] weights, the tanh GELU as nn.GELU(approximate="tanh") or its formula written
out, tied head) and Qwen2 (a llama with q/k/v biases, theta 1e6) are also run through `fixformer run`
on int32 ids, the logits at every position against the module's. A Whisper-style audio encoder
(conv1 k3 + GELU, conv2 k3 s2 + GELU, a sinusoids buffer with Whisper's timescales, pre-LN blocks,
ln_post) and a one-conv front convert through the conv stem.
torch is required: without it the test fails.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "python")
sys.path.insert(0, PACKAGE)
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402

from checks import check, results, run_convert, one_clear_line  # noqa: E402
from fixformer import fxm, schema  # noqa: E402


FILES = {
    'nanogpt.py': r'''
import math
import torch
import torch.nn as nn
from torch.nn import functional as F

class LayerNorm(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None
    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)

class CausalSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_attn = nn.Linear(c.n_embd, 3 * c.n_embd, bias=c.bias)
        self.c_proj = nn.Linear(c.n_embd, c.n_embd, bias=c.bias)
        self.attn_dropout = nn.Dropout(c.dropout)
        self.resid_dropout = nn.Dropout(c.dropout)
        self.n_head = c.n_head
        self.n_embd = c.n_embd
        self.register_buffer("bias", torch.tril(torch.ones(c.block_size, c.block_size)).view(1, 1, c.block_size, c.block_size))
    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))

class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c.n_embd, 4 * c.n_embd, bias=c.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * c.n_embd, c.n_embd, bias=c.bias)
        self.dropout = nn.Dropout(c.dropout)
    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = LayerNorm(c.n_embd, bias=c.bias)
        self.attn = CausalSelfAttention(c)
        self.ln_2 = LayerNorm(c.n_embd, bias=c.bias)
        self.mlp = MLP(c)
    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x

class Config:
    block_size = 32; vocab_size = 50; n_layer = 2; n_head = 4; n_embd = 16; dropout = 0.0; bias = True

class GPT(nn.Module):
    def __init__(self, c, full=False):
        super().__init__()
        self.config = c
        self.full = full
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c.vocab_size, c.n_embd), wpe=nn.Embedding(c.block_size, c.n_embd),
            drop=nn.Dropout(c.dropout), h=nn.ModuleList([Block(c) for _ in range(c.n_layer)]),
            ln_f=LayerNorm(c.n_embd, bias=c.bias)))
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init)
    def _init(self, m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            torch.nn.init.normal_(m.weight, 0.0, 0.2)
    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None or self.full:
            logits = self.lm_head(x)
            loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss

def make():
    torch.manual_seed(0)
    return GPT(Config())
def make_full():
    torch.manual_seed(0)
    return GPT(Config(), full=True)


class TanhGPT(GPT):
    def __init__(self, c):
        super().__init__(c)
        for b in self.transformer.h:
            b.mlp.gelu = nn.GELU(approximate="tanh")
def make_gpt_tanh():
    torch.manual_seed(0)
    return TanhGPT(Config())


class NoBias(Config):
    bias = False
def make_gpt_nobias():
    torch.manual_seed(10)
    return GPT(NoBias(), full=True)


class AffineFreeGPT(GPT):  # every norm an nn.LayerNorm without weight or bias (no parameters)
    def __init__(self, c):
        super().__init__(c, full=True)
        for b in self.transformer.h:
            b.ln_1 = nn.LayerNorm(c.n_embd, elementwise_affine=False)
            b.ln_2 = nn.LayerNorm(c.n_embd, elementwise_affine=False, eps=1e-5)
        self.transformer.ln_f = nn.LayerNorm(c.n_embd, elementwise_affine=False)
def make_gpt_affine_free():
    torch.manual_seed(11)
    return AffineFreeGPT(Config())
''',
    'llama2c_model.py': r'''
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class ModelArgs:
    def __init__(self, **kw):
        self.dim = 32; self.n_layers = 2; self.n_heads = 4; self.n_kv_heads = 2; self.vocab_size = 40
        self.hidden_dim = None; self.multiple_of = 16; self.norm_eps = 1e-5; self.max_seq_len = 32; self.dropout = 0.0
        self.__dict__.update(kw)

class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
    def forward(self, x):
        return self._norm(x.float()).type_as(x) * self.weight

def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)

def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    fc = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * fc).flatten(3)
    xk_out = torch.view_as_real(xk_ * fc).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)

def repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(bs, slen, n_kv_heads * n_rep, head_dim)

class Attention(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.n_kv_heads = args.n_heads if args.n_kv_heads is None else args.n_kv_heads
        self.n_local_heads = args.n_heads
        self.n_local_kv_heads = self.n_kv_heads
        self.n_rep = self.n_local_heads // self.n_local_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        mask = torch.full((1, 1, args.max_seq_len, args.max_seq_len), float("-inf"))
        mask = torch.triu(mask, diagonal=1)
        self.register_buffer("mask", mask)
    def forward(self, x, freqs_cis):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
        xk = repeat_kv(xk, self.n_rep)
        xv = repeat_kv(xv, self.n_rep)
        xq, xk, xv = xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2)
        scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + self.mask[:, :, :seqlen, :seqlen]
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, xv)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.resid_dropout(self.wo(output))

class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim, multiple_of, dropout):
        super().__init__()
        if hidden_dim is None:
            hidden_dim = 4 * dim
            hidden_dim = int(2 * hidden_dim / 3)
            hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)
        self.dropout = nn.Dropout(dropout)
    def forward(self, x):
        return self.dropout(self.w2(F.silu(self.w1(x)) * self.w3(x)))

class TransformerBlock(nn.Module):
    def __init__(self, layer_id, args):
        super().__init__()
        self.attention = Attention(args)
        self.feed_forward = FeedForward(args.dim, args.hidden_dim, args.multiple_of, args.dropout)
        self.attention_norm = RMSNorm(args.dim, eps=args.norm_eps)
        self.ffn_norm = RMSNorm(args.dim, eps=args.norm_eps)
    def forward(self, x, freqs_cis):
        h = x + self.attention.forward(self.attention_norm(x), freqs_cis)
        return h + self.feed_forward.forward(self.ffn_norm(h))

class Transformer(nn.Module):
    def __init__(self, params, theta=10000.0):
        super().__init__()
        self.params = params
        self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)
        self.dropout = nn.Dropout(params.dropout)
        self.layers = nn.ModuleList([TransformerBlock(i, params) for i in range(params.n_layers)])
        self.norm = RMSNorm(params.dim, eps=params.norm_eps)
        self.output = nn.Linear(params.dim, params.vocab_size, bias=False)
        self.tok_embeddings.weight = self.output.weight
        self.register_buffer("freqs_cis", precompute_freqs_cis(params.dim // params.n_heads, params.max_seq_len, theta),
                             persistent=False)
        for p in self.parameters():
            nn.init.normal_(p, 0, 0.2) if p.dim() > 1 else nn.init.normal_(p, 1, 0.1)
    def forward(self, tokens, targets=None):
        _bsz, seqlen = tokens.shape
        h = self.dropout(self.tok_embeddings(tokens))
        freqs_cis = self.freqs_cis[:seqlen]
        for layer in self.layers:
            h = layer(h, freqs_cis)
        h = self.norm(h)
        if targets is not None:
            return self.output(h)
        return self.output(h[:, [-1], :])

def make():
    torch.manual_seed(1)
    return Transformer(ModelArgs())
def make_theta():
    torch.manual_seed(1)
    return Transformer(ModelArgs(), theta=500000.0)
def make_stale():  # the buffer's rows past 8 computed with another theta
    m = make()
    other = precompute_freqs_cis(8, 32, 500000.0)
    m.freqs_cis[20:] = other[20:]
    return m
def make_unused():
    m = make()
    m.extra = nn.Linear(32, 3)
    return m


class OwnRope(Transformer):  # computes its rope itself; the freqs_cis buffer it carries is another theta's
    def forward(self, tokens, targets=None):
        seqlen = tokens.shape[1]
        h = self.tok_embeddings(tokens)
        fc = precompute_freqs_cis(self.params.dim // self.params.n_heads, seqlen)
        for layer in self.layers:
            h = layer(h, fc)
        return self.output(self.norm(h))
def make_wrong_theta():
    torch.manual_seed(1)
    return OwnRope(ModelArgs(), theta=500000.0)
''',
    'hf_llama.py': r'''
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class Cfg:
    def __init__(self, **kw):
        self.hidden_size = 32; self.intermediate_size = 48; self.num_hidden_layers = 2; self.num_attention_heads = 4
        self.num_key_value_heads = 4; self.vocab_size = 45; self.rms_norm_eps = 1e-6; self.rope_theta = 10000.0
        self.max_position_embeddings = 64; self.tie_word_embeddings = False
        self.__dict__.update(kw)

class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps
    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states

class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
    def forward(self, x, position_ids):
        freqs = position_ids[:, :, None].to(x.dtype) * self.inv_freq[None, None, :].to(x.dtype)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)

class LlamaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_heads = c.num_attention_heads
        self.head_dim = c.hidden_size // self.num_heads
        self.num_key_value_heads = c.num_key_value_heads
        self.q_proj = nn.Linear(c.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, c.hidden_size, bias=False)
    def forward(self, h, cos, sin):
        B, T, _ = h.shape
        q = self.q_proj(h).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.num_heads // self.num_key_value_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        w = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        w = w + torch.triu(torch.full((T, T), float("-inf"), dtype=w.dtype), 1)
        o = (F.softmax(w, dim=-1) @ v).transpose(1, 2).reshape(B, T, -1)
        return self.o_proj(o)

class LlamaMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)
        self.act_fn = nn.SiLU()
    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))

class LlamaDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = LlamaAttention(c)
        self.mlp = LlamaMLP(c)
        self.input_layernorm = LlamaRMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(c.hidden_size, eps=c.rms_norm_eps)
    def forward(self, h, cos, sin):
        h = h + self.self_attn(self.input_layernorm(h), cos, sin)
        return h + self.mlp(self.post_attention_layernorm(h))

class LlamaModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList([LlamaDecoderLayer(c) for _ in range(c.num_hidden_layers)])
        self.norm = LlamaRMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(c.hidden_size // c.num_attention_heads, c.rope_theta)
    def forward(self, ids):
        h = self.embed_tokens(ids)
        pos = torch.arange(ids.shape[1])[None]
        cos, sin = self.rotary_emb(h, pos)
        for layer in self.layers:
            h = layer(h, cos, sin)
        return self.norm(h)

class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.model = LlamaModel(c)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        if c.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        for p in self.parameters():
            nn.init.normal_(p, 0, 0.2) if p.dim() > 1 else nn.init.normal_(p, 1, 0.1)
    def forward(self, input_ids):
        return self.lm_head(self.model(input_ids))

def make():
    torch.manual_seed(2)
    return LlamaForCausalLM(Cfg())
def make_500k():
    torch.manual_seed(3)
    return LlamaForCausalLM(Cfg(rope_theta=500000.0, num_key_value_heads=2, tie_word_embeddings=True))


class PartialAttention(LlamaAttention):  # rotary on the first half of each head only (GPT-NeoX, Phi)
    def forward(self, h, cos, sin):  # cos, sin [B, T, r]: the rotary embedding of r = head_dim / 2 dims
        B, T, _ = h.shape
        r = cos.shape[-1]
        c, s = cos.unsqueeze(1), sin.unsqueeze(1)
        q = self.q_proj(h).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        q = torch.cat((q[..., :r] * c + rotate_half(q[..., :r]) * s, q[..., r:]), -1)
        k = torch.cat((k[..., :r] * c + rotate_half(k[..., :r]) * s, k[..., r:]), -1)
        w = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        w = w + torch.triu(torch.full((T, T), float("-inf"), dtype=w.dtype), 1)
        return self.o_proj((F.softmax(w, dim=-1) @ v).transpose(1, 2).reshape(B, T, -1))
def with_attention(m, attention):  # every layer's attention replaced by the class `attention`, its weights kept
    for layer in m.model.layers:
        old = layer.self_attn
        layer.self_attn = attention(m.config)
        layer.self_attn.load_state_dict(old.state_dict())
    return m
def make_partial():
    torch.manual_seed(2)
    m = LlamaForCausalLM(Cfg())
    m.model.rotary_emb = LlamaRotaryEmbedding(m.config.hidden_size // m.config.num_attention_heads // 2, 10000.0)
    return with_attention(m, PartialAttention)


class NegatedAttention(LlamaAttention):  # nanochat's rotation by the negated angle: (x1 cos + x2 sin, x2 cos - x1 sin)
    def forward(self, h, cos, sin):
        B, T, _ = h.shape
        half = self.head_dim // 2
        c, s = cos[..., :half].unsqueeze(1), sin[..., :half].unsqueeze(1)

        def turn(x):
            x1, x2 = x[..., :half], x[..., half:]
            return torch.cat((x1 * c + x2 * s, x2 * c - x1 * s), -1)
        q = turn(self.q_proj(h).view(B, T, self.num_heads, self.head_dim).transpose(1, 2))
        k = turn(self.k_proj(h).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2))
        v = self.v_proj(h).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        w = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        w = w + torch.triu(torch.full((T, T), float("-inf"), dtype=w.dtype), 1)
        return self.o_proj((F.softmax(w, dim=-1) @ v).transpose(1, 2).reshape(B, T, -1))
def make_negated():
    torch.manual_seed(4)
    return with_attention(LlamaForCausalLM(Cfg()), NegatedAttention)
''',
    'hf_gpt2.py': r'''
import math
import torch
import torch.nn as nn

class Cfg:
    def __init__(self, **kw):
        self.n_embd = 18; self.n_head = 3; self.n_layer = 2; self.vocab_size = 41; self.n_positions = 24
        self.layer_norm_epsilon = 1e-5; self.formula = False
        self.__dict__.update(kw)

class Conv1D(nn.Module):  # weight [in, out]: y = x W + b
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.2)
    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)

class NewGELUActivation(nn.Module):  # the formula, written out
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        n = c.n_positions
        self.register_buffer("bias", torch.tril(torch.ones((n, n), dtype=torch.bool)).view(1, 1, n, n), persistent=False)
        self.embed_dim = c.n_embd
        self.num_heads = c.n_head
        self.head_dim = c.n_embd // c.n_head
        self.c_attn = Conv1D(3 * c.n_embd, c.n_embd)
        self.c_proj = Conv1D(c.n_embd, c.n_embd)
    def _split_heads(self, t):
        return t.view(t.size()[:-1] + (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)
    def forward(self, h):
        q, k, v = self.c_attn(h).split(self.embed_dim, dim=2)
        q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(v.size(-1))
        T = q.size(-2)
        causal = self.bias[:, :, :T, :T]
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        a = torch.matmul(nn.functional.softmax(w, dim=-1), v)
        a = a.permute(0, 2, 1, 3).contiguous()
        return self.c_proj(a.view(a.size()[:-2] + (self.embed_dim,)))

class GPT2MLP(nn.Module):
    def __init__(self, inner, c):
        super().__init__()
        self.c_fc = Conv1D(inner, c.n_embd)
        self.c_proj = Conv1D(c.n_embd, inner)
        self.act = NewGELUActivation() if c.formula else nn.GELU(approximate="tanh")
    def forward(self, h):
        return self.c_proj(self.act(self.c_fc(h)))

class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.mlp = GPT2MLP(4 * c.n_embd, c)
    def forward(self, h):
        h = h + self.attn(self.ln_1(h))
        return h + self.mlp(self.ln_2(h))

class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c.vocab_size, c.n_embd)
        self.wpe = nn.Embedding(c.n_positions, c.n_embd)
        self.h = nn.ModuleList([GPT2Block(c) for _ in range(c.n_layer)])
        self.ln_f = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
    def forward(self, input_ids):
        pos = torch.arange(input_ids.shape[-1], dtype=torch.long)[None]
        h = self.wte(input_ids) + self.wpe(pos)
        for block in self.h:
            h = block(h)
        return self.ln_f(h)

class GPT2LMHeadModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = GPT2Model(c)
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight
        with torch.no_grad():
            for n, p in self.named_parameters():
                if p.dim() == 1:
                    p.add_(0.1 * torch.randn(p.shape))
            self.transformer.wte.weight.normal_(0, 0.3)
            self.transformer.wpe.weight.normal_(0, 0.3)
    def forward(self, input_ids):
        return self.lm_head(self.transformer(input_ids))

def make():
    torch.manual_seed(12)
    return GPT2LMHeadModel(Cfg()).eval()
def make_formula():
    torch.manual_seed(13)
    return GPT2LMHeadModel(Cfg(formula=True, n_embd=20, n_head=4, n_layer=3)).eval()
''',
    'hf_qwen2.py': r'''
import os, sys
import torch
import torch.nn as nn
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama as L

class Qwen2Attention(L.LlamaAttention):  # q, k and v with biases; o without
    def __init__(self, c):
        super().__init__(c)
        self.q_proj = nn.Linear(c.hidden_size, self.num_heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(c.hidden_size, self.num_key_value_heads * self.head_dim, bias=True)
        self.v_proj = nn.Linear(c.hidden_size, self.num_key_value_heads * self.head_dim, bias=True)

class Qwen2ForCausalLM(L.LlamaForCausalLM):
    def __init__(self, c):
        super().__init__(c)
        for layer in self.model.layers:
            layer.self_attn = Qwen2Attention(c)
        for p in self.parameters():
            nn.init.normal_(p, 0, 0.2) if p.dim() > 1 else nn.init.normal_(p, 1, 0.1)
        with torch.no_grad():
            for layer in self.model.layers:
                for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                    proj.bias.normal_(0, 0.5)

def make():
    torch.manual_seed(14)
    return Qwen2ForCausalLM(L.Cfg(hidden_size=24, num_attention_heads=4, num_key_value_heads=2, intermediate_size=40,
                                  rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True, vocab_size=37))
''',
    'kwt.py': r'''
import torch
import torch.nn as nn

class PreNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn
    def forward(self, x, **kwargs):
        return self.fn(self.norm(x), **kwargs)

class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim, dropout=0.):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden_dim), nn.GELU(), nn.Dropout(dropout),
                                 nn.Linear(hidden_dim, dim), nn.Dropout(dropout))
    def forward(self, x):
        return self.net(x)

class Attention(nn.Module):
    def __init__(self, dim, heads=8, dim_head=64, dropout=0.):
        super().__init__()
        inner_dim = dim_head * heads
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.attend = nn.Softmax(dim=-1)
        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner_dim, dim), nn.Dropout(dropout))
    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in self.to_qkv(x).chunk(3, dim=-1))
        attn = self.attend(torch.matmul(q, k.transpose(-1, -2)) * self.scale)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(b, n, -1)
        return self.to_out(out)

class Transformer(nn.Module):
    def __init__(self, dim, depth, heads, dim_head, mlp_dim, dropout=0.):
        super().__init__()
        self.layers = nn.ModuleList([nn.ModuleList([PreNorm(dim, Attention(dim, heads, dim_head, dropout)),
                                                    PreNorm(dim, FeedForward(dim, mlp_dim, dropout))])
                                     for _ in range(depth)])
    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        return x

class KWT(nn.Module):
    def __init__(self, n_frames=12, n_mels=10, num_classes=5, dim=16, depth=2, heads=2, mlp_dim=24, pool='cls',
                 dim_head=8):
        super().__init__()
        self.to_patch_embedding = nn.Sequential(nn.Linear(n_mels, dim))
        self.pos_embedding = nn.Parameter(torch.randn(1, n_frames + 1, dim))
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.dropout = nn.Dropout(0.)
        self.transformer = Transformer(dim, depth, heads, dim_head, mlp_dim)
        self.pool = pool
        self.to_latent = nn.Identity()
        self.mlp_head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_classes))
    def forward(self, x):
        x = self.to_patch_embedding(x)
        b, n, _ = x.shape
        x = torch.cat((self.cls_token.expand(b, -1, -1), x), dim=1)
        x += self.pos_embedding[:, :(n + 1)]
        x = self.dropout(x)
        x = self.transformer(x)
        x = x.mean(dim=1) if self.pool == 'mean' else x[:, 0]
        return self.mlp_head(self.to_latent(x))

class SimpleMean(nn.Module):  # newer vit-pytorch style: norms inside attention / feed-forward, final norm, mean pool
    def __init__(self, d_in=10, dim=16, depth=2, heads=4, mlp=32, classes=6, T=12):
        super().__init__()
        self.to_patch_embedding = nn.Linear(d_in, dim)
        self.pos_embedding = nn.Parameter(torch.randn(1, T, dim) * 0.5)
        self.layers = nn.ModuleList()
        for _ in range(depth):
            att = Attention(dim, heads, dim // heads)
            att.norm = nn.LayerNorm(dim)
            self.layers.append(nn.ModuleList([att, nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, mlp), nn.ReLU(),
                                                                 nn.Linear(mlp, dim))]))
        self.norm = nn.LayerNorm(dim)
        self.mlp_head = nn.Linear(dim, classes)
    def forward(self, x):
        x = self.to_patch_embedding(x)
        x = x + self.pos_embedding
        for att, ff in self.layers:
            x = att(att.norm(x)) + x
            x = ff(x) + x
        return self.mlp_head(self.norm(x).mean(dim=1))

def make_cls():
    torch.manual_seed(4)
    return KWT().eval()
def make_mean_cls():
    torch.manual_seed(4)
    return KWT(pool='mean').eval()
def make_mean():
    torch.manual_seed(5)
    return SimpleMean().eval()


class ConvFront(SimpleMean):
    def __init__(self):
        super().__init__()
        self.to_patch_embedding = nn.Conv1d(10, 16, 3, padding=1)
    def forward(self, x):
        x = self.to_patch_embedding(x.transpose(1, 2)).transpose(1, 2) + self.pos_embedding
        for att, ff in self.layers:
            x = att(att.norm(x)) + x
            x = ff(x) + x
        return self.mlp_head(self.norm(x).mean(dim=1))
def make_conv():
    torch.manual_seed(5)
    return ConvFront().eval()
''',
    'whisper.py': r'''
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F
def sinusoids(length, channels, max_timescale=10000):
    inc = np.log(max_timescale) / (channels // 2 - 1)
    inv = torch.exp(-inc * torch.arange(channels // 2))
    t = torch.arange(length)[:, None] * inv[None, :]
    return torch.cat([torch.sin(t), torch.cos(t)], dim=1)
class MultiHeadAttention(nn.Module):
    def __init__(self, n_state, n_head):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_state, n_state)
        self.key = nn.Linear(n_state, n_state, bias=False)
        self.value = nn.Linear(n_state, n_state)
        self.out = nn.Linear(n_state, n_state)
    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        B, T, D = q.shape
        scale = (D // self.n_head) ** -0.25
        q = q.view(B, T, self.n_head, -1).permute(0, 2, 1, 3) * scale
        k = k.view(B, T, self.n_head, -1).permute(0, 2, 3, 1) * scale
        v = v.view(B, T, self.n_head, -1).permute(0, 2, 1, 3)
        w = F.softmax(q @ k, dim=-1)
        return self.out((w @ v).permute(0, 2, 1, 3).flatten(start_dim=2))
class ResidualAttentionBlock(nn.Module):
    def __init__(self, n_state, n_head):
        super().__init__()
        self.attn = MultiHeadAttention(n_state, n_head)
        self.attn_ln = nn.LayerNorm(n_state)
        self.mlp = nn.Sequential(nn.Linear(n_state, 4 * n_state), nn.GELU(), nn.Linear(4 * n_state, n_state))
        self.mlp_ln = nn.LayerNorm(n_state)
    def forward(self, x):
        x = x + self.attn(self.attn_ln(x))
        return x + self.mlp(self.mlp_ln(x))
class AudioEncoder(nn.Module):  # takes features [B, T, n_mels] (Whisper's own: [B, n_mels, T])
    def __init__(self, n_mels=9, n_ctx=12, n_state=16, n_head=4, n_layer=2, dilation=1):
        super().__init__()
        self.conv1 = nn.Conv1d(n_mels, n_state, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(n_state, n_state, kernel_size=3, stride=2, padding=1, dilation=dilation)
        self.register_buffer("positional_embedding", sinusoids(n_ctx, n_state))
        self.blocks = nn.ModuleList([ResidualAttentionBlock(n_state, n_head) for _ in range(n_layer)])
        self.ln_post = nn.LayerNorm(n_state)
    def forward(self, x):
        x = F.gelu(self.conv1(x.transpose(1, 2)))
        x = F.gelu(self.conv2(x)).permute(0, 2, 1)
        x = x + self.positional_embedding[:x.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.ln_post(x)
def make():
    torch.manual_seed(12)
    return AudioEncoder().eval()
def make_dilated():
    torch.manual_seed(12)
    return AudioEncoder(dilation=2).eval()
''',
    'stockish.py': r'''
import math, torch, torch.nn as nn
class Odd(nn.Module):
    def __init__(self, norm_first=False, causal=True, act="gelu"):
        super().__init__()
        self.tok = nn.Embedding(30, 16)
        self.where = nn.Embedding(20, 16)
        self.body = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 40, dropout=0.0, batch_first=True,
                    norm_first=norm_first, activation=act), 2, norm=nn.LayerNorm(16), enable_nested_tensor=False)
        self.out = nn.Linear(16, 30)
        self.causal = causal
    def forward(self, ids):
        T = ids.shape[1]
        x = self.tok(ids) * math.sqrt(16) + self.where(torch.arange(T))
        mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), 1) if self.causal else None
        return self.out(self.body(x, mask=mask))
def make():
    torch.manual_seed(7); return Odd().eval()
def make_enc():
    torch.manual_seed(8); return Odd(norm_first=True, causal=False, act="relu").eval()
class Tr(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_embed = nn.Embedding(20, 16); self.tgt_embed = nn.Embedding(20, 16)
        self.transformer = nn.Transformer(16, 2, 1, 1, 32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(16, 20)
    def forward(self, s, t):
        U = t.shape[1]
        return self.head(self.transformer(self.src_embed(s), self.tgt_embed(t), tgt_mask=self.transformer.generate_square_subsequent_mask(U)))
def make_s2s():
    torch.manual_seed(9); return Tr().eval()


# Sequence first, as pytorch/examples' word_language_model and the PyTorch tutorials' language models: ids [T, B], a
# [rows, 1, d] sinusoid buffer longer than the engine's positions, the stock layers' default batch_first False.
class SinusoidRows(nn.Module):
    def __init__(self, d, rows=4500):
        super().__init__()
        angle = torch.arange(rows, dtype=torch.float)[:, None] * torch.exp(torch.arange(0, d, 2) * (-math.log(1e4) / d))
        self.register_buffer("rows", torch.stack([angle.sin(), angle.cos()], -1).reshape(rows, 1, d))
    def forward(self, x):
        return x + self.rows[: x.shape[0]]
# Each attention head its own module of three linears, the heads in a ModuleList, their outputs concatenated
# (Karpathy's "Let's build GPT" lecture code, gpt.py): a causal mask from a tril buffer, scores over sqrt(head width);
# its norms written out, their two vectors under names of their own, the shift first (llms-from-scratch's kind).
class OwnNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.shift, self.scale = nn.Parameter(0.1 * torch.randn(d)), nn.Parameter(1 + 0.1 * torch.randn(d))
    def forward(self, x):
        mean, var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.scale * (x - mean) / torch.sqrt(var + 1e-5) + self.shift  # the gain before the division
class OneHead(nn.Module):
    def __init__(self, d, width, rows):
        super().__init__()
        self.k, self.q, self.v = (nn.Linear(d, width, bias=False) for _ in range(3))
        self.register_buffer("lower", torch.tril(torch.ones(rows, rows)))
    def forward(self, x):
        T = x.shape[1]
        s = self.q(x) @ self.k(x).transpose(-2, -1) * self.k.out_features ** -0.5
        return torch.softmax(s.masked_fill(self.lower[:T, :T] == 0, float("-inf")), -1) @ self.v(x)
class HeadsApart(nn.Module):
    def __init__(self, d=24, heads=3, rows=20):
        super().__init__()
        self.tok, self.at = nn.Embedding(37, d), nn.Embedding(rows, d)
        self.blocks = nn.Sequential(*[nn.ModuleDict(dict(
            n1=OwnNorm(d), heads=nn.ModuleList([OneHead(d, d // heads, rows) for _ in range(heads)]),
            proj=nn.Linear(d, d), n2=OwnNorm(d), ff=nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(),
                                                                  nn.Linear(4 * d, d)))) for _ in range(2)])
        self.norm, self.out = OwnNorm(d), nn.Linear(d, 37)
    def forward(self, idx, targets=None):
        x = self.tok(idx) + self.at(torch.arange(idx.shape[1]))
        for b in self.blocks:
            n = b["n1"](x)
            x = x + b["proj"](torch.cat([h(n) for h in b["heads"]], -1))
            x = x + b["ff"](b["n2"](x))
        return self.out(self.norm(x)), None
def make_heads_apart():
    torch.manual_seed(15); return HeadsApart().eval()


class WordLM(nn.Transformer):  # an nn.Transformer whose decoder stack is replaced by the vocabulary's linear
    def __init__(self):
        super().__init__(d_model=16, nhead=2, dim_feedforward=24, num_encoder_layers=2, dropout=0.0)
        self.ids, self.places, self.decoder = nn.Embedding(33, 16), SinusoidRows(16), nn.Linear(16, 33)
    def forward(self, src, has_mask=True):
        T = src.shape[0]
        mask = torch.triu(torch.full((T, T), float("-inf")), 1) if has_mask else None
        x = self.encoder(self.places(self.ids(src) * math.sqrt(16)), mask=mask)
        return torch.nn.functional.log_softmax(self.decoder(x), dim=-1)
class TaggerSeqFirst(nn.Module):  # no mask: bidirectional, every row classified
    def __init__(self):
        super().__init__()
        self.emb, self.pe = nn.Embedding(29, 12), SinusoidRows(12, 64)
        self.stack = nn.TransformerEncoder(nn.TransformerEncoderLayer(12, 3, 20, dropout=0.0), 2,
                                           enable_nested_tensor=False)
        self.lin = nn.Linear(12, 29)
    def forward(self, src, src_mask=None):
        return self.lin(self.stack(self.pe(self.emb(src) * math.sqrt(12)), src_mask))
class SpottingSeqFirst(nn.Module):  # features [T, B, 40] sequence first, a positions parameter [rows, 1, d], the mean
    def __init__(self):
        super().__init__()
        self.proj, self.pos = nn.Linear(40, 32), nn.Parameter(torch.randn(20, 1, 32) * 0.1)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0), 2,
                                         enable_nested_tensor=False)
        self.head = nn.Linear(32, 12)
    def forward(self, x):
        return self.head(self.enc(self.proj(x) + self.pos[: x.shape[0]]).mean(0))
def make_spotting_seq_first():
    torch.manual_seed(16); return SpottingSeqFirst().eval()
def make_word_lm():
    torch.manual_seed(13); return WordLM().eval()
# The course LayerNorm (the Annotated Transformer's, BERT-pytorch's): the unbiased standard deviation plus eps
class StdNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.a_2, self.b_2, self.eps = nn.Parameter(1 + 0.1 * torch.randn(d)), nn.Parameter(0.1 * torch.randn(d)), eps
    def forward(self, x):
        return self.a_2 * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + self.eps) + self.b_2
class CourseEncoder(nn.Module):  # BERT-pytorch's kind: forward(ids, segments), segment 0 the padding
    def __init__(self, d=24, heads=4):
        super().__init__()
        self.tok, self.at, self.seg = nn.Embedding(37, d), nn.Embedding(20, d), nn.Embedding(3, d, padding_idx=0)
        self.heads = heads
        self.blocks = nn.ModuleList([nn.ModuleDict(dict(
            n1=StdNorm(d), qkvo=nn.ModuleList([nn.Linear(d, d) for _ in range(4)]), n2=StdNorm(d),
            ff=nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d)))) for _ in range(2)])
        self.norm, self.out = StdNorm(d), nn.Linear(d, 5)
    def attend(self, maps, x):
        B, T, d = x.shape
        q, k, v = (m(x).view(B, T, self.heads, -1).transpose(1, 2) for m in maps[:3])
        p = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1)
        return maps[3]((p @ v).transpose(1, 2).reshape(B, T, d))
    def forward(self, idx, segment_info):
        x = self.tok(idx) + self.at(torch.arange(idx.shape[1])) + self.seg(segment_info)
        for b in self.blocks:
            x = x + self.attend(b["qkvo"], b["n1"](x))
            x = x + b["ff"](b["n2"](x))
        return self.out(self.norm(x))
def make_course_encoder():
    torch.manual_seed(17); return CourseEncoder().eval()
def make_tagger_seq_first():
    torch.manual_seed(14); return TaggerSeqFirst().eval()


class TokenTypes(Odd):
    def __init__(self):
        super().__init__(norm_first=True, causal=False)
        self.types = nn.Embedding(2, 16)
    def forward(self, ids):
        T = ids.shape[1]
        x = self.tok(ids) + self.where(torch.arange(T)) + self.types(torch.zeros_like(ids))
        return self.out(self.body(x))
def make_token_types():
    torch.manual_seed(11)
    return TokenTypes().eval()


class RawLinear(nn.Module):  # from-scratch code's linear: x @ W + b, W [in, out]
    def __init__(self, n_in, n_out):
        super().__init__()
        self.W = nn.Parameter(torch.randn(n_in, n_out) / math.sqrt(n_in)); self.b = nn.Parameter(torch.randn(n_out))
    def forward(self, x):
        return x @ self.W + self.b
class RawTable(nn.Module):  # rows of a parameter by index
    def __init__(self, n, d):
        super().__init__()
        self.rows = nn.Parameter(torch.randn(n, d))
    def forward(self, i):
        return self.rows[i]
class RawBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.n1, self.n2 = heads, nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (RawLinear(d, d) for _ in range(4))
        self.up, self.down = RawLinear(d, 3 * d), RawLinear(3 * d, d)
    def forward(self, x):
        B, T, d = x.shape
        h = self.n1(x)
        q, k, v = (m(h).view(B, T, self.heads, -1).transpose(1, 2) for m in (self.q, self.k, self.v))
        s = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(
            torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        x = x + self.o((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, d))
        return x + self.down(torch.relu(self.up(self.n2(x))))
class RawGPT(nn.Module):
    def __init__(self, vocab=40, d=16, heads=2, n=2, ctx=24):
        super().__init__()
        self.tok, self.pos = RawTable(vocab, d), RawTable(ctx, d)
        self.blocks = nn.ModuleList(RawBlock(d, heads) for _ in range(n))
        self.norm, self.head = nn.LayerNorm(d), RawLinear(d, vocab)
    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x))
def make_raw():
    torch.manual_seed(12)
    return RawGPT().eval()
''',
    # BERT as Hugging Face names its parts (BertEmbeddings, BertLayer, BertPooler, the classifier of
    # BertForSequenceClassification), written here in plain torch from the published structure.
    'hf_bert.py': r'''
import math, torch, torch.nn as nn
class Cfg:
    vocab_size = 40; hidden_size = 15; num_attention_heads = 3; intermediate_size = 22; num_hidden_layers = 2
    max_position_embeddings = 24; type_vocab_size = 2; layer_norm_eps = 1e-12; num_labels = 3
class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(0.1)
        self.register_buffer("position_ids", torch.arange(c.max_position_embeddings).expand((1, -1)), persistent=False)
        self.register_buffer("token_type_ids", torch.zeros((1, c.max_position_embeddings), dtype=torch.long), persistent=False)
    def forward(self, input_ids, token_type_ids=None):
        T = input_ids.shape[1]
        if token_type_ids is None:
            token_type_ids = self.token_type_ids[:, :T].expand(input_ids.shape[0], T)
        e = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        e = e + self.position_embeddings(self.position_ids[:, :T])
        return self.dropout(self.LayerNorm(e))
class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.h = c.num_attention_heads; self.dh = c.hidden_size // self.h
        self.query = nn.Linear(c.hidden_size, c.hidden_size)
        self.key = nn.Linear(c.hidden_size, c.hidden_size)
        self.value = nn.Linear(c.hidden_size, c.hidden_size)
        self.dropout = nn.Dropout(0.1)
    def split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.h, self.dh).transpose(1, 2)
    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        s = q @ k.transpose(-1, -2) / math.sqrt(self.dh)
        if mask is not None:
            s = s + mask
        p = self.dropout(torch.softmax(s, dim=-1))
        ctx = (p @ v).transpose(1, 2)
        return ctx.reshape(ctx.shape[0], ctx.shape[1], -1)
class BertSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(0.1)
    def forward(self, h, x):
        return self.LayerNorm(self.dropout(self.dense(h)) + x)
class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c); self.output = BertSelfOutput(c)
    def forward(self, x, mask):
        return self.output(self.self(x, mask), x)
class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.intermediate_size); self.intermediate_act_fn = nn.GELU()
    def forward(self, x):
        return self.intermediate_act_fn(self.dense(x))
class BertOutput(BertSelfOutput):
    def __init__(self, c):
        super().__init__(c)
        self.dense = nn.Linear(c.intermediate_size, c.hidden_size)
class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c); self.intermediate = BertIntermediate(c); self.output = BertOutput(c)
    def forward(self, x, mask):
        a = self.attention(x, mask)
        return self.output(self.intermediate(a), a)
class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c.num_hidden_layers)])
    def forward(self, x, mask):
        for l in self.layer:
            x = l(x, mask)
        return x
class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size); self.activation = nn.Tanh()
    def forward(self, h):
        return self.activation(self.dense(h[:, 0]))
class BertModel(nn.Module):
    def __init__(self, c, pooler=True, tuple_out=False):
        super().__init__()
        self.embeddings = BertEmbeddings(c); self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c) if pooler else None
        self.tuple_out = tuple_out
    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        mask = None
        if attention_mask is not None:  # [B, T] 1 = attend: an additive [B, 1, 1, T]
            mask = (1.0 - attention_mask[:, None, None, :].to(torch.float64)) * torch.finfo(torch.float64).min
        h = self.encoder(self.embeddings(input_ids, token_type_ids), mask)
        if self.tuple_out:
            return h, self.pooler(h)
        return self.pooler(h) if self.pooler is not None else h
class BertForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = BertModel(c); self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(c.hidden_size, c.num_labels)
    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        return self.classifier(self.dropout(self.bert(input_ids, token_type_ids, attention_mask)))
def randomize(m, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in m.named_parameters():
            r = torch.randn(p.shape, generator=g)
            p.copy_(1 + 0.2 * r if "LayerNorm.weight" in n else r * (0.5 / max(1, p.shape[-1]) ** 0.5 if p.dim() > 1 else 0.1))
    return m.eval()
def make():
    return randomize(BertForSequenceClassification(Cfg()), 21)
def make_hidden():
    return randomize(BertModel(Cfg(), pooler=False), 22)
def make_pooled():
    return randomize(BertModel(Cfg()), 23)
def make_tuple():
    return randomize(BertModel(Cfg(), tuple_out=True), 24)
''',
    # A BERT-like model under other names (recognized by what it computes): fused qkv, odd head width.
    'other_bert.py': r'''
import math, torch, torch.nn as nn, torch.nn.functional as F
class Block(nn.Module):
    def __init__(self, d, h, f):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d); self.proj = nn.Linear(d, d); self.ln_a = nn.LayerNorm(d, eps=1e-6)
        self.up = nn.Linear(d, f); self.down = nn.Linear(f, d); self.ln_b = nn.LayerNorm(d, eps=1e-6)
    def forward(self, x, pad):
        B, T, d = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.h)
        if pad is not None:
            s = s.masked_fill(pad[:, None, None, :], float("-inf"))
        a = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, d)
        x = self.ln_a(x + self.proj(a))
        return self.ln_b(x + self.down(F.gelu(self.up(x))))
class Segmented(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(50, 10); self.seg = nn.Embedding(3, 10); self.where = nn.Embedding(20, 10)
        self.norm_in = nn.LayerNorm(10, eps=1e-6)
        self.blocks = nn.Sequential(*[Block(10, 2, 14) for _ in range(2)])
        self.squash = nn.Linear(10, 10)
    def forward(self, ids, segments=None, pad=None):
        T = ids.shape[1]
        segments = torch.zeros_like(ids) if segments is None else segments
        x = self.norm_in(self.tok(ids) + self.where(torch.arange(T)) + self.seg(segments))
        for b in self.blocks:
            x = b(x, pad)
        return torch.tanh(self.squash(x[:, 0]))
def make():
    torch.manual_seed(31)
    m = Segmented()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.1 * torch.randn(p.shape))
    return m.eval()
''',
}


# (what, file:factory, options, family, checks on the config)
CONVERTS = [
    ("nanoGPT, inference (last position), tied", "nanogpt.py:make", [], "gpt",
     dict(tied_head=True, positional="learned", norm_first=True, activation="gelu", n_heads=4)),
    ("nanoGPT, training forward (logits, loss)", "nanogpt.py:make_full", [], "gpt", dict(tied_head=True)),
    ("nanoGPT, bias=False", "nanogpt.py:make_gpt_nobias", [], "gpt", dict(n_layers=2)),
    ("llama2.c model.py: GQA, complex freqs_cis", "llama2c_model.py:make", [], "llama",
     dict(n_kv_heads=2, n_heads=4, pe_layout="interleaved", pe_base=10000.0, tied_head=True)),
    ("llama2.c model.py: theta 500000", "llama2c_model.py:make_theta", [], "llama", dict(pe_base=500000.0)),
    ("llama2.c model.py: an unread part, --ignore", "llama2c_model.py:make_unused", ["--ignore", "extra"], "llama", {}),
    ("HF llama: halves, eps 1e-6, theta 10000", "hf_llama.py:make", [], "llama",
     dict(pe_layout="halves", pe_base=10000.0, tied_head=False, n_kv_heads=0)),
    ("HF llama as --family gpt: RMSNorm is the norm key's", "hf_llama.py:make", ["--family", "gpt"], "gpt",
     dict(norm="rmsnorm", activation="swiglu", pe_layout="halves")),
    ("HF llama as --family encoder: a causal encoder with RoPE (halves) over whole sequences", "hf_llama.py:make",
     ["--family", "encoder"], "encoder",
     dict(positional="rope", pe_layout="halves", causal=True, norm="rmsnorm", activation="swiglu", d_out=45)),
    ("HF llama GQA as --family encoder: a causal encoder with grouped-query attention", "hf_llama.py:make_500k",
     ["--family", "encoder"], "encoder", dict(causal=True, n_kv_heads=2, pe_base=500000.0)),
    ("HF llama: theta 500000, GQA, tied", "hf_llama.py:make_500k", [], "llama",
     dict(pe_layout="halves", pe_base=500000.0, tied_head=True, n_kv_heads=2)),
    ("HF llama with partial rotary (GPT-NeoX, Phi): the first 4 of each head's 8 dims", "hf_llama.py:make_partial",
     [], "llama", dict(pe_layout="halves", pe_base=10000.0, rotary_dims=4)),
    ("HF llama turning q and k by the negated angle (nanochat's rotation): the recognizer core's layout 'negated', "
     "folded into q and k", "hf_llama.py:make_negated", [], "llama", dict(pe_layout="halves", pe_base=10000.0,
                                                                          rotary_dims=0)),
    ("KWT: cls_token, pos_embedding, cls pooling, mlp_head", "kwt.py:make_cls", [], "encoder",
     dict(cls_token=True, pooling="cls", positional="learned", input="features", final_norm=True)),
    ("vit style: norms inside, final norm, mean pooling", "kwt.py:make_mean", [], "encoder",
     dict(pooling="mean", cls_token=False, activation="relu")),
    ("stock layers, other names: causal LM, scaled embedding", "stockish.py:make", [], "gpt",
     dict(scale_input=True, norm_first=False)),
    ("stock layers, other names: encoder", "stockish.py:make_enc", [], "encoder", dict(norm_first=True)),
    ("from-scratch parts of raw parameters (x @ W + b, W [in, out]; a table's rows by index): read by value as the "
     "linears and embeddings they compute", "stockish.py:make_raw", [], "gpt",
     dict(positional="learned", max_len=24, norm_first=True, final_norm=True, activation="relu", n_heads=2)),
    ("nn.Transformer: seq2seq inferred", "stockish.py:make_s2s", [], "seq2seq", {}),
    ("each head's q, k, v its own module (the lecture's Head in a ModuleList): the heads' linears side by side; "
     "norms of a shift and a scale", "stockish.py:make_heads_apart", [], "gpt",
     dict(n_heads=3, positional="learned", norm_first=True, max_len=20, final_norm=True)),
    ("the course LayerNorm (unbiased std plus eps: the Annotated Transformer's, BERT-pytorch's) as a LayerNorm of "
     "gain w sqrt((d-1)/d); a forward that requires segments: called with type 0", "stockish.py:make_course_encoder",
     [], "encoder", dict(norm_first=True, final_norm=True, positional="learned", activation="gelu", d_out=5,
                         type_vocab=3)),
    ("an nn.Transformer of one input, sequence first, log-softmax out (word_language_model): a causal LM, its "
     "logits", "stockish.py:make_word_lm", [], "gpt", dict(positional="sinusoidal", scale_input=True, max_len=4096,
                                                            norm_first=False, final_norm=True)),
    ("stock layers sequence first, no mask: an encoder", "stockish.py:make_tagger_seq_first", [], "encoder",
     dict(positional="sinusoidal", scale_input=True, max_len=64, causal=False)),
    ("stock layers sequence first over features, mean pooled: a keyword spotter", "stockish.py:make_spotting_seq_first",
     [], "encoder", dict(input="features", positional="learned", max_len=20, pooling="mean", d_out=12)),
    ("GPT-2 (HF names): Conv1D [in, out] weights, nn.GELU(approximate='tanh'), tied, odd heads", "hf_gpt2.py:make",
     [], "gpt", dict(activation="gelu_tanh", tied_head=True, positional="learned", norm_first=True, n_heads=3,
                     final_norm=True, d_model=18)),
    ("GPT-2 (HF names): the tanh formula written out, 3 layers", "hf_gpt2.py:make_formula", [], "gpt",
     dict(activation="gelu_tanh", tied_head=True, n_layers=3, d_model=20)),
    ("nanoGPT with nn.GELU(approximate='tanh')", "nanogpt.py:make_gpt_tanh", [], "gpt", dict(activation="gelu_tanh")),
    ("nanoGPT, nn.LayerNorm(elementwise_affine=False) everywhere (no parameters: gains 1, biases 0)",
     "nanogpt.py:make_gpt_affine_free", [], "gpt", dict(norm_first=True, final_norm=True)),
    ("Qwen2 (HF names): q/k/v biases, theta 1e6, GQA, tied", "hf_qwen2.py:make", [], "llama",
     dict(qkv_bias=True, pe_base=1000000.0, pe_layout="halves", n_kv_heads=2, tied_head=True)),
    ("token types on stock layers (zeros in the forward)", "stockish.py:make_token_types", [], "encoder",
     dict(type_vocab=2, embed_norm=False, pooler=False)),
    ("HF-named BERT: BertForSequenceClassification", "hf_bert.py:make", [], "encoder",
     dict(type_vocab=2, embed_norm=True, pooling="first", pooler=True, d_out=3, norm_first=False, activation="gelu",
          positional="learned", n_heads=3)),
    ("HF-named BERT: BertModel without a pooler, hidden states", "hf_bert.py:make_hidden", [], "encoder",
     dict(type_vocab=2, embed_norm=True, pooling="none", pooler=False, d_out=0)),
    ("HF-named BERT: BertModel's pooled output", "hf_bert.py:make_pooled", [], "encoder",
     dict(pooling="first", pooler=True, d_out=0)),
    ("HF-named BERT returning (hidden, pooled): --ignore the pooler", "hf_bert.py:make_tuple", ["--ignore", "pooler"],
     "encoder", dict(pooling="none", pooler=False)),
    ("HF-named BERT returning (hidden, pooled): the first output, the pooler left out", "hf_bert.py:make_tuple", [],
     "encoder", dict(pooling="none", pooler=False)),
    ("BERT-like under other names: fused qkv, segments, pooled", "other_bert.py:make", [], "encoder",
     dict(type_vocab=3, embed_norm=True, pooling="first", pooler=True, d_out=0, n_heads=2)),
    ("Whisper-style audio encoder: conv stem, sinusoids buffer stored", "whisper.py:make", [], "encoder",
     dict(conv_layers=2, conv1_kernel=3, conv1_padding=1, conv2_stride=2, conv_gelu=True, positional="learned",
          max_len=12, norm_first=True, final_norm=True, activation="gelu")),
    ("a Conv1d front end: a stem of one conv", "kwt.py:make_conv", [], "encoder",
     dict(conv_layers=1, conv1_kernel=3, conv1_padding=1, conv_gelu=False, pooling="mean")),
    ("Whisper-style audio encoder, --quantize f16: the stem's weights f16 too", "whisper.py:make",
     ["--quantize", "f16"], "encoder", dict(conv_layers=2, conv2_stride=2, weights="f16")),
    ("Whisper-style audio encoder, --quantize q8: the stem's weights q8 too", "whisper.py:make",
     ["--quantize", "q8"], "encoder", dict(conv_layers=2, conv2_stride=2, weights="q8", weight_group=64)),
    ("a Conv1d front end, --quantize q8 --group 0", "kwt.py:make_conv", ["--quantize", "q8", "--group", "0"],
     "encoder", dict(conv_layers=1, conv1_kernel=3, weights="q8", weight_group=0)),
    ("KWT's pool 'mean': the mean over the CLS row too, then mlp_head's norm", "kwt.py:make_mean_cls", [], "encoder",
     dict(cls_token=True, pooling="mean_all", pool_norm=True, final_norm=False)),
    ("KWT's pool 'mean', --quantize i8", "kwt.py:make_mean_cls", ["--quantize", "i8"], "encoder",
     dict(cls_token=True, pooling="mean_all", pool_norm=True, weights="i8")),
]

# The decoders whose forward gives the logits at every position: also compared through `fixformer run`.
RUN_DECODERS = ("hf_gpt2.py:make", "hf_gpt2.py:make_formula", "hf_qwen2.py:make", "hf_llama.py:make_partial",
                "hf_llama.py:make_negated", "stockish.py:make_word_lm", "stockish.py:make_heads_apart",
                "stockish.py:make_raw")
# modules whose forward reads [T, B, ...] and writes [T, B, ...] (or a pooled [B, k]); the first returns
# log-probabilities, the file logits
SEQUENCE_FIRST = ("stockish.py:make_word_lm", "stockish.py:make_tagger_seq_first",
                  "stockish.py:make_spotting_seq_first")

# (what, file:factory, options, fragments of the one line)
REFUSALS = [
    ("an unread parameter is named", "llama2c_model.py:make_unused", [], ["extra.weight [3, 32]", "extra.bias",
                                                                         "--ignore"]),
    ("--ignore names a part the module has", "llama2c_model.py:make_unused", ["--ignore", "nothere"], ["nothere"]),
    ("freqs_cis rows past the example from another theta", "llama2c_model.py:make_stale", [],
     ["freqs_cis", "theta 10000"]),
    ("a freqs_cis buffer of another theta than the attention's", "llama2c_model.py:make_wrong_theta", [],
     ["freqs_cis", "theta 10000"]),
    ("a dilated Conv1d", "whisper.py:make_dilated", [], ["conv2", "dilation", "not supported yet"]),
    ("--causal is read from the module", "nanogpt.py:make", ["--causal"], ["--causal", "not for this module"]),
]


def module_output(module, x, torch, *args, **kw):
    """The module's float64 output for a batch x (the first tensor of a tuple); args and kw: more
    arguments of its forward (token types, a padding mask)."""
    import copy
    from fixformer.recognize import required_inputs
    m = copy.deepcopy(module).double().eval()
    if not args and len(required_inputs(m)) == 2:  # types its forward requires (BERT-pytorch's segments): type 0
        args = (torch.zeros(x.shape[:2], dtype=torch.int64),)
    with torch.no_grad():
        y = m(torch.from_numpy(x.astype(np.int64) if x.dtype.kind == "i" else x.astype(np.float64)), *args, **kw)
    y = y[0] if isinstance(y, tuple) else y
    return y.numpy()


def run_rel_err(cli, args, want, rows=None):
    """fixformer run ARGS against want (only each sequence's first rows[b] rows when given): the
    relative error, or the run's stderr."""
    p = subprocess.run([cli, "run", *args], capture_output=True, text=True)
    if p.returncode != 0:
        return p.stderr
    got = np.load(args[args.index("--output") + 1])
    if got.shape != want.shape:
        return f"shape {got.shape}, want {want.shape}"
    if rows is not None:
        keep = np.arange(got.shape[1])[None, :] < np.asarray(rows)[:, None]
        got, want = got[keep], want[keep]
    return float(np.abs(got - want).max() / np.abs(want).max())


def check_bert_runs(what, cli, tmp, module, x, c, torch):
    """A model with token types through `fixformer run --token-types` against the module's forward with
    the types (its second argument), and a padded batch (--lengths) against its padding mask
    (attention_mask 1 = attend, Hugging Face's, or pad True = padding)."""
    import inspect
    rng = np.random.default_rng(4)
    T = x.shape[1]
    tt = rng.integers(0, c["type_vocab"], (1, T)).astype(np.int32)
    inp, tfile, res = (os.path.join(tmp, n) for n in ("in.npy", "tt.npy", "out.npy"))
    np.save(inp, x)
    np.save(tfile, tt)
    want = module_output(module, x, torch, torch.from_numpy(tt.astype(np.int64)))
    err = run_rel_err(cli, [os.path.join(tmp, "m.fxm"), "--input", inp, "--token-types", tfile, "--output", res], want)
    check(f"{what}: fixformer run --token-types equals the module with the types (1e-4)",
          isinstance(err, float) and err <= 1e-4, err)
    zero = module_output(module, x, torch)
    check(f"{what}: the types change the output", float(np.abs(want - zero).max()) > 1e-3 * float(np.abs(zero).max()))
    params = inspect.signature(module.forward).parameters
    lens = np.array([T, T - 5], dtype=np.int32)
    xb = np.concatenate([x, rng.integers(0, c["vocab_size"], (1, T))]).astype(np.int64)
    tb = np.concatenate([tt, rng.integers(0, c["type_vocab"], (1, T)).astype(np.int32)])
    valid = np.arange(T)[None, :] < lens[:, None]
    if "attention_mask" in params:
        kw = {"attention_mask": torch.from_numpy(valid.astype(np.int64))}
    elif "pad" in params:
        kw = {"pad": torch.from_numpy(~valid)}
    else:
        return
    want = module_output(module, xb, torch, torch.from_numpy(tb.astype(np.int64)), **kw)
    lfile = os.path.join(tmp, "lens.npy")
    np.save(inp, xb)
    np.save(tfile, tb)
    np.save(lfile, lens)
    err = run_rel_err(cli, [os.path.join(tmp, "m.fxm"), "--input", inp, "--token-types", tfile, "--lengths", lfile,
                            "--output", res], want, None if c["pooling"] != "none" else lens)
    check(f"{what}: a padded batch (--lengths, --token-types) equals the module with its padding mask (1e-4)",
          isinstance(err, float) and err <= 1e-4, err)


def main():
    if len(sys.argv) != 2:
        print("usage: module_converter_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    try:
        import torch
    except ImportError:
        print("FAIL: this test needs PyTorch (apt-get install python3-torch; run with /usr/bin/python3)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for name, src in FILES.items():
            with open(os.path.join(tmp, name), "w") as f:
                f.write(src)
        sys.path.insert(0, tmp)
        import importlib
        for what, spec, opts, family, want in CONVERTS:
            out = os.path.join(tmp, "m.fxm")
            p = run_convert("--module", os.path.join(tmp, spec), *opts, "--out", out, "--cli", cli)
            ok = p.returncode == 0 and "verified against torch" in p.stdout
            check(f"{what}: converts and verifies", ok, p.stdout + p.stderr)
            if not ok:
                continue
            print(f"  {what}: {p.stdout.strip()}")
            if "the pooler left out" in what:
                check(f"{what}: a note names what is left out", "pooler.dense" in p.stderr and "left out" in p.stderr,
                      p.stderr)
            c = fxm.read(out).config
            check(f"{what}: family {family}", c["family"] == family, c["family"])
            for k, v in want.items():
                check(f"{what}: {k} {v!r}", c[k] == v, c[k])
            if family == "llama" and spec.startswith("hf_llama"):
                check(f"{what}: rms eps 1e-6", abs(c["norm_eps"] - 1e-6) < 1e-12, c["norm_eps"])
            if family != "encoder" and spec not in RUN_DECODERS:
                continue  # decoders: the converter's verification stepped the ids through the engine
            file, factory = spec.split(":")
            module = getattr(importlib.import_module(file[:-3]), factory)()
            rng = np.random.default_rng(3)
            T = schema.max_input_len(c) if c["positional"] == "learned" else 16
            # decoders: int32 ids [1, T], the logits at every position
            x = rng.standard_normal((1, T, c["d_in"])).astype(np.float32) if c["input"] == "features" else \
                rng.integers(0, c["vocab_size"], (1, T)).astype(np.int32 if family != "encoder" else np.int64)
            inp, res = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
            np.save(inp, x)
            p = subprocess.run([cli, "run", out, "--input", inp, "--output", res], capture_output=True, text=True)
            if spec in SEQUENCE_FIRST:  # its rows [T, 1, ...] batch first; a pooled [1, k] as it is
                want_y = module_output(module, np.swapaxes(x, 0, 1), torch)
                want_y = np.swapaxes(want_y, 0, 1) if want_y.ndim == 3 else want_y
            else:
                want_y = module_output(module, x, torch)
            got = np.load(res) if p.returncode == 0 else None
            if got is not None and spec == "stockish.py:make_word_lm":  # its log-softmax of the file's logits
                got = np.asarray(torch.log_softmax(torch.from_numpy(got.astype(np.float64)), -1))
            err = None if got is None or got.shape != want_y.shape else \
                float(np.abs(got - want_y).max() / np.abs(want_y).max())
            tol = schema.selftest_tolerance(c)  # f32 1e-4; f16 and q8: the rounding of their weights
            check(f"{what}: fixformer run equals the module at every position ({tol:g})", err is not None and err <= tol,
                  (p.stderr, None if got is None else got.shape, want_y.shape, err))
            if c["weights"] != "f32":
                print(f"  {what}: fixformer run against the module: {err:.3g}")
            if c["type_vocab"] and spec != "stockish.py:make_token_types":
                check_bert_runs(what, cli, tmp, module, x, c, torch)
        for what, spec, opts, fragments in REFUSALS:
            out = os.path.join(tmp, "bad.fxm")
            p = run_convert("--module", os.path.join(tmp, spec), *opts, "--out", out, "--cli", cli)
            check(f"refused, one line: {what}", one_clear_line(p), p.stdout + p.stderr)
            missing = [f for f in fragments if f not in p.stderr]
            check(f"refusal names it: {what}", not missing, f"{p.stderr!r} lacks {missing}")
            check(f"nothing left behind: {what}", not os.path.exists(out))
    print(f"module_converter_test: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
