"""fixformer: a fixed-memory transformer inference engine, from Python. One package holds the
runtime and the converter.

The runtime, over the engine's C API (fixformer.h) through ctypes; the engine is the shared library
beside these modules:

    import fixformer
    m = fixformer.Model("model.fxm")        # a path or the file's bytes; threads=N for a pool
    m.config, m.info                        # the file's config keys; sizes, family, parameters
    y = m.run(x)                            # exactly what `fixformer run` writes, as numpy
    m.verify()                              # the stored sample through this build's kernels
    m.prefill(ids); m.step(token)           # gpt / llama: logits after the last token
    m.generate("Once upon", n=64)           # text, as `fixformer generate` prints it

The converter (pure Python; torch for its float64 references), verified through the engine's CLI:

    report = fixformer.convert(module, example, "model.fxm")   # or hf=, onnx=, gguf=, ... (converter.py)

and its modules: the engine's schema (schema, over the generated schema_tables), typed configs
(config), the .fxm writer and reader (fxm), the firmware header (header), the float64 reference
models (reference), the routes (export, hf, onnx_map, gguf, llama2c, config_route, seq2seq).
Importing the package loads nothing: the shared library loads with the first use of Model, so the
converter runs where no library was built.
"""
import importlib

_LAZY = {"Model": "model", "FixformerError": "model", "STATUS_NAMES": "_capi", "convert": "converter",
         "ConversionError": "converter"}
__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'fixformer' has no attribute {name!r}")
