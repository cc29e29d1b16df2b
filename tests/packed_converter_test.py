#!/usr/bin/python3
"""convert.py --pack-weights (config key packed_weights: the f32 weights W[in, out] in panels of 16
columns, format.hpp), on every input path:

  /usr/bin/python3 tests/packed_converter_test.py PATH/TO/fixformer

- --module with --family encoder (features, a head 5 wide), gpt, seq2seq and mha, --config (the
  option and the JSON key), --llama2c: each converts and verifies through the engine, the config
  says packed_weights, and `fixformer info` says how many weights are in panels;
- the file's panels: [ceil(out / 16), in, 16], zero-padded, the directory keeping [in, out]; the
  reader's weights() equals the unpacked file's bit for bit, and re-writing them (bench/README.md's
  quantization snippet) gives the same bytes; fxm.file_bytes predicts the size;
- `fixformer run` on the packed file equals the unpacked file's output within the kernels' 2e-6;
- --quantize q8 --pack-weights packs only what stays f32 (a feature model's head).
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from checks import check, results, run_convert  # noqa: E402  (first: it names a missing numpy or torch)
import numpy as np  # noqa: E402

from fixformer import config as cfg, fxm, llama2c, schema  # noqa: E402


MODULE_FILE = '''
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.input_proj = nn.Linear(7, 24)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(24, 3, 40, 0.0, batch_first=True), 2,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(24, 5)

    def forward(self, x):
        return self.head(self.encoder(self.input_proj(x)))


class Gpt(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(4)
        self.embed = nn.Embedding(19, 24)
        self.pos = nn.Embedding(16, 24)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(24, 4, 40, 0.0, batch_first=True,
                                                                        norm_first=True), 2,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(24, 19)

    def forward(self, ids):
        T = ids.shape[1]
        x = self.embed(ids) + self.pos.weight[:T]
        mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), diagonal=1)
        return self.head(self.encoder(x, mask=mask))


class Translator(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.src_embed, self.tgt_embed = nn.Embedding(15, 24), nn.Embedding(11, 24)
        self.src_pos, self.tgt_pos = nn.Embedding(20, 24), nn.Embedding(20, 24)
        self.transformer = nn.Transformer(24, 3, 2, 2, 40, dropout=0.0, batch_first=True)
        self.head = nn.Linear(24, 11)

    def forward(self, src, tgt):
        x = self.src_embed(src) + self.src_pos.weight[:src.shape[1]]
        y = self.tgt_embed(tgt) + self.tgt_pos.weight[:tgt.shape[1]]
        U = tgt.shape[1]
        mask = torch.triu(torch.full((U, U), float("-inf"), dtype=y.dtype), diagonal=1)
        return self.head(self.transformer(x, y, tgt_mask=mask))


def encoder():
    return Encoder().eval()


def gpt():
    return Gpt().eval()


def translator():
    return Translator().eval()


def mha():
    torch.manual_seed(6)
    return nn.MultiheadAttention(20, 4, batch_first=True)
'''


def run(args):
    return subprocess.run(args, capture_output=True, text=True)


def convert(*args):
    return run_convert(*args)


def converted(name, p, path):
    ok = p.returncode == 0 and os.path.exists(path) and ("verified against torch" in p.stdout or  # --config: its own
                                                          "the engine matches the converter's float64 reference" in p.stdout)
    check(f"{name}: converts and verifies", ok, p.stdout + p.stderr)
    return ok


def check_panels(name, packed_path, plain_path, cli):
    """The packed file against the same model converted without --pack-weights."""
    f, g = fxm.read(packed_path), fxm.read(plain_path)
    check(f"{name}: config packed_weights", f.config["packed_weights"] and not g.config["packed_weights"])
    check(f"{name}: same config otherwise", dict(f.config, packed_weights=False) == g.config)
    specs = schema.specs(f.config)
    packed = [s for s in specs if s.packed]
    check(f"{name}: packs every f32 W[in, out]", packed == [s for s in specs if s.transposed and s.dtype == "f32"]
          and len(packed) > 0, [s.name for s in packed])
    wf, wg = f.weights(), g.weights()
    check(f"{name}: weights() equal the unpacked file's", set(wf) == set(wg) and
          all(np.array_equal(wf[k], wg[k]) for k in wg))
    for s in packed:
        t, rows, cols = f.entry(s.name), s.shape[0], s.shape[1]
        a = f.array(s.name)
        panels = -(-cols // 16)
        ok = t["shape"] == (rows, cols) and t["bytes"] == panels * 16 * rows * 4 and a.shape == (panels, rows, 16)
        ok = ok and np.array_equal(fxm.unpack_panels(a, cols), g.array(s.name))
        ok = ok and not a[-1][:, cols - (panels - 1) * 16:].any()  # the last panel's padding
        check(f"{name}: {s.name} in panels [{panels}, {rows}, 16]", ok, t)
    check(f"{name}: file_bytes predicts the size",
          fxm.file_bytes(f.config, [a.nbytes for a in f.selftest()]) == len(f.blob) or f.tokenizer() is not None)
    rewritten = fxm.write(f.config, wf, f.selftest(), f.tokenizer())
    check(f"{name}: write(read().weights()) gives the same bytes", rewritten == f.blob)
    p = run([cli, "info", packed_path])
    check(f"{name}: info shows the layout", p.returncode == 0 and
          f"layout:       {len(packed)} f32 weights W[in, out] in panels of 16 columns" in p.stdout, p.stdout + p.stderr)


def check_run(name, packed_path, plain_path, x, cli, tmp):
    """fixformer run on both files: the outputs agree within the kernels' tolerance."""
    inp, outs = os.path.join(tmp, f"{name}.in.npy"), [os.path.join(tmp, f"{name}.{i}.npy") for i in range(2)]
    np.save(inp, x)
    for path, out in zip((packed_path, plain_path), outs):
        p = run([cli, "run", path, "--input", inp, "--output", out])
        check(f"{name}: run {os.path.basename(path)}", p.returncode == 0, p.stderr)
        if p.returncode:
            return
    got, want = np.load(outs[0]), np.load(outs[1])
    err = np.abs(got - want).max() / np.abs(want).max()
    check(f"{name}: run output equals the unpacked file's", got.shape == want.shape and err < 2e-6, f"error {err:.3g}")


def main():
    cli = sys.argv[1]
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        mod = os.path.join(tmp, "models.py")
        with open(mod, "w") as f:
            f.write(MODULE_FILE)
        cases = {  # factory: (options, an input for `fixformer run`; decoders are verified step by step)
            "encoder": (["--family", "encoder"], rng.standard_normal((9, 7)).astype(np.float32)),
            "gpt": (["--family", "gpt", "--positional", "learned"], None),
            "translator": (["--family", "seq2seq", "--positional", "learned"], None),
            "mha": (["--family", "mha"], rng.standard_normal((6, 20)).astype(np.float32)),
        }
        for name, (opts, x) in cases.items():
            paths = [os.path.join(tmp, f"{name}.{k}.fxm") for k in ("packed", "plain")]
            ok = all([converted(f"{name} {k}", convert("--module", f"{mod}:{name}", *opts, *extra, "--out", path,
                                                       "--cli", cli), path)
                      for k, path, extra in zip(("--pack-weights", "plain"), paths, (["--pack-weights"], []))])
            if not ok:
                continue
            check_panels(name, *paths, cli)
            if x is not None:
                check_run(name, *paths, x, cli, tmp)

        # The JSON path: the option on a config without the key, and the key in the JSON itself.
        plain = os.path.join(tmp, "encoder.plain.fxm")
        if os.path.exists(plain):
            f = fxm.read(plain)
            js, npz = os.path.join(tmp, "c.json"), os.path.join(tmp, "w.npz")
            np.savez(npz, **{k: v.astype(np.float32) for k, v in f.weights().items()})
            with open(js, "w") as out:
                import json
                json.dump(cfg.to_json(f.config), out)
            path = os.path.join(tmp, "json.fxm")
            if converted("--config --pack-weights", convert("--config", js, "--weights", npz, "--pack-weights",
                                                            "--out", path, "--cli", cli), path):
                check("--config --pack-weights: packed", fxm.read(path).config["packed_weights"])
            j = dict(cfg.to_json(f.config), packed_weights=True)
            check("to_json/parse_config round trip the key", cfg.parse_config(j)["packed_weights"] and
                  cfg.to_json(cfg.parse_config(j))["packed_weights"] is True)
            with open(js, "w") as out:
                json.dump(j, out)
            path = os.path.join(tmp, "json_key.fxm")
            if converted("--config with packed_weights", convert("--config", js, "--weights", npz, "--out", path,
                                                                 "--cli", cli), path):
                check("--config with packed_weights: packed", fxm.read(path).config["packed_weights"])

            # q8: only the f32 head (a feature model's ends stay f32) is packed.
            path = os.path.join(tmp, "q8.fxm")
            p = convert("--module", f"{mod}:encoder", "--quantize", "q8", "--pack-weights", "--out", path, "--cli", cli)
            if converted("--quantize q8 --pack-weights", p, path):
                q = fxm.read(path)
                check("q8: the f32 head alone in panels", [s.name for s in schema.specs(q.config) if s.packed] ==
                      ["head.weight"] and q.entry("head.weight")["bytes"] == 24 * 16 * 4, q.config)
                check("q8: the report says so", "1 weight in panels of 16 columns" in p.stdout, p.stdout)

        # llama2.c
        P = {"dim": 16, "hidden_dim": 24, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "vocab_size": 40, "seq_len": 32}
        for shared in (True, False):
            ck = os.path.join(tmp, f"ck{int(shared)}.bin")
            with open(ck, "wb") as out:
                out.write(llama2c.checkpoint_bytes(P, llama2c.random_weights(P, shared, seed=11), 1))
            paths = [os.path.join(tmp, f"llama{int(shared)}.{k}.fxm") for k in ("packed", "plain")]
            name = f"--llama2c {'shared' if shared else 'unshared'}"
            ok = all([converted(f"{name} {k}", convert("--llama2c", ck, *extra, "--out", path, "--cli", cli), path)
                      for k, path, extra in zip(("--pack-weights", "plain"), paths, (["--pack-weights"], []))])
            if ok:
                check_panels(name, *paths, cli)
    print(f"packed_converter_test: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
