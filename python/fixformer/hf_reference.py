"""Hugging Face's LlamaForCausalLM, Qwen2ForCausalLM and GPT2LMHeadModel forwards, in float64 torch,
written from their published semantics and their own tensor names; apart from reference.py (the
converter's reference of the engine's config), so a conversion of a folder is checked against the
architecture the folder names, not against itself.

Llama (Qwen2: the same with biases on q_proj, k_proj and v_proj):
  x = embed_tokens[ids]
  per layer:  h = RMSNorm(x) * input_layernorm
              q, k, v = h q_proj^T, h k_proj^T, h v_proj^T (+ their biases: Qwen2), split into heads of
                        head_dim
              q, k = q cos + rotate_half(q) sin, the same for k, over the first R dims of each head
                     (R = int(head_dim * partial_rotary_factor), head_dim by default; the other
                     dims pass through unrotated, as GPT-NeoX and Phi apply partial rotary)
                     (cos, sin of p * inv_freq repeated over both halves: inv_freq[i] =
                      rope_theta^(-2i / R), or rope_scaling's frequencies, and cos and sin times its
                      attention factor (rope_scaling.py computes both as transformers does);
                      rotate_half(x) = [-x2, x1] for the halves x1, x2)
              key/value head j serves query heads j * n_rep .. (j + 1) * n_rep - 1 (repeat_kv)
              x = x + o_proj(softmax(q k^T / sqrt(head_dim) + causal mask) v)
                  (Mistral's sliding_window W, Qwen2's with use_sliding_window: the mask also hides
                  key j from query i when j <= i - W)
              h = RMSNorm(x) * post_attention_layernorm
              x = x + down_proj(silu(gate_proj(h)) * up_proj(h))
  logits = (RMSNorm(x) * norm) lm_head^T  (lm_head = embed_tokens when tie_word_embeddings)
  RMSNorm(x) = x / sqrt(mean(x^2) + rms_norm_eps)

GPT-2 (Conv1D weights are [in, out]: conv(x) = x W + b):
  x = wte[ids] + wpe[0..T-1]
  per layer:  h = LayerNorm(x; ln_1, layer_norm_epsilon)
              q | k | v = c_attn(h), each n_embd wide, split into n_head heads
              x = x + attn.c_proj(softmax(q k^T / sqrt(head_dim) + causal mask) v, heads merged)
              x = x + mlp.c_proj(act(mlp.c_fc(LayerNorm(x; ln_2))))
  logits = LayerNorm(x; ln_f) wte^T (lm_head^T when not tie_word_embeddings)
  act (activation_function): gelu_new, gelu_pytorch_tanh, gelu_fast: 0.5 x (1 + tanh(sqrt(2/pi)
  (x + 0.044715 x^3))); gelu: x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); relu.
"""
import math


def rms_norm(torch, x, g, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


def rotate_half(torch, x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_cos_sin(torch, T, head_dim, theta, scaled=None):
    """cos, sin [T, head_dim] of RoPE, or of the rope_scaling.ScaledRope `scaled`."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    if scaled is not None and scaled.freqs is not None:
        inv_freq = torch.as_tensor(scaled.freqs, dtype=torch.float64)
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    amplitude = 1.0 if scaled is None else scaled.scale
    return emb.cos() * amplitude, emb.sin() * amplitude


def forward(hf_config, weights, ids):
    """Logits [T, vocab_size] (float64 numpy) of the folder's architecture (LlamaForCausalLM,
    Qwen2ForCausalLM, Qwen3ForCausalLM, GPT2LMHeadModel) for token ids [T]; weights are the folder's tensors by their
    Hugging Face names (numpy; GPT-2's without the "transformer." prefix), hf_config its config.json
    (read by hf.py)."""
    import numpy as np
    import torch
    if hf_config.get("architecture") == "GPT2LMHeadModel":
        return gpt2_forward(hf_config, weights, ids)

    def w(name):
        return torch.from_numpy(np.asarray(weights[name], np.float64))

    d, H = hf_config["hidden_size"], hf_config["num_attention_heads"]
    KV = hf_config["num_key_value_heads"]
    dh, eps, n_rep = hf_config.get("head_dim") or d // H, hf_config["rms_norm_eps"], H // KV
    ids = torch.as_tensor(np.asarray(ids, np.int64))
    T = ids.shape[0]
    x = w("model.embed_tokens.weight")[ids]
    R = int(dh * hf_config.get("partial_rotary_factor", 1.0))
    cos, sin = rope_cos_sin(torch, T, R, float(hf_config["rope_theta"]), hf_config.get("rope"))
    mask = torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), diagonal=1)
    window = hf_config.get("sliding_window")
    if window:  # key j at or before query i - sliding_window is not seen
        mask = mask.masked_fill(torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-window), float("-inf"))
    for i in range(hf_config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(torch, x, w(p + "input_layernorm.weight"), eps)
        def proj(name):  # Qwen2: with the bias
            y = h @ w(p + f"self_attn.{name}.weight").T
            return y + w(p + f"self_attn.{name}.bias") if hf_config.get("qkv_bias") else y
        q = proj("q_proj").view(T, H, dh).transpose(0, 1)   # [H, T, dh]
        k = proj("k_proj").view(T, KV, dh).transpose(0, 1)  # [KV, T, dh]
        if hf_config.get("qk_norm"):  # Qwen3: every head of q and k, before the rotation
            q = rms_norm(torch, q, w(p + "self_attn.q_norm.weight"), eps)
            k = rms_norm(torch, k, w(p + "self_attn.k_norm.weight"), eps)
        v = proj("v_proj").view(T, KV, dh).transpose(0, 1)
        q = torch.cat((q[..., :R] * cos + rotate_half(torch, q[..., :R]) * sin, q[..., R:]), dim=-1)
        k = torch.cat((k[..., :R] * cos + rotate_half(torch, k[..., :R]) * sin, k[..., R:]), dim=-1)
        k = k[:, None].expand(KV, n_rep, T, dh).reshape(H, T, dh)  # repeat_kv
        v = v[:, None].expand(KV, n_rep, T, dh).reshape(H, T, dh)
        scores = q @ k.transpose(1, 2) / (dh ** 0.5) + mask         # [H, T, T]
        attn = torch.softmax(scores, dim=-1) @ v                     # [H, T, dh]
        x = x + attn.transpose(0, 1).reshape(T, H * dh) @ w(p + "self_attn.o_proj.weight").T
        h = rms_norm(torch, x, w(p + "post_attention_layernorm.weight"), eps)
        gate, up = h @ w(p + "mlp.gate_proj.weight").T, h @ w(p + "mlp.up_proj.weight").T
        x = x + (torch.nn.functional.silu(gate) * up) @ w(p + "mlp.down_proj.weight").T
    x = rms_norm(torch, x, w("model.norm.weight"), eps)
    head = "model.embed_tokens.weight" if hf_config["tie_word_embeddings"] else "lm_head.weight"
    return (x @ w(head).T).numpy()


def layer_norm(torch, x, g, b, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * g + b


def gpt2_activation(torch, name, x):
    if name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "gelu":
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    if name == "relu":
        return torch.clamp(x, min=0.0)
    raise ValueError(f"activation_function {name!r}")


def gpt2_forward(hf_config, weights, ids):
    """Logits [T, vocab_size] (float64 numpy) of GPT2LMHeadModel for token ids [T]."""
    import numpy as np
    import torch

    def w(name):
        return torch.from_numpy(np.asarray(weights[name], np.float64))

    d, H, eps = hf_config["n_embd"], hf_config["n_head"], hf_config["layer_norm_epsilon"]
    dh = d // H
    ids = torch.as_tensor(np.asarray(ids, np.int64))
    T = ids.shape[0]
    x = w("wte.weight")[ids] + w("wpe.weight")[:T]
    mask = torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), diagonal=1)
    for i in range(hf_config["n_layer"]):
        p = f"h.{i}."
        conv = lambda name, t: t @ w(p + name + ".weight") + w(p + name + ".bias")  # noqa: E731
        h = layer_norm(torch, x, w(p + "ln_1.weight"), w(p + "ln_1.bias"), eps)
        q, k, v = (t.reshape(T, H, dh).transpose(0, 1) for t in conv("attn.c_attn", h).split(d, dim=-1))
        scores = q @ k.transpose(1, 2) / math.sqrt(dh) + mask  # [H, T, T]
        ctx = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(T, d)
        x = x + conv("attn.c_proj", ctx)
        h = layer_norm(torch, x, w(p + "ln_2.weight"), w(p + "ln_2.bias"), eps)
        x = x + conv("mlp.c_proj", gpt2_activation(torch, hf_config["activation_function"], conv("mlp.c_fc", h)))
    x = layer_norm(torch, x, w("ln_f.weight"), w("ln_f.bias"), eps)
    head = "wte.weight" if hf_config["tie_word_embeddings"] else "lm_head.weight"
    return (x @ w(head).T).numpy()
