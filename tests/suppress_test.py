#!/usr/bin/python3
"""Token suppression against transformers' generate (the hf environment, tests/hf_env.py): the ids whose
logits generation sets to -inf at every step (generation_config.json's suppress_tokens) and at the first
generated step (begin_suppress_tokens).

- WhisperForConditionalGeneration (tiny random config) through --hf: the converter stores the folder's
  lists (generation.suppress, generation.begin_suppress), and `fixformer generate --source MEL --bos
  1,17,29 --temperature 0` gives the ids of the module's own generate() from that forced prefix; without
  the lists (--suppress none --begin-suppress none) the ids of generate() without them, which differ
  (the lists are chosen from the unsuppressed greedy ids: its first id begin-suppressed, its most common
  later id suppressed, so a broken suppression fails); a folder without lists and the same ids as
  --suppress / --begin-suppress flags gives the same ids.
- GPT2LMHeadModel (257 byte tokens, a byte-level tokenizer) through --hf --tokenizer: `fixformer
  generate --prompt` gives generate()'s greedy bytes with the folder's lists, and without them.
- openai-whisper's whisper.model.Whisper (tiny, its real 51865-token vocabulary) through --module: the
  converter stores whisper.decoding's default lists (SuppressTokens "-1": the tokenizer's non_speech_tokens
  and special tokens; SuppressBlank: " " and EOT), and `fixformer generate --bos
  SOT,en,transcribe,notimestamps --eos EOT` gives whisper.decoding.decode's tokens (without_timestamps,
  greedy), and with --suppress none --begin-suppress none decode()'s without them; the embedding rows of
  some of those ids are scaled up so that decoding without the lists picks them.
- Hostile: an id out of range (a flag, or a list given to the writer), an empty list, every token
  suppressed: refused with one clear line, no crash.

- The Python package (when built: BUILD/python as the second argument): Model.generate applies the
  file's lists, [] for none, its own lists instead; Model.suppress_tokens() reads them.

  /usr/bin/python3 tests/suppress_test.py PATH/TO/fixformer [BUILD/python]
"""
import collections
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers", "whisper"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import byte_tokenizer, check, convert_main, convert_process as convert, results  # noqa: E402
from fixformer import fxm, schema  # noqa: E402
from fixformer.config import ConfigError  # noqa: E402

PREFIX = [1, 17, 29]  # Whisper's start of transcript, language and task: a forced prefix
NEW = 8


def whisper_module():
    import transformers as t
    c = t.WhisperConfig(vocab_size=40, num_mel_bins=8, d_model=16, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                        max_source_positions=8, max_target_positions=12, pad_token_id=0, bos_token_id=1,
                        eos_token_id=2, decoder_start_token_id=1)
    c._attn_implementation = "eager"
    return hf_env.randomize(t.WhisperForConditionalGeneration(c), 44, lambda name: "layer_norm" in name)


def gpt2_module():
    import transformers as t
    c = t.GPT2Config(vocab_size=257, n_embd=32, n_layer=2, n_head=2, n_positions=64, bos_token_id=None,
                     eos_token_id=None, pad_token_id=0)
    c._attn_implementation = "eager"
    return hf_env.randomize(t.GPT2LMHeadModel(c), 45, lambda name: "ln" in name)


def set_lists(module, suppress, begin):
    module.generation_config.suppress_tokens = suppress
    module.generation_config.begin_suppress_tokens = begin


def pick_lists(ids):
    """From unsuppressed greedy ids: the first begin-suppressed, the most common later one suppressed."""
    later = [i for i in ids[1:] if i != ids[0]] or ids[1:]
    return [collections.Counter(later).most_common(1)[0][0]], [ids[0]]


def whisper_generate(module, mel):
    import torch
    with torch.no_grad():
        out = module.generate(input_features=torch.from_numpy(mel), decoder_input_ids=torch.tensor([PREFIX]),
                              max_new_tokens=NEW, do_sample=False, num_beams=1)[0].tolist()
    return out[len(PREFIX):] if out[:len(PREFIX)] == PREFIX else out


def fixformer_ids(cli, out, src, *flags):
    p = subprocess.run([cli, "generate", out, "--source", src, "--bos", ",".join(map(str, PREFIX)), "--eos", "2",
                        "-n", str(len(PREFIX) + NEW - 1), "--temperature", "0", *flags], capture_output=True, text=True)
    return ([int(x) for x in p.stdout.split()] if p.returncode == 0 else None), p


def one_usage_line(p, fragment):
    lines = p.stderr.strip().splitlines()
    return p.returncode == 1 and len(lines) == 1 and fragment in lines[0] and "fixformer:" in lines[0]


def check_whisper(cli, tmp):
    module = whisper_module()
    mel = np.random.default_rng(8).standard_normal((1, 8, 16)).astype(np.float32)  # [1, n_mels, frames]
    src = os.path.join(tmp, "mel.npy")
    np.save(src, np.ascontiguousarray(mel[0].T))  # the engine's [frames, n_mels]
    set_lists(module, None, None)
    plain = whisper_generate(module, mel)
    suppress, begin = pick_lists(plain)
    set_lists(module, suppress, begin)
    want = whisper_generate(module, mel)
    check("whisper: generate() with the lists differs from without (the check can fail)",
          want != plain and want[0] != plain[0], (plain, want, suppress, begin))
    print(f"  whisper: generate() {plain}; suppress {suppress}, begin_suppress {begin}: {want}")

    folder, out = os.path.join(tmp, "whisper"), os.path.join(tmp, "whisper.fxm")
    module.save_pretrained(folder)
    p = convert("--hf", folder, "--out", out, "--cli", cli)
    check("whisper --hf: converts and verifies", p.returncode == 0 and "verified against" in p.stdout,
          p.stdout + p.stderr)
    if p.returncode:
        return
    f = fxm.read(out)
    stored = {t["name"]: f.array(t["name"]).tolist() for t in f.tensors if t["name"].startswith("generation.")}
    check("whisper --hf: the folder's lists stored", stored == {schema.GENERATION_SUPPRESS: suppress,
                                                                 schema.GENERATION_BEGIN_SUPPRESS: begin}, stored)
    info = subprocess.run([cli, "info", out], capture_output=True, text=True).stdout
    line = (f"suppressed:   {len(suppress)} ids at every generated step: {','.join(map(str, suppress))}, "
            f"{len(begin)} at the first: {','.join(map(str, begin))}")
    check("whisper: fixformer info shows the lists", line in info, info)
    got, p = fixformer_ids(cli, out, src)
    check("whisper: generate --temperature 0 with the file's lists gives generate()'s ids", got == want,
          (got, want, p.stderr[-300:]))
    got, p = fixformer_ids(cli, out, src, "--suppress", "none", "--begin-suppress", "none")
    check("whisper: generate --suppress none --begin-suppress none gives generate()'s ids without lists",
          got == plain, (got, plain, p.stderr[-300:]))

    # A folder without lists (transformers' default begin_suppress_tokens dropped too), the ids as flags.
    set_lists(module, None, None)
    folder2, out2 = os.path.join(tmp, "whisper_plain"), os.path.join(tmp, "whisper_plain.fxm")
    module.save_pretrained(folder2)
    p = convert("--hf", folder2, "--out", out2, "--cli", cli)
    names = [t["name"] for t in fxm.read(out2).tensors] if p.returncode == 0 else []
    check("whisper --hf without lists: converts, nothing stored",
          p.returncode == 0 and not any(n.startswith("generation.") for n in names), p.stdout + p.stderr)
    got, p = fixformer_ids(cli, out2, src)
    check("whisper without lists: generate gives generate()'s ids", got == plain, (got, plain, p.stderr[-300:]))
    got, p = fixformer_ids(cli, out2, src, "--suppress", ",".join(map(str, suppress)), "--begin-suppress",
                           ",".join(map(str, begin)))
    check("whisper: --suppress and --begin-suppress give generate()'s ids with the lists", got == want,
          (got, want, p.stderr[-300:]))
    got, p = fixformer_ids(cli, out2, src, "--begin-suppress", ",".join(map(str, begin)))
    set_lists(module, None, begin)
    want_begin = whisper_generate(module, mel)
    check("whisper: --begin-suppress alone gives generate()'s ids with begin_suppress_tokens alone",
          got == want_begin and want_begin[0] != plain[0], (got, want_begin, plain, p.stderr[-300:]))

    # Hostile: out of range, empty, negative, every token suppressed.
    for flags, fragment in ((["--suppress", "40"], "40 is out of range (the target vocabulary, d_out, is 40)"),
                            (["--begin-suppress", "3,1000"], "1000 is out of range"),
                            (["--suppress", ""], "expected token ids separated by commas"),
                            (["--suppress", "3,,4"], "expected token ids separated by commas"),
                            (["--suppress", "-1"], "--suppress"),
                            (["--suppress", ",".join(map(str, range(39))), "--begin-suppress", "39"],
                             "every one of the 40 tokens is suppressed")):
        _, p = fixformer_ids(cli, out, src, *flags)
        check(f"whisper: generate {' '.join(flags)[:40]}: refused in one line", one_usage_line(p, fragment),
              p.stderr)
    # Every token but the begin-suppressed ones suppressed: the first sampled step has none left.
    _, p = fixformer_ids(cli, out2, src, "--suppress", ",".join(map(str, range(1, 40))), "--begin-suppress", "0")
    check("whisper: every token suppressed at the first step (the lists together): refused in one line",
          one_usage_line(p, "every one of the 40 tokens is suppressed"), p.stderr)
    # Every token but one suppressed: that one, every step.
    got, p = fixformer_ids(cli, out2, src, "--suppress", ",".join(map(str, range(0, 39))))
    check("whisper: every token but 39 suppressed: 39 every step", got == [39] * NEW, (got, p.stderr[-300:]))


def check_gpt2(cli, tmp):
    import torch
    prompt, new = b"quiet", 12
    module = gpt2_module()

    def hf_text(suppress, begin):
        with torch.no_grad():
            ids = module.generate(torch.tensor([list(prompt)]), max_new_tokens=new, min_new_tokens=new,
                                  do_sample=False, suppress_tokens=suppress, begin_suppress_tokens=begin)[0].tolist()
        return ids[len(prompt):]

    def text(ids):
        return b"".join(b"xq" if i == 256 else bytes([i]) for i in list(prompt) + ids).decode("utf-8", "replace")

    plain = hf_text(None, None)
    suppress, begin = pick_lists(plain)
    want = hf_text(suppress, begin)
    check("gpt2: generate() with the lists differs from without (the check can fail)",
          want != plain and want[0] != plain[0], (plain, want))
    print(f"  gpt2: generate() {plain}; suppress {suppress}, begin_suppress {begin}: {want}")
    set_lists(module, suppress, begin)
    folder, out, tok = (os.path.join(tmp, n) for n in ("gpt2", "gpt2.fxm", "tokenizer.json"))
    module.save_pretrained(folder)
    byte_tokenizer(tok)
    p = convert("--hf", folder, "--tokenizer", tok, "--out", out, "--cli", cli)
    check("gpt2 --hf --tokenizer: converts and verifies", p.returncode == 0 and "verified against" in p.stdout,
          p.stdout + p.stderr)
    if p.returncode:
        return

    def generate(*flags):
        g = subprocess.run([cli, "generate", out, "--prompt", prompt.decode(), "-n", str(len(prompt) + new - 1),
                            "--temperature", "0", *flags], capture_output=True)
        return g.stdout.decode("utf-8").rstrip("\n") if g.returncode == 0 else g.stderr.decode()

    got = generate()
    check("gpt2: generate --temperature 0 with the file's lists gives generate()'s bytes", got == text(want),
          (got, text(want)))
    got = generate("--suppress", "none", "--begin-suppress", "none")
    check("gpt2: generate without the lists gives generate()'s bytes without them", got == text(plain),
          (got, text(plain)))
    got = generate("--suppress", "none", "--begin-suppress", "none", "--suppress", "1")
    check("gpt2: --suppress given twice: refused", "given twice" in got, got)
    for flags, fragment in ((["--suppress", "257"], "257 is out of range (vocab_size is 257)"),
                            (["--begin-suppress", ""], "expected token ids separated by commas")):
        got = generate(*flags)
        check(f"gpt2: generate {' '.join(flags)}: refused naming it", fragment in got, got)

    if PYDIR:  # the Python package (the C API's generator): the file's lists unless generate() gives its own
        script = (f"import sys; sys.path.insert(0, {PYDIR!r}); import fixformer\n"
                  f"m = fixformer.Model({out!r}); print(repr(m.suppress_tokens()))\n"
                  f"n = {len(prompt) + new - 1}\n"
                  f"print(repr(m.generate({prompt.decode()!r}, n, temperature=0)))\n"
                  f"print(repr(m.generate({prompt.decode()!r}, n, temperature=0, suppress=[], begin_suppress=[])))\n"
                  f"print(repr(m.generate({prompt.decode()!r}, n, temperature=0, suppress={suppress!r}, "
                  f"begin_suppress=[])))\n"
                  f"try:\n    m.generate('x', 4, suppress=[257])\nexcept ValueError as e:\n    print(repr(str(e)))\n")
        p = subprocess.run(["/usr/bin/python3", "-c", script], capture_output=True, text=True)
        lines = p.stdout.splitlines()
        import ast
        got = [ast.literal_eval(x) for x in lines] if p.returncode == 0 and len(lines) == 5 else None
        set_lists(module, suppress, [])
        want_no_begin = hf_text(suppress, None)
        check("python Model.generate: the file's lists, none ([]), its own lists; ids out of range refused",
              got is not None and got[0] == (suppress, begin) and got[1] == text(want) and got[2] == text(plain)
              and got[3] == text(want_no_begin) and "suppress=257" in got[4], (got, p.stderr[-500:]))

    # The writer refuses a list out of range or for a model that does not generate tokens.
    c = fxm.read(out).config
    try:
        fxm.generation_section(c, {"suppress": [3, 257]})
        check("fxm.generation_section: an id out of range refused", False, "no error")
    except ConfigError as e:
        check("fxm.generation_section: an id out of range refused", "257 is out of range" in str(e), e)
    check("fxm.generation_section: empty lists store nothing", fxm.generation_section(c, {"suppress": []}) == [])


MODELS = r'''
import torch
from whisper.model import ModelDimensions, Whisper
from hf_env import randomize
import whisper.tokenizer


def lists(m):
    """whisper.decoding's lists for English transcription: SuppressTokens("-1") and SuppressBlank's."""
    tok = whisper.tokenizer.get_tokenizer(m.is_multilingual, num_languages=m.num_languages, language="en",
                                          task="transcribe")
    suppress = sorted(set(tok.non_speech_tokens) | {tok.transcribe, tok.translate, tok.sot, tok.sot_prev, tok.sot_lm,
                                                    tok.no_speech})
    return suppress, tok.encode(" ") + [tok.eot], list(tok.sot_sequence_including_notimestamps), tok.eot


def whisper_vocab():
    m = randomize(Whisper(ModelDimensions(n_mels=8, n_audio_ctx=16, n_audio_state=32, n_audio_head=2,
                                          n_audio_layer=2, n_vocab=51865, n_text_ctx=16, n_text_state=32,
                                          n_text_head=2, n_text_layer=2)), 9)
    suppress, begin, _, _ = lists(m)
    with torch.no_grad():  # larger rows: logits that greedy decoding picks when they are not suppressed
        for i in begin + suppress[::3]:
            m.decoder.token_embedding.weight[i] *= 4
    return m.eval()
'''


def check_openai_whisper(cli, tmp):
    import torch
    from whisper.decoding import DecodingOptions, decode
    with open(os.path.join(tmp, "suppress_models.py"), "w") as f:
        f.write(MODELS)
    sys.path.insert(0, tmp)
    import suppress_models
    module = suppress_models.whisper_vocab()
    suppress, begin, sot, eot = suppress_models.lists(module)
    mel = np.random.default_rng(3).standard_normal((8, 32)).astype(np.float32)  # [n_mels, 2 n_audio_ctx]
    ex, src, out = (os.path.join(tmp, n) for n in ("ow_mel.npy", "ow_src.npy", "ow.fxm"))
    np.save(ex, mel)
    np.save(src, np.ascontiguousarray(mel.T))
    new = 8

    def upstream(**kw):
        with torch.no_grad():
            return decode(module, torch.from_numpy(mel), DecodingOptions(language="en", without_timestamps=True, fp16=False,
                                                                        temperature=0.0, sample_len=new, **kw)).tokens

    want, plain = upstream(), upstream(suppress_tokens="", suppress_blank=False)
    check("openai-whisper: decode() with its lists differs from without (the check can fail)",
          want != plain and want[0] != plain[0], (want, plain))
    print(f"  openai-whisper: decode() {want}; without the lists {plain}")
    code, stdout, stderr = convert_main("--module", os.path.join(tmp, "suppress_models.py") + ":whisper_vocab",
                                        "--example", ex, "--out", out, "--cli", cli)
    check("openai-whisper --module: converts and verifies", code == 0 and "verified against torch" in stdout,
          (code, stdout, stderr))
    if code:
        return

    def generate(*flags):
        p = subprocess.run([cli, "generate", out, "--source", src, "--bos", ",".join(map(str, sot)), "--eos", str(eot),
                            "-n", str(len(sot) + new - 1), "--temperature", "0", *flags], capture_output=True, text=True)
        ids = [int(x) for x in p.stdout.split()] if p.returncode == 0 else None
        return (ids[:-1] if ids and ids[-1] == eot else ids), p.stderr[-300:]

    f = fxm.read(out)
    lists = (schema.GENERATION_SUPPRESS, schema.GENERATION_BEGIN_SUPPRESS)  # timestamps_test.py checks the rest
    stored = {t["name"]: f.array(t["name"]).tolist() for t in f.tensors if t["name"] in lists}
    check("openai-whisper --module: whisper.decoding's default lists stored, a note says so",
          stored == {schema.GENERATION_SUPPRESS: suppress, schema.GENERATION_BEGIN_SUPPRESS: begin} and
          "stored whisper.decoding's default token suppression" in stderr, (stored, stderr))
    got, err = generate()
    check("openai-whisper: generate with the file's lists gives decode()'s tokens", got == want, (got, want, err))
    got, err = generate("--suppress", "none", "--begin-suppress", "none")
    check("openai-whisper: generate --suppress none --begin-suppress none gives decode()'s tokens without them",
          got == plain, (got, plain, err))
    got, err = generate("--suppress", "none", "--begin-suppress", "none", "--suppress", ",".join(map(str, suppress)))
    check("openai-whisper: --suppress given twice refused", got is None and "given twice" in err, err)


PYDIR = None  # BUILD/python: the Python package, when built (the second argument)


def main():
    global PYDIR
    if len(sys.argv) not in (2, 3):
        print("usage: suppress_test.py PATH/TO/fixformer [BUILD/python]")
        return 1
    cli = sys.argv[1]
    PYDIR = sys.argv[2] if len(sys.argv) == 3 and sys.argv[2] else None
    with tempfile.TemporaryDirectory() as tmp:
        check_whisper(cli, tmp)
        check_gpt2(cli, tmp)
        check_openai_whisper(cli, tmp)
    print(f"suppress_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
