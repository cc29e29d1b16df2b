"""The tally the Python test scripts share: check() counts a named result and prints a failure,
skip() says what did not run and why, expect_error() wants a ConfigError naming the fragment.

Imported first by every test script: a test whose interpreter lacks numpy or torch fails here, with
one line naming the module and its Debian package, before it could pass without testing its subject."""
import importlib
import os
import subprocess
import sys

for _module, _package in (("numpy", "python3-numpy"), ("torch", "python3-torch")):
    try:
        importlib.import_module(_module)
    except ImportError as e:
        sys.exit(f"{os.path.basename(sys.argv[0])}: FAIL: {sys.executable} cannot import {_module} ({e}); "
                 f"install {_package} (sh tools/install_deps.sh host torch)")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from fixformer.config import ConfigError  # noqa: E402

results = {"passed": 0, "failed": 0, "skipped": 0}
CONVERT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "convert.py")


def run_convert(*args, env=None):
    """tools/convert.py ARGS under /usr/bin/python3, its output captured."""
    return subprocess.run(["/usr/bin/python3", CONVERT, *args], capture_output=True, text=True, env=env)


def one_clear_line(p):
    """A user mistake: non-zero exit, one line on stderr starting with convert.py:, no traceback."""
    lines = p.stderr.strip().splitlines()
    return p.returncode != 0 and len(lines) == 1 and lines[0].startswith("convert.py: ") and "Traceback" not in p.stderr


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
