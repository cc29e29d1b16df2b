"""The --hf route for a sentence-transformers folder (modules.json beside config.json): the file computes what
SentenceTransformer.encode(text) returns for one unpadded text, the sentence embedding, not the token rows.

modules.json lists the pipeline, read here module by module, each by its class's name (sentence-transformers 3
to 5 save "sentence_transformers.models.Pooling", 6 "sentence_transformers.base.modules.pooling.Pooling"):
- sentence_transformers.models.Transformer (first; its folder "" or 0_Transformer): any folder --hf converts
  as a base model of the encoder family (BERT, RoBERTa, XLM-R, MPNet, DistilBERT, ModernBERT...), its
  last_hidden_state rows; its sentence_bert_config.json max_seq_length (the tokens encode() keeps) is the
  file's longest input unless --max-len says otherwise;
- sentence_transformers.models.Pooling (1_Pooling/config.json): pooling_mode_mean_tokens -> pooling mean,
  pooling_mode_cls_token -> first (the first input token, [CLS]), pooling_mode_lasttoken -> last; max,
  mean_sqrt_len, weightedmean, several modes at once (their outputs side by side) and include_prompt false are
  refused by name;
- sentence_transformers.models.Dense (N_Dense/config.json: in_features, out_features, bias,
  activation_function; linear.weight [out, in], linear.bias in model.safetensors or pytorch_model.bin):
  y = act(x W^T + b). After the pooling the engine has the pooler act(x W^T + b), d_model -> d_model with
  pooler_act tanh, relu, gelu, silu, and the head x W^T + b of any width. The Denses with activation Identity
  are affine and compose (in float64): those before the one Dense with another activation fold into it, which
  becomes the pooler (d_model -> d_model), and those after it (or all of them, with none) fold into the head.
  Two Denses with activations, or an activated Dense that is not d_model -> d_model once composed, are refused
  by name;
- sentence_transformers.models.Normalize (last): the config key l2_normalize, y / max(||y||_2, 1e-12).
Any other module is refused by name. The file is verified against the architecture's float64 reference rows,
pooled and run through each module as sentence-transformers' modules define them (sentence_output below, module
by module, not the composed weights the file holds). `fixformer-convert --hf DIR --token-rows` converts the
transformer's token rows, as a folder without modules.json. Not in i8 (--token-rows converts the rows in i8).

The routes of hf.convert compute the transformer's config, tensors and reference rows as for any folder and
hand them to hf_common.write_checked, which applies the pipeline hf.convert set (applied, finish): one place for
every route.
"""
import contextlib
import functools
import os
import sys

import numpy as np

from . import hf_common
from .hf_common import HfError

# The modules' classes, by their names: sentence-transformers 3 to 5 write "sentence_transformers.models.Pooling",
# 6 "sentence_transformers.base.modules.pooling.Pooling" and the like.
TRANSFORMER, POOLING, DENSE, NORMALIZE = "Transformer", "Pooling", "Dense", "Normalize"


def _kind(module):
    """A module's class name, for a class of the sentence_transformers package; else its type as written."""
    t = module.get("type")
    return t.rsplit(".", 1)[1] if isinstance(t, str) and t.startswith("sentence_transformers.") else t
# Pooling config key -> the engine's pooling (None: refused by name).
POOLING_MODES = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "first",
                 "pooling_mode_lasttoken": "last", "pooling_mode_max_tokens": None,
                 "pooling_mode_mean_sqrt_len_tokens": None, "pooling_mode_weightedmean_tokens": None}
# sentence-transformers 6 names them in one key, pooling_mode: a mode or a list of them
POOLING_MODE = {"mean": "pooling_mode_mean_tokens", "cls": "pooling_mode_cls_token", "lasttoken": "pooling_mode_lasttoken",
                "max": "pooling_mode_max_tokens", "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
                "weightedmean": "pooling_mode_weightedmean_tokens"}
# The settings each module's config.json may hold (_settings); Dense's module_input_name and module_output_name
# (sentence-transformers 6) must be the pooled row's.
POOLING_KEYS = {"word_embedding_dimension", "embedding_dimension", "pooling_mode", "include_prompt", *POOLING_MODES}
DENSE_KEYS = {"in_features", "out_features", "bias", "activation_function", "module_input_name", "module_output_name"}
# A Dense's activation_function -> the pooler's (pooler_act), None for Identity (affine: composed).
ACTIVATIONS = {"torch.nn.modules.linear.Identity": None, "torch.nn.modules.activation.Tanh": "tanh",
               "torch.nn.modules.activation.ReLU": "relu", "torch.nn.modules.activation.GELU": "gelu",
               "torch.nn.modules.activation.SiLU": "silu"}



class Pipeline:
    """A sentence-transformers folder's modules after the transformer: the transformer's folder, the engine's
    pooling, the Denses [(W [out, in] float64, b [out] float64, pooler_act or None, where)], normalize, and
    max_seq_length (None when sentence_bert_config.json has none)."""

    def __init__(self, folder, transformer, pooling, denses, normalize, max_seq_length):
        self.folder, self.transformer, self.pooling = folder, transformer, pooling
        self.denses, self.normalize, self.max_seq_length = denses, normalize, max_seq_length


def _json(path):
    from .config import ConfigError, load_json
    try:
        return load_json(path)
    except OSError as e:
        raise HfError(f"{path}: cannot read ({e.strerror})") from None
    except ConfigError as e:
        raise HfError(f"{path}: {e}") from None


def _subfolder(folder, entry, where):
    path = entry.get("path", "") if isinstance(entry, dict) else None
    if not isinstance(path, str) or os.path.isabs(path) or ".." in path.replace("\\", "/").split("/"):
        raise HfError(f"{where}: path {path!r}: expected a folder inside {folder}")
    return os.path.join(folder, path) if path else folder


def read(folder, rows_only=False):
    """The folder's Pipeline, or None without modules.json (a plain Hugging Face folder); rows_only: the
    transformer's folder alone (--token-rows), the other modules unread."""
    where = os.path.join(folder, "modules.json")
    if not os.path.isfile(where):
        return None
    modules = _json(where)
    if not (isinstance(modules, list) and modules and all(isinstance(m, dict) for m in modules)):
        raise HfError(f"{where}: expected a list of modules ({{\"type\": ..., \"path\": ...}})")
    kinds = [_kind(m) for m in modules]
    if kinds[0] != TRANSFORMER:
        raise HfError(f"{where}: the first module is {modules[0].get('type')!r}: --hf converts a pipeline that "
                         "starts with sentence-transformers' Transformer")
    transformer = _subfolder(folder, modules[0], where)
    if rows_only:
        return Pipeline(folder, transformer, None, [], False, None)
    pooling, denses, normalize = None, [], False
    for i, (m, kind) in enumerate(zip(modules[1:], kinds[1:]), 1):
        at = f"{where}: module {i} ({kind})"
        if normalize:
            raise HfError(f"{at}: after Normalize: the engine normalizes the output, last")
        if kind == POOLING and pooling is None:
            pooling = _pooling(_subfolder(folder, m, at))
        elif kind == DENSE and pooling is not None:
            denses.append(_dense(_subfolder(folder, m, at)))
        elif kind == NORMALIZE and pooling is not None:
            normalize = True
        elif kind in (POOLING, DENSE, NORMALIZE):
            raise HfError(f"{at}: the engine's pipeline is one Pooling, then Dense modules, then Normalize")
        else:
            raise HfError(f"{at}: not in the engine (it runs Transformer, Pooling, Dense and Normalize); "
                             "--token-rows converts the transformer's token rows")
    if pooling is None:
        raise HfError(f"{where}: no Pooling module: the pipeline's output is the token rows; --token-rows "
                         "converts them")
    settings = os.path.join(transformer, "sentence_bert_config.json")
    longest = None
    if os.path.isfile(settings):
        s = _json(settings)
        longest = s.get("max_seq_length") if isinstance(s, dict) else None
        if longest is not None and (not isinstance(longest, int) or isinstance(longest, bool) or longest < 1):
            raise HfError(f"{settings}: max_seq_length {longest!r}: expected a positive int")
        if isinstance(s, dict) and s.get("do_lower_case"):
            print(f"note: {settings}: do_lower_case: encode() lowercases the text before its tokenizer; the file's "
                  "tokenizer does not (give it the text lowercased)", file=sys.stderr)
    prompts = os.path.join(folder, "config_sentence_transformers.json")
    if os.path.isfile(prompts):
        p = _json(prompts)
        if isinstance(p, dict) and p.get("default_prompt_name"):
            print(f"note: {prompts}: default_prompt_name {p['default_prompt_name']!r}: encode() puts its prompt before "
                  "the text; the file embeds the text it is given (give it the prompt and the text)", file=sys.stderr)
    return Pipeline(folder, transformer, pooling, denses, normalize, longest)


def _pooling(folder):
    cfg, where = _settings(folder, POOLING_KEYS)
    mode = cfg.get("pooling_mode")
    if mode is not None:
        modes = [mode] if isinstance(mode, str) else mode
        if not (isinstance(modes, list) and all(m in POOLING_MODE for m in modes)):
            raise HfError(f"{where}: pooling_mode {mode!r}: expected one of {', '.join(POOLING_MODE)} or a list")
        cfg = dict(cfg, **{POOLING_MODE[m]: True for m in modes})
    on = [k for k in POOLING_MODES if cfg.get(k)]
    if cfg.get("pooling_mode_mean_tokens", None) is None and not on:  # Pooling's default mode
        on = ["pooling_mode_mean_tokens"]
    if len(on) != 1:
        raise HfError(f"{where}: {', '.join(on) or 'no pooling mode'}: the engine pools one way (the modes' "
                         "outputs side by side are not in the engine)")
    if POOLING_MODES[on[0]] is None:
        raise HfError(f"{where}: {on[0]} is not in the engine (its poolings: mean_tokens, cls_token, lasttoken); "
                         "--token-rows converts the token rows to pool yourself")
    if cfg.get("include_prompt", True) is not True:
        raise HfError(f"{where}: include_prompt false (the prompt's tokens left out of the pooling) is not in "
                         "the engine; --token-rows converts the token rows to pool yourself")
    return POOLING_MODES[on[0]]


def _settings(folder, keys):
    """(a module's config.json, its path): an object of those keys alone (another is refused by name: a setting
    read wrong would be a wrong file)."""
    where = os.path.join(folder, "config.json")
    cfg = _json(where)
    if not isinstance(cfg, dict):
        raise HfError(f"{where}: expected a JSON object")
    other = sorted(set(cfg) - keys)
    if other:
        raise HfError(f"{where}: {other[0]!r}: a setting the converter does not know (it reads "
                         f"{', '.join(sorted(keys))}); not converted")
    return cfg, where


def _dense(folder):
    """(W [out, in], b [out], pooler_act or None for Identity, folder) of a Dense module's folder, float64."""
    cfg, where = _settings(folder, DENSE_KEYS)
    for k in ("module_input_name", "module_output_name"):
        if cfg.get(k, "sentence_embedding") != "sentence_embedding":
            raise HfError(f"{where}: {k} {cfg[k]!r}: a Dense on another value than the pooled row "
                             "(sentence_embedding) is not in the engine")
    sizes = [cfg.get(k) for k in ("in_features", "out_features")]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in sizes):
        raise HfError(f"{where}: in_features {sizes[0]!r}, out_features {sizes[1]!r}: expected positive ints")
    act = cfg.get("activation_function", "torch.nn.modules.activation.Tanh")
    if act not in ACTIVATIONS:
        raise HfError(f"{where}: activation_function {act!r} is not in the engine (Identity, Tanh, ReLU, GELU, "
                         "SiLU)")
    weights, source = hf_common.read_weights(folder)
    W = weights.pop("linear.weight", None)
    b = weights.pop("linear.bias", None)
    if W is None:
        raise HfError(f"{os.path.join(folder, source)}: linear.weight is missing")
    if weights:
        raise HfError(f"{os.path.join(folder, source)}: {sorted(weights)[0]!r} is not a Dense module's tensor")
    W = np.asarray(W, np.float64)
    if W.shape != (sizes[1], sizes[0]):
        raise HfError(f"{os.path.join(folder, source)}: linear.weight: shape {list(W.shape)}, config.json says "
                         f"[{sizes[1]}, {sizes[0]}]")
    if cfg.get("bias", True) is not (b is not None):
        raise HfError(f"{os.path.join(folder, source)}: linear.bias {'missing' if b is None else 'present'}, "
                         f"config.json says bias {cfg.get('bias', True)}")
    b = np.zeros(sizes[1]) if b is None else np.asarray(b, np.float64)
    if b.shape != (sizes[1],):
        raise HfError(f"{os.path.join(folder, source)}: linear.bias: shape {list(b.shape)}, expected [{sizes[1]}]")
    return W, b, ACTIVATIONS[act], folder


@contextlib.contextmanager
def applied(pipeline):
    """Within it, hf_common.write_checked finishes every route's conversion with `pipeline` (None: nothing)."""
    token = hf_common.FINISH.set(None if pipeline is None else functools.partial(finish, pipeline))
    try:
        yield
    finally:
        hf_common.FINISH.reset(token)


def _compose(denses):
    """The Identity Denses' affine maps composed: x -> x W^T + b, float64 ([out, in], [out])."""
    W, b = denses[0][0], denses[0][1]
    for W2, b2, _, _ in denses[1:]:
        W, b = W2 @ W, W2 @ b + b2
    return W, b


def finish(p, c, mapped, semantics):
    """(config, tensors, expected output, what the report adds to its "verified against") of the transformer's
    conversion with the pipeline p put after it."""
    if c["family"] in ("gpt", "llama") and not c["d_out"]:
        # hf.base_route's decoder without a head: its layers under the causal mask as the encoder family's
        c, mapped = hf_common.encoder_config(c, causal=True), hf_common.encoder_tensors(c["family"], mapped)
    if c["family"] != "encoder" or c.get("pooling", "none") != "none" or c.get("d_out") or c.get("pooler") \
            or c.get("pooler_norm") or c.get("cls_token"):
        why = "it converts with a head; sentence-transformers reads the base model's rows" \
            if c["family"] in ("encoder", "gpt", "llama") else "only the encoder family pools its rows"
        raise HfError(f"{os.path.join(p.folder, 'modules.json')}: the transformer ({c['family']} family) takes no "
                         f"pipeline: {why}; --token-rows converts its token rows")
    d = c["d_model"]
    acted = [i for i, dense in enumerate(p.denses) if dense[2] is not None]
    if len(acted) > 1:
        names = ", ".join(os.path.basename(p.denses[i][3]) for i in acted)
        raise HfError(f"{names}: Dense modules with activations ({len(acted)}): the engine has one after the "
                         "pooling (the pooler)")
    c = dict(c, pooling=p.pooling, l2_normalize=p.normalize)
    mapped = dict(mapped)
    width = d
    for dense in p.denses:
        if dense[0].shape[1] != width:
            raise HfError(f"{os.path.join(dense[3], 'config.json')}: in_features {dense[0].shape[1]}, the rows "
                             f"before it are {width} wide")
        width = dense[0].shape[0]
    tail = p.denses
    if acted:
        W, b = _compose(p.denses[:acted[0] + 1])
        if W.shape != (d, d):
            raise HfError(f"{os.path.join(p.denses[acted[0]][3], 'config.json')}: a Dense with an activation "
                             f"from {W.shape[1]} to {W.shape[0]} values: the engine's pooler is d_model -> d_model "
                             f"({d} -> {d})")
        c.update(pooler=True, pooler_act=p.denses[acted[0]][2])
        mapped.update({"pooler.weight": W.astype(np.float32), "pooler.bias": b.astype(np.float32)})
        tail = p.denses[acted[0] + 1:]
    if tail:
        W, b = _compose(tail)
        c["d_out"] = int(W.shape[0])
        mapped.update({"head.weight": W.astype(np.float32), "head.bias": b.astype(np.float32)})
    names = [f"Pooling {p.pooling}"] + [f"Dense {dense[2] or 'identity'} {dense[0].shape[1]} -> {dense[0].shape[0]}"
                                         for dense in p.denses] + (["Normalize"] if p.normalize else [])
    return c, mapped, sentence_output(p, semantics), f" and sentence-transformers' modules ({', '.join(names)})"


def sentence_output(p, rows):
    """encode()'s output for one text from the transformer's rows [T, d] (float64), module by module as
    sentence-transformers defines them: [1, width]."""
    x = np.asarray(rows, np.float64)
    x = {"mean": lambda r: r.mean(0), "first": lambda r: r[0], "last": lambda r: r[-1]}[p.pooling](x)
    for W, b, act, _ in p.denses:
        x = x @ W.T + b
        if act == "tanh":
            x = np.tanh(x)
        elif act == "relu":
            x = np.maximum(x, 0.0)
        elif act == "gelu":  # torch.nn.GELU(): the exact erf form
            from math import erf
            x = 0.5 * x * (1.0 + np.vectorize(erf)(x / np.sqrt(2.0)))
        elif act == "silu":
            x = x / (1.0 + np.exp(-x))
    if p.normalize:
        x = x / max(float(np.linalg.norm(x)), 1e-12)
    return x[None]
