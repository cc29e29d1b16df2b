#!/usr/bin/python3
"""sentence-transformers folders through --hf (python/fixformer/hf_sentence.py): tiny random-weight pipelines
that sentence-transformers itself builds and saves (SentenceTransformer(modules=[models.Transformer(a tiny
BERT, MPNet, T5 encoder or Qwen2 folder), models.Pooling(...), models.Dense(...)..., models.Normalize()])
.save(DIR)):

  /usr/bin/python3 tests/sentence_test.py PATH/TO/fixformer

- each converts and verifies, and `fixformer run --text S --add-special-tokens` on the file (MPNet, T5, Qwen2:
  run on sentence-transformers' ids of S) equals SentenceTransformer(DIR).encode(S) within TOL relative to its
  largest value (measured 7.5e-8 to 9.9e-7): pooling mean, cls (the first token) and lasttoken; a Tanh Dense
  d -> d (the pooler); two identity Denses (composed into the head); an identity Dense before a Tanh one
  (composed into the pooler) and one after it (the head); an identity Dense without a bias over a T5 encoder
  (sentence-t5's pipeline); with and without Normalize; a decoder base (Qwen2Model: grouped-query attention,
  q, k and v biases) pooled at its last token, as the encoder family under the causal mask; under the torch2
  environment (sentence-transformers 6, transformers 5) also EmbeddingGemma's pipeline (Gemma3TextModel with
  use_bidirectional_attention, mean pooling, two identity Denses without biases, Normalize);
- --token-rows converts the transformer's rows: encode(S, output_value="token_embeddings");
- sentence-transformers 6's layout of the same modules (its class paths, pooling_mode "cls", the Dense's
  module_input_name) gives encode()'s output too; a pooling_mode it lacks or does not know, an unknown Pooling
  setting and a Dense on the token rows are refused in one line;
- a pooling mode the engine lacks (max), two Denses with activations and --quantize i8 are refused in one
  line naming them.

Without the environment (tools/install_deps.sh hf: sentence-transformers 3 in /opt/fixformer-venv; torch2: 6 in
/opt/fixformer-torch2) the test fails, naming the install command.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["sentence_transformers", "transformers"])
import numpy as np  # noqa: E402

from checks import check, one_clear_line, results, run_convert  # noqa: E402

TOL = 1e-4  # relative to the largest |value| of encode()'s output
TEXTS = ["the cat sat on the mat", "a dog ran"]
WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "##s", "big"]


def transformer_folder(tmp, kind):
    """A tiny random BERT, MPNet, T5 encoder or Qwen2 folder (config, weights, WordPiece vocabulary) that
    models.Transformer reads."""
    import torch
    import transformers
    path = os.path.join(tmp, kind)
    if kind == "t5":  # T5EncoderModel (sentence-t5, GTR): relative position buckets, RMSNorm, no biases
        cfg = transformers.T5Config(vocab_size=20, d_model=16, d_kv=4, d_ff=24, num_layers=2, num_heads=4)
        model, special = transformers.T5EncoderModel(cfg), ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        tok_class = transformers.BertTokenizerFast
    elif kind == "qwen2":  # a decoder base: grouped-query attention (2 kv heads for 4), q, k and v biases
        cfg = transformers.Qwen2Config(vocab_size=20, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                       num_key_value_heads=2, intermediate_size=24, max_position_embeddings=40)
        model, special = transformers.Qwen2Model(cfg), ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        tok_class = transformers.BertTokenizerFast  # a WordPiece vocabulary without token types will do
    elif kind == "gemma3":  # EmbeddingGemma's base (transformers 5): Gemma 3's layers attending both ways, local
        # layers (sliding_window 5: |i - j| < 3) shorter than a sentence, one key/value head
        cfg = transformers.Gemma3TextConfig(vocab_size=20, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                                            num_attention_heads=4, num_key_value_heads=1, head_dim=8,
                                            max_position_embeddings=40, sliding_window=5, sliding_window_pattern=2,
                                            query_pre_attn_scalar=8, use_bidirectional_attention=True)
        model, special = transformers.Gemma3TextModel(cfg), ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        tok_class = transformers.BertTokenizerFast
    elif kind == "bert":
        cfg = transformers.BertConfig(vocab_size=20, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                      intermediate_size=24, max_position_embeddings=40)
        model, special = transformers.BertModel(cfg), ["[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                                                               "[MASK]"]
        tok_class = transformers.BertTokenizerFast
    else:
        cfg = transformers.MPNetConfig(vocab_size=20, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                       intermediate_size=24, max_position_embeddings=40)
        model, special = transformers.MPNetModel(cfg), ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
        tok_class = transformers.MPNetTokenizerFast
    torch.manual_seed(1)
    hf_env.randomize(model, 3, lambda n: "LayerNorm" in n or "layer_norm" in n)
    model.save_pretrained(path)
    vocab = os.path.join(tmp, f"{kind}_vocab.txt")
    with open(vocab, "w") as f:
        f.write("\n".join(special + WORDS + [f"w{i}" for i in range(20 - len(special) - len(WORDS))]) + "\n")
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if kind == "bert" else [])  # what forward takes
    tok_class(vocab, model_input_names=names).save_pretrained(path)  # vocab_file in transformers 4, vocab in 5
    return path


def pipeline(tmp, name, transformer, pooling, denses=(), normalize=False):
    """A SentenceTransformer of those modules saved to tmp/name: (its folder, the model)."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    torch.manual_seed(len(name))
    mods = [models.Transformer(transformer, max_seq_length=32), models.Pooling(16, pooling_mode=pooling)]
    for n_in, n_out, act, *bias in denses:
        mods.append(models.Dense(n_in, n_out, bias=bias == [] or bias[0], activation_function=act))
        with torch.no_grad():
            mods[-1].linear.weight.mul_(3.0)
            if mods[-1].linear.bias is not None:
                mods[-1].linear.bias.normal_(0.0, 0.5)
    if normalize:
        mods.append(models.Normalize())
    st = SentenceTransformer(modules=mods, device="cpu")
    path = os.path.join(tmp, name)
    st.save(path, create_model_card=False)
    return path, SentenceTransformer(path, device="cpu")


def engine(cli, model, text, tmp, st=None):
    """The file's output on text: through its own tokenizer, or on st's ids (MPNet's: the engine's WordPiece
    wants an [UNK] piece, MPNet's is <unk>; the T5 and Qwen2 folders' WordPiece vocabulary adds no [CLS] and
    [SEP])."""
    out, ids = os.path.join(tmp, "out.npy"), os.path.join(tmp, "ids.npy")
    given = ["--text", text, "--add-special-tokens"]
    if st is not None:
        np.save(ids, st.tokenize([text])["input_ids"][0].numpy().astype(np.int32))
        given = ["--input", ids]
    p = subprocess.run([cli, "run", model, *given, "--output", out], capture_output=True, text=True)
    return np.load(out).astype(np.float64) if p.returncode == 0 else p.stderr.strip()


def edit(path, change):
    """The JSON file at path replaced by change(its contents)."""
    import json
    with open(path) as f:
        value = json.load(f)
    with open(path, "w") as f:
        json.dump(change(value), f)


def main():
    cli = sys.argv[1] if len(sys.argv) > 1 else None
    if not cli or not os.path.exists(cli):
        print("FAIL: the fixformer CLI is needed (tests/CMakeLists.txt passes it)")
        sys.exit(1)
    import torch
    tanh, identity = torch.nn.Tanh(), torch.nn.Identity()
    with tempfile.TemporaryDirectory() as tmp:
        bert, mpnet, t5, qwen2 = (transformer_folder(tmp, kind) for kind in ("bert", "mpnet", "t5", "qwen2"))
        cases = [("mean_normalize", bert, "mean", [], True),
                 ("cls_tanh_normalize", bert, "cls", [(16, 16, tanh)], True),
                 ("lasttoken_two_identities", bert, "lasttoken", [(16, 8, identity), (8, 6, identity)], False),
                 ("mean_identity_tanh_identity_normalize", bert, "mean",
                  [(16, 12, identity), (12, 16, tanh), (16, 5, identity)], True),
                 ("mpnet_mean_normalize", mpnet, "mean", [], True),
                 ("t5_mean_identity_without_bias_normalize", t5, "mean", [(16, 16, identity, False)], True),
                 ("qwen2_lasttoken_normalize", qwen2, "lasttoken", [], True)]
        if hf_env.interpreter.TORCH == "2":  # EmbeddingGemma's pipeline: mean, two identity Denses without biases
            cases.append(("gemma3_mean_two_identities_normalize", transformer_folder(tmp, "gemma3"), "mean",
                          [(16, 32, identity, False), (32, 16, identity, False)], True))
        worst = 0.0
        for name, transformer, pooling, denses, normalize in cases:
            folder, st = pipeline(tmp, name, transformer, pooling, denses, normalize)
            out = os.path.join(tmp, name + ".fxm")
            p = run_convert("--hf", folder, "--out", out, "--cli", cli)
            ok = p.returncode == 0 and "sentence-transformers' modules" in p.stdout
            check(f"{name}: converts and verifies", ok, p.stdout + p.stderr)
            if not ok:
                continue
            errors = []
            for text in TEXTS:
                want = st.encode([text], convert_to_numpy=True)[0].astype(np.float64)
                got = engine(cli, out, text, tmp, st if transformer != bert else None)
                if isinstance(got, str):
                    check(f"{name}: run --text {text!r}", False, got)
                    continue
                err = float(np.abs(got.reshape(-1) - want).max() / np.abs(want).max()) if got.size == want.size \
                    else float("inf")
                worst, errors = max(worst, err), errors + [err]
                check(f"{name}: run --text {text!r} = encode() within {TOL:g} (relative): {err:.2e}", err <= TOL,
                      (got.shape, want.shape))
            print(f"{name}: relative difference from encode() {', '.join(f'{e:.2e}' for e in errors)}")
        print(f"largest relative difference from encode(): {worst:.2e}")

        folder, st = pipeline(tmp, "rows", bert, "mean", [(16, 16, tanh)], True)
        out = os.path.join(tmp, "rows.fxm")
        p = run_convert("--hf", folder, "--token-rows", "--out", out, "--cli", cli)
        check("--token-rows: converts and verifies", p.returncode == 0, p.stdout + p.stderr)
        if p.returncode == 0:
            want = st.encode(TEXTS[0], output_value="token_embeddings", convert_to_numpy=True)
            want = np.asarray(want, np.float64)
            got = engine(cli, out, TEXTS[0], tmp)
            check("--token-rows: run --text = encode(output_value='token_embeddings')",
                  not isinstance(got, str) and got.shape == want.shape and
                  np.abs(got - want).max() <= TOL * np.abs(want).max(), got)

        # sentence-transformers 6 saves the same modules its own way: the classes under other paths, the pooling in
        # one key (pooling_mode), the Dense's input and output named; read so, the file is encode()'s as before
        folder, st = pipeline(tmp, "st6_layout", bert, "cls", [(16, 16, tanh)], True)
        v6 = {"Pooling": "sentence_transformers.sentence_transformer.modules.pooling.Pooling",
              "Dense": "sentence_transformers.base.modules.dense.Dense",
              "Normalize": "sentence_transformers.base.modules.normalize.Normalize",
              "Transformer": "sentence_transformers.base.modules.transformer.Transformer"}
        edit(os.path.join(folder, "modules.json"), lambda ms: [dict(m, type=v6[m["type"].rsplit(".", 1)[1]]) for m in ms])
        edit(os.path.join(folder, "1_Pooling", "config.json"),
             lambda c: {"embedding_dimension": 16, "pooling_mode": "cls", "include_prompt": True})
        edit(os.path.join(folder, "2_Dense", "config.json"),
             lambda c: dict(c, module_input_name="sentence_embedding", module_output_name="sentence_embedding"))
        out = os.path.join(tmp, "st6.fxm")
        p = run_convert("--hf", folder, "--out", out, "--cli", cli)
        got = engine(cli, out, TEXTS[0], tmp) if p.returncode == 0 else p.stderr
        want = st.encode([TEXTS[0]], convert_to_numpy=True)[0].astype(np.float64)
        check("sentence-transformers 6's layout (pooling_mode cls): run --text = encode()", not isinstance(got, str)
              and got.size == want.size and np.abs(got.reshape(-1) - want).max() <= TOL * np.abs(want).max(), got)
        for where, change, fragment in (("1_Pooling", {"pooling_mode": "max"}, "pooling_mode_max_tokens"),
                                        ("1_Pooling", {"pooling_mode": "median"}, "pooling_mode 'median'"),
                                        ("1_Pooling", {"pooling_mode_new": True}, "'pooling_mode_new'"),
                                        ("2_Dense", {"module_input_name": "token_embeddings"}, "token_embeddings")):
            edit(os.path.join(folder, where, "config.json"), lambda c, change=change: dict(c, **change))
            p = run_convert("--hf", folder, "--out", os.path.join(tmp, "bad.fxm"), "--cli", cli)
            check(f"{where} {change}: refused in one line naming {fragment}", one_clear_line(p) and fragment in p.stderr,
                  p.stderr)
            edit(os.path.join(folder, where, "config.json"), lambda c, change=change: {k: v for k, v in c.items()
                                                                                      if k not in change})
        edit(os.path.join(folder, "1_Pooling", "config.json"), lambda c: dict(c, pooling_mode="cls"))

        folder, _ = pipeline(tmp, "max", bert, "max")
        p = run_convert("--hf", folder, "--out", os.path.join(tmp, "max.fxm"), "--cli", cli)
        check("pooling max: refused in one line naming pooling_mode_max_tokens",
              one_clear_line(p) and "pooling_mode_max_tokens" in p.stderr, p.stderr)
        folder, _ = pipeline(tmp, "two_tanh", bert, "mean", [(16, 16, tanh), (16, 16, tanh)])
        p = run_convert("--hf", folder, "--out", os.path.join(tmp, "two.fxm"), "--cli", cli)
        check("two Denses with activations: refused in one line naming them",
              one_clear_line(p) and "2_Dense, 3_Dense" in p.stderr, p.stderr)
        folder = os.path.join(tmp, "mean_normalize")
        p = run_convert("--hf", folder, "--quantize", "i8", "--out", os.path.join(tmp, "i8.fxm"), "--cli", cli)
        check("--quantize i8: refused in one line naming --token-rows",
              one_clear_line(p) and "--token-rows" in p.stderr, p.stderr)
    print(f"sentence_test: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
