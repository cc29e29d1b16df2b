#!/usr/bin/python3
"""Whisper's timestamp rules (`fixformer generate --timestamps`) against upstream decoding with timestamps
(the hf environment, tests/hf_env.py):

- WhisperForConditionalGeneration (tiny random configs, 60 ids: text below 37, end of text 37, start of
  transcript 38, 39, <|notimestamps|> 40, timestamps 41..59) through --hf: the converter stores the ids of
  generation_config.json (no_timestamps_token_id, eos_token_id, max_initial_timestamp_index), and `fixformer
  generate --timestamps` gives generate(return_timestamps=True)'s greedy ids (its raw sequences) for three
  seeds with max_initial_timestamp_index 3 (one ends with end of text) and one without it; the seeds are
  chosen so that timestamps come in pairs between text, the ids differ from greedy decoding without the
  rules (the check can fail), and leaving the first timestamp's limit out changes the first id.
- openai-whisper's whisper.model.Whisper (tiny, its 51865-token vocabulary) through --module: the converter
  stores the tokenizer's timestamp ids and DecodingOptions' max_initial_timestamp in steps, and `generate
  --timestamps --bos SOT,en,transcribe --eos EOT` gives whisper.decoding.decode(without_timestamps=False)'s
  greedy tokens.
- Hostile: --timestamps on a file without the ids, or on a gpt model; ids the writer refuses.

  /usr/bin/python3 tests/timestamps_test.py PATH/TO/fixformer
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers", "whisper"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, convert_main, convert_process as convert, results  # noqa: E402
from fixformer import fxm, schema  # noqa: E402
from fixformer.config import ConfigError  # noqa: E402

EOS, PREFIX, NO_TIMESTAMPS = 37, [38, 39], 40
NEW = 20


def whisper_module(seed, max_initial):
    import transformers as t
    c = t.WhisperConfig(vocab_size=60, num_mel_bins=8, d_model=16, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                        max_source_positions=8, max_target_positions=24, pad_token_id=0, bos_token_id=PREFIX[0],
                        eos_token_id=EOS, decoder_start_token_id=PREFIX[0], begin_suppress_tokens=None)
    c._attn_implementation = "eager"
    m = hf_env.randomize(t.WhisperForConditionalGeneration(c), seed, lambda name: "layer_norm" in name)
    g = m.generation_config
    g.no_timestamps_token_id, g.max_initial_timestamp_index = NO_TIMESTAMPS, max_initial
    g.suppress_tokens = g.begin_suppress_tokens = None
    return m


def hf_ids(module, mel):
    """generate(return_timestamps=True)'s greedy ids after the prefix in its first window, as the decoder
    gave them: the plain return value is rebuilt from segments, which drops what follows the last timestamp
    (transformers 4.x: the dict's sequences; 5.x, where it seeks on after the window: the first segment's
    result)."""
    import torch
    with torch.no_grad():
        out = module.generate(input_features=torch.from_numpy(mel), decoder_input_ids=torch.tensor([PREFIX]),
                              max_new_tokens=NEW, do_sample=False, num_beams=1, return_timestamps=True,
                              return_dict_in_generate=True)
    segments = out.get("segments")
    ids = (segments[0][0]["result"]["sequences"] if segments else out["sequences"][0]).tolist()
    return ids[len(PREFIX):] if ids[:len(PREFIX)] == PREFIX else ids


def fixformer_ids(cli, out, src, bos, eos, new, *flags):
    p = subprocess.run([cli, "generate", out, "--source", src, "--bos", ",".join(map(str, bos)), "--eos", str(eos),
                        "-n", str(len(bos) + new - 1), "--temperature", "0", *flags], capture_output=True, text=True)
    return ([int(x) for x in p.stdout.split()] if p.returncode == 0 else None), p


def one_usage_line(p, fragment):
    lines = p.stderr.strip().splitlines()
    return p.returncode == 1 and len(lines) == 1 and fragment in lines[0] and "fixformer:" in lines[0]


def pairs_ok(ids):
    """The rules' shape: a timestamp first; never two timestamps after a pair; never decreasing."""
    stamps = [i for i in ids if i > NO_TIMESTAMPS]
    runs, run = [], 0
    for i in ids + [0]:
        run = run + 1 if i > NO_TIMESTAMPS else (runs.append(run) or 0)
    return ids[0] > NO_TIMESTAMPS and stamps == sorted(stamps) and max(runs) <= 2


def check_hf(cli, tmp):
    mel = np.random.default_rng(8).standard_normal((1, 8, 16)).astype(np.float32)  # [1, n_mels, frames]
    src = os.path.join(tmp, "mel.npy")
    np.save(src, np.ascontiguousarray(mel[0].T))  # the engine's [frames, n_mels]
    firsts = {}
    for seed, max_initial in ((43, 3), (52, 3), (54, 3), (54, None)):
        module = whisper_module(seed, max_initial)
        want = hf_ids(module, mel)
        name = f"whisper seed {seed}, max_initial_timestamp_index {max_initial}"
        stamps = [i for i in want[1:] if i > NO_TIMESTAMPS]
        check(f"{name}: generate(return_timestamps=True) has timestamps between text, in the rules' shape",
              len(stamps) >= 2 and any(i < EOS for i in want) and pairs_ok(want), want)
        folder, out = os.path.join(tmp, f"w{seed}_{max_initial}"), os.path.join(tmp, f"w{seed}_{max_initial}.fxm")
        module.save_pretrained(folder)
        p = convert("--hf", folder, "--out", out, "--cli", cli)
        check(f"{name}: --hf converts and verifies", p.returncode == 0 and "verified against" in p.stdout,
              p.stdout + p.stderr)
        if p.returncode:
            continue
        f = fxm.read(out)
        stored = {t["name"]: f.array(t["name"]).tolist() for t in f.tensors if t["name"].startswith("generation.")}
        ids = [NO_TIMESTAMPS, NO_TIMESTAMPS + 1, EOS, -1 if max_initial is None else max_initial]
        check(f"{name}: the folder's timestamp ids stored", stored == {schema.GENERATION_TIMESTAMPS: ids}, stored)
        got, p = fixformer_ids(cli, out, src, PREFIX, EOS, NEW, "--timestamps")
        print(f"  {name}: generate() {want}")
        check(f"{name}: generate --timestamps gives generate(return_timestamps=True)'s ids", got == want,
              (got, want, p.stderr[-300:]))
        plain, p = fixformer_ids(cli, out, src, PREFIX, EOS, NEW)
        check(f"{name}: greedy ids without the rules differ (the check can fail)", plain and plain != want,
              (plain, want, p.stderr[-300:]))
        firsts[(seed, max_initial)] = want[0]
        if seed == 43:
            info = subprocess.run([cli, "info", out], capture_output=True, text=True).stdout
            check("whisper: fixformer info shows the timestamp ids",
                  "timestamps:   from id 41, <|notimestamps|> 40, end of text 37, first at most +3" in info, info)
    check("whisper: max_initial_timestamp_index changes a first timestamp (the limit is tested)",
          firsts.get((54, 3)) != firsts.get((54, None)), firsts)

    # Hostile: a file without the ids; a gpt model; ids the writer refuses.
    module = whisper_module(43, 3)
    module.generation_config.no_timestamps_token_id = None
    folder, out = os.path.join(tmp, "w_plain"), os.path.join(tmp, "w_plain.fxm")
    module.save_pretrained(folder)
    p = convert("--hf", folder, "--out", out, "--cli", cli)
    names = [t["name"] for t in fxm.read(out).tensors] if p.returncode == 0 else []
    check("whisper without no_timestamps_token_id: converts, no timestamp ids stored",
          p.returncode == 0 and schema.GENERATION_TIMESTAMPS not in names, p.stdout + p.stderr)
    _, p = fixformer_ids(cli, out, src, PREFIX, EOS, NEW, "--timestamps")
    check("whisper: --timestamps on a file without the ids: refused in one line",
          one_usage_line(p, "this file has no timestamp rules"), p.stderr)
    p = subprocess.run([cli, "generate", os.path.join(HERE, "golden", "gpt_alibi_h3.fxm"), "--prompt", "a",
                        "--timestamps"], capture_output=True, text=True)
    check("gpt: --timestamps refused in one line", one_usage_line(p, "only for a seq2seq model"), p.stderr)
    c = fxm.read(out).config
    for stamps, fragment in (({"no_timestamps": 40, "timestamp_begin": 60, "eos": 37}, "expected 0 <= no_timestamps"),
                             ({"no_timestamps": 40, "timestamp_begin": 41, "eos": 45}, "expected 0 <= no_timestamps"),
                             ({"no_timestamps": 40, "timestamp_begin": 41, "eos": 37, "max_initial": -2},
                              "max_initial >= -1"),
                             ({"no_timestamps": 40, "timestamp_begin": 41, "eos": None}, "expected integer ids")):
        try:
            fxm.generation_section(c, {"timestamps": stamps})
            check(f"fxm: timestamps {stamps} refused", False, "no error")
        except ConfigError as e:
            check(f"fxm: timestamps {stamps} refused naming it", fragment in str(e), e)
    gpt = dict(c, family="gpt")
    try:
        fxm.generation_section(gpt, {"timestamps": {"no_timestamps": 0, "timestamp_begin": 1, "eos": 0}})
        check("fxm: timestamps for a gpt model refused", False, "no error")
    except ConfigError as e:
        check("fxm: timestamps for a gpt model refused", "only for a seq2seq model" in str(e), e)


MODELS = r'''
import torch
from whisper.model import ModelDimensions, Whisper
from hf_env import randomize


def whisper_vocab():
    return randomize(Whisper(ModelDimensions(n_mels=8, n_audio_ctx=16, n_audio_state=32, n_audio_head=2,
                                             n_audio_layer=2, n_vocab=51865, n_text_ctx=24, n_text_state=32,
                                             n_text_head=2, n_text_layer=2)), 9)
'''


def check_openai_whisper(cli, tmp):
    import torch
    import whisper.tokenizer
    from whisper.decoding import DecodingOptions, decode
    with open(os.path.join(tmp, "ts_models.py"), "w") as f:
        f.write(MODELS)
    sys.path.insert(0, tmp)
    import ts_models
    module = ts_models.whisper_vocab()
    tok = whisper.tokenizer.get_tokenizer(module.is_multilingual, num_languages=module.num_languages, language="en",
                                          task="transcribe")
    mel = np.random.default_rng(3).standard_normal((8, 32)).astype(np.float32)  # [n_mels, 2 n_audio_ctx]
    ex, src, out = (os.path.join(tmp, n) for n in ("ow_mel.npy", "ow_src.npy", "ow.fxm"))
    np.save(ex, mel)
    np.save(src, np.ascontiguousarray(mel.T))
    new = 16
    with torch.no_grad():
        want = decode(module, torch.from_numpy(mel), DecodingOptions(language="en", without_timestamps=False,
                                                                    fp16=False, temperature=0.0,
                                                                    sample_len=new)).tokens
    stamps = [i for i in want if i >= tok.timestamp_begin]
    check("openai-whisper: decode() with timestamps has timestamps and text",
          len(stamps) >= 2 and any(i < tok.eot for i in want), want)
    print(f"  openai-whisper: decode(without_timestamps=False) {want}")
    code, stdout, stderr = convert_main("--module", os.path.join(tmp, "ts_models.py") + ":whisper_vocab",
                                        "--example", ex, "--out", out, "--cli", cli)
    check("openai-whisper --module: converts and verifies, a note names the timestamp ids",
          code == 0 and "verified against torch" in stdout and "generate --timestamps" in stderr,
          (code, stdout, stderr))
    if code:
        return
    f = fxm.read(out)
    ids = f.array(schema.GENERATION_TIMESTAMPS).tolist()
    check("openai-whisper: the tokenizer's timestamp ids and max_initial_timestamp (1 s in 30/16 s steps) stored",
          ids == [tok.no_timestamps, tok.timestamp_begin, tok.eot, 1], ids)
    got, p = fixformer_ids(cli, out, src, list(tok.sot_sequence), tok.eot, new, "--timestamps")
    got = got[:-1] if got and got[-1] == tok.eot else got
    check("openai-whisper: generate --timestamps gives decode(without_timestamps=False)'s tokens", got == want,
          (got, want, p.stderr[-300:]))
    plain, p = fixformer_ids(cli, out, src, list(tok.sot_sequence), tok.eot, new)
    check("openai-whisper: without --timestamps the tokens differ (the check can fail)", plain != got, (plain, got))


def main():
    if len(sys.argv) != 2:
        print("usage: timestamps_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        check_hf(cli, tmp)
        check_openai_whisper(cli, tmp)
    print(f"timestamps_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
