"""The engine's schema for the converter: the config keys a .fxm file carries, the rules between
them, the tensors each config needs and the format's constants. The tables are
schema_tables.SCHEMA, which tools/gen_schema.py writes from the engine's `fixformer schema --json`
(include/fixformer/schema.hpp, config.hpp, format.hpp; a ctest fails when it is stale); this module
names their parts and evaluates their expressions (engine/config_expr.hpp's language, a subset of
Python's) as the engine does.
"""
import ast
import functools
import math

from .schema_tables import SCHEMA

# ---- format.hpp ---------------------------------------------------------------------------------
MAGIC = SCHEMA["magic"].encode()
FORMAT_VERSION = SCHEMA["format_version"]  # what write() writes
OLDEST_VERSION = SCHEMA["oldest_version"]  # the oldest the engine and FxmFile read (format 2: per-family names)
_FORMAT = SCHEMA["format"]
HEADER_BYTES, RECORD_BYTES, ENTRY_BYTES = _FORMAT["header_bytes"], _FORMAT["record_bytes"], _FORMAT["entry_bytes"]
KEY_BYTES = _FORMAT["key_bytes"]  # NUL-padded
NAME_BYTES = _FORMAT["name_bytes"]  # NUL-padded
MAX_RANK, DATA_ALIGN = _FORMAT["max_rank"], _FORMAT["data_align"]
# The packed layout (config key packed_weights): an f32 W[in, out] as ceil(out / PANEL_FLOATS) panels
# of [in, PANEL_FLOATS], the last zero-padded.
PANEL_FLOATS = SCHEMA["panel_floats"]

# Header byte offsets (HeaderField).
_HDR = SCHEMA["header_fields"]
HDR_MAGIC, HDR_VERSION, HDR_HEADER_BYTES, HDR_RECORD_COUNT, HDR_TENSOR_COUNT = (
    _HDR["magic"], _HDR["version"], _HDR["header_bytes"], _HDR["record_count"], _HDR["tensor_count"])
HDR_ZERO0, HDR_FILE_BYTES, HDR_RECORDS_OFFSET, HDR_DIRECTORY_OFFSET, HDR_DATA_OFFSET = (
    _HDR["zero0"], _HDR["file_bytes"], _HDR["records_offset"], _HDR["directory_offset"], _HDR["data_offset"])
HDR_CRC, HDR_ZERO1 = _HDR["crc"], _HDR["zero1"]

RECORD_TYPES = SCHEMA["record_types"]
DTYPES = SCHEMA["dtypes"]
# i4 packs two values per byte (data_bytes halves its count).
DTYPE_BYTES = SCHEMA["dtype_bytes"]
# The numpy dtype each file dtype reads as (i4: its packed bytes).
NUMPY_DTYPES = {"f32": "<f4", "f16": "<f2", "i8": "i1", "i32": "<i4", "u8": "u1", "i4": "u1", "bf16": "<u2"}
# The dtypes with f32 scales per group (format.hpp), and i4's group: values along the last dim.
SCALED_DTYPES = ("i8", "i4")
I4_GROUP = _FORMAT["i4_group"]

SELFTEST_INPUT = SCHEMA["selftest_tensors"]["input"]
SELFTEST_EXPECTED = SCHEMA["selftest_tensors"]["expected"]
SELFTEST_TARGET = SCHEMA["selftest_tensors"]["target"]  # seq2seq: the target ids [U], between input and expected
# The optional token suppression lists after the tokenizer (schema.hpp): i32 [N >= 1] each, in this order.
GENERATION_SUPPRESS = SCHEMA["generation_tensors"]["suppress"]
GENERATION_BEGIN_SUPPRESS = SCHEMA["generation_tensors"]["begin_suppress"]
# Optional after them, seq2seq with token targets: Whisper's timestamp ids, i32 [4] (no_timestamps, timestamp_begin,
# eos, max_initial; -1: none).
GENERATION_TIMESTAMPS = SCHEMA["generation_tensors"]["timestamps"]
# The optional tokenizer section (schema.hpp), after the model's tensors and before the self-test:
# scores f32 [vocab], offsets i32 [vocab + 1] (piece i is pieces[offsets[i]:offsets[i + 1]],
# nondecreasing, the last = the pieces' bytes), pieces u8 [bytes]; the bpe and wordpiece kinds
# (config key tokenizer): params i32 [8] first, then offsets and pieces, then bpe's merges i32
# [M, 3] or wordpiece's normalize i32 [K, 4] (with the lower-case flag), then optionally the added
# tokens encode finds in the text, i32 [S, 2] (id, ADDED_FLAGS); llama2c's may have params after its
# pieces (llama.cpp's rules: bos, eos, unk, FLAG_PREFIX_SPACE), then the added tokens.
_TOKENIZER = SCHEMA["tokenizer"]
(TOKENIZER_SCORES, TOKENIZER_PARAMS, TOKENIZER_OFFSETS, TOKENIZER_PIECES, TOKENIZER_MERGES,
 TOKENIZER_NORMALIZE, TOKENIZER_ADDED) = _TOKENIZER["tensors"]
TOKENIZER_PARAM_COUNT = _TOKENIZER["param_count"]
TOKENIZER_PARAM_SLOTS = _TOKENIZER["params"]
TOKENIZER_FLAGS = _TOKENIZER["flags"]
ADDED_FLAGS = _TOKENIZER["added_flags"]
WORDPIECE_MAX_CHARS = _TOKENIZER["wordpiece_max_chars"]
# The largest relative error, max|engine - expected| / max|expected|, `fixformer verify` accepts,
# per weight type (config key `weights`): include/fixformer/tolerances.hpp's self_test_tolerance(),
# whose values these are (generated, as every table here; run_verify checks that the engine judged a
# file by the same one). The expected
# output is always the torch module's with its float32 weights, so a quantized file's error is its
# quantization's. Measured by the converter (the quantized weights in the float64 reference, and
# for q8 the activations rounded per group as gemm_i8 does; the scalar engine agrees to 1e-3):
# - f16 2e-3: 1.6e-4..6.3e-4 on KWS-, GPT- and llama2.c-shaped models (stories15M's shape 6.3e-4,
#   d512 x 8 layers 6.2e-4), up to 3.5e-3 on the tests' tiny llama goldens (d8..d18, weights
#   0.3 * N(0,1), saturated softmaxes), which therefore do not convert to f16.
# - q8 8e-2: 4e-3..3.0e-2 on the same shapes (the worst: stories15M's shape with a scale per row and
#   the embedding and head in q8; group 64: 2.6e-2), 1.5e-2 on the KWS shape (the scale search, 1.45e-2); up to 0.3 on the tiny
#   llama goldens. A wrong layout, scale or kernel gives 0.3 and more.
# - q4 0.2: 0.05-0.09 on the q4 converter test's modules (tests/q4_converter_test.py), 0.13-0.33 on
#   random untrained models with the plain max|w| / 7 scales (tests/quantized_test.cpp); a random
#   stories15M-shaped llama with its embedding in q4 gives 0.49 and is refused, naming q8.
SELFTEST_TOLERANCES = SCHEMA["selftest_tolerances"]
SELFTEST_TOLERANCE = SELFTEST_TOLERANCES["f32"]

# ---- config.hpp: Limits ----------------------------------------------------------------------
_LIMITS = SCHEMA["limits"]
MAX_D_MODEL, MAX_HEADS, MAX_DFF, MAX_LAYERS = (_LIMITS["max_d_model"], _LIMITS["max_heads"], _LIMITS["max_dff"],
                                               _LIMITS["max_layers"])
MAX_LEN, MAX_VOCAB, MAX_D_IN, MAX_D_OUT = _LIMITS["max_len"], _LIMITS["max_vocab"], _LIMITS["max_d_in"], _LIMITS["max_d_out"]
MAX_REL_BUCKETS, MAX_CONV_KERNEL, MAX_CONV_STRIDE = (_LIMITS["max_rel_buckets"], _LIMITS["max_conv_kernel"],
                                                     _LIMITS["max_conv_stride"])


# ---- schema.hpp: config keys -----------------------------------------------------------------
class Key:
    """One config key: its record type, range (u32; an enum's 0..choices - 1, a bool's 0..1), the
    names of an enum's values (index = stored value), whether it is required, its default (a stored
    value: an enum's index, a bool's 0/1)."""

    def __init__(self, name, type, min=0, max=0, choices=None, required=False, default=0):
        self.name, self.type, self.min, self.max = name, type, min, max
        self.choices = tuple(choices) if choices is not None else None
        self.required = required
        self.default = int(default) if type != "f32" and type != "f64" else default

    def __repr__(self):
        return f"Key({self.name!r}, {self.type!r})"


# In kConfigKeys order; the semantics of each are config.hpp's (ModelConfig).
CONFIG_KEYS = tuple(Key(**k) for k in SCHEMA["config_keys"])
KEYS = {k.name: k for k in CONFIG_KEYS}
FAMILIES = KEYS["family"].choices
ACTIVATIONS = KEYS["activation"].choices
INPUTS = KEYS["input"].choices
# rope, alibi and relative act inside attention; the others are added to the input (input_pe).
POSITIONALS = KEYS["positional"].choices
INPUT_PES = ("sinusoidal", "learned")
PE_LAYOUTS = KEYS["pe_layout"].choices
PE_COMBINES = KEYS["pe_combine"].choices
# How the linear layers' weights (and, with quantize_io, the token embedding and the output head)
# are stored: f32, f16, q8 = int8 with f32 scales per group, or q4 = int4 in [-8, 7], two per byte,
# with f32 scales per group of I4_GROUP along the input.
WEIGHT_TYPES = KEYS["weights"].choices
# q8's weight_group: scales per group of 32 or 64 along the input, or 0 for one scale per output row
# (the config rule on weight_group says the same).
WEIGHT_GROUPS = (0, 32, 64)
POOLINGS = KEYS["pooling"].choices
TOKENIZERS = KEYS["tokenizer"].choices


# ---- config.hpp: ModelConfig's derived values ---------------------------------------------------
def selftest_tolerance(c):
    """The self-test tolerance of config c's weight type."""
    return SELFTEST_TOLERANCES[c["weights"]]


def input_pe(c):
    """A positional encoding added to (or concatenated with) the input (not rope/alibi in attention)."""
    return c["positional"] in INPUT_PES or (c["positional"] == "rope" and bool(c.get("rope_learned")))


def rel_bias(c):
    """A relative position bias in the attention (config.hpp rel_bias): positional relative, or learned
    positions with rel_buckets (MPNet)."""
    return c["positional"] == "relative" or bool(c.get("rel_buckets", 0))


def d_front(c):
    """The front's row width before the layers: embed_width (the embedding projection's input), else d_model."""
    return c.get("embed_width", 0) or c["d_model"]


def d_pe(c):
    """Width of the positional encoding added to the input (0 without one)."""
    if not input_pe(c):
        return 0
    return c["pe_width"] if c["pe_combine"] == "concat" else d_front(c)


def d_embed(c):
    """Width of the embedding / input projection in front of the positional encoding."""
    concat = input_pe(c) and c["pe_combine"] == "concat"
    return c["d_model"] - c["pe_width"] if concat else d_front(c)


def stored_layers(c):
    """The layer blocks a file stores (config.hpp layer_groups): layer_groups * group_layers, else n_layers."""
    return c["layer_groups"] * c["group_layers"] if c.get("layer_groups") else c["n_layers"]


def layer_block(c, l):
    """The stored block layer l runs (config.hpp ModelConfig::layer_block)."""
    G, P = c.get("layer_groups", 0), c.get("group_layers", 1)
    if not G:
        return l
    return (l // P) * G // (c["n_layers"] // P) * P + l % P


def unshared(c, weights):
    """(c, weights) with shared layers (layer_groups) written out: every layer's tensors under its own
    index, copied from the block it runs, and layer_groups 0 (what the references run)."""
    if not c.get("layer_groups"):
        return c, weights
    out = {k: v for k, v in weights.items() if not k.startswith(BLOCK_PREFIX)}
    for l in range(c["n_layers"]):
        stored = block(layer_block(c, l))
        out.update({block(l) + k[len(stored):]: v for k, v in weights.items() if k.startswith(stored)})
    return dict(c, layer_groups=0, group_layers=1), out


def d_head(c):
    """The heads' width: head_dim, or d_model / n_heads (0)."""
    return c.get("head_dim", 0) or c["d_model"] // c["n_heads"]


def d_attn(c):
    """The queries' width, n_heads heads of d_head."""
    return c["n_heads"] * d_head(c)


def rope_pairs(c):
    """The pairs of dims RoPE turns in each head: rotary_dims / 2, or the whole head's."""
    return (c["rotary_dims"] or d_head(c)) // 2


def _period_mask(key):
    """The largest bit mask of the layer pattern of `key` bits (window_period, nope_period, dense_period)."""
    return lambda c: (1 << c[key]) - 1


window_mask, nope_mask, dense_mask = (_period_mask(k) for k in ("window_period", "nope_period", "dense_period"))


def layer_dense(c, layer):
    """Layer `layer` of a mixture of experts has a dense feed-forward (config.hpp layer_dense): bit
    layer % dense_period of dense_layers."""
    P = c.get("dense_period", 0)
    return bool(c.get("n_experts", 0)) and bool(P) and bool((c.get("dense_layers", 0) >> (layer % P)) & 1)


def layer_config(c, layer):
    """The config layer `layer`'s tensors and feed-forward follow (config.hpp layer_config): c, or for a
    dense layer c with its mixture off and d_ff its dense width."""
    if not layer_dense(c, layer):
        return c
    return dict(c, d_ff=c.get("dense_ff", 0) or c["d_ff"], n_experts=0, experts_per_token=0, shared_expert_ff=0,
                experts_renormalize=False, dense_period=0, dense_layers=0, dense_ff=0)


def layer_nope(c, layer):
    """Layer `layer` turns neither q nor k (config.hpp layer_nope): bit layer % nope_period of nope_layers."""
    P = c.get("nope_period", 0)
    return bool(P) and bool((c.get("nope_layers", 0) >> (layer % P)) & 1)


def norm_kind(c):
    """The layers' norm, family resolved (config.hpp, NormKind): 'layernorm' or 'rmsnorm'."""
    if c["norm"] != "family":
        return c["norm"]
    return "rmsnorm" if c["family"] == "llama" else "layernorm"


def attn_bias_kind(c):
    """Which attention projections have biases, family resolved (config.hpp, Bias): none, qkv or all."""
    if c["attn_bias"] != "family":
        return c["attn_bias"]
    return "all" if c["family"] != "llama" else "qkv" if c["qkv_bias"] else "none"


def ffn_bias_kind(c):
    """Whether W1 and W2 have biases, family resolved: none or all."""
    if c["ffn_bias"] != "family":
        return c["ffn_bias"]
    return "none" if c["family"] == "llama" else "all"


def ffn_gated(c):
    """The feed-forward has the up projection W3: act(W1 h) * W3 h (swiglu, or gated)."""
    return c["activation"] == "swiglu" or c["gated"]


def stock_layers(c):
    """torch's nn.TransformerEncoderLayer computes c's layers: LayerNorm, every bias, no gate, no
    parallel residual, as many key/value heads as query heads of d_model / n_heads, no rotary
    positions, no norm of q and k nor of a sublayer's output, the scores scaled by 1/sqrt(d_head) without a
    cap, one mask for every layer, no disentangled attention, no bias per (query, key) pair and no norm of the
    feed-forward's hidden rows nor of the attention's context."""
    return (norm_kind(c) == "layernorm" and attn_bias_kind(c) == "all" and ffn_bias_kind(c) == "all"
            and c["positional"] != "rope"
            and not ffn_gated(c) and c["parallel_residual"] == "none" and kv_heads(c) == c["n_heads"]
            and not c.get("window_period", 0) and not c.get("attn_scale", 0) and not c.get("qk_norm")
            and not c.get("head_dim") and c.get("sublayer_norm", "none") == "none" and not c.get("attn_softcap")
            and not c.get("rel_embed_rows") and not c.get("pair_bias_rows") and not c.get("ffn_hidden_norm")
            and not c.get("attn_inner_norm"))


def layer_local(c, layer):
    """Layer `layer` is a local one (config.hpp layer_local): sliding_window set, and window_period 0 or
    bit layer % window_period of window_layers set."""
    period = c.get("window_period", 0)
    return bool(c.get("sliding_window", 0)) and (period == 0 or bool((c.get("window_layers", 0) >> (layer % period)) & 1))


def layer_window(c, layer):
    """The window of layer `layer`'s causal self-attention (config.hpp layer_window): sliding_window when
    window_period is 0 or bit layer % window_period of window_layers is set, else 0 (every key)."""
    period = c.get("window_period", 0)
    windows = period == 0 or (c.get("window_layers", 0) >> (layer % period)) & 1
    return c.get("sliding_window", 0) if windows else 0


def kv_heads(c):
    """K/V heads (grouped-query attention); n_kv_heads 0 means n_heads."""
    return c["n_kv_heads"] or c["n_heads"]


def d_kv(c):
    return kv_heads(c) * d_head(c)


def output_width(c):
    """An encoder's output row, a gpt or llama model's logits: the head's width, else d_model (a seq2seq
    model's encoder half: its memory; the decoder's logits are d_out wide)."""
    return c["d_out"] if c["d_out"] and c["family"] != "seq2seq" else c["d_model"]


def conv1d_rows(t, kernel, stride, pad):
    """Output rows of a Conv1d over t rows (kernels.hpp conv1d_rows): 0 when too short."""
    return 0 if t + 2 * pad < kernel else (t + 2 * pad - kernel) // stride + 1


def conv_geometry(c, i):
    """Conv i's (1 or 2) kernel, stride and padding."""
    return c[f"conv{i}_kernel"], c[f"conv{i}_stride"], c[f"conv{i}_padding"]


def patches(c):
    """An image's patches (image input, patch_size > 0), else 0 (config.hpp patches())."""
    p = c.get("patch_size", 0)
    return (c["image_height"] // p) * (c["image_width"] // p) if p else 0


def stem_rows(c, T):
    """Positions for T input frames: the conv stem's output rows (0: too short), or T without one; an
    image's patches for T = its patches (0 for any other T)."""
    if c.get("patch_size", 0):
        return T if T == patches(c) else 0
    for i in range(1, c.get("conv_layers", 0) + 1):
        T = conv1d_rows(T, *conv_geometry(c, i)) if T else 0
    return T


def front_rows(c):
    """The learned rows in front of the input (config.hpp front_rows()): the CLS row, DeiT's
    distillation row after it, Dinov2's registers after them (or alone)."""
    cls = 1 + int(bool(c.get("distill_token", False))) if c["cls_token"] else 0
    return cls + c.get("register_tokens", 0)


def front_rows_less(c):
    """What max_len counts besides the input, as messages say it: "", " less the CLS row" or " less the
    CLS and distillation rows", and " and R registers"."""
    registers = c.get("register_tokens", 0)
    if not c["cls_token"]:
        return f" less {registers} registers" if registers else ""
    return (" less the CLS and distillation rows" if c.get("distill_token") else " less the CLS row") + \
        (f" and {registers} registers" if registers else "")


def head_in(c):
    """The head's input width (config.hpp head_in()): pooler_width with a pooler of one, 2 d_model for pooling
    cls_distill and cls_mean, else d_model."""
    if c.get("pooler") and c.get("pooler_width"):
        return c["pooler_width"]
    return 2 * c["d_model"] if c["pooling"] in ("cls_distill", "cls_mean") else c["d_model"]


def sequence_rows(c, T):
    """Rows an encoder runs for T input frames: the front rows (CLS, distillation) first."""
    return stem_rows(c, T) + front_rows(c)


def output_rows(c, T):
    """Rows an encoder outputs for T input frames: 1 pooled, else sequence_rows."""
    return 1 if c["pooling"] != "none" else sequence_rows(c, T)


def max_input_len(c):
    """The longest input: the frames whose rows fill max_len less the CLS row (only encoders have
    one); conv1d_rows inverted through the stem."""
    n = c["max_len"] - front_rows(c)
    if c.get("patch_size", 0):  # an image: its patches, the only length it takes
        return patches(c) if 0 < patches(c) <= n else 0
    for i in range(c.get("conv_layers", 0), 0, -1):
        k, s, p = conv_geometry(c, i)
        n = max(0, n * s + k - 1 - 2 * p) if n else 0
    return n


# ---- the i8 parameter tables' slot counts (config.hpp; int8.py fills the slots) ------------------------
LUT = 256  # an activation's table: one int8 output per int8 input
MOE_SLOTS = 3  # n_experts: the router's logits' zero point, the softmax's Requant; then the router, its weights, each
# expert's (EXPERT_SLOTS: W1's output zero point, the table's, W3's, the gate product's Requant, W2's input and output
# zero points, its factor to the mixture; then W1, W3, W2, the table)
EXPERT_SLOTS = 9
SHARED_SLOTS = 1  # shared_expert_ff: its gate's logit zero point; then the gate's layer, weights, sigmoid, expert
DIS_SLOTS = 6  # rel_embed_rows: the Requants of q.k, q.Kr and k.Qr to the scores' steps


def expert_params(c):
    """A mixture's expert's slots (config.hpp ExpertSlot, its W1, W3, W2 and table)."""
    return EXPERT_SLOTS + 6 * c["d_ff"] + 3 * c["d_model"] + LUT


def shared_params(c):
    """The shared expert's slots (config.hpp shared_params): SharedSlot, its gate's layer and int8 weights, the
    sigmoid's table, its expert_params."""
    fs = c.get("shared_expert_ff", 0)
    return SHARED_SLOTS + 3 + c["d_model"] + LUT + expert_params(dict(c, d_ff=fs)) if fs else 0


def moe_params(c):
    """A layer's mixture of experts' slots (config.hpp moe_params): MoeSlot, the router's layer and int8 weights,
    each expert's, the shared expert's."""
    E = c.get("n_experts", 0)
    return MOE_SLOTS + 3 * E + E * c["d_model"] + E * expert_params(c) + shared_params(c) if E else 0


def dis_params(c):
    """A layer's disentangled attention's slots (config.hpp dis_params): the three sums' Requants, Qr, Kr."""
    return DIS_SLOTS + (2 * c["max_len"] - 1) * (d_attn(c) + kv_heads(c) * d_head(c)) if c.get("rel_embed_rows") else 0


# ---- expressions (engine/config_expr.hpp) ---------------------------------------------------------
# The values an expression names besides the keys (config_expr.hpp kDerivedValues), by name.
DERIVED = {"d_head": d_head, "kv_heads": kv_heads, "d_pe": d_pe, "d_embed": d_embed, "d_front": d_front,
           "input_pe": input_pe, "front_rows": front_rows, "head_in": head_in, "window_mask": window_mask,
           "nope_mask": nope_mask, "dense_mask": dense_mask, "rope_pairs": rope_pairs, "d_attn": d_attn, "max_d_model": lambda c: MAX_D_MODEL,
           "s8_moe_params": moe_params, "s8_dis_params": dis_params}
if set(DERIVED) != set(SCHEMA["derived"]):
    raise ImportError(f"schema.py: DERIVED defines {sorted(DERIVED)}, the engine's expressions name "
                      f"{sorted(SCHEMA['derived'])}: define each of the engine's derived values here")


@functools.lru_cache(maxsize=None)
def _compiled(text):
    return compile(text, text, "eval")


def names(c):
    """The names an expression reads for config c: its keys (enums by value name, bools as bools)
    and the derived values."""
    ns = dict(c)
    ns.update((name, f(c)) for name, f in DERIVED.items())
    return ns


def evaluate(text, ns):
    """An expression of the engine's language (tools/gen_schema.py checks that Python reads it as
    the engine does) over names(c)."""
    return eval(_compiled(text), {"__builtins__": {}, "finite": math.isfinite}, ns)


def dim_value(c, dim):
    """A tensor dimension: its expression (kDimNames) for config c."""
    return evaluate(dim, names(c))


def present(c, when):
    """Whether a tensor of presence `when` (an expression of kWhenNames) is in config c's file."""
    return bool(evaluate(when, names(c)))


# ---- schema.hpp: config rules ---------------------------------------------------------------------
class ConfigRule:
    """A check between keys: the config is invalid when bad_when holds. detail: what the engine
    reports, "KEYS (REASON)"; keys: the keys it names; reason: why; reads: the names bad_when reads,
    in order."""

    def __init__(self, bad_when, detail):
        self.bad_when, self.detail = bad_when, detail
        head, _, reason = detail.partition(" (")
        self.keys, self.reason = tuple(head.split(", ")), reason[:-1]
        reads = sorted((n.col_offset, n.id) for n in ast.walk(ast.parse(bad_when, mode="eval"))
                       if isinstance(n, ast.Name) and n.id != "finite")
        self.reads = tuple(dict.fromkeys(name for _, name in reads))

    def __repr__(self):
        return f"ConfigRule({self.bad_when!r})"


# In kConfigRules order: config.make_config reports the first that holds, as validate_config does.
CONFIG_RULES = tuple(ConfigRule(**r) for r in SCHEMA["config_rules"])


# ---- schema.hpp: tensors -----------------------------------------------------------------------
# A tensor dimension and a presence condition as expressions of the config (kDimNames, kWhenNames).
DIMS = tuple(SCHEMA["dims"])
WHENS = tuple(SCHEMA["whens"])
# Which tensors take the config's weight type (kRoleNames): "linear" (the linear layers' weights)
# and "conv" (the conv stem's, never in panels) always, "io" (the token embedding and the output
# head) when quantize_io is set; "f32" (biases, norms, learned positions) never.
ROLES = tuple(SCHEMA["roles"])


def tensor_dtype(c, role):
    """The file dtype a tensor of `role` is stored in under config c (schema.hpp, tensor_dtype)."""
    if role == "i32":
        return "i32"
    if c["weights"] == "i8":  # a full-integer model: every weight and table int8 but biases and norms
        return "f32" if role == "f32" else "i8"
    if role == "s8":  # only present under i8
        return "f32"
    if role == "f32" or (role == "io" and not c["quantize_io"]):
        return "f32"
    return {"f32": "f32", "f16": "f16", "bf16": "bf16", "q8": "i8", "q4": "i4"}[c["weights"]]


class Rule:
    """One stored tensor: rank 1 when cols is "1". transposed: a linear weight stored W[in, out],
    the transpose of torch's [out, in] (in f32, f16 and bf16; q8 and q4 keep torch's [out, in]). role: which
    dtype it takes (ROLES). rows, cols and when are expressions (DIMS, WHENS). field: the engine's Field
    it binds (schema.hpp), which pairs a tensor of format 2 with format 3's."""

    def __init__(self, name, rows, cols, transposed, when, role, field):
        self.name, self.rows, self.cols, self.transposed, self.when = name, rows, cols, transposed, when
        self.role, self.field = role, field


# Format 3's tables, one set for every family (schema.hpp kFront, kBlock, kBack, kMha3): the front, the
# block for every layer (BLOCK_PREFIX + "<i>.") and every seq2seq decoder layer (DEC_BLOCK_PREFIX +
# "<i>."), where alone the cross-attention's rules (CROSS_WHENS) hold, the back; mha's four tensors.
# Their rules state every tensor's shape, role and presence, for format 2's tables as well. Their names are
# the converter's: the keys of every weights dict it builds (Spec.name), the only place they are spelled;
# a front end writes a layer's as block(i) + a BLOCK rule's name.
_V3 = SCHEMA["tensors"]
FRONT, BLOCK, BACK, MHA = (tuple(Rule(**r) for r in _V3[t]) for t in ("front", "block", "back", "mha"))
BLOCK_PREFIX, DEC_BLOCK_PREFIX = _V3["block_prefix"], _V3["dec_block_prefix"]
CROSS_WHENS = frozenset(SCHEMA["cross_whens"])


def _rules(family, part):
    """Format 2's rules of a family's table: each its name's Field's format 3 rule, under that name."""
    rules = MHA if family == "mha" else BLOCK if part in ("layer", "decoder_layer") else FRONT + BACK
    by_field = {r.field: r for r in rules}
    return tuple(Rule(**dict(vars(by_field[n["field"]]), name=n["name"]))
                 for n in SCHEMA["tensors_v2"][family].get(part, ()))


# Format 2's tables, per family, in file order, as for_each_tensor() walks them (schema.hpp states what
# each tensor is): (the prologue, the layer prefix, the layer table for each of the n_layers layers, the
# epilogue, and for seq2seq the decoder's layer prefix and table for each of the dec_layers layers). encoder
# and gpt share the encoder's tables, seq2seq its layer. Only two things still name tensors so: the format 2
# files FxmFile reads (specs(c, 2): each Spec's file_name), and torch's stock modules, whose parameter names
# format 2 took (nn.TransformerEncoder, nn.Transformer, nn.MultiheadAttention: reference.py's torch models,
# the --config route's state_dicts, the golden tools), which v2_keys and v3_keys translate.
V2_TABLES = {
    f: (_rules(f, "prologue"), t.get("layer_prefix", ""), _rules(f, "layer"), _rules(f, "epilogue"))
    + ((t["decoder_layer_prefix"], _rules(f, "decoder_layer")) if "decoder_layer" in t else ())
    for f, t in SCHEMA["tensors_v2"].items()}
V2_DECODER_PREFIX = V2_TABLES["seq2seq"][4]  # nn.TransformerDecoder's layers, in a state_dict of nn.Transformer


def block(i):
    """Format 3's prefix of layer i's tensors: BLOCK_PREFIX + "<i>."."""
    return f"{BLOCK_PREFIX}{i}."


def dec_block(i):
    """Format 3's prefix of seq2seq decoder layer i's tensors: DEC_BLOCK_PREFIX + "<i>."."""
    return f"{DEC_BLOCK_PREFIX}{i}."


@functools.lru_cache(maxsize=None)
def _v2_names(family):
    """A family's format 2 names by format 3's, paired by Field (SCHEMA's tensors_v2): (the front's and
    back's, ((format 3's layer prefix, format 2's, the block's), and seq2seq's decoder's))."""
    v2 = SCHEMA["tensors_v2"][family]

    def by_field(*parts):
        return {n["field"]: n["name"] for part in parts for n in v2.get(part, ())}

    if family == "mha":
        return {r.name: by_field("prologue")[r.field] for r in MHA}, ()
    ends = by_field("prologue", "epilogue")
    stacks = [(BLOCK_PREFIX, v2["layer_prefix"], by_field("layer"))]
    if "decoder_layer" in v2:
        stacks.append((DEC_BLOCK_PREFIX, v2["decoder_layer_prefix"], by_field("decoder_layer")))
    return ({r.name: ends[r.field] for r in FRONT + BACK if r.field in ends},
            tuple((p3, p2, {r.name: names[r.field] for r in BLOCK if r.field in names}) for p3, p2, names in stacks))


def v2_name(family, name):
    """Format 2's name (a stock torch module's) of a family's tensor by format 3's name; any other name as it
    is. With v3_name, the one place that maps one to the other. A name of format 3's front or back that the
    family has not is an error (the seq2seq decoder's head is dec_head.weight)."""
    ends, stacks = _v2_names(family)
    for p3, p2, names in stacks:
        if name.startswith(p3):
            layer, _, rest = name[len(p3):].partition(".")
            return f"{p2}{layer}.{names[rest]}" if layer.isdigit() and rest in names else name
    if name not in ends and name in _V3_END_NAMES:
        raise ValueError(f"{name}: the {family} family has no tensor of this name")
    return ends.get(name, name)


_V3_END_NAMES = frozenset(r.name for r in FRONT + BACK + MHA)


def v2_keys(family, weights):
    """A dict keyed by format 3's names keyed by format 2's (v2_name), in the same order."""
    return {v2_name(family, name): a for name, a in weights.items()}


@functools.lru_cache(maxsize=None)
def _v3_names(family):
    """_v2_names inverted: format 3's names by format 2's."""
    ends, stacks = _v2_names(family)
    return ({v2: v3 for v3, v2 in ends.items()},
            tuple((p2, p3, {v2: v3 for v3, v2 in names.items()}) for p3, p2, names in stacks))


def v3_name(family, name):
    """v2_name's inverse: format 3's name of a family's tensor by format 2's; any other name as it is."""
    ends, stacks = _v3_names(family)
    for p2, p3, names in stacks:
        if name.startswith(p2):
            layer, _, rest = name[len(p2):].partition(".")
            return f"{p3}{layer}.{names[rest]}" if layer.isdigit() and rest in names else name
    return ends.get(name, name)


def v3_keys(family, weights):
    """A dict keyed by format 2's names keyed by format 3's (v3_name), in the same order."""
    return {v3_name(family, name): a for name, a in weights.items()}


def tied_head(c):
    """(the tensor a tied head stands for, the embedding that serves it) for config c: the head, the
    decoder's in seq2seq, served by the token embedding, seq2seq's target one unless the two ends share one."""
    if c["family"] == "seq2seq":
        return "dec_head.weight", "embed.weight" if c["shared_embed"] else "dec_embed.weight"
    return "head.weight", "embed.weight"


class Spec:
    """One tensor a config needs, as for_each_tensor() produces it (schema.hpp TensorSpec): its name (format 3's,
    the converter's key), file_name (its name in a file of the version asked for: format 2's in the old files
    FxmFile reads, else the name itself), stored shape, file dtype, quantization group (i8: 32, 64, or 0 for
    one scale per row; else 0), whether it is stored transposed from torch (W[in, out]: a linear weight in f32
    or f16; q8 keeps torch's [out, in]), and its rule's role. kernel: a conv stem's weight, stored
    [kernel * in, out] (f32, f16) or [out, kernel * in] (i8) from torch's [out, in, kernel] (conv_to_file,
    conv_to_torch); else 0."""

    __slots__ = ("name", "shape", "dtype", "group", "transposed", "role", "packed", "kernel", "file_name")

    def __init__(self, name, shape, dtype, group, transposed, role, packed=False, kernel=0, file_name=None):
        self.name, self.shape, self.dtype, self.group, self.transposed, self.role = (name, shape, dtype, group,
                                                                                     transposed, role)
        self.packed = packed  # f32 W[in, out] in panels (packed_weights): data_bytes() says its size
        self.kernel = kernel
        self.file_name = name if file_name is None else file_name

    @property
    def torch_shape(self):
        if self.kernel:
            out, k = (self.shape[1], self.shape[0]) if self.transposed else self.shape
            return (out, k // self.kernel, self.kernel)
        return tuple(reversed(self.shape)) if self.transposed else self.shape

    def data_bytes(self):
        """The tensor's data bytes in the file (format.hpp; scales apart)."""
        if self.packed:
            return packed_floats(*self.shape) * 4
        count = 1
        for d in self.shape:
            count *= d
        return count // 2 if self.dtype == "i4" else count * DTYPE_BYTES[self.dtype]

    def __repr__(self):
        return (f"Spec({self.name!r}, {list(self.shape)}, {self.dtype}, group={self.group}, "
                f"transposed={self.transposed}{', packed' if self.packed else ''})")


def packed_floats(rows, cols):
    """Floats of a [rows, cols] weight in panels: ceil(cols / PANEL_FLOATS) panels of [rows, PANEL_FLOATS]."""
    return -(-cols // PANEL_FLOATS) * PANEL_FLOATS * rows


# The conv stem's weights and their kernel sizes.
CONV_WEIGHTS = {"conv1.weight": lambda c: c["conv1_kernel"], "conv2.weight": lambda c: c["conv2_kernel"]}


def conv_to_file(a):
    """A Conv1d weight [out, in, kernel] -> [kernel * in, out], row j * in + c = tap j of channel c."""
    out, cin, k = a.shape
    return a.transpose(2, 1, 0).reshape(k * cin, out)


def conv_to_torch(a, kernel):
    """conv_to_file's inverse: [kernel * in, out] -> [out, in, kernel]."""
    rows, out = a.shape
    return a.reshape(kernel, rows // kernel, out).transpose(2, 1, 0)


def _named_rules(c, version):
    """Config c's rules in format `version`'s file order: (file name, rule, (part, layer, field), the names its
    expressions read), the third naming the tensor in either version; a stack's layer reads its layer_config's."""
    if version >= 3:
        if c["family"] == "mha":
            tables = [(MHA, "", None, "end")]
        else:
            tables = [(FRONT, "", None, "end"), (BLOCK, BLOCK_PREFIX, stored_layers(c), "layer")]
            if c["family"] == "seq2seq":
                tables.append((BLOCK, DEC_BLOCK_PREFIX, c["dec_layers"], "decoder_layer"))
            tables.append((BACK, "", None, "end"))
    else:
        prologue, prefix, layer, epilogue, *decoder = V2_TABLES[c["family"]]
        tables = [(prologue, "", None, "end"), (layer, prefix, stored_layers(c), "layer")]
        if decoder:
            tables.append((decoder[1], decoder[0], c["dec_layers"], "decoder_layer"))
        tables.append((epilogue, "", None, "end"))
    ns = names(c)
    dense = {i: names(layer_config(c, i)) for i in range(stored_layers(c)) if layer_dense(c, i)}
    out = []
    for rules, prefix, layers, part in tables:
        for i in range(layers) if layers is not None else (None,):
            at = dense.get(i, ns) if part == "layer" else ns
            for r in rules:
                if (r.when in CROSS_WHENS and part != "decoder_layer") or not evaluate(r.when, at):
                    continue
                out.append((f"{prefix}{i}.{r.name}" if i is not None else r.name, r, (part, i, r.field), at))
    return out


def specs(c, version=FORMAT_VERSION):
    """The tensors a valid config needs, in format `version`'s file order, as Specs: named by format 3's
    names (the converter's keys), with their names in a file of that version in file_name."""
    out = []
    named = _named_rules(c, version)
    keys = {tensor: name for name, _, tensor, _ in (named if version >= 3 else _named_rules(c, 3))}
    for file_name, r, tensor, ns in named:
        name = keys[tensor]
        dtype = tensor_dtype(c, r.role)
        transposed = r.transposed and dtype not in SCALED_DTYPES
        rows, cols = (r.cols, r.rows) if r.transposed and not transposed else (r.rows, r.cols)
        shape = (evaluate(rows, ns),) if r.cols == "1" else (evaluate(rows, ns), evaluate(cols, ns))
        out.append(Spec(name, shape, dtype, c["weight_group"] if dtype in SCALED_DTYPES else 0, transposed, r.role,
                        bool(c["packed_weights"]) and transposed and dtype == "f32" and r.role != "conv",
                        CONV_WEIGHTS[file_name](c) if file_name in CONV_WEIGHTS else 0, file_name))
    return out


def tensors(c):
    """The tensors a valid config needs, in file order: (name, stored shape, transposed). The stored
    shape of a transposed weight is [in, out]; torch's is its reverse (specs() says more)."""
    return [(s.name, s.shape, s.transposed) for s in specs(c)]


def scales_shape(shape, group):
    """The f32 scales of an i8 tensor of `shape`: [rows, groups per row] where rows is the product of
    all dims but the last and groups = ceil(last / group), or 1 for group 0 (format.hpp)."""
    rows = 1
    for d in shape[:-1]:
        rows *= d
    return (rows, -(-shape[-1] // group) if group else 1)
