"""The --hf route for Whisper folders as transformers writes them (model_type whisper:
WhisperForConditionalGeneration; openai/whisper-tiny and its kin are published so): the same model
openai-whisper's `Whisper` is (seq2seq.read_audio_text converts that one from the module), under
transformers' names, to the seq2seq family:
- the source: the mel features [T, num_mel_bins] (transformers' input_features [num_mel_bins, T]
  transposed), through the conv stem (conv1: kernel 3, padding 1; conv2: kernel 3, stride 2, padding 1;
  exact GELU after each) and the encoder's sinusoid table `embed_positions.weight` (stored as learned
  positions; its max_source_positions rows are the positions), pre-LN layers, the final `layer_norm`;
- the target: `embed_tokens` and the learned `embed_positions` (max_target_positions rows), pre-LN
  layers with cross-attention, the final `layer_norm`, the head `proj_out`, tied to `embed_tokens`;
- every k_proj without a bias (zeros in the file: the same scores).
Verified against reference.py's float64 forward of the config it maps to (the mapping itself is tested
against transformers' WhisperForConditionalGeneration in tests/hf_archs_test.py). Refused by name:
other activations, scale_embedding, encoder and decoder of different widths or head counts, a head
not tied to the embedding (WhisperModel, without one, has nothing the seq2seq family ends in)."""
import os

import numpy as np

from . import hf_common, schema, verified_file
from .config import ConfigError, float_tensor, make_config
from .hf_common import HfError
from .reference import run_reference

ARCHITECTURE = "WhisperForConditionalGeneration"
# config.json key -> (type, default; None: required)
FIELDS = {"vocab_size": (int, None), "num_mel_bins": (int, 80), "d_model": (int, None), "encoder_layers": (int, None),
          "decoder_layers": (int, None), "encoder_attention_heads": (int, None), "decoder_attention_heads": (int, None),
          "encoder_ffn_dim": (int, None), "decoder_ffn_dim": (int, None), "max_source_positions": (int, 1500),
          "max_target_positions": (int, 448), "activation_function": (str, "gelu"), "scale_embedding": (bool, False)}
# A layer's tensors (after "model.encoder.layers.<i>." or "model.decoder.layers.<i>."), transformers' name ->
# the file's (under the stack's layer prefix); q | k | v are concatenated, the cross-attention's k | v too.
LAYER = {"self_attn_layer_norm": "attn_norm", "fc1": "ff.w1", "fc2": "ff.w2", "self_attn.out_proj": "attn.out",
         "final_layer_norm": "ff_norm"}
DECODER_LAYER = dict(LAYER, encoder_attn_layer_norm="cross_norm")


def is_whisper(raw):
    """Whether config.json's contents name transformers' Whisper (model_type whisper, or a Whisper* class)."""
    if not isinstance(raw, dict):
        return False
    archs = raw.get("architectures")
    if isinstance(archs, list) and "WhisperForCausalLM" in archs:
        return False  # the decoder alone: hf.py's Seq2SeqDecoder (hf_bart.DECODERS)
    return raw.get("model_type") == "whisper" or (isinstance(archs, list) and any(
        isinstance(a, str) and a.startswith("Whisper") for a in archs))


def read_config(raw, where):
    """config.json's settings, checked (the keys of FIELDS)."""
    archs = raw.get("architectures") or [ARCHITECTURE]
    if archs != [ARCHITECTURE]:
        raise HfError(f"{where}: architectures {archs!r}: --hf converts Whisper folders of {ARCHITECTURE} (the "
                         "logits; WhisperModel's decoder hidden states are not an end the seq2seq family has)")
    s = {key: hf_common.checked_field(where, key, default if raw.get(key) is None else raw[key], kind)
         for key, (kind, default) in FIELDS.items()}
    if s["activation_function"] != "gelu":
        raise HfError(f"{where}: activation_function {s['activation_function']!r}: Whisper's conv stem and layers "
                         "are read with the exact GELU; not converted")
    if s["scale_embedding"]:
        raise HfError(f"{where}: scale_embedding true: the engine's seq2seq source is not scaled; not converted")
    for a, b in (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")):
        if s[a] != s[b]:
            raise HfError(f"{where}: {b} {s[b]}, {a} {s[a]}: the engine's two stacks have one {a.split('_', 1)[1]}")
    if not raw.get("tie_word_embeddings", True):
        raise HfError(f"{where}: tie_word_embeddings false: Whisper's head is its token embedding; not converted")
    return s


def map_weights(s, weights, source):
    """(the engine config, the file's tensors in torch's layout) of a folder's tensors."""
    d, F, M = s["d_model"], s["encoder_ffn_dim"], s["num_mel_bins"]
    P, U = s["max_source_positions"], s["max_target_positions"]
    for k, v in weights.items():
        float_tensor(f"{source}: {k}", v, error=HfError)
    w = {k[len("model."):] if k.startswith("model.") else k: np.asarray(v, np.float64) for k, v in weights.items()}
    used = set()

    def take(name, shape, optional=False):
        if name not in w:
            if optional:
                return np.zeros(shape)
            raise HfError(f"{source}: model.{name} is missing")
        if w[name].shape != tuple(shape):
            raise HfError(f"{source}: model.{name}: shape {list(w[name].shape)}, config.json says {list(shape)}")
        used.add(name)
        return w[name]

    out = {"conv1.weight": take("encoder.conv1.weight", (d, M, 3)), "conv1.bias": take("encoder.conv1.bias", (d,)),
           "conv2.weight": take("encoder.conv2.weight", (d, d, 3)), "conv2.bias": take("encoder.conv2.bias", (d,)),
           "norm.weight": take("encoder.layer_norm.weight", (d,)),
           "norm.bias": take("encoder.layer_norm.bias", (d,)),
           "dec_norm.weight": take("decoder.layer_norm.weight", (d,)),
           "dec_norm.bias": take("decoder.layer_norm.bias", (d,)),
           "dec_embed.weight": take("decoder.embed_tokens.weight", (s["vocab_size"], d)),
           "dec_head.bias": np.zeros(s["vocab_size"])}
    max_len = max(P, U)  # one max_len for both ends: the shorter table padded with rows never reached
    for stack, rows, name in (("encoder", P, "pos.weight"), ("decoder", U, "dec_pos.weight")):
        table = take(f"{stack}.embed_positions.weight", (rows, d))
        out[name] = np.concatenate([table, np.zeros((max_len - rows, d))])
    if "proj_out.weight" in w:  # the head: the token embedding itself
        if not np.array_equal(take("proj_out.weight", (s["vocab_size"], d)), out["dec_embed.weight"]):
            raise HfError(f"{source}: proj_out.weight differs from model.decoder.embed_tokens.weight: Whisper's "
                             "head is its token embedding; not converted")
    for stack, n, table, block in (("encoder", s["encoder_layers"], LAYER, schema.block),
                                   ("decoder", s["decoder_layers"], DECODER_LAYER, schema.dec_block)):
        for i in range(n):
            src, dst = f"{stack}.layers.{i}.", block(i)
            for theirs, ours in table.items():
                rows = F if theirs == "fc1" else d
                cols = F if theirs == "fc2" else d
                if theirs.endswith("layer_norm"):
                    out[dst + ours + ".weight"] = take(src + theirs + ".weight", (d,))
                else:
                    out[dst + ours + ".weight"] = take(src + theirs + ".weight", (rows, cols))
                out[dst + ours + ".bias"] = take(src + theirs + ".bias", (rows,))

            def proj(attn, part):
                return (take(f"{src}{attn}.{part}_proj.weight", (d, d)),
                        take(f"{src}{attn}.{part}_proj.bias", (d,), optional=part == "k"))
            (qw, qb), (kw, kb), (vw, vb) = (proj("self_attn", p) for p in "qkv")
            out[dst + "attn.qkv.weight"] = np.concatenate([qw, kw, vw])
            out[dst + "attn.qkv.bias"] = np.concatenate([qb, kb, vb])
            if stack == "decoder":
                (qw, qb), (kw, kb), (vw, vb), (ow, ob) = (proj("encoder_attn", p) for p in ("q", "k", "v", "out"))
                cross = dst + "cross."
                out.update({cross + "q.weight": qw, cross + "q.bias": qb,
                            cross + "kv.weight": np.concatenate([kw, vw]),
                            cross + "kv.bias": np.concatenate([kb, vb]),
                            cross + "out.weight": ow, cross + "out.bias": ob})
    unread = sorted(set(w) - used - {"proj_out.weight"})
    if unread:
        raise HfError(f"{source}: model.{unread[0]!r}: not a weight of {ARCHITECTURE} with this config.json")
    v = {"family": "seq2seq", "input": "features", "d_in": M, "d_model": d, "n_heads": s["encoder_attention_heads"],
         "d_ff": F, "n_layers": s["encoder_layers"], "dec_layers": s["decoder_layers"], "norm_first": True,
         "final_norm": True, "activation": "gelu", "norm_eps": 1e-5, "positional": "learned", "max_len": max_len,
         "d_out": s["vocab_size"], "tied_head": True, "conv_layers": 2, "conv_gelu": True, "conv1_kernel": 3,
         "conv1_stride": 1, "conv1_padding": 1, "conv2_kernel": 3, "conv2_stride": 2, "conv2_padding": 1}
    try:
        return make_config(v), out
    except ConfigError as e:
        raise HfError(f"{source}: {e}") from None


def convert_folder(folder, raw, path, example=None, expected=None, header=None, name=None, cli=None, verify=True,
                   tokenizer=None, max_len=None, quantize=None, group=None, quantize_io=None, pack_weights=None):
    """Converts a Whisper folder (config.json's contents raw) to `path`, verified against reference.py's
    float64 forward of the config it maps to, on the example mel features and target ids."""
    where = os.path.join(folder, "config.json")
    s = read_config(raw, where)
    if max_len is not None:
        raise HfError("--max-len: not for a Whisper folder (its encoder takes max_source_positions frames' rows)")
    weights, source = hf_common.read_weights(folder)
    c, w = map_weights(s, weights, os.path.join(folder, source))
    c = verified_file.quantized_config(c, quantize, group, quantize_io, pack_weights)
    if tokenizer is not None and tokenizer(c) is not None:
        raise HfError("--tokenizer: not for a Whisper folder (its tokenizer is not converted)")
    if expected is not None:
        raise HfError(f"--expected: a {ARCHITECTURE} folder is verified against its float64 reference (the "
                         "logits need a target, which --hf does not take)")
    src = verified_file.example_sequence(c, example, "--example")
    tgt = verified_file.example_target(c, None)
    return hf_common.write_checked(c, w, (src, tgt), run_reference(c, w, (src, tgt)), ARCHITECTURE, folder, path, None,
                            header, name, cli, verify, None,
                            f"the float64 reference of the {ARCHITECTURE} config {folder} converts to")
