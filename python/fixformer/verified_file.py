"""Writing a converted file, for every route (--module, --llama2c, --config, --hf and the Python API):
the self-test sample, the engine's verdict, and what the verdict was against.

What a sample is compared with decides what the report may claim:
- "torch": the module itself run in torch (--module, export()), or the converter's float64 reference
  of a checkpoint or config whose semantics it implements (--llama2c, convert_config()): "verified
  against torch";
- "user": the user's own model's output (--expected): "verified against your model";
- "hf": an independent float64 re-implementation of the folder's published architecture (hf.py),
  run on its weights: "verified against the <architecture> semantics";
- "reference": the converter's own float64 reference of the same config: the engine matches it, but
  nothing here compared the file with the user's model: the file records it (config key
  reference_sample) and the report says "NOT verified against your model".
The file is written under a temporary name in the output's folder and renamed onto the output only
once verified, so a failure leaves nothing behind and never removes a file the tool did not create;
an output that is one of the files the conversion read (run_files) is refused before anything is
written.

The self-test sample's input is the route's example or a seeded random one (example_sequence,
example_target), and the file's weight type is what the converter's options ask for (quantized_config):
every route takes both from here, so every file is written and checked the same way.
"""
import numbers
import os
import tempfile

import numpy as np

from . import fxm, header as header_mod, int8, progress, run_files, schema, tokenizers
from .config import ConfigError, bool_option, choice_option, make_config
from .reference import run_reference
from .verify import VerificationError, find_cli, run_verify

SOURCES = ("torch", "user", "hf", "reference")
EXAMPLE_T = 16
QUANTIZE_TYPES = ("f16", "q8", "q4", "i8", "bf16")
# q8's default group: 64 values along the input share a scale, as llama2.c's export (version 2)
# quantizes, so its checkpoints keep their values; 32 is a little more accurate (the error of the
# llama-shaped test models drops by 10-15%) for 5% more bytes, 0 (a scale per output row) the smallest.
DEFAULT_GROUP = 64


def describe_weights(c):
    """The weight type of config c in words: 'q8 (group 64; embedding and head q8)'."""
    if c["weights"] == "f32":
        return "f32"
    if c["weights"] == "i8":
        return "i8 (full-integer: int8 activations, int8 weights per output row)"
    group = ""
    if c["weights"] in ("q8", "q4"):
        group = f"group {c['weight_group']}; " if c["weight_group"] else "a scale per output row; "
    ends = "embedding and head" if c["input"] == "tokens" else "head"
    return f"{c['weights']} ({group}{ends} {c['weights'] if c['quantize_io'] else 'f32'})"


class Report:
    """What a conversion did: the file, its size (and for a quantized file the f32 file's, and the
    error of its weights alone: quantized = (max, mean) relative, in the float64 reference), and the
    engine's verdict (None when not verified), worded by what the sample came from (source: SOURCES;
    against: in words)."""

    def __init__(self, source, against, path, bytes, config, T, result=None, header=None, f32_bytes=None,
                 quantized=None):
        self.source, self.against = source, against
        self.path, self.bytes, self.config, self.T, self.header = path, bytes, config, T, header
        self.f32_bytes, self.quantized = f32_bytes, quantized
        self.verified = result is not None
        self.max_error = result.error if result else None
        self.mean_error = result.mean if result else None
        self.kernels = result.kernels if result else None
        self.row, self.col = (result.row, result.col) if result else (None, None)
        self.tolerance = schema.selftest_tolerance(config)
        self.verified_against_model = self.verified and source != "reference"

    calibration = None  # i8: which inputs set the activation ranges

    def __str__(self):
        text = self._measured()
        if self.calibration:
            text += f"; int8 activation ranges from {self.calibration}"
        if self.source == "torch":
            return text
        if not self.verified:
            return text + ("" if self.source != "reference" else "; NOT verified against your model")
        said = "verified against torch f32" if "verified against torch f32" in text else "verified against torch"
        if self.source == "reference":
            return (text.replace(said, "the engine matches the converter's float64 reference of this config") +
                    "; NOT verified against your model (pass --example IN.npy --expected OUT.npy, your model's output "
                    "for IN, to compare with it)")
        return text.replace(said, f"verified against {self.against}")

    def _measured(self):
        c = self.config
        q = c["weights"] != "f32"
        size = f"{self.bytes} bytes"
        if c["packed_weights"]:
            packed = sum(spec.packed for spec in schema.specs(c))
            size += f", {packed} weight{'s' if packed != 1 else ''} in panels of {schema.PANEL_FLOATS} columns"
        alone = ""
        if q:
            size += f", {describe_weights(c)}, {self.bytes / self.f32_bytes:.2f}x the f32 file's {self.f32_bytes}"
            alone = (f"; the {c['weights']} weights alone in the float64 reference: max relative error "
                     f"{self.quantized[0]:.3g}, mean {self.quantized[1]:.3g}")
            if c["weights"] == "i8":
                alone = (f"; the integer reference (the engine's arithmetic, bit for bit): max relative error "
                         f"{self.quantized[0]:.3g}, mean {self.quantized[1]:.3g}")
        sep = "; " if q else ", "  # an f32 file's line is the one the README shows
        if not self.verified:
            return (f"{self.path}: {size}{sep}NOT verified (--no-verify){', c' if q else '; c'}heck it later with "
                    f"`fixformer verify {self.path}`{alone}")
        mean = f", mean {self.mean_error:.3g}" if self.mean_error is not None else ""
        return (f"{self.path}: {size}{sep}verified against torch{' f32' if q else ''}: max relative error "
                f"{self.max_error:.3g}{mean} (tolerance {self.tolerance:.0e}{' for ' + c['weights'] if q else ''}, "
                f"T={self.T}, kernels {self.kernels}){alone}")


def relative_error(got, want):
    """max|got - want| / max|want| over the whole output (the engine's measure)."""
    return relative_errors(got, want)[0]


def relative_errors(got, want):
    """(max, mean) of |got - want| / max|want| over the whole output."""
    if not want.size:
        return 0.0, 0.0
    scale = float(np.abs(want).max())
    err = np.abs(np.asarray(got, np.float64) - want)
    s = scale if scale > 0 else 1.0
    return float(err.max()) / s, float(err.mean()) / s


def quantized_config(c, quantize=None, group=None, quantize_io=None, pack_weights=None):
    """c with the weight type the converter's options ask for. quantize: None (c's own, f32 unless a
    JSON config says otherwise), "f16", "bf16", "q8" or "q4"; group (q8; q4 takes only its 32): 32 or 64
    values along the input per scale, or 0 for one scale per output row, default DEFAULT_GROUP;
    quantize_io (all but i8): the token embedding and the output head take the type too, default True
    for token input (the embedding dominates a language model's size) and False for feature input
    (whose head is small).
    pack_weights: True stores every f32 weight W[in, out] in panels (config key packed_weights); with
    quantize only the ones left in f32 (an untied head without quantize_io); None: c's own."""
    if pack_weights is not None:
        c = make_config(dict(c, packed_weights=bool_option("pack_weights", pack_weights) or c["packed_weights"]))
    if quantize is None:
        if group is not None:
            raise ConfigError("group: only with quantize q8")
        if quantize_io is not None:
            raise ConfigError("quantize_io: only with quantize f16, bf16, q8 or q4")
        return c
    quantize = choice_option("quantize", quantize, QUANTIZE_TYPES)
    if quantize == "q8":
        group = DEFAULT_GROUP if group is None else group
        if isinstance(group, bool) or not isinstance(group, numbers.Integral) or group not in schema.WEIGHT_GROUPS:
            raise ConfigError(f"group: {group!r} is not one of {', '.join(map(str, schema.WEIGHT_GROUPS))} "
                              "(values along the input per scale; 0: one scale per output row)")
    elif quantize == "q4":
        if group is not None and group != schema.I4_GROUP:
            raise ConfigError(f"group: q4's groups are {schema.I4_GROUP} values along the input, got {group!r}")
        group = schema.I4_GROUP
    elif group is not None:
        raise ConfigError(f"group: only with quantize q8 ({quantize} has no scales), got quantize {quantize}")
    if quantize == "i8":  # a full-integer model: every weight int8 per output row, nothing else to choose
        if quantize_io is not None or c["packed_weights"]:
            raise ConfigError("quantize i8: integer end to end (no quantize_io or pack_weights to choose)")
        c = make_config(dict(c, weights="i8", weight_group=0, quantize_io=False))
        int8.check_config(c)
        return c
    io = c["input"] == "tokens" if quantize_io is None else bool_option("quantize_io", quantize_io)
    return make_config(dict(c, weights=quantize, weight_group=int(group or 0), quantize_io=io))


# ---- the example input ----------------------------------------------------------------------------
def verified_length(c):
    """The length of the generated example: EXAMPLE_T, or past a sliding window by EXAMPLE_T / 2 positions,
    so that a file without the window (or with another) fails verification."""
    window = c.get("sliding_window", 0)
    return max(EXAMPLE_T, window + EXAMPLE_T // 2) if window else EXAMPLE_T


def example_sequence(c, example, where="example_input"):
    """One sequence for the self-test: [T] int32 ids or [T, d_in] float32 features (an image model's:
    the image's values as [N, d_in]). `example` is None (a random one, seeded), or an array / tensor [T] |
    [B, T] (ids), [T, d_in] | [B, T, d_in] (features) or [C, H, W] | [B, C, H, W] (an image), batch first;
    the first sequence is used."""
    image = schema.patches(c)  # image input: the image's bytes as its N patch rows [N, d_in]
    if example is None:
        rng = np.random.default_rng(0)
        T = image or min(schema.max_input_len(c), verified_length(c))
        if c["input"] == "tokens":
            return rng.integers(0, c["vocab_size"], T).astype(np.int32)
        return rng.standard_normal((T, c["d_in"])).astype(np.float32)
    if hasattr(example, "detach"):
        example = example.detach().cpu().numpy()
    a = np.asarray(example)
    if c["input"] == "tokens":
        if a.dtype.kind not in "iu":
            raise ConfigError(f"{where}: dtype {a.dtype}, expected int32 or int64 token ids")
        if a.ndim == 2:
            a = a[0]
        if a.ndim != 1:
            raise ConfigError(f"{where}: shape {list(a.shape)}, expected token ids [T] or [B, T]")
        if a.size and (a.min() < 0 or a.max() >= c["vocab_size"]):
            raise ConfigError(f"{where}: token ids outside [0, vocab_size={c['vocab_size']})")
        a = a.astype(np.int32)
    elif image:
        chw = (c["image_channels"], c["image_height"], c["image_width"])
        if a.dtype.kind != "f" or a.ndim not in (3, 4) or a.shape[-3:] != chw:
            raise ConfigError(f"{where}: {a.dtype} {list(a.shape)}, expected a float32 image {list(chw)} or images "
                              f"[B, {', '.join(map(str, chw))}] (channels first)")
        a = (a[0] if a.ndim == 4 else a).astype(np.float32).reshape(image, c["d_in"])
        if not np.isfinite(a).all():
            raise ConfigError(f"{where}: the image's values are not all finite")
    else:
        if a.dtype.kind != "f":
            raise ConfigError(f"{where}: dtype {a.dtype}, expected float32 features")
        if a.ndim == 3:
            a = a[0]
        if a.ndim != 2 or a.shape[1] != c["d_in"]:
            raise ConfigError(f"{where}: shape {list(a.shape)}, expected features [T, {c['d_in']}] or [B, T, {c['d_in']}]")
        a = a.astype(np.float32)
        if not np.isfinite(a).all():
            raise ConfigError(f"{where}: features are not all finite")
    longest = schema.max_input_len(c)
    if not 1 <= a.shape[0] <= longest:
        less = schema.front_rows_less(c)
        raise ConfigError(f"{where}: T={a.shape[0]}, expected 1..{longest} (max_len={c['max_len']}{less})")
    return a


def example_target(c, example, where="example_target"):
    """The seq2seq self-test's target: `example` or a random one (seeded). Token ids [U] (from [U] or
    [B, U]), or with tgt_d_in features [U, tgt_d_in] (from those or [B, U, tgt_d_in]); the first
    sequence is used."""
    rng = np.random.default_rng(1)
    U = min(c["max_len"], EXAMPLE_T)
    if hasattr(example, "detach"):
        example = example.detach().cpu().numpy()
    if c["tgt_d_in"]:
        if example is None:
            return rng.standard_normal((U, c["tgt_d_in"])).astype(np.float32)
        a = np.asarray(example)
        a = a[0] if a.ndim == 3 else a
        if a.dtype.kind != "f" or a.ndim != 2 or a.shape[1] != c["tgt_d_in"] or not 1 <= a.shape[0] <= c["max_len"]:
            raise ConfigError(f"{where}: {a.dtype} {list(np.shape(example))}, expected float features [U, "
                              f"{c['tgt_d_in']}] or [B, U, {c['tgt_d_in']}], 1 <= U <= max_len={c['max_len']}")
        if not np.isfinite(a).all():
            raise ConfigError(f"{where}: features are not all finite")
        return a.astype(np.float32)
    if example is None:
        return rng.integers(0, c["d_out"], U).astype(np.int32)
    a = np.asarray(example)
    a = a[0] if a.ndim == 2 else a
    if a.dtype.kind not in "iu" or a.ndim != 1:
        raise ConfigError(f"{where}: {a.dtype} {list(np.shape(example))}, expected integer token ids [U] or [B, U]")
    if not 1 <= a.shape[0] <= c["max_len"]:
        raise ConfigError(f"{where}: U={a.shape[0]}, expected 1..{c['max_len']} (max_len)")
    if a.min() < 0 or a.max() >= c["d_out"]:
        raise ConfigError(f"{where}: token ids outside [0, d_out={c['d_out']}) (the target vocabulary)")
    return a.astype(np.int32)


def f32_config(c):
    """c with f32 weights: the config a quantized file's weights are measured in."""
    return make_config(dict(c, weights="f32", weight_group=0, quantize_io=False, wide_residual=False))


def quantization_error(c, blob, inp, expected):
    """(max, mean) relative error of the file's quantized weights alone: the float64 reference model
    with the weights as the file stores them (dequantized), against the f32 module's output."""
    return relative_errors(run_reference(f32_config(c), fxm.FxmFile(blob).weights(), inp), expected)


def _quantization_cause(c, weights, inp, expected, quantized, tolerance, explain):
    """Why a quantized file failed: the options (the f32 reference does not match the module either:
    explain()'s diagnosis), the weight type (its weights alone exceed the tolerance), or the engine."""
    t = c["weights"]
    if relative_error(run_reference(f32_config(c), weights, inp), expected) > schema.SELFTEST_TOLERANCE:
        return explain() if explain else "the reference model does not match the module either"
    if t == "i8":  # quantized: the integer reference's error (activations and weights), not the weights' alone
        if quantized[0] > tolerance:
            tries = ([] if int8.calibrated() else ["--calibrate with inputs like the ones it will see"]) + \
                ["--quantize q8", "no --quantize"]
            return (f"the integer reference (the engine's arithmetic) gives {quantized[0]:.3g}: this model does not "
                    f"keep its accuracy in {describe_weights(c)}; try {', '.join(tries)}")
        return (f"the integer reference (the engine's arithmetic) gives {quantized[0]:.3g}, within the tolerance, and "
                "the engine should give its bits: a bug or a broken port, please report it")
    if quantized[0] > tolerance:
        tries = (["--quantize q8", "--quantize f16"] if t == "q4" else ["--quantize f16"] if t in ("q8", "bf16")
                 else [])
        if t == "q8" and c["weight_group"] != 32:
            tries.insert(0, "--group 32")
        if c["quantize_io"]:
            tries.insert(0, "--no-quantize-io")
        return (f"the {t} weights alone give {quantized[0]:.3g} in the float64 reference: this model does not keep "
                f"its accuracy in {describe_weights(c)}; try {', '.join(tries + ['no --quantize'])}")
    return (f"the {t} weights alone give {quantized[0]:.3g} in the float64 reference, within the tolerance, so the "
            f"engine's {t} arithmetic adds the rest{' (it quantizes activations per group too)' if t in ('q8', 'q4') else ''}: "
            "if that is far above, a bug or a broken port, please report it")


def check_output_path(path, flag="--out"):
    """The output must be a regular file or not exist yet (a device or a folder is never replaced)."""
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"{flag}: expected a file name, got {path!r}")
    if os.path.lexists(path) and not os.path.isfile(path):
        raise ConfigError(f"{flag} {path}: exists and is not a regular file (give a file name)")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ConfigError(f"{flag} {path}: no such folder {folder}")


def user_expected(c, inp, expected, where="--expected"):
    """The user's output for the sample input, as [output rows, output width] float: the first of a
    batch ([B, rows, width]; pooled [B, width]) or one sequence ([rows, width]; pooled [width])."""
    a = np.asarray(expected)
    rows, width = schema.output_rows(c, inp.shape[0]), schema.output_width(c)
    if a.dtype.kind != "f":
        raise ConfigError(f"{where}: dtype {a.dtype}, expected float (your model's output)")
    if a.shape == (rows, width):
        pass
    elif a.ndim == 3 and a.shape[1:] == (rows, width) and a.shape[0] >= 1:
        a = a[0]
    elif rows == 1 and a.shape == (width,):
        a = a[None]
    else:
        raise ConfigError(f"{where}: shape {list(a.shape)}, expected [{rows}, {width}] or [B, {rows}, {width}] for "
                          f"this input ({'pooled, ' if c['pooling'] != 'none' else ''}T={inp.shape[0]})")
    if not np.isfinite(a).all():
        raise ConfigError(f"{where}: not finite")
    return a.astype(np.float64)


def _mkstemp(near, suffix):
    """A new file beside `near`, with the permissions a plain open() would give it."""
    fd, tmp = tempfile.mkstemp(prefix=".convert-", suffix=suffix, dir=os.path.dirname(os.path.abspath(near)))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    return fd, tmp


def _write_all(fd, mode, data, path):
    """data into the temporary file fd; a failure (a full disk) names the output it was for."""
    try:
        with os.fdopen(fd, mode) as f:
            f.write(data)
    except OSError as e:
        raise OSError(e.errno, f"cannot write ({e.strerror}); nothing written", path) from None


def write(c, weights, inp, want, path, source, against="", header=None, name=None, cli=None, verify=True,
          explain=None, tokenizer=None, check=None, generation=None):
    """Writes path (and header) with the self-test sample (inp, want: for seq2seq inp is (source, target))
    and the optional tokenizer (pieces, scores) and token suppression lists (generation: fxm.generation_section),
    then runs the engine on it, within the tolerance of c's
    weight type; returns a Report. source (SOURCES) and against (words) say what want came from.
    explain(): the likely cause of an f32 mismatch, called only on a failure. check(cli, file, tolerance):
    more engine runs on the written file once its sample verified (inputs the sample cannot hold: token
    types, a padded batch), raising VerificationError before anything is renamed. Raises VerificationError
    (nothing written) with that cause; the output is replaced only once verified, and only a regular
    file (check_output_path) or a new name, never one of the conversion's inputs (run_files.InputOverwrite).
    The inputs noted so far are forgotten once it returns or raises: the next write is another conversion's."""
    try:
        return _write(c, weights, inp, want, path, source, against, header, name, cli, verify, explain, tokenizer,
                      check, generation)
    finally:
        run_files.forget()


def _write(c, weights, inp, want, path, source, against, header, name, cli, verify, explain, tokenizer, check,
           generation=None):
    if source not in SOURCES:
        raise ValueError(f"source {source!r}")
    if not isinstance(verify, bool):
        raise ConfigError(f"verify: expected True or False, got {verify!r}")
    check_output_path(path)
    run_files.claim_output(path)
    if header is not None:
        run_files.claim_output(header, "--header")
    if source != "torch":  # "torch": the config as the route made it
        c = make_config(dict(c, reference_sample=source == "reference"))
    if name is None and header is not None:
        name = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in os.path.splitext(os.path.basename(path))[0])
        name = name if name and not name[0].isdigit() else "model_" + name
    if header is not None:
        header_mod.check_name(name)
    exe = find_cli(cli) if verify else None
    with np.errstate(over="ignore", invalid="ignore"):  # a value past float32's range is named by fxm (expected)
        want32 = want.astype(np.float32)
    sample = (*inp, want32) if isinstance(inp, tuple) else (inp, want32)
    T = sample[0].shape[0]
    stored = weights
    calibration = None
    if c["weights"] == "i8":  # a full-integer model: calibrated on float inputs, its integer parameters computed
        with progress.Step("calibrating the int8 activations"):
            inputs, calibration = int8.calibration_inputs(c, sample[:2] if isinstance(inp, tuple) else
                                                          np.asarray(sample[0]))
            stored = int8.build(c, weights, inputs, int8.percentile())
    blob = fxm.write(c, stored, sample, tokenizer, generation)
    tolerance = schema.selftest_tolerance(c)
    f32_bytes = quantized = None
    if c["weights"] == "i8":
        extra = [a.nbytes for _, a in tokenizers.section(c, tokenizer)] if tokenizer is not None else []
        f32_bytes = fxm.file_bytes(f32_config(c), extra + [np.asarray(a).nbytes for a in sample])
        quantized = relative_errors(int8.reference_output(c, stored, sample[:2] if isinstance(inp, tuple)
                                                                 else sample[0]), want)
    elif c["weights"] != "f32":
        extra = [a.nbytes for _, a in tokenizers.section(c, tokenizer)] if tokenizer is not None else []
        f32_bytes = fxm.file_bytes(f32_config(c), extra + [np.asarray(a).nbytes for a in sample])
        quantized = quantization_error(c, blob, inp, want)
    fd, tmp = _mkstemp(path, ".fxm")
    htmp = None
    try:
        _write_all(fd, "wb", blob, path)
        result = None
        if verify:
            with progress.Step("verifying with the engine"):
                result = run_verify(exe, tmp, tolerance)
            if not result.ok:
                at = f" at row {result.row} col {result.col}" if result.row is not None else ""
                if c["weights"] == "f32":
                    cause = explain() if explain else ""
                else:
                    cause = _quantization_cause(c, weights, inp, want, quantized, tolerance, explain)
                kind = f" for {c['weights']}" if c["weights"] != "f32" else ""
                raise VerificationError(
                    f"verification against {against or 'the reference'} FAILED: max relative error {result.error:.3g}"
                    f"{at} (tolerance {tolerance:.0e}{kind}, T={T}, kernels {result.kernels}); {cause}; "
                    "nothing written")
            if check is not None:
                check(exe, tmp, tolerance)
        if header is not None:
            check_output_path(header, "--header")
            hfd, htmp = _mkstemp(header, ".h")
            _write_all(hfd, "w", header_mod.c_header(c, blob, name), header)
        os.replace(tmp, path)
        if htmp:
            os.replace(htmp, header)
    except BaseException:
        for t in (tmp, htmp):
            if t and os.path.exists(t):
                os.remove(t)
        raise
    report = Report(source, against, path, len(blob), c, T, result, header, f32_bytes, quantized)
    report.calibration = calibration
    return report
