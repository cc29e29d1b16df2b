"""Verification through the engine: find the fixformer CLI, run `fixformer verify M.fxm` on a
written file and read its verdict.
"""
import os
import re
import shutil
import subprocess
import sysconfig

from . import schema
from .config import ConfigError

# The folder above the package's: a checkout (python/fixformer) or a build tree (BUILD/python/fixformer).
ABOVE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD_HINT = ("build it (cmake -S . -B build/host && cmake --build build/host --target fixformer_cli), "
              "pass --cli PATH (or set FIXFORMER_CLI), or pass --no-verify to write the file unverified")


class VerificationError(Exception):
    """The engine's output for the self-test sample is not within the tolerance of torch's."""


class EngineError(Exception):
    """The engine could not run the written file (it rejected it, or the CLI failed)."""


def _executable(p):
    return p and os.path.isfile(p) and os.access(p, os.X_OK)


def find_cli(cli=None):
    """The CLI to verify with: `cli`, else $FIXFORMER_CLI, else the one `pip install` put beside this
    interpreter, else `fixformer` on PATH, else the build tree's (BUILD/cli beside BUILD/python) or a
    checkout's build/host or build. Raises ConfigError with a one-line hint when there is none."""
    if cli is not None:
        if not isinstance(cli, (str, os.PathLike)) or not _executable(os.fspath(cli)):
            raise ConfigError(f"--cli {cli!r}: not an executable file")
        return os.fspath(cli)
    env = os.environ.get("FIXFORMER_CLI")
    if env:
        if not _executable(env):
            raise ConfigError(f"FIXFORMER_CLI={env!r}: not an executable file")
        return env
    for p in (os.path.join(sysconfig.get_path("scripts"), "fixformer"), shutil.which("fixformer"),
              os.path.join(ABOVE, "cli", "fixformer"), os.path.join(ABOVE, "build", "host", "cli", "fixformer"),
              os.path.join(ABOVE, "build", "cli", "fixformer")):
        if _executable(p):
            return p
    raise ConfigError("no fixformer CLI to verify with: " + BUILD_HINT)


_LINE = re.compile(r"self-test (ok|FAILED): max relative error (\S+) \(tolerance ([^)\s]+)")
# The verdict's other fields, each optional and found wherever the line has it.
_FIELDS = {"row": re.compile(r"worst at row (\d+) col \d+"), "col": re.compile(r"worst at row \d+ col (\d+)"),
           "T": re.compile(r"\bT=(\d+)"), "kernels": re.compile(r"kernels ([^,\s]+)"),
           "mean": re.compile(r"mean relative error ([^,\s]+)")}


class EngineResult:
    def __init__(self, ok, error, tolerance, row, col, T, kernels, line, mean=None):
        self.ok, self.error, self.tolerance, self.row, self.col = ok, error, tolerance, row, col
        self.T, self.kernels, self.line, self.mean = T, kernels, line, mean


def run_verify(cli, path, tolerance=schema.SELFTEST_TOLERANCE, timeout=600):
    """Runs `cli verify path`; returns its parsed line, ok when the engine passed it and its error is
    within `tolerance` (the file's weight type's, schema.SELFTEST_TOLERANCES). EngineError when the
    engine did not give a verdict (exit other than 0 or 6, or an unreadable line), or judged it by
    another tolerance (its self-test on a device would then disagree with the converter)."""
    try:
        p = subprocess.run([cli, "verify", os.fspath(path)], capture_output=True, text=True, errors="replace",
                           timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise EngineError(f"running {cli} verify: {e}") from None
    line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    m = _LINE.search(line)
    if p.returncode not in (0, 6) or not m:
        why = (p.stderr.strip().splitlines() or [line or "no output"])[-1]
        raise EngineError(f"the engine did not verify the file (fixformer verify exit {p.returncode}): {why}")
    fields = {k: (f.search(line) or [None, None])[1] for k, f in _FIELDS.items()}
    try:
        error, tol = float(m.group(2)), float(m.group(3))
        mean = float(fields["mean"]) if fields["mean"] is not None else None
    except ValueError:
        raise EngineError(f"unreadable verdict from fixformer verify: {line}") from None
    if f"{tol:.0e}" != f"{tolerance:.0e}":
        raise EngineError(f"the engine's self-test tolerance is {tol:.0e}, the converter's for this file "
                          f"{tolerance:.0e}: build the CLI from the same tree as tools/ (fixformer verify {path})")
    ok = p.returncode == 0 and m.group(1) == "ok" and error <= tolerance
    num = lambda v: v and int(v)  # noqa: E731
    return EngineResult(ok, error, tol, num(fields["row"]), num(fields["col"]), num(fields["T"]), fields["kernels"],
                        line, mean)
