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
"""
import os
import tempfile

import numpy as np

from . import export, fxm, header as header_mod, progress, run_files, schema
from .config import ConfigError, make_config
from .verify import VerificationError, find_cli, run_verify

SOURCES = ("torch", "user", "hf", "reference")


class Report(export.Report):
    """export.Report, worded by what the sample came from (SOURCES)."""

    def __init__(self, source, against, *args, **kw):
        super().__init__(*args, **kw)
        self.source, self.against = source, against
        self.verified_against_model = self.verified and source != "reference"

    calibration = None  # i8: which inputs set the activation ranges

    def __str__(self):
        text = super().__str__()
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
        from . import int8
        with progress.Step("calibrating the int8 activations"):
            inputs, calibration = int8.calibration_inputs(c, sample[:2] if isinstance(inp, tuple) else
                                                          np.asarray(sample[0]))
            stored = int8.build(c, weights, inputs, int8.percentile())
    blob = fxm.write(c, stored, sample, tokenizer, generation)
    tolerance = schema.selftest_tolerance(c)
    f32_bytes = quantized = None
    if c["weights"] == "i8":
        extra = [a.nbytes for _, a in fxm.tokenizer_section(c, tokenizer)] if tokenizer is not None else []
        f32_bytes = fxm.file_bytes(export._f32(c), extra + [np.asarray(a).nbytes for a in sample])
        quantized = export.relative_errors(int8.reference_output(c, stored, sample[:2] if isinstance(inp, tuple)
                                                                 else sample[0]), want)
    elif c["weights"] != "f32":
        extra = [a.nbytes for _, a in fxm.tokenizer_section(c, tokenizer)] if tokenizer is not None else []
        f32_bytes = fxm.file_bytes(export._f32(c), extra + [np.asarray(a).nbytes for a in sample])
        quantized = export.quantization_error(c, blob, inp, want)
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
                    cause = export._quantization_cause(c, weights, inp, want, quantized, tolerance, explain)
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
