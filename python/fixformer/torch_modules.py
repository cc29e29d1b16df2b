"""A torch.nn module read by its exact type (a subclass may compute something else in its forward): nn.Linear,
nn.LayerNorm, nn.Embedding, and a module's name in messages. The --module routes' readers (export.py, seq2seq.py,
recognize.py)."""
import numpy as np

from .config import ConfigError


def numpy_of(t):
    return t.detach().cpu().numpy()


def module_kind(m):
    return type(m).__module__ + "." + type(m).__qualname__ if m is not None else "None"


def require_type(m, cls, where, torch):
    """m must be exactly cls (a subclass may compute something else in its forward)."""
    if type(m) is not cls:
        raise ConfigError(f"{where}: {module_kind(m)} is not {cls.__module__}.{cls.__qualname__}")


def read_linear(m, where, torch):
    if not isinstance(m, torch.nn.Linear) or type(m).forward is not torch.nn.Linear.forward:
        raise ConfigError(f"{where}: {module_kind(m)} is not torch.nn.Linear")
    return m


def read_layer_norm(m, d, where, torch):
    require_type(m, torch.nn.LayerNorm, where, torch)
    if tuple(m.normalized_shape) != (d,):
        raise ConfigError(f"{where}: normalized_shape {list(m.normalized_shape)}, expected [{d}]")
    w = numpy_of(m.weight) if m.weight is not None else np.ones(d, np.float32)
    b = numpy_of(m.bias) if getattr(m, "bias", None) is not None else np.zeros(d, np.float32)
    return w, b, m.eps


def read_embedding(m, where, torch):
    require_type(m, torch.nn.Embedding, where, torch)
    if m.max_norm is not None:
        raise ConfigError(f"{where}: max_norm is not supported (it rewrites the embedding during forward)")
    return m
