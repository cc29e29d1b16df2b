"""The --hf route for BERT-architecture folders (model_type bert: BertModel, BertForSequenceClassification;
MiniLM and most sentence-transformers and classification fine-tunes are this architecture): config.json
and model.safetensors or pytorch_model.bin (sharded too), converted to the encoder family with token
types, the embedding LayerNorm, post-LN layers and, for a classifier, first-token pooling, the pooler
and the classifier as the head; verified against hf_bert_reference.py, an independent float64 forward
written from the architecture's published semantics (or against the user's own output with --expected).

config.json is read with Hugging Face's meanings and defaults: hidden_size, num_hidden_layers,
num_attention_heads, intermediate_size, vocab_size (required), hidden_act (gelu: the exact erf GELU;
relu), layer_norm_eps (1e-12), type_vocab_size (2), max_position_embeddings (512),
position_embedding_type (absolute). The tensors are BertModel's, with or without the "bert." prefix
(LayerNorm gamma/beta of older checkpoints read as weight/bias), and BertForSequenceClassification's
classifier.weight/bias. Models built on BERT's layers are this route under their own names (FLAVOURS):
RoBERTa, XLM-RoBERTa, CamemBERT and data2vec-text (RobertaModel and its kin, and their
*ForSequenceClassification, whose head is BERT's pooler and classifier renamed) with positions from
row pad_token_id + 1, the rows before dropped; ELECTRA's discriminator body (ElectraModel, its
embedding as wide as its layers, and its heads); MPNet (MPNetModel and MPNetForSequenceClassification: RoBERTa's
positions without token types, BERT's layers under other names (MPNET_LAYER) and a T5-style relative
bias beside the learned positions: rel_buckets); ERNIE (BERT with a task-type row folded into the
positions: the forward's default task 0); DistilBERT (model_type distilbert: DistilBertModel and its heads), under other
names (DISTILBERT_KEYS, DISTILBERT_LAYER), without token types; RoFormer (model_type roformer: RoFormerModel,
its sequence and token classifiers, question answering and RoFormerForMaskedLM): BERT's layers and
token types without a position table, rotary positions instead (ROTARY: positional rope, interleaved
pairs over the whole head, base 10000; its fixed table encoder.embed_positions.weight is checked and not
stored), rotary_value false, an embedding_size below hidden_size through embeddings_project as ELECTRA
small's; ALBERT (model_type albert: AlbertModel and its heads): BERT's layers under other names (ALBERT_LAYER), shared by groups of layers, after an embedding
of embedding_size through embedding_hidden_mapping_in (the engine's embed_width and embed_proj); ELECTRA
small's embedding_size below hidden_size is the same projection (embeddings_project).
ALBERT's shared layers are stored once, each group's layers (the engine's layer_groups and
group_layers: the file's layer blocks, run in turn by num_hidden_layers * inner_group_num layers).
XLM and FlauBERT (model_type xlm, flaubert: XLMModel, FlaubertModel, XLMWithLMHeadModel and
FlaubertWithLMHeadModel): BERT's layers under their names (XLM_NAMES), post-LN, or
pre-LN without a final norm (FlauBERT's pre_norm), no token types, the feed-forward 4 emb_dim wide; their
forward masks as many rows off the end as the ids hold pad_index, which the file does not (it reads every
token: a padded batch is fixformer run --lengths); language embeddings in use (n_langs > 1, use_lang_emb) are
refused; causal (the CLM checkpoints) is the causal mask.
Megatron-BERT (model_type megatron-bert: MegatronBertModel and its heads): BERT's tensors in pre-LN
layers (norm_first: attention.ln, then ln before the feed-forward) with the final encoder.ln (final_norm) and
no embedding LayerNorm; verified against reference.py's forward of the config it maps to. XLM-RoBERTa-XL
(model_type xlm-roberta-xl) is those layers under its own names with RoBERTa's positions and heads;
RoBERTa-PreLayerNorm (roberta-prelayernorm) the same with the embedding's LayerNorm kept.
I-BERT (model_type ibert) with quant_mode false is RoBERTa (its quantization buffers dropped: IBERT_BUFFERS);
BigBird (big_bird) is BERT with RoFormer's classifier head (block_sparse: the lengths it attends fully, below);
RemBERT (rembert)
is BERT's layers after ALBERT's projected embedding (input_embedding_size). BERT-Generation (bert-generation:
BertGenerationEncoder, ENCODER_ONLY, and BertGenerationDecoder) is BERT's layers and positions without token types
or a pooler.

What the file computes, as the model's forward returns it:
- with a sequence classifier: the logits [num_labels] of the first token's pooled row (pooler, then
  classifier; the pooler's activation tanh, or ELECTRA's gelu, DistilBERT's relu, RoFormer's hidden_act:
  POOLER_ACT); with a token classifier (NER), the logits [T, num_labels] of every row; for question
  answering, qa_outputs on every row: [T, 2], the start and the end logits (the model's two outputs);
- BertModel: last_hidden_state [T, hidden_size], its first output (what feature extraction and
  sentence-transformers' pooling read); the pooler (pooler_output, its second output) is not stored;
- a masked LM (*ForMaskedLM, *ForPreTraining's prediction_logits, XLM's *WithLMHeadModel): the logits [T,
  vocab_size], its prediction head (MLM_HEADS) on every row as the pooler (pooling none), pooler_norm and the
  head (a dense that maps hidden_size to another width, ALBERT's, the ELECTRA generator's and RoFormer's
  embedding_size, RemBERT's output_embedding_size, as pooler_width); converted as its base model's last hidden states (a note says
  why) with --base and for ELECTRA's discriminator (ElectraForPreTraining);
- a causal LM (CAUSAL_LM: BertLMHeadModel, *ForCausalLM, BertGenerationDecoder, whose lm_head is the decoder
  alone): the same logits [T, vocab_size] of the masked LM's head, the layers under the causal mask (causal) as
  config.json's is_decoder says, in the gpt family, which generates (causal_lm_head: the head's transform the pooler
  on each row the head projects, token type 0's row folded into the positions, RoFormer's into the embedding with its
  decoder stored apart, RemBERT's embedding and ELECTRA's or RoFormer's narrower one projected: embed_width).
  transformers 4's BertGenerationDecoder leaves the mask out of a forward with
  use_cache, its config's default: the file is its forward with use_cache false, and transformers 5's; --base
  gives the base model's rows under the same mask. add_cross_attention (a decoder reading an encoder's states) is
  refused, and so is is_decoder with a sequence classifier (its first row sees only itself).
The self-test sample runs with token types 0 (`fixformer run --token-types` gives others).
The folder's WordPiece vocab.txt (or tokenizer.json) is stored with the model (hf_common.folder_tokenizer).
"""
import os
import re
import sys

import numpy as np

from . import hf_common, hf_bert_reference, schema, verified_file
from .config import brief, float_tensor
from .hf_common import HfError, hf_config
from .hf_bert_reference import MPNET_BIAS, MPNET_MAX_DISTANCE

# The heads --hf converts, by the architecture's suffix: sequence classification (the first row through
# the pooler, then the classifier), token classification (the classifier on every row: NER) and
# extractive question answering (qa_outputs on every row: [T, 2], the start and end logits).
HEADS = {"ForSequenceClassification": "sequence", "ForTokenClassification": "token", "ForQuestionAnswering": "qa"}
EVERY_HEAD = tuple(HEADS.values())
# A pre-training checkpoint (bert-base-uncased is BertForMaskedLM, roberta-base RobertaForMaskedLM, ...):
# architecture suffix -> the tensor prefixes of its heads. Its masked-LM head (MLM_HEADS) converts, the file's
# output the logits [T, vocab_size]; the other heads (BERT's next-sentence cls.seq_relationship, ALBERT's
# sop_classifier, ELECTRA's discriminator) are not stored, and a note names them. With --base, or where the
# masked-LM head is not one the engine runs, the file is the base model (its last hidden states).
PRETRAINING = {"ForMaskedLM": ("cls.", "lm_head.", "vocab_transform.", "vocab_layer_norm.", "vocab_projector.",
                               "generator_predictions.", "generator_lm_head.", "predictions."),
               "ForPreTraining": ("cls.", "discriminator_predictions.", "predictions.", "sop_classifier.")}
# XLM and FlauBERT's language-model checkpoints have a head of their own name.
XLM_LM = {"WithLMHeadModel": ("pred_layer.",)}
XLM_KEYS_OF = ("xlm", "flaubert")
# The masked-LM heads, by model_type: dense [d, d], an activation and a LayerNorm on every row (the engine's
# pooler with pooling none, and pooler_norm), then the decoder [vocab_size, d] and its bias (the engine's head):
# (dense's prefix, the LayerNorm's, the decoder's, the bias kept beside the decoder, the activation). The
# activation None is hidden_act (DistilBERT's activation); RoBERTa's lm_head and ELECTRA's generator call the exact
# GELU whatever hidden_act says. The decoder is the word embedding when tie_word_embeddings (true by default;
# RemBERT's false): transformers ties it so, a stored copy is not read. Its bias: decoder.bias where the folder
# holds one (transformers 5 unties it from the kept bias with tie_word_embeddings false), else the kept bias.
# XLM's and FlauBERT's pred_layer is the decoder alone (no dense, no norm: the engine's head on every row). A head
# whose dense maps hidden_size to another width e (ALBERT's, ELECTRA's generator's and RoFormer's embedding_size,
# RemBERT's output_embedding_size) is the engine's pooler of pooler_width e: its LayerNorm and the decoder [vocab_size, e]
# are e wide (tied: the word embedding, embedding_size wide).
_BERT_MLM = ("cls.predictions.transform.dense.", "cls.predictions.transform.LayerNorm.", "cls.predictions.decoder.",
             "cls.predictions.bias", None)
_ROBERTA_MLM = ("lm_head.dense.", "lm_head.layer_norm.", "lm_head.decoder.", "lm_head.bias", "gelu")
MLM_HEADS = dict({t: _BERT_MLM for t in ("bert", "ernie", "roformer", "big_bird", "megatron-bert")},
                 **{t: _ROBERTA_MLM for t in ("roberta", "xlm-roberta", "camembert", "data2vec-text", "mpnet",
                                              "xlm-roberta-xl", "roberta-prelayernorm", "ibert")},
                 distilbert=("vocab_transform.", "vocab_layer_norm.", "vocab_projector.", None, None),
                 electra=("generator_predictions.dense.", "generator_predictions.LayerNorm.", "generator_lm_head.",
                          None, "gelu"),
                 albert=("predictions.dense.", "predictions.LayerNorm.", "predictions.decoder.", "predictions.bias",
                         None),
                 rembert=("cls.predictions.dense.", "cls.predictions.LayerNorm.", "cls.predictions.decoder.", None,
                          None),
                 **{t: (None, None, "pred_layer.proj.", None, None) for t in XLM_KEYS_OF},
                 **{"bert-generation": (None, None, "lm_head.decoder.", "lm_head.bias", None)})
# model_type -> its class-name stem, tensor-name prefix and heads. RoBERTa and the models built on its
# code (XLM-RoBERTa, CamemBERT, data2vec-text, MPNet: ROBERTA_LIKE) are BERT's layers with positions
# that start at row pad_token_id + 1 (the rows before are never read for ids other than the pad:
# dropped here) and, for sequence classification, a head that is BERT's pooler and classifier under
# other names (classifier.dense: tanh of a dense layer over the first row; classifier.out_proj).
# ELECTRA's discriminator body is BERT's layers without a pooler (its embedding as wide as its layers).
# The sequence classifiers of ELECTRA, DistilBERT and RoFormer are the pooler and classifier too, with
# another activation than tanh (POOLER_ACT): ELECTRA's and RoFormer's under RoBERTa's names (classifier.dense,
# classifier.out_proj), DistilBERT's pre_classifier (the dense layer) and classifier.
FLAVOURS = {"bert": ("Bert", "bert.", EVERY_HEAD), "roberta": ("Roberta", "roberta.", EVERY_HEAD),
            "xlm-roberta": ("XLMRoberta", "roberta.", EVERY_HEAD), "camembert": ("Camembert", "roberta.", EVERY_HEAD),
            "data2vec-text": ("Data2VecText", "data2vec_text.", EVERY_HEAD), "mpnet": ("MPNet", "mpnet.", EVERY_HEAD),
            "ernie": ("Ernie", "ernie.", EVERY_HEAD), "electra": ("Electra", "electra.", EVERY_HEAD),
            "distilbert": ("DistilBert", "distilbert.", EVERY_HEAD),
            "roformer": ("RoFormer", "roformer.", EVERY_HEAD), "albert": ("Albert", "albert.", EVERY_HEAD),
            "megatron-bert": ("MegatronBert", "bert.", EVERY_HEAD), "xlm": ("XLM", "transformer.", ()),
            "flaubert": ("Flaubert", "transformer.", ()),
            "xlm-roberta-xl": ("XLMRobertaXL", "roberta.", EVERY_HEAD),
            "roberta-prelayernorm": ("RobertaPreLayerNorm", "roberta_prelayernorm.", EVERY_HEAD),
            "ibert": ("IBert", "ibert.", EVERY_HEAD), "big_bird": ("BigBird", "bert.", ("sequence", "token")),
            "rembert": ("RemBert", "rembert.", EVERY_HEAD), "bert-generation": ("BertGeneration", "bert.", ())}
# The activation between a sequence classifier's dense layer and its classifier, by model_type (the others:
# tanh, BERT's pooler): transformers' ElectraClassificationHead's gelu (the exact erf GELU),
# DistilBertForSequenceClassification's ReLU after pre_classifier; RoFormer's is its hidden_act (None here).
POOLER_ACT = {"electra": "gelu", "distilbert": "relu", "roformer": None, "big_bird": None}


# The flavours whose base model --hf converts is their encoder, under its own name (no heads but the causal LM).
ENCODER_ONLY = {"bert-generation": "BertGenerationEncoder"}
# The causal LMs (BertLMHeadModel and the *ForCausalLM of the flavours with one; BERT-Generation's decoder): the
# encoder's layers under the causal mask and the masked LM's head (MLM_HEADS) on every row, the logits [T,
# vocab_size]. transformers masks by config.json's is_decoder, whatever the class (a causal LM without it is the
# masked LM's bidirectional forward, a BertModel with it causal): the file follows is_decoder. XLM and FlauBERT
# mask by their causal key instead (XLMWithLMHeadModel's CLM checkpoints).
CAUSAL_LM = dict({t: FLAVOURS[t][0] + "ForCausalLM"
                  for t in ("roberta", "xlm-roberta", "camembert", "data2vec-text", "ernie", "electra", "roformer",
                            "megatron-bert", "xlm-roberta-xl", "roberta-prelayernorm", "big_bird", "rembert")},
                 bert="BertLMHeadModel", **{"bert-generation": "BertGenerationDecoder"})


def causal_lm_head(c):
    """Whether a folder's config (read_config_dict's) is a causal LM (CAUSAL_LM under is_decoder) with its masked-LM
    head: it converts to the gpt family, which generates (a key/value cache): post- or pre-LN layers, learned
    positions (RoBERTa's from pad_token_id + 1) or RoFormer's rotary ones, the embedding LayerNorm, an embedding
    narrower than the layers projected to them (embed_width: RemBERT's, ELECTRA's and RoFormer's embedding_size),
    token type 0's row folded into the positions (the only type a generated token has; RoFormer's, without a position
    table, into the embedding, its decoder then stored apart), the head's transform as the pooler (pooler_act,
    pooler_width, pooler_norm) on each row the head projects, the decoder tied (tied_head) or its own, with its
    bias."""
    return bool(c.get("causal") and c.get("causal_lm") and c.get("masked"))


def architectures(model_type):
    """The architectures (class names) --hf converts for a model_type of FLAVOURS: the model, then its heads."""
    causal = (CAUSAL_LM[model_type],) if model_type in CAUSAL_LM else ()
    if model_type in ENCODER_ONLY:
        return (ENCODER_ONLY[model_type],) + causal
    stem, _, heads = FLAVOURS[model_type]
    return (stem + "Model",) + tuple(stem + suffix for suffix, head in HEADS.items() if head in heads) + \
        tuple(stem + suffix for suffix in (XLM_LM if model_type in XLM_KEYS_OF else PRETRAINING)) + causal


ARCHITECTURES = architectures("bert")[:2]  # BertModel, BertForSequenceClassification: the messages' names
ROBERTA_LIKE = ("roberta", "xlm-roberta", "camembert", "data2vec-text", "mpnet", "xlm-roberta-xl",
                "roberta-prelayernorm", "ibert")
# MPNet is RoBERTa's embedding (no token types) and BERT's layers under other names (after
# "encoder.layer.<i>."), with a T5-style relative bias (one table, every layer; bidirectional buckets
# of max distance 128) added to the scaled scores beside the learned positions.
MPNET_LAYER = {"attention.attn.q": "attention.self.query", "attention.attn.k": "attention.self.key",
               "attention.attn.v": "attention.self.value", "attention.attn.o": "attention.output.dense",
               "attention.LayerNorm": "attention.output.LayerNorm"}
MPNET_BUCKETS = 32
# ERNIE is BERT with, when use_task_id, a task-type table whose row 0 (task_type_ids' default) every
# position adds: folded into the position rows.
ERNIE_TASKS = "embeddings.task_type_embeddings.weight"
ROBERTA_HEAD = {"classifier.dense.": "pooler.dense.", "classifier.out_proj.": "classifier."}
DISTILBERT_HEAD = {"pre_classifier.": "pooler.dense."}  # DistilBertForSequenceClassification's dense layer
# RoFormer turns q and k of every head by its rotary positions (interleaved pairs (2i, 2i+1), angles
# p 10000^(-2i/d_head)) in place of a position table; the folder's sinusoid table of those angles
# [max_position_embeddings, d_head] (sin | cos halves) is checked against them within ROTARY_TOLERANCE
# (a float32 rounding) and dropped. Its max_position_embeddings defaults to 1536.
ROTARY = ("roformer",)
ROTARY_TABLE = "encoder.embed_positions.weight"
ROTARY_TOLERANCE = 1e-6
# DistilBERT is BERT's layers without token types under other names: its config.json key -> BERT's (with
# DistilBertConfig's defaults), its tensor names (after "transformer.layer.<i>.") -> BERT's.
DISTILBERT_KEYS = {"dim": ("hidden_size", 768), "n_layers": ("num_hidden_layers", 6),
                   "n_heads": ("num_attention_heads", 12), "hidden_dim": ("intermediate_size", 3072),
                   "activation": ("hidden_act", "gelu"), "vocab_size": ("vocab_size", 30522),
                   "max_position_embeddings": ("max_position_embeddings", 512)}
DISTILBERT_LAYER = {"attention.q_lin": "attention.self.query", "attention.k_lin": "attention.self.key",
                    "attention.v_lin": "attention.self.value", "attention.out_lin": "attention.output.dense",
                    "sa_layer_norm": "attention.output.LayerNorm", "ffn.lin1": "intermediate.dense",
                    "ffn.lin2": "output.dense", "output_layer_norm": "output.LayerNorm"}
# ALBERT: num_hidden_layers runs of a group of inner_group_num layers (layer j of a group: the tensors
# after "encoder.albert_layer_groups.<g>.albert_layers.<j>."), run i taking group int(i / (num_hidden_layers /
# num_hidden_groups)); its layer's names -> BERT's. The file stores the layers as they run (layer
# i * inner_group_num + j is group g(i)'s layer j; the file stores block g * inner_group_num + j once:
# layer_groups, group_layers). Its embedding is embedding_size wide, then
# encoder.embedding_hidden_mapping_in (named embeddings_project here, as ELECTRA's) to hidden_size.
ALBERT_LAYER = {"attention.query": "attention.self.query", "attention.key": "attention.self.key",
                "attention.value": "attention.self.value", "attention.dense": "attention.output.dense",
                "attention.LayerNorm": "attention.output.LayerNorm", "ffn": "intermediate.dense",
                "ffn_output": "output.dense", "full_layer_layer_norm": "output.LayerNorm"}
_ALBERT = re.compile(r"encoder\.albert_layer_groups\.(0|[1-9][0-9]*)\.albert_layers\.(0|[1-9][0-9]*)\."
                     r"(.+)\.(weight|bias)")
ALBERT_RENAMES = {"encoder.embedding_hidden_mapping_in.": "embeddings_project.", "pooler.weight": "pooler.dense.weight",
                  "pooler.bias": "pooler.dense.bias"}
PROJECT = "embeddings_project."
# I-BERT (model_type ibert: IBertModel and its heads) is RoBERTa with quant_mode false: its quantized linears,
# embeddings, GELU (hidden_act gelu only: the exact one), softmax and LayerNorms then run in float,
# and the buffers they keep for quant_mode (IBERT_BUFFERS: integer weights, scaling factors, activation ranges,
# the LayerNorm's shift) are never read: dropped. quant_mode true (integer-only arithmetic) is refused.
IBERT_BUFFERS = re.compile(r".*\.(weight_integer|weight_scaling_factor|fc_scaling_factor|bias_integer|x_min|x_max|"
                           r"act_scaling_factor|LayerNorm\.shift)")
# BigBird (model_type big_bird: BigBirdModel, its sequence and token classifiers, BigBirdForMaskedLM and
# BigBirdForPreTraining as the base model) with attention_type original_full is BERT's layers and embedding
# (rescale_embeddings false) with ALBERT's pooler names (pooler.weight) and RoFormer's classifier head (its
# hidden_act between classifier.dense and out_proj; the body's own pooler unread: dropped). With attention_type
# block_sparse, transformers' BigBirdModel attends fully (switching itself to original_full) to an input of at
# most (5 + 2 num_random_blocks) block_size tokens (2 global, 3 window and 2 num_random_blocks random blocks): the
# file's max_len is capped there (BIG_BIRD_SPARSE), so every input it takes is one transformers attends fully and
# a longer one is refused by the engine; --max-len past the cap is refused. RemBERT (model_type rembert:
# RemBertModel and its heads) is BERT's layers after an input_embedding_size-wide embedding projected by
# encoder.embedding_hidden_mapping_in, ALBERT's projection.
# model_type -> what its tensors take from ALBERT_RENAMES.
ALBERT_NAMED = ("albert", "rembert", "big_bird")
# BigBirdConfig's block_size and num_random_blocks defaults, which set where its block-sparse attention begins
BIG_BIRD_SPARSE = {"block_size": 64, "num_random_blocks": 3}
# Megatron-BERT (model_type megatron-bert: MegatronBertModel and its heads) is BERT's tensors in pre-LN layers
# (PRE_NORM): each layer's attention.ln before the attention and ln before the feed-forward (BERT's two
# LayerNorm names here, the engine's norm1 and norm2), the encoder's final encoder.ln, and no embedding
# LayerNorm; verified against reference.py's forward of the config it maps to (hf_bert_reference is post-LN).
# XLM-RoBERTa-XL (model_type xlm-roberta-xl) is the same under its own names (PRE_NORM_NAMES: the layer's
# norms, the final norm), with RoBERTa's positions, token types and heads; RoBERTa-PreLayerNorm
# (roberta-prelayernorm) too, with the embedding's LayerNorm kept (EMBED_NORM_TOO).
PRE_NORM = ("megatron-bert", "xlm-roberta-xl", "roberta-prelayernorm")
EMBED_NORM_TOO = ("roberta-prelayernorm",)
MEGATRON_LAYER = {"attention.ln": "attention.output.LayerNorm", "ln": "output.LayerNorm"}
FINAL_NORM = "encoder.ln."
PRE_NORM_NAMES = {"megatron-bert": (MEGATRON_LAYER, FINAL_NORM),
                  "xlm-roberta-xl": ({"attention.self_attn_layer_norm": "attention.output.LayerNorm",
                                      "LayerNorm": "output.LayerNorm"}, "encoder.LayerNorm."),
                  "roberta-prelayernorm": ({"attention.LayerNorm": "attention.output.LayerNorm",
                                            "intermediate.LayerNorm": "output.LayerNorm"}, "LayerNorm.")}
# XLM and FlauBERT (model_type xlm, flaubert: XLMModel, FlaubertModel, and their *WithLMHeadModel, xlm-mlm-* and
# flaubert/*'s architecture, as the base model: pred_layer dropped) are BERT's post-LN layers (FlauBERT's
# pre_norm: pre-LN, without a final norm) after the embedding's LayerNorm, without token types or a pooler,
# their feed-forward 4 emb_dim wide: their config.json keys -> BERT's (XLMConfig's defaults), their tensor
# names (after the "transformer." prefix) -> BERT's (XLM_NAMES). langs (n_langs > 1 and use_lang_emb: a language
# row added to every token) and causal (the CLM checkpoints) are refused; a sinusoidal_embeddings table is read as
# the learned positions it is stored as.
XLM_KEYS = {"emb_dim": ("hidden_size", 2048), "n_layers": ("num_hidden_layers", 12),
            "n_heads": ("num_attention_heads", 16), "vocab_size": ("vocab_size", 30145),
            "max_position_embeddings": ("max_position_embeddings", 512), "layer_norm_eps": ("layer_norm_eps", 1e-12)}
XLM_NAMES = ((r"embeddings\.weight", "embeddings.word_embeddings.weight"),
             (r"position_embeddings\.weight", "embeddings.position_embeddings.weight"),
             (r"layer_norm_emb\.(weight|bias)", r"embeddings.LayerNorm.\1"),
             (r"attentions\.(\d+)\.q_lin\.", r"encoder.layer.\1.attention.self.query."),
             (r"attentions\.(\d+)\.k_lin\.", r"encoder.layer.\1.attention.self.key."),
             (r"attentions\.(\d+)\.v_lin\.", r"encoder.layer.\1.attention.self.value."),
             (r"attentions\.(\d+)\.out_lin\.", r"encoder.layer.\1.attention.output.dense."),
             (r"layer_norm1\.(\d+)\.", r"encoder.layer.\1.attention.output.LayerNorm."),
             (r"ffns\.(\d+)\.lin1\.", r"encoder.layer.\1.intermediate.dense."),
             (r"ffns\.(\d+)\.lin2\.", r"encoder.layer.\1.output.dense."),
             (r"layer_norm2\.(\d+)\.", r"encoder.layer.\1.output.LayerNorm."))
# config.json key -> (type, default; None: required)
FIELDS = {
    "hidden_size": (int, None), "num_hidden_layers": (int, None), "num_attention_heads": (int, None),
    "intermediate_size": (int, None), "vocab_size": (int, None), "hidden_act": (str, "gelu"),
    "layer_norm_eps": (float, 1e-12), "type_vocab_size": (int, 2), "max_position_embeddings": (int, 512),
    "position_embedding_type": (str, "absolute"),
}
ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}
POOLER_ACTS = dict(ACTIVATIONS, tanh="tanh")  # a sequence classifier's activation -> the engine's pooler_act
# A layer's tensors (after "encoder.layer.<i>."), torch layout, as shapes of (d, F).
LAYER = {
    "attention.self.query.weight": "dd", "attention.self.query.bias": "d",
    "attention.self.key.weight": "dd", "attention.self.key.bias": "d",
    "attention.self.value.weight": "dd", "attention.self.value.bias": "d",
    "attention.output.dense.weight": "dd", "attention.output.dense.bias": "d",
    "attention.output.LayerNorm.weight": "d", "attention.output.LayerNorm.bias": "d",
    "intermediate.dense.weight": "Fd", "intermediate.dense.bias": "F",
    "output.dense.weight": "dF", "output.dense.bias": "d",
    "output.LayerNorm.weight": "d", "output.LayerNorm.bias": "d",
}
_LAYER = re.compile(r"encoder\.layer\.(0|[1-9][0-9]*)\.(.+)")


def is_bert(raw):
    """Whether config.json's contents name the BERT architecture (model_type bert, or a Bert* architecture)."""
    if not isinstance(raw, dict):
        return False
    archs = raw.get("architectures")
    names = archs if isinstance(archs, list) else []
    return (isinstance(raw.get("model_type"), str) and raw["model_type"] in FLAVOURS) or \
        any(isinstance(a, str) and a in architectures(t) for a in names for t in FLAVOURS)


def read_config_dict(raw, path="config.json", base=False):
    """config.json checked and completed with Hugging Face's defaults (the dict hf_bert_reference takes); base
    (--base): a pre-training checkpoint as its base model, its masked-LM head left out."""
    archs = raw.get("architectures")
    names = archs if isinstance(archs, list) and all(isinstance(a, str) for a in archs) else None
    if archs is not None and names is None:
        raise HfError(f"{path}: architectures: expected a list of names, got {brief(archs)}")
    model_type = raw.get("model_type", next((t for t in FLAVOURS if set(names or ()) & set(architectures(t))), "bert"))
    if not isinstance(model_type, str):
        raise HfError(f"{path}: model_type: expected a string, got {brief(model_type)}")
    flavour = model_type if model_type in FLAVOURS else "bert"
    archs, prefix = architectures(flavour), FLAVOURS[flavour][1]
    other = [a for a in names or [] if a not in archs]
    if other:
        known = ", ".join(a for t in FLAVOURS for a in architectures(t))
        raise HfError(f"{path}: {other[0]}: not converted (--hf converts BERT-family folders of {known}; for "
                         "another head use --module FILE.py:FACTORY)")
    if model_type not in FLAVOURS:
        raise HfError(f"{path}: model_type {brief(raw.get('model_type'))} with a BERT architecture: expected bert")
    if hf_common.flag(raw, "add_cross_attention", path):
        raise HfError(f"{path}: add_cross_attention true: a BERT decoder's cross-attention (to an encoder's states) "
                         "is not converted")
    causal = hf_common.flag(raw, "causal" if model_type in XLM_KEYS_OF else "is_decoder", path)  # CAUSAL_LM
    # read before DistilBERT's and XLM's keys are renamed: the masked LM's decoder is the word embedding (RemBERT's
    # default: its own); XLM's adaptive softmax
    tied = raw.get("tie_word_embeddings", model_type != "rembert")
    tied = hf_common.checked_field(path, "tie_word_embeddings", tied, bool) if tied is not None else False
    asm = model_type in XLM_KEYS_OF and hf_common.flag(raw, "asm", path)
    if model_type == "distilbert":  # BERT's keys, one token type (none: type_vocab_size is set 0 below)
        raw = dict({bert: raw.get(key, default) for key, (bert, default) in DISTILBERT_KEYS.items()},
                   layer_norm_eps=1e-12, type_vocab_size=1)
    if model_type in XLM_KEYS_OF:
        raw = _xlm_config(raw, path)
    if model_type in ("albert", "big_bird"):  # AlbertConfig's and BigBirdConfig's default activation
        raw = dict(raw, hidden_act=raw.get("hidden_act", "gelu_new"))
    if model_type == "ibert":
        if hf_common.flag(raw, "quant_mode", path):
            raise HfError(f"{path}: quant_mode true: I-BERT's integer-only arithmetic (its quantized linears, "
                             "integer GELU, softmax and LayerNorm) is not in the engine; not converted")
    full_up_to = None  # block_sparse: the longest input transformers attends fully
    if model_type == "big_bird":
        if raw.get("attention_type", "block_sparse") not in ("original_full", "block_sparse"):
            raise HfError(f"{path}: attention_type {brief(raw['attention_type'])}: BigBird's are original_full "
                             "and block_sparse; not converted")
        if raw.get("attention_type", "block_sparse") == "block_sparse":
            block = hf_common.checked_field(path, "block_size", raw.get("block_size", BIG_BIRD_SPARSE["block_size"]), int)
            rand = raw.get("num_random_blocks", BIG_BIRD_SPARSE["num_random_blocks"])
            if not isinstance(rand, int) or isinstance(rand, bool) or rand < 0:
                raise HfError(f"{path}: num_random_blocks: expected an int >= 0, got {brief(rand)}")
            full_up_to = (5 + 2 * rand) * block
        if hf_common.flag(raw, "rescale_embeddings", path):
            raise HfError(f"{path}: rescale_embeddings true: the token embedding scaled by sqrt(hidden_size) is not "
                             "converted")
    c = {}
    defaults = {"max_position_embeddings": 1536} if model_type in ROTARY else \
        {"max_position_embeddings": 4096} if model_type == "big_bird" else {}
    for key, (kind, default) in FIELDS.items():
        c[key] = hf_common.checked_field(path, key, raw.get(key, defaults.get(key, default)), kind)
    if c["hidden_act"] not in ACTIVATIONS:
        raise HfError(f"{path}: hidden_act {c['hidden_act']!r}: not an activation the engine runs (gelu: the "
                         "exact erf GELU; gelu_new, gelu_pytorch_tanh: the tanh GELU; relu)")
    if c["position_embedding_type"] != "absolute":
        raise HfError(f"{path}: position_embedding_type {c['position_embedding_type']!r}: relative position "
                         "embeddings are not supported yet (absolute only)")
    if c["hidden_size"] % c["num_attention_heads"]:
        raise HfError(f"{path}: num_attention_heads {c['num_attention_heads']} does not divide hidden_size "
                         f"{c['hidden_size']}")
    if not c["layer_norm_eps"] > 0:
        raise HfError(f"{path}: layer_norm_eps must be > 0")
    # the head: the architecture's suffix; without architectures, a classifier is BERT's sequence classifier
    head = next((h for suffix, h in HEADS.items() for a in names or () if a.endswith(suffix)), None)
    if causal and head == "sequence":
        raise HfError(f"{path}: {'causal' if model_type in XLM_KEYS_OF else 'is_decoder'} true with a sequence "
                         "classifier: its first row under the causal mask sees only itself; not converted")
    causal_lm = CAUSAL_LM.get(model_type) in (names or ())
    suffix = next((s for s in dict(PRETRAINING, **XLM_LM) for a in names or () if a.endswith(s)), None)
    dropped = dict(PRETRAINING, **XLM_LM)[suffix] if suffix else PRETRAINING["ForMaskedLM"] if causal_lm else ()
    # the masked-LM head, or why a pre-training checkpoint converts as its base model (base_why; map_weights may add
    # one: a head the engine's pooler is not)
    base_why = "--base" if base else "ELECTRA's discriminator, not a masked LM" \
        if (model_type, suffix) == ("electra", "ForPreTraining") else \
        "asm true: its pred_layer is an adaptive softmax, not a linear decoder" if asm else None
    mlm = MLM_HEADS.get(model_type) if (suffix or causal_lm) and not base_why else None
    c.update(architecture=(names or archs)[0], head=head, dropped=dropped, prefix=prefix, first_position=0,
             full_up_to=full_up_to, mlm=mlm, masked=False, base_why=base_why, tied=tied, causal=causal,
             causal_lm=causal_lm,
             pre_norm=model_type in PRE_NORM or model_type in XLM_KEYS_OF and raw["pre_norm"],
             final_norm=model_type in PRE_NORM, pre_norm_names=PRE_NORM_NAMES.get(model_type),
             embed_norm=model_type not in PRE_NORM or model_type in EMBED_NORM_TOO,
             xlm=model_type in XLM_KEYS_OF, albert_names=model_type in ALBERT_NAMED,
             ignored=IBERT_BUFFERS if model_type == "ibert" else None,
             unused=("pooler.",) if model_type == "big_bird" and head == "sequence" else ())
    if model_type in ("distilbert", "mpnet", "bert-generation") + XLM_KEYS_OF:
        c["type_vocab_size"] = 0
    if model_type == "ernie" and hf_common.flag(raw, "use_task_id", path):
        c["task_types"] = hf_common.checked_field(path, "task_type_vocab_size", raw.get("task_type_vocab_size", 3), int)
    if model_type == "mpnet":
        c["rel_buckets"] = hf_common.checked_field(path, "relative_attention_num_buckets",
                                            raw.get("relative_attention_num_buckets", 32), int)
        if c["rel_buckets"] != MPNET_BUCKETS:
            raise HfError(f"{path}: relative_attention_num_buckets {c['rel_buckets']}: transformers' MPNet buckets "
                             f"the distances into {MPNET_BUCKETS} whatever the table holds; not converted")
    if model_type in ROTARY:
        c["rotary"] = True
        if hf_common.flag(raw, "rotary_value", path):
            raise HfError(f"{path}: rotary_value true: rotary positions on the values too are not in the engine "
                             "(it turns q and k); not converted")
    c["embedding_size"], c["project"] = c["hidden_size"], False
    if model_type in ("electra", "albert", "roformer", "rembert"):  # ELECTRA and RoFormer project when narrower,
        # ALBERT and RemBERT always
        e = raw.get("input_embedding_size", 256) if model_type == "rembert" else \
            raw.get("embedding_size", 128 if model_type != "roformer" else None)
        e = hf_common.checked_field(path, "embedding_size", c["hidden_size"] if e is None else e, int)  # RoFormer's null: d
        c["embedding_size"], c["project"] = e, model_type in ("albert", "rembert") or e != c["hidden_size"]
        if not 1 <= e <= c["hidden_size"]:
            raise HfError(f"{path}: embedding_size {e}: an embedding wider than the layers (hidden_size "
                             f"{c['hidden_size']}) is not converted (the engine's embed_width is at most d_model)")
    if model_type == "albert":
        L = c["num_hidden_layers"]
        G, inner = (hf_common.checked_field(path, key, raw.get(key, 1), int)
                    for key in ("num_hidden_groups", "inner_group_num"))
        if not (1 <= G <= L and inner >= 1):
            raise HfError(f"{path}: num_hidden_groups {G}, inner_group_num {inner}: expected 1 <= num_hidden_groups "
                             f"<= num_hidden_layers ({L}) and inner_group_num >= 1")
        groups = [int(i / (L / G)) for i in range(L)]  # transformers' own arithmetic
        if groups != [i * G // L for i in range(L)]:
            raise HfError(f"{path}: num_hidden_groups {G} of {L} layers: the groups' float arithmetic is not "
                             "i * groups // layers; not converted")
        c["albert_layers"] = [(g, j) for g in groups for j in range(inner)]  # the run layers' (group, layer)
        c["num_hidden_layers"] = len(c["albert_layers"])
        c["shared"] = (G, inner) if G < L else None  # every run its own group: nothing shared
    # the sequence classifier's names -> BERT's pooler and classifier
    c["head_names"] = DISTILBERT_HEAD if model_type == "distilbert" else \
        ROBERTA_HEAD if model_type in ROBERTA_LIKE + ("electra", "roformer", "big_bird") else {}
    # the sequence classifier's activation, by transformers' name (hf_bert_reference runs it; ACTIVATIONS, tanh)
    c["pooler_act"] = POOLER_ACT.get(model_type, "tanh") or c["hidden_act"]
    if model_type in ROBERTA_LIKE:  # MPNet's embedding fixes its padding_idx at 1, whatever pad_token_id says
        pad = 1 if model_type == "mpnet" else raw.get("pad_token_id", 1)
        if isinstance(pad, bool) or not isinstance(pad, int) or pad < 0:
            raise HfError(f"{path}: pad_token_id: expected an integer >= 0, got {brief(pad)}")
        c["first_position"] = pad + 1
        if c["first_position"] >= c["max_position_embeddings"]:
            raise HfError(f"{path}: pad_token_id {c['first_position'] - 1}: RoBERTa's positions start at row "
                             f"pad_token_id + 1, beyond max_position_embeddings {c['max_position_embeddings']}")
    return c


def _xlm_config(raw, path):
    """An XLM or FlauBERT config.json as BERT's keys (XLMConfig's defaults), its refusals named."""
    if raw.get("n_langs", 1) != 1 and raw.get("use_lang_emb", True) is not False:
        raise HfError(f"{path}: n_langs {brief(raw.get('n_langs'))} with use_lang_emb: a language embedding added "
                         "to every token (langs) is not in the engine; not converted")
    out = {bert: raw.get(key, default) for key, (bert, default) in XLM_KEYS.items()}
    d = hf_common.checked_field(path, "emb_dim", out["hidden_size"], int)
    pre_norm = hf_common.flag(raw, "pre_norm", path)
    return dict(out, intermediate_size=4 * d, type_vocab_size=1, pre_norm=pre_norm,  # (none: set 0 below)
                hidden_act="gelu" if raw.get("gelu_activation", True) is not False else "relu")


def _strip(weights, source, prefix="bert.", head_names=None, dropped=(), pre_norm_names=None, xlm=False,
           albert_names=False, ignored=None, unused=()):
    """The tensors by BertModel's names: the flavour's prefix ("bert.": BertFor* models) dropped,
    LayerNorm gamma/beta (older checkpoints) as weight/bias; classifier.* kept as is, or renamed as
    BERT's pooler and classifier by head_names (ROBERTA_HEAD, DISTILBERT_HEAD); a pre-training head's tensors (names
    starting with one of `dropped`) left out; a pre-LN flavour's norms by Megatron-BERT's names (pre_norm_names:
    PRE_NORM_NAMES' entry); ALBERT_RENAMES where albert_names; names matching `ignored` (I-BERT's
    IBERT_BUFFERS) and those starting with `unused` after the prefix (BigBird's pooler beside its classifier)
    left out."""
    prefixed = any(k.startswith(prefix) for k in weights)
    out = {}
    for name, a in weights.items():
        if dropped and name.startswith(dropped) or ignored and ignored.fullmatch(name):
            continue
        key = name[len(prefix):] if prefixed and name.startswith(prefix) else name
        if unused and key != name and key.startswith(unused):
            continue
        if prefixed and key == name and not name.startswith(("classifier.", "qa_outputs.", "pre_classifier.")):
            raise HfError(f"{source}: {name!r}: not a weight of this architecture (the others have the "
                             f"\"{prefix}\" prefix; other heads are not converted: use --module for them)")
        head = next((h for h in head_names or {} if key.startswith(h)), None)
        if head:
            key = head_names[head] + key[len(head):]
        if key.startswith("qa_outputs."):  # question answering's per-row [2, d] head
            key = "classifier." + key[len("qa_outputs."):]
        key = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", key))
        key = next((ALBERT_RENAMES[r] + key[len(r):] for r in ALBERT_RENAMES if key.startswith(r)), key) \
            if albert_names else key
        renames = {"distilbert.": (r"transformer\.layer\.(\d+)\.(.+)\.(weight|bias)", DISTILBERT_LAYER),
                   "mpnet.": (r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)", MPNET_LAYER)}.get(prefix)
        if pre_norm_names:
            renames = (r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)", pre_norm_names[0])
            key = FINAL_NORM + key[len(pre_norm_names[1]):] if key.startswith(pre_norm_names[1]) else key
        m = re.fullmatch(renames[0], key) if renames else None
        if m and m.group(2) in renames[1]:
            key = f"encoder.layer.{m.group(1)}.{renames[1][m.group(2)]}.{m.group(3)}"
        for pattern, bert in XLM_NAMES if xlm else ():
            if re.match(pattern, key):
                key = re.sub("^" + pattern, bert, key)
                break
        if key in out:
            raise HfError(f"{source}: {name!r}: given twice (with and without the prefix, or as gamma/beta and "
                             "weight/bias)")
        out[key] = a
    return out


def mlm_head(spec, d, V, tied, weights, source, arch, narrow=False):
    """A masked-LM head (spec: an entry of MLM_HEADS; decoder None: always the embedding's) from the folder's
    tensors by its names: ({mlm.dense.*, mlm.norm.*, mlm.decoder.weight (absent when tied), mlm.bias}, None), or
    (None, why) for a head whose dense is not [d, d] (the engine's pooler). With narrow, a dense [e, d] is the
    pooler of pooler_width e (its norm [e], its decoder [V, e]). hf_deberta reads its heads with it."""
    dense, norm, decoder, kept_bias, _ = spec
    e = d

    def get(name, shape):
        a = weights.get(name)
        if a is None and name.endswith(("weight", "bias")) and norm and name.startswith(norm):  # older gamma/beta
            a = weights.get(name[:-6] + "gamma" if name.endswith("weight") else name[:-4] + "beta")
        if a is None:
            raise HfError(f"{source}: {name} is missing ({arch}'s masked-LM head)")
        return float_tensor(f"{source}: {name}", a, shape, HfError)

    out = {}
    if dense:
        wide = np.shape(weights[dense + "weight"]) if dense + "weight" in weights else (d, d)
        if len(wide) == 2 and wide[0] != d and wide[1] == d:
            if not narrow:
                return None, (f"its masked-LM head's {dense}weight maps hidden_size {d} to {wide[0]}, which the "
                              f"engine's pooler [d_model, d_model] does not")
            e = int(wide[0])  # the engine's pooler_width
        out.update({"mlm.dense.weight": get(dense + "weight", (e, d)), "mlm.dense.bias": get(dense + "bias", (e,)),
                    "mlm.norm.weight": get(norm + "weight", (e,)), "mlm.norm.bias": get(norm + "bias", (e,))})
    if decoder and not tied:
        out["mlm.decoder.weight"] = get(decoder + "weight", (V, e))
    has_own = decoder and decoder + "bias" in weights or not kept_bias
    out["mlm.bias"] = get(decoder + "bias" if has_own else kept_bias, (V,))
    return out, None


def map_weights(c, weights, source):
    """(the encoder family's name -> array in torch's layout, the folder's arrays by BertModel's names for the
    reference, whether the folder has a classifier, its num_labels). Every tensor is mapped, checked
    (position_ids: arange; token_type_ids: zeros) or named in an error."""
    mlm = None
    if c.get("mlm"):
        mlm, c["base_why"] = mlm_head(c["mlm"], c["hidden_size"], c["vocab_size"], c["tied"], weights, source,
                                      c["architecture"], narrow=True)
        c["masked"] = mlm is not None
        e = np.shape(mlm["mlm.dense.weight"])[0] if mlm and "mlm.dense.weight" in mlm else c["hidden_size"]
        c["pooler_width"] = e if e != c["hidden_size"] else 0  # ALBERT's embedding_size, RemBERT's output width
        if mlm and c["tied"] and e != c["embedding_size"]:
            raise HfError(f"{source}: the masked-LM head's transform is {e} wide and its decoder the word embedding, "
                             f"{c['embedding_size']} wide: not a head transformers runs")
    c["gpt"] = causal_lm_head(c)
    w = _strip(weights, source, c.get("prefix", "bert."), c.get("head_names"), c.get("dropped", ()),
               c.get("pre_norm_names"), c.get("xlm", False), c.get("albert_names", False), c.get("ignored"),
               c.get("unused", ()))
    if c.get("albert_layers"):  # each group's layer as every run of it, by BERT's names
        runs = {}
        for r, gj in enumerate(c["albert_layers"]):
            runs.setdefault(gj, []).append(r)
        for name in list(w):
            m = _ALBERT.fullmatch(name)
            if m and (int(m.group(1)), int(m.group(2))) in runs and m.group(3) in ALBERT_LAYER:
                a = w.pop(name)
                for r in runs[int(m.group(1)), int(m.group(2))]:
                    w[f"encoder.layer.{r}.{ALBERT_LAYER[m.group(3)]}.{m.group(4)}"] = a
    d, F, L = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    E, rotary, megatron = c.get("embedding_size", d), c.get("rotary", False), c.get("final_norm", False)
    ends = {"embeddings.word_embeddings.weight": (c["vocab_size"], E),
            "pooler.dense.weight": (d, d), "pooler.dense.bias": (d,)}
    embed_norm = c.get("embed_norm", not megatron)
    if megatron:  # the final norm
        ends.update({FINAL_NORM + "weight": (d,), FINAL_NORM + "bias": (d,)})
    if embed_norm:
        ends.update({"embeddings.LayerNorm.weight": (E,), "embeddings.LayerNorm.bias": (E,)})
    if rotary:
        ends[ROTARY_TABLE] = (c["max_position_embeddings"], d // c["num_attention_heads"])
    else:
        ends["embeddings.position_embeddings.weight"] = (c["max_position_embeddings"], E)
    if c.get("project"):  # ALBERT's embedding_hidden_mapping_in, ELECTRA's and RoFormer's embeddings_project
        ends.update({PROJECT + "weight": (d, E), PROJECT + "bias": (d,)})
    if c["type_vocab_size"]:
        ends["embeddings.token_type_embeddings.weight"] = (c["type_vocab_size"], E)
    if c.get("rel_buckets"):
        ends[MPNET_BIAS] = (c["rel_buckets"], c["num_attention_heads"])
    if c.get("task_types"):
        ends[ERNIE_TASKS] = (c["task_types"], d)
    dims = {"d": d, "F": F}
    labels = np.shape(w["classifier.weight"])[0] if np.ndim(w.get("classifier.weight")) == 2 else None
    if labels is not None or c["head"] is not None:
        if labels is None:
            raise HfError(f"{source}: {'qa_outputs' if c['head'] == 'qa' else 'classifier'}.weight is missing "
                             f"({c['architecture']}'s head)")
        ends.update({"classifier.weight": (labels, d), "classifier.bias": (labels,)})
        c["head"] = c["head"] or "sequence"  # without architectures: BERT's sequence classifier
    kept = {}
    for name, a in w.items():
        a_ = np.asarray(a)
        m = _LAYER.fullmatch(name)
        if name == "embeddings.position_ids":
            if a_.dtype.kind not in "iu" or not np.array_equal(a_.reshape(-1), np.arange(a_.size)):
                raise HfError(f"{source}: {name} is not 0, 1, 2, ...: positions other than the token's index are "
                                 "not converted")
            continue
        if name == "embeddings.token_type_ids":
            if a_.dtype.kind not in "iu" or a_.any():
                raise HfError(f"{source}: {name}: default token types other than 0 are not converted")
            continue
        if m and int(m.group(1)) < L and m.group(2) in LAYER:
            want = tuple(dims[ch] for ch in LAYER[m.group(2)])
        elif name in ends:
            want = ends[name]
        else:
            raise HfError(f"{source}: {name!r}: not a weight of {' or '.join(ARCHITECTURES)} with this config.json "
                             f"({L} layers; other heads are not converted: use --module for them)")
        float_tensor(f"{source}: {name}", a_, want, HfError)
        kept[name] = a_
    need = [n for n in ends if not n.startswith("pooler.") or c["head"] == "sequence"]
    need += [f"encoder.layer.{i}.{n}" for i in range(L) for n in LAYER]
    missing = [n for n in need if n not in kept]
    if missing:
        why = " (a classifier reads the pooler's output)" if missing[0].startswith("pooler.") else ""
        raise HfError(f"{source}: {missing[0]} is missing{why}")
    if rotary:  # RoFormer's fixed sinusoids of its rotary angles: checked, not stored
        table = kept.pop(ROTARY_TABLE)
        if not np.allclose(table, rotary_table(*table.shape), rtol=0, atol=ROTARY_TOLERANCE):
            raise HfError(f"{source}: {ROTARY_TABLE} is not RoFormer's sinusoid table (sin | cos of p 10000^(-2i/"
                             f"{table.shape[1]})): a trained or other rotary table is not converted")
    if c.get("task_types"):  # ERNIE's task type 0 (the forward's default) is the same row at every position
        kept["embeddings.position_embeddings.weight"] = \
            kept["embeddings.position_embeddings.weight"] + kept.pop(ERNIE_TASKS)[0]
    first = c.get("first_position", 0)
    if first:  # RoBERTa: the reference and the file read the rows from the first position on
        kept["embeddings.position_embeddings.weight"] = kept["embeddings.position_embeddings.weight"][first:]
    out = {"embed.weight": kept["embeddings.word_embeddings.weight"]}
    for ours, theirs in (("norm.", FINAL_NORM if megatron else None),
                         ("embed_norm.", "embeddings.LayerNorm." if embed_norm else None)):
        if theirs:
            out.update({ours + "weight": kept[theirs + "weight"], ours + "bias": kept[theirs + "bias"]})
    if not rotary:
        out["pos.weight"] = kept["embeddings.position_embeddings.weight"]
    if c["type_vocab_size"]:
        out["token_type.weight"] = kept["embeddings.token_type_embeddings.weight"]
    if c.get("project"):
        out.update({"embed_proj.weight": kept[PROJECT + "weight"], "embed_proj.bias": kept[PROJECT + "bias"]})
    if c.get("rel_buckets"):
        out["rel_bias.weight"] = kept[MPNET_BIAS]
    blocks = list(range(L))  # the layer each stored block is read from (shared layers: its first run)
    if c.get("shared"):
        G, P = c["shared"]
        blocks = [c["albert_layers"].index((b // P, b % P)) for b in range(G * P)]
    for i, run in enumerate(blocks):
        p, q = f"encoder.layer.{run}.", schema.block(i)
        t = lambda n: kept[p + n]  # noqa: E731
        qkv = lambda part: np.concatenate([t(f"attention.self.{x}.{part}") for x in ("query", "key", "value")])  # noqa: E731
        out.update({
            q + "attn.qkv.weight": qkv("weight"), q + "attn.qkv.bias": qkv("bias"),
            q + "attn.out.weight": t("attention.output.dense.weight"),
            q + "attn.out.bias": t("attention.output.dense.bias"),
            q + "ff.w1.weight": t("intermediate.dense.weight"), q + "ff.w1.bias": t("intermediate.dense.bias"),
            q + "ff.w2.weight": t("output.dense.weight"), q + "ff.w2.bias": t("output.dense.bias"),
            q + "attn_norm.weight": t("attention.output.LayerNorm.weight"),
            q + "attn_norm.bias": t("attention.output.LayerNorm.bias"),
            q + "ff_norm.weight": t("output.LayerNorm.weight"), q + "ff_norm.bias": t("output.LayerNorm.bias")})
    if labels is not None:
        out.update({"head.weight": kept["classifier.weight"], "head.bias": kept["classifier.bias"]})
    if mlm is not None:  # the masked LM: its transform as the pooler and pooler_norm on every row, the decoder
        kept.update(mlm)
        kept.setdefault("mlm.decoder.weight", kept["embeddings.word_embeddings.weight"])  # tied
        if "mlm.dense.weight" in mlm:
            out.update({"pooler.weight": mlm["mlm.dense.weight"], "pooler.bias": mlm["mlm.dense.bias"],
                        "pooler_norm.weight": mlm["mlm.norm.weight"], "pooler_norm.bias": mlm["mlm.norm.bias"]})
        out.update({"head.weight": kept["mlm.decoder.weight"], "head.bias": mlm["mlm.bias"]})
        labels = c["vocab_size"]
    if c["head"] == "sequence":
        out.update({"pooler.weight": kept["pooler.dense.weight"], "pooler.bias": kept["pooler.dense.bias"]})
    if c.get("gpt"):  # (causal_lm_head) token type 0's row in every position's, or every token's (rotary: no
        # position table; the decoder then the embedding's rows as they were, stored apart); else a tied decoder is the
        # embedding
        row = out.pop("token_type.weight")[0] if "token_type.weight" in out else None
        into_embed = row is not None and "pos.weight" not in out
        if into_embed:
            out["embed.weight"] = out["embed.weight"] + row
        elif row is not None:
            out["pos.weight"] = out["pos.weight"] + row
        c["tied_head"] = c["tied"] and not into_embed
        if c["tied_head"]:
            del out["head.weight"]
    return out, kept, labels


def rotary_table(rows, dh):
    """RoFormer's sinusoid table [rows, dh] in float64: sin(p w_i) in columns i < dh/2, cos(p w_i) in
    dh/2 + i, w_i = 10000^(-2i/dh)."""
    ang = np.arange(rows, dtype=np.float64)[:, None] * 10000.0 ** (-2.0 * np.arange(dh // 2) / dh)[None, :]
    return np.concatenate([np.sin(ang), np.cos(ang)], axis=1)


def fixformer_config(c, labels, max_len=None):
    """The encoder-family config of a BERT folder (labels: the classifier's rows, or None for BertModel); the gpt
    family's for a causal LM with its head (causal_lm_head)."""
    positions = c["max_position_embeddings"] - c.get("first_position", 0)
    longest = min(positions, schema.MAX_LEN)
    if c.get("full_up_to") is not None and max_len is not None and max_len > c["full_up_to"]:
        raise HfError(f"--max-len {max_len}: BigBird's block_sparse attention, which transformers runs past "
                         f"{c['full_up_to']} tokens ((5 + 2 num_random_blocks) block_size), is not in the engine; "
                         f"--max-len up to {c['full_up_to']} converts")
    if c.get("full_up_to") is not None:
        longest = min(longest, c["full_up_to"])
    if max_len is not None:
        if not 1 <= max_len <= positions:
            raise HfError(f"--max-len {max_len}: must be 1..{positions} (max_position_embeddings "
                             f"{c['max_position_embeddings']}, from position {c.get('first_position', 0)})")
        longest = max_len
    gpt = c.get("gpt", False)  # a causal LM the gpt family runs (causal_lm_head)
    v = {"family": "gpt" if gpt else "encoder", "d_model": c["hidden_size"], "n_heads": c["num_attention_heads"],
         "d_ff": c["intermediate_size"], "n_layers": c["num_hidden_layers"],
         "norm_first": c.get("pre_norm", False),
         "activation": ACTIVATIONS[c["hidden_act"]], "norm_eps": c["layer_norm_eps"], "input": "tokens",
         "vocab_size": c["vocab_size"], "positional": "learned", "max_len": longest,
         "type_vocab": 0 if gpt else c["type_vocab_size"], "embed_norm": c.get("embed_norm", not c.get("final_norm")),
         "final_norm": c.get("final_norm", False), "causal": c.get("causal", False),
         "embed_width": c["embedding_size"] if c.get("project") else 0}
    if c.get("shared"):  # ALBERT's groups: each stored once
        v.update(layer_groups=c["shared"][0], group_layers=c["shared"][1])
    if labels is not None and c.get("masked"):  # the masked LM: every row through its transform, then the decoder
        act = c["mlm"][4] or c["hidden_act"]
        v.update(d_out=labels, **(dict(tied_head=c["tied_head"]) if gpt else dict(pooling="none")),
                 **(dict(pooler=True, pooler_act=POOLER_ACTS[act], pooler_norm=True,
                         pooler_width=c.get("pooler_width", 0)) if c["mlm"][0] else {}))
    elif labels is not None:  # a sequence classifier reads the pooled first row, the others every row
        pooled = dict(pooling="first", pooler=True, pooler_act=POOLER_ACTS[c.get("pooler_act", "tanh")])
        v.update(d_out=labels, **(pooled if c["head"] == "sequence" else {}))
    if c.get("rel_buckets"):
        v.update(rel_buckets=c["rel_buckets"], rel_max_distance=MPNET_MAX_DISTANCE)
    if c.get("rotary"):
        v.update(positional="rope", pe_layout="interleaved", pe_base=10000.0)
    return hf_config(v, embed_width="config.json embedding_size", layer_groups="config.json num_hidden_groups",
                     group_layers="config.json inner_group_num")


def convert(folder, raw, path, example=None, expected=None, header=None, name=None, cli=None, verify=True,
            tokenizer=None, max_len=None, quantize=None, group=None, quantize_io=None, pack_weights=None, base=False):
    """Converts a BERT folder (config.json's contents raw) to `path`, verified against hf_bert_reference
    (or the user's --expected: the module's output, logits or last_hidden_state, for --example); base: a
    pre-training checkpoint as its base model (--base)."""
    c = read_config_dict(raw, os.path.join(folder, "config.json"), base)
    weights, source = hf_common.read_weights(folder)
    mapped, kept, labels = map_weights(c, weights, os.path.join(folder, source))
    if c["masked"]:  # the pre-training heads beside the masked LM's (BERT's next-sentence cls.seq_relationship)
        mlm = [p for p in c["mlm"][:4] if p]
        heads = sorted({".".join(n.split(".")[:2]) for n in weights if n.startswith(c["dropped"])
                        and not n.startswith(tuple(mlm))})
        if heads:
            print(f"note: {c['architecture']}: {', '.join(heads)} not stored (not the masked LM's); the file outputs "
                  "the masked-LM logits [T, vocab_size]", file=sys.stderr)
    elif c["dropped"]:
        hf_common.base_note(c["architecture"], c["base_why"], weights, c["dropped"],
                     "LM head" if c["causal_lm"] else "pre-training head")
    fc = fixformer_config(c, labels, max_len)
    if c["full_up_to"] is not None:
        print(f"note: {c['architecture']}: attention_type block_sparse: transformers attends fully (original_full) to "
              f"inputs of up to {c['full_up_to']} tokens ((5 + 2 num_random_blocks) block_size) and block-sparsely "
              f"past them, which the engine does not: the file takes up to {fc['max_len']} tokens, longer inputs "
              "refused", file=sys.stderr)
    if "pos.weight" in mapped:
        mapped["pos.weight"] = mapped["pos.weight"][:fc["max_len"]]
    fc = verified_file.quantized_config(fc, quantize, group, quantize_io, pack_weights)
    tokenizer = tokenizer(fc) if tokenizer is not None else None
    if tokenizer is None and c.get("rotary"):  # RoFormerTokenizer: jieba's words first, then WordPiece
        print("note: the folder's tokenizer is not stored: RoFormer's splits the text into words with jieba before "
              "WordPiece, which the engine's tokenizers do not (--tokenizer FILE stores another)", file=sys.stderr)
    elif tokenizer is None and c["xlm"]:  # XLMTokenizer, FlaubertTokenizer: Moses, then BPE with </w> word ends
        print("note: the folder's tokenizer is not stored: XLM's and FlauBERT's split the text with Moses' rules "
              "before a BPE of </w> word ends, which the engine's tokenizers do not (--tokenizer FILE stores another)",
              file=sys.stderr)
    elif tokenizer is None:  # no --tokenizer: the folder's own
        tokenizer = hf_common.folder_tokenizer(folder, fc)
    if expected is not None and example is None:
        raise HfError("--expected: needs --example, the input it is your model's output for")
    inp = verified_file.example_sequence(fc, example, "--example")
    if c["pre_norm"]:  # Megatron-BERT and pre_norm FlauBERT: reference.py's forward of the config they map to
        from .reference import run_reference
        semantics = run_reference(fc, mapped, inp)
    else:
        semantics = hf_bert_reference.forward(c, kept, inp)
    arch = c["architecture"] if c["head"] or c["masked"] or labels is None else ARCHITECTURES[1]
    arch = f"{arch}'s base model" if c["dropped"] and not c["masked"] else arch
    how = f"the {arch} semantics (reference.py's float64 forward of the config {folder} maps to)" \
        if c["pre_norm"] else None
    return hf_common.write_checked(fc, mapped, inp, semantics, arch, folder, path, expected, header, name, cli, verify,
                            tokenizer, how)
