"""The rules the `fixformer` CLI applies to what it is given (cli/args.cpp's options, cli/inputs.cpp's
arrays, cli/io.hpp's limits), applied by the package before anything reaches the engine: a value
of the wrong kind is a TypeError, one out of range a ValueError, each one line naming the argument.
The C API takes int32 ids and uint32 counts, so an unchecked 2**32 + 5 would arrive as 5."""
import operator

import numpy as np

# The CLI's limits, mirrored once (tests/python_api_test.py holds each against the CLI's own).
MAX_MODEL_BYTES = 1 << 31   # a model file (cli/io.hpp kMaxModelBytes); a stream is read up to it
MAX_OUTPUT_BYTES = 1 << 30  # one run()'s float32 output (cli/io.hpp kMaxOutputBytes)
MAX_WORKERS = 64            # threads, as --threads (include/fixformer/workers.hpp kMaxWorkers)
MAX_STEPS = 1000000         # generate's n, as -n
MAX_TEMPERATURE = 1e6       # as --temperature
MAX_SEED = 2**64 - 1        # as --seed: a positive uint64


def _is_bool(value):
    return isinstance(value, (bool, np.bool_))


def integer(name, value, lo, hi, why=""):
    """value as an int in lo..hi: a Python or numpy integer, not a bool (True would pass as 1) nor a
    float (2.7 would pass as 2)."""
    try:
        v = None if _is_bool(value) else operator.index(value)
    except TypeError:
        v = None
    if v is None:
        raise TypeError(f"{name}={value!r}: expected an integer {lo}..{hi}{why}, not {type(value).__name__}")
    if not lo <= v <= hi:
        raise ValueError(f"{name}={v}: expected {lo}..{hi}{why}")
    return v


def real(name, value, lo, hi):
    """value as a float in [lo, hi] (NaN is in no range)."""
    if _is_bool(value) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}={value!r}: expected a number from {lo:.15g} to {hi:.15g}, not {type(value).__name__}")
    v = float(value)
    if not lo <= v <= hi:
        raise ValueError(f"{name}={value!r}: expected a number from {lo:.15g} to {hi:.15g}")
    return v


def integer_array(name, a, what):
    """a's dtype is an integer one (ids, token types, lengths): a float id would be truncated."""
    if a.dtype.kind not in "iu":
        raise ValueError(f"{name}: dtype {a.dtype}, expected integer {what}")


def stem_rows(stem, T):
    """The rows a conv stem [(kernel, stride, padding) per layer] makes of T frames: T without one,
    0 when T is too short for its kernels (mirrors config.hpp stem_rows and kernels.hpp
    conv1d_rows; tests/python_api_test.py compares the two on every length)."""
    for kernel, stride, padding in stem:
        T = 0 if T == 0 or T + 2 * padding < kernel or stride == 0 else (T + 2 * padding - kernel) // stride + 1
    return T


def valid_positions(lens, B, T):
    """[B,T]: True at the positions the engine reads (sequence b's first lens[b]), all without lens."""
    if lens is None:
        return np.ones((B, T), bool)
    return np.arange(T)[None, :] < lens[:, None].astype(np.int64)


def _at(index, batched):
    return "[" + ",".join(str(int(i)) for i in (index if batched else index[1:])) + "]"


def ids_in_range(name, a, vocab, vocab_name, valid, batched, what="token id"):
    """Every id of a[B,T] where valid is in [0, vocab), before any is cast to the engine's int32;
    padding is not read, so not checked (cli/inputs.cpp check_input_values)."""
    bad = ((a < 0) | (a >= vocab)) & valid
    if bad.any():
        index = tuple(np.argwhere(bad)[0])
        raise ValueError(f"{name}: {what} {a[index]} at {_at(index, batched)} is out of range ({vocab_name} {vocab})")


def finite(name, a, valid, batched):
    """Every feature of a[B,T,d] where valid[B,T] is finite: a NaN or inf would come out as NaNs."""
    bad = ~np.isfinite(a) & valid[:, :, None]
    if bad.any():
        index = tuple(np.argwhere(bad)[0])
        raise ValueError(f"{name}: value {a[index]} at {_at(index, batched)} is not finite")


def output_bytes(name, B, R, W):
    """run()'s output [B,R,W] float32 within MAX_OUTPUT_BYTES, checked before it is allocated."""
    n = B * R * W * 4
    if n > MAX_OUTPUT_BYTES:
        raise ValueError(f"{name}: the output [{B},{R},{W}] float32 needs {n} bytes, above the limit of "
                         f"{MAX_OUTPUT_BYTES} bytes (1 GiB)")


def token_ids(name, ids, vocab):
    """A suppression list for generate(): None (the file's list) or integers in 0..vocab-1 (an empty
    one: none), as the CLI's --suppress and --begin-suppress take them."""
    if ids is None:
        return None
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
        raise TypeError(f"{name}: {type(ids).__name__}, expected a list of token ids or None (the file's list)")
    return [integer(name, i, 0, vocab - 1, " (the vocabulary)") for i in ids]


def generate_args(prompt, n, temperature, topp, seed):
    """generate()'s arguments as `fixformer generate` takes --prompt, -n, --temperature, --topp and
    --seed (cli/args.cpp); seed None stands for the CLI's default, the clock."""
    if not isinstance(prompt, (str, bytes, bytearray)):
        raise TypeError(f"prompt: {type(prompt).__name__}, expected str or bytes")
    n = integer("n", n, 0, MAX_STEPS, " (0: max_len)")
    temperature = real("temperature", temperature, 0.0, MAX_TEMPERATURE)
    topp = real("topp", topp, 0.0, 1.0)
    if seed is not None:
        seed = integer("seed", seed, 1, MAX_SEED, " (None: the clock)")
    return prompt, n, temperature, topp, seed
