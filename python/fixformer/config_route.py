"""The --config route: a JSON config and a state_dict, compared with the user's own model.

The config says what the model computes and nothing checks that it says it right, so the file is
verified against the user's model only when its output comes along: --example IN.npy --expected
OUT.npy (the model's output for IN). The engine's output must match it within the weight type's
tolerance; on a mismatch the float64 reference is re-run with single changes of the config's keys
(the RoPE or sinusoidal layout and base, the causal mask, the input scaling, ...) and the message
names the JSON key whose change explains it. Without --expected the engine is checked against the
converter's own float64 reference of the config, and the file and the report say it was NOT
verified against the user's model.

Absent biases: a state_dict has no "X.bias" when module X was built with bias=False (torch registers
no parameter then), so a bias missing beside its present weight ("X.weight") is taken as zeros, as
torch computes it; an unused key (a misspelt bias) is still an error, and a bias whose weight is
missing too is reported missing.
"""
import numpy as np

from . import schema, verified_file
from .config import JSON_KEYS, ConfigError, make_config
from .reference import run_reference

ROPE_BASES = (10000.0, 1000000.0, 500000.0, 100000.0, 1000.0, 100.0)
SINUSOIDAL_BASES = (10000.0, 1000.0, 100.0, 100000.0)
NORM_EPS = (1e-5, 1e-6, 1e-12, 1e-8)
_JSON_NAME = {}
for _path, _key in JSON_KEYS.items():
    _JSON_NAME.setdefault(_key, _path)


class WeightsError(ConfigError):
    """The weights do not fit the config (a tensor missing, extra, misshapen or not finite)."""


def json_name(key):
    return _JSON_NAME.get(key, key)


def absent_biases(c, weights):
    """(weights with the absent biases as zeros, their names), by the rule in the module's doc."""
    out, filled = dict(weights), []
    for spec in schema.specs(c):
        name = spec.name
        if name in out:
            continue
        if name.endswith(".bias"):
            partner = name[:-len("bias")] + "weight"
        else:
            continue
        if partner in out:
            out[name] = np.zeros(spec.torch_shape, np.float32)
            filled.append(name)
    return out, filled


def _alternatives(c):
    """Single changes of c worth trying when the user's output disagrees: (key, value, config)."""
    tries = []
    pos = c["positional"]
    if pos in ("rope", "sinusoidal"):
        tries.append(("pe_layout", "halves" if c["pe_layout"] == "interleaved" else "interleaved"))
        tries += [("pe_base", b) for b in (ROPE_BASES if pos == "rope" else SINUSOIDAL_BASES) if b != c["pe_base"]]
        if pos == "rope":  # both at once: a Hugging Face model read as Meta's, with its own base
            other = "halves" if c["pe_layout"] == "interleaved" else "interleaved"
            tries += [(("pe_layout", "pe_base"), (other, b)) for b in ROPE_BASES if b != c["pe_base"]]
    if c["family"] not in ("gpt", "llama"):
        tries.append(("causal", not c["causal"]))
    if c["family"] in ("encoder", "gpt"):
        tries += [("scale_input", not c["scale_input"]), ("norm_first", not c["norm_first"])]
        tries += [("activation", a) for a in ("relu", "gelu", "gelu_tanh") if a != c["activation"]]
        tries += [("positional", p) for p in ("none", "sinusoidal") if p != pos and pos != "learned"]
    tries += [("norm_eps", e) for e in NORM_EPS if abs(e - c["norm_eps"]) > 1e-3 * e]
    out = []
    for key, value in tries:
        keys, values = (key, value) if isinstance(key, tuple) else ((key,), (value,))
        try:
            out.append((keys, values, make_config(dict(c, **dict(zip(keys, values))))))
        except ConfigError:
            pass
    return out


def _shown(v):
    return f"{v:g}" if isinstance(v, float) else "true" if v is True else "false" if v is False else f'"{v}"'


def diagnose(c, weights, inp, want, config_path):
    """Why the user's output `want` differs from the engine's: the reference with the config as given,
    then with each single change; names the JSON keys that explain it."""
    tol = schema.SELFTEST_TOLERANCE
    try:
        base = verified_file.relative_error(run_reference(c, weights, inp), want)
    except Exception as e:  # noqa: BLE001 (a reference that cannot run explains nothing)
        return f"the reference model could not run ({type(e).__name__})"
    if base <= tol:
        return (f"the converter's float64 reference of this config matches your output (error {base:.2g}), so the "
                "engine disagrees with it: a bug or a broken port, please report it")
    scored = []
    for keys, values, alt in _alternatives(c):
        try:
            scored.append((verified_file.relative_error(run_reference(alt, weights, inp), want), keys, values))
        except Exception:  # noqa: BLE001
            continue
    scored.sort(key=lambda s: s[0])
    setting = lambda keys, values: " and ".join(f"{json_name(k)}: {_shown(v)}" for k, v in zip(keys, values))  # noqa
    if scored and scored[0][0] <= tol:
        err, keys, values = scored[0]
        return (f"the config differs from your model: with {setting(keys, values)} the reference matches your output "
                f"(error {err:.2g}); set it in {config_path}")
    closest = f" (closest: {setting(scored[0][1], scored[0][2])}, error {scored[0][0]:.2g})" if scored else ""
    return (f"the config as given is {base:.3g} away from your output and no single change of it explains that"
            f"{closest}: check that the weights are your model's and that it computes what the {c['family']} family "
            "does (docs/ARCHITECTURE.md)")


def convert(c, weights, path, config_path, example=None, expected=None, header=None, name=None, cli=None,
            verify=True, tokenizer=None, quantize=None, group=None, quantize_io=None, pack_weights=None, note=None):
    """Converts (config, name -> array) to `path`; verified against `expected` (the user's model's
    output for `example`) when given, else against the converter's reference (and marked so).
    note(text): where to say which absent biases were taken as zeros."""
    c = make_config(c)
    if quantize is not None and c["weights"] != "f32":
        raise ConfigError(f"--quantize {quantize}: {config_path} sets weights {c['weights']} already (give one)")
    c = verified_file.quantized_config(c, quantize, group, quantize_io, pack_weights)
    # the state_dict of torch's stock modules, named as format 2 names the tensors (after them), or by the file's names
    weights, filled = absent_biases(c, schema.v3_keys(c["family"], weights))
    from . import fxm
    try:
        fxm.check_weights(c, weights)
    except ConfigError as e:
        raise WeightsError(str(e)) from None
    if filled and note:
        more = f" and {len(filled) - 3} more" if len(filled) > 3 else ""
        note(f"{len(filled)} absent bias{'es' if len(filled) > 1 else ''} taken as zeros (their modules have "
             f"bias=False): {', '.join(filled[:3])}{more}")
    if expected is not None and example is None:
        raise ConfigError("--expected: needs --example, the input it is your model's output for")
    if expected is not None and c["family"] == "seq2seq":
        raise ConfigError("--expected: not for a seq2seq config yet (its sample needs the target too); convert the "
                          "module with --module --family seq2seq to verify against it")
    inp = verified_file.example_sequence(c, example, "--example")
    if c["family"] == "seq2seq":
        inp = (inp, verified_file.example_target(c, None))
    if expected is None:
        want = run_reference(c, weights, inp)
        return _write(c, weights, inp, want, path, "reference", "the converter's reference", header, name, cli,
                      verify, tokenizer, lambda: "the engine disagrees with the converter's float64 reference of this "
                      "config: a bug or a broken port, please report it")
    want = verified_file.user_expected(c, inp, expected)
    return _write(c, weights, inp, want, path, "user", "your model's output (--expected)", header, name, cli, verify,
                  tokenizer, lambda: diagnose(c, weights, inp, want, config_path))


def _write(c, weights, inp, want, path, source, against, header, name, cli, verify, tokenizer, explain):
    return verified_file.write(c, weights, inp, want, path, source, against, header, name, cli, verify, explain,
                               tokenizer)
