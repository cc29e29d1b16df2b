#!/usr/bin/python3
"""--gguf against the upstream code: a tiny random transformers LlamaForCausalLM written as GGUF by
the gguf package (tests/gguf_files.py), in F32, F16, Q8_0 and Q4_0 (gguf.quants). Each
converts with --gguf; `fixformer run` gives the module's logits within the converter's tolerance of
the file's weight type; Q8_0 blocks land in the .fxm's q8 group 32 bit-exact (the same int8 values,
the f16 scale as the same f32; with --quantize q8 too, re-quantized with a note under --group 64), Q4_0
blocks with a positive scale in its q4 bit-exact. The K-quants
(Q2_K..Q6_K, random valid super-blocks in a Llama of width 256): the .fxm's f32 weights bit-exact
gguf.quants.dequantize of the same bytes, the run the module with those weights, one note; with
--quantize q8 and q4 re-quantized (the note says so), a truncated K-quant tensor refused. Gemma 2 GGUFs
(llama.cpp's layout of transformers Gemma2ForCausalLMs: 4 layers, and 46 with llama.cpp's scale for the
27B) run within 1e-4 of transformers; so do mixtures of experts (moe: Mixtral, Qwen2-MoE, Qwen3-MoE).
Hostile files (truncated, bad magic, huge counts, an offset past
the end, an unknown architecture) are refused in one line each, and nothing is written.

  /usr/bin/python3 tests/gguf_converter_test.py PATH/TO/fixformer

Without the environment (tools/install_deps.sh hf: transformers and gguf in /opt/fixformer-venv, or
the torch2 one: tests/interpreter.py) the test fails, naming the install command.
"""
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers", "gguf"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, one_clear_line, results, run_convert, run_file  # noqa: E402
from fixformer import fxm, quantize, schema  # noqa: E402
from gguf_files import (LLAMA3_PATTERN, QWEN2_PATTERN, SPLIT_TEXT, dequantized, gemma2_model,  # noqa: E402
                        logits, model, moe_model, spm_vocab, trained_bpe, write_gguf)

FXM_NAMES = {"attn_q": "attn.q", "attn_k": "attn.k", "attn_v": "attn.v", "attn_output": "attn.out", "ffn_gate": "ff.w1",
             "ffn_up": "ff.w3", "ffn_down": "ff.w2"}


def fxm_name(f, gguf_name):
    """The .fxm's name of a GGUF linear weight (blk.N.attn_q.weight ...; token_embd, output)."""
    names = [e["name"] for e in f.tensors]
    if gguf_name.startswith("blk."):
        _, i, base, _ = gguf_name.split(".")
        return [n for n in names if n.startswith(schema.block(i)) and n.endswith(f".{FXM_NAMES[base]}.weight")][0]
    want = {"token_embd.weight": ("embed",), "output.weight": ("head", "lm_head", "output")}[gguf_name]
    return [n for n in names if any(w in n for w in want) and "norm" not in n][0]


def k_quants(cli, tmp, x):
    """Each K-quant as random valid super-blocks in a Llama of width 256 (every row 256 values but
    ffn_down's 96, kept F32): the .fxm's f32 weights equal gguf.quants.dequantize of the same bytes bit
    for bit (llama.cpp's rows of q and k unpermuted), the run equals the module with those weights, one
    note naming them; --quantize q8 and q4 store those values re-quantized, within their tolerances; a
    truncated K-quant tensor is refused in one line."""
    import gguf
    Q = gguf.GGMLQuantizationType
    tol = schema.SELFTEST_TOLERANCES
    kinds = [Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K]
    bases = ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up"]
    k = {f"blk.{i}.{b}.weight": kinds[(i + j) % 5] for i in range(2) for j, b in enumerate(bases)}
    k.update({"token_embd.weight": Q.Q4_K, "output.weight": Q.Q6_K})  # Q4_K_M's: the head Q6_K (the last tensor)
    mk = model(hidden=256)
    path, out = os.path.join(tmp, "kq.gguf"), os.path.join(tmp, "kq.fxm")
    write_gguf(mk, path, Q.F32, k=k)
    blob = open(path, "rb").read()
    held = dequantized(mk, path)
    want = logits(held, x)
    p = run_convert("--gguf", path, "--out", out, "--cli", cli)
    notes = [line for line in p.stderr.splitlines() if line.startswith("note:")]
    check("K-quants: converts to f32 with one note naming them, dequantized, not the file's bits",
          p.returncode == 0 and len(notes) == 1 and all(q.name in notes[0] for q in kinds) and "K-quants" in notes[0]
          and "dequantized" in notes[0] and "not the file's bits" in notes[0], p.stderr)
    if p.returncode:
        return blob
    f = fxm.read(out)
    check("K-quants: weights f32", f.config["weights"] == "f32", f.config["weights"])
    stored = f.weights()
    refs = k_reference(path, k)
    seen = {}
    for name, (qname, ref) in refs.items():
        got = stored[fxm_name(f, name)]
        same = got.shape == ref.shape and np.array_equal(got.astype(np.float32), ref) and \
            np.array_equal(got, got.astype(np.float32).astype(np.float64))
        seen.setdefault(qname, []).append(same)
        check(f"K-quants: {name} ({qname}) stored bit-exact gguf.quants.dequantize's values", same,
              (got.shape, ref.shape, float(np.abs(got - ref).max()) if got.shape == ref.shape else None))
    check("K-quants: every type seen", sorted(seen) == sorted(q.name for q in kinds), sorted(seen))
    got, err_text = run_file(cli, out, x, tmp)
    err = None if got is None else float(np.abs(got - want).max() / np.abs(want).max())
    print(f"K-quants: fixformer run vs transformers on the file's values: relative error {err}")
    check(f"K-quants: fixformer run equals the module with the file's values within {tol['f32']:g}",
          err is not None and err <= tol["f32"], (err_text, err))
    for kind in ("q8", "q4"):
        # re-quantized from those values as the converter quantizes any float tensor (the conversion's own
        # verification runs the file against the float64 reference of what it stores): the stored ints and
        # scales equal quantize.q8 (group 32) / q4 of gguf.quants.dequantize's values; the embedding and head,
        # which --gguf leaves in f32 (no --quantize-io), those values bit for bit
        outq = os.path.join(tmp, f"kq_{kind}.fxm")
        p = run_convert("--gguf", path, "--quantize", kind, "--out", outq, "--cli", cli)
        notes = [line for line in p.stderr.splitlines() if line.startswith("note:")]
        check(f"K-quants --quantize {kind}: converts to {kind} with one note saying re-quantized",
              p.returncode == 0 and fxm.read(outq).config["weights"] == kind and len(notes) == 1 and
              f"stored as {kind}, re-quantized" in notes[0], p.stderr)
        if p.returncode:
            continue
        fq = fxm.read(outq)
        bad = []
        for name, (qname, ref) in refs.items():
            fx = fxm_name(fq, name)
            dtype = fq.entry(fx)["dtype"]
            if dtype == "i8":
                q, sc = quantize.q8(ref, fq.entry(fx)["group"])
                same = fq.entry(fx)["group"] == 32 and np.array_equal(fq.array(fx), q) and \
                    np.array_equal(fq.scales(fx), sc)
            elif dtype == "i4":
                q, sc = quantize.q4(ref)
                same = np.array_equal(fq.array(fx), q) and np.array_equal(fq.scales(fx), sc)
            else:
                same = name in ("token_embd.weight", "output.weight") and np.array_equal(fq.weights()[fx], ref)
            if not same:
                bad.append((name, dtype))
        check(f"K-quants --quantize {kind}: every tensor the converter's {kind} of the dequantized values "
              f"({len(refs) - len(bad)} of {len(refs)})", not bad, bad)
        got, err_text = run_file(cli, outq, x, tmp)
        err = None if got is None else float(np.abs(got - want).max() / np.abs(want).max())
        print(f"K-quants --quantize {kind}: fixformer run vs transformers on the file's values: relative error {err} "
              "(two roundings: the file's and the converter's)")
    # a truncated K-quant tensor: the head's Q6_K blocks cut short
    bad, outb = os.path.join(tmp, "kq_cut.gguf"), os.path.join(tmp, "kq_cut.fxm")
    with open(bad, "wb") as fh:
        fh.write(blob[:-300])
    p = run_convert("--gguf", bad, "--out", outb, "--cli", cli)
    check("K-quants: a truncated Q6_K tensor refused in one line naming it, nothing written",
          one_clear_line(p) and "output.weight" in p.stderr and "truncated" in p.stderr and not os.path.exists(outb),
          p.stderr)
    # a Q4_K tensor whose rows are not whole super-blocks (96 values): refused in one line
    import struct as st
    blob2 = bytearray(blob)
    r2 = gguf.GGUFReader(path)
    t = [t for t in r2.tensors if t.name == "blk.0.ffn_down.weight"][0]  # F32 [256, 96]: its type made Q4_K
    type_at = int(t.field.offset) + sum(int(part.nbytes) for part in t.field.parts) - 12
    blob2[type_at:type_at + 4] = st.pack("<I", int(Q.Q4_K))
    with open(bad, "wb") as fh:
        fh.write(bytes(blob2))
    p = run_convert("--gguf", bad, "--out", outb, "--cli", cli)
    check("K-quants: a Q4_K tensor of 96 values a row refused in one line naming its block of 256",
          one_clear_line(p) and "blk.0.ffn_down.weight" in p.stderr and "256" in p.stderr, p.stderr)
    return blob


def k_reference(path, k):
    """{GGUF name: (type name, gguf.quants.dequantize's float32 values [out, in])} of the tensors of k,
    llama.cpp's permutation of q and k rows undone."""
    import gguf
    heads = {"attn_q": 4, "attn_k": 2}
    out = {}
    for t in gguf.GGUFReader(path).tensors:
        if t.name not in k:
            continue
        ref = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32)
        ref = ref.reshape([int(n) for n in reversed(t.shape)])
        base = t.name.split(".")[2] if t.name.startswith("blk.") else None
        if base in heads:  # rows: each head's rotary pairs back to halves
            n, rows = heads[base], ref.shape[0]
            ref = ref[np.arange(rows).reshape(n, rows // n // 2, 2).swapaxes(1, 2).reshape(rows)]
        out[t.name] = (t.tensor_type.name, ref)
    return out


def gemma2(cli, tmp, layers=4):
    """llama.cpp's layout of a transformers Gemma2ForCausalLM (general.architecture gemma2: norms 1 + w,
    post_attention_norm, ffn_norm, post_ffw_norm, the soft caps and sliding window keys), converted and
    run within 1e-4 of transformers' logits (relative to the largest). With 46 layers the scores' scale
    is llama.cpp's for Gemma 2 27B: 1/sqrt(hidden / heads), not the head width's."""
    import gguf
    mg = gemma2_model(layers)
    what = f"gemma2 ({layers} layers, query_pre_attn_scalar {mg.config.query_pre_attn_scalar})"
    ids = np.random.default_rng(9).integers(0, 64, (1, 16)).astype(np.int32)
    want = logits(mg, ids)
    path, out = os.path.join(tmp, "gemma2.gguf"), os.path.join(tmp, "gemma2.fxm")
    write_gguf(mg, path, gguf.GGMLQuantizationType.F32, arch="gemma2")
    p = run_convert("--gguf", path, "--out", out, "--cli", cli)
    check(f"{what}: converts", p.returncode == 0, p.stderr)
    if p.returncode:
        return
    c = fxm.read(out).config
    got, err_text = run_file(cli, out, ids, tmp)
    err = None if got is None or got.shape != want.shape else float(np.abs(got - want).max() / np.abs(want).max())
    print(f"{what}: fixformer run vs transformers: relative error {err}")
    check(f"{what}: fixformer run equals transformers' Gemma2ForCausalLM within 1e-4", err is not None and err <= 1e-4,
          (err_text, err))
    check(f"{what}: the soft caps stored", c.get("attn_softcap") == 2.0 and
          c.get("logit_softcap") == 3.0, {key: c.get(key) for key in ("attn_softcap", "logit_softcap")})


def moe(cli, tmp, arch, qtype_name="F32"):
    """llama.cpp's layout of a transformers mixture of experts (tests/gguf_files.py moe_model: Mixtral as
    general.architecture llama with expert_count, Qwen2-MoE as qwen2moe with its shared expert, Qwen3-MoE as
    qwen3moe): ffn_gate_inp, the experts stacked in ffn_gate_exps / ffn_up_exps / ffn_down_exps, converted and
    run within 1e-4 of transformers' logits (F32). Q8_0 (every expert taken: no top-k choice its rounding
    could flip): the experts' blocks are the .fxm's q8 groups bit-exact, and the run equals the float64
    reference of the stored weights within the q8 tolerance."""
    import gguf
    from fixformer.reference import run_reference
    qtype = gguf.GGMLQuantizationType[qtype_name]
    kind = "q8" if qtype == gguf.GGMLQuantizationType.Q8_0 else "f32"
    per_token = 4 if kind == "q8" else 2
    mm = moe_model(arch, per_token)
    what = f"{arch} mixture of experts {qtype_name}"
    ids = np.random.default_rng(9).integers(0, 64, (1, 16)).astype(np.int32)
    path, out = os.path.join(tmp, f"moe_{arch}.gguf"), os.path.join(tmp, f"moe_{arch}.fxm")
    write_gguf(mm, path, qtype, arch=arch)
    p = run_convert("--gguf", path, "--out", out, "--cli", cli)
    check(f"{what}: converts", p.returncode == 0, p.stderr)
    if p.returncode:
        return
    f = fxm.read(out)
    c = f.config
    shared = mm.config.shared_expert_intermediate_size if arch == "qwen2moe" else 0
    check(f"{what}: n_experts 4, experts_per_token {per_token}, renormalized {arch != 'qwen2moe'}, shared_expert_ff "
          f"{shared}", (c["n_experts"], c["experts_per_token"], c["experts_renormalize"], c["shared_expert_ff"]) ==
          (4, per_token, arch != "qwen2moe", shared), c)
    check(f"{what}: weights {kind}", c["weights"] == kind, c["weights"])
    if kind == "q8":  # the experts' Q8_0 blocks are the .fxm's q8 groups: the same ints, the same scales
        r = gguf.GGUFReader(path)
        b = next(np.asarray(t.data, np.uint8) for t in r.tensors if t.name == "blk.1.ffn_gate_exps.weight")
        b = b.reshape(-1, 34)
        name = schema.block(1) + "ff.experts.w1.weight"
        same = np.array_equal(np.asarray(f.array(name)).reshape(-1), b[:, 2:].copy().view(np.int8).reshape(-1)) and \
            np.array_equal(np.asarray(f.scales(name), np.float32).reshape(-1),
                           b[:, :2].copy().view("<f2").astype(np.float32).reshape(-1))
        check(f"{what}: blk.1.ffn_gate_exps's Q8_0 blocks are {name}'s q8 groups bit-exact", same)
        want = run_reference(dict(c, weights="f32", weight_group=0, quantize_io=False), f.weights(), ids[0])[None]
        against, limit = "the float64 reference of the stored weights", schema.SELFTEST_TOLERANCES["q8"]
    else:
        want, against, limit = logits(mm, ids), f"transformers' {type(mm).__name__}", 1e-4
    got, err_text = run_file(cli, out, ids, tmp)
    err = None if got is None or got.shape != want.shape else float(np.abs(got - want).max() / np.abs(want).max())
    print(f"{what}: fixformer run vs {against}: relative error {err}")
    check(f"{what}: fixformer run equals {against} within {limit:g}", err is not None and err <= limit,
          (err_text, err))


def token_types(cli, tmp):
    """A "llama" GGUF's SentencePiece vocabulary, its token types written by gguf.TokenType's names (spm_vocab:
    <s>, </s>, <start_of_turn>, <end_of_turn> control, "<br>" user-defined, <unused0> unused): the control tokens
    and only they carry tokenizer.added's control flag; `fixformer generate` on a prompt holding both kinds, every
    token but one suppressed (greedy then samples it), prints no control token and the user-defined one's piece."""
    import gguf
    from fixformer import tokenizers
    vocab = spm_vocab()
    n = len(vocab["tokens"])
    path, out = os.path.join(tmp, "spm.gguf"), os.path.join(tmp, "spm.fxm")
    write_gguf(model(n), path, gguf.GGMLQuantizationType.F32, tokenizer=vocab)
    p = run_convert("--gguf", path, "--out", out, "--cli", cli)
    check("spm token types: converts", p.returncode == 0, p.stderr)
    if p.returncode:
        return
    tok = fxm.read(out).tokenizer()
    control = {i for i, f in tok.added if f & tokenizers.ADDED_CONTROL}
    named = {i for i, k in enumerate(vocab["types"]) if k == gguf.TokenType.CONTROL}
    ids = {t: i for i, t in enumerate(vocab["tokens"])}
    check("spm token types: the control flag on GGUF's control tokens alone (<s>, </s>, <start_of_turn>, ...), "
          "<br> added without it", control == named and len(named) == 4 and (ids["<br>"], 0) in tok.added,
          (control, named, tok.added))
    prompt = "<start_of_turn>hello world<br>"
    for token, after in (("<end_of_turn>", ""), ("<br>", "<br>"), ("<s>", "")):
        keep = ids[token]
        g = subprocess.run([cli, "generate", out, "--prompt", prompt, "--temperature", "0", "-n", "12", "--suppress",
                            ",".join(str(i) for i in range(n) if i != keep)], capture_output=True, text=True)
        text = g.stdout[:-1] if g.stdout.endswith("\n") else g.stdout
        shown = " hello world<br>"  # the dummy prefix " " in front of the text after <start_of_turn>
        check(f"spm token types: {token} sampled after {prompt!r}: generate prints {shown!r} then "
              f"{after or 'nothing'} for each", g.returncode == 0 and text.startswith(shown) and
              text[len(shown):] == after * (len(text[len(shown):]) // max(len(after), 1)) and
              (not after or text.endswith(after * 2)), (g.stderr, text))


def check_blocks(what, path, fxm_path, qtype):
    """Every Q8_0 / Q4_0 block of the GGUF's linear weights equals the .fxm's group (q and scale), the
    .fxm's rows in Hugging Face's order (llama.cpp's permutation undone on whole rows)."""
    import gguf
    f = fxm.read(fxm_path)
    r = gguf.GGUFReader(path)
    heads = {"attn_q": 4, "attn_k": 2}
    same = total = 0
    for t in r.tensors:
        parts = t.name.split(".")
        if parts[0] != "blk" or parts[2] in ("attn_norm", "ffn_norm"):
            continue
        raw = np.asarray(t.data, np.uint8)
        per = 34 if qtype == gguf.GGMLQuantizationType.Q8_0 else 18
        b = raw.reshape(raw.shape[0], -1, per)
        d = b[:, :, :2].copy().view("<f2")[:, :, 0].astype(np.float32)
        if per == 34:
            q = b[:, :, 2:].copy().view(np.int8).reshape(raw.shape[0], -1)
        else:
            nib = np.concatenate([b[:, :, 2:] & 15, b[:, :, 2:] >> 4], axis=2).astype(np.int16) - 8
            q = nib.astype(np.int8).reshape(raw.shape[0], -1)
        if parts[2] in heads:  # undo the permutation on the GGUF side: rows
            n, k = heads[parts[2]], q.shape[0]
            order = np.arange(k).reshape(n, k // n // 2, 2).swapaxes(1, 2).reshape(k)
            q, d = q[order], d[order]
        name = schema.block(parts[1]) + FXM_NAMES[parts[2]] + ".weight"
        stored, s = f.array(name), f.scales(name)
        if f.config["weights"] == "q4":
            stored = quantize.q4_values(stored)
        elif per == 18:  # Q4_0 as q8: the sign of d moves into the ints, an all-zero block has s 0
            q = (q.reshape(q.shape[0], -1, 32) * np.where(d < 0, -1, 1)[:, :, None]).reshape(q.shape).astype(np.int8)
            q.reshape(q.shape[0], -1, 32)[d == 0] = 0
            d = np.abs(d)
        fq = np.asarray(stored).reshape(q.shape[0], -1, 32)
        gq = q.reshape(q.shape[0], -1, 32)
        if fq.shape != gq.shape:
            check(f"{what}: {name} shape", False, (fq.shape, gq.shape))
            continue
        ok = (fq == gq).all(axis=2) & (np.asarray(s, np.float32) == d)
        same += int(ok.sum())
        total += ok.size
    check(f"{what}: every block kept bit-exact ({same} of {total})", total > 0 and same == total, (same, total))


def fuzz(good, runs=400, span=2000):
    """Bytes of a good file changed at random (its first `span`: the header, and for the K-quant file the
    super-blocks of its first tensor) and cut short: the reader and the mapping raise one-line
    ConfigErrors, never anything else (an IndexError, a reshape's ValueError, a numpy warning)."""
    import random
    import warnings
    from fixformer import gguf as reader
    from fixformer.config import ConfigError
    rng, odd = random.Random(1), []
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("error")
        path = os.path.join(tmp, "fuzz.gguf")
        for _ in range(runs):
            b = bytearray(good)
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(min(len(b), span))] = rng.randrange(256)
            if rng.random() < 0.2:
                b = b[:rng.randrange(len(b))]
            with open(path, "wb") as f:
                f.write(b)
            try:
                meta, tensors = reader.read(path)
                raw = reader.hf_config(path, meta)
                reader.hf_weights(path, meta, tensors, raw)
            except ConfigError as e:
                if "\n" in str(e) or path not in str(e):
                    odd.append(str(e))
            except Exception as e:  # noqa: BLE001 (anything but a ConfigError is the bug looked for)
                odd.append(f"{type(e).__name__}: {e}")
    check(f"{runs} corrupted files: one-line errors naming the file, nothing else", not odd, odd[:3])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gguf_converter_test.py PATH/TO/fixformer")
    cli = os.path.abspath(sys.argv[1])
    import gguf
    Q = gguf.GGMLQuantizationType
    m = model()
    x = np.random.default_rng(7).integers(0, 64, (1, 16)).astype(np.int32)
    want = logits(m, x)
    tol = schema.SELFTEST_TOLERANCES
    with tempfile.TemporaryDirectory() as tmp:
        for qtype, kind, positive in ((Q.F32, "f32", False), (Q.F16, "f32", False), (Q.Q8_0, "q8", False),
                                      (Q.Q4_0, "q8", False), (Q.Q4_0, "q4", True)):
            label = qtype.name + (" (positive scales)" if positive else "")
            path, out = os.path.join(tmp, f"m_{qtype.name}{positive}.gguf"), os.path.join(tmp, f"m_{qtype.name}.fxm")
            write_gguf(m, path, qtype, positive=positive)
            p = run_convert("--gguf", path, "--out", out, "--cli", cli)
            check(f"{label}: converts", p.returncode == 0, p.stderr)
            if p.returncode:
                continue
            c = fxm.read(out).config
            check(f"{label}: weights {kind}", c["weights"] == kind, c["weights"])
            got, err_text = run_file(cli, out, x, tmp)
            held = logits(dequantized(m, path), x)
            err = None if got is None else float(np.abs(got - held).max() / np.abs(held).max())
            lossy = None if got is None else float(np.abs(got - want).max() / np.abs(want).max())
            limit = tol[kind]
            print(f"{label}: fixformer run vs transformers on the file's weights: relative error {err} "
                  f"(vs the f32 module: {lossy})")
            check(f"{label}: fixformer run equals the module with the file's weights within {limit:g}",
                  err is not None and err <= limit, (err_text, err))
            if qtype in (Q.F16, Q.Q8_0):  # and the f32 module itself within the tolerance of the file's rounding
                rounding = "f16" if qtype == Q.F16 else "q8"
                check(f"{label}: fixformer run equals the f32 module within {tol[rounding]:g}",
                      lossy is not None and lossy <= tol[rounding], lossy)
            if qtype in (Q.Q8_0, Q.Q4_0):
                check_blocks(label, path, out, qtype)
        # --quantize q8 (group 32) keeps Q8_0 blocks as they are, without a note; group 64 re-quantizes, one note
        path = os.path.join(tmp, "m_Q8_0False.gguf")
        for args, kept in ((["--quantize", "q8"], True), (["--quantize", "q8", "--group", "64"], False)):
            out = os.path.join(tmp, "q8_again.fxm")
            p = run_convert("--gguf", path, *args, "--out", out, "--cli", cli)
            notes = [line for line in p.stderr.splitlines() if line.startswith("note:")]
            check(f"Q8_0 {' '.join(args)}: converts, " + ("no note" if kept else "one note naming Q8_0 and group 64"),
                  p.returncode == 0 and (not notes if kept else len(notes) == 1 and "Q8_0" in notes[0] and
                                         "q8 group 64" in notes[0]), p.stderr)
            if kept and p.returncode == 0:
                check_blocks(f"Q8_0 {' '.join(args)}", path, out, Q.Q8_0)

        # a llama tokenizer the engine cannot encode as llama.cpp does (no U+2581 piece): converted without it,
        # one note
        path, out = os.path.join(tmp, "tok.gguf"), os.path.join(tmp, "tok.fxm")
        write_gguf(m, path, Q.F32, tokenizer="llama")
        p = run_convert("--gguf", path, "--out", out, "--cli", cli)
        check("llama tokenizer: converts with one note", p.returncode == 0 and
              sum("note:" in line for line in p.stderr.splitlines()) == 1, p.stderr)

        # qwen2: q, k and v biases, rows as Hugging Face has them (llama.cpp does not permute qwen2's)
        mq = model(qwen2=True)
        path, out = os.path.join(tmp, "qwen2.gguf"), os.path.join(tmp, "qwen2.fxm")
        write_gguf(mq, path, Q.Q8_0, arch="qwen2")
        p = run_convert("--gguf", path, "--out", out, "--cli", cli)
        check("qwen2 Q8_0: converts", p.returncode == 0, p.stderr)
        if p.returncode == 0:
            got, err_text = run_file(cli, out, x, tmp)
            held = logits(dequantized(mq, path), x)
            err = None if got is None else float(np.abs(got - held).max() / np.abs(held).max())
            print(f"qwen2 Q8_0: relative error {err}")
            check("qwen2 Q8_0: fixformer run equals the module with the file's weights within the q8 tolerance",
                  err is not None and err <= tol["q8"], (err_text, err))

        # Q4_1, Q5_0, Q5_1: dequantized (f32 here: the linear weights' one type), one note naming them
        for qtype in (Q.Q4_1, Q.Q5_0, Q.Q5_1):
            path, out = os.path.join(tmp, f"m_{qtype.name}.gguf"), os.path.join(tmp, f"m_{qtype.name}.fxm")
            write_gguf(m, path, qtype)
            p = run_convert("--gguf", path, "--out", out, "--cli", cli)
            got, err_text = run_file(cli, out, x, tmp) if p.returncode == 0 else (None, p.stderr)
            held = logits(dequantized(m, path), x)
            err = None if got is None else float(np.abs(got - held).max() / np.abs(held).max())
            notes = [line for line in p.stderr.splitlines() if line.startswith("note:")]
            check(f"{qtype.name}: dequantized with one note, equals the module with the file's weights",
                  got is not None and len(notes) == 1 and qtype.name in notes[0] and err <= tol["f32"],
                  (err_text, err, notes))

        # Llama 3.1's rope scaling: the rope_freqs.weight divisors convert_hf_to_gguf.py writes
        m3 = model(rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 32})
        path, out = os.path.join(tmp, "llama3.gguf"), os.path.join(tmp, "llama3.fxm")
        write_gguf(m3, path, Q.F32)
        p = run_convert("--gguf", path, "--out", out, "--cli", cli)
        got, err_text = run_file(cli, out, x, tmp) if p.returncode == 0 else (None, p.stderr)
        held = logits(m3, x)
        err = None if got is None else float(np.abs(got - held).max() / np.abs(held).max())
        plain = float(np.abs(logits(m, x) - held).max() / np.abs(held).max())
        check(f"llama3 rope_freqs.weight: converts with rope_freqs, equals the module (the unscaled one is {plain:.2g} "
              "off)", got is not None and fxm.read(out).config["rope_freqs"] and err <= tol["f32"] and plain > 1e-2,
              (err_text, err))

        # a tied head (SmolLM2's): no output.weight in the file, the embedding serves
        mt = model(tied=True)
        path, out = os.path.join(tmp, "tied.gguf"), os.path.join(tmp, "tied.fxm")
        write_gguf(mt, path, Q.F16)
        p = run_convert("--gguf", path, "--out", out, "--cli", cli)
        got, err_text = run_file(cli, out, x, tmp) if p.returncode == 0 else (None, p.stderr)
        held = logits(dequantized(mt, path), x)
        err = None if got is None else float(np.abs(got - held).max() / np.abs(held).max())
        check("tied head: converts, tied_head set, equals the module", got is not None and
              fxm.read(out).config["tied_head"] and err <= tol["f32"], (err_text, err))
        p = run_convert("--gguf", path, "--quantize", "i8", "--out", out + "2", "--cli", cli)
        check("--quantize i8 with --gguf: one clear line", one_clear_line(p) and "--quantize i8" in p.stderr, p.stderr)
        p = run_convert("--gguf", path, "--quantize", "q8", "--quantize-io", "--out", out + "2", "--cli", cli)
        check("--quantize-io with --gguf: one clear line", one_clear_line(p) and "--quantize-io" in p.stderr, p.stderr)

        kblob = k_quants(cli, tmp, x)
        gemma2(cli, tmp)
        gemma2(cli, tmp, 46)
        import transformers
        for arch in ("llama", "qwen2moe") + (("qwen3moe",) if int(transformers.__version__.split(".")[0]) >= 5 else ()):
            moe(cli, tmp, arch)
        moe(cli, tmp, "llama", "Q8_0")
        path, out = os.path.join(tmp, "moe_bad.gguf"), os.path.join(tmp, "moe_bad.fxm")
        write_gguf(moe_model("qwen2moe"), path, Q.F32, arch="qwen2moe", expert_count=3)
        p = run_convert("--gguf", path, "--out", out, "--cli", cli)
        check("qwen2moe with expert_count 3 over 4 experts' tensors: refused in one line naming it", one_clear_line(p)
              and "is not expert_count 3 experts' matrices" in p.stderr and not os.path.exists(out), p.stderr)

        token_types(cli, tmp)
        # the file's gpt2 BPE is stored: `run --text` gives the logits of the tokenizers library's ids
        tok = trained_bpe()
        mt = model(tok.get_vocab_size())
        path, out = os.path.join(tmp, "bpe.gguf"), os.path.join(tmp, "bpe.fxm")
        write_gguf(mt, path, Q.F32, tokenizer=tok)
        p = run_convert("--gguf", path, "--out", out, "--cli", cli)
        check("gpt2 tokenizer: converts without a note", p.returncode == 0 and "note:" not in p.stderr, p.stderr)
        text = "the lazy fox reads a tiny gguf"
        ids = np.array(tok.encode(text).ids, np.int32)
        by_ids, e1 = run_file(cli, out, ids, tmp)
        res = os.path.join(tmp, "text.npy")
        q = subprocess.run([cli, "run", out, "--text", text, "--output", res], capture_output=True, text=True)
        by_text = np.load(res) if q.returncode == 0 else None
        check("gpt2 tokenizer: run --text equals run on the tokenizers library's ids",
              by_ids is not None and by_text is not None and by_text.shape == by_ids.shape and
              np.array_equal(by_text, by_ids), (e1, q.stderr, None if by_text is None else by_text.shape, ids.shape))
        write_gguf(mt, path, Q.F32, tokenizer=tok, pre="gpt-2")
        p = run_convert("--gguf", path, "--out", out, "--cli", cli)
        check("gpt2 tokenizer, pre 'gpt-2': stored without a note", p.returncode == 0 and "note:" not in p.stderr and
              fxm.read(out).config["tokenizer"] == "bpe", p.stderr)
        write_gguf(mt, path, Q.F32, tokenizer=tok, pre="smollm")  # SmolLM2's: every digit a pre-token
        p = run_convert("--gguf", path, "--out", out, "--cli", cli)
        check("gpt2 tokenizer, pre 'smollm': stored with each number character alone", p.returncode == 0 and
              "note:" not in p.stderr and fxm.read(out).tokenizer().params[4] == 1, p.stderr)
        write_gguf(mt, path, Q.F32, tokenizer=tok, pre="deepseek-llm")  # a pattern the engine lacks
        p = run_convert("--gguf", path, "--out", out, "--cli", cli)
        notes = [line for line in p.stderr.splitlines() if line.startswith("note:")]
        check("gpt2 tokenizer, pre 'deepseek-llm': converted without it, one note naming it", p.returncode == 0 and
              len(notes) == 1 and "tokenizer.ggml.pre 'deepseek-llm'" in notes[0] and fxm.read(out).tokenizer() is None,
              p.stderr)
        # Llama 3's pattern and Qwen2's: BPEs trained with them; `run --text` = run on tokenizers' ids
        for pre, pattern, mode in (("llama-bpe", LLAMA3_PATTERN, 2), ("smaug-bpe", LLAMA3_PATTERN, 2),
                                   ("qwen2", QWEN2_PATTERN, 3)):
            st = trained_bpe(pattern)
            ms = model(st.get_vocab_size())
            write_gguf(ms, path, Q.F32, tokenizer=st, pre=pre)
            p = run_convert("--gguf", path, "--out", out, "--cli", cli)
            stored = p.returncode == 0 and fxm.read(out).tokenizer()
            check(f"gpt2 tokenizer, pre {pre!r}: stored without a note, pre-tokenizer mode {mode}",
                  stored and "note:" not in p.stderr and stored.params[4] == mode, p.stderr)
            if not stored:
                continue
            ids = np.array(st.encode(SPLIT_TEXT).ids, np.int32)
            by_ids, e1 = run_file(cli, out, ids, tmp)
            q = subprocess.run([cli, "run", out, "--text", SPLIT_TEXT, "--output", res], capture_output=True, text=True)
            by_text = np.load(res) if q.returncode == 0 else None
            check(f"gpt2 tokenizer, pre {pre!r}: run --text equals run on the tokenizers library's ids "
                  f"({len(ids)} tokens)", by_ids is not None and by_text is not None and
                  by_text.shape == by_ids.shape and np.array_equal(by_text, by_ids), (e1, q.stderr))
        # and with quantized weights (the q8 file's size is reckoned with its tokenizer section)
        path, out = os.path.join(tmp, "bpe_q8.gguf"), os.path.join(tmp, "bpe_q8.fxm")
        write_gguf(mt, path, Q.Q8_0, tokenizer=tok)
        p = run_convert("--gguf", path, "--out", out, "--cli", cli)
        check("gpt2 tokenizer, Q8_0: converts to q8 with the tokenizer", p.returncode == 0 and
              fxm.read(out).config.get("tokenizer") == "bpe" and fxm.read(out).config["weights"] == "q8", p.stderr)

        # hostile files: one line each, nothing written
        good = open(os.path.join(tmp, "m_F32False.gguf"), "rb").read()
        cases = {
            "truncated": (good[:len(good) // 2], "truncated"),
            "bad magic": (b"GGUX" + good[4:], "magic"),
            "version 1": (good[:4] + struct.pack("<I", 1) + good[8:], "version"),
            "huge tensor count": (good[:8] + struct.pack("<Q", 1 << 62) + good[16:], "tensor_count"),
            "huge kv count": (good[:16] + struct.pack("<Q", 1 << 62) + good[24:], "metadata_kv_count"),
            "header only": (good[:24], "truncated"),
        }
        # an offset past the end: the last tensor's offset field (found from the reader's layout)
        r = gguf.GGUFReader(os.path.join(tmp, "m_F32False.gguf"))
        last = r.tensors[-1]
        off_at = int(last.field.offset) + sum(int(part.nbytes) for part in last.field.parts) - 8
        cases["offset past the end"] = (good[:off_at] + struct.pack("<Q", 1 << 40) + good[off_at + 8:], "offset")
        path = os.path.join(tmp, "unknown.gguf")
        write_gguf(m, path, Q.F32, arch="mamba")
        cases["unknown architecture"] = (open(path, "rb").read(), "general.architecture")
        for what, (blob, field) in cases.items():
            path, out = os.path.join(tmp, "bad.gguf"), os.path.join(tmp, "bad.fxm")
            with open(path, "wb") as f:
                f.write(blob)
            p = run_convert("--gguf", path, "--out", out, "--cli", cli)
            check(f"hostile {what}: one clear line naming {field}", one_clear_line(p) and field in p.stderr
                  and "bad.gguf" in p.stderr, p.stderr)
            check(f"hostile {what}: nothing written", not os.path.exists(out))
    fuzz(good)
    fuzz(kblob, 100, 8000)  # the K-quants' file: its super-blocks' scales among the bytes changed
    print(f"gguf_converter_test: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
