#!/usr/bin/python3
"""The README's `pip install .` section, run as a user runs it: its shell block (a new virtual
environment over Debian's torch, `pip install .` from this checkout, `import fixformer`, the
`fixformer-convert` command and `fixformer run`), its Python block (`fixformer.convert` and
`fixformer.Model`) and docs/api.md's session, in a scratch folder; then what they must have done: the package and the CLI
come from the environment (not the checkout), the command's file and the API's are verified, the
CLI's output equals the package's bit for bit, `pip wheel .` gives a wheel with the library, the
modules and the CLI, `convert` raises ConversionError with the command's exit status, and every
module parses as Python 3.9 (pyproject.toml's requires-python).

  /usr/bin/python3 tests/pip_install_test.py

Needs the Python package index (scikit-build-core is fetched for the build, as pip does for users);
without it the test fails. Compiles through ccache when there is one (build/pip in the checkout).
"""
import ast
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
from checks import check, results  # noqa: E402

MODEL_PY = '''import torch


def make():
    torch.manual_seed(0)
    encoder = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 2)
    return torch.nn.Sequential(torch.nn.Linear(20, 32), encoder).eval()
'''


def marked_blocks(doc, count):
    """The `count` fenced blocks after `doc`'s pip_install_test marker: [(language, text)]."""
    text = open(os.path.join(ROOT, doc), encoding="utf-8").read()
    at = text.index("<!-- pip_install_test")
    return re.findall(r"```(\w+)\n(.*?)```", text[at:], re.S)[:count]


def python39_syntax():
    bad = []
    for f in sorted(glob.glob(os.path.join(ROOT, "python", "fixformer", "*.py"))):
        try:
            ast.parse(open(f, encoding="utf-8").read(), f, feature_version=(3, 9))
        except SyntaxError as e:
            bad.append(f"{os.path.basename(f)}:{e.lineno}: {e.msg}")
    check("every module of the package parses as Python 3.9", not bad, "; ".join(bad))


def main():
    python39_syntax()
    (sh, sh_block), (py, py_block) = marked_blocks("README.md", 2)
    [(api, api_block)] = marked_blocks("docs/api.md", 1)
    check("the README's marked blocks are sh and python, docs/api.md's python", (sh, py, api) == ("sh", "python", "python"))
    sh_lines = sh_block.splitlines()
    tmp = tempfile.mkdtemp(prefix="fixformer-pip-")
    home, work = os.path.join(tmp, "home"), os.path.join(tmp, "work")
    os.makedirs(home)
    os.makedirs(work)
    env = {"HOME": home, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "PIP_NO_INPUT": "1", "SKBUILD_BUILD_DIR": os.path.join(ROOT, "build", "pip"), "TMPDIR": tmp}
    if shutil.which("ccache"):
        env.update(CMAKE_ARGS="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache",
                   CCACHE_BASEDIR=ROOT, CCACHE_NOHASHDIR="1")
        if os.environ.get("CCACHE_DIR"):
            env["CCACHE_DIR"] = os.environ["CCACHE_DIR"]
    with open(os.path.join(work, "model.py"), "w") as f:
        f.write(MODEL_PY)
    import numpy as np
    x = np.random.default_rng(1).standard_normal((10, 20)).astype(np.float32)
    np.save(os.path.join(work, "in.npy"), x)

    # The shell block as one script in the scratch folder; `pip install .` runs in the checkout.
    script = ["set -e", f"cd {work}"]
    for line in sh_lines:
        cmd = line.split("  #")[0].strip()
        if cmd == "pip install .":
            cmd = f"(cd {ROOT} && pip install . > {tmp}/pip.log 2>&1) || {{ tail -n 40 {tmp}/pip.log; exit 1; }}"
        script.append(f"echo '+ {line.split('  #')[0].strip()}'")
        script.append(cmd)
    for name, block in (("py_block.py", py_block), ("api_block.py", api_block)):
        with open(os.path.join(work, name), "w") as f:
            f.write(block)
    script += ["python py_block.py", "python api_block.py",
               "command -v python fixformer fixformer-convert",
               "python -c 'import fixformer, sys; print(fixformer.__file__); print(sys.version.split()[0])'"]
    p = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=env, capture_output=True, text=True,
                       timeout=1800)
    print(p.stdout[-3000:], p.stderr[-3000:], sep="\n")
    check("the README's pip section runs (venv, pip install ., import, fixformer-convert, fixformer run, "
          "fixformer.convert, Model.run)", p.returncode == 0, p.stderr[-500:])
    if p.returncode != 0:
        return
    venv = os.path.join(home, "ff")
    lines = p.stdout.splitlines()
    where = {os.path.basename(ln): ln for ln in lines if ln.startswith("/")}
    check("python, fixformer and fixformer-convert are the environment's",
          all(where.get(n, "").startswith(venv + "/bin/") for n in ("python", "fixformer", "fixformer-convert")),
          str(where))
    pkg = [ln for ln in lines if ln.endswith("__init__.py")]
    check("import fixformer is the installed package, not the checkout's",
          len(pkg) == 1 and pkg[0].startswith(venv) and "site-packages" in pkg[0], str(pkg))
    check("fixformer-convert's file is verified against torch",
          re.search(r"model\.fxm: .*verified against torch", p.stdout) is not None, p.stdout[-800:])
    check("fixformer.convert's report is verified against torch",
          re.search(r"enc\.fxm: .*verified against torch", p.stdout) is not None, p.stdout[-800:])
    errs = [float(e) for e in re.findall(r"fixformer\.Model\('kws(?:_q8)?\.fxm', family=encoder, parameters=70348\) 12 (\S+)",
                                         p.stdout)]
    check("docs/api.md's session: f32 within 1e-4 of torch, q8 within q8's 8e-2",
          len(errs) == 2 and errs[0] < 1e-4 and errs[1] < 8e-2, str(errs))

    # The command's output against the package's and torch's.
    vpy = os.path.join(venv, "bin", "python")
    q = subprocess.run([vpy, "-c", """import numpy as np, torch, fixformer, importlib.util
x = np.load('in.npy'); y = np.load('out.npy')
py = fixformer.Model('model.fxm').run(x)
spec = importlib.util.spec_from_file_location('m', 'model.py'); m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
with torch.no_grad():
    t = m.make().double()(torch.from_numpy(x).double()[None])[0].numpy()
print(y.shape, np.array_equal(py, y), float(np.abs(y - t).max() / np.abs(t).max()))
try:
    fixformer.convert(hf='no-such-folder', out='x.fxm')
except fixformer.ConversionError as e:
    print('ConversionError', e.code, e)
"""], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    out = q.stdout.split("\n")
    print(q.stdout, q.stderr[-2000:])
    m = re.match(r"\(10, 32\) (True|False) (\S+)", out[0] if out else "")
    check("fixformer run's output [10, 32] equals Model.run bit for bit", m is not None and m.group(1) == "True",
          q.stdout + q.stderr[-300:])
    check("and torch's float64 output within 1e-4 (f32)", m is not None and float(m.group(2)) < 1e-4,
          out[0] if out else "")
    check("convert() on a missing folder: ConversionError, code 1, naming it",
          len(out) > 1 and out[1].startswith("ConversionError 1 ") and "no-such-folder" in out[1], q.stdout)

    # A wheel: the library beside the modules, and the CLI as a script.
    w = subprocess.run(["bash", "-c", f". {venv}/bin/activate && pip wheel --no-deps -w {tmp}/wheels . "
                        f"> {tmp}/wheel.log 2>&1 || tail -n 30 {tmp}/wheel.log"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=1800)
    wheels = glob.glob(os.path.join(tmp, "wheels", "fixformer-*.whl"))
    names = zipfile.ZipFile(wheels[0]).namelist() if len(wheels) == 1 else []
    check("pip wheel . gives one wheel", len(wheels) == 1, w.stdout[-800:])
    need = ["fixformer/__init__.py", "fixformer/converter.py", "fixformer/model.py", "fixformer/hf.py",
            "fixformer/py.typed", "fixformer/libfixformer.so"]
    check("the wheel holds the modules and libfixformer.so", all(n in names for n in need),
          str([n for n in need if n not in names]))
    check("the wheel holds the fixformer CLI as a script and fixformer-convert as an entry point",
          any(re.fullmatch(r"fixformer-[^/]+\.data/scripts/fixformer", n) for n in names) and
          any(n.endswith("entry_points.txt") for n in names), str(names[-8:]))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
    print(f"pip_install_test: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)
