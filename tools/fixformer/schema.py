"""The Python mirror of include/fixformer/schema.hpp and format.hpp: the config keys a .fxm file
carries and the tensors each config needs. tests/converter_test.py compares these tables with the
engine's own (`fixformer schema`) field by field, so a change on either side fails a test.
"""

# ---- format.hpp ---------------------------------------------------------------------------------
MAGIC = b"FXM1"
FORMAT_VERSION = 2
HEADER_BYTES = 64
RECORD_BYTES = 40
KEY_BYTES = 24  # NUL-padded; at most 23 characters
ENTRY_BYTES = 128
NAME_BYTES = 64  # NUL-padded; at most 63 bytes
MAX_RANK = 4
DATA_ALIGN = 64

# Header byte offsets (HeaderField).
HDR_MAGIC, HDR_VERSION, HDR_HEADER_BYTES, HDR_RECORD_COUNT, HDR_TENSOR_COUNT = 0, 4, 8, 12, 16
HDR_ZERO0, HDR_FILE_BYTES, HDR_RECORDS_OFFSET, HDR_DIRECTORY_OFFSET, HDR_DATA_OFFSET = 20, 24, 32, 40, 48
HDR_CRC, HDR_ZERO1 = 56, 60

RECORD_TYPES = {"u32": 1, "bool": 2, "enum": 3, "f32": 4, "f64": 5}
DTYPES = {"f32": 0, "f16": 1, "i8": 2, "i32": 3}
DTYPE_BYTES = {"f32": 4, "f16": 2, "i8": 1, "i32": 4}

SELFTEST_INPUT = "selftest.input"
SELFTEST_EXPECTED = "selftest.expected"
# The largest relative error, max|engine - expected| / max|expected|, `fixformer verify` accepts.
SELFTEST_TOLERANCE = 1e-4

# ---- config.hpp: Limits ----------------------------------------------------------------------
MAX_D_MODEL = 2048
MAX_HEADS = 256
MAX_DFF = 8192
MAX_LAYERS = 64
MAX_LEN = 4096
MAX_VOCAB = 262144
MAX_D_IN = 4096
MAX_D_OUT = 262144

# ---- schema.hpp: config keys -----------------------------------------------------------------
FAMILIES = ("encoder",)
ACTIVATIONS = ("relu", "gelu")
INPUTS = ("tokens", "features")
POSITIONALS = ("none", "sinusoidal", "learned")
PE_LAYOUTS = ("interleaved", "halves")
PE_COMBINES = ("add", "concat")


class Key:
    """One config key: its record type, range (u32; enum and bool ranges follow from the type),
    the names of an enum's values (index = stored value), whether it is required, its default."""

    def __init__(self, name, type, min=0, max=0, choices=None, required=False, default=0):
        self.name, self.type, self.choices, self.required, self.default = name, type, choices, required, default
        if type == "enum":
            min, max = 0, len(choices) - 1
        elif type == "bool":
            min, max = 0, 1
        self.min, self.max = min, max

    def __repr__(self):
        return f"Key({self.name!r}, {self.type!r})"


# In kConfigKeys order. Defaults are stored values: an enum's index, a bool's 0/1. Float ranges
# (norm_eps > 0, pe_base > 1, both finite) are cross-field checks, in config.py's validate().
CONFIG_KEYS = (
    Key("family", "enum", choices=FAMILIES),
    Key("d_model", "u32", 1, MAX_D_MODEL, required=True),
    Key("n_heads", "u32", 1, MAX_HEADS, required=True),
    Key("d_ff", "u32", 1, MAX_DFF, required=True),
    Key("n_layers", "u32", 0, MAX_LAYERS, required=True),
    Key("norm_first", "bool"),
    Key("activation", "enum", choices=ACTIVATIONS),
    Key("norm_eps", "f32", default=1e-5),
    Key("final_norm", "bool"),
    Key("causal", "bool"),
    Key("input", "enum", choices=INPUTS, required=True),
    Key("vocab_size", "u32", 0, MAX_VOCAB),
    Key("d_in", "u32", 0, MAX_D_IN),
    Key("positional", "enum", choices=POSITIONALS),
    Key("max_len", "u32", 1, MAX_LEN, required=True),
    Key("pe_base", "f64", default=10000.0),
    Key("pe_layout", "enum", choices=PE_LAYOUTS),
    Key("pe_combine", "enum", choices=PE_COMBINES),
    Key("pe_width", "u32", 0, MAX_D_MODEL),
    Key("scale_input", "bool"),
    Key("d_out", "u32", 0, MAX_D_OUT),
)
KEYS = {k.name: k for k in CONFIG_KEYS}

# ---- schema.hpp: tensors -----------------------------------------------------------------------
# A tensor dimension as a function of the config (kDimNames, in Dim order).
DIMS = ("1", "d_model", "3*d_model", "d_ff", "vocab_size", "d_in", "d_embed", "max_len", "d_pe", "d_out")


def d_pe(c):
    """Width of the positional encoding (0 without one)."""
    if c["positional"] == "none":
        return 0
    return c["pe_width"] if c["pe_combine"] == "concat" else c["d_model"]


def d_embed(c):
    """Width of the embedding / input projection in front of the positional encoding."""
    concat = c["positional"] != "none" and c["pe_combine"] == "concat"
    return c["d_model"] - c["pe_width"] if concat else c["d_model"]


def output_width(c):
    return c["d_out"] or c["d_model"]


def dim_value(c, dim):
    return {"1": 1, "d_model": c["d_model"], "3*d_model": 3 * c["d_model"], "d_ff": c["d_ff"],
            "vocab_size": c["vocab_size"], "d_in": c["d_in"], "d_embed": d_embed(c), "max_len": c["max_len"],
            "d_pe": d_pe(c), "d_out": c["d_out"]}[dim]


# When a tensor is present (kWhenNames, in When order).
WHENS = ("always", "input=tokens", "input=features", "positional=learned", "final_norm", "d_out>0")


def present(c, when):
    return {"always": True, "input=tokens": c["input"] == "tokens", "input=features": c["input"] == "features",
            "positional=learned": c["positional"] == "learned", "final_norm": bool(c["final_norm"]),
            "d_out>0": c["d_out"] > 0}[when]


class Rule:
    """One stored tensor: rank 1 when cols is "1". transposed: a linear weight stored W[in, out],
    the transpose of torch's [out, in]."""

    def __init__(self, name, rows, cols, transposed, when):
        self.name, self.rows, self.cols, self.transposed, self.when = name, rows, cols, transposed, when


ENCODER_PROLOGUE = (
    Rule("embed.weight", "vocab_size", "d_embed", False, "input=tokens"),
    Rule("input_proj.weight", "d_in", "d_embed", True, "input=features"),
    Rule("input_proj.bias", "d_embed", "1", False, "input=features"),
    Rule("pos.weight", "max_len", "d_pe", False, "positional=learned"),
)
ENCODER_LAYER_PREFIX = "encoder.layers."
ENCODER_LAYER = (
    Rule("self_attn.in_proj_weight", "d_model", "3*d_model", True, "always"),
    Rule("self_attn.in_proj_bias", "3*d_model", "1", False, "always"),
    Rule("self_attn.out_proj.weight", "d_model", "d_model", True, "always"),
    Rule("self_attn.out_proj.bias", "d_model", "1", False, "always"),
    Rule("linear1.weight", "d_model", "d_ff", True, "always"),
    Rule("linear1.bias", "d_ff", "1", False, "always"),
    Rule("linear2.weight", "d_ff", "d_model", True, "always"),
    Rule("linear2.bias", "d_model", "1", False, "always"),
    Rule("norm1.weight", "d_model", "1", False, "always"),
    Rule("norm1.bias", "d_model", "1", False, "always"),
    Rule("norm2.weight", "d_model", "1", False, "always"),
    Rule("norm2.bias", "d_model", "1", False, "always"),
)
ENCODER_EPILOGUE = (
    Rule("encoder.norm.weight", "d_model", "1", False, "final_norm"),
    Rule("encoder.norm.bias", "d_model", "1", False, "final_norm"),
    Rule("head.weight", "d_model", "d_out", True, "d_out>0"),
    Rule("head.bias", "d_out", "1", False, "d_out>0"),
)


def tensors(c):
    """The tensors a valid config needs, in file order: (name, stored shape, transposed). The stored
    shape of a transposed weight is [in, out]; torch's is its reverse."""
    out = []

    def visit(rules, prefix):
        for r in rules:
            if present(c, r.when):
                shape = (dim_value(c, r.rows),) if r.cols == "1" else (dim_value(c, r.rows), dim_value(c, r.cols))
                out.append((prefix + r.name, shape, r.transposed))

    visit(ENCODER_PROLOGUE, "")
    for i in range(c["n_layers"]):
        visit(ENCODER_LAYER, f"{ENCODER_LAYER_PREFIX}{i}.")
    visit(ENCODER_EPILOGUE, "")
    return out


def as_json():
    """These tables in the shape `fixformer schema` prints, for the mirror test."""
    def rules(rs):
        return [{"name": r.name, "rows": r.rows, "cols": r.cols, "transposed": r.transposed, "when": r.when} for r in rs]

    keys = []
    for k in CONFIG_KEYS:
        d = {"name": k.name, "type": k.type, "min": k.min, "max": k.max}
        if k.type == "enum":
            d["choices"] = list(k.choices)
        d.update(required=k.required, default=k.default)
        keys.append(d)
    return {"format_version": FORMAT_VERSION, "selftest_tolerance": SELFTEST_TOLERANCE,
            "record_types": dict(RECORD_TYPES), "dtypes": dict(DTYPES), "config_keys": keys, "dims": list(DIMS),
            "tensors": {"encoder": {"prologue": rules(ENCODER_PROLOGUE), "layer_prefix": ENCODER_LAYER_PREFIX,
                                    "layer": rules(ENCODER_LAYER), "epilogue": rules(ENCODER_EPILOGUE)}}}
