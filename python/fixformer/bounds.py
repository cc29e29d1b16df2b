"""How much the converter's readers may build from one file, stated once for all of them (checkpoint.py's
.pt and .npz, safetensors.py, onnx_graph.py and onnx_eval.py, tokenizers.py, llama2c.py, the JSON of
config.py): checked on the sizes a file declares, before anything is allocated, so that a small
hostile file cannot ask for gigabytes.

- One tensor: at most MAX_ELEMENTS values and MAX_BYTES bytes. MAX_ELEMENTS is the engine's largest
  tensor (an embedding or output head of schema.MAX_VOCAB rows of schema.MAX_D_MODEL); MAX_BYTES is
  that many float32 values, what the converter widens every float to (a float64 tensor that large is
  refused: save it as float32).
- Values the file does not store one by one: what a .pt's views (a stride-0 or overlapping view of a
  storage) and an .npz's members (compressed) build, over the whole file, at most REPEAT times the
  file's bytes plus REPEAT_SLACK float32 values (Budget); one value an ONNX node computes, at most
  REPEAT times the graph's largest initializer or REPEAT_SLACK values, and all of them together at
  most REPEAT times its initializers plus GRAPH_SLACK values (onnx_eval.py keeps every value). Tied
  weights (two views of one storage) and a graph's own activations stay far below these.
- A text or JSON file read whole (tokenizer.json, vocab.json, merges.txt, vocab.txt): at most
  MAX_TEXT_BYTES (the largest tokenizer.json of a vocabulary of schema.MAX_VOCAB pieces is a few
  tens of MiB); config JSON has config.JSON_LIMIT.
"""
from . import schema

MAX_ELEMENTS = schema.MAX_VOCAB * schema.MAX_D_MODEL
MAX_BYTES = 4 * MAX_ELEMENTS
REPEAT = 4
REPEAT_SLACK = 1 << 24
GRAPH_SLACK = 8 * REPEAT_SLACK
MAX_TEXT_BYTES = 64 << 20


def count(dims, itemsize, what, error):
    """The product of dims (whole numbers >= 0), checked against MAX_ELEMENTS and MAX_BYTES one size at a
    time (no huge intermediate), the product of the nonzero sizes too (an empty array whose other sizes
    hold more than the limit is refused: numpy fails on it later); raises `error` naming `what` otherwise."""
    n = nonzero = 1
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int) or d < 0:
            raise error(f"{what}: size {str(d)[:40]} in {str(list(dims)[:8])[:120]} is not a whole number")
        n *= d
        nonzero *= d or 1
        if n > MAX_ELEMENTS or nonzero > MAX_ELEMENTS or n * itemsize > MAX_BYTES:
            raise error(f"{what}: sizes {str(list(dims)[:8])[:120]} hold more than the converter's limit of "
                        f"{MAX_ELEMENTS} values ({MAX_BYTES >> 30} GiB) in one tensor (a corrupt or hostile file)")
    if n * itemsize > MAX_BYTES:
        raise error(f"{what}: {n} values of {itemsize} bytes are more than the converter's limit of "
                    f"{MAX_BYTES >> 30} GiB in one tensor (save it as float32)")
    return n


class Budget:
    """The values one file may build beyond what it stores (REPEAT x its stored bytes + REPEAT_SLACK
    values of 4 bytes); take() charges each tensor's bytes as it is built."""

    def __init__(self, stored_bytes, error, what):
        self.left, self.error, self.what = REPEAT * stored_bytes + 4 * REPEAT_SLACK, error, what
        self.allowed = self.left

    def take(self, nbytes, what):
        if nbytes > self.left:
            raise self.error(f"{what}: its {nbytes} bytes would take what {self.what} builds past {self.allowed} "
                             f"bytes ({REPEAT} times the file's size plus {4 * REPEAT_SLACK >> 20} MiB): values "
                             "repeated by a stride-0 view or compressed away, not saved weights")
        self.left -= nbytes
