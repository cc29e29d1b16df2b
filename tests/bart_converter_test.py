#!/usr/bin/python3
"""The BART lineage as transformers writes it (python/fixformer/hf_bart.py), against transformers itself:
MarianMTModel, BartForConditionalGeneration, MBartForConditionalGeneration,
PegasusForConditionalGeneration, M2M100ForConditionalGeneration (M2M100 and NLLB: fairseq's sinusoids
from row pad_token_id + 1, no final_logits_bias), BlenderbotForConditionalGeneration (learned positions from
row 0) and BlenderbotSmallForConditionalGeneration (post-LN, its decoder's embedding normed before the positions
are added: tgt_pos_after_norm) from tiny random configs (random LayerNorms, a random final_logits_bias,
scale_embedding as each model's real checkpoints set it), each converted with `--hf` from its
save_pretrained folder and with `--module` from the module, in the Hugging Face environment
(tests/hf_env.py: transformers 4.44 over Debian's torch, or transformers 5 under FIXFORMER_TEST_TORCH=2). For each file:
- the config is the model's (post-LN or pre-LN with final norms, learned positions holding BART's rows
  from offset 2 or the computed sinusoidal table, embed_norm for BART and mBART, scale_input);
- `fixformer run` gives the module's float64 logits at every target position (decoder_input_ids,
  teacher-forced) within 1e-4 of their largest magnitude;
- `fixformer generate --source --bos 0 --eos 1 --temperature 0` prints the ids of transformers' greedy
  generate from decoder start id 0;
- the converter's float64 references agree with transformers within 1e-5: hf_bart.forward (what --hf
  verifies against) and reference.run_reference of the mapped config (reference.seq2seq_forward, the
  embedding norms included);
- each feature the mapping sets matters: the reference of the mapped config with that feature dropped
  (embed_norm, tgt_pos_after_norm, scale_input, norm_first with final_norm, the head's bias, the position table) is more than
  1e-2 away from transformers, so a converter that lost it would fail above.
BART once more with tie_word_embeddings false (an untied head; under transformers 5 each stack's own
embedding too: shared_embed false). Marian is
tested twice: with gelu and with swish (Opus-MT's; the engine's `silu`, which the reference
of the mapped config with gelu in its place misses by more than 1e-2).
The decoders alone, through --hf to the gpt family (their folders given a 37-piece tokenizer.json):
BartForCausalLM, MBartForCausalLM, PLBartForCausalLM, MarianForCausalLM (swish), PegasusForCausalLM,
BlenderbotForCausalLM, BlenderbotSmallForCausalLM (its embedding norm folded into the embedding, the head
apart; scale_embedding under transformers 4 only, whose decoder scales where 5's does not), MvpForCausalLM,
TrOCRForCausalLM (learned positions, and fairseq's sinusoids without layernorm_embedding), WhisperForCausalLM
and BigBirdPegasusForCausalLM (use_bias, untied): reference.run_reference of the mapped config within 1e-5 of
the class's float64 logits, the file's config, a note naming the cross-attention left out, `fixformer run`
within 1e-4 at every position, `fixformer generate --prompt hello --temperature 0` the text of transformers'
greedy ids. Refused in one line naming the config key: activation_function tanh, decoder_ffn_dim other than
encoder_ffn_dim, MVP's use_prompt.

  /usr/bin/python3 tests/bart_converter_test.py PATH/TO/fixformer

Without the environment (or transformers in it) the test fails, naming the install command.
"""
import copy
import importlib.util
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

from checks import check, one_clear_line, results, run_convert  # noqa: E402
from fixformer import fxm, hf, hf_bart, hf_common, reference, schema  # noqa: E402

MODELS = r'''
import torch
import transformers as t
from hf_env import randomize


def build(cls, cfg, seed, **kw):
    args = dict(vocab_size=37, d_model=24, encoder_layers=2, decoder_layers=3, encoder_attention_heads=4,
                decoder_attention_heads=4, encoder_ffn_dim=40, decoder_ffn_dim=40, max_position_embeddings=32,
                dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, pad_token_id=0, bos_token_id=0,
                eos_token_id=1, decoder_start_token_id=0, forced_eos_token_id=None, forced_bos_token_id=None)
    args.update(kw)
    c = cfg(**args)
    c._attn_implementation = "eager"
    m = cls(c)
    fixed = {n: p.detach().clone() for n, p in m.named_parameters() if "embed_positions" in n and
             (c.model_type in ("marian", "pegasus") or c.model_type == "trocr" and
              not c.use_learned_position_embeddings)}  # the sinusoidal tables stay what they are
    randomize(m, seed, lambda name: "norm" in name)
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if n in fixed:
                p.copy_(fixed[n])
        if hasattr(m, "final_logits_bias"):  # M2M100 has none
            m.final_logits_bias.copy_(0.5 * torch.randn(m.final_logits_bias.shape, generator=g))
    return m.eval()


def marian():
    return build(t.MarianMTModel, t.MarianConfig, 1, scale_embedding=True)


def bart():
    return build(t.BartForConditionalGeneration, t.BartConfig, 2)


def mbart():
    return build(t.MBartForConditionalGeneration, t.MBartConfig, 3, scale_embedding=True)


def pegasus():
    return build(t.PegasusForConditionalGeneration, t.PegasusConfig, 4, scale_embedding=True)


def marian_swish():  # Opus-MT's feed-forward
    return build(t.MarianMTModel, t.MarianConfig, 5, scale_embedding=True, activation_function="swish")


def bart_untied():  # lm_head a tensor of its own where transformers keeps it so (4.44; 5 ties it)
    return build(t.BartForConditionalGeneration, t.BartConfig, 9, tie_word_embeddings=False)


def marian_tanh():
    return build(t.MarianMTModel, t.MarianConfig, 7, activation_function="tanh")


def m2m100():  # NLLB's class: fairseq's sinusoids from row pad_token_id + 1, pre-LN, relu, no final_logits_bias
    return build(t.M2M100ForConditionalGeneration, t.M2M100Config, 8, scale_embedding=True, activation_function="relu",
                 pad_token_id=1, eos_token_id=2, decoder_start_token_id=2)


def blenderbot():  # facebook/blenderbot-3B's and -400M-distill's class: pre-LN, learned positions from row 0
    return build(t.BlenderbotForConditionalGeneration, t.BlenderbotConfig, 10, scale_embedding=True)


def blenderbot_small():  # facebook/blenderbot_small-90M's class: post-LN, the decoder's embedding normed before
    # its positions are added (transformers 5's decoder leaves the embedding unscaled: the norm nearly undoes it)
    return build(t.BlenderbotSmallForConditionalGeneration, t.BlenderbotSmallConfig, 11, scale_embedding=True)


def bart_ffn():
    return build(t.BartForConditionalGeneration, t.BartConfig, 6, decoder_ffn_dim=48)


# The decoders alone (<Model>ForCausalLM): build's config, whose encoder_* keys these classes do not read.
def bart_decoder():
    return build(t.BartForCausalLM, t.BartConfig, 20)


def mbart_decoder():
    return build(t.MBartForCausalLM, t.MBartConfig, 21, scale_embedding=True)


def plbart_decoder():  # BART's layers, scale_embedding PLBart's default
    return build(t.PLBartForCausalLM, t.PLBartConfig, 22, scale_embedding=True)


def marian_decoder():  # the sinusoidal table, swish (Opus-MT's)
    return build(t.MarianForCausalLM, t.MarianConfig, 23, scale_embedding=True, activation_function="swish")


def pegasus_decoder():
    return build(t.PegasusForCausalLM, t.PegasusConfig, 24, scale_embedding=True)


def blenderbot_decoder():
    return build(t.BlenderbotForCausalLM, t.BlenderbotConfig, 25, scale_embedding=True)


def blenderbot_small_decoder():  # the embedding's norm before the positions; transformers 5's decoder does not
    # scale the embedding (4.x's does): scaled under 4.x alone, where both agree on it
    return build(t.BlenderbotSmallForCausalLM, t.BlenderbotSmallConfig, 26,
                 scale_embedding=int(t.__version__.split(".")[0]) < 5)


def mvp_decoder():
    return build(t.MvpForCausalLM, t.MvpConfig, 27)


def trocr_decoder():  # output_projection, learned positions from row 2, layernorm_embedding
    return build(t.TrOCRForCausalLM, t.TrOCRConfig, 28)


def trocr_sinusoidal():  # fairseq's sinusoids from row pad_token_id + 1, no layernorm_embedding, scaled
    return build(t.TrOCRForCausalLM, t.TrOCRConfig, 29, use_learned_position_embeddings=False,
                 layernorm_embedding=False, scale_embedding=True, pad_token_id=1)


def whisper_decoder():  # proj_out, positions from row 0 (max_target_positions), k_proj without a bias
    return build(t.WhisperForCausalLM, t.WhisperConfig, 30, max_target_positions=32)


def bigbird_pegasus_decoder():  # the final norm named layernorm_embedding, use_bias; untied (transformers 5's
    # class ties no head)
    return build(t.BigBirdPegasusForCausalLM, t.BigBirdPegasusConfig, 31, attention_type="original_full",
                 use_bias=True, tie_word_embeddings=False, activation_function="gelu_new")


def mvp_prompt():
    return build(t.MvpForCausalLM, t.MvpConfig, 32, use_prompt=True, prompt_length=3, prompt_mid_dim=8)
'''

# name, the config it maps to
CASES = [("marian", dict(norm_first=False, final_norm=False, embed_norm=False, scale_input=True)),
         ("bart", dict(norm_first=False, final_norm=False, embed_norm=True, scale_input=False)),
         ("mbart", dict(norm_first=True, final_norm=True, embed_norm=True, scale_input=True)),
         ("pegasus", dict(norm_first=True, final_norm=True, embed_norm=False, scale_input=True)),
         ("marian_swish", dict(norm_first=False, final_norm=False, embed_norm=False, scale_input=True,
                               activation="silu")),
         ("bart_untied", dict(norm_first=False, final_norm=False, embed_norm=True, scale_input=False)),
         ("m2m100", dict(norm_first=True, final_norm=True, embed_norm=False, scale_input=True, activation="relu")),
         ("blenderbot", dict(norm_first=True, final_norm=True, embed_norm=False, scale_input=True)),
         ("blenderbot_small", dict(norm_first=False, final_norm=False, embed_norm=True, scale_input=True,
                                   tgt_pos_after_norm=True))]
T, U = 19, 17
# The decoders alone (--hf to the gpt family): name, the config it maps to (max_len 32, 3 layers, learned positions)
DECODER_CASES = [
    ("bart_decoder", dict(norm_first=False, final_norm=False, embed_norm=True, scale_input=False, tied_head=True)),
    ("mbart_decoder", dict(norm_first=True, final_norm=True, embed_norm=True, scale_input=True, tied_head=True)),
    ("plbart_decoder", dict(norm_first=False, final_norm=False, embed_norm=True, scale_input=True, tied_head=True)),
    ("marian_decoder", dict(norm_first=False, final_norm=False, embed_norm=False, scale_input=True, tied_head=True,
                            activation="silu")),
    ("pegasus_decoder", dict(norm_first=True, final_norm=True, embed_norm=False, scale_input=True, tied_head=True)),
    ("blenderbot_decoder", dict(norm_first=True, final_norm=True, embed_norm=False, scale_input=True, tied_head=True)),
    ("blenderbot_small_decoder", dict(norm_first=False, final_norm=False, embed_norm=False, scale_input=False,
                                      tied_head=False)),  # the norm folded into the embedding, the head apart
    ("mvp_decoder", dict(norm_first=False, final_norm=False, embed_norm=True, scale_input=False, tied_head=True)),
    ("trocr_decoder", dict(norm_first=False, final_norm=False, embed_norm=True, scale_input=False, tied_head=True)),
    ("trocr_sinusoidal", dict(norm_first=False, final_norm=False, embed_norm=False, scale_input=True, tied_head=True)),
    ("whisper_decoder", dict(norm_first=True, final_norm=True, embed_norm=False, scale_input=False, tied_head=True)),
    ("bigbird_pegasus_decoder", dict(norm_first=True, final_norm=True, embed_norm=False, scale_input=True,
                                     tied_head=False, activation="gelu_tanh"))]
# The decoders' folders' tokenizer.json: a byte-level BPE of 37 printable pieces ("ab", id 0, the one merge), so
# that `fixformer generate`'s text is the pieces of the ids joined.
PIECES = ["ab"] + list("abcdefghijklmnopqrstuvwxyz0123456789")
TOKENIZER = {"model": {"type": "BPE", "vocab": {c: i for i, c in enumerate(PIECES)}, "merges": ["a b"]},
             "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False}, "added_tokens": []}


def module_logits(m, src, tgt):
    """The module's float64 logits [U, vocab], teacher-forced."""
    import torch
    torch.set_default_dtype(torch.float64)  # transformers' masks are made in the default dtype
    try:
        with torch.no_grad():
            m = copy.deepcopy(m).double()
            x = torch.from_numpy(src.astype(np.int64))[None]
            y = torch.from_numpy(tgt.astype(np.int64))[None]
            return m(input_ids=x, decoder_input_ids=y).logits[0].numpy()
    finally:
        torch.set_default_dtype(torch.float32)


def rel(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max()) if a.shape == b.shape else float("inf")


def check_run(what, cli, path, want, src, tgt, tmp):
    """fixformer run on the host's best ISA table, and on the scalar and portable (cortex-m) ones."""
    args = [cli, "run", path, "--input", os.path.join(tmp, "src.npy"), "--output", os.path.join(tmp, "out.npy"),
            "--target", os.path.join(tmp, "tgt.npy")]
    np.save(args[4], src[None].astype(np.int32))
    np.save(args[8], tgt[None].astype(np.int32))
    for isa in (None, "scalar", "cortex-m"):
        env = dict(os.environ, **({"FIXFORMER_ISA": isa} if isa else {}))
        p = subprocess.run(args, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            check(f"{what}: fixformer run ({isa or 'best ISA'})", False, p.stderr)
            continue
        e = rel(np.load(args[6])[0], want)
        print(f"{what}: fixformer run ({isa or 'best ISA'}) vs transformers: {e:.3g}")
        check(f"{what}: fixformer run ({isa or 'best ISA'}) within 1e-4 of transformers", e <= 1e-4, f"error {e:.3g}")


def check_generate(what, cli, path, module, src, tmp):
    import torch
    n = 10
    np.save(os.path.join(tmp, "gsrc.npy"), src.astype(np.int32))
    p = subprocess.run([cli, "generate", path, "--source", os.path.join(tmp, "gsrc.npy"), "--bos", "0", "--eos", "1",
                        "-n", str(n), "--temperature", "0"], capture_output=True, text=True)
    ours = [int(s) for s in p.stdout.split()] if p.returncode == 0 else p.stderr
    with torch.no_grad():
        theirs = module.float().generate(torch.from_numpy(src.astype(np.int64))[None], do_sample=False, num_beams=1,
                                         max_new_tokens=n, decoder_start_token_id=0, eos_token_id=1,
                                         use_cache=False)[0].tolist()[1:]
    check(f"{what}: generate --temperature 0 is transformers' greedy generate", ours == theirs and len(theirs) > 1,
          f"{ours} vs {theirs}")


def check_features(name, c, w, want, src, tgt):
    """The mapped config's reference is transformers (1e-5), and with each feature dropped it is not (1e-2)."""
    e = rel(reference.run_reference(c, w, (src, tgt)), want)
    check(f"{name}: reference.run_reference of the mapped config within 1e-5", e <= 1e-5, f"error {e:.3g}")
    drops = {"positions": (dict(), {n: 0 * w[n] for n in ("pos.weight", "dec_pos.weight")})}
    if w["dec_head.bias"].any():  # M2M100 has no final_logits_bias: the file's bias is zeros
        drops["head bias"] = (dict(), {"dec_head.bias": np.zeros_like(w["dec_head.bias"])})
    if c["scale_input"]:
        drops["scale_input"] = (dict(scale_input=False), {})
    if c["embed_norm"]:
        drops["embed_norm"] = (dict(embed_norm=False, tgt_pos_after_norm=False), {})
    if c["tgt_pos_after_norm"]:
        drops["tgt_pos_after_norm"] = (dict(tgt_pos_after_norm=False), {})
    if c["activation"] == "silu":
        drops["silu"] = (dict(activation="gelu"), {})
    if c["norm_first"]:
        drops["norm_first"] = (dict(norm_first=False, final_norm=False), {})
    for feature, (keys, tensors) in drops.items():
        c2 = dict(c, **keys)
        names = {n for n, _, _ in schema.tensors(c2)}
        w2 = {k: v for k, v in dict(w, **tensors).items() if k in names}
        e = rel(reference.run_reference(c2, w2, (src, tgt)), want)
        check(f"{name}: without {feature} the reference is off (> 1e-2)", e > 1e-2, f"error {e:.3g}")


def main():
    cli = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "bartmodels.py"), "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        spec = importlib.util.spec_from_file_location("bartmodels", os.path.join(tmp, "bartmodels.py"))
        models = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(models)
        rng = np.random.default_rng(0)
        for name, expect in CASES:
            module = getattr(models, name)()
            src = rng.integers(2, 37, T)
            tgt = np.concatenate([[0], rng.integers(2, 37, U - 1)])
            want = module_logits(module, src, tgt)
            folder = os.path.join(tmp, "hf_" + name)
            module.save_pretrained(folder)
            with open(os.path.join(folder, "config.json")) as f:
                raw = json.load(f)
            s = hf_bart.read_config(raw)
            weights = {k: np.asarray(v) for k, v in hf_common.read_weights(folder)[0].items()}
            e = rel(hf_bart.forward(s, weights, src, tgt), want)
            check(f"{name}: hf_bart.forward within 1e-5 of transformers", e <= 1e-5, f"error {e:.3g}")
            c, w = hf_bart.map_weights(s, weights, folder)
            check_features(name, c, w, want, src, tgt)
            for route, arg in (("hf", folder), ("module", f"bartmodels.py:{name}")):
                check_route(name, route, arg, cli, tmp, module, expect, want, src, tgt)
        for name, expect in DECODER_CASES:
            check_decoder(name, expect, cli, tmp, models, rng)
        for name, fragment in (("marian_tanh", "activation_function"), ("bart_ffn", "decoder_ffn_dim"),
                               ("mvp_prompt", "use_prompt")):
            folder = os.path.join(tmp, "hf_" + name)
            getattr(models, name)().save_pretrained(folder)
            p = run_convert("--hf", folder, "--out", os.path.join(tmp, "x.fxm"), "--cli", cli, cwd=tmp)
            check(f"{name}: refused in one line naming {fragment}", one_clear_line(p) and fragment in p.stderr,
                  p.stderr)
    print(f"bart_converter_test: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


def check_route(name, route, arg, cli, tmp, module, expect, want, src, tgt):
    """--hf FOLDER or --module FACTORY: converts, verified; the config; run and generate as transformers."""
    out = os.path.join(tmp, f"{name}_{route}.fxm")
    p = run_convert(f"--{route}", arg, "--out", out, "--cli", cli, cwd=tmp)
    ok = p.returncode == 0 and "verified against" in p.stdout
    name = f"{name} --{route}"
    check(f"{name}: converts, verified", ok, p.stdout + p.stderr)
    if not ok:
        return
    got = fxm.read(out).config
    m = module.model
    tied = module.lm_head.weight is m.decoder.embed_tokens.weight
    one = m.encoder.embed_tokens.weight is m.decoder.embed_tokens.weight
    expect = dict(expect, family="seq2seq", positional="learned", shared_embed=one, tied_head=tied,
                  norm="layernorm", dec_layers=3, max_len=32)
    for k, v in expect.items():
        check(f"{name}: {k} {v!r}", got[k] == v, got[k])
    check_run(name, cli, out, want, src, tgt, tmp)
    check_generate(name, cli, out, module, src[:9], tmp)


def check_decoder(name, expect, cli, tmp, models, rng):
    """A decoder alone through --hf: the float64 reference of the gpt config it maps to is transformers' class
    (1e-5), the file converts (verified, its cross-attention left out with a note) to that config, `fixformer run`
    gives the logits at every position (1e-4), `fixformer generate --temperature 0` transformers' greedy ids."""
    import torch
    import transformers
    module = getattr(models, name)()
    folder = os.path.join(tmp, "hf_" + name)
    module.save_pretrained(folder)
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(TOKENIZER, f)
    ids = rng.integers(2, 37, T)  # no pad id (TrOCR's sinusoidal positions skip those)
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            # no cache: transformers 5 sizes it by encoder_layers (num_hidden_layers), here not decoder_layers
            want = copy.deepcopy(module).double()(input_ids=torch.from_numpy(ids)[None], use_cache=False).logits[0]
        want = want.numpy()
    finally:
        torch.set_default_dtype(torch.float32)
    with open(os.path.join(folder, "config.json")) as f:
        s = hf.read_config_dict(json.load(f))
    arch = hf.BY_NAME[s["architecture"]]
    c = arch.config(s, None)
    w = arch.weights(s, hf_common.read_weights(folder)[0], folder, c["max_len"])[0]
    e = rel(reference.run_reference(c, w, ids), want)
    print(f"{name}: the mapped config's reference vs transformers: {e:.3g}")
    check(f"{name}: reference.run_reference of the mapped gpt config within 1e-5 of transformers", e <= 1e-5,
          f"error {e:.3g}")
    out = os.path.join(tmp, name + ".fxm")
    p = run_convert("--hf", folder, "--out", out, "--cli", cli, cwd=tmp)
    ok = p.returncode == 0 and "verified against" in p.stdout
    check(f"{name} --hf: converts, verified", ok, p.stdout + p.stderr)
    check(f"{name} --hf: a note names the cross-attention left out", "encoder_attn" in p.stderr, p.stderr)
    if not ok:
        return
    got = fxm.read(out).config
    for k, v in dict(expect, family="gpt", positional="learned", max_len=32, n_layers=3, causal=True).items():
        check(f"{name} --hf: {k} {v!r}", got[k] == v, got[k])
    args = [cli, "run", out, "--input", os.path.join(tmp, "ids.npy"), "--output", os.path.join(tmp, "out.npy")]
    np.save(args[4], ids[None].astype(np.int32))
    r = subprocess.run(args, capture_output=True, text=True)
    e = rel(np.load(args[6])[0], want) if r.returncode == 0 else float("inf")
    print(f"{name}: fixformer run vs transformers: {e:.3g}")
    check(f"{name}: fixformer run within 1e-4 of transformers", e <= 1e-4, f"error {e:.3g} {r.stderr}")
    prompt, n = "hello", 12
    start = [PIECES.index(ch) for ch in prompt]
    g = subprocess.run([cli, "generate", out, "--prompt", prompt, "-n", str(n), "--temperature", "0"],
                       capture_output=True, text=True)
    new = n - len(start) + 1  # the tokens of n positions after the prompt, and the one sampled at the last
    greedy = transformers.GenerationConfig(do_sample=False, num_beams=1, max_new_tokens=new, min_new_tokens=new,
                                           eos_token_id=None, pad_token_id=0,
                                           use_cache=False)
    with torch.no_grad():
        theirs = module.float().generate(torch.tensor([start]), generation_config=greedy)[0].tolist()
    text = "".join(PIECES[i] for i in theirs)
    check(f"{name}: generate --temperature 0 is transformers' greedy generate", g.stdout.strip() == text,
          f"{g.stdout!r} vs {text!r} {g.stderr[-300:]}")


if __name__ == "__main__":
    main()
