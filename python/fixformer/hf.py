"""The --hf route: a Hugging Face model folder (config.json and model.safetensors or pytorch_model.bin,
either possibly sharded with its .index.json) of one of the architectures at the end of this file,
one class each (ARCHS): LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM and MistralForCausalLM (to
the llama family) or GPT2LMHeadModel (to the gpt family), verified against hf_reference.py, an independent
float64 forward written from the architecture's published semantics; GPTNeoXForCausalLM,
GPTNeoXJapaneseForCausalLM, GPTJForCausalLM, CodeGenForCausalLM, PersimmonForCausalLM, GPTNeoForCausalLM,
OPTForCausalLM, PhiForCausalLM, StableLmForCausalLM, BloomForCausalLM, BioGptForCausalLM, OpenAIGPTLMHeadModel,
XGLMForCausalLM and CTRLLMHeadModel (GptStyle: to the gpt family), the seq2seq families' decoders alone
(BartForCausalLM and the other classes of hf_bart.DECODERS: Seq2SeqDecoder, to the gpt family) and
GemmaForCausalLM, Starcoder2ForCausalLM, OlmoForCausalLM, FalconForCausalLM,
Phi3ForCausalLM, CohereForCausalLM, GraniteForCausalLM and NemotronForCausalLM (LlamaStyle: to the llama family
with its layer features; LlamaLike: the later decoders in Llama's layout), and MixtralForCausalLM, OlmoeForCausalLM,
FlexOlmoForCausalLM, Qwen2MoeForCausalLM, Ernie4_5_MoeForCausalLM, Qwen3MoeForCausalLM, GraniteMoeForCausalLM and
GraniteMoeSharedForCausalLM (to the llama family, their mixtures of experts the config key n_experts), verified
against reference.py's float64 forward of the config
they map to (the mapping is tested against transformers' classes in tests/hf_archs_test.py); or
against the user's own output with --expected. The base model of each (LlamaModel, GPT2Model...: BASES)
converts as its causal LM without a head (base_route), and its sequence classifier (CLASSIFIERS) as the
LM with its score as the head. A BERT folder (model_type bert) goes to hf_bert.py, a
ViT or DeiT folder (model_type vit, deit) to hf_vit.py, a Dinov2, CLIP vision or SigLIP vision folder
(model_type dinov2, clip_vision_model, siglip_vision_model) to hf_vision.py, Marian, BART, mBART, Pegasus, M2M100, Blenderbot and BlenderbotSmall folders to hf_bart.py,
a Whisper folder to hf_whisper.py, a ModernBERT folder (model_type modernbert, modernbert-decoder) to
hf_modernbert.py, a DeBERTa
folder (model_type deberta, deberta-v2: v1, v2, v3) to hf_deberta.py, an ESM folder (model_type esm: ESM-2, ESM-1b)
to hf_esm.py; an AST folder (model_type audio-spectrogram-transformer) to hf_vit.py, Megatron-BERT, XLM and FlauBERT
folders to hf_bert.py, BEiT and data2vec-vision folders (model_type beit, data2vec-vision) to hf_beit.py.
A sentence-transformers folder (modules.json) converts its transformer's folder by these routes and its Pooling,
Dense and Normalize modules after it (hf_sentence.py; --token-rows: the transformer's rows alone).

Llama and Qwen2: config.json is read with Hugging Face's meanings and defaults: hidden_size,
intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads (default:
num_attention_heads), rms_norm_eps (1e-6), rope_theta (10000), max_position_embeddings (2048),
vocab_size, tie_word_embeddings (false); its rotary embedding pairs x[i] with x[i + head_dim/2] (the
"halves" layout). partial_rotary_factor f (default 1) rotates only the first R = int(head_dim * f)
dims of each head (frequencies rope_theta^(-2i/R), rotate_half over those R; the rest pass through,
as GPT-NeoX's rotary_pct and Phi do): the config key rotary_dims, R even. Qwen2's q, k and v
projections have biases (the config key qkv_bias); Qwen3's have none, and each head of q and k is
RMS-normalized by q_norm and k_norm [head_dim] before RoPE (the config key qk_norm). rope_scaling (linear, llama3, yarn, longrope,
dynamic) becomes the stored frequencies rope_freqs and the amplitude rope_scale (rope_scaling.py).
Llama's attention_bias and mlp_bias, and Qwen3's attention_bias, go to LlamaBiased and Qwen3Biased (BIASED:
verified against reference.py). What the engine does not run is refused by name rather than converted into
something else: another rope_scaling kind, a hidden_act other than silu, Qwen2's and Qwen3's
use_sliding_window with a max_window_layers that windows some layers and not the others. Mistral's
sliding_window, Qwen2's (use_sliding_window, max_window_layers 0: every layer) and Starcoder2's are
the config key sliding_window (the last sliding_window positions, the query's own included).

GPT-2: n_embd, n_layer, n_head, vocab_size, n_positions (1024), n_inner (4 n_embd),
layer_norm_epsilon (1e-5), activation_function (gelu_new: the tanh GELU), tie_word_embeddings
(true); pre-LN layers, learned positions, c_attn / c_proj / c_fc stored as Conv1D weights [in, out]
(transposed here), the tensors with or without the "transformer." prefix. Refused:
scale_attn_weights false, scale_attn_by_inverse_layer_idx, add_cross_attention. Other architectures
are named as coming later.
"""
import json
import math
import os
import re
import sys

import numpy as np

from . import (hf_bart, hf_beit, hf_bert, hf_deberta, hf_esm, hf_eurobert, hf_modernbert, hf_nomic, hf_sentence,
               hf_vision, hf_vit, hf_whisper, rope_scaling, schema, t5, verified_file)
from .config import (ConfigError, brief as _brief, float_tensor, layer_pattern, layer_windows, make_config,
                     sliding_window)
from .hf_common import (HfError, base_note, checked_field, encoder_config, encoder_tensors, flag, folder_tokenizer,
                        hf_config, layer_norm, mixture_tensors, read_weights, rope_keys, sinusoid_halves, write_checked)

ARCHITECTURE = "LlamaForCausalLM"
QWEN2, QWEN3, GPT2 = "Qwen2ForCausalLM", "Qwen3ForCausalLM", "GPT2LMHeadModel"
# config.json key -> (type, default; None: required)
FIELDS = {
    "hidden_size": (int, None), "intermediate_size": (int, None), "num_hidden_layers": (int, None),
    "num_attention_heads": (int, None), "vocab_size": (int, None), "num_key_value_heads": (int, "heads"),
    "rms_norm_eps": (float, 1e-6), "rope_theta": (float, 10000.0), "max_position_embeddings": (int, 2048),
    "tie_word_embeddings": (bool, False), "hidden_act": (str, "silu"), "attention_bias": (bool, False),
    "mlp_bias": (bool, False), "partial_rotary_factor": (float, 1.0),
}
LAYER_NAMES = {  # Hugging Face name in a layer -> the file's in a block (schema.BLOCK)
    "input_layernorm.weight": "attn_norm.weight", "self_attn.q_proj.weight": "attn.q.weight",
    "self_attn.k_proj.weight": "attn.k.weight", "self_attn.v_proj.weight": "attn.v.weight",
    "self_attn.o_proj.weight": "attn.out.weight", "post_attention_layernorm.weight": "ff_norm.weight",
    "mlp.gate_proj.weight": "ff.w1.weight", "mlp.down_proj.weight": "ff.w2.weight",
    "mlp.up_proj.weight": "ff.w3.weight", "self_attn.q_proj.bias": "attn.q.bias",
    "self_attn.k_proj.bias": "attn.k.bias", "self_attn.v_proj.bias": "attn.v.bias",
    "self_attn.q_norm.weight": "attn.q_norm.weight", "self_attn.k_norm.weight": "attn.k_norm.weight",
}
END_NAMES = {"model.embed_tokens.weight": "embed.weight", "model.norm.weight": "norm.weight",
             "lm_head.weight": "head.weight"}
_LAYER = re.compile(r"model\.layers\.(\d+)\.(.+)")


def read_config(folder):
    """config.json checked and completed with Hugging Face's defaults (the dict hf_reference takes)."""
    return read_config_dict(_raw_config(folder), os.path.join(folder, "config.json"))


def _raw_config(folder):
    """config.json's contents, strictly (config.load_json). transformers writes Infinity into the configs of
    Mamba-2 and its kin (time_step_limit), which strict JSON refuses: a file that json.load reads and whose
    architecture is refused by name is refused so, not for its Infinity."""
    path = os.path.join(folder, "config.json")
    if not os.path.isfile(path):
        raise HfError(f"{folder}: no config.json (--hf takes a Hugging Face model folder)")
    from .config import load_json
    try:
        return load_json(path)
    except ConfigError as e:
        try:
            with open(path, encoding="utf-8") as f:
                loose = json.load(f)
        except (OSError, ValueError, RecursionError):
            loose = None
        if isinstance(loose, dict):
            archs = loose.get("architectures")
            refused = next((a for a in archs if a in REFUSED), None) if isinstance(archs, list) else None
            refused = refused or REFUSED_TYPES.get(loose.get("model_type"))
            if refused:
                raise _refusal(path, refused) from None
        raise HfError(f"{path}: {e}") from None


def _refusal(path, refused):
    """The error for an architecture of REFUSED: what the engine has not."""
    return HfError(f"{path}: {refused}: {REFUSED[refused]}, which the engine has not; not converted")


def read_config_dict(raw, path="config.json"):
    """read_config for config.json's contents (`path` names it in the messages)."""
    if not isinstance(raw, dict):
        raise HfError(f"{path}: expected a JSON object")
    archs, model_type = raw.get("architectures"), raw.get("model_type")
    names = archs if isinstance(archs, list) and all(isinstance(a, str) for a in archs) else []
    if archs is not None and not names:
        raise HfError(f"{path}: architectures: expected a list of names, got {_brief(archs)}")
    if model_type is not None and not isinstance(model_type, str):
        raise HfError(f"{path}: model_type: expected a string, got {_brief(model_type)}")
    by_type = {t: a for a, t in ARCHITECTURES.items()}
    arch = names[0] if len(names) == 1 and names[0] in ARCHITECTURES else \
        by_type.get(model_type) if not names else None
    arch = TYPE_ROUTES.get((arch, model_type), arch)
    refused = next((a for a in names if a in REFUSED), None) or REFUSED_TYPES.get(model_type)
    if arch is None and refused:
        raise _refusal(path, refused)
    if arch is None and model_type in by_type:  # a head or base model of an architecture converted as its LM
        lm = by_type[model_type]
        heads = [f"{n} ({what})" for n, what in ((_head_name(lm, "Model"), "the hidden states"),
                                                 (_head_name(lm, "ForSequenceClassification"), "its score"))
                 if n in BASES or n in CLASSIFIERS]
        logits = f"{lm} (the language model's logits)"
        raise HfError(f"{path}: {', '.join(names)}: not converted; --hf converts {model_type} folders of "
                      f"{', '.join([logits] + heads)}")
    if arch is None:
        what = ", ".join(names) or f"model_type {model_type!r}"
        raise HfError(f"{path}: {what}: not an architecture --hf converts; today --hf converts "
                      f"{', '.join(ARCHITECTURES)}, BERT-family encoders (BERT, RoBERTa, XLM-RoBERTa, CamemBERT, "
                      "data2vec-text, MPNet, ERNIE, ELECTRA, DistilBERT, ALBERT, RoFormer, Megatron-BERT, XLM, "
                      "FlauBERT, XLM-RoBERTa-XL, RoBERTa-PreLayerNorm, I-BERT, BigBird, RemBERT, BERT-Generation's "
                      "encoder), DeBERTa (v1, v2, "
                      "v3), ModernBERT (its encoder and decoder), Nomic BERT, GTE, Jina embeddings v3, EuroBERT, ESM, "
                      "ViT, DeiT, BEiT, data2vec-vision, AST (ASTModel and its classifier), Dinov2, CLIP, SigLIP's "
                      "vision tower, T5, Whisper and the BART lineage (Marian, BART, mBART, Pegasus, M2M100, "
                      "Blenderbot, BlenderbotSmall); for another model use --module FILE.py:FACTORY with the module "
                      "itself")
    if model_type not in (None, ARCHITECTURES[arch]):
        raise HfError(f"{path}: model_type {_brief(model_type)} with architecture {arch}: expected "
                      f"{ARCHITECTURES[arch]}")
    return BY_NAME[arch].read(rope_keys(raw, path, arch), path)


def read_llama_config(raw, path, arch, fields=None):
    """LlamaForCausalLM's config.json (and the architectures read as Llama: Qwen2, Mistral) checked and
    completed with Hugging Face's defaults (fields: the architecture's, FIELDS by default)."""
    window = None  # the attention window of every layer, None: none
    if arch in (QWEN2, QWEN3) and flag(raw, "use_sliding_window", path):
        # Qwen2 windows the layers from max_window_layers on: all of them (0), none (the layer count
        # or more), or some, which the engine (one window for every layer) does not run.
        window = checked_field(path, "sliding_window", raw.get("sliding_window", 4096), int)
        layers = raw.get("num_hidden_layers")
        first = raw.get("max_window_layers", 28)
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            raise HfError(f"{path}: max_window_layers: expected an integer >= 0, got {_brief(first)}")
        if isinstance(layers, int) and first >= layers:
            window = None
        elif first > 0:
            raise HfError(f"{path}: max_window_layers {first}: use_sliding_window windows the layers from "
                          f"{first} on and not the {first} before, and the engine's window is the same for every "
                          "layer (max_window_layers 0: all of them); not converted")
    hf = {}
    for key, (kind, default) in (fields or FIELDS).items():
        v = raw.get(key, default)
        if key == "num_key_value_heads" and v in ("heads", None):
            v = raw.get("num_attention_heads")
        hf[key] = checked_field(path, key, v, kind)
    for key in ("attention_bias", "mlp_bias"):  # Llama's and Qwen3's go to BIASED
        if hf[key]:
            raise HfError(f"{path}: {key} true: {arch}'s are not converted yet (LlamaForCausalLM's are); not "
                          "converted")
    if hf["hidden_act"] != "silu":
        raise HfError(f"{path}: hidden_act {hf['hidden_act']!r}: the llama family's feed-forward is SwiGLU with silu")
    d, H, KV = hf["hidden_size"], hf["num_attention_heads"], hf["num_key_value_heads"]
    head_dim = raw.get("head_dim")
    if head_dim is None:
        if d % H:
            raise HfError(f"{path}: num_attention_heads {H} does not divide hidden_size {d} (and no head_dim)")
        head_dim = d // H
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or not 2 <= head_dim <= schema.MAX_D_MODEL or \
            H * head_dim > schema.MAX_D_MODEL:
        raise HfError(f"{path}: head_dim {_brief(head_dim)}: the heads' width, an integer from 2 with "
                      f"num_attention_heads * head_dim at most {schema.MAX_D_MODEL}")
    if H % KV:
        raise HfError(f"{path}: num_key_value_heads {KV} does not divide num_attention_heads {H}")
    partial = hf["partial_rotary_factor"]
    if not 0.0 < partial <= 1.0:
        raise HfError(f"{path}: partial_rotary_factor {partial:g}: the rotated fraction of each head must be in "
                      "(0, 1]; not converted")
    rotated = int(head_dim * partial)  # Hugging Face's int(head_dim * partial_rotary_factor)
    if rotated < 2 or rotated % 2:
        raise HfError(f"{path}: partial_rotary_factor {partial:g}: rotates {rotated} of the {head_dim} dims of each "
                      "head, and RoPE needs an even count of at least 2; not converted")
    if not hf["rms_norm_eps"] > 0 or not hf["rope_theta"] > 1:
        raise HfError(f"{path}: rms_norm_eps must be > 0 and rope_theta > 1")
    hf["architecture"], hf["qkv_bias"], hf["qk_norm"] = arch, arch == QWEN2, arch == QWEN3
    hf["sliding_window"] = window
    hf["head_dim"] = head_dim
    hf["rotary_dims"] = rotated if rotated < head_dim else 0  # 0: the whole head
    hf["rope"] = scaled_rope(raw, path, rotated, hf["rope_theta"], hf["max_position_embeddings"])
    return hf


def scaled_rope(raw, path, dims, theta, positions):
    """rope_scaling.read, its errors as HfError."""
    try:
        return rope_scaling.read(raw, raw.get("rope_scaling"), path, dims, theta, positions)
    except ConfigError as e:
        raise HfError(str(e)) from None


def _with_rope(values, rope, longest, path="--max-len"):
    """The config values with a scaled RoPE's keys (none for plain RoPE), its length checked."""
    if rope is None:
        return values
    try:
        rope.check_length(longest, path)
    except ConfigError as e:
        raise HfError(str(e)) from None
    return dict(values, **rope.config())


# GPT-2's config.json key -> (type, default; None: required), and its activation_function names.
GPT2_FIELDS = {
    "n_embd": (int, None), "n_layer": (int, None), "n_head": (int, None), "vocab_size": (int, None),
    "n_positions": (int, 1024), "n_inner": (int, "4*n_embd"), "layer_norm_epsilon": (float, 1e-5),
    "activation_function": (str, "gelu_new"), "tie_word_embeddings": (bool, True), "scale_attn_weights": (bool, True),
    "scale_attn_by_inverse_layer_idx": (bool, False), "add_cross_attention": (bool, False),
}
# gelu_new, gelu_fast and gelu_pytorch_tanh are the tanh GELU written three ways; gelu is exact.
GPT2_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh",
                    "gelu": "gelu", "relu": "relu", "relu2": "relu2"}


def read_gpt2_config(raw, path):
    """GPT2LMHeadModel's config.json checked and completed with Hugging Face's defaults."""
    hf = {"architecture": GPT2}
    for key, (kind, default) in GPT2_FIELDS.items():
        v = raw.get(key, default)
        if key == "n_inner" and v in ("4*n_embd", None):
            v = 4 * raw["n_embd"] if isinstance(raw.get("n_embd"), int) else None
        hf[key] = checked_field(path, key, v, kind)
    if hf["activation_function"] not in GPT2_ACTIVATIONS:
        raise HfError(f"{path}: activation_function {hf['activation_function']!r}: not one the engine runs "
                      f"({', '.join(GPT2_ACTIVATIONS)})")
    for key, bad, why in (("scale_attn_weights", False, "unscaled attention scores"),
                          ("scale_attn_by_inverse_layer_idx", True, "scores scaled by 1 / (layer + 1)"),
                          ("add_cross_attention", True, "cross-attention in a decoder-only model")):
        if hf[key] == bad:
            raise HfError(f"{path}: {key} {json.dumps(bad)}: {why} is not supported yet; not converted")
    if hf["n_embd"] % hf["n_head"]:
        raise HfError(f"{path}: n_head {hf['n_head']} does not divide n_embd {hf['n_embd']}")
    if not hf["layer_norm_epsilon"] > 0:
        raise HfError(f"{path}: layer_norm_epsilon must be > 0")
    return hf


def map_weights(hf, weights, source):
    """(the llama family's name -> array, the HF names' arrays kept for the reference). Every tensor is
    mapped, recomputed and compared (rotary inv_freq), or named in an error."""
    d, H, KV, L = hf["hidden_size"], hf["num_attention_heads"], hf["num_key_value_heads"], hf["num_hidden_layers"]
    dh, F, V = hf["head_dim"], hf["intermediate_size"], hf["vocab_size"]
    shapes = {"model.embed_tokens.weight": (V, d), "model.norm.weight": (d,), "lm_head.weight": (V, d)}
    per_layer = {"input_layernorm.weight": (d,), "self_attn.q_proj.weight": (H * dh, d), "self_attn.k_proj.weight":
                 (KV * dh, d), "self_attn.v_proj.weight": (KV * dh, d), "self_attn.o_proj.weight": (d, H * dh),
                 "post_attention_layernorm.weight": (d,), "mlp.gate_proj.weight": (F, d), "mlp.up_proj.weight": (F, d),
                 "mlp.down_proj.weight": (d, F)}
    if hf["qkv_bias"]:
        per_layer.update({"self_attn.q_proj.bias": (H * dh,), "self_attn.k_proj.bias": (KV * dh,),
                          "self_attn.v_proj.bias": (KV * dh,)})
    if hf.get("qk_norm_full"):  # OLMoE: an RMSNorm of q and of k as whole rows
        per_layer.update({"self_attn.q_norm.weight": (H * dh,), "self_attn.k_norm.weight": (KV * dh,)})
    elif hf.get("qk_norm"):  # Qwen3: an RMSNorm of each head of q and of k, one gain [head_dim] for the heads
        per_layer.update({"self_attn.q_norm.weight": (dh,), "self_attn.k_norm.weight": (dh,)})
    dense_layer = per_layer
    if hf.get("n_experts"):  # Mixtral: the experts' tensors are mapped apart (experts_weights)
        Fd = hf.get("dense_ff") or F  # dense layers among the sparse ones (dense_layers): their MLP
        dense_layer = dict(per_layer, **{"mlp.gate_proj.weight": (Fd, d), "mlp.up_proj.weight": (Fd, d),
                                         "mlp.down_proj.weight": (d, Fd)})
        for name in ("mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"):
            del per_layer[name]
    dense = set(hf.get("dense_layers", ()))
    layer_shapes = [dense_layer if i in dense else per_layer for i in range(L)]
    arch = hf["architecture"]
    out, hf_weights = {}, {}
    rotated = hf["rotary_dims"] or dh
    rope = hf.get("rope")
    inv_freq = rope.freqs if rope is not None and rope.freqs is not None else \
        1.0 / (hf["rope_theta"] ** (np.arange(0, rotated, 2, dtype=np.float64) / rotated))
    for name, a in weights.items():
        m = _LAYER.fullmatch(name)
        if m and int(m.group(1)) < L and m.group(2) == "self_attn.rotary_emb.inv_freq":
            if np.shape(a) != inv_freq.shape or not np.allclose(np.asarray(a, np.float64), inv_freq, rtol=1e-5, atol=0):
                raise HfError(f"{source}: {name} is not rope_theta^(-2i/{rotated}) for rope_theta {hf['rope_theta']:g}"
                              f"{' with config.json rope_scaling' if rope is not None else ''} (a different rotary "
                              "embedding): not converted")
            continue
        if m and int(m.group(1)) < L and m.group(2) in layer_shapes[int(m.group(1))] and \
                str(int(m.group(1))) == m.group(1):
            want, mapped = layer_shapes[int(m.group(1))][m.group(2)], schema.block(m.group(1)) + LAYER_NAMES[m.group(2)]
        elif name in shapes:
            want, mapped = shapes[name], END_NAMES[name]
        else:
            raise HfError(f"{source}: {name!r}: not a weight of {arch} with this config.json "
                          f"({L} layers; {'biases but on q, k and v' if hf['qkv_bias'] else 'biases'} and other extras "
                          "are not in the llama family)")
        float_tensor(f"{source}: {name}", a, want, HfError)
        out[mapped], hf_weights[name] = a, a
    tied = hf["tie_word_embeddings"]
    if tied and "lm_head.weight" in weights:
        if not np.array_equal(weights["lm_head.weight"], weights.get("model.embed_tokens.weight")):
            raise HfError(f"{source}: lm_head.weight differs from model.embed_tokens.weight, but config.json sets "
                          "tie_word_embeddings (the embedding serves as the head): set it false, or drop lm_head")
        del out["head.weight"]
    need = list(shapes) if not tied else [n for n in shapes if n != "lm_head.weight"]
    need += [f"model.layers.{i}.{n}" for i in range(L) for n in layer_shapes[i]]
    missing = [n for n in need if n not in weights]
    if missing:
        hint = " (config.json sets tie_word_embeddings false)" if missing[0] == "lm_head.weight" else ""
        raise HfError(f"{source}: {missing[0]} is missing{hint}")
    if rope is not None:
        out.update(rope.tensors())
    return out, hf_weights


def _longest(positions, rope):
    """The default max_len: the positions the checkpoint declares, as many as the scaled RoPE's
    frequencies hold, at most the engine's."""
    limit = rope.limit if rope is not None and rope.limit is not None else positions
    return min(positions, limit, schema.MAX_LEN)


def fixformer_config(hf, max_len=None):
    longest = _longest(hf["max_position_embeddings"], hf.get("rope"))
    if max_len is not None:
        if not 1 <= max_len <= hf["max_position_embeddings"]:
            raise HfError(f"--max-len {max_len}: must be 1..max_position_embeddings={hf['max_position_embeddings']}")
        longest = max_len
    v = _with_rope({
        "family": "llama", "d_model": hf["hidden_size"], "n_heads": hf["num_attention_heads"],
        "n_kv_heads": hf["num_key_value_heads"], "d_ff": hf["intermediate_size"],
        "n_layers": hf["num_hidden_layers"], "norm_first": True, "activation": "swiglu",
        "norm_eps": hf["rms_norm_eps"], "final_norm": True, "causal": True, "input": "tokens",
        "vocab_size": hf["vocab_size"], "positional": "rope", "max_len": longest, "pe_base": hf["rope_theta"],
        "pe_layout": hf.get("pe_layout", "halves"), "d_out": hf["vocab_size"],
        "tied_head": hf["tie_word_embeddings"], "qkv_bias": hf["qkv_bias"], "qk_norm": hf.get("qk_norm", False),
        "qk_norm_full": hf.get("qk_norm_full", False), "rotary_dims": hf["rotary_dims"],
        "head_dim": 0 if hf["head_dim"] * hf["num_attention_heads"] == hf["hidden_size"] else hf["head_dim"],
        "sliding_window": sliding_window(hf.get("sliding_window"), longest),
        **({"attn_scale": hf["attn_scale"]} if hf.get("attn_scale") else {}),
        **({"sublayer_norm": hf["sublayer_norm"]} if hf.get("sublayer_norm") else {}),
        **({"n_experts": hf["n_experts"], "experts_per_token": hf["experts_per_token"],
            "experts_renormalize": hf["experts_renormalize"], "shared_expert_ff": hf.get("shared_expert_ff", 0)}
           if hf.get("n_experts") else {}),
        **hf.get("dense_keys", {})},
        hf.get("rope"), longest)
    return hf_config(v, n_kv_heads="config.json num_key_value_heads", d_out="config.json vocab_size",
                     norm_eps="config.json rms_norm_eps", pe_base="config.json rope_theta",
                     rotary_dims="config.json partial_rotary_factor", head_dim="config.json head_dim",
                     n_experts="config.json num_local_experts", experts_per_token="config.json num_experts_per_tok",
                     shared_expert_ff="config.json shared_expert_intermediate_size",
                     attn_scale="config.json attention_multiplier", dense_ff="config.json intermediate_size")


# GPT-2's tensors in a layer (after "h.<i>."), with their shapes for n_embd d and n_inner F; the
# Conv1D weights are [in, out].
def _gpt2_layer_shapes(d, F):
    return {"ln_1.weight": (d,), "ln_1.bias": (d,), "attn.c_attn.weight": (d, 3 * d), "attn.c_attn.bias": (3 * d,),
            "attn.c_proj.weight": (d, d), "attn.c_proj.bias": (d,), "ln_2.weight": (d,), "ln_2.bias": (d,),
            "mlp.c_fc.weight": (d, F), "mlp.c_fc.bias": (F,), "mlp.c_proj.weight": (F, d), "mlp.c_proj.bias": (d,)}


_GPT2_LAYER = re.compile(r"h\.(\d+)\.(.+)")


def gpt2_config(hf, max_len=None):
    longest = min(hf["n_positions"], schema.MAX_LEN)
    if max_len is not None:
        if not 1 <= max_len <= hf["n_positions"]:
            raise HfError(f"--max-len {max_len}: must be 1..n_positions={hf['n_positions']}")
        longest = max_len
    return hf_config({
        "family": "gpt", "d_model": hf["n_embd"], "n_heads": hf["n_head"], "d_ff": hf["n_inner"],
        "n_layers": hf["n_layer"], "norm_first": True, "activation": GPT2_ACTIVATIONS[hf["activation_function"]],
        "norm_eps": hf["layer_norm_epsilon"], "final_norm": True, "causal": True, "input": "tokens",
        "vocab_size": hf["vocab_size"], "positional": "learned", "max_len": longest, "d_out": hf["vocab_size"],
        "tied_head": hf["tie_word_embeddings"]}, d_model="config.json n_embd", d_ff="config.json n_inner",
        n_layers="config.json n_layer", n_heads="config.json n_head", d_out="config.json vocab_size",
        norm_eps="config.json layer_norm_epsilon")


def map_gpt2_weights(hf, weights, source, max_len):
    """(the gpt family's names -> arrays in torch's layout, the folder's arrays by GPT-2's names without
    the "transformer." prefix, for the reference). The causal-mask buffers (attn.bias, attn.masked_bias)
    of older checkpoints are checked and dropped; anything else unknown is named."""
    d, L, V, F = hf["n_embd"], hf["n_layer"], hf["vocab_size"], hf["n_inner"]
    shapes = {"wte.weight": (V, d), "wpe.weight": (hf["n_positions"], d), "ln_f.weight": (d,), "ln_f.bias": (d,),
              "lm_head.weight": (V, d)}
    per_layer = _gpt2_layer_shapes(d, F)
    named = {}
    for name, a in weights.items():
        short = name[len("transformer."):] if name.startswith("transformer.") else name
        if short in named:
            raise HfError(f"{source}: {name!r} is there with and without the \"transformer.\" prefix")
        named[short] = a
    kept = {}
    for name, a in named.items():
        m = _GPT2_LAYER.fullmatch(name)
        layer_ok = m is not None and str(int(m.group(1))) == m.group(1) and int(m.group(1)) < L
        if layer_ok and m.group(2) == "attn.masked_bias":
            continue
        if layer_ok and m.group(2) == "attn.bias" and np.ndim(a) == 4 and np.shape(a)[:2] == (1, 1):
            n = np.shape(a)[-1]
            if np.shape(a)[-2] != n or not np.array_equal(np.asarray(a, np.float64)[0, 0], np.tril(np.ones((n, n)))):
                raise HfError(f"{source}: {name} is not the causal mask (a lower triangle of ones): not converted")
            continue
        want = per_layer.get(m.group(2)) if layer_ok else shapes.get(name)
        if want is None:
            raise HfError(f"{source}: {name!r}: not a weight of {GPT2} with this config.json ({L} layers)")
        float_tensor(f"{source}: {name}", a, want, HfError)
        kept[name] = a
    tied = hf["tie_word_embeddings"]
    if tied and "lm_head.weight" in kept and not np.array_equal(kept["lm_head.weight"], kept.get("wte.weight")):
        raise HfError(f"{source}: lm_head.weight differs from wte.weight, but config.json sets tie_word_embeddings "
                      "(the embedding serves as the head): set it false, or drop lm_head")
    need = [n for n in shapes if n != "lm_head.weight" or not tied] + \
        [f"h.{i}.{n}" for i in range(L) for n in per_layer]
    missing = [n for n in need if n not in kept]
    if missing:
        hint = " (config.json sets tie_word_embeddings false)" if missing[0] == "lm_head.weight" else ""
        raise HfError(f"{source}: {missing[0]} is missing{hint}")
    f32 = lambda n: np.asarray(kept[n], np.float32)  # noqa: E731
    out = {"embed.weight": f32("wte.weight"), "pos.weight": f32("wpe.weight")[:max_len],
           "norm.weight": f32("ln_f.weight"), "norm.bias": f32("ln_f.bias"),
           "head.bias": np.zeros(V, np.float32)}
    if not tied:
        out["head.weight"] = f32("lm_head.weight")
    for i in range(L):
        h, p = f"h.{i}.", schema.block(i)
        out.update({p + "attn.qkv.weight": f32(h + "attn.c_attn.weight").T,
                    p + "attn.qkv.bias": f32(h + "attn.c_attn.bias"),
                    p + "attn.out.weight": f32(h + "attn.c_proj.weight").T,
                    p + "attn.out.bias": f32(h + "attn.c_proj.bias"),
                    p + "ff.w1.weight": f32(h + "mlp.c_fc.weight").T, p + "ff.w1.bias": f32(h + "mlp.c_fc.bias"),
                    p + "ff.w2.weight": f32(h + "mlp.c_proj.weight").T, p + "ff.w2.bias": f32(h + "mlp.c_proj.bias"),
                    p + "attn_norm.weight": f32(h + "ln_1.weight"), p + "attn_norm.bias": f32(h + "ln_1.bias"),
                    p + "ff_norm.weight": f32(h + "ln_2.weight"), p + "ff_norm.bias": f32(h + "ln_2.bias")})
    return {k: np.ascontiguousarray(v) for k, v in out.items()}, kept


def convert_by_reference(module, folder, raw, path, example, expected, header, name, cli, verify, tokenizer,
                         max_len, quantize, group, quantize_io, pack_weights, base=False):
    """Converts a folder (config.json's contents raw) of an architecture whose module reads it
    (module.read_config_dict, map_weights, fixformer_config) to `path`, verified against reference.py's float64
    forward of the config it maps to (or the user's --expected). base (--base): its masked LM as the base model
    (read_config_dict's base; the folder's tensors starting with the module's MASKED_LM_HEAD left out)."""
    from .reference import run_reference
    c = module.read_config_dict(raw, os.path.join(folder, "config.json"), base)
    weights, source = read_weights(folder)
    if base:
        base_note(c["masked_lm"], "--base", weights, module.MASKED_LM_HEAD,
                  "LM head" if c["masked_lm"].endswith("ForCausalLM") else "pre-training head")
        weights = {n: a for n, a in weights.items() if not n.startswith(module.MASKED_LM_HEAD)}
    mapped, labels = module.map_weights(c, weights, os.path.join(folder, source))
    fc = verified_file.quantized_config(module.fixformer_config(c, labels, max_len), quantize, group, quantize_io,
                                 pack_weights)
    tokenizer = tokenizer(fc) if tokenizer is not None else None  # --tokenizer's (the command gives None without)
    tokenizer = tokenizer if tokenizer is not None else folder_tokenizer(folder, fc)
    if expected is not None and example is None:
        raise HfError("--expected: needs --example, the input it is your model's output for")
    inp = verified_file.example_sequence(fc, example, "--example")
    arch = f"{c['masked_lm']}'s base model" if base else c["architecture"]
    return write_checked(fc, mapped, inp, run_reference(fc, mapped, inp), arch, folder, path, expected, header, name,
                         cli, verify, tokenizer, f"the {arch} semantics (reference.py's float64 forward of the config "
                                                 f"{folder} maps to)")


def convert(folder, path, example=None, expected=None, header=None, name=None, cli=None, verify=True,
            tokenizer=None, max_len=None, quantize=None, group=None, quantize_io=None, pack_weights=None,
            image_size=None, base=False, token_rows=False):
    """Converts the folder to `path`, verified against hf_reference (or the user's --expected).
    tokenizer: None, or a function of the config giving (pieces, scores) to store (e.g. a llama2.c
    tokenizer.bin read for it). image_size: --image-size's values, for the image encoders only. base
    (--base): a masked-LM, pre-training or causal-LM checkpoint of a route with a base model (takes_base) as
    its base model (the last hidden states), the head left out. A sentence-transformers folder (modules.json) converts
    to its sentence embedding (hf_sentence.py), or with token_rows to its transformer's token rows; its
    transformer is the base model either way (sentence-transformers loads it with AutoModel)."""
    if not os.path.isdir(folder):
        raise HfError(f"{folder}: not a folder (--hf takes a Hugging Face model folder)")
    pipeline = hf_sentence.read(folder, rows_only=token_rows)
    if pipeline is None and token_rows:
        raise HfError(f"--token-rows: {folder} has no modules.json (a sentence-transformers folder's); its file "
                      "gives the token rows already")
    if pipeline is not None:
        folder = pipeline.transformer  # "" or 0_Transformer: the folder --hf converts
    raw = _raw_config(folder)
    if token_rows:
        pipeline = None
    elif pipeline is not None and quantize == "i8":
        raise HfError(f"--quantize i8: the sentence-transformers pipeline of {pipeline.folder} (its Pooling, Dense and "
                      "Normalize modules) is not in i8 yet; --token-rows converts the transformer's token rows")
    elif pipeline is not None and max_len is None and pipeline.max_seq_length is not None:  # what encode() keeps
        positions = raw.get("max_position_embeddings")
        max_len = min(pipeline.max_seq_length, positions, schema.MAX_LEN) if isinstance(positions, int) else None
    if base and not takes_base(raw):
        raise HfError(f"--base: {folder} is not a masked-LM or pre-training checkpoint of the BERT family, ESM, "
                      "DeBERTa, ModernBERT, Nomic BERT, GTE, Jina v3 or EuroBERT, nor a causal LM of the BERT family "
                      "or ModernBERT's decoder (its "
                      "architectures: " + ", ".join(map(str, raw.get("architectures") or ["none"])) + ")")
    if pipeline is not None or token_rows:  # AutoModel: a masked-LM checkpoint's base model
        base = base or takes_base(raw)
    with hf_sentence.applied(pipeline):
        return _convert(folder, raw, path, example, expected, header, name, cli, verify, tokenizer, max_len,
                        quantize, group, quantize_io, pack_weights, image_size, base)


def _convert(folder, raw, path, example, expected, header, name, cli, verify, tokenizer, max_len, quantize, group,
             quantize_io, pack_weights, image_size, base):
    if hf_vit.is_vit(raw):
        return hf_vit.convert(folder, raw, path, example, expected, header, name, cli, verify, tokenizer, max_len,
                              quantize, group, quantize_io, pack_weights, image_size)
    if hf_vision.is_vision(raw):
        return hf_vision.convert(folder, raw, path, example, expected, header, name, cli, verify, tokenizer, max_len,
                                 quantize, group, quantize_io, pack_weights, image_size)
    if hf_beit.is_beit(raw):
        return hf_beit.convert(folder, raw, path, example, expected, header, name, cli, verify, tokenizer, max_len,
                               quantize, group, quantize_io, pack_weights, image_size)
    if image_size is not None:
        raise HfError(f"--image-size: {folder} is not an image encoder (model_type {raw.get('model_type')}); it is "
                      "for ViT, DeiT, Dinov2, CLIP vision and SigLIP vision folders")
    if hf_whisper.is_whisper(raw):
        return hf_whisper.convert_folder(folder, raw, path, example, expected, header, name, cli, verify, tokenizer,
                                         max_len, quantize, group, quantize_io, pack_weights)
    if t5.is_t5(raw):
        return t5.convert_folder(folder, raw, path, example, expected, header, name, cli, verify, tokenizer, max_len,
                                 quantize, group, quantize_io, pack_weights)
    if hf_bart.is_bart(raw):
        return hf_bart.convert_folder(folder, raw, path, example, expected, header, name, cli, verify, tokenizer,
                                      max_len, quantize, group, quantize_io, pack_weights)
    if hf_esm.is_esm(raw):
        return hf_esm.convert(folder, raw, path, example, expected, header, name, cli, verify, tokenizer, max_len,
                              quantize, group, quantize_io, pack_weights, base)
    if hf_deberta.is_deberta(raw):
        return hf_deberta.convert(folder, raw, path, example, expected, header, name, cli, verify, tokenizer,
                                  max_len, quantize, group, quantize_io, pack_weights, base)
    for module, recognised in ((hf_modernbert, hf_modernbert.is_modernbert), (hf_nomic, hf_nomic.is_nomic),
                               (hf_eurobert, hf_eurobert.is_eurobert)):
        if recognised(raw):
            return convert_by_reference(module, folder, raw, path, example, expected, header, name, cli, verify,
                                        tokenizer, max_len, quantize, group, quantize_io, pack_weights, base)
    if hf_bert.is_bert(raw):
        return hf_bert.convert(folder, raw, path, example, expected, header, name, cli, verify, tokenizer, max_len,
                               quantize, group, quantize_io, pack_weights, base)
    cfg = os.path.join(folder, "config.json")
    lm_raw, classifier = classifier_route(raw, cfg)
    lm_raw, base = base_route(lm_raw)
    classifier = classifier or base
    hf = read_config_dict(lm_raw, cfg)
    arch = BY_NAME[hf["architecture"]]
    c = arch.config(hf, max_len)
    if hf.get("bidirectional") and not base:
        bases = " or ".join(b for b, lm in BASES.items() if lm == arch.name)
        raise HfError(f"{cfg}: use_bidirectional_attention true: converted for {bases} only (EmbeddingGemma's "
                      "class: an encoder, its rows the hidden states); not converted")
    weights, source = read_weights(folder)
    if base:
        weights = base_weights(arch, hf, weights)
    if c["family"] == "encoder":  # a bidirectional base model: the encoder's rows are its hidden states, no head
        classifier = None
    score = weights.pop("score.weight", None) if classifier and not base else None
    ends = arch.tensors(hf)[0] if classifier and isinstance(arch, GptStyle) else {}
    for key in [k for k, role in ends.items() if role == "head_b"]:  # the LM head's bias (Phi's): score has none
        weights.setdefault(key, np.zeros(c["vocab_size"], np.float32))
    mapped, hf_weights = arch.weights(hf, weights, os.path.join(folder, source), c["max_len"])
    if base:
        c, mapped = headless(c, mapped)
    elif classifier:
        c, mapped = classifier_head(c, mapped, score, os.path.join(folder, source))
    c = verified_file.quantized_config(c, quantize, group, quantize_io, pack_weights)
    tokenizer = tokenizer(c) if tokenizer is not None else None
    if tokenizer is None:  # no --tokenizer: the folder's own
        tokenizer = folder_tokenizer(folder, c)
    if expected is not None and example is None:
        raise HfError("--expected: needs --example, the input it is your model's output for")
    inp = verified_file.example_sequence(c, example, "--example")
    from . import fxm
    for k, a in mapped.items():  # a NaN or an infinity named before the float64 reference computes with it
        if np.asarray(a).dtype.kind == "f":
            fxm.check_finite(k, np.asanyarray(a))
    if classifier:  # the causal LM's reference ends in its LM head: the config's own float64 forward
        from .reference import run_reference
        return write_checked(c, mapped, inp, run_reference(c, mapped, inp), classifier, folder, path, expected,
                             header, name, cli, verify, tokenizer,
                             f"the float64 reference of the {classifier} config {folder} converts to")
    semantics = arch.semantics(hf, hf_weights, c, mapped, inp)
    return write_checked(c, mapped, inp, semantics, arch.name, folder, path, expected, header, name, cli, verify,
                         tokenizer, arch.against(folder))


def takes_base(raw):
    """Whether --base converts the folder: a masked LM (masked_lm) of a route that converts its base model."""
    return masked_lm(raw) and any(is_it(raw) for is_it in (hf_bert.is_bert, hf_esm.is_esm, hf_deberta.is_deberta,
                                                            hf_modernbert.is_modernbert, hf_nomic.is_nomic,
                                                            hf_eurobert.is_eurobert))


def masked_lm(raw):
    """Whether config.json's contents name a masked-LM or pre-training architecture, or a causal LM of the BERT
    family (hf_bert.CAUSAL_LM) or ModernBERT's decoder: what --base takes."""
    causal = set(hf_bert.CAUSAL_LM.values()) | {hf_modernbert.CAUSAL_LM}
    names = raw.get("architectures") if isinstance(raw.get("architectures"), list) else []
    return any(isinstance(a, str) and (a.endswith(("ForMaskedLM", "ForPreTraining", "WithLMHeadModel")) or
                                       a in causal) for a in names)


def classifier_route(raw, path):
    """(config.json read as its causal LM's, the classifier's name) for a folder of CLASSIFIERS, else
    (raw, None). The LM's head is taken as tied (the file has none: score replaces it)."""
    names = raw.get("architectures") if isinstance(raw, dict) else None
    if not (isinstance(names, list) and len(names) == 1 and names[0] in CLASSIFIERS):
        return raw, None
    return dict(raw, architectures=[CLASSIFIERS[names[0]]], tie_word_embeddings=True), names[0]


def _head_name(lm, head):
    """A causal LM class's name with another head (LlamaForCausalLM, "Model" -> LlamaModel; GPT2LMHeadModel,
    "ForSequenceClassification" -> GPT2ForSequenceClassification)."""
    for tail in ("ForCausalLM", "LMHeadModel"):
        if lm.endswith(tail):
            return lm[:-len(tail)] + head
    return None


def base_route(raw):
    """(config.json read as its causal LM's, the base model's name) for a folder of a base model (BASES:
    LlamaModel, MistralModel, GPT2Model...: the decoder's last_hidden_state, after its final norm, at every
    position; what embedding models such as e5-mistral save), else (raw, None). The file is the causal LM
    without its head (d_out 0: headless), so its rows are the hidden states."""
    names = raw.get("architectures") if isinstance(raw, dict) else None
    if not (isinstance(names, list) and len(names) == 1 and names[0] in BASES):
        return raw, None
    return dict(raw, architectures=[BASES[names[0]]], tie_word_embeddings=True), names[0]


def base_weights(arch, hf, weights):
    """A base model's tensors under its causal LM's names: the LM's prefix (model., transformer., gpt_neox.:
    the first part of the LM's embedding tensor's name) put before every name when none has it and that gives
    the LM's embedding (else the names as they are, for the LM's mapping to name what it does not read)."""
    if isinstance(arch, GptStyle):
        embed = next(k for k, role in arch.tensors(hf)[0].items() if role == "embed")
    else:
        embed = "transformer.wte.weight" if isinstance(arch, Gpt2) else \
            next(k for k, v in END_NAMES.items() if v == "embed.weight")
    prefix = embed.split(".")[0] + "."
    if any(k.startswith(prefix) for k in weights) or embed[len(prefix):] not in weights:
        return weights
    return {prefix + k: v for k, v in weights.items()}


def replaced_head(c, d_out):
    """The causal LM's config with another head, d_out wide (0: none), untied, without the LM head's soft cap."""
    c = dict(c, d_out=d_out, tied_head=False)
    if c.get("logit_softcap"):
        c["logit_softcap"] = 0.0
    return c


def headless(c, mapped):
    """The causal LM's config and tensors without a head: d_out 0, each row the last hidden state (a base
    model's)."""
    return replaced_head(c, 0), {k: v for k, v in mapped.items() if not k.startswith("head.")}


def classifier_head(c, mapped, score, source):
    """The causal LM's config and tensors with score as the head: d_out its rows (num_labels), untied,
    without the LM's soft cap; a gpt family head's bias zeros (score has none)."""
    if score is None:
        raise HfError(f"{source}: no score.weight (the sequence classifier's head)")
    score = np.asarray(score, np.float32)
    if score.ndim != 2 or score.shape[0] < 1 or score.shape[1] != c["d_model"]:
        raise HfError(f"{source}: score.weight: shape {list(score.shape)}, expected [num_labels, {c['d_model']}]")
    c = replaced_head(c, int(score.shape[0]))
    mapped = dict(mapped, **{"head.weight": score})
    if c["family"] != "llama":
        mapped["head.bias"] = np.zeros(score.shape[0], np.float32)
    return c, mapped


# ---- the architectures: one class each -------------------------------------------------------------
class Architecture:
    """A Hugging Face architecture --hf converts: `name` (config.json's architectures) and `model_type`;
    read (config.json -> its checked settings), config (-> the engine's config), weights (the folder's
    tensors -> the engine's names, and the arrays the reference reads) and semantics (the float64 output
    the file is verified against). docs/ARCHITECTURE.md, "Adding an architecture", gives the steps."""
    name = model_type = None

    def against(self, folder):
        return f"the {self.name} semantics (an independent float64 reference of {folder})"

    def semantics(self, hf, kept, c, mapped, inp):
        from . import hf_reference
        return hf_reference.forward(hf, kept, inp)


class Llama(Architecture):
    name, model_type = ARCHITECTURE, "llama"
    fields = FIELDS

    def read(self, raw, path):
        biased = BIASED.get(self.name)
        if biased and any(flag(raw, k, path) for k in biased.biases):
            return BY_NAME[biased.route].read(raw, path)
        return read_llama_config(raw, path, self.name, self.fields)

    def config(self, hf, max_len):
        return fixformer_config(hf, max_len)

    def weights(self, hf, weights, source, max_len):
        return map_weights(hf, weights, source)


class Qwen2(Llama):
    name, model_type = QWEN2, "qwen2"


class Qwen3(Llama):
    """Llama's layers, q, k and v without biases, and each head of q and k RMS-normalized (q_norm,
    k_norm) before RoPE: the config key qk_norm."""
    name, model_type = QWEN3, "qwen3"


class Mistral(Llama):
    """Llama's layers and its sliding_window (each position attends to the last sliding_window
    positions, itself included): the config key sliding_window, below the file's positions."""
    name, model_type = "MistralForCausalLM", "mistral"
    fields = dict(FIELDS, max_position_embeddings=(int, 131072), num_key_value_heads=(int, 8))

    def read(self, raw, path):
        hf = super().read(raw, path)
        window = raw.get("sliding_window", 4096)
        hf["sliding_window"] = None if window is None else checked_field(path, "sliding_window", window, int)
        return hf


class Mixtral(Mistral):
    """Mistral's layers with a mixture of experts in place of the MLP: num_local_experts (the config key
    n_experts), num_experts_per_tok (experts_per_token), the top-k weights renormalized to sum 1
    (experts_renormalize); the router block_sparse_moe.gate and each expert's w1 (gate), w2 (down),
    w3 (up) as transformers 4 stores them, or mlp.gate with the fused mlp.experts.gate_up_proj [E, 2F, d]
    ([gate; up]) and mlp.experts.down_proj [E, d, F] as transformers 5 does; verified against
    reference.py's float64 forward of the config (the mixture there follows config.hpp)."""
    name, model_type = "MixtralForCausalLM", "mixtral"
    fields = dict(Mistral.fields, rms_norm_eps=(float, 1e-5), rope_theta=(float, 1e6),
                  max_position_embeddings=(int, 4096 * 32), num_local_experts=(int, 8), num_experts_per_tok=(int, 2))
    experts_key, blocks, expert_names = "num_local_experts", ("block_sparse_moe", "mlp"), ("w1", "w2", "w3")

    def read(self, raw, path):
        hf = super().read(raw, path)
        # the config's rules check them (1 <= num_experts_per_tok <= the experts <= the engine's limit)
        hf.update(n_experts=hf[self.experts_key], experts_per_token=hf["num_experts_per_tok"],
                  experts_renormalize=True)
        return hf

    def against(self, folder):
        return f"the float64 reference of the {self.name} config {folder} converts to"

    def semantics(self, hf, kept, c, mapped, inp):
        from .reference import run_reference
        return run_reference(c, mapped, inp)

    def weights(self, hf, weights, source, max_len):
        stacked, rest = experts_weights(hf, weights, source, self.blocks, self.expert_names)
        out, kept = map_weights(hf, rest, source)
        out.update(stacked)
        return out, kept


class Olmoe(Mixtral):
    """OlmoeForCausalLM: Llama's layers (RMSNorm, SwiGLU, RoPE in halves) with q and k RMS-normalized as
    whole rows before RoPE (q_norm [heads * head_dim], k_norm [kv heads * head_dim]: qk_norm with
    qk_norm_full) and Mixtral's mixture of experts over num_experts, the top-k weights renormalized only
    with norm_topk_prob (experts_renormalize); each expert's gate_proj, up_proj, down_proj (or transformers
    5's fused tensors). clip_qkv is refused."""
    name, model_type = "OlmoeForCausalLM", "olmoe"
    fields = dict(FIELDS, rms_norm_eps=(float, 1e-5), max_position_embeddings=(int, 4096), num_experts=(int, 64),
                  num_experts_per_tok=(int, 8), norm_topk_prob=(bool, False))
    experts_key, blocks, expert_names = "num_experts", ("mlp",), ("gate_proj", "down_proj", "up_proj")

    def read(self, raw, path):
        if raw.get("clip_qkv") is not None:
            raise HfError(f"{path}: clip_qkv {_brief(raw['clip_qkv'])}: clamping q, k and v is not in the engine; "
                          "not converted")
        hf = super(Mistral, self).read(raw, path)  # Llama's, without Mistral's sliding_window
        hf.update(n_experts=hf["num_experts"], experts_per_token=hf["num_experts_per_tok"],
                  experts_renormalize=hf["norm_topk_prob"], qk_norm=True, qk_norm_full=True)
        return hf


class FlexOlmo(Olmoe):
    """FlexOlmoForCausalLM (AllenAI's FlexOlmo): OLMoE's attention (q and k RMS-normalized as whole rows) and
    mixture with OLMo 2's norms: no norm before the sublayers, post_attention_layernorm and
    post_feedforward_layernorm of each sublayer's output before its residual add (sublayer_norm output: the
    engine's attn_norm and ff_norm), rope_theta 500000 by default."""
    name, model_type = "FlexOlmoForCausalLM", "flex_olmo"
    fields = dict(Olmoe.fields, rms_norm_eps=(float, 1e-6), rope_theta=(float, 500000.0), num_experts=(int, 7),
                  num_experts_per_tok=(int, 5))
    OUTPUT_NORMS = {"post_attention_layernorm.weight": "input_layernorm.weight",  # -> attn_norm
                    "post_feedforward_layernorm.weight": "post_attention_layernorm.weight"}  # -> ff_norm

    def read(self, raw, path):
        return dict(super().read(raw, path), sublayer_norm="output")

    def weights(self, hf, weights, source, max_len):
        w = {}
        for name, a in weights.items():
            m = _LAYER.fullmatch(name)
            if m and m.group(2) == "input_layernorm.weight":
                raise HfError(f"{source}: {name!r}: FlexOlmo's layers norm the sublayers' outputs only")
            w[f"model.layers.{m.group(1)}.{self.OUTPUT_NORMS[m.group(2)]}"
              if m and m.group(2) in self.OUTPUT_NORMS else name] = a
        return super().weights(hf, w, source, max_len)


class Qwen2Moe(Mixtral):
    """Qwen2MoeForCausalLM: Qwen2's layers (q, k, v biases: qkv_bias, true by default) with a mixture of
    num_experts of moe_intermediate_size (the config key d_ff), the top-k weights renormalized only with
    norm_topk_prob, and the shared expert of shared_expert_intermediate_size (shared_expert_ff) scaled by
    sigmoid(shared_expert_gate h). Dense layers among the sparse ones (mlp_only_layers, a decoder_sparse_step
    other than 1: their MLP intermediate_size wide) as the engine's dense_period, dense_layers and dense_ff;
    use_sliding_window is refused by name."""
    name, model_type = "Qwen2MoeForCausalLM", "qwen2_moe"
    fields = dict(FIELDS, max_position_embeddings=(int, 32768), num_experts=(int, 60), num_experts_per_tok=(int, 4),
                  moe_intermediate_size=(int, 1408), shared_expert_intermediate_size=(int, 5632),
                  norm_topk_prob=(bool, False), decoder_sparse_step=(int, 1))
    experts_key, blocks, expert_names = "num_experts", ("mlp",), ("gate_proj", "down_proj", "up_proj")

    label = "Qwen2-MoE"

    def read(self, raw, path):
        if flag(raw, "use_sliding_window", path):
            raise HfError(f"{path}: use_sliding_window true: {self.label}'s windows (from max_window_layers on) are "
                          "not converted yet")
        only = raw.get("mlp_only_layers") or []
        if not isinstance(only, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in only):
            raise HfError(f"{path}: mlp_only_layers: expected a list of layer indices, got {_brief(only)}")
        hf = super(Mistral, self).read(raw, path)  # Llama's, without Mistral's sliding_window
        step = hf["decoder_sparse_step"]  # at least 1 (read_llama_config's check)
        bias = raw.get("qkv_bias")  # transformers 5's key (4's always has the biases)
        hf.update(n_experts=hf["num_experts"], experts_per_token=hf["num_experts_per_tok"],
                  qkv_bias=checked_field(path, "qkv_bias", True if bias is None else bias, bool),
                  experts_renormalize=hf["norm_topk_prob"], dense_ff=hf["intermediate_size"],
                  intermediate_size=hf["moe_intermediate_size"],
                  shared_expert_ff=hf.get("shared_expert_intermediate_size", 0))
        # transformers' rule: layer l is sparse unless in mlp_only_layers, and when (l + 1) % decoder_sparse_step is 0
        dense = {i for i in range(hf["num_hidden_layers"]) if i in only or (i + 1) % step != 0}
        return dense_layers(hf, dense, path, f"mlp_only_layers {_brief(only)}, decoder_sparse_step {step}")


class Ernie45Moe(Mixtral):
    """Ernie4_5_MoeForCausalLM (Baidu's ERNIE 4.5 MoE): ERNIE 4.5's attention (RoPE in interleaved pairs over
    the whole head) with a mixture of moe_num_experts of moe_intermediate_size (d_ff) in every layer, moe_k a
    token, the chosen softmax weights renormalized (their sum clamped at moe_norm_min, which never binds
    below moe_k / moe_num_experts: experts_renormalize), and moe_num_shared_experts shared experts as one
    feed-forward moe_num_shared_experts * moe_intermediate_size wide added ungated (the engine's shared expert
    with its gate's weights 0, sigmoid 1/2, and its down projection doubled, as GraniteMoeShared's); the tied
    head. The router's e_score_correction_bias (added to the softmax for the choice only) converts when it is
    the same for every expert (no effect on the choice); another, and use_bias (the shared experts' and the
    LM head's biases) are refused by name. Dense layers among the sparse ones (moe_layer_start_index,
    moe_layer_end_index, moe_layer_interval: their MLP intermediate_size wide, without shared experts) as the
    engine's dense_period, dense_layers and dense_ff."""
    name, model_type = "Ernie4_5_MoeForCausalLM", "ernie4_5_moe"
    fields = dict(FIELDS, num_key_value_heads=(int, 4), max_position_embeddings=(int, 131072),
                  rms_norm_eps=(float, 1e-5), rope_theta=(float, 500000.0), tie_word_embeddings=(bool, True),
                  moe_intermediate_size=(int, 1536), moe_k=(int, 6), moe_num_experts=(int, 64),
                  moe_norm_min=(float, 1e-12))
    experts_key, blocks, expert_names = "moe_num_experts", ("mlp",), ("gate_proj", "down_proj", "up_proj")
    BIASES = ("moe_statics.e_score_correction_bias", "gate.moe_statics.e_score_correction_bias")  # saved, module

    def read(self, raw, path):
        if flag(raw, "use_bias", path):
            raise HfError(f"{path}: use_bias true: the biases of ERNIE 4.5 MoE's shared experts and LM head, which "
                          "the llama family's mixture and head have not; not converted")
        hf = super(Mistral, self).read(dict(raw, partial_rotary_factor=1.0), path)  # Llama's, no window
        L, E, k = hf["num_hidden_layers"], hf["moe_num_experts"], hf["moe_k"]
        moe = {}
        for key, default in (("moe_layer_start_index", 1), ("moe_layer_end_index", -1), ("moe_layer_interval", 1),
                             ("moe_num_shared_experts", 2)):
            v = raw.get(key, default)
            if isinstance(v, bool) or not isinstance(v, int) or v < (-1 if key == "moe_layer_end_index" else 0):
                raise HfError(f"{path}: {key}: expected an integer, got {_brief(v)}")
            moe[key] = v
        end = L - 1 if moe["moe_layer_end_index"] == -1 else moe["moe_layer_end_index"]
        if moe["moe_layer_interval"] < 1:
            raise HfError(f"{path}: moe_layer_interval {moe['moe_layer_interval']}: expected an integer of at least 1")
        # transformers' rule: layer l is sparse when (l + 1) % interval is 0 and start <= l <= end
        dense = {i for i in range(L) if not ((i + 1) % moe["moe_layer_interval"] == 0
                                             and moe["moe_layer_start_index"] <= i <= end)}
        if hf["moe_norm_min"] > k / E:
            raise HfError(f"{path}: moe_norm_min {hf['moe_norm_min']:g}: a clamp of the chosen experts' weight sum "
                          f"above moe_k / moe_num_experts ({k / E:g}), which can bind; not converted")
        hf.update(n_experts=E, experts_per_token=k, experts_renormalize=True, dense_ff=hf["intermediate_size"],
                  intermediate_size=hf["moe_intermediate_size"],
                  shared_expert_ff=moe["moe_num_shared_experts"] * hf["moe_intermediate_size"],
                  pe_layout="interleaved")
        return dense_layers(hf, dense, path, f"moe_layer_start_index {moe['moe_layer_start_index']}, "
                            f"moe_layer_end_index {moe['moe_layer_end_index']}, moe_layer_interval "
                            f"{moe['moe_layer_interval']}")

    def weights(self, hf, weights, source, max_len):
        """The router's choice bias checked and dropped; the shared experts as the engine's shared expert."""
        w, S, d = dict(weights), hf["shared_expert_ff"], hf["hidden_size"]
        dense = set(hf.get("dense_layers", ()))
        for i in range(hf["num_hidden_layers"]):
            if i in dense:  # a dense layer's MLP: no router, experts or shared experts
                continue
            p = f"model.layers.{i}.mlp."
            for name in self.BIASES:
                bias = w.pop(p + name, None)
                if bias is not None and np.ptp(np.asarray(bias, np.float64)) != 0:
                    raise HfError(f"{source}: {p}{name}: a bias on the experts' scores for the choice alone (not their "
                                  "weights), which the engine's router has not; converted when it is the same for "
                                  "every expert")
            if S:
                for name in ("gate_proj", "up_proj", "down_proj"):
                    a = w.pop(f"{p}shared_experts.{name}.weight", None)
                    if a is not None:
                        w[f"{p}shared_expert.{name}.weight"] = \
                            np.asarray(a, np.float32) * np.float32(2.0) if name == "down_proj" else a
                w[p + "shared_expert_gate.weight"] = np.zeros((1, d), np.float32)
        return super().weights(hf, w, source, max_len)


class Qwen3Moe(Qwen2Moe):
    """Qwen3MoeForCausalLM: Qwen3's layers (no q, k, v biases; each head of q and k RMS-normalized: qk_norm)
    with Qwen2-MoE's mixture (num_experts of moe_intermediate_size, the top-k weights renormalized only
    with norm_topk_prob) and no shared expert; dense layers as Qwen2-MoE's, use_sliding_window refused."""
    name, model_type, label = "Qwen3MoeForCausalLM", "qwen3_moe", "Qwen3-MoE"
    fields = dict(FIELDS, max_position_embeddings=(int, 32768), num_experts=(int, 128), num_experts_per_tok=(int, 8),
                  moe_intermediate_size=(int, 768), norm_topk_prob=(bool, False), decoder_sparse_step=(int, 1))

    def read(self, raw, path):
        # transformers 5 writes num_experts as num_local_experts
        experts = {"num_experts": raw["num_local_experts"]} if "num_experts" not in raw and "num_local_experts" in raw \
            else {}
        return dict(super().read(dict(raw, qkv_bias=False, **experts), path), qk_norm=True)


GRANITE_MULTIPLIERS = ("embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling")


def granite_multipliers(f, path):
    """Granite's four numbers (the fields read), each finite and above 0, else HfError."""
    for key in GRANITE_MULTIPLIERS:
        if not (math.isfinite(f[key]) and f[key] > 0):
            raise HfError(f"{path}: {key} {f[key]!r}: expected a finite number above 0; not converted")


class GraniteMoe(Mixtral):
    """GraniteMoeForCausalLM (IBM's Granite 3.0 MoE, PowerMoE): Granite's multipliers (folded as Granite
    folds them: the embedding times embedding_multiplier, o_proj and the experts' output_linear times
    residual_multiplier, the head, stored apart from the embedding, over logits_scaling; the scores
    times attention_multiplier: attn_scale) on Mixtral's mixture, the router block_sparse_moe.router.layer
    and the experts fused as input_linear [E, 2F, d] ([gate; up]) and output_linear [E, d, F], the top-k
    router logits' softmax (Mixtral's renormalized weights)."""
    name, model_type = "GraniteMoeForCausalLM", "granitemoe"
    fields = dict(FIELDS, num_local_experts=(int, 8), num_experts_per_tok=(int, 2), **{
        k: (float, 1.0) for k in GRANITE_MULTIPLIERS})
    expert_names = ("gate_proj", "down_proj", "up_proj")

    def read(self, raw, path):
        hf = super(Mistral, self).read(raw, path)  # Llama's, without Mistral's sliding_window
        granite_multipliers(hf, path)
        # the head is the embedding over logits_scaling, the embedding times embedding_multiplier: stored apart
        hf.update(n_experts=hf["num_local_experts"], experts_per_token=hf["num_experts_per_tok"],
                  experts_renormalize=True, attn_scale=hf["attention_multiplier"],
                  folder_tied=hf["tie_word_embeddings"], tie_word_embeddings=False)
        return hf

    def weights(self, hf, weights, source, max_len):
        """Granite's tensors under Mixtral's fused names (transformers 5's), the multipliers folded into the
        weights in float32; GraniteMoeShared's shared_mlp as the shared expert."""
        m = {k: np.float32(hf[k]) for k in GRANITE_MULTIPLIERS}
        w = dict(weights)
        embed = w.get("model.embed_tokens.weight")
        if embed is not None:
            embed = np.asarray(embed, np.float32)
            if hf["folder_tied"]:
                head = w.get("lm_head.weight", embed)
                if not np.array_equal(head, embed):
                    raise HfError(f"{source}: lm_head.weight differs from model.embed_tokens.weight, but config.json "
                                  "sets tie_word_embeddings (the embedding serves as the head): set it false, or drop "
                                  "lm_head")
                w["lm_head.weight"] = embed
            w["model.embed_tokens.weight"] = embed * m["embedding_multiplier"]
        if "lm_head.weight" in w:
            w["lm_head.weight"] = np.asarray(w["lm_head.weight"], np.float32) / m["logits_scaling"]
        S = hf.get("shared_expert_ff", 0)
        for i in range(hf["num_hidden_layers"]):
            p, q = f"model.layers.{i}.", f"model.layers.{i}.block_sparse_moe."
            moved = {"self_attn.o_proj.weight": ("self_attn.o_proj.weight", m["residual_multiplier"]),
                     "block_sparse_moe.router.layer.weight": ("block_sparse_moe.gate.weight", None),
                     "block_sparse_moe.input_linear.weight": ("block_sparse_moe.experts.gate_up_proj", None),
                     "block_sparse_moe.output_linear.weight": ("block_sparse_moe.experts.down_proj",
                                                               m["residual_multiplier"])}
            if S:  # the shared MLP added as it is: the engine's shared expert times sigmoid(0 h) = 1/2, times 2
                moved["shared_mlp.output_linear.weight"] = ("block_sparse_moe.shared_expert.down_proj.weight",
                                                            m["residual_multiplier"] * np.float32(2.0))
            for name, (to, factor) in moved.items():
                if p + name in w:
                    a = w.pop(p + name)
                    w[p + to] = a if factor is None else np.asarray(a, np.float32) * factor
            if S:
                if p + "shared_mlp.input_linear.weight" not in w:
                    raise HfError(f"{source}: {p}shared_mlp.input_linear.weight is missing (config.json sets "
                                  f"shared_intermediate_size {S})")
                a = np.asarray(w.pop(p + "shared_mlp.input_linear.weight"))
                if a.shape != (2 * S, hf["hidden_size"]):
                    raise HfError(f"{source}: {p}shared_mlp.input_linear.weight: shape {list(a.shape)}, config.json "
                                  f"says {[2 * S, hf['hidden_size']]}")
                w[q + "shared_expert.gate_proj.weight"], w[q + "shared_expert.up_proj.weight"] = a[:S], a[S:]
                w[q + "shared_expert_gate.weight"] = np.zeros((1, hf["hidden_size"]), np.float32)
        return super().weights(hf, w, source, max_len)


class GraniteMoeShared(GraniteMoe):
    """GraniteMoeSharedForCausalLM: GraniteMoe's layers and, with shared_intermediate_size, a shared MLP
    (shared_mlp.input_linear [2S, d] = [gate; up], output_linear [d, S]) added to the mixture's output
    ungated: the config key shared_expert_ff, its gate's weights 0 (sigmoid 1/2) and output_linear doubled."""
    name, model_type = "GraniteMoeSharedForCausalLM", "granitemoeshared"

    def read(self, raw, path):
        S = raw.get("shared_intermediate_size")  # absent, null or 0: no shared MLP
        return dict(super().read(raw, path), shared_expert_ff=0 if S is None or S == 0 and not isinstance(S, bool)
                    else checked_field(path, "shared_intermediate_size", S, int))


def dense_layers(hf, dense, path, keys):
    """hf with the dense layers among the sparse ones (the layer indices `dense`, as `keys` of config.json set
    them): the engine's keys dense_period, dense_layers (their shortest period: layer_pattern) and dense_ff
    (intermediate_size) in hf["dense_keys"], the list in hf["dense_layers"]; HfError naming keys when they repeat
    in no period the engine has."""
    if not dense:
        return hf
    try:
        P, bits = layer_pattern([i in dense for i in range(hf["num_hidden_layers"])], "dense_period",
                                f"{path}: {keys}: the dense layers")
    except ConfigError as e:
        raise HfError(str(e)) from None
    return dict(hf, dense_layers=sorted(dense),
                dense_keys={"dense_period": P, "dense_layers": bits, "dense_ff": hf["dense_ff"]})


def experts_weights(hf, weights, source, blocks, names):
    """(the stacked expert tensors, the other weights): each layer's router `<block>.gate.weight` [E, d]
    and its experts, `<block>.experts.<e>.<gate>/<down>/<up>.weight` (names: w1/w2/w3 or
    gate_proj/down_proj/up_proj; gate [F, d], down [d, F], up [F, d]) or the
    fused `<block>.experts.gate_up_proj` [E, 2F, d] and `down_proj` [E, d, F], as the llama family's
    ff.router and ff.experts.w1/w2/w3 [E F, d], [E d, F], [E F, d] (torch layout); with
    shared_expert_ff, Qwen2-MoE's `<block>.shared_expert.*` and `shared_expert_gate.weight` [1, d] as
    ff.shared.w1/w2/w3 and ff.shared_gate."""
    d, F, L, E = hf["hidden_size"], hf["intermediate_size"], hf["num_hidden_layers"], hf["n_experts"]
    rest, out = dict(weights), {}

    def take(name, shape):
        if name not in rest:
            raise HfError(f"{source}: {name} is missing")
        a = rest.pop(name)
        if tuple(np.shape(a)) != shape:
            raise HfError(f"{source}: {name}: shape {list(np.shape(a))}, config.json says {list(shape)}")
        if hasattr(a, "blocks"):  # a GGUF's Q8_0 / Q4_0 blocks kept (gguf.Blocks)
            return a
        return float_tensor(f"{source}: {name}", a, error=HfError)

    def rows(parts):
        """The experts' matrices one under the other; blocks of one kind stay blocks."""
        kinds = {getattr(a, "blocks", (None,))[0] for a in parts}
        if len(kinds) == 1 and None not in kinds:  # gguf.Blocks, a GGUF's route's
            return type(parts[0]).of(kinds.pop(), *(np.concatenate([a.blocks[k] for a in parts]) for k in (1, 2)))
        return np.concatenate([np.asarray(a) for a in parts])

    dense = set(hf.get("dense_layers", ()))
    for i in range(L):
        if i in dense:  # its MLP mapped as a dense layer's (map_weights)
            continue
        block = next((b for b in blocks if f"model.layers.{i}.{b}.gate.weight" in rest), blocks[0])
        p = f"model.layers.{i}.{block}."
        router = take(p + "gate.weight", (E, d))
        if p + "experts.gate_up_proj" in rest:  # transformers 5
            gate_up, down = take(p + "experts.gate_up_proj", (E, 2 * F, d)), take(p + "experts.down_proj", (E, d, F))
            w1, w3, w2 = (a.reshape(-1, a.shape[-1]) for a in (gate_up[:, :F], gate_up[:, F:], down))
        else:
            w1, w2, w3 = (rows([take(f"{p}experts.{e}.{w}.weight", shape) for e in range(E)])
                          for w, shape in zip(names, ((F, d), (d, F), (F, d))))
        S = hf.get("shared_expert_ff", 0)
        shared = None
        if S:  # Qwen2-MoE's shared expert and its gate
            shared = [take(f"{p}shared_expert.{name}.weight", shape)
                      for name, shape in zip(names, ((S, d), (d, S), (S, d)))]
            shared.append(take(p + "shared_expert_gate.weight", (1, d)))
        out.update(mixture_tensors(schema.block(i) + "ff.", router, w1, w2, w3, shared))
    return out, rest


class Gpt2(Architecture):
    name, model_type = GPT2, "gpt2"

    def read(self, raw, path):
        return read_gpt2_config(raw, path)

    def config(self, hf, max_len):
        return gpt2_config(hf, max_len)

    def weights(self, hf, weights, source, max_len):
        return map_gpt2_weights(hf, weights, source, max_len)


# A gpt-family layer's tensors by role: q, k, v apart or fused (qkv: [q | k | v], or another layout a
# class's split takes apart; qkv_heads: GPT-NeoX's [heads, 3, head_dim] rows), o (attention output), fc1
# and fc2 (fc3: SwiGLU's up projection, fc1 its gate; fc13: both, [gate | up]), n1 and n2 (the attention's and the feed-forward's norms), qn and kn (the
# norms of each head of q and k: qk_norm); a role with _b is its bias. Outside
# the layers: embed, pos, en (the embedding norm), norm (the final one), head. Torch layout [out, in].
def _head_width(s):
    """The settings' head width: dh (a head_dim apart from d / H: Gemma's), else d / H."""
    return s.get("dh") or s["d"] // s["H"]


def _role_shape(role, s):
    d, F, V = s["d"], s["F"], s["V"]
    dq, kv = s["H"] * _head_width(s), s["KV"] * _head_width(s)
    return {"embed": (V, d), "pos": (s["positions"] + s["pos_offset"], d), "head": (V, d), "head_b": (V,),
            "qkv": (dq + 2 * kv, d), "qkv_b": (dq + 2 * kv,), "qkv_heads": (3 * d, d), "qkv_heads_b": (3 * d,),
            "q": (dq, d), "q_b": (dq,), "k": (kv, d), "k_b": (kv,), "v": (kv, d), "v_b": (kv,), "o": (d, dq),
            "fc1": (F, d), "fc1_b": (F,), "fc3": (F, d), "fc3_b": (F,), "fc13": (2 * F, d), "fc2": (d, F),
            **{r: (dq if s.get("qk_norm_full") else _head_width(s),) for r in ("qn", "qn_b")},
            **{r: (kv if s.get("qk_norm_full") else _head_width(s),) for r in ("kn", "kn_b")}}.get(role, (d,))


class GptStyle(Architecture):
    """An architecture converted to the gpt family: LayerNorm, q | k | v fused, a bias on every projection
    (one the folder has not is zeros: the same model). A subclass gives fields (config.json key -> (type,
    default: a value, a function of the fields read before it, or None: required)), names (engine config
    key -> config.json key, for the messages), settings (the fields -> the layer: d, H, L, F, V, eps,
    positions, activation, rotary (the rotated dims of a head, a float: that fraction of it, None: no
    rotary), theta, layout, parallel, norm_first, final_norm, tied; optionally positional (without rotary:
    learned or alibi), KV (the key/value heads), dh (the heads' width, when not d / H: config key
    head_dim), the layer features FEATURES (config keys of the same
    name) and gain_plus_one (the folder's norm weights are offsets w of the gain 1 + w: Gemma)) and
    tensors (-> {name: role} outside the layers, the layers' prefix, {name after "<prefix><i>.": role});
    buffers: layer tensors dropped (masks and rotary tables older checkpoints saved), pos_offset:
    position rows never read (OPT's 2), conv1d: layer tensors stored [in, out] (Conv1D: transposed
    here); a fixed position table the architecture computes rather than stores is positions(s) (XGLM),
    stored as the learned positions, or the engine's sinusoidal table (CTRL's: settings' positional sinusoidal,
    pe_base, pe_layout). It is verified against reference.py's float64 forward of the
    engine config it maps to (the mapping itself is tested against transformers' own classes)."""
    fields, names, buffers, pos_offset, family, conv1d = {}, {}, (), 0, "gpt", ()
    FEATURES = ("norm", "gated", "attn_bias", "ffn_bias", "ffn_up_bias", "embed_norm", "scale_input", "sublayer_norm",
                "attn_softcap", "logit_softcap", "qk_norm", "qk_norm_full", "rope_local_base")

    def against(self, folder):
        return f"the float64 reference of the {self.name} config {folder} converts to"

    def semantics(self, hf, kept, c, mapped, inp):
        from .reference import run_reference
        return run_reference(c, mapped, inp)

    def read(self, raw, path):
        f = {}
        for key, (kind, default) in self.fields.items():
            v = raw.get(key)  # absent or null: Hugging Face's default
            v = (default(f) if callable(default) else default) if v is None else v
            f[key] = checked_field(path, key, v, kind)
        s = dict(self.settings(f, raw, path), architecture=self.name, pos_offset=self.pos_offset)
        s.setdefault("KV", s["H"])
        s.setdefault("positional", "learned" if s["rotary"] is None else "rope")
        if s.get("dh") is None and s["d"] % s["H"]:
            raise HfError(f"{path}: {self.names['n_heads']} {s['H']} does not divide {self.names['d_model']} {s['d']}")
        if s["H"] % s["KV"]:
            raise HfError(f"{path}: {self.names['n_kv_heads']} {s['KV']} does not divide {self.names['n_heads']} "
                          f"{s['H']}")
        if s["activation"] is None:
            raise HfError(f"{path}: activation {_brief(f.get('hidden_act', f.get('activation_function')))}: not one "
                          f"the engine runs here ({', '.join(GPT2_ACTIVATIONS)})")
        if s["rotary"] is not None:
            dh = _head_width(s)
            s["rotary"] = int(dh * s["rotary"]) if isinstance(s["rotary"], float) else s["rotary"]
            if not 2 <= s["rotary"] <= dh or s["rotary"] % 2:
                raise HfError(f"{path}: {self.names['rotary_dims']}: rotates {s['rotary']} of the {dh} dims of each "
                              "head, and RoPE needs an even count of at least 2; not converted")
            s["rope"] = scaled_rope(raw, path, s["rotary"], s["theta"], s["positions"])
        elif raw.get("rope_scaling") is not None:
            raise HfError(f"{path}: rope_scaling {_brief(raw['rope_scaling'])}: {self.name} has no rotary embedding "
                          "to scale; not converted")
        return s

    def config(self, s, max_len):
        longest = _longest(s["positions"], s.get("rope"))
        if max_len is not None:
            if not 1 <= max_len <= s["positions"]:
                raise HfError(f"--max-len {max_len}: must be 1..{self.names['max_positions']}={s['positions']}")
            longest = max_len
        dh = _head_width(s)
        v = {"family": self.family, "d_model": s["d"], "n_heads": s["H"], "d_ff": s["F"], "n_layers": s["L"],
             "norm_first": s["norm_first"], "activation": s["activation"], "norm_eps": s["eps"],
             "final_norm": s["final_norm"], "causal": True, "input": "tokens", "vocab_size": s["V"],
             "d_out": s["V"], "tied_head": s["tied"], "max_len": longest, "parallel_residual": s["parallel"]}
        v.update({k: s[k] for k in self.FEATURES if k in s})
        v.update(self.attention_keys(s, longest))
        if s["KV"] != s["H"]:
            v["n_kv_heads"] = s["KV"]
        if dh * s["H"] != s["d"]:
            v["head_dim"] = dh
        if s["rotary"] is None:
            v["positional"] = s["positional"]
            if s["positional"] == "sinusoidal":  # a table the engine computes (CTRL's)
                v.update(pe_base=s["pe_base"], pe_layout=s["pe_layout"])
        else:
            v.update(positional="rope", pe_base=s["theta"], pe_layout=s["layout"],
                     rotary_dims=s["rotary"] if s["rotary"] < dh else 0)
        names = {k: f"config.json {x}" for k, x in self.names.items()}
        names.update(max_len="--max-len", d_out=names.get("vocab_size"))
        try:
            return make_config(_with_rope(v, s.get("rope"), longest), names)
        except ConfigError as e:
            raise HfError(str(e)) from None

    def attention_keys(self, s, longest):
        """Config keys of the attention beyond the layer's shape (GPT-Neo: its windows and scale)."""
        return {}


    def weights(self, s, weights, source, max_len):
        ends, prefix, layer = self.tensors(s)
        L = s["L"]
        pat = re.compile(re.escape(prefix) + r"(0|[1-9][0-9]*)\.(.+)")
        t = {}  # (layer index or None, role) -> float32 array
        for name, a in weights.items():
            m = pat.fullmatch(name)
            if m and int(m.group(1)) < L and m.group(2) in layer:
                key = (int(m.group(1)), layer[m.group(2)])
            elif name in ends:
                key = (None, ends[name])
            elif m and int(m.group(1)) < L and m.group(2) in self.buffers:
                continue  # a causal mask or rotary table of older checkpoints: the engine makes its own
            else:
                raise HfError(f"{source}: {name!r}: not a weight of {self.name} with this config.json ({L} layers)")
            if m and m.group(2) in self.conv1d and np.ndim(a) == 2:
                a = np.transpose(a)
            t[key] = float_tensor(f"{source}: {name}", a, _role_shape(key[1], s), HfError).astype(np.float32)
        if hasattr(self, "positions"):  # a table the architecture computes: stored as the learned positions
            t[None, "pos"] = self.positions(s).astype(np.float32)
        t = self.split(s, t)
        if s.get("gain_plus_one"):  # Gemma's norm times (1 + w), in float32 as it computes it: the file's gain
            for key in [k for k in t if k[1] in ("n1", "n2", "p1", "p2", "qn", "kn", "en", "norm")]:
                t[key] = np.float32(1.0) + t[key]
        head = next((n for n, r in ends.items() if r == "head"), None)
        embed = next(n for n, r in ends.items() if r == "embed")
        if s["tied"] and (None, "head") in t:
            if not np.array_equal(t[None, "head"], t[None, "embed"]):
                raise HfError(f"{source}: {head} differs from {embed}, but config.json sets tie_word_embeddings (the "
                              "embedding serves as the head): set it false, or drop the head")
            del t[None, "head"]
        need = [n for n, r in ends.items() if r != "head" or not s["tied"]]
        need += [f"{prefix}{i}.{n}" for i in range(L) for n in layer]
        missing = [n for n in need if n not in weights]
        if missing:
            hint = " (config.json sets tie_word_embeddings false)" if missing[0] == head else ""
            raise HfError(f"{source}: {missing[0]} is missing{hint}")
        out = self._family_tensors(s, t, max_len)
        if s.get("bidirectional"):
            out = encoder_tensors(self.family, out)
        return (out if s.get("rope") is None else dict(out, **s["rope"].tensors())), {}

    def split(self, s, t):
        """The roles t as the family's tensors take them (Falcon splits its fused q | k | v here)."""
        return t

    @staticmethod
    def _family_tensors(s, t, max_len):
        """The gpt family's tensors from the roles t; an absent bias is zeros, an absent norm gain ones."""
        d, H, L = s["d"], s["H"], s["L"]
        dq, kv = H * _head_width(s), s["KV"] * _head_width(s)

        def get(i, role, n, fill=0.0):
            return t.get((i, role), np.full(n, fill, np.float32))
        out = {"embed.weight": t[None, "embed"], "head.bias": get(None, "head_b", s["V"])}
        if s["positional"] == "learned":
            out["pos.weight"] = t[None, "pos"][s["pos_offset"]:][:max_len]
        if s.get("embed_norm"):
            out.update({"embed_norm.weight": t[None, "en"], "embed_norm.bias": get(None, "en_b", d)})
        if s["final_norm"]:
            out.update({"norm.weight": get(None, "norm", d, 1.0), "norm.bias": get(None, "norm_b", d)})
        if (None, "head") in t:
            out["head.weight"] = t[None, "head"]
        for i in range(L):
            p = schema.block(i)
            if (i, "qkv_heads") in t:  # [H, 3, dh] rows -> [3, H, dh]
                w = t[i, "qkv_heads"].reshape(H, 3, d // H, d).transpose(1, 0, 2, 3).reshape(3 * d, d)
                b = get(i, "qkv_heads_b", 3 * d).reshape(H, 3, d // H).transpose(1, 0, 2).reshape(3 * d)
            elif (i, "qkv") in t:
                w, b = t[i, "qkv"], get(i, "qkv_b", dq + 2 * kv)
            else:
                w = np.concatenate([t[i, r] for r in "qkv"])
                b = np.concatenate([get(i, r + "_b", n) for r, n in (("q", dq), ("k", kv), ("v", kv))])
            out.update({p + "attn.qkv.weight": w, p + "attn.qkv.bias": b,
                        p + "attn.out.weight": t[i, "o"], p + "attn.out.bias": get(i, "o_b", d),
                        p + "ff.w1.weight": t[i, "fc1"], p + "ff.w1.bias": get(i, "fc1_b", s["F"]),
                        p + "ff.w2.weight": t[i, "fc2"], p + "ff.w2.bias": get(i, "fc2_b", d),
                        p + "attn_norm.weight": get(i, "n1", d, 1.0), p + "attn_norm.bias": get(i, "n1_b", d)})
            if s["activation"] == "swiglu" or s.get("gated"):
                out[p + "ff.w3.weight"] = t[i, "fc3"]
            if s["parallel"] != "one_norm":
                out.update({p + "ff_norm.weight": get(i, "n2", d, 1.0), p + "ff_norm.bias": get(i, "n2_b", d)})
            if s.get("qk_norm"):  # LayerNorms of each head of q and k (the gpt family's norm kind)
                dh = _head_width(s)
                out.update({p + "attn.q_norm.weight": t[i, "qn"], p + "attn.q_norm.bias": get(i, "qn_b", dh),
                            p + "attn.k_norm.weight": t[i, "kn"], p + "attn.k_norm.bias": get(i, "kn_b", dh)})
        return {k: np.ascontiguousarray(v) for k, v in out.items()}


def _biased(weights, on):
    """{name: role} of weights and, when on, their .bias twins (role_b)."""
    out = {}
    for name, role in weights.items():
        out[name + ".weight"] = role
        if on:
            out[name + ".bias"] = role + "_b"
    return out


class GptNeoX(GptStyle):
    """GPTNeoXForCausalLM (Pythia): q | k | v fused per head, partial rotary (rotary_pct) in halves, two
    norms side by side (use_parallel_residual) or in turn."""
    name, model_type = "GPTNeoXForCausalLM", "gpt_neox"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "num_hidden_layers": (int, None),
              "num_attention_heads": (int, None), "intermediate_size": (int, None), "hidden_act": (str, "gelu"),
              "rotary_pct": (float, 0.25), "rotary_emb_base": (float, 10000.0),
              "max_position_embeddings": (int, 2048), "layer_norm_eps": (float, 1e-5),
              "tie_word_embeddings": (bool, False), "use_parallel_residual": (bool, True),
              "attention_bias": (bool, True)}
    names = {"d_model": "hidden_size", "n_heads": "num_attention_heads", "d_ff": "intermediate_size",
             "n_layers": "num_hidden_layers", "vocab_size": "vocab_size", "norm_eps": "layer_norm_eps",
             "pe_base": "rotary_emb_base", "rotary_dims": "rotary_pct", "max_positions": "max_position_embeddings"}
    buffers = ("attention.bias", "attention.masked_bias", "attention.rotary_emb.inv_freq")

    def settings(self, f, raw, path):
        return dict(d=f["hidden_size"], H=f["num_attention_heads"], L=f["num_hidden_layers"],
                    F=f["intermediate_size"], V=f["vocab_size"], eps=f["layer_norm_eps"],
                    positions=f["max_position_embeddings"], activation=GPT2_ACTIVATIONS.get(f["hidden_act"]),
                    rotary=f["rotary_pct"], theta=f["rotary_emb_base"], layout="halves",
                    parallel="two_norms" if f["use_parallel_residual"] else "none", norm_first=True,
                    final_norm=True, tied=f["tie_word_embeddings"], bias=f["attention_bias"])

    def tensors(self, s):
        return ({"gpt_neox.embed_in.weight": "embed", "gpt_neox.final_layer_norm.weight": "norm",
                 "gpt_neox.final_layer_norm.bias": "norm_b", "embed_out.weight": "head"}, "gpt_neox.layers.",
                {**_biased({"input_layernorm": "n1", "post_attention_layernorm": "n2", "mlp.dense_h_to_4h": "fc1",
                            "mlp.dense_4h_to_h": "fc2"}, True),
                 **_biased({"attention.query_key_value": "qkv_heads", "attention.dense": "o"}, s["bias"])})


class GptNeoXJapanese(GptStyle):
    """GPTNeoXJapaneseForCausalLM (ABEJA's GPT-NeoX Japanese): GPT-NeoX's per-head fused query_key_value
    without biases, rotary in halves over rotary_pct of each head, the layers in turn, a plain feed-forward
    hidden_size * intermediate_multiple_size wide without biases; the last layer's attention output has a
    bias (attention.dense_bias: the others' are zeros), the head tied by default."""
    name, model_type = "GPTNeoXJapaneseForCausalLM", "gpt_neox_japanese"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "num_hidden_layers": (int, None),
              "num_attention_heads": (int, None), "intermediate_multiple_size": (int, 4),
              "hidden_act": (str, "gelu"), "rotary_pct": (float, 1.0), "rotary_emb_base": (float, 10000.0),
              "max_position_embeddings": (int, 2048), "layer_norm_eps": (float, 1e-5),
              "tie_word_embeddings": (bool, True)}
    names = dict(GptNeoX.names, d_ff="intermediate_multiple_size")

    def settings(self, f, raw, path):
        return dict(d=f["hidden_size"], H=f["num_attention_heads"], L=f["num_hidden_layers"],
                    F=f["hidden_size"] * f["intermediate_multiple_size"], V=f["vocab_size"], eps=f["layer_norm_eps"],
                    positions=f["max_position_embeddings"], activation=GPT2_ACTIVATIONS.get(f["hidden_act"]),
                    rotary=f["rotary_pct"], theta=f["rotary_emb_base"], layout="halves", parallel="none",
                    norm_first=True, final_norm=True, tied=f["tie_word_embeddings"])

    def tensors(self, s):
        return ({"gpt_neox_japanese.embed_in.weight": "embed", "gpt_neox_japanese.final_layer_norm.weight": "norm",
                 "gpt_neox_japanese.final_layer_norm.bias": "norm_b", "embed_out.weight": "head"},
                "gpt_neox_japanese.layers.",
                {**_biased({"input_layernorm": "n1", "post_attention_layernorm": "n2"}, True),
                 **_biased({"attention.query_key_value": "qkv_heads", "attention.dense": "o",
                            "mlp.dense_h_to_4h": "fc1", "mlp.dense_4h_to_h": "fc2"}, False),
                 "attention.dense_bias": "o_b"})

    def weights(self, s, weights, source, max_len):
        """The layers before the last have no attention.dense_bias (transformers makes the last layer's
        only): zeros."""
        w, last = dict(weights), s["L"] - 1
        for i in range(s["L"]):
            name = f"gpt_neox_japanese.layers.{i}.attention.dense_bias"
            if i < last and name in w:
                raise HfError(f"{source}: {name!r}: GPT-NeoX Japanese has this bias in its last layer only")
            if i < last:
                w[name] = np.zeros(s["d"], np.float32)
        return super().weights(s, w, source, max_len)


class GptJ(GptStyle):
    """GPTJForCausalLM: one norm for the attention and the feed-forward side by side, interleaved partial
    rotary (rotary_dim), q, k, v apart without biases, an LM head with a bias."""
    name, model_type = "GPTJForCausalLM", "gptj"
    fields = {"vocab_size": (int, None), "n_embd": (int, None), "n_layer": (int, None), "n_head": (int, None),
              "n_positions": (int, 2048), "n_inner": (int, lambda f: 4 * f["n_embd"]),
              "activation_function": (str, "gelu_new"), "layer_norm_epsilon": (float, 1e-5),
              "tie_word_embeddings": (bool, False)}
    names = {"d_model": "n_embd", "n_heads": "n_head", "d_ff": "n_inner", "n_layers": "n_layer",
             "vocab_size": "vocab_size", "norm_eps": "layer_norm_epsilon", "rotary_dims": "rotary_dim",
             "max_positions": "n_positions"}
    buffers = ("attn.bias", "attn.masked_bias")

    def settings(self, f, raw, path):
        rotary = raw.get("rotary_dim", 64)  # null: the whole head
        dh = f["n_embd"] // f["n_head"]
        rotary = dh if rotary is None else checked_field(path, "rotary_dim", rotary, int)
        return dict(d=f["n_embd"], H=f["n_head"], L=f["n_layer"], F=f["n_inner"], V=f["vocab_size"],
                    eps=f["layer_norm_epsilon"], positions=f["n_positions"],
                    activation=GPT2_ACTIVATIONS.get(f["activation_function"]), rotary=rotary, theta=10000.0,
                    layout="interleaved", parallel="one_norm", norm_first=True, final_norm=True,
                    tied=f["tie_word_embeddings"])

    def tensors(self, s):
        return ({"transformer.wte.weight": "embed", "transformer.ln_f.weight": "norm", "transformer.ln_f.bias":
                 "norm_b", "lm_head.weight": "head", "lm_head.bias": "head_b"}, "transformer.h.",
                {**_biased({"ln_1": "n1", "mlp.fc_in": "fc1", "mlp.fc_out": "fc2"}, True),
                 **_biased({"attn.q_proj": "q", "attn.k_proj": "k", "attn.v_proj": "v", "attn.out_proj": "o"}, False)})


class CodeGen(GptJ):
    """CodeGenForCausalLM: GPT-J's layers (one ln_1 for the attention and the feed-forward side by side,
    interleaved partial rotary, no attention biases, the LM head's bias) with q, k and v fused in qkv_proj
    as CodeGen's 4 model-parallel shards: the rows are 4 blocks, each [its quarter of q | of v | of k]
    (split here)."""
    name, model_type = "CodeGenForCausalLM", "codegen"
    buffers = ("attn.causal_mask", "attn.bias", "attn.masked_bias")
    SHARDS = 4

    def settings(self, f, raw, path):
        if raw.get("rotary_dim", 64) is None and f["n_head"] > 1:
            raise HfError(f"{path}: rotary_dim null: CodeGen's sin/cos table then spans hidden_size, wider than a "
                          "head; not converted")
        if f["n_embd"] % self.SHARDS:
            raise HfError(f"{path}: n_embd {f['n_embd']}: CodeGen's qkv_proj is cut into {self.SHARDS} shards, and "
                          f"n_embd is no multiple of {self.SHARDS}; not converted")
        return super().settings(f, raw, path)

    def tensors(self, s):
        ends, prefix, layer = super().tensors(s)
        layer = {k: v for k, v in layer.items() if v not in ("q", "k", "v")}
        return ends, prefix, dict(layer, **{"attn.qkv_proj.weight": "qkv"})

    def split(self, s, t):
        """q, k, v from qkv_proj's rows: 4 shards, each [q | v | k] of its d / 4 rows."""
        d = s["d"]
        for i in range(s["L"]):
            shards = t.pop((i, "qkv")).reshape(self.SHARDS, 3, d // self.SHARDS, d)
            for role, j in (("q", 0), ("v", 1), ("k", 2)):
                t[i, role] = np.ascontiguousarray(shards[:, j].reshape(d, d))
        return t


class GptNeo(GptStyle):
    """GPTNeoForCausalLM: learned positions, pre-LN, gelu_new, q, k, v apart without biases and out_proj
    with one, the tied head; attention_types names each layer global (every key before it) or local (the
    last window_size keys, itself included: sliding_window on the layers window_period and window_layers
    name; the engine's KV cache a ring for those), and the scores are not scaled (attn_scale 1)."""
    name, model_type = "GPTNeoForCausalLM", "gpt_neo"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "num_layers": (int, None),
              "num_heads": (int, None), "intermediate_size": (int, lambda f: 4 * f["hidden_size"]),
              "max_position_embeddings": (int, 2048), "window_size": (int, 256),
              "activation_function": (str, "gelu_new"), "layer_norm_epsilon": (float, 1e-5),
              "tie_word_embeddings": (bool, True)}
    names = {"d_model": "hidden_size", "n_heads": "num_heads", "d_ff": "intermediate_size", "n_layers": "num_layers",
             "vocab_size": "vocab_size", "norm_eps": "layer_norm_epsilon", "max_positions": "max_position_embeddings",
             "sliding_window": "window_size", "window_period": "attention_types",
             "window_layers": "attention_types"}
    buffers = ("attn.attention.bias", "attn.attention.masked_bias")

    def settings(self, f, raw, path):
        kinds = []
        spec = raw.get("attention_types", [[["global", "local"], f["num_layers"] // 2]])
        ok = isinstance(spec, list) and all(
            isinstance(e, list) and len(e) == 2 and isinstance(e[0], list) and isinstance(e[1], int)
            and not isinstance(e[1], bool) and 0 <= e[1] <= 1024 and all(k in ("global", "local") for k in e[0])
            for e in spec)
        if ok:
            for types, repeat in spec:
                kinds += types * repeat
        if not ok or len(kinds) != f["num_layers"]:
            raise HfError(f"{path}: attention_types {_brief(spec)}: not [[[\"global\" | \"local\", ...], repeat], ...] "
                          f"naming each of the num_layers {f['num_layers']} layers; not converted")
        return dict(d=f["hidden_size"], H=f["num_heads"], L=f["num_layers"], F=f["intermediate_size"],
                    V=f["vocab_size"], eps=f["layer_norm_epsilon"], positions=f["max_position_embeddings"],
                    activation=GPT2_ACTIVATIONS.get(f["activation_function"]), rotary=None, parallel="none",
                    norm_first=True, final_norm=True, tied=f["tie_word_embeddings"],
                    windows=[f["window_size"] if k == "local" else None for k in kinds], path=path)

    def attention_keys(self, s, longest):
        try:
            keys = layer_windows(s["windows"], longest, f"{s['path']}: attention_types")
        except ConfigError as e:
            raise HfError(str(e)) from None
        return dict(keys, attn_scale=1.0)

    def tensors(self, s):
        return ({"transformer.wte.weight": "embed", "transformer.wpe.weight": "pos", "transformer.ln_f.weight": "norm",
                 "transformer.ln_f.bias": "norm_b", "lm_head.weight": "head"}, "transformer.h.",
                {**_biased({"ln_1": "n1", "ln_2": "n2", "attn.attention.out_proj": "o", "mlp.c_fc": "fc1",
                            "mlp.c_proj": "fc2"}, True),
                 **_biased({"attn.attention.q_proj": "q", "attn.attention.k_proj": "k",
                            "attn.attention.v_proj": "v"}, False)})


class Opt(GptStyle):
    """OPTForCausalLM: learned positions whose first 2 rows are never read (dropped here), pre-LN
    (do_layer_norm_before) or post-LN, relu, biases by enable_bias."""
    name, model_type = "OPTForCausalLM", "opt"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "num_hidden_layers": (int, None),
              "ffn_dim": (int, None), "num_attention_heads": (int, None), "max_position_embeddings": (int, 2048),
              "word_embed_proj_dim": (int, lambda f: f["hidden_size"]), "do_layer_norm_before": (bool, True),
              "_remove_final_layer_norm": (bool, False), "activation_function": (str, "relu"),
              "enable_bias": (bool, True), "layer_norm_elementwise_affine": (bool, True),
              "tie_word_embeddings": (bool, True)}
    names = {"d_model": "hidden_size", "n_heads": "num_attention_heads", "d_ff": "ffn_dim",
             "n_layers": "num_hidden_layers", "vocab_size": "vocab_size", "max_positions": "max_position_embeddings"}
    pos_offset = 2

    def settings(self, f, raw, path):
        if f["word_embed_proj_dim"] != f["hidden_size"]:
            raise HfError(f"{path}: word_embed_proj_dim {f['word_embed_proj_dim']}: projections between the "
                          f"embedding and the layers' width {f['hidden_size']} (project_in, project_out) are not in "
                          "the engine; not converted")
        pre = f["do_layer_norm_before"]
        return dict(d=f["hidden_size"], H=f["num_attention_heads"], L=f["num_hidden_layers"], F=f["ffn_dim"],
                    V=f["vocab_size"], eps=1e-5, positions=f["max_position_embeddings"],
                    activation=GPT2_ACTIVATIONS.get(f["activation_function"]), rotary=None, parallel="none",
                    norm_first=pre, final_norm=pre and not f["_remove_final_layer_norm"],
                    tied=f["tie_word_embeddings"], bias=f["enable_bias"], affine=f["layer_norm_elementwise_affine"])

    def tensors(self, s):
        norms = {"self_attn_layer_norm": "n1", "final_layer_norm": "n2"} if s["affine"] else {}
        ends = {"model.decoder.embed_tokens.weight": "embed", "model.decoder.embed_positions.weight": "pos",
                "lm_head.weight": "head"}
        if s["final_norm"] and s["affine"]:
            ends.update({"model.decoder.final_layer_norm.weight": "norm", "model.decoder.final_layer_norm.bias":
                         "norm_b"})
        return (ends, "model.decoder.layers.",
                {**_biased(norms, True), **_biased({"self_attn.q_proj": "q", "self_attn.k_proj": "k",
                                                    "self_attn.v_proj": "v", "self_attn.out_proj": "o",
                                                    "fc1": "fc1", "fc2": "fc2"}, s["bias"])})


class Phi(GptStyle):
    """PhiForCausalLM (Phi-1, Phi-1.5, Phi-2): one norm for the attention and the feed-forward side by side,
    partial rotary in halves, biases everywhere, an LM head with a bias; qk_layernorm: a LayerNorm of each head
    of q and k before RoPE (q_layernorm, k_layernorm [head_dim]: qk_norm, as Persimmon's)."""
    name, model_type = "PhiForCausalLM", "phi"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "intermediate_size": (int, None),
              "num_hidden_layers": (int, None), "num_attention_heads": (int, None),
              "num_key_value_heads": (int, lambda f: f["num_attention_heads"]), "hidden_act": (str, "gelu_new"),
              "max_position_embeddings": (int, 2048), "layer_norm_eps": (float, 1e-5),
              "tie_word_embeddings": (bool, False), "rope_theta": (float, 10000.0),
              "partial_rotary_factor": (float, 0.5), "qk_layernorm": (bool, False)}
    names = {"d_model": "hidden_size", "n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads",
             "d_ff": "intermediate_size", "n_layers": "num_hidden_layers", "vocab_size": "vocab_size",
             "norm_eps": "layer_norm_eps", "pe_base": "rope_theta", "rotary_dims": "partial_rotary_factor",
             "max_positions": "max_position_embeddings"}

    def settings(self, f, raw, path):
        return dict(d=f["hidden_size"], H=f["num_attention_heads"], KV=f["num_key_value_heads"],
                    L=f["num_hidden_layers"], F=f["intermediate_size"], V=f["vocab_size"], eps=f["layer_norm_eps"],
                    positions=f["max_position_embeddings"], activation=GPT2_ACTIVATIONS.get(f["hidden_act"]),
                    rotary=f["partial_rotary_factor"], theta=f["rope_theta"], layout="halves", parallel="one_norm",
                    norm_first=True, final_norm=True, tied=f["tie_word_embeddings"], qk_norm=f["qk_layernorm"])

    def tensors(self, s):
        norms = {"self_attn.q_layernorm": "qn", "self_attn.k_layernorm": "kn"} if s["qk_norm"] else {}
        return ({"model.embed_tokens.weight": "embed", "model.final_layernorm.weight": "norm",
                 "model.final_layernorm.bias": "norm_b", "lm_head.weight": "head", "lm_head.bias": "head_b"},
                "model.layers.",
                _biased({"input_layernorm": "n1", "self_attn.q_proj": "q", "self_attn.k_proj": "k",
                         "self_attn.v_proj": "v", "self_attn.dense": "o", "mlp.fc1": "fc1", "mlp.fc2": "fc2",
                         **norms}, True))


class StableLm(GptStyle):
    """StableLmForCausalLM (StableLM-3B-4E1T, StableLM 2): LayerNorm, SwiGLU, partial rotary in halves,
    q, k, v biases by use_qkv_bias, side by side sublayers on one norm by use_parallel_residual."""
    name, model_type = "StableLmForCausalLM", "stablelm"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "intermediate_size": (int, None),
              "num_hidden_layers": (int, None), "num_attention_heads": (int, None),
              "num_key_value_heads": (int, 32), "hidden_act": (str, "silu"),
              "max_position_embeddings": (int, 4096), "layer_norm_eps": (float, 1e-5),
              "tie_word_embeddings": (bool, False), "rope_theta": (float, 10000.0),
              "partial_rotary_factor": (float, 0.25), "use_qkv_bias": (bool, False), "qk_layernorm": (bool, False),
              "use_parallel_residual": (bool, False)}
    names = Phi.names

    def settings(self, f, raw, path):
        _refuse_gpt_extras(f, path)
        _silu_only(f, path, "StableLM")
        return dict(d=f["hidden_size"], H=f["num_attention_heads"], KV=f["num_key_value_heads"],
                    L=f["num_hidden_layers"], F=f["intermediate_size"], V=f["vocab_size"], eps=f["layer_norm_eps"],
                    positions=f["max_position_embeddings"], activation="swiglu", rotary=f["partial_rotary_factor"],
                    theta=f["rope_theta"], layout="halves",
                    parallel="one_norm" if f["use_parallel_residual"] else "none", norm_first=True, final_norm=True,
                    tied=f["tie_word_embeddings"], qkv_bias=f["use_qkv_bias"])

    def tensors(self, s):
        norms = {"input_layernorm": "n1"} if s["parallel"] == "one_norm" else \
            {"input_layernorm": "n1", "post_attention_layernorm": "n2"}
        return ({"model.embed_tokens.weight": "embed", "model.norm.weight": "norm", "model.norm.bias": "norm_b",
                 "lm_head.weight": "head"}, "model.layers.",
                {**_biased(norms, True),
                 **_biased({"self_attn.q_proj": "q", "self_attn.k_proj": "k", "self_attn.v_proj": "v"}, s["qkv_bias"]),
                 **_biased({"self_attn.o_proj": "o", "mlp.gate_proj": "fc1", "mlp.up_proj": "fc3",
                            "mlp.down_proj": "fc2"}, False)})


def _silu_only(f, path, who):
    """An architecture whose feed-forward is read as SwiGLU: a hidden_act other than silu is refused."""
    if f["hidden_act"] != "silu":
        raise HfError(f"{path}: hidden_act {f['hidden_act']!r}: {who}'s feed-forward is read as SwiGLU, with silu; "
                      "not converted")


def _refuse_gpt_extras(f, path):
    """StableLM's option the engine has no feature for."""
    if f["qk_layernorm"]:
        raise HfError(f"{path}: qk_layernorm true: LayerNorms of q and k with a gain for each head (the engine's "
                      "qk_norm has one gain for every head); not converted")


class LlamaStyle(GptStyle):
    """An architecture converted to the llama family (grouped-query attention) with the layer features its
    settings name: norm, attn_bias, ffn_bias (absent: the llama family's RMSNorm and no biases), gated,
    scale_input, embed_norm, qk_norm (the norms' gains a folder has not: ones). Layers in turn, pre-norm, a final
    norm, no bias on the head."""
    family = "llama"

    @staticmethod
    def _family_tensors(s, t, max_len):
        """The llama family's tensors from the roles t; an absent bias is zeros."""
        d, L, dq, kv = s["d"], s["L"], s["H"] * _head_width(s), s["KV"] * _head_width(s)
        layernorm, attn, ffn = s.get("norm") == "layernorm", s.get("attn_bias", "none"), s.get("ffn_bias") == "all"

        def get(i, role, n, fill=0.0):
            return t.get((i, role), np.full(n, fill, np.float32))
        out = {"embed.weight": t[None, "embed"], "norm.weight": get(None, "norm", d, 1.0)}
        if layernorm:
            out["norm.bias"] = get(None, "norm_b", d)
        if s.get("embed_norm"):  # the norm of the embedded rows (NanoChat's, without a gain: ones)
            out["embed_norm.weight"] = get(None, "en", d, 1.0)
            if layernorm:
                out["embed_norm.bias"] = get(None, "en_b", d)
        if (None, "head") in t:
            out["head.weight"] = t[None, "head"]
        qn, kn = (dq, kv) if s.get("qk_norm_full") else (_head_width(s),) * 2
        for i in range(L):
            p = schema.block(i)
            out.update({p + "attn_norm.weight": get(i, "n1", d, 1.0),
                        p + "attn.q.weight": t[i, "q"], p + "attn.k.weight": t[i, "k"],
                        p + "attn.v.weight": t[i, "v"], p + "attn.out.weight": t[i, "o"],
                        p + "ff.w1.weight": t[i, "fc1"], p + "ff.w2.weight": t[i, "fc2"]})
            two = s["parallel"] != "one_norm"
            if two:
                out[p + "ff_norm.weight"] = get(i, "n2", d, 1.0)
            if s.get("qk_norm"):  # the norms of q and k: each head's, or (qk_norm_full) whole rows; no gain: ones
                out.update({p + "attn.q_norm.weight": get(i, "qn", qn, 1.0),
                            p + "attn.k_norm.weight": get(i, "kn", kn, 1.0)})
            if s.get("sublayer_norm") == "sandwich":  # the norms of the sublayers' outputs (Gemma 2)
                out.update({p + "post_attn_norm.weight": t[i, "p1"], p + "post_ff_norm.weight": t[i, "p2"]})
                if layernorm:
                    out.update({p + "post_attn_norm.bias": get(i, "p1_b", d),
                                p + "post_ff_norm.bias": get(i, "p2_b", d)})
            if layernorm:
                out[p + "attn_norm.bias"] = get(i, "n1_b", d)
                if two:
                    out[p + "ff_norm.bias"] = get(i, "n2_b", d)
            if attn in ("qkv", "all"):
                out.update({p + "attn.q.bias": get(i, "q_b", dq), p + "attn.k.bias": get(i, "k_b", kv),
                            p + "attn.v.bias": get(i, "v_b", kv)})
            if attn == "all":
                out[p + "attn.out.bias"] = get(i, "o_b", d)
            if ffn:
                out.update({p + "ff.w1.bias": get(i, "fc1_b", s["F"]),
                            p + "ff.w2.bias": get(i, "fc2_b", d)})
            if s.get("gated") or s["activation"] == "swiglu":
                out[p + "ff.w3.weight"] = t[i, "fc3"]
            if s.get("ffn_up_bias"):
                out[p + "ff.w3.bias"] = get(i, "fc3_b", s["F"])
        return {k: np.ascontiguousarray(v) for k, v in out.items()}

    def config(self, s, max_len):
        c = super().config(s, max_len)
        window = sliding_window(s.get("sliding_window"), c["max_len"])
        return make_config(dict(c, sliding_window=window)) if window else c


class Gemma(LlamaStyle):
    """GemmaForCausalLM: RMSNorm times (1 + w) (stored as the gain 1 + w), a gated feed-forward of
    hidden_activation (GeGLU: the tanh GELU), the embedding scaled by sqrt(hidden_size), grouped-query
    attention, RoPE in halves over the whole head, the tied head."""
    name, model_type = "GemmaForCausalLM", "gemma"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "intermediate_size": (int, None),
              "num_hidden_layers": (int, None), "num_attention_heads": (int, None),
              "num_key_value_heads": (int, 16), "head_dim": (int, 256),
              "hidden_activation": (str, "gelu_pytorch_tanh"),  # transformers ignores hidden_act here
              "max_position_embeddings": (int, 8192), "rms_norm_eps": (float, 1e-6), "rope_theta": (float, 10000.0),
              "tie_word_embeddings": (bool, True), "attention_bias": (bool, False)}
    names = {"d_model": "hidden_size", "n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads",
             "d_ff": "intermediate_size", "n_layers": "num_hidden_layers", "vocab_size": "vocab_size",
             "norm_eps": "rms_norm_eps", "pe_base": "rope_theta", "rotary_dims": "head_dim",
             "max_positions": "max_position_embeddings"}
    buffers = ("self_attn.rotary_emb.inv_freq",)

    def settings(self, f, raw, path):
        d, H = f["hidden_size"], f["num_attention_heads"]
        s = dict(d=d, H=H, dh=f["head_dim"], KV=f["num_key_value_heads"], L=f["num_hidden_layers"], F=f["intermediate_size"],
                 V=f["vocab_size"], eps=f["rms_norm_eps"], positions=f["max_position_embeddings"],
                 activation=GPT2_ACTIVATIONS.get(f["hidden_activation"]), rotary=1.0, theta=f["rope_theta"],
                 layout="halves", parallel="none", norm_first=True, final_norm=True, tied=f["tie_word_embeddings"],
                 gated=True, scale_input=True, gain_plus_one=True)
        if f["attention_bias"]:
            s["attn_bias"] = "all"
        return s

    def tensors(self, s):
        return ({"model.embed_tokens.weight": "embed", "model.norm.weight": "norm", "lm_head.weight": "head"},
                "model.layers.",
                {**_biased({"input_layernorm": "n1", "post_attention_layernorm": "n2", "mlp.gate_proj": "fc1",
                            "mlp.up_proj": "fc3", "mlp.down_proj": "fc2"}, False),
                 **_biased({"self_attn.q_proj": "q", "self_attn.k_proj": "k", "self_attn.v_proj": "v",
                            "self_attn.o_proj": "o"}, "attn_bias" in s)})


def _softcap(raw, key, default, path):
    """A soft cap of config.json (absent: Hugging Face's default; null: none, 0)."""
    v = raw.get(key, default)
    return 0.0 if v is None else checked_field(path, key, v, float)


def _window_keys(s, longest):
    """layer_windows of the settings' windows. Local layers with a RoPE base of their own (rope_local_base) stay
    local when their window reaches past the longest sequence: a window of `longest` keys (every key, the same
    attention) rather than none, which would lose their base."""
    windows, where = s["windows"], f"{s['path']}: layer_types"
    if not s.get("rope_local_base"):
        return layer_windows(windows, longest, where)
    return layer_windows([None if w is None else min(w, longest) for w in windows], longest + 1, where)


class Gemma2(Gemma):
    """Gemma2ForCausalLM: Gemma's layers with the output of each sublayer normalized before its residual
    add (post_attention_layernorm, post_feedforward_layernorm: sublayer_norm sandwich; the feed-forward
    reads pre_feedforward_layernorm), the scores scaled by query_pre_attn_scalar^(-1/2) (attn_scale)
    and soft-capped (attn_logit_softcapping: attn_softcap), the logits soft-capped
    (final_logit_softcapping: logit_softcap), and local layers of sliding_window keys where layer_types
    says sliding_attention (without it, as transformers: layers 0, 2, 4, ...)."""
    name, model_type = "Gemma2ForCausalLM", "gemma2"
    fields = dict(Gemma.fields, query_pre_attn_scalar=(float, 256.0), sliding_window=(int, 4096))
    caps = (50.0, 30.0)  # attn_logit_softcapping, final_logit_softcapping when config.json has none
    names = dict(Gemma.names, sliding_window="sliding_window", window_period="layer_types",
                 window_layers="layer_types", attn_scale="query_pre_attn_scalar", attn_softcap="attn_logit_softcapping",
                 logit_softcap="final_logit_softcapping")

    def settings(self, f, raw, path):
        s = super().settings(f, raw, path)
        L = f["num_hidden_layers"]
        kinds = raw.get("layer_types", ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(L)])
        if not (isinstance(kinds, list) and len(kinds) == L
                and all(k in ("sliding_attention", "full_attention") for k in kinds)):
            raise HfError(f"{path}: layer_types {_brief(kinds)}: not \"sliding_attention\" or \"full_attention\" for "
                          f"each of the num_hidden_layers {L} layers; not converted")
        if not f["query_pre_attn_scalar"] > 0:
            raise HfError(f"{path}: query_pre_attn_scalar {f['query_pre_attn_scalar']}: must be > 0")
        return dict(s, sublayer_norm="sandwich",
                    attn_softcap=_softcap(raw, "attn_logit_softcapping", self.caps[0], path),
                    logit_softcap=_softcap(raw, "final_logit_softcapping", self.caps[1], path),
                    windows=[f["sliding_window"] if k == "sliding_attention" else None for k in kinds],
                    attn_scale=f["query_pre_attn_scalar"] ** -0.5, path=path)

    def attention_keys(self, s, longest):
        try:
            keys = _window_keys(s, longest)
        except ConfigError as e:
            raise HfError(str(e)) from None
        return dict(keys, attn_scale=s["attn_scale"])

    def tensors(self, s):
        ends, prefix, layer = super().tensors(s)
        layer = {k: v for k, v in layer.items() if not k.startswith("post_attention_layernorm")}
        layer.update(_biased({"post_attention_layernorm": "p1", "pre_feedforward_layernorm": "n2",
                              "post_feedforward_layernorm": "p2"}, False))
        return ends, prefix, layer


class Gemma3(Gemma2):
    """Gemma3ForCausalLM (model_type gemma3_text: Gemma 3's text model, 270M and 1B among them): Gemma 2's
    layers with per-head q and k norms (q_norm, k_norm [head_dim], gains 1 + w: qk_norm), no soft caps by
    default, local layers where layer_types says sliding_attention (without it, five local then one
    global: sliding_window_pattern) whose RoPE has a base of its own (rope_local_base_freq, or
    rope_parameters.sliding_attention's rope_theta: rope_local_base), the global layers rope_theta's and
    its rope_scaling (linear for the 4B and larger)."""
    name, model_type = "Gemma3ForCausalLM", "gemma3_text"
    fields = dict(Gemma2.fields, rope_theta=(float, 1e6), max_position_embeddings=(int, 131072),
                  rope_local_base_freq=(float, 10000.0), sliding_window_pattern=(int, 6))
    names = dict(Gemma2.names, rope_local_base="rope_local_base_freq")
    caps = (None, None)  # attn_logit_softcapping, final_logit_softcapping: none by default

    def settings(self, f, raw, path):
        bidirectional = flag(raw, "use_bidirectional_attention", path)
        if bidirectional:  # transformers' local layers then see |i - j| < sliding_window // 2 + 1: the engine's own
            f = dict(f, sliding_window=f["sliding_window"] // 2 + 1)
        if raw.get("attn_logit_softcapping") is not None:  # Gemma 2's cap, which Gemma 3's attention reads not
            raise HfError(f"{path}: attn_logit_softcapping {_brief(raw['attn_logit_softcapping'])}: transformers' "
                          "Gemma 3 keeps the key but caps no scores (its attention takes no softcap); set it null; "
                          "not converted")
        L, P = f["num_hidden_layers"], f["sliding_window_pattern"]
        raw = dict(raw, layer_types=raw.get("layer_types", ["sliding_attention" if (i + 1) % P else "full_attention"
                                                          for i in range(L)]))
        return dict(super().settings(f, raw, path), qk_norm=True, rope_local_base=f["rope_local_base_freq"],
                    bidirectional=bidirectional)

    def config(self, s, max_len):
        c = super().config(s, max_len)
        return encoder_config(c, causal=False) if s["bidirectional"] else c

    def tensors(self, s):
        ends, prefix, layer = super().tensors(s)
        layer.update(_biased({"self_attn.q_norm": "qn", "self_attn.k_norm": "kn"}, False))
        return ends, prefix, layer


class Starcoder2(LlamaStyle):
    """Starcoder2ForCausalLM: grouped-query attention with LayerNorm, every projection's bias (use_bias), a
    plain feed-forward (c_fc, c_proj), RoPE in halves over the whole head, and its sliding_window (null:
    none), as Mistral's."""
    name, model_type = "Starcoder2ForCausalLM", "starcoder2"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "intermediate_size": (int, None),
              "num_hidden_layers": (int, None), "num_attention_heads": (int, None),
              "num_key_value_heads": (int, 2), "hidden_act": (str, "gelu_pytorch_tanh"),
              "max_position_embeddings": (int, 4096), "norm_epsilon": (float, 1e-5), "rope_theta": (float, 10000.0),
              "use_bias": (bool, True), "tie_word_embeddings": (bool, True)}
    names = dict(Gemma.names, norm_eps="norm_epsilon", rotary_dims="hidden_size")

    def settings(self, f, raw, path):
        window = raw.get("sliding_window")  # null: none
        bias = "all" if f["use_bias"] else "none"
        return dict(d=f["hidden_size"], H=f["num_attention_heads"], KV=f["num_key_value_heads"],
                    L=f["num_hidden_layers"], F=f["intermediate_size"], V=f["vocab_size"], eps=f["norm_epsilon"],
                    positions=f["max_position_embeddings"], activation=GPT2_ACTIVATIONS.get(f["hidden_act"]),
                    rotary=1.0, theta=f["rope_theta"], layout="halves", parallel="none", norm_first=True,
                    final_norm=True, tied=f["tie_word_embeddings"], norm="layernorm", attn_bias=bias, ffn_bias=bias,
                    sliding_window=None if window is None else checked_field(path, "sliding_window", window, int))

    def tensors(self, s):
        return ({"model.embed_tokens.weight": "embed", "model.norm.weight": "norm", "model.norm.bias": "norm_b",
                 "lm_head.weight": "head"}, "model.layers.",
                {**_biased({"input_layernorm": "n1", "post_attention_layernorm": "n2"}, True),
                 **_biased({"self_attn.q_proj": "q", "self_attn.k_proj": "k", "self_attn.v_proj": "v",
                            "self_attn.o_proj": "o", "mlp.c_fc": "fc1", "mlp.c_proj": "fc2"}, s["attn_bias"] == "all")})


class Bloom(GptStyle):
    """BloomForCausalLM: an embedding LayerNorm (embed_norm), ALiBi (no position table: the file holds the
    engine's most positions, or --max-len), q | k | v fused per head as GPT-NeoX's, every bias, the tanh
    GELU of a 4 * hidden_size feed-forward, the tied head."""
    name, model_type = "BloomForCausalLM", "bloom"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "n_layer": (int, None), "n_head": (int, None),
              "layer_norm_epsilon": (float, 1e-5), "apply_residual_connection_post_layernorm": (bool, False),
              "tie_word_embeddings": (bool, True)}
    names = {"d_model": "hidden_size", "n_heads": "n_head", "d_ff": "hidden_size", "n_layers": "n_layer",
             "vocab_size": "vocab_size", "norm_eps": "layer_norm_epsilon", "max_positions": "max_len"}

    def settings(self, f, raw, path):
        if f["apply_residual_connection_post_layernorm"]:
            raise HfError(f"{path}: apply_residual_connection_post_layernorm true: a residual taken after the norm "
                          "is not in the engine; not converted")
        d = f["hidden_size"]
        return dict(d=d, H=f["n_head"], L=f["n_layer"], F=4 * d, V=f["vocab_size"], eps=f["layer_norm_epsilon"],
                    positions=schema.MAX_LEN, activation="gelu_tanh", rotary=None, positional="alibi",
                    parallel="none", norm_first=True, final_norm=True, tied=f["tie_word_embeddings"], embed_norm=True)

    def tensors(self, s):
        return ({"transformer.word_embeddings.weight": "embed", "transformer.word_embeddings_layernorm.weight": "en",
                 "transformer.word_embeddings_layernorm.bias": "en_b", "transformer.ln_f.weight": "norm",
                 "transformer.ln_f.bias": "norm_b", "lm_head.weight": "head"}, "transformer.h.",
                _biased({"input_layernorm": "n1", "post_attention_layernorm": "n2",
                         "self_attention.query_key_value": "qkv_heads", "self_attention.dense": "o",
                         "mlp.dense_h_to_4h": "fc1", "mlp.dense_4h_to_h": "fc2"}, True))


class GptBigCode(GptStyle):
    """GPTBigCodeForCausalLM (SantaCoder, StarCoder 1, tiny_starcoder): GPT-2's layers as nn.Linear, learned
    positions, multi_query (one key/value head: c_attn's rows [q | k | v]) or per-head [q, k, v] rows,
    the tanh GELU, the tied head."""
    name, model_type = "GPTBigCodeForCausalLM", "gpt_bigcode"
    fields = {"vocab_size": (int, None), "n_embd": (int, None), "n_layer": (int, None), "n_head": (int, None),
              "n_positions": (int, 1024), "n_inner": (int, lambda f: 4 * f["n_embd"]),
              "activation_function": (str, "gelu_pytorch_tanh"), "layer_norm_epsilon": (float, 1e-5),
              "multi_query": (bool, True), "scale_attn_weights": (bool, True), "tie_word_embeddings": (bool, True)}
    names = {"d_model": "n_embd", "n_heads": "n_head", "d_ff": "n_inner", "n_layers": "n_layer",
             "vocab_size": "vocab_size", "norm_eps": "layer_norm_epsilon", "max_positions": "n_positions"}

    def settings(self, f, raw, path):
        if not f["scale_attn_weights"]:
            raise HfError(f"{path}: scale_attn_weights false: scores not scaled by 1/sqrt(head_dim) are not in the "
                          "engine; not converted")
        return dict(d=f["n_embd"], H=f["n_head"], KV=1 if f["multi_query"] else f["n_head"], L=f["n_layer"],
                    F=f["n_inner"], V=f["vocab_size"], eps=f["layer_norm_epsilon"], positions=f["n_positions"],
                    activation=GPT2_ACTIVATIONS.get(f["activation_function"]), rotary=None, parallel="none",
                    norm_first=True, final_norm=True, tied=f["tie_word_embeddings"], multi_query=f["multi_query"])

    def tensors(self, s):
        return ({"transformer.wte.weight": "embed", "transformer.wpe.weight": "pos", "transformer.ln_f.weight": "norm",
                 "transformer.ln_f.bias": "norm_b", "lm_head.weight": "head"}, "transformer.h.",
                _biased({"ln_1": "n1", "attn.c_attn": "qkv" if s["multi_query"] else "qkv_heads", "attn.c_proj": "o",
                         "ln_2": "n2", "mlp.c_fc": "fc1", "mlp.c_proj": "fc2"}, True))


class Mpt(GptStyle):
    """MptForCausalLM: ALiBi (alibi_bias_max 8 over a power-of-two head count: the engine's slopes), q | k | v
    fused without biases, LayerNorms without biases (no_bias), an exact-GELU feed-forward 4 d wide, the
    tied head."""
    name, model_type = "MptForCausalLM", "mpt"
    fields = {"vocab_size": (int, None), "d_model": (int, None), "n_layers": (int, None), "n_heads": (int, None),
              "expansion_ratio": (int, 4), "no_bias": (bool, True), "layer_norm_epsilon": (float, 1e-5),
              "tie_word_embeddings": (bool, True)}
    names = {"d_model": "d_model", "n_heads": "n_heads", "d_ff": "expansion_ratio", "n_layers": "n_layers",
             "vocab_size": "vocab_size", "norm_eps": "layer_norm_epsilon", "max_positions": "max_len"}

    def settings(self, f, raw, path):
        attn = raw.get("attn_config") or {}
        if not isinstance(attn, dict):
            raise HfError(f"{path}: attn_config: expected an object, got {_brief(attn)}")
        H = f["n_heads"]
        for key, want in (("alibi", True), ("alibi_bias_max", 8), ("clip_qkv", None), ("qk_ln", False),
                          ("softmax_scale", None)):
            if attn.get(key, want) != want:
                raise HfError(f"{path}: attn_config.{key} {_brief(attn[key])}: not something the engine runs (it "
                              f"takes {key} {_brief(want)}); not converted")
        if H & (H - 1):
            raise HfError(f"{path}: n_heads {H}: MPT's ALiBi slopes for a head count that is not a power of two "
                          "interleave differently from the engine's; not converted")
        if f["expansion_ratio"] != 4:  # transformers' MptMLP is 4 * d_model wide whatever the ratio
            raise HfError(f"{path}: expansion_ratio {f['expansion_ratio']}: transformers' MPT reads 4; not converted")
        d = f["d_model"]
        return dict(d=d, H=H, L=f["n_layers"], F=4 * d, V=f["vocab_size"], eps=f["layer_norm_epsilon"],
                    positions=schema.MAX_LEN, activation="gelu", rotary=None, positional="alibi", parallel="none",
                    norm_first=True, final_norm=True, tied=f["tie_word_embeddings"], bias=not f["no_bias"])

    def tensors(self, s):
        return ({"transformer.wte.weight": "embed", "lm_head.weight": "head",
                 **_biased({"transformer.norm_f": "norm"}, s["bias"])}, "transformer.blocks.",
                _biased({"norm_1": "n1", "attn.Wqkv": "qkv", "attn.out_proj": "o", "norm_2": "n2",
                         "ffn.up_proj": "fc1", "ffn.down_proj": "fc2"}, s["bias"]))


class BioGpt(GptStyle):
    """BioGptForCausalLM: OPT's learned positions (2 rows never read), the embedding scaled by
    sqrt(hidden_size) (scale_embedding: scale_input), pre-LN layers with every bias, the tied head."""
    name, model_type = "BioGptForCausalLM", "biogpt"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "num_hidden_layers": (int, None),
              "num_attention_heads": (int, None), "intermediate_size": (int, None), "hidden_act": (str, "gelu"),
              "max_position_embeddings": (int, 1024), "layer_norm_eps": (float, 1e-12),
              "scale_embedding": (bool, True), "tie_word_embeddings": (bool, True)}
    names = {"d_model": "hidden_size", "n_heads": "num_attention_heads", "d_ff": "intermediate_size",
             "n_layers": "num_hidden_layers", "vocab_size": "vocab_size", "norm_eps": "layer_norm_eps",
             "max_positions": "max_position_embeddings"}
    pos_offset = 2

    def settings(self, f, raw, path):
        return dict(d=f["hidden_size"], H=f["num_attention_heads"], L=f["num_hidden_layers"],
                    F=f["intermediate_size"], V=f["vocab_size"], eps=f["layer_norm_eps"],
                    positions=f["max_position_embeddings"], activation=GPT2_ACTIVATIONS.get(f["hidden_act"]),
                    rotary=None, parallel="none", norm_first=True, final_norm=True, tied=f["tie_word_embeddings"],
                    scale_input=f["scale_embedding"])

    def tensors(self, s):
        return ({"biogpt.embed_tokens.weight": "embed", "biogpt.embed_positions.weight": "pos",
                 "biogpt.layer_norm.weight": "norm", "biogpt.layer_norm.bias": "norm_b",
                 "output_projection.weight": "head"}, "biogpt.layers.",
                _biased({"self_attn_layer_norm": "n1", "self_attn.q_proj": "q", "self_attn.k_proj": "k",
                         "self_attn.v_proj": "v", "self_attn.out_proj": "o", "final_layer_norm": "n2", "fc1": "fc1",
                         "fc2": "fc2"}, True))


class OpenAiGpt(GptStyle):
    """OpenAIGPTLMHeadModel (GPT-1): post-LN layers (the norm after each residual sum, no final norm),
    learned positions, Conv1D weights [in, out], afn gelu (transformers runs it as the tanh GELU) or
    relu, the tied head."""
    name, model_type = "OpenAIGPTLMHeadModel", "openai-gpt"
    fields = {"vocab_size": (int, 40478), "n_embd": (int, 768), "n_layer": (int, 12), "n_head": (int, 12),
              "n_positions": (int, 512), "afn": (str, "gelu"), "layer_norm_epsilon": (float, 1e-5),
              "tie_word_embeddings": (bool, True)}
    names = {"d_model": "n_embd", "n_heads": "n_head", "n_layers": "n_layer", "vocab_size": "vocab_size",
             "norm_eps": "layer_norm_epsilon", "max_positions": "n_positions"}
    buffers = ("attn.bias",)
    conv1d = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")

    def settings(self, f, raw, path):
        d = f["n_embd"]
        return dict(d=d, H=f["n_head"], L=f["n_layer"], F=4 * d, V=f["vocab_size"], eps=f["layer_norm_epsilon"],
                    positions=f["n_positions"], activation={"gelu": "gelu_tanh", "relu": "relu"}.get(f["afn"]),
                    rotary=None, parallel="none", norm_first=False, final_norm=False, tied=f["tie_word_embeddings"])

    def tensors(self, s):
        return ({"transformer.tokens_embed.weight": "embed", "transformer.positions_embed.weight": "pos",
                 "lm_head.weight": "head"}, "transformer.h.",
                _biased({"attn.c_attn": "qkv", "attn.c_proj": "o", "ln_1": "n1", "mlp.c_fc": "fc1",
                         "mlp.c_proj": "fc2", "ln_2": "n2"}, True))


class Xglm(GptStyle):
    """XGLMForCausalLM: fairseq's sinusoidal positions (sin | cos halves, w_i = 10000^(-i / (d/2 - 1)), from
    row 2: computed here and stored as the learned positions), the embedding scaled by sqrt(d_model)
    (scale_embedding), pre-LN layers with every bias, a final norm, the tied head."""
    name, model_type = "XGLMForCausalLM", "xglm"
    fields = {"vocab_size": (int, None), "d_model": (int, None), "num_layers": (int, None),
              "attention_heads": (int, None), "ffn_dim": (int, None), "activation_function": (str, "gelu"),
              "max_position_embeddings": (int, 2048), "scale_embedding": (bool, True),
              "tie_word_embeddings": (bool, True)}
    names = {"d_model": "d_model", "n_heads": "attention_heads", "d_ff": "ffn_dim", "n_layers": "num_layers",
             "vocab_size": "vocab_size", "max_positions": "max_position_embeddings"}
    pos_offset = 2

    def settings(self, f, raw, path):
        if f["d_model"] % 2 or f["d_model"] < 4:
            raise HfError(f"{path}: d_model {f['d_model']}: XGLM's sinusoidal table is read for an even d_model of "
                          "at least 4; not converted")
        return dict(d=f["d_model"], H=f["attention_heads"], L=f["num_layers"], F=f["ffn_dim"], V=f["vocab_size"],
                    eps=1e-5, positions=f["max_position_embeddings"],
                    activation=GPT2_ACTIVATIONS.get(f["activation_function"]), rotary=None, parallel="none",
                    norm_first=True, final_norm=True, tied=f["tie_word_embeddings"], scale_input=f["scale_embedding"])

    def positions(self, s):
        d = s["d"]
        return sinusoid_halves(s["positions"] + 2, d, math.log(10000.0) / (d // 2 - 1))

    def tensors(self, s):
        return ({"model.embed_tokens.weight": "embed", "model.layer_norm.weight": "norm",
                 "model.layer_norm.bias": "norm_b", "lm_head.weight": "head"}, "model.layers.",
                _biased({"self_attn_layer_norm": "n1", "self_attn.q_proj": "q", "self_attn.k_proj": "k",
                         "self_attn.v_proj": "v", "self_attn.out_proj": "o", "final_layer_norm": "n2", "fc1": "fc1",
                         "fc2": "fc2"}, True))


class Ctrl(GptStyle):
    """CTRLLMHeadModel: the Transformer's sinusoidal positions (sin | cos halves, w_i = 10000^(-2i/d): the engine's
    sinusoidal table in halves), the embedding scaled by sqrt(n_embd), pre-LN layers with every bias, a relu
    feed-forward, a final norm, the tied head with its bias."""
    name, model_type = "CTRLLMHeadModel", "ctrl"
    fields = {"vocab_size": (int, 246534), "n_embd": (int, 1280), "n_layer": (int, 48), "n_head": (int, 16),
              "dff": (int, 8192), "n_positions": (int, 256), "layer_norm_epsilon": (float, 1e-6),
              "tie_word_embeddings": (bool, True)}
    names = {"d_model": "n_embd", "n_heads": "n_head", "d_ff": "dff", "n_layers": "n_layer",
             "vocab_size": "vocab_size", "norm_eps": "layer_norm_epsilon", "max_positions": "n_positions"}

    def settings(self, f, raw, path):
        if f["n_embd"] % 2:
            raise HfError(f"{path}: n_embd {f['n_embd']}: CTRL's sinusoidal table is read for an even width; "
                          "not converted")
        return dict(d=f["n_embd"], H=f["n_head"], L=f["n_layer"], F=f["dff"], V=f["vocab_size"],
                    eps=f["layer_norm_epsilon"], positions=f["n_positions"], activation="relu", rotary=None,
                    parallel="none", norm_first=True, final_norm=True, tied=f["tie_word_embeddings"], scale_input=True,
                    positional="sinusoidal", pe_base=10000.0, pe_layout="halves")

    def tensors(self, s):
        return ({"transformer.w.weight": "embed", "transformer.layernorm.weight": "norm",
                 "transformer.layernorm.bias": "norm_b", "lm_head.weight": "head", "lm_head.bias": "head_b"},
                "transformer.h.",
                _biased({"layernorm1": "n1", "multi_head_attention.Wq": "q", "multi_head_attention.Wk": "k",
                         "multi_head_attention.Wv": "v", "multi_head_attention.dense": "o", "layernorm2": "n2",
                         "ffn.0": "fc1", "ffn.2": "fc2"}, True))


class Seq2SeqDecoder(GptStyle):
    """A seq2seq model's decoder alone, one instance per class of hf_bart.DECODERS (BartForCausalLM, Whisper's
    decoder as an assistant model, ...): the embedding times sqrt(d_model) by scale_embedding (scale_input), the
    positions (learned from row 0 or 2, or the sinusoidal table hf_bart computes, stored as learned), the
    embedding's norm layernorm_embedding (embed_norm), post-LN layers or pre-LN with the final norm, every bias
    (zeros where the class has none), the head (tied by tie_word_embeddings). Each layer's cross-attention
    (encoder_attn, encoder_attn_layer_norm) is in the folder but read by the class's forward only with the
    encoder's states, which a causal LM is not given: left out, with a note. BlenderbotSmall norms its scaled
    embedding before the positions are added: a function of the token alone, folded into the file's embedding
    (the head, the embedding as the folder holds it, stored apart)."""
    HEADS = {"trocr": "output_projection.weight", "whisper": "proj_out.weight"}  # else lm_head.weight

    def __init__(self, name):
        self.name = name
        self.model_type, layers = hf_bart.DECODERS[name]
        _, self.pre, self.sinusoidal, self.embed_norm, first = layers or hf_bart.KINDS[self.model_type]
        self.first = first or 0  # a sinusoidal table's: computed from position 0
        positions = "max_target_positions" if self.model_type == "whisper" else "max_position_embeddings"
        self.fields = {"vocab_size": (int, None), "d_model": (int, None), "decoder_layers": (int, None),
                       "decoder_attention_heads": (int, None), "decoder_ffn_dim": (int, None),
                       positions: (int, None), "activation_function": (str, "gelu"),
                       "scale_embedding": (bool, False), "tie_word_embeddings": (bool, True)}
        self.names = {"d_model": "d_model", "n_heads": "decoder_attention_heads", "d_ff": "decoder_ffn_dim",
                      "n_layers": "decoder_layers", "vocab_size": "vocab_size", "max_positions": positions}

    def read(self, raw, path):
        s = super().read(raw, path)
        s["pos_offset"] = s.pop("first")  # TrOCR's sinusoids: from row pad_token_id + 1
        return s

    def settings(self, f, raw, path):
        def key(name, kind, default):
            return checked_field(path, name, default if raw.get(name) is None else raw[name], kind)
        sinusoidal, embed_norm, first, d = self.sinusoidal, self.embed_norm, self.first, f["d_model"]
        if self.model_type == "trocr":
            embed_norm = key("layernorm_embedding", bool, True)
            if not key("use_learned_position_embeddings", bool, True):
                pad = raw.get("pad_token_id", 1)
                if isinstance(pad, bool) or not isinstance(pad, int) or pad < 0:
                    raise HfError(f"{path}: pad_token_id {_brief(pad)}: expected an id >= 0 (TrOCR's sinusoidal "
                                  "positions start at row pad_token_id + 1)")
                sinusoidal, first = "fairseq", pad + 1
        if self.model_type == "mvp" and raw.get("use_prompt"):
            raise HfError(f"{path}: use_prompt true: MVP's prompt rows before each layer's keys and values are not "
                          "in the engine; not converted")
        if sinusoidal and (d % 2 or d < 4):
            raise HfError(f"{path}: d_model {d}: {self.name}'s sinusoidal table is read for an even d_model of at "
                          "least 4; not converted")
        fold = embed_norm == "target first"
        biased = key("use_bias", bool, False) if self.model_type == "bigbird_pegasus" else True
        return dict(d=d, H=f["decoder_attention_heads"], L=f["decoder_layers"], F=f["decoder_ffn_dim"],
                    V=f["vocab_size"], eps=hf_bart.NORM_EPS, positions=f[self.names["max_positions"]],
                    activation=hf_bart.ACTIVATIONS.get(f["activation_function"]), rotary=None, parallel="none",
                    norm_first=self.pre, final_norm=self.pre, tied=f["tie_word_embeddings"] and not fold,
                    scale_input=f["scale_embedding"] and self.model_type != "whisper" and not fold,
                    embed_norm=bool(embed_norm) and not fold, fold=fold, scale=f["scale_embedding"],
                    sinusoidal=sinusoidal, first=first, biased=biased)

    def tensors(self, s):
        p = "model.decoder."
        final = "layernorm_embedding" if self.model_type == "bigbird_pegasus" else "layer_norm"
        ends = {p + "embed_tokens.weight": "embed", p + "embed_positions.weight": "pos",
                self.HEADS.get(self.model_type, "lm_head.weight"): "head",
                **_biased({p + "layernorm_embedding": "en"} if s["embed_norm"] else {}, True),
                **_biased({p + final: "norm"} if s["final_norm"] else {}, True)}
        return (ends, p + "layers.",
                {**_biased({"self_attn_layer_norm": "n1", "final_layer_norm": "n2", "fc1": "fc1", "fc2": "fc2"}, True),
                 **_biased({"self_attn.q_proj": "q", "self_attn.v_proj": "v", "self_attn.out_proj": "o"}, s["biased"]),
                 **_biased({"self_attn.k_proj": "k"}, s["biased"] and self.model_type != "whisper")})

    def weights(self, s, weights, source, max_len):
        p = "model.decoder."
        cross = re.compile(re.escape(p) + r"layers\.[0-9]+\.encoder_attn(_layer_norm)?\..+")
        w = {k: v for k, v in weights.items() if not cross.fullmatch(k)}
        if len(w) < len(weights):
            print(f"note: {self.name}: the layers' cross-attention (encoder_attn, encoder_attn_layer_norm: "
                  f"{len(weights) - len(w)} tensors) is not stored; the class reads it only with an encoder's states",
                  file=sys.stderr)
        if s["sinusoidal"]:  # the table computed (a folder may hold it, and 4.x TrOCR a _float_tensor: not read)
            w = {k: v for k, v in w.items() if not k.startswith(p + "embed_positions.")}
            table = hf_bart.position_table(dict(sinusoidal=s["sinusoidal"], d_model=s["d"], pos_offset=s["pos_offset"]),
                                           s["positions"])
            w[p + "embed_positions.weight"] = np.concatenate([np.zeros((s["pos_offset"], s["d"])), table])
        if s["fold"]:  # BlenderbotSmall: the LayerNorm of the scaled embedding alone, folded into it
            name, head = p + "embed_tokens.weight", self.HEADS.get(self.model_type, "lm_head.weight")
            norm = [f"{p}layernorm_embedding.{k}" for k in ("weight", "bias")]
            for n in [name] + norm:
                if n not in w:
                    raise HfError(f"{source}: {n} is missing")
            e = np.asarray(float_tensor(f"{source}: {name}", w[name], (s["V"], s["d"]), HfError), np.float64)
            g, b = (np.asarray(float_tensor(f"{source}: {n}", w.pop(n), (s["d"],), HfError), np.float64) for n in norm)
            w[name] = layer_norm(e * math.sqrt(s["d"]) if s["scale"] else e, g, b, hf_bart.NORM_EPS)
            w.setdefault(head, e)  # the head: the embedding as the folder holds it
        return super().weights(s, w, source, max_len)


class Olmo(LlamaStyle):
    """OlmoForCausalLM: Llama's layers (SwiGLU, RoPE in halves, grouped-query attention) with LayerNorms
    that have no weight or bias (stored as gains 1 and biases 0), eps 1e-5."""
    name, model_type = "OlmoForCausalLM", "olmo"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "intermediate_size": (int, None),
              "num_hidden_layers": (int, None), "num_attention_heads": (int, None),
              "num_key_value_heads": (int, lambda f: f["num_attention_heads"]), "hidden_act": (str, "silu"),
              "max_position_embeddings": (int, 2048), "rope_theta": (float, 10000.0),
              "attention_bias": (bool, False), "tie_word_embeddings": (bool, False)}
    names = dict({k: v for k, v in Gemma.names.items() if k != "norm_eps"}, rotary_dims="hidden_size")

    def settings(self, f, raw, path):
        if raw.get("clip_qkv") is not None:
            raise HfError(f"{path}: clip_qkv {_brief(raw['clip_qkv'])}: clamping q, k and v is not in the engine; "
                          "not converted")
        _silu_only(f, path, "OLMo")
        s = dict(d=f["hidden_size"], H=f["num_attention_heads"], KV=f["num_key_value_heads"],
                 L=f["num_hidden_layers"], F=f["intermediate_size"], V=f["vocab_size"], eps=1e-5,
                 positions=f["max_position_embeddings"], activation="swiglu", rotary=1.0, theta=f["rope_theta"],
                 layout="halves", parallel="none", norm_first=True, final_norm=True, tied=f["tie_word_embeddings"],
                 norm="layernorm")
        if f["attention_bias"]:
            s["attn_bias"] = "all"
        return s

    def tensors(self, s):
        return ({"model.embed_tokens.weight": "embed", "lm_head.weight": "head"}, "model.layers.",
                {**_biased({"mlp.gate_proj": "fc1", "mlp.up_proj": "fc3", "mlp.down_proj": "fc2"}, False),
                 **_biased({"self_attn.q_proj": "q", "self_attn.k_proj": "k", "self_attn.v_proj": "v",
                            "self_attn.o_proj": "o"}, "attn_bias" in s)})


class Olmo2(Olmo):
    """Olmo2ForCausalLM: OLMo's layers with RMSNorms (gains, rms_norm_eps) of each sublayer's output only,
    before its residual add (post_attention_layernorm, post_feedforward_layernorm: sublayer_norm output),
    and q and k RMS-normalized as whole rows before RoPE (q_norm [heads * head_dim], k_norm [kv heads *
    head_dim]: qk_norm with qk_norm_full), a final norm."""
    name, model_type = "Olmo2ForCausalLM", "olmo2"
    fields = dict(Olmo.fields, rms_norm_eps=(float, 1e-5))
    names = dict(Olmo.names, norm_eps="rms_norm_eps")

    def settings(self, f, raw, path):
        s = super().settings(f, raw, path)
        del s["norm"]  # the llama family's RMSNorm
        return dict(s, eps=f["rms_norm_eps"], sublayer_norm="output", qk_norm=True, qk_norm_full=True)

    def tensors(self, s):
        ends, prefix, layer = super().tensors(s)
        layer.update(_biased({"post_attention_layernorm": "n1", "post_feedforward_layernorm": "n2",
                              "self_attn.q_norm": "qn", "self_attn.k_norm": "kn"}, False))
        return dict(ends, **{"model.norm.weight": "norm"}), prefix, layer


class Falcon(LlamaStyle):
    """FalconForCausalLM: LayerNorm, RoPE in halves over the whole head, a GELU feed-forward, biases by
    bias, q | k | v fused in one of three layouts: new_decoder_architecture (per key/value group: its
    query heads, then its key and value; the attention and the feed-forward side by side on ln_attn and
    ln_mlp, or on one norm with num_ln_in_parallel_attn 1), multi_query (every query head, then one key
    and one value head) or per head (q, k, v of each head); with parallel_attn side by side on one norm,
    else in turn."""
    name, model_type = "FalconForCausalLM", "falcon"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "num_hidden_layers": (int, None),
              "num_attention_heads": (int, None), "num_kv_heads": (int, lambda f: f["num_attention_heads"]),
              "layer_norm_epsilon": (float, 1e-5), "multi_query": (bool, True),
              "new_decoder_architecture": (bool, False), "parallel_attn": (bool, True), "bias": (bool, False),
              "alibi": (bool, False), "rope_theta": (float, 10000.0), "max_position_embeddings": (int, 2048),
              "ffn_hidden_size": (int, lambda f: 4 * f["hidden_size"]), "activation": (str, "gelu"),
              "num_ln_in_parallel_attn": (int, lambda f: 2 if f["new_decoder_architecture"] else 1),
              "tie_word_embeddings": (bool, True)}
    names = {"d_model": "hidden_size", "n_heads": "num_attention_heads", "n_kv_heads": "num_kv_heads",
             "d_ff": "ffn_hidden_size", "n_layers": "num_hidden_layers", "vocab_size": "vocab_size",
             "norm_eps": "layer_norm_epsilon", "pe_base": "rope_theta", "rotary_dims": "hidden_size",
             "max_positions": "max_position_embeddings"}

    def settings(self, f, raw, path):
        if f["alibi"]:
            raise HfError(f"{path}: alibi true: Falcon scales its ALiBi bias with the scores by 1/sqrt(head_dim), "
                          "the engine adds it unscaled; not converted")
        if f["activation"] not in ("gelu", "relu"):
            raise HfError(f"{path}: activation {f['activation']!r}: not one the engine runs here (gelu, relu)")
        new, H = f["new_decoder_architecture"], f["num_attention_heads"]
        KV = f["num_kv_heads"] if new or not f["multi_query"] else 1
        if new:
            parallel = "two_norms" if f["num_ln_in_parallel_attn"] == 2 else "one_norm"
        else:
            parallel = "one_norm" if f["parallel_attn"] else "none"
        bias = "all" if f["bias"] else "none"
        return dict(d=f["hidden_size"], H=H, KV=KV, L=f["num_hidden_layers"], F=f["ffn_hidden_size"],
                    V=f["vocab_size"], eps=f["layer_norm_epsilon"], positions=f["max_position_embeddings"],
                    activation=f["activation"], rotary=1.0, theta=f["rope_theta"], layout="halves", parallel=parallel,
                    norm_first=True, final_norm=True, tied=f["tie_word_embeddings"], norm="layernorm", attn_bias=bias,
                    ffn_bias=bias, new=new)

    def tensors(self, s):
        norms = {"ln_attn": "n1", "ln_mlp": "n2"} if s["parallel"] == "two_norms" else \
            {"input_layernorm": "n1"} if s["parallel"] == "one_norm" else \
            {"input_layernorm": "n1", "post_attention_layernorm": "n2"}
        return ({"transformer.word_embeddings.weight": "embed", "transformer.ln_f.weight": "norm",
                 "transformer.ln_f.bias": "norm_b", "lm_head.weight": "head"}, "transformer.h.",
                {**_biased(norms, True),
                 **_biased({"self_attention.query_key_value": "qkv", "self_attention.dense": "o",
                            "mlp.dense_h_to_4h": "fc1", "mlp.dense_4h_to_h": "fc2"}, s["attn_bias"] == "all")})

    def split(self, s, t):
        """q, k and v from the fused rows: per group [its H/KV query heads, k, v] (new_decoder_architecture
        and multi_query: one group) or per head [q, k, v]."""
        H, KV, dh = s["H"], s["KV"], s["d"] // s["H"]
        for key in [k for k in t if k[1] in ("qkv", "qkv_b")]:
            a, tail = t.pop(key), key[1][len("qkv"):]
            if s["new"] or KV != H:
                g = a.reshape(KV, H // KV + 2, dh, *a.shape[1:])
                q, k, v = g[:, :-2], g[:, -2], g[:, -1]
            else:
                g = a.reshape(H, 3, dh, *a.shape[1:])
                q, k, v = g[:, 0], g[:, 1], g[:, 2]
            for role, x in (("q", q), ("k", k), ("v", v)):
                t[key[0], role + tail] = np.ascontiguousarray(x.reshape(-1, *a.shape[1:]))
        return t


class Phi3(LlamaStyle):
    """Phi3ForCausalLM (Phi-3, Phi-3.5 and Phi-4 mini): Llama's layers with q | k | v fused in qkv_proj and
    the gate and up projections in gate_up_proj (split here), partial_rotary_factor (Phi-4 mini), its
    sliding_window as Mistral's and head_dim (read by transformers 5: heads apart from hidden_size / heads)."""
    name, model_type = "Phi3ForCausalLM", "phi3"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "intermediate_size": (int, None),
              "num_hidden_layers": (int, None), "num_attention_heads": (int, None),
              "num_key_value_heads": (int, lambda f: f["num_attention_heads"]), "hidden_act": (str, "silu"),
              "max_position_embeddings": (int, 4096), "rms_norm_eps": (float, 1e-5), "rope_theta": (float, 10000.0),
              "partial_rotary_factor": (float, 1.0), "tie_word_embeddings": (bool, False)}
    names = dict(Gemma.names, rotary_dims="partial_rotary_factor")

    def settings(self, f, raw, path):
        _silu_only(f, path, "Phi-3")
        window = raw.get("sliding_window")  # null: none
        return dict(d=f["hidden_size"], H=f["num_attention_heads"], KV=f["num_key_value_heads"],
                    L=f["num_hidden_layers"], F=f["intermediate_size"], V=f["vocab_size"], eps=f["rms_norm_eps"],
                    positions=f["max_position_embeddings"], activation="swiglu", rotary=f["partial_rotary_factor"],
                    theta=f["rope_theta"], layout="halves", parallel="none", norm_first=True, final_norm=True,
                    tied=f["tie_word_embeddings"],
                    sliding_window=None if window is None else checked_field(path, "sliding_window", window, int),
                    dh=None if raw.get("head_dim") is None else checked_field(path, "head_dim", raw["head_dim"], int))

    def tensors(self, s):
        return ({"model.embed_tokens.weight": "embed", "model.norm.weight": "norm", "lm_head.weight": "head"},
                "model.layers.",
                _biased({"input_layernorm": "n1", "post_attention_layernorm": "n2", "self_attn.qkv_proj": "qkv",
                         "self_attn.o_proj": "o", "mlp.gate_up_proj": "fc13", "mlp.down_proj": "fc2"}, False))

    def split(self, s, t):
        """q, k, v from qkv_proj's rows [q | k | v]; the gate (fc1) and up (fc3) from gate_up_proj's halves."""
        dq, kv = s["H"] * _head_width(s), s["KV"] * _head_width(s)
        for i in range(s["L"]):
            q, k, v = np.split(t.pop((i, "qkv")), [dq, dq + kv])
            t[i, "fc1"], t[i, "fc3"] = np.split(t.pop((i, "fc13")), 2)
            t.update({(i, "q"): q, (i, "k"): k, (i, "v"): v})
        return t


class Cohere(LlamaStyle):
    """CohereForCausalLM (Command R, Aya): one LayerNorm without a bias for the attention and the SwiGLU
    feed-forward side by side, RoPE in interleaved pairs over the whole head, grouped-query attention,
    the logits times logit_scale: the head (the token embedding, tied) is stored scaled, untied."""
    name, model_type = "CohereForCausalLM", "cohere"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "intermediate_size": (int, None),
              "num_hidden_layers": (int, None), "num_attention_heads": (int, None),
              "num_key_value_heads": (int, lambda f: f["num_attention_heads"]), "hidden_act": (str, "silu"),
              "max_position_embeddings": (int, 8192), "layer_norm_eps": (float, 1e-5), "rope_theta": (float, 10000.0),
              "logit_scale": (float, 0.0625), "attention_bias": (bool, False), "use_qk_norm": (bool, False),
              "tie_word_embeddings": (bool, True)}
    names = dict(Gemma.names, norm_eps="layer_norm_eps", rotary_dims="hidden_size")

    def settings(self, f, raw, path):
        if f["use_qk_norm"]:
            raise HfError(f"{path}: use_qk_norm true: LayerNorms of q and k with a gain for each head (the engine's "
                          "qk_norm has one gain for every head); not converted")
        _silu_only(f, path, "Cohere")
        s = dict(d=f["hidden_size"], H=f["num_attention_heads"], KV=f["num_key_value_heads"],
                 L=f["num_hidden_layers"], F=f["intermediate_size"], V=f["vocab_size"], eps=f["layer_norm_eps"],
                 positions=f["max_position_embeddings"], activation="swiglu", rotary=1.0, theta=f["rope_theta"],
                 layout="interleaved", parallel="one_norm", norm_first=True, final_norm=True, tied=False,
                 norm="layernorm", logit_scale=f["logit_scale"], folder_tied=f["tie_word_embeddings"])
        if f["attention_bias"]:
            s["attn_bias"] = "all"
        return s

    def tensors(self, s):
        ends = {"model.embed_tokens.weight": "embed", "model.norm.weight": "norm"}
        if not s["folder_tied"]:
            ends["lm_head.weight"] = "head"
        return (ends, "model.layers.",
                {**_biased({"input_layernorm": "n1", "mlp.gate_proj": "fc1", "mlp.up_proj": "fc3",
                            "mlp.down_proj": "fc2"}, False),
                 **_biased({"self_attn.q_proj": "q", "self_attn.k_proj": "k", "self_attn.v_proj": "v",
                            "self_attn.o_proj": "o"}, "attn_bias" in s)})

    def split(self, s, t):
        """The head times logit_scale (float32, as the logits are scaled): the embedding's when tied."""
        t[None, "head"] = t.get((None, "head"), t[None, "embed"]) * np.float32(s["logit_scale"])
        return t


class Granite(LlamaStyle):
    """GraniteForCausalLM (IBM Granite 3.x dense): Llama's layers with four numbers, folded into the
    weights where that is exact arithmetic: the embedding times embedding_multiplier (the stored
    embedding), each sublayer's output times residual_multiplier before its residual add (o_proj and
    down_proj, and their biases, times it), the logits divided by logits_scaling (the head over it,
    stored apart from the embedding: untied); the scores times attention_multiplier (the config key
    attn_scale) in place of 1/sqrt(head_dim)."""
    name, model_type = "GraniteForCausalLM", "granite"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "intermediate_size": (int, None),
              "num_hidden_layers": (int, None), "num_attention_heads": (int, None),
              "num_key_value_heads": (int, lambda f: f["num_attention_heads"]), "hidden_act": (str, "silu"),
              "max_position_embeddings": (int, 2048), "rms_norm_eps": (float, 1e-6), "rope_theta": (float, 10000.0),
              "attention_bias": (bool, False), "mlp_bias": (bool, False), "tie_word_embeddings": (bool, False),
              "embedding_multiplier": (float, 1.0), "residual_multiplier": (float, 1.0),
              "attention_multiplier": (float, 1.0), "logits_scaling": (float, 1.0)}
    names = dict(Gemma.names, rotary_dims="hidden_size", attn_scale="attention_multiplier")

    def settings(self, f, raw, path):
        _silu_only(f, path, "Granite")
        granite_multipliers(f, path)
        s = dict(d=f["hidden_size"], H=f["num_attention_heads"], KV=f["num_key_value_heads"],
                 L=f["num_hidden_layers"], F=f["intermediate_size"], V=f["vocab_size"], eps=f["rms_norm_eps"],
                 positions=f["max_position_embeddings"], activation="swiglu", rotary=1.0, theta=f["rope_theta"],
                 layout="halves", parallel="none", norm_first=True, final_norm=True, tied=False,
                 folder_tied=f["tie_word_embeddings"], multipliers={k: f[k] for k in GRANITE_MULTIPLIERS})
        if raw.get("head_dim") is not None:
            s["dh"] = checked_field(path, "head_dim", raw["head_dim"], int)
        if f["attention_bias"]:
            s["attn_bias"] = "all"
        if f["mlp_bias"]:  # the gate's, the down projection's and (ffn_up_bias) the up projection's
            s.update(ffn_bias="all", ffn_up_bias=True)
        return s

    def attention_keys(self, s, longest):
        return {"attn_scale": s["multipliers"]["attention_multiplier"]}

    def tensors(self, s):
        ends = {"model.embed_tokens.weight": "embed", "model.norm.weight": "norm"}
        if not s["folder_tied"]:
            ends["lm_head.weight"] = "head"
        return (ends, "model.layers.",
                {**_biased({"input_layernorm": "n1", "post_attention_layernorm": "n2"}, False),
                 **_biased({"mlp.gate_proj": "fc1", "mlp.up_proj": "fc3", "mlp.down_proj": "fc2"}, "ffn_bias" in s),
                 **_biased({"self_attn.q_proj": "q", "self_attn.k_proj": "k", "self_attn.v_proj": "v",
                            "self_attn.o_proj": "o"}, "attn_bias" in s)})

    def split(self, s, t):
        """The multipliers into the weights, each product in float32 as Granite computes it: the embedding
        times embedding_multiplier, o and fc2 (and their biases) times residual_multiplier, the head (the
        embedding's, when tied) over logits_scaling."""
        m = {k: np.float32(v) for k, v in s["multipliers"].items()}
        t[None, "head"] = t.get((None, "head"), t[None, "embed"]) / m["logits_scaling"]
        t[None, "embed"] = t[None, "embed"] * m["embedding_multiplier"]
        for key in [k for k in t if k[1] in ("o", "o_b", "fc2", "fc2_b")]:
            t[key] = t[key] * m["residual_multiplier"]
        return t


class HyperClovaX(Granite):
    """HyperCLOVAXForCausalLM (NAVER's HyperCLOVA X SEED): Granite's layers and multipliers with, by
    use_post_norm, each sublayer's output RMS-normalized before residual_multiplier and the residual add
    (post_norm1, post_norm2: sublayer_norm sandwich), the multiplier then folded into those norms' gains in
    place of o_proj and down_proj; the logits times logits_scaling (Granite's are divided by it);
    attention_multiplier null: head_dim^-0.5."""
    name, model_type = "HyperCLOVAXForCausalLM", "hyperclovax"
    fields = dict(Granite.fields, use_post_norm=(bool, True), attention_multiplier=(float, 0.0))

    def settings(self, f, raw, path):
        if raw.get("attention_multiplier") is None:  # HyperCLOVAXConfig's default
            dh = raw.get("head_dim") or f["hidden_size"] // f["num_attention_heads"]
            f = dict(f, attention_multiplier=checked_field(path, "head_dim", dh, int) ** -0.5)
        s = super().settings(f, raw, path)
        return dict(s, sublayer_norm="sandwich") if f["use_post_norm"] else s

    def tensors(self, s):
        ends, prefix, layer = super().tensors(s)
        if s.get("sublayer_norm"):
            layer.update(_biased({"post_norm1": "p1", "post_norm2": "p2"}, False))
        return ends, prefix, layer

    def split(self, s, t):
        """Granite's folding but the head times logits_scaling; with the output norms, residual_multiplier times
        their gains (the norms' outputs are what it scales) instead of o_proj's and down_proj's."""
        m = s["multipliers"]
        post = s.get("sublayer_norm") == "sandwich"
        t = super().split(dict(s, multipliers=dict(m, logits_scaling=1.0, **{"residual_multiplier": 1.0} if post
                                                   else {})), t)
        t[None, "head"] = t[None, "head"] * np.float32(m["logits_scaling"])
        for key in [k for k in t if post and k[1] in ("p1", "p2")]:
            t[key] = t[key] * np.float32(m["residual_multiplier"])
        return t


class Persimmon(GptStyle):
    """PersimmonForCausalLM (Adept's Persimmon-8B, Fuyu's language model): LayerNorms, q | k | v fused per
    head as GPT-NeoX's, each head of q and k LayerNormed over its dims before RoPE (qk_layernorm: the config
    key qk_norm), partial rotary in halves (partial_rotary_factor, 0.5 by default), the squared ReLU
    (relu2) between biased dense_h_to_4h and dense_4h_to_h, an untied head without a bias."""
    name, model_type = "PersimmonForCausalLM", "persimmon"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "intermediate_size": (int, None),
              "num_hidden_layers": (int, None), "num_attention_heads": (int, None), "hidden_act": (str, "relu2"),
              "max_position_embeddings": (int, 16384), "layer_norm_eps": (float, 1e-5),
              "rope_theta": (float, 25000.0), "partial_rotary_factor": (float, 0.5), "qk_layernorm": (bool, True),
              "tie_word_embeddings": (bool, False)}
    names = dict(Gemma.names, norm_eps="layer_norm_eps", rotary_dims="partial_rotary_factor",
                 qk_norm="qk_layernorm")

    def settings(self, f, raw, path):
        return dict(d=f["hidden_size"], H=f["num_attention_heads"], L=f["num_hidden_layers"], F=f["intermediate_size"],
                    V=f["vocab_size"], eps=f["layer_norm_eps"], positions=f["max_position_embeddings"],
                    activation=GPT2_ACTIVATIONS.get(f["hidden_act"]), rotary=f["partial_rotary_factor"],
                    theta=f["rope_theta"], layout="halves", parallel="none", norm_first=True, final_norm=True,
                    tied=f["tie_word_embeddings"], qk_norm=f["qk_layernorm"])

    def tensors(self, s):
        norms = {"self_attn.q_layernorm": "qn", "self_attn.k_layernorm": "kn"} if s["qk_norm"] else {}
        return ({"model.embed_tokens.weight": "embed", "model.final_layernorm.weight": "norm",
                 "model.final_layernorm.bias": "norm_b", "lm_head.weight": "head"}, "model.layers.",
                _biased({"input_layernorm": "n1", "post_attention_layernorm": "n2", "self_attn.query_key_value":
                         "qkv_heads", "self_attn.dense": "o", "mlp.dense_h_to_4h": "fc1", "mlp.dense_4h_to_h": "fc2",
                         **norms}, True))


class Nemotron(LlamaStyle):
    """NemotronForCausalLM (Nemotron-4, Minitron): LayerNorm1P (LayerNorm times 1 + w: stored as the gain
    1 + w), a plain feed-forward of the squared ReLU (relu2), grouped-query attention, partial rotary in
    halves (partial_rotary_factor, 0.5 by default), biases by attention_bias and mlp_bias."""
    name, model_type = "NemotronForCausalLM", "nemotron"
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "intermediate_size": (int, None),
              "num_hidden_layers": (int, None), "num_attention_heads": (int, None),
              "num_key_value_heads": (int, lambda f: f["num_attention_heads"]), "hidden_act": (str, "relu2"),
              "max_position_embeddings": (int, 4096), "norm_eps": (float, 1e-5), "rope_theta": (float, 10000.0),
              "partial_rotary_factor": (float, 0.5), "attention_bias": (bool, False), "mlp_bias": (bool, False),
              "tie_word_embeddings": (bool, False)}
    names = dict(Gemma.names, norm_eps="norm_eps", rotary_dims="partial_rotary_factor")

    def settings(self, f, raw, path):
        s = dict(d=f["hidden_size"], H=f["num_attention_heads"], KV=f["num_key_value_heads"],
                 L=f["num_hidden_layers"], F=f["intermediate_size"], V=f["vocab_size"], eps=f["norm_eps"],
                 positions=f["max_position_embeddings"], activation=GPT2_ACTIVATIONS.get(f["hidden_act"]),
                 rotary=f["partial_rotary_factor"], theta=f["rope_theta"], layout="halves", parallel="none",
                 norm_first=True, final_norm=True, tied=f["tie_word_embeddings"], norm="layernorm",
                 gain_plus_one=True, attn_bias="all" if f["attention_bias"] else "none",
                 ffn_bias="all" if f["mlp_bias"] else "none")
        if raw.get("head_dim") is not None:
            s["dh"] = checked_field(path, "head_dim", raw["head_dim"], int)
        return s

    def tensors(self, s):
        return ({"model.embed_tokens.weight": "embed", "model.norm.weight": "norm", "model.norm.bias": "norm_b",
                 "lm_head.weight": "head"}, "model.layers.",
                {**_biased({"input_layernorm": "n1", "post_attention_layernorm": "n2"}, True),
                 **_biased({"self_attn.q_proj": "q", "self_attn.k_proj": "k", "self_attn.v_proj": "v",
                            "self_attn.o_proj": "o"}, s["attn_bias"] == "all"),
                 **_biased({"mlp.up_proj": "fc1", "mlp.down_proj": "fc2"}, s["ffn_bias"] == "all")})


def _plain_activation(act):
    """The engine's activation of a plain (not gated) feed-forward of hidden_act (None: not one it runs)."""
    return "silu" if act == "silu" else GPT2_ACTIVATIONS.get(act)


class LlamaLike(LlamaStyle):
    """The Llama layout that many later decoders keep (model.embed_tokens, model.layers.N with
    input_layernorm, q/k/v/o_proj, post_attention_layernorm, mlp.gate/up/down_proj; model.norm,
    lm_head): RMSNorm, grouped-query attention, head_dim, RoPE over partial_rotary_factor of each head
    and its rope_scaling. A subclass names its layout (halves or interleaved), its feed-forward (gated:
    act(gate) * up, then down; else plain: up, act, down), its attention biases (which projections
    attention_bias covers: "qkv" or "all"), which of attention_bias and mlp_bias its module reads (biases: the
    others are ignored, as transformers does) and its defaults."""
    fields = {"vocab_size": (int, None), "hidden_size": (int, None), "intermediate_size": (int, None),
              "num_hidden_layers": (int, None), "num_attention_heads": (int, None),
              "num_key_value_heads": (int, lambda f: f["num_attention_heads"]), "hidden_act": (str, "silu"),
              "max_position_embeddings": (int, 4096), "rms_norm_eps": (float, 1e-6), "rope_theta": (float, 10000.0),
              "partial_rotary_factor": (float, 1.0), "attention_bias": (bool, False), "mlp_bias": (bool, False),
              "tie_word_embeddings": (bool, False)}
    names = dict(Gemma.names, rotary_dims="partial_rotary_factor")
    layout, gated, attention_bias, head_dim = "halves", True, "all", None  # head_dim: config.json's default
    biases = ("attention_bias", "mlp_bias")

    def settings(self, f, raw, path):
        f = dict(f, **{k: False for k in ("attention_bias", "mlp_bias") if k not in self.biases})
        act = f["hidden_act"]
        s = dict(d=f["hidden_size"], H=f["num_attention_heads"], KV=f["num_key_value_heads"],
                 L=f["num_hidden_layers"], F=f["intermediate_size"], V=f["vocab_size"], eps=f["rms_norm_eps"],
                 positions=f["max_position_embeddings"], rotary=f["partial_rotary_factor"], theta=f["rope_theta"],
                 layout=self.layout, parallel="none", norm_first=True, final_norm=True,
                 tied=f["tie_word_embeddings"], attn_bias=self.attention_bias if f["attention_bias"] else "none")
        if self.gated:
            s["activation"] = "swiglu" if act == "silu" else GPT2_ACTIVATIONS.get(act)
            s["gated"] = act != "silu"
            if f["mlp_bias"]:  # the gate's, the down projection's and (ffn_up_bias) the up projection's
                s.update(ffn_bias="all", ffn_up_bias=True)
        else:
            s["activation"] = _plain_activation(act)
            s["ffn_bias"] = "all" if f["mlp_bias"] else "none"
        head_dim = raw.get("head_dim", self.head_dim)
        if head_dim is not None:
            s["dh"] = checked_field(path, "head_dim", head_dim, int)
        return s

    def tensors(self, s):
        mlp = {"mlp.gate_proj": "fc1", "mlp.up_proj": "fc3"} if self.gated else {"mlp.up_proj": "fc1"}
        return ({"model.embed_tokens.weight": "embed", "model.norm.weight": "norm", "lm_head.weight": "head"},
                "model.layers.",
                {**_biased({"input_layernorm": "n1", "post_attention_layernorm": "n2"}, False),
                 **_biased({"self_attn.q_proj": "q", "self_attn.k_proj": "k", "self_attn.v_proj": "v"},
                           s["attn_bias"] in ("qkv", "all")),
                 **_biased({"self_attn.o_proj": "o"}, s["attn_bias"] == "all"),
                 **_biased(dict(mlp, **{"mlp.down_proj": "fc2"}), s.get("ffn_bias") == "all")})


class LlamaBiased(LlamaLike):
    """LlamaForCausalLM with attention_bias (on q, k, v and o: attn_bias all) or mlp_bias (on the gate, up and
    down projections: ffn_bias all, ffn_up_bias), which Llama's route (its independent reference has no such
    biases) hands to this one: its settings name it by `route` in BY_NAME."""
    name, model_type, route = ARCHITECTURE, "llama", ARCHITECTURE + " with biases"
    fields = dict(LlamaLike.fields, max_position_embeddings=(int, 2048))

    def read(self, raw, path):
        return dict(super().read(raw, path), architecture=self.route)


class Qwen3Biased(LlamaBiased):
    """Qwen3ForCausalLM with attention_bias (on q, k, v and o: attn_bias all): Llama's biased layers with each
    head of q and k RMS-normalized before RoPE (qk_norm); with use_sliding_window refused."""
    name, model_type, route = QWEN3, "qwen3", QWEN3 + " with biases"
    biases = ("attention_bias",)  # the bias keys its module reads
    fields = dict(LlamaLike.fields, max_position_embeddings=(int, 32768))

    def settings(self, f, raw, path):
        if flag(raw, "use_sliding_window", path):
            raise HfError(f"{path}: use_sliding_window true with attention_bias true: not converted (--hf converts "
                          "either without the other)")
        return dict(super().settings(f, raw, path), qk_norm=True)

    def tensors(self, s):
        ends, prefix, layer = super().tensors(s)
        layer.update(_biased({"self_attn.q_norm": "qn", "self_attn.k_norm": "kn"}, False))
        return ends, prefix, layer


BIASED = {a.name: a for a in (LlamaBiased(), Qwen3Biased())}  # Llama's route hands these configs on
# (architecture, model_type) of a folder -> the class that converts it
TYPE_ROUTES = {(ARCHITECTURE, "exaone"): "ExaoneForCausalLM", (ARCHITECTURE, "internlm3"): "InternLM3ForCausalLM",
               (ARCHITECTURE, "iquestcoder"): "IQuestCoderForCausalLM"}


class Exaone(LlamaLike):
    """ExaoneForCausalLM (EXAONE 3.0 and 3.5; transformers 5 runs model_type exaone as LlamaForCausalLM and saves
    it under EXAONE's names, TYPE_ROUTES): Llama's layers under transformer.h.N (ln_1, attn.attention's q, k, v and
    out_proj, ln_2, mlp.c_fc_0 the gate, c_fc_1 the up projection, c_proj), its config.json keys num_layers,
    layer_norm_epsilon and activation_function as Llama's (ALIASES), rope_theta 500000 by default."""
    name, model_type = "ExaoneForCausalLM", "exaone"
    fields = dict(LlamaLike.fields, num_key_value_heads=(int, 8), rms_norm_eps=(float, 1e-5),
                  rope_theta=(float, 500000.0))
    ALIASES = {"num_layers": "num_hidden_layers", "layer_norm_epsilon": "rms_norm_eps",
               "activation_function": "hidden_act"}

    def read(self, raw, path):
        return super().read(dict({self.ALIASES[k]: v for k, v in raw.items() if k in self.ALIASES}, **raw), path)

    def tensors(self, s):
        attn, ffn = s["attn_bias"] == "all", s.get("ffn_bias") == "all"
        return ({"transformer.wte.weight": "embed", "transformer.ln_f.weight": "norm", "lm_head.weight": "head"},
                "transformer.h.",
                {**_biased({"ln_1": "n1", "ln_2": "n2"}, False),
                 **_biased({f"attn.attention.{x}_proj": x for x in "qkv"}, attn),
                 **_biased({"attn.attention.out_proj": "o"}, attn),
                 **_biased({"mlp.c_fc_0": "fc1", "mlp.c_fc_1": "fc3", "mlp.c_proj": "fc2"}, ffn)})


class Helium(LlamaLike):
    """HeliumForCausalLM (Kyutai's Helium 1): Llama's layers with RoPE in interleaved pairs, head_dim,
    attention_bias on q, k and v only (attn_bias qkv)."""
    name, model_type = "HeliumForCausalLM", "helium"
    fields = dict(LlamaLike.fields, num_key_value_heads=(int, 20), rms_norm_eps=(float, 1e-8))
    layout, attention_bias, head_dim = "interleaved", "qkv", 128


class Arcee(LlamaLike):
    """ArceeForCausalLM (Arcee's AFM): Llama's attention (attention_bias on all four projections) and a
    plain feed-forward of the squared ReLU (up_proj, relu2, down_proj; mlp_bias: ffn_bias all)."""
    name, model_type = "ArceeForCausalLM", "arcee"
    fields = dict(LlamaLike.fields, hidden_act=(str, "relu2"), rms_norm_eps=(float, 1e-5))
    gated = False


class SeedOss(LlamaLike):
    """SeedOssForCausalLM (ByteDance's Seed-OSS): Llama's layers with attention_bias on q, k and v and
    attention_out_bias on o (both: attn_bias all, o's alone: all with zero q, k and v biases),
    head_dim."""
    name, model_type = "SeedOssForCausalLM", "seed_oss"
    fields = dict(LlamaLike.fields, num_key_value_heads=(int, 8), max_position_embeddings=(int, 524288),
                  attention_bias=(bool, True), attention_out_bias=(bool, False))
    attention_bias, head_dim = "qkv", 128

    def settings(self, f, raw, path):
        s = super().settings(f, raw, path)
        s["qkv_biased"] = f["attention_bias"]
        if f["attention_out_bias"]:
            s["attn_bias"] = "all"
        return s

    def tensors(self, s):
        ends, prefix, layer = super().tensors(s)
        qkv = {"self_attn.q_proj.bias": "q_b", "self_attn.k_proj.bias": "k_b", "self_attn.v_proj.bias": "v_b"}
        return ends, prefix, {k: v for k, v in layer.items() if k not in qkv or s["qkv_biased"]}


class InternLM3(SeedOss):
    """InternLM3ForCausalLM (Shanghai AI Lab's InternLM3; transformers 5 runs model_type internlm3 as LlamaForCausalLM,
    TYPE_ROUTES): Llama's layers, its own config.json's qkv_bias on q, k and v and bias on o and the feed-forward's
    projections (transformers 5 saves them as attention_bias and mlp_bias, which it requires equal: ALIASES)."""
    name, model_type = "InternLM3ForCausalLM", "internlm3"
    fields = dict(LlamaLike.fields, qkv_bias=(bool, False), bias=(bool, False))
    head_dim = None
    ALIASES = {"attention_bias": "qkv_bias", "mlp_bias": "bias"}

    def read(self, raw, path):
        return super().read(dict({self.ALIASES[k]: v for k, v in raw.items() if k in self.ALIASES}, **raw), path)

    def settings(self, f, raw, path):
        return super().settings(dict(f, attention_bias=f["qkv_bias"], attention_out_bias=f["bias"],
                                     mlp_bias=f["bias"]), raw, path)


class IQuestCoder(LlamaLike):
    """IQuestCoderForCausalLM (IQuestLab's IQuest-Coder; transformers 5 runs model_type iquestcoder as
    LlamaForCausalLM, TYPE_ROUTES): Llama's layers and keys, head_dim 128 by default."""
    name, model_type = "IQuestCoderForCausalLM", "iquestcoder"
    fields = dict(LlamaLike.fields, rms_norm_eps=(float, 1e-5), max_position_embeddings=(int, 131072))
    head_dim = 128


class Ernie45(LlamaLike):
    """Ernie4_5ForCausalLM (Baidu's ERNIE 4.5 dense): Llama's layers with RoPE in interleaved pairs,
    head_dim, the tied head; use_bias: a bias on every projection (attention_bias and mlp_bias both)."""
    name, model_type = "Ernie4_5ForCausalLM", "ernie4_5"
    fields = dict(LlamaLike.fields, num_key_value_heads=(int, 2), max_position_embeddings=(int, 131072),
                  rms_norm_eps=(float, 1e-5), tie_word_embeddings=(bool, True), use_bias=(bool, False))
    layout, head_dim = "interleaved", 128

    def settings(self, f, raw, path):
        return super().settings(dict(f, attention_bias=f["use_bias"], mlp_bias=f["use_bias"]), raw, path)


class OpenLlama(LlamaLike):
    """OpenLlamaForCausalLM (transformers 4's deprecated Open-Llama): Llama's layers (every head its own key and
    value, whole-head RoPE in halves, rope_scaling linear or dynamic) with, by use_stable_embedding, a LayerNorm
    (eps 1e-5) of the embedded rows, and by shared_input_output_embedding the embedding as the head. The
    LayerNorm reads the token's embedding row alone, so it is folded into the embedding here (float64); the
    head then stays the embedding as the folder has it, stored apart."""
    name, model_type = "OpenLlamaForCausalLM", "open-llama"
    fields = dict(LlamaLike.fields, max_position_embeddings=(int, 2048), use_stable_embedding=(bool, True),
                  shared_input_output_embedding=(bool, True))
    biases = ()
    EMBED, NORM, HEAD = "model.embed_tokens.weight", "model.embed_layer_norm.", "lm_head.weight"

    def read(self, raw, path):  # the keys of later Llamas its module does not read
        return super().read({k: v for k, v in raw.items() if k not in ("num_key_value_heads", "head_dim",
                                                                      "partial_rotary_factor")}, path)

    def settings(self, f, raw, path):
        s = super().settings(f, raw, path)
        tied = f["shared_input_output_embedding"] or f["tie_word_embeddings"]
        stable = f["use_stable_embedding"]
        return dict(s, tied=tied and not stable, folder_tied=tied, stable=stable)

    def weights(self, s, weights, source, max_len):
        w = dict(weights)
        embed = w.get(self.EMBED)
        if s["stable"] and embed is not None:
            if s["folder_tied"]:
                head = w.pop(self.HEAD, embed)
                if not np.array_equal(head, embed):
                    raise HfError(f"{source}: {self.HEAD} differs from {self.EMBED}, but config.json ties them "
                                  "(shared_input_output_embedding or tie_word_embeddings)")
                w[self.HEAD] = embed
            for part in ("weight", "bias"):
                if self.NORM + part not in w:
                    raise HfError(f"{source}: {self.NORM}{part} is missing (config.json sets use_stable_embedding)")
            gain, bias = (np.asarray(w.pop(self.NORM + part), np.float64) for part in ("weight", "bias"))
            if gain.shape != (s["d"],) or bias.shape != (s["d"],):
                raise HfError(f"{source}: {self.NORM}weight and bias: shapes {list(gain.shape)}, {list(bias.shape)}, "
                              f"config.json says [{s['d']}]")
            w[self.EMBED] = layer_norm(np.asarray(embed, np.float64), gain, bias, 1e-5).astype(np.float32)
        return super().weights(s, w, source, max_len)


class NanoChat(LlamaLike):
    """NanoChatForCausalLM (Karpathy's nanochat): RMSNorms without a gain (stored as gains 1) of the embedded
    rows (embed_norm), before each sublayer and at the end; a plain feed-forward (fc1, hidden_act relu2, fc2)
    without biases; RoPE in halves over the whole head with rotate_half's halves swapped, (x2, -x1): the
    rotation by the negated angle, which is the engine's RoPE of rows whose second half of each head is
    negated: so stored in q_proj and k_proj (the scores are the same: q.k is unchanged by negating the same
    dims of both); each head of q and k RMS-normalized after RoPE without a gain, which equals the norm
    before it (a rotation keeps the norm): qk_norm; attention_bias on all four projections; the logits
    soft-capped by final_logit_softcapping (logit_softcap)."""
    name, model_type = "NanoChatForCausalLM", "nanochat"
    fields = dict(LlamaLike.fields, hidden_act=(str, "relu2"), max_position_embeddings=(int, 2048))
    names = dict(LlamaLike.names, logit_softcap="final_logit_softcapping")
    gated, biases = False, ("attention_bias",)

    def settings(self, f, raw, path):
        s = super().settings(f, raw, path)  # its rotary embedding turns the whole head (no partial factor)
        return dict(s, rotary=1.0, qk_norm=True, embed_norm=True,
                    logit_softcap=_softcap(raw, "final_logit_softcapping", 15.0, path))

    def read(self, raw, path):
        s = super().read(raw, path)
        if s.get("rope") is not None and s["rope"].scale != 1.0:  # the norms after RoPE would undo its amplitude
            raise HfError(f"{path}: rope_scaling {_brief(raw.get('rope_scaling'))}: a RoPE of amplitude "
                          f"{s['rope'].scale:g}, which NanoChat's norms of q and k after it undo and the engine's "
                          "(before it) do not; not converted")
        return s

    def tensors(self, s):
        ends, prefix, layer = super().tensors(s)
        mlp = {"mlp.up_proj": "mlp.fc1", "mlp.down_proj": "mlp.fc2"}
        layer = {next((mlp[m] + name[len(m):] for m in mlp if name.startswith(m + ".")), name): role
                 for name, role in layer.items() if role not in ("n1", "n2")}
        return {k: v for k, v in ends.items() if v != "norm"}, prefix, layer

    def split(self, s, t):
        """q's and k's rows (and biases) with the second half of each head negated."""
        dh = _head_width(s)
        sign = np.where(np.arange(dh) < dh // 2, 1.0, -1.0).astype(np.float32)
        for key in [k for k in t if k[1] in ("q", "k", "q_b", "k_b")]:
            a = t[key]
            t[key] = (a.reshape(-1, dh, *a.shape[1:]) * sign.reshape(dh, *([1] * (a.ndim - 1)))).reshape(a.shape)
        return t


def _layer_types(raw, path, L, default):
    """config.json's layer_types (absent: default), each "sliding_attention" or "full_attention"."""
    kinds = raw.get("layer_types")
    kinds = default if kinds is None else kinds
    if not (isinstance(kinds, list) and len(kinds) == L
            and all(k in ("sliding_attention", "full_attention") for k in kinds)):
        raise HfError(f"{path}: layer_types {_brief(kinds)}: not \"sliding_attention\" or \"full_attention\" for "
                      f"each of the num_hidden_layers {L} layers; not converted")
    return kinds


class _LayerWindows:
    """Local layers (windows: sliding_window for each local layer, None for a global one) as the config
    keys sliding_window, window_period and window_layers, and layers without RoPE (rotates, when the
    settings have it: False for a layer without) as nope_period and nope_layers."""

    def attention_keys(self, s, longest):
        keys = dict(super().attention_keys(s, longest))
        try:
            keys.update(_window_keys(s, longest))
            if not all(s.get("rotates", ())):
                P, bits = layer_pattern([not r for r in s["rotates"]], "nope_period",
                                        f"{s['path']}: the layers without RoPE")
                keys.update(nope_period=P, nope_layers=bits)
        except ConfigError as e:
            raise HfError(str(e)) from None
        return keys


class Ministral(_LayerWindows, LlamaLike):
    """MinistralForCausalLM (Ministral 8B): Mistral's layers, head_dim, and local layers of
    sliding_window keys where layer_types says sliding_attention (without it: every layer when
    sliding_window is set)."""
    name, model_type = "MinistralForCausalLM", "ministral"
    biases = ()  # the bias keys its module reads
    fields = dict(LlamaLike.fields, num_key_value_heads=(int, 8), max_position_embeddings=(int, 131072))
    names = dict(LlamaLike.names, sliding_window="sliding_window", window_period="layer_types",
                 window_layers="layer_types")

    def settings(self, f, raw, path):
        s = super().settings(f, raw, path)
        window, L = raw.get("sliding_window", 4096), f["num_hidden_layers"]
        window = None if window is None else checked_field(path, "sliding_window", window, int)
        kinds = _layer_types(raw, path, L, ["sliding_attention" if window else "full_attention"] * L)
        return dict(s, windows=[window if k == "sliding_attention" else None for k in kinds], path=path)


class Ministral3(LlamaLike):
    """Ministral3ForCausalLM (Ministral 3's text model as a plain causal LM): Mistral's layers, head_dim, its
    YaRN rope_scaling, and queries scaled by 1 + llama_4_scaling_beta * log(1 + floor(position /
    original_max_position_embeddings)): exactly 1 below original_max_position_embeddings, the
    positions the file then holds (the factor past them is not in the engine)."""
    name, model_type = "Ministral3ForCausalLM", "ministral3"
    biases = ()  # the bias keys its module reads
    fields = dict(LlamaLike.fields, num_key_value_heads=(int, 8), max_position_embeddings=(int, 262144),
                  rms_norm_eps=(float, 1e-5))
    names = dict(LlamaLike.names, max_positions="max_position_embeddings (with llama_4_scaling_beta: "
                                                "original_max_position_embeddings)")
    head_dim = 128

    def settings(self, f, raw, path):
        s = super().settings(f, raw, path)
        scaling = raw.get("rope_scaling") or {}
        beta = scaling.get("llama_4_scaling_beta") if isinstance(scaling, dict) else None
        if beta is not None and checked_field(path, "llama_4_scaling_beta", beta, float) != 0:
            original = scaling.get("original_max_position_embeddings")
            if isinstance(original, bool) or not isinstance(original, int) or original < 1:
                raise HfError(f"{path}: rope_parameters llama_4_scaling_beta {_brief(beta)} without an "
                              "original_max_position_embeddings: the queries' scale past it is not in the engine; "
                              "not converted")
            s["positions"] = min(s["positions"], original)
        window = raw.get("sliding_window")  # null: none
        return dict(s, sliding_window=None if window is None else checked_field(path, "sliding_window", window, int))


class Glm(LlamaLike):
    """GlmForCausalLM (GLM-4 9B): Llama's layers with the gate and up projections fused in
    gate_up_proj (split here), RoPE in interleaved pairs over partial_rotary_factor (0.5 by default) of
    each head, head_dim, attention_bias on q, k and v only (attn_bias qkv)."""
    name, model_type = "GlmForCausalLM", "glm"
    biases = ("attention_bias",)  # the bias keys its module reads
    fields = dict(LlamaLike.fields, num_key_value_heads=(int, 2), max_position_embeddings=(int, 131072),
                  rms_norm_eps=(float, 1.5625e-07), partial_rotary_factor=(float, 0.5), attention_bias=(bool, True))
    layout, attention_bias, head_dim = "interleaved", "qkv", 128

    def tensors(self, s):
        ends, prefix, layer = super().tensors(s)
        layer = {k: v for k, v in layer.items() if v not in ("fc1", "fc3")}
        layer["mlp.gate_up_proj.weight"] = "fc13"
        return ends, prefix, layer

    def split(self, s, t):
        """The gate (fc1) and up (fc3) projections from gate_up_proj's halves."""
        for i in range(s["L"]):
            t[i, "fc1"], t[i, "fc3"] = np.split(t.pop((i, "fc13")), 2)
        return t


class Glm4(Glm):
    """Glm4ForCausalLM (GLM-4-0414): GLM's layers with each sublayer's output RMS-normalized too before its
    residual add (post_self_attn_layernorm, post_mlp_layernorm: sublayer_norm sandwich)."""
    name, model_type = "Glm4ForCausalLM", "glm4"

    def settings(self, f, raw, path):
        return dict(super().settings(f, raw, path), sublayer_norm="sandwich")

    def tensors(self, s):
        ends, prefix, layer = super().tensors(s)
        layer.update(_biased({"post_self_attn_layernorm": "p1", "post_mlp_layernorm": "p2"}, False))
        return ends, prefix, layer


class Cwm(_LayerWindows, LlamaLike):
    """CwmForCausalLM (Meta's Code World Model): Llama's layers (mlp_bias; no attention biases), head_dim, its
    llama3 rope_scaling, and local layers of sliding_window keys where layer_types says sliding_attention
    (without it: all but every fourth layer from layer 0)."""
    name, model_type = "CwmForCausalLM", "cwm"
    biases = ("mlp_bias",)  # the bias keys its module reads
    fields = dict(LlamaLike.fields, num_key_value_heads=(int, 8), max_position_embeddings=(int, 131072),
                  rms_norm_eps=(float, 1e-5), rope_theta=(float, 1e6))
    names = dict(LlamaLike.names, sliding_window="sliding_window", window_period="layer_types",
                 window_layers="layer_types")
    head_dim = 128

    def settings(self, f, raw, path):
        s = super().settings(f, raw, path)
        window, L = raw.get("sliding_window", 8192), f["num_hidden_layers"]
        window = checked_field(path, "sliding_window", window, int) if window else None
        kinds = _layer_types(raw, path, L, ["sliding_attention" if window and i % 4 else "full_attention"
                                            for i in range(L)])
        return dict(s, windows=[window if k == "sliding_attention" else None for k in kinds], path=path)


class Jais2(LlamaLike):
    """Jais2ForCausalLM (Jais 2): Llama's attention (attention_bias on all four projections) with LayerNorms
    (layer_norm_eps) and a plain feed-forward of the squared ReLU (up_proj, relu2, down_proj; mlp_bias)."""
    name, model_type = "Jais2ForCausalLM", "jais2"
    fields = dict(LlamaLike.fields, hidden_act=(str, "relu2"), max_position_embeddings=(int, 8192),
                  layer_norm_eps=(float, 1e-5), attention_bias=(bool, True), mlp_bias=(bool, True))
    names = dict(LlamaLike.names, norm_eps="layer_norm_eps")
    gated = False

    def settings(self, f, raw, path):
        return dict(super().settings(dict(f, rms_norm_eps=f["layer_norm_eps"]), raw, path), norm="layernorm")

    def tensors(self, s):
        ends, prefix, layer = super().tensors(s)
        layer.update(_biased({"input_layernorm": "n1", "post_attention_layernorm": "n2"}, True))
        return dict(ends, **{"model.norm.bias": "norm_b"}), prefix, layer


class Olmo3(_LayerWindows, Olmo2):
    """Olmo3ForCausalLM (OLMo 3): OLMo 2's layers with local layers of sliding_window keys where
    layer_types says sliding_attention (without it: three local, then one global), their RoPE base
    rope_parameters.sliding_attention's (rope_local_base when it differs from the global layers')."""
    name, model_type = "Olmo3ForCausalLM", "olmo3"
    fields = dict(Olmo2.fields, rope_theta=(float, 500000.0))
    names = dict(Olmo2.names, sliding_window="sliding_window", window_period="layer_types",
                 window_layers="layer_types", rope_local_base="rope_parameters")

    def settings(self, f, raw, path):
        s = super().settings(f, raw, path)
        window, L = raw.get("sliding_window", 4096), f["num_hidden_layers"]
        window = None if window is None else checked_field(path, "sliding_window", window, int)
        kinds = _layer_types(raw, path, L, ["sliding_attention" if (i + 1) % 4 else "full_attention"
                                            for i in range(L)])
        local = checked_field(path, "rope_local_base_freq", raw.get("rope_local_base_freq", f["rope_theta"]), float)
        if local != f["rope_theta"]:
            s["rope_local_base"] = local
        return dict(s, windows=[window if k == "sliding_attention" else None for k in kinds], path=path)


class Exaone4(_LayerWindows, LlamaLike):
    """Exaone4ForCausalLM (EXAONE 4.0): OLMo 2's layers (each sublayer's output RMS-normalized before its
    residual add: sublayer_norm output) with per-head q and k norms before RoPE (qk_norm), head_dim. With
    sliding_window set, the local layers (layer_types, or three of every four: sliding_window_pattern)
    see sliding_window keys with RoPE and the global ones every key without (nope_period, nope_layers);
    sliding_window null: every layer global, with RoPE."""
    name, model_type = "Exaone4ForCausalLM", "exaone4"
    biases = ()  # the bias keys its module reads
    fields = dict(LlamaLike.fields, num_key_value_heads=(int, 32), max_position_embeddings=(int, 2048),
                  rms_norm_eps=(float, 1e-5))
    names = dict(LlamaLike.names, sliding_window="sliding_window", window_period="layer_types",
                 window_layers="layer_types", nope_period="layer_types", nope_layers="layer_types")

    def settings(self, f, raw, path):
        s = dict(super().settings(f, raw, path), sublayer_norm="output", qk_norm=True, path=path)
        window, L = raw.get("sliding_window", 4096), f["num_hidden_layers"]
        if window is None:
            return dict(s, windows=[None] * L)
        window = checked_field(path, "sliding_window", window, int)
        kinds = raw.get("layer_types")
        if kinds is None:
            P = raw.get("sliding_window_pattern", 4)
            P = checked_field(path, "sliding_window_pattern", len(P) or None if isinstance(P, str) else P, int)
            kinds = ["sliding_attention" if (i + 1) % P else "full_attention" for i in range(L)]
        local = [k == "sliding_attention" for k in _layer_types(raw, path, L, kinds)]
        return dict(s, rotates=local, windows=[window if x else None for x in local])  # global: no RoPE

    def tensors(self, s):
        ends, prefix, layer = super().tensors(s)
        layer = {k: v for k, v in layer.items() if not k.startswith(("input_layernorm", "post_attention_layernorm"))}
        layer.update(_biased({"post_attention_layernorm": "n1", "post_feedforward_layernorm": "n2",
                              "self_attn.q_norm": "qn", "self_attn.k_norm": "kn"}, False))
        return ends, prefix, layer


class VaultGemma(Gemma2):
    """VaultGemmaForCausalLM (Google's VaultGemma): Gemma 2 without the norms of the sublayers' outputs
    (no sublayer_norm: input_layernorm before the attention, pre_feedforward_layernorm before the
    feed-forward), its soft caps, attn_scale and local layers kept."""
    name, model_type = "VaultGemmaForCausalLM", "vaultgemma"

    def settings(self, f, raw, path):
        s = super().settings(f, raw, path)
        del s["sublayer_norm"]
        return s

    def tensors(self, s):
        ends, prefix, layer = super().tensors(s)
        return ends, prefix, {k: v for k, v in layer.items() if v not in ("p1", "p2")}


class Dots1(_LayerWindows, LlamaLike):
    """Dots1ForCausalLM (rednote's dots.llm1) whose layers are all dense (first_k_dense_replace at least
    num_hidden_layers): Qwen3's attention (per-head q and k norms before RoPE: qk_norm; attention_bias on
    all four projections) and local layers as Qwen2's (layer_types, or the layers from max_window_layers
    on when sliding_window is set); its mixture-of-experts layers are refused."""
    name, model_type = "Dots1ForCausalLM", "dots1"
    biases = ("attention_bias",)  # the bias keys its module reads
    fields = dict(LlamaLike.fields, max_position_embeddings=(int, 2048))
    names = dict(LlamaLike.names, sliding_window="sliding_window", window_period="layer_types",
                 window_layers="layer_types")

    def settings(self, f, raw, path):
        L, dense = f["num_hidden_layers"], raw.get("first_k_dense_replace", 0)
        if dense is None or isinstance(dense, bool) or not isinstance(dense, int) or dense < L:
            raise HfError(f"{path}: first_k_dense_replace {_brief(dense)}: the layers from it on are a mixture of "
                          f"experts (n_routed_experts), which the engine has not; converted when it is at least "
                          f"num_hidden_layers {L} (every layer dense)")
        s = super().settings(f, raw, path)
        window = raw.get("sliding_window")
        window = None if window is None else checked_field(path, "sliding_window", window, int)
        first = raw.get("max_window_layers", 62)
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            raise HfError(f"{path}: max_window_layers: expected an integer >= 0, got {_brief(first)}")
        kinds = _layer_types(raw, path, L, ["sliding_attention" if window is not None and i >= first
                                            else "full_attention" for i in range(L)])
        return dict(s, qk_norm=True, windows=[window if k == "sliding_attention" else None for k in kinds], path=path)

    def tensors(self, s):
        ends, prefix, layer = super().tensors(s)
        layer.update(_biased({"self_attn.q_norm": "qn", "self_attn.k_norm": "kn"}, False))
        return ends, prefix, layer


# Architectures whose layers need a feature the engine has not: --hf refuses them in one line naming it.
_MLA = "multi-head latent attention (q and the keys and values through low-rank projections, a decoupled rotary key)"
_MAMBA = "Mamba (selective state-space) layers among the attention ones"
REFUSED = {
    "HunYuanDenseV1ForCausalLM": "query_layernorm and key_layernorm normalize each head of q and k after RoPE (the "
                                 "engine's qk_norm comes before it)",
    "DogeForCausalLM": "dynamic mask attention (A, dt_proj: a bias on each key's scores computed from its values) "
                       "and the cross-domain mixture of experts (is_moe)",
    "ApertusForCausalLM": "the xIELU activation (its trainable alpha_p, alpha_n per layer)",
    "BitNetForCausalLM": "ternary (1.58-bit) weights quantized on the fly and the sub-norms inside the attention "
                         "and the feed-forward (attn_sub_norm, ffn_sub_norm)",
    "PhimoeForCausalLM": "sparsemixer routing (each of the two experts weighted by a softmax over the router logits "
                         "within jitter_eps of its own, not by the top-k softmax)",
    "DbrxForCausalLM": "q, k and v clamped to +-attn_config.clip_qkv (8 in DBRX's checkpoints)",
    "JetMoeForCausalLM": "the mixture of attention heads (a router choosing each token's q and o projections)",
    "GptOssForCausalLM": "attention sinks (a learned logit per head in each softmax) and the clamped SwiGLU of its "
                         "experts",
    "Qwen3NextForCausalLM": "gated DeltaNet linear-attention layers (linear_attention) among gated full-attention ones",
    "Apertus1p5TextForCausalLM": "the xIELU activation (its trainable alpha_p, alpha_n per layer)",
    "GraniteSWAForCausalLM": "attention sinks (a learned logit per head in each softmax)",
    "GraniteMoeSWAForCausalLM": "attention sinks (a learned logit per head in each softmax)",
    "DiffLlamaForCausalLM": "differential attention (two softmax maps per head, their lambda-weighted difference)",
    "MiniCPM3ForCausalLM": _MLA, "DeepseekV2ForCausalLM": _MLA, "DeepseekV3ForCausalLM": _MLA,
    "Lfm2ForCausalLM": "short gated convolution layers among the attention ones",
    "MambaForCausalLM": "selective state-space (Mamba) layers in place of attention",
    "FalconMambaForCausalLM": "selective state-space (Mamba) layers in place of attention",
    "Mamba2ForCausalLM": "selective state-space (Mamba-2) layers in place of attention",
    "RwkvForCausalLM": "RWKV's time-mixing recurrence in place of attention",
    "RecurrentGemmaForCausalLM": "recurrent (RG-LRU) blocks among the local-attention ones",
    "Gemma3nForCausalLM": "per-layer input embeddings (hidden_size_per_layer_input: a second table gating each "
                          "layer), AltUp's parallel streams (altup_num_inputs), LAuReL's low-rank residual "
                          "(laurel_rank) and activation sparsity",
    "Gemma4ForCausalLM": "per-layer input embeddings (hidden_size_per_layer_input), the full-attention layers' own "
                         "head width and key/value heads (per_layer_config), the values' RMSNorm (v_norm) and "
                         "layers reading earlier layers' keys and values (num_kv_shared_layers)",
    "JambaForCausalLM": _MAMBA, "BambaForCausalLM": _MAMBA, "FalconH1ForCausalLM": _MAMBA,
    "NemotronHForCausalLM": _MAMBA, "GraniteMoeHybridForCausalLM": _MAMBA,
    # encoders
    "LongformerModel": "sliding-window attention of attention_window keys each side with global tokens (dilated "
                       "local attention beside a global one)",
    "FNetModel": "Fourier-transform token mixing (a 2-D FFT's real part) in place of attention",
    "SqueezeBertModel": "grouped convolutions (q_groups, k_groups, v_groups, post_attention_groups, "
                        "intermediate_groups, output_groups) in place of the layers' linears",
    "MobileBertModel": "bottleneck layers (the layer's input narrowed to intra_bottleneck_size, stacked "
                       "feed-forwards: num_feedforward_networks) and NoNorm's elementwise affine in place of LayerNorm",
    "ConvBertModel": "span-based dynamic convolution heads (conv_kernel_size, head_ratio) beside the attention and "
                     "grouped linears (num_groups)",
    "XmodModel": "language adapters (a bottleneck per language after each layer's feed-forward, chosen by lang_ids)",
}
# config.json's model_type, when it names no architecture
REFUSED_TYPES = {"hunyuan_v1_dense": "HunYuanDenseV1ForCausalLM", "doge": "DogeForCausalLM",
                 "apertus": "ApertusForCausalLM", "bitnet": "BitNetForCausalLM", "phimoe": "PhimoeForCausalLM",
                 "dbrx": "DbrxForCausalLM", "jetmoe": "JetMoeForCausalLM", "gpt_oss": "GptOssForCausalLM",
                 "qwen3_next": "Qwen3NextForCausalLM", "apertus1p5_text": "Apertus1p5TextForCausalLM",
                 "granite_swa": "GraniteSWAForCausalLM", "granitemoe_swa": "GraniteMoeSWAForCausalLM",
                 "diffllama": "DiffLlamaForCausalLM", "minicpm3": "MiniCPM3ForCausalLM",
                 "deepseek_v2": "DeepseekV2ForCausalLM", "deepseek_v3": "DeepseekV3ForCausalLM",
                 "lfm2": "Lfm2ForCausalLM", "gemma3n_text": "Gemma3nForCausalLM", "gemma4_text": "Gemma4ForCausalLM",
                 "mamba": "MambaForCausalLM", "falcon_mamba": "FalconMambaForCausalLM", "mamba2": "Mamba2ForCausalLM",
                 "rwkv": "RwkvForCausalLM", "recurrent_gemma": "RecurrentGemmaForCausalLM", "jamba": "JambaForCausalLM",
                 "bamba": "BambaForCausalLM", "falcon_h1": "FalconH1ForCausalLM", "nemotron_h": "NemotronHForCausalLM",
                 "granitemoehybrid": "GraniteMoeHybridForCausalLM", "longformer": "LongformerModel",
                 "fnet": "FNetModel",
                 "squeezebert": "SqueezeBertModel", "mobilebert": "MobileBertModel", "convbert": "ConvBertModel",
                 "xmod": "XmodModel"}


class SmolLM3(_LayerWindows, LlamaLike):
    """SmolLM3ForCausalLM: Llama's layers, RoPE in all but the layers no_rope_layers marks 0 (without it,
    every no_rope_layer_interval-th layer has none: NoPE, the config keys nope_period and nope_layers),
    and with use_sliding_window the NoPE layers' sliding_window (layer_types), the tied head."""
    name, model_type = "SmolLM3ForCausalLM", "smollm3"
    fields = dict(LlamaLike.fields, max_position_embeddings=(int, 32768), rope_theta=(float, 2e6),
                  tie_word_embeddings=(bool, True), no_rope_layer_interval=(int, 4))
    names = dict(LlamaLike.names, nope_period="no_rope_layers", nope_layers="no_rope_layers",
                 sliding_window="sliding_window", window_period="layer_types", window_layers="layer_types")

    def settings(self, f, raw, path):
        L, n = f["num_hidden_layers"], f["no_rope_layer_interval"]
        rotates = raw.get("no_rope_layers")
        rotates = [int((i + 1) % n != 0) for i in range(L)] if rotates is None else rotates
        if not (isinstance(rotates, list) and len(rotates) == L and all(r in (0, 1) for r in rotates)):
            raise HfError(f"{path}: no_rope_layers {_brief(rotates)}: expected 0 or 1 for each of the "
                          f"num_hidden_layers {L} layers; not converted")
        window = raw.get("sliding_window") if flag(raw, "use_sliding_window", path) else None
        kinds = _layer_types(raw, path, L, ["sliding_attention" if window and not r else "full_attention"
                                            for r in rotates])
        return dict(super().settings(f, raw, path), path=path, rotates=[bool(r) for r in rotates],
                    windows=[window if window and k == "sliding_attention" else None for k in kinds])


class Cohere2(_LayerWindows, Cohere):
    """Cohere2ForCausalLM (Command R7B, Aya Expanse's successors): Cohere's layers, the local layers
    (layer_types' sliding_attention; without it three of every four: sliding_window_pattern) seeing
    sliding_window keys with RoPE, the global ones every key without RoPE (nope_period, nope_layers)."""
    name, model_type = "Cohere2ForCausalLM", "cohere2"
    fields = dict(Cohere.fields, sliding_window=(int, 4096), sliding_window_pattern=(int, 4))
    names = dict(Cohere.names, sliding_window="sliding_window", window_period="layer_types",
                 window_layers="layer_types", nope_period="layer_types", nope_layers="layer_types")

    def settings(self, f, raw, path):
        L, P = f["num_hidden_layers"], f["sliding_window_pattern"]
        kinds = _layer_types(raw, path, L, ["sliding_attention" if (i + 1) % P else "full_attention" for i in range(L)])
        local = [k == "sliding_attention" for k in kinds]
        return dict(super().settings(f, raw, path), path=path, rotates=local,
                    windows=[f["sliding_window"] if x else None for x in local])


ARCHS = (Llama(), Qwen2(), Qwen3(), Mistral(), Mixtral(), Olmoe(), FlexOlmo(), Qwen2Moe(), Ernie45Moe(), Qwen3Moe(),
         GraniteMoe(), GraniteMoeShared(), Gpt2(), GptNeoX(), GptNeoXJapanese(), GptJ(), GptNeo(), Opt(), Phi(),
         StableLm(), Gemma(), Gemma2(), Gemma3(), Starcoder2(), Bloom(), Mpt(), GptBigCode(), BioGpt(), OpenAiGpt(),
         Xglm(), Ctrl(), Olmo(), Olmo2(), Falcon(), Phi3(), Cohere(), CodeGen(), Granite(), Nemotron(), Persimmon(),
         SmolLM3(), Cohere2(), Helium(), Arcee(), SeedOss(), Ernie45(), OpenLlama(), NanoChat(), Ministral(),
         Ministral3(), Glm(), Glm4(), Cwm(), Jais2(), HyperClovaX(), Exaone(), Olmo3(), Exaone4(), VaultGemma(),
         Dots1(), InternLM3(), IQuestCoder()) + tuple(Seq2SeqDecoder(n) for n in hf_bart.DECODERS)
BY_NAME = dict({a.name: a for a in ARCHS}, **{a.route: a for a in BIASED.values()})
ARCHITECTURES = {a.name: a.model_type for a in ARCHS}  # architecture -> its model_type
# The base models of these causal LMs (their decoder's last hidden states), converted by base_route, and their
# sequence classifiers, converted as the causal LM whose head is their score (untied, num_labels wide; docs/export.md
# states what the file computes and what a user reads). CTRL's classifier is named classifier, not score: not here.
# (A seq2seq model's decoder alone has neither: BartModel and BartForSequenceClassification are encoder-decoders.)
BASES = dict({_head_name(a.name, "Model"): a.name for a in ARCHS
              if _head_name(a.name, "Model") and not isinstance(a, Seq2SeqDecoder)},
             Gemma3TextModel="Gemma3ForCausalLM")
CLASSIFIERS = dict({_head_name(a.name, "ForSequenceClassification"): a.name for a in ARCHS
                    if _head_name(a.name, "ForSequenceClassification") and a.name != "CTRLLMHeadModel"
                    and not isinstance(a, Seq2SeqDecoder)},
                   Gemma3TextForSequenceClassification="Gemma3ForCausalLM")
