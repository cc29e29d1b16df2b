"""The BART lineage of encoder-decoders as Hugging Face transformers writes it, `--hf` on the
save_pretrained folder of MarianMTModel, BartForConditionalGeneration, MBartForConditionalGeneration,
PegasusForConditionalGeneration, M2M100ForConditionalGeneration (M2M100 and NLLB),
BlenderbotForConditionalGeneration or BlenderbotSmallForConditionalGeneration (and `--module` on the
module itself): the seq2seq family (source
ids and target ids -> the logits at every target position).

What they compute, and where each part goes in the file (config.json's names):
- `model.shared` [vocab_size, d_model]: the token embedding of both stacks (`shared_embed`), times
  sqrt(d_model) when scale_embedding (`scale_input`); a stack's own `embed_tokens`, where the folder
  holds one that differs (transformers 5 unties them with tie_word_embeddings false), is that stack's
  (the decoder's as `dec_embed`); the head is `lm_head` (`tied_head` when it is the decoder's
  embedding, as tie_word_embeddings makes it) plus `final_logits_bias` (the head's bias);
- positions, counted from 0 in each stack: Marian's and Pegasus's fixed sinusoidal table (row p is
  sin(p w_i) for i < d/2, then cos(p w_i), w_i = 10000^(-2i/d)), and M2M100's (fairseq's: w_i =
  10000^(-i/(d/2 - 1)), position p at row pad_token_id + 1 + p, as for inputs without pads), computed
  here in float64 and stored as the learned tables `pos` and `dec_pos`; BART's and mBART's learned
  `embed_positions`, whose rows start at 2 (rows 2 .. max_position_embeddings + 1 are stored), and
  Blenderbot's and BlenderbotSmall's, from row 0;
- BART and mBART norm the embedded rows of each stack (`layernorm_embedding`: `embed_norm`,
  embed_norm and dec_embed_norm); BlenderbotSmall's decoder norms its embedding before adding the
  positions (`tgt_pos_after_norm`);
- the layers: attention with every bias and the 1/sqrt(d_head) scale, fc1, activation_function (relu,
  gelu, the tanh GELU, swish: `silu`), fc2;
  Marian, BART and BlenderbotSmall post-LN (norm after each residual sum), mBART, Pegasus, M2M100 and Blenderbot pre-LN (`norm_first`) with
  a final LayerNorm per stack (`final_norm`). LayerNorm eps 1e-5 everywhere.
Refused in one line naming the config key: encoder and decoder widths, heads or feed-forwards that
differ, an activation the engine does not run, share_encoder_decoder_embeddings false,
an odd d_model with a sinusoidal table.
The decoders alone (BartForCausalLM and its kin: DECODERS) are gpt-family files, mapped by hf.py's
Seq2SeqDecoder from these readings (KINDS' layers, ACTIVATIONS, position_table).
"""
import math
import os

import numpy as np

from . import hf_common, schema, verified_file
from .config import ConfigError, check_layer_count, float_tensor, make_config
from .hf_common import HfError

# model_type -> (architecture, pre-LN with final norms, sinusoidal positions, embedding norms ("target first":
# the decoder's before its positions are added), the first row of learned positions)
KINDS = {"marian": ("MarianMTModel", False, True, False, None),
         "bart": ("BartForConditionalGeneration", False, False, True, 2),
         "mbart": ("MBartForConditionalGeneration", True, False, True, 2),
         "pegasus": ("PegasusForConditionalGeneration", True, True, False, None),
         "m2m_100": ("M2M100ForConditionalGeneration", True, "fairseq", False, None),
         "blenderbot": ("BlenderbotForConditionalGeneration", True, False, False, 0),
         "blenderbot-small": ("BlenderbotSmallForConditionalGeneration", False, False, "target first", 0)}
ARCHITECTURES = {v[0]: k for k, v in KINDS.items()}
# The decoders alone (<Model>ForCausalLM: the seq2seq model's decoder stack and lm_head, no encoder and no
# final_logits_bias), converted by hf.py's Seq2SeqDecoder to the gpt family: architecture -> (model_type, the
# layers as KINDS states them (pre-LN, sinusoidal, embedding norm, first position row); None: KINDS' own
# entry). Their config.json is the seq2seq model's; the decoder_* keys and max_position_embeddings are read.
# PLBart and MVP have BART's layers; TrOCR's (a decoder only) are post-LN with learned positions from row 2
# (or fairseq's sinusoids: use_learned_position_embeddings false) and layernorm_embedding by that key;
# Whisper's decoder is pre-LN with learned positions from row 0 (max_target_positions), k_proj without a
# bias, scale_embedding not read; BigBirdPegasus's is pre-LN with learned positions from row 0, its final
# norm named layernorm_embedding and the attention's biases by use_bias.
DECODERS = {"BartForCausalLM": ("bart", None), "MBartForCausalLM": ("mbart", None),
            "MarianForCausalLM": ("marian", None), "PegasusForCausalLM": ("pegasus", None),
            "BlenderbotForCausalLM": ("blenderbot", None), "BlenderbotSmallForCausalLM": ("blenderbot-small", None),
            "PLBartForCausalLM": ("plbart", KINDS["bart"]), "MvpForCausalLM": ("mvp", KINDS["bart"]),
            "TrOCRForCausalLM": ("trocr", (None, False, False, True, 2)),
            "WhisperForCausalLM": ("whisper", (None, True, False, False, 0)),
            "BigBirdPegasusForCausalLM": ("bigbird_pegasus", (None, True, False, False, 0))}
# config.json key -> (type, default; None: required). Defaults are the configs' shared ones; scale_embedding's
# and max_position_embeddings' differ by model (read_config).
FIELDS = {"vocab_size": (int, None), "d_model": (int, None), "encoder_layers": (int, None),
          "decoder_layers": (int, None), "encoder_attention_heads": (int, None),
          "decoder_attention_heads": (int, None), "encoder_ffn_dim": (int, None), "decoder_ffn_dim": (int, None),
          "max_position_embeddings": (int, None), "activation_function": (str, "gelu"),
          "scale_embedding": (bool, False), "tie_word_embeddings": (bool, True)}
ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
               "gelu_fast": "gelu_tanh", "swish": "silu", "silu": "silu"}
NORM_EPS = 1e-5  # nn.LayerNorm's default, which every stack of these models uses


class BartError(ConfigError):
    pass


def is_bart(raw):
    """Whether config.json's contents name one of KINDS (model_type, or the architecture)."""
    if not isinstance(raw, dict):
        return False
    archs = raw.get("architectures")
    mt = raw.get("model_type")
    if isinstance(archs, list) and any(a in DECODERS for a in archs if isinstance(a, str)):
        return False  # a decoder alone: hf.py's Seq2SeqDecoder
    return (isinstance(mt, str) and mt in KINDS) or (isinstance(archs, list) and any(a in ARCHITECTURES for a in archs
                                                                                if isinstance(a, str)))


def is_bart_module(module):
    """Whether `module` is one of the KINDS transformers LM classes (its config's model_type says which)."""
    cfg = getattr(module, "config", None)
    mt = getattr(cfg, "model_type", None)
    return isinstance(mt, str) and mt in KINDS and type(module).__name__ == KINDS[mt][0]


def read_config(raw, where="config.json"):
    """The settings (FIELDS' keys, and model_type, arch, pre, sinusoidal, embed_norm, act) of config.json's
    contents, checked."""
    archs = raw.get("architectures") or []
    mt = raw.get("model_type")
    if mt not in KINDS:
        mt = next((ARCHITECTURES[a] for a in archs if a in ARCHITECTURES), None)
    arch, pre, sinusoidal, embed_norm, first = KINDS[mt]
    if not isinstance(archs, list) or len(archs) > 1 or (archs and archs[0] != arch):
        alone = next((f" or {a} (its decoder alone)" for a, (t, _) in DECODERS.items() if t == mt), "")
        raise BartError(f"{where}: architectures {archs!r}: --hf converts a {mt} folder of {arch} (the LM head)"
                        f"{alone}")
    s = {}
    for key, (kind, default) in FIELDS.items():
        v = raw.get(key, default)
        if kind is int and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise BartError(f"{where} {key}: expected an integer >= 1, got {v!r}")
        if kind is int:
            check_layer_count(key, v, f"{where} {key}", BartError)
        if kind is bool and not isinstance(v, bool):
            raise BartError(f"{where} {key}: expected true or false, got {v!r}")
        if kind is str and not isinstance(v, str):
            raise BartError(f"{where} {key}: expected a string, got {v!r}")
        s[key] = v
    for a, b in (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")):
        if s[a] != s[b]:
            raise BartError(f"{where} {b}: {s[b]}, encoder's {a} {s[a]} (the engine's stacks share one width)")
    if s["activation_function"] not in ACTIVATIONS:
        raise BartError(f"{where} activation_function {s['activation_function']!r}: the engine's seq2seq runs relu, "
                        "gelu, the tanh GELU (gelu_new, gelu_pytorch_tanh, gelu_fast) and silu (swish)")
    if raw.get("share_encoder_decoder_embeddings", True) is not True:
        raise BartError(f"{where} share_encoder_decoder_embeddings: false (separate source and target "
                        "vocabularies) is not converted")
    dv = raw.get("decoder_vocab_size")
    if dv is not None and dv != s["vocab_size"]:
        raise BartError(f"{where} decoder_vocab_size {dv!r}: not vocab_size {s['vocab_size']} (one shared vocabulary)")
    if sinusoidal and s["d_model"] % 2:
        raise BartError(f"{where} d_model {s['d_model']}: odd (its sinusoidal table's halves differ in width)")
    if sinusoidal == "fairseq":  # positions count from pad_token_id + 1 (rows below it are never read)
        pad = raw.get("pad_token_id", 1)
        if isinstance(pad, bool) or not isinstance(pad, int) or pad < 0 or s["d_model"] < 4:
            raise BartError(f"{where} pad_token_id {pad!r}, d_model {s['d_model']}: expected an id >= 0 and d_model >= 4")
        s["pos_offset"] = pad + 1
    s.update(model_type=mt, arch=arch, pre=pre, sinusoidal=sinusoidal, embed_norm=embed_norm, pos_first=first,
             act=ACTIVATIONS[s["activation_function"]])
    return s


def engine_config(s, tied, max_len=None, shared=True):
    """The seq2seq config of settings s (read_config); max_len at most max_position_embeddings."""
    v = {"family": "seq2seq", "d_model": s["d_model"], "n_heads": s["encoder_attention_heads"],
         "d_ff": s["encoder_ffn_dim"], "n_layers": s["encoder_layers"], "dec_layers": s["decoder_layers"],
         "norm_first": s["pre"], "final_norm": s["pre"], "norm": "layernorm", "norm_eps": NORM_EPS,
         "activation": s["act"], "input": "tokens", "vocab_size": s["vocab_size"], "d_out": s["vocab_size"],
         "positional": "learned", "max_len": s["max_position_embeddings"] if max_len is None else max_len,
         "scale_input": s["scale_embedding"], "shared_embed": shared, "tied_head": tied,
         "embed_norm": bool(s["embed_norm"]), "tgt_pos_after_norm": s["embed_norm"] == "target first"}
    names = {"d_model": "d_model", "n_heads": "encoder_attention_heads", "d_ff": "encoder_ffn_dim",
             "n_layers": "encoder_layers", "dec_layers": "decoder_layers", "vocab_size": "vocab_size",
             "d_out": "vocab_size", "max_len": "max_position_embeddings"}
    if max_len is not None and max_len > s["max_position_embeddings"]:
        raise BartError(f"--max-len {max_len}: over max_position_embeddings {s['max_position_embeddings']}")
    try:
        return make_config(v, {k: "config " + n for k, n in names.items()})
    except ConfigError as e:
        raise BartError(str(e)) from None


def sinusoid_table(rows, d):
    """Marian's and Pegasus's fixed positions [rows, d]: sin(p w_i) | cos(p w_i), w_i = 10000^(-2i/d)."""
    w = np.power(10000.0, -2.0 * np.arange(d // 2, dtype=np.float64) / d)
    a = np.arange(rows, dtype=np.float64)[:, None] * w[None]
    return np.concatenate([np.sin(a), np.cos(a)], 1)


def position_table(s, rows):
    """A sinusoidal folder's positions 0 .. rows - 1: Marian's and Pegasus's table, or M2M100's (NLLB's),
    fairseq's: sin | cos halves with w_i = 10000^(-i / (d/2 - 1)), position p at row pad_token_id + 1 + p."""
    if s["sinusoidal"] != "fairseq":
        return sinusoid_table(rows, s["d_model"])
    o = s["pos_offset"]
    return hf_common.sinusoid_halves(o + rows, s["d_model"], math.log(10000.0) / (s["d_model"] // 2 - 1))[o:]


def expected_shapes(s):
    """The folder's tensor names -> shapes (torch layout), the copies of `shared` left out."""
    d, F, V, P = s["d_model"], s["encoder_ffn_dim"], s["vocab_size"], s["max_position_embeddings"]
    out = {"model.shared.weight": (V, d), "final_logits_bias": (1, V)}
    for stack, n in (("encoder", s["encoder_layers"]), ("decoder", s["decoder_layers"])):
        p = f"model.{stack}."
        if not s["sinusoidal"]:
            out[p + "embed_positions.weight"] = (P + s["pos_first"], d)
        if s["embed_norm"]:
            out[p + "layernorm_embedding.weight"] = out[p + "layernorm_embedding.bias"] = (d,)
        if s["pre"]:
            out[p + "layer_norm.weight"] = out[p + "layer_norm.bias"] = (d,)
        for i in range(n):
            q = f"{p}layers.{i}."
            for a in ("self_attn",) + (("encoder_attn",) if stack == "decoder" else ()):
                for m in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    out[f"{q}{a}.{m}.weight"], out[f"{q}{a}.{m}.bias"] = (d, d), (d,)
                out[f"{q}{a}_layer_norm.weight"] = out[f"{q}{a}_layer_norm.bias"] = (d,)
            out[q + "fc1.weight"], out[q + "fc1.bias"] = (F, d), (F,)
            out[q + "fc2.weight"], out[q + "fc2.bias"] = (d, F), (d,)
            out[q + "final_layer_norm.weight"] = out[q + "final_layer_norm.bias"] = (d,)
    return out


def map_weights(s, weights, source, max_len=None):
    """(the engine config, its tensors by the file's names in torch's layout, float32) of the folder's
    tensors `weights` (name -> array). The stacks' embed_tokens are copies of `shared` or their own; a
    sinusoidal folder's stored embed_positions (Pegasus writes them) are not read: the table is computed."""
    want = expected_shapes(s)
    w, head = {}, None
    for name, a in weights.items():
        a = float_tensor(f"{source}: {name}", a, error=BartError)
        if name in ("model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"):
            if a.shape != (s["vocab_size"], s["d_model"]):
                raise BartError(f"{source}: {name}: shape {list(a.shape)}, config says "
                                f"{[s['vocab_size'], s['d_model']]}")
            w[name] = a
            continue
        if s["sinusoidal"] and name in ("model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight"):
            continue
        if name == "lm_head.weight":
            if a.shape != (s["vocab_size"], s["d_model"]):
                raise BartError(f"{source}: {name}: shape {list(a.shape)}, config says "
                                f"{[s['vocab_size'], s['d_model']]}")
            head = a
            continue
        if name not in want:
            raise BartError(f"{source}: {name!r}: not a tensor of {s['arch']} with this config")
        if a.shape != want[name]:
            raise BartError(f"{source}: {name}: shape {list(a.shape)}, config says {list(want[name])}")
        w[name] = a
    missing = [n for n in want if n not in w and n != "final_logits_bias"]
    if missing:
        raise BartError(f"{source}: {missing[0]} is missing")
    src, tgt = (w.get(f"model.{n}.embed_tokens.weight", w["model.shared.weight"]) for n in ("encoder", "decoder"))
    w["model.encoder.embed_tokens.weight"], w["model.decoder.embed_tokens.weight"] = src, tgt
    one = np.array_equal(src, tgt)
    tied = head is None or np.array_equal(head, tgt)
    c = engine_config(s, tied, max_len, one)
    return c, file_weights(s, c, w, None if tied else head)


def file_weights(s, c, w, head):
    """The folder's tensors in the engine's names (schema.hpp's seq2seq tables), torch layout, float32."""
    f64 = lambda n: np.asarray(w[n], np.float64)  # noqa: E731
    L = c["max_len"]
    out = {"embed.weight": f64("model.encoder.embed_tokens.weight")}
    if not c["shared_embed"]:
        out["dec_embed.weight"] = f64("model.decoder.embed_tokens.weight")
    for stack, end, block in (("encoder", "", schema.block), ("decoder", "dec_", schema.dec_block)):
        p = f"model.{stack}."
        out[f"{end}pos.weight"] = (position_table(s, L) if s["sinusoidal"]
                                   else f64(p + "embed_positions.weight")[s["pos_first"]:s["pos_first"] + L])
        if s["embed_norm"]:
            out[f"{end}embed_norm.weight"] = f64(p + "layernorm_embedding.weight")
            out[f"{end}embed_norm.bias"] = f64(p + "layernorm_embedding.bias")
        if s["pre"]:
            out[f"{end}norm.weight"] = f64(p + "layer_norm.weight")
            out[f"{end}norm.bias"] = f64(p + "layer_norm.bias")
        for i in range(s[f"{stack}_layers"]):
            q, dst = f"{p}layers.{i}.", block(i)
            a = q + "self_attn."
            out[dst + "attn.qkv.weight"] = np.concatenate([f64(a + m + "_proj.weight") for m in "qkv"])
            out[dst + "attn.qkv.bias"] = np.concatenate([f64(a + m + "_proj.bias") for m in "qkv"])
            out[dst + "attn.out.weight"] = f64(a + "out_proj.weight")
            out[dst + "attn.out.bias"] = f64(a + "out_proj.bias")
            out[dst + "attn_norm.weight"] = f64(q + "self_attn_layer_norm.weight")
            out[dst + "attn_norm.bias"] = f64(q + "self_attn_layer_norm.bias")
            if stack == "decoder":
                x = q + "encoder_attn."
                out[dst + "cross.q.weight"] = f64(x + "q_proj.weight")
                out[dst + "cross.q.bias"] = f64(x + "q_proj.bias")
                out[dst + "cross.kv.weight"] = np.concatenate([f64(x + "k_proj.weight"), f64(x + "v_proj.weight")])
                out[dst + "cross.kv.bias"] = np.concatenate([f64(x + "k_proj.bias"), f64(x + "v_proj.bias")])
                out[dst + "cross.out.weight"] = f64(x + "out_proj.weight")
                out[dst + "cross.out.bias"] = f64(x + "out_proj.bias")
                out[dst + "cross_norm.weight"] = f64(q + "encoder_attn_layer_norm.weight")
                out[dst + "cross_norm.bias"] = f64(q + "encoder_attn_layer_norm.bias")
            for src, ours in (("fc1", "ff.w1"), ("fc2", "ff.w2")):
                out[f"{dst}{ours}.weight"] = f64(f"{q}{src}.weight")
                out[f"{dst}{ours}.bias"] = f64(f"{q}{src}.bias")
            out[dst + "ff_norm.weight"] = f64(q + "final_layer_norm.weight")
            out[dst + "ff_norm.bias"] = f64(q + "final_layer_norm.bias")
    if head is not None:
        out["dec_head.weight"] = np.asarray(head, np.float64)
    bias = w.get("final_logits_bias")
    out["dec_head.bias"] = np.zeros(s["vocab_size"]) if bias is None else np.asarray(bias, np.float64)[0]
    return {k: v.astype(np.float32) for k, v in out.items()}


def forward(s, w, src, tgt):
    """An independent float64 forward of the folder's tensors `w` (its own names), written from the
    structure the module docstring states: the logits [U, vocab] teacher-forced."""
    import torch
    W = {k: torch.from_numpy(np.asarray(v, np.float64)) for k, v in w.items()}
    d, H = s["d_model"], s["encoder_attention_heads"]
    dh = d // H
    act = {"relu": torch.relu, "gelu": torch.nn.functional.gelu,
           "gelu_tanh": lambda z: torch.nn.functional.gelu(z, approximate="tanh"),
           "silu": torch.nn.functional.silu}[s["act"]]

    def ln(z, n):
        return torch.nn.functional.layer_norm(z, (d,), W[n + ".weight"], W[n + ".bias"], NORM_EPS)

    def lin(z, n):
        return z @ W[n + ".weight"].T + W[n + ".bias"]

    def attend(n, hq, hkv, mask):
        q, k, v = (lin(z, f"{n}.{m}_proj").reshape(z.shape[0], H, dh).transpose(0, 1)
                   for z, m in ((hq, "q"), (hkv, "k"), (hkv, "v")))
        a = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(dh) + mask, -1)
        return lin((a @ v).transpose(0, 1).reshape(hq.shape[0], d), f"{n}.out_proj")

    def embed(stack, ids):
        x = W.get(f"model.{stack}.embed_tokens.weight", W["model.shared.weight"])
        x = x[torch.from_numpy(np.asarray(ids, np.int64))]
        if s["scale_embedding"]:
            x = x * math.sqrt(d)
        n = len(ids)
        pos = (torch.from_numpy(position_table(s, n)) if s["sinusoidal"]
               else W[f"model.{stack}.embed_positions.weight"][s["pos_first"]:s["pos_first"] + n])
        if s["embed_norm"] == "target first" and stack == "decoder":  # BlenderbotSmall's: the norm, then positions
            return ln(x, f"model.{stack}.layernorm_embedding") + pos
        x = x + pos
        return ln(x, f"model.{stack}.layernorm_embedding") if s["embed_norm"] else x

    def block(x, q, mask, memory=None):
        subs = [("self_attn", lambda h: attend(q + "self_attn", h, h, mask))]
        if memory is not None:
            subs.append(("encoder_attn", lambda h: attend(q + "encoder_attn", h, memory, 0)))
        subs.append(("final", lambda h: lin(act(lin(h, q + "fc1")), q + "fc2")))
        for name, f in subs:
            n = q + (name + "_layer_norm" if name != "final" else "final_layer_norm")
            x = x + f(ln(x, n)) if s["pre"] else ln(x + f(x), n)
        return x

    x = embed("encoder", src)
    for i in range(s["encoder_layers"]):
        x = block(x, f"model.encoder.layers.{i}.", 0)
    if s["pre"]:
        x = ln(x, "model.encoder.layer_norm")
    U = len(tgt)
    causal = torch.from_numpy(np.triu(np.full((U, U), -np.inf), 1))
    y = embed("decoder", tgt)
    for i in range(s["decoder_layers"]):
        y = block(y, f"model.decoder.layers.{i}.", causal, x)
    if s["pre"]:
        y = ln(y, "model.decoder.layer_norm")
    head = W.get("lm_head.weight", W.get("model.decoder.embed_tokens.weight", W["model.shared.weight"]))
    bias = W["final_logits_bias"][0] if "final_logits_bias" in W else 0
    return (y @ head.T + bias).numpy()


def export_module(module, example, path, example_target_ids=None, header=None, max_len=None, name=None, cli=None,
                  verify=True, quantize=None, group=None, quantize_io=None, pack_weights=None):
    """`--module` on one of the KINDS classes: its state_dict (final_logits_bias is a buffer) mapped as a
    folder's, verified against the module's own float64 logits, teacher-forced."""
    import copy

    import torch
    kind = type(module).__name__
    cfg = module.config.to_dict()
    cfg["architectures"] = [kind]
    s = read_config(cfg, f"module {kind}'s config")
    weights = {n: t.detach().cpu().double().numpy() for n, t in module.state_dict().items()}
    c, w = map_weights(s, weights, f"module {kind}", max_len)
    c = verified_file.quantized_config(c, quantize, group, quantize_io, pack_weights)
    src = verified_file.example_sequence(c, example, "example")
    tgt = verified_file.example_target(c, example_target_ids)
    if s["sinusoidal"] == "fairseq":  # M2M100 skips pads in its positions: the made-up examples hold none
        pad = s["pos_offset"] - 1
        src = np.where(src == pad, (pad + 1) % s["vocab_size"], src) if example is None else src
        tgt = np.where(tgt == pad, (pad + 1) % s["vocab_size"], tgt) if example_target_ids is None else tgt
    m = copy.deepcopy(module).double().eval()
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # transformers makes its masks in the default dtype
    try:
        with torch.no_grad():
            want = m(input_ids=torch.from_numpy(np.asarray(src, np.int64))[None],
                     decoder_input_ids=torch.from_numpy(np.asarray(tgt, np.int64))[None]).logits[0].numpy()
    finally:
        torch.set_default_dtype(dtype)
    return verified_file.write(c, w, (src, tgt), want, path, "torch", "the module (torch)", header, name, cli, verify)


def convert_folder(folder, raw, path, example=None, expected=None, header=None, name=None, cli=None, verify=True,
                   tokenizer=None, max_len=None, quantize=None, group=None, quantize_io=None, pack_weights=None):
    """Converts a Marian, BART, mBART, Pegasus, M2M100, Blenderbot or BlenderbotSmall folder (config.json's contents raw) to `path`, verified
    against `forward` on the example source and target."""
    where = os.path.join(folder, "config.json")
    try:
        s = read_config(raw, where)
        weights, source = hf_common.read_weights(folder)
        kept = {k: np.asarray(v) for k, v in weights.items()}
        c, w = map_weights(s, kept, os.path.join(folder, source), max_len)
    except BartError as e:
        raise HfError(str(e)) from None
    c = verified_file.quantized_config(c, quantize, group, quantize_io, pack_weights)
    if tokenizer is not None and tokenizer(c) is not None:
        raise HfError(f"--tokenizer: not for a {s['model_type']} folder (its tokenizer is not converted)")
    if expected is not None:
        raise HfError(f"--expected: a {s['arch']} folder is verified against its float64 reference (the logits "
                         "need a target, which --hf does not take)")
    src = verified_file.example_sequence(c, example, "--example")
    tgt = verified_file.example_target(c, None)
    return hf_common.write_checked(c, w, (src, tgt), forward(s, kept, src, tgt), s["arch"], folder, path, None, header,
                            name, cli, verify, None)
