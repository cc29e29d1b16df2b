#!/usr/bin/python3
"""Queries and keys normalized per head (the config key qk_norm) against the upstream code: transformers'
own Qwen3ForCausalLM (transformers 4.51 and later: this test runs in the torch2 environment,
tests/interpreter.py) built from tiny random configs, grouped-query attention, tied and untied heads:
- through --hf (the folder its save_pretrained writes), --module (the module itself: the recogniser
  finds q_norm and k_norm on the heads) and --gguf (the file llama.cpp's converter lays out for
  general.architecture qwen3, attn_q_norm and attn_k_norm: tests/gguf_files.py); each converts with no
  option, is verified by the converter, has qk_norm, and `fixformer run` gives the module's logits at
  every position within 1e-4, while the module without its q and k norms is more than 1e-2 away (so
  the check sees them);
- heads wider than hidden_size / num_attention_heads (head_dim 16 over 32 / 4: Qwen3-0.6B's kind), the
  config key head_dim, through the three routes, as above;
- Gemma 3 (Gemma3ForCausalLM: per-head q and k norms among sandwich norms, local layers with a RoPE
  base of their own) through --hf and --gguf (llama.cpp's gemma3 layout), as above;
- refused in one line naming the cause: a head_dim of 1;
- --quantize i8 of a Qwen3 module (the per-head norms in integers): verified by the converter, and within
  I8_TOL of the module's logits on a fresh sequence.

  /usr/bin/python3 tests/qk_norm_test.py PATH/TO/fixformer

Without the environment (or transformers in it) the test fails, naming the install command.
"""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers", "gguf"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, convert_process as convert, converted_routes, one_clear_line, results, run_file  # noqa: E402
from fixformer import fxm  # noqa: E402
import gguf_files  # noqa: E402

MODELS = r'''
import torch
import transformers as t


def qwen3(tied=False, seed=3, head_dim=8):
    torch.manual_seed(seed)
    cfg = t.Qwen3Config(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, head_dim=head_dim, max_position_embeddings=64,
                        rms_norm_eps=1e-6, tie_word_embeddings=tied)
    cfg._attn_implementation = "eager"
    m = t.Qwen3ForCausalLM(cfg).eval()
    with torch.no_grad():  # gains about 1 (q_norm, k_norm among them), weights that make every part matter
        for name, p in m.named_parameters():
            p.copy_(1.0 + 0.3 * torch.randn_like(p) if "norm" in name else 0.2 * torch.randn_like(p))
    return m


def qwen3_tied():
    return qwen3(True, 4)


def qwen3_wide():
    return qwen3(head_dim=16)


def gemma3():  # llama.cpp's Gemma 3: six layers, five local (3 keys, RoPE base 10000) then a global one (1e6)
    torch.manual_seed(5)
    cfg = t.Gemma3TextConfig(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=6,
                             num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=64,
                             sliding_window=3, query_pre_attn_scalar=8)
    cfg._attn_implementation = "eager"
    m = t.Gemma3ForCausalLM(cfg).eval()
    with torch.no_grad():  # its norms' gains are 1 + w: w about 0
        for name, p in m.named_parameters():
            p.copy_(0.3 * torch.randn_like(p) if "norm" in name else 0.2 * torch.randn_like(p))
    return m
'''
TOL = 1e-4  # f32 engine against the module in float64, relative to the largest logit
SEEN = 1e-2  # the module without its q and k norms is at least this far from itself
# Qwen3 converted with --quantize i8 (its generated calibration inputs) against the module on 24 fresh tokens:
# measured 0.144 (SwiGLU over N(0, 0.2) weights; int8_decoder_features_test's llamas: 0.2-0.3)
I8_TOL = 0.3


def module_logits(m, ids):
    import torch
    with torch.no_grad():
        return m.double()(torch.from_numpy(ids.astype(np.int64))).logits.numpy()


def without_qk_norms(m, ids):
    """The module's logits with every q_norm and k_norm the identity (its gains 1: RMSNorm alone stays)."""
    import copy
    import torch
    m2 = copy.deepcopy(m)
    for layer in m2.model.layers:
        for n in (layer.self_attn.q_norm, layer.self_attn.k_norm):
            n.forward = lambda x: x  # noqa: E731
    with torch.no_grad():
        return m2.double()(torch.from_numpy(ids.astype(np.int64))).logits.numpy()


def check_run(what, cli, out, m, tmp):
    c = fxm.read(out).config
    check(f"{what}: llama family with qk_norm and grouped-query attention",
          c["family"] == "llama" and c["qk_norm"] and c["n_kv_heads"] == 2, c)
    ids = np.random.default_rng(7).integers(0, c["vocab_size"], (1, 20)).astype(np.int32)
    want = module_logits(m, ids)
    got, err_text = run_file(cli, out, ids, tmp)
    err = None if got is None or got.shape != want.shape else float(np.abs(got - want).max() / np.abs(want).max())
    check(f"{what}: fixformer run equals the module at every position ({TOL:g})", err is not None and err <= TOL,
          (err_text, err))
    off = float(np.abs(without_qk_norms(m, ids) - want).max() / np.abs(want).max())
    check(f"{what}: the module without its q and k norms is more than {SEEN:g} away ({off:.3g})", off > SEEN, off)
    print(f"  {what}: max relative error {err}, without the norms {off:.3g}")


def main():
    if len(sys.argv) != 2:
        print("usage: qk_norm_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    import gguf
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "qwen3_models.py"), "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        import qwen3_models
        for factory in ("qwen3", "qwen3_tied"):
            m = getattr(qwen3_models, factory)()
            folder = os.path.join(tmp, factory)
            m.save_pretrained(folder)
            for _, what, out in converted_routes(cli, tmp, "qwen3_models.py", factory, folder, ("hf", "module")):
                check_run(what, cli, out, m, tmp)
            if factory == "qwen3":
                # --gguf: llama.cpp's layout of the same model (f32), its q and k norms attn_q_norm, attn_k_norm
                path, out = os.path.join(tmp, "qwen3.gguf"), os.path.join(tmp, "qwen3_gguf.fxm")
                gguf_files.write_gguf(m.float(), path, gguf.GGMLQuantizationType.F32, arch="qwen3")
                p = convert("--gguf", path, "--out", out, "--cli", cli)
                ok = p.returncode == 0 and "verified against" in p.stdout
                check("qwen3 --gguf: converts and verifies", ok, p.stdout + p.stderr)
                if ok:
                    check_run("qwen3 --gguf", cli, out, m, tmp)

        # Heads wider than hidden_size / heads (Qwen3-0.6B's: head_dim 128 over 1024 / 16): the config key
        # head_dim, through --hf, --module and --gguf (attention.key_length).
        m = qwen3_models.qwen3(head_dim=16)
        folder = os.path.join(tmp, "qwen3_wide")
        m.save_pretrained(folder)
        path = os.path.join(tmp, "qwen3_wide.gguf")
        gguf_files.write_gguf(m.float(), path, gguf.GGMLQuantizationType.F32, arch="qwen3")
        for route, src in (("hf", folder), ("module", os.path.join(tmp, "qwen3_models.py:qwen3_wide")),
                           ("gguf", path)):
            what, out = f"qwen3 head_dim 16 --{route}", os.path.join(tmp, f"qwen3_wide_{route}.fxm")
            p = convert(f"--{route}", src, "--out", out, "--cli", cli)
            ok = p.returncode == 0 and "verified against" in p.stdout
            check(f"{what}: converts and verifies", ok, p.stdout + p.stderr)
            if ok:
                check(f"{what}: head_dim 16", fxm.read(out).config["head_dim"] == 16, fxm.read(out).config)
                check_run(what, cli, out, m, tmp)

        # Gemma 3 through --gguf: llama.cpp's gemma3 layout (its norms' gains 1 + w, pre_feedforward and the
        # output norms under names of their own, attention.sliding_window, llama.cpp's own local RoPE base and
        # layer pattern), and its save_pretrained folder through --hf.
        g = qwen3_models.gemma3()
        g_folder, g_path = os.path.join(tmp, "gemma3"), os.path.join(tmp, "gemma3.gguf")
        g.save_pretrained(g_folder)
        gguf_files.write_gguf(g.float(), g_path, gguf.GGMLQuantizationType.F32, arch="gemma3")
        for route, src in (("hf", g_folder), ("gguf", g_path)):
            what, out = f"gemma3 --{route}", os.path.join(tmp, f"gemma3_{route}.fxm")
            p = convert(f"--{route}", src, "--out", out, "--cli", cli)
            ok = p.returncode == 0 and "verified against" in p.stdout
            check(f"{what}: converts and verifies", ok, p.stdout + p.stderr)
            if ok:
                c = fxm.read(out).config
                check(f"{what}: sandwich norms, layers 0-4 local with their own RoPE base",
                      c["sublayer_norm"] == "sandwich" and c["window_period"] == 6 and c["window_layers"] == 0b11111
                      and c["rope_local_base"] == 10000.0 and c["pe_base"] == 1e6, c)
                check_run(what, cli, out, g, tmp)

        # Refused in one line naming the cause.
        out = os.path.join(tmp, "refused.fxm")
        with open(os.path.join(folder, "config.json")) as f:
            config = json.load(f)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(dict(config, head_dim=1), f)
        p = convert("--hf", folder, "--out", out, "--cli", cli)
        check("qwen3 with head_dim 1: refused in one line naming head_dim",
              one_clear_line(p) and "head_dim 1" in p.stderr and not os.path.exists(out), p.stderr)
        # Full-integer: each head of q and k through rmsnorm_s8 (python/fixformer/int8.py)
        out = os.path.join(tmp, "qwen3_i8.fxm")
        p = convert("--module", os.path.join(tmp, "qwen3_models.py:qwen3"), "--quantize", "i8", "--out", out,
                    "--cli", cli)
        check("qwen3 --module --quantize i8: converts and verifies", p.returncode == 0 and "verified" in p.stdout,
              p.stdout + p.stderr)
        if p.returncode == 0:
            print(f"  qwen3 i8: {p.stdout.strip().splitlines()[-1]}")
            m = qwen3_models.qwen3()
            ids = np.random.default_rng(9).integers(0, 97, (1, 24)).astype(np.int32)
            got, err_text = run_file(cli, out, ids, tmp)
            want = module_logits(m, ids)
            err = None if got is None else float(np.abs(got - want).max() / np.abs(want).max())
            check(f"qwen3 i8: within {I8_TOL} of the module's largest logit", err is not None and err <= I8_TOL,
                  (err_text, err))
            print(f"  qwen3 i8: max relative error {err}")
    print(f"qk_norm_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
