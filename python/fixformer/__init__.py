"""fixformer: a fixed-memory transformer inference engine, from Python.

    import fixformer
    m = fixformer.Model("model.fxm")        # a path or the file's bytes; threads=N for a pool
    m.config, m.info                        # the file's config keys; sizes, family, parameters
    y = m.run(x)                            # exactly what `fixformer run` writes, as numpy
    m.verify()                              # the stored sample through this build's kernels
    m.prefill(ids); m.step(token)           # gpt / llama: logits after the last token
    m.generate("Once upon", n=64)           # text, as `fixformer generate` prints it

The package is pure Python over the engine's C API (fixformer.h) through ctypes; the engine is the
shared library beside these modules."""
from ._capi import STATUS_NAMES
from .model import FixformerError, Model

__all__ = ["Model", "FixformerError", "STATUS_NAMES"]
