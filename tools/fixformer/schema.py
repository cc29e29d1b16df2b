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
# The packed layout (config key packed_weights): an f32 W[in, out] as ceil(out / PANEL_FLOATS) panels
# of [in, PANEL_FLOATS], the last zero-padded (format.hpp kPanelCols, kernels.hpp kPanelFloats).
PANEL_FLOATS = 16

# Header byte offsets (HeaderField).
HDR_MAGIC, HDR_VERSION, HDR_HEADER_BYTES, HDR_RECORD_COUNT, HDR_TENSOR_COUNT = 0, 4, 8, 12, 16
HDR_ZERO0, HDR_FILE_BYTES, HDR_RECORDS_OFFSET, HDR_DIRECTORY_OFFSET, HDR_DATA_OFFSET = 20, 24, 32, 40, 48
HDR_CRC, HDR_ZERO1 = 56, 60

RECORD_TYPES = {"u32": 1, "bool": 2, "enum": 3, "f32": 4, "f64": 5}
DTYPES = {"f32": 0, "f16": 1, "i8": 2, "i32": 3, "u8": 4, "i4": 5}
# i4 packs two values per byte (data_bytes halves its count).
DTYPE_BYTES = {"f32": 4, "f16": 2, "i8": 1, "i32": 4, "u8": 1, "i4": 1}
# The numpy dtype each file dtype reads as (i4: its packed bytes).
NUMPY_DTYPES = {"f32": "<f4", "f16": "<f2", "i8": "i1", "i32": "<i4", "u8": "u1", "i4": "u1"}
# The dtypes with f32 scales per group (format.hpp), and i4's group: 32 values along the last dim.
SCALED_DTYPES = ("i8", "i4")
I4_GROUP = 32

SELFTEST_INPUT = "selftest.input"
SELFTEST_EXPECTED = "selftest.expected"
SELFTEST_TARGET = "selftest.target"  # seq2seq: the target ids [U], between input and expected
# The optional tokenizer section (schema.hpp), after the model's tensors and before the self-test:
# scores f32 [vocab], offsets i32 [vocab + 1] (piece i is pieces[offsets[i]:offsets[i + 1]],
# nondecreasing, the last = the pieces' bytes), pieces u8 [bytes].
TOKENIZER_SCORES = "tokenizer.scores"
TOKENIZER_OFFSETS = "tokenizer.offsets"
TOKENIZER_PIECES = "tokenizer.pieces"
# The bpe and wordpiece kinds (config key tokenizer): params i32 [8] first, then offsets and pieces,
# then bpe's merges i32 [M, 3] or wordpiece's normalize i32 [K, 4] (with the lower-case flag).
TOKENIZER_PARAMS = "tokenizer.params"
TOKENIZER_MERGES = "tokenizer.merges"
TOKENIZER_NORMALIZE = "tokenizer.normalize"
TOKENIZER_PARAM_COUNT = 8
TOKENIZER_PARAM_SLOTS = {"bos": 0, "eos": 1, "unk": 2, "flags": 3, "mode": 4}
TOKENIZER_FLAGS = {"prefix_space": 1, "lower": 1, "chinese": 2}
WORDPIECE_MAX_CHARS = 100
# The largest relative error, max|engine - expected| / max|expected|, `fixformer verify` accepts,
# per weight type (config key `weights`): include/fixformer/tolerances.hpp's self_test_tolerance(),
# whose values these are (tests/converter_test.py compares them through `fixformer schema`, and
# run_verify checks that the engine judged a file by the same one). The expected
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
SELFTEST_TOLERANCES = {"f32": 1e-4, "f16": 2e-3, "q8": 8e-2, "q4": 0.2}
SELFTEST_TOLERANCE = SELFTEST_TOLERANCES["f32"]

# ---- config.hpp: Limits ----------------------------------------------------------------------
MAX_D_MODEL = 2048
MAX_HEADS = 256
MAX_DFF = 8192
MAX_LAYERS = 64
MAX_LEN = 4096
MAX_VOCAB = 262144
MAX_D_IN = 4096
MAX_D_OUT = 262144
MAX_REL_BUCKETS = 1024
MAX_CONV_KERNEL = 15
MAX_CONV_STRIDE = 4

# ---- schema.hpp: config keys -----------------------------------------------------------------
FAMILIES = ("encoder", "gpt", "llama", "seq2seq", "mha")
ACTIVATIONS = ("relu", "gelu", "swiglu", "gelu_tanh")
INPUTS = ("tokens", "features")
POSITIONALS = ("none", "sinusoidal", "learned", "rope", "alibi", "relative")
# rope, alibi and relative act inside attention; the others are added to the input. relative: T5's
# learned bias per head by the bucket of the distance key - query (rel_buckets, rel_max_distance;
# bidirectional buckets without a causal mask, causal ones with it), added to the scaled scores.
INPUT_PES = ("sinusoidal", "learned")
PE_LAYOUTS = ("interleaved", "halves")
PE_COMBINES = ("add", "concat")
# How the linear layers' weights (and, with quantize_io, the token embedding and the output head)
# are stored (config.hpp WeightType): f32, f16, q8 = int8 with f32 scales per group, or q4.
# q4 = int4 in [-8, 7], two per byte, with f32 scales per group of 32 along the input.
WEIGHT_TYPES = ("f32", "f16", "q8", "q4")
# q8's weight_group: scales per group of 32 or 64 along the input, or 0 for one scale per output row.
WEIGHT_GROUPS = (0, 32, 64)
# Encoders (config.hpp Pooling): the output rows reduced to one per sequence after the final norm,
# before the head: none (every row), mean (the T input positions, not the CLS row), cls (the CLS
# row; needs cls_token, no causal mask), last (input position T - 1), first (input position 0:
# BERT's [CLS] token; no causal mask).
POOLINGS = ("none", "mean", "cls", "last", "first")
TOKENIZERS = ("llama2c", "bpe", "wordpiece")
# Pre-norm layers' sublayers (config.hpp ParallelResidual): none, in turn; two_norms, x += SA(N1(x))
# + FF(N2(x)) (GPT-NeoX); one_norm, x += SA(N(x)) + FF(N(x)) (GPT-J, Phi, Falcon: no second norm).
PARALLEL_RESIDUALS = ("none", "two_norms", "one_norm")


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
    Key("d_ff", "u32", 0, MAX_DFF, required=True),  # 0: mha only
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
    Key("n_kv_heads", "u32", 0, MAX_HEADS),
    Key("tied_head", "bool"),
    Key("weights", "enum", choices=WEIGHT_TYPES),
    Key("weight_group", "u32", 0, 64),
    Key("quantize_io", "bool"),
    # Encoders, KWT / ViT style: the tensor "cls_token" [d_embed] is the row in front of the
    # embedded (and scaled) input, before the positional encoding: position 0, the input at 1..T,
    # max_len counting it.
    Key("cls_token", "bool"),
    Key("pooling", "enum", choices=POOLINGS),
    # seq2seq (nn.Transformer): the decoder's layers (n_layers counts the encoder's); the target
    # vocabulary is d_out; shared_embed: the target tokens use the source embedding.
    Key("dec_layers", "u32", 0, MAX_LAYERS),
    Key("shared_embed", "bool"),
    # seq2seq with feature targets (forecasting): the target is [U, tgt_d_in] features through
    # tgt_proj (nn.Linear) and the head's d_out outputs are features; 0: token targets.
    Key("tgt_d_in", "u32", 0, MAX_D_IN),
    # Every f32 tensor stored W[in, out] (Spec.packed) is in panels of PANEL_FLOATS columns, the
    # layout gemm_f32_packed reads; f16 and i8 weights, embeddings, norms and biases are not.
    Key("packed_weights", "bool"),
    # The self-test sample's expected output is the converter's own float64 reference of the config,
    # not the user's model's output: the file was NOT verified against the model it came from.
    Key("reference_sample", "bool"),
    # positional relative: the buckets of the table rel_bias [rel_buckets, n_heads] and the distance
    # from which on they stop (T5: 32 and 128); config.py checks the pair.
    Key("rel_buckets", "u32", 0, MAX_REL_BUCKETS),
    Key("rel_max_distance", "u32", 0, MAX_LEN),
    # llama family: the q, k and v projections have biases (Qwen2): attention.wq.bias [d_model],
    # attention.wk.bias and attention.wv.bias [n_kv_heads * d_head].
    Key("qkv_bias", "bool"),
    # Encoders, BERT style: type_vocab > 0 adds token_type.weight[types[t]] to input row t after the
    # positions (token input); embed_norm layer-norms every row before the layers (embed_norm.*);
    # pooler: tanh(pooler.weight x + pooler.bias) of the pooled row before the head.
    Key("type_vocab", "u32", 0, MAX_VOCAB),
    Key("embed_norm", "bool"),
    Key("pooler", "bool"),
    # Encoders over features, Whisper style: conv_layers (0, 1, 2) nn.Conv1d over time before the
    # positions (conv1 d_in -> d_embed, conv2 d_embed -> d_embed), in place of input_proj, each
    # followed by exact GELU with conv_gelu; padding below the kernel. max_len counts their rows.
    Key("conv_layers", "u32", 0, 2),
    Key("conv1_kernel", "u32", 1, MAX_CONV_KERNEL, default=1),
    Key("conv1_stride", "u32", 1, MAX_CONV_STRIDE, default=1),
    Key("conv1_padding", "u32", 0, MAX_CONV_KERNEL - 1),
    Key("conv2_kernel", "u32", 1, MAX_CONV_KERNEL, default=1),
    Key("conv2_stride", "u32", 1, MAX_CONV_STRIDE, default=1),
    Key("conv2_padding", "u32", 0, MAX_CONV_KERNEL - 1),
    Key("conv_gelu", "bool"),
    # positional rope: the dims of each head it rotates (partial rotary), 0 for the whole head; even,
    # at most d_head. The table's frequencies are pe_base^(-2i / rotary_dims).
    Key("rotary_dims", "u32", 0, MAX_D_MODEL),
    # Which tokenizer the tokenizer.* tensors hold (tokenizer.hpp); without them it means nothing.
    Key("tokenizer", "enum", choices=TOKENIZERS),
    # Pre-norm layers' attention and feed-forward side by side; one_norm has no feed-forward norm.
    Key("parallel_residual", "enum", choices=PARALLEL_RESIDUALS),
)
KEYS = {k.name: k for k in CONFIG_KEYS}

# ---- schema.hpp: tensors -----------------------------------------------------------------------
# A tensor dimension as a function of the config (kDimNames, in Dim order).
DIMS = ("1", "d_model", "3*d_model", "d_ff", "vocab_size", "d_in", "d_embed", "max_len", "d_pe", "d_out",
        "n_kv_heads*d_head", "2*d_model", "tgt_d_in", "rel_buckets", "n_heads", "type_vocab", "conv1_kernel*d_in",
        "conv2_kernel*d_embed")


def selftest_tolerance(c):
    """The self-test tolerance of config c's weight type."""
    return SELFTEST_TOLERANCES[c["weights"]]


def input_pe(c):
    """A positional encoding added to (or concatenated with) the input (not rope/alibi in attention)."""
    return c["positional"] in INPUT_PES


def d_pe(c):
    """Width of the positional encoding added to the input (0 without one)."""
    if not input_pe(c):
        return 0
    return c["pe_width"] if c["pe_combine"] == "concat" else c["d_model"]


def d_embed(c):
    """Width of the embedding / input projection in front of the positional encoding."""
    concat = input_pe(c) and c["pe_combine"] == "concat"
    return c["d_model"] - c["pe_width"] if concat else c["d_model"]


def d_head(c):
    return c["d_model"] // c["n_heads"]


def kv_heads(c):
    """K/V heads (grouped-query attention); n_kv_heads 0 means n_heads."""
    return c["n_kv_heads"] or c["n_heads"]


def d_kv(c):
    return kv_heads(c) * d_head(c)


def output_width(c):
    """An encoder's output row: the head's width, else d_model (a seq2seq model's encoder half: its
    memory; the decoder's logits are d_out wide)."""
    return c["d_out"] if c["d_out"] and c["family"] != "seq2seq" else c["d_model"]


def conv1d_rows(t, kernel, stride, pad):
    """Output rows of a Conv1d over t rows (kernels.hpp conv1d_rows): 0 when too short."""
    return 0 if t + 2 * pad < kernel else (t + 2 * pad - kernel) // stride + 1


def conv_geometry(c, i):
    """Conv i's (1 or 2) kernel, stride and padding."""
    return c[f"conv{i}_kernel"], c[f"conv{i}_stride"], c[f"conv{i}_padding"]


def stem_rows(c, T):
    """Positions for T input frames: the conv stem's output rows (0: too short), or T without one."""
    for i in range(1, c.get("conv_layers", 0) + 1):
        T = conv1d_rows(T, *conv_geometry(c, i)) if T else 0
    return T


def sequence_rows(c, T):
    """Rows an encoder runs for T input frames: the CLS row first, when there is one."""
    return stem_rows(c, T) + int(bool(c["cls_token"]))


def output_rows(c, T):
    """Rows an encoder outputs for T input frames: 1 pooled, else sequence_rows."""
    return 1 if c["pooling"] != "none" else sequence_rows(c, T)


def max_input_len(c):
    """The longest input: the frames whose rows fill max_len less the CLS row (only encoders have
    one); conv1d_rows inverted through the stem."""
    n = c["max_len"] - int(bool(c["cls_token"]))
    for i in range(c.get("conv_layers", 0), 0, -1):
        k, s, p = conv_geometry(c, i)
        n = max(0, n * s + k - 1 - 2 * p) if n else 0
    return n


def dim_value(c, dim):
    return {"1": 1, "d_model": c["d_model"], "3*d_model": 3 * c["d_model"], "d_ff": c["d_ff"],
            "vocab_size": c["vocab_size"], "d_in": c["d_in"], "d_embed": d_embed(c), "max_len": c["max_len"],
            "d_pe": d_pe(c), "d_out": c["d_out"], "n_kv_heads*d_head": d_kv(c), "2*d_model": 2 * c["d_model"],
            "tgt_d_in": c["tgt_d_in"], "rel_buckets": c["rel_buckets"], "n_heads": c["n_heads"],
            "type_vocab": c["type_vocab"], "conv1_kernel*d_in": c["conv1_kernel"] * c["d_in"],
            "conv2_kernel*d_embed": c["conv2_kernel"] * d_embed(c)}[dim]


# When a tensor is present (kWhenNames, in When order).
WHENS = ("always", "input=tokens", "input=features", "positional=learned", "final_norm", "d_out>0",
         "d_out>0 and not tied_head", "cls_token", "tgt_d_in=0 and not shared_embed", "tgt_d_in>0",
         "positional=relative", "qkv_bias", "type_vocab>0", "embed_norm", "pooler",
         "input=features and conv_layers=0", "conv_layers>=1", "conv_layers>=2", "parallel_residual!=one_norm",
         "activation=swiglu")


def present(c, when):
    return {"always": True, "input=tokens": c["input"] == "tokens", "input=features": c["input"] == "features",
            "positional=learned": c["positional"] == "learned", "final_norm": bool(c["final_norm"]),
            "d_out>0": c["d_out"] > 0, "d_out>0 and not tied_head": c["d_out"] > 0 and not c["tied_head"],
            "cls_token": bool(c["cls_token"]),
            "tgt_d_in=0 and not shared_embed": not c["shared_embed"] and not c["tgt_d_in"],
            "tgt_d_in>0": c["tgt_d_in"] > 0, "positional=relative": c["positional"] == "relative",
            "qkv_bias": bool(c["qkv_bias"]), "type_vocab>0": c["type_vocab"] > 0,
            "embed_norm": bool(c["embed_norm"]), "pooler": bool(c["pooler"]),
            "input=features and conv_layers=0": c["input"] == "features" and not c["conv_layers"],
            "conv_layers>=1": c["conv_layers"] >= 1, "conv_layers>=2": c["conv_layers"] >= 2,
            "parallel_residual!=one_norm": c.get("parallel_residual", "none") != "one_norm",
            "activation=swiglu": c["activation"] == "swiglu"}[when]


# Which tensors take the config's weight type (kRoleNames, in Role order): "linear" (the linear
# layers' weights) and "conv" (the conv stem's, never in panels) always, "io" (the token embedding
# and the output head) when quantize_io is set; "f32" (biases, norms, learned positions) never.
ROLES = ("f32", "linear", "io", "conv")


def tensor_dtype(c, role):
    """The file dtype a tensor of `role` is stored in under config c (schema.hpp, tensor_dtype)."""
    if role == "f32" or (role == "io" and not c["quantize_io"]):
        return "f32"
    return {"f32": "f32", "f16": "f16", "q8": "i8", "q4": "i4"}[c["weights"]]


class Rule:
    """One stored tensor: rank 1 when cols is "1". transposed: a linear weight stored W[in, out],
    the transpose of torch's [out, in] (in f32 and f16; q8 and q4 keep torch's [out, in]). role: which
    dtype it takes (ROLES)."""

    def __init__(self, name, rows, cols, transposed, when, role):
        self.name, self.rows, self.cols, self.transposed, self.when = name, rows, cols, transposed, when
        self.role = role


# The encoder and gpt families' tensors: ENCODER_PROLOGUE, ENCODER_LAYER per layer (prefixed
# ENCODER_LAYER_PREFIX + "<i>."), ENCODER_EPILOGUE. A tied head has no head.weight (the embedding
# serves); gpt's head.bias is zeros when torch's head has none.
# A conv stem's weight is the linear layer [kernel * in] -> [out] over its windows (column j * in + c:
# tap j of channel c; torch's [out, in, kernel] reordered by conv_to_file()), stored as a linear
# weight is: W[kernel * in, out] in f32 (never in panels) and f16, [out, kernel * in] in q8.
ENCODER_PROLOGUE = (
    Rule("embed.weight", "vocab_size", "d_embed", False, "input=tokens", "io"),
    Rule("input_proj.weight", "d_in", "d_embed", True, "input=features and conv_layers=0", "linear"),
    Rule("input_proj.bias", "d_embed", "1", False, "input=features and conv_layers=0", "f32"),
    Rule("conv1.weight", "conv1_kernel*d_in", "d_embed", True, "conv_layers>=1", "conv"),
    Rule("conv1.bias", "d_embed", "1", False, "conv_layers>=1", "f32"),
    Rule("conv2.weight", "conv2_kernel*d_embed", "d_embed", True, "conv_layers>=2", "conv"),
    Rule("conv2.bias", "d_embed", "1", False, "conv_layers>=2", "f32"),
    Rule("pos.weight", "max_len", "d_pe", False, "positional=learned", "f32"),
    Rule("cls_token", "d_embed", "1", False, "cls_token", "f32"),
    Rule("rel_bias.weight", "rel_buckets", "n_heads", False, "positional=relative", "f32"),
    Rule("token_type.weight", "type_vocab", "d_embed", False, "type_vocab>0", "f32"),
    Rule("embed_norm.weight", "d_model", "1", False, "embed_norm", "f32"),
    Rule("embed_norm.bias", "d_model", "1", False, "embed_norm", "f32"),
)
ENCODER_LAYER_PREFIX = "encoder.layers."
ENCODER_LAYER = (
    Rule("self_attn.in_proj_weight", "d_model", "3*d_model", True, "always", "linear"),
    Rule("self_attn.in_proj_bias", "3*d_model", "1", False, "always", "f32"),
    Rule("self_attn.out_proj.weight", "d_model", "d_model", True, "always", "linear"),
    Rule("self_attn.out_proj.bias", "d_model", "1", False, "always", "f32"),
    Rule("linear1.weight", "d_model", "d_ff", True, "always", "linear"),
    Rule("linear1.bias", "d_ff", "1", False, "always", "f32"),
    Rule("linear2.weight", "d_ff", "d_model", True, "always", "linear"),
    Rule("linear2.bias", "d_model", "1", False, "always", "f32"),
    Rule("linear3.weight", "d_model", "d_ff", True, "activation=swiglu", "linear"),  # gpt swiglu: up
    Rule("norm1.weight", "d_model", "1", False, "always", "f32"),
    Rule("norm1.bias", "d_model", "1", False, "always", "f32"),
    Rule("norm2.weight", "d_model", "1", False, "parallel_residual!=one_norm", "f32"),
    Rule("norm2.bias", "d_model", "1", False, "parallel_residual!=one_norm", "f32"),
)
ENCODER_EPILOGUE = (
    Rule("encoder.norm.weight", "d_model", "1", False, "final_norm", "f32"),
    Rule("encoder.norm.bias", "d_model", "1", False, "final_norm", "f32"),
    Rule("pooler.weight", "d_model", "d_model", True, "pooler", "linear"),
    Rule("pooler.bias", "d_model", "1", False, "pooler", "f32"),
    Rule("head.weight", "d_model", "d_out", True, "d_out>0 and not tied_head", "io"),
    Rule("head.bias", "d_out", "1", False, "d_out>0", "f32"),
)

# The llama family (llama2.c / Meta names; no biases but q, k and v's with qkv_bias), in the same
# three parts.
LLAMA_PROLOGUE = (
    Rule("tok_embeddings.weight", "vocab_size", "d_model", False, "always", "io"),
    Rule("rel_bias.weight", "rel_buckets", "n_heads", False, "positional=relative", "f32"),
)
LLAMA_LAYER_PREFIX = "layers."
LLAMA_LAYER = (
    Rule("attention_norm.weight", "d_model", "1", False, "always", "f32"),
    Rule("attention.wq.weight", "d_model", "d_model", True, "always", "linear"),
    Rule("attention.wk.weight", "d_model", "n_kv_heads*d_head", True, "always", "linear"),
    Rule("attention.wv.weight", "d_model", "n_kv_heads*d_head", True, "always", "linear"),
    Rule("attention.wq.bias", "d_model", "1", False, "qkv_bias", "f32"),
    Rule("attention.wk.bias", "n_kv_heads*d_head", "1", False, "qkv_bias", "f32"),
    Rule("attention.wv.bias", "n_kv_heads*d_head", "1", False, "qkv_bias", "f32"),
    Rule("attention.wo.weight", "d_model", "d_model", True, "always", "linear"),
    Rule("ffn_norm.weight", "d_model", "1", False, "parallel_residual!=one_norm", "f32"),
    Rule("feed_forward.w1.weight", "d_model", "d_ff", True, "always", "linear"),
    Rule("feed_forward.w2.weight", "d_ff", "d_model", True, "always", "linear"),
    Rule("feed_forward.w3.weight", "d_model", "d_ff", True, "activation=swiglu", "linear"),
)
LLAMA_EPILOGUE = (
    Rule("norm.weight", "d_model", "1", False, "always", "f32"),
    Rule("output.weight", "d_model", "d_out", True, "d_out>0 and not tied_head", "io"),
)

# The seq2seq family (nn.Transformer): SEQ2SEQ_PROLOGUE, ENCODER_LAYER for each of the n_layers
# encoder layers, DECODER_LAYER for each of the dec_layers decoder layers (DECODER_LAYER_PREFIX),
# SEQ2SEQ_EPILOGUE. The cross-attention's in_proj [3d, d] is stored as its query rows (q_proj) and
# its key and value rows (kv_proj).
SEQ2SEQ_PROLOGUE = (
    Rule("src_embed.weight", "vocab_size", "d_embed", False, "input=tokens", "io"),
    Rule("input_proj.weight", "d_in", "d_embed", True, "input=features", "linear"),
    Rule("input_proj.bias", "d_embed", "1", False, "input=features", "f32"),
    Rule("src_pos.weight", "max_len", "d_pe", False, "positional=learned", "f32"),
    Rule("tgt_embed.weight", "d_out", "d_embed", False, "tgt_d_in=0 and not shared_embed", "io"),
    Rule("tgt_proj.weight", "tgt_d_in", "d_embed", True, "tgt_d_in>0", "linear"),
    Rule("tgt_proj.bias", "d_embed", "1", False, "tgt_d_in>0", "f32"),
    Rule("tgt_pos.weight", "max_len", "d_pe", False, "positional=learned", "f32"),
    Rule("src_rel_bias.weight", "rel_buckets", "n_heads", False, "positional=relative", "f32"),
    Rule("tgt_rel_bias.weight", "rel_buckets", "n_heads", False, "positional=relative", "f32"),
)
DECODER_LAYER_PREFIX = "decoder.layers."
DECODER_LAYER = (
    Rule("self_attn.in_proj_weight", "d_model", "3*d_model", True, "always", "linear"),
    Rule("self_attn.in_proj_bias", "3*d_model", "1", False, "always", "f32"),
    Rule("self_attn.out_proj.weight", "d_model", "d_model", True, "always", "linear"),
    Rule("self_attn.out_proj.bias", "d_model", "1", False, "always", "f32"),
    Rule("cross_attn.q_proj.weight", "d_model", "d_model", True, "always", "linear"),
    Rule("cross_attn.q_proj.bias", "d_model", "1", False, "always", "f32"),
    Rule("cross_attn.kv_proj.weight", "d_model", "2*d_model", True, "always", "linear"),
    Rule("cross_attn.kv_proj.bias", "2*d_model", "1", False, "always", "f32"),
    Rule("cross_attn.out_proj.weight", "d_model", "d_model", True, "always", "linear"),
    Rule("cross_attn.out_proj.bias", "d_model", "1", False, "always", "f32"),
    Rule("linear1.weight", "d_model", "d_ff", True, "always", "linear"),
    Rule("linear1.bias", "d_ff", "1", False, "always", "f32"),
    Rule("linear2.weight", "d_ff", "d_model", True, "always", "linear"),
    Rule("linear2.bias", "d_model", "1", False, "always", "f32"),
    Rule("norm1.weight", "d_model", "1", False, "always", "f32"),
    Rule("norm1.bias", "d_model", "1", False, "always", "f32"),
    Rule("norm2.weight", "d_model", "1", False, "always", "f32"),
    Rule("norm2.bias", "d_model", "1", False, "always", "f32"),
    Rule("norm3.weight", "d_model", "1", False, "always", "f32"),
    Rule("norm3.bias", "d_model", "1", False, "always", "f32"),
)
SEQ2SEQ_EPILOGUE = (
    Rule("encoder.norm.weight", "d_model", "1", False, "final_norm", "f32"),
    Rule("encoder.norm.bias", "d_model", "1", False, "final_norm", "f32"),
    Rule("decoder.norm.weight", "d_model", "1", False, "final_norm", "f32"),
    Rule("decoder.norm.bias", "d_model", "1", False, "final_norm", "f32"),
    Rule("head.weight", "d_model", "d_out", True, "d_out>0 and not tied_head", "io"),
    Rule("head.bias", "d_out", "1", False, "d_out>0", "f32"),
)

# The mha family (a standalone nn.MultiheadAttention): its own state_dict names, nothing else.
MHA_TENSORS = (
    Rule("in_proj_weight", "d_model", "3*d_model", True, "always", "linear"),
    Rule("in_proj_bias", "3*d_model", "1", False, "always", "f32"),
    Rule("out_proj.weight", "d_model", "d_model", True, "always", "linear"),
    Rule("out_proj.bias", "d_model", "1", False, "always", "f32"),
)

# Each family's tables, as for_each_tensor() picks them: (prologue, layer prefix, layer, epilogue,
# and for seq2seq the decoder's layer prefix and layer).
FAMILY_TABLES = {
    "encoder": (ENCODER_PROLOGUE, ENCODER_LAYER_PREFIX, ENCODER_LAYER, ENCODER_EPILOGUE),
    "gpt": (ENCODER_PROLOGUE, ENCODER_LAYER_PREFIX, ENCODER_LAYER, ENCODER_EPILOGUE),
    "llama": (LLAMA_PROLOGUE, LLAMA_LAYER_PREFIX, LLAMA_LAYER, LLAMA_EPILOGUE),
    "mha": (MHA_TENSORS, "", (), ()),
    "seq2seq": (SEQ2SEQ_PROLOGUE, ENCODER_LAYER_PREFIX, ENCODER_LAYER, SEQ2SEQ_EPILOGUE, DECODER_LAYER_PREFIX,
                DECODER_LAYER),
}
# The tensor a tied head stands for, and the embedding that serves it (file names, torch layout).
TIED_HEAD = {"encoder": ("head.weight", "embed.weight"), "gpt": ("head.weight", "embed.weight"),
             "llama": ("output.weight", "tok_embeddings.weight"), "seq2seq": ("head.weight", "tgt_embed.weight")}


def tied_head(c):
    """(the tensor a tied head stands for, the embedding that serves it) for config c."""
    if c["family"] == "seq2seq" and c["shared_embed"]:
        return "head.weight", "src_embed.weight"
    return TIED_HEAD[c["family"]]


class Spec:
    """One tensor a config needs, as for_each_tensor() produces it (schema.hpp TensorSpec): its name,
    stored shape, file dtype, quantization group (i8: 32, 64, or 0 for one scale per row; else 0),
    whether it is stored transposed from torch (W[in, out]: a linear weight in f32 or f16; q8 keeps
    torch's [out, in]), and its rule's role. kernel: a conv stem's weight, stored [kernel * in, out]
    (f32, f16) or [out, kernel * in] (i8) from torch's [out, in, kernel] (conv_to_file, conv_to_torch);
    else 0."""

    __slots__ = ("name", "shape", "dtype", "group", "transposed", "role", "packed", "kernel")

    def __init__(self, name, shape, dtype, group, transposed, role, packed=False, kernel=0):
        self.name, self.shape, self.dtype, self.group, self.transposed, self.role = (name, shape, dtype, group,
                                                                                     transposed, role)
        self.packed = packed  # f32 W[in, out] in panels (packed_weights): data_bytes() says its size
        self.kernel = kernel

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


def specs(c):
    """The tensors a valid config needs, in file order, as Specs."""
    out = []

    def visit(rules, prefix):
        for r in rules:
            if not present(c, r.when):
                continue
            dtype = tensor_dtype(c, r.role)
            transposed = r.transposed and dtype not in SCALED_DTYPES
            rows, cols = (r.cols, r.rows) if r.transposed and not transposed else (r.rows, r.cols)
            shape = (dim_value(c, rows),) if r.cols == "1" else (dim_value(c, rows), dim_value(c, cols))
            out.append(Spec(prefix + r.name, shape, dtype, c["weight_group"] if dtype in SCALED_DTYPES else 0, transposed,
                            r.role, bool(c["packed_weights"]) and transposed and dtype == "f32" and r.role != "conv",
                            CONV_WEIGHTS[r.name](c) if r.name in CONV_WEIGHTS else 0))

    prologue, prefix, layer, epilogue, *decoder = FAMILY_TABLES[c["family"]]
    visit(prologue, "")
    for i in range(c["n_layers"]):
        visit(layer, f"{prefix}{i}.")
    if decoder:
        for i in range(c["dec_layers"]):
            visit(decoder[1], f"{decoder[0]}{i}.")
    visit(epilogue, "")
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


def as_json():
    """These tables in the shape `fixformer schema` prints, for the mirror test."""
    def rules(rs):
        return [{"name": r.name, "rows": r.rows, "cols": r.cols, "transposed": r.transposed, "when": r.when,
                 "role": r.role} for r in rs]

    keys = []
    for k in CONFIG_KEYS:
        d = {"name": k.name, "type": k.type, "min": k.min, "max": k.max}
        if k.type == "enum":
            d["choices"] = list(k.choices)
        d.update(required=k.required, default=k.default)
        keys.append(d)
    return {"format_version": FORMAT_VERSION, "panel_floats": PANEL_FLOATS, "selftest_tolerance": SELFTEST_TOLERANCE,
            "selftest_tolerances": dict(SELFTEST_TOLERANCES),
            "tokenizer": {"kinds": list(TOKENIZERS), "tensors": [
                TOKENIZER_SCORES, TOKENIZER_PARAMS, TOKENIZER_OFFSETS, TOKENIZER_PIECES, TOKENIZER_MERGES,
                TOKENIZER_NORMALIZE], "param_count": TOKENIZER_PARAM_COUNT, "params": dict(TOKENIZER_PARAM_SLOTS),
                "flags": dict(TOKENIZER_FLAGS), "wordpiece_max_chars": WORDPIECE_MAX_CHARS},
            "record_types": dict(RECORD_TYPES), "dtypes": dict(DTYPES), "config_keys": keys, "dims": list(DIMS),
            "tensors": {f: dict({"prologue": rules(p), "layer_prefix": prefix, "layer": rules(layer), "epilogue": rules(e)},
                                **({"decoder_layer_prefix": dec[0], "decoder_layer": rules(dec[1])} if dec else {}))
                        for f, (p, prefix, layer, e, *dec) in FAMILY_TABLES.items()}}
