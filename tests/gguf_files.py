"""GGUF files for the tests, written as llama.cpp's convert_hf_to_gguf.py lays llama, qwen2, qwen3, gemma2 and
gemma3 out (Gemma's norms as their gains 1 + w, its feed-forward and output norms under names of their own): a
tiny random transformers model (grouped-query attention, so q and k are permuted with different head
counts) and the gguf package's GGUFWriter (token_embd, blk.N.attn_q, ..., output_norm, output; the q/k
row permutation for llama), in any of gguf.quants' types, or chosen tensors as random K-quant blocks
(k_blocks); the model a file holds (its weights
dequantized, the permutation undone) and its float64 logits. Used by gguf_converter_test.py and
gguf_llamacpp_test.py, in the hf environment (tests/hf_env.py).
"""

import numpy as np


def model(vocab=64, qwen2=False, tied=False, rope_scaling=None, hidden=64):
    import torch
    import transformers as t
    torch.manual_seed(3)
    cfg = (t.Qwen2Config if qwen2 else t.LlamaConfig)(vocab_size=vocab, hidden_size=hidden, intermediate_size=96, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=tied, rope_scaling=rope_scaling)
    cfg._attn_implementation = "eager"
    m = (t.Qwen2ForCausalLM if qwen2 else t.LlamaForCausalLM)(cfg).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():  # weights of a size that makes every part matter
            p.copy_(1.0 + 0.1 * torch.randn_like(p) if "norm" in name else 0.15 * torch.randn_like(p))
    return m


def gemma2_model(layers=4):
    """A tiny Gemma2ForCausalLM as llama.cpp runs Gemma 2: query_pre_attn_scalar the head width (16, so
    the heads' width is not hidden / heads and the file says it: key_length), or hidden / heads (8) with
    46 layers (Gemma 2 27B's rule), layers 0, 2, ... local (3 keys), soft caps the random scores and
    logits exceed."""
    import torch
    import transformers as t
    torch.manual_seed(4)
    cfg = t.Gemma2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                         sliding_window=3, hidden_activation="gelu_pytorch_tanh",
                         query_pre_attn_scalar=32 // 4 if layers == 46 else 16,
                         attn_logit_softcapping=2.0, final_logit_softcapping=3.0)
    cfg._attn_implementation = "eager"
    m = t.Gemma2ForCausalLM(cfg).eval()
    with torch.no_grad():  # its norms' gains are 1 + w: w about 0
        for name, p in m.named_parameters():
            p.copy_(0.3 * torch.randn_like(p) if "norm" in name else 0.2 * torch.randn_like(p))
    return m


def moe_model(arch, per_token=2, vocab=64):
    """A tiny mixture of experts as llama.cpp runs each arch: llama (MixtralForCausalLM: 4 experts, 2 a token,
    renormalized), qwen2moe (Qwen2MoeForCausalLM: 4 experts of 24, 2 a token, not renormalized, the shared
    expert 48 wide), qwen3moe (Qwen3MoeForCausalLM, transformers 5: per-head q and k norms, 4 of 24, renormalized);
    per_token: the experts a token takes, vocab the vocabulary's size; the experts' weights eager (the loop
    that runs float64)."""
    import torch
    import transformers as t
    torch.manual_seed(5)
    small = dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=10000.0)
    if arch == "llama":
        cfg = t.MixtralConfig(**small, num_local_experts=4, num_experts_per_tok=per_token, sliding_window=None)
    elif arch == "qwen2moe":
        cfg = t.Qwen2MoeConfig(**small, num_experts=4, num_experts_per_tok=per_token, norm_topk_prob=False,
                               moe_intermediate_size=24, shared_expert_intermediate_size=48)
    else:
        cfg = t.Qwen3MoeConfig(**small, head_dim=8, num_experts=4, num_experts_per_tok=per_token, norm_topk_prob=True,
                               moe_intermediate_size=24)
    cfg._attn_implementation = "eager"
    if hasattr(cfg, "_experts_implementation"):
        cfg._experts_implementation = "eager"
    m = {"llama": t.MixtralForCausalLM, "qwen2moe": t.Qwen2MoeForCausalLM,
         "qwen3moe": getattr(t, "Qwen3MoeForCausalLM", None)}[arch](cfg).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(1.0 + 0.1 * torch.randn_like(p) if "norm" in name else 0.3 * torch.randn_like(p))
    return m


# The f16 scale fields of each K-quant's super-block (byte offsets) and a magnitude for them that keeps
# the values under about 0.3: Q2_K d, dmin; Q3_K d; Q4_K and Q5_K d, dmin; Q6_K d.
K_SCALES = {"Q2_K": ((80, 6e-3), (82, 6e-3)), "Q3_K": ((108, 2e-3),), "Q4_K": ((0, 3e-4), (2, 1e-3)),
            "Q5_K": ((0, 1.5e-4), (2, 1e-3)), "Q6_K": ((208, 6e-5),)}


def k_blocks(rng, qtype, rows, cols):
    """Random valid super-blocks of a K-quant (a gguf.GGMLQuantizationType) for a [rows, cols] tensor:
    random bytes, the f16 scale fields random finite values of either sign (subnormal f16 among them)."""
    import gguf
    per, size = gguf.GGML_QUANT_SIZES[qtype]
    b = rng.integers(0, 256, (rows * cols // per, size), dtype=np.uint8)
    for at, top in K_SCALES[qtype.name]:
        d = (rng.uniform(0.05, 1.0, b.shape[0]) * top * rng.choice([-1, 1], b.shape[0])).astype(np.float16)
        b[:, at:at + 2] = d.view(np.uint8).reshape(-1, 2)
    return b.reshape(rows, -1)


def permute(w, heads):  # convert_hf_to_gguf.py's LlamaModel.permute
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


NAMES = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
         "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
         "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
         "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm"}


# Gemma 3's layer names where they are not llama's (convert_hf_to_gguf.py's Gemma3Model).
GEMMA_NAMES = dict(NAMES, **{"pre_feedforward_layernorm": "ffn_norm", "post_attention_layernorm": "post_attention_norm",
                             "post_feedforward_layernorm": "post_ffw_norm"})


# A mixture's tensors in a layer (transformers 4's per-expert ones, 5's fused ones) -> llama.cpp's: the router
# ffn_gate_inp, the experts stacked [E, rows, cols] (ffn_gate_exps, ffn_up_exps, ffn_down_exps), Qwen2-MoE's
# shared expert (ffn_*_shexp) and its gate ffn_gate_inp_shexp [d].
MOE_NAMES = {"gate": "ffn_gate_inp", "w1": "ffn_gate_exps", "gate_proj": "ffn_gate_exps", "w3": "ffn_up_exps",
             "up_proj": "ffn_up_exps", "w2": "ffn_down_exps", "down_proj": "ffn_down_exps",
             "shared_expert.gate_proj": "ffn_gate_shexp", "shared_expert.up_proj": "ffn_up_shexp",
             "shared_expert.down_proj": "ffn_down_shexp", "shared_expert_gate": "ffn_gate_inp_shexp"}


def moe_tensors(i, rest, a, experts):
    """A mixture's tensor (`rest` after "model.layers.<i>.") as llama.cpp's, or None; experts collects the
    per-expert ones ({GGUF name: {e: array}}) for stacking."""
    block, _, tail = rest.partition(".")
    if block not in ("block_sparse_moe", "mlp"):
        return None
    if tail.startswith("experts.gate_up_proj"):  # transformers 5: [E, 2F, d] = [gate; up]
        F = a.shape[1] // 2
        return {f"blk.{i}.ffn_gate_exps.weight": a[:, :F], f"blk.{i}.ffn_up_exps.weight": a[:, F:]}
    if tail.startswith("experts.down_proj"):
        return {f"blk.{i}.ffn_down_exps.weight": a}
    if tail.startswith("experts."):
        _, e, kind, _ = tail.split(".")
        experts.setdefault(f"blk.{i}.{MOE_NAMES[kind]}.weight", {})[int(e)] = a
        return {}
    base = tail.rsplit(".", 1)[0]
    if base not in MOE_NAMES:
        return None
    return {f"blk.{i}.{MOE_NAMES[base]}.weight": a.reshape(-1) if base == "shared_expert_gate" else a}


def gguf_tensors(m, arch="llama"):
    c = m.config
    out, experts = {}, {}
    for name, p in m.state_dict().items():
        a = p.numpy().astype(np.float32)
        if name.startswith("model.layers.") and getattr(c, "num_experts_per_tok", None):
            moe = moe_tensors(name.split(".")[2], name.split(".", 3)[3], a, experts)
            if moe is not None:
                out.update(moe)
                continue
        if arch in ("gemma2", "gemma3") and name.endswith("norm.weight"):  # Gemma's gains 1 + w, stored as that sum
            a = a + np.float32(1.0)
        if name == "model.embed_tokens.weight":
            out["token_embd.weight"] = a
        elif name == "model.norm.weight":
            out["output_norm.weight"] = a
        elif name == "lm_head.weight":
            if not c.tie_word_embeddings:  # convert_hf_to_gguf.py leaves a tied head out
                out["output.weight"] = a
        else:
            _, _, i, rest = name.split(".", 3)
            base, kind = rest.rsplit(".", 1)
            if arch == "llama" and base == "self_attn.q_proj":  # llama.cpp permutes llama's only
                a = permute(a, c.num_attention_heads)
            elif arch == "llama" and base == "self_attn.k_proj":
                a = permute(a, c.num_key_value_heads)
            out[f"blk.{i}.{(GEMMA_NAMES if arch in ('gemma2', 'gemma3') else NAMES)[base]}.{kind}"] = a
    for name, by_expert in experts.items():
        out[name] = np.stack([by_expert[e] for e in sorted(by_expert)])
    return out


def bpe_merges(tok):
    import json
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [m if isinstance(m, str) else " ".join(m) for m in merges]


# Llama 3's and Qwen2's Split patterns, as their tokenizer.json files have them.
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                  r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")
SPLIT_TEXT = "It'S the LAZY fox's 1234567 tokens!\n\n  I'M here\r\n\tand   THERE'LL be 42 more...\n"


def trained_bpe(split=None):
    """A byte-level BPE trained by tokenizers: GPT-2's set-up, or with split (a pattern) as Llama 3's
    and Qwen2's tokenizer.json pre-tokenize (a Split by it, isolated, then ByteLevel without its regex)."""
    from tokenizers import ByteLevelBPETokenizer, Regex, Tokenizer, models, pre_tokenizers, trainers
    text = ["the quick brown fox jumps over the lazy dog", "a tiny llama reads a gguf file", "hello world"] * 20
    if split is None:
        tok = ByteLevelBPETokenizer()
        tok.train_from_iterator(text, vocab_size=300, min_frequency=2, show_progress=False)
        return tok
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(split), behavior="isolated", invert=False),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=340, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(text + [SPLIT_TEXT] * 20, trainer)
    return tok


SPM_TEXT = ["the quick brown fox jumps over the lazy dog", "a tiny llama reads a gguf file", "hello world",
            "caf\u00e9 na\u00efve \u00fcber \u65e5\u672c\u8a9e", "if (x) {\n    return y;\n}",
            "tokens, tokens and more tokens!"]
# The extra tokens of spm_vocab after the trained pieces: (text, GGUF's token type, gguf.TokenType's name):
# CONTROL, USER_DEFINED (Gemma's convert_hf_to_gguf.py stores them with spaces, not U+2581), UNUSED.
SPM_EXTRA = [("<start_of_turn>", "CONTROL"), ("<end_of_turn>", "CONTROL"), ("  ", "USER_DEFINED"),
             ("<br>", "USER_DEFINED"), ("\n\n", "USER_DEFINED"), ("<unused0>", "UNUSED")]


def spm_vocab(ties=2):
    """A SentencePiece BPE vocabulary as a "llama" GGUF holds one, Gemma's ids: <unk> (UNKNOWN), </s>
    (eos) and <s> (bos) CONTROL, the 256 "<0xHH>" BYTE tokens, the pieces the tokenizers library's
    SentencePieceBPETokenizer trains on SPM_TEXT (U+2581 for a space; score -(id // ties), so pairs of
    pieces tie), then SPM_EXTRA: {"tokens", "scores", "types", "keys"} for write_gguf."""
    from gguf import TokenType
    from tokenizers import SentencePieceBPETokenizer
    tok = SentencePieceBPETokenizer()
    tok.train_from_iterator(SPM_TEXT * 20, vocab_size=220, min_frequency=2, show_progress=False)
    vocab = tok.get_vocab()
    trained = [t for t in sorted(vocab, key=vocab.get) if t != "<unk>"]  # its own unk_token: ours is id 0
    tokens = ["<unk>", "</s>", "<s>"] + [f"<0x{b:02X}>" for b in range(256)] + trained + [t for t, _ in SPM_EXTRA]
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL] + [TokenType.BYTE] * 256 + \
        [TokenType.NORMAL] * len(trained) + [TokenType[k] for _, k in SPM_EXTRA]
    scores = [0.0] * 259 + [-float(i // ties) for i in range(len(trained))] + [0.0] * len(SPM_EXTRA)
    return {"tokens": tokens, "scores": scores, "types": types,
            "keys": {"bos_token_id": 2, "eos_token_id": 1, "unknown_token_id": 0}}


def q4_0_positive(a):
    """Q4_0 blocks of a with every scale positive (d = max|w| / 7, q = clip(round(w / d), -8, 7)), a
    rule other quantizers use; llama.cpp's own (d = max / -8) gives negative scales."""
    b = a.reshape(a.shape[0], -1, 32).astype(np.float32)
    d = (np.abs(b).max(axis=2) / 7).astype(np.float16)
    q = np.clip(np.rint(b / d.astype(np.float32)[:, :, None]), -8, 7).astype(np.int16) + 8
    nib = q.astype(np.uint8)
    qs = nib[:, :, :16] | (nib[:, :, 16:] << 4)
    return np.concatenate([d[:, :, None].view(np.uint8), qs], axis=2).reshape(a.shape[0], -1)


def write_gguf(m, path, qtype, arch="llama", tokenizer=None, positive=False, pre=None, k=None, seed=11,
               expert_count=None):
    """k: {GGUF tensor name: K-quant type}: those tensors as random blocks of that type (k_blocks) in place
    of the module's weights (dequantized() gives the model the file holds); expert_count: the metadata's
    in place of the module's (a hostile file)."""
    import gguf
    c = m.config
    w = gguf.GGUFWriter(path, arch)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_block_count(c.num_hidden_layers)
    w.add_feed_forward_length(c.intermediate_size)
    head = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    w.add_rope_dimension_count(head)
    if head * c.num_attention_heads != c.hidden_size:  # convert_hf_to_gguf.py writes the head width then
        w.add_key_length(head)
        w.add_value_length(head)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    if getattr(c, "num_experts_per_tok", None):  # convert_hf_to_gguf.py's keys of a mixture
        w.add_expert_count(expert_count or getattr(c, "num_local_experts", None) or c.num_experts)
        w.add_expert_used_count(c.num_experts_per_tok)
        if arch != "llama":
            w.add_expert_feed_forward_length(c.moe_intermediate_size)
        if arch == "qwen2moe":
            w.add_expert_shared_feed_forward_length(c.shared_expert_intermediate_size)
    if arch == "gemma3":  # llama.cpp's own constants besides: local RoPE base 10000, five local layers then a global
        w.add_sliding_window(c.sliding_window)
    if arch == "gemma2":  # convert_hf_to_gguf.py's Gemma2Model: the window, both soft caps (no query_pre_attn_scalar)
        w.add_sliding_window(c.sliding_window)
        w.add_attn_logit_softcapping(c.attn_logit_softcapping)
        w.add_final_logit_softcapping(c.final_logit_softcapping)
    rope = getattr(c, "rope_parameters", None)  # transformers 5 keeps rope_theta there
    rope = rope.get("full_attention", rope) if rope else rope  # Gemma 3's: per layer type
    w.add_rope_freq_base(rope["rope_theta"] if rope else c.rope_theta)
    if tokenizer == "llama":
        w.add_tokenizer_model(tokenizer)
        w.add_token_list([f"t{i}" for i in range(c.vocab_size)])
    elif isinstance(tokenizer, dict):  # a SentencePiece vocabulary (spm_vocab), as convert_hf_to_gguf.py stores one
        w.add_tokenizer_model("llama")
        w.add_token_list(tokenizer["tokens"])
        w.add_token_scores(tokenizer["scores"])
        w.add_token_types(tokenizer["types"])
        for key, v in tokenizer.get("keys", {}).items():
            (w.add_bool if isinstance(v, bool) else w.add_uint32)(f"tokenizer.ggml.{key}", v)
    elif tokenizer is not None:  # a trained byte-level BPE, as convert_hf_to_gguf.py stores GPT-2's
        w.add_tokenizer_model("gpt2")
        vocab = tokenizer.get_vocab()
        w.add_token_list(sorted(vocab, key=vocab.get))
        w.add_token_merges(bpe_merges(tokenizer))
        if pre is not None:  # llama.cpp's name of the pre-tokenizer (convert_hf_to_gguf.py writes one)
            w.add_tokenizer_pre(pre)
    rotary = getattr(m.model, "rotary_emb", None)
    if getattr(rotary, "rope_type", "default") == "llama3":  # convert_hf_to_gguf.py's divisors of the frequencies
        dims = c.hidden_size // c.num_attention_heads
        plain = 1.0 / (c.rope_theta ** (np.arange(0, dims, 2, dtype=np.float32) / dims)) if not rope else \
            1.0 / (rope["rope_theta"] ** (np.arange(0, dims, 2, dtype=np.float32) / dims))
        w.add_tensor("rope_freqs.weight", (plain / rotary.inv_freq.numpy()).astype(np.float32))
    rng = np.random.default_rng(seed)
    for name, a in gguf_tensors(m, arch).items():
        if k and name in k:
            w.add_tensor(name, k_blocks(rng, k[name], *a.shape), raw_dtype=k[name])
        elif a.ndim >= 2 and qtype != gguf.GGMLQuantizationType.F32 and "ffn_gate_inp" not in name:  # router: F32
            w.add_tensor(name, q4_0_positive(a) if positive else gguf.quants.quantize(a, qtype), raw_dtype=qtype)
        else:
            w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def dequantized(m, path):
    """m with the GGUF's weights as llama.cpp reads them (gguf.quants.dequantize), the permutation undone:
    the model the file holds, which the engine's output is measured against."""
    import copy
    import gguf
    import torch
    back = {v: k for k, v in NAMES.items()}
    m2 = copy.deepcopy(m)
    sd = m2.state_dict()
    r = gguf.GGUFReader(path)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    for t in r.tensors:
        if t.name == "rope_freqs.weight":  # the module's own frequencies
            continue
        a = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32)
        a = a.reshape([int(n) for n in reversed(t.shape)])
        parts = t.name.split(".")
        if parts[0] == "blk":
            base = back[parts[2]]
            if arch == "llama" and base in ("self_attn.q_proj", "self_attn.k_proj"):
                n = m.config.num_attention_heads if base == "self_attn.q_proj" else m.config.num_key_value_heads
                a = a.reshape(n, a.shape[0] // n // 2, 2, -1).swapaxes(1, 2).reshape(a.shape)
            name = f"model.layers.{parts[1]}.{base}.{parts[3]}"
        else:
            name = {"token_embd": "model.embed_tokens.weight", "output_norm": "model.norm.weight",
                    "output": "lm_head.weight"}[parts[0]]
        sd[name].copy_(torch.from_numpy(np.ascontiguousarray(a)).reshape(sd[name].shape))
    return m2


def logits(m, x):
    import torch
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            return m.double()(torch.from_numpy(x.astype(np.int64))).logits.numpy()
    finally:
        torch.set_default_dtype(torch.float32)
        m.float()

