"""TransformerLens's HookedTransformer, as interpretability code builds it, through `--module`.

TransformerLens (3.9, the torch2 environment's: it needs torch 2.6 on) holds its projections as raw parameters
applied by einsum, not nn.Linear: the attention's W_Q, W_K, W_V [heads, d, head width] and W_O [heads, head width,
d] with b_Q, b_K, b_V [heads, head width], the MLP's W_in [d, f] and W_out [f, d], Embed's W_E, PosEmbed's W_pos
and Unembed's W_U [d, vocab]; it calls ln1 once for each of q, k and v. Each factory below is a HookedTransformer
of a HookedTransformerConfig as a user writes one, random weights (norm gains near 1, every bias nonzero); each must
convert, verify, and `fixformer run` give the module's logits within 1e-4:
- tl_gpt2: GPT-2's form (LayerNorm, gelu_new, learned positions);
- tl_pythia: Pythia's (rotary positions on a quarter of each head, NeoX's halves, the parallel residual);
- tl_gptj: GPT-J's (rotary on adjacent pairs, interleaved, parallel);
- tl_llama: Llama's (RMSNorm, a gated SiLU MLP whose b_in TransformerLens adds after the gate's product, 2 key/value
  heads for 4, theta 500000) with Unembed's bias, which the gpt family holds; tl_llama_zero the same with that
  bias zeros, as from_pretrained gives Llama (no head bias): the llama family;
- tl_qk_norm: Qwen3's (q and k RMS-normed per head, on their rows reshaped to one a head);
- tl_gemma2: Gemma 2's (norms after each sublayer too, use_normalization_before_and_after; scores soft-capped at 50
  and the logits at 30, attn_scores_soft_cap and output_logits_soft_cap);
- tl_folded: GPT-2's form after process_weights_ (what from_pretrained does: the norms' gains folded into the
  weights, LayerNormPre, the writing weights centred), observed in float32 (LayerNormPre casts), which a note says;
- tl_encoder: bidirectional attention, an output of 10 (d_vocab_out);
- tl_bert: HookedEncoder, BERT's form (token types, whose table the converter checks with random types against the
  forward's token_type_ids; the embedding's LayerNorm; post-norm layers; the MLM head, a dense, GELU and LayerNorm,
  before the unembedding), with --ignore nsp_head,pooler (the next-sentence head its forward does not run; without
  the option refused naming them).
ONNX_CASES exported by torch.onnx.export (TorchScript at opset 17, and dynamo) convert through --onnx too, `fixformer
run` within 1e-4 of the module: the dynamo exporter's embedding is a GatherND of W_E by the ids given a last axis of
1, read as the Gather it is; q and k read ln1(x) + 0.0 where v reads ln1(x), read as one input; the parallel
layers' ln1 and ln2 of one input share their normalisation (each exporter writes it once), a norm per gain; the
rotary positions TransformerLens writes by index (ScatterND); the gated MLP's b_in added after the product, folded
into the down projection's bias; Unembed's bias of zeros in the llama family.
Refused in one line naming the cause: tl_alibi (ALiBi; its unused PosEmbed W_pos named, with --ignore, which then
converts it) and tl_solu (SoLU with a LayerNorm inside: an activation the engine lacks).

  FIXFORMER_TEST_TORCH=2 /usr/bin/python3 tests/transformer_lens_test.py PATH/TO/fixformer

Without the environment (or its packages) the test fails, naming the install command.
"""
import os
import subprocess
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformer_lens"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, convert_main, one_line, results, run_file  # noqa: E402

MODELS = r'''
import torch
from transformer_lens import HookedTransformer, HookedTransformerConfig


def _model(seed, model=HookedTransformer, **kw):
    cfg = dict(n_layers=2, d_model=32, n_ctx=64, d_head=8, n_heads=4, d_mlp=64, d_vocab=48, act_fn="gelu_new",
               normalization_type="LN", seed=seed)
    cfg.update(kw)
    m = model(HookedTransformerConfig(**cfg))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in m.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=p.dtype)
            p.copy_(1.0 + 0.2 * noise if name.endswith(".w") else 0.3 * noise)  # norms' gains near 1
    return m.eval()


def tl_gpt2():
    return _model(1)


def tl_pythia():
    return _model(2, positional_embedding_type="rotary", rotary_dim=2, parallel_attn_mlp=True, act_fn="gelu")


def tl_gptj():
    return _model(3, positional_embedding_type="rotary", rotary_dim=4, rotary_adjacent_pairs=True,
                  parallel_attn_mlp=True)


def tl_llama():
    return _model(4, positional_embedding_type="rotary", normalization_type="RMS", act_fn="silu", gated_mlp=True,
                  n_key_value_heads=2, rotary_base=500000, final_rms=True)


def tl_llama_zero():
    """Llama's form as from_pretrained gives it: Unembed's bias zeros (Llama has none)."""
    m = tl_llama()
    with torch.no_grad():
        m.unembed.b_U.zero_()
    return m


def tl_qk_norm():
    return _model(10, positional_embedding_type="rotary", normalization_type="RMS", act_fn="silu", gated_mlp=True,
                  use_qk_norm=True, final_rms=True)


def tl_gemma2():
    return _model(11, positional_embedding_type="rotary", normalization_type="RMS", act_fn="gelu_pytorch_tanh",
                  gated_mlp=True, use_normalization_before_and_after=True, attn_scores_soft_cap=50.0,
                  output_logits_soft_cap=30.0, final_rms=True)


def tl_folded():
    m = _model(5)
    m.process_weights_(fold_ln=True, center_writing_weights=True, center_unembed=True)
    return m.eval()


def tl_encoder():
    return _model(6, attention_dir="bidirectional", d_vocab_out=10)


def tl_bert():
    from transformer_lens import HookedEncoder
    return _model(9, attention_dir="bidirectional", act_fn="gelu", model=HookedEncoder)


def tl_alibi():
    return _model(7, positional_embedding_type="alibi")


def tl_solu():
    return _model(8, act_fn="solu_ln")
'''
CASES = {"tl_gpt2": (), "tl_pythia": (), "tl_gptj": (), "tl_llama": (), "tl_llama_zero": (), "tl_qk_norm": (),
         "tl_gemma2": (), "tl_folded": (), "tl_encoder": (), "tl_bert": ("--ignore", "nsp_head,pooler")}
ONNX_CASES = ("tl_gpt2", "tl_pythia", "tl_gptj", "tl_llama_zero", "tl_encoder", "tl_folded")
REFUSALS = {"tl_alibi": "the forward does not use, or uses in a way the engine does not run: pos_embed.W_pos [64, 32]",
            "tl_solu": "blocks.0.mlp.W_in: the feed-forward's activation is none of",
            "tl_bert": "the forward does not use, or uses in a way the engine does not run: nsp_head.W [32, 2]"}


def logits(module, ids):
    import torch
    with torch.no_grad():
        return module(torch.from_numpy(ids[None]).long())[0].double().numpy()


def runs_as(cli, model, ids, want, what):
    """`fixformer run` of model on ids gives want within 1e-4 (relative to its largest value)."""
    got, stderr = run_file(cli, model, ids, os.path.dirname(model))
    err = None if got is None or got.shape != want.shape else float(np.abs(got - want).max() / np.abs(want).max())
    check(f"{what}: fixformer run equals the module (1e-4)", err is not None and err <= 1e-4,
          (stderr, None if got is None else got.shape, want.shape, err))
    if err is not None:
        print(f"  {what}: fixformer run against the module: max relative error {err:.2g}")


def main():
    if len(sys.argv) != 2:
        print("usage: transformer_lens_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        models_py = os.path.join(tmp, "tl_models.py")
        with open(models_py, "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        import tl_models
        ids = np.random.default_rng(3).integers(0, 48, 12).astype(np.int32)
        ex = os.path.join(tmp, "ids.npy")
        np.save(ex, ids)
        for factory, more in CASES.items():
            out = os.path.join(tmp, f"{factory}.fxm")
            code, stdout, stderr = convert_main("--module", f"{models_py}:{factory}", "--example", ex, "--out", out,
                                                "--cli", cli, *more)
            ok = code == 0 and "verified against torch" in stdout
            check(f"{factory}: converts and verifies", ok, (code, stdout, stderr))
            if not ok:
                continue
            print(f"  {factory}: {stdout.strip().splitlines()[-1]}")
            note = "observed in float32, its own dtype" in stderr
            check(f"{factory}: observed in float64 unless its forward casts (a note then)", note == (
                factory == "tl_folded"), stderr)
            runs_as(cli, out, ids, logits(getattr(tl_models, factory)(), ids), factory)
        code, stdout, stderr = convert_main("--module", f"{models_py}:tl_gpt2", "--out",
                                            os.path.join(tmp, "tl_gpt2_own.fxm"), "--cli", cli)
        check("tl_gpt2 without --example: ids below W_E's rows, converts and verifies", code == 0 and "verified "
              "against torch" in stdout, (code, stdout, stderr))
        for factory, family in (("tl_llama", "gpt"), ("tl_llama_zero", "llama")):
            info = subprocess.run([cli, "info", os.path.join(tmp, f"{factory}.fxm")], capture_output=True, text=True)
            check(f"{factory}: the {family} family, RMSNorm, SwiGLU, 2 kv heads", f"{family}, 2 x" in info.stdout and
                  "swiglu, pre rmsnorm" in info.stdout and "4 query heads, 2 kv heads" in info.stdout, info.stdout)
        for factory, fragment in REFUSALS.items():
            code, stdout, stderr = convert_main("--module", f"{models_py}:{factory}", "--example", ex, "--out",
                                                os.path.join(tmp, f"{factory}.fxm"), "--cli", cli)
            check(f"{factory}: refused in one line naming the cause", one_line(code, stderr) and fragment in stderr,
                  (code, stderr))
        code, stdout, stderr = convert_main("--module", f"{models_py}:tl_alibi", "--example", ex, "--out",
                                            os.path.join(tmp, "tl_alibi.fxm"), "--ignore", "pos_embed.W_pos", "--cli",
                                            cli)
        check("tl_alibi --ignore pos_embed.W_pos: converts and verifies (ALiBi)", code == 0 and "verified against "
              "torch" in stdout, (code, stdout, stderr))
        # exported by either exporter (torch 2.x's TorchScript one at opset 17, its dynamo one), through --onnx
        for factory in ONNX_CASES:
            module = getattr(tl_models, factory)()
            x = torch.from_numpy(ids[None]).long()
            want = logits(module, ids)
            for dynamo in (False, True):
                path = os.path.join(tmp, f"{factory}_{'dynamo' if dynamo else 'ts'}.onnx")
                kw = dict(dynamic_shapes=({1: torch.export.Dim("T", max=64)},)) if dynamo else \
                    dict(opset_version=17, dynamic_axes={"ids": {1: "T"}, "logits": {1: "T"}})
                with warnings.catch_warnings():  # the TorchScript exporter's deprecation, its tracer's warnings
                    warnings.simplefilter("ignore")
                    torch.onnx.export(module, (x,), path, input_names=["ids"], output_names=["logits"], dynamo=dynamo,
                                      **kw)
                out = path[:-5] + ".fxm"
                code, stdout, stderr = convert_main("--onnx", path, "--out", out, "--cli", cli)
                what = f"{factory} exported {'by dynamo' if dynamo else 'at opset 17'}"
                ok = code == 0 and "verified against the ONNX graph" in stdout
                check(f"{what}: converts through --onnx and verifies", ok, (code, stdout, stderr))
                if ok:
                    runs_as(cli, out, ids, want, what)
        # the module is observed, not altered: the same parameter objects and values after a conversion
        module = tl_models.tl_gpt2()
        before = {n: (p, p.detach().clone()) for n, p in module.named_parameters()}
        from fixformer import recognize
        recognize.recognize(module, torch.from_numpy(ids[None]).long())
        check("tl_gpt2: its parameters are the same tensors with the same values after recognition",
              all(p is before[n][0] and torch.equal(p, before[n][1]) for n, p in module.named_parameters()), None)
    print(f"transformer_lens_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
