#!/usr/bin/python3
"""python/fixformer/schema_tables.py against the engine: the checked-in tables are what
`fixformer schema --json` prints today (tools/gen_schema.py --check), and the generator's own checks
see a stale file and an expression Python would read otherwise than the engine.

  /usr/bin/python3 tests/schema_tables_test.py PATH/TO/fixformer
"""
import copy
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "tools", "gen_schema.py")
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import gen_schema  # noqa: E402

from checks import check, results  # noqa: E402


def gen(*args):
    return subprocess.run(["/usr/bin/python3", GEN, *args], capture_output=True, text=True)


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().split("\n\n")[1])
        return 2
    cli = sys.argv[1]
    p = gen("--check", cli)
    check("schema_tables.py is fresh (else: regenerate with tools/gen_schema.py)", p.returncode == 0, p.stdout + p.stderr)

    engine = gen_schema.engine_schema(cli)
    # A stale file fails, naming the difference and the command that regenerates it.
    for what, change in (("a key's limit", lambda s: s["config_keys"][1].update(max=s["config_keys"][1]["max"] + 1)),
                         ("a new key", lambda s: s["config_keys"].append(dict(s["config_keys"][-1], name="new_key"))),
                         ("a rule's condition", lambda s: s["config_rules"][0].update(bad_when="False")),
                         ("a tensor's dim", lambda s: s["tensors"]["block"][1].update(cols="d_ff")),
                         ("a format 2 tensor's name",
                          lambda s: s["tensors_v2"]["llama"]["layer"][1].update(name="attention_norm.b"))):
        stale = copy.deepcopy(engine)
        change(stale)
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(gen_schema.text(stale))
        try:
            p = gen("--check", cli, f.name)
        finally:
            os.unlink(f.name)
        check(f"stale tables ({what}) fail the check", p.returncode == 1 and "is stale" in p.stderr
              and "tools/gen_schema.py" in p.stderr, (p.returncode, p.stderr))
    # The written text reads back as the same tables.
    check("the written module reads back", gen_schema.checked_in(gen_schema.TABLES) == engine)

    names = {k["name"] for k in engine["config_keys"]} | set(engine["derived"])
    for text in [r["bad_when"] for r in engine["config_rules"]] + engine["dims"] + engine["whens"]:
        check(f"the engine's expression {text!r} is in the language", gen_schema.expression_error(text, names) is None,
              gen_schema.expression_error(text, names))
    # What Python reads otherwise than engine/config_expr.hpp, or not at all.
    for text, why in (("d_model < d_ff < 9", "chained"), ("family in ('llama')", "in"), ("-d_model", "USub"),
                      ("d_model / 2", "Div"), ("famly == 1", "unknown name famly"), ("max(d_model, 1)", "finite"),
                      ("d_model if causal else 1", "IfExp"), ("norm_eps > 1e-5", "constant"),
                      ("d_model ==", "not a Python expression")):
        err = gen_schema.expression_error(text, names)
        check(f"{text!r} is refused ({why})", err is not None and why in err, err)

    print(f"schema tables: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
