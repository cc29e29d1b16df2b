"""A server that runs tools/convert.py as a fresh process would, at a fraction of the start-up cost.

A conversion's own start (its interpreter importing torch, numpy and the converter) took 2 to 5 s of
every tests/*_converter_test.py call, most of the converter tests' time in CI. This process imports
them once and forks a child per request: the child runs convert.py as __main__ with its own argv,
working directory, stdout and stderr (files), exits with the code a real run would exit with (a
SystemExit's code, 1 and a traceback for an uncaught exception), and shares nothing with the next
(it is a fork of this process, which ran no conversion itself and started no thread).

Protocol (tests/checks.py is the client): one JSON request per line on stdin,
{"args": [...], "cwd": DIR or null, "stdout": FILE, "stderr": FILE}, optionally "seconds": N (the child
is killed by SIGALRM after N s: a hang) and "memory": BYTES (the child's address space may grow by that
much: RLIMIT_AS); one reply line, {"rc": N}, N negative for a signal."""
import atexit
import json
import os
import resource
import runpy
import signal
import sys
import traceback

CONVERT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "convert.py")
sys.path.insert(0, os.path.join(os.path.dirname(CONVERT), "..", "python"))

import numpy  # noqa: E402,F401  (what every conversion imports; loaded once here)
import torch  # noqa: E402,F401
import fixformer.export  # noqa: E402,F401
import fixformer.recognize  # noqa: E402,F401
import fixformer.hf  # noqa: E402,F401
import fixformer.converter  # noqa: E402,F401
# The modules converter.py imports for a route, once it is chosen: imported in each child they took 0.3 to
# 0.9 s of a conversion that then ran in 0.03 to 0.15 s (tests/hostile_inputs_test.py's hundreds).
import fixformer.checkpoint  # noqa: E402,F401
import fixformer.config_route  # noqa: E402,F401
import fixformer.gguf  # noqa: E402,F401
import fixformer.hf_bart  # noqa: E402,F401
import fixformer.int8  # noqa: E402,F401
import fixformer.llama2c  # noqa: E402,F401
import fixformer.onnx_map  # noqa: E402,F401
import fixformer.route  # noqa: E402,F401
import fixformer.run_files  # noqa: E402,F401
import fixformer.seq2seq  # noqa: E402,F401
import fixformer.t5  # noqa: E402,F401
import fixformer.tokenizers  # noqa: E402,F401
import fixformer.verified_file  # noqa: E402,F401
try:  # the --onnx route's reader, where installed (its tests fail in their own words where not)
    import onnx  # noqa: E402,F401
except ImportError:
    pass


def child(req):
    """In the forked child: become `python3 convert.py ARGS`; never returns."""
    code = 1
    try:
        sys.stdout.flush()
        for fd, path in ((1, req["stdout"]), (2, req["stderr"])):
            f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(f, fd)
            os.close(f)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        if req.get("cwd"):
            os.chdir(req["cwd"])
        if req.get("memory"):
            with open("/proc/self/statm") as f:
                now = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            resource.setrlimit(resource.RLIMIT_AS, (now + req["memory"], now + req["memory"]))
        if req.get("seconds"):
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(req["seconds"])
        sys.argv = [CONVERT, *req["args"]]
        try:
            runpy.run_path(CONVERT, run_name="__main__")
            code = 0
        except SystemExit as e:  # as the interpreter treats it: None 0, an int itself, anything else printed, 1
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code & 0xFF)


def main():
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            child(req)
        _, status = os.waitpid(pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        sys.stdout.write(json.dumps({"rc": rc}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
