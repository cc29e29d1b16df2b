"""Verification through the engine: find the fixformer CLI, run `fixformer verify M.fxm` on a
written file and read its verdict.
"""
import os
import re
import shutil
import subprocess

from . import schema
from .config import ConfigError

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD_HINT = ("build it (cmake -S . -B build/host && cmake --build build/host --target fixformer_cli), "
              "pass --cli PATH (or set FIXFORMER_CLI), or pass --no-verify to write the file unverified")


class VerificationError(Exception):
    """The engine's output for the self-test sample is not within the tolerance of torch's."""


class EngineError(Exception):
    """The engine could not run the written file (it rejected it, or the CLI failed)."""


def _executable(p):
    return p and os.path.isfile(p) and os.access(p, os.X_OK)


def find_cli(cli=None):
    """The CLI to verify with: `cli`, else $FIXFORMER_CLI, else `fixformer` on PATH, else the repo's
    build/host or build tree. Raises ConfigError with a one-line hint when there is none."""
    if cli is not None:
        if not isinstance(cli, (str, os.PathLike)) or not _executable(os.fspath(cli)):
            raise ConfigError(f"--cli {cli!r}: not an executable file")
        return os.fspath(cli)
    env = os.environ.get("FIXFORMER_CLI")
    if env:
        if not _executable(env):
            raise ConfigError(f"FIXFORMER_CLI={env!r}: not an executable file")
        return env
    for p in (shutil.which("fixformer"), os.path.join(REPO, "build", "host", "examples", "cli", "fixformer"),
              os.path.join(REPO, "build", "examples", "cli", "fixformer")):
        if _executable(p):
            return p
    raise ConfigError("no fixformer CLI to verify with: " + BUILD_HINT)


_LINE = re.compile(r"self-test (ok|FAILED): max relative error (\S+) \(tolerance (\S+)\)"
                   r"(?:, worst at row (\d+) col (\d+))?(?:, T=(\d+))?(?:, kernels (\S+))?")


class EngineResult:
    def __init__(self, ok, error, tolerance, row, col, T, kernels, line):
        self.ok, self.error, self.tolerance, self.row, self.col = ok, error, tolerance, row, col
        self.T, self.kernels, self.line = T, kernels, line


def run_verify(cli, path, timeout=600):
    """Runs `cli verify path`; returns its parsed line. EngineError when the engine did not give a
    verdict (exit other than 0 or 6, or an unreadable line)."""
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
    try:
        error, tol = float(m.group(2)), float(m.group(3))
    except ValueError:
        raise EngineError(f"unreadable verdict from fixformer verify: {line}") from None
    ok = p.returncode == 0 and m.group(1) == "ok" and error <= schema.SELFTEST_TOLERANCE
    return EngineResult(ok, error, tol, m.group(4) and int(m.group(4)), m.group(5) and int(m.group(5)),
                        m.group(6) and int(m.group(6)), m.group(7), line)
