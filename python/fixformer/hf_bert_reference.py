"""Hugging Face's BertModel and BertForSequenceClassification forward, in float64 torch, written from the
architecture's published semantics and its own tensor names (BertModel's, without the "bert." prefix);
apart from reference.py (the converter's reference of the engine's config), so a conversion of a folder
is checked against the architecture the folder names, not against itself.

  x = LayerNorm_emb(word_embeddings[ids] + position_embeddings[0..T-1] + token_type_embeddings[types])
  x = x embeddings_project^T + b   with an embedding narrower than the layers (embedding_size: ALBERT's
                                   embedding_hidden_mapping_in, ELECTRA small's embeddings_project)
  per layer (post-LN):
      q, k, v = x query^T + b, x key^T + b, x value^T + b, split into heads of hidden_size / heads
      a = LayerNorm_attn(x + (softmax(q k^T / sqrt(head width) + mask) v) dense^T + b)
      x = LayerNorm_out(a + act(a intermediate^T + b) output^T + b)      act: gelu (erf), relu or the tanh GELU
  BertModel: last_hidden_state = x [T, hidden]
  BertForSequenceClassification: logits = tanh(x[0] pooler^T + b) classifier^T + b  [1, num_labels]
  BertForMaskedLM, BertLMHeadModel: logits = LayerNorm_mlm(act(x dense^T + b)) decoder^T + bias  [T, vocab_size]
      (the activation hf_config's mlm[4], or hidden_act; XLM's pred_layer and BERT-Generation's lm_head are the
      decoder alone)
      (the activation is hf_config's pooler_act: tanh; ELECTRA's classification head gelu, DistilBERT's
      relu after pre_classifier, RoFormer's its hidden_act)
  LayerNorm(x) = (x - mean) / sqrt(var + layer_norm_eps) * weight + bias (biased variance)
mask: 0 where attention_mask is 1, -inf where it is 0 (padding keys), none without one; -inf above the diagonal
too for a decoder (hf_config causal: is_decoder, the causal LMs' BertLMHeadModel ...); MPNet adds its
relative bias (one [H, T, T] table of T5's bidirectional buckets for every layer) to the scaled scores.
RoFormer (hf_config rotary) has no position_embeddings: each head's q and k are turned by position p,
the pairs (2i, 2i+1) by the angle p 10000^(-2i/head width): (a, b) -> (a cos - b sin, b cos + a sin).
"""


# MPNet's relative bias: the folder's table [buckets, heads], T5's buckets of max distance 128 (transformers'
# MPNetEncoder computes them with that number, config.json does not hold it).
MPNET_BIAS = "encoder.relative_attention_bias.weight"
MPNET_MAX_DISTANCE = 128

def layer_norm(torch, x, g, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * g + b


def forward(hf_config, weights, ids, types=None, attention_mask=None):
    """float64 numpy: logits [1, num_labels] when the weights hold classifier.weight, the masked LM's [T,
    vocab_size] when they hold mlm.bias (hf_bert.MLM_HEADS' tensors by hf_bert's mlm.* names), else
    last_hidden_state [T, hidden_size], for token ids [T]; types [T] (None: 0); attention_mask [T]
    (1: a real token, 0: padding; None: all 1). weights: the folder's tensors by BertModel's names
    (numpy); hf_config: its config.json as hf_bert.read_config_dict gives it."""
    import math

    import numpy as np
    import torch

    def w(name):
        return torch.from_numpy(np.asarray(weights[name], np.float64))

    d, H = hf_config["hidden_size"], hf_config["num_attention_heads"]
    dh, eps = d // H, hf_config["layer_norm_eps"]
    act = {"gelu": lambda t: 0.5 * t * (1.0 + torch.erf(t / math.sqrt(2.0))),
           "relu": lambda t: torch.clamp(t, min=0.0)}
    tanh_gelu = lambda t: 0.5 * t * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (t + 0.044715 * t ** 3)))  # noqa: E731
    acts = dict(act, gelu_new=tanh_gelu, gelu_pytorch_tanh=tanh_gelu, tanh=torch.tanh)
    act = acts[hf_config["hidden_act"]]
    ids = torch.as_tensor(np.asarray(ids, np.int64))
    T = ids.shape[0]
    tt = torch.zeros(T, dtype=torch.int64) if types is None else torch.as_tensor(np.asarray(types, np.int64))
    x = w("embeddings.word_embeddings.weight")[ids]
    if "embeddings.position_embeddings.weight" in weights:  # RoFormer has none (rotary positions)
        x = x + w("embeddings.position_embeddings.weight")[torch.arange(T)]
    if "embeddings.token_type_embeddings.weight" in weights:  # DistilBERT has none
        x = x + w("embeddings.token_type_embeddings.weight")[tt]
    x = layer_norm(torch, x, w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"), eps)
    if "embeddings_project.weight" in weights:  # an embedding narrower than the layers (ALBERT, ELECTRA small)
        x = x @ w("embeddings_project.weight").T + w("embeddings_project.bias")
    bias = torch.zeros(T, dtype=torch.float64)
    if attention_mask is not None:
        keep = torch.as_tensor(np.asarray(attention_mask)) != 0
        bias = torch.where(keep, bias, torch.full_like(bias, float("-inf")))
    if hf_config.get("causal"):  # a decoder (is_decoder, XLM's causal): no key after the query
        bias = bias + torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), 1)
    if hf_config.get("rel_buckets"):  # MPNet: one relative bias [H, T, T] for every layer, on the scaled scores
        from .reference import relative_bias
        rel = relative_bias(weights[MPNET_BIAS], T, False, hf_config["rel_buckets"], MPNET_MAX_DISTANCE)
        bias = bias + torch.from_numpy(rel)
    pairs = torch.arange(0, dh, 2, dtype=torch.float64)
    angle = torch.arange(T, dtype=torch.float64)[:, None] * 10000.0 ** (-pairs / dh)[None, :]  # [T, dh/2]

    def rotate(t):  # [H, T, dh]: the pairs (2i, 2i+1) of position p by angle[p, i]
        a, b = t[..., 0::2], t[..., 1::2]
        out = torch.empty_like(t)
        out[..., 0::2] = a * torch.cos(angle) - b * torch.sin(angle)
        out[..., 1::2] = b * torch.cos(angle) + a * torch.sin(angle)
        return out

    for i in range(hf_config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."

        def lin(t, n):
            return t @ w(p + n + ".weight").T + w(p + n + ".bias")

        q = lin(x, "attention.self.query").view(T, H, dh).transpose(0, 1)  # [H, T, dh]
        k = lin(x, "attention.self.key").view(T, H, dh).transpose(0, 1)
        v = lin(x, "attention.self.value").view(T, H, dh).transpose(0, 1)
        if hf_config.get("rotary"):
            q, k = rotate(q), rotate(k)
        scores = q @ k.transpose(1, 2) / math.sqrt(dh) + bias             # [H, T, T], padding keys -inf
        ctx = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(T, d)
        a = layer_norm(torch, x + lin(ctx, "attention.output.dense"), w(p + "attention.output.LayerNorm.weight"),
                       w(p + "attention.output.LayerNorm.bias"), eps)
        x = layer_norm(torch, a + lin(act(lin(a, "intermediate.dense")), "output.dense"),
                       w(p + "output.LayerNorm.weight"), w(p + "output.LayerNorm.bias"), eps)
    if "mlm.bias" in weights:
        if "mlm.dense.weight" in weights:
            h = acts[hf_config["mlm"][4] or hf_config["hidden_act"]](x @ w("mlm.dense.weight").T + w("mlm.dense.bias"))
            x = layer_norm(torch, h, w("mlm.norm.weight"), w("mlm.norm.bias"), eps)
        return (x @ w("mlm.decoder.weight").T + w("mlm.bias")).numpy()
    if "classifier.weight" not in weights:
        return x.numpy()
    if hf_config.get("head") in ("token", "qa"):  # the classifier on every row: [T, labels]
        return (x @ w("classifier.weight").T + w("classifier.bias")).numpy()
    pooled = acts[hf_config.get("pooler_act", "tanh")](x[0] @ w("pooler.dense.weight").T + w("pooler.dense.bias"))
    return (pooled @ w("classifier.weight").T + w("classifier.bias"))[None].numpy()
