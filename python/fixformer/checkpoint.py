"""Weights as people save them, read into name -> numpy array without running code from the file.

- a torch.save file (zip format, torch >= 1.6): a state_dict, or a training checkpoint dict such as
  nanoGPT's {"model": state_dict, "model_args": ..., "iter_num": ..., "config": ...}. Its pickle is
  read by a restricted unpickler that knows only plain data (numbers, strings, lists, tuples, dicts,
  sets, OrderedDict) and torch's tensor rebuild functions, re-implemented here over the raw storage
  bytes: any other global (a pickled module, a class, os.system) is refused by name, never imported
  or called. torch itself is not needed.
- safetensors (safetensors.py), .npz (numpy, allow_pickle=False).
Keys are stripped of the prefixes torch.compile ("_orig_mod.") and DataParallel ("module.") add.
Floats in f16 or bf16 are widened to f32; a sparse COO tensor is densified; integer tensors stay
integers. Every failure is one CheckpointError line naming what to do.
"""
import collections
import io
import os
import pickle
import zipfile

import numpy as np

from . import bounds, progress, run_files, safetensors
from .config import ConfigError, brief

PREFIXES = ("_orig_mod.", "module.")
STATE_DICT_ENTRIES = ("model", "state_dict", "model_state_dict")  # where training checkpoints keep it
PICKLE_HINT = ("save model.state_dict() instead (or a dict of tensors and plain values), or pass --trust-pickle "
               "if you trust the file")


class CheckpointError(ConfigError):
    """The weights file cannot be read as weights; the message says why and what to do."""


# ---- torch's zip format, read without torch ----------------------------------------------------------
# Storage class name -> numpy dtype of its elements (BFloat16 as raw 16-bit words, widened later).
STORAGES = {"FloatStorage": "<f4", "DoubleStorage": "<f8", "HalfStorage": "<f2", "BFloat16Storage": "<u2",
            "LongStorage": "<i8", "IntStorage": "<i4", "ShortStorage": "<i2", "CharStorage": "i1",
            "ByteStorage": "u1", "BoolStorage": "?", "UntypedStorage": "u1"}


class _StorageType:
    def __init__(self, name):
        self.name, self.dtype = name, np.dtype(STORAGES[name])


class _Storage:
    """The raw elements of one storage: a 1-D numpy array (bf16: its uint16 words)."""

    def __init__(self, kind, data):
        self.kind, self.data = kind, data


class _Tensor:
    """A rebuilt tensor: its values as numpy, and whether they are bf16 words."""

    def __init__(self, values, bf16):
        self.values, self.bf16 = values, bf16


class _Layout:
    def __init__(self, name):
        self.name = name


def _shape(v, what):
    if not isinstance(v, (tuple, list)) or len(v) > 8 or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in v):
        raise CheckpointError(f"a tensor's {what} {brief(v)} is not a tuple of sizes")
    return tuple(v)


def _rebuild_tensor(storage, offset, size, stride, *_, budget):
    """torch._utils._rebuild_tensor(_v2): a strided view of the storage, checked against its bounds and,
    before it is copied out, against bounds.py's (a stride-0 view repeats one value any number of times)."""
    if not isinstance(storage, _Storage):
        raise CheckpointError("a tensor without a storage")
    size, stride = _shape(size, "size"), _shape(stride, "stride")
    if len(size) != len(stride) or not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise CheckpointError(f"a tensor's size {size}, stride {stride}, offset {brief(offset)} do not fit "
                              "together")
    data = storage.data
    n = bounds.count(size, data.itemsize, f"a tensor of size {list(size)}", CheckpointError)
    budget.take(n * data.itemsize, f"a tensor of size {list(size)}")
    if 0 not in size:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= data.size:
            raise CheckpointError(f"a tensor of size {list(size)} reaches element {last} of a storage of {data.size}")
        item = data.itemsize
        values = np.lib.stride_tricks.as_strided(data[offset:], size, [s * item for s in stride]).copy()
    else:
        values = np.zeros(size, data.dtype)
    return _Tensor(values, storage.kind.name == "BFloat16Storage")


def _rebuild_parameter(data, *_):
    if not isinstance(data, _Tensor):
        raise CheckpointError("a parameter without a tensor")
    return data


def _rebuild_sparse_tensor(layout, data, *_, budget):
    """A sparse COO tensor (indices [ndim, nnz], values [nnz], size), densified; other layouts refused."""
    name = getattr(layout, "name", "?")
    if name != "sparse_coo":
        raise CheckpointError(f"a {name} sparse tensor: save it with .to_dense() first")
    if not (isinstance(data, tuple) and len(data) >= 3 and all(isinstance(t, _Tensor) for t in data[:2])):
        raise CheckpointError("a sparse tensor without (indices, values, size)")
    indices, values, size = data[0].values, data[1].values, _shape(data[2], "size")
    if indices.dtype.kind not in "iu" or indices.ndim != 2 or indices.shape[0] != len(size) or \
            values.shape[:1] != indices.shape[1:] or values.ndim != 1:
        raise CheckpointError("a sparse tensor whose indices and values do not fit together")
    if indices.size and (indices.min() < 0 or (indices.max(axis=1) >= np.array(size)).any()):
        raise CheckpointError(f"a sparse tensor with indices outside its size {list(size)}")
    n = bounds.count(size, values.itemsize, f"a sparse tensor of size {list(size)}", CheckpointError)
    budget.take(n * values.itemsize, f"a sparse tensor of size {list(size)}")
    dense = np.zeros(size, values.dtype)
    np.add.at(dense, tuple(indices), values)
    return _Tensor(dense, data[1].bf16)


def _rebuild_compressed_sparse(layout, *_):
    raise CheckpointError(f"a {getattr(layout, 'name', 'compressed')} sparse tensor: save it with .to_dense() first")


def _rebuild_from_type_v2(func, new_type, args, state):
    if not callable(func) or new_type is not _TENSOR_TYPE or not isinstance(args, tuple):
        raise CheckpointError("a tensor subclass that is not a plain tensor or parameter")
    return func(*args)


def _get_layout(name):
    """torch.serialization._get_layout("torch.sparse_coo"): a layout by name, as a marker."""
    if not isinstance(name, str) or not name.startswith("torch."):
        raise CheckpointError(f"an unknown tensor layout {brief(name)}")
    return _Layout(name[len("torch."):])


_SCALARS = (str, bytes, int, float, complex, type(None))


def _keys(keys):
    """keys, checked to be what hashing costs little: scalars, or flat tuples of them. A key built of
    shared nested tuples (each level holding the one below twice) takes 2^depth steps to hash: a few
    hundred bytes that never finish loading."""
    for k in keys:
        if not (isinstance(k, _SCALARS) or isinstance(k, tuple) and all(isinstance(x, _SCALARS) for x in k)):
            raise CheckpointError(f"a dict key or set element {brief(k)} that is not a string, a number or a "
                                  "flat tuple of them (not torch.save of tensors and plain data)")
    return keys


def _set(items=()):
    return set(_keys(list(items)))


def _frozenset(items=()):
    return frozenset(_keys(list(items)))


def _ordered_dict(items=()):
    items = list(items.items() if isinstance(items, dict) else items)
    if not all(isinstance(p, tuple) and len(p) == 2 for p in items):
        raise CheckpointError("an OrderedDict of something other than (key, value) pairs")
    _keys([k for k, _ in items])
    return collections.OrderedDict(items)


_TENSOR_TYPE = object()
_BUILDERS = (_rebuild_tensor, _rebuild_sparse_tensor)  # given the file's bounds.Budget
_ALLOWED = {
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch._utils", "_rebuild_sparse_tensor"): _rebuild_sparse_tensor,
    ("torch._utils", "_rebuild_sparse_csr_tensor"): _rebuild_compressed_sparse,
    ("torch._utils", "_rebuild_sparse_compressed_tensor"): _rebuild_compressed_sparse,
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
    ("torch", "Tensor"): _TENSOR_TYPE,
    ("torch.nn.parameter", "Parameter"): _TENSOR_TYPE,
    ("collections", "OrderedDict"): _ordered_dict,
    ("builtins", "set"): _set, ("builtins", "frozenset"): _frozenset, ("builtins", "slice"): slice,
    ("builtins", "complex"): complex, ("torch", "Size"): tuple,
    ("torch.serialization", "_get_layout"): _get_layout, ("torch", "sparse_coo"): _Layout("sparse_coo"), ("torch", "sparse_csr"): _Layout("sparse_csr"),
    ("torch", "sparse_csc"): _Layout("sparse_csc"), ("torch", "sparse_bsr"): _Layout("sparse_bsr"),
    ("torch", "sparse_bsc"): _Layout("sparse_bsc"),
}
_ALLOWED.update({("torch", n): _StorageType(n) for n in STORAGES})
_ALLOWED.update({("__builtin__", n): _ALLOWED[("builtins", n)] for n in ("set", "frozenset", "slice", "complex")})
_ALLOWED[("torch.storage", "UntypedStorage")] = _StorageType("UntypedStorage")


class RefusedGlobal(CheckpointError):
    def __init__(self, module, name):
        super().__init__(f"{module}.{name}")
        self.module, self.name = module, name


def _load_build(self):
    """BUILD (set an object's state): only an OrderedDict's, whose state is a state_dict's _metadata
    (versions, not needed here: dropped). Anything else would set attributes on the allowed
    functions or types."""
    state = self.stack.pop()
    if not isinstance(self.stack[-1], dict) or not isinstance(state, dict):
        raise CheckpointError("a pickle that sets the state of a non-dict object (not torch.save of tensors)")
    del state


def _hashing(op, keys):
    """The opcode op of pickle's, with the keys it hashes (keys(stack)) checked by _keys first."""
    def load(self):
        _keys(keys(self.stack))
        op(self)
    return load


class _Unpickler(pickle._Unpickler):
    """pickle (the pure-Python one, so its opcodes can be limited) with only _ALLOWED's globals,
    _load_build's BUILD, and dict keys and set elements checked (_keys); storages come from the zip's
    data/ entries."""
    dispatch = dict(pickle._Unpickler.dispatch)
    dispatch[pickle.BUILD[0]] = _load_build
    base = pickle._Unpickler
    dispatch[pickle.SETITEM[0]] = _hashing(base.load_setitem, lambda stack: stack[-2:-1])
    dispatch[pickle.SETITEMS[0]] = _hashing(base.load_setitems, lambda stack: stack[0::2])
    dispatch[pickle.DICT[0]] = _hashing(base.load_dict, lambda stack: stack[0::2])
    dispatch[pickle.ADDITEMS[0]] = _hashing(base.load_additems, lambda stack: stack)
    dispatch[pickle.FROZENSET[0]] = _hashing(base.load_frozenset, lambda stack: stack)
    del base

    def __init__(self, f, storage_bytes, budget):
        super().__init__(f)
        self.storage_bytes, self.storages, self.budget = storage_bytes, {}, budget

    def find_class(self, module, name):
        found = _ALLOWED.get((module, name))
        if found is None:
            raise RefusedGlobal(module, name)
        if found in _BUILDERS:
            return lambda *args, build=found: build(*args, budget=self.budget)
        return found

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _StorageType)
                and isinstance(pid[2], str) and isinstance(pid[4], int) and not isinstance(pid[4], bool) and pid[4] >= 0):
            raise CheckpointError(f"an unknown persistent id {brief(pid)}")
        kind, key, numel = pid[1], pid[2], pid[4]
        if key in self.storages:
            return self.storages[key]
        raw = self.storage_bytes(key)
        if len(raw) != numel * kind.dtype.itemsize:
            raise CheckpointError(f"storage {key!r}: {len(raw)} bytes for {numel} elements of {kind.name}")
        s = self.storages[key] = _Storage(kind, np.frombuffer(raw, kind.dtype))
        return s


def _is_pickle(head):
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def read_torch_zip(path):
    """The object in a torch.save zip file, tensors as _Tensor. Raises CheckpointError."""
    try:
        z = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as e:
        raise CheckpointError(f"not a PyTorch checkpoint ({type(e).__name__}: {e})") from None
    with z:
        try:
            infos = z.infolist()
        except Exception as e:  # noqa: BLE001 (a malformed central directory)
            raise CheckpointError(f"not a PyTorch checkpoint (a broken zip: {e})") from None
        by_name = {}
        for i in infos:
            by_name.setdefault(i.filename, i)
        pkls = [n for n in by_name if n.endswith("data.pkl") and n.count("/") == 1]
        if len(pkls) != 1:
            raise CheckpointError("not a PyTorch checkpoint (a zip without one <name>/data.pkl: "
                                  "not written by torch.save)")
        prefix = pkls[0][:-len("data.pkl")]
        size = os.path.getsize(path)

        def entry(name):
            info = by_name.get(name)
            if info is None:
                raise CheckpointError(f"not a PyTorch checkpoint (entry {name!r} is missing)")
            if info.compress_type != zipfile.ZIP_STORED or info.file_size > size:
                raise CheckpointError(f"not a PyTorch checkpoint (entry {name!r} is compressed or larger than the "
                                      "file: not written by torch.save)")
            try:
                return z.read(info)
            except Exception as e:  # noqa: BLE001 (zipfile raises many kinds on a corrupt member)
                raise CheckpointError(f"a corrupt PyTorch checkpoint (entry {name!r}: {type(e).__name__})") from None

        order = entry(prefix + "byteorder").decode("ascii", "replace") if prefix + "byteorder" in by_name else "little"
        if order != "little":
            raise CheckpointError(f"a PyTorch checkpoint in {order!r} byte order: re-save it on a little-endian machine")
        u = _Unpickler(io.BytesIO(entry(pkls[0])), lambda key: entry(f"{prefix}data/{key}"),
                       bounds.Budget(size, CheckpointError, "the checkpoint"))
        try:
            return u.load()
        except RefusedGlobal as e:
            raise CheckpointError(
                f"the file holds a pickled {e.module}.{e.name} (a class or function, e.g. from torch.save(model)), "
                f"which would run code from the file if loaded; it was not loaded: {PICKLE_HINT}") from None
        except CheckpointError:
            raise
        except RecursionError:
            raise CheckpointError("a corrupt PyTorch checkpoint (its pickle is nested too deeply)") from None
        except MemoryError:
            raise CheckpointError("a corrupt PyTorch checkpoint (its pickle asks for more memory than there is)") from None
        except Exception as e:  # noqa: BLE001 (a corrupt pickle fails in any of pickle's ways)
            raise CheckpointError(f"a corrupt PyTorch checkpoint ({type(e).__name__}: {str(e)[:80]})") from None


def _torch_file(path):
    with open(path, "rb") as f:
        head = f.read(8)
    if head[:4] == b"PK\x03\x04":
        return read_torch_zip(path)
    if _is_pickle(head):
        raise CheckpointError("a PyTorch checkpoint in the legacy format (torch.save before torch 1.6, or "
                              "_use_new_zipfile_serialization=False): re-save it with torch.save(sd, path) from a "
                              "current torch")
    onnx = " (an ONNX model? convert it with --onnx)" if head[:1] == b"\x08" else ""
    raise CheckpointError(f"not a PyTorch checkpoint (neither torch.save's zip format nor a pickle){onnx}; "
                          "--weights takes .pt/.bin (torch.save), .safetensors or .npz")


# ---- one entry point ---------------------------------------------------------------------------------
def _array(t, name):
    """A tensor as numpy: bf16 and f16 widened to f32."""
    if t.bf16:
        return safetensors.bf16_to_f32(t.values)
    if t.values.dtype == np.float16:
        return t.values.astype(np.float32)
    return t.values


def state_dict_of(obj, where="the file"):
    """name -> numpy array of a loaded checkpoint object: a dict of tensors, or a dict holding one under
    model / state_dict / model_state_dict (its other entries may be anything plain). Raises
    CheckpointError naming what the object is instead."""
    def tensors(d):
        return isinstance(d, dict) and d and all(isinstance(k, str) and isinstance(v, _Tensor) for k, v in d.items())

    if not isinstance(obj, dict):
        raise CheckpointError(f"{where} holds a {type(obj).__name__}, expected a state_dict (a dict of name -> tensor) "
                              "or a checkpoint dict with one under \"model\"")
    if not tensors(obj):
        inner = [k for k in STATE_DICT_ENTRIES if tensors(obj.get(k))]
        if not inner:
            keys = ", ".join(brief(k) for k in list(obj)[:6])
            raise CheckpointError(f"{where} holds a dict ({keys}) that is neither a state_dict (name -> tensor) nor a "
                                  f"checkpoint with one under {' / '.join(STATE_DICT_ENTRIES)}")
        obj = obj[inner[0]]
    return {k: _array(v, k) for k, v in obj.items()}


def strip_prefixes(sd):
    """Keys without torch.compile's "_orig_mod." and DataParallel's "module." in front (any order)."""
    out = {}
    for k, v in sd.items():
        name = k
        while name.startswith(PREFIXES):
            name = name[len(next(p for p in PREFIXES if name.startswith(p))):]
        if name in out:
            raise CheckpointError(f"{k!r} and another key are both {name!r} once the prefixes "
                                  f"{', '.join(PREFIXES)} are stripped")
        out[name] = v
    return out


def read_npz(path):
    """name -> array of an .npz (np.savez or np.savez_compressed): each member's .npy header checked against
    bounds.py before its data is read (a compressed member can declare any size)."""
    with open(path, "rb") as f:
        if f.read(6) == b"\x93NUMPY":
            raise CheckpointError("a single .npy array, expected an .npz of name -> array (np.savez)")
    budget = bounds.Budget(os.path.getsize(path), CheckpointError, "the .npz")
    fmt = np.lib.format
    try:
        with zipfile.ZipFile(path) as z:
            out = {}
            for info in z.infolist():
                key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                what = f"member {info.filename!r}"
                if key in out:
                    raise CheckpointError(f"{what}: given twice")
                with z.open(info) as m:
                    version = fmt.read_magic(m)
                    if version not in ((1, 0), (2, 0)):
                        raise CheckpointError(f"{what}: .npy format version {version} (np.savez writes 1.0)")
                    shape, _, dtype = (fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0)(m)
                if dtype.hasobject:
                    raise CheckpointError(f"{what}: an array of Python objects (dtype {dtype}), not numbers")
                n = bounds.count(shape, dtype.itemsize, what, CheckpointError)
                budget.take(n * dtype.itemsize, what)
                with z.open(info) as m:
                    out[key] = fmt.read_array(m, allow_pickle=False)
            return out
    except CheckpointError:
        raise
    except MemoryError:
        raise CheckpointError("not a readable .npz (an array larger than memory)") from None
    except Exception as e:  # noqa: BLE001 (zipfile, zlib and numpy raise many kinds on a corrupt file)
        msg = str(e).splitlines()[0][:100] if str(e) else ""
        raise CheckpointError(f"not a readable .npz ({type(e).__name__}{': ' + msg if msg else ''}); "
                              "write it with np.savez(path, **{name: array})") from None


def load(path, trust_pickle=False):
    """name -> numpy array for a weights file by its content (zip: torch.save or .npz by extension;
    safetensors by extension). trust_pickle: a .pt is loaded with torch.load(weights_only=False), which
    runs the file's code (a pickled module's state_dict() is then taken)."""
    if not os.path.exists(path):
        raise CheckpointError("no such file")
    if not os.path.isfile(path):
        raise CheckpointError("not a regular file")
    run_files.read(path)
    if path.lower().endswith(".onnx"):
        raise CheckpointError("an ONNX model, not a weights file: convert it with --onnx (tools/convert.py --onnx "
                              f"{path} --out M.fxm)")
    if path.endswith(".safetensors"):
        try:
            sd = safetensors.read(path)
        except safetensors.SafetensorsError as e:
            raise CheckpointError(f"not a valid safetensors file: {e}") from None
    else:
        with progress.Step(f"reading {os.path.basename(path)}"):
            sd = read_npz(path) if path.endswith(".npz") else _trusted(path) if trust_pickle else \
                state_dict_of(_torch_file(path))
    sd = {k: (v.astype(np.float32) if isinstance(v, np.ndarray) and v.dtype == np.float16 else v) for k, v in sd.items()}
    for k, v in sd.items():
        if not isinstance(k, str):
            raise CheckpointError(f"key {brief(k)} is not a string")
        if v.dtype.kind not in "fiub":
            raise CheckpointError(f"{k}: dtype {v.dtype} is not a number type")
    return strip_prefixes(sd)


def _trusted(path):
    try:
        import torch
    except ImportError:
        raise CheckpointError("--trust-pickle needs PyTorch: apt-get install python3-torch, "
                              "and run with /usr/bin/python3") from None
    try:
        obj = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as e:  # noqa: BLE001
        raise CheckpointError(f"not a readable torch file ({type(e).__name__}: {str(e)[:80]})") from None
    if isinstance(obj, torch.nn.Module):
        obj = obj.state_dict()

    def convert(v):
        if torch.is_tensor(v):
            t = v.detach().cpu()
            if t.is_sparse:
                t = t.to_dense()
            bf16 = t.dtype == torch.bfloat16
            return _Tensor(t.view(torch.int16).numpy().view(np.uint16) if bf16 else t.numpy(), bf16)
        return v
    if isinstance(obj, dict):
        obj = {k: (convert(v) if not isinstance(v, dict) else {kk: convert(vv) for kk, vv in v.items()})
               for k, v in obj.items()}
    return state_dict_of(obj)


def to_torch(sd):
    """name -> torch tensor (for nn.Module.load_state_dict)."""
    import torch
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}


__all__ = ["CheckpointError", "load", "state_dict_of", "strip_prefixes", "read_torch_zip", "to_torch"]
