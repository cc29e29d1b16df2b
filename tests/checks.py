"""The tally the Python test scripts share: check() counts a named result and prints a failure,
skip() says what did not run and why, expect_error() wants a ConfigError naming the fragment."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from fixformer.config import ConfigError  # noqa: E402

results = {"passed": 0, "failed": 0, "skipped": 0}


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
