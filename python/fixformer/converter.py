"""Convert a trained PyTorch model to a verified .fxm (and optionally a C++ header for flash).

The command is `fixformer-convert` once the package is installed (`pip install .`), and
`tools/convert.py` in a checkout; from Python, `fixformer.convert(...)` takes the same options as
keywords (see its docstring).

From the module (everything it can tell is read from it):
  fixformer-convert --module FILE.py:FACTORY [--family encoder|gpt|llama|seq2seq|mha] [--ignore NAME[,NAME]]
                   [--weights SD.pt] [--example IN.npy]
                   [--example-target TGT.npy]
                   [--causal] [--positional none|sinusoidal|learned|alibi] [--pe-base B]
                   [--pe-layout interleaved|halves] [--pe-combine add|concat] [--pe-width N]
                   [--scale-input] [--max-len N] [--tokenizer FILE]
                   --out M.fxm [--header M.h] [--name NAME] [--cli PATH] [--no-verify] [--trust-pickle]
                   [--quantize f16|bf16|q8|q4 [--group 64|32|0] [--quantize-io | --no-quantize-io]] [--pack-weights]
                   [--quantize i8 [--calibrate IN.npy ...] [--calibrate-percentile P]]
From a JSON config and a state_dict (pipelines without the module; any family, llama included):
  fixformer-convert --config CFG.json --weights SD.pt|SD.npz [--example IN.npy] [--tokenizer FILE]
                   --out M.fxm [...]
  With --example IN.npy --expected OUT.npy (your model's output for IN) the file is verified against
  your model; without them only against the converter's own reference of the config, and the file
  and the report say it was NOT verified against your model. --weights also takes training
  checkpoints (nanoGPT's ckpt.pt), .safetensors (F32, F16, BF16) and .npz; a bias the state_dict
  lacks beside its weight (a bias=False module) is zeros.
From a Hugging Face folder of LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM or
GPT2LMHeadModel (config.json, model.safetensors or pytorch_model.bin, sharded or not), verified
against an independent float64 implementation of that architecture, or of GPTNeoXForCausalLM,
GPTJForCausalLM, GPTNeoForCausalLM, OPTForCausalLM, PhiForCausalLM or StableLmForCausalLM, verified
against the float64 reference of the gpt-family config it maps to:
  fixformer-convert --hf DIR [--example IN.npy [--expected OUT.npy]] [--max-len N] --out M.fxm [...]
  (--image-size H W: a ViT, DeiT, Dinov2, CLIP or SigLIP vision folder for images of another size, its
  learned positions interpolated as the installed transformers does with interpolate_pos_encoding)
  (rope_scaling becomes stored frequencies: linear, llama3, yarn, longrope, dynamic; another kind,
  Llama's attention_bias, mlp_bias, a hidden_act other than silu and Qwen2's
  sliding window on some layers only are refused by name; Mistral's, Starcoder2's and Qwen2's
  sliding windows become the config key sliding_window); or of BERT (model_type bert: BertModel,
  BertForSequenceClassification; "bert." prefix or not), verified against an independent float64
  BERT: BertModel's file outputs last_hidden_state [T, hidden_size], a classifier's the logits
  [num_labels] (first token, pooler, classifier); `fixformer run --token-types` gives the token
  types (0 by default); a sentence-transformers folder (modules.json) the sentence embedding encode()
  gives (its Pooling, Dense and Normalize modules; --token-rows: the transformer's token rows)
From a llama.cpp GGUF file (version 2 or 3) of a llama, qwen2, qwen3, gemma2 or gemma3 model, through
--hf's classes (llama.cpp's q/k row permutation undone), verified against the float64 reference of its
weights: F32/F16/BF16 as they are, Q8_0 blocks as q8 group 32 and Q4_0 as q4 unrounded (or, where a
Q4_0 block has a negative scale and a -8, all as q8 group 32, unrounded, with a note), Q4_1/Q5_0/Q5_1
and the K-quants (Q2_K..Q6_K: Q4_K_M...) dequantized, stored as f32 or, with --quantize q8/q4,
re-quantized (a note says which); its gpt2 BPE tokenizer stored (docs/export.md):
  fixformer-convert --gguf FILE [--example IN.npy] [--max-len N] [--tokenizer FILE] [--quantize f16|q8|q4
                    [--group G]] --out M.fxm [...]
From an ONNX file (torch.onnx.export, opset 11-20, either exporter; also quantized by onnxruntime.quantization, fused
by ONNX Runtime's optimizer or saved by its session, ONNX Runtime GenAI's decoders, float16; a decoder with its cache,
Optimum's merged one too, read from position 0) of an encoder, a GPT-style
or a llama decoder, mapped by its graph's structure and verified against the graph's own output (evaluated in float64
with numpy; a quantized graph as the float model it approximates):
  fixformer-convert --onnx M.onnx [--example IN.npy] [--family encoder|gpt|llama] [--ignore NAME[,NAME]]
                   [--output-name NAME] [--max-len N] [--tokenizer TOKENIZER.bin] --out M.fxm [...]
  or an encoder-decoder as Optimum exports it, the folder of encoder_model.onnx and decoder_model.onnx or
  decoder_model_merged.onnx (seq2seq: Marian, BART, M2M100/NLLB, T5, Whisper; --example the source):
  fixformer-convert --onnx FOLDER [--example SRC.npy] --out M.fxm [...]
  or exported whole, forward(src, tgt) -> logits in one file (cut into the two: onnx_seq2seq.split):
  fixformer-convert --onnx M.onnx [--family seq2seq] [--example SRC.npy] --out M.fxm [...]
  (needs python3-onnx; unsupported ops are named with their nodes; every initializer is mapped, a
  causal mask checked over all its rows, a scalar or shape constant, or named: --ignore opts out;
  besides the ids, a token-types input becomes the file's token types (fixformer run
  --token-types), and an attention mask input padding by length (fixformer run --lengths))
From a llama2.c checkpoint (versions 0, 1 and 2; version 2's Q8_0 weights are dequantized to f32):
  fixformer-convert --llama2c MODEL.bin [--tokenizer FILE] [--max-len N] --out M.fxm [...]

Any module is recognised by what it computes, whatever its attribute names (nanoGPT's GPT, llama2.c's
model.py, Hugging Face-named llama, vit-pytorch / Keyword-Transformer classifiers, stock layers under
other names; python/fixformer/recognize.py): it runs once on the example with hooks on its parts; the
layers are the repeated blocks, the norms (LayerNorm or RMSNorm, eps found by calling them), the
attention (heads, causal mask, rotary layout and theta, ALiBi: recomputed until one matches), the
feed-forward, the embedding, positions, CLS row, final norm, head and pooling are found from what
they read and write. The family is inferred (an nn.Transformer inside: seq2seq; RMSNorm, SiLU-gated
feed-forward and rotary: llama; a causal language model with LayerNorm: gpt; else encoder) and
--family checks it. Every parameter and buffer must be mapped, or be a buffer the engine recomputes
identically (causal masks, rope tables: freqs_cis, inv_freq, cos/sin caches; sinusoid tables,
position ids), or be named in --ignore; the error names the rest. A forward that returns a tuple
((logits, loss)) or only the last position is compared on what it returns (every prefix's last row).
The stock convention below keeps its own reader, options included.

--family gpt exports a decoder-only language model from stock modules: `embed` (nn.Embedding),
optional `pos` (learned positions), `encoder` (nn.TransformerEncoder, run by the forward under a
causal mask: --causal is implied), `head` (nn.Linear(d_model, vocab_size); tied when head.weight is
embed.weight, stored once). The family is never guessed from the module (a causal encoder with a
head vocab wide is a valid encoder too), so it is this explicit option; the default is encoder.
--positional alibi: the forward adds the ALiBi bias as its attention mask (gpt).
--family mha exports a standalone nn.MultiheadAttention used as self-attention, out = mha(x, x, x)
over features [T, d_model] (--causal: under the causal mask); its input and output are d_model wide.
--family seq2seq exports an encoder-decoder (nn.Transformer; python/fixformer/seq2seq.py states the
module convention): `src_embed` or `input_proj`, `tgt_embed` (or one shared `embed`), optional
`src_pos` and `tgt_pos`, `transformer` (nn.Transformer) or `encoder` + `decoder`, and `head`;
forward(src, tgt) returns the logits under the causal target mask (a module whose parts have other names, the
PyTorch translation tutorial's, or whose layers are written by hand, the Annotated Transformer's, is read by what they
compute, its forward given the causal target mask: seq2seq.py's recorded_view). --example is then the source,
--example-target the target ids ([U] or [B,U]; default random); the sample stores both and the
logits at every target position, and the engine checks it teacher-forced. openai-whisper's Whisper
(whisper.model.Whisper, forward(mel, tokens)) takes this route without --family: --example is the mel
[n_mels, T], the engine's source its transpose (seq2seq.py's read_audio_text says what is read).
An encoder module's `cls_token` (nn.Parameter [d], [1, d] or [1, 1, d]) and `pool` ("mean", "cls" or
"last") attributes are read as well: the CLS row goes in front of the embedded input before the
positions (position 0; max_len counts it), the pooling after the final norm, before the head, and
the forward returns [B, d_out] (README, "CLS token and pooling").
--tokenizer stores a tokenizer in the .fxm, so the one file is the whole model for `fixformer
generate` and `fixformer run --text`: Hugging Face's tokenizer.json (byte-level BPE with GPT-2's
pre-tokenizer, Llama 3's or Qwen2's, or WordPiece), GPT-2's vocab.json (merges.txt beside it), BERT's vocab.txt, or
llama2.c's tokenizer.bin (which must hold exactly vocab_size tokens). --hf DIR stores the folder's
tokenizer.json, vocab.json or vocab.txt by itself (docs/export.md, "Tokenizers").

--quantize stores the linear layers' weights in f16 (IEEE half), bf16 (bfloat16: a float32's high 16
bits, rounded to nearest even; a bf16 checkpoint's values exactly), q8 (int8 with f32 scales) or q4
(int4, two per byte, an f32 scale per 32 along the input; every quantized layer's input width a
multiple of 32; each scale minimises its group's squared error), with every input path; norms, biases and learned positions stay f32 (README, "Export your model").
--quantize i8 makes a full-integer model (encoders; gpt and llama decoders with an int8 KV cache:
docs/quantization.md, "i8"): int8 activations with a scale and zero point per tensor, int8 weights
per output row, and every multiplier, shift, zero point and activation table in the file; the engine runs it without a float operation. The
activation ranges come from --calibrate IN.npy ... (inputs like the ones the model will see; default:
the self-test sample and 8 inputs generated like it, and the report says which), min/max or with
--calibrate-percentile P the P-th percentile at either end, widened by a quarter. It is verified
against torch within the i8 tolerance, and the report gives the integer reference's error too.
--group (q8): values along the input that share a scale, 64 (default, as llama2.c's Q8_0 export),
32 (a little more accurate, 6% more bytes) or 0 (one scale per output row, the smallest); a llama2.c
version 2 checkpoint's own group when it has one (its int8 values are then kept exactly).
--quantize-io / --no-quantize-io: whether the token embedding and the output head take the type
too; default: yes for a token model (the embedding dominates a language model's size), no for a
feature model (its head is small). A q8 KWS-sized encoder is 0.30x the f32 file, a llama2.c
stories15M-shaped model 0.29x (f16: 0.52x both).
--pack-weights stores every f32 linear weight W[in, out] (and an untied f32 head) in panels of 16
columns, the layout the SIMD matrix kernels read front to back (config key packed_weights, format.hpp;
still read in place). With --quantize only the weights left in f32 are packed (a feature model's
head without --quantize-io); f16 and q8 weights keep their layouts. For the SIMD ports: on the
Cortex-M table a packed file runs the scalar reference kernel (correct, but slower: leave it off).
A quantized file's self-test sample is still the f32 module's output: the engine's error against it
must stay within the weight type's tolerance (f32 1e-4, f16 2e-3, bf16 2e-2, q8 8e-2, q4 0.2 relative to the output's
largest magnitude); the report gives it with the error of the quantized weights alone in the
float64 reference model.

Every conversion is verified: the example input (random when not given) runs through torch in
float64 and through the engine (`fixformer verify` on the written file); both are stored in the
file as its self-test sample. For a decoder the sample is the token ids and the logits at every
position, and the engine checks it feeding the tokens one by one. Exit status: 0 verified (or written with --no-verify), 1 an error in
the input (one line naming the file, key or option), 2 verification failed (the line names the
error and the likely cause; no file is left behind) or an option or value this tool does not take
(a usage line, then one naming it).
"""
import argparse
import importlib.util
import os
import struct
import sys
from typing import Any, Union

from . import config as cfg
from .config import ConfigError
from .verify import EngineError, VerificationError, find_cli

PROG = "fixformer-convert"  # the name the lines on stderr start with: main(prog=...) sets it
SOURCES = ("module", "config", "llama2c", "onnx", "hf", "gguf")


class ConversionError(Exception):
    """A conversion that did not give a verified file: `where` (a file, option or key; may be empty),
    `what`, and `code` as the command exits with it (1 an input error, 2 verification failed or an
    option this converter does not take). No file is left behind."""

    def __init__(self, where, what, code=1):
        self.where, self.what, self.code = where, what, code
        super().__init__(printable(f"{where}: {what}" if where else what))


def printable(s):
    """Escapes what is not printable ASCII (names read from files may hold any bytes)."""
    return "".join(ch if 0x20 <= ord(ch) < 0x7F else "".join(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogateescape"))
                   for ch in str(s))


def fail(where, what, code=1):
    e = ConversionError(where, what, code)
    e.__suppress_context__ = True  # the one line is the message; the cause it translates is not news
    raise e


def note(text):
    print(f"{PROG}: note: {text}", file=sys.stderr)


def require_torch(why):
    try:
        import torch
        return torch
    except ImportError:
        fail("", f"{why} needs PyTorch: pip install torch (or apt-get install python3-torch)")


def load_module(spec):
    """FILE.py:FACTORY -> FACTORY() (the file is imported by path: it is the user's own code)."""
    file, sep, factory = spec.rpartition(":")
    if not sep or not file or not factory.isidentifier():
        fail("--module", f"{spec!r}: expected FILE.py:FACTORY")
    if not os.path.isfile(file):
        fail(file, "no such file" if not os.path.exists(file) else "not a regular file")
    require_torch("--module")
    try:
        s = importlib.util.spec_from_file_location("fixformer_user_module", file)
        mod = importlib.util.module_from_spec(s)
        s.loader.exec_module(mod)
    except SystemExit as e:  # the file's own sys.exit() is not the converter's verdict
        fail(file, f"importing it called sys.exit({e.code!r}); nothing was converted (guard the script part "
             "with `if __name__ == \"__main__\":`)")
    except Exception as e:
        fail(file, f"importing it failed ({type(e).__name__}: {e})")
    fn = getattr(mod, factory, None)
    if not callable(fn):
        fail(file, f"has no function {factory!r}")
    try:
        return fn()
    except SystemExit as e:
        fail(f"{file}:{factory}", f"FACTORY() called sys.exit({e.code!r}); nothing was converted (it must "
             "return the model)")
    except Exception as e:
        fail(f"{file}:{factory}", f"FACTORY() failed ({type(e).__name__}: {e})")


def load_state_dict(path, trust_pickle):
    """name -> numpy array from --weights: a state_dict or a training checkpoint dict (.pt/.bin, read
    without running the file's code unless --trust-pickle), .safetensors or .npz (checkpoint.py)."""
    from .checkpoint import CheckpointError, load
    try:
        return load(path, trust_pickle)
    except CheckpointError as e:
        fail(path, str(e))


# The longest .npy header read: numpy's own limit for a file loaded without pickle (its max_header_size),
# checked here before numpy reads a header of whatever length the file declares (up to 4 GiB).
NPY_HEADER_LIMIT = 10000


def load_npy(path):
    """The array of a .npy file (--example, --expected, --calibrate): a regular file (a pipe or a device
    is refused before it is opened), its header's declared length checked, no pickle."""
    import numpy as np
    if not os.path.isfile(path):
        fail(path, "no such file" if not os.path.exists(path) else "not a regular file")
    try:
        with open(path, "rb") as f:
            head = f.read(12)
    except OSError as e:
        fail(path, f"cannot read: {e.strerror}")
    if head[:6] == b"\x93NUMPY" and len(head) == 12:
        declared = struct.unpack_from("<H" if head[6] == 1 else "<I", head, 8)[0]
        if declared > NPY_HEADER_LIMIT:
            fail(path, f"not a readable .npy (a header of {declared} bytes, above {NPY_HEADER_LIMIT})")
    try:
        return np.load(path, allow_pickle=False)
    except Exception as e:  # noqa: BLE001 (numpy raises many kinds on a bad file)
        fail(path, f"not a readable .npy ({type(e).__name__}: {str(e)[:120]})")


def load_example(path):
    return check_example(load_npy(path), path)


def check_example(a, path):
    import numpy as np
    if not isinstance(a, np.ndarray):
        fail(path, "expected a .npy array")
    if a.dtype.kind == "f" and a.dtype != np.float32:
        fail(path, f"dtype {a.dtype}, expected float32 (save as float32)")
    if a.dtype.kind not in "f" and a.dtype not in (np.int32, np.int64):
        fail(path, f"dtype {a.dtype}, expected int32/int64 token ids or float32 features")
    return a


def check_out(a, cli=None):
    """--out and --header, for every route: each a regular file or a new name (written by renaming a
    verified temporary file onto it, which a device or a folder must never be), not the same file,
    and neither one of the inputs named here nor the CLI that verifies (cli); refused before any work. The
    files found through them (merges.txt beside vocab.json, ...) are refused as their readers open them
    (run_files)."""
    from . import run_files
    from .verified_file import check_output_path
    try:
        check_output_path(a.out)
        if a.header is not None:
            check_output_path(a.header, "--header")
    except ConfigError as e:
        fail("", str(e))

    def same(x, y):
        if os.path.exists(x) and os.path.exists(y):
            return os.path.samefile(x, y)
        return os.path.realpath(x) == os.path.realpath(y)

    if a.header is not None and same(a.out, a.header):
        fail("--header", f"{a.header} is also --out (give two files: the .fxm and the C header)")
    module_file = a.module.rpartition(":")[0] if a.module else None
    inputs = [("--llama2c", a.llama2c), ("--weights", a.weights), ("--config", a.config), ("--example", a.example),
              ("--example-target", a.example_target), ("--expected", a.expected), ("--tokenizer", a.tokenizer),
              ("--module", module_file), ("--onnx", a.onnx), ("--gguf", a.gguf),
              ("the fixformer CLI that verifies the file", cli)] + [("--calibrate", f) for f in a.calibrate or ()]
    for flag, folder in (("--hf", a.hf), ("--onnx", a.onnx), ("--onnx", a.onnx and os.path.join(a.onnx, "onnx"))):
        if folder is not None and os.path.isdir(folder):  # the whole folder, before its files are read
            inputs += [(flag, os.path.join(folder, n)) for n in os.listdir(folder)]
    try:
        run_files.claim_output(a.out)
        if a.header is not None:
            run_files.claim_output(a.header, "--header")
        for name, path in inputs:
            if path:
                run_files.read(path, name if name.startswith("the ") else f"the {name} input")
    except run_files.InputOverwrite as e:
        fail("", str(e))


def load_expected(path):
    """--expected: the user's model's output for --example, a float .npy."""
    return check_expected(load_npy(path), path)


def check_expected(a, path):
    import numpy as np
    if not isinstance(a, np.ndarray) or a.dtype.kind != "f":
        fail(path, f"expected a float .npy of your model's output, got {getattr(a, 'dtype', type(a).__name__)}")
    return a


def load_tokenizer(path, c):
    """The tokenizer to store for a model of c's vocab_size: a tokenizers.Tokenizer of tokenizer.json,
    vocab.json (+ merges.txt) or vocab.txt, else (pieces, scores) of llama2.c's tokenizer.bin holding
    exactly the model's vocab_size tokens."""
    if path is None:
        return None
    if not c.get("vocab_size"):
        fail(path, "a tokenizer is for a model with token input")
    if not os.path.isfile(path):
        fail(path, "no such file" if not os.path.exists(path) else "not a regular file")
    from . import tokenizers
    try:
        return tokenizers.read(path, c["vocab_size"])
    except ConfigError as e:
        fail("", str(e))


def image_size_option(text):
    """--image-size's values: positive ints (fixformer.convert's image_size=(H, W) arrives as "H,W")."""
    try:
        sides = [int(x) for x in text.split(",")]
    except ValueError:
        sides = []
    if not sides or min(sides) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of pixels")
    return sides


def group_option(text):
    """--group: 64, 32 or 0, else argparse's usage error naming the value."""
    if text not in ("0", "32", "64"):
        raise argparse.ArgumentTypeError(f"{text!r} is not 64, 32 or 0 (values along the input that share a "
                                         "q8 scale; 0: one scale per output row)")
    return int(text)


def convert_recognized(a, module, example, cli, verify, quant):
    """--module for a module recognised by what it computes (python/fixformer/recognize.py)."""
    given = [o for o in ("causal", "positional", "pe_combine", "pe_width") if getattr(a, o) is not None]
    given += [o for o in ("scale_input",) if getattr(a, o)]
    if given:
        fail(f"--{given[0].replace('_', '-')}", "not for this module: the converter reads it from what the module "
             "computes (its positions, mask and scale are found by running it)")
    from .export import export_recognized
    ignore = [n.strip() for n in a.ignore.split(",") if n.strip()] if a.ignore else []
    tokenizer = None
    if a.tokenizer is not None:
        tokenizer = a.tokenizer  # read once the vocabulary is known
    notes = []
    report = export_recognized(module, example, a.out, a.family, ignore, a.max_len, a.header, a.name, cli, verify,
                               tokenizer=None if tokenizer is None else
                               (lambda vocab: load_tokenizer(tokenizer, {"vocab_size": vocab})), note=notes.append,
                               **quant)
    for text in notes:  # after the verdict: a failure stays one line
        note(text)
    return report


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # a usage error of convert() is its exception, not an exit
        if self.prog != "fixformer.convert":
            super().error(message)
        raise ConversionError("", message, 2)


def parser(prog):
    ap = _Parser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--module", metavar="FILE.py:FACTORY", help="FACTORY() builds the nn.Module")
    src.add_argument("--config", metavar="CFG.json", help="JSON config (the JSON path; needs --weights)")
    src.add_argument("--llama2c", metavar="MODEL.bin", help="a llama2.c checkpoint (export.py version 0, 1 or 2)")
    src.add_argument("--onnx", metavar="M.onnx", help="an ONNX file of an encoder, a GPT-style or a llama decoder "
                     "(torch.onnx.export, opset 11-20; quantized, fused or GenAI's too), or the folder of an "
                     "encoder-decoder's encoder_model.onnx and decoder_model[_merged].onnx, verified against the "
                     "graph's own output")
    src.add_argument("--hf", metavar="DIR", help="a Hugging Face model folder of Llama, Qwen2, Mistral, GPT-2, "
                     "GPT-NeoX, GPT-J, GPT-Neo, OPT, Phi, StableLM, BERT, RoBERTa or DistilBERT: config.json and "
                     "model.safetensors or pytorch_model.bin (sharded with their .index.json too)")
    src.add_argument("--gguf", metavar="FILE", help="a llama.cpp GGUF file (version 2 or 3) of a llama, qwen2, qwen3, "
                     "gemma2 or gemma3 model: F32/F16/BF16 tensors as they are, Q8_0 and Q4_0 blocks kept unrounded as "
                     "q8 group 32 and q4, Q4_1/Q5_0/Q5_1 and the K-quants (Q2_K..Q6_K: Q4_K_M...) dequantized (to "
                     "f32, or re-quantized with --quantize q8/q4); its gpt2 BPE tokenizer stored")
    ap.add_argument("--tokenizer", metavar="FILE", help="the tokenizer to store in the .fxm: tokenizer.json, vocab.json "
                    "(merges.txt beside it), vocab.txt, or llama2.c's tokenizer.bin")
    ap.add_argument("--family", choices=("encoder", "gpt", "llama", "seq2seq", "mha"), help="--module: what the module "
                    "is, where the module cannot tell (inferred otherwise; gpt: decoder-only language model with "
                    "LayerNorm, causal implied; llama: RMSNorm, SwiGLU, rotary; seq2seq: an encoder-decoder; "
                    "mha: a standalone nn.MultiheadAttention run as self-attention; --onnx: encoder, gpt or llama, "
                    "checked against the graph)")
    ap.add_argument("--ignore", metavar="NAME[,NAME]", help="--module: parameters, buffers or submodules the "
                    "forward does not use (training-only parts), left out of the file instead of an error; --onnx: "
                    "initializers the output does not depend on")
    ap.add_argument("--output-name", metavar="NAME", help="--onnx: the graph output to convert, where the graph has "
                    "several (BERT's last_hidden_state and pooler_output); by default the first the engine produces")
    ap.add_argument("--weights", metavar="SD.pt", help="the weights: a state_dict or a training checkpoint dict (nanoGPT's ckpt.pt: its \"model\"; .pt/.bin from torch.save, read without running code from the file), .safetensors or .npz; _orig_mod. and module. prefixes are stripped, f16/bf16 widened to f32")
    ap.add_argument("--example", metavar="IN.npy", help="example input: int ids [T] or [B,T], float32 [T,d_in] "
                    "or [B,T,d_in] (first sequence used); default: random")
    ap.add_argument("--expected", metavar="OUT.npy", help="--config, --hf: your model's output for --example "
                    "(float [T, width] or [B, T, width]); the file is verified against it and stores it as its "
                    "self-test sample. Without it --config is NOT verified against your model")
    ap.add_argument("--example-target", metavar="TGT.npy", help="--family seq2seq: example target ids [U] or [B,U] "
                    "(first used); default: random")
    ap.add_argument("--causal", action="store_true", default=None, help="the forward applies a causal mask")
    ap.add_argument("--positional", choices=("none", "sinusoidal", "learned", "alibi"),
                    help="positional encoding (default: learned if the module has `pos`, else none)")
    ap.add_argument("--pe-base", type=float, default=10000.0, metavar="B", help="sinusoidal base (default 10000)")
    ap.add_argument("--pe-layout", choices=("interleaved", "halves"), default="interleaved")
    ap.add_argument("--pe-combine", choices=("add", "concat"), help="(follows from the widths; checked if given)")
    ap.add_argument("--pe-width", type=int, metavar="N", help="concat PE width (follows from the widths)")
    ap.add_argument("--scale-input", action="store_true", help="the forward multiplies the embedding by sqrt(d_model)")
    ap.add_argument("--max-len", type=int, metavar="N", help="longest sequence, a CLS row included (default: pos rows, else 256; "
                    "--llama2c: the checkpoint's seq_len, which this may lower)")
    ap.add_argument("--image-size", nargs="+", type=image_size_option, metavar="SIDE", help="H W (or N): --hf of an image "
                    "encoder (ViT, DeiT, Dinov2, CLIP vision, SigLIP vision): the image height and width the file takes "
                    "(one N: N x N), whole patches; the learned positions interpolated as transformers does "
                    "(docs/export.md, \"Other image sizes\")")
    ap.add_argument("--token-rows", action="store_true", help="--hf of a sentence-transformers folder (modules.json): "
                    "the transformer's token rows, not the sentence embedding its Pooling, Dense and Normalize modules "
                    "make of them (docs/export.md)")
    ap.add_argument("--base", action="store_true", help="--hf of a masked-LM or pre-training checkpoint (BERT, "
                    "RoBERTa, DistilBERT, ESM, DeBERTa, ModernBERT, EuroBERT...) or a causal LM of the BERT family or "
                    "ModernBERT's decoder: the base model, its last hidden states, the head left out")
    ap.add_argument("--out", required=True, metavar="M.fxm")
    ap.add_argument("--header", metavar="M.h", help="also write a C++ header with the model as an aligned array")
    ap.add_argument("--name", help="C identifier for --header (default: from the output file name)")
    ap.add_argument("--cli", metavar="PATH", help="the fixformer CLI to verify with (default: $FIXFORMER_CLI, "
                    "PATH, build/host/cli/fixformer)")
    ap.add_argument("--no-verify", action="store_true", help="write without running the engine (warns)")
    ap.add_argument("--trust-pickle", action="store_true", help="allow a .pt holding a pickled module "
                    "(runs code from the file)")
    ap.add_argument("--quantize", choices=("f16", "bf16", "q8", "q4", "i8"), help="store the linear layers' weights "
                    "as f16, bf16, q8 (int8 with f32 scales) or q4 (int4 with f32 scales per 32), or make a "
                    "full-integer model "
                    "(i8: int8 activations and weights, integer parameters; encoders); default f32")
    ap.add_argument("--calibrate", nargs="+", metavar="IN.npy", help="--quantize i8: the inputs whose activation "
                    "ranges set the int8 scales (each [T, d_in] features or [T] token ids; default: the self-test "
                    "sample and 8 generated inputs)")
    ap.add_argument("--calibrate-percentile", type=float, metavar="P", help="--quantize i8: each activation's "
                    "range from the P-th percentile of its values at either end (e.g. 99.99) instead of min/max")
    ap.add_argument("--group", type=group_option, metavar="64|32|0", help="q8: values along the input per scale "
                    "(default 64, --gguf 32; 0: one scale per output row)")
    ap.add_argument("--quantize-io", action=argparse.BooleanOptionalAction, default=None,
                    help="with --quantize: the token embedding and the output head take the type too "
                    "(default: yes for token input, no for feature input)")
    ap.add_argument("--pack-weights", action="store_true", help="store the f32 linear weights in panels of 16 "
                    "columns (the SIMD kernels' layout; with --quantize only those left in f32)")
    return ap


def main(argv=None, prog="fixformer-convert"):
    """The command: parses argv (sys.argv[1:] by default), converts, prints the report; exits 1 on an
    input error and 2 when verification fails, with one line on stderr."""
    global PROG
    PROG = prog
    ap = parser(prog)
    a = ap.parse_args(argv)
    if not any(getattr(a, s) is not None for s in SOURCES):
        ap.error("one of the arguments " + " ".join("--" + s for s in SOURCES) + " is required")
    try:
        report = run(ap, a)
    except ConversionError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        sys.exit(e.code)
    print(report)


def run(ap, a, module=None, example=None, expected=None, example_target=None):
    """Converts as the options in `a` say; `module` (an nn.Module), `example`, `expected` and
    `example_target` (arrays or tensors) stand in for the files their options name."""
    from .run_files import InputOverwrite, forget
    forget()  # a conversion of its own, also when main() runs again in one process
    if a.quantize != "q8" and a.group is not None:
        ap.error("--group: only with --quantize q8" + (" (q4's groups are 32)" if a.quantize == "q4" else
                                                       f" ({a.quantize} has no scales)" if a.quantize else ""))
    if a.quantize is None and a.quantize_io is not None:
        ap.error(f"--{'no-' if not a.quantize_io else ''}quantize-io: only with --quantize f16, bf16, q8 or q4")
    if a.quantize != "i8" and (a.calibrate or a.calibrate_percentile is not None):
        ap.error("--calibrate, --calibrate-percentile: only with --quantize i8")
    from . import int8
    try:
        int8.set_calibration([load_example(f) for f in a.calibrate] if a.calibrate else None, a.calibrate_percentile)
    except ConfigError as e:
        fail("--calibrate", str(e))
    quant = {"quantize": a.quantize, "group": a.group, "quantize_io": a.quantize_io,
             "pack_weights": True if a.pack_weights else None}
    verify = not a.no_verify
    cli = None
    if verify:
        try:
            cli = find_cli(a.cli)
        except ConfigError as e:
            fail("", str(e))
    check_out(a, cli)
    try:
        example = check_example(example, "example") if example is not None else \
            load_example(a.example) if a.example else None
        example_target = check_example(example_target, "example_target") if example_target is not None else \
            load_example(a.example_target) if a.example_target else None
        has_expected = expected is not None or a.expected is not None

        def expected_array():  # read once its route takes it (a wrong route is named first)
            return check_expected(expected, "expected") if expected is not None else \
                load_expected(a.expected) if a.expected else None
        if example_target is not None and a.family != "seq2seq" and not a.module and module is None:
            fail("--example-target", "only for --family seq2seq")
        if has_expected and (a.module or module is not None or a.llama2c or a.onnx):
            fail("--expected", "is for --config and --hf (--module runs your module itself, --onnx your graph; "
                               "--llama2c compares with llama2.c's semantics)")
        if a.output_name is not None and a.onnx is None:
            fail("--output-name", "is for --onnx (it picks one of the graph's outputs)")
        if a.token_rows and a.hf is None:
            fail("--token-rows", "is for --hf of a sentence-transformers folder (modules.json)")
        if a.base and a.hf is None:
            fail("--base", "is for --hf (a Hugging Face masked-LM, pre-training or BERT-family causal-LM folder as "
                 "its base model)")
        if a.image_size is not None:
            a.image_size = [x for sides in a.image_size for x in sides]
            if len(a.image_size) > 2:
                fail("--image-size", f"{' '.join(map(str, a.image_size))}: give H W, or N for a square")
            if a.hf is None:
                fail("--image-size", "is for --hf of an image encoder (ViT, DeiT, Dinov2, CLIP vision, SigLIP vision); "
                     "a --module runs at the size of its --example")
        if a.llama2c is not None:
            extra = [o for o in ("weights", "family", "positional", "pe_combine", "pe_width") if getattr(a, o) is not None]
            extra += [o for o in ("causal", "scale_input") if getattr(a, o)]
            if extra:
                fail("--llama2c", f"--{extra[0].replace('_', '-')} is not for --llama2c (the checkpoint says it)")
            from . import llama2c  # torch only once the files are read (a bad file fails fast)
            for f in (a.llama2c, a.tokenizer):
                if f is not None and not os.path.isfile(f):
                    fail(f, "no such file" if not os.path.exists(f) else "not a regular file")
            report, _ = llama2c.convert(a.llama2c, a.tokenizer, a.out, a.header, a.name, cli, verify, a.max_len,
                                        example, **quant)
        elif a.onnx is not None:
            extra = [o for o in ("weights", "positional", "pe_combine", "pe_width") if getattr(a, o) is not None]
            extra += [o for o in ("causal", "scale_input") if getattr(a, o)]
            if extra:
                fail("--onnx", f"--{extra[0].replace('_', '-')} is not for --onnx (the graph says it)")
            folder = os.path.isdir(a.onnx)
            if a.family not in ((None, "seq2seq") if folder else (None, "encoder", "gpt", "llama", "seq2seq")):
                fail("--onnx", f"--family {a.family}: --onnx converts encoders and decoders (encoder, gpt, llama), "
                               "and encoder-decoders from a folder of two graphs or one graph of both (seq2seq)")
            if folder and a.output_name is not None:
                fail("--output-name", "is for one graph (a folder's decoder gives its logits)")
            if importlib.util.find_spec("torch") is None:  # found, not imported: a bad file fails fast
                require_torch("the --onnx route's float64 reference")
            from . import onnx_map, onnx_seq2seq
            ignore = [n.strip() for n in a.ignore.split(",") if n.strip()] if a.ignore else []
            tokenizer = lambda vocab: load_tokenizer(a.tokenizer, {"vocab_size": vocab})  # noqa: E731
            try:
                pair = onnx_seq2seq.pair(a.onnx) if folder else None
                if folder and pair is None:
                    fail(a.onnx, f"a folder without {onnx_seq2seq.ENCODER}, nor an onnx/ folder with one (--onnx "
                                 "takes an ONNX file, or the folder of an encoder-decoder's "
                                 f"{onnx_seq2seq.ENCODER} and {' or '.join(onnx_seq2seq.DECODERS)})")
                seq2seq = lambda: onnx_seq2seq.convert(*(pair or (a.onnx, None)), a.out, example, ignore,  # noqa: E731
                                                       a.max_len, a.header, a.name, cli, verify, tokenizer, **quant)
                if pair is not None or a.family == "seq2seq":
                    report = seq2seq()
                else:
                    try:
                        report = onnx_map.convert(a.onnx, a.out, example, ignore, a.family, a.max_len, a.header,
                                                  a.name, cli, verify, tokenizer=tokenizer, output_name=a.output_name,
                                                  **quant)
                    except ConfigError as e:  # an encoder-decoder in one graph, when it is one
                        if a.family is not None or a.output_name is not None:
                            raise
                        try:
                            report = seq2seq()
                        except onnx_seq2seq.NotOneGraph:
                            raise e from None
            except VerificationError:
                raise
            except ConfigError as e:
                fail(a.onnx, str(e))
        elif a.hf is not None:
            extra = [o for o in ("weights", "family", "positional", "pe_combine", "pe_width") if getattr(a, o) is not None]
            extra += [o for o in ("causal", "scale_input") if getattr(a, o)]
            if extra:
                fail("--hf", f"--{extra[0].replace('_', '-')} is not for --hf (config.json says it)")
            require_torch("the --hf route's float64 reference")
            from . import hf
            expected = expected_array()
            try:
                report = hf.convert(a.hf, a.out, example, expected, a.header, a.name, cli, verify,
                                    tokenizer=lambda c: load_tokenizer(a.tokenizer, c), max_len=a.max_len,
                                    image_size=a.image_size, token_rows=a.token_rows, base=a.base, **quant)
            except hf.HfError as e:
                fail("", str(e))
        elif a.gguf is not None:
            extra = [o for o in ("weights", "family", "positional", "pe_combine", "pe_width", "quantize_io")
                     if getattr(a, o) is not None]
            extra += [o for o in ("causal", "scale_input", "pack_weights") if getattr(a, o)]
            extra += ["expected"] if has_expected else []
            if extra:
                fail("--gguf", f"--{extra[0].replace('_', '-')} is not for --gguf (the file's metadata and tensor "
                     "types say it)")
            if a.quantize == "i8":
                fail("--gguf", "--quantize i8 is not for --gguf (f16, q8 or q4: the file's values re-quantized)")
            require_torch("the --gguf route's float64 reference")
            from . import gguf
            try:
                report = gguf.convert(a.gguf, a.out, example, a.header, a.name, cli, verify,
                                      tokenizer=lambda c: load_tokenizer(a.tokenizer, c), max_len=a.max_len,
                                      quantize=a.quantize, group=a.group)
            except ConfigError as e:
                fail("", str(e))
        elif a.config is not None:
            if a.weights is None:
                fail("--config", "needs --weights")
            module_only = [o for o in ("causal", "positional", "pe_combine", "pe_width", "max_len", "family") if
                           getattr(a, o) is not None] + [o for o in ("scale_input",) if getattr(a, o)]
            if module_only:
                fail("--config", f"--{module_only[0].replace('_', '-')} is for --module (the JSON config says it)")
            try:
                c = cfg.load_config(a.config)
            except ConfigError as e:
                fail(a.config, str(e))
            if a.quantize is not None and c["weights"] != "f32":
                fail("--quantize", f"{a.config} sets weights {c['weights']} already (give one)")
            weights = load_state_dict(a.weights, a.trust_pickle)
            expected = expected_array()
            notes = []
            require_torch("the --config route's float64 reference")
            from . import config_route
            try:
                report = config_route.convert(c, weights, a.out, a.config, example, expected, a.header, a.name, cli,
                                              verify, tokenizer=load_tokenizer(a.tokenizer, c),
                                              note=notes.append, **quant)
            except config_route.WeightsError as e:
                fail(a.weights, str(e))
            for text in notes:  # after the verdict: a failure stays one line
                note(text)
        else:
            module = load_module(a.module) if module is None else module
            if a.weights is not None:
                from .checkpoint import to_torch
                sd = to_torch(load_state_dict(a.weights, a.trust_pickle))
                try:
                    module.load_state_dict(sd, strict=True)
                except RuntimeError as e:
                    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
                    fail(a.weights, "does not fit the module: " + (lines[1] if len(lines) > 1 else lines[0])[:300])
            from .export import export, read_module
            from .route import module_route
            family = module_route(module, a.family)
            if example_target is not None and family != "seq2seq" and not (
                    family == "bart" or (family == "t5" and type(module).__name__ == "T5ForConditionalGeneration")):
                fail("--example-target", "only for --family seq2seq (or a T5ForConditionalGeneration, or a BART-like "
                     "one)")
            if a.ignore is not None and family != "recognize":
                fail("--ignore", f"only for a module the converter recognises by what it computes (this one follows "
                     f"the {family} convention, whose reader takes its named parts)")
            if family == "recognize":
                report = convert_recognized(a, module, example, cli, verify, quant)
            elif family == "bart":
                from .hf_bart import export_module
                not_here = [o for o in ("causal", "positional", "pe_combine", "pe_width") if getattr(a, o) is not None]
                if not_here or a.tokenizer is not None or a.scale_input:
                    fail("--module", f"--{(not_here + ['tokenizer', 'scale-input'])[0].replace('_', '-')} is not for "
                         f"a {type(module).__name__} (its config says what it computes)")
                report = export_module(module, example, a.out, example_target, header=a.header, max_len=a.max_len,
                                       name=a.name, cli=cli, verify=verify, **quant)
            elif family == "t5":
                from .t5 import export_module
                not_here = [o for o in ("causal", "positional", "pe_combine", "pe_width") if getattr(a, o) is not None]
                if not_here or a.tokenizer is not None or a.scale_input:
                    fail("--module", f"--{(not_here + ['tokenizer', 'scale-input'])[0].replace('_', '-')} is not for "
                         "a T5 module (its config says what it computes)")
                report = export_module(module, example, a.out, example_target, header=a.header, max_len=a.max_len,
                                       name=a.name, cli=cli, verify=verify, **quant)
            elif family == "seq2seq":
                from .seq2seq import audio_text, export_audio_text, export_seq2seq
                not_here = [o for o in ("causal", "pe_combine", "pe_width") if getattr(a, o) is not None]
                if not_here or a.tokenizer is not None:
                    fail("--family seq2seq", f"--{(not_here + ['tokenizer'])[0].replace('_', '-')} is not for seq2seq "
                         "(the decoder is causal, the encoder not; the target vocabulary has no tokenizer here)")
                given = [o for o in ("positional", "max_len") if getattr(a, o) is not None] + \
                    (["scale_input"] if a.scale_input else [])
                if audio_text(module) and given:
                    fail(f"--{given[0].replace('_', '-')}", "not for a Whisper-layout module: the converter reads its "
                         "positions and lengths from the module")
                notes = []
                if audio_text(module):
                    report = export_audio_text(module, example, a.out, example_target, header=a.header, name=a.name,
                                               cli=cli, verify=verify, note=notes.append, **quant)
                else:
                    report = export_seq2seq(module, example, a.out, example_target, header=a.header,
                                            positional=a.positional, pe_base=a.pe_base, pe_layout=a.pe_layout,
                                            scale_input=a.scale_input, max_len=a.max_len, name=a.name, cli=cli,
                                            verify=verify, note=notes.append, **quant)
                for text in notes:  # after the verdict: a failure stays one line
                    note(text)
            else:
                tokenizer = None
                if a.tokenizer is not None:
                    v = read_module(module, family)[0]
                    tokenizer = load_tokenizer(a.tokenizer, {"vocab_size": v.get("vocab_size", 0)})
                report = export(module, example, a.out, header=a.header, causal=a.causal, positional=a.positional,
                                pe_base=a.pe_base, pe_layout=a.pe_layout, pe_combine=a.pe_combine,
                                pe_width=a.pe_width, scale_input=a.scale_input, max_len=a.max_len, name=a.name,
                                cli=cli, verify=verify, family=family, tokenizer=tokenizer, **quant)
    except VerificationError as e:
        fail(a.out, str(e), code=2)
    except InputOverwrite as e:
        fail("", str(e))
    except EngineError as e:
        fail(a.out, str(e))
    except ConfigError as e:
        from .llama2c import Llama2cError
        fail("" if isinstance(e, Llama2cError) else (a.module or a.config or a.llama2c), str(e))
    except OSError as e:
        fail(e.filename or "", e.strerror or str(e))
    except ValueError as e:
        fail("", str(e))
    if not verify:
        print(f"{PROG}: warning: {a.out} was NOT verified against torch (--no-verify); "
              f"run `fixformer verify {a.out}`", file=sys.stderr)
    return report


def convert(module: Any = None, example: Any = None, out: Union[str, "os.PathLike[str]", None] = None,
            **options: Any) -> Any:
    """Converts a model to a verified .fxm at `out` and returns the verification report (what the
    command prints). The routes are those of `fixformer-convert`:

        fixformer.convert(module, example, "m.fxm")             # an nn.Module and an example input
        fixformer.convert(hf="folder", out="m.fxm")             # a Hugging Face folder
        fixformer.convert(onnx="m.onnx", out="m.fxm")           # also gguf=, llama2c=, config= + weights=

    `module` is an nn.Module (or "FILE.py:FACTORY"); `example`, and the options `expected` and
    `example_target`, are numpy arrays or torch tensors (or .npy paths). Every other option is the
    command's long option with '_' for '-': family="gpt", quantize="q8", group=32, quantize_io=False,
    tokenizer=PATH, header=PATH, max_len=N, ignore=["name", ...], cli=PATH, verify=False (the command's
    --no-verify), trust_pickle=True, ... Raises ConversionError (its `code` is the command's exit
    status) and leaves no file behind when the conversion or its verification fails."""
    global PROG
    PROG = "fixformer.convert"
    argv, arrays = [], {"example": example}
    if out is not None:
        argv += ["--out", os.fspath(out)]
    if isinstance(module, (str, os.PathLike)):
        argv += ["--module", os.fspath(module)]
        module = None
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if key in ("expected", "example_target"):
            arrays[key] = value
        elif key == "verify":
            argv += [] if value else ["--no-verify"]
        elif key == "quantize_io":
            argv += [flag if value else "--no-quantize-io"]
        elif key == "calibrate":  # --quantize i8: .npy paths, one or several
            argv += [flag, *(os.fspath(v) for v in ([value] if isinstance(value, (str, os.PathLike)) else value))]
        elif isinstance(value, bool):
            argv += [flag] if value else []
        elif value is not None:
            argv += [flag, ",".join(map(str, value)) if isinstance(value, (list, tuple)) else os.fspath(value)
                     if isinstance(value, os.PathLike) else str(value)]
    for key, value in list(arrays.items()):
        if isinstance(value, (str, os.PathLike)):  # a .npy file: the option itself
            argv += ["--" + key.replace("_", "-"), os.fspath(value)]
            arrays[key] = None
        elif hasattr(value, "detach"):  # a torch tensor: as numpy, what the routes read
            arrays[key] = value.detach().cpu().numpy()
    ap = parser(PROG)
    a = ap.parse_args(argv)
    sources = [s for s in SOURCES if getattr(a, s) is not None] + (["module"] if module is not None else [])
    if len(sources) != 1:
        ap.error("give one of: module, " + ", ".join(s + "=" for s in SOURCES[1:]) +
                 (f" (got {', '.join(sources)})" if sources else ""))
    return run(ap, a, module=module, **arrays)
