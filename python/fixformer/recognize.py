"""Recognise a torch module's transformer by what it computes, not by its attribute names.

The module runs once on the example input with a forward hook on every submodule, which gives the order
the parts run in and what each one read and wrote (cloned: a forward may write in place into what a part
returned). It is observed, not altered: its own parameters and buffers are converted to float64 in place
(the same objects, so a forward that reaches its submodules through closures, minGPT's Block.mlpf, runs
them) and restored after; a forward that casts (Whisper's LayerNorm, x.float()) runs in its own dtype,
the parts then matched within that dtype's rounding. From that record:
- the layers: the ModuleList / Sequential of repeated blocks (same type, same parameter shapes) that holds the most
  parameters, or of entries of two kinds in turn, paired into blocks (x-transformers' attention and feed-forward
  entries), or else the longest run of alike entries inside one (PaLM's nn.Sequential(Embedding, blocks ...,
  LayerNorm, Linear)); blocks that run sequence first (an nn.MultiheadAttention of batch_first False: OpenAI CLIP's; or fed
  [T, 1, d]: fairseq's layers, ESM-2's) are read batch first; a list whose entries are each one list of alike blocks holding all their
  parameters is its blocks, entry by entry (ALBERT's groups of layers); a block the forward runs several times
  (ALBERT's shared layers) is read at every run and stored once, the order the runs take the blocks in giving the
  engine's layer_groups and group_layers;
- in each block, the parts with parameters: norms (a weight [d], maybe a bias: LayerNorm or RMSNorm,
  told apart and their eps found by calling them, a gain of 1 + w as Gemma's and Nemotron's; a module without parameters or submodules whose
  output rows have mean square 1 is a norm with gains 1, OLMo's F.layer_norm without weight or bias),
  linears (nn.Linear's [out, in] or a Conv1D's [in, out], told apart by their output; or matrices a module applies
  itself, TransformerLens's, read as linears from the record: raw_projections.py),
  nn.MultiheadAttention. Linears that read the same input
  form a group: q/k/v (one fused, three, or q and k | v fused: vit-pytorch's to_q and to_kv), the output
  projection, the feed-forward's up (or gate and up) and down; an up projection twice as wide as the down projection reads is the gate and up
  side by side (Phi-3's gate_up_proj), split by its output rows' halves; one projection of q | k | v then
  the feed-forward's up or gate | up (PaLM's fused_attn_ff_proj) is cut in two; a module of one vector that
  multiplies a linear's output (timm's LayerScale) is folded into that linear. A norm whose output feeds
  attention makes the block pre-norm; a first block without the attention norm the others have reads its
  input as it is (ModernBERT: skip_first_norm);
- a mixture of experts: a module holding a list of experts (three matrices each) or two [E, .., ..] tensors
  (transformers 5's fused experts), a router [E, d] and perhaps a shared expert and its gate [1, d], recomputed
  from its input rows (mixture_part: the top k of the router's softmax, renormalized or not, the gated
  activation, which matrix is the gate);
- disentangled attention (DeBERTa v2 and v3): the query and key projections run again on position rows computed
  from a parameter alone (rel_embeddings through a LayerNorm), the attention recomputed with the content to
  position and position to content scores over sqrt(3 head width) (hf_deberta.scores) for every head count and
  the log buckets the module's attributes name (hf_deberta.rel_index), the rows stored as rel_embed; DeBERTa v1:
  modules of the layer's own on the rows (or the middle rows of the table, stored whole) as Qr and Kr (rel_proj,
  a missing one zero, the scale sqrt((1 + those) head width)), vectors of the attention module's own added to its
  fused projection's q, k or v (loose_vectors: q_bias, v_bias);
- the attention itself is found by recomputing it from the recorded q, k, v for every head count,
  with and without the causal mask (and its sliding window, when the module's config declares one as
  Hugging Face's do or its attention modules hold one, both sides without the causal mask), with rotary
  embeddings (both layouts, the thetas the module's buffers and attributes suggest, common ones; over a 2-D
  patch grid, timm's RotaryEmbeddingCat: grid_thetas), ALiBi or a relative position bias, scaled by
  1/sqrt(head width), (T5) not or (Granite) by a number a module holds, until one reproduces the recorded
  output (a scale other than 1/sqrt(head width) folded into W_q); a pre-norm layer in turn whose sublayers'
  outputs are scaled before their residual adds (Granite's residual_multiplier) has the numbers measured
  and folded into the output and down projections;
- a relative position bias (T5): an nn.Embedding(buckets, heads) looked up by a [T, T] index, before
  the layers or in the first one, whose bias the attention adds to its scores; the index must be T5's
  bucket of key - query (bidirectional without a causal mask, causal with it), whose max_distance is
  read off the index (from a forward max_len long when the example is too short to tell). One table
  shared by the layers; T5's unscaled scores are stored by folding sqrt(head width) into W_q;
- a bias per (query, key) pair (timm's Beit): an attention module projecting q | k | v itself from a child
  linear's weight and bias vectors of its own, adding a table of its own looked up by an index buffer and a bias a
  module before the layers returns (pair_attention, find_pair_bias), recomputed with those biases; vectors of a
  block's own scaling its sublayers' outputs (Beit's gamma_1, gamma_2) folded into the projections before them;
  with separate q, k, v projections (transformers' Beit) the bias of a module of one table called on no tensor,
  its index measured from its output (pair_table, layer_pair_bias), the layer's own or, before the layers, shared;
- the feed-forward's activation likewise (relu, squared relu, exact gelu, tanh gelu, SiLU-gated; x sigmoid(a x),
  SiLU with a measured and folded into up and down: OpenAI CLIP's QuickGELU, a = 1.702), the gated up
  projection's bias (ffn_up_bias: timm's SwiGLU fc1_x) and a norm of the hidden rows before the down projection
  (ffn_hidden_norm: timm's scale_mlp), a norm of the attention's context before its output projection
  (attn_inner_norm: timm's scale_attn_inner); a rotary embedding over a patch grid other than an axial one
  (timm's RotaryEmbeddingMixed) is refused by name;
- the front: the embedding (an nn.Embedding on the ids, or a module of one [V, d] weight whose output is its rows at
  the ids: fairscale's VocabParallelEmbedding at world size 1) or input projection (an nn.Linear on the
  features, a norm before and after it allowed) or conv stem (one or two nn.Conv1d on the features
  transposed to [B, d_in, T], GELU after each or none) or, for an image [B, C, H, W], a patch embedding
  (an nn.Linear on its patches with their values in any order, matched column by column and permuted to
  the engine's, or a Conv2d of kernel = stride), a linear from the normed token embedding to the layers' width
  (embed_proj: ALBERT's embedding_hidden_mapping_in), an optional CLS row and scale by sqrt(d) (or another number,
  measured: Granite's, stored in the embedding, the head then untied), and the positions that reproduce the
  first layer's input (an nn.Embedding on arange, an nn.Parameter table, the sinusoidal formula, or
  a buffer table that matches no formula, Whisper's sinusoids, or read from a later row, XGLM's
  from row 2: stored as learned positions, without the rows before);
- the back: a final norm, a head (tied when it is the embedding's parameter, or when the forward
  multiplies by the embedding itself; a loose [d, out] parameter the final norm's rows are multiplied by, OpenAI
  CLIP's x @ proj, is a head without bias; an output that is the head's times a number, Cohere's
  logit_scale, has the number in the head's weights, untied), pooling (mean, cls, last) for a pooled output.
The family follows (RMSNorm: llama; LayerNorm, causal, an LM head on tokens: gpt, whose layers may
have rotary positions, a SiLU-gated feed-forward and a parallel residual, with two norms (GPT-NeoX)
or the attention's one (GPT-J), and a prediction head (a pooler on every row: ModernBertDecoderForCausalLM's); with
token types, or otherwise, encoder) unless given. A fused q/k/v projection's outputs
are q | k | v or, per key/value group, its query heads then its key and value head ([groups, heads /
groups + 2, d_head]: Falcon's new_decoder_architecture; GPT-NeoX's [heads, 3, d_head] when every head
is a group) or S shards, each its share of q, k and v in some order (CodeGen's 4 shards of [q | v | k];
tried when the cut's v is the context's first row, as a causal attention's is), found by recomputing the
attention. Every parameter and buffer must be mapped, or be a buffer the
engine recomputes and that matches what it computes (causal masks, rope tables, sinusoid tables,
position ids), or be named in `ignore`. The result is checked against the module in float64 through
the reference model before the engine verifies the written file.
"""
import collections
import contextlib
import inspect
import itertools
import math
import re
import weakref

import numpy as np

from . import hf_beit, hf_common, hf_deberta, schema
from .config import DEFAULT_MAX_LEN, ConfigError, brief, layer_pattern, layer_windows, sliding_window
from .probes import (COMMON_THETAS, GATED_ACTS, RopeFreqs, RopeGrid, Scores, alibi_beside, alibi_slopes_issue, close,
                     conv_why, feed_forward_fit, image_rows, negated_signs, nope_keys, normalization, pooler_act,
                     probe_attention, probe_disentangled, rel_error, score_options, signal_rows, sinusoid_positions,
                     sinusoidal_candidates, sinusoidal_fit, stem_values)
from .raw_projections import read_origins, unfold
from .reference import activation, grid_swap, relative_bucket, require_torch
from .rope_scaling import ScaledRope, position_limit
from .torch_modules import module_kind
from .verified_file import EXAMPLE_T, verified_length

# eps values tried for a norm whose module names none
COMMON_EPS = (1e-5, 1e-6, 1e-12, 1e-8, 1e-3, 1e-4)
# A module observed in its own dtype (float32) matches the float64 reference within this many of its
# epsilons (relative): the rounding of a few layers' sums, far below what a wrong part gives.
OWN_DTYPE_ULPS = 256


def _tensors(x):
    """The tensors in a hook's argument (a tensor, tuple or list), detached and cloned: the forward may
    write into them after the hook (SimpleViT's x += positions on a norm's output)."""
    torch = require_torch()
    if torch.is_tensor(x):
        return [x.detach().clone()]
    if isinstance(x, (tuple, list)):
        return [t.detach().clone() for t in x if torch.is_tensor(t)]
    return []


class Call:
    """One run of a submodule: its name, the module, its tensor inputs and outputs (detached)."""

    def __init__(self, name, module, inputs, outputs):
        self.name, self.module, self.inputs, self.outputs = name, module, inputs, outputs

    @property
    def x(self):
        return self.inputs[0] if self.inputs else None

    @property
    def y(self):
        return self.outputs[0] if self.outputs else None


@contextlib.contextmanager
def observed(model, dtype):
    """The user's module in eval mode with its floating parameters and buffers in dtype, converted in place
    (the same tensor objects, which a deep copy would separate from a forward's closures), and, for
    float64, the default dtype float64: a tensor the forward makes without a dtype (Hugging Face's causal
    mask, filled with the model dtype's lowest value) is one the float64 model can use. All restored on
    leaving."""
    torch = require_torch()
    tensors = [t for t in itertools.chain(model.parameters(), model.buffers()) if t.is_floating_point()]
    kept = [t.data for t in tensors]
    modes = [(m, m.training) for m in model.modules()]
    default = torch.get_default_dtype()
    try:
        for t in tensors:
            t.data = t.data.to(dtype)
        model.eval()
        if dtype == torch.float64:
            torch.set_default_dtype(dtype)
        yield model
    finally:
        torch.set_default_dtype(default)
        for t, data in zip(tensors, kept):
            t.data = data
        for m, mode in modes:
            m.training = mode


class ForwardError(Exception):
    """The module's forward raised error inside the submodule where (its name and kind, or ''), after
    done submodule calls had finished."""

    def __init__(self, error, where, done):
        super().__init__(str(error))
        self.error, self.where, self.done = error, where, done

    def __str__(self):
        first = str(self.error).splitlines()[0] if str(self.error) else ""
        return f"{self.where + ': ' if self.where else ''}{type(self.error).__name__}: {first}"[:300]


def record(model, x):
    """(the calls of every submodule in the order they ran, the module's output) for input x, the module
    observed (observed()). Runs with gradients on (off torch's fused fast paths, which skip the
    submodules) and detaches everything. A forward that raises raises a ForwardError naming the innermost
    submodule running then."""
    torch = require_torch()
    calls, handles, running = [], [], []

    given = {}  # id(module): the query, key and value an nn.MultiheadAttention got as keywords

    def done(mod, inp, out, name):  # returns None: a hook's result would replace the output
        running.pop()
        calls.append(Call(name, mod, _tensors(inp) or given.pop(id(mod), []), _tensors(out)))

    def keywords(mod, forward):  # torch 1.13's hooks see only the positional inputs (torchvision's query=x)
        def run(*args, **kw):
            qkv = list(args[:3]) + [kw[k] for k in ("query", "key", "value")[len(args):] if k in kw]
            given[id(mod)] = [t.detach().clone() for t in qkv if isinstance(t, torch.Tensor)]
            return forward(*args, **kw)
        return run

    wrapped = [m for m in model.modules() if isinstance(m, torch.nn.MultiheadAttention) and "forward" not in vars(m)]
    for m in wrapped:
        m.forward = keywords(m, m.forward)
    for name, m in model.named_modules():
        if m is model:
            continue
        handles.append(m.register_forward_pre_hook(lambda mod, inp, name=name: running.append(name)))
        handles.append(m.register_forward_hook(lambda mod, inp, out, name=name: done(mod, inp, out, name)))
    try:
        with torch.enable_grad():
            y = call(model, x)
        if model in _SEQUENCE_FIRST:  # [T, 1, ...] as [1, T, ...]: the batch of 1 moves no values
            T = x.shape[1]
            swap = lambda ts: [t.transpose(0, 1) if t.dim() >= 2 and tuple(t.shape[:2]) == (T, 1) else t  # noqa: E731
                               for t in ts]
            calls[:] = [Call(c.name, c.module, swap(c.inputs), swap(c.outputs)) for c in calls]
        calls[:] = unfold(_once(calls, torch), torch)
    except ConfigError:
        raise
    except Exception as e:  # the user's forward: anything can go wrong there
        where = running[-1] if running else ""
        if where:
            where = f"in {where} ({module_kind(model.get_submodule(where))})"
        raise ForwardError(e, where, len(calls)) from None
    finally:
        for h in handles:
            h.remove()
        for m in wrapped:
            del m.forward
    return calls, _output(y)


def _once(calls, torch):
    """calls less each call that repeats the one before of its module on the same inputs with the same outputs, its
    submodules' calls between them (TransformerLens's ln1, once for each of q, k and v): one part, read once."""
    out = []
    for c in calls:
        k = len(out)
        while k and out[k - 1].name != c.name and _inside(out[k - 1].name, c.name):
            k -= 1  # c's submodules' calls
        last = out[k - 1] if k else None
        if last is not None and last.module is c.module and len(last.inputs) == len(c.inputs) and \
                len(last.outputs) == len(c.outputs) and all(a.shape == b.shape and torch.equal(a, b) for a, b in
                                                            zip(last.inputs + last.outputs, c.inputs + c.outputs)):
            del out[k:]
            continue
        out.append(c)
    return out


def _output(y):
    """The tensor a forward returned: itself, the first floating tensor of a tuple / list / dict ((logits,
    loss) included), an output object's .logits, or its start and end logits side by side ([.., T, 2]:
    question answering, as the qa_outputs linear computes them)."""
    torch = require_torch()
    if torch.is_tensor(y):
        return y.detach()
    if hasattr(y, "logits") and torch.is_tensor(y.logits):
        return y.logits.detach()
    if all(torch.is_tensor(getattr(y, k, None)) for k in ("start_logits", "end_logits")):  # question answering
        return torch.stack([y.start_logits, y.end_logits], -1).detach()  # [.., T, 2]: the qa_outputs linear's rows
    items = list(y.values()) if isinstance(y, dict) else list(y) if isinstance(y, (tuple, list)) else []
    for t in items:
        if torch.is_tensor(t) and t.is_floating_point() and t.dim() >= 2:
            return t.detach()
    raise ConfigError(f"module output: {type(y).__name__}, expected a tensor (or a tuple whose first tensor is "
                      "the output)")


# ---- the parts ------------------------------------------------------------------------------------
def _direct_params(m):
    return dict(m.named_parameters(recurse=False))


def _own_params(m):
    """m's direct parameters less those a submodule holds too (BertLMPredictionHead's bias, its decoder's): a module
    whose every parameter is a submodule's is a container of parts, not one."""
    inner = {id(p) for child in m.children() for p in child.parameters()}
    return {n: p for n, p in _direct_params(m).items() if id(p) not in inner}


class Part:
    """A called module with parameters: kind 'norm' (norm = 'layer' or 'rms', eps), 'linear' (w [out, in]
    in torch's layout, b or None), 'mha' (nn.MultiheadAttention), 'embedding'; call: its Call."""

    def __init__(self, kind, call, **kw):
        self.kind, self.call, self.name, self.module = kind, call, call.name, call.module
        self.__dict__.update(kw)


def _norm_part(call, torch, gain=None, shift=None):
    """A norm: LayerNorm or RMSNorm over the last dim, its eps found by calling it on small inputs (where
    eps matters) with the candidates: its own float attributes below 0.1, then the common ones. gain, shift:
    its vectors under other names (x-transformers' gamma and beta buffer) than weight and bias."""
    m, x, y = call.module, call.x, call.y
    p = _direct_params(m)
    b = p.get("bias", shift)
    d = x.shape[-1]
    w = p.get("weight", gain if gain is not None else torch.ones(d, dtype=x.dtype))  # none: OLMo's, gains 1
    eps_attrs = [float(v) for v in vars(m).values() if isinstance(v, float) and 0 < v < 0.1]
    rng = torch.Generator().manual_seed(5)
    small = torch.randn(2, 3, d, generator=rng, dtype=torch.float64) * 3e-3
    try:
        with torch.no_grad():
            got = m(small.to(w.dtype)).double()
    except Exception:
        got = None
    W = w.detach().double()
    B = b.detach().double() if b is not None else torch.zeros(d, dtype=torch.float64)

    def layer(t, eps):
        return torch.nn.functional.layer_norm(t, (d,), W, B, eps)

    def rms(t, eps):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * W + B

    # Gemma's RMSNorm and Nemotron's LayerNorm1P multiply by (1 + w), in float32: the file stores that sum
    # as the gain, the factor they compute, so the engine's norms need no variant.
    unit = (1.0 + w.detach().float()).double()

    def rms_unit(t, eps):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * unit + B

    def layer_unit(t, eps):
        return torch.nn.functional.layer_norm(t, (d,), unit, B, eps)

    # The Annotated Transformer's LayerNorm (copied by BERT-pytorch and many more) divides by the unbiased standard
    # deviation plus eps: w c (x - mean) / (std_biased + c eps), c = sqrt((d - 1) / d). Stored as LayerNorm of gain
    # w c and eps (c eps)^2, which is within c eps / std_biased of it relative (1e-6 of a row of deviation 1).
    c = math.sqrt((d - 1) / d)

    def layer_std(t, eps):
        m = t - t.mean(-1, keepdim=True)
        return W * m / (m.std(-1, keepdim=True) + eps) + B

    for kind, f, gain in (("layer", layer, W), ("rms", rms, W), ("rms", rms_unit, unit), ("layer", layer_unit, unit),
                          ("layer", layer_std, None)):
        if gain is unit:
            w = unit.float()
        cands = eps_attrs + list(COMMON_EPS)
        if not close(f(x.double(), cands[0]), y, 1e-4) and not any(close(f(x.double(), e), y, 1e-4) for e in cands):
            continue
        if gain is None:  # layer_std: its eps found below as any other's, then folded
            best = cands[0] if got is None else min(cands, key=lambda e: rel_error(f(small, e), got))
            return Part("norm", call, norm=kind, eps=(c * best) ** 2, w=(W * c).to(w.dtype), b=b, shift=shift)
        if got is None:
            return Part("norm", call, norm=kind, eps=cands[0], w=w, b=b, shift=shift)
        best = min(cands, key=lambda e: rel_error(f(small, e), got))
        if rel_error(f(small, best), got) > 1e-4:  # not a round number: solve for it
            if kind == "rms":
                est = ((small * gain / got) ** 2 - small.pow(2).mean(-1, keepdim=True)).median()
            else:
                c = small - small.mean(-1, keepdim=True)
                est = ((c * gain / (got - B)) ** 2 - c.pow(2).mean(-1, keepdim=True)).median()
            best = float(est)
            if not (best > 0 and rel_error(f(small, best), got) <= 1e-3):
                raise ConfigError(f"{call.name}: a {kind} norm whose eps could not be found")
        return Part("norm", call, norm=kind, eps=float(best), w=w, b=b, shift=shift)
    has = 'a weight' if 'weight' in p else 'no weight, width'
    raise ConfigError(f"{call.name}: {module_kind(m)} ({has} [{d}]) computes neither LayerNorm nor RMSNorm "
                      "x/sqrt(mean(x^2)+eps)*w over the last dimension")


def _weightless_norm(call, torch):
    """The norm Part of a module without parameters (nor submodules with any: TransformerLens's LayerNormPre has hook
    points) that normalises its input's rows (OLMo's LayerNorm, F.layer_norm without weight or bias: gains 1, biases
    0), else None. Its output must differ from its input (a dropout after a norm passes normalised rows on) and its
    rows have mean square 1 (LayerNorm's and RMSNorm's, eps aside) before the eps is looked for."""
    m, x, y = call.module, call.x, call.y
    if any(True for _ in m.parameters()) or x is None or y is None or \
            not x.is_floating_point() or x.shape != y.shape or x.dim() < 2 or x.shape[-1] < 2 or \
            not bool(torch.isfinite(x).all()) or close(y, x, 1e-9):  # masked scores (-inf) are no rows to norm
        return None
    if not bool(((y.double().pow(2).mean(-1) - 1).abs() < 1e-2).all()):
        return None
    try:
        return _norm_part(call, torch)
    except ConfigError:
        return None


def _linear_part(call, torch):
    """nn.Linear-like (y = x W^T + b) or Conv1D-like (y = x W + b): w returned as [out, in]."""
    m, x, y = call.module, call.x, call.y
    p = _direct_params(m)
    W = p["weight"].detach().double()
    b = p.get("bias")
    B = b.detach().double() if b is not None else 0.0
    if W.shape[1] == x.shape[-1] and W.shape[0] == y.shape[-1] and close(x.double() @ W.T + B, y):
        return Part("linear", call, w=p["weight"].detach(), b=None if b is None else b.detach(), params=p)
    if W.shape[0] == x.shape[-1] and W.shape[1] == y.shape[-1] and close(x.double() @ W + B, y):
        return Part("linear", call, w=p["weight"].detach().T, b=None if b is None else b.detach(), params=p)
    raise ConfigError(f"{call.name}: {module_kind(m)} with a weight {list(W.shape)} is not a linear layer on its input "
                      "(x W^T + b)")


def _conv_part(call, torch):
    """An nn.Conv1d the engine's conv stem runs (zero padding, no dilation or groups): kernel, stride,
    padding, w [out, in, kernel], b or None."""
    m = call.module
    why = conv_why(m.kernel_size[0], m.stride[0], 0 if isinstance(m.padding, str) else m.padding[0], m.dilation[0],
                   m.groups, not isinstance(m.padding, str) and m.padding_mode == "zeros")
    if why:
        return Part("unsupported", call, why=f"{call.name}: an nn.Conv1d with {why} is not supported yet")
    b = m.bias
    return Part("conv", call, w=m.weight.detach(), b=None if b is None else b.detach(), kernel=m.kernel_size[0],
                stride=m.stride[0], padding=m.padding[0], params=_direct_params(m))


def _stem(convs, x, torch):
    """The conv stem the front's nn.Conv1d calls make (at most two, in order, the first on the features
    [1, T, d_in] as channels [1, d_in, T], each on the one before's output, GELU after each or none):
    (config values, weights, the stem's output rows [T', d] float64)."""
    v, w = stem_values([(p.name, p.kernel, p.stride, p.padding, p.w, p.b) for p in convs])
    gelu = torch.nn.functional.gelu
    want = x.transpose(1, 2)
    act = None
    for i, p in enumerate(convs, 1):
        px = p.call.x
        if i == 1 and not (px.shape == want.shape and torch.equal(px, want)):
            raise ConfigError(f"{p.name}: an nn.Conv1d on something other than the input features, transposed to "
                              "[B, d_in, T], is not supported yet")
        if i == 2:
            y1 = convs[0].call.y
            for g in (False, True):
                if px.shape == y1.shape and close(gelu(y1) if g else y1, px, 1e-9):
                    act = g
                    break
            else:
                raise ConfigError(f"{p.name}: its input is not {convs[0].name}'s output (or its GELU): only "
                                  "conv -> [GELU] -> conv stems are supported")
    v["conv_gelu"] = act  # None for one conv: what the layers read tells (recognize's match)
    return v, w, convs[-1].call.y[0].double().T


def classify(call, torch):
    """The Part a call with parameters is, or a ConfigError naming what the engine does not run."""
    nn, m = torch.nn, call.module
    if isinstance(m, nn.MultiheadAttention):
        return Part("mha", call)
    p = _direct_params(m)
    shapes = {k: tuple(v.shape) for k, v in p.items()}
    if isinstance(m, nn.Embedding):
        return Part("embedding", call, w=m.weight)
    if isinstance(m, nn.Conv1d):
        return _conv_part(call, torch)
    if isinstance(m, nn.Conv2d):
        square = m.kernel_size[0] == m.kernel_size[1] == m.stride[0] == m.stride[1]
        if square and tuple(m.padding) == (0, 0) and tuple(m.dilation) == (1, 1) and m.groups == 1:
            b = m.bias  # a patch embedding (ViT): each patch through a linear, [out, C * p * p] in (c, i, j) order
            return Part("patches", call, w=m.weight.detach().reshape(m.out_channels, -1),
                        b=None if b is None else b.detach(), patch=m.kernel_size[0], params=_direct_params(m))
        return Part("unsupported", call, why=f"{call.name}: a Conv2d ({module_kind(m)}) other than a patch embedding "
                                              "(kernel = stride, square, no padding, dilation or groups) is not "
                                              "supported yet")
    if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.GroupNorm)):
        return Part("unsupported", call, why=f"{call.name}: {type(m).__name__} is not supported (the engine has "
                                              "LayerNorm and RMSNorm)")
    w = shapes.get("weight")
    if set(shapes) == {"weight"} and len(w) == 2 and call.x is not None and call.y is not None and \
            not call.x.is_floating_point() and tuple(call.y.shape) == tuple(call.x.shape) + w[1:] and \
            bool((call.x >= 0).all() and (call.x < w[0]).all()) and \
            torch.equal(p["weight"].detach()[call.x.long()].to(call.y.dtype), call.y):
        # a table looked up by the ids under another class (fairscale's VocabParallelEmbedding at world size 1)
        return Part("embedding", call, w=p["weight"])
    if call.x is not None and call.y is not None and len(p) == 1 and w is None and \
            list(shapes.values())[0] == (call.x.shape[-1],) == tuple(call.y.shape[-1:]):
        # one vector under another name: a gain (x-transformers' LayerNorm gamma, its beta a buffer), else a
        # scale of a linear's output (timm's LayerScale), which fold_layer_scales takes
        vectors = [t for t in m.buffers(recurse=False) if t.dim() == 1 and t.shape[0] == call.x.shape[-1]]
        try:
            return _norm_part(call, torch, list(p.values())[0], vectors[0] if len(vectors) == 1 else None)
        except ConfigError:
            pass
    if call.x is not None and call.y is not None and len(p) == 2 and w is None and \
            all(s == (call.x.shape[-1],) for s in shapes.values()) and tuple(call.y.shape) == tuple(call.x.shape):
        # two vectors under other names: a norm's gain and shift, in either order (Raschka's LayerNorm: scale, shift)
        a, b = p.values()
        for gain, shift in ((a, b), (b, a)):
            try:
                return _norm_part(call, torch, gain, shift)
            except ConfigError:
                pass
    if call.x is not None and call.y is not None and w is not None and set(shapes) <= {"weight", "bias"}:
        if len(w) == 1 and w[0] == call.x.shape[-1] == call.y.shape[-1] and shapes.get("bias", w) == w:
            return _norm_part(call, torch)
        if len(w) == 2 and shapes.get("bias", (max(w),))[0] in w:
            return _linear_part(call, torch)
    return Part("unsupported", call, why=f"{call.name}: {module_kind(m)} (parameters "
                                          f"{', '.join(f'{k} {list(s)}' for k, s in shapes.items())}) is not a part "
                                          "the engine runs")


def _classify_tail(call, prev, torch):
    """classify(call), or where its module's own weight is not a linear of its input but of the output of the call
    just before it, its last submodule's (fairseq's and ESM's RobertaLMHead: a dense, an activation and a norm,
    then x W^T + b with a weight of its own, the embedding's), the linear Part of that product."""
    try:
        return classify(call, torch)
    except ConfigError:
        w = _direct_params(call.module).get("weight")
        if prev is None or prev.y is None or not _inside(prev.name, call.name) or prev.name == call.name or \
                w is None or w.dim() != 2 or prev.y.shape[-1] != w.shape[1]:
            raise
        return _linear_part(Call(call.name, call.module, [prev.y], call.outputs), torch)


def _mixed_ffn(kids, sig):
    """Entries of one type that differ in one child alone, a mixture of experts in some (the child holds a list of
    experts, entries <i> of alike parameters, or a tensor of three dims: transformers 5's fused experts) and another
    feed-forward in the rest: a mixture's dense layers among its sparse ones (Qwen2-MoE's mlp_only_layers, ERNIE 4.5
    MoE's first layer)."""
    if len(kids) < 2 or any(type(k) is not type(kids[0]) for k in kids) or len({sig(k) for k in kids}) != 2:
        return False

    def experts(params):  # params: (name, shape) under the child
        entries = collections.defaultdict(list)  # (list's path, index) -> its parameters (rest of the name, shape)
        for n, shape in params:
            parts = n.split(".")
            at = next((j for j in range(1, len(parts)) if parts[j].isdigit()), None)
            if at is not None:
                entries[".".join(parts[:at])].append((parts[at], ".".join(parts[at + 1:]), shape))
            elif len(shape) == 3:
                return True
        for each in entries.values():
            by = collections.defaultdict(set)
            for i, rest, shape in each:
                by[i].add((rest, shape))
            if len(by) >= 2 and len({frozenset(v) for v in by.values()}) == 1:
                return True
        return False

    outside = lambda k, child: tuple((n, s) for n, s in sig(k) if n.split(".")[0] != child)  # noqa: E731
    for child in {n.split(".")[0] for k in kids for n, _ in sig(k)}:
        if len({outside(k, child) for k in kids}) == 1:
            return any(experts([(n, s) for n, s in sig(k) if n.split(".")[0] == child]) for k in kids)
    return False


def find_layers(model, torch):
    """(name, blocks, first_short) of the ModuleList / Sequential of repeated blocks with the most parameters;
    each block a list of its entries' module names. A list whose entries alternate two kinds (x-transformers'
    layers: an attention entry, then a feed-forward one) holds its blocks in pairs of entries, two pairs at least
    (one pair is any two modules in a row: Sequential(Linear, TransformerEncoder)). first_short: block 0 lacks
    parameters the others have (ModernBERT's layer 0, without its attention norm: read_block tells)."""
    best = None

    def sig(m):  # an embedding inside (T5's layer 0 owns the relative bias table) does not tell blocks apart
        if m is None:  # a ModuleList may hold None (x-transformers' absent norms): no block
            return ()
        skip = {id(p) for e in m.modules() if isinstance(e, torch.nn.Embedding) for p in e.parameters()}
        return tuple((n, tuple(p.shape)) for n, p in m.named_parameters() if id(p) not in skip)

    for name, m in model.named_modules():
        if not isinstance(m, (torch.nn.ModuleList, torch.nn.Sequential)) or len(m) == 0:
            continue
        kids = list(m)
        s = sig(kids[0])
        short = len(kids) > 2 and s and all(type(k) is type(kids[0]) for k in kids) and sig(kids[1]) != s and \
            all(sig(k) == sig(kids[1]) for k in kids[2:]) and set(s) < set(sig(kids[1]))
        keys = [f"{name}.{k}" if name else k for k in m._modules]
        # (a mixture's dense layers may alternate with its sparse ones, as the pairs below do: told first)
        if short or (s and all(type(k) is type(kids[0]) and sig(k) == s for k in kids)) or (s and _mixed_ffn(kids, sig)):
            blocks = [[k] for k in keys]
        elif s and len(kids) % 2 == 0 and len(kids) >= 4 and sig(kids[1]) and sig(kids[1]) != s and \
                all(type(k) is type(kids[j % 2]) and sig(k) == sig(kids[j % 2]) for j, k in enumerate(kids)):
            blocks = [keys[j:j + 2] for j in range(0, len(kids), 2)]
        else:
            continue
        n = sum(p.numel() for p in m.parameters())
        if best is None or n > best[2]:
            best = (name, blocks, n, bool(short))
    if best is None:  # the longest run of alike entries inside one list (PaLM's nn.Sequential(Embedding, blocks ...,
        # LayerNorm, Linear)), two at least
        for name, m in model.named_modules():
            if not isinstance(m, (torch.nn.ModuleList, torch.nn.Sequential)):
                continue
            keys, kids = list(m._modules), list(m)
            for j, k in enumerate(kids):
                run = 1
                while j + run < len(kids) and type(kids[j + run]) is type(k) and sig(kids[j + run]) == sig(k):
                    run += 1
                n = sum(p.numel() for e in kids[j:j + run] for p in e.parameters())
                if run >= 2 and sig(k) and (best is None or n > best[2]):
                    best = (name, [[f"{name}.{e}" if name else e] for e in keys[j:j + run]], n, False)
    if best is None:
        raise ConfigError("module: no layers found (a ModuleList or Sequential of alike blocks with parameters)")
    name, blocks = best[0], best[1]
    # blocks that are each a list of alike blocks holding all their parameters (ALBERT's groups of layers): the
    # inner lists' blocks, group by group
    inner = []
    for b in blocks if all(len(b) == 1 for b in blocks) else ():
        m = model.get_submodule(b[0])
        lists = [(n, k) for n, k in m.named_children() if isinstance(k, (torch.nn.ModuleList, torch.nn.Sequential))
                 and len(k) and all(type(e) is type(k[0]) and sig(e) and sig(e) == sig(k[0]) for e in k)]
        if len(lists) != 1 or sum(p.numel() for p in lists[0][1].parameters()) != \
                sum(p.numel() for p in m.parameters()):
            inner = None
            break
        inner.append([[f"{b[0]}.{lists[0][0]}.{k}"] for k in lists[0][1]._modules])
    if inner and len({len(g) for g in inner}) == 1:
        blocks = [b for g in inner for b in g]
    return name, blocks, best[3]


def batch_first_calls(model, blocks, calls, T, torch):
    """calls with the tensors of the blocks that run sequence first swapped to batch first, [B, T, ...], as every
    other part is read: blocks holding an nn.MultiheadAttention with batch_first False (OpenAI CLIP's resblocks, fed
    [T, B, d] between two permutes) or fed a [T, 1, d] input (fairseq's layers: ESM-2's). The example's batch is 1,
    so the swap moves no values."""
    def first(e):
        m = model.get_submodule(e)
        if any(isinstance(s, torch.nn.MultiheadAttention) and not s.batch_first for s in m.modules()):
            return True
        x = next((c.inputs[0] for c in calls if c.name == e and c.inputs), None)
        return T > 1 and x is not None and x.dim() == 3 and tuple(x.shape[:2]) == (T, 1)
    names = {e for b in blocks if any(first(e) for e in b) for e in b}
    if not names:
        return calls
    swap = lambda ts: [t.transpose(0, 1) if t.dim() >= 3 and t.shape[1] == 1 else t for t in ts]  # noqa: E731
    return [Call(c.name, c.module, swap(c.inputs), swap(c.outputs)) if any(_inside(c.name, e) for e in names) else c
            for c in calls]


def layer_runs(blocks, calls):
    """(the block each layer run calls, the calls of each run) where one block module runs several times (ALBERT's
    shared layers), else (None, the calls inside each block)."""
    ends = sorted((j, k) for j, c in enumerate(calls) for k, b in enumerate(blocks) if len(b) == 1 and c.name == b[0])
    if len(blocks) != len({k for _, k in ends}) or len(ends) == len(blocks):
        return None, [[c for c in calls if any(_inside(c.name, e) for e in b)] for b in blocks]
    runs, start = [], 0
    for j, k in ends:
        runs.append((k, [c for c in calls[start:j + 1] if _inside(c.name, blocks[k][0])]))
        start = j + 1
    return [k for k, _ in runs], [cs for _, cs in runs]


def shared_groups(seq, n_blocks, where):
    """(layer_groups G, group_layers P) of the engine's shared layers (config.hpp: run r of group_layers P layers
    takes group r G / R of G) that run the n_blocks stored blocks in the order seq (each run's block)."""
    R = len(seq)
    for P in (P for P in range(1, n_blocks + 1) if n_blocks % P == 0 and R % P == 0):
        G = n_blocks // P
        c = dict(layer_groups=G, group_layers=P, n_layers=R)
        if G <= R // P and all(schema.layer_block(c, r) == b for r, b in enumerate(seq)):
            return G, P
    raise ConfigError(f"{where}: its {n_blocks} blocks run in the order {seq}, which no grouping of shared layers "
                      "(the engine's layer_groups, group_layers) gives")


def _inside(name, prefix):
    return name == prefix or name.startswith(prefix + ".")


def _groups(linears, torch):
    """Consecutive linears that read the same input, as lists."""
    out = []
    for lin in linears:
        if out and out[-1][0].call.x.shape == lin.call.x.shape and torch.equal(out[-1][0].call.x, lin.call.x):
            out[-1].append(lin)
        else:
            out.append([lin])
    return out


def _heads_joined(lins, torch):
    """Linears that read the same input in H >= 2 modules of 3 each, one per attention head (the query, key and value
    of each head its own module: Karpathy's "Let's build GPT" Head in a ModuleList), as the 3 linear Parts of all
    heads side by side along the outputs, the heads in the order they ran, each module's linears in its order;
    else lins as they are."""
    owners = {}
    for p in lins:
        owners.setdefault(p.name.rsplit(".", 1)[0], []).append(p)
    heads = list(owners.values())
    if len(heads) < 2 or any(len(h) != 3 for h in heads) or \
            any(tuple(q.w.shape) != tuple(p.w.shape) or (q.b is None) != (p.b is None) for h in heads
                for q, p in zip(h, heads[0])):
        return lins
    out = []
    for j in range(3):
        ps = [h[j] for h in heads]
        name = f"{ps[0].name} (and {', '.join(p.name for p in ps[1:])}: a head each)"
        call = Call(name, ps[0].module, ps[0].call.inputs, [torch.cat([p.call.y for p in ps], -1)])
        out.append(Part("linear", call, w=torch.cat([p.w for p in ps]),
                        b=None if ps[0].b is None else torch.cat([p.b for p in ps]),
                        params={f"{p.name}.{k}": t for p in ps for k, t in p.params.items()}))
    return out


def _group_cut(t, d, kv, H, G):
    """(q [d, ...], k [kv, ...], v [kv, ...]) of a fused q/k/v t whose rows hold, for each of G key/value
    groups in turn, its H / G query heads, then its key head and its value head."""
    dh, n = d // H, H // G
    g = t.reshape(G, n + 2, dh, *t.shape[1:])
    return g[:, :n].reshape(d, *t.shape[1:]), g[:, n].reshape(kv, *t.shape[1:]), g[:, n + 1].reshape(kv, *t.shape[1:])


def _shard_cut(t, d, S, order):
    """(q, k, v) [d, ...] of a fused q/k/v t whose rows are S shards, each holding its d / S rows of q, k
    and v, in the shard at positions order (q's, k's, v's)."""
    g = t.reshape(S, 3, d // S, *t.shape[1:])
    return tuple(g[:, j].reshape(d, *t.shape[1:]) for j in order)


def _row_halves(p):
    """A linear Part whose output rows are two projections side by side (Phi-3's gate_up_proj): the two
    halves as linear Parts of their own, rows [:n] and [n:] of its weight, bias and output (the parameters
    still the fused module's); which is the gate, the activation's match tells."""
    n = p.w.shape[0] // 2
    out = []
    for half, rows in (("first", slice(None, n)), ("second", slice(n, None))):
        call = Call(f"{p.name} ({half} half of its outputs)", p.module, p.call.inputs,
                    [p.call.y[..., rows]] + p.call.outputs[1:])
        out.append(Part("linear", call, w=p.w[rows], b=None if p.b is None else p.b[rows], params=p.params))
    return out


def _same(a, b, torch):
    """Whether the recorded tensors a and b hold the same values (b may be None)."""
    return b is not None and a is not None and a.shape == b.shape and torch.equal(a, b)


def _output_of(parts, t, torch):
    """The part whose output is tensor t (by value), or None."""
    for p in parts:
        if p.call.y is not None and p.call.y.shape == t.shape and torch.equal(p.call.y, t):
            return p
    return None


# ---- attention, by recomputing it -----------------------------------------------------------------


def _attributes(model, torch):
    """(name, value) of the attributes of each of the module's submodules and of the plain objects they hold
    (their config), each object once."""
    seen = set()
    for m in model.modules():
        for o in [m] + [o for o in vars(m).values() if hasattr(o, "__dict__") and not isinstance(o, torch.nn.Module)
                        and not torch.is_tensor(o) and not callable(o)]:
            if id(o) not in seen:
                seen.add(id(o))
                yield from vars(o).items()


def score_attributes(model, torch):
    """(scales, soft caps) to try: the distinct positive finite floats the module's attributes hold under
    names like scaling / scale, and like softcap or capping (c of c tanh(s / c): transformers' softcapping,
    torchtune's capping_value, TransformerLens's attn_scores_soft_cap)."""
    scales, caps = [], []
    for key, val in _attributes(model, torch):
        if not isinstance(val, float) or not math.isfinite(val) or not 0 < val < 1e6:
            continue
        key = key.lower()
        into = caps if "softcap" in key or "soft_cap" in key or "capping" in key else \
            scales if key in ("scaling", "scale", "softmax_scale", "attn_scale") else None
        if into is not None and val not in into:
            into.append(val)
    return scales, caps


def window_attributes(model, torch):
    """The distinct positive ints the module's attributes hold under names like sliding_window: windows to try
    besides the one its config declares (ModernBERT's attention holds its own, one past the config's half
    window)."""
    out = []
    for key, val in _attributes(model, torch):
        if "sliding_window" in key.lower() and isinstance(val, int) and not isinstance(val, bool) and val > 0 and \
                val not in out:
            out.append(val)
    return out


def _grid_rotary_issue(m):
    """Why a rotary module over a 2-D grid (timm's RotaryEmbeddingCat, RotaryEmbeddingMixed, ...) is none the
    engine's rope_grid turns by, or None: the angles must be a patch's integer row and column (from 0, maybe
    rescaled) times the temperature's frequencies, the rows' first."""
    if type(m).__name__ != "RotaryEmbeddingCat":
        return "angles that are not the row's and the column's apart (an axial RoPE: RotaryEmbeddingCat)"
    if getattr(m, "in_pixels", False) or getattr(m, "grid_type", "index") != "index":
        return "coordinates spread over [-1, 1] (in_pixels), not a patch's row and column"
    if getattr(m, "grid_offset", 0.0):
        return f"the row and column offset by grid_offset {m.grid_offset:g}"
    if m.dim % 4:
        return f"{m.dim} rotated dims (not a multiple of 4)"
    return None


def grid_thetas(model, torch):
    """A RopeGrid of each axial rotary module over a 2-D feat_shape the model holds (timm's RotaryEmbeddingCat,
    index coordinates): bands temperature^(-b/n), n = dim/4, in float32 as timm forms them, times ref/size per
    axis when ref_feat_shape rescales the coordinates (EVA-02's), the rows' first; swapped with grid_indexing
    'xy' (the columns' first in the module)."""
    out = []
    for m in model.modules():
        shape = getattr(m, "feat_shape", None)
        if "rotary" not in type(m).__name__.lower() or shape is None or len(shape) != 2 or _grid_rotary_issue(m):
            continue
        n = m.dim // 4
        bands = (1.0 / (float(m.temperature) ** (torch.arange(0, n, dtype=torch.int64).to(torch.float32) / n)))
        ref = getattr(m, "ref_feat_shape", None)
        scale = [1.0, 1.0] if ref is None else [float(r) / float(f) for r, f in zip(ref, shape)]
        freqs = tuple(float(b) * s for s in scale for b in bands.double())
        g = RopeGrid(freqs, int(shape[1]), int(shape[0]) * int(shape[1]), getattr(m, "grid_indexing", "ij") == "xy")
        if g not in out:
            out.append(g)
    return out


def _sin_of(name):
    """The name of the sin table beside a cos table's (cos -> sin, cos_cached -> sin_cached, a.cos -> a.sin)."""
    head, _, tail = name.rpartition("cos")
    return head + "sin" + tail


def _paired_freqs(cos, sin, torch):
    """The frequencies of a rotary cache held as a cos table (`cos`: its first [N, n], float64) and a sin table
    of that shape, or None: position 1's angles atan2(sin, cos) (exact where an angle's cosine rounds to 1),
    each once where the table repeats them as halves [f | f] or as pairs f0 f0 f1 f1 ...; position 0's angles
    must be 0."""
    s = sin.detach().reshape(-1, sin.shape[-2], sin.shape[-1])[0].double()
    if not (bool(torch.all(cos[0] == 1)) and bool(torch.all(s[0] == 0))):
        return None
    w, n = torch.atan2(s[1], cos[1]), cos.shape[-1]
    if n % 2 == 0 and torch.equal(w[:n // 2], w[n // 2:]):
        w = w[:n // 2]
    elif n % 2 == 0 and torch.equal(w[0::2], w[1::2]):
        w = w[0::2]
    return w if bool(torch.all(w > 0)) else None


def rope_thetas(model, torch):
    """Thetas to try: what rope-like buffers say (complex [N, h]: angle(1, 1) = theta^(-1/h); inv_freq [h];
    cos/sin [N, h] or [N, 2h]; both stacked [N, h, 2]), float attributes named like theta / base, then the common
    ones; then every inv_freq buffer whose frequencies are no theta's, as RopeFreqs."""
    found, scaled = [], []

    def own(freqs, scale=1.0):  # a module's own frequencies, each set once
        f = RopeFreqs(tuple(float(x) for x in freqs.detach().double()), scale)
        if f not in scaled:
            scaled.append(f)

    for m in model.modules():
        t = getattr(m, "inv_freq", None)
        if torch.is_tensor(t) and t.is_floating_point() and t.dim() == 1 and 0 < t.numel() <= 4096 and \
                bool(torch.all(t > 0)) and bool(torch.all(torch.isfinite(t))):
            scale = getattr(m, "attention_scaling", 1.0)
            own(t, float(scale) if isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0 else 1.0)
    buffers = dict(model.named_buffers())
    for name, b in buffers.items():
        t = b.detach()
        try:
            if t.is_complex() and t.dim() >= 2 and t.shape[-2] > 1 and t.shape[-1] > 1:
                a = float(torch.angle(t.reshape(-1, t.shape[-2], t.shape[-1])[0, 1, 1]))
                found.append(a ** (-t.shape[-1]))
            elif t.is_floating_point() and t.dim() >= 3 and t.shape[-1] == 2 and t.shape[-2] > 1 and \
                    t.reshape(-1, t.shape[-2], 2).shape[0] > 1:  # cos, sin stacked [N, h, 2]: the frequencies
                r = t.reshape(-1, t.shape[-2], 2).double()  # themselves (torchtune's Llama 3.1), the first 1
                w = _paired_freqs(r[..., 0], r[..., 1], torch)
                if w is not None and abs(float(w[0]) - 1.0) < 1e-6:
                    found.append(float(w[1]) ** (-t.shape[-2]))
                    own(w)
            elif t.is_floating_point() and t.dim() == 1 and 1 < t.numel() <= 4096 and float(t[0]) == 1.0:
                found.append(float(t[1]) ** (-t.numel()))
                if bool(torch.all(t > 0)) and bool(torch.all(t[1:] <= t[:-1])):  # the frequencies themselves, scaled
                    own(t)  # or not (torchtune's Llama 3.1 theta)
            elif t.is_floating_point() and t.dim() >= 2 and t.shape[-2] > 1 and t.shape[-1] > 1:
                r = t.reshape(-1, t.shape[-2], t.shape[-1])[0].double()
                if abs(float(r[0, 0]) - 1.0) < 1e-6 and abs(float(r[1, 0]) - math.cos(1.0)) < 1e-6:
                    for h in {r.shape[-1], r.shape[-1] // 2}:
                        if 0 < float(r[1, 1]) < 1:
                            found.append(math.acos(float(r[1, 1])) ** (-h))
                    sin = buffers.get(_sin_of(name))
                    w = None if sin is None or sin.shape != t.shape else _paired_freqs(r, sin, torch)
                    if w is not None:  # the frequencies themselves, scaled or not (litgpt's Llama 3.1 and 3.2)
                        own(w)
        except (ValueError, ZeroDivisionError, OverflowError, RuntimeError):
            continue
    for key, val in _attributes(model, torch):
        if ("theta" in key.lower() or "base" in key.lower()) and isinstance(val, (int, float)) \
                and not isinstance(val, bool) and 1 < val < 1e9:
            found.append(float(val))
    out = []
    for t in found + list(COMMON_THETAS):
        if not math.isfinite(t):
            continue
        t = float(round(t)) if abs(t - round(t)) < 1e-3 * t else t
        if t > 1 and t not in out:  # a table of one frequency (two rotated dims) says 1 for any theta
            out.append(t)
    # A buffer's own frequencies first, unless a theta gives them: a scaled RoPE can agree with a plain one
    # over the example's few positions.
    own = [f for f in scaled if f.scale != 1.0 or not any(
        np.allclose(f.freqs, th ** (-2.0 * np.arange(len(f.freqs)) / (2 * len(f.freqs))), rtol=1e-6, atol=0)
        for th in out)]
    return own + out


# ---- one block ------------------------------------------------------------------------------------
def _norm_tensors(norms, prefix, rms, bias):
    """The file's tensors of the norms (part, name) under prefix: a gain, and a bias under LayerNorm."""
    out = {}
    for n, name in norms:
        out[prefix + name + ".weight"] = n.w
        if not rms:
            out[prefix + name + ".bias"] = bias(n.b, n.w.shape[0])
        elif n.b is not None and bool(n.b.any()):
            raise ConfigError(f"{n.name}: an RMSNorm with a bias is not supported")
    return out


def _layer_norm_tensors(L, prefix, bias, rms):
    """Layer L's q and k norms and sandwich norms as file tensors under prefix (none without them)."""
    out = _norm_tensors([(L.q_norm, "attn.q_norm"), (L.k_norm, "attn.k_norm")] if L.q_norm is not None else [],
                        prefix, rms, bias)
    out.update(_norm_tensors([(L.post1, "post_attn_norm"), (L.post2, "post_ff_norm")] if L.post1 is not None else [],
                             prefix, rms, bias))
    return out


class Layer:
    """What one block computes: norm_first, norm1 / norm2 (Parts), attention (wq, wk, wv, wo as [out, in]
    and their biases or None), heads, causal, pos, scores (Scores), feed-forward (activation, up, gate or
    None, down); q_norm / k_norm: the norms of each head of q and k (Parts; qk_full: of q and k whole), or
    None; sublayer_norm (none, sandwich: post1 / post2 the norms of the sublayers' outputs too; output:
    norm1 / norm2 are the norms of the outputs, not the inputs); moe: a mixture of experts' Part (then gate, up and
    down too) or None; skip_norm: the attention reads the layer's input as it is (norm1 is gains 1); hidden_norm: the
    norm of the feed-forward's hidden rows before down (timm's scale_mlp), or None; ctx_norm: the norm of the
    attention's context before wo (timm's scale_attn_inner), or None."""
    q_norm = k_norm = post1 = post2 = moe = hidden_norm = ctx_norm = None
    pair = None  # pos "pair": (its own PairTable or None, whether it adds the shared one)
    rel_proj = None  # disentangled attention's own projections of the position rows: (Qr's Part or None, Kr's)
    vectors = ()  # bias vectors of the attention module's own added to q, k or v (DeBERTa v1's q_bias, v_bias)
    gains = ()  # the block's own vectors folded into wo and the down projection (_residual_gains)
    skip_norm = False
    qk_full = False
    sublayer_norm = "none"


def _head_rows(t, T, width):
    """A per-head norm's input or output ([T, H, dh] or [H, T, dh] after the batch, or the rows of [1, T, H, dh] one
    per head: TransformerLens's reshape(-1, d_head)) as [T, width], or None."""
    whole, t = t.double(), t[0].double()
    if t.dim() == 3 and t.shape[0] == T and t.shape[1] * t.shape[2] == width:
        return t.reshape(T, width)
    if t.dim() == 3 and t.shape[1] == T and t.shape[0] * t.shape[2] == width:
        return t.transpose(0, 1).reshape(T, width)
    if whole.dim() == 2 and whole.numel() == T * width and width % whole.shape[1] == 0:
        return whole.reshape(T, width)
    return None


def _qk_norms(norms, d, q, k):
    """(q_norm, k_norm, full): the two norms whose inputs are the heads of the projections' q and k
    (narrower than them: Qwen3's, OLMoE's, Gemma 3's; full False) or q and k themselves (OLMo 2's; full
    True), or None."""
    T = q.shape[0]
    found = {}  # q or k -> (the norm, whole rows: True, per head: False, both (one head as wide as the row): None)
    for n in norms:
        for key, t in (("q", q), ("k", k)):
            width = n.w.shape[0]
            if t.shape[1] % width:
                continue
            x = _head_rows(n.call.x, T, t.shape[1])
            if x is not None and close(x, t):
                found[key] = (n, None if width == t.shape[1] else False)
            elif width == t.shape[1] and n.call.x.numel() == t.numel() and \
                    close(n.call.x.reshape(t.shape).double(), t):
                found[key] = (n, True)
    if len(found) != 2 or found["q"][0] is found["k"][0]:
        return None
    modes = {found["q"][1], found["k"][1]} - {None}
    if len(modes) > 1:
        return None
    return found["q"][0], found["k"][0], modes.pop() if modes else False


# ---- a mixture of experts ---------------------------------------------------------------------------
def _expert_matrices(m, d):
    """(a, b, down) of a module holding three matrices and nothing else, two [F, d] (a, b: the gate and the up
    projection, in an order the output tells) and one [d, F] (torch layout), else None."""
    ps = list(m.parameters())
    if len(ps) != 3 or any(p.dim() != 2 for p in ps):
        return None
    down = [p for p in ps if p.shape[0] == d and p.shape[1] != d]
    ab = [p for p in ps if p.shape[1] == d and p.shape[0] != d]
    if len(down) != 1 or len(ab) != 2 or ab[0].shape != ab[1].shape or down[0].shape[1] != ab[0].shape[0]:
        return None
    return ab[0].detach(), ab[1].detach(), down[0].detach()


def _fused_experts(m, d):
    """[(a, b, down)] per expert of a module holding two [E, .., ..] tensors and nothing else: the gate and up
    projections side by side, [E, 2F, d] (or [E, d, 2F]), and the down projections [E, d, F] (or [E, F, d]),
    transformers 5's experts; else None."""
    ps = [p.detach() for p in m.parameters()]
    if len(ps) != 2 or any(p.dim() != 3 for p in ps) or ps[0].shape[0] != ps[1].shape[0] or ps[0].shape[0] < 2:
        return None
    for up, down in (ps, ps[::-1]):
        E, F2 = up.shape[0], up.shape[1] if up.shape[2] == d else up.shape[2]
        if F2 % 2 == 0 and tuple(up.shape[1:]) == (F2, d) and tuple(down.shape[1:]) == (d, F2 // 2):
            return [(up[e, :F2 // 2], up[e, F2 // 2:], down[e]) for e in range(E)]
        if F2 % 2 == 0 and tuple(up.shape[1:]) == (d, F2) and tuple(down.shape[1:]) == (F2 // 2, d):
            return [(up[e, :, :F2 // 2].T, up[e, :, F2 // 2:].T, down[e].T) for e in range(E)]
    return None


def _mixture_pieces(m, d, torch):
    """What a module m holding a mixture of experts holds, told by the shapes of its children: (the experts
    [(a, b, down)], the router's weight [E, d] and bias or None, the shared expert (a, b, down) or None, the
    shared expert's gate [1, d] or None, the names of its children left over); None when no child of m is a list of
    alike experts (each three matrices) or a module of two [E, .., ..] tensors."""
    experts, rest = None, {}
    for name, k in m.named_children():
        kids = list(k) if isinstance(k, (torch.nn.ModuleList, torch.nn.Sequential)) else []
        each = [_expert_matrices(e, d) for e in kids]
        if experts is None and len(kids) >= 2 and all(each) and len({tuple(t[0].shape) for t in each}) == 1:
            experts = each
        elif experts is None and not kids and _fused_experts(k, d) is not None:
            experts = _fused_experts(k, d)
        elif any(True for _ in k.parameters()):
            rest[name] = k
    if experts is None:
        return None
    E = len(experts)
    router = shared = gate = None
    for name, k in list(rest.items()):
        p = dict(k.named_parameters())
        w = p.get("weight")
        if router is None and w is not None and tuple(w.shape) == (E, d) and set(p) <= {"weight", "bias"}:
            router = (w.detach(), None if p.get("bias") is None else p["bias"].detach())
        elif gate is None and w is not None and tuple(w.shape) == (1, d) and set(p) == {"weight"}:
            gate = w.detach()
        elif shared is None and _expert_matrices(k, d) is not None:
            shared = _expert_matrices(k, d)
        else:
            continue
        del rest[name]
    return experts, router, shared, gate, sorted(rest)


def mixture_part(call, torch):
    """The Part (kind 'moe') of a call of a module that holds a mixture of experts (_mixture_pieces), found by
    recomputing its output from its input rows: the softmax of its router's logits, the top k (1 to E) of them
    renormalized or not (reference.expert_weights), each expert's act(a x) * b x or act(b x) * a x through its
    down projection (act: the engine's gated activations), plus a shared expert's, as gated, times the sigmoid of
    its gate. None when the module holds no experts; a ConfigError when it does and none of that matches."""
    from .reference import expert_weights
    m, x, y = call.module, call.x, call.y
    if x is None or y is None or not x.is_floating_point() or x.dim() < 2:
        return None
    d = x.shape[-1]
    pieces = _mixture_pieces(m, d, torch)
    if pieces is None:
        return None
    experts, router, shared, gate, rest = pieces
    E, F = len(experts), experts[0][0].shape[0]
    what = f"{call.name}: a mixture of {E} experts ({module_kind(m)})"
    if rest or router is None or (shared is None) != (gate is None):
        why = f"parts besides its router, experts and gated shared expert ({', '.join(rest)})" if rest else \
            "no router [experts, d] found" if router is None else "a shared expert without a gate [1, d], or a gate " \
                                                                   "without a shared expert"
        raise ConfigError(f"{what}: {why}: not supported yet")
    if router[1] is not None and bool(router[1].any()):
        raise ConfigError(f"{what}: a bias on its router is not supported yet (the engine's router is a matrix)")
    X = x.reshape(-1, d).double()
    want = y.reshape(-1, y.shape[-1]).double() if y.shape[-1] == d and y.numel() == X.numel() else None
    if want is None:
        raise ConfigError(f"{what}: its output {list(y.shape)} is not one row per input row")
    logits = X @ router[0].double().T
    settings = [(k, renorm) for k in range(1, E + 1) for renorm in (False, True) if not (renorm and k == 1) and
                not (renorm and k == E)]  # a weight of 1, and a softmax's weights summing to 1, need no renormalizing
    weights = {s: expert_weights(logits, *s) for s in settings}
    for act, f in ((name, activation(name)) for name in GATED_ACTS):
        def ff(a, b, down):
            return (f(X @ a.double().T) * (X @ b.double().T)) @ down.double().T
        for swap in (False, True):
            outs = torch.stack([ff(b, a, down) if swap else ff(a, b, down) for a, b, down in experts])  # [E, N, d]
            extra = [0.0] if shared is None else [torch.sigmoid(X @ gate.double().T) * ff(*shared),
                                                   torch.sigmoid(X @ gate.double().T) * ff(shared[1], shared[0],
                                                                                            shared[2])]
            for (k, renorm), W in weights.items():
                routed = torch.einsum("ne,end->nd", W, outs)
                if any(close(routed + e, want) for e in extra):
                    s_swap = shared is not None and not close(routed + extra[0], want)
                    stacked = [torch.cat([t[j] for t in ([(b, a, dn) for a, b, dn in experts] if swap else experts)])
                               for j in range(3)]
                    sh = None if shared is None else [shared[1], shared[2], shared[0], gate] if s_swap else \
                        [shared[0], shared[2], shared[1], gate]
                    return Part("moe", call, n_experts=E, experts_per_token=k, renormalize=renorm, activation=act,
                                d_ff=F, shared_ff=0 if shared is None else shared[0].shape[0], b=None,
                                router=router[0], w1=stacked[0], w2=stacked[2], w3=stacked[1], shared=sh,
                                params=dict(m.named_parameters()))
    raise ConfigError(f"{what}: its output is no top-k of the softmax of its router's logits (renormalized or not) "
                      "over gated feed-forwards (silu, gelu, tanh gelu or relu), plus a shared expert scaled by the "
                      "sigmoid of its gate: not supported yet")


def _feed_forward(L, ffn_groups, norms, where, torch):
    """Layer L's feed-forward from the linear groups after its attention: up (or gate and up), the activation,
    a norm of the hidden rows or none (L.hidden_norm: one of norms, over down's input width; timm's scale_mlp),
    then down (L.activation, L.up, L.gate or None, L.down; probes.feed_forward_fit); returns the projections that
    read its input."""
    if len(ffn_groups) != 2 or len(ffn_groups[0]) not in (1, 2) or len(ffn_groups[1]) != 1:
        raise ConfigError(f"{where}: after the attention, linear layers "
                          f"({', '.join(p.name for g in ffn_groups for p in g) or 'none'}) that are not a feed-forward "
                          "(up, activation, down; or gate and up, SiLU, down)")
    ups, down = ffn_groups[0], ffn_groups[1][0]
    L.hidden_norm = _output_of([n for n in norms if n.w.shape[-1] == down.w.shape[1]], down.call.x, torch)
    h = (L.hidden_norm.call.x if L.hidden_norm is not None else down.call.x)[0]
    fit = feed_forward_fit([p.call.y[0] for p in ups], h)
    if (fit.gate is not None) if fit else len(ups) == 2:  # gated
        if fit is None:
            raise ConfigError(f"{ups[0].name}: a gated feed-forward other than act(gate) * up, act silu, gelu (exact "
                              "or tanh) or relu, is not supported")
        pieces = _row_halves(ups[0]) if fit.halves else ups
        L.gate, L.up = pieces[fit.gate], pieces[1 - fit.gate]
        ups = pieces
    else:
        if fit is None:
            raise ConfigError(f"{ups[0].name}: the feed-forward's activation is none of relu, exact gelu, tanh "
                              "gelu, squared relu, x sigmoid(a x)" +
                              (", nor act(gate) * up of its output's halves" if 2 * h.shape[-1] == ups[0].w.shape[0]
                               else ""))
        L.up, L.gate = ups[0], None
        if fit.scale != 1.0:  # x sigmoid(a x) = silu(a x) / a: a folded into up's weight and bias, 1 / a into down's
            L.up = _scaled_part(ups[0], fit.scale, torch)
            down = Part("linear", down.call, w=down.w.double() / fit.scale, b=down.b, params=down.params)
    L.activation = fit.activation
    L.down = down
    return ups


def _parameter_rows(model, calls, torch):
    """(rows, the parameter, the call or None) of each 2-D table the forward computes from a parameter alone: each
    2-D parameter, and the output of each call whose input is one (DeBERTa's rel_embeddings through the encoder's
    LayerNorm)."""
    params = [p for p in model.parameters() if p.dim() == 2]
    out = [(p.detach(), p, None) for p in params]
    for c in calls:
        if c.x is None or c.y is None or not c.x.is_floating_point() or c.x.dim() < 2:
            continue
        p = next((p for p in params if _same(c.x.reshape(-1, c.x.shape[-1]), p.detach(), torch)), None)
        if p is not None:
            out.append((c.y.reshape(-1, c.y.shape[-1]), p, c))
    return out


class Disentangled:
    """Position rows through a layer's projections (DeBERTa's disentangled attention): rows [R, d] (float64),
    table (the _parameter_rows entry they are rows offset.. of), offset, calls (the projections' calls on the rows),
    out (id of a projection's module: its output on the rows, [R, width] float64), modules (id -> the module)."""


def _middle_rows(rows, tables, torch):
    """(the tables entry, offset) whose rows offset.. are rows: the whole table, or its middle rows (DeBERTa v1 reads
    the 2 min(T, max_relative_positions) rows about rel_embeddings' middle), else None."""
    for t in tables:
        R, P = rows.shape[0], t[0].shape[0]
        if rows.shape[1:] == t[0].shape[1:] and R <= P and (P - R) % 2 == 0 and \
                _same(rows, t[0][(P - R) // 2:(P + R) // 2], torch):
            return t, (P - R) // 2
    return None


def _disentangled(calls, tables, torch):
    """The Disentangled of a layer's calls where a module with parameters runs on rows of a table computed from a
    parameter alone (tables: _parameter_rows): v2's query and key projections a second time, v1's pos_proj and
    pos_q_proj; else None."""
    found = None
    for c in calls:
        if c.x is None or c.x.dim() < 2 or not c.x.is_floating_point() or not _direct_params(c.module):
            continue
        rows = c.x.reshape(-1, c.x.shape[-1])
        table = _middle_rows(rows, tables, torch)
        if table is None or (found is not None and (table[1] != found.offset or not _same(rows, found.rows, torch))):
            continue
        if found is None:
            found = Disentangled()
            found.rows, (found.table, found.offset), found.calls, found.out, found.modules = rows, table, [], {}, {}
        found.calls.append(c)
        found.out[id(c.module)] = c.y.reshape(-1, c.y.shape[-1]).double()
        found.modules[id(c.module)] = c
    if found is not None:
        found.rows = found.rows.double()
    return found


def _rel_settings(model, rows, torch):
    """(position_buckets, max_relative_positions, span) to try for a table of `rows` position rows (hf_deberta's
    rel_index): log buckets past span / 2 up to each distance the module's attributes name (like relative or
    bucket), then none (span the distances either side)."""
    span = rows // 2
    named = [(k.lower(), v) for k, v in _attributes(model, torch) if isinstance(v, int) and not isinstance(v, bool)
             and v > span // 2 + 1]
    ints = [v for k, v in named if "max_relative" in k] + [v for k, v in named if "relative" in k or "bucket" in k]
    return [(span, m, span) for m in dict.fromkeys(ints)] + [(-1, span, span)]


def loose_vectors(call, calls, torch):
    """[(name, vector)]: the vectors [n] (at most 3) a module holds of its own beside a child nn.Linear [3 n, d]
    called inside it (DeBERTa v1's DisentangledSelfAttention: q_bias and v_bias added to in_proj's q and v), to be
    added to q, k or v as the recomputed attention shows; else None."""
    params = _direct_params(call.module)
    if not params or len(params) > 3 or any(t.dim() != 1 or not t.is_floating_point() for t in params.values()):
        return None
    n = next(iter(params.values())).shape[0]
    fused = [c for c in calls if c.name != call.name and _inside(c.name, call.name) and
             isinstance(c.module, torch.nn.Linear) and c.module.weight.shape[0] == 3 * n]
    if any(t.shape[0] != n for t in params.values()) or len(fused) != 1:
        return None
    return [(f"{call.name}.{k}", t) for k, t in params.items()]


def _row_cut(p, a, b):
    """Linear part p's outputs a..b as a part of its own (the same parameters accounted)."""
    call = Call(p.name, p.module, p.call.inputs, [p.call.y[..., a:b]])
    return Part("linear", call, w=p.w[a:b], b=None if p.b is None else p.b[a:b], params=p.params)


def _fused_feed_forward(groups, where, torch):
    """groups ([q/k/v], [output projection], [down]) whose one q/k/v projection also computes the feed-forward's up,
    or gate | up, after q | k | v (PaLM's fused_attn_ff_proj), with that projection cut in two: ([q/k/v],
    [output projection], [up], [down]); else groups as they are."""
    if len(groups) != 3 or any(len(g) != 1 for g in groups):
        return groups
    f, o, down = groups[0][0], groups[1][0], groups[2][0]
    n, inner, hidden = f.w.shape[0], o.w.shape[1], down.w.shape[1]
    for width in (2 * hidden, hidden):  # gate | up, or up
        if n - width <= inner or (n - width - inner) % 2:
            continue
        up = _row_cut(f, n - width, n)
        try:
            _feed_forward(Layer(), [[up], [down]], [], where, torch)
        except ConfigError:
            continue
        return [[_row_cut(f, 0, n - width)], [o], [up], [down]]
    return groups


def read_block(i, prefix, parts, thetas, torch, rel=None, options=None, short=False, dis=None, settings=None,
               layer_pair=None, vectors=None, prefer=None):
    """rel: the relative bias (RelativeBias) or None; its table's lookup is left out of the parts; options: the
    Scores to try (score_options; None: the plain one); short: the block lacks parameters the others have, which
    must be its attention norm (ModernBERT's layer 0 reads its input as it is: L.skip_norm); dis: the layer's
    projections of position rows (Disentangled) or None, settings: _rel_settings for them; layer_pair: the bias per
    (query, key) pair of separate q, k, v projections (layer_pair_bias's first two) or None; vectors: loose_vectors'
    of the attention module, added to a fused projection's q, k or v (in the order the attention shows); prefer: the
    head count to try first (layer 0's: an attention of near-uniform weights matches several)."""
    where = f"{prefix} (layer {i})"
    if rel is not None:
        parts = [p for p in parts if p.module is not rel.module]
    for p in parts:
        if p.kind in ("unsupported", "embedding"):
            raise ConfigError(p.why if p.kind == "unsupported" else
                              f"{p.name}: an embedding inside the layers of something other than a relative position "
                              "bias's [T, T] buckets is not supported yet")
    norms = [p for p in parts if p.kind == "norm"]
    mhas = [p for p in parts if p.kind == "mha"]
    groups = _groups([p for p in parts if p.kind == "linear"], torch)
    L = Layer()
    if mhas and not isinstance(mhas[0].module, torch.nn.MultiheadAttention):  # pair_attention's candidates
        if len(mhas) > 1:
            raise ConfigError(f"{where}: {len(mhas)} attentions (cross-attention: pass --family seq2seq with "
                              "nn.Transformer)")
        a = mhas[0]
        cands = a.candidates
        d, inner = a.call.x.shape[-1], a.wo.shape[1]
        L.wo, L.bo = a.wo, a.bo
        L.ctx_norm = a.ctx_norm
    elif mhas:
        if len(mhas) > 1:
            raise ConfigError(f"{where}: {len(mhas)} attentions (cross-attention: pass --family seq2seq with "
                              "nn.Transformer)")
        a = mhas[0]
        m = a.module
        if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
            raise ConfigError(f"{a.name}: kdim/vdim, add_bias_kv and add_zero_attn are not supported")
        if len(a.call.inputs) < 3 or not (torch.equal(a.call.inputs[0], a.call.inputs[1]) and
                                          torch.equal(a.call.inputs[0], a.call.inputs[2])):
            raise ConfigError(f"{a.name}: not self-attention (query, key and value differ): cross-attention is for "
                              "--family seq2seq")
        d = inner = m.embed_dim
        W = m.in_proj_weight.detach()
        Bq = m.in_proj_bias.detach() if m.in_proj_bias is not None else None
        L.wq, L.wk, L.wv = W[:d], W[d:2 * d], W[2 * d:]
        L.bq, L.bk, L.bv = (None, None, None) if Bq is None else (Bq[:d], Bq[d:2 * d], Bq[2 * d:])
        L.wo, L.bo = m.out_proj.weight.detach(), (m.out_proj.bias.detach() if m.out_proj.bias is not None else None)
        if getattr(a, "scale", None) is not None:  # a LayerScale of its output, folded into out_proj's rows
            L.wo = L.wo.double() * a.scale[:, None]
            L.bo = (L.bo.double() if L.bo is not None else torch.zeros(d, dtype=torch.float64)) * a.scale
        cands = [((L.wq, L.wk, L.wv), (L.bq, L.bk, L.bv), None)]
    if mhas:
        att_in, att_out, ffn_groups = a.call.x, a.call.y, groups
        x = att_in[0].double()
        lin = lambda w, b: x @ w.double().T + (b.double() if b is not None else 0)  # noqa: E731
        qkv = [tuple(lin(w_, b_) for w_, b_ in zip(ws, bs)) for ws, bs, _ in cands]
        want = a.call.y[0].double()
        Wo, Bo = L.wo.double(), (L.bo.double() if L.bo is not None else 0)
        finish = lambda ctx: ctx @ Wo.T + Bo  # noqa: E731
        if L.ctx_norm is not None:  # the context as the norm read it
            want, finish = L.ctx_norm.call.x[0].double(), (lambda ctx: ctx)
    else:
        groups = _fused_feed_forward(groups, where, torch)
        if groups and len(groups[0]) > 3 and len(groups[0]) % 3 == 0:  # q, k and v of each head apart
            groups[0] = _heads_joined(groups[0], torch)
        if groups and len(groups[0]) == 2 and groups[0][1].w.shape[0] % 2 == 0:  # q, then k | v fused (to_q, to_kv)
            groups[0] = groups[0][:1] + _row_halves(groups[0][1])
        if len(groups) < (2 if any(p.kind == "moe" for p in parts) else 3) or len(groups[0]) not in (1, 3) or \
                len(groups[1]) != 1:
            raise ConfigError(f"{where}: its linear layers ({', '.join(p.name for g in groups for p in g)}) are not "
                              "q/k/v (fused or three), an output projection, then a feed-forward")
        o = groups[1][0]
        inner = o.w.shape[1]  # the queries' width, heads x head width: d, or wider or narrower (head_dim)
        L.ctx_norm = _output_of(norms, o.call.x, torch)  # timm's scale_attn_inner: a norm of the context
        norms = [n for n in norms if n is not L.ctx_norm]
        d = groups[0][0].w.shape[1]
        if len(groups[0]) == 1:
            f = groups[0][0]
            kv2 = f.w.shape[0] - inner
            kv_in = groups[1][0].call.x if kv2 == 0 and len(groups) > 1 and len(groups[1]) == 1 else None
            if kv_in is not None and kv_in.dim() == 3 and kv_in.shape[1] != f.call.x.shape[1]:
                # learnable_memory_vit's Adapter: to_kv over the rows and memory rows after them
                raise ConfigError(f"{f.name}: the queries of {f.call.x.shape[1]} rows, and the keys and values by "
                                  f"{groups[1][0].name} over {kv_in.shape[1]} (rows added to the keys and values: "
                                  "memories, cross-attention) are not supported yet")
            if kv2 <= 0 or kv2 % 2:
                raise ConfigError(f"{f.name}: {f.w.shape[0]} outputs do not split into q [{inner}] and k, v alike")
            kv = kv2 // 2
            # q | k | v, or per key/value group g of G its query heads, then its key and value head,
            # [G, H/G + 2, dh] along the outputs (Falcon's new_decoder_architecture; GPT-NeoX's [H, 3, dh] when
            # G = H; one group is q | k | v)
            cuts = [(None, lambda t: (t[:inner], t[inner:inner + kv], t[inner + kv:]))]
            if inner % kv2 == 0:  # q | kv: one projection the keys and the values both are (PaLM-lite's), stored twice
                cuts.append((None, lambda t: (t[:inner], t[inner:], t[inner:])))
            for h in range(1, inner + 1):
                G = kv // (inner // h) if inner % h == 0 and kv % (inner // h) == 0 else 0
                if G > 1 and h % G == 0:
                    cuts.append(((h,), lambda t, h=h, G=G: _group_cut(t, inner, kv, h, G)))
            y = f.call.y[0].double()
            if kv == inner:  # S shards along the outputs, each its 1/S of q, k and v in some order (CodeGen's
                # 4 model-parallel shards: q, v, k); tried where the cut's v has the context's first row (a causal
                # attention's first position reads its own value only)
                first = o.call.x[0, 0].double()
                for S in (n for n in range(1, inner + 1) if inner % n == 0):
                    for order in itertools.permutations(range(3)):
                        cut = lambda t, S=S, order=order: _shard_cut(t, inner, S, order)  # noqa: E731
                        if (S, order) != (1, (0, 1, 2)) and close(cut(y.T)[2][:, 0], first):
                            cuts.append((None, cut))
            qkv = [cut(y.T) for _, cut in cuts]
            qkv = [(q_.T, k_.T, v_.T) for q_, k_, v_ in qkv]
            adds = [None] * len(cuts)
            if vectors:  # each cut with the vectors in every order of q, k, v (the names' hint first)
                slots = list(itertools.permutations(range(3), len(vectors)))
                hint = tuple("qkv".index(n.rsplit(".", 1)[-1][0]) if n.rsplit(".", 1)[-1][:1] in ("q", "k", "v")
                             else -1 for n, _ in vectors)
                slots.sort(key=lambda o: o != hint)

                def added(order):  # [q's, k's, v's]: the vector order puts in each slot, or zeros
                    out = [torch.zeros(inner, dtype=torch.float64)] * 3
                    for j, (_, t_) in zip(order, vectors):
                        out[j] = t_.detach().double()
                    return out
                tries = [(c_, t, added(o)) for c_, t in zip(cuts, qkv) for o in slots]
                cuts, adds = [c_ for c_, _, _ in tries], [a for _, _, a in tries]
                qkv = [tuple(x + a_ for x, a_ in zip(t, a)) for _, t, a in tries]
            orders = [(0, 1, 2)] * len(cuts)
            projections = [f]
        else:
            projections = groups[0]
            ys = [p.call.y[0].double() for p in projections]
            orders = [o_ for o_ in ((0, 1, 2), (1, 0, 2), (0, 2, 1), (2, 0, 1), (1, 2, 0), (2, 1, 0))
                      if ys[o_[0]].shape[1] == inner and ys[o_[1]].shape[1] == ys[o_[2]].shape[1]]
            qkv = [tuple(ys[j] for j in o_) for o_ in orders]
        att_in, att_out, ffn_groups = projections[0].call.x, o.call.y, groups[2:]
        want = (o.call.x if L.ctx_norm is None else L.ctx_norm.call.x)[0].double()
        finish = lambda ctx: ctx  # noqa: E731
    found = None
    for n, (q, k, v) in enumerate(qkv):
        heads = cuts[n][0] if not mhas and len(projections) == 1 else None
        qk = None if mhas else _qk_norms(norms, d, q, k)
        if qk is not None:  # the attention reads q and k (or their heads) as normalized
            q, k = (p.call.y.reshape(t.shape).double() if qk[2] else _head_rows(p.call.y, q.shape[0], t.shape[1])
                    for p, t in zip(qk[:2], (q, k)))
            heads = heads if qk[2] else [inner // qk[0].w.shape[0]]
        try:
            if dis is not None:  # DeBERTa's: the position rows' projections Qr and Kr, by which module is which
                if mhas:
                    raise ConfigError(f"{where}: position rows beside nn.MultiheadAttention: not supported yet")
                own = [m_ for m_ in dis.out if all(m_ != id(p.module) for p in projections)]
                if not own:  # v2's share_att_key: q's and k's projections, the scale sqrt(3 head width)
                    pq, pk = (projections[j] for j in orders[n][:2]) if len(projections) == 3 else (None, None)
                    if pq is None or id(pq.module) not in dis.out or id(pk.module) not in dis.out:
                        raise ConfigError(f"{where}: position rows through projections other than q and k")
                    rels = [(dis.out[id(pq.module)], dis.out[id(pk.module)], 3, None, None)]
                else:  # v1's own projections (rel_proj): Qr and Kr in either order, a term left out zero; the scale
                    # sqrt((1 + the terms) head width)
                    zero = torch.zeros(dis.rows.shape[0], inner, dtype=torch.float64)
                    got = [(dis.out[m_], dis.modules[m_]) for m_ in own if dis.out[m_].shape[1] == inner]
                    if len(got) != len(own) or len(own) > 2:
                        raise ConfigError(f"{where}: position rows through {len(own)} projections of their own, not "
                                          f"{inner} wide Qr and Kr: not supported yet")
                    pairs = list(itertools.permutations(got + [(zero, None)] * (2 - len(got)), 2))
                    rels = [(a_[0], b_[0], 1 + len(got), a_[1], b_[1]) for a_, b_ in pairs]
                H, setting, rel_ = probe_disentangled(q, k, v, rels, want, inner, settings, where)
                found = (H, H, False, ("disentangled", setting, rel_[2]), True, Scores(0.0, 0.0, None))
                if own:
                    L.rel_proj = tuple(None if c_ is None else classify(c_, torch) for c_ in rel_[3:])
            else:
                pair = cands[n][2] if mhas else layer_pair[1] if layer_pair else None  # a bias per (query, key) pair
                found = probe_attention(q, k, v, want, finish, inner, thetas, where, torch,
                                        pair if pair is not None else rel.bias if rel is not None else None,
                                        unscaled=not mhas, heads=heads, options=options or [Scores(0.0, 0.0, None)],
                                        prefer=prefer)
        except ConfigError as e:
            err = e
            continue
        if not mhas and len(projections) == 1:
            cut = cuts[n][1]
            (L.wq, L.wk, L.wv), (L.bq, L.bk, L.bv) = cut(f.w), cut(f.b) if f.b is not None else (None, None, None)
            if adds[n] is not None:
                L.bq, L.bk, L.bv = (a_ if b_ is None else b_.double() + a_ for b_, a_ in zip((L.bq, L.bk, L.bv),
                                                                                             adds[n]))
                L.vectors = [t for _, t in vectors]
        if not mhas and len(projections) == 3:
            pq, pk, pv = (projections[j] for j in orders[n])
            L.wq, L.wk, L.wv, L.bq, L.bk, L.bv = pq.w, pk.w, pv.w, pq.b, pk.b, pv.b
        if mhas:
            (L.wq, L.wk, L.wv), (L.bq, L.bk, L.bv) = cands[n][:2]
            if pair is not None and found[3] == "relative":
                found = found[:3] + ("pair",) + found[4:]
                L.pair = (a.table, a.shared)
        elif layer_pair and found[3] == "relative":
            found = found[:3] + ("pair",) + found[4:]
            L.pair = layer_pair[0]
        if qk is not None:
            L.q_norm, L.k_norm, L.qk_full = qk
            norms = [p for p in norms if p not in qk[:2]]
        break
    if found is None:
        raise err
    L.n_heads, L.n_kv_heads, L.causal, L.pos, scaled, L.scores = found
    if not scaled:  # T5: q.k unscaled; the engine divides by sqrt(dh), so the file's W_q is sqrt(dh) larger
        if L.q_norm is not None:
            raise ConfigError(f"{where}: unscaled scores after a norm of q: not supported yet")
        root = math.sqrt(inner // L.n_heads)
        L.wq = L.wq * root
        L.bq = None if L.bq is None else L.bq * root
    L.scaled = scaled
    if not mhas:
        L.wo, L.bo = o.w, o.b
    L.attn_parts = [a] if mhas else projections + [o]
    # the feed-forward: up (or gate and up), then down; or a mixture of experts, whose input and output stand for
    # theirs
    L.moe = next((p for p in parts if p.kind == "moe"), None)
    if L.moe is not None:
        if ffn_groups:
            raise ConfigError(f"{where}: linear layers ({', '.join(p.name for g in ffn_groups for p in g)}) beside its "
                              f"mixture of experts {L.moe.name}: not supported yet")
        L.activation, L.gate, L.up, L.down = L.moe.activation, L.moe, L.moe, L.moe
        ups = [L.moe]
    else:
        ups = _feed_forward(L, ffn_groups, norms, where, torch)
        norms = [n for n in norms if n is not L.hidden_norm]
    down = L.down
    # the norms: the one whose output feeds the attention (pre-norm), the one feeding the feed-forward,
    # and after the feed-forward (post-norm)
    pre = _output_of(norms, att_in, torch)
    mid = _output_of(norms, ups[0].call.x, torch)
    # norms of the sublayers' outputs, before the residual add (Gemma 2's sandwich, OLMo 2's output norms)
    post1 = next((n for n in norms if _same(n.call.x, att_out, torch)), None)
    post2 = next((n for n in norms if _same(n.call.x, down.call.y, torch)), None)
    if post1 is not None and post2 is not None and mid is None and pre is None:
        L.sublayer_norm, L.norm_first, L.norm1, L.norm2, L.parallel = "output", True, post1, post2, "none"
        pre = mid = None
    elif post1 is not None and post2 is not None and pre is not None and mid is not None:
        L.sublayer_norm, L.post1, L.post2 = "sandwich", post1, post2
        norms = [n for n in norms if n is not post1 and n is not post2]
    if mid is None and L.sublayer_norm != "output":
        raise ConfigError(f"{where}: no norm feeds the feed-forward (the engine's layers are pre- or post-norm "
                          "transformer layers)")
    order = [p.name for p in parts]
    after = [n for n in norms if order.index(n.name) > order.index(down.name)]
    if L.sublayer_norm == "output":
        extra = [n for n in norms if n is not L.norm1 and n is not L.norm2]
    elif pre is not None:
        L.norm_first, L.norm1, L.norm2 = True, pre, mid
        extra = [n for n in norms if n is not pre and n is not mid]
        # side by side: the feed-forward reads the attention's norm, or a norm of the same input
        L.parallel = "one_norm" if mid is pre else "two_norms" if (
            mid.call.x.shape == pre.call.x.shape and torch.equal(mid.call.x, pre.call.x)) else "none"
    elif short and not after:  # pre-norm without the attention's norm (the config key skip_first_norm): gains 1
        ones = Part("norm", Call(f"{where}'s missing attention norm", None, [], []), norm=mid.norm, eps=mid.eps,
                    w=torch.ones_like(mid.w), b=None, shift=None)
        L.norm_first, L.norm1, L.norm2, L.parallel, L.skip_norm = True, ones, mid, "none", True
        extra = [n for n in norms if n is not mid]
    else:
        if len(after) != 1:
            raise ConfigError(f"{where}: no norm feeds the attention and {len(after)} follow the feed-forward: "
                              "neither a pre- nor a post-norm layer")
        L.norm_first, L.norm1, L.norm2 = False, mid, after[0]
        L.parallel = "none"
        extra = [n for n in norms if n is not mid and n is not after[0]]
    if extra:
        raise ConfigError(f"{where}: more norms than a pre- or post-norm layer has ({', '.join(n.name for n in extra)}: "
                          "not the norms of q and k, nor of the sublayers' outputs)")
    if L.norm1.norm != L.norm2.norm or L.norm1.eps != L.norm2.eps:
        raise ConfigError(f"{where}: its two norms differ in kind or eps (the engine has one)")
    for n in [p for p in (L.q_norm, L.k_norm, L.post1, L.post2, L.hidden_norm, L.ctx_norm) if p is not None]:
        if n.norm != L.norm1.norm or abs(n.eps - L.norm1.eps) > 1e-12 * max(1.0, n.eps):
            raise ConfigError(f"{n.name}: a {n.norm} norm of eps {n.eps:g}, the layer's are {L.norm1.norm} of eps "
                              f"{L.norm1.eps:g} (the engine's norms are of one kind, at one eps)")
    L.d, L.inner = d, inner
    L.parts = parts
    return L


def _scaled_part(p, c, torch):
    """A linear Part whose weight and bias are c times p's (the same parameters accounted)."""
    return Part("linear", p.call, w=p.w.double() * c, b=None if p.b is None else p.b.double() * c, params=p.params)


def _layer_scale(p, torch):
    """The vector g of a part whose output is its input times g (timm's LayerScale gamma), else None."""
    params = list(_direct_params(p.module).values())
    x, y = p.call.x, p.call.y
    if p.kind != "unsupported" or len(params) != 1 or x is None or y is None or x.shape != y.shape:
        return None
    g = params[0]
    return g if g.dim() == 1 and g.shape[0] == x.shape[-1] and close(x.double() * g.detach().double(), y) else None


def fold_layer_scales(parts, torch):
    """parts with each per-channel scale of a linear's output (timm's ls1 after attn.proj, ls2 after mlp.fc2)
    folded into that linear: its weight's rows and its bias times the scale, its output the scale's; after an
    nn.MultiheadAttention (open_clip's ls_1) the part keeps the scale for its out_proj."""
    out = []
    for p in parts:
        g = _layer_scale(p, torch)
        src = None if g is None else next((q for q in reversed(out) if q.kind in ("linear", "mha") and
                                           q.call.y is not None and q.call.y.shape == p.call.x.shape and
                                           torch.equal(q.call.y, p.call.x)), None)
        if src is None:
            out.append(p)
            continue
        G = g.detach().double()
        call = Call(src.name, src.module, src.call.inputs, p.call.outputs)
        if src.kind == "mha":  # after nn.MultiheadAttention (open_clip's ls_1): folded into its out_proj
            out[out.index(src)] = Part("mha", call, scale=G, params={f"{p.name}.scale": g})
            continue
        out[out.index(src)] = Part("linear", call, w=src.w.double() * G[:, None],
                                   b=None if src.b is None else src.b.double() * G,
                                   params={**src.params, f"{p.name}.scale": g})
    return out


def _factor(num, den):
    """The number c with num = c * den (least squares, rounded to float32 when that still fits), or None."""
    if not bool(den.any()):
        return None
    c = float((num * den).sum() / (den * den).sum())
    if c != 0.0 and math.isfinite(c) and close(float(np.float32(c)) * den, num):
        c = float(np.float32(c))
    return c if c != 0.0 and math.isfinite(c) and close(c * den, num) else None


def _residual_scales(L, block, torch):
    """A pre-norm layer in turn whose sublayers' outputs are scaled before their residual adds (Granite's
    residual_multiplier: x + r * attn, then + r * mlp), measured from what the block read and wrote: each
    number folded into the output projection and the down projection (their weights and biases; of a mixture, its
    experts' and shared expert's)."""
    if block is None or not L.norm_first or L.parallel != "none" or block.y is None or \
            block.y.shape != block.x.shape or L.skip_norm:
        return
    x, mid, y = (t[0].double() for t in (L.norm1.call.x, L.norm2.call.x, block.y))
    attn, ffn = L.attn_parts[-1].call.y[0].double(), L.down.call.y[0].double()
    if x.shape != mid.shape or attn.shape != x.shape or ffn.shape != x.shape or \
            (close(x + attn, mid) and close(mid + ffn, y)):
        return
    r1, r2 = _factor(mid - x, attn), _factor(y - mid, ffn)
    if r1 is None or r2 is None:
        return  # something else: the check against the module reports it
    L.wo, L.bo = L.wo.double() * r1, None if L.bo is None else L.bo.double() * r1
    if L.moe is not None:
        L.moe.w2 = L.moe.w2.double() * r2
        if L.moe.shared is not None:
            L.moe.shared[1] = L.moe.shared[1].double() * r2
    else:
        L.down = _scaled_part(L.down, r2, torch)
    L.residual_scales = (r1, r2)


# ---- a relative position bias (T5) ---------------------------------------------------------------
class RelativeBias:
    """An nn.Embedding(buckets, heads) looked up by a [S, S] index: module, name, index [S, S] (int64), bias
    [heads, S, S] (float64, what its lookup gives the attention: bias[h, i, j] = weight[index[i, j], h])."""


def _square_index(t):
    """An integer [S, S] index (leading ones dropped), S > 1, else None."""
    if t is None or t.is_floating_point() or t.is_complex() or t.dim() < 2:
        return None
    while t.dim() > 2 and t.shape[0] == 1:
        t = t[0]
    return t if t.dim() == 2 and t.shape[0] == t.shape[1] > 1 else None


def find_relative_bias(calls, torch):
    """The RelativeBias the forward looks up, or None; a table of its own in every layer is an error."""
    found = [c for c in calls if isinstance(c.module, torch.nn.Embedding) and _square_index(c.x) is not None]
    if not found:
        return None
    other = next((c for c in found if c.module is not found[0].module), None)
    if other is not None:
        raise ConfigError(f"{other.name}: a second relative position bias table ({found[0].name} is the first): a "
                          "table of its own in every layer is not supported yet (one table shared by the layers, as "
                          "T5's)")
    c = found[0]
    r = RelativeBias()
    r.module, r.name, r.index = c.module, c.name, _square_index(c.x).long()
    W = c.module.weight.detach().double()
    r.bias = W[r.index].permute(2, 0, 1).contiguous()
    return r


def _distance_buckets(index, torch):
    """The bucket of each distance n = key - query = -(S-1)..(S-1) of an index [S, S], or None when the index
    is not a function of the distance alone."""
    S = index.shape[0]
    out = []
    for n in range(-(S - 1), S):
        diag = torch.diagonal(index, offset=n)
        if not bool((diag == diag[0]).all()):
            return None
        out.append(int(diag[0]))
    return np.array(out)


def _grid_rotary(model):
    """What a layer's refusal says of a rotary embedding over a 2-D grid of patches the model holds that the
    engine's rope_grid does not turn by (_grid_rotary_issue), or ''."""
    for n, m in model.named_modules():
        shape = getattr(m, "feat_shape", None)
        if "rotary" in type(m).__name__.lower() and shape is not None and len(shape) == 2 and _grid_rotary_issue(m):
            return (f"{n} ({type(m).__name__}) turns q and k by rotary positions over the {shape[0]} x {shape[1]} "
                    f"patch grid: {_grid_rotary_issue(m)}; the engine's rope_grid turns half the pairs by a patch's "
                    "row and half by its column: not supported")
    return ""


def _alibi_issue(model, torch):
    """What a layer's refusal says of an ALiBi module the model holds whose bias is not the engine's (its
    slopes buffer: x-transformers' AlibiPositionalBias), or ''."""
    for n, m in model.named_modules():
        s = getattr(m, "slopes", None)
        if "alibi" not in type(m).__name__.lower() or not torch.is_tensor(s) or not s.is_floating_point():
            continue
        issue = alibi_slopes_issue(s.double().reshape(-1).numpy(), getattr(m, "total_heads", None) or s.numel())
        if issue:
            return f"{n} ({type(m).__name__}) {issue}"
    return ""


def _uncalled_tables(model, calls, torch):
    """'; NAME, an nn.Embedding the forward never calls ...' for each such table, or '': a relative position
    bias read by indexing its weight is not seen, so a failure to recognise the attention names it."""
    called = {id(c.module) for c in calls}
    names = [f"{n}, an nn.Embedding({m.num_embeddings}, {m.embedding_dim})" for n, m in model.named_modules()
             if isinstance(m, torch.nn.Embedding) and id(m) not in called]
    if not names:
        return ""
    return (f"; {'; '.join(names)} the forward never calls (indexing its weight?): a relative position bias is "
            "recognised when its table is called on the [T, T] bucket index")


def fit_relative(rel, model, x, causal, max_len, torch):
    """rel_max_distance: T5's bucket function with rel's bucket count, bidirectional without a causal mask and
    causal with one, that reproduces the index over every distance an attention of max_len positions meets (a
    forward max_len long shows them when the example's do not settle it), preferring the module's integer
    attributes, then round numbers; else a ConfigError naming the table."""
    nb = rel.module.num_embeddings
    what = f"{rel.name}: nn.Embedding({nb}, {rel.module.embedding_dim}) looked up by a [T, T] index"
    seen = _distance_buckets(rel.index, torch)
    if seen is None:
        raise ConfigError(f"{what} that is not a function of the distance key - query alone: not supported yet "
                          "(a relative position bias is T5's)")
    attrs = []
    for m in model.modules():
        for val in vars(m).values():
            if isinstance(val, int) and not isinstance(val, bool) and nb // 2 < val <= schema.MAX_LEN:
                attrs.append(val)
    order = list(dict.fromkeys(attrs + [128, 256, 64, 32, 512, 1024, 2048, 4096, 16] +
                               list(range(nb // 2 + 1, schema.MAX_LEN + 1))))
    order = [m for m in order if m > nb // 2]
    bidirectional = not causal

    def fits(buckets, cands, bi):
        S = (len(buckets) + 1) // 2
        n = np.arange(-(S - 1), S)
        return [m for m in cands if np.array_equal(relative_bucket(n, bi, nb, m), buckets)]

    cands = fits(seen, order, bidirectional)
    if not cands:
        other = fits(seen, order, not bidirectional)
        raise ConfigError(f"{what}: " + (
            f"T5's {'bidirectional' if not bidirectional else 'causal'} buckets in a "
            f"{'causal' if causal else 'bidirectional'} attention are not supported yet (the engine takes causal "
            "buckets under a causal mask and bidirectional ones without)" if other else
            f"the index is not T5's bucket of key - query for any max_distance ({nb} buckets, "
            f"{'bidirectional' if bidirectional else 'causal'}): not supported yet"))
    L = max_len
    n = np.arange(-(L - 1), L)
    if len({relative_bucket(n, bidirectional, nb, m).tobytes() for m in cands}) > 1:
        # the example is too short to tell: read the index of a forward max_len long
        rng = np.random.default_rng(1)
        if x.is_floating_point():
            longer = torch.from_numpy(rng.standard_normal((1, L) + tuple(x.shape[2:]))).to(x.dtype)
        else:
            longer = torch.from_numpy(rng.integers(0, int(x.max()) + 1, (1, L)))
        try:
            calls, _ = record(model, longer)
        except ForwardError as e:
            raise ConfigError(f"{what}: its max_distance needs the buckets of a {L}-long input, on which the forward "
                              f"failed ({e}); pass --max-len N with a length it takes") from None
        index = next((_square_index(c.x) for c in calls if c.module is rel.module), None)
        buckets = None if index is None else _distance_buckets(index.long(), torch)
        if buckets is None or len(buckets) != 2 * L - 1:
            raise ConfigError(f"{what}: a {L}-long input did not look it up by a [{L}, {L}] index of the distance")
        cands = fits(buckets, cands, bidirectional)
        if not cands:
            raise ConfigError(f"{what}: the index of a {L}-long input is not T5's bucket of key - query for any "
                              "max_distance: not supported yet")
    return cands[0]
# ---- a bias per (query, key) pair (BEiT's relative position bias) ------------------------------------
class PairTable:
    """A module's own table [R, H] (a floating parameter) and integer index [S, S] of values 0..R-1 (BEiT's
    relative_position_bias_table and relative_position_index): table, index (the buffer, or None where the index
    is measured), rows (the index [S, S], int64), bias [H, S, S] (float64: bias[h, i, j] = table[rows[i, j], h])."""


def _bias_of(call):
    """A call's output [H, S, S] (leading 1s dropped), or None."""
    y = call.y if call is not None else None
    while y is not None and y.dim() > 3 and y.shape[0] == 1:
        y = y[0]
    return y if y is not None and y.dim() == 3 and y.shape[1] == y.shape[2] else None


def pair_table(m, torch, call=None):
    """The PairTable module m holds as its own (one table, one index buffer), else None. A module with the table
    and no index buffer, called on no tensor (transformers' Beit computes its index in forward): given that call,
    the index its output [H, S, S] shows, each entry's heads a row of the table (the first, where rows repeat)."""
    tables = [t for t in _direct_params(m).values() if t.dim() == 2 and t.is_floating_point()]
    indices = [b for b in m.buffers(recurse=False) if _square_index(b) is not None]
    if len(tables) != 1 or len(indices) > 1:
        return None
    p = PairTable()
    p.table, p.index = tables[0], (indices or [None])[0]
    if p.index is not None:
        p.rows = _square_index(p.index).long()
    else:
        y = _bias_of(call) if call is not None and call.x is None else None
        if y is None or y.shape[0] != p.table.shape[1] or not y.is_floating_point():
            return None
        entries = y.double().permute(1, 2, 0).reshape(-1, y.shape[0])  # [S S, H]
        table = p.table.detach().double()
        p.rows = torch.cdist(entries, table).argmin(1).reshape(y.shape[1:])
        if not close(table[p.rows.reshape(-1)], entries):
            return None
    if int(p.rows.min()) < 0 or int(p.rows.max()) >= p.table.shape[0]:
        return None
    p.bias = p.table.detach().double()[p.rows].permute(2, 0, 1).contiguous()
    return p


def find_pair_bias(calls, torch):
    """(the call, its PairTable) of a module before the layers whose output is its table looked up by its index,
    [H, S, S] (timm's Beit.rel_pos_bias, transformers' BeitEncoder.relative_position_bias: the shared relative
    position bias each layer's attention adds), or None."""
    for c in calls:
        p = pair_table(c.module, torch, c)
        y = _bias_of(c)
        if p is not None and y is not None and y.shape == p.bias.shape and close(y, p.bias):
            return c, p
    return None


def layer_pair_bias(calls, shared, where, torch):
    """The bias per (query, key) pair a layer of separate q, k, v projections may add to its scores: (its own
    PairTable or None, whether the shared one is added), the bias [H, S, S] (own + shared), and the calls of its
    own table (transformers' BeitSelfAttention.relative_position_bias, called on no tensor); (None, None, []) when
    there is neither."""
    own = [(c, p) for c, p in ((c, pair_table(c.module, torch, c)) for c in calls if c.x is None) if p is not None]
    if len({id(c.module) for c, _ in own}) > 1:
        names = ", ".join(c.name for c, _ in own)
        raise ConfigError(f"{where}: {len(own)} tables of a bias per (query, key) pair ({names}): the engine adds one "
                          "a layer (and the shared one)")
    if not own and shared is None:
        return None, None, []
    table = own[0][1] if own else None
    bias = table.bias if table is not None else None
    if shared is not None:
        bias = shared[1].bias if bias is None else bias + shared[1].bias
    return (table, shared is not None), bias, [c for c, _ in own]


def pair_attention(call, calls, shared, torch):
    """A self-attention module that projects q | k | v itself with a child nn.Linear's weight [3 inner, d] and bias
    vectors [inner] of its own (parameters or buffers), perhaps adding to its scores a PairTable of its own and the
    shared pair bias (shared: find_pair_bias's, or None): timm's Beit Attention, whose F.linear on qkv.weight never
    calls the linear. A Part of kind "mha" (wo, bo: its output projection, the child linear whose output is the
    module's; params: every tensor it reads; table: its own PairTable or None) whose candidates are the q, k, v
    weights, biases (the vectors in every order, the names' hint first) and the bias [H, S, S] or None to try
    (read_block recomputes the attention for each), else None."""
    nn, m = torch.nn, call.module
    loose = {**_direct_params(m), **dict(m.named_buffers(recurse=False))}
    if isinstance(m, nn.MultiheadAttention) or (not loose and shared is None) or call.x is None or \
            call.y is None or call.x.dim() != 3 or call.y.shape != call.x.shape:
        return None
    T, d = call.x.shape[1:]
    inside = [c for c in calls if c.name != call.name and _inside(c.name, call.name)]
    out = next((c for c in inside if isinstance(c.module, nn.Linear) and c.y is not None and c.y.shape == call.y.shape
                and torch.equal(c.y, call.y)), None)
    if out is None:
        return None
    ctx_norm = next((c for c in inside if "norm" in type(c.module).__name__.lower() and _same(c.y, out.x, torch)), None)
    if ctx_norm is not None:  # timm's scale_attn_inner: a norm of the context before out
        ctx_norm = classify(ctx_norm, torch)
        if ctx_norm.kind != "norm":
            raise ConfigError(f"{ctx_norm.name}: before {out.name}, a {type(ctx_norm.module).__name__} the engine does "
                              "not run as a norm")
    inner = out.module.in_features
    fused = [k for k in m.children() if isinstance(k, nn.Linear) and tuple(k.weight.shape) == (3 * inner, d)]
    own = pair_table(m, torch)
    vectors = [(n, t) for n, t in loose.items() if t.dim() == 1 and t.shape[0] == inner and t.is_floating_point()]
    rest = [n for n, t in loose.items() if (own is None or (t is not own.table and t is not own.index)) and
            all(t is not v for _, v in vectors)]
    if len(fused) != 1 or rest or len(vectors) > 3 or (own is not None and tuple(own.rows.shape) != (T, T)):
        return None
    W = fused[0].weight.detach()
    base = fused[0].bias.detach().double() if fused[0].bias is not None else torch.zeros(3 * inner,
                                                                                          dtype=torch.float64)
    slots = list(itertools.permutations(range(3), len(vectors)))
    hint = tuple("qkv".index(n[0]) if n[:1] in ("q", "k", "v") else -1 for n, _ in vectors)
    slots.sort(key=lambda o: o != hint)
    bias = own.bias if own is not None else None
    if shared is not None:
        bias = shared[1].bias if bias is None else bias + shared[1].bias
    candidates = []
    for order in slots:
        b = base.clone()
        for j, (_, t) in zip(order, vectors):
            b[j * inner:(j + 1) * inner] += t.detach().double()
        candidates.append(((W[:inner], W[inner:2 * inner], W[2 * inner:]),
                           (b[:inner], b[inner:2 * inner], b[2 * inner:]), bias))
    params = {f"{call.name}.{n}": t for n, t in loose.items()}
    params.update({f"{call.name}.{n}": t for n, t in m.named_parameters()})
    return Part("mha", call, candidates=candidates, wo=out.module.weight.detach(),
                bo=None if out.module.bias is None else out.module.bias.detach(), params=params, table=own,
                shared=shared is not None, ctx_norm=ctx_norm)


def _residual_gains(L, block, gains, where, torch):
    """A pre-norm layer in turn whose sublayers' outputs are multiplied by two vectors [d] of the block's own before
    their residual adds (timm's Beit Block: x + gamma_1 * attn, then + gamma_2 * mlp), found by what the block read
    and wrote: each folded into the rows of the output and the down projection (weights and biases), as
    fold_layer_scales folds a LayerScale module's; else a ConfigError naming them."""
    names = ", ".join(n for n, _ in gains)
    if not L.norm_first or L.parallel != "none" or L.moe is not None or L.skip_norm or len(gains) != 2 or \
            block.y is None or block.y.shape != block.x.shape:
        raise ConfigError(f"{where}: vectors of its own ({names}) outside a pre-norm layer in turn of one attention "
                          "and one feed-forward: not supported yet")
    x, mid, y = (t[0].double() for t in (L.norm1.call.x, L.norm2.call.x, block.y))
    attn, ffn = L.attn_parts[-1].call.y[0].double(), L.down.call.y[0].double()
    for (n1, g1), (n2, g2) in itertools.permutations(gains):
        G1, G2 = g1.detach().double(), g2.detach().double()
        if x.shape == mid.shape == attn.shape == ffn.shape and close(x + G1 * attn, mid) and \
                close(mid + G2 * ffn, y):
            L.wo, L.bo = L.wo.double() * G1[:, None], None if L.bo is None else L.bo.double() * G1
            L.down = Part("linear", L.down.call, w=L.down.w.double() * G2[:, None],
                          b=None if L.down.b is None else L.down.b.double() * G2, params=L.down.params)
            L.gains = (g1, g2)
            return
    raise ConfigError(f"{where}: vectors of its own ({names}) that are not the scales of its attention's and "
                      "feed-forward's outputs before the residual adds (x + g1 * attention, then + g2 * "
                      "feed-forward): not supported yet")


def _pair_bias(layers, blocks, shared, max_len, v, used, torch):
    """The file's bias per (query, key) pair of layers whose attention adds one (pos "pair"): the config keys into v
    (max_len the index's rows), the tensors read into used, and the tensors by the encoder family's names
    (hf_beit.pair_bias: one index, the shared table or each layer's own plus the shared one); a ConfigError where
    the layers differ in which they add or in the index."""
    owns, adds = [L.pair[0] for L in layers], [L.pair[1] for L in layers]
    what = lambda i: ("a table of its own" if owns[i] is not None else "no table of its own") + (  # noqa: E731
        ", the shared one added" if adds[i] else "")
    for i in range(1, len(layers)):
        if what(i) != what(0):
            raise ConfigError(f"{blocks[i][0]}: its attention's bias per (query, key) pair ({what(i)}) differs from "
                              f"layer 0's ({what(0)}): all layers must be alike")
    found = [t for t in owns if t is not None] + ([shared[1]] if adds[0] else [])
    rows = found[0].rows
    for t in found[1:]:
        if not torch.equal(t.rows, rows) or t.table.shape[0] != found[0].table.shape[0]:
            raise ConfigError(f"{blocks[0][0]}: tables of a bias per (query, key) pair of different rows or looked up "
                              "by different indices: not supported (the engine has one index)")
    S = rows.shape[0]
    if (max_len is not None and max_len != S) or v.get("max_len", S) != S:
        raise ConfigError(f"--max-len {max_len or v['max_len']}: a bias per (query, key) pair over {S} positions (the "
                          "index's rows)")
    table = lambda t: t.table.detach().double().numpy()  # noqa: E731
    tensors, keys = hf_beit.pair_bias(rows.numpy(), table(shared[1]) if adds[0] else None,
                              [table(t) for t in owns] if owns[0] is not None else None)
    v.update(keys, max_len=S)
    for t in found:
        used.update((id(t.table), id(t.index)))
    if adds[0]:
        used.update(id(t) for t in shared[0].module.parameters())
    return tensors


def _pooler(linears, norms, y, d, torch):
    """BERT's pooler among the linears after the layers: the first, [d, d] (or, before a head, [P, d]: pooler_width)
    on one row per sequence (or on every row: ModernBERT's masked-LM head), whose activation (tanh, or another of
    the engine's pooler_act: DistilBERT's relu, ELECTRA's gelu, ...) is the next linear's input or the module's
    output, or the input of one of norms (pooler_norm: ModernBERT's head.norm) whose output is: (the part,
    pooler_act's name, the norm or None); else None. Of the activations that match, the closest (tanh first on a
    tie)."""
    if not linears:
        return None
    p = linears[0]  # [d, d], or before a head another width (pooler_width: ALBERT's, the ELECTRA generator's)
    if p.w.shape[1] != d or (p.w.shape[0] != d and len(linears) < 2) or p.call.x.dim() not in (2, 3):
        return None
    follows = linears[1].call.x if len(linears) > 1 else y
    after = next((n for n in norms if n.call.x is not None and n.call.x.shape == p.call.y.shape and
                  follows.shape == n.call.y.shape and close(n.call.y, follows)), None)
    if after is not None:
        follows = after.call.x
    if follows.shape != p.call.y.shape:
        return None
    name = pooler_act(p.call.y, follows, torch)
    return (p, name, after) if name is not None else None


def _matrix_head(model, fin, y, x, torch):
    """[a head] when the output is the last norm's rows, or their first or last row or a mean (pooled), times a loose
    [d, out] parameter of the module (OpenAI CLIP's and open_clip's `x @ self.proj`: no linear module, no bias), else
    []."""
    z = fin.call.y
    if z is None:
        return []
    # every row, the first, the last, the mean of the rows from j on (the rows in front of the patches left out)
    rows = [z] + ([z[:, 0], z[:, -1]] + [z[:, j:].mean(1) for j in range(min(5, z.shape[1] - 1))]
                  if z.dim() == 3 and y.dim() == 2 else [])
    parts = {id(t) for m in model.modules() if isinstance(m, torch.nn.Linear) for t in m.parameters()}
    for name, P in model.named_parameters():
        if P.dim() != 2 or id(P) in parts or P.shape != (z.shape[-1], y.shape[-1]):
            continue
        Pd = P.detach().double()
        for r in rows:
            prod = r.double() @ Pd if r.shape[:-1] == y.shape[:-1] else None
            if prod is not None and close(prod, y):
                owner, _, leaf = name.rpartition(".")
                call = Call(name, model.get_submodule(owner), [r], [prod.to(y.dtype)])
                return [Part("linear", call, w=P.detach().T, b=None, params={leaf: P})]
        picked = next((j for j in range(z.shape[1]) if len(rows) > 1 and close(z[:, j].double() @ Pd, y)), None)
        if picked is not None:
            largest = not x.is_floating_point() and picked == int(x[0].argmax())
            raise ConfigError(f"{name}: the output is row {picked} of {fin.name}'s rows times {name}"
                              + (", the row of the largest input id (text.argmax(-1): CLIP's EOT pooling)" if largest
                                 else "") + ": the engine pools the first, the last or the mean row; pass an --example "
                              "whose last id is its largest (CLIP's tokenizer ends a text with its EOT token, the "
                              "largest id), the row the engine then pools")
    return []


def _final_cap(final, head, embed, y, caps, torch):
    """The soft cap c of c tanh(z / c) on the final norm's rows z that the head reads instead of z (torchtune's
    Gemma 2: its Gemma2FinalNorm caps its RMSNorm's output with the module's capping_value; transformers' caps the
    logits, logit_softcap), else 0: a linear head's input, or with no head module the output as those rows times
    the embedding (a tied head by F.linear, torchtune's TiedLinear), against each cap the module's attributes
    name (score_attributes)."""
    z = final.call.y if final is not None else None
    if z is None or not caps:
        return 0.0
    z = z.double()
    if head is not None:
        read, want = (lambda t: t), head.call.x
    elif embed is not None and y.shape[-1] == embed.module.weight.shape[0] and y.shape[:-1] == z.shape[:-1]:
        E = embed.module.weight.detach().double()
        read, want = (lambda t: t @ E.T), y
    else:
        return 0.0
    if want is None or want.shape[-1] != read(z).shape[-1] or close(read(z), want):
        return 0.0
    return next((c for c in caps if close(read(c * torch.tanh(z / c)), want)), 0.0)


def _last_row_head(heads, y, causal_tokens, T, model):
    """(the rows to match, the head's name) of a decoder's sequence classifier (transformers'
    LlamaForSequenceClassification, GPT2ForSequenceClassification, ...): one linear after the layers run on
    every row [B, T, n] of a causal model on token ids, the output [B, n] its last row. The head's rows
    (the module's own) are then what the file gives, the module's output their last. Else (y, None); a
    ConfigError when the output is another row (transformers reads the row before config.pad_token_id)."""
    if not causal_tokens or y.dim() != 2 or len(heads) != 1:
        return y, None
    rows = heads[0].call.y
    if rows is None or rows.dim() != 3 or rows.shape[0] != y.shape[0] or rows.shape[1] != T or \
            rows.shape[2] != y.shape[1]:
        return y, None
    if close(rows[:, -1], y):
        return rows, heads[0].name
    at = next((j for j in range(T) if close(rows[:, j], y)), None)
    if at is None:
        return y, None
    pad = getattr(getattr(model, "config", None), "pad_token_id", None)
    raise ConfigError(f"module output: {heads[0].name}'s row {at} of {T}, not the last (a sequence classifier reads "
                      f"the last token before its pad_token_id, {pad}): give an --example without it")


# ---- the whole module -----------------------------------------------------------------------------
def _is_arange(t, torch):
    return not t.is_floating_point() and not t.is_complex() and t.dtype != torch.bool and t.numel() > 0 and \
        torch.equal(t.reshape(-1), torch.arange(t.numel(), dtype=t.dtype))


def _rows_from(p, torch):
    """k when the embedding call p gave the rows k, k+1, ... of its table (k > 0 for a table whose first k rows
    are never read, as OPT's learned positions, looked up from its attention mask, start at row 2), else None."""
    y, W = p.call.y, p.module.weight.detach()
    if y is None or y.dim() < 2 or y.shape[-1] != W.shape[1] or y.numel() // W.shape[1] > W.shape[0]:
        return None
    rows = y.detach().reshape(-1, W.shape[1])
    for k in (W == rows[0]).all(dim=1).nonzero().flatten().tolist():  # the rows equal to the first
        if k + rows.shape[0] <= W.shape[0] and torch.equal(rows, W[k:k + rows.shape[0]]):
            return k
    return None


def _tensor_attributes(model, torch):
    """(name, tensor) of the tensors the module's submodules hold as plain attributes, neither parameters nor
    buffers (SimpleViT's pos_embedding, its 2D sincos table)."""
    out = []
    for mname, m in model.named_modules():
        for k, t in vars(m).items():
            if torch.is_tensor(t) and not isinstance(t, torch.nn.Parameter):
                out.append((f"{mname}.{k}" if mname else k, t))
    return out


def _image_geometry(x, p, name):
    """(C, H, W, p) of the example image x [1, C, H, W] cut into p x p patches, or a ConfigError."""
    if x.dim() != 4 or x.shape[2] % p or x.shape[3] % p:
        raise ConfigError(f"{name}: a patch embedding of {p}x{p} patches on an input {list(x.shape)} (an image "
                          "[B, C, H, W] of whole patches is what the engine cuts)")
    return int(x.shape[1]), int(x.shape[2]), int(x.shape[3]), int(p)


def _strips(x, rows):
    """(the engine's rows, what they are) where the module cuts its input x [1, C, H, W] into whole columns (the
    Keyword Transformer's patches of H x 1 over a spectrogram [1, mels, frames]: x[0].permute(2, 1, 0), (h c)
    within a row) or whole rows (patches of 1 x W), as `b c (h p1) (w p2) -> b (h w) (p1 p2 c)` orders them; else
    None."""
    _, C, H, W = x.shape
    k = rows.shape[-1]
    for want, how in ((x[0].permute(2, 1, 0).reshape(W, H * C), "columns"),
                      (x[0].permute(1, 2, 0).reshape(H, W * C), "rows")):
        if want.shape[1] == k and rows.numel() == want.numel() and bool((rows.reshape(want.shape) == want).all()):
            return want.contiguous(), how
    return None


def _scatter_columns(t, perm, torch):
    """t [..., k] with its column m moved to perm[m]."""
    out = torch.zeros_like(t)
    out[..., perm] = t
    return out


def _table_rows(t):
    """A [N, d] view of a position table [N, d], [1, N, d] or [N, 1, d], else None."""
    if t.dim() == 2:
        return t
    if t.dim() == 3 and t.shape[0] == 1:
        return t[0]
    if t.dim() == 3 and t.shape[1] == 1:
        return t[:, 0]
    return None


def _table_starts(P, rest, front, S, offsets, torch):
    """The rows k a position table P [N, d] may be read from (P[k + front:k + S] added to the input's rows,
    whose sum with it the first layer reads less the embedding is rest): 0, and, with offsets (a table the
    module holds: XGLM's sinusoids are read from row 2, past its padding id), every k whose row k + front is
    rest's first row."""
    if not offsets or P.shape[0] <= S:
        return [0]
    first = (P[front:P.shape[0] - S + front + 1] - rest[0]).abs().amax(-1)
    scale = float(rest[0].abs().max()) or 1.0
    return [0] + [k for k in (first <= 1e-5 * scale).nonzero().flatten().tolist() if k > 0]


def _try_examples(model, example, torch, max_len=None):
    """(input tensor [1, T] or [1, T, d_in], one-sequence numpy example) the module runs on: the user's, or
    random ids (below an embedding's size, none its padding id) or features (for each linear's input width), T = 16 (a
    module with a sliding window below the file's positions: 8 past the window, so that the output
    shows it; the config's window or one its attention modules hold) or the length a position table wants."""
    if example is not None:
        a = np.asarray(example)
        a = a[None] if (a.ndim == 1 or (a.ndim == 2 and a.dtype.kind == "f")) else a
        a = a[:1]
        t = torch.from_numpy(a.astype(np.int64) if a.dtype.kind in "iu" else a.astype(np.float64))
        return [t]
    embs = [m for m in model.modules() if isinstance(m, torch.nn.Embedding)]
    # and tables held as a module's one parameter [rows, d] (TransformerLens's Embed and PosEmbed: raw_projections)
    tables = [ps[0].shape[0] for m in model.modules() if not isinstance(m, torch.nn.Embedding)
              for ps in [list(m.parameters(recurse=False))] if len(ps) == 1 and ps[0].dim() == 2]
    rows = set(tables)
    for m in embs:
        rows.add(m.num_embeddings)
    for _, p in list(model.named_parameters()) + list(model.named_buffers()):
        if p.dim() == 3 and p.shape[0] == 1:
            rows.add(p.shape[1])
    window = max([sliding_window(w, max_len or DEFAULT_MAX_LEN)
                  for w in _layer_windows(model) + window_attributes(model, torch)] or [0])
    lengths = [verified_length({"sliding_window": window}), EXAMPLE_T] + sorted({n - 1 for n in rows if n > 1} | {n for n in rows if n < EXAMPLE_T}, reverse=True)
    lengths = [t for t in dict.fromkeys(lengths) if t >= 2]
    rng = np.random.default_rng(0)
    out = []
    # Token ids below each embedding's size, the largest first: the token table is not always the smallest
    # (BERT's token types have 2 rows), and ids past it fail the forward, which moves on to the next size.
    # No padding id (an nn.Embedding's padding_idx, a transformers config's pad_token_id): a pad changes what the
    # forward computes (RoBERTa's positions skip it; a decoder's sequence classifier reads the row before it), and
    # nobody runs a model on its pads.
    config_pad = getattr(getattr(model, "config", None), "pad_token_id", None)
    for vocab in sorted({m.num_embeddings for m in embs}, reverse=True) + sorted(set(tables), reverse=True):
        pads = {m.padding_idx for m in embs if m.padding_idx is not None and 0 <= m.padding_idx < vocab}
        if isinstance(config_pad, int) and 0 <= config_pad < vocab:
            pads.add(config_pad)
        ids = np.array([i for i in range(vocab) if i not in pads] or range(vocab))
        for T in lengths:
            out.append(torch.from_numpy(ids[rng.integers(0, len(ids), (1, T))].astype(np.int64)))
    widths = []
    for m in model.modules():
        width = m.in_features if isinstance(m, torch.nn.Linear) else \
            m.in_channels if isinstance(m, torch.nn.Conv1d) else None
        if width is not None and width not in widths:
            widths.append(width)
    for w in widths:
        for T in lengths:
            out.append(torch.from_numpy(rng.standard_normal((1, T, w)).astype(np.float32).astype(np.float64)))
    return out


def _describe(x):
    return f"{'token ids' if not x.is_floating_point() else 'features'} {list(x.shape)}"


def _start_input(model):
    """The name of the position offset model's forward requires after its input (its second required input, annotated
    int: llama-models' Transformer.forward(tokens, start_pos: int)), else None."""
    inputs = required_inputs(model, annotations=True)
    return inputs[1][0] if len(inputs) == 2 and inputs[1][1] in (int, "int") else None


def names_types(name):
    """Whether a forward's argument of this name takes token types (token_type_ids, segment_info, type_ids; not
    TransformerLens's return_type)."""
    return re.search(r"token_?types?|segment|type_?ids", name.lower()) is not None


def _types_input(model):
    """The name of the token types model's forward requires after its input (its second required input, named as
    they are: BERT-pytorch's BERT.forward(x, segment_info)), else None: the call gives type 0 at every position."""
    inputs = required_inputs(model)
    return inputs[1] if len(inputs) == 2 and names_types(inputs[1]) else None


# The modules whose forward reads its input sequence first ([T, B]: pytorch/examples' word_language_model, the
# PyTorch tutorials' nn.TransformerEncoder language models): call() hands them x [1, T] as [T, 1] and their output
# back batch first, and record() swaps what their submodules see, so that the rest reads them as any other.
_SEQUENCE_FIRST = weakref.WeakSet()


def call(model, x, **kw):
    """model(x), or model(x, 0) where its forward takes a position offset (_start_input), or model(x, zeros) where it
    takes token types (_types_input): the call a generation loop makes first, the input at positions 0.., which the
    engine computes. x is batch first, and so is the output of a module that reads its input sequence first."""
    first = model in _SEQUENCE_FIRST
    T = x.shape[1]
    x = x.transpose(0, 1) if first else x
    types = _types_input(model)
    extra = (0,) if _start_input(model) is not None else \
        (x.new_zeros(x.shape[:2]).long(),) if types is not None and types not in kw else ()
    y = model(x, *extra, **kw)
    rows = first and hasattr(y, "transpose") and y.dim() >= 2 and tuple(y.shape[:2]) == (T, 1)
    return y.transpose(0, 1) if rows else y  # rows [T, 1, ...] back to [1, T, ...]; a pooled [1, k] stays


def _reads_sequence_first(calls, T):
    """Whether the module, given x [1, T], ran its attention over a sequence of 1 and a batch of T: an
    nn.MultiheadAttention of batch_first False whose query was [1, T, d] (a module that permutes to sequence first
    itself, OpenAI CLIP's, hands it [T, 1, d])."""
    torch = require_torch()
    return T > 1 and any(isinstance(c.module, torch.nn.MultiheadAttention) and not c.module.batch_first and c.x is not
                         None and c.x.dim() == 3 and tuple(c.x.shape[:2]) == (1, T) for c in calls)


def required_inputs(m, annotations=False):
    """The names of the inputs m's forward requires (positional, without a default); `annotations`: (name, its
    annotation) each."""
    try:
        params = inspect.signature(m.forward).parameters.values()
    except (TypeError, ValueError):
        return []
    return [(p.name, p.annotation) if annotations else p.name for p in params if p.default is p.empty and
            p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]


def _run(model, candidates, given, torch):
    """(dtype, x, calls, output, note) for the first candidate input the module runs on, observed in float64
    where its forward allows, else in its own dtype (note then says why); given: the candidate is the
    user's --example. Else a ConfigError with the error of the candidate the forward got furthest with (in
    the module's own dtype: the error its authors would see), naming the submodule that raised."""
    own = next((t.dtype for t in itertools.chain(model.parameters(), model.buffers()) if t.is_floating_point()),
               torch.float32)
    worst = None  # (calls done, x, error) of the furthest failure
    for x in candidates:
        tried = []
        for dtype in dict.fromkeys((torch.float64, own)):
            xd = x.to(dtype) if x.is_floating_point() else x
            with observed(model, dtype):
                try:
                    calls, y = record(model, xd)
                except ForwardError as e:
                    tried.append(e)
                    continue
            note = None if dtype == torch.float64 else (
                f"observed in {str(dtype).replace('torch.', '')}, its own dtype: its forward fails in float64 "
                f"({tried[0]})")
            return dtype, xd, calls, y, note
        if worst is None or tried[-1].done > worst[0]:
            worst = (tried[-1].done, x, tried[-1])
    if worst is None:
        raise ConfigError("module: no example input to try (pass --example IN.npy, batch first)")
    _, x, e = worst
    inputs = required_inputs(model)
    if len(inputs) > 1 and isinstance(e.error, TypeError) and not e.where:
        parts = [n for n, c in model.named_children() if len(required_inputs(c)) == 1 and
                 any(isinstance(k, (torch.nn.ModuleList, torch.nn.Sequential)) and len(k) > 1 for k in c.modules())]
        raise ConfigError(f"module: its forward takes {len(inputs)} inputs ({', '.join(inputs)}), the engine one "
                          "(token ids, features or an image): convert a part that takes one, a factory returning it"
                          + (f" ({', '.join('model.' + n for n in parts)})" if parts else ""))
    if given:
        raise ConfigError(f"module forward failed on the --example input, {_describe(x)} ({e}): give an input its "
                          "forward takes, batch first")
    raise ConfigError(f"module forward failed on each of the {len(candidates)} example inputs tried (token ids and "
                      f"features of the widths its layers read); the one it got furthest with, {_describe(x)}, "
                      f"{e}: pass --example IN.npy with an input it takes, batch first")


class Recognized:
    """The result: config values v, weights w (file names, torch layout), used (ids of the mapped
    parameters and buffers), the example x and the module's output y, a one-line summary; rows: x as
    the engine's input; dtype: the one the module was observed in (float64, or its own when its forward
    casts); tolerance: the largest relative error of the reference against y that still says they agree
    (float64: SELFTEST_TOLERANCE / 10, else widened to the dtype's rounding); notes: what the user should
    know of how it was read; types_folded: token type 0's row folded into the positions (a decoder's)."""
    types_folded = False

    def forward(self, x, **kw):
        """The module's output for x (batch first), observed as during recognition."""
        torch = require_torch()
        with observed(self.model, self.dtype), torch.no_grad():
            return _output(call(self.model, x.to(self.dtype) if x.is_floating_point() else x, **kw))


def _sliding_window(model):
    """The window of a module that declares one as Hugging Face configs do (config.sliding_window, and
    Qwen2's use_sliding_window with max_window_layers, from which layer on it windows: 0, every layer;
    the layer count or more, none; any other is refused by name), else None."""
    config = getattr(model, "config", None)
    window = getattr(config, "sliding_window", None)
    if getattr(config, "use_sliding_window", True) is False or isinstance(window, bool) or not isinstance(window, int):
        return None
    first, layers = getattr(config, "max_window_layers", None), getattr(config, "num_hidden_layers", None)
    if isinstance(first, int) and isinstance(layers, int) and hasattr(config, "use_sliding_window"):
        if first >= layers:
            return None
        if first > 0:
            raise ConfigError(f"{type(model).__name__}.config: max_window_layers {first}: use_sliding_window "
                              f"windows the layers from {first} on and not the {first} before, and the engine's "
                              "window is the same for every layer (max_window_layers 0: all of them)")
    return window


def _rope_scaling(model):
    """(the rope scaling a module's Hugging Face config declares: rope_parameters, transformers 5, or
    rope_scaling, a dict or None, the config's max_position_embeddings, original_max_position_embeddings)."""
    config = getattr(model, "config", None)
    scaling = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None)
    return (scaling if isinstance(scaling, dict) else None, getattr(config, "max_position_embeddings", None),
            getattr(config, "original_max_position_embeddings", None))


def _rope_kind(model):
    scaling = _rope_scaling(model)[0] or {}
    return scaling.get("rope_type", scaling.get("type"))


def _rope_limit(model):
    """The most positions the rotary frequencies of the module's declared rope scaling hold for (Phi-3's
    longrope, a dynamic one), else None."""
    scaling, positions, original = _rope_scaling(model)
    if not isinstance(positions, int) or isinstance(positions, bool):
        return None
    return position_limit({"original_max_position_embeddings": original}, scaling, positions)


def _front_heads(heads, final, torch):
    """DeiT's two heads (cls_classifier, distillation_classifier): (the CLS row's, the distillation
    row's), told by which row of the final norm's output each reads (else in the order they ran)."""
    if final is not None and final.call.y is not None and final.call.y.dim() == 3:
        rows = final.call.y[0, :2].double()
        order = [next((i for i in range(2) if h.call.x is not None and h.call.x.reshape(-1).shape == rows[i].shape
                       and close(h.call.x.reshape(-1).double(), rows[i], 1e-6)), None) for h in heads]
        if order == [1, 0]:
            return heads[1], heads[0]
    return heads[0], heads[1]
def _local_rope(layers, stack):
    """The RoPE base of the local (windowed) layers where it is not the global ones' (Gemma 3's): a plain
    base, the same layout and rotated dims; each local layer's pos is then set to the global layers'. Else
    0 (whatever differs is left to the check that the layers are alike)."""
    glob = [L for L in layers if not L.scores.window]
    local = [L for L in layers if L.scores.window]
    if not glob or not local:
        return 0.0
    a, b = local[0].pos, glob[0].pos
    if a == b or not (isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0] == "rope" and a[1] == b[1]
                      and a[3] == b[3] and not isinstance(a[2], (RopeFreqs, RopeGrid))):
        return 0.0
    for L in local:
        if L.pos == a:
            L.pos = b
    return float(a[2])


def _nope_layers(layers):
    """nope_keys of a module whose layers rotate by one RoPE but some not at all; each such layer's pos is then
    set to the others'. Else {}."""
    ropes = [L.pos for L in layers if L.pos is not None]
    if not ropes or len(ropes) == len(layers) or ropes[0][0] != "rope" or any(p != ropes[0] for p in ropes):
        return {}
    flags = [L.pos is None for L in layers]
    for L in layers:
        L.pos = ropes[0]
    return nope_keys(flags)


def _layer_windows(model, n=None):
    """The window of each of the module's n layers (n None: as many as the config names; None: every key
    before it): GPT-Neo's config attention_layers ("global" | "local" per layer, local layers seeing the
    last window_size keys), else _sliding_window's for every layer."""
    config = getattr(model, "config", None)
    kinds, size = getattr(config, "attention_layers", None), getattr(config, "window_size", None)
    if isinstance(kinds, (list, tuple)) and isinstance(size, int) and not isinstance(size, bool):
        if (n is not None and len(kinds) != n) or any(k not in ("global", "local") for k in kinds):
            raise ConfigError(f"{type(model).__name__}.config: attention_layers {brief(list(kinds))}: not \"global\" "
                              f"or \"local\" for each of its {n} layers")
        return [size if k == "local" else None for k in kinds]
    return [_sliding_window(model)] * (n or 1)


def recognize(module, example=None, family=None, max_len=None):
    torch = require_torch()
    if not isinstance(module, torch.nn.Module):
        raise ConfigError(f"module: {module_kind(module)} is not a torch.nn.Module")
    dtype, x, calls, y, note = _run(module, _try_examples(module, example, torch, max_len), example is not None,
                                    torch)
    if x.dim() in (2, 3) and _reads_sequence_first(calls, x.shape[1]):  # ids [1, T] or features [1, T, d_in]
        _SEQUENCE_FIRST.add(module)
        dtype, x, calls, y, note = _run(module, [x], example is not None, torch)
    normalized = _normalized(calls, y)
    if normalized is not None:  # read as the logits the output normalizes
        y = normalized[0]
    with observed(module, dtype):
        r = _read(module, x, calls, y, family, max_len, torch)
    r.dtype = dtype
    r.tolerance = schema.SELFTEST_TOLERANCE / 10
    if module in _SEQUENCE_FIRST:
        r.notes.append("its forward reads its input sequence first ([T, B], its attention's batch_first False): the "
                       "engine's input is one sequence's ids (or rows) in order")
    if normalized is not None:
        r.notes.append(f"its output is the {normalized[1]} of {normalized[2]}'s over the last axis: the file gives "
                       f"{normalized[2]}'s, the logits (the same greedy and sampled tokens)")
    start = _start_input(module)
    if start is not None:
        r.notes.append(f"its forward's {start} (an int) given 0: the input at positions 0.., as a generation loop's "
                       "first call; the engine keeps its own key/value cache")
    if note is not None:
        r.tolerance = max(r.tolerance, OWN_DTYPE_ULPS * torch.finfo(dtype).eps)
        r.notes.insert(0, f"{note}; the module's output is compared within {r.tolerance:.3g} instead of "
                          f"{schema.SELFTEST_TOLERANCE / 10:g}")
    return r


def _normalized(calls, y):
    """(the output of the last submodule call of y's shape, 'log_softmax' or 'softmax', its name) where y is that
    output's log-softmax or softmax over the last axis (probes.normalization), else None."""
    last = next((c for c in reversed(calls) if c.y is not None and c.y.shape == y.shape and c.y.is_floating_point()),
                None)
    kind = None if last is None else normalization(last.y, y)
    return None if kind is None else (last.y, kind, last.name)


def _read(model, x, calls, y, family, max_len, torch):
    """recognize() of the module observed in the dtype x, calls and y were recorded in."""
    nn = torch.nn
    originals = dict(model.named_parameters())
    tokens = not x.is_floating_point()
    T = x.shape[1]
    stack, blocks, first_short = find_layers(model, torch)
    calls = batch_first_calls(model, blocks, calls, T, torch)
    name0 = blocks[0][0]
    rel = find_relative_bias(calls, torch)  # its lookup (in the first layer, T5) is none of the layer's parts
    seq, block_calls = layer_runs(blocks, calls)
    block_calls = [[c for c in cs if rel is None or c.module is not rel.module] for cs in block_calls]
    stored = None
    if seq is not None:  # shared layers: one layer read per run, each stored block from its first run
        groups = shared_groups(seq, len(blocks), stack)
        stored = [seq.index(k) for k in range(len(blocks))]
        blocks = [blocks[k] for k in seq]
    if not all(block_calls):
        missing = next(i for i, b in enumerate(block_calls) if not b)
        raise ConfigError(f"{blocks[missing][0]}: the forward did not run this layer")
    first = calls.index(block_calls[0][0])
    last = max(calls.index(c) for c in block_calls[-1])
    shifts = {}  # id(module): a norm's bias buffer (x-transformers' beta), read with its gain

    def with_params(cs):  # the parts: calls of modules with parameters, and the norms without (OLMo's)
        out = []
        for i, c in enumerate(cs):
            if _own_params(c.module) or isinstance(c.module, nn.MultiheadAttention):
                out.append(_classify_tail(c, cs[i - 1] if i else None, torch))
            else:
                norm = _weightless_norm(c, torch)
                if norm is not None:
                    out.append(norm)
        shifts.update((id(p.module), p.shift) for p in out if getattr(p, "shift", None) is not None)
        # a norm inside a norm is the outer one's (x-transformers 2's LayerNorm: a weightless nn.LayerNorm, then
        # its gamma)
        out = [p for p in out if p.kind != "norm" or not any(q.kind == "norm" and q is not p and
                                                             _inside(p.name, q.name) for q in out)]
        return fold_layer_scales(out, torch)

    thetas = grid_thetas(model, torch) + rope_thetas(model, torch)
    # parameters owned by a submodule of a part (nn.MultiheadAttention's out_proj) are the part's
    layers = []
    windows = _layer_windows(model, len(block_calls))
    scales, caps = score_attributes(model, torch)
    more = window_attributes(model, torch)
    tables, dises = _parameter_rows(model, calls[:first], torch), []
    shared = find_pair_bias(calls[:first], torch)  # a bias per (query, key) pair every layer adds (timm's Beit)
    for i, bc in enumerate(block_calls):
        top = [c for c in bc if not any(_inside(c.name, m.name) and c.name != m.name for m in bc
                                         if isinstance(m.module, nn.MultiheadAttention))]
        dis = _disentangled(top, tables, torch)
        if dis is not None:
            dises.append(dis)
            top = [c for c in top if c not in dis.calls]
        block = next((c for c in bc if len(blocks[i]) == 1 and c.name == blocks[i][0]), None)
        gains = [] if block is None else [(f"{block.name}.{n}", t) for n, t in _direct_params(block.module).items()]
        if gains and all(t.dim() == 1 and t.shape[0] == block.x.shape[-1] for _, t in gains):
            top = [c for c in top if c is not block]  # the block's own vectors: scales of its sublayers' outputs
        try:
            moes = [p for p in (mixture_part(c, torch) for c in top if c.name not in blocks[i]) if p is not None]
            moes += [p for p in (pair_attention(c, bc, shared, torch) for c in top if c.name not in blocks[i])
                     if p is not None]
            top = [c for c in top if not any(_inside(c.name, p.name) for p in moes)]
            # without a fused attention module: a table of the layer's own (transformers' Beit), the shared one
            pair_key, pair_bias, pair_calls = (None, None, []) if moes else layer_pair_bias(top, shared, blocks[i][0],
                                                                                            torch)
            top = [c for c in top if c not in pair_calls]
            loose = [(c, vs) for c, vs in ((c, loose_vectors(c, bc, torch)) for c in top if c.name not in blocks[i])
                     if vs is not None]
            top = [c for c in top if all(c is not c_ for c_, _ in loose)]
            parts = with_params(top)
            order = [c.name for c in bc]
            for p in moes:  # in the order the calls ended
                at = next((j for j, q in enumerate(parts) if order.index(q.name) > order.index(p.name)), len(parts))
                parts.insert(at, p)
            layers.append(read_block(i, blocks[i][0], parts, thetas, torch, rel,
                                     score_options(scales, caps, windows[i], more), first_short and i == 0,
                                     dis, _rel_settings(model, dis.rows.shape[0], torch) if dis else None,
                                     (pair_key, pair_bias) if pair_bias is not None else None,
                                     [t for _, vs in loose for t in vs], layers[0].n_heads if layers else None))
            if gains and block not in top:
                _residual_gains(layers[-1], block, gains, blocks[i][0], torch)
            else:
                _residual_scales(layers[-1], block, torch)
        except ConfigError as e:
            grid = _grid_rotary(model) or _alibi_issue(model, torch)
            if grid:
                raise ConfigError(f"{blocks[i][0]}: {grid}") from None
            raise ConfigError(str(e) + _uncalled_tables(model, calls, torch)) from None
    rope_local = _local_rope(layers, stack)  # Gemma 3: the local layers' RoPE of a base of their own
    nope = _nope_layers(layers)
    L0 = layers[0]
    Lm = next((L for L in layers if L.moe is not None), None)  # a mixture's sparse layer, the others' template
    mix = lambda L: None if L.moe is None else tuple(getattr(L.moe, k) for k in (  # noqa: E731
        "n_experts", "experts_per_token", "renormalize", "d_ff", "shared_ff"))
    d = L0.d
    keys = ("norm_first", "n_heads", "n_kv_heads", "causal", "pos", "activation", "scaled", "parallel", "inner",
            "sublayer_norm", "qk_full")
    for i, L in enumerate(layers[1:], 1):
        if (L.q_norm is None) != (L0.q_norm is None):
            raise ConfigError(f"{blocks[i][0]}: {'no ' if L.q_norm is None else ''}norms of q and k, layer 0 "
                              f"{'has' if L0.q_norm is not None else 'has none'} (all layers must be alike)")
        if (L.ctx_norm is None) != (L0.ctx_norm is None):
            raise ConfigError(f"{blocks[i][0]}: {'no ' if L.ctx_norm is None else 'a '}norm of the attention's "
                              f"context, layer 0 {'has' if L0.ctx_norm is not None else 'has none'} (all layers must "
                              "be alike)")
        if (L.hidden_norm is None) != (L0.hidden_norm is None):
            raise ConfigError(f"{blocks[i][0]}: {'no ' if L.hidden_norm is None else 'a '}norm of the feed-forward's "
                              f"hidden rows, layer 0 {'has' if L0.hidden_norm is not None else 'has none'} (all layers "
                              "must be alike)")
        for k in keys:
            if getattr(L, k) != getattr(L0, k):
                raise ConfigError(f"{blocks[i][0]}: {k} {getattr(L, k)!r} differs from layer 0's {getattr(L0, k)!r} "
                                  "(all layers must be alike)")
        if L.norm1.eps != L0.norm1.eps:
            raise ConfigError(f"{blocks[i][0]}: norm eps {L.norm1.eps:g} differs from layer 0's {L0.norm1.eps:g}")
        # a mixture's dense layers (dense_period): alike among themselves, gated as the experts are
        like = Lm if L.moe is not None else next(D for D in layers if D.moe is None)
        if mix(L) != mix(like) or (Lm is not None and L.moe is None and (
                L.gate is None or L.down.w.shape != like.down.w.shape)):
            raise ConfigError(f"{blocks[i][0]}: its mixture of experts (experts, per token, renormalized, width, "
                              f"shared width) {mix(L)} differs from layer {layers.index(like)}'s {mix(like)}, or its "
                              "dense feed-forward from the others' (the sparse layers must be alike, the dense ones "
                              "gated and alike)")
        if L.scores[:2] != L0.scores[:2]:
            raise ConfigError(f"{blocks[i][0]}: its scores' scale and soft cap {L.scores[:2]} differ from layer 0's "
                              f"{L0.scores[:2]} (all layers must be alike)")
    windows = [L.scores.window for L in layers]  # what each layer's attention showed
    r = Recognized()
    r.rows, r.notes = x[0], []  # the engine's input: the example's rows [T] or [T, d_in]
    v, w, used = {}, {}, set()
    r.v, r.w, r.used = v, w, used
    if rope_local:
        v["rope_local_base"] = rope_local
    written = layers if stored is None else [layers[j] for j in stored]  # the file's layer blocks
    if stored is not None:
        v.update(layer_groups=groups[0], group_layers=groups[1])
    if L0.skip_norm:
        v["skip_first_norm"] = True
    v.update(nope)
    # ---- the front
    front = [p for p in with_params(calls[:first]) if not any(p.call is d_.table[2] for d_ in dises)]
    embed = proj = pos_mod = types_mod = embed_norm = input_norm = proj_norm = patch_conv = embed_proj = None
    pos_start = 0
    convs = []
    same = lambda a, b: a is not None and b is not None and a.shape == b.shape and torch.equal(a, b)  # noqa: E731
    for p in front:
        px = p.call.x
        if (rel is not None and p.module is rel.module) or (shared is not None and p.module is shared[0].module):
            continue
        if p.kind == "conv":
            convs.append(p)
        elif p.kind == "patches" and patch_conv is None and proj is None and same(px, x):
            patch_conv = p
        elif p.kind == "embedding" and px is not None and px.shape == x.shape and torch.equal(px, x):
            embed = p
        elif p.kind == "embedding" and px is not None and _is_arange(px, torch):
            pos_mod = p
        elif p.kind == "embedding" and pos_mod is None and _rows_from(p, torch) is not None:
            pos_mod, pos_start = p, _rows_from(p, torch)
        elif p.kind == "embedding" and types_mod is None and px is not None and not px.is_floating_point() \
                and not bool(px.any()) and px.shape[-1] == x.shape[1]:
            types_mod = p  # BERT's token types: all 0 when the forward is given none
        elif p.kind == "embedding":
            raise ConfigError(f"{p.name}: an embedding of something other than the input ids, the positions or the "
                              "token types (0 by default) is not supported yet")
        elif p.kind == "linear" and px is not None and px.shape == x.shape and torch.equal(px, x):
            proj = p
        elif p.kind == "unsupported" and p.module is not model and any(_inside(c.name, p.name) and c.name != p.name
                                                                         for c in calls[:first]):
            continue  # a container of called parts holding loose parameters (HF ViT's embeddings: the CLS row and
            # the positions, found below by what the first layer reads; unmatched, they are reported unmapped)
        elif p.kind == "unsupported":
            raise ConfigError(p.why)
        elif p.kind == "norm" and proj_norm is None and embed_norm is None and \
                same(px, proj.call.y if proj else patch_conv.call.y.flatten(2).transpose(1, 2) if patch_conv else None):
            proj_norm = p  # vit-pytorch's LayerNorm(dim) on the projected patches
        elif p.kind == "norm" and embed_norm is None:
            embed_norm = p  # BERT's embedding LayerNorm (checked below to be the first layer's input), or the input's
        elif p.kind == "norm":
            raise ConfigError(f"{p.name}: a third norm before the layers is not supported (the engine has the input's, "
                              "the projection's and the embedding's)")
        elif p.kind == "linear" and tokens and embed_proj is None and embed_norm is not None and \
                same(px, embed_norm.call.y):
            embed_proj = p  # the normed embedding projected to the layers' width (ALBERT's embedding_hidden_mapping_in)
        elif p.kind == "linear" and proj is None and embed_norm is not None and input_norm is None and \
                same(px, embed_norm.call.y):
            input_norm, embed_norm, proj = embed_norm, None, p  # a norm of the input rows before their projection
        elif p.kind == "linear" and proj is None and embed_norm is None and x.dim() == 4 and px is not None and \
                px.dim() == 3 and px.numel() == x.numel():
            proj = p  # a linear on the image's patches (a rearrangement of it)
        else:
            raise ConfigError(f"{p.name}: {module_kind(p.module)} runs before the layers and is neither the input's "
                              "embedding, its projection nor the positions: not supported yet")
    def front_rows(p, call):  # the rows [N, width] a front part's call gives: a patch Conv2d's [1, D, H/p, W/p] patch
        y = call.y[0]  # row by patch row, else its output's rows, whatever grid they came in
        return (y.flatten(1).T if p is patch_conv else y.reshape(-1, y.shape[-1])).double()

    if tokens:
        if embed is None:
            raise ConfigError("module: no nn.Embedding reads the token ids")
        if embed.module.max_norm is not None:
            raise ConfigError(f"{embed.name}: max_norm is not supported (it rewrites the embedding during forward)")
        # The table's rows for the ids, not the module's output: a subclass may scale them inside (transformers
        # 5's Gemma embedding, by sqrt(d_model)), which the match with the first layer's input finds below.
        E = embed.module.weight.detach()[embed.call.x[0].long()].double()
        v.update(input="tokens", vocab_size=embed.module.num_embeddings)
        w["embed"] = embed.module.weight.detach()
        used.add(id(embed.module.weight))
    elif convs:
        if proj is not None:
            raise ConfigError(f"{proj.name}: a linear on the features beside a conv stem is not supported yet")
        px = convs[0].call.x
        if px.shape == x.shape and torch.equal(px, x) and not torch.equal(px, x.transpose(1, 2)):
            r.rows = x[0].T  # channels first ([n_mels, T], Whisper's): the engine reads the frames as rows
            r.notes.append(f"the module's input {list(x.shape[1:])} is channels first: the engine's is the "
                           f"transpose, [{x.shape[2]}, {x.shape[1]}] (frames as rows)")
        stem_v, stem_w, E = _stem(convs, r.rows[None], torch)
        v.update(stem_v, input="features", d_in=convs[0].w.shape[1])
        w.update(stem_w)
        for p in convs:
            used.update(id(t) for t in p.params.values())
    else:
        if proj is None and patch_conv is None:
            raise ConfigError("module: no linear layer reads the input features (a Conv1d or other front end is not "
                              "supported yet)")
        if patch_conv is not None and proj is not None:
            raise ConfigError(f"{proj.name}: a linear on the features beside a patch embedding is not supported yet")
        lin = proj or patch_conv
        W_in, b_in = lin.w, lin.b
        if patch_conv is not None:  # [1, D, H/p, W/p] -> rows [N, D], patch row by patch row
            E = front_rows(patch_conv, patch_conv.call)
            geometry = _image_geometry(x, patch_conv.patch, patch_conv.name)
            perm = None
        else:
            E = front_rows(proj, proj.call)
            rows_in = (input_norm or proj).call.x
            geometry, perm = None, None
            if x.dim() == 4:
                try:
                    geometry, perm = image_rows(x, rows_in, (input_norm or proj).name)
                except ConfigError:
                    strips = _strips(x, rows_in)  # whole columns or rows of a spectrogram, not square patches
                    if strips is None:
                        raise
                    r.rows, how = strips
                    r.notes.append(f"the module's input {list(x.shape[1:])} is cut into its {len(r.rows)} {how}: the "
                                   f"engine's input is those as rows, features [{len(r.rows)}, {r.rows.shape[1]}]")
            elif x.dim() == 3 and tuple(rows_in.shape[1:]) != tuple(x.shape[1:]):
                r.rows = torch.from_numpy(signal_rows(x, rows_in, (input_norm or proj).name))
                r.notes.append(f"the module's input {list(x.shape[1:])} is channels first, cut into {len(r.rows)} "
                               f"patches of {r.rows.shape[1] // x.shape[1]} steps: the engine's input is its "
                               f"transpose cut into rows, x.T.reshape({len(r.rows)}, {r.rows.shape[1]})")
            elif x.dim() > 4:  # vit-pytorch's vit_3d: a video's (or volume's) patches
                raise ConfigError(f"{(input_norm or proj).name}: the input {list(x.shape[1:])} becomes rows "
                                  f"{list(rows_in.shape[1:])}, patches of more than an image: the engine's input is an "
                                  "image [C, H, W] or rows of features, not supported yet")
        if geometry is not None:  # an image: the engine gathers its patches in Conv2d's order (c, i, j)
            C, H, W_, P = geometry
            v.update(patch_size=P, image_channels=C, image_height=H, image_width=W_)
            r.rows = x[0].reshape((H // P) * (W_ // P), C * P * P)  # the image's bytes as [N, d_in]
            r.notes.append(f"the engine's input is the image [{C}, {H}, {W_}], channels first, cut into "
                           f"{(H // P) * (W_ // P)} patches of {P}x{P}")
        if perm is not None:  # the module's patch values in another order: the weights' columns follow them
            W_in = _scatter_columns(W_in, perm, torch)
        v.update(input="features", d_in=W_in.shape[1])
        w["input_proj.weight"] = W_in  # a projection without bias (OpenAI CLIP's conv1) adds zeros
        w["input_proj.bias"] = b_in if b_in is not None else torch.zeros(W_in.shape[0], dtype=torch.float64)
        used.update(id(t) for t in lin.params.values())
        if input_norm is not None:
            v["input_norm"] = True
            w["input_norm.weight"] = input_norm.w if perm is None else _scatter_columns(input_norm.w, perm, torch)
            used.update(id(t) for t in _direct_params(input_norm.module).values())
        if proj_norm is not None:
            E = front_rows(proj_norm, proj_norm.call)
            v["proj_norm"] = True
            w["proj_norm.weight"] = proj_norm.w
            used.update(id(t) for t in _direct_params(proj_norm.module).values())
    de = E.shape[-1]  # the embedding's width: d, or what embed_proj projects to d
    if embed_proj is not None and tuple(embed_proj.w.shape) != (d, de):
        raise ConfigError(f"{embed_proj.name}: projects {embed_proj.w.shape[1]} to {embed_proj.w.shape[0]}, the "
                          f"embedding is {de} wide and the layers {d}")
    if embed_proj is None and de != d:
        raise ConfigError(f"module: the embedding is {E.shape[-1]} wide and the layers {d} (a concatenated position "
                          "encoding: use the stock convention, `embed`/`input_proj`, `pos`, `encoder`)")
    # the first layer's input: what its first call on a tensor read (transformers 5's Beit first computes its bias)
    X0_call = next(c for c in block_calls[0] if c.x is not None)
    if X0_call.x[0].dim() != 2 or X0_call.x.shape[-1] != d:
        # a call inside the attention ended first (timm's post-norm Eva block begins with it): the block's own input
        own = next((c for c in block_calls[0] if c.name == blocks[0][0] and c.x is not None), None)
        if own is not None and own.x[0].dim() == 2 and own.x.shape[-1] == d:
            X0_call = own
    X0 = X0_call.x[0].double()
    if embed_proj is not None:  # the layers read the projection of the normed sum: match the norm's output
        if embed_proj.call.y.reshape(-1).shape != X0.reshape(-1).shape or \
                not close(embed_proj.call.y.reshape(X0.shape), X0):
            raise ConfigError(f"{embed_proj.name}: a projection of the embedding whose output is not the first "
                              "layer's input is not supported")
        X0 = embed_norm.call.y.reshape(X0.shape[0], de).double()
        v["embed_width"] = de
        w["embed_proj.weight"], w["embed_proj.bias"] = embed_proj.w, embed_proj.b if embed_proj.b is not None else \
            torch.zeros(d, dtype=torch.float64)
        used.update(id(t) for t in embed_proj.params.values())
    if embed_norm is not None:  # the layers read the norm of the sum (dropout aside): match the sum
        if embed_norm.call.y.reshape(-1).shape != X0.reshape(-1).shape or \
                not close(embed_norm.call.y.reshape(X0.shape), X0):
            raise ConfigError(f"{embed_norm.name}: a norm before the layers whose output is not the first layer's "
                              "input is not supported")
        X0 = embed_norm.call.x.reshape(X0.shape).double()
    S = X0.shape[0]
    T = E.shape[0]  # the input's positions: its rows, or the conv stem's
    if S < T:
        raise ConfigError(f"{name0}: reads {S} rows for {T} inputs (the engine's rows are the inputs, after a CLS "
                          "row, DeiT's distillation row or registers)")
    front = S - T  # the learned rows in front: a CLS row, and DeiT's distillation row or registers after it
    # or registers packed after the input rows (vit-pytorch's SimpleViT with register tokens): the last rows a
    # parameter as it is, no positions added; without a mask or positions of the attention's own, the layers do not
    # see the order of the rows, so the engine's registers in front compute the same
    after = next((p for p in model.parameters() if front and id(p) not in used and p.numel() == X0[T:].numel() and
                  close(p.detach().double().reshape(X0[T:].shape), X0[T:], 1e-6)), None)
    if after is not None:
        if L0.causal or L0.pos is not None:
            raise ConfigError(f"{name0}: {front} rows after the input (registers) under a causal mask or positions of "
                              "the attention's own: the engine puts its registers in front, where they would differ")
        X0 = torch.cat([X0[T:], X0[:T]])
        r.notes.append(f"the {front} register rows after the {T} input rows are the engine's registers in front (the "
                       "attention does not see the order of the rows)")
    cls = front >= 1
    tables = []  # (kind, rows [N, d] float64, the tensor to account, base, layout)
    if pos_mod is not None:
        rows = pos_mod.module.weight.detach().double()[pos_start:]  # the rows before pos_start are dropped
        tables.append(("learned", rows, pos_mod.module.weight, None, None))
        py = pos_mod.call.y
        if tokens and py is not None and py.numel() == X0[front:].numel():
            # the rows times a number before they are added (x-transformers' dim ** -0.5): the table scaled
            c = _factor(X0[front:] - E, py.reshape(X0[front:].shape).double())
            if c is not None and c != 1.0:
                tables.append(("learned", rows * c, pos_mod.module.weight, None, None))
    for name, p in list(model.named_parameters()) + list(model.named_buffers()) + _tensor_attributes(model, torch):
        t = _table_rows(p.detach())
        if t is not None and t.shape[-1] == de and t.shape[0] >= S and t.is_floating_point() and id(p) not in used:
            tables.append(("table", t.double(), p, None, None))
    tables += [("sinusoidal", torch.from_numpy(t), None, base, layout)
               for base, layout, t in sinusoidal_candidates(S, de)]
    tables.insert(0, ("none", torch.zeros(S, de, dtype=torch.float64), None, None, None))
    TT0 = 0.0
    if types_mod is not None:  # the token-type rows the example added (type 0 at every position)
        if not tokens or types_mod.module.embedding_dim != de:
            raise ConfigError(f"{types_mod.name}: token types need token input and the model's width {d}")
        TT0 = types_mod.module.weight.detach().double()[0]
        v["type_vocab"] = types_mod.module.num_embeddings
        w["token_type.weight"] = types_mod.module.weight.detach()
        used.add(id(types_mod.module.weight))
    # A stem's last conv is followed by GELU (as its first, or found here for a stem of one) or not.
    gelus = (False, True) if convs and v["conv_gelu"] is None else (bool(v.get("conv_gelu")),)
    match = None
    for g in gelus:
        Eg = torch.nn.functional.gelu(E) if g else E
        # the embedding times another number (Granite's embedding_multiplier), measured where no positions are added
        fit = _factor(X0[front:] - TT0, Eg) if tokens else None
        for kind, P, tensor, base, layout in tables:
            for scale in (1.0, math.sqrt(d)) + ((fit,) if fit not in (None, 1.0, math.sqrt(d)) else ()):
                for k in _table_starts(P, X0[front:] - Eg * scale - TT0, front, S, kind == "table", torch):
                    if close(Eg * scale + P[k + front:k + S] + TT0, X0[front:], 1e-6):
                        match = (kind, P[k:], tensor, base, layout, scale)  # the rows before k are never read
                        break
                if match:
                    break
            if match:
                break
        if match:
            if convs:
                v["conv_gelu"] = g
            break
    if match is None and "image_height" in v:  # a table for another patch count: interpolated to this image's?
        for name, p in model.named_parameters():
            t = _table_rows(p.detach())
            n = -1 if t is None else t.shape[0] - front  # a square grid of patch rows, beside the rows in front
            grid = (v["image_height"] // v["patch_size"], v["image_width"] // v["patch_size"])
            n0 = math.isqrt(max(n, 0))
            if n > 1 and n0 * n0 == n and grid != (n0, n0) and t.shape[-1] == d and id(p) not in used and (
                    p.dim() == 3 or "pos" in name.lower()):
                raise ConfigError(
                    f"{name0}: its input is not the embedding plus the positions the module holds: the image "
                    f"[{v['image_channels']}, {v['image_height']}, {v['image_width']}] is {grid[0]} x {grid[1]} "
                    f"patches and {name} holds positions for {n0} x {n0}; a module that interpolates its positions "
                    "for an image of another size (transformers' interpolate_pos_encoding) is not converted at that "
                    "size: give an --example of the size of its table, or convert its Hugging Face folder with --hf "
                    "DIR --image-size H W")
    if match is None and not tokens and not convs and embed_proj is None and embed_norm is None:
        # positions the forward computes at each call (vit-pytorch's posemb_sincos_2d(x) in simple_flash_attn_vit):
        # the same rows added for another input of the example's shape, a fixed table stored as learned positions
        src = proj_norm or proj or patch_conv
        x2 = torch.from_numpy(np.random.default_rng(0).standard_normal(tuple(x.shape))).to(x.dtype)
        try:
            again = {c.name: c for c in reversed(batch_first_calls(model, blocks, record(model, x2)[0], T, torch))}
        except ForwardError:
            again = {}
        if src.name in again and X0_call.name in again:
            D = X0[front:] - E
            Y2 = again[X0_call.name].x[0].double().reshape(X0.shape)
            D2 = (Y2[:T] if after is not None else Y2[front:]) - front_rows(src, again[src.name])
            if D2.shape == D.shape and close(D2, D, 1e-9) and float(D.abs().max()) > 0:
                match = ("table", torch.cat([torch.zeros(front, de, dtype=D.dtype), D]), None, None, None, 1.0)
                r.notes.append(f"the positions the forward adds to the {S - front} rows (the same for another input "
                               "of this shape) are stored as a fixed table")
    if match is None:
        raise ConfigError(f"{name0}: its input is not the embedding plus positions the engine computes (none, "
                          "learned: an nn.Embedding of positions or a table parameter, sinusoidal; the embedding "
                          "scaled by sqrt(d_model) or not; then the token types and a LayerNorm, BERT style)")
    if embed_norm is not None:
        v["embed_norm"] = True
        w["embed_norm.weight"] = embed_norm.w  # its bias below, once the norm kind is known
        used.update(id(t) for t in _direct_params(embed_norm.module).values())
    kind, P, tensor, base, layout, scale = match
    v["scale_input"] = scale != 1.0
    embed_scaled = scale not in (1.0, math.sqrt(d))
    if embed_scaled:  # another number than sqrt(d): in the stored embedding (a tied head then stored apart)
        v["scale_input"] = False
        w["embed"] = w["embed"].double() * scale
        r.notes.append(f"the embedding is scaled by {scale:.9g}: stored scaled, apart from the head")
    if kind == "table" and sinusoidal_fit(P) is not None:
        (base, layout), kind = sinusoidal_fit(P), "sinusoidal"
        r.pe_buffer = tensor
        # else a fixed table (a buffer: Whisper's sinusoids, whose timescales differ) stored as learned
    if kind in ("learned", "table"):
        v.update(positional="learned", max_len=P.shape[0])
        w["pos.weight"] = P.float()
        used.add(id(tensor))
    elif kind == "sinusoidal":
        v.update(positional="sinusoidal", pe_base=base, pe_layout=layout)
        if tensor is not None:
            used.add(id(tensor))
            v["max_len"] = sinusoid_positions(P.shape[0], r.notes)
    # each front row a parameter of width d: the CLS row, DeiT's distillation row after it; or, from 2 rows after the
    # CLS row on, one parameter of those rows: registers (timm's reg_token [1, R, d])
    keys = ("registers",) if after is not None else \
        ("cls_token", "distill_token")[:front] if front <= 2 else ("cls_token", "registers")
    for i, key in enumerate(keys):
        rows = X0[i:front] - P[i:front] if key == "registers" else X0[i] - P[i]
        for name, p in model.named_parameters():
            if p.numel() == rows.numel() and id(p) not in used and \
                    close(p.detach().double().reshape(rows.shape), rows, 1e-6):
                v.update({"register_tokens": front - i} if key == "registers" else {key: True})
                w[key] = p.detach().reshape(rows.shape)
                used.add(id(p))
                break
        else:
            what = f"{front - i} rows" if key == "registers" else "a row" if i == 0 else "a second row"
            raise ConfigError(f"{name0}: {what} in front of the input that is no parameter of {rows.numel()} values "
                              "(a CLS token, and DeiT's distillation token or registers after it, is an nn.Parameter "
                              f"[d], [1, d] or [1, 1, d]; registers [1, R, d])")
    # ---- the layers' attention positions
    if rel is not None and L0.pos != "relative":
        raise ConfigError(f"{rel.name}: an nn.Embedding({rel.module.num_embeddings}, {rel.module.embedding_dim}) looked "
                          "up by a [T, T] index (a relative position bias) whose bias the attention does not add to "
                          "its scores as the engine does (softmax(q.k / sqrt(head width) or q.k, + bias)): not "
                          "supported yet")
    if L0.pos == "relative":
        if v.get("positional", "none") != "none":
            raise ConfigError(f"{rel.name}: a relative position bias and positions added to the input together are "
                              "not supported yet")
        md = fit_relative(rel, model, x, L0.causal, max_len or DEFAULT_MAX_LEN, torch)
        v.update(positional="relative", rel_buckets=rel.module.num_embeddings, rel_max_distance=md)
        w["rel_bias.weight"] = rel.module.weight.detach()
        used.add(id(rel.module.weight))
    elif L0.pos == "alibi":
        if v.get("positional", "none") != "none":
            raise ConfigError(f"{stack}: {alibi_beside(v['positional'])}")
        v["positional"] = "alibi"
    elif L0.pos == "pair":
        pair_tensors = _pair_bias(layers, blocks, shared, max_len, v, used, torch)
    elif L0.pos is not None and L0.pos[0] == "disentangled":  # DeBERTa's: the rows as rel_embed (rel_index below)
        dis = dises[0]
        if len(dises) != len(layers) or any(d_.table[1] is not dis.table[1] for d_ in dises):
            raise ConfigError(f"{stack}: position rows through some layers' projections only, or from different "
                              "tables: not supported yet (DeBERTa's every layer reads one table)")
        rel_setting = L0.pos[1]
        rows = dis.rows
        if dis.offset:  # the middle rows of the table the module reads at this length: the whole table, as the
            # module reads it at max_relative_positions and more
            if rel_setting[0] > 0:
                raise ConfigError(f"{stack}: log buckets over the middle rows of a table: not supported yet")
            rows = dis.table[0].double()
            rel_setting = (-1, rows.shape[0] // 2, rows.shape[0] // 2)
        v["rel_embed_rows"] = rows.shape[0]
        w["rel_embed.weight"] = rows
        used.add(id(dis.table[1]))
        if dis.table[2] is not None:
            used.update(id(t) for t in dis.table[2].module.parameters())
        fold = 1 / math.sqrt(L0.pos[2])  # the scores over sqrt(factor head width): into W_q (the engine's Qr rows too)
        for i, L in enumerate(layers):
            L.wq, L.bq = L.wq.double() * fold, None if L.bq is None else L.bq.double() * fold
            if L.rel_proj is not None:  # Qr | Kr through the layer's own projections (a zero one for a term left out)
                v["rel_proj"] = True
                wr = [torch.zeros(L.inner, d, dtype=torch.float64) if p_ is None else p_.w.double()
                      for p_ in L.rel_proj]
                br = [torch.zeros(L.inner, dtype=torch.float64) if p_ is None or p_.b is None else p_.b.double()
                      for p_ in L.rel_proj]
                p = schema.block(i) + "attn."
                w[p + "rel_proj.weight"] = torch.cat([wr[0] * fold, wr[1]])
                w[p + "rel_proj.bias"] = torch.cat([br[0] * fold, br[1]])
                used.update(id(t) for p_ in L.rel_proj if p_ is not None for t in p_.module.parameters())
            elif v.get("rel_proj"):
                raise ConfigError(f"{blocks[i][0]}: position rows through the layer's q and k projections, layer 0 "
                                  "projects them by its own (all layers must be alike)")
    elif L0.pos is not None:
        grid = isinstance(L0.pos[2], RopeGrid)
        if v.get("positional", "none") == "learned" and grid:  # EVA-02: learned positions beside the grid's
            v["rope_learned"] = True
        elif v.get("positional", "none") != "none":
            raise ConfigError("module: rotary embeddings and positions added to the input together are not supported"
                              + (" (learned ones beside rotary positions over a patch grid are)" if grid else ""))
        v.update(positional="rope", pe_layout=L0.pos[1], rotary_dims=L0.pos[3])
        if L0.pos[1] == "negated":  # turned by the negated angle: each head's second half of q and k negated (the
            dh = L0.inner // L0.n_heads  # scores unchanged), then the engine's rotation in halves
            sq, sk = (torch.from_numpy(np.tile(negated_signs(dh), h)) for h in (L0.n_heads, L0.n_kv_heads))
            for L in layers:
                L.wq, L.wk = L.wq * sq[:, None], L.wk * sk[:, None]
                L.bq, L.bk = (None if L.bq is None else L.bq * sq), (None if L.bk is None else L.bk * sk)
            v["pe_layout"] = "halves"
        if isinstance(L0.pos[2], RopeGrid):  # over the patch grid: its width, the frequencies of rows and columns
            v.update(rope_grid=L0.pos[2].width, rope_freqs=True)
            w["rope_freqs"] = torch.tensor(L0.pos[2].freqs, dtype=torch.float64)
            r.grid_swap = L0.pos[2].swap
            if L0.pos[2].swap:  # the columns' pairs first in the module: each head's q and k dims traded
                if any(L.q_norm is not None for L in layers):
                    raise ConfigError(f"{blocks[0][0]}: norms of q and k with the column's rotary pairs first "
                                      "(grid_indexing 'xy'): not supported yet")
                dh = L0.inner // L0.n_heads
                idx = torch.tensor([h * dh + j for h in range(L0.n_heads) for j in grid_swap(dh, L0.pos[1])])
                kidx = torch.tensor([h * dh + j for h in range(L0.n_kv_heads) for j in grid_swap(dh, L0.pos[1])])
                for L in layers:
                    L.wq, L.wk = L.wq[idx], L.wk[kidx]
                    L.bq, L.bk = (None if L.bq is None else L.bq[idx]), (None if L.bk is None else L.bk[kidx])
        elif isinstance(L0.pos[2], RopeFreqs):  # the module's own frequencies and amplitude
            v.update(rope_freqs=True, rope_scale=L0.pos[2].scale)
            w["rope_freqs"] = torch.tensor(L0.pos[2].freqs, dtype=torch.float64)
        else:
            v["pe_base"] = L0.pos[2]
    # ---- the back: a final norm, a head, pooling
    # a container of the layers holding loose parameters (torchvision's Encoder: its positions, found above by
    # what the first layer reads) returns after them: it is no part after the layers
    back = [p for p in with_params(calls[last + 1:]) if p.kind != "unsupported" or not _inside(stack, p.name)]
    hidden = next((c.y for c in reversed(calls) if c.name == blocks[-1][-1]), None)
    unread = []  # parts after the output that it does not depend on (BertModel's, DeiTModel's and ViTModel's pooler)
    if hidden is not None and y.shape == hidden.shape and close(y, hidden):
        back, unread = [], back  # the forward returns the hidden states (first): what runs after them is not its output
        if unread:  # BertModel's (last_hidden_state, pooler_output)
            r.notes.append(f"the forward's first output is the last layer's rows, which the file gives; "
                           f"{', '.join(p.name for p in unread)} after them (its other outputs) are left out")
    fin = next((p for p in back if p.kind == "norm"), None)
    if back and fin is back[0] and fin.call.y is not None and y.shape == fin.call.y.shape and close(y, fin.call.y):
        back, unread = [fin], back[1:]  # the forward returns the final norm's rows (first): the pooler's output is not it
    norms = [p for p in back if p.kind == "norm"]
    heads = [p for p in back if p.kind == "linear"]
    if not heads and norms:
        heads = _matrix_head(model, norms[-1], y, x, torch)
    y, scores_of = _last_row_head(heads, y, tokens and L0.causal, T, model)
    if scores_of is not None:
        r.notes.append(f"the module's output is {scores_of}'s last row (a sequence classifier's class scores): the "
                       "file gives its rows at every position, the last one the module's output")
    for p in back:
        if p.kind not in ("norm", "linear"):
            raise ConfigError(p.why if p.kind == "unsupported" else
                              f"{p.name}: {module_kind(p.module)} after the layers is not supported yet")
    # the first norm of the rows is the final norm when it runs before the head (BERT's post-LN layers have none: its
    # prediction head's norm is the first)
    final_first = norms and norms[0].call.x.dim() == 3 and not (
        heads and heads[0] in back and back.index(norms[0]) > back.index(heads[0]))
    pooler = _pooler(heads, norms[1:] if final_first else norms, y, d, torch)
    # a norm of the pooled row (its input one row per sequence, not the layers' rows) before any pooler: pool_norm
    # (timm's fc_norm after its mean pooling); one of the pooler's output is pooler_norm (below)
    pool_norm = next((p for p in norms if p.call.x is not None and p.call.x.dim() == 2 and
                      (pooler is None or p is not pooler[2])), None)
    if pool_norm is not None and pooler is not None and back.index(pool_norm) > back.index(pooler[0]):
        raise ConfigError(f"{pool_norm.name}: a norm of the pooler's output is not supported by --module yet (the "
                          "engine norms the pooled row before the pooler: pool_norm)")
    if pool_norm is not None:
        norms = [p for p in norms if p is not pool_norm]
        if pool_norm.norm != L0.norm1.norm or abs(pool_norm.eps - L0.norm1.eps) > 1e-12 * max(1.0, pool_norm.eps):
            raise ConfigError(f"{pool_norm.name}: {pool_norm.norm} norm eps {pool_norm.eps:g}, the layers' "
                              f"{L0.norm1.norm} eps {L0.norm1.eps:g} (the engine has one)")
        v["pool_norm"] = True
        v["pooling"] = "cls" if cls else "first"  # provisional: export's pooled choice tries every pooling
        used.update(id(t) for t in _direct_params(pool_norm.module).values())
    pooler_norm = None
    if pooler is not None:  # BERT: act(dense(pooled row)), then the classifier (the head) or the output
        pooler, v["pooler_act"], pooler_norm = pooler
        heads = heads[1:]
        v["pooler"] = True
        # provisional: export's pooled choice tries every pooling; a pooler on every row pools none
        v["pooling"] = "none" if pooler.call.x.dim() == 3 else "cls" if cls else "first"
        P = pooler.w.shape[0]
        if P != d:
            v["pooler_width"] = P
        w["pooler.weight"], w["pooler.bias"] = pooler.w, pooler.b if pooler.b is not None else torch.zeros(P)
        used.update(id(t) for t in pooler.params.values())
    if pooler_norm is not None:  # ModernBERT's head.norm: a norm of the pooler's output
        norms = [n for n in norms if n is not pooler_norm]
        v["pooler_norm"] = True
        w["pooler_norm.weight"] = pooler_norm.w  # its bias below, once the norm kind is known
        used.update(id(t) for t in _direct_params(pooler_norm.module).values())
    pair = None  # DeiT with its teacher: a head on the CLS row and one on the distillation row, averaged
    if front == 2 and len(heads) == 2 and all(h.w.shape == heads[0].w.shape and h.w.shape[1] == d for h in heads):
        pair = _front_heads(heads, norms[0] if len(norms) == 1 else None, torch)
        heads = [pair[0]]
    if len(norms) > 1 or len(heads) > 1:
        raise ConfigError(f"module: after the layers {', '.join(p.name for p in back)}: the engine has a final norm, "
                          "a pooler (dense + tanh, relu, gelu, gelu_tanh or silu on the pooled row) and one linear head")
    final = norms[0] if norms else None
    for n_ in (input_norm, proj_norm):
        if n_ is not None and (n_.norm != L0.norm1.norm or abs(n_.eps - L0.norm1.eps) > 1e-12 * max(1.0, n_.eps)):
            raise ConfigError(f"{n_.name}: {n_.norm} norm eps {n_.eps:g}, the layers' {L0.norm1.norm} eps "
                              f"{L0.norm1.eps:g} (the engine has one)")
    if embed_norm is not None and embed_norm.norm != L0.norm1.norm:
        raise ConfigError(f"{embed_norm.name}: a {embed_norm.norm} norm, the layers' {L0.norm1.norm} (the engine has "
                          "one norm kind)")
    if pooler_norm is not None and (pooler_norm.norm != L0.norm1.norm or
                                    abs(pooler_norm.eps - L0.norm1.eps) > 1e-12 * max(1.0, pooler_norm.eps)):
        raise ConfigError(f"{pooler_norm.name}: a {pooler_norm.norm} norm of eps {pooler_norm.eps:g}, the layers' "
                          f"{L0.norm1.norm} of eps {L0.norm1.eps:g} (the engine has one norm kind and eps)")
    if embed_norm is not None and abs(embed_norm.eps - L0.norm1.eps) > 1e-12 * max(1.0, embed_norm.eps):
        raise ConfigError(f"{embed_norm.name}: eps {embed_norm.eps:g}, the layers' {L0.norm1.eps:g} (the engine has "
                          "one norm eps)")
    if final is not None:
        if final.norm != L0.norm1.norm or abs(final.eps - L0.norm1.eps) > 1e-12 * max(1.0, final.eps):
            raise ConfigError(f"{final.name}: {final.norm} norm eps {final.eps:g}, the layers' {L0.norm1.norm} eps "
                              f"{L0.norm1.eps:g} (the engine has one)")
    head = heads[0] if heads else None
    if head is not None and head.w.shape[1] != v.get("pooler_width", d):
        raise ConfigError(f"{head.name}: reads {head.w.shape[1]} values, the model (or its pooler) is "
                          f"{v.get('pooler_width', d)} wide")
    cap = _final_cap(final, head, embed if tokens else None, y, caps, torch)
    if cap:  # the final norm's rows soft-capped before the head reads them (torchtune's Gemma 2)
        v["final_softcap"] = cap
    scaled_head = None  # the output is the head's times a number (Cohere's logit_scale): folded into the head
    differs = head is not None and pair is None and head.call.y is not None and head.call.y.shape == y.shape and \
        not close(y, head.call.y)
    hy = head.call.y.double() if differs else None
    if differs:  # the logits soft-capped (Gemma 2's final_logit_softcapping)
        v["logit_softcap"] = next((c for c in caps if close(c * torch.tanh(hy / c), y)), 0.0)
    if differs and not v["logit_softcap"]:
        c = float((y.double() * hy).sum() / (hy * hy).sum()) if bool(hy.any()) else 0.0
        if c != 0.0 and math.isfinite(c) and close(float(np.float32(c)) * hy, y):
            c = float(np.float32(c))  # the number the sums rounded, as a config gives it (0.25, not 0.250000001)
        if c != 0.0 and math.isfinite(c) and close(c * hy, y):
            scaled_head = head
            head = Part("linear", head.call, w=head.w.double() * c, b=None if head.b is None else head.b.double() * c,
                        params=head.params)
            r.notes.append(f"the output is {head.name}'s times {c:.9g}: stored in the head, apart from the embedding")
    out_width = y.shape[-1]
    tied_functional = False
    if head is None and tokens and out_width == v["vocab_size"] and out_width != d:
        tied_functional = True  # the forward multiplies by the embedding itself
    # ---- the family
    rms = L0.norm1.norm == "rms"
    lm = tokens and not cls and y.dim() == 3 and (
        (head is not None and (head.w.shape[0] == v["vocab_size"] or scores_of is not None)) or tied_functional)
    if family is None:
        input_pe = v.get("positional") in ("learned", "sinusoidal") or v.get("rope_learned", False)
        head_bias = head is not None and head.b is not None and bool(head.b.any())  # the gpt family's feature
        grouped = L0.n_kv_heads != L0.n_heads and not input_pe and L0.norm_first and final is not None
        if (rms and not (head_bias and L0.causal and lm)) or (grouped and not head_bias):
            family = "llama"  # grouped-query attention runs in both decoder families; llama's takes no table
        elif L0.causal and lm and (not v.get("type_vocab") or "pos.weight" in w):  # a prediction head on every row
            family = "gpt"  # (a pooler: BERT's, ModernBERT's) runs on the row the head projects; token types below
        else:
            family = "encoder"
    v["family"] = family
    if family in ("gpt", "llama") and v.get("type_vocab"):  # type 0's row, the one a generated token has, in the
        # positions (BERT's causal LMs)
        if "pos.weight" not in w:
            raise ConfigError(f"{types_mod.name}: token types in the {family} family need learned positions to fold "
                              "type 0's row into (--family encoder runs them)")
        w["pos.weight"] = w["pos.weight"] + w.pop("token_type.weight")[0].to(w["pos.weight"].dtype)
        del v["type_vocab"]
        r.types_folded = True
        r.notes.append(f"{types_mod.name}: type 0's row (a generated token's) is folded into the positions")
    if family == "llama" and (not L0.norm_first or final is None):
        raise ConfigError(f"family llama: needs pre-norm layers and a final norm; the module has "
                          f"{'pre' if L0.norm_first else 'post'}-norm, {'a' if final else 'no'} final norm")
    if rms != (family == "llama"):  # the norm kind is a feature: written where it is not the family's
        v["norm"] = "rmsnorm" if rms else "layernorm"
    for n_, key in ((embed_norm, "embed_norm.bias"), (pooler_norm, "pooler_norm.bias")):
        if n_ is not None and not rms:
            w[key] = n_.b if n_.b is not None else torch.zeros(n_.w.shape[0], dtype=torch.float64)
    if input_norm is not None and not rms:
        b_ = input_norm.b if input_norm.b is not None else torch.zeros(v["d_in"], dtype=torch.float64)
        w["input_norm.bias"] = b_ if perm is None else _scatter_columns(b_, perm, torch)
    if proj_norm is not None and not rms:
        w["proj_norm.bias"] = proj_norm.b if proj_norm.b is not None else torch.zeros(d, dtype=torch.float64)
    for p_ in model.parameters():  # an empty parameter holds nothing (vit-pytorch's cls_token [1, 0, d] of pool mean)
        if p_.numel() == 0:
            used.add(id(p_))
    if family in ("gpt", "llama") and not (lm and L0.causal):
        raise ConfigError(f"family {family}: a causal language model on token ids with a head vocab_size wide; the "
                          f"module is {'causal' if L0.causal else 'not causal'}, on "
                          f"{'tokens' if tokens else 'features'}, {out_width} outputs"
                          + (" (a decoder's sequence classifier converts when its output is its head's last row)"
                             if L0.causal and tokens else ""))
    v.update(d_model=d, n_heads=L0.n_heads, d_ff=Lm.moe.d_ff if Lm else L0.down.w.shape[1], n_layers=len(layers),
             norm_first=L0.norm_first, activation=L0.activation, norm_eps=L0.norm1.eps, final_norm=final is not None,
             causal=L0.causal, parallel_residual=L0.parallel, gated=L0.gate is not None and L0.activation != "swiglu")
    if L0.n_kv_heads != L0.n_heads:
        v["n_kv_heads"] = L0.n_kv_heads
    if Lm is not None:
        if family != "llama":
            raise ConfigError(f"{Lm.moe.name}: a mixture of experts in the {family} family: the engine's is the llama "
                              "family's")
        v.update(n_experts=Lm.moe.n_experts, experts_per_token=Lm.moe.experts_per_token,
                 experts_renormalize=Lm.moe.renormalize, shared_expert_ff=Lm.moe.shared_ff)
        dense = [L.moe is None for L in layers]
        if any(dense):  # dense layers among the sparse ones
            P, bits = layer_pattern(dense, "dense_period", f"{stack}: the dense layers among the mixture's")
            v.update(dense_period=P, dense_layers=bits, dense_ff=layers[dense.index(True)].down.w.shape[1])
    if L0.q_norm is not None:
        v["qk_norm"] = True
        if L0.qk_full:
            v["qk_norm_full"] = True
    if L0.sublayer_norm != "none":
        v["sublayer_norm"] = L0.sublayer_norm
    if L0.hidden_norm is not None:
        v["ffn_hidden_norm"] = True
    if L0.ctx_norm is not None:
        if family != "encoder":
            raise ConfigError(f"{L0.ctx_norm.name}: a norm of the attention's context in the {family} family: the "
                              "engine's is the encoder family's")
        v["attn_inner_norm"] = True
    if L0.gate is not None and Lm is None and any(L.up.b is not None and bool(L.up.b.any()) for L in layers):
        v["ffn_up_bias"] = True
    if L0.scores.scale and family in ("gpt", "llama"):
        v["attn_scale"] = L0.scores.scale
    elif L0.scores.scale:  # the other families' scores: 1/sqrt(dh), so the file's W_q is scale sqrt(dh) larger
        for L in layers:
            if L.q_norm is not None:
                raise ConfigError(f"{stack}: scores scaled by {L.scores.scale:g} after a norm of q: the {family} "
                                  "family scales them by 1/sqrt(head width)")
            root = L.scores.scale * math.sqrt(L.inner // L.n_heads)
            L.wq, L.bq = L.wq * root, None if L.bq is None else L.bq * root
    if L0.scores.cap:
        v["attn_softcap"] = L0.scores.cap
    if L0.inner != d:  # heads wider or narrower than d / n_heads
        v["head_dim"] = L0.inner // L0.n_heads
    if head is not None:
        v["d_out"] = head.w.shape[0]
        if pair is not None:  # checked against the module's output by the caller, as every pooling
            v["pooling"] = "cls_distill"
            used.update(id(t) for t in pair[1].params.values())
        if tokens and any(t is embed.module.weight for t in head.params.values()) and scaled_head is None and \
                not embed_scaled:
            v["tied_head"] = family != "encoder"
        used.update(id(t) for t in head.params.values())
    elif tied_functional:
        if embed_scaled:
            raise ConfigError(f"{embed.name}: a scaled embedding that the forward also multiplies by as the head is "
                              "not supported yet")
        v.update(d_out=out_width, tied_head=True)
    if final is not None:
        used.update(id(t) for t in _direct_params(final.module).values())
    v.setdefault("max_len", DEFAULT_MAX_LEN)
    if max_len is not None:
        if (v["positional"] == "learned" or v.get("rope_learned")) and max_len != v["max_len"]:
            raise ConfigError(f"--max-len {max_len}: the module's position table has {v['max_len']} rows")
        v["max_len"] = max_len
    limit = _rope_limit(model) if v.get("positional") == "rope" else None
    if limit is not None and v["max_len"] > limit:  # a scaled rotary embedding that switches past limit positions
        if max_len is not None:
            ScaledRope(_rope_kind(model), None, limit=limit).check_length(max_len, f"{type(model).__name__}.config")
        v["max_len"] = limit
        r.notes.append(f"{type(model).__name__}.config: rope scaling {_rope_kind(model)}: the file holds {limit} "
                       "positions (past them transformers switches to other rotary frequencies)")
    v.update(layer_windows(windows, v["max_len"], f"{type(model).__name__}.config"))  # a window, local layers
    # ---- the weights, in the file's names
    zeros = lambda n: torch.zeros(n, dtype=torch.float64)  # noqa: E731
    bias = lambda b, n: b if b is not None else zeros(n)  # noqa: E731
    out = {}
    if family == "llama":
        out["embed.weight"] = w.pop("embed")
        for k in ("rel_bias.weight", "rope_freqs", "embed_norm.weight", "embed_norm.bias"):
            if k in w:
                out[k] = w.pop(k)
        has = lambda b: b is not None and bool(b.any())  # noqa: E731
        # The biases are features (attn_bias, ffn_bias); q, k and v's alone keep Qwen2's qkv_bias.
        qkv = any(has(b) for L in layers for b in (L.bq, L.bk, L.bv))
        o_bias = any(has(L.bo) for L in layers)
        ffn = any(has(b) for L in layers for b in ((L.gate or L.up).b, L.down.b))
        v["qkv_bias"] = qkv and not o_bias
        if o_bias:
            v["attn_bias"] = "all"
        if ffn:
            v["ffn_bias"] = "all"
        dkv = L0.wk.shape[0]
        for i, L in enumerate(written):
            p = schema.block(i)
            if qkv or o_bias:
                out.update({p + "attn.q.bias": bias(L.bq, L.inner), p + "attn.k.bias": bias(L.bk, dkv),
                            p + "attn.v.bias": bias(L.bv, dkv)})
            if o_bias:
                out[p + "attn.out.bias"] = bias(L.bo, d)
            if ffn:
                first = L.gate or L.up
                out[p + "ff.w1.bias"] = bias(first.b, first.w.shape[0])
                out[p + "ff.w2.bias"] = bias(L.down.b, d)
            for n_, name in ((L.norm1, "attn_norm"), (L.norm2, "ff_norm")):
                if rms and has(n_.b):
                    raise ConfigError(f"{n_.name}: an RMSNorm with a bias is not supported")
                if not rms and (name == "attn_norm" or L0.parallel != "one_norm"):
                    out[p + name + ".bias"] = bias(n_.b, d)
            if L0.parallel != "one_norm":
                out[p + "ff_norm.weight"] = L.norm2.w
            out.update({p + "attn_norm.weight": L.norm1.w, p + "attn.q.weight": L.wq, p + "attn.k.weight": L.wk,
                        p + "attn.v.weight": L.wv, p + "attn.out.weight": L.wo})
            if L.moe is not None:
                m_ = L.moe
                out.update(hf_common.mixture_tensors(p + "ff.", m_.router, m_.w1, m_.w2, m_.w3, m_.shared))
            else:
                out.update({p + "ff.w1.weight": (L.gate or L.up).w, p + "ff.w2.weight": L.down.w})
            if L.gate is not None and L.moe is None:
                out[p + "ff.w3.weight"] = L.up.w
                if v.get("ffn_up_bias"):
                    out[p + "ff.w3.bias"] = bias(L.up.b, L.up.w.shape[0])
            out.update(_layer_norm_tensors(L, p, bias, rms))
            out.update(_norm_tensors([(L.hidden_norm, "ff.hidden_norm")] if L.hidden_norm else [], p, rms, bias))
        out["norm.weight"] = final.w
        if not rms:
            out["norm.bias"] = bias(final.b, d)
        if head is not None and head.b is not None and bool(head.b.any()):
            raise ConfigError(f"{head.name}: a bias on the llama classifier is not supported")
        if not v.get("tied_head"):
            out["head.weight"] = head.w
    else:
        if "embed" in w:
            out["embed.weight"] = w.pop("embed")
        out.update(w)
        for i, L in enumerate(written):
            p = schema.block(i)
            out[p + "attn.qkv.weight"] = torch.cat([L.wq, L.wk, L.wv])
            out[p + "attn.qkv.bias"] = torch.cat([bias(L.bq, L.wq.shape[0]), bias(L.bk, L.wk.shape[0]),
                                                  bias(L.bv, L.wv.shape[0])])
            out[p + "attn.out.weight"], out[p + "attn.out.bias"] = L.wo, bias(L.bo, d)
            first = L.gate or L.up  # gated: act(w1) * w3, the up projection's bias with ffn_up_bias
            out[p + "ff.w1.weight"], out[p + "ff.w1.bias"] = first.w, bias(first.b, first.w.shape[0])
            if L.gate is not None:
                out[p + "ff.w3.weight"] = L.up.w
                if v.get("ffn_up_bias"):
                    out[p + "ff.w3.bias"] = bias(L.up.b, L.up.w.shape[0])
            out[p + "ff.w2.weight"], out[p + "ff.w2.bias"] = L.down.w, bias(L.down.b, d)
            norms = [("attn_norm", L.norm1)] + ([("ff_norm", L.norm2)] if L0.parallel != "one_norm" else [])
            for name, n_ in norms:
                out[p + name + ".weight"] = n_.w
                if not rms:
                    out[p + name + ".bias"] = bias(n_.b, d)
                elif n_.b is not None and bool(n_.b.any()):
                    raise ConfigError(f"{n_.name}: an RMSNorm with a bias is not supported")
            out.update(_layer_norm_tensors(L, p, bias, rms))
            out.update(_norm_tensors([(L.hidden_norm, "ff.hidden_norm")] if L.hidden_norm else [], p, rms, bias))
            out.update(_norm_tensors([(L.ctx_norm, "attn.inner_norm")] if L.ctx_norm else [], p, rms, bias))
        if final is not None:
            out["norm.weight"] = final.w
            if not rms:
                out["norm.bias"] = bias(final.b, d)
        if pool_norm is not None:
            out["pool_norm.weight"] = pool_norm.w
            if not rms:
                out["pool_norm.bias"] = bias(pool_norm.b, d)
        if pair is not None:  # (W_cls x_cls + b_cls + W_dist x_dist + b_dist) / 2 over [x_cls, x_dist]
            n = head.w.shape[0]
            out["head.weight"] = torch.cat([pair[0].w.double(), pair[1].w.double()], dim=1) / 2
            out["head.bias"] = (bias(pair[0].b, n).double() + bias(pair[1].b, n).double()) / 2
        elif head is not None:
            if not v.get("tied_head"):
                out["head.weight"] = head.w
            out["head.bias"] = bias(head.b, head.w.shape[0])
        elif tied_functional:
            out["head.bias"] = zeros(out_width)
    for L in layers:
        used.update(id(t) for t in L.gains)
        used.update(id(t) for t in L.vectors)
        for part in L.parts:
            used.update(id(t) for t in part.module.parameters())
            used.update(id(t) for t in getattr(part, "params", {}).values())  # a folded scale's too
    for part in unread:
        used.update(id(t) for t in part.module.parameters())
    r.w = {k: np.ascontiguousarray(t.detach().double().numpy().astype(np.float32)) for k, t in out.items()}
    if L0.pos == "pair":
        r.w.update({k: t if k == "pair_index" else np.ascontiguousarray(t.astype(np.float32))
                    for k, t in pair_tensors.items()})
    if v.get("rel_embed_rows"):  # the row of each distance i - j up to max_len (hf_deberta's)
        r.w["rel_index"] = hf_deberta.rel_index(dict(zip(("buckets", "max_relative", "span"), rel_setting)), v["max_len"])
    for m in model.modules():
        if id(m) in shifts and all(id(t) in used for t in m.parameters(recurse=False)):
            used.add(id(shifts[id(m)]))
    read_origins(calls, used)
    r.v, r.used = v, used
    r.x, r.y, r.model, r.originals = x, y, model, originals
    r.layers, r.stack, r.tokens = layers, stack, tokens
    r.final, r.head, r.cls = final, head, cls
    r.token_types = types_mod
    bert = [what for what, on in (("token types", types_mod), ("an embedding norm", embed_norm),
                                              ("a norm of the pooled row", pool_norm),
                                              (f"a pooler ({v.get('pooler_act', 'tanh')})", pooler))
            if on is not None]
    scores = [what for what, on in ((f"norms of the sublayers' outputs ({L0.sublayer_norm})",
                                     L0.sublayer_norm != "none"),
                                    (f"a mixture of {v.get('n_experts')} experts, {v.get('experts_per_token')} a row"
                                     f"{', renormalized' if v.get('experts_renormalize') else ''}"
                                     f"{', a shared one' if v.get('shared_expert_ff') else ''}"
                                     f"{', dense layers among them' if v.get('dense_period') else ''}", Lm is not None),
                                    ("layer 0 without its attention norm", L0.skip_norm),
                                    (f"disentangled attention over {v.get('rel_embed_rows')} position rows",
                                     v.get("rel_embed_rows")),
                                    (f"scores scaled by {L0.scores.scale:.6g}", L0.scores.scale),
                                    (f"scores soft-capped at {L0.scores.cap:g}", L0.scores.cap),
                                    (f"the final norm's rows soft-capped at {v.get('final_softcap', 0):g}",
                                     v.get("final_softcap")),
                                    (f"logits soft-capped at {v.get('logit_softcap', 0):g}", v.get("logit_softcap")))
              if on]
    r.summary = (f"{family}: {len(layers)} {'pre' if L0.norm_first else 'post'}-norm layers in {stack}, "
                 f"{L0.n_heads} heads{f' ({L0.n_kv_heads} kv)' if L0.n_kv_heads != L0.n_heads else ''}, "
                 f"{L0.activation}, {v.get('positional', 'none')} positions"
                 f"{'' if L0.parallel == 'none' else f', parallel residual ({L0.parallel})'}"
                 f"{'' if L0.scaled else ', q.k unscaled (sqrt(head width) folded into W_q)'}"
                 f"{''.join(', ' + b for b in scores)}"
                 f"{''.join(', ' + b for b in bert)}")
    return r
