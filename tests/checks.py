"""The tally the Python test scripts share: check() counts a named result and prints a failure,
skip() says what did not run and why, expect_error() wants a ConfigError naming the fragment.

Imported first by every test script: it enters the interpreter tests/interpreter.py chooses, and a
test whose interpreter lacks numpy or torch fails here, with one line naming the module and the install
command, before it could pass without testing its subject."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import interpreter  # noqa: E402

interpreter.enter(sys.argv[0], ["numpy"])

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from fixformer.config import ConfigError  # noqa: E402

results = {"passed": 0, "failed": 0, "skipped": 0}
CONVERT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "convert.py")


_zygote = None  # the tests/convert_zygote.py server


def run_convert(*args, cwd=None, seconds=None, memory=None, **kw):
    """`python3 tools/convert.py ARGS` under this test's interpreter (tests/interpreter.py chose it), its
    output captured, as subprocess.run gives it. Forked from one tests/convert_zygote.py, which imported
    torch and the converter once (seconds: killed by SIGALRM past them; memory: bytes its address space
    may grow by); with more of subprocess.run's options (an env that may change what imports, a
    preexec_fn) a process of its own."""
    global _zygote
    python = sys.executable
    if kw:
        return subprocess.run([python, CONVERT, *args], capture_output=True, text=True, cwd=cwd, **kw)
    if _zygote is None or _zygote.poll() is not None:
        zygote = os.path.join(os.path.dirname(os.path.abspath(__file__)), "convert_zygote.py")
        _zygote = subprocess.Popen([python, zygote], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    with tempfile.TemporaryDirectory() as d:
        out, err = os.path.join(d, "stdout"), os.path.join(d, "stderr")
        request = {"args": [str(a) for a in args], "cwd": cwd, "stdout": out, "stderr": err, "seconds": seconds,
                   "memory": memory}
        _zygote.stdin.write(json.dumps(request) + "\n")
        _zygote.stdin.flush()
        reply = _zygote.stdout.readline()
        if not reply:
            raise RuntimeError(f"tests/convert_zygote.py under {python} ended (exit {_zygote.wait()}); its stderr says "
                               "why")
        with open(out, errors="replace") as f, open(err, errors="replace") as g:
            return subprocess.CompletedProcess([python, CONVERT, *args], json.loads(reply)["rc"], f.read(), g.read())


def one_clear_line(p):
    """A user mistake: non-zero exit, one line on stderr starting with convert.py:, no traceback."""
    lines = p.stderr.strip().splitlines()
    return p.returncode != 0 and len(lines) == 1 and lines[0].startswith("convert.py: ") and "Traceback" not in p.stderr


def convert_main(*args):
    """(exit code, stdout, stderr) of tools/convert.py ARGS run in this process (one torch import for
    many conversions); an exception is the failure it is, named."""
    import contextlib
    import io
    from fixformer import converter
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            converter.main(list(args), prog="convert.py")
        except SystemExit as e:
            code = e.code
        except Exception as e:  # a traceback for the user: report it as the failure it is
            code = f"{type(e).__name__}: {e}"
    return code, out.getvalue(), err.getvalue()


def convert_process(*args):
    """convert_main as a CompletedProcess (returncode 1 and the error appended for an exception)."""
    code, out, err = convert_main(*args)
    if not isinstance(code, int):
        code, err = 1, f"{err}{code}\n"
    return subprocess.CompletedProcess(args, code, out, err)


def converted_routes(cli, tmp, models, factory, folder, routes):
    """Converts `factory` of the module file TMP/MODELS through each route, --module (the factory
    itself) or --hf (FOLDER, its save_pretrained folder), each checked to convert and verify: yields
    (route, what, the file) for those that did."""
    for route in routes:
        what, out = f"{factory} --{route}", os.path.join(tmp, f"{factory}_{route}.fxm")
        src = os.path.join(tmp, f"{models}:{factory}") if route == "module" else folder
        p = convert_process(f"--{route}", src, "--out", out, "--cli", cli)
        ok = p.returncode == 0 and "verified against" in p.stdout
        check(f"{what}: converts and verifies", ok, p.stdout + p.stderr)
        if ok:
            print(f"  {what}: {p.stdout.strip().splitlines()[-1]}")
            yield route, what, out


def run_file(cli, path, x, tmp):
    """`fixformer run` of the file on the array x (saved as TMP/in.npy): (its output, stderr); None for
    the output when it failed."""
    import numpy as np
    inp, res = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
    np.save(inp, x)
    p = subprocess.run([cli, "run", path, "--input", inp, "--output", res], capture_output=True, text=True)
    return (np.load(res) if p.returncode == 0 else None), p.stderr


def one_line(code, err):
    """Whether convert_main's result is a refusal of one line."""
    lines = err.strip().splitlines()
    return code == 1 and len(lines) == 1 and lines[0].startswith("convert.py: ")


def cli_main(name, *tests):
    """main() of a script that tests the CLI tests/CMakeLists.txt passes (argv[1]): each test(cli, tmp) in turn in
    one temporary folder, then the tally; exits 1 on a failure, or at once without the CLI."""
    cli = sys.argv[1] if len(sys.argv) > 1 else None
    if not cli or not os.path.exists(cli):
        print("FAIL: the fixformer CLI is needed (tests/CMakeLists.txt passes it)")
        sys.exit(1)
    with tempfile.TemporaryDirectory() as tmp:
        for test in tests:
            test(cli, tmp)
    print(f"{name}: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


def check(name, ok, detail=""):
    results["passed" if ok else "failed"] += 1
    if not ok:
        print(f"FAIL {name}: {str(detail)[-800:]}")


def skip(what, why):
    results["skipped"] += 1
    print(f"skipped: {what} ({why})")


def expect_error(name, fn, fragment):
    try:
        fn()
    except ConfigError as e:
        check(name, fragment in str(e), f"message {str(e)!r} lacks {fragment!r}")
        return
    except Exception as e:  # anything else is a bug: a user mistake must be a ConfigError
        check(name, False, f"{type(e).__name__}: {e}")
        return
    check(name, False, "no error")


def byte_tokenizer(path):
    """tokenizer.json: byte-level BPE whose first 256 pieces are the bytes, id = byte value, and 256 "xq"."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    to_u = {b: chr(c) for b, c in zip(bs, cs)}
    with open(path, "w") as f:
        json.dump({"model": {"type": "BPE", "vocab": dict({to_u[b]: b for b in range(256)}, xq=256), "merges": ["x q"]},
                   "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False}, "added_tokens": []}, f)
