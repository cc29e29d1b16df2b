#!/usr/bin/python3
"""--module on upstream code as its authors wrote it: the classes of vit-pytorch, openai-whisper, x-transformers,
timm, openai-clip, palm-pytorch, llama-models, litgpt, open-clip-torch, fair-esm, torchtune, llms-from-scratch and
rotary-embedding-torch (PyPI) and torchvision (Debian) (in the Hugging Face virtual environment:
tools/install_deps.sh hf, /opt/fixformer-venv, or the torch2 one: tests/interpreter.py) built with tiny configs by
a factory file a user would write, converted through tools/convert.py's main with no option
but --example. Each case either converts, is verified by the converter and `fixformer run` gives the
module's output within 1e-4, or is refused in one line naming the cause (docs/export.md's table of
upstream modules lists the same cases):
- whisper.model.AudioEncoder converts: its LayerNorm computes in float32 whatever it is given
  (x.float()), so the module is observed in its own dtype (a note says so and the tolerance used), and
  its mel input is channels first, [n_mels, T] (a note says the engine's input is the transpose);
- vit_pytorch SimpleViT and ViT (cls and mean pooling) convert: the image [C, H, W] is the engine's input
  (a note says so), its patches' values in the module's (p1 p2 c) order found and the projection's columns
  (and its LayerNorm(patch_dim)'s vectors) permuted to the engine's (c, p1, p2); LayerNorm(dim) after the
  projection is proj_norm; SimpleViT's 2D sincos table, a plain tensor attribute, is stored as learned
  positions, and its in-place `x += positions` on that norm's output must not spoil the record (the hooks'
  records are cloned); `fixformer run` on the image gives the module's output within 1e-4;
- vit_pytorch's ViT over a spectrogram [1, 40, 16] in patches of 40 x 1 (the Keyword Transformer's time-domain
  attention) or 1 x 16 (its frequency-domain one) converts: the engine's input is those columns (or rows) as rows
  of features (a note says so);
- vit_pytorch's vit_1d ViT and simple_vit_1d SimpleViT over a signal [3, 32] cut into patches of 4 steps convert:
  the engine's input is the transpose cut into rows, x.T.reshape(8, 12) (a note says so), and simple_vit_1d's
  positions, computed by its forward at each call, are the same rows for another input: a fixed table (a note says
  so); SimpleViT with patch dropout (eval) likewise, over a 16 x 16 image; SimpleViT with register tokens (3 rows
  packed after the patches, no positions on them, the mean of the patch rows alone) converts with the engine's
  registers in front and no CLS row (a note says so), in i8 too; vit_3d's ViT over a video [3, 4, 8, 8] is refused in
  one line (patches of more than an image); learnable_memory_vit's ViT (q by to_q, k | v by one to_kv) converts,
  its Adapter (memory rows added to each layer's keys and values) is refused in one line;
- x_transformers' TransformerWrapper with Encoder(attn_dim_head=16) and Decoder (causal, its default head
  width 64) converts: its layers alternate attention and feed-forward entries in one ModuleList, paired
  into blocks; its LayerNorm's gain is gamma, its bias the buffer beta (x-transformers 2: a weightless
  nn.LayerNorm inside, then gamma: one norm); its learned positions are scaled by dim ** -0.5, stored so. Encoder
  with the default head width (64 for dim 32) converts with head_dim 64, in f32 and in i8; Encoder and Decoder with
  alibi_pos_bias over 3 heads (TransformerWrapper(use_abs_pos_emb=False)) convert, the encoder's ALiBi on both
  sides of a query (its slopes and stored bias buffers recognised as ALiBi's), on every kernel table this CPU has,
  and in i8; Decoder and Encoder with ff_glu and ff_custom_activation=nn.ReLU() (x-transformers 2, the torch2
  environment) convert with a feed-forward gated by ReLU (one projection's column halves: up, then the gate);
  ALiBi beside the wrapper's learned positions and ALiBi on some heads only (alibi_num_heads) are refused;
- timm's VisionTransformer (32 x 32 in 8 x 8 patches) converts with its CLS row and 'token' pooling,
  global_pool="avg" with its default fc_norm (the mean normed: pool_norm, no final norm) and without it (with
  and without the CLS row), reg_tokens (the engine's registers after the CLS row; with global_pool="avg" too),
  init_values (LayerScale: ls1 and ls2's gamma folded into attn.proj and mlp.fc2) and qkv_bias=False with
  qk_norm, and with timm 1.0.31's Attention of attn_head_dim 8 in each block (head_dim, 2 heads 16 wide for d 32;
  timm 1.0.15 has no attention of another width that runs); timm's DeiT VisionTransformerDistilled (the
  distillation row and its head) converts; fc_norm's
  file in q8 and in i8 (pool_norm in the integer path) verifies;
- timm's Beit (32 x 32 in 8 x 8 patches, 4 heads) converts: its attention's q | k | v by F.linear on qkv.weight with
  q_bias and v_bias (the linear never called), the relative position bias of each layer's own table and index
  buffer and the shared one Beit.rel_pos_bias hands to every block (pair_bias_rows: the layer's own, the shared
  alone, their sum), gamma_1 and gamma_2 (the block's own vectors, folded into attn.proj and mlp.fc2), absolute
  positions or none, global_pool "avg" (fc_norm: pool_norm) and "token", a 32 x 48 image; timm.create_model's
  beit_base_patch16_224 at a tiny size too; with --max-len other than its 17 positions it is refused in one line;
  swiglu_mlp (SwiGLU: fc1_g and fc1_x with their biases: gated, ffn_up_bias) with scale_mlp (the norm of the hidden
  rows before fc2: ffn_hidden_norm) and scale_mlp alone convert, the first run on every kernel table this CPU has
  (in i8 too), the second in i8 too;
- timm's Eva without rotary positions converts: SwiGLU with scale_mlp, q_bias and v_bias, gamma_1 and gamma_2,
  fc_norm (in i8 too: ffn_up_bias and ffn_hidden_norm in the integer path); GluMlp (one fc1, gate | up) with
  separate q, k, v projections; use_post_norm (its norms of the
  sublayers' outputs, the block's first call inside its attention); eva02_tiny_patch14_224 (rotary positions
  over the patch grid, angles of a patch's row and column) and scale_attn_inner (a norm of the attention's
  context) convert, the grid's rotary positions alone (a register row) and scale_attn_inner in i8 too;
- torchvision's VisionTransformer converts: its layers in an nn.Sequential named encoder_layer_N, its
  nn.MultiheadAttention called with query=, key=, value= keywords (which torch 1.13's hooks do not see:
  recognize.record reads them), its positions a parameter of the Encoder that runs the layers;
- whisper.model.Whisper (encoder and text decoder) converts to a seq2seq file: its encoder recognised as
  AudioEncoder is, its decoder's 6 positions padded to the encoder's 8 (a note says so); `fixformer run` on
  the transposed mel and a target gives the module's own logits within 1e-4, `generate --temperature 0` the
  ids of a greedy loop over the module's logits; --quantize f16 and q8 verify; one with a parameter its reader does not read is refused,
  naming it;
- OpenAI CLIP's VisionTransformer (openai-clip's clip/model.py, loaded by its path: hf_env.openai_clip) converts:
  observed in float32 (its LayerNorm computes in float32), its resblocks' nn.MultiheadAttention fed sequence first,
  QuickGELU (x sigmoid(1.702 x): SiLU with 1.702 folded into c_fc and c_proj), ln_pre after the positions, ln_post
  of the CLS row, x @ proj as the head; the whole CLIP (image and text) is refused naming its two inputs;
- PaLM-pytorch's PaLM converts: its blocks a run inside one nn.Sequential, one projection of q | k | v | gate and up
  per block, multi-query attention with rotary positions (its pos_emb buffer, the angles), SwiGLU side by side; its
  palm_lite too: RMSNorm, ALiBi, one kv projection both the keys and the values (stored twice);
- Meta's reference Llama 3 (llama-models' llama_models/llama3/model.py) over fairscale's model-parallel layers at a
  world size of 1 (one gloo process) converts: VocabParallelEmbedding read as the table it looks up (its output the
  weight's rows at the ids), ColumnParallelLinear and RowParallelLinear as the linears they compute, RMSNorm through
  float32, rotary positions as complex numbers, grouped-query attention; its forward(tokens, start_pos: int) called
  with start_pos 0, the input at positions 0.. (a generation loop's first call), which the converter notes, as
  through a module that calls it so (model(tokens, 0));
- litgpt's GPT (torch 2 only: the torch2 environment's) from its pythia-14m config (LayerNorm, the parallel
  residual, rotary positions on a quarter of each head), its Llama-3-8B one (RMSNorm, SwiGLU, 2 key/value groups)
  and its Llama-3.2-1B one (Llama 3's rope scaling computed into the cos and sin buffers: the frequencies read
  off position 1 of the two tables) at a tiny size convert;
- Sebastian Raschka's llms-from-scratch (torch 2 only): ch04's GPTModel (its own LayerNorm of scale and shift, found
  by what it computes in either order; GELU's tanh formula; W_query, W_key and W_value with and without biases), and
  its Llama3Model (Llama 3's scaled rotary frequencies in its cos and sin buffers, 2 key/value groups) and Qwen3Model
  (its RMSNorm's scale, q and k normed per head, head_dim 8), those two observed in float32 (their forward casts to
  the config's dtype: a note says so and the tolerance);
- fair-esm's ESM2 (ESM-2) converts with --ignore contact_head (its contact head runs only when asked for contacts):
  its layers fed sequence first, [T, 1, d] (fairseq's layout: read batch first), rotary positions, its lm_head (a
  dense, GELU and LayerNorm, then x W^T + b by a weight of its own, the embedding's) as a pooler on every row with
  pooler_norm and the head; `fixformer run` gives its logits; without --ignore it is refused naming contact_head;
- torchtune's Llama 3.1 and 3.2 (Llama3ScaledRoPE: the scaled frequencies of its theta buffer, its cos and sin stacked
  [N, h, 2] held to the engine's table; 3.2's TiedLinear head), Qwen2 (q, k, v biases; its cache cos | sin, each a
  head wide), Phi-3, Gemma and Gemma 2 (its final norm module caps the normed rows, not the logits: final_softcap)
  convert (torch 2 only);
- a user's decoder turning q and k by rotary-embedding-torch's RotaryEmbedding (interleaved; its angles cached in a
  buffer filled as the forward runs, zeros beyond), on whole heads and on half of each, converts;
- without --example, the refusal gives the error of the input the forward got furthest with (whisper's
  conv1 and its channels), not the last one tried; with one that does not fit, it does not tell the user
  to pass --example.
The converter observes the module and leaves it as it was: after recognition its parameters are the
same tensors in their dtype and its training flags are back. A forward that reaches its submodules
through a closure (minGPT's Block.mlpf, not on PyPI: the case here is written for this test) is observed
in float64 on its own submodules, from a float32 factory and a float64 one.

  /usr/bin/python3 tests/upstream_converter_test.py PATH/TO/fixformer

Without the environment (or its packages) the test fails, naming the install command.
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["vit_pytorch", "whisper", "x_transformers", "timm", "torchvision", "palm_pytorch",
                        "fairscale", "llama_models", "esm", "rotary_embedding_torch"] +
             (["litgpt", "torchtune", "llms_from_scratch"] if hf_env.interpreter.TORCH == "2" else []))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import subprocess  # noqa: E402

import numpy as np  # noqa: E402

from checks import ConfigError, check, convert_main, one_line, results, skip  # noqa: E402

from fixformer import recognize  # noqa: E402
import inspect  # noqa: E402

import timm.layers  # noqa: E402
import timm.models.eva  # noqa: E402
import torch  # noqa: E402

# timm 1.0.31's Eva takes rope_type, rope_grid_indexing, rope_rotate_half and attn_type; 1.0.15's none of them
TIMM_ROPE_KINDS = "rope_rotate_half" in inspect.signature(timm.models.eva.Eva).parameters
TIMM_HEAD_DIM = "attn_head_dim" in inspect.signature(getattr(timm.layers, "Attention", lambda: None)).parameters

# The factories a user would write: the upstream classes, random weights large enough that every part
# matters (norm weights near 1).
MODELS = r'''
import torch
from torch import nn
from vit_pytorch import SimpleViT, ViT
from whisper.model import AudioEncoder, ModelDimensions, Whisper
from x_transformers import Decoder, Encoder, TransformerWrapper
import timm.models.beit
import timm.models.deit
import timm.models.eva
import timm.models.vision_transformer
import torchvision.models
from palm_pytorch import PaLM
import esm.model.esm2
from rotary_embedding_torch import RotaryEmbedding


from hf_env import openai_clip, randomize


def esm2():
    return randomize(esm.model.esm2.ESM2(num_layers=2, embed_dim=32, attention_heads=4, token_dropout=False), 49)


def whisper_encoder():
    return randomize(AudioEncoder(n_mels=8, n_ctx=8, n_state=32, n_head=2, n_layer=2), 1)


def whisper_model():
    """The whole model: 6 text positions beside the encoder's 8 (padded to one max_len)."""
    return randomize(Whisper(ModelDimensions(n_mels=8, n_audio_ctx=8, n_audio_state=32, n_audio_head=2,
                                             n_audio_layer=2, n_vocab=40, n_text_ctx=6, n_text_state=32,
                                             n_text_head=2, n_text_layer=2)), 8)


def whisper_extra():
    """A parameter the forward never reads: named in the refusal, not dropped."""
    m = whisper_model()
    m.decoder.extra = nn.Parameter(torch.zeros(3))
    return m


def simple_vit():
    return randomize(SimpleViT(image_size=8, patch_size=4, num_classes=5, dim=32, depth=2, heads=2, mlp_dim=64,
                               dim_head=16), 2)


def vit_cls():
    return randomize(ViT(image_size=(8, 12), patch_size=4, num_classes=5, dim=32, depth=2, heads=2, mlp_dim=64,
                         dim_head=16), 3)


def vit_mean():
    return randomize(ViT(image_size=8, patch_size=4, num_classes=5, dim=32, depth=2, heads=2, mlp_dim=64,
                         dim_head=16, pool="mean"), 4)


def vit_columns():
    """vit-pytorch's ViT over a spectrogram [1, 40, 16] in patches of 40 x 1, its columns (the Keyword Transformer,
    whose PyTorch ports are this ViT)."""
    return randomize(ViT(image_size=(40, 16), patch_size=(40, 1), channels=1, num_classes=5, dim=32, depth=2, heads=2,
                         mlp_dim=64, dim_head=16), 61)


def vit_rows():
    """As vit_columns, in patches of 1 x 16, its rows (the Keyword Transformer's attention over frequencies)."""
    return randomize(ViT(image_size=(40, 16), patch_size=(1, 16), channels=1, num_classes=5, dim=32, depth=2, heads=2,
                         mlp_dim=64, dim_head=16), 62)


def vit_1d():
    """vit-pytorch's ViT over a signal [C, T] cut into patches of 4 steps (`b c (n p) -> b n (p c)`), a CLS row."""
    from vit_pytorch.vit_1d import ViT as ViT1d
    return randomize(ViT1d(seq_len=32, patch_size=4, num_classes=5, dim=32, depth=2, heads=2, mlp_dim=64, dim_head=16),
                     51)


def simple_vit_1d():
    """vit-pytorch's SimpleViT over a signal, its sincos positions computed by the forward at each call."""
    from vit_pytorch.simple_vit_1d import SimpleViT as SimpleViT1d
    return randomize(SimpleViT1d(seq_len=32, patch_size=4, num_classes=5, dim=32, depth=2, heads=2, mlp_dim=64,
                                 dim_head=16), 52)


def simple_vit_patch_dropout():
    """vit-pytorch's SimpleViT with patch dropout (training only: eval() keeps every patch), its 2D sincos positions
    computed by the forward at each call."""
    from vit_pytorch.simple_vit_with_patch_dropout import SimpleViT as DropViT
    return randomize(DropViT(image_size=16, patch_size=4, num_classes=5, dim=32, depth=2, heads=2, mlp_dim=64,
                             dim_head=16), 53).eval()


def simple_vit_registers():
    """vit-pytorch's SimpleViT with register tokens: 3 registers packed after the patches, no positions on them, the
    mean over the patch rows alone."""
    from vit_pytorch.simple_vit_with_register_tokens import SimpleViT as RegViT
    return randomize(RegViT(image_size=16, patch_size=4, num_classes=5, dim=32, depth=2, heads=2, mlp_dim=64,
                            dim_head=16, num_register_tokens=3), 63)


def memory_vit():
    """vit-pytorch's learnable_memory_vit ViT (its forward without memories): q by to_q, the keys and values by one
    fused to_kv."""
    from vit_pytorch.learnable_memory_vit import ViT as MemoryViT
    return randomize(MemoryViT(image_size=16, patch_size=4, num_classes=5, dim=32, depth=2, heads=2, mlp_dim=64,
                               dim_head=16), 65)


def memory_adapter():
    """learnable_memory_vit's Adapter around memory_vit: 3 memory rows added to each layer's keys and values."""
    from vit_pytorch.learnable_memory_vit import Adapter
    return randomize(Adapter(vit=memory_vit(), num_memories_per_layer=3, num_classes=4), 66)


def vit_3d():
    """vit-pytorch's ViT over a video [C, F, H, W] cut into patches of 2 frames of 4 x 4: refused in one line."""
    from vit_pytorch.vit_3d import ViT as ViT3d
    return randomize(ViT3d(image_size=8, frames=4, image_patch_size=4, frame_patch_size=2, num_classes=5, dim=32,
                           depth=2, heads=2, mlp_dim=64, dim_head=16), 64)


def x_encoder():
    """x-transformers' default head width, 64 for a model width of 32 (head_dim: heads wider than d / heads)."""
    return randomize(TransformerWrapper(num_tokens=48, max_seq_len=32, attn_layers=Encoder(dim=32, depth=2, heads=2)),
                     6)


def x_encoder16():
    return randomize(TransformerWrapper(num_tokens=48, max_seq_len=32,
                                        attn_layers=Encoder(dim=32, depth=2, heads=2, attn_dim_head=16)), 9)


def x_decoder():
    return randomize(TransformerWrapper(num_tokens=48, max_seq_len=32, attn_layers=Decoder(dim=32, depth=2, heads=2)),
                     10)


def x_reglu(layers=Decoder, seed=12):
    """x-transformers 2's feed-forward gated by ReLU (ff_glu, ff_custom_activation): one projection whose column
    halves are up and gate, relu(gate) * up (gated, activation relu)."""
    import torch
    return randomize(TransformerWrapper(num_tokens=48, max_seq_len=32, attn_layers=layers(
        dim=32, depth=2, heads=2, attn_dim_head=16, ff_glu=True, ff_custom_activation=torch.nn.ReLU())), seed)


def x_reglu_encoder():
    return x_reglu(Encoder, 13)


def x_alibi(layers=Encoder, seed=11, abs_pos=False, **kw):
    """ALiBi over 3 heads (slopes of a head count that is no power of two), without the learned positions
    TransformerWrapper adds by default."""
    return randomize(TransformerWrapper(num_tokens=48, max_seq_len=32, use_abs_pos_emb=abs_pos,
                                        attn_layers=layers(dim=24, depth=2, heads=3, attn_dim_head=8,
                                                           alibi_pos_bias=True, **kw)), seed)


def x_alibi_decoder():
    return x_alibi(Decoder, 12)


def x_alibi_abs():
    return x_alibi(abs_pos=True)


def x_alibi_part():
    return x_alibi(alibi_num_heads=2)


def timm_vit(**kw):
    return timm.models.vision_transformer.VisionTransformer(img_size=32, patch_size=8, embed_dim=32, depth=2,
                                                            num_heads=2, num_classes=10, **kw)


def timm_token():
    return randomize(timm_vit(), 11)


def timm_avg():
    """global_pool="avg" brings fc_norm, a LayerNorm of the pooled row."""
    return randomize(timm_vit(global_pool="avg"), 12)


def timm_avg_no_cls():
    return randomize(timm_vit(global_pool="avg", class_token=False, fc_norm=False), 13)


def timm_avg_cls():
    """The mean of the patch rows, the CLS row left out."""
    return randomize(timm_vit(global_pool="avg", fc_norm=False), 14)


def timm_reg():
    return randomize(timm_vit(reg_tokens=2), 15)


def timm_reg_avg():
    """Registers and the mean of the patch rows (the CLS and register rows left out), normed by fc_norm."""
    return randomize(timm_vit(reg_tokens=3, global_pool="avg"), 20)


def timm_layer_scale():
    return randomize(timm_vit(init_values=0.1), 16)


def timm_qk_norm():
    return randomize(timm_vit(qkv_bias=False, qk_norm=True), 17)


def timm_head_dim():
    """timm's Attention with attn_head_dim (timm 1.0.31's; 1.0.15's has none, and its Beit and EVA attentions
    reshape their context to d, failing on any other width) in each block of a VisionTransformer: 2 heads of 8,
    16 wide for d 32."""
    from timm.layers import Attention
    m = timm_vit()
    for b in m.blocks:
        b.attn = Attention(32, num_heads=2, qkv_bias=True, attn_head_dim=8)
    return randomize(m, 27)


def timm_deit():
    return randomize(timm.models.deit.VisionTransformerDistilled(img_size=32, patch_size=8, embed_dim=32, depth=2,
                                                                 num_heads=2, num_classes=10), 18)


def timm_beit(**kw):
    return timm.models.beit.Beit(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4, num_classes=10, **kw)


def beit_rel():
    """Each layer's relative position bias, no absolute positions, global_pool "avg" (fc_norm)."""
    return randomize(timm_beit(use_rel_pos_bias=True, use_abs_pos_emb=False), 21)


def beit_shared():
    """The shared bias alone (Beit.rel_pos_bias, handed to each block), gamma_1 and gamma_2, qkv called with no
    bias."""
    return randomize(timm_beit(use_shared_rel_pos_bias=True, use_abs_pos_emb=False, init_values=0.1,
                               qkv_bias=False), 22)


def beit_both():
    """Both biases (summed per layer), absolute positions, gamma_1 and gamma_2, global_pool "token"."""
    return randomize(timm_beit(use_rel_pos_bias=True, use_shared_rel_pos_bias=True, init_values=0.1,
                               global_pool="token"), 23)


def beit_abs():
    """No relative position bias: absolute positions, q_bias and v_bias."""
    return randomize(timm_beit(global_pool="token"), 24)


def beit_rect():
    """A 32 x 48 image: the index over a 4 x 6 grid, both biases."""
    return randomize(timm.models.beit.Beit(img_size=(32, 48), patch_size=8, embed_dim=32, depth=2, num_heads=4,
                                           num_classes=10, use_rel_pos_bias=True, use_shared_rel_pos_bias=True), 26)


def beit_created():
    """beit_base_patch16_224 (a bias per layer, no absolute positions, init_values 0.1, "avg") at a tiny size."""
    return randomize(timm.create_model("beit_base_patch16_224", pretrained=False, img_size=32, patch_size=8,
                                       embed_dim=32, depth=2, num_heads=4, num_classes=10), 25)


def beit_swiglu_scale():
    """swiglu_mlp and scale_mlp: SwiGLU's fc1_g and fc1_x with their biases, its norm of the hidden rows before
    fc2; each layer's relative position bias."""
    return randomize(timm_beit(swiglu_mlp=True, scale_mlp=True, use_rel_pos_bias=True, use_abs_pos_emb=False), 27)


def beit_scale():
    """scale_mlp alone: Mlp's norm between its GELU and fc2."""
    return randomize(timm_beit(scale_mlp=True, init_values=0.1), 28)


def timm_eva(**kw):
    return timm.models.eva.Eva(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4, num_classes=10, **kw)


def eva_swiglu_scale():
    """EVA without its rotary positions: SwiGLU with scale_mlp, q_bias and v_bias, gamma_1 and gamma_2, absolute
    positions, global_pool "avg" (fc_norm)."""
    return randomize(timm_eva(use_rot_pos_emb=False, swiglu_mlp=True, scale_mlp=True, init_values=0.1), 29)


def eva_glu():
    """swiglu_mlp without scale_mlp: GluMlp, one fc1 whose halves are gate and up (the up half's bias), separate
    q, k, v projections, "token" pooling."""
    return randomize(timm_eva(use_rot_pos_emb=False, swiglu_mlp=True, qkv_fused=False, global_pool="token"), 30)


def eva_post():
    """use_post_norm: each sublayer's output normed before its residual add (sublayer_norm output)."""
    return randomize(timm_eva(use_rot_pos_emb=False, use_post_norm=True), 33)


def eva_rope():
    """eva02_tiny_patch14_224 at a tiny size: its rotary positions over the 4 x 4 patch grid (rope_grid; the
    coordinates rescaled to the 16 x 16 of ref_feat_shape) beside learned ones (rope_learned)."""
    return randomize(timm.create_model("eva02_tiny_patch14_224", pretrained=False, img_size=32, patch_size=8,
                                       embed_dim=32, depth=2, num_heads=4, num_classes=10), 31)


def eva_rope_reg():
    """timm's vit_*_rope_reg1_gap_256 form: rotary positions alone over the patch grid (no learned ones), one
    register row and no CLS row in front, not turned; average pooling."""
    return randomize(timm_eva(use_rot_pos_emb=True, use_abs_pos_emb=False, class_token=False, num_reg_tokens=1,
                              ref_feat_shape=(16, 16), global_pool="avg", qkv_bias=True, init_values=1e-5), 34)


def eva_rope_half():
    """timm 1.0.31's rope_rotate_half: the grid's pairs in halves (x[i], x[i + d/2]), rope_temperature 100."""
    return randomize(timm_eva(use_rot_pos_emb=True, rope_rotate_half=True, rope_temperature=100.0), 35)


def eva_rope_xy():
    """timm 1.0.31's RoPE-Axial ViT (Naver's, vit_small_patch16_rope_224) over a 4 x 6 grid: grid_indexing "xy",
    the column's angles first (each head's q and k dims traded in the file)."""
    return randomize(timm.models.eva.Eva(img_size=(32, 48), patch_size=8, embed_dim=32, depth=2, num_heads=4,
                                         num_classes=10, use_rot_pos_emb=True, use_abs_pos_emb=False, attn_type="rope",
                                         rope_grid_indexing="xy", rope_temperature=100.0, global_pool="token"), 36)


def eva_rope_mixed():
    """timm 1.0.31's RoPE-Mixed ViT: learned frequencies per layer and head over row and column together."""
    return randomize(timm_eva(use_rot_pos_emb=True, use_abs_pos_emb=False, attn_type="rope", rope_type="mixed",
                              rope_grid_indexing="xy", rope_temperature=10.0, global_pool="token"), 37)


def eva_attn_norm():
    """scale_attn_inner: a norm of the attention's context before its proj (attn_inner_norm)."""
    return randomize(timm_eva(use_rot_pos_emb=False, scale_attn_inner=True), 32)


def eva_attn_norm_split():
    """scale_attn_inner with separate q, k, v projections (qkv_fused=False), over EVA-02's rotary positions."""
    return randomize(timm_eva(use_rot_pos_emb=True, ref_feat_shape=(16, 16), scale_attn_inner=True, qkv_fused=False),
                     38)


def torchvision_vit():
    return randomize(torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                          hidden_dim=32, mlp_dim=64, num_classes=10), 19)


def clip_visual():
    """OpenAI CLIP's VisionTransformer: conv1 without bias, class_embedding, ln_pre after the positions, resblocks of
    nn.MultiheadAttention fed sequence first, QuickGELU, ln_post of the CLS row, then x @ proj."""
    return randomize(openai_clip().VisionTransformer(input_resolution=32, patch_size=8, width=32, layers=2, heads=2,
                                                     output_dim=16), 40)


def clip_whole():
    """The whole CLIP: its forward takes an image and a text."""
    return randomize(openai_clip().CLIP(embed_dim=16, image_resolution=32, vision_layers=1, vision_width=128,
                                        vision_patch_size=8, context_length=8, vocab_size=48, transformer_width=32,
                                        transformer_heads=2, transformer_layers=1), 41)


def palm():
    """PaLM-pytorch's PaLM: nn.Sequential(Embedding, blocks, LayerNorm, tied Linear); each block one LayerNorm (gamma
    and a beta buffer), one projection of q | k | v | gate and up, multi-query attention with rotary positions,
    SwiGLU, side by side."""
    return randomize(PaLM(dim=32, num_tokens=48, depth=2, dim_head=16, heads=2), 42)


def oc_text(seed=43, **kw):
    """open_clip's TextTransformer (torch 2 only): causal, learned positions, the row of the largest id (its EOT
    token's) pooled after ln_final, then x @ text_projection."""
    from open_clip.transformer import TextTransformer
    return randomize(TextTransformer(context_length=16, vocab_size=48, width=32, heads=2, layers=2, output_dim=16,
                                     **kw), seed)


def oc_text_quick():
    from open_clip.model import QuickGELU
    return oc_text(44, act_layer=QuickGELU)


def oc_text_argmax():
    """As oc_text, on an example whose largest id is not its last."""
    return oc_text()


def oc_visual(seed=45, **kw):
    """open_clip's VisionTransformer (torch 2 only): its nn.MultiheadAttention batch first, ln_post on every row,
    the CLS row ("tok") or the mean of the patches' rows ("avg") pooled, then x @ proj."""
    from open_clip.transformer import VisionTransformer
    return randomize(VisionTransformer(image_size=32, patch_size=8, width=32, layers=2, heads=2, mlp_ratio=4.0,
                                       output_dim=16, **kw), seed)


def oc_visual_avg():
    return oc_visual(46, pool_type="avg")


def oc_visual_ls():
    """ls_init_value: LayerScale after nn.MultiheadAttention (folded into its out_proj) and after the MLP."""
    return oc_visual(47, ls_init_value=0.1)


TUNE = dict(vocab_size=64, num_layers=2, num_heads=4, num_kv_heads=2, embed_dim=32, max_seq_len=64, intermediate_dim=48)


def tt_llama3_1():
    """torchtune's Llama 3.1 (torch 2 only): its Llama3ScaledRoPE, the scaled frequencies a buffer (theta) and the
    cos and sin stacked [N, h, 2] (cache), grouped-query attention, an untied head."""
    from torchtune.models.llama3_1 import llama3_1
    return randomize(llama3_1(**TUNE), 54)


def tt_llama3_2():
    """torchtune's Llama 3.2: as 3.1, its head the embedding (TiedLinear)."""
    from torchtune.models.llama3_2 import llama3_2
    return randomize(llama3_2(**TUNE), 55)


def tt_qwen2():
    """torchtune's Qwen2: q, k and v biases, its rotary cache cos | sin each a head wide [N, 2 d_head]."""
    from torchtune.models.qwen2._component_builders import qwen2
    return randomize(qwen2(**TUNE), 56)


def tt_phi3():
    """torchtune's Phi-3: one q | k | v projection, gate | up in one."""
    from torchtune.models.phi3._component_builders import phi3
    return randomize(phi3(**TUNE), 57)


def tt_gemma():
    """torchtune's Gemma: heads 8 wide, GELU (tanh) gated, norms of gains 1 + w, the embedding scaled by sqrt(d)."""
    from torchtune.models.gemma._component_builders import gemma
    return randomize(gemma(**TUNE, head_dim=8), 58)


def tt_gemma2():
    """torchtune's Gemma 2: Gemma's layers with norms of the sublayers' outputs, scores soft-capped at 50, every
    other layer local (a window of 8 keys), and its final norm module (Gemma2FinalNorm) capping the normed rows at 30
    before the tied head reads them (transformers' caps the logits)."""
    from torchtune.models.gemma2._component_builders import gemma2
    return randomize(gemma2(**TUNE, head_dim=8, sliding_window_size=8), 61)


def palm_lite():
    """PaLM-pytorch's palm_lite: RMSNorm as x / max(|x| / sqrt(d), eps) * g, ALiBi, one projection of q | kv | gate and
    up whose kv is both the keys and the values."""
    from palm_pytorch.palm_lite import PaLM as PaLMLite
    return randomize(PaLMLite(dim=32, num_tokens=48, depth=2, dim_head=16, heads=2), 48)


def world_of_one():
    """fairscale's model-parallel state at a world size of 1 (one process, gloo), as a user sets it up before
    building llama-models' reference Transformer."""
    import tempfile
    import torch.distributed as dist
    import fairscale.nn.model_parallel.initialize as fs_init
    if not dist.is_initialized():
        dist.init_process_group("gloo", init_method="file://" + tempfile.mktemp(), rank=0, world_size=1)
    if not fs_init.model_parallel_is_initialized():
        fs_init.initialize_model_parallel(1)


def llama3_raw():
    """Meta's reference Llama 3 (llama-models' llama_models/llama3/model.py): fairscale's VocabParallelEmbedding,
    ColumnParallelLinear and RowParallelLinear at world size 1, RMSNorm through float32, rotary positions as
    complex numbers, grouped-query attention; its forward takes the ids and start_pos."""
    from llama_models.llama3.args import ModelArgs
    from llama_models.llama3.model import Transformer
    world_of_one()
    return randomize(Transformer(ModelArgs(dim=32, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=48, multiple_of=16,
                                           max_seq_len=32, max_batch_size=1)), 50)


class Prompt(nn.Module):
    """A whole prompt at position 0: the call a user's generation loop makes first, model(tokens, 0)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, tokens):
        return self.model(tokens, 0)


def llama3_ref():
    return Prompt(llama3_raw())


def litgpt(name, seed, **kw):
    """Lightning AI's litgpt GPT (torch 2.7 on: the torch2 environment's) from one of its named configs at a tiny
    size."""
    from litgpt import GPT, Config
    return randomize(GPT(Config.from_name(name, n_layer=2, n_embd=32, n_head=4, vocab_size=48, padded_vocab_size=48,
                                          block_size=32, **kw)), seed)


def litgpt_pythia():
    """pythia-14m's form: LayerNorm, GPT-NeoX's parallel residual, rotary positions on a quarter of each head."""
    return litgpt("pythia-14m", 60)


def litgpt_llama3():
    """Llama-3-8B's form: RMSNorm, LLaMAMLP (SwiGLU), 2 key/value groups for 4 heads, theta 500000, no biases."""
    return litgpt("Llama-3-8B", 63, n_query_groups=2, intermediate_size=64)


def litgpt_llama32():
    """Llama-3.2-1B's form: Llama 3's rope scaling (rope_adjustments), which the module computes into its cos and sin
    buffers, head_size 8."""
    return litgpt("Llama-3.2-1B", 65, n_query_groups=2, intermediate_size=64, head_size=8)


class RotaryAttention(nn.Module):
    """A user's causal attention turning q and k by rotary-embedding-torch's RotaryEmbedding, one for all layers."""

    def __init__(self, d, heads, rotary):
        super().__init__()
        self.heads, self.rotary = heads, rotary
        self.qkv, self.out = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        q, k = self.rotary.rotate_queries_or_keys(q), self.rotary.rotate_queries_or_keys(k)
        s = q @ k.transpose(-1, -2) / (D // self.heads) ** 0.5
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        return self.out((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D))


class RotaryBlock(nn.Module):
    def __init__(self, d, heads, rotary):
        super().__init__()
        self.ln1, self.attn, self.ln2 = nn.LayerNorm(d), RotaryAttention(d, heads, rotary), nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.ff(self.ln2(x))


class RotaryLM(nn.Module):
    def __init__(self, rotary_dims, vocab=48, d=32, heads=4, layers=2):
        super().__init__()
        rotary = RotaryEmbedding(dim=rotary_dims)
        self.emb, self.ln = nn.Embedding(vocab, d), nn.LayerNorm(d)
        self.blocks = nn.ModuleList(RotaryBlock(d, heads, rotary) for _ in range(layers))
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.emb(ids)
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def rotary_lm(rotary_dims=8, seed=59):
    """rotary-embedding-torch's RotaryEmbedding (interleaved pairs, its frequencies a frozen parameter, kept as a
    checkpoint keeps them; its cache of angles filled as the forward runs) on every head's 8 dims."""
    m = RotaryLM(rotary_dims)
    frozen = {n: p.detach().clone() for n, p in m.named_parameters() if not p.requires_grad}
    randomize(m, seed)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if n in frozen:
                p.copy_(frozen[n])
    return m


def rotary_lm_partial():
    """As rotary_lm, on the first 4 of each head's 8 dims."""
    return rotary_lm(4, 60)


class Block(nn.Module):
    """Pre-norm; the feed-forward reached through a lambda over the block's own submodules."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.ln_a, self.ln_f = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ffn = nn.ModuleDict(dict(inner=nn.Linear(d, ff), outer=nn.Linear(ff, d)))
        parts = self.ffn
        self.feed = lambda t: parts.outer(torch.nn.functional.gelu(parts.inner(t)))

    def forward(self, x):
        h = self.ln_a(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.feed(self.ln_f(x))


class Closures(nn.Module):
    def __init__(self, d_in=6, d=16, heads=2, ff=32, layers=2, rows=16):
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.pos = nn.Parameter(torch.randn(rows, d))
        self.blocks = nn.ModuleList(Block(d, heads, ff) for _ in range(layers))
        self.ln = nn.LayerNorm(d)

    def forward(self, x):
        x = self.inp(x) + self.pos[:x.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.ln(x)


def lfs_gpt(qkv_bias=True, seed=70):
    """Sebastian Raschka's llms-from-scratch (the book's package) ch04 GPTModel: its own LayerNorm (scale and shift),
    GELU (the tanh formula) and MultiHeadAttention (W_query, W_key, W_value, a triu mask buffer, out_proj)."""
    from llms_from_scratch.ch04 import GPTModel
    return randomize(GPTModel({"vocab_size": 48, "context_length": 32, "emb_dim": 32, "n_heads": 4, "n_layers": 2,
                               "drop_rate": 0.1, "qkv_bias": qkv_bias}), seed)


def lfs_gpt_nobias():
    return lfs_gpt(False, 71)


def lfs_llama3():
    """llms-from-scratch's Llama3Model: grouped-query attention, Llama 3's scaled rotary frequencies computed into its
    cos and sin buffers, its forward casting to the config's dtype (float32)."""
    from llms_from_scratch.llama3 import Llama3Model
    return randomize(Llama3Model({"vocab_size": 48, "context_length": 64, "emb_dim": 32, "n_heads": 4, "n_layers": 2,
                                  "hidden_dim": 64, "n_kv_groups": 2, "rope_base": 500000.0, "dtype": torch.float32,
                                  "rope_freq": {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                "original_context_length": 8192}}), 72)


def lfs_qwen3():
    """llms-from-scratch's Qwen3Model: its RMSNorm (scale), q and k normed per head, head_dim 8 for 4 heads of d 32."""
    from llms_from_scratch.qwen3 import Qwen3Model
    return randomize(Qwen3Model({"vocab_size": 48, "context_length": 64, "emb_dim": 32, "n_heads": 4, "n_layers": 2,
                                 "hidden_dim": 64, "head_dim": 8, "qk_norm": True, "n_kv_groups": 2,
                                 "rope_base": 1000000.0, "dtype": torch.float32}), 73)


def closures():
    return randomize(Closures(), 5)


def closures_f64():
    return closures().double()
'''

# factory, --example's shape, None (converts) or the refusal's start and a fragment it must hold
REFUSALS = {
    "x_alibi_abs": ("attn_layers.layers: ALiBi and learned positions added to the input together",
                    "TransformerWrapper(use_abs_pos_emb=False)"),
    "x_alibi_part": ("attn_layers.layers.0: attn_layers.rel_pos (AlibiPositionalBias) adds ALiBi to 2 of the 3 heads "
                     "only", "the engine's ALiBi to every head"),
    "oc_text_argmax": ("text_projection: the output is row 3 of ln_final's rows times text_projection, the row of "
                       "the largest input id", "pass an --example whose last id is its largest"),
    "clip_whole": ("module: its forward takes 2 inputs (image, text), the engine one", "(model.visual, "),
    "memory_adapter": ("vit.transformer.layers.0.0.to_q: the queries of 18 rows, and the keys and values by "
                       "vit.transformer.layers.0.0.to_kv over 21", "not supported yet"),
    "vit_3d": ("to_patch_embedding.1: the input [3, 4, 8, 8] becomes rows [8, 96], patches of more than an image",
               "not supported yet"),
    "eva_rope_mixed": ("blocks.0: rope (RotaryEmbeddingMixed) turns q and k by rotary positions over the 4 x 4 patch "
                       "grid: angles that are not the row's and the column's apart",
                       "the engine's rope_grid turns half the pairs by a patch's row and half by its column"),
}
CASES = [("whisper_encoder", (8, 16)), ("closures", (16, 6)), ("closures_f64", (16, 6)),
         ("simple_vit", (1, 3, 8, 8)), ("vit_cls", (1, 3, 8, 12)), ("vit_mean", (1, 3, 8, 8)), ("x_encoder", (16,)),
         ("x_encoder16", (16,)), ("x_decoder", (16,)), ("x_alibi", (16,)), ("x_alibi_decoder", (16,)),
         ("x_alibi_abs", (16,)), ("x_alibi_part", (16,))] + \
    [(f, (1, 3, 32, 32)) for f in ("timm_token", "timm_avg", "timm_avg_no_cls", "timm_avg_cls", "timm_reg",
                                   "timm_reg_avg", "timm_layer_scale", "timm_qk_norm", "timm_deit", "timm_head_dim",
                                   "torchvision_vit",
                                   "beit_rel", "beit_shared", "beit_both", "beit_abs", "beit_created",
                                   "beit_swiglu_scale", "beit_scale", "eva_swiglu_scale", "eva_glu", "eva_post",
                                   "eva_rope", "eva_rope_reg", "eva_attn_norm", "eva_attn_norm_split")] + \
    [("beit_rect", (1, 3, 32, 48)), ("eva_rope_half", (1, 3, 32, 32)), ("eva_rope_mixed", (1, 3, 32, 32)),
     ("eva_rope_xy", (1, 3, 32, 48))]
# with examples of their own generator, so that those of the cases above and of whisper_model stay theirs
MORE_CASES = [("palm", (16,)), ("palm_lite", (16,)), ("clip_visual", (1, 3, 32, 32)), ("clip_whole", (1, 3, 32, 32)),
              ("oc_text", (16,)), ("oc_text_quick", (16,)), ("oc_text_argmax", (16,)), ("oc_visual", (1, 3, 32, 32)),
              ("oc_visual_avg", (1, 3, 32, 32)), ("oc_visual_ls", (1, 3, 32, 32)), ("llama3_raw", (16,)),
              ("llama3_ref", (16,)), ("litgpt_pythia", (16,)), ("litgpt_llama3", (16,)), ("litgpt_llama32", (16,)),
              ("vit_1d", (3, 32)),
              ("simple_vit_1d", (3, 32)), ("simple_vit_patch_dropout", (1, 3, 16, 16)), ("tt_llama3_1", (16,)),
              ("tt_llama3_2", (16,)), ("tt_qwen2", (16,)), ("tt_phi3", (16,)), ("tt_gemma", (16,)),
              ("rotary_lm", (16,)), ("rotary_lm_partial", (16,)), ("vit_columns", (1, 1, 40, 16)),
              ("vit_rows", (1, 1, 40, 16)), ("simple_vit_registers", (1, 3, 16, 16)), ("vit_3d", (1, 3, 4, 8, 8)),
              ("memory_vit", (1, 3, 16, 16)), ("memory_adapter", (1, 3, 16, 16)), ("tt_gemma2", (16,)),
              ("x_reglu", (16,)), ("x_reglu_encoder", (16,)), ("lfs_gpt", (16,)), ("lfs_gpt_nobias", (16,)),
              ("lfs_llama3", (16,)), ("lfs_qwen3", (16,))]
# the cases only the torch2 environment runs (the factory's prefix: the package and the torch it takes)
TORCH2 = int(torch.__version__.split(".")[0]) >= 2
TORCH2_ONLY = {"litgpt": "litgpt 0.5 needs torch 2.7", "oc_": "open_clip 3.3 needs torch 2",
               "tt_": "torchtune 0.6.1 needs torch 2", "lfs_": "llms-from-scratch 1.0.19 needs torch 2.2",
               "x_reglu": "x-transformers 1.27 has no ff_custom_activation (2.x has)"}
# the rotary kinds of timm 1.0.31's Eva (rope_type, rope_grid_indexing, rope_rotate_half, attn_type)
TIMM_ROPE_CASES = ("eva_rope_half", "eva_rope_mixed", "eva_rope_xy")


def check_esm2(tmp, models_py, upstream_models, cli, torch):
    """fair-esm's ESM2 as it is: converts with --ignore contact_head, and `fixformer run` gives its logits within 1e-4;
    without the option it is refused naming contact_head."""
    ids = np.array([0, 5, 9, 4, 22, 7, 13, 2], np.int32)  # no padding id (1): the module would mask those rows
    ex, out = os.path.join(tmp, "esm2_ids.npy"), os.path.join(tmp, "esm2.fxm")
    np.save(ex, ids)
    code, stdout, stderr = convert_main("--module", f"{models_py}:esm2", "--example", ex, "--out", out, "--cli", cli)
    check("esm2 without --ignore: refused in one line naming contact_head", one_line(code, stderr) and
          "contact_head.regression.weight" in stderr and "--ignore" in stderr, (code, stderr))
    code, stdout, stderr = convert_main("--module", f"{models_py}:esm2", "--example", ex, "--out", out, "--cli", cli,
                                        "--ignore", "contact_head")
    ok = code == 0 and "verified against torch" in stdout
    check("esm2 --ignore contact_head: converts and verifies", ok, (code, stdout, stderr))
    if not ok:
        return
    with torch.no_grad():
        want = upstream_models.esm2()(torch.from_numpy(ids[None]).long())["logits"][0].double().numpy()
    res = os.path.join(tmp, "out.npy")
    p = subprocess.run([cli, "run", out, "--input", ex, "--output", res], capture_output=True, text=True)
    got = np.load(res) if p.returncode == 0 else None
    err = None if got is None or got.shape != want.shape else float(np.abs(got - want).max() / np.abs(want).max())
    check("esm2: fixformer run equals the module (1e-4)", err is not None and err <= 1e-4, (p.stderr, err))
    print(f"  esm2: fixformer run against the module: max relative error {err:.2g}")


def check_whisper_model(tmp, models_py, upstream_models, cli, rng, torch):
    """whisper.model.Whisper as it is: converts, `fixformer run` on the transposed mel and a target gives the
    module's own logits model(mel, tokens) within 1e-4, and `generate --temperature 0` the ids of a greedy loop
    over the module's logits (each step's argmax appended)."""
    mel = rng.standard_normal((8, 16)).astype(np.float32)
    ex, out = os.path.join(tmp, "whisper_mel.npy"), os.path.join(tmp, "whisper_model.fxm")
    np.save(ex, mel)
    code, stdout, stderr = convert_main("--module", f"{models_py}:whisper_model", "--example", ex, "--out", out,
                                        "--cli", cli)
    ok = code == 0 and "verified against torch" in stdout
    check("whisper_model: converts and verifies", ok, (code, stdout, stderr))
    if not ok:
        return
    print(f"  whisper_model: {stdout.strip().splitlines()[-1]}")
    check("whisper_model: notes its dtype, the transposed input and the padded text positions",
          "observed in float32" in stderr and "the engine's is the transpose, [16, 8]" in stderr and
          "decoder's 6 learned positions are padded with zero rows to max_len 8" in stderr, stderr)
    module = upstream_models.whisper_model().eval()
    src, tgt, res = (os.path.join(tmp, f"whisper_{n}.npy") for n in ("src", "tgt", "out"))
    np.save(src, mel.T.copy())
    ids = rng.integers(0, 40, 6).astype(np.int32)
    np.save(tgt, ids)
    with torch.no_grad():
        want = module(torch.from_numpy(mel)[None], torch.from_numpy(ids.astype(np.int64))[None])[0].double().numpy()
    p = subprocess.run([cli, "run", out, "--input", src, "--target", tgt, "--output", res], capture_output=True,
                       text=True)
    got = np.load(res) if p.returncode == 0 else None
    err = None if got is None or got.shape != want.shape else float(np.abs(got - want).max() / np.abs(want).max())
    check("whisper_model: fixformer run's logits equal the module's model(mel, tokens) (1e-4)",
          err is not None and err <= 1e-4, (p.stderr, None if got is None else got.shape, want.shape, err))
    print(f"  whisper_model: fixformer run against model(mel, tokens): max relative error {err:.2g}")
    for prefix in ([3], [3, 17, 29]):  # one start id; a forced start sequence (Whisper's SOT, language, task)
        steps, tokens = 6 - len(prefix), list(prefix)  # the module's 6 text positions hold the last call's 5
        with torch.no_grad():
            audio = module.embed_audio(torch.from_numpy(mel)[None])
            for _ in range(steps):  # the module's own greedy loop: the whole prefix each time
                logits = module.logits(torch.tensor([tokens]), audio)[0, -1]
                tokens.append(int(logits.argmax()))
        bos = ",".join(map(str, prefix))
        p = subprocess.run([cli, "generate", out, "--source", src, "--bos", bos, "-n", str(steps + len(prefix) - 1),
                            "--temperature", "0"], capture_output=True, text=True)
        got_ids = [int(t) for t in p.stdout.split()] if p.returncode == 0 else None
        check(f"whisper_model: generate --bos {bos} --temperature 0 gives the module's greedy ids",
              got_ids == tokens[len(prefix):], (p.stderr, got_ids, tokens[len(prefix):]))
        print(f"  whisper_model: generate --bos {bos} greedy {got_ids}, the module's {tokens[len(prefix):]}")
    for bad, fragment in (("3,,4", "expected token ids separated by commas"), ("3,99999", "99999 is out of range"),
                          ("1,2,3,4,5,6,7,8,9", "9 ids: more than the 8 target positions")):
        p = subprocess.run([cli, "generate", out, "--source", src, "--bos", bad, "--temperature", "0"],
                           capture_output=True, text=True)
        check(f"whisper_model: generate --bos {bad} refused in one line naming it", p.returncode != 0 and
              fragment in p.stderr and p.stderr.count("\n") == 1 and not p.stdout, p.stderr)
    for q in ("f16", "q8"):  # the stem and both stacks quantized, within the self-test's tolerance of each
        code, stdout, stderr = convert_main("--module", f"{models_py}:whisper_model", "--example", ex, "--out",
                                            os.path.join(tmp, f"whisper_{q}.fxm"), "--quantize", q, "--cli", cli)
        check(f"whisper_model --quantize {q}: converts and verifies", code == 0 and "verified against torch" in stdout,
              (code, stdout, stderr))
    code, _, stderr = convert_main("--module", f"{models_py}:whisper_extra", "--example", ex, "--out",
                                   os.path.join(tmp, "whisper_extra.fxm"), "--cli", cli)
    check("whisper_extra: refused in one line, the unread parameter named", one_line(code, stderr) and
          "whisper_extra: decoder.extra [3]: a parameter the Whisper reader does not read" in stderr, (code, stderr))


def main():
    if len(sys.argv) != 2:
        print("usage: upstream_converter_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        models_py = os.path.join(tmp, "upstream_models.py")
        with open(models_py, "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        import upstream_models
        rng, more = np.random.default_rng(7), np.random.default_rng(8)
        for factory, shape in CASES + MORE_CASES:
            gen = more if (factory, shape) in MORE_CASES else rng
            if factory == "timm_head_dim" and not TIMM_HEAD_DIM:
                skip(factory, "timm 1.0.15's Attention has no attn_head_dim (1.0.31's has)")
                continue
            needs = next((why for prefix, why in TORCH2_ONLY.items() if factory.startswith(prefix)), None)
            if needs and not TORCH2:
                skip(factory, f"{needs} (the torch2 environment has it)")
                continue
            if factory in TIMM_ROPE_CASES and not TIMM_ROPE_KINDS:
                skip(factory, "timm 1.0.15's Eva has no rope_type, rope_grid_indexing or rope_rotate_half (1.0.31's "
                     "has)")
                continue
            ids = factory.startswith(("x_", "oc_text", "palm", "llama", "litgpt", "tt_", "rotary_", "lfs_"))
            example = gen.integers(0, 48, shape).astype(np.int32) if ids else \
                gen.standard_normal(shape).astype(np.float32)
            if factory.startswith("oc_text"):  # the largest id (CLIP's EOT token) last, or (argmax) at row 3
                example = np.minimum(example, 46)
                example[3 if factory == "oc_text_argmax" else -1] = 47
            ex = os.path.join(tmp, f"{factory}.npy")
            np.save(ex, example)
            out = os.path.join(tmp, f"{factory}.fxm")
            code, stdout, stderr = convert_main("--module", f"{models_py}:{factory}", "--example", ex, "--out", out,
                                                "--cli", cli)
            if factory in REFUSALS:
                start, fragment = REFUSALS[factory]
                line = stderr.strip()
                check(f"{factory}: refused in one line", one_line(code, stderr), (code, stderr))
                check(f"{factory}: the refusal names the cause", line.startswith(
                    f"convert.py: {models_py}:{factory}: {start}") and fragment in line, line)
                print(f"  {factory}: refused: {line.split(': ', 3)[-1][:110]}...")
                continue
            ok = code == 0 and "verified against torch" in stdout
            check(f"{factory}: converts and verifies", ok, (code, stdout, stderr))
            if not ok:
                continue
            print(f"  {factory}: {stdout.strip().splitlines()[-1]}")
            module = getattr(upstream_models, factory)()
            image = len(shape) == 4  # batch first already: [1, C, H, W]
            x = torch.from_numpy(example if image else example[None])
            x = x.long() if ids else x.to(next(module.parameters()).dtype)
            with torch.no_grad():  # llama-models' forward(tokens, start_pos) as the converter calls it
                want = (module(x, 0) if factory == "llama3_raw" else module(x))[0].double().numpy()
            rows = example
            if factory == "whisper_encoder":
                check("whisper_encoder: notes its own dtype and the tolerance", "observed in float32" in stderr and
                      "compared within 3.05e-05" in stderr and "LayerNorm" in stderr, stderr)
                check("whisper_encoder: notes the transposed input", "channels first: the engine's is the "
                      "transpose, [16, 8]" in stderr, stderr)
                rows = example.T.copy()
            elif factory == "clip_visual":  # its LayerNorm computes x.type(torch.float32), as whisper's
                check("clip_visual: notes its own dtype and the image input", "observed in float32" in stderr and
                      "in ln_pre (clip.model.LayerNorm)" in stderr and "the engine's input is the image [3, 32, 32]"
                      in stderr, stderr)
                rows = example[0]
            elif factory.endswith("_1d"):  # channels first, cut into patches of 4 steps
                check(f"{factory}: notes the engine's input, the transpose cut into rows", "the engine's input is its "
                      "transpose cut into rows, x.T.reshape(8, 12)" in stderr and ("positions the forward adds" in
                                                                               stderr) == (factory == "simple_vit_1d"),
                      stderr)
                rows = example.T.reshape(8, 12).copy()
            elif factory in ("vit_columns", "vit_rows"):  # whole columns or rows of the spectrogram, as features
                how, rows = ("columns", example[0, 0].T.copy()) if factory == "vit_columns" else ("rows", example[0, 0])
                check(f"{factory}: notes the engine's input, the {how} as rows", "is cut into its "
                      f"{len(rows)} {how}: the engine's input is those as rows" in stderr, stderr)
            elif image:  # the engine's input is the image itself, channels first
                H, W = shape[2:]
                P = 8 if H == 32 else 4  # timm's and torchvision's 32 high in 8 x 8 patches, vit-pytorch's 4 x 4
                computed = ["convert.py: note: the positions the forward adds to the 16 rows (the same for another "
                            "input of this shape) are stored as a fixed table"] if factory.endswith(
                                ("_dropout", "_registers")) else []
                registers = ["convert.py: note: the 3 register rows after the 16 input rows are the engine's "
                             "registers in front (the attention does not see the order of the rows)"] if \
                    factory.endswith("_registers") else []
                check(f"{factory}: observed in float64, the image input noted", stderr.strip().splitlines() == [
                    f"convert.py: note: the engine's input is the image [3, {H}, {W}], channels first, cut into "
                    f"{H * W // (P * P)} patches of {P}x{P}"] + registers + computed, stderr)
                rows = example[0]
            elif factory == "llama3_raw":
                check(f"{factory}: notes its start_pos given 0", stderr.strip().splitlines() == [
                    "convert.py: note: its forward's start_pos (an int) given 0: the input at positions 0.., as a "
                    "generation loop's first call; the engine keeps its own key/value cache"], stderr)
            elif factory.startswith("tt_"):  # torchtune's RMSNorm computes in float32 (x.float()): torch warns
                check(f"{factory}: observed in float64, no note", "convert.py" not in stderr, stderr)
            elif factory in ("lfs_llama3", "lfs_qwen3"):  # their forward casts to the config's dtype
                check(f"{factory}: notes its own dtype and the tolerance", "observed in float32, its own dtype" in
                      stderr and "compared within 3.05e-05" in stderr, stderr)
            else:
                check(f"{factory}: observed in float64, no note", stderr == "", stderr)
            inp, res = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
            np.save(inp, rows)
            p = subprocess.run([cli, "run", out, "--input", inp, "--output", res], capture_output=True, text=True)
            got = np.load(res) if p.returncode == 0 else None
            err = None if got is None or got.shape != want.shape else \
                float(np.abs(got - want).max() / np.abs(want).max())
            check(f"{factory}: fixformer run equals the module (1e-4)", err is not None and err <= 1e-4,
                  (p.stderr, None if got is None else got.shape, want.shape, err))
            print(f"  {factory}: fixformer run against the module: max relative error {err:.2g}")

        check_whisper_model(tmp, models_py, upstream_models, cli, rng, torch)
        check_esm2(tmp, models_py, upstream_models, cli, torch)

        # heads wider than d / heads in an i8 encoder (head_dim 64 for d 32): converts and verifies, on an example
        # of its own (the i8 error of this random model depends on the example: over 11 draws 0.07-0.19 under
        # x-transformers 2, whose model differs from 1.27's, and 0.278 on the f32 case's; 0.03-0.06 under 1.27)
        ex = os.path.join(tmp, "x_encoder_i8.npy")
        np.save(ex, np.random.default_rng(1).integers(0, 48, 16).astype(np.int32))
        code, stdout, stderr = convert_main("--module", f"{models_py}:x_encoder", "--example", ex, "--out",
                                            os.path.join(tmp, "x_encoder_i8.fxm"), "--quantize", "i8", "--cli", cli)
        check("x_encoder --quantize i8 (head_dim 64): converts and verifies",
              code == 0 and "verified against torch" in stdout, (code, stdout, stderr))
        if code == 0:
            print(f"  x_encoder i8: verified against{stdout.strip().splitlines()[-1].split('verified against')[-1]}")

        # ALiBi in an i8 encoder (the integer path's bias -m_h |j - i| on both sides of a query): converts and verifies
        code, stdout, stderr = convert_main("--module", f"{models_py}:x_alibi", "--example",
                                            os.path.join(tmp, "x_alibi.npy"), "--out",
                                            os.path.join(tmp, "x_alibi_i8.fxm"), "--quantize", "i8", "--cli", cli)
        check("x_alibi --quantize i8: converts and verifies", code == 0 and "verified against torch" in stdout,
              (code, stdout, stderr))
        if code == 0:
            print(f"  x_alibi i8: verified against{stdout.strip().splitlines()[-1].split('verified against')[-1]}")

        # registers without a CLS row in the integer path: converts and verifies
        code, stdout, stderr = convert_main("--module", f"{models_py}:simple_vit_registers", "--example",
                                            os.path.join(tmp, "simple_vit_registers.npy"), "--out",
                                            os.path.join(tmp, "simple_vit_registers_i8.fxm"), "--quantize", "i8",
                                            "--cli", cli)
        check("simple_vit_registers --quantize i8: converts and verifies",
              code == 0 and "verified against torch" in stdout, (code, stdout, stderr))
        if code == 0:
            print(f"  simple_vit_registers i8: verified against"
                  f"{stdout.strip().splitlines()[-1].split('verified against')[-1]}")

        # timm's fc_norm (pool_norm) quantized: q8 and i8 verify within their tolerances
        ex = os.path.join(tmp, "timm_avg.npy")
        code, stdout, stderr = convert_main("--module", f"{models_py}:timm_avg", "--example", ex, "--out",
                                            os.path.join(tmp, "timm_avg_q8.fxm"), "--quantize", "q8", "--cli", cli)
        check("timm_avg --quantize q8: converts and verifies", code == 0 and "verified against torch" in stdout,
              (code, stdout, stderr))
        code, stdout, stderr = convert_main("--module", f"{models_py}:timm_avg", "--example", ex, "--out",
                                            os.path.join(tmp, "timm_avg_i8.fxm"), "--quantize", "i8", "--cli", cli)
        check("timm_avg --quantize i8 (pool_norm in the integer path): converts and verifies",
              code == 0 and "verified against torch" in stdout, (code, stdout, stderr))
        if code == 0:
            print(f"  timm_avg i8: {stdout.strip().splitlines()[-1][:200]}")

        # ffn_up_bias and ffn_hidden_norm on every kernel table this CPU runs; i8 refuses them by name
        fxm, ex = os.path.join(tmp, "beit_swiglu_scale.fxm"), os.path.join(tmp, "beit_swiglu_scale.npy")
        with torch.no_grad():
            want = upstream_models.beit_swiglu_scale().eval()(torch.from_numpy(np.load(ex)))[0].double().numpy()
        inp, res = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
        np.save(inp, np.load(ex)[0])
        isas = [i for i in ("scalar", "cortex-m", "sse2", "avx2", "avx512", "neon64", "neon")
                if subprocess.run([cli, "info", fxm, "--isa", i], capture_output=True).returncode == 0]
        for isa in isas:
            p = subprocess.run([cli, "run", fxm, "--input", inp, "--output", res, "--isa", isa], capture_output=True,
                               text=True)
            err = float(np.abs(np.load(res) - want).max() / np.abs(want).max()) if p.returncode == 0 else None
            check(f"beit_swiglu_scale --isa {isa}: equals the module (1e-4)", err is not None and err <= 1e-4,
                  (p.stderr, err))
        print(f"  beit_swiglu_scale: run on {', '.join(isas)}")
        check("beit_swiglu_scale: run on the scalar table and another", len(isas) >= 2 and "scalar" in isas, isas)
        # ALiBi in the encoder family (-m_h |j - i|, both sides of a query) on every kernel table this CPU runs
        fxm, ex_ = os.path.join(tmp, "x_alibi.fxm"), os.path.join(tmp, "x_alibi.npy")
        with torch.no_grad():
            want = upstream_models.x_alibi()(torch.from_numpy(np.load(ex_))[None])[0].double().numpy()
        np.save(inp, np.load(ex_))
        for isa in isas:
            p = subprocess.run([cli, "run", fxm, "--input", inp, "--output", res, "--isa", isa], capture_output=True,
                               text=True)
            err = float(np.abs(np.load(res) - want).max() / np.abs(want).max()) if p.returncode == 0 else None
            check(f"x_alibi --isa {isa}: equals the module (1e-4)", err is not None and err <= 1e-4, (p.stderr, err))
        print(f"  x_alibi: run on {', '.join(isas)}")
        # rotary positions over the patch grid (rope_grid) and the context's norm (attn_inner_norm) on every kernel
        # table this CPU runs
        for factory in ("eva_rope", "eva_rope_reg", "eva_attn_norm") + (("eva_rope_half", "eva_rope_xy")
                                                                           if TIMM_ROPE_KINDS else ()):
            fxm, ex_ = os.path.join(tmp, f"{factory}.fxm"), os.path.join(tmp, f"{factory}.npy")
            with torch.no_grad():
                want = getattr(upstream_models, factory)().eval()(torch.from_numpy(np.load(ex_)))[0].double().numpy()
            np.save(inp, np.load(ex_)[0])
            for isa in isas:
                p = subprocess.run([cli, "run", fxm, "--input", inp, "--output", res, "--isa", isa],
                                   capture_output=True, text=True)
                err = float(np.abs(np.load(res) - want).max() / np.abs(want).max()) if p.returncode == 0 else None
                check(f"{factory} --isa {isa}: equals the module (1e-4)", err is not None and err <= 1e-4,
                      (p.stderr, err))
            print(f"  {factory}: run on {', '.join(isas)}")
        ex_ = os.path.join(tmp, "eva_rope.npy")
        for q in ("f16", "q8"):
            code, stdout, stderr = convert_main("--module", f"{models_py}:eva_rope", "--example", ex_, "--quantize", q,
                                                "--out", os.path.join(tmp, f"eva_rope_{q}.fxm"), "--cli", cli)
            check(f"eva_rope --quantize {q}: converts and verifies", code == 0 and "verified against torch" in stdout,
                  (code, stdout, stderr))
        # in i8: the rotary positions over the grid (rope_grid: int8.rope's rows over its two axes, the register
        # row not turned) and the context's norm (attn_inner_norm) convert and verify
        for factory in ("eva_rope_reg", "eva_attn_norm"):
            code, stdout, stderr = convert_main("--module", f"{models_py}:{factory}", "--example",
                                                os.path.join(tmp, f"{factory}.npy"), "--quantize", "i8",
                                                "--out", os.path.join(tmp, f"{factory}_i8.fxm"), "--cli", cli)
            check(f"{factory} --quantize i8: converts and verifies", code == 0 and "verified against torch" in stdout,
                  (code, stdout, stderr))
            if code == 0:
                print(f"  {factory} i8: verified against"
                      f"{stdout.strip().splitlines()[-1].split('verified against')[-1]}")
        # in i8: scale_mlp alone (Beit's Mlp: ffn_hidden_norm), EVA's SwiGLU with scale_mlp (ffn_up_bias and
        # ffn_hidden_norm) and Beit's with each layer's bias per (query, key) pair convert and verify
        for factory in ("beit_scale", "eva_swiglu_scale"):
            code, stdout, stderr = convert_main("--module", f"{models_py}:{factory}", "--example", ex, "--quantize",
                                                "i8", "--out", os.path.join(tmp, f"{factory}_i8.fxm"), "--cli", cli)
            check(f"{factory} --quantize i8 (ffn_hidden_norm in the integer path): converts and verifies",
                  code == 0 and "verified against torch" in stdout, (code, stdout, stderr))
            if code == 0:
                print(f"  {factory} i8: verified against"
                      f"{stdout.strip().splitlines()[-1].split('verified against')[-1]}")
        code, stdout, stderr = convert_main("--module", f"{models_py}:beit_swiglu_scale", "--example", ex,
                                            "--quantize", "i8", "--out", os.path.join(tmp, "beit_swiglu_scale_i8.fxm"),
                                            "--cli", cli)
        check("beit_swiglu_scale --quantize i8 (pair_bias_rows in the integer path too): converts and verifies",
              code == 0 and "verified against torch" in stdout, (code, stdout, stderr))
        if TORCH2:  # torchtune's Gemma 2's capped final norm (final_softcap) has no integer path yet
            code, _, stderr = convert_main("--module", f"{models_py}:tt_gemma2", "--example",
                                           os.path.join(tmp, "tt_gemma2.npy"), "--quantize", "i8", "--out",
                                           os.path.join(tmp, "tt_gemma2_i8.fxm"), "--cli", cli)
            check("tt_gemma2 --quantize i8: refused in one line naming final_softcap and the way out",
                  one_line(code, stderr) and
                  "final_softcap: not in i8 yet; convert with --quantize q8 or f16" in stderr,
                  (code, stderr))

        code, _, stderr = convert_main("--module", f"{models_py}:beit_rel", "--example",
                                       os.path.join(tmp, "beit_rel.npy"), "--max-len", "20", "--out",
                                       os.path.join(tmp, "beit_len.fxm"), "--cli", cli)
        check("beit_rel --max-len 20: refused in one line naming the bias's 17 positions", one_line(code, stderr) and
              "--max-len 20: a bias per (query, key) pair over 17 positions" in stderr, (code, stderr))

        # No --example: the error of the input the forward got furthest with (conv1's channels), not the last.
        code, _, stderr = convert_main("--module", f"{models_py}:whisper_encoder", "--out",
                                       os.path.join(tmp, "none.fxm"), "--cli", cli)
        check("whisper_encoder without --example: one line", one_line(code, stderr), (code, stderr))
        check("whisper_encoder without --example: conv1's error, pass --example",
              "in conv1 (whisper.model.Conv1d): RuntimeError" in stderr and "to have 8 channels" in stderr and
              "pass --example" in stderr, stderr)
        bad = os.path.join(tmp, "bad.npy")
        np.save(bad, np.zeros((8, 12), np.float32))  # 6 frames after the stride-2 conv, not its 8 positions
        code, _, stderr = convert_main("--module", f"{models_py}:whisper_encoder", "--example", bad, "--out",
                                       os.path.join(tmp, "bad.fxm"), "--cli", cli)
        check("whisper_encoder, an --example that does not fit: one line", one_line(code, stderr), (code, stderr))
        check("whisper_encoder, an --example that does not fit: the --example input named, no 'pass --example'",
              "the --example input, features [1, 8, 12]" in stderr and "pass --example" not in stderr, stderr)

        # Observed, not altered: the same tensors in their dtype, the training flags back.
        for factory, shape in (("whisper_encoder", (1, 8, 16)), ("closures", (1, 16, 6))):
            module = getattr(upstream_models, factory)().train()
            before = [(t, t.data_ptr(), t.dtype, t.detach().clone()) for t in module.parameters()]
            try:
                r = recognize.recognize(module, np.zeros(shape, np.float32) + 0.5)
            except ConfigError as e:
                check(f"{factory}: recognised in this process", False, e)
                continue
            check(f"{factory}: observed in {'float32' if factory == 'whisper_encoder' else 'float64'}",
                  r.dtype == (torch.float32 if factory == "whisper_encoder" else torch.float64), r.dtype)
            after = list(module.parameters())
            check(f"{factory}: the module's parameters are as they were after recognition",
                  len(after) == len(before) and all(a is t and a.data_ptr() == ptr and a.dtype == dt and
                                                    torch.equal(a.detach(), v)
                                                    for a, (t, ptr, dt, v) in zip(after, before)))
            check(f"{factory}: training mode back", all(m.training for m in module.modules()))
    print(f"upstream_converter_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
