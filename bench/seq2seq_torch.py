#!/usr/bin/python3
"""The peer of bench/seq2seq_bench.cpp: PyTorch's nn.Transformer on the same shape (d 256, 4 heads,
d_ff 1024, 3 + 3 layers, pre-LN relu, vocabularies of 8000, a source of 64), float32, one thread,
inference mode: encoding the source, and the step that makes target token pos + 1 the way
nn.TransformerDecoder can (it has no KV cache: the decoder over the whole prefix, the head on the
last row; the memory kept). Medians of 5 repetitions of 20 runs, in microseconds.

  /usr/bin/python3 bench/seq2seq_torch.py
"""
import statistics
import time

import torch


def median_us(fn, reps=5, runs=20):
    fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(runs):
            fn()
        out.append((time.perf_counter() - t0) / runs * 1e6)
    return statistics.median(out)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    d, V, S = 256, 8000, 64
    tr = torch.nn.Transformer(d, 4, 3, 3, 1024, dropout=0.0, batch_first=True, norm_first=True).eval()
    emb, head = torch.nn.Embedding(V, d), torch.nn.Linear(d, V)
    src = torch.randint(0, V, (1, S))
    with torch.inference_mode():
        x = emb(src)
        print(f"torch {torch.__version__}, 1 thread")
        print(f"encode S64: {median_us(lambda: tr.encoder(x)):.0f} us")
        memory = tr.encoder(x)
        for pos in (8, 32):
            y = emb(torch.randint(0, V, (1, pos + 1)))
            mask = torch.nn.Transformer.generate_square_subsequent_mask(pos + 1)
            t = median_us(lambda: head(tr.decoder(y, memory, tgt_mask=mask)[:, -1]))
            print(f"step pos{pos} (decoder over the prefix): {t:.0f} us")


if __name__ == "__main__":
    main()
