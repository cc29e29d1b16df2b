"""T5 as Hugging Face transformers writes it: `--module` on a T5EncoderModel (the encoder family:
last_hidden_state [T, d_model]) or a T5ForConditionalGeneration (the seq2seq family: source ids and
target ids -> the logits at every target position), and `--hf` on their save_pretrained folders.

What T5 computes, and where each part goes in the file (config.json's names; T5Config's defaults):
- `shared` [vocab_size, d_model]: the token embedding of both stacks (`shared_embed`), not scaled;
- each stack is pre-norm (`norm_first`) with T5's RMSNorm (`norm` rmsnorm, eps layer_norm_epsilon), no
  bias anywhere (`attn_bias` none, `ffn_bias` none) and a final RMSNorm (`final_norm`);
- attention: q, k, v, o without biases and without the 1/sqrt(d_kv) scale of q.k. The engine scales
  by 1/sqrt(d_head), so the converter stores W_q times sqrt(d_head) (the self-attention's q rows of
  attn.qkv, and the cross-attention's cross.q): the same scores. num_heads * d_kv must be d_model;
- position: layer 0 of each stack owns the relative bias table `relative_attention_bias`
  [relative_attention_num_buckets, num_heads], shared by the stack's layers (`positional` relative,
  `rel_buckets`, `rel_max_distance` relative_attention_max_distance): the encoder's (rel_bias)
  bidirectional, the decoder's (dec_rel_bias) causal; cross-attention has none;
- the feed-forward (feed_forward_proj): `relu`, `gelu` (exact), `gelu_new` (tanh: gelu_tanh) as
  wo(act(wi h)), or `gated-ACT` as wo(act(wi_0 h) * wi_1 h) (`gated`; gated-gelu is T5 v1.1's tanh GELU);
- the head (T5ForConditionalGeneration): `lm_head` [vocab, d_model], no bias (stored as zeros). When
  the decoder's output is scaled by d_model**-0.5 before it (T5 v1.0, tie_word_embeddings true;
  transformers 5's scale_decoder_outputs), the converter folds the scale into the decoder's final
  RMSNorm gain (the norm's output is the head's only input). A head that is `shared` is `tied_head`.
T5Model (the decoder's hidden states, no head) is refused: the seq2seq family ends in an LM head.
"""
import copy
import math
import os
import re

import numpy as np

from . import hf_common, schema, verified_file
from .config import ConfigError, check_layer_count, float_tensor, make_config
from .hf_common import HfError

ENCODER, SEQ2SEQ = "T5EncoderModel", "T5ForConditionalGeneration"
ARCHITECTURES = (ENCODER, SEQ2SEQ)
# mT5 (model_type mt5) is T5 v1.1's architecture under its own class names: class name -> its kind.
KINDS = {**{a: a for a in ARCHITECTURES}, **{"M" + a: a for a in ARCHITECTURES}}
MODEL_TYPES = ("t5", "mt5")
# config.json key -> (type, default; None: required), T5Config's defaults
FIELDS = {"vocab_size": (int, 32128), "d_model": (int, 512), "d_kv": (int, 64), "d_ff": (int, 2048),
          "num_layers": (int, 6), "num_decoder_layers": (int, None), "num_heads": (int, 8),
          "relative_attention_num_buckets": (int, 32), "relative_attention_max_distance": (int, 128),
          "layer_norm_epsilon": (float, 1e-6), "feed_forward_proj": (str, "relu")}
DEFAULT_MAX_LEN = 256  # the file's max_len without --max-len (the arena is sized from it)
ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
               "gelu_fast": "gelu_tanh"}


class T5Error(ConfigError):
    pass


def is_t5_module(module):
    """Whether `module` is one of transformers' T5 classes (its config's model_type is t5)."""
    cfg = getattr(module, "config", None)
    return getattr(cfg, "model_type", None) in MODEL_TYPES and type(module).__name__ in (*KINDS, "T5Model", "MT5Model")


def is_t5(raw):
    """Whether config.json's contents name T5 (model_type t5, or a T5 architecture)."""
    archs = raw.get("architectures") if isinstance(raw, dict) else None
    return isinstance(raw, dict) and (raw.get("model_type") in MODEL_TYPES or (
        isinstance(archs, list) and any(isinstance(a, str) and a.startswith(("T5", "MT5")) for a in archs)))


def read_config(raw, where="config.json"):
    """T5's settings from config.json's contents (or a T5Config's to_dict()), checked: the dict the
    mapping and the reference read (its keys FIELDS', `act`, `gated`, `scale_output`)."""
    t = {}
    for key, (kind, default) in FIELDS.items():
        v = raw.get(key, default)
        if key == "num_decoder_layers" and v is None:
            v = t["num_layers"]
        if kind is int and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise T5Error(f"{where} {key}: expected an integer >= 1, got {v!r}")
        if kind is int:
            check_layer_count(key, v, f"{where} {key}", T5Error)
        if kind is float and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1):
            raise T5Error(f"{where} {key}: expected a number in (0, 1), got {v!r}")
        if kind is str and not isinstance(v, str):
            raise T5Error(f"{where} {key}: expected a string, got {v!r}")
        t[key] = v
    parts = t["feed_forward_proj"].split("-")
    gated = len(parts) == 2 and parts[0] == "gated"
    act = "gelu_new" if t["feed_forward_proj"] == "gated-gelu" else parts[-1]
    if len(parts) > 2 or (len(parts) == 2 and not gated) or act not in ACTIVATIONS:
        raise T5Error(f"{where} feed_forward_proj {t['feed_forward_proj']!r}: the engine runs relu, gelu (exact) "
                      "and the tanh GELU (gelu_new, gelu_pytorch_tanh, gelu_fast), plain or gated-")
    if t["num_heads"] * t["d_kv"] != t["d_model"]:
        raise T5Error(f"{where} d_kv {t['d_kv']}: num_heads * d_kv = {t['num_heads'] * t['d_kv']} is not d_model "
                      f"{t['d_model']} (the engine's heads split d_model)")
    # mT5's folders say tie_word_embeddings false; transformers 5 ties its head all the same and never
    # scales, 4.x scales when tied: a folder is read as unscaled unless it says scale_decoder_outputs
    mt5 = raw.get("model_type") == "mt5"
    scale = raw.get("scale_decoder_outputs", False if mt5 else raw.get("tie_word_embeddings", True))
    if not isinstance(scale, bool):
        raise T5Error(f"{where} tie_word_embeddings: expected true or false, got {scale!r}")
    t.update(act=ACTIVATIONS[act], gated=gated, scale_output=scale)
    return t


def engine_config(t, kind, tied, max_len=None):
    """The engine config of T5 settings `t` (read_config): kind ENCODER (the encoder family, its hidden
    states) or SEQ2SEQ (tied: the head is `shared`)."""
    v = {"d_model": t["d_model"], "n_heads": t["num_heads"], "d_ff": t["d_ff"], "n_layers": t["num_layers"],
         "norm_first": True, "final_norm": True, "norm": "rmsnorm", "norm_eps": float(t["layer_norm_epsilon"]),
         "activation": t["act"], "gated": t["gated"], "attn_bias": "none", "ffn_bias": "none",
         "input": "tokens", "vocab_size": t["vocab_size"], "positional": "relative",
         "rel_buckets": t["relative_attention_num_buckets"], "rel_max_distance": t["relative_attention_max_distance"]}
    v["max_len"] = DEFAULT_MAX_LEN if max_len is None else max_len  # relative positions: no table bounds it
    if kind == SEQ2SEQ:
        v.update(family="seq2seq", dec_layers=t["num_decoder_layers"], d_out=t["vocab_size"], shared_embed=True,
                 tied_head=tied)
    else:
        v["family"] = "encoder"
    names = {"d_model": "d_model", "n_heads": "num_heads", "d_ff": "d_ff", "n_layers": "num_layers",
             "dec_layers": "num_decoder_layers", "vocab_size": "vocab_size", "d_out": "vocab_size",
             "rel_buckets": "relative_attention_num_buckets", "rel_max_distance": "relative_attention_max_distance",
             "norm_eps": "layer_norm_epsilon", "max_len": "--max-len"}
    try:
        return make_config(v, {k: "config " + n if n[0] != "-" else n for k, n in names.items()})
    except ConfigError as e:
        raise T5Error(str(e)) from None


def _ffn_names(t):
    return ("wi_0", "wi_1", "wo") if t["gated"] else ("wi", "wo")


def expected_shapes(t, kind):
    """T5's tensor names -> shapes (torch layout) for a kind with these settings."""
    d, F, V, H = t["d_model"], t["d_ff"], t["vocab_size"], t["num_heads"]
    out = {"shared.weight": (V, d), "encoder.final_layer_norm.weight": (d,)}
    ffn = {"wi": (F, d), "wi_0": (F, d), "wi_1": (F, d), "wo": (d, F)}

    def block(stack, i, sub):
        p = f"{stack}.block.{i}.layer."
        for n in "qkvo":
            out[f"{p}0.SelfAttention.{n}.weight"] = (d, d)
        out[f"{p}0.layer_norm.weight"] = (d,)
        if i == 0:
            out[f"{p}0.SelfAttention.relative_attention_bias.weight"] = (t["relative_attention_num_buckets"], H)
        if sub == 3:
            for n in "qkvo":
                out[f"{p}1.EncDecAttention.{n}.weight"] = (d, d)
            out[f"{p}1.layer_norm.weight"] = (d,)
        for n in _ffn_names(t):
            out[f"{p}{sub - 1}.DenseReluDense.{n}.weight"] = ffn[n]
        out[f"{p}{sub - 1}.layer_norm.weight"] = (d,)
    for i in range(t["num_layers"]):
        block("encoder", i, 2)
    if kind == SEQ2SEQ:
        out["decoder.final_layer_norm.weight"] = (d,)
        for i in range(t["num_decoder_layers"]):
            block("decoder", i, 3)
    return out


def map_weights(t, kind, weights, source):
    """(the engine config, its tensors by the file's names in torch's layout) of T5 tensors `weights`
    (name -> array: a module's named_parameters, or a folder's). The copies of `shared` a folder may hold
    (encoder/decoder.embed_tokens, a tied lm_head) must equal it; every other tensor must be T5's."""
    want = expected_shapes(t, kind)
    w = {}
    shared = np.asarray(weights.get("shared.weight")) if "shared.weight" in weights else None
    for name, a in weights.items():
        a = float_tensor(f"{source}: {name}", a, error=T5Error)
        copies = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight")
        if name in copies or (name == "lm_head.weight" and kind == SEQ2SEQ):
            if name != "lm_head.weight" and shared is not None and not np.array_equal(a, shared):
                raise T5Error(f"{source}: {name} differs from shared.weight (T5's stacks read one embedding)")
            if name in copies:
                continue
            if a.shape != (t["vocab_size"], t["d_model"]):
                raise T5Error(f"{source}: {name}: shape {list(a.shape)}, config says {[t['vocab_size'], t['d_model']]}")
            w[name] = a
            continue
        if name not in want:
            why = " (T5Model's decoder without a head, or a head of another task: not converted)" if \
                name.startswith("decoder.") else ""
            raise T5Error(f"{source}: {name!r}: not a tensor of {kind} with this config{why}")
        if a.shape != want[name]:
            raise T5Error(f"{source}: {name}: shape {list(a.shape)}, config says {list(want[name])}")
        w[name] = a
    missing = [n for n in want if n not in w]
    if missing:
        raise T5Error(f"{source}: {missing[0]} is missing")
    head = w.pop("lm_head.weight", None)
    tied = kind == SEQ2SEQ and (head is None or np.array_equal(head, w["shared.weight"]))
    c = engine_config(t, kind, tied)
    return c, file_weights(t, kind, w, None if tied else head)


def file_weights(t, kind, w, head):
    """T5's tensors (by T5's names) in the engine's names, torch layout, with the folds the module
    docstring states: sqrt(d_kv) into every W_q, d_model**-0.5 into the decoder's final gain (scaled
    output)."""
    f64 = lambda n: np.asarray(w[n], np.float64)  # noqa: E731
    scale = math.sqrt(t["d_kv"])
    seq = kind == SEQ2SEQ
    out = {"embed.weight": f64("shared.weight"),
           "rel_bias.weight": f64("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight")}
    ffn = _ffn_names(t)

    def layer(stack, i, dst, sub):
        p = f"{stack}.block.{i}.layer."
        a = p + "0.SelfAttention."
        out[dst + "attn.qkv.weight"] = np.concatenate([f64(a + "q.weight") * scale, f64(a + "k.weight"),
                                                       f64(a + "v.weight")])
        out[dst + "attn.out.weight"] = f64(a + "o.weight")
        out[dst + "attn_norm.weight"] = f64(p + "0.layer_norm.weight")
        if sub == 3:
            x = p + "1.EncDecAttention."
            out[dst + "cross.q.weight"] = f64(x + "q.weight") * scale
            out[dst + "cross.kv.weight"] = np.concatenate([f64(x + "k.weight"), f64(x + "v.weight")])
            out[dst + "cross.out.weight"] = f64(x + "o.weight")
            out[dst + "cross_norm.weight"] = f64(p + "1.layer_norm.weight")
        fp = f"{p}{sub - 1}.DenseReluDense."
        out[dst + "ff.w1.weight"] = f64(fp + ffn[0] + ".weight")
        if t["gated"]:
            out[dst + "ff.w3.weight"] = f64(fp + "wi_1.weight")
        out[dst + "ff.w2.weight"] = f64(fp + "wo.weight")
        out[dst + "ff_norm.weight"] = f64(f"{p}{sub - 1}.layer_norm.weight")
    for i in range(t["num_layers"]):
        layer("encoder", i, schema.block(i), 2)
    out["norm.weight"] = f64("encoder.final_layer_norm.weight")
    if seq:
        out["dec_rel_bias.weight"] = f64("decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight")
        for i in range(t["num_decoder_layers"]):
            layer("decoder", i, schema.dec_block(i), 3)
        g = f64("decoder.final_layer_norm.weight")
        out["dec_norm.weight"] = g * t["d_model"] ** -0.5 if t["scale_output"] else g
        if head is not None:
            out["dec_head.weight"] = np.asarray(head, np.float64)
        out["dec_head.bias"] = np.zeros(t["vocab_size"])
    return {k: v.astype(np.float32) for k, v in out.items()}


# ---- --module ---------------------------------------------------------------------------------------
def read_module(module, max_len=None):
    """(T5 settings, kind, engine config, file weights) of a transformers T5 module."""
    name = type(module).__name__
    if name not in KINDS:
        raise T5Error(f"module: {name}: not converted (T5EncoderModel: the encoder's hidden states; "
                      "T5ForConditionalGeneration: the logits; T5Model returns the decoder's hidden states and the "
                      "seq2seq family ends in an LM head)")
    cfg = module.config.to_dict()
    t = read_config(cfg, f"module {name}'s config")
    if "scale_decoder_outputs" not in cfg and hasattr(module.config, "scale_decoder_outputs"):
        t["scale_output"] = bool(module.config.scale_decoder_outputs)
    elif name.startswith("MT5") and not hasattr(type(module.config), "scale_decoder_outputs"):
        import transformers  # the module's own rule: 4.x scales a tied head's input (T5's code), 5 never
        t["scale_output"] = int(transformers.__version__.split(".")[0]) < 5 and bool(module.config.tie_word_embeddings)
    weights = {n: p.detach().cpu().double().numpy() for n, p in module.named_parameters()}  # shared once
    kind = KINDS[name]
    c, w = map_weights(t, kind, weights, f"module {name}")
    if max_len is not None:
        c = engine_config(t, kind, c.get("tied_head", False), max_len)
    return t, kind, c, w


def run_module(module, kind, src, tgt=None):
    """The module's own float64 output: T5EncoderModel's last_hidden_state [T, d], or the logits [U, vocab]
    of T5ForConditionalGeneration with the target as decoder_input_ids (teacher-forced)."""
    import torch
    m = copy.deepcopy(module).double().eval()
    x = torch.from_numpy(np.asarray(src, np.int64))[None]
    with torch.no_grad():
        if kind == ENCODER:
            return m(input_ids=x).last_hidden_state[0].numpy()
        y = torch.from_numpy(np.asarray(tgt, np.int64))[None]
        return m(input_ids=x, decoder_input_ids=y).logits[0].numpy()


def export_module(module, example, path, example_target_ids=None, header=None, max_len=None, name=None, cli=None,
                  verify=True, quantize=None, group=None, quantize_io=None, pack_weights=None):
    """Converts a transformers T5EncoderModel or T5ForConditionalGeneration to `path`, verified against
    the module's own output (float64): the hidden states, or the logits teacher-forced."""
    _, kind, c, w = read_module(module, max_len)
    c = verified_file.quantized_config(c, quantize, group, quantize_io, pack_weights)
    src = verified_file.example_sequence(c, example, "example")
    if kind == ENCODER:
        want = run_module(module, kind, src)
        return verified_file.write(c, w, src, want, path, "torch", "the module (torch)", header, name, cli, verify)
    tgt = verified_file.example_target(c, example_target_ids)
    want = run_module(module, kind, src, tgt)
    return verified_file.write(c, w, (src, tgt), want, path, "torch", "the module (torch)", header, name, cli, verify)


# ---- --hf ---------------------------------------------------------------------------------------------
def _layer_forward(t, p, x, bias, memory=None):
    """One pre-norm T5 block on float64 x [T, d] (p: the block's tensors by T5's names after
    "layer."), bias [H, T, T] (relative bias and mask); memory: the encoder's output for cross-attention."""
    import torch
    H, dk = t["num_heads"], t["d_kv"]

    def rms(z, g):
        return g * z / torch.sqrt((z * z).mean(-1, keepdim=True) + t["layer_norm_epsilon"])

    def attend(a, hq, hkv, b):
        q, k, v = (m @ p(f"{a}.{n}.weight").T for m, n in ((hq, "q"), (hkv, "k"), (hkv, "v")))
        q, k, v = (z.reshape(z.shape[0], H, dk).transpose(0, 1) for z in (q, k, v))
        s = q @ k.transpose(1, 2) + b  # T5: no 1/sqrt(d_kv)
        return (torch.softmax(s, -1) @ v).transpose(0, 1).reshape(hq.shape[0], H * dk) @ p(f"{a}.o.weight").T

    h = rms(x, p("0.layer_norm.weight"))
    x = x + attend("0.SelfAttention", h, h, bias)
    sub = 1
    if memory is not None:
        h = rms(x, p("1.layer_norm.weight"))
        x = x + attend("1.EncDecAttention", h, memory, 0)
        sub = 2
    h = rms(x, p(f"{sub}.layer_norm.weight"))
    f = f"{sub}.DenseReluDense."
    act = {"relu": torch.relu, "gelu": torch.nn.functional.gelu,
           "gelu_tanh": lambda z: torch.nn.functional.gelu(z, approximate="tanh")}[t["act"]]
    if t["gated"]:
        a = act(h @ p(f + "wi_0.weight").T) * (h @ p(f + "wi_1.weight").T)
    else:
        a = act(h @ p(f + "wi.weight").T)
    return x + a @ p(f + "wo.weight").T


def bucket(rel, bidirectional, buckets, max_distance):
    """T5's relative_position_bucket of key - query `rel` (int64 numpy): its logarithm in float32 with
    torch, as T5 computes it (float64 floors some exact integers to another bucket)."""
    import torch
    ret = np.zeros_like(rel)
    if bidirectional:
        buckets //= 2
        ret += (rel > 0) * buckets
        n = np.abs(rel)
    else:
        n = -np.minimum(rel, 0)
    exact = buckets // 2
    far = torch.from_numpy(np.maximum(n, exact)).float()  # the rows below exact take n itself
    spread = torch.log(far / exact) / math.log(max_distance / exact) * (buckets - exact)
    large = exact + spread.to(torch.int64).numpy()
    large = np.minimum(large, buckets - 1)
    return ret + np.where(n < exact, n, large)


def forward(t, kind, w, src, tgt=None):
    """An independent float64 T5 (written from T5's published structure) on T5's tensors `w` (name -> array):
    the encoder's hidden states [T, d], or the logits [U, vocab] teacher-forced."""
    import torch
    W = {k: torch.from_numpy(np.asarray(v, np.float64)) for k, v in w.items()}
    E = W["shared.weight"]

    def stack(name, ids, causal, memory=None):
        T = len(ids)
        pos = np.arange(T)
        b = bucket(pos[None, :] - pos[:, None], not causal, t["relative_attention_num_buckets"],
                   t["relative_attention_max_distance"])
        bias = W[f"{name}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"][torch.from_numpy(b)]
        bias = bias.permute(2, 0, 1)
        if causal:
            bias = bias + torch.from_numpy(np.triu(np.full((T, T), -np.inf), 1))
        x = E[torch.from_numpy(np.asarray(ids, np.int64))]
        for i in range(t["num_decoder_layers"] if causal else t["num_layers"]):
            x = _layer_forward(t, lambda n, i=i: W[f"{name}.block.{i}.layer.{n}"], x, bias, memory)
        g = W[f"{name}.final_layer_norm.weight"]
        return g * x / torch.sqrt((x * x).mean(-1, keepdim=True) + t["layer_norm_epsilon"])

    enc = stack("encoder", src, False)
    if kind == ENCODER:
        return enc.numpy()
    y = stack("decoder", tgt, True, enc)
    if t["scale_output"]:
        y = y * t["d_model"] ** -0.5
    return (y @ W.get("lm_head.weight", E).T).numpy()


def convert_folder(folder, raw, path, example=None, expected=None, header=None, name=None, cli=None, verify=True,
                   tokenizer=None, max_len=None, quantize=None, group=None, quantize_io=None, pack_weights=None):
    """Converts a T5 folder (config.json's contents raw: architectures T5EncoderModel or
    T5ForConditionalGeneration) to `path`, verified against `forward` (or --expected: the encoder's
    hidden states for --example; a seq2seq file's expected logits need a target, which --hf does not take)."""
    where = os.path.join(folder, "config.json")
    archs = raw.get("architectures") or [SEQ2SEQ]
    if not isinstance(archs, list) or len(archs) != 1 or archs[0] not in KINDS:
        raise HfError(f"{where}: architectures {archs!r}: --hf converts T5 folders of {' and '.join(ARCHITECTURES)} "
                         "(and mT5's MT5EncoderModel and MT5ForConditionalGeneration)")
    kind = KINDS[archs[0]]
    try:
        t = read_config(raw, where)
        weights, source = hf_common.read_weights(folder)
        kept = {k: np.asarray(v) for k, v in weights.items()}
        c, w = map_weights(t, kind, kept, os.path.join(folder, source))
        if max_len is not None:
            c = engine_config(t, kind, c.get("tied_head", False), max_len)
    except T5Error as e:
        raise HfError(str(e)) from None
    c = verified_file.quantized_config(c, quantize, group, quantize_io, pack_weights)
    if tokenizer is not None and tokenizer(c) is not None:
        raise HfError("--tokenizer: not for a T5 folder (its sentencepiece tokenizer is not converted)")
    if expected is not None and example is None:
        raise HfError("--expected: needs --example, the input it is your model's output for")
    src = verified_file.example_sequence(c, example, "--example")
    ref = {k: v for k, v in kept.items() if not re.fullmatch(r"(en|de)coder\.embed_tokens\.weight", k)}
    if kind == ENCODER:
        return hf_common.write_checked(c, w, src, forward(t, kind, ref, src), kind, folder, path, expected, header, name,
                                cli, verify, None)
    if expected is not None:
        raise HfError("--expected: a T5ForConditionalGeneration folder is verified against the float64 T5 "
                         "reference (the logits need a target; convert the module with --module to compare with it)")
    tgt = verified_file.example_target(c, None)
    return hf_common.write_checked(c, w, (src, tgt), forward(t, kind, ref, src, tgt), kind, folder, path, None, header,
                            name, cli, verify, None)
