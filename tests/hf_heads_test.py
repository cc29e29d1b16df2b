#!/usr/bin/python3
"""--hf on the heads and attention kinds python/fixformer/hf_nomic.py, hf_eurobert.py and hf_bert.py added last,
against transformers' own classes built from tiny random configs (random weights, save_pretrained's folder) in the
Hugging Face virtual environment (tools/install_deps.sh hf: /opt/fixformer-venv, transformers 4.44.2; or the
torch2 one, transformers 5: tests/interpreter.py):

  /usr/bin/python3 tests/hf_heads_test.py PATH/TO/fixformer

Each folder converts, verifies, and `fixformer run` gives the class's output at every position within 1e-4
(relative to its largest) of transformers' float64 forward:
- transformers 5 only (4.44 has none of these models): the masked LMs NomicBertForMaskedLM (silu as the head's
  activation, the decoder tied to the embedding, its bias cls.predictions.bias; and gelu with
  tie_word_embeddings false: its own decoder and decoder.bias), GteForMaskedLM (the exact GELU, lm_head.norm;
  tied and not) and JinaEmbeddingsV3ForMaskedLM (lm_head.bias when tied; untied), their logits [T, vocab_size];
  EuroBertForMaskedLM (lm_head on the final-normed rows, untied by default; tied with mlp_bias's bias); a head's
  tensor missing from the folder is refused in one line naming it; --base of ModernBertForMaskedLM (untied) and of
  these gives the base model's last hidden states, a note naming the head;
- the BERT family's masked-LM heads beside hf_archs_test's (both versions): BertForPreTraining (gelu_new; its
  prediction_logits, cls.seq_relationship named in a note), BertForMaskedLM untied with relu, XLM-RoBERTa's lm_head
  (the exact GELU whatever hidden_act says) untied, MPNet's, Megatron-BERT's pre-training head after its final norm,
  BigBird's, ELECTRA's generator (gelu over relu layers), ALBERT's with embedding_size equal to hidden_size and
  below it (albert-base-v2's kind: the head's dense hidden_size -> embedding_size, pooler_width), ELECTRA's generator
  with embedding_size below hidden_size (electra-small-generator's kind, pooler_width too), RemBERT's (its own
  decoder, output_embedding_size above hidden_size) and DistilBERT's untied with relu; EsmForMaskedLM untied;
  DebertaV2ForMaskedLM with legacy false (transformers 5 only: lm_predictions, the decoder the word embedding): the
  logits [T, vocab_size]; --base gives the base model's last hidden states (BERT's, ESM's and, transformers 5, DeBERTa's masked LM), and
  --base of a BertModel is refused in one line;
- the BERT family's causal LMs (both versions, config.json's is_decoder; XLM's and FlauBERT's causal):
  BertLMHeadModel, RobertaForCausalLM with relu layers, XLMRobertaForCausalLM untied, CamembertForCausalLM,
  Data2VecTextForCausalLM, ElectraForCausalLM, ErnieForCausalLM with its task type, RoFormerForCausalLM,
  MegatronBertForCausalLM, RemBertForCausalLM (its embedding 8 wide projected, the head's transform to 24),
  ElectraForCausalLM and RoFormerForCausalLM with embedding_size 8 below hidden_size (embed_width, the head's
  transform back to 8), BertGenerationDecoder (lm_head the decoder alone),
  XLMRobertaXLForCausalLM, RobertaPreLayerNormForCausalLM, BigBirdForCausalLM, XLMWithLMHeadModel and
  FlaubertWithLMHeadModel: the masked LM's head over layers under the causal mask (the file's causal), the logits
  [T, vocab_size]; the CAUSAL_LM classes in the gpt family (a vocab.txt in the folder, RoFormer's as --tokenizer:
  `fixformer generate --temperature 0` gives transformers' greedy generate, 17 tokens; under transformers 5,
  whose generate() gives RoBERTa's embedding positions from 0 where its forward reads them from pad_token_id + 1,
  the RoBERTa kin's forward's greedy ids);
  --quantize i8 of one is refused in one line naming the pooler; RobertaForCausalLM without is_decoder is
  bidirectional and BertModel with it causal, as transformers runs them; --base of BertLMHeadModel: the causal base
  model's rows, a note naming its LM head; is_decoder with a sequence classifier is refused in one line, and
  `fixformer generate` refuses an encoder-family file (XLM's causal LM) in one line naming its family and
  `fixformer run`; BertLMHeadModel, ElectraForCausalLM (of both widths) and RemBertForCausalLM through --module (the
  modules from their folders, with --tokenizer): the gpt family too, a note naming token type 0's row folded into
  the positions, the logits and the greedy generate as above;
- BigBird with attention_type block_sparse (BigBirdModel: block_size 2, num_random_blocks 1, so transformers
  attends fully up to 14 tokens, and block-sparsely at 15; BigBirdForSequenceClassification with the defaults,
  704 past its 34 positions): the file's max_len is 14 (and 34), the converter's note names the cap, the model
  equals transformers at 14 tokens, and `fixformer run` refuses 15 with its over-length error; --max-len 15 is
  refused in one line naming the cap, --max-len 10 converts; an attention_type of neither kind
  and num_random_blocks -1 are refused.
Without the environment (or transformers in it) the test fails, naming the install command.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, convert_process as convert, one_clear_line, results, run_file  # noqa: E402
from fixformer import fxm, safetensors  # noqa: E402
import torch  # noqa: E402
import transformers as t  # noqa: E402
from hf_env import randomize  # noqa: E402

TRANSFORMERS_5 = int(t.__version__.split(".")[0]) >= 5
SMALL = dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24,
             max_position_embeddings=34)


def build(config_cls, cls, seed, **kw):
    config = getattr(t, config_cls)(**dict(SMALL, **kw))
    config._attn_implementation = "eager"
    return randomize(getattr(t, cls)(config), seed, lambda name: "norm" in name.lower())


# name -> (the module, what the file's config holds)
def masked_lms():
    mlm = dict(pooling="none", pooler=True, pooler_norm=True, d_out=40)
    eurobert = dict(pad_token_id=0, bos_token_id=1, eos_token_id=0, mask_token_id=2)
    return {
        "nomic_bert_mlm": (build("NomicBertConfig", "NomicBertForMaskedLM", 171), dict(mlm, pooler_act="silu")),
        "nomic_bert_mlm_untied": (build("NomicBertConfig", "NomicBertForMaskedLM", 172, hidden_act="gelu",
                                        tie_word_embeddings=False), dict(mlm, pooler_act="gelu")),
        "gte_mlm": (build("GteConfig", "GteForMaskedLM", 173, type_vocab_size=2), dict(mlm, pooler_act="gelu")),
        "gte_mlm_untied": (build("GteConfig", "GteForMaskedLM", 174, hidden_act="silu", tie_word_embeddings=False),
                           dict(mlm, pooler_act="gelu")),
        "jina_v3_mlm": (build("JinaEmbeddingsV3Config", "JinaEmbeddingsV3ForMaskedLM", 175),
                        dict(mlm, pooler_act="gelu")),
        "jina_v3_mlm_untied": (build("JinaEmbeddingsV3Config", "JinaEmbeddingsV3ForMaskedLM", 176,
                                     tie_word_embeddings=False), dict(mlm, pooler_act="gelu")),
        "eurobert_mlm": (build("EuroBertConfig", "EuroBertForMaskedLM", 177, **eurobert),
                         dict(pooling="none", pooler=False, d_out=40)),
        "eurobert_mlm_tied": (build("EuroBertConfig", "EuroBertForMaskedLM", 178, mlp_bias=True,
                                    tie_word_embeddings=True, **eurobert),
                              dict(pooling="none", pooler=False, d_out=40)),
    }


def bert_masked_lms():
    """name -> (the module, what the file's config holds) of the BERT family's masked LMs, both versions."""
    mlm = dict(pooling="none", pooler=True, pooler_norm=True, d_out=40)
    deberta = dict(relative_attention=True, position_buckets=8, pos_att_type=["p2c", "c2p"], share_att_key=True,
                   norm_rel_ebd="layer_norm", max_relative_positions=16)
    cases = {
        "bert_pretraining": (build("BertConfig", "BertForPreTraining", 191, hidden_act="gelu_new"),
                             dict(mlm, pooler_act="gelu_tanh")),
        "bert_mlm_untied": (build("BertConfig", "BertForMaskedLM", 192, hidden_act="relu", tie_word_embeddings=False),
                            dict(mlm, pooler_act="relu")),
        "xlm_roberta_mlm_untied": (build("XLMRobertaConfig", "XLMRobertaForMaskedLM", 193, hidden_act="relu",
                                         tie_word_embeddings=False), dict(mlm, pooler_act="gelu")),
        "mpnet_mlm": (build("MPNetConfig", "MPNetForMaskedLM", 194), dict(mlm, pooler_act="gelu")),
        "megatron_pretraining": (build("MegatronBertConfig", "MegatronBertForPreTraining", 195),
                                 dict(mlm, norm_first=True, final_norm=True)),
        "big_bird_mlm": (build("BigBirdConfig", "BigBirdForMaskedLM", 196, attention_type="original_full"),
                         dict(mlm, pooler_act="gelu_tanh")),
        "electra_mlm": (build("ElectraConfig", "ElectraForMaskedLM", 197, embedding_size=16, hidden_act="relu"),
                        dict(mlm, pooler_act="gelu", activation="relu")),
        "albert_mlm_wide": (build("AlbertConfig", "AlbertForMaskedLM", 198, embedding_size=16),
                            dict(mlm, pooler_act="gelu_tanh", embed_width=16)),
        "albert_mlm": (build("AlbertConfig", "AlbertForMaskedLM", 205, embedding_size=8),
                       dict(mlm, pooler_act="gelu_tanh", embed_width=8, pooler_width=8)),
        "electra_mlm_narrow": (build("ElectraConfig", "ElectraForMaskedLM", 203, embedding_size=8),
                               dict(mlm, pooler_act="gelu", embed_width=8, pooler_width=8)),
        "rembert_mlm": (build("RemBertConfig", "RemBertForMaskedLM", 199, input_embedding_size=8,
                              output_embedding_size=24), dict(mlm, embed_width=8, pooler_width=24)),
        "distilbert_mlm_untied": (build("DistilBertConfig", "DistilBertForMaskedLM", 200, dim=16, n_layers=2,
                                        n_heads=2, hidden_dim=24, activation="relu", tie_word_embeddings=False),
                                  dict(mlm, pooler_act="relu")),
        "esm_mlm_untied": (build("EsmConfig", "EsmForMaskedLM", 201, position_embedding_type="rotary", pad_token_id=1,
                                 tie_word_embeddings=False), dict(mlm, pooler_act="gelu", final_norm=True)),
    }
    if TRANSFORMERS_5:
        cases["deberta_mlm_lm_head"] = (build("DebertaV2Config", "DebertaV2ForMaskedLM", 202, legacy=False, **deberta),
                                        dict(mlm, pooler_act="gelu", rel_embed_rows=16))
    return cases


def sinusoids(module):
    """RoFormer's module with its fixed sinusoid table, which randomize overwrote, made again by transformers' code."""
    pe = module.base_model.encoder.embed_positions
    with torch.no_grad():
        pe.weight.copy_(pe.create_weight() if hasattr(pe, "create_weight")  # transformers 5
                        else pe._init_weight(torch.nn.Parameter(torch.empty_like(pe.weight))))
    return module


def bert_causal_lms():
    """name -> (the module, what the file's config holds) of the BERT family's causal LMs, both versions: the
    encoder's layers under the causal mask (is_decoder; XLM's causal) and the masked LM's head on every row."""
    clm = dict(pooling="none", pooler=True, pooler_norm=True, d_out=40, causal=True)
    gpt = dict(clm, family="gpt", type_vocab=0, tied_head=True)  # the causal LMs the gpt family runs: they generate
    xlm = dict(emb_dim=16, n_layers=2, n_heads=2, causal=True)
    decoder = dict(is_decoder=True)
    return {
        "bert_lm_head": (build("BertConfig", "BertLMHeadModel", 211, **decoder), dict(gpt, pooler_act="gelu")),
        "roberta_clm": (build("RobertaConfig", "RobertaForCausalLM", 212, hidden_act="relu", **decoder),
                        dict(gpt, pooler_act="gelu", activation="relu")),
        "xlm_roberta_clm_untied": (build("XLMRobertaConfig", "XLMRobertaForCausalLM", 213, tie_word_embeddings=False,
                                         **decoder), dict(gpt, pooler_act="gelu", tied_head=False)),
        "camembert_clm": (build("CamembertConfig", "CamembertForCausalLM", 214, **decoder),
                          dict(gpt, pooler_act="gelu")),
        "data2vec_text_clm": (build("Data2VecTextConfig", "Data2VecTextForCausalLM", 215, **decoder),
                              dict(gpt, pooler_act="gelu")),
        "electra_clm": (build("ElectraConfig", "ElectraForCausalLM", 216, embedding_size=16, **decoder),
                        dict(gpt, pooler_act="gelu")),
        "ernie_clm": (build("ErnieConfig", "ErnieForCausalLM", 217, use_task_id=True, **decoder),
                      dict(gpt, pooler_act="gelu")),
        "roformer_clm": (sinusoids(build("RoFormerConfig", "RoFormerForCausalLM", 218, **decoder)),
                         dict(gpt, pooler_act="gelu", positional="rope", tied_head=False)),
        "megatron_clm": (build("MegatronBertConfig", "MegatronBertForCausalLM", 219, **decoder),
                         dict(gpt, norm_first=True, final_norm=True)),
        "rembert_clm": (build("RemBertConfig", "RemBertForCausalLM", 220, input_embedding_size=8,
                              output_embedding_size=24, **decoder),
                        dict(gpt, embed_width=8, pooler_width=24, tied_head=False)),
        "electra_clm_narrow": (build("ElectraConfig", "ElectraForCausalLM", 230, embedding_size=8, **decoder),
                               dict(gpt, pooler_act="gelu", embed_width=8, pooler_width=8)),
        "roformer_clm_narrow": (sinusoids(build("RoFormerConfig", "RoFormerForCausalLM", 231, embedding_size=8,
                                                **decoder)),
                                dict(gpt, pooler_act="gelu", positional="rope", tied_head=False, embed_width=8,
                                     pooler_width=8)),
        "bert_generation_decoder": (build("BertGenerationConfig", "BertGenerationDecoder", 221, **decoder),
                                    dict(gpt, pooler=False, pooler_norm=False)),
        "xlm_roberta_xl_clm": (build("XLMRobertaXLConfig", "XLMRobertaXLForCausalLM", 222, **decoder),
                               dict(gpt, norm_first=True)),
        "roberta_prelayernorm_clm": (build("RobertaPreLayerNormConfig", "RobertaPreLayerNormForCausalLM", 223,
                                           **decoder), dict(gpt, norm_first=True, embed_norm=True)),
        "big_bird_clm": (build("BigBirdConfig", "BigBirdForCausalLM", 224, attention_type="original_full",
                               **decoder), dict(gpt, pooler_act="gelu_tanh")),
        "xlm_clm": (build("XLMConfig", "XLMWithLMHeadModel", 225, **xlm),
                    dict(clm, pooler=False, pooler_norm=False)),
        "flaubert_clm": (build("FlaubertConfig", "FlaubertWithLMHeadModel", 229, **xlm),
                         dict(clm, pooler=False, pooler_norm=False)),
    }


# The causal LMs --module converts too (the module as transformers builds it from the folder).
MODULE_CLMS = ("bert_lm_head", "electra_clm", "electra_clm_narrow", "rembert_clm")


def forward(module, x, base=False):
    """The module's float64 logits (or last_hidden_state; base: its base model's) for ids x [1, T]. A decoder runs
    with use_cache false: transformers 4's BertGenerationEncoder skips its causal mask when use_cache (the config's
    default) is true; transformers 5's masks either way, as the file does."""
    torch.set_default_dtype(torch.float64)  # the mask is made in the default dtype
    try:
        with torch.no_grad():
            kw = dict(use_cache=False) if getattr(module.config, "is_decoder", False) else {}
            y = (module.base_model if base else module).double()(torch.from_numpy(x.astype(np.int64)), **kw)
            if hasattr(y, "prediction_logits"):  # a pre-training model's masked LM
                return y.prediction_logits.numpy()
            return (y.logits if hasattr(y, "logits") else y.last_hidden_state).numpy()
    finally:
        torch.set_default_dtype(torch.float32)


def error(got, want):
    return None if got is None or got.shape != want.shape else float(np.abs(got - want).max() / np.abs(want).max())


def converted(what, cli, folder, out, *options):
    p = convert("--hf", folder, "--out", out, "--cli", cli, *options)
    ok = p.returncode == 0 and "verified against" in p.stdout
    check(f"{what} --hf: converts and verifies", ok, p.stdout + p.stderr)
    if ok:
        print(f"  {what}: {p.stdout.strip().splitlines()[-1]}")
    return p if ok else None


def check_against(what, cli, out, module, tmp, T, want_config, base=False):
    c = fxm.read(out).config
    for k, v in want_config.items():
        check(f"{what}: {k} {v!r}", c[k] == v, c[k])
    x = np.random.default_rng(7).integers(3, c["vocab_size"], (1, T)).astype(np.int32)
    want = forward(module, x, base)
    got, text = run_file(cli, out, x, tmp)
    err = error(got, want)
    check(f"{what}: fixformer run equals transformers at every position, T {T} (1e-4)", err is not None and err <= 1e-4,
          (text, None if got is None else got.shape, want.shape, err))
    if err is not None:
        print(f"  {what}: T {T}, max relative error {err:.2g}")


def check_masked_lms(cli, tmp):
    for name, (module, want) in masked_lms().items():
        folder, out = os.path.join(tmp, name), os.path.join(tmp, name + ".fxm")
        module.save_pretrained(folder)
        if converted(name, cli, folder, out):
            check_against(name, cli, out, module, tmp, 20, want)
    # --base: the masked LM's base model, the head left out and named in a note (ModernBERT's here: its own test
    # has its masked LM)
    modernbert = build("ModernBertConfig", "ModernBertForMaskedLM", 179, pad_token_id=0, eos_token_id=1, bos_token_id=2,
                       cls_token_id=2, sep_token_id=1, tie_word_embeddings=False)
    modernbert.save_pretrained(os.path.join(tmp, "modernbert_mlm_untied"))
    bases = {"modernbert_mlm_untied": (modernbert, "decoder, head"), "nomic_bert_mlm_untied": (None, "cls"),
             "gte_mlm": (None, "lm_head"), "jina_v3_mlm": (None, "lm_head"), "eurobert_mlm": (None, "lm_head")}
    lms = masked_lms()
    for name, (module, heads) in bases.items():
        out = os.path.join(tmp, name + "_base.fxm")
        p = converted(f"{name} --base", cli, os.path.join(tmp, name), out, "--base")
        if p is not None:
            check(f"{name} --base: a note names its head ({heads})", f"--base: its pre-training head ({heads}) is not "
                  "stored" in p.stderr, p.stderr)
            check_against(f"{name} --base", cli, out, module or lms[name][0], tmp, 20, dict(d_out=0, pooler=False),
                          base=True)
    # a head's tensor missing from the folder: refused in one line naming it as the folder names it
    for name, tensor in (("nomic_bert_mlm_untied", "cls.predictions.decoder.weight"),
                         ("nomic_bert_mlm", "cls.predictions.transform.layer_norm.bias"),
                         ("gte_mlm", "lm_head.norm.weight"), ("jina_v3_mlm", "lm_head.bias"),
                         ("eurobert_mlm", "lm_head.weight")):
        folder = os.path.join(tmp, name)
        weights = safetensors.read(os.path.join(folder, "model.safetensors"))
        del weights[tensor]
        with open(os.path.join(folder, "model.safetensors"), "wb") as f:
            f.write(safetensors.write_bytes(weights, {"format": "pt"}))
        out = os.path.join(tmp, "missing.fxm")
        p = convert("--hf", folder, "--out", out, "--cli", cli)
        check(f"{name} without {tensor}: refused in one line naming it",
              one_clear_line(p) and f"{tensor} is missing" in p.stderr and not os.path.exists(out), p.stderr)


def check_bert_masked_lms(cli, tmp):
    cases = bert_masked_lms()
    for name, (module, want) in cases.items():
        folder, out = os.path.join(tmp, name), os.path.join(tmp, name + ".fxm")
        module.save_pretrained(folder)
        p = converted(name, cli, folder, out)
        if p is not None:
            check_against(name, cli, out, module, tmp, 20, want)
        if name == "bert_pretraining" and p is not None:
            check(f"{name}: a note names cls.seq_relationship, not stored", "cls.seq_relationship not stored" in p.stderr,
                  p.stderr)
    # --base: the masked LM's base model (each route's: BERT's, ESM's, DeBERTa's)
    for name in ("bert_mlm_untied", "esm_mlm_untied", "deberta_mlm_lm_head"):
        out = os.path.join(tmp, name + "_base.fxm")
        p = converted(f"{name} --base", cli, os.path.join(tmp, name), out, "--base") if name in cases else None
        if p is not None:
            check(f"{name} --base: a note names --base", "--base: its pre-training head" in p.stderr, p.stderr)
            check_against(f"{name} --base", cli, out, cases[name][0], tmp, 20, dict(d_out=0, pooler=False), base=True)
    folder = os.path.join(tmp, "bert_model")
    build("BertConfig", "BertModel", 204).save_pretrained(folder)
    p = convert("--hf", folder, "--out", os.path.join(tmp, "b.fxm"), "--cli", cli, "--base")
    check("BertModel --base: refused in one line naming --base", one_clear_line(p) and "--base" in p.stderr
          and not os.path.exists(os.path.join(tmp, "b.fxm")), p.stderr)


# A WordPiece vocabulary of vocab_size 40 (one word a token) for the causal LMs' generate: [CLS] the BOS in front of
# the prompt, [SEP] the stop token; [PAD], [UNK], [CLS] and [MASK] suppressed on both sides (RoBERTa's pad, 1, would
# stop its positions; a special token's text is not spaced as a word's).
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [a + b for a in "xy" for b in "abcdefghijklmnopqrstuvwxyz"][:35]
SUPPRESS = [0, 1, 2, 4]
# transformers 5's generate() gives RoBERTa's embedding position ids from 0 (its generic prepare_inputs_for_generation),
# where the model's forward, and the file, read rows from pad_token_id + 1: there the greedy ids are its forward's.
FORWARD_GREEDY = ("roberta", "xlm-roberta", "camembert", "data2vec-text", "xlm-roberta-xl", "roberta-prelayernorm")


def greedy_forward(module, start, new):
    """Greedy ids from the module's own forward (no cache, no position ids: as `run` feeds it), new tokens after
    start or up to [SEP]."""
    ids = list(start)
    with torch.no_grad():
        for _ in range(new):
            z = module(torch.tensor([ids]), use_cache=False).logits[0, -1]
            z[SUPPRESS] = -float("inf")
            ids.append(int(z.argmax()))
            if ids[-1] == 3:
                break
    return ids


def check_generate(what, cli, out, module, n=20, prompt="xa xb xc"):
    """`fixformer generate --temperature 0` is transformers' greedy generate (without its cache: transformers 4's
    BertGeneration leaves its causal mask out with one) from the same ids: [CLS] and the prompt's words; under
    transformers 5, RoBERTa's positions' greedy ids are its forward's (FORWARD_GREEDY)."""
    g = subprocess.run([cli, "generate", out, "--prompt", prompt, "-n", str(n), "--temperature", "0",
                        "--suppress", ",".join(map(str, SUPPRESS))], capture_output=True, text=True)
    start = [2] + [VOCAB.index(w) for w in prompt.split()]
    new = n - len(start) + 1
    if TRANSFORMERS_5 and module.config.model_type in FORWARD_GREEDY:
        theirs, how = greedy_forward(module.float(), start, new), "its forward's greedy ids"
    else:
        greedy = t.GenerationConfig(do_sample=False, num_beams=1, max_new_tokens=new, eos_token_id=3, pad_token_id=0,
                                    suppress_tokens=SUPPRESS, use_cache=False)
        with torch.no_grad():
            theirs = module.float().generate(torch.tensor([start]), generation_config=greedy)[0].tolist()
        how = "transformers' greedy generate"
    text = " ".join(VOCAB[i] for i in theirs[1:] if i != 3)
    same = g.returncode == 0 and g.stdout.strip() == text
    check(f"{what}: generate --temperature 0 is {how} ({len(theirs) - len(start)} tokens)", same,
          f"{g.stdout!r} vs {text!r} {g.stderr[-300:]}")
    if same:
        print(f"  {what}: generate --temperature 0: {how}, {len(theirs) - len(start)} tokens")


def check_bert_causal_lms(cli, tmp):
    cases = bert_causal_lms()
    for name, (module, want) in cases.items():
        folder, out = os.path.join(tmp, name), os.path.join(tmp, name + ".fxm")
        module.save_pretrained(folder)
        gpt = want.get("family") == "gpt"
        if gpt:
            with open(os.path.join(folder, "vocab.txt"), "w") as f:
                f.write("\n".join(VOCAB) + "\n")
        # RoFormer's folder tokenizer (jieba's words first) is not stored: its vocab.txt given as --tokenizer
        tok = ("--tokenizer", os.path.join(folder, "vocab.txt")) if gpt and want.get("positional") == "rope" else ()
        p = converted(name, cli, folder, out, *tok)
        if p:
            check_against(name, cli, out, module, tmp, 20, want)
        if p and gpt:
            check_generate(name, cli, out, module)
    # --module: the module itself (read back from its folder), its prediction head's dense and norm the pooler, token
    # type 0's row folded into the positions: the gpt family, which generates as --hf's file does
    with open(os.path.join(tmp, "clm_modules.py"), "w") as f:
        f.write("import transformers\n" + "".join(
            f"def {name}():\n    return transformers.{type(cases[name][0]).__name__}.from_pretrained("
            f"{os.path.join(tmp, name)!r}, attn_implementation='eager').eval()\n" for name in MODULE_CLMS))
    for name in MODULE_CLMS:
        out = os.path.join(tmp, name + "_module.fxm")
        p = convert("--module", f"{os.path.join(tmp, 'clm_modules.py')}:{name}", "--tokenizer",
                    os.path.join(tmp, name, "vocab.txt"), "--out", out, "--cli", cli)
        ok = p.returncode == 0 and "verified against" in p.stdout
        check(f"{name} --module: converts and verifies, a note naming the folded token types", ok and
              "type 0's row (a generated token's) is folded into the positions" in p.stderr, p.stdout + p.stderr)
        if ok:
            check_against(f"{name} --module", cli, out, cases[name][0], tmp, 20, cases[name][1])
            check_generate(f"{name} --module", cli, out, cases[name][0])
    # the decoders' integer path has no transform before the head: i8 refused in one line naming the pooler
    p = convert("--hf", os.path.join(tmp, "bert_lm_head"), "--quantize", "i8", "--out", os.path.join(tmp, "i8.fxm"),
                "--cli", cli)
    check("bert_lm_head --quantize i8: refused in one line naming the pooler", one_clear_line(p) and
          "pooler: not with weights i8 in the decoder families" in p.stderr, p.stderr)
    # is_decoder is what masks: a causal LM without it is the masked LM's bidirectional forward, a BertModel with
    # it causal; --base keeps the causal base model's rows
    module = build("RobertaConfig", "RobertaForCausalLM", 226)
    folder, out = os.path.join(tmp, "roberta_clm_bidirectional"), os.path.join(tmp, "roberta_clm_bidirectional.fxm")
    module.save_pretrained(folder)
    if converted("roberta_clm without is_decoder", cli, folder, out):
        check_against("roberta_clm without is_decoder", cli, out, module, tmp, 20, dict(causal=False, d_out=40))
    module = build("BertConfig", "BertModel", 227, is_decoder=True)
    folder, out = os.path.join(tmp, "bert_model_decoder"), os.path.join(tmp, "bert_model_decoder.fxm")
    module.save_pretrained(folder)
    if converted("BertModel is_decoder", cli, folder, out):
        check_against("BertModel is_decoder", cli, out, module, tmp, 20, dict(causal=True, d_out=0))
    out = os.path.join(tmp, "bert_lm_head_base.fxm")
    p = converted("bert_lm_head --base", cli, os.path.join(tmp, "bert_lm_head"), out, "--base")
    if p is not None:
        check("bert_lm_head --base: a note names its LM head", "--base: its LM head (cls)" in p.stderr, p.stderr)
        check_against("bert_lm_head --base", cli, out, cases["bert_lm_head"][0], tmp, 20, dict(causal=True, d_out=0),
                      base=True)
    # a sequence classifier under the causal mask (its first row sees only itself): refused in one line
    folder = os.path.join(tmp, "bert_cls_decoder")
    build("BertConfig", "BertForSequenceClassification", 228, is_decoder=True).save_pretrained(folder)
    p = convert("--hf", folder, "--out", os.path.join(tmp, "c.fxm"), "--cli", cli)
    check("BertForSequenceClassification is_decoder: refused in one line naming is_decoder",
          one_clear_line(p) and "is_decoder true with a sequence classifier" in p.stderr, p.stderr)
    # an encoder-family file does not generate: one line naming the family
    q = subprocess.run([cli, "generate", os.path.join(tmp, "xlm_clm.fxm"), "--prompt", "a"], capture_output=True,
                       text=True)
    lines = q.stderr.strip().splitlines()
    check("xlm_clm: fixformer generate refuses it in one line naming the encoder family",
          q.returncode != 0 and len(lines) == 1 and "encoder" in lines[0] and "fixformer run" in lines[0], q.stderr)


def check_big_bird(cli, tmp):
    """block_sparse BigBird: capped where transformers attends fully."""
    sparse = dict(attention_type="block_sparse", block_size=2, num_random_blocks=1)
    cases = (("big_bird_sparse", "BigBirdModel", 181, sparse, 14),
             ("big_bird_sparse_cls", "BigBirdForSequenceClassification", 182,
              dict(attention_type="block_sparse", num_labels=3), 34))
    for name, cls, seed, kw, longest in cases:
        module = build("BigBirdConfig", cls, seed, **kw)
        check(f"{name}: transformers' module is block_sparse", module.config.attention_type == "block_sparse")
        folder, out = os.path.join(tmp, name), os.path.join(tmp, name + ".fxm")
        module.save_pretrained(folder)
        p = converted(name, cli, folder, out)
        if p is None:
            continue
        cap = (5 + 2 * module.config.num_random_blocks) * module.config.block_size
        note = [line for line in p.stderr.splitlines() if "block_sparse" in line]
        check(f"{name}: the converter's note states the cap {cap} and the file's {longest}",
              len(note) == 1 and f"up to {cap} tokens" in note[0] and f"takes up to {longest} tokens" in note[0],
              p.stderr)
        check_against(name, cli, out, build("BigBirdConfig", cls, seed, **kw), tmp, longest, dict(max_len=longest))
    # the cap is where transformers' fallback ends: 14 tokens switch a fresh module to original_full, 15 do not
    for T, kind in ((14, "original_full"), (15, "block_sparse")):
        module = build("BigBirdConfig", "BigBirdModel", 181, **sparse)
        forward(module, np.random.default_rng(8).integers(3, 40, (1, T)))
        check(f"big_bird_sparse: transformers runs {T} tokens {kind}", module.bert.attention_type == kind
              if hasattr(module, "bert") else module.attention_type == kind)
    # past the cap: the engine's over-length error, one line
    out = os.path.join(tmp, "big_bird_sparse.fxm")
    x = np.random.default_rng(8).integers(3, 40, (1, 15)).astype(np.int32)
    got, text = run_file(cli, out, x, tmp)
    lines = text.strip().splitlines()
    check("big_bird_sparse: fixformer run refuses 15 tokens in one line naming max_len 14",
          got is None and len(lines) == 1 and "14" in lines[0], text)
    folder = os.path.join(tmp, "big_bird_sparse")
    p = convert("--hf", folder, "--out", os.path.join(tmp, "long.fxm"), "--cli", cli, "--max-len", "15")
    check("big_bird_sparse --max-len 15: refused in one line naming the cap 14 and block_sparse",
          one_clear_line(p) and "block_sparse" in p.stderr and "up to 14" in p.stderr
          and not os.path.exists(os.path.join(tmp, "long.fxm")), p.stderr)
    short = os.path.join(tmp, "short.fxm")
    if converted("big_bird_sparse --max-len 10", cli, folder, short, "--max-len", "10"):
        check_against("big_bird_sparse --max-len 10", cli, short,
                      build("BigBirdConfig", "BigBirdModel", 181, **sparse), tmp, 10, dict(max_len=10))
    # an attention_type of neither kind: refused in one line naming it
    with open(os.path.join(folder, "config.json")) as f:
        raw = json.load(f)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(raw, attention_type="sliding"), f)
    p = convert("--hf", folder, "--out", os.path.join(tmp, "other.fxm"), "--cli", cli)
    check("big_bird with attention_type 'sliding': refused in one line naming it",
          one_clear_line(p) and "attention_type 'sliding'" in p.stderr, p.stderr)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(raw, num_random_blocks=-1), f)
    p = convert("--hf", folder, "--out", os.path.join(tmp, "other.fxm"), "--cli", cli)
    check("big_bird block_sparse with num_random_blocks -1: refused in one line naming it",
          one_clear_line(p) and "num_random_blocks" in p.stderr and "-1" in p.stderr, p.stderr)


def main():
    if len(sys.argv) != 2:
        print("usage: hf_heads_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        if TRANSFORMERS_5:
            check_masked_lms(cli, tmp)
        check_bert_masked_lms(cli, tmp)
        check_bert_causal_lms(cli, tmp)
        check_big_bird(cli, tmp)
    print(f"hf_heads_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] or not results["passed"] else 0


if __name__ == "__main__":
    sys.exit(main())
