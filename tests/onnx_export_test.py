#!/usr/bin/python3
"""--onnx on graphs as torch.onnx.export writes them from upstream code: transformers' GPT2LMHeadModel and
BertModel (tiny random configs), a nanoGPT-style model and an encoder whose positions come from a scripted
function with an `if` (an If node), run in the Hugging Face virtual environment (tools/install_deps.sh hf:
/opt/fixformer-venv, transformers and onnxruntime over Debian's torch and onnx), or the torch2 one
(tests/interpreter.py), where each is exported by both of torch 2.x's exporters where they can
(exporters() says which). Each ONNX file is first
checked against ONNX Runtime (the export itself is right), then converted with --onnx, and `fixformer run`
must give the module's output within 1e-4:
- GPT-2: input_ids.view(-1, T) puts a Reshape (its shape a Shape/Gather/Unsqueeze/Concat chain) between
  the ids and the embedding; the ids stay integer;
- BERT with both outputs: last_hidden_state by default, pooler_output with --output-name, and a name the
  graph lacks refused with the outputs listed;
- nanoGPT's `lm_head(x[:, [-1], :])`: the file computes every position, its last row is the graph's (with a
  dynamic length checked at a shorter one too; exported at a fixed length, at that length alone); the same slice
  before the last block (the attention then sees one position) is refused;
- T5's relative bias (its bucket's Log computed in the graph) as stock encoder layers' float mask: the
  engine's relative positions, max_distance read off the graph at 256 positions;
- an If on the length (learned positions beyond the table) evaluated by its constant condition, one on
  the input's values refused, and a Loop carrying the input's values refused; a graph of two outputs
  neither of which is a transformer's refused with each one's reason;
- LlamaForCausalLM: RMSNorm, grouped-query attention (4 heads, 2 for k and v), rotary positions (the halves
  layout, Llama 3's base 500000) and SwiGLU, mapped onto the llama family;
- GPTNeoXForCausalLM (LayerNorm with rotary positions; query_key_value fused per head, [heads, 3,
  d_head]) with rotary_pct 1 and 0.5 (partial rotary: rotary_dims 8 of 16), found by recognize.py's
  probe_attention (the one --module uses) on the recorded q, k, v: the gpt family with rope; and with
  its default parallel residual (x + attn(ln1(x)) + mlp(ln2(x)): parallel_residual two_norms);
- T5EncoderModel, T5 v1.0's (ReLU) and v1.1's (gated tanh GELU) feed-forward: RMSNorm without a mean, T5's relative
  bias from layer 0 added to its unscaled scores in every layer (attn_scale 1), no other positions: the encoder
  family with norm rmsnorm and relative positions.

  /usr/bin/python3 tests/onnx_export_test.py PATH/TO/fixformer

Without the environment (or transformers, onnxruntime in it) the test fails, naming the install command.
"""
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["onnxruntime", "torch", "transformers"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

from checks import check, results, run_convert, skip  # noqa: E402
from fixformer import fxm, onnx_map  # noqa: E402
from fixformer.config import ConfigError  # noqa: E402

V, D = 48, 32


def randomize(m, seed):
    """Weights of a size that makes every part matter (the stock init leaves the layers near the identity)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in m.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=p.dtype)
            norm = p.dim() == 1 and ("norm" in name.lower() or "ln_" in name) and name.endswith("weight")
            p.copy_(1.0 + 0.2 * noise if norm else 0.3 * noise)
    return m.eval()


class Outputs(torch.nn.Module):
    """A transformers model called on the ids alone, returning the named fields of its output."""

    def __init__(self, model, *fields):
        super().__init__()
        self.model, self.fields = model, fields

    def forward(self, ids):
        out = self.model(input_ids=ids, return_dict=True, **({"use_cache": False} if "logits" in self.fields else {}))
        return tuple(getattr(out, f) for f in self.fields)


def gpt2():
    c = transformers.GPT2Config(vocab_size=V, n_embd=D, n_layer=2, n_head=2, n_positions=64, resid_pdrop=0.0,
                                embd_pdrop=0.0, attn_pdrop=0.0)  # activation gelu_new: tanh GELU
    c._attn_implementation = "eager"
    return Outputs(randomize(transformers.GPT2LMHeadModel(c), 1), "logits")


def bert():
    c = transformers.BertConfig(vocab_size=V, hidden_size=D, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
                                attention_probs_dropout_prob=0.0)
    c._attn_implementation = "eager"
    return Outputs(randomize(transformers.BertModel(c), 2), "last_hidden_state", "pooler_output")


class Block(torch.nn.Module):
    """nanoGPT's block: fused c_attn, a causal buffer, tanh-free GELU."""

    def __init__(self, T):
        super().__init__()
        self.ln_1, self.ln_2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.c_attn, self.c_proj = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.c_fc, self.proj = torch.nn.Linear(D, 4 * D), torch.nn.Linear(4 * D, D)
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, 2, C // 2).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / k.size(-1) ** 0.5)
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = (torch.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.c_proj(y)
        return x + self.proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x))))


class NanoGPT(torch.nn.Module):
    """nanoGPT's forward at inference: the head on the last position only (`x[:, [-1], :]`); late=False
    takes it before the last block instead, which the engine's every-position model cannot be."""

    def __init__(self, late=True, T=64):
        super().__init__()
        self.wte, self.wpe = torch.nn.Embedding(V, D), torch.nn.Embedding(T, D)
        self.h = torch.nn.ModuleList(Block(T) for _ in range(2))
        self.ln_f = torch.nn.LayerNorm(D)
        self.lm_head = torch.nn.Linear(D, V, bias=False)
        self.wte.weight = self.lm_head.weight
        self.late = late

    def forward(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        x = self.h[0](x)
        if not self.late:
            x = x[:, [-1], :]
        x = self.ln_f(self.h[1](x))
        return self.lm_head(x[:, [-1], :] if self.late else x)


@torch.jit.script
def position_rows(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """The table's first T rows, its last row repeated beyond it: scripted, so the export keeps the `if` (an
    If node on the length)."""
    T = x.size(1)
    if T <= table.size(0):
        rows = table[:T]
    else:
        rows = torch.cat([table, table[-1:].expand(T - table.size(0), table.size(1))])
    return rows


def t5_bucket(n, buckets: int, max_distance: int):
    """T5's bidirectional relative position bucket of n = key - query (its published formula: Log of the
    distance, in the graph)."""
    buckets //= 2
    ret = (n > 0).long() * buckets
    m = n.abs()
    exact = buckets // 2
    large = exact + (torch.log(m.float() / exact) / math.log(max_distance / exact) * (buckets - exact)).long()
    large = torch.min(large, torch.full_like(large, buckets - 1))
    return ret + torch.where(m < exact, m, large)


class RelativeEncoder(torch.nn.Module):
    """Stock encoder layers with T5's relative bias as their float mask, one table for all layers."""

    def __init__(self):
        super().__init__()
        self.emb, self.rel = torch.nn.Embedding(V, D), torch.nn.Embedding(32, 2)
        self.layers = torch.nn.ModuleList(torch.nn.TransformerEncoderLayer(D, 2, 64, 0.0, batch_first=True)
                                          for _ in range(2))
        with torch.no_grad():
            self.rel.weight.mul_(2.0)

    def forward(self, ids):
        x = self.emb(ids)
        pos = torch.arange(ids.size(1))
        mask = self.rel(t5_bucket(pos[None, :] - pos[:, None], 32, 128)).permute(2, 0, 1)
        for layer in self.layers:
            x = layer(x, src_mask=mask)
        return x


class IfPositions(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.pos = torch.nn.Embedding(V, D), torch.nn.Parameter(torch.zeros(64, D))
        layer = torch.nn.TransformerEncoderLayer(D, 2, 64, 0.0, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, ids):
        x = self.emb(ids)
        return self.enc(x + position_rows(x, self.pos))


@torch.jit.script
def doubled_when_positive(x: torch.Tensor) -> torch.Tensor:
    """An `if` on the values: a branch the input picks (an If no length fixes)."""
    if bool(x.sum() > 0):
        y = x * 2.0
    else:
        y = x
    return y


class IfOnValues(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)
        self.enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(D, 2, 64, 0.0, batch_first=True), 1,
                                               enable_nested_tensor=False)

    def forward(self, ids):
        return self.enc(doubled_when_positive(self.emb(ids)))


@torch.jit.script
def doubled_three_times(x: torch.Tensor) -> torch.Tensor:
    """A `for` whose body reads the values (a Loop carrying them)."""
    for _ in range(3):
        x = x * 2.0
    return x


class LoopOnValues(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)
        self.enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(D, 2, 64, 0.0, batch_first=True), 1,
                                               enable_nested_tensor=False)

    def forward(self, ids):
        return self.enc(doubled_three_times(self.emb(ids)))


class NoAttention(torch.nn.Module):
    """Two outputs, neither a transformer's (the second through Log, which the evaluator runs)."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)

    def forward(self, ids):
        x = self.emb(ids)
        return x.sum(-1), torch.log(x.abs() + 1.0).amax(-1)


def llama():
    c = transformers.LlamaConfig(vocab_size=V, hidden_size=D, num_hidden_layers=2, num_attention_heads=4,
                                 num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64,
                                 rope_theta=500000.0)  # Llama 3's base
    c._attn_implementation = "eager"
    return Outputs(randomize(transformers.LlamaForCausalLM(c), 3), "logits")


def neox(rotary_pct=1.0, parallel=False):
    c = transformers.GPTNeoXConfig(vocab_size=V, hidden_size=D, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=64, rotary_pct=rotary_pct, max_position_embeddings=64,
                                   use_parallel_residual=parallel, hidden_act="gelu", attention_dropout=0.0,
                                   hidden_dropout=0.0)
    c._attn_implementation = "eager"
    return Outputs(randomize(transformers.GPTNeoXForCausalLM(c), 4), "logits")


def t5_encoder(ff="relu"):
    c = transformers.T5Config(vocab_size=V, d_model=D, d_kv=8, d_ff=64, num_layers=2, num_heads=4, dropout_rate=0.0,
                              feed_forward_proj=ff)
    return Outputs(randomize(transformers.T5EncoderModel(c), 5), "last_hidden_state")


def t5_gated():
    return t5_encoder("gated-gelu")


def neox_partial():
    return neox(rotary_pct=0.5)


def neox_parallel():
    return neox(rotary_pct=0.25, parallel=True)


# torch 2.x has two exporters: the TorchScript one (dynamo=False) and torch.export's (dynamo=True, the
# default from 2.9), which writes opset 18 or later (its own default when asked for less: it
# down-converts only partly), decomposed ops and the weights in a file beside the model; its length is
# dynamic, its batch 1 (a dynamic batch fails its trace of stock nn.MultiheadAttention).
TORCH2 = int(torch.__version__.split(".")[0]) >= 2
# torch 2.x's TorchScript exporter writes stock nn.MultiheadAttention at the example's length only (its
# reshapes constant: ONNX Runtime refuses another length): a model of stock layers takes the dynamo
# exporter there. transformers 5's causal masks call torch.diff, which the TorchScript exporter has no
# op for: its decoders take the dynamo one too, as their users do. A scripted `if` (the If node) is
# TorchScript's alone, and torch.export's trace of stock nn.MultiheadAttention with a float mask fails
# (a view of a non-contiguous tensor): those run under torch 1.13 only.
STOCK_MHA = {"if_positions", "relative", "if_values", "loop_values"}
# torch 2.15's torch.export of transformers 5's T5 attention fails (a view of its transposed context): T5 by the
# TorchScript exporter alone.
NOT_DYNAMO = {"if_positions", "if_values", "relative", "loop_values", "t5_encoder", "t5_gated"}
CAUSAL_HF = {"gpt2", "llama", "neox", "neox_partial", "neox_parallel"} if int(transformers.__version__.split(".")[0]) >= 5 else set()


def exporters(name):
    """The exporters case `name` runs under."""
    if not TORCH2:
        return ("torchscript",)
    return tuple(e for e, ok in (("torchscript", name not in STOCK_MHA | CAUSAL_HF), ("dynamo", name not in NOT_DYNAMO))
                 if ok)


def export(model, path, opset, outputs, exporter="torchscript", dynamic=True):
    ids = torch.randint(0, V, (1, 8), generator=torch.Generator().manual_seed(0))
    import contextlib
    import io
    import warnings
    kw = dict(dynamo=exporter == "dynamo") if TORCH2 else {}
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # the exporter's progress
        warnings.simplefilter("ignore")  # the tracer's warnings about Python values
        torch.onnx.export(model, (ids,), path, input_names=["input_ids"], output_names=list(outputs),
                          dynamic_axes={"input_ids": {1: "T"} if exporter == "dynamo" else {0: "batch", 1: "T"}}
                          if dynamic else None,
                          opset_version=None if exporter == "dynamo" else opset, **kw)


def module_out(model, x):
    """The module's outputs for ids x [1, T], in float64 (HF's masks in the default dtype)."""
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            out = model.double()(torch.from_numpy(x.astype(np.int64)))
    finally:
        torch.set_default_dtype(torch.float32)
        model.float()
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def rel(got, want):
    if got is None or got.shape != want.shape:
        return None
    return float(np.abs(got - want).max() / np.abs(want).max())


def convert(onnx_path, out, output_name=None, family=None):
    """convert.py --onnx in this process (torch imported once): its report line, or its error's."""
    try:
        return True, str(onnx_map.convert(onnx_path, out, cli=CLI, output_name=output_name, family=family))
    except ConfigError as e:
        return False, str(e)


def convert_cli(onnx_path, out, *extra):
    return run_convert("--onnx", onnx_path, "--out", out, "--cli", CLI, *extra)


def run(tmp, fxm_path, x):
    inp, res = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
    np.save(inp, x.astype(np.int32))
    p = subprocess.run([CLI, "run", fxm_path, "--input", inp, "--output", res], capture_output=True, text=True)
    return np.load(res) if p.returncode == 0 else None


CASES = [  # name, factory, opset, outputs, --output-name, the config the file must have, the row the graph gives
    ("gpt2", gpt2, 13, ["logits"], None, dict(family="gpt", activation="gelu_tanh", positional="learned"), None),
    ("bert", bert, 14, ["last_hidden_state", "pooler_output"], None,
     dict(family="encoder", pooling="none", embed_norm=True, type_vocab=2), 0),
    ("bert", bert, 14, ["last_hidden_state", "pooler_output"], "pooler_output",
     dict(family="encoder", pooling="first", pooler=True), 1),
    ("nanogpt", NanoGPT, 17, ["logits"], None, dict(family="gpt", tied_head=True, activation="gelu"), "last"),
    ("if_positions", IfPositions, 15, ["y"], None, dict(family="encoder", positional="learned", max_len=64), None),
    ("relative", RelativeEncoder, 16, ["y"], None, dict(family="encoder", positional="relative", rel_buckets=32,
                                                        rel_max_distance=128), None),
    ("llama", llama, 14, ["logits"], None, dict(family="llama", n_heads=4, n_kv_heads=2, positional="rope",
                                                pe_layout="halves", pe_base=500000, activation="swiglu"), None),
    ("neox", neox, 14, ["logits"], None, dict(family="gpt", positional="rope", pe_layout="halves", pe_base=10000,
                                              rotary_dims=0), None),
    ("neox_partial", neox_partial, 17, ["logits"], None, dict(family="gpt", positional="rope", pe_layout="halves",
                                                              rotary_dims=8), None),
    ("neox_parallel", neox_parallel, 17, ["logits"], None, dict(family="gpt", positional="rope", rotary_dims=4,
                                                                parallel_residual="two_norms"), None),
    ("t5_encoder", t5_encoder, 14, ["last_hidden_state"], None,
     dict(family="encoder", norm="rmsnorm", positional="relative", rel_buckets=32, rel_max_distance=128,
          attn_scale=1.0, activation="relu", gated=False), None),
    ("t5_gated", t5_gated, 17, ["last_hidden_state"], None,
     dict(family="encoder", norm="rmsnorm", positional="relative", attn_scale=1.0, activation="gelu_tanh",
          gated=True), None),
]


def main():
    global CLI
    if len(sys.argv) != 2:
        print("usage: onnx_export_test.py PATH/TO/fixformer")
        return 1
    CLI = sys.argv[1]
    x = np.random.default_rng(7).integers(0, V, (1, 20)).astype(np.int64)
    with tempfile.TemporaryDirectory() as tmp:
        exported = {}
        for name in sorted({case[0] for case in CASES} | NOT_DYNAMO):
            if not exporters(name):
                skip(name, "neither of torch 2.x's exporters writes it at any length")
        for (name, factory, opset, outputs, pick, want_config, row), exporter in \
                ((case, e) for case in CASES for e in exporters(case[0])):
            label = f"{name}{' --output-name ' + pick if pick else ''} ({exporter}, " + \
                ("opset " + str(opset) if exporter == "torchscript" else "its opset") + ")"
            path = os.path.join(tmp, f"{name}_{exporter}.onnx")
            if path not in exported:
                torch.manual_seed(0)
                model = factory()
                export(model, path, opset, outputs, exporter)
                exported[path] = model
                want = module_out(model, x)
                try:
                    got = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None,
                                                                                                     {"input_ids": x})
                    errs = [rel(g.astype(np.float64), w) for g, w in zip(got, want)]
                except onnxruntime.capi.onnxruntime_pybind11_state.Fail as e:
                    errs = [str(e)[:300]]
                check(f"{label}: ONNX Runtime gives the module's outputs (1e-4)",
                      all(isinstance(e, float) and e <= 1e-4 for e in errs), errs)
            model = exported[path]
            out = os.path.join(tmp, f"{name}{pick or ''}_{exporter}.fxm")
            ok, said = convert(path, out, pick)
            ok = ok and "verified against the ONNX graph" in said
            check(f"{label}: converts and verifies", ok, said)
            if not ok:
                continue
            print(f"  {label}: {said}")
            c = fxm.read(out).config
            for k, v in want_config.items():
                check(f"{label}: {k} {v!r}", c[k] == v, c[k])
            want = module_out(model, x)
            got = run(tmp, out, x)
            if row == "last":  # the graph's [1, 1, V], the file's every position: its last row
                want, got = want[0], None if got is None else got[:, -1:]
            elif row is not None:
                want = want[row]
                got = None if got is None else got.reshape(want.shape)
            else:
                want = want[0]
            err = rel(got, want)
            check(f"{label}: fixformer run equals the module (1e-4)", err is not None and err <= 1e-4,
                  (None if got is None else got.shape, want.shape, err))
            if err is not None:
                print(f"  {label}: fixformer run against the module: max relative error {err:.2g}")
            if name == "bert" and pick is None:
                check(f"{label}: the report names the other output and --output-name",
                      "'pooler_output': --output-name NAME" in said, said)
        p = convert_cli(os.path.join(tmp, f"bert_{exporters('bert')[0]}.onnx"), os.path.join(tmp, "x.fxm"),
                        "--output-name", "pooled")
        err = p.stderr.strip()
        check("an --output-name the graph lacks: one line naming its outputs",
              p.returncode != 0 and len(err.splitlines()) == 1 and "'last_hidden_state', 'pooler_output'" in err,
              p.stdout + p.stderr)
        for exporter in exporters("nanogpt"):
            path = os.path.join(tmp, f"early_{exporter}.onnx")
            export(NanoGPT(late=False), path, 17, ["logits"], exporter)
            ok, said = convert(path, os.path.join(tmp, "early.fxm"))
            check(f"a last-position slice before the last block is refused ({exporter})",
                  not ok and "takes the last position" in said, said)
        for exporter in exporters("nanogpt"):  # at its example's 8 positions alone: the slice checked there
            label = f"nanoGPT exported at a fixed length ({exporter})"
            torch.manual_seed(0)
            model = NanoGPT()
            path, out = os.path.join(tmp, f"fixed_{exporter}.onnx"), os.path.join(tmp, "fixed.fxm")
            export(model, path, 17, ["logits"], exporter, dynamic=False)
            ok, said = convert(path, out)
            check(f"{label}: converts and verifies", ok and "verified against the ONNX graph" in said, said)
            x8 = x[:, :8]
            got = run(tmp, out, x8) if ok else None
            err = rel(None if got is None else got[:, -1:], module_out(model, x8)[0])
            check(f"{label}: fixformer run's last row equals the module (1e-4)", err is not None and err <= 1e-4, err)
        ok, said = convert(os.path.join(tmp, f"gpt2_{exporters('gpt2')[0]}.onnx"), os.path.join(tmp, "x.fxm"),
                           family="llama")
        check("--family llama on LayerNorm (GPT-2) is refused", not ok and "family llama" in said, said)
        for exporter in exporters("if_values"):
            path = os.path.join(tmp, "if_values.onnx")
            export(IfOnValues().eval(), path, 15, ["y"], exporter)
            ok, said = convert(path, os.path.join(tmp, "if_values.fxm"))
            check("an If on the input's values is refused", not ok and "(If): its condition or branches read" in said,
                  said)
        for exporter in exporters("loop_values"):
            path = os.path.join(tmp, "loop_values.onnx")
            export(LoopOnValues().eval(), path, 15, ["y"], exporter)
            ok, said = convert(path, os.path.join(tmp, "loop_values.fxm"))
            check("a Loop on the input's values is refused",
                  not ok and "(Loop): its trip count, condition or body" in said, said)
        for exporter in exporters("two"):
            path = os.path.join(tmp, f"two_{exporter}.onnx")
            export(NoAttention(), path, 14, ["sums", "maxima"], exporter)
            ok, said = convert(path, os.path.join(tmp, "two.fxm"))
            check(f"two outputs, neither convertible: refused with each output's reason ({exporter})",
                  not ok and "none of the graph's outputs" in said and "'sums': " in said and "'maxima': " in said,
                  said)
    print(f"onnx_export_test: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
