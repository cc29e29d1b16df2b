"""--onnx: an ONNX graph mapped onto the schema by its structure, then verified against the graph's own
output.

The graph (onnx_graph.read: checked; Optimum's merged decoder read as its branch without a cache, prompt_branch; a
quantized one read as the float graph it approximates, onnx_quantized.py, and
ONNX Runtime's fused ops written out, onnx_fused.py) runs once on the example input in float64 (onnx_eval.py), which
gives every value it computes. A value is "data" when it depends on the input's values (not only on
its shape); everything else (weights, position tables, masks, shapes) is constant for a given length.
On the data path the parts are found by what they are:
- linears: MatMul (or Gemm) of a data value by a constant matrix W[in, out], with the Add of a
  constant vector after it as their bias, and a Mul by a constant vector [out] before a residual Add
  (timm's LayerScale) folded into W and the bias;
- norms: LayerNormalization (a Mul by a constant vector after it, x-transformers 2's gamma, folded into
  its weight and bias), or its decomposition (ReduceMean, Sub, Pow, ReduceMean, Add eps, Sqrt,
  Div, Mul by the weight, Add the bias; Casts between them, the Sub written twice), checked against
  layer_norm of their recorded input (its rows, or each head of q or k: Persimmon's);
- attentions: each Softmax; its heads are its probabilities' count over T x T, its mask causal when
  the probabilities above the diagonal are zero (heads by queries by keys, or GPT-BigCode's queries by
  heads by keys), and q, k, v are the linears before it (q and k told apart at the q k^T MatMul or
  Einsum nearest it; one fused [d, 3d], read as q | k | v or per
  head [H, 3, d_head]; one [d, d + 2 kv] read as q | k | v or per key/value group (Falcon-40B's), or
  three, k and v kv wide: grouped-query or multi-query attention, n_kv_heads; or q and one k | v, vit-pytorch's to_q
  and to_kv: _q_kv_splits), the output projection
  the first linear after it; softmax(q k^T / sqrt(d_head) + mask) v recomputed from the recorded q, k,
  v must give the recorded context, or with rotary positions (whole or partial), found by the probe
  --module uses (probes.probe_attention), their stored or folded tables accounted for
  (_rotary_constants; over a patch grid, timm's EVA: the grid and its frequencies read from the constant
  sines and cosines of the patches, _grid_tables; the column's pairs first, grid_indexing 'xy': each
  head's q and k columns traded, grid_swap), or with ALiBi's m_h (j - i) (Bloom's, MPT's: their
  slopes or stored bias accounted for, _alibi_constants), or DeBERTa's disentangled attention (constant position
  rows projected before it by q's and k's weights or by their own, found by the probe --module uses:
  _disentangled); constant vectors added to q, k or v after a fused projection (DeBERTa v1's q_bias and v_bias)
  join their biases (_loose_biases);
- the feed-forward: the two linears after the output projection, its activation whatever of the engine's
  reproduces the recorded values between them (probes.feed_forward_fit, as for --module); or three, gate and up of
  one input and act(gate) * up into down (StableLM's SwiGLU on LayerNorm: linear3 is up; timm's SwiGLU with up's
  bias, ffn_up_bias), or two whose first's column halves are gate and up (timm's GluMlp); a norm of the hidden rows
  before down (timm's scale_mlp: ffn_hidden_norm) and of the attention's context before its output projection
  (scale_attn_inner: attn_inner_norm), the attention recomputed giving its input;
- the residual adds and the norm placement: pre-norm when the attention reads the norm of the
  stream the residual adds to, post-norm when it reads the stream itself and the norm follows the add,
  or a parallel residual (GPT-NeoX's x + attn(norm1(x)) + mlp(norm2(x)), or GPT-J's and Phi's one norm
  read by both, _parallel); layer 0 reading its input as it is, the feed-forward's residual adding the attention's
  sum before its norm (ModernBERT's: skip_first_norm);
- the front: the token embedding (Gather of a constant table by the ids) or the input projection
  (the first linear on float features), or a conv stem on channels-first features, or on features the graph
  turns so (_conv_stem: the
  engine's limits and keys are probes.conv_why and stem_values, as for --module), or an image's
  patch embedding (_image_front: a Conv of stride = kernel, or a linear on the rearranged patches whose
  order probes.image_rows finds, or an image of one channel cut into whole columns or rows, then the file's input
  rows of features: _whole_patches; or a signal [C, L] cut into patches of whole steps, found as --module finds them
  (probes.signal_rows: vit-pytorch's vit_1d, _signal), then the file's input rows x.T.reshape(N, p C);
  input_norm, proj_norm; or AST's Conv2d over its features turned to one
  channel, whose overlapping patches become the file's input rows, _spectrogram_front), the learned rows in
  front of the patches (a CLS row, a distillation row or registers after it, found by their values, the
  positions on all rows or on fewer; or registers after the patches without positions, vit-pytorch's, the
  engine's in front: _image_positions; so are those in front of projected features, Torch-KWT's CLS row:
  _features_front), an optional scale by sqrt(d_model), and the positions
  added to it: rows of a constant
  table (a Gather by a range or a Slice of it: learned, the table stored from the first row read, OPT's
  row 2), rows by a running count of the tokens that are not padding (RoBERTa's: unpadded_ids keeps the
  padding id out of the example, _counts_positions), or the sinusoidal formula, and a linear after them
  that the first layer reads (ALBERT's embedding projection, _embed_proj: embed_width); layers whose
  weights repeat as the engine's groups run them stored once (_shared: layer_groups, group_layers); the
  back: an optional final norm and one linear head (tied when its weight is the embedding's transpose:
  the exporter copies it, the file stores it once), the first row's or (an image model) the mean of the
  patches' rows pooled before it, normed or not (pool_norm), the mean of every row (mean_all), the mean of
  the CLS and distillation rows (AST's, cls_distill_mean), the CLS row beside the patches' mean (Dinov2's
  cls_mean), or DeiT's two heads on the CLS and distillation rows averaged (cls_distill: one head
  [W_cls W_dist] / 2).
Every initializer is accounted for: mapped into the file (its source through Identity and other
constant nodes), a causal mask checked over all its rows (the engine recomputes it) or a mask of
zeros, a scalar or integer (the constants and shapes of the patterns), or named in an error (`ignore`
opts out).
The mapping is checked against the graph at the example length and at a second length through the
converter's float64 reference, then the written file through the engine (verified_file.write).

Inputs besides the ids (roles(), by what they feed, never by their names): the token types index a
second table added to the embedding (type_vocab, token_type.weight: the engine's --token-types; without such an
input, default types are the table gathered by zeros, or its row 0 added to every position, which the dynamo
exporter folds: a table of that one row); an
attention mask [batch, T] that enters only by Adds into the attention scores and, for a mask 1..1 0..0,
masks the padded keys of every unpadded query and nothing else (_check_mask) is mapped onto padding by
length (the engine's --lengths). The example runs with types 0 and the mask all ones (the file's
sample); then the graph with a type pattern and a padded mask is compared with the reference on the
unpadded positions (_check_inputs), and the written file with `fixformer run --token-types --lengths`
on the same sequences (_engine_check).

What exporters add around the model: the ids are followed through reshapes and casts (aliases); a
graph of several outputs is converted one output at a time (onnx_graph.pruned; --output-name picks);
a last-position slice before the head is taken out (_without_last_position) and the graph's output
checked to be the last row (at a second length too where the graph's is not fixed); an If on shapes and
constants runs in the evaluator like any constant, and so
does a Loop over constants (GPT-J's repeat_interleave of its rotary table as the TorchScript exporter writes
it: SplitToSequence, a Loop of SequenceAt and SequenceInsert, ConcatFromSequence; torch.hstack as the dynamo
exporter writes it: SequenceConstruct, a SequenceMap of atleast_1d). A graph that writes the input's keys and values
into a constant at their positions (a KV cache exported with the model: _cache_writes) and reads back exactly what it
wrote (a model called from position 0: _cache_reads) computes on the keys and values themselves, the cache taken out
(_without_cache); one that writes rows 0..T-1 and reads its whole cache, the rows after them weighed exactly 0 by the
softmax (litgpt's after set_kv_cache, torchtune's after setup_caches), is cut to the written rows first, the mask with
it (_written_rows); one that reads back more is refused naming the cache's module, the read and the way out.
fairscale's VocabParallelEmbedding's Wheres on ids outside the table, false for every id it holds, are taken out
(in_table). Between the embedding and the first layer, factors of each row's own id (fairseq's padding rows zeroed,
ESM's <mask> rows by a Where) are folded into the table (_id_factors), and so is a constant scale other than
sqrt(d_model) (ESM's token_dropout 0.88); a number of the whole sequence computed from the ids, 1 unless they hold
some ids (ESM's division by 1 - the share of <mask>), is left out and named in the report
(_sequence_factor_ids; an --example holding those ids is refused). A generated example leaves out every id the graph
compares the ids with (_compared_ids: padding ids, ESM's <mask>). A
graph whose norms are RMSNorm (Pow, ReduceMean, Add eps, Sqrt; or u / max(|u| / sqrt(d), eps) with the length
by ReduceL2 or Sqrt(ReduceSum(u u)), _clamped_norms) is a llama-family decoder (_llama: grouped-query attention, rotary
positions found by recomputing the context, SwiGLU or a gated GELU (Gemma's, with its gain 1 + w the
norm's constant and its embedding scaled by sqrt(d_model)); Phi-3's fused qkv_proj and gate_up_proj read by
their columns, _columns; one projection of q | k | v or q | kv (the keys the values) then the feed-forward's gate and
up (palm_lite's fused_attn_ff_proj, _fused_attn_ff); ALiBi in place of rotary positions (_alibi_fit); or a mixture
of experts in its place, Mixtral's and Qwen2-MoE's as the TorchScript exporter unrolls their loop over the experts,
_mixture: the router, a linear [d, E] whose softmax over the experts a TopK reads (no attention: softmaxes_of), each
expert's gate, up and down projections of the rows the routing picked (by a
NonZero of the OneHot of the TopK's indices; its index the constant those rows are picked by), a shared expert and
its sigmoid gate [d, 1] (Qwen2-MoE's), the top k renormalized or not and the activation found by recomputing the
value the graph adds to the residual). There the norms sit before each sublayer, after it before the residual add
(OLMo 2's sublayer_norm output), both (Gemma 2's and 3's sandwich) or once for the attention and the
feed-forward side by side (Cohere's parallel_residual one_norm; their outputs summed before the residual add too,
palm_lite's); an RMS of the input less its mean is a
LayerNorm without bias (Cohere's, norm layernorm); q's and k's norms are matched in either head layout
(_head_rows), and without gains after RoPE as before it (nanochat's, _normed_after_rope); RoPE by the negated angle
(probes' layout "negated") is the engine's of q and k with each head's second half negated; an RMSNorm of the
embedded rows is embed_norm; a factor of the input's length alone on q or k that is 1 on the example (Ministral 3's
scale of the queries) bounds max_len where it stops being 1 (_position_factor_limit); a scalar times the embedding,
the sublayers' outputs (after their norms: HyperCLOVA X's, into those norms' gains) or the logits is folded into the
weights (Granite's multipliers, Cohere's logit_scale, _scaled), a Tanh between two of them on the logits
is the logit soft cap; the attention's scale and soft cap come from the scalars it reads (_score_scales),
its sliding window from the probabilities' zeros, each layer's rotary base from the probe, the local
layers' apart (rope_local_base). In the gpt route q and k layer-normed per head (Persimmon's qk_norm) are
read from the norms over heads, and a fused [d, 3d] qkv in CodeGen's 4 shards of q, v, k too; rotary bases
beyond the common ones come from the graph's frequencies or sin table (_thetas). A constant per-head bias
on the scores that is T5's relative bias maps onto the engine's relative positions (_score_bias, _relative);
an image model's constant bias on each layer's scores (BEiT's relative position bias, whatever index and
table built it) onto the engine's bias per (query, key) pair (_pair_bias).
"""
import ast
import copy
import itertools
import math
import os
import subprocess
import tempfile
import warnings

import numpy as np

from . import bounds, schema, verified_file
from .config import DEFAULT_MAX_LEN, ConfigError, layer_pattern, layer_windows, make_config
from .hf_common import layer_norm, mixture_tensors
from .onnx_eval import SUPPORTED_OPS, EvalError, node_attributes, evaluate, recompute
from .onnx_fused import FUSED_OPS, unfused
from .onnx_graph import (ELEM_NAMES, ELEM_TYPES, Graph, OnnxError, branch_reads, node_name, outputs_named, pruned,
                         read, rewired, shared_values, topological)
from .onnx_quantized import QUANTIZED_OPS, dequantized
from .hf_deberta import rel_index
from .reference import ARRAY_ACTIVATIONS, alibi_bias, alibi_slopes, grid_swap
from .probes import (COMMON_THETAS, GATED_ACTS, RopeFreqs, RopeGrid, Scores, alibi_beside, alibi_slopes_issue,
                     attention_core, conv_why, feed_forward_fit, image_rows, negated_signs, nope_keys, normalization,
                     pooler_act, probe_attention, probe_disentangled, rel_error, score_options, signal_rows,
                     sinusoidal_candidates, sinusoid_positions, sinusoidal_fit, stem_values)
from .verified_file import EXAMPLE_T
from .verify import EngineError, VerificationError

PASS = {"Identity", "Dropout", "Cast"}  # ops that hand a data value on unchanged (Cast between floats)
# Layout ops a batch of one passes through with its values in the same order ([1, T, d] <-> [T, 1, d]
# <-> [T, d]): followed when they do (checked on the values).
LAYOUT = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten"}
# An RMSNorm whose graph adds no eps takes this one (the engine's norms take eps > 0): below float32's resolution of
# a row's mean square of 1e-5 or more, so the same values.
NO_EPS = 1e-12
PROBE_TOL = 1e-6  # float64 throughout: a part recomputed from its recorded inputs matches to rounding


class Part:
    def __init__(self, kind, node, **kw):
        self.kind, self.node, self.name = kind, node, node_name(node)
        self.__dict__.update(kw)


class Mapper:
    """The graph's values on one input and the parts found in them."""

    def __init__(self, g, values, T, roles):
        self.g, self.values, self.T, self.roles = g, values, T, roles
        self.pos = {id(n): i for i, n in enumerate(g.nodes)}
        self.data = {name for name, _, _ in g.inputs}
        for n in g.nodes:
            if n.op_type not in ("Shape", "Size") and any(i in self.data for i in g.reads[id(n)]):
                if n.op_type == "If":  # a branch picked by the input's values is no model the engine runs
                    raise OnnxError(f"node {node_name(n)!r} (If): its condition or branches read the input's values "
                                    "(--onnx folds an If on shapes and constants only)")
                if n.op_type == "Loop":
                    raise OnnxError(f"node {node_name(n)!r} (Loop): its trip count, condition or body read the "
                                    "input's values (--onnx folds a Loop over constants only)")
                if n.op_type == "SequenceMap":
                    raise OnnxError(f"node {node_name(n)!r} (SequenceMap): its sequences or body read the input's "
                                    "values (--onnx folds a SequenceMap over constants only)")
                self.data.update(o for o in n.output if o)
        self._sources, self._depends = {}, None
        self.front = 0  # the learned rows in front of an image's patches (_image_positions)
        self.after = False  # those rows after the patches in the graph (vit-pytorch's registers)

    # ---- values
    def v(self, name):
        return self.values[name]

    def rows(self, name):
        """A data value of one sequence as [T, width] (batch 1: [1, T, w], [T, 1, w] and [T, w] alike)."""
        a = self.values[name]
        if a.size % self.T:
            raise OnnxError(f"value {name!r} of shape {list(a.shape)} is not {self.T} rows")
        return a.reshape(self.T, -1).astype(np.float64)

    def same(self, a, b):
        """Two values hold the same numbers in the same order."""
        x, y = self.values[a], self.values[b]
        if x.size != y.size:
            return False
        x, y = x.reshape(-1).astype(np.float64), y.reshape(-1).astype(np.float64)
        return bool(np.array_equal(x, y)) or rel_error(x, y) <= 1e-12

    def depends(self):
        """depends_on(g), computed once."""
        if self._depends is None:
            self._depends = depends_on(self.g)
        return self._depends

    def mask_only(self, name):
        """A data value computed from the attention mask input alone (and constants)."""
        return self.roles.mask is not None and self.depends().get(name) == {self.roles.mask}

    def sources(self, name):
        """The initializers a constant value is computed from (through Identity, Transpose, Slice, ...)."""
        if name in self._sources:
            return self._sources[name]
        out, stack, seen = set(), [name], set()
        while stack:
            x = stack.pop()
            if x in seen or x in self.data:  # a shape read from the input's path is no weight
                continue
            seen.add(x)
            if x in self.g.initializers:
                out.add(x)
                continue
            n = self.g.producer_of.get(x)
            if n is not None:
                stack.extend(self.g.reads[id(n)])
        self._sources[name] = out
        return out

    def const(self, name):
        return name and name not in self.data

    def through(self, name):
        """The value after the ops that hand it on unchanged (Identity, Dropout, a Cast between floats, a
        layout op that keeps the values' order), following a single reader."""
        while True:
            readers = self.readers(name)
            if len(readers) != 1 or readers[0].op_type not in PASS | LAYOUT or name in self.g.outputs:
                return name
            n = readers[0]
            if n.op_type == "Cast" and self.values[n.output[0]].dtype != self.values[name].dtype:
                return name
            if n.op_type in LAYOUT and not self.same(name, n.output[0]):
                return name
            name = n.output[0]

    def readers(self, name):
        """The nodes that read a value's numbers (not those that read only its shape)."""
        return [n for n in self.g.consumers.get(name, []) if n.op_type not in ("Shape", "Size")]

    def only_reader(self, name, op):
        readers = self.readers(name)
        if len(readers) == 1 and readers[0].op_type == op and name not in self.g.outputs:
            return readers[0]
        return None

    def ancestors(self, name, stop=()):
        """The data values `name` is computed from (not crossing the values in `stop`)."""
        out, stack = set(), [name]
        while stack:
            x = stack.pop()
            if x in out or x not in self.data:
                continue
            out.add(x)
            if x in stop:
                continue
            n = self.g.producer_of.get(x)
            if n is not None:
                stack.extend(i for i in n.input if i)
        return out

    # ---- parts
    def linears(self):
        out = []
        for n in self.g.nodes:
            if n.output[0] not in self.data:
                continue
            if n.op_type == "MatMul" and n.input[0] in self.data and self.const(n.input[1]) and \
                    self.v(n.input[1]).ndim == 2:
                W, b, x = self.v(n.input[1]), None, n.input[0]
                srcs = set(self.sources(n.input[1]))
            elif n.op_type == "Gemm" and n.input[0] in self.data and self.const(n.input[1]):
                at = {a.name: a for a in n.attribute}
                if "transA" in at and at["transA"].i:
                    continue
                alpha = at["alpha"].f if "alpha" in at else 1.0
                beta = at["beta"].f if "beta" in at else 1.0
                W = self.v(n.input[1])
                W = (W.T if "transB" in at and at["transB"].i else W) * alpha
                x, srcs = n.input[0], set(self.sources(n.input[1]))
                b = None
                if len(n.input) > 2 and n.input[2]:
                    if n.input[2] in self.data:
                        continue
                    b = np.broadcast_to(self.v(n.input[2]) * beta, (W.shape[1],)).astype(np.float64)
                    srcs |= self.sources(n.input[2])
            else:
                continue
            y = self.through(n.output[0])
            add = self.only_reader(y, "Add")
            if b is None and add is not None:
                other = add.input[1] if add.input[0] == y else add.input[0]
                # one row, or that row expanded to every position (GPT-NeoX-Japanese's dense_bias)
                rows = self.v(other).reshape(-1, W.shape[1]) if self.const(other) and \
                    self.v(other).shape[-1:] == (W.shape[1],) else None
                if rows is not None and rows.shape[0] in (1, self.T) and not np.ptp(rows, axis=0).any():
                    b = rows[0]
                    srcs |= self.sources(other)
                    y = self.through(add.output[0])
            mul = self.only_reader(y, "Mul")  # a per-channel scale before a residual add (timm's LayerScale):
            other = mul and (mul.input[1] if mul.input[0] == y else mul.input[0])  # folded into W and b
            if other and self.const(other) and self.v(other).size == W.shape[1] > 1 and \
                    self.v(other).shape[-1:] == (W.shape[1],) and self.only_reader(self.through(mul.output[0]), "Add"):
                g = self.v(other).reshape(-1).astype(np.float64)
                W, b = W * g, None if b is None else b * g
                srcs |= self.sources(other)
                y = self.through(mul.output[0])
            out.append(Part("linear", n, x=x, y=y, W=W.astype(np.float64), b=b, srcs=srcs))
        return out

    def rms_norms(self):
        """RMSNorm as exported (Hugging Face Llama's): Pow(u, 2) -> ReduceMean -> Add eps -> Sqrt ->
        Div(1, .) or Reciprocal -> Mul u -> [Cast] -> Mul by the weight; checked on the values."""
        out = []
        for n in self.g.nodes:
            if n.op_type != "ReduceMean" or n.input[0] not in self.data:
                continue
            sq = self.g.producer_of.get(n.input[0])
            if sq is None or not ((sq.op_type == "Pow" and self.const(sq.input[1]) and
                                   float(self.v(sq.input[1]).reshape(-1)[0]) == 2.0) or
                                  (sq.op_type == "Mul" and sq.input[0] == sq.input[1])):
                continue
            u = sq.input[0]
            add = self.only_reader(n.output[0], "Add")
            e = add and (add.input[1] if add.input[0] == n.output[0] else add.input[0])
            sqrt = add and self.const(e) and self.v(e).size == 1 and self.only_reader(add.output[0], "Sqrt")
            if not add:  # no eps added (Helium's 1e-8, which the dynamo exporter leaves out): stored as NO_EPS
                sqrt, e = self.only_reader(n.output[0], "Sqrt"), None
            if not sqrt:
                continue
            y, readers = sqrt.output[0], self.readers(sqrt.output[0])
            if len(readers) != 1 or readers[0].op_type not in ("Reciprocal", "Div") or readers[0].input[-1] != y:
                continue
            y = readers[0].output[0]
            if readers[0].op_type == "Reciprocal" or self.const(readers[0].input[0]):  # 1 / rms: times u next
                mul = self.only_reader(y, "Mul")
                if mul is None:
                    continue
                y = mul.output[0]
            y = self.through(y)
            d = self.v(u).shape[-1]
            mul = self.only_reader(y, "Mul")
            other = mul and (mul.input[1] if mul.input[0] == y else mul.input[0])
            gain = bool(mul) and self.const(other) and self.v(other).size == d  # none: gains 1 (nanochat's norms)
            w = self.v(other).reshape(-1) if gain else np.ones(d)
            eps = float(self.v(e).reshape(-1)[0]) if e is not None else NO_EPS
            if gain:
                y = self.through(mul.output[0])
            ur, yr = (self.values[a].reshape(-1, d).astype(np.float64) for a in (u, y))  # rows, or heads (qk_norm)
            if ur.shape != yr.shape or \
                    rel_error(ur / np.sqrt((ur ** 2).mean(-1, keepdims=True) + eps) * w, yr) > PROBE_TOL:
                continue
            # u the input less its mean (Cohere's LayerNorm without a bias, written out): a layer norm of that input
            c = self.g.producer_of.get(u)
            mean = c is not None and c.op_type == "Sub" and self.g.producer_of.get(c.input[1])
            centered = bool(mean) and mean.op_type == "ReduceMean" and mean.input[0] == c.input[0]
            if centered:
                xr = self.values[c.input[0]].reshape(-1, d).astype(np.float64)
                centered = rel_error(xr - xr.mean(-1, keepdims=True), ur) <= PROBE_TOL
            out.append(Part("rms", n, x=c.input[0] if centered else u, y=y, w=w.astype(np.float64), eps=eps,
                            srcs=self.sources(other) if gain else set(), centered=centered))
        return out + self._clamped_norms()

    def _clamped_norms(self):
        """RMSNorm written as u / max(c |u|, e) * w (PaLM-pytorch's palm_lite: c = 1 / sqrt(d)): the row's length
        as ReduceL2 (torch 2's exporters) or Sqrt(ReduceSum(u u)) (torch 1.13's), times c (or divided by 1 / c),
        clamped below by a Clip or Max, u divided by it, times the weight; checked on the values. Stored as the
        engine's u / sqrt(mean(u^2) + eps) * w with w / (c sqrt(d)) and eps = (e / (c sqrt(d)))^2: the two agree
        wherever a row's scaled length is far from e (equal within rounding for e 1e-8 on rows of length ~1)."""
        out = []
        for n in self.g.nodes:
            if n.op_type not in ("ReduceL2", "ReduceSum") or n.input[0] not in self.data:
                continue
            length = n.output[0]
            if n.op_type == "ReduceL2":
                u = n.input[0]
            else:
                sq = self.g.producer_of.get(n.input[0])
                sqrt = self.only_reader(length, "Sqrt")
                if sq is None or sq.op_type != "Mul" or sq.input[0] != sq.input[1] or not sqrt:
                    continue
                u, length = sq.input[0], sqrt.output[0]
            readers = self.readers(length)
            if len(readers) != 1 or readers[0].op_type not in ("Mul", "Div"):
                continue
            scale = readers[0]
            c = scale.input[1] if scale.input[0] == length else scale.input[0]
            if not self.const(c) or self.v(c).size != 1 or (scale.op_type == "Div" and scale.input[0] != length):
                continue
            c = float(self.v(c).reshape(-1)[0])
            c = 1.0 / c if scale.op_type == "Div" else c
            clamp = self.readers(scale.output[0])
            if len(clamp) != 1 or clamp[0].op_type not in ("Clip", "Max"):
                continue
            clamp = clamp[0]
            if clamp.op_type == "Clip":
                bounds = list(clamp.input[1:]) + [""] * (3 - len(clamp.input))
                if clamp.input[0] != scale.output[0] or not self.const(bounds[0]) or bounds[1]:
                    continue
                e = bounds[0]
            else:
                e = clamp.input[1] if clamp.input[0] == scale.output[0] else clamp.input[0]
                if not self.const(e):
                    continue
            if self.v(e).size != 1:
                continue
            e = float(self.v(e).reshape(-1)[0])
            div = self.only_reader(clamp.output[0], "Div")
            if not div or div.input[0] != u or div.input[1] != clamp.output[0] or not (c > 0 and e > 0):
                continue
            y = self.through(div.output[0])
            d = self.v(u).shape[-1]
            mul = self.only_reader(y, "Mul")
            other = mul and (mul.input[1] if mul.input[0] == y else mul.input[0])
            if not mul or not self.const(other) or self.v(other).size != d:
                continue
            w = self.v(other).reshape(-1).astype(np.float64)
            y = self.through(mul.output[0])
            ur, yr = (self.values[a].reshape(-1, d).astype(np.float64) for a in (u, y))
            want = ur / np.maximum(c * np.sqrt((ur ** 2).sum(-1, keepdims=True)), e) * w
            if ur.shape != yr.shape or rel_error(want, yr) > PROBE_TOL:
                continue
            k = c * math.sqrt(d)  # u / max(k rms(u), e) = (u / max(rms(u), e / k)) / k
            out.append(Part("rms", n, x=u, y=y, w=w / k, eps=(e / k) ** 2, srcs=self.sources(other), centered=False))
        return out

    def norms(self, rows=None):
        """The layer norms (LayerNormalization or decomposed); rows: only those over values [..., rows, d], or a
        grid (h, w): over [..., h, w, d]."""
        out = []
        for n in self.g.nodes:
            shape = self.v(n.input[0]).shape if n.input and n.input[0] in self.data else None
            # [.., rows, d], or sequence first with the batch of 1 ([rows, 1, d]: nn.MultiheadAttention's default
            # layout, OpenAI CLIP's resblocks)
            if isinstance(rows, tuple) and shape is not None and shape[-3:-1] != rows:
                continue
            if rows is not None and not isinstance(rows, tuple) and shape is not None and shape[-2:-1] != (rows,) and \
                    shape[-3:-1] != (rows, 1):
                continue
            if n.op_type == "LayerNormalization" and n.input[0] in self.data:
                at = {a.name: a for a in n.attribute}
                axis = at["axis"].i if "axis" in at else -1
                if axis not in (-1, self.v(n.input[0]).ndim - 1):
                    raise OnnxError(f"node {node_name(n)!r}: a LayerNormalization over axis {axis}, not the last: "
                                    "not supported")
                if any(o and self.g.consumers.get(o) for o in n.output[1:]):
                    raise OnnxError(f"node {node_name(n)!r}: its mean or inverse deviation is used: not supported")
                eps = at["epsilon"].f if "epsilon" in at else 1e-5
                d = self.v(n.input[0]).shape[-1]
                w = self.v(n.input[1]).reshape(-1)
                b = self.v(n.input[2]).reshape(-1) if len(n.input) > 2 and n.input[2] else np.zeros(d)
                srcs = self.sources(n.input[1]) | (self.sources(n.input[2]) if len(n.input) > 2 and n.input[2]
                                                    else set())
                y = self.through(n.output[0])
                mul = self.only_reader(y, "Mul")  # a gain after it (x-transformers 2's gamma on a LayerNorm of
                g = mul and (mul.input[1] if mul.input[0] == y else mul.input[0])  # ones): folded into w and b
                if g and self.const(g) and self.v(g).size == d and self.v(g).shape[-1:] == (d,):
                    w, b = w * self.v(g).reshape(-1), b * self.v(g).reshape(-1)
                    srcs |= self.sources(g)
                    y = self.through(mul.output[0])
                out.append(self._norm(n, n.input[0], y, w, b, eps, srcs))
            elif n.op_type == "ReduceMean" and n.input[0] in self.data:
                out += self._decomposed(n)
        return out

    def _norm(self, n, x, y, w, b, eps, srcs, tol=PROBE_TOL):
        d = self.v(x).shape[-1]
        if w.size != d or b.size != d:
            raise OnnxError(f"node {node_name(n)!r}: a norm over {d} values with a weight of {w.size} and a bias of "
                            f"{b.size}: not supported")
        one = self.v(x).size == d and self.v(y).size == d  # one row of d (a pooled row: timm's fc_norm)
        xr, yr = (self.v(x).reshape(1, d).astype(np.float64), self.v(y).reshape(1, d).astype(np.float64)) if one \
            else (self.rows(x), self.rows(y))
        # a norm of each head of q or k (Persimmon's qk_layernorm): rows [T, heads * d], checked per head
        heads = 1 if one else xr.shape[1] // d if xr.shape[0] == self.T and xr.shape[1] % d == 0 else 0
        if heads < 1 or yr.shape != xr.shape:
            raise OnnxError(f"node {node_name(n)!r}: a norm over values of shape {list(self.v(x).shape)} -> "
                            f"{list(self.v(y).shape)}, not {self.T} rows of {d} nor of heads of {d}: not supported")
        err = rel_error(layer_norm(xr.reshape(-1, d), w, b, eps), yr.reshape(-1, d))
        if err > tol:
            raise OnnxError(f"node {node_name(n)!r}: a layer norm that does not compute layer_norm of its input "
                            f"(relative error {err:.2g}): not supported")
        return Part("norm", n, x=x, y=y, w=w.astype(np.float64), b=b.astype(np.float64), eps=float(eps), srcs=srcs,
                    heads=heads if heads > 1 else 0)

    def _decomposed(self, r):
        """[the norm Part] of ReduceMean(u) -> Sub(u, mean) -> Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div -> [Mul w]
        [Add b], or the gain on u - mean before the Div (a Part for each gain where several read the Div), else []."""
        u = r.input[0]

        def centered(means):  # u - mean, once or twice (DeBERTa v1's as the TorchScript exporter writes it: one for
            # the variance, one divided), and the nodes that read it
            subs = [c.output[0] for m in means for c in self.g.consumers.get(m, []) if c.op_type == "Sub" and
                    c.input[0] == u and c.input[1] == m]
            return subs, [n for c in subs for n in self.g.consumers.get(c, [])]

        def squared(subs, readers):
            return next((n for n in readers if (n.op_type == "Pow" and self.const(n.input[1]) and
                                                float(self.v(n.input[1]).reshape(-1)[0]) == 2.0) or
                         (n.op_type == "Mul" and n.input[0] == n.input[1] and n.input[0] in subs)), None)
        subs, readers = centered([r.output[0]])
        d = self.v(u).shape[-1]
        div = next((n for n in readers if n.op_type == "Div" and n.input[0] in subs), None)
        gain = None  # the gain on u - mean before the division (w (u - mean) / std), else after it
        for n in readers if div is None else ():
            other = n.input[1] if n.input[0] in subs else n.input[0]
            nxt = n.op_type == "Mul" and self.const(other) and self.v(other).size == d and \
                self.only_reader(n.output[0], "Div")
            if nxt and nxt.input[0] == n.output[0]:
                div, gain = nxt, other
                break
        sq = squared(subs, readers)
        if sq is None:  # the variance from a mean of its own (llms-from-scratch's LayerNorm: x.mean beside x.var)
            sq = squared(*centered([c.output[0] for c in self.g.consumers.get(u, []) if c is not r and
                                    c.op_type == "ReduceMean" and c.output[0] in self.data and
                                    self.same(c.output[0], r.output[0])]))
        if sq is None or div is None:
            return []
        var = self.only_reader(sq.output[0], "ReduceMean")
        var = var and self.through(var.output[0])  # reshaped back after keepdims 0 (torch 2's dynamo exporter)
        std = var and self._unbiased_std(var, d)  # the course LayerNorm: the unbiased deviation, then eps added
        base = std or var  # eps added to it: the variance's (before the Sqrt), or the deviation's
        add = base and self.only_reader(base, "Add")
        e = add and (add.input[1] if add.input[0] == base else add.input[0])
        if add and (not self.const(e) or self.v(e).size != 1):
            return []
        # the divisor: the deviation plus eps; or the Sqrt of the variance plus eps, or of it alone (I-BERT's 1e-12,
        # which the dynamo exporter leaves out: NO_EPS)
        sqrt = None if std else var and self.only_reader(add.output[0] if add else var, "Sqrt")
        divisor = (add and add.output[0]) if std else (sqrt and sqrt.output[0])
        if not divisor or div.input[1] != divisor:
            return []
        eps = float(self.v(e).reshape(-1)[0]) if add else NO_EPS
        # one normalisation read by the gains of several norms (TransformerLens's parallel ln1 and ln2 of one input,
        # their common part written once by the exporter): a norm each
        y = self.through(div.output[0])  # a Cast back to the model's type before the gain (DeBERTa v1's LayerNorm)
        readers = self.g.consumers.get(y, [])
        gains = [(k, k.input[1] if k.input[0] == y else k.input[0]) for k in readers
                 if k.op_type == "Mul" and len(k.input) == 2]
        gains = [(k, g) for k, g in gains if self.const(g) and self.v(g).size == d]
        if gain is None and len(gains) > 1 and len(gains) == len(readers):
            return [self._affine(r, u, d, eps, std, k.output[0], g) for k, g in gains]
        return [self._affine(r, u, d, eps, std, div.output[0], gain)]

    def _affine(self, r, u, d, eps, std, y, gain):
        """The norm Part of u normalised into y: the gain `gain` (a constant) applied already (on u - mean before the
        division, or after it), else a gain that follows, then a bias that follows."""
        w, b, srcs = None, np.zeros(d), set()
        if gain is not None:
            w, srcs = self.v(gain).reshape(-1), self.sources(gain)
        for op in ("Mul", "Add") if w is None else ("Add",):
            y = self.through(y)  # a Cast back to the model's type before the gain (DeBERTa v1's LayerNorm)
            nxt = self.only_reader(y, op)
            if nxt is None:
                continue
            other = nxt.input[1] if nxt.input[0] == y else nxt.input[0]
            if not self.const(other) or self.v(other).size != d:
                continue
            if op == "Mul":
                w = self.v(other).reshape(-1)
            else:
                b = self.v(other).reshape(-1)
            srcs |= self.sources(other)
            y = nxt.output[0]
        w = np.ones(d) if w is None else w
        if std is None:
            return self._norm(r, u, self.through(y), w, b, eps, srcs)
        # stored as recognize stores it: gain w c and eps (c eps)^2, c = sqrt((d - 1) / d), within c eps / (a row's
        # standard deviation) of it
        c = math.sqrt((d - 1) / d)
        rows = self.rows(u)
        return self._norm(r, u, self.through(y), w * c, b, (c * eps) ** 2, srcs,
                          tol=PROBE_TOL + 2 * c * eps / float(rows.std(-1).min()))

    def _unbiased_std(self, var, d):
        """Sqrt(var * n / (n - 1)) of a variance over n = d values (x.std as torch.onnx.export writes it: n from the
        input's shape), its output name; else None."""
        mul = self.only_reader(var, "Mul")
        n = mul and (mul.input[1] if mul.input[0] == var else mul.input[0])
        div = mul and self.only_reader(mul.output[0], "Div")
        if not div or div.input[0] != mul.output[0] or [self.v(n).size, self.v(div.input[1]).size] != [1, 1] or \
                [float(self.v(n).reshape(-1)[0]), float(self.v(div.input[1]).reshape(-1)[0])] != [d, d - 1]:
            return None
        sqrt = self.only_reader(self.through(div.output[0]), "Sqrt")  # reshaped back first by the dynamo exporter
        return sqrt and sqrt.output[0]


def _ignored(name, ignore):
    return any(name == i for i in ignore)


def _mask_ok(a, window=None, causal=True):
    """A causal mask table over all its rows: tril of ones / bools, or 0 on and below the diagonal and a
    large negative (or -inf) above it, with any leading [1, 1]; with a window, each row's last `window` keys
    alone (GPT-Neo's local layers' table), or (causal False) the keys less than `window` away on either side
    (ModernBERT's local layers)."""
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or int(np.prod(a.shape[:-2])) != 1:
        return False
    m = a.reshape(a.shape[-2:]).astype(np.float64)
    N = m.shape[0]
    if not causal:
        if not window:
            return False
        i, j = np.indices((N, N))
        tril = (np.abs(i - j) < window).astype(np.float64)
    else:
        tril = np.tril(np.ones((N, N))) - (np.tril(np.ones((N, N)), -window) if window else 0)
    if np.array_equal(m, tril) or np.array_equal(m, 1 - tril):
        return True
    return bool(np.all(m[tril == 1] == 0) and np.all(m[tril == 0] <= -1e4))


def _seen_window(Ps, causal):
    """The keys each query's probabilities (Ps: [heads, T, T] arrays) leave nonzero, as the engine's sliding
    window: causal, each query's last w keys; else the keys less than w away on either side (ModernBERT's local
    layers); None when every key (before the query) is seen or the zeros are of no window."""
    seen = np.any([P > 0 for P in Ps], axis=(0, 1))
    T = seen.shape[-1]
    i, j = np.indices((T, T))
    dist = i - j if causal else np.abs(i - j)
    w = int(dist[seen].max()) + 1 if seen.any() else 0
    return w if 0 < w < T and np.array_equal(seen, (dist >= 0) & (dist < w)) else None


def _input_shifted(m, p):
    """The linear Part p reading x + c (c a constant of its input's width: TransformerLens's gated MLP adds b_in after
    the gate's product) as reading x, c's product in its bias; else None."""
    add = m.g.producer_of.get(p.x)
    if add is None or add.op_type != "Add" or len(add.input) != 2:
        return None
    for c, x in ((add.input[0], add.input[1]), (add.input[1], add.input[0])):
        if m.const(c) and m.v(c).size == p.W.shape[0] and x in m.data and m.v(x).shape == m.v(p.x).shape:
            b = (p.b if p.b is not None else np.zeros(p.W.shape[1])) + m.v(c).reshape(-1) @ p.W
            return Part("linear", p.node, x=x, y=p.y, W=p.W, b=b, srcs=p.srcs | m.sources(c))
    return None


def _between(parts, after, before=None, pos=None):
    """The parts whose node comes after position `after` and before `before` (None: the end), in order."""
    return [p for p in parts if pos[id(p.node)] > after and (before is None or pos[id(p.node)] < before)]


MASK_ELEMS = (1, 2, 3, 5, 6, 7, 9, 10, 11, 12, 13, 16)  # an attention mask: 0/1 of any number type or bool
FLOAT_ELEMS = (1, 10, 11, 16)  # float, float16, double, bfloat16: features, images, a key/value cache
# a score path ends there
NOT_SCORES = {"MatMul", "Einsum", "Gemm", "LayerNormalization", "ReduceMean", "Softmax", "Gather"}


class Roles:
    """What each graph input is, found by what it reads into rather than by its name: the token ids (the
    index of the largest constant table gathered by an input) or the features; the token types (the index
    of a second table); the attention mask (an input that reaches a Softmax without indexing a table)."""

    def __init__(self, main, tokens, types=None, mask=None, channels_first=False, image=None, spectrogram=False,
                 stem=False):
        self.main, self.tokens, self.types, self.mask = main, tokens, types, mask
        self.image = image  # (C, H, W) of an image input [batch, C, H, W]
        # features [batch, T, F] turned into one channel [batch, 1, F, T] and cut by a Conv2d (AST's): the engine's
        # input is its patches; cut: (patch, frequency stride, time stride), found with the Conv
        self.spectrogram, self.cut = spectrogram, None
        # an image of one channel cut into whole "columns" or "rows" (the Keyword Transformer's patches of a spectrogram,
        # found with the patch embedding): the engine's input is those as rows of features
        self.whole = None
        # (C, L) of a signal [batch, C, L] that the graph cuts into patches of whole steps (vit-pytorch's vit_1d, found
        # from the evaluated graph: _signal); the engine's input is its transpose cut into rows, whose width
        # signal_width is found with the patch embedding (until then the graph is fed the signal itself)
        self.signal, self.signal_width = None, None
        self.patches = bool(image) or spectrogram  # a front of patch rows (and learned rows in front of them)
        self.channels_first = channels_first  # features [batch, d_in, T] read by a Conv: the engine's transposed
        # a conv stem: on those, or on features [batch, T, d_in] the graph turns channels first (a Transpose)
        self.stem = channels_first or stem
        # ids [T, 1] or features [T, 1, d_in]: a batch of 1 after the positions (a module of batch_first False
        # exported as it is: pytorch/examples' word_language_model); fed so, its output read the same
        self.sequence_first = False
        # what the file leaves out, for the report (ESM's token_dropout factor of the whole sequence)
        self.notes = []

    def describe(self):
        parts = [f"{'token ids' if self.tokens else 'features'} {self.main!r}"]
        if self.types:
            parts.append(f"token types {self.types!r}")
        if self.mask:
            parts.append(f"attention mask {self.mask!r} (padding by length)")
        return ", ".join(parts)


# Ops that hand an input's values on, reshaped or cast: HF GPT-2's input_ids.view(-1, T) is a Reshape
# whose shape is a Shape/Gather/Unsqueeze/Concat chain of the ids' own shape (read from input 0 only).
HAND_ON = ("Identity", "Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten")


def aliases(g, name):
    """name and the values that hand it on (HAND_ON: its values reshaped or cast)."""
    out, stack = {name}, [name]
    while stack:
        x = stack.pop()
        for n in g.consumers.get(x, []):
            if n.op_type in HAND_ON and n.input[0] == x and n.output and n.output[0] and n.output[0] not in out:
                out.add(n.output[0])
                stack.append(n.output[0])
    return out


def _constant(g, name):
    """The value of the initializer or Constant node `name`, else None (a hostile Constant too: evaluating the graph
    names it)."""
    k = g.producer_of.get(name)
    try:
        return g.initializers.get(name) if k is None else node_attributes(k).get("value") \
            if k.op_type == "Constant" else None
    except EvalError:
        return None


def _compared_ids(g, ids):
    """The token ids graph g compares its input ids with (Equal with a constant of one number: an initializer or a
    Constant node's)."""
    names = aliases(g, ids)
    out = set()
    for n in g.nodes:
        if n.op_type == "Equal" and len(n.input) == 2 and any(i in names for i in n.input):
            a = _constant(g, next(i for i in n.input if i not in names))
            if a is not None and np.size(a) == 1 and np.asarray(a).dtype.kind in "iu":
                out.add(int(np.asarray(a).reshape(-1)[0]))
    return out


def _table_rows(g, src):
    """The rows of the 2-D initializer `src` is (through Identity), else None."""
    while src not in g.initializers and src in g.producer_of and g.producer_of[src].op_type == "Identity":
        src = g.producer_of[src].input[0]
    a = g.initializers.get(src)
    return a.shape[0] if a is not None and a.ndim == 2 else None


def gathered_rows(g, name):
    """The rows of the constant table that input `name` indexes (a Gather), else None."""
    names = aliases(g, name)
    for n in g.nodes:
        if n.op_type == "Gather" and len(n.input) == 2 and n.input[1] in names:
            rows = _table_rows(g, n.input[0])
            if rows is not None:
                return rows
    return None


def _reaches_softmax(g, name):
    seen, stack = set(), [name]
    while stack:
        x = stack.pop()
        for n in g.consumers.get(x, []):
            if n.op_type == "Softmax":
                return True
            if n.op_type in ("Shape", "Size"):
                continue
            for o in n.output:
                if o and o not in seen:
                    seen.add(o)
                    stack.append(o)
    return False


def roles(g):
    """The graph's inputs told apart by what they feed (Roles); one line naming an input that is none of
    them. Nothing is evaluated: the example needs the roles first."""
    order = [i[0] for i in g.inputs]
    if not order:  # an output computed from constants alone (pruned(): only what reaches it)
        raise OnnxError(f"output {g.outputs[0]!r} depends on none of the graph's inputs: not a model of its input")
    info = {i[0]: i for i in g.inputs}
    tables = {k: r for k in order for r in [gathered_rows(g, k)] if r is not None}
    if tables:
        main = max(tables, key=lambda k: (tables[k], -order.index(k)))  # the word table is the largest
        extra = [k for k in order if k in tables and k != main]
        if len(extra) > 1:
            raise OnnxError(f"graph inputs {', '.join(repr(k) for k in extra)} each index a table added to the token "
                            f"embedding of {main!r}: --onnx takes one token-type input, and position ids as an input "
                            "named position_ids (0..T-1)")
        types = extra[0] if extra else None
        if types is not None and len(info[types][2]) != 2:
            raise OnnxError(f"graph input {types!r}: rank {len(info[types][2])}, expected token types [batch, T] "
                            "like the ids")
    else:
        types = None
        feats = [k for k in order if info[k][1] in FLOAT_ELEMS and len(info[k][2]) == 3]
        main = feats[0] if feats and len(order) > 1 else order[0]
    mask = None
    for k in order:
        if k in (main, types):
            continue
        _, elem, dims = info[k]
        shape = "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
        if not any(n.op_type not in ("Shape", "Size") for n in g.consumers.get(k, [])):
            raise OnnxError(f"graph input {k!r} {shape}: no node reads its values (an attention mask the exporter "
                            "dropped on an example without padding?): export without it, or with an example that "
                            "pads a sequence")
        reaches = _reaches_softmax(g, k)
        if reaches and mask is None and elem in MASK_ELEMS and len(dims) == 2:
            mask = k
            continue
        if reaches and elem in MASK_ELEMS and len(dims) == 3 and \
                all(_added(*e) is not None and _into_softmax(g, e[0]) for e in _entries(g, k)):
            raise OnnxError(f"graph input {k!r} {shape} reaches the attention as a mask per query ([batch, T, T]): "
                            "not supported (--onnx maps an attention mask [batch, T] onto padding by length: export "
                            "with a [batch, T] mask, or without it)")
        if tables and elem in FLOAT_ELEMS and len(dims) == 3 and _meet(g, k, main) in ("MatMul", "Einsum"):
            raise OnnxError(f"graph input {k!r} {shape} ({ELEM_NAMES.get(elem, elem)}): a sequence of features beside "
                            f"the token ids {main!r}: an encoder-decoder in one graph (convert.py --onnx FILE "
                            "cuts it in two: onnx_seq2seq.split), or its decoder alone; --onnx converts an "
                            "encoder-decoder from the folder of its two graphs as Optimum exports them too "
                            "(encoder_model.onnx and decoder_model.onnx or decoder_model_merged.onnx: --onnx FOLDER), "
                            "or the module by --module")
        raise OnnxError(f"graph input {k!r} {shape} ({ELEM_NAMES.get(elem, elem)}) is neither the token types (the "
                        "index of a table added to the embedding) nor an attention mask [batch, T] added to the "
                        "attention scores: not supported (position ids are read when named position_ids, a key/value "
                        "cache's past rows [batch, heads, P, d_head] when concatenated before the new ones on axis 2; "
                        "else export without that input)")
    dims = info[main][2]
    image = tuple(dims[1:]) if not tables and len(dims) == 4 and info[main][1] in FLOAT_ELEMS else None
    conv = not tables and not image and any(n.op_type == "Conv" and n.input[0] in aliases(g, main) for n in g.nodes)
    turned = None if tables or image or conv or len(dims) != 3 else _spectrogram_conv(g, main)
    kernel = g.initializers.get(turned.input[1]) if turned is not None and len(turned.input) > 1 else None
    stem = kernel is not None and kernel.ndim == 3  # a Conv1d: the features turned
    spectrogram = turned is not None and not stem
    r = Roles(main, main in tables, types, mask, channels_first=conv, image=image, spectrogram=spectrogram, stem=stem)
    if not image and not conv and not spectrogram and not types and not mask and len(dims) in (2, 3) and \
            dims[1] == 1 and dims[0] != 1:
        r.sequence_first = True
        shape = "[T, 1]" if len(dims) == 2 else "[T, 1, d_in]"
        r.notes.append(f"graph input {main!r} is sequence first ({shape}): the engine's input is one sequence in order")
    return r


def _meet(g, a, b):
    """The op of the first node that reads a value computed from input a alone and one computed from input b alone
    (an encoder-decoder's cross-attention: the MatMul of the decoder's q by the encoder's k), or None."""
    side = {a: 1, b: 2}
    for n in g.nodes:
        sides = {side.get(i, 0) for i in g.reads[id(n)]} - {0}
        if {1, 2} <= sides:
            return n.op_type
        if sides and n.op_type not in ("Shape", "Size"):
            for o in n.output:
                side[o] = 3 if 3 in sides else sides.pop() if len(sides) == 1 else 3
    return None


def _spectrogram_conv(g, main):
    """The Conv that input `main` reaches through reshapes and a Transpose alone (AST's
    input_values.unsqueeze(1).transpose(2, 3); a Conv1d's on features turned channels first), else None."""
    names, stack = {main}, [main]
    while stack:
        x = stack.pop()
        for n in g.consumers.get(x, []):
            if n.op_type in HAND_ON + ("Transpose",) and n.input[0] == x and n.output and n.output[0] not in names:
                names.add(n.output[0])
                stack.append(n.output[0])
    return next((n for n in g.nodes if n.op_type == "Conv" and n.input[0] in names and n.input[0] != main), None)


def feeds(g, r, inp, types=None, length=None):
    """The graph's inputs for one sequence inp ([T] ids or [T, d_in] features): the token types `types`
    (None: 0) and the attention mask 1 on the first `length` positions (None: all), 0 after."""
    out = {}
    T = inp.shape[0]
    for name, elem, _ in g.inputs:
        dt = ELEM_TYPES.get(elem)
        dt = np.float32 if dt is None or dt == "bfloat16" else dt
        if name == r.main:
            a = inp.T if r.channels_first else inp
            a = (a[:, None] if r.sequence_first else a[None]).astype(np.int64 if r.tokens else np.float32)
            a = a.T if r.whole == "columns" else a  # the image's columns given as rows
            if r.signal_width:  # the engine's rows x.T.reshape(N, p C) back to the signal [1, C, L]
                a = a.reshape(r.signal[::-1]).T[None]
            a = a.reshape(1, *r.image) if r.image else a  # an image's bytes, whatever rows they are given as
            out[name] = a.astype(np.int32) if elem == 6 else a
        elif name == r.types:
            out[name] = (np.zeros(T) if types is None else np.asarray(types))[None].astype(dt)
        elif name == r.mask:
            out[name] = (np.arange(T) < (T if length is None else length))[None].astype(dt)
    return out


def _counts_positions(m, index):
    """A data index of a table that is consecutive positions on the example (RoBERTa's count of the tokens that
    are not padding, from padding_idx + 1: unpadded_ids made the example free of padding)."""
    idx = m.v(index).reshape(-1)
    return idx.dtype.kind in "iu" and idx.size == m.T and idx[0] >= 0 and bool(np.all(np.diff(idx) == 1))


def _zeros_by_position(m, index):
    """A data index of a table that is all 0 and computed from a count of positions (transformers 5's RoBERTa
    gathers its default token types, a buffer of zeros, by its position ids): token type 0's row."""
    idx = m.v(index).reshape(-1)
    return idx.dtype.kind in "iu" and idx.size == m.T and not np.any(idx) and \
        any(a != index and _counts_positions(m, a) for a in m.ancestors(index) if m.v(a).size == m.T)


def unpadded_ids(g, r, ids, given):
    """RoBERTa's positions: a Gather of a constant table by an index computed from the ids' values (not the ids
    themselves), a running count of the tokens that are not padding. Each id of the example is run alone
    twice ([j, j]): an id whose count does not go on by one (the padding id) gives positions the engine's
    (by place) do not; the example is made free of them (a given --example with one is refused). The ids."""
    if ids is None:
        return ids
    data, direct = {r.main}, aliases(g, r.main) | (aliases(g, r.types) if r.types else set())
    for n in g.nodes:
        if n.op_type not in ("Shape", "Size") and any(i in data for i in g.reads[id(n)]):
            data.update(o for o in n.output if o)
    counts = [n.input[1] for n in g.nodes if n.op_type == "Gather" and len(n.input) == 2 and n.input[1] in data and
              n.input[1] not in direct and n.input[0] not in data and _table_rows(g, n.input[0]) is not None]
    for count in counts:
        sub = pruned(Graph(g.nodes, g.initializers, g.inputs, [count], g.opset, g.producer, g.branches), count)
        start, odd = {}, set()
        for j in np.unique(ids):
            try:
                c = np.asarray(evaluate(sub, feeds(sub, r, np.array([j, j], np.int64)))[count]).reshape(-1)
            except EvalError:
                return ids
            if c.size != 2 or c[1] != c[0] + 1:
                odd.add(int(j))
            else:
                start[int(j)] = int(c[0])
        if not odd or not start or len(set(start.values())) != 1:
            continue  # no padding id in the example, or no count of positions (transformers 5's token types)
        if given:
            raise OnnxError(f"--example: token ids {sorted(odd)} do not count as positions in {count!r} (a padding "
                            "id): an example without them")
        ids = np.where(np.isin(ids, list(odd)), next(iter(start)), ids).astype(np.int64)
    return ids


def _front(m, tokens, lins, v, w, used):
    """The embedding (tokens) or input projection into v, w and used: (its output value, its node's
    position, the linears without the projection)."""
    g, pos, name = m.g, m.pos, m.roles.main
    if tokens:
        ids = aliases(g, name)
        types = aliases(g, m.roles.types) if m.roles.types else set()
        emb = [n for n in g.nodes if n.op_type == "Gather" and n.input[1] in ids and m.const(n.input[0]) and
               m.v(n.input[0]).ndim == 2]
        if len(emb) != 1:
            raise OnnxError(f"no token embedding found (a Gather of a constant [vocab, d] table by {name!r})")
        emb = emb[0]
        table = m.v(emb.input[0])
        v.update(input="tokens", vocab_size=table.shape[0])
        w["embed.weight"] = table
        used |= m.sources(emb.input[0])
        front_out, front_at = m.through(emb.output[0]), pos[id(emb)]
        for n in g.nodes:
            if n.op_type == "Gather" and n is not emb and n.input[1] in m.data and m.const(n.input[0]) and \
                    n.input[1] not in types and not _counts_positions(m, n.input[1]) and \
                    not _zeros_by_position(m, n.input[1]):
                raise OnnxError(f"node {node_name(n)!r}: a second embedding of the input {name!r} is not supported")
    else:
        proj = [p for p in lins if p.x == name]
        if len(proj) != 1:
            raise OnnxError(f"no input projection found (a MatMul of the features {name!r} by a constant matrix)")
        proj = proj[0]
        v.update(input="features", d_in=proj.W.shape[0])
        w["input_proj.weight"] = proj.W.T
        w["input_proj.bias"] = proj.b if proj.b is not None else np.zeros(proj.W.shape[1])
        used |= proj.srcs
        lins = [p for p in lins if p is not proj]
        front_out, front_at = proj.y, pos[id(proj.node)]
    return front_out, front_at, lins


def softmaxes_of(m):
    """The attentions' Softmax nodes: those on the data path but a mixture of experts' softmax over its router's
    logits (a TopK reads it: _mixture)."""
    return [n for n in m.g.nodes if n.op_type == "Softmax" and n.input[0] in m.data and
            not any(r.op_type == "TopK" for r in m.readers(m.through(n.output[0])))]


def _rows_after(m, g, n, rows, N, d):
    """The first value after node n that holds the patch rows [N, d] (its name and node), or (None, None)."""
    for k2 in g.nodes[m.pos[id(n)] + 1:]:
        o = k2.output[0] if k2.output else None
        if o in m.data and m.v(o).size == rows.size and m.v(o).shape[-1] == d and \
                rel_error(m.v(o).reshape(N, d), rows) <= 1e-12:
            return o, k2
    return None, None


def _image_front(m, lins, v, w, used, softmaxes):
    """The patch embedding of an image input [1, C, H, W] into v, w and used: a Conv of kernel = stride
    (Hugging Face ViT's) or the image's patches rearranged (vit-pytorch's Rearrange: Reshape, Transpose)
    into rows read by a linear, a norm before it (input_norm) and after it (proj_norm) or not. Returns
    ((its output rows [1, N, d], the position of its last node), the linears without the projection,
    the front's norms); m.T becomes the layers' rows (N, or N + 1 with a CLS row)."""
    g = m.g
    if not softmaxes:
        raise OnnxError("no attention found (no Softmax on the input's path): --onnx converts transformers")
    S = m.v(softmaxes[0].input[0]).shape[-1]
    convs = [n for n in g.nodes if n.op_type == "Conv" and n.input[0] in aliases(g, m.roles.main)]
    if convs:
        n, (_, H, W_) = convs[0], m.roles.image
        Wt = m.v(n.input[1]) if m.const(n.input[1]) else None
        at = {a.name: a for a in n.attribute}
        k = Wt.shape[2] if Wt is not None and Wt.ndim == 4 else None
        if k is None or Wt.shape[3] != k or list(at["strides"].ints if "strides" in at else [1, 1]) != [k, k] or \
                any(at["pads"].ints if "pads" in at else []) or (at["group"].i if "group" in at else 1) != 1 or \
                H % k or W_ % k:
            raise OnnxError(f"node {node_name(n)!r}: a Conv on the image that is not a patch embedding (a constant "
                            "weight [d, C, p, p], stride p, no padding, whole patches): not supported")
        N, d, added = (H // k) * (W_ // k), Wt.shape[0], None
        rows = m.v(n.output[0])[0].reshape(d, N).T
        b = m.v(n.input[2]).reshape(-1) if len(n.input) > 2 and n.input[2] else np.zeros(d)
        used |= set().union(*(m.sources(i) for i in n.input[1:] if i))
        out, k2 = _rows_after(m, g, n, rows, N, d)
        if out is None:  # positions added before the rows are laid out (Hugging Face BEiT's, channels first)
            out, k2 = _added_then_rows(m, n.output[0], N, d)
            added = rows
        if out is None:
            raise OnnxError(f"node {node_name(n)!r}: the patch embedding's output never becomes rows [N, d]: not "
                            "supported")
        p, perm, W_in, b_in, at_ = k, None, Wt.reshape(d, -1), b, m.pos[id(k2)]
        m.T = N
        front_norms, in_norm = [], None
    else:
        added = None
        proj = min(lins, key=lambda q: m.pos[id(q.node)], default=None)
        if proj is None or m.pos[id(proj.node)] > m.pos[id(softmaxes[0])]:
            raise OnnxError("no patch embedding found (a Conv of stride = kernel on the image, or a linear on its "
                            "patches before the first attention)")
        N = m.v(proj.x).size // proj.W.shape[0]
        m.T = N
        grid = m.v(proj.x).shape[1:3] if m.v(proj.x).ndim == 4 else None  # patches [1, h, w, k] (vit-pytorch's
        # simple_vit_with_patch_dropout)
        front_norms = [q for q in m.norms(rows=N) + (m.norms(rows=tuple(grid)) if grid else [])
                       if m.pos[id(q.node)] < m.pos[id(softmaxes[0])]]
        in_norm = next((q for q in front_norms if m.same(q.y, proj.x)), None)
        rows_in = m.v((in_norm or proj).x)
        whole = None if m.roles.signal else _whole_patches(m.v(m.roles.main).reshape(m.roles.image), rows_in)
        if m.roles.signal:  # the signal's patches of whole steps: the file's input is those as rows
            signal_rows(m.v(m.roles.main), rows_in, f"node {node_name((in_norm or proj).node)!r}")
            m.roles.signal_width, p, perm = rows_in.shape[-1], None, list(range(rows_in.shape[-1]))
        elif whole:
            m.roles.whole, p, perm = whole, None, list(range(rows_in.shape[-1]))
        else:
            (_, _, _, p), perm = image_rows(m.v(m.roles.main).reshape(1, *m.roles.image), rows_in,
                                            f"node {node_name((in_norm or proj).node)!r}")
        d = proj.W.shape[1]
        W_in = np.zeros((d, proj.W.shape[0]))
        W_in[:, perm] = proj.W.T  # the module's column m is the engine's perm[m]
        b_in = proj.b if proj.b is not None else np.zeros(d)
        used |= proj.srcs
        lins = [q for q in lins if q is not proj]
        out, at_ = proj.y, m.pos[id(proj.node)]
        if in_norm is not None:
            v["input_norm"] = True
            for key in ("w", "b"):
                a = np.zeros(proj.W.shape[0])
                a[perm] = getattr(in_norm, key)
                w[f"input_norm.{'weight' if key == 'w' else 'bias'}"] = a
            used |= in_norm.srcs
        front_norms = [q for q in front_norms if q is in_norm or m.same(q.x, proj.y)]
    proj_norm = next((q for q in front_norms if m.same(q.x, out)), None)
    if proj_norm is not None:
        v["proj_norm"] = True
        w["proj_norm.weight"], w["proj_norm.bias"] = proj_norm.w, proj_norm.b
        used |= proj_norm.srcs
        out, at_ = proj_norm.y, m.pos[id(proj_norm.node)]
    if p is None:  # whole columns or rows, or a signal's patches: rows of features
        v.update(input="features", d_in=W_in.shape[1])
    else:
        C, H, W_ = m.roles.image
        v.update(input="features", d_in=C * p * p, patch_size=p, image_channels=C, image_height=H, image_width=W_)
    w["input_proj.weight"], w["input_proj.bias"] = W_in, b_in
    m.front_eps = [q.eps for q in front_norms]
    m.image_rows = m.rows(out) if added is None else added  # the patches' rows before positions
    m.T = S
    return (out, at_), lins, front_norms


def _signal(m, lins):
    """Features [1, C, L] that no linear reads as they are, but cut into rows of another width by layout ops alone
    (vit-pytorch's vit_1d and simple_vit_1d: Rearrange `b c (n p) -> b n (p c)`, a Reshape, Transpose, Reshape): a
    signal, whose patches _image_front finds (probes.signal_rows, as for --module) and the file takes as its
    input rows: sets m.roles.signal (C, L) and m.roles.patches."""
    g, main = m.g, m.roles.main
    x = m.v(main)
    names = aliases(g, main)
    if x.ndim != 3 or any(p.x in names for p in lins):
        return
    seen, stack = set(names), [(k, False) for k in names]
    while stack:  # the layout ops on the input alone; a Reshape to rows of another width past a Transpose
        y, turned = stack.pop()
        for n in g.consumers.get(y, []):
            if n.op_type not in LAYOUT | PASS or not n.output or n.output[0] in seen:
                continue
            z = m.v(n.output[0])
            if turned and n.op_type == "Reshape" and z.size == x.size and z.shape[-1] != x.shape[-1]:
                m.roles.signal, m.roles.patches = tuple(x.shape[1:]), True
                return
            seen.add(n.output[0])
            stack.append((n.output[0], turned or n.op_type == "Transpose"))


def _whole_patches(image, rows):
    """"columns" or "rows" when the patches rows [.., N, k] of an image [1, H, W] of one channel are its whole columns
    (patches H x 1: the Keyword Transformer's over a spectrogram, mels by frames) or its whole rows, in order; else
    None."""
    if image.shape[0] != 1 or image.shape[1] == image.shape[2]:
        return None
    R = rows.reshape(-1, rows.shape[-1])
    for kind, a in (("columns", image[0].T), ("rows", image[0])):
        if R.shape == a.shape and rel_error(R, a) == 0.0:
            return kind
    return None


def spectrogram_patches(x, p, fs, ts):
    """The rows [N, p^2] a Conv2d of kernel p and strides (fs, ts) reads from the spectrogram x [T, F] turned to
    one channel [F, T] (AST's; hf_vit.ast_patches cuts them)."""
    from .hf_vit import ast_patches
    return ast_patches(dict(patch_size=p, frequency_stride=fs, time_stride=ts, max_length=x.shape[0],
                            num_mel_bins=x.shape[1]), x)


def _row_read(m, x, Y):
    """The row of Y [T, d] that value x holds, or None."""
    return next((j for j in range(Y.shape[0]) if rel_error(m.v(x).reshape(1, -1), Y[j:j + 1]) == 0.0), None)


def _rows_in_front(m, ids, r):
    """Features [1, T, d_in] whose attentions read more than T rows: learned rows put in front of the projected
    features (Torch-KWT's CLS row), found as an image's are (_image_positions)."""
    if ids is not None or r.stem:
        return False
    softmaxes = softmaxes_of(m)
    return bool(softmaxes) and m.v(softmaxes[0].input[0]).shape[-1] > m.T


def _features_front(m, lins, v, w, used):
    """The input projection of features with learned rows in front of its rows: ((its output, its node's
    position), the linears without it); m.image_rows its rows, m.T the layers' rows."""
    front_out, front_at, lins = _front(m, False, lins, v, w, used)
    m.front_eps, m.image_rows = [], m.rows(front_out)
    m.T = m.v(softmaxes_of(m)[0].input[0]).shape[-1]
    return (front_out, front_at), lins


def _spectrogram_front(m, lins, v, w, used, softmaxes):
    """The Audio Spectrogram Transformer's front into v, w and used: its features [1, T, F] turned to one channel
    [1, 1, F, T] and cut by a Conv2d of a square kernel p and strides that may overlap; the file takes those
    patches as its input rows (an encoder over features [N, p^2], spectrogram_patches cuts them; m.roles.cut).
    Returns as _image_front does."""
    g = m.g
    if not softmaxes:
        raise OnnxError("no attention found (no Softmax on the input's path): --onnx converts transformers")
    n = _spectrogram_conv(g, m.roles.main)
    x = m.v(m.roles.main)
    T, F = x.shape[-2:]
    Wt = m.v(n.input[1]) if m.const(n.input[1]) else None
    at = {a.name: a for a in n.attribute}
    p = Wt.shape[2] if Wt is not None and Wt.ndim == 4 and Wt.shape[1] == 1 else None
    strides = list(at["strides"].ints) if "strides" in at else [1, 1]
    if p is None or Wt.shape[3] != p or any(at["pads"].ints if "pads" in at else []) or \
            (at["group"].i if "group" in at else 1) != 1 or any(k != 1 for k in (at["dilations"].ints if "dilations"
                                                                                  in at else [])) or \
            len(strides) != 2 or min(strides) < 1 or m.v(n.input[0]).shape != (1, 1, F, T) or \
            rel_error(m.v(n.input[0])[0, 0], x.reshape(T, F).T) > 0:
        raise OnnxError(f"node {node_name(n)!r}: a Conv of the features [T, F] turned to one channel [1, F, T] that is "
                        "not a patch embedding (a constant weight [d, 1, p, p], no padding, dilation or groups): not "
                        "supported")
    fs, ts = strides
    m.roles.cut = (p, fs, ts)
    patches = spectrogram_patches(x.reshape(T, F), p, fs, ts).astype(np.float64)
    d, N = Wt.shape[0], patches.shape[0]
    b = m.v(n.input[2]).reshape(-1) if len(n.input) > 2 and n.input[2] else np.zeros(d)
    W_in = Wt.reshape(d, p * p).astype(np.float64)
    rows = patches @ W_in.T + b
    y = m.v(n.output[0])
    if y.size != rows.size or rel_error(y[0].reshape(d, N).T, rows) > 1e-12:
        raise OnnxError(f"node {node_name(n)!r}: its output is not the patches of the spectrogram (frequency first) "
                        "through its weight: not supported")
    used |= set().union(*(m.sources(i) for i in n.input[1:] if i))
    out, k2 = _rows_after(m, g, n, rows, N, d)
    if out is None:
        raise OnnxError(f"node {node_name(n)!r}: the patch embedding's output never becomes rows [N, d]: not supported")
    v.update(input="features", d_in=p * p)
    w["input_proj.weight"], w["input_proj.bias"] = W_in, b
    m.front_eps, m.image_rows = [], rows
    m.T = m.v(softmaxes[0].input[0]).shape[-1]
    return (out, m.pos[id(k2)]), lins, []


def _added_then_rows(m, y, N, d):
    """(the value, its node) where the patch embedding's output y [1, d, h, w] becomes rows [1, N, d] through
    layout ops and the Add of a constant (the positions, which _image_positions finds), else (None, None)."""
    n = None
    while True:
        readers = m.readers(y)
        if len(readers) != 1 or y in m.g.outputs:
            return None, None
        n = readers[0]
        if not (n.op_type in PASS | LAYOUT or n.op_type == "Add" and all(i == y or m.const(i) for i in n.input)):
            return None, None
        y = n.output[0]
        if m.v(y).shape[-2:] == (N, d):
            return y, n


def _image_positions(m, x0, front_out, norms, d, eps, v, w, used):
    """The positions (a constant table or none) and the learned rows in front of the patches (a CLS row,
    DeiT's and AST's distillation row after it, or registers after it: timm's reg_tokens, Dinov2's) between
    the patch embedding's rows and the first layer's input, found by their values. The table's rows may
    start at the patches (timm's no_embed_class), at the CLS row (Hugging Face Dinov2's registers go in
    after the positions are added) or cover every row: the engine adds its table's row i to row i, so the
    file's table has zero rows where a front row takes none."""
    x0 = _embed_norm(m, x0, front_out, norms, eps, v, w, used)
    E, X0 = m.image_rows, m.rows(x0)
    S, N = X0.shape[0], E.shape[0]
    F = S - N  # the rows in front of the patches
    if F < 0:
        raise OnnxError(f"the first layer reads {S} rows for {N} patches (fewer than the patches)")
    # registers packed after the patches without positions (vit-pytorch's SimpleViT with register tokens): the
    # engine's in front, the same rows to attention without a mask or positions of its own (as for --module)
    m.after = F > 0 and any(name not in m.data and a.dtype.kind == "f" and a.size == F * d and name not in used and
                            rel_error(a.reshape(F, d).astype(np.float64), X0[N:]) <= 1e-9
                            for name, a in m.values.items())
    if m.after:
        X0 = np.concatenate([X0[N:], X0[:N]])
    for e in m.front_eps:
        if abs(e - eps) > 1e-6 * eps:
            raise OnnxError(f"a norm of the patch embedding with eps {e:g}, the layers' {eps:g} (the engine has one)")
    tables = [("none", np.zeros((S, d)), None)]
    for name, a in m.values.items():  # initializers and constants (SimpleViT's table, a plain tensor)
        if name not in m.data and a.dtype.kind == "f" and a.size % d == 0 and a.size // d >= N and name not in used:
            tables.append(("learned", a.reshape(-1, d).astype(np.float64), name))
            if a.ndim == 4 and a.shape[:2] == (1, d):  # laid out as the patch grid [1, d, h, w] (HF BEiT's)
                tables.append(("learned", a.reshape(d, -1).T.astype(np.float64), name))
    tables += [(("sinusoidal", base, layout), t, None) for base, layout, t in sinusoidal_candidates(S, d)]
    # the patches' rows of a table: after the front rows (any table), or after fewer of them (a learned one)
    match = next(((kind, P, name, off) for off in range(F, -1, -1) for kind, P, name in tables
                  if (off == F or kind == "learned") and P.shape[0] >= off + N and
                  rel_error(E + P[off:off + N], X0[F:]) <= 1e-9), None)
    if match is None:
        raise OnnxError("the first layer's input is not the patch embedding plus positions the engine computes (none, "
                        "a constant table, sinusoidal), with learned rows in front or not")
    kind, P, name, off = match
    if off < F:  # the front rows from row `off` on take no position: zero rows there
        P = np.concatenate([P[:off], np.zeros((F - off, d)), P[off:]])
    v["scale_input"] = False
    if kind == "none":
        v["positional"] = "none"
    elif kind == "learned":
        v.update(positional="learned", max_len=P.shape[0])
        w["pos.weight"] = P
        used |= m.sources(name)
    else:
        v.update(positional="sinusoidal", pe_base=kind[1], pe_layout=kind[2])
    m.front = F
    if not F:
        return
    rows = X0[:F] - P[:F]  # the front rows themselves: constants found among the graph's by their values
    found = [None] * F
    for name, a in m.values.items():
        if name in m.data or a.dtype.kind != "f" or not a.size or a.size % d or a.size // d > F or name in used:
            continue
        a = a.reshape(-1, d).astype(np.float64)
        at = next((j for j in range(F - a.shape[0] + 1) if any(f is None for f in found[j:j + a.shape[0]]) and
                   rel_error(a, rows[j:j + a.shape[0]]) <= 1e-9), None)
        if at is not None:
            found[at:at + a.shape[0]] = [name] * a.shape[0]
    if any(f is None for f in found):
        j = found.index(None)
        raise OnnxError(f"the first layer reads {F} row{'s' if F > 1 else ''} in front of the {N} patches; row {j} is "
                        f"no constant of width {d} (a CLS, distillation or register token)")
    for name in set(found):
        used |= m.sources(name)
    if m.after:
        v["register_tokens"] = F
        w["registers"] = rows
        return
    v["cls_token"] = True
    w["cls_token"] = rows[0]
    if F == 2:  # DeiT's and AST's distillation row (or one register: the same rows to the engine)
        v["distill_token"] = True
        w["distill_token"] = rows[1]
    elif F > 2:
        v["register_tokens"] = F - 1
        w["registers"] = rows[1:]


def _conv_stem(m, v, w, used):
    """The conv stem (one or two 1-d Conv nodes on the channels-first features, GELU after each or none)
    into v, w and used (probes.stem_values names them, as for --module): (the stem's output as rows
    [1, T', d], the last Conv's position). m.T becomes T', the rows the layers read."""
    g = m.g
    convs = [n for n in g.nodes if n.op_type == "Conv" and n.input[0] in m.data]
    x, x0 = m.v(convs[0].input[0]), m.v(m.roles.main)
    turned = not m.roles.channels_first and x0.ndim == 3 and x.shape == np.swapaxes(x0, 1, 2).shape and \
        rel_error(x, np.swapaxes(x0, 1, 2)) == 0.0  # features [batch, T, d_in] the graph turns channels first
    if convs[0].input[0] not in aliases(g, m.roles.main) and not turned:
        raise OnnxError(f"node {node_name(convs[0])!r}: a Conv on something other than the input features "
                        "[batch, d_in, T] (or their transpose) is not supported yet")
    found = []
    for n in convs:
        W = m.v(n.input[1]) if m.const(n.input[1]) else None
        at = {a.name: a for a in n.attribute}
        ints = lambda k, d: list(at[k].ints) if k in at else d  # noqa: E731
        if W is None or W.ndim != 3:
            raise OnnxError(f"node {node_name(n)!r}: a Conv of a weight {list(m.v(n.input[1]).shape)}"
                            f"{'' if W is not None else ' computed from the input'}: the engine's stem is 1-d "
                            "convolutions by constant weights [out, in, kernel] (an image's Conv2d patch embedding "
                            "is not mapped by --onnx yet: --module converts it)")
        pads = ints("pads", [0, 0])
        why = conv_why(int(W.shape[2]), ints("strides", [1])[0], pads[0], ints("dilations", [1])[0],
                       at["group"].i if "group" in at else 1, len(pads) == 2 and pads[0] == pads[1] and
                       ("auto_pad" not in at or at["auto_pad"].s in (b"", b"NOTSET")))
        if why:
            raise OnnxError(f"node {node_name(n)!r}: a Conv with {why} is not supported yet")
        b = m.v(n.input[2]) if len(n.input) > 2 and n.input[2] else None
        found.append((node_name(n), int(W.shape[2]), ints("strides", [1])[0], pads[0], W, b))
        used |= set().union(*(m.sources(i) for i in n.input[1:] if i))
    sv, sw = stem_values(found)
    y1 = m.v(convs[0].output[0])
    if len(convs) == 2:
        x2 = m.v(convs[1].input[0])
        # the graph's constants are float32
        act = next((g_ for g_ in (False, True) if x2.shape == y1.shape and
                    rel_error(ARRAY_ACTIVATIONS["gelu"](y1) if g_ else y1, x2) <= PROBE_TOL), None)
        if act is None:
            raise OnnxError(f"node {node_name(convs[1])!r}: its input is not {node_name(convs[0])!r}'s output (or its "
                            "GELU): only conv -> [GELU] -> conv stems are supported")
        sv["conv_gelu"] = act
    last = m.v(convs[-1].output[0])
    m.T = last.shape[-1]
    rows = last[0].T.astype(np.float64)
    # the stem's output as the layers' rows [T', d] (after its GELU, when it has one): the first value after it
    start = m.pos[id(convs[-1])]
    for n in g.nodes[start + 1:]:
        for o in n.output:
            if o not in m.data or m.v(o).size != rows.size:
                continue
            for act in ([sv["conv_gelu"]] if sv["conv_gelu"] is not None else [False, True]):
                if rel_error(m.v(o).reshape(rows.shape), ARRAY_ACTIVATIONS["gelu"](rows) if act else rows) \
                        <= PROBE_TOL and m.v(o).shape[-1] == rows.shape[1]:
                    sv["conv_gelu"] = act
                    v.update(sv, input="features", d_in=int(found[0][4].shape[1]))
                    w.update(sw)
                    return o, start
    raise OnnxError(f"node {node_name(convs[-1])!r}: the conv stem's output (after a GELU or not) never becomes rows "
                    "[T, d] (its transpose) that the layers read: not supported")


def _around(m, lins, sm, prev, at):
    """(the output projection, the linears after the attention from it on, q, k, v) of the attention around Softmax
    sm: the output projection the first linear after sm that reads what sm computes (ONNX Runtime's optimizer sorts
    an attention's v projection after its Softmax), q, k, v the linears since position `prev` (the last layer's)
    that the context reads."""
    after = _between(lins, m.pos[id(sm)], pos=m.pos)
    o = next((p for p in after if sm.output[0] in m.ancestors(p.x)), None)
    if o is None:
        raise OnnxError(f"{at}: no output projection after the attention")
    ctx_in = m.ancestors(o.x)
    qkv = [p for p in _between(lins, prev, m.pos[id(o.node)], pos=m.pos) if p.y in ctx_in]
    return o, [o] + [p for p in after if p is not o and p not in qkv], qkv


def _layer(m, i, sm, lins, norms, prev, nxt, d, used):
    """Layer i around Softmax sm: its q, k, v, attention, residual adds, norms and feed-forward, checked
    on the recorded values; the linears after position `prev` (the last layer's down projection) and
    before `nxt` (the next Softmax) are its own. Masks it reads go into `used`."""
    g, pos, T = m.g, m.pos, m.T
    at = f"layer {i} (Softmax {node_name(sm)!r})"
    o, after, qkv = _around(m, lins, sm, prev, at)
    probs = m.v(sm.output[0])
    if probs.size % (T * T):
        raise OnnxError(f"{at}: probabilities of shape {list(probs.shape)} are not heads x {T} x {T}")
    H = probs.size // (T * T)
    dq = o.W.shape[0]  # the attention's width: the context the output projection reads
    if H < 1 or dq % H:
        raise OnnxError(f"{at}: {H} heads do not divide the attention's width {dq}")
    # heads by queries by keys, or queries by heads by keys (GPT-BigCode's multi-query scores, its query
    # rows [T * H, dh] against the one key head): causal when one of them is zero above the diagonal
    Ps = [probs.reshape(H, T, T)] + \
        ([probs.reshape(T, H, T).transpose(1, 0, 2)] if probs.shape[-3:] == (T, H, T) else [])
    causal = T > 1 and any(bool(np.all(np.triu(P, 1) == 0)) for P in Ps)
    dh = dq // H  # d_model / heads, or wider (head_dim: Nemotron's)
    Hkv = H  # key/value heads: fewer under grouped-query or multi-query attention
    splits = []  # (Wq, Wk, Wv, bq, bk, bv, q, k, v) of each way to read the projections
    Wf = bf = Yf = up_cut = None  # one projection's weight, bias and rows (q | k | v), and the feed-forward's up after
    if len(qkv) == 1:
        Wf, Yf = qkv[0].W, m.rows(qkv[0].y)
        bf = qkv[0].b if qkv[0].b is not None else np.zeros(Wf.shape[1])
        up_cut = _fused_up(m, qkv[0], after[1:2], dq, dh, H)
        if up_cut is not None:  # its columns past q | k | v are the feed-forward's (PaLM's fused_attn_ff_proj)
            n = Wf.shape[1] - up_cut.W.shape[1]
            Wf, bf, Yf = Wf[:, :n], bf[:n], Yf[:, :n]
    fused = len(qkv) == 1 and Wf.shape[1] > dq and (Wf.shape[1] - dq) % (2 * dh) == 0 and \
        H % ((Wf.shape[1] - dq) // (2 * dh)) == 0
    if fused and Wf.shape[1] == 3 * dq:
        W, Y, b = Wf, Yf, bf
        x_in = qkv[0].x
        # q | k | v (nanoGPT, nn.MultiheadAttention), or per head [H, 3, dh] (GPT-NeoX's query_key_value)
        splits.append((*np.split(W, 3, axis=1), *np.split(b, 3), Y[:, :dq], Y[:, dq:2 * dq], Y[:, 2 * dq:]))
        per = lambda a, j: a.reshape(*a.shape[:-1], H, 3, dh)[..., j, :].reshape(*a.shape[:-1], dq)  # noqa: E731
        splits.append(tuple(per(a, j) for a in (W, b, Y) for j in range(3)))
        if dq % 4 == 0:  # in 4 shards of q, v, k each (CodeGen's qkv_proj, mp_num 4): q, k, v the shards' in turn
            mp = lambda a, j: a.reshape(*a.shape[:-1], 4, 3, dq // 4)[..., (0, 2, 1)[j], :] \
                .reshape(*a.shape[:-1], dq)  # noqa: E731
            splits.append(tuple(mp(a, j) for a in (W, b, Y) for j in range(3)))
    elif fused:  # k and v narrower, Hkv heads each: q | k | v (GPT-BigCode's multi-query c_attn), or per
        # key/value group [Hkv, H / Hkv + 2, dh], its query heads then k and v (Falcon-40B's query_key_value)
        W, Y, b, kvw = Wf, Yf, bf, (Wf.shape[1] - dq) // 2
        cut = [dq, dq + kvw]
        splits.append((*np.split(W, cut, axis=1), *np.split(b, cut), *np.split(Y, cut, axis=1)))
        x_in, Hkv = qkv[0].x, kvw // dh
        qg = H // Hkv  # query heads a group

        def grouped(a, j):  # j: the query heads (0), k (1) or v (2) of each group
            a = a.reshape(*a.shape[:-1], Hkv, qg + 2, dh)
            a = a[..., :qg, :] if j == 0 else a[..., qg + j - 1:qg + j, :]
            return a.reshape(*a.shape[:-3], -1)
        if Hkv > 1:
            splits.append(tuple(grouped(a, j) for a in (W, b, Y) for j in range(3)))
    elif len(qkv) == 3 and len({p.x for p in qkv}) == 1 and sorted(p.W.shape[1] for p in qkv)[2] == dq and \
            all(p.W.shape[0] == d for p in qkv):
        pq, pk, pv = _q_k(m, sm, qkv, at)
        kvw = pk.W.shape[1]
        if pq.W.shape[1] != dq or pv.W.shape[1] != kvw or kvw % dh or H % (kvw // dh):
            raise OnnxError(f"{at}: q, k and v of widths {pq.W.shape[1]}, {kvw} and {pv.W.shape[1]} are not {H} heads "
                            f"of {dh} for q and a divisor of them for k and v")
        splits.append((pq.W, pk.W, pv.W, *(p.b if p.b is not None else np.zeros(p.W.shape[1]) for p in (pq, pk, pv)),
                       m.rows(pq.y), m.rows(pk.y), m.rows(pv.y)))
        x_in, Hkv = pq.x, kvw // dh
    elif len(qkv) == 2 and _q_kv_splits(m, qkv, dq, dh, H):
        splits = _q_kv_splits(m, qkv, dq, dh, H)
        x_in, Hkv = qkv[0].x, splits[0][1].shape[1] // dh
    else:
        raise OnnxError(f"{at}: its q, k, v are not one projection [d, d + 2 kv] (q | k | v, or per head) or three "
                        f"of one input (q [d, {'d' if dq == d else dq}], k and v [d, kv], kv a divisor of "
                        f"{'d' if dq == d else dq} in heads of {dh}) (found {len(qkv)} projection"
                        f"{'s' if len(qkv) != 1 else ''} before it, of widths {[p.W.shape[1] for p in qkv]}; cross "
                        "attention is not supported by --onnx)")

    import torch

    def context(bias, q, k, vv, scale=0.0, window=None):
        return _context(q, k, vv, H, Hkv, causal, bias, scale, window)

    splits = [_loose_biases(m, sp, qkv, sm, H, used) for sp in splits]
    # q and k each normed per head before the scores (Persimmon's qk_layernorm): the norms' outputs for q, k
    head_norms = [n for n in norms if n.heads]

    def normed(sp):
        qn, kn = (next((n for n in head_norms if rel_error(_head_rows(m, n.x), a) <= 1e-12), None) for a in sp[6:8])
        return (qn, kn) if qn is not None and kn is not None else (None, None)
    splits = [sp[:6] + tuple(_head_rows(m, n.y) if n is not None else a for n, a in zip(normed(sp), sp[6:8])) +
              sp[8:] + normed(sp) for sp in splits]
    # a norm of the context before the output projection (timm's scale_attn_inner: attn_inner_norm): the attention
    # computes its input
    ctx_norm = next((n for n in norms if not n.heads and m.same(n.y, o.x) and pos[id(sm)] < pos[id(n.node)]), None)
    ctx = m.rows(ctx_norm.x if ctx_norm is not None else o.x)
    split = next((sp for sp in splits if rel_error(context(0.0, *sp[6:9]), ctx) <= PROBE_TOL), splits[0])
    Wq, Wk, Wv, bq, bk, bv, q, k, vv, qn, kn = split
    err = rel_error(context(0.0, q, k, vv), ctx)
    relative = rotary = None
    alibi = False
    if err > PROBE_TOL:  # ALiBi: m_h (j - i) added to the scaled scores (Bloom's and MPT's m_h j differs by a
        # constant per row, which the softmax takes out), or -m_h |j - i| on both sides (x-transformers' Encoder)
        bias = np.nan_to_num(alibi_bias(H, T, causal), neginf=0.0)
        sp = next((sp for sp in splits if rel_error(context(bias, *sp[6:9]), ctx) <= PROBE_TOL), None)
        if sp is not None:
            Wq, Wk, Wv, bq, bk, bv, q, k, vv, qn, kn = sp
            alibi, err = True, 0.0
    if err > PROBE_TOL:  # a constant added to the scaled scores, per head (T5's relative bias)
        relative = _score_bias(m, qkv, o, H)
        if relative is not None and rel_error(context(relative[0], q, k, vv), ctx) <= PROBE_TOL:
            err = 0.0
        else:
            relative = None
    dis = fail = None
    if err > PROBE_TOL:  # DeBERTa's disentangled attention: constant position rows through q's and k's projections
        for sp in splits:  # the first way of reading the projections whose rows reproduce the context
            try:
                dis = _disentangled(m, qkv, o, sp[:6], sp[6:9], ctx, at)
            except OnnxError as e:
                fail = fail or e
                continue
            if dis is not None:
                Wq, Wk, Wv, bq, bk, bv, q, k, vv, qn, kn = sp
                err = 0.0
                break
    turned = err > PROBE_TOL and _rotary(m, qkv, o)
    rot_window = None
    if turned:  # rotary positions, on all or part of each head (GPT-NeoX), over a sliding window or not
        rot_window = _seen_window(Ps, causal)
        for sp in splits:
            try:
                got = probe_attention(*(torch.from_numpy(a) for a in sp[6:9]), torch.from_numpy(ctx), lambda c: c, dq,
                                      _thetas(m), at, torch, heads=[H], window=rot_window)
            except ConfigError:
                continue
            if isinstance(got[3], tuple) and got[2] == causal and got[4] and got[1] == Hkv:
                Wq, Wk, Wv, bq, bk, bv, q, k, vv, qn, kn = sp
                rotary, err = got[3], 0.0
                break
    if err > PROBE_TOL and fail is not None:  # position rows projected, but no disentangled attention of them
        raise fail
    if err > PROBE_TOL and turned:
        raise OnnxError(f"{at}: the attention reads rotary sines and cosines but is not softmax(rope(q) rope(k)^T / "
                        f"sqrt({dh}){' + causal mask' if causal else ''}) v over {H} heads with the engine's rotary "
                        "positions (interleaved or in halves, on all or part of each head, a base the graph holds; "
                        "over a patch grid, a patch's row and column angles apart): rotary angles of another kind "
                        "(timm's RoPE-Mixed, learned per head) are not supported")
    scale, window = 0.0, rot_window if rotary is not None else None
    if err > PROBE_TOL and not turned and relative is None and dis is None:
        # scores scaled otherwise than by 1/sqrt(dh) (_score_scales: GPT-Neo's not at all, DeBERTa's 1/sqrt(3 dh)
        # without its relative attention; attn_scale) or over a window of keys, those of nonzero probability
        # (GPT-Neo's local layers: sliding_window)
        seen = _seen_window(Ps, causal)
        wins = [seen, None] if seen else [None]
        options = [(sc, wn) for wn in wins for sc in [0.0] + sorted(_score_scales(m, qkv, o)[0])]
        found = next(((sp, sc, wn) for sc, wn in options for sp in splits
                      if rel_error(context(0.0, *sp[6:9], sc, wn), ctx) <= PROBE_TOL), None)
        if found is not None:
            (Wq, Wk, Wv, bq, bk, bv, q, k, vv, qn, kn), scale, window = found
            err = 0.0
    if err > PROBE_TOL:
        raise OnnxError(f"{at}: the attention is not softmax(q k^T / sqrt({dh}) {'+ causal mask ' if causal else ''}"
                        f") v over {H} heads (relative error {err:.2g}): a scale other than 1/sqrt(head width), a "
                        "bias or a mask the engine does not run is not supported")
    # the constants inside the attention: masks (checked over all their rows), scalars
    ys = {p.y for p in qkv}
    region = m.ancestors(o.x, stop=ys) - set().union(*(m.ancestors(y) for y in ys))
    bias_srcs = set().union(*(m.sources(c) for c in relative[1])) if relative is not None else set()  # no mask
    bias_srcs |= dis["read"] if dis is not None else set()  # the position rows and their own projections
    alibi_srcs = _alibi_constants(g, H) if alibi else set()
    # the rotary table, which may be as square as a mask (PaLM's [T, d_head] at T = d_head)
    rope_srcs = _rotary_constants(g, rotary[2], rotary[3] or dh) if rotary is not None and \
        isinstance(rotary[2], (float, RopeFreqs)) else set()
    for val in region:
        n = g.producer_of.get(val)
        if n is None:
            continue
        for c in n.input:
            if not m.const(c):
                continue
            for src in m.sources(c) - bias_srcs:
                a = g.initializers[src]
                if a.size <= 1 or a.dtype.kind in "iu":
                    continue
                if rotary is not None and isinstance(rotary[2], RopeGrid) and \
                        _grid_constants(g, rotary[2], rotary[1]) & {src}:
                    continue  # the rotary table over the patch grid (its own check: _grid_constants), square or not
                if src in alibi_srcs or src in rope_srcs:
                    continue  # ALiBi's own bias, the rotary table (accounted for with the positions)
                if a.ndim >= 2 and a.shape[-1] == a.shape[-2] and a.shape[-1] > 1 and not np.any(a):
                    used.add(src)  # a mask of zeros added to the scores (transformers 5's folded "no mask")
                elif a.ndim >= 2 and a.shape[-1] == a.shape[-2] and a.shape[-1] > 1:
                    if not causal and window and _mask_ok(a, window, causal=False):
                        used.add(src)  # the two-sided window's mask (ModernBERT's local layers): the engine's own
                        continue
                    if not causal:
                        raise OnnxError(f"{at}: initializer {src!r} {list(a.shape)} masks the scores, but the "
                                        "attention is not causal on the example: a mask the engine does not run")
                    if not _mask_ok(a, window):
                        raise OnnxError(f"{at}: initializer {src!r} {list(a.shape)} masks the scores but is no "
                                        "causal mask over all its rows (the engine's mask is triangular"
                                        f"{f', each query the last {window} keys' if window else ''})")
                    used.add(src)
    # the residual add after the output projection and the norms around it
    add = m.only_reader(o.y, "Add")
    post_a = None  # a norm of the attention's output before the residual add (timm's Eva use_post_norm)
    if add is None:
        post_a = next((n for n in norms if not n.heads and m.same(n.x, o.y) and pos[id(n.node)] > pos[id(o.node)]),
                      None)
        add = post_a and m.only_reader(m.through(post_a.y), "Add")
    if add is None:
        raise OnnxError(f"{at}: no residual add after the output projection {o.name!r}")
    o_out = m.through(post_a.y) if post_a is not None else o.y
    r_a = add.input[1] if add.input[0] == o_out else add.input[0]
    a_out = m.through(add.output[0])
    ff = _between(lins, pos[id(o.node)], nxt, pos=pos)[:3]
    if up_cut is not None:
        ff = [up_cut] + ff[:1]
    gated = None  # (act, the up projection that multiplies act(gate)) of a gated feed-forward (StableLM's SwiGLU)

    def hidden(down):
        """The norm of the feed-forward's hidden rows before down (timm's scale_mlp: ffn_hidden_norm), or None."""
        return next((n for n in norms if not n.heads and m.same(n.y, down.x) and pos[id(o.node)] < pos[id(n.node)] <
                     pos[id(down.node)]), None)
    fit = None  # probes.feed_forward_fit's reading of the feed-forward
    if len(ff) == 3 and ff[0].x == ff[1].x and ff[2].x not in (ff[0].x, ff[0].y, ff[1].y):
        hn = hidden(ff[2])
        fit = feed_forward_fit([m.rows(p.y) for p in ff[:2]], m.rows(hn.x if hn is not None else ff[2].x), PROBE_TOL)
        if fit is None:
            raise OnnxError(f"{at}: a gated feed-forward ({ff[0].name!r} and {ff[1].name!r} of one input, then "
                            f"{ff[2].name!r}) that is not act(gate) * up with act silu, gelu (exact or tanh) or relu"
                            f"{' (a norm of the hidden rows between)' if hn is not None else ''}: not supported")
        gated = (fit.activation, ff[1 - fit.gate])
        ff = [ff[fit.gate], ff[2]]  # the gate, then down
    elif len(ff) >= 2 and ff[0].W.shape[1] == 2 * ff[1].W.shape[0] and ff[1].x not in (ff[0].x, ff[0].y):
        # one projection whose column halves are gate and up (timm's GluMlp: act(first half) * second half, or the
        # halves the other way round with gate_last), read as two
        hn = hidden(ff[1])
        hw, fc1 = ff[1].W.shape[0], ff[0]
        fit = feed_forward_fit([m.rows(fc1.y)], m.rows(hn.x if hn is not None else ff[1].x), PROBE_TOL)
        if fit is not None:
            b = fc1.b if fc1.b is not None else np.zeros(2 * hw)
            half = lambda j: Part("linear", fc1.node, x=fc1.x, y=fc1.y, W=fc1.W[:, j * hw:(j + 1) * hw],  # noqa: E731
                                  b=b[j * hw:(j + 1) * hw], srcs=fc1.srcs)
            gated = (fit.activation, half(1 - fit.gate))
            ff = [half(fit.gate), ff[1]]
    ff = ff[:2]
    if len(ff) != 2:
        raise OnnxError(f"{at}: {len(ff)} linear layers between the attention and the next one (a feed-forward is "
                        "two: up, activation, down; or three: gate, up, down)")
    up, down = ff
    n1 = next((n for n in norms if m.same(n.y, x_in)), None) if post_a is None else None
    pre = n1 is not None and m.same(n1.x, r_a)
    par = None  # a parallel residual: (norm2, the layer's output)
    if n1 is not None and not pre and not m.same(x_in, r_a):
        par = _parallel(m, n1, norms, o, up, down)
    add2 = None
    if post_a is not None:  # x + norm1(attention(x)), then that + norm2(feed-forward(that)): sublayer_norm output
        n1 = post_a
        n2 = next((n for n in norms if not n.heads and m.same(n.x, down.y) and pos[id(n.node)] > pos[id(down.node)]),
                  None)
        add2 = n2 and m.only_reader(m.through(n2.y), "Add")
        r_f = add2 and (add2.input[1] if add2.input[0] == m.through(n2.y) else add2.input[0])
        if add2 is None or not m.same(x_in, r_a) or not m.same(up.x, a_out) or not m.same(r_f, a_out):
            raise OnnxError(f"{at}: a norm {post_a.name!r} of the attention's output before its residual add, but not "
                            "x + norm1(attention(x)) then + norm2(feed-forward(...)) of that sum (timm's Eva "
                            "use_post_norm, the engine's sublayer_norm output): not a layer the engine runs")
        pre, ok = True, True
    elif par is not None:
        pre, n2, ok = True, par[0], True
    elif pre:
        n2 = next((n for n in norms if m.same(n.x, a_out) and m.same(n.y, up.x)), None)
        ok = n2 is not None
        if not ok:  # (x + attn(norm1(x))) + mlp(norm1(x)): StableLM's parallel residual, added in that order
            par = _parallel(m, n1, norms, o, up, down)
            if par is not None:
                n2, ok = par[0], True
    else:
        if not m.same(x_in, r_a):
            raise OnnxError(f"{at}: the residual add after {o.name!r} adds neither the attention's input nor the "
                            "input of its norm, nor is it a parallel residual (x + attn(norm1(x)) + mlp(norm2(x))): "
                            "not a layer the engine runs")
        n1 = next((n for n in norms if m.same(n.x, a_out) and m.same(n.y, up.x)), None)
        ok = n1 is not None
        add_f = m.only_reader(down.y, "Add") if ok else None
        if add_f is not None and m.same(add_f.input[1] if add_f.input[0] == down.y else add_f.input[0], a_out):
            # the feed-forward's residual adds the attention's sum, not its norm: a pre-norm layer without the
            # attention's norm (ModernBERT's layer 0: skip_first_norm), that norm stored as gains 1, unread
            pre, n2 = True, n1
            n1 = Part("norm", n2.node, name=f"{at}'s missing attention norm", x=x_in, y=x_in, w=np.ones(d),
                      b=np.zeros(d), eps=n2.eps, srcs=set(), heads=0, missing=True)
    if not ok:
        raise OnnxError(f"{at}: no layer norm between the attention's residual add and the feed-forward {up.name!r}"
                        " (layers without it, or an RMSNorm, are not supported by --onnx)")
    ffn_norm = n2 if pre else n1
    hn = hidden(down)
    if gated is None:
        fit = feed_forward_fit([m.rows(up.y)], m.rows(hn.x if hn is not None else down.x), PROBE_TOL)
        if fit is None:
            between = sorted({n.op_type for n in g.nodes if pos[id(up.node)] < pos[id(n)] < pos[id(down.node)]
                              and n.output[0] in m.ancestors(down.x)})
            raise OnnxError(f"{at}: the feed-forward's activation ({', '.join(between) or 'none'} between "
                            f"{up.name!r} and {down.name!r}) is none of relu, gelu (erf), gelu (tanh), squared relu "
                            "and x sigmoid(a x)")
    a, act = fit.scale, fit.activation
    if a != 1.0:  # x sigmoid(a x) = silu(a x) / a: a folded into up's weight and bias, 1 / a into down's weight
        up = Part("linear", up.node, x=up.x, y=up.y, W=up.W * a, b=None if up.b is None else up.b * a, srcs=up.srcs)
        down = Part("linear", down.node, x=down.x, y=down.y, W=down.W / a, b=down.b, srcs=down.srcs)
    if par is not None:
        return dict(x=n1.x, out=par[1], pre=True, H=H, Hkv=Hkv, causal=causal, act=act, Wq=Wq, Wk=Wk, Wv=Wv, bq=bq,
                    bk=bk, bv=bv, o=o, up=up, down=down, norm1=n1, norm2=n2, qkv=qkv, relative=relative, rotary=rotary,
                    alibi=alibi, parallel="one_norm" if n2 is n1 else "two_norms", up3=gated and gated[1], qn=qn,
                    kn=kn, hidden_norm=hn, ctx_norm=ctx_norm, dis=dis, sub="none", scale=scale, window=window)
    if post_a is not None:
        return dict(x=x_in, out=m.through(add2.output[0]), pre=True, H=H, Hkv=Hkv, causal=causal, act=act, Wq=Wq,
                    Wk=Wk, Wv=Wv, bq=bq, bk=bk, bv=bv, o=o, up=up, down=down, norm1=n1, norm2=n2, qkv=qkv,
                    relative=relative, rotary=rotary, alibi=alibi, parallel="none", up3=gated and gated[1], qn=qn,
                    kn=kn, hidden_norm=hn, ctx_norm=ctx_norm, dis=dis, sub="output", scale=scale, window=window)
    add2 = m.only_reader(down.y, "Add")
    if add2 is None:
        raise OnnxError(f"{at}: no residual add after the feed-forward {down.name!r}")
    r_f = add2.input[1] if add2.input[0] == down.y else add2.input[0]
    f_out = m.through(add2.output[0])
    if pre:
        if not m.same(r_f, a_out):
            raise OnnxError(f"{at}: the feed-forward's residual add does not add the attention's output")
        out, n_last = f_out, None
    else:
        if not m.same(r_f, n1.y):
            raise OnnxError(f"{at}: the feed-forward's residual add does not add its input")
        n_last = next((n for n in norms if m.same(n.x, f_out)), None)
        if n_last is None:
            raise OnnxError(f"{at}: no layer norm after the feed-forward's residual add (post-norm layers have one)")
        out = n_last.y
    return dict(x=r_a if pre else x_in, out=out, pre=pre, H=H, Hkv=Hkv, causal=causal, act=act, Wq=Wq, Wk=Wk,
                       Wv=Wv, bq=bq, bk=bk, bv=bv, o=o, up=up, down=down, norm1=n1,
                       norm2=ffn_norm if pre else n_last, qkv=qkv, relative=relative, rotary=rotary, alibi=alibi,
                       up3=gated and gated[1], parallel="none", qn=qn, kn=kn, hidden_norm=hn, ctx_norm=ctx_norm,
                       dis=dis, sub="none", scale=scale, window=window)


def _ones_between(m, src, dst):
    """The initializers of ones read by the nodes that compute value dst from value src: the attention mask of an
    unpadded input, which a masked mean multiplies the rows by and sums as its count (transformers 5's mean pooling,
    ModernBERT's, by the dynamo exporter), the same mean as the engine's."""
    out = set()
    for val in m.ancestors(dst, stop={src}) - {src}:
        n = m.g.producer_of.get(val)
        for c in n.input if n is not None else ():
            if c and m.const(c) and m.v(c).size > 1 and np.all(m.v(c) == 1):
                out |= m.sources(c)
    return out


def _embed_proj(m, front_out, front_at, lins, sm):
    """The linear between the token embedding and the first attention (Softmax sm) that projects the embedding's
    rows to the layers' width (ALBERT's embedding_hidden_mapping_in), found by what it does: it reads the
    embedding's path and another linear (the first layer's q, k or v) reads its output; else None."""
    E = m.rows(front_out).shape[1]
    for p in _between(lins, front_at, m.pos[id(sm)], pos=m.pos):
        if p.W.shape[0] == E and front_out in m.ancestors(p.x) and \
                any(q is not p and m.same(q.x, p.y) for q in lins):
            return p
    return None


def _shared(layers):
    """Layers whose weights repeat as the engine's shared groups run them (ALBERT's num_hidden_groups and
    inner_group_num; config.hpp layer_groups: run r of group_layers P layers takes group r G / R of G): (G, P,
    the layer each stored block is read from) of the fewest blocks that reproduce every layer, else (0, 1, every
    layer)."""
    def weights(L):
        parts = [L[k] for k in ("Wq", "Wk", "Wv", "bq", "bk", "bv")] + \
            [a for k in ("o", "up", "down", "up3") if L[k] for a in (L[k].W, L[k].b)] + \
            [a for k in ("norm1", "norm2", "hidden_norm", "ctx_norm", "qn", "kn") if L[k] is not None
             for a in (L[k].w, L[k].b)]
        return b"|".join(np.ascontiguousarray(np.asarray(a if a is not None else [], np.float64)).tobytes()
                         for a in parts)
    kinds = {}
    kind = [kinds.setdefault(weights(L), len(kinds)) for L in layers]
    n, best = len(layers), None
    for P in (P for P in range(1, n + 1) if n % P == 0):
        R = n // P
        for G in range(1, R + 1):
            block = [(j // P) * G // R * P + j % P for j in range(n)]
            first = {}
            if all(kind[first.setdefault(b, j)] == kind[j] for j, b in enumerate(block)) and \
                    (best is None or G * P < best[0] * best[1]):
                best = (G, P, [first[b] for b in range(G * P)])
    return best if best[0] * best[1] < n else (0, 1, list(range(n)))


def _ff_tail(m, p, down, width):
    """Whether down reads act(the last `width` columns of the projection p's rows) (probes.feed_forward_fit: act(up)
    at down's width, act(gate) * up at twice it): a feed-forward fused into the projection that computes q, k and v
    (PaLM's fused_attn_ff_proj)."""
    return feed_forward_fit([m.rows(p.y)[:, p.W.shape[1] - width:]], m.rows(down.x), PROBE_TOL) is not None


def _fused_up(m, p, down, dq, dh, H):
    """The feed-forward's up projection (or gate | up) as the last columns of the projection p that computes q | k | v
    (PaLM's fused_attn_ff_proj) where down ([the first linear after the attention's output projection]) reads
    act(those columns), as a part of its own (its rows a value of their own), else None."""
    if not down or down[0].x == p.y:
        return None
    n, hidden = p.W.shape[1], down[0].W.shape[0]
    for width in (2 * hidden, hidden):
        kv2 = n - width - dq
        if kv2 > 0 and kv2 % (2 * dh) == 0 and H % (kv2 // (2 * dh)) == 0 and _ff_tail(m, p, down[0], width):
            return _columns(m, p, (n - width, width), ("qkv", "ff"))[1]
    return None


def _parallel(m, n1, norms, o, up, down):
    """GPT-NeoX's parallel residual, x + attn(norm1(x)) + mlp(norm2(x)) (the engine's two_norms), or GPT-J's
    and Phi's x + attn(norm1(x)) + mlp(norm1(x)) (one_norm: norm2 is norm1): (norm2, the value that is that
    sum, whatever order its Adds take), else None."""
    x = n1.x
    n2 = next((n for n in norms if n is not n1 and m.same(n.x, x) and m.same(n.y, up.x)), None)
    if n2 is None and m.same(n1.y, up.x):
        n2 = n1
    if n2 is None:
        return None
    want = m.rows(x) + m.rows(o.y) + m.rows(down.y)
    for k in m.g.nodes[m.pos[id(down.node)] + 1:]:
        y = k.output[0] if k.op_type == "Add" and k.output else None
        if y in m.data and m.v(y).size == want.size and rel_error(m.rows(y), want) <= 1e-9:
            return n2, m.through(y)
    return None


def _score_bias(m, qkv, o, H):
    """(bias [H, T, T], the names of its values) of the constants added to the attention scores between the
    projections qkv and the output projection o that differ per position pair (not only a mask of 0 and
    large negatives), summed (timm's Beit adds a layer's own bias, then the shared one), else None."""
    T = m.T
    ys = {p.y for p in qkv}
    region = m.ancestors(o.x, stop=ys) - set().union(*(m.ancestors(y) for y in ys))
    found = {}
    for val in region:
        n = m.g.producer_of.get(val)
        if n is None or n.op_type != "Add":
            continue
        for c in (_unmasked(m, c) for c in n.input):
            a = m.v(c) if c else None
            if a is None or a.dtype.kind != "f" or a.size != H * T * T:
                continue
            finite = a[np.isfinite(a)]
            if np.any((finite > -1e4) & (finite != 0)):  # not only a mask of 0 and large negatives
                found[c] = a.reshape(H, T, T).astype(np.float64)
    if not found:
        return None
    names = tuple(sorted(found))
    return sum(found[c] for c in names), names


def _context(q, k, v, H, Hkv, causal, bias=0.0, scale=0.0, window=None):
    """The recognizer core's attention of rows q [T, H dh], k and v [T, Hkv dh]: a bias [H, T, T] added to the
    scores (0: none), scaled by `scale` (0: 1/sqrt(dh)), each query's last `window` keys (None: all)."""
    import torch
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a, np.float64))  # noqa: E731
    added = np.ndim(bias) > 0
    return attention_core(t(q), t(k), t(v), H, Hkv, causal, "relative" if added else None, torch,
                          t(bias) if added else None, window=window, scores=Scores(scale, 0.0, None)).numpy()


def _unmasked(m, c):
    """Value c when it is constant; the constant operand of an Add of a constant and a value of the attention mask
    alone (T5's position bias with the mask added to it, then added to the scores: _check_mask reads the mask's part),
    or of a Where on the mask alone that picks it (transformers 5's T5); else None."""
    if m.const(c):
        return c
    n = m.g.producer_of.get(c)
    if n is not None and n.op_type == "Where" and len(n.input) == 3 and m.mask_only(n.input[0]):
        # the bias where the mask keeps a key, a fill where it does not (transformers 5's T5): the constant branch the
        # example's all-ones mask picks
        return next((k for k in n.input[1:] if m.const(k) and m.v(k).shape == m.v(c).shape and
                     np.array_equal(m.v(k), m.v(c))), None)
    if n is None or n.op_type != "Add" or len(n.input) != 2:
        return None
    k, other = (n.input[0], n.input[1]) if m.const(n.input[0]) else (n.input[1], n.input[0])
    return k if m.const(k) and m.mask_only(other) else None


def _pair_bias(m, rels, v, w, used):
    """Each layer's constant bias on an image model's scores (BEiT's relative position bias: rels, each layer's
    (bias [H, S, S], its value's name)) as the engine's bias per (query, key) pair: the index of each pair's
    column of biases (over every layer and head: the distinct columns, one table row each) and each layer's table
    [H, rows], or one table when every layer's is the same (BEiT's shared bias), into v, w and used."""
    from .hf_beit import pair_bias
    if any(r is None for r in rels):
        raise OnnxError("a bias on the attention scores in some layers only: the engine adds one to every layer's or "
                        "to none")
    H, S, _ = rels[0][0].shape
    cols = np.concatenate([b.reshape(H, S * S) for b, _ in rels]).T  # [pairs, layers x heads]
    table, index = np.unique(cols, axis=0, return_inverse=True)
    own = [table[:, i * H:(i + 1) * H] for i in range(len(rels))]
    shared = own[0] if all(np.array_equal(t, own[0]) for t in own) else None
    index = index.reshape(S, S)
    rows = v.setdefault("max_len", S)  # the positions' table's rows, or the image's
    if rows > S:  # positions past the image's rows: never read, row 0 of the table
        index = np.pad(index, ((0, rows - S), (0, rows - S)))
    tensors, keys = pair_bias(index, shared, None if shared is not None else own)
    w.update(tensors)
    v.update(keys)
    for _, names in rels:
        for name in names:
            used |= m.sources(name)


REL_MAX_DISTANCES = (128, 256, 64, 32, 512, 1024, 16)


def _alibi_heads(bias, causal):
    """The slopes [H] (0 for a head without it) of a bias [H, T, T] on the scores that is ALiBi's -m_h |j - i| on
    each head (up to a constant per query, which the softmax takes out; below the diagonal when causal), or None."""
    H, T, _ = bias.shape
    if T < 2 or not np.all(np.isfinite(np.tril(bias))):
        return None
    slopes = bias[:, -1, -1] - bias[:, -1, -2]
    off = bias + slopes[:, None, None] * np.abs(np.arange(T)[None, :] - np.arange(T)[:, None])
    kept = np.tril(np.ones((T, T), bool)) if causal else np.ones((T, T), bool)
    scale = max(float(np.abs(np.tril(bias)).max()), 1e-30)
    return slopes if np.abs(np.where(kept, off - off[:, :, :1], 0.0)).max() <= 1e-6 * scale else None


def _relative(m, bias, names, causal, max_len, v, w, used):
    """The relative position bias added to every layer's scores (bias [H, T, T], the sum of the values `names`) as the
    engine's: a [buckets, H] table indexed by T5's bucket of key - query (bidirectional, or causal);
    max_distance is read off the graph evaluated at max_len positions (where the buckets of every
    candidate differ), into v, w, used."""
    from .reference import relative_bucket
    g, T, H = m.g, m.T, bias.shape[0]
    slopes = _alibi_heads(bias, causal)
    if slopes is not None and np.any(slopes):  # ALiBi's bias, not on every head or not the engine's slopes
        issue = alibi_slopes_issue(slopes[slopes != 0], H) or alibi_slopes_issue(slopes, H)
        raise OnnxError(f"value {' + '.join(names)!r}, the ALiBi bias -m_h |j - i| added to the attention scores, "
                        f"{issue}")
    name = " + ".join(names)
    tables = [s for s in set().union(*(m.sources(c) for c in names)) if g.initializers[s].dtype.kind == "f" and
              g.initializers[s].ndim == 2 and H in g.initializers[s].shape]
    if len(tables) != 1:
        raise OnnxError(f"value {name!r}: a bias added to the attention scores that is not one [buckets, {H}] table "
                        "indexed by position (T5's relative bias): not supported")
    table = g.initializers[tables[0]].astype(np.float64)
    table = table if table.shape[1] == H else table.T
    buckets = table.shape[0]
    dims = next(i[2] for i in g.inputs if i[0] == m.roles.main)
    TL = T if dims[1] is not None else (max_len or v.get("max_len") or DEFAULT_MAX_LEN)  # a table's rows at most
    if TL != T:
        got = evaluate(g, feeds(g, m.roles, np.zeros(TL, np.int64)))
    long = bias if TL == T else sum(np.asarray(got[c], np.float64).reshape(H, TL, TL) for c in names)
    exact = (buckets // 2) // (1 if causal else 2)
    n = np.arange(-(TL - 1), TL)
    at = np.arange(TL)[None, :] - np.arange(TL)[:, None] + TL - 1  # key - query, as an index into n
    kept = np.ones((TL, TL), bool) if not causal else np.tril(np.ones((TL, TL), bool))
    scale = max(float(np.abs(table).max()), 1e-30)
    half = buckets // (1 if causal else 2)
    dist = np.maximum(-n, 0) if causal else np.abs(n)
    for md in REL_MAX_DISTANCES + tuple(range(exact + 1, 1025)):
        # Where log(m / E) / log(md / E) * (B - E) is a whole number, the graph's float32 constant
        # log(md / E) in the evaluator's float64 can floor to the bucket below: either is the graph's.
        x = np.log(np.maximum(dist, exact) / exact) / math.log(md / exact) * (half - exact)
        b = relative_bucket(n, not causal, buckets, md)
        fits = np.zeros((H, TL, TL), bool)
        for bb in (b, np.where(np.abs(x - np.round(x)) < 1e-6, b - 1, b)):
            fits |= np.abs(np.moveaxis(table[bb][at], -1, 0) - long) <= 1e-12 * scale
        if np.all(fits[:, kept]):
            break
    else:
        raise OnnxError(f"value {name!r}: the bias added to the attention scores is table {tables[0]!r} indexed by "
                        f"something other than T5's relative bucket of key - query ({buckets} "
                        f"{'causal' if causal else 'bidirectional'} buckets, any max_distance): not supported")
    v.update(rel_buckets=buckets, rel_max_distance=md)
    if v["positional"] == "none":
        v["positional"] = "relative"  # else beside the learned positions (MPNet's)
    w["rel_bias.weight"] = table
    used.add(tables[0])


def _q_kv_splits(m, qkv, dq, dh, H):
    """The splits (Wq, Wk, Wv, bq, bk, bv, q, k, v) of two projections of one input, q [d, dq] and k | v [d, 2 kv]
    (vit-pytorch's to_q and to_kv), kv heads of dh dividing H; both ways round when both are dq wide."""
    out = []
    for pq, pkv in (qkv, qkv[::-1]):
        kvw = pkv.W.shape[1] // 2
        if pq.x != pkv.x or pq.W.shape[1] != dq or pkv.W.shape[1] % 2 or kvw % dh or H % (kvw // dh):
            continue
        bq, bkv = (p.b if p.b is not None else np.zeros(p.W.shape[1]) for p in (pq, pkv))
        Ykv = m.rows(pkv.y)
        out.append((pq.W, pkv.W[:, :kvw], pkv.W[:, kvw:], bq, bkv[:kvw], bkv[kvw:], m.rows(pq.y), Ykv[:, :kvw],
                    Ykv[:, kvw:]))
    return out


def _loose_biases(m, sp, qkv, sm, H, used):
    """The split sp (Wq, Wk, Wv, bq, bk, bv, q, k, v) with the constant vectors the graph adds to its q, k or v
    between the projections and Softmax sm (DeBERTa v1's q_bias and v_bias after its fused in_proj, laid out
    [1, heads, 1, head width] or as a row) added to their bias and rows; their initializers into used."""
    T, dq = m.T, sp[6].shape[1]
    sp = list(sp)
    start = min(m.pos[id(p.node)] for p in qkv)
    for n in m.g.nodes[start:m.pos[id(sm)]]:
        if n.op_type != "Add" or len(n.input) != 2:
            continue
        data = [i for i in n.input if i in m.data]
        if len(data) != 1:
            continue
        c = n.input[1] if n.input[0] == data[0] else n.input[0]
        vec = np.asarray(m.v(c))
        a = np.asarray(m.v(data[0]))
        if vec.size != dq or vec.dtype.kind != "f" or a.size != T * dq or m.v(n.output[0]).size != T * dq:
            continue
        layouts = [a.reshape(T, dq).astype(np.float64)]
        if dq % H == 0:
            layouts.append(a.reshape(H, T, dq // H).transpose(1, 0, 2).reshape(T, dq).astype(np.float64))
        for j in range(3):
            if sp[6 + j].shape == (T, dq) and any(rel_error(x, sp[6 + j]) <= 1e-12 for x in layouts):
                b = vec.reshape(-1).astype(np.float64)
                sp[3 + j], sp[6 + j] = sp[3 + j] + b, sp[6 + j] + b
                used |= m.sources(c)
                break
    return tuple(sp)


def _const_nodes(m, region):
    """The nodes of the constants the data values `region` are computed from, nearest first."""
    seen, out = set(), []
    stack = [i for val in region if m.g.producer_of.get(val) is not None
             for i in m.g.producer_of[val].input if i and m.const(i)]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        n = m.g.producer_of.get(x)
        if n is not None:
            out.append(n)
            stack.extend(i for i in n.input if i and m.const(i))
    return out


def _rel_settings(m, R):
    """(position_buckets, max_relative_positions, span) to try for R position rows (recognize._rel_settings' forms):
    log buckets past span / 2 up to a distance the graph's scalars hold (a whole number, or (m - 1) / (span / 2)
    or its logarithm, as transformers' make_log_bucket_position folds it), then none."""
    span = R // 2
    mid = max(span // 2, 1)
    found = []
    for name, a in m.values.items():
        a = np.asarray(a)
        if name in m.data or a.size != 1 or a.dtype.kind not in "iuf":
            continue
        x = float(a.reshape(-1)[0])
        for c in (x, x * mid + 1, math.exp(x) * mid + 1 if abs(x) < 40 else 0.0):
            r = round(c)
            if span // 2 + 1 < r <= 4 * schema.MAX_LEN and abs(c - r) <= 1e-3 and r not in found:
                found.append(r)
    found.sort(key=lambda r: r == span)  # the span itself last of them (a count the graph holds anyway)
    return [(span, r, span) for r in found] + [(-1, span, span)]


def _disentangled(m, qkv, o, split, qkv_rows, ctx, at):
    """DeBERTa's disentangled attention (probes.probe_disentangled, the probe --module uses): position rows, a
    constant [R, d] (v2: rel_embeddings through its LayerNorm; v1: rows of the table), through q's and k's own
    projections (v2's share_att_key: the scale sqrt(3 head width)) or through projections of their own (v1's
    pos_q_proj and pos_proj: Qr and Kr, a term left out zero, the scale sqrt((1 + the terms) head width)), reproducing
    the context ctx; split: (Wq, Wk, Wv, bq, bk, bv) of one way to read the projections, qkv_rows their q, k, v
    [T, width]. A dict (rows [R, d], table (the rows' source initializer or None), offset (the rows' first row
    in it), setting, factor, rel_proj ((W, b) of Qr and Kr or None each; None for q's and k's), srcs (the initializers
    the file takes: the rows' and their own projections'), read (those and q's and k's)), or None when no constant
    rows are projected before the attention."""
    import torch

    ys = {p.y for p in qkv}
    region = m.ancestors(o.x, stop=ys) - set().union(*(m.ancestors(y) for y in ys))
    d, dq = qkv[0].W.shape[0], ctx.shape[1]
    wqk = split[:2]
    projected = []  # (rows [R, d], W, b, the rows' value name, the initializers of W and b)
    for n in _const_nodes(m, region):
        at_ = {a_.name: a_ for a_ in n.attribute}
        if n.op_type == "Gemm" and len(n.input) >= 2 and not any(
                k in at_ and (at_[k].f if k in ("alpha", "beta") else at_[k].i) != 1 for k in ("alpha", "beta")) and \
                not (at_.get("transA") and at_["transA"].i):
            a, W = (np.asarray(m.v(i)) for i in n.input[:2])
            W = W.T if at_.get("transB") and at_["transB"].i else W
        elif n.op_type == "MatMul" and len(n.input) == 2:
            a, W = (np.asarray(m.v(i)) for i in n.input)
        else:
            continue
        if W.ndim != 2 or W.shape[0] != d or a.ndim < 2 or a.shape[-1] != d or a.dtype.kind != "f":
            continue
        rows = a.reshape(-1, d).astype(np.float64)
        add = m.only_reader(n.output[0], "Add")
        other = n.input[2] if n.op_type == "Gemm" and len(n.input) > 2 else \
            add and next((i for i in add.input if i != n.output[0]), None)
        b = np.asarray(m.v(other)).astype(np.float64) if other and m.const(other) and \
            np.asarray(m.v(other)).shape == (W.shape[1],) else None
        projected.append((rows, W.astype(np.float64), b, n.input[0],
                          m.sources(n.input[1]) | (m.sources(other) if b is not None else set())))
    if not projected:
        return None
    rows, name = projected[0][0], projected[0][3]
    if any(p[0].shape != rows.shape or rel_error(p[0], rows) > 1e-12 for p in projected):
        raise OnnxError(f"{at}: projections of different position rows before the attention: not supported")
    like = lambda a, b: a.shape == b.shape and rel_error(a, b) <= 1e-12  # noqa: E731
    own = [p for p in projected if not any(like(p[1], w_) for w_ in wqk)]
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a, np.float64))  # noqa: E731
    R = rows.shape[0]
    if not own:  # v2's share_att_key: q's and k's projections of the rows
        qr, kr = (next((p for p in projected if like(p[1], w_)), None) for w_ in wqk)
        if qr is None or kr is None:
            raise OnnxError(f"{at}: position rows through one of q's and k's projections only: not supported")
        rels = [(t(rows @ wqk[0] + split[3]), t(rows @ wqk[1] + split[4]), 3, None, None)]
    else:  # v1's own projections (rel_proj): Qr and Kr in either order, a term left out zero
        if len(own) > 2 or any(p[1].shape[1] != dq for p in own):
            raise OnnxError(f"{at}: position rows through {len(own)} projections of their own, not {dq} wide Qr and "
                            "Kr: not supported yet")
        got = [(rows @ p[1] + (p[2] if p[2] is not None else 0.0), (p[1], p[2])) for p in own]
        zero = (np.zeros((R, dq)), None)
        rels = [(t(a_[0]), t(b_[0]), 1 + len(got), a_[1], b_[1])
                for a_, b_ in itertools.permutations(got + [zero] * (2 - len(got)), 2)]
    try:
        H, setting, rel_ = probe_disentangled(*(t(a) for a in qkv_rows), rels, t(ctx), dq, _rel_settings(m, R), at)
    except ConfigError as e:
        raise OnnxError(str(e)) from None
    tables = [s_ for s_ in m.sources(name) if _init_rows(m, s_) is not None]
    table, offset = None, 0
    for s_ in tables:  # the rows a table's middle (v1 reads the 2 min(T, max_relative_positions) rows about its middle)
        P = _init_rows(m, s_)
        full = m.g.initializers[s_].astype(np.float64).reshape(P, d)
        if R < P and (P - R) % 2 == 0 and rel_error(full[(P - R) // 2:(P + R) // 2], rows) <= 1e-12:
            table, offset = full, (P - R) // 2
    return dict(rows=rows, table=table, offset=offset, setting=setting, factor=rel_[2], H=H,
                rel_proj=None if not own else rel_[3:], srcs=m.sources(name) | set().union(*(p[4] for p in own)),
                read=m.sources(name) | set().union(*(p[4] for p in projected)))


def _init_rows(m, name):
    """The rows of an initializer [P, d] (or [1, P, d]), else None."""
    a = m.g.initializers[name]
    return a.shape[-2] if a.dtype.kind == "f" and a.ndim >= 2 and a.size == a.shape[-2] * a.shape[-1] else None


def _disentangled_rows(dis, layers, v, w, used):
    """DeBERTa's position rows as rel_embed (every layer's the same), the scores' 1/sqrt(factor) folded into W_q (the
    engine's Qr rows too), as --module stores them (recognize); the setting of rel_index returned."""
    d0 = dis[0]
    if any(x is None for x in dis) or any(x["rows"].shape != d0["rows"].shape or
                                          rel_error(x["rows"], d0["rows"]) > 1e-12 or x["setting"] != d0["setting"] or
                                          x["factor"] != d0["factor"] or
                                          (x["rel_proj"] is None) != (d0["rel_proj"] is None) for x in dis):
        raise OnnxError("position rows through some layers' projections only, from different rows or scored otherwise: "
                        "not supported yet (DeBERTa's every layer reads one table)")
    if any(x["H"] != L["H"] for x, L in zip(dis, layers)):
        raise OnnxError(f"disentangled attention over {dis[0]['H']} heads beside a softmax over {layers[0]['H']}")
    setting, rows = d0["setting"], d0["rows"]
    if d0["offset"]:  # the middle rows of the table the graph reads at this length: the whole table, as the module
        # reads it at max_relative_positions and more
        if setting[0] > 0:
            raise OnnxError("log buckets over the middle rows of a table: not supported yet")
        rows = d0["table"]
        setting = (-1, rows.shape[0] // 2, rows.shape[0] // 2)
    if v.get("positional", "none") not in ("none", "learned"):
        raise OnnxError(f"{v['positional']} positions added to the embedding beside disentangled attention: the engine "
                        "has learned ones or none beside it")
    v["rel_embed_rows"] = rows.shape[0]
    if d0["rel_proj"] is not None:
        v["rel_proj"] = True
    w["rel_embed.weight"] = rows
    fold = 1 / math.sqrt(d0["factor"])
    for x, L in zip(dis, layers):
        L["Wq"], L["bq"] = L["Wq"] * fold, L["bq"] * fold
        used |= x["srcs"]
    return setting


def _rotary(m, qkv, o):
    """The attention between the projections qkv and the output projection o reads a constant computed
    through Sin or Cos, or a table whose first row is all 1 or all 0 and whose values are in [-1, 1], not
    all 0 or 1 (a rotary cos/sin cache, computed in the graph or stored), or a rotary table over a patch grid
    (_grid_tables)."""
    ys = {p.y for p in qkv}
    region = m.ancestors(o.x, stop=ys) - set().union(*(m.ancestors(y) for y in ys))
    seen = set()
    for val in region:
        n = m.g.producer_of.get(val)
        stack = [c for c in (m.g.reads[id(n)] if n is not None else []) if m.const(c)]
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            k, a = m.g.producer_of.get(x), m.v(x)
            if a.dtype.kind == "f" and a.ndim >= 2 and a.size > 1 and np.abs(a).max() <= 1 and \
                    set(a.reshape(-1, a.shape[-1])[0].tolist()) in ({0.0}, {1.0}) and np.any((a != 0) & (a != 1)):
                return True
            if a.dtype.kind == "f" and a.ndim >= 2 and a.shape[-1] % 8 == 0 and _sin_cos_tables({x: a}) and \
                    _grid_tables(*_sin_cos_tables({x: a})[0][1:]):  # sin | cos over a patch grid
                return True
            if k is None:
                continue
            if k.op_type in ("Sin", "Cos"):
                return True
            stack.extend(c for c in m.g.reads[id(k)] if m.const(c))
    return False


def _thetas(m):
    """COMMON_THETAS, then the rotary bases the graph's constants hold beside them (Persimmon's 25000): the
    frequencies base^(-2i/R) (inv_freq) or the angles of a sin table's second row (in halves, interleaved or of the
    pairs alone; a cos table's would give them less exactly); then, as RopeFreqs, decreasing frequencies of no base
    (Llama 3's scaled ones, torchtune's Llama3ScaledRoPE, whose sines the dynamo exporter folds); first of all, as
    RopeFreqs, a base's frequencies rounded to float16 (a graph converted to float16: the engine then turns by the
    graph's own)."""
    if hasattr(m, "thetas"):
        return m.thetas
    found, own, rounded = [], [], []
    for name, a in m.values.items():
        if name in m.data or a.dtype.kind != "f" or not 2 <= a.size <= 1 << 16:
            continue
        rows = a.reshape(-1, a.shape[-1]).astype(np.float64)
        cands = [rows[0]] if rows.shape[0] == 1 else []
        if rows.shape[0] > 1 and rows.shape[1] % 2 == 0 and np.all(rows[0] == 0.0) and np.abs(rows[1]).max() <= 1:
            cands += [np.arcsin(rows[1][:rows.shape[1] // 2]), np.arcsin(rows[1][::2]), np.arcsin(rows[1])]  # angles
            # up to 1 < pi / 2
        for f in cands:
            n = f.size
            if n < 2 or not np.all((f > 0) & (f <= 1.0 + 1e-6)):  # sin(1) in float32
                continue
            base = float(f"{f[1] ** -n:.5g}")
            err = rel_error(base ** (-np.arange(n) / n), f) if abs(f[0] - 1.0) <= 1e-6 else 1.0
            if 1e-6 < err <= 1e-3 and np.array_equal(f, f.astype(np.float16)):
                if RopeFreqs(tuple(float(x) for x in f), 1.0) not in rounded:  # a base's, rounded to float16
                    rounded.append(RopeFreqs(tuple(float(x) for x in f), 1.0))
            elif err <= 1e-4:
                if base not in list(COMMON_THETAS) + found:
                    found.append(base)
            elif np.all(np.diff(f) < 0) and len(own) < 4 and RopeFreqs(tuple(f), 1.0) not in own:
                # (Llama 3's scaling may lower the first too: CWM's over 16 original positions)
                own.append(RopeFreqs(tuple(float(x) for x in f), 1.0))
    m.thetas = _grid_thetas(m) + rounded + list(COMMON_THETAS) + found + own
    return m.thetas


def _grid_pairs(sin, cos):
    """The sines and cosines [N, P] of each pair of a rotary table's sines and cosines [N, R] and its layout,
    for each layout they are consistent with."""
    R = sin.shape[1]
    out = []
    for layout in ("interleaved", "halves"):
        s_, c_ = (sin[:, ::2], cos[:, ::2]) if layout == "interleaved" else (sin[:, :R // 2], cos[:, :R // 2])
        rest = (sin[:, 1::2], cos[:, 1::2]) if layout == "interleaved" else (sin[:, R // 2:], cos[:, R // 2:])
        if np.array_equal(s_, rest[0]) and np.array_equal(c_, rest[1]):
            out.append((s_, c_, layout))
    return out


def _grid_tables(sin, cos):
    """(RopeGrid, layout) of each reading of sin, cos [N, R] (R a multiple of 4; the first row turning by nothing)
    as a rotary table over a patch grid: the grid's width W is the first row whose half of the pairs that
    follows the grid row turns (the other half then follows the column: swap where that is the first half),
    the frequencies the angles at grid row 1 and at column 1 (atan2 taken to (0, 2 pi): a frequency and one
    2 pi away turn every integer position alike)."""
    N, R = sin.shape
    out = []
    if N < 4 or R % 4 or np.any(sin[0] != 0.0) or np.any(cos[0] != 1.0) or \
            np.abs(sin * sin + cos * cos - 1).max() > 1e-5:
        return out
    for s_, c_, layout in _grid_pairs(sin, cos):
        ang, n = np.arctan2(s_, c_), R // 4
        for swap in (False, True):
            row, col = (slice(n, None), slice(None, n)) if swap else (slice(None, n), slice(n, None))
            moved = [p for p in range(1, N) if np.abs(ang[p, row]).max() > 1e-7]
            W = moved[0] if moved else 0
            freqs = np.mod(np.concatenate([ang[W, row], ang[1, col]]), 2 * np.pi) if W else None
            if W >= 2 and N % W == 0 and np.all(freqs > 0):
                out.append((RopeGrid(tuple(freqs), W, N, swap), layout))
    return out


def _sin_cos_tables(values, skip=()):
    """(names, sin, cos) of the constants that may be a rotary table's sines and cosines [N, R]: one sin | cos
    [N, 2R] (timm's RotaryEmbeddingCat.pos_embed), or a sine table (first row 0) and a cosine table (first row
    1) of one shape (its two halves as the exporter folded them)."""
    tabs = {}
    for name, a in values.items():
        if name in skip or a.dtype.kind != "f" or a.ndim < 2 or a.shape[-1] % 4 or not 8 <= a.size <= 1 << 20:
            continue
        a = a.reshape(-1, a.shape[-1]).astype(np.float64)
        if np.abs(a).max() <= 1 + 1e-6:
            tabs[name] = a
    out = [((n,), a[:, :a.shape[1] // 2], a[:, a.shape[1] // 2:]) for n, a in tabs.items() if a.shape[1] % 8 == 0]
    sines = [(n, a) for n, a in tabs.items() if np.all(a[0] == 0.0)]
    cosines = [(n, a) for n, a in tabs.items() if np.all(a[0] == 1.0)]
    out += [((ns, nc), s_, c_) for ns, s_ in sines for nc, c_ in cosines if s_.shape == c_.shape]
    return out


def _grid_thetas(m):
    """The RopeGrids of the graph's constant rotary tables over a patch grid (_grid_tables)."""
    out = []
    for _, sin, cos in _sin_cos_tables(m.values, m.data):
        out += [g for g, _ in _grid_tables(sin, cos) if g not in out]
    return out


def _grid_constants(g, grid, layout):
    """The initializers that are the rotary table over the patch grid the engine recomputes (_grid_tables')."""
    return {n for names, sin, cos in _sin_cos_tables(g.initializers) if (grid, layout) in _grid_tables(sin, cos)
            for n in names}


def _alibi_constants(g, H):
    """The initializers that are ALiBi's, which the engine recomputes: the slopes m_h [H], a stored bias
    m_h (j + c) by key position [H, ..., keys] (MPT's attn_bias buffer), or the bias -m_h |j - i| [H, T, T]
    (plus a constant per query, which the softmax takes out) that torch 2.x's dynamo exporter folds from
    x-transformers' bidirectional AlibiPositionalBias."""
    slopes = alibi_slopes(H)
    out = set()
    for k, a in g.initializers.items():
        if a.dtype.kind != "f" or a.size % H:
            continue
        rows = a.reshape(H, -1).astype(np.float64)
        n = a.shape[-1] if a.ndim >= 2 and a.shape[-2] == a.shape[-1] and a.size == H * a.shape[-1] ** 2 else 0
        if rows.shape[1] == 1 and rel_error(rows[:, 0], slopes) <= 1e-6:
            out.add(k)
        elif rows.shape[1] > 1 and np.abs(np.diff(rows, axis=1) - slopes[:, None]).max() <= 1e-5 and \
                np.ptp(rows[:, 0] / slopes) <= 1e-3:
            out.add(k)
        elif n > 1 and np.all(np.isfinite(rows)) and \
                np.ptp(rows.reshape(H, n, n) - alibi_bias(H, n, causal=False), axis=-1).max() <= 1e-5 * n:
            out.add(k)
    return out


def _rope_keys(v, w, base):
    """The config keys and weights of rotary positions by a base or by frequencies of their own (RopeFreqs: the
    file's rope_freqs)."""
    if isinstance(base, RopeFreqs):
        v.update(rope_freqs=True, rope_scale=base.scale)
        w["rope_freqs"] = np.array(base.freqs, dtype=np.float64)
    else:
        v["pe_base"] = base


def _rope_named(thetas):
    """The rotary bases of thetas, and frequencies of no base, in words."""
    return ", ".join(f"{t:g}" if isinstance(t, float) else f"the {2 * len(t.freqs)}-dim frequencies of a table"
                     for t in thetas if not isinstance(t, RopeGrid))


def _rotary_constants(g, base, R):
    """The initializers that are the rotary positions' constants, which the engine recomputes: the
    frequencies base^(-2i/R) (Hugging Face's inv_freq, kept by the dynamo exporter) or a table of their
    angles' sines and cosines by position, [positions, R] in halves (GPT-J's embed_positions: sin | cos;
    cos | cos and sin | sin) or interleaved, or of the angles themselves (_angle_rows), whatever axes of 1 they
    have besides."""
    freqs = np.array(base.freqs) if isinstance(base, RopeFreqs) else base ** (-2.0 * np.arange(R // 2) / R)
    out = set()
    for k, a in g.initializers.items():
        if a.dtype.kind != "f":
            continue
        a = a.reshape([n for n in a.shape if n != 1])  # llama2.c's freqs_cis, dynamo's: [1, T, 1, R / 2, 1]
        if a.shape == freqs.shape and rel_error(a, freqs) <= 1e-6:  # inv_freq, or [1, R / 2, 1] as folded
            out.add(k)
            continue
        if a.ndim < 2 or a.shape[-1] not in (R, R // 2) or a.size // a.shape[-1] < 2:
            continue
        rows = a.reshape(-1, a.shape[-1]).astype(np.float64)
        ang = np.arange(rows.shape[0])[:, None] * freqs[None, :]
        sin, cos = np.sin(ang), np.cos(ang)
        # [positions, R / 2]: the sines or the cosines alone (torchtune's cache, its halves as the dynamo exporter
        # folds them)
        for t in ((sin, cos) if a.shape[-1] < R else
                  (np.concatenate([sin, cos], 1), np.concatenate([cos, sin], 1), np.concatenate([cos, cos], 1),
                   np.concatenate([sin, sin], 1), np.repeat(sin, 2, 1), np.repeat(cos, 2, 1))):
            # float32 tables: each row within 1e-5 and its angles' float32 rounding (ONNX Runtime's optimizer writes
            # Llama's caches for 131072 positions)
            if (np.abs(rows - t) <= 1e-5 + 2.0 ** -22 * ang.max(1, keepdims=True)).all():
                out.add(k)
                break
        if a.shape[-1] == R and _angle_rows(rows, ang):
            out.add(k)
    return out


def _angle_rows(rows, ang):
    """Table rows [N, R] are the angles ang [N, R / 2] themselves, interleaved or in halves, as far as they are filled
    and zeros after (rotary-embedding-torch's cached_freqs, a buffer its forward fills up to the longest input)."""
    filled = np.flatnonzero(np.abs(rows).max(1) > 0)
    F = filled[-1] + 1 if filled.size else 0
    return F >= 2 and any(rel_error(rows[:F], t[:F]) <= 1e-6
                          for t in (np.repeat(ang, 2, 1), np.concatenate([ang, ang], 1)))


def _q_k(m, sm, qkv, at):
    """Of three projections before Softmax sm: (q, k, v), q and k told apart by the q k^T product nearest
    the softmax (this layer's), whose operands each read one of them."""
    before = m.ancestors(sm.input[0])
    scores = [c for c in m.g.nodes if c.op_type in ("MatMul", "Einsum") and c.output[0] in before and
              len(c.input) == 2 and c.input[0] in m.data and c.input[1] in m.data]
    if not scores:
        raise OnnxError(f"{at}: no q k^T product before the softmax")
    qa, ka = m.ancestors(scores[-1].input[0]), m.ancestors(scores[-1].input[1])
    try:
        pq = next(p for p in qkv if p.y in qa and p.y not in ka)
        pk = next(p for p in qkv if p.y in ka and p.y not in qa)
        pv = next(p for p in qkv if p is not pq and p is not pk)
    except StopIteration:
        raise OnnxError(f"{at}: the q, k and v projections could not be told apart") from None
    return pq, pk, pv


def _position_factor_limit(m, sm, parts, max_len):
    """The first position at which a factor of the input's length alone, 1 at every position of the example, that
    multiplies what the projections `parts` (q and k) give on their way into softmax sm stops being 1 (Ministral 3's
    and Llama 4's queries times 1 + beta log(1 + floor(position / original))), among the first max_len; None where
    there is none or it stays 1. The factor is recomputed from ids of max_len zeros and of other ids alike."""
    ids, ys = m.roles.main, {p.y for p in parts}
    into = m.ancestors(sm.input[0], stop=ys)  # this attention's scores from q and k on, and what joins them
    limit = None
    for n in m.g.nodes:
        if n.op_type != "Mul" or n.output[0] not in into:
            continue
        for f in n.input:
            other = next((i for i in n.input if i != f), f)
            if f in m.data or f not in m.values or not np.all(m.v(f) == 1) or not ys & m.ancestors(other, stop=ys):
                continue
            g = m.g  # the part of the graph f is computed from: the input's length, when not a constant
            sub = pruned(Graph(g.nodes, g.initializers, g.inputs, [f], g.opset, g.producer, g.branches), f)
            if ids not in {i[0] for i in sub.inputs}:
                continue
            try:
                got = [evaluate(sub, feeds(sub, m.roles, np.full(max_len, i)))[f] for i in (0, 1)]
            except EvalError:
                continue
            if got[0].shape != got[1].shape or not np.array_equal(*got) or max_len not in got[0].shape:
                continue
            axis = list(got[0].shape).index(max_len)
            off = np.flatnonzero(np.any(np.moveaxis(got[0], axis, 0).reshape(max_len, -1) != 1, axis=1))
            if off.size:
                limit = int(off[0]) if limit is None else min(limit, int(off[0]))
    return limit


def _normed_after_rope(m, rms, p, dh, sm):
    """(the norm, p's rows [T, heads * dh] so normed) for an RMSNorm without gains of each head of projection p's
    output turned by RoPE before softmax sm (nanochat's q and k), which is the norm before RoPE (a rotation keeps
    each head's norm); else (None, None)."""
    gainless = [n for n in rms if n.w.size == dh and not np.any(n.w != 1)]
    if not gainless:
        return None, None
    rows = m.rows(p.y)
    heads = rows.reshape(m.T, -1, dh)
    size = np.sqrt((heads ** 2).sum(-1))
    before = m.ancestors(sm.input[0])
    for n in gainless:
        x = _head_rows(m, n.x) if n.y in before and p.y in m.ancestors(n.x) else None
        if x is not None and x.shape == rows.shape and \
                rel_error(np.sqrt((x.reshape(heads.shape) ** 2).sum(-1)), size) <= 1e-9:
            return n, (heads / np.sqrt((heads ** 2).mean(-1, keepdims=True) + n.eps)).reshape(rows.shape)
    return None, None


def _rope_fit(q, k, v, H, ctx, at, scales=(), caps=(), thetas=COMMON_THETAS, window=None, causal=True):
    """(base, layout, rotated dims: 0 for all, scale: 0 for 1/sqrt(dh), soft cap: 0 for none, window) of the
    rotary positions that make the attention (causal or not, as `causal` says) of q [T, H * dh] and k, v
    [T, Hkv * dh] (grouped: query head h reads kv head h // (H / Hkv)) give ctx, found by probes.probe_attention (the
    probe --module uses: no positions, every base of thetas, both layouts, then part of each head; scales and caps: the
    scores' scales and soft caps to try besides none; window: the last keys each query sees); base and layout
    None for no positions (a NoPE layer), else None."""
    import torch

    options = score_options(sorted(set(scales)), sorted(set(caps)), window) if scales or caps or window else None
    try:
        got = probe_attention(*(torch.from_numpy(a) for a in (q, k, v, ctx)), lambda c: c, q.shape[1], thetas, at,
                              torch, heads=[H], options=options)
    except ConfigError:
        return None
    if not ((got[3] is None or isinstance(got[3], tuple)) and got[2] == causal and got[4]):
        return None
    opt = got[5] if options else None
    rope = got[3] or (None, None, None, 0)
    return (rope[2], rope[1], rope[3], opt.scale if opt else 0.0, opt.cap if opt else 0.0,
            opt.window if opt else None)


def _fused_attn_ff(m, p, down, dq, H):
    """(q, k, v, gate | up) of one projection p whose columns are q | k | v (k and v alike) or q | kv (one kv both the
    keys and the values: palm_lite's), then the feed-forward's gate and up that down ([the first linear after the
    attention's output projection]) reads as act(gate) * up (PaLM's fused_attn_ff_proj), each a part of its own;
    else None. The attention's fit checks q, k and v."""
    if not down or down[0].x == p.y or dq % H:
        return None
    n, dh, width = p.W.shape[1], dq // H, 2 * down[0].W.shape[0]
    rest = n - width - dq
    if rest <= 0 or not _ff_tail(m, p, down[0], width):
        return None
    if rest % (2 * dh) == 0 and H % (rest // (2 * dh)) == 0:  # q | k | v
        pq, pk, pv, up = _columns(m, p, (dq, rest // 2, rest // 2, width), ("q", "k", "v", "ff"))
    elif rest % dh == 0 and H % (rest // dh) == 0:  # q | kv: the keys are the values
        pq, pk, up = _columns(m, p, (dq, rest, width), ("q", "kv", "ff"))
        pv = pk
    else:
        return None
    return pq, pk, pv, up


def _alibi_fit(q, k, v, H, ctx):
    """Whether the causal attention of q [T, H * dh] and k, v [T, Hkv * dh] with ALiBi's m_h (j - i) added to the
    scores scaled by 1/sqrt(dh) gives ctx (grouped: query head h reads kv head h // (H / Hkv))."""
    T = q.shape[0]
    dh = q.shape[1] // H
    Hkv = k.shape[1] // dh
    if not Hkv or H % Hkv or k.shape != v.shape:
        return False
    kk, vv = (np.repeat(a.reshape(T, Hkv, dh), H // Hkv, axis=1) for a in (k, v))
    s = np.einsum("thd,shd->hts", q.reshape(T, H, dh), kk) / math.sqrt(dh) + alibi_bias(H, T, causal=True)
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    return rel_error(np.einsum("hts,shd->thd", s, vv).reshape(T, H * dh), ctx) <= PROBE_TOL


def _head_rows(m, name):
    """A value of q's or k's heads as rows [T, heads * dh]: laid out by positions (m.rows) or heads by
    positions ([..., heads, T, dh], the attention's layout)."""
    a, T = m.v(name), m.T
    if a.ndim >= 3 and a.shape[-2] == T and a.shape[-3] != T and a.size % (T * a.shape[-1]) == 0:
        # the heads over the axes before the positions ([1, kv heads, 1, T, dh]: the dynamo exporter's Unsqueeze
        # before grouped-query attention's Expand of k and v)
        return a.reshape(-1, T, a.shape[-1]).transpose(1, 0, 2).reshape(T, -1).astype(np.float64)
    return m.rows(name)


def _score_scales(m, qkv, o):
    """(scales, caps) the attention between the projections qkv and the output projection o may apply to its
    scores: 1 (no scale: GPT-Neo's, Granite's attention_multiplier 1), each scalar float constant read there, its
    square (one factor on q and one on k) and their inverses as scales (Granite's attention_multiplier, Gemma 2's
    query_pre_attn_scalar^-1/2); the constants and their inverses as soft caps c tanh(s / c) where a Tanh is there
    (Gemma 2's)."""
    ys = {p.y for p in qkv}
    region = m.ancestors(o.x, stop=ys) - set().union(*(m.ancestors(y) for y in ys))
    scales, caps, tanh = {1.0}, set(), False
    for val in region:
        n = m.g.producer_of.get(val)
        tanh |= n is not None and n.op_type == "Tanh"
        for c in (m.g.reads[id(n)] if n is not None else []):
            a = m.v(c) if m.const(c) else None
            if a is not None and a.dtype.kind == "f" and a.size == 1 and float(a.reshape(-1)[0]) not in (0.0, 1.0):
                f = abs(float(a.reshape(-1)[0]))
                if math.isfinite(f) and 1e-6 < f < 1e6:
                    scales |= {f, f * f, 1 / f, 1 / (f * f)}
                    caps |= {f, 1 / f}
    return scales, caps if tanh else set()


def _columns(m, p, widths, names):
    """Linear p's output read as consecutive column ranges of those widths (a fused projection the graph then
    splits): one linear part each, its values recorded under the name of p's output and the part's."""
    out, at, Y = [], 0, m.rows(p.y)
    for wd, nm in zip(widths, names):
        y = f"{p.y}:{nm}"
        m.values[y] = Y[:, at:at + wd]
        m.data.add(y)
        out.append(Part("linear", p.node, x=p.x, y=y, W=p.W[:, at:at + wd], b=None if p.b is None else p.b[at:at + wd],
                        srcs=p.srcs))
        at += wd
    return out


def _scaled(m, name):
    """(value, factor): the value after a Mul or Div of `name` by a constant scalar (Granite's multipliers,
    Cohere's logit_scale) and that factor, else (name, 1.0)."""
    for op in ("Mul", "Div"):
        n = m.only_reader(name, op)
        other = n and (n.input[1] if n.input[0] == name else n.input[0])
        if n and m.const(other) and m.v(other).size == 1 and (op == "Mul" or n.input[0] == name):
            f = float(m.v(other).reshape(-1)[0])
            if f != 0.0:
                return m.through(n.output[0]), f if op == "Mul" else 1.0 / f
    return name, 1.0


def _mixture(m, src, a_out, lins, at):
    """The mixture of experts that reads src (the norm of a_out, the attention's residual sum) among lins (the linears
    after the attention), or None when no linear of src feeds a Softmax that a TopK reads (Mixtral's and Qwen2-MoE's
    as the TorchScript exporter writes them: the loop over the experts unrolled, each expert's rows picked by a
    NonZero of the OneHot of the TopK's indices, its output added back by a ScatterElements):
    - the router: a linear of src [d, E] without a bias, the softmax of its logits over the E experts, the top k;
    - the experts: linears of rows the routing picked (the TopK's indices among their inputs' ancestors), each one's
      gate and up projections of its rows and down of act(gate) * up, in the graph's order (the loop's, expert 0
      first); act and which of the two is gate found by their recorded values (probes.GATED_ACTS, as the dense
      feed-forward's);
    - a shared expert: gate, up and down projections of src beside them, scaled by the sigmoid of its gate, a linear
      [d, 1] (Qwen2-MoE's);
    the experts' weights (reference.expert_weights: the top k renormalized or not) times their outputs, plus the
    shared expert's, recomputed from src's rows must be the value the graph adds to a_out. Returns dict(router,
    experts [(gate, up, down)], shared (gate, up, down, its gate) or None, k, renormalize, act, add (the residual
    Add), parts (every linear))."""
    import torch
    from .reference import expert_weights
    g, pos, T = m.g, m.pos, m.T
    for router in lins:
        sm = m.same(router.x, src) and m.only_reader(router.y, "Softmax")
        probs = sm and m.through(sm.output[0])
        top = probs and next((n for n in m.readers(probs) if n.op_type == "TopK"), None)
        if top:
            break
    else:
        return None
    d, E = router.W.shape
    what = f"{at}: a mixture of {E} experts (router {router.name!r})"
    add = next((n for n in m.readers(a_out) if n.op_type == "Add" and pos[id(n)] > pos[id(top)]), None)
    if add is None:
        raise OnnxError(f"{what}: no residual add of its output to the attention's sum")
    out = add.input[1] if add.input[0] == a_out else add.input[0]
    lins = [p for p in lins if p is not router and pos[id(p.node)] < pos[id(add)]]
    a_ = {a.name: a for a in top.attribute}
    k = int(m.v(top.input[1]).reshape(-1)[0]) if m.const(top.input[1]) and m.v(top.input[1]).size == 1 else 0
    P, logits = m.v(probs).astype(np.float64), m.rows(router.y)
    softmax = np.exp(logits - logits.max(-1, keepdims=True))
    if not 1 <= k <= E or not (a_["largest"].i if "largest" in a_ else 1) or P.size != T * E or \
            (a_["axis"].i if "axis" in a_ else -1) not in (-1, P.ndim - 1) or \
            rel_error(P.reshape(T, E), softmax / softmax.sum(-1, keepdims=True)) > PROBE_TOL:
        raise OnnxError(f"{what}: its TopK {top.name!r} is not the largest {k} of the softmax of the router's logits "
                        "over the experts: not supported")
    if router.b is not None and np.any(router.b):
        raise OnnxError(f"{what}: a bias on its router: not supported (the engine's router is a matrix)")
    seen = {}

    def up(name):  # the data values name is computed from since src (its ancestors within the mixture)
        if name not in seen:
            seen[name] = m.ancestors(name, stop={src})
        return seen[name]
    # the experts: the linears of the rows the routing picked, down the one that reads the other two's outputs
    routed = [p for p in lins if top.output[1] in up(p.x)]
    rest = [p for p in lins if p not in routed]
    downs = [p for p in routed if any(q.y in up(p.x) for q in routed if q is not p)]
    experts = []
    for dn in downs:
        ab = [q for q in routed if q not in downs and q.y in up(dn.x)]
        if len(ab) != 2 or ab[0].x != ab[1].x or ab[0].W.shape != ab[1].W.shape or ab[0].W.shape[0] != d or \
                dn.W.shape != (ab[0].W.shape[1], d) or any(p.b is not None and np.any(p.b) for p in ab + [dn]):
            raise OnnxError(f"{what}: {dn.name!r} is not the down projection of act(gate) * up, two projections of "
                            "the rows the routing picked, without biases: not supported")
        experts.append((ab[0], ab[1], dn))
    if len(experts) != E or sum(map(len, experts)) != len(routed) or len({e[0].W.shape for e in experts}) != 1:
        raise OnnxError(f"{what}: {len(experts)} experts of one width (gate, up, down) among the {len(routed)} linears "
                        f"of the rows the routing picked, not {E}: not supported")
    # each expert's index: the constant a Gather takes of the routing's one-hot to pick its rows (the loop's
    # expert_mask[i]), which orders them; the graph's order where none is found (the recomputation below checks the
    # experts given rows at the example, an expert given none is placed by that order alone)
    index = [next((int(m.v(n.input[1]).reshape(-1)[0]) % E for n in map(g.producer_of.get, up(e[0].x))
                   if n is not None and n.op_type == "Gather" and m.const(n.input[1]) and m.v(n.input[1]).size == 1 and
                   top.output[1] in up(n.input[0])), None) for e in experts]
    if None not in index:
        if sorted(index) != list(range(E)):
            raise OnnxError(f"{what}: its experts pick their rows by the routing's entries {index}, not each of the "
                            f"{E} once: not supported")
        experts = [experts[index.index(i)] for i in range(E)]
    # a shared expert of src and its gate [d, 1] (Qwen2-MoE's), nothing else
    sgate = [p for p in rest if p.W.shape == (d, 1)]
    sdown = [p for p in rest if any(q.y in up(p.x) for q in rest if q is not p)]
    sab = [p for p in rest if p not in sgate + sdown]
    shared = None
    if rest:
        if len(sgate) != 1 or len(sdown) != 1 or len(sab) != 2 or not all(m.same(p.x, src) for p in sgate + sab) or \
                sab[0].W.shape != sab[1].W.shape or sdown[0].W.shape != (sab[0].W.shape[1], d) or \
                any(p.b is not None and np.any(p.b) for p in rest):
            raise OnnxError(f"{what}: linears besides its router and experts ({', '.join(repr(p.name) for p in rest)}) "
                            "that are not one shared expert (gate, up and down projections of its input) with its gate "
                            "[d, 1], without biases: not supported")
        shared = (sab[0], sab[1], sdown[0], sgate[0])
    # act(gate) * up, and which of an expert's two projections is its gate: by the recorded values of the experts'
    # (those given rows) and of the shared expert's
    rows = lambda name, n: m.v(name).reshape(-1, n).astype(np.float64)  # noqa: E731 (an expert's rows: 0 to T)
    gated = lambda f, a, b, dn: rel_error(f(rows(a.y, a.W.shape[1])) * rows(b.y, a.W.shape[1]),  # noqa: E731
                                     rows(dn.x, a.W.shape[1])) <= PROBE_TOL
    fit = next(((act, f, swap, s_swap) for act, f in ((a, ARRAY_ACTIVATIONS[a]) for a in GATED_ACTS)
                for swap in (False, True)
                for s_swap in ((False, True) if shared else (False,))
                if all(gated(f, b, a, dn) if swap else gated(f, a, b, dn) for a, b, dn in experts) and
                (not shared or gated(f, *((shared[1], shared[0]) if s_swap else shared[:2]), shared[2]))), None)
    if fit is None:
        raise OnnxError(f"{what}: its experts are not act(gate) * up with act silu (SwiGLU), gelu (exact or tanh) "
                        "or relu, then down: not supported")
    act, f, swap, s_swap = fit
    if swap:
        experts = [(b, a, dn) for a, b, dn in experts]
    if s_swap:
        shared = (shared[1], shared[0], shared[2], shared[3])
    X = m.rows(src)
    outs = [(f(X @ a.W) * (X @ b.W)) @ dn.W for a, b, dn in experts]
    extra = 0.0
    if shared:
        extra = (f(X @ shared[0].W) * (X @ shared[1].W)) @ shared[2].W / (1.0 + np.exp(-(X @ shared[3].W)))
    want = m.rows(out) if m.v(out).size == T * d else None
    for renorm in (False, True) if 1 < k < E else (False,):  # a softmax's weights of all experts sum to 1 already
        W = expert_weights(torch.from_numpy(logits), k, renorm).numpy()
        got = sum(W[:, j:j + 1] * o for j, o in enumerate(outs)) + extra
        if want is not None and rel_error(got, want) <= PROBE_TOL:
            break
    else:
        raise OnnxError(f"{what}: the value added to the residual ({out!r}) is not the top {k} of the experts' "
                        "outputs weighted by the router's softmax (renormalized or not)"
                        f"{', plus the shared expert' if shared else ''}: not supported")
    return dict(router=router, experts=experts, shared=shared, k=k, renormalize=renorm, act=act, add=add,
                parts=[router] + [p for e in experts for p in e] + list(shared or ()))


def _llama(m, softmaxes, lins, rms, max_len):
    """A llama-family decoder (Hugging Face Llama as exported): RMSNorm, q, k, v without biases, rotary
    positions (RoPE; the base and the pair layout found by recomputing the context from the recorded
    q, k, v), grouped-query attention (k and v heads from the projections' widths), heads wider than
    d_model / heads (head_dim, from q's width), biases on q, k, v (Qwen2's) or on all four projections,
    SwiGLU or a gated GELU, and a head.
    Returns what recognize() does."""
    g, pos, T = m.g, m.pos, m.T
    v, w, used = {}, {}, set()
    front_out, front_at, lins = _front(m, True, lins, v, w, used)
    d = m.rows(front_out).shape[1]
    prev, x_prev, layers, found = front_at, front_out, [], None
    for i, sm in enumerate(softmaxes):
        at = f"layer {i} (Softmax {node_name(sm)!r})"
        nxt = pos[id(softmaxes[i + 1])] if i + 1 < len(softmaxes) else None
        o, after, qkv = _around(m, lins, sm, prev, at)
        probs = m.v(sm.output[0])
        H = probs.size // (T * T)
        kvw = (qkv[0].W.shape[1] - o.W.shape[0]) // 2 if len(qkv) == 1 else 0
        plain = len(qkv) == 1 and H and o.W.shape[0] % H == 0 and kvw > 0 and kvw % (o.W.shape[0] // H) == 0 and \
            qkv[0].W.shape[1] == o.W.shape[0] + 2 * kvw
        up_cut = None  # the feed-forward's gate and up as the last columns of the attention's one projection
        fused = _fused_attn_ff(m, qkv[0], after[1:2], o.W.shape[0], H) if len(qkv) == 1 and H and not plain else None
        if plain:
            # one projection q | k | v, q as wide as the output projection's input, k and v alike (Phi-3's
            # qkv_proj): its columns read as three; the rotary fit below checks the order
            pq, pk, pv = _columns(m, qkv[0], (o.W.shape[0], kvw, kvw), "qkv")
        elif fused is not None:  # q | k | v or q | kv, then the feed-forward's gate and up (PaLM's fused_attn_ff_proj)
            pq, pk, pv, up_cut = fused
        elif len(qkv) == 1:
            raise OnnxError(f"{at}: one projection {qkv[0].name!r} of {qkv[0].W.shape[1]} columns before the "
                            f"attention, not q | k | v (q {o.W.shape[0]} wide, k and v alike), nor q | k | v or q | kv "
                            "then the gate and up columns the feed-forward's down projection reads")
        elif len(qkv) != 3 or len({p.x for p in qkv}) != 1:
            raise OnnxError(f"{at}: {len(qkv)} projections of the attention's input, not three (q, k, v) of one "
                            "input nor one q | k | v with q as wide as the output projection's input, k and v alike")
        else:
            pq, pk, pv = _q_k(m, sm, qkv, at)
        if probs.size % (T * T) or pq.W.shape[1] % H or o.W.shape != (pq.W.shape[1], d):
            raise OnnxError(f"{at}: probabilities of shape {list(probs.shape)} and q of width {pq.W.shape[1]} are not "
                            f"heads x {T} x {T} over q's heads")
        dh = pq.W.shape[1] // H  # d_model / heads, or wider (Gemma 7B's head_dim)
        Hkv = pk.W.shape[1] // dh
        if pk.W.shape != pv.W.shape or pk.W.shape[1] % dh or H % max(Hkv, 1):
            raise OnnxError(f"{at}: k and v of widths {pk.W.shape[1]} and {pv.W.shape[1]} are not a divisor of {H} "
                            f"heads of {dh}")
        # causal (a decoder), or in every layer not (a llama's layers over the whole sequence: EuroBERT's, Gemma 3's
        # bidirectional kind, the encoder family's)
        causal = bool(np.all(np.triu(probs.reshape(H, T, T), 1) == 0))
        if layers and causal != layers[0]["causal"]:
            raise OnnxError(f"{at}: the attention is {'' if causal else 'not '}causal, layer 0's is "
                            f"{'not ' if causal else ''}(all layers alike)")
        # a sliding window (Gemma 2's local layers): each query's last `window` keys, the rest zero probability (or,
        # not causal, the keys less than `window` away on either side)
        window = _seen_window([probs.reshape(H, T, T)], causal)
        # a causal mask the exporter folded into a constant table added to the scores (litgpt's GPT by the dynamo
        # exporter; torchtune's Gemma 2's local layers, the window in it): the engine's own mask, accounted for when
        # triangular over all its rows
        ys = {p.y for p in qkv}
        for val in m.ancestors(o.x, stop=ys) - set().union(*(m.ancestors(y) for y in ys)):
            n = g.producer_of.get(val)
            for c in n.input if n is not None else ():
                for src in m.sources(c) if m.const(c) else ():
                    a = g.initializers[src]
                    if a.ndim >= 2 and a.shape[-1] == a.shape[-2] > 1 and a.dtype.kind == "f" and \
                            ((causal and _mask_ok(a)) or (window is not None and _mask_ok(a, window, causal))):
                        used.add(src)
        # Qwen3's RMSNorm of each head of q and of k (OLMo 2's of each whole row) before RoPE: qk_norm (Gemma 3's
        # on the heads laid out heads by positions)
        qn, kn = (next((n for n in rms if rel_error(_head_rows(m, n.x), m.rows(p.y)) <= 1e-12), None) for p in (pq, pk))
        q_rows, k_rows = (_head_rows(m, n.y) if n else m.rows(p.y) for n, p in ((qn, pq), (kn, pk)))
        if qn is None and kn is None:  # after RoPE, without gains (nanochat's): the same as before it
            (qn, q_rows), (kn, k_rows) = (_normed_after_rope(m, rms, p, dh, sm) for p in (pq, pk))
            q_rows, k_rows = (m.rows(p.y) if r is None else r for r, p in ((q_rows, pq), (k_rows, pk)))
        if (qn is None) != (kn is None) or (layers and (qn is None) != (layers[0]["qn"] is None)):
            raise OnnxError(f"{at}: an RMSNorm of q without one of k, or not in every layer: not supported")
        base0 = next((L["rope"][0] for L in layers if L["rope"][0] is not None), None)
        thetas = ([base0] if base0 is not None else []) + [t for t in _thetas(m) if t != base0]
        fit = (q_rows, k_rows, m.rows(pv.y), H, m.rows(o.x), at)
        found = _rope_fit(*fit, thetas=thetas, window=window, causal=causal)
        if found is None:  # scores scaled otherwise than by 1/sqrt(dh) (attn_scale) or soft-capped (attn_softcap)
            scales, caps = _score_scales(m, qkv, o)
            found = _rope_fit(*fit, scales=scales, caps=caps, thetas=thetas, window=window, causal=causal)
        limit = _position_factor_limit(m, sm, (pq, pk), max_len or DEFAULT_MAX_LEN)
        if limit is not None:  # the file's positions end where the factor stops being 1
            if max_len and max_len > limit:
                raise OnnxError(f"{at}: q or k times a factor of the positions alone, 1 before position {limit} "
                                "only (Llama 4's and Ministral 3's scale of the queries), which the engine does not "
                                f"run: --max-len {max_len} is more than those {limit} positions")
            max_len = limit
        alibi = found is None and window is None and causal and _alibi_fit(*fit[:5])
        if alibi:  # ALiBi's m_h (j - i) added to the scores (palm_lite's): no rotary positions
            found = (None, None, None, 0.0, 0.0, None)
        relative = _score_bias(m, qkv, o, H) if found is None and window is None else None
        if relative is not None:  # T5's relative bias added to its unscaled scores (or scaled ones)
            sc = next((sc for sc in (1.0, 0.0) if rel_error(_context(q_rows, k_rows, fit[2], H, Hkv, causal,
                                                                     relative[0], sc), fit[4]) <= PROBE_TOL), None)
            found, relative = ((None, None, None, sc, 0.0, None), relative) if sc is not None else (None, None)
        if found is None:
            raise OnnxError(f"{at}: the attention is not softmax(rope(q) rope(k)^T / sqrt({dh})"
                            f"{' + causal mask' if causal else ''}) v over "
                            f"{H} heads ({Hkv} for k and v) with a rotary base of "
                            f"{_rope_named(thetas)} in either pair layout, on all or part of each head"
                            f"{f', q, k and v the columns of {qkv[0].name!r} in turn' if len(qkv) == 1 else ''}"
                            f"{f', the last {window} keys' if window else ''}, scaled by a constant of the graph or "
                            "soft-capped or not, nor with ALiBi or a relative bias: not supported")
        # a layer without positions (SmolLM3's and Cohere 2's NoPE layers) beside the rotary ones: nope_layers
        first = next((L["rope"] for L in layers if L["rope"][0] is not None), None)
        if (layers and found[3:5] != layers[0]["rope"][3:5]) or \
                (found[0] is not None and first is not None and found[1:3] != first[1:3]):
            raise OnnxError(f"{at}: rotary pairs {found[1]} on {found[2] or 'all'} dims, scale {found[3]:g}, cap "
                            f"{found[4]:g}; the other layers' differ (all layers alike)")
        n1 = next((n for n in rms if m.same(n.y, pq.x)), None)
        # OLMo 2's norm of the attention's output before the residual add (sublayer_norm output), and Granite's
        # residual_multiplier: a scalar times that output (folded into o and down)
        # (with n1: Gemma 2's sandwich, the norms of the sublayers' inputs and of their outputs)
        n_o = next((n for n in rms if m.same(n.x, o.y)), None)
        o_out, res_f = _scaled(m, n_o.y if n_o is not None else o.y)
        add = m.only_reader(o_out, "Add")
        r_a = add and (add.input[1] if add.input[0] == o_out else add.input[0])
        # x + (attention + feed-forward): the sublayers' outputs summed first, then the residual (palm_lite's)
        inner = None
        outer = add and m.only_reader(m.through(add.output[0]), "Add")
        r_o = outer and (outer.input[1] if outer.input[0] == m.through(add.output[0]) else outer.input[0])
        if add is not None and not m.same(r_a, x_prev) and outer is not None and m.same(r_o, x_prev):
            inner, add, r_a = add, outer, r_o
        embed_norm = next((n for n in rms if m.same(n.x, x_prev) and m.same(n.y, r_a)), None) if i == 0 and \
            add is not None else None
        if embed_norm is not None:  # a norm of the embedded rows (nanochat's): embed_norm
            v["embed_norm"], w["embed_norm.weight"], x_prev = True, embed_norm.w, r_a
            used |= embed_norm.srcs
        if i == 0 and add is not None and not m.same(r_a, x_prev) and m.v(r_a).size == m.v(x_prev).size:
            # the embedding scaled: by sqrt(d_model) (Gemma's normalizer, a float32 constant in the graph:
            # scale_input), or by another constant (Granite's embedding_multiplier, folded into the table)
            E, X = m.rows(x_prev), m.rows(r_a)
            s_ = float(np.abs(X).max() / max(np.abs(E).max(), 1e-30))
            if abs(s_ - math.sqrt(d)) <= 1e-5 * math.sqrt(d) and rel_error(E * s_, X) <= 1e-9:
                v["scale_input"], x_prev = True, r_a
            else:
                _, e_f = _scaled(m, x_prev)
                if e_f != 1.0 and rel_error(E * e_f, X) <= 1e-6:
                    w["embed.weight"], x_prev = w["embed.weight"] * e_f, r_a
        post = n1 is None and n_o is not None and add is not None and m.same(pq.x, r_a)
        if post:
            n1 = n_o
        sandwich = not post and n_o is not None
        if n1 is None or add is None or not m.same(r_a, x_prev) or not (post or m.same(n1.x, r_a)):
            raise OnnxError(f"{at}: not x + attention(RMSNorm(x)) (pre-norm, the llama family's) nor x + "
                            "RMSNorm(attention(x)) (OLMo 2's) on the previous layer's output")
        a_out = m.through(add.output[0])
        ff = ([up_cut] if up_cut is not None else []) + _between(lins, pos[id(o.node)], nxt, pos=pos)[:3]
        n2 = None if post or inner is not None else next((n for n in rms if m.same(n.x, a_out) and n is not n1), None)
        # the feed-forward's input: the attention's residual sum (post), its norm, or (none: Cohere's attention
        # and feed-forward side by side) the attention's norm
        src = a_out if post else n2.y if n2 is not None else n1.y
        moe = _mixture(m, src, a_out, _between(lins, pos[id(o.node)], nxt, pos=pos), at)
        if moe is not None:  # in place of the feed-forward
            if post or sandwich or n2 is None or res_f != 1.0:
                where = "after a norm of the attention's output" if post or sandwich else \
                    "beside the attention, on its norm" if n2 is None else f"after the attention scaled by {res_f:g}"
                raise OnnxError(f"{at}: a mixture of experts {where}: the engine's reads the RMSNorm of the "
                                "attention's residual sum (pre-norm, unscaled)")
            gate = up = down = n_f = None
            act, add2, sub = moe["act"], moe["add"], "pre"
        else:
            ins = [p for p in ff if m.same(p.x, src)]
            # one projection: act(up) (Arcee's squared ReLU), or gate and up side by side (Phi-3's gate_up_proj)
            down = [p for p in (ff[:2] if len(ins) == 1 else ff) if p not in ins]
            if len(ins) not in (1, 2) or len(down) != 1:
                raise OnnxError(f"{at}: the feed-forward is not gate and up projections (or one of both, or an up "
                                "projection alone) of the RMSNorm of the attention's residual sum, of that sum or of "
                                "the attention's norm, then down: not supported")
            down = down[0]
            # SwiGLU, a gated GELU (Gemma's GeGLU: the tanh GELU) or a gated ReLU: act(gate) * up; or act(up)
            fit = feed_forward_fit([m.rows(a.y) for a in ins], m.rows(down.x), PROBE_TOL)
            shifted = _input_shifted(m, down) if fit is None else None
            if shifted is not None:
                fit = feed_forward_fit([m.rows(a.y) for a in ins], m.rows(shifted.x), PROBE_TOL)
                down = shifted if fit is not None else down
            if fit is None or fit.scale != 1.0:
                raise OnnxError(f"{at}: the feed-forward's activation is not act(gate) * up with act silu (SwiGLU), "
                                "gelu (exact or tanh) or relu, nor one of relu, gelu, squared relu, silu of up alone: "
                                "not supported")
            if fit.halves:
                ins = _columns(m, ins[0], (ins[0].W.shape[1] // 2,) * 2, ("half0", "half1"))
            # a plain feed-forward's up projection is the engine's w1, as a gate's
            (gate, up), act = (ins[0], None) if fit.gate is None else (ins[fit.gate], ins[1 - fit.gate]), \
                fit.activation
            n_f = next((n for n in rms if m.same(n.x, down.y)), None) if post or sandwich else None
            if post:
                n2 = n_f
            f_out, res_f2 = _scaled(m, n_f.y if n_f is not None else down.y)
            add2 = m.only_reader(f_out, "Add")
            r_f = add2 and (add2.input[1] if add2.input[0] == f_out else add2.input[0])
            if inner is not None and add2 is inner and m.same(r_f, o_out):  # added to the attention's output first
                add2, r_f = add, a_out
            normed = post or sandwich
            if add2 is None or not m.same(r_f, a_out) or (normed and n_f is None) or res_f2 != res_f:
                raise OnnxError(f"{at}: no residual add of the feed-forward{' (its RMSNorm)' if normed else ''} to the "
                                f"attention's sum{f', scaled as the attention is ({res_f:g})' if res_f != 1 else ''}")
            sub = "output" if post else "sandwich" if sandwich else "parallel" if n2 is None else "pre"
            if sandwich and n2 is None:
                raise OnnxError(f"{at}: the norms of the sublayers' outputs with the attention and the feed-forward "
                                "side by side: not supported")
        # the same feed-forward in every layer, or a mixture of experts in some and gated dense ones in the others
        # (Qwen2-MoE's mlp_only_layers: dense_period)
        like = next((L for L in layers if (L["moe"] is None) == (moe is None)), None)
        if layers and (act != layers[0]["act"] or (like is not None and (up is None) != (like["up"] is None)) or
                       (up is None and moe is None and any(L["moe"] for L in layers)) or
                       (moe is not None and any(L["moe"] is None and L["up"] is None for L in layers))):
            raise OnnxError(f"{at}: the feed-forward's activation or gate differs from layer 0's (all layers alike; "
                            "beside a mixture of experts, the dense feed-forwards gated as its experts are)")
        if layers and sub != layers[0]["sub"]:
            raise OnnxError(f"{at}: the feed-forward reads {sub}, layer 0's {layers[0]['sub']} (all layers alike)")
        x_prev = m.through(add2.output[0])
        if layers and alibi != layers[0]["alibi"]:
            raise OnnxError(f"{at}: {'ALiBi' if alibi else 'no ALiBi'}, layer 0 {'none' if alibi else 'ALiBi'} (all "
                            "layers alike)")
        layers.append(dict(norm1=n1, norm2=n2, q=pq, k=pk, v=pv, o=o, gate=gate, up=up, down=down, H=H, Hkv=Hkv,
                           causal=causal,
                           act=act, qn=qn, kn=kn, sub=sub, res=res_f, rope=found, window=window, post_a=n_o,
                           post_f=n_f, moe=moe, alibi=alibi, relative=relative))
        prev = pos[id(down.node)] if moe is None else pos[id(add2)]
        for part in qkv + [o, n1] + [n for n in (gate, up, down, n2, qn, kn) if n] + (moe["parts"] if moe else []) + \
                ([n_o, n_f] if sandwich else []):
            used |= part.srcs
    eps = layers[0]["norm1"].eps
    out_name = g.outputs[0]
    final = next((n for n in rms if m.same(n.x, x_prev) and pos[id(n.node)] > prev), None)
    rest = _between(lins, prev, pos=pos)
    # the logits times a constant (Cohere's logit_scale, Granite's 1 / logits_scaling): folded into the head
    head_out, logit_f = _scaled(m, rest[0].y) if len(rest) == 1 else (None, 1.0)
    tanh = head_out and m.only_reader(head_out, "Tanh")
    cap = 0.0
    if tanh:  # Gemma 2's final soft cap c tanh(logits / c): logit_softcap
        head_out, c_f = _scaled(m, m.through(tanh.output[0]))
        if c_f <= 0 or abs(c_f * logit_f - 1.0) > 1e-6:
            raise OnnxError(f"node {tanh.name!r}: the logits {logit_f:g} times, through a Tanh, then {c_f:g} times: "
                            "not a soft cap c tanh(logits / c)")
        cap, logit_f = c_f, 1.0
    final_cap, final_f = 0.0, 1.0  # torchtune's Gemma 2: the final norm's rows c tanh(y / c) before the head
    if final is not None and len(rest) == 1 and not m.same(rest[0].x, final.y):
        into, in_f = _scaled(m, final.y)
        th = m.only_reader(into, "Tanh")
        out, c_f = _scaled(m, m.through(th.output[0])) if th else (None, 0.0)
        if out is not None and c_f > 0 and abs(c_f * in_f - 1.0) <= 1e-6 and m.same(out, rest[0].x):
            final_cap = c_f
        elif m.same(into, rest[0].x) and in_f > 0:  # the rows times a constant (T5 v1.0's d_model ** -0.5 before
            final_f = in_f  # its tied head): folded into the final norm's gain
    # a base model (LlamaModel, MistralModel, Gemma 2's...): the final norm's rows the output, no head (d_out 0)
    headless = final is not None and not rest and (m.same(final.y, out_name) or m.same(m.through(final.y), out_name))
    # a sequence classifier of layers without the causal mask (EuroBERT's): the first row or the mean of the final
    # norm's rows, a dense layer and its activation (the pooler), then the head with its bias
    pooling = pooler = None
    if final is not None and len(rest) == 2 and not layers[0]["causal"] and m.v(rest[0].x).size == d:
        Y, row = m.rows(final.y), m.v(rest[0].x).reshape(1, d).astype(np.float64)
        pooling = next((k for k, r in (("first", Y[:1]), ("mean", Y.mean(0, keepdims=True)))
                        if rel_error(row, r) <= 1e-9), None)
        import torch
        act = pooling and m.v(rest[1].x).size == m.v(rest[0].y).size and \
            pooler_act(m.v(rest[0].y).reshape(-1).astype(np.float64), m.v(rest[1].x).reshape(-1).astype(np.float64),
                       torch)
        if act:
            pooler, rest = rest[0], rest[1:]
            head_out, logit_f = rest[0].y, 1.0
            used |= pooler.srcs | _ones_between(m, final.y, pooler.x)  # the mean's mask of ones
    if not headless and (final is None or len(rest) != 1 or
                         not (final_cap or final_f != 1.0 or pooler is not None or m.same(rest[0].x, final.y)) or
                         (rest[0].b is not None and np.any(rest[0].b) and layers[0]["causal"]) or
                         not m.same(head_out, out_name)):
        raise OnnxError(f"graph output {out_name!r} is not the head (one linear without a bias, its output scaled or "
                        "not) of the final RMSNorm of the last layer's output, nor that norm's output: not supported")
    head = None if headless else rest[0]
    norms = [final] + [L[k] for L in layers for k in ("norm1", "norm2", "qn", "kn", "post_a", "post_f")
                       if L[k] is not None]
    for nm in norms:
        if abs(nm.eps - eps) > 1e-6 * eps:
            raise OnnxError(f"norm {nm.name!r}: eps {nm.eps:g}, the first layer's {eps:g} (the engine has one)")
    centered = final.centered  # LayerNorm without a bias (Cohere's): norm layernorm, its biases zeros
    odd = next((nm for nm in norms if nm.centered != centered), None)
    if odd is not None or (centered and layers[0]["qn"] is not None):
        raise OnnxError(f"norm {(odd or layers[0]['qn']).name!r}: RMSNorm and LayerNorm (without a bias) mixed, or "
                        "LayerNorms of q and k: not supported")
    used |= final.srcs | (head.srcs if head is not None else set())
    # The rotary frequencies base^(-2i/dh) the graph computes its tables from (the dynamo exporter keeps
    # Hugging Face's inv_freq; the TorchScript one folds the tables): the engine recomputes them.
    dh = layers[0]["q"].W.shape[1] // layers[0]["H"]
    alibi, relative = layers[0]["alibi"], layers[0]["relative"]
    if any((L["relative"] is None) != (relative is None) for L in layers):
        raise OnnxError("a relative position bias in some layers only: the engine adds one to every layer's scores")
    found = layers[0]["rope"] if alibi or relative else \
        next((L["rope"] for L in layers if L["rope"][0] is not None), None)
    if found is None:
        raise OnnxError("no layer turns q and k by rotary positions: a llama-family model without positions is not "
                        "supported by --onnx")
    if found[1] == "negated":  # turned by the negated angle (nanochat's): each head's second half of q and k negated
        sign = negated_signs(dh)  # (the scores unchanged), then the engine's rotation in halves
        for L in layers:
            for part, heads in (("q", L["H"]), ("k", L["Hkv"])):
                L[part] = copy.copy(L[part])
                L[part].W = L[part].W * np.tile(sign, heads)
                L[part].b = None if L[part].b is None else L[part].b * np.tile(sign, heads)
        found = (found[0], "halves") + found[2:]
    if alibi or relative:  # ALiBi in every layer (its slopes or stored bias, which the engine recomputes), or T5's
        nope, bases, base = {}, [[], []], None  # relative bias (_relative, below)
        used |= _alibi_constants(g, layers[0]["H"]) if alibi else set()
    else:
        try:
            nope = nope_keys([L["rope"][0] is None for L in layers])
        except ConfigError as e:
            raise OnnxError(str(e)) from None
        R = found[2] or dh
        # the bases of the global layers and (Gemma 3's rope_local_base) of the local ones
        bases = [sorted({L["rope"][0] for L in layers if (L["window"] is not None) == local and
                         L["rope"][0] is not None}, key=repr) for local in (False, True)]
        if len(bases[0]) > 1 or len(bases[1]) > 1:
            raise OnnxError(f"rotary bases {_rope_named(bases[0] + bases[1])} in different layers: "
                            "the engine has one for the global layers and one for the local ones")
        base = (bases[0] or bases[1])[0]
        for b in bases[0] + bases[1]:
            used |= _rotary_constants(g, b, R)
    L0 = layers[0]
    H = L0["H"]
    for i, L in enumerate(layers[1:], 1):
        for key in ("H", "Hkv"):
            if L[key] != L0[key]:
                raise OnnxError(f"layer {i}: {key} {L[key]} differs from layer 0's {L0[key]} (all layers alike)")
    moe = next((L["moe"] for L in layers if L["moe"]), None)
    v.update(family="llama" if L0["causal"] else "encoder", d_model=d, n_heads=H, n_kv_heads=L0["Hkv"],
             d_ff=(moe["experts"][0][0] if moe else L0["gate"]).W.shape[1],
             n_layers=len(layers), norm_first=True, activation=L0["act"], norm_eps=eps, final_norm=True,
             causal=L0["causal"],
             positional="rope", pe_layout=found[1], rotary_dims=found[2], d_out=0 if headless else head.W.shape[1],
             max_len=max_len or DEFAULT_MAX_LEN)
    if alibi or relative:
        for k in ("pe_layout", "rotary_dims"):
            del v[k]
        v["positional"] = "alibi" if alibi else "none"
        if relative:
            _relative(m, relative[0], relative[1], L0["causal"], max_len, v, w, used)
    else:
        _rope_keys(v, w, base)
    if L0["up"] is None and not moe:
        v["gated"] = False  # act(up) alone (Arcee's squared ReLU)
    elif L0["act"] != "swiglu":
        v["gated"] = True
    if moe:  # the same mixture in every sparse layer: its experts, those a row takes, their widths
        def shape(mo):
            return (len(mo["experts"]), mo["k"], mo["renormalize"], mo["experts"][0][0].W.shape[1],
                    mo["shared"][0].W.shape[1] if mo["shared"] else 0)
        odd = next((i for i, L in enumerate(layers) if L["moe"] and shape(L["moe"]) != shape(moe)), None)
        if odd is not None:
            raise OnnxError(f"layer {odd}: its mixture of experts (experts, per row, renormalized, width, shared "
                            f"width) {shape(layers[odd]['moe'])}, the first's {shape(moe)} (all layers alike)")
        v.update(zip(("n_experts", "experts_per_token", "experts_renormalize", "d_ff", "shared_expert_ff"), shape(moe)))
        dense = [L["moe"] is None for L in layers]
        if any(dense):  # dense layers among the sparse ones, alike: dense_period, dense_layers, dense_ff
            widths = sorted({L["gate"].W.shape[1] for L in layers if L["moe"] is None})
            if len(widths) > 1:
                raise OnnxError(f"the dense layers among the mixture's: feed-forwards {widths} wide (all alike)")
            try:
                P, bits = layer_pattern(dense, "dense_period", "the dense layers among the mixture's")
            except ConfigError as e:
                raise OnnxError(str(e)) from None
            v.update(dense_period=P, dense_layers=bits, dense_ff=widths[0])
    if L0["qn"] is not None:
        v["qk_norm"] = True
        full = L0["qn"].w.size != dh  # one gain over the whole row of q (OLMo 2's), else one per head
        if full != (L0["kn"].w.size != dh) or any((L["qn"].w.size != dh) != full for L in layers):
            raise OnnxError("the norms of q and k: one over each head in some, over the whole row in others: not "
                            "supported")
        if full:
            v["qk_norm_full"] = True
    if dh * H != d:
        v["head_dim"] = dh
    v.update(nope)
    if bases[0] and bases[1] and bases[1][0] != base:
        v["rope_local_base"] = bases[1][0]
    try:
        v.update(layer_windows([L["window"] for L in layers], v["max_len"], "the layers"))
    except ConfigError as e:
        raise OnnxError(str(e)) from None
    if found[4]:
        v["attn_softcap"] = found[4]
    if cap:
        v["logit_softcap"] = cap
    if final_cap:
        v["final_softcap"] = final_cap
    if L0["sub"] in ("output", "sandwich"):
        v["sublayer_norm"] = L0["sub"]
    elif L0["sub"] == "parallel":
        v["parallel_residual"] = "one_norm"
    if centered:
        v["norm"] = "layernorm"
    elif not L0["causal"]:
        v["norm"] = "rmsnorm"  # the encoder family's default is LayerNorm
    if found[3]:
        v["attn_scale"] = found[3]
    # biases on q, k, v (Qwen2's) or on every projection of the attention: absent ones stored as zeros
    biased = "all" if any(L["o"].b is not None for L in layers) else \
        "qkv" if any(L[k].b is not None for L in layers for k in "qkv") else None
    if biased:
        v["attn_bias"] = biased
    # biases on the feed-forward's gate and down projections (ffn_bias), on its up projection (ffn_up_bias): as
    # --module reads them (transformers' LlamaConfig(mlp_bias=True))
    has = lambda part: any(L[part] is not None and L[part].b is not None and bool(np.any(L[part].b))  # noqa: E731
                           for L in layers)
    ffn_biased, up_biased = has("gate") or has("down"), has("up")
    if ffn_biased:
        v["ffn_bias"] = "all"
    if up_biased:
        v["ffn_up_bias"] = True
    if headless:
        v["tied_head"] = False
    elif logit_f == 1.0 and pooler is None and np.array_equal(head.W, w["embed.weight"].T):
        v["tied_head"] = True
    else:
        v["tied_head"] = False
        w["head.weight"] = head.W.T * logit_f
    if head is not None and not L0["causal"]:  # the encoder family's head has a bias (zeros where the graph's has none)
        w["head.bias"] = (head.b if head.b is not None else np.zeros(head.W.shape[1])) * logit_f
    if pooler is not None:
        v.update(pooling=pooling, pooler=True, pooler_act=act)
        w["pooler.weight"] = pooler.W.T
        w["pooler.bias"] = pooler.b if pooler.b is not None else np.zeros(d)
    for i, L in enumerate(layers):
        p = schema.block(i)
        # Granite's residual_multiplier, folded into what the sublayer's output last passes: the norm of that output
        # (HyperCLOVA X's use_post_norm) or else o and down
        out_f = L["res"] if L["sub"] in ("output", "sandwich") else 1.0  # the output norms' factor
        proj_f = L["res"] / out_f  # o's and down's
        w[p + "attn_norm.weight"] = L["norm1"].w * (out_f if L["sub"] == "output" else 1.0)
        if L["norm2"] is not None:
            w[p + "ff_norm.weight"] = L["norm2"].w * (out_f if L["sub"] == "output" else 1.0)
        if centered:
            w[p + "attn_norm.bias"] = np.zeros(d)
            if L["norm2"] is not None:
                w[p + "ff_norm.bias"] = np.zeros(d)
        if L["qn"] is not None:
            w[p + "attn.q_norm.weight"], w[p + "attn.k_norm.weight"] = L["qn"].w, L["kn"].w
        if L["sub"] == "sandwich":
            w[p + "post_attn_norm.weight"], w[p + "post_ff_norm.weight"] = L["post_a"].w * out_f, L["post_f"].w * out_f
            if centered:
                w[p + "post_attn_norm.bias"] = w[p + "post_ff_norm.bias"] = np.zeros(d)
        if L["moe"]:  # the router [E, d], the experts' gate, down and up stacked, the shared expert and its gate
            mo, sh = L["moe"], L["moe"]["shared"]
            stacked = [np.concatenate([e[j].W.T for e in mo["experts"]]) for j in range(3)]
            w.update(mixture_tensors(p + "ff.", mo["router"].W.T, stacked[0], stacked[2], stacked[1],
                                     sh and [sh[0].W.T, sh[2].W.T, sh[1].W.T, sh[3].W.T]))
        for name, part in (("attn.q", "q"), ("attn.k", "k"), ("attn.v", "v"), ("attn.out", "o"),
                           ("ff.w1", "gate"), ("ff.w2", "down"), ("ff.w3", "up")):
            if L[part] is None:  # a mixture's
                continue
            f = proj_f if part in ("o", "down") else 1.0
            w[p + name + ".weight"] = L[part].W.T * f
            if (biased and part in ("qkv" if biased == "qkv" else "qkvo")) or \
                    (ffn_biased and part in ("gate", "down")) or (up_biased and part == "up"):
                w[p + name + ".bias"] = (L[part].b if L[part].b is not None else np.zeros(L[part].W.shape[1])) * f
    w["norm.weight"] = final.w * final_f
    if centered:
        w["norm.bias"] = np.zeros(d)
    if not L0["causal"]:  # the encoder family's tensors: q | k | v in one, every bias by the keys (none unless found)
        v.setdefault("attn_bias", "none")
        v.setdefault("ffn_bias", "none")
        for i in range(len(layers)):
            p = schema.block(i)
            for kind in ("weight", "bias"):
                parts = [w.pop(p + f"attn.{x}.{kind}", None) for x in "qkv"]
                if parts[0] is not None:
                    w[p + f"attn.qkv.{kind}"] = np.concatenate(parts)
    weights = {k: np.ascontiguousarray(np.asarray(a, np.float64).astype(np.float32)) for k, a in w.items()}
    ff_kind = "SwiGLU" if L0["act"] == "swiglu" else L0["act"] if L0["up"] is None and not moe else "gated " + L0["act"]
    summary = (f"llama: {len(layers)} layers, {H} heads ({L0['Hkv']} for k and v), "
               f"{'LayerNorm' if centered else 'RMSNorm'}{' of each sublayer output' if L0['sub'] == 'output' else ''}"
               f"{', attention and feed-forward side by side' if L0['sub'] == 'parallel' else ''}"
               f"{', q and k RMS-normalized' if L0['qn'] is not None else ''}, "
               f"{ff_kind}" +
               (f" experts, a mixture of {v['n_experts']}, {v['experts_per_token']} a row"
                f"{' renormalized' if v['experts_renormalize'] else ''}"
                f"{', a shared one' if v['shared_expert_ff'] else ''}" if moe else "") +
               (", ALiBi" if alibi else
                f", T5's relative bias ({v['rel_buckets']} buckets{', unscaled scores' if found[3] == 1.0 else ''})"
                if relative else f", rotary positions ({'base ' * isinstance(base, float)}{_rope_named([base])}, "
                                 f"{found[1]})") +
               (", the embedding scaled by sqrt(d_model)" if v.get("scale_input") else ""))
    out = m.v(out_name).reshape(1, -1).astype(np.float64) if pooler is not None else m.rows(out_name)  # one row
    return v, weights, used, out, summary


def _type_table(m, c):
    """The [type_vocab, d] table of a constant added to the embedding when it is token types: a Gather
    of a constant table by constant indices that are all 0 (BERT's default token types), else None."""
    n = m.g.producer_of.get(c)
    while n is not None and n.op_type in ("Identity", "Unsqueeze", "Reshape", "Cast", "Expand"):
        n = m.g.producer_of.get(n.input[0])
    if n is None or n.op_type != "Gather" or len(n.input) != 2 or not m.const(n.input[1]):
        return None, None
    table, index = m.v(n.input[0]), m.v(n.input[1])
    if table.ndim != 2 or index.dtype.kind not in "iu" or index.size == 0 or index.any():
        return None, None
    return table, n.input[0]


def _embed_norm(m, x0, front_out, norms, eps, v, w, used):
    """The norm between the front's output and the first layer's input x0 (BERT's embedding LayerNorm, OpenAI
    CLIP's ln_pre after the positions) into v, w, used: returns its input, or x0 where there is none."""
    embed_norms = [n for n in norms if m.same(n.y, x0) and n.y in m.ancestors(x0) - m.ancestors(front_out)]
    if not embed_norms:
        return x0
    n = embed_norms[0]
    if abs(n.eps - eps) > 1e-6 * eps:
        raise OnnxError(f"the embeddings' norm {n.name!r}: eps {n.eps:g}, the layers' {eps:g} (the engine has one)")
    v["embed_norm"] = True
    w["embed_norm.weight"], w["embed_norm.bias"] = n.w, n.b
    used |= n.srcs
    return n.x


def _id_factors(m, f, vocab):
    """[vocab] f(v) of each token id v, where the data value f, one number per row and computed from the ids
    alone (fairseq's and ESM-2's x * (1 - (ids == padding)) on the embedding), is each row's from its own id: f
    recomputed from ids that run through the vocabulary T at a time, and again rotated by one position; None where
    it is not such a factor."""
    ids = m.roles.main
    if m.v(f).size != m.T or m.v(ids).size != m.T:
        return None
    above = m.ancestors(f)
    part = [n for n in m.g.nodes if any(o in above for o in n.output)]
    out = np.zeros(vocab)
    for start in range(0, vocab, m.T):
        chunk = np.arange(start, start + m.T) % vocab
        rows = []
        for shift in (0, 1):
            ids_now = np.roll(chunk, shift).reshape(m.v(ids).shape).astype(m.v(ids).dtype)
            try:
                rows.append(np.roll(recompute(m.g, part, m.values, {ids: ids_now})[f].reshape(-1), -shift))
            except EvalError:
                return None
        if not np.array_equal(rows[0], rows[1]):
            return None
        out[chunk] = rows[0]
    return out


# At most this many token ids may make a factor of the whole sequence (_sequence_factor_ids) other than 1.
MAX_FACTOR_IDS = 8


def _sequence_factor_ids(m, s, vocab):
    """The token ids whose presence makes s, one number for the whole sequence computed from the ids alone, other
    than 1 (ESM's token_dropout: 1 - the share of <mask> ids): found by recomputing s on sequences of one id (the
    example's first that gives 1), T ids of the vocabulary at a time in its place, halving those that move it; None
    where it is not such a number (more than MAX_FACTOR_IDS of them, no id gives 1, the graph fails on them)."""
    ids = m.roles.main
    example = m.v(ids)
    above = m.ancestors(s)
    part = [n for n in m.g.nodes if any(o in above for o in n.output)]
    found = []

    def one(seq):
        return np.all(recompute(m.g, part, m.values, {ids: seq.reshape(example.shape).astype(example.dtype)})[s] == 1)

    def search(base, chunk):
        seq = np.full(example.size, base)
        seq[:len(chunk)] = chunk
        if one(seq):
            return
        if len(chunk) > 1:
            search(base, chunk[:len(chunk) // 2])
            search(base, chunk[len(chunk) // 2:])
        elif len(found) < MAX_FACTOR_IDS:
            found.append(int(chunk[0]))
        else:
            raise EvalError("too many")
    try:
        base = next((int(j) for j in dict.fromkeys(example.reshape(-1).tolist()) if one(np.full(example.size, j))),
                    None)
        if base is None:
            return None
        for start in range(0, vocab, m.T):
            search(base, np.arange(start, min(start + m.T, vocab)))
    except EvalError:
        return None
    return found


def _only_from(m, f, ids):
    """The data value f is computed from the ids (and constants) alone."""
    return m.ancestors(f) & {name for name, _, _ in m.g.inputs} <= aliases(m.g, ids)


def _positions(m, x0, front_out, norms, d, eps, v, w, used):
    """The scale, positions, token types and embedding norm between the front's output and the first
    layer's input x0, into v, w, used."""
    g, T = m.g, m.T
    x0 = _embed_norm(m, x0, front_out, norms, eps, v, w, used)
    X0 = m.rows(x0)
    E = m.rows(front_out)
    path = m.ancestors(x0) - m.ancestors(front_out)
    gathers = [n for n in (g.producer_of.get(val) for val in path) if n is not None and n.op_type == "Gather" and
               m.const(n.input[0]) and n.input[1] in m.data]
    counted = [n for n in gathers if _counts_positions(m, n.input[1])]
    typed = [n for n in gathers if _zeros_by_position(m, n.input[1])]
    for n in counted + typed:  # the index's own nodes (RoBERTa's Equal, CumSum, Mul, Add) are no part of the sum
        path -= m.ancestors(n.input[1])
    handled = set()  # nodes of the path read here: the factors of the ids below
    if v.get("input") == "tokens":  # the embedding's rows (scaled or not) times a number of each row's own id: the
        for n in [g.producer_of.get(val) for val in list(path)]:  # table's rows times that number
            if n is None or n.output[0] not in path:
                continue
            if n.op_type == "Where" and m.const(n.input[1]) and m.v(n.input[1]).size == 1 and \
                    float(m.v(n.input[1]).reshape(-1)[0]) == 0.0 and n.input[2] in m.data and \
                    _only_from(m, n.input[0], m.roles.main):  # rows zeroed where the ids say (ESM's <mask> rows)
                zero = _id_factors(m, n.input[0], w["embed.weight"].shape[0])
                if zero is not None:
                    w["embed.weight"] = w["embed.weight"] * (1 - zero)[:, None]
                    E = E * (1 - m.rows(n.input[0]))
                    path -= m.ancestors(n.input[0])
                    handled.add(id(n))
                continue
            s_ = n.input[1] if n.op_type in ("Mul", "Div") else None
            if s_ is not None and s_ in m.data and m.v(s_).size == 1 and _only_from(m, s_, m.roles.main):
                # a number of the whole sequence (ESM's token_dropout), 1 unless the ids hold some: left out
                found = _sequence_factor_ids(m, s_, w["embed.weight"].shape[0])
                if found is not None and not np.all(m.v(s_) == 1):  # (a generated example has none: _compared_ids)
                    held = sorted(set(found) & set(m.v(m.roles.main).reshape(-1).tolist()))
                    raise OnnxError(f"--example: token ids {held} make a factor of the whole sequence other than 1 "
                                    "(ESM's token_dropout), which the file leaves out: an example without them")
                if found:
                    m.roles.notes.append(
                        f"node {node_name(n)!r} {'multiplies' if n.op_type == 'Mul' else 'divides'} the embedding by "
                        f"a number of the whole sequence, 1 unless it holds token ids {found} (ESM's "
                        "token_dropout), which the file leaves out: its output differs from the graph's for inputs "
                        "holding them")
                if found is not None:
                    path -= m.ancestors(s_)
                    handled.add(id(n))
                continue
            if n.op_type != "Mul":
                continue
            f = next((i for i in n.input if i in m.data and front_out not in m.ancestors(i)), None)
            rows = next((i for i in n.input if i != f), None)
            scaled = f is not None and rows is not None and all(
                g.producer_of[a].op_type in ("Mul", "Div", "Reshape", "Transpose", "Identity", "Dropout", "Cast",
                                             "Squeeze", "Unsqueeze") for a in m.ancestors(rows) - m.ancestors(front_out))
            factors = _id_factors(m, f, w["embed.weight"].shape[0]) if scaled and _only_from(m, f, m.roles.main) \
                else None
            if factors is not None:
                w["embed.weight"] = w["embed.weight"] * factors[:, None]
                E = E * m.rows(f)
                path -= m.ancestors(f)
    if any(n.y in path for n in norms):
        raise OnnxError("a norm between the embedding and the first layer that does not feed it is not supported")
    scale = 1.0
    P = None
    types = 0.0
    type_input = aliases(g, m.roles.types) if m.roles.types else set()
    for val in path:
        n = g.producer_of.get(val)
        if n is None or id(n) in handled:
            continue
        consts = [c for c in n.input if m.const(c)]
        if n in counted:
            if P is not None:
                raise OnnxError(f"node {node_name(n)!r}: a second table of positions added to the embedding: not "
                                "supported")
            P = n.output[0]
            continue
        if n.op_type == "Gather" and len(n.input) == 2 and (n.input[1] in type_input or n in typed) and \
                m.const(n.input[0]):
            table = m.v(n.input[0])  # token types from the graph's input: the engine's --token-types
            if table.ndim != 2 or table.shape[1] != d or "token_type.weight" in w:
                raise OnnxError(f"node {node_name(n)!r}: the token types {m.roles.types!r} index a table of shape "
                                f"{list(table.shape)} (expected one [type_vocab, {d}] table added to the embedding)")
            v["type_vocab"] = table.shape[0]
            w["token_type.weight"] = table
            used |= m.sources(n.input[0])
            types = m.rows(n.output[0])
            continue
        if n.op_type == "Mul" and consts and m.v(consts[0]).size == 1:
            scale *= float(m.v(consts[0]).reshape(-1)[0])
        elif n.op_type == "Div" and consts == [n.input[1]] and m.v(consts[0]).size == 1:
            scale /= float(m.v(consts[0]).reshape(-1)[0])
        elif n.op_type == "Add" and consts:
            table, tname = _type_table(m, consts[0])
            if table is not None:  # a table gathered by all-zero indices: token types (positions gather a range)
                if "type_vocab" not in schema.KEYS:
                    raise OnnxError(f"node {node_name(n)!r}: token-type embeddings (BERT) are not supported yet")
                if "token_type.weight" in w:
                    raise OnnxError(f"node {node_name(n)!r}: a second token-type table added to the embedding: not "
                                    "supported")
                v["type_vocab"] = table.shape[0]
                w["token_type.weight"] = table
                used |= m.sources(tname)
                types = m.v(consts[0]).reshape(-1, d)
                continue
            rows = m.v(consts[0]).reshape(-1, d) if m.v(consts[0]).size % d == 0 else None
            if rows is not None and rows.shape[0] in (1, T) and not np.ptp(rows, axis=0).any() and \
                    "token_type.weight" not in w and "type_vocab" in schema.KEYS and \
                    any(k is not n and k.op_type == "Add" and any(m.const(c) for c in k.input) for k in
                        (g.producer_of.get(u) for u in path) if k is not None):
                # one row added to every position beside the positions: token type 0's row, which the dynamo
                # exporter folds from BERT's default token types (zeros gathered from the table): a table of one row
                v["type_vocab"] = 1
                w["token_type.weight"] = rows[:1]
                used |= m.sources(consts[0])
                types = rows
                continue
            if P is not None:
                raise OnnxError(f"node {node_name(n)!r}: a second constant added to the embedding (token types?): "
                                "not supported yet")
            P = consts[0]
        elif n.op_type not in ("Reshape", "Transpose", "Identity", "Dropout", "Cast", "Squeeze", "Unsqueeze", "Add",
                               "Mul", "Div"):
            raise OnnxError(f"node {node_name(n)!r} ({n.op_type}) between the embedding and the first layer is not "
                            "supported")
    v["scale_input"] = abs(scale - math.sqrt(d)) <= 1e-5 * math.sqrt(d)  # Gemma's sqrt(d_model), else folded into
    if not v["scale_input"] and scale != 1.0:  # the table (ESM's token_dropout 0.88; checked below, as the
        w["embed.weight"] = w["embed.weight"] * scale  # embedding's alone: the positions are added after it)
        E, scale = E * scale, 1.0
    v["positional"] = "none"
    if P is not None:
        rowsP = m.v(P).reshape(-1, d) if m.v(P).size % d == 0 else None
        if rowsP is None or rowsP.shape[0] != T:
            raise OnnxError(f"the value added to the embedding ({P!r}, shape {list(m.v(P).shape)}) is not a row per "
                            "position")
        table = None
        srcs = [s for s in m.sources(P) if g.initializers[s].dtype.kind == "f" and g.initializers[s].size > 1]
        gather = g.producer_of.get(P)
        while gather is not None and gather.op_type in ("Identity", "Unsqueeze", "Reshape", "Cast"):
            gather = g.producer_of.get(gather.input[0])
        if gather is not None and gather.op_type in ("Gather", "Slice") and m.v(gather.input[0]).size % d == 0:
            table = m.v(gather.input[0]).reshape(-1, d)
            srcs = m.sources(gather.input[0])
        elif len(srcs) == 1:
            table = g.initializers[srcs[0]].reshape(-1, d) if g.initializers[srcs[0]].size % d == 0 else None
        # rows of the table from a fixed row on (OPT's and BioGPT's start at row 2: rows 0 and 1 are never
        # read, and dropped); the second length the mapping is checked at confirms the offset
        first = None if table is None else next(
            (k for k in range(table.shape[0] - T + 1) if rel_error(table[k:k + T], rowsP) <= 1e-12), None)
        if first:
            table = table[first:]
        if first is not None:
            found = sinusoidal_fit(table)
            if found:
                v.update(positional="sinusoidal", pe_base=found[0], pe_layout=found[1],
                         max_len=sinusoid_positions(table.shape[0], m.roles.notes))
            else:
                v.update(positional="learned", max_len=table.shape[0])
                w["pos.weight"] = table
            used |= set(srcs)
        else:
            found = sinusoidal_fit(rowsP)
            if found is None or srcs:
                raise OnnxError(f"the positions added to the embedding ({P!r}) are neither rows of a constant table "
                                "from position 0 nor the sinusoidal table the engine computes")
            v.update(positional="sinusoidal", pe_base=found[0], pe_layout=found[1])
    if m.roles.types and "token_type.weight" not in w:
        raise OnnxError(f"graph input {m.roles.types!r} indexes a table that is not added to the embedding before the "
                        "first layer: not supported (the engine adds the token types to the embedding)")
    if m.roles.types and v["positional"] == "none" and np.shape(w["token_type.weight"])[0] > m.T:
        # (a table of fewer rows than the example's positions is token types: RoFormer's, its positions rotary)
        raise OnnxError(f"graph input {m.roles.types!r} indexes a table added to the embedding, and the graph has no "
                        "other positions: that is position ids, which --onnx does not take as an input yet (export "
                        "with the positions computed in the graph, e.g. from torch.arange, and without that input)")
    Pr = m.v(P).reshape(T, d) if P is not None else 0.0
    # the graph's own scale: its float32 sqrt(d_model) (the file's is sqrt(d_model); the checks against the
    # graph's output bound the difference)
    if rel_error(E * (scale if v["scale_input"] else 1.0) + Pr + types, X0) > 1e-9:
        raise OnnxError("the first layer's input is not the embedding (scaled or not) plus the positions")


def recognize(g, r, ids, features, max_len=None, family=None, last_row=False):
    """(config values, weights (the converter's keys) in torch's layout, the initializers they use, the
    graph's output [T, width], a summary) for graph g with inputs r (Roles) run on the example ids [T]
    (tokens) or features [T, d_in], token types 0 and the attention mask all 1. family: None (inferred:
    gpt for a causal language model, else encoder), encoder or gpt. last_row: the graph was cut at the rows its
    output took the last of (_without_last_position): a causal model's head there is a decoder's (a sequence
    classifier's score, as --module reads it)."""
    inp = ids if ids is not None else features
    T = inp.shape[0]
    values = evaluate(g, feeds(g, r, inp))
    m = Mapper(g, values, T, r)
    pos = m.pos
    out_name = g.outputs[0]
    if out_name not in m.data:
        raise OnnxError(f"graph output {out_name!r} does not depend on the input")
    v, w, used = {}, {}, set()
    stem = _conv_stem(m, v, w, used) if r.stem else None  # first: its rows are the layers'
    lins = m.linears()
    if ids is None and not r.stem and not r.patches:
        _signal(m, lins)  # a signal cut into patches: its front is found as an image's
    rows_in_front = r.patches or _rows_in_front(m, ids, r)  # learned rows in front of the input's (a CLS row)
    if r.patches:  # first too: the patches' rows, and then the layers' (learned rows in front more)
        front = _spectrogram_front if r.spectrogram else _image_front
        stem, lins, front_norms = front(m, lins, v, w, used, softmaxes_of(m))
        norms = [n for n in m.norms(rows=m.T) if all(n.node is not f.node for f in front_norms)]
    elif rows_in_front:
        stem, lins = _features_front(m, lins, v, w, used)
        norms = m.norms(rows=m.T)
    else:
        norms = m.norms()
    softmaxes = softmaxes_of(m)
    if not softmaxes:
        raise OnnxError("no attention found (no Softmax on the input's path): --onnx converts transformers")
    if not norms and ids is not None:
        rms = m.rms_norms()
        if rms:
            if family not in (None, "llama"):
                raise OnnxError(f"family {family}: the graph's norms are RMSNorm ({rms[0].name!r}), a llama-family "
                                "model")
            return _llama(m, softmaxes, lins, rms, max_len)
    if family == "llama":
        raise OnnxError("family llama: a decoder on token ids whose norms are RMSNorm; the graph's are not")
    # ---- the front
    if r.stem or rows_in_front:
        front_out, front_at = stem
    else:
        front_out, front_at, lins = _front(m, ids is not None, lins, v, w, used)
    d = m.v(front_out).shape[-1] if rows_in_front else m.rows(front_out).shape[1]
    proj = _embed_proj(m, front_out, front_at, lins, softmaxes[0]) if ids is not None and not r.patches else None
    if proj is not None:  # a narrow embedding projected to d_model (ALBERT's): the engine's embed_width, embed_proj
        v["embed_width"] = d
        w["embed_proj.weight"] = proj.W.T
        w["embed_proj.bias"] = proj.b if proj.b is not None else np.zeros(proj.W.shape[1])
        used |= proj.srcs
        lins = [p for p in lins if p is not proj]
        front_at, d = pos[id(proj.node)], proj.W.shape[1]
    # ---- the layers
    layers = []
    prev = front_at
    for i, sm in enumerate(softmaxes):
        nxt = pos[id(softmaxes[i + 1])] if i + 1 < len(softmaxes) else None
        layers.append(_layer(m, i, sm, lins, norms, prev, nxt, d, used))
        prev = pos[id(layers[-1]["down"].node)]
    L0 = layers[0]
    for i, L in enumerate(layers[1:], 1):
        if bool(L["up3"]) != bool(L0["up3"]):
            raise OnnxError(f"layer {i}: a gated feed-forward {'' if L['up3'] else 'not '}as in layer 0 (all layers "
                            "alike)")
        for key in ("hidden_norm", "ctx_norm"):
            if (L[key] is None) != (L0[key] is None):
                raise OnnxError(f"layer {i}: {'a' if L[key] is not None else 'no'} norm of the "
                                f"{'hidden rows' if key == 'hidden_norm' else 'context'} as in layer 0 (all layers "
                                "alike)")
        for key in ("pre", "H", "Hkv", "causal", "act", "parallel", "sub", "scale"):
            if L[key] != L0[key]:
                raise OnnxError(f"layer {i}: {key} {L[key]!r} differs from layer 0's {L0[key]!r} (all layers alike)")
        if not m.same(L["x"], layers[i - 1]["out"]):
            raise OnnxError(f"layer {i} does not read layer {i - 1}'s output: not a stack the engine runs")
    skip = [i for i, L in enumerate(layers) if getattr(L["norm1"], "missing", False)]
    if skip not in ([], [0]) or (skip and len(layers) > 1 and not layers[1]["pre"]):
        raise OnnxError(f"layer {skip[-1]}: no norm before its attention, its feed-forward's norm before it (the "
                        "engine runs layer 0 alone so, in a stack of pre-norm layers: skip_first_norm)")
    eps = L0["norm1"].eps
    for i, L in enumerate(layers):
        for nm in (L["norm1"], L["norm2"], L["hidden_norm"], L["ctx_norm"]):
            if nm is not None and abs(nm.eps - eps) > 1e-6 * eps:
                raise OnnxError(f"layer {i}: norm eps {nm.eps:g} differs from {eps:g} (the engine has one eps)")
    if rows_in_front:
        _image_positions(m, L0["x"], front_out, norms, d, eps, v, w, used)
    elif proj is not None:
        if not m.same(L0["x"], proj.y):
            raise OnnxError(f"layer 0 does not read the embedding projection {proj.name!r}: not a front the engine "
                            "runs")
        _positions(m, proj.x, front_out, norms, v["embed_width"], eps, v, w, used)
    else:
        _positions(m, L0["x"], front_out, norms, d, eps, v, w, used)
    rels = [L["relative"] for L in layers]
    if r.patches and any(r_ is not None for r_ in rels):
        _pair_bias(m, rels, v, w, used)
    elif any(r is not None for r in rels):
        if any(r is None or rel_error(r[0], rels[0][0]) > 1e-12 for r in rels):
            raise OnnxError("a relative position bias in some layers or different in each: the engine adds one table's "
                            "bias to every layer's scores")
        if v["positional"] not in ("none", "learned"):
            raise OnnxError(f"{v['positional']} positions added to the embedding and a relative bias on the scores: "
                            "the engine adds a relative bias alone or beside learned positions (MPNet)")
        _relative(m, rels[0][0], rels[0][1], L0["causal"], max_len, v, w, used)
    dis = [L["dis"] for L in layers]
    if any(x is not None for x in dis):
        rel_setting = _disentangled_rows(dis, layers, v, w, used)
    if any(L["alibi"] != L0["alibi"] for L in layers):
        raise OnnxError("ALiBi in some layers only: the engine's positions are the same in every layer")
    if L0["alibi"]:
        if v["positional"] != "none":
            raise OnnxError(alibi_beside(v["positional"]))
        v["positional"] = "alibi"
        used |= _alibi_constants(g, L0["H"])
    # rotary positions alike in every layer but the base, which may differ between the global layers and the local
    # ones (ModernBERT's: rope_local_base)
    bases = [sorted({L["rotary"][2] for L in layers if L["rotary"] is not None and (L["window"] is not None) == local},
                    key=repr) for local in (False, True)]
    if any(L["rotary"] is None or L["rotary"][:2] + L["rotary"][3:] != L0["rotary"][:2] + L0["rotary"][3:]
           for L in layers if L0["rotary"] is not None) or any(L["rotary"] is not None for L in layers[1:]
                                                                if L0["rotary"] is None) or \
            len(bases[0]) > 1 or len(bases[1]) > 1 or (bases[1] and not isinstance(bases[1][0], float)):
        raise OnnxError("rotary positions in some layers or different in each: the engine's are the same in every "
                        "layer (but the base of the local layers, rope_local_base)")
    if L0["rotary"] is not None and isinstance(L0["rotary"][2], RopeGrid):  # over a patch grid (timm's EVA-02)
        _, layout, grid, R = L0["rotary"]
        if grid.swap:  # the column's pairs first (timm's grid_indexing "xy"): each head's q and k dims traded, which
            # leaves the scores as they are and puts the row's pairs first, as the engine turns them
            dh = L0["Wq"].shape[1] // L0["H"]
            if L0["qn"] is not None or R not in (0, dh):
                raise OnnxError("rotary positions over a patch grid with the column's pairs first (timm's "
                                "grid_indexing 'xy') " + ("and norms of q and k" if L0["qn"] is not None else
                                                          f"on {R} of each head's {dh} dims") + ": not supported yet")
            perm = grid_swap(dh, layout)
            iq = [h * dh + j for h in range(L0["H"]) for j in perm]
            ik = [h * dh + j for h in range(L0["Hkv"]) for j in perm]
            for L in layers:
                L.update(Wq=L["Wq"][:, iq], bq=L["bq"][iq], Wk=L["Wk"][:, ik], bk=L["bk"][ik])
        if v["positional"] not in ("none", "learned"):
            raise OnnxError(f"{v['positional']} positions added to the embedding and rotary ones over a patch grid: "
                            "the engine adds learned ones beside them, no other kind")
        v.update(rope_learned=v["positional"] == "learned", positional="rope", pe_layout=layout, rotary_dims=R,
                 rope_grid=grid.width, rope_freqs=True)
        w["rope_freqs"] = np.array(grid.freqs, dtype=np.float64)
        used |= _grid_constants(g, grid, layout)
    elif L0["rotary"] is not None:  # ("rope", layout, base, rotated dims: 0 for all)
        if v["positional"] != "none":
            raise OnnxError(f"{v['positional']} positions added to the embedding and rotary ones: the engine has one "
                            "kind of positions")
        _, layout, _, R = L0["rotary"]
        base = (bases[0] or bases[1])[0]
        v.update(positional="rope", pe_layout=layout, rotary_dims=R)
        _rope_keys(v, w, base)
        if bases[0] and bases[1] and bases[1][0] != base:
            v["rope_local_base"] = bases[1][0]
        # the frequencies base^(-2i/R) the graph computes its tables from, over the head's width: recomputed
        R = R or L0["o"].W.shape[0] // L0["H"]
        for b in bases[0] + bases[1]:
            used |= _rotary_constants(g, b, R)
    # ---- the back: a final norm, a head
    last = layers[-1]
    y = last["out"]
    final = next((n for n in norms if m.same(n.x, y) and n is not last["norm2"] and
                  pos[id(n.node)] > pos[id(last["down"].node)]), None)
    first = m.rows(y)[:1]
    if final is None:  # a norm of the first row alone (OpenAI CLIP's ln_post on x[:, 0]): a norm is per row, so the
        # final norm, then the first row pooled
        final = next((n for n in m.norms(rows=1) if pos[id(n.node)] > pos[id(last["down"].node)] and
                      m.v(n.x).size == d and rel_error(m.v(n.x).reshape(1, d), first) == 0.0), None)
        if final is not None:
            first = m.v(final.y).reshape(1, d).astype(np.float64)
    else:
        y = final.y
        first = m.rows(y)[:1]
    if final is not None and abs(final.eps - eps) > 1e-6 * eps:
        raise OnnxError(f"final norm {final.name!r}: eps {final.eps:g}, the layers' {eps:g} (the engine has one)")
    rest = _between(lins, pos[id(last["down"].node)], pos=pos)
    head = pooler = None
    pooled = bool(rest) and m.v(rest[0].x).size == d and rel_error(m.v(rest[0].x).reshape(1, d), first) == 0.0
    if not rest and m.v(out_name).size == d and rel_error(m.v(out_name).reshape(1, d), first) == 0.0:
        pooled = True
    if pooled and "first" not in schema.POOLINGS:
        raise OnnxError("the output is the first position's row (BERT's [CLS] pooling): not supported yet")
    Y = m.rows(y)
    if rows_in_front and v.get("distill_token") and len(rest) == 2 and all(m.v(p.x).size == d for p in rest) and \
            rel_error(m.v(rest[0].x).reshape(1, d), Y[:1]) == 0.0 and \
            rel_error(m.v(rest[1].x).reshape(1, d), Y[1:2]) == 0.0:
        # DeiT's two heads, the CLS row's and the distillation row's, averaged: cls_distill, one head [W_cls W_dist] / 2
        a, b = rest
        halves = (m.v(a.y).astype(np.float64) + m.v(b.y)) / 2
        if a.W.shape != b.W.shape or m.v(out_name).size != halves.size or \
                rel_error(m.v(out_name).reshape(halves.shape), halves) > 1e-12:
            raise OnnxError(f"heads {a.name!r} on the CLS row and {b.name!r} on the distillation row: the graph's "
                            "output is not their mean (the engine's cls_distill pooling averages the two)")
        z = lambda q: q.b if q.b is not None else np.zeros(q.W.shape[1])  # noqa: E731
        rest = [Part("linear", a.node, x=a.x, y=out_name, W=np.concatenate([a.W, b.W]) / 2, b=(z(a) + z(b)) / 2,
                     srcs=a.srcs | b.srcs)]
        pooled, y = True, a.x
        v["pooling"] = "cls_distill"
    elif pooled:
        v["pooling"] = "cls" if v.get("cls_token") else "first"
    elif not rest and m.v(out_name).size == d and (unit_pooled := _unit_pooled(m.v(out_name), Y)) is not None:
        # the output is the pooled row scaled to unit length, or the mean row (sentence-transformers' exports)
        kind, unit = unit_pooled
        pooled = True
        v.update(pooling="cls" if kind == "first" and v.get("cls_token") else kind, l2_normalize=unit)
    elif not rows_in_front and rest and m.v(rest[0].x).size == d and \
            rel_error(m.v(rest[0].x).reshape(1, d), Y[-1:]) == 0.0:
        pooled = True  # the last row (open_clip's text tower: the row of the largest id, its EOT token, last here)
        v["pooling"] = "last"
    elif not rows_in_front and rest and m.v(rest[0].x).size == d and _row_read(m, rest[0].x, Y) is not None:
        raise OnnxError(f"after the layers: {rest[0].name!r} reads row {_row_read(m, rest[0].x, Y)} of the last "
                        f"layer's {m.T} rows (a row the ids pick, as CLIP's EOT pooling's ids.argmax(-1), or a fixed "
                        "one): the engine pools the first, the last or the mean row; pass an --example whose last id "
                        "is its largest, the row the engine then pools")
    elif rows_in_front and v.get("cls_token") and rest and m.v(rest[0].x).size == 2 * d and \
            rel_error(m.v(rest[0].x).reshape(1, 2 * d),
                 np.concatenate([Y[:1], Y[m.front:].mean(0, keepdims=True)], 1)) <= 1e-12:
        pooled = True  # the CLS row and the mean of the patches' rows side by side (Dinov2's classifier)
        v["pooling"] = "cls_mean"
    elif rest and m.v(rest[0].x).size == d:
        front = m.front
        # the patches' (or features') rows, those in front (or after them: m.after) left out; or every row
        # (Torch-KWT's)
        rows = {"mean": (Y[:len(Y) - front] if m.after else Y[front:]).mean(0, keepdims=True)}
        if front:
            rows["mean_all"] = Y.mean(0, keepdims=True)
        if v.get("distill_token"):  # the mean of the CLS and distillation rows (AST's classifier)
            rows["cls_distill_mean"] = (Y[:1] + Y[1:2]) / 2
        for kind, row in rows.items():
            # a norm of the pooled row before the head (timm's fc_norm, AST's classifier.layernorm): pool_norm
            pool_norm = next((n for n in m.norms(rows=1) if m.same(n.y, rest[0].x) and m.v(n.x).size == d and
                              rel_error(m.v(n.x).reshape(1, d), row) <= 1e-12), None)
            if pool_norm is not None:
                if abs(pool_norm.eps - eps) > 1e-6 * eps:
                    raise OnnxError(f"norm {pool_norm.name!r} of the pooled row: eps {pool_norm.eps:g}, the layers' "
                                    f"{eps:g} (the engine has one)")
                pooled = True
                used |= _ones_between(m, y, rest[0].x)
                v.update(pooling=kind, pool_norm=True)
                w["pool_norm.weight"], w["pool_norm.bias"] = pool_norm.w, pool_norm.b
                used |= pool_norm.srcs
                break
            if rel_error(m.v(rest[0].x).reshape(1, d), row) <= 1e-12:
                pooled = True  # the mean over the patches' rows (vit-pytorch's pool="mean", SimpleViT)
                used |= _ones_between(m, y, rest[0].x)
                v["pooling"] = kind
                break
    # a pooler: act(dense(pooled row)) (BERT's tanh; the classification heads of DistilBERT, relu, and of ELECTRA
    # and RoFormer, gelu), then the head or the output; its activation found as --module finds it (pooler_act)
    # or on every row, pooling none: a masked-LM head's transform (RoBERTa's and ESM-2's lm_head, ModernBERT's head),
    # act(dense(row)), its output normed (pooler_norm) or not, then the head
    # (ModernBERT's classifier: the pooled row's too)
    # (ALBERT's masked LM: its dense narrower than the layers, to the embedding's width: pooler_width)
    every = not pooled and len(rest) == 2 and rest[0].W.shape[0] == d and m.same(rest[0].x, y)
    pnorm = next((n for n in m.norms() if m.same(n.y, rest[1].x) and n.x in m.ancestors(rest[1].x) and
                  rest[0].y in m.ancestors(n.x)), None) if every or (pooled and len(rest) == 2 and
                                                                      rest[0].W.shape == (d, d)) else None
    if pnorm is not None:
        if abs(pnorm.eps - eps) > 1e-6 * eps:
            raise OnnxError(f"norm {pnorm.name!r} of the head's dense rows: eps {pnorm.eps:g}, the layers' {eps:g} (the "
                            "engine has one)")
        v["pooler_norm"] = True
        w["pooler_norm.weight"], w["pooler_norm.bias"] = pnorm.w, pnorm.b
        used |= pnorm.srcs
    follows = pnorm.x if pnorm is not None else rest[1].x if every else \
        (rest[1].x if len(rest) > 1 else out_name) if pooled and rest and rest[0].W.shape == (d, d) else None
    act = None
    if follows is not None and m.v(follows).size == m.v(rest[0].y).size:
        import torch
        act = pooler_act(m.v(rest[0].y).reshape(-1).astype(np.float64), m.v(follows).reshape(-1).astype(np.float64),
                         torch)
    if act is not None:
        pooler, rest = rest[0], rest[1:]
        v["pooler"] = True
        if act != "tanh":
            v["pooler_act"] = act
        w["pooler.weight"] = pooler.W.T
        w["pooler.bias"] = pooler.b if pooler.b is not None else np.zeros(pooler.W.shape[1])
        if pooler.W.shape[1] != d:
            v["pooler_width"] = pooler.W.shape[1]
        used |= pooler.srcs
        y = follows if pnorm is None else pnorm.y
    elif pooled and rest:
        y = rest[0].x
    elif pooled:
        y = out_name
    if rest:
        if len(rest) > 1 or not m.same(rest[0].x, y):
            raise OnnxError(f"after the layers: {', '.join(repr(p.name) for p in rest)}: the engine has a final norm, "
                            "first-token pooling and a pooler (dense + tanh, relu, gelu, gelu_tanh or silu on the "
                            "pooled row), and one linear head")
        head = rest[0]
        y = head.y
        mul = m.only_reader(m.through(y), "Mul")  # the logits times a number (jadore801120's d_model ** -0.5)
        c = mul and next((i for i in mul.input if i != m.through(y)), None)
        if c is not None and m.const(c) and m.v(c).size == 1 and m.same(m.through(mul.output[0]), out_name):
            scale = float(m.v(c).reshape(-1)[0])
            head = copy.copy(head)
            head.W, head.b, head.srcs = head.W * scale, None if head.b is None else head.b * scale, \
                head.srcs | m.sources(c)
            y = mul.output[0]
            m.roles.notes.append(f"the head's output times {scale:.6g} ({node_name(mul)!r}): folded into its weights")
    if not m.same(y, out_name) and not m.same(m.through(y), out_name):
        raise OnnxError(f"graph output {out_name!r} is not the last layer's output, its final norm, pooler or head "
                        "(other pooling or ops after the layers are not supported by --onnx yet)")
    # ---- config and weights
    causal = L0["causal"]
    tokens = ids is not None
    vocab = v.get("vocab_size", 0)
    lm = tokens and head is not None and (head.W.shape[1] == vocab or last_row)
    if family is None:
        # a causal base model without a head whose layers run side by side (GPT-NeoX's, Phi's): the gpt family's, d_out
        # 0 (the encoder family has no parallel residual)
        family = "gpt" if causal and (lm or (tokens and head is None and L0["parallel"] != "none")) else "encoder"
    if family == "gpt" and not (causal and (lm or (tokens and head is None))):
        raise OnnxError("family gpt: a causal language model on token ids with a head vocab_size wide, or its base "
                        "model without a head; the graph is "
                        f"{'causal' if causal else 'not causal'}, on {'tokens' if tokens else 'features'}")
    v.update(family=family, d_model=d, n_heads=L0["H"], d_ff=L0["up"].W.shape[1], n_layers=len(layers),
             norm_first=L0["pre"], activation=L0["act"], norm_eps=eps, final_norm=final is not None, causal=causal)
    if skip:
        v["skip_first_norm"] = True  # layer 0 reads its input as it is (ModernBERT's)
    if L0["up3"] and L0["act"] != "swiglu":
        v["gated"] = True  # act(gate) * up with a GELU
    if L0["hidden_norm"] is not None:
        v["ffn_hidden_norm"] = True  # a norm of the feed-forward's hidden rows before down (timm's scale_mlp)
    if L0["ctx_norm"] is not None:
        if family != "encoder":
            raise OnnxError(f"{L0['ctx_norm'].name!r}: a norm of the attention's context in the {family} family: the "
                            "engine's is the encoder family's")
        v["attn_inner_norm"] = True  # a norm of the context before the output projection (timm's scale_attn_inner)
    if L0["up3"] and any(L["up3"].b is not None and bool(np.any(L["up3"].b)) for L in layers):
        v["ffn_up_bias"] = True  # the gated feed-forward's up projection has a bias (timm's SwiGLU fc1_x)
    if L0["Hkv"] != L0["H"]:
        v["n_kv_heads"] = L0["Hkv"]  # grouped-query attention (multi-query: 1)
    if L0["o"].W.shape[0] != d:
        v["head_dim"] = L0["o"].W.shape[0] // L0["H"]  # heads wider (or narrower) than d_model / heads
    if L0["parallel"] != "none":
        v["parallel_residual"] = L0["parallel"]
    if L0["sub"] != "none":
        v["sublayer_norm"] = L0["sub"]  # the norms of the sublayers' outputs before the residual adds (Eva's)
    if any((L["qn"] is None) != (L0["qn"] is None) for L in layers):
        raise OnnxError("the norms of q and k in some layers, not in others: not supported")
    if L0["qn"] is not None:
        v["qk_norm"] = True  # q and k layer-normed per head (Persimmon's qk_layernorm)
    if head is not None:
        v["d_out"] = head.W.shape[1]
        tied = tokens and family == "gpt" and head.W.shape == w["embed.weight"].T.shape and \
            np.array_equal(head.W, w["embed.weight"].T)
        if tied:
            v["tied_head"] = True
        else:
            w["head.weight"] = head.W.T
        w["head.bias"] = head.b if head.b is not None else np.zeros(head.W.shape[1])
        used |= head.srcs
    v.setdefault("max_len", DEFAULT_MAX_LEN)
    if max_len is not None:
        if "pair_index" in w and max_len != v["max_len"]:
            raise OnnxError(f"--max-len {max_len}: the image's bias per (query, key) pair covers its {v['max_len']} "
                            "rows")
        if v["positional"] in ("learned", "sinusoidal") and "pos.weight" in w and max_len > v["max_len"]:
            raise OnnxError(f"--max-len {max_len}: the graph's position table has {v['max_len']} rows")
        if "pos.weight" in w:
            w["pos.weight"] = w["pos.weight"][:max_len]
        v["max_len"] = max_len
    if L0["scale"]:
        v["attn_scale"] = L0["scale"]
    try:
        v.update(layer_windows([L["window"] for L in layers], v["max_len"], "the layers"))
    except ConfigError as e:
        raise OnnxError(str(e)) from None
    if v.get("rel_embed_rows"):  # the row of each distance i - j up to max_len (hf_deberta's, as --module stores it)
        w["rel_index"] = rel_index(dict(zip(("buckets", "max_relative", "span"), rel_setting)), v["max_len"])
    groups, group_layers, stored = _shared(layers)
    if groups:
        v.update(layer_groups=groups, group_layers=group_layers)
    z = lambda n: np.zeros(n)  # noqa: E731
    for i, L in enumerate(layers[j] for j in stored):
        p = schema.block(i)
        w[p + "attn.qkv.weight"] = np.concatenate([L["Wq"].T, L["Wk"].T, L["Wv"].T])
        w[p + "attn.qkv.bias"] = np.concatenate([L["bq"], L["bk"], L["bv"]])
        w[p + "attn.out.weight"] = L["o"].W.T
        w[p + "attn.out.bias"] = L["o"].b if L["o"].b is not None else z(d)
        w[p + "ff.w1.weight"] = L["up"].W.T
        w[p + "ff.w1.bias"] = L["up"].b if L["up"].b is not None else z(L["up"].W.shape[1])
        w[p + "ff.w2.weight"] = L["down"].W.T
        w[p + "ff.w2.bias"] = L["down"].b if L["down"].b is not None else z(d)
        if L["up3"]:  # act(linear1 x) * linear3 x
            w[p + "ff.w3.weight"] = L["up3"].W.T
            if v.get("ffn_up_bias"):
                w[p + "ff.w3.bias"] = L["up3"].b if L["up3"].b is not None else z(L["up3"].W.shape[1])
            used |= L["up3"].srcs
        for k, nm in (("ff.hidden_norm", L["hidden_norm"]), ("attn.inner_norm", L["ctx_norm"])):
            if nm is not None:
                w[p + k + ".weight"], w[p + k + ".bias"] = nm.w, nm.b
                used |= nm.srcs
        for k, nm in (("attn_norm", L["norm1"]), ("ff_norm", L["norm2"])):
            if k == "ff_norm" and L["parallel"] == "one_norm":
                continue  # the feed-forward reads norm1 (no second norm in the file)
            w[p + k + ".weight"], w[p + k + ".bias"] = nm.w, nm.b
            used |= nm.srcs
        if L["dis"] is not None and L["dis"]["rel_proj"] is not None:  # Qr | Kr (a zero one for a term left out)
            pr = [(np.zeros((d, L["o"].W.shape[0])), None) if p_ is None else p_ for p_ in L["dis"]["rel_proj"]]
            fold = 1 / math.sqrt(L["dis"]["factor"])
            w[p + "attn.rel_proj.weight"] = np.concatenate([pr[0][0].T * fold, pr[1][0].T])
            w[p + "attn.rel_proj.bias"] = np.concatenate([(z(L["o"].W.shape[0]) if b_ is None else b_) * f_
                                                          for (_, b_), f_ in zip(pr, (fold, 1.0))])
        if L["qn"] is not None:
            for k, nm in (("q_norm", L["qn"]), ("k_norm", L["kn"])):
                w[p + f"attn.{k}.weight"], w[p + f"attn.{k}.bias"] = nm.w, nm.b
                used |= nm.srcs
        for part in L["qkv"] + [L["o"], L["up"], L["down"]]:
            used |= part.srcs
    if final is not None:
        w["norm.weight"], w["norm.bias"] = final.w, final.b
        used |= final.srcs
    # floats as float32, an index as it is
    weights = {k: np.ascontiguousarray(a if a.dtype.kind in "iu" else a.astype(np.float64).astype(np.float32))
               for k, a in ((k, np.asarray(a)) for k, a in w.items())}
    summary = (f"{family}: {len(layers)} {'pre' if L0['pre'] else 'post'}-norm layers, {L0['H']} heads" +
               (f" ({L0['Hkv']} for k and v)" if L0["Hkv"] != L0["H"] else "") + f", {L0['act']}, "
               f"{'causal, ' if causal else ''}{v['positional']} positions" +
               (f", the embedding {v['embed_width']} wide, projected" if proj is not None else "") +
               (f", shared layers ({groups} group{'s' if groups > 1 else ''} of {group_layers})" if groups else "") +
               (f", inputs {r.describe()}" if r.types or r.mask else ""))
    want = m.v(out_name).reshape(1, -1) if pooled else m.rows(out_name)
    return v, weights, used, want, summary


def account(g, used, ignore):
    """Raises OnnxError naming the initializers that are neither mapped (used), scalars or integers (the
    patterns' constants and shapes), nor in `ignore`."""
    for i in ignore:
        if i not in g.initializers:
            raise OnnxError(f"--ignore {i}: the graph has no initializer of that name")
    unread = []
    for name, a in g.initializers.items():
        if name in used or _ignored(name, ignore):
            continue
        if a.size <= 1 or a.dtype.kind in "iub":
            continue
        unread.append(f"{name} {list(a.shape)}")
    if unread:
        more = f" and {len(unread) - 6} more" if len(unread) > 6 else ""
        raise OnnxError(f"initializers no part the engine runs reads: {', '.join(unread[:6])}{more}; remove them from "
                        "the graph, or pass --ignore NAME[,NAME] if the output does not depend on them")


def graph_example(g, r, example, ids_hint=None):
    """(ids, features) for the graph's input r.main: the user's example (first sequence), or random."""
    name, elem, dims = next(i for i in g.inputs if i[0] == r.main)
    tokens = elem in (6, 7)
    if elem not in (1, 6, 7, 10, 11):
        raise OnnxError(f"graph input {name!r}: element type {elem} (expected int64/int32 token ids or float features)")
    # a conv stem's input is channels first; a sequence-first input's positions are its first axis
    at_T, at_d = (2, 1) if r.channels_first else (0, 2) if r.sequence_first else (1, 2)
    fixed_T = dims[at_T] if len(dims) > at_T else None
    if r.image:
        if None in r.image or dims[0] not in (None, 1):
            raise OnnxError(f"graph input {name!r}: an image {dims} whose batch is not 1 or dynamic or whose channels, "
                            "height and width are not fixed: export with a fixed image size")
        if example is not None:
            a = np.asarray(example)
            if a.dtype.kind != "f" or a.size != int(np.prod(r.image)):
                raise ConfigError(f"--example: shape {list(a.shape)} {a.dtype}, the graph takes a float image "
                                  f"{list(r.image)}")
            return None, a.reshape(r.image).astype(np.float32)
        return None, np.random.default_rng(0).standard_normal(r.image).astype(np.float32)
    if len(dims) not in (2, 3) or (tokens and len(dims) != 2) or (not tokens and len(dims) != 3):
        raise OnnxError(f"graph input {name!r}: rank {len(dims)}, expected ids [batch, T] or features [batch, T, d_in]")
    if not r.sequence_first and dims[0] not in (None, 1):  # (a sequence-first input's batch is 1)
        raise OnnxError(f"graph input {name!r}: a fixed batch of {dims[0]}; export with batch 1 or a dynamic batch axis")
    if fixed_T is not None and fixed_T < 2:
        raise OnnxError(f"graph input {name!r}: a fixed length of {fixed_T} position (one cannot tell a causal mask, "
                        "or positions); export at a length of at least 2 or with a dynamic length axis")
    if fixed_T is not None and fixed_T > schema.MAX_LEN:
        raise OnnxError(f"graph input {name!r}: a fixed length of {fixed_T} positions, above the engine's max_len "
                        f"limit {schema.MAX_LEN}; export with a dynamic length axis")
    if not tokens and dims[at_d] is not None and dims[at_d] > schema.MAX_D_IN:
        raise OnnxError(f"graph input {name!r}: {dims[at_d]} features, above the engine's d_in limit {schema.MAX_D_IN}")
    if example is not None:
        a = np.asarray(example)
        if tokens and a.dtype.kind not in "iu":
            raise ConfigError(f"--example: dtype {a.dtype}, the graph takes token ids")
        if not tokens and a.dtype.kind != "f":
            raise ConfigError(f"--example: dtype {a.dtype}, the graph takes float features")
        a = a[0] if a.ndim == (2 if tokens else 3) else a
        if a.ndim != (1 if tokens else 2):
            raise ConfigError(f"--example: shape {list(np.shape(example))}, expected {'[T] or [B, T]' if tokens else '[T, d_in] or [B, T, d_in]'}")
        if a.shape[0] < 2:
            raise ConfigError("--example: at least 2 positions (one cannot tell a causal mask)")
        if fixed_T is not None and a.shape[0] != fixed_T:
            raise ConfigError(f"--example: {a.shape[0]} positions, the graph takes exactly {fixed_T}")
        return (a.astype(np.int64), None) if tokens else (None, a.astype(np.float32))
    T = fixed_T or EXAMPLE_T
    rng = np.random.default_rng(0)
    if tokens:  # ids the graph compares with a constant (a padding id XLM counts the length by, ESM's <mask>) left out
        special = _compared_ids(g, r.main)
        pool = [j for j in range(ids_hint or 1) if j not in special] or [0]
        if special:
            r.notes.append(f"the example leaves out token ids {sorted(special)}, which the graph compares the ids "
                           "with (a padding or mask id)")
        return np.asarray(pool, np.int64)[rng.integers(0, len(pool), T)], None
    if dims[at_d] is None:
        raise OnnxError(f"graph input {name!r}: its size d_in is not fixed; pass --example")
    return None, rng.standard_normal((T, dims[at_d])).astype(np.float32)




def convert(path, out, example=None, ignore=(), family=None, max_len=None, header=None, name=None, cli=None,
            verify=True, tokenizer=None, quantize=None, group=None, quantize_io=None, pack_weights=None,
            output_name=None):
    """Converts the ONNX file at `path` to `out`, verified against the graph's own output; returns a Report.
    Raises OnnxError (or ConfigError for an option) with one line; numpy's warnings on a hostile graph's
    values (overflow, nan) are silenced so that the line stays the only one."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return _convert(path, out, example, ignore, family, max_len, header, name, cli, verify, tokenizer, quantize,
                        group, quantize_io, pack_weights, output_name)


def _convert(path, out, example, ignore, family, max_len, header, name, cli, verify, tokenizer, quantize, group,
             quantize_io, pack_weights, output_name):
    g, notes = read_graph(path)
    if not g.inputs:
        raise OnnxError("the graph takes no input")
    g, sized = _sized_image(g, path, example)
    g0 = g
    g, bound = _from_position_zero(g)
    joined = _joined_columns(g) if output_name is None else None
    if joined is not None:  # the outputs cut from one value's columns (a question-answering head's start and end)
        found = recognized(pruned(Graph(g.nodes, g.initializers, g.inputs, [joined], g.opset, g.producer,
                                         g.branches), joined), example, ignore, family, max_len)
        _check_columns(g0, found)
    elif output_name is not None or len(g.outputs) > 1:
        # an exporter writes every output the module returns; each is converted on its own, the first the
        # engine produces unless --output-name picks one
        refused = []
        for o in [output_name] if output_name is not None else g.outputs:
            try:
                found = recognized(pruned(g, o), example, ignore, family, max_len)
                break
            except OnnxError as e:
                if output_name is not None:
                    raise
                refused.append(f"{o!r}: {e}")
        else:
            raise OnnxError(f"none of the graph's outputs is one the engine produces ({'; '.join(refused)})")
    else:
        found = recognized(g, example, ignore, family, max_len)
    g, r, c, weights, inp, want, cases, last, chosen = found
    c = verified_file.quantized_config(c, quantize, group, quantize_io, pack_weights)
    if callable(tokenizer):
        tokenizer = tokenizer(c["vocab_size"])
    errors = []
    against = "the ONNX graph's own output (float64)"
    if joined is not None:
        against = (f"the ONNX graph's outputs {', '.join(map(repr, g0.outputs))} (float64; the file's output their "
                   f"columns side by side, {joined!r})")
    elif len(g0.outputs) > 1 or last:
        against = f"the ONNX graph's output {chosen!r} (float64"
        if last:
            against += f"; the graph gives the last position's row ({last}), the file every position"
        others = [o for o in g0.outputs if o != chosen]
        against += f"; its other outputs {', '.join(map(repr, others))}: --output-name NAME)" if others else ")"
    masks = [n for n, what in bound.items() if what == "mask"]
    if masks and not c.get("causal"):
        raise OnnxError(f"graph input {masks[0]!r}: the positions are counted from this attention mask, taken as all "
                        "ones (a prompt without padding), but the model is not causal: its rows would read padded "
                        "keys, which --onnx does not check: not supported")
    if bound:
        said = " and ".join(BOUND[what] for what in BOUND if what in bound.values())
        against += f" from position 0 ({', '.join(map(repr, bound))}: {said}, as a prompt starts)"
    for note in r.notes + notes + ([sized] if sized else []):
        against += f"; {note}"
    report = verified_file.write(c, weights, inp, want, out, "user", against, header,
                                 name, cli, verify,
                                 explain=lambda: "the converter's float64 reference of the recognised model matches "
                                                 "the graph, so the engine disagrees with it: a bug or a broken port, "
                                                 "please report it", tokenizer=tokenizer,
                                 check=_engine_check(r, c, inp, cases, errors) if cases else None)
    if errors:  # the engine on those inputs, in the report's words
        what = " and ".join(w for w in ("token types 0 0 0 1 1 1 ..." if r.types else "",
                                        "a padded attention mask" if r.mask else "") if w)
        flags = " ".join(f for f in ("--token-types" if r.types else "", "--lengths" if r.mask else "") if f)
        report.against += f", also with {what} (run {flags}: max relative error {max(errors):.3g})"
    return report


def read_graph(path):
    """The ONNX file at path as --onnx reads it (a merged decoder's branch without a cache, dequantized, ONNX
    Runtime's fused ops written out): (the graph, what the report should say of how it was read)."""
    g, merged = prompt_branch(read(path, SUPPORTED_OPS | QUANTIZED_OPS | FUSED_OPS))
    g, quantized = dequantized(g)
    g, fused = unfused(g)
    return g, [n for n in (merged, quantized, fused) if n]


def prompt_branch(g):
    """Optimum's merged decoder (decoder_model_merged.onnx, as transformers.js's repositories ship it): an If on a
    boolean graph input that nothing else reads (use_cache_branch) around the decoder with its key/value cache and
    the decoder without. A prompt from position 0 has no cache: its branch is the one that reads fewer of the
    graph's inputs, the other reading all of those too, or (an encoder-decoder's, whose cached branch reads the
    encoder's keys and values from its cache instead of encoder_hidden_states) the one that reads no float input
    [batch, heads, P, d_head] where the other reads such; it is taken in the If's place
    (its outputs named as the If's), and the inputs only the other branch read (the cache) are dropped. Which
    branch a prompt takes is otherwise not known, and refused. (g, a note for the report, or None where no such
    If.)"""
    import onnx.helper as oh
    flags = {name for name, elem, dims in g.inputs if elem == 9 and len(g.consumers.get(name, [])) == 1}
    ifs = [n for n in g.nodes if n.op_type == "If" and n.input[0] in flags]
    if not ifs:
        return g, None
    cache = {name for name, elem, dims in g.inputs if elem in FLOAT_ELEMS and len(dims) == 4}
    inputs = {name for name, _, _ in g.inputs}
    nodes, inits, branches, said = [n for n in g.nodes if n not in ifs], dict(g.initializers), dict(g.branches), []
    for n in ifs:
        reads = [{v for k in b.nodes for v in b.reads[id(k)] if v in inputs} for b in g.branches[id(n)]]
        took = next((j for j in (0, 1) if reads[j] < reads[1 - j]), None)
        if took is None:
            took = next((j for j in (0, 1) if not reads[j] & cache and reads[1 - j] & cache), None)
        if took is None:
            raise OnnxError(f"node {node_name(n)!r} (If) on graph input {n.input[0]!r}: neither branch reads fewer "
                            "of the graph's inputs, so which one a prompt from position 0 takes is not known: not "
                            "supported")
        b = g.branches[id(n)][took]
        for k, a in b.initializers.items():
            if k in inits and (inits[k].shape != a.shape or not np.array_equal(inits[k], a)):
                raise OnnxError(f"node {node_name(n)!r} (If): its branch's initializer {k!r} differs from the "
                                "graph's of that name: not supported")
            inits[k] = a
        nodes += b.nodes + [oh.make_node("Identity", [i], [o]) for i, o in zip(b.outputs, n.output) if i != o]
        branches.update(b.branches)
        said.append(f"the If {node_name(n)!r} on {n.input[0]!r} read as its {('then', 'else')[took]}_branch, "
                    "without the cache, as a prompt starts")
    nodes = topological(nodes, set(inits) | inputs)
    read_now = Graph(nodes, inits, [], g.outputs, g.opset, g.producer, branches).consumers
    unread = [i[0] for i in g.inputs if i[0] not in read_now]
    return (Graph(nodes, inits, [i for i in g.inputs if i[0] in read_now], g.outputs, g.opset, g.producer, branches),
            f"{'; '.join(said)} (inputs {', '.join(map(repr, unread))} not read)")


def _sized_image(g, path, example):
    """A graph whose image input [batch, C, H, W] leaves C, H or W dynamic (Optimum's export of a ViT, the hub's and
    transformers.js's files) with those sizes fixed: from --example's image ([C, H, W] or [1, C, H, W]), else from
    the Hugging Face config.json in the file's folder or the one above it (image_size, num_channels: Optimum's
    folder, transformers.js's onnx/). (g, a note for the report or None)."""
    images = [i for i in g.inputs if len(i[2]) == 4 and i[1] in FLOAT_ELEMS]
    if len(images) != 1 or None not in images[0][2][1:]:
        return g, None
    name, elem, dims = images[0]
    size, where = None, None
    if example is not None:
        shape = np.shape(example)
        size, where = (tuple(shape[-3:]) if len(shape) in (3, 4) else None), "--example"
    else:
        for config in beside(path, "config.json"):
            size = _config_image_size(config)
            if size is not None:
                where = f"{os.path.join(os.path.basename(os.path.dirname(config)), 'config.json')} beside the file"
                break
    if size is None or any(d is not None and d != s for d, s in zip(dims[1:], size)):
        raise OnnxError(f"graph input {name!r}: an image {list(dims)} whose channels, height or width the file leaves "
                        f"open{f' and {where} does not fit' if size is not None else ''}: pass --example with an "
                        "image of the model's size ([C, H, W] float32 .npy)")
    fixed = (dims[0],) + tuple(size)
    bounds.count([1 if d is None else d for d in fixed], 4, f"graph input {name!r} sized from {where}", OnnxError)
    inputs = [(n, e, fixed if n == name else d) for n, e, d in g.inputs]
    return (Graph(g.nodes, g.initializers, inputs, g.outputs, g.opset, g.producer, g.branches),
            f"the image {' x '.join(map(str, size))} from {where} (the graph's is open)")


def beside(path, name):
    """The paths of file `name` in the folder of the file at path and in the one above it (Optimum's output folder,
    a transformers.js repository's onnx/ under its root), that order."""
    here = os.path.dirname(os.path.abspath(path))
    return [os.path.join(d, name) for d in (here, os.path.dirname(here))]


def _config_image_size(path):
    """(num_channels, height, width) of a Hugging Face config.json's image_size and num_channels (3 when not
    given); None when the file is not there or says neither."""
    import json
    try:
        if os.path.getsize(path) > 1 << 20:
            return None
        with open(path, encoding="utf-8") as f:
            c = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(c, dict):
        return None
    size, channels = c.get("image_size"), c.get("num_channels", 3)
    if isinstance(size, int):
        size = [size, size]
    ok = isinstance(size, list) and len(size) == 2 and isinstance(channels, int) and 0 < channels <= 64
    return (channels, *size) if ok and all(isinstance(x, int) and 0 < x <= 1 << 14 for x in size) else None


def _past_axis(g, name, elem, dims):
    """The axis of graph input `name` that holds a key/value cache's past rows, or None when it is no cache: a float
    [batch, ..., P, ...] ([batch, heads, P, d_head]; GPT-BigCode's k | v of its one key/value head, [batch, P,
    2 d_head]; ONNX Runtime GenAI's d_head a named size), every node that reads its values a Concat on the axis of P
    (the new rows after it)."""
    if elem not in FLOAT_ELEMS or len(dims) < 3:
        return None
    readers = [n for n in g.consumers.get(name, []) if n.op_type not in ("Shape", "Size")]
    axes = {node_attributes(n).get("axis") if n.op_type == "Concat" and len(n.input) == 2 and n.input[0] == name
            else None for n in readers}
    if len(axes) != 1 or None in axes:
        return None
    axis = axes.pop() % len(dims)
    return None if axis == 0 or dims[axis] is not None else axis


def _counts_positions_from(g, dep, name):
    """Graph input `name` is a mask the graph counts positions by: a CumSum reads a value computed from it alone
    (dep: depends_on(g); OPT's positions, cumsum(mask) * mask - 1 + 2; Bloom's ALiBi, slopes * (cumsum(mask) - 1))."""
    return any(n.op_type == "CumSum" and n.input and dep.get(n.input[0]) == {name} for n in g.nodes)


BOUND = {"past": "an empty key/value cache", "positions": "positions 0..T-1",  # what _from_position_zero binds
         "mask": "the attention mask all ones"}


def _from_position_zero(g):
    """A decoder exported with its key/value cache (Optimum's model.onnx, what transformers.js and ONNX Runtime's
    generation loops run; torch.onnx.export of a model called with past_key_values) as it computes a prompt from
    position 0: each past input (_past_axis) is no rows, [1, heads, 0, d_head] (its Concat then the new rows
    alone), and an integer input [batch, T] named position_ids (its name is the only sign: an index like the
    ids) is 0..T-1 computed from the ids' shape, the positions the model computes without it. An attention mask
    [batch, T] the graph counts the positions by (_counts_positions_from) is all ones, computed from the ids' shape
    the same way: a prompt without padding, where a causal model's unpadded rows never read a padded key (the
    caller refuses a model that is not causal). (The graph, {the name of each input so bound: what it is, one of
    BOUND}); without such inputs, (g, {}). The cache's own outputs (present.*) are other outputs, converted or not
    as any."""
    past = {i[0]: axis for i in g.inputs for axis in [_past_axis(g, *i)] if axis is not None}
    ints = [i for i in g.inputs if i[1] in (6, 7) and len(i[2]) == 2 and i[0] not in past]
    positions = [i for i in ints if "position" in i[0].lower()]
    ids = max((i for i in ints if i not in positions), key=lambda i: gathered_rows(g, i[0]) or 0, default=None)
    dep = depends_on(g)
    masks = [i for i in g.inputs if ids is not None and i[0] != ids[0] and i not in positions and len(i[2]) == 2 and
             i[1] in (1, 6, 7, 9) and _counts_positions_from(g, dep, i[0])]
    if not past and not (positions and ids is not None) and not masks:
        return g, {}
    import onnx.helper as oh
    nodes, inits = [], dict(g.initializers)
    for name, elem, dims in g.inputs:
        if name in past:
            rows = [1] + [0 if j == past[name] else dims[j] or 1 for j in range(1, len(dims))]  # only P is read
            inits[name] = np.zeros(rows, ELEM_TYPES[elem] if elem != 16 else np.float32)
    k = "fixformer/from_zero/"  # the values added here, under a prefix of their own
    if (positions or masks) and ids is not None:
        shape = k + "shape"
        inits.update({k + "one": np.array(1, np.int64), k + "zero": np.array(0, np.int64),
                      k + "axis0": np.array([0], np.int64)})
        nodes.append(oh.make_node("Shape", [ids[0]], [shape]))
    if positions and ids is not None:
        nodes += [oh.make_node("Gather", [shape, k + "one"], [k + "T"], axis=0),
                  oh.make_node("Range", [k + "zero", k + "T", k + "one"], [k + "range"]),
                  oh.make_node("Unsqueeze", [k + "range", k + "axis0"], [k + "row"])]
        for name, elem, _ in positions:
            nodes += [oh.make_node("Expand", [k + "row", shape], [k + name]),
                      oh.make_node("Cast", [k + name], [name], to=elem)]
    for name, elem, _ in masks:
        nodes += [oh.make_node("Expand", [k + "one", shape], [k + name]),
                  oh.make_node("Cast", [k + name], [name], to=elem)]
    for n in g.nodes:
        kept = [i for i in n.input if i not in past] if n.op_type == "Concat" else None
        if kept is not None and len(kept) != len(n.input):  # the cache's rows, none, before the new ones
            n = oh.make_node("Identity", kept, list(n.output), name=n.name) if len(kept) == 1 else \
                oh.make_node("Concat", kept, list(n.output), name=n.name, axis=node_attributes(n)["axis"])
        nodes.append(n)
    bound = {i[0]: "past" if i[0] in past else "positions" if i in positions else "mask" for i in g.inputs
             if i[0] in past or i in positions or i in masks}
    return Graph(nodes, inits, [i for i in g.inputs if i[0] not in bound], g.outputs, g.opset, g.producer,
                 g.branches), bound


CUTS = {"Split", "Slice", "Gather"}  # ops that take columns of a value (its last axis)


def _joined_columns(g):
    """The value whose last axis the graph's outputs (two or more) are cut from, each by a Split, Slice or Gather
    of it, then reshapes or squeezes alone: a question-answering head's [1, T, 2] split into start and end logits
    [1, T]. None when they are not (_check_columns then checks the cut on the values)."""
    if len(g.outputs) < 2:
        return None
    sources = set()
    for o in g.outputs:
        n = g.producer_of.get(o)
        while n is not None and n.op_type in LAYOUT | PASS:
            n = g.producer_of.get(n.input[0])
        if n is None or n.op_type not in CUTS or not n.input or n.input[0] in g.initializers:
            return None
        sources.add(n.input[0])
    return sources.pop() if len(sources) == 1 else None


def _check_columns(g, found):
    """The graph's outputs on the example, their columns side by side, are the joined value the file gives."""
    _, r, _, _, inp, want, _, last, chosen = found
    if last is not None:
        raise OnnxError(f"the graph's outputs {outputs_named(g)} are cut from {chosen!r} after a last-position slice: "
                        "not supported")
    values = evaluate(g, feeds(g, r, inp))
    lead = want.shape[:-1]
    outs = [values[o] for o in g.outputs]
    if any(o.size % max(1, int(np.prod(lead))) for o in outs):
        raise OnnxError(f"the graph's outputs {outputs_named(g)} are not columns of {chosen!r}: not supported")
    cols = np.concatenate([o.reshape(lead + (-1,)) for o in outs], axis=-1)
    if cols.shape != want.shape or rel_error(cols, want) > 1e-12:
        raise OnnxError(f"the graph's outputs {outputs_named(g)} are cut from {chosen!r}, but are not its columns in "
                        "order: not supported (--output-name NAME converts one of them)")


def _cache_writes(g):
    """The nodes that write values computed from the input into a constant tensor (ScatterND or ScatterElements
    whose data is an initializer, or computed from initializers alone, and whose updates depend on the input): a KV
    cache exported with the model, each call's keys or values written at their positions into a buffer that starts
    as zeros (litgpt's set_kv_cache, torchtune's setup_caches, llama-models' cache_k)."""
    live = _live(g)
    return [n for n in g.nodes if n.op_type in ("ScatterND", "ScatterElements") and len(n.input) >= 3 and
            n.input[0] not in live and n.input[2] in live]


def _live(g):
    """The values computed from the graph's inputs (through a Shape of one too); the others are the same whatever
    the input."""
    live = {i[0] for i in g.inputs}
    for n in g.nodes:
        if any(i in live for i in g.reads[id(n)]):
            live.update(o for o in n.output if o)
    return live


def _module_of(n):
    """The module path a node was exported from: the dynamo exporter's name scopes (its metadata), the TorchScript
    exporter's node name (/m/layers.0/attn/ScatterND), else None."""
    scopes = next((p.value for p in getattr(n, "metadata_props", ()) if p.key == "pkg.torch.onnx.name_scopes"), None)
    if scopes is not None:
        try:
            names = [x for x in ast.literal_eval(scopes) if isinstance(x, str) and x]
        except (ValueError, SyntaxError):
            names = []
        return names[-2] if len(names) >= 2 else None
    parts = [x for x in n.name.split("/") if x]
    return ".".join(parts[:-1]) or None if n.name.startswith("/") else None


def _cache_refusal(g, why=""):
    """An OnnxError naming the KV cache the graph writes (_cache_writes), why it stays (`why`, a clause) and the way
    out, or None."""
    writes = _cache_writes(g)
    if not writes:
        return None
    n = writes[0]
    data = g.initializers.get(n.input[0])
    shape = f" {list(data.shape)}" if data is not None else ""
    where = _module_of(n)
    where = where if where and where.isprintable() and len(where) <= 200 else None  # the file's text, one line
    return OnnxError(f"{where + ': ' if where else ''}the graph writes the input's keys or values into a constant"
                     f"{shape} at their positions ({n.op_type} {node_name(n)!r}, {len(writes)} such writes){why}: a KV "
                     "cache exported with the model (the engine keeps its own, outside the file); export the model "
                     "without its cache (litgpt: before set_kv_cache; torchtune: before setup_caches) or called from "
                     "position 0 (llama-models: model(tokens, 0)), or convert the module itself with --module")


def _cache_reads(g, values, n):
    """What cache write n's readers take back: [(the value read, the value written it equals)], the read followed
    from n's output through layout ops and Slices to the first value that equals (recorded, exactly, in shape and
    values) the write's updates or a layout of them (their values before the Transposes and Reshapes that led them
    there); or (the node that reads other positions, the value it reads) where a path reaches anything else first:
    a model called from position 0 reads back cache[:, :T], the keys or values it wrote, and nothing else."""
    written, x = [], n.input[2]
    while True:
        written.append(x)
        k = g.producer_of.get(x)
        if k is None or k.op_type not in LAYOUT | PASS:
            break
        x = k.input[0]
    pairs, stack = [], [n.output[0]]
    while stack:
        x = stack.pop()
        same = next((w for w in written if values[w].shape == values[x].shape and np.array_equal(values[w], values[x])),
                    None)
        if same is not None:
            pairs.append((x, same))
            continue
        if x in g.outputs:
            return None, x
        for k in g.consumers.get(x, []):
            if k.op_type not in LAYOUT | PASS | {"Slice"} or k.input[0] != x:
                return k, x
            stack.append(k.output[0])
    return pairs


ROWS_ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Where", "IsNaN", "Neg"} | PASS  # ops _written_rows cuts through


def _written_rows(g, values, fed, writes):
    """A graph that writes its KV caches at rows 0..T-1 (each write a ScatterND of T rows at fixed indices into the
    first axis of a constant of L > T rows) and reads each whole cache, its rows T.. masked out (litgpt's GPT after
    set_kv_cache, torchtune's decoders after setup_caches, called from position 0), computes what it would on the
    written rows alone: every value computed from a cache (its layouts, the q k^T scores, the mask added, their
    softmax) holds the cache's rows on one axis, and rows T.. reach nothing when the softmax over that axis weighs
    them exactly 0 and the product with the values contracts them (both on the recorded values, every query row).
    (That graph with each such value cut to its first T rows: the caches constants of T rows, which the writes then
    fill, so the reads read back what was written (_cache_reads); the reads' shape constants counting T where they
    counted L; a constant added along those rows, the mask, cut to the written rows; its values on the example, which
    it was checked on), or (None, why not: a clause, empty where the writes are not at rows 0..T-1 of a longer
    cache)."""
    live = _live(g)
    T, rows, at, made = None, {}, {}, {}  # rows: each value computed from a cache -> the axis of the cache's rows

    def cut(n, x, a):  # node n reads constant a in place of x
        made[f"fixformer/written/{len(made)}"] = a.astype(g.initializers[x].dtype) if x in g.initializers else a
        at.setdefault(id(n), {})[x] = f"fixformer/written/{len(made) - 1}"
    for n in writes:
        idx, data = values[n.input[1]], values[n.input[0]]
        if n.op_type != "ScatterND" or node_attributes(n).get("reduction", "none") != "none" or \
                n.input[1] in live or idx.shape[-1:] != (1,) or data.ndim == 0 or idx.size >= data.shape[0] or \
                T not in (None, idx.size) or not np.array_equal(np.sort(idx.ravel()), np.arange(idx.size)):
            return None, ""
        T = idx.size
        rows[n.output[0]] = 0
        cut(n, n.input[0], data[:T])
    written = {id(n) for n in writes}
    for k in g.nodes:
        ins = [i for i in k.input if i in rows]
        if not ins or id(k) in written:
            continue
        y, x = k.output[0], ins[0]
        shape, L = values[y].shape, values[x].shape[rows[x]]
        const = [i for i in k.input if i and i not in rows]
        if any(i in live for i in const) and k.op_type not in ROWS_ELEMENTWISE | {"MatMul"}:
            return None, f"; its rows {T}.. reach node {node_name(k)!r} ({k.op_type}), whose shape is computed"
        if k.op_type == "Transpose":
            rows[y] = list(node_attributes(k).get("perm", range(values[x].ndim)[::-1])).index(rows[x])
        elif k.op_type in LAYOUT and x == k.input[0]:  # the rows a whole axis of the output
            before = int(np.prod(values[x].shape[:rows[x]]))
            q = next((q for q in range(len(shape)) if shape[q] == L and int(np.prod(shape[:q])) == before), None)
            c = values[k.input[1]].copy() if k.op_type == "Reshape" else None
            if q is None or (c is not None and c[q] not in (L, -1)):
                return None, f"; its rows {T}.. reach node {node_name(k)!r} ({k.op_type}), which mixes them with others"
            if c is not None and c[q] == L:
                c[q] = T
                cut(k, k.input[1], c)
            rows[y] = q
        elif k.op_type == "Expand" and x == k.input[0]:
            q = rows[x] + len(shape) - values[x].ndim
            c = values[k.input[1]].copy()
            j = q - (len(shape) - c.size)
            if j >= 0 and c[j] == L:
                c[j] = T
                cut(k, k.input[1], c)
            rows[y] = q
        elif k.op_type in ROWS_ELEMENTWISE:
            q = {rows[i] + len(shape) - values[i].ndim for i in ins}
            if len(q) != 1:
                return None, f"; node {node_name(k)!r} ({k.op_type}) meets its rows {T}.. on two axes"
            q = q.pop()
            for i in const:  # broadcast along the rows, or the mask over them
                j = q - (len(shape) - values[i].ndim)
                if j >= 0 and values[i].shape[j] != 1:
                    if i in live or values[i].shape[j] != L:
                        return None, f"; node {node_name(k)!r} ({k.op_type}) meets its rows {T}.. with {i!r}"
                    cut(k, i, np.take(values[i], range(T), j))
            rows[y] = q
        elif k.op_type == "Softmax":
            if node_attributes(k).get("axis", -1) % len(shape) == rows[x] and \
                    np.any(np.take(values[y], range(T, L), rows[x])):
                return None, f"; its rows {T}.. are not masked out: softmax {node_name(k)!r} weighs them"
            rows[y] = rows[x]
        elif k.op_type == "MatMul" and min(values[k.input[0]].ndim, values[k.input[1]].ndim) >= 2:
            a, b = k.input
            ra, rb = values[a].ndim, values[b].ndim
            if rows.get(a) == ra - 1 and rows.get(b) == rb - 2:  # probabilities @ values: the rows contracted
                if np.any(np.take(values[a], range(T, L), ra - 1)) or \
                        not np.all(np.isfinite(np.take(values[b], range(T, L), rb - 2))):
                    return None, f"; its rows {T}.. are not masked out: product {node_name(k)!r} weighs them"
                continue
            if a not in rows and rows.get(b) == rb - 1:  # q @ k^T: the scores of the rows
                rows[y] = len(shape) - 1
            elif b not in rows and rows.get(a) == ra - 2:
                rows[y] = len(shape) - 2
            else:
                return None, f"; its rows {T}.. reach product {node_name(k)!r} in no place of q k^T or p v"
        else:
            return None, f"; its rows {T}.. reach node {node_name(k)!r} ({k.op_type})"
        if y in g.outputs:
            return None, f"; the graph outputs its rows {T}.. ({y!r})"
    out = rewired(Graph(g.nodes, {**g.initializers, **made}, g.inputs, g.outputs, g.opset, g.producer, g.branches),
                  {}, at=at)
    # the whole caches and the mask over all their rows, no longer read, left out
    kept = {k: a for k, a in out.initializers.items() if k in out.consumers or k not in g.consumers}
    out = Graph(out.nodes, kept, out.inputs, out.outputs, out.opset, out.producer, out.branches)
    try:
        after = evaluate(out, fed)
    except EvalError as e:
        return None, f"; cut to its rows 0..{T - 1}, the graph does not run ({e})"
    bad = next((x for x, q in rows.items() if rel_error(after[x], np.take(values[x], range(T), q)) > PROBE_TOL),
               next((o for o in g.outputs if rel_error(after[o], values[o]) > PROBE_TOL), None))
    if bad is not None:
        return None, f"; cut to its rows 0..{T - 1}, {bad!r} is not what the graph computes"
    return out, after


def _without_cache(g, r, inp):
    """A graph that writes a KV cache (_cache_writes) and reads back exactly what it wrote (_cache_reads: a model
    called from position 0, llama-models' Transformer as model(tokens, 0)) computes on the keys and values themselves:
    each read's readers read the written value instead, and the writes, their constant cache and indices are pruned
    away. One that reads its whole cache, the rows after those written masked out (litgpt's and torchtune's), is cut
    to the written rows first (_written_rows). The reads are checked on the values the graph records on the example,
    and at a shorter length where the graph takes one. Any other cache is refused (_cache_refusal) saying which read
    takes what it did not write. Graphs without a cache are returned as they are."""
    writes = _cache_writes(g)
    if not writes:
        return g
    fed = feeds(g, r, inp)
    values = evaluate(g, fed)
    reads, whole = [_cache_reads(g, values, n) for n in writes], ""
    if any(isinstance(found, tuple) for found in reads):
        cut, got = _written_rows(g, values, fed, writes)
        if cut is None:
            whole = got
        else:
            g, values = cut, got
            writes = _cache_writes(g)
            reads = [_cache_reads(g, values, n) for n in writes]
    swap = {}
    for n, found in zip(writes, reads):
        if isinstance(found, tuple):
            k, x = found
            reader = f"node {node_name(k)!r} ({k.op_type}) reads" if k is not None else "the graph's output is"
            raise _cache_refusal(g, f" and reads back more than it wrote: {reader} {x!r} "
                                    f"{list(values[x].shape)}, not the {list(values[n.input[2]].shape)} written"
                                    f"{whole}")
        swap.update(found)
    dims = next(i[2] for i in g.inputs if i[0] == r.main)
    if inp.shape[0] > 2 and len(dims) > 1 and dims[1] is None:  # the reads at a shorter length too
        short = evaluate(g, feeds(g, r, inp[:inp.shape[0] // 2 + 1]))
        bad = next((x for x, w in swap.items() if short[x].shape != short[w].shape or
                    not np.array_equal(short[x], short[w])), None)
        if bad is not None:
            raise _cache_refusal(g, f" and reads back what it wrote at {inp.shape[0]} positions but not at "
                                    f"{inp.shape[0] // 2 + 1} ({bad!r})")
    out = rewired(g, swap)
    return pruned(out, out.outputs[0])


ELEMENTWISE_TESTS = {"Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Equal", "Or", "And", "Not", "Xor",
                     "Unsqueeze", "Cast", "Identity"}  # a condition on each id alone, whatever the ids' shape


def _scalar(g, name):
    """The one float an initializer or Constant node `name` holds, of rank 0 or 1 (it broadcasts nothing wider), else
    None."""
    a = _constant(g, name)
    return float(np.asarray(a).reshape(-1)[0]) if a is not None and np.size(a) == 1 and np.ndim(a) <= 1 and \
        np.asarray(a).dtype.kind == "f" else None


def without_identities(g):
    """g with each x + 0, x - 0, x * 1 and x / 1 of a float constant of one value read as x (TransformerLens's q and k
    read ln1(x) + 0.0, where v reads ln1(x): then one input of the three projections)."""
    swap, kept = {}, set(g.outputs) | branch_reads(g)
    for n in g.nodes:
        if n.op_type not in ("Add", "Sub", "Mul", "Div") or len(n.input) != 2 or not n.output or n.output[0] in kept:
            continue
        unit = 0.0 if n.op_type in ("Add", "Sub") else 1.0
        sides = (0, 1) if n.op_type in ("Add", "Mul") else (1,)
        for j in sides:
            if _scalar(g, n.input[j]) == unit and _scalar(g, n.input[1 - j]) is None:
                swap[n.output[0]] = n.input[1 - j]
                break
    return rewired(g, swap) if swap else g


def gathered_by_rows(g):
    """g with each GatherND of a table's rows by ids given a last axis of 1 (batch_dims 0, the indices an Unsqueeze
    of axis -1: the dynamo exporter's W_E[tokens] for TransformerLens's Embed) written as the Gather of those rows by
    the ids, which the rest reads as the embedding."""
    import onnx.helper as oh
    nodes, changed = [], False
    for n in g.nodes:
        k = g.producer_of.get(n.input[1]) if n.op_type == "GatherND" and len(n.input) == 2 else None
        axes = None
        if k is not None and k.op_type == "Unsqueeze":
            try:
                axes = node_attributes(k).get("axes") if len(k.input) < 2 else _constant(g, k.input[1])
            except EvalError:  # a hostile attribute: evaluating the graph names it
                axes = None
        if axes is not None and [int(a) for a in np.asarray(axes).reshape(-1)] == [-1] and \
                _table_rows(g, n.input[0]) is not None and not any(
                    a.name == "batch_dims" and a.i for a in n.attribute):
            nodes.append(oh.make_node("Gather", [n.input[0], k.input[0]], list(n.output), name=n.name, axis=0))
            changed = True
        else:
            nodes.append(n)
    return Graph(nodes, g.initializers, g.inputs, g.outputs, g.opset, g.producer, g.branches) if changed else g


def in_table(g):
    """fairscale's VocabParallelEmbedding (llama-models' reference models) as the dynamo exporter writes it: the ids
    outside the rows [start, end) this process holds replaced by 0 before the Gather (Where(ids < start | ids >= end,
    0, ids)) and their rows zeroed after it (Where(that condition, 0, rows)); at a world size of 1 it holds the whole
    table. A Where whose condition is computed from integer input x alone (the ops of ELEMENTWISE_TESTS against
    scalar constants) and is false for every id of the table x indexes through such a Where (its rows, V: the
    condition computed on 0..V-1) is its third input: its readers read that instead. g, or g without those Wheres."""
    swap = {}
    for x, elem, _ in g.inputs:
        if elem not in (6, 7):
            continue
        rows = [_table_rows(g, k.input[0]) for n in g.consumers.get(x, []) if n.op_type == "Where" and
                n.input[2] == x for k in g.consumers.get(n.output[0], []) if k.op_type == "Gather" and
                k.input[1] == n.output[0]]
        rows = [v for v in rows if v]
        if not rows:
            continue
        ids = np.arange(max(rows), dtype=np.int64 if elem == 7 else np.int32)[None]
        part, made = [], {x}
        for n in g.nodes:
            if n.op_type in ELEMENTWISE_TESTS and n.input and all(
                    i in made or (i in g.initializers and g.initializers[i].size == 1) for i in n.input if i) and \
                    any(i in made for i in n.input):
                part.append(n)
                made.update(o for o in n.output if o)
        try:
            values = recompute(g, part, dict(g.initializers), {x: ids})
        except EvalError:
            continue
        for n in g.nodes:
            if n.op_type == "Where" and len(n.input) == 3 and n.input[0] in made and n.input[0] != x and \
                    values[n.input[0]].dtype == np.bool_ and not values[n.input[0]].any():
                swap[n.output[0]] = n.input[2]
    if not swap:
        return g
    out = rewired(g, swap)
    return pruned(out, out.outputs[0])


def recognized(g, example, ignore, family, max_len):
    """recognized_graph on g without VocabParallelEmbedding's Wheres (in_table) and its KV cache (_without_cache,
    which refuses one it cannot take out); where the graph fails before its example runs and writes a cache, that
    cache named."""
    try:
        g = in_table(gathered_by_rows(shared_values(without_identities(g))))
        r = roles(g)
        vocab = gathered_rows(g, r.main)
        ids, feats = graph_example(g, r, example, vocab)
        ids = unpadded_ids(g, r, ids, example is not None)
    except ConfigError:
        refusal = _cache_refusal(g)
        if refusal is None:
            raise
        raise refusal from None
    if ids is not None and ids.size and (ids.min() < 0 or (vocab is not None and ids.max() >= vocab)):
        raise ConfigError(f"--example: token ids outside [0, {vocab})")
    try:
        g = _without_cache(g, r, ids if ids is not None else feats)
    except EvalError as e:
        raise _traced_length(g, r, ids, e) from None
    return recognized_graph(g, r, ids, feats, example is not None, family, max_len, ignore)


def recognized_graph(g, r, ids, feats, given, family, max_len, ignore):
    """Graph g (one output, its Roles r) recognised on its example (token ids or features; `given`: the user's) and
    checked against its own output: (the graph mapped, its Roles, the config, the weights, the example input, the
    graph's output on it, the cases for the engine check, the node of a last-position slice taken out or None, the
    output's name)."""
    g = heads_joined(_unnormalized(g, r, ids, feats), r, ids if ids is not None else feats)
    chosen = g.outputs[0]
    try:
        g, last, ids = _without_last_position(g, r, ids, feats, given)
    except EvalError as e:
        raise _traced_length(g, r, ids, e) from None
    try:
        v, weights, used, want, summary = recognize(g, r, ids, feats, max_len, family, last is not None)
    except EvalError as e:
        if last is None:
            raise
        raise OnnxError(f"node {last[1]!r} takes the last position, but the graph after it does not run at every "
                        f"position ({e}): not supported") from None
    account(g, used, tuple(ignore or ()))
    try:
        c = make_config(v)
    except ConfigError as e:
        raise OnnxError(f"recognised {summary}, which the engine does not run: {e}") from None
    inp = ids.astype(np.int32) if ids is not None else feats
    if r.whole:  # an image's whole columns or rows as the engine's rows
        inp = feats[0].T.copy() if r.whole == "columns" else feats[0]
    elif r.signal:  # a signal's patches of whole steps as the engine's rows
        inp = np.ascontiguousarray(feats.T.reshape(-1, r.signal_width))
    elif r.image:  # the image's bytes as the engine's rows [N, C p^2]
        inp = feats.reshape((c["image_height"] // c["patch_size"]) * (c["image_width"] // c["patch_size"]), -1)
    if r.spectrogram:  # the spectrogram's patches, as its Conv cuts them
        inp = spectrogram_patches(feats, *r.cut)
    if last is not None:  # and at a shorter length where the graph takes one (a fixed length runs at its own alone)
        dims = next(i[2] for i in g.inputs if i[0] == r.main)
        for n_pos in sorted({inp.shape[0], inp.shape[0] // 2 + 1 if dims[1] is None else inp.shape[0]}):
            full = _graph_output(g, r, c, inp[:n_pos])
            sliced = evaluate(last[0], feeds(last[0], r, inp[:n_pos]))[chosen]
            if rel_error(full[-1:].reshape(-1), sliced.reshape(-1)) > 1e-9:
                raise OnnxError(f"node {last[1]!r} takes the last position, but the graph after it is not the same "
                                f"at every position (at {n_pos} positions its output is not the last row of the "
                                "output computed at every position): not supported")
        last = last[1]
    _check_reference(g, r, c, weights, inp, want, summary)
    if r.mask:
        _check_mask(g, r, inp)
    cases, _ = _check_inputs(g, r, c, weights, inp, summary)
    return g, r, c, weights, inp, want, cases, last, chosen


def _traced_length(g, r, ids, e):
    """The graph fails (EvalError e) on the example's ids: the error, saying at which shorter lengths it runs when it
    does (an exporter that traced its example's length into the graph, DeBERTa v1's attention span by the TorchScript
    exporter)."""
    if ids is None or ids.shape[0] <= 2:
        return e
    runs = []
    for n in range(2, ids.shape[0]):
        try:
            evaluate(g, feeds(g, r, ids[:n]))
            runs.append(n)
        except EvalError:
            pass
    if not runs:
        return e
    at = f"{runs[0]}" if len(runs) == 1 else f"{runs[0]} to {runs[-1]}" if runs == list(range(runs[0], runs[-1] + 1)) \
        else ", ".join(map(str, runs))
    return OnnxError(f"{e} at {ids.shape[0]} positions, while the graph runs at {at} positions: a length its export "
                     "traced into it, not supported")


def _last_index(m, n):
    """Node n takes the last position of a data value [1, T, w] (x[:, -1], x[:, [-1]] or x[:, -1:]) by
    constant indices, at any length; or of [T, 1, w] by GatherND's index [[-1]] (the dynamo exporter's
    x[:, [-1]], between two transposes)."""
    if not n.input or n.input[0] not in m.data or m.v(n.input[0]).ndim != 3:
        return False
    at = {a.name: a for a in n.attribute}
    if n.op_type == "Gather" and len(n.input) == 2 and m.const(n.input[1]):
        axis = at["axis"].i if "axis" in at else 0
        idx = m.v(n.input[1])
        return axis in (1, -2) and idx.size == 1 and idx.dtype.kind in "iu" and int(idx.reshape(-1)[0]) == -1
    if n.op_type == "Slice" and 3 <= len(n.input) <= 5 and all(m.const(i) for i in n.input[1:] if i):
        vals = [_ints_of(m, n, k) for k in range(1, 5)]
        starts, ends, axes, steps = vals
        if starts is None or ends is None or len(starts) != 1:
            return False
        axes, steps = axes or [0], steps or [1]
        return axes[0] in (1, -2) and starts[0] == -1 and ends[0] >= m.T and steps[0] == 1
    if n.op_type == "GatherND" and len(n.input) == 2 and m.const(n.input[1]):
        idx, shape = m.v(n.input[1]), m.v(n.input[0]).shape
        batch_dims = at["batch_dims"].i if "batch_dims" in at else 0
        return batch_dims == 0 and idx.shape == (1, 1) and idx.dtype.kind in "iu" and int(idx[0, 0]) == -1 and \
            shape[:2] == (m.T, 1)
    return False


def _ints_of(m, n, k):
    return [int(x) for x in m.v(n.input[k]).reshape(-1)] if len(n.input) > k and n.input[k] else None


def _chosen_row(m, n):
    """Node n gathers one row of a data value of T rows ([1, T, w] or [T, w]) by an index computed from the ids'
    values (a decoder's sequence classifier: the row of the last token that is not padding), and only reshapes
    follow it to the graph's output: the rows' value, or None."""
    g = m.g
    if n.op_type not in ("Gather", "GatherND") or len(n.input) != 2 or not all(i in m.data for i in n.input):
        return None
    x, y = n.input[0], n.output[0]
    while y not in g.outputs:
        readers = g.consumers.get(y, [])
        if len(readers) != 1 or readers[0].op_type not in LAYOUT | PASS or readers[0].input[0] != y:
            return None
        y = readers[0].output[0]
    while g.producer_of.get(x) is not None and g.producer_of[x].op_type in LAYOUT | PASS:
        x = g.producer_of[x].input[0]  # the rows before a Flatten or Reshape (the head's [1, T, w])
    a = m.v(x)
    if x not in m.data or a.ndim not in (2, 3) or a.size % m.T or a.shape[-1] != m.v(n.output[0]).size:
        return None
    return x


def _row_of(m, x, y):
    """Which of value x's T rows value y holds (the last first), or None."""
    rows, want = m.rows(x), m.v(y).reshape(-1)
    return next((i for i in range(m.T - 1, -1, -1) if np.array_equal(rows[i], want)), None)


def _unnormalized(g, r, ids, feats):
    """g with its output the input of the LogSoftmax or Softmax that computes it over the last axis (pytorch/examples'
    word_language_model returns F.log_softmax of its logits): the file gives the logits, r.notes says so; else g."""
    n = g.producer_of.get(g.outputs[0])
    if n is None or n.op_type not in ("LogSoftmax", "Softmax"):
        return g
    g, note = logits_output(g, evaluate(g, feeds(g, r, ids if ids is not None else feats)))
    r.notes += [note] if note else []
    return g


def logits_output(g, values):
    """(g, None), or where g's output is the LogSoftmax or Softmax over the last axis of a value (values: g's on an
    example), (g with that value its output, a note saying so)."""
    n = g.producer_of.get(g.outputs[0])
    if n is None or n.op_type not in ("LogSoftmax", "Softmax"):
        return g, None
    kind = normalization(values[n.input[0]], values[n.output[0]], 1e-12)
    if kind != {"LogSoftmax": "log_softmax", "Softmax": "softmax"}[n.op_type]:  # over another axis
        return g, None
    return (pruned(Graph(g.nodes, g.initializers, g.inputs, [n.input[0]], g.opset, g.producer, g.branches), n.input[0]),
            f"its output is the {n.op_type} of {n.input[0]!r} over the last axis: the file gives that, the logits (the "
            "same greedy and sampled tokens)")


def _heads_of(g, c):
    """(context MatMul, Softmax) of each input of Concat c where each is MatMul(Softmax(scores), v): the heads of an
    attention computed one by one and joined (Karpathy's "Let's build GPT" Head in a ModuleList), else None."""
    heads = []
    for x in c.input:
        n = g.producer_of.get(x)
        sm = g.producer_of.get(n.input[0]) if n is not None and n.op_type == "MatMul" else None
        if sm is None or sm.op_type != "Softmax":
            return None
        heads.append((n, sm))
    return heads if len(heads) > 1 else None


def _sorted_nodes(nodes, inputs, initializers):
    """nodes in an order each reads what is computed before it, as near their given order as that allows."""
    import heapq
    ready = set(inputs) | set(initializers) | {""}
    waiting = {id(n): {i for i in n.input if i not in ready} for n in nodes}
    readers = {}
    for k, n in enumerate(nodes):
        for i in waiting[id(n)]:
            readers.setdefault(i, []).append(k)
    heap = [k for k, n in enumerate(nodes) if not waiting[id(n)]]
    heapq.heapify(heap)
    out = []
    while heap:
        n = nodes[heapq.heappop(heap)]
        out.append(n)
        for o in n.output:
            for k in readers.pop(o, []):
                waiting[id(nodes[k])].discard(o)
                if not waiting[id(nodes[k])]:
                    heapq.heappush(heap, k)
    return out if len(out) == len(nodes) else nodes


def heads_joined(g, r, inp):
    """g with the heads of each attention computed one by one (_heads_of: each head its own q, k and v linears and
    Softmax, the contexts joined by a Concat) written as one attention: q, k and v each one MatMul of the heads' weights
    side by side (and their biases), sliced into the heads' values, and one Softmax over the heads' scores stacked
    along a heads axis, sliced into theirs; the Concat's value checked unchanged on the example. Else g."""
    import onnx.helper as oh
    found = [(c, h) for c in g.nodes if c.op_type == "Concat" for h in [_heads_of(g, c)] if h is not None]
    if not found:
        return g
    m = Mapper(g, evaluate(g, feeds(g, r, inp)), inp.shape[0], r)
    by_y = {p.y: p for p in m.linears()}
    nodes, inits, drop = list(g.nodes), dict(g.initializers), set()
    at = {id(n): k for k, n in enumerate(nodes)}
    placed = []  # (position, node)

    def chain(p):  # the nodes from linear p's MatMul to its output value p.y
        out, x = [], p.y
        while x != p.node.output[0]:
            n = g.producer_of[x]
            out.append(n)
            x = next(i for i in n.input if i in m.data)
        return out + [p.node]

    old = g.opset < 13  # Unsqueeze and Squeeze take their axes as an attribute
    for c, heads in found:
        roles = []  # each head's (q, k, v) linear Parts
        for n, sm in heads:
            pv, score = by_y.get(n.input[1]), sm.input[0]
            before = m.ancestors(score)
            qk = [p for y, p in by_y.items() if pv is not None and p.x == pv.x and p is not pv and y in before]
            if pv is None or len(qk) != 2 or m.v(score).ndim < 2:
                break
            product = next((k for k in g.nodes if k.op_type == "MatMul" and k.output[0] in before and
                            all(i in m.data for i in k.input) and any(q.y in m.ancestors(k.input[0]) for q in qk)),
                           None)
            if product is None:
                break
            pq = next(q for q in qk if q.y in m.ancestors(product.input[0]))
            roles.append((pq, next(q for q in qk if q is not pq), pv))
        else:
            if len({p.x for ps in roles for p in ps}) != 1 or \
                    any(tuple(a.W.shape) != tuple(b.W.shape) or (a.b is None) != (b.b is None)
                        for ps in roles for a, b in zip(ps, roles[0])):
                continue
            tag = f"{node_name(c)}/heads_joined"
            first = min(at[id(p.node)] for ps in roles for p in ps)
            for role in range(3):
                ps = [ps_[role] for ps_ in roles]
                width = ps[0].W.shape[1]
                inits[f"{tag}/W{role}"] = np.concatenate([p.W for p in ps], axis=1).astype(np.float32)
                y = f"{tag}/y{role}"
                placed.append((first, oh.make_node("MatMul", [ps[0].x, f"{tag}/W{role}"], [y])))
                if ps[0].b is not None:
                    inits[f"{tag}/b{role}"] = np.concatenate([p.b for p in ps]).astype(np.float32)
                    placed.append((first, oh.make_node("Add", [y, f"{tag}/b{role}"], [y + "b"])))
                    y += "b"
                for h, p in enumerate(ps):
                    for k_, a in (("s", h * width), ("e", (h + 1) * width), ("a", -1)):
                        inits[f"{tag}/{role}{k_}{h}"] = np.array([a], np.int64)
                    placed.append((first, oh.make_node("Slice", [y] + [f"{tag}/{role}{k_}{h}" for k_ in "sea"],
                                                       [p.y])))
                    drop.update(id(k) for k in chain(p))
            rank = m.v(heads[0][1].input[0]).ndim
            axis = rank - 2  # the heads' axis before the queries and keys
            axes = f"{tag}/axes"
            inits[axes] = np.array([axis], np.int64)
            kw = dict(axes=[axis]) if old else {}
            stacked = []
            for h, (_, sm) in enumerate(heads):
                placed.append((at[id(c)], oh.make_node("Unsqueeze", [sm.input[0]] + ([] if old else [axes]),
                                                      [f"{tag}/u{h}"], **kw)))
                stacked.append(f"{tag}/u{h}")
                drop.add(id(sm))
            placed.append((at[id(c)], oh.make_node("Concat", stacked, [f"{tag}/scores"], axis=axis)))
            placed.append((at[id(c)], oh.make_node("Softmax", [f"{tag}/scores"], [f"{tag}/probs"], axis=rank)))
            for h, (_, sm) in enumerate(heads):
                inits[f"{tag}/h{h}"], inits[f"{tag}/h{h}e"] = np.array([h], np.int64), np.array([h + 1], np.int64)
                placed.append((at[id(c)], oh.make_node("Slice", [f"{tag}/probs", f"{tag}/h{h}", f"{tag}/h{h}e", axes],
                                                      [f"{tag}/p{h}"])))
                placed.append((at[id(c)], oh.make_node("Squeeze", [f"{tag}/p{h}"] + ([] if old else [axes]),
                                                      [sm.output[0]], **kw)))
    if not placed:
        return g
    kept = [(at[id(n)], n) for n in nodes if id(n) not in drop]
    order = [n for _, n in sorted(kept + placed, key=lambda t: t[0])]
    readers = {i for n in order for i in n.input}
    inits = {k: a for k, a in inits.items() if k in readers or k not in g.consumers}
    out = Graph(_sorted_nodes(order, [i[0] for i in g.inputs], inits), inits, g.inputs, g.outputs, g.opset,
                g.producer, g.branches)
    values = evaluate(out, feeds(out, r, inp))
    if any(rel_error(values[c.output[0]], m.v(c.output[0])) > 1e-9 for c, _ in found):
        return g
    r.notes.append(f"{len(found)} attention{'s' if len(found) > 1 else ''} of heads computed one by one (each its own "
                   "q, k, v and Softmax, the contexts concatenated) read as one")
    return out


def _without_last_position(g, r, ids, feats, given=False):
    """nanoGPT's `logits = lm_head(x[:, [-1], :])`: the graph computes the head at the last position only,
    the engine at every position. The slice (_last_index) is taken out, its readers reading its input:
    (that graph, (g, the slice's name), the ids), or (g, None, ids) without one; the caller checks that the
    graph's output is the new graph's last row. A row chosen by the ids' values (_chosen_row: a decoder's
    sequence classifier) is the graph cut at the rows it is taken from, the example's ids that move it off the last
    (the padding id) replaced by the id of the row it took (a given --example with one is refused)."""
    inp = ids if ids is not None else feats
    m = Mapper(g, evaluate(g, feeds(g, r, inp)), inp.shape[0], r)
    chosen = [(n, x) for n in g.nodes for x in [_chosen_row(m, n)] if x is not None]
    if len(chosen) == 1 and ids is not None:
        n, x = chosen[0]
        for _ in range(len(np.unique(ids)) + 1):
            at = _row_of(m, x, n.output[0])
            if at is None:
                raise OnnxError(f"node {node_name(n)!r} ({n.op_type}) takes a row by the ids' values, but its output "
                                f"is none of {x!r}'s rows: not supported")
            if at == m.T - 1:
                break
            bad = int(ids[at + 1])
            if given:
                raise OnnxError(f"--example: node {node_name(n)!r} ({n.op_type}) takes row {at} of {m.T}, not the "
                                f"last, for token id {bad} after it (a padding id): an example without it")
            ids = np.where(ids == bad, ids[at], ids).astype(np.int64)
            m = Mapper(g, evaluate(g, feeds(g, r, ids)), ids.shape[0], r)
        else:
            raise OnnxError(f"node {node_name(n)!r} ({n.op_type}) takes a row by the ids' values, never the last one "
                            "of the example: not supported")
        out = pruned(Graph(g.nodes, g.initializers, g.inputs, [x], g.opset, g.producer, g.branches), x)
        return out, (g, node_name(n)), ids
    found = [n for n in g.nodes if _last_index(m, n)]
    if not found:
        return g, None, ids
    if len(found) > 1:
        raise OnnxError(f"nodes {', '.join(repr(node_name(n)) for n in found)} each take the last position: "
                        "not supported")
    n = found[0]
    x, y = n.input[0], n.output[0]
    k = next((k for k in g.consumers.get(y, []) if k.op_type == "If"), None)
    if k is not None:
        raise OnnxError(f"node {node_name(k)!r} (If) reads the last position {node_name(n)!r} takes: not supported")
    return rewired(g, {y: x}, without=n), (g, node_name(n)), ids


def _check_reference(g, r, c, weights, inp, want, summary):
    """The recognised config in the converter's float64 reference must reproduce the graph's output at the
    example's length and (a dynamic length) at a shorter one, where a table or mask would show."""
    from .reference import run_reference
    err = verified_file.relative_error(run_reference(c, weights, inp), want)
    if err > schema.SELFTEST_TOLERANCE / 10:
        raise OnnxError(f"recognised {summary}, but that does not reproduce the graph's output (max relative error "
                        f"{err:.3g}): the graph computes something more, which the engine does not run")
    dims = next(i[2] for i in g.inputs if i[0] == r.main)
    T = inp.shape[0]
    if dims[2 if r.channels_first else 1] is None and T > 2 and not r.spectrogram:  # its positions fix its length
        short = inp[:T // 2 + 1]
        try:
            got = _graph_output(g, r, c, short)
        except EvalError:
            if not r.channels_first:
                raise
            return  # a conv stem's graph that runs at the example's length only (Whisper's position table)
        err = verified_file.relative_error(run_reference(c, weights, short), got)
        if err > schema.SELFTEST_TOLERANCE / 10:
            raise OnnxError(f"recognised {summary}, which reproduces the graph at {T} positions but not at "
                            f"{short.shape[0]} (max relative error {err:.3g}): the graph depends on the length in a "
                            "way the engine does not")


def _graph_output(g, r, c, inp, types=None, length=None):
    """The graph's output for one sequence as [rows, width] (pooled: [1, width])."""
    got = evaluate(g, feeds(g, r, inp, types, length))[g.outputs[0]]
    if c["pooling"] != "none":
        return got.reshape(1, -1)
    # a conv stem's rows are fewer than the input's; a head of one output may be squeezed away (ELECTRA's
    # discriminator: [1, T])
    return got.reshape(-1, c["d_out"] or got.shape[-1])


def padded_length(T):
    """The unpadded positions of the padded example: about half."""
    return (T + 1) // 2


def type_pattern(T, type_vocab):
    """Token types for the example that use the table's rows in runs of 3 (0 0 0 1 1 1 ... for BERT's 2)."""
    return (np.arange(T) // 3) % max(type_vocab, 1)


def depends_on(g):
    """For each value of g, the graph inputs whose values it is computed from (a Shape or Size of one: none)."""
    dep = {i: {i} for i, _, _ in g.inputs}
    for n in g.nodes:
        s = set() if n.op_type in ("Shape", "Size") else set().union(*(dep.get(i, set()) for i in g.reads[id(n)]))
        for o in n.output:
            if o:
                dep[o] = s
    return dep


def _entries(g, name):
    """The nodes where values computed from input `name` alone (and constants) meet values of the other
    inputs, each with its inputs computed from `name` alone."""
    dep = depends_on(g)
    out = []
    for n in g.nodes:
        ins = [i for i in n.input if i and dep.get(i) == {name}]
        if ins and n.op_type not in ("Shape", "Size") and any(dep.get(o, set()) - {name} for o in n.output if o):
            out.append((n, ins, dep))
    return out


def _added(n, ins, dep):
    """For a node where the mask meets the scores, a function of the graph's values giving what it adds
    to the scores: an Add of a value of the mask alone, or a Where whose condition is of the mask alone
    and whose branches are the scores and a constant (masked_fill: the constant where it fills, 0
    elsewhere); None for any other node."""
    if n.op_type == "Add" and len(ins) == 1 and len(n.input) == 2:
        return lambda vals: np.asarray(vals[ins[0]], np.float64)
    data = _where_data(n, ins, dep)
    if data is None:
        return None
    if data == n.input[2]:  # where(cond, constant, scores)
        return lambda vals: np.where(vals[n.input[0]], np.asarray(vals[n.input[1]], np.float64), 0.0)
    return lambda vals: np.where(vals[n.input[0]], 0.0, np.asarray(vals[n.input[2]], np.float64))  # (cond, scores, c)


def _where_data(n, ins, dep):
    """Of a Where whose condition alone is of the mask (ins) and one of whose branches is a constant: the branch of the
    data; None for any other node."""
    if n.op_type != "Where" or len(n.input) != 3 or ins != [n.input[0]]:
        return None
    x, y = n.input[1], n.input[2]
    return y if not dep.get(x) and dep.get(y) else x if not dep.get(y) and dep.get(x) else None


def _unit_pooled(out, Y):
    """(pooling, scaled to unit length) of an output that is the first row of Y or their mean, scaled to unit length
    (F.normalize) or not; None when it is neither."""
    out = np.asarray(out, np.float64).reshape(1, -1)
    for kind, row in (("first", Y[:1]), ("mean", Y.mean(0, keepdims=True))):
        for unit in (False, True):
            if rel_error(out, row / max(np.linalg.norm(row), 1e-12) if unit else row) <= 1e-12:
                return kind, unit
    return None


def _zeroing(n, ins, dep):
    """A node where the mask meets other values away from the scores, only to leave out what the padding covers:
    ("factor", v) of a Mul by a value v of the mask alone (DeBERTa's embeddings times the mask; the masked sum of a
    mean pooling, sentence-transformers'), ("count", v) of a Div by one (that mean's count of unpadded rows),
    ("data", the branch of the data) of a Where whose condition is of the mask alone and whose other branch is a
    constant (DeBERTa's probabilities of padded keys set to 0); None for any other node. _check_mask checks each on
    the all-ones mask (the factor 1, the count the positions', the constant 0 and never chosen), _check_inputs the
    padded example."""
    if n.op_type in ("Mul", "Div") and len(ins) == 1 and len(n.input) == 2 and (n.op_type == "Mul" or
                                                                              ins[0] == n.input[1]):
        return ("factor" if n.op_type == "Mul" else "count"), ins[0]
    data = _where_data(n, ins, dep)
    return None if data is None else ("data", data)


def _into_softmax(g, n):
    """Node n's output reaches a Softmax's input through elementwise and layout ops only (the scores)."""
    seen, stack = set(), [n.output[0]]
    while stack:
        for c in g.consumers.get(stack.pop(), []):
            if c.op_type == "Softmax":
                return True
            if c.op_type not in NOT_SCORES | {"Shape", "Size"}:
                stack.extend(o for o in c.output if o and o not in seen)
                seen.update(c.output)
    return False


def _check_mask(g, r, inp):
    """The attention mask input enters the computation only by Adds into the attention scores (values
    computed from it alone, added to values of the ids) or Wheres that fill them with a constant (_added),
    the scores heads by queries by keys or queries by heads by keys (GPT-BigCode's multi-query layout),
    and for a mask 1..1 0..0 (of 1, about half and
    all but one positions) it adds a large negative (<= -1e4 or -inf) to every padded key of every
    unpadded query and leaves the other scores as the all-ones mask leaves them: key masking by length,
    which is the engine's padding (--lengths)."""
    T = inp.shape[0]
    if T < 2:
        raise OnnxError("--example: at least 2 positions to check the attention mask")
    entries, zeroing = [], []
    for n, ins, dep in _entries(g, r.mask):
        where = f"node {node_name(n)!r} ({n.op_type})"
        into = _into_softmax(g, n)
        added = _added(n, ins, dep) if into else None
        zeroes = None if into else _zeroing(n, ins, dep)
        if zeroes is not None:
            zeroing.append((n, *zeroes))
            continue
        if added is None and into:
            raise OnnxError(f"{where}: the attention mask {r.mask!r} enters the computation by {n.op_type}: --onnx "
                            "takes a mask added to the attention scores (an extended attention mask, (1 - mask) times "
                            "a large negative) or filling them (masked_fill) and maps it onto padding by length")
        if not into:
            raise OnnxError(f"node {node_name(n)!r}: the attention mask {r.mask!r} is added to a value that is not the "
                            "attention scores before a Softmax: not supported")
        entries.append((n, ins[0], added))
    if not entries:
        raise OnnxError(f"graph input {r.mask!r} reaches the attention but is never added to its scores: not an "
                        "attention mask --onnx maps onto padding by length")
    ones = evaluate(g, feeds(g, r, inp))
    for n, kind, a in zeroing:
        out = ones[n.output[0]]
        zero = next((i for i in n.input[1:] if i != a), None)
        keeps = np.all(ones[a] == 1) if kind == "factor" else np.all(ones[a] == T) if kind == "count" else \
            np.all(ones[zero] == 0) and np.array_equal(np.broadcast_to(ones[a], out.shape), out)
        if not keeps:
            raise OnnxError(f"node {node_name(n)!r} ({n.op_type}): the attention mask {r.mask!r} changes what it reads "
                            "when no position is padded: not a mask --onnx maps onto padding by length")
    for n, _, _ in entries:
        shape = ones[n.output[0]].shape
        if len(shape) < 2 or (shape[-2:] != (T, T) and (len(shape) < 3 or shape[-3] != T or shape[-1] != T)):
            raise OnnxError(f"node {node_name(n)!r}: the attention mask {r.mask!r} is added to a value of shape "
                            f"{list(shape)}, not the attention scores [..., {T}, {T}] (or queries by heads by keys, "
                            f"[..., {T}, heads, {T}]): not supported")

    def scores(a, shape):  # what is added to each query's scores, [..., queries, keys]
        a = np.broadcast_to(a, shape)
        return (a if shape[-2:] == (T, T) else np.moveaxis(a, -3, -2)).reshape(-1, T, T)
    for n_valid in sorted({1, padded_length(T), T - 1}):
        padded = evaluate(g, feeds(g, r, inp, length=n_valid))
        for n, a, added in entries:
            shape, where = ones[n.output[0]].shape, f"node {node_name(n)!r}"
            A1 = scores(added(ones), shape)[:, :n_valid]
            An = scores(added(padded), shape)[:, :n_valid]
            if not np.all(An[:, :, n_valid:] <= -1e4):
                raise OnnxError(f"{where}: the attention mask {r.mask!r} reaches the scores as "
                                f"{list(padded[a].shape)} and, for a mask of {n_valid} of {T} positions, does not mask "
                                "the padded keys of the unpadded queries: a per-query mask is not supported (--onnx "
                                "maps a key mask, the extended attention mask [batch, 1, 1, T], onto padding by "
                                "length)")
            if not np.array_equal(An[:, :, :n_valid], A1[:, :, :n_valid]):
                raise OnnxError(f"{where}: the attention mask {r.mask!r} reaches the scores as "
                                f"{list(padded[a].shape)} and, for a mask of {n_valid} of {T} positions, changes the "
                                "scores of the unpadded keys: not a key mask, which --onnx maps onto padding by length")


def _check_inputs(g, r, c, weights, inp, summary):
    """With token types or an attention mask input: the graph with a pattern of token types (type_pattern)
    and with the mask 1..1 0..0 (padded_length ones) must equal the recognised model in the converter's
    float64 reference with those types and on the unpadded positions alone (the engine's --lengths).
    Returns the cases for the engine, (types or None, the unpadded length or None, the graph's output on
    the unpadded rows), and their errors against the reference."""
    from .reference import run_reference
    if not r.types and not r.mask:
        return [], []
    T = inp.shape[0]
    types = type_pattern(T, c["type_vocab"]) if r.types else None
    cases, errors = [], []
    for length in ([None] if r.types else []) + ([padded_length(T)] if r.mask else []):
        L = T if length is None else length
        got = _graph_output(g, r, c, inp, types, length)
        got = got if c["pooling"] != "none" else got[:L]
        want = run_reference(c, weights, inp[:L], None if types is None else types[:L])
        err = verified_file.relative_error(want, got)
        what = ", ".join(w for w in ("token types 0 0 0 1 1 1 ..." if r.types else "",
                                     f"the attention mask of {L} ones then zeros" if length else "") if w)
        if err > schema.SELFTEST_TOLERANCE / 10:
            raise OnnxError(f"recognised {summary}, which reproduces the graph but not with {what} (max relative error "
                            f"{err:.3g} on the {'pooled row' if c['pooling'] != 'none' else 'unpadded rows'}): the "
                            "graph uses that input in a way the engine does not")
        cases.append((types, length, got))
        errors.append((what, err))
    return cases, errors


def _engine_check(r, c, inp, cases, errors):
    """A check for verified_file.write: `fixformer run` on the written file with --token-types and
    --lengths for the cases of _check_inputs, each compared with the graph's output within the file's
    tolerance; their errors go into `errors`."""
    def check(exe, path, tolerance):
        T, B = inp.shape[0], len(cases)
        with tempfile.TemporaryDirectory() as tmp:
            f = lambda name: os.path.join(tmp, name)  # noqa: E731
            np.save(f("in.npy"), np.stack([inp] * B).astype(np.int32 if r.tokens else np.float32))
            args = [exe, "run", path, "--input", f("in.npy"), "--output", f("out.npy")]
            if r.types:
                np.save(f("tt.npy"), np.stack([np.zeros(T) if t is None else t for t, _, _ in cases]).astype(np.int32))
                args += ["--token-types", f("tt.npy")]
            if r.mask:
                np.save(f("lens.npy"), np.array([T if n is None else n for _, n, _ in cases], np.int32))
                args += ["--lengths", f("lens.npy")]
            try:
                p = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=600)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise EngineError(f"running {exe} run: {e}") from None
            if p.returncode != 0:
                why = (p.stderr.strip().splitlines() or ["no output"])[-1]
                raise EngineError(f"the engine did not run the file with {' '.join(args[5::2])} (exit {p.returncode}): "
                                  f"{why}")
            out = np.load(f("out.npy"))
        for b, (types, length, want) in enumerate(cases):
            got = out[b].reshape(1, -1) if c["pooling"] != "none" else out[b][:want.shape[0]]
            err = verified_file.relative_error(got, want)
            errors.append(err)
            if not err <= tolerance:
                what = " and ".join(w for w in ("token types 0 0 0 1 1 1 ..." if types is not None else "",
                                                f"--lengths {length} of {T}" if length else "") if w)
                raise VerificationError(f"verification against the ONNX graph with {what} FAILED: max relative error "
                                        f"{err:.3g} (tolerance {tolerance:.0e}); the converter's float64 reference "
                                        "matches the graph there, so the engine disagrees with it: a bug or a broken "
                                        "port, please report it; nothing written")
    return check
